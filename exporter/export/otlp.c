// SPDX-License-Identifier: MIT
/*
 * Spans to the bytes of one ExportTraceServiceRequest. protobuf-c encodes each span, resource
 * and scope; the three envelope messages around them (the request, ResourceSpans, ScopeSpans)
 * are only length-prefixed lists, and gospan writes those few bytes itself. That spares the
 * sizing walk protobuf-c needs before it packs a whole request (some 40 % of the encoder's
 * time, run over every attribute of every span) and the copies it makes of a batch to put each
 * envelope's length in front of it.
 *
 * A span is packed straight into the output buffer: its message tree lives on the stack for
 * as long as the pack takes and points at the span's own ids and strings, nothing is copied.
 * The buffer is sized by a bound each span's fields give cheaply (span_bound()), since the
 * exact size is what the sizing walk would have computed.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "opentelemetry/proto/collector/trace/v1/trace_service.pb-c.h"

#include "export/otlp.h"
#include "model/span.h"
#include "core/version.h"

typedef Opentelemetry__Proto__Trace__V1__Span pb_span;
typedef Opentelemetry__Proto__Trace__V1__Status pb_status;
typedef Opentelemetry__Proto__Resource__V1__Resource pb_resource;
typedef Opentelemetry__Proto__Common__V1__InstrumentationScope pb_scope;
typedef Opentelemetry__Proto__Common__V1__KeyValue pb_key_value;
typedef Opentelemetry__Proto__Common__V1__AnyValue pb_any_value;

/* protobuf-c's names spell out the whole package; these keep the code inside 100 columns. */
#define VALUE_CASE(x) OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__VALUE_##x
#define TRACE_FLAGS_MASK OPENTELEMETRY__PROTO__TRACE__V1__SPAN_FLAGS__SPAN_FLAGS_TRACE_FLAGS_MASK

/*
 * The envelope's fields, all length-delimited (wire type 2), as tag bytes: field 1 of
 * ExportTraceServiceRequest (resource_spans), fields 1 and 2 of ResourceSpans (resource,
 * scope_spans) and of ScopeSpans (scope, spans).
 */
#define TAG_RESOURCE_SPANS 0x0a
#define TAG_RESOURCE 0x0a
#define TAG_SCOPE_SPANS 0x12
#define TAG_SCOPE 0x0a
#define TAG_SPAN 0x12

#define VARINT_MAX 10 /* bytes of the longest varint */
/* The most a field's tag (field numbers here are below 2048) and length or value take. */
#define FIELD_HEAD_MAX (2 + VARINT_MAX)
/*
 * The most a span takes besides its strings and attributes: its three ids with their heads,
 * the heads of trace_state and name, kind, the two times, dropped_attributes_count and flags,
 * and the status (its head, code and message head); dropped_events/links_count stay 0, which
 * is not encoded.
 */
#define SPAN_FIXED_MAX (3 * (FIELD_HEAD_MAX + 16) + 2 * FIELD_HEAD_MAX + 5 * FIELD_HEAD_MAX + \
			3 * FIELD_HEAD_MAX)
/*
 * The most an attribute takes besides its key and string value: the heads of the attribute,
 * its key, its value and the value's one field (a string's head or a scalar).
 */
#define ATTR_FIXED_MAX (4 * FIELD_HEAD_MAX)

/* The largest attribute list put_attrs() is given: a resource's or a span's. */
#define MAX_ATTRS (RESOURCE_MAX_ATTRS > SPAN_MAX_ATTRS ? RESOURCE_MAX_ATTRS : SPAN_MAX_ATTRS)

/* One message's attributes as protobuf-c wants them: on the stack, for one pack. */
struct kv_list {
	pb_key_value kv[MAX_ATTRS];
	pb_key_value *ptrs[MAX_ATTRS];
	pb_any_value av[MAX_ATTRS];
};

static size_t varint_size(uint64_t v)
{
	size_t n = 1;

	while (v >= 0x80) {
		v >>= 7;
		n++;
	}
	return n;
}

