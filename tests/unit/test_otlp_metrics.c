// SPDX-License-Identifier: MIT
/*
 * Unit tests for otlp_metrics.c. A real metrics store measures real spans of three processes and
 * observes counters of a fourth resource; its batch is encoded, then decoded by protobuf-c's
 * generated unpack (every field compared with the points that went in) and by the official
 * opentelemetry-proto Python package, from protobuf and from OTLP/JSON, whose canonical dump must
 * equal the one written here from the batch. The Python decoder is what catches a wrong field
 * number or name in proto/ or in the JSON mapping, which our own decoder would agree with.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>
#include <cjson/cJSON.h>

#include "opentelemetry/proto/collector/metrics/v1/metrics_service.pb-c.h"

#include "core/log.h"
#include "core/version.h"
#include "export/otlp.h"
#include "helpers.h"
#include "metrics_descs.h"
#include "model/metrics.h"
#include "model/semconv.h"
#include "model/span.h"

typedef Opentelemetry__Proto__Collector__Metrics__V1__ExportMetricsServiceRequest pb_request;
typedef Opentelemetry__Proto__Metrics__V1__ResourceMetrics pb_resource_metrics;
typedef Opentelemetry__Proto__Metrics__V1__ScopeMetrics pb_scope_metrics;
typedef Opentelemetry__Proto__Metrics__V1__Metric pb_metric;
typedef Opentelemetry__Proto__Metrics__V1__HistogramDataPoint pb_hist_point;
typedef Opentelemetry__Proto__Metrics__V1__NumberDataPoint pb_number_point;
typedef Opentelemetry__Proto__Common__V1__KeyValue pb_key_value;

#define PB(x) OPENTELEMETRY__PROTO__METRICS__V1__##x
#define VALUE_CASE(x) OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__VALUE_##x
/* OTLP's AggregationTemporality for a point that is a delta or not. */
#define TEMPORALITY(delta)                                                                         \
	((delta) ? PB(AGGREGATION_TEMPORALITY__AGGREGATION_TEMPORALITY_DELTA) :                    \
		   PB(AGGREGATION_TEMPORALITY__AGGREGATION_TEMPORALITY_CUMULATIVE))
#define request_(fn)                                                                               \
	opentelemetry__proto__collector__metrics__v1__export_metrics_service_request__##fn



struct fixture {
	struct resource *shop, *cart, *self;
	struct metrics *m;
	struct metrics_batch *b;
	uint64_t t;
};

static void observe(void *ctx, struct metrics *m)
{
	struct fixture *f = ctx;
	struct attr a[2] = {
		{ .key = "otel.component.name", .type = ATTR_STRING, .s = "exp/0" },
		{ .key = SC_ERROR_TYPE, .type = ATTR_STRING, .s = "queue_full" },
	};

	assert_int_equal(metrics__observe(m, &exported_desc, f->self, a, 1, 1234567890123LL), 0);
	assert_int_equal(metrics__observe(m, &exported_desc, f->self, a, 2, 0), 0);
	assert_int_equal(metrics__observe(m, &queue_desc, f->self, a, 1, -3), 0);
}

static struct resource *mk_res(const char *service, int64_t pid)
{
	struct resource *r = resource__new();

	assert_non_null(r);
	assert_int_equal(resource__set_str(r, SC_SERVICE_NAME, service), 0);
	assert_int_equal(resource__set_int(r, SC_PROCESS_PID, pid), 0);
	return r;
}

static void measure(struct fixture *f, struct resource *r, enum span_kind kind, uint64_t dur,
		    const char *const *kv, bool exported)
{
	struct span *s = span__new();

	assert_non_null(s);
	span__set_resource(s, r);
	s->kind = kind;
	s->start_ns = f->t;
	s->end_ns = f->t + dur;
	for (; kv[0]; kv += 2) {
		/* Integer attributes are written "#123". */
		if (kv[1][0] == '#')
			assert_int_equal(span__set_int(s, kv[0], strtoll(kv[1] + 1, NULL, 10)), 0);
		else
			assert_int_equal(span__set_str(s, kv[0], kv[1], strlen(kv[1])), 0);
	}
	metrics__record_span(f->m, s, exported);
	span__free(s);
}

#define KV(...) ((const char *const[]){ __VA_ARGS__, NULL })

/* Three processes' calls and gospan's own counters, collected under temporality T. */
static struct fixture *build(enum metric_temporality t)
{
	struct fixture *f = calloc(1, sizeof(*f));
	struct timespec ts;

