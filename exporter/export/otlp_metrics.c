// SPDX-License-Identifier: MIT
/*
 * Metric points to the bytes of one ExportMetricsServiceRequest, protobuf or OTLP/JSON. A batch
 * comes once an export interval, a few thousand points at most, so the message tree is built
 * whole in one pool and packed by protobuf-c in one go; speed matters on the spans' path, not
 * here. The batch is grouped already (metrics__collect): by resource, then by instrument.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "opentelemetry/proto/collector/metrics/v1/metrics_service.pb-c.h"

#include "export/otlp.h"
#include "model/metrics.h"
#include "core/version.h"

typedef Opentelemetry__Proto__Collector__Metrics__V1__ExportMetricsServiceRequest pb_request;
typedef Opentelemetry__Proto__Metrics__V1__ResourceMetrics pb_resource_metrics;
typedef Opentelemetry__Proto__Metrics__V1__ScopeMetrics pb_scope_metrics;
typedef Opentelemetry__Proto__Metrics__V1__Metric pb_metric;
typedef Opentelemetry__Proto__Metrics__V1__Histogram pb_histogram;
typedef Opentelemetry__Proto__Metrics__V1__Sum pb_sum;
typedef Opentelemetry__Proto__Metrics__V1__HistogramDataPoint pb_hist_point;
typedef Opentelemetry__Proto__Metrics__V1__NumberDataPoint pb_number_point;
typedef Opentelemetry__Proto__Metrics__V1__Exemplar pb_exemplar;
typedef Opentelemetry__Proto__Resource__V1__Resource pb_resource;
typedef Opentelemetry__Proto__Common__V1__InstrumentationScope pb_scope;
typedef Opentelemetry__Proto__Common__V1__KeyValue pb_key_value;
typedef Opentelemetry__Proto__Common__V1__AnyValue pb_any_value;

#define PB(x) OPENTELEMETRY__PROTO__METRICS__V1__##x
#define DELTA PB(AGGREGATION_TEMPORALITY__AGGREGATION_TEMPORALITY_DELTA)
#define CUMULATIVE PB(AGGREGATION_TEMPORALITY__AGGREGATION_TEMPORALITY_CUMULATIVE)

/* Everything one request's message tree is made of, freed at once. */
struct pool {
	struct pool_block *blocks;
};

struct pool_block {
	struct pool_block *next;
	max_align_t data[];
};

static void *pool_alloc(struct pool *p, size_t n)
{
	struct pool_block *b = calloc(1, sizeof(*b) + n);

	if (!b)
		return NULL;
	b->next = p->blocks;
	p->blocks = b;
	return b->data;
}

static void pool_free(struct pool *p)
{
	struct pool_block *b, *next;

	for (b = p->blocks; b; b = next) {
		next = b->next;
		free(b);
	}
}

/* ATTRS as key-values in the pool: *OUT and the count, or -ENOMEM. */
static int key_values(struct pool *p, const struct attr *attrs, size_t n, pb_key_value ***out,
		      size_t *nout)
{
	pb_key_value **ptrs, *kv;
	pb_any_value *av;
	size_t i, k = 0;

	*nout = 0;
	if (!n)
		return 0;
	ptrs = pool_alloc(p, n * (sizeof(*ptrs) + sizeof(*kv) + sizeof(*av)));
	if (!ptrs)
		return -ENOMEM;
	kv = (pb_key_value *)(ptrs + n);
	av = (pb_any_value *)(kv + n);
	for (i = 0; i < n; i++) {
		if (!attrs[i].key || !otlp__any_value(&av[k], &attrs[i]))
			continue;
		opentelemetry__proto__common__v1__key_value__init(&kv[k]);
		kv[k].key = (char *)attrs[i].key;
		kv[k].value = &av[k];
		ptrs[k] = &kv[k];
		k++;
	}
	*out = ptrs;
	*nout = k;
	return 0;
}

static int exemplars(struct pool *p, const struct metric_point *pt, pb_hist_point *hp)
{
	pb_exemplar *x;
	size_t i;

	if (!pt->nexemplars)
		return 0;
	hp->exemplars = pool_alloc(p, pt->nexemplars * (sizeof(*hp->exemplars) + sizeof(*x)));
	if (!hp->exemplars)
		return -ENOMEM;
	x = (pb_exemplar *)(hp->exemplars + pt->nexemplars);
	for (i = 0; i < pt->nexemplars; i++) {
		const struct metric_exemplar *e = &pt->exemplars[i];

		opentelemetry__proto__metrics__v1__exemplar__init(&x[i]);
		x[i].time_unix_nano = e->time_ns;
		x[i].value_case = PB(EXEMPLAR__VALUE_AS_DOUBLE);
		x[i].as_double = e->value;
		x[i].trace_id.data = (uint8_t *)e->trace_id;
		x[i].trace_id.len = sizeof(e->trace_id);
		x[i].span_id.data = (uint8_t *)e->span_id;
		x[i].span_id.len = sizeof(e->span_id);
		hp->exemplars[i] = &x[i];
	}
	hp->n_exemplars = pt->nexemplars;
	return 0;
}

