// SPDX-License-Identifier: MIT
/*
 * Unit tests for console.c: the exact full line for known spans, quoting and escaping of values
 * that would otherwise break a line apart, snprintf-like truncation; and the sink's waterfall on a
 * real stream: the exact layout of a crafted trace, trees built from spans arriving out of order
 * over several batches, roots with a remote parent, late children, traces whose root never comes
 * (timeout, full buffer, free), the memory bound, and a stream it cannot write to. Spans are
 * scribbled over and freed right after each export, as the exporter does, so the sink must have
 * copied what it prints.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "export/console.h"
#include "export/export.h"
#include "helpers.h"
#include "model/metrics.h"
#include "model/semconv.h"
#include "model/span.h"

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

/* ---- the sink ------------------------------------------------------------------------------ */

#define T0 1700000000000000000ULL
#define HASHES "########################################" /* BAR_WIDTH marks */

static uint64_t fake_now_ns;

static uint64_t fake_now(void)
{
	return fake_now_ns;
}

/* What a sink wrote, read back from a memory stream. */
struct capture {
	FILE *f;
	char *buf;
	size_t len;
	size_t seen; /* how much next() already returned */
};

static void capture_open(struct capture *c)
{
	memset(c, 0, sizeof(*c));
	c->f = open_memstream(&c->buf, &c->len);
	assert_non_null(c->f);
}

/* What was written since the last call (the sink flushes, so no fclose is needed). */
static char *capture_next(struct capture *c)
{
	char *s;

	assert_int_equal(fflush(c->f), 0);
	s = strndup(c->buf ? c->buf + c->seen : "", c->len - c->seen);
	assert_non_null(s);
	c->seen = c->len;
	return s;
}

static void capture_close(struct capture *c)
{
	assert_int_equal(fclose(c->f), 0);
	free(c->buf);
}

static void *sink_new(FILE *f, size_t max_pending, bool verbose)
{
	struct console_opts opts = {
	    .out = f,
	    .verbose = verbose,
	    .max_pending = max_pending,
	    .orphan_ms = 1000,
	    .now_ns = fake_now,
	};
	void *ctx;

	fake_now_ns = 5000000000ULL;
	ctx = console_sink__new_opts(&opts);
	assert_non_null(ctx);
	return ctx;
}

/*
 * A span of trace TRACE, id ID, child of PARENT (0: none), from START_US to END_US after T0.
 * Ids differ in their first byte, and a filler in the rest, so they look like real ids.
 */
static struct span *mk(const struct resource *res, uint8_t trace, uint8_t id, uint8_t parent,
		       enum span_kind kind, const char *name, uint64_t start_us, uint64_t end_us)
{
	struct span *s = span__new();

	assert_non_null(s);
	memcpy(s->trace_id, trace_id, sizeof(trace_id));
	s->trace_id[15] = trace;
	memset(s->span_id, 0x5a, sizeof(s->span_id));
	s->span_id[0] = id;
	memset(s->parent_span_id, 0, sizeof(s->parent_span_id));
	if (parent) {
		memset(s->parent_span_id, 0x5a, sizeof(s->parent_span_id));
		s->parent_span_id[0] = parent;
	}
	s->parent_known = parent != 0; /* as records.c sets it */
	s->res = res;
	s->kind = kind;
	s->start_ns = T0 + start_us * 1000;
	s->end_ns = T0 + end_us * 1000;
	assert_int_equal(span__set_name(s, name, strlen(name)), 0);
	return s;
}

/* Exports N spans as one batch, then scribbles over them and frees them, as the exporter would. */
static void send(void *ctx, struct span **spans, size_t n)
{
	size_t i;

	assert_int_equal(console_sink_ops.export(ctx, spans, n), 0);
	for (i = 0; i < n; i++) {
		const struct resource *res = spans[i]->res;
		struct span_chunk *chunk = spans[i]->chunk;
		bool held = spans[i]->res_held;

		/* All but what span__free reads: the resource it holds and where it was made. */
		memset(spans[i], 0xa5, sizeof(*spans[i]));
		spans[i]->res = res;
		spans[i]->res_held = held;
		spans[i]->chunk = chunk;
		span__free(spans[i]);
		spans[i] = NULL;
	}
}

static void send1(void *ctx, struct span *s)
{
	send(ctx, &s, 1);
}

static size_t count(const char *hay, const char *needle)
{
	size_t n = 0;

	for (; (hay = strstr(hay, needle)); hay++)
		n++;
	return n;
}

static struct resource *service(const char *name)
{
	struct resource *res = resource__new();

	assert_non_null(res);
	assert_int_equal(resource__set_str(res, SC_SERVICE_NAME, name), 0);
	return res;
}

/* The exact layout: label column, dot leaders, durations, and which bar columns are marked. */
static void test_console__waterfall_exact(void **state)
{
	struct resource *res = service("frontend");
	struct span *b[5];
	struct capture cap;
	char *out;
	void *ctx;

	(void)state;
	capture_open(&cap);
	ctx = sink_new(cap.f, 0, false);
	/* Children first, as they end first; the root's window is 0..40 ms, one column per ms. */
	b[0] = mk(res, 1, 2, 1, SPAN_KIND_CLIENT, "GET", 10000, 30000);
	assert_int_equal(span__set_int(b[0], SC_HTTP_RESPONSE_STATUS_CODE, 200), 0);
	assert_int_equal(span__set_str(b[0], SC_SERVER_ADDRESS, "127.0.0.1", 9), 0);
	assert_int_equal(span__set_int(b[0], SC_SERVER_PORT, 8081), 0);
	b[1] = mk(res, 1, 3, 1, SPAN_KIND_INTERNAL, "tick", 20000, 20000);
	b[2] = mk(res, 1, 4, 1, SPAN_KIND_CLIENT, "GET", 35000, 40000);
	b[2]->status = SPAN_STATUS_ERROR;
	assert_int_equal(span__set_str(b[2], SC_ERROR_TYPE, "connection refused", 18), 0);
	/* Between columns: from the one it starts in to the one it ends in, both included. */
	b[3] = mk(res, 1, 5, 1, SPAN_KIND_INTERNAL, "parse", 500, 2200);
	b[4] = mk(res, 1, 1, 0, SPAN_KIND_SERVER, "GET /direct/{id}", 0, 40000);
	assert_int_equal(span__set_int(b[4], SC_HTTP_RESPONSE_STATUS_CODE, 200), 0);
	send(ctx, b, 5);
	out = capture_next(&cap);
	/* The label column is the longest margin + label: 4 + 35 for the failed call. */
	assert_string_equal(out,
			    "trace 4bf92f3577b34da6a3ce929d0e0e4701  frontend  5 spans  40.000 ms\n"
			    "  SERVER GET /direct/{id} 200 ..........    40.000 ms |" HASHES "|\n"
			    "    INTERNAL parse .....................     1.700 ms "
			    "|###                                     |\n"
			    "    CLIENT GET 200 -> 127.0.0.1:8081 ...    20.000 ms "
			    "|          ####################          |\n"
			    "    INTERNAL tick ......................     0.000 ms "
			    "|                    #                   |\n"
			    "    CLIENT GET ERROR connection refused      5.000 ms "
			    "|                                   #####|\n"
			    "\n");
	free(out);
	/* A trace with shorter labels keeps the column: its bar lines up with those above. */
	send1(ctx, mk(res, 2, 1, 0, SPAN_KIND_SERVER, "GET /x", 0, 7));
	out = capture_next(&cap);
	assert_string_equal(out,
			    "trace 4bf92f3577b34da6a3ce929d0e0e4702  frontend  1 span  0.007 ms\n"
			    "  SERVER GET /x ........................     0.007 ms |" HASHES "|\n"
			    "\n");
	free(out);
	console_sink_ops.free(ctx);
	out = capture_next(&cap);
	assert_string_equal(out, ""); /* nothing was left to flush */
	free(out);
	capture_close(&cap);
	resource__free(res);
}

