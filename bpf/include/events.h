/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The one contract between the BPF programs and user space: ring-buffer records, the per-target
 * configuration map, and drop counters. Fixed-width types only, no pointers that user space would
 * dereference, every bounded string next to its bound and its real length.
 */
#ifndef GOSPAN_EVENTS_H
#define GOSPAN_EVENTS_H

#include <linux/types.h>

/* String bounds. Path gets the most room: it is what people search by. */
#define MAX_METHOD_LEN 16
#define MAX_PATH_LEN 256
#define MAX_HOST_LEN 128
#define MAX_ADDR_LEN 64
#define MAX_PROTO_LEN 16
#define MAX_PATTERN_LEN 128
#define MAX_SCHEME_LEN 8
#define MAX_QUERY_LEN 128
#define MAX_TRACESTATE_LEN 256
#define MAX_RPC_METHOD_LEN 128 /* "/package.Service/Method" */
#define MAX_RPC_TARGET_LEN 128 /* the dial target of a grpc.ClientConn */
#define MAX_RPC_MESSAGE_LEN 128 /* a gRPC status message */
#define MAX_DB_QUERY_LEN 512 /* SQL text as the call passed it, before sanitizing */
#define MAX_DB_ADDR_LEN 64 /* a data store's host or host:port */
#define MAX_DB_ERROR_LEN 64 /* a string of an error value: a Redis error, an SQLSTATE, ... */
#define DB_ERROR_STRS 4	   /* how many of an error value's leading strings are read */
#define MAX_DB_BATCH 8 /* commands of a pipeline (or queries of a batch) named one by one */
#define MAX_DB_COMMAND_LEN 16 /* one Redis command's name */
/* "00-" 32 hex "-" 16 hex "-" 2 hex: a version-00 W3C traceparent. */
#define TRACEPARENT_LEN 55

/* target_config.root_sampler values. */
#define SAMPLER_ALWAYS_ON 0
#define SAMPLER_ALWAYS_OFF 1
#define SAMPLER_RATIO 2

/* How far a span context is handed down to goroutines started by goroutines that have one. */
#define MAX_GOROUTINE_DEPTH 8

/* The most of a Go map's head (count, buckets or directory) the header walk copies. */
#define MAP_HEAD_MAX 64

/* How many targets (binaries) one gospan can hold at once; index = attach cookie. */
#define MAX_TARGETS 64

/*
 * Function spans (--functions): how many functions in all targets (index = attach cookie of their
 * probes), how many arguments each records, how many bytes of a string argument are kept, how
 * many pointer hops an argument path may take, and how many function calls one goroutine can
 * have open at once (deeper calls are not traced, and counted).
 */
#define MAX_FUNCS 512
#define MAX_FUNC_ARGS 4
#define MAX_ARG_STR_LEN 64
#define MAX_ARG_DEREFS 3
#define MAX_SPAN_DEPTH 8

/* The attach cookie of a function probe: MAX_TARGETS + its index in the funcs map. */
#define FUNC_COOKIE_BASE MAX_TARGETS
/*
 * The attach cookie's low 32 bits are the target (or function) above; the high bits say what an
 * end probe's program must know about its place (exporter/analysis/sites.h): COOKIE_IN_CALLER,
 * the call has returned and SP is 8 bytes above where the callee's RET saw it;
 * COOKIE_RESULT_SLOT, the register slot the call's first result was copied to (0: the one it was
 * returned in).
 */
#define COOKIE_IN_CALLER (1ULL << 32)
/*
 * A function span's end probe in a caller's caller (bpf/functions.bpf.c): how many bytes above
 * COOKIE_IN_CALLER's 8 the call's frame is, the frames of the callers that returned at once
 * after it (in place of COOKIE_RESULT_SLOT, which function probes do not use).
 */
#define COOKIE_FRAMES_SHIFT 40
#define COOKIE_FRAMES(c) ((__u32)((c) >> COOKIE_FRAMES_SHIFT) & 0xffffff)
#define COOKIE_FRAMES_MAX 0xffffff
#define COOKIE_RESULT_SHIFT 40
#define COOKIE_RESULT_SLOT(c) ((__u32)((c) >> COOKIE_RESULT_SHIFT) & 0xff)
/*
 * sarama's probes on the Go runtime's channel operations and on its producer's ends
 * (bpf/kafka_sarama.bpf.c): COOKIE_OP, which function the probed CALL calls (enum recv_kind,
 * enum send_kind) or which end it is (enum sarama_end).
 */
/* franz-go's Next handing a record over at its last CALL (the record at SP + fz_next_slot). */
#define FRANZ_AT_NEXT_CALL 1
#define COOKIE_OP_SHIFT 48
#define COOKIE_OP(c) ((__u32)((c) >> COOKIE_OP_SHIFT) & 0xf)
/*
 * An end on one way of a conditional jump (struct end_site's cond): COOKIE_COND_SLOT, the
 * register slot it tests (0: none); COOKIE_COND_BYTES, how many of its low bytes; and
 * COOKIE_COND_IF_ZERO, whether the end's way is taken when they are zero. Never with
 * COOKIE_FRAMES, whose bits they share: such an end is in its own function's frame.
 */
#define COOKIE_COND_SHIFT 52
#define COOKIE_COND_SLOT(c) ((__u32)((c) >> COOKIE_COND_SHIFT) & 0xf)
#define COOKIE_COND_BYTES(c) ((__u32)((c) >> (COOKIE_COND_SHIFT + 4)) & 0xf)
#define COOKIE_COND_IF_ZERO (1ULL << 60)

/*
 * runtime.chanrecv1(c, elem), chanrecv2(c, elem) (received bool), selectnbrecv(elem, c)
 * (selected, received bool) and selectgo(cas0, order0, pc0, nsends, nrecvs, block) (int, bool).
 */
enum recv_kind {
	RECV_CHAN1 = 1,
	RECV_CHAN2,
	RECV_NONBLOCK,
	RECV_SELECT,
	RECV__COUNT,
};

/* runtime.chansend1(c, elem) and selectgo (its send cases). */
enum send_kind {
	SEND_CHAN = 1,
	SEND_SELECT,
	SEND__COUNT,
};

/*
 * Where sarama's AsyncProducer is done with messages: (*asyncProducer).returnSuccesses(batch),
 * returnErrors(batch, err) and returnError(msg, err).
 */
enum sarama_end {
	SARAMA_END_SUCCESSES = 1,
	SARAMA_END_ERRORS,
	SARAMA_END_ERROR,
	SARAMA_END__COUNT,
};

