// SPDX-License-Identifier: MIT
/*
 * Tests for records.c: ring-buffer records (the real ABI structs from events.h) in, spans out.
 * The target is a real Go binary analysed by target.c; the process is this test's own, so its
 * resource comes from the real /proc. A panicked call's place in the export queue is checked
 * against the real batch span processor (export.c), with a sink the test holds shut.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <pthread.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "core/clock.h"
#include "core/config.h"
#include "events.h"
#include "export/export.h"
#include "helpers.h"
#include "analysis/offsets.h"
#include "capture/http.h"
#include "capture/process.h"
#include "capture/records.h"
#include "model/semconv.h"
#include "model/span.h"
#include "analysis/target.h"

#define MAX_SPANS 16
#define COOKIE 3
#define GRACE_NS 1000000000ULL
#define MAX_AGE_NS (600 * 1000000000ULL)

static struct target *target;
static struct offsets *tables;
static struct config cfg;

struct fixture {
	struct clock_sync clock;
	struct process_table *pt;
	struct records *r;
	struct span *spans[MAX_SPANS];
	bool came_held[MAX_SPANS]; /* spans[i] came through submit_held */
	size_t nspans;
	int hold_result; /* what hold() answers */
	int holds;	 /* places held and not yet filled */
	int forgotten;
	uint64_t forgot_start;
	int in_flight;	 /* what in_flight() answers */
	int asked;	 /* how many times it was asked */
	uint32_t asked_type; /* the start record type it was last asked about */
	int started;	     /* process_started() calls */
	uint32_t started_pid, started_cookie;
};

static void collect(void *ctx, struct span *s)
{
	struct fixture *f = ctx;

	assert_true(f->nspans < MAX_SPANS);
	f->spans[f->nspans++] = s;
}

static int hold(void *ctx)
{
	struct fixture *f = ctx;

	if (!f->hold_result)
		f->holds++;
	return f->hold_result;
}

static void collect_held(void *ctx, struct span *s)
{
	struct fixture *f = ctx;

	assert_true(f->holds > 0); /* only into a place held */
	f->holds--;
	f->came_held[f->nspans] = true;
	collect(ctx, s);
}

static void forget(void *ctx, uint32_t pid, uint64_t goid, uint64_t start_ns)
{
	struct fixture *f = ctx;

	(void)pid;
	(void)goid;
	f->forgotten++;
	f->forgot_start = start_ns;
}

static int in_flight(void *ctx, uint32_t type, uint32_t pid, uint64_t goid, uint64_t start_ns)
{
	struct fixture *f = ctx;

	(void)pid;
	(void)goid;
	(void)start_ns;
	f->asked++;
	f->asked_type = type;
	return f->in_flight;
}

static void process_started(void *ctx, uint32_t pid, uint32_t cookie)
{
	struct fixture *f = ctx;

	f->started++;
	f->started_pid = pid;
	f->started_cookie = cookie;
}

static int group_setup(void **state)
{
	char *json;
	size_t len;
	const char *bin;
	char *argv[] = { "gospan", NULL };
	char *envp[] = { NULL };

	(void)state;
	bin = test_go_build("httpserver", "records-httpserver", "", "");
	json = test_read_file("../../offsets/go_offsets.json", &len);
	if (!bin || !json)
		return -1;
	tables = offsets__parse(json, len);
	free(json);
	target = tables ? target__analyse(bin, NULL, tables, NULL, true) : NULL;
	if (!target)
		return -1;
	return config__parse(&cfg, 1, argv, envp);
}

static int group_teardown(void **state)
{
	(void)state;
	target__free(target);
	offsets__free(tables);
	config__free(&cfg);
	return 0;
}

static int setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));

	if (!f)
		return -1;
	/* A fixed offset makes the expected UNIX times exact. */
	f->clock.offset_ns = 1700000000000000000LL;
	f->pt = process_table__new(&cfg);
	if (!f->pt || process_table__add_target(f->pt, COOKIE, target))
		return -1;
	f->r = records__new(&(struct records_opts){
		.clock = &f->clock,
		.processes = f->pt,
		.submit = collect,
		.hold = hold,
		.submit_held = collect_held,
		.forget = forget,
		.in_flight = in_flight,
		.process_started = process_started,
		.ctx = f,
		.panic_grace_ns = GRACE_NS,
		.max_pending = 4,
		.max_pending_age_ns = MAX_AGE_NS,
	});
	*state = f;
	return f->r ? 0 : -1;
}

static int teardown(void **state)
{
	struct fixture *f = *state;
	size_t i;

	for (i = 0; i < f->nspans; i++)
		span__free(f->spans[i]);
	records__free(f->r);
	process_table__free(f->pt);
	free(f);
	return 0;
}

#define SET_STR(field, val)                                                                        \
	do {                                                                                       \
		size_t _n = strlen(val);                                                           \
		memcpy(e.field, val, _n < sizeof(e.field) ? _n : sizeof(e.field));                 \
		e.field##_len = (uint32_t)_n;                                                      \
	} while (0)

static const char *next_proto = "HTTP/1.1";
static uint8_t next_flags = 1;

static void send_start(struct fixture *f, uint64_t goid, uint64_t start, const char *method,
		       const char *path, const char *remote)
{
	struct http_server_start e = {};

	e.hdr.type = EVENT_HTTP_SERVER_START;
	e.hdr.pid = getpid();
	e.hdr.goid = goid;
	e.hdr.start_ns = start;
	e.cookie = COOKIE;
	e.content_length = -1;
	/* Ids as BPF would choose them: fresh trace, sampled. */
	memset(e.ids.trace_id, 0xab, sizeof(e.ids.trace_id));
	memcpy(e.ids.span_id, &goid, sizeof(goid));
	e.ids.span_id[7] = 0x5e;
	e.ids.flags = next_flags;
	SET_STR(method, method);
	SET_STR(path, path);
	SET_STR(host, "example.com:8443");
	SET_STR(remote_addr, remote);
	SET_STR(proto, next_proto);
	assert_int_equal(records__handle(f->r, &e, sizeof(e)), 0);
}

static void send_end(struct fixture *f, uint64_t goid, uint64_t start, uint64_t end,
		     int64_t status, const char *pattern, bool own_writer)
{
	struct http_server_end e = {};

	e.hdr.type = EVENT_HTTP_SERVER_END;
	e.hdr.pid = getpid();
	e.hdr.goid = goid;
	e.hdr.start_ns = start;
	e.end_ns = end;
	e.status = status;
	e.rw_itab = own_writer ? target->response_itab : target->response_itab + 64;
	SET_STR(pattern, pattern);
	assert_int_equal(records__handle(f->r, &e, sizeof(e)), 0);
}

static void send_panic(struct fixture *f, uint64_t goid, uint64_t start, uint64_t at,
		       const char *pattern)
{
	struct go_panic e = {};

	e.hdr.type = EVENT_GO_PANIC;
	e.hdr.pid = getpid();
	e.hdr.goid = goid;
	e.hdr.start_ns = start;
	e.panic_ns = at;
	SET_STR(pattern, pattern);
	assert_int_equal(records__handle(f->r, &e, sizeof(e)), 0);
}

static const char *str_attr(const struct span *s, const char *key)
{
	const struct attr *a = span__get(s, key);

	if (!a)
		return NULL;
	assert_int_equal(a->type, ATTR_STRING);
	return a->s;
}

static int64_t int_attr(const struct span *s, const char *key)
{
	const struct attr *a = span__get(s, key);

	assert_non_null(a);
	assert_int_equal(a->type, ATTR_INT);
	return a->i;
}

