// SPDX-License-Identifier: MIT
/*
 * Unit tests for metrics.c, the RED metrics store. Spans are made the way capture/http.c,
 * grpc.c and dbspan.c make them (span__new, the semconv.h names, every attribute a real span of
 * the family carries), measured, and collected into batches whose points are checked against
 * what the known durations must give: the instrument, the attributes kept (and those never
 * kept), counts, sums, buckets on and beside their boundaries, start and end times under each
 * temporality across several collections, the cardinality limit, exemplars under each filter,
 * a process that is gone, and the quantiles the console reads from the buckets.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "core/log.h"
#include "helpers.h"
#include "metrics_descs.h"
#include "model/metrics.h"
#include "model/semconv.h"
#include "model/span.h"


/*
 * A test's spans start from here: a second from now, UNIX time, so after the store the test then
 * makes began counting (a delta's first interval starts at the later of the two).
 */
static uint64_t base_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * SEC + (uint64_t)ts.tv_nsec + SEC;
}

static struct metrics *new_store(enum metric_temporality t, enum metric_exemplars x,
				 size_t limit)
{
	struct metrics *m = metrics__new(&(struct metrics_opts){
		.temporality = t,
		.exemplars = x,
		.cardinality_limit = limit,
	});

	assert_non_null(m);
	return m;
}

static struct resource *mk_res(const char *service, int64_t pid)
{
	struct resource *r = resource__new();

	assert_non_null(r);
	assert_int_equal(resource__set_str(r, SC_SERVICE_NAME, service), 0);
	assert_int_equal(resource__set_int(r, SC_PROCESS_PID, pid), 0);
	return r;
}

static struct span *mk_span(struct resource *r, enum span_kind kind, uint64_t start,
			    uint64_t dur)
{
	struct span *s = span__new();

	assert_non_null(s);
	span__set_resource(s, r);
	s->kind = kind;
	s->start_ns = start;
	s->end_ns = start + dur;
	return s;
}

static void set_str(struct span *s, const char *key, const char *val)
{
	assert_int_equal(span__set_str(s, key, val, strlen(val)), 0);
}

static void set_int(struct span *s, const char *key, int64_t val)
{
	assert_int_equal(span__set_int(s, key, val), 0);
}

/* An HTTP server span as capture/http.c makes it: ROUTE NULL when no route matched. */
static struct span *http_server(struct resource *r, uint64_t start, uint64_t dur,
				const char *method, const char *route, const char *path, int status)
{
	struct span *s = mk_span(r, SPAN_KIND_SERVER, start, dur);
	char code[8];

	set_str(s, SC_HTTP_REQUEST_METHOD, method);
	set_str(s, SC_URL_PATH, path);
	set_str(s, SC_URL_SCHEME, "http");
	set_str(s, SC_SERVER_ADDRESS, "shop.internal");
	set_int(s, SC_SERVER_PORT, 8080);
	set_str(s, SC_NETWORK_PEER_ADDRESS, "10.1.2.3");
	set_int(s, SC_NETWORK_PEER_PORT, 51234);
	set_str(s, SC_CLIENT_ADDRESS, "10.1.2.3");
	set_int(s, SC_HTTP_REQUEST_BODY_SIZE, 17);
	set_str(s, SC_NETWORK_PROTOCOL_VERSION, "1.1");
	set_int(s, SC_HTTP_RESPONSE_STATUS_CODE, status);
	if (status >= 500) {
		snprintf(code, sizeof(code), "%d", status);
		set_str(s, SC_ERROR_TYPE, code);
		s->status = SPAN_STATUS_ERROR;
	}
	if (route)
		set_str(s, SC_HTTP_ROUTE, route);
	return s;
}

/* An HTTP client span (capture/http.c's on_client_start and on_client_end). */
static struct span *http_client(struct resource *r, uint64_t start, uint64_t dur,
				const char *method, const char *url, const char *host, int port,
				int status)
{
	struct span *s = mk_span(r, SPAN_KIND_CLIENT, start, dur);
	char code[8];

	set_str(s, SC_HTTP_REQUEST_METHOD, method);
	set_str(s, SC_URL_FULL, url);
	set_str(s, SC_SERVER_ADDRESS, host);
	set_int(s, SC_SERVER_PORT, port);
	if (status) {
		set_str(s, SC_NETWORK_PROTOCOL_VERSION, "1.1");
		set_int(s, SC_HTTP_RESPONSE_STATUS_CODE, status);
	}
	if (!status || status >= 400) {
		snprintf(code, sizeof(code), "%d", status);
		set_str(s, SC_ERROR_TYPE, status ? code : "_OTHER");
		s->status = SPAN_STATUS_ERROR;
	}
	return s;
}

/* A gRPC span (capture/grpc.c): CODE 0 is OK, anything else names its error.type. */
static struct span *grpc_span(struct resource *r, enum span_kind kind, uint64_t start,
			      uint64_t dur, const char *service, const char *method, int code)
{
	struct span *s = mk_span(r, kind, start, dur);

	set_str(s, SC_RPC_SYSTEM, "grpc");
	set_str(s, SC_RPC_SERVICE, service);
	set_str(s, SC_RPC_METHOD, method);
	set_str(s, SC_SERVER_ADDRESS, kind == SPAN_KIND_SERVER ? "10.0.0.5" : "inventory");
	set_int(s, SC_SERVER_PORT, 50051);
	if (kind == SPAN_KIND_SERVER) {
		set_str(s, SC_NETWORK_PEER_ADDRESS, "10.0.0.9");
		set_int(s, SC_NETWORK_PEER_PORT, 40000);
		set_str(s, SC_CLIENT_ADDRESS, "10.0.0.9");
		set_int(s, SC_CLIENT_PORT, 40000);
	}
	set_str(s, SC_NETWORK_PROTOCOL_NAME, "http");
	set_str(s, SC_NETWORK_PROTOCOL_VERSION, "2");
	set_int(s, SC_RPC_GRPC_STATUS_CODE, code);
	if (code) {
		set_str(s, SC_ERROR_TYPE, code == 5 ? "NOT_FOUND" : "UNKNOWN");
		s->status = SPAN_STATUS_ERROR;
	}
	return s;
}

/* A data store span (capture/dbspan.c). ERR: the driver's error code, or NULL. */
static struct span *db_span(struct resource *r, uint64_t start, uint64_t dur, const char *op,
			    const char *table, const char *query, const char *err)
{
	struct span *s = mk_span(r, SPAN_KIND_CLIENT, start, dur);

	set_str(s, SC_DB_SYSTEM_NAME, "postgresql");
	set_str(s, SC_DB_OPERATION_NAME, op);
	set_str(s, SC_DB_COLLECTION_NAME, table);
	set_str(s, SC_DB_QUERY_SUMMARY, "SELECT users");
	set_str(s, SC_DB_QUERY_TEXT, query);
	set_str(s, SC_SERVER_ADDRESS, "db.internal");
	set_int(s, SC_SERVER_PORT, 5432);
	if (err) {
		set_str(s, SC_DB_RESPONSE_STATUS_CODE, err);
		set_str(s, SC_ERROR_TYPE, err);
		s->status = SPAN_STATUS_ERROR;
	}
	return s;
}

/* Measures S and frees it, as the ring-buffer reader does with a span it does not export. */
static void record(struct metrics *m, struct span *s, bool exported)
{
	metrics__record_span(m, s, exported);
	span__free(s);
}

/* The attributes of P as "k=v,k=v", in their order. */
static void attrs_text(const struct metric_point *p, char *out, size_t size)
{
	size_t i, len = 0;

	out[0] = '\0';
	for (i = 0; i < p->nattrs && len < size; i++) {
		const struct attr *a = &p->attrs[i];
		const char *sep = i ? "," : "";

		switch (a->type) {
		case ATTR_STRING:
			len += snprintf(out + len, size - len, "%s%s=%s", sep, a->key, a->s);
			break;
		case ATTR_INT:
			len += snprintf(out + len, size - len, "%s%s=%" PRId64, sep, a->key, a->i);
			break;
		case ATTR_BOOL:
			len += snprintf(out + len, size - len, "%s%s=%s", sep, a->key,
					a->b ? "true" : "false");
			break;
		case ATTR_DOUBLE:
			len += snprintf(out + len, size - len, "%s%s=%g", sep, a->key, a->d);
			break;
		}
	}
}

