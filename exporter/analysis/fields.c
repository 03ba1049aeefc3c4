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
	[GO_FIELD_CONN_FD] = "net.conn.fd",
	[GO_FIELD_NETFD_RADDR] = "net.netFD.raddr",
	[GO_FIELD_H2_RW_RWS] = "net/http.http2responseWriter.rws",
	[GO_FIELD_H2_RWS_STATUS] = "net/http.http2responseWriterState.status",
	[GO_FIELD_H2I_RW_RWS] = "net/http/internal/http2.responseWriter.rws",
	[GO_FIELD_H2I_RWS_STATUS] = "net/http/internal/http2.responseWriterState.status",
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
	[PGX_FIELD_STDLIB_CONN] = "github.com/jackc/pgx/v5/stdlib.Conn.conn",
};

#define REDIS "github.com/redis/go-redis/v9."

const char *const redis_field_names[REDIS_FIELD__COUNT] = {
	[REDIS_FIELD_BASECLIENT_OPT] = REDIS "baseClient.opt",
	[REDIS_FIELD_OPTIONS_ADDR] = REDIS "Options.Addr",
	[REDIS_FIELD_BASECMD_ARGS] = REDIS "baseCmd.args",
};

#define PQ "github.com/lib/pq."

const char *const pq_field_names[PQ_FIELD__COUNT] = {
	[PQ_FIELD_CONN_C] = PQ "conn.c",
	[PQ_FIELD_CONN_CFG] = PQ "conn.cfg",
	[PQ_FIELD_CONFIG_HOST] = PQ "Config.Host",
	[PQ_FIELD_CONFIG_PORT] = PQ "Config.Port",
};

#define MYSQL "github.com/go-sql-driver/mysql."

const char *const mysql_field_names[MYSQL_FIELD__COUNT] = {
	[MYSQL_FIELD_CONN_CFG] = MYSQL "mysqlConn.cfg",
	[MYSQL_FIELD_CONFIG_ADDR] = MYSQL "Config.Addr",
};

const char *const gin_field_names[GIN_FIELD__COUNT] = {
	[GIN_FIELD_CONTEXT_FULLPATH] = "github.com/gin-gonic/gin.Context.fullPath",
};

#define ECHO "github.com/labstack/echo/v4."

const char *const echo_field_names[ECHO_FIELD__COUNT] = {
	[ECHO_FIELD_CONTEXT_PATH] = ECHO "context.path",
	[ECHO_FIELD_CONTEXT_HANDLER] = ECHO "context.handler",
};

#define ECHO5 "github.com/labstack/echo/v5."

const char *const echo5_field_names[ECHO5_FIELD__COUNT] = {
	[ECHO5_FIELD_CONTEXT_PATH] = ECHO5 "Context.path",
	[ECHO5_FIELD_CONTEXT_HANDLER] = ECHO5 "Context.handler",
	[ECHO5_FIELD_CONTEXT_ROUTE] = ECHO5 "Context.route",
	[ECHO5_FIELD_ROUTEINFO_PATH] = ECHO5 "RouteInfo.Path",
};

#define CHI "github.com/go-chi/chi/v5."

const char *const chi_field_names[CHI_FIELD__COUNT] = {
	[CHI_FIELD_CONTEXT_ROUTE_PATTERNS] = CHI "Context.RoutePatterns",
	[CHI_FIELD_CONTEXT_ROUTE_PATTERN] = CHI "Context.routePattern",
};

#define MUX "github.com/gorilla/mux."

const char *const mux_field_names[MUX_FIELD__COUNT] = {
	[MUX_FIELD_ROUTEMATCH_ROUTE] = MUX "RouteMatch.Route",
	[MUX_FIELD_ROUTE_ROUTECONF] = MUX "Route.routeConf",
	[MUX_FIELD_ROUTECONF_REGEXP] = MUX "routeConf.regexp",
	/* "*regexp": listed only where the member is a pointer (offsets/README.md). */
	[MUX_FIELD_ROUTE_REGEXP_PTR] = MUX "Route.*regexp",
	[MUX_FIELD_GROUP_PATH] = MUX "routeRegexpGroup.path",
	[MUX_FIELD_REGEXP_TEMPLATE] = MUX "routeRegexp.template",
};

