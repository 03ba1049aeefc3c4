// SPDX-License-Identifier: MIT
/*
 * Tests for funcends.c: which calls are their caller's last (an epilogue alone follows the
 * return, and by how much it raises SP), on amd64 code assembled with GNU as from the listing
 * below; and, on examples/functions built by the test, where the ends of functions called last
 * go: in their callers' callers with the frames in between, with a traced caller's call, or left
 * single-stepped with the reason said; and where the recovery probe goes, amd64 and arm64.
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
#include <string.h>

#include "analysis/disasm.h"
#include "analysis/elf.h"
#include "analysis/funcends.h"
#include "analysis/funcresolve.h"
#include "analysis/functions.h"
#include "analysis/offsets.h"
#include "analysis/target.h"
#include "core/log.h"
#include "helpers.h"

#define EXAMPLE "../../../examples/functions"
#define BASE 0x401000

/*
 * as --64, .intel_syntax noprefix; offsets from BASE on the left. Each function calls the RET
 * after it; what follows the call is:
 *   a 00: add rsp, 0x10; pop rbp; ret                        (Go's epilogue: 0x18)
 *   b 0c: mov rbx, rax; mov rbp, [rsp+0x50]; add rsp, 0xa0; pop rbp; ret   (results moved: 0xa8)
 *   c 23: sub rsp, -128; pop rbp; ret                        (how Go adds 128: 0x88)
 *   d 2f: lea rsp, [rsp+0x10]; pop rbp; ret                  (SP set another way: refused)
 *   e 3c: test rax, rax; je e_end; pop rbp; ret              (a branch: refused)
 *   f 49: add rsp, 0x10; ret 8                               (RET imm16: refused)
 *   g 56: add rsp, 0x10; pop rbp; call g_end; ret            (a call: refused)
 */
static const uint8_t code[] = {
	0xe8, 0x06, 0x00, 0x00, 0x00, 0x48, 0x83, 0xc4, 0x10, 0x5d, 0xc3, 0xc3, 0xe8, 0x11, 0x00,
	0x00, 0x00, 0x48, 0x89, 0xc3, 0x48, 0x8b, 0x6c, 0x24, 0x50, 0x48, 0x81, 0xc4, 0xa0, 0x00,
	0x00, 0x00, 0x5d, 0xc3, 0xc3, 0xe8, 0x06, 0x00, 0x00, 0x00, 0x48, 0x83, 0xec, 0x80, 0x5d,
	0xc3, 0xc3, 0xe8, 0x07, 0x00, 0x00, 0x00, 0x48, 0x8d, 0x64, 0x24, 0x10, 0x5d, 0xc3, 0xc3,
	0xe8, 0x07, 0x00, 0x00, 0x00, 0x48, 0x85, 0xc0, 0x74, 0x02, 0x5d, 0xc3, 0xc3, 0xe8, 0x07,
	0x00, 0x00, 0x00, 0x48, 0x83, 0xc4, 0x10, 0xc2, 0x08, 0x00, 0xc3, 0xe8, 0x0b, 0x00, 0x00,
	0x00, 0x48, 0x83, 0xc4, 0x10, 0x5d, 0xe8, 0x01, 0x00, 0x00, 0x00, 0xc3, 0xc3,
};

/* funcends__returns_at_once after the call that starts the function at START (LEN bytes). */
static bool at_once(uint32_t start, uint32_t len, uint32_t *frame)
{
	struct insns ins = {};
	bool ok;

	assert_true(start + len <= sizeof(code));
	assert_int_equal(disasm__decode(EM_X86_64, code + start, len, BASE + start, &ins), 0);
	assert_true(ins.n > 1 && ins.v[0].kind == INSN_CALL);
	ok = funcends__returns_at_once(&ins, code + start, 1, frame);
	disasm__insns_free(&ins);
	return ok;
}

static void test_funcends__epilogues(void **state)
{
	uint32_t frame = 0;

	(void)state;
	assert_true(at_once(0x00, 0x0b, &frame));
	assert_int_equal(frame, 0x18);
	assert_true(at_once(0x0c, 0x16, &frame));
	assert_int_equal(frame, 0xa8);
	assert_true(at_once(0x23, 0x0b, &frame));
	assert_int_equal(frame, 0x88);
	assert_false(at_once(0x2f, 0x0c, &frame));
	assert_false(at_once(0x3c, 0x0c, &frame));
	assert_false(at_once(0x49, 0x0c, &frame));
	assert_false(at_once(0x56, 0x10, &frame));
}

