// SPDX-License-Identifier: MIT
/*
 * Router frameworks in a target (routers.h). gin, echo and chi take a request context from a
 * sync.Pool at the top of their ServeHTTP and put it back at the bottom, with the matched route
 * still in it: the CALL of (*sync.Pool).Put is a direct call the kernel emulates, with the
 * context as the data word of its interface argument (the third integer argument slot). One probe
 * there a request costs about a microsecond and no single-step.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/analysis.h"
#include "analysis/gobin.h"
#include "analysis/offsets.h"
#include "analysis/routers.h"
#include "core/log.h"

#define POOL_PUT "sync.(*Pool).Put"
/* (*sync.Pool).Put(x any): the receiver, then x's type word and data word. */
#define POOL_PUT_X_DATA 3

#define GIN_MODULE "github.com/gin-gonic/gin"
#define ECHO_MODULE "github.com/labstack/echo/v4"
#define ECHO5_MODULE "github.com/labstack/echo/v5"
#define CHI_MODULE "github.com/go-chi/chi/v5"

/* The most offsets one framework's table has. */
#define ROUTER_FIELDS_MAX 8
_Static_assert(GIN_FIELD__COUNT <= ROUTER_FIELDS_MAX && ECHO_FIELD__COUNT <= ROUTER_FIELDS_MAX &&
		       ECHO5_FIELD__COUNT <= ROUTER_FIELDS_MAX &&
		       CHI_FIELD__COUNT <= ROUTER_FIELDS_MAX &&
		       MUX_FIELD__COUNT <= ROUTER_FIELDS_MAX &&
		       FIBER_FIELD__COUNT <= ROUTER_FIELDS_MAX,
	       "a router's offsets fit ROUTER_FIELDS_MAX");

#define MUX_MODULE "github.com/gorilla/mux"
#define FIBER2_MODULE "github.com/gofiber/fiber/v2"
#define FIBER3_MODULE "github.com/gofiber/fiber/v3"
#define HTTPROUTER_MODULE "github.com/julienschmidt/httprouter"

struct router_spec;
/* Fills RS from the framework's offsets OFFS; false when one it needs is missing. */
typedef bool (*recipe_fn)(const int64_t *offs, struct route_site *rs);
/* Finds RT's site in the binary of A (and completes RT->recipe with what the code says). */
typedef int (*site_fn)(struct analysis *a, const struct router_spec *spec, struct router *rt);

struct router_spec {
	enum router_kind kind;
	const char *name;
	const char *module;
	const char *serve; /* its ServeHTTP, where the site is */
	recipe_fn recipe;
	site_fn site;
	/* Its table (struct module_tables' member) and field count. */
	const struct offsets *(*table)(const struct module_tables *m);
	size_t nfields;
};

static void recipe_init(struct route_site *rs, enum route_kind kind)
{
	memset(rs, 0, sizeof(*rs));
	rs->kind = kind;
	rs->base_slot = POOL_PUT_X_DATA;
	rs->need_off = rs->check_off = -1;
}

/* gin.Context.fullPath: "" until the router matched a route. */
static bool gin_recipe(const int64_t *offs, struct route_site *rs)
{
	recipe_init(rs, ROUTE_STRING);
	rs->str_off = offs[GIN_FIELD_CONTEXT_FULLPATH];
	return rs->str_off >= 0;
}

/*
 * echo's context.path: the matched route's path, but also the nearest node's on a 404 or 405,
 * which context.handler (the router's own handler then) tells apart.
 */
static bool echo_recipe(const int64_t *offs, struct route_site *rs)
{
	recipe_init(rs, ROUTE_STRING);
	rs->str_off = offs[ECHO_FIELD_CONTEXT_PATH];
	rs->check_off = offs[ECHO_FIELD_CONTEXT_HANDLER];
	return rs->str_off >= 0 && rs->check_off >= 0;
}

/*
 * chi's Context.RoutePatterns, one pattern per router the request passed (a mounted sub-router
 * adds its own), joined as chi's RoutePattern() does. routePattern is what the last router's
 * lookup found: "" when it found nothing, though the routers above it matched the mount.
 */
static bool chi_recipe(const int64_t *offs, struct route_site *rs)
{
	recipe_init(rs, ROUTE_STRINGS);
	rs->str_off = offs[CHI_FIELD_CONTEXT_ROUTE_PATTERNS];
	if (offs[CHI_FIELD_CONTEXT_ROUTE_PATTERN] >= 0)
		rs->need_off = offs[CHI_FIELD_CONTEXT_ROUTE_PATTERN] + 8; /* its length */
	return rs->str_off >= 0 && rs->need_off >= 0;
}

