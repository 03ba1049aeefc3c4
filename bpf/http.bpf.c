// SPDX-License-Identifier: GPL-2.0
/*
 * net/http capture. Server: uprobes at the entry and every RET of serverHandler.ServeHTTP (plus
 * runtime.gopanic); entry records what arrived, reads an incoming traceparent from the Header map
 * and marks the goroutine as working for the new span. Client: (*Transport).roundTrip's entry and
 * RETs make client spans, children of the goroutine's span; a probe where Request.write calls
 * Header.writeSubset writes the traceparent line into the outgoing request; runtime.newproc1's
 * RETs hand a goroutine's span to the goroutines it starts. Function spans and on-CPU time
 * (functions.bpf.h) are included here so that one object holds every program. Records carry raw
 * facts and ids; user space pairs them into spans.
 */
#include <stdbool.h>
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

#include "arch.bpf.h"
#include "events.h"
#include "go_map.bpf.h"
#include "go_types.bpf.h"
#include "trace_context.bpf.h"

char LICENSE[] SEC("license") = "GPL";

/* Unconsumed bytes at which a submit wakes the reader; below it the reader polls on a timer. */
const volatile __u64 wake_threshold = 1 << 20;

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 8 << 20);
} events SEC(".maps");

/* Per-target offsets and register slots; the attach cookie is the index. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, MAX_TARGETS);
	__type(key, __u32);
	__type(value, struct target_config);
} targets SEC(".maps");

/*
 * Calls in flight, by goroutine. LRU so that calls whose RET never comes (a goroutine killed by
 * runtime.Goexit, a process that exits mid-request) can never fill it; user space also deletes
 * the entries of calls it knows panicked.
 */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 65536);
	__type(key, struct goroutine_key);
	__type(value, struct inflight_call);
} inflight SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, DROP__COUNT);
	__type(key, __u32);
	__type(value, __u64);
} drops SEC(".maps");

/* The span each goroutine works for. LRU: goroutines that exit leave their entry behind. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 65536);
	__type(key, struct goroutine_key);
	__type(value, struct span_ctx);
} active SEC(".maps");

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

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, PROP__COUNT);
	__type(key, __u32);
	__type(value, __u64);
} propagation SEC(".maps");

/* Scratch for records and lines too big for the 512-byte stack. */
struct scratch {
	char tp[TRACEPARENT_LEN + 1];
	char line[TRACEPARENT_LINE_LEN];
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct scratch);
} scratch SEC(".maps");

/* Header names as net/http canonicalises them. Built on the stack: see hex_digit(). */
#define TRACEPARENT_KEY(k) struct map_key k = { .name = "Traceparent", .len = 11 }
#define TRACESTATE_KEY(k) struct map_key k = { .name = "Tracestate", .len = 10 }

static __always_inline void count_propagation(__u32 what)
{
	__u64 *cnt = bpf_map_lookup_elem(&propagation, &what);

	if (cnt)
		*cnt += 1;
}

static __always_inline void count_drop(__u32 reason)
{
	__u64 *cnt = bpf_map_lookup_elem(&drops, &reason);

	if (cnt)
		*cnt += 1;
}

/* No wakeup per record: the wakeup costs more than the rest of the probe. */
static __always_inline __u64 submit_flags(void)
{
	return bpf_ringbuf_query(&events, BPF_RB_AVAIL_DATA) >= wake_threshold ?
		       BPF_RB_FORCE_WAKEUP :
		       BPF_RB_NO_WAKEUP;
}

/* Finds this probe's target config and the current goroutine's key; false if unusable. */
static __always_inline const struct target_config *probe_context(GO_REGS *ctx,
								 struct goroutine_key *key)
{
	__u32 cookie = (__u32)bpf_get_attach_cookie(ctx);
	const struct target_config *cfg = bpf_map_lookup_elem(&targets, &cookie);

