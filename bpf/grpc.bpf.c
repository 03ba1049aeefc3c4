// SPDX-License-Identifier: GPL-2.0
/*
 * gRPC (google.golang.org/grpc) capture, linked with the other uprobe families into one object
 * whose maps and helpers it shares (probe.bpf.h).
 *
 * Server: (*grpc.Server).handleStream runs each RPC on the goroutine that calls its handler, for
 * unary and streaming RPCs alike. Its entry starts the span (the stream's method; the transport's
 * peer addresses; the caller's traceparent, found in the metadata map the stream's context
 * carries); the transport's status writer, which the same goroutine calls when the handler has
 * returned, ends it with the status. grpc-go starts a goroutine for each RPC: the call's state is
 * in that goroutine's entry of `goroutines`, made at the entry and taken out at the end, and what
 * is the same for every RPC of a connection (its endpoints) is read once, kept by transport.
 *
 * Client: newClientStream begins every call made through a grpc.ClientConn (Invoke and streams).
 * Its entry starts the span, a child of what the goroutine works for. The call is then followed
 * by its *clientStream, not by the goroutine: a stream may be read, and ended, on another one. The
 * stream's first attempt (newAttemptLocked, on the calling goroutine) ties the two, and the end
 * of the attempt ((*csAttempt).finish, wherever it runs) ends the span with the call's error.
 *
 * Go interface values are told apart without symbols: an itab's method words are the dynamic
 * type's methods, and user space gives the addresses of the ones that identify the types read
 * here (a context.valueCtx, a *net.TCPAddr, a *status.Error, an *errors.errorString).
 */
#include "probe.bpf.h"
#include "go_map.bpf.h"
#include "go_net.bpf.h"

/* How many contexts the walk for the incoming metadata follows from the stream's own. */
#define CTX_WALK_MAX 6

/* What bpf_map_update_elem() returns with BPF_NOEXIST for a key that is there: -EEXIST. */
#define EEXIST_ 17

/* gRPC's code for an error that is not a status: codes.Unknown. */
#define GRPC_CODE_UNKNOWN 2

/*
 * What a server transport's RPCs share, read on its first RPC gospan sees and kept by the
 * transport's address: both endpoints (ten reads of the service's memory an RPC, against two
 * that check the entry still names that connection), and the two types the walk to the incoming
 * metadata looks for at each context (each one read, else five more).
 */
struct rpc_conn_key {
	__u32 pid;
	__u32 _pad;
	__u64 t; /* the *http2Server (the ServerTransport's data word) */
};

struct rpc_conn {
	/*
	 * The transport's remote net.Addr and its port when it was read. A transport's memory may
	 * be another connection's later: that one's address is another *net.TCPAddr, or the same
	 * memory again only with a new connection's port, so a match is that connection.
	 */
	__u64 remote_itab, remote_data, remote_port;
	__u64 valuectx_itab; /* context.valueCtx's itab for context.Context; 0: not seen yet */
	__u64 md_type;	     /* the type of the incoming metadata (metadata.MD); 0: not seen yet */
	struct net_endpoint local, remote;
};

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 16384);
	__type(key, struct rpc_conn_key);
	__type(value, struct rpc_conn);
} rpc_conns SEC(".maps");

/* A connection's entry before it is in rpc_conns: too large for the entry program's frame. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct rpc_conn);
} rpc_conn_scratch SEC(".maps");

/*
 * A client call begun on a goroutine, until its stream is made (START_NS 0 from then on) and its
 * header fields are built (the entry goes): CTX is what its HEADERS frame is to carry.
 */
struct rpc_pending {
	__u64 start_ns;
	__u64 cc;     /* with METHOD: a second entry with both is the prologue's re-run */
	__u64 method;
	struct span_ctx ctx;
};

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 16384);
	__type(key, struct goroutine_key);
	__type(value, struct rpc_pending);
} rpc_pending SEC(".maps");

/* A client call by its *clientStream; the value names its start record. */
struct rpc_stream_key {
	__u32 pid;
	__u32 _pad;
	__u64 cs;
};

struct rpc_stream {
	__u64 goid;
	__u64 start_ns;
};

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 65536);
	__type(key, struct rpc_stream_key);
	__type(value, struct rpc_stream);
} rpc_streams SEC(".maps");