static pb_hist_point *hist_point(struct pool *p, const struct metric_point *pt)
{
	const struct metric_desc *d = pt->desc;
	pb_hist_point *hp = pool_alloc(p, sizeof(*hp));

	if (!hp)
		return NULL;
	opentelemetry__proto__metrics__v1__histogram_data_point__init(hp);
	if (key_values(p, pt->attrs, pt->nattrs, &hp->attributes, &hp->n_attributes) ||
	    exemplars(p, pt, hp))
		return NULL;
	hp->start_time_unix_nano = pt->start_ns;
	hp->time_unix_nano = pt->time_ns;
	hp->count = pt->count;
	hp->sum_present_case = PB(HISTOGRAM_DATA_POINT__SUM_PRESENT_SUM);
	hp->sum = pt->sum;
	if (pt->count) {
		hp->min_present_case = PB(HISTOGRAM_DATA_POINT__MIN_PRESENT_MIN);
		hp->min = pt->min;
		hp->max_present_case = PB(HISTOGRAM_DATA_POINT__MAX_PRESENT_MAX);
		hp->max = pt->max;
	}
	hp->n_bucket_counts = d->nbounds + 1;
	hp->bucket_counts = (uint64_t *)pt->buckets;
	hp->n_explicit_bounds = d->nbounds;
	hp->explicit_bounds = (double *)d->bounds;
	return hp;
}

static pb_number_point *number_point(struct pool *p, const struct metric_point *pt)
{
	pb_number_point *np = pool_alloc(p, sizeof(*np));

	if (!np)
		return NULL;
	opentelemetry__proto__metrics__v1__number_data_point__init(np);
	if (key_values(p, pt->attrs, pt->nattrs, &np->attributes, &np->n_attributes))
		return NULL;
	np->start_time_unix_nano = pt->start_ns;
	np->time_unix_nano = pt->time_ns;
	np->value_case = PB(NUMBER_DATA_POINT__VALUE_AS_INT);
	np->as_int = pt->value;
	return np;
}

/* The Metric of the N points at PTS, all of one instrument. */
static pb_metric *metric(struct pool *p, const struct metric_point *pts, size_t n)
{
	const struct metric_desc *d = pts->desc;
	pb_metric *m = pool_alloc(p, sizeof(*m));
	pb_histogram *h;
	pb_sum *s;
	size_t i;

	if (!m)
		return NULL;
	opentelemetry__proto__metrics__v1__metric__init(m);
	m->name = (char *)d->name;
	m->description = (char *)d->description;
	m->unit = (char *)d->unit;
	if (d->kind == METRIC_HISTOGRAM) {
		h = pool_alloc(p, sizeof(*h) + n * sizeof(*h->data_points));
		if (!h)
			return NULL;
		opentelemetry__proto__metrics__v1__histogram__init(h);
		h->aggregation_temporality = pts->delta ? DELTA : CUMULATIVE;
		h->data_points = (pb_hist_point **)(h + 1);
		for (i = 0; i < n; i++)
			if (!(h->data_points[i] = hist_point(p, &pts[i])))
				return NULL;
		h->n_data_points = n;
		m->data_case = PB(METRIC__DATA_HISTOGRAM);
		m->histogram = h;
		return m;
	}
	s = pool_alloc(p, sizeof(*s) + n * sizeof(*s->data_points));
	if (!s)
		return NULL;
	opentelemetry__proto__metrics__v1__sum__init(s);
	s->aggregation_temporality = pts->delta ? DELTA : CUMULATIVE;
	s->is_monotonic = d->monotonic;
	s->data_points = (pb_number_point **)(s + 1);
	for (i = 0; i < n; i++)
		if (!(s->data_points[i] = number_point(p, &pts[i])))
			return NULL;
	s->n_data_points = n;
	m->data_case = PB(METRIC__DATA_SUM);
	m->sum = s;
	return m;
}

/* How many points from I on share the point at I's resource (SAME_DESC: and instrument). */
static size_t run_of(const struct metrics_batch *b, size_t i, bool same_desc)
{
	size_t j = i + 1;

	while (j < b->n && b->points[j].res == b->points[i].res &&
	       (!same_desc || b->points[j].desc == b->points[i].desc))
		j++;
	return j - i;
}

