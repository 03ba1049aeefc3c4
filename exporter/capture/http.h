/* SPDX-License-Identifier: MIT */
/*
 * The net/http family's calls as other capture modules reach them: a router framework's route
 * template (routes.c) names the SERVER call it was matched for, in place of net/http's mux.
 */
#ifndef GOSPAN_HTTP_H
#define GOSPAN_HTTP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct http_server_end;
struct http_server_start;
struct pending;
struct records;

/*
 * A SERVER call of another HTTP server than net/http's (fasthttp.c), told in net/http's records:
 * E as serverHandler.ServeHTTP's entry would have sent it opens the call, with the same
 * attributes, name and route; E as its return would have sent it ends it. OWN_WRITER: E's status
 * is what went out, with no ResponseWriter of net/http's to check it by.
 */
void http_server__start(struct records *r, const struct http_server_start *e);
void http_server__end(struct records *r, const struct http_server_end *e, bool own_writer);

/* The longest route http_server__set_route takes, in bytes as the target had them. */
#define HTTP_ROUTE_MAX 512

/* The net/http server call in flight on (PID, GOID) that began at START_NS; NULL: none is. */
struct pending *http_server__find(struct records *r, uint32_t pid, uint64_t goid,
				  uint64_t start_ns);
/*
 * Makes ROUTE (LEN bytes as the target had them, made valid UTF-8 here) server call P's
 * http.route and names its span "METHOD ROUTE", whatever pattern net/http's mux matched; a
 * later call replaces it. -EINVAL for an empty route; -E2BIG, and nothing set, for one longer
 * than HTTP_ROUTE_MAX (the caller's bound cut it, and a cut one names a route that does not
 * exist).
 */
int http_server__set_route(struct pending *p, const char *route, size_t len);

/*
 * Server call P's router framework matched no route (it answered a 404 or 405 itself): the span
 * is named by its method alone, whatever pattern net/http's mux matched on the way to it. A route
 * set before stays.
 */
void http_server__no_route(struct pending *p);

#endif
