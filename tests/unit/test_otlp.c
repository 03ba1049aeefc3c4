// SPDX-License-Identifier: MIT
/*
 * Unit tests for otlp.c: real spans are encoded, then the bytes are decoded twice, by protobuf-c's
 * generated unpack from our own .proto files and by the official opentelemetry-proto Python
 * package, and every field is compared with the spans that went in. The second decoder is what
 * catches a wrong field number or type in proto/, which our own decoder would agree with.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "opentelemetry/proto/collector/trace/v1/trace_service.pb-c.h"

#include <cjson/cJSON.h>

#include "helpers.h"
#include "export/otlp.h"
#include "model/semconv.h"
#include "model/span.h"
#include "core/version.h"

typedef Opentelemetry__Proto__Collector__Trace__V1__ExportTraceServiceRequest pb_request;
typedef Opentelemetry__Proto__Trace__V1__Span pb_span;
typedef Opentelemetry__Proto__Common__V1__KeyValue pb_key_value;
typedef Opentelemetry__Proto__Common__V1__AnyValue pb_any_value;
typedef Opentelemetry__Proto__Trace__V1__ResourceSpans pb_resource_spans;
typedef Opentelemetry__Proto__Trace__V1__ScopeSpans pb_scope_spans;

#define VALUE_CASE(x) OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__VALUE_##x
#define request_(fn) opentelemetry__proto__collector__trace__v1__export_trace_service_request__##fn

#define NSPANS 6
#define NRES 3

struct fixture {
	struct resource *res[NRES];
	struct span *spans[NSPANS];
};

static const uint8_t parent_id[8] = { 0xde, 0xad, 0xbe, 0xef, 0x00, 0x01, 0x02, 0x03 };

static struct span *mk_span(const struct resource *res, enum span_kind kind, const char *name,
			    uint64_t start, uint64_t dur)
{
	struct span *s = span__new();

	assert_non_null(s);
	s->res = res;
	s->kind = kind;
	s->start_ns = start;
	s->end_ns = start + dur;
	if (name)
		assert_int_equal(span__set_name(s, name, strlen(name)), 0);
	return s;
}

/*
 * Three resources, spans interleaved across them plus one with no resource, every attribute
 * type including the zero values proto3 would leave out of a plain field, root and child spans,
 * every status, UTF-8 in names, values and a resource.
 */
static int setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));
	struct span *s;

	assert_non_null(f);
	for (int i = 0; i < NRES; i++)
		assert_non_null(f->res[i] = resource__new());
	assert_int_equal(resource__set_str(f->res[0], SC_SERVICE_NAME, "svc-a"), 0);
	assert_int_equal(resource__set_int(f->res[0], SC_PROCESS_PID, 101), 0);
	assert_int_equal(resource__set_str(f->res[0], SC_TELEMETRY_SDK_NAME, "gospan"), 0);
	assert_int_equal(resource__set_str(f->res[1], SC_SERVICE_NAME, "svc-b"), 0);
	assert_int_equal(resource__set_str(f->res[1], SC_HOST_NAME, "host one"), 0);
	assert_int_equal(resource__set_int(f->res[1], SC_PROCESS_PID, 202), 0);
	assert_int_equal(resource__set_str(f->res[2], SC_SERVICE_NAME, "caf\xc3\xa9-svc"), 0);

	s = f->spans[0] = mk_span(f->res[0], SPAN_KIND_SERVER, "GET /users/{id}",
				  1700000000123456789ULL, 1234567);
	s->flags = 1;
	assert_int_equal(span__set_str(s, SC_HTTP_REQUEST_METHOD, "GET", 3), 0);
	assert_int_equal(span__set_str(s, SC_URL_PATH, "/users/42", 9), 0);
	assert_int_equal(span__set_int(s, SC_HTTP_RESPONSE_STATUS_CODE, 200), 0);
	assert_int_equal(span__set_int(s, "test.negative", -9000000000LL), 0);
	assert_int_equal(span__set_bool(s, "test.true", true), 0);
	assert_int_equal(span__set_double(s, "test.ratio", 0.25), 0);
	assert_int_equal(span__set_double(s, "test.huge", -1.5e300), 0);

	s = f->spans[1] = mk_span(f->res[1], SPAN_KIND_CLIENT, "GET", 1700000001000000000ULL, 5);
	memcpy(s->parent_span_id, parent_id, sizeof(parent_id));
	s->status = SPAN_STATUS_ERROR;
	s->status_msg = span__strndup(s, "boom: connection refused", 24);
	assert_non_null(s->status_msg);
	assert_int_equal(span__set_int(s, SC_SERVER_PORT, 8080), 0);
	assert_int_equal(span__set_str(s, SC_ERROR_TYPE, "connection refused", 18), 0);

	s = f->spans[2] = mk_span(f->res[0], SPAN_KIND_INTERNAL, "caf\xc3\xa9 \xe2\x82\xac",
				  1700000002000000000ULL, 0);
	memcpy(s->parent_span_id, f->spans[0]->span_id, 8);
	memcpy(s->trace_id, f->spans[0]->trace_id, 16);
	s->status = SPAN_STATUS_OK;
	s->flags = 1;

	/* Zero values: a oneof member is sent even when it holds its type's default. */
	s = f->spans[3] = mk_span(f->res[2], SPAN_KIND_PRODUCER, "send", 1, 2);
	assert_int_equal(span__set_bool(s, "test.false", false), 0);
	assert_int_equal(span__set_int(s, "test.zero", 0), 0);
	assert_int_equal(span__set_double(s, "test.dzero", 0.0), 0);
	assert_int_equal(span__set_str(s, "test.empty", "", 0), 0);
	assert_int_equal(span__set_str(s, "test.utf8", "\xe6\x97\xa5\xe6\x9c\xac", 6), 0);

	s = f->spans[4] = mk_span(f->res[1], SPAN_KIND_CONSUMER, "receive", 1700000003000000000ULL,
				  999999999);
	memcpy(s->parent_span_id, parent_id, sizeof(parent_id));
	s->flags = 1;
	assert_int_equal(span__set_str(s, SC_NETWORK_PEER_ADDRESS, "10.0.0.1", 8), 0);
	assert_int_equal(span__set_int(s, SC_NETWORK_PEER_PORT, 65535), 0);

	/* No resource, no name: still a valid span, in a ResourceSpans of its own. */
	s = f->spans[5] = mk_span(NULL, SPAN_KIND_UNSPECIFIED, NULL, 10, 20);
	s->status_msg = span__strndup(s, "note", 4);

	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;

	for (int i = 0; i < NSPANS; i++)
		span__free(f->spans[i]);
	for (int i = 0; i < NRES; i++)
		resource__free(f->res[i]);
	free(f);
	return 0;
}