static const char *res_service(const struct resource *r)
{
	const struct attr *a = resource__get(r, SC_SERVICE_NAME);

	return a ? a->s : "?";
}

/* How many points of B are of metric NAME and resource R (NULL: any). */
static size_t count_points(const struct metrics_batch *b, const struct resource *r,
			   const char *name)
{
	size_t i, n = 0;

	for (i = 0; i < b->n; i++)
		if ((!r || b->points[i].res == r) && !strcmp(b->points[i].desc->name, name))
			n++;
	return n;
}

/*
 * The one point of B of metric NAME for resource R whose attributes are exactly ATTRS (as
 * attrs_text writes them); the test fails, listing the batch, when there is none or several.
 */
static const struct metric_point *point(const struct metrics_batch *b, const struct resource *r,
					const char *name, const char *attrs)
{
	const struct metric_point *found = NULL;
	char got[1024], list[8192] = "";
	size_t i, len = 0, n = 0;

	for (i = 0; i < b->n; i++) {
		const struct metric_point *p = &b->points[i];

		attrs_text(p, got, sizeof(got));
		if (len < sizeof(list))
			len += snprintf(list + len, sizeof(list) - len, "\n  %s %s {%s}",
					res_service(p->res), p->desc->name, got);
		if (p->res == r && !strcmp(p->desc->name, name) && !strcmp(got, attrs)) {
			found = p;
			n++;
		}
	}
	if (n != 1)
		fail_msg("want one %s point {%s} of '%s', found %zu among:%s", name, attrs,
			 res_service(r), n, list);
	return found;
}

static void assert_double_near(double got, double want)
{
	if (fabs(got - want) > 1e-9 * (fabs(want) > 1 ? fabs(want) : 1))
		fail_msg("got %.17g, want %.17g", got, want);
}

/* P's buckets must be WANT (N of them, the rest zero). */
static void assert_buckets(const struct metric_point *p, const uint64_t *want, size_t n)
{
	const struct metric_desc *d = p->desc;
	size_t i;

	for (i = 0; i <= d->nbounds; i++)
		if (p->buckets[i] != (i < n ? want[i] : 0))
			fail_msg("%s bucket %zu (le %g): %" PRIu64 ", want %" PRIu64, d->name, i,
				 i < d->nbounds ? d->bounds[i] : INFINITY, p->buckets[i],
				 i < n ? want[i] : 0);
}

#define HTTP_SERVER "http.server.request.duration"
#define HTTP_CLIENT "http.client.request.duration"
#define RPC_SERVER "rpc.server.duration"
#define RPC_CLIENT "rpc.client.duration"
#define DB_CLIENT "db.client.operation.duration"

/* ---- instruments and their attributes --------------------------------------------------- */

static void test_metrics__instruments_and_attributes(void **state)
{
	static const char *const never[] = {
		SC_URL_PATH,	      SC_URL_FULL,	    SC_CLIENT_ADDRESS, SC_CLIENT_PORT,
		SC_DB_QUERY_TEXT,     SC_DB_QUERY_SUMMARY, SC_NETWORK_PEER_ADDRESS,
		SC_NETWORK_PEER_PORT, SC_HTTP_REQUEST_BODY_SIZE, SC_NETWORK_PROTOCOL_NAME,
	};
	uint64_t t = base_ns();
	struct metrics_stats st;
	struct metrics_batch *b;
	struct metrics *m;
	struct resource *r;
	struct span *s;
	const char *key;
	size_t i, j, k;

	(void)state;
	m = new_store(METRIC_TEMPORALITY_CUMULATIVE, METRIC_EXEMPLARS_ALWAYS_OFF, 2000);
	r = mk_res("shop", 101);
	/* Two paths of one route are one set; a 500 has its error.type; no route, a set apart. */
	record(m, http_server(r, t, 10 * MS, "GET", "/items/{id}", "/items/42", 200), true);
	record(m, http_server(r, t, 10 * MS, "GET", "/items/{id}", "/items/43", 200), false);
	record(m, http_server(r, t, 10 * MS, "GET", "/items/{id}", "/items/44", 500), false);
	record(m, http_server(r, t, 10 * MS, "GET", NULL, "/favicon.ico", 404), false);
	record(m, http_client(r, t, 10 * MS, "POST", "http://pay:9000/charge?card=REDACTED",
			      "pay", 9000, 201),
	       false);
	record(m, http_client(r, t, 10 * MS, "POST", "http://pay:9000/charge", "pay", 9000, 404),
	       false);
	record(m, http_client(r, t, 10 * MS, "GET", "http://down:80/", "down", 80, 0), false);
	record(m, grpc_span(r, SPAN_KIND_SERVER, t, 10 * MS, "shop.Cart", "Add", 0), false);
	record(m, grpc_span(r, SPAN_KIND_CLIENT, t, 10 * MS, "inv.Stock", "Get", 5), false);
	record(m, db_span(r, t, 10 * MS, "SELECT", "users", "SELECT * FROM users WHERE id = ?",
			  NULL),
	       false);
	record(m, db_span(r, t, 10 * MS, "INSERT", "orders", "INSERT INTO orders VALUES (?)",
			  "23505"),
	       false);

	/* A function span, and an HTTP method on an internal span: no instrument for either. */
	s = mk_span(r, SPAN_KIND_INTERNAL, t, 10 * MS);
	set_str(s, "code.function.name", "main.work");
	record(m, s, true);
	s = mk_span(r, SPAN_KIND_INTERNAL, t, 10 * MS);
	set_str(s, SC_HTTP_REQUEST_METHOD, "GET");
	record(m, s, true);
	/* A data store span must be a client span. */
	s = db_span(r, t, 10 * MS, "SELECT", "users", "SELECT 1", NULL);
	s->kind = SPAN_KIND_SERVER;
	record(m, s, true);
	/* A span without a resource is nobody's. */
	s = span__new();
	assert_non_null(s);
	s->kind = SPAN_KIND_SERVER;
	set_str(s, SC_HTTP_REQUEST_METHOD, "GET");
	record(m, s, true);
	/* A key written in the span's arena is recognised by its text, not its address. */
	s = mk_span(r, SPAN_KIND_SERVER, t, 10 * MS);
	key = span__strndup(s, SC_HTTP_ROUTE, strlen(SC_HTTP_ROUTE));
	assert_non_null(key);
	set_str(s, SC_HTTP_REQUEST_METHOD, "PUT");
	set_str(s, key, "/arena/{k}");
	record(m, s, false);

	b = metrics__collect(m, t + 10 * SEC, false);
	assert_non_null(b);
	assert_int_equal(b->n, 11);
	assert_int_equal(point(b, r, HTTP_SERVER,
			       "http.request.method=GET,url.scheme=http,http.route=/items/{id},"
			       "http.response.status_code=200,network.protocol.version=1.1")
				 ->count,
			 2);
	point(b, r, HTTP_SERVER,
	      "http.request.method=GET,url.scheme=http,http.route=/items/{id},"
	      "http.response.status_code=500,error.type=500,network.protocol.version=1.1");
	point(b, r, HTTP_SERVER,
	      "http.request.method=GET,url.scheme=http,http.response.status_code=404,"
	      "network.protocol.version=1.1");
	point(b, r, HTTP_SERVER, "http.request.method=PUT,http.route=/arena/{k}");
	point(b, r, HTTP_CLIENT,
	      "http.request.method=POST,server.address=pay,server.port=9000,"
	      "http.response.status_code=201,network.protocol.version=1.1");
	point(b, r, HTTP_CLIENT,
	      "http.request.method=POST,server.address=pay,server.port=9000,"
	      "http.response.status_code=404,error.type=404,network.protocol.version=1.1");
	point(b, r, HTTP_CLIENT,
	      "http.request.method=GET,server.address=down,server.port=80,error.type=_OTHER");
	point(b, r, RPC_SERVER,
	      "rpc.system=grpc,rpc.service=shop.Cart,rpc.method=Add,rpc.grpc.status_code=0");
	point(b, r, RPC_CLIENT,
	      "rpc.system=grpc,rpc.service=inv.Stock,rpc.method=Get,rpc.grpc.status_code=5,"
	      "error.type=NOT_FOUND,server.address=inventory,server.port=50051");
	point(b, r, DB_CLIENT,
	      "db.system.name=postgresql,db.operation.name=SELECT,db.collection.name=users,"
	      "server.address=db.internal,server.port=5432");
	point(b, r, DB_CLIENT,
	      "db.system.name=postgresql,db.operation.name=INSERT,db.collection.name=orders,"
	      "db.response.status_code=23505,error.type=23505,server.address=db.internal,"
	      "server.port=5432");

	/* Never a path, a URL, a query or a peer, whatever the family. */
	for (i = 0; i < b->n; i++)
		for (j = 0; j < b->points[i].nattrs; j++)
			for (k = 0; k < sizeof(never) / sizeof(never[0]); k++)
				if (!strcmp(b->points[i].attrs[j].key, never[k]))
					fail_msg("%s kept '%s'", b->points[i].desc->name, never[k]);

	/* The instruments themselves, as the conventions name them. */
	for (i = 0; i < b->n; i++) {
		const struct metric_desc *d = b->points[i].desc;

		assert_int_equal(d->kind, METRIC_HISTOGRAM);
		assert_string_equal(d->unit, strncmp(d->name, "rpc.", 4) ? "s" : "ms");
		assert_ptr_equal(b->points[i].res, r);
		assert_false(b->points[i].delta);
	}
	metrics__stats(m, &st);
	assert_int_equal(st.measurements, 12);
	assert_int_equal(st.series, 11);
	assert_int_equal(st.overflowed, 0);
	assert_int_equal(st.limited, 0);
	assert_int_equal(st.no_memory, 0);
	metrics_batch__free(b);
	metrics__free(m);
	resource__free(r);
}

