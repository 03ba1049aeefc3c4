// SPDX-License-Identifier: GPL-2.0
/*
 * net/http capture. Server: uprobes at the entry and every RET of serverHandler.ServeHTTP (plus
 * runtime.gopanic); entry records what arrived, reads an incoming traceparent from the Header map
 * and marks the goroutine as working for the new span. Client: (*Transport).roundTrip's entry and
 * RETs make client spans, children of the goroutine's span; a probe where Request.write calls
 * Header.writeSubset hands the request's context to the socket-layer writer (wire.bpf.c), keyed
 * by the goroutine that writes it. Records carry raw facts and ids; user space pairs them into
 * spans.
 *
 * Linked with the other uprobe families (grpc.bpf.c, db.bpf.c, functions.bpf.c,
 * go_runtime.bpf.c) into one object with one skeleton: what they share is in probe.bpf.h.
 */
#include "probe.bpf.h"
#include "go_map.bpf.h"

/* The license of the whole object the families are linked into. */
char LICENSE[] SEC("license") = "GPL";

/* Outgoing calls in flight, by goroutine. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 65536);
	__type(key, struct goroutine_key);
	__type(value, struct client_call);
} client_calls SEC(".maps");

/*
 * Requests waiting for their traceparent, by Header map: the request is written by the
 * connection's write goroutine, not the caller's, so the goroutine cannot be the key.
 */
struct header_key {
	__u32 pid;
	__u32 _pad;
	__u64 header;
};

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 65536);
	__type(key, struct header_key);
	__type(value, struct span_ctx);
} outgoing SEC(".maps");

/*
 * Where serve_http_entry's time goes, for make bench (bench/README.md, the "bpfprofile" part):
 * built with -DGOSPAN_BPF_PROFILE, each PROF_MARK adds the time since the previous mark to its
 * stage's per-CPU slot; built normally (gospan itself) the marks are nothing. A mark costs a
 * bpf_ktime_get_ns() and a lookup: PROF_CALIBRATE, two marks in a row, measures that.
 */
enum prof_stage {
	PROF_CALIBRATE,	  /* a mark's own cost */
	PROF_CONTEXT,	  /* target config and goroutine id (the first read of the service's memory) */
	PROF_STATE,	  /* the goroutine's map entry, scratch */
	PROF_RESERVE,	  /* ring-buffer reservation, record header */
	PROF_SNAPSHOT,	  /* http.Request's head, in one read */
	PROF_STRINGS,	  /* method, protocol, host, peer address */
	PROF_PATH,	  /* URL pointer, path */
	PROF_TRACEPARENT, /* the Header map walk */
	PROF_IDS,	  /* span and trace ids, sampling */
	PROF_STORE,	  /* the goroutine's entry written */
	PROF_SUBMIT,	  /* ring-buffer submit */
	PROF__COUNT,
};

#ifdef GOSPAN_BPF_PROFILE
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, PROF__COUNT);
	__type(key, __u32);
	__type(value, __u64);
} prof SEC(".maps");

static __always_inline void prof_mark(__u32 stage, __u64 *last)
{
	__u64 now = bpf_ktime_get_ns(), *slot = bpf_map_lookup_elem(&prof, &stage);

	if (slot)
		*slot += now - *last;
	*last = bpf_ktime_get_ns();
}
#define PROF_VARS __u64 prof_last = bpf_ktime_get_ns()
#define PROF_MARK(stage) prof_mark(stage, &prof_last)
#else
#define PROF_VARS
#define PROF_MARK(stage) \
	do {             \
	} while (0)
#endif

/* Header names as net/http canonicalises them. Built on the stack: see hex_digit(). */
#define TRACEPARENT_KEY(k) struct map_key k = { .name = "Traceparent", .len = 11 }
#define TRACESTATE_KEY(k) struct map_key k = { .name = "Tracestate", .len = 10 }

/* The pattern the mux matched: Request.Pattern (Go 1.23+) or Request.pat.str (Go 1.22). */
static __always_inline __u32 read_pattern(const struct target_config *cfg, void *req, char *dst)
{
	void *pat;

	if (cfg->req_pattern >= 0)
		return go_read_string(dst, MAX_PATTERN_LEN, req + cfg->req_pattern);
	if (cfg->req_pat < 0 || cfg->pattern_str < 0)
		return 0;
	pat = (void *)go_read_word(req, cfg->req_pat);
	return pat ? go_read_string(dst, MAX_PATTERN_LEN, pat + cfg->pattern_str) : 0;
}

