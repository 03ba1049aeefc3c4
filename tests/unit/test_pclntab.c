// SPDX-License-Identifier: MIT
/*
 * Tests for pclntab.c on real Go binaries: for each toolchain and build mode, a stripped binary
 * (-ldflags='-s -w') and its unstripped twin are built with the same flags otherwise, and every
 * Go function of the twin's .symtab must be found in the stripped binary's function table at the
 * same address, with the same size up to the alignment padding that follows it. Also: clean
 * refusals of a C binary and of corrupted or truncated tables.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <elf.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <time.h>
#include <unistd.h>

#include "helpers.h"
#include "analysis/elf.h"
#include "core/log.h"
#include "analysis/pclntab.h"

/* Sanity bound on one function's padding (PCALIGN asks for at most 2 KiB in practice). */
#define MAX_PADDING 4096

struct go_sym {
	char *name;
	uint64_t addr;
	uint64_t size;
};

struct twin_syms {
	struct go_sym *syms;
	size_t n;
	size_t outside;	 /* STT_FUNC symbols in .text outside [runtime.text, runtime.etext) */
	size_t shadowed; /* the higher of two functions that share a name in the table */
};

static int setup(void **state)
{
	(void)state;
	/* The failure tests log their reasons on purpose; debug output only on request. */
	log_set_level(getenv("GOSPAN_TEST_VERBOSE") ? LOG_DEBUG : LOG_ERROR);
	return 0;
}

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static int sym_cmp(const void *a, const void *b)
{
	const struct go_sym *x = a, *y = b;
	int c = strcmp(x->name, y->name);

	if (c)
		return c;
	return x->addr < y->addr ? -1 : x->addr > y->addr;
}

/*
 * An assembly function called from Go gets an ABIInternal wrapper of the same name; .symtab
 * tells them apart by suffixing the assembly one (cmd/link's mangleABIName: "NAME.abi0"), the
 * function table does not. Returns NAME without such a suffix, in place.
 */
static char *strip_abi_suffix(char *name)
{
	char *dot = strrchr(name, '.');
	size_t n;

	if (!dot || strncmp(dot, ".abi", 4))
		return name;
	n = strspn(dot + 4, "0123456789");
	if (n && !dot[4 + n])
		*dot = '\0';
	return name;
}

/*
 * Go 1.18-1.20 name generic instantiations in the function table by cutting everything from the
 * first '[' to the last ']' down to "[...]" (cmd/link pcln.go); returns NAME so cut, malloc'ed.
 */
static char *elide_type_args(const char *name)
{
	const char *open = strchr(name, '['), *close = strrchr(name, ']');
	char *out;

	if (!open || !close || close < open)
		out = strdup(name);
	else if (asprintf(&out, "%.*s[...]%s", (int)(open - name), name, close + 1) < 0)
		out = NULL;
	assert_non_null(out);
	return out;
}

/*
 * Reads the Go functions of PATH's .symtab with libelf directly: STT_FUNC symbols of .text
 * between runtime.text and runtime.etext (with external linking, C functions share .text), under
 * their function table names. Of two that share a name, the table lookup answers the lower
 * address: only that one is kept.
 */
