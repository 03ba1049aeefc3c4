/* SPDX-License-Identifier: MIT */
/*
 * The batch span processor: a bounded queue between the ring-buffer reader and an export thread.
 * The reader never waits on the network: when the queue is full a span is dropped and counted.
 * A batch whose export failed for a transient reason stays queued, at the head, until it is sent,
 * so an outage of any length loses nothing that fits in the queue.
 * Batches go out when they reach the batch size or the schedule delay passes, whichever is first.
 * A place can be held for a span that is known to come but not finished yet (a call whose handler
 * panicked, until it is known whether the call still returns): what is queued meanwhile cannot
 * take it.
 */
#ifndef GOSPAN_EXPORT_H
#define GOSPAN_EXPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct span;
struct exporter_stats;
struct metrics_batch;

/*
 * Where batches of spans, or of metric points, go: OTLP/HTTP (export_http.c), the console
 * (console.c), or nowhere.
 */
struct sink_ops {
	const char *name;
	/*
	 * Sends N spans; 0 on success, negative errno on failure (already logged by the sink).
	 * -EAGAIN means the failure was transient (collector unreachable, 429, 503...): the
	 * processor keeps the batch and calls again with the same spans, and the sink paces
	 * those calls. Any other error drops the batch.
	 */
	int (*export)(void *ctx, struct span *const *spans, size_t n);
	/*
	 * Optional. Called by exporter__shutdown from another thread: the sink stops waiting to
	 * retry and bounds what the exports still to come may take.
	 */
	void (*stop)(void *ctx);
	/*
	 * Optional: sends a batch of metric points (the metric reader's, export/metrics_export.c),
	 * with export's return values; on -EAGAIN the reader does not call again with the same
	 * points: the next collection carries the cumulative totals, and a delta is counted lost.
	 */
	int (*export_metrics)(void *ctx, const struct metrics_batch *b);
	/* Optional. Adds the sink's own counters (retries, rejected) to OUT. */
	void (*stats)(void *ctx, struct exporter_stats *out);
	void (*free)(void *ctx);
};

struct exporter_opts {
	size_t max_queue; /* OTEL_BSP_MAX_QUEUE_SIZE */
	size_t max_batch; /* OTEL_BSP_MAX_EXPORT_BATCH_SIZE */
	long delay_ms;	  /* OTEL_BSP_SCHEDULE_DELAY */
	const struct sink_ops *ops;
	void *ctx; /* owned by the exporter once exporter__new succeeds, freed with ops->free */
};

struct exporter_stats {
	uint64_t submitted;
	uint64_t exported;
	uint64_t dropped_queue_full;
	uint64_t dropped_export_failed;
	uint64_t dropped_not_flushed; /* given up by exporter__abandon (a second Ctrl-C) */
	uint64_t export_failures; /* failed export calls (each may hold many spans) */
	uint64_t queue_depth; /* spans waiting, the batch being sent included */
	uint64_t held;	      /* places held now for spans to come (exporter__hold) */
	uint64_t retries;  /* requests sent again after a retryable failure (sink-counted) */
	uint64_t rejected; /* spans the collector refused in a partial success (sink-counted) */
};

/* Starts the export thread. NULL with errno on failure. */
struct exporter *exporter__new(const struct exporter_opts *opts);
/*
 * Queues S, taking ownership. -ENOSPC (S freed, counted as dropped_queue_full) when the queue is
 * full or the exporter is shut down. Never blocks on I/O.
 */
int exporter__submit(struct exporter *e, struct span *s);
/*
 * exporter__submit of each of the N SPANS in order, under one taking of the queue's lock: the
 * reader hands over what one poll of the ring buffer finished, where a lock per span was a tenth
 * of its time. Returns how many were queued; the others are freed and counted as
 * dropped_queue_full, as exporter__submit does. SPANS' slots are used up.
 */
size_t exporter__submit_many(struct exporter *e, struct span **spans, size_t n);
/*
 * Holds one place in the queue for a span submitted later with exporter__submit_held. Held places
 * count against the queue size as queued spans do, so the span finds room however full the queue
 * became meanwhile. At most half the queue is ever held: a flood of such spans cannot crowd out
 * the rest. 0, or -ENOSPC when no place can be held now (the span is then submitted as any
 * other, with exporter__submit).
 */
int exporter__hold(struct exporter *e);
/*
 * Queues S in a place exporter__hold held, taking ownership. -ENOSPC (S freed, counted as
 * dropped_queue_full) only when the exporter is shut down.
 */
int exporter__submit_held(struct exporter *e, struct span *s);
/*
 * Whether exporter__submit would take a span now, after the WAITING ones the caller has yet to
 * submit. Exact for the one thread that submits: only it fills the queue, the export thread only
 * empties it.
 */
bool exporter__has_room(struct exporter *e, size_t waiting);
/*
 * Exports everything queued, then stops the thread. The sink is told to stop retrying first, and
 * the first transient failure after that drops what is left, so with an unreachable collector
 * this still returns in about one request timeout; what could not be sent is counted in
 * dropped_export_failed. Safe to call more than once. exporter__stop then exporter__wait(e, -1).
 */
void exporter__shutdown(struct exporter *e);
/* The same in steps, for a caller that must stay responsive meanwhile: starts, returns at once. */
void exporter__stop(struct exporter *e);
/*
 * Waits up to TIMEOUT_MS (negative: for as long as it takes) for the export thread to end after
 * exporter__stop: 0 when it has, -ETIMEDOUT when it is still exporting.
 */
int exporter__wait(struct exporter *e, long timeout_ms);
/*
 * Gives up on exporting what is left (a second Ctrl-C during the final flush): the queued spans
 * are dropped at once, and the batch in the sink gets GRACE_MS more to come back. *NOT_EXPORTED
 * gets the spans given up, counted in dropped_not_flushed: the queued ones, and the batch when
 * the sink has not come back. 0 when the export thread has ended; -ETIMEDOUT when it is still
 * inside the sink (blocked on a collector that does not answer, or on a stdout nobody reads):
 * exporter__free then leaves the exporter alone, and the caller should end the process.
 */
int exporter__abandon(struct exporter *e, long grace_ms, uint64_t *not_exported);
void exporter__stats(struct exporter *e, struct exporter_stats *out);
void exporter__free(struct exporter *e);

#endif
