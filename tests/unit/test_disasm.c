// SPDX-License-Identifier: MIT
/*
 * Tests for disasm.c against the Go toolchain's own disassembler: for every net/http function of
 * a real amd64 build and a real arm64 cross-build, the RET offsets found with capstone must be
 * exactly the RET lines of `go tool objdump`. Edge cases use slices of the same real code.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdbool.h>
#include <setjmp.h>
#include <cmocka.h>

#include <elf.h>
#include <errno.h>

#include "helpers.h"
#include "analysis/disasm.h"
#include "analysis/elf.h"
#include "core/log.h"

#define SYM_SERVE_HTTP "net/http.serverHandler.ServeHTTP"
#define SYM_CONN_SERVE "net/http.(*conn).serve"
#define MAX_RETS 256

/* One function as `go tool objdump` shows it: its start and the addresses of its RETs. */
struct od_func {
	char name[256];
	uint64_t start, second; /* first and second instruction addresses */
	uint64_t rets[MAX_RETS];
	size_t nrets;
	/*
	 * amd64: the address of the PUSHQ BP that ends Go's stack-bound check when the function
	 * begins [LEAQ -n(SP), R12;] CMPQ SP|R12, 0x10(R14); JBE|JB ...; PUSHQ BP, as objdump
	 * spells it; else 0. PROLOGUE counts the instructions of that shape seen so far.
	 */
	uint64_t push_site;
	uint64_t jcc_site; /* the check's JBE or JB, when the prologue has one */
	int prologue;
};

/* Whether the instruction TEXT, number CUR->prologue of CUR, continues Go's prologue check. */
static bool od_prologue_step(struct od_func *cur, const char *text)
{
	int step = cur->prologue;

	if (step == 0 && !strncmp(text, "LEAQ ", 5) && strstr(text, "(SP), R12")) {
		cur->prologue = 1;
		return true;
	}
	if (step <= 1 &&
	    (!strcmp(text, "CMPQ SP, 0x10(R14)") || !strcmp(text, "CMPQ R12, 0x10(R14)"))) {
		cur->prologue = 2;
		return true;
	}
	if (step == 2 && (!strncmp(text, "JBE ", 4) || !strncmp(text, "JB ", 3))) {
		cur->prologue = 3;
		return true;
	}
	return step == 3 && !strcmp(text, "PUSHQ BP");
}

struct arch_bin {
	const char *goarch; /* names the build in messages */
	const char *env;
	uint16_t machine;
	char path[4096];
	struct od_func *funcs;
	size_t nfuncs;
};

static struct arch_bin bins[] = {
	{ .goarch = "amd64", .env = "GOARCH=amd64", .machine = EM_X86_64 },
	{ .goarch = "arm64", .env = "GOARCH=arm64", .machine = EM_AARCH64 },
	/* Go-compiled code for x86-64-v3 machines uses newer encodings (MOVBE, LZCNT, SHLX). */
	{ .goarch = "amd64-v3", .env = "GOARCH=amd64 GOAMD64=v3", .machine = EM_X86_64 },
};

/* Parses `go tool objdump -s '^net/http\.' BIN` into AB->funcs. */
static int load_objdump(struct arch_bin *ab)
{
	char cmd[8192], line[4096];
	struct od_func *cur = NULL;
	size_t cap = 0;
	FILE *f;

	snprintf(cmd, sizeof(cmd), "go tool objdump -s '^net/http\\.' '%s'", ab->path);
	f = popen(cmd, "r");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		char *fields[8], *save = NULL, *tok, *s = line;
		unsigned long long addr;
		int nf = 0;

		line[strcspn(line, "\n")] = '\0';
		if (!strncmp(line, "TEXT ", 5)) {
			char *end = strstr(line, "(SB)");

			if (!end)
				return -1;
			if (ab->nfuncs == cap) {
				struct od_func *funcs;

				cap = cap ? 2 * cap : 256;
				funcs = realloc(ab->funcs, cap * sizeof(*funcs));
				if (!funcs)
					return -1;
				ab->funcs = funcs;
			}
			cur = &ab->funcs[ab->nfuncs++];
			memset(cur, 0, sizeof(*cur));
			*end = '\0';
			if ((size_t)snprintf(cur->name, sizeof(cur->name), "%s", line + 5) >=
			    sizeof(cur->name))
				return -1;
			continue;
		}
		/* "  file.go:12 \t0x4011a0\t\t4883ec18\t\tSUBQ $0x18, SP\t\t" */
		while (nf < 8 && (tok = strtok_r(s, "\t", &save))) {
			s = NULL;
			if (tok[strspn(tok, " ")])
				fields[nf++] = tok;
		}
		if (!cur || nf < 4 || sscanf(fields[1], "0x%llx", &addr) != 1)
			continue;
		if (!cur->start)
			cur->start = addr;
		else if (!cur->second)
			cur->second = addr;
		/* objdump pads the instruction text with spaces before its trailing tabs. */
		for (size_t e = strlen(fields[3]); e && fields[3][e - 1] == ' '; e--)
			fields[3][e - 1] = '\0';
		if (cur->prologue >= 0 && !cur->push_site) {
			if (!od_prologue_step(cur, fields[3]))
				cur->prologue = -1;
			else if (cur->prologue == 3 && !strcmp(fields[3], "PUSHQ BP"))
				cur->push_site = addr;
			else if (cur->prologue == 3)
				cur->jcc_site = addr;
		}
		if (!strcmp(fields[3], "RET") || !strncmp(fields[3], "RET ", 4)) {
			if (cur->nrets == MAX_RETS)
				return -1;
			cur->rets[cur->nrets++] = addr;
		}
	}
	return pclose(f) ? -1 : 0;
}