/* The metadata keys of incoming trace context, lowercase as in HTTP/2. Built on the stack. */
#define TRACEPARENT_MD(k) struct map_key k = { .name = "traceparent", .len = 11 }
#define TRACESTATE_MD(k) struct map_key k = { .name = "tracestate", .len = 10 }

/* Whether TYPE (a Go type descriptor) is a map[string][]T, as metadata.MD is. */
static __always_inline bool is_string_slice_map(__u64 type)
{
	__u8 kind = 0;
	__u64 t;

	if (!type || bpf_probe_read_user(&kind, 1, (void *)(type + GO_TYPE_KIND_OFF)) ||
	    (kind & GO_TYPE_KIND_MASK) != GO_KIND_MAP_)
		return false;
	t = go_read_word((void *)type, GO_MAPTYPE_KEY);
	if (!t || bpf_probe_read_user(&kind, 1, (void *)(t + GO_TYPE_KIND_OFF)) ||
	    (kind & GO_TYPE_KIND_MASK) != GO_KIND_STRING_)
		return false;
	t = go_read_word((void *)type, GO_MAPTYPE_ELEM);
	return t && !bpf_probe_read_user(&kind, 1, (void *)(t + GO_TYPE_KIND_OFF)) &&
	       (kind & GO_TYPE_KIND_MASK) == GO_KIND_SLICE_;
}

/*
 * One context of the walk to the incoming metadata, C: 1 where the walk ends, with *MD the
 * metadata when C holds it; else 0, with C the context C wraps. CONN holds the valueCtx itab and
 * the metadata's type once they have been seen, so that each is known by a compare instead of
 * reads of its type; the walk fills them in.
 */
static __always_inline int md_walk_step(const struct target_config *cfg, __u64 bias,
					struct rpc_conn *conn, struct go_iface *c, void **md)
{
	struct go_iface v;

	if (!c->data)
		return 1;
	if (c->itab != conn->valuectx_itab) {
		/* context.Context's methods: Deadline, Done, Err, Value. */
		if (!itab_is(c->itab, 3, cfg->fn_valuectx_value, bias))
			return 1;
		conn->valuectx_itab = c->itab;
	}
	if (bpf_probe_read_user(&v, sizeof(v), (void *)(c->data + cfg->valuectx_val)))
		return 1;
	if (v.data && conn->md_type && v.itab == conn->md_type) {
		*md = (void *)v.data;
		return 1;
	}
	if (v.data && is_string_slice_map(v.itab)) {
		if (!conn->md_type)
			conn->md_type = v.itab;
		*md = (void *)v.data;
		return 1;
	}
	/* The context a valueCtx wraps is its first field. */
	return bpf_probe_read_user(c, sizeof(*c), (void *)c->data) ? 1 : 0;
}

/*
 * The incoming metadata of the stream STREAM (its head as copied): the transport stores it in the
 * stream's context with context.WithValue, and later layers (a stats handler, a tap) wrap that
 * context in more values. The walk follows value contexts only, from the newest, to the first
 * value that is a map[string][]string, at most CTX_WALK_MAX of them. NULL when there is none (a
 * call without metadata). Written out step by step: clang cannot unroll the loop it was (a trip
 * count only bounded), and laid it out closed by a fall-through, which Linux 6.1 refuses.
 */
static __always_inline void *incoming_md(const struct target_config *cfg,
					 const struct req_view *stream, __u64 bias,
					 struct rpc_conn *conn)
{
	struct go_iface c;
	void *md = NULL;

	if (cfg->grpc_stream_ctx < 0 || cfg->valuectx_val < 0)
		return NULL;
	c.itab = req_word(stream, cfg->grpc_stream_ctx);
	c.data = req_word(stream, cfg->grpc_stream_ctx + 8);
	_Static_assert(CTX_WALK_MAX == 6, "incoming_md(): one step a context");
	if (md_walk_step(cfg, bias, conn, &c, &md) || md_walk_step(cfg, bias, conn, &c, &md) ||
	    md_walk_step(cfg, bias, conn, &c, &md) || md_walk_step(cfg, bias, conn, &c, &md) ||
	    md_walk_step(cfg, bias, conn, &c, &md) || md_walk_step(cfg, bias, conn, &c, &md))
		return md;
	return NULL;
}