/* ---- buckets, sums, boundaries ---------------------------------------------------------- */

static void test_metrics__buckets_on_boundaries(void **state)
{
	/* HTTP (s): 0.005 0.01 0.025 0.05 0.075 0.1 0.25 0.5 0.75 1 2.5 5 7.5 10 */
	static const uint64_t http_durs[] = { 0,	 5 * MS,     5 * MS + 1, 10 * MS,
					      75 * MS,	 100 * MS,   10 * SEC,	 10 * SEC + 1,
					      60 * SEC };
	static const uint64_t http_want[15] = { [0] = 2, [1] = 2, [4] = 1, [5] = 1,
						[13] = 1, [14] = 2 };
	/* RPC (ms): 0 5 10 25 50 75 100 250 500 750 1000 2500 5000 7500 10000 */
	static const uint64_t rpc_durs[] = { 0, 1, 5 * MS, 5 * MS + 1, 250 * MS, 10 * SEC,
					     10 * SEC + 1 };
	static const uint64_t rpc_want[16] = { [0] = 1, [1] = 2, [2] = 1, [7] = 1, [14] = 1,
					       [15] = 1 };
	/* Data stores (s): 0.001 0.005 0.01 0.05 0.1 0.5 1 5 10 */
	static const uint64_t db_durs[] = { 1 * MS, 1 * MS + 1, 500 * MS, 10 * SEC,
					    10 * SEC + 1 };
	static const uint64_t db_want[10] = { [0] = 1, [1] = 1, [5] = 1, [8] = 1, [9] = 1 };
	const struct metric_point *p;
	uint64_t t = base_ns();
	struct metrics_batch *b;
	struct metrics *m;
	struct resource *r;
	struct span *s;
	double sum;
	size_t i;

	(void)state;
	m = new_store(METRIC_TEMPORALITY_CUMULATIVE, METRIC_EXEMPLARS_ALWAYS_OFF, 2000);
	r = mk_res("shop", 101);
	for (i = 0; i < sizeof(http_durs) / sizeof(http_durs[0]); i++)
		record(m, http_server(r, t, http_durs[i], "GET", "/", "/", 200), false);
	for (i = 0; i < sizeof(rpc_durs) / sizeof(rpc_durs[0]); i++)
		record(m, grpc_span(r, SPAN_KIND_SERVER, t, rpc_durs[i], "s.S", "M", 0), false);
	for (i = 0; i < sizeof(db_durs) / sizeof(db_durs[0]); i++)
		record(m, db_span(r, t, db_durs[i], "SELECT", "t", "SELECT 1", NULL), false);
	/* An end before the start (clocks of two CPUs): measured as zero, not as 584 years. */
	s = http_server(r, t, 0, "GET", "/", "/", 200);
	s->end_ns = s->start_ns - 1;
	record(m, s, false);

	b = metrics__collect(m, t + SEC, false);
	assert_non_null(b);

	p = point(b, r, HTTP_SERVER,
		  "http.request.method=GET,url.scheme=http,http.route=/,"
		  "http.response.status_code=200,network.protocol.version=1.1");
	assert_int_equal(p->desc->nbounds, 14);
	assert_double_near(p->desc->bounds[0], 0.005);
	assert_double_near(p->desc->bounds[13], 10);
	assert_int_equal(p->count, 10);
	{
		uint64_t want[15];

		memcpy(want, http_want, sizeof(want));
		want[0]++; /* the span that ended before it started */
		assert_buckets(p, want, 15);
	}
	for (sum = 0, i = 0; i < sizeof(http_durs) / sizeof(http_durs[0]); i++)
		sum += (double)http_durs[i] / 1e9;
	assert_double_near(p->sum, sum);
	assert_double_near(p->min, 0);
	assert_double_near(p->max, 60);

	p = point(b, r, RPC_SERVER,
		  "rpc.system=grpc,rpc.service=s.S,rpc.method=M,rpc.grpc.status_code=0");
	assert_int_equal(p->desc->nbounds, 15);
	assert_double_near(p->desc->bounds[0], 0);
	assert_int_equal(p->count, 7);
	assert_buckets(p, rpc_want, 16);
	for (sum = 0, i = 0; i < sizeof(rpc_durs) / sizeof(rpc_durs[0]); i++)
		sum += (double)rpc_durs[i] / 1e6;
	assert_double_near(p->sum, sum);
	assert_double_near(p->min, 0);
	assert_double_near(p->max, 10000.000001);

	p = point(b, r, DB_CLIENT,
		  "db.system.name=postgresql,db.operation.name=SELECT,db.collection.name=t,"
		  "server.address=db.internal,server.port=5432");
	assert_int_equal(p->desc->nbounds, 9);
	assert_int_equal(p->count, 5);
	assert_buckets(p, db_want, 10);
	assert_double_near(p->min, 0.001);
	assert_double_near(p->max, 10.000000001);
	metrics_batch__free(b);
	metrics__free(m);
	resource__free(r);
}

/* ---- temporality ------------------------------------------------------------------------ */

#define GET_A                                                                                      \
	"http.request.method=GET,url.scheme=http,http.route=/a,http.response.status_code=200,"     \
	"network.protocol.version=1.1"
#define POST_B                                                                                     \
	"http.request.method=POST,url.scheme=http,http.route=/b,http.response.status_code=200,"    \
	"network.protocol.version=1.1"

