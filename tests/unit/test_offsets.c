// SPDX-License-Identifier: MIT
/*
 * Tests for offsets.c: the real offsets/go_offsets.json (known offsets, exact and nearest-below
 * lookups, fields that come and go between releases), a real Go binary built here whose DWARF,
 * read by llvm-dwarfdump, must agree with the table, and malformed tables that must be refused;
 * the real offsets/grpc_offsets.json (known offsets, every release's fields, module versions,
 * pseudo-versions and releases newer than the table resolving to the nearest row below) and the
 * choice grpc_offsets__for_binary() makes for a binary without DWARF; the real
 * offsets/pgx_offsets.json and offsets/redis_offsets.json (known offsets, the members that were
 * renamed or moved, every release's fields) and module_offsets__for_binary() on them; every
 * module table as module_tables__load() gives it from the gospan binary (the same bytes as in
 * offsets/), and the router tables among them (gin, echo v4 and v5, chi, gorilla/mux: known
 * offsets, every release's fields, releases below the tables).
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <cjson/cJSON.h>

#include "helpers.h"
#include "analysis/embed.h"
#include "analysis/gobin.h"
#include "core/log.h"
#include "analysis/offsets.h"

static char *table_json;
static size_t table_len;
static struct offsets *table;
static char *grpc_json;
static size_t grpc_len;
static struct offsets *grpc_table;
static char *pgx_json, *redis_json;
static size_t pgx_len, redis_len;
static struct offsets *pgx_table, *redis_table;
/* Every module's table as gospan embeds it. */
static struct module_tables modules;

static int setup(void **state)
{
	(void)state;
	/* The failure tests log their reasons on purpose; debug output only on request. */
	log_set_level(getenv("GOSPAN_TEST_VERBOSE") ? LOG_DEBUG : LOG_ERROR);
	table_json = test_read_file(TABLE_PATH, &table_len);
	if (!table_json) {
		fprintf(stderr, "cannot read %s\n", TABLE_PATH);
		return -1;
	}
	table = offsets__parse(table_json, table_len);
	grpc_json = test_read_file(GRPC_TABLE_PATH, &grpc_len);
	if (!grpc_json) {
		fprintf(stderr, "cannot read %s\n", GRPC_TABLE_PATH);
		return -1;
	}
	grpc_table = grpc_offsets__parse(grpc_json, grpc_len);
	pgx_json = test_read_file(PGX_TABLE_PATH, &pgx_len);
	redis_json = test_read_file(REDIS_TABLE_PATH, &redis_len);
	if (!pgx_json || !redis_json) {
		fprintf(stderr, "cannot read %s and %s\n", PGX_TABLE_PATH, REDIS_TABLE_PATH);
		return -1;
	}
	pgx_table = pgx_offsets__parse(pgx_json, pgx_len);
	redis_table = redis_offsets__parse(redis_json, redis_len);
	if (module_tables__load(&modules))
		return -1;
	return table && grpc_table && pgx_table && redis_table ? 0 : -1;
}

static int teardown(void **state)
{
	(void)state;
	offsets__free(table);
	free(table_json);
	offsets__free(grpc_table);
	free(grpc_json);
	offsets__free(pgx_table);
	free(pgx_json);
	offsets__free(redis_table);
	free(redis_json);
	module_tables__free(&modules);
	return 0;
}

/* Looks up MAJOR.MINOR.PATCH in the real table, which must have it, and checks the release. */
static void find_ok(int major, int minor, int patch, const char *want_resolved,
		    int64_t out[GO_FIELD__COUNT])
{
	const char *resolved = NULL;

	assert_int_equal(offsets__find(table, major, minor, patch, out, &resolved), 0);
	assert_non_null(resolved);
	assert_string_equal(resolved, want_resolved);
}

/* The newest listed release of 1.MINOR, from the JSON itself so regenerating keeps this true. */
static void latest_of_minor(int minor, char *buf, size_t size)
{
	cJSON *root = cJSON_ParseWithLength(table_json, table_len);
	const cJSON *v;
	int best = -1, ma, mi, pa;

	assert_non_null(root);
	cJSON_ArrayForEach(v, cJSON_GetObjectItemCaseSensitive(root, "versions"))
	{
		assert_true(cJSON_IsString(v));
		assert_int_equal(gobin__parse_version(v->valuestring, &ma, &mi, &pa), 0);
		if (ma == 1 && mi == minor && pa > best)
			best = pa;
	}
	cJSON_Delete(root);
	assert_true(best >= 0);
	snprintf(buf, size, "1.%d.%d", minor, best);
}

/* Room for a row of any table. */
#define ROW_MAX 64
#define ROW_FITS(name, path) &&sizeof(name##_field_names) / sizeof(char *) <= ROW_MAX
_Static_assert((int)GO_FIELD__COUNT <= ROW_MAX GOSPAN_MODULE_TABLES(ROW_FITS),
	       "a row does not fit");
#undef ROW_FITS

/* Looks module VERSION ("v1.50.0") up in table T, which must resolve it to WANT_RESOLVED. */
static void module_find_ok(const struct offsets *t, const char *version, const char *want_resolved,
			   int64_t *out)
{
	const struct offsets_fields *fields = offsets__fields(t);
	struct offsets_version v;
	const char *resolved = NULL;

	if (offsets__parse_module_version(version, &v))
		fail_msg("'%s' does not parse as a module version", version);
	if (offsets__find_version(t, &v, OFFSETS_MATCH_NEAREST_BELOW, out, fields->count,
				  &resolved))
		fail_msg("%s %s: no row", fields->what, version);
	assert_non_null(resolved);
	if (strcmp(resolved, want_resolved))
		fail_msg("%s %s resolved to %s, want %s", fields->what, version, resolved,
			 want_resolved);
}

/* The oldest (FIRST) or newest release listed in the table text JSON, "5.12.0". */
static void listed_end(const char *json, size_t len, bool first, char *buf, size_t size)
{
	cJSON *root = cJSON_ParseWithLength(json, len);
	const cJSON *vs, *v;

	assert_non_null(root);
	vs = cJSON_GetObjectItemCaseSensitive(root, "versions");
	assert_true(cJSON_GetArraySize(vs) > 0);
	v = cJSON_GetArrayItem(vs, first ? 0 : cJSON_GetArraySize(vs) - 1);
	assert_true(cJSON_IsString(v));
	snprintf(buf, size, "%s", v->valuestring);
	cJSON_Delete(root);
}

/*
 * Offsets known from the DWARF of real builds, as a table: a ROW() names a version to look up
 * (Go's "1.22.12", a module's "v1.50.0") and the listed release it must resolve to (NULL: any);
 * the AT() entries after it give fields of that row and their offsets, -1 where absent.
 */
struct known {
	const char *version, *resolved;
	int field;
	int64_t want;
};

#define ROW(version, resolved) { version, resolved, -1, 0 }
#define AT(field, want) { NULL, NULL, field, want }

static void check_known(const struct offsets *t, const struct known *k, size_t n)
{
	const struct offsets_fields *fields = offsets__fields(t);
	const char *row = NULL, *resolved;
	int64_t o[ROW_MAX];
	int ma, mi, pa;

	for (size_t i = 0; i < n; i++) {
		if (!k[i].version) {
			assert_non_null(row);
			if (o[k[i].field] != k[i].want)
				fail_msg("%s %s '%s' is %lld, want %lld", fields->what, row,
					 fields->names[k[i].field], (long long)o[k[i].field],
					 (long long)k[i].want);
			continue;
		}
		row = k[i].version;
		if (t != table) {
			module_find_ok(t, row, k[i].resolved, o);
			continue;
		}
		assert_int_equal(gobin__parse_version(row, &ma, &mi, &pa), 0);
		resolved = NULL;
		if (offsets__find(table, ma, mi, pa, o, &resolved))
			fail_msg("Go %s: no row", row);
		if (k[i].resolved && strcmp(resolved, k[i].resolved))
			fail_msg("Go %s resolved to %s, want %s", row, resolved, k[i].resolved);
	}
}

#define CHECK_KNOWN(t, k) check_known(t, k, sizeof(k) / sizeof((k)[0]))

/*
 * Values read from the DWARF of programs built with those releases (llvm-dwarfdump agrees):
 * goid moved from 152 to 160 when Go 1.23 added g.syscallbp; Request gained Pattern in 1.23,
 * which pushed pat from 248 to 264. g.parentGoid follows goid's moves, plus one of its own in
 * 1.26; url.URL reordered its members in 1.26, moving RawQuery from 96 to 88.
 */
static void test_offsets__known_values(void **state)
{
	static const struct known known[] = {
		ROW("1.22.12", "1.22.12"),
		AT(GO_FIELD_G_GOID, 152),
		AT(GO_FIELD_REQ_METHOD, 0),
		AT(GO_FIELD_REQ_URL, 16),
		AT(GO_FIELD_REQ_PROTO, 24),
		AT(GO_FIELD_REQ_HOST, 128),
		AT(GO_FIELD_REQ_REMOTE_ADDR, 176),
		AT(GO_FIELD_REQ_TLS, 208),
		AT(GO_FIELD_URL_PATH, 56),
		AT(GO_FIELD_REQ_PAT, 248),
		AT(GO_FIELD_PATTERN_STR, 0),
		AT(GO_FIELD_RESPONSE_STATUS, 120),
		AT(GO_FIELD_G_PARENT_GOID, 272),
		AT(GO_FIELD_URL_SCHEME, 0),
		AT(GO_FIELD_URL_USER, 32),
		AT(GO_FIELD_URL_HOST, 40),
		AT(GO_FIELD_URL_RAW_QUERY, 96),
		AT(GO_FIELD_RESP_STATUS_CODE, 16),
		AT(GO_FIELD_BUFIO_BUF, 16),
		AT(GO_FIELD_BUFIO_N, 40),
		AT(GO_FIELD_HMAP_COUNT, 0),
		AT(GO_FIELD_HMAP_B, 9),
		AT(GO_FIELD_HMAP_BUCKETS, 16),
		/* TCPAddr{IP []byte; Port int; Zone string}, valueCtx{Context; key, val any}. */
		AT(GO_FIELD_TCPADDR_IP, 0),
		AT(GO_FIELD_TCPADDR_PORT, 24),
		AT(GO_FIELD_VALUECTX_KEY, 16),
		AT(GO_FIELD_VALUECTX_VAL, 32),
		/*
		 * Stmt{db *DB; query string; ...}: in builds by 1.19.8 (Debian's), 1.21.13, 1.24
		 * and 1.26.
		 */
		AT(GO_FIELD_SQL_STMT_QUERY, 8),

		ROW("1.23.0", "1.23.0"),
		AT(GO_FIELD_G_GOID, 160),
		AT(GO_FIELD_G_PARENT_GOID, 280),
		AT(GO_FIELD_REQ_PATTERN, 232),
		AT(GO_FIELD_REQ_PAT, 264),
		AT(GO_FIELD_URL_PATH, 56),

		ROW("1.24.0", "1.24.0"),
		AT(GO_FIELD_SWISS_USED, 0),
		AT(GO_FIELD_SWISS_DIR_PTR, 16),
		AT(GO_FIELD_SWISS_DIR_LEN, 24),
		AT(GO_FIELD_SWISS_TABLE_GROUPS, 16),
		AT(GO_FIELD_SWISS_GROUPS_DATA, 0),
		AT(GO_FIELD_SWISS_GROUPS_MASK, 8),

		ROW("1.25.0", "1.25.0"),
		AT(GO_FIELD_G_GOID, 152),
		AT(GO_FIELD_G_PARENT_GOID, 272),

		ROW("1.26.0", "1.26.0"),
		AT(GO_FIELD_G_PARENT_GOID, 280),
		AT(GO_FIELD_URL_RAW_QUERY, 88),
		AT(GO_FIELD_URL_HOST, 40),

		/*
		 * response.status moved in a patch release, 1.26.11: the table must list the
		 * release that moved it, or 1.26.11 and later would take the old offset from the
		 * nearest release below.
		 */
		ROW("1.26.10", "1.26.10"),
		AT(GO_FIELD_RESPONSE_STATUS, 120),
		ROW("1.26.11", "1.26.11"),
		AT(GO_FIELD_RESPONSE_STATUS, 128),
		ROW("1.26.7", NULL),
		AT(GO_FIELD_RESPONSE_STATUS, 120),
	};

	(void)state;
	CHECK_KNOWN(table, known);
}