/* The code and message of the *status.Status ST; a Status without its proto message is OK. */
static __always_inline __s32 status_code(const struct target_config *cfg, __u64 st, char *msg,
					 __u32 *msg_len)
{
	__u64 proto;
	__s32 code = 0;

	*msg_len = 0;
	if (!st)
		return 0;
	proto = go_read_word((void *)st, cfg->grpc_status_proto);
	if (!proto)
		return 0;
	if (bpf_probe_read_user(&code, sizeof(code), (void *)(proto + cfg->grpc_proto_code)))
		return GRPC_CODE_UNKNOWN;
	*msg_len = go_read_string(msg, MAX_RPC_MESSAGE_LEN, (void *)(proto + cfg->grpc_proto_message));
	return code;
}

/*
 * The gRPC code of the error (ITAB, DATA): a *status.Error's own; io.EOF (a stream's end) is
 * none; anything else is Unknown, as gRPC itself maps it, with an errors.New error's text.
 */
static __always_inline __s32 error_code(const struct target_config *cfg, __u64 itab, __u64 data,
					__u64 bias, char *msg, __u32 *msg_len)
{
	*msg_len = 0;
	if (!itab)
		return 0;
	if (itab_is(itab, 0, cfg->fn_status_error, bias))
		return status_code(cfg, go_read_word((void *)data, cfg->grpc_error_status), msg,
				   msg_len);
	if (itab_is(itab, 0, cfg->fn_error_string, bias)) {
		*msg_len = go_read_string(msg, MAX_RPC_MESSAGE_LEN, (void *)data);
		if (*msg_len == 3 && msg[0] == 'E' && msg[1] == 'O' && msg[2] == 'F') {
			*msg_len = 0;
			return 0;
		}
	}
	return GRPC_CODE_UNKNOWN;
}

/*
 * What rpc_conns knows of the transport T, brought up to date where T is another connection now:
 * an entry is replaced whole, as other CPUs may be reading it for RPCs of the same connection
 * (only the metadata walk's two types are written in place: each is one word, and the same for
 * every connection of the process). The scratch entry when the map takes none; NULL when even
 * that fails.
 */
static __always_inline struct rpc_conn *server_conn(const struct target_config *cfg, __u32 pid,
						    void *t, __u64 bias)
{
	struct rpc_conn_key k = { .pid = pid, .t = (__u64)t };
	struct go_iface ra = {};
	struct rpc_conn *conn, *fresh;
	__u64 port = 0;
	__u32 zero = 0;

	/* Two reads tell whether T is still the connection the entry was made for. */
	if (bpf_probe_read_user(&ra, sizeof(ra), t + cfg->grpc_st_remote_addr) || !ra.data)
		ra.data = ra.itab = 0;
	else
		port = go_read_word((void *)ra.data, cfg->tcpaddr_port);
	conn = bpf_map_lookup_elem(&rpc_conns, &k);
	if (conn && conn->remote_itab == ra.itab && conn->remote_data == ra.data &&
	    conn->remote_port == port)
		return conn;
	fresh = bpf_map_lookup_elem(&rpc_conn_scratch, &zero);
	if (!fresh)
		return NULL;
	/* The types the metadata walk looks for are the program's, whichever the connection. */
	fresh->valuectx_itab = conn ? conn->valuectx_itab : 0;
	fresh->md_type = conn ? conn->md_type : 0;
	fresh->remote_itab = ra.itab;
	fresh->remote_data = ra.data;
	fresh->remote_port = port;
	read_endpoint(cfg, t + cfg->grpc_st_local_addr, bias, &fresh->local);
	read_endpoint(cfg, t + cfg->grpc_st_remote_addr, bias, &fresh->remote);
	/* Full (every entry in use by another CPU's update): this RPC has its endpoints anyway. */
	bpf_map_update_elem(&rpc_conns, &k, fresh, BPF_ANY);
	return fresh;
}

/*
 * At handleStream's entry: func (s *Server) handleStream(t transport.ServerTransport, stream
 * *transport.(Server)Stream, ...): the interface in slots 2 and 3, the stream in slot 4. SC is
 * this CPU's scratch, which grpc_server_entry() claimed.
 */
