// SPDX-License-Identifier: MIT
/*
 * Unit tests for prometheus.c: a real metrics store fed real spans and observed sums, served on
 * a loopback port the kernel picks, and read over a real socket as a scraper reads it. Checks the
 * exact text of a scrape (target_info, buckets, _sum, _count), the name translation (units,
 * _total, gauges), label escaping and merging, the overflow set, processes kept apart by job and
 * instance, the HTTP answers (404, 405, 400, 431, HEAD), a silent client that neither blocks the
 * next scrape nor stays open past its timeout, a port already taken, and the request parser.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <cmocka.h>

#include "core/log.h"
#include "export/prometheus.h"
#include "helpers.h"
#include "model/metrics.h"
#include "model/semconv.h"
#include "model/span.h"

#define T0 1700000000000000000ULL

static struct metrics *new_store(size_t limit, metrics_observe_fn observe, void *ctx)
{
	struct metrics *m = metrics__new(&(struct metrics_opts){
		.temporality = METRIC_TEMPORALITY_CUMULATIVE,
		.exemplars = METRIC_EXEMPLARS_ALWAYS_OFF,
		.cardinality_limit = limit,
		.observe = observe,
		.observe_ctx = ctx,
	});

	assert_non_null(m);
	return m;
}

/* A traced process's resource, as process.c makes it (the attributes that matter here). */
static struct resource *new_resource(const char *service, const char *host, int pid)
{
	struct resource *r = resource__new();

	assert_non_null(r);
	assert_int_equal(resource__set_str(r, SC_SERVICE_NAME, service), 0);
	assert_int_equal(resource__set_str(r, SC_TELEMETRY_SDK_NAME, "gospan"), 0);
	assert_int_equal(resource__set_int(r, SC_PROCESS_PID, pid), 0);
	assert_int_equal(resource__set_str(r, SC_HOST_NAME, host), 0);
	return r;
}

/* A finished HTTP server span of DUR_NS on R, measured as records.c measures it. */
static void serve(struct metrics *m, struct resource *r, const char *method, const char *route,
		  int status, uint64_t dur_ns)
{
	struct span *s = span__new();

	assert_non_null(s);
	span__set_resource(s, r);
	s->kind = SPAN_KIND_SERVER;
	s->start_ns = T0;
	s->end_ns = T0 + dur_ns;
	assert_int_equal(span__set_str(s, SC_HTTP_REQUEST_METHOD, method, strlen(method)), 0);
	assert_int_equal(span__set_str(s, SC_URL_PATH, "/not/a/label", 12), 0);
	assert_int_equal(span__set_str(s, SC_HTTP_ROUTE, route, strlen(route)), 0);
	assert_int_equal(span__set_int(s, SC_HTTP_RESPONSE_STATUS_CODE, status), 0);
	if (status >= 500) {
		char code[8];

		snprintf(code, sizeof(code), "%d", status);
		assert_int_equal(span__set_str(s, SC_ERROR_TYPE, code, strlen(code)), 0);
	}
	metrics__record_span(m, s, false);
	span__free(s);
}

static struct prometheus *serve_store(struct metrics *m, const char *host, int timeout_ms)
{
	struct prometheus *p = prometheus__new(&(struct prometheus_opts){
		.host = host,
		.port = 0,
		.metrics = m,
		.origin = "test",
		.timeout_ms = timeout_ms,
	});

	assert_non_null(p);
	assert_true(prometheus__port(p) > 0);
	return p;
}

static int connect_to(int family, int port)
{
	struct sockaddr_storage ss = {};
	struct timeval tv = { .tv_sec = 10 };
	socklen_t len;
	int fd = socket(family, SOCK_STREAM | SOCK_CLOEXEC, 0);

	assert_true(fd >= 0);
	if (family == AF_INET6) {
		struct sockaddr_in6 *a = (struct sockaddr_in6 *)&ss;

		a->sin6_family = AF_INET6;
		a->sin6_port = htons((uint16_t)port);
		a->sin6_addr = in6addr_loopback;
		len = sizeof(*a);
	} else {
		struct sockaddr_in *a = (struct sockaddr_in *)&ss;

		a->sin_family = AF_INET;
		a->sin_port = htons((uint16_t)port);
		a->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
		len = sizeof(*a);
	}
	/* A server that never answers fails the test in 10 s instead of hanging it. */
	assert_int_equal(setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)), 0);
	assert_int_equal(connect(fd, (struct sockaddr *)&ss, len), 0);
	return fd;
}

