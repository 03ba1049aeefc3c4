// SPDX-License-Identifier: GPL-2.0
/*
 * fasthttp capture (github.com/valyala/fasthttp), which serves and calls HTTP/1 without net/http.
 *
 * Server: in fasthttp's server loop, the direct CALL that reads a request's body (its line and
 * headers are parsed, the handler has not run) starts the request, with &ctx.Request in the first
 * argument register; the CALL that writes its answer (the handler has returned, the status is
 * final) ends it, with the *RequestCtx (or &ctx.Response where writeResponse is inlined). Both are
 * CALLs the kernel emulates. The start reads an incoming traceparent from the parsed headers and
 * makes the new span the goroutine's, as ServeHTTP's entry does (http.bpf.c), so that the
 * handler's calls become its children and a router's template (routes.bpf.c) finds it.
 *
 * Client: (*HostClient).Do makes each attempt with a direct CALL of (*HostClient).do(req, resp).
 * There the span's ids are chosen and its context left for the socket-layer writer under the
 * calling goroutine, which writes the request itself (wire.bpf.c); the first emulated instruction
 * after that CALL ends it, with the error in the result registers. The request's URI is read
 * there, parsed by then whichever way the call came ((*HostClient).Do with a raw URI included),
 * and net/http's client records are sent: a fasthttp call is a CLIENT span like any other.
 *
 * Linked with the other uprobe families into one object (probe.bpf.h).
 */
#include "probe.bpf.h"
#include "go_net.bpf.h"

/* The request headers the walk for trace context reads, and an argsKV's size at most. */
#define FH_HEADERS_MAX 32
#define FH_KV_MAX 64
#define FH_KV_BUF (FH_HEADERS_MAX * FH_KV_MAX)
_Static_assert((FH_KV_BUF & (FH_KV_BUF - 1)) == 0, "FH_KV_BUF: a power of two");

/* The attach cookie of a start site holds its link-time address above the target's. */
#define FH_SITE_AT_SHIFT 32

/*
 * One CPU's scratch: a request's headers, copied in one read, and a header's name; a goroutine's
 * first entry, before it is in the map. Claimed for a program's whole run.
 */
struct fh_scratch {
	__u64 busy;
	__u8 kv[FH_KV_BUF + FH_KV_MAX]; /* slack for the masks of the walk */
	__u64 key[2];			/* a header's name, zero-padded */
	struct goroutine_state state;
};

UPROBE_SCRATCH(fh_scratch, struct fh_scratch)

/* A client attempt in flight, by goroutine: what its end reads. */
struct fh_call {
	__u64 start_ns;
	__u64 req;
	__u64 resp;
	struct span_ids ids;
};

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 65536);
	__type(key, struct goroutine_key);
	__type(value, struct fh_call);
} fh_calls SEC(".maps");

/* A Go []byte's header: a string's, and its capacity. */
struct go_bytes {
	const char *ptr;
	__s64 len;
	__s64 cap;
};

/* The values of a request's Traceparent and Tracestate headers; a length 0 when absent. */
struct fh_context {
	struct go_string tp;
	struct go_string ts;
};

/*
 * The trace context among the request headers at HDRS (a []argsKV, which fasthttp fills as it
 * parses them, names normalized as "Traceparent") into OUT: the last Traceparent's and
 * Tracestate's values, a length 0 when absent. The headers are copied in one read; a request with
 * more than FH_HEADERS_MAX of them is searched in its first ones only. SC: this CPU's scratch,
 * held.
 *
 * A global function (not inlined, not static), as go_map.bpf.c's walk: the verifier checks it
 * once for a program. Inlined, with a branch a byte in the comparison of the names, the walk was
 * checked again for every path that came to it: 755k instructions for fasthttp_server_entry. A
 * name is compared as two words with one branch: its bytes after a zeroed buffer, every byte
 * ORed with 0x20, which folds letters to lowercase (the names are letters only) and the zero
 * padding to spaces.
 */