/* Returns the line of OUT that contains NEEDLE, as a new string. */
static char *line_with(const char *out, const char *needle)
{
	const char *p = strstr(out, needle), *start, *end;
	char *line;

	if (!p)
		fail_msg("no line with '%s' in:\n%s", needle, out);
	for (start = p; start > out && start[-1] != '\n'; start--)
		;
	end = strchr(p, '\n');
	line = strndup(start, end ? (size_t)(end - start) : strlen(start));
	assert_non_null(line);
	return line;
}

static size_t margin(const char *line)
{
	return strspn(line, " ");
}

/* Spans over four batches, children before parents and another trace in between. */
static void test_console__out_of_order_batches(void **state)
{
	struct resource *res = service("shop");
	struct span *b[2];
	struct capture cap;
	char *out, *l;
	const char *p;
	void *ctx;

	(void)state;
	capture_open(&cap);
	ctx = sink_new(cap.f, 0, false);
	/* Trace 7: root 1 (0..100 ms) -> 2 "late-start" (50..90) -> 3 (60..70); 1 -> 4 (5..20). */
	send1(ctx, mk(res, 7, 3, 2, SPAN_KIND_CLIENT, "grandchild", 60000, 70000));
	b[0] = mk(res, 7, 4, 1, SPAN_KIND_CLIENT, "early", 5000, 20000);
	b[1] = mk(res, 8, 9, 5, SPAN_KIND_CLIENT, "other-trace", 0, 1000);
	send(ctx, b, 2);
	send1(ctx, mk(res, 7, 2, 1, SPAN_KIND_SERVER, "middle", 50000, 90000));
	out = capture_next(&cap);
	assert_string_equal(out, ""); /* no root yet: nothing printed */
	free(out);

	send1(ctx, mk(res, 7, 1, 0, SPAN_KIND_SERVER, "root", 0, 100000));
	out = capture_next(&cap);
	assert_int_equal(count(out, "trace "), 1);
	assert_non_null(
	    strstr(out, "trace 4bf92f3577b34da6a3ce929d0e0e4707  shop  4 spans  100.000 ms\n"));
	/* Depth-first, children by start: root, early, middle, grandchild. */
	p = strstr(out, "SERVER root");
	assert_non_null(p);
	p = strstr(p, "CLIENT early");
	assert_non_null(p);
	p = strstr(p, "SERVER middle");
	assert_non_null(p);
	assert_non_null(strstr(p, "CLIENT grandchild"));
	l = line_with(out, "SERVER root");
	assert_int_equal(margin(l), 2);
	free(l);
	l = line_with(out, "CLIENT early");
	assert_int_equal(margin(l), 4);
	free(l);
	l = line_with(out, "SERVER middle");
	assert_int_equal(margin(l), 4);
	assert_non_null(strstr(l, "|                    ################    |"));
	free(l);
	l = line_with(out, "CLIENT grandchild");
	assert_int_equal(margin(l), 6);
	assert_non_null(strstr(l, "|                        ####            |"));
	free(l);
	assert_null(strstr(out, "other-trace"));
	free(out);

	/* The other trace never gets a root: printed as it is when the sink goes. */
	console_sink_ops.free(ctx);
	out = capture_next(&cap);
	assert_non_null(strstr(out,
			       "trace 4bf92f3577b34da6a3ce929d0e0e4708  shop  1 span  1.000 ms  "
			       "(root not seen before exit)\n"));
	assert_non_null(strstr(out, "  CLIENT other-trace "));
	free(out);
	capture_close(&cap);
	resource__free(res);
}

/* A parent in another process makes a root; a local parent that never comes does not. */
static void test_console__remote_parent_is_root(void **state)
{
	struct resource *res = service("backend");
	struct capture cap;
	struct span *s;
	char *out;
	void *ctx;

	(void)state;
	capture_open(&cap);
	ctx = sink_new(cap.f, 0, false);
	s = mk(res, 3, 1, 0x77, SPAN_KIND_SERVER, "GET /items", 0, 2000);
	s->remote_parent = true;
	send1(ctx, s);
	out = capture_next(&cap);
	assert_non_null(strstr(out,
			       "trace 4bf92f3577b34da6a3ce929d0e0e4703  backend  1 span  2.000 ms  "
			       "remote parent 775a5a5a5a5a5a5a\n"));
	assert_non_null(strstr(out, "\n  SERVER GET /items "));
	assert_null(strstr(out, "root not seen"));
	free(out);

	send1(ctx, mk(res, 4, 1, 0x77, SPAN_KIND_SERVER, "GET /local", 0, 2000));
	out = capture_next(&cap);
	assert_string_equal(out, "");
	free(out);
	console_sink_ops.free(ctx);
	out = capture_next(&cap);
	assert_non_null(
	    strstr(out, "e0e4704  backend  1 span  2.000 ms  (root not seen before exit)"));
	assert_null(strstr(out, "remote parent"));
	free(out);
	capture_close(&cap);
	resource__free(res);
}

/*
 * One gospan tracing both ends of a call: the callee's root (its parent is the caller's CLIENT
 * span, in another process) hangs under that CLIENT span when both are held, as one tree.
 */