/* Every kind of call, by the records BPF sends for it. */
enum call_kind {
	K_HTTP_SERVER,
	K_HTTP_CLIENT,
	K_FUNCTION,
	K_GRPC_SERVER,
	K_GRPC_CLIENT,
	K__COUNT,
};

union start_record {
	struct record_header hdr;
	struct http_server_start http_server;
	struct http_client_start http_client;
	struct func_start function;
	struct grpc_server_start grpc_server;
	struct grpc_client_start grpc_client;
};

union end_record {
	struct record_header hdr;
	struct http_server_end http_server;
	struct http_client_end http_client;
	struct func_end function;
	struct grpc_server_end grpc_server;
	struct grpc_client_end grpc_client;
};

/* Each kind's records, and where its end record has the end time and the on-CPU time (0: none). */
#define KIND(start_rec, end_rec, cpu)                                                              \
	sizeof(struct start_rec), sizeof(struct end_rec), offsetof(struct end_rec, end_ns), cpu
static const struct {
	uint32_t start, end;
	size_t start_size, end_size, end_at, cpu_at;
} kinds[K__COUNT] = {
	[K_HTTP_SERVER] = { EVENT_HTTP_SERVER_START, EVENT_HTTP_SERVER_END,
			    KIND(http_server_start, http_server_end,
				 offsetof(struct http_server_end, cpu_ns)) },
	[K_HTTP_CLIENT] = { EVENT_HTTP_CLIENT_START, EVENT_HTTP_CLIENT_END,
			    KIND(http_client_start, http_client_end, 0) },
	[K_FUNCTION] = { EVENT_FUNC_START, EVENT_FUNC_END,
			 KIND(func_start, func_end, offsetof(struct func_end, cpu_ns)) },
	[K_GRPC_SERVER] = { EVENT_GRPC_SERVER_START, EVENT_GRPC_SERVER_END,
			    KIND(grpc_server_start, grpc_server_end,
				 offsetof(struct grpc_server_end, cpu_ns)) },
	[K_GRPC_CLIENT] = { EVENT_GRPC_CLIENT_START, EVENT_GRPC_CLIENT_END,
			    KIND(grpc_client_start, grpc_client_end, 0) },
};
#undef KIND

/* Sends the start of a call of kind K on GOID at START, its trace sampled when SAMPLED. */
static void send_kind_start(struct fixture *f, enum call_kind k, uint64_t goid, uint64_t start,
			    bool sampled)
{
	union start_record e = {};
	struct span_ids *ids = k == K_HTTP_SERVER ? &e.http_server.ids :
			       k == K_HTTP_CLIENT ? &e.http_client.ids :
			       k == K_FUNCTION	  ? &e.function.ids :
			       k == K_GRPC_SERVER ? &e.grpc_server.ids :
						    &e.grpc_client.ids;

	e.hdr.type = kinds[k].start;
	e.hdr.pid = getpid();
	e.hdr.goid = goid;
	e.hdr.start_ns = start;
	e.http_server.cookie = COOKIE;
	e.http_client.cookie = COOKIE;
	e.function.cookie = COOKIE;
	e.grpc_server.cookie = COOKIE;
	e.grpc_client.cookie = COOKIE;
	memset(ids->trace_id, 0xab, sizeof(ids->trace_id));
	memcpy(ids->span_id, &start, sizeof(start));
	ids->flags = sampled;
	assert_int_equal(records__handle(f->r, &e, kinds[k].start_size), 0);
}

/* Sends the end at END of the call of kind K on GOID that began at START, with CPU_NS. */
static void send_kind_end(struct fixture *f, enum call_kind k, uint64_t goid, uint64_t start,
			  uint64_t end, uint64_t cpu_ns)
{
	union end_record e = {};

	e.hdr.type = kinds[k].end;
	e.hdr.pid = getpid();
	e.hdr.goid = goid;
	e.hdr.start_ns = start;
	memcpy((char *)&e + kinds[k].end_at, &end, sizeof(end));
	if (kinds[k].cpu_at)
		memcpy((char *)&e + kinds[k].cpu_at, &cpu_ns, sizeof(cpu_ns));
	e.grpc_server.code = k == K_GRPC_SERVER ? -1 : 0; /* no status written */
	assert_int_equal(records__handle(f->r, &e, kinds[k].end_size), 0);
}

/*
 * Every kind of call ends through one tail: its duration, its on-CPU time where the end record
 * carries one (HTTP and gRPC servers, functions), counted as a span, or as not sampled and not
 * exported, and no longer in flight.
 */
static void test_records__every_kind_ends_the_same_way(void **state)
{
	struct fixture *f = *state;
	struct records_stats st;
	enum call_kind k;

	for (k = 0; k < K__COUNT; k++) {
		send_kind_start(f, k, 10 + k, 1000, true);
		send_kind_end(f, k, 10 + k, 1000, 1700, 333);
		send_kind_start(f, k, 20 + k, 2000, false);
		send_kind_end(f, k, 20 + k, 2000, 2500, 333);
		assert_int_equal(f->nspans, k + 1);
		assert_int_equal(f->spans[k]->end_ns - f->spans[k]->start_ns, 700);
		if (kinds[k].cpu_at)
			assert_int_equal(int_attr(f->spans[k], GOSPAN_CPU_TIME_NS), 333);
		else
			assert_null(span__get(f->spans[k], GOSPAN_CPU_TIME_NS));
		assert_false(f->came_held[k]);
	}
	records__stats(f->r, &st);
	assert_int_equal(st.spans, K__COUNT);
	assert_int_equal(st.unsampled, K__COUNT);
	assert_int_equal(st.pending, 0);
	assert_int_equal(st.panics_held, 0);
}

/*
 * A call whose end never comes (the ring buffer was full at its RET, its BPF entry was evicted)
 * is ended as lost once it has been in flight for the bound, whatever its kind, and counted; the
 * pending table has room again for new calls. The clock is the test's: records__tick's NOW.
 */
static void test_records__lost_ends_are_ended_after_the_bound(void **state)
{
	struct fixture *f = *state;
	struct records_stats st;
	enum call_kind k;
	uint64_t g;

	f->in_flight = 0; /* BPF no longer holds any of them */
	for (k = 0; k < K__COUNT; k++) {
		send_kind_start(f, k, 1, 1000, true);
		records__tick(f->r, 1000 + MAX_AGE_NS - 1);
		records__stats(f->r, &st);
		assert_int_equal(st.pending, 1); /* not yet */
		records__tick(f->r, 1000 + MAX_AGE_NS);
		records__stats(f->r, &st);
		assert_int_equal(st.pending, 0);
		assert_int_equal(st.dropped[RECORDS_DROP_END_LOST], k + 1);
		/* Its end, should it come after all, finds no call: counted, not exported. */
		send_kind_end(f, k, 1, 1000, 2000 + MAX_AGE_NS, ~0ULL);
	}
	assert_int_equal(f->nspans, 0);
	records__stats(f->r, &st);
	assert_int_equal(st.dropped[RECORDS_DROP_NO_START], K__COUNT);

	/* A full table refuses new calls until the lost ones age out, then takes them again. */
	for (g = 1; g <= 5; g++)
		send_kind_start(f, K_HTTP_SERVER, g, 5000, true);
	records__stats(f->r, &st);
	assert_int_equal(st.pending, 4);
	assert_int_equal(st.dropped[RECORDS_DROP_TOO_MANY_PENDING], 1);
	records__tick(f->r, 5000 + MAX_AGE_NS);
	send_kind_start(f, K_HTTP_SERVER, 9, 6000 + MAX_AGE_NS, true);
	send_kind_end(f, K_HTTP_SERVER, 9, 6000 + MAX_AGE_NS, 7000 + MAX_AGE_NS, ~0ULL);
	assert_int_equal(f->nspans, 1);
	records__stats(f->r, &st);
	assert_int_equal(st.pending, 0);
	assert_int_equal(st.dropped[RECORDS_DROP_END_LOST], K__COUNT + 4);
}