/* Reads the traceparent header of the Header map HDR into IDS; false when absent or malformed. */
static __always_inline bool read_traceparent(const struct target_config *cfg, void *hdr,
					     struct span_ids *ids)
{
	TRACEPARENT_KEY(key);
	struct go_string val = {};

	return gospan_header_find(cfg, (__u64)hdr, &key, &val) &&
	       gospan_traceparent_read((__u64)val.ptr, val.len, ids);
}

/* Copies the head of the request REQ, up to the last field read at entry, into SC. */
static __always_inline void req_snapshot(const struct target_config *cfg, struct scratch *sc,
					 const void *req, struct req_view *v)
{
	__u64 end = 0;

	end = field_end(cfg->req_method, sizeof(struct go_string), end);
	end = field_end(cfg->req_url, 8, end);
	end = field_end(cfg->req_proto, sizeof(struct go_string), end);
	end = field_end(cfg->req_host, sizeof(struct go_string), end);
	end = field_end(cfg->req_remote_addr, sizeof(struct go_string), end);
	end = field_end(cfg->req_content_length, 8, end);
	end = field_end(cfg->req_tls, 8, end);
	end = field_end(cfg->req_header, 8, end);
	snap_head(sc, req, end, v);
}

/* ServeHTTP's entry, with this CPU's scratch claimed (SC). */
static __always_inline void serve_http_start(GO_REGS *ctx, struct scratch *sc)
{
	__u64 now = bpf_ktime_get_ns();
	const struct target_config *cfg;
	struct http_server_start *e;
	struct goroutine_key key;
	struct goroutine_state *gs;
	struct inflight_call st = {};
	struct span_ctx *outer = NULL;
	struct go_string peer;
	struct req_view rv;
	void *req, *url, *hdr;
	bool has_tp;
	PROF_VARS;

	PROF_MARK(PROF_CALIBRATE);
	cfg = probe_context(ctx, &key);
	if (!cfg)
		return;
	req = (void *)go_arg(ctx, cfg->arg_req);
	PROF_MARK(PROF_CONTEXT);

	/*
	 * A stack-growth check at the top of the function re-runs the prologue after
	 * runtime.morestack, firing this probe twice for one call with the same request: keep the
	 * first start. A different request means the earlier call never returned (it panicked and
	 * something recovered above us); user space resolves that one on seeing this start. One
	 * user space has ended already (forgotten) is ended first by own_state(): its span is over.
	 */
	gs = own_state(&key);
	if (gs) {
		if (gs->server.start_ns && gs->server.req == (__u64)req)
			return;
		if (gs->active.live)
			outer = &gs->active;
	}
	PROF_MARK(PROF_STATE);

	e = bpf_ringbuf_reserve(&events, sizeof(*e), 0);
	if (!e) {
		count_drop(DROP_RINGBUF_FULL);
		return;
	}
	fill_header(&e->hdr, EVENT_HTTP_SERVER_START, &key, now);
	e->cookie = (__u32)bpf_get_attach_cookie(ctx);
	PROF_MARK(PROF_RESERVE);
	req_snapshot(cfg, sc, req, &rv);
	PROF_MARK(PROF_SNAPSHOT);
	e->method_len = req_string(&rv, cfg->req_method, e->method, MAX_METHOD_LEN);
	e->proto_len = req_string(&rv, cfg->req_proto, e->proto, MAX_PROTO_LEN);
	e->host_len = req_string(&rv, cfg->req_host, e->host, MAX_HOST_LEN);
	peer.ptr = (const char *)req_word(&rv, cfg->req_remote_addr);
	peer.len = (__s64)req_word(&rv, cfg->req_remote_addr + 8);
	if (gs && peer.ptr && gs->peer.ptr == (__u64)peer.ptr && gs->peer.len == (__u64)peer.len) {
		/* The connection's next request: the string read for its first. */
		__builtin_memcpy(e->remote_addr, gs->peer.addr, MAX_ADDR_LEN);
		e->remote_addr_len = peer.len;
		peer.ptr = 0; /* nothing new to keep */
	} else {
		e->remote_addr_len = go_copy_string(e->remote_addr, MAX_ADDR_LEN, peer.ptr, peer.len);
	}
	e->content_length = (__s64)req_word(&rv, cfg->req_content_length);
	e->tls = req_word(&rv, cfg->req_tls) != 0;
	PROF_MARK(PROF_STRINGS);
	url = (void *)req_word(&rv, cfg->req_url);
	e->path_len = url ? go_read_string(e->path, MAX_PATH_LEN, url + cfg->url_path) : 0;
	hdr = (void *)req_word(&rv, cfg->req_header);
	PROF_MARK(PROF_PATH);

	/*
	 * Join the caller's trace when it sent one; else nest in the function span this goroutine
	 * is in (--functions), if any; otherwise this request starts a trace.
	 */
	if (outer)
		st.prev = *outer;
	st.has_prev = outer != NULL;
	has_tp = cfg->propagate && read_traceparent(cfg, hdr, &sc->ids);
	if (has_tp)
		e->ids = sc->ids;
	else
		__builtin_memset(&e->ids, 0, sizeof(e->ids));
	PROF_MARK(PROF_TRACEPARENT);
	server_ids(cfg, &e->ids, has_tp, outer);
	e->tracestate_len = 0;
	if (e->ids.remote_parent) {
		TRACESTATE_KEY(ts_key);

		e->tracestate_len =
		    go_header_get(cfg, hdr, &ts_key, e->tracestate, MAX_TRACESTATE_LEN);
		keep_tracestate(key.pid, e->ids.trace_id, e->tracestate, e->tracestate_len);
	}

	PROF_MARK(PROF_IDS);
	st.start_ns = now;
	st.req = (__u64)req;
	st.rw_itab = go_arg(ctx, cfg->arg_rw_itab);
	st.rw_data = go_arg(ctx, cfg->arg_rw_data);
	/* net/http's HTTP/2 server, and no other, gives a request the protocol "HTTP/2.0". */
	st.http2 = PROTO_IS_HTTP2(e->proto, e->proto_len);
	st.cpu_start_ns = cfg->cpu_time ? gclock_now(ctx, key.pid, now) : 0;
	if (!gs) {
		struct goroutine_state *fresh = &sc->state;

		__builtin_memset(fresh, 0, sizeof(*fresh));
		if (bpf_map_update_elem(&goroutines, &key, fresh, BPF_ANY) ||
		    !(gs = bpf_map_lookup_elem(&goroutines, &key))) {
			/* Without the entry no end would pair with this start: send neither. */
			bpf_ringbuf_discard(e, BPF_RB_NO_WAKEUP);
			count_drop(DROP_INFLIGHT_FULL);
			return;
		}
	}
	/* The entry this goroutine's last call left, or the one just made. */
	gs->server = st;
	span_ctx_of(&gs->active, &e->ids);
	if (peer.ptr && peer.len >= 0 && peer.len <= MAX_ADDR_LEN) {
		gs->peer.ptr = (__u64)peer.ptr;
		gs->peer.len = (__u64)peer.len;
		__builtin_memcpy(gs->peer.addr, e->remote_addr, MAX_ADDR_LEN);
	}
	PROF_MARK(PROF_STORE);
	bpf_ringbuf_submit(e, submit_flags());
	PROF_MARK(PROF_SUBMIT);
}

