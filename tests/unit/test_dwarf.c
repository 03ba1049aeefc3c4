// SPDX-License-Identifier: MIT
/*
 * Tests for dwarf.c on real binaries built here: every offset read from the DWARF of a program
 * built by the installed Go and by older releases (GNU .zdebug_* and SHF_COMPRESSED sections,
 * DWARF 4 and 5) must equal the committed table's for that release; PIE, uncompressed and arm64
 * builds must give the same answers; binaries without DWARF, C binaries, truncated copies and
 * damaged DWARF must each get their defined error, never a crash or a wrong offset. The grpc-go,
 * pgx and go-redis offsets read from programs built here against releases of those modules
 * through the module proxy must equal the committed tables' row for each release, and
 * database/sql.Stmt.query read from a database/sql program built by several Go releases the Go
 * table's.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <time.h>
#include <unistd.h>

#include <cjson/cJSON.h>
#include <gelf.h>
#include <libelf.h>

#include "helpers.h"
#include "analysis/dwarf.h"
#include "analysis/elf.h"
#include "analysis/gobin.h"
#include "core/log.h"
#include "analysis/offsets.h"

/* What dwarf.c accepts; anything it returns must be -1 or within this. */
#define OFFSET_MAX (1 << 16)

#if defined(__x86_64__)
#define HOST_GOARCH "amd64"
#elif defined(__aarch64__)
#define HOST_GOARCH "arm64"
#else
#error "gospan runs on x86_64 and arm64 only"
#endif

static struct offsets *table;
static struct offsets *grpc_table;
static struct offsets *pgx_table, *redis_table;
/* testdata/httpserver built by the installed Go, default flags: the reference for most tests. */
static char host_bin[4096];
static int64_t host_offs[GO_FIELD__COUNT];

static int setup(void **state)
{
	const char *p;
	size_t len;
	char *json;

	(void)state;
	/* The failure tests log their reasons on purpose; debug output only on request. */
	log_set_level(TEST_QUIET_LEVEL);
	json = test_read_file(TABLE_PATH, &len);
	if (!json) {
		fprintf(stderr, "cannot read %s\n", TABLE_PATH);
		return -1;
	}
	table = offsets__parse(json, len);
	free(json);
	if (!table)
		return -1;
	json = test_read_file(GRPC_TABLE_PATH, &len);
	grpc_table = json ? grpc_offsets__parse(json, len) : NULL;
	free(json);
	json = test_read_file(PGX_TABLE_PATH, &len);
	pgx_table = json ? pgx_offsets__parse(json, len) : NULL;
	free(json);
	json = test_read_file(REDIS_TABLE_PATH, &len);
	redis_table = json ? redis_offsets__parse(json, len) : NULL;
	free(json);
	if (!grpc_table || !pgx_table || !redis_table) {
		fprintf(stderr, "cannot load %s, %s and %s\n", GRPC_TABLE_PATH, PGX_TABLE_PATH,
			REDIS_TABLE_PATH);
		return -1;
	}
	p = test_go_build("httpserver", "dwarf_httpserver", "", "");
	if (!p || (size_t)snprintf(host_bin, sizeof(host_bin), "%s", p) >= sizeof(host_bin))
		return -1;
	return dwarf__read_offsets(host_bin, host_offs) ? -1 : 0;
}

static int teardown(void **state)
{
	(void)state;
	offsets__free(table);
	offsets__free(grpc_table);
	offsets__free(pgx_table);
	offsets__free(redis_table);
	return 0;
}

static void build(char *out, size_t size, const char *name, const char *env, const char *flags)
{
	const char *p = test_go_build("httpserver", name, env, flags);

	assert_non_null(p);
	assert_true((size_t)snprintf(out, size, "%s", p) < size);
}

/*
 * Builds testdata/httpserver as NAME with ENV and FLAGS into BIN: its offsets must be the
 * reference build's.
 */
static void build_same_offsets(char *bin, size_t size, const char *name, const char *env,
			       const char *flags)
{
	int64_t o[GO_FIELD__COUNT];

	build(bin, size, name, env, flags);
	assert_int_equal(dwarf__read_offsets(bin, o), 0);
	assert_memory_equal(o, host_offs, sizeof(o));
}

/* BIN's buildinfo, for the caller to free. */
static struct gobin *read_gobin(const char *bin)
{
	struct gobin *gb = test_read_gobin(bin);

	assert_non_null(gb);
	return gb;
}

/* The Go release that built BIN, from its buildinfo. */
static void go_version_of(const char *bin, int *major, int *minor, int *patch)
{
	struct gobin *gb = read_gobin(bin);

	*major = gb->major;
	*minor = gb->minor;
	*patch = gb->patch;
	gobin__free(gb);
}

/*
 * The Go table's row for the release that built BIN, in WANT; BUILT gets that release
 * ("1.22.12"). Returns the listed release the row is for.
 */
static const char *go_table_row(const char *bin, int64_t want[GO_FIELD__COUNT], char *built,
				size_t size)
{
	const char *resolved = NULL;
	int ma, mi, pa;

	go_version_of(bin, &ma, &mi, &pa);
	snprintf(built, size, "%d.%d.%d", ma, mi, pa);
	if (offsets__find(table, ma, mi, pa, want, &resolved))
		fail_msg("Go %s is not in %s: run make offsets", built, TABLE_PATH);
	return resolved;
}

/*
 * Whether testdata/httpserver links field F's struct. It uses no database/sql, so its DWARF has
 * no Stmt whatever the table says; test_dwarf__sql_stmt_matches_table reads that from a program
 * that does.
 */
static bool httpserver_links(int f)
{
	return f != GO_FIELD_SQL_STMT_QUERY;
}

/*
 * Every field read from BIN (a build of testdata/httpserver)'s DWARF must be the committed
 * table's for the release that built it, and a struct it does not link absent.
 */
static void assert_matches_table(const char *bin, const int64_t got[GO_FIELD__COUNT])
{
	int64_t want[GO_FIELD__COUNT];
	char built[32], what[80];
	const char *row = go_table_row(bin, want, built, sizeof(built));

	for (int f = 0; f < GO_FIELD__COUNT; f++) {
		if (!httpserver_links(f))
			want[f] = -1;
	}
	snprintf(what, sizeof(what), "%s (table row %s)", built, row);
	test_assert_row_equal(&go_offsets_fields, what, got, want);
}