/*
 * A call BPF still holds is long, not lost (a WebSocket, a gRPC stream): it stays, and is asked
 * about again only a bound later. A panicked call keeps its own, shorter, grace.
 */
static void test_records__long_calls_bpf_holds_stay(void **state)
{
	struct fixture *f = *state;
	struct records_stats st;

	f->in_flight = 1;
	send_kind_start(f, K_HTTP_SERVER, 1, 1000, true);
	records__tick(f->r, 1000 + MAX_AGE_NS);
	assert_int_equal(f->asked, 1);
	assert_int_equal(f->asked_type, EVENT_HTTP_SERVER_START);
	records__tick(f->r, 1000 + MAX_AGE_NS + MAX_AGE_NS / 2);
	assert_int_equal(f->asked, 1);
	records__stats(f->r, &st);
	assert_int_equal(st.pending, 1);
	/* Ended an hour on, it is a span like any other. */
	send_kind_end(f, K_HTTP_SERVER, 1, 1000, 1000 + 6 * MAX_AGE_NS, ~0ULL);
	assert_int_equal(f->nspans, 1);
	assert_int_equal(f->spans[0]->end_ns - f->spans[0]->start_ns, 6 * MAX_AGE_NS);

	/* When BPF cannot tell (another kind of call), the bound decides. */
	f->in_flight = -EOPNOTSUPP;
	send_kind_start(f, K_FUNCTION, 2, 1000, true);
	records__tick(f->r, 1000 + MAX_AGE_NS);
	records__stats(f->r, &st);
	assert_int_equal(st.pending, 0);
	assert_int_equal(st.dropped[RECORDS_DROP_END_LOST], 1);

	/* A panicked call is finished at its grace, long before the bound, asked nothing. */
	f->asked = 0;
	send_start(f, 3, 1000, "GET", "/p", "127.0.0.1:1");
	send_panic(f, 3, 1000, 2000, "/p");
	records__tick(f->r, 2000 + GRACE_NS);
	assert_int_equal(f->nspans, 2);
	assert_int_equal(f->asked, 0);
}

static void test_records__start_end_make_one_span(void **state)
{
	struct fixture *f = *state;
	struct records_stats st;
	const struct span *s;
	const struct attr *a;

	send_start(f, 7, 1000, "GET", "/users/42", "10.1.2.3:5555");
	assert_int_equal(f->nspans, 0);
	send_end(f, 7, 1000, 251000, 0, "GET /users/{id}", true);
	assert_int_equal(f->nspans, 1);
	s = f->spans[0];
	assert_string_equal(s->name, "GET /users/{id}");
	assert_int_equal(s->kind, SPAN_KIND_SERVER);
	assert_int_equal(s->status, SPAN_STATUS_UNSET);
	assert_int_equal(s->start_ns, 1700000000000001000ULL);
	assert_int_equal(s->end_ns, 1700000000000251000ULL);
	assert_string_equal(str_attr(s, SC_HTTP_REQUEST_METHOD), "GET");
	assert_string_equal(str_attr(s, SC_URL_PATH), "/users/42");
	assert_string_equal(str_attr(s, SC_URL_SCHEME), "http");
	assert_string_equal(str_attr(s, SC_HTTP_ROUTE), "/users/{id}");
	assert_int_equal(int_attr(s, SC_HTTP_RESPONSE_STATUS_CODE), 200); /* none written */
	assert_string_equal(str_attr(s, SC_SERVER_ADDRESS), "example.com");
	assert_int_equal(int_attr(s, SC_SERVER_PORT), 8443);
	assert_string_equal(str_attr(s, SC_CLIENT_ADDRESS), "10.1.2.3");
	assert_string_equal(str_attr(s, SC_NETWORK_PEER_ADDRESS), "10.1.2.3");
	assert_int_equal(int_attr(s, SC_NETWORK_PEER_PORT), 5555);
	assert_string_equal(str_attr(s, SC_NETWORK_PROTOCOL_VERSION), "1.1");
	assert_null(span__get(s, GOSPAN_TRUNCATED));
	assert_null(span__get(s, SC_HTTP_REQUEST_BODY_SIZE)); /* content length -1: unknown */

	/* The resource is this process's, from /proc. */
	a = resource__get(s->res, SC_PROCESS_PID);
	assert_non_null(a);
	assert_int_equal(a->i, getpid());
	a = resource__get(s->res, SC_SERVICE_NAME);
	assert_non_null(a);
	assert_string_equal(a->s, "records-httpserver");
	assert_non_null(resource__get(s->res, SC_PROCESS_RUNTIME_VERSION));

	records__stats(f->r, &st);
	assert_int_equal(st.spans, 1);
	assert_int_equal(st.pending, 0);
}

/*
 * The wall clock steps back 10 ms while a request is in flight (gospan resyncs its offset): the
 * span still lasts what the monotonic clock says, 250 µs, not -9.75 ms.
 */
static void test_records__clock_step_does_not_change_durations(void **state)
{
	struct fixture *f = *state;
	const struct span *s;

	send_start(f, 7, 1000, "GET", "/users/42", "10.1.2.3:5555");
	f->clock.offset_ns -= 10000000;
	send_end(f, 7, 1000, 251000, 0, "GET /users/{id}", true);
	assert_int_equal(f->nspans, 1);
	s = f->spans[0];
	assert_int_equal(s->start_ns, 1700000000000001000ULL);
	assert_int_equal(s->end_ns - s->start_ns, 250000);
}

static void test_records__status_errors_and_foreign_writers(void **state)
{
	struct fixture *f = *state;

	send_start(f, 1, 10, "GET", "/fail", "127.0.0.1:1");
	send_end(f, 1, 10, 20, 503, "/fail", true);
	send_start(f, 2, 10, "GET", "/missing", "127.0.0.1:2");
	send_end(f, 2, 10, 20, 404, "", true);
	send_start(f, 3, 10, "GET", "/h2", "127.0.0.1:3");
	send_end(f, 3, 10, 20, 0x7fffdeadbeef, "/h2", false);
	assert_int_equal(f->nspans, 3);

	assert_int_equal(f->spans[0]->status, SPAN_STATUS_ERROR);
	assert_string_equal(str_attr(f->spans[0], SC_ERROR_TYPE), "503");
	assert_string_equal(f->spans[0]->name, "GET /fail");
	/* 4xx is the client's error, not the server's. */
	assert_int_equal(f->spans[1]->status, SPAN_STATUS_UNSET);
	assert_int_equal(int_attr(f->spans[1], SC_HTTP_RESPONSE_STATUS_CODE), 404);
	assert_string_equal(f->spans[1]->name, "GET");
	assert_null(span__get(f->spans[1], SC_HTTP_ROUTE));
	/* Another writer type: the status word is not ours to read. */
	assert_null(span__get(f->spans[2], SC_HTTP_RESPONSE_STATUS_CODE));
}

