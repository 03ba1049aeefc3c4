// SPDX-License-Identifier: MIT
/*
 * The net/http family: records of ServeHTTP (SERVER spans), of the Transport's round trips (CLIENT
 * spans) and of a panic in a handler made into spans after the HTTP conventions: method, URL,
 * route, status, protocol version, server and peer addresses; spans named "METHOD ROUTE".
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "model/attrs.h"
#include "events.h"
#include "capture/http.h"
#include "capture/process.h"
#include "capture/records_family.h"
#include "model/semconv.h"
#include "model/span.h"
#include "analysis/target.h"

/* A net/http call, SERVER or CLIENT. */
struct http_call {
	struct pending call;
	char method[MAX_METHOD_LEN + 1]; /* as the span's name spells it */
	bool http1;  /* served by net/http's own HTTP/1 connection code */
	bool http2;  /* served by its HTTP/2 server (the BPF program's test, PROTO_IS_HTTP2) */
	bool routed; /* a router framework named its route (http_server__set_route) */
	/* The route matched before the handler panicked: valid when call.panic_ns != 0. */
	uint32_t panic_pattern_len;
	char panic_pattern[MAX_PATTERN_LEN];
};

/* records.c frees a call through its struct pending. */
_Static_assert(offsetof(struct http_call, call) == 0, "struct http_call: pending first");
/* A mux pattern fits every buffer a route does. */
_Static_assert(MAX_PATTERN_LEN <= HTTP_ROUTE_MAX, "HTTP_ROUTE_MAX: below MAX_PATTERN_LEN");

static void name_panicked(struct pending *p);

static const struct call_kind server_call = {
	.start_type = EVENT_HTTP_SERVER_START,
	.span_kind = SPAN_KIND_SERVER,
	.size = sizeof(struct http_call),
	.panicked = name_panicked,
};

static const struct call_kind client_call = {
	.start_type = EVENT_HTTP_CLIENT_START,
	.span_kind = SPAN_KIND_CLIENT,
	.size = sizeof(struct http_call),
};

static struct http_call *http_call(struct pending *p)
{
	return container_of(p, struct http_call, call);
}

/* The call of KIND a start record opens (records__open_call); NULL when it cannot be held. */
static struct http_call *open_http(struct records *r, const struct call_kind *kind,
				   const struct record_header *h, uint32_t cookie,
				   const struct span_ids *ids)
{
	struct pending *p = records__open_call(r, kind, h, cookie, ids);

	return p ? http_call(p) : NULL;
}

/* M (LEN bytes) is one of the methods the conventions name; lengths settle most of it. */
static bool known_method(const char *m, size_t len)
{
#define METHOD(name) { name, sizeof(name) - 1 }
	static const struct {
		const char *name;
		size_t len;
	} methods[] = { METHOD("GET"),	   METHOD("HEAD"),    METHOD("POST"),
			METHOD("PUT"),	   METHOD("DELETE"),  METHOD("CONNECT"),
			METHOD("OPTIONS"), METHOD("TRACE"),   METHOD("PATCH") };
#undef METHOD
	size_t i;

	for (i = 0; i < sizeof(methods) / sizeof(methods[0]); i++)
		if (methods[i].len == len && !memcmp(m, methods[i].name, len))
			return true;
	return false;
}

/*
 * "GET example.com/users/{id}" -> "/users/{id}": the route is the pattern's path, of *LEN bytes,
 * in PATTERN (LEN bytes as C code reads it: to its first NUL).
 */
static const char *pattern_route(const char *pattern, size_t len, size_t *route_len)
{
	const char *end = pattern + len, *sp = memchr(pattern, ' ', len);
	const char *path = sp ? sp + 1 : pattern;

	while (path < end && (*path == ' ' || *path == '\t'))
		path++;
	path = memchr(path, '/', end - path);
	if (!path)
		return NULL;
	*route_len = end - path;
	/* "/{$}" is Go's spelling of "exactly this path": the route is the path itself. */
	if (*route_len >= 4 && !memcmp(end - 3, "{$}", 3))
		*route_len -= 3;
	return path;
}

/*
 * Sets http.route to ROUTE (RLEN bytes, at most HTTP_ROUTE_MAX made UTF-8; the span makes it
 * valid UTF-8 as it takes it) and names the span "METHOD ROUTE".
 */