static void send_all(int fd, const char *s, size_t n)
{
	ssize_t k;

	while (n) {
		k = send(fd, s, n, MSG_NOSIGNAL);
		assert_true(k > 0);
		s += k;
		n -= (size_t)k;
	}
}

/* Everything the server sends until it closes; NULL when the read timed out. */
static char *read_all(int fd)
{
	size_t len = 0, cap = 65536;
	char *buf = malloc(cap);
	ssize_t n;

	assert_non_null(buf);
	for (;;) {
		if (len + 1 == cap) {
			cap *= 2;
			buf = realloc(buf, cap);
			assert_non_null(buf);
		}
		n = recv(fd, buf + len, cap - len - 1, 0);
		if (n == 0)
			break;
		if (n < 0) {
			free(buf);
			return NULL;
		}
		len += (size_t)n;
	}
	buf[len] = '\0';
	return buf;
}

/* REQUEST sent whole on a connection of its own; the whole response. */
static char *exchange(int family, int port, const char *request, size_t len)
{
	int fd = connect_to(family, port);
	char *resp;

	send_all(fd, request, len);
	resp = read_all(fd);
	close(fd);
	assert_non_null(resp);
	return resp;
}

static char *scrape(int port)
{
	static const char req[] = "GET /metrics HTTP/1.1\r\nHost: localhost\r\n"
				  "Accept: text/plain;version=0.0.4;q=0.5,*/*;q=0.1\r\n\r\n";

	return exchange(AF_INET, port, req, sizeof(req) - 1);
}

static const char *body_of(const char *resp)
{
	const char *b = strstr(resp, "\r\n\r\n");

	assert_non_null(b);
	return b + 4;
}

static int status_of(const char *resp)
{
	int status = 0;

	assert_int_equal(sscanf(resp, "HTTP/1.1 %d ", &status), 1);
	return status;
}

/* The exact scrape of one process, one series: every line, in order. */
static void test_prometheus__exact_text(void **state)
{
	struct metrics *m = new_store(2000, NULL, NULL);
	struct resource *r = new_resource("shop", "host-a", 4242);
	struct prometheus *p;
	char *resp;

	(void)state;
	/* Exact in binary: 2^-8 s, 2^-6 s and 2 s, so the sum's text is known. */
	serve(m, r, "GET", "/users/{id}", 200, 3906250);
	serve(m, r, "GET", "/users/{id}", 200, 15625000);
	serve(m, r, "GET", "/users/{id}", 200, 2000000000);
	p = serve_store(m, "127.0.0.1", 0);
	resp = scrape(prometheus__port(p));
	assert_int_equal(status_of(resp), 200);
	assert_non_null(
	    strstr(resp, "\r\nContent-Type: text/plain; version=0.0.4; charset=utf-8\r\n"));
#define L                                                                                           \
	"http_request_method=\"GET\",http_response_status_code=\"200\",http_route=\"/users/{id}\"," \
	"instance=\"host-a:4242\",job=\"shop\",otel_scope_name=\"gospan\",otel_scope_version=\"0.1.0\""
#define B "http_server_request_duration_seconds_bucket{" L ",le="
	assert_string_equal(
	    body_of(resp),
	    "# HELP target_info Target metadata\n"
	    "# TYPE target_info gauge\n"
	    "target_info{host_name=\"host-a\",instance=\"host-a:4242\",job=\"shop\","
	    "process_pid=\"4242\",telemetry_sdk_name=\"gospan\"} 1\n"
	    "# HELP http_server_request_duration_seconds Duration of HTTP server requests.\n"
	    "# TYPE http_server_request_duration_seconds histogram\n" B "\"0.005\"} 1\n" B
	    "\"0.01\"} 1\n" B "\"0.025\"} 2\n" B "\"0.05\"} 2\n" B "\"0.075\"} 2\n" B
	    "\"0.1\"} 2\n" B "\"0.25\"} 2\n" B "\"0.5\"} 2\n" B "\"0.75\"} 2\n" B "\"1\"} 2\n" B
	    "\"2.5\"} 3\n" B "\"5\"} 3\n" B "\"7.5\"} 3\n" B "\"10\"} 3\n" B "\"+Inf\"} 3\n"
	    "http_server_request_duration_seconds_sum{" L "} 2.01953125\n"
	    "http_server_request_duration_seconds_count{" L "} 3\n");
#undef B
#undef L
	free(resp);
	prometheus__free(p);
	metrics__free(m);
	resource__free(r);
}