/* Without the itab symbol (stripped binaries) the protocol tells whose writer it is. */
static void test_records__status_by_protocol_without_itab(void **state)
{
	uint64_t itab = target->response_itab;
	struct fixture *f = *state;

	target->response_itab = 0;
	send_start(f, 1, 10, "GET", "/h1", "127.0.0.1:1");
	send_end(f, 1, 10, 20, 404, "", false);
	next_proto = "HTTP/2.0";
	send_start(f, 2, 10, "GET", "/h2", "127.0.0.1:1");
	send_end(f, 2, 10, 20, 0x7fffdeadbeef, "", false);
	next_proto = "HTTP/1.1";
	target->response_itab = itab;

	assert_int_equal(f->nspans, 2);
	assert_int_equal(int_attr(f->spans[0], SC_HTTP_RESPONSE_STATUS_CODE), 404);
	assert_null(span__get(f->spans[1], SC_HTTP_RESPONSE_STATUS_CODE));
	assert_string_equal(str_attr(f->spans[1], SC_NETWORK_PROTOCOL_VERSION), "2");
}

static void test_records__routes_from_patterns(void **state)
{
	static const char *const cases[][2] = {
		{ "GET /users/{id}", "GET /users/{id}" },
		{ "/users/{id}", "GET /users/{id}" },
		{ "GET example.com/docs/", "GET /docs/" },
		{ "GET /{$}", "GET /" },
		{ "/items/{$}", "GET /items/" },
		{ "", "GET" },
	};
	struct fixture *f = *state;
	size_t i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		send_start(f, i + 1, 10, "GET", "/p", "127.0.0.1:1");
		send_end(f, i + 1, 10, 20, 200, cases[i][0], true);
		assert_int_equal(f->nspans, i + 1);
		assert_string_equal(f->spans[i]->name, cases[i][1]);
	}
}

/* A router framework's route (capture/routes.c) names the server call, whatever the mux matched. */
static void test_records__router_routes_win_over_patterns(void **state)
{
	char too_long[HTTP_ROUTE_MAX + 1];
	struct fixture *f = *state;
	struct pending *p;

	send_start(f, 1, 10, "GET", "/users/42", "127.0.0.1:1");
	/* Only the call in flight that began then is the route's. */
	assert_null(http_server__find(f->r, getpid(), 1, 11));
	assert_null(http_server__find(f->r, getpid(), 2, 10));
	p = http_server__find(f->r, getpid(), 1, 10);
	assert_non_null(p);
	memset(too_long, '/', sizeof(too_long));
	assert_int_equal(http_server__set_route(p, too_long, sizeof(too_long)), -E2BIG);
	assert_int_equal(http_server__set_route(p, "/", 0), -EINVAL);
	assert_int_equal(http_server__set_route(p, "/users/:id", 10), 0);
	send_end(f, 1, 10, 20, 200, "GET /", true);
	assert_int_equal(f->nspans, 1);
	assert_string_equal(f->spans[0]->name, "GET /users/:id");
	assert_string_equal(str_attr(f->spans[0], SC_HTTP_ROUTE), "/users/:id");

	/* A call that panicked and never returned keeps it too; bytes not UTF-8 are replaced. */
	send_start(f, 2, 10, "POST", "/items", "127.0.0.1:1");
	p = http_server__find(f->r, getpid(), 2, 10);
	assert_non_null(p);
	assert_int_equal(http_server__set_route(p, "/items/\xff", 8), 0);
	send_panic(f, 2, 10, 30, "/");
	records__tick(f->r, 30 + GRACE_NS);
	assert_int_equal(f->nspans, 2);
	assert_string_equal(f->spans[1]->name, "POST /items/\xef\xbf\xbd");
	assert_string_equal(str_attr(f->spans[1], SC_HTTP_ROUTE), "/items/\xef\xbf\xbd");
	assert_int_equal(f->spans[1]->status, SPAN_STATUS_ERROR);
}

static void test_records__unknown_method_is_other(void **state)
{
	struct fixture *f = *state;
	const struct span *s;

	send_start(f, 1, 10, "PURGE", "/cache", "[::1]:4242");
	send_end(f, 1, 10, 20, 200, "", true);
	assert_int_equal(f->nspans, 1);
	s = f->spans[0];
	assert_string_equal(str_attr(s, SC_HTTP_REQUEST_METHOD), "_OTHER");
	assert_string_equal(str_attr(s, SC_HTTP_REQUEST_METHOD_ORIGINAL), "PURGE");
	assert_string_equal(s->name, "HTTP");
	assert_string_equal(str_attr(s, SC_NETWORK_PEER_ADDRESS), "::1");
	assert_int_equal(int_attr(s, SC_NETWORK_PEER_PORT), 4242);
}

static void test_records__cut_path_stays_utf8(void **state)
{
	struct fixture *f = *state;
	char path[MAX_PATH_LEN + 64];
	const char *got;
	size_t i;

	/* "/x" then 3-byte characters: the 85th spans bytes 254-256, across the bound. */
	memcpy(path, "/x", 2);
	for (i = 0; i < 100; i++)
		memcpy(path + 2 + 3 * i, "\xe6\x97\xa5", 3);
	path[302] = '\0';
	send_start(f, 1, 10, "GET", path, "127.0.0.1:1");
	send_end(f, 1, 10, 20, 200, "", true);
	got = str_attr(f->spans[0], SC_URL_PATH);
	assert_non_null(got);
	/* 84 whole characters fit; the one the bound split is left out, not replaced. */
	assert_int_equal(strlen(got), 2 + 84 * 3);
	assert_memory_equal(got, path, strlen(got));
	assert_string_equal(str_attr(f->spans[0], GOSPAN_TRUNCATED), SC_URL_PATH);
}

#define SET_BYTES(rec, field, lit)                                                                 \
	do {                                                                                       \
		memcpy((rec).field, lit, sizeof(lit) - 1);                                         \
		(rec).field##_len = sizeof(lit) - 1;                                               \
	} while (0)

/* Records E and X, one call's start and end, which make the fixture's Nth span. */
static const struct span *send_call(struct fixture *f, const struct http_server_start *e,
				    const struct http_server_end *x, size_t n)
{
	assert_int_equal(records__handle(f->r, e, sizeof(*e)), 0);
	assert_int_equal(records__handle(f->r, x, sizeof(*x)), 0);
	assert_int_equal(f->nspans, n);
	return f->spans[n - 1];
}

/*
 * A Go string may hold a NUL or bytes that are not UTF-8. C code reads a value to its NUL, and
 * every string reaches the span valid: the method, protocol, addresses and pattern, which are
 * split and compared in the captured bytes, come out as from a valid copy of each.
 */