/*
 * gorilla/mux: the *Route that matched, as ServeHTTP stores it in the request's context (only
 * when one did: no route on a 404 or 405); its path regexp (in routeConf by value from v1.7.0,
 * behind a pointer before), and that regexp's template, which holds a sub-router's prefix too.
 * Where the *Route is in the registers is the site's to say (mux_site).
 */
static bool mux_recipe(const int64_t *offs, struct route_site *rs)
{
	recipe_init(rs, ROUTE_STRING);
	if (offs[MUX_FIELD_GROUP_PATH] < 0)
		return false;
	if (offs[MUX_FIELD_ROUTE_REGEXP_PTR] >= 0) {
		rs->hops[rs->nhops++] = offs[MUX_FIELD_ROUTE_REGEXP_PTR];
		rs->hops[rs->nhops++] = offs[MUX_FIELD_GROUP_PATH];
	} else if (offs[MUX_FIELD_ROUTE_ROUTECONF] >= 0 && offs[MUX_FIELD_ROUTECONF_REGEXP] >= 0) {
		rs->hops[rs->nhops++] = offs[MUX_FIELD_ROUTE_ROUTECONF] +
					offs[MUX_FIELD_ROUTECONF_REGEXP] +
					offs[MUX_FIELD_GROUP_PATH];
	} else {
		return false;
	}
	rs->str_off = offs[MUX_FIELD_REGEXP_TEMPLATE];
	return rs->str_off >= 0;
}

/* echo v5's Context.path, and its handler where the release has one (echo_recipe). */
static bool echo5_recipe(const int64_t *offs, struct route_site *rs)
{
	recipe_init(rs, ROUTE_STRING);
	rs->str_off = offs[ECHO5_FIELD_CONTEXT_PATH];
	rs->check_off = offs[ECHO5_FIELD_CONTEXT_HANDLER];
	return rs->str_off >= 0;
}

/*
 * The direct CALLs of the function CALLEE in the function IN, into RT's site: -ENOENT, quietly,
 * when either or none is (the caller looks elsewhere).
 */
static int calls_of(struct analysis *a, const char *in, const char *callee, struct router *rt)
{
	struct elf_symbol sym, fn;
	char why[128];
	int err;

	if (analysis__find_func(a, callee, &sym) || analysis__find_func(a, in, &fn))
		return -ENOENT;
	rt->site.symbol = in;
	err = site_planner__probe_sites(a->sp, fn.addr, fn.size, SITE_CALLS_TO, sym.addr,
					&rt->site, why, sizeof(why));
	return err ?: (rt->site.nends ? 0 : -ENOENT);
}

/* The CALL of (*sync.Pool).Put in ServeHTTP: the context it puts back is its argument. */
static int pool_put_site(struct analysis *a, const struct router_spec *spec, struct router *rt)
{
	return calls_of(a, spec->serve, POOL_PUT, rt);
}

/*
 * gorilla/mux: where ServeHTTP puts the matched *Route into the request's context. From v1.7.4
 * the call of requestWithRoute(req, route), the route in the second argument slot; before, the
 * second of its two calls of contextSet(req, key, val any), the first being the route's
 * variables': the route is val's data word, the fifth slot.
 */
static int mux_site(struct analysis *a, const struct router_spec *spec, struct router *rt)
{
	struct elf_symbol sym;
	char name[128];
	int err;

	snprintf(name, sizeof(name), "%s.requestWithRoute", spec->module);
	if (!analysis__find_func(a, name, &sym)) {
		rt->recipe.base_slot = 2;
	} else {
		snprintf(name, sizeof(name), "%s.contextSet", spec->module);
		if (analysis__find_func(a, name, &sym))
			return -ENOENT;
		rt->recipe.base_slot = 5;
	}
	err = analysis__find_site(a, spec->serve, &rt->site, SITE_CALLS_TO, sym.addr);
	if (err)
		return err;
	if (rt->recipe.base_slot == 5) {
		if (rt->site.nends != 2)
			return -ENOENT;
		rt->site.ends[0] = rt->site.ends[1];
		rt->site.nends = 1;
	}
	return rt->site.nends == 1 ? 0 : -ENOENT;
}

/*
 * echo v5 puts its context back in a deferred call, which ServeHTTP makes through a func value;
 * the closure the compiler made of it calls (*sync.Pool).Put directly. It runs on a panic too.
 */