#define FASTHTTP "github.com/valyala/fasthttp."

const char *const fasthttp_field_names[FASTHTTP_FIELD__COUNT] = {
	[FASTHTTP_FIELD_CTX_REQUEST] = FASTHTTP "RequestCtx.Request",
	[FASTHTTP_FIELD_CTX_RESPONSE] = FASTHTTP "RequestCtx.Response",
	[FASTHTTP_FIELD_CTX_CONN] = FASTHTTP "RequestCtx.c",
	[FASTHTTP_FIELD_REQ_HEADER] = FASTHTTP "Request.Header",
	[FASTHTTP_FIELD_REQ_URI] = FASTHTTP "Request.uri",
	[FASTHTTP_FIELD_REQ_IS_TLS] = FASTHTTP "Request.isTLS",
	[FASTHTTP_FIELD_RESP_HEADER] = FASTHTTP "Response.Header",
	[FASTHTTP_FIELD_RH_METHOD] = FASTHTTP "RequestHeader.method",
	[FASTHTTP_FIELD_RH_REQUEST_URI] = FASTHTTP "RequestHeader.requestURI",
	[FASTHTTP_FIELD_RH_HOST] = FASTHTTP "RequestHeader.host",
	[FASTHTTP_FIELD_RH_HEADER] = FASTHTTP "RequestHeader.header",
	[FASTHTTP_FIELD_RH_PROTO] = FASTHTTP "RequestHeader.proto",
	[FASTHTTP_FIELD_RH_H] = FASTHTTP "RequestHeader.h",
	[FASTHTTP_FIELD_RH_CONTENT_LENGTH] = FASTHTTP "RequestHeader.contentLength",
	[FASTHTTP_FIELD_RESPH_STATUS_CODE] = FASTHTTP "ResponseHeader.statusCode",
	[FASTHTTP_FIELD_RESPH_HEADER] = FASTHTTP "ResponseHeader.header",
	[FASTHTTP_FIELD_RESPH_PROTOCOL] = FASTHTTP "ResponseHeader.protocol",
	[FASTHTTP_FIELD_HEADER_PROTOCOL] = FASTHTTP "header.protocol",
	[FASTHTTP_FIELD_HEADER_H] = FASTHTTP "header.h",
	[FASTHTTP_FIELD_HEADER_CONTENT_LENGTH] = FASTHTTP "header.contentLength",
	[FASTHTTP_FIELD_URI_SCHEME] = FASTHTTP "URI.scheme",
	[FASTHTTP_FIELD_URI_HOST] = FASTHTTP "URI.host",
	[FASTHTTP_FIELD_URI_PATH] = FASTHTTP "URI.path",
	[FASTHTTP_FIELD_URI_QUERY] = FASTHTTP "URI.queryString",
	[FASTHTTP_FIELD_KV_KEY] = FASTHTTP "argsKV.key",
	[FASTHTTP_FIELD_KV_VALUE] = FASTHTTP "argsKV.value",
	[FASTHTTP_FIELD_CONN_FD] = "net.conn.fd",
	[FASTHTTP_FIELD_NETFD_RADDR] = "net.netFD.raddr",
};

const char *const fiber2_field_names[FIBER_FIELD__COUNT] = {
	[FIBER_FIELD_CTX_ROUTE] = "github.com/gofiber/fiber/v2.Ctx.route",
	[FIBER_FIELD_CTX_MATCHED] = "github.com/gofiber/fiber/v2.Ctx.matched",
	[FIBER_FIELD_CTX_IS_MATCHED] = "github.com/gofiber/fiber/v2.Ctx.isMatched",
	[FIBER_FIELD_ROUTE_PATH] = "github.com/gofiber/fiber/v2.Route.Path",
};

