// SPDX-License-Identifier: MIT
/*
 * capture/routes.c: route records made into templates. chi's parts joined as chi's own
 * RoutePattern() joins them (each case a request the chi service of tests/e2e/routers answers,
 * with the patterns chi's Context held for it); echo's requests its router answered itself (the
 * handler, or the handler its closure holds, one of echo's own) have none; httprouter's names put
 * back where their values were in the path; a cut template none.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "analysis/routers.h"
#include "capture/routes.h"

static struct http_route record(const char *const *parts, uint32_t n)
{
	struct http_route e;
	uint32_t i;

	memset(&e, 0, sizeof(e));
	e.hdr.type = EVENT_HTTP_ROUTE;
	e.nparts = n;
	for (i = 0; i < n && i < MAX_ROUTE_PARTS; i++) {
		e.len[i] = (uint32_t)strlen(parts[i]);
		memcpy(e.part[i], parts[i], e.len[i] < MAX_ROUTE_PART_LEN ? e.len[i] :
									   MAX_ROUTE_PART_LEN);
	}
	return e;
}

static void expect_chi(const char *want, const char *const *parts, uint32_t n)
{
	const struct router chi = { .kind = ROUTER_CHI, .name = "chi" };
	struct http_route e = record(parts, n);
	char out[MAX_ROUTE_PARTS * MAX_ROUTE_PART_LEN + 1];
	int len = routes__template(&chi, &e, 0, out, sizeof(out));

	if (!want) {
		assert_int_equal(len, -1);
		return;
	}
	assert_int_equal(len, (int)strlen(want));
	assert_string_equal(out, want);
}

static void test_routes__chi_joins_as_route_pattern(void **state)
{
	(void)state;
	expect_chi("/users/{id}", (const char *[]){ "/users/{id}" }, 1);
	/* A mounted sub-router: the mount's wildcard goes. */
	expect_chi("/orders/{oid}/items/{iid}",
		   (const char *[]){ "/orders/{oid}/*", "/items/{iid}" }, 2);
	expect_chi("/a/b/c", (const char *[]){ "/a/*", "/b/*", "/c" }, 3);
	/* A sub-router's own root: chi trims the slash it leaves. */
	expect_chi("/api", (const char *[]){ "/api/*", "/" }, 2);
	expect_chi("/", (const char *[]){ "/" }, 1);
	/* A catch-all route of the application's own stays. */
	expect_chi("/static/*", (const char *[]){ "/static/*" }, 1);
}

static void test_routes__cut_or_missing_parts_give_no_route(void **state)
{
	char long_part[MAX_ROUTE_PART_LEN + 10];
	const struct router gin = { .kind = ROUTER_GIN, .name = "gin" };
	struct http_route e;
	char out[64];

	(void)state;
	/* More routers than the record holds: what chi would say is not known. */
	expect_chi(NULL, (const char *[]){ "/a/*", "/b/*", "/c/*", "/d/*", "/e" },
		   MAX_ROUTE_PARTS + 1);
	memset(long_part, 'x', sizeof(long_part) - 1);
	long_part[0] = '/';
	long_part[sizeof(long_part) - 1] = '\0';
	expect_chi(NULL, (const char *[]){ long_part }, 1);
	e = record((const char *[]){ long_part }, 1);
	assert_int_equal(routes__template(&gin, &e, 0, out, sizeof(out)), -1);
	e = record(NULL, 0);
	assert_int_equal(routes__template(&gin, &e, 0, out, sizeof(out)), -1);
	/* OUT too small for the template: none rather than a cut one. */
	e = record((const char *[]){ "/orders/:oid/items/:iid" }, 1);
	assert_int_equal(routes__template(&gin, &e, 0, out, 8), -1);
	assert_int_equal(routes__template(&gin, &e, 0, out, sizeof(out)), 23);
	assert_string_equal(out, "/orders/:oid/items/:iid");
}

