/* SPDX-License-Identifier: MIT */
/* OTLP/HTTP protobuf transport over libcurl: one kept-alive handle, headers, timeouts. */
#ifndef GOSPAN_EXPORT_HTTP_H
#define GOSPAN_EXPORT_HTTP_H

#include <stddef.h>

struct header_kv {
	char *key;
	char *value; /* secret material (API keys): never logged */
};

struct http_sink_opts {
	const char *url; /* full traces URL, e.g. http://localhost:4318/v1/traces */
	const struct header_kv *headers;
	size_t nheaders;
	long timeout_ms; /* whole request */
};

extern const struct sink_ops http_sink_ops;

/* NULL with errno on failure (logged). Pass the result as exporter_opts.ctx with &http_sink_ops. */
void *http_sink__new(const struct http_sink_opts *opts);

#endif
