// SPDX-License-Identifier: MIT
/*
 * Tests for gobin.c on real binaries: what it reads must equal what the go command itself reports
 * (`go version`, `go version -m`) for binaries built here by the installed toolchain, by Go 1.21.0
 * (GOTOOLCHAIN) and by Debian's Go 1.19, stripped or not; a C binary must be refused as not Go.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

#include "helpers.h"
#include "analysis/elf.h"
#include "analysis/gobin.h"
#include "core/log.h"

#define GO119 "/usr/lib/go-1.19/bin/go"
/* env(1) looks "go" up in the PATH it was given, so Go 1.19's go command runs. */
#define GO119_ENV "PATH=/usr/lib/go-1.19/bin:$PATH"

static int setup(void **state)
{
	(void)state;
	log_set_level(getenv("GOSPAN_TEST_VERBOSE") ? LOG_DEBUG : LOG_ERROR);
	return 0;
}

/* Builds testdata/SRC and copies the path out of helpers.h's static buffer. */
static void build(char *out, size_t size, const char *src, const char *name, const char *env,
		  const char *flags)
{
	const char *p = test_go_build(src, name, env, flags);

	assert_non_null(p);
	assert_true((size_t)snprintf(out, size, "%s", p) < size);
}

/* The version as `go version BIN` prints it ("BIN: go1.22.12"), run with GO. */
static void go_version_of(const char *go, const char *path, char *out, size_t size)
{
	char cmd[8192], line[4096], *p;
	FILE *f;

	snprintf(cmd, sizeof(cmd), "%s version '%s'", go, path);
	f = popen(cmd, "r");
	assert_non_null(f);
	assert_non_null(fgets(line, sizeof(line), f));
	assert_int_equal(pclose(f), 0);
	line[strcspn(line, "\n")] = '\0';
	p = strstr(line, ": ");
	assert_non_null(p);
	assert_true((size_t)snprintf(out, size, "%s", p + 2) < size);
}

/* The module path on the "module" line of testdata/SRC/go.mod. */
static void gomod_path(const char *src, char *out, size_t size)
{
	char path[4096], *buf, *p;

	snprintf(path, sizeof(path), "testdata/%s/go.mod", src);
	buf = test_read_file(path, NULL);
	assert_non_null(buf);
	p = strstr(buf, "module ");
	assert_non_null(p);
	p += strlen("module ");
	p[strcspn(p, " \t\r\n")] = '\0';
	assert_true((size_t)snprintf(out, size, "%s", p) < size);
	free(buf);
}

/* Checks GB against `GO version BIN` and the module path in testdata/SRC/go.mod. */
static void check_against_go(const struct gobin *gb, const char *go, const char *bin,
			     const char *src)
{
	char want[4096];
	int ma, mi, pa;

	assert_non_null(gb);
	go_version_of(go, bin, want, sizeof(want));
	assert_string_equal(gb->go_version, want);
	/* "go1.21" and "go1.21rc2" (no patch field) are x.y.0 for gospan. */
	pa = 0;
	assert_true(sscanf(want, "go%d.%d.%d", &ma, &mi, &pa) >= 2);
	assert_int_equal(gb->major, ma);
	assert_int_equal(gb->minor, mi);
	assert_int_equal(gb->patch, pa);
	gomod_path(src, want, sizeof(want));
	assert_non_null(gb->main_path);
	assert_string_equal(gb->main_path, want);
	assert_non_null(gb->main_version);
	assert_string_equal(gb->main_version, "(devel)");
}

static void check_build(const char *name, const char *go, const char *env, const char *flags)
{
	char bin[4096];
	struct gobin *gb;

	build(bin, sizeof(bin), "httpserver", name, env, flags);
	gb = test_read_gobin(bin);
	check_against_go(gb, go, bin, "httpserver");
	gobin__free(gb);
}

static void test_gobin__installed_go(void **state)
{
	(void)state;
	check_build("gobin_current", "go", "", "");
}

static void test_gobin__installed_go_stripped(void **state)
{
	(void)state;
	check_build("gobin_current_stripped", "go", "", "-ldflags='-s -w'");
}

static void test_gobin__installed_go_arm64(void **state)
{
	(void)state;
	check_build("gobin_current_arm64", "go", "GOARCH=arm64", "");
}

static void test_gobin__go1_21_0(void **state)
{
	char bin[4096];
	struct gobin *gb;

	(void)state;
	/* The go command fetches the 1.21.0 toolchain from the module proxy on first use. */
	build(bin, sizeof(bin), "httpserver", "gobin_go1.21.0", "GOTOOLCHAIN=go1.21.0", "");
	gb = test_read_gobin(bin);
	check_against_go(gb, "go", bin, "httpserver");
	assert_string_equal(gb->go_version, "go1.21.0");
	assert_int_equal(gb->minor, 21);
	assert_int_equal(gb->patch, 0);
	gobin__free(gb);
}