static void test_routes__echo_router_answered_has_no_route(void **state)
{
	uint64_t own[] = { 0x401000, 0x401100 }; /* echo's NotFoundHandler, MethodNotAllowed */
	const struct router echo = { .kind = ROUTER_ECHO, .name = "echo", .own = own, .nown = 2 };
	struct http_route e = record((const char *[]){ "/orders/:oid/*" }, 1);
	const uint64_t bias = 0x7f0000000000ULL;
	char out[64];

	(void)state;
	/* An application handler, wrapped by echo (its closure holds the application's). */
	e.check = 0x500000 + bias;
	e.check_inner = 0x500100 + bias;
	assert_int_equal(routes__template(&echo, &e, bias, out, sizeof(out)), 14);
	assert_string_equal(out, "/orders/:oid/*");
	/* The router's own 405 handler itself (PIE: the runtime address less the bias). */
	e.check = 0x401100 + bias;
	e.check_inner = 0;
	assert_int_equal(routes__template(&echo, &e, bias, out, sizeof(out)), -1);
	/* A group's catch-all: a middleware's closure holding NotFoundHandler. */
	e.check = 0x500000 + bias;
	e.check_inner = 0x401000 + bias;
	assert_int_equal(routes__template(&echo, &e, bias, out, sizeof(out)), -1);
	/* Without the bias taken off, nothing matches: the addresses are link-time ones. */
	assert_int_equal(routes__template(&echo, &e, 0, out, sizeof(out)), 14);
}

/* A record of httprouter's match of PATH: its parameters NAMES, each value VALUES[i] found in it. */
static struct http_route params_record(const char *path, const char *const *names,
				       const char *const *values, uint32_t n)
{
	const char *parts[MAX_ROUTE_PARTS] = { path };
	struct http_route e;
	const char *at = path;
	uint32_t i;

	for (i = 0; i < n; i++)
		parts[i + 1] = names[i];
	e = record(parts, n + 1);
	for (i = 0; i < n; i++) {
		at = strstr(at, values[i]);
		assert_non_null(at);
		e.value_off[i] = (uint32_t)(at - path);
		e.value_len[i] = (uint32_t)strlen(values[i]);
		at += strlen(values[i]);
	}
	return e;
}

static void expect_params(const char *want, const struct http_route *e)
{
	const struct router hr = { .kind = ROUTER_HTTPROUTER, .name = "httprouter" };
	char out[MAX_ROUTE_PARTS * MAX_ROUTE_PART_LEN + 1];
	int len = routes__template(&hr, e, 0, out, sizeof(out));

	if (!want) {
		assert_int_equal(len, -1);
		return;
	}
	assert_int_equal(len, (int)strlen(want));
	assert_string_equal(out, want);
}

static void test_routes__httprouter_names_put_back(void **state)
{
	struct http_route e;

	(void)state;
	e = params_record("/users/42", (const char *[]){ "id" }, (const char *[]){ "42" }, 1);
	expect_params("/users/:id", &e);
	e = params_record("/orders/7/items/7", (const char *[]){ "oid", "iid" },
			  (const char *[]){ "7", "7" }, 2);
	expect_params("/orders/:oid/items/:iid", &e);
	/* A catch-all's value takes the slash before it. */
	e = params_record("/src/a/b.txt", (const char *[]){ "filepath" },
			  (const char *[]){ "/a/b.txt" }, 1);
	expect_params("/src/*filepath", &e);
	/* A static route: the path itself. */
	e = params_record("/health", NULL, NULL, 0);
	expect_params("/health", &e);
	/* A value not in the path, or the path cut: none. */
	e = params_record("/users/42", (const char *[]){ "id" }, (const char *[]){ "42" }, 1);
	e.value_off[0] = ~0U;
	expect_params(NULL, &e);
	e = params_record("/users/42", (const char *[]){ "id" }, (const char *[]){ "42" }, 1);
	e.value_off[0] = 8;
	expect_params(NULL, &e);
	e = params_record("/users/42", (const char *[]){ "id" }, (const char *[]){ "42" }, 1);
	e.len[0] = MAX_ROUTE_PART_LEN + 1;
	expect_params(NULL, &e);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_routes__chi_joins_as_route_pattern),
		cmocka_unit_test(test_routes__cut_or_missing_parts_give_no_route),
		cmocka_unit_test(test_routes__echo_router_answered_has_no_route),
		cmocka_unit_test(test_routes__httprouter_names_put_back),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