/* Whether every field from FIRST to LAST is present (all) or absent (none); fails on a mix. */
static bool all_or_none(const int64_t o[GO_FIELD__COUNT], enum go_field first, enum go_field last,
			const char *release)
{
	int n = 0;

	for (int f = first; f <= (int)last; f++)
		n += o[f] >= 0;
	if (n && n != (int)(last - first + 1))
		fail_msg("Go %s has %d of the %d fields %s..%s", release, n,
			 (int)(last - first + 1), go_field_names[first], go_field_names[last]);
	return n > 0;
}

/* Every listed release resolves to itself, with every field gospan requires present. */
static void test_offsets__every_listed_release_is_exact(void **state)
{
	cJSON *root = cJSON_ParseWithLength(table_json, table_len);
	const char *resolved;
	int64_t o[GO_FIELD__COUNT];
	const cJSON *v;
	int ma, mi, pa, n = 0;

	(void)state;
	assert_non_null(root);
	cJSON_ArrayForEach(v, cJSON_GetObjectItemCaseSensitive(root, "versions"))
	{
		assert_int_equal(gobin__parse_version(v->valuestring, &ma, &mi, &pa), 0);
		resolved = NULL;
		assert_int_equal(offsets__find(table, ma, mi, pa, o, &resolved), 0);
		assert_string_equal(resolved, v->valuestring);
		test_assert_go_row_usable(o, v->valuestring);
		assert_int_equal(o[GO_FIELD_G_PARENT_GOID] > o[GO_FIELD_G_GOID], mi >= 21);
		/* None of these structs has changed since Go 1.17; a change would need a look. */
		assert_int_equal(o[GO_FIELD_SQL_STMT_QUERY], 8);
		assert_int_equal(o[GO_FIELD_TCPADDR_IP], 0);
		assert_int_equal(o[GO_FIELD_TCPADDR_PORT], 24);
		assert_int_equal(o[GO_FIELD_VALUECTX_KEY], 16);
		assert_int_equal(o[GO_FIELD_VALUECTX_VAL], 32);
		/* One map implementation per release, never both, never neither, never half. */
		if (all_or_none(o, GO_FIELD_HMAP_COUNT, GO_FIELD_HMAP_BUCKETS, v->valuestring) ==
		    all_or_none(o, GO_FIELD_SWISS_USED, GO_FIELD_SWISS_GROUPS_MASK, v->valuestring))
			fail_msg("Go %s: not exactly one map implementation", v->valuestring);
		n++;
	}
	cJSON_Delete(root);
	/* Go 1.21 to 1.26 at the least, each with its .0 and its latest patch. */
	assert_true(n >= 12);
}

static void test_offsets__nearest_below_within_minor(void **state)
{
	int64_t o[GO_FIELD__COUNT], exact[GO_FIELD__COUNT];
	char latest[32];

	(void)state;
	/* Only 1.22.0 and 1.22.12 are listed: 1.22.5 takes 1.22.0's layout. */
	find_ok(1, 22, 5, "1.22.0", o);
	find_ok(1, 22, 0, "1.22.0", exact);
	assert_memory_equal(o, exact, sizeof(o));
	/* Debian's golang-1.19 is 1.19.8. */
	find_ok(1, 19, 8, "1.19.0", o);

	/* A patch newer than any generated takes the latest of its minor. */
	latest_of_minor(22, latest, sizeof(latest));
	assert_string_equal(latest, "1.22.12");
	find_ok(1, 22, 99, "1.22.12", o);
	latest_of_minor(26, latest, sizeof(latest));
	find_ok(1, 26, 999, latest, o);
}

static void test_offsets__unknown_minor_is_enoent(void **state)
{
	int64_t o[GO_FIELD__COUNT];
	const char *resolved = "untouched";
	struct test_capture cap;
	char *msg;

	(void)state;
	assert_int_equal(offsets__find(table, 1, 16, 15, o, &resolved), -ENOENT);
	assert_string_equal(resolved, "untouched");
	assert_int_equal(offsets__find(table, 1, 99, 0, o, NULL), -ENOENT);
	assert_int_equal(offsets__find(table, 2, 22, 0, o, NULL), -ENOENT);
	assert_int_equal(offsets__find(table, 0, 0, 0, o, NULL), -ENOENT);
	assert_int_equal(offsets__find(NULL, 1, 22, 0, o, NULL), -EINVAL);

	/* The message must say which version and what to do about it. */
	assert_int_equal(test_capture_start(&cap), 0);
	assert_int_equal(offsets__find(table, 1, 99, 3, o, NULL), -ENOENT);
	offsets__explain_miss(table, 1, 99, 3);
	msg = test_capture_end(&cap);
	assert_non_null(msg);
	assert_non_null(strstr(msg, "no offsets for Go 1.99.3"));
	assert_non_null(strstr(msg, "make offsets"));
	free(msg);
}

/*
 * Request.Pattern is new in 1.23; Request.pat and the pattern type in 1.22; g.parentGoid in 1.21.
 * Maps are runtime.hmap up to 1.23 and Swiss tables (internal/runtime/maps) from 1.24.
 */
static void test_offsets__fields_that_come_and_go(void **state)
{
	int64_t o[GO_FIELD__COUNT];
	char first[32], latest[32];

	(void)state;
	find_ok(1, 21, 0, "1.21.0", o);
	assert_int_equal(o[GO_FIELD_REQ_PATTERN], -1);
	assert_int_equal(o[GO_FIELD_REQ_PAT], -1);
	assert_int_equal(o[GO_FIELD_PATTERN_STR], -1);
	assert_true(o[GO_FIELD_REQ_URL] > 0);

	find_ok(1, 22, 0, "1.22.0", o);
	assert_int_equal(o[GO_FIELD_REQ_PATTERN], -1);
	assert_true(o[GO_FIELD_REQ_PAT] > 0);
	assert_int_equal(o[GO_FIELD_PATTERN_STR], 0);

	for (int minor = 23; minor <= 26; minor++) {
		snprintf(first, sizeof(first), "1.%d.0", minor);
		find_ok(1, minor, 0, first, o);
		assert_true(o[GO_FIELD_REQ_PATTERN] > 0);
		assert_true(o[GO_FIELD_REQ_PAT] > o[GO_FIELD_REQ_PATTERN]);
		latest_of_minor(minor, latest, sizeof(latest));
		find_ok(1, minor, 1000, latest, o);
		assert_true(o[GO_FIELD_REQ_PATTERN] > 0);
	}

	latest_of_minor(20, latest, sizeof(latest));
	find_ok(1, 20, 1000, latest, o);
	assert_int_equal(o[GO_FIELD_G_PARENT_GOID], -1);
	find_ok(1, 21, 0, "1.21.0", o);
	assert_int_equal(o[GO_FIELD_G_PARENT_GOID], 272);

	latest_of_minor(23, latest, sizeof(latest));
	find_ok(1, 23, 1000, latest, o);
	for (int f = GO_FIELD_HMAP_COUNT; f <= GO_FIELD_HMAP_BUCKETS; f++)
		assert_true(o[f] >= 0);
	for (int f = GO_FIELD_SWISS_USED; f <= GO_FIELD_SWISS_GROUPS_MASK; f++)
		assert_int_equal(o[f], -1);
	find_ok(1, 24, 0, "1.24.0", o);
	for (int f = GO_FIELD_HMAP_COUNT; f <= GO_FIELD_HMAP_BUCKETS; f++)
		assert_int_equal(o[f], -1);
	for (int f = GO_FIELD_SWISS_USED; f <= GO_FIELD_SWISS_GROUPS_MASK; f++)
		assert_true(o[f] >= 0);
}

/* DW_AT_data_member_location of STRUCT_NAME.MEMBER in BIN according to llvm-dwarfdump, or -1. */
static long dwarfdump_offset(const char *bin, const char *struct_name, const char *member)
{
	char cmd[8192], line[1024], want[256];
	enum { OUTSIDE, IN_MEMBER, IN_WANTED } where = OUTSIDE;
	long off = -1;
	FILE *p;

	snprintf(cmd, sizeof(cmd), "llvm-dwarfdump --name='%s' --show-children '%s'", struct_name,
		 bin);
	snprintf(want, sizeof(want), "DW_AT_name\t(\"%s\")", member);
	p = popen(cmd, "r");
	assert_non_null(p);
	while (fgets(line, sizeof(line), p)) {
		if (strstr(line, "DW_TAG_"))
			where = strstr(line, "DW_TAG_member") ? IN_MEMBER : OUTSIDE;
		else if (where == IN_MEMBER && strstr(line, want))
			where = IN_WANTED;
		else if (where == IN_WANTED && strstr(line, "DW_AT_data_member_location") &&
			 sscanf(strstr(line, "DW_AT_data_member_location"), "%*s (%ld)", &off) == 1)
			break;
	}
	pclose(p);
	return off;
}

/*
 * A real binary built here with the installed Go: the table's offsets for its version must be
 * what LLVM's DWARF reader finds in it. This checks the generator and the lookup together, with
 * a parser that shares nothing with either.
 */
