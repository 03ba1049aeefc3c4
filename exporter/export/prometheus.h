/* SPDX-License-Identifier: MIT */
/*
 * The Prometheus exporter (OTEL_METRICS_EXPORTER=prometheus): a small HTTP/1.1 server on a thread
 * of its own that answers GET /metrics with the metrics store collected at that moment, in the
 * text exposition format 0.0.4, translated as the OpenTelemetry specification's Prometheus
 * compatibility rules say (names with unit and _total suffixes, histograms as cumulative _bucket
 * series, target_info per process, job and instance on every series). Pull, not push: nothing is
 * collected between scrapes, and a scraper that is slow or silent never holds the store.
 */
#ifndef GOSPAN_PROMETHEUS_H
#define GOSPAN_PROMETHEUS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct metrics;
struct metrics_batch;

struct prometheus_opts {
	const char *host; /* a name or an address; NULL or "": every address of the host */
	int port;	  /* 0: one the kernel picks (tests) */
	struct metrics *metrics;
	/* Where host and port were set, for messages: "OTEL_EXPORTER_PROMETHEUS_HOST, ...". */
	const char *origin;
	int timeout_ms; /* a connection silent (or not reading) this long is closed; 0: 10 s */
};

struct prometheus_stats {
	uint64_t scrapes;      /* /metrics answered and sent whole */
	uint64_t bad_requests; /* answered 4xx: malformed, too large, not found, wrong method */
	uint64_t timeouts;     /* connections closed because the client went silent */
	uint64_t failures;     /* scrapes answered 500: the store could not be collected */
};

/*
 * Listens on every address HOST resolves to (IPv4 and IPv6) and starts the server's thread.
 * NULL with errno on failure, said in a message that names the address and opts->origin.
 */
struct prometheus *prometheus__new(const struct prometheus_opts *opts);
/* The port listened on: opts->port, or the one the kernel picked. */
int prometheus__port(const struct prometheus *p);
void prometheus__stats(struct prometheus *p, struct prometheus_stats *out);
/* Stops the thread, closes every connection and socket. */
void prometheus__free(struct prometheus *p);

/* The request parser, apart for the tests and the fuzzer. */
#define PROMETHEUS_REQUEST_MAX 8192 /* request line and headers, bytes */

enum prometheus_method {
	PROMETHEUS_GET,
	PROMETHEUS_HEAD,
	PROMETHEUS_OTHER,
};

struct prometheus_request {
	enum prometheus_method method;
	bool metrics; /* the target's path is /metrics (a query is ignored) */
};

/*
 * Parses the head of an HTTP/1.x request, BUF's LEN bytes (not NUL-terminated). Returns the
 * length of the head (request line and headers, with the empty line ending them) and fills REQ;
 * 0 when the head is not complete yet; -EBADMSG when what is there already is malformed. Only
 * whole lines are judged, so a prefix of a request never gets an answer its whole would not.
 */
int prometheus__parse_request(const char *buf, size_t len, struct prometheus_request *req);

/*
 * Batch B as the text exposition format 0.0.4: a malloc'ed string (its length in *LEN), or NULL
 * with errno. *DROPPED (if not NULL) gets the points left out: delta points, which a pull
 * exporter cannot show, and points of a metric whose name another of another type took.
 */
char *prometheus__render(const struct metrics_batch *b, size_t *len, size_t *dropped);

#endif