enum event_type {
	EVENT_HTTP_SERVER_START = 1,
	EVENT_HTTP_SERVER_END = 2,
	EVENT_GO_PANIC = 3,
	EVENT_HTTP_CLIENT_START = 4,
	EVENT_HTTP_CLIENT_END = 5,
	EVENT_FUNC_START = 6,
	EVENT_FUNC_END = 7,
	EVENT_GRPC_SERVER_START = 8,
	EVENT_GRPC_SERVER_END = 9,
	EVENT_GRPC_CLIENT_START = 10,
	EVENT_GRPC_CLIENT_END = 11,
	EVENT_DB_CALL = 12,
	EVENT_HTTP_ROUTE = 13,
	EVENT_FASTHTTP_SERVER_START = 14,
	EVENT_FASTHTTP_SERVER_END = 15,
	EVENT_PROCESS_START = 16,
	EVENT_KAFKA_PRODUCE = 17,
	EVENT_KAFKA_PROCESS = 18,
};

/* Why a record was not delivered; index into the drops map. */
enum drop_reason {
	DROP_RINGBUF_FULL = 0, /* bpf_ringbuf_reserve() failed */
	DROP_INFLIGHT_FULL,    /* in-flight map update failed */
	DROP_NO_CONFIG,	       /* probe fired with a cookie that has no target config */
	DROP_STACK_FULL,       /* a function call nested deeper than MAX_SPAN_DEPTH: no span */
	/*
	 * ServeHTTP's end found no entry for its goroutine: the LRU map evicted it mid-call (its
	 * start was sent, and user space ends that call as lost), or its start was never stored
	 * (counted as ringbuf_full or inflight_map_full too, or begun before gospan attached).
	 */
	DROP_END_NO_ENTRY,
	/*
	 * The per-CPU scratch was held by a program this one preempted on the same CPU (a
	 * preemptible kernel): the record was not made rather than made in a buffer in use.
	 */
	DROP_SCRATCH_BUSY,
	/*
	 * A sarama AsyncProducer's batch held more messages than its end looks through
	 * (SARAMA_BATCH_MAX): each of the rest, traced or not, is counted; a traced one has no span.
	 */
	DROP_KAFKA_BATCH,
	DROP__COUNT,
};

/*
 * The span a goroutine is working for: its own server span, or the one it inherited from the
 * goroutine that started it. Client calls made on it become children of SPAN_ID. LIVE is 0 in the
 * `active` of a `goroutines` entry whose goroutine works for no span any more: the entry is left
 * in place so that the goroutine's next request rewrites it instead of paying a map update and a
 * delete.
 */
struct span_ctx {
	__u8 trace_id[16];
	__u8 span_id[8];
	__u8 flags; /* W3C trace flags: bit 0 = sampled */
	__u8 depth; /* goroutine generations from the span's own goroutine */
	__u8 live;
	__u8 _pad[5];
} __attribute__((aligned(8))); /* see struct span_ids */
_Static_assert(sizeof(struct span_ctx) == 32, "struct span_ctx: its layout is the ABI");

/*
 * What happened to the trace context of an outgoing HTTP/1 request; index into the propagation
 * map. The socket-layer writer (bpf/wire.bpf.c) puts it on the wire; the reasons it did not are
 * counted where they are known.
 */
enum propagation_result {
	PROP_INJECTED = 0,   /* traceparent (and tracestate) went out with the request */
	PROP_ALREADY_SET,    /* the request carried its own traceparent: left alone */
	PROP_NO_ROOM,	     /* the request line was not whole in the request's first write */
	PROP_NOT_HTTP1,	     /* the first bytes written were not an HTTP/1.x request line */
	PROP_TLS,	     /* an https request: its bytes are encrypted before the socket layer */
	PROP_UNSEEN,	     /* the request's bytes never passed the writer: its socket is not tracked */
	/*
	 * A gRPC call's HEADERS frame went out in a message whose HTTP/2 frames could not all be
	 * found (one ends past the message, or more new streams than one message is read for)
	 */
	PROP_H2_NOT_WHOLE,
	/* The writer's per-CPU scratch was held by a program it preempted: the message went as is. */
	PROP_SCRATCH_BUSY,
	/*
	 * Kafka (bpf/kafka_wire.bpf.c): a record sent with a traceparent header added; one that
	 * carried its own; one in a compressed batch, whose bytes cannot be changed without
	 * compressing them again; a produce request not whole in one write, or too big to rewrite
	 * (a request, not its records, which were not read); a record whose header count or a size
	 * of its request would have grown a byte, or past the records one request is rewritten for
	 * (no room): each left as it was.
	 */
	PROP_KAFKA_INJECTED,
	PROP_KAFKA_ALREADY_SET,
	PROP_KAFKA_COMPRESSED,
	PROP_KAFKA_NOT_WHOLE,
	PROP_KAFKA_NO_ROOM,
	PROP__COUNT,
};

/* How many traced processes the socket-layer writer keeps apart at once. */
#define MAX_TRACED_PROCS 4096

/*
 * A traced process, for the socket-layer programs, which see a thread, not a goroutine: the
 * thread's goroutine is the g pointer at TLS_G from its FS base (Go keeps it there as well as in
 * R14), its id at G_GOID in that g.
 */
struct traced_process {
	__s64 g_goid;
	__s64 tls_g;
};

/* The trace context waiting to go out with the request a goroutine is writing. */
struct pending_ctx {
	struct span_ctx ctx;
};

/*
 * A Kafka message waiting for its trace context (bpf/kafka_wire.bpf.c): its process and its
 * fingerprint (bpf/include/kafka_mark.bpf.h), from its key and value, which the record that
 * carries it has too.
 */
struct kafka_mark_key {
	__u32 pid;
	__u32 _pad;
	__u64 fingerprint;
};

/* An HTTP/2 HEADERS frame waiting for its trace context: its writer and its stream. */
struct h2_mark_key {
	__u32 pid;
	__u32 stream_id;
	__u64 goid;
};

/* A trace's incoming tracestate, to go out again with the trace's outgoing requests. */
struct tracestate_key {
	__u32 pid;
	__u32 _pad;
	__u8 trace_id[16];
};

struct tracestate_val {
	__u32 len;
	__u32 _pad;
	char s[MAX_TRACESTATE_LEN];
};

