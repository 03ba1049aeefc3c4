/* SPDX-License-Identifier: MIT */
/*
 * The struct members gospan reads in a Go binary: the Go runtime's and net/http's, and those of
 * the modules it traces (grpc-go, pgx, go-redis, the routers gin, echo, chi and gorilla/mux),
 * each list by the name offsets/gen and the DWARF give it ("net/http.Request.Method"). What the
 * offset tables (offsets.c) and the DWARF reader (dwarf.c) both fill in, kept apart from either
 * so that neither depends on the other's parts; and the one list of the modules with a table.
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
	GO_FIELD_CONN_FD,
	GO_FIELD_NETFD_RADDR,
	GO_FIELD_H2_RW_RWS,
	GO_FIELD_H2_RWS_STATUS,
	GO_FIELD_H2I_RW_RWS,
	GO_FIELD_H2I_RWS_STATUS,
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
	/* pgx's database/sql driver (stdlib): its connection's *pgx.Conn */
	PGX_FIELD_STDLIB_CONN,
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

/*
 * The fields gospan reads from lib/pq's (github.com/lib/pq) connection, for the server a
 * database/sql span went to, from offsets/pq_offsets.json, keyed by pq's module version. Keep in
 * step with pq_field_names[] and offsets/gen. From v1.11 a conn keeps its Config by value (the
 * host at CONN_CFG + CONFIG_HOST, a uint16 port at CONN_CFG + CONFIG_PORT); before, its options
 * were a map, and CONN_CFG is -1. CONN_C: its net.Conn, first in every release.
 */
enum pq_field {
	PQ_FIELD_CONN_C,
	PQ_FIELD_CONN_CFG,
	PQ_FIELD_CONFIG_HOST,
	PQ_FIELD_CONFIG_PORT,
	PQ_FIELD__COUNT,
};

/* "github.com/lib/pq.conn.cfg", ... */
extern const char *const pq_field_names[PQ_FIELD__COUNT];

/*
 * The fields gospan reads from go-sql-driver/mysql's (github.com/go-sql-driver/mysql)
 * connection, from offsets/mysql_offsets.json, keyed by its module version. Keep in step with
 * mysql_field_names[] and offsets/gen. A mysqlConn's cfg is a *Config, whose Addr is
 * "host:port" (a socket's path for Net "unix").
 */
enum mysql_field {
	MYSQL_FIELD_CONN_CFG,
	MYSQL_FIELD_CONFIG_ADDR,
	MYSQL_FIELD__COUNT,
};

/* "github.com/go-sql-driver/mysql.mysqlConn.cfg", ... */
extern const char *const mysql_field_names[MYSQL_FIELD__COUNT];

/*
 * The fields gospan reads from gin's (github.com/gin-gonic/gin) Context, from
 * offsets/gin_offsets.json, keyed by gin's module version: the matched route's template, what
 * c.FullPath() returns ("/users/:id"). Keep in step with gin_field_names[] and offsets/gen.
 */
enum gin_field {
	GIN_FIELD_CONTEXT_FULLPATH,
	GIN_FIELD__COUNT,
};

/* "github.com/gin-gonic/gin.Context.fullPath" */
extern const char *const gin_field_names[GIN_FIELD__COUNT];

/*
 * The fields gospan reads from echo v4's (github.com/labstack/echo/v4) context, the unexported
 * struct behind the echo.Context interface a handler gets, from offsets/echo_offsets.json: the
 * matched route's path ("/users/:id") and the handler routing chose (a func value: a pointer to
 * its closure). Keep in step with echo_field_names[] and offsets/gen.
 */
enum echo_field {
	ECHO_FIELD_CONTEXT_PATH,
	ECHO_FIELD_CONTEXT_HANDLER,
	ECHO_FIELD__COUNT,
};

/* "github.com/labstack/echo/v4.context.path", ... */
extern const char *const echo_field_names[ECHO_FIELD__COUNT];

/*
 * The fields gospan reads from echo v5's (github.com/labstack/echo/v5, another module than v4,
 * with a table of its own) structs, from offsets/echo5_offsets.json. v5's Context is an exported
 * struct: the route's path is in it, and it points (*RouteInfo) to the matched route's
 * RouteInfo, whose Path is the template too. CONTEXT_HANDLER (a func value) is newer than
 * v5.0.0, and -1 in the releases before it. Keep in step with echo5_field_names[] and
 * offsets/gen.
 */
enum echo5_field {
	ECHO5_FIELD_CONTEXT_PATH,
	ECHO5_FIELD_CONTEXT_HANDLER,
	ECHO5_FIELD_CONTEXT_ROUTE,
	ECHO5_FIELD_ROUTEINFO_PATH,
	ECHO5_FIELD__COUNT,
};

