// SPDX-License-Identifier: MIT
/*
 * Tests for sites.c's sites__after_inner: which ends right after a function's inner calls may
 * replace its RETs. The functions are real amd64 code, assembled with GNU as from the listing
 * beside each (the shapes Go gives pgx's methods: a way out before the call, a test of its error
 * after it, a retry loop, two calls meeting in one tail), decoded with capstone as gospan does.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdbool.h>
#include <setjmp.h>
#include <cmocka.h>

#include <elf.h>
#include <errno.h>
#include <stdlib.h>

#include "analysis/disasm.h"
#include "analysis/sites.h"

/* Where the code below is put: calls' targets are counted from it. */
#define BASE 0x401000

/*
 * as --64, .intel_syntax noprefix; offsets from BASE on the left.
 *
 * a_f: a way out before the call, the call's error (RCX) tested after it.
 *   00 push rbp; 01 test rax, rax; 04 je a_early; 06 call a_inner; 0b test rcx, rcx;
 *   0e je a_ok; 10 mov rax, rcx; a_ok: 13 pop rbp; 14 ret; a_early: 15 pop rbp; 16 ret;
 *   a_inner: 17 ret
 * b_f: the same, but the early way joins the exit after the call.
 *   18 push rbp; 19 test rax, rax; 1c je b_out; 1e call b_inner; 23 test rcx, rcx;
 *   26 je b_out; 28 mov rax, rcx; b_out: 2b pop rbp; 2c ret; b_inner: 2d ret
 * c_f: a retry loop around the call.
 *   2e push rbp; c_loop: 2f call c_inner; 34 test rcx, rcx; 37 jne c_loop; 39 pop rbp;
 *   3a ret; c_inner: 3b ret
 * d_f: two calls, one tail, a way out before both.
 *   3c push rbp; 3d test rax, rax; 40 je d_early; 42 test rbx, rbx; 45 je d_second;
 *   47 call d_inner; 4c jmp d_tail; d_second: 4e call d_inner2; 53 nop; 54 jmp d_tail;
 *   d_tail: 56 nop dword ptr [rax]; 59 pop rbp; 5a ret; d_early: 5b pop rbp; 5c ret;
 *   d_inner: 5d ret; d_inner2: 5e ret
 */
static const uint8_t code[] = {
	0x55, 0x48, 0x85, 0xc0, 0x74, 0x0f, 0xe8, 0x0c, 0x00, 0x00, 0x00, 0x48, 0x85, 0xc9, 0x74,
	0x03, 0x48, 0x89, 0xc8, 0x5d, 0xc3, 0x5d, 0xc3, 0xc3, 0x55, 0x48, 0x85, 0xc0, 0x74, 0x0d,
	0xe8, 0x0a, 0x00, 0x00, 0x00, 0x48, 0x85, 0xc9, 0x74, 0x03, 0x48, 0x89, 0xc8, 0x5d, 0xc3,
	0xc3, 0x55, 0xe8, 0x07, 0x00, 0x00, 0x00, 0x48, 0x85, 0xc9, 0x75, 0xf6, 0x5d, 0xc3, 0xc3,
	0x55, 0x48, 0x85, 0xc0, 0x74, 0x19, 0x48, 0x85, 0xdb, 0x74, 0x07, 0xe8, 0x11, 0x00, 0x00,
	0x00, 0xeb, 0x08, 0xe8, 0x0b, 0x00, 0x00, 0x00, 0x90, 0xeb, 0x00, 0x0f, 0x1f, 0x00, 0x5d,
	0xc3, 0x5d, 0xc3, 0xc3, 0xc3,
};

/*
 * sites__after_inner on the function at offset START of the code (LEN bytes, decoded at its
 * address), for the N calls at offsets CALLS (an offset where no instruction starts: index -1),
 * FLAGS and RESULT_REG: its return, the sites into ENDS, the offsets of the RETs they replace
 * into RETS (*NRETS of them).
 */