static uint8_t *put_varint(uint8_t *p, uint64_t v)
{
	while (v >= 0x80) {
		*p++ = (uint8_t)(v | 0x80);
		v >>= 7;
	}
	*p++ = (uint8_t)v;
	return p;
}

/* A length-delimited field's head (TAG, then LEN) at P; returns the end. */
static uint8_t *put_head(uint8_t *p, uint8_t tag, size_t len)
{
	*p++ = tag;
	return put_varint(p, len);
}

bool otlp__any_value(pb_any_value *av, const struct attr *a)
{
	opentelemetry__proto__common__v1__any_value__init(av);
	switch (a->type) {
	case ATTR_STRING:
		av->value_case = VALUE_CASE(STRING_VALUE);
		av->string_value = (char *)(a->s ? a->s : "");
		return true;
	case ATTR_INT:
		av->value_case = VALUE_CASE(INT_VALUE);
		av->int_value = a->i;
		return true;
	case ATTR_BOOL:
		av->value_case = VALUE_CASE(BOOL_VALUE);
		av->bool_value = a->b;
		return true;
	case ATTR_DOUBLE:
		av->value_case = VALUE_CASE(DOUBLE_VALUE);
		av->double_value = a->d;
		return true;
	}
	return false;
}

/*
 * Points L's key-values at ATTRS and returns how many it made. Attributes the model cannot
 * express (no key, unknown type) are left out and counted in *DROPPED, which is what OTLP's
 * dropped_attributes_count is for, rather than failing the whole batch.
 */