static void test_console__cross_process_one_tree(void **state)
{
	struct resource *front = service("frontend"), *back = service("backend");
	struct span *b[2];
	struct capture cap;
	char *out, *l;
	void *ctx;

	(void)state;
	capture_open(&cap);
	ctx = sink_new(cap.f, 0, false);
	b[0] = mk(back, 12, 3, 2, SPAN_KIND_SERVER, "GET /items/{id}", 2000, 8000);
	b[0]->remote_parent = true;
	b[1] = mk(front, 12, 2, 1, SPAN_KIND_CLIENT, "GET", 1000, 9000);
	send(ctx, b, 2);
	out = capture_next(&cap);
	assert_string_equal(out, ""); /* the caller's root is still to come */
	free(out);
	send1(ctx, mk(front, 12, 1, 0, SPAN_KIND_SERVER, "GET /direct/{id}", 0, 10000));
	out = capture_next(&cap);
	assert_int_equal(count(out, "\ntrace ") + !strncmp(out, "trace ", 6), 1);
	assert_non_null(strstr(out, "e0e470c  frontend  3 spans  10.000 ms\n"));
	l = line_with(out, "SERVER GET /items/{id}");
	assert_int_equal(margin(l), 6);
	assert_non_null(strstr(l, "|        ########################        |  (service backend)"));
	free(l);
	l = line_with(out, "SERVER GET /direct/{id}");
	assert_null(strstr(l, "(service"));
	free(l);
	free(out);
	console_sink_ops.free(ctx);
	capture_close(&cap);
	resource__free(front);
	resource__free(back);
}

/* Rootless spans wait orphan_ms from the first one's arrival, then are printed as they are. */
static void test_console__orphan_timeout(void **state)
{
	struct resource *res = service("shop");
	struct capture cap;
	char *out;
	void *ctx;

	(void)state;
	capture_open(&cap);
	ctx = sink_new(cap.f, 0, false);
	send1(ctx, mk(res, 5, 2, 1, SPAN_KIND_CLIENT, "child", 1000, 2000));
	fake_now_ns += 999000000ULL;
	send1(ctx, mk(res, 5, 3, 2, SPAN_KIND_CLIENT, "grandchild", 1200, 1800));
	out = capture_next(&cap);
	assert_string_equal(out, "");
	free(out);
	fake_now_ns += 1000000ULL; /* 1000 ms after the first span */
	assert_int_equal(console_sink_ops.export(ctx, NULL, 0), 0);
	out = capture_next(&cap);
	assert_non_null(strstr(out, "e0e4705  shop  2 spans  1.000 ms  (root not seen in time)\n"
				    "  CLIENT child "));
	/* Still a tree: the grandchild under the child. */
	assert_non_null(strstr(out, "\n    CLIENT grandchild "));
	free(out);

	/* The root, when it does come, is printed on its own; nothing is printed twice. */
	send1(ctx, mk(res, 5, 1, 0, SPAN_KIND_SERVER, "root", 0, 3000));
	out = capture_next(&cap);
	assert_non_null(strstr(out, "e0e4705  shop  1 span  3.000 ms\n  SERVER root "));
	assert_null(strstr(out, "child"));
	free(out);
	console_sink_ops.free(ctx);
	capture_close(&cap);
	resource__free(res);
}

/* A child that ends after its parent was printed: one line under its parent's depth. */
static void test_console__late_child(void **state)
{
	struct resource *res = service("shop");
	struct span *b[2];
	struct capture cap;
	char *out, *l;
	void *ctx;

	(void)state;
	capture_open(&cap);
	ctx = sink_new(cap.f, 0, false);
	b[0] = mk(res, 6, 2, 1, SPAN_KIND_SERVER, "inner", 0, 20000);
	b[1] = mk(res, 6, 1, 0, SPAN_KIND_SERVER, "outer", 0, 40000);
	send(ctx, b, 2);
	free(capture_next(&cap));
	/* A goroutine the inner handler started, still running when the request was answered. */
	send1(ctx, mk(res, 6, 3, 2, SPAN_KIND_CLIENT, "async", 10000, 30000));
	out = capture_next(&cap);
	assert_int_equal(count(out, "\n"), 3); /* header, the line, the blank after */
	assert_non_null(strstr(out, "e0e4706  shop  1 late span of a trace printed earlier\n"));
	l = line_with(out, "CLIENT async");
	assert_int_equal(margin(l), 6); /* under inner, at depth 2 */
	/* Against the trace's window of 0..40 ms, as it was drawn before. */
	assert_non_null(strstr(l, "|          ####################          |  (late)"));
	free(l);
	free(out);
	console_sink_ops.free(ctx);
	out = capture_next(&cap);
	assert_string_equal(out, "");
	free(out);
	capture_close(&cap);
	resource__free(res);
}

/* At most max_pending spans wait: beyond, the oldest trace is printed, and none is lost. */
static void test_console__bounded(void **state)
{
	struct resource *res = service("shop");
	struct span *b[20];
	struct capture cap;
	char *out, want[80];
	const char *p;
	void *ctx;
	int i;

	(void)state;
	capture_open(&cap);
	ctx = sink_new(cap.f, 8, false);
	for (i = 0; i < 20; i++)
		b[i] =
		    mk(res, 0x10 + i, 2, 1, SPAN_KIND_CLIENT, "rootless", i * 1000, i * 1000 + 1);
	send(ctx, b, 20);
	out = capture_next(&cap);
	/* Twelve had to go, the oldest first, in order. */
	assert_int_equal(count(out, "(root not seen, buffer full)"), 12);
	assert_int_equal(count(out, "trace "), 12);
	for (i = 0, p = out; i < 12; i++) {
		snprintf(want, sizeof(want), "trace 4bf92f3577b34da6a3ce929d0e0e47%02x", 0x10 + i);
		p = strstr(p, want);
		assert_non_null(p);
	}
	free(out);
	console_sink_ops.free(ctx);
	out = capture_next(&cap);
	assert_int_equal(count(out, "(root not seen before exit)"), 8);
	assert_non_null(strstr(out, "e0e471c  "));
	assert_null(strstr(out, "e0e4710  "));
	assert_non_null(strstr(out, "e0e4723  "));
	free(out);

	/* One trace larger than the bound is printed in parts, every span of it. */
	ctx = sink_new(cap.f, 8, false);
	for (i = 0; i < 20; i++)
		b[i] = mk(res, 0x30, (uint8_t)(2 + i), 1, SPAN_KIND_CLIENT, "part", i, i + 1);
	send(ctx, b, 20);
	console_sink_ops.free(ctx);
	out = capture_next(&cap);
	assert_int_equal(count(out, "CLIENT part "), 20);
	free(out);
	capture_close(&cap);
	resource__free(res);
}

/* Captured bytes cannot break a tree line apart, in the name or the service. */
static void test_console__tree_escaping(void **state)
{
	struct resource *res = service("evil\nservice");
	struct capture cap;
	struct span *s;
	char *out;
	void *ctx;

	(void)state;
	capture_open(&cap);
	ctx = sink_new(cap.f, 0, false);
	s = mk(res, 9, 1, 0, SPAN_KIND_SERVER, "GET /a\ntrace forged\r\x1b[2J", 0, 1000);
	send1(ctx, s);
	out = capture_next(&cap);
	assert_int_equal(count(out, "\n"), 3); /* header, one line, the blank */
	assert_int_equal(strncmp(out, "trace ", 6), 0);
	assert_int_equal(count(out, "\ntrace "), 0);
	assert_non_null(strstr(out, "  evil\\nservice  1 span"));
	assert_non_null(strstr(out, "  SERVER GET /a\\ntrace forged\\r\\x1b[2J "));
	assert_null(strchr(out, '\r'));
	assert_null(strchr(out, '\x1b'));
	free(out);
	console_sink_ops.free(ctx);
	capture_close(&cap);
	resource__free(res);
}

