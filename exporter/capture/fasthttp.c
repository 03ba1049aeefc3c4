// SPDX-License-Identifier: MIT
/*
 * The fasthttp family (fasthttp.h): its server's records told again as net/http's, for http.c.
 */
#include <arpa/inet.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "events.h"
#include "capture/fasthttp.h"
#include "capture/http.h"
#include "capture/records_family.h"

static int hex_digit(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* Whether every '%' of the N bytes at P starts an escape of two hex digits. */
static bool escapes_valid(const char *p, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (p[i] == '%' &&
		    (i + 2 >= n || hex_digit(p[i + 1]) < 0 || hex_digit(p[i + 2]) < 0))
			return false;
	return true;
}

size_t fasthttp__uri_path(const char *uri, size_t len, char *out, size_t size)
{
	const char *p = uri, *end = uri + len, *q, *scheme;
	size_t n = 0, i, plen;
	bool decode;

	/* The absolute form: the path begins after the authority. */
	scheme = memchr(p, ':', len);
	if (len && p[0] != '/' && scheme && end - scheme >= 3 && !memcmp(scheme, "://", 3)) {
		p = memchr(scheme + 3, '/', (size_t)(end - scheme - 3));
		if (!p)
			p = end;
	}
	q = memchr(p, '?', (size_t)(end - p));
	plen = (size_t)((q ? q : end) - p);
	decode = escapes_valid(p, plen);
	for (i = 0; i < plen; i++) {
		char c = p[i];

		if (decode && c == '%') {
			c = (char)(hex_digit(p[i + 1]) << 4 | hex_digit(p[i + 2]));
			i += 2;
		}
		if (n + 1 < size)
			out[n] = c;
		n++;
	}
	if (size)
		out[n < size ? n : size - 1] = '\0';
	return n;
}

size_t fasthttp__endpoint(const struct net_endpoint *ep, char *out, size_t size)
{
	static const uint8_t v4_in_v6[12] = { [10] = 0xff, [11] = 0xff };
	char ip[INET6_ADDRSTRLEN];
	bool v6 = ep->ip_len == 16 && memcmp(ep->ip, v4_in_v6, sizeof(v4_in_v6));
	const void *a = ep->ip_len == 16 && !v6 ? ep->ip + 12 : ep->ip;
	int n;

	if ((ep->ip_len != 4 && ep->ip_len != 16) ||
	    !inet_ntop(v6 ? AF_INET6 : AF_INET, a, ip, sizeof(ip)))
		return 0;
	n = snprintf(out, size, v6 ? "[%s]:%u" : "%s:%u", ip, ep->port);
	return n > 0 && (size_t)n < size ? (size_t)n : 0;
}

/* A request's start, as ServeHTTP's entry would have told it. */
static void on_start(struct records *r, const void *record)
{
	const struct fasthttp_server_start *e = record;
	struct http_server_start h = {};
	char path[MAX_REQUEST_URI_LEN + 1];
	uint32_t got = e->uri_len < MAX_REQUEST_URI_LEN ? e->uri_len : MAX_REQUEST_URI_LEN;
	size_t n;

	h.hdr = e->hdr;
	h.hdr.type = EVENT_HTTP_SERVER_START;
	h.ids = e->ids;
	h.content_length = e->content_length;
	h.cookie = e->cookie;
	h.tls = e->tls;
	memcpy(h.method, e->method, sizeof(h.method));
	h.method_len = e->method_len;
	memcpy(h.host, e->host, sizeof(h.host));
	h.host_len = e->host_len;
	memcpy(h.proto, e->proto, sizeof(h.proto));
	h.proto_len = e->proto_len;
	memcpy(h.tracestate, e->tracestate, sizeof(h.tracestate));
	h.tracestate_len = e->tracestate_len;
	/* A URI cut before its '?' has a path longer than what was read of it. */
	n = fasthttp__uri_path(e->uri, got, path, sizeof(path));
	if (e->uri_len > got && !memchr(e->uri, '?', got))
		n += e->uri_len - got;
	memcpy(h.path, path, n < MAX_PATH_LEN ? n : MAX_PATH_LEN);
	h.path_len = n > UINT32_MAX ? UINT32_MAX : (uint32_t)n;
	h.remote_addr_len = fasthttp__endpoint(&e->peer, h.remote_addr, sizeof(h.remote_addr));
	http_server__start(r, &h);
}

/* Its end: fasthttp's own answer, whose status is what goes out (0: it sends 200). */
static void on_end(struct records *r, const void *record)
{
	struct http_server_end h = *(const struct http_server_end *)record;

	h.hdr.type = EVENT_HTTP_SERVER_END;
	http_server__end(r, &h, true);
}

const struct record_handler fasthttp_records[] = {
	{ EVENT_FASTHTTP_SERVER_START, sizeof(struct fasthttp_server_start), on_start },
	{ EVENT_FASTHTTP_SERVER_END, sizeof(struct http_server_end), on_end },
	{ 0 },
};
