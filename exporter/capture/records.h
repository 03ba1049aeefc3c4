/* SPDX-License-Identifier: MIT */
/*
 * Ring-buffer records to spans. A start record opens a span keyed by (pid, goroutine); the end
 * record of the same call completes it; a panic record marks it, and if no end follows within a
 * grace period the span is finished as a failed request. Such a span holds its place in the export
 * queue from the panic on, so the wait cannot cost it that place. Nothing is dropped without a
 * count.
 */
#ifndef GOSPAN_RECORDS_H
#define GOSPAN_RECORDS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct clock_sync;
struct process_table;
struct span;

enum records_drop {
	RECORDS_DROP_MALFORMED,	     /* a record too short or of unknown type */
	RECORDS_DROP_NO_START,	     /* an end whose start was lost */
	RECORDS_DROP_ABANDONED,	     /* a start whose end never came, without a panic */
	RECORDS_DROP_PROCESS_EXITED, /* in flight when its process exited */
	RECORDS_DROP_NO_PROCESS,     /* its process could not be identified */
	RECORDS_DROP_NO_MEMORY,
	RECORDS_DROP_TOO_MANY_PENDING, /* more calls in flight than the pending bound */
	RECORDS_DROP_END_LOST,	       /* in flight past max_pending_age_ns: its end never came */
	RECORDS_DROP_UNFINISHED,       /* still in flight when gospan stopped */
	RECORDS_DROP__COUNT,
};

extern const char *const records_drop_names[RECORDS_DROP__COUNT];

struct records_stats {
	uint64_t spans;	   /* spans completed and handed on */
	uint64_t panics;   /* of which finished by a panic */
	uint64_t panics_held; /* calls that panicked and may still return: in flight now */
	uint64_t unsampled; /* not exported: their trace came in with the sampled flag off */
	uint64_t pending;  /* calls in flight now */
	uint64_t dropped[RECORDS_DROP__COUNT];
};

struct records_opts {
	const struct clock_sync *clock;
	struct process_table *processes;
	/* Takes ownership of a finished span (the exporter's queue). */
	void (*submit)(void *ctx, struct span *s);
	/*
	 * Optional, both or neither. HOLD holds a place in the queue for a span that will come
	 * later (0), or says it cannot (negative errno); SUBMIT_HELD is SUBMIT into that place.
	 */
	int (*hold)(void *ctx);
	void (*submit_held)(void *ctx, struct span *s);
	/* Removes a call's in-flight BPF state (probes__forget). */
	void (*forget)(void *ctx, uint32_t pid, uint64_t goid, uint64_t start_ns);
	/*
	 * Optional: whether BPF still holds the call of (PID, GOID) that began at START_NS, whose
	 * start record was of TYPE (probes__in_flight): 1 yes, 0 no, negative errno when it cannot
	 * tell. A call it still holds is not lost, only long (a WebSocket, a stream).
	 */
	int (*in_flight)(void *ctx, uint32_t type, uint32_t pid, uint64_t goid, uint64_t start_ns);
	/*
	 * Optional: process PID of the target of attach cookie COOKIE has just started (its
	 * runtime.main), and has made no connection yet (probes__track_process).
	 */
	void (*process_started)(void *ctx, uint32_t pid, uint32_t cookie);
	/*
	 * Optional: measures a finished span for the metrics, before its trace's sampling or the
	 * export queue can leave it out, so every call is counted. SAMPLED: it is to be exported;
	 * HELD: a place waits for it in the export queue.
	 */
	void (*measure)(void *ctx, const struct span *s, bool sampled, bool held);
	void *ctx;
	uint64_t panic_grace_ns; /* how long a panicked call may still return normally */
	int db_query_text;	 /* enum db_query_text: what data store spans keep of a query */
	size_t max_pending;
	/*
	 * A call in flight this long whose end BPF no longer holds (or cannot say) is ended as
	 * lost: dropped and counted (RECORDS_DROP_END_LOST). 0: never.
	 */
	uint64_t max_pending_age_ns;
};

struct records *records__new(const struct records_opts *opts);
void records__free(struct records *r);
/* The ring-buffer callback. Always returns 0: a bad record is counted, never fatal. */
int records__handle(void *r, const void *data, size_t size);
/*
 * Finishes panicked calls past their grace, drops calls of exited processes and calls whose end
 * was lost (opts.max_pending_age_ns). NOW is monotonic, the clock of the records' times.
 */
void records__tick(struct records *r, uint64_t now_ns);
/* Whether a call of process PID is still open (its span not finished). */
bool records__has_calls(const struct records *r, pid_t pid);
/* At shutdown: finishes every panicked call now and counts the rest as unfinished. */
void records__flush(struct records *r);
void records__stats(const struct records *r, struct records_stats *out);

#endif