SEC("uprobe")
int serve_http_entry(GO_REGS *ctx)
{
	return with_scratch(ctx, serve_http_start);
}

/*
 * The status the handler wrote (0: none, which net/http answers with 200; -1: unknown): in
 * net/http's *response for HTTP/1, behind the HTTP/2 writer's pointer to its state for HTTP/2.
 */
static __always_inline __s64 response_status(const struct target_config *cfg,
					     const struct inflight_call *st)
{
	void *rws;

	if (!st->http2)
		return cfg->response_status >= 0 ?
			       (__s64)go_read_word((void *)st->rw_data, cfg->response_status) :
			       -1;
	if (cfg->h2_rw_rws < 0 || cfg->h2_rws_status < 0)
		return -1;
	rws = (void *)go_read_word((void *)st->rw_data, cfg->h2_rw_rws);
	return rws ? (__s64)go_read_word(rws, cfg->h2_rws_status) : -1;
}

/* ServeHTTP's end; HTTP2: at an HTTP/2 server's handlerDone CALL (serve_http2_done). */
static __always_inline int serve_http_end(GO_REGS *ctx, bool http2)
{
	__u64 now = bpf_ktime_get_ns();
	const struct target_config *cfg;
	struct http_server_end *e;
	struct goroutine_key key;
	struct inflight_call *st;

	cfg = probe_context(ctx, &key);
	if (!cfg)
		return 0;
	/*
	 * An HTTP/2 server's goroutine may run a handler other than net/http's ServeHTTP (x/net's
	 * ServeConn with the service's own, a header list too long): no call began on it, and
	 * none was lost.
	 */
	if (http2 && !bpf_map_lookup_elem(&goroutines, &key))
		return 0;
	/* A call that returns after all, but after user space ended it at its panic, is over. */
	st = server_call_end(&key);
	if (!st)
		return 0;
	e = bpf_ringbuf_reserve(&events, sizeof(*e), 0);
	if (!e) {
		count_drop(DROP_RINGBUF_FULL);
		st->start_ns = 0;
		return 0;
	}
	fill_header(&e->hdr, EVENT_HTTP_SERVER_END, &key, st->start_ns);
	e->end_ns = now;
	e->rw_itab = st->rw_itab;
	e->status = response_status(cfg, st);
	e->cpu_ns = cfg->cpu_time ? gclock_now(ctx, key.pid, now) - st->cpu_start_ns : ~0ULL;

	/* The mux fills in the pattern during the call, so it is read on the way out. */
	e->pattern_len = read_pattern(cfg, (void *)st->req, e->pattern);
	bpf_ringbuf_submit(e, submit_flags());
	st->start_ns = 0;
	return 0;
}