static void read_go_syms(const char *path, bool elided, struct twin_syms *ts)
{
	uint64_t text = 0, etext = 0;
	size_t shstrndx, count, i, j, textndx = 0;
	Elf_Scn *scn = NULL, *symscn = NULL;
	GElf_Shdr sh, symsh = { 0 };
	Elf_Data *data;
	Elf *elf;
	int fd;

	memset(ts, 0, sizeof(*ts));
	assert_int_not_equal(elf_version(EV_CURRENT), EV_NONE);
	fd = open(path, O_RDONLY);
	assert_true(fd >= 0);
	elf = elf_begin(fd, ELF_C_READ, NULL);
	assert_non_null(elf);
	assert_int_equal(elf_getshdrstrndx(elf, &shstrndx), 0);
	while ((scn = elf_nextscn(elf, scn))) {
		const char *name;

		assert_non_null(gelf_getshdr(scn, &sh));
		name = elf_strptr(elf, shstrndx, sh.sh_name);
		if (name && !strcmp(name, ".text"))
			textndx = elf_ndxscn(scn);
		if (sh.sh_type == SHT_SYMTAB) {
			symscn = scn;
			symsh = sh;
		}
	}
	assert_int_not_equal(textndx, 0);
	assert_non_null(symscn);
	data = elf_getdata(symscn, NULL);
	assert_non_null(data);
	count = symsh.sh_size / symsh.sh_entsize;
	ts->syms = calloc(count, sizeof(*ts->syms));
	assert_non_null(ts->syms);
	for (i = 0; i < count; i++) {
		GElf_Sym s;
		const char *name;

		assert_non_null(gelf_getsym(data, i, &s));
		name = elf_strptr(elf, symsh.sh_link, s.st_name);
		if (!name)
			continue;
		if (!strcmp(name, "runtime.text"))
			text = s.st_value;
		else if (!strcmp(name, "runtime.etext"))
			etext = s.st_value;
		/* The two are markers the linker adds around Go's code, not functions. */
		if (GELF_ST_TYPE(s.st_info) != STT_FUNC || s.st_shndx != textndx || !*name ||
		    !strcmp(name, "runtime.text") || !strcmp(name, "runtime.etext"))
			continue;
		ts->syms[ts->n].name = strdup(name);
		assert_non_null(ts->syms[ts->n].name);
		strip_abi_suffix(ts->syms[ts->n].name);
		if (elided) {
			char *cut = elide_type_args(ts->syms[ts->n].name);

			free(ts->syms[ts->n].name);
			ts->syms[ts->n].name = cut;
		}
		ts->syms[ts->n].addr = s.st_value;
		ts->syms[ts->n].size = s.st_size;
		ts->n++;
	}
	elf_end(elf);
	close(fd);
	assert_true(text && etext > text);
	/* Keep the Go functions only; count what was left out. */
	for (i = 0; i < ts->n;) {
		if (ts->syms[i].addr >= text && ts->syms[i].addr < etext) {
			i++;
			continue;
		}
		free(ts->syms[i].name);
		ts->syms[i] = ts->syms[--ts->n];
		ts->outside++;
	}
	qsort(ts->syms, ts->n, sizeof(*ts->syms), sym_cmp);
	for (i = 1, j = ts->n ? 1 : 0; i < ts->n; i++) {
		if (!strcmp(ts->syms[i].name, ts->syms[j - 1].name)) {
			free(ts->syms[i].name);
			ts->shadowed++;
			continue;
		}
		ts->syms[j++] = ts->syms[i];
	}
	ts->n = j;
}

static void free_go_syms(struct twin_syms *ts)
{
	size_t i;

	for (i = 0; i < ts->n; i++)
		free(ts->syms[i].name);
	free(ts->syms);
}

/* Builds testdata/httpserver as OUT; fails the test if the build fails. */
static void build(char *path, size_t size, const char *out, const char *env, const char *flags)
{
	const char *p = test_go_build("httpserver", out, env, flags);

	assert_non_null(p);
	assert_true((size_t)snprintf(path, size, "%s", p) < size);
}

/*
 * The core check: every Go function of TWIN's .symtab is in STRIPPED's function table at the
 * same address, its size there the .symtab size plus padding. CGO says whether C code may share
 * .text, ELIDED whether the toolchain shortens generic names. TAG names the case in messages.
 */