static void test_metrics__cumulative(void **state)
{
	const struct metric_point *p;
	uint64_t t = base_ns();
	struct metrics_batch *b;
	struct metrics *m;
	struct resource *r;

	(void)state;
	m = new_store(METRIC_TEMPORALITY_CUMULATIVE, METRIC_EXEMPLARS_ALWAYS_OFF, 2000);
	r = mk_res("shop", 101);
	record(m, http_server(r, t, 10 * MS, "GET", "/a", "/a", 200), false);
	record(m, http_server(r, t + MS, 20 * MS, "GET", "/a", "/a", 200), false);
	b = metrics__collect(m, t + 10 * SEC, false);
	assert_non_null(b);
	assert_int_equal(b->time_ns, t + 10 * SEC);
	assert_int_equal(b->n, 1);
	p = point(b, r, HTTP_SERVER, GET_A);
	assert_false(p->delta);
	assert_int_equal(p->start_ns, t); /* the process's first measurement */
	assert_int_equal(p->time_ns, t + 10 * SEC);
	assert_int_equal(p->count, 2);
	assert_double_near(p->sum, 0.03);
	metrics_batch__free(b);

	record(m, http_server(r, t + 11 * SEC, 5 * MS, "GET", "/a", "/a", 200), false);
	record(m, http_server(r, t + 12 * SEC, 300 * MS, "POST", "/b", "/b", 200), false);
	b = metrics__collect(m, t + 20 * SEC, false);
	assert_non_null(b);
	assert_int_equal(b->n, 2);
	p = point(b, r, HTTP_SERVER, GET_A);
	assert_int_equal(p->start_ns, t);
	assert_int_equal(p->time_ns, t + 20 * SEC);
	assert_int_equal(p->count, 3);
	assert_double_near(p->sum, 0.035);
	assert_double_near(p->min, 0.005);
	assert_double_near(p->max, 0.02);
	/* A set first seen later starts with the process's streams all the same. */
	p = point(b, r, HTTP_SERVER, POST_B);
	assert_int_equal(p->start_ns, t);
	assert_int_equal(p->count, 1);
	metrics_batch__free(b);

	/* Nothing new: the totals again, at the new time. */
	b = metrics__collect(m, t + 30 * SEC, false);
	assert_non_null(b);
	assert_int_equal(b->n, 2);
	p = point(b, r, HTTP_SERVER, GET_A);
	assert_int_equal(p->start_ns, t);
	assert_int_equal(p->time_ns, t + 30 * SEC);
	assert_int_equal(p->count, 3);
	metrics_batch__free(b);
	metrics__free(m);
	resource__free(r);
}

static void test_metrics__delta(void **state)
{
	const struct metric_point *p;
	uint64_t t = base_ns(), c1 = t + 10 * SEC, c2 = t + 20 * SEC, c3 = t + 30 * SEC;
	uint64_t want[15] = {};
	struct metrics_stats st;
	struct metrics_batch *b;
	struct metrics *m;
	struct resource *r;

	(void)state;
	m = new_store(METRIC_TEMPORALITY_DELTA, METRIC_EXEMPLARS_ALWAYS_OFF, 2000);
	r = mk_res("shop", 101);
	record(m, http_server(r, t, 50 * MS, "GET", "/a", "/a", 200), false);
	record(m, http_server(r, t + MS, 60 * MS, "GET", "/a", "/a", 200), false);
	b = metrics__collect(m, c1, false);
	assert_non_null(b);
	assert_int_equal(b->n, 1);
	p = point(b, r, HTTP_SERVER, GET_A);
	assert_true(p->delta);
	assert_int_equal(p->start_ns, t);
	assert_int_equal(p->time_ns, c1);
	assert_int_equal(p->count, 2);
	assert_double_near(p->sum, 0.11);
	metrics_batch__free(b);

	/* Only this interval's measurements, from the last collection on. */
	record(m, http_server(r, c1 + SEC, 1 * MS, "GET", "/a", "/a", 200), false);
	record(m, http_server(r, c1 + SEC, 2 * MS, "GET", "/a", "/a", 200), false);
	record(m, http_server(r, c1 + SEC, 3 * MS, "GET", "/a", "/a", 200), false);
	record(m, http_server(r, c1 + SEC, 400 * MS, "POST", "/b", "/b", 200), false);
	b = metrics__collect(m, c2, false);
	assert_non_null(b);
	assert_int_equal(b->n, 2);
	p = point(b, r, HTTP_SERVER, GET_A);
	assert_int_equal(p->start_ns, c1);
	assert_int_equal(p->time_ns, c2);
	assert_int_equal(p->count, 3);
	assert_double_near(p->sum, 0.006);
	assert_double_near(p->min, 0.001);
	assert_double_near(p->max, 0.003);
	want[0] = 3;
	assert_buckets(p, want, 15);
	p = point(b, r, HTTP_SERVER, POST_B);
	assert_int_equal(p->start_ns, c1);
	assert_int_equal(p->count, 1);
	metrics_batch__free(b);
	metrics__stats(m, &st);
	assert_int_equal(st.series, 2);

	/* GET /a saw nothing: no point, and its set is let go. */
	record(m, http_server(r, c2 + SEC, 400 * MS, "POST", "/b", "/b", 200), false);
	b = metrics__collect(m, c3, false);
	assert_non_null(b);
	assert_int_equal(b->n, 1);
	p = point(b, r, HTTP_SERVER, POST_B);
	assert_int_equal(p->start_ns, c2);
	assert_int_equal(p->time_ns, c3);
	assert_int_equal(p->count, 1);
	metrics_batch__free(b);
	metrics__stats(m, &st);
	assert_int_equal(st.series, 1);

	/* Back after a quiet interval: a new stream, from the last collection. */
	record(m, http_server(r, c3 + SEC, 7 * MS, "GET", "/a", "/a", 200), false);
	b = metrics__collect(m, t + 40 * SEC, false);
	assert_non_null(b);
	assert_int_equal(b->n, 1);
	p = point(b, r, HTTP_SERVER, GET_A);
	assert_int_equal(p->start_ns, c3);
	assert_int_equal(p->count, 1);
	assert_double_near(p->min, 0.007);
	metrics_batch__free(b);

	b = metrics__collect(m, t + 50 * SEC, false);
	assert_non_null(b);
	assert_int_equal(b->n, 0);
	metrics_batch__free(b);
	metrics__stats(m, &st);
	assert_int_equal(st.series, 0);
	assert_int_equal(st.measurements, 8);
	metrics__free(m);
	resource__free(r);
}

/* A delta set let go frees its place under the cardinality limit, the overflow set's too. */
static void test_metrics__delta_frees_cardinality(void **state)
{
	const struct metric_point *p;
	uint64_t t = base_ns();
	struct metrics_stats st;
	struct metrics_batch *b;
	struct metrics *m;
	struct resource *r;

	(void)state;
	m = new_store(METRIC_TEMPORALITY_DELTA, METRIC_EXEMPLARS_ALWAYS_OFF, 3);
	r = mk_res("shop", 101);
	record(m, http_server(r, t, MS, "GET", "/x", "/x", 200), false);
	record(m, http_server(r, t, MS, "GET", "/y", "/y", 200), false);
	b = metrics__collect(m, t + 10 * SEC, false);
	assert_non_null(b);
	assert_int_equal(b->n, 2);
	metrics_batch__free(b);

	/* /x and /y still hold the two places of their own: /z overflows. */
	record(m, http_server(r, t + 11 * SEC, MS, "GET", "/z", "/z", 200), false);
	b = metrics__collect(m, t + 20 * SEC, false);
	assert_non_null(b);
	assert_int_equal(b->n, 1);
	p = point(b, r, HTTP_SERVER, "otel.metric.overflow=true");
	assert_int_equal(p->count, 1);
	assert_int_equal(p->start_ns, t + 10 * SEC);
	metrics_batch__free(b);

	/* /x and /y were let go: /z has a set of its own now. */
	record(m, http_server(r, t + 21 * SEC, MS, "GET", "/z", "/z", 200), false);
	b = metrics__collect(m, t + 30 * SEC, false);
	assert_non_null(b);
	assert_int_equal(b->n, 1);
	p = point(b, r, HTTP_SERVER,
		  "http.request.method=GET,url.scheme=http,http.route=/z,"
		  "http.response.status_code=200,network.protocol.version=1.1");
	assert_int_equal(p->count, 1);
	metrics_batch__free(b);
	metrics__stats(m, &st);
	assert_int_equal(st.series, 1);
	assert_int_equal(st.overflowed, 1);
	assert_int_equal(st.limited, 1);
	metrics__free(m);
	resource__free(r);
}

