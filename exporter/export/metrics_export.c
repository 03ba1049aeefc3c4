// SPDX-License-Identifier: MIT
/*
 * The periodic metric reader. Its thread sleeps on a monotonic deadline, collects, and calls the
 * sink outside any lock the ring-buffer reader takes: metrics__collect holds the store's lock
 * only while it copies points out. Failed exports are not retried past the sink's own retries:
 * the next collection of a cumulative stream carries everything again, and what a delta loses is
 * counted in points_failed, which the summary shows.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/clock.h"
#include "core/log.h"
#include "export/export.h"
#include "export/metrics_export.h"
#include "model/metrics.h"

struct metric_reader {
	struct metric_reader_opts opts;
	pthread_mutex_t lock;
	pthread_cond_t wake;
	bool told; /* the sink was told to stop */
	bool stopping, joined;
	pthread_t thread;
	struct metric_reader_stats stats;
};

/* One collection and export. Called without the lock. */
static void export_once(struct metric_reader *r)
{
	struct metrics_batch *b;
	int err;

	b = metrics__collect(r->opts.metrics, clock__unix_now(), true);
	if (!b) {
		pr_err("cannot collect metrics: %s", strerror(errno));
		pthread_mutex_lock(&r->lock);
		r->stats.collect_failed++;
		pthread_mutex_unlock(&r->lock);
		return;
	}
	err = b->n ? r->opts.ops->export_metrics(r->opts.ctx, b) : 0;
	pthread_mutex_lock(&r->lock);
	if (err) {
		r->stats.failures++;
		r->stats.points_failed += b->n;
	} else if (b->n) {
		r->stats.exports++;
		r->stats.points += b->n;
	}
	pthread_mutex_unlock(&r->lock);
	metrics_batch__free(b);
}

static void *reader_thread(void *arg)
{
	struct metric_reader *r = arg;
	struct timespec deadline;
	uint64_t now;
	bool stopping;

	clock_gettime(CLOCK_MONOTONIC, &deadline);
	for (;;) {
		deadline.tv_sec += r->opts.interval_ms / 1000;
		deadline.tv_nsec += (r->opts.interval_ms % 1000) * 1000000L;
		if (deadline.tv_nsec >= 1000000000L) {
			deadline.tv_sec++;
			deadline.tv_nsec -= 1000000000L;
		}
		pthread_mutex_lock(&r->lock);
		while (!r->stopping)
			if (pthread_cond_timedwait(&r->wake, &r->lock, &deadline) == ETIMEDOUT)
				break;
		stopping = r->stopping;
		pthread_mutex_unlock(&r->lock);
		export_once(r);
		if (stopping)
			return NULL;
		/*
		 * An export that outlasted the interval (a collector timing out) leaves the schedule
		 * behind: the next interval starts now rather than the missed ones running back to
		 * back, each a request to the same failing collector.
		 */
		now = clock__mono_now();
		if ((uint64_t)deadline.tv_sec * 1000000000ULL + (uint64_t)deadline.tv_nsec < now) {
			deadline.tv_sec = (time_t)(now / 1000000000ULL);
			deadline.tv_nsec = (long)(now % 1000000000ULL);
		}
	}
}

struct metric_reader *metric_reader__new(const struct metric_reader_opts *opts)
{
	pthread_condattr_t attr;
	struct metric_reader *r;
	sigset_t all, old;
	int err;

	if (!opts->metrics || !opts->ops || !opts->ops->export_metrics || opts->interval_ms <= 0) {
		errno = EINVAL;
		return NULL;
	}
	r = calloc(1, sizeof(*r));
	if (!r)
		return NULL;
	r->opts = *opts;
	err = pthread_condattr_init(&attr);
	if (err)
		goto fail;
	err = pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
	if (!err)
		err = pthread_cond_init(&r->wake, &attr);
	pthread_condattr_destroy(&attr);
	if (err)
		goto fail;
	err = pthread_mutex_init(&r->lock, NULL);
	if (err) {
		pthread_cond_destroy(&r->wake);
		goto fail;
	}
	/* As the span exporter's thread: the stop signals are the main thread's. */
	sigfillset(&all);
	err = pthread_sigmask(SIG_BLOCK, &all, &old);
	if (!err) {
		err = pthread_create(&r->thread, NULL, reader_thread, r);
		pthread_sigmask(SIG_SETMASK, &old, NULL);
	}
	if (err) {
		pthread_mutex_destroy(&r->lock);
		pthread_cond_destroy(&r->wake);
		goto fail;
	}
	return r;
fail:
	free(r);
	errno = err;
	return NULL;
}

void metric_reader__shutdown(struct metric_reader *r)
{
	bool first;

	if (!r || r->joined)
		return;
	pthread_mutex_lock(&r->lock);
	first = !r->told;
	r->told = true;
	pthread_mutex_unlock(&r->lock);
	/*
	 * No backoff waits for the last export: one request, bounded by the sink's timeout. The
	 * sink is told before the thread is woken for that export: woken first, the thread could
	 * start it while the sink still took it for any other.
	 */
	if (first && r->opts.ops->stop)
		r->opts.ops->stop(r->opts.ctx);
	pthread_mutex_lock(&r->lock);
	r->stopping = true;
	pthread_cond_signal(&r->wake);
	pthread_mutex_unlock(&r->lock);
	pthread_join(r->thread, NULL);
	r->joined = true;
}

void metric_reader__stats(struct metric_reader *r, struct metric_reader_stats *out)
{
	pthread_mutex_lock(&r->lock);
	*out = r->stats;
	pthread_mutex_unlock(&r->lock);
}

void metric_reader__free(struct metric_reader *r)
{
	if (!r)
		return;
	metric_reader__shutdown(r);
	if (r->opts.ops->free)
		r->opts.ops->free(r->opts.ctx);
	pthread_cond_destroy(&r->wake);
	pthread_mutex_destroy(&r->lock);
	free(r);
}