static void check_against(const char *tag, const char *twin, const char *stripped, bool cgo,
			  bool elided)
{
	uint64_t tw_addr, st_addr, max_pad = 0;
	size_t tw_size, st_size, i, found = 0;
	struct elf_file *ef;
	struct twin_syms ts;
	struct pclntab *pt;
	uint16_t machine;
	double t0, t_open, t_find;
	uint8_t fill;

	read_go_syms(twin, elided, &ts);
	assert_true(ts.n > 1000);
	/* Without cgo, all of .text is Go: nothing may have been left out. */
	if (!cgo)
		assert_int_equal(ts.outside, 0);

	ef = elf_file__open(twin);
	assert_non_null(ef);
	assert_int_equal(elf_file__section(ef, ".text", NULL, &tw_size, &tw_addr), 0);
	elf_file__close(ef);

	ef = elf_file__open(stripped);
	assert_non_null(ef);
	/* Truly stripped, and -s -w moved no code: .text at the same place with the same size. */
	if (strcmp(twin, stripped))
		assert_int_equal(elf_file__section(ef, ".symtab", NULL, NULL, NULL), -ENOENT);
	assert_int_equal(elf_file__section(ef, ".text", NULL, &st_size, &st_addr), 0);
	assert_int_equal(st_addr, tw_addr);
	assert_int_equal(st_size, tw_size);
	machine = elf_file__machine(ef);
	assert_true(machine == EM_X86_64 || machine == EM_AARCH64);
	fill = machine == EM_X86_64 ? 0xcc : 0x00;

	t0 = now_ms();
	pt = pclntab__open(ef);
	t_open = now_ms() - t0;
	assert_non_null(pt);

	t0 = now_ms();
	for (i = 0; i < ts.n; i++) {
		struct go_sym *s = &ts.syms[i];
		struct elf_symbol fn;
		uint8_t pad[MAX_PADDING];
		uint64_t j, end;

		if (pclntab__find_func(pt, s->name, &fn)) {
			print_message("%s: '%s' at 0x%llx not in the function table\n", tag,
				      s->name, (unsigned long long)s->addr);
			fail();
		}
		if (fn.addr != s->addr) {
			print_message(
			    "%s: '%s' at 0x%llx in the function table, 0x%llx in .symtab\n", tag,
			    s->name, (unsigned long long)fn.addr, (unsigned long long)s->addr);
			fail();
		}
		/*
		 * The table's size runs to the next function's entry, .symtab's is the code alone.
		 * The difference must be padding: fill bytes (INT3 on amd64, zeros on arm64) that
		 * are shorter than the alignment they give the next entry (the lowest set bit of
		 * its address; Go aligns functions to 32 bytes on amd64, 16 on arm64, more with
		 * PCALIGN).
		 */
		end = fn.addr + fn.size;
		if (fn.size < s->size || fn.size - s->size >= MAX_PADDING ||
		    (fn.size > s->size && fn.size - s->size >= (end & -end))) {
			print_message(
			    "%s: '%s' is %llu bytes in the function table, %llu in .symtab\n", tag,
			    s->name, (unsigned long long)fn.size, (unsigned long long)s->size);
			fail();
		}
		if (fn.size == s->size)
			continue;
		assert_int_equal(elf_file__read_addr(ef, s->addr + s->size, pad, fn.size - s->size),
				 0);
		for (j = 0; j < fn.size - s->size; j++) {
			if (pad[j] != fill) {
				print_message("%s: '%s': byte %llu of its padding is 0x%02x\n", tag,
					      s->name, (unsigned long long)j, pad[j]);
				fail();
			}
		}
		if (fn.size - s->size > max_pad)
			max_pad = fn.size - s->size;
		found++;
	}
	t_find = now_ms() - t0;
	print_message("%s: %zu Go functions match (%zu padded, longest padding %llu bytes; %zu "
		      "functions sharing a table name with a lower one and %zu C functions not "
		      "checked); open %.2f ms, %.2f us per lookup\n",
		      tag, ts.n, found, (unsigned long long)max_pad, ts.shadowed, ts.outside,
		      t_open, t_find * 1e3 / ts.n);
	pclntab__close(pt);
	elf_file__close(ef);
	free_go_syms(&ts);
}

/*
 * Builds the twins: TAG names the outputs; ENV and FLAGS go to `go build`, LDFLAGS to -ldflags
 * (the stripped build adds -s -w to them).
 */
static void check_twin(const char *tag, const char *env, const char *flags, const char *ldflags,
		       bool cgo, bool elided)
{
	char twin[4096], stripped[4096], out[256], fl[1024];

	snprintf(out, sizeof(out), "pclntab_%s", tag);
	snprintf(fl, sizeof(fl), "%s -ldflags='%s'", flags, ldflags);
	build(twin, sizeof(twin), out, env, fl);
	snprintf(out, sizeof(out), "pclntab_%s_stripped", tag);
	snprintf(fl, sizeof(fl), "%s -ldflags='%s -s -w'", flags, ldflags);
	build(stripped, sizeof(stripped), out, env, fl);
	check_against(tag, twin, stripped, cgo, elided);
}

/* Go release VERSION (through the module proxy, cached) as an environment for test_go_build(). */
static void toolchain_env(const char *version, char *env, size_t size)
{
	const char *go = test_go_toolchain(version);
	size_t n;

	if (!go)
		fail_msg("cannot get the Go %s toolchain through the module proxy", version);
	n = strlen(go) - strlen("/bin/go");
	/* -buildvcs only exists from Go 1.18 on: 1.17 refuses to start with it in GOFLAGS. */
	assert_true((size_t)snprintf(env, size,
				     "GOTOOLCHAIN=local GOFLAGS='-mod=mod%s' GOROOT='%.*s' "
				     "PATH='%.*s/bin':\"$PATH\"",
				     strncmp(version, "1.17.", 5) ? " -buildvcs=false" : "", (int)n, go,
				     (int)n, go) < size);
}