	assert_non_null(f);
	clock_gettime(CLOCK_REALTIME, &ts);
	f->t = (uint64_t)ts.tv_sec * SEC + (uint64_t)ts.tv_nsec + SEC;
	f->shop = mk_res("shop", 101);
	f->cart = mk_res("cart", 102);
	f->self = mk_res("gospan", 1);
	f->m = metrics__new(&(struct metrics_opts){
		.temporality = t,
		.exemplars = METRIC_EXEMPLARS_TRACE_BASED,
		.cardinality_limit = 3,
		.observe = observe,
		.observe_ctx = f,
	});
	assert_non_null(f->m);
	measure(f, f->shop, SPAN_KIND_SERVER, 5 * MS,
		KV(SC_HTTP_REQUEST_METHOD, "GET", SC_URL_SCHEME, "http", SC_HTTP_ROUTE,
		   "/items/{id}", SC_HTTP_RESPONSE_STATUS_CODE, "#200", SC_URL_PATH, "/items/1"),
		true);
	measure(f, f->shop, SPAN_KIND_SERVER, 80 * MS,
		KV(SC_HTTP_REQUEST_METHOD, "GET", SC_URL_SCHEME, "http", SC_HTTP_ROUTE,
		   "/items/{id}", SC_HTTP_RESPONSE_STATUS_CODE, "#200"),
		true);
	measure(f, f->shop, SPAN_KIND_SERVER, 12 * SEC,
		KV(SC_HTTP_REQUEST_METHOD, "GET", SC_URL_SCHEME, "http", SC_HTTP_ROUTE,
		   "/items/{id}", SC_HTTP_RESPONSE_STATUS_CODE, "#200"),
		false);
	measure(f, f->shop, SPAN_KIND_SERVER, 30 * MS,
		KV(SC_HTTP_REQUEST_METHOD, "POST", SC_URL_SCHEME, "http", SC_HTTP_ROUTE, "/cart",
		   SC_HTTP_RESPONSE_STATUS_CODE, "#503", SC_ERROR_TYPE, "503"),
		false);
	/* Past the limit of 3: the overflow set, a bool attribute. */
	measure(f, f->shop, SPAN_KIND_SERVER, 1 * MS,
		KV(SC_HTTP_REQUEST_METHOD, "PUT", SC_HTTP_ROUTE, "/x", SC_HTTP_RESPONSE_STATUS_CODE,
		   "#200"),
		true);
	measure(f, f->shop, SPAN_KIND_CLIENT, 2 * MS,
		KV(SC_HTTP_REQUEST_METHOD, "GET", SC_SERVER_ADDRESS, "pay", SC_SERVER_PORT, "#9000",
		   SC_HTTP_RESPONSE_STATUS_CODE, "#200", SC_URL_FULL, "http://pay:9000/"),
		false);
	measure(f, f->shop, SPAN_KIND_CLIENT, 3 * MS,
		KV(SC_DB_SYSTEM_NAME, "postgresql", SC_DB_OPERATION_NAME, "SELECT",
		   SC_DB_COLLECTION_NAME, "users", SC_DB_QUERY_TEXT, "SELECT 1"),
		true);
	measure(f, f->cart, SPAN_KIND_SERVER, 7 * MS,
		KV(SC_RPC_SYSTEM, "grpc", SC_RPC_SERVICE, "cart.Cart", SC_RPC_METHOD, "Add",
		   SC_RPC_GRPC_STATUS_CODE, "#0"),
		true);
	f->b = metrics__collect(f->m, f->t + 60 * SEC, false);
	assert_non_null(f->b);
	return f;
}

static void fixture_free(struct fixture *f)
{
	metrics_batch__free(f->b);
	metrics__free(f->m);
	resource__free(f->shop);
	resource__free(f->cart);
	resource__free(f->self);
	free(f);
}

static int setup_cumulative(void **state)
{
	*state = build(METRIC_TEMPORALITY_CUMULATIVE);
	return 0;
}

static int setup_delta(void **state)
{
	*state = build(METRIC_TEMPORALITY_DELTA);
	return 0;
}

static int teardown(void **state)
{
	fixture_free(*state);
	return 0;
}

/* ---- protobuf, decoded by protobuf-c ------------------------------------------------------ */

static void check_attrs(pb_key_value *const *kvs, size_t n, const struct attr *attrs, size_t na)
{
	assert_int_equal(n, na);
	for (size_t i = 0; i < n; i++) {
		const Opentelemetry__Proto__Common__V1__AnyValue *v = kvs[i]->value;

		assert_string_equal(kvs[i]->key, attrs[i].key);
		assert_non_null(v);
		switch (attrs[i].type) {
		case ATTR_STRING:
			assert_int_equal(v->value_case, VALUE_CASE(STRING_VALUE));
			assert_string_equal(v->string_value, attrs[i].s);
			break;
		case ATTR_INT:
			assert_int_equal(v->value_case, VALUE_CASE(INT_VALUE));
			assert_int_equal(v->int_value, attrs[i].i);
			break;
		case ATTR_BOOL:
			assert_int_equal(v->value_case, VALUE_CASE(BOOL_VALUE));
			assert_int_equal(v->bool_value, attrs[i].b);
			break;
		case ATTR_DOUBLE:
			fail_msg("no double attribute expected");
		}
	}
}