static pb_resource_metrics *resource_metrics(struct pool *p, const struct metrics_batch *b,
					     size_t first, size_t n)
{
	const struct resource *r = b->points[first].res;
	pb_resource_metrics *rm = pool_alloc(p, sizeof(*rm) + sizeof(pb_scope_metrics *));
	pb_scope_metrics *sm = pool_alloc(p, sizeof(*sm));
	pb_resource *res = pool_alloc(p, sizeof(*res));
	pb_scope *scope = pool_alloc(p, sizeof(*scope));
	size_t i, k, nmetrics = 0;

	if (!rm || !sm || !res || !scope)
		return NULL;
	opentelemetry__proto__metrics__v1__resource_metrics__init(rm);
	opentelemetry__proto__metrics__v1__scope_metrics__init(sm);
	opentelemetry__proto__resource__v1__resource__init(res);
	opentelemetry__proto__common__v1__instrumentation_scope__init(scope);
	if (r && key_values(p, r->attrs, r->nattrs, &res->attributes, &res->n_attributes))
		return NULL;
	scope->name = GOSPAN_NAME;
	scope->version = GOSPAN_VERSION;
	for (i = first; i < first + n; i += run_of(b, i, true))
		nmetrics++;
	sm->metrics = pool_alloc(p, nmetrics * sizeof(*sm->metrics));
	if (!sm->metrics)
		return NULL;
	for (i = first; i < first + n; i += k) {
		k = run_of(b, i, true);
		if (!(sm->metrics[sm->n_metrics++] = metric(p, &b->points[i], k)))
			return NULL;
	}
	sm->scope = scope;
	rm->resource = res;
	rm->scope_metrics = (pb_scope_metrics **)(rm + 1);
	rm->scope_metrics[0] = sm;
	rm->n_scope_metrics = 1;
	return rm;
}

int otlp__encode_metrics(const struct metrics_batch *b, uint8_t **out, size_t *out_len)
{
	pb_request req = OPENTELEMETRY__PROTO__COLLECTOR__METRICS__V1__EXPORT_METRICS_SERVICE_REQUEST__INIT;
	struct pool p = {};
	size_t i, k, n = 0, len;
	uint8_t *buf;
	int err = -ENOMEM;

	if (!b->n)
		return -EINVAL;
	for (i = 0; i < b->n; i += run_of(b, i, false))
		n++;
	req.resource_metrics = pool_alloc(&p, n * sizeof(*req.resource_metrics));
	if (!req.resource_metrics)
		goto cleanup;
	for (i = 0; i < b->n; i += k) {
		k = run_of(b, i, false);
		req.resource_metrics[req.n_resource_metrics] = resource_metrics(&p, b, i, k);
		if (!req.resource_metrics[req.n_resource_metrics++])
			goto cleanup;
	}
	len = opentelemetry__proto__collector__metrics__v1__export_metrics_service_request__get_packed_size(
		&req);
	buf = malloc(len ? len : 1);
	if (!buf)
		goto cleanup;
	*out_len = opentelemetry__proto__collector__metrics__v1__export_metrics_service_request__pack(
		&req, buf);
	*out = buf;
	err = 0;
cleanup:
	pool_free(&p);
	return err;
}

/* ---- OTLP/JSON ---------------------------------------------------------------------------- */

static int json_point(cJSON *arr, const struct metric_point *pt)
{
	const struct metric_desc *d = pt->desc;
	cJSON *o = cJSON_CreateObject(), *a, *x;
	char num[24];
	size_t i;
	int err;

	if (!o || !cJSON_AddItemToArray(arr, o)) {
		cJSON_Delete(o);
		return -ENOMEM;
	}
	err = otlp_json__attrs(o, NULL, pt->attrs, pt->nattrs);
	err = err ?: otlp_json__u64(o, "startTimeUnixNano", pt->start_ns);
	err = err ?: otlp_json__u64(o, "timeUnixNano", pt->time_ns);
	if (err)
		return err;
	if (d->kind == METRIC_SUM) {
		snprintf(num, sizeof(num), "%lld", (long long)pt->value);
		return cJSON_AddStringToObject(o, "asInt", num) ? 0 : -ENOMEM;
	}
	err = otlp_json__u64(o, "count", pt->count);
	if (err || !cJSON_AddNumberToObject(o, "sum", pt->sum) ||
	    (pt->count && (!cJSON_AddNumberToObject(o, "min", pt->min) ||
			   !cJSON_AddNumberToObject(o, "max", pt->max))))
		return -ENOMEM;
	a = cJSON_AddArrayToObject(o, "bucketCounts");
	for (i = 0; a && i <= d->nbounds; i++) {
		snprintf(num, sizeof(num), "%llu", (unsigned long long)pt->buckets[i]);
		if (!cJSON_AddItemToArray(a, cJSON_CreateString(num)))
			return -ENOMEM;
	}
	a = a ? cJSON_AddArrayToObject(o, "explicitBounds") : NULL;
	for (i = 0; a && i < d->nbounds; i++)
		if (!cJSON_AddItemToArray(a, cJSON_CreateNumber(d->bounds[i])))
			return -ENOMEM;
	a = a ? cJSON_AddArrayToObject(o, "exemplars") : NULL;
	if (!a)
		return -ENOMEM;
	for (i = 0; i < pt->nexemplars; i++) {
		const struct metric_exemplar *e = &pt->exemplars[i];

		x = cJSON_CreateObject();
		if (!x || !cJSON_AddItemToArray(a, x)) {
			cJSON_Delete(x);
			return -ENOMEM;
		}
		err = otlp_json__u64(x, "timeUnixNano", e->time_ns);
		err = err ?: otlp_json__hex(x, "traceId", e->trace_id, sizeof(e->trace_id));
		err = err ?: otlp_json__hex(x, "spanId", e->span_id, sizeof(e->span_id));
		if (err || !cJSON_AddNumberToObject(x, "asDouble", e->value))
			return -ENOMEM;
	}
	return 0;
}