static double now_ms(void)
{
	struct timespec ts;

	assert_int_equal(clock_gettime(CLOCK_MONOTONIC, &ts), 0);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* Section NAME's header in PATH; -ENOENT when PATH has no such section. */
static int section_header(const char *path, const char *name, GElf_Shdr *out)
{
	size_t shstrndx;
	Elf_Scn *scn = NULL;
	const char *n;
	int fd, err = -ENOENT;
	Elf *elf;

	assert_int_not_equal(elf_version(EV_CURRENT), EV_NONE);
	fd = open(path, O_RDONLY);
	assert_true(fd >= 0);
	elf = elf_begin(fd, ELF_C_READ, NULL);
	assert_non_null(elf);
	assert_int_equal(elf_getshdrstrndx(elf, &shstrndx), 0);
	while ((scn = elf_nextscn(elf, scn))) {
		assert_non_null(gelf_getshdr(scn, out));
		n = elf_strptr(elf, shstrndx, out->sh_name);
		if (n && !strcmp(n, name)) {
			err = 0;
			break;
		}
	}
	elf_end(elf);
	close(fd);
	return err;
}

static void write_file(const char *path, const void *buf, size_t len)
{
	FILE *f = fopen(path, "wb");

	assert_non_null(f);
	assert_int_equal(fwrite(buf, 1, len, f), len);
	assert_int_equal(fclose(f), 0);
	assert_int_equal(chmod(path, 0755), 0);
}

static void data_path(char *out, size_t size, const char *name)
{
	assert_true((size_t)snprintf(out, size, "%s/%s", test_data_dir(), name) < size);
}

/* Runs dwarf__read_offsets on PATH with warnings on; returns its result, *MSG what it logged. */
static int read_logged(const char *path, int64_t out[GO_FIELD__COUNT], char **msg)
{
	return TEST_LOGGED(LOG_WARN, msg, dwarf__read_offsets(path, out));
}

static void assert_all_unset(const int64_t o[GO_FIELD__COUNT])
{
	test_assert_unset(&go_offsets_fields, o);
}

/* The go command of release VERSION; a release that cannot be had fails the test. */
static bool toolchain(const char *version, char *go, size_t size)
{
	const char *path = test_go_toolchain(version);

	if (!path)
		fail_msg("cannot get the Go %s toolchain through the module proxy", version);
	assert_true((size_t)snprintf(go, size, "%s", path) < size);
	return true;
}

/*
 * Builds testdata/SRC with the go command GO of release VERSION into OUT, with
 * GOEXPERIMENT=EXPERIMENT unless that is NULL.
 */
static void build_src_with(const char *src, const char *go, const char *version,
			   const char *experiment, char *out, size_t size)
{
	int ma, mi, pa;
	char name[96];

	assert_int_equal(gobin__parse_version(version, &ma, &mi, &pa), 0);
	snprintf(name, sizeof(name), "dwarf_%s_go%s%s%s", src, version, experiment ? "_" : "",
		 experiment ? experiment : "");
	data_path(out, size, name);
	/* -buildvcs only exists from Go 1.18 on; 1.17 refuses to start with it in GOFLAGS. */
	assert_int_equal(test_sh("cd testdata/%s && env -u GOROOT -u GOEXPERIMENT "
				 "GOTOOLCHAIN=local CGO_ENABLED=0 GOFLAGS='-mod=mod%s' %s%s '%s' "
				 "build -o '%s' . >&2",
				 src, ma == 1 && mi < 18 ? "" : " -buildvcs=false",
				 experiment ? "GOEXPERIMENT=" : "", experiment ? experiment : "",
				 go, out),
			 0);
}

/* build_src_with() of testdata/httpserver. */
static void build_with(const char *go, const char *version, const char *experiment, char *out,
		       size_t size)
{
	build_src_with("httpserver", go, version, experiment, out, size);
}

/*
 * Reads FIELDS from PATH's DWARF into OUT (dwarf__read_offsets() for Go's), which must succeed;
 * returns from its debug summary how the walk ended: FOUND of TOTAL structs found, RULED ruled
 * out.
 */
static void read_walk(const char *path, const struct offsets_fields *fields, int64_t *out,
		      unsigned *found, unsigned *total, unsigned *ruled)
{
	const char *line;
	char *msg;
	int rc;

	rc = TEST_LOGGED(LOG_DEBUG, &msg,
			 fields == &go_offsets_fields ? dwarf__read_offsets(path, out) :
							dwarf__read_fields(path, fields, out));
	assert_int_equal(rc, 0);
	line = strstr(msg, "': found ");
	if (!line || sscanf(line, "': found %u of %u structs, ruled out %u", found, total,
			    ruled) != 3)
		fail_msg("no walk summary in the debug output for '%s':\n%s", path, msg);
	free(msg);
}

/*
 * Runs dwarf__read_offsets on PATH, which must succeed, and checks from its debug summary that
 * the walk ended because every wanted struct was found or ruled out, not at the end of the DWARF.
 */
static void read_stopping_early(const char *path, int64_t out[GO_FIELD__COUNT])
{
	unsigned found, total, ruled;

	read_walk(path, &go_offsets_fields, out, &found, &total, &ruled);
	if (found + ruled != total)
		fail_msg("'%s': walked all its DWARF, %u of %u structs found, %u ruled out", path,
			 found, total, ruled);
}

/*
 * Fields that come and go between the releases tested here: g.parentGoid from 1.21, the
 * bucketed runtime.hmap up to 1.23, the Swiss tables of internal/runtime/maps from 1.24.
 */
static void assert_versioned_fields(const int64_t o[GO_FIELD__COUNT], int minor, bool swiss)
{
	assert_int_equal(o[GO_FIELD_G_PARENT_GOID] > 0, minor >= 21);
	for (int f = GO_FIELD_HMAP_COUNT; f <= GO_FIELD_HMAP_BUCKETS; f++)
		assert_int_equal(o[f] >= 0, !swiss);
	for (int f = GO_FIELD_SWISS_USED; f <= GO_FIELD_SWISS_GROUPS_MASK; f++)
		assert_int_equal(o[f] >= 0, swiss);
}

static void test_dwarf__installed_go_matches_table(void **state)
{
	int64_t o[GO_FIELD__COUNT];
	double best = 1e9, t;
	struct stat st;

	(void)state;
	assert_int_equal(dwarf__read_offsets(host_bin, o), 0);
	assert_matches_table(host_bin, o);
	test_assert_go_row_usable(o, "the installed Go's DWARF");
	read_stopping_early(host_bin, o);

	/* Measured, not asserted: the cost a user pays once per target at start-up. */
	for (int i = 0; i < 5; i++) {
		t = now_ms();
		assert_int_equal(dwarf__read_offsets(host_bin, o), 0);
		t = now_ms() - t;
		if (t < best)
			best = t;
	}
	assert_int_equal(stat(host_bin, &st), 0);
	printf("dwarf__read_offsets on a %.1f MB Go binary: %.1f ms (best of 5)\n",
	       st.st_size / 1e6, best);
}

/*
 * Releases on both sides of each layout change and compression format: 1.17 writes GNU
 * .zdebug_* sections, 1.19 and later SHF_COMPRESSED ones, 1.25 and later DWARF 5; goid moved
 * to 160 in 1.23 and back in 1.25; Request.pat appeared in 1.22, g.parentGoid in 1.21; maps
 * became Swiss tables in 1.24.
 */
static void test_dwarf__older_toolchains_match_table(void **state)
{
	static const char *const versions[] = { "1.17.13", "1.20.14", "1.21.13",
						"1.22.12", "1.23.12", "1.24.13" };
	int64_t o[GO_FIELD__COUNT];
	char go[4096], bin[4096], built[32];
	int tested = 0, ma, mi, pa;
	GElf_Shdr shdr;
	double t;

	(void)state;
	for (size_t i = 0; i < sizeof(versions) / sizeof(versions[0]); i++) {
		if (!toolchain(versions[i], go, sizeof(go)))
			continue;
		build_with(go, versions[i], NULL, bin, sizeof(bin));
		go_version_of(bin, &ma, &mi, &pa);
		snprintf(built, sizeof(built), "%d.%d.%d", ma, mi, pa);
		assert_string_equal(built, versions[i]);
		if (mi < 19) {
			assert_int_equal(section_header(bin, ".zdebug_info", &shdr), 0);
			assert_int_equal(section_header(bin, ".debug_info", &shdr), -ENOENT);
		} else {
			assert_int_equal(section_header(bin, ".debug_info", &shdr), 0);
			assert_true(shdr.sh_flags & SHF_COMPRESSED);
		}
		t = now_ms();
		assert_int_equal(dwarf__read_offsets(bin, o), 0);
		t = now_ms() - t;
		assert_matches_table(bin, o);
		assert_versioned_fields(o, mi, mi >= 24);
		read_stopping_early(bin, o);
		printf("Go %s: offsets from DWARF match the table (%.1f ms)\n", versions[i], t);
		tested++;
	}
	if (!tested)
		TEST_SKIP("no Go toolchain could be had to build with");
}

static void test_dwarf__pie_same_offsets(void **state)
{
	struct elf_file *ef;
	char bin[4096];

	(void)state;
	build_same_offsets(bin, sizeof(bin), "dwarf_httpserver_pie", "", "-buildmode=pie");
	ef = elf_file__open(bin);
	assert_non_null(ef);
	assert_true(elf_file__is_pie(ef));
	elf_file__close(ef);
}

static void test_dwarf__uncompressed_same_offsets(void **state)
{
	GElf_Shdr shdr;
	char bin[4096];

	(void)state;
	build_same_offsets(bin, sizeof(bin), "dwarf_httpserver_plain", "",
			   "-ldflags=-compressdwarf=false");
	assert_int_equal(section_header(bin, ".debug_info", &shdr), 0);
	assert_false(shdr.sh_flags & SHF_COMPRESSED);
	/* And the reference really is compressed, so both paths are exercised. */
	assert_int_equal(section_header(host_bin, ".debug_info", &shdr), 0);
	assert_true(shdr.sh_flags & SHF_COMPRESSED);
}

/* Go lays structs out alike on every 64-bit target: the tables do not depend on GOARCH. */
static void test_dwarf__arm64_same_as_amd64(void **state)
{
	struct elf_file *ef;
	char bin[4096];

	(void)state;
	build_same_offsets(bin, sizeof(bin), "dwarf_httpserver_arm64", "GOARCH=arm64", "");
	ef = elf_file__open(bin);
	assert_non_null(ef);
	assert_int_equal(elf_file__machine(ef), EM_AARCH64);
	elf_file__close(ef);
	assert_matches_table(bin, host_offs);
}

/*
 * Go 1.24 and 1.25 could still be built with the old maps (GOEXPERIMENT=noswissmap). The table,
 * made from default builds, says such a release has Swiss maps; the binary's DWARF knows better
 * and must give runtime.hmap, with the Swiss structs ruled out, never a mix of the two.
 */
static void test_dwarf__noswissmap_build_has_hmap(void **state)
{
	int64_t o[GO_FIELD__COUNT], want[GO_FIELD__COUNT];
	char go[4096], bin[4096], built[32];

	(void)state;
	if (!toolchain("1.24.13", go, sizeof(go)))
		return;
	build_with(go, "1.24.13", "noswissmap", bin, sizeof(bin));
	read_stopping_early(bin, o);
	assert_versioned_fields(o, 24, false);
	go_table_row(bin, want, built, sizeof(built));
	assert_string_equal(built, "1.24.13");
	for (int f = 0; f < GO_FIELD__COUNT; f++) {
		/* Not the table's maps: the maps' fields are checked below. */
		if (f >= GO_FIELD_HMAP_COUNT && f <= GO_FIELD_SWISS_GROUPS_MASK)
			want[f] = o[f];
		if (!httpserver_links(f))
			want[f] = -1;
	}
	test_assert_row_equal(&go_offsets_fields, "1.24.13 noswissmap", o, want);
	/* The old layout, as it was in 1.23: only members after buckets moved. */
	assert_int_equal(o[GO_FIELD_HMAP_COUNT], 0);
	assert_int_equal(o[GO_FIELD_HMAP_B], 9);
	assert_int_equal(o[GO_FIELD_HMAP_BUCKETS], 16);
}

/*
 * A Go program without net/http: runtime.g is there, so the read succeeds, and every net/http
 * and net/url field is -1 (the table would have them; DWARF only describes what was linked).
 * The runtime's own structs, g and the maps, are in every Go binary.
 */
static void test_dwarf__go_without_http(void **state)
{
	int64_t o[GO_FIELD__COUNT];
	const char *p;

	(void)state;
	p = test_go_build("nohttp", "dwarf_nohttp", "", "");
	assert_non_null(p);
	assert_int_equal(dwarf__read_offsets(p, o), 0);
	for (int f = 0; f < GO_FIELD__COUNT; f++) {
		const char *name = go_field_names[f];

		if (!strncmp(name, "runtime.", 8) || !strncmp(name, "internal/runtime/", 17)) {
			if (o[f] != host_offs[f])
				fail_msg("'%s' is %lld without net/http, %lld with it", name,
					 (long long)o[f], (long long)host_offs[f]);
		} else if (!strncmp(name, "net/", 4) && o[f] != -1) {
			fail_msg("'%s' is %lld in a program without net/http", name,
				 (long long)o[f]);
		}
	}
	assert_true(o[GO_FIELD_G_PARENT_GOID] > 0);
}

/* No DWARF is the ordinary case of a release build: -ENODATA, quietly, with nothing filled in. */
static void test_dwarf__no_dwarf_is_enodata(void **state)
{
	static const struct {
		const char *name, *flags;
	} builds[] = {
		{ "dwarf_httpserver_w", "-ldflags=-w" },
		{ "dwarf_httpserver_sw", "'-ldflags=-s -w'" },
	};
	int64_t o[GO_FIELD__COUNT];
	GElf_Shdr shdr;
	char bin[4096];
	char *msg;

	(void)state;
	for (size_t i = 0; i < sizeof(builds) / sizeof(builds[0]); i++) {
		build(bin, sizeof(bin), builds[i].name, "", builds[i].flags);
		assert_int_equal(section_header(bin, ".debug_info", &shdr), -ENOENT);
		for (int f = 0; f < GO_FIELD__COUNT; f++)
			o[f] = 7;
		assert_int_equal(read_logged(bin, o, &msg), -ENODATA);
		assert_string_equal(msg, "");
		free(msg);
		assert_all_unset(o);
	}
}

/*
 * A C binary: without DWARF (as distributions ship /bin/true) it is -ENODATA like any stripped
 * binary; with DWARF, which describes no Go runtime, -ENOENT with a message saying so.
 */
static void test_dwarf__c_binaries(void **state)
{
	int64_t o[GO_FIELD__COUNT];
	char bin[4096], *msg;
	GElf_Shdr shdr;
	int want;

	(void)state;
	want = section_header("/bin/true", ".debug_info", &shdr) ? -ENODATA : -ENOENT;
	assert_int_equal(dwarf__read_offsets("/bin/true", o), want);
	assert_all_unset(o);

	data_path(bin, sizeof(bin), "dwarf_c_with_debuginfo");
	assert_int_equal(test_sh("printf 'struct g { long goid; } g;\\nint main(void) { return "
				 "(int)g.goid; }\\n' | cc -g -O0 -x c - -o '%s'",
				 bin),
			 0);
	assert_int_equal(section_header(bin, ".debug_info", &shdr), 0);
	assert_int_equal(read_logged(bin, o, &msg), -ENOENT);
	assert_non_null(strstr(msg, bin));
	assert_non_null(strstr(msg, "runtime.g.goid"));
	free(msg);
	assert_all_unset(o);
}

static void test_dwarf__not_elf_or_missing(void **state)
{
	int64_t o[GO_FIELD__COUNT];
	char *msg;

	(void)state;
	assert_int_equal(read_logged(TABLE_PATH, o, &msg), -ENOEXEC);
	assert_non_null(strstr(msg, "not an ELF file"));
	free(msg);
	assert_all_unset(o);
	assert_int_equal(read_logged("testdata/no-such-binary", o, &msg), -ENOENT);
	assert_non_null(strstr(msg, "'testdata/no-such-binary'"));
	free(msg);
	assert_all_unset(o);
}

/*
 * Copies cut at every interesting point: inside the ELF header, inside the section headers
 * (which Go writes near the start), inside the code, inside the DWARF, one byte short. Each must
 * be an error that is logged, never -ENODATA (it would pass for a -w build) and never a crash.
 */
static void test_dwarf__truncated_copies_fail(void **state)
{
	const char *sources[2] = { host_bin, NULL };
	int64_t o[GO_FIELD__COUNT];
	char plain[4096], cut[4096], *buf, *msg;
	size_t len = 0, sizes[9];
	GElf_Shdr shdr;
	int rc;

	(void)state;
	build(plain, sizeof(plain), "dwarf_httpserver_plain", "", "-ldflags=-compressdwarf=false");
	sources[1] = plain;
	data_path(cut, sizeof(cut), "dwarf_truncated");
	for (int s = 0; s < 2; s++) {
		buf = test_read_file(sources[s], &len);
		assert_non_null(buf);
		assert_int_equal(section_header(sources[s], ".debug_info", &shdr), 0);
		sizes[0] = 0;
		sizes[1] = 32; /* inside the ELF header */
		sizes[2] = 64;
		sizes[3] = 600; /* inside the section headers */
		sizes[4] = len / 4;
		sizes[5] = len / 2;
		sizes[6] = shdr.sh_offset + 100; /* inside .debug_info */
		sizes[7] = len * 3 / 4;
		sizes[8] = len - 1;
		for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
			write_file(cut, buf, sizes[i]);
			rc = read_logged(cut, o, &msg);
			if (rc >= 0 || rc == -ENODATA)
				fail_msg("'%s' cut to %zu of %zu bytes: %d", sources[s], sizes[i],
					 len, rc);
			assert_true(strlen(msg) > 0);
			free(msg);
			assert_all_unset(o);
		}
		free(buf);
	}
}