/*
 * A database/sql driver whose connections say which server they talk to (bpf/db.bpf.c): its
 * connection type, told by the methods an itab of it has first (QueryContext, Query,
 * ExecContext, Exec for the Queryer and Execer interfaces, Begin for driver.Conn), at their
 * link-time addresses (0: unused); from the connection, pointers to follow at the offsets of HOPS
 * (-1: none), then at HOST a Go string, the host or "host:port", and at PORT a uint16 (-1: the
 * port is in HOST, or unknown), or the peer of the net.Conn at PEER. exporter/analysis/datastores.c
 * fills them per driver.
 */
#define MAX_SQL_SERVERS 4
#define SQL_SERVER_FNS 5
#define SQL_SERVER_HOPS 2

struct sql_server {
	__u64 fns[SQL_SERVER_FNS];
	__s32 hops[SQL_SERVER_HOPS];
	__s32 host;
	__s32 port;
	/*
	 * A driver that keeps no host (lib/pq before v1.11): where its connection holds the
	 * net.Conn it talks over, whose peer (a *net.TCPConn's, through the target's conn_fd,
	 * netfd_raddr, tcpaddr_*) is the server. -1: none.
	 */
	__s32 peer;
	__s32 _pad;
};

/*
 * A probe inside a kafka-go read (exporter/analysis/kafka_handover.c), on an emulated instruction
 * from which the read only moves data to the RET that returns a Message: taken ALWAYS, or when
 * the Jcc there goes that way (ZF set, or clear, in the flags at the probe). The Message is at
 * MSG_OFF from SP (MSG_REG 4) or from the register MSG_REG (x86 numbering); the error's first
 * word at SP + ERR_OFF (-1: nil); the return address at SP + RET_OFF. A return address in
 * [SKIP_LO, SKIP_HI) (link-time: the site's own AT tells the load bias) is a read made by
 * another read (ReadMessage's FetchMessage), whose message is not handed to the application.
 */
enum kafka_handover_cond {
	KAFKA_HANDOVER_ALWAYS,
	KAFKA_HANDOVER_IF_ZF,
	KAFKA_HANDOVER_IF_NOT_ZF,
};
#define KAFKA_HANDOVERS_MAX 8
struct kafka_handover_site {
	__u64 at;
	__u64 skip_lo, skip_hi;
	__s32 msg_off, err_off, ret_off;
	__u8 msg_reg, cond, _pad[2];
};

/*
 * Offsets for one target, filled by user space from the offset tables (or DWARF). A negative
 * offset means "this Go version has no such field". Register slots are 1-based indexes into the
 * Go internal ABI integer argument sequence (amd64: RAX RBX RCX RDI RSI R8 R9 R10 R11; arm64:
 * X0..X15).
 */
struct target_config {
	__s64 g_goid;
	__s64 req_method;
	__s64 req_url;
	__s64 req_proto;
	__s64 req_host;
	__s64 req_remote_addr;
	__s64 req_content_length;
	__s64 req_tls;
	__s64 req_pattern; /* Request.Pattern string, Go 1.23+ */
	__s64 req_pat;	   /* Request.pat *pattern, Go 1.22+ */
	__s64 pattern_str; /* pattern.str string */
	__s64 url_path;
	__s64 response_status; /* http.response.status int */
	/* HTTP/2's writer: http2responseWriter.rws, then its state's status int; -1: unknown */
	__s64 h2_rw_rws;
	__s64 h2_rws_status;
	__s64 req_header;
	__s64 g_parent_goid; /* Go 1.21+; -1: goroutines inherit no span context */
	__s64 url_scheme;
	__s64 url_host;
	__s64 url_raw_query;
	__s64 resp_status_code; /* http.Response.StatusCode */
	__s64 resp_proto;	/* http.Response.Proto */
	__s64 bufio_n;
	__u64 bufio_itab; /* link-time address of the *bufio.Writer io.Writer itab + load bias; 0 = unknown */

	/*
	 * map[string][]string (http.Header) internals, to find traceparent without a probe per
	 * header line. MAP_KIND 1: buckets (Go <= 1.23); 2: Swiss tables (Go 1.24+); 0: unknown.
	 */
	__u32 map_kind;
	__u32 _pad0;
	__s64 hmap_b;
	__s64 hmap_buckets;
	__s64 hmap_oldbuckets;
	__s64 bucket_keys;     /* offset of keys[0] in a bucket */
	__s64 bucket_elems;    /* offset of elems[0] */
	__s64 bucket_overflow; /* offset of the overflow pointer */
	__s64 bucket_size;
	__s64 swiss_dir_ptr;
	__s64 swiss_dir_len;
	__s64 table_groups_data; /* table.groups.data */
	__s64 table_groups_mask; /* table.groups.lengthMask */
	__s64 group_slots;	 /* offset of slot 0 in a group (after the control word) */
	__s64 slot_size;
	__s64 slot_elem; /* offset of the value in a slot */
	__s64 group_size;
	/*
	 * The map's head, read in one copy of map_head_size bytes (at most MAP_HEAD_MAX): the words
	 * the walk starts from lie in it, at multiples of 8. map_count: where its entry count is
	 * (-1: unknown); an empty map, a request with no header lines but Host, is not walked.
	 */
	__s64 map_count;
	__s64 map_head_size;

	__u32 arg_rw_itab; /* ServeHTTP's ResponseWriter interface: type word */
	__u32 arg_rw_data; /* ... and data word */
	__u32 arg_req;	   /* ServeHTTP's *Request */
	__u32 arg_rt_req;  /* (*Transport).roundTrip's *Request */
	__u32 ret_rt_resp; /* ... its *Response result */
	__u32 ret_rt_err;  /* ... and its error's type word */
	__u32 arg_ws_header; /* Header.writeSubset's receiver (the map) */
	__u32 arg_ws_w_itab; /* ... its io.Writer: type word */
	__u32 arg_ws_w_data; /* ... and data word */
	__u32 ret_newproc_g; /* runtime.newproc1's *g result */

	/*
	 * OTEL_TRACES_SAMPLER, decided where ids are chosen so the flag a call carries out agrees
	 * with what is exported. ROOT_SAMPLER: 0 always on, 1 always off, 2 trace-id ratio (a trace
	 * is kept when the last 8 bytes of its id, big-endian, shifted right by one, are below
	 * RATIO_BOUND). PARENT_BASED: a span with a parent follows the parent's sampled flag.
	 */
	__u32 root_sampler;
	__u32 parent_based;
	__u64 ratio_bound;