static void check_hist_point(const pb_hist_point *dp, const struct metric_point *p)
{
	const struct metric_desc *d = p->desc;

	check_attrs(dp->attributes, dp->n_attributes, p->attrs, p->nattrs);
	assert_int_equal(dp->start_time_unix_nano, p->start_ns);
	assert_int_equal(dp->time_unix_nano, p->time_ns);
	assert_int_equal(dp->count, p->count);
	assert_true(p->count > 0);
	assert_int_equal(dp->sum_present_case, PB(HISTOGRAM_DATA_POINT__SUM_PRESENT_SUM));
	assert_true(dp->sum == p->sum);
	assert_int_equal(dp->min_present_case, PB(HISTOGRAM_DATA_POINT__MIN_PRESENT_MIN));
	assert_true(dp->min == p->min);
	assert_int_equal(dp->max_present_case, PB(HISTOGRAM_DATA_POINT__MAX_PRESENT_MAX));
	assert_true(dp->max == p->max);
	assert_int_equal(dp->n_explicit_bounds, d->nbounds);
	assert_int_equal(dp->n_bucket_counts, d->nbounds + 1);
	for (size_t i = 0; i < d->nbounds; i++)
		assert_true(dp->explicit_bounds[i] == d->bounds[i]);
	for (size_t i = 0; i <= d->nbounds; i++)
		assert_int_equal(dp->bucket_counts[i], p->buckets[i]);
	assert_int_equal(dp->n_exemplars, p->nexemplars);
	for (size_t i = 0; i < p->nexemplars; i++) {
		const Opentelemetry__Proto__Metrics__V1__Exemplar *x = dp->exemplars[i];

		assert_int_equal(x->value_case, PB(EXEMPLAR__VALUE_AS_DOUBLE));
		assert_true(x->as_double == p->exemplars[i].value);
		assert_int_equal(x->time_unix_nano, p->exemplars[i].time_ns);
		assert_int_equal(x->trace_id.len, 16);
		assert_memory_equal(x->trace_id.data, p->exemplars[i].trace_id, 16);
		assert_int_equal(x->span_id.len, 8);
		assert_memory_equal(x->span_id.data, p->exemplars[i].span_id, 8);
		assert_int_equal(x->n_filtered_attributes, 0);
	}
}

/* The request holds B's points in B's order: one ResourceMetrics per resource, one Metric each. */
static void check_request(const pb_request *req, const struct metrics_batch *b)
{
	size_t k = 0, nhist = 0, nsum = 0;

	for (size_t r = 0; r < req->n_resource_metrics; r++) {
		const pb_resource_metrics *rm = req->resource_metrics[r];
		const struct resource *res = b->points[k].res;
		const pb_scope_metrics *sm;

		/* A resource is one ResourceMetrics: the next one is another. */
		if (r)
			assert_ptr_not_equal(res, b->points[k - 1].res);
		assert_non_null(rm->resource);
		check_attrs(rm->resource->attributes, rm->resource->n_attributes, res->attrs,
			    res->nattrs);
		assert_int_equal(rm->n_scope_metrics, 1);
		sm = rm->scope_metrics[0];
		assert_non_null(sm->scope);
		assert_string_equal(sm->scope->name, GOSPAN_NAME);
		assert_string_equal(sm->scope->version, GOSPAN_VERSION);
		for (size_t m = 0; m < sm->n_metrics; m++) {
			const pb_metric *pm = sm->metrics[m];
			const struct metric_desc *d = b->points[k].desc;
			size_t n;

			/* One Metric per instrument: no name twice in a scope. */
			for (size_t o = 0; o < m; o++)
				assert_string_not_equal(sm->metrics[o]->name, pm->name);
			assert_string_equal(pm->name, d->name);
			assert_string_equal(pm->description, d->description);
			assert_string_equal(pm->unit, d->unit);
			if (d->kind == METRIC_HISTOGRAM) {
				assert_int_equal(pm->data_case, PB(METRIC__DATA_HISTOGRAM));
				assert_int_equal(pm->histogram->aggregation_temporality,
						 TEMPORALITY(b->points[k].delta));
				n = pm->histogram->n_data_points;
				for (size_t i = 0; i < n; i++, k++) {
					const struct metric_point *p = &b->points[k];

					assert_ptr_equal(p->desc, d);
					assert_ptr_equal(p->res, res);
					check_hist_point(pm->histogram->data_points[i], p);
				}
				nhist++;
				continue;
			}
			assert_int_equal(pm->data_case, PB(METRIC__DATA_SUM));
			assert_int_equal(pm->sum->is_monotonic, d->monotonic);
			assert_int_equal(pm->sum->aggregation_temporality,
					 TEMPORALITY(b->points[k].delta));
			n = pm->sum->n_data_points;
			for (size_t i = 0; i < n; i++, k++) {
				const pb_number_point *dp = pm->sum->data_points[i];

				assert_ptr_equal(b->points[k].desc, d);
				check_attrs(dp->attributes, dp->n_attributes, b->points[k].attrs,
					    b->points[k].nattrs);
				assert_int_equal(dp->value_case,
						 PB(NUMBER_DATA_POINT__VALUE_AS_INT));
				assert_int_equal(dp->as_int, b->points[k].value);
				assert_int_equal(dp->start_time_unix_nano, b->points[k].start_ns);
				assert_int_equal(dp->time_unix_nano, b->points[k].time_ns);
			}
			nsum++;
		}
	}
	assert_int_equal(k, b->n);
	assert_int_equal(nhist, 4); /* shop: HTTP server, client, data store; cart: RPC server */
	assert_int_equal(nsum, 2);
}