static struct offsets *tables;

static int group_setup(void **state)
{
	(void)state;
	tables = test_load_offsets();
	return tables ? 0 : -1;
}

static int group_teardown(void **state)
{
	(void)state;
	offsets__free(tables);
	return 0;
}

static const struct traced_func *find(const struct target *t, const char *symbol)
{
	size_t i;

	for (i = 0; i < t->nfuncs; i++)
		if (!strcmp(t->funcs[i].symbol, symbol))
			return &t->funcs[i];
	return NULL;
}

/* The functions of the example named in JSON, resolved; what was said into *OUT. */
static struct target *resolve(const char *bin, const char *json, char **out)
{
	struct functions *fs;
	struct target *t;
	int err;

	t = target__analyse(bin, NULL, tables, NULL, true);
	assert_non_null(t);
	fs = functions__parse(json, strlen(json), "test.json");
	assert_non_null(fs);
	err = TEST_LOGGED(LOG_INFO, out, functions__resolve(fs, t));
	assert_int_equal(err, 0);
	functions__free(fs);
	return t;
}

/* The SP raise of the epilogue after CALLER's call of CALLEE (both symbols of EF). */
static uint32_t frame_after(struct elf_file *ef, const char *caller, const char *callee)
{
	struct elf_symbol c, f;
	struct insns ins = {};
	uint32_t frame = 0;
	uint8_t *bytes;
	size_t i;

	assert_int_equal(elf_file__find_symbol(ef, caller, &c), 0);
	assert_int_equal(elf_file__find_symbol(ef, callee, &f), 0);
	bytes = malloc(c.size);
	assert_non_null(bytes);
	assert_int_equal(elf_file__read_addr(ef, c.addr, bytes, c.size), 0);
	assert_int_equal(disasm__decode(EM_X86_64, bytes, c.size, c.addr, &ins), 0);
	for (i = 0; i + 1 < ins.n; i++)
		if (ins.v[i].kind == INSN_CALL && ins.v[i].target == f.addr)
			break;
	assert_true(i + 1 < ins.n);
	assert_true(funcends__returns_at_once(&ins, bytes, (long)i + 1, &frame));
	disasm__insns_free(&ins);
	free(bytes);
	return frame;
}

/* Whether an end of F is in the function SYMBOL of EF. */
static bool ends_in(const struct traced_func *f, struct elf_file *ef, const char *symbol)
{
	struct elf_symbol s;
	size_t i;

	assert_int_equal(elf_file__find_symbol(ef, symbol, &s), 0);
	for (i = 0; i < f->site.nends; i++)
		if (f->site.ends[i].caller == s.addr)
			return true;
	return false;
}