/* A name longer than the label column is cut with an ellipsis, and the bars stay aligned. */
static void test_console__long_label_cut(void **state)
{
	struct resource *res = service("shop");
	struct span *b[2];
	struct capture cap;
	char name[200], *out, *l1, *l2;
	void *ctx;

	(void)state;
	memset(name, 'x', sizeof(name));
	memcpy(name, "GET /", 5);
	name[sizeof(name) - 1] = '\0';
	capture_open(&cap);
	ctx = sink_new(cap.f, 0, false);
	b[0] = mk(res, 10, 2, 1, SPAN_KIND_CLIENT, "GET", 0, 500);
	b[1] = mk(res, 10, 1, 0, SPAN_KIND_SERVER, name, 0, 1000);
	send(ctx, b, 2);
	out = capture_next(&cap);
	l1 = line_with(out, "SERVER GET /x");
	l2 = line_with(out, "CLIENT GET");
	assert_non_null(strstr(l1, "xxx\xe2\x80\xa6 "));
	/* 72 columns of margin and label, the ellipsis being one column of three bytes. */
	assert_int_equal(strchr(l1, '|') - l1, strchr(l2, '|') - l2 + 2);
	assert_int_equal(strstr(l1, "\xe2\x80\xa6") - l1, 71);
	free(l1);
	free(l2);
	free(out);
	console_sink_ops.free(ctx);
	capture_close(&cap);
	resource__free(res);
}

/* Parent ids in a cycle have no top: they are still printed, once each, and nothing hangs. */
static void test_console__parent_cycle(void **state)
{
	struct resource *res = service("shop");
	struct span *b[2];
	struct capture cap;
	char *out;
	void *ctx;

	(void)state;
	capture_open(&cap);
	ctx = sink_new(cap.f, 0, false);
	b[0] = mk(res, 11, 1, 2, SPAN_KIND_CLIENT, "one", 0, 1000);
	b[1] = mk(res, 11, 2, 1, SPAN_KIND_CLIENT, "two", 100, 900);
	send(ctx, b, 2);
	console_sink_ops.free(ctx);
	out = capture_next(&cap);
	assert_int_equal(count(out, "CLIENT one "), 1);
	assert_int_equal(count(out, "CLIENT two "), 1);
	assert_non_null(strstr(out, "2 spans"));
	free(out);
	capture_close(&cap);
	resource__free(res);
}

/* Verbose: under the tree, every span's full line exactly as console__format_span makes it. */
static void test_console__verbose_lines(void **state)
{
	struct resource *res = resource__new();
	struct span *spans[40];
	char *out, *p, want[40][512];
	struct capture cap;
	void *ctx;
	int i;

	(void)state;
	assert_non_null(res);
	assert_int_equal(resource__set_str(res, SC_SERVICE_NAME, "users"), 0);
	for (i = 0; i < 40; i++) {
		char path[300];

		spans[i] = server_span(res);
		spans[i]->span_id[0] = (uint8_t)i;
		spans[i]->start_ns += (uint64_t)i * 1000;
		/* Long values: the output outgrows the sink's first buffer. */
		memset(path, 'p', sizeof(path));
		snprintf(path, 16, "/item/%d/", i);
		path[strlen(path)] = 'p';
		assert_int_equal(span__set_str(spans[i], SC_URL_PATH, path, sizeof(path)), 0);
		console__format_span(spans[i], want[i], sizeof(want[i]));
	}
	capture_open(&cap);
	ctx = sink_new(cap.f, 0, true);
	send(ctx, spans, 40);
	out = capture_next(&cap);
	/* Forty roots of one trace: one header, forty tree lines, then the forty full lines. */
	assert_int_equal(count(out, "trace 4bf92f3577b34da6a3ce929d0e0e4736"), 1);
	assert_int_equal(count(out, "\n  SERVER GET /users/{id} 200 "), 40);
	for (i = 0, p = out; i < 40; i++) {
		p = strstr(p, want[i]);
		assert_non_null(p);
		/* Whole lines, in the tree's order. */
		assert_int_equal(p[-1], '\n');
		p += strlen(want[i]);
		assert_int_equal(*p, '\n');
	}
	free(out);
	console_sink_ops.free(ctx);
	capture_close(&cap);
	resource__free(res);
}

static void test_console__sink_reports_write_failure(void **state)
{
	struct span *s = server_span(NULL);
	FILE *ro = fopen("/dev/null", "r"); /* open for reading: every write fails */
	struct console_opts opts = { 0 };
	void *ctx;

	(void)state;
	assert_non_null(ro);
	ctx = console_sink__new(ro);
	assert_non_null(ctx);
	assert_string_equal(console_sink_ops.name, "console");
	assert_true(console_sink_ops.export(ctx, &s, 1) < 0);
	console_sink_ops.free(ctx);
	fclose(ro);
	span__free(s);

	errno = 0;
	assert_null(console_sink__new(NULL));
	assert_int_equal(errno, EINVAL);
	errno = 0;
	assert_null(console_sink__new_opts(&opts));
	assert_int_equal(errno, EINVAL);
}

/* ---- the metrics tables ---------------------------------------------------------------------- */

/*
 * Every table below comes from a real store (model/metrics.c) fed real spans with known
 * durations, collected into a batch as the metric reader does, and printed by the sink. The
 * expected numbers are worked out by hand from the instruments' bucket boundaries, in the
 * comments: a percentile is interpolated inside the bucket it falls in, that bucket narrowed to
 * the smallest and largest durations seen.
 */

#define SEC 1000000000ULL

static uint64_t unix_now(void)
{
	struct timespec ts;

	assert_int_equal(clock_gettime(CLOCK_REALTIME, &ts), 0);
	return (uint64_t)ts.tv_sec * SEC + (uint64_t)ts.tv_nsec;
}

static struct metrics *store_new(enum metric_temporality temporality, size_t limit)
{
	struct metrics_opts opts = {
	    .temporality = temporality,
	    .exemplars = METRIC_EXEMPLARS_ALWAYS_OFF,
	    .cardinality_limit = limit,
	};
	struct metrics *m = metrics__new(&opts);

	assert_non_null(m);
	return m;
}

static struct resource *process(const char *name, int64_t pid)
{
	struct resource *res = service(name);

	assert_int_equal(resource__set_int(res, SC_PROCESS_PID, pid), 0);
	return res;
}

/* A finished call of KIND from START_NS, MS milliseconds long, with no attribute yet. */
static struct span *call(const struct resource *res, enum span_kind kind, uint64_t start_ns,
			 double ms)
{
	struct span *s = span__new();

	assert_non_null(s);
	s->res = res;
	s->kind = kind;
	s->start_ns = start_ns;
	s->end_ns = start_ns + (uint64_t)(ms * 1e6 + 0.5);
	return s;
}