static pb_request *encode_decode(const struct metrics_batch *b)
{
	uint8_t *buf = NULL;
	size_t len = 0;
	pb_request *req;

	assert_int_equal(otlp__encode_metrics(b, &buf, &len), 0);
	assert_true(len > 0);
	req = request_(unpack)(NULL, len, buf);
	assert_non_null(req);
	free(buf);
	return req;
}

static void test_otlp_metrics__cumulative_round_trip(void **state)
{
	struct fixture *f = *state;
	pb_request *req;

	assert_int_equal(f->b->n, 9);
	req = encode_decode(f->b);
	assert_int_equal(req->n_resource_metrics, 3);
	check_request(req, f->b);

	/* Literal checks, so that a mistake shared by the store and the encoder still shows. */
	for (size_t r = 0; r < req->n_resource_metrics; r++) {
		const pb_scope_metrics *sm = req->resource_metrics[r]->scope_metrics[0];

		for (size_t m = 0; m < sm->n_metrics; m++) {
			const pb_metric *pm = sm->metrics[m];
			const pb_hist_point *dp = NULL;

			if (!strcmp(pm->name, "http.server.request.duration")) {
				assert_int_equal(pm->histogram->aggregation_temporality, 2);
				assert_string_equal(pm->unit, "s");
				assert_int_equal(pm->histogram->n_data_points, 3);
				for (size_t i = 0; i < 3; i++)
					if (pm->histogram->data_points[i]->count == 3)
						dp = pm->histogram->data_points[i];
				assert_non_null(dp);
				/* 5 ms on the first bound, 80 ms in (0.075, 0.1], 12 s past 10. */
				assert_int_equal(dp->n_bucket_counts, 15);
				assert_int_equal(dp->bucket_counts[0], 1);
				assert_int_equal(dp->bucket_counts[5], 1);
				assert_int_equal(dp->bucket_counts[14], 1);
				assert_true(dp->explicit_bounds[0] == 0.005);
				assert_true(dp->explicit_bounds[13] == 10);
				assert_true(dp->min == 0.005 && dp->max == 12);
				assert_true(dp->sum > 12.084999 && dp->sum < 12.085001);
				/* Exported spans only: 5 ms and 80 ms, not the 12 s one. */
				assert_int_equal(dp->n_exemplars, 2);
				assert_true(dp->exemplars[0]->as_double == 0.005);
				assert_true(dp->exemplars[1]->as_double == 0.08);
				assert_int_equal(dp->start_time_unix_nano, f->t);
				assert_int_equal(dp->time_unix_nano, f->t + 60 * SEC);
			} else if (!strcmp(pm->name, "test.span.exported")) {
				assert_true(pm->sum->is_monotonic);
				assert_int_equal(pm->sum->aggregation_temporality, 2);
				/* The points' order is the store's hash order: found by attributes. */
				assert_int_equal(pm->sum->n_data_points, 2);
				assert_int_equal(pm->sum->data_points[0]->n_attributes == 1 ?
							 pm->sum->data_points[0]->as_int :
							 pm->sum->data_points[1]->as_int,
						 1234567890123LL);
			} else if (!strcmp(pm->name, "test.queue.size")) {
				assert_false(pm->sum->is_monotonic);
				assert_int_equal(pm->sum->data_points[0]->as_int, -3);
			} else if (!strcmp(pm->name, "rpc.server.duration")) {
				assert_string_equal(pm->unit, "ms");
				dp = pm->histogram->data_points[0];
				assert_int_equal(dp->n_bucket_counts, 16);
			}
		}
	}
	request_(free_unpacked)(req, NULL);
}

/* Delta: histograms and the counter as deltas, the up-down counter cumulative all the same. */
static void test_otlp_metrics__delta_temporality(void **state)
{
	struct fixture *f = *state;
	pb_request *req;
	size_t seen = 0;

	req = encode_decode(f->b);
	check_request(req, f->b);
	for (size_t r = 0; r < req->n_resource_metrics; r++) {
		const pb_scope_metrics *sm = req->resource_metrics[r]->scope_metrics[0];

		for (size_t m = 0; m < sm->n_metrics; m++) {
			const pb_metric *pm = sm->metrics[m];
			int t = pm->data_case == PB(METRIC__DATA_HISTOGRAM) ?
					pm->histogram->aggregation_temporality :
					pm->sum->aggregation_temporality;

			assert_int_equal(t, strcmp(pm->name, "test.queue.size") ? 1 : 2);
			seen++;
		}
	}
	assert_int_equal(seen, 6);
	request_(free_unpacked)(req, NULL);
}