SEC("uprobe")
int serve_http_return(GO_REGS *ctx)
{
	return serve_http_end(ctx, false);
}

/*
 * The direct CALL of the HTTP/2 writer's handlerDone in runHandler's deferred closure, reached
 * only when the handler returned: ServeHTTP's end for HTTP/2 requests (target.c), with the
 * writer's state still the request's.
 */
SEC("uprobe")
int serve_http2_done(GO_REGS *ctx)
{
	return serve_http_end(ctx, true);
}

/*
 * runtime.gopanic fires only when something panics, so it costs nothing per request. A handler
 * that panics never reaches ServeHTTP's RET unless it recovers: tell user space when and where,
 * and let it decide once it knows whether a RET follows.
 */
SEC("uprobe")
int go_panic(GO_REGS *ctx)
{
	const struct target_config *cfg;
	struct goroutine_state *gs;
	struct goroutine_key key;
	struct inflight_call *st;
	struct go_panic *e;

	cfg = probe_context(ctx, &key);
	if (!cfg)
		return 0;
	gs = bpf_map_lookup_elem(&goroutines, &key);
	if (!gs || !gs->server.start_ns || gs->server.panicked)
		return 0;
	st = &gs->server;
	st->panicked = 1;

	e = bpf_ringbuf_reserve(&events, sizeof(*e), 0);
	if (!e) {
		count_drop(DROP_RINGBUF_FULL);
		return 0;
	}
	fill_header(&e->hdr, EVENT_GO_PANIC, &key, st->start_ns);
	e->panic_ns = bpf_ktime_get_ns();
	/* A call without a ResponseWriter is another server's (fasthttp.bpf.c): no http.Request. */
	e->pattern_len = st->rw_itab ? read_pattern(cfg, (void *)st->req, e->pattern) : 0;
	bpf_ringbuf_submit(e, submit_flags());
	return 0;
}

/* An https request: encrypted before the socket layer sees it, so its context cannot go out. */
static __always_inline bool is_https(const struct http_client_start *e)
{
	return e->scheme_len == 5 && e->scheme[0] == 'h' && e->scheme[1] == 't' &&
	       e->scheme[2] == 't' && e->scheme[3] == 'p' && e->scheme[4] == 's';
}

