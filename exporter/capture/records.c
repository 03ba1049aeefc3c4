// SPDX-License-Identifier: MIT
/*
 * Pairs ring-buffer records into SERVER spans. The span is built as soon as its start record
 * arrives (so the record is not copied), kept in a table keyed by (pid, goroutine), and completed
 * by the end record. All semantics live here: names, routes, attribute values, status.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/attrs.h"
#include "core/clock.h"
#include "capture/dbspan.h"
#include "events.h"
#include "core/log.h"
#include "capture/process.h"
#include "capture/records.h"
#include "model/semconv.h"
#include "model/span.h"
#include "analysis/target.h"

#define PENDING_BUCKETS 4096 /* power of two */

const char *const records_drop_names[RECORDS_DROP__COUNT] = {
	[RECORDS_DROP_MALFORMED] = "malformed_record",
	[RECORDS_DROP_NO_START] = "start_lost",
	[RECORDS_DROP_ABANDONED] = "no_return",
	[RECORDS_DROP_PROCESS_EXITED] = "process_exited",
	[RECORDS_DROP_NO_PROCESS] = "unknown_process",
	[RECORDS_DROP_NO_MEMORY] = "out_of_memory",
	[RECORDS_DROP_TOO_MANY_PENDING] = "too_many_in_flight",
	[RECORDS_DROP_END_LOST] = "end_lost",
	[RECORDS_DROP_UNFINISHED] = "in_flight_at_exit",
};

enum call_kind {
	CALL_SERVER,
	CALL_CLIENT,
	CALL_FUNCTION, /* several per goroutine (nested): told apart by start time */
	CALL_RPC_SERVER, /* a gRPC handler's stream: one per goroutine, as CALL_SERVER */
	CALL_RPC_CLIENT, /* gRPC calls: a goroutine may hold several streams open at once */
};

/* The type of each kind's start record, for opts.in_flight. */
static const uint32_t start_types[] = {
	[CALL_SERVER] = EVENT_HTTP_SERVER_START,	[CALL_CLIENT] = EVENT_HTTP_CLIENT_START,
	[CALL_FUNCTION] = EVENT_FUNC_START,		[CALL_RPC_SERVER] = EVENT_GRPC_SERVER_START,
	[CALL_RPC_CLIENT] = EVENT_GRPC_CLIENT_START,
};

struct pending {
	uint32_t pid;
	enum call_kind kind; /* a goroutine can be in a server call and a client call at once */
	uint64_t goid;
	uint64_t start_ns; /* monotonic, from the record: names the call */
	uint64_t panic_ns; /* monotonic; 0 = no panic seen */
	uint64_t aged_from_ns; /* monotonic: its start, or when BPF last said it still held it */
	bool held;	   /* its span has a place held in the export queue (opts.hold) */
	char method[MAX_METHOD_LEN + 1];
	bool http1; /* served by net/http's own HTTP/1 connection code */
	uint32_t depth; /* CALL_FUNCTION: position on the goroutine's stack of open calls */
	struct span *span;
	struct go_panic panic; /* valid when panic_ns != 0 */
	struct process *proc;
	struct pending *next;
};

struct records {
	struct records_opts opts;
	struct pending *buckets[PENDING_BUCKETS];
	struct records_stats stats;
};

struct records *records__new(const struct records_opts *opts)
{
	struct records *r = calloc(1, sizeof(*r));

	if (!r)
		return NULL;
	r->opts = *opts;
	return r;
}

static void pending_free(struct pending *p)
{
	span__free(p->span);
	free(p);
}

void records__free(struct records *r)
{
	struct pending *p, *next;
	size_t i;

	if (!r)
		return;
	for (i = 0; i < PENDING_BUCKETS; i++) {
		for (p = r->buckets[i]; p; p = next) {
			next = p->next;
			pending_free(p);
		}
	}
	free(r);
}

static struct pending **bucket(struct records *r, uint32_t pid, uint64_t goid)
{
	uint64_t h = (goid ^ ((uint64_t)pid << 32)) * 0x9e3779b97f4a7c15ULL;

	return &r->buckets[(h >> 32) & (PENDING_BUCKETS - 1)];
}

/* Finds and unlinks the pending call of (pid, goid, kind) that started at START_NS (0: any). */
static struct pending *take(struct records *r, uint32_t pid, uint64_t goid, enum call_kind kind,
			    uint64_t start_ns)
{
	struct pending **pp, *p;

	for (pp = bucket(r, pid, goid); (p = *pp); pp = &p->next) {
		if (p->pid == pid && p->goid == goid && p->kind == kind &&
		    (!start_ns || p->start_ns == start_ns)) {
			*pp = p->next;
			r->stats.pending--;
			return p;
		}
	}
	return NULL;
}

static struct pending *find(struct records *r, uint32_t pid, uint64_t goid, enum call_kind kind)
{
	struct pending *p;

