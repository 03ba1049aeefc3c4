// SPDX-License-Identifier: MIT
/*
 * Unit tests for console.c: the exact line for known spans, quoting and escaping of values that
 * would otherwise break a line apart, snprintf-like truncation, and the sink writing a batch to a
 * real stream (and reporting a stream it cannot write to).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "console.h"
#include "export.h"
#include "helpers.h"
#include "semconv.h"
#include "span.h"

static const uint8_t trace_id[16] = { 0x4b, 0xf9, 0x2f, 0x35, 0x77, 0xb3, 0x4d, 0xa6,
				      0xa3, 0xce, 0x92, 0x9d, 0x0e, 0x0e, 0x47, 0x36 };
static const uint8_t span_id[8] = { 0x00, 0xf0, 0x67, 0xaa, 0x0b, 0xa9, 0x02, 0xb7 };
static const uint8_t parent_id[8] = { 0x53, 0x99, 0x5c, 0x3f, 0x42, 0xcd, 0x8a, 0xd8 };

/* A server span with fixed ids, as records.c would build it. */
static struct span *server_span(const struct resource *res)
{
	struct span *s = span__new();

	assert_non_null(s);
	memcpy(s->trace_id, trace_id, sizeof(trace_id));
	memcpy(s->span_id, span_id, sizeof(span_id));
	s->res = res;
	s->kind = SPAN_KIND_SERVER;
	s->start_ns = 1700000000000000000ULL;
	s->end_ns = s->start_ns + 1234567;
	assert_int_equal(span__set_name(s, "GET /users/{id}", 15), 0);
	assert_int_equal(span__set_str(s, SC_HTTP_REQUEST_METHOD, "GET", 3), 0);
	assert_int_equal(span__set_str(s, SC_URL_PATH, "/users/42", 9), 0);
	assert_int_equal(span__set_int(s, SC_HTTP_RESPONSE_STATUS_CODE, 200), 0);
	return s;
}

static void test_console__server_line(void **state)
{
	struct resource *res = resource__new();
	struct span *s;
	char buf[512];
	int n;

	(void)state;
	assert_non_null(res);
	assert_int_equal(resource__set_str(res, SC_SERVICE_NAME, "users"), 0);
	s = server_span(res);
	n = console__format_span(s, buf, sizeof(buf));
	assert_string_equal(buf, "SERVER GET /users/{id} 200 1.235ms "
				 "trace=4bf92f3577b34da6a3ce929d0e0e4736 span=00f067aa0ba902b7 "
				 "parent=- service=users http.request.method=GET "
				 "url.path=/users/42 http.response.status_code=200");
	assert_int_equal(n, strlen(buf));
	span__free(s);
	resource__free(res);
}

static void test_console__client_error_line(void **state)
{
	struct span *s = span__new();
	char buf[512];

	(void)state;
	assert_non_null(s);
	memcpy(s->trace_id, trace_id, sizeof(trace_id));
	memcpy(s->span_id, span_id, sizeof(span_id));
	memcpy(s->parent_span_id, parent_id, sizeof(parent_id));
	s->kind = SPAN_KIND_CLIENT;
	s->start_ns = 5000;
	s->end_ns = 5000 + 2500000000ULL;
	s->status = SPAN_STATUS_ERROR;
	s->status_msg = span__strndup(s, "handler panicked", 16);
	assert_int_equal(span__set_name(s, "POST", 4), 0);
	assert_int_equal(span__set_str(s, SC_ERROR_TYPE, "connection refused", 18), 0);
	assert_int_equal(span__set_bool(s, "test.retry", false), 0);
	assert_int_equal(span__set_double(s, "test.ratio", 0.5), 0);
	assert_int_equal(span__set_int(s, SC_SERVER_PORT, -1), 0);
	console__format_span(s, buf, sizeof(buf));
	/* No resource, so no service; no HTTP status, so none up front. */
	assert_string_equal(buf, "CLIENT POST 2500.000ms trace=4bf92f3577b34da6a3ce929d0e0e4736 "
				 "span=00f067aa0ba902b7 parent=53995c3f42cd8ad8 service=- "
				 "status=ERROR status.message=\"handler panicked\" "
				 "error.type=\"connection refused\" test.retry=false "
				 "test.ratio=0.5 server.port=-1");
	span__free(s);
}