const char *const fiber3_field_names[FIBER_FIELD__COUNT] = {
	[FIBER_FIELD_CTX_ROUTE] = "github.com/gofiber/fiber/v3.DefaultCtx.route",
	[FIBER_FIELD_CTX_MATCHED] = "github.com/gofiber/fiber/v3.DefaultCtx.matched",
	[FIBER_FIELD_CTX_IS_MATCHED] = "github.com/gofiber/fiber/v3.DefaultCtx.isMatched",
	[FIBER_FIELD_ROUTE_PATH] = "github.com/gofiber/fiber/v3.Route.Path",
};

#define KAFKAGO "github.com/segmentio/kafka-go."

const char *const kafkago_field_names[KAFKAGO_FIELD__COUNT] = {
	[KAFKAGO_FIELD_WRITER_TOPIC] = KAFKAGO "Writer.Topic",
	[KAFKAGO_FIELD_WRITER_ADDR] = KAFKAGO "Writer.Addr",
	[KAFKAGO_FIELD_MSG_TOPIC] = KAFKAGO "Message.Topic",
	[KAFKAGO_FIELD_MSG_PARTITION] = KAFKAGO "Message.Partition",
	[KAFKAGO_FIELD_MSG_OFFSET] = KAFKAGO "Message.Offset",
	[KAFKAGO_FIELD_MSG_KEY] = KAFKAGO "Message.Key",
	[KAFKAGO_FIELD_MSG_VALUE] = KAFKAGO "Message.Value",
	[KAFKAGO_FIELD_MSG_HEADERS] = KAFKAGO "Message.Headers",
	[KAFKAGO_FIELD_MSG_TIME] = KAFKAGO "Message.Time",
	[KAFKAGO_FIELD_HEADER_KEY] = "github.com/segmentio/kafka-go/protocol.Header.Key",
	[KAFKAGO_FIELD_HEADER_VALUE] = "github.com/segmentio/kafka-go/protocol.Header.Value",
	[KAFKAGO_FIELD_READER_CONFIG] = KAFKAGO "Reader.config",
	[KAFKAGO_FIELD_CONFIG_GROUP_ID] = KAFKAGO "ReaderConfig.GroupID",
	[KAFKAGO_FIELD_CONFIG_BROKERS] = KAFKAGO "ReaderConfig.Brokers",
	[KAFKAGO_FIELD_NETADDR_ADDRESS] = KAFKAGO "networkAddress.address",
};

#define SARAMA "github.com/IBM/sarama."
const char *const sarama_field_names[SARAMA_FIELD__COUNT] = {
	[SARAMA_FIELD_MSG_TOPIC] = SARAMA "ProducerMessage.Topic",
	[SARAMA_FIELD_MSG_KEY] = SARAMA "ProducerMessage.Key",
	[SARAMA_FIELD_MSG_VALUE] = SARAMA "ProducerMessage.Value",
	[SARAMA_FIELD_MSG_OFFSET] = SARAMA "ProducerMessage.Offset",
	[SARAMA_FIELD_MSG_PARTITION] = SARAMA "ProducerMessage.Partition",
	[SARAMA_FIELD_AP_INPUT] = SARAMA "asyncProducer.input",
	[SARAMA_FIELD_CM_HEADERS] = SARAMA "ConsumerMessage.Headers",
	[SARAMA_FIELD_CM_KEY] = SARAMA "ConsumerMessage.Key",
	[SARAMA_FIELD_CM_TOPIC] = SARAMA "ConsumerMessage.Topic",
	[SARAMA_FIELD_CM_PARTITION] = SARAMA "ConsumerMessage.Partition",
	[SARAMA_FIELD_CM_OFFSET] = SARAMA "ConsumerMessage.Offset",
	[SARAMA_FIELD_HEADER_KEY] = SARAMA "RecordHeader.Key",
	[SARAMA_FIELD_HEADER_VALUE] = SARAMA "RecordHeader.Value",
	[SARAMA_FIELD_PC_MESSAGES] = SARAMA "partitionConsumer.messages",
	[SARAMA_FIELD_SESSION_PARENT] = SARAMA "consumerGroupSession.parent",
	[SARAMA_FIELD_GROUP_ID] = SARAMA "consumerGroup.groupID",
};