static void test_offsets__match_dwarf_of_real_binary(void **state)
{
	static const struct {
		enum go_field f;
		const char *type, *member;
	} checks[] = {
		{ GO_FIELD_G_GOID, "runtime.g", "goid" },
		{ GO_FIELD_REQ_METHOD, "net/http.Request", "Method" },
		{ GO_FIELD_REQ_URL, "net/http.Request", "URL" },
		{ GO_FIELD_REQ_HOST, "net/http.Request", "Host" },
		{ GO_FIELD_REQ_REMOTE_ADDR, "net/http.Request", "RemoteAddr" },
		{ GO_FIELD_REQ_CONTENT_LENGTH, "net/http.Request", "ContentLength" },
		{ GO_FIELD_URL_PATH, "net/url.URL", "Path" },
		{ GO_FIELD_RESPONSE_STATUS, "net/http.response", "status" },
		{ GO_FIELD_G_PARENT_GOID, "runtime.g", "parentGoid" },
		{ GO_FIELD_URL_SCHEME, "net/url.URL", "Scheme" },
		{ GO_FIELD_URL_USER, "net/url.URL", "User" },
		{ GO_FIELD_URL_HOST, "net/url.URL", "Host" },
		{ GO_FIELD_URL_RAW_QUERY, "net/url.URL", "RawQuery" },
		{ GO_FIELD_RESP_STATUS_CODE, "net/http.Response", "StatusCode" },
		{ GO_FIELD_BUFIO_BUF, "bufio.Writer", "buf" },
		{ GO_FIELD_BUFIO_N, "bufio.Writer", "n" },
		/* The installed Go has one of these two sets; the other must be -1 on both sides. */
		{ GO_FIELD_HMAP_COUNT, "runtime.hmap", "count" },
		{ GO_FIELD_HMAP_B, "runtime.hmap", "B" },
		{ GO_FIELD_HMAP_BUCKETS, "runtime.hmap", "buckets" },
		{ GO_FIELD_SWISS_USED, "internal/runtime/maps.Map", "used" },
		{ GO_FIELD_SWISS_DIR_PTR, "internal/runtime/maps.Map", "dirPtr" },
		{ GO_FIELD_SWISS_DIR_LEN, "internal/runtime/maps.Map", "dirLen" },
		{ GO_FIELD_SWISS_TABLE_GROUPS, "internal/runtime/maps.table", "groups" },
		{ GO_FIELD_SWISS_GROUPS_DATA, "internal/runtime/maps.groupsReference", "data" },
		{ GO_FIELD_SWISS_GROUPS_MASK, "internal/runtime/maps.groupsReference",
		  "lengthMask" },
		{ GO_FIELD_TCPADDR_IP, "net.TCPAddr", "IP" },
		{ GO_FIELD_TCPADDR_PORT, "net.TCPAddr", "Port" },
		{ GO_FIELD_VALUECTX_KEY, "context.valueCtx", "key" },
		{ GO_FIELD_VALUECTX_VAL, "context.valueCtx", "val" },
	};
	int64_t o[GO_FIELD__COUNT];
	char ver[64] = "";
	const char *bin;
	int ma, mi, pa;
	FILE *p;

	(void)state;
	if (test_sh("command -v llvm-dwarfdump >/dev/null"))
		TEST_SKIP("llvm-dwarfdump is missing (apt-get install llvm)");
	p = popen("go env GOVERSION", "r");
	assert_non_null(p);
	assert_non_null(fgets(ver, sizeof(ver), p));
	pclose(p);
	ver[strcspn(ver, "\n")] = '\0';
	assert_int_equal(gobin__parse_version(ver, &ma, &mi, &pa), 0);
	if (offsets__find(table, ma, mi, pa, o, NULL))
		TEST_SKIP("installed Go %d.%d.%d is not in the table: run make offsets", ma, mi,
			  pa);
	bin = test_go_build("httpserver", "offsets_httpserver", "", "");
	assert_non_null(bin);
	for (size_t i = 0; i < sizeof(checks) / sizeof(checks[0]); i++) {
		long want = dwarfdump_offset(bin, checks[i].type, checks[i].member);

		if (want != o[checks[i].f])
			fail_msg("Go %d.%d.%d %s.%s: table %lld, DWARF %ld", ma, mi, pa,
				 checks[i].type, checks[i].member, (long long)o[checks[i].f], want);
	}
}

/* A small valid table that the malformed cases below each break in one way. */
#define GOOD_HEAD "{\"schema\": 1, \"versions\": [\"1.21.0\", \"1.22.0\", \"1.22.7\"], "
#define RANGE(from, to, off) "{\"from\": \"" from "\", \"to\": \"" to "\", \"offset\": " off "}"
#define GOID(ranges) GOOD_HEAD "\"fields\": {\"runtime.g.goid\": [" ranges "]}}"

static void test_offsets__small_table(void **state)
{
	static const char json[] = GOOD_HEAD "\"fields\": {"
		"\"runtime.g.goid\": [" RANGE("1.21.0", "1.22.7", "152") "],"
		"\"net/http.Request.pat\": [" RANGE("1.22.0", "1.22.0", "248") ","
		"  " RANGE("1.22.7", "1.22.7", "264") "],"
		"\"net/http.Request.Future\": [" RANGE("1.21.0", "1.21.0", "8") "],"
		"\"runtime.m.whatever\": \"a newer generator's business\""
		"}}\n";
	int64_t o[GO_FIELD__COUNT];
	const char *resolved;
	struct offsets *t;

	(void)state;
	t = offsets__parse(json, sizeof(json) - 1);
	assert_non_null(t);
	assert_int_equal(offsets__find(t, 1, 22, 3, o, &resolved), 0);
	assert_string_equal(resolved, "1.22.0");
	assert_int_equal(o[GO_FIELD_G_GOID], 152);
	assert_int_equal(o[GO_FIELD_REQ_PAT], 248);
	for (int f = 0; f < GO_FIELD__COUNT; f++) {
		if (f != GO_FIELD_G_GOID && f != GO_FIELD_REQ_PAT)
			assert_int_equal(o[f], -1);
	}
	assert_int_equal(offsets__find(t, 1, 22, 7, o, &resolved), 0);
	assert_string_equal(resolved, "1.22.7");
	assert_int_equal(o[GO_FIELD_REQ_PAT], 264);
	assert_int_equal(offsets__find(t, 1, 21, 9, o, &resolved), 0);
	assert_string_equal(resolved, "1.21.0");
	assert_int_equal(o[GO_FIELD_REQ_PAT], -1);
	assert_int_equal(offsets__find(t, 1, 20, 14, o, NULL), -ENOENT);
	offsets__free(t);

	/* Exactly LEN bytes are read: the same text cut short is refused, not read past. */
	errno = 0;
	assert_null(offsets__parse(json, sizeof(json) / 2));
	assert_int_equal(errno, EINVAL);
}


static void test_offsets__malformed(void **state)
{
	static const struct {
		const char *name, *json;
	} cases[] = {
		{ "empty", "" },
		{ "not json", "schema: 1" },
		{ "truncated",
		  GOOD_HEAD "\"fields\": {\"runtime.g.goid\": [" RANGE("1.21.0", "1.22.7", "152") },
		{ "trailing garbage", GOID(RANGE("1.21.0", "1.22.7", "152")) " x" },
		{ "array", "[]" },
		{ "empty object", "{}" },
		{ "no schema", "{\"versions\": [\"1.21.0\"], \"fields\": {}}" },
		{ "schema 2", "{\"schema\": 2, \"versions\": [\"1.21.0\"], \"fields\": {}}" },
		{ "schema string",
		  "{\"schema\": \"1\", \"versions\": [\"1.21.0\"], \"fields\": {}}" },
		{ "no versions", "{\"schema\": 1, \"fields\": {}}" },
		{ "empty versions", "{\"schema\": 1, \"versions\": [], \"fields\": {}}" },
		{ "version not string", "{\"schema\": 1, \"versions\": [121], \"fields\": {}}" },
		{ "version not go", "{\"schema\": 1, \"versions\": [\"latest\"], \"fields\": {}}" },
		{ "version not canonical",
		  "{\"schema\": 1, \"versions\": [\"go1.21\"], \"fields\": {}}" },
		{ "versions unsorted",
		  "{\"schema\": 1, \"versions\": [\"1.22.0\", \"1.21.0\"], \"fields\": {}}" },
		{ "versions duplicate",
		  "{\"schema\": 1, \"versions\": [\"1.22.0\", \"1.22.0\"], \"fields\": {}}" },
		{ "no fields", GOOD_HEAD "\"generated_by\": \"make offsets\"}" },
		{ "fields array", GOOD_HEAD "\"fields\": []}" },
		{ "field not array", GOOD_HEAD "\"fields\": {\"runtime.g.goid\": 152}}" },
		{ "range not object", GOID("152") },
		{ "offset string", GOID(RANGE("1.21.0", "1.22.7", "\"152\"")) },
		{ "offset missing", GOID("{\"from\": \"1.21.0\", \"to\": \"1.22.7\"}") },
		{ "offset fraction", GOID(RANGE("1.21.0", "1.22.7", "152.5")) },
		{ "offset negative", GOID(RANGE("1.21.0", "1.22.7", "-8")) },
		{ "offset huge", GOID(RANGE("1.21.0", "1.22.7", "1e300")) },
		{ "offset null", GOID(RANGE("1.21.0", "1.22.7", "null")) },
		{ "from after to", GOID(RANGE("1.22.7", "1.21.0", "152")) },
		{ "from missing", GOID("{\"to\": \"1.22.7\", \"offset\": 152}") },
		{ "to not string", GOID("{\"from\": \"1.21.0\", \"to\": 1.22, \"offset\": 152}") },
		{ "from not listed", GOID(RANGE("1.20.0", "1.22.7", "152")) },
		{ "to not a version", GOID(RANGE("1.21.0", "tip", "152")) },
		{ "overlap",
		  GOID(RANGE("1.21.0", "1.22.0", "152") "," RANGE("1.22.0", "1.22.7", "160")) },
		{ "duplicate field",
		  GOOD_HEAD "\"fields\": {\"runtime.g.goid\": [], \"runtime.g.goid\": []}}" },
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct offsets *t;

		errno = 0;
		t = offsets__parse(cases[i].json, strlen(cases[i].json));
		if (t) {
			offsets__free(t);
			fail_msg("malformed table '%s' was accepted", cases[i].name);
		}
		if (errno != EINVAL)
			fail_msg("malformed table '%s': errno %d, want EINVAL", cases[i].name,
				 errno);
	}
	/* The cases are one defect each: the same text with the defect's range fixed parses. */
	{
		static const char ok[] = GOID(RANGE("1.21.0", "1.22.7", "152"));
		struct offsets *t = offsets__parse(ok, sizeof(ok) - 1);

		assert_non_null(t);
		offsets__free(t);
	}
}

/*
 * JSON (LEN bytes), a real table that PARSE reads, cut every STEP bytes, is refused with EINVAL
 * each time (ASan builds would catch any over-read). WHAT names the table in a failure.
 */
static void assert_cut_refused(struct offsets *(*parse)(const char *, size_t), const char *json,
			       size_t len, size_t step, const char *what)
{
	for (size_t n = 0; n < len - 2; n += step) {
		struct offsets *t;

		errno = 0;
		t = parse(json, n);
		if (t) {
			offsets__free(t);
			fail_msg("the %s table cut at %zu bytes was accepted", what, n);
		}
		if (errno != EINVAL)
			fail_msg("the %s table cut at %zu bytes: errno %d, want EINVAL", what, n,
				 errno);
	}
}

