// SPDX-License-Identifier: GPL-2.0
/*
 * net/http capture. Server: uprobes at the entry and every RET of serverHandler.ServeHTTP (plus
 * runtime.gopanic); entry records what arrived, reads an incoming traceparent from the Header map
 * and marks the goroutine as working for the new span. Client: (*Transport).roundTrip's entry and
 * RETs make client spans, children of the goroutine's span; a probe where Request.write calls
 * Header.writeSubset hands the request's context to the socket-layer writer (wire.bpf.c), keyed
 * by the goroutine that writes it; runtime.newproc1's
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
#include "ring.bpf.h"
#include "trace_context.bpf.h"
#include "wire_maps.bpf.h"

char LICENSE[] SEC("license") = "GPL";

/* Per-target offsets and register slots; the attach cookie is the index. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, MAX_TARGETS);
	__type(key, __u32);
	__type(value, struct target_config);
} targets SEC(".maps");

/*
 * What each goroutine is doing, in one entry so that a probe finds it with one lookup: the span it
 * works for (`active`, read through active_get()) and its ServeHTTP call in flight (`server`).
 * LRU, so that entries of calls whose RET never comes (a goroutine killed by runtime.Goexit, a
 * process that exits mid-request) and of goroutines that are gone can never fill it; user space
 * also resolves the calls it knows panicked (probes__forget). Nothing is deleted when a call
 * ends: the entry is marked (server.start_ns 0, active.live 0) and rewritten in place by the
 * goroutine's next call. A connection's goroutine serves its keep-alive requests one after
 * another, and rewriting costs nothing where an LRU update and a delete cost half a microsecond.
 */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 65536);
	__type(key, struct goroutine_key);
	__type(value, struct goroutine_state);
} goroutines SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, DROP__COUNT);
	__type(key, __u32);
	__type(value, __u64);
} drops SEC(".maps");

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
 * How much of http.Request's head serve_http_entry copies in one read: its fields are picked from
 * the copy, which costs one bpf_probe_read_user instead of one per field. In every release the
 * offset tables cover, the fields read at entry (Method .. TLS) lie in the first 0xd8 bytes; a
 * field past the bound is read on its own.
 */
#define REQ_SNAP_MAX 256
_Static_assert((REQ_SNAP_MAX & (REQ_SNAP_MAX - 1)) == 0, "REQ_SNAP_MAX: a power of two");

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

/* Scratch for records and lines too big for the 512-byte stack. */
struct scratch {
	char tp[TRACEPARENT_LEN + 1];
	__u8 req[REQ_SNAP_MAX + 16]; /* slack for the masks of req_word() and req_string() */
	struct goroutine_state state; /* a goroutine's first entry, before it is in the map */
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct scratch);
} scratch SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct tracestate_val);
} tracestate_scratch SEC(".maps");

/* Header names as net/http canonicalises them. Built on the stack: see hex_digit(). */
#define TRACEPARENT_KEY(k) struct map_key k = { .name = "Traceparent", .len = 11 }
#define TRACESTATE_KEY(k) struct map_key k = { .name = "Tracestate", .len = 10 }