	if (!cfg) {
		count_drop(DROP_NO_CONFIG);
		return NULL;
	}
	key->pid = bpf_get_current_pid_tgid() >> 32;
	key->_pad = 0;
	key->goid = go_read_word(GO_G_PTR(ctx), cfg->g_goid);
	return cfg;
}

static __always_inline void fill_header(struct record_header *h, __u32 type,
					const struct goroutine_key *key, __u64 start_ns)
{
	h->type = type;
	h->pid = key->pid;
	h->goid = key->goid;
	h->start_ns = start_ns;
}

#include "functions.bpf.h"

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

/* The goroutine now works for the span IDS names; calls it makes become that span's children. */
static __always_inline void set_active(const struct goroutine_key *key, const struct span_ids *ids)
{
	struct span_ctx sc = {};

	__builtin_memcpy(sc.trace_id, ids->trace_id, sizeof(sc.trace_id));
	__builtin_memcpy(sc.span_id, ids->span_id, sizeof(sc.span_id));
	sc.flags = ids->flags;
	bpf_map_update_elem(&active, key, &sc, BPF_ANY);
}

/* Reads the request's traceparent header into IDS; false when absent or malformed. */
static __always_inline bool read_traceparent(const struct target_config *cfg, void *req,
					     struct span_ids *ids)
{
	__u32 zero = 0, n;
	struct scratch *sc = bpf_map_lookup_elem(&scratch, &zero);
	TRACEPARENT_KEY(key);

	if (!sc)
		return false;
	n = go_header_get(cfg, (void *)go_read_word(req, cfg->req_header), &key, sc->tp,
			  sizeof(sc->tp));
	return n && !traceparent_parse(sc->tp, n, ids);
}

SEC("uprobe")
int serve_http_entry(GO_REGS *ctx)
{
	__u64 now = bpf_ktime_get_ns();
	const struct target_config *cfg;
	struct http_server_start *e;
	struct goroutine_key key;
	struct inflight_call *cur;
	struct inflight_call st = {};
	struct span_ctx *outer;
	void *req, *url;

	cfg = probe_context(ctx, &key);
	if (!cfg)
		return 0;
	req = (void *)go_arg(ctx, cfg->arg_req);

	/*
	 * A stack-growth check at the top of the function re-runs the prologue after
	 * runtime.morestack, firing this probe twice for one call with the same request: keep the
	 * first start. A different request means the earlier call never returned (it panicked and
	 * something recovered above us); user space resolves that one on seeing this start.
	 */
	cur = bpf_map_lookup_elem(&inflight, &key);
	if (cur && cur->req == (__u64)req)
		return 0;

	e = bpf_ringbuf_reserve(&events, sizeof(*e), 0);
	if (!e) {
		count_drop(DROP_RINGBUF_FULL);
		return 0;
	}
	fill_header(&e->hdr, EVENT_HTTP_SERVER_START, &key, now);
	e->cookie = (__u32)bpf_get_attach_cookie(ctx);
	e->method_len = go_read_string(e->method, MAX_METHOD_LEN, req + cfg->req_method);
	e->proto_len = go_read_string(e->proto, MAX_PROTO_LEN, req + cfg->req_proto);
	e->host_len = go_read_string(e->host, MAX_HOST_LEN, req + cfg->req_host);
	e->remote_addr_len = go_read_string(e->remote_addr, MAX_ADDR_LEN, req + cfg->req_remote_addr);
	e->content_length = (__s64)go_read_word(req, cfg->req_content_length);
	e->tls = go_read_word(req, cfg->req_tls) != 0;
	url = (void *)go_read_word(req, cfg->req_url);
	e->path_len = url ? go_read_string(e->path, MAX_PATH_LEN, url + cfg->url_path) : 0;

	/*
	 * Join the caller's trace when it sent one; else nest in the function span this goroutine
	 * is in (--functions), if any; otherwise this request starts a trace.
	 */
	__builtin_memset(&e->ids, 0, sizeof(e->ids));
	outer = bpf_map_lookup_elem(&active, &key);
	if (outer)
		st.prev = *outer;
	st.has_prev = outer != NULL;
	if (!read_traceparent(cfg, req, &e->ids)) {
		child_ids(&e->ids, outer, cfg->root_sampler, cfg->parent_based, cfg->ratio_bound);
	} else if (!cfg->parent_based) {
		e->ids.flags = (e->ids.flags & ~1) |
			       sample_root(cfg->root_sampler, cfg->ratio_bound, e->ids.trace_id);
	}
	if (e->ids.remote_parent)
		random_id(e->ids.span_id, sizeof(e->ids.span_id));
	e->tracestate_len = 0;
	if (e->ids.remote_parent) {
		TRACESTATE_KEY(ts_key);

		e->tracestate_len = go_header_get(cfg, (void *)go_read_word(req, cfg->req_header),
						  &ts_key, e->tracestate, MAX_TRACESTATE_LEN);
	}

	st.start_ns = now;
	st.req = (__u64)req;
	st.rw_itab = go_arg(ctx, cfg->arg_rw_itab);
	st.rw_data = go_arg(ctx, cfg->arg_rw_data);
	st.cpu_start_ns = cfg->cpu_time ? gclock_now(&key, now) : 0;
	if (bpf_map_update_elem(&inflight, &key, &st, BPF_ANY)) {
		/* Without the entry no RET would pair with this start: send neither. */
		bpf_ringbuf_discard(e, BPF_RB_NO_WAKEUP);
		count_drop(DROP_INFLIGHT_FULL);
		return 0;
	}
	set_active(&key, &e->ids);
	bpf_ringbuf_submit(e, submit_flags());
	return 0;
}