static void name_route(struct span *s, const char *method, const char *route, size_t rlen)
{
	char name[MAX_METHOD_LEN + HTTP_ROUTE_MAX * 3 + 2];
	size_t mlen;

	/* Both parts are bounded (MAX_METHOD_LEN, HTTP_ROUTE_MAX made UTF-8): they fit NAME. */
	mlen = strnlen(method, MAX_METHOD_LEN);
	span__set_str(s, SC_HTTP_ROUTE, route, rlen);
	memcpy(name, method, mlen);
	name[mlen] = ' ';
	memcpy(name + mlen + 1, route, rlen);
	span__set_name(s, name, mlen + 1 + rlen);
}

/* Sets http.route and names the span "METHOD ROUTE", or just "METHOD" when no route matched. */
static void set_route_and_name(struct span *s, const char *method, const char *raw, uint32_t len)
{
	const char *route = NULL;
	size_t rlen;

	/*
	 * A cut pattern would name a route that does not exist: leave it out. The pattern is
	 * split where its ASCII delimiters are, in the captured bytes themselves; the span makes
	 * the route valid UTF-8 as it copies it.
	 */
	if (len && len <= MAX_PATTERN_LEN)
		route = pattern_route(raw, attrs__captured_text_len(raw, len, MAX_PATTERN_LEN),
				      &rlen);
	if (!route) {
		span__set_name(s, method, strlen(method));
		return;
	}
	name_route(s, method, route, rlen);
}

/*
 * Sets network.protocol.version from a Go Proto string ("HTTP/1.1", "HTTP/2.0"); true for
 * HTTP/1.x, which net/http serves with its own response writer.
 */
static bool set_protocol_version(struct span *s, const char *raw, uint32_t len)
{
	size_t n = attrs__captured_text_len(raw, len, MAX_PROTO_LEN);
	const char *ver = raw + 5;

	/* Compared in the captured bytes: ASCII is what making them valid UTF-8 leaves alone. */
	if (n < 5 || memcmp(raw, "HTTP/", 5))
		return false;
	n -= 5;
	/* "HTTP/2.0" is reported as "2", as the conventions spell it. */
	if (n == 3 && (!memcmp(ver, "2.0", 3) || !memcmp(ver, "3.0", 3)))
		n = 1;
	span__set_str(s, SC_NETWORK_PROTOCOL_VERSION, ver, n);
	return n >= 2 && !memcmp(ver, "1.", 2);
}

/* Sets http.request.method (and the name's method part) the way the conventions ask. */
static void set_method(struct span *s, struct http_call *c, const char *raw, uint32_t len)
{
	size_t n = attrs__captured_text_len(raw, len, MAX_METHOD_LEN);

	/* Known methods are ASCII: compared in the captured bytes, no copy is made first. */
	if (known_method(raw, n)) {
		/* Known methods are short: they fit c->method, and nothing needs a format. */
		span__set_str(s, SC_HTTP_REQUEST_METHOD, raw, n);
		memcpy(c->method, raw, n);
		c->method[n] = '\0';
	} else {
		/* Semantic conventions: unknown methods are "_OTHER", spans are named "HTTP". */
		span__set_str(s, SC_HTTP_REQUEST_METHOD, "_OTHER", 6);
		attrs__set_captured(s, SC_HTTP_REQUEST_METHOD_ORIGINAL, raw, len, MAX_METHOD_LEN);
		snprintf(c->method, sizeof(c->method), "HTTP");
	}
}

void http_server__start(struct records *r, const struct http_server_start *e)
{
	struct http_call *c;
	struct span *s;
	size_t n;

	c = open_http(r, &server_call, &e->hdr, e->cookie, &e->ids);
	if (!c)
		return;
	s = c->call.span;
	if (e->tracestate_len && e->tracestate_len <= MAX_TRACESTATE_LEN)
		s->trace_state = span__strndup(s, e->tracestate, e->tracestate_len);

	set_method(s, c, e->method, e->method_len);
	attrs__set_captured(s, SC_URL_PATH, e->path, e->path_len, MAX_PATH_LEN);
	span__set_str(s, SC_URL_SCHEME, e->tls ? "https" : "http", e->tls ? 5 : 4);

	/*
	 * Split at their ASCII delimiters in the captured bytes; the span makes each part valid
	 * UTF-8 as it copies it, which is what splitting a valid copy would give.
	 */
	n = attrs__captured_text_len(e->host, e->host_len, MAX_HOST_LEN);
	if (n)
		attrs__set_host_port_len(s, e->host, n, SC_SERVER_ADDRESS, SC_SERVER_PORT);
	n = attrs__captured_text_len(e->remote_addr, e->remote_addr_len, MAX_ADDR_LEN);
	if (n) {
		attrs__set_host_port_len(s, e->remote_addr, n, SC_NETWORK_PEER_ADDRESS,
					 SC_NETWORK_PEER_PORT);
		/* No proxy headers are read: the peer is the client. */
		const struct attr *a = span__get(s, SC_NETWORK_PEER_ADDRESS);
		if (a)
			span__set_str(s, SC_CLIENT_ADDRESS, a->s, a->len);
	}
	c->http1 = set_protocol_version(s, e->proto, e->proto_len);
	c->http2 = PROTO_IS_HTTP2(e->proto, e->proto_len);
	if (e->content_length > 0)
		span__set_int(s, SC_HTTP_REQUEST_BODY_SIZE, e->content_length);
}