	/*
	 * Function spans: g.stack.hi, to tell a recursive call from a stack-growth re-run of the same
	 * entry (same distance from the stack top) and to pair each RET with its own entry; CPU_TIME
	 * (--cpu-time): spans carry their goroutine's running time, kept by cputime.bpf.c.
	 */
	__s64 g_stack_hi;
	__u32 cpu_time;
	__u32 propagate; /* OTEL_PROPAGATORS=tracecontext: traceparent is read, and goes out */

	/* Where a thread's goroutine is, from its FS base: see struct traced_process. */
	__s64 tls_g;

	/*
	 * gRPC (google.golang.org/grpc), when the binary uses it (grpc_server / grpc_client set).
	 * Offsets from its DWARF or the grpc-go offset table; -1: unknown. The handler's stream:
	 * its method and context; the transport's peer addresses (*net.TCPAddr in a net.Addr);
	 * a *status.Status's proto message, its code and message; a *status.Error's *Status; a
	 * csAttempt's clientStream; a ClientConn's dial target; a context.valueCtx's key and value.
	 */
	__u32 grpc_server;
	__u32 grpc_client;
	__s64 grpc_stream_deref; /* >= 0: the handler's stream holds a *Stream there (1.69-1.76) */
	__s64 grpc_stream_method;
	__s64 grpc_stream_ctx;
	__s64 grpc_st_remote_addr;
	__s64 grpc_st_local_addr;
	__s64 grpc_status_proto;
	__s64 grpc_proto_code;
	__s64 grpc_proto_message;
	__s64 grpc_error_status;
	__s64 grpc_attempt_cs;
	__s64 grpc_cc_target;
	__s64 tcpaddr_ip;
	__s64 tcpaddr_port;
	__s64 valuectx_key;
	__s64 valuectx_val;
	/*
	 * Link-time addresses of methods, to tell a Go interface's dynamic type by its itab
	 * without symbols (stripped binaries keep them in the function table): the word at
	 * ITAB_FUN0 + 8 * i is the type's i-th method of the interface, in name order. 0: unknown,
	 * that check fails. context.Context's Value (4th), net.Addr's Network (1st), error's Error.
	 */
	__u64 fn_valuectx_value;
	__u64 fn_tcpaddr_network;
	__u64 fn_status_error;
	__u64 fn_error_string;
	/*
	 * The link-time addresses the server entry and the client end are probed at: with the
	 * probe's own address they give the load bias of a PIE process, without a map of them.
	 */
	__u64 grpc_server_entry_at;
	__u64 grpc_finish_at;

	/*
	 * Data stores (db.bpf.c): which clients are probed, and what their structs need. Offsets
	 * -1: unknown. database/sql: a Stmt's query; pgx v5: a Conn's *ConnConfig and, in it, the
	 * host and port; a Batch's queued queries and a queued query's text; go-redis v9: a
	 * client's *Options, their Addr, and a command's args ([]interface{}).
	 */
	__u32 db_sql;
	__u32 db_pgx;
	__u32 db_redis;
	__u32 _pad_db;
	__s64 sql_stmt_query;
	__s64 pgx_conn_config;
	__s64 pgx_config_host;
	__s64 pgx_config_port;
	__s64 pgx_batch_queries;
	__s64 pgx_query_sql;
	__s64 redis_client_opt;
	__s64 redis_opt_addr;
	__s64 redis_cmd_args;
	/* Methods that tell error values apart (see fn_error_string): go-redis's RedisError. */
	__u64 fn_redis_error;
	/* database/sql: the drivers whose connections say which server they talk to. */
	struct sql_server sql_servers[MAX_SQL_SERVERS];

	/*
	 * Kafka through segmentio/kafka-go (bpf/kafka.bpf.c): whether it is probed, whether a
	 * message's key is captured (GOSPAN_CAPTURE_MESSAGE_KEY), and offsets, -1: unknown. A
	 * Writer's Topic and Addr (net.Addr); a Message's Topic, Partition, Offset, Key and Value ([]byte),
	 * Headers ([]Header) and size; a Header's Key (string), Value ([]byte) and size; a
	 * *Reader's consumer group (its config's GroupID) and brokers ([]string); a
	 * *networkAddress's address (user space checks the Addr is one, by its Network method).
	 */
	__u32 kafka_go;
	__u32 kafka_key;
	__s64 kg_writer_topic;
	__s64 kg_writer_addr;
	__s64 kg_msg_topic;
	__s64 kg_msg_partition;
	__s64 kg_msg_offset;
	__s64 kg_msg_key;
	__s64 kg_msg_value;
	__s64 kg_msg_headers;
	__s64 kg_msg_size;
	__s64 kg_header_key;
	__s64 kg_header_value;
	__s64 kg_header_size;
	__s64 kg_reader_group;
	__s64 kg_reader_brokers;
	__s64 kg_netaddr_address;
	/* Where a read hands its Message over, inside the read (kafka_handed, by COOKIE_OP). */
	struct kafka_handover_site kg_handover[KAFKA_HANDOVERS_MAX];
	/*
	 * IBM/sarama's SyncProducer (the same file): whether it is probed, and a
	 * ProducerMessage's Topic, Key and Value (Encoder interfaces: a StringEncoder's or a
	 * ByteEncoder's value begins with its bytes' pointer and length).
	 */
	__u32 sarama;
	__u32 sarama_group;
	__s64 sm_msg_topic;
	__s64 sm_msg_key;
	__s64 sm_msg_value;
	/*
	 * SendMessage's end at the Jcc that tests its *ProducerError (kafka_sarama_sent, the
	 * register in COOKIE_OP): the message at SP + this there; the error's Err in the
	 * ProducerError at the other. -1: its RETs are probed instead.
	 */
	__s64 sm_sent_msg_slot;
	__s64 sm_sent_err_at;
	/*
	 * sarama's AsyncProducer (bpf/kafka_sarama.bpf.c), when SARAMA_ASYNC: a ProducerMessage's
	 * Offset and Partition (int32), which the broker's answer filled; an *asyncProducer's input
	 * (chan *ProducerMessage).
	 */
	__u32 sarama_async;
	__u32 _pad_sarama_async;
	__s64 sm_msg_offset;
	__s64 sm_msg_partition;
	__s64 sm_ap_input;
	/*
	 * sarama's consumer groups (bpf/kafka_sarama.bpf.c), when SARAMA_GROUP: a ConsumerMessage's
	 * Headers ([]*RecordHeader), Key ([]byte), Topic, Partition (int32) and Offset; a
	 * RecordHeader's Key and Value ([]byte) and size; a *partitionConsumer's messages (chan
	 * *ConsumerMessage); a *consumerGroupSession's group (*consumerGroup) and its groupID.
	 */
	__s64 sm_cm_headers;
	__s64 sm_cm_key;
	__s64 sm_cm_topic;
	__s64 sm_cm_partition;
	__s64 sm_cm_offset;
	__s64 sm_header_key;
	__s64 sm_header_value;
	__s64 sm_header_size;
	__s64 sm_pc_messages;
	__s64 sm_session_group;
	__s64 sm_group_id;
	/*
	 * twmb/franz-go's kgo (bpf/kafka_franz.bpf.c): whether it is probed, and offsets, -1:
	 * unknown. A Record's Key and Value ([]byte), Headers ([]RecordHeader), Topic, Partition
	 * (int32) and Offset; a RecordHeader's Key (string), Value ([]byte) and size; a *Client's
	 * consumer group and seed brokers ([]string), its cfg's offset added.
	 */
	__u32 franz;
	__u32 _pad_franz;
	__s64 fz_rec_key;
	__s64 fz_rec_value;
	__s64 fz_rec_headers;
	__s64 fz_rec_topic;
	__s64 fz_rec_partition;
	__s64 fz_rec_offset;
	__s64 fz_header_key;
	__s64 fz_header_value;
	__s64 fz_header_size;
	__s64 fz_client_group;
	__s64 fz_client_seeds;
	/* Where Next keeps the *Record it returns across its last call: SP + this at that CALL. */
	__s64 fz_next_slot;