/* ---- observed sums ---------------------------------------------------------------------- */


struct totals {
	struct resource *res;
	int64_t ok, failed, queued;
	int calls;
};

/* The observe callback: totals as gospan's health metrics report them. */
static void observe_totals(void *ctx, struct metrics *m)
{
	struct totals *x = ctx;
	/* Given in another order than the instrument's keys: the points carry the keys' order. */
	struct attr failed[2] = {
		{ .key = SC_ERROR_TYPE, .type = ATTR_STRING, .s = "export_failed" },
		{ .key = "otel.component.name", .type = ATTR_STRING, .s = "exp/0" },
	};
	struct attr ok = { .key = "otel.component.name", .type = ATTR_STRING, .s = "exp/0" };

	x->calls++;
	assert_int_equal(metrics__observe(m, &exported_desc, x->res, &ok, 1, x->ok), 0);
	assert_int_equal(metrics__observe(m, &exported_desc, x->res, failed, 2, x->failed), 0);
	assert_int_equal(metrics__observe(m, &queue_desc, x->res, &ok, 1, x->queued), 0);
}

static struct metrics *new_observed_store(enum metric_temporality t, struct totals *x)
{
	struct metrics *m = metrics__new(&(struct metrics_opts){
		.temporality = t,
		.exemplars = METRIC_EXEMPLARS_ALWAYS_OFF,
		.cardinality_limit = 2000,
		.observe = observe_totals,
		.observe_ctx = x,
	});

	assert_non_null(m);
	return m;
}

static void test_metrics__observed_sums_cumulative(void **state)
{
	struct totals x = { .ok = 10, .failed = 1, .queued = 5 };
	const struct metric_point *p;
	uint64_t t = base_ns();
	struct metrics_batch *b;
	struct metrics *m;
	uint64_t start;

	(void)state;
	x.res = mk_res("gospan", 1);
	m = new_observed_store(METRIC_TEMPORALITY_CUMULATIVE, &x);
	b = metrics__collect(m, t + 10 * SEC, false);
	assert_non_null(b);
	assert_int_equal(x.calls, 1);
	assert_int_equal(b->n, 3);
	p = point(b, x.res, "test.span.exported", "otel.component.name=exp/0");
	assert_false(p->delta);
	assert_int_equal(p->value, 10);
	start = p->start_ns;
	/* When the store began counting: before this test's spans, after the test began. */
	assert_true(start < t && start > t - 60 * SEC);
	p = point(b, x.res, "test.span.exported",
		  "otel.component.name=exp/0,error.type=export_failed");
	assert_int_equal(p->value, 1);
	p = point(b, x.res, "test.queue.size", "otel.component.name=exp/0");
	assert_int_equal(p->value, 5);
	metrics_batch__free(b);

	x.ok = 25;
	x.queued = 2;
	b = metrics__collect(m, t + 20 * SEC, false);
	assert_non_null(b);
	p = point(b, x.res, "test.span.exported", "otel.component.name=exp/0");
	assert_int_equal(p->value, 25);
	assert_int_equal(p->start_ns, start);
	assert_int_equal(p->time_ns, t + 20 * SEC);
	p = point(b, x.res, "test.span.exported",
		  "otel.component.name=exp/0,error.type=export_failed");
	assert_int_equal(p->value, 1);
	p = point(b, x.res, "test.queue.size", "otel.component.name=exp/0");
	assert_int_equal(p->value, 2);
	metrics_batch__free(b);
	metrics__free(m);
	resource__free(x.res);
}

static void test_metrics__observed_sums_delta(void **state)
{
	struct totals x = { .ok = 10, .failed = 1, .queued = 5 };
	const struct metric_point *p;
	uint64_t t = base_ns();
	struct metrics_batch *b;
	struct metrics *m;

	(void)state;
	x.res = mk_res("gospan", 1);
	m = new_observed_store(METRIC_TEMPORALITY_DELTA, &x);
	b = metrics__collect(m, t + 10 * SEC, false);
	assert_non_null(b);
	p = point(b, x.res, "test.span.exported", "otel.component.name=exp/0");
	assert_true(p->delta);
	assert_int_equal(p->value, 10);
	metrics_batch__free(b);

	x.ok = 25;
	x.queued = 7;
	b = metrics__collect(m, t + 20 * SEC, false);
	assert_non_null(b);
	assert_int_equal(b->n, 3);
	p = point(b, x.res, "test.span.exported", "otel.component.name=exp/0");
	assert_int_equal(p->value, 15);
	assert_int_equal(p->start_ns, t + 10 * SEC);
	assert_int_equal(p->time_ns, t + 20 * SEC);
	/* Nothing more failed: a delta of 0, still reported (a counter is not let go). */
	p = point(b, x.res, "test.span.exported",
		  "otel.component.name=exp/0,error.type=export_failed");
	assert_int_equal(p->value, 0);
	/* An up-down counter stays cumulative under the delta preference. */
	p = point(b, x.res, "test.queue.size", "otel.component.name=exp/0");
	assert_false(p->delta);
	assert_int_equal(p->value, 7);
	metrics_batch__free(b);
	metrics__free(m);
	resource__free(x.res);
}

/* Lowmemory: histograms as deltas, observed counters cumulative. */
static void test_metrics__lowmemory(void **state)
{
	struct totals x = { .ok = 10, .failed = 1, .queued = 5 };
	const struct metric_point *p;
	uint64_t t = base_ns();
	struct metrics_batch *b;
	struct metrics *m;
	struct resource *r;

	(void)state;
	x.res = mk_res("gospan", 1);
	r = mk_res("shop", 101);
	m = new_observed_store(METRIC_TEMPORALITY_LOWMEMORY, &x);
	record(m, http_server(r, t, 10 * MS, "GET", "/a", "/a", 200), false);
	record(m, http_server(r, t, 10 * MS, "GET", "/a", "/a", 200), false);
	b = metrics__collect(m, t + 10 * SEC, false);
	assert_non_null(b);
	p = point(b, r, HTTP_SERVER, GET_A);
	assert_true(p->delta);
	assert_int_equal(p->count, 2);
	p = point(b, x.res, "test.span.exported", "otel.component.name=exp/0");
	assert_false(p->delta);
	assert_int_equal(p->value, 10);
	metrics_batch__free(b);

	x.ok = 12;
	record(m, http_server(r, t + 11 * SEC, 10 * MS, "GET", "/a", "/a", 200), false);
	b = metrics__collect(m, t + 20 * SEC, false);
	assert_non_null(b);
	p = point(b, r, HTTP_SERVER, GET_A);
	assert_true(p->delta);
	assert_int_equal(p->count, 1);
	assert_int_equal(p->start_ns, t + 10 * SEC);
	p = point(b, x.res, "test.span.exported", "otel.component.name=exp/0");
	assert_false(p->delta);
	assert_int_equal(p->value, 12);
	metrics_batch__free(b);
	metrics__free(m);
	resource__free(r);
	resource__free(x.res);
}

static const char *const flag_keys[] = { "test.flag" };
static const struct metric_desc flag_desc = {
	.name = "test.flagged",
	.description = "Counted by a boolean attribute.",
	.unit = "1",
	.kind = METRIC_SUM,
	.monotonic = true,
	.observed = true,
	.keys = flag_keys,
	.nkeys = 1,
};

/*
 * A boolean attribute is one byte of its union: what the other bytes hold (a span's attribute
 * table is not zeroed, span__alloc) must not make the same value another set.
 */