/* Observed sums of the kinds gospan's health metrics are: counters and up-down counters. */
static const char *const comp_keys[] = { "otel.component.type" };
static const struct metric_desc processed = {
	.name = "otel.sdk.processor.span.processed",
	.description = "Spans the batch span processor took.",
	.unit = "{span}",
	.kind = METRIC_SUM,
	.monotonic = true,
	.observed = true,
	.keys = comp_keys,
	.nkeys = 1,
};
static const struct metric_desc queue_size = {
	.name = "otel.sdk.processor.span.queue.size",
	.description = "Spans waiting\nin the \\ queue.",
	.unit = "{span}",
	.kind = METRIC_SUM,
	.observed = true,
	.keys = comp_keys,
	.nkeys = 1,
};
static const struct metric_desc rate = {
	.name = "net.io",
	.description = "",
	.unit = "By/s",
	.kind = METRIC_SUM,
	.observed = true,
	.keys = comp_keys,
	.nkeys = 1,
};
static const struct metric_desc done_total = {
	.name = "jobs.done.total",
	.description = "Done.",
	.unit = "{job}",
	.kind = METRIC_SUM,
	.monotonic = true,
	.observed = true,
	.keys = comp_keys,
	.nkeys = 1,
};
static const struct metric_desc latency_seconds = {
	.name = "queue.latency.seconds",
	.description = "Latency.",
	.unit = "s",
	.kind = METRIC_SUM,
	.observed = true,
	.keys = comp_keys,
	.nkeys = 1,
};

static void observe(void *ctx, struct metrics *m)
{
	struct attr a = { .key = "otel.component.type", .type = ATTR_STRING, .s = "batching" };
	struct resource *self = ctx;

	assert_int_equal(metrics__observe(m, &processed, self, &a, 1, 42), 0);
	assert_int_equal(metrics__observe(m, &queue_size, self, &a, 1, 7), 0);
	assert_int_equal(metrics__observe(m, &rate, self, &a, 1, 1024), 0);
	assert_int_equal(metrics__observe(m, &done_total, self, &a, 1, 3), 0);
	assert_int_equal(metrics__observe(m, &latency_seconds, self, &a, 1, 2), 0);
}

/* Whether TEXT has LINE as one whole line. */
static bool has_line(const char *text, const char *line)
{
	size_t n = strlen(line);
	const char *p;

	for (p = strstr(text, line); p; p = strstr(p + 1, line))
		if ((p == text || p[-1] == '\n') && p[n] == '\n')
			return true;
	return false;
}

#define assert_line(text, line)                                       \
	do {                                                          \
		if (!has_line(text, line))                            \
			fail_msg("no line '%s' in:\n%s", line, text); \
	} while (0)