/* Offset of the first N-byte run NEEDLE in HAY[FROM..TO), or -1. */
static long find_bytes(const char *hay, size_t from, size_t to, const char *needle, size_t n)
{
	for (size_t i = from; i + n <= to; i++) {
		if (!memcmp(hay + i, needle, n))
			return (long)i;
	}
	return -1;
}

/*
 * A damaged member offset must be refused, not handed to BPF. Go writes a member as its name
 * inline, then its offset as ULEB128: goid's 152 is "goid\0\x98\x01". Rewriting every such run
 * to 16383 (0xff 0x7f, the same length) puts goid far outside runtime.g.
 */
static void test_dwarf__corrupt_member_offset_refused(void **state)
{
	char plain[4096], bad[4096], pat[8], *buf, *msg;
	int64_t o[GO_FIELD__COUNT];
	long at, hits = 0;
	GElf_Shdr shdr;
	size_t len = 0, end;
	uint64_t goid;

	(void)state;
	build(plain, sizeof(plain), "dwarf_httpserver_plain", "", "-ldflags=-compressdwarf=false");
	assert_int_equal(dwarf__read_offsets(plain, o), 0);
	goid = (uint64_t)o[GO_FIELD_G_GOID];
	assert_true(goid >= 128 && goid < 16384);
	memcpy(pat, "goid", 5);
	pat[5] = (char)(0x80 | (goid & 0x7f));
	pat[6] = (char)(goid >> 7);
	buf = test_read_file(plain, &len);
	assert_non_null(buf);
	assert_int_equal(section_header(plain, ".debug_info", &shdr), 0);
	end = shdr.sh_offset + shdr.sh_size;
	for (at = (long)shdr.sh_offset; (at = find_bytes(buf, at, end, pat, 7)) >= 0; at += 7) {
		buf[at + 5] = (char)0xff;
		buf[at + 6] = 0x7f;
		hits++;
	}
	assert_true(hits > 0);
	data_path(bad, sizeof(bad), "dwarf_bad_goid");
	write_file(bad, buf, len);
	free(buf);
	assert_int_equal(read_logged(bad, o, &msg), -EINVAL);
	assert_non_null(strstr(msg, "runtime.g.goid"));
	assert_non_null(strstr(msg, "16383"));
	free(msg);
	assert_all_unset(o);
}