static void test_console__escaping(void **state)
{
	struct resource *res = resource__new();
	struct span *s;
	char buf[1024];

	(void)state;
	assert_non_null(res);
	assert_int_equal(resource__set_str(res, SC_SERVICE_NAME, "my shop"), 0);
	s = span__new();
	assert_non_null(s);
	s->res = res;
	s->kind = SPAN_KIND_INTERNAL;
	assert_int_equal(span__set_name(s, "a\nb", 3), 0);
	assert_int_equal(span__set_str(s, "q", "say \"hi\"\\", 9), 0);
	assert_int_equal(span__set_str(s, "nl", "x\ny\x01", 4), 0);
	assert_int_equal(span__set_str(s, "empty", "", 0), 0);
	assert_int_equal(span__set_str(s, "eq", "a=b", 3), 0);
	assert_int_equal(span__set_str(s, "utf8", "caf\xc3\xa9", 5), 0);
	console__format_span(s, buf, sizeof(buf));
	/* One line whatever the values hold, and every quoted value can be read back. */
	assert_null(strchr(buf, '\n'));
	assert_non_null(strstr(buf, "INTERNAL a\\nb 0.000ms "));
	assert_non_null(strstr(buf, " service=\"my shop\""));
	assert_non_null(strstr(buf, " q=\"say \\\"hi\\\"\\\\\""));
	assert_non_null(strstr(buf, " nl=\"x\\ny\\x01\""));
	assert_non_null(strstr(buf, " empty=\"\""));
	assert_non_null(strstr(buf, " eq=\"a=b\""));
	assert_non_null(strstr(buf, " utf8=caf\xc3\xa9"));
	span__free(s);
	resource__free(res);
}

static void test_console__truncates_like_snprintf(void **state)
{
	struct span *s = server_span(NULL);
	char full[512], small[40];
	int n, m;

	(void)state;
	n = console__format_span(s, full, sizeof(full));
	memset(small, 'X', sizeof(small));
	m = console__format_span(s, small, 20);
	assert_int_equal(m, n); /* the length it would have had */
	assert_int_equal(strlen(small), 19);
	assert_memory_equal(small, full, 19);
	assert_int_equal(small[20], 'X');
	assert_int_equal(console__format_span(s, NULL, 0), n);
	span__free(s);
}

static void test_console__sink_writes_batch(void **state)
{
	struct resource *res = resource__new();
	struct span *spans[40];
	char *out = NULL, *line, *save = NULL, want[512];
	size_t outlen = 0;
	FILE *mem;
	void *ctx;
	int i;

	(void)state;
	assert_non_null(res);
	assert_int_equal(resource__set_str(res, SC_SERVICE_NAME, "users"), 0);
	for (i = 0; i < 40; i++) {
		char path[300];

		spans[i] = server_span(res);
		/* Long values: the batch outgrows the sink's first buffer. */
		memset(path, 'p', sizeof(path));
		snprintf(path, 16, "/item/%d/", i);
		path[strlen(path)] = 'p';
		assert_int_equal(span__set_str(spans[i], SC_URL_PATH, path, sizeof(path)), 0);
	}
	mem = open_memstream(&out, &outlen);
	assert_non_null(mem);
	ctx = console_sink__new(mem);
	assert_non_null(ctx);
	assert_string_equal(console_sink_ops.name, "console");
	assert_int_equal(console_sink_ops.export(ctx, spans, 40), 0);
	/* The sink flushes, so the lines are there without closing the stream. */
	assert_non_null(out);
	for (i = 0, line = strtok_r(out, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save), i++) {
		assert_true(i < 40);
		console__format_span(spans[i], want, sizeof(want));
		assert_string_equal(line, want);
		assert_non_null(strstr(line, " url.path=/item/"));
	}
	assert_int_equal(i, 40);
	assert_int_equal(console_sink_ops.export(ctx, spans, 0), 0);
	console_sink_ops.free(ctx);
	assert_int_equal(fclose(mem), 0);
	free(out);
	for (i = 0; i < 40; i++)
		span__free(spans[i]);
	resource__free(res);
}

static void test_console__sink_reports_write_failure(void **state)
{
	struct span *s = server_span(NULL);
	FILE *ro = fopen("/dev/null", "r"); /* open for reading: every write fails */
	void *ctx;

	(void)state;
	assert_non_null(ro);
	ctx = console_sink__new(ro);
	assert_non_null(ctx);
	assert_true(console_sink_ops.export(ctx, &s, 1) < 0);
	console_sink_ops.free(ctx);
	fclose(ro);
	span__free(s);

	errno = 0;
	assert_null(console_sink__new(NULL));
	assert_int_equal(errno, EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_console__server_line),
		cmocka_unit_test(test_console__client_error_line),
		cmocka_unit_test(test_console__escaping),
		cmocka_unit_test(test_console__truncates_like_snprintf),
		cmocka_unit_test(test_console__sink_writes_batch),
		cmocka_unit_test(test_console__sink_reports_write_failure),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