	/*
	 * fasthttp (bpf/fasthttp.bpf.c): which sides are probed, and offsets summed from its
	 * table (analysis/fasthttp.c), -1: unknown. A *RequestCtx's Request and Response, its
	 * net.Conn; from a *Request: method, request URI, Host, protocol, headers ([]argsKV),
	 * Content-Length, TLS, and its parsed URI's parts; from a *Response: status and protocol.
	 * FH_END_CTX: what the end site's first argument is less the *RequestCtx (0:
	 * writeResponse's ctx; the Response's offset where writeResponse is inlined and
	 * (*Response).Write is probed). FH_KV_SIZE, FH_KV_KEY, FH_KV_VALUE: an argsKV's size and
	 * its two []byte. Then the way from a *net.TCPConn to its peer's *net.TCPAddr, and the
	 * method that tells a *net.TCPConn in a net.Conn (net.(*TCPConn).Close, its first in
	 * net.Conn's order).
	 */
	__u32 fasthttp_server;
	__u32 fasthttp_client;
	__s64 fh_ctx_request;
	__s64 fh_ctx_response;
	__s64 fh_ctx_conn;
	__s64 fh_end_ctx;
	__s64 fh_req_method;
	__s64 fh_req_uri;
	__s64 fh_req_host;
	__s64 fh_req_proto;
	__s64 fh_req_headers;
	__s64 fh_req_content_length;
	__s64 fh_req_tls;
	__s64 fh_uri_scheme;
	__s64 fh_uri_host;
	__s64 fh_uri_path;
	__s64 fh_uri_query;
	__s64 fh_resp_status;
	__s64 fh_resp_proto;
	__s64 fh_kv_size;
	__s64 fh_kv_key;
	__s64 fh_kv_value;
	__s64 conn_fd;
	__s64 netfd_raddr;
	__u64 fn_tcpconn_close;
};

/* In a Go itab, where the method words begin (after inter, _type, hash and padding). */
#define ITAB_FUN0 24

/*
 * Key of the maps kept per goroutine (`goroutines`, `client_calls`, ...): goroutine ids are only
 * unique within one process.
 */
struct goroutine_key {
	__u32 pid;
	__u32 _pad;
	__u64 goid;
};

/*
 * A goroutine's ServeHTTP call in flight (its `goroutines` entry's `server`): what a RET needs that
 * its registers no longer hold. START_NS 0: the call has returned; the entry stays for the
 * goroutine's next request to reuse in place.
 */
struct inflight_call {
	__u64 start_ns;
	__u64 req;
	__u64 rw_itab;
	__u64 rw_data;
	__u64 cpu_start_ns; /* the goroutine's running time at entry (--cpu-time) */
	__u32 panicked;
	__u32 has_prev; /* PREV is the span the goroutine worked for before: restored at the RET */
	__u32 http2;	/* the request came over HTTP/2: its writer is HTTP/2's, not *response */
	__u32 _pad0;
	struct span_ctx prev;
};

/*
 * The peer address of the connection a goroutine serves, as its last request carried it: a
 * connection's requests all point at one string, read once.
 */
struct peer_cache {
	__u64 ptr, len;
	char addr[MAX_ADDR_LEN];
};

/*
 * A goroutine's gRPC server call in flight (its `goroutines` entry's `rpc`): grpc-go serves each
 * RPC on a goroutine of its own, so the call's state shares the entry that carries the span the
 * goroutine works for, one map entry an RPC. START_NS 0: none.
 */
struct rpc_server_call {
	__u64 start_ns;
	__u64 stream; /* the stream: a second entry with it is the prologue's re-run */
	__u64 cpu_start_ns;
	struct span_ctx prev; /* what the goroutine worked for before (prev.live), put back at the end */
};

/* What a goroutine is doing: the `goroutines` map's value. */
struct goroutine_state {
	struct span_ctx active;	    /* the span it works for, when active.live */
	struct inflight_call server; /* its ServeHTTP call, when server.start_ns */
	struct peer_cache peer;	    /* ptr 0: none */
	struct rpc_server_call rpc;  /* its gRPC server call, when rpc.start_ns */
};

/* An outgoing call in flight, by goroutine. */
struct client_call {
	__u64 start_ns;
	__u64 req;    /* the *http.Request: a second entry with it is the prologue's re-run */
	__u64 header; /* the request's Header map: its context goes out when it is written */
	struct span_ctx ctx;
};

struct record_header {
	__u32 type; /* enum event_type */
	__u32 pid;  /* tgid of the traced process */
	__u64 goid;
	__u64 start_ns; /* CLOCK_MONOTONIC at ServeHTTP entry: with pid and goid, names one call */
};

/*
 * Trace identity of a span, chosen in BPF so that calls it makes can carry it. Aligned to 8, as
 * is struct span_ctx, which changes no layout (both are whole words, and every struct they stand
 * in puts them at a multiple of 8) but tells the compiler so: an id copied through a pointer to
 * a type of bytes alone was copied a byte at a time, some 50 instructions for a span's ids.
 */