/*
 * A table listing "vVERSION" is refused by PARSE, a module table's parser: its versions are
 * Go-style ("1.50.0") whatever the module's own are. The message must contain WHAT.
 */
static void assert_vprefixed_refused(struct offsets *(*parse)(const char *, size_t),
				     const char *version, const char *what)
{
	char json[128], *msg;
	struct offsets *t;
	int n;

	n = snprintf(json, sizeof(json),
		     "{\"schema\": 1, \"versions\": [\"v%s\"], \"fields\": {}}", version);
	assert_true(n > 0 && (size_t)n < sizeof(json));
	errno = 0;
	t = TEST_LOGGED(TEST_QUIET_LEVEL, &msg, parse(json, (size_t)n));
	assert_null(t);
	assert_int_equal(errno, EINVAL);
	if (!strstr(msg, what))
		fail_msg("no '%s' in: %s", what, msg);
	free(msg);
}

/* The real table, cut anywhere, is refused cleanly. */
static void test_offsets__real_table_truncated(void **state)
{
	(void)state;
	assert_cut_refused(offsets__parse, table_json, table_len, 97, "Go");
}

/* ---- the grpc-go table ---- */

/* Looks grpc-go module version VERSION up in the real table; checks the row it resolves to. */
static void grpc_find_ok(const char *version, const char *want_resolved,
			 int64_t out[GRPC_FIELD__COUNT])
{
	module_find_ok(grpc_table, version, want_resolved, out);
}

static int grpc_find_in(const struct offsets *t, const char *version,
			int64_t out[GRPC_FIELD__COUNT])
{
	struct offsets_version v;

	assert_int_equal(offsets__parse_module_version(version, &v), 0);
	return offsets__find_version(t, &v, OFFSETS_MATCH_NEAREST_BELOW, out, GRPC_FIELD__COUNT,
				     NULL);
}

static int grpc_find(const char *version, int64_t out[GRPC_FIELD__COUNT])
{
	return grpc_find_in(grpc_table, version, out);
}

/* The oldest (FIRST) or newest release the grpc table lists, from the JSON itself. */
static void grpc_listed_end(bool first, char *buf, size_t size)
{
	listed_end(grpc_json, grpc_len, first, buf, size);
}

/*
 * The nearest release at or below MAJOR.MINOR.PATCH in the grpc JSON's 'versions', worked out
 * here from the text; false when there is none.
 */
static bool grpc_nearest_listed(int major, int minor, int patch, char *buf, size_t size)
{
	cJSON *root = cJSON_ParseWithLength(grpc_json, grpc_len);
	long best = -1, key, want = ((long)major << 40) | ((long)minor << 20) | patch;
	int ma, mi, pa;
	const cJSON *v;

	assert_non_null(root);
	cJSON_ArrayForEach(v, cJSON_GetObjectItemCaseSensitive(root, "versions"))
	{
		assert_int_equal(gobin__parse_version(v->valuestring, &ma, &mi, &pa), 0);
		key = ((long)ma << 40) | ((long)mi << 20) | pa;
		if (ma == major && key <= want && key > best) {
			best = key;
			snprintf(buf, size, "%s", v->valuestring);
		}
	}
	cJSON_Delete(root);
	return best >= 0;
}

/*
 * Values read from the DWARF of the generator's probes (and by test_dwarf from programs built
 * there): 1.50 has the old Stream with id first and the server transport's own remoteAddr and
 * localAddr; 1.85 has the reordered Stream, embedded in a ServerStream, and a peer.Peer value
 * in the transport, whose LocalAddr is new.
 */
static void test_offsets__grpc_known_values(void **state)
{
	/* Every field of the two, in the enum's order: a column per release. */
	static const struct {
		enum grpc_field f;
		int64_t v1_50, v1_85;
	} fields[] = {
		{ GRPC_FIELD_STREAM_METHOD, 80, 16 },
		{ GRPC_FIELD_STREAM_CTX, 32, 0 },
		{ GRPC_FIELD_STREAM_ID, 0, 108 },
		{ GRPC_FIELD_SERVER_STREAM_STREAM, -1, 0 },
		{ GRPC_FIELD_SERVER_STREAM_STREAM_PTR, -1, -1 },
		{ GRPC_FIELD_HTTP2SERVER_REMOTE_ADDR, 72, -1 },
		{ GRPC_FIELD_HTTP2SERVER_LOCAL_ADDR, 88, -1 },
		{ GRPC_FIELD_HTTP2SERVER_PEER, -1, 56 },
		{ GRPC_FIELD_PEER_ADDR, 0, 0 },
		{ GRPC_FIELD_PEER_LOCAL_ADDR, -1, 16 },
		{ GRPC_FIELD_STATUS_S, 0, 0 },
		{ GRPC_FIELD_ERROR_S, 0, 0 },
		{ GRPC_FIELD_SPB_CODE, 40, 40 },
		{ GRPC_FIELD_SPB_MESSAGE, 48, 48 },
		{ GRPC_FIELD_CSATTEMPT_CS, 16, 16 },
		{ GRPC_FIELD_CLIENTCONN_TARGET, 24, 24 },
	};
	int64_t a[GRPC_FIELD__COUNT], b[GRPC_FIELD__COUNT];

	(void)state;
	assert_int_equal(sizeof(fields) / sizeof(fields[0]), GRPC_FIELD__COUNT);
	grpc_find_ok("v1.50.0", "1.50.0", a);
	grpc_find_ok("v1.85.0", "1.85.0", b);
	for (size_t i = 0; i < sizeof(fields) / sizeof(fields[0]); i++) {
		if (a[fields[i].f] != fields[i].v1_50 || b[fields[i].f] != fields[i].v1_85)
			fail_msg("'%s': %lld in 1.50.0 and %lld in 1.85.0, want %lld and %lld",
				 grpc_field_names[fields[i].f], (long long)a[fields[i].f],
				 (long long)b[fields[i].f], (long long)fields[i].v1_50,
				 (long long)fields[i].v1_85);
	}
}

/*
 * Every listed release resolves to itself and has what gospan needs in one of the two layouts:
 * the stream's method, context and id; the peer's address either in the server transport's
 * own members or in its peer.Peer, never both, never neither; the status types; the client's.
 * The oldest and the newest release have every field of their layout.
 */
static void test_offsets__grpc_every_listed_release_is_exact(void **state)
{
	cJSON *root = cJSON_ParseWithLength(grpc_json, grpc_len);
	char version[48], oldest[32], newest[32];
	int64_t o[GRPC_FIELD__COUNT];
	bool own_addrs, peer;
	const cJSON *v;
	int n = 0, f;

	(void)state;
	assert_non_null(root);
	cJSON_ArrayForEach(v, cJSON_GetObjectItemCaseSensitive(root, "versions"))
	{
		assert_true(cJSON_IsString(v));
		snprintf(version, sizeof(version), "v%s", v->valuestring);
		grpc_find_ok(version, v->valuestring, o);
		for (f = GRPC_FIELD_STREAM_METHOD; f <= GRPC_FIELD_STREAM_ID; f++)
			assert_true(o[f] >= 0);
		/* The pointer marker is the embedded member's own offset, or absent. */
		if (o[GRPC_FIELD_SERVER_STREAM_STREAM_PTR] >= 0)
			assert_int_equal(o[GRPC_FIELD_SERVER_STREAM_STREAM_PTR],
					 o[GRPC_FIELD_SERVER_STREAM_STREAM]);
		own_addrs = o[GRPC_FIELD_HTTP2SERVER_REMOTE_ADDR] > 0;
		assert_int_equal(own_addrs, o[GRPC_FIELD_HTTP2SERVER_LOCAL_ADDR] > 0);
		peer = o[GRPC_FIELD_HTTP2SERVER_PEER] > 0;
		if (own_addrs == peer)
			fail_msg("grpc-go %s: the server transport has %s", version,
				 peer ? "both its own addresses and a peer" : "no peer address");
		for (f = GRPC_FIELD_PEER_ADDR; f < GRPC_FIELD__COUNT; f++) {
			if (f != GRPC_FIELD_PEER_LOCAL_ADDR && o[f] < 0)
				fail_msg("grpc-go %s has no '%s'", version, grpc_field_names[f]);
		}
		/* The peer value in the transport came after Peer.LocalAddr. */
		if (peer)
			assert_true(o[GRPC_FIELD_PEER_LOCAL_ADDR] > 0);
		n++;
	}
	cJSON_Delete(root);
	/* 1.50 to 1.85, a .0 and a latest patch for most minors. */
	assert_true(n >= 36);

	grpc_listed_end(true, oldest, sizeof(oldest));
	assert_string_equal(oldest, "1.50.0");
	grpc_listed_end(false, newest, sizeof(newest));
	snprintf(version, sizeof(version), "v%s", newest);
	grpc_find_ok(version, newest, o);
	for (f = 0; f < GRPC_FIELD__COUNT; f++) {
		if (f != GRPC_FIELD_HTTP2SERVER_REMOTE_ADDR &&
		    f != GRPC_FIELD_HTTP2SERVER_LOCAL_ADDR &&
		    f != GRPC_FIELD_SERVER_STREAM_STREAM_PTR && o[f] < 0)
			fail_msg("the newest grpc-go, %s, has no '%s'", newest,
				 grpc_field_names[f]);
	}
	grpc_find_ok("v1.50.0", "1.50.0", o);
	for (f = 0; f < GRPC_FIELD__COUNT; f++) {
		if (f != GRPC_FIELD_SERVER_STREAM_STREAM &&
		    f != GRPC_FIELD_SERVER_STREAM_STREAM_PTR && f != GRPC_FIELD_HTTP2SERVER_PEER &&
		    f != GRPC_FIELD_PEER_LOCAL_ADDR && o[f] < 0)
			fail_msg("the oldest grpc-go, 1.50.0, has no '%s'", grpc_field_names[f]);
	}
}

/*
 * The layout changes the generator found, on both sides of each (offsets/README.md): the
 * transport's peer.Peer in 1.60, Stream growing in 1.66, the ServerStream embedding a *Stream in
 * 1.69 and a Stream in 1.77, which also reordered Stream. No patch release changed anything.
 */
