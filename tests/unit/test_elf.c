// SPDX-License-Identifier: MIT
/*
 * Tests for elf.c on real Go binaries built here: symbol addresses and sizes against `go tool nm
 * -size`, file offsets against `readelf -lW`, section placement against `readelf -SW`, and clean
 * failures on stripped, empty, non-ELF, truncated and corrupted inputs.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <elf.h>
#include <fcntl.h>
#include <unistd.h>

#include "helpers.h"
#include "analysis/elf.h"
#include "core/log.h"

#define SYM_SERVE_HTTP "net/http.serverHandler.ServeHTTP"
#define SYM_GOPANIC "runtime.gopanic"
#define SYM_RESPONSE_ITAB "go:itab.*net/http.response,net/http.ResponseWriter"

static char bin[4096], bin_stripped[4096], bin_pie[4096];

static int setup(void **state)
{
	const char *p;

	(void)state;
	/* The failure tests log their reasons on purpose; debug output only on request. */
	log_set_level(getenv("GOSPAN_TEST_VERBOSE") ? LOG_DEBUG : LOG_ERROR);
	p = test_go_build("httpserver", "elf_httpserver", "", "");
	if (!p)
		return -1;
	snprintf(bin, sizeof(bin), "%s", p);
	p = test_go_build("httpserver", "elf_httpserver_stripped", "", "-ldflags='-s -w'");
	if (!p)
		return -1;
	snprintf(bin_stripped, sizeof(bin_stripped), "%s", p);
	p = test_go_build("httpserver", "elf_httpserver_pie", "", "-buildmode=pie");
	if (!p)
		return -1;
	snprintf(bin_pie, sizeof(bin_pie), "%s", p);
	return 0;
}

/* PATH = $GOSPAN_BUILD/unit-data/NAME. */
static void data_path(char *path, size_t size, const char *name)
{
	assert_true((size_t)snprintf(path, size, "%s/%s", test_data_dir(), name) < size);
}

/* Finds NAME in `go tool nm -size BIN`: the Go toolchain's own view of the symbol table. */
static int nm_lookup(const char *path, const char *name, uint64_t *addr, uint64_t *size)
{
	char cmd[8192], line[4096];
	int found = -1;
	FILE *f;

	snprintf(cmd, sizeof(cmd), "go tool nm -size '%s'", path);
	f = popen(cmd, "r");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		unsigned long long a, s;
		char type, sym[4096];

		line[strcspn(line, "\n")] = '\0';
		if (sscanf(line, "%llx %llu %c %4095[^\n]", &a, &s, &type, sym) == 4 &&
		    !strcmp(sym, name)) {
			*addr = a;
			*size = s;
			found = 0;
		}
	}
	if (pclose(f))
		return -1;
	return found;
}

struct load_seg {
	uint64_t off, vaddr, filesz, memsz;
};

/* Reads the PT_LOAD rows of `readelf -lW BIN`. */
static size_t readelf_loads(const char *path, struct load_seg *segs, size_t max)
{
	char cmd[8192], line[4096];
	size_t n = 0;
	FILE *f;

	snprintf(cmd, sizeof(cmd), "readelf -lW '%s'", path);
	f = popen(cmd, "r");
	assert_non_null(f);
	while (fgets(line, sizeof(line), f)) {
		unsigned long long off, va, pa, fsz, msz;

		if (n < max && sscanf(line, " LOAD 0x%llx 0x%llx 0x%llx 0x%llx 0x%llx", &off, &va,
				      &pa, &fsz, &msz) == 5) {
			segs[n].off = off;
			segs[n].vaddr = va;
			segs[n].filesz = fsz;
			segs[n].memsz = msz;
			n++;
		}
	}
	assert_int_equal(pclose(f), 0);
	return n;
}

static void check_symbol(struct elf_file *ef, const char *path, const char *name)
{
	struct elf_symbol sym;
	uint64_t addr, size;

	assert_int_equal(nm_lookup(path, name, &addr, &size), 0);
	assert_int_equal(elf_file__find_symbol(ef, name, &sym), 0);
	assert_int_equal(sym.addr, addr);
	assert_int_equal(sym.size, size);
	assert_true(sym.size > 0);
}

static void test_elf__symbols_match_go_nm(void **state)
{
	struct elf_file *ef;
	struct elf_symbol sym;

	(void)state;
	ef = elf_file__open(bin);
	assert_non_null(ef);
	assert_string_equal(elf_file__path(ef), bin);
#if defined(__x86_64__)
	assert_int_equal(elf_file__machine(ef), EM_X86_64);
#elif defined(__aarch64__)
	assert_int_equal(elf_file__machine(ef), EM_AARCH64);
#endif
	assert_false(elf_file__is_pie(ef));
	check_symbol(ef, bin, SYM_SERVE_HTTP);
	check_symbol(ef, bin, SYM_GOPANIC);
	check_symbol(ef, bin, SYM_RESPONSE_ITAB);
	check_symbol(ef, bin, "net/http.(*conn).serve");
	assert_int_equal(elf_file__find_symbol(ef, "net/http.serverHandler.ServeHTTPX", &sym),
			 -ENOENT);
	assert_int_equal(elf_file__find_symbol(ef, "", &sym), -ENOENT);
	elf_file__close(ef);
}

