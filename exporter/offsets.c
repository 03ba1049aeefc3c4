// SPDX-License-Identifier: MIT
/*
 * Offset tables: parses the JSON that offsets/gen writes (schema in offsets/README.md) into one
 * row of struct member offsets per Go release the generator built, and picks the row a target's
 * Go version needs. The table is checked in full when it is loaded, so a bad table stops gospan
 * at start-up instead of sending probes to wrong addresses later.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "gobin.h"
#include "log.h"
#include "offsets.h"

const char *const go_field_names[GO_FIELD__COUNT] = {
	[GO_FIELD_G_GOID] = "runtime.g.goid",
	[GO_FIELD_REQ_METHOD] = "net/http.Request.Method",
	[GO_FIELD_REQ_URL] = "net/http.Request.URL",
	[GO_FIELD_REQ_PROTO] = "net/http.Request.Proto",
	[GO_FIELD_REQ_HEADER] = "net/http.Request.Header",
	[GO_FIELD_REQ_CONTENT_LENGTH] = "net/http.Request.ContentLength",
	[GO_FIELD_REQ_HOST] = "net/http.Request.Host",
	[GO_FIELD_REQ_REMOTE_ADDR] = "net/http.Request.RemoteAddr",
	[GO_FIELD_REQ_TLS] = "net/http.Request.TLS",
	[GO_FIELD_REQ_PATTERN] = "net/http.Request.Pattern",
	[GO_FIELD_REQ_PAT] = "net/http.Request.pat",
	[GO_FIELD_PATTERN_STR] = "net/http.pattern.str",
	[GO_FIELD_URL_PATH] = "net/url.URL.Path",
	[GO_FIELD_RESPONSE_STATUS] = "net/http.response.status",
	[GO_FIELD_G_PARENT_GOID] = "runtime.g.parentGoid",
	[GO_FIELD_URL_SCHEME] = "net/url.URL.Scheme",
	[GO_FIELD_URL_USER] = "net/url.URL.User",
	[GO_FIELD_URL_HOST] = "net/url.URL.Host",
	[GO_FIELD_URL_RAW_QUERY] = "net/url.URL.RawQuery",
	[GO_FIELD_RESP_STATUS_CODE] = "net/http.Response.StatusCode",
	[GO_FIELD_BUFIO_BUF] = "bufio.Writer.buf",
	[GO_FIELD_BUFIO_N] = "bufio.Writer.n",
	[GO_FIELD_HMAP_COUNT] = "runtime.hmap.count",
	[GO_FIELD_HMAP_B] = "runtime.hmap.B",
	[GO_FIELD_HMAP_BUCKETS] = "runtime.hmap.buckets",
	[GO_FIELD_SWISS_USED] = "internal/runtime/maps.Map.used",
	[GO_FIELD_SWISS_DIR_PTR] = "internal/runtime/maps.Map.dirPtr",
	[GO_FIELD_SWISS_DIR_LEN] = "internal/runtime/maps.Map.dirLen",
	[GO_FIELD_SWISS_TABLE_GROUPS] = "internal/runtime/maps.table.groups",
	[GO_FIELD_SWISS_GROUPS_DATA] = "internal/runtime/maps.groupsReference.data",
	[GO_FIELD_SWISS_GROUPS_MASK] = "internal/runtime/maps.groupsReference.lengthMask",
	[GO_FIELD_RESP_PROTO] = "net/http.Response.Proto",
};

#define OFFSETS_SCHEMA 1
/*
 * The structs gospan reads are a few hundred bytes; an offset beyond this is a corrupt table,
 * and letting it through would have BPF read some unrelated part of the target's heap.
 */
#define OFFSET_MAX (1 << 16)

struct go_release {
	int major, minor, patch;
	char name[32]; /* "1.22.12", what offsets__find reports as resolved */
	int64_t offs[GO_FIELD__COUNT];
};

struct offsets {
	struct go_release *rels; /* sorted, oldest first */
	size_t nrels;
};