static __always_inline void grpc_server_start(GO_REGS *ctx, struct scratch *sc)
{
	__u64 now = bpf_ktime_get_ns(), bias;
	const struct target_config *cfg;
	struct goroutine_state *gs, *fresh;
	struct grpc_server_start *e;
	struct goroutine_key key;
	struct span_ctx *outer;
	struct rpc_conn *conn;
	struct req_view sv;
	void *stream, *handler_stream, *t, *md = NULL;
	bool has_tp = false;
	long err;

	cfg = probe_context(ctx, &key);
	if (!cfg || !cfg->grpc_server)
		return;
	stream = handler_stream = (void *)go_arg(ctx, 4);
	t = (void *)go_arg(ctx, 3);
	e = bpf_ringbuf_reserve(&events, sizeof(*e), 0);
	if (!e) {
		count_drop(DROP_RINGBUF_FULL);
		return;
	}
	fill_header(&e->hdr, EVENT_GRPC_SERVER_START, &key, now);
	e->cookie = (__u32)bpf_get_attach_cookie(ctx);
	bias = load_bias(ctx, cfg->grpc_server_entry_at);
	if (cfg->grpc_stream_deref >= 0)
		stream = (void *)go_read_word(stream, cfg->grpc_stream_deref);
	/* The stream's method and context, in one read. */
	snap_head(sc, stream,
		  field_end(cfg->grpc_stream_ctx, 16,
			    field_end(cfg->grpc_stream_method, sizeof(struct go_string), 0)),
		  &sv);
	e->method_len = req_string(&sv, cfg->grpc_stream_method, e->method, MAX_RPC_METHOD_LEN);
	conn = server_conn(cfg, key.pid, t, bias);
	if (conn) {
		e->local = conn->local;
		e->remote = conn->remote;
	} else {
		__builtin_memset(&e->local, 0, sizeof(e->local));
		__builtin_memset(&e->remote, 0, sizeof(e->remote));
	}

	/*
	 * As for HTTP: the caller's trace, else the function span the goroutine runs in, else a
	 * new trace. grpc-go starts a goroutine for each RPC, which works for no span yet: that is
	 * taken for granted here, and put right below where the goroutine has an entry.
	 */
	if (cfg->propagate && conn)
		md = incoming_md(cfg, &sv, bias, conn);
	if (md) {
		TRACEPARENT_MD(tp_key);
		struct go_string val = {};

		has_tp = gospan_header_find(cfg, (__u64)md, &tp_key, &val) &&
			 gospan_traceparent_read((__u64)val.ptr, val.len, &sc->ids);
	}
	if (has_tp)
		e->ids = sc->ids;
	else
		__builtin_memset(&e->ids, 0, sizeof(e->ids));
	server_ids(cfg, &e->ids, has_tp, NULL);
	e->tracestate_len = 0;
	if (e->ids.remote_parent && md) {
		TRACESTATE_MD(ts_key);

		e->tracestate_len =
		    go_header_get(cfg, md, &ts_key, e->tracestate, MAX_TRACESTATE_LEN);
		keep_tracestate(key.pid, e->ids.trace_id, e->tracestate, e->tracestate_len);
	}

	/*
	 * One map entry an RPC, the goroutine's: made whole in the scratch and put in the map only
	 * where the goroutine has none, which an RPC's own goroutine does not (a lookup first
	 * would cost as much again).
	 */
	fresh = &sc->state;
	__builtin_memset(fresh, 0, sizeof(*fresh));
	fresh->rpc.start_ns = now;
	fresh->rpc.stream = (__u64)handler_stream;
	fresh->rpc.cpu_start_ns = cfg->cpu_time ? gclock_now(ctx, key.pid, now) : 0;
	span_ctx_of(&fresh->active, &e->ids);
	err = bpf_map_update_elem(&goroutines, &key, fresh, BPF_NOEXIST);
	if (err == -EEXIST_) {
		/*
		 * A goroutine with an entry: one that serves RPCs one after another (a server with
		 * stream workers), a handler's for grpc-go's ServeHTTP, or this call's prologue run
		 * again after a stack growth (the same stream: its first start stands).
		 */
		gs = own_state(&key);
		if (gs && gs->rpc.start_ns && gs->rpc.stream == (__u64)handler_stream) {
			bpf_ringbuf_discard(e, BPF_RB_NO_WAKEUP);
			return;
		}
		outer = gs && gs->active.live ? &gs->active : NULL;
		if (outer && !has_tp) {
			__builtin_memset(&e->ids, 0, sizeof(e->ids));
			server_ids(cfg, &e->ids, false, outer);
			span_ctx_of(&fresh->active, &e->ids);
		}
		if (outer)
			fresh->rpc.prev = *outer;
		if (gs) {
			gs->rpc = fresh->rpc;
			gs->active = fresh->active;
			err = 0;
		} else {
			err = bpf_map_update_elem(&goroutines, &key, fresh, BPF_ANY);
		}
	}
	if (err) {
		/* Without the entry no end would pair with this start: send neither. */
		bpf_ringbuf_discard(e, BPF_RB_NO_WAKEUP);
		count_drop(DROP_INFLIGHT_FULL);
		return;
	}
	bpf_ringbuf_submit(e, submit_flags());
}

