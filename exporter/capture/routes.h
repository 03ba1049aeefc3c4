/* SPDX-License-Identifier: MIT */
/*
 * Route templates of router frameworks (bpf/routes.bpf.c's records) made into the http.route of
 * the SERVER span they belong to.
 */
#ifndef GOSPAN_ROUTES_H
#define GOSPAN_ROUTES_H

#include <stddef.h>
#include <stdint.h>

#include "events.h"

struct router;

/*
 * The template E carries for the router RT, in the framework's own syntax, into OUT (SIZE
 * bytes): its length, or -1 when E says no route matched (an echo request its router answered
 * itself; BIAS is the process's load bias, to take off the handler's address) or the template
 * was cut (a route that does not exist is worse than none).
 */
int routes__template(const struct router *rt, const struct http_route *e, uint64_t bias, char *out,
		     size_t size);

#endif