static void set_str(struct span *s, const char *key, const char *val)
{
	assert_int_equal(span__set_str(s, key, val, strlen(val)), 0);
}

/* Measures S, as records.c does for every finished call, and frees it. */
static void measure(struct metrics *m, struct span *s)
{
	metrics__record_span(m, s, false);
	span__free(s);
}

static void http_server(struct metrics *m, const struct resource *res, uint64_t at, double ms,
			const char *method, const char *route, int status)
{
	struct span *s = call(res, SPAN_KIND_SERVER, at, ms);
	char code[8];

	set_str(s, SC_HTTP_REQUEST_METHOD, method);
	set_str(s, SC_URL_PATH, "/never/shown");
	if (route)
		set_str(s, SC_HTTP_ROUTE, route);
	assert_int_equal(span__set_int(s, SC_HTTP_RESPONSE_STATUS_CODE, status), 0);
	if (status >= 500) {
		snprintf(code, sizeof(code), "%d", status);
		set_str(s, SC_ERROR_TYPE, code);
		s->status = SPAN_STATUS_ERROR;
	}
	measure(m, s);
}

static void http_client(struct metrics *m, const struct resource *res, uint64_t at, double ms,
			const char *error)
{
	struct span *s = call(res, SPAN_KIND_CLIENT, at, ms);

	set_str(s, SC_HTTP_REQUEST_METHOD, "GET");
	set_str(s, SC_SERVER_ADDRESS, "10.0.0.1");
	assert_int_equal(span__set_int(s, SC_SERVER_PORT, 8081), 0);
	if (error)
		set_str(s, SC_ERROR_TYPE, error);
	else
		assert_int_equal(span__set_int(s, SC_HTTP_RESPONSE_STATUS_CODE, 200), 0);
	measure(m, s);
}

static void rpc_server(struct metrics *m, const struct resource *res, uint64_t at, double ms,
		       int code)
{
	struct span *s = call(res, SPAN_KIND_SERVER, at, ms);

	set_str(s, SC_RPC_SYSTEM, "grpc");
	set_str(s, SC_RPC_SERVICE, "inventory.v1.Inventory");
	set_str(s, SC_RPC_METHOD, "GetItem");
	assert_int_equal(span__set_int(s, SC_RPC_GRPC_STATUS_CODE, code), 0);
	if (code)
		set_str(s, SC_ERROR_TYPE, "NOT_FOUND");
	measure(m, s);
}

static void db_client(struct metrics *m, const struct resource *res, uint64_t at, double ms,
		      const char *system, const char *op, const char *collection)
{
	struct span *s = call(res, SPAN_KIND_CLIENT, at, ms);

	set_str(s, SC_DB_SYSTEM_NAME, system);
	set_str(s, SC_DB_OPERATION_NAME, op);
	if (collection)
		set_str(s, SC_DB_COLLECTION_NAME, collection);
	set_str(s, SC_DB_QUERY_TEXT, "SELECT * FROM items WHERE id = ?");
	measure(m, s);
}

/* Collects M at NOW_NS and has the sink export the batch, as the metric reader does. */
static void export_at(void *ctx, struct metrics *m, uint64_t now_ns)
{
	struct metrics_batch *b = metrics__collect(m, now_ns, true);

	assert_non_null(b);
	if (b->n)
		assert_int_equal(console_sink_ops.export_metrics(ctx, b), 0);
	metrics_batch__free(b);
}

/*
 * One interval of a service: every kind of row, status codes merged into a row with their
 * errors counted, then a second interval, and at exit the totals of both.
 */