static void test_metrics__observed_bool_attribute_is_one_set(void **state)
{
	struct attr a = { .key = "test.flag", .type = ATTR_BOOL };
	uint64_t t = base_ns();
	struct metrics_batch *b;
	struct metrics_stats st;
	struct metrics *m;
	struct resource *r;

	(void)state;
	r = mk_res("gospan", 1);
	m = new_store(METRIC_TEMPORALITY_CUMULATIVE, METRIC_EXEMPLARS_ALWAYS_OFF, 2000);
	a.i = 0x5a5a5a5a5a5a5a00LL;
	a.b = true;
	assert_int_equal(metrics__observe(m, &flag_desc, r, &a, 1, 3), 0);
	a.i = 0;
	a.b = true;
	assert_int_equal(metrics__observe(m, &flag_desc, r, &a, 1, 4), 0);
	/* metrics_stats.series counts the calls' instruments only: the batch says it. */
	metrics__stats(m, &st);
	assert_int_equal(st.series, 0);
	b = metrics__collect(m, t, false);
	assert_non_null(b);
	assert_int_equal(b->n, 1);
	assert_int_equal(point(b, r, "test.flagged", "test.flag=true")->value, 4);
	metrics_batch__free(b);
	metrics__free(m);
	resource__free(r);
}

/* Sums measured one by one, or with more keys than a point can hold, are refused. */
static void test_metrics__observe_rejects_bad_desc(void **state)
{
	static const char *const nine[] = { "k0", "k1", "k2", "k3", "k4", "k5", "k6", "k7", "k8" };
	struct metric_desc wide = exported_desc;
	struct attr attrs[9];
	struct metrics *m;
	struct resource *r;
	size_t i;

	(void)state;
	r = mk_res("gospan", 1);
	m = new_store(METRIC_TEMPORALITY_CUMULATIVE, METRIC_EXEMPLARS_ALWAYS_OFF, 2000);
	assert_int_equal(metrics__observe(m, &metric_instruments[METRIC_HTTP_SERVER], r, NULL, 0,
					  1),
			 -EINVAL);
	wide.observed = false;
	assert_int_equal(metrics__observe(m, &wide, r, NULL, 0, 1), -EINVAL);
	/* More attributes than the instrument has keys. */
	for (i = 0; i < 9; i++)
		attrs[i] = (struct attr){ .key = nine[i], .type = ATTR_INT, .i = (int64_t)i };
	assert_int_equal(metrics__observe(m, &exported_desc, r, attrs, 3, 1), -EINVAL);
	/* More keys than METRIC_MAX_ATTRS: no point could hold them. */
	wide.observed = true;
	wide.keys = nine;
	wide.nkeys = 9;
	assert_int_equal(metrics__observe(m, &wide, r, attrs, 9, 1), -EINVAL);
	metrics__free(m);
	resource__free(r);
}

/* ---- the cardinality limit -------------------------------------------------------------- */

static void test_metrics__cardinality_limit(void **state)
{
	const struct metric_point *p;
	uint64_t t = base_ns();
	struct metrics_stats st;
	struct metrics_batch *b;
	struct metrics *m;
	struct resource *r, *r2;
	char route[32];
	int i;

	(void)state;
	m = new_store(METRIC_TEMPORALITY_CUMULATIVE, METRIC_EXEMPLARS_ALWAYS_ON, 4);
	r = mk_res("shop", 101);
	r2 = mk_res("cart", 102);
	/* A limit of 4: 3 sets of the calls' own, then the overflow set. */
	for (i = 0; i < 6; i++) {
		snprintf(route, sizeof(route), "/r%d", i);
		record(m, http_server(r, t, (uint64_t)(i + 1) * MS, "GET", route, route, 200),
		       false);
	}
	/* Sets seen before the limit keep counting in their own. */
	record(m, http_server(r, t, 2 * MS, "GET", "/r0", "/r0", 200), false);
	record(m, http_server(r, t, 2 * MS, "GET", "/r5", "/r5", 200), false);
	/* Each instrument and each process has its own limit. */
	record(m, http_client(r, t, MS, "GET", "http://a/", "a", 80, 200), false);
	for (i = 0; i < 3; i++) {
		snprintf(route, sizeof(route), "/c%d", i);
		record(m, http_server(r2, t, MS, "GET", route, route, 200), false);
	}

	metrics__stats(m, &st);
	assert_int_equal(st.limited, 1);
	assert_int_equal(st.overflowed, 4);
	assert_int_equal(st.series, 3 + 1 + 3);
	assert_int_equal(st.measurements, 12);

	b = metrics__collect(m, t + SEC, false);
	assert_non_null(b);
	assert_int_equal(count_points(b, r, HTTP_SERVER), 4);
	assert_int_equal(count_points(b, r2, HTTP_SERVER), 3);
	assert_int_equal(count_points(b, r, HTTP_CLIENT), 1);
	p = point(b, r, HTTP_SERVER,
		  "http.request.method=GET,url.scheme=http,http.route=/r0,"
		  "http.response.status_code=200,network.protocol.version=1.1");
	assert_int_equal(p->count, 2);
	p = point(b, r, HTTP_SERVER, "otel.metric.overflow=true");
	assert_int_equal(p->attrs[0].type, ATTR_BOOL);
	assert_int_equal(p->count, 4); /* /r3, /r4, /r5 and /r5 again */
	assert_double_near(p->sum, 0.004 + 0.005 + 0.006 + 0.002);
	assert_double_near(p->min, 0.002);
	assert_double_near(p->max, 0.006);
	assert_int_equal(p->start_ns, t);
	/* 2, 4 and 5 ms in the first bucket, 6 ms in the second: one exemplar each. */
	assert_int_equal(p->nexemplars, 2);
	metrics_batch__free(b);
	metrics__free(m);
	resource__free(r);
	resource__free(r2);
}

/*
 * Observed sums are not limited: their sets are gospan's own (its health), few and fixed, and
 * must not vanish into an overflow set when a service's calls reach the limit.
 */
static void test_metrics__observed_sums_are_not_limited(void **state)
{
	struct attr a = { .key = "otel.component.name", .type = ATTR_STRING };
	uint64_t t = base_ns();
	struct metrics_batch *b;
	struct metrics_stats st;
	struct metrics *m;
	struct resource *r;
	int pass;

	(void)state;
	r = mk_res("gospan", 1);
	m = new_store(METRIC_TEMPORALITY_DELTA, METRIC_EXEMPLARS_ALWAYS_OFF, 2);
	for (pass = 0; pass < 2; pass++) {
		a.s = "a";
		assert_int_equal(metrics__observe(m, &exported_desc, r, &a, 1, 5 + pass), 0);
		a.s = "b";
		assert_int_equal(metrics__observe(m, &exported_desc, r, &a, 1, 7 + pass), 0);
		a.s = "c";
		assert_int_equal(metrics__observe(m, &exported_desc, r, &a, 1, 3 + 2 * pass), 0);
		b = metrics__collect(m, t + (uint64_t)pass * SEC, false);
		assert_non_null(b);
		assert_int_equal(b->n, 3);
		assert_int_equal(point(b, r, "test.span.exported", "otel.component.name=a")->value,
				 pass ? 1 : 5);
		assert_int_equal(point(b, r, "test.span.exported", "otel.component.name=b")->value,
				 pass ? 1 : 7);
		assert_int_equal(point(b, r, "test.span.exported", "otel.component.name=c")->value,
				 pass ? 2 : 3);
		metrics_batch__free(b);
	}
	metrics__stats(m, &st);
	assert_int_equal(st.limited, 0);
	metrics__free(m);
	resource__free(r);
}

/* ---- exemplars -------------------------------------------------------------------------- */

/* P's exemplars must be exactly the spans S (N of them), in bucket order. */
static void assert_exemplars(const struct metric_point *p, struct span **s, size_t n)
{
	size_t i;

	if (p->nexemplars != n)
		fail_msg("%zu exemplars, want %zu", p->nexemplars, n);
	for (i = 0; i < n; i++) {
		const struct metric_exemplar *x = &p->exemplars[i];

		assert_memory_equal(x->trace_id, s[i]->trace_id, 16);
		assert_memory_equal(x->span_id, s[i]->span_id, 8);
		assert_int_equal(x->time_ns, s[i]->end_ns);
		assert_double_near(x->value, (double)(s[i]->end_ns - s[i]->start_ns) / 1e9);
	}
}