static void test_records__captured_bytes_are_read_as_text(void **state)
{
	struct fixture *f = *state;
	struct http_server_start e = {};
	struct http_server_end x = {};
	const struct span *s;

	e.hdr.type = EVENT_HTTP_SERVER_START;
	e.hdr.pid = getpid();
	e.hdr.goid = 1;
	e.hdr.start_ns = 10;
	e.cookie = COOKIE;
	e.content_length = -1;
	e.ids.flags = 1;
	memset(e.ids.trace_id, 0xab, sizeof(e.ids.trace_id));
	e.ids.span_id[0] = 1;
	SET_BYTES(e, method, "GET\0xy");
	SET_BYTES(e, path, "/p");
	SET_BYTES(e, host, "h\xffst:80");
	SET_BYTES(e, remote_addr, "10.0.0.\xc3:5555");
	SET_BYTES(e, proto, "HTTP/1.1\0junk");
	x.hdr = e.hdr;
	x.hdr.type = EVENT_HTTP_SERVER_END;
	x.end_ns = 20;
	x.status = 200;
	x.rw_itab = target->response_itab;
	SET_BYTES(x, pattern, "GET /r/\xff/{$}");
	s = send_call(f, &e, &x, 1);
	assert_string_equal(str_attr(s, SC_HTTP_REQUEST_METHOD), "GET");
	assert_string_equal(str_attr(s, SC_SERVER_ADDRESS), "h\xef\xbf\xbdst");
	assert_int_equal(int_attr(s, SC_SERVER_PORT), 80);
	assert_string_equal(str_attr(s, SC_NETWORK_PEER_ADDRESS), "10.0.0.\xef\xbf\xbd");
	assert_string_equal(str_attr(s, SC_CLIENT_ADDRESS), "10.0.0.\xef\xbf\xbd");
	assert_int_equal(int_attr(s, SC_NETWORK_PEER_PORT), 5555);
	assert_string_equal(str_attr(s, SC_NETWORK_PROTOCOL_VERSION), "1.1");
	assert_string_equal(str_attr(s, SC_HTTP_ROUTE), "/r/\xef\xbf\xbd/");
	assert_string_equal(s->name, "GET /r/\xef\xbf\xbd/");
	assert_int_equal(s->name_len, strlen(s->name));
	assert_int_equal(int_attr(s, SC_HTTP_RESPONSE_STATUS_CODE), 200); /* HTTP/1: own writer */

	/* A method that is no known one after its NUL; a pattern whose path ends at a NUL. */
	e.hdr.goid = x.hdr.goid = 2;
	memset(e.method, 0, sizeof(e.method));
	SET_BYTES(e, method, "PUT\0\xff");
	memset(e.proto, 0, sizeof(e.proto));
	SET_BYTES(e, proto, "HTTP/2.0");
	memset(x.pattern, 0, sizeof(x.pattern));
	SET_BYTES(x, pattern, "GET /a\0/b");
	s = send_call(f, &e, &x, 2);
	assert_string_equal(str_attr(s, SC_HTTP_REQUEST_METHOD), "PUT");
	assert_string_equal(str_attr(s, SC_NETWORK_PROTOCOL_VERSION), "2");
	assert_string_equal(str_attr(s, SC_HTTP_ROUTE), "/a");
	assert_string_equal(s->name, "PUT /a");

	e.hdr.goid = x.hdr.goid = 3;
	memset(e.method, 0, sizeof(e.method));
	SET_BYTES(e, method, "G\xc3T");
	s = send_call(f, &e, &x, 3);
	assert_string_equal(str_attr(s, SC_HTTP_REQUEST_METHOD), "_OTHER");
	assert_string_equal(str_attr(s, SC_HTTP_REQUEST_METHOD_ORIGINAL), "G\xef\xbf\xbdT");
	assert_string_equal(s->name, "HTTP /a");
}

static void test_records__lost_and_replaced_calls_are_counted(void **state)
{
	struct fixture *f = *state;
	struct records_stats st;

	send_end(f, 9, 10, 20, 200, "", true); /* its start was lost */
	send_start(f, 1, 10, "GET", "/a", "127.0.0.1:1");
	send_start(f, 1, 30, "GET", "/b", "127.0.0.1:1"); /* /a never returned */
	send_end(f, 1, 30, 40, 200, "", true);
	records__stats(f->r, &st);
	assert_int_equal(st.dropped[RECORDS_DROP_NO_START], 1);
	assert_int_equal(st.dropped[RECORDS_DROP_ABANDONED], 1);
	assert_int_equal(f->nspans, 1);
	assert_string_equal(str_attr(f->spans[0], SC_URL_PATH), "/b");

	/* A short record or an unknown type is counted, never read past its end. */
	assert_int_equal(records__handle(f->r, "\x01\x00", 2), 0);
	assert_int_equal(records__handle(f->r, &(struct record_header){ .type = 99 },
					 sizeof(struct record_header)),
			 0);
	records__stats(f->r, &st);
	assert_int_equal(st.dropped[RECORDS_DROP_MALFORMED], 2);
}

static void test_records__pending_is_bounded(void **state)
{
	struct fixture *f = *state;
	struct records_stats st;
	uint64_t g;

	for (g = 1; g <= 6; g++)
		send_start(f, g, 10, "GET", "/x", "127.0.0.1:1");
	records__stats(f->r, &st);
	assert_int_equal(st.pending, 4);
	assert_int_equal(st.dropped[RECORDS_DROP_TOO_MANY_PENDING], 2);
	records__flush(f->r);
	records__stats(f->r, &st);
	assert_int_equal(st.pending, 0);
	assert_int_equal(st.dropped[RECORDS_DROP_UNFINISHED], 4);
	assert_int_equal(f->nspans, 0);
}

static void test_records__recovered_panic_is_a_normal_span(void **state)
{
	struct fixture *f = *state;
	struct records_stats st;

	send_start(f, 1, 10, "GET", "/r", "127.0.0.1:1");
	send_panic(f, 1, 10, 15, "/r");
	records__stats(f->r, &st);
	assert_int_equal(st.panics_held, 1);
	assert_int_equal(f->holds, 1);
	send_end(f, 1, 10, 20, 200, "/r", true);
	records__tick(f->r, 10 + 2 * GRACE_NS);
	assert_int_equal(f->nspans, 1);
	assert_int_equal(f->spans[0]->status, SPAN_STATUS_UNSET);
	assert_int_equal(f->spans[0]->end_ns, 1700000000000000020ULL);
	/* It returned: its span goes out in the place it held since the panic. */
	assert_true(f->came_held[0]);
	assert_int_equal(f->holds, 0);
	records__stats(f->r, &st);
	assert_int_equal(st.panics, 0);
	assert_int_equal(st.panics_held, 0);
	assert_int_equal(f->forgotten, 0);
}

static void test_records__unrecovered_panic_ends_at_the_panic(void **state)
{
	struct fixture *f = *state;
	struct records_stats st;
	const struct span *s;

	send_start(f, 1, 100, "GET", "/panic", "127.0.0.1:1");
	send_panic(f, 1, 100, 500, "GET /panic");
	/* BPF sends one panic per call; a second record changes nothing, holds nothing more. */
	send_panic(f, 1, 100, 700, "GET /panic");
	assert_int_equal(f->holds, 1);
	records__tick(f->r, 500 + GRACE_NS / 2);
	assert_int_equal(f->nspans, 0); /* it may still recover */
	records__tick(f->r, 500 + GRACE_NS);
	assert_int_equal(f->nspans, 1);
	assert_true(f->came_held[0]);
	assert_int_equal(f->holds, 0);
	s = f->spans[0];
	assert_string_equal(s->name, "GET /panic");
	assert_int_equal(s->status, SPAN_STATUS_ERROR);
	assert_string_equal(str_attr(s, SC_ERROR_TYPE), "panic");
	assert_null(span__get(s, SC_HTTP_RESPONSE_STATUS_CODE));
	assert_int_equal(s->end_ns, 1700000000000000500ULL);
	/* Its BPF in-flight entry is removed: the RET that would have done so never comes. */
	assert_int_equal(f->forgotten, 1);
	assert_int_equal(f->forgot_start, 100);
	records__stats(f->r, &st);
	assert_int_equal(st.panics, 1);
	assert_int_equal(st.panics_held, 0);
	assert_int_equal(st.pending, 0);

	/* A panic whose goroutine starts another call is finished at once. */
	send_start(f, 2, 100, "GET", "/panic", "127.0.0.1:1");
	send_panic(f, 2, 100, 300, "GET /panic");
	send_start(f, 2, 400, "GET", "/next", "127.0.0.1:1");
	assert_int_equal(f->nspans, 2);
	assert_int_equal(f->spans[1]->status, SPAN_STATUS_ERROR);
	assert_true(f->came_held[1]);

	/* So is one whose goroutine ends a call started since (that start was lost). */
	send_start(f, 3, 100, "GET", "/panic", "127.0.0.1:1");
	send_panic(f, 3, 100, 300, "GET /panic");
	send_end(f, 3, 400, 500, 200, "", true);
	assert_int_equal(f->nspans, 3);
	assert_int_equal(f->spans[2]->status, SPAN_STATUS_ERROR);
	assert_int_equal(f->spans[2]->end_ns, 1700000000000000300ULL);
	assert_true(f->came_held[2]);
	records__stats(f->r, &st);
	assert_int_equal(st.panics, 3);
	assert_int_equal(st.dropped[RECORDS_DROP_ABANDONED], 0);
	assert_int_equal(st.dropped[RECORDS_DROP_NO_START], 1);
	assert_int_equal(f->holds, 0);
}

