// SPDX-License-Identifier: MIT
/*
 * Tests for offsets.c: the real offsets/go_offsets.json (known offsets, exact and nearest-below
 * lookups, fields that come and go between releases), a real Go binary built here whose DWARF,
 * read by llvm-dwarfdump, must agree with the table, and malformed tables that must be refused.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <cjson/cJSON.h>

#include "helpers.h"
#include "gobin.h"
#include "log.h"
#include "offsets.h"

#define TABLE_PATH "../../offsets/go_offsets.json"

static char *table_json;
static size_t table_len;
static struct offsets *table;

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
	return table ? 0 : -1;
}

static int teardown(void **state)
{
	(void)state;
	offsets__free(table);
	free(table_json);
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

/*
 * Values read from the DWARF of programs built with those releases (llvm-dwarfdump agrees):
 * goid moved from 152 to 160 when Go 1.23 added g.syscallbp; Request gained Pattern in 1.23,
 * which pushed pat from 248 to 264. g.parentGoid follows goid's moves, plus one of its own in
 * 1.26; url.URL reordered its members in 1.26, moving RawQuery from 96 to 88.
 */
static void test_offsets__known_values(void **state)
{
	int64_t o[GO_FIELD__COUNT];

	(void)state;
	find_ok(1, 22, 12, "1.22.12", o);
	assert_int_equal(o[GO_FIELD_G_GOID], 152);
	assert_int_equal(o[GO_FIELD_REQ_METHOD], 0);
	assert_int_equal(o[GO_FIELD_REQ_URL], 16);
	assert_int_equal(o[GO_FIELD_REQ_PROTO], 24);
	assert_int_equal(o[GO_FIELD_REQ_HOST], 128);
	assert_int_equal(o[GO_FIELD_REQ_REMOTE_ADDR], 176);
	assert_int_equal(o[GO_FIELD_REQ_TLS], 208);
	assert_int_equal(o[GO_FIELD_URL_PATH], 56);
	assert_int_equal(o[GO_FIELD_REQ_PAT], 248);
	assert_int_equal(o[GO_FIELD_PATTERN_STR], 0);
	assert_int_equal(o[GO_FIELD_RESPONSE_STATUS], 120);
	assert_int_equal(o[GO_FIELD_G_PARENT_GOID], 272);
	assert_int_equal(o[GO_FIELD_URL_SCHEME], 0);
	assert_int_equal(o[GO_FIELD_URL_USER], 32);
	assert_int_equal(o[GO_FIELD_URL_HOST], 40);
	assert_int_equal(o[GO_FIELD_URL_RAW_QUERY], 96);
	assert_int_equal(o[GO_FIELD_RESP_STATUS_CODE], 16);
	assert_int_equal(o[GO_FIELD_BUFIO_BUF], 16);
	assert_int_equal(o[GO_FIELD_BUFIO_N], 40);
	assert_int_equal(o[GO_FIELD_HMAP_COUNT], 0);
	assert_int_equal(o[GO_FIELD_HMAP_B], 9);
	assert_int_equal(o[GO_FIELD_HMAP_BUCKETS], 16);

	find_ok(1, 23, 0, "1.23.0", o);
	assert_int_equal(o[GO_FIELD_G_GOID], 160);
	assert_int_equal(o[GO_FIELD_G_PARENT_GOID], 280);
	assert_int_equal(o[GO_FIELD_REQ_PATTERN], 232);
	assert_int_equal(o[GO_FIELD_REQ_PAT], 264);
	assert_int_equal(o[GO_FIELD_URL_PATH], 56);

	find_ok(1, 24, 0, "1.24.0", o);
	assert_int_equal(o[GO_FIELD_SWISS_USED], 0);
	assert_int_equal(o[GO_FIELD_SWISS_DIR_PTR], 16);
	assert_int_equal(o[GO_FIELD_SWISS_DIR_LEN], 24);
	assert_int_equal(o[GO_FIELD_SWISS_TABLE_GROUPS], 16);
	assert_int_equal(o[GO_FIELD_SWISS_GROUPS_DATA], 0);
	assert_int_equal(o[GO_FIELD_SWISS_GROUPS_MASK], 8);

	find_ok(1, 25, 0, "1.25.0", o);
	assert_int_equal(o[GO_FIELD_G_GOID], 152);
	assert_int_equal(o[GO_FIELD_G_PARENT_GOID], 272);

	find_ok(1, 26, 0, "1.26.0", o);
	assert_int_equal(o[GO_FIELD_G_PARENT_GOID], 280);
	assert_int_equal(o[GO_FIELD_URL_RAW_QUERY], 88);
	assert_int_equal(o[GO_FIELD_URL_HOST], 40);

	/*
	 * response.status moved in a patch release, 1.26.11: the table must list the release that
	 * moved it, or 1.26.11 and later would take the old offset from the nearest release below.
	 */
	find_ok(1, 26, 10, "1.26.10", o);
	assert_int_equal(o[GO_FIELD_RESPONSE_STATUS], 120);
	find_ok(1, 26, 11, "1.26.11", o);
	assert_int_equal(o[GO_FIELD_RESPONSE_STATUS], 128);
	assert_int_equal(offsets__find(table, 1, 26, 7, o, NULL), 0);
	assert_int_equal(o[GO_FIELD_RESPONSE_STATUS], 120);
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
		assert_true(o[GO_FIELD_G_GOID] > 0);
		assert_int_equal(o[GO_FIELD_REQ_METHOD], 0);
		assert_true(o[GO_FIELD_REQ_URL] > 0);
		assert_true(o[GO_FIELD_REQ_REMOTE_ADDR] > 0);
		assert_true(o[GO_FIELD_URL_PATH] > 0);
		assert_true(o[GO_FIELD_RESPONSE_STATUS] > 0);
		assert_int_equal(o[GO_FIELD_URL_SCHEME], 0);
		assert_true(o[GO_FIELD_URL_HOST] > 0);
		assert_true(o[GO_FIELD_URL_RAW_QUERY] > 0);
		assert_true(o[GO_FIELD_RESP_STATUS_CODE] > 0);
		assert_true(o[GO_FIELD_BUFIO_N] > o[GO_FIELD_BUFIO_BUF]);
		assert_int_equal(o[GO_FIELD_G_PARENT_GOID] > o[GO_FIELD_G_GOID], mi >= 21);
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
	if (offsets__find(table, ma, mi, pa, o, NULL)) {
		fprintf(stderr, "installed Go %d.%d.%d is not in the table: run make offsets\n", ma,
			mi, pa);
		skip();
	}
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

/* The real table, cut anywhere, is refused cleanly (ASan builds would catch any over-read). */
static void test_offsets__real_table_truncated(void **state)
{
	(void)state;
	for (size_t n = 0; n < table_len - 2; n += 97) {
		struct offsets *t;

		errno = 0;
		t = offsets__parse(table_json, n);
		if (t) {
			offsets__free(t);
			fail_msg("the table cut at %zu bytes was accepted", n);
		}
		assert_int_equal(errno, EINVAL);
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
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