static void test_metrics__exemplar_filters(void **state)
{
	static const enum metric_exemplars filters[] = { METRIC_EXEMPLARS_TRACE_BASED,
							 METRIC_EXEMPLARS_ALWAYS_ON,
							 METRIC_EXEMPLARS_ALWAYS_OFF };
	uint64_t t = base_ns();
	struct metrics_batch *b;
	struct metrics *m;
	struct resource *r;
	struct span *s[2];
	size_t f;

	(void)state;
	r = mk_res("shop", 101);
	for (f = 0; f < 3; f++) {
		m = new_store(METRIC_TEMPORALITY_CUMULATIVE, filters[f], 2000);
		/* Not exported (6 ms, bucket 1), then exported (30 ms, bucket 3). */
		s[0] = http_server(r, t, 6 * MS, "GET", "/a", "/a", 200);
		s[1] = http_server(r, t, 30 * MS, "GET", "/a", "/a", 200);
		metrics__record_span(m, s[0], false);
		metrics__record_span(m, s[1], true);
		b = metrics__collect(m, t + SEC, false);
		assert_non_null(b);
		switch (filters[f]) {
		case METRIC_EXEMPLARS_TRACE_BASED:
			assert_exemplars(point(b, r, HTTP_SERVER, GET_A), &s[1], 1);
			break;
		case METRIC_EXEMPLARS_ALWAYS_ON:
			assert_exemplars(point(b, r, HTTP_SERVER, GET_A), s, 2);
			break;
		case METRIC_EXEMPLARS_ALWAYS_OFF:
			assert_exemplars(point(b, r, HTTP_SERVER, GET_A), NULL, 0);
			assert_null(point(b, r, HTTP_SERVER, GET_A)->exemplars);
			break;
		}
		metrics_batch__free(b);
		span__free(s[0]);
		span__free(s[1]);
		metrics__free(m);
	}
	resource__free(r);
}

static void test_metrics__exemplar_newest_per_bucket_and_reset(void **state)
{
	uint64_t t = base_ns();
	struct metrics_batch *b;
	struct metrics *m;
	struct resource *r;
	struct span *s[4];
	int i;

	(void)state;
	r = mk_res("shop", 101);
	m = new_store(METRIC_TEMPORALITY_CUMULATIVE, METRIC_EXEMPLARS_TRACE_BASED, 2000);
	/* Two in bucket 1 (6 and 7 ms), two in bucket 14 (over 10 s): the newest of each. */
	s[0] = http_server(r, t, 6 * MS, "GET", "/a", "/a", 200);
	s[1] = http_server(r, t + MS, 7 * MS, "GET", "/a", "/a", 200);
	s[2] = http_server(r, t, 11 * SEC, "GET", "/a", "/a", 200);
	s[3] = http_server(r, t, 12 * SEC, "GET", "/a", "/a", 200);
	/* Measured out of bucket order: exemplars come in bucket order all the same. */
	metrics__record_span(m, s[2], true);
	metrics__record_span(m, s[0], true);
	metrics__record_span(m, s[3], true);
	metrics__record_span(m, s[1], true);

	for (i = 0; i < 2; i++) {
		b = metrics__collect(m, t + (uint64_t)(20 + i) * SEC, false);
		assert_non_null(b);
		assert_exemplars(point(b, r, HTTP_SERVER, GET_A), (struct span *[]){ s[1], s[3] },
				 2);
		metrics_batch__free(b);
	}
	/* Not reset, they stayed. Reset: the same once more, then none. */
	b = metrics__collect(m, t + 30 * SEC, true);
	assert_non_null(b);
	assert_exemplars(point(b, r, HTTP_SERVER, GET_A), (struct span *[]){ s[1], s[3] }, 2);
	metrics_batch__free(b);
	b = metrics__collect(m, t + 40 * SEC, true);
	assert_non_null(b);
	assert_int_equal(point(b, r, HTTP_SERVER, GET_A)->count, 4);
	assert_exemplars(point(b, r, HTTP_SERVER, GET_A), NULL, 0);
	metrics_batch__free(b);
	/* A new one after the reset. */
	metrics__record_span(m, s[0], true);
	b = metrics__collect(m, t + 50 * SEC, true);
	assert_non_null(b);
	assert_exemplars(point(b, r, HTTP_SERVER, GET_A), &s[0], 1);
	metrics_batch__free(b);
	for (i = 0; i < 4; i++)
		span__free(s[i]);
	metrics__free(m);
	resource__free(r);
}

/*
 * Delta points carry the exemplars of their own interval only, even when the collection does
 * not ask for new exemplars (a pull reader): an older one would sit in a bucket of this
 * interval's point that may count nothing.
 */
static void test_metrics__exemplars_delta(void **state)
{
	uint64_t t = base_ns();
	struct metrics_batch *b;
	struct metrics *m;
	struct resource *r;
	struct span *s[2];

	(void)state;
	r = mk_res("shop", 101);
	m = new_store(METRIC_TEMPORALITY_DELTA, METRIC_EXEMPLARS_ALWAYS_ON, 2000);
	s[0] = http_server(r, t, 30 * MS, "GET", "/a", "/a", 200);
	s[1] = http_server(r, t + 11 * SEC, 6 * MS, "GET", "/a", "/a", 200);
	metrics__record_span(m, s[0], true);
	b = metrics__collect(m, t + 10 * SEC, false);
	assert_non_null(b);
	assert_exemplars(point(b, r, HTTP_SERVER, GET_A), &s[0], 1);
	metrics_batch__free(b);
	metrics__record_span(m, s[1], true);
	b = metrics__collect(m, t + 20 * SEC, false);
	assert_non_null(b);
	assert_int_equal(point(b, r, HTTP_SERVER, GET_A)->count, 1);
	assert_exemplars(point(b, r, HTTP_SERVER, GET_A), &s[1], 1);
	metrics_batch__free(b);
	span__free(s[0]);
	span__free(s[1]);
	metrics__free(m);
	resource__free(r);
}

/* ---- processes that end ----------------------------------------------------------------- */

static void test_metrics__process_gone(void **state)
{
	uint64_t t = base_ns();
	struct metrics_stats st;
	struct metrics_batch *b, *held;
	struct metrics *m;
	struct resource *gone, *alive;

	(void)state;
	m = new_store(METRIC_TEMPORALITY_CUMULATIVE, METRIC_EXEMPLARS_ALWAYS_ON, 2000);
	gone = mk_res("batch-job", 201);
	alive = mk_res("shop", 101);
	record(m, http_server(gone, t, 10 * MS, "GET", "/a", "/a", 200), true);
	record(m, db_span(gone, t, 10 * MS, "SELECT", "t", "SELECT 1", NULL), true);
	record(m, http_server(alive, t, 10 * MS, "GET", "/a", "/a", 200), true);
	b = metrics__collect(m, t + 10 * SEC, false);
	assert_non_null(b);
	assert_int_equal(b->n, 3);
	metrics_batch__free(b);

	/* The process table forgets it: only the store holds its resource now. */
	resource__free(gone);
	/* Collected once more, its resource whole in the batch after the store let it go. */
	b = metrics__collect(m, t + 20 * SEC, false);
	assert_non_null(b);
	assert_int_equal(b->n, 3);
	assert_int_equal(count_points(b, gone, HTTP_SERVER), 1);
	assert_int_equal(point(b, gone, DB_CLIENT,
			       "db.system.name=postgresql,db.operation.name=SELECT,"
			       "db.collection.name=t,server.address=db.internal,server.port=5432")
				 ->count,
			 1);
	metrics__stats(m, &st);
	assert_int_equal(st.series, 1);
	held = b;
	/* Then never again; the living process goes on. */
	b = metrics__collect(m, t + 30 * SEC, false);
	assert_non_null(b);
	assert_int_equal(b->n, 1);
	point(b, alive, HTTP_SERVER, GET_A);
	metrics_batch__free(b);
	/* The batch that held the last references frees the resource (ASan: no leak, no UAF). */
	for (size_t i = 0; i < held->n; i++)
		if (held->points[i].res != alive)
			assert_string_equal(res_service(held->points[i].res), "batch-job");
	metrics_batch__free(held);

	/* A resource held elsewhere (a span still queued for export) is not gone. */
	{
		struct resource *r = mk_res("queued", 301);
		struct span *queued = http_server(r, t, MS, "GET", "/q", "/q", 200);

		metrics__record_span(m, queued, false);
		resource__free(r);
		b = metrics__collect(m, t + 40 * SEC, false);
		metrics_batch__free(b);
		b = metrics__collect(m, t + 50 * SEC, false);
		assert_non_null(b);
		assert_int_equal(count_points(b, r, HTTP_SERVER), 1);
		metrics_batch__free(b);
		span__free(queued);
		b = metrics__collect(m, t + 60 * SEC, false);
		metrics_batch__free(b);
		b = metrics__collect(m, t + 70 * SEC, false);
		assert_non_null(b);
		assert_int_equal(b->n, 1);
		metrics_batch__free(b);
	}
	metrics__free(m);
	resource__free(alive);
}

