// SPDX-License-Identifier: MIT
/*
 * Offset tables: parses the JSON that offsets/gen writes (schema in offsets/README.md) into one
 * row of struct member offsets per release the generator built, Go releases in one table and a
 * module's releases (grpc-go, pgx, go-redis, gin, ...) in each of the others, and picks the row a
 * target's version needs. One parser serves them all: a table differs from another only in its
 * list of fields. A table is checked in full when it is loaded, so a bad table stops gospan at
 * start-up instead of sending probes to wrong addresses later.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "analysis/dwarf.h"
#include "analysis/embed.h"
#include "analysis/gobin.h"
#include "core/log.h"
#include "analysis/offsets.h"

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

/*
 * The modules gospan has a table of, in the order of GOSPAN_MODULE_TABLES and so of
 * module_tables.by_module[]: their paths as buildinfo lists them, their tables' fields, and the
 * tables embed.c built in.
 */
static const struct module_def {
	const char *path;
	const struct offsets_fields *fields;
	const char *json, *json_end;
} module_defs[] = {
#define MODULE_DEF(name, path_)                                                                    \
	{ .path = path_,                                                                           \
	  .fields = &name##_offsets_fields,                                                        \
	  .json = gospan_##name##_offsets_json,                                                    \
	  .json_end = gospan_##name##_offsets_json_end },
	GOSPAN_MODULE_TABLES(MODULE_DEF)
#undef MODULE_DEF
};

_Static_assert(ARRAY_SIZE(module_defs) == MODULE_TABLES__COUNT &&
		       sizeof(struct module_tables) ==
			       MODULE_TABLES__COUNT * sizeof(const struct offsets *),
	       "struct module_tables' members are not one per module");

#define OFFSETS_SCHEMA 1
/* Fields a module table may have: a lookup keeps a row on its stack. */
#define MODULE_FIELDS_MAX 64
#define MODULE_FIELDS_FIT(name, path) &&ARRAY_SIZE(name##_field_names) <= MODULE_FIELDS_MAX
_Static_assert(1 GOSPAN_MODULE_TABLES(MODULE_FIELDS_FIT),
	       "a module table has more fields than a lookup has room for");
#undef MODULE_FIELDS_FIT
/*
 * The structs gospan reads are a few hundred bytes; an offset beyond this is a corrupt table,
 * and letting it through would have BPF read some unrelated part of the target's heap.
 */
#define OFFSET_MAX (1 << 16)

struct release {
	int major, minor, patch;
	char name[32]; /* "1.22.12", what a lookup reports as resolved */
	int64_t *offs; /* one per field of the table, in its cells */
};

struct offsets {
	const struct offsets_fields *fields;
	struct release *rels; /* sorted, oldest first */
	size_t nrels;
	int64_t *cells; /* nrels rows of fields->count offsets */
};

static int release_cmp(const struct release *r, int major, int minor, int patch)
{
	if (r->major != major)
		return r->major < major ? -1 : 1;
	if (r->minor != minor)
		return r->minor < minor ? -1 : 1;
	if (r->patch != patch)
		return r->patch < patch ? -1 : 1;
	return 0;
}

/* Index of the listed release that the version string names, or a negative errno. */
static int release_index(const struct offsets *o, const char *s)
{
	int major, minor, patch;
	size_t i;

	if (gobin__parse_version(s, &major, &minor, &patch))
		return -EINVAL;
	for (i = 0; i < o->nrels; i++) {
		if (!release_cmp(&o->rels[i], major, minor, patch))
			return (int)i;
	}
	return -ENOENT;
}

static int parse_versions(struct offsets *o, const cJSON *versions)
{
	const char *what = o->fields->what;
	size_t i, j, nfields = o->fields->count;
	const cJSON *v;
	int n;

	if (!cJSON_IsArray(versions)) {
		pr_err("cannot load the %s offset table: 'versions' %s", what,
		       versions ? "is not an array" : "is missing");
		return -EINVAL;
	}
	n = cJSON_GetArraySize(versions);
	if (n <= 0) {
		pr_err("cannot load the %s offset table: 'versions' is empty", what);
		return -EINVAL;
	}
	o->rels = calloc(n, sizeof(*o->rels));
	o->cells = calloc((size_t)n * nfields, sizeof(*o->cells));
	if (!o->rels || !o->cells)
		return -ENOMEM;
	i = 0;
	cJSON_ArrayForEach(v, versions)
	{
		struct release *r = &o->rels[i];

		if (!cJSON_IsString(v) ||
		    gobin__parse_version(v->valuestring, &r->major, &r->minor, &r->patch)) {
			pr_err("cannot load the %s offset table: 'versions' entry %zu is not a "
			       "version",
			       what, i);
			return -EINVAL;
		}
		/* Lookups take the nearest release below, which needs the list in order. */
		if (i > 0 && release_cmp(&o->rels[i - 1], r->major, r->minor, r->patch) >= 0) {
			pr_err("cannot load the %s offset table: 'versions' is not sorted and "
			       "unique at '%s'",
			       what, v->valuestring);
			return -EINVAL;
		}
		/*
		 * The generator writes "1.22.0", never "go1.22", "v1.22.0" or "1.22rc1": anything
		 * else was edited by hand, and ranges name releases by these exact strings.
		 */
		snprintf(r->name, sizeof(r->name), "%d.%d.%d", r->major, r->minor, r->patch);
		if (strcmp(r->name, v->valuestring)) {
			pr_err("cannot load the %s offset table: 'versions' entry '%s' is not "
			       "written as MAJOR.MINOR.PATCH",
			       what, v->valuestring);
			return -EINVAL;
		}
		r->offs = o->cells + i * nfields;
		for (j = 0; j < nfields; j++)
			r->offs[j] = -1;
		i++;
	}
	o->nrels = i;
	return 0;
}

/* One range: {"from": "1.22.0", "to": "1.22.12", "offset": 56}, from and to listed releases. */
static int parse_range(struct offsets *o, size_t f, const cJSON *range, int idx)
{
	const char *name = o->fields->names[f], *what = o->fields->what;
	const cJSON *from, *to, *off;
	int lo, hi, i;
	double d;

	if (!cJSON_IsObject(range)) {
		pr_err("cannot load the %s offset table: '%s' range %d is not an object", what,
		       name, idx);
		return -EINVAL;
	}
	from = cJSON_GetObjectItemCaseSensitive(range, "from");
	to = cJSON_GetObjectItemCaseSensitive(range, "to");
	off = cJSON_GetObjectItemCaseSensitive(range, "offset");
	if (!cJSON_IsString(from) || !cJSON_IsString(to)) {
		pr_err("cannot load the %s offset table: '%s' range %d: 'from' and 'to' must be "
		       "strings",
		       what, name, idx);
		return -EINVAL;
	}
	lo = release_index(o, from->valuestring);
	hi = release_index(o, to->valuestring);
	if (lo < 0 || hi < 0) {
		pr_err("cannot load the %s offset table: '%s' range %d: '%s' is %s", what, name,
		       idx, lo < 0 ? from->valuestring : to->valuestring,
		       (lo < 0 ? lo : hi) == -EINVAL ? "not a version" : "not in 'versions'");
		return -EINVAL;
	}
	if (lo > hi) {
		pr_err("cannot load the %s offset table: '%s' range %d: 'from' %s is after 'to' %s",
		       what, name, idx, from->valuestring, to->valuestring);
		return -EINVAL;
	}
	if (!cJSON_IsNumber(off)) {
		pr_err("cannot load the %s offset table: '%s' range %d: 'offset' %s", what, name,
		       idx, off ? "is not a number" : "is missing");
		return -EINVAL;
	}
	/* cJSON keeps numbers as doubles; 56.5 or 1e300 must not be truncated into an offset. */
	d = off->valuedouble;
	if (!(d >= 0 && d <= OFFSET_MAX) || d != (double)(int64_t)d) {
		pr_err("cannot load the %s offset table: '%s' range %d: 'offset' %g is not an "
		       "integer in 0..%d",
		       what, name, idx, d, OFFSET_MAX);
		return -EINVAL;
	}
	for (i = lo; i <= hi; i++) {
		if (o->rels[i].offs[f] >= 0) {
			pr_err("cannot load the %s offset table: '%s' range %d overlaps another at "
			       "%s",
			       what, name, idx, o->rels[i].name);
			return -EINVAL;
		}
		o->rels[i].offs[f] = (int64_t)d;
	}
	return 0;
}

static int parse_fields(struct offsets *o, const cJSON *fields)
{
	const struct offsets_fields *want = o->fields;
	const cJSON *field, *range;
	bool *seen = NULL;
	int idx, err = 0;
	size_t f;

	if (!cJSON_IsObject(fields)) {
		pr_err("cannot load the %s offset table: 'fields' %s", want->what,
		       fields ? "is not an object" : "is missing");
		return -EINVAL;
	}
	seen = calloc(want->count, sizeof(*seen));
	if (!seen)
		return -ENOMEM;
	cJSON_ArrayForEach(field, fields)
	{
		for (f = 0; f < want->count; f++) {
			if (!strcmp(field->string, want->names[f]))
				break;
		}
		if (f == want->count) {
			/* A newer generator may know more fields, of no use to this gospan. */
			pr_debug("%s offset table: ignoring unknown field '%s'", want->what,
				 field->string);
			continue;
		}
		if (seen[f]) {
			pr_err("cannot load the %s offset table: field '%s' appears twice",
			       want->what, field->string);
			err = -EINVAL;
			goto cleanup;
		}
		seen[f] = true;
		if (!cJSON_IsArray(field)) {
			pr_err("cannot load the %s offset table: field '%s' is not an array",
			       want->what, field->string);
			err = -EINVAL;
			goto cleanup;
		}
		idx = 0;
		cJSON_ArrayForEach(range, field)
		{
			err = parse_range(o, f, range, idx++);
			if (err)
				goto cleanup;
		}
	}
cleanup:
	free(seen);
	return err;
}

struct offsets *offsets__parse_table(const struct offsets_fields *fields, const char *json,
				     size_t len)
{
	const char *end = NULL, *why;
	const cJSON *schema;
	struct offsets *o;
	cJSON *root = NULL;
	int err;

	if (!fields || !fields->count || !fields->names || !json) {
		errno = EINVAL;
		return NULL;
	}
	o = calloc(1, sizeof(*o));
	if (!o)
		return NULL;
	o->fields = fields;
	root = cJSON_ParseWithLengthOpts(json, len, &end, false);
	if (!root) {
		pr_err("cannot load the %s offset table: not valid JSON at byte %td", fields->what,
		       end ? end - json : (ptrdiff_t)0);
		err = -EINVAL;
		goto cleanup;
	}
	/* Without require_null_terminated cJSON stops after the value; text after it is damage. */
	while (end && end < json + len && strchr(" \t\r\n", *end) && *end)
		end++;
	if (end && end < json + len && *end) {
		pr_err("cannot load the %s offset table: unexpected text after the JSON at "
		       "byte %td",
		       fields->what, end - json);
		err = -EINVAL;
		goto cleanup;
	}
	if (!cJSON_IsObject(root)) {
		pr_err("cannot load the %s offset table: the top level is not an object",
		       fields->what);
		err = -EINVAL;
		goto cleanup;
	}
	schema = cJSON_GetObjectItemCaseSensitive(root, "schema");
	if (!cJSON_IsNumber(schema) || schema->valuedouble != OFFSETS_SCHEMA) {
		if (!schema)
			why = "is missing";
		else if (!cJSON_IsNumber(schema))
			why = "is not a number";
		else
			why = "names another version";
		pr_err("cannot load the %s offset table: 'schema' %s; this gospan reads schema %d",
		       fields->what, why, OFFSETS_SCHEMA);
		err = -EINVAL;
		goto cleanup;
	}
	err = parse_versions(o, cJSON_GetObjectItemCaseSensitive(root, "versions"));
	if (err)
		goto cleanup;
	err = parse_fields(o, cJSON_GetObjectItemCaseSensitive(root, "fields"));
	if (err)
		goto cleanup;
	pr_debug("%s offset table: %zu releases, %s to %s", fields->what, o->nrels, o->rels[0].name,
		 o->rels[o->nrels - 1].name);
cleanup:
	cJSON_Delete(root);
	if (err) {
		offsets__free(o);
		errno = -err;
		return NULL;
	}
	return o;
}

struct offsets *offsets__parse(const char *json, size_t len)
{
	return offsets__parse_table(&go_offsets_fields, json, len);
}

struct offsets *grpc_offsets__parse(const char *json, size_t len)
{
	return offsets__parse_table(&grpc_offsets_fields, json, len);
}

struct offsets *pgx_offsets__parse(const char *json, size_t len)
{
	return offsets__parse_table(&pgx_offsets_fields, json, len);
}

struct offsets *redis_offsets__parse(const char *json, size_t len)
{
	return offsets__parse_table(&redis_offsets_fields, json, len);
}

void offsets__free(struct offsets *o)
{
	if (!o)
		return;
	free(o->cells);
	free(o->rels);
	free(o);
}

const struct offsets_fields *offsets__fields(const struct offsets *o)
{
	return o->fields;
}

int module_tables__load(struct module_tables *t)
{
	const struct module_def *d;
	size_t i;
	int err;

	memset(t, 0, sizeof(*t));
	for (i = 0; i < ARRAY_SIZE(module_defs); i++) {
		d = &module_defs[i];
		t->by_module[i] = offsets__parse_table(d->fields, d->json, d->json_end - d->json);
		if (!t->by_module[i]) {
			err = -errno;
			module_tables__free(t);
			return err;
		}
	}
	return 0;
}

void module_tables__free(struct module_tables *t)
{
	size_t i;

	/* const for their users; module_tables__load() made them. */
	for (i = 0; i < ARRAY_SIZE(t->by_module); i++) {
		offsets__free((struct offsets *)t->by_module[i]);
		t->by_module[i] = NULL;
	}
}

void offsets__explain_miss(const struct offsets *o, int major, int minor, int patch)
{
	pr_err("no offsets for Go %d.%d.%d: the tables (Go %s to %s) have no %d.%d release at or "
	       "below it and the binary carries no DWARF to read them from; regenerate the tables "
	       "with 'make offsets'",
	       major, minor, patch, o->nrels ? o->rels[0].name : "-",
	       o->nrels ? o->rels[o->nrels - 1].name : "-", major, minor);
}

/* Reads a decimal number of at most 9 digits (no sign, no leading zero but "0") at *S. */
static int parse_number(const char **s, int *out)
{
	const char *p = *s;
	int n = 0, digits = 0;

	while (*p >= '0' && *p <= '9') {
		if (++digits > 9 || (digits == 2 && n == 0))
			return -EINVAL;
		n = n * 10 + (*p++ - '0');
	}
	if (!digits)
		return -EINVAL;
	*s = p;
	*out = n;
	return 0;
}

int offsets__parse_module_version(const char *s, struct offsets_version *v)
{
	const char *p = s;
	struct offsets_version r = { 0 };

	if (!s || !v || *p++ != 'v')
		return -EINVAL;
	if (parse_number(&p, &r.major) || *p++ != '.' || parse_number(&p, &r.minor) ||
	    *p++ != '.' || parse_number(&p, &r.patch))
		return -EINVAL;
	/*
	 * Semantic versioning: "-..." is a pre-release, and sorts before the release itself;
	 * Go's pseudo-versions are pre-releases of the release after their base
	 * ("v1.62.2-0.2024...-hash" is a commit after v1.62.1). "+..." is build metadata, which
	 * does not take part in ordering ("+incompatible").
	 */
	if (*p == '-') {
		if (!p[1] || p[1] == '+')
			return -EINVAL;
		r.prerelease = true;
		p += strcspn(p, "+");
	}
	if (*p == '+' && !p[1])
		return -EINVAL;
	if (*p && *p != '+')
		return -EINVAL;
	*v = r;
	return 0;
}

/* Whether release R may stand for V under HOW: at or below it (strictly, for a pre-release). */
static bool row_fits(const struct release *r, const struct offsets_version *v,
		     enum offsets_match how)
{
	int cmp = release_cmp(r, v->major, v->minor, v->patch);

	if (r->major != v->major || cmp > 0 || (cmp == 0 && v->prerelease))
		return false;
	return how != OFFSETS_MATCH_SAME_MINOR || r->minor == v->minor;
}

/*
 * The row for V under HOW, or NULL. The generator lists every release where a layout changed
 * within a minor (Go 1.26.11 moved response.status), so the nearest listed release at or below
 * the target has its layout. The list is sorted: the last row that fits is the nearest.
 */
static const struct release *find_row(const struct offsets *o, const struct offsets_version *v,
				      enum offsets_match how)
{
	const struct release *best = NULL;
	size_t i;

	for (i = 0; i < o->nrels; i++) {
		if (row_fits(&o->rels[i], v, how))
			best = &o->rels[i];
	}
	return best;
}

int offsets__find_version(const struct offsets *o, const struct offsets_version *v,
			  enum offsets_match how, int64_t *out, size_t nout, const char **resolved)
{
	const struct release *best;

	if (!o || !o->nrels || !v || !out || nout != o->fields->count ||
	    (how != OFFSETS_MATCH_SAME_MINOR && how != OFFSETS_MATCH_NEAREST_BELOW))
		return -EINVAL;
	best = find_row(o, v, how);
	if (!best)
		return -ENOENT; /* the caller may still have DWARF; it explains a refusal */
	memcpy(out, best->offs, nout * sizeof(*out));
	if (resolved)
		*resolved = best->name;
	return 0;
}

int offsets__find(const struct offsets *o, int major, int minor, int patch,
		  int64_t out[GO_FIELD__COUNT], const char **resolved)
{
	const struct offsets_version v = { .major = major, .minor = minor, .patch = patch };
	const char *name;
	int err;

	/* Across Go minors nothing carries over: a new minor is a new runtime. */
	err = offsets__find_version(o, &v, OFFSETS_MATCH_SAME_MINOR, out, GO_FIELD__COUNT, &name);
	if (err)
		return err;
	if (find_row(o, &v, OFFSETS_MATCH_SAME_MINOR)->patch != patch)
		pr_debug("Go %d.%d.%d is not in the offset tables; using Go %s, the nearest "
			 "below it",
			 major, minor, patch, name);
	if (resolved)
		*resolved = name;
	return 0;
}

/* How a module table fits a version: the row found, or why there is none. */
enum row_fit {
	ROW_EXACT,	/* the version is listed */
	ROW_BELOW,	/* the nearest listed release below it, inside the table's range */
	ROW_NEWER,	/* newer than the table: its newest release */
	ROW_NO_TABLE,	/* no table */
	ROW_NO_VERSION, /* not a release version: "(devel)" */
	ROW_OLDER,	/* older than the table */
};

/* Looks VERSION up in TABLE: ROW (the table's field count) and *RESOLVED are filled on a fit. */
static enum row_fit module_row(const struct offsets *table, const char *version, int64_t *row,
			       const char **resolved)
{
	const struct release *r, *last;
	struct offsets_version v;

	if (!table)
		return ROW_NO_TABLE;
	if (offsets__parse_module_version(version, &v))
		return ROW_NO_VERSION;
	r = find_row(table, &v, OFFSETS_MATCH_NEAREST_BELOW);
	if (!r)
		return ROW_OLDER;
	memcpy(row, r->offs, table->fields->count * sizeof(*row));
	*resolved = r->name;
	if (!v.prerelease && !release_cmp(r, v.major, v.minor, v.patch))
		return ROW_EXACT;
	last = &table->rels[table->nrels - 1];
	return r == last && release_cmp(last, v.major, v.minor, v.patch) < 0 ? ROW_NEWER :
									     ROW_BELOW;
}

/*
 * Says what the table of module WHAT ("grpc-go") did for VERSION of the binary at PATH, once it
 * is known that the binary has no DWARF to read instead: which release stood in for one it does
 * not list, or why none could.
 */
static void say_row(enum row_fit fit, const char *what, const struct offsets *table,
		    const char *path, const char *version, const char *resolved)
{
	switch (fit) {
	case ROW_EXACT:
	case ROW_NO_TABLE:
		break;
	case ROW_BELOW:
		pr_info("'%s' has %s %s, which the %s offset table does not list: using v%s, the "
			"nearest release below it",
			path, what, version, what, resolved);
		break;
	case ROW_NEWER:
		/* A newer release may have moved a member; one within the table's range has not. */
		pr_warn("'%s' has %s %s, newer than the %s offset table: using the offsets of v%s, "
			"its newest release, which may no longer fit; DWARF in the binary or "
			"'make offsets' removes the doubt",
			path, what, version, what, resolved);
		break;
	case ROW_NO_VERSION:
		pr_info("'%s' has %s '%s', which is no release version (a directory replacement?): "
			"the %s offset table cannot be used for it",
			path, what, version, what);
		break;
	case ROW_OLDER:
		pr_info("'%s' has %s %s, older than the %s offset table (v%s to v%s)", path, what,
			version, what, table->rels[0].name, table->rels[table->nrels - 1].name);
		break;
	}
}

/* The fields of MODULE's table, where gospan has one, else TABLE's; NULL without either. */
static const struct offsets_fields *module_fields(const struct offsets *table, const char *module)
{
	size_t i;

	for (i = 0; i < ARRAY_SIZE(module_defs); i++) {
		if (!strcmp(module_defs[i].path, module))
			return module_defs[i].fields;
	}
	return table ? table->fields : NULL;
}

int module_offsets__for_binary(const struct offsets *table, const char *module, const char *path,
			       const struct gobin *gb, int64_t *out, char *source,
			       size_t source_len)
{
	const struct offsets_fields *fields;
	const char *version, *resolved = NULL;
	int64_t row[MODULE_FIELDS_MAX];
	enum row_fit fit;
	bool have_row;
	size_t f;
	int err;

	if (!out || !module)
		return -EINVAL;
	fields = module_fields(table, module);
	if (!fields || fields->count > MODULE_FIELDS_MAX)
		return -EINVAL;
	for (f = 0; f < fields->count; f++)
		out[f] = -1;
	/* Another module's table would hand BPF offsets into the wrong structs. */
	if ((table && table->fields != fields) || !path || !gb || !source || !source_len)
		return -EINVAL;
	source[0] = '\0';
	version = gobin__module_version(gb, module);
	if (!version)
		return -ENOENT;
	fit = module_row(table, version, row, &resolved);
	have_row = fit == ROW_EXACT || fit == ROW_BELOW || fit == ROW_NEWER;
	/*
	 * DWARF first: it describes the binary's exact layout, whatever release (or fork, or
	 * newer dependency of the module: grpc-go's genproto) it was built with, which the table
	 * can only infer from the version.
	 */
	err = dwarf__read_fields(path, fields, out);
	if (!err) {
		for (f = 0; f < fields->count; f++) {
			/* DWARF's -1 only means the binary does not link that part of it. */
			if (have_row && out[f] >= 0 && row[f] != out[f])
				pr_warn("'%s' is at offset %lld in the DWARF of '%s' but %lld "
					"in the %s offset table for v%s: using DWARF",
					fields->names[f], (long long)out[f], path,
					(long long)row[f], fields->what, resolved);
		}
		snprintf(source, source_len, "DWARF");
		return 0;
	}
	if (err != -ENODATA)
		pr_warn("cannot read the %s offsets from the DWARF of '%s'%s", fields->what, path,
			have_row ? ": using the offset table" : "");
	say_row(fit, fields->what, table, path, version, resolved);
	if (!have_row)
		return -ENOTSUP;
	memcpy(out, row, fields->count * sizeof(*out));
	snprintf(source, source_len, "table v%s", resolved);
	return 0;
}

int grpc_offsets__for_binary(const struct offsets *table, const char *path, const struct gobin *gb,
			     int64_t out[GRPC_FIELD__COUNT], char *source, size_t source_len)
{
	return module_offsets__for_binary(table, "google.golang.org/grpc", path, gb, out, source,
					  source_len);
}