/* The resource groups the encoder must produce: first appearance order, spans in given order. */
static const int groups[][3] = { { 0, 2, -1 }, { 1, 4, -1 }, { 3, -1, -1 }, { 5, -1, -1 } };
#define NGROUPS 4

static void check_attrs(pb_key_value **kv, size_t n, const struct attr *attrs, size_t nattrs)
{
	assert_int_equal(n, nattrs);
	for (size_t i = 0; i < n; i++) {
		const struct attr *a = &attrs[i];
		const pb_any_value *v = kv[i]->value;

		assert_string_equal(kv[i]->key, a->key);
		assert_non_null(v);
		switch (a->type) {
		case ATTR_STRING:
			assert_int_equal(v->value_case, VALUE_CASE(STRING_VALUE));
			assert_string_equal(v->string_value, a->s);
			break;
		case ATTR_INT:
			assert_int_equal(v->value_case, VALUE_CASE(INT_VALUE));
			assert_true(v->int_value == a->i);
			break;
		case ATTR_BOOL:
			assert_int_equal(v->value_case, VALUE_CASE(BOOL_VALUE));
			assert_int_equal(!!v->bool_value, a->b);
			break;
		case ATTR_DOUBLE:
			assert_int_equal(v->value_case, VALUE_CASE(DOUBLE_VALUE));
			assert_memory_equal(&v->double_value, &a->d, sizeof(double));
			break;
		default:
			fail_msg("unexpected attribute type %d", a->type);
		}
	}
}

static void check_span(const pb_span *p, const struct span *s)
{
	static const uint8_t zero[8];

	assert_int_equal(p->trace_id.len, 16);
	assert_memory_equal(p->trace_id.data, s->trace_id, 16);
	assert_int_equal(p->span_id.len, 8);
	assert_memory_equal(p->span_id.data, s->span_id, 8);
	if (!memcmp(s->parent_span_id, zero, 8)) {
		assert_int_equal(p->parent_span_id.len, 0);
	} else {
		assert_int_equal(p->parent_span_id.len, 8);
		assert_memory_equal(p->parent_span_id.data, s->parent_span_id, 8);
	}
	assert_string_equal(p->name, s->name ? s->name : "");
	assert_int_equal(p->kind, s->kind);
	assert_int_equal(p->flags, s->flags);
	assert_true(p->start_time_unix_nano == s->start_ns);
	assert_true(p->end_time_unix_nano == s->end_ns);
	assert_int_equal(p->dropped_attributes_count, 0);
	assert_int_equal(p->n_events, 0);
	assert_int_equal(p->n_links, 0);
	if (s->status == SPAN_STATUS_UNSET && !s->status_msg) {
		assert_null(p->status);
	} else {
		assert_non_null(p->status);
		assert_int_equal(p->status->code, s->status);
		assert_string_equal(p->status->message, s->status_msg ? s->status_msg : "");
	}
	check_attrs(p->attributes, p->n_attributes, s->attrs, s->nattrs);
}

