// SPDX-License-Identifier: MIT
/*
 * Writes the seed corpus of fuzz_records: calls as the BPF programs report them, built from the
 * events.h structs themselves so the layouts are the compiler's. Each seed is what
 * fuzz_records.c reads: records framed by a 2-byte little-endian length, 0 meaning a timer tick.
 * Run by tests/fuzz/mkseeds.py: records OUTDIR.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/types.h>

#include "events.h"

#define RESPONSE_ITAB 0x7a1e40 /* fuzz_records.c's target with an itab */

static FILE *out;

static void put(const void *rec, size_t len)
{
	uint8_t hdr[2] = {len & 0xff, len >> 8};

	fwrite(hdr, 1, 2, out);
	fwrite(rec, 1, len, out);
}

static void tick(void)
{
	static const uint8_t zero[2];

	fwrite(zero, 1, 2, out);
}

#define SET(field, val)                                                            \
	do {                                                                       \
		size_t _n = strlen(val);                                           \
		memcpy(e.field, val, _n < sizeof(e.field) ? _n : sizeof(e.field)); \
		e.field##_len = (__u32)_n;                                         \
	} while (0)

static void ids(struct span_ids *id, uint8_t seed, int parent)
{
	memset(id->trace_id, 0x4b + seed, sizeof(id->trace_id));
	memset(id->span_id, 0x10 + seed, sizeof(id->span_id));
	if (parent)
		memset(id->parent_span_id, 0x20 + seed, sizeof(id->parent_span_id));
	id->flags = 1;
	id->remote_parent = parent;
}

static void server_start(__u32 pid, __u64 goid, __u64 t, __u32 cookie, const char *method,
			 const char *path, const char *host, const char *remote, const char *proto,
			 const char *tracestate)
{
	struct http_server_start e = {0};

	e.hdr = (struct record_header){EVENT_HTTP_SERVER_START, pid, goid, t};
	ids(&e.ids, (uint8_t)goid, tracestate != NULL);
	e.cookie = cookie;
	e.content_length = goid & 1 ? 42 : -1;
	e.tls = goid == 3;
	SET(method, method);
	SET(path, path);
	SET(host, host);
	SET(remote_addr, remote);
	SET(proto, proto);
	if (tracestate)
		SET(tracestate, tracestate);
	put(&e, sizeof(e));
}

static void server_end(__u32 pid, __u64 goid, __u64 t, __u64 end, __u64 rw_itab, __s64 status,
		       const char *pattern)
{
	struct http_server_end e = {0};

	e.hdr = (struct record_header){EVENT_HTTP_SERVER_END, pid, goid, t};
	e.end_ns = end;
	e.rw_itab = rw_itab;
	e.status = status;
	SET(pattern, pattern);
	put(&e, sizeof(e));
}

static void panic(__u32 pid, __u64 goid, __u64 t, __u64 when, const char *pattern)
{
	struct go_panic e = {0};

	e.hdr = (struct record_header){EVENT_GO_PANIC, pid, goid, t};
	e.panic_ns = when;
	SET(pattern, pattern);
	put(&e, sizeof(e));
}

static void client_start(__u32 pid, __u64 goid, __u64 t, const char *method, const char *scheme,
			 const char *host, const char *path, const char *query)
{
	struct http_client_start e = {0};

	e.hdr = (struct record_header){EVENT_HTTP_CLIENT_START, pid, goid, t};
	ids(&e.ids, (uint8_t)goid, 1);
	e.cookie = 0;
	SET(method, method);
	SET(scheme, scheme);
	SET(host, host);
	SET(path, path);
	SET(query, query);
	put(&e, sizeof(e));
}

static void client_end(__u32 pid, __u64 goid, __u64 t, __u64 end, __s64 status, __u64 err_itab,
		       const char *proto)
{
	struct http_client_end e = {0};

	e.hdr = (struct record_header){EVENT_HTTP_CLIENT_END, pid, goid, t};
	e.end_ns = end;
	e.status = status;
	e.err_itab = err_itab;
	SET(proto, proto);
	put(&e, sizeof(e));
}

