/* SPDX-License-Identifier: MIT */
/* Spans to OTLP protobuf bytes (ExportTraceServiceRequest), through the protobuf-c code built from proto/. */
#ifndef GOSPAN_OTLP_H
#define GOSPAN_OTLP_H

#include <stddef.h>
#include <stdint.h>

struct span;

/*
 * Encodes N spans as one ExportTraceServiceRequest: one ResourceSpans per distinct resource (in
 * order of first appearance), one ScopeSpans each with gospan's instrumentation scope. *OUT is
 * malloc'ed; the caller frees it. -ENOMEM, or -EINVAL for N == 0.
 */
int otlp__encode(struct span *const *spans, size_t n, uint8_t **out, size_t *out_len);

/*
 * The same request as OTLP/JSON (http/json): hex ids, 64-bit integers as strings. *OUT is a
 * NUL-terminated malloc'ed string, *OUT_LEN its length. -ENOMEM, or -EINVAL for N == 0.
 */
int otlp__encode_json(struct span *const *spans, size_t n, char **out, size_t *out_len);

#endif