#define FRANZ "github.com/twmb/franz-go/pkg/kgo."
const char *const franz_field_names[FRANZ_FIELD__COUNT] = {
	[FRANZ_FIELD_REC_KEY] = FRANZ "Record.Key",
	[FRANZ_FIELD_REC_VALUE] = FRANZ "Record.Value",
	[FRANZ_FIELD_REC_HEADERS] = FRANZ "Record.Headers",
	[FRANZ_FIELD_REC_TOPIC] = FRANZ "Record.Topic",
	[FRANZ_FIELD_REC_PARTITION] = FRANZ "Record.Partition",
	[FRANZ_FIELD_REC_OFFSET] = FRANZ "Record.Offset",
	[FRANZ_FIELD_HEADER_KEY] = FRANZ "RecordHeader.Key",
	[FRANZ_FIELD_HEADER_VALUE] = FRANZ "RecordHeader.Value",
	[FRANZ_FIELD_CLIENT_CFG] = FRANZ "Client.cfg",
	[FRANZ_FIELD_CFG_GROUP] = FRANZ "cfg.group",
	[FRANZ_FIELD_CFG_SEEDS] = FRANZ "cfg.seedBrokers",
};

/* A table's fields: its name for messages and its names, as many as the array has. */
#define OFFSETS_FIELDS(what_, names_)                                                              \
	{                                                                                          \
		.what = what_, .names = names_, .count = sizeof(names_) / sizeof((names_)[0]),     \
	}

const struct offsets_fields go_offsets_fields = OFFSETS_FIELDS("Go", go_field_names);
const struct offsets_fields grpc_offsets_fields = OFFSETS_FIELDS("grpc-go", grpc_field_names);
const struct offsets_fields pgx_offsets_fields = OFFSETS_FIELDS("pgx", pgx_field_names);
const struct offsets_fields redis_offsets_fields = OFFSETS_FIELDS("go-redis", redis_field_names);
const struct offsets_fields pq_offsets_fields = OFFSETS_FIELDS("lib/pq", pq_field_names);
const struct offsets_fields mysql_offsets_fields =
	OFFSETS_FIELDS("go-sql-driver/mysql", mysql_field_names);
const struct offsets_fields gin_offsets_fields = OFFSETS_FIELDS("gin", gin_field_names);
const struct offsets_fields echo_offsets_fields = OFFSETS_FIELDS("echo", echo_field_names);
const struct offsets_fields echo5_offsets_fields = OFFSETS_FIELDS("echo v5", echo5_field_names);
const struct offsets_fields chi_offsets_fields = OFFSETS_FIELDS("chi", chi_field_names);
const struct offsets_fields mux_offsets_fields = OFFSETS_FIELDS("gorilla/mux", mux_field_names);
const struct offsets_fields fasthttp_offsets_fields =
	OFFSETS_FIELDS("fasthttp", fasthttp_field_names);
const struct offsets_fields fiber2_offsets_fields = OFFSETS_FIELDS("fiber v2", fiber2_field_names);
const struct offsets_fields fiber3_offsets_fields = OFFSETS_FIELDS("fiber v3", fiber3_field_names);
const struct offsets_fields kafkago_offsets_fields = OFFSETS_FIELDS("kafka-go", kafkago_field_names);
const struct offsets_fields sarama_offsets_fields = OFFSETS_FIELDS("sarama", sarama_field_names);
const struct offsets_fields franz_offsets_fields = OFFSETS_FIELDS("franz-go", franz_field_names);