static int json_metric(cJSON *arr, const struct metric_point *pts, size_t n)
{
	const struct metric_desc *d = pts->desc;
	cJSON *m = cJSON_CreateObject(), *data, *points;
	size_t i;

	if (!m || !cJSON_AddItemToArray(arr, m)) {
		cJSON_Delete(m);
		return -ENOMEM;
	}
	if (!cJSON_AddStringToObject(m, "name", d->name) ||
	    !cJSON_AddStringToObject(m, "description", d->description) ||
	    !cJSON_AddStringToObject(m, "unit", d->unit))
		return -ENOMEM;
	data = cJSON_AddObjectToObject(m, d->kind == METRIC_HISTOGRAM ? "histogram" : "sum");
	if (!data || !cJSON_AddNumberToObject(data, "aggregationTemporality",
					      pts->delta ? DELTA : CUMULATIVE))
		return -ENOMEM;
	if (d->kind == METRIC_SUM && !cJSON_AddBoolToObject(data, "isMonotonic", d->monotonic))
		return -ENOMEM;
	points = cJSON_AddArrayToObject(data, "dataPoints");
	if (!points)
		return -ENOMEM;
	for (i = 0; i < n; i++)
		if (json_point(points, &pts[i]))
			return -ENOMEM;
	return 0;
}

static int json_resource(cJSON *rms, const struct metrics_batch *b, size_t first, size_t n)
{
	const struct resource *r = b->points[first].res;
	cJSON *rm = cJSON_CreateObject(), *res, *sms, *sm, *scope, *metrics;
	size_t i, k;

	if (!rm || !cJSON_AddItemToArray(rms, rm)) {
		cJSON_Delete(rm);
		return -ENOMEM;
	}
	res = cJSON_AddObjectToObject(rm, "resource");
	if (!res || (r && otlp_json__attrs(res, NULL, r->attrs, r->nattrs)))
		return -ENOMEM;
	sms = cJSON_AddArrayToObject(rm, "scopeMetrics");
	sm = cJSON_CreateObject();
	if (!sms || !sm || !cJSON_AddItemToArray(sms, sm)) {
		cJSON_Delete(sm);
		return -ENOMEM;
	}
	scope = cJSON_AddObjectToObject(sm, "scope");
	if (!scope || !cJSON_AddStringToObject(scope, "name", GOSPAN_NAME) ||
	    !cJSON_AddStringToObject(scope, "version", GOSPAN_VERSION))
		return -ENOMEM;
	metrics = cJSON_AddArrayToObject(sm, "metrics");
	if (!metrics)
		return -ENOMEM;
	for (i = first; i < first + n; i += k) {
		k = run_of(b, i, true);
		if (json_metric(metrics, &b->points[i], k))
			return -ENOMEM;
	}
	return 0;
}

int otlp__encode_metrics_json(const struct metrics_batch *b, char **out, size_t *out_len)
{
	cJSON *root, *rms;
	size_t i, k;
	int err = -ENOMEM;

	if (!b->n)
		return -EINVAL;
	root = cJSON_CreateObject();
	rms = root ? cJSON_AddArrayToObject(root, "resourceMetrics") : NULL;
	if (!rms)
		goto cleanup;
	for (i = 0; i < b->n; i += k) {
		k = run_of(b, i, false);
		if (json_resource(rms, b, i, k))
			goto cleanup;
	}
	err = otlp_json__print(root, out, out_len);
cleanup:
	cJSON_Delete(root);
	return err;
}
