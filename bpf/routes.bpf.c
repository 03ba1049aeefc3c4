// SPDX-License-Identifier: GPL-2.0
/*
 * Route templates of HTTP router frameworks (gin, echo, chi, gorilla/mux). Such a router runs
 * inside net/http's ServeHTTP, whose probes make the SERVER span; what it adds is the template it
 * matched, which the framework keeps in its own request context. One probe per request reads it,
 * at a site exporter/analysis/routers.c chose for the framework: a direct CALL the kernel
 * emulates (the context's return to its pool) or the first emulated instruction after the
 * router's match. The record names the goroutine's ServeHTTP call; user space gives the template
 * to that call's span.
 *
 * Linked with the other uprobe families into one object (probe.bpf.h).
 */
#include "probe.bpf.h"

/* How each route site finds its template; the index is in its probe's attach cookie. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, MAX_ROUTE_SITES);
	__type(key, __u32);
	__type(value, struct route_site);
} route_sites SEC(".maps");

/* The parts of the []string at HDR into E: how many there were (all are counted, not all read). */
static __always_inline __u32 read_parts(struct http_route *e, const void *hdr)
{
	struct go_string parts[MAX_ROUTE_PARTS];
	struct {
		__u64 ptr;
		__s64 len;
	} slice;
	__u32 i, n;

	if (bpf_probe_read_user(&slice, sizeof(slice), hdr) || !slice.ptr || slice.len <= 0)
		return 0;
	n = slice.len < MAX_ROUTE_PARTS ? slice.len : MAX_ROUTE_PARTS;
	if (bpf_probe_read_user(parts, n * sizeof(parts[0]), (void *)slice.ptr))
		return 0;
	for (i = 0; i < MAX_ROUTE_PARTS; i++) {
		if (i >= n)
			break;
		e->len[i] = go_copy_string(e->part[i], MAX_ROUTE_PART_LEN, parts[i].ptr,
					   parts[i].len);
	}
	return slice.len > 0xffff ? 0xffff : (__u32)slice.len;
}

/* Whether the word (or the byte: a bool) at BASE + RS->need_off says a route matched. */
static __always_inline bool route_needed(const struct route_site *rs, __u64 base)
{
	__u8 b = 0;

	if (!rs->need_byte)
		return go_read_word((void *)base, rs->need_off) != 0;
	return !bpf_probe_read_user(&b, 1, (void *)(base + rs->need_off)) && b;
}

/*
 * httprouter's match into E: the request's path (from the call's *http.Request, CFG's offsets)
 * and each parameter's name and where its value lies in that path. False when there is none.
 */
static __always_inline bool read_params(GO_REGS *ctx, const struct target_config *cfg,
					const struct route_site *rs, const struct goroutine_state *gs,
					struct http_route *e)
{
	struct {
		struct go_string key, value;
	} ps[MAX_ROUTE_PARTS - 1];
	struct go_string path;
	__u64 n, i, url;
	const char *at;

	if (!go_arg(ctx, rs->base_slot))
		return false; /* no handle: nothing matched */
	n = go_arg(ctx, rs->base_slot + 2);
	url = go_read_word((void *)gs->server.req, cfg->req_url);
	if (!url || bpf_probe_read_user(&path, sizeof(path), (void *)(url + cfg->url_path)))
		return false;
	e->len[0] = go_copy_string(e->part[0], MAX_ROUTE_PART_LEN, path.ptr, path.len);
	e->nparts = n + 1 > 0xffff ? 0xffff : (__u32)(n + 1);
	if (n > MAX_ROUTE_PARTS - 1)
		n = MAX_ROUTE_PARTS - 1;
	if (n && bpf_probe_read_user(ps, n * sizeof(ps[0]), (void *)go_arg(ctx, rs->base_slot + 1)))
		return false;
	for (i = 0; i < MAX_ROUTE_PARTS - 1; i++) {
		if (i >= n)
			break;
		e->len[i + 1] = go_copy_string(e->part[i + 1], MAX_ROUTE_PART_LEN, ps[i].key.ptr,
					       ps[i].key.len);
		at = ps[i].value.ptr;
		e->value_off[i] = ~0U;
		e->value_len[i] = 0;
		if (at >= path.ptr && ps[i].value.len >= 0 && at - path.ptr <= path.len &&
		    ps[i].value.len <= path.len - (at - path.ptr)) {
			e->value_off[i] = at - path.ptr;
			e->value_len[i] = ps[i].value.len;
		}
	}
	return true;
}

SEC("uprobe")
int route_seen(GO_REGS *ctx)
{
	__u32 idx = bpf_get_attach_cookie(ctx) >> ROUTE_SITE_SHIFT;
	const struct target_config *cfg;
	const struct goroutine_state *gs;
	const struct route_site *rs;
	struct goroutine_key key;
	struct http_route *e;
	__u64 base, fn, inner;
	__u32 i;

	cfg = probe_context(ctx, &key);
	if (!cfg)
		return 0;
	rs = bpf_map_lookup_elem(&route_sites, &idx);
	if (!rs)
		return 0;
	/* A route belongs to the request this goroutine serves; without one there is no span. */
	gs = bpf_map_lookup_elem(&goroutines, &key);
	if (!gs || !gs->server.start_ns)
		return 0;
	if (rs->base_slot == ROUTE_BASE_CLOSURE)
		base = GO_CLOSURE_PTR(ctx);
	else
		base = rs->base_slot ? go_arg(ctx, rs->base_slot) : GO_SP(ctx);
	base += rs->base_off;
	for (i = 0; i <= ROUTE_HOPS; i++) {
		if (i == rs->need_hop && rs->need_off >= 0 && !route_needed(rs, base))
			return 0;
		if (i >= rs->nhops || i == ROUTE_HOPS)
			break;
		base = go_read_word((void *)base, rs->hops[i]);
		if (!base)
			return 0; /* gorilla/mux: no route matched */
	}

	e = bpf_ringbuf_reserve(&events, sizeof(*e), 0);
	if (!e) {
		count_drop(DROP_RINGBUF_FULL);
		return 0;
	}
	fill_header(&e->hdr, EVENT_HTTP_ROUTE, &key, gs->server.start_ns);
	e->site = idx;
	__builtin_memset(e->len, 0, sizeof(e->len));
	if (rs->kind == ROUTE_PARAMS) {
		if (!read_params(ctx, cfg, rs, gs, e))
			e->nparts = 0;
	} else if (rs->kind == ROUTE_STRINGS) {
		e->nparts = read_parts(e, (void *)(base + rs->str_off));
	} else {
		e->len[0] = go_read_string(e->part[0], MAX_ROUTE_PART_LEN, (void *)(base + rs->str_off));
		e->nparts = e->len[0] ? 1 : 0;
	}
	if (!e->nparts) {
		/* gin and echo before their router matched anything: an empty template */
		bpf_ringbuf_discard(e, BPF_RB_NO_WAKEUP);
		return 0;
	}
	e->check = e->check_inner = 0;
	if (rs->check_off >= 0) {
		fn = go_read_word((void *)base, rs->check_off);
		e->check = fn ? go_read_word((void *)fn, 0) : 0;
		inner = fn ? go_read_word((void *)fn, 8) : 0;
		e->check_inner = inner ? go_read_word((void *)inner, 0) : 0;
	}
	bpf_ringbuf_submit(e, submit_flags());
	return 0;
}