/* Units, _total, counters and gauges; RPC and database durations; the health counters. */
static void test_prometheus__names_and_types(void **state)
{
	struct resource *self = new_resource("gospan", "host-a", 1);
	struct metrics *m = new_store(2000, observe, self);
	struct resource *r = new_resource("shop", "host-a", 7);
	struct prometheus *p;
	struct span *s;
	const char *body;
	char *resp;

	(void)state;
	s = span__new();
	assert_non_null(s);
	span__set_resource(s, r);
	s->kind = SPAN_KIND_SERVER;
	s->start_ns = T0;
	s->end_ns = T0 + 3000000; /* 3 ms */
	assert_int_equal(span__set_str(s, SC_RPC_SYSTEM, "grpc", 4), 0);
	assert_int_equal(span__set_str(s, SC_RPC_SERVICE, "shop.Cart", 9), 0);
	assert_int_equal(span__set_str(s, SC_RPC_METHOD, "Add", 3), 0);
	assert_int_equal(span__set_int(s, SC_RPC_GRPC_STATUS_CODE, 0), 0);
	metrics__record_span(m, s, false);
	span__free(s);
	s = span__new();
	assert_non_null(s);
	span__set_resource(s, r);
	s->kind = SPAN_KIND_CLIENT;
	s->start_ns = T0;
	s->end_ns = T0 + 250000000; /* 0.25 s */
	assert_int_equal(span__set_str(s, SC_DB_SYSTEM_NAME, "postgresql", 10), 0);
	assert_int_equal(span__set_str(s, SC_DB_OPERATION_NAME, "SELECT", 6), 0);
	assert_int_equal(span__set_str(s, SC_DB_QUERY_TEXT, "SELECT * FROM t", 15), 0);
	metrics__record_span(m, s, false);
	span__free(s);

	p = serve_store(m, "127.0.0.1", 0);
	resp = scrape(prometheus__port(p));
	body = body_of(resp);
	assert_line(body, "# TYPE rpc_server_duration_milliseconds histogram");
	assert_line(body,
		    "rpc_server_duration_milliseconds_bucket{instance=\"host-a:7\",job=\"shop\","
		    "otel_scope_name=\"gospan\",otel_scope_version=\"0.1.0\","
		    "rpc_grpc_status_code=\"0\",rpc_method=\"Add\",rpc_service=\"shop.Cart\","
		    "rpc_system=\"grpc\",le=\"0\"} 0");
	assert_line(body,
		    "rpc_server_duration_milliseconds_bucket{instance=\"host-a:7\",job=\"shop\","
		    "otel_scope_name=\"gospan\",otel_scope_version=\"0.1.0\","
		    "rpc_grpc_status_code=\"0\",rpc_method=\"Add\",rpc_service=\"shop.Cart\","
		    "rpc_system=\"grpc\",le=\"5\"} 1");
	assert_line(body, "rpc_server_duration_milliseconds_sum{instance=\"host-a:7\",job=\"shop\","
			  "otel_scope_name=\"gospan\",otel_scope_version=\"0.1.0\","
			  "rpc_grpc_status_code=\"0\",rpc_method=\"Add\",rpc_service=\"shop.Cart\","
			  "rpc_system=\"grpc\"} 3");
	assert_line(body, "# TYPE db_client_operation_duration_seconds histogram");
	/* 0.25 s is in the bucket (0.1, 0.5]. */
	assert_line(body,
		    "db_client_operation_duration_seconds_bucket{db_operation_name=\"SELECT\","
		    "db_system_name=\"postgresql\",instance=\"host-a:7\",job=\"shop\","
		    "otel_scope_name=\"gospan\",otel_scope_version=\"0.1.0\",le=\"0.1\"} 0");
	assert_line(body,
		    "db_client_operation_duration_seconds_bucket{db_operation_name=\"SELECT\","
		    "db_system_name=\"postgresql\",instance=\"host-a:7\",job=\"shop\","
		    "otel_scope_name=\"gospan\",otel_scope_version=\"0.1.0\",le=\"0.5\"} 1");
	assert_null(strstr(body, "SELECT * FROM t"));
	/* The health counters, with the resource of gospan itself. */
	assert_line(body, "# HELP otel_sdk_processor_span_processed_total Spans the batch span "
			  "processor took.");
	assert_line(body, "# TYPE otel_sdk_processor_span_processed_total counter");
	assert_line(body, "otel_sdk_processor_span_processed_total{instance=\"host-a:1\","
			  "job=\"gospan\",otel_component_type=\"batching\","
			  "otel_scope_name=\"gospan\",otel_scope_version=\"0.1.0\"} 42");
	assert_line(body, "# HELP otel_sdk_processor_span_queue_size Spans waiting\\nin the \\\\ "
			  "queue.");
	assert_line(body, "# TYPE otel_sdk_processor_span_queue_size gauge");
	assert_line(body, "otel_sdk_processor_span_queue_size{instance=\"host-a:1\",job=\"gospan\","
			  "otel_component_type=\"batching\",otel_scope_name=\"gospan\","
			  "otel_scope_version=\"0.1.0\"} 7");
	assert_line(body, "# TYPE net_io_bytes_per_second gauge");
	assert_null(strstr(body, "# HELP net_io_bytes_per_second")); /* no description */
	assert_line(body, "# TYPE jobs_done_total counter");
	assert_line(body, "# TYPE queue_latency_seconds gauge");
	assert_line(body, "target_info{host_name=\"host-a\",instance=\"host-a:1\",job=\"gospan\","
			  "process_pid=\"1\",telemetry_sdk_name=\"gospan\"} 1");
	free(resp);
	prometheus__free(p);
	metrics__free(m);
	resource__free(r);
	resource__free(self);
}