static void test_offsets__grpc_layout_changes(void **state)
{
	static const struct known known[] = {
		ROW("v1.59.0", "1.59.0"),
		AT(GRPC_FIELD_HTTP2SERVER_REMOTE_ADDR, 72),
		AT(GRPC_FIELD_HTTP2SERVER_PEER, -1),
		AT(GRPC_FIELD_PEER_LOCAL_ADDR, -1),
		ROW("v1.60.0", "1.60.0"),
		AT(GRPC_FIELD_HTTP2SERVER_REMOTE_ADDR, -1),
		AT(GRPC_FIELD_HTTP2SERVER_PEER, 56),
		AT(GRPC_FIELD_PEER_LOCAL_ADDR, 16),

		ROW("v1.65.1", "1.65.1"),
		AT(GRPC_FIELD_STREAM_METHOD, 80),
		ROW("v1.66.0", "1.66.0"),
		AT(GRPC_FIELD_STREAM_METHOD, 88),
		AT(GRPC_FIELD_STREAM_CTX, 40),

		ROW("v1.68.1", "1.68.1"),
		AT(GRPC_FIELD_SERVER_STREAM_STREAM, -1),
		ROW("v1.69.0", "1.69.0"),
		AT(GRPC_FIELD_SERVER_STREAM_STREAM, 0),
		AT(GRPC_FIELD_SERVER_STREAM_STREAM_PTR, 0),
		AT(GRPC_FIELD_STREAM_METHOD, 24),
		AT(GRPC_FIELD_STREAM_CTX, 8),
		AT(GRPC_FIELD_STREAM_ID, 0),

		ROW("v1.76.0", "1.76.0"),
		AT(GRPC_FIELD_SERVER_STREAM_STREAM_PTR, 0),
		ROW("v1.77.0", "1.77.0"),
		AT(GRPC_FIELD_SERVER_STREAM_STREAM, 0),
		AT(GRPC_FIELD_SERVER_STREAM_STREAM_PTR, -1),
		AT(GRPC_FIELD_STREAM_METHOD, 16),
		AT(GRPC_FIELD_STREAM_ID, 108),

		/* Retracted, left out of the proxy's list, still covered as its minor's first. */
		ROW("v1.74.0", "1.74.0"),
		ROW("v1.74.1", "1.74.0"),
	};

	(void)state;
	CHECK_KNOWN(grpc_table, known);
}

/*
 * Versions the table does not list take the nearest release at or below them: a patch between
 * two listed ones, a pseudo-version (a pre-release of the release after the commit it names),
 * a pre-release, a release newer than the table. Nothing older than the table, nor of another
 * major, resolves.
 */
static void test_offsets__grpc_nearest_below(void **state)
{
	int64_t o[GRPC_FIELD__COUNT], exact[GRPC_FIELD__COUNT];
	char newest[32], after[48], want[32];
	struct offsets_version v;
	const char *resolved;
	int ma, mi, pa;

	(void)state;
	grpc_listed_end(false, newest, sizeof(newest));
	assert_int_equal(gobin__parse_version(newest, &ma, &mi, &pa), 0);

	/* v1.50.1 is the latest 1.50 patch; a commit after it is a pseudo-version of 1.50.2. */
	grpc_find_ok("v1.50.1", "1.50.1", exact);
	grpc_find_ok("v1.50.2-0.20221101000000-0123456789ab", "1.50.1", o);
	assert_memory_equal(o, exact, sizeof(o));
	/* A commit before v1.50.1 (a pseudo-version of it) predates it: 1.50.0. */
	grpc_find_ok("v1.50.1-0.20221020000000-0123456789ab", "1.50.0", o);
	/* The main branch after a release names the next minor's pre-release. */
	grpc_find_ok("v1.51.0-dev", "1.50.1", o);
	grpc_find_ok("v1.51.0-dev.0.20221101000000-0123456789ab", "1.50.1", o);
	/* Build metadata does not count. */
	grpc_find_ok("v1.50.1+meta", "1.50.1", o);

	/* Newer than the table: its newest release, whatever the form. */
	snprintf(after, sizeof(after), "v%d.%d.%d", ma, mi + 1, 0);
	grpc_find_ok(after, newest, o);
	snprintf(after, sizeof(after), "v%d.%d.0-dev", ma, mi + 1);
	grpc_find_ok(after, newest, o);
	snprintf(after, sizeof(after), "v%d.%d.%d-0.20991231000000-0123456789ab", ma, mi, pa + 1);
	grpc_find_ok(after, newest, o);
	grpc_find_ok("v1.999.0", newest, o);
	/* A pre-release of the newest comes before it. */
	snprintf(after, sizeof(after), "v%s-rc.1", newest);
	assert_int_equal(offsets__parse_module_version(after, &v), 0);
	assert_true(v.prerelease);
	assert_int_equal(offsets__find_version(grpc_table, &v, OFFSETS_MATCH_NEAREST_BELOW, o,
					       GRPC_FIELD__COUNT, &resolved),
			 0);
	assert_string_not_equal(resolved, newest);

	/* Every 1.N.P around the table resolves as the JSON's own list says it must. */
	for (int minor = 49; minor <= mi + 1; minor++) {
		for (int patch = 0; patch <= 6; patch++) {
			snprintf(after, sizeof(after), "v1.%d.%d", minor, patch);
			if (!grpc_nearest_listed(1, minor, patch, want, sizeof(want))) {
				assert_int_equal(grpc_find(after, o), -ENOENT);
				continue;
			}
			grpc_find_ok(after, want, o);
		}
	}

	/* Older than the table, or another major: nothing. */
	assert_int_equal(grpc_find("v1.49.9", o), -ENOENT);
	assert_int_equal(grpc_find("v1.50.0-rc.1", o), -ENOENT);
	assert_int_equal(grpc_find("v0.99.0", o), -ENOENT);
	assert_int_equal(grpc_find("v2.0.0", o), -ENOENT);
	assert_int_equal(grpc_find("v2.0.0+incompatible", o), -ENOENT);
}

static void test_offsets__module_versions(void **state)
{
	static const struct {
		const char *s;
		int major, minor, patch;
		bool prerelease;
	} good[] = {
		{ "v1.62.1", 1, 62, 1, false },
		{ "v0.0.0", 0, 0, 0, false },
		{ "v1.63.0-dev", 1, 63, 0, true },
		{ "v1.62.2-0.20240301120000-0123456789ab", 1, 62, 2, true },
		{ "v1.63.0-rc.1.0.20240301120000-0123456789ab", 1, 63, 0, true },
		{ "v0.0.0-20240301120000-0123456789ab", 0, 0, 0, true },
		{ "v2.3.4+incompatible", 2, 3, 4, false },
		{ "v1.2.3-pre+build.5", 1, 2, 3, true },
	};
	static const char *const bad[] = {
		"", "1.62.1", "v1.62", "v1", "v1.62.1.", "v1.62.x", "v01.2.3", "v1.02.3",
		"v1.2.3-", "v1.2.3+", "v1.2.3 ", "(devel)", "go1.22.1", "v1.2.3-+x",
		"v1234567890.0.0", "v-1.2.3",
	};
	struct offsets_version v;

	(void)state;
	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		memset(&v, 0x55, sizeof(v));
		if (offsets__parse_module_version(good[i].s, &v))
			fail_msg("'%s' was refused", good[i].s);
		assert_int_equal(v.major, good[i].major);
		assert_int_equal(v.minor, good[i].minor);
		assert_int_equal(v.patch, good[i].patch);
		assert_int_equal(v.prerelease, good[i].prerelease);
	}
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		if (offsets__parse_module_version(bad[i], &v) != -EINVAL)
			fail_msg("'%s' was accepted as a module version", bad[i]);
	}
	assert_int_equal(offsets__parse_module_version(NULL, &v), -EINVAL);
	assert_int_equal(offsets__parse_module_version("v1.2.3", NULL), -EINVAL);
}

/* The lookups refuse a row of the wrong size: a Go row is not a grpc row. */
static void test_offsets__find_checks_its_arguments(void **state)
{
	const struct offsets_version v = { .major = 1, .minor = 62, .patch = 1 };
	int64_t g[GO_FIELD__COUNT], o[GRPC_FIELD__COUNT];

	(void)state;
	assert_int_equal(offsets__find_version(grpc_table, &v, OFFSETS_MATCH_NEAREST_BELOW, o,
					       GRPC_FIELD__COUNT, NULL),
			 0);
	assert_int_equal(offsets__find_version(grpc_table, &v, OFFSETS_MATCH_NEAREST_BELOW, g,
					       GO_FIELD__COUNT, NULL),
			 -EINVAL);
	assert_int_equal(offsets__find_version(grpc_table, NULL, OFFSETS_MATCH_NEAREST_BELOW, o,
					       GRPC_FIELD__COUNT, NULL),
			 -EINVAL);
	assert_int_equal(offsets__find_version(grpc_table, &v, (enum offsets_match)7, o,
					       GRPC_FIELD__COUNT, NULL),
			 -EINVAL);
	/* offsets__find() is the Go table's: on the grpc table it is a caller's mistake. */
	assert_int_equal(offsets__find(grpc_table, 1, 62, 1, g, NULL), -EINVAL);
	/* Within a minor only, for Go: 1.62.1 of Go is no release, and nothing carries over. */
	assert_int_equal(offsets__find_version(table, &v, OFFSETS_MATCH_SAME_MINOR, g,
					       GO_FIELD__COUNT, NULL),
			 -ENOENT);
}

/* The grpc table's own failure paths: its messages name it, its versions are Go-style. */
static void test_offsets__grpc_malformed(void **state)
{
	static const char ok[] =
		"{\"schema\": 1, \"versions\": [\"1.50.0\", \"1.66.0\"], \"fields\": {"
		"\"google.golang.org/grpc/internal/transport.Stream.method\": ["
		"{\"from\": \"1.50.0\", \"to\": \"1.50.0\", \"offset\": 80},"
		"{\"from\": \"1.66.0\", \"to\": \"1.66.0\", \"offset\": 16}],"
		"\"runtime.g.goid\": [{\"from\": \"1.50.0\", \"to\": \"1.66.0\", \"offset\": 152}]"
		"}}";
	int64_t o[GRPC_FIELD__COUNT];
	struct offsets *t;

	(void)state;
	t = grpc_offsets__parse(ok, sizeof(ok) - 1);
	assert_non_null(t);
	/* runtime.g.goid is no grpc field: ignored, as an unknown field is. */
	assert_int_equal(grpc_find_in(t, "v1.60.0", o), 0);
	assert_int_equal(o[GRPC_FIELD_STREAM_METHOD], 80);
	for (int f = 1; f < GRPC_FIELD__COUNT; f++)
		assert_int_equal(o[f], -1);
	assert_int_equal(grpc_find_in(t, "v1.70.0", o), 0);
	assert_int_equal(o[GRPC_FIELD_STREAM_METHOD], 16);
	offsets__free(t);

	assert_vprefixed_refused(grpc_offsets__parse, "1.50.0", "grpc-go offset table");
	assert_cut_refused(grpc_offsets__parse, grpc_json, grpc_len, 89, "grpc-go");
}

/* A binary built here without DWARF, and buildinfo that says what grpc-go it has. */
static const char *no_dwarf_bin(void)
{
	static char bin[4096];

	if (!bin[0]) {
		const char *p = test_go_build("nohttp", "offsets_nohttp_w", "", "-ldflags=-w");

		assert_non_null(p);
		assert_true((size_t)snprintf(bin, sizeof(bin), "%s", p) < sizeof(bin));
	}
	return bin;
}

