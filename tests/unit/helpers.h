/* SPDX-License-Identifier: MIT */
/*
 * Shared helpers for the cmocka unit tests: building real Go programs from testdata/ and reading
 * files. Tests run with tests/unit as the working directory; GOSPAN_BUILD names build/.
 */
#ifndef GOSPAN_TEST_HELPERS_H
#define GOSPAN_TEST_HELPERS_H

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "analysis/offsets.h"

/* True under CI (CI=true), where every prerequisite is installed and no test may be skipped. */
static inline int test_in_ci(void)
{
	const char *ci = getenv("CI");

	return ci && (!strcmp(ci, "true") || !strcmp(ci, "1") || !strcmp(ci, "yes"));
}

/*
 * A prerequisite is missing: skip with the reason, except under CI, where it is a failure.
 * For use inside cmocka tests (it expands to cmocka's skip() and fail_msg()).
 */
#define TEST_SKIP(...)                                                                             \
	do {                                                                                       \
		if (test_in_ci())                                                                  \
			fail_msg(__VA_ARGS__);                                                     \
		print_message("skipped: ");                                                        \
		print_message(__VA_ARGS__);                                                        \
		print_message("\n");                                                               \
		skip();                                                                            \
	} while (0)

/* Where test artifacts go: $GOSPAN_BUILD/unit-data, created on demand. */
static inline const char *test_data_dir(void)
{
	static char dir[4096];
	const char *b = getenv("GOSPAN_BUILD");

	if (!dir[0]) {
		if ((size_t)snprintf(dir, sizeof(dir), "%s/unit-data", b && *b ? b : "../../build") >=
		    sizeof(dir))
			abort(); /* a build path this long is a broken environment */
		mkdir(dir, 0755);
	}
	return dir;
}

/* Runs a shell command built from FMT; returns its exit status (or -1). */
static inline int test_sh(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static inline int test_sh(const char *fmt, ...)
{
	char cmd[8192];
	va_list ap;
	int rc;

	va_start(ap, fmt);
	rc = vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	if (rc < 0 || (size_t)rc >= sizeof(cmd))
		return -1;
	rc = system(cmd);
	if (rc == -1)
		return -1;
	return WEXITSTATUS(rc);
}

/*
 * Builds the Go program in testdata/SRC into $GOSPAN_BUILD/unit-data/OUT with ENV (e.g.
 * "GOARCH=arm64", may be "") and FLAGS (e.g. "-ldflags=-s -w", may be ""). Returns the output
 * path (static buffer) or NULL when the build failed.
 */
static inline const char *test_go_build(const char *src, const char *out, const char *env,
					 const char *flags)
{
	static char path[4096];

	if ((size_t)snprintf(path, sizeof(path), "%s/%s", test_data_dir(), out) >= sizeof(path))
		return NULL;
	if (test_sh("cd testdata/%s && env CGO_ENABLED=0 GOFLAGS=-buildvcs=false %s go build %s -o '%s' . >&2",
		    src, env, flags, path))
		return NULL;
	return path;
}

/*
 * The go command of Go release VERSION ("1.17.13"). The go command fetches it through the module
 * proxy itself (GOTOOLCHAIN), which also makes it executable: `go mod download` of the toolchain
 * module does not. Returns a static buffer, or NULL when the release cannot be had.
 */
static inline const char *test_go_toolchain(const char *version)
{
	static char go[4096];
	char cmd[512];
	size_t n;
	FILE *p;

	if ((size_t)snprintf(cmd, sizeof(cmd),
			     "cd / && env -u GOROOT GOTOOLCHAIN=go%s GOFLAGS=-mod=mod go env GOROOT",
			     version) >= sizeof(cmd))
		return NULL;
	p = popen(cmd, "r");
	if (!p)
		return NULL;
	if (!fgets(go, sizeof(go) - 8, p))
		go[0] = '\0';
	if (pclose(p) != 0 || !go[0])
		return NULL;
	n = strcspn(go, "\n");
	memcpy(go + n, "/bin/go", 8);
	return access(go, X_OK) ? NULL : go;
}

/* Reads a whole file into a NUL-terminated malloc'ed buffer; NULL on failure. */
static inline char *test_read_file(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	char *buf = NULL;
	long n;

	if (!f)
		return NULL;
	if (fseek(f, 0, SEEK_END) || (n = ftell(f)) < 0 || fseek(f, 0, SEEK_SET))
		goto out;
	buf = malloc(n + 1);
	if (!buf)
		goto out;
	if (fread(buf, 1, n, f) != (size_t)n) {
		free(buf);
		buf = NULL;
		goto out;
	}
	buf[n] = '\0';
	if (len)
		*len = n;
out:
	fclose(f);
	return buf;
}

/* The repository's offset tables (offsets/go_offsets.json), parsed; NULL if unreadable. */
static inline struct offsets *test_load_offsets(void)
{
	struct offsets *o;
	size_t len;
	char *json = test_read_file("../../offsets/go_offsets.json", &len);

	if (!json)
		return NULL;
	o = offsets__parse(json, len);
	free(json);
	return o;
}

/* Sends fd 2 to a temporary file so a test can read what gospan told the user. */
struct test_capture {
	FILE *tmp;
	int saved;
};

/* 0, or -1 when stderr cannot be redirected. */
static inline int test_capture_start(struct test_capture *c)
{
	fflush(stderr);
	c->saved = -1;
	c->tmp = tmpfile();
	if (!c->tmp)
		return -1;
	c->saved = dup(2);
	if (c->saved < 0 || dup2(fileno(c->tmp), 2) < 0) {
		fclose(c->tmp);
		return -1;
	}
	return 0;
}

/* Restores stderr and returns what was written to it (malloc'ed), or NULL on failure. */
static inline char *test_capture_end(struct test_capture *c)
{
	char *buf = NULL;
	long n;

	fflush(stderr);
	if (c->saved < 0 || dup2(c->saved, 2) < 0)
		return NULL;
	close(c->saved);
	if (fseek(c->tmp, 0, SEEK_END) || (n = ftell(c->tmp)) < 0)
		goto out;
	rewind(c->tmp);
	buf = calloc(1, n + 1);
	if (buf && fread(buf, 1, n, c->tmp) != (size_t)n) {
		free(buf);
		buf = NULL;
	}
out:
	fclose(c->tmp);
	return buf;
}

#endif