/* Values escaped; attribute names merged, renamed past reserved ones; the overflow set. */
static void test_prometheus__escaping_and_overflow(void **state)
{
	struct metrics *m = new_store(3, NULL, NULL); /* two sets of their own, then overflow */
	struct resource *r = new_resource("shop", "host-a", 4242);
	struct prometheus *p;
	const char *body;
	char *resp;

	(void)state;
	assert_int_equal(resource__set_str(r, "host-name", "other"), 0);
	assert_int_equal(resource__set_str(r, "job", "theirs"), 0);
	assert_int_equal(resource__set_str(r, "9lives", "cat"), 0);
	assert_int_equal(resource__set_str(r, "deployment.environment.name", "pr\"od\\\n"), 0);
	serve(m, r, "GET", "/q\"uo\\te\nnl", 200, 1000000);
	serve(m, r, "GET", "/two", 503, 1000000);
	serve(m, r, "GET", "/three", 200, 1000000);
	serve(m, r, "GET", "/four", 200, 1000000);
	p = serve_store(m, "127.0.0.1", 0);
	resp = scrape(prometheus__port(p));
	body = body_of(resp);
	assert_line(body, "http_server_request_duration_seconds_count{http_request_method=\"GET\","
			  "http_response_status_code=\"200\",http_route=\"/q\\\"uo\\\\te\\nnl\","
			  "instance=\"host-a:4242\",job=\"shop\",otel_scope_name=\"gospan\","
			  "otel_scope_version=\"0.1.0\"} 1");
	assert_line(body, "http_server_request_duration_seconds_count{error_type=\"503\","
			  "http_request_method=\"GET\",http_response_status_code=\"503\","
			  "http_route=\"/two\",instance=\"host-a:4242\",job=\"shop\","
			  "otel_scope_name=\"gospan\",otel_scope_version=\"0.1.0\"} 1");
	assert_line(body, "http_server_request_duration_seconds_count{instance=\"host-a:4242\","
			  "job=\"shop\",otel_metric_overflow=\"true\",otel_scope_name=\"gospan\","
			  "otel_scope_version=\"0.1.0\"} 2");
	assert_line(body, "http_server_request_duration_seconds_bucket{instance=\"host-a:4242\","
			  "job=\"shop\",otel_metric_overflow=\"true\",otel_scope_name=\"gospan\","
			  "otel_scope_version=\"0.1.0\",le=\"+Inf\"} 2");
	/* host-name < host.name: their values joined in that order under host_name. */
	assert_line(body, "target_info{deployment_environment_name=\"pr\\\"od\\\\\\n\","
			  "exported_job=\"theirs\",host_name=\"other;host-a\","
			  "instance=\"host-a:4242\",job=\"shop\",key_9lives=\"cat\","
			  "process_pid=\"4242\",telemetry_sdk_name=\"gospan\"} 1");
	free(resp);
	prometheus__free(p);
	metrics__free(m);
	resource__free(r);
}

/* The "name{labels}" of every sample line of TEXT must be unique; returns how many there are. */
static size_t assert_series_unique(const char *text)
{
	char **seen = NULL;
	size_t n = 0, i;
	const char *line, *end, *sp;

	for (line = text; *line; line = end + 1) {
		end = strchr(line, '\n');
		assert_non_null(end);
		if (*line == '#')
			continue;
		sp = memrchr(line, ' ', (size_t)(end - line));
		assert_non_null(sp);
		seen = realloc(seen, (n + 1) * sizeof(*seen));
		assert_non_null(seen);
		seen[n] = strndup(line, (size_t)(sp - line));
		assert_non_null(seen[n]);
		for (i = 0; i < n; i++)
			if (!strcmp(seen[i], seen[n]))
				fail_msg("series '%s' twice in:\n%s", seen[n], text);
		n++;
	}
	for (i = 0; i < n; i++)
		free(seen[i]);
	free(seen);
	return n;
}

static size_t occurrences(const char *text, const char *what)
{
	size_t n = 0;

	for (text = strstr(text, what); text; text = strstr(text + 1, what))
		n++;
	return n;
}

/*
 * Processes of one service on one host, one whose pid a new process took before the old one's
 * last scrape, and one with a namespace and an instance id of its own: no series twice.
 */
