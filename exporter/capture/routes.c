// SPDX-License-Identifier: MIT
/*
 * Route templates (routes.h). gin, echo and gorilla/mux keep the whole template in one string;
 * chi keeps one pattern per router the request passed, which it joins itself when asked
 * (Context.RoutePattern), and which are joined here the same way, so that the route reads as
 * chi's own instrumentation reports it.
 */
#include <stdbool.h>
#include <string.h>

#include "analysis/routers.h"
#include "analysis/target.h"
#include "capture/http.h"
#include "capture/process.h"
#include "capture/records_family.h"
#include "capture/routes.h"

/* Replaces every mount wildcard ("/", "*", "/") in S (LEN bytes) with "/", until none is left. */
static size_t drop_mount_wildcards(char *s, size_t len)
{
	char *at;

	while ((at = memmem(s, len, "/*/", 3))) {
		memmove(at + 1, at + 3, len - (size_t)(at + 3 - s));
		len -= 2;
	}
	s[len] = '\0';
	return len;
}

/*
 * chi's RoutePattern(): the parts joined, the mounts' wildcards between them dropped, and
 * a trailing "//" or "/" trimmed from anything but "/".
 */
static int chi_join(const struct http_route *e, char *out, size_t size)
{
	size_t len = 0, i;

	for (i = 0; i < e->nparts; i++) {
		if (e->len[i] > MAX_ROUTE_PART_LEN || len + e->len[i] >= size)
			return -1;
		memcpy(out + len, e->part[i], e->len[i]);
		len += e->len[i];
	}
	out[len] = '\0';
	len = drop_mount_wildcards(out, len);
	if (len > 1 && len >= 2 && !strcmp(out + len - 2, "//"))
		len -= 2;
	else if (len > 1 && out[len - 1] == '/')
		len--;
	out[len] = '\0';
	return (int)len;
}

/*
 * httprouter's template, which it does not keep: the request's path with each parameter's value
 * put back as its name, ":name" (a value without a slash), "*name" (a catch-all's, which starts
 * with the slash before it); the values lie in the path in order. -1 when the path or a name was
 * cut, or a value is not where the record says.
 */
static int params_join(const struct http_route *e, char *out, size_t size)
{
	uint32_t nparams = e->nparts - 1, i, from = 0, off, vlen;
	const char *path = e->part[0];
	size_t len = 0, klen;

	if (e->len[0] > MAX_ROUTE_PART_LEN)
		return -1;
	for (i = 0; i < nparams; i++) {
		off = e->value_off[i];
		vlen = e->value_len[i];
		klen = e->len[i + 1];
		if (off == ~0U || off < from || off + vlen > e->len[0] || klen > MAX_ROUTE_PART_LEN ||
		    !vlen)
			return -1;
		if (len + (off - from) + 2 + klen >= size)
			return -1;
		memcpy(out + len, path + from, off - from);
		len += off - from;
		if (path[off] == '/') {
			/* A catch-all: its value begins with the slash before "*name". */
			out[len++] = '/';
			out[len++] = '*';
		} else {
			out[len++] = ':';
		}
		memcpy(out + len, e->part[i + 1], klen);
		len += klen;
		from = off + vlen;
	}
	if (len + (e->len[0] - from) >= size)
		return -1;
	memcpy(out + len, path + from, e->len[0] - from);
	len += e->len[0] - from;
	out[len] = '\0';
	return (int)len;
}

int routes__template(const struct router *rt, const struct http_route *e, uint64_t bias, char *out,
		     size_t size)
{
	if (!size || !e->nparts || e->nparts > MAX_ROUTE_PARTS)
		return -1;
	if (rt->kind == ROUTER_CHI)
		return chi_join(e, out, size);
	if (rt->kind == ROUTER_HTTPROUTER)
		return params_join(e, out, size);
	if (routers__router_answered(rt, e->check ? e->check - bias : 0,
				     e->check_inner ? e->check_inner - bias : 0))
		return -1;
	if (e->len[0] > MAX_ROUTE_PART_LEN || e->len[0] >= size)
		return -1;
	memcpy(out, e->part[0], e->len[0]);
	out[e->len[0]] = '\0';
	return (int)e->len[0];
}

/*
 * A route record: the template goes to the net/http server call it names (in flight: the record
 * comes from inside it). A call no longer in flight (ended at a panic before the record was read)
 * or a record of another target's site is left alone.
 */
static void on_route(struct records *r, const void *record)
{
	const struct http_route *e = record;
	char route[HTTP_ROUTE_MAX + 1];
	const struct router_target *rt;
	struct pending *p;
	uint32_t i;
	int len;

	p = http_server__find(r, e->hdr.pid, e->hdr.goid, e->hdr.start_ns);
	if (!p)
		return;
	rt = &p->proc->target->routers;
	i = e->site - rt->site_base;
	if (e->site < rt->site_base || i >= rt->n)
		return;
	len = routes__template(&rt->v[i], e, p->proc->load_bias, route, sizeof(route));
	if (len > 0)
		http_server__set_route(p, route, (size_t)len);
	else
		http_server__no_route(p);
}

const struct record_handler route_records[] = {
	{ EVENT_HTTP_ROUTE, sizeof(struct http_route), on_route },
	{ 0 },
};
