/* SPDX-License-Identifier: MIT */
/*
 * The observed sums the metrics unit tests (test_metrics.c, test_otlp_metrics.c) feed the store
 * with: a counter and an up-down counter of a component, as gospan's own health sums are.
 */
#ifndef GOSPAN_TEST_METRICS_DESCS_H
#define GOSPAN_TEST_METRICS_DESCS_H

#include "model/metrics.h"
#include "model/semconv.h"

#define MS 1000000ULL
#define SEC 1000000000ULL

static const char *const comp_keys[] = { "otel.component.name", SC_ERROR_TYPE };

/* A counter: spans exported, or lost by error.type. */
static const struct metric_desc exported_desc = {
	.name = "test.span.exported",
	.description = "Spans exported, or lost (error.type).",
	.unit = "{span}",
	.kind = METRIC_SUM,
	.monotonic = true,
	.observed = true,
	.keys = comp_keys,
	.nkeys = 2,
};

/* An up-down counter: spans queued. */
static const struct metric_desc queue_desc = {
	.name = "test.queue.size",
	.description = "Spans queued.",
	.unit = "{span}",
	.kind = METRIC_SUM,
	.monotonic = false,
	.observed = true,
	.keys = comp_keys,
	.nkeys = 2,
};

#endif