/* Every PT_LOAD maps as readelf says, and the bytes read by address are the file's bytes. */
static void check_offsets(const char *path)
{
	struct load_seg segs[16];
	struct elf_symbol sym;
	struct elf_file *ef;
	uint8_t code[64];
	uint64_t off;
	size_t n, i, flen;
	char *file;

	n = readelf_loads(path, segs, 16);
	assert_true(n >= 2);
	ef = elf_file__open(path);
	assert_non_null(ef);
	for (i = 0; i < n; i++) {
		uint64_t last = segs[i].vaddr + segs[i].filesz - 1;

		if (!segs[i].filesz)
			continue;
		assert_int_equal(elf_file__addr_to_offset(ef, segs[i].vaddr, &off), 0);
		assert_int_equal(off, segs[i].off);
		assert_int_equal(elf_file__addr_to_offset(ef, last, &off), 0);
		assert_int_equal(off, segs[i].off + segs[i].filesz - 1);
		/* .bss: in memory, not in the file. */
		if (segs[i].memsz > segs[i].filesz) {
			assert_int_equal(elf_file__addr_to_offset(ef, last + 1, &off), -ERANGE);
			assert_int_equal(elf_file__read_addr(ef, last, code, 2), -ERANGE);
		}
	}
	assert_int_equal(elf_file__addr_to_offset(ef, 0, &off), -ERANGE);
	assert_int_equal(elf_file__addr_to_offset(ef, UINT64_MAX, &off), -ERANGE);

	file = test_read_file(path, &flen);
	assert_non_null(file);
	assert_int_equal(elf_file__find_symbol(ef, SYM_SERVE_HTTP, &sym), 0);
	assert_int_equal(elf_file__addr_to_offset(ef, sym.addr, &off), 0);
	assert_true(off + sizeof(code) <= flen);
	assert_int_equal(elf_file__read_addr(ef, sym.addr, code, sizeof(code)), 0);
	assert_memory_equal(code, file + off, sizeof(code));
	free(file);
	elf_file__close(ef);
}

static void test_elf__offsets_match_readelf(void **state)
{
	(void)state;
	check_offsets(bin);
}

static void test_elf__pie(void **state)
{
	struct elf_file *ef;

	(void)state;
	ef = elf_file__open(bin_pie);
	assert_non_null(ef);
	assert_true(elf_file__is_pie(ef));
	check_symbol(ef, bin_pie, SYM_SERVE_HTTP);
	elf_file__close(ef);
	check_offsets(bin_pie);
}

static void test_elf__section_matches_readelf(void **state)
{
	char cmd[8192], line[4096];
	unsigned long long raddr = 0, rsize = 0;
	const void *data;
	struct elf_file *ef;
	uint64_t addr;
	size_t size;
	FILE *f;

	(void)state;
	snprintf(cmd, sizeof(cmd), "readelf -SW '%s'", bin);
	f = popen(cmd, "r");
	assert_non_null(f);
	while (fgets(line, sizeof(line), f)) {
		char *p = strstr(line, " .go.buildinfo ");
		unsigned long long off;

		if (p)
			assert_int_equal(sscanf(p, " .go.buildinfo PROGBITS %llx %llx %llx", &raddr,
						&off, &rsize),
					 3);
	}
	assert_int_equal(pclose(f), 0);
	assert_true(rsize > 0);

	ef = elf_file__open(bin);
	assert_non_null(ef);
	assert_int_equal(elf_file__section(ef, ".go.buildinfo", &data, &size, &addr), 0);
	assert_int_equal(addr, raddr);
	assert_int_equal(size, rsize);
	assert_memory_equal(data, "\xff Go buildinf:", 14);
	assert_int_equal(elf_file__section(ef, ".symtab", &data, &size, &addr), 0);
	assert_true(size > 0);
	assert_int_equal(elf_file__section(ef, ".no.such.section", &data, &size, &addr), -ENOENT);
	elf_file__close(ef);
}

static void test_elf__stripped_has_no_symtab(void **state)
{
	struct elf_symbol sym;
	struct elf_file *ef;
	const void *data;
	uint64_t addr;
	size_t size;

	(void)state;
	ef = elf_file__open(bin_stripped);
	assert_non_null(ef);
	assert_int_equal(elf_file__find_symbol(ef, SYM_SERVE_HTTP, &sym), -ENOENT);
	assert_int_equal(elf_file__find_symbol(ef, SYM_GOPANIC, &sym), -ENOENT);
	assert_int_equal(elf_file__section(ef, ".symtab", &data, &size, &addr), -ENOENT);
	/* Buildinfo survives stripping: that is what gospan reads to explain the refusal. */
	assert_int_equal(elf_file__section(ef, ".go.buildinfo", &data, &size, &addr), 0);
	elf_file__close(ef);
}

