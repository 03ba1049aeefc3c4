/* SPDX-License-Identifier: MIT */
/*
 * Target analysis for HTTP router frameworks: gin, echo (v4, v5), chi (v5), gorilla/mux and
 * julienschmidt/httprouter. Such a
 * router serves inside net/http's ServeHTTP, so its requests are already SERVER spans; what it
 * knows beyond net/http is the route template it matched ("/users/:id"), kept in its own request
 * context. For each framework the binary links: where one probe a request can read that template
 * (an instruction the kernel emulates), and how (struct route_site, bpf/routes.bpf.c).
 */
#ifndef GOSPAN_ROUTERS_H
#define GOSPAN_ROUTERS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "events.h"
#include "analysis/planner.h"

struct analysis;
struct module_tables;

enum router_kind {
	ROUTER_GIN,
	ROUTER_ECHO,
	ROUTER_CHI,
	ROUTER_MUX,
	ROUTER_FIBER, /* on fasthttp: its routes go to fasthttp's SERVER spans */
	ROUTER_HTTPROUTER,
	ROUTER__COUNT,
};

/* One framework in a binary, whose templates are read. */
struct router {
	enum router_kind kind;
	const char *name;   /* "gin": for messages */
	const char *module; /* as buildinfo names it */
	char version[32];   /* the module's version in buildinfo */
	char offsets[48];   /* where its offsets came from: "DWARF", "table v1.9.1" */
	struct probe_site site; /* its ends are where bpf/routes.bpf.c's program runs */
	struct route_site recipe;
	/*
	 * echo: link-time code addresses of the router's own handlers (not found, method not
	 * allowed, OPTIONS), sorted: a request they served matched no route.
	 */
	uint64_t *own;
	size_t nown;
	int steps; /* single-stepped hits a request */
};

/* The frameworks of one binary; SITE_BASE is the route_sites index of V[0], set at attach. */
struct router_target {
	struct router v[ROUTER__COUNT];
	size_t n;
	uint32_t site_base;
};

/*
 * Finds the frameworks the binary of A links (from its buildinfo), their sites and their
 * offsets (DWARF, else MODULES' tables) into R. A framework whose site or offsets cannot be had
 * is left out, and said once at warning level: its requests get spans as before, without a
 * route. -ENOMEM is the only failure.
 */
int routers__find(struct analysis *a, const struct module_tables *modules, struct router_target *r);

/*
 * Whether RT answered a request itself (no route matched) by the handler it chose: the
 * link-time code addresses of that func value (FN) and of the first func value its closure holds
 * (INNER: echo wraps each route's handler, and a group's middleware its catch-all routes'), either
 * one of RT's own handlers (see struct router).
 */
bool routers__router_answered(const struct router *rt, uint64_t fn, uint64_t inner);

void routers__release(struct router_target *r);

#endif