SEC("uprobe")
int grpc_server_entry(GO_REGS *ctx)
{
	return with_scratch(ctx, grpc_server_start);
}

/*
 * At the entry of the transport's status writer, (t) writeStatus(s *Stream, st *status.Status)
 * (WriteStatus in older releases): the stream in slot 2, the status in slot 3, on the goroutine
 * whose handler has returned. This is the end of the RPC: what handleStream does after it is
 * bookkeeping, and its own end has no instruction the kernel emulates (its caller runs deferred
 * calls and returns), where this entry has.
 */
SEC("uprobe")
int grpc_server_status(GO_REGS *ctx)
{
	__u64 now = bpf_ktime_get_ns();
	const struct target_config *cfg;
	struct grpc_server_end *e;
	struct goroutine_key key;
	struct goroutine_state *gs;
	bool done;

	cfg = probe_context(ctx, &key);
	if (!cfg)
		return 0;
	gs = own_state(&key);
	/* Only the status of the stream being served, once. */
	if (!gs || !gs->rpc.start_ns || gs->rpc.stream != go_arg(ctx, 2))
		return 0;
	/*
	 * The goroutine goes back to what it worked for before. grpc-go ends a goroutine of its own
	 * with its RPC, so an entry that holds nothing else is taken out of the map: the next RPC's
	 * goroutine then gets a free entry instead of making the LRU map evict one.
	 */
	done = !gs->rpc.prev.live && !gs->server.start_ns && !gs->peer.ptr;
	if (gs->rpc.prev.live)
		gs->active = gs->rpc.prev;
	else
		gs->active.live = 0;
	e = bpf_ringbuf_reserve(&events, sizeof(*e), 0);
	if (!e) {
		count_drop(DROP_RINGBUF_FULL);
	} else {
		fill_header(&e->hdr, EVENT_GRPC_SERVER_END, &key, gs->rpc.start_ns);
		e->end_ns = now;
		e->cpu_ns = cfg->cpu_time ? gclock_now(ctx, key.pid, now) - gs->rpc.cpu_start_ns : ~0ULL;
		e->code = status_code(cfg, go_arg(ctx, 3), e->message, &e->message_len);
		bpf_ringbuf_submit(e, submit_flags());
	}
	gs->rpc.start_ns = 0;
	if (done)
		bpf_map_delete_elem(&goroutines, &key);
	return 0;
}

/*
 * At newClientStream's entry: func newClientStream(ctx context.Context, desc *StreamDesc,
 * cc *ClientConn, method string, ...): the context in slots 1-2, desc 3, cc 4, method 5-6.
 */
SEC("uprobe")
int grpc_client_entry(GO_REGS *ctx)
{
	__u64 now = bpf_ktime_get_ns();
	const struct target_config *cfg;
	struct grpc_client_start *e;
	struct rpc_pending *prev, pend = {};
	struct goroutine_key key;
	__u64 cc, method;

	cfg = probe_context(ctx, &key);
	if (!cfg || !cfg->grpc_client)
		return 0;
	cc = go_arg(ctx, 4);
	method = go_arg(ctx, 5);
	prev = bpf_map_lookup_elem(&rpc_pending, &key);
	/*
	 * The prologue's re-run after a stack growth: the same call, not yet given its stream. An
	 * entry whose stream was made is a call that went on (or failed before its header fields
	 * were built): this is a new one.
	 */
	if (prev && prev->start_ns && prev->cc == cc && prev->method == method)
		return 0;

	e = bpf_ringbuf_reserve(&events, sizeof(*e), 0);
	if (!e) {
		count_drop(DROP_RINGBUF_FULL);
		return 0;
	}
	fill_header(&e->hdr, EVENT_GRPC_CLIENT_START, &key, now);
	e->cookie = (__u32)bpf_get_attach_cookie(ctx);
	child_span(ctx, cfg, &key, &e->ids);
	e->method_len = go_copy_string(e->method, MAX_RPC_METHOD_LEN, (const char *)method,
				       (__s64)go_arg(ctx, 6));
	e->target_len = cfg->grpc_cc_target >= 0 ?
				go_read_string(e->target, MAX_RPC_TARGET_LEN,
					       (void *)(cc + cfg->grpc_cc_target)) :
				0;
	pend.start_ns = now;
	pend.cc = cc;
	pend.method = method;
	span_ctx_of(&pend.ctx, &e->ids);
	pend.ctx.live = cfg->propagate;
	if (cfg->propagate)
		track_process(cfg, key.pid);
	if (bpf_map_update_elem(&rpc_pending, &key, &pend, BPF_ANY)) {
		bpf_ringbuf_discard(e, BPF_RB_NO_WAKEUP);
		count_drop(DROP_INFLIGHT_FULL);
		return 0;
	}
	bpf_ringbuf_submit(e, submit_flags());
	return 0;
}

