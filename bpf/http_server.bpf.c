// SPDX-License-Identifier: GPL-2.0
/*
 * net/http server capture: uprobes at the entry and at every RET of serverHandler.ServeHTTP, plus
 * runtime.gopanic. Entry records what arrived and remembers the call by goroutine; a RET records
 * the end time, the status the handler wrote and the route the mux matched. Records carry raw
 * facts only; user space pairs them into spans.
 */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

#include "arch.bpf.h"
#include "events.h"
#include "go_types.bpf.h"

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

SEC("uprobe")
int serve_http_entry(GO_REGS *ctx)
{
	__u64 now = bpf_ktime_get_ns();
	const struct target_config *cfg;
	struct http_server_start *e;
	struct goroutine_key key;
	struct inflight_call *cur;
	struct inflight_call st = {};
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

	st.start_ns = now;
	st.req = (__u64)req;
	st.rw_itab = go_arg(ctx, cfg->arg_rw_itab);
	st.rw_data = go_arg(ctx, cfg->arg_rw_data);
	if (bpf_map_update_elem(&inflight, &key, &st, BPF_ANY)) {
		/* Without the entry no RET would pair with this start: send neither. */
		bpf_ringbuf_discard(e, BPF_RB_NO_WAKEUP);
		count_drop(DROP_INFLIGHT_FULL);
		return 0;
	}
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
