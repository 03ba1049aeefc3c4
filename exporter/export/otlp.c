// SPDX-License-Identifier: MIT
/*
 * Spans to the bytes of one ExportTraceServiceRequest. Spans, nearly all of a request, are
 * written here field by field, straight into the output buffer, in one pass: a span's model
 * holds the lengths the wire format asks for (span.h keeps the name's and each attribute's key
 * and string value's), so every message inside a span is sized by a little arithmetic just
 * before it is written, and no message tree is built. Packing through protobuf-c cost a tree
 * per span, a walk of it through the descriptors (twice: sizing, then packing) and a strlen of
 * each string, a third of gospan's CPU per span. The resource and the scope, once per resource
 * in a request, are still packed by protobuf-c; the envelope around them (the request,
 * ResourceSpans, ScopeSpans) is length-prefixed lists, written here too.
 *
 * The buffer is sized by a bound each span gives from its lengths. A span's own length goes in
 * front of it once it is written: two bytes are kept for it (spans of 128 B to 16 KiB, nearly
 * all of them), and the span is moved in the rare case its length takes another size.
 *
 * The bytes are the ones protobuf-c writes for the same message: fields in field-number order,
 * proto3 defaults (0, empty) left out, a oneof member that is set written even when 0. The unit
 * tests hold the two side by side, byte for byte.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "opentelemetry/proto/collector/trace/v1/trace_service.pb-c.h"

#include "export/otlp.h"
#include "model/span.h"
#include "core/version.h"

typedef Opentelemetry__Proto__Resource__V1__Resource pb_resource;
typedef Opentelemetry__Proto__Common__V1__InstrumentationScope pb_scope;
typedef Opentelemetry__Proto__Common__V1__KeyValue pb_key_value;
typedef Opentelemetry__Proto__Common__V1__AnyValue pb_any_value;

/* protobuf-c's names spell out the whole package; these keep the code inside 100 columns. */
#define VALUE_CASE(x) OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__VALUE_##x
#define TRACE_FLAGS_MASK OPENTELEMETRY__PROTO__TRACE__V1__SPAN_FLAGS__SPAN_FLAGS_TRACE_FLAGS_MASK
/* OTLP's SPAN_FLAGS_CONTEXT_HAS_IS_REMOTE (bit 8) and SPAN_FLAGS_CONTEXT_IS_REMOTE (bit 9). */
#define FLAG_HAS_IS_REMOTE 0x100
#define FLAG_IS_REMOTE 0x200

/* Protobuf's wire types, and a field's tag: one byte for field numbers below 16. */
#define WIRE_VARINT 0
#define WIRE_I64 1
#define WIRE_LEN 2
#define WIRE_I32 5
#define TAG(field, wire) ((uint8_t)((field) << 3 | (wire)))

/*
 * The envelope's fields: field 1 of ExportTraceServiceRequest (resource_spans), fields 1 and 2
 * of ResourceSpans (resource, scope_spans) and of ScopeSpans (scope, spans).
 */
#define TAG_RESOURCE_SPANS TAG(1, WIRE_LEN)
#define TAG_RESOURCE TAG(1, WIRE_LEN)
#define TAG_SCOPE_SPANS TAG(2, WIRE_LEN)
#define TAG_SCOPE TAG(1, WIRE_LEN)
#define TAG_SPAN TAG(2, WIRE_LEN)

/* Span's fields (proto/opentelemetry/proto/trace/v1/trace.proto). */
#define TAG_TRACE_ID TAG(1, WIRE_LEN)
#define TAG_SPAN_ID TAG(2, WIRE_LEN)
#define TAG_TRACE_STATE TAG(3, WIRE_LEN)
#define TAG_PARENT_SPAN_ID TAG(4, WIRE_LEN)
#define TAG_NAME TAG(5, WIRE_LEN)
#define TAG_KIND TAG(6, WIRE_VARINT)
#define TAG_START_TIME TAG(7, WIRE_I64)
#define TAG_END_TIME TAG(8, WIRE_I64)
#define TAG_ATTRIBUTES TAG(9, WIRE_LEN)
#define TAG_DROPPED_ATTRIBUTES TAG(10, WIRE_VARINT)
#define TAG_STATUS TAG(15, WIRE_LEN)
/* Field 16, fixed32: its tag, 16 << 3 | 5, is a varint of two bytes. */
#define TAG_FLAGS_LO 0x85
#define TAG_FLAGS_HI 0x01
/* Status: message 2, code 3. */
#define TAG_STATUS_MESSAGE TAG(2, WIRE_LEN)
#define TAG_STATUS_CODE TAG(3, WIRE_VARINT)
/* KeyValue: key 1, value 2; AnyValue's oneof: string 1, bool 2, int 3, double 4. */
#define TAG_KEY TAG(1, WIRE_LEN)
#define TAG_VALUE TAG(2, WIRE_LEN)
#define TAG_STRING_VALUE TAG(1, WIRE_LEN)
#define TAG_BOOL_VALUE TAG(2, WIRE_VARINT)
#define TAG_INT_VALUE TAG(3, WIRE_VARINT)
#define TAG_DOUBLE_VALUE TAG(4, WIRE_I64)

