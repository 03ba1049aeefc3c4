/* SPDX-License-Identifier: MIT */
/*
 * Struct member offsets per Go release and per release of the modules gospan traces (grpc-go,
 * pgx, go-redis, the routers gin, echo, chi and gorilla/mux: GOSPAN_MODULE_TABLES in fields.h),
 * from the JSON tables in offsets/ (embedded in the binary). BPF code holds no version-specific
 * numbers: everything it needs to walk Go's and those modules' structs comes from here.
 */
#ifndef GOSPAN_OFFSETS_H
#define GOSPAN_OFFSETS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "analysis/fields.h"

struct offsets;

#define MODULE_TABLE_ONE(name, path) +1
/* How many modules gospan has a table of. */
enum { MODULE_TABLES__COUNT = 0 GOSPAN_MODULE_TABLES(MODULE_TABLE_ONE) };
#undef MODULE_TABLE_ONE

/*
 * The offset tables of the modules gospan knows, for target__analyse; any may be NULL. One member
 * per line of GOSPAN_MODULE_TABLES, named as there and in its order: grpc, pgx, redis, gin, echo
 * (echo v4), echo5 (echo v5), chi, mux (gorilla/mux). by_module[] is the same tables as an array,
 * for code that goes through every module.
 */
struct module_tables {
	union {
		struct {
#define MODULE_TABLE_MEMBER(name, path) const struct offsets *name;
			GOSPAN_MODULE_TABLES(MODULE_TABLE_MEMBER)
#undef MODULE_TABLE_MEMBER
		};
		const struct offsets *by_module[MODULE_TABLES__COUNT];
	};
};

/*
 * Parses the table of every module in GOSPAN_MODULE_TABLES that is built into gospan (embed.c)
 * into T. 0, or a negative errno with the reason logged and T all NULL: a bad table stops gospan
 * at start-up.
 */
int module_tables__load(struct module_tables *t);
/* Frees what module_tables__load() put in T, and sets T all NULL. */
void module_tables__free(struct module_tables *t);

/*
 * Parses a table (JSON text of LEN bytes) that lists FIELDS. NULL with errno set when malformed;
 * the reason is logged.
 */
struct offsets *offsets__parse_table(const struct offsets_fields *fields, const char *json,
				     size_t len);
/* offsets__parse_table() of the Go table (go_offsets.json). */
struct offsets *offsets__parse(const char *json, size_t len);
/* offsets__parse_table() of the grpc-go table (grpc_offsets.json). */
struct offsets *grpc_offsets__parse(const char *json, size_t len);
/* offsets__parse_table() of the pgx table (pgx_offsets.json). */
struct offsets *pgx_offsets__parse(const char *json, size_t len);
/* offsets__parse_table() of the go-redis table (redis_offsets.json). */
struct offsets *redis_offsets__parse(const char *json, size_t len);
void offsets__free(struct offsets *o);
/* The fields table O lists, those it was parsed with. */
const struct offsets_fields *offsets__fields(const struct offsets *o);

/*
 * A release as a lookup asks for it. PRERELEASE marks a version that comes before
 * MAJOR.MINOR.PATCH itself: a pre-release ("v1.63.0-dev") or a pseudo-version, whose
 * MAJOR.MINOR.PATCH is the release after the commit it was built from.
 */
struct offsets_version {
	int major, minor, patch;
	bool prerelease;
};

/*
 * Parses a module version as Go's buildinfo records it: "v1.62.1", "v1.63.0-dev",
 * "v1.62.2-0.20240301120000-0123456789ab" (a commit after v1.62.1), "v2.0.0+incompatible".
 * -EINVAL for anything else, such as "(devel)" (a directory replacement).
 */
int offsets__parse_module_version(const char *s, struct offsets_version *v);

/* Which listed release a lookup may fall back to when the version asked for is not listed. */
enum offsets_match {
	/*
	 * The nearest release at or below it in the same minor: Go's tables, where a new minor
	 * is a new runtime and nothing carries over from the last.
	 */
	OFFSETS_MATCH_SAME_MINOR,
	/*
	 * The nearest release at or below it in the same major: a module's table, which covers
	 * every minor in its range, so that a pseudo-version or a release newer than the table
	 * takes the last layout known before it.
	 */
	OFFSETS_MATCH_NEAREST_BELOW,
};

/*
 * Fills OUT[0..NOUT) (NOUT the table's field count) with the offsets for V: the exact release
 * when the table lists it, else the one HOW allows. A field the release does not have is -1.
 * -ENOENT, silently, when no row applies; -EINVAL on bad arguments. *RESOLVED, when not NULL,
 * gets the listed release used ("1.62.1").
 */
int offsets__find_version(const struct offsets *o, const struct offsets_version *v,
			  enum offsets_match how, int64_t *out, size_t nout, const char **resolved);

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

struct gobin;

/*
 * The offsets of the fields of a module's table (grpc-go's, pgx's, gin's, ...) for the Go binary
 * at PATH, whose buildinfo is GB, which may use MODULE (as buildinfo names it:
 * "github.com/jackc/pgx/v5"). TABLE is that module's table (its member of struct module_tables),
 * or NULL (DWARF only) for a module gospan has a table of (GOSPAN_MODULE_TABLES in fields.h).
 * OUT has one entry per field of the table (PGX_FIELD__COUNT, GIN_FIELD__COUNT, ...).
 *
 * From the binary's DWARF when it has some, else from the table row for the version of MODULE in
 * its buildinfo (its dependency, or its main module for the module's own programs): the nearest
 * listed release at or below it (a pseudo-version or pre-release comes before the release it
 * names; a release newer than the table takes its newest row, with a warning). Returns 0 with
 * OUT filled and SOURCE set to "DWARF" or "table v1.62.1"; -ENOENT when the binary does not use
 * MODULE (nothing logged); -ENOTSUP when it does but neither its DWARF nor the table can say: no
 * DWARF, and a version older than the table or none at all (a directory replacement records
 * "(devel)"), the reason logged at info level for the caller's own message to follow; -EINVAL on
 * bad arguments (another module's table, no table for a module gospan has none of, no room for
 * SOURCE). OUT is all -1 unless 0 is returned, wherever its size is known.
 */
int module_offsets__for_binary(const struct offsets *table, const char *module, const char *path,
			       const struct gobin *gb, int64_t *out, char *source,
			       size_t source_len);

/* module_offsets__for_binary() for google.golang.org/grpc. */
int grpc_offsets__for_binary(const struct offsets *table, const char *path, const struct gobin *gb,
			     int64_t out[GRPC_FIELD__COUNT], char *source, size_t source_len);

#endif