static int echo5_site(struct analysis *a, const struct router_spec *spec, struct router *rt)
{
	char name[128];
	int err;

	snprintf(name, sizeof(name), "%s.(*Echo).serveHTTP.deferwrap1", spec->module);
	err = calls_of(a, name, POOL_PUT, rt);
	rt->site.symbol = spec->serve; /* NAME does not outlive this call */
	return err;
}

/*
 * Fiber's context: the route it matched last (middleware are routes too), read only when a route
 * that is not middleware matched (matched, a bool), so that a 404 or 405 has none; the route's
 * Path holds its group's prefix. Where the context is, the site says (fiber2_site, fiber3_site).
 */
static bool fiber_recipe(const int64_t *offs, struct route_site *rs)
{
	recipe_init(rs, ROUTE_STRING);
	rs->need_off = offs[FIBER_FIELD_CTX_MATCHED] >= 0 ? offs[FIBER_FIELD_CTX_MATCHED] :
							   offs[FIBER_FIELD_CTX_IS_MATCHED];
	rs->need_byte = 1;
	rs->hops[rs->nhops++] = offs[FIBER_FIELD_CTX_ROUTE];
	rs->str_off = offs[FIBER_FIELD_ROUTE_PATH];
	return rs->need_off >= 0 && rs->hops[0] >= 0 && rs->str_off >= 0;
}

/*
 * Fiber v2 returns its Ctx to the pool with (*App).ReleaseCtx(c), c in the second slot, which
 * clears the route: its CALLs in (*App).handler (v2.40), or in the closure of its deferred call
 * (later releases, Go 1.21). Where Go 1.22+ inlines ReleaseCtx into that closure (deferwrap1),
 * nothing is called with the route still set: the closure's entry is the site instead (the
 * emulated instruction after its stack check), c the second word its closure context holds,
 * after app (defer app.ReleaseCtx(c)).
 */
static int fiber2_site(struct analysis *a, const struct router_spec *spec, struct router *rt)
{
	static const char release[] = FIBER2_MODULE ".(*App).ReleaseCtx";
	static const char func1[] = FIBER2_MODULE ".(*App).handler.func1";
	static const char wrap[] = FIBER2_MODULE ".(*App).handler.deferwrap1";
	struct route_site *rs = &rt->recipe;
	int err;

	rs->base_slot = 2;
	err = calls_of(a, spec->serve, release, rt);
	if (err == -ENOENT) {
		probe_site__release(&rt->site);
		err = calls_of(a, func1, release, rt);
	}
	if (err != -ENOENT)
		return err;
	probe_site__release(&rt->site);
	err = analysis__find_site(a, wrap, &rt->site, SITE_ENTRY, 0);
	if (err)
		return err;
	rt->site.ends = calloc(1, sizeof(*rt->site.ends));
	if (!rt->site.ends)
		return -ENOMEM;
	rt->site.ends[0].off = rt->site.entry_off;
	rt->site.ends[0].caller = rt->site.addr;
	rt->site.ends[0].emulated = rt->site.entry_emulated;
	rt->site.ends[0].result = -1;
	rt->site.nends = 1;
	rs->base_slot = ROUTE_BASE_CLOSURE;
	memmove(rs->hops + 1, rs->hops, sizeof(rs->hops[0]));
	rs->hops[0] = 16;
	rs->nhops++;
	rs->need_hop = 1;
	return 0;
}

/*
 * Fiber v3 releases its context in the closure of (*App).requestHandler's deferred
 * app.ReleaseCtx(ctx), ctx a CustomCtx interface: a direct CALL with the *DefaultCtx as the
 * interface's data word, the third slot. An application's own context type (NewWithCustomCtx)
 * embeds DefaultCtx first, so its fields are where DefaultCtx has them.
 */
static int fiber3_site(struct analysis *a, const struct router_spec *spec, struct router *rt)
{
	int err;

	(void)spec;
	rt->recipe.base_slot = 3;
	err = calls_of(a, FIBER3_MODULE ".(*App).requestHandler.deferwrap1",
		       FIBER3_MODULE ".(*App).ReleaseCtx", rt);
	if (err != -ENOENT)
		return err;
	/*
	 * From v3.3.0 an App without a custom context serves with defaultRequestHandler, whose
	 * deferred call is releaseDefaultCtx(c *DefaultCtx): c in the second slot. Applications
	 * made with NewWithCustomCtx serve with customRequestHandler instead: no route for them.
	 */
	probe_site__release(&rt->site);
	rt->recipe.base_slot = 2;
	return calls_of(a, FIBER3_MODULE ".(*App).defaultRequestHandler.deferwrap1",
			FIBER3_MODULE ".(*App).releaseDefaultCtx", rt);
}