struct span_ids {
	__u8 trace_id[16];
	__u8 span_id[8];
	__u8 parent_span_id[8]; /* all zero: a root span */
	__u8 flags;
	__u8 remote_parent; /* the parent came in a traceparent header */
	__u8 _pad[6];
} __attribute__((aligned(8)));
_Static_assert(sizeof(struct span_ids) == 40, "struct span_ids: its layout is the ABI");

/*
 * How a function argument is read at entry. KIND: FUNC_ARG_*. Integer register slots are 1-based
 * as in target_config. A value path of NDEREFS pointer hops starts from the pointer in REG: hop i
 * reads the word at (current + OFFS[i]) for i < NDEREFS - 1, and the value itself lies at
 * (current + OFFS[NDEREFS - 1]). SIZE is the value's width in bytes (1, 2, 4, 8); user space
 * knows signedness and type.
 */
enum func_arg_kind {
	FUNC_ARG_NONE = 0,
	FUNC_ARG_REG = 1,	  /* a scalar in integer register REG */
	FUNC_ARG_REG_STRING = 2,  /* a string: pointer in REG, length in REG2 */
	FUNC_ARG_MEM = 3,	  /* a scalar at the end of a pointer path */
	FUNC_ARG_MEM_STRING = 4,  /* a string header at the end of a pointer path */
};

struct func_arg_spec {
	__u8 kind;
	__u8 size;
	__u8 reg;
	__u8 reg2;
	__u8 nderefs;
	__u8 _pad[3];
	__s32 offs[MAX_ARG_DEREFS];
	__u32 _pad2;
};

/*
 * func_config.flags: some calls of the function are their caller's last, and that caller (or one
 * it returns at once into) is traced too: such a call ends when that caller's call ends, at the
 * same end probe (exporter/analysis/funcends.c).
 */
#define FUNC_ENDS_WITH_CALLER 1

/* One traced function, by attach cookie - FUNC_COOKIE_BASE. */
struct func_config {
	__u32 target; /* the targets map index of its binary */
	__u32 nargs;
	__u32 flags; /* FUNC_ENDS_WITH_CALLER */
	struct func_arg_spec args[MAX_FUNC_ARGS];
};

/* An argument as read: the raw word, or a string's real length and first bytes. */
struct func_arg_value {
	__u64 word;
	__u32 len;	/* strings: the real length */
	__u8 ok;	/* read without a fault */
	__u8 _pad[3];
	char str[MAX_ARG_STR_LEN];
};

/* Emitted at a traced function's entry. */
struct func_start {
	struct record_header hdr;
	struct span_ids ids;
	__u32 func;  /* index into the funcs map */
	__u32 depth; /* the call's position on its goroutine's stack of open calls, 0 outermost */
	__u32 cookie; /* its target's index */
	__u32 _pad;
	struct func_arg_value args[MAX_FUNC_ARGS];
};

/* Emitted at the RET that ends the call HDR names (pid, goroutine, start). */
struct func_end {
	struct record_header hdr;
	__u64 end_ns;
	__u64 cpu_ns; /* running time of the goroutine during the call; ~0 = not measured */
	__u32 func;
	__u32 depth;
};

/* Emitted at serverHandler.ServeHTTP entry: what arrived, before the handler could change it. */
struct http_server_start {
	struct record_header hdr;
	struct span_ids ids;
	__s64 content_length;
	__u32 cookie; /* target index */
	__u8 tls;     /* Request.TLS != nil */
	__u8 _pad[3];
	/* Real lengths of the Go strings; the arrays hold min(len, MAX_*) bytes. */
	__u32 method_len;
	__u32 path_len;
	__u32 host_len;
	__u32 remote_addr_len;
	__u32 proto_len;
	__u32 _pad2;
	char method[MAX_METHOD_LEN];
	char path[MAX_PATH_LEN];
	char host[MAX_HOST_LEN];
	char remote_addr[MAX_ADDR_LEN];
	char proto[MAX_PROTO_LEN];
	__u32 tracestate_len;
	__u32 _pad3;
	char tracestate[MAX_TRACESTATE_LEN];
};

/* Emitted at (*Transport).roundTrip entry. */
struct http_client_start {
	struct record_header hdr;
	struct span_ids ids;
	__u32 cookie;
	__u32 method_len;
	__u32 scheme_len;
	__u32 host_len;
	__u32 path_len;
	__u32 query_len;
	char method[MAX_METHOD_LEN];
	char scheme[MAX_SCHEME_LEN];
	char host[MAX_HOST_LEN];
	char path[MAX_PATH_LEN];
	char query[MAX_QUERY_LEN];
};

/* Emitted at every RET of (*Transport).roundTrip. */
struct http_client_end {
	struct record_header hdr;
	__u64 end_ns;
	__s64 status;	/* Response.StatusCode; 0 when there is no response */
	__u64 err_itab; /* the error's type word; 0 = no error */
	__u8 span_id[8];
	__u32 proto_len; /* Response.Proto, e.g. "HTTP/1.1" */
	__u32 _pad;
	char proto[MAX_PROTO_LEN];
};

/* Whether a request's protocol, as net/http's servers set it, is HTTP/2's "HTTP/2.0". */
#define PROTO_IS_HTTP2(proto, len) ((len) == 8 && (proto)[5] == '2')

/* Emitted at every RET of serverHandler.ServeHTTP. */
struct http_server_end {
	struct record_header hdr;
	__u64 end_ns;
	__u64 rw_itab; /* lets user space check the writer really is *http.response */
	__s64 status;  /* the writer's status; 0 = nothing written (200 on the wire), -1 = unknown */
	__u64 cpu_ns;  /* running time of the goroutine during the request; ~0 = not measured */
	__u32 pattern_len;
	__u32 _pad;
	char pattern[MAX_PATTERN_LEN];
};

/* Emitted by runtime.gopanic while a request is in flight on that goroutine. */
struct go_panic {
	struct record_header hdr;
	__u64 panic_ns;
	__u32 pattern_len; /* the route, matched before the handler ran */
	__u32 _pad;
	char pattern[MAX_PATTERN_LEN];
};

/*
 * A new process of a traced binary, at runtime.main's entry, before its package init and
 * main.main: user space attaches the socket-layer writer to its cgroup before it makes a
 * connection (capture/procstart.c). HDR.goid is the main goroutine's, HDR.start_ns now.
 */
struct process_start {
	struct record_header hdr;
	__u32 cookie; /* target index */
	__u32 _pad;
};

/* An IP endpoint as a *net.TCPAddr holds it: 4 or 16 address bytes (IP_LEN), port. */
struct net_endpoint {
	__u8 ip[16];
	__u8 ip_len; /* 0: unknown */
	__u8 _pad;
	__u16 port;
	__u32 _pad2;
};