/* ---- quantiles -------------------------------------------------------------------------- */

static void test_metrics__quantiles(void **state)
{
	const struct metric_point *p;
	uint64_t t = base_ns();
	struct metrics_batch *b;
	struct metrics *m;
	struct resource *r;
	int i;

	(void)state;
	m = new_store(METRIC_TEMPORALITY_CUMULATIVE, METRIC_EXEMPLARS_ALWAYS_OFF, 2000);
	r = mk_res("shop", 101);
	/* 1, 2, ... 100 ms: buckets of 5, 5, 15, 25, 25, 25 up to 0.1 s. */
	for (i = 1; i <= 100; i++)
		record(m, http_server(r, t, (uint64_t)i * MS, "GET", "/a", "/a", 200), false);
	/* 6, 7, 8 ms: one bucket, narrowed to what was seen. */
	for (i = 6; i <= 8; i++)
		record(m, http_server(r, t, (uint64_t)i * MS, "GET", "/b", "/b", 200), false);
	/* 20 and 30 s: past the last bound, between the smallest and largest seen. */
	record(m, http_server(r, t, 20 * SEC, "GET", "/c", "/c", 200), false);
	record(m, http_server(r, t, 30 * SEC, "GET", "/c", "/c", 200), false);
	/* One value: every quantile is it. */
	record(m, grpc_span(r, SPAN_KIND_SERVER, t, 42 * MS, "s.S", "M", 0), false);
	b = metrics__collect(m, t + 60 * SEC, false);
	assert_non_null(b);

	p = point(b, r, HTTP_SERVER, GET_A);
	assert_double_near(metric_point__quantile(p, 0.10), 0.010);
	assert_double_near(metric_point__quantile(p, 0.50), 0.050);
	assert_double_near(metric_point__quantile(p, 0.90), 0.090);
	assert_double_near(metric_point__quantile(p, 0.99), 0.099);
	assert_double_near(metric_point__quantile(p, 1.00), 0.100);
	/* The first bucket starts at the smallest value seen: 1 ms + 4 ms / 5. */
	assert_double_near(metric_point__quantile(p, 0.01), 0.0018);

	p = point(b, r, HTTP_SERVER,
		  "http.request.method=GET,url.scheme=http,http.route=/b,"
		  "http.response.status_code=200,network.protocol.version=1.1");
	assert_double_near(metric_point__quantile(p, 0.5), 0.007);
	assert_double_near(metric_point__quantile(p, 0.99), 0.00798);

	p = point(b, r, HTTP_SERVER,
		  "http.request.method=GET,url.scheme=http,http.route=/c,"
		  "http.response.status_code=200,network.protocol.version=1.1");
	assert_double_near(metric_point__quantile(p, 0.5), 25);
	assert_double_near(metric_point__quantile(p, 0.99), 29.9);

	p = point(b, r, RPC_SERVER,
		  "rpc.system=grpc,rpc.service=s.S,rpc.method=M,rpc.grpc.status_code=0");
	assert_double_near(metric_point__quantile(p, 0.5), 42);
	assert_double_near(metric_point__quantile(p, 0.99), 42);
	metrics_batch__free(b);

	/* No measurement, or not a histogram: no quantile. */
	{
		struct metric_point empty = { .desc = &metric_instruments[METRIC_HTTP_SERVER] };
		struct metric_point sum = { .desc = &exported_desc, .count = 3 };

		assert_true(isnan(metric_point__quantile(&empty, 0.5)));
		assert_true(isnan(metric_point__quantile(&sum, 0.5)));
	}
	metrics__free(m);
	resource__free(r);
}

/* ---- the store under load, options ------------------------------------------------------ */

struct recorder {
	struct metrics *m;
	struct resource *r;
	int n;
};

static void *record_many(void *arg)
{
	struct recorder *rc = arg;
	uint64_t t = base_ns();
	int i;

	for (i = 0; i < rc->n; i++)
		record(rc->m, http_server(rc->r, t, (uint64_t)(i % 7) * MS, "GET",
					  i % 2 ? "/a" : "/b", "/x", 200),
		       i % 3 == 0);
	return NULL;
}

/* Collections while the reader thread measures: every call in exactly one delta. */
static void test_metrics__delta_while_measuring(void **state)
{
	struct recorder rc = { .n = 20000 };
	uint64_t t = base_ns(), total = 0;
	struct metrics_batch *b;
	pthread_t th;
	size_t i;
	int k = 0;

	(void)state;
	rc.m = new_store(METRIC_TEMPORALITY_DELTA, METRIC_EXEMPLARS_TRACE_BASED, 2000);
	rc.r = mk_res("shop", 101);
	assert_int_equal(pthread_create(&th, NULL, record_many, &rc), 0);
	for (k = 0; k < 50; k++) {
		b = metrics__collect(rc.m, t + (uint64_t)k * MS, true);
		assert_non_null(b);
		for (i = 0; i < b->n; i++)
			total += b->points[i].count;
		metrics_batch__free(b);
	}
	assert_int_equal(pthread_join(th, NULL), 0);
	b = metrics__collect(rc.m, t + (uint64_t)k * MS, true);
	assert_non_null(b);
	for (i = 0; i < b->n; i++)
		total += b->points[i].count;
	metrics_batch__free(b);
	assert_int_equal(total, rc.n);
	metrics__free(rc.m);
	resource__free(rc.r);
}

static void test_metrics__new_rejects_bad_opts(void **state)
{
	(void)state;
	errno = 0;
	assert_null(metrics__new(&(struct metrics_opts){ .cardinality_limit = 1 }));
	assert_int_equal(errno, EINVAL);
	assert_null(metrics__new(&(struct metrics_opts){ .cardinality_limit = 0 }));
	metrics__free(NULL);
	metrics_batch__free(NULL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_metrics__instruments_and_attributes),
		cmocka_unit_test(test_metrics__buckets_on_boundaries),
		cmocka_unit_test(test_metrics__cumulative),
		cmocka_unit_test(test_metrics__delta),
		cmocka_unit_test(test_metrics__delta_frees_cardinality),
		cmocka_unit_test(test_metrics__observed_sums_cumulative),
		cmocka_unit_test(test_metrics__observed_sums_delta),
		cmocka_unit_test(test_metrics__lowmemory),
		cmocka_unit_test(test_metrics__observed_bool_attribute_is_one_set),
		cmocka_unit_test(test_metrics__observe_rejects_bad_desc),
		cmocka_unit_test(test_metrics__cardinality_limit),
		cmocka_unit_test(test_metrics__observed_sums_are_not_limited),
		cmocka_unit_test(test_metrics__exemplar_filters),
		cmocka_unit_test(test_metrics__exemplar_newest_per_bucket_and_reset),
		cmocka_unit_test(test_metrics__exemplars_delta),
		cmocka_unit_test(test_metrics__process_gone),
		cmocka_unit_test(test_metrics__quantiles),
		cmocka_unit_test(test_metrics__delta_while_measuring),
		cmocka_unit_test(test_metrics__new_rejects_bad_opts),
	};

	log_set_level(TEST_QUIET_LEVEL);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
