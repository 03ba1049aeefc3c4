// SPDX-License-Identifier: MIT
/*
 * The batch span processor. The ring-buffer reader pushes finished spans into a fixed ring under
 * a mutex and never waits for anything else; the export thread takes batches out and hands them
 * to the sink. When the ring is full the newest span is dropped and counted: capture must never
 * stall because a collector is slow. The batch being exported still counts against the queue
 * size, and a batch that failed for a transient reason is kept and offered to the sink again
 * before anything newer: memory stays within OTEL_BSP_MAX_QUEUE_SIZE spans whatever the
 * collector does, and what fits is delivered once, in order, when it comes back. Places held for
 * spans still to come count against the queue size too.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "export/export.h"
#include "core/log.h"
#include "model/span.h"

struct exporter {
	struct exporter_opts opts;
	pthread_mutex_t lock;
	pthread_cond_t wake;	   /* the export thread waits on it */
	pthread_cond_t ended_cond; /* exporter__wait waits on it */
	struct span **ring;
	size_t head, count; /* ring[head] is the oldest */
	struct span **batch; /* the export thread's, allocated up front so it cannot fail later */
	size_t inflight;     /* spans in batch: being exported, or kept for another try */
	size_t held;	     /* places held for spans to come (exporter__hold) */
	bool stopping, joined;
	bool ended;	     /* the export thread is done: only the join is left */
	bool abandoned;	     /* exporter__abandon: nothing more is exported */
	bool batch_given_up; /* abandon counted the batch in the sink: not to be counted again */
	/*
	 * count + inflight + held, and stopping, as of the last change under the lock: what
	 * exporter__has_room reads without taking it, once per span.
	 */
	size_t used;
	bool closed;
	pthread_t thread;
	struct exporter_stats stats;
};

static void deadline_after(struct timespec *ts, long ms)
{
	clock_gettime(CLOCK_MONOTONIC, ts);
	ts->tv_sec += ms / 1000;
	ts->tv_nsec += (ms % 1000) * 1000000L;
	if (ts->tv_nsec >= 1000000000L) {
		ts->tv_sec++;
		ts->tv_nsec -= 1000000000L;
	}
}

/* Publishes what the queue holds for exporter__has_room. Called with the lock held. */
static void publish(struct exporter *e)
{
	__atomic_store_n(&e->used, e->count + e->inflight + e->held, __ATOMIC_RELEASE);
	__atomic_store_n(&e->closed, e->stopping, __ATOMIC_RELEASE);
}

/* Moves up to max_batch spans out of the ring into e->batch. Called with the lock held. */
static size_t take_batch(struct exporter *e)
{
	size_t n = e->count < e->opts.max_batch ? e->count : e->opts.max_batch, i;

	for (i = 0; i < n; i++) {
		e->batch[i] = e->ring[e->head];
		e->head = (e->head + 1) % e->opts.max_queue;
	}
	e->count -= n; /* now in flight: the queue holds as much as before */
	return n;
}

/* Frees every span still in the ring, for the caller to count. Called with the lock held. */
static size_t drop_queued(struct exporter *e)
{
	size_t n = e->count;

	while (e->count) {
		span__free(e->ring[e->head]);
		e->head = (e->head + 1) % e->opts.max_queue;
		e->count--;
	}
	publish(e);
	return n;
}

static void *export_thread(void *arg)
{
	struct exporter *e = arg;
	struct timespec deadline;
	bool retry = false, freed;
	size_t n = 0, i, left;
	int err;

	pthread_mutex_lock(&e->lock);
	for (;;) {
		if (!retry) {
			deadline_after(&deadline, e->opts.delay_ms);
			/* Send when a full batch is there, when the delay passes, or when stopping. */
			while (!e->stopping && e->count < e->opts.max_batch) {
				if (pthread_cond_timedwait(&e->wake, &e->lock, &deadline) ==
				    ETIMEDOUT)
					break;
			}
			if (!e->count) {
				if (e->stopping)
					break;
				continue;
			}
			n = take_batch(e);
			e->inflight = n;
		}
		/* The sink may block for a whole export timeout: the reader must not wait on it. */
		pthread_mutex_unlock(&e->lock);
		err = e->opts.ops->export(e->opts.ctx, e->batch, n);
		/*
		 * A batch that is not tried again is freed before the lock is taken: the reader
		 * submits a span under it, and would wait for hundreds of frees (and sleep and be
		 * woken for them) at every batch. The spans still count as in flight meanwhile.
		 */
		freed = err != -EAGAIN;
		for (i = 0; freed && i < n; i++)
			span__free(e->batch[i]);
		pthread_mutex_lock(&e->lock);

		if (err)
			e->stats.export_failures++;
		/* Transient: the sink paces the next call, which sends the same spans again. */
		retry = err == -EAGAIN && !e->stopping;
		if (retry)
			continue;
		for (i = 0; !freed && i < n; i++)
			span__free(e->batch[i]);
		e->inflight = 0;
		publish(e);
		if (e->batch_given_up)
			break; /* counted by exporter__abandon, which stopped waiting for it */
		if (!err) {
			e->stats.exported += n;
			continue;
		}
		e->stats.dropped_export_failed += n;
		/* Stopping with the collector unreachable: one timeout each would only delay exit. */
		if (err == -EAGAIN && e->count) {
			left = drop_queued(e);
			e->stats.dropped_export_failed += left;
			pr_err("%zu queued spans not sent: the collector did not answer while "
			       "gospan was stopping",
			       left);
		}
	}
	e->ended = true;
	pthread_cond_broadcast(&e->ended_cond);
	pthread_mutex_unlock(&e->lock);
	return NULL;
}