static void test_prometheus__processes_apart(void **state)
{
	struct metrics *m = new_store(2000, NULL, NULL);
	struct resource *r[4];
	struct prometheus *p;
	const char *body;
	char *resp;
	size_t i;

	(void)state;
	r[0] = new_resource("shop", "host-a", 1);
	r[1] = new_resource("shop", "host-a", 2);
	r[2] = new_resource("shop", "host-a", 1); /* pid 1 again */
	r[3] = new_resource("shop", "host-a", 3);
	assert_int_equal(resource__set_str(r[3], SC_SERVICE_NAMESPACE, "eu"), 0);
	assert_int_equal(resource__set_str(r[3], SC_SERVICE_INSTANCE_ID, "shop-7f9c"), 0);
	for (i = 0; i < 4; i++) {
		serve(m, r[i], "GET", "/", 200, 1000000);
		serve(m, r[i], "POST", "/", 201, 1000000);
	}
	p = serve_store(m, "127.0.0.1", 0);
	resp = scrape(prometheus__port(p));
	body = body_of(resp);
	/* 4 target_info, and 4 processes x 2 sets x (15 buckets + _sum + _count). */
	assert_int_equal(assert_series_unique(body), 4 + 4 * 2 * 17);
	assert_int_equal(occurrences(body, "# TYPE http_server_request_duration_seconds "), 1);
	assert_int_equal(occurrences(body, "# HELP http_server_request_duration_seconds "), 1);
	assert_int_equal(occurrences(body, "# TYPE target_info "), 1);
	assert_int_equal(occurrences(body, "target_info{"), 4);
	assert_int_equal(occurrences(body, "instance=\"host-a:1\""), 2 * 17 + 1);
	assert_int_equal(occurrences(body, "instance=\"host-a:1#2\""), 2 * 17 + 1);
	assert_int_equal(occurrences(body, "instance=\"host-a:2\""), 2 * 17 + 1);
	assert_line(body, "target_info{host_name=\"host-a\",instance=\"shop-7f9c\",job=\"eu/shop\","
			  "process_pid=\"3\",telemetry_sdk_name=\"gospan\"} 1");
	assert_line(body, "http_server_request_duration_seconds_count{http_request_method=\"POST\","
			  "http_response_status_code=\"201\",http_route=\"/\","
			  "instance=\"shop-7f9c\",job=\"eu/shop\",otel_scope_name=\"gospan\","
			  "otel_scope_version=\"0.1.0\"} 1");
	free(resp);
	prometheus__free(p);
	metrics__free(m);
	for (i = 0; i < 4; i++)
		resource__free(r[i]);
}

static char *request(int port, const char *req)
{
	return exchange(AF_INET, port, req, strlen(req));
}

/* What is not a scrape of /metrics is answered, and counted, as such. */
static void test_prometheus__http_answers(void **state)
{
	struct metrics *m = new_store(2000, NULL, NULL);
	struct resource *r = new_resource("shop", "host-a", 4242);
	struct prometheus_stats st;
	struct prometheus *p;
	char *get, *resp, big[PROMETHEUS_REQUEST_MAX + 64];
	char want[64];
	int port;

	(void)state;
	serve(m, r, "GET", "/", 200, 1000000);
	p = serve_store(m, "127.0.0.1", 0);
	port = prometheus__port(p);

	get = request(port, "GET /metrics?name[]=x HTTP/1.0\r\n\r\n");
	assert_int_equal(status_of(get), 200);
	resp = request(port, "HEAD /metrics HTTP/1.1\r\nHost: x\r\n\r\n");
	assert_int_equal(status_of(resp), 200);
	snprintf(want, sizeof(want), "\r\nContent-Length: %zu\r\n", strlen(body_of(get)));
	assert_non_null(strstr(resp, want));
	assert_string_equal(body_of(resp), "");
	free(resp);

	resp = request(port, "GET / HTTP/1.1\r\n\r\n");
	assert_int_equal(status_of(resp), 404);
	free(resp);
	resp = request(port, "GET /metricsx HTTP/1.1\r\n\r\n");
	assert_int_equal(status_of(resp), 404);
	free(resp);
	/* A body after the head is read and let go: the answer still arrives whole. */
	resp = request(port, "POST /metrics HTTP/1.1\r\nContent-Length: 5\r\n\r\nhello");
	assert_int_equal(status_of(resp), 405);
	assert_non_null(strstr(resp, "\r\nAllow: GET, HEAD\r\n"));
	free(resp);
	resp = request(port, "GET /metrics HTTP/1.1\r\nno colon here\r\n\r\n");
	assert_int_equal(status_of(resp), 400);
	free(resp);
	memset(big, 'a', sizeof(big));
	memcpy(big, "GET /metrics HTTP/1.1\r\nX: ", 26);
	resp = exchange(AF_INET, port, big, sizeof(big));
	assert_int_equal(status_of(resp), 431);
	free(resp);
	/* An absolute-form target is the same resource. */
	resp = request(port, "GET http://localhost:9464/metrics HTTP/1.1\r\n\r\n");
	assert_int_equal(status_of(resp), 200);
	assert_string_equal(body_of(resp), body_of(get));
	free(resp);
	free(get);

	prometheus__stats(p, &st);
	assert_int_equal(st.scrapes, 2); /* the HEAD is not one */
	assert_int_equal(st.bad_requests, 5);
	assert_int_equal(st.failures, 0);
	prometheus__free(p);
	metrics__free(m);
	resource__free(r);
}

