// SPDX-License-Identifier: MIT
/*
 * The gRPC family: records of grpc-go's server streams (SERVER spans) and client calls (CLIENT
 * spans) made into spans after the RPC conventions: rpc.system, service and method, the gRPC
 * status, the server's and the peer's addresses.
 */
#include <arpa/inet.h>
#include <string.h>

#include "model/attrs.h"
#include "events.h"
#include "capture/records_family.h"
#include "model/semconv.h"
#include "model/span.h"

/* A handler's stream: one per goroutine, as a net/http call. */
static const struct call_kind server_call = {
	.start_type = EVENT_GRPC_SERVER_START,
	.span_kind = SPAN_KIND_SERVER,
	.size = sizeof(struct pending),
};

/* A goroutine may hold several streams open at once. */
static const struct call_kind client_call = {
	.start_type = EVENT_GRPC_CLIENT_START,
	.span_kind = SPAN_KIND_CLIENT,
	.several = true,
	.size = sizeof(struct pending),
};

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

static void on_grpc_server_start(struct records *r, const void *record)
{
	const struct grpc_server_start *e = record;
	struct pending *p;
	struct span *s;

	p = records__open_call(r, &server_call, &e->hdr, e->cookie, &e->ids);
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

static void on_grpc_server_end(struct records *r, const void *record)
{
	const struct grpc_server_end *e = record;
	struct pending *p = records__close_call(r, &server_call, &e->hdr, e->end_ns);

	if (!p)
		return;
	/* No status written: the stream was reset (the client went away) before one could be. */
	if (e->code >= 0)
		set_grpc_status(p->span, e->code, e->message, e->message_len, true);
	records__finish(r, p, e->cpu_ns);
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

static void on_grpc_client_start(struct records *r, const void *record)
{
	const struct grpc_client_start *e = record;
	struct pending *p;

	p = records__open_call(r, &client_call, &e->hdr, e->cookie, &e->ids);
	if (!p)
		return;
	set_rpc_method(p->span, e->method, e->method_len);
	set_grpc_target(p->span, e->target, e->target_len);
	span__set_str(p->span, SC_NETWORK_PROTOCOL_NAME, "http", 4);
	span__set_str(p->span, SC_NETWORK_PROTOCOL_VERSION, "2", 1);
}

static void on_grpc_client_end(struct records *r, const void *record)
{
	const struct grpc_client_end *e = record;
	struct pending *p = records__close_call(r, &client_call, &e->hdr, e->end_ns);

	if (!p)
		return;
	set_grpc_status(p->span, e->code, e->message, e->message_len, false);
	records__finish(r, p, ~0ULL);
}

const struct record_handler grpc_records[] = {
	{ EVENT_GRPC_SERVER_START, sizeof(struct grpc_server_start), on_grpc_server_start },
	{ EVENT_GRPC_SERVER_END, sizeof(struct grpc_server_end), on_grpc_server_end },
	{ EVENT_GRPC_CLIENT_START, sizeof(struct grpc_client_start), on_grpc_client_start },
	{ EVENT_GRPC_CLIENT_END, sizeof(struct grpc_client_end), on_grpc_client_end },
	{ 0 },
};