/* "github.com/labstack/echo/v5.Context.path", ... */
extern const char *const echo5_field_names[ECHO5_FIELD__COUNT];

/*
 * The fields gospan reads from chi v5's (github.com/go-chi/chi/v5) routing Context (what
 * chi.RouteContext() returns), from offsets/chi_offsets.json: the stack of patterns of the
 * routers a request went through (a []string) and the current router's pattern (a string).
 * Keep in step with chi_field_names[] and offsets/gen.
 */
enum chi_field {
	CHI_FIELD_CONTEXT_ROUTE_PATTERNS,
	CHI_FIELD_CONTEXT_ROUTE_PATTERN,
	CHI_FIELD__COUNT,
};

/* "github.com/go-chi/chi/v5.Context.RoutePatterns", ... */
extern const char *const chi_field_names[CHI_FIELD__COUNT];

/*
 * The fields gospan reads from gorilla/mux's (github.com/gorilla/mux) structs, from
 * offsets/mux_offsets.json: a RouteMatch's *Route, and the way from a Route to its path
 * template. Keep in step with mux_field_names[] and offsets/gen.
 *
 * The template is the string at REGEXP_TEMPLATE in the routeRegexp that the route's
 * routeRegexpGroup points to at GROUP_PATH. Where that group is changed in v1.7.0:
 * - up to v1.6.2 Route has a member regexp, a *routeRegexpGroup, at ROUTE_REGEXP_PTR ("Route.
 *   *regexp", listed only where it is a pointer, as grpc's ServerStream.*Stream): the group is
 *   reached through a load of the pointer there; ROUTE_ROUTECONF and ROUTECONF_REGEXP are -1;
 * - from v1.7.0 Route embeds a routeConf by value at ROUTE_ROUTECONF, which holds the group by
 *   value at ROUTECONF_REGEXP: the group starts at ROUTE_ROUTECONF + ROUTECONF_REGEXP from the
 *   Route's own address, no load; ROUTE_REGEXP_PTR is -1.
 * A release has exactly one of the two (offsets/gen checks it).
 */
enum mux_field {
	MUX_FIELD_ROUTEMATCH_ROUTE,
	MUX_FIELD_ROUTE_ROUTECONF,
	MUX_FIELD_ROUTECONF_REGEXP,
	MUX_FIELD_ROUTE_REGEXP_PTR,
	MUX_FIELD_GROUP_PATH,
	MUX_FIELD_REGEXP_TEMPLATE,
	MUX_FIELD__COUNT,
};

/* "github.com/gorilla/mux.RouteMatch.Route", ... */
extern const char *const mux_field_names[MUX_FIELD__COUNT];

/*
 * The fields gospan reads from fasthttp's (github.com/valyala/fasthttp) structs, from
 * offsets/fasthttp_offsets.json, keyed by fasthttp's module version: one member a struct, as
 * DWARF names them, which analysis/fasthttp.c adds up into the ways from a *RequestCtx (server)
 * or a *Request and *Response (client) to what a span reports. Request and response headers
 * either hold their members themselves (RH_PROTO, RH_H, RH_CONTENT_LENGTH, RESPH_PROTOCOL: up to
 * v1.5x) or embed a shared header struct (RH_HEADER, RESPH_HEADER and the HEADER_ members,
 * later): a release has one layout, the other's members are -1. CONN_FD and NETFD_RADDR are
 * Go's net package's (a *net.TCPConn's peer address), the same in every Go release since 1.17.
 * Keep in step with fasthttp_field_names[] and offsets/gen.
 */
enum fasthttp_field {
	FASTHTTP_FIELD_CTX_REQUEST,
	FASTHTTP_FIELD_CTX_RESPONSE,
	FASTHTTP_FIELD_CTX_CONN,
	FASTHTTP_FIELD_REQ_HEADER,
	FASTHTTP_FIELD_REQ_URI,
	FASTHTTP_FIELD_REQ_IS_TLS,
	FASTHTTP_FIELD_RESP_HEADER,
	FASTHTTP_FIELD_RH_METHOD,
	FASTHTTP_FIELD_RH_REQUEST_URI,
	FASTHTTP_FIELD_RH_HOST,
	FASTHTTP_FIELD_RH_HEADER,
	FASTHTTP_FIELD_RH_PROTO,
	FASTHTTP_FIELD_RH_H,
	FASTHTTP_FIELD_RH_CONTENT_LENGTH,
	FASTHTTP_FIELD_RESPH_STATUS_CODE,
	FASTHTTP_FIELD_RESPH_HEADER,
	FASTHTTP_FIELD_RESPH_PROTOCOL,
	FASTHTTP_FIELD_HEADER_PROTOCOL,
	FASTHTTP_FIELD_HEADER_H,
	FASTHTTP_FIELD_HEADER_CONTENT_LENGTH,
	FASTHTTP_FIELD_URI_SCHEME,
	FASTHTTP_FIELD_URI_HOST,
	FASTHTTP_FIELD_URI_PATH,
	FASTHTTP_FIELD_URI_QUERY,
	FASTHTTP_FIELD_KV_KEY,
	FASTHTTP_FIELD_KV_VALUE,
	FASTHTTP_FIELD_CONN_FD,
	FASTHTTP_FIELD_NETFD_RADDR,
	FASTHTTP_FIELD__COUNT,
};