/* No place is held for a span that will not be exported, nor kept when none could be had. */
static void test_records__panic_holds_a_place_only_when_it_can(void **state)
{
	struct fixture *f = *state;
	struct records_stats st;

	next_flags = 0;
	send_start(f, 1, 100, "GET", "/quiet", "127.0.0.1:1");
	send_panic(f, 1, 100, 200, "");
	next_flags = 1;
	assert_int_equal(f->holds, 0);

	f->hold_result = -ENOSPC;
	send_start(f, 2, 100, "GET", "/full", "127.0.0.1:1");
	send_panic(f, 2, 100, 200, "");
	assert_int_equal(f->holds, 0);

	records__tick(f->r, 200 + GRACE_NS);
	records__stats(f->r, &st);
	assert_int_equal(st.panics, 2);
	assert_int_equal(st.unsampled, 1);
	assert_int_equal(f->nspans, 1);
	assert_false(f->came_held[0]); /* submitted as any other span */
	assert_string_equal(str_attr(f->spans[0], SC_URL_PATH), "/full");
}

/* ---- a panicked call and a full export queue: the real exporter, a sink held shut ---------- */

#define QUEUE 8
#define BATCH 4
#define BURST 20

struct gated_sink {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	bool open;
	size_t n;
	char paths[QUEUE + BURST][32];
};

static int gated_export(void *ctx, struct span *const *spans, size_t n)
{
	struct gated_sink *g = ctx;
	const struct attr *a;
	size_t i;

	pthread_mutex_lock(&g->lock);
	while (!g->open)
		pthread_cond_wait(&g->cond, &g->lock);
	for (i = 0; i < n && g->n < QUEUE + BURST; i++) {
		a = span__get(spans[i], SC_URL_PATH);
		snprintf(g->paths[g->n++], sizeof(g->paths[0]), "%s", a ? a->s : "?");
	}
	pthread_cond_broadcast(&g->cond);
	pthread_mutex_unlock(&g->lock);
	return 0;
}

static const struct sink_ops gated_ops = { .name = "gated", .export = gated_export };

static void to_queue(void *ctx, struct span *s)
{
	exporter__submit(ctx, s);
}

static int hold_in_queue(void *ctx)
{
	return exporter__hold(ctx);
}

static void to_held_place(void *ctx, struct span *s)
{
	exporter__submit_held(ctx, s);
}

/*
 * A burst that fills the queue while a panicked call waits out its grace: the panicked span was
 * dropped when its turn came (issue 15). It holds its place from the panic on: the burst loses
 * the spans that do not fit, the panicked span is exported.
 */
static void test_records__panicked_span_keeps_its_place_in_a_full_queue(void **state)
{
	struct gated_sink g = { .lock = PTHREAD_MUTEX_INITIALIZER, .cond = PTHREAD_COND_INITIALIZER };
	struct fixture *f = *state;
	struct records *own = f->r;
	struct exporter_stats es;
	struct timespec deadline;
	struct exporter *e;
	bool found = false;
	char path[32];
	uint64_t goid;
	size_t i;

	e = exporter__new(&(struct exporter_opts){
		.max_queue = QUEUE, .max_batch = BATCH, .delay_ms = 5, .ops = &gated_ops, .ctx = &g });
	assert_non_null(e);
	f->r = records__new(&(struct records_opts){
		.clock = &f->clock,
		.processes = f->pt,
		.submit = to_queue,
		.hold = hold_in_queue,
		.submit_held = to_held_place,
		.ctx = e,
		.panic_grace_ns = GRACE_NS,
		.max_pending = 64,
	});
	assert_non_null(f->r);

	send_start(f, 1, 100, "GET", "/panic", "127.0.0.1:1");
	send_panic(f, 1, 100, 200, "GET /panic");
	for (goid = 2; goid < 2 + BURST; goid++) {
		snprintf(path, sizeof(path), "/users/%llu", (unsigned long long)goid);
		send_start(f, goid, 300, "GET", path, "127.0.0.1:1");
		send_end(f, goid, 300, 400, 200, "GET /users/{id}", true);
	}
	exporter__stats(e, &es);
	assert_int_equal(es.held, 1);
	assert_int_equal(es.dropped_queue_full, BURST - (QUEUE - 1));

	records__tick(f->r, 200 + GRACE_NS); /* it did not return: finished at the panic */
	pthread_mutex_lock(&g.lock);
	g.open = true;
	pthread_cond_broadcast(&g.cond);
	clock_gettime(CLOCK_REALTIME, &deadline);
	deadline.tv_sec += 10;
	while (g.n < QUEUE && pthread_cond_timedwait(&g.cond, &g.lock, &deadline) != ETIMEDOUT)
		;
	for (i = 0; i < g.n; i++)
		found |= !strcmp(g.paths[i], "/panic");
	assert_int_equal(g.n, QUEUE);
	pthread_mutex_unlock(&g.lock);
	assert_true(found);

	exporter__shutdown(e);
	exporter__stats(e, &es);
	assert_int_equal(es.exported, QUEUE);
	assert_int_equal(es.dropped_queue_full, BURST - (QUEUE - 1));
	assert_int_equal(es.held, 0);
	records__free(f->r);
	exporter__free(e);
	f->r = own;
}

/* The caller's traceparent said "not sampled": the span is counted, not exported. */
static void test_records__unsampled_traces_are_not_exported(void **state)
{
	struct fixture *f = *state;
	struct records_stats st;

	next_flags = 0;
	send_start(f, 1, 10, "GET", "/quiet", "127.0.0.1:1");
	send_end(f, 1, 10, 20, 200, "", true);
	next_flags = 1;
	send_start(f, 2, 10, "GET", "/loud", "127.0.0.1:1");
	send_end(f, 2, 10, 20, 200, "", true);
	records__stats(f->r, &st);
	assert_int_equal(f->nspans, 1);
	assert_int_equal(st.unsampled, 1);
	assert_string_equal(str_attr(f->spans[0], SC_URL_PATH), "/loud");
	/* The span keeps the ids BPF chose. */
	assert_int_equal(f->spans[0]->trace_id[0], 0xab);
	assert_int_equal(f->spans[0]->span_id[7], 0x5e);
}

