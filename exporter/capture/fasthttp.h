/* SPDX-License-Identifier: MIT */
/*
 * fasthttp's SERVER records (bpf/fasthttp.bpf.c) made into net/http's, whose family (http.c)
 * makes the spans: a fasthttp request has the same attributes, name, route and status as a
 * net/http one. What the records carry raw is made here: the URL path out of the request URI as
 * received, the peer address out of its IP and port. (Its client sends net/http's records.)
 */
#ifndef GOSPAN_CAPTURE_FASTHTTP_H
#define GOSPAN_CAPTURE_FASTHTTP_H

#include <stddef.h>
#include <stdint.h>

struct net_endpoint;

/*
 * The path of the request URI URI (LEN bytes: "/a%20b?q=1", or the absolute form
 * "http://host/a?q"), percent-decoded as net/url's URL.Path is, into OUT (SIZE bytes, NUL
 * ended): the decoded path's length, more than SIZE - 1 when OUT holds only its start. A path
 * with a malformed escape is given as received.
 */
size_t fasthttp__uri_path(const char *uri, size_t len, char *out, size_t size);

/* EP as "ip:port" ("[v6]:port") into OUT (SIZE bytes): its length, 0 when EP holds none. */
size_t fasthttp__endpoint(const struct net_endpoint *ep, char *out, size_t size);

#endif