SEC("uprobe")
int serve_http_return(GO_REGS *ctx)
{
	__u64 now = bpf_ktime_get_ns();
	const struct target_config *cfg;
	struct http_server_end *e;
	struct goroutine_key key;
	struct inflight_call *st;

	cfg = probe_context(ctx, &key);
	if (!cfg)
		return 0;
	st = bpf_map_lookup_elem(&inflight, &key);
	if (!st)
		return 0; /* the call began before we attached */

	/* Back to the function span the request was served in, if any. */
	if (st->has_prev)
		bpf_map_update_elem(&active, &key, &st->prev, BPF_ANY);
	else
		bpf_map_delete_elem(&active, &key);
	e = bpf_ringbuf_reserve(&events, sizeof(*e), 0);
	if (!e) {
		count_drop(DROP_RINGBUF_FULL);
		bpf_map_delete_elem(&inflight, &key);
		return 0;
	}
	fill_header(&e->hdr, EVENT_HTTP_SERVER_END, &key, st->start_ns);
	e->end_ns = now;
	e->rw_itab = st->rw_itab;
	e->status = cfg->response_status >= 0 ?
			    (__s64)go_read_word((void *)st->rw_data, cfg->response_status) :
			    0;
	e->cpu_ns = cfg->cpu_time ? gclock_now(&key, now) - st->cpu_start_ns : ~0ULL;

	/* The mux fills in the pattern during the call, so it is read on the way out. */
	e->pattern_len = read_pattern(cfg, (void *)st->req, e->pattern);
	bpf_ringbuf_submit(e, submit_flags());
	bpf_map_delete_elem(&inflight, &key);
	return 0;
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
	struct goroutine_key key;
	struct inflight_call *st;
	struct go_panic *e;

	cfg = probe_context(ctx, &key);
	if (!cfg)
		return 0;
	st = bpf_map_lookup_elem(&inflight, &key);
	if (!st || st->panicked)
		return 0;
	st->panicked = 1;

	e = bpf_ringbuf_reserve(&events, sizeof(*e), 0);
	if (!e) {
		count_drop(DROP_RINGBUF_FULL);
		return 0;
	}
	fill_header(&e->hdr, EVENT_GO_PANIC, &key, st->start_ns);
	e->panic_ns = bpf_ktime_get_ns();
	e->pattern_len = read_pattern(cfg, (void *)st->req, e->pattern);
	bpf_ringbuf_submit(e, submit_flags());
	return 0;
}

