/* SPDX-License-Identifier: MIT */
/*
 * Shared helpers for the cmocka unit tests: building real Go programs from testdata/, reading
 * files, capturing what gospan logs, and the checks the offset tables' tests share. Tests run
 * with tests/unit as the working directory; GOSPAN_BUILD names build/.
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

#include "analysis/elf.h"
#include "analysis/gobin.h"
#include "analysis/offsets.h"

/* The committed offset tables, from tests/unit, and the modules the last three are of. */
#define TABLE_PATH "../../offsets/go_offsets.json"
#define GRPC_TABLE_PATH "../../offsets/grpc_offsets.json"
#define PGX_TABLE_PATH "../../offsets/pgx_offsets.json"
#define REDIS_TABLE_PATH "../../offsets/redis_offsets.json"
#define GRPC_MODULE "google.golang.org/grpc"
#define PGX_MODULE "github.com/jackc/pgx/v5"
#define REDIS_MODULE "github.com/redis/go-redis/v9"

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

/* gospan's log level in tests: errors only, everything when GOSPAN_TEST_VERBOSE is set. */
#define TEST_QUIET_LEVEL (getenv("GOSPAN_TEST_VERBOSE") ? LOG_DEBUG : LOG_ERROR)

/*
 * Evaluates EXPR with gospan's log at LEVEL and stderr captured, then puts TEST_QUIET_LEVEL
 * back; *MSG gets what was written (malloc'ed, for the caller to free), and the value is EXPR's.
 * A macro so that this header needs no log.h: the test files that use it include core/log.h.
 */
#define TEST_LOGGED(level, msg, expr)                                                              \
	({                                                                                         \
		struct test_capture cap__;                                                         \
		__typeof__(expr) rc__;                                                             \
                                                                                                   \
		log_set_level(level);                                                              \
		assert_int_equal(test_capture_start(&cap__), 0);                                   \
		rc__ = (expr);                                                                     \
		*(msg) = test_capture_end(&cap__);                                                 \
		log_set_level(TEST_QUIET_LEVEL);                                                   \
		assert_non_null(*(msg));                                                           \
		rc__;                                                                              \
	})

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
/* The buildinfo of the binary at PATH (which must open as ELF), or NULL: for the caller to free. */
static inline struct gobin *test_read_gobin(const char *path)
{
	struct elf_file *ef = elf_file__open(path);
	struct gobin *gb;

	assert_non_null(ef);
	gb = gobin__read(ef);
	elf_file__close(ef);
	return gb;
}

static inline struct offsets *test_load_offsets(void)
{
	struct offsets *o;
	size_t len;
	char *json = test_read_file(TABLE_PATH, &len);

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

/*
 * Row O of the Go table, or read from a Go binary's DWARF (WHAT says which, for a failure), must
 * have every field gospan cannot do without: first in its struct (a request's Method, a URL's
 * Scheme) or after other members.
 */
static inline void test_assert_go_row_usable(const int64_t o[GO_FIELD__COUNT], const char *what)
{
	static const struct {
		enum go_field f;
		bool first;
	} required[] = {
		{ GO_FIELD_G_GOID, false },
		{ GO_FIELD_REQ_METHOD, true },
		{ GO_FIELD_REQ_URL, false },
		{ GO_FIELD_REQ_REMOTE_ADDR, false },
		{ GO_FIELD_URL_PATH, false },
		{ GO_FIELD_RESPONSE_STATUS, false },
		{ GO_FIELD_URL_SCHEME, true },
		{ GO_FIELD_URL_HOST, false },
		{ GO_FIELD_URL_RAW_QUERY, false },
		{ GO_FIELD_RESP_STATUS_CODE, false },
	};

	for (size_t i = 0; i < sizeof(required) / sizeof(required[0]); i++) {
		int64_t v = o[required[i].f];

		if (required[i].first ? v != 0 : v <= 0)
			fail_msg("%s: '%s' is %lld", what, go_field_names[required[i].f],
				 (long long)v);
	}
	if (o[GO_FIELD_BUFIO_N] <= o[GO_FIELD_BUFIO_BUF])
		fail_msg("%s: bufio.Writer's n at %lld, not after its buf at %lld", what,
			 (long long)o[GO_FIELD_BUFIO_N], (long long)o[GO_FIELD_BUFIO_BUF]);
}

/* Every field of a row of FIELDS' table in O must be -1 (absent), as after a failed read. */
static inline void test_assert_unset(const struct offsets_fields *fields, const int64_t *o)
{
	for (size_t f = 0; f < fields->count; f++) {
		if (o[f] != -1)
			fail_msg("%s '%s' is %lld, not -1", fields->what, fields->names[f],
				 (long long)o[f]);
	}
}

/* WANT and GOT, rows of FIELDS' table, must be equal; WHAT says whose they are in a failure. */
static inline void test_assert_row_equal(const struct offsets_fields *fields, const char *what,
					 const int64_t *got, const int64_t *want)
{
	for (size_t f = 0; f < fields->count; f++) {
		if (got[f] != want[f])
			fail_msg("%s %s '%s': table %lld, DWARF %lld", fields->what, what,
				 fields->names[f], (long long)want[f], (long long)got[f]);
	}
}

#endif