static int release_cmp(const struct go_release *r, int major, int minor, int patch)
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
	const cJSON *v;
	size_t i, j;
	int n;

	if (!cJSON_IsArray(versions)) {
		pr_err("cannot load offset table: 'versions' %s",
		       versions ? "is not an array" : "is missing");
		return -EINVAL;
	}
	n = cJSON_GetArraySize(versions);
	if (n <= 0) {
		pr_err("cannot load offset table: 'versions' is empty");
		return -EINVAL;
	}
	o->rels = calloc(n, sizeof(*o->rels));
	if (!o->rels)
		return -ENOMEM;
	i = 0;
	cJSON_ArrayForEach(v, versions)
	{
		struct go_release *r = &o->rels[i];

		if (!cJSON_IsString(v) ||
		    gobin__parse_version(v->valuestring, &r->major, &r->minor, &r->patch)) {
			pr_err("cannot load offset table: 'versions' entry %zu is not a Go version",
			       i);
			return -EINVAL;
		}
		/* Lookups take the nearest release below, which needs the list in order. */
		if (i > 0 && release_cmp(&o->rels[i - 1], r->major, r->minor, r->patch) >= 0) {
			pr_err("cannot load offset table: 'versions' is not sorted and unique "
			       "at '%s'",
			       v->valuestring);
			return -EINVAL;
		}
		/*
		 * The generator writes "1.22.0", never "go1.22" or "1.22rc1": anything else was
		 * edited by hand, and ranges name releases by these exact strings.
		 */
		snprintf(r->name, sizeof(r->name), "%d.%d.%d", r->major, r->minor, r->patch);
		if (strcmp(r->name, v->valuestring)) {
			pr_err("cannot load offset table: 'versions' entry '%s' is not written as "
			       "MAJOR.MINOR.PATCH",
			       v->valuestring);
			return -EINVAL;
		}
		for (j = 0; j < GO_FIELD__COUNT; j++)
			r->offs[j] = -1;
		i++;
	}
	o->nrels = i;
	return 0;
}

/* One range: {"from": "1.22.0", "to": "1.22.12", "offset": 56}, from and to listed releases. */
static int parse_range(struct offsets *o, enum go_field f, const cJSON *range, int idx)
{
	const char *name = go_field_names[f];
	const cJSON *from, *to, *off;
	int lo, hi, i;
	double d;

	if (!cJSON_IsObject(range)) {
		pr_err("cannot load offset table: '%s' range %d is not an object", name, idx);
		return -EINVAL;
	}
	from = cJSON_GetObjectItemCaseSensitive(range, "from");
	to = cJSON_GetObjectItemCaseSensitive(range, "to");
	off = cJSON_GetObjectItemCaseSensitive(range, "offset");
	if (!cJSON_IsString(from) || !cJSON_IsString(to)) {
		pr_err("cannot load offset table: '%s' range %d: 'from' and 'to' must be strings",
		       name, idx);
		return -EINVAL;
	}
	lo = release_index(o, from->valuestring);
	hi = release_index(o, to->valuestring);
	if (lo < 0 || hi < 0) {
		pr_err("cannot load offset table: '%s' range %d: '%s' is %s", name, idx,
		       lo < 0 ? from->valuestring : to->valuestring,
		       (lo < 0 ? lo : hi) == -EINVAL ? "not a Go version" : "not in 'versions'");
		return -EINVAL;
	}
	if (lo > hi) {
		pr_err("cannot load offset table: '%s' range %d: 'from' %s is after 'to' %s", name,
		       idx, from->valuestring, to->valuestring);
		return -EINVAL;
	}
	if (!cJSON_IsNumber(off)) {
		pr_err("cannot load offset table: '%s' range %d: 'offset' %s", name, idx,
		       off ? "is not a number" : "is missing");
		return -EINVAL;
	}
	/* cJSON keeps numbers as doubles; 56.5 or 1e300 must not be truncated into an offset. */
	d = off->valuedouble;
	if (!(d >= 0 && d <= OFFSET_MAX) || d != (double)(int64_t)d) {
		pr_err("cannot load offset table: '%s' range %d: 'offset' %g is not an integer in "
		       "0..%d",
		       name, idx, d, OFFSET_MAX);
		return -EINVAL;
	}
	for (i = lo; i <= hi; i++) {
		if (o->rels[i].offs[f] >= 0) {
			pr_err("cannot load offset table: '%s' range %d overlaps another at %s",
			       name, idx, o->rels[i].name);
			return -EINVAL;
		}
		o->rels[i].offs[f] = (int64_t)d;
	}
	return 0;
}

