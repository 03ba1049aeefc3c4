// SPDX-License-Identifier: MIT
/*
 * Unit tests for metrics_export.c, the periodic metric reader. The reader runs for real, its
 * thread included, over a real metrics store; only the sink is a recording stand-in whose
 * export_metrics counts calls and points, can fail, and notes whether it was told to stop.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "core/log.h"
#include "export/export.h"
#include "export/metrics_export.h"
#include "helpers.h"
#include "model/metrics.h"
#include "model/semconv.h"
#include "model/span.h"

/* Only a bound on hangs: a broken reader fails the test instead of stalling CI. */
#define WAIT_SEC 10
#define MAX_CALLS 64

struct fake_sink {
	pthread_mutex_t lock;
	int result;	     /* what export_metrics returns */
	int fail_first;	     /* this many calls fail with -EIO first */
	long stop_delay_ms;  /* stop takes this long before it has stopped the sink */
	bool stopped, freed;
	bool empty; /* an empty batch was sent (checked on the test's thread, not the reader's) */
	size_t calls;
	size_t points[MAX_CALLS];      /* each call's batch size */
	long long at_ms[MAX_CALLS];    /* each call's time, CLOCK_MONOTONIC */
	bool after_stop[MAX_CALLS];    /* whether the sink had been told to stop by then */
	uint64_t counted[MAX_CALLS];   /* the calls each batch counts, summed over its points */
};

static long long mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000LL + ts.tv_nsec / 1000000;
}

static void sleep_ms(long ms)
{
	struct timespec ts = { .tv_sec = ms / 1000, .tv_nsec = ms % 1000 * 1000000L };

	nanosleep(&ts, NULL);
}

static int fake_export_metrics(void *ctx, const struct metrics_batch *b)
{
	struct fake_sink *f = ctx;
	int rc;

	pthread_mutex_lock(&f->lock);
	if (!b->n)
		f->empty = true;
	if (f->calls < MAX_CALLS) {
		f->points[f->calls] = b->n;
		f->at_ms[f->calls] = mono_ms();
		f->after_stop[f->calls] = f->stopped;
		for (size_t i = 0; i < b->n; i++)
			f->counted[f->calls] += b->points[i].count;
	}
	f->calls++;
	rc = f->fail_first ? (f->fail_first--, -EIO) : f->result;
	pthread_mutex_unlock(&f->lock);
	return rc;
}

static void fake_stop(void *ctx)
{
	struct fake_sink *f = ctx;

	/* A sink's stop may take a while (a lock, a wakeup): the stop holds from its return on. */
	if (f->stop_delay_ms)
		sleep_ms(f->stop_delay_ms);
	pthread_mutex_lock(&f->lock);
	f->stopped = true;
	pthread_mutex_unlock(&f->lock);
}

static void fake_free(void *ctx)
{
	struct fake_sink *f = ctx;

	pthread_mutex_lock(&f->lock);
	assert_false(f->freed);
	f->freed = true;
	pthread_mutex_unlock(&f->lock);
}

static const struct sink_ops fake_ops = {
	.name = "fake",
	.export_metrics = fake_export_metrics,
	.stop = fake_stop,
	.free = fake_free,
};

static void fake_init(struct fake_sink *f)
{
	memset(f, 0, sizeof(*f));
	assert_int_equal(pthread_mutex_init(&f->lock, NULL), 0);
}

static size_t fake_calls(struct fake_sink *f)
{
	size_t n;

	pthread_mutex_lock(&f->lock);
	n = f->calls;
	pthread_mutex_unlock(&f->lock);
	return n;
}

/* Waits until the sink had N calls; fails after WAIT_SEC. */
static void wait_calls(struct fake_sink *f, size_t n)
{
	long long end = mono_ms() + WAIT_SEC * 1000;

	while (fake_calls(f) < n) {
		if (mono_ms() > end)
			fail_msg("%zu export calls, want %zu", fake_calls(f), n);
		sleep_ms(1);
	}
}

/* Collections seen by the store's observe callback, which observes nothing. */
struct collections {
	pthread_mutex_t lock;
	int n;
};

static int collections_seen(struct collections *c)
{
	int n;

	pthread_mutex_lock(&c->lock);
	n = c->n;
	pthread_mutex_unlock(&c->lock);
	return n;
}

/* Waits until the store was collected N times; fails after WAIT_SEC. */
static void wait_collections(struct collections *c, int n)
{
	long long end = mono_ms() + WAIT_SEC * 1000;

	while (collections_seen(c) < n) {
		if (mono_ms() > end)
			fail_msg("%d collections, want %d", collections_seen(c), n);
		sleep_ms(1);
	}
}