static void test_otlp__roundtrip_protobuf_c(void **state)
{
	struct fixture *f = *state;
	uint8_t *buf = NULL;
	pb_request *req;
	size_t len = 0;

	assert_int_equal(otlp__encode(f->spans, NSPANS, &buf, &len), 0);
	assert_non_null(buf);
	assert_true(len > 0);
	req = request_(unpack)(NULL, len, buf);
	assert_non_null(req);
	assert_int_equal(req->n_resource_spans, NGROUPS);
	for (int g = 0; g < NGROUPS; g++) {
		const pb_resource_spans *rs = req->resource_spans[g];
		const pb_scope_spans *ss;
		const struct resource *res = f->spans[groups[g][0]]->res;
		size_t n = 0;

		assert_non_null(rs->resource);
		if (res)
			check_attrs(rs->resource->attributes, rs->resource->n_attributes,
				    res->attrs, res->nattrs);
		else
			assert_int_equal(rs->resource->n_attributes, 0);
		assert_int_equal(rs->n_scope_spans, 1);
		ss = rs->scope_spans[0];
		assert_non_null(ss->scope);
		assert_string_equal(ss->scope->name, GOSPAN_NAME);
		assert_string_equal(ss->scope->version, GOSPAN_VERSION);
		while (n < 3 && groups[g][n] >= 0)
			n++;
		assert_int_equal(ss->n_spans, n);
		for (size_t i = 0; i < n; i++)
			check_span(ss->spans[i], f->spans[groups[g][i]]);
	}

	/* Literal checks, so that a mistake shared by the model and the encoder still shows. */
	assert_string_equal(req->resource_spans[0]->resource->attributes[0]->key, SC_SERVICE_NAME);
	assert_string_equal(req->resource_spans[0]->resource->attributes[0]->value->string_value,
			    "svc-a");
	{
		const pb_span *client = req->resource_spans[1]->scope_spans[0]->spans[0];
		const pb_span *root = req->resource_spans[0]->scope_spans[0]->spans[0];

		assert_string_equal(client->name, "GET");
		assert_int_equal(client->kind, 3);	   /* SPAN_KIND_CLIENT in the spec */
		assert_int_equal(client->status->code, 2); /* STATUS_CODE_ERROR in the spec */
		assert_string_equal(client->status->message, "boom: connection refused");
		assert_memory_equal(client->parent_span_id.data, parent_id, 8);
		assert_int_equal(root->parent_span_id.len, 0);
		assert_int_equal(root->flags, 1);
		assert_true(root->end_time_unix_nano - root->start_time_unix_nano == 1234567);
	}
	request_(free_unpacked)(req, NULL);
	free(buf);
}

/* The canonical text the Python decoder prints, built here from the spans that went in. */
static void dump_value(char **p, size_t *left, const struct attr *a);

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

static void dump_value(char **p, size_t *left, const struct attr *a)
{
	switch (a->type) {
	case ATTR_STRING:
		appendf(p, left, "s:%s", a->s);
		break;
	case ATTR_INT:
		appendf(p, left, "i:%" PRId64, a->i);
		break;
	case ATTR_BOOL:
		appendf(p, left, "b:%d", a->b);
		break;
	case ATTR_DOUBLE:
		appendf(p, left, "d:%.17g", a->d);
		break;
	}
}

static void dump_attrs(char **p, size_t *left, const struct attr *attrs, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		appendf(p, left, "%s%s=", i ? ";" : "", attrs[i].key);
		dump_value(p, left, &attrs[i]);
	}
}

static void dump_hex(char **p, size_t *left, const uint8_t *b, size_t n, bool empty_if_zero)
{
	bool zero = true;

	for (size_t i = 0; i < n; i++)
		zero &= !b[i];
	if (zero && empty_if_zero)
		return;
	for (size_t i = 0; i < n; i++)
		appendf(p, left, "%02x", b[i]);
}

static void expected_dump(const struct fixture *f, char *out, size_t size)
{
	char *p = out;
	size_t left = size;

	for (int g = 0; g < NGROUPS; g++) {
		const struct resource *res = f->spans[groups[g][0]]->res;

		appendf(&p, &left, "R %d ", g);
		if (res)
			dump_attrs(&p, &left, res->attrs, res->nattrs);
		appendf(&p, &left, "\nscope %s %s\n", GOSPAN_NAME, GOSPAN_VERSION);
		for (int i = 0; i < 3 && groups[g][i] >= 0; i++) {
			const struct span *s = f->spans[groups[g][i]];

			appendf(&p, &left, "S %s trace=", s->name ? s->name : "");
			dump_hex(&p, &left, s->trace_id, 16, false);
			appendf(&p, &left, " span=");
			dump_hex(&p, &left, s->span_id, 8, false);
			appendf(&p, &left, " parent=");
			dump_hex(&p, &left, s->parent_span_id, 8, true);
			appendf(&p, &left, " kind=%d start=%" PRIu64 " end=%" PRIu64, s->kind,
				s->start_ns, s->end_ns);
			appendf(&p, &left, " flags=%u status=", s->flags);
			if (s->status == SPAN_STATUS_UNSET && !s->status_msg)
				appendf(&p, &left, "-");
			else
				appendf(&p, &left, "%d:%s", s->status,
					s->status_msg ? s->status_msg : "");
			appendf(&p, &left, " attrs=");
			dump_attrs(&p, &left, s->attrs, s->nattrs);
			appendf(&p, &left, "\n");
		}
	}
}