static void send_client(struct fixture *f, uint64_t goid, const char *url_host, const char *path,
			const char *query, int64_t status, uint64_t err_itab)
{
	struct http_client_start e = {};
	struct http_client_end x = {};

	e.hdr.type = EVENT_HTTP_CLIENT_START;
	e.hdr.pid = getpid();
	e.hdr.goid = goid;
	e.hdr.start_ns = 100;
	e.cookie = COOKIE;
	memset(e.ids.trace_id, 0xcd, sizeof(e.ids.trace_id));
	memset(e.ids.span_id, 0x11, sizeof(e.ids.span_id));
	memset(e.ids.parent_span_id, 0x22, sizeof(e.ids.parent_span_id));
	e.ids.flags = 1;
	SET_STR(method, "GET");
	SET_STR(scheme, "http");
	SET_STR(host, url_host);
	SET_STR(path, path);
	SET_STR(query, query);
	assert_int_equal(records__handle(f->r, &e, sizeof(e)), 0);
	x.hdr = e.hdr;
	x.hdr.type = EVENT_HTTP_CLIENT_END;
	x.end_ns = 300;
	x.status = status;
	x.err_itab = err_itab;
	assert_int_equal(records__handle(f->r, &x, sizeof(x)), 0);
}

static void test_records__client_spans(void **state)
{
	struct fixture *f = *state;
	const struct span *s;

	send_client(f, 1, "api.example.com:8443", "/v1/items", "token=s3cret&page=2", 200, 0);
	send_client(f, 2, "example.com", "/missing", "", 404, 0);
	send_client(f, 3, "127.0.0.1:9", "/down", "", 0, 0x4242);
	assert_int_equal(f->nspans, 3);

	s = f->spans[0];
	assert_int_equal(s->kind, SPAN_KIND_CLIENT);
	assert_string_equal(s->name, "GET");
	/* Query values never leave the process: only the keys do. */
	assert_string_equal(str_attr(s, SC_URL_FULL),
			    "http://api.example.com:8443/v1/items?token=REDACTED&page=REDACTED");
	assert_string_equal(str_attr(s, SC_SERVER_ADDRESS), "api.example.com");
	assert_int_equal(int_attr(s, SC_SERVER_PORT), 8443);
	assert_int_equal(int_attr(s, SC_HTTP_RESPONSE_STATUS_CODE), 200);
	assert_int_equal(s->status, SPAN_STATUS_UNSET);
	assert_int_equal(s->parent_span_id[0], 0x22);
	assert_int_equal(s->end_ns - s->start_ns, 200);

	/* 4xx is an error for a client; the default port comes from the scheme. */
	s = f->spans[1];
	assert_int_equal(s->status, SPAN_STATUS_ERROR);
	assert_string_equal(str_attr(s, SC_ERROR_TYPE), "404");
	assert_int_equal(int_attr(s, SC_SERVER_PORT), 80);
	assert_string_equal(str_attr(s, SC_URL_FULL), "http://example.com/missing");

	/* A transport error: no response, no status code. */
	s = f->spans[2];
	assert_int_equal(s->status, SPAN_STATUS_ERROR);
	assert_non_null(str_attr(s, SC_ERROR_TYPE));
	assert_null(span__get(s, SC_HTTP_RESPONSE_STATUS_CODE));
}

static void send_grpc_client(struct fixture *f, uint64_t goid, uint64_t start, const char *target,
			     int32_t code, const char *message)
{
	struct grpc_client_start e = {};
	struct grpc_client_end x = {};

	e.hdr.type = EVENT_GRPC_CLIENT_START;
	e.hdr.pid = getpid();
	e.hdr.goid = goid;
	e.hdr.start_ns = start;
	e.cookie = COOKIE;
	memset(e.ids.trace_id, 0xcd, sizeof(e.ids.trace_id));
	memset(e.ids.span_id, (int)start, sizeof(e.ids.span_id));
	e.ids.flags = 1;
	SET_STR(method, "/shop.v1.Inventory/GetItem");
	SET_STR(target, target);
	assert_int_equal(records__handle(f->r, &e, sizeof(e)), 0);
	x.hdr = e.hdr;
	x.hdr.type = EVENT_GRPC_CLIENT_END;
	x.end_ns = start + 50;
	x.code = code;
	x.message_len = (uint32_t)strlen(message);
	memcpy(x.message, message, strlen(message));
	assert_int_equal(records__handle(f->r, &x, sizeof(x)), 0);
}

/*
 * gRPC CLIENT spans: named by the method, rpc.* attributes, server.address/port from the dial
 * target whatever its scheme; every code but OK is an error, named. One goroutine may have two
 * calls open at once (a stream and a unary call): the start time tells their ends apart.
 */
static void test_records__grpc_client_spans(void **state)
{
	struct fixture *f = *state;
	struct grpc_client_start a = {}, b = {};
	struct grpc_client_end end = {};
	const struct span *s;

	send_grpc_client(f, 1, 100, "dns:///inventory.svc:9090", 0, "");
	send_grpc_client(f, 2, 200, "passthrough:///10.0.0.7:50051", 5, "no such item");
	send_grpc_client(f, 3, 300, "unix:///run/app.sock", 14, "");
	assert_int_equal(f->nspans, 3);

	s = f->spans[0];
	assert_int_equal(s->kind, SPAN_KIND_CLIENT);
	assert_string_equal(s->name, "shop.v1.Inventory/GetItem");
	assert_string_equal(str_attr(s, SC_RPC_SYSTEM), "grpc");
	assert_string_equal(str_attr(s, SC_RPC_SERVICE), "shop.v1.Inventory");
	assert_string_equal(str_attr(s, SC_RPC_METHOD), "GetItem");
	assert_int_equal(int_attr(s, SC_RPC_GRPC_STATUS_CODE), 0);
	assert_string_equal(str_attr(s, SC_SERVER_ADDRESS), "inventory.svc");
	assert_int_equal(int_attr(s, SC_SERVER_PORT), 9090);
	assert_int_equal(s->status, SPAN_STATUS_UNSET);
	assert_int_equal(s->end_ns - s->start_ns, 50);

	s = f->spans[1];
	assert_int_equal(s->status, SPAN_STATUS_ERROR);
	assert_string_equal(str_attr(s, SC_ERROR_TYPE), "NOT_FOUND");
	assert_string_equal(s->status_msg, "no such item");
	assert_string_equal(str_attr(s, SC_SERVER_ADDRESS), "10.0.0.7");
	assert_int_equal(int_attr(s, SC_SERVER_PORT), 50051);

	/* A unix socket has no server address to give. */
	s = f->spans[2];
	assert_string_equal(str_attr(s, SC_ERROR_TYPE), "UNAVAILABLE");
	assert_null(span__get(s, SC_SERVER_ADDRESS));

	/* Two calls open on one goroutine: the second's end does not take the first. */
	a.hdr.type = b.hdr.type = EVENT_GRPC_CLIENT_START;
	a.hdr.pid = b.hdr.pid = getpid();
	a.hdr.goid = b.hdr.goid = 9;
	a.hdr.start_ns = 1000;
	b.hdr.start_ns = 2000;
	a.cookie = b.cookie = COOKIE;
	a.ids.flags = b.ids.flags = 1;
	memcpy(a.method, "/a.A/Stream", 11);
	a.method_len = 11;
	memcpy(b.method, "/a.A/Unary", 10);
	b.method_len = 10;
	assert_int_equal(records__handle(f->r, &a, sizeof(a)), 0);
	assert_int_equal(records__handle(f->r, &b, sizeof(b)), 0);
	end.hdr = b.hdr;
	end.hdr.type = EVENT_GRPC_CLIENT_END;
	end.end_ns = 2100;
	assert_int_equal(records__handle(f->r, &end, sizeof(end)), 0);
	assert_int_equal(f->nspans, 4);
	assert_string_equal(f->spans[3]->name, "a.A/Unary");
	end.hdr = a.hdr;
	end.hdr.type = EVENT_GRPC_CLIENT_END;
	end.end_ns = 3000;
	assert_int_equal(records__handle(f->r, &end, sizeof(end)), 0);
	assert_int_equal(f->nspans, 5);
	assert_string_equal(f->spans[4]->name, "a.A/Stream");
	assert_int_equal(f->spans[4]->end_ns - f->spans[4]->start_ns, 2000);
}