/* One resource's attributes as protobuf-c wants them: on the stack, for one pack. */
struct kv_list {
	pb_key_value kv[RESOURCE_MAX_ATTRS];
	pb_key_value *ptrs[RESOURCE_MAX_ATTRS];
	pb_any_value av[RESOURCE_MAX_ATTRS];
};

/*
 * Seven bits a byte: from the highest bit set, without a loop (v | 1: clz(0) is undefined).
 * Nearly every length in a span is below 128, one byte, which the test settles before the
 * arithmetic: the encoder sizes three fields an attribute, and the division was a tenth of it.
 */
static size_t varint_size(uint64_t v)
{
	if (v < 0x80)
		return 1;
	return (70 - __builtin_clzll(v)) / 7;
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

/*
 * LEN bytes from SRC to DST. Most of what a span holds is a few to a few dozen bytes (ids, keys,
 * methods, addresses), for which two overlapping fixed-size copies beat a call to memcpy.
 */
static void copy(uint8_t *dst, const void *src, size_t len)
{
	const uint8_t *s = src;

	if (len >= 8 && len <= 16) {
		memcpy(dst, s, 8);
		memcpy(dst + len - 8, s + len - 8, 8);
	} else if (len >= 4 && len < 8) {
		memcpy(dst, s, 4);
		memcpy(dst + len - 4, s + len - 4, 4);
	} else {
		memcpy(dst, s, len);
	}
}

/* A length-delimited field holding LEN bytes at DATA. */
static uint8_t *put_bytes(uint8_t *p, uint8_t tag, const void *data, size_t len)
{
	p = put_head(p, tag, len);
	copy(p, data, len);
	return p + len;
}

/* Protobuf's fixed64 and double: eight bytes, little-endian whatever the host. */
static uint8_t *put_fixed64(uint8_t *p, uint8_t tag, uint64_t v)
{
	size_t i;

	*p++ = tag;
	for (i = 0; i < 8; i++, v >>= 8)
		*p++ = (uint8_t)v;
	return p;
}

/* The bytes of a length-delimited field of one-byte tag holding LEN bytes. */
static size_t field_size(size_t len)
{
	return 1 + varint_size(len) + len;
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
	for (i = 0; i < n && i < RESOURCE_MAX_ATTRS; i++) {
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

/* Whether the span encoder can write A; else it counts in dropped_attributes_count. */
static bool attr_valid(const struct attr *a)
{
	return a->key && (a->type == ATTR_STRING || a->type == ATTR_INT || a->type == ATTR_BOOL ||
			  a->type == ATTR_DOUBLE);
}

/* The bytes of A's AnyValue message. */
static size_t any_value_size(const struct attr *a)
{
	switch (a->type) {
	case ATTR_STRING:
		return field_size(a->len);
	case ATTR_INT:
		/* int64 is a varint of the two's complement: ten bytes when negative. */
		return 1 + varint_size((uint64_t)a->i);
	case ATTR_BOOL:
		return 2;
	case ATTR_DOUBLE:
		return 1 + 8;
	}
	return 0;
}

/* The bytes of A's KeyValue message; *VALUE gets its AnyValue's. An empty key is left out. */
static size_t key_value_size(const struct attr *a, size_t *value)
{
	*value = any_value_size(a);
	return (a->key_len ? field_size(a->key_len) : 0) + field_size(*value);
}

static uint8_t *put_key_value(uint8_t *p, const struct attr *a)
{
	size_t value, kv = key_value_size(a, &value);
	uint64_t bits;

	p = put_head(p, TAG_ATTRIBUTES, kv);
	if (a->key_len)
		p = put_bytes(p, TAG_KEY, a->key, a->key_len);
	p = put_head(p, TAG_VALUE, value);
	switch (a->type) {
	case ATTR_STRING:
		return put_bytes(p, TAG_STRING_VALUE, a->s ? a->s : "", a->s ? a->len : 0);
	case ATTR_INT:
		*p++ = TAG_INT_VALUE;
		return put_varint(p, (uint64_t)a->i);
	case ATTR_BOOL:
		*p++ = TAG_BOOL_VALUE;
		*p++ = a->b ? 1 : 0;
		return p;
	case ATTR_DOUBLE:
		memcpy(&bits, &a->d, sizeof(bits));
		return put_fixed64(p, TAG_DOUBLE_VALUE, bits);
	}
	return p;
}

/* OTLP's Span.flags: the W3C flags byte, and whether the parent is remote when that is known. */
static uint32_t span_flags(const struct span *s)
{
	uint32_t flags = s->flags & TRACE_FLAGS_MASK;

	if (s->parent_known)
		flags |= FLAG_HAS_IS_REMOTE | (s->remote_parent ? FLAG_IS_REMOTE : 0);
	return flags;
}

/*
 * The length of a string the model does not measure: the tracestate and the status message
 * (rare, and set in more ways than attributes are). 0 for NULL: left out, as "" is.
 */
static size_t str_len(const char *p)
{
	return p ? strlen(p) : 0;
}

/* The status is written unless it is unset and has no message (OTLP's default). */
static bool has_status(const struct span *s)
{
	return s->status != SPAN_STATUS_UNSET || s->status_msg;
}

#define VARINT_MAX 10 /* bytes of the longest varint */
/* The most a field's head (a one-byte tag, then a length or a varint) takes. */
#define HEAD_MAX (1 + VARINT_MAX)
/*
 * The most a span takes besides its strings and attributes: three ids with their heads, the
 * heads of tracestate and name, kind, two fixed64 times, dropped_attributes_count, the status
 * (its head, its message's head, its code) and flags (a two-byte tag and a fixed32).
 */
#define SPAN_FIXED_MAX (3 * (HEAD_MAX + 16) + 2 * HEAD_MAX + HEAD_MAX + 2 * 9 + HEAD_MAX + \
			3 * HEAD_MAX + 2 + 4)
/*
 * The most an attribute takes besides its key and string: the heads of KeyValue, key and value,
 * whose lengths are below 2^21 (a key and a string value of 16-bit lengths), so three bytes
 * each, and the value's one field (a string's head, or a scalar of up to ten bytes).
 */
#define ATTR_FIXED_MAX (3 * (1 + 3) + HEAD_MAX)
_Static_assert(sizeof(((struct attr *)0)->len) == 2 && sizeof(((struct attr *)0)->key_len) == 2,
	       "ATTR_FIXED_MAX: lengths of a key-value past three varint bytes");
/* Room kept for a span's length in front of it, with its tag: 16 KiB less a byte at most. */
#define SPAN_HEAD_KEPT 3

/* At least as many bytes as S's Span message takes, from lengths S already holds. */
static size_t span_bound(const struct span *s)
{
	size_t n = SPAN_FIXED_MAX + (s->name ? s->name_len : 0) + str_len(s->trace_state) +
		   str_len(s->status_msg), i;

	for (i = 0; i < s->nattrs; i++) {
		const struct attr *a = &s->attrs[i];

		n += ATTR_FIXED_MAX + a->key_len + (a->type == ATTR_STRING ? a->len : 0);
	}
	return n;
}

/* Writes S's Span message at P, which has span_bound(S) bytes; returns the end. */
static uint8_t *put_span(uint8_t *p, const struct span *s)
{
	size_t name = s->name ? s->name_len : 0, trace_state = str_len(s->trace_state);
	size_t msg, status, i;
	uint32_t flags = span_flags(s), dropped = 0;

	p = put_bytes(p, TAG_TRACE_ID, s->trace_id, sizeof(s->trace_id));
	p = put_bytes(p, TAG_SPAN_ID, s->span_id, sizeof(s->span_id));
	if (trace_state)
		p = put_bytes(p, TAG_TRACE_STATE, s->trace_state, trace_state);
	/* A root span has no parent_span_id at all; eight zero bytes would be an invalid id. */
	if (!span__id_is_zero(s->parent_span_id, sizeof(s->parent_span_id)))
		p = put_bytes(p, TAG_PARENT_SPAN_ID, s->parent_span_id, sizeof(s->parent_span_id));
	if (name)
		p = put_bytes(p, TAG_NAME, s->name, name);
	if (s->kind) {
		*p++ = TAG_KIND;
		p = put_varint(p, s->kind);
	}
	if (s->start_ns)
		p = put_fixed64(p, TAG_START_TIME, s->start_ns);
	if (s->end_ns)
		p = put_fixed64(p, TAG_END_TIME, s->end_ns);
	for (i = 0; i < s->nattrs; i++) {
		if (attr_valid(&s->attrs[i]))
			p = put_key_value(p, &s->attrs[i]);
		else
			dropped++;
	}
	if (dropped) {
		*p++ = TAG_DROPPED_ATTRIBUTES;
		p = put_varint(p, dropped);
	}
	if (has_status(s)) {
		msg = str_len(s->status_msg);
		status = (msg ? field_size(msg) : 0) + (s->status ? 1 + varint_size(s->status) : 0);
		p = put_head(p, TAG_STATUS, status);
		if (msg)
			p = put_bytes(p, TAG_STATUS_MESSAGE, s->status_msg, msg);
		if (s->status) {
			*p++ = TAG_STATUS_CODE;
			p = put_varint(p, s->status);
		}
	}
	if (flags) {
		*p++ = TAG_FLAGS_LO;
		*p++ = TAG_FLAGS_HI;
		for (i = 0; i < 4; i++, flags >>= 8)
			*p++ = (uint8_t)flags;
	}
	return p;
}

/*
 * Writes S as a field of ScopeSpans at P, which has SPAN_HEAD_KEPT + span_bound(S) bytes: the
 * span after the room kept for its head, then its head, the span moved when its length takes
 * other than two bytes. Returns the end.
 */
static uint8_t *put_span_field(uint8_t *p, const struct span *s)
{
	uint8_t *body = p + SPAN_HEAD_KEPT;
	size_t len = put_span(body, s) - body, head = 1 + varint_size(len);

	if (head != SPAN_HEAD_KEPT)
		memmove(p + head, body, len);
	put_head(p, TAG_SPAN, len);
	return p + head + len;
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
 * of the group in the order given. OUT has room for SPANS_BOUND bytes of spans (SPAN_HEAD_KEPT
 * and span_bound() for each) and for the head group_head() sizes for that many. Returns the
 * bytes written.
 *
 * The head holds the spans' total length, known once they are written: they go after room for
 * the head the bound implies, and are moved only when the real total takes a shorter varint
 * than the bound did (the two on either side of 16 KiB or 2 MiB, say).
 */
static size_t put_group(uint8_t *out, struct span *const *spans, size_t n, const size_t *group,
			size_t g, const pb_resource *pr, size_t res_size, const pb_scope *scope,
			size_t scope_size, size_t spans_bound)
{
	size_t ss_len, rs_len, i, spans_len, head;
	size_t reserve = group_head(res_size, scope_size, spans_bound, &ss_len, &rs_len);
	uint8_t *p = out + reserve, *q;

	for (i = 0; i < n; i++)
		if (group[i] == g)
			p = put_span_field(p, spans[i]);
	spans_len = p - (out + reserve);
	head = group_head(res_size, scope_size, spans_len, &ss_len, &rs_len);
	if (head != reserve)
		memmove(out + head, out + reserve, spans_len);

	q = put_head(out, TAG_RESOURCE_SPANS, rs_len);
	q = put_head(q, TAG_RESOURCE, res_size);
	q += opentelemetry__proto__resource__v1__resource__pack(pr, q);
	q = put_head(q, TAG_SCOPE_SPANS, ss_len);
	q = put_head(q, TAG_SCOPE, scope_size);
	opentelemetry__proto__common__v1__instrumentation_scope__pack(scope, q);
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
		spans_bound[group[i]] += SPAN_HEAD_KEPT + span_bound(spans[i]);
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