static void func_start(__u32 pid, __u64 goid, __u64 t, __u32 func, __u32 depth, const char *str)
{
	struct func_start e = {0};
	double price = 9.5;
	float f = 0.25f;
	int i;

	e.hdr = (struct record_header){EVENT_FUNC_START, pid, goid, t};
	ids(&e.ids, (uint8_t)goid, 0);
	e.func = func;
	e.depth = depth;
	e.cookie = 0;
	for (i = 0; i < MAX_FUNC_ARGS; i++)
		e.args[i].ok = 1;
	e.args[0].word = (__u64)-3; /* qty int32 -3, or n */
	memcpy(&e.args[1].word, &f, sizeof(f));
	e.args[1].len = (__u32)strlen(str);
	memcpy(e.args[1].str, str,
	       e.args[1].len < MAX_ARG_STR_LEN ? e.args[1].len : MAX_ARG_STR_LEN);
	memcpy(&e.args[2].word, &price, sizeof(price));
	e.args[3].word = 1;
	put(&e, sizeof(e));
}

static void func_end(__u32 pid, __u64 goid, __u64 t, __u64 end, __u32 func, __u32 depth, __u64 cpu)
{
	struct func_end e = {0};

	e.hdr = (struct record_header){EVENT_FUNC_END, pid, goid, t};
	e.end_ns = end;
	e.cpu_ns = cpu;
	e.func = func;
	e.depth = depth;
	put(&e, sizeof(e));
}

static void grpc_server_start(__u32 pid, __u64 goid, __u64 t, const char *method,
			      const char *tracestate, __u8 ip_len)
{
	struct grpc_server_start e = {0};

	e.hdr = (struct record_header){EVENT_GRPC_SERVER_START, pid, goid, t};
	ids(&e.ids, (uint8_t)goid, tracestate != NULL);
	e.cookie = 1;
	SET(method, method);
	memset(e.local.ip, 0x7f, sizeof(e.local.ip));
	e.local.ip_len = ip_len;
	e.local.port = 50051;
	e.remote = e.local;
	e.remote.port = 41000;
	if (tracestate)
		SET(tracestate, tracestate);
	put(&e, sizeof(e));
}

static void grpc_server_end(__u32 pid, __u64 goid, __u64 t, __u64 end, __s32 code,
			    const char *message)
{
	struct grpc_server_end e = {0};

	e.hdr = (struct record_header){EVENT_GRPC_SERVER_END, pid, goid, t};
	e.end_ns = end;
	e.cpu_ns = ~0ULL;
	e.code = code;
	SET(message, message);
	put(&e, sizeof(e));
}

static void grpc_client(__u32 pid, __u64 goid, __u64 t, __u64 end, const char *method,
			const char *target, __s32 code, const char *message)
{
	struct grpc_client_start e = {0};
	struct grpc_client_end x = {0};

	e.hdr = (struct record_header){EVENT_GRPC_CLIENT_START, pid, goid, t};
	ids(&e.ids, (uint8_t)goid, 1);
	e.cookie = 1;
	SET(method, method);
	SET(target, target);
	put(&e, sizeof(e));
	x.hdr = e.hdr;
	x.hdr.type = EVENT_GRPC_CLIENT_END;
	x.end_ns = end;
	x.code = code;
	x.message_len = (__u32)strlen(message);
	memcpy(x.message, message, strlen(message) < sizeof(x.message) ? strlen(message) :
									  sizeof(x.message));
	put(&x, sizeof(x));
}