static uint64_t xorshift(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

/*
 * Random damage to .debug_info and .debug_abbrev (deterministic seeds, so a failure replays):
 * whatever libdw makes of it, the answer is an error or offsets within bounds, and it returns.
 * Run under SANITIZE=1 this is also a memory-safety check.
 */
static void test_dwarf__damaged_dwarf_never_crashes(void **state)
{
	static const char *const sections[] = { ".debug_info", ".debug_abbrev" };
	char plain[4096], bad[4096], *orig, *buf;
	int errors = 0, oks = 0, rc, rounds = 200;
	int64_t o[GO_FIELD__COUNT];
	uint64_t seed = 0x9e3779b97f4a7c15ULL, r;
	const GElf_Shdr *sh;
	GElf_Shdr shdr[2];
	size_t len = 0, pos;
	double t = now_ms();

	(void)state;
	build(plain, sizeof(plain), "dwarf_httpserver_plain", "", "-ldflags=-compressdwarf=false");
	for (int s = 0; s < 2; s++)
		assert_int_equal(section_header(plain, sections[s], &shdr[s]), 0);
	orig = test_read_file(plain, &len);
	assert_non_null(orig);
	buf = malloc(len);
	assert_non_null(buf);
	data_path(bad, sizeof(bad), "dwarf_damaged");

	/* The abbreviations zeroed: nothing in .debug_info can be decoded. */
	memcpy(buf, orig, len);
	memset(buf + shdr[1].sh_offset, 0, shdr[1].sh_size);
	write_file(bad, buf, len);
	assert_true(dwarf__read_offsets(bad, o) < 0);
	assert_all_unset(o);

	for (int round = 0; round < rounds; round++) {
		memcpy(buf, orig, len);
		for (int k = 0; k < 16; k++) {
			r = xorshift(&seed);
			/* Mostly .debug_info, the bigger target; some hits on the abbreviations. */
			sh = &shdr[(r & 7) == 0];
			pos = sh->sh_offset + (r >> 8) % sh->sh_size;
			buf[pos] = (char)(xorshift(&seed) & 0xff);
		}
		/*
		 * The same path, size and perhaps modification time each round: the DWARF the last
		 * round kept open would pass for this one's.
		 */
		dwarf__release();
		write_file(bad, buf, len);
		rc = dwarf__read_offsets(bad, o);
		if (rc) {
			assert_true(rc < 0);
			assert_all_unset(o);
			errors++;
			continue;
		}
		for (int f = 0; f < GO_FIELD__COUNT; f++)
			assert_true(o[f] >= -1 && o[f] <= OFFSET_MAX);
		oks++;
	}
	printf("damaged DWARF: %d rounds, %d errors, %d read (%.0f ms)\n", rounds, errors, oks,
	       now_ms() - t);
	free(buf);
	free(orig);
}

/* ---- programs built against module releases: grpc-go, pgx, go-redis ---- */

/*
 * Builds testdata/SRC with ENV and FLAGS into unit-data/NAME, in a copy of the directory (one per
 * TAG) whose go.mod is pointed at the releases REQUIRES names ("-require=MODULE@VERSION ...") and
 * tidied through the module proxy. GOTOOLCHAIN=auto: a release that needs a newer Go than the
 * one installed gets it through the proxy too.
 */
static void build_against(const char *src, const char *tag, const char *requires,
			  const char *env, const char *flags, const char *name, char *out,
			  size_t size)
{
	char dir[4096];
	const char *go_env = "env GOTOOLCHAIN=auto GOFLAGS='-mod=mod -buildvcs=false' CGO_ENABLED=0";

	assert_true((size_t)snprintf(dir, sizeof(dir), "%s/%s-%s", test_data_dir(), src, tag) <
		    sizeof(dir));
	data_path(out, size, name);
	if (test_sh("mkdir -p '%s' && cp testdata/%s/main.go testdata/%s/go.mod '%s' && cd '%s' && "
		    "%s go mod edit %s && %s go mod tidy && %s %s go build %s -o '%s' . >&2",
		    dir, src, src, dir, dir, go_env, requires, go_env, go_env, env, flags, out))
		fail_msg("cannot build testdata/%s with %s (the module proxy must be reachable)",
			 src, requires);
}

/* BIN's buildinfo, which must list MODULE at VERSION; for the caller to free. */
static struct gobin *module_gobin(const char *bin, const char *module, const char *version)
{
	struct gobin *gb = read_gobin(bin);

	for (size_t i = 0; i < gb->ndeps; i++) {
		if (!strcmp(gb->deps[i].path, module)) {
			assert_string_equal(gb->deps[i].version, version);
			return gb;
		}
	}
	fail_msg("'%s' does not list %s in its buildinfo", bin, module);
	return NULL;
}

/* The newest release the table at PATH lists, as a module version ("v5.12.0"). */
static void table_newest(const char *path, char *buf, size_t size)
{
	char *json = test_read_file(path, NULL);
	cJSON *root = json ? cJSON_Parse(json) : NULL;
	const cJSON *vs;

	assert_non_null(root);
	vs = cJSON_GetObjectItemCaseSensitive(root, "versions");
	assert_true(cJSON_GetArraySize(vs) > 0);
	snprintf(buf, size, "v%s", cJSON_GetArrayItem(vs, cJSON_GetArraySize(vs) - 1)->valuestring);
	cJSON_Delete(root);
	free(json);
}

/* TABLE's row for VERSION ("v5.0.0"), which it must list exactly. */
static void module_table_row(const struct offsets *t, const char *version, int64_t *out,
			     size_t n)
{
	struct offsets_version v;
	const char *resolved = NULL;

	assert_int_equal(offsets__parse_module_version(version, &v), 0);
	if (offsets__find_version(t, &v, OFFSETS_MATCH_NEAREST_BELOW, out, n, &resolved) ||
	    strcmp(resolved, version + 1))
		fail_msg("%s is not listed in its table: run make offsets", version);
}

/* ---- grpc-go ---- */

/* build_against() of testdata/grpcserver and grpc-go VERSION ("v1.50.0"). */
static void build_grpc(const char *version, const char *env, const char *flags, const char *name,
		       char *out, size_t size)
{
	char requires[96];

	snprintf(requires, sizeof(requires), "-require=" GRPC_MODULE "@%s", version);
	build_against("grpcserver", version, requires, env, flags, name, out, size);
}

/* The grpc table's row for VERSION ("v1.62.1"), which it must list exactly. */
static void grpc_row(const char *version, int64_t out[GRPC_FIELD__COUNT])
{
	module_table_row(grpc_table, version, out, GRPC_FIELD__COUNT);
}

static void assert_grpc_equal(const char *what, const int64_t got[GRPC_FIELD__COUNT],
			      const int64_t want[GRPC_FIELD__COUNT])
{
	test_assert_row_equal(&grpc_offsets_fields, what, got, want);
}

/*
 * The oldest grpc-go release in the table, the first release of each layout the generator found
 * after it (http2Server's peer.Peer in 1.60, ServerStream embedding a *Stream in 1.69, a Stream
 * in 1.77) and the table's newest: a program that serves and calls links every struct the table
 * describes, so its DWARF must give the table's row for its release field for field, -1 (absent)
 * included, and grpc_offsets__for_binary must take the DWARF.
 */
static void test_dwarf__grpc_matches_table(void **state)
{
	/* The first release of each layout; the table's newest comes last. */
	static const char *const versions[] = { "v1.50.0", "v1.60.0", "v1.69.0", "v1.77.0" };
	int64_t o[GRPC_FIELD__COUNT], want[GRPC_FIELD__COUNT];
	char bin[4096], name[96], newest[32], source[48];
	struct gobin *gb;
	double t;

	(void)state;
	if (test_sh("command -v go >/dev/null"))
		TEST_SKIP("Go is missing: it builds the grpc-go programs");
	table_newest(GRPC_TABLE_PATH, newest, sizeof(newest));
	for (size_t i = 0; i <= sizeof(versions) / sizeof(versions[0]); i++) {
		const char *v = i < sizeof(versions) / sizeof(versions[0]) ? versions[i] : newest;

		snprintf(name, sizeof(name), "dwarf_grpcserver_%s", v);
		build_grpc(v, "", "", name, bin, sizeof(bin));
		gb = module_gobin(bin, GRPC_MODULE, v);
		grpc_row(v, want);
		t = now_ms();
		assert_int_equal(dwarf__read_grpc_offsets(bin, o), 0);
		t = now_ms() - t;
		assert_grpc_equal(v, o, want);
		assert_int_equal(grpc_offsets__for_binary(grpc_table, bin, gb, o, source,
							  sizeof(source)),
				 0);
		assert_string_equal(source, "DWARF");
		assert_grpc_equal(v, o, want);
		gobin__free(gb);
		printf("grpc-go %s: offsets from DWARF match the table (%.1f ms)\n", v, t);
	}
	/*
	 * With DWARF the version in the buildinfo does not matter: one newer than the table is
	 * read from the DWARF with nothing said about the table's rows.
	 */
	{
		struct gobin_module dep = { (char *)GRPC_MODULE, (char *)"v1.999.0" };
		struct gobin fake = { .deps = &dep, .ndeps = 1 };
		char *msg;
		int rc;

		rc = TEST_LOGGED(LOG_INFO, &msg,
				 grpc_offsets__for_binary(grpc_table, bin, &fake, o, source,
							  sizeof(source)));
		assert_int_equal(rc, 0);
		assert_string_equal(msg, "");
		free(msg);
		assert_string_equal(source, "DWARF");
		grpc_row(newest, want);
		assert_grpc_equal("v1.999.0 (DWARF)", o, want);
	}

	/* One table serves every 64-bit target here as well. */
	snprintf(name, sizeof(name), "dwarf_grpcserver_%s_arm64", newest);
	build_grpc(newest, "GOARCH=arm64", "", name, bin, sizeof(bin));
	grpc_row(newest, want);
	assert_int_equal(dwarf__read_grpc_offsets(bin, o), 0);
	assert_grpc_equal("arm64", o, want);
}

/* Without DWARF: -ENODATA from the reader, and the table's row for the release from the choice. */
static void test_dwarf__grpc_without_dwarf_uses_table(void **state)
{
	int64_t o[GRPC_FIELD__COUNT], want[GRPC_FIELD__COUNT];
	char bin[4096], name[96], newest[32], source[48], expect[64];
	struct gobin *gb;

	(void)state;
	if (test_sh("command -v go >/dev/null"))
		TEST_SKIP("Go is missing: it builds the grpc-go programs");
	table_newest(GRPC_TABLE_PATH, newest, sizeof(newest));
	snprintf(name, sizeof(name), "dwarf_grpcserver_%s_w", newest);
	build_grpc(newest, "", "-ldflags=-w", name, bin, sizeof(bin));
	for (int f = 0; f < GRPC_FIELD__COUNT; f++)
		o[f] = 7;
	assert_int_equal(dwarf__read_grpc_offsets(bin, o), -ENODATA);
	test_assert_unset(&grpc_offsets_fields, o);
	gb = module_gobin(bin, GRPC_MODULE, newest);
	assert_int_equal(grpc_offsets__for_binary(grpc_table, bin, gb, o, source, sizeof(source)),
			 0);
	snprintf(expect, sizeof(expect), "table %s", newest);
	assert_string_equal(source, expect);
	grpc_row(newest, want);
	assert_memory_equal(o, want, sizeof(o));
	/* No table and no DWARF: nothing to go on. */
	assert_int_equal(grpc_offsets__for_binary(NULL, bin, gb, o, source, sizeof(source)),
			 -ENOTSUP);
	gobin__free(gb);
}

/*
 * A Go program without grpc-go: its DWARF is read without error and every grpc field is -1; its
 * buildinfo has no grpc-go, so the choice is -ENOENT before any DWARF is read.
 */
static void test_dwarf__grpc_absent_from_plain_go(void **state)
{
	int64_t o[GRPC_FIELD__COUNT];
	struct gobin *gb;
	char source[48];

	(void)state;
	for (int f = 0; f < GRPC_FIELD__COUNT; f++)
		o[f] = 7;
	assert_int_equal(dwarf__read_grpc_offsets(host_bin, o), 0);
	test_assert_unset(&grpc_offsets_fields, o);
	gb = read_gobin(host_bin);
	assert_int_equal(grpc_offsets__for_binary(grpc_table, host_bin, gb, o, source,
						  sizeof(source)),
			 -ENOENT);
	gobin__free(gb);
	assert_int_equal(dwarf__read_grpc_offsets("testdata/no-such-binary", o), -ENOENT);
}

/* ---- database/sql, pgx, go-redis ---- */

/* BIN's database/sql.Stmt.query in its DWARF must be the Go table's for the Go that built it. */
static void assert_sql_stmt_matches(const char *bin)
{
	const enum go_field f = GO_FIELD_SQL_STMT_QUERY;
	int64_t o[GO_FIELD__COUNT], want[GO_FIELD__COUNT];
	char built[32];
	const char *row = go_table_row(bin, want, built, sizeof(built));

	assert_int_equal(dwarf__read_offsets(bin, o), 0);
	if (o[f] < 0 || o[f] != want[f])
		fail_msg("Go %s (table row %s) '%s': table %lld, DWARF %lld", built, row,
			 go_field_names[f], (long long)want[f], (long long)o[f]);
	printf("Go %s: database/sql.Stmt.query at %lld, as in the table\n", built,
	       (long long)o[f]);
}

/*
 * A program that prepares a database/sql statement, built by the installed Go and by older
 * releases across the table's range (.zdebug_* and SHF_COMPRESSED DWARF, DWARF 4 and 5): the
 * Stmt's query must be where the Go table says for each.
 */
static void test_dwarf__sql_stmt_matches_table(void **state)
{
	static const char *const versions[] = { "1.17.13", "1.19.13", "1.21.13", "1.24.13" };
	char go[4096], bin[4096];
	const char *p;

	(void)state;
	p = test_go_build("sqlclient", "dwarf_sqlclient", "", "");
	assert_non_null(p);
	assert_sql_stmt_matches(p);
	for (size_t i = 0; i < sizeof(versions) / sizeof(versions[0]); i++) {
		if (!toolchain(versions[i], go, sizeof(go)))
			continue;
		build_src_with("sqlclient", go, versions[i], NULL, bin, sizeof(bin));
		assert_sql_stmt_matches(bin);
	}
}

/* build_against() of testdata/dbclient, pgx PGX and go-redis REDIS ("v5.0.0", "v9.0.0"). */
static void build_dbclient(const char *pgx, const char *redis, const char *flags, const char *name,
			   char *out, size_t size)
{
	char tag[96], requires[192];

	snprintf(tag, sizeof(tag), "%s-%s", pgx, redis);
	snprintf(requires, sizeof(requires),
		 "-require=" PGX_MODULE "@%s -require=" REDIS_MODULE "@%s", pgx, redis);
	build_against("dbclient", tag, requires, "", flags, name, out, size);
}

/*
 * BIN, built with MODULE at VERSION and DWARF: the fields read from its DWARF are TABLE's row for
 * VERSION, -1 included, and module_offsets__for_binary takes them from the DWARF, with or without
 * the table. Returns the offsets in OUT.
 */
static void assert_module_matches(const char *bin, const struct offsets *t, const char *module,
				  const char *version, int64_t *out)
{
	const struct offsets_fields *fields = t == pgx_table ? &pgx_offsets_fields :
							       &redis_offsets_fields;
	int64_t want[64], got[64];
	struct gobin *gb = module_gobin(bin, module, version);
	char source[48];

	assert_true(fields->count <= 64);
	module_table_row(t, version, want, fields->count);
	assert_int_equal(dwarf__read_fields(bin, fields, out), 0);
	test_assert_row_equal(fields, version, out, want);
	assert_int_equal(module_offsets__for_binary(t, module, bin, gb, got, source,
						    sizeof(source)),
			 0);
	assert_string_equal(source, "DWARF");
	assert_memory_equal(got, out, fields->count * sizeof(*got));
	assert_int_equal(module_offsets__for_binary(NULL, module, bin, gb, got, source,
						    sizeof(source)),
			 0);
	assert_string_equal(source, "DWARF");
	assert_memory_equal(got, out, fields->count * sizeof(*got));
	gobin__free(gb);
	printf("%s %s: offsets from DWARF match the table\n", fields->what, version);
}

/*
 * A pgx and go-redis client built against the oldest releases of both tables and against their
 * newest: pgx v5.0.0 has the batch's queries and a query's text unexported (queuedQueries,
 * query), later releases exported (QueuedQueries, SQL); go-redis's baseClient.opt moved from 0
 * to 8 in v9.22.0. The DWARF of each must give the tables' rows. Without DWARF the choice takes
 * the row for the release in the buildinfo.
 */
static void test_dwarf__datastores_match_tables(void **state)
{
	int64_t pgx[PGX_FIELD__COUNT], redis[REDIS_FIELD__COUNT], want[PGX_FIELD__COUNT];
	char pgx_newest[32], redis_newest[32], bin[4096], name[128], source[48], expect[64];
	struct gobin *gb;

	(void)state;
	if (test_sh("command -v go >/dev/null"))
		TEST_SKIP("Go is missing: it builds the pgx and go-redis programs");
	table_newest(PGX_TABLE_PATH, pgx_newest, sizeof(pgx_newest));
	table_newest(REDIS_TABLE_PATH, redis_newest, sizeof(redis_newest));

	build_dbclient("v5.0.0", "v9.0.0", "", "dwarf_dbclient_oldest", bin, sizeof(bin));
	assert_module_matches(bin, pgx_table, PGX_MODULE, "v5.0.0", pgx);
	assert_int_equal(pgx[PGX_FIELD_BATCH_QUEUED], -1);
	assert_int_equal(pgx[PGX_FIELD_BATCH_QUEUED_OLD], 0);
	assert_int_equal(pgx[PGX_FIELD_QUERY_SQL], -1);
	assert_int_equal(pgx[PGX_FIELD_QUERY_SQL_OLD], 0);
	assert_module_matches(bin, redis_table, REDIS_MODULE, "v9.0.0", redis);
	assert_int_equal(redis[REDIS_FIELD_BASECLIENT_OPT], 0);

	snprintf(name, sizeof(name), "dwarf_dbclient_%s_%s", pgx_newest, redis_newest);
	build_dbclient(pgx_newest, redis_newest, "", name, bin, sizeof(bin));
	assert_module_matches(bin, pgx_table, PGX_MODULE, pgx_newest, pgx);
	assert_true(pgx[PGX_FIELD_BATCH_QUEUED] >= 0);
	assert_int_equal(pgx[PGX_FIELD_BATCH_QUEUED_OLD], -1);
	assert_true(pgx[PGX_FIELD_QUERY_SQL] >= 0);
	assert_int_equal(pgx[PGX_FIELD_QUERY_SQL_OLD], -1);
	assert_module_matches(bin, redis_table, REDIS_MODULE, redis_newest, redis);
	assert_int_equal(redis[REDIS_FIELD_BASECMD_ARGS], 16);

	/* Without DWARF: -ENODATA from the reader, the row for the release from the choice. */
	snprintf(name, sizeof(name), "dwarf_dbclient_%s_%s_w", pgx_newest, redis_newest);
	build_dbclient(pgx_newest, redis_newest, "-ldflags=-w", name, bin, sizeof(bin));
	assert_int_equal(dwarf__read_fields(bin, &pgx_offsets_fields, pgx), -ENODATA);
	gb = module_gobin(bin, PGX_MODULE, pgx_newest);
	assert_int_equal(module_offsets__for_binary(pgx_table, PGX_MODULE, bin, gb, pgx, source,
						    sizeof(source)),
			 0);
	snprintf(expect, sizeof(expect), "table %s", pgx_newest);
	assert_string_equal(source, expect);
	module_table_row(pgx_table, pgx_newest, want, PGX_FIELD__COUNT);
	assert_memory_equal(pgx, want, sizeof(pgx));
	/* No table and no DWARF: nothing to go on. */
	assert_int_equal(module_offsets__for_binary(NULL, PGX_MODULE, bin, gb, pgx, source,
						    sizeof(source)),
			 -ENOTSUP);
	assert_int_equal(module_offsets__for_binary(redis_table, REDIS_MODULE, bin, gb, redis,
						    source, sizeof(source)),
			 0);
	snprintf(expect, sizeof(expect), "table %s", redis_newest);
	assert_string_equal(source, expect);
	gobin__free(gb);
}

/*
 * A Go program with neither pgx nor go-redis: its DWARF is read without error, every field -1,
 * and the walk stops at the unit that holds the types instead of reading every unit; its
 * buildinfo lists neither module, so the choice is -ENOENT.
 */
static void test_dwarf__datastores_absent_from_plain_go(void **state)
{
	int64_t pgx[PGX_FIELD__COUNT], redis[REDIS_FIELD__COUNT];
	unsigned found, total, ruled;
	struct gobin *gb;
	char source[48];

	(void)state;
	for (int f = 0; f < PGX_FIELD__COUNT; f++)
		pgx[f] = 7;
	read_walk(host_bin, &pgx_offsets_fields, pgx, &found, &total, &ruled);
	assert_int_equal(found, 0);
	assert_int_equal(ruled, total);
	test_assert_unset(&pgx_offsets_fields, pgx);
	assert_int_equal(dwarf__read_fields(host_bin, &redis_offsets_fields, redis), 0);
	test_assert_unset(&redis_offsets_fields, redis);

	gb = read_gobin(host_bin);
	assert_int_equal(module_offsets__for_binary(pgx_table, PGX_MODULE, host_bin, gb, pgx,
						    source, sizeof(source)),
			 -ENOENT);
	assert_int_equal(module_offsets__for_binary(redis_table, REDIS_MODULE, host_bin, gb, redis,
						    source, sizeof(source)),
			 -ENOENT);
	gobin__free(gb);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_dwarf__installed_go_matches_table),
		cmocka_unit_test(test_dwarf__older_toolchains_match_table),
		cmocka_unit_test(test_dwarf__pie_same_offsets),
		cmocka_unit_test(test_dwarf__uncompressed_same_offsets),
		cmocka_unit_test(test_dwarf__arm64_same_as_amd64),
		cmocka_unit_test(test_dwarf__noswissmap_build_has_hmap),
		cmocka_unit_test(test_dwarf__go_without_http),
		cmocka_unit_test(test_dwarf__no_dwarf_is_enodata),
		cmocka_unit_test(test_dwarf__c_binaries),
		cmocka_unit_test(test_dwarf__not_elf_or_missing),
		cmocka_unit_test(test_dwarf__truncated_copies_fail),
		cmocka_unit_test(test_dwarf__corrupt_member_offset_refused),
		cmocka_unit_test(test_dwarf__damaged_dwarf_never_crashes),
		cmocka_unit_test(test_dwarf__grpc_matches_table),
		cmocka_unit_test(test_dwarf__grpc_without_dwarf_uses_table),
		cmocka_unit_test(test_dwarf__grpc_absent_from_plain_go),
		cmocka_unit_test(test_dwarf__sql_stmt_matches_table),
		cmocka_unit_test(test_dwarf__datastores_match_tables),
		cmocka_unit_test(test_dwarf__datastores_absent_from_plain_go),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
