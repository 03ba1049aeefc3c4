// SPDX-License-Identifier: MIT
/*
 * Spans to the bytes of one ExportTraceServiceRequest. The protobuf-c message tree only points
 * at the spans' own ids and strings, nothing is copied: each kind of message is allocated once
 * per call as one array, packed, and the arrays are freed, so an export costs a handful of
 * allocations however many spans and attributes it carries.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "opentelemetry/proto/collector/trace/v1/trace_service.pb-c.h"

#include "otlp.h"
#include "span.h"
#include "version.h"

typedef Opentelemetry__Proto__Collector__Trace__V1__ExportTraceServiceRequest pb_request;
typedef Opentelemetry__Proto__Trace__V1__ResourceSpans pb_resource_spans;
typedef Opentelemetry__Proto__Trace__V1__ScopeSpans pb_scope_spans;
typedef Opentelemetry__Proto__Trace__V1__Span pb_span;
typedef Opentelemetry__Proto__Trace__V1__Status pb_status;
typedef Opentelemetry__Proto__Resource__V1__Resource pb_resource;
typedef Opentelemetry__Proto__Common__V1__InstrumentationScope pb_scope;
typedef Opentelemetry__Proto__Common__V1__KeyValue pb_key_value;
typedef Opentelemetry__Proto__Common__V1__AnyValue pb_any_value;

/* protobuf-c's names spell out the whole package; these keep the code inside 100 columns. */
#define VALUE_CASE(x) OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__VALUE_##x
#define TRACE_FLAGS_MASK OPENTELEMETRY__PROTO__TRACE__V1__SPAN_FLAGS__SPAN_FLAGS_TRACE_FLAGS_MASK
#define REQUEST_INIT OPENTELEMETRY__PROTO__COLLECTOR__TRACE__V1__EXPORT_TRACE_SERVICE_REQUEST__INIT
#define request_(fn) opentelemetry__proto__collector__trace__v1__export_trace_service_request__##fn

/* The arrays behind one request; every pointer is freed in one place whatever was filled. */
struct tree {
	const struct resource **res; /* distinct resources, in order of first appearance */
	size_t *group;		     /* per span: index into res */
	size_t *fill;		     /* per resource: spans placed so far */
	pb_resource_spans *rs;
	pb_resource_spans **rs_ptrs;
	pb_resource *pres;
	pb_scope_spans *ss;
	pb_scope_spans **ss_ptrs;
	pb_span *sp;
	pb_span **sp_ptrs; /* grouped by resource, each group in the order given */
	pb_status *st;
	pb_key_value *kv;
	pb_key_value **kv_ptrs;
	pb_any_value *av;
	size_t nkv; /* key-values handed out so far */
};

static void tree_free(struct tree *t)
{
	free(t->res);
	free(t->group);
	free(t->fill);
	free(t->rs);
	free(t->rs_ptrs);
	free(t->pres);
	free(t->ss);
	free(t->ss_ptrs);
	free(t->sp);
	free(t->sp_ptrs);
	free(t->st);
	free(t->kv);
	free(t->kv_ptrs);
	free(t->av);
}

/*
 * Points the next key-values of the tree at ATTRS and returns where they start. Attributes the
 * model cannot express (no key, unknown type) are left out and counted in *DROPPED, which is
 * what OTLP's dropped_attributes_count is for, rather than failing the whole batch.
 */