/*
 * A client that sends half a request and waits is not answered, and the scrape after it is,
 * while it waits: the server's own timeout (a minute here) is far past the test client's 10 s.
 * With a short timeout, the silent client is closed and counted.
 */
static void test_prometheus__silent_client(void **state)
{
	struct metrics *m = new_store(2000, NULL, NULL);
	struct resource *r = new_resource("shop", "host-a", 4242);
	struct prometheus_stats st;
	struct prometheus *p;
	char *resp, c;
	int slow[3], i;

	(void)state;
	serve(m, r, "GET", "/", 200, 1000000);
	p = serve_store(m, "127.0.0.1", 60000);
	for (i = 0; i < 3; i++) {
		slow[i] = connect_to(AF_INET, prometheus__port(p));
		send_all(slow[i], "GET /metr", 9);
	}
	resp = scrape(prometheus__port(p));
	assert_int_equal(status_of(resp), 200);
	free(resp);
	/* Still open and unanswered: nothing to read yet. */
	assert_int_equal(recv(slow[0], &c, 1, MSG_DONTWAIT), -1);
	assert_int_equal(errno, EAGAIN);
	for (i = 0; i < 3; i++)
		close(slow[i]);
	prometheus__free(p);

	p = serve_store(m, "127.0.0.1", 200);
	slow[0] = connect_to(AF_INET, prometheus__port(p));
	send_all(slow[0], "GET /metr", 9);
	/* Closed by the server after 200 ms: end of file, well before this socket's 10 s. */
	assert_int_equal(recv(slow[0], &c, 1, 0), 0);
	close(slow[0]);
	prometheus__stats(p, &st);
	assert_int_equal(st.timeouts, 1);
	assert_int_equal(st.scrapes, 0);
	prometheus__free(p);
	metrics__free(m);
	resource__free(r);
}

/* IPv6: ::1, where the host has it. */
static void test_prometheus__ipv6(void **state)
{
	struct metrics *m = new_store(2000, NULL, NULL);
	struct sockaddr_in6 a = { .sin6_family = AF_INET6, .sin6_addr = IN6ADDR_LOOPBACK_INIT };
	struct prometheus *p;
	char *resp;
	int fd;

	(void)state;
	fd = socket(AF_INET6, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof(a))) {
		if (fd >= 0)
			close(fd);
		metrics__free(m);
		TEST_SKIP("this host has no IPv6 loopback address (::1)");
	}
	close(fd);
	p = serve_store(m, "::1", 0);
	resp = exchange(AF_INET6, prometheus__port(p), "GET /metrics HTTP/1.1\r\n\r\n", 25);
	assert_int_equal(status_of(resp), 200);
	assert_string_equal(body_of(resp), ""); /* nothing measured: an empty exposition */
	free(resp);
	prometheus__free(p);
	metrics__free(m);
}

/* A port already taken: NULL, EADDRINUSE, and a message naming the address and the settings. */
static void test_prometheus__port_in_use(void **state)
{
	struct metrics *m = new_store(2000, NULL, NULL);
	struct prometheus *p = serve_store(m, "127.0.0.1", 0), *q;
	char *msg, want[64];

	(void)state;
	q = TEST_LOGGED(LOG_ERROR, &msg,
			prometheus__new(&(struct prometheus_opts){
				.host = "127.0.0.1",
				.port = prometheus__port(p),
				.metrics = m,
				.origin = "OTEL_EXPORTER_PROMETHEUS_PORT=x",
			}));
	assert_null(q);
	assert_int_equal(errno, EADDRINUSE);
	snprintf(want, sizeof(want),
		 "on 127.0.0.1:%d (OTEL_EXPORTER_PROMETHEUS_PORT=x): ", prometheus__port(p));
	if (!strstr(msg, want))
		fail_msg("'%s' is not in: %s", want, msg);
	free(msg);
	q = TEST_LOGGED(LOG_ERROR, &msg,
			prometheus__new(&(struct prometheus_opts){
				.host = "no-such-host.invalid", .port = 0, .metrics = m }));
	assert_null(q);
	assert_non_null(strstr(msg, "cannot resolve 'no-such-host.invalid'"));
	free(msg);
	prometheus__free(p);
	metrics__free(m);
}