static void check_toolchain(const char *version, const char *flags, const char *ldflags, bool cgo,
			    bool elided)
{
	char env[8192], tag[128];

	toolchain_env(version, env, sizeof(env));
	if (cgo)
		strcat(env, " CGO_ENABLED=1");
	snprintf(tag, sizeof(tag), "go%s%s%s", version, cgo ? "_cgo" : "",
		 strstr(flags, "pie") ? "_pie" : "");
	check_twin(tag, env, flags, ldflags, cgo, elided);
}

static void test_pclntab__installed_go(void **state)
{
	(void)state;
	check_twin("plain", "", "", "", false, false);
}

/* Until Go 1.25 the PIE table is its own section only with internal linking. */
static void test_pclntab__installed_go_pie(void **state)
{
	(void)state;
	check_twin("pie", "", "-buildmode=pie", "", false, false);
}

static void test_pclntab__installed_go_arm64(void **state)
{
	(void)state;
	check_twin("arm64", "GOARCH=arm64", "", "", false, false);
}

/*
 * External linking puts C start-up code first in .text, so runtime.text lies past its start, and
 * Go 1.26 no longer stores it in the table header: only moduledata has it.
 */
static void test_pclntab__installed_go_external_pie(void **state)
{
	(void)state;
	check_twin("cgo_pie", "CGO_ENABLED=1", "-buildmode=pie", "-linkmode=external", true, false);
}

/*
 * A large real binary for timing: the installed toolchain's compiler (about 20,000 functions),
 * checked against its own .symtab.
 */
static void test_pclntab__large_binary(void **state)
{
	char path[4096], line[4096] = "";
	FILE *f;

	(void)state;
	f = popen("go env GOTOOLDIR", "r");
	assert_non_null(f);
	if (!fgets(line, sizeof(line), f))
		line[0] = '\0';
	assert_int_equal(pclose(f), 0);
	line[strcspn(line, "\n")] = '\0';
	assert_true((size_t)snprintf(path, sizeof(path), "%s/compile", line) < sizeof(path));
	check_against("compile", path, path, false, false);
}

/* Magic 0xfffffffa: absolute uintptr entries. */
static void test_pclntab__go1_17(void **state)
{
	(void)state;
	check_toolchain("1.17.13", "", "", false, false);
}

/* Magic 0xfffffff0: uint32 entries relative to the header's text start. */
static void test_pclntab__go1_19(void **state)
{
	(void)state;
	check_toolchain("1.19.13", "", "", false, true);
}

/* Magic 0xfffffff1. */
static void test_pclntab__go1_21(void **state)
{
	(void)state;
	check_toolchain("1.21.13", "", "", false, false);
}

/* The last release that stores the text start in the header. */
static void test_pclntab__go1_25(void **state)
{
	(void)state;
	check_toolchain("1.25.14", "", "", false, false);
}

/* Internal linking keeps the table in a section of its own, .data.rel.ro.gopclntab. */
static void test_pclntab__go1_21_pie(void **state)
{
	(void)state;
	check_toolchain("1.21.13", "-buildmode=pie", "", false, false);
}

/*
 * The external linker merges .data.rel.ro.gopclntab into .data.rel.ro: no section has the
 * table's name, it is found by its header.
 */
static void test_pclntab__go1_21_external_pie(void **state)
{
	(void)state;
	check_toolchain("1.21.13", "-buildmode=pie", "-linkmode=external", true, false);
}

static void test_pclntab__go1_17_external_pie(void **state)
{
	(void)state;
	check_toolchain("1.17.13", "-buildmode=pie", "-linkmode=external", true, false);
}

static void test_pclntab__missing_function(void **state)
{
	struct elf_symbol fn;
	struct elf_file *ef;
	struct pclntab *pt;
	char bin[4096];

	(void)state;
	build(bin, sizeof(bin), "pclntab_plain_stripped", "", "-ldflags='-s -w'");
	ef = elf_file__open(bin);
	assert_non_null(ef);
	pt = pclntab__open(ef);
	assert_non_null(pt);
	assert_int_equal(pclntab__find_func(pt, "net/http.serverHandler.ServeHTTP", &fn), 0);
	assert_int_equal(pclntab__find_func(pt, "net/http.serverHandler.ServeHTTPX", &fn), -ENOENT);
	assert_int_equal(pclntab__find_func(pt, "net/http.serverHandler.Serve", &fn), -ENOENT);
	assert_int_equal(pclntab__find_func(pt, "main.doesNotExist", &fn), -ENOENT);
	assert_int_equal(pclntab__find_func(pt, "", &fn), -ENOENT);
	assert_int_equal(pclntab__find_func(pt, "\xff\xff", &fn), -ENOENT);
	pclntab__close(pt);
	elf_file__close(ef);
}