static __always_inline void count_drop(__u32 reason)
{
	__u64 *cnt = bpf_map_lookup_elem(&drops, &reason);

	if (cnt)
		*cnt += 1;
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

/*
 * The span KEY's goroutine works for, or NULL. Entries are written in place, so a goroutine
 * reading another's entry (a child its parent's) while that one rewrites it could see half of
 * each span: only when the parent starts a new span in that same instant, when which span is the
 * parent is a matter of timing anyway.
 */
static __always_inline struct span_ctx *active_get(const struct goroutine_key *key)
{
	struct goroutine_state *gs = bpf_map_lookup_elem(&goroutines, key);

	return gs && gs->active.live ? &gs->active : NULL;
}

/* The goroutine KEY now works for SC: the entry it left behind is reused when there is one. */
static __always_inline void active_put(const struct goroutine_key *key, const struct span_ctx *sc)
{
	struct goroutine_state *gs = bpf_map_lookup_elem(&goroutines, key);
	struct goroutine_state fresh = {};

	if (gs) {
		gs->active = *sc;
		gs->active.live = 1;
		return;
	}
	fresh.active = *sc;
	fresh.active.live = 1;
	bpf_map_update_elem(&goroutines, key, &fresh, BPF_ANY);
}

/* The goroutine KEY works for no span any more. */
static __always_inline void active_clear(const struct goroutine_key *key)
{
	struct goroutine_state *gs = bpf_map_lookup_elem(&goroutines, key);

	if (gs)
		gs->active.live = 0;
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

/* SC names the span IDS: calls the goroutine makes while SC is its `active` become its children. */
static __always_inline void span_ctx_of(struct span_ctx *sc, const struct span_ids *ids)
{
	__builtin_memcpy(sc->trace_id, ids->trace_id, sizeof(sc->trace_id));
	__builtin_memcpy(sc->span_id, ids->span_id, sizeof(sc->span_id));
	sc->flags = ids->flags;
	sc->depth = 0;
	sc->live = 1;
}

/* Reads the traceparent header of the Header map HDR into IDS; false when absent or malformed. */
static __always_inline bool read_traceparent(const struct target_config *cfg, struct scratch *sc,
					     void *hdr, struct span_ids *ids)
{
	TRACEPARENT_KEY(key);
	__u32 n;

	n = go_header_get(cfg, hdr, &key, sc->tp, sizeof(sc->tp));
	return n && !traceparent_parse(sc->tp, n, ids);
}

/* http.Request's head as copied by req_snapshot(), and where the request itself is. */
struct req_view {
	const void *req;
	const __u8 *snap;
	__u64 len; /* bytes copied; 0 when the copy failed: every field is then read on its own */
};

/* END, or where the field at OFF of SIZE bytes ends if that is further (and within the bound). */
static __always_inline __u64 field_end(__s64 off, __u64 size, __u64 end)
{
	if (off < 0 || off > REQ_SNAP_MAX)
		return end;
	return (__u64)off + size > end ? (__u64)off + size : end;
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
	if (end > REQ_SNAP_MAX)
		end = REQ_SNAP_MAX;
	v->req = req;
	v->snap = sc->req;
	v->len = 0;
	if (end && !bpf_probe_read_user(sc->req, end, req))
		v->len = end;
}

/* The word at OFF in the request: from the copy when it holds it. */
static __always_inline __u64 req_word(const struct req_view *v, __s64 off)
{
	__u64 o = (__u64)off;

	if (o <= REQ_SNAP_MAX - 8 && o + 8 <= v->len) {
		/* Clang may test a copy of O: hand the verifier a bound on the one used. */
		asm volatile("" : "+r"(o));
		return *(const __u64 *)(v->snap + (o & (REQ_SNAP_MAX - 1)));
	}
	return go_read_word(v->req, off);
}

/* The Go string at OFF in the request into DST (CAP bytes); its real length, as go_read_string. */
static __always_inline __u32 req_string(const struct req_view *v, __s64 off, char *dst, __u32 cap)
{
	const struct go_string *s;
	__u64 o = (__u64)off;

	if (o <= REQ_SNAP_MAX - sizeof(*s) && o + sizeof(*s) <= v->len) {
		asm volatile("" : "+r"(o));
		s = (const void *)(v->snap + (o & (REQ_SNAP_MAX - 1)));
		return go_copy_string(dst, cap, s->ptr, s->len);
	}
	return go_read_string(dst, cap, (const char *)v->req + off);
}

/*
 * The incoming tracestate, for the trace's outgoing calls to carry on (W3C: a participant that
 * does not change it passes it on). One that was cut at MAX_TRACESTATE_LEN is not passed on
 * cut. Kept by trace, not by span: the calls may come from goroutines the handler started.
 */
static __always_inline void keep_tracestate(__u32 pid, const __u8 *trace_id, const char *ts,
					    __u32 len)
{
	struct tracestate_key k = { .pid = pid };
	struct tracestate_val *v;
	__u32 zero = 0;

	if (!len || len > MAX_TRACESTATE_LEN)
		return;
	v = bpf_map_lookup_elem(&tracestate_scratch, &zero);
	if (!v)
		return;
	__builtin_memcpy(k.trace_id, trace_id, sizeof(k.trace_id));
	v->len = len;
	__builtin_memcpy(v->s, ts, MAX_TRACESTATE_LEN);
	bpf_map_update_elem(&tracestates, &k, v, BPF_ANY);
}

/*
 * The ids of a server span: IDS holds the caller's traceparent when HAS_TP (sampled as the
 * sampler says: a parent-based one follows the caller's flag), else the span nests in OUTER (a
 * function span) or starts a trace.
 */
static __always_inline void server_ids(const struct target_config *cfg, struct span_ids *ids,
				       bool has_tp, const struct span_ctx *outer)
{
	if (!has_tp)
		child_ids(ids, outer, cfg->root_sampler, cfg->parent_based, cfg->ratio_bound);
	else if (!cfg->parent_based)
		ids->flags = (ids->flags & ~1) |
			     sample_root(cfg->root_sampler, cfg->ratio_bound, ids->trace_id);
	if (ids->remote_parent)
		random_id(ids->span_id, sizeof(ids->span_id));
}

SEC("uprobe")
int serve_http_entry(GO_REGS *ctx)
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
	struct scratch *sc;
	void *req, *url, *hdr;
	__u32 zero = 0;
	bool has_tp;
	PROF_VARS;

	PROF_MARK(PROF_CALIBRATE);
	cfg = probe_context(ctx, &key);
	if (!cfg)
		return 0;
	req = (void *)go_arg(ctx, cfg->arg_req);
	PROF_MARK(PROF_CONTEXT);

	/*
	 * A stack-growth check at the top of the function re-runs the prologue after
	 * runtime.morestack, firing this probe twice for one call with the same request: keep the
	 * first start. A different request means the earlier call never returned (it panicked and
	 * something recovered above us); user space resolves that one on seeing this start.
	 */
	gs = bpf_map_lookup_elem(&goroutines, &key);
	if (gs) {
		if (gs->server.start_ns && gs->server.req == (__u64)req)
			return 0;
		if (gs->active.live)
			outer = &gs->active;
	}
	sc = bpf_map_lookup_elem(&scratch, &zero);
	if (!sc)
		return 0;
	PROF_MARK(PROF_STATE);

	e = bpf_ringbuf_reserve(&events, sizeof(*e), 0);
	if (!e) {
		count_drop(DROP_RINGBUF_FULL);
		return 0;
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
	__builtin_memset(&e->ids, 0, sizeof(e->ids));
	if (outer)
		st.prev = *outer;
	st.has_prev = outer != NULL;
	has_tp = cfg->propagate && read_traceparent(cfg, sc, hdr, &e->ids);
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
	st.cpu_start_ns = cfg->cpu_time ? gclock_now(&key, now) : 0;
	if (!gs) {
		struct goroutine_state *fresh = &sc->state;

		__builtin_memset(fresh, 0, sizeof(*fresh));
		if (bpf_map_update_elem(&goroutines, &key, fresh, BPF_ANY) ||
		    !(gs = bpf_map_lookup_elem(&goroutines, &key))) {
			/* Without the entry no end would pair with this start: send neither. */
			bpf_ringbuf_discard(e, BPF_RB_NO_WAKEUP);
			count_drop(DROP_INFLIGHT_FULL);
			return 0;
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
	return 0;
}

SEC("uprobe")
int serve_http_return(GO_REGS *ctx)
{
	__u64 now = bpf_ktime_get_ns();
	const struct target_config *cfg;
	struct http_server_end *e;
	struct goroutine_state *gs;
	struct goroutine_key key;
	struct inflight_call *st;

	cfg = probe_context(ctx, &key);
	if (!cfg)
		return 0;
	gs = bpf_map_lookup_elem(&goroutines, &key);
	if (!gs || !gs->server.start_ns)
		return 0; /* the call began before we attached */
	st = &gs->server;

	/* Back to the function span the request was served in, if any. */
	if (st->has_prev)
		gs->active = st->prev;
	else
		gs->active.live = 0;
	e = bpf_ringbuf_reserve(&events, sizeof(*e), 0);
	if (!e) {
		count_drop(DROP_RINGBUF_FULL);
		st->start_ns = 0;
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
	st->start_ns = 0;
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
	e->pattern_len = read_pattern(cfg, (void *)st->req, e->pattern);
	bpf_ringbuf_submit(e, submit_flags());
	return 0;
}

/* An https request: encrypted before the socket layer sees it, so its context cannot go out. */
static __always_inline bool is_https(const struct http_client_start *e)
{
	return e->scheme_len == 5 && e->scheme[0] == 'h' && e->scheme[1] == 't' &&
	       e->scheme[2] == 't' && e->scheme[3] == 'p' && e->scheme[4] == 's';
}

/*
 * The socket-layer writer tracks the client sockets of the processes in `traced`: a process
 * joins on its first client call, which comes before the call's connection is made.
 */
static __always_inline void track_process(const struct target_config *cfg, __u32 pid)
{
	struct traced_process tp = { .g_goid = cfg->g_goid, .tls_g = cfg->tls_g };

	if (!bpf_map_lookup_elem(&traced, &pid))
		bpf_map_update_elem(&traced, &pid, &tp, BPF_NOEXIST);
}

/*
 * The span a call made on goroutine KEY belongs in: the one it works for, else, for a goroutine
 * the span's goroutine started, that one's, found with one read of g.parentGoid at no extra probe
 * hit (deeper generations: --follow-goroutines). NULL: the call starts a trace.
 */
static __always_inline struct span_ctx *calling_span(GO_REGS *ctx, const struct target_config *cfg,
						     const struct goroutine_key *key)
{
	struct goroutine_key pk = { .pid = key->pid };
	struct span_ctx *sc = active_get(key);

	if (sc || cfg->g_parent_goid < 0)
		return sc;
	pk.goid = go_read_word(GO_G_PTR(ctx), cfg->g_parent_goid);
	return active_get(&pk);
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
	child_ids(&e->ids, calling_span(ctx, cfg, &key), cfg->root_sampler, cfg->parent_based,
		  cfg->ratio_bound);

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
 * Inside roundTrip, at the JE or JNE that tests the inner round trip's error (exporter/sites.h):
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
 * (exporter/emulation.c) put it where they measure.
 */
SEC("uprobe")
int calibrate(GO_REGS *ctx)
{
	return 0;
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
	__u64 w_itab, w;
	__s64 n = 0;
	__u32 zero = 0;

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
	sc = bpf_map_lookup_elem(&scratch, &zero);
	if (!sc)
		return 0;
	TRACEPARENT_KEY(tp_key);

	if (go_header_get(cfg, (void *)hk.header, &tp_key, sc->tp, sizeof(sc->tp))) {
		count_propagation(PROP_ALREADY_SET);
		return 0;
	}
	/* The transport's writer is a *bufio.Writer: where its itab is known, make sure. */
	w_itab = go_arg(ctx, cfg->arg_ws_w_itab);
	w = go_arg(ctx, cfg->arg_ws_w_data);
	if ((cfg->bufio_itab && w_itab != cfg->bufio_itab) || !w ||
	    bpf_probe_read_user(&n, sizeof(n), (void *)w + cfg->bufio_n) || n <= 0) {
		count_propagation(PROP_NO_ROOM);
		return 0;
	}
	/* A context still here was never taken: its request did not pass a tracked socket. */
	if (bpf_map_lookup_elem(&pending, &key))
		count_propagation(PROP_UNSEEN);
	bpf_map_update_elem(&pending, &key, &pc, BPF_ANY);
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
	__u64 attach_cookie = bpf_get_attach_cookie(ctx);
	__u32 cookie = (__u32)attach_cookie, slot = COOKIE_RESULT_SLOT(attach_cookie);
	void *newg;

	cfg = bpf_map_lookup_elem(&targets, &cookie);
	if (!cfg || cfg->g_parent_goid < 0)
		return 0;
	newg = (void *)go_arg(ctx, slot ? slot : cfg->ret_newproc_g);
	if (!newg)
		return 0;
	parent.pid = child.pid = bpf_get_current_pid_tgid() >> 32;
	parent.goid = go_read_word(newg, cfg->g_parent_goid);
	pctx = active_get(&parent);
	if (!pctx || pctx->depth >= MAX_GOROUTINE_DEPTH)
		return 0;
	cctx = *pctx;
	cctx.depth++;
	child.goid = go_read_word(newg, cfg->g_goid);
	active_put(&child, &cctx);
	return 0;
}

#include "grpc.bpf.h"
#include "db.bpf.h"