/* Reads stdin as an ExportTraceServiceRequest and prints it canonically; no single quotes. */
static const char py_decoder[] =
	"import sys\n"
	"from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import "
	"ExportTraceServiceRequest\n"
	"req = ExportTraceServiceRequest()\n"
	"req.ParseFromString(sys.stdin.buffer.read())\n"
	"def val(v):\n"
	"    k = v.WhichOneof(\"value\")\n"
	"    if k == \"string_value\": return \"s:\" + v.string_value\n"
	"    if k == \"int_value\": return \"i:%d\" % v.int_value\n"
	"    if k == \"bool_value\": return \"b:%d\" % v.bool_value\n"
	"    if k == \"double_value\": return \"d:%.17g\" % v.double_value\n"
	"    return \"?:%s\" % k\n"
	"def attrs(kvs):\n"
	"    return \";\".join(kv.key + \"=\" + val(kv.value) for kv in kvs)\n"
	"out = []\n"
	"for i, rs in enumerate(req.resource_spans):\n"
	"    out.append(\"R %d %s\" % (i, attrs(rs.resource.attributes)))\n"
	"    for ss in rs.scope_spans:\n"
	"        out.append(\"scope %s %s\" % (ss.scope.name, ss.scope.version))\n"
	"        for s in ss.spans:\n"
	"            st = \"%d:%s\" % (s.status.code, s.status.message) if s.HasField(\"status\") "
	"else \"-\"\n"
	"            out.append(\"S %s trace=%s span=%s parent=%s kind=%d start=%d end=%d "
	"flags=%d status=%s attrs=%s\" % (s.name, s.trace_id.hex(), s.span_id.hex(), "
	"s.parent_span_id.hex(), s.kind, s.start_time_unix_nano, s.end_time_unix_nano, s.flags, "
	"st, attrs(s.attributes)))\n"
	"sys.stdout.buffer.write((\"\\n\".join(out) + \"\\n\").encode())\n";

static void test_otlp__official_python_decoder(void **state)
{
	struct fixture *f = *state;
	char want[8192], outpath[4200], *got;
	uint8_t *buf = NULL;
	size_t len = 0;
	FILE *py;
	int rc;

	if (test_sh("python3 -c 'import opentelemetry.proto.collector.trace.v1.trace_service_pb2' "
		    ">/dev/null 2>&1")) {
		TEST_SKIP("python3 or its opentelemetry-proto package is missing "
			  "(python3 -m pip install opentelemetry-proto)");
	}
	assert_int_equal(otlp__encode(f->spans, NSPANS, &buf, &len), 0);
	snprintf(outpath, sizeof(outpath), "%s/otlp_python_dump.txt", test_data_dir());
	{
		char cmd[sizeof(py_decoder) + sizeof(outpath) + 64];

		snprintf(cmd, sizeof(cmd), "python3 -c '%s' > '%s'", py_decoder, outpath);
		py = popen(cmd, "w");
	}
	assert_non_null(py);
	assert_int_equal(fwrite(buf, 1, len, py), len);
	rc = pclose(py);
	free(buf);
	assert_int_equal(rc, 0); /* the official decoder accepted the bytes (and their UTF-8) */

	got = test_read_file(outpath, NULL);
	assert_non_null(got);
	expected_dump(f, want, sizeof(want));
	assert_string_equal(got, want);
	free(got);
}

/* Many spans over many interleaved resources: grouping keeps first-appearance and span order. */
static void test_otlp__grouping_many(void **state)
{
	enum { N = 300, R = 7 };
	struct resource *res[R];
	struct span *spans[N];
	uint8_t *buf = NULL;
	size_t len = 0, seen[R] = { 0 }, expect[R] = { 0 };
	pb_request *req;

	(void)state;
	for (int r = 0; r < R; r++) {
		assert_non_null(res[r] = resource__new());
		assert_int_equal(resource__set_int(res[r], "test.res", r), 0);
	}
	/* Span i uses resource (i * 3 + 3) % 7: first appearances are 3, 6, 2, 5, 1, 4, 0. */
	for (int i = 0; i < N; i++) {
		spans[i] = span__new();
		assert_non_null(spans[i]);
		spans[i]->res = res[(i * 3 + 3) % R];
		assert_int_equal(span__set_int(spans[i], "test.seq", i), 0);
		expect[(i * 3 + 3) % R]++;
	}
	assert_int_equal(otlp__encode(spans, N, &buf, &len), 0);
	req = request_(unpack)(NULL, len, buf);
	assert_non_null(req);
	assert_int_equal(req->n_resource_spans, R);
	for (int g = 0; g < R; g++) {
		const pb_scope_spans *ss = req->resource_spans[g]->scope_spans[0];
		int64_t r = req->resource_spans[g]->resource->attributes[0]->value->int_value;
		int64_t prev = -1;

		assert_int_equal(r, (g * 3 + 3) % R);
		for (size_t i = 0; i < ss->n_spans; i++) {
			int64_t seq = ss->spans[i]->attributes[0]->value->int_value;

			assert_int_equal((seq * 3 + 3) % R, r);
			assert_true(seq > prev);
			assert_memory_equal(ss->spans[i]->span_id.data, spans[seq]->span_id, 8);
			prev = seq;
			seen[r]++;
		}
	}
	for (int r = 0; r < R; r++)
		assert_int_equal(seen[r], expect[r]);
	request_(free_unpacked)(req, NULL);
	free(buf);
	for (int i = 0; i < N; i++)
		span__free(spans[i]);
	for (int r = 0; r < R; r++)
		resource__free(res[r]);
}