static void test_gobin__go1_19(void **state)
{
	char bin[4096];
	struct gobin *gb;

	(void)state;
	if (access(GO119, X_OK)) {
		/* Debian's golang-1.19 package; `apt-get install golang-1.19` provides it. */
		TEST_SKIP("%s is missing (apt-get install golang-1.19)", GO119);
	}
	build(bin, sizeof(bin), "httpserver", "gobin_go1.19", GO119_ENV, "");
	gb = test_read_gobin(bin);
	check_against_go(gb, GO119, bin, "httpserver");
	assert_int_equal(gb->major, 1);
	assert_int_equal(gb->minor, 19);
	gobin__free(gb);

	build(bin, sizeof(bin), "httpserver", "gobin_go1.19_stripped", GO119_ENV,
	      "-ldflags='-s -w'");
	gb = test_read_gobin(bin);
	check_against_go(gb, GO119, bin, "httpserver");
	gobin__free(gb);
}

/*
 * The module list against `go version -m`: every "dep" line, in order, with the version of the
 * "=>" replacement that follows it if any ("(devel)" for a directory replacement).
 */
static void test_gobin__deps_match_go_version_m(void **state)
{
	char bin[4096], cmd[8192], line[4096];
	char paths[16][512], versions[16][512];
	size_t n = 0, i;
	struct gobin *gb;
	FILE *f;

	(void)state;
	build(bin, sizeof(bin), "withdeps", "gobin_withdeps", "", "");
	snprintf(cmd, sizeof(cmd), "go version -m '%s'", bin);
	f = popen(cmd, "r");
	assert_non_null(f);
	while (fgets(line, sizeof(line), f)) {
		char path[512] = "", version[512] = "";

		if (sscanf(line, "\tdep\t%511[^\t\n]\t%511[^\t\n]", path, version) >= 1) {
			assert_true(n < 16);
			strcpy(paths[n], path);
			strcpy(versions[n], version);
			n++;
		} else if (sscanf(line, "\t=>\t%511[^\t\n]\t%511[^\t\n]", path, version) >= 1) {
			assert_true(n > 0);
			strcpy(versions[n - 1], version[0] ? version : "(devel)");
		}
	}
	assert_int_equal(pclose(f), 0);
	assert_int_equal(n, 1); /* testdata/withdeps has exactly one dependency */

	gb = test_read_gobin(bin);
	check_against_go(gb, "go", bin, "withdeps");
	assert_int_equal(gb->ndeps, n);
	for (i = 0; i < n; i++) {
		assert_string_equal(gb->deps[i].path, paths[i]);
		assert_string_equal(gb->deps[i].version, versions[i]);
	}
	assert_string_equal(gb->deps[0].path, "example.com/gospan/testdata/greet");
	assert_string_equal(gb->deps[0].version, "(devel)");
	gobin__free(gb);
}

static void test_gobin__c_binary_is_not_go(void **state)
{
	struct gobin *gb;

	(void)state;
	errno = 0;
	gb = test_read_gobin("/bin/true");
	assert_null(gb);
	assert_int_equal(errno, ENOEXEC);
	gobin__free(NULL);
}

/* File offset of .go.buildinfo in BIN, from `readelf -SW`. */
static long buildinfo_offset(const char *bin)
{
	char cmd[8192], line[4096];
	unsigned long long addr, off = 0;
	FILE *f;

	snprintf(cmd, sizeof(cmd), "readelf -SW '%s'", bin);
	f = popen(cmd, "r");
	assert_non_null(f);
	while (fgets(line, sizeof(line), f)) {
		char *p = strstr(line, " .go.buildinfo ");

		if (p)
			assert_int_equal(
				sscanf(p, " .go.buildinfo PROGBITS %llx %llx", &addr, &off), 2);
	}
	assert_int_equal(pclose(f), 0);
	assert_true(off > 0);
	return off;
}

/*
 * A real binary whose buildinfo bytes are overwritten one way at a time: each is refused with the
 * right errno, and nothing reads outside the section (run with SANITIZE=1 to check that).
 */