static int parse_fields(struct offsets *o, const cJSON *fields)
{
	bool seen[GO_FIELD__COUNT] = { false };
	const cJSON *field, *range;
	int f, idx, err;

	if (!cJSON_IsObject(fields)) {
		pr_err("cannot load offset table: 'fields' %s",
		       fields ? "is not an object" : "is missing");
		return -EINVAL;
	}
	cJSON_ArrayForEach(field, fields)
	{
		for (f = 0; f < GO_FIELD__COUNT; f++) {
			if (!strcmp(field->string, go_field_names[f]))
				break;
		}
		if (f == GO_FIELD__COUNT) {
			/* A newer generator may know more fields, of no use to this gospan. */
			pr_debug("offset table: ignoring unknown field '%s'", field->string);
			continue;
		}
		if (seen[f]) {
			pr_err("cannot load offset table: field '%s' appears twice", field->string);
			return -EINVAL;
		}
		seen[f] = true;
		if (!cJSON_IsArray(field)) {
			pr_err("cannot load offset table: field '%s' is not an array",
			       field->string);
			return -EINVAL;
		}
		idx = 0;
		cJSON_ArrayForEach(range, field)
		{
			err = parse_range(o, f, range, idx++);
			if (err)
				return err;
		}
	}
	return 0;
}

struct offsets *offsets__parse(const char *json, size_t len)
{
	const cJSON *schema;
	struct offsets *o;
	const char *end = NULL, *why;
	cJSON *root = NULL;
	int err;

	o = calloc(1, sizeof(*o));
	if (!o)
		return NULL;
	root = cJSON_ParseWithLengthOpts(json, len, &end, false);
	if (!root) {
		pr_err("cannot load offset table: not valid JSON at byte %td",
		       end ? end - json : (ptrdiff_t)0);
		err = -EINVAL;
		goto cleanup;
	}
	/* Without require_null_terminated cJSON stops after the value; text after it is damage. */
	while (end && end < json + len && strchr(" \t\r\n", *end) && *end)
		end++;
	if (end && end < json + len && *end) {
		pr_err("cannot load offset table: unexpected text after the JSON at byte %td",
		       end - json);
		err = -EINVAL;
		goto cleanup;
	}
	if (!cJSON_IsObject(root)) {
		pr_err("cannot load offset table: the top level is not an object");
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
		pr_err("cannot load offset table: 'schema' %s; this gospan reads schema %d", why,
		       OFFSETS_SCHEMA);
		err = -EINVAL;
		goto cleanup;
	}
	err = parse_versions(o, cJSON_GetObjectItemCaseSensitive(root, "versions"));
	if (err)
		goto cleanup;
	err = parse_fields(o, cJSON_GetObjectItemCaseSensitive(root, "fields"));
	if (err)
		goto cleanup;
	pr_debug("offset table: %zu Go releases, %s to %s", o->nrels, o->rels[0].name,
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

void offsets__free(struct offsets *o)
{
	if (!o)
		return;
	free(o->rels);
	free(o);
}

void offsets__explain_miss(const struct offsets *o, int major, int minor, int patch)
{
	pr_err("no offsets for Go %d.%d.%d: the tables (Go %s to %s) have no %d.%d release at or "
	       "below it and the binary carries no DWARF to read them from; regenerate the tables "
	       "with 'make offsets'",
	       major, minor, patch, o->nrels ? o->rels[0].name : "-",
	       o->nrels ? o->rels[o->nrels - 1].name : "-", major, minor);
}

int offsets__find(const struct offsets *o, int major, int minor, int patch,
		  int64_t out[GO_FIELD__COUNT], const char **resolved)
{
	const struct go_release *best = NULL;
	size_t i;

	if (!o || !o->nrels || !out)
		return -EINVAL;
	/*
	 * The generator lists every release where a layout changed within a minor (1.26.11 moved
	 * response.status), so the nearest listed release at or below the target has its layout.
	 * Across minors nothing carries over. The list is sorted: the last match is the nearest.
	 */
	for (i = 0; i < o->nrels; i++) {
		const struct go_release *r = &o->rels[i];

		if (r->major == major && r->minor == minor && r->patch <= patch)
			best = r;
	}
	if (!best)
		return -ENOENT; /* the caller may still have DWARF; it explains a refusal */
	if (best->patch != patch)
		pr_debug("Go %d.%d.%d is not in the offset tables; using Go %s, the nearest "
			 "below it",
			 major, minor, patch, best->name);
	memcpy(out, best->offs, sizeof(best->offs));
	if (resolved)
		*resolved = best->name;
	return 0;
}