SEC("uprobe")
int client_entry(GO_REGS *ctx)
{
	__u64 now = bpf_ktime_get_ns();
	const struct target_config *cfg;
	struct http_client_start *e;
	struct client_call call = {}, *prev;
	struct goroutine_key key;
	struct header_key hk = {};
	void *req, *url;

	cfg = probe_context(ctx, &key);
	if (!cfg)
		return 0;
	req = (void *)go_arg(ctx, cfg->arg_rt_req);
	/*
	 * As at ServeHTTP's entry: a stack-growth check at the top of roundTrip re-runs its
	 * prologue after runtime.morestack, and the probe fires again for the same call.
	 */
	prev = bpf_map_lookup_elem(&client_calls, &key);
	if (prev && prev->req == (__u64)req)
		return 0;

	e = bpf_ringbuf_reserve(&events, sizeof(*e), 0);
	if (!e) {
		count_drop(DROP_RINGBUF_FULL);
		return 0;
	}
	fill_header(&e->hdr, EVENT_HTTP_CLIENT_START, &key, now);
	e->cookie = (__u32)bpf_get_attach_cookie(ctx);

	/* A child of the span this goroutine works for; outside any request, a new trace. */
	child_span(ctx, cfg, &key, &e->ids);

	e->method_len = go_read_string(e->method, MAX_METHOD_LEN, req + cfg->req_method);
	url = (void *)go_read_word(req, cfg->req_url);
	e->scheme_len = e->host_len = e->path_len = e->query_len = 0;
	if (url) {
		e->scheme_len = go_read_string(e->scheme, MAX_SCHEME_LEN, url + cfg->url_scheme);
		e->host_len = go_read_string(e->host, MAX_HOST_LEN, url + cfg->url_host);
		e->path_len = go_read_string(e->path, MAX_PATH_LEN, url + cfg->url_path);
		e->query_len = go_read_string(e->query, MAX_QUERY_LEN, url + cfg->url_raw_query);
	}

	call.start_ns = now;
	call.req = (__u64)req;
	if (!cfg->propagate) {
		/* nothing goes out */
	} else if (is_https(e)) {
		count_propagation(PROP_TLS);
	} else {
		call.header = go_read_word(req, cfg->req_header);
		track_process(cfg, key.pid);
	}
	span_ctx_of(&call.ctx, &e->ids);
	if (bpf_map_update_elem(&client_calls, &key, &call, BPF_ANY)) {
		bpf_ringbuf_discard(e, BPF_RB_NO_WAKEUP);
		count_drop(DROP_INFLIGHT_FULL);
		return 0;
	}
	if (call.header) {
		hk.pid = key.pid;
		hk.header = call.header;
		bpf_map_update_elem(&outgoing, &hk, &call.ctx, BPF_ANY);
	}
	bpf_ringbuf_submit(e, submit_flags());
	return 0;
}

/*
 * The end of an outgoing call, with its results (*Response, error) in result slots 1 to 3: the
 * error's type word then its data word.
 */
static __always_inline int client_end(GO_REGS *ctx, bool if_no_error)
{
	__u64 now = bpf_ktime_get_ns();
	const struct target_config *cfg;
	struct http_client_end *e;
	struct goroutine_key key;
	struct header_key hk = {};
	struct client_call *call;
	void *resp;

	cfg = probe_context(ctx, &key);
	if (!cfg || (if_no_error && go_arg(ctx, cfg->ret_rt_err)))
		return 0;
	call = bpf_map_lookup_elem(&client_calls, &key);
	if (!call)
		return 0;
	hk.pid = key.pid;
	hk.header = call->header;
	bpf_map_delete_elem(&outgoing, &hk);

	e = bpf_ringbuf_reserve(&events, sizeof(*e), 0);
	if (!e) {
		count_drop(DROP_RINGBUF_FULL);
		bpf_map_delete_elem(&client_calls, &key);
		return 0;
	}
	fill_header(&e->hdr, EVENT_HTTP_CLIENT_END, &key, call->start_ns);
	e->end_ns = now;
	__builtin_memcpy(e->span_id, call->ctx.span_id, sizeof(e->span_id));
	resp = (void *)go_arg(ctx, cfg->ret_rt_resp);
	e->err_itab = go_arg(ctx, cfg->ret_rt_err);
	e->status = resp ? (__s64)go_read_word(resp, cfg->resp_status_code) : 0;
	e->proto_len = resp && cfg->resp_proto >= 0 ?
			       go_read_string(e->proto, MAX_PROTO_LEN, resp + cfg->resp_proto) :
			       0;
	bpf_ringbuf_submit(e, submit_flags());
	bpf_map_delete_elem(&client_calls, &key);
	return 0;
}

