/* SPDX-License-Identifier: MIT */
/*
 * Struct member offsets per Go version, from the JSON tables in offsets/ (embedded in the binary).
 * BPF code holds no version-specific numbers: everything it needs to walk Go structs comes from here.
 */
#ifndef GOSPAN_OFFSETS_H
#define GOSPAN_OFFSETS_H

#include <stddef.h>
#include <stdint.h>

/* The fields gospan reads. Keep in step with go_field_names[] and offsets/gen. */
enum go_field {
	GO_FIELD_G_GOID,
	GO_FIELD_REQ_METHOD,
	GO_FIELD_REQ_URL,
	GO_FIELD_REQ_PROTO,
	GO_FIELD_REQ_HEADER,
	GO_FIELD_REQ_CONTENT_LENGTH,
	GO_FIELD_REQ_HOST,
	GO_FIELD_REQ_REMOTE_ADDR,
	GO_FIELD_REQ_TLS,
	GO_FIELD_REQ_PATTERN,
	GO_FIELD_REQ_PAT,
	GO_FIELD_PATTERN_STR,
	GO_FIELD_URL_PATH,
	GO_FIELD_RESPONSE_STATUS,
	GO_FIELD_G_PARENT_GOID,
	GO_FIELD_URL_SCHEME,
	GO_FIELD_URL_USER,
	GO_FIELD_URL_HOST,
	GO_FIELD_URL_RAW_QUERY,
	GO_FIELD_RESP_STATUS_CODE,
	GO_FIELD_BUFIO_BUF,
	GO_FIELD_BUFIO_N,
	GO_FIELD_HMAP_COUNT,
	GO_FIELD_HMAP_B,
	GO_FIELD_HMAP_BUCKETS,
	GO_FIELD_SWISS_USED,
	GO_FIELD_SWISS_DIR_PTR,
	GO_FIELD_SWISS_DIR_LEN,
	GO_FIELD_SWISS_TABLE_GROUPS,
	GO_FIELD_SWISS_GROUPS_DATA,
	GO_FIELD_SWISS_GROUPS_MASK,
	GO_FIELD_RESP_PROTO,
	GO_FIELD__COUNT,
};

/* Names as in the tables: "runtime.g.goid", "net/http.Request.Method", ... */
extern const char *const go_field_names[GO_FIELD__COUNT];

struct offsets;

/* Parses a table (JSON text of LEN bytes). NULL with errno set when malformed; the reason is logged. */
struct offsets *offsets__parse(const char *json, size_t len);
void offsets__free(struct offsets *o);

/*
 * Fills OUT with the offsets for Go MAJOR.MINOR.PATCH: the exact version when the table has it,
 * else the nearest release at or below it within the same minor. A field the version does not
 * have is -1. -ENOENT, silently, when no table entry applies: the target's DWARF may still have
 * the offsets. *RESOLVED, when not NULL, gets the table version used ("1.22.12").
 */
int offsets__find(const struct offsets *o, int major, int minor, int patch,
		  int64_t out[GO_FIELD__COUNT], const char **resolved);

/* Logs why MAJOR.MINOR.PATCH cannot be traced: no table entry and no DWARF, and what to do. */
void offsets__explain_miss(const struct offsets *o, int major, int minor, int patch);

#endif
