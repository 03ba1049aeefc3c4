/* SPDX-License-Identifier: MIT */
/*
 * The periodic metric reader: every export interval it collects the metrics store and hands the
 * points to a sink (OTLP/HTTP, the console), on a thread of its own, so the ring-buffer reader
 * never waits on it. One last collection and export when it stops. What could not be sent is
 * counted, never dropped without a trace.
 */
#ifndef GOSPAN_METRICS_EXPORT_H
#define GOSPAN_METRICS_EXPORT_H

#include <stdint.h>

struct metrics;
struct sink_ops;

struct metric_reader_opts {
	struct metrics *metrics;
	long interval_ms; /* OTEL_METRIC_EXPORT_INTERVAL */
	const struct sink_ops *ops; /* with export_metrics */
	void *ctx; /* owned by the reader once metric_reader__new succeeds, freed with ops->free */
};

struct metric_reader_stats {
	uint64_t exports;	 /* export calls that succeeded */
	uint64_t failures;	 /* export calls that failed */
	uint64_t points;	 /* points exported */
	uint64_t points_failed;	 /* points of failed exports (a delta's measurements lost) */
	uint64_t collect_failed; /* collections that failed (no memory) */
};

/* Starts the reader's thread. NULL with errno on failure (the sink is then not freed). */
struct metric_reader *metric_reader__new(const struct metric_reader_opts *opts);
/*
 * Collects and exports one last time and ends the thread. The sink is told to stop first: that
 * export gets one request and no retry. Safe to call more than once.
 */
void metric_reader__shutdown(struct metric_reader *r);
void metric_reader__stats(struct metric_reader *r, struct metric_reader_stats *out);
void metric_reader__free(struct metric_reader *r);

#endif