static int parse(const char *s, struct prometheus_request *req)
{
	memset(req, 0xff, sizeof(*req));
	return prometheus__parse_request(s, strlen(s), req);
}

static void test_prometheus__parse_request(void **state)
{
	static const char *const bad[] = {
		"GET /metrics HTTP/2.0\r\n\r\n",
		"GET  /metrics HTTP/1.1\r\n\r\n",
		"GET /metrics HTTP/1.1 \r\n\r\n",
		"GET /metrics\r\n\r\n",
		" GET /metrics HTTP/1.1\r\n\r\n",
		"G(T /metrics HTTP/1.1\r\n\r\n",
		"GET /metrics HTTP/1.1\r\nHost x\r\n\r\n",
		"GET /metrics HTTP/1.1\r\nHost : x\r\n\r\n",
		"GET /metrics HTTP/1.1\r\nHost: x\r\n folded\r\n\r\n",
		"GET /metrics HTTP/1.1\r\nHost: a\rb\r\n\r\n",
		"GET /metrics HTTP/1.1\r\nHost: a\x01\r\n\r\n",
		"GET /met\x7frics HTTP/1.1\r\n\r\n",
	};
	struct prometheus_request req;
	char big[PROMETHEUS_REQUEST_MAX];
	size_t i;

	(void)state;
	assert_int_equal(parse("GET /metrics HTTP/1.1\r\nHost: x\r\n\r\nbody", &req), 34);
	assert_int_equal(req.method, PROMETHEUS_GET);
	assert_true(req.metrics);
	/* LF alone ends lines too, and empty lines before the request line are skipped. */
	assert_int_equal(parse("\r\n\nHEAD /metrics?x=1#f HTTP/1.0\nA:\n\n", &req), 36);
	assert_int_equal(req.method, PROMETHEUS_HEAD);
	assert_true(req.metrics);
	assert_int_equal(parse("get /metrics HTTP/1.1\r\n\r\n", &req), 25);
	assert_int_equal(req.method, PROMETHEUS_OTHER);
	assert_int_equal(parse("GET /Metrics HTTP/1.1\r\n\r\n", &req), 25);
	assert_false(req.metrics);
	assert_int_equal(parse("GET https://h/metrics HTTP/1.1\r\n\r\n", &req), 34);
	assert_true(req.metrics);
	assert_int_equal(parse("OPTIONS * HTTP/1.1\r\n\r\n", &req), 22);
	assert_int_equal(req.method, PROMETHEUS_OTHER);
	assert_false(req.metrics);
	/* Not whole yet: nothing judged of a line that has not ended. */
	assert_int_equal(parse("", &req), 0);
	assert_int_equal(parse("GET /metrics HTTP/1.1\r\nHost: x\r\n", &req), 0);
	assert_int_equal(parse("GET /metrics HTTP/1.1\r\nHost: x\r\n\r", &req), 0);
	assert_int_equal(parse("G(T /metrics", &req), 0);
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		if (parse(bad[i], &req) != -EBADMSG)
			fail_msg("not refused: '%s'", bad[i]);
	/* A NUL is no header character, whatever follows it. */
	assert_int_equal(prometheus__parse_request("GET / HTTP/1.1\r\nA: \0\r\n\r\n", 24, &req),
			 -EBADMSG);
	memset(big, 'a', sizeof(big));
	assert_int_equal(prometheus__parse_request(big, sizeof(big) - 1, &req), 0);
	assert_int_equal(prometheus__parse_request(big, sizeof(big), &req), -EMSGSIZE);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_prometheus__exact_text),
		cmocka_unit_test(test_prometheus__names_and_types),
		cmocka_unit_test(test_prometheus__escaping_and_overflow),
		cmocka_unit_test(test_prometheus__processes_apart),
		cmocka_unit_test(test_prometheus__http_answers),
		cmocka_unit_test(test_prometheus__silent_client),
		cmocka_unit_test(test_prometheus__ipv6),
		cmocka_unit_test(test_prometheus__port_in_use),
		cmocka_unit_test(test_prometheus__parse_request),
	};

	log_set_level(TEST_QUIET_LEVEL);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