static int setup(void **state)
{
	size_t i;

	(void)state;
	log_set_level(getenv("GOSPAN_TEST_VERBOSE") ? LOG_DEBUG : LOG_ERROR);
	for (i = 0; i < sizeof(bins) / sizeof(bins[0]); i++) {
		char name[64];
		const char *p;

		snprintf(name, sizeof(name), "disasm_httpserver_%s", bins[i].goarch);
		p = test_go_build("httpserver", name, bins[i].env, "");
		if (!p)
			return -1;
		snprintf(bins[i].path, sizeof(bins[i].path), "%s", p);
		if (load_objdump(&bins[i]) || !bins[i].nfuncs)
			return -1;
	}
	return 0;
}

static int teardown(void **state)
{
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(bins) / sizeof(bins[0]); i++)
		free(bins[i].funcs);
	return 0;
}

static const struct od_func *od_find(const struct arch_bin *ab, const char *name)
{
	size_t i;

	for (i = 0; i < ab->nfuncs; i++) {
		if (!strcmp(ab->funcs[i].name, name))
			return &ab->funcs[i];
	}
	return NULL;
}

/* Reads LEN bytes of code at ADDR; the caller frees. */
static uint8_t *read_code(struct elf_file *ef, uint64_t addr, size_t len)
{
	uint8_t *code = malloc(len ? len : 1);

	assert_non_null(code);
	assert_int_equal(elf_file__read_addr(ef, addr, code, len), 0);
	return code;
}

/* Checks disasm__find_rets on FN's symbol (extended by EXTRA bytes) against objdump's RETs. */
static void check_func(struct elf_file *ef, const struct arch_bin *ab, const struct od_func *fn,
		       size_t extra)
{
	struct elf_symbol sym;
	uint64_t *offs = NULL;
	size_t n = 0, i;
	uint8_t *code;
	int err;

	if (elf_file__find_symbol(ef, fn->name, &sym))
		fail_msg("%s: objdump shows '%s' but .symtab has no such symbol", ab->goarch,
			 fn->name);
	assert_int_equal(sym.addr, fn->start);
	code = read_code(ef, sym.addr, sym.size + extra);
	err = disasm__find_rets(ab->machine, code, sym.size + extra, sym.addr, &offs, &n);
	free(code);
	if (!fn->nrets) {
		if (err != -ENOENT)
			fail_msg("%s: '%s': objdump shows no RET, find_rets returned %d",
				 ab->goarch, fn->name, err);
		return;
	}
	if (err)
		fail_msg("%s: '%s': find_rets returned %d", ab->goarch, fn->name, err);
	if (n != fn->nrets)
		fail_msg("%s: '%s': %zu RETs found, objdump shows %zu", ab->goarch, fn->name, n,
			 fn->nrets);
	/* Both lists are in address order, so equal sets means equal lists. */
	for (i = 0; i < n; i++)
		assert_int_equal(sym.addr + offs[i], fn->rets[i]);
	free(offs);
}

static void check_named(struct arch_bin *ab, const char *name)
{
	const struct od_func *fn = od_find(ab, name);
	struct elf_file *ef;

	assert_non_null(fn);
	assert_true(fn->nrets > 0);
	ef = elf_file__open(ab->path);
	assert_non_null(ef);
	assert_int_equal(elf_file__machine(ef), ab->machine);
	check_func(ef, ab, fn, 0);
	elf_file__close(ef);
}