/*
 * Spans at every limit of the span model: all attribute slots used, keys and strings outside
 * the arena (counted one by one) and inside it (counted by the arena's fill), the arena full,
 * integers taking the longest varint, a span over 16 KiB (its length takes three bytes), beside
 * spans of a few bytes. The output buffer is sized by a bound, not by protobuf-c's sizing: the
 * sanitized build of this test is what proves the bound holds. The bytes must also be exactly
 * what protobuf-c makes of the decoded request.
 */
static void test_otlp__spans_at_the_limits(void **state)
{
	enum { N = 5 };
	static char long_key[SPAN_MAX_ATTRS][700];
	static char long_text[3000];
	struct span *spans[N];
	struct resource *res;
	uint8_t *buf = NULL, *again;
	size_t len = 0, i;
	pb_request *req;
	char value[64];

	(void)state;
	memset(long_text, 'n', sizeof(long_text) - 1);
	assert_non_null(res = resource__new());
	for (i = 0; i < RESOURCE_MAX_ATTRS; i++) {
		snprintf(value, sizeof(value), "res.attr.%zu", i);
		assert_int_equal(resource__set_str(res, value, long_text + 2000), 0);
	}
	for (i = 0; i < N; i++) {
		assert_non_null(spans[i] = span__new());
		span__set_resource(spans[i], res);
	}
	/* Span 0: literal keys, name, tracestate and message outside the arena; the arena full. */
	spans[0]->name = long_text;
	spans[0]->name_len = strlen(long_text);
	spans[0]->trace_state = long_text + 1000;
	spans[0]->status_msg = long_text + 500;
	spans[0]->status = SPAN_STATUS_ERROR;
	spans[0]->flags = 0xffffffff;
	spans[0]->parent_known = spans[0]->remote_parent = true;
	memset(spans[0]->parent_span_id, 0xff, sizeof(spans[0]->parent_span_id));
	spans[0]->start_ns = spans[0]->end_ns = UINT64_MAX;
	spans[0]->kind = SPAN_KIND_CONSUMER;
	for (i = 0; i < SPAN_MAX_ATTRS; i++) {
		memset(long_key[i], 'k', sizeof(long_key[i]) - 1);
		long_key[i][0] = (char)('A' + i);
		if (i % 4 == 0)
			assert_int_equal(span__set_int(spans[0], long_key[i], INT64_MIN), 0);
		else if (i % 4 == 1)
			assert_int_equal(span__set_double(spans[0], long_key[i], -1e308), 0);
		else if (i % 4 == 2)
			assert_int_equal(span__set_bool(spans[0], long_key[i], true), 0);
		else
			span__set_str(spans[0], long_key[i], long_text, 200);
	}
	/* Span 1: keys and values in the arena, as records.c makes them, until it is full. */
	for (i = 0; i < SPAN_MAX_ATTRS; i++) {
		const char *key = span__strndup(spans[1], long_text, 30 + i);

		if (!key || span__set_str(spans[1], key, long_text, 100))
			break;
	}
	assert_true(spans[1]->arena_used > SPAN_ARENA_SIZE - 200);
	/* Spans 2..4: nothing but ids, a few bytes each. */

	assert_int_equal(otlp__encode(spans, N, &buf, &len), 0);
	req = request_(unpack)(NULL, len, buf);
	assert_non_null(req);
	assert_int_equal(request_(get_packed_size)(req), len);
	again = malloc(len);
	assert_non_null(again);
	assert_int_equal(request_(pack)(req, again), len);
	assert_memory_equal(again, buf, len);
	assert_int_equal(req->n_resource_spans, 1);
	assert_int_equal(req->resource_spans[0]->resource->n_attributes, RESOURCE_MAX_ATTRS);
	{
		const pb_scope_spans *ss = req->resource_spans[0]->scope_spans[0];
		const pb_span *p = ss->spans[0];

		assert_int_equal(ss->n_spans, N);
		assert_true(len > 16384);
		assert_string_equal(p->name, long_text);
		assert_string_equal(p->trace_state, long_text + 1000);
		assert_string_equal(p->status->message, long_text + 500);
		assert_int_equal(p->n_attributes, SPAN_MAX_ATTRS);
		assert_int_equal(p->attributes[0]->value->int_value, INT64_MIN);
		assert_string_equal(p->attributes[SPAN_MAX_ATTRS - 1]->key,
				    long_key[SPAN_MAX_ATTRS - 1]);
		assert_int_equal(ss->spans[1]->n_attributes, spans[1]->nattrs);
		for (i = 2; i < N; i++)
			assert_memory_equal(ss->spans[i]->span_id.data, spans[i]->span_id, 8);
	}
	request_(free_unpacked)(req, NULL);
	free(again);
	free(buf);
	for (i = 0; i < N; i++)
		span__free(spans[i]);
	resource__free(res);
}