static const cJSON *member(const cJSON *o, const char *name)
{
	const cJSON *m = cJSON_GetObjectItemCaseSensitive(o, name);

	if (!m)
		fail_msg("no member '%s'", name);
	return m;
}

/* The first element of array member NAME of O. */
static const cJSON *first(const cJSON *o, const char *name)
{
	const cJSON *e = cJSON_GetArrayItem(member(o, name), 0);

	if (!e)
		fail_msg("member '%s' is an empty array", name);
	return e;
}

/* A histogram point without measurements has no min and max (their oneofs unset). */
static void test_otlp_metrics__empty_point_and_batch(void **state)
{
	struct resource *r = mk_res("shop", 101);
	struct metric_point p = {
		.desc = &metric_instruments[METRIC_DB_CLIENT],
		.res = r,
		.start_ns = 1,
		.time_ns = 2,
	};
	struct metrics_batch b = { .n = 1, .cap = 1, .points = &p };
	struct metrics_batch none = {};
	const cJSON *sm, *pt;
	const pb_hist_point *dp;
	uint8_t *buf = NULL;
	char *json = NULL;
	size_t len;
	pb_request *req;
	cJSON *root;

	(void)state;
	req = encode_decode(&b);
	dp = req->resource_metrics[0]->scope_metrics[0]->metrics[0]->histogram->data_points[0];
	assert_int_equal(dp->count, 0);
	assert_int_equal(dp->min_present_case, PB(HISTOGRAM_DATA_POINT__MIN_PRESENT__NOT_SET));
	assert_int_equal(dp->max_present_case, PB(HISTOGRAM_DATA_POINT__MAX_PRESENT__NOT_SET));
	assert_int_equal(dp->n_bucket_counts, 10);
	assert_int_equal(dp->n_exemplars, 0);
	request_(free_unpacked)(req, NULL);

	assert_int_equal(otlp__encode_metrics_json(&b, &json, &len), 0);
	root = cJSON_Parse(json);
	assert_non_null(root);
	sm = first(first(root, "resourceMetrics"), "scopeMetrics");
	pt = first(member(first(sm, "metrics"), "histogram"), "dataPoints");
	assert_null(cJSON_GetObjectItem(pt, "min"));
	assert_null(cJSON_GetObjectItem(pt, "max"));
	assert_string_equal(member(pt, "count")->valuestring, "0");
	cJSON_Delete(root);
	free(json);

	assert_int_equal(otlp__encode_metrics(&none, &buf, &len), -EINVAL);
	assert_int_equal(otlp__encode_metrics_json(&none, &json, &len), -EINVAL);
	resource__free(r);
}

/* ---- OTLP/JSON ---------------------------------------------------------------------------- */

/* Every member name in the tree is lowerCamelCase, as the OTLP/JSON mapping writes them. */
static void assert_camel_case(const cJSON *o)
{
	for (const cJSON *c = o->child; c; c = c->next) {
		if (c->string && (strchr(c->string, '_') || (c->string[0] >= 'A' &&
							    c->string[0] <= 'Z')))
			fail_msg("JSON member '%s' is not lowerCamelCase", c->string);
		assert_camel_case(c);
	}
}

static void hex(char *out, const uint8_t *b, size_t n)
{
	for (size_t i = 0; i < n; i++)
		sprintf(out + 2 * i, "%02x", b[i]);
}