static int after_inner(uint32_t start, uint32_t len, const uint32_t *calls, size_t n,
		       unsigned int flags, int result_reg, struct end_site *ends, uint32_t *rets,
		       size_t *nrets)
{
	struct insns ins = {};
	long idx[4], *excl;
	size_t i;
	int err;

	assert_true(start + len <= sizeof(code) && n <= 4);
	assert_int_equal(disasm__decode(EM_X86_64, code + start, len, BASE + start, &ins), 0);
	for (i = 0; i < n; i++)
		idx[i] = disasm__index(&ins, BASE + calls[i] - ins.addr);
	err = sites__after_inner(&ins, idx, n, flags, result_reg, ends, &excl, nrets);
	if (err) {
		assert_null(excl);
		assert_int_equal(*nrets, 0);
	}
	for (i = 0; i < *nrets; i++)
		rets[i] = (uint32_t)(ins.addr + ins.v[excl[i]].off - BASE);
	free(excl);
	disasm__insns_free(&ins);
	return err;
}

/* The call's end is the JE testing its error, with the error where it was returned; only the
 * RET after it goes, the early way's stays. */
static void test_sites__after_inner_closed(void **state)
{
	const uint32_t call = 0x06;
	struct end_site end;
	uint32_t rets[8];
	size_t nrets;

	(void)state;
	assert_int_equal(after_inner(0x00, 0x17, &call, 1, AFTER_CALL_KEEP_PAIR, X86_CX, &end,
				     rets, &nrets),
			 0);
	assert_int_equal(end.off, BASE + 0x0e);
	assert_true(end.emulated);
	assert_false(end.in_caller);
	assert_int_equal(end.result, -1);
	assert_int_equal(nrets, 1);
	assert_int_equal(rets[0], 0x14);
}

/*
 * Refused: b_f's early way reaches the RET after the call (its end would be lost); c_f's retry
 * loop passes the site once an attempt (the first would end the call); what is not a CALL, or is
 * the last instruction, or no call at all.
 */
static void test_sites__after_inner_refused(void **state)
{
	const uint32_t joined = 0x1e, loop = 0x2f, not_call = 0x0e, last = 0x16;
	struct end_site end;
	uint32_t rets[8];
	size_t nrets;

	(void)state;
	assert_int_equal(after_inner(0x18, 0x15, &joined, 1, AFTER_CALL_KEEP_PAIR, X86_CX, &end,
				     rets, &nrets),
			 -ENOENT);
	assert_int_equal(after_inner(0x2e, 0x0d, &loop, 1, 0, X86_CX, &end, rets, &nrets),
			 -ENOENT);
	assert_int_equal(after_inner(0x00, 0x17, &not_call, 1, 0, -1, &end, rets, &nrets),
			 -ENOENT);
	assert_int_equal(after_inner(0x00, 0x17, &last, 1, 0, -1, &end, rets, &nrets), -ENOENT);
	assert_int_equal(after_inner(0x00, 0x17, &last, 0, 0, -1, &end, rets, &nrets), -ENOENT);
}

/* Two calls whose ways meet before their RET: a site each, on the first emulated instruction
 * after each (a JMP, a NOP); the way out before them keeps its RET. Given in either order; one
 * of them alone is refused, the other's way joining its tail. */
static void test_sites__after_inner_two_calls(void **state)
{
	const uint32_t calls[2] = { 0x4e, 0x47 };
	struct end_site ends[2];
	uint32_t rets[8];
	size_t nrets;

	(void)state;
	assert_int_equal(after_inner(0x3c, 0x21, calls, 2, 0, -1, ends, rets, &nrets), 0);
	assert_int_equal(ends[0].off, BASE + 0x53);
	assert_int_equal(ends[1].off, BASE + 0x4c);
	assert_true(ends[0].emulated && ends[1].emulated);
	assert_int_equal(nrets, 1);
	assert_int_equal(rets[0], 0x5a);
	assert_int_equal(after_inner(0x3c, 0x21, calls, 1, 0, -1, ends, rets, &nrets), -ENOENT);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_sites__after_inner_closed),
		cmocka_unit_test(test_sites__after_inner_refused),
		cmocka_unit_test(test_sites__after_inner_two_calls),
	};
	int err = cmocka_run_group_tests(tests, NULL, NULL);

	disasm__release();
	return err;
}