/*
 * fasthttp's server (bpf/fasthttp.bpf.c), where the server loop reads a request's body: the
 * request line and headers as parsed, the request URI as received (percent-encoded, the query
 * with it, or the absolute form), and the peer where the connection is a *net.TCPConn. User
 * space makes it a SERVER span as net/http's (capture/fasthttp.c); its end is a struct
 * http_server_end of type EVENT_FASTHTTP_SERVER_END (no writer, no pattern).
 */
#define MAX_REQUEST_URI_LEN (MAX_PATH_LEN + MAX_QUERY_LEN)

struct fasthttp_server_start {
	struct record_header hdr;
	struct span_ids ids;
	__s64 content_length; /* -1: none, or chunked */
	__u32 cookie;
	__u8 tls;
	__u8 _pad[3];
	__u32 method_len;
	__u32 uri_len;
	__u32 host_len;
	__u32 proto_len;
	char method[MAX_METHOD_LEN];
	char uri[MAX_REQUEST_URI_LEN];
	char host[MAX_HOST_LEN];
	char proto[MAX_PROTO_LEN];
	struct net_endpoint peer;
	__u32 tracestate_len;
	__u32 _pad2;
	char tracestate[MAX_TRACESTATE_LEN];
};

/*
 * gRPC server side, at (*grpc.Server).handleStream's entry, on the goroutine that runs the RPC's
 * handler: what arrived, and the ids BPF chose (an incoming traceparent continues its trace).
 */
struct grpc_server_start {
	struct record_header hdr;
	struct span_ids ids;
	__u32 cookie;
	__u32 method_len;
	char method[MAX_RPC_METHOD_LEN];
	struct net_endpoint local, remote;
	__u32 tracestate_len;
	__u32 _pad;
	char tracestate[MAX_TRACESTATE_LEN];
};

/* When handleStream has returned: the status the transport wrote for the RPC. */
struct grpc_server_end {
	struct record_header hdr;
	__u64 end_ns;
	__u64 cpu_ns;	 /* ~0 = not measured */
	__s32 code;	 /* gRPC status code; -1: no status was written */
	__u32 message_len;
	char message[MAX_RPC_MESSAGE_LEN];
};

/* gRPC client side, at newClientStream's entry: unary calls and streams alike. */
struct grpc_client_start {
	struct record_header hdr;
	struct span_ids ids;
	__u32 cookie;
	__u32 method_len;
	__u32 target_len;
	__u32 _pad;
	char method[MAX_RPC_METHOD_LEN];
	char target[MAX_RPC_TARGET_LEN];
};

/*
 * When the call's attempt finishes, maybe on another goroutine than the one that began it: HDR
 * is the start's (its goroutine and time), which is how user space pairs them.
 */
struct grpc_client_end {
	struct record_header hdr;
	__u64 end_ns;
	__s32 code; /* gRPC status code of the call's error; 0 = none */
	__u32 message_len;
	char message[MAX_RPC_MESSAGE_LEN];
};

/* Which client made a data store call: what the record's query fields hold. */
enum db_client {
	DB_CLIENT_SQL = 1,   /* database/sql: QUERY is the SQL text */
	DB_CLIENT_PGX,	     /* pgx's Conn.Query/Exec: QUERY is the SQL text */
	DB_CLIENT_PGX_BATCH, /* pgx's SendBatch: QUERY the first query's text, BATCH_SIZE queries */
	DB_CLIENT_REDIS,     /* go-redis: one command, COMMANDS[0] its name, NARGS[0] its words */
	DB_CLIENT_REDIS_PIPELINE, /* go-redis: BATCH_SIZE commands, the first MAX_DB_BATCH named */
};

/* database/sql calls that carry no text of the caller's: the transaction's own. */
enum db_sql_op {
	DB_SQL_QUERY = 0,
	DB_SQL_BEGIN,
	DB_SQL_COMMIT,
	DB_SQL_ROLLBACK,
};

/*
 * One call to a database or cache, sent when it has returned (one record a call: nothing in it
 * has children). HDR.start_ns is when it began. Words of the target's memory (DRIVER_FN,
 * ERR_ITAB) are runtime addresses: user space takes the process's load bias off.
 */
struct db_call {
	struct record_header hdr;
	struct span_ids ids;
	__u64 end_ns;
	__u32 cookie;
	__u32 client;	 /* enum db_client */
	/*
	 * database/sql: the first method word of the driver's connection in the interface the call
	 * went through (QueryerContext, ExecerContext, Conn, ...): whose package it is names the
	 * database. 0: unknown.
	 */
	__u64 driver_fn;
	__u64 err_itab; /* the call's error: its itab; 0: none */
	__u64 err_fn;	/* ... and that itab's Error method, which names its type; 0: unknown */
	__u32 query_len; /* the text's real length: more than MAX_DB_QUERY_LEN when cut */
	__u32 batch_size;
	__u32 addr_len;
	__u16 port;	 /* the configured port (pgx, pq, pgx's stdlib); 0: in ADDR or unknown */
	__u16 sql_op;	 /* database/sql's transaction calls: enum db_sql_op; 0: a query */
	char query[MAX_DB_QUERY_LEN];
	char addr[MAX_DB_ADDR_LEN];
	/*
	 * The first DB_ERROR_STRS words pairs of the error's value read as strings, where they are
	 * (errors.errorString's text; *pq.Error's severity, code, message; go-redis's RedisError,
	 * a string itself): user space reads them only for the types it knows. ERR_LENS[i] 0: none.
	 */
	__u16 err_lens[DB_ERROR_STRS];
	char err[DB_ERROR_STRS][MAX_DB_ERROR_LEN];
	/*
	 * The error value's first word as it is, and the string at its second word: where
	 * go-sql-driver/mysql's MySQLError keeps its Number (a uint16, then SQLSTATE's five bytes
	 * from v1.7) and its Message.
	 */
	__u64 err_head;
	__u16 err_len8;
	char err8[MAX_DB_ERROR_LEN];
	/* ADDR holds the server's IP address, this many bytes (4 or 16), not text; 0: text. */
	__u8 addr_ip;
	/*
	 * The same of the error it wraps, where its value begins with one (pgx's PrepareError):
	 * the first two words read as an interface. INNER_FN 0: none.
	 */
	__u64 inner_fn;
	__u16 inner_lens[DB_ERROR_STRS];
	char inner[DB_ERROR_STRS][MAX_DB_ERROR_LEN];
	__u8 nargs[MAX_DB_BATCH]; /* go-redis: each command's argument count, name included */
	char commands[MAX_DB_BATCH][MAX_DB_COMMAND_LEN];
};

