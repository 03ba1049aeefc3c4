// SPDX-License-Identifier: MIT
/*
 * Spans to OTLP/JSON (OTEL_EXPORTER_OTLP_PROTOCOL=http/json): the protobuf JSON mapping with the
 * OTLP exceptions, namely trace and span ids as hex strings rather than base64, enums as integers,
 * 64-bit integers as decimal strings. Same grouping as the protobuf encoder: one resourceSpans per
 * resource, in order of first appearance, one scopeSpans each.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "export/otlp.h"
#include "model/span.h"
#include "core/version.h"

int otlp_json__hex(cJSON *obj, const char *key, const uint8_t *id, size_t len)
{
	char hex[33];
	size_t i;

	for (i = 0; i < len && 2 * i + 2 < sizeof(hex); i++)
		snprintf(hex + 2 * i, 3, "%02x", id[i]);
	hex[2 * len] = '\0';
	return cJSON_AddStringToObject(obj, key, hex) ? 0 : -ENOMEM;
}

int otlp_json__print(cJSON *root, char **out, size_t *out_len)
{
	char *text = cJSON_PrintUnformatted(root);

	if (!text)
		return -ENOMEM;
	*out = text;
	*out_len = strlen(text);
	return 0;
}

int otlp_json__u64(cJSON *obj, const char *key, uint64_t v)
{
	char s[24];

	snprintf(s, sizeof(s), "%" PRIu64, v);
	return cJSON_AddStringToObject(obj, key, s) ? 0 : -ENOMEM;
}

static cJSON *any_value(const struct attr *a)
{
	cJSON *v = cJSON_CreateObject();
	char s[24];
	bool ok = false;

	if (!v)
		return NULL;
	switch (a->type) {
	case ATTR_STRING:
		ok = cJSON_AddStringToObject(v, "stringValue", a->s ? a->s : "");
		break;
	case ATTR_INT:
		snprintf(s, sizeof(s), "%" PRId64, a->i);
		ok = cJSON_AddStringToObject(v, "intValue", s);
		break;
	case ATTR_BOOL:
		ok = cJSON_AddBoolToObject(v, "boolValue", a->b);
		break;
	case ATTR_DOUBLE:
		ok = cJSON_AddNumberToObject(v, "doubleValue", a->d);
		break;
	}
	if (!ok) {
		cJSON_Delete(v);
		return NULL;
	}
	return v;
}

int otlp_json__attrs(cJSON *obj, const char *name, const struct attr *attrs, size_t n)
{
	cJSON *arr = cJSON_AddArrayToObject(obj, name ? name : "attributes"), *kv, *v;
	size_t i;

	if (!arr)
		return -ENOMEM;
	for (i = 0; i < n; i++) {
		if (!attrs[i].key)
			continue;
		kv = cJSON_CreateObject();
		v = any_value(&attrs[i]);
		if (!kv || !v || !cJSON_AddStringToObject(kv, "key", attrs[i].key) ||
		    !cJSON_AddItemToObject(kv, "value", v) || !cJSON_AddItemToArray(arr, kv)) {
			cJSON_Delete(kv);
			cJSON_Delete(v);
			return -ENOMEM;
		}
	}
	return 0;
}

static int add_span(cJSON *arr, const struct span *s)
{
	cJSON *o = cJSON_CreateObject(), *st;
	int err;

	if (!o || !cJSON_AddItemToArray(arr, o)) {
		cJSON_Delete(o);
		return -ENOMEM;
	}
	err = otlp_json__hex(o, "traceId", s->trace_id, sizeof(s->trace_id));
	err = err ?: otlp_json__hex(o, "spanId", s->span_id, sizeof(s->span_id));
	if (!err && !span__id_is_zero(s->parent_span_id, sizeof(s->parent_span_id)))
		err = otlp_json__hex(o, "parentSpanId", s->parent_span_id, sizeof(s->parent_span_id));
	if (!err && s->trace_state && !cJSON_AddStringToObject(o, "traceState", s->trace_state))
		err = -ENOMEM;
	if (!err && !cJSON_AddNumberToObject(o, "flags", (double)(s->flags & 0xff)))
		err = -ENOMEM;
	if (!err && !cJSON_AddStringToObject(o, "name", s->name ? s->name : ""))
		err = -ENOMEM;
	if (!err && !cJSON_AddNumberToObject(o, "kind", s->kind))
		err = -ENOMEM;
	err = err ?: otlp_json__u64(o, "startTimeUnixNano", s->start_ns);
	err = err ?: otlp_json__u64(o, "endTimeUnixNano", s->end_ns);
	err = err ?: otlp_json__attrs(o, NULL, s->attrs, s->nattrs);
	if (!err && (s->status != SPAN_STATUS_UNSET || s->status_msg)) {
		st = cJSON_AddObjectToObject(o, "status");
		if (!st || !cJSON_AddNumberToObject(st, "code", s->status) ||
		    (s->status_msg && !cJSON_AddStringToObject(st, "message", s->status_msg)))
			err = -ENOMEM;
	}
	return err;
}

int otlp__encode_json(struct span *const *spans, size_t n, char **out, size_t *out_len)
{
	cJSON *root, *rss, *rs, *res, *ss, *scope, *arr;
	const struct resource **seen = NULL;
	size_t nseen = 0, i, j;
	int err = -ENOMEM;

	if (!n)
		return -EINVAL;
	root = cJSON_CreateObject();
	rss = root ? cJSON_AddArrayToObject(root, "resourceSpans") : NULL;
	seen = calloc(n, sizeof(*seen));
	if (!rss || !seen)
		goto cleanup;
	for (i = 0; i < n; i++) {
		const struct resource *r = spans[i]->res;

		for (j = 0; j < nseen && seen[j] != r; j++)
			;
		if (j < nseen)
			continue; /* this resource's spans went out with its first span */
		seen[nseen++] = r;
		rs = cJSON_CreateObject();
		if (!rs || !cJSON_AddItemToArray(rss, rs)) {
			cJSON_Delete(rs);
			goto cleanup;
		}
		res = cJSON_AddObjectToObject(rs, "resource");
		if (!res || (r && otlp_json__attrs(res, NULL, r->attrs, r->nattrs)))
			goto cleanup;
		arr = cJSON_AddArrayToObject(rs, "scopeSpans");
		ss = cJSON_CreateObject();
		if (!arr || !ss || !cJSON_AddItemToArray(arr, ss)) {
			cJSON_Delete(ss);
			goto cleanup;
		}
		scope = cJSON_AddObjectToObject(ss, "scope");
		if (!scope || !cJSON_AddStringToObject(scope, "name", GOSPAN_NAME) ||
		    !cJSON_AddStringToObject(scope, "version", GOSPAN_VERSION))
			goto cleanup;
		arr = cJSON_AddArrayToObject(ss, "spans");
		if (!arr)
			goto cleanup;
		for (j = i; j < n; j++) {
			if (spans[j]->res == r && add_span(arr, spans[j]))
				goto cleanup;
		}
	}
	err = otlp_json__print(root, out, out_len);
cleanup:
	free(seen);
	cJSON_Delete(root);
	return err;
}