__noinline int gospan_fasthttp_context(const struct target_config *cfg, struct fh_scratch *sc,
				       __u64 hdrs, struct fh_context *out)
{
	__u64 tp_head = word8("tracepar"), tp_tail = word8("ent     ");
	__u64 ts_head = word8("tracesta"), ts_tail = word8("te      ");
	__u64 lower = 0x2020202020202020ULL, n, size, o, i, klen, head, tail;
	const struct go_string *k, *v;
	struct go_bytes s;

	if (!cfg || !sc || !out)
		return 0;
	out->tp.len = out->ts.len = 0;
	if (cfg->fh_kv_size <= 0 || cfg->fh_kv_size > FH_KV_MAX || cfg->fh_kv_key < 0 ||
	    cfg->fh_kv_value < 0 || bpf_probe_read_user(&s, sizeof(s), (const void *)hdrs) ||
	    !s.ptr || s.len <= 0)
		return 0;
	n = s.len < FH_HEADERS_MAX ? s.len : FH_HEADERS_MAX;
	size = n * cfg->fh_kv_size;
	asm volatile("" : "+r"(size));
	if (size > FH_KV_BUF || bpf_probe_read_user(sc->kv, size, s.ptr))
		return 0;
	for (i = 0; i < FH_HEADERS_MAX; i++) {
		if (i >= n)
			break;
		o = i * cfg->fh_kv_size;
		k = (const void *)(sc->kv + ((o + cfg->fh_kv_key) & (FH_KV_BUF - 1)));
		v = (const void *)(sc->kv + ((o + cfg->fh_kv_value) & (FH_KV_BUF - 1)));
		klen = k->len;
		if (klen != 11 && klen != 10)
			continue;
		sc->key[0] = sc->key[1] = 0;
		/*
		 * Clang tests (KLEN & ~1) == 10, which bounds a copy of KLEN only: the mask, which
		 * clang must keep past the barrier, bounds the length read for the verifier.
		 */
		asm volatile("" : "+r"(klen));
		if (bpf_probe_read_user(sc->key, klen & 15, k->ptr))
			continue;
		head = sc->key[0] | lower;
		tail = sc->key[1] | lower;
		if (!((head ^ tp_head) | (tail ^ tp_tail) | (klen ^ 11)))
			out->tp = *v;
		else if (!((head ^ ts_head) | (tail ^ ts_tail) | (klen ^ 10)))
			out->ts = *v;
	}
	return 1;
}

/* Copies fasthttp's method at REQ + OFF into DST: its Method() says GET when it is empty. */
static __always_inline __u32 read_method(char *dst, const void *req, __s64 off)
{
	__u32 n = go_read_string(dst, MAX_METHOD_LEN, req + off);

	if (n)
		return n;
	dst[0] = 'G';
	dst[1] = 'E';
	dst[2] = 'T';
	return 3;
}

/* The request's start, with this CPU's scratch claimed (SC). */
static __always_inline void server_start(GO_REGS *ctx, struct fh_scratch *sc)
{
	__u64 now = bpf_ktime_get_ns(), cookie = bpf_get_attach_cookie(ctx);
	const struct target_config *cfg;
	struct fasthttp_server_start *e;
	struct span_ctx *outer = NULL;
	struct inflight_call st = {};
	/* Parsed here, then copied: the global functions are handed stack and map memory only. */
	struct span_ids in = {};
	struct fh_context hc = {};
	struct goroutine_key key;
	struct goroutine_state *gs;
	void *req, *rctx;
	bool has_tp = false;
	__u8 tls = 0;

	cfg = probe_context(ctx, &key);
	if (!cfg || !cfg->fasthttp_server)
		return;
	req = (void *)go_arg(ctx, 1);
	rctx = req - cfg->fh_ctx_request;

	/*
	 * A request of this goroutine's still open never got to its answer's CALL: its handler
	 * hijacked the connection without a response (HijackSetNoResponse). It ends here: user
	 * space drops it when this one opens (counted as lost, as a call without an end is), and
	 * this one nests where that one did, not in it.
	 */
	gs = own_state(&key);
	if (gs && gs->server.start_ns)
		outer = gs->server.has_prev ? &gs->server.prev : NULL;
	else if (gs && gs->active.live)
		outer = &gs->active;

	e = bpf_ringbuf_reserve(&events, sizeof(*e), 0);
	if (!e) {
		count_drop(DROP_RINGBUF_FULL);
		return;
	}
	fill_header(&e->hdr, EVENT_FASTHTTP_SERVER_START, &key, now);
	e->cookie = (__u32)cookie;
	e->method_len = read_method(e->method, req, cfg->fh_req_method);
	e->uri_len = go_read_string(e->uri, MAX_REQUEST_URI_LEN, req + cfg->fh_req_uri);
	e->host_len = go_read_string(e->host, MAX_HOST_LEN, req + cfg->fh_req_host);
	e->proto_len = cfg->fh_req_proto >= 0 ?
			       go_read_string(e->proto, MAX_PROTO_LEN, req + cfg->fh_req_proto) :
			       0;
	e->content_length = cfg->fh_req_content_length >= 0 ?
				    (__s64)go_read_word(req, cfg->fh_req_content_length) :
				    -1;
	if (cfg->fh_req_tls >= 0)
		bpf_probe_read_user(&tls, 1, req + cfg->fh_req_tls);
	e->tls = tls != 0;
	/* the RequestCtx's net.Conn */
	read_conn_peer(cfg, cfg->fh_ctx_conn >= 0 ? rctx + cfg->fh_ctx_conn : NULL,
		       GO_IP(ctx) - (cookie >> FH_SITE_AT_SHIFT), &e->peer);

	if (outer)
		st.prev = *outer;
	st.has_prev = outer != NULL;
	if (cfg->propagate && cfg->fh_req_headers >= 0 &&
	    gospan_fasthttp_context(cfg, sc, (__u64)req + cfg->fh_req_headers, &hc))
		has_tp = gospan_traceparent_read((__u64)hc.tp.ptr, hc.tp.len, &in);
	e->ids = in;
	server_ids(cfg, &e->ids, has_tp, outer);
	e->tracestate_len = 0;
	if (e->ids.remote_parent && hc.ts.len > 0) {
		e->tracestate_len =
		    go_copy_string(e->tracestate, MAX_TRACESTATE_LEN, hc.ts.ptr, hc.ts.len);
		keep_tracestate(key.pid, e->ids.trace_id, e->tracestate, e->tracestate_len);
	}

	/* No ResponseWriter: rw_itab 0 tells go_panic there is no net/http pattern to read. */
	st.start_ns = now;
	st.req = (__u64)rctx;
	st.cpu_start_ns = cfg->cpu_time ? gclock_now(ctx, key.pid, now) : 0;
	if (!gs) {
		__builtin_memset(&sc->state, 0, sizeof(sc->state));
		if (bpf_map_update_elem(&goroutines, &key, &sc->state, BPF_ANY) ||
		    !(gs = bpf_map_lookup_elem(&goroutines, &key))) {
			bpf_ringbuf_discard(e, BPF_RB_NO_WAKEUP);
			count_drop(DROP_INFLIGHT_FULL);
			return;
		}
	}
	gs->server = st;
	span_ctx_of(&gs->active, &e->ids);
	bpf_ringbuf_submit(e, submit_flags());
}