/*
 * The request as protobuf-c builds and packs it from the same spans: a message tree per span,
 * as otlp.c made before it wrote spans itself. The mapping is OTLP's (trace.proto), written out
 * here on its own so that the encoder is held to it, not to itself.
 */
struct ref_span {
	Opentelemetry__Proto__Trace__V1__Span span;
	Opentelemetry__Proto__Trace__V1__Status status;
	pb_key_value kv[SPAN_MAX_ATTRS], *kvp[SPAN_MAX_ATTRS];
	pb_any_value av[SPAN_MAX_ATTRS];
};

static void ref_span(struct ref_span *r, const struct span *s)
{
	static const uint8_t zero[8];
	pb_span *p = &r->span;
	size_t i;

	opentelemetry__proto__trace__v1__span__init(p);
	p->trace_id.data = (uint8_t *)s->trace_id;
	p->trace_id.len = 16;
	p->span_id.data = (uint8_t *)s->span_id;
	p->span_id.len = 8;
	if (memcmp(s->parent_span_id, zero, 8)) {
		p->parent_span_id.data = (uint8_t *)s->parent_span_id;
		p->parent_span_id.len = 8;
	}
	p->flags = (s->flags & 0xff) | (s->parent_known ? 0x100 : 0) |
		   (s->parent_known && s->remote_parent ? 0x200 : 0);
	p->trace_state = (char *)(s->trace_state ? s->trace_state : "");
	p->name = (char *)(s->name ? s->name : "");
	p->kind = (Opentelemetry__Proto__Trace__V1__Span__SpanKind)s->kind;
	p->start_time_unix_nano = s->start_ns;
	p->end_time_unix_nano = s->end_ns;
	for (i = 0; i < s->nattrs; i++) {
		const struct attr *a = &s->attrs[i];
		pb_any_value *v = &r->av[p->n_attributes];
		pb_key_value *kv = &r->kv[p->n_attributes];

		opentelemetry__proto__common__v1__any_value__init(v);
		opentelemetry__proto__common__v1__key_value__init(kv);
		if (!a->key || a->type > ATTR_DOUBLE) {
			p->dropped_attributes_count++;
			continue;
		}
		if (a->type == ATTR_STRING) {
			v->value_case = VALUE_CASE(STRING_VALUE);
			v->string_value = (char *)a->s;
		} else if (a->type == ATTR_INT) {
			v->value_case = VALUE_CASE(INT_VALUE);
			v->int_value = a->i;
		} else if (a->type == ATTR_BOOL) {
			v->value_case = VALUE_CASE(BOOL_VALUE);
			v->bool_value = a->b;
		} else {
			v->value_case = VALUE_CASE(DOUBLE_VALUE);
			v->double_value = a->d;
		}
		kv->key = (char *)a->key;
		kv->value = v;
		r->kvp[p->n_attributes++] = kv;
	}
	p->attributes = r->kvp;
	if (s->status != SPAN_STATUS_UNSET || s->status_msg) {
		opentelemetry__proto__trace__v1__status__init(&r->status);
		r->status.code = (Opentelemetry__Proto__Trace__V1__Status__StatusCode)s->status;
		r->status.message = (char *)(s->status_msg ? s->status_msg : "");
		p->status = &r->status;
	}
}

/* What protobuf-c packs for N spans of one resource RES; *LEN its length, malloc'ed. */
static uint8_t *ref_request(struct span *const *spans, size_t n, const struct resource *res,
			    size_t *len)
{
	Opentelemetry__Proto__Common__V1__InstrumentationScope scope =
		OPENTELEMETRY__PROTO__COMMON__V1__INSTRUMENTATION_SCOPE__INIT;
	Opentelemetry__Proto__Resource__V1__Resource pres =
		OPENTELEMETRY__PROTO__RESOURCE__V1__RESOURCE__INIT;
	pb_scope_spans ss = OPENTELEMETRY__PROTO__TRACE__V1__SCOPE_SPANS__INIT, *ssp = &ss;
	pb_resource_spans rs = OPENTELEMETRY__PROTO__TRACE__V1__RESOURCE_SPANS__INIT, *rsp = &rs;
	pb_request req =
		OPENTELEMETRY__PROTO__COLLECTOR__TRACE__V1__EXPORT_TRACE_SERVICE_REQUEST__INIT;
	pb_key_value rkv[RESOURCE_MAX_ATTRS], *rkvp[RESOURCE_MAX_ATTRS];
	pb_any_value rav[RESOURCE_MAX_ATTRS];
	struct ref_span *r = calloc(n, sizeof(*r));
	pb_span **sp = calloc(n, sizeof(*sp));
	uint8_t *out;
	size_t i;

	assert_non_null(r);
	assert_non_null(sp);
	for (i = 0; res && i < res->nattrs; i++) {
		assert_true(otlp__any_value(&rav[i], &res->attrs[i]));
		opentelemetry__proto__common__v1__key_value__init(&rkv[i]);
		rkv[i].key = (char *)res->attrs[i].key;
		rkv[i].value = &rav[i];
		rkvp[i] = &rkv[i];
	}
	pres.n_attributes = res ? res->nattrs : 0;
	pres.attributes = rkvp;
	scope.name = GOSPAN_NAME;
	scope.version = GOSPAN_VERSION;
	for (i = 0; i < n; i++) {
		ref_span(&r[i], spans[i]);
		sp[i] = &r[i].span;
	}
	ss.scope = &scope;
	ss.n_spans = n;
	ss.spans = sp;
	rs.resource = &pres;
	rs.n_scope_spans = 1;
	rs.scope_spans = &ssp;
	req.n_resource_spans = 1;
	req.resource_spans = &rsp;
	*len = request_(get_packed_size)(&req);
	out = malloc(*len);
	assert_non_null(out);
	assert_int_equal(request_(pack)(&req, out), *len);
	free(sp);
	free(r);
	return out;
}