static void send_grpc_server(struct fixture *f, uint64_t goid, int32_t code, const char *message,
			     const uint8_t *local_ip, uint8_t ip_len)
{
	struct grpc_server_start e = {};
	struct grpc_server_end x = {};

	e.hdr.type = EVENT_GRPC_SERVER_START;
	e.hdr.pid = getpid();
	e.hdr.goid = goid;
	e.hdr.start_ns = 100;
	e.cookie = COOKIE;
	memset(e.ids.trace_id, 0xab, sizeof(e.ids.trace_id));
	memset(e.ids.span_id, (int)goid, sizeof(e.ids.span_id));
	e.ids.flags = 1;
	SET_STR(method, "/grpc.health.v1.Health/Check");
	memcpy(e.local.ip, local_ip, ip_len);
	e.local.ip_len = ip_len;
	e.local.port = 50051;
	memcpy(e.remote.ip, (const uint8_t[]){ 192, 0, 2, 9 }, 4);
	e.remote.ip_len = 4;
	e.remote.port = 40000;
	assert_int_equal(records__handle(f->r, &e, sizeof(e)), 0);
	x.hdr = e.hdr;
	x.hdr.type = EVENT_GRPC_SERVER_END;
	x.end_ns = 400;
	x.cpu_ns = ~0ULL;
	x.code = code;
	x.message_len = (uint32_t)strlen(message);
	memcpy(x.message, message, strlen(message));
	assert_int_equal(records__handle(f->r, &x, sizeof(x)), 0);
}

/*
 * gRPC SERVER spans: the endpoints as the transport had them (IPv4 in Go's 16-byte form shown
 * as IPv4), and only the codes the conventions call server errors are errors.
 */
static void test_records__grpc_server_spans(void **state)
{
	static const uint8_t v4_in_v6[16] = { [10] = 0xff, [11] = 0xff, 127, 0, 0, 1 };
	static const uint8_t v6[16] = { 0x20, 0x01, 0x0d, 0xb8, [15] = 1 };
	struct fixture *f = *state;
	const struct span *s;

	send_grpc_server(f, 1, 0, "", v4_in_v6, 16);
	send_grpc_server(f, 2, 5, "not here", v6, 16);
	send_grpc_server(f, 3, 13, "boom", v4_in_v6, 16);
	assert_int_equal(f->nspans, 3);

	s = f->spans[0];
	assert_int_equal(s->kind, SPAN_KIND_SERVER);
	assert_string_equal(s->name, "grpc.health.v1.Health/Check");
	assert_string_equal(str_attr(s, SC_RPC_SERVICE), "grpc.health.v1.Health");
	assert_string_equal(str_attr(s, SC_RPC_METHOD), "Check");
	assert_string_equal(str_attr(s, SC_SERVER_ADDRESS), "127.0.0.1");
	assert_int_equal(int_attr(s, SC_SERVER_PORT), 50051);
	assert_string_equal(str_attr(s, SC_CLIENT_ADDRESS), "192.0.2.9");
	assert_int_equal(int_attr(s, SC_CLIENT_PORT), 40000);
	assert_string_equal(str_attr(s, SC_NETWORK_PEER_ADDRESS), "192.0.2.9");
	assert_int_equal(int_attr(s, SC_NETWORK_PEER_PORT), 40000);
	assert_int_equal(s->status, SPAN_STATUS_UNSET);

	/* NOT_FOUND is the caller's problem, not the server's. */
	s = f->spans[1];
	assert_int_equal(int_attr(s, SC_RPC_GRPC_STATUS_CODE), 5);
	assert_int_equal(s->status, SPAN_STATUS_UNSET);
	assert_null(span__get(s, SC_ERROR_TYPE));
	assert_string_equal(str_attr(s, SC_SERVER_ADDRESS), "2001:db8::1");

	s = f->spans[2];
	assert_int_equal(s->status, SPAN_STATUS_ERROR);
	assert_string_equal(str_attr(s, SC_ERROR_TYPE), "INTERNAL");
	assert_string_equal(s->status_msg, "boom");
}

/*
 * A process's start is news for the socket-layer writer, handed on with its pid and target, and
 * no span; a record cut short is counted and handed on to nobody.
 */
static void test_records__process_start_is_handed_on(void **state)
{
	struct fixture *f = *state;
	struct process_start e = {
		.hdr = { .type = EVENT_PROCESS_START, .pid = 4242, .goid = 1, .start_ns = 10 },
		.cookie = COOKIE,
	};
	struct records_stats st;

	assert_int_equal(records__handle(f->r, &e, sizeof(e)), 0);
	assert_int_equal(f->started, 1);
	assert_int_equal(f->started_pid, 4242);
	assert_int_equal(f->started_cookie, COOKIE);
	assert_int_equal(records__handle(f->r, &e, sizeof(e) - 8), 0);
	assert_int_equal(f->started, 1);
	records__stats(f->r, &st);
	assert_int_equal(st.dropped[RECORDS_DROP_MALFORMED], 1);
	assert_int_equal(st.spans, 0);
	assert_int_equal(st.pending, 0);
	assert_int_equal(f->nspans, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_records__clock_step_does_not_change_durations,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_records__every_kind_ends_the_same_way, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_records__lost_ends_are_ended_after_the_bound,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_records__long_calls_bpf_holds_stay, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_records__start_end_make_one_span, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_records__status_errors_and_foreign_writers,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_records__routes_from_patterns, setup, teardown),
		cmocka_unit_test_setup_teardown(test_records__router_routes_win_over_patterns, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_records__unsampled_traces_are_not_exported, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_records__client_spans, setup, teardown),
		cmocka_unit_test_setup_teardown(test_records__grpc_client_spans, setup, teardown),
		cmocka_unit_test_setup_teardown(test_records__grpc_server_spans, setup, teardown),
		cmocka_unit_test_setup_teardown(test_records__status_by_protocol_without_itab, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_records__unknown_method_is_other, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_records__cut_path_stays_utf8, setup, teardown),
		cmocka_unit_test_setup_teardown(test_records__captured_bytes_are_read_as_text,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_records__lost_and_replaced_calls_are_counted,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_records__pending_is_bounded, setup, teardown),
		cmocka_unit_test_setup_teardown(test_records__recovered_panic_is_a_normal_span,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_records__unrecovered_panic_ends_at_the_panic,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_records__panic_holds_a_place_only_when_it_can,
						setup, teardown),
		cmocka_unit_test_setup_teardown(
			test_records__panicked_span_keeps_its_place_in_a_full_queue, setup, teardown),
		cmocka_unit_test_setup_teardown(test_records__process_start_is_handed_on, setup,
						teardown),
	};

	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