static void test_gobin__corrupt_buildinfo(void **state)
{
	static const struct {
		size_t at;	   /* offset in .go.buildinfo */
		const char *bytes; /* written there */
		size_t len;
		int err;
	} cases[] = {
		/* the magic */
		{ 0, "\xfe", 1, EINVAL },
		/* the old format, whose pointers at offset 16 are then zero */
		{ 15, "\x00", 1, EINVAL },
		{ 15, "\x01", 1, EINVAL },
		/* a version longer than the section */
		{ 32, "\xff\xff\xff\xff\x0f", 5, EINVAL },
		/* a length that does not fit in 64 bits */
		{ 32, "\xff\xff\xff\xff\xff\xff\xff\xff\xff\x7f", 10, EINVAL },
		/* no version at all */
		{ 32, "\x00", 1, ENOEXEC },
	};
	char bin[4096], copy[4096];
	struct gobin *gb;
	size_t i, len;
	long off;
	char *buf;
	int fd;

	(void)state;
	build(bin, sizeof(bin), "httpserver", "gobin_current", "", "");
	off = buildinfo_offset(bin);
	buf = test_read_file(bin, &len);
	assert_non_null(buf);
	assert_true((size_t)snprintf(copy, sizeof(copy), "%s/gobin_corrupt", test_data_dir()) <
		    sizeof(copy));
	fd = open(copy, O_WRONLY | O_CREAT | O_TRUNC, 0755);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, buf, len), (ssize_t)len);
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		assert_int_equal(pwrite(fd, cases[i].bytes, cases[i].len, off + cases[i].at),
				 (ssize_t)cases[i].len);
		errno = 0;
		gb = test_read_gobin(copy);
		if (gb || errno != cases[i].err)
			print_message("case %zu: got %p, errno %d\n", i, (void *)gb, errno);
		assert_null(gb);
		assert_int_equal(errno, cases[i].err);
		/* Restore before the next case, so each breaks one thing. */
		assert_int_equal(pwrite(fd, buf + off + cases[i].at, cases[i].len,
					off + cases[i].at),
				 (ssize_t)cases[i].len);
	}
	close(fd);
	/* Restored, the copy reads again: the cases failed for their own reason. */
	gb = test_read_gobin(copy);
	assert_non_null(gb);
	gobin__free(gb);
	free(buf);
}

static void test_gobin__parse_version(void **state)
{
	static const struct {
		const char *s;
		int ret, major, minor, patch;
	} cases[] = {
		{ "go1.22.12", 0, 1, 22, 12 },
		{ "1.22.12", 0, 1, 22, 12 },
		{ "go1.21", 0, 1, 21, 0 },
		{ "go1.21rc2", 0, 1, 21, 0 },
		{ "go1.20beta1", 0, 1, 20, 0 },
		{ "go1.23.0 X:boringcrypto", 0, 1, 23, 0 },
		{ "go1.17.13", 0, 1, 17, 13 },
		{ "devel go1.24-3b2e4d8 Mon Jan 1 00:00:00 2024 +0000", -EINVAL, 0, 0, 0 },
		{ "", -EINVAL, 0, 0, 0 },
		{ "go", -EINVAL, 0, 0, 0 },
		{ "go1", -EINVAL, 0, 0, 0 },
		{ "go1.", -EINVAL, 0, 0, 0 },
		{ "go1.21.", -EINVAL, 0, 0, 0 },
		{ "go1.21rc", -EINVAL, 0, 0, 0 },
		{ "go1.21x", -EINVAL, 0, 0, 0 },
		{ "go1.21.3.4", -EINVAL, 0, 0, 0 },
		{ "go1.x", -EINVAL, 0, 0, 0 },
		{ "gox.21", -EINVAL, 0, 0, 0 },
		{ "go-1.21", -EINVAL, 0, 0, 0 },
		{ "go1.99999999999999999999", -EINVAL, 0, 0, 0 },
		{ "hello", -EINVAL, 0, 0, 0 },
	};
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		int ma = -1, mi = -1, pa = -1;
		int ret = gobin__parse_version(cases[i].s, &ma, &mi, &pa);

		if (ret != cases[i].ret)
			print_message("'%s': got %d, want %d\n", cases[i].s, ret, cases[i].ret);
		assert_int_equal(ret, cases[i].ret);
		if (ret)
			continue;
		assert_int_equal(ma, cases[i].major);
		assert_int_equal(mi, cases[i].minor);
		assert_int_equal(pa, cases[i].patch);
	}
	assert_int_equal(gobin__parse_version(NULL, &(int){ 0 }, &(int){ 0 }, &(int){ 0 }),
			 -EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_gobin__installed_go),
		cmocka_unit_test(test_gobin__installed_go_stripped),
		cmocka_unit_test(test_gobin__installed_go_arm64),
		cmocka_unit_test(test_gobin__go1_21_0),
		cmocka_unit_test(test_gobin__go1_19),
		cmocka_unit_test(test_gobin__deps_match_go_version_m),
		cmocka_unit_test(test_gobin__c_binary_is_not_go),
		cmocka_unit_test(test_gobin__corrupt_buildinfo),
		cmocka_unit_test(test_gobin__parse_version),
	};

	return cmocka_run_group_tests(tests, setup, NULL);
}