static const struct offsets *fiber2_table(const struct module_tables *m)
{
	return m ? m->fiber2 : NULL;
}

static const struct offsets *fiber3_table(const struct module_tables *m)
{
	return m ? m->fiber3 : NULL;
}

/*
 * httprouter (v1.3) keeps no template: its tree gives the handle and the parameters, whose values
 * are cut out of the request's path. Right after (*Router).ServeHTTP's call of (*node).getValue,
 * the registers still hold what it returned: the handle (0: no route), the parameters' array and
 * their count; user space puts the names back into the path (capture/routes.c). Params are
 * {Key, Value string}: no offsets needed.
 */
static bool httprouter_recipe(const int64_t *offs, struct route_site *rs)
{
	(void)offs;
	recipe_init(rs, ROUTE_PARAMS);
	rs->base_slot = 1;
	return true;
}

static int httprouter_site(struct analysis *a, const struct router_spec *spec, struct router *rt)
{
	struct elf_symbol serve, get;
	char name[128];

	snprintf(name, sizeof(name), "%s.(*node).getValue", spec->module);
	if (analysis__find_func(a, spec->serve, &serve) || analysis__find_func(a, name, &get))
		return -ENOENT;
	rt->site.symbol = spec->serve;
	return site_planner__after_call(a->sp, serve.addr, serve.size, get.addr,
					(1u << X86_AX) | (1u << X86_BX) | (1u << X86_CX),
					&rt->site);
}

static const struct offsets *gin_table(const struct module_tables *m)
{
	return m ? m->gin : NULL;
}

static const struct offsets *echo_table(const struct module_tables *m)
{
	return m ? m->echo : NULL;
}

static const struct offsets *chi_table(const struct module_tables *m)
{
	return m ? m->chi : NULL;
}

static const struct offsets *echo5_table(const struct module_tables *m)
{
	return m ? m->echo5 : NULL;
}

static const struct offsets *mux_table(const struct module_tables *m)
{
	return m ? m->mux : NULL;
}

static const struct router_spec specs[] = {
	{ ROUTER_GIN, "gin", GIN_MODULE, GIN_MODULE ".(*Engine).ServeHTTP", gin_recipe,
	  pool_put_site, gin_table, GIN_FIELD__COUNT },
	{ ROUTER_ECHO, "echo", ECHO_MODULE, ECHO_MODULE ".(*Echo).ServeHTTP", echo_recipe,
	  pool_put_site, echo_table, ECHO_FIELD__COUNT },
	{ ROUTER_ECHO, "echo", ECHO5_MODULE, ECHO5_MODULE ".(*Echo).ServeHTTP", echo5_recipe,
	  echo5_site, echo5_table, ECHO5_FIELD__COUNT },
	{ ROUTER_CHI, "chi", CHI_MODULE, CHI_MODULE ".(*Mux).ServeHTTP", chi_recipe, pool_put_site,
	  chi_table, CHI_FIELD__COUNT },
	{ ROUTER_MUX, "gorilla/mux", MUX_MODULE, MUX_MODULE ".(*Router).ServeHTTP", mux_recipe,
	  mux_site, mux_table, MUX_FIELD__COUNT },
	{ ROUTER_FIBER, "fiber", FIBER2_MODULE, FIBER2_MODULE ".(*App).handler", fiber_recipe,
	  fiber2_site, fiber2_table, FIBER_FIELD__COUNT },
	{ ROUTER_FIBER, "fiber", FIBER3_MODULE, FIBER3_MODULE ".(*App).requestHandler",
	  fiber_recipe, fiber3_site, fiber3_table, FIBER_FIELD__COUNT },
	{ ROUTER_HTTPROUTER, "httprouter", HTTPROUTER_MODULE, HTTPROUTER_MODULE ".(*Router).ServeHTTP",
	  httprouter_recipe, httprouter_site, NULL, 0 },
};

static bool starts_with(const char *s, const char *prefix)
{
	return !strncmp(s, prefix, strlen(prefix));
}