	for (p = *bucket(r, pid, goid); p; p = p->next)
		if (p->pid == pid && p->goid == goid && p->kind == kind)
			return p;
	return NULL;
}

static void drop(struct records *r, struct pending *p, enum records_drop why)
{
	if (p->panic_ns)
		r->stats.panics_held--;
	r->stats.dropped[why]++;
	pending_free(p);
}

static bool known_method(const char *m)
{
	static const char *const methods[] = { "GET",	  "HEAD",    "POST",  "PUT",  "DELETE",
					       "CONNECT", "OPTIONS", "TRACE", "PATCH" };
	size_t i;

	for (i = 0; i < sizeof(methods) / sizeof(methods[0]); i++)
		if (!strcmp(m, methods[i]))
			return true;
	return false;
}

/* "GET example.com/users/{id}" -> "/users/{id}": the route is the pattern's path. */
static const char *pattern_route(char *pattern)
{
	char *sp = strchr(pattern, ' ');
	char *path = sp ? sp + 1 : pattern;
	size_t len;

	while (*path == ' ' || *path == '\t')
		path++;
	path = strchr(path, '/');
	/* "/{$}" is Go's spelling of "exactly this path": the route is the path itself. */
	if (path && (len = strlen(path)) >= 4 && !strcmp(path + len - 3, "{$}"))
		path[len - 3] = '\0';
	return path;
}

/* Sets http.route and names the span "METHOD ROUTE", or just "METHOD" when no route matched. */
static void set_route_and_name(struct span *s, const char *method, const char *raw, uint32_t len)
{
	char pattern[MAX_PATTERN_LEN * 3 + 1], name[MAX_METHOD_LEN + MAX_PATTERN_LEN * 3 + 2];
	const char *route = NULL;
	size_t mlen, rlen;

	pattern[0] = '\0';
	if (len)
		attrs__captured_copy(pattern, sizeof(pattern), raw, len, MAX_PATTERN_LEN);
	/* A cut pattern would name a route that does not exist: leave it out. */
	if (pattern[0] && len <= MAX_PATTERN_LEN)
		route = pattern_route(pattern);
	if (!route) {
		span__set_name(s, method, strlen(method));
		return;
	}
	/* Both parts are bounded (MAX_METHOD_LEN, the pattern buffer): they fit NAME. */
	mlen = strnlen(method, MAX_METHOD_LEN);
	rlen = strlen(route);
	span__set_str(s, SC_HTTP_ROUTE, route, rlen);
	memcpy(name, method, mlen);
	name[mlen] = ' ';
	memcpy(name + mlen + 1, route, rlen);
	span__set_name(s, name, mlen + 1 + rlen);
}

/*
 * Hands a finished span on, into the place held for it when HELD, unless its trace is not
 * sampled: the caller said so in the traceparent flags, and a parent-based sampler keeps no span
 * of such a trace (nor is a place held for one).
 */
static void emit(struct records *r, struct span *s, bool held)
{
	if (!(s->flags & 1)) {
		r->stats.unsampled++;
		span__free(s);
		return;
	}
	r->stats.spans++;
	if (held)
		r->opts.submit_held(r->opts.ctx, s);
	else
		r->opts.submit(r->opts.ctx, s);
}

/*
 * A span's end: its start plus the monotonic time between the two. Converting the end on its own
 * would use the clock offset current then, and a step of the wall clock since the start (a resync)
 * would become part of the span's duration, a negative one for a step back. An end before its
 * start (a corrupt record) gives a span of no duration.
 */
static void set_end(struct span *s, uint64_t start_mono, uint64_t end_mono)
{
	s->end_ns = s->start_ns + (end_mono > start_mono ? end_mono - start_mono : 0);
}

/*
 * The one way a call's span is finished, whatever its kind: its on-CPU time when the end record
 * carries one (CPU_NS ~0: not measured), the panic it may have outlived, and the span handed on,
 * into the place held for it since that panic if there is one. P is freed; the span is gone on.
 */
static void finish(struct records *r, struct pending *p, uint64_t cpu_ns)
{
	if (cpu_ns != ~0ULL)
		span__set_int(p->span, GOSPAN_CPU_TIME_NS, (int64_t)cpu_ns);
	if (p->panic_ns)
		r->stats.panics_held--;
	emit(r, p->span, p->held);
	p->span = NULL;
	pending_free(p);
}

/* A panicked call that did not return: the request failed at the panic. */
static void finish_panicked(struct records *r, struct pending *p)
{
	struct span *s = p->span;

	set_end(s, p->start_ns, p->panic_ns);
	s->status = SPAN_STATUS_ERROR;
	s->status_msg = span__strndup(s, "handler panicked", 16);
	span__set_str(s, SC_ERROR_TYPE, "panic", 5);
	set_route_and_name(s, p->method, p->panic.pattern, p->panic.pattern_len);
	if (r->opts.forget)
		r->opts.forget(r->opts.ctx, p->pid, p->goid, p->start_ns);
	r->stats.panics++;
	finish(r, p, ~0ULL);
}