/*
 * Starts the export thread with every signal blocked, whatever the caller's mask: SIGINT and
 * SIGTERM must reach the main thread, which acts on them, instead of interrupting a request to
 * the collector here. The threads the sink starts from this one (libcurl's resolver) inherit the
 * mask. Faults (SIGSEGV and the like) still reach the thread that caused them.
 */
static int start_thread(struct exporter *e)
{
	sigset_t all, old;
	int err;

	sigfillset(&all);
	err = pthread_sigmask(SIG_BLOCK, &all, &old);
	if (err)
		return err;
	err = pthread_create(&e->thread, NULL, export_thread, e);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	return err;
}

struct exporter *exporter__new(const struct exporter_opts *opts)
{
	bool lock_init = false, cond_init = false, ended_init = false, attr_init = false;
	pthread_condattr_t attr;
	struct exporter *e;
	int err;

	if (!opts->ops || !opts->ops->export || !opts->max_queue || !opts->max_batch ||
	    opts->delay_ms <= 0) {
		errno = EINVAL;
		return NULL;
	}
	e = calloc(1, sizeof(*e));
	if (!e)
		return NULL;
	e->opts = *opts;
	if (e->opts.max_batch > e->opts.max_queue)
		e->opts.max_batch = e->opts.max_queue;
	e->ring = calloc(e->opts.max_queue, sizeof(*e->ring));
	e->batch = calloc(e->opts.max_batch, sizeof(*e->batch));
	if (!e->ring || !e->batch) {
		err = ENOMEM;
		goto cleanup;
	}
	err = pthread_mutex_init(&e->lock, NULL);
	if (err)
		goto cleanup;
	lock_init = true;
	/* Deadlines on the monotonic clock: a clock step must neither stall nor rush exports. */
	err = pthread_condattr_init(&attr);
	if (err)
		goto cleanup;
	attr_init = true;
	err = pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
	if (err)
		goto cleanup;
	err = pthread_cond_init(&e->wake, &attr);
	if (err)
		goto cleanup;
	cond_init = true;
	err = pthread_cond_init(&e->ended_cond, &attr);
	if (err)
		goto cleanup;
	ended_init = true;
	err = start_thread(e);
	if (err)
		goto cleanup;
	pthread_condattr_destroy(&attr);
	return e;

cleanup:
	if (attr_init)
		pthread_condattr_destroy(&attr);
	if (ended_init)
		pthread_cond_destroy(&e->ended_cond);
	if (cond_init)
		pthread_cond_destroy(&e->wake);
	if (lock_init)
		pthread_mutex_destroy(&e->lock);
	free(e->batch);
	free(e->ring);
	free(e);
	errno = err;
	return NULL;
}

/*
 * Puts S in the ring, in a place held for it when HELD; false when there is no room (S is then
 * the caller's to free). Sets *WAKE when the ring just filled a batch. Called with the lock held.
 */
static bool put_locked(struct exporter *e, struct span *s, bool held, bool *wake)
{
	e->stats.submitted++;
	if (held && e->held)
		e->held--;
	else
		held = false;
	/* After shutdown nothing would export it: counted with the full-queue drops. */
	if (e->stopping || (!held && e->count + e->inflight + e->held >= e->opts.max_queue)) {
		e->stats.dropped_queue_full++;
		return false;
	}
	e->ring[(e->head + e->count) % e->opts.max_queue] = s;
	e->count++;
	if (e->count == e->opts.max_batch)
		*wake = true;
	return true;
}

/* Queues S, in a place held for it when HELD. Frees S and returns -ENOSPC when it cannot. */
static int enqueue(struct exporter *e, struct span *s, bool held)
{
	bool queued, wake = false;

	pthread_mutex_lock(&e->lock);
	queued = put_locked(e, s, held, &wake);
	publish(e);
	pthread_mutex_unlock(&e->lock);
	if (!queued) {
		span__free(s);
		return -ENOSPC;
	}
	if (wake)
		pthread_cond_signal(&e->wake);
	return 0;
}