static void test_elf__not_elf(void **state)
{
	(void)state;
	errno = 0;
	assert_null(elf_file__open("testdata/httpserver/main.go"));
	assert_int_equal(errno, ENOEXEC);
	errno = 0;
	assert_null(elf_file__open("testdata"));
	assert_int_equal(errno, ENOEXEC);
	errno = 0;
	assert_null(elf_file__open("testdata/no-such-file"));
	assert_int_equal(errno, ENOENT);
	elf_file__close(NULL);
}

/* Writes the first LEN bytes of SRC to DST. */
static void write_prefix(const char *dst, const char *src, size_t len)
{
	size_t flen;
	char *buf = test_read_file(src, &flen);
	FILE *f;

	assert_non_null(buf);
	assert_true(len <= flen);
	f = fopen(dst, "wb");
	assert_non_null(f);
	assert_int_equal(fwrite(buf, 1, len, f), len);
	assert_int_equal(fclose(f), 0);
	free(buf);
}

static void test_elf__empty_file(void **state)
{
	char path[4096];

	(void)state;
	data_path(path, sizeof(path), "elf_empty");
	write_prefix(path, bin, 0);
	errno = 0;
	assert_null(elf_file__open(path));
	assert_int_equal(errno, ENOEXEC);
}

static void test_elf__truncated(void **state)
{
	size_t flen = 0, sizes[] = { 4, 16, 63, 64, 100, 1000, 4096, 0 };
	char path[4096], *buf;
	size_t i;

	(void)state;
	buf = test_read_file(bin, &flen);
	assert_non_null(buf);
	free(buf);
	sizes[sizeof(sizes) / sizeof(sizes[0]) - 1] = flen / 2;
	data_path(path, sizeof(path), "elf_truncated");
	for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		write_prefix(path, bin, sizes[i]);
		errno = 0;
		assert_null(elf_file__open(path));
		/* Too short to be ELF at all, or ELF whose headers point past the end. */
		if (sizes[i] < EI_NIDENT)
			assert_int_equal(errno, ENOEXEC);
		else
			assert_int_equal(errno, EINVAL);
	}
}

/*
 * Flips bytes of the ELF header, the program headers and the section header table of a real
 * binary: whatever opens must answer lookups without crashing (run with SANITIZE=1 to see
 * out-of-bounds reads), and whatever fails must set errno.
 */
static void test_elf__corrupt_headers(void **state)
{
	char path[4096], *buf;
	Elf64_Ehdr eh;
	uint32_t seed = 12345;
	size_t flen;
	int fd, i, opened = 0;

	(void)state;
	buf = test_read_file(bin, &flen);
	assert_non_null(buf);
	memcpy(&eh, buf, sizeof(eh));
	data_path(path, sizeof(path), "elf_corrupt");
	write_prefix(path, bin, flen);
	fd = open(path, O_WRONLY);
	assert_true(fd >= 0);
	for (i = 0; i < 600; i++) {
		struct elf_file *ef;
		struct elf_symbol sym;
		const void *data = NULL;
		uint8_t b, tmp[16];
		uint64_t pos, addr;
		size_t size = 0;

		seed = seed * 1103515245 + 12345;
		switch (i % 3) {
		case 0:
			pos = seed % sizeof(eh);
			break;
		case 1:
			pos = eh.e_phoff + seed % (eh.e_phnum * sizeof(Elf64_Phdr));
			break;
		default:
			pos = eh.e_shoff + seed % (eh.e_shnum * sizeof(Elf64_Shdr));
			break;
		}
		assert_true(pos < flen);
		b = (uint8_t)(seed >> 16) | 0x80;
		assert_int_equal(pwrite(fd, &b, 1, pos), 1);

		errno = 0;
		ef = elf_file__open(path);
		if (ef) {
			opened++;
			if (!elf_file__find_symbol(ef, SYM_SERVE_HTTP, &sym))
				(void)elf_file__read_addr(ef, sym.addr, tmp, sizeof(tmp));
			(void)elf_file__section(ef, ".go.buildinfo", &data, &size, &addr);
			if (data && size)
				b = ((const uint8_t *)data)[size - 1];
			elf_file__close(ef);
		} else {
			assert_true(errno == EINVAL || errno == ENOEXEC);
		}
		assert_int_equal(pwrite(fd, buf + pos, 1, pos), 1);
	}
	close(fd);
	free(buf);
	/* Some corruptions (symbol values, unused fields) leave a readable file: both paths ran. */
	assert_true(opened > 0 && opened < 600);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_elf__symbols_match_go_nm),
		cmocka_unit_test(test_elf__offsets_match_readelf),
		cmocka_unit_test(test_elf__pie),
		cmocka_unit_test(test_elf__section_matches_readelf),
		cmocka_unit_test(test_elf__stripped_has_no_symtab),
		cmocka_unit_test(test_elf__not_elf),
		cmocka_unit_test(test_elf__empty_file),
		cmocka_unit_test(test_elf__truncated),
		cmocka_unit_test(test_elf__corrupt_headers),
	};

	return cmocka_run_group_tests(tests, setup, NULL);
}