static pb_key_value **put_attrs(struct tree *t, const struct attr *attrs, size_t n, size_t *count,
				uint32_t *dropped)
{
	pb_key_value **start = t->kv_ptrs + t->nkv;
	size_t i;

	*count = 0;
	*dropped = 0;
	for (i = 0; i < n; i++) {
		const struct attr *a = &attrs[i];
		pb_key_value *kv = &t->kv[t->nkv];
		pb_any_value *av = &t->av[t->nkv];

		opentelemetry__proto__common__v1__any_value__init(av);
		switch (a->type) {
		case ATTR_STRING:
			av->value_case = VALUE_CASE(STRING_VALUE);
			av->string_value = (char *)(a->s ? a->s : "");
			break;
		case ATTR_INT:
			av->value_case = VALUE_CASE(INT_VALUE);
			av->int_value = a->i;
			break;
		case ATTR_BOOL:
			av->value_case = VALUE_CASE(BOOL_VALUE);
			av->bool_value = a->b;
			break;
		case ATTR_DOUBLE:
			av->value_case = VALUE_CASE(DOUBLE_VALUE);
			av->double_value = a->d;
			break;
		default:
			(*dropped)++;
			continue;
		}
		if (!a->key) {
			(*dropped)++;
			continue;
		}
		opentelemetry__proto__common__v1__key_value__init(kv);
		kv->key = (char *)a->key;
		kv->value = av;
		t->kv_ptrs[t->nkv++] = kv;
		(*count)++;
	}
	return start;
}


static void put_span(struct tree *t, size_t i, const struct span *s)
{
	pb_span *p = &t->sp[i];
	uint32_t dropped;

	opentelemetry__proto__trace__v1__span__init(p);
	p->trace_id.data = (uint8_t *)s->trace_id;
	p->trace_id.len = sizeof(s->trace_id);
	p->span_id.data = (uint8_t *)s->span_id;
	p->span_id.len = sizeof(s->span_id);
	/* A root span has no parent_span_id at all; eight zero bytes would be an invalid id. */
	if (!span__id_is_zero(s->parent_span_id, sizeof(s->parent_span_id))) {
		p->parent_span_id.data = (uint8_t *)s->parent_span_id;
		p->parent_span_id.len = sizeof(s->parent_span_id);
	}
	/*
	 * The span model holds the W3C flags byte only; the bits above it mean something else in
	 * OTLP (whether the parent was remote), which the model does not know.
	 */
	p->flags = s->flags & TRACE_FLAGS_MASK;
	/* OTLP's SPAN_FLAGS_CONTEXT_HAS_IS_REMOTE (bit 8) and _IS_REMOTE (bit 9). */
	if (s->parent_known)
		p->flags |= 0x100 | (s->remote_parent ? 0x200 : 0);
	if (s->trace_state)
		p->trace_state = (char *)s->trace_state;
	p->name = (char *)(s->name ? s->name : "");
	p->kind = (Opentelemetry__Proto__Trace__V1__Span__SpanKind)s->kind;
	p->start_time_unix_nano = s->start_ns;
	p->end_time_unix_nano = s->end_ns;
	p->attributes = put_attrs(t, s->attrs, s->nattrs, &p->n_attributes, &dropped);
	p->dropped_attributes_count = dropped;
	/* An unset status with no message is the default: leave the field out. */
	if (s->status != SPAN_STATUS_UNSET || s->status_msg) {
		pb_status *st = &t->st[i];

		opentelemetry__proto__trace__v1__status__init(st);
		st->code = (Opentelemetry__Proto__Trace__V1__Status__StatusCode)s->status;
		st->message = (char *)(s->status_msg ? s->status_msg : "");
		p->status = st;
	}
}