/* A call its goroutine left for another without returning: failed at its panic, if it had one. */
static void abandon(struct records *r, struct pending *p)
{
	if (p->panic_ns)
		finish_panicked(r, p);
	else
		drop(r, p, RECORDS_DROP_ABANDONED);
}

/*
 * Sets network.protocol.version from a Go Proto string ("HTTP/1.1", "HTTP/2.0"); true for
 * HTTP/1.x, which net/http serves with its own response writer.
 */
static bool set_protocol_version(struct span *s, const char *raw, uint32_t len)
{
	char proto[MAX_PROTO_LEN * 3 + 1];
	const char *ver;

	attrs__captured_copy(proto, sizeof(proto), raw, len, MAX_PROTO_LEN);
	if (strncmp(proto, "HTTP/", 5))
		return false;
	ver = proto + 5;
	/* "HTTP/2.0" is reported as "2", as the conventions spell it. */
	if (!strcmp(ver, "2.0") || !strcmp(ver, "3.0"))
		span__set_str(s, SC_NETWORK_PROTOCOL_VERSION, ver, 1);
	else
		span__set_str(s, SC_NETWORK_PROTOCOL_VERSION, ver, strlen(ver));
	return !strncmp(ver, "1.", 2);
}

/* The ids BPF chose for the span: no random ones to draw here. */
static void set_ids(struct span *s, const struct span_ids *ids)
{
	memcpy(s->trace_id, ids->trace_id, sizeof(s->trace_id));
	memcpy(s->span_id, ids->span_id, sizeof(s->span_id));
	memcpy(s->parent_span_id, ids->parent_span_id, sizeof(s->parent_span_id));
	s->flags = ids->flags;
	s->parent_known = !span__id_is_zero(s->parent_span_id, sizeof(s->parent_span_id));
	s->remote_parent = ids->remote_parent;
}

/*
 * Opens the pending call a start record names, with its span: ids as BPF chose them (the calls
 * it makes already carry them), times converted. NULL when it cannot be held (counted).
 */
static struct pending *open_call(struct records *r, const struct record_header *h, uint32_t cookie,
				 const struct span_ids *ids, enum call_kind kind)
{
	struct pending *p, *old, **b;
	struct process *proc;
	struct span *s;

	/* Function calls nest: an open one is the new one's caller, not a call that vanished. */
	old = kind == CALL_FUNCTION || kind == CALL_RPC_CLIENT ? NULL :
									 take(r, h->pid, h->goid, kind, 0);
	/* The goroutine started a new call: the old one will never return. */
	if (old)
		abandon(r, old);
	if (r->stats.pending >= r->opts.max_pending) {
		r->stats.dropped[RECORDS_DROP_TOO_MANY_PENDING]++;
		return NULL;
	}
	proc = process_table__get(r->opts.processes, h->pid, cookie);
	if (!proc) {
		r->stats.dropped[RECORDS_DROP_NO_PROCESS]++;
		return NULL;
	}
	p = calloc(1, sizeof(*p));
	/* The ids come from BPF, which chose them: no random ones to draw here. */
	s = p ? span__alloc() : NULL;
	if (!s) {
		free(p);
		r->stats.dropped[RECORDS_DROP_NO_MEMORY]++;
		return NULL;
	}
	p->pid = h->pid;
	p->goid = h->goid;
	p->kind = kind;
	p->start_ns = h->start_ns;
	p->aged_from_ns = h->start_ns;
	p->span = s;
	p->proc = proc;

	span__set_resource(s, proc->res);
	s->kind = kind == CALL_SERVER || kind == CALL_RPC_SERVER ? SPAN_KIND_SERVER :
		  kind == CALL_CLIENT || kind == CALL_RPC_CLIENT ? SPAN_KIND_CLIENT :
								     SPAN_KIND_INTERNAL;
	s->start_ns = clock__to_unix_ns(r->opts.clock, h->start_ns);
	set_ids(s, ids);

	b = bucket(r, p->pid, p->goid);
	p->next = *b;
	*b = p;
	r->stats.pending++;
	return p;
}