/* A data store call (one record); ERR: the first of the error's strings, NULL for none. */
static void db_call(__u32 pid, __u64 goid, __u64 t, __u32 client, const char *query,
		    const char *err, const char *addr, __u32 batch)
{
	struct db_call e = {0};
	size_t n = strlen(query);

	e.hdr = (struct record_header){EVENT_DB_CALL, pid, goid, t};
	ids(&e.ids, (uint8_t)goid, 1);
	e.cookie = 1;
	e.end_ns = t + 100;
	e.client = client;
	e.driver_fn = 0x401000;
	e.query_len = (__u32)n;
	memcpy(e.query, query, n < sizeof(e.query) ? n : sizeof(e.query));
	e.addr_len = (__u32)strlen(addr);
	memcpy(e.addr, addr, strlen(addr) < sizeof(e.addr) ? strlen(addr) : sizeof(e.addr));
	e.batch_size = batch;
	if (client >= DB_CLIENT_REDIS) {
		memcpy(e.commands[0], "set", 3);
		e.nargs[0] = 3;
		memcpy(e.commands[1], "\xff", 1);
		e.nargs[1] = 200;
	}
	if (err) {
		e.err_itab = 0x7000;
		e.err_fn = 0x403000;
		e.err_lens[0] = (__u16)strlen(err);
		memcpy(e.err[0], err, strlen(err) < MAX_DB_ERROR_LEN ? strlen(err) : MAX_DB_ERROR_LEN);
		e.err_lens[1] = 5;
		memcpy(e.err[1], "42601", 5);
	}
	put(&e, sizeof(e));
}

static void open_seed(const char *dir, const char *name)
{
	char path[4096];

	if (out)
		fclose(out);
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	out = fopen(path, "wb");
	if (!out) {
		perror(path);
		exit(1);
	}
}