int exporter__submit(struct exporter *e, struct span *s)
{
	return enqueue(e, s, false);
}

size_t exporter__submit_many(struct exporter *e, struct span **spans, size_t n)
{
	size_t i, dropped = 0;
	bool wake = false;

	pthread_mutex_lock(&e->lock);
	for (i = 0; i < n; i++)
		if (!put_locked(e, spans[i], false, &wake))
			spans[dropped++] = spans[i]; /* freed below, outside the lock */
	publish(e);
	pthread_mutex_unlock(&e->lock);
	if (wake)
		pthread_cond_signal(&e->wake);
	for (i = 0; i < dropped; i++)
		span__free(spans[i]);
	return n - dropped;
}

int exporter__hold(struct exporter *e)
{
	int err = 0;

	pthread_mutex_lock(&e->lock);
	if (e->stopping || e->held >= e->opts.max_queue / 2 ||
	    e->count + e->inflight + e->held >= e->opts.max_queue)
		err = -ENOSPC;
	else
		e->held++;
	publish(e);
	pthread_mutex_unlock(&e->lock);
	return err;
}

int exporter__submit_held(struct exporter *e, struct span *s)
{
	return enqueue(e, s, true);
}

bool exporter__has_room(struct exporter *e, size_t waiting)
{
	return !__atomic_load_n(&e->closed, __ATOMIC_ACQUIRE) &&
	       __atomic_load_n(&e->used, __ATOMIC_ACQUIRE) + waiting < e->opts.max_queue;
}

void exporter__stop(struct exporter *e)
{
	bool first;

	if (!e)
		return;
	pthread_mutex_lock(&e->lock);
	first = !e->stopping;
	e->stopping = true;
	publish(e);
	pthread_cond_signal(&e->wake);
	pthread_mutex_unlock(&e->lock);
	/* Outside the lock: the sink may be inside export, waiting out a backoff. */
	if (first && e->opts.ops->stop)
		e->opts.ops->stop(e->opts.ctx);
}

int exporter__wait(struct exporter *e, long timeout_ms)
{
	struct timespec deadline;
	bool ended;
	int err = 0;

	if (!e || e->joined)
		return 0;
	if (timeout_ms >= 0)
		deadline_after(&deadline, timeout_ms);
	pthread_mutex_lock(&e->lock);
	while (!e->ended && !err)
		err = timeout_ms < 0 ? pthread_cond_wait(&e->ended_cond, &e->lock) :
				       pthread_cond_timedwait(&e->ended_cond, &e->lock, &deadline);
	ended = e->ended;
	pthread_mutex_unlock(&e->lock);
	if (!ended)
		return -ETIMEDOUT;
	pthread_join(e->thread, NULL);
	e->joined = true;
	return 0;
}

void exporter__shutdown(struct exporter *e)
{
	exporter__stop(e);
	exporter__wait(e, -1);
}

int exporter__abandon(struct exporter *e, long grace_ms, uint64_t *not_exported)
{
	int err;

	exporter__stop(e);
	pthread_mutex_lock(&e->lock);
	e->abandoned = true;
	e->stats.dropped_not_flushed += drop_queued(e);
	pthread_mutex_unlock(&e->lock);
	err = exporter__wait(e, grace_ms);
	pthread_mutex_lock(&e->lock);
	/* Still in the sink: its batch is as good as lost, the process is about to end. */
	if (err && e->inflight && !e->batch_given_up) {
		e->stats.dropped_not_flushed += e->inflight;
		e->batch_given_up = true;
	}
	*not_exported = e->stats.dropped_not_flushed;
	pthread_mutex_unlock(&e->lock);
	return err;
}

void exporter__stats(struct exporter *e, struct exporter_stats *out)
{
	pthread_mutex_lock(&e->lock);
	*out = e->stats;
	out->queue_depth = e->count + (e->batch_given_up ? 0 : e->inflight);
	out->held = e->held;
	pthread_mutex_unlock(&e->lock);
	if (e->opts.ops->stats)
		e->opts.ops->stats(e->opts.ctx, out);
}

void exporter__free(struct exporter *e)
{
	if (!e)
		return;
	/* Abandoned inside the sink: the thread still uses both, until the process ends. */
	if (e->abandoned && !e->joined)
		return;
	/* The thread drains the queue before it ends, so nothing is left in the ring to free. */
	exporter__shutdown(e);
	if (e->opts.ops->free)
		e->opts.ops->free(e->opts.ctx);
	pthread_cond_destroy(&e->ended_cond);
	pthread_cond_destroy(&e->wake);
	pthread_mutex_destroy(&e->lock);
	free(e->batch);
	free(e->ring);
	free(e);
}