/*
 * otlp.c writes spans itself: its bytes must be protobuf-c's for the same message, exactly, in
 * every corner the wire format has. Proto3 defaults left out (kind 0, times 0, an empty name or
 * tracestate, an unset status without a message) and oneof members kept however zero; an empty
 * status message with an unset code (a Status of no bytes); every flag bit; values that were
 * made valid UTF-8 (longer than what came in) or hold a NUL; lengths of one, two and three
 * varint bytes; negative and NaN numbers; attributes with no key or an unknown type (dropped,
 * and counted).
 */
static void test_otlp__spans_as_protobuf_c_packs_them(void **state)
{
	enum { N = 5 };
	static char big[SPAN_ARENA_SIZE - 64];
	struct span *spans[N];
	struct resource *res;
	uint8_t *buf = NULL, *want;
	size_t len = 0, want_len, i;
	struct span *s;

	(void)state;
	memset(big, 'v', sizeof(big) - 1);
	assert_non_null(res = resource__new());
	assert_int_equal(resource__set_str(res, SC_SERVICE_NAME, "svc"), 0);
	assert_int_equal(resource__set_int(res, SC_PROCESS_PID, -7), 0);
	for (i = 0; i < N; i++) {
		assert_non_null(spans[i] = span__new());
		spans[i]->res = res;
	}

	/* Everything at its default but the ids, and an empty Status. */
	s = spans[0];
	s->status_msg = span__strndup(s, "", 0);
	s->trace_state = span__strndup(s, "", 0);
	assert_int_equal(span__set_name(s, "", 0), 0);

	/* Every field, a remote parent, values of every type at their edges. */
	s = spans[1];
	s->kind = SPAN_KIND_CONSUMER;
	s->start_ns = 1;
	s->end_ns = UINT64_MAX;
	s->flags = 0x01;
	s->parent_known = s->remote_parent = true;
	memcpy(s->parent_span_id, parent_id, 8);
	s->trace_state = span__strndup(s, "congo=t61rcWkgMzE", 17);
	s->status = SPAN_STATUS_OK;
	assert_int_equal(span__set_name(s, "receive orders", 14), 0);
	assert_int_equal(span__set_str(s, "bad.utf8", "a\xff\xc3(z", 5), 0);
	assert_int_equal(span__set_str(s, "empty", "", 0), 0);
	assert_int_equal(span__set_str(s, "long", big, 200), 0);
	assert_int_equal(span__set_int(s, "minus.one", -1), 0);
	assert_int_equal(span__set_int(s, "zero", 0), 0);
	assert_int_equal(span__set_int(s, "max", INT64_MAX), 0);
	assert_int_equal(span__set_bool(s, "false", false), 0);
	assert_int_equal(span__set_bool(s, "true", true), 0);
	assert_int_equal(span__set_double(s, "nan", NAN), 0);
	assert_int_equal(span__set_double(s, "minus.zero", -0.0), 0);
	assert_int_equal(span__set_str(s, "", "no key", 6), 0);
	/* A Go string may hold a NUL: C code, protobuf-c's strlen included, reads it to there. */
	assert_int_equal(span__set_str(s, "nul", "ab\0cd", 5), 0);
	assert_int_equal(span__get(s, "nul")->len, 2);
	assert_int_equal(span__get(s, "bad.utf8")->len, strlen(span__get(s, "bad.utf8")->s));

	/* A parent known to be local; attributes the encoder cannot write. */
	s = spans[2];
	s->kind = SPAN_KIND_SERVER;
	s->parent_known = true;
	s->status = SPAN_STATUS_ERROR;
	s->status_msg = span__strndup(s, "handler panicked", 16);
	assert_int_equal(span__set_int(s, "kept", 1), 0);
	assert_int_equal(span__set_int(s, "no.key", 2), 0);
	assert_int_equal(span__set_int(s, "bad.type", 3), 0);
	s->attrs[1].key = NULL;
	s->attrs[2].type = (enum attr_type)(ATTR_DOUBLE + 1);

	/* A value whose length takes two varint bytes, in a span that takes three. */
	s = spans[3];
	assert_int_equal(span__set_str(s, SC_URL_PATH, big, sizeof(big) - 1), 0);
	for (i = 0; i < 40; i++)
		spans[4]->start_ns = spans[4]->start_ns * 31 + i;
	spans[4]->flags = 0xff;

	assert_int_equal(otlp__encode(spans, N, &buf, &len), 0);
	want = ref_request(spans, N, res, &want_len);
	assert_int_equal(len, want_len);
	assert_memory_equal(buf, want, len);
	free(want);
	free(buf);
	for (i = 0; i < N; i++)
		span__free(spans[i]);
	resource__free(res);
}