/* Runs module_offsets__for_binary on BIN as if its buildinfo had MODULE at VERSION (NULL: none). */
static int module_for_binary(const struct offsets *t, const char *module, const char *bin,
			     const char *version, int64_t *out, char *source, size_t len,
			     char **msg)
{
	struct gobin_module deps[] = {
		{ (char *)"golang.org/x/net", (char *)"v0.30.0" },
		{ (char *)module, (char *)version },
	};
	struct gobin gb = {
		.go_version = (char *)"go1.26.0",
		.major = 1,
		.minor = 26,
		.main_path = (char *)"example.com/svc",
		.main_version = (char *)"(devel)",
		.deps = deps,
		.ndeps = version ? 2 : 1,
	};

	return TEST_LOGGED(LOG_INFO, msg,
			   module_offsets__for_binary(t, module, bin, &gb, out, source, len));
}

/* module_for_binary() of grpc-go, whose grpc_offsets__for_binary() it is. */
static int for_binary(const struct offsets *t, const char *bin, const char *version,
		      int64_t out[GRPC_FIELD__COUNT], char *source, size_t len, char **msg)
{
	return module_for_binary(t, GRPC_MODULE, bin, version, out, source, len, msg);
}

static void assert_grpc_unset(const int64_t o[GRPC_FIELD__COUNT])
{
	test_assert_unset(&grpc_offsets_fields, o);
}

/*
 * Without DWARF the table decides, and says which row stood in for a version it does not list;
 * a binary without grpc-go is -ENOENT; one whose version no row fits is -ENOTSUP. (With DWARF,
 * test_dwarf checks that the DWARF decides.)
 */
static void test_offsets__grpc_for_binary_without_dwarf(void **state)
{
	int64_t o[GRPC_FIELD__COUNT], want[GRPC_FIELD__COUNT];
	char source[48], newest[32], expect[64], *msg;
	struct gobin_module self = { (char *)"golang.org/x/net", (char *)"v0.30.0" };
	struct gobin gb = { .main_path = (char *)"google.golang.org/grpc",
			    .main_version = (char *)"v1.50.0",
			    .deps = &self,
			    .ndeps = 1 };
	const char *bin = no_dwarf_bin();

	(void)state;
	grpc_listed_end(false, newest, sizeof(newest));

	/* No grpc-go in the buildinfo: nothing to do, nothing said. */
	assert_int_equal(for_binary(grpc_table, bin, NULL, o, source, sizeof(source), &msg),
			 -ENOENT);
	assert_string_equal(msg, "");
	free(msg);
	assert_grpc_unset(o);
	assert_string_equal(source, "");

	/* A listed release: its row, quietly. */
	assert_int_equal(for_binary(grpc_table, bin, "v1.50.0", o, source, sizeof(source), &msg),
			 0);
	assert_string_equal(msg, "");
	free(msg);
	assert_string_equal(source, "table v1.50.0");
	grpc_find_ok("v1.50.0", "1.50.0", want);
	assert_memory_equal(o, want, sizeof(o));

	/* A pseudo-version: the nearest release below, and a note saying so. */
	assert_int_equal(for_binary(grpc_table, bin, "v1.50.2-0.20221101000000-0123456789ab", o,
				    source, sizeof(source), &msg),
			 0);
	assert_string_equal(source, "table v1.50.1");
	assert_non_null(strstr(msg, "nearest release below"));
	assert_non_null(strstr(msg, "v1.50.1"));
	free(msg);

	/* Newer than the table: its newest row, with a warning. */
	assert_int_equal(for_binary(grpc_table, bin, "v1.999.0", o, source, sizeof(source), &msg),
			 0);
	snprintf(expect, sizeof(expect), "table v%s", newest);
	assert_string_equal(source, expect);
	assert_non_null(strstr(msg, "newer than the grpc-go offset table"));
	free(msg);
	grpc_find_ok("v1.999.0", newest, want);
	assert_memory_equal(o, want, sizeof(o));

	/* No row fits: a directory replacement, a release older than the table, no table. */
	assert_int_equal(for_binary(grpc_table, bin, "(devel)", o, source, sizeof(source), &msg),
			 -ENOTSUP);
	assert_non_null(strstr(msg, "(devel)"));
	free(msg);
	assert_grpc_unset(o);
	assert_int_equal(for_binary(grpc_table, bin, "v1.49.0", o, source, sizeof(source), &msg),
			 -ENOTSUP);
	assert_non_null(strstr(msg, "older than the grpc-go offset table"));
	free(msg);
	assert_grpc_unset(o);
	assert_int_equal(for_binary(NULL, bin, "v1.62.1", o, source, sizeof(source), &msg),
			 -ENOTSUP);
	free(msg);
	assert_grpc_unset(o);

	/* grpc-go's own programs have it as their main module. */
	assert_int_equal(grpc_offsets__for_binary(grpc_table, bin, &gb, o, source, sizeof(source)),
			 0);
	assert_string_equal(source, "table v1.50.0");

	/* A Go table where the grpc-go one belongs, or no room for SOURCE: the caller's mistake. */
	assert_int_equal(grpc_offsets__for_binary(table, bin, &gb, o, source, sizeof(source)),
			 -EINVAL);
	assert_grpc_unset(o);
	assert_int_equal(grpc_offsets__for_binary(grpc_table, bin, &gb, o, source, 0), -EINVAL);
}

/* ---- the pgx and go-redis tables ---- */

/*
 * Values read from the DWARF of the generator's probes (and by test_dwarf from programs built
 * there): a Conn's *ConnConfig at 8, which embeds pgconn.Config first, Host first in it and Port
 * at 16; the batch's queries and a queued query's text first in their structs, unexported up to
 * v5.5.2 and exported from v5.5.3, a patch release.
 */
static void test_offsets__pgx_known_values(void **state)
{
	static const struct known known[] = {
		ROW("v5.0.0", "5.0.0"),
		AT(PGX_FIELD_CONN_CONFIG, 8),
		AT(PGX_FIELD_CONNCONFIG_CONFIG, 0),
		AT(PGX_FIELD_CONFIG_HOST, 0),
		AT(PGX_FIELD_CONFIG_PORT, 16),
		AT(PGX_FIELD_BATCH_QUEUED, -1),
		AT(PGX_FIELD_BATCH_QUEUED_OLD, 0),
		AT(PGX_FIELD_QUERY_SQL, -1),
		AT(PGX_FIELD_QUERY_SQL_OLD, 0),
		/* The rename came in a patch: the table lists the release that made it. */
		ROW("v5.5.2", "5.5.2"),
		AT(PGX_FIELD_BATCH_QUEUED_OLD, 0),
		AT(PGX_FIELD_QUERY_SQL, -1),
		ROW("v5.5.3", "5.5.3"),
		AT(PGX_FIELD_BATCH_QUEUED, 0),
		AT(PGX_FIELD_BATCH_QUEUED_OLD, -1),
		AT(PGX_FIELD_QUERY_SQL, 0),
		AT(PGX_FIELD_QUERY_SQL_OLD, -1),
		/* v5.5.4 is not listed: v5.5.3's row. */
		ROW("v5.5.4", "5.5.3"),
	};
	char oldest[32], newest[32], version[48];

	(void)state;
	listed_end(pgx_json, pgx_len, true, oldest, sizeof(oldest));
	assert_string_equal(oldest, "5.0.0");
	CHECK_KNOWN(pgx_table, known);

	listed_end(pgx_json, pgx_len, false, newest, sizeof(newest));
	snprintf(version, sizeof(version), "v%s", newest);
	{
		const struct known newest_known[] = {
			ROW(version, newest),
			AT(PGX_FIELD_CONN_CONFIG, 8),
			AT(PGX_FIELD_CONFIG_PORT, 16),
			AT(PGX_FIELD_BATCH_QUEUED, 0),
			AT(PGX_FIELD_QUERY_SQL, 0),
		};

		CHECK_KNOWN(pgx_table, newest_known);
	}
}

/*
 * go-redis: a client's *Options at 0 in baseClient up to v9.21.0 and at 8 from v9.22.0; the
 * address at 16 in Options and a command's args at 16 in baseCmd throughout. The whole of v9.15
 * was retracted, and is covered all the same.
 */
static void test_offsets__redis_known_values(void **state)
{
	static const struct known known[] = {
		ROW("v9.0.0", "9.0.0"),
		AT(REDIS_FIELD_BASECLIENT_OPT, 0),
		AT(REDIS_FIELD_OPTIONS_ADDR, 16),
		AT(REDIS_FIELD_BASECMD_ARGS, 16),
		ROW("v9.15.1", "9.15.1"),
		AT(REDIS_FIELD_BASECLIENT_OPT, 0),
		ROW("v9.21.0", "9.21.0"),
		AT(REDIS_FIELD_BASECLIENT_OPT, 0),
		ROW("v9.22.0", "9.22.0"),
		AT(REDIS_FIELD_BASECLIENT_OPT, 8),
		AT(REDIS_FIELD_OPTIONS_ADDR, 16),
		AT(REDIS_FIELD_BASECMD_ARGS, 16),
	};
	char oldest[32];

	(void)state;
	listed_end(redis_json, redis_len, true, oldest, sizeof(oldest));
	assert_string_equal(oldest, "9.0.0");
	CHECK_KNOWN(redis_table, known);
}

/*
 * Every listed release of either table resolves to itself and has every member gospan reads: for
 * pgx exactly one of each renamed pair, for go-redis all three.
 */
static void test_offsets__datastore_tables_every_release(void **state)
{
	const struct {
		const struct offsets *t;
		const char *json;
		size_t len;
		int min;
	} tables[] = {
		{ pgx_table, pgx_json, pgx_len, 20 },
		{ redis_table, redis_json, redis_len, 30 },
	};
	int64_t o[ROW_MAX];
	char version[48];
	const cJSON *v;

	(void)state;
	for (size_t i = 0; i < sizeof(tables) / sizeof(tables[0]); i++) {
		cJSON *root = cJSON_ParseWithLength(tables[i].json, tables[i].len);
		int n = 0;

		assert_non_null(root);
		cJSON_ArrayForEach(v, cJSON_GetObjectItemCaseSensitive(root, "versions"))
		{
			snprintf(version, sizeof(version), "v%s", v->valuestring);
			module_find_ok(tables[i].t, version, v->valuestring, o);
			if (tables[i].t == pgx_table) {
				for (int f = PGX_FIELD_CONN_CONFIG; f <= PGX_FIELD_CONFIG_PORT; f++)
					assert_true(o[f] >= 0);
				if ((o[PGX_FIELD_BATCH_QUEUED] >= 0) ==
				    (o[PGX_FIELD_BATCH_QUEUED_OLD] >= 0))
					fail_msg("pgx %s: not one of the batch's queue members",
						 version);
				if ((o[PGX_FIELD_QUERY_SQL] >= 0) ==
				    (o[PGX_FIELD_QUERY_SQL_OLD] >= 0))
					fail_msg("pgx %s: not one of the query's text members",
						 version);
				/* Renamed together. */
				assert_int_equal(o[PGX_FIELD_BATCH_QUEUED] >= 0,
						 o[PGX_FIELD_QUERY_SQL] >= 0);
			} else {
				for (int f = 0; f < REDIS_FIELD__COUNT; f++)
					assert_true(o[f] >= 0);
			}
			n++;
		}
		cJSON_Delete(root);
		/* Every minor of the major, most with their .0 and latest patch. */
		assert_true(n >= tables[i].min);
	}
}