/* Sets http.request.method (and the name's method part) the way the conventions ask. */
static void set_method(struct span *s, struct pending *p, const char *raw, uint32_t len)
{
	char method[MAX_METHOD_LEN * 3 + 1];

	attrs__captured_copy(method, sizeof(method), raw, len, MAX_METHOD_LEN);
	if (known_method(method)) {
		/* Known methods are short: they fit p->method, and nothing needs a format. */
		size_t n = strlen(method);

		span__set_str(s, SC_HTTP_REQUEST_METHOD, method, n);
		memcpy(p->method, method, n + 1);
	} else {
		/* Semantic conventions: unknown methods are "_OTHER", spans are named "HTTP". */
		span__set_str(s, SC_HTTP_REQUEST_METHOD, "_OTHER", 6);
		attrs__set_captured(s, SC_HTTP_REQUEST_METHOD_ORIGINAL, raw, len, MAX_METHOD_LEN);
		snprintf(p->method, sizeof(p->method), "HTTP");
	}
}

static void on_start(struct records *r, const struct http_server_start *e)
{
	char host[MAX_HOST_LEN * 3 + 1], remote[MAX_ADDR_LEN * 3 + 1];
	struct pending *p;
	struct span *s;

	p = open_call(r, &e->hdr, e->cookie, &e->ids, CALL_SERVER);
	if (!p)
		return;
	s = p->span;
	if (e->tracestate_len && e->tracestate_len <= MAX_TRACESTATE_LEN)
		s->trace_state = span__strndup(s, e->tracestate, e->tracestate_len);

	set_method(s, p, e->method, e->method_len);
	attrs__set_captured(s, SC_URL_PATH, e->path, e->path_len, MAX_PATH_LEN);
	span__set_str(s, SC_URL_SCHEME, e->tls ? "https" : "http", e->tls ? 5 : 4);

	attrs__captured_copy(host, sizeof(host), e->host, e->host_len, MAX_HOST_LEN);
	if (host[0])
		attrs__set_host_port(s, host, SC_SERVER_ADDRESS, SC_SERVER_PORT);
	attrs__captured_copy(remote, sizeof(remote), e->remote_addr, e->remote_addr_len, MAX_ADDR_LEN);
	if (remote[0]) {
		attrs__set_host_port(s, remote, SC_NETWORK_PEER_ADDRESS, SC_NETWORK_PEER_PORT);
		/* No proxy headers are read: the peer is the client. */
		const struct attr *a = span__get(s, SC_NETWORK_PEER_ADDRESS);
		if (a)
			span__set_str(s, SC_CLIENT_ADDRESS, a->s, strlen(a->s));
	}
	p->http1 = set_protocol_version(s, e->proto, e->proto_len);
	if (e->content_length > 0)
		span__set_int(s, SC_HTTP_REQUEST_BODY_SIZE, e->content_length);
}

/*
 * Takes the pending call an end record closes and sets its span's end; NULL (counted) when the
 * start was lost, or when the call held is an older one that never returned.
 */
static struct pending *close_call(struct records *r, const struct record_header *h,
				  enum call_kind kind, uint64_t end_ns)
{
	/* A goroutine may have several gRPC streams open: the start time names the call. */
	struct pending *p = take(r, h->pid, h->goid, kind,
				 kind == CALL_RPC_CLIENT ? h->start_ns : 0);

	if (!p) {
		r->stats.dropped[RECORDS_DROP_NO_START]++;
		return NULL;
	}
	if (p->start_ns != h->start_ns) {
		/* The goroutine has started a call since: the one held never returned. */
		abandon(r, p);
		r->stats.dropped[RECORDS_DROP_NO_START]++;
		return NULL;
	}
	set_end(p->span, p->start_ns, end_ns);
	return p;
}

