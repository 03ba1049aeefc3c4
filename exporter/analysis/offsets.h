/* SPDX-License-Identifier: MIT */
/*
 * Struct member offsets per Go release and per release of the modules gospan traces (grpc-go,
 * pgx, go-redis), from the JSON tables in offsets/ (embedded in the binary). BPF code holds no
 * version-specific numbers: everything it needs to walk Go's and those modules' structs comes
 * from here.
 */
#ifndef GOSPAN_OFFSETS_H
#define GOSPAN_OFFSETS_H

#include <stdbool.h>
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
	GO_FIELD_TCPADDR_IP,
	GO_FIELD_TCPADDR_PORT,
	GO_FIELD_VALUECTX_KEY,
	GO_FIELD_VALUECTX_VAL,
	GO_FIELD_SQL_STMT_QUERY,
	GO_FIELD__COUNT,
};

/* Names as in the tables: "runtime.g.goid", "net/http.Request.Method", ... */
extern const char *const go_field_names[GO_FIELD__COUNT];

/*
 * The fields gospan reads from grpc-go's (google.golang.org/grpc) structs, from
 * offsets/grpc_offsets.json, keyed by grpc-go's module version. Keep in step with
 * grpc_field_names[] and offsets/gen. A release without a member has -1 for it: before 1.69
 * the server's stream is a plain Stream and there is no ServerStream; from 1.60 http2Server
 * has a peer.Peer value (whose LocalAddr is new in 1.60) instead of remoteAddr and localAddr.
 *
 * GRPC_FIELD_SERVER_STREAM_STREAM is where ServerStream embeds the Stream, and
 * GRPC_FIELD_SERVER_STREAM_STREAM_PTR the same offset, present only where the embedded member
 * is a *Stream (1.69 to 1.76): there the Stream's members are reached through a load, from
 * 1.77, where ServerStream embeds the Stream itself, by adding the two offsets.
 */
enum grpc_field {
	GRPC_FIELD_STREAM_METHOD,
	GRPC_FIELD_STREAM_CTX,
	GRPC_FIELD_STREAM_ID,
	GRPC_FIELD_SERVER_STREAM_STREAM,
	GRPC_FIELD_SERVER_STREAM_STREAM_PTR,
	GRPC_FIELD_HTTP2SERVER_REMOTE_ADDR,
	GRPC_FIELD_HTTP2SERVER_LOCAL_ADDR,
	GRPC_FIELD_HTTP2SERVER_PEER,
	GRPC_FIELD_PEER_ADDR,
	GRPC_FIELD_PEER_LOCAL_ADDR,
	GRPC_FIELD_STATUS_S,
	GRPC_FIELD_ERROR_S,
	GRPC_FIELD_SPB_CODE,
	GRPC_FIELD_SPB_MESSAGE,
	GRPC_FIELD_CSATTEMPT_CS,
	GRPC_FIELD_CLIENTCONN_TARGET,
	GRPC_FIELD__COUNT,
};

/* "google.golang.org/grpc/internal/transport.Stream.method", ... */
extern const char *const grpc_field_names[GRPC_FIELD__COUNT];

/*
 * The fields gospan reads from pgx v5's (github.com/jackc/pgx/v5) structs, from
 * offsets/pgx_offsets.json, keyed by pgx's module version. Keep in step with pgx_field_names[]
 * and offsets/gen. A Conn's config is a *ConnConfig, which embeds a pgconn.Config by value:
 * the host is at CONNCONFIG_CONFIG + CONFIG_HOST from where CONN_CONFIG points. Early v5
 * releases had the batch's queries and a queued query's text unexported: each release has one of
 * BATCH_QUEUED and BATCH_QUEUED_OLD (and of QUERY_SQL and QUERY_SQL_OLD), the other is -1.
 */
enum pgx_field {
	PGX_FIELD_CONN_CONFIG,
	PGX_FIELD_CONNCONFIG_CONFIG,
	PGX_FIELD_CONFIG_HOST,
	PGX_FIELD_CONFIG_PORT,
	PGX_FIELD_BATCH_QUEUED,
	PGX_FIELD_BATCH_QUEUED_OLD,
	PGX_FIELD_QUERY_SQL,
	PGX_FIELD_QUERY_SQL_OLD,
	PGX_FIELD__COUNT,
};

/* "github.com/jackc/pgx/v5.Conn.config", ... */
extern const char *const pgx_field_names[PGX_FIELD__COUNT];

/*
 * The fields gospan reads from go-redis v9's (github.com/redis/go-redis/v9) structs, from
 * offsets/redis_offsets.json, keyed by go-redis's module version. Keep in step with
 * redis_field_names[] and offsets/gen.
 */
enum redis_field {
	REDIS_FIELD_BASECLIENT_OPT,
	REDIS_FIELD_OPTIONS_ADDR,
	REDIS_FIELD_BASECMD_ARGS,
	REDIS_FIELD__COUNT,
};

/* "github.com/redis/go-redis/v9.baseClient.opt", ... */
extern const char *const redis_field_names[REDIS_FIELD__COUNT];

/* What one table lists: its fields, in the order of the caller's enum; its name for messages. */
struct offsets_fields {
	const char *what; /* "Go", "grpc-go", "pgx", "go-redis" */
	const char *const *names;
	size_t count;
};

extern const struct offsets_fields go_offsets_fields;
extern const struct offsets_fields grpc_offsets_fields;
extern const struct offsets_fields pgx_offsets_fields, redis_offsets_fields;

struct offsets;

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
 * The offsets of the fields of a module's table (grpc-go's, pgx's, go-redis's) for the Go binary
 * at PATH, whose buildinfo is GB, which may use MODULE (as buildinfo names it:
 * "github.com/jackc/pgx/v5"). TABLE is that module's table, or NULL (DWARF only) for a module
 * gospan has a table of: google.golang.org/grpc, github.com/jackc/pgx/v5 and
 * github.com/redis/go-redis/v9. OUT has one entry per field of the table (PGX_FIELD__COUNT, ...).
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