static void test_console__metrics_table(void **state)
{
	/* After the store is made: the process's first call starts its first interval. */
	uint64_t t0 = (unix_now() / SEC + 2) * SEC;
	struct metrics *m = store_new(METRIC_TEMPORALITY_DELTA, 2000);
	struct resource *shop = process("shop", 4242);
	struct span *s;
	struct capture cap;
	char *out;
	void *ctx;

	(void)state;
	capture_open(&cap);
	ctx = sink_new(cap.f, 0, false);
	/*
	 * GET /users/{id}: 1, 2, 3 and 40 ms answered 200, 8 ms answered 500: 5 requests, 1 error.
	 * Buckets (s): (0, .005] holds 1, 2, 3 ms; (.005, .01] 8 ms; (.025, .05] 40 ms.
	 * p50, rank 2.5, in the first: .001 (the least seen) + .004 * 2.5/3 = 4.333 ms.
	 * p90, rank 4.5, in (.025, .05] narrowed to .040: .025 + .015 * 0.5 = 32.500 ms.
	 * p99, rank 4.95: .025 + .015 * 0.95 = 39.250 ms.
	 */
	http_server(m, shop, t0, 1, "GET", "/users/{id}", 200);
	http_server(m, shop, t0 + 1000000, 2, "GET", "/users/{id}", 200);
	http_server(m, shop, t0 + 2000000, 3, "GET", "/users/{id}", 200);
	http_server(m, shop, t0 + 3000000, 40, "GET", "/users/{id}", 200);
	http_server(m, shop, t0 + 4000000, 8, "GET", "/users/{id}", 500);
	/* No route known: the method alone. A 404 is no server error. 2 ms: all percentiles. */
	http_server(m, shop, t0 + 5000000, 2, "GET", NULL, 404);
	/*
	 * The client: 1 and 1 ms answered, 6 ms refused. (0, .005] holds two, (.005, .01] one.
	 * p50, rank 1.5: .001 + .004 * 1.5/2 = 4.000 ms (the buckets cannot tell it was 1 ms).
	 * p90, rank 2.7, in (.005, .01] narrowed to .006: .005 + .001 * 0.7 = 5.700 ms.
	 * p99: .005 + .001 * 0.97 = 5.970 ms.
	 */
	http_client(m, shop, t0 + 6000000, 1, NULL);
	http_client(m, shop, t0 + 7000000, 1, NULL);
	http_client(m, shop, t0 + 8000000, 6, "connection refused");
	/*
	 * gRPC, in milliseconds: 2 and 4 ms OK, 12 ms NOT_FOUND, 30 ms OK. Buckets (ms): (0, 5]
	 * holds two, (10, 25] one, (25, 50] one.
	 * p50, rank 2, in (0, 5] narrowed to 2: 2 + 3 * 2/2 = 5.000 ms.
	 * p90, rank 3.6, in (25, 50] narrowed to 30: 25 + 5 * 0.6 = 28.000 ms.
	 * p99: 25 + 5 * 0.96 = 29.800 ms.
	 */
	rpc_server(m, shop, t0 + 9000000, 2, 0);
	rpc_server(m, shop, t0 + 10000000, 4, 0);
	rpc_server(m, shop, t0 + 11000000, 12, 5);
	rpc_server(m, shop, t0 + 12000000, 30, 0);
	/*
	 * Redis GET: 0.5, 0.5 and 2 ms. Buckets (s): (0, .001] two, (.001, .005] one.
	 * p50, rank 1.5: .0005 + .0005 * 1.5/2 = 0.875 ms.
	 * p90, rank 2.7, in (.001, .005] narrowed to .002: .001 + .001 * 0.7 = 1.700 ms.
	 * p99: .001 + .001 * 0.97 = 1.970 ms.
	 * PostgreSQL: one SELECT on items, 3 ms: every percentile is it.
	 */
	db_client(m, shop, t0 + 13000000, 0.5, "redis", "GET", NULL);
	db_client(m, shop, t0 + 14000000, 0.5, "redis", "GET", NULL);
	db_client(m, shop, t0 + 15000000, 2, "redis", "GET", NULL);
	db_client(m, shop, t0 + 16000000, 3, "postgresql", "SELECT", "items");
	/* A function span: no instrument measures it. */
	s = call(shop, SPAN_KIND_INTERNAL, t0, 5);
	assert_int_equal(span__set_name(s, "main.work", 9), 0);
	measure(m, s);

	/* The interval: from the first call to the collection, 10 s: rates are count / 10. */
	export_at(ctx, m, t0 + 10 * SEC);
	out = capture_next(&cap);
	assert_string_equal(
	    out,
	    "metrics of shop (pid 4242), last 10.0 s:\n"
	    "  KIND         OPERATION                       REQUESTS  RATE/S  ERRORS  ERROR%"
	    "  P50 ms  P90 ms  P99 ms\n"
	    "  http server  GET                                    1    0.10       0    0.0%"
	    "   2.000   2.000   2.000\n"
	    "  http server  GET /users/{id}                        5    0.50       1   20.0%"
	    "   4.333  32.500  39.250\n"
	    "  http client  GET 10.0.0.1:8081                      3    0.30       1   33.3%"
	    "   4.000   5.700   5.970\n"
	    "  rpc server   inventory.v1.Inventory/GetItem         4    0.40       1   25.0%"
	    "   5.000  28.000  29.800\n"
	    "  db client    postgresql SELECT items                1    0.10       0    0.0%"
	    "   3.000   3.000   3.000\n"
	    "  db client    redis GET                              3    0.30       0    0.0%"
	    "   0.875   1.700   1.970\n"
	    "\n");
	free(out);

	/*
	 * The second interval, 10 s to 20 s: only GET /users/{id}, 4 times 20 ms, all 200: the
	 * table shows this interval alone. (.01, .025] holds all four, narrowed to 20 ms.
	 */
	http_server(m, shop, t0 + 11 * SEC, 20, "GET", "/users/{id}", 200);
	http_server(m, shop, t0 + 12 * SEC, 20, "GET", "/users/{id}", 200);
	http_server(m, shop, t0 + 13 * SEC, 20, "GET", "/users/{id}", 200);
	http_server(m, shop, t0 + 14 * SEC, 20, "GET", "/users/{id}", 200);
	export_at(ctx, m, t0 + 20 * SEC);
	out = capture_next(&cap);
	assert_string_equal(out,
			    "metrics of shop (pid 4242), last 10.0 s:\n"
			    "  KIND         OPERATION        REQUESTS  RATE/S  ERRORS  ERROR%  "
			    "P50 ms  P90 ms  P99 ms\n"
			    "  http server  GET /users/{id}         4    0.40       0    0.0%  "
			    "20.000  20.000  20.000\n"
			    "\n");
	free(out);

	/*
	 * The last export, after stop: its interval (20 s to 25 s, one 503 of 60 ms) is not
	 * printed on its own but counted in the totals at free, over the 25 s from the first
	 * call to the last export: every rate is count / 25. GET /users/{id} then has 10
	 * requests, 2 errors: 1, 2, 3 ms in (0, .005], 8 ms in (.005, .01], 20 ms four times in
	 * (.01, .025], 40 ms in (.025, .05], 60 ms in (.05, .075].
	 * p50, rank 5: 4 below (.01, .025], which holds four: .01 + .015 * 1/4 = 13.750 ms.
	 * p90, rank 9: 8 below (.025, .05], which holds one: .025 + .025 * 1/1 = 50.000 ms.
	 * p99, rank 9.9, in (.05, .075] narrowed to .060: .05 + .01 * 0.9 = 59.000 ms.
	 */
	http_server(m, shop, t0 + 21 * SEC, 60, "GET", "/users/{id}", 503);
	console_sink_ops.stop(ctx);
	export_at(ctx, m, t0 + 25 * SEC);
	out = capture_next(&cap);
	assert_string_equal(out, "");
	free(out);
	console_sink_ops.free(ctx);
	out = capture_next(&cap);
	assert_string_equal(
	    out,
	    "metrics of shop (pid 4242) at exit, totals over 25.0 s:\n"
	    "  KIND         OPERATION                       REQUESTS  RATE/S  ERRORS  ERROR%"
	    "  P50 ms  P90 ms  P99 ms\n"
	    "  http server  GET                                    1    0.04       0    0.0%"
	    "   2.000   2.000   2.000\n"
	    "  http server  GET /users/{id}                       10    0.40       2   20.0%"
	    "  13.750  50.000  59.000\n"
	    "  http client  GET 10.0.0.1:8081                      3    0.12       1   33.3%"
	    "   4.000   5.700   5.970\n"
	    "  rpc server   inventory.v1.Inventory/GetItem         4    0.16       1   25.0%"
	    "   5.000  28.000  29.800\n"
	    "  db client    postgresql SELECT items                1    0.04       0    0.0%"
	    "   3.000   3.000   3.000\n"
	    "  db client    redis GET                              3    0.12       0    0.0%"
	    "   0.875   1.700   1.970\n"
	    "\n");
	free(out);
	capture_close(&cap);
	metrics__free(m);
	resource__free(shop);
}

/* gospan's own health sums, as main.c declares them: the console singles out two. */
static const char *const sdk_keys[] = {"otel.component.type", "otel.component.name", SC_ERROR_TYPE};
static const char *const reason_keys[] = {"gospan.drop.reason"};
static const struct metric_desc spans_exported = {
    .name = METRIC_SPANS_EXPORTED,
    .unit = "{span}",
    .kind = METRIC_SUM,
    .monotonic = true,
    .observed = true,
    .keys = sdk_keys,
    .nkeys = 3,
};
static const struct metric_desc spans_dropped = {
    .name = METRIC_SPANS_DROPPED,
    .unit = "{span}",
    .kind = METRIC_SUM,
    .monotonic = true,
    .observed = true,
    .keys = reason_keys,
    .nkeys = 1,
};
static const struct metric_desc queue_size = {
    .name = "otel.sdk.processor.span.queue.size",
    .unit = "{span}",
    .kind = METRIC_SUM,
    .observed = true,
    .keys = sdk_keys,
    .nkeys = 3,
};