int main(int argc, char **argv)
{
	char longpath[400], cut[MAX_PATH_LEN + 8];
	int i;

	if (argc != 2) {
		fprintf(stderr, "usage: %s OUTDIR\n", argv[0]);
		return 2;
	}
	open_seed(argv[1], "server-get");
	server_start(1, 7, 1000, 1, "GET", "/users/1", "localhost:8080", "127.0.0.1:51234",
		     "HTTP/1.1", NULL);
	server_end(1, 7, 1000, 5000, RESPONSE_ITAB, 0, "GET /users/{id}");

	open_seed(argv[1], "server-odd");
	memset(longpath, 'p', sizeof(longpath) - 1);
	longpath[sizeof(longpath) - 1] = '\0';
	longpath[0] = '/';
	memcpy(cut, "/", 1);
	memset(cut + 1, 'x', MAX_PATH_LEN - 2);
	memcpy(cut + MAX_PATH_LEN - 1, "\xc3\xa9", 3); /* é cut in two by the bound */
	server_start(3, 9, 2000, 0, "PURGE", longpath, "[::1]:8443", "[2001:db8::7]:40000",
		     "HTTP/2.0", "vendor=opaque,other=x");
	server_end(3, 9, 2000, 9000, 0, 503, "example.com/{$}");
	server_start(3, 11, 3000, 0, "POST", cut, "\xff\xfehost", "10.0.0.1", "HTTP/1.0", NULL);
	server_end(3, 11, 3000, 3100, 0, 1000, "");

	open_seed(argv[1], "panic");
	server_start(1, 21, 4000, 1, "DELETE", "/boom", "svc", "127.0.0.1:1", "HTTP/1.1", NULL);
	panic(1, 21, 4000, 4500, "DELETE /boom");
	tick();
	tick();
	server_start(1, 22, 4600, 1, "GET", "/late", "svc", "127.0.0.1:2", "HTTP/1.1", NULL);
	panic(1, 22, 4600, 4700, "GET /late");
	server_end(1, 22, 4600, 4800, RESPONSE_ITAB, 500, "GET /late");

	open_seed(argv[1], "client");
	server_start(1, 30, 5000, 1, "GET", "/front", "front:80", "127.0.0.1:3", "HTTP/1.1", NULL);
	client_start(1, 30, 5100, "GET", "http", "backend:9090", "/api/items",
		     "token=secret&page=2&flag");
	client_end(1, 30, 5100, 5200, 404, 0, "HTTP/2.0");
	client_start(1, 31, 5300, "PATCH", "https", "[::1]", "", "q=1");
	client_end(1, 31, 5300, 5400, 0, 0xdead, "");
	server_end(1, 30, 5000, 6000, RESPONSE_ITAB, 200, "GET /front");

	open_seed(argv[1], "functions");
	server_start(1, 50, 9000, 0, "GET", "/cart", "shop", "127.0.0.1:4", "HTTP/1.1", NULL);
	func_start(1, 50, 9100, 1, 0, "SKU-\xe2\x82\xac-1"); /* cart.(*Cart).Add, "€" */
	func_start(1, 50, 9200, 2, 1, "");		     /* main.work, nested */
	func_start(1, 50, 9300, 2, 2, "");		     /* never returns: dropped below */
	func_end(1, 50, 9200, 9400, 2, 1, 120);
	func_end(1, 50, 9100, 9500, 1, 0, ~0ULL);
	func_start(1, 51, 9600, 7, 0, ""); /* a function index the target does not have */
	func_end(1, 51, 9600, 9700, 7, 0, 5);
	server_end(1, 50, 9000, 9800, 0, 200, "GET /cart");

	open_seed(argv[1], "grpc");
	grpc_server_start(1, 60, 10000, "/inventory.v1.Inventory/GetItem", "vendor=x", 16);
	grpc_client(1, 60, 10100, 10200, "/backend.v1.Store/List", "dns:///store:9090", 5,
		    "no such \xc3\xa9tag\xe2"); /* a message cut inside a character */
	grpc_client(1, 60, 10300, 10400, "noslash", "unix:///run/s.sock", 99, "");
	grpc_server_end(1, 60, 10000, 10500, 13, "boom");
	grpc_server_start(1, 61, 10600, "/a/", NULL, 4);
	grpc_server_end(1, 61, 10600, 10700, -1, "");
	grpc_server_start(1, 62, 10800, "", NULL, 3); /* an address of a length no IP has */
	grpc_server_end(1, 62, 10900, 11000, 0, ""); /* not the start's time: the start is lost */

	open_seed(argv[1], "datastores");
	server_start(1, 70, 12000, 1, "GET", "/orders", "shop", "127.0.0.1:5", "HTTP/1.1", NULL);
	db_call(1, 70, 12100, DB_CLIENT_SQL, "SELECT * FROM orders WHERE pw = 'secret' -- x", NULL,
		"", 0);
	db_call(1, 70, 12200, DB_CLIENT_SQL, "SELEC 'unterminated", "ERROR", "", 0);
	db_call(1, 70, 12300, DB_CLIENT_PGX_BATCH, "INSERT INTO t VALUES ($1)", NULL, "db:5432", 3);
	db_call(1, 70, 12400, DB_CLIENT_REDIS_PIPELINE, "", "redis: nil", "[::1]:6379", 20);
	server_end(1, 70, 12000, 13000, RESPONSE_ITAB, 200, "GET /orders");

	open_seed(argv[1], "lost-and-malformed");
	server_end(1, 40, 7000, 7100, 0, 200, ""); /* start lost */
	server_start(1, 41, 7200, 1, "GET", "/a", "h", "a", "HTTP/1.1", NULL);
	server_start(1, 41, 7300, 1, "GET", "/b", "h", "a", "HTTP/1.1", NULL); /* a never ended */
	server_end(1, 41, 7200, 7400, 0, 200, "");			       /* the old call */
	put("\x01\x00\x00\x00", 4);					       /* too short */
	for (i = 0; i < 12; i++) /* more in flight than max_pending */
		server_start(2 * i, 100 + i, 8000 + i, i & 1, "GET", "/", "h", "a", "HTTP/1.1",
			     NULL);
	tick();

	/*
	 * Ends that never come: a server call and an outgoing request each on an odd goroutine
	 * (fuzz_records' BPF still holds those: long, they stay) and an even one (lost, dropped
	 * once in flight past the bound), then ticks past it; one end comes after all.
	 */
	open_seed(argv[1], "ends-lost");
	server_start(1, 80, 100, 1, "GET", "/ws", "h", "a", "HTTP/1.1", NULL);
	server_start(1, 81, 100, 1, "GET", "/gone", "h", "a", "HTTP/1.1", NULL);
	client_start(1, 82, 150, "GET", "http", "b:80", "/poll", "");
	func_start(1, 83, 160, 1, 0, "");
	for (i = 0; i < 4; i++)
		tick();
	server_end(1, 80, 100, 3000, RESPONSE_ITAB, 101, "GET /ws");
	server_end(1, 81, 100, 3000, RESPONSE_ITAB, 200, "");
	fclose(out);
	return 0;
}