/* "github.com/valyala/fasthttp.RequestCtx.Request", ... */
extern const char *const fasthttp_field_names[FASTHTTP_FIELD__COUNT];

/*
 * The fields gospan reads from Fiber's request context, v2's Ctx and v3's DefaultCtx (two
 * modules, a table each: offsets/fiber2_offsets.json, fiber3_offsets.json), in this order for
 * both: the route it matched last (middleware are routes too), whether a route that is not
 * middleware matched, and a route's path as registered (its group's prefix included). Keep in
 * step with fiber2_field_names[], fiber3_field_names[] and offsets/gen.
 */
enum fiber_field {
	FIBER_FIELD_CTX_ROUTE,
	FIBER_FIELD_CTX_MATCHED,
	FIBER_FIELD_CTX_IS_MATCHED, /* the same flag, renamed in v3.3.0: one of the two is -1 */
	FIBER_FIELD_ROUTE_PATH,
	FIBER_FIELD__COUNT,
};

/* "github.com/gofiber/fiber/v2.Ctx.route", ...; "github.com/gofiber/fiber/v3.DefaultCtx.route" */
extern const char *const fiber2_field_names[FIBER_FIELD__COUNT];
extern const char *const fiber3_field_names[FIBER_FIELD__COUNT];

/*
 * The fields gospan reads from segmentio/kafka-go's structs (offsets/kafkago_offsets.json): a
 * Writer's topic and address, a Message's topic, partition, offset, key, value, headers and time (the
 * last member: the struct's size follows from it), a Header's key and value (protocol.Header),
 * a Reader's config and, in it, the consumer group and brokers, and a networkAddress's address.
 * Keep in step with kafkago_field_names[] and offsets/gen.
 */
enum kafkago_field {
	KAFKAGO_FIELD_WRITER_TOPIC,
	KAFKAGO_FIELD_WRITER_ADDR,
	KAFKAGO_FIELD_MSG_TOPIC,
	KAFKAGO_FIELD_MSG_PARTITION,
	KAFKAGO_FIELD_MSG_OFFSET,
	KAFKAGO_FIELD_MSG_KEY,
	KAFKAGO_FIELD_MSG_VALUE,
	KAFKAGO_FIELD_MSG_HEADERS,
	KAFKAGO_FIELD_MSG_TIME,
	KAFKAGO_FIELD_HEADER_KEY,
	KAFKAGO_FIELD_HEADER_VALUE,
	KAFKAGO_FIELD_READER_CONFIG,
	KAFKAGO_FIELD_CONFIG_GROUP_ID,
	KAFKAGO_FIELD_CONFIG_BROKERS,
	KAFKAGO_FIELD_NETADDR_ADDRESS,
	KAFKAGO_FIELD__COUNT,
};

/* "github.com/segmentio/kafka-go.Writer.Topic", ... */
extern const char *const kafkago_field_names[KAFKAGO_FIELD__COUNT];

/*
 * The fields gospan reads from IBM/sarama (offsets/sarama_offsets.json): a ProducerMessage's
 * topic, its key and value (Encoder interfaces), and the offset and partition it was given; an
 * asyncProducer's input channel; a ConsumerMessage's headers, key, topic,
 * partition and offset, a RecordHeader's key and value (the last member: the struct's size
 * follows from it), a partitionConsumer's channel of messages, a consumerGroupSession's group
 * and that consumerGroup's ID. Keep in step with sarama_field_names[] and offsets/gen.
 */