SEC("uprobe")
int client_entry(GO_REGS *ctx)
{
	__u64 now = bpf_ktime_get_ns();
	const struct target_config *cfg;
	struct http_client_start *e;
	struct client_call call = {};
	struct goroutine_key key;
	struct header_key hk = {};
	struct span_ctx *parent;
	void *req, *url;

	cfg = probe_context(ctx, &key);
	if (!cfg)
		return 0;
	req = (void *)go_arg(ctx, cfg->arg_rt_req);

	e = bpf_ringbuf_reserve(&events, sizeof(*e), 0);
	if (!e) {
		count_drop(DROP_RINGBUF_FULL);
		return 0;
	}
	fill_header(&e->hdr, EVENT_HTTP_CLIENT_START, &key, now);
	e->cookie = (__u32)bpf_get_attach_cookie(ctx);

	/* A child of the span this goroutine works for; outside any request, a new trace. */
	__builtin_memset(&e->ids, 0, sizeof(e->ids));
	parent = bpf_map_lookup_elem(&active, &key);
	if (!parent && cfg->g_parent_goid >= 0) {
		/*
		 * A goroutine the request's goroutine started: one read of g.parentGoid finds
		 * its span at no extra probe hit (deeper generations: --follow-goroutines).
		 */
		struct goroutine_key pk = { .pid = key.pid };

		pk.goid = go_read_word(GO_G_PTR(ctx), cfg->g_parent_goid);
		parent = bpf_map_lookup_elem(&active, &pk);
	}
	if (parent) {
		__builtin_memcpy(e->ids.trace_id, parent->trace_id, sizeof(e->ids.trace_id));
		__builtin_memcpy(e->ids.parent_span_id, parent->span_id, sizeof(parent->span_id));
		e->ids.flags = cfg->parent_based ?
				       parent->flags :
				       (parent->flags & ~1) | sample_root(cfg->root_sampler,
									cfg->ratio_bound,
									e->ids.trace_id);
	} else {
		random_id(e->ids.trace_id, sizeof(e->ids.trace_id));
		e->ids.flags = sample_root(cfg->root_sampler, cfg->ratio_bound, e->ids.trace_id);
	}
	random_id(e->ids.span_id, sizeof(e->ids.span_id));

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
	call.header = go_read_word(req, cfg->req_header);
	__builtin_memcpy(call.ctx.trace_id, e->ids.trace_id, sizeof(call.ctx.trace_id));
	__builtin_memcpy(call.ctx.span_id, e->ids.span_id, sizeof(call.ctx.span_id));
	call.ctx.flags = e->ids.flags;
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

SEC("uprobe")
int client_return(GO_REGS *ctx)
{
	__u64 now = bpf_ktime_get_ns();
	const struct target_config *cfg;
	struct http_client_end *e;
	struct goroutine_key key;
	struct header_key hk = {};
	struct client_call *call;
	void *resp;

	cfg = probe_context(ctx, &key);
	if (!cfg)
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
	/* Results: (*Response, error), the error as its type word then its data word. */
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

/*
 * At the call of Header.writeSubset inside (*Request).write, in the connection's write
 * goroutine: the request line is in the transport's buffered writer and the header lines are
 * about to follow. A traceparent line written there, and the buffer's length moved past it, is
 * sent as one more header. Nothing is written when the buffer has no room, when the request
 * already carries a traceparent, or when the writer is not the *bufio.Writer expected.
 */
SEC("uprobe")
int inject_traceparent(GO_REGS *ctx)
{
	const struct target_config *cfg;
	struct goroutine_key key;
	struct header_key hk = {};
	struct span_ctx *out;
	struct scratch *sc;
	struct {
		__u64 ptr;
		__s64 len;
		__s64 cap;
	} buf;
	__u64 w_itab, w;
	__s64 n;
	__u32 zero = 0;

	cfg = probe_context(ctx, &key);
	if (!cfg)
		return 0;
	hk.pid = key.pid;
	hk.header = go_arg(ctx, cfg->arg_ws_header);
	out = bpf_map_lookup_elem(&outgoing, &hk);
	if (!out)
		return 0; /* not a request we are tracing (or another header set, e.g. trailers) */
	sc = bpf_map_lookup_elem(&scratch, &zero);
	if (!sc)
		return 0;
	TRACEPARENT_KEY(tp_key);

	if (go_header_get(cfg, (void *)hk.header, &tp_key, sc->tp, sizeof(sc->tp))) {
		count_propagation(PROP_ALREADY_SET);
		goto done;
	}
	w_itab = go_arg(ctx, cfg->arg_ws_w_itab);
	w = go_arg(ctx, cfg->arg_ws_w_data);
	if (!cfg->bufio_itab || w_itab != cfg->bufio_itab || !w) {
		count_propagation(PROP_NOT_BUFIO);
		goto done;
	}
	if (bpf_probe_read_user(&buf, sizeof(buf), (void *)w + cfg->bufio_buf) ||
	    bpf_probe_read_user(&n, sizeof(n), (void *)w + cfg->bufio_n) || !buf.ptr || n < 0 ||
	    n > buf.len || buf.len > buf.cap) {
		count_propagation(PROP_NOT_BUFIO);
		goto done;
	}
	if (buf.len - n < TRACEPARENT_LINE_LEN) {
		count_propagation(PROP_NO_ROOM);
		goto done;
	}
	traceparent_line(sc->line, out);
	if (bpf_probe_write_user((void *)(buf.ptr + n), sc->line, TRACEPARENT_LINE_LEN)) {
		count_propagation(PROP_WRITE_REFUSED);
		goto done;
	}
	n += TRACEPARENT_LINE_LEN;
	if (bpf_probe_write_user((void *)w + cfg->bufio_n, &n, sizeof(n))) {
		count_propagation(PROP_WRITE_REFUSED);
		goto done;
	}
	count_propagation(PROP_INJECTED);
done:
	bpf_map_delete_elem(&outgoing, &hk);
	return 0;
}

/*
 * At runtime.newproc1's RETs, on the system stack: the new goroutine is its result, and it
 * records who started it (g.parentGoid, Go 1.21+). If the parent works for a span, so does the
 * child, MAX_GOROUTINE_DEPTH generations down at most.
 */
SEC("uprobe")
int goroutine_created(GO_REGS *ctx)
{
	const struct target_config *cfg;
	struct goroutine_key parent = {}, child = {};
	struct span_ctx *pctx, cctx;
	__u32 cookie = (__u32)bpf_get_attach_cookie(ctx);
	void *newg;

	cfg = bpf_map_lookup_elem(&targets, &cookie);
	if (!cfg || cfg->g_parent_goid < 0)
		return 0;
	newg = (void *)go_arg(ctx, cfg->ret_newproc_g);
	if (!newg)
		return 0;
	parent.pid = child.pid = bpf_get_current_pid_tgid() >> 32;
	parent.goid = go_read_word(newg, cfg->g_parent_goid);
	pctx = bpf_map_lookup_elem(&active, &parent);
	if (!pctx || pctx->depth >= MAX_GOROUTINE_DEPTH)
		return 0;
	cctx = *pctx;
	cctx.depth++;
	child.goid = go_read_word(newg, cfg->g_goid);
	bpf_map_update_elem(&active, &child, &cctx, BPF_ANY);
	return 0;
}