static void on_start(struct records *r, const void *record)
{
	http_server__start(r, record);
}

void http_server__end(struct records *r, const struct http_server_end *e, bool own_writer)
{
	const struct target *t;
	struct http_call *c;
	struct pending *p;
	struct span *s;
	bool status_known;
	int64_t status;

	p = records__close_call(r, &server_call, &e->hdr, e->end_ns);
	if (!p)
		return;
	c = http_call(p);
	s = p->span;

	/*
	 * The status is read from net/http's own writers, *response for HTTP/1 and
	 * *http2responseWriter for HTTP/2, whichever the request's protocol picked in the BPF
	 * program; no code is claimed for another. The writer's itab says which it is exactly;
	 * without the itab's symbol (stripped binaries), the protocol does: net/http serves every
	 * HTTP/1.x request with a *response and every HTTP/2 one with an *http2responseWriter.
	 */
	t = p->proc->target;
	if (own_writer)
		status_known = true;
	else if (c->http2)
		status_known = t->h2_writer_itab ?
				       e->rw_itab == t->h2_writer_itab + p->proc->load_bias :
				       true;
	else
		status_known = t->response_itab ?
				       e->rw_itab == t->response_itab + p->proc->load_bias :
				       c->http1;
	status = e->status ? e->status : 200; /* nothing written: net/http sends 200 */
	if (status_known && status >= 100 && status <= 999) {
		span__set_int(s, SC_HTTP_RESPONSE_STATUS_CODE, status);
		if (status >= 500) {
			char code[8];

			s->status = SPAN_STATUS_ERROR;
			snprintf(code, sizeof(code), "%d", (int)status);
			span__set_str(s, SC_ERROR_TYPE, code, strlen(code));
		}
	}

	/* A router framework's route is the finer one: the mux only led to the router. */
	if (!c->routed)
		set_route_and_name(s, c->method, e->pattern, e->pattern_len);
	/* A panic recovered inside the handler: the call returned as any other. */
	records__finish(r, p, e->cpu_ns);
}

static void on_end(struct records *r, const void *record)
{
	http_server__end(r, record, false);
}

/*
 * Appends QUERY to OUT with every value replaced by "REDACTED" and the keys kept, as the HTTP
 * conventions advise for url.full: values often carry tokens and signatures.
 */
static void append_redacted_query(char *out, size_t size, const char *query)
{
	size_t len = strlen(out);
	const char *p = query;

	while (*p && len + 1 < size) {
		size_t key = strcspn(p, "=&");

		len += snprintf(out + len, len < size ? size - len : 0, "%.*s", (int)key, p);
		p += key;
		if (*p == '=') {
			len += snprintf(out + len, len < size ? size - len : 0, "=REDACTED");
			p += 1 + strcspn(p + 1, "&");
		}
		if (*p == '&') {
			len += snprintf(out + len, len < size ? size - len : 0, "&");
			p++;
		}
	}
}