/* At the RETs of roundTrip that a call which failed may take. */
SEC("uprobe")
int client_return(GO_REGS *ctx)
{
	return client_end(ctx, false);
}

/*
 * Inside roundTrip, at the JE or JNE that tests the inner round trip's error
 * (exporter/analysis/sites.h):
 * the registers hold that call's results, which roundTrip returns as they are when the error is
 * nil. A call that failed goes on (it may be retried) to a RET that client_return probes.
 */
SEC("uprobe")
int client_success(GO_REGS *ctx)
{
	return client_end(ctx, true);
}

/*
 * Nothing: bench and the start-up check of which instructions this kernel emulates
 * (exporter/analysis/emulation.c) put it where they measure.
 */
SEC("uprobe")
int calibrate(GO_REGS *ctx)
{
	return 0;
}

/*
 * The request whose Header map is HK, with context PC, leaves it for the socket-layer writer
 * unless it carries its own traceparent or its line has gone out; SC, this CPU's scratch, held.
 */
static __always_inline void leave_context(GO_REGS *ctx, const struct target_config *cfg,
					  const struct goroutine_key *key,
					  const struct header_key *hk, const struct pending_ctx *pc,
					  struct scratch *sc)
{
	__u64 w_itab, w;
	__s64 n = 0;
	TRACEPARENT_KEY(tp_key);

	if (go_header_get(cfg, (void *)hk->header, &tp_key, sc->tp, sizeof(sc->tp))) {
		count_propagation(PROP_ALREADY_SET);
		return;
	}
	/* The transport's writer is a *bufio.Writer: where its itab is known, make sure. */
	w_itab = go_arg(ctx, cfg->arg_ws_w_itab);
	w = go_arg(ctx, cfg->arg_ws_w_data);
	if ((cfg->bufio_itab && w_itab != cfg->bufio_itab) || !w ||
	    bpf_probe_read_user(&n, sizeof(n), (void *)w + cfg->bufio_n) || n <= 0) {
		count_propagation(PROP_NO_ROOM);
		return;
	}
	/* A context still here was never taken: its request did not pass a tracked socket. */
	if (bpf_map_lookup_elem(&pending, key))
		count_propagation(PROP_UNSEEN);
	bpf_map_update_elem(&pending, key, pc, BPF_ANY);
}

/*
 * At the call of Header.writeSubset inside (*Request).write, in the connection's write
 * goroutine: the request line is in the transport's buffered writer, not yet on the socket, and
 * the header lines are about to follow. The request's context is left for the socket-layer
 * writer under this goroutine, whose next write on the socket starts with that request line.
 * Nothing is left when the request carries its own traceparent, or when the request line has
 * already gone out (a line longer than the buffer): the next write would not start the request.
 */
SEC("uprobe")
int mark_request(GO_REGS *ctx)
{
	const struct target_config *cfg;
	struct goroutine_key key;
	struct header_key hk = {};
	struct pending_ctx pc = {};
	struct span_ctx *out;
	struct scratch *sc;

	cfg = probe_context(ctx, &key);
	if (!cfg)
		return 0;
	hk.pid = key.pid;
	hk.header = go_arg(ctx, cfg->arg_ws_header);
	out = bpf_map_lookup_elem(&outgoing, &hk);
	if (!out)
		return 0; /* not a request we are tracing (or another header set, e.g. trailers) */
	pc.ctx = *out;
	bpf_map_delete_elem(&outgoing, &hk);
	sc = scratch_claim();
	if (!sc)
		return 0;
	leave_context(ctx, cfg, &key, &hk, &pc, sc);
	scratch_unclaim(&sc->busy);
	return 0;
}