/* Sizes every array from the spans and assigns each span its resource group. */
static int tree_alloc(struct tree *t, struct span *const *spans, size_t n, size_t *nres)
{
	size_t i, g, nkv = 0;

	t->res = calloc(n, sizeof(*t->res));
	t->group = calloc(n, sizeof(*t->group));
	if (!t->res || !t->group)
		return -ENOMEM;
	*nres = 0;
	for (i = 0; i < n; i++) {
		if (!spans[i])
			return -EINVAL;
		/* Linear: a batch holds a few hundred spans from a handful of processes. */
		for (g = 0; g < *nres; g++)
			if (t->res[g] == spans[i]->res)
				break;
		if (g == *nres) {
			t->res[g] = spans[i]->res;
			if (spans[i]->res)
				nkv += spans[i]->res->nattrs;
			(*nres)++;
		}
		t->group[i] = g;
		nkv += spans[i]->nattrs;
	}

	t->fill = calloc(*nres, sizeof(*t->fill));
	t->rs = calloc(*nres, sizeof(*t->rs));
	t->rs_ptrs = calloc(*nres, sizeof(*t->rs_ptrs));
	t->pres = calloc(*nres, sizeof(*t->pres));
	t->ss = calloc(*nres, sizeof(*t->ss));
	t->ss_ptrs = calloc(*nres, sizeof(*t->ss_ptrs));
	t->sp = calloc(n, sizeof(*t->sp));
	t->sp_ptrs = calloc(n, sizeof(*t->sp_ptrs));
	t->st = calloc(n, sizeof(*t->st));
	/* calloc(0) may return NULL: keep at least one so that NULL only ever means no memory. */
	t->kv = calloc(nkv ?: 1, sizeof(*t->kv));
	t->kv_ptrs = calloc(nkv ?: 1, sizeof(*t->kv_ptrs));
	t->av = calloc(nkv ?: 1, sizeof(*t->av));
	if (!t->fill || !t->rs || !t->rs_ptrs || !t->pres || !t->ss || !t->ss_ptrs || !t->sp ||
	    !t->sp_ptrs || !t->st || !t->kv || !t->kv_ptrs || !t->av)
		return -ENOMEM;
	return 0;
}

int otlp__encode(struct span *const *spans, size_t n, uint8_t **out, size_t *out_len)
{
	pb_request req = REQUEST_INIT;
	pb_scope scope = OPENTELEMETRY__PROTO__COMMON__V1__INSTRUMENTATION_SCOPE__INIT;
	struct tree t = {};
	size_t i, g, nres, size, first;
	uint8_t *buf = NULL;
	int err;

	if (!spans || !n || !out || !out_len)
		return -EINVAL;
	err = tree_alloc(&t, spans, n, &nres);
	if (err)
		goto cleanup;

	/* Every ScopeSpans names the same scope; protobuf-c only reads it, so one is shared. */
	scope.name = GOSPAN_NAME;
	scope.version = GOSPAN_VERSION;

	for (g = 0; g < nres; g++) {
		pb_resource_spans *rs = &t.rs[g];
		pb_scope_spans *ss = &t.ss[g];
		pb_resource *pr = &t.pres[g];
		uint32_t dropped;

		opentelemetry__proto__resource__v1__resource__init(pr);
		if (t.res[g]) {
			pr->attributes = put_attrs(&t, t.res[g]->attrs, t.res[g]->nattrs,
						   &pr->n_attributes, &dropped);
			pr->dropped_attributes_count = dropped;
		}
		opentelemetry__proto__trace__v1__scope_spans__init(ss);
		ss->scope = &scope;
		t.ss_ptrs[g] = ss;
		opentelemetry__proto__trace__v1__resource_spans__init(rs);
		rs->resource = pr;
		rs->n_scope_spans = 1;
		rs->scope_spans = &t.ss_ptrs[g];
		t.rs_ptrs[g] = rs;
	}
	/* Each group's spans are one run of sp_ptrs, so ScopeSpans.spans can point into it. */
	for (i = 0; i < n; i++)
		t.ss[t.group[i]].n_spans++;
	for (g = 0, first = 0; g < nres; g++) {
		t.ss[g].spans = t.sp_ptrs + first;
		first += t.ss[g].n_spans;
	}
	for (i = 0; i < n; i++) {
		g = t.group[i];
		put_span(&t, i, spans[i]);
		t.ss[g].spans[t.fill[g]++] = &t.sp[i];
	}
	req.n_resource_spans = nres;
	req.resource_spans = t.rs_ptrs;

	size = request_(get_packed_size)(&req);
	buf = malloc(size ?: 1);
	if (!buf) {
		err = -ENOMEM;
		goto cleanup;
	}
	if (request_(pack)(&req, buf) != size) {
		err = -EPROTO; /* protobuf-c disagreeing with itself: nothing the caller can fix */
		goto cleanup;
	}
	*out = buf;
	*out_len = size;
	buf = NULL;
	err = 0;
cleanup:
	free(buf);
	tree_free(&t);
	return err;
}