static void on_end(struct records *r, const struct http_server_end *e)
{
	const struct target *t;
	struct pending *p;
	struct span *s;
	bool status_known;
	int64_t status;

	p = close_call(r, &e->hdr, CALL_SERVER, e->end_ns);
	if (!p)
		return;
	s = p->span;

	/*
	 * The status is only meaningful when the writer is net/http's own *response; other writers
	 * (HTTP/2) have another layout, so no code is claimed for them. The writer's itab says so
	 * exactly; without the itab's symbol (stripped binaries), the protocol does: net/http
	 * serves every HTTP/1.x request with a *response.
	 */
	t = p->proc->target;
	status_known = t->response_itab ? e->rw_itab == t->response_itab + p->proc->load_bias :
					  p->http1;
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

	set_route_and_name(s, p->method, e->pattern, e->pattern_len);
	/* A panic recovered inside the handler: the call returned as any other. */
	finish(r, p, e->cpu_ns);
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

static void on_client_start(struct records *r, const struct http_client_start *e)
{
	char scheme[MAX_SCHEME_LEN * 3 + 1], host[MAX_HOST_LEN * 3 + 1];
	char path[MAX_PATH_LEN * 3 + 1], query[MAX_QUERY_LEN * 3 + 1];
	char url[sizeof(scheme) + sizeof(host) + sizeof(path) + 4 * sizeof(query)];
	const struct attr *port;
	struct pending *p;
	struct span *s;

	p = open_call(r, &e->hdr, e->cookie, &e->ids, CALL_CLIENT);
	if (!p)
		return;
	s = p->span;
	set_method(s, p, e->method, e->method_len);
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
	span__set_name(s, p->method, strlen(p->method));
}

static void on_client_end(struct records *r, const struct http_client_end *e)
{
	struct pending *p;
	struct span *s;
	char code[16];

	p = close_call(r, &e->hdr, CALL_CLIENT, e->end_ns);
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
	finish(r, p, ~0ULL);
}

/*
 * Whether the call still returns (a panic recovered inside the handler) or not (recovered above
 * ServeHTTP, by net/http itself, which closes the connection or resets the stream) is only known
 * when its end comes or the grace passes. Its span takes its place in the export queue now, as
 * if it had ended at the panic: spans queued during the wait cannot take that place.
 */
static void on_panic(struct records *r, const struct go_panic *e)
{
	struct pending *p = find(r, e->hdr.pid, e->hdr.goid, CALL_SERVER);

	if (!p || p->start_ns != e->hdr.start_ns || p->panic_ns)
		return;
	p->panic_ns = e->panic_ns;
	p->panic = *e;
	r->stats.panics_held++;
	if (r->opts.hold && (p->span->flags & 1))
		p->held = !r->opts.hold(r->opts.ctx);
}

/* Sets the attribute of argument A, gospan.arg.<its path>, formatted as its declared type. */
static void set_arg(struct span *s, const struct traced_arg *a, const struct func_arg_value *v)
{
	unsigned bits = a->size >= 1 && a->size < 8 ? a->size * 8 : 64;
	uint64_t w = v->word;
	const char *key;
	char buf[256];
	float f32;
	int n;

	if (!a->path || !v->ok)
		return;
	/* The functions file bounds paths well below this (FUNC_ARG_PATH_MAX). */
	n = snprintf(buf, sizeof(buf), "%s%s", GOSPAN_ARG_PREFIX, a->path);
	if (n < 0 || (size_t)n >= sizeof(buf))
		return;
	key = span__strndup(s, buf, (size_t)n);
	if (!key)
		return;
	if (bits < 64)
		w &= (1ULL << bits) - 1;
	switch (a->type) {
	case GO_TYPE_BOOL:
		span__set_bool(s, key, (w & 0xff) != 0);
		break;
	case GO_TYPE_INT:
		/* Sign-extend from the value's own width. */
		if (bits < 64 && (w >> (bits - 1)) & 1)
			w |= ~0ULL << bits;
		span__set_int(s, key, (int64_t)w);
		break;
	case GO_TYPE_UINT:
		span__set_int(s, key, (int64_t)w); /* OTLP has no unsigned: above 2^63 wraps */
		break;
	case GO_TYPE_FLOAT:
		if (a->size == 4) {
			uint32_t u = (uint32_t)w;

			memcpy(&f32, &u, sizeof(f32));
			span__set_double(s, key, f32);
		} else {
			double d;

			memcpy(&d, &w, sizeof(d));
			span__set_double(s, key, d);
		}
		break;
	case GO_TYPE_STRING:
		attrs__set_captured(s, key, v->str, v->len, MAX_ARG_STR_LEN);
		break;
	default:
		break;
	}
}

/* The function a record names, through its target: NULL when unknown. */
static const struct traced_func *record_func(const struct process *proc, uint32_t func)
{
	const struct target *t = proc->target;

	if (!t || func < t->func_base || func - t->func_base >= t->nfuncs)
		return NULL;
	return &t->funcs[func - t->func_base];
}

static void on_func_start(struct records *r, const struct func_start *e)
{
	const struct traced_func *f;
	struct pending *p;
	struct span *s;
	uint32_t i;

	p = open_call(r, &e->hdr, e->cookie, &e->ids, CALL_FUNCTION);
	if (!p)
		return;
	p->depth = e->depth;
	s = p->span;
	f = record_func(p->proc, e->func);
	if (!f) {
		span__set_name(s, "function", 8);
		return;
	}
	span__set_name(s, f->name, strlen(f->name));
	span__set_str(s, SC_CODE_FUNCTION_NAME, f->symbol, strlen(f->symbol));
	for (i = 0; i < f->cfg.nargs && i < MAX_FUNC_ARGS; i++)
		set_arg(s, &f->args[i], &e->args[i]);
}

static void on_func_end(struct records *r, const struct func_end *e)
{
	struct pending **pp, *p, *found = NULL;

	/*
	 * The call this RET ends, and with it every call it made that is still open: those never
	 * returned (a panic recovered in between), and BPF has dropped their frames.
	 */
	for (pp = bucket(r, e->hdr.pid, e->hdr.goid); (p = *pp);) {
		if (p->kind != CALL_FUNCTION || p->pid != e->hdr.pid || p->goid != e->hdr.goid) {
			pp = &p->next;
			continue;
		}
		if (p->start_ns == e->hdr.start_ns) {
			*pp = p->next;
			r->stats.pending--;
			/* Two calls of one goroutine never start in the same ns: keep one, count one. */
			if (found)
				drop(r, found, RECORDS_DROP_ABANDONED);
			found = p;
			continue;
		}
		if (p->depth > e->depth && p->start_ns > e->hdr.start_ns) {
			*pp = p->next;
			r->stats.pending--;
			drop(r, p, RECORDS_DROP_ABANDONED);
			continue;
		}
		pp = &p->next;
	}
	if (!found) {
		r->stats.dropped[RECORDS_DROP_NO_START]++;
		return;
	}
	set_end(found->span, found->start_ns, e->end_ns);
	finish(r, found, e->cpu_ns);
}

/* gRPC status codes by number, as the conventions and grpc-go spell them. */
static const char *const grpc_code_names[] = {
	"OK",		 "CANCELLED",	      "UNKNOWN",	   "INVALID_ARGUMENT",
	"DEADLINE_EXCEEDED", "NOT_FOUND",      "ALREADY_EXISTS",    "PERMISSION_DENIED",
	"RESOURCE_EXHAUSTED", "FAILED_PRECONDITION", "ABORTED",	   "OUT_OF_RANGE",
	"UNIMPLEMENTED",     "INTERNAL",	      "UNAVAILABLE",	   "DATA_LOSS",
	"UNAUTHENTICATED",
};

/*
 * Splits "/package.Service/Method" into rpc.service and rpc.method and names the span
 * "package.Service/Method", as the RPC conventions ask; a name gRPC would refuse is kept whole.
 */
static void set_rpc_method(struct span *s, const char *raw, uint32_t len)
{
	char full[MAX_RPC_METHOD_LEN * 3 + 1];
	const char *name, *slash;

	span__set_str(s, SC_RPC_SYSTEM, "grpc", 4);
	attrs__captured_copy(full, sizeof(full), raw, len, MAX_RPC_METHOD_LEN);
	name = full[0] == '/' ? full + 1 : full;
	slash = strrchr(name, '/');
	if (!name[0] || len > MAX_RPC_METHOD_LEN) {
		span__set_name(s, name[0] ? name : "grpc", name[0] ? strlen(name) : 4);
		if (len > MAX_RPC_METHOD_LEN)
			attrs__mark_truncated(s, SC_RPC_METHOD);
		return;
	}
	if (slash && slash != name && slash[1]) {
		span__set_str(s, SC_RPC_SERVICE, name, slash - name);
		span__set_str(s, SC_RPC_METHOD, slash + 1, strlen(slash + 1));
	}
	span__set_name(s, name, strlen(name));
}

/* An endpoint as a *net.TCPAddr had it, into attributes HOST_KEY and PORT_KEY. */
static void set_endpoint(struct span *s, const struct net_endpoint *ep, const char *host_key,
			 const char *port_key)
{
	static const uint8_t v4_in_v6[12] = { [10] = 0xff, [11] = 0xff };
	char buf[INET6_ADDRSTRLEN];
	const void *ip = ep->ip;
	int family = AF_INET6;

	if (ep->ip_len != 4 && ep->ip_len != 16)
		return;
	/* Go keeps IPv4 addresses in their 16-byte form too: show them as IPv4. */
	if (ep->ip_len == 4 || !memcmp(ep->ip, v4_in_v6, sizeof(v4_in_v6))) {
		family = AF_INET;
		ip = ep->ip_len == 4 ? ep->ip : ep->ip + 12;
	}
	if (!inet_ntop(family, ip, buf, sizeof(buf)))
		return;
	span__set_str(s, host_key, buf, strlen(buf));
	span__set_int(s, port_key, ep->port);
}

/*
 * The call's gRPC status: rpc.grpc.status_code always, and status ERROR with error.type (the
 * code's name) and the status message when the code is an error for this side. A server only
 * calls its own failures errors; a client, every code but OK.
 */
static void set_grpc_status(struct span *s, int32_t code, const char *msg, uint32_t msg_len,
			    bool server)
{
	char text[MAX_RPC_MESSAGE_LEN * 3 + 1];
	const char *name;
	bool error;

	span__set_int(s, SC_RPC_GRPC_STATUS_CODE, code);
	if (server)
		error = code == 2 || code == 4 || code == 12 || code == 13 || code == 14 || code == 15;
	else
		error = code != 0;
	if (!error)
		return;
	s->status = SPAN_STATUS_ERROR;
	name = code >= 0 && (size_t)code < sizeof(grpc_code_names) / sizeof(grpc_code_names[0]) ?
		       grpc_code_names[code] :
		       "_OTHER";
	span__set_str(s, SC_ERROR_TYPE, name, strlen(name));
	if (msg_len) {
		attrs__captured_copy(text, sizeof(text), msg, msg_len, MAX_RPC_MESSAGE_LEN);
		s->status_msg = span__strndup(s, text, strlen(text));
	}
}

static void on_grpc_server_start(struct records *r, const struct grpc_server_start *e)
{
	struct pending *p;
	struct span *s;

	p = open_call(r, &e->hdr, e->cookie, &e->ids, CALL_RPC_SERVER);
	if (!p)
		return;
	s = p->span;
	if (e->tracestate_len && e->tracestate_len <= MAX_TRACESTATE_LEN)
		s->trace_state = span__strndup(s, e->tracestate, e->tracestate_len);
	set_rpc_method(s, e->method, e->method_len);
	set_endpoint(s, &e->local, SC_SERVER_ADDRESS, SC_SERVER_PORT);
	set_endpoint(s, &e->remote, SC_NETWORK_PEER_ADDRESS, SC_NETWORK_PEER_PORT);
	/* No proxy is in between that gospan could know of: the peer is the client. */
	set_endpoint(s, &e->remote, SC_CLIENT_ADDRESS, SC_CLIENT_PORT);
	span__set_str(s, SC_NETWORK_PROTOCOL_NAME, "http", 4);
	span__set_str(s, SC_NETWORK_PROTOCOL_VERSION, "2", 1);
}

static void on_grpc_server_end(struct records *r, const struct grpc_server_end *e)
{
	struct pending *p = close_call(r, &e->hdr, CALL_RPC_SERVER, e->end_ns);

	if (!p)
		return;
	/* No status written: the stream was reset (the client went away) before one could be. */
	if (e->code >= 0)
		set_grpc_status(p->span, e->code, e->message, e->message_len, true);
	finish(r, p, e->cpu_ns);
}

/*
 * The dial target "dns:///host:port", "passthrough:///host:port" or "host:port" names the
 * server the call is for: server.address and server.port (absent for unix sockets).
 */
static void set_grpc_target(struct span *s, const char *raw, uint32_t len)
{
	char target[MAX_RPC_TARGET_LEN * 3 + 1];
	const char *hp = target, *sep;

	if (!len || len > MAX_RPC_TARGET_LEN)
		return;
	attrs__captured_copy(target, sizeof(target), raw, len, MAX_RPC_TARGET_LEN);
	sep = strstr(target, "://");
	if (sep) {
		if (!strncmp(target, "unix", 4))
			return;
		hp = sep + 3;
		/* The authority part, when there is one, is the resolver's, not the server. */
		sep = strchr(hp, '/');
		hp = sep ? sep + 1 : hp;
	} else if (!strncmp(target, "unix:", 5)) {
		return;
	}
	if (hp[0])
		attrs__set_host_port(s, hp, SC_SERVER_ADDRESS, SC_SERVER_PORT);
}

static void on_grpc_client_start(struct records *r, const struct grpc_client_start *e)
{
	struct pending *p;

	p = open_call(r, &e->hdr, e->cookie, &e->ids, CALL_RPC_CLIENT);
	if (!p)
		return;
	set_rpc_method(p->span, e->method, e->method_len);
	set_grpc_target(p->span, e->target, e->target_len);
	span__set_str(p->span, SC_NETWORK_PROTOCOL_NAME, "http", 4);
	span__set_str(p->span, SC_NETWORK_PROTOCOL_VERSION, "2", 1);
}

static void on_grpc_client_end(struct records *r, const struct grpc_client_end *e)
{
	struct pending *p = close_call(r, &e->hdr, CALL_RPC_CLIENT, e->end_ns);

	if (!p)
		return;
	set_grpc_status(p->span, e->code, e->message, e->message_len, false);
	finish(r, p, ~0ULL);
}

/* A data store call: one record, the whole span (it has no children). */
static void on_db_call(struct records *r, const struct db_call *e)
{
	struct process *proc;
	struct span *s;

	proc = process_table__get(r->opts.processes, e->hdr.pid, e->cookie);
	if (!proc || !proc->target) {
		r->stats.dropped[RECORDS_DROP_NO_PROCESS]++;
		return;
	}
	s = span__alloc();
	if (!s) {
		r->stats.dropped[RECORDS_DROP_NO_MEMORY]++;
		return;
	}
	span__set_resource(s, proc->res);
	s->kind = SPAN_KIND_CLIENT;
	s->start_ns = clock__to_unix_ns(r->opts.clock, e->hdr.start_ns);
	set_end(s, e->hdr.start_ns, e->end_ns);
	set_ids(s, &e->ids);
	dbspan__fill(s, e, &proc->target->db, proc->load_bias,
		     (enum db_query_text)r->opts.db_query_text);
	emit(r, s, false);
}

int records__handle(void *ctx, const void *data, size_t size)
{
	const struct record_header *h = data;
	struct records *r = ctx;

	if (size < sizeof(*h))
		goto malformed;
	switch (h->type) {
	case EVENT_HTTP_SERVER_START:
		if (size < sizeof(struct http_server_start))
			goto malformed;
		on_start(r, data);
		return 0;
	case EVENT_HTTP_SERVER_END:
		if (size < sizeof(struct http_server_end))
			goto malformed;
		on_end(r, data);
		return 0;
	case EVENT_GO_PANIC:
		if (size < sizeof(struct go_panic))
			goto malformed;
		on_panic(r, data);
		return 0;
	case EVENT_HTTP_CLIENT_START:
		if (size < sizeof(struct http_client_start))
			goto malformed;
		on_client_start(r, data);
		return 0;
	case EVENT_HTTP_CLIENT_END:
		if (size < sizeof(struct http_client_end))
			goto malformed;
		on_client_end(r, data);
		return 0;
	case EVENT_FUNC_START:
		if (size < sizeof(struct func_start))
			goto malformed;
		on_func_start(r, data);
		return 0;
	case EVENT_FUNC_END:
		if (size < sizeof(struct func_end))
			goto malformed;
		on_func_end(r, data);
		return 0;
	case EVENT_GRPC_SERVER_START:
		if (size < sizeof(struct grpc_server_start))
			goto malformed;
		on_grpc_server_start(r, data);
		return 0;
	case EVENT_GRPC_SERVER_END:
		if (size < sizeof(struct grpc_server_end))
			goto malformed;
		on_grpc_server_end(r, data);
		return 0;
	case EVENT_GRPC_CLIENT_START:
		if (size < sizeof(struct grpc_client_start))
			goto malformed;
		on_grpc_client_start(r, data);
		return 0;
	case EVENT_DB_CALL:
		if (size < sizeof(struct db_call))
			goto malformed;
		on_db_call(r, data);
		return 0;
	case EVENT_GRPC_CLIENT_END:
		if (size < sizeof(struct grpc_client_end))
			goto malformed;
		on_grpc_client_end(r, data);
		return 0;
	}
malformed:
	r->stats.dropped[RECORDS_DROP_MALFORMED]++;
	return 0;
}

/*
 * Whether P's end was lost: it has been in flight past the bound, and BPF no longer holds it (the
 * ring buffer was full at its end, its entry was evicted) or cannot say. Dropped, not exported:
 * when it ended is not known, and a span with an end made up here (the sweep's time, minutes
 * late) would put a false latency into every percentile built from the spans, and an error
 * status a failure the service may never have had. A panicked call has its own, shorter, grace.
 */
static bool end_lost(struct records *r, struct pending *p, uint64_t now_ns)
{
	uint64_t bound = r->opts.max_pending_age_ns;

	if (!bound || p->panic_ns || now_ns < p->aged_from_ns || now_ns - p->aged_from_ns < bound)
		return false;
	if (r->opts.in_flight && r->opts.in_flight(r->opts.ctx, start_types[p->kind], p->pid,
						   p->goid, p->start_ns) > 0) {
		/* Long, not lost (a WebSocket, a stream): asked again a bound from now. */
		p->aged_from_ns = now_ns;
		return false;
	}
	return true;
}

static void sweep(struct records *r, uint64_t now_ns, bool final)
{
	struct pending **pp, *p;
	size_t i;

	for (i = 0; i < PENDING_BUCKETS; i++) {
		pp = &r->buckets[i];
		while ((p = *pp)) {
			bool gone = !final && kill(p->pid, 0) && errno == ESRCH;
			bool expired = p->panic_ns && (final || gone ||
						       now_ns - p->panic_ns >= r->opts.panic_grace_ns);
			bool lost = !expired && !gone && !final && end_lost(r, p, now_ns);

			if (!expired && !gone && !final && !lost) {
				pp = &p->next;
				continue;
			}
			*pp = p->next;
			r->stats.pending--;
			if (expired)
				finish_panicked(r, p);
			else
				drop(r, p,
				     final ? RECORDS_DROP_UNFINISHED :
				     lost  ? RECORDS_DROP_END_LOST :
					     RECORDS_DROP_PROCESS_EXITED);
		}
	}
}

void records__tick(struct records *r, uint64_t now_ns)
{
	if (r->stats.pending)
		sweep(r, now_ns, false);
}

bool records__has_calls(const struct records *r, pid_t pid)
{
	const struct pending *p;
	size_t i;

	if (!r->stats.pending)
		return false;
	for (i = 0; i < PENDING_BUCKETS; i++)
		for (p = r->buckets[i]; p; p = p->next)
			if (p->pid == (uint32_t)pid)
				return true;
	return false;
}

void records__flush(struct records *r)
{
	sweep(r, 0, true);
}

void records__stats(const struct records *r, struct records_stats *out)
{
	*out = r->stats;
}