SEC("uprobe")
int fasthttp_server_entry(GO_REGS *ctx)
{
	struct fh_scratch *sc = fh_scratch_claim();

	if (sc) {
		server_start(ctx, sc);
		scratch_unclaim(&sc->busy);
	}
	return 0;
}

/* At the CALL that writes the answer: the status is final, and nothing of it is sent yet. */
SEC("uprobe")
int fasthttp_server_end(GO_REGS *ctx)
{
	__u64 now = bpf_ktime_get_ns();
	const struct target_config *cfg;
	struct http_server_end *e;
	struct goroutine_key key;
	struct inflight_call *st;
	void *rctx;

	cfg = probe_context(ctx, &key);
	if (!cfg || !cfg->fasthttp_server)
		return 0;
	/* None: begun before we attached, or an answer to a request never read whole. */
	st = server_call_end(&key);
	if (!st)
		return 0;
	e = bpf_ringbuf_reserve(&events, sizeof(*e), 0);
	if (!e) {
		count_drop(DROP_RINGBUF_FULL);
		st->start_ns = 0;
		return 0;
	}
	/*
	 * The ctx answering: the request's own, or the one a TimeoutHandler that timed out swapped
	 * in, which holds the answer that goes out.
	 */
	rctx = (void *)go_arg(ctx, 1) - cfg->fh_end_ctx;
	fill_header(&e->hdr, EVENT_FASTHTTP_SERVER_END, &key, st->start_ns);
	e->end_ns = now;
	e->rw_itab = 0;
	e->status = (__s64)go_read_word(rctx, cfg->fh_ctx_response + cfg->fh_resp_status);
	e->cpu_ns = cfg->cpu_time ? gclock_now(ctx, key.pid, now) - st->cpu_start_ns : ~0ULL;
	e->pattern_len = 0;
	bpf_ringbuf_submit(e, submit_flags());
	st->start_ns = 0;
	return 0;
}

/*
 * Leaves the attempt's context CALL for the socket-layer writer under goroutine KEY, whose next
 * write on a socket is the request (fasthttp writes it on the calling goroutine, its line and
 * headers in one write when they fit the client's 4 KiB buffer); not when the request carries
 * its own traceparent. SC, this CPU's scratch, held.
 */
static __always_inline void leave_for_wire(const struct target_config *cfg,
					   const struct goroutine_key *key, struct fh_call *call,
					   struct fh_scratch *sc)
{
	struct pending_ctx pc = {};
	struct fh_context hc = {};

	track_process(cfg, key->pid);
	if (cfg->fh_req_headers >= 0 &&
	    gospan_fasthttp_context(cfg, sc, call->req + cfg->fh_req_headers, &hc)) {
		if (hc.tp.len) {
			count_propagation(PROP_ALREADY_SET);
			return;
		}
	}
	span_ctx_of(&pc.ctx, &call->ids);
	if (bpf_map_lookup_elem(&pending, key))
		count_propagation(PROP_UNSEEN);
	bpf_map_update_elem(&pending, key, &pc, BPF_ANY);
}