/*
 * At (*clientStream).newAttemptLocked's entry, its receiver in slot 1: the call begun on this
 * goroutine is this stream's from now on. Later attempts (retries) find nothing to move.
 */
SEC("uprobe")
int grpc_client_stream(GO_REGS *ctx)
{
	const struct target_config *cfg;
	struct rpc_stream_key sk = {};
	struct rpc_stream st = {};
	struct goroutine_key key;
	struct rpc_pending *pend;

	cfg = probe_context(ctx, &key);
	if (!cfg)
		return 0;
	pend = bpf_map_lookup_elem(&rpc_pending, &key);
	if (!pend || !pend->start_ns)
		return 0;
	sk.pid = key.pid;
	sk.cs = go_arg(ctx, 1);
	st.goid = key.goid;
	st.start_ns = pend->start_ns;
	if (bpf_map_update_elem(&rpc_streams, &sk, &st, BPF_ANY))
		count_drop(DROP_INFLIGHT_FULL);
	/* Kept for the header fields, which the stream's transport builds on this goroutine next. */
	pend->start_ns = 0;
	if (!pend->ctx.live)
		bpf_map_delete_elem(&rpc_pending, &key);
	return 0;
}

/* The header fields a call's HEADERS frame is made from, by their slice's array. */
struct rpc_hf_key {
	__u32 pid;
	__u32 _pad;
	__u64 hf;
};

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 16384);
	__type(key, struct rpc_hf_key);
	__type(value, struct span_ctx);
} rpc_hf SEC(".maps");

/*
 * Where (*http2Client).createHeaderFields has returned in NewStream, on the calling goroutine:
 * its result, the []hpack.HeaderField the connection's writer goroutine will encode, is what ties
 * the call to the frame. The slice's array is in result slot 1 (or where the cookie says).
 */
SEC("uprobe")
int grpc_header_fields(GO_REGS *ctx)
{
	__u64 attach_cookie = bpf_get_attach_cookie(ctx);
	__u32 slot = COOKIE_RESULT_SLOT(attach_cookie);
	struct rpc_hf_key hk = {};
	struct goroutine_key key;
	struct rpc_pending *pend;
	const struct target_config *cfg;

	cfg = probe_context(ctx, &key);
	if (!cfg)
		return 0;
	pend = bpf_map_lookup_elem(&rpc_pending, &key);
	if (!pend || pend->start_ns || !pend->ctx.live)
		return 0;
	hk.pid = key.pid;
	hk.hf = go_arg(ctx, slot ? slot : 1);
	if (hk.hf)
		bpf_map_update_elem(&rpc_hf, &hk, &pend->ctx, BPF_ANY);
	bpf_map_delete_elem(&rpc_pending, &key);
	return 0;
}

/* How many of a call's header fields are looked at for a traceparent of its own. */
#define HF_SCAN_MAX 24
/* hpack.HeaderField: Name, Value (strings), Sensitive. */
#define HF_SIZE 40

/*
 * At originateStream's call of (*loopyWriter).writeHeader, on the connection's writer goroutine,
 * when a client's new stream is written: func (l *loopyWriter) writeHeader(streamID uint32,
 * endStream bool, hf []hpack.HeaderField, onWrite func()): the stream id in slot 2, the fields'
 * array and length in slots 4 and 5, as the CALL is about to pass them. A call whose
 * fields gospan knows gets its frame marked for the socket-layer writer, unless its metadata
 * already carries a traceparent (a caller instrumented by hand): that one is left alone.
 */