static void test_otlp_metrics__json_mapping(void **state)
{
	struct fixture *f = *state;
	const cJSON *rms, *rm, *ms, *m, *dps, *dp, *x, *bc, *attrs;
	size_t k = 0, len = 0;
	char *json = NULL, want[64], id[33];
	cJSON *root;

	assert_int_equal(otlp__encode_metrics_json(f->b, &json, &len), 0);
	assert_int_equal(strlen(json), len);
	root = cJSON_Parse(json);
	assert_non_null(root);
	assert_camel_case(root);
	rms = member(root, "resourceMetrics");
	assert_int_equal(cJSON_GetArraySize(rms), 3);
	cJSON_ArrayForEach(rm, rms)
	{
		const struct resource *res = f->b->points[k].res;
		const cJSON *sm = cJSON_GetArrayItem(member(rm, "scopeMetrics"), 0);

		attrs = member(member(rm, "resource"), "attributes");
		assert_int_equal(cJSON_GetArraySize(attrs), res->nattrs);
		/* service.name, then process.pid as an int64: a string. */
		assert_string_equal(member(cJSON_GetArrayItem(attrs, 0), "key")->valuestring,
				    SC_SERVICE_NAME);
		snprintf(want, sizeof(want), "%" PRId64, res->attrs[1].i);
		assert_string_equal(member(member(cJSON_GetArrayItem(attrs, 1), "value"),
					   "intValue")
					    ->valuestring,
				    want);
		assert_string_equal(member(member(sm, "scope"), "name")->valuestring, GOSPAN_NAME);
		ms = member(sm, "metrics");
		cJSON_ArrayForEach(m, ms)
		{
			const struct metric_desc *d = f->b->points[k].desc;
			bool hist = d->kind == METRIC_HISTOGRAM;
			const cJSON *data = member(m, hist ? "histogram" : "sum");

			assert_string_equal(member(m, "name")->valuestring, d->name);
			assert_string_equal(member(m, "unit")->valuestring, d->unit);
			assert_string_equal(member(m, "description")->valuestring, d->description);
			/* An enum is its number in OTLP/JSON. */
			assert_true(cJSON_IsNumber(member(data, "aggregationTemporality")));
			assert_int_equal(member(data, "aggregationTemporality")->valueint, 2);
			if (!hist)
				assert_int_equal(cJSON_IsTrue(member(data, "isMonotonic")),
						 d->monotonic);
			dps = member(data, "dataPoints");
			cJSON_ArrayForEach(dp, dps)
			{
				const struct metric_point *p = &f->b->points[k++];

				assert_ptr_equal(p->desc, d);
				snprintf(want, sizeof(want), "%" PRIu64, p->start_ns);
				assert_string_equal(member(dp, "startTimeUnixNano")->valuestring,
						    want);
				snprintf(want, sizeof(want), "%" PRIu64, p->time_ns);
				assert_string_equal(member(dp, "timeUnixNano")->valuestring, want);
				assert_int_equal(cJSON_GetArraySize(member(dp, "attributes")),
						 p->nattrs);
				if (!hist) {
					snprintf(want, sizeof(want), "%" PRId64, p->value);
					assert_string_equal(member(dp, "asInt")->valuestring, want);
					continue;
				}
				snprintf(want, sizeof(want), "%" PRIu64, p->count);
				assert_string_equal(member(dp, "count")->valuestring, want);
				assert_true(member(dp, "sum")->valuedouble == p->sum);
				assert_true(member(dp, "min")->valuedouble == p->min);
				assert_true(member(dp, "max")->valuedouble == p->max);
				bc = member(dp, "bucketCounts");
				assert_int_equal(cJSON_GetArraySize(bc), d->nbounds + 1);
				for (size_t i = 0; i <= d->nbounds; i++) {
					snprintf(want, sizeof(want), "%" PRIu64, p->buckets[i]);
					assert_string_equal(cJSON_GetArrayItem(bc, i)->valuestring,
							    want);
				}
				assert_int_equal(cJSON_GetArraySize(member(dp, "explicitBounds")),
						 d->nbounds);
				assert_int_equal(cJSON_GetArraySize(member(dp, "exemplars")),
						 p->nexemplars);
				for (size_t i = 0; i < p->nexemplars; i++) {
					x = cJSON_GetArrayItem(member(dp, "exemplars"), i);
					hex(id, p->exemplars[i].trace_id, 16);
					assert_string_equal(member(x, "traceId")->valuestring, id);
					hex(id, p->exemplars[i].span_id, 8);
					assert_string_equal(member(x, "spanId")->valuestring, id);
					snprintf(want, sizeof(want), "%" PRIu64,
						 p->exemplars[i].time_ns);
					assert_string_equal(member(x, "timeUnixNano")->valuestring,
							    want);
					assert_true(member(x, "asDouble")->valuedouble ==
						    p->exemplars[i].value);
				}
			}
		}
	}
	assert_int_equal(k, f->b->n);
	/* The overflow set's attribute is a bool; the counter's 64-bit total a string. */
	assert_non_null(strstr(json, "{\"key\":\"otel.metric.overflow\",\"value\":{\"boolValue\":"
				     "true}}"));
	assert_non_null(strstr(json, "\"asInt\":\"1234567890123\""));
	assert_non_null(strstr(json, "\"asInt\":\"-3\""));
	cJSON_Delete(root);
	free(json);
}

/* ---- the official decoder ----------------------------------------------------------------- */

/*
 * Reads an ExportMetricsServiceRequest on stdin, protobuf ("pb") or OTLP/JSON ("json": hex ids
 * turned into the base64 the generic JSON parser expects, as the OTLP specification says a
 * receiver does), and prints it canonically.
 */
