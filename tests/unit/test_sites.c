// SPDX-License-Identifier: MIT
/*
 * Tests for sites.c's sites__after_inner: which ends right after a function's inner calls may
 * replace its RETs; and sites__error_ends: where a retry loop is over. The functions are real amd64 code, assembled with GNU as from the listing
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

/*
 * Retry loops around a call (loop_inner: a retry flag in AL, its error in RBX/RCX), at offsets
 * from BASE (as --64, .intel_syntax noprefix):
 * e_f: the error kept in the frame across a call made after the loop, then returned.
 *   00 push rbp; 01 sub rsp, 0x40; e_loop: 05 call e_inner; 0a mov [rsp+0x10], rbx;
 *   0f mov [rsp+0x18], rcx; 14 test al, al; 16 jne e_loop; 18 call e_other;
 *   1d mov rax, [rsp+0x10]; 22 mov rbx, [rsp+0x18]; 27 add rsp, 0x40; 2b pop rbp; 2c ret;
 *   e_inner: 2d ret; e_other: 2e ret
 * f_f: the same, but the frame's copy is zeroed (as Go zeroes a variable) before it is read:
 *   what it returns is not the error.
 *   2f push rbp; 30 sub rsp, 0x40; f_loop: 34 call f_inner; 39 mov [rsp+0x10], rbx;
 *   3e mov [rsp+0x18], rcx; 43 test al, al; 45 jne f_loop; 47 call f_other;
 *   4c movups [rsp+0x10], xmm15; 52 mov rax, [rsp+0x10]; 57 mov rbx, [rsp+0x18];
 *   5c add rsp, 0x40; 60 pop rbp; 61 ret; f_inner: 62 ret; f_other: 63 ret
 * g_f: go-redis v9.0's shape: success and a failure not retried meet at one RET, nothing
 *   emulated before it.
 *   64 push rbp; g_loop: 65 call g_inner; 6a test rbx, rbx; 6d je g_out; 6f test al, al;
 *   71 jne g_loop; g_out: 73 mov rax, rbx; 76 mov rbx, rcx; 79 pop rbp; 7a ret; g_inner: 7b ret
 */
static const uint8_t loops[] = {
	0x55, 0x48, 0x83, 0xec, 0x40, 0xe8, 0x23, 0x00, 0x00, 0x00, 0x48, 0x89, 0x5c, 0x24, 0x10,
	0x48, 0x89, 0x4c, 0x24, 0x18, 0x84, 0xc0, 0x75, 0xed, 0xe8, 0x11, 0x00, 0x00, 0x00, 0x48,
	0x8b, 0x44, 0x24, 0x10, 0x48, 0x8b, 0x5c, 0x24, 0x18, 0x48, 0x83, 0xc4, 0x40, 0x5d, 0xc3,
	0xc3, 0xc3, 0x55, 0x48, 0x83, 0xec, 0x40, 0xe8, 0x29, 0x00, 0x00, 0x00, 0x48, 0x89, 0x5c,
	0x24, 0x10, 0x48, 0x89, 0x4c, 0x24, 0x18, 0x84, 0xc0, 0x75, 0xed, 0xe8, 0x17, 0x00, 0x00,
	0x00, 0x44, 0x0f, 0x11, 0x7c, 0x24, 0x10, 0x48, 0x8b, 0x44, 0x24, 0x10, 0x48, 0x8b, 0x5c,
	0x24, 0x18, 0x48, 0x83, 0xc4, 0x40, 0x5d, 0xc3, 0xc3, 0xc3, 0x55, 0xe8, 0x11, 0x00, 0x00,
	0x00, 0x48, 0x85, 0xdb, 0x74, 0x04, 0x84, 0xc0, 0x75, 0xf2, 0x48, 0x89, 0xd8, 0x48, 0x89,
	0xcb, 0x5d, 0xc3, 0xc3,
};

/*
 * sites__error_ends on the loop at offset START of LOOPS (LEN bytes), its work the call at
 * offset CALL: its return; the ends into *ENDS (malloc'ed), how many RETs stay into *NKEPT.
 */
static int error_ends(uint32_t start, uint32_t len, uint32_t call, struct end_site **ends,
		      size_t *nends, size_t *nkept, int *nil_steps)
{
	struct insns ins = {};
	long idx, *kept;
	int err;

	assert_int_equal(disasm__decode(EM_X86_64, loops + start, len, BASE + start, &ins), 0);
	idx = disasm__index(&ins, call - start);
	err = sites__error_ends(&ins, 0, &idx, 1, false, NULL, 0, ends, nends, &kept, nkept,
				nil_steps);
	free(kept);
	disasm__insns_free(&ins);
	return err;
}

/* The error is followed through the frame, across a call, to the RET that returns it. */
static void test_sites__error_ends_through_the_frame(void **state)
{
	struct end_site *ends;
	size_t nends, nkept;
	int steps;

	(void)state;
	assert_int_equal(error_ends(0x00, 0x2d, 0x05, &ends, &nends, &nkept, &steps), 0);
	/* the call after the loop: emulated, the error still in RBX and RCX (slots 2-3) */
	assert_int_equal(nends, 1);
	assert_int_equal(ends[0].off, BASE + 0x18);
	assert_true(ends[0].emulated && !ends[0].in_caller);
	assert_int_equal(sites__slot_of(ends[0].result), 2);
	assert_int_equal(ends[0].cond_slot, 0);
	assert_int_equal(nkept, 0);
	assert_int_equal(steps, 0);
	free(ends);
	/* a zeroed copy (an SSE store, which capstone 4 says reads its memory) is not the error */
	assert_int_equal(error_ends(0x2f, 0x33, 0x34, &ends, &nends, &nkept, &steps), -ENOENT);
	assert_null(ends);
}

/* Two ways out meeting at a RET: each ends on the jump that takes it out, on that way alone. */
static void test_sites__error_ends_on_the_jumps_out(void **state)
{
	struct end_site *ends;
	size_t nends, nkept, i;
	int steps;

	(void)state;
	assert_int_equal(error_ends(0x64, 0x17, 0x65, &ends, &nends, &nkept, &steps), 0);
	assert_int_equal(nends, 2);
	for (i = 0; i < nends; i++) {
		assert_true(ends[i].emulated);
		assert_int_equal(sites__slot_of(ends[i].result), 2);
		assert_true(ends[i].cond_if_zero);
		if (ends[i].off == BASE + 0x6d) {
			/* JE: out when the error's itab (RBX) is nil */
			assert_int_equal(ends[i].cond_slot, 2);
			assert_int_equal(ends[i].cond_size, 8);
		} else {
			/* JNE: out when the retry flag (AL) is false */
			assert_int_equal(ends[i].off, BASE + 0x71);
			assert_int_equal(ends[i].cond_slot, 1);
			assert_int_equal(ends[i].cond_size, 1);
		}
	}
	assert_int_equal(nkept, 0);
	assert_int_equal(steps, 0);
	free(ends);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_sites__after_inner_closed),
		cmocka_unit_test(test_sites__after_inner_refused),
		cmocka_unit_test(test_sites__after_inner_two_calls),
		cmocka_unit_test(test_sites__error_ends_through_the_frame),
		cmocka_unit_test(test_sites__error_ends_on_the_jumps_out),
	};
	int err = cmocka_run_group_tests(tests, NULL, NULL);

	disasm__release();
	return err;
}