/* At (*HostClient).Do's CALL of do(req, resp): an attempt begins. */
SEC("uprobe")
int fasthttp_client_entry(GO_REGS *ctx)
{
	const struct target_config *cfg;
	struct goroutine_key key;
	struct fh_call call = {};
	struct fh_scratch *sc;

	cfg = probe_context(ctx, &key);
	if (!cfg || !cfg->fasthttp_client)
		return 0;
	call.start_ns = bpf_ktime_get_ns();
	call.req = go_arg(ctx, 2);
	call.resp = go_arg(ctx, 3);
	/* A child of the span this goroutine works for; outside any request, a new trace. */
	child_span(ctx, cfg, &key, &call.ids);
	if (bpf_map_update_elem(&fh_calls, &key, &call, BPF_ANY)) {
		count_drop(DROP_INFLIGHT_FULL);
		return 0;
	}
	if (!cfg->propagate)
		return 0;
	sc = fh_scratch_claim();
	if (!sc)
		return 0;
	leave_for_wire(cfg, &key, &call, sc);
	scratch_unclaim(&sc->busy);
	return 0;
}

/* An https request: encrypted before the socket layer sees it, so its context cannot go out. */
static __always_inline bool scheme_https(const struct http_client_start *e)
{
	return e->scheme_len == 5 && (e->scheme[4] | 0x20) == 's';
}

/*
 * After the CALL of do: the attempt's error in the result slots (its itab first, in the slot the
 * cookie names when the caller moved it), retry in the first. Its span is sent whole, as
 * net/http's client records: the start, with the URI as the attempt used it, then the end.
 */
SEC("uprobe")
int fasthttp_client_end(GO_REGS *ctx)
{
	__u64 now = bpf_ktime_get_ns(), cookie = bpf_get_attach_cookie(ctx);
	__u32 slot = COOKIE_RESULT_SLOT(cookie);
	const struct target_config *cfg;
	struct http_client_start *s;
	struct http_client_end *e;
	struct pending_ctx *pc;
	struct goroutine_key key;
	struct fh_call *call;
	bool https = false;
	void *req, *resp;
	__u64 err;

	cfg = probe_context(ctx, &key);
	if (!cfg)
		return 0;
	call = bpf_map_lookup_elem(&fh_calls, &key);
	if (!call)
		return 0;
	err = go_arg(ctx, slot ? slot : 2);
	req = (void *)call->req;
	resp = (void *)call->resp;

	s = bpf_ringbuf_reserve(&events, sizeof(*s), 0);
	e = s ? bpf_ringbuf_reserve(&events, sizeof(*e), 0) : NULL;
	if (!e) {
		if (s)
			bpf_ringbuf_discard(s, BPF_RB_NO_WAKEUP);
		count_drop(DROP_RINGBUF_FULL);
		goto out;
	}
	fill_header(&s->hdr, EVENT_HTTP_CLIENT_START, &key, call->start_ns);
	s->cookie = (__u32)cookie;
	s->ids = call->ids;
	s->method_len = read_method(s->method, req, cfg->fh_req_method);
	s->scheme_len = go_read_string(s->scheme, MAX_SCHEME_LEN, req + cfg->fh_uri_scheme);
	s->host_len = go_read_string(s->host, MAX_HOST_LEN, req + cfg->fh_uri_host);
	s->path_len = go_read_string(s->path, MAX_PATH_LEN, req + cfg->fh_uri_path);
	s->query_len = go_read_string(s->query, MAX_QUERY_LEN, req + cfg->fh_uri_query);

	fill_header(&e->hdr, EVENT_HTTP_CLIENT_END, &key, call->start_ns);
	e->end_ns = now;
	__builtin_memcpy(e->span_id, call->ids.span_id, sizeof(e->span_id));
	e->err_itab = err;
	e->status = resp && !err ? (__s64)go_read_word(resp, cfg->fh_resp_status) : 0;
	e->proto_len = resp && !err && cfg->fh_resp_proto >= 0 ?
			       go_read_string(e->proto, MAX_PROTO_LEN, resp + cfg->fh_resp_proto) :
			       0;
	https = scheme_https(s);
	bpf_ringbuf_submit(s, BPF_RB_NO_WAKEUP);
	bpf_ringbuf_submit(e, submit_flags());
out:
	/* A context the writer never took: an https request's, or one that never went out. */
	pc = bpf_map_lookup_elem(&pending, &key);
	if (pc && *(__u64 *)pc->ctx.span_id == *(__u64 *)call->ids.span_id) {
		bpf_map_delete_elem(&pending, &key);
		if (https)
			count_propagation(PROP_TLS);
		else if (!err)
			count_propagation(PROP_UNSEEN);
	}
	bpf_map_delete_elem(&fh_calls, &key);
	return 0;
}