static void test_funcends__example(void **state)
{
	const char *bin = test_go_build(EXAMPLE, "functions", "", "");
	const struct traced_func *render, *countdown, *last;
	struct elf_file *ef;
	struct target *t;
	uint32_t frame;
	size_t i, far = 0;
	char *out;

	(void)state;
	assert_non_null(bin);
	ef = elf_file__open(bin);
	assert_non_null(ef);
	t = resolve(bin,
		    "{\"functions\": [{\"symbol\": \"main.render\"}, {\"symbol\": "
		    "\"main.countdown\"}, {\"symbol\": \"main.writeLast\"}]}",
		    &out);
	render = find(t, "main.render");
	countdown = find(t, "main.countdown");
	last = find(t, "main.writeLast");
	assert_non_null(render);
	assert_non_null(countdown);
	assert_non_null(last);

	/*
	 * render is respond's last call: its ends are in respond's callers, the frames of respond
	 * (its return address and what its epilogue pops) counted in; none in respond. Under
	 * countdown, which is traced, it ends with countdown's call: no end there either.
	 */
	frame = frame_after(ef, "main.respond", "main.render");
	assert_true(frame >= 8);
	assert_false(ends_in(render, ef, "main.respond"));
	assert_false(ends_in(render, ef, "main.countdown"));
	assert_true(ends_in(render, ef, "main.safeRespond"));
	for (i = 0; i < render->site.nends; i++) {
		assert_true(render->site.ends[i].emulated);
		assert_true(render->site.ends[i].in_caller);
		far += render->site.ends[i].frames == frame + 8;
	}
	assert_true(far >= 2); /* the /tail handler's and safeRespond's */
	assert_int_equal(render->site.nrets, 0);
	assert_int_equal(probe_site__stepped(&render->site, false), 0);
	assert_true(render->cfg.flags & FUNC_ENDS_WITH_CALLER);

	/* countdown's calls of itself end with the outermost: its only ends are its callers'. */
	assert_false(ends_in(countdown, ef, "main.countdown"));
	assert_true(countdown->site.nends >= 1);
	assert_int_equal(probe_site__stepped(&countdown->site, false), 0);
	assert_true(countdown->cfg.flags & FUNC_ENDS_WITH_CALLER);
	for (i = 0; i < countdown->site.nends; i++)
		assert_int_equal(countdown->site.ends[i].frames, 0);

	/* A handler's last call: the handler is called through a func value. */
	assert_int_equal(probe_site__stepped(&last->site, false), 1);
	assert_false(last->cfg.flags & FUNC_ENDS_WITH_CALLER);
	if (!strstr(out, "function 'main.writeLast' in 'functions': its end after its call in "
			 "'main.routes.func") ||
	    !strstr(out, "is single-stepped: its caller returns at once after it and is called "
			 "indirectly"))
		fail_msg("writeLast's single-stepped end not said: \"%s\"", out);
	/* A recovered panic's calls are dropped where runtime.recovery resumes the goroutine. */
	assert_true(t->func_recover.addr != 0);
	assert_true(t->func_recover.entry_emulated);
	free(out);
	target__free(t);

	/* Without countdown traced, render's end in it is left single-stepped: it recurses. */
	t = resolve(bin, "{\"functions\": [{\"symbol\": \"main.render\"}]}", &out);
	render = find(t, "main.render");
	assert_non_null(render);
	assert_true(ends_in(render, ef, "main.countdown"));
	assert_int_equal(probe_site__stepped(&render->site, false), 1);
	assert_false(render->cfg.flags & FUNC_ENDS_WITH_CALLER);
	if (!strstr(out, "its end after its call in 'main.countdown' is single-stepped: its callers "
			 "return at once after it, too many in a row"))
		fail_msg("render's single-stepped end not said: \"%s\"", out);
	free(out);
	target__free(t);
	elf_file__close(ef);
}

/*
 * The recovery probe's place, on both architectures: runtime.recovery's one direct call of gogo
 * (a CALL on amd64, a BL on arm64), as plan_recover finds it.
 */
static void test_funcends__recovery_calls_gogo(void **state)
{
	static const struct {
		const char *name, *env;
		uint16_t machine;
	} builds[] = {
	    {"functions", "", EM_X86_64},
	    {"functions-arm64", "GOARCH=arm64", EM_AARCH64},
	};
	struct elf_symbol rec, gogo;
	struct elf_file *ef;
	uint64_t *offs;
	uint8_t *bytes;
	size_t i, n;

	(void)state;
	for (i = 0; i < sizeof(builds) / sizeof(builds[0]); i++) {
		const char *bin = test_go_build(EXAMPLE, builds[i].name, builds[i].env, "");

		assert_non_null(bin);
		ef = elf_file__open(bin);
		assert_non_null(ef);
		assert_int_equal(elf_file__machine(ef), builds[i].machine);
		assert_int_equal(elf_file__find_symbol(ef, "runtime.recovery", &rec), 0);
		assert_int_equal(elf_file__find_symbol(ef, "runtime.gogo.abi0", &gogo), 0);
		bytes = malloc(rec.size);
		assert_non_null(bytes);
		assert_int_equal(elf_file__read_addr(ef, rec.addr, bytes, rec.size), 0);
		assert_int_equal(disasm__find_calls(builds[i].machine, bytes, rec.size, rec.addr,
						    gogo.addr, &offs, &n),
				 0);
		assert_int_equal(n, 1);
		assert_true(offs[0] > 0 && offs[0] < rec.size);
		free(offs);
		free(bytes);
		elf_file__close(ef);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_funcends__epilogues),
	    cmocka_unit_test(test_funcends__example),
	    cmocka_unit_test(test_funcends__recovery_calls_gogo),
	};

	log_set_level(TEST_QUIET_LEVEL);
	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