static size_t put_attrs(struct kv_list *l, const struct attr *attrs, size_t n, uint32_t *dropped)
{
	size_t i, count = 0;

	*dropped = 0;
	for (i = 0; i < n && i < MAX_ATTRS; i++) {
		const struct attr *a = &attrs[i];
		pb_key_value *kv = &l->kv[count];
		pb_any_value *av = &l->av[count];

		if (!otlp__any_value(av, a)) {
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
		l->ptrs[count++] = kv;
	}
	*dropped += n - i;
	return count;
}

/* Length of string P for span_bound(), unless it lies in S's arena, counted there as a whole. */
static size_t outside_arena(const struct span *s, const char *p)
{
	uintptr_t a = (uintptr_t)s->arena, v = (uintptr_t)p;

	if (!p || (v >= a && v < a + s->arena_used))
		return 0;
	return strlen(p);
}

/*
 * At least as many bytes as S packs to. Every string of a span normally sits in its arena, so
 * the arena's fill stands for all of them at once and none is measured.
 */
static size_t span_bound(const struct span *s)
{
	size_t n = SPAN_FIXED_MAX + s->arena_used, i;

	n += outside_arena(s, s->name) + outside_arena(s, s->trace_state) +
	     outside_arena(s, s->status_msg);
	for (i = 0; i < s->nattrs; i++) {
		const struct attr *a = &s->attrs[i];

		n += ATTR_FIXED_MAX + outside_arena(s, a->key);
		if (a->type == ATTR_STRING)
			n += outside_arena(s, a->s);
	}
	return n;
}

/* Packs span S at OUT (which has at least span_bound(S) bytes); returns the bytes written. */
static size_t pack_span(const struct span *s, uint8_t *out)
{
	struct kv_list attrs;
	pb_status st;
	pb_span p;
	uint32_t dropped;

	opentelemetry__proto__trace__v1__span__init(&p);
	p.trace_id.data = (uint8_t *)s->trace_id;
	p.trace_id.len = sizeof(s->trace_id);
	p.span_id.data = (uint8_t *)s->span_id;
	p.span_id.len = sizeof(s->span_id);
	/* A root span has no parent_span_id at all; eight zero bytes would be an invalid id. */
	if (!span__id_is_zero(s->parent_span_id, sizeof(s->parent_span_id))) {
		p.parent_span_id.data = (uint8_t *)s->parent_span_id;
		p.parent_span_id.len = sizeof(s->parent_span_id);
	}
	/*
	 * The span model holds the W3C flags byte only; the bits above it mean something else in
	 * OTLP (whether the parent was remote), which the model does not know.
	 */
	p.flags = s->flags & TRACE_FLAGS_MASK;
	/* OTLP's SPAN_FLAGS_CONTEXT_HAS_IS_REMOTE (bit 8) and _IS_REMOTE (bit 9). */
	if (s->parent_known)
		p.flags |= 0x100 | (s->remote_parent ? 0x200 : 0);
	if (s->trace_state)
		p.trace_state = (char *)s->trace_state;
	p.name = (char *)(s->name ? s->name : "");
	p.kind = (Opentelemetry__Proto__Trace__V1__Span__SpanKind)s->kind;
	p.start_time_unix_nano = s->start_ns;
	p.end_time_unix_nano = s->end_ns;
	p.n_attributes = put_attrs(&attrs, s->attrs, s->nattrs, &dropped);
	p.attributes = attrs.ptrs;
	p.dropped_attributes_count = dropped;
	/* An unset status with no message is the default: leave the field out. */
	if (s->status != SPAN_STATUS_UNSET || s->status_msg) {
		opentelemetry__proto__trace__v1__status__init(&st);
		st.code = (Opentelemetry__Proto__Trace__V1__Status__StatusCode)s->status;
		st.message = (char *)(s->status_msg ? s->status_msg : "");
		p.status = &st;
	}
	return opentelemetry__proto__trace__v1__span__pack(&p, out);
}

/* The resource message of R (NULL: an empty one) with its attributes in L. */
static void resource_msg(pb_resource *pr, struct kv_list *l, const struct resource *r)
{
	uint32_t dropped;

	opentelemetry__proto__resource__v1__resource__init(pr);
	if (!r)
		return;
	pr->n_attributes = put_attrs(l, r->attrs, r->nattrs, &dropped);
	pr->attributes = l->ptrs;
	pr->dropped_attributes_count = dropped;
}

/*
 * The distinct resources of SPANS in order of first appearance (*RES, *NRES) and for each span
 * its resource's index (*GROUP). Linear: a batch holds a few hundred spans from a handful of
 * processes.
 */
static int group_by_resource(struct span *const *spans, size_t n, const struct resource ***res,
			     size_t **group, size_t *nres)
{
	size_t i, g;

	*res = calloc(n, sizeof(**res));
	*group = calloc(n, sizeof(**group));
	if (!*res || !*group)
		return -ENOMEM;
	*nres = 0;
	for (i = 0; i < n; i++) {
		if (!spans[i])
			return -EINVAL;
		for (g = 0; g < *nres; g++)
			if ((*res)[g] == spans[i]->res)
				break;
		if (g == *nres)
			(*res)[(*nres)++] = spans[i]->res;
		(*group)[i] = g;
	}
	return 0;
}

/* The bytes of group G's head: ResourceSpans' and ScopeSpans' heads, resource, scope. */
static size_t group_head(size_t res_size, size_t scope_size, size_t spans_len, size_t *ss_len,
			 size_t *rs_len)
{
	size_t res_field = 1 + varint_size(res_size) + res_size;
	size_t scope_field = 1 + varint_size(scope_size) + scope_size;

	*ss_len = scope_field + spans_len;
	*rs_len = res_field + 1 + varint_size(*ss_len) + *ss_len;
	return 1 + varint_size(*rs_len) + res_field + 1 + varint_size(*ss_len) + scope_field;
}

/*
 * Writes resource group G at OUT: its ResourceSpans with the resource, the scope and the spans
 * of the group in the order given. Returns the bytes written. OUT has room for the head as
 * group_head() sizes it for SPANS_BOUND bytes of spans, and for that many bytes of spans.
 *
 * The head holds the spans' total length, known only once they are packed: they go after room
 * for the head the bound implies, and are moved only when the real total takes a shorter
 * varint than the bound did (the two on either side of 16 KiB or 2 MiB, say).
 */
static size_t put_group(uint8_t *out, struct span *const *spans, size_t n, const size_t *group,
			size_t g, const pb_resource *pr, size_t res_size, const pb_scope *scope,
			size_t scope_size, size_t spans_bound)
{
	size_t spans_len, ss_len, rs_len, i, len, head;
	size_t reserve = group_head(res_size, scope_size, spans_bound, &ss_len, &rs_len);
	uint8_t *p = out + reserve, *q;

	for (i = 0; i < n; i++) {
		if (group[i] != g)
			continue;
		/* Most spans take 128 B to 16 KiB, a length of two bytes: moved when not. */
		len = pack_span(spans[i], p + 3);
		if (varint_size(len) != 2)
			memmove(p + 1 + varint_size(len), p + 3, len);
		p = put_head(p, TAG_SPAN, len) + len;
	}
	spans_len = p - (out + reserve);
	head = group_head(res_size, scope_size, spans_len, &ss_len, &rs_len);
	if (head != reserve)
		memmove(out + head, out + reserve, spans_len);

	q = put_head(out, TAG_RESOURCE_SPANS, rs_len);
	q = put_head(q, TAG_RESOURCE, res_size);
	q += opentelemetry__proto__resource__v1__resource__pack(pr, q);
	q = put_head(q, TAG_SCOPE_SPANS, ss_len);
	q = put_head(q, TAG_SCOPE, scope_size);
	q += opentelemetry__proto__common__v1__instrumentation_scope__pack(scope, q);
	return head + spans_len;
}

int otlp__encode(struct span *const *spans, size_t n, uint8_t **out, size_t *out_len)
{
	pb_scope scope = OPENTELEMETRY__PROTO__COMMON__V1__INSTRUMENTATION_SCOPE__INIT;
	size_t i, g, nres, bound = 0, scope_size, used = 0, ss_len, rs_len;
	size_t *group = NULL, *res_size = NULL, *spans_bound = NULL;
	const struct resource **res = NULL;
	struct kv_list res_attrs;
	uint8_t *buf = NULL, *shrunk;
	pb_resource pr;
	int err;

	if (!spans || !n || !out || !out_len)
		return -EINVAL;
	err = group_by_resource(spans, n, &res, &group, &nres);
	if (err)
		goto cleanup;
	res_size = calloc(nres, sizeof(*res_size));
	spans_bound = calloc(nres, sizeof(*spans_bound));
	if (!res_size || !spans_bound) {
		err = -ENOMEM;
		goto cleanup;
	}

	/* Every ScopeSpans names the same scope. */
	scope.name = GOSPAN_NAME;
	scope.version = GOSPAN_VERSION;
	scope_size = opentelemetry__proto__common__v1__instrumentation_scope__get_packed_size(&scope);

	for (i = 0; i < n; i++)
		spans_bound[group[i]] += 1 + VARINT_MAX + span_bound(spans[i]);
	for (g = 0; g < nres; g++) {
		resource_msg(&pr, &res_attrs, res[g]);
		res_size[g] = opentelemetry__proto__resource__v1__resource__get_packed_size(&pr);
		bound += group_head(res_size[g], scope_size, spans_bound[g], &ss_len, &rs_len) +
			 spans_bound[g];
	}
	buf = malloc(bound);
	if (!buf) {
		err = -ENOMEM;
		goto cleanup;
	}
	for (g = 0; g < nres; g++) {
		resource_msg(&pr, &res_attrs, res[g]);
		used += put_group(buf + used, spans, n, group, g, &pr, res_size[g], &scope,
				  scope_size, spans_bound[g]);
	}
	/* What the bound overcounted goes back before the buffer waits on the network. */
	shrunk = realloc(buf, used);
	*out = shrunk ?: buf;
	*out_len = used;
	buf = NULL;
	err = 0;
cleanup:
	free(buf);
	free(res);
	free(group);
	free(res_size);
	free(spans_bound);
	return err;
}
