/* SPDX-License-Identifier: MIT */
/* Spans to OTLP protobuf bytes (ExportTraceServiceRequest), through the protobuf-c code built from proto/. */
#ifndef GOSPAN_OTLP_H
#define GOSPAN_OTLP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct attr;
struct metrics_batch;
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

/*
 * Metric points as one ExportMetricsServiceRequest: one ResourceMetrics per resource, one
 * ScopeMetrics each with gospan's scope, one Metric per instrument. *OUT is malloc'ed. -ENOMEM,
 * or -EINVAL for an empty batch.
 */
int otlp__encode_metrics(const struct metrics_batch *b, uint8_t **out, size_t *out_len);
/* The same request as OTLP/JSON; *OUT is a NUL-terminated malloc'ed string. */
int otlp__encode_metrics_json(const struct metrics_batch *b, char **out, size_t *out_len);

/* Shared by the encoders of both signals (otlp.c, otlp_json.c, otlp_metrics.c). */
struct Opentelemetry__Proto__Common__V1__AnyValue;
struct cJSON;
/* AV, initialised, holding A's value; false for a type OTLP cannot carry. */
bool otlp__any_value(struct Opentelemetry__Proto__Common__V1__AnyValue *av, const struct attr *a);
/* OBJ's member "attributes" (or NAME) made of N of ATTRS. */
int otlp_json__attrs(struct cJSON *obj, const char *name, const struct attr *attrs, size_t n);
/* ID (LEN bytes) as a hex string member KEY of OBJ, as OTLP/JSON writes ids. */
int otlp_json__hex(struct cJSON *obj, const char *key, const uint8_t *id, size_t len);
/* ROOT as compact JSON text into *OUT (malloc'ed), its length in *OUT_LEN; -ENOMEM. */
int otlp_json__print(struct cJSON *root, char **out, size_t *out_len);
/* V as a decimal string member KEY of OBJ, as the JSON mapping writes 64-bit integers. */
int otlp_json__u64(struct cJSON *obj, const char *key, uint64_t v);

#endif