static void test_pclntab__c_binary(void **state)
{
	struct elf_file *ef;

	(void)state;
	ef = elf_file__open("/bin/true");
	assert_non_null(ef);
	errno = 0;
	assert_null(pclntab__open(ef));
	assert_int_equal(errno, ENOENT);
	elf_file__close(ef);
}

/* The section header of NAME in the ELF image BUF (64-bit little-endian, as Go builds here). */
static Elf64_Shdr *find_shdr(char *buf, size_t len, const char *name)
{
	Elf64_Ehdr *eh = (Elf64_Ehdr *)buf;
	Elf64_Shdr *sh, *strs;
	unsigned int i;

	assert_true(len >= sizeof(*eh) && eh->e_ident[EI_CLASS] == ELFCLASS64);
	assert_true(eh->e_shoff + (uint64_t)eh->e_shnum * sizeof(*sh) <= len);
	sh = (Elf64_Shdr *)(buf + eh->e_shoff);
	strs = &sh[eh->e_shstrndx];
	for (i = 0; i < eh->e_shnum; i++) {
		if (!strcmp(buf + strs->sh_offset + sh[i].sh_name, name))
			return &sh[i];
	}
	return NULL;
}

/* Opens PATH's table: NULL with EINVAL, or a table whose lookups must not crash. */
static bool open_refused(const char *path)
{
	struct elf_symbol fn;
	struct elf_file *ef;
	struct pclntab *pt;

	ef = elf_file__open(path);
	assert_non_null(ef);
	errno = 0;
	pt = pclntab__open(ef);
	if (!pt) {
		assert_int_equal(errno, EINVAL);
		elf_file__close(ef);
		return true;
	}
	(void)pclntab__find_func(pt, "net/http.serverHandler.ServeHTTP", &fn);
	(void)pclntab__find_func(pt, "runtime.main", &fn);
	pclntab__close(pt);
	elf_file__close(ef);
	return false;
}

struct patch {
	const char *what;
	uint64_t off; /* in the table */
	unsigned int len;
	uint64_t val;
};

/*
 * Copies of a stripped binary with the table's header or function table corrupted, or the
 * section cut short: each must be refused with EINVAL, none may crash or hang.
 */
