// SPDX-License-Identifier: MIT
/* The names of the fields gospan reads, as the offset tables and the DWARF give them. */
#include "analysis/fields.h"

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
	[GO_FIELD_TCPADDR_IP] = "net.TCPAddr.IP",
	[GO_FIELD_TCPADDR_PORT] = "net.TCPAddr.Port",
	[GO_FIELD_VALUECTX_KEY] = "context.valueCtx.key",
	[GO_FIELD_VALUECTX_VAL] = "context.valueCtx.val",
	[GO_FIELD_SQL_STMT_QUERY] = "database/sql.Stmt.query",
};

#define GRPC_TRANSPORT "google.golang.org/grpc/internal/transport."
#define GRPC_STATUS "google.golang.org/grpc/internal/status."
#define GRPC_PEER "google.golang.org/grpc/peer."
#define RPC_STATUS "google.golang.org/genproto/googleapis/rpc/status."

const char *const grpc_field_names[GRPC_FIELD__COUNT] = {
	[GRPC_FIELD_STREAM_METHOD] = GRPC_TRANSPORT "Stream.method",
	[GRPC_FIELD_STREAM_CTX] = GRPC_TRANSPORT "Stream.ctx",
	[GRPC_FIELD_STREAM_ID] = GRPC_TRANSPORT "Stream.id",
	[GRPC_FIELD_SERVER_STREAM_STREAM] = GRPC_TRANSPORT "ServerStream.Stream",
	/* "*Stream": listed only where the member is a pointer (offsets/README.md). */
	[GRPC_FIELD_SERVER_STREAM_STREAM_PTR] = GRPC_TRANSPORT "ServerStream.*Stream",
	[GRPC_FIELD_HTTP2SERVER_REMOTE_ADDR] = GRPC_TRANSPORT "http2Server.remoteAddr",
	[GRPC_FIELD_HTTP2SERVER_LOCAL_ADDR] = GRPC_TRANSPORT "http2Server.localAddr",
	[GRPC_FIELD_HTTP2SERVER_PEER] = GRPC_TRANSPORT "http2Server.peer",
	[GRPC_FIELD_PEER_ADDR] = GRPC_PEER "Peer.Addr",
	[GRPC_FIELD_PEER_LOCAL_ADDR] = GRPC_PEER "Peer.LocalAddr",
	[GRPC_FIELD_STATUS_S] = GRPC_STATUS "Status.s",
	[GRPC_FIELD_ERROR_S] = GRPC_STATUS "Error.s",
	[GRPC_FIELD_SPB_CODE] = RPC_STATUS "Status.Code",
	[GRPC_FIELD_SPB_MESSAGE] = RPC_STATUS "Status.Message",
	[GRPC_FIELD_CSATTEMPT_CS] = "google.golang.org/grpc.csAttempt.cs",
	[GRPC_FIELD_CLIENTCONN_TARGET] = "google.golang.org/grpc.ClientConn.target",
};

#define PGX "github.com/jackc/pgx/v5."
#define PGCONN "github.com/jackc/pgx/v5/pgconn."

const char *const pgx_field_names[PGX_FIELD__COUNT] = {
	[PGX_FIELD_CONN_CONFIG] = PGX "Conn.config",
	[PGX_FIELD_CONNCONFIG_CONFIG] = PGX "ConnConfig.Config",
	[PGX_FIELD_CONFIG_HOST] = PGCONN "Config.Host",
	[PGX_FIELD_CONFIG_PORT] = PGCONN "Config.Port",
	[PGX_FIELD_BATCH_QUEUED] = PGX "Batch.QueuedQueries",
	[PGX_FIELD_BATCH_QUEUED_OLD] = PGX "Batch.queuedQueries",
	[PGX_FIELD_QUERY_SQL] = PGX "QueuedQuery.SQL",
	[PGX_FIELD_QUERY_SQL_OLD] = PGX "QueuedQuery.query",
};

#define REDIS "github.com/redis/go-redis/v9."

const char *const redis_field_names[REDIS_FIELD__COUNT] = {
	[REDIS_FIELD_BASECLIENT_OPT] = REDIS "baseClient.opt",
	[REDIS_FIELD_OPTIONS_ADDR] = REDIS "Options.Addr",
	[REDIS_FIELD_BASECMD_ARGS] = REDIS "baseCmd.args",
};

const struct offsets_fields go_offsets_fields = {
	.what = "Go",
	.names = go_field_names,
	.count = GO_FIELD__COUNT,
};

const struct offsets_fields grpc_offsets_fields = {
	.what = "grpc-go",
	.names = grpc_field_names,
	.count = GRPC_FIELD__COUNT,
};

const struct offsets_fields pgx_offsets_fields = {
	.what = "pgx",
	.names = pgx_field_names,
	.count = PGX_FIELD__COUNT,
};

const struct offsets_fields redis_offsets_fields = {
	.what = "go-redis",
	.names = redis_field_names,
	.count = REDIS_FIELD__COUNT,
};