static void on_client_start(struct records *r, const void *record)
{
	const struct http_client_start *e = record;
	char scheme[MAX_SCHEME_LEN * 3 + 1], host[MAX_HOST_LEN * 3 + 1];
	char path[MAX_PATH_LEN * 3 + 1], query[MAX_QUERY_LEN * 3 + 1];
	char url[sizeof(scheme) + sizeof(host) + sizeof(path) + 4 * sizeof(query)];
	const struct attr *port;
	struct http_call *c;
	struct span *s;

	c = open_http(r, &client_call, &e->hdr, e->cookie, &e->ids);
	if (!c)
		return;
	s = c->call.span;
	set_method(s, c, e->method, e->method_len);
	attrs__captured_copy(scheme, sizeof(scheme), e->scheme, e->scheme_len, MAX_SCHEME_LEN);
	attrs__captured_copy(host, sizeof(host), e->host, e->host_len, MAX_HOST_LEN);
	attrs__captured_copy(path, sizeof(path), e->path, e->path_len, MAX_PATH_LEN);
	attrs__captured_copy(query, sizeof(query), e->query, e->query_len, MAX_QUERY_LEN);

	/* URL.Host is "host[:port]"; user info lives apart (URL.User) and is never read. */
	snprintf(url, sizeof(url), "%s://%s%s%s", scheme, host, path[0] || !query[0] ? path : "/",
		 query[0] ? "?" : "");
	if (query[0])
		append_redacted_query(url, sizeof(url), query);
	span__set_str(s, SC_URL_FULL, url, strlen(url));
	if (e->path_len > MAX_PATH_LEN || e->query_len > MAX_QUERY_LEN || e->host_len > MAX_HOST_LEN)
		attrs__mark_truncated(s, SC_URL_FULL);
	if (host[0])
		attrs__set_host_port(s, host, SC_SERVER_ADDRESS, SC_SERVER_PORT);
	/* The port is required for client spans: the scheme's default when the URL has none. */
	port = span__get(s, SC_SERVER_PORT);
	if (!port && (!strcmp(scheme, "http") || !strcmp(scheme, "https")))
		span__set_int(s, SC_SERVER_PORT, scheme[4] == 's' ? 443 : 80);
	span__set_name(s, c->method, strlen(c->method));
}

static void on_client_end(struct records *r, const void *record)
{
	const struct http_client_end *e = record;
	struct pending *p;
	struct span *s;
	char code[16];

	p = records__close_call(r, &client_call, &e->hdr, e->end_ns);
	if (!p)
		return;
	s = p->span;
	if (e->err_itab) {
		/* No response: the transport failed (refused, reset, timed out, ...). */
		s->status = SPAN_STATUS_ERROR;
		span__set_str(s, SC_ERROR_TYPE, "_OTHER", 6);
	} else if (e->status >= 100 && e->status <= 999) {
		set_protocol_version(s, e->proto, e->proto_len);
		span__set_int(s, SC_HTTP_RESPONSE_STATUS_CODE, e->status);
		/* For a client, 4xx is an error too: the call did not get what it asked for. */
		if (e->status >= 400) {
			s->status = SPAN_STATUS_ERROR;
			snprintf(code, sizeof(code), "%d", (int)e->status);
			span__set_str(s, SC_ERROR_TYPE, code, strlen(code));
		}
	}
	records__finish(r, p, ~0ULL);
}

/* The route names a call that panicked and never returned, as its end would have. */
static void name_panicked(struct pending *p)
{
	struct http_call *c = http_call(p);

	if (!c->routed)
		set_route_and_name(p->span, c->method, c->panic_pattern, c->panic_pattern_len);
}

/* A panic in a handler: whether its call still returns is known later (records__panicked). */
static void on_panic(struct records *r, const void *record)
{
	const struct go_panic *e = record;
	struct pending *p = http_server__find(r, e->hdr.pid, e->hdr.goid, e->hdr.start_ns);
	struct http_call *c;

	if (!p || p->panic_ns)
		return;
	c = http_call(p);
	c->panic_pattern_len = e->pattern_len;
	memcpy(c->panic_pattern, e->pattern, sizeof(c->panic_pattern));
	records__panicked(r, p, e->panic_ns);
}

struct pending *http_server__find(struct records *r, uint32_t pid, uint64_t goid,
				  uint64_t start_ns)
{
	struct pending *p = records__find(r, &server_call, pid, goid);

	return p && p->start_ns == start_ns ? p : NULL;
}

int http_server__set_route(struct pending *p, const char *route, size_t len)
{
	char buf[HTTP_ROUTE_MAX * 3 + 1];
	size_t n;

	if (!len)
		return -EINVAL;
	if (len > HTTP_ROUTE_MAX)
		return -E2BIG;
	n = utf8_sanitize(buf, sizeof(buf), route, len);
	name_route(p->span, http_call(p)->method, buf, n);
	http_call(p)->routed = true;
	return 0;
}

void http_server__no_route(struct pending *p)
{
	struct http_call *c = http_call(p);

	if (c->routed)
		return;
	span__set_name(p->span, c->method, strlen(c->method));
	c->routed = true;
}

const struct record_handler http_records[] = {
	{ EVENT_HTTP_SERVER_START, sizeof(struct http_server_start), on_start },
	{ EVENT_HTTP_SERVER_END, sizeof(struct http_server_end), on_end },
	{ EVENT_GO_PANIC, sizeof(struct go_panic), on_panic },
	{ EVENT_HTTP_CLIENT_START, sizeof(struct http_client_start), on_client_start },
	{ EVENT_HTTP_CLIENT_END, sizeof(struct http_client_end), on_client_end },
	{ 0 },
};