static void count_collection(void *ctx, struct metrics *m)
{
	struct collections *c = ctx;

	(void)m;
	pthread_mutex_lock(&c->lock);
	c->n++;
	pthread_mutex_unlock(&c->lock);
}

static struct metrics *new_store(enum metric_temporality t, struct collections *c)
{
	struct metrics *m = metrics__new(&(struct metrics_opts){
		.temporality = t,
		.exemplars = METRIC_EXEMPLARS_ALWAYS_OFF,
		.cardinality_limit = 2000,
		.observe = c ? count_collection : NULL,
		.observe_ctx = c,
	});

	assert_non_null(m);
	return m;
}

/* N calls of route ROUTE measured into M. */
static void measure(struct metrics *m, struct resource *r, const char *route, int n)
{
	struct timespec ts;
	int i;

	clock_gettime(CLOCK_REALTIME, &ts);
	for (i = 0; i < n; i++) {
		struct span *s = span__new();

		assert_non_null(s);
		span__set_resource(s, r);
		s->kind = SPAN_KIND_SERVER;
		s->start_ns = (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
		s->end_ns = s->start_ns + 1000000;
		assert_int_equal(span__set_str(s, SC_HTTP_REQUEST_METHOD, "GET", 3), 0);
		assert_int_equal(span__set_str(s, SC_HTTP_ROUTE, route, strlen(route)), 0);
		metrics__record_span(m, s, false);
		span__free(s);
	}
}

static struct resource *mk_res(void)
{
	struct resource *r = resource__new();

	assert_non_null(r);
	assert_int_equal(resource__set_str(r, SC_SERVICE_NAME, "shop"), 0);
	return r;
}

static struct metric_reader *new_reader(struct metrics *m, struct fake_sink *f, long interval)
{
	struct metric_reader *mr = metric_reader__new(&(struct metric_reader_opts){
		.metrics = m,
		.interval_ms = interval,
		.ops = &fake_ops,
		.ctx = f,
	});

	assert_non_null(mr);
	return mr;
}

/* Every interval a collection, exported: the k-th no sooner than k intervals after the start. */
static void test_metrics_export__on_schedule(void **state)
{
	enum { INTERVAL = 30, N = 4 };
	struct metric_reader_stats st;
	struct metric_reader *mr;
	struct resource *r = mk_res();
	struct metrics *m = new_store(METRIC_TEMPORALITY_CUMULATIVE, NULL);
	struct fake_sink f;
	long long t0;
	size_t i;

	(void)state;
	fake_init(&f);
	measure(m, r, "/a", 2);
	measure(m, r, "/b", 1);
	t0 = mono_ms();
	mr = new_reader(m, &f, INTERVAL);
	wait_calls(&f, N);
	metric_reader__shutdown(mr);
	metric_reader__stats(mr, &st);

	for (i = 0; i < N; i++) {
		if (f.at_ms[i] < t0 + (long long)(i + 1) * INTERVAL)
			fail_msg("export %zu at %lld ms, before its interval ended at %d ms", i + 1,
				 f.at_ms[i] - t0, (int)(i + 1) * INTERVAL);
		assert_int_equal(f.points[i], 2);
		assert_int_equal(f.counted[i], 3); /* cumulative: the same totals each time */
		assert_false(f.after_stop[i]);
	}
	/* The last call was the final export, after the sink was told to stop. */
	assert_true(f.after_stop[f.calls - 1]);
	assert_int_equal(st.exports, f.calls);
	assert_int_equal(st.points, 2 * f.calls);
	assert_int_equal(st.failures, 0);
	assert_int_equal(st.points_failed, 0);
	assert_int_equal(st.collect_failed, 0);
	metric_reader__free(mr);
	assert_true(f.freed);
	metrics__free(m);
	resource__free(r);
}

/* A collection with nothing in it is not sent, nor counted as an export. */
static void test_metrics_export__skips_empty_batches(void **state)
{
	struct collections c = { .lock = PTHREAD_MUTEX_INITIALIZER };
	struct metric_reader_stats st;
	struct metric_reader *mr;
	struct resource *r = mk_res();
	struct metrics *m = new_store(METRIC_TEMPORALITY_DELTA, &c);
	struct fake_sink f;

	(void)state;
	fake_init(&f);
	mr = new_reader(m, &f, 10);
	wait_collections(&c, 5);
	assert_int_equal(fake_calls(&f), 0);

	/* One interval's measurement is sent, then a delta with nothing new is not. */
	measure(m, r, "/a", 1);
	wait_calls(&f, 1);
	wait_collections(&c, collections_seen(&c) + 3);
	metric_reader__shutdown(mr);
	metric_reader__stats(mr, &st);
	assert_int_equal(f.calls, 1);
	assert_false(f.empty);
	assert_int_equal(f.counted[0], 1);
	assert_int_equal(st.exports, 1);
	assert_int_equal(st.points, 1);
	assert_int_equal(st.failures, 0);
	metric_reader__free(mr);
	metrics__free(m);
	resource__free(r);
}

/*
 * Shutdown collects and exports one last time, what was measured since the last export, and the
 * sink has been told to stop before that export starts (one request, no retry), however long
 * telling it takes.
 */
static void test_metrics_export__final_export_at_shutdown(void **state)
{
	struct metric_reader_stats st;
	struct metric_reader *mr;
	struct resource *r = mk_res();
	struct metrics *m = new_store(METRIC_TEMPORALITY_DELTA, NULL);
	struct fake_sink f;

	(void)state;
	fake_init(&f);
	f.stop_delay_ms = 100;
	/* An interval never reached: only the shutdown can export. */
	mr = new_reader(m, &f, 600000);
	measure(m, r, "/a", 3);
	measure(m, r, "/b", 2);
	sleep_ms(20);
	assert_int_equal(fake_calls(&f), 0);
	metric_reader__shutdown(mr);
	assert_int_equal(f.calls, 1);
	assert_int_equal(f.points[0], 2);
	assert_int_equal(f.counted[0], 5);
	assert_true(f.after_stop[0]);
	/* Twice is harmless: no second export. */
	metric_reader__shutdown(mr);
	assert_int_equal(f.calls, 1);
	metric_reader__stats(mr, &st);
	assert_int_equal(st.exports, 1);
	assert_int_equal(st.points, 2);
	assert_false(f.freed);
	metric_reader__free(mr);
	assert_true(f.freed);
	metrics__free(m);
	resource__free(r);
}

/* Failed exports are counted with their points; the next one carries on. */
static void test_metrics_export__counts_failures(void **state)
{
	struct metric_reader_stats st;
	struct metric_reader *mr;
	struct resource *r = mk_res();
	struct metrics *m = new_store(METRIC_TEMPORALITY_CUMULATIVE, NULL);
	struct fake_sink f;

	(void)state;
	fake_init(&f);
	f.fail_first = 2;
	measure(m, r, "/a", 1);
	measure(m, r, "/b", 1);
	measure(m, r, "/c", 1);
	mr = new_reader(m, &f, 10);
	wait_calls(&f, 3);
	metric_reader__shutdown(mr);
	metric_reader__stats(mr, &st);
	assert_int_equal(st.failures, 2);
	assert_int_equal(st.points_failed, 6);
	assert_int_equal(st.exports, f.calls - 2);
	assert_int_equal(st.points, 3 * (f.calls - 2));
	metric_reader__free(mr);
	metrics__free(m);
	resource__free(r);

	/* A sink that always fails: the final export too, counted. */
	fake_init(&f);
	f.result = -EAGAIN;
	m = new_store(METRIC_TEMPORALITY_DELTA, NULL);
	r = mk_res();
	measure(m, r, "/a", 1);
	measure(m, r, "/b", 1);
	mr = new_reader(m, &f, 600000);
	metric_reader__free(mr);
	assert_int_equal(f.calls, 1);
	assert_true(f.freed);
	metrics__free(m);
	resource__free(r);
}

static void test_metrics_export__new_rejects_bad_opts(void **state)
{
	static const struct sink_ops spans_only = { .name = "spans" };
	struct metrics *m = new_store(METRIC_TEMPORALITY_CUMULATIVE, NULL);
	struct fake_sink f;
	struct metric_reader_opts o = { .metrics = m, .interval_ms = 100, .ctx = &f };

	(void)state;
	fake_init(&f);
	errno = 0;
	assert_null(metric_reader__new(&o)); /* no sink */
	assert_int_equal(errno, EINVAL);
	o.ops = &spans_only;
	assert_null(metric_reader__new(&o)); /* a sink that takes no metrics */
	assert_int_equal(errno, EINVAL);
	o.ops = &fake_ops;
	o.interval_ms = 0;
	assert_null(metric_reader__new(&o));
	assert_int_equal(errno, EINVAL);
	o.interval_ms = 100;
	o.metrics = NULL;
	assert_null(metric_reader__new(&o));
	assert_int_equal(errno, EINVAL);
	/* On failure the caller still owns the sink. */
	assert_false(f.freed);
	metric_reader__free(NULL);
	metrics__free(m);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_metrics_export__on_schedule),
		cmocka_unit_test(test_metrics_export__skips_empty_batches),
		cmocka_unit_test(test_metrics_export__final_export_at_shutdown),
		cmocka_unit_test(test_metrics_export__counts_failures),
		cmocka_unit_test(test_metrics_export__new_rejects_bad_opts),
	};

	log_set_level(TEST_QUIET_LEVEL);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