static const char py_decoder[] =
	"import sys, json, base64\n"
	"from google.protobuf import json_format\n"
	"from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import "
	"ExportMetricsServiceRequest\n"
	"data = sys.stdin.buffer.read()\n"
	"req = ExportMetricsServiceRequest()\n"
	"if sys.argv[1] == 'json':\n"
	"    doc = json.loads(data)\n"
	"    def ids(o):\n"
	"        if isinstance(o, dict):\n"
	"            for k, v in o.items():\n"
	"                if k in ('traceId', 'spanId'):\n"
	"                    o[k] = base64.b64encode(bytes.fromhex(v)).decode()\n"
	"                else:\n"
	"                    ids(v)\n"
	"        elif isinstance(o, list):\n"
	"            for v in o:\n"
	"                ids(v)\n"
	"    ids(doc)\n"
	"    json_format.ParseDict(doc, req)\n"
	"else:\n"
	"    req.ParseFromString(data)\n"
	"def g(x):\n"
	"    return '%.17g' % x\n"
	"def val(v):\n"
	"    k = v.WhichOneof('value')\n"
	"    if k == 'string_value': return 's:' + v.string_value\n"
	"    if k == 'int_value': return 'i:%d' % v.int_value\n"
	"    if k == 'bool_value': return 'b:%d' % v.bool_value\n"
	"    if k == 'double_value': return 'd:' + g(v.double_value)\n"
	"    return '?:%s' % k\n"
	"def attrs(kvs):\n"
	"    return ';'.join(kv.key + '=' + val(kv.value) for kv in kvs)\n"
	"def opt(p, f):\n"
	"    return g(getattr(p, f)) if p.HasField(f) else '-'\n"
	"out = []\n"
	"for rm in req.resource_metrics:\n"
	"    out.append('R ' + attrs(rm.resource.attributes))\n"
	"    for sm in rm.scope_metrics:\n"
	"        out.append('scope %s %s' % (sm.scope.name, sm.scope.version))\n"
	"        for m in sm.metrics:\n"
	"            k = m.WhichOneof('data')\n"
	"            head = 'M %s|%s|%s ' % (m.name, m.description, m.unit)\n"
	"            if k == 'histogram':\n"
	"                out.append(head + 'hist t=%d' % m.histogram.aggregation_temporality)\n"
	"                for p in m.histogram.data_points:\n"
	"                    out.append('P %s start=%d time=%d count=%d sum=%s min=%s max=%s "
	"buckets=%s bounds=%s ex=%s' % (attrs(p.attributes), p.start_time_unix_nano, "
	"p.time_unix_nano, p.count, opt(p, 'sum'), opt(p, 'min'), opt(p, 'max'), "
	"','.join(str(c) for c in p.bucket_counts), ','.join(g(b) for b in p.explicit_bounds), "
	"';'.join('%s:%s:%d:%s' % (x.trace_id.hex(), x.span_id.hex(), x.time_unix_nano, "
	"g(x.as_double)) for x in p.exemplars)))\n"
	"            elif k == 'sum':\n"
	"                out.append(head + 'sum t=%d mono=%d' % (m.sum.aggregation_temporality, "
	"m.sum.is_monotonic))\n"
	"                for p in m.sum.data_points:\n"
	"                    out.append('N %s start=%d time=%d int=%d' % (attrs(p.attributes), "
	"p.start_time_unix_nano, p.time_unix_nano, p.as_int))\n"
	"            else:\n"
	"                out.append(head + str(k))\n"
	"sys.stdout.write('\\n'.join(out) + '\\n')\n";

static void appendf(char **p, size_t *left, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void appendf(char **p, size_t *left, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(*p, *left, fmt, ap);
	va_end(ap);
	assert_true(n >= 0 && (size_t)n < *left);
	*p += n;
	*left -= n;
}

static void dump_attrs(char **p, size_t *left, const struct attr *attrs, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		const struct attr *a = &attrs[i];

		appendf(p, left, "%s%s=", i ? ";" : "", a->key);
		if (a->type == ATTR_STRING)
			appendf(p, left, "s:%s", a->s);
		else if (a->type == ATTR_INT)
			appendf(p, left, "i:%" PRId64, a->i);
		else if (a->type == ATTR_BOOL)
			appendf(p, left, "b:%d", a->b);
		else
			appendf(p, left, "d:%.17g", a->d);
	}
}