/* gospan's totals now: spans exported, lost to a failed export, lost to a full queue. */
static void observe_health(struct metrics *m, struct resource *self, int64_t exported,
			   int64_t failed, int64_t full)
{
	struct attr a[3] = {
	    {.key = "otel.component.type", .type = ATTR_STRING, .s = "batching_span_processor"},
	    {.key = "otel.component.name", .type = ATTR_STRING, .s = "batching_span_processor/0"},
	    {.key = SC_ERROR_TYPE, .type = ATTR_STRING, .s = "export_failed"},
	};
	struct attr reason = {.key = "gospan.drop.reason", .type = ATTR_STRING};

	assert_int_equal(metrics__observe(m, &spans_exported, self, a, 2, exported), 0);
	/* Lost in the export: counted among the drops too, so not again. */
	assert_int_equal(metrics__observe(m, &spans_exported, self, a, 3, failed), 0);
	assert_int_equal(metrics__observe(m, &queue_size, self, a, 2, 1000), 0);
	reason.s = "export_failed";
	assert_int_equal(metrics__observe(m, &spans_dropped, self, &reason, 1, failed), 0);
	reason.s = "queue_full";
	assert_int_equal(metrics__observe(m, &spans_dropped, self, &reason, 1, full), 0);
}

/* The line of OUT that starts with PREFIX, which must be there, ends with SUFFIX. */
static void assert_line(const char *out, const char *prefix, const char *suffix)
{
	char *line = line_with(out, prefix);
	size_t n = strlen(line), k = strlen(suffix);

	if (strncmp(line, prefix, strlen(prefix)) || n < k || strcmp(line + n - k, suffix))
		fail_msg("'%s' is not '%s...%s' in:\n%s", line, prefix, suffix, out);
	free(line);
}

/*
 * Services in order of name and pid, each process its own table; gospan's own spans exported
 * and lost on a line of its own, after them; at exit, the processes of a service in one table,
 * their pids named.
 */
static void test_console__metrics_services(void **state)
{
	uint64_t t0 = (unix_now() / SEC + 2) * SEC;
	struct metrics *m = store_new(METRIC_TEMPORALITY_DELTA, 2000);
	struct resource *backend = process("backend", 7), *shop_a = process("shop", 200);
	struct resource *shop_b = process("shop", 100), *self = process("gospan", 99);
	struct capture cap;
	char *out;
	void *ctx;

	(void)state;
	capture_open(&cap);
	ctx = sink_new(cap.f, 0, false);
	http_server(m, shop_a, t0, 2, "GET", "/a", 200);
	http_server(m, shop_b, t0 + 1 * SEC, 4, "GET", "/a", 200); /* its interval: 9 s */
	http_server(m, backend, t0, 1, "GET", "/work/{id}", 200);
	observe_health(m, self, 24, 2, 3);
	export_at(ctx, m, t0 + 10 * SEC);
	out = capture_next(&cap);
	/* The store's first interval began when it was made: not a whole number of seconds. */
	assert_line(out, "metrics of gospan (pid 99), last ", " s: spans exported 24, lost 5");
	*strstr(out, "metrics of gospan") = '\0';
	assert_string_equal(
	    out,
	    "metrics of backend (pid 7), last 10.0 s:\n"
	    "  KIND         OPERATION       REQUESTS  RATE/S  ERRORS  ERROR%  P50 ms  P90 ms  "
	    "P99 ms\n  http server  GET /work/{id}         1    0.10       0    0.0%   1.000  "
	    " 1.000   1.000\n\n"
	    "metrics of shop (pid 100), last 9.0 s:\n"
	    "  KIND         OPERATION  REQUESTS  RATE/S  ERRORS  ERROR%  P50 ms  P90 ms  P99 ms\n"
	    "  http server  GET /a            1    0.11       0    0.0%   4.000   4.000   4.000\n"
	    "\n"
	    "metrics of shop (pid 200), last 10.0 s:\n"
	    "  KIND         OPERATION  REQUESTS  RATE/S  ERRORS  ERROR%  P50 ms  P90 ms  P99 ms\n"
	    "  http server  GET /a            1    0.10       0    0.0%   2.000   2.000   2.000\n"
	    "\n");
	free(out);

	/* An interval without a call: gospan's line alone, with what changed. */
	observe_health(m, self, 30, 2, 3);
	export_at(ctx, m, t0 + 20 * SEC);
	out = capture_next(&cap);
	assert_int_equal(count(out, "\n"), 2);
	assert_line(out, "metrics of gospan (pid 99), last ", " s: spans exported 6, lost 0");
	free(out);

	/*
	 * At exit, over the 20 s from the first call to the last export. The two processes of shop
	 * in one row: 2 and 4 ms, both in (0, .005] narrowed to (.002, .004]: p50, rank 1, .002 +
	 * .002 * 1/2 = 3.000 ms; p90, rank 1.8: 3.800 ms; p99, rank 1.98: 3.980 ms.
	 */
	console_sink_ops.free(ctx);
	out = capture_next(&cap);
	assert_line(out, "metrics of gospan (pid 99) at exit, totals over ",
		    " s: spans exported 30, lost 5");
	*strstr(out, "metrics of gospan") = '\0';
	assert_string_equal(
	    out,
	    "metrics of backend (pid 7) at exit, totals over 20.0 s:\n"
	    "  KIND         OPERATION       REQUESTS  RATE/S  ERRORS  ERROR%  P50 ms  P90 ms  "
	    "P99 ms\n  http server  GET /work/{id}         1    0.05       0    0.0%   1.000  "
	    " 1.000   1.000\n\n"
	    "metrics of shop (pids 100, 200) at exit, totals over 20.0 s:\n"
	    "  KIND         OPERATION  REQUESTS  RATE/S  ERRORS  ERROR%  P50 ms  P90 ms  P99 ms\n"
	    "  http server  GET /a            2    0.10       0    0.0%   3.000   3.800   3.980\n"
	    "\n");
	free(out);
	capture_close(&cap);
	metrics__free(m);
	resource__free(backend);
	resource__free(shop_a);
	resource__free(shop_b);
	resource__free(self);
}

/*
 * Past the cardinality limit, the overflow set is a row of its own, after the named ones; a
 * route cannot forge a line; a name too long for the column is cut.
 */