/* A module table as gospan embeds it: its module, its text, its major version. */
#define EMBEDDED_LEN(sym) (size_t)(sym##_end - sym)
#define EMBEDDED(name, module, major)                                                              \
	{                                                                                          \
		modules.name, module, gospan_##name##_offsets_json,                                \
			EMBEDDED_LEN(gospan_##name##_offsets_json), major                          \
	}

/*
 * Without DWARF the pgx, go-redis and router tables decide as the grpc-go one does: a listed
 * release quietly, a release newer than the table with its newest row and a warning naming the
 * table; a binary without the module is -ENOENT, one whose version no row fits (below the table)
 * -ENOTSUP. A table of another module than the one asked for is the caller's mistake.
 */
static void test_offsets__modules_for_binary_without_dwarf(void **state)
{
	const struct {
		const struct offsets *t;
		const char *module, *json;
		size_t len;
		int major;
	} mods[] = {
		{ pgx_table, PGX_MODULE, pgx_json, pgx_len, 5 },
		{ redis_table, REDIS_MODULE, redis_json, redis_len, 9 },
		EMBEDDED(gin, "github.com/gin-gonic/gin", 1),
		EMBEDDED(echo, "github.com/labstack/echo/v4", 4),
		EMBEDDED(echo5, "github.com/labstack/echo/v5", 5),
		EMBEDDED(chi, "github.com/go-chi/chi/v5", 5),
		EMBEDDED(mux, "github.com/gorilla/mux", 1),
	};
	const size_t nmods = sizeof(mods) / sizeof(mods[0]);
	int64_t o[ROW_MAX], want[ROW_MAX];
	char source[48], oldest[32], newest[32], version[48], expect[96], *msg;
	const char *bin = no_dwarf_bin();

	(void)state;
	for (size_t i = 0; i < nmods; i++) {
		const struct offsets *t = mods[i].t, *other = mods[(i + 1) % nmods].t;
		const char *module = mods[i].module;
		size_t n = offsets__fields(t)->count;

		listed_end(mods[i].json, mods[i].len, true, oldest, sizeof(oldest));
		listed_end(mods[i].json, mods[i].len, false, newest, sizeof(newest));

		/* Not in the buildinfo: nothing to do, nothing said. */
		assert_int_equal(module_for_binary(t, module, bin, NULL, o, source, sizeof(source),
						   &msg),
				 -ENOENT);
		assert_string_equal(msg, "");
		free(msg);
		assert_string_equal(source, "");
		test_assert_unset(offsets__fields(t), o);

		/* The oldest release, listed: its row, quietly. */
		snprintf(version, sizeof(version), "v%s", oldest);
		assert_int_equal(module_for_binary(t, module, bin, version, o, source,
						   sizeof(source), &msg),
				 0);
		assert_string_equal(msg, "");
		free(msg);
		snprintf(expect, sizeof(expect), "table v%s", oldest);
		assert_string_equal(source, expect);
		module_find_ok(t, version, oldest, want);
		assert_memory_equal(o, want, n * sizeof(*o));

		/* Newer than the table: its newest row, with a warning that names the table. */
		snprintf(version, sizeof(version), "v%d.999.0", mods[i].major);
		assert_int_equal(module_for_binary(t, module, bin, version, o, source,
						   sizeof(source), &msg),
				 0);
		snprintf(expect, sizeof(expect), "table v%s", newest);
		assert_string_equal(source, expect);
		snprintf(expect, sizeof(expect), "newer than the %s offset table",
			 offsets__fields(t)->what);
		if (!strstr(msg, expect))
			fail_msg("no '%s' in: %s", expect, msg);
		free(msg);
		module_find_ok(t, version, newest, want);
		assert_memory_equal(o, want, n * sizeof(*o));

		/* Older than the table, a directory replacement, no table: -ENOTSUP. */
		snprintf(version, sizeof(version), "v%d.0.0-rc.1", mods[i].major);
		assert_int_equal(module_for_binary(t, module, bin, version, o, source,
						   sizeof(source), &msg),
				 -ENOTSUP);
		assert_non_null(strstr(msg, "older than the"));
		free(msg);
		test_assert_unset(offsets__fields(t), o);
		assert_int_equal(module_for_binary(t, module, bin, "(devel)", o, source,
						   sizeof(source), &msg),
				 -ENOTSUP);
		free(msg);
		assert_int_equal(module_for_binary(NULL, module, bin, version, o, source,
						   sizeof(source), &msg),
				 -ENOTSUP);
		free(msg);

		/* The other module's table, or the grpc-go one: refused, OUT -1 all the same. */
		snprintf(version, sizeof(version), "v%s", newest);
		assert_int_equal(module_for_binary(other, module, bin, version, o, source,
						   sizeof(source), &msg),
				 -EINVAL);
		free(msg);
		test_assert_unset(offsets__fields(t), o);
		assert_int_equal(module_for_binary(grpc_table, module, bin, version, o, source,
						   sizeof(source), &msg),
				 -EINVAL);
		free(msg);
	}
	/* A module gospan has no table of: only with a table, which says what OUT holds. */
	assert_int_equal(module_for_binary(NULL, "example.com/other", bin, "v1.0.0", o, source,
					   sizeof(source), &msg),
			 -EINVAL);
	free(msg);
	assert_int_equal(module_for_binary(pgx_table, "example.com/fork/pgx", bin, "v5.5.3", o,
					   source, sizeof(source), &msg),
			 0);
	free(msg);
	assert_string_equal(source, "table v5.5.3");
}

/* The new tables' failure paths: their messages name them; cut anywhere, they are refused. */
static void test_offsets__datastore_tables_malformed(void **state)
{
	struct offsets *t;

	(void)state;
	assert_vprefixed_refused(pgx_offsets__parse, "5.0.0", "pgx offset table");
	assert_vprefixed_refused(redis_offsets__parse, "9.0.0", "go-redis offset table");
	assert_cut_refused(pgx_offsets__parse, pgx_json, pgx_len, 61, "pgx");
	assert_cut_refused(redis_offsets__parse, redis_json, redis_len, 37, "go-redis");
	/* One module's table is not another's: no field of it is known, so nothing is read. */
	t = redis_offsets__parse(pgx_json, pgx_len);
	assert_non_null(t);
	{
		const struct offsets_version v = { .major = 5, .minor = 0, .patch = 0 };
		int64_t o[REDIS_FIELD__COUNT];

		assert_int_equal(offsets__find_version(t, &v, OFFSETS_MATCH_NEAREST_BELOW, o,
						       REDIS_FIELD__COUNT, NULL),
				 0);
		test_assert_unset(&redis_offsets_fields, o);
	}
	offsets__free(t);
}

/* ---- every module table as embedded, and the router tables ---- */

/* NAME's table as module_tables__load() gave it from the JSON that embed.c built in. */
static void check_embedded(const char *name, const struct offsets *t, const char *json,
			   const char *json_end)
{
	char path[256];
	size_t len = 0;
	char *file;

	if (!t)
		fail_msg("module_tables__load() left the %s table out", name);
	snprintf(path, sizeof(path), "../../offsets/%s_offsets.json", name);
	file = test_read_file(path, &len);
	assert_non_null(file);
	/* A stale build would embed another table than the one committed. */
	if (len != (size_t)(json_end - json) || memcmp(file, json, len))
		fail_msg("the embedded %s table is not %s", name, path);
	free(file);
}

/* Every module of GOSPAN_MODULE_TABLES has its table loaded, from the committed bytes. */
static void test_offsets__embedded_module_tables(void **state)
{
	(void)state;
#define CHECK_EMBEDDED(name, path)                                                                 \
	check_embedded(#name, modules.name, gospan_##name##_offsets_json,                          \
		       gospan_##name##_offsets_json_end);
	GOSPAN_MODULE_TABLES(CHECK_EMBEDDED)
#undef CHECK_EMBEDDED
	assert_ptr_equal(offsets__fields(modules.gin), &gin_offsets_fields);
	assert_ptr_equal(offsets__fields(modules.mux), &mux_offsets_fields);
	assert_ptr_equal(modules.by_module[0], modules.grpc);
}

/*
 * Values read by llvm-dwarfdump from the generator's probes (gin 1.7.0 and 1.12.0; echo 4.0.0,
 * 4.11.4, 4.12.0, 4.13.0 and 4.16.4; echo v5 5.0.0, 5.1.1, 5.2.0 and 5.4.5; chi 5.0.0, 5.0.1 and
 * 5.5.0; mux 1.6.0, 1.6.2, 1.7.0 and 1.8.1), and computed by hand from those releases' structs.
 */
static void test_offsets__router_known_values(void **state)
{
	/* gin: Context.fullPath after writermem (32), Request, Writer, Params, handlers, index. */
	static const struct known gin[] = {
		ROW("v1.7.0", "1.7.0"),
		AT(GIN_FIELD_CONTEXT_FULLPATH, 112),
		ROW("v1.12.0", "1.12.0"),
		AT(GIN_FIELD_CONTEXT_FULLPATH, 112),
		/* Not listed (v1.7.1 to v1.7.6 have v1.7.0's layout): the nearest below. */
		ROW("v1.7.3", "1.7.0"),
	};
	/*
	 * echo v4: path second (after request and response) up to v4.11.4; v4.12.0 put new members
	 * ahead of both, v4.13.0 moved the handler ahead of the path.
	 */
	static const struct known echo[] = {
		ROW("v4.0.0", "4.0.0"),
		AT(ECHO_FIELD_CONTEXT_PATH, 16),
		AT(ECHO_FIELD_CONTEXT_HANDLER, 88),
		ROW("v4.11.4", "4.11.4"),
		AT(ECHO_FIELD_CONTEXT_PATH, 16),
		AT(ECHO_FIELD_CONTEXT_HANDLER, 88),
		ROW("v4.12.0", "4.12.0"),
		AT(ECHO_FIELD_CONTEXT_PATH, 80),
		AT(ECHO_FIELD_CONTEXT_HANDLER, 144),
		ROW("v4.13.0", "4.13.0"),
		AT(ECHO_FIELD_CONTEXT_PATH, 88),
		AT(ECHO_FIELD_CONTEXT_HANDLER, 80),
		ROW("v4.16.4", "4.16.4"),
		AT(ECHO_FIELD_CONTEXT_PATH, 88),
		AT(ECHO_FIELD_CONTEXT_HANDLER, 80),
		/* v4.1.5 is not listed (v4.1.0 and v4.1.17 agree): v4.1.0's row. */
		ROW("v4.1.5", "4.1.0"),
		AT(ECHO_FIELD_CONTEXT_PATH, 16),
	};
	/* echo v5: handler arrived in v5.2.0, ahead of path, which moved from 88 to 128. */
	static const struct known echo5[] = {
		ROW("v5.0.0", "5.0.0"),
		AT(ECHO5_FIELD_CONTEXT_PATH, 88),
		AT(ECHO5_FIELD_CONTEXT_HANDLER, -1),
		AT(ECHO5_FIELD_CONTEXT_ROUTE, 48),
		AT(ECHO5_FIELD_ROUTEINFO_PATH, 32),
		ROW("v5.1.1", "5.1.1"),
		AT(ECHO5_FIELD_CONTEXT_PATH, 88),
		AT(ECHO5_FIELD_CONTEXT_HANDLER, -1),
		ROW("v5.2.0", "5.2.0"),
		AT(ECHO5_FIELD_CONTEXT_PATH, 128),
		AT(ECHO5_FIELD_CONTEXT_HANDLER, 64),
		AT(ECHO5_FIELD_CONTEXT_ROUTE, 48),
		AT(ECHO5_FIELD_ROUTEINFO_PATH, 32),
		ROW("v5.4.5", "5.4.5"),
		AT(ECHO5_FIELD_CONTEXT_PATH, 128),
		AT(ECHO5_FIELD_CONTEXT_HANDLER, 64),
	};
	/*
	 * chi: v5.0.1 put parentCtx, URLParams and routeParams ahead of the patterns (v5.0.0 had
	 * the stack right after Routes, RoutePath and RouteMethod).
	 */
	static const struct known chi[] = {
		ROW("v5.0.0", "5.0.0"),
		AT(CHI_FIELD_CONTEXT_ROUTE_PATTERNS, 48),
		AT(CHI_FIELD_CONTEXT_ROUTE_PATTERN, 120),
		ROW("v5.0.1", "5.0.1"),
		AT(CHI_FIELD_CONTEXT_ROUTE_PATTERNS, 176),
		AT(CHI_FIELD_CONTEXT_ROUTE_PATTERN, 160),
		ROW("v5.5.0", "5.5.0"),
		AT(CHI_FIELD_CONTEXT_ROUTE_PATTERNS, 176),
		AT(CHI_FIELD_CONTEXT_ROUTE_PATTERN, 160),
	};
	/* mux: a *routeRegexpGroup at 56 to v1.6.2; from v1.7.0 routeConf 64, its group 8 in it. */
	static const struct known mux[] = {
		ROW("v1.6.0", "1.6.0"),
		AT(MUX_FIELD_ROUTEMATCH_ROUTE, 0),
		AT(MUX_FIELD_ROUTE_REGEXP_PTR, 56),
		AT(MUX_FIELD_ROUTE_ROUTECONF, -1),
		AT(MUX_FIELD_ROUTECONF_REGEXP, -1),
		AT(MUX_FIELD_GROUP_PATH, 8),
		AT(MUX_FIELD_REGEXP_TEMPLATE, 0),
		ROW("v1.6.2", "1.6.2"),
		AT(MUX_FIELD_ROUTE_REGEXP_PTR, 56),
		AT(MUX_FIELD_ROUTE_ROUTECONF, -1),
		ROW("v1.7.0", "1.7.0"),
		AT(MUX_FIELD_ROUTEMATCH_ROUTE, 0),
		AT(MUX_FIELD_ROUTE_REGEXP_PTR, -1),
		AT(MUX_FIELD_ROUTE_ROUTECONF, 64),
		AT(MUX_FIELD_ROUTECONF_REGEXP, 8),
		AT(MUX_FIELD_GROUP_PATH, 8),
		AT(MUX_FIELD_REGEXP_TEMPLATE, 0),
		ROW("v1.8.1", "1.8.1"),
		AT(MUX_FIELD_ROUTE_REGEXP_PTR, -1),
		AT(MUX_FIELD_ROUTE_ROUTECONF, 64),
		AT(MUX_FIELD_ROUTECONF_REGEXP, 8),
	};

	(void)state;
	CHECK_KNOWN(modules.gin, gin);
	CHECK_KNOWN(modules.echo, echo);
	CHECK_KNOWN(modules.echo5, echo5);
	CHECK_KNOWN(modules.chi, chi);
	CHECK_KNOWN(modules.mux, mux);
}

/* A release below a table's range, or of another major, has no row: -ENOENT. */
static void test_offsets__router_below_range(void **state)
{
	static const struct {
		const char *version;
		enum { GIN, ECHO, ECHO5, CHI, MUX } table;
	} below[] = {
		{ "v1.6.3", GIN },	  { "v1.7.0-rc.1", GIN }, { "v3.3.10", ECHO },
		{ "v4.0.0-rc.1", ECHO }, { "v5.0.0-rc.1", ECHO5 }, { "v4.5.0", ECHO5 },
		{ "v4.1.2", CHI },	  { "v1.5.0", MUX },	  { "v1.6.0-rc.1", MUX },
	};
	const struct offsets *tables[] = { modules.gin, modules.echo, modules.echo5, modules.chi,
					   modules.mux };
	struct offsets_version v;
	int64_t o[ROW_MAX];

	(void)state;
	for (size_t i = 0; i < sizeof(below) / sizeof(below[0]); i++) {
		const struct offsets *t = tables[below[i].table];
		int err;

		assert_int_equal(offsets__parse_module_version(below[i].version, &v), 0);
		err = offsets__find_version(t, &v, OFFSETS_MATCH_NEAREST_BELOW, o,
					    offsets__fields(t)->count, NULL);
		if (err != -ENOENT)
			fail_msg("%s %s: %d, want -ENOENT", offsets__fields(t)->what,
				 below[i].version, err);
	}
}

/*
 * Every listed release of a router table resolves to itself and has what a route template is
 * read with: gin's fullPath, echo's path and handler, echo v5's path, route and RouteInfo.Path
 * (its handler from v5.2.0), chi's both, and mux's Route, the group's path and the template, and
 * exactly one way from a Route to its group.
 */
static void test_offsets__router_tables_every_release(void **state)
{
	const struct {
		const struct offsets *t;
		const char *json, *json_end;
		int min;
	} tables[] = {
		{ modules.gin, gospan_gin_offsets_json, gospan_gin_offsets_json_end, 10 },
		{ modules.echo, gospan_echo_offsets_json, gospan_echo_offsets_json_end, 25 },
		{ modules.echo5, gospan_echo5_offsets_json, gospan_echo5_offsets_json_end, 9 },
		{ modules.chi, gospan_chi_offsets_json, gospan_chi_offsets_json_end, 10 },
		{ modules.mux, gospan_mux_offsets_json, gospan_mux_offsets_json_end, 6 },
	};
	int64_t o[ROW_MAX];
	char version[48];
	const cJSON *v;

	(void)state;
	for (size_t i = 0; i < sizeof(tables) / sizeof(tables[0]); i++) {
		const struct offsets *t = tables[i].t;
		cJSON *root = cJSON_ParseWithLength(tables[i].json,
						    tables[i].json_end - tables[i].json);
		int n = 0;

		assert_non_null(root);
		cJSON_ArrayForEach(v, cJSON_GetObjectItemCaseSensitive(root, "versions"))
		{
			snprintf(version, sizeof(version), "v%s", v->valuestring);
			module_find_ok(t, version, v->valuestring, o);
			n++;
			if (t == modules.echo5) {
				assert_true(o[ECHO5_FIELD_CONTEXT_PATH] >= 0);
				assert_true(o[ECHO5_FIELD_CONTEXT_ROUTE] >= 0);
				assert_true(o[ECHO5_FIELD_ROUTEINFO_PATH] >= 0);
				continue;
			}
			if (t != modules.mux) {
				for (size_t f = 0; f < offsets__fields(t)->count; f++)
					if (o[f] < 0)
						fail_msg("%s %s: no '%s'", offsets__fields(t)->what,
							 version, offsets__fields(t)->names[f]);
				continue;
			}
			assert_true(o[MUX_FIELD_ROUTEMATCH_ROUTE] >= 0);
			assert_true(o[MUX_FIELD_GROUP_PATH] >= 0);
			assert_true(o[MUX_FIELD_REGEXP_TEMPLATE] >= 0);
			/* The embedded routeConf's two offsets together, or the pointer alone. */
			assert_int_equal(o[MUX_FIELD_ROUTE_ROUTECONF] >= 0,
					 o[MUX_FIELD_ROUTECONF_REGEXP] >= 0);
			if ((o[MUX_FIELD_ROUTE_REGEXP_PTR] >= 0) ==
			    (o[MUX_FIELD_ROUTE_ROUTECONF] >= 0))
				fail_msg("gorilla/mux %s: not one way to the route's regexp group",
					 version);
		}
		cJSON_Delete(root);
		/* Every minor of the range, most with their .0 and latest patch. */
		if (n < tables[i].min)
			fail_msg("%s: %d releases, want at least %d", offsets__fields(t)->what, n,
				 tables[i].min);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_offsets__known_values),
		cmocka_unit_test(test_offsets__every_listed_release_is_exact),
		cmocka_unit_test(test_offsets__nearest_below_within_minor),
		cmocka_unit_test(test_offsets__unknown_minor_is_enoent),
		cmocka_unit_test(test_offsets__fields_that_come_and_go),
		cmocka_unit_test(test_offsets__match_dwarf_of_real_binary),
		cmocka_unit_test(test_offsets__small_table),
		cmocka_unit_test(test_offsets__malformed),
		cmocka_unit_test(test_offsets__real_table_truncated),
		cmocka_unit_test(test_offsets__grpc_known_values),
		cmocka_unit_test(test_offsets__grpc_every_listed_release_is_exact),
		cmocka_unit_test(test_offsets__grpc_layout_changes),
		cmocka_unit_test(test_offsets__grpc_nearest_below),
		cmocka_unit_test(test_offsets__module_versions),
		cmocka_unit_test(test_offsets__find_checks_its_arguments),
		cmocka_unit_test(test_offsets__grpc_malformed),
		cmocka_unit_test(test_offsets__grpc_for_binary_without_dwarf),
		cmocka_unit_test(test_offsets__pgx_known_values),
		cmocka_unit_test(test_offsets__redis_known_values),
		cmocka_unit_test(test_offsets__datastore_tables_every_release),
		cmocka_unit_test(test_offsets__modules_for_binary_without_dwarf),
		cmocka_unit_test(test_offsets__embedded_module_tables),
		cmocka_unit_test(test_offsets__router_known_values),
		cmocka_unit_test(test_offsets__router_below_range),
		cmocka_unit_test(test_offsets__router_tables_every_release),
		cmocka_unit_test(test_offsets__datastore_tables_malformed),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
