/* SPDX-License-Identifier: MIT */
/*
 * OTLP/HTTP transport over libcurl, for spans and for metric points: one kept-alive handle, headers, timeouts, TLS files,
 * gzip, and the OTLP retry rules (429, 502, 503, 504 and connection failures, with backoff).
 * An export that runs out of time on a transient failure returns -EAGAIN: the batch processor
 * keeps the batch and offers it again, and the sink's backoff carries on across those calls.
 */
#ifndef GOSPAN_EXPORT_HTTP_H
#define GOSPAN_EXPORT_HTTP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/config.h" /* struct header_kv */

struct http_sink_opts {
	const char *url; /* the signal's full URL, e.g. http://localhost:4318/v1/traces */
	const struct header_kv *headers;
	size_t nheaders;
	long timeout_ms;       /* each request: OTEL_EXPORTER_OTLP_TIMEOUT */
	long batch_timeout_ms; /* one export call, retries included; 0 = timeout_ms */
	bool gzip;	 /* OTEL_EXPORTER_OTLP_COMPRESSION=gzip */
	bool json;	 /* http/json instead of http/protobuf */
	const char *ca_file;	 /* PEM CA bundle (CURLOPT_CAINFO), or NULL for the system's */
	const char *client_cert; /* PEM client certificate for mutual TLS, or NULL */
	const char *client_key;	 /* its private key, or NULL */
	long backoff_ms; /* first retry delay, doubled each time; 0 = 1000 */
	/*
	 * The signal: false for spans (ops.export), true for metric points (ops.export_metrics),
	 * which decides the reply's type and how a failure is said: a metrics endpoint that keeps
	 * failing the same way (a backend that takes no metrics) is said once, then counted.
	 */
	bool metrics;
};

extern const struct sink_ops http_sink_ops;

/* NULL with errno on failure (logged). Pass the result as exporter_opts.ctx with &http_sink_ops. */
void *http_sink__new(const struct http_sink_opts *opts);

/*
 * Decodes BODY, LEN bytes a collector answered an export of N spans with (OTLP/JSON when JSON,
 * else protobuf), exactly as the sink does after a 2xx: a partial success is logged. Returns the
 * spans it says were rejected. The sink's own parser, reachable without a collector (fuzzing).
 */
uint64_t http_sink__parse_response(const void *body, size_t len, bool json, size_t n);

#endif