static void test_pclntab__corrupt(void **state)
{
	char bin[4096], copy[4096];
	uint64_t tab, nfunc, pcln_off, ftsize;
	struct test_capture cap;
	size_t len, tab_size;
	char *log;
	struct patch patches[16];
	Elf64_Shdr *sh;
	unsigned int i, n = 0, refused = 0;
	char *buf;
	int fd;

	(void)state;
	build(bin, sizeof(bin), "pclntab_plain_stripped", "", "-ldflags='-s -w'");
	buf = test_read_file(bin, &len);
	assert_non_null(buf);
	sh = find_shdr(buf, len, ".gopclntab");
	assert_non_null(sh);
	tab = sh->sh_offset;
	tab_size = sh->sh_size;
	/* Go 1.20+ header: magic, pads, quantum, ptrsize, then nfunc, nfiles, text, ... pcln. */
	assert_int_equal(*(uint32_t *)(buf + tab), 0xfffffff1);
	memcpy(&nfunc, buf + tab + 8, 8);
	memcpy(&pcln_off, buf + tab + 8 + 7 * 8, 8);
	ftsize = (2 * nfunc + 1) * 4;
	assert_true((size_t)snprintf(copy, sizeof(copy), "%s/pclntab_corrupt", test_data_dir()) <
		    sizeof(copy));

	/* Every refusal is logged; keep the run quiet and check a few reasons below. */
	assert_int_equal(test_capture_start(&cap), 0);
	patches[n++] = (struct patch){"old magic", 0, 4, 0xfffffffb};
	patches[n++] = (struct patch){"unknown magic", 0, 4, 0x12345678};
	patches[n++] = (struct patch){"big-endian magic", 0, 4, 0xf1ffffff};
	patches[n++] = (struct patch){"padding", 4, 1, 1};
	patches[n++] = (struct patch){"instruction size", 6, 1, 3};
	patches[n++] = (struct patch){"pointer size", 7, 1, 2};
	patches[n++] = (struct patch){"no functions", 8, 8, 0};
	patches[n++] = (struct patch){"huge function count", 8, 8, UINT64_MAX};
	patches[n++] = (struct patch){"name table offset", 8 + 3 * 8, 8, UINT64_MAX - 7};
	patches[n++] = (struct patch){"function table offset", 8 + 7 * 8, 8, tab_size};
	patches[n++] = (struct patch){"unsorted entries", pcln_off + 8, 4, 0xfffffff0};
	patches[n++] = (struct patch){"record offset", pcln_off + 4, 4, 0x7fffffff};
	patches[n++] = (struct patch){"end entry", pcln_off + 8 * nfunc, 4, 0};
	for (i = 0; i < n; i++) {
		char *p = buf + tab + patches[i].off, saved[8];

		memcpy(saved, p, patches[i].len);
		memcpy(p, &patches[i].val, patches[i].len); /* little-endian host and target */
		fd = open(copy, O_WRONLY | O_CREAT | O_TRUNC, 0644);
		assert_true(fd >= 0);
		assert_int_equal(write(fd, buf, len), (ssize_t)len);
		close(fd);
		if (!open_refused(copy)) {
			print_message("corruption '%s' was not refused\n", patches[i].what);
			fail();
		}
		memcpy(p, saved, patches[i].len);
	}

	/* Cut short: inside the prefix, inside the words, inside the function table. */
	{
		uint64_t cuts[] = {0, 7, 8 + 8 * 8 - 1, pcln_off + ftsize - 1};

		for (i = 0; i < sizeof(cuts) / sizeof(cuts[0]); i++) {
			sh->sh_size = cuts[i];
			fd = open(copy, O_WRONLY | O_CREAT | O_TRUNC, 0644);
			assert_true(fd >= 0);
			assert_int_equal(write(fd, buf, len), (ssize_t)len);
			close(fd);
			if (!open_refused(copy)) {
				print_message("table cut to %llu bytes was not refused\n",
					      (unsigned long long)cuts[i]);
				fail();
			}
		}
		sh->sh_size = tab_size;
	}

	/*
	 * Random bytes over the header, the function table and the records: whatever is still
	 * consistent may open, the rest must be refused; nothing may crash.
	 */
	fd = open(copy, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, buf, len), (ssize_t)len);
	srand(42);
	for (i = 0; i < 400; i++) {
		uint64_t span = i % 2 ? pcln_off + ftsize : 8 + 8 * 8, pos = tab + rand() % span;
		unsigned char b = rand() & 0xff;

		if (i % 4 == 3) /* a record: entry or name offset of some function */
			pos = tab + pcln_off + ftsize + rand() % (tab_size - pcln_off - ftsize);
		assert_int_equal(pwrite(fd, &b, 1, pos), 1);
		refused += open_refused(copy);
		assert_int_equal(pwrite(fd, buf + pos, 1, pos), 1);
	}
	close(fd);
	log = test_capture_end(&cap);
	assert_non_null(log);
	print_message("random corruption: %u of 400 refused\n", refused);
	assert_true(refused > 0);
	assert_non_null(strstr(log, "gospan: cannot read the Go function table of '"));
	assert_non_null(strstr(log, "': format of Go 1.2-1.15 (magic 0xfffffffb) not supported\n"));
	assert_non_null(strstr(log, "': unknown magic 0x12345678\n"));
	assert_non_null(strstr(log, "': bad pointer size 2\n"));
	assert_non_null(strstr(log, "': header truncated\n"));
	assert_non_null(strstr(log, "': function table truncated\n"));
	free(log);
	free(buf);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_pclntab__installed_go),
	    cmocka_unit_test(test_pclntab__installed_go_pie),
	    cmocka_unit_test(test_pclntab__installed_go_arm64),
	    cmocka_unit_test(test_pclntab__installed_go_external_pie),
	    cmocka_unit_test(test_pclntab__large_binary),
	    cmocka_unit_test(test_pclntab__go1_17),
	    cmocka_unit_test(test_pclntab__go1_19),
	    cmocka_unit_test(test_pclntab__go1_21),
	    cmocka_unit_test(test_pclntab__go1_25),
	    cmocka_unit_test(test_pclntab__go1_21_pie),
	    cmocka_unit_test(test_pclntab__go1_21_external_pie),
	    cmocka_unit_test(test_pclntab__go1_17_external_pie),
	    cmocka_unit_test(test_pclntab__missing_function),
	    cmocka_unit_test(test_pclntab__c_binary),
	    cmocka_unit_test(test_pclntab__corrupt),
	};

	return cmocka_run_group_tests(tests, setup, NULL);
}