static void test_disasm__serve_http_amd64(void **state)
{
	(void)state;
	check_named(&bins[0], SYM_SERVE_HTTP);
	check_named(&bins[0], SYM_CONN_SERVE);
}

static void test_disasm__serve_http_arm64(void **state)
{
	(void)state;
	check_named(&bins[1], SYM_SERVE_HTTP);
	check_named(&bins[1], SYM_CONN_SERVE);
}

/* Every net/http function, including those objdump shows without RET (-ENOENT expected). */
static void check_all(struct arch_bin *ab)
{
	struct elf_file *ef = elf_file__open(ab->path);
	size_t i, with_rets = 0;

	assert_non_null(ef);
	for (i = 0; i < ab->nfuncs; i++) {
		check_func(ef, ab, &ab->funcs[i], 0);
		with_rets += ab->funcs[i].nrets > 0;
	}
	elf_file__close(ef);
	/* A parser that saw no RET line would make the comparison vacuous. */
	assert_true(with_rets > ab->nfuncs / 2);
}

static void test_disasm__all_net_http_amd64(void **state)
{
	(void)state;
	check_all(&bins[0]);
}

static void test_disasm__all_net_http_arm64(void **state)
{
	(void)state;
	check_all(&bins[1]);
}

static void test_disasm__all_net_http_amd64_v3(void **state)
{
	(void)state;
	check_all(&bins[2]);
}

/*
 * disasm__entry_site on every net/http function: past the stack-bound check, on the PUSHQ BP,
 * exactly where objdump shows that prologue (amd64), else the start; arm64 always the start.
 * With PUSH_EMULATED false (a kernel before 6.9), on the check's JBE or JB instead, which every
 * kernel emulates; a function without the check starts where it starts either way.
 */
static void check_entry_sites(struct arch_bin *ab, bool push_emulated)
{
	struct elf_file *ef = elf_file__open(ab->path);
	const struct emulation e = { .push = push_emulated, .long_nop = true };
	size_t i, moved = 0;
	uint64_t off, want;
	bool emulated;

	assert_non_null(ef);
	disasm__set_emulation(&e);
	for (i = 0; i < ab->nfuncs; i++) {
		const struct od_func *fn = &ab->funcs[i];
		struct elf_symbol sym;
		uint8_t *code;

		assert_int_equal(elf_file__find_symbol(ef, fn->name, &sym), 0);
		code = read_code(ef, sym.addr, sym.size);
		assert_int_equal(disasm__entry_site(ab->machine, code, sym.size, sym.addr, &off,
						    &emulated), 0);
		free(code);
		want = 0;
		if (ab->machine == EM_X86_64 && fn->push_site)
			want = (push_emulated ? fn->push_site : fn->jcc_site) - fn->start;
		else if (ab->machine == EM_X86_64 && fn->jcc_site)
			want = fn->jcc_site - fn->start; /* Go 1.17-1.20: no PUSH follows */
		if (off != want)
			fail_msg("%s: '%s': entry site +%llu, objdump's prologue says +%llu",
				 ab->goarch, fn->name, (unsigned long long)off,
				 (unsigned long long)want);
		/* Off the start, the site is one the kernel emulates. */
		if (off && !emulated)
			fail_msg("%s: '%s': entry site +%llu is not emulated", ab->goarch, fn->name,
				 (unsigned long long)off);
		moved += off != 0;
	}
	elf_file__close(ef);
	disasm__set_emulation(&(struct emulation){ .push = true, .long_nop = true });
	/* Most functions with a frame begin with the check: a parser that saw none proves nothing. */
	if (ab->machine == EM_X86_64)
		assert_true(moved > ab->nfuncs / 4);
}

static void test_disasm__entry_sites(void **state)
{
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(bins) / sizeof(bins[0]); i++) {
		check_entry_sites(&bins[i], true);
		check_entry_sites(&bins[i], false);
	}
}

/*
 * amd64: the int3 padding the linker puts between functions, read from the binary past the end
 * of the symbol up to the next 32-byte boundary, changes nothing.
 */