/* What the Python decoder must print for B, written from the points that went in. */
static void expected_dump(const struct metrics_batch *b, char *out, size_t size)
{
	size_t left = size, i, j;
	char *p = out, id[33];

	for (i = 0; i < b->n; i++) {
		const struct metric_point *pt = &b->points[i];
		const struct metric_desc *d = pt->desc;

		if (!i || pt->res != b->points[i - 1].res) {
			appendf(&p, &left, "R ");
			dump_attrs(&p, &left, pt->res->attrs, pt->res->nattrs);
			appendf(&p, &left, "\nscope %s %s\n", GOSPAN_NAME, GOSPAN_VERSION);
		}
		if (!i || pt->res != b->points[i - 1].res || d != b->points[i - 1].desc) {
			appendf(&p, &left, "M %s|%s|%s ", d->name, d->description, d->unit);
			if (d->kind == METRIC_HISTOGRAM)
				appendf(&p, &left, "hist t=%d\n", pt->delta ? 1 : 2);
			else
				appendf(&p, &left, "sum t=%d mono=%d\n", pt->delta ? 1 : 2,
					d->monotonic);
		}
		if (d->kind == METRIC_SUM) {
			appendf(&p, &left, "N ");
			dump_attrs(&p, &left, pt->attrs, pt->nattrs);
			appendf(&p, &left, " start=%" PRIu64 " time=%" PRIu64 " int=%" PRId64 "\n",
				pt->start_ns, pt->time_ns, pt->value);
			continue;
		}
		appendf(&p, &left, "P ");
		dump_attrs(&p, &left, pt->attrs, pt->nattrs);
		appendf(&p, &left,
			" start=%" PRIu64 " time=%" PRIu64 " count=%" PRIu64
			" sum=%.17g min=%.17g max=%.17g buckets=",
			pt->start_ns, pt->time_ns, pt->count, pt->sum, pt->min, pt->max);
		for (j = 0; j <= d->nbounds; j++)
			appendf(&p, &left, "%s%" PRIu64, j ? "," : "", pt->buckets[j]);
		appendf(&p, &left, " bounds=");
		for (j = 0; j < d->nbounds; j++)
			appendf(&p, &left, "%s%.17g", j ? "," : "", d->bounds[j]);
		appendf(&p, &left, " ex=");
		for (j = 0; j < pt->nexemplars; j++) {
			const struct metric_exemplar *x = &pt->exemplars[j];

			hex(id, x->trace_id, 16);
			appendf(&p, &left, "%s%s:", j ? ";" : "", id);
			hex(id, x->span_id, 8);
			appendf(&p, &left, "%s:%" PRIu64 ":%.17g", id, x->time_ns, x->value);
		}
		appendf(&p, &left, "\n");
	}
}

/* Runs the official decoder in MODE on LEN bytes of BUF; its output, to free. */
static char *python_decode(const char *mode, const void *buf, size_t len)
{
	char script[4200], outpath[4200], cmd[8600];
	FILE *py;
	char *got;

	snprintf(script, sizeof(script), "%s/otlp_metrics_decode.py", test_data_dir());
	snprintf(outpath, sizeof(outpath), "%s/otlp_metrics_%s.txt", test_data_dir(), mode);
	py = fopen(script, "w");
	assert_non_null(py);
	assert_int_equal(fputs(py_decoder, py) >= 0, 1);
	assert_int_equal(fclose(py), 0);
	snprintf(cmd, sizeof(cmd), "python3 '%s' %s > '%s'", script, mode, outpath);
	py = popen(cmd, "w");
	assert_non_null(py);
	assert_int_equal(fwrite(buf, 1, len, py), len);
	assert_int_equal(pclose(py), 0); /* the official decoder took the bytes */
	got = test_read_file(outpath, NULL);
	assert_non_null(got);
	return got;
}

static void test_otlp_metrics__official_python_decoder(void **state)
{
	struct fixture *f = *state;
	static char want[32768];
	uint8_t *buf = NULL;
	char *json = NULL, *got;
	size_t len = 0;

	if (test_sh("python3 -c 'import opentelemetry.proto.collector.metrics.v1."
		    "metrics_service_pb2, google.protobuf.json_format' >/dev/null 2>&1"))
		TEST_SKIP("python3 or its opentelemetry-proto package is missing "
			  "(python3 -m pip install opentelemetry-proto)");
	expected_dump(f->b, want, sizeof(want));

	assert_int_equal(otlp__encode_metrics(f->b, &buf, &len), 0);
	got = python_decode("pb", buf, len);
	assert_string_equal(got, want);
	free(got);
	free(buf);

	assert_int_equal(otlp__encode_metrics_json(f->b, &json, &len), 0);
	got = python_decode("json", json, len);
	assert_string_equal(got, want);
	free(got);
	free(json);
}

static void test_otlp_metrics__official_python_decoder_delta(void **state)
{
	test_otlp_metrics__official_python_decoder(state);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_otlp_metrics__cumulative_round_trip,
						setup_cumulative, teardown),
		cmocka_unit_test_setup_teardown(test_otlp_metrics__delta_temporality, setup_delta,
						teardown),
		cmocka_unit_test(test_otlp_metrics__empty_point_and_batch),
		cmocka_unit_test_setup_teardown(test_otlp_metrics__json_mapping, setup_cumulative,
						teardown),
		cmocka_unit_test_setup_teardown(test_otlp_metrics__official_python_decoder,
						setup_cumulative, teardown),
		cmocka_unit_test_setup_teardown(test_otlp_metrics__official_python_decoder_delta,
						setup_delta, teardown),
	};

	log_set_level(TEST_QUIET_LEVEL);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
