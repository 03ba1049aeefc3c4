/* SPDX-License-Identifier: MIT */
/*
 * The struct members gospan reads in a Go binary: the Go runtime's and net/http's, and those of
 * the modules it traces (grpc-go, pgx, go-redis), each list by the name offsets/gen and the DWARF
 * give it ("net/http.Request.Method"). What the offset tables (offsets.c) and the DWARF reader
 * (dwarf.c) both fill in, kept apart from either so that neither depends on the other's parts.
 */
#ifndef GOSPAN_FIELDS_H
#define GOSPAN_FIELDS_H

#include <stddef.h>

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

#endif