static void test_disasm__trailing_padding_amd64(void **state)
{
	const struct od_func *fn = od_find(&bins[0], SYM_SERVE_HTTP);
	struct elf_file *ef = elf_file__open(bins[0].path);
	struct elf_symbol sym;
	uint8_t *pad;
	size_t extra, i;

	(void)state;
	assert_non_null(fn);
	assert_non_null(ef);
	assert_int_equal(elf_file__find_symbol(ef, SYM_SERVE_HTTP, &sym), 0);
	extra = (32 - (sym.addr + sym.size) % 32) % 32;
	if (!extra)
		extra = 32;
	pad = read_code(ef, sym.addr + sym.size, extra);
	for (i = 0; i < extra; i++)
		assert_int_equal(pad[i], 0xcc);
	free(pad);
	check_func(ef, &bins[0], fn, extra);
	elf_file__close(ef);
}

/* The code of ServeHTTP up to its first RET: real instructions, none of them a return. */
static void check_no_ret(struct arch_bin *ab)
{
	const struct od_func *fn = od_find(ab, SYM_SERVE_HTTP);
	struct elf_file *ef = elf_file__open(ab->path);
	uint64_t *offs = NULL;
	size_t n = 0, len;
	uint8_t *code;

	assert_non_null(fn);
	assert_non_null(ef);
	assert_true(fn->nrets > 0);
	len = fn->rets[0] - fn->start;
	assert_true(len > 0);
	code = read_code(ef, fn->start, len);
	assert_int_equal(disasm__find_rets(ab->machine, code, len, fn->start, &offs, &n), -ENOENT);
	assert_null(offs);
	/* And the same bytes with the RET included find exactly that one. */
	free(code);
	code = read_code(ef, fn->start, len + (ab->machine == EM_X86_64 ? 1 : 4));
	assert_int_equal(disasm__find_rets(ab->machine, code,
					   len + (ab->machine == EM_X86_64 ? 1 : 4), fn->start,
					   &offs, &n),
			 0);
	assert_int_equal(n, 1);
	assert_int_equal(offs[0], len);
	free(offs);
	free(code);
	elf_file__close(ef);
}

static void test_disasm__no_ret(void **state)
{
	(void)state;
	check_no_ret(&bins[0]);
	check_no_ret(&bins[1]);
}

/* The first instruction of ServeHTTP cut short is not code, and not padding either. */
static void test_disasm__truncated_instruction(void **state)
{
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(bins) / sizeof(bins[0]); i++) {
		const struct od_func *fn = od_find(&bins[i], SYM_SERVE_HTTP);
		struct elf_file *ef = elf_file__open(bins[i].path);
		uint64_t *offs = NULL;
		size_t n = 0, len;
		uint8_t *code;

		assert_non_null(fn);
		assert_non_null(ef);
		len = fn->second - fn->start;
		assert_true(len >= 2);
		code = read_code(ef, fn->start, len - 1);
		assert_int_equal(disasm__find_rets(bins[i].machine, code, len - 1, fn->start, &offs,
						   &n),
				 -EINVAL);
		assert_null(offs);
		free(code);
		elf_file__close(ef);
	}
}

static void test_disasm__unsupported_machine(void **state)
{
	const struct od_func *fn = od_find(&bins[0], SYM_SERVE_HTTP);
	struct elf_file *ef = elf_file__open(bins[0].path);
	struct elf_symbol sym;
	uint64_t *offs = NULL;
	size_t n = 0;
	uint8_t *code;

	(void)state;
	assert_non_null(fn);
	assert_non_null(ef);
	assert_int_equal(elf_file__find_symbol(ef, SYM_SERVE_HTTP, &sym), 0);
	code = read_code(ef, sym.addr, sym.size);
	assert_int_equal(disasm__find_rets(EM_386, code, sym.size, sym.addr, &offs, &n),
			 -EOPNOTSUPP);
	assert_int_equal(disasm__find_rets(EM_RISCV, code, sym.size, sym.addr, &offs, &n),
			 -EOPNOTSUPP);
	assert_null(offs);
	free(code);
	elf_file__close(ef);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_disasm__serve_http_amd64),
		cmocka_unit_test(test_disasm__serve_http_arm64),
		cmocka_unit_test(test_disasm__all_net_http_amd64),
		cmocka_unit_test(test_disasm__all_net_http_arm64),
		cmocka_unit_test(test_disasm__all_net_http_amd64_v3),
		cmocka_unit_test(test_disasm__entry_sites),
		cmocka_unit_test(test_disasm__trailing_padding_amd64),
		cmocka_unit_test(test_disasm__no_ret),
		cmocka_unit_test(test_disasm__truncated_instruction),
		cmocka_unit_test(test_disasm__unsupported_machine),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