enum sarama_field {
	SARAMA_FIELD_MSG_TOPIC,
	SARAMA_FIELD_MSG_KEY,
	SARAMA_FIELD_MSG_VALUE,
	SARAMA_FIELD_MSG_OFFSET,
	SARAMA_FIELD_MSG_PARTITION,
	SARAMA_FIELD_AP_INPUT,
	SARAMA_FIELD_CM_HEADERS,
	SARAMA_FIELD_CM_KEY,
	SARAMA_FIELD_CM_TOPIC,
	SARAMA_FIELD_CM_PARTITION,
	SARAMA_FIELD_CM_OFFSET,
	SARAMA_FIELD_HEADER_KEY,
	SARAMA_FIELD_HEADER_VALUE,
	SARAMA_FIELD_PC_MESSAGES,
	SARAMA_FIELD_SESSION_PARENT,
	SARAMA_FIELD_GROUP_ID,
	SARAMA_FIELD__COUNT,
};

/* "github.com/IBM/sarama.ProducerMessage.Topic", ... */
extern const char *const sarama_field_names[SARAMA_FIELD__COUNT];

/*
 * The fields gospan reads from twmb/franz-go's kgo (offsets/franz_offsets.json): a Record's key,
 * value, headers, topic, partition and offset, a RecordHeader's key and value (the last member:
 * the struct's size follows from it), and a Client's config and, in it, the consumer group and
 * the seed brokers. Keep in step with franz_field_names[] and offsets/gen.
 */
enum franz_field {
	FRANZ_FIELD_REC_KEY,
	FRANZ_FIELD_REC_VALUE,
	FRANZ_FIELD_REC_HEADERS,
	FRANZ_FIELD_REC_TOPIC,
	FRANZ_FIELD_REC_PARTITION,
	FRANZ_FIELD_REC_OFFSET,
	FRANZ_FIELD_HEADER_KEY,
	FRANZ_FIELD_HEADER_VALUE,
	FRANZ_FIELD_CLIENT_CFG,
	FRANZ_FIELD_CFG_GROUP,
	FRANZ_FIELD_CFG_SEEDS,
	FRANZ_FIELD__COUNT,
};

/* "github.com/twmb/franz-go/pkg/kgo.Record.Key", ... */
extern const char *const franz_field_names[FRANZ_FIELD__COUNT];

/* What one table lists: its fields, in the order of the caller's enum; its name for messages. */
struct offsets_fields {
	const char *what; /* "Go", "grpc-go", "pgx", "go-redis", "gin", ... */
	const char *const *names;
	size_t count;
};

extern const struct offsets_fields go_offsets_fields;
extern const struct offsets_fields grpc_offsets_fields;
extern const struct offsets_fields pgx_offsets_fields, redis_offsets_fields;
extern const struct offsets_fields pq_offsets_fields, mysql_offsets_fields;
extern const struct offsets_fields gin_offsets_fields, echo_offsets_fields, echo5_offsets_fields;
extern const struct offsets_fields chi_offsets_fields, mux_offsets_fields;
extern const struct offsets_fields fasthttp_offsets_fields, fiber2_offsets_fields;
extern const struct offsets_fields fiber3_offsets_fields;
extern const struct offsets_fields kafkago_offsets_fields, sarama_offsets_fields;
extern const struct offsets_fields franz_offsets_fields;

/*
 * The modules gospan has an offset table of, one X(NAME, PATH) each: PATH is the module as
 * buildinfo lists it; NAME_offsets_fields (above) are its table's fields,
 * offsets/NAME_offsets.json its table (written by offsets/gen's -NAME-out, built in by
 * embed.c), and NAME the member of struct module_tables (offsets.h) that holds it once loaded.
 * A module's line here, its fields and its generator entry are all it takes to embed, load and
 * look up its table.
 */
#define GOSPAN_MODULE_TABLES(X)                                                                    \
	X(grpc, "google.golang.org/grpc")                                                          \
	X(pgx, "github.com/jackc/pgx/v5")                                                          \
	X(redis, "github.com/redis/go-redis/v9")                                                   \
	X(pq, "github.com/lib/pq")                                                                 \
	X(mysql, "github.com/go-sql-driver/mysql")                                                 \
	X(gin, "github.com/gin-gonic/gin")                                                         \
	X(echo, "github.com/labstack/echo/v4")                                                     \
	X(echo5, "github.com/labstack/echo/v5")                                                    \
	X(chi, "github.com/go-chi/chi/v5")                                                         \
	X(mux, "github.com/gorilla/mux")                                                           \
	X(fasthttp, "github.com/valyala/fasthttp")                                                 \
	X(fiber2, "github.com/gofiber/fiber/v2")                                                   \
	X(fiber3, "github.com/gofiber/fiber/v3")                                                   \
	X(kafkago, "github.com/segmentio/kafka-go")                                                \
	X(sarama, "github.com/IBM/sarama")                                                         \
	X(franz, "github.com/twmb/franz-go")

#endif