SEC("uprobe")
int grpc_write_header(GO_REGS *ctx)
{
	struct h2_mark_key mk = {};
	struct rpc_hf_key hk = {};
	struct goroutine_key key;
	const struct target_config *cfg;
	struct span_ctx *sc, mark;
	struct {
		struct go_string name, value;
	} f;
	__u64 hf, n, *cnt, one = 1;
	char buf[16];
	int i;

	cfg = probe_context(ctx, &key);
	if (!cfg)
		return 0;
	hf = go_arg(ctx, 4);
	hk.pid = key.pid;
	hk.hf = hf;
	sc = bpf_map_lookup_elem(&rpc_hf, &hk);
	if (!sc)
		return 0;
	mark = *sc;
	bpf_map_delete_elem(&rpc_hf, &hk);
	n = go_arg(ctx, 5);
	for (i = 0; i < HF_SCAN_MAX && i < n; i++) {
		if (bpf_probe_read_user(&f, sizeof(f), (void *)(hf + i * HF_SIZE)))
			continue;
		if (f.name.len == 11 && !bpf_probe_read_user(buf, 11, f.name.ptr) &&
		    buf[0] == 't' && buf[1] == 'r' && buf[2] == 'a' && buf[3] == 'c' &&
		    buf[4] == 'e' && buf[5] == 'p' && buf[6] == 'a' && buf[7] == 'r' &&
		    buf[8] == 'e' && buf[9] == 'n' && buf[10] == 't') {
			count_propagation(PROP_ALREADY_SET);
			return 0;
		}
		/* ":scheme: https": the frame is encrypted before the socket layer sees it. */
		if (f.name.len == 7 && f.value.len == 5 && !bpf_probe_read_user(buf, 7, f.name.ptr) &&
		    buf[0] == ':' && buf[1] == 's' && buf[2] == 'c' && buf[6] == 'e' &&
		    !bpf_probe_read_user(buf + 7, 5, f.value.ptr) && buf[11] == 's') {
			count_propagation(PROP_TLS);
			return 0;
		}
	}
	mk.pid = key.pid;
	mk.stream_id = (__u32)go_arg(ctx, 2);
	mk.goid = key.goid;
	if (bpf_map_update_elem(&h2_marks, &mk, &mark, BPF_ANY))
		return 0;
	cnt = bpf_map_lookup_elem(&h2_writers, &key);
	if (cnt)
		__sync_fetch_and_add(cnt, 1);
	else
		bpf_map_update_elem(&h2_writers, &key, &one, BPF_NOEXIST);
	return 0;
}

/*
 * At (*csAttempt).finish's entry: func (a *csAttempt) finish(err error), the error in slots 2-3.
 * The first attempt to finish ends the call: a call's only attempt, or its first try when it is
 * retried.
 */
SEC("uprobe")
int grpc_client_end(GO_REGS *ctx)
{
	__u64 now = bpf_ktime_get_ns(), bias;
	const struct target_config *cfg;
	struct grpc_client_end *e;
	struct rpc_stream_key sk = {};
	struct goroutine_key key = {};
	struct rpc_stream *st;
	__u32 cookie = (__u32)bpf_get_attach_cookie(ctx);

	cfg = bpf_map_lookup_elem(&targets, &cookie);
	if (!cfg || cfg->grpc_attempt_cs < 0)
		return 0;
	sk.pid = bpf_get_current_pid_tgid() >> 32;
	sk.cs = go_read_word((void *)go_arg(ctx, 1), cfg->grpc_attempt_cs);
	st = bpf_map_lookup_elem(&rpc_streams, &sk);
	if (!st)
		return 0;
	key.pid = sk.pid;
	key.goid = st->goid;
	e = bpf_ringbuf_reserve(&events, sizeof(*e), 0);
	if (!e) {
		count_drop(DROP_RINGBUF_FULL);
		bpf_map_delete_elem(&rpc_streams, &sk);
		return 0;
	}
	fill_header(&e->hdr, EVENT_GRPC_CLIENT_END, &key, st->start_ns);
	e->end_ns = now;
	bias = load_bias(ctx, cfg->grpc_finish_at);
	e->code = error_code(cfg, go_arg(ctx, 2), go_arg(ctx, 3), bias, e->message,
			     &e->message_len);
	bpf_ringbuf_submit(e, submit_flags());
	bpf_map_delete_elem(&rpc_streams, &sk);
	return 0;
}