static void test_otlp__bad_arguments(void **state)
{
	struct fixture *f = *state;
	struct span *with_null[2] = { f->spans[0], NULL };
	uint8_t *buf = (uint8_t *)"untouched";
	size_t len = 7;

	assert_int_equal(otlp__encode(f->spans, 0, &buf, &len), -EINVAL);
	assert_int_equal(otlp__encode(NULL, 1, &buf, &len), -EINVAL);
	assert_int_equal(otlp__encode(f->spans, 1, NULL, &len), -EINVAL);
	assert_int_equal(otlp__encode(f->spans, 1, &buf, NULL), -EINVAL);
	assert_int_equal(otlp__encode(with_null, 2, &buf, &len), -EINVAL);
	/* A failed call leaves the outputs alone. */
	assert_string_equal((char *)buf, "untouched");
	assert_int_equal(len, 7);
}

/* OTLP/JSON: hex ids (not base64), 64-bit integers as strings, a root span without a parent. */
static void test_otlp__json_encoding(void **state)
{
	struct resource *res = resource__new();
	struct span *root = span__new(), *child = span__new();
	struct span *spans[2] = { root, child };
	const cJSON *rs, *sp, *a, *v;
	char *text, hex[17];
	size_t len, i;
	cJSON *doc;

	(void)state;
	assert_non_null(res);
	assert_non_null(root);
	assert_non_null(child);
	assert_int_equal(resource__set_str(res, SC_SERVICE_NAME, "svc"), 0);
	root->res = child->res = res;
	root->kind = SPAN_KIND_SERVER;
	root->start_ns = 1700000000123456789ULL;
	root->end_ns = 1700000000223456789ULL;
	assert_int_equal(span__set_name(root, "GET /a", 6), 0);
	assert_int_equal(span__set_int(root, SC_HTTP_RESPONSE_STATUS_CODE, 503), 0);
	root->status = SPAN_STATUS_ERROR;
	memcpy(child->trace_id, root->trace_id, sizeof(root->trace_id));
	memcpy(child->parent_span_id, root->span_id, sizeof(root->span_id));
	child->kind = SPAN_KIND_CLIENT;

	assert_int_equal(otlp__encode_json(spans, 2, &text, &len), 0);
	assert_int_equal(strlen(text), len);
	doc = cJSON_Parse(text);
	assert_non_null(doc);
	rs = cJSON_GetArrayItem(cJSON_GetObjectItem(doc, "resourceSpans"), 0);
	assert_non_null(rs);
	assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(doc, "resourceSpans")), 1);
	sp = cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(rs, "scopeSpans"), 0),
				 "spans");
	assert_int_equal(cJSON_GetArraySize(sp), 2);
	a = cJSON_GetArrayItem(sp, 0);
	for (i = 0; i < 8; i++)
		snprintf(hex + 2 * i, 3, "%02x", root->span_id[i]);
	assert_string_equal(cJSON_GetObjectItem(a, "spanId")->valuestring, hex);
	assert_int_equal(strlen(cJSON_GetObjectItem(a, "traceId")->valuestring), 32);
	assert_null(cJSON_GetObjectItem(a, "parentSpanId"));
	assert_string_equal(cJSON_GetObjectItem(a, "startTimeUnixNano")->valuestring,
			    "1700000000123456789");
	assert_int_equal(cJSON_GetObjectItem(a, "kind")->valueint, SPAN_KIND_SERVER);
	assert_int_equal(cJSON_GetObjectItem(cJSON_GetObjectItem(a, "status"), "code")->valueint,
			 SPAN_STATUS_ERROR);
	v = cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(a, "attributes"), 0),
				"value");
	assert_string_equal(cJSON_GetObjectItem(v, "intValue")->valuestring, "503");
	assert_string_equal(cJSON_GetObjectItem(cJSON_GetArrayItem(sp, 1), "parentSpanId")
				    ->valuestring,
			    hex);
	cJSON_Delete(doc);
	free(text);
	span__free(root);
	span__free(child);
	resource__free(res);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_otlp__roundtrip_protobuf_c, setup, teardown),
		cmocka_unit_test_setup_teardown(test_otlp__official_python_decoder, setup,
						teardown),
		cmocka_unit_test(test_otlp__grouping_many),
		cmocka_unit_test(test_otlp__spans_at_the_limits),
		cmocka_unit_test(test_otlp__spans_as_protobuf_c_packs_them),
		cmocka_unit_test(test_otlp__json_encoding),
		cmocka_unit_test_setup_teardown(test_otlp__bad_arguments, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