static int cmp_addr(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/*
 * echo's own handlers: the func literals its package-level variables hold (NotFoundHandler,
 * MethodNotAllowedHandler; Go names them init.funcN, glob..funcN before 1.21), which the router
 * answers a request with when no route matched (or only a group's catch-all, which a group with
 * middleware registers so that its middleware runs on its 404s), and the OPTIONS handler the
 * router makes for a path without that method. A route's handler is the application's, or one
 * echo made for a route the application registered (Static, File), which are named after the
 * function that made them.
 */
static int index_own_handlers(struct analysis *a, struct router *rt)
{
	const struct sym_entry *syms;
	char init[96], glob[96], options[96];
	size_t n, i, k = 0;

	snprintf(init, sizeof(init), "%s.init.func", rt->module);
	snprintf(glob, sizeof(glob), "%s.glob..func", rt->module);
	snprintf(options, sizeof(options), "%s.optionsMethodHandler.func", rt->module);
	n = analysis__functions(a, &syms);
	rt->own = calloc(n ? n : 1, sizeof(*rt->own));
	if (!rt->own)
		return -ENOMEM;
	for (i = 0; i < n; i++) {
		if (!syms[i].is_func || !syms[i].name)
			continue;
		if (starts_with(syms[i].name, init) || starts_with(syms[i].name, glob) ||
		    starts_with(syms[i].name, options))
			rt->own[k++] = syms[i].addr;
	}
	rt->nown = k;
	qsort(rt->own, k, sizeof(*rt->own), cmp_addr);
	return 0;
}

static bool own_handler(const struct router *rt, uint64_t fn)
{
	return fn && rt->nown && bsearch(&fn, rt->own, rt->nown, sizeof(*rt->own), cmp_addr);
}

bool routers__router_answered(const struct router *rt, uint64_t fn, uint64_t inner)
{
	return own_handler(rt, fn) || own_handler(rt, inner);
}

static void release_one(struct router *rt)
{
	probe_site__release(&rt->site);
	free(rt->own);
	memset(rt, 0, sizeof(*rt));
}

/* The framework SPEC in the binary of A, into RT: 0 and RT->site.addr 0 when it is left out. */
static int find_router(struct analysis *a, const struct module_tables *modules,
		       const struct router_spec *spec, struct router *rt)
{
	int64_t offs[ROUTER_FIELDS_MAX];
	const char *version = gobin__module_version(a->gobin, spec->module);
	int err;

	if (!version)
		return 0;
	rt->kind = spec->kind;
	rt->name = spec->name;
	rt->module = spec->module;
	snprintf(rt->version, sizeof(rt->version), "%s", version);
	/* A framework whose structs are Go's own needs no table (httprouter's Params). */
	if (!spec->table) {
		snprintf(rt->offsets, sizeof(rt->offsets), "httprouter.Param");
		err = 0;
	} else {
		err = module_offsets__for_binary(spec->table(modules), spec->module, a->path,
						 a->gobin, offs, rt->offsets, sizeof(rt->offsets));
	}
	if (err == -ENOMEM)
		return err;
	if (err || !spec->recipe(offs, &rt->recipe)) {
		pr_warn("'%s' uses %s %s, whose request context gospan cannot read (no DWARF and no "
			"offset table row): its spans will have no route",
			a->path, spec->name, version);
		return 0;
	}
	err = spec->site(a, spec, rt);
	if (err == -ENOMEM)
		return err;
	if (err) {
		pr_warn("'%s' uses %s %s, but where its ServeHTTP has the matched route was not "
			"found (%s): its spans will have no route",
			a->path, spec->name, version, strerror(-err));
		probe_site__release(&rt->site);
		rt->site.addr = 0;
		return 0;
	}
	rt->steps = rt->site.ends[0].emulated ? 0 : 1;
	if (spec->kind == ROUTER_ECHO)
		return index_own_handlers(a, rt);
	return 0;
}

int routers__find(struct analysis *a, const struct module_tables *modules, struct router_target *r)
{
	size_t i;
	int err;

	memset(r, 0, sizeof(*r));
	for (i = 0; i < sizeof(specs) / sizeof(specs[0]); i++) {
		if (!gobin__module_version(a->gobin, specs[i].module))
			continue;
		err = find_router(a, modules, &specs[i], &r->v[r->n]);
		if (err)
			return err;
		if (r->v[r->n].site.addr)
			r->n++;
		else
			release_one(&r->v[r->n]);
	}
	return 0;
}

void routers__release(struct router_target *r)
{
	size_t i;

	for (i = 0; i < r->n; i++)
		release_one(&r->v[i]);
	r->n = 0;
}