static void test_console__metrics_overflow_and_escaping(void **state)
{
	uint64_t t0 = (unix_now() / SEC + 2) * SEC;
	/* 3 sets, the overflow set among them: two of the calls' own. */
	struct metrics *m = store_new(METRIC_TEMPORALITY_DELTA, 3);
	struct resource *shop = process("shop", 1), *other = process("other", 2);
	char route[100], *out, *line;
	struct capture cap;
	void *ctx;

	(void)state;
	capture_open(&cap);
	ctx = sink_new(cap.f, 0, false);
	http_server(m, shop, t0, 1, "GET", "/a", 200);
	http_server(m, shop, t0, 1, "GET", "/evil\nmetrics of forged", 200);
	http_server(m, shop, t0, 1, "GET", "/evil\nmetrics of forged", 200);
	http_server(m, shop, t0, 1, "GET", "/c", 200);
	http_server(m, shop, t0, 1, "GET", "/d", 500);
	http_server(m, shop, t0, 1, "GET", "/d", 200);
	http_server(m, shop, t0, 1, "GET", "/d", 200);
	memset(route, 'x', sizeof(route));
	route[0] = '/';
	route[sizeof(route) - 1] = '\0';
	http_server(m, other, t0, 1, "GET", route, 200);
	export_at(ctx, m, t0 + 10 * SEC);
	out = capture_next(&cap);
	assert_int_equal(count(out, "\nmetrics of "), 1); /* other's; nothing forged */
	assert_int_equal(strncmp(out, "metrics of other (pid 2), last 10.0 s:\n", 39), 0);
	line = line_with(out, "GET /xxx");
	/* "  http server  " then 59 columns of the route and the ellipsis, one column. */
	assert_int_equal(strstr(line, "\xe2\x80\xa6") - line, 15 + 59);
	assert_int_equal(strncmp(line + 15 + 59, "\xe2\x80\xa6  ", 5), 0);
	free(line);
	line = line_with(out, "metrics of shop");
	assert_string_equal(line, "metrics of shop (pid 1), last 10.0 s:");
	free(line);
	/* The overflow set keeps no error.type: its errors are not known, not none. */
	assert_non_null(strstr(
	    out,
	    "  KIND         OPERATION                     REQUESTS  RATE/S  ERRORS  ERROR%  P50 ms"
	    "  P90 ms  P99 ms\n"
	    "  http server  GET /a                               1    0.10       0    0.0%   1.000"
	    "   1.000   1.000\n"
	    "  http server  GET /evil\\nmetrics of forged         2    0.20       0    0.0%   1.000"
	    "   1.000   1.000\n"
	    "  http server  (other: cardinality limit)           4    0.40       -       -   1.000"
	    "   1.000   1.000\n"
	    "\n"));
	free(out);
	console_sink_ops.free(ctx);
	free(capture_next(&cap));
	capture_close(&cap);
	metrics__free(m);
	resource__free(shop);
	resource__free(other);
}

/*
 * Cumulative points are totals already: each table says so, the last export's is printed as
 * the totals at exit, and free adds nothing.
 */
static void test_console__metrics_cumulative(void **state)
{
	uint64_t t0 = (unix_now() / SEC + 2) * SEC;
	struct metrics *m = store_new(METRIC_TEMPORALITY_CUMULATIVE, 2000);
	struct resource *shop = process("shop", 5);
	struct capture cap;
	char *out;
	void *ctx;

	(void)state;
	capture_open(&cap);
	ctx = sink_new(cap.f, 0, false);
	/* 10 ms: (.005, .01] narrowed to 10 ms, every percentile. */
	http_server(m, shop, t0, 10, "GET", "/a", 200);
	export_at(ctx, m, t0 + 10 * SEC);
	out = capture_next(&cap);
	assert_string_equal(
	    out, "metrics of shop (pid 5), totals over 10.0 s:\n"
		 "  KIND         OPERATION  REQUESTS  RATE/S  ERRORS  ERROR%  P50 ms  P90 ms"
		 "  P99 ms\n"
		 "  http server  GET /a            1    0.10       0    0.0%  10.000  10.000"
		 "  10.000\n"
		 "\n");
	free(out);
	http_server(m, shop, t0 + 12 * SEC, 10, "GET", "/a", 200);
	export_at(ctx, m, t0 + 20 * SEC);
	out = capture_next(&cap);
	assert_non_null(strstr(out, "metrics of shop (pid 5), totals over 20.0 s:\n"));
	assert_non_null(strstr(out, "  http server  GET /a            2    0.10       0    0.0%"));
	free(out);
	http_server(m, shop, t0 + 21 * SEC, 10, "GET", "/a", 500);
	console_sink_ops.stop(ctx);
	export_at(ctx, m, t0 + 25 * SEC);
	out = capture_next(&cap);
	assert_string_equal(
	    out, "metrics of shop (pid 5) at exit, totals over 25.0 s:\n"
		 "  KIND         OPERATION  REQUESTS  RATE/S  ERRORS  ERROR%  P50 ms  P90 ms"
		 "  P99 ms\n"
		 "  http server  GET /a            3    0.12       1   33.3%  10.000  10.000"
		 "  10.000\n"
		 "\n");
	free(out);
	console_sink_ops.free(ctx);
	out = capture_next(&cap);
	assert_string_equal(out, "");
	free(out);
	capture_close(&cap);
	metrics__free(m);
	resource__free(shop);
}

/* A stream that refuses the table: the export says so, for the metric reader to count. */
static void test_console__metrics_write_failure(void **state)
{
	uint64_t t0 = (unix_now() / SEC + 2) * SEC;
	struct metrics *m = store_new(METRIC_TEMPORALITY_DELTA, 2000);
	struct resource *shop = process("shop", 5);
	FILE *ro = fopen("/dev/null", "r");
	struct metrics_batch *b;
	void *ctx;

	(void)state;
	assert_non_null(ro);
	ctx = console_sink__new(ro);
	assert_non_null(ctx);
	http_server(m, shop, t0, 10, "GET", "/a", 200);
	b = metrics__collect(m, t0 + 10 * SEC, true);
	assert_non_null(b);
	assert_true(console_sink_ops.export_metrics(ctx, b) < 0);
	metrics_batch__free(b);
	console_sink_ops.free(ctx);
	fclose(ro);
	metrics__free(m);
	resource__free(shop);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_console__server_line),
	    cmocka_unit_test(test_console__client_error_line),
	    cmocka_unit_test(test_console__escaping),
	    cmocka_unit_test(test_console__truncates_like_snprintf),
	    cmocka_unit_test(test_console__waterfall_exact),
	    cmocka_unit_test(test_console__out_of_order_batches),
	    cmocka_unit_test(test_console__remote_parent_is_root),
	    cmocka_unit_test(test_console__cross_process_one_tree),
	    cmocka_unit_test(test_console__orphan_timeout),
	    cmocka_unit_test(test_console__late_child),
	    cmocka_unit_test(test_console__bounded),
	    cmocka_unit_test(test_console__tree_escaping),
	    cmocka_unit_test(test_console__long_label_cut),
	    cmocka_unit_test(test_console__parent_cycle),
	    cmocka_unit_test(test_console__verbose_lines),
	    cmocka_unit_test(test_console__sink_reports_write_failure),
	    cmocka_unit_test(test_console__metrics_table),
	    cmocka_unit_test(test_console__metrics_services),
	    cmocka_unit_test(test_console__metrics_overflow_and_escaping),
	    cmocka_unit_test(test_console__metrics_cumulative),
	    cmocka_unit_test(test_console__metrics_write_failure),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