/*
 * Route templates of HTTP router frameworks (gin, echo, chi, gorilla/mux): bpf/routes.bpf.c reads
 * the template the framework matched at one emulated site per request (a direct CALL, or the
 * first emulated instruction after one), placed by exporter/analysis/routers.c. Its probe's attach
 * cookie holds the target in the low 32 bits and the route_sites index above them.
 */
#define MAX_ROUTE_SITES 64
#define ROUTE_HOPS 3
#define MAX_ROUTE_PARTS 4	/* chi: one pattern per router the request went through */
#define MAX_ROUTE_PART_LEN 128
#define ROUTE_SITE_SHIFT 32
#define ROUTE_BASE_CLOSURE 0xff

/* What the template is (struct route_site.kind). */
enum route_kind {
	ROUTE_STRING = 1,  /* one Go string */
	ROUTE_STRINGS = 2, /* a []string of parts, in order, that user space joins (chi) */
	/*
	 * httprouter, which keeps no template: the matched handle (BASE_SLOT, 0: no route) and
	 * the route's parameters (a []Param in the next two slots), whose values lie in the
	 * request's path; user space puts each name back where its value was.
	 */
	ROUTE_PARAMS = 3,
};

/* httprouter's Param: {Key, Value string}. */
#define ROUTE_PARAM_SIZE 32
#define ROUTE_PARAM_VALUE 16

/*
 * How the program at one route site finds the template: from the word in integer register slot
 * BASE_SLOT (0: the stack pointer; ROUTE_BASE_CLOSURE: the closure context register, a deferred
 * call's wrapper) plus BASE_OFF, NHOPS pointer hops (base = *(base + HOPS[i])), then the string or
 * slice header at base + STR_OFF. NEED_OFF >= 0: once NEED_HOP of the hops are taken, the word
 * there (the byte, when NEED_BYTE: a bool) must be non-zero, or the router matched no route (chi's
 * routePattern length, Fiber's matched); CHECK_OFF >= 0: the record carries
 * the code address of the func value there (echo's handler), by which user space tells a handler
 * of the application's from the router's own not-found and method-not-allowed ones.
 */
struct route_site {
	__u32 kind;
	__u32 base_slot;
	__s64 base_off;
	__u32 nhops;
	__u8 need_hop;
	__u8 need_byte;
	__u16 _pad;
	__s64 hops[ROUTE_HOPS];
	__s64 str_off;
	__s64 need_off;
	__s64 check_off;
};

/*
 * A route template, sent when the router has matched one: HDR names the goroutine's ServeHTTP call
 * in flight (its start_ns), which the template belongs to. LEN[i] is part i's real length, NPARTS
 * how many parts there were (more than MAX_ROUTE_PARTS: the rest were not read).
 */
struct http_route {
	struct record_header hdr;
	__u32 site; /* the route_sites index */
	__u32 nparts;
	/*
	 * CHECK_OFF's func value: its code address, and the code address of the func value its
	 * closure holds first (echo wraps every route's handler in a closure that holds it); runtime
	 * addresses, 0: none.
	 */
	__u64 check;
	__u64 check_inner;
	__u32 len[MAX_ROUTE_PARTS];
	char part[MAX_ROUTE_PARTS][MAX_ROUTE_PART_LEN];
	/*
	 * ROUTE_PARAMS: part 0 is the request's URL.Path, part i + 1 parameter i's name, and its
	 * value is VALUE_LEN[i] bytes at VALUE_OFF[i] in that path (~0: not in it). NPARTS is one
	 * more than the parameters.
	 */
	__u32 value_off[MAX_ROUTE_PARTS - 1];
	__u32 value_len[MAX_ROUTE_PARTS - 1];
};

/*
 * Kafka messaging (bpf/kafka.bpf.c, exporter/capture/kafka.c). Bounds of what a record carries:
 * a topic's name (Kafka allows 249 bytes), a message key, a consumer group, a broker address.
 */
#define MAX_KAFKA_TOPIC_LEN 128
#define MAX_KAFKA_KEY_LEN 64
#define MAX_KAFKA_GROUP_LEN 64
#define MAX_KAFKA_ADDR_LEN 64

/*
 * One call that sends messages (kafka-go's (*Writer).WriteMessages, sarama's SyncProducer
 * SendMessage and SendMessages), sent when it has returned: the whole PRODUCER span. COUNT
 * messages; the topic and key are the first message's (the key only when captured); PARTITION
 * and OFFSET the message's where the call says them (sarama's SendMessage), else -1. ERR_ITAB,
 * ERR_FN: the call's error as in struct db_call.
 */
struct kafka_produce {
	struct record_header hdr;
	struct span_ids ids;
	__u64 end_ns;
	__s64 partition;
	__s64 offset;
	__u64 err_itab;
	__u64 err_fn;
	__u32 cookie;
	__u32 count;
	__u32 topic_len; /* real lengths: more than the bound when cut */
	__u32 key_len;
	__u32 addr_len;
	__u8 has_key; /* the first message has a key (KEY holds it when captured) */
	__u8 _pad[3];
	/*
	 * The Writer's Addr: its itab's first method (runtime address), ADDR the string a
	 * *networkAddress holds there, kept only when that method is its Network.
	 */
	__u64 addr_fn;
	char topic[MAX_KAFKA_TOPIC_LEN];
	char key[MAX_KAFKA_KEY_LEN];
	char addr[MAX_KAFKA_ADDR_LEN];
};

/*
 * One message a consumer processed: from the read that handed it over to the goroutine's next
 * read (or its commit, or the reader's close), the whole CONSUMER span, sent at that end. IDS
 * continue the traceparent the message carried (ids.remote_parent), else start a trace.
 */
struct kafka_process {
	struct record_header hdr;
	struct span_ids ids;
	__u64 end_ns;
	__s64 offset;
	__s64 partition;
	__u32 cookie;
	__u32 topic_len;
	__u32 key_len;
	__u32 group_len;
	__u32 addr_len;
	__u32 tracestate_len;
	__u8 has_key;
	__u8 _pad[7];
	char topic[MAX_KAFKA_TOPIC_LEN];
	char key[MAX_KAFKA_KEY_LEN];
	char group[MAX_KAFKA_GROUP_LEN];
	char addr[MAX_KAFKA_ADDR_LEN];
	char tracestate[MAX_TRACESTATE_LEN];
};

#endif
