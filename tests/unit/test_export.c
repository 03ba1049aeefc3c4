// SPDX-License-Identifier: MIT
/*
 * Unit tests for export.c and export_http.c. The batch span processor runs for real, its export
 * thread included; only the sink is a recording stand-in whose export can be held shut, which
 * makes a full queue reproducible instead of a race. The HTTP sink talks to a small HTTP/1.1
 * server that the test runs on 127.0.0.1 in a thread, and the body it receives is decoded with
 * the protobuf-c code generated from proto/, not with anything of the encoder's.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <errno.h>
#include <pthread.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <cjson/cJSON.h>
#include <cmocka.h>
#include <zlib.h>

#include "export/export.h"
#include "export/export_http.h"
#include "helpers.h"
#include "model/metrics.h"
#include "model/semconv.h"
#include "model/span.h"

#include "opentelemetry/proto/collector/metrics/v1/metrics_service.pb-c.h"
#include "opentelemetry/proto/collector/trace/v1/trace_service.pb-c.h"

/* Only a bound on hangs: a broken exporter fails the test instead of stalling CI. */
#define WAIT_SEC 10
#define MAX_SEEN 4096

static void deadline_in(struct timespec *ts, int sec)
{
	clock_gettime(CLOCK_REALTIME, ts);
	ts->tv_sec += sec;
}

/* ---- a recording sink ------------------------------------------------------------------- */

struct fake_sink {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	bool gate_closed; /* export waits while set */
	bool in_export;
	int result; /* what export returns */
	size_t fail_first; /* this many calls return -EAGAIN first, recording nothing */
	size_t calls, nspans;
	size_t batches[256];
	uint64_t seen[MAX_SEEN]; /* start_ns of every span, in arrival order: the test's sequence */
	bool freed;
};

static int fake_export(void *ctx, struct span *const *spans, size_t n)
{
	struct fake_sink *f = ctx;
	size_t i;

	pthread_mutex_lock(&f->lock);
	f->in_export = true;
	pthread_cond_broadcast(&f->cond);
	while (f->gate_closed)
		pthread_cond_wait(&f->cond, &f->lock);
	if (f->fail_first || f->result == -EAGAIN) {
		struct timespec ms = { .tv_nsec = 1000000 };

		if (f->fail_first)
			f->fail_first--;
		f->calls++;
		f->in_export = false;
		pthread_cond_broadcast(&f->cond);
		pthread_mutex_unlock(&f->lock);
		/* A real sink paces its retries; without this the processor would spin. */
		nanosleep(&ms, NULL);
		return -EAGAIN;
	}
	if (f->calls < 256)
		f->batches[f->calls] = n;
	f->calls++;
	for (i = 0; i < n && f->nspans < MAX_SEEN; i++)
		f->seen[f->nspans++] = spans[i]->start_ns;
	f->in_export = false;
	pthread_cond_broadcast(&f->cond);
	pthread_mutex_unlock(&f->lock);
	return f->result;
}

static void fake_free(void *ctx)
{
	struct fake_sink *f = ctx;

	pthread_mutex_lock(&f->lock);
	f->freed = true;
	pthread_mutex_unlock(&f->lock);
}

static const struct sink_ops fake_ops = {
	.name = "fake",
	.export = fake_export,
	.free = fake_free,
};

static void fake_init(struct fake_sink *f)
{
	memset(f, 0, sizeof(*f));
	assert_int_equal(pthread_mutex_init(&f->lock, NULL), 0);
	assert_int_equal(pthread_cond_init(&f->cond, NULL), 0);
}

static void fake_destroy(struct fake_sink *f)
{
	pthread_cond_destroy(&f->cond);
	pthread_mutex_destroy(&f->lock);
}

/* Waits until the export thread is inside the sink; false after WAIT_SEC. */
static bool fake_wait_in_export(struct fake_sink *f)
{
	struct timespec dl;
	bool ok = true;

	deadline_in(&dl, WAIT_SEC);
	pthread_mutex_lock(&f->lock);
	while (!f->in_export && ok)
		ok = pthread_cond_timedwait(&f->cond, &f->lock, &dl) != ETIMEDOUT;
	ok = f->in_export;
	pthread_mutex_unlock(&f->lock);
	return ok;
}

static void fake_open_gate(struct fake_sink *f)
{
	pthread_mutex_lock(&f->lock);
	f->gate_closed = false;
	pthread_cond_broadcast(&f->cond);
	pthread_mutex_unlock(&f->lock);
}

/* Every span arrived once, in submission order. */
static void assert_in_order(const struct fake_sink *f, size_t n)
{
	size_t i;

	assert_int_equal(f->nspans, n);
	for (i = 0; i < n; i++)
		assert_int_equal(f->seen[i], i);
}

/*
 * Waits until the exporter counts N spans exported. The sink sees spans before the exporter
 * counts them, so the sink's tally alone cannot tell when the stats are final.
 */
static void wait_exported(struct exporter *e, uint64_t n, struct exporter_stats *st)
{
	struct timespec nap = { .tv_nsec = 1000000 };
	int i;

	for (i = 0; i < WAIT_SEC * 1000; i++) {
		exporter__stats(e, st);
		if (st->exported >= n)
			return;
		nanosleep(&nap, NULL);
	}
	fail_msg("exported %llu spans, want %llu", (unsigned long long)st->exported,
		 (unsigned long long)n);
}

static struct span *make_span(uint64_t seq)
{
	struct span *s = span__new();

	assert_non_null(s);
	s->start_ns = seq;
	s->end_ns = seq + 1;
	return s;
}

static struct exporter *new_exporter(struct fake_sink *f, size_t queue, size_t batch, long delay)
{
	struct exporter_opts o = {
		.max_queue = queue,
		.max_batch = batch,
		.delay_ms = delay,
		.ops = &fake_ops,
		.ctx = f,
	};
	struct exporter *e = exporter__new(&o);

	assert_non_null(e);
	return e;
}

/* ---- batch span processor -------------------------------------------------------------- */

/* E's counts of spans submitted, dropped for want of room, and queued (in flight included). */
static void assert_queue(struct exporter *e, uint64_t submitted, uint64_t full, uint64_t depth)
{
	struct exporter_stats st;

	exporter__stats(e, &st);
	assert_int_equal(st.submitted, submitted);
	assert_int_equal(st.dropped_queue_full, full);
	assert_int_equal(st.queue_depth, depth);
}

static void test_export__queue_full_drops_and_counts(void **state)
{
	struct exporter_stats st;
	struct fake_sink f;
	struct exporter *e;
	uint64_t seq = 0;
	int i;

	(void)state;
	fake_init(&f);
	f.gate_closed = true;
	e = new_exporter(&f, 4, 2, 60000);

	/* A full batch wakes the thread, which takes it and then hangs in the "slow collector". */
	assert_int_equal(exporter__submit(e, make_span(seq++)), 0);
	assert_int_equal(exporter__submit(e, make_span(seq++)), 0);
	assert_true(fake_wait_in_export(&f));
	/*
	 * The batch in the sink still counts against the queue size of 4: room for 2 more, and
	 * beyond that submit refuses at once instead of waiting.
	 */
	for (i = 0; i < 2; i++)
		assert_int_equal(exporter__submit(e, make_span(seq++)), 0);
	for (i = 0; i < 3; i++)
		assert_int_equal(exporter__submit(e, make_span(100 + i)), -ENOSPC);

	assert_queue(e, 7, 3, 4);
	exporter__stats(e, &st);
	assert_int_equal(st.exported, 0);

	fake_open_gate(&f);
	exporter__shutdown(e);
	exporter__stats(e, &st);
	assert_int_equal(st.exported, 4);
	assert_int_equal(st.dropped_queue_full, 3);
	assert_int_equal(st.dropped_export_failed, 0);
	assert_int_equal(st.queue_depth, 0);
	assert_in_order(&f, 4);
	exporter__free(e);
	assert_true(f.freed);
	fake_destroy(&f);
}

/*
 * The reader's spans handed over many at a time: the same room, drops and order as one at a
 * time, and a batch filled in the middle of them still wakes the export thread.
 */
static void test_export__submit_many(void **state)
{
	struct span *spans[8];
	struct exporter_stats st;
	struct fake_sink f;
	struct exporter *e;
	size_t i;

	(void)state;
	fake_init(&f);
	f.gate_closed = true;
	e = new_exporter(&f, 6, 2, 600000);
	/* Room for 6: the spans the caller still holds count. */
	assert_true(exporter__has_room(e, 5));
	assert_false(exporter__has_room(e, 6));

	/* Three spans: the second fills a batch, which the thread takes and hangs in the sink. */
	for (i = 0; i < 3; i++)
		spans[i] = make_span(i);
	assert_int_equal(exporter__submit_many(e, spans, 3), 3);
	assert_true(fake_wait_in_export(&f));
	/* 2 in the sink, 1 queued: room for 3 of the next 5, the last two are dropped. */
	for (i = 0; i < 5; i++)
		spans[i] = make_span(i < 3 ? 3 + i : 100 + i);
	assert_int_equal(exporter__submit_many(e, spans, 5), 3);
	assert_false(exporter__has_room(e, 0));
	assert_queue(e, 8, 2, 6);

	fake_open_gate(&f);
	exporter__shutdown(e);
	exporter__stats(e, &st);
	assert_int_equal(st.exported, 6);
	assert_in_order(&f, 6);
	/* Nothing queued after the shutdown: counted with the full-queue drops, and freed. */
	spans[0] = make_span(200);
	assert_int_equal(exporter__submit_many(e, spans, 1), 0);
	assert_false(exporter__has_room(e, 0));
	assert_queue(e, 9, 3, 0);
	exporter__free(e);
	fake_destroy(&f);
}

static void test_export__batches_by_size(void **state)
{
	struct exporter_stats st;
	struct fake_sink f;
	struct exporter *e;
	uint64_t i;

	(void)state;
	fake_init(&f);
	/* The delay is far away: only the batch size can send anything before shutdown. */
	e = new_exporter(&f, 100, 3, 600000);
	for (i = 0; i < 7; i++)
		assert_int_equal(exporter__submit(e, make_span(i)), 0);
	wait_exported(e, 6, &st);
	assert_int_equal(st.exported, 6);
	assert_int_equal(st.queue_depth, 1);

	pthread_mutex_lock(&f.lock);
	assert_int_equal(f.calls, 2);
	assert_int_equal(f.batches[0], 3);
	assert_int_equal(f.batches[1], 3);
	pthread_mutex_unlock(&f.lock);

	exporter__shutdown(e);
	assert_int_equal(f.calls, 3);
	assert_int_equal(f.batches[2], 1);
	assert_in_order(&f, 7);
	exporter__free(e);
	fake_destroy(&f);
}

static void test_export__delay_flush(void **state)
{
	struct exporter_stats st;
	struct fake_sink f;
	struct exporter *e;

	(void)state;
	fake_init(&f);
	/* A batch size never reached: only the schedule delay can send these two. */
	e = new_exporter(&f, 100, 50, 50);
	assert_int_equal(exporter__submit(e, make_span(0)), 0);
	assert_int_equal(exporter__submit(e, make_span(1)), 0);
	wait_exported(e, 2, &st);
	assert_int_equal(st.exported, 2);
	assert_int_equal(st.queue_depth, 0);

	/* And again after a quiet spell: the timer keeps running. */
	assert_int_equal(exporter__submit(e, make_span(2)), 0);
	wait_exported(e, 3, &st);
	exporter__free(e);
	assert_in_order(&f, 3);
	fake_destroy(&f);
}

static void test_export__shutdown_drains(void **state)
{
	struct exporter_stats st;
	struct fake_sink f;
	struct exporter *e;
	size_t i, sum = 0;

	(void)state;
	fake_init(&f);
	e = new_exporter(&f, 1000, 10, 600000);
	for (i = 0; i < 95; i++)
		assert_int_equal(exporter__submit(e, make_span(i)), 0);
	exporter__shutdown(e);

	exporter__stats(e, &st);
	assert_int_equal(st.exported, 95);
	assert_int_equal(st.queue_depth, 0);
	assert_in_order(&f, 95);
	for (i = 0; i < f.calls; i++) {
		assert_true(f.batches[i] >= 1 && f.batches[i] <= 10);
		sum += f.batches[i];
	}
	assert_int_equal(sum, 95);

	/* After shutdown nothing would send it: refused, freed, counted. */
	assert_int_equal(exporter__submit(e, make_span(999)), -ENOSPC);
	exporter__stats(e, &st);
	assert_int_equal(st.dropped_queue_full, 1);
	exporter__shutdown(e); /* a second call is harmless */
	exporter__free(e);
	assert_true(f.freed);
	fake_destroy(&f);
}

static void test_export__failed_export_counts(void **state)
{
	struct exporter_stats st;
	struct fake_sink f;
	struct exporter *e;
	uint64_t i;

	(void)state;
	fake_init(&f);
	f.result = -EIO;
	e = new_exporter(&f, 100, 5, 600000);
	for (i = 0; i < 12; i++)
		assert_int_equal(exporter__submit(e, make_span(i)), 0);
	exporter__shutdown(e);
	exporter__stats(e, &st);
	assert_int_equal(st.submitted, 12);
	assert_int_equal(st.exported, 0);
	assert_int_equal(st.dropped_export_failed, 12);
	assert_int_equal(st.export_failures, 3); /* 5 + 5 + 2 */
	assert_int_equal(st.dropped_queue_full, 0);
	exporter__free(e);
	fake_destroy(&f);
}

/* A transient failure keeps the batch: it is sent again, first, and nothing is lost or doubled. */
static void test_export__transient_failure_keeps_batch(void **state)
{
	struct exporter_stats st;
	struct fake_sink f;
	struct exporter *e;
	uint64_t i;

	(void)state;
	fake_init(&f);
	f.fail_first = 5;
	e = new_exporter(&f, 100, 4, 600000);
	for (i = 0; i < 10; i++)
		assert_int_equal(exporter__submit(e, make_span(i)), 0);
	wait_exported(e, 8, &st);
	exporter__shutdown(e);
	exporter__stats(e, &st);
	assert_int_equal(st.exported, 10);
	assert_int_equal(st.export_failures, 5);
	assert_int_equal(st.dropped_export_failed, 0);
	assert_int_equal(st.queue_depth, 0);
	assert_int_equal(f.nspans, 10);
	assert_in_order(&f, 10);
	exporter__free(e);
	fake_destroy(&f);
}

/*
 * While a batch waits for another try it holds its place in the queue; at shutdown, a collector
 * still failing drops it and everything behind it, counted, instead of one timeout per batch.
 */
static void test_export__transient_failure_bounded_and_dropped_at_exit(void **state)
{
	struct exporter_stats st;
	struct fake_sink f;
	struct exporter *e;
	uint64_t i;

	(void)state;
	fake_init(&f);
	f.result = -EAGAIN;
	e = new_exporter(&f, 6, 4, 600000);
	for (i = 0; i < 4; i++)
		assert_int_equal(exporter__submit(e, make_span(i)), 0);
	/* The full batch has gone to the sink and failed at least once. */
	for (i = 0; i < WAIT_SEC * 1000; i++) {
		exporter__stats(e, &st);
		if (st.export_failures)
			break;
		usleep(1000);
	}
	assert_true(st.export_failures >= 1);
	assert_int_equal(exporter__submit(e, make_span(4)), 0);
	assert_int_equal(exporter__submit(e, make_span(5)), 0);
	assert_int_equal(exporter__submit(e, make_span(6)), -ENOSPC);
	exporter__stats(e, &st);
	assert_int_equal(st.queue_depth, 6);
	assert_int_equal(st.dropped_export_failed, 0);

	exporter__shutdown(e);
	exporter__stats(e, &st);
	assert_int_equal(st.exported, 0);
	assert_int_equal(st.dropped_export_failed, 6);
	assert_int_equal(st.dropped_queue_full, 1);
	assert_int_equal(st.queue_depth, 0);
	assert_true(st.export_failures >= 2);
	exporter__free(e);
	fake_destroy(&f);
}

/* Opens the fake sink's gate after 50 ms, from a thread of its own. */
static void *open_gate_soon(void *arg)
{
	struct timespec nap = { .tv_nsec = 50000000 };

	nanosleep(&nap, NULL);
	fake_open_gate(arg);
	return NULL;
}

/*
 * An exporter (a queue of 10, batches of 2) whose thread is held in F's closed gate with spans 0
 * and 1, spans 2 to N-1 queued behind them, and told to stop: a final flush that hangs.
 */
static struct exporter *stuck_flush(struct fake_sink *f, uint64_t n)
{
	struct exporter *e;
	uint64_t i;

	fake_init(f);
	f->gate_closed = true;
	e = new_exporter(f, 10, 2, 600000);
	for (i = 0; i < n; i++) {
		assert_int_equal(exporter__submit(e, make_span(i)), 0);
		if (i == 1)
			assert_true(fake_wait_in_export(f));
	}
	exporter__stop(e);
	return e;
}

/* What an exporter whose final flush was cut counts: EXPORTED sent, NOT_FLUSHED given up. */
static void assert_cut(struct exporter *e, uint64_t exported, uint64_t not_flushed)
{
	struct exporter_stats st;

	exporter__stats(e, &st);
	assert_int_equal(st.exported, exported);
	assert_int_equal(st.dropped_not_flushed, not_flushed);
	assert_int_equal(st.queue_depth, 0);
}

/*
 * A second signal during the final flush: the queued spans are given up at once and counted;
 * the batch in a sink that does not come back within the grace is counted too, and not again
 * when the sink does come back; exporter__free leaves an exporter whose thread is still in the
 * sink alone instead of waiting for it.
 */
static void test_export__abandon_gives_up_what_is_left(void **state)
{
	struct fake_sink f;
	struct exporter *e = stuck_flush(&f, 5);
	uint64_t lost = 0;

	(void)state;
	assert_int_equal(exporter__wait(e, 20), -ETIMEDOUT);
	assert_int_equal(exporter__abandon(e, 20, &lost), -ETIMEDOUT);
	assert_int_equal(lost, 5);
	assert_cut(e, 0, 5);
	assert_int_equal(exporter__submit(e, make_span(99)), -ENOSPC);
	exporter__free(e); /* returns at once: the thread is still in the sink */
	assert_false(f.freed);

	fake_open_gate(&f);
	assert_int_equal(exporter__wait(e, WAIT_SEC * 1000), 0);
	assert_cut(e, 0, 5);
	assert_int_equal(f.nspans, 2); /* the sink did get them: counted lost all the same */
	exporter__free(e);
	assert_true(f.freed);
	fake_destroy(&f);
}

/* A sink that comes back within the grace: only the queued spans are lost. */
static void test_export__abandon_waits_out_the_grace(void **state)
{
	struct fake_sink f;
	struct exporter *e = stuck_flush(&f, 5);
	uint64_t lost = 0;
	pthread_t opener;

	(void)state;
	assert_int_equal(pthread_create(&opener, NULL, open_gate_soon, &f), 0);
	assert_int_equal(exporter__abandon(e, WAIT_SEC * 1000, &lost), 0);
	assert_int_equal(pthread_join(opener, NULL), 0);
	assert_int_equal(lost, 3);
	assert_cut(e, 2, 3);
	assert_in_order(&f, 2);
	exporter__free(e);
	assert_true(f.freed);
	fake_destroy(&f);
}

/* A sink that records which of the termination signals the export thread blocks. */
struct mask_sink {
	pthread_mutex_t lock;
	bool called, sigint, sigterm;
};

static int mask_export(void *ctx, struct span *const *spans, size_t n)
{
	struct mask_sink *m = ctx;
	sigset_t set;

	(void)spans;
	(void)n;
	assert_int_equal(pthread_sigmask(SIG_SETMASK, NULL, &set), 0);
	pthread_mutex_lock(&m->lock);
	m->called = true;
	m->sigint = sigismember(&set, SIGINT) == 1;
	m->sigterm = sigismember(&set, SIGTERM) == 1;
	pthread_mutex_unlock(&m->lock);
	return 0;
}

/*
 * The export thread blocks the termination signals, whatever mask its creator has: a SIGTERM
 * must reach the main thread, which stops gospan, not interrupt a request to the collector.
 */
static void test_export__thread_blocks_termination_signals(void **state)
{
	static const struct sink_ops ops = { .name = "mask", .export = mask_export };
	struct mask_sink m = { .lock = PTHREAD_MUTEX_INITIALIZER };
	struct exporter_opts o = {
		.max_queue = 4, .max_batch = 1, .delay_ms = 600000, .ops = &ops, .ctx = &m,
	};
	sigset_t none, old;
	struct exporter *e;

	(void)state;
	sigemptyset(&none);
	assert_int_equal(pthread_sigmask(SIG_SETMASK, &none, &old), 0);
	e = exporter__new(&o);
	assert_int_equal(pthread_sigmask(SIG_SETMASK, &old, NULL), 0);
	assert_non_null(e);
	assert_int_equal(exporter__submit(e, make_span(0)), 0);
	exporter__shutdown(e);
	assert_true(m.called);
	assert_true(m.sigint);
	assert_true(m.sigterm);
	exporter__free(e);
}

static void test_export__new_rejects_bad_opts(void **state)
{
	struct exporter_opts o = { .max_queue = 8, .max_batch = 4, .delay_ms = 100 };
	struct fake_sink f;

	(void)state;
	fake_init(&f);
	o.ctx = &f;
	errno = 0;
	assert_null(exporter__new(&o)); /* no ops */
	assert_int_equal(errno, EINVAL);
	o.ops = &fake_ops;
	o.max_queue = 0;
	assert_null(exporter__new(&o));
	assert_int_equal(errno, EINVAL);
	o.max_queue = 8;
	o.delay_ms = 0;
	assert_null(exporter__new(&o));
	assert_int_equal(errno, EINVAL);
	/* On failure the caller still owns the sink. */
	assert_false(f.freed);
	fake_destroy(&f);
}

/* ---- a tiny HTTP/1.1 server -------------------------------------------------------------- */

#define SRV_MAX_REQS 4
#define SRV_BUF (1 << 20)

struct srv_req {
	char method[16];
	char path[256];
	char content_type[128];
	char api_key[128];
	bool has_empty; /* "X-Empty:" arrived with an empty value */
	char user_agent[128];
	char content_encoding[32];
	uint8_t *body;
	size_t body_len;
};

struct srv_resp {
	int status;
	const char *body;
	size_t body_len;     /* 0: strlen(body) */
	const char *headers; /* extra header lines, each ending "\r\n", or NULL */
};

struct server {
	int lfd;
	int port;
	pthread_t thread;
	int nresp;
	struct srv_resp resp[SRV_MAX_REQS];
	int nreqs, naccepts; /* read with __atomic_load_n while the server runs */
	struct srv_req reqs[SRV_MAX_REQS];
	char *buf;
};

static bool write_all(int fd, const char *p, size_t n)
{
	ssize_t w;

	while (n) {
		w = write(fd, p, n);
		if (w <= 0)
			return false;
		p += w;
		n -= w;
	}
	return true;
}

/* Copies the value of header NAME from the header block HDRS into OUT; false when absent. */
static bool get_header(const char *hdrs, const char *name, char *out, size_t cap)
{
	size_t nlen = strlen(name), vlen;
	const char *line, *v, *eol;

	for (line = strstr(hdrs, "\r\n"); line && line[2]; line = strstr(line + 2, "\r\n")) {
		line += 2;
		if (strncasecmp(line, name, nlen) || line[nlen] != ':')
			continue;
		v = line + nlen + 1;
		while (*v == ' ')
			v++;
		eol = strstr(v, "\r\n");
		vlen = (size_t)(eol - v) < cap - 1 ? (size_t)(eol - v) : cap - 1;
		memcpy(out, v, vlen);
		out[vlen] = '\0';
		return true;
	}
	return false;
}

/* Serves requests on one connection until it closes or all responses are used. */
static void serve_conn(struct server *s, int fd)
{
	char tmp[32], hdr[256], *end;
	size_t have = 0, hlen, clen, blen;
	const struct srv_resp *rs;
	struct srv_req *r;
	ssize_t got;

	while (s->nreqs < s->nresp) {
		while (!(end = memmem(s->buf, have, "\r\n\r\n", 4))) {
			got = have < SRV_BUF - 1 ? read(fd, s->buf + have, SRV_BUF - 1 - have) : -1;
			if (got <= 0)
				return;
			have += got;
		}
		hlen = end + 4 - s->buf;
		end[2] = '\0'; /* header block ends "\r\n" for get_header */
		r = &s->reqs[s->nreqs];
		if (sscanf(s->buf, "%15s %255s", r->method, r->path) != 2)
			return;
		get_header(s->buf, "Content-Type", r->content_type, sizeof(r->content_type));
		get_header(s->buf, "X-Api-Key", r->api_key, sizeof(r->api_key));
		get_header(s->buf, "User-Agent", r->user_agent, sizeof(r->user_agent));
		get_header(s->buf, "Content-Encoding", r->content_encoding,
			   sizeof(r->content_encoding));
		r->has_empty = get_header(s->buf, "X-Empty", tmp, sizeof(tmp)) && !tmp[0];
		clen = 0;
		if (get_header(s->buf, "Content-Length", tmp, sizeof(tmp)))
			clen = strtoul(tmp, NULL, 10);
		if (get_header(s->buf, "Expect", tmp, sizeof(tmp)) &&
		    !write_all(fd, "HTTP/1.1 100 Continue\r\n\r\n", 25))
			return;
		if (hlen + clen >= SRV_BUF)
			return;
		while (have < hlen + clen) {
			got = read(fd, s->buf + have, SRV_BUF - 1 - have);
			if (got <= 0)
				return;
			have += got;
		}
		r->body = malloc(clen ?: 1);
		if (!r->body)
			return;
		memcpy(r->body, s->buf + hlen, clen);
		r->body_len = clen;
		memmove(s->buf, s->buf + hlen + clen, have - hlen - clen);
		have -= hlen + clen;

		rs = &s->resp[s->nreqs];
		blen = rs->body_len ? rs->body_len : strlen(rs->body);
		snprintf(hdr, sizeof(hdr),
			 "HTTP/1.1 %d X\r\nContent-Type: text/plain\r\n"
			 "Content-Length: %zu\r\n%s\r\n",
			 rs->status, blen, rs->headers ? rs->headers : "");
		__atomic_add_fetch(&s->nreqs, 1, __ATOMIC_SEQ_CST);
		if (!write_all(fd, hdr, strlen(hdr)) || !write_all(fd, rs->body, blen))
			return;
	}
}

static void *server_main(void *arg)
{
	struct timeval tv = { .tv_sec = WAIT_SEC };
	struct server *s = arg;
	struct pollfd p = { .fd = s->lfd, .events = POLLIN };
	int fd;

	while (s->nreqs < s->nresp) {
		if (poll(&p, 1, WAIT_SEC * 1000) != 1)
			break;
		fd = accept(s->lfd, NULL, NULL);
		if (fd < 0)
			break;
		s->naccepts++;
		setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
		serve_conn(s, fd);
		close(fd);
	}
	return NULL;
}

/*
 * Binds 127.0.0.1 (a free port) without listening yet: connections are refused until
 * server_listen, and the port cannot be taken by anyone else meanwhile.
 */
static void server_bind(struct server *s, const struct srv_resp *resp, int nresp)
{
	struct sockaddr_in a = { .sin_family = AF_INET };
	socklen_t alen = sizeof(a);
	int one = 1;

	memset(s, 0, sizeof(*s));
	assert_true(nresp <= SRV_MAX_REQS);
	memcpy(s->resp, resp, nresp * sizeof(*resp));
	s->nresp = nresp;
	s->buf = malloc(SRV_BUF);
	assert_non_null(s->buf);
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	s->lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	assert_true(s->lfd >= 0);
	assert_int_equal(setsockopt(s->lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)), 0);
	assert_int_equal(bind(s->lfd, (struct sockaddr *)&a, sizeof(a)), 0);
	assert_int_equal(getsockname(s->lfd, (struct sockaddr *)&a, &alen), 0);
	s->port = ntohs(a.sin_port);
}

static void server_listen(struct server *s)
{
	assert_int_equal(listen(s->lfd, 8), 0);
	assert_int_equal(pthread_create(&s->thread, NULL, server_main, s), 0);
}

/* Listens on 127.0.0.1 (a free port) and answers the next requests with RESP, in order. */
static void server_start(struct server *s, const struct srv_resp *resp, int nresp)
{
	server_bind(s, resp, nresp);
	server_listen(s);
}

/* Waits for the server to finish; what it recorded stays readable until server_free. */
static void server_join(struct server *s)
{
	assert_int_equal(pthread_join(s->thread, NULL), 0);
	close(s->lfd);
}

static void server_free(struct server *s)
{
	int i;

	for (i = 0; i < s->nreqs; i++)
		free(s->reqs[i].body);
	free(s->buf);
}

/* stderr capture that fails the test when it cannot be set up. */
static void capture_start(struct test_capture *c)
{
	assert_int_equal(test_capture_start(c), 0);
}

static char *capture_end(struct test_capture *c)
{
	char *buf = test_capture_end(c);

	assert_non_null(buf);
	return buf;
}

static const struct header_kv test_headers[] = {
	{ .key = "X-Api-Key", .value = "sekret-value-42" },
	{ .key = "X-Empty", .value = "" },
};

/* A sink for 127.0.0.1:PORT with O's settings (timeout, backoff, gzip) and the test headers. */
static void *new_sink_opts(int port, struct http_sink_opts *o)
{
	char url[128];
	void *h;

	snprintf(url, sizeof(url), "http://127.0.0.1:%d/v1/traces", port);
	o->url = url;
	o->headers = test_headers;
	o->nheaders = 2;
	if (!o->timeout_ms)
		o->timeout_ms = WAIT_SEC * 1000;
	h = http_sink__new(o);
	assert_non_null(h);
	return h;
}

static void *new_sink(int port)
{
	struct http_sink_opts o = {};

	return new_sink_opts(port, &o);
}

/* The sink's own counters, as exporter__stats would add them. */
static void sink_stats(void *h, struct exporter_stats *st)
{
	memset(st, 0, sizeof(*st));
	http_sink_ops.stats(h, st);
}

static long long mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000LL + ts.tv_nsec / 1000000;
}

static struct span *make_named_span(const struct resource *res, const char *name)
{
	struct span *s = span__new();

	assert_non_null(s);
	s->res = res;
	s->kind = SPAN_KIND_SERVER;
	s->start_ns = 1700000000000000000ULL;
	s->end_ns = s->start_ns + 1500;
	assert_int_equal(span__set_name(s, name, strlen(name)), 0);
	assert_int_equal(span__set_str(s, SC_HTTP_ROUTE, "/items/{id}", 11), 0);
	return s;
}

typedef Opentelemetry__Proto__Collector__Trace__V1__ExportTraceServiceRequest pb_request;
#define pb_response_size \
	opentelemetry__proto__collector__trace__v1__export_trace_service_response__get_packed_size
#define pb_response_pack \
	opentelemetry__proto__collector__trace__v1__export_trace_service_response__pack

/* Decodes BODY as an ExportTraceServiceRequest and checks it carries exactly SPANS. */
static void assert_body_holds(const struct srv_req *r, struct span *const *spans, size_t n)
{
	Opentelemetry__Proto__Trace__V1__ScopeSpans *ss;
	Opentelemetry__Proto__Trace__V1__Span *p;
	pb_request *req;
	size_t i;

	req = opentelemetry__proto__collector__trace__v1__export_trace_service_request__unpack(
		NULL, r->body_len, r->body);
	assert_non_null(req);
	assert_int_equal(req->n_resource_spans, 1);
	assert_non_null(req->resource_spans[0]->resource);
	assert_int_equal(req->resource_spans[0]->n_scope_spans, 1);
	ss = req->resource_spans[0]->scope_spans[0];
	assert_int_equal(ss->n_spans, n);
	for (i = 0; i < n; i++) {
		p = ss->spans[i];
		assert_string_equal(p->name, spans[i]->name);
		assert_int_equal(p->trace_id.len, 16);
		assert_memory_equal(p->trace_id.data, spans[i]->trace_id, 16);
		assert_int_equal(p->span_id.len, 8);
		assert_memory_equal(p->span_id.data, spans[i]->span_id, 8);
		assert_int_equal(p->start_time_unix_nano, spans[i]->start_ns);
		assert_int_equal(p->end_time_unix_nano, spans[i]->end_ns);
	}
	opentelemetry__proto__collector__trace__v1__export_trace_service_request__free_unpacked(
		req, NULL);
}

/* ---- OTLP/HTTP sink ---------------------------------------------------------------------- */

static void test_export__http_round_trip(void **state)
{
	/* Over 200 bytes of body with control bytes in the shown part and a marker past the cut. */
	static char bad_body[400];
	struct srv_resp resp[2] = {
		{ .status = 200, .body = "" },
		{ .status = 400, .body = bad_body },
	};
	struct span *spans[2];
	struct resource *res;
	struct test_capture cap;
	struct server srv;
	char *log, want[256];
	void *h;

	(void)state;
	memset(bad_body, 'z', sizeof(bad_body) - 1);
	memcpy(bad_body, "bad span\n\x01here", 14);
	memcpy(bad_body + 250, "MARKER", 6);
	server_start(&srv, resp, 2);
	res = resource__new();
	assert_non_null(res);
	assert_int_equal(resource__set_str(res, SC_SERVICE_NAME, "checkout"), 0);
	spans[0] = make_named_span(res, "GET /items/{id}");
	spans[1] = make_named_span(res, "POST /cart");
	h = new_sink(srv.port);

	assert_int_equal(http_sink_ops.export(h, spans, 2), 0);

	/* The same handle again: the error path, on the same kept-alive connection. */
	capture_start(&cap);
	assert_int_equal(http_sink_ops.export(h, spans, 1), -EIO);
	log = capture_end(&cap);
	http_sink_ops.free(h);
	server_join(&srv);

	assert_int_equal(srv.nreqs, 2);
	assert_int_equal(srv.naccepts, 1);
	assert_string_equal(srv.reqs[0].method, "POST");
	assert_string_equal(srv.reqs[0].path, "/v1/traces");
	assert_string_equal(srv.reqs[0].content_type, "application/x-protobuf");
	assert_string_equal(srv.reqs[0].api_key, "sekret-value-42");
	assert_true(srv.reqs[0].has_empty);
	assert_non_null(strstr(srv.reqs[0].user_agent, "gospan/"));
	assert_body_holds(&srv.reqs[0], spans, 2);
	assert_body_holds(&srv.reqs[1], spans, 1);

	snprintf(want, sizeof(want),
		 "export to 'http://127.0.0.1:%d/v1/traces' failed: HTTP 400: bad span??here",
		 srv.port);
	if (!strstr(log, want))
		fail_msg("want \"%s\" in the log, got \"%s\"", want, log);
	assert_null(strstr(log, "MARKER"));  /* only the first 200 bytes are shown */
	assert_null(strstr(log, "sekret")); /* header values are never logged */
	free(log);

	server_free(&srv);
	span__free(spans[0]);
	span__free(spans[1]);
	resource__free(res);
}

static void test_export__http_connection_refused(void **state)
{
	struct http_sink_opts o = {};
	struct exporter_stats st;
	struct sockaddr_in a = { .sin_family = AF_INET };
	socklen_t alen = sizeof(a);
	struct span *s;
	struct test_capture cap;
	char *log, want[128];
	int fd, port;
	void *h;

	(void)state;
	/* A port that was free a moment ago and has nobody listening now. */
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	fd = socket(AF_INET, SOCK_STREAM, 0);
	assert_true(fd >= 0);
	assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0);
	assert_int_equal(getsockname(fd, (struct sockaddr *)&a, &alen), 0);
	port = ntohs(a.sin_port);
	close(fd);

	s = make_named_span(NULL, "GET /");
	/* Refused connections are retried, within a short export timeout here. */
	o.timeout_ms = 1000;
	o.backoff_ms = 50;
	h = new_sink_opts(port, &o);
	capture_start(&cap);
	/* Transient: the processor would keep the span and call again. */
	assert_int_equal(http_sink_ops.export(h, &s, 1), -EAGAIN);
	log = capture_end(&cap);
	sink_stats(h, &st);
	http_sink_ops.free(h);

	snprintf(want, sizeof(want), "export to 'http://127.0.0.1:%d/v1/traces' failed: ", port);
	if (!strstr(log, want))
		fail_msg("want \"%s\" in the log, got \"%s\"", want, log);
	assert_non_null(strstr(log, "retrying in "));
	assert_true(st.retries >= 1);
	assert_null(strstr(log, "sekret"));
	free(log);
	span__free(s);
}

/* The whole path: exporter thread, batching, HTTP sink, a receiver decoding protobuf. */
static void test_export__exporter_over_http(void **state)
{
	struct srv_resp resp[1] = { { .status = 200, .body = "" } };
	struct exporter_opts o = { .max_queue = 16, .max_batch = 16, .delay_ms = 600000 };
	uint8_t ids[3][8];
	struct exporter_stats st;
	struct exporter *e;
	struct server srv;
	pb_request *req;
	struct span *s;
	size_t i;

	(void)state;
	server_start(&srv, resp, 1);
	o.ops = &http_sink_ops;
	o.ctx = new_sink(srv.port);
	e = exporter__new(&o);
	assert_non_null(e);
	for (i = 0; i < 3; i++) {
		s = make_named_span(NULL, "GET /");
		memcpy(ids[i], s->span_id, 8);
		assert_int_equal(exporter__submit(e, s), 0);
	}
	exporter__shutdown(e);
	exporter__stats(e, &st);
	exporter__free(e);
	server_join(&srv);

	assert_int_equal(st.exported, 3);
	assert_int_equal(srv.nreqs, 1);
	req = opentelemetry__proto__collector__trace__v1__export_trace_service_request__unpack(
		NULL, srv.reqs[0].body_len, srv.reqs[0].body);
	assert_non_null(req);
	assert_int_equal(req->n_resource_spans, 1);
	assert_int_equal(req->resource_spans[0]->scope_spans[0]->n_spans, 3);
	for (i = 0; i < 3; i++)
		assert_memory_equal(req->resource_spans[0]->scope_spans[0]->spans[i]->span_id.data,
				    ids[i], 8);
	opentelemetry__proto__collector__trace__v1__export_trace_service_request__free_unpacked(
		req, NULL);
	server_free(&srv);
}

static void test_export__http_sink_rejects_bad_header(void **state)
{
	const struct header_kv bad[] = { { .key = "X-Ok", .value = "a\r\nInjected: 1" } };
	struct http_sink_opts o = {
		.url = "http://127.0.0.1:1/v1/traces",
		.headers = bad,
		.nheaders = 1,
		.timeout_ms = 1000,
	};
	struct test_capture cap;
	char *log;

	(void)state;
	capture_start(&cap);
	errno = 0;
	assert_null(http_sink__new(&o));
	log = capture_end(&cap);
	assert_int_equal(errno, EINVAL);
	assert_non_null(strstr(log, "header 'X-Ok'"));
	assert_null(strstr(log, "Injected"));
	free(log);
}

/* Plain http to another host is warned about once, at start; loopback and https are not. */
static void test_export__cleartext_warning(void **state)
{
	static const struct {
		const char *url;
		bool warned;
	} cases[] = {
		{ "http://10.1.2.3:4318/v1/traces", true },
		{ "http://collector.example:4318/v1/traces", true },
		{ "HTTP://[2001:db8::1]:4318/v1/traces", true },
		{ "http://127.0.0.1:4318/v1/traces", false },
		{ "http://127.8.9.10/v1/traces", false },
		{ "http://localhost:4318/v1/traces", false },
		{ "http://[::1]:4318/v1/traces", false },
		{ "https://collector.example/v1/traces", false },
	};
	struct test_capture cap;
	struct http_sink_opts o = { .timeout_ms = 1000 };
	size_t i;
	char *log;
	void *h;

	(void)state;
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		o.url = cases[i].url;
		capture_start(&cap);
		h = http_sink__new(&o);
		log = capture_end(&cap);
		assert_non_null(h);
		http_sink_ops.free(h);
		if (cases[i].warned != !!strstr(log, "unencrypted"))
			fail_msg("%s: want %s, log \"%s\"", cases[i].url,
				 cases[i].warned ? "a warning" : "no warning", log);
		free(log);
	}
}

/* ---- retries, partial success, gzip ------------------------------------------------------ */

static void test_export__http_retry_after(void **state)
{
	const struct srv_resp resp[2] = {
		{ .status = 503, .body = "busy", .headers = "Retry-After: 1\r\n" },
		{ .status = 200, .body = "" },
	};
	struct http_sink_opts o = { .backoff_ms = 20 };
	struct exporter_stats st;
	struct test_capture cap;
	struct server srv;
	struct span *s;
	long long t0, took;
	char *log;
	void *h;

	(void)state;
	server_start(&srv, resp, 2);
	s = make_named_span(NULL, "GET /");
	/* A backoff of 20 ms: only the server's Retry-After can make the wait about a second. */
	h = new_sink_opts(srv.port, &o);
	capture_start(&cap);
	t0 = mono_ms();
	assert_int_equal(http_sink_ops.export(h, &s, 1), 0);
	took = mono_ms() - t0;
	log = capture_end(&cap);
	sink_stats(h, &st);
	http_sink_ops.free(h);
	server_join(&srv);

	assert_int_equal(srv.nreqs, 2);
	assert_body_holds(&srv.reqs[1], &s, 1);
	assert_int_equal(st.retries, 1);
	if (took < 950 || took >= WAIT_SEC * 1000)
		fail_msg("retried after %lld ms, want about 1000 (Retry-After: 1)", took);
	if (!strstr(log, "HTTP 503: busy; retrying in 1000 ms"))
		fail_msg("want the 503 and the wait in the log, got \"%s\"", log);
	free(log);
	server_free(&srv);
	span__free(s);
}

static void test_export__http_400_not_retried(void **state)
{
	const struct srv_resp resp[1] = { { .status = 400, .body = "bad request" } };
	struct exporter_opts eo = { .max_queue = 8, .max_batch = 8, .delay_ms = 600000 };
	struct http_sink_opts o = { .backoff_ms = 20 };
	struct exporter_stats st;
	struct test_capture cap;
	struct exporter *e;
	struct server srv;
	char *log;
	int i;

	(void)state;
	server_start(&srv, resp, 1);
	eo.ops = &http_sink_ops;
	eo.ctx = new_sink_opts(srv.port, &o);
	e = exporter__new(&eo);
	assert_non_null(e);
	capture_start(&cap);
	for (i = 0; i < 3; i++)
		assert_int_equal(exporter__submit(e, make_named_span(NULL, "GET /")), 0);
	exporter__shutdown(e);
	log = capture_end(&cap);
	exporter__stats(e, &st);
	exporter__free(e);
	server_join(&srv);

	assert_int_equal(srv.nreqs, 1);
	assert_int_equal(st.retries, 0);
	assert_int_equal(st.exported, 0);
	assert_int_equal(st.export_failures, 1);
	assert_int_equal(st.dropped_export_failed, 3);
	assert_non_null(strstr(log, "HTTP 400: bad request"));
	assert_null(strstr(log, "retrying"));
	free(log);
	server_free(&srv);
}

static void test_export__http_refused_then_up(void **state)
{
	const struct srv_resp resp[1] = { { .status = 200, .body = "" } };
	struct exporter_opts eo = { .max_queue = 8, .max_batch = 8, .delay_ms = 20 };
	struct http_sink_opts o = { .backoff_ms = 100 };
	struct timespec nap = { .tv_nsec = 300 * 1000000L };
	struct exporter_stats st;
	struct test_capture cap;
	struct exporter *e;
	struct server srv;
	char *log;

	(void)state;
	server_bind(&srv, resp, 1); /* bound, not listening: connections are refused */
	eo.ops = &http_sink_ops;
	eo.ctx = new_sink_opts(srv.port, &o);
	e = exporter__new(&eo);
	assert_non_null(e);
	capture_start(&cap);
	assert_int_equal(exporter__submit(e, make_named_span(NULL, "GET /")), 0);
	nanosleep(&nap, NULL);
	server_listen(&srv);
	/* Before shutdown, which would end the retries: the backoff alone must deliver it. */
	wait_exported(e, 1, &st);
	log = capture_end(&cap);
	exporter__free(e);
	server_join(&srv);

	assert_int_equal(srv.nreqs, 1);
	assert_true(st.retries >= 1);
	assert_int_equal(st.dropped_export_failed, 0);
	assert_non_null(strstr(log, "retrying in "));
	free(log);
	server_free(&srv);
}

static void test_export__http_gzip(void **state)
{
	const struct srv_resp resp[1] = { { .status = 200, .body = "" } };
	struct http_sink_opts o = { .gzip = true };
	struct srv_req plain = {};
	struct span *spans[2];
	struct server srv;
	z_stream zs = {};
	size_t cap = 1 << 20;
	void *h;

	(void)state;
	server_start(&srv, resp, 1);
	spans[0] = make_named_span(NULL, "GET /items/{id}");
	spans[1] = make_named_span(NULL, "POST /cart");
	h = new_sink_opts(srv.port, &o);
	assert_int_equal(http_sink_ops.export(h, spans, 2), 0);
	http_sink_ops.free(h);
	server_join(&srv);

	assert_int_equal(srv.nreqs, 1);
	assert_string_equal(srv.reqs[0].content_encoding, "gzip");
	/* The gzip magic, then inflated with zlib's own gzip decoder (15 + 16: gzip only). */
	assert_true(srv.reqs[0].body_len > 18);
	assert_int_equal(srv.reqs[0].body[0], 0x1f);
	assert_int_equal(srv.reqs[0].body[1], 0x8b);
	plain.body = malloc(cap);
	assert_non_null(plain.body);
	assert_int_equal(inflateInit2(&zs, 15 + 16), Z_OK);
	zs.next_in = srv.reqs[0].body;
	zs.avail_in = srv.reqs[0].body_len;
	zs.next_out = plain.body;
	zs.avail_out = cap;
	assert_int_equal(inflate(&zs, Z_FINISH), Z_STREAM_END);
	assert_int_equal(zs.avail_in, 0);
	plain.body_len = zs.total_out;
	inflateEnd(&zs);
	assert_body_holds(&plain, spans, 2);

	free(plain.body);
	server_free(&srv);
	span__free(spans[0]);
	span__free(spans[1]);
}

static void test_export__http_partial_success(void **state)
{
	Opentelemetry__Proto__Collector__Trace__V1__ExportTraceServiceResponse pr =
		OPENTELEMETRY__PROTO__COLLECTOR__TRACE__V1__EXPORT_TRACE_SERVICE_RESPONSE__INIT;
	Opentelemetry__Proto__Collector__Trace__V1__ExportTracePartialSuccess ps =
		OPENTELEMETRY__PROTO__COLLECTOR__TRACE__V1__EXPORT_TRACE_PARTIAL_SUCCESS__INIT;
	static uint8_t body[256];
	struct srv_resp resp[1] = { { .status = 200, .body = (const char *)body } };
	struct exporter_stats st;
	struct test_capture cap;
	struct span *spans[3];
	struct server srv;
	char *log;
	size_t i;
	void *h;

	(void)state;
	ps.rejected_spans = 2;
	ps.error_message = "span too large\n";
	pr.partial_success = &ps;
	assert_true(pb_response_size(&pr) <= sizeof(body));
	resp[0].body_len = pb_response_pack(&pr, body);
	server_start(&srv, resp, 1);
	for (i = 0; i < 3; i++)
		spans[i] = make_named_span(NULL, "GET /");
	h = new_sink(srv.port);
	capture_start(&cap);
	assert_int_equal(http_sink_ops.export(h, spans, 3), 0); /* the rest was accepted */
	log = capture_end(&cap);
	sink_stats(h, &st);
	http_sink_ops.free(h);
	server_join(&srv);

	assert_int_equal(st.rejected, 2);
	assert_int_equal(st.retries, 0);
	if (!strstr(log, "rejected 2 of 3 spans: span too large?"))
		fail_msg("want the partial success in the log, got \"%s\"", log);
	free(log);
	server_free(&srv);
	for (i = 0; i < 3; i++)
		span__free(spans[i]);
}

/* With http/json the answer is OTLP/JSON, its int64 written as a string. */
static void test_export__http_json_partial_success(void **state)
{
	static const char body[] =
		"{\"partialSuccess\":{\"rejectedSpans\":\"1\",\"errorMessage\":\"no\\tname\"}}";
	struct srv_resp resp[1] = { { .status = 200, .body = body } };
	struct http_sink_opts o = { .json = true };
	struct exporter_stats st;
	struct test_capture cap;
	struct span *spans[2];
	struct server srv;
	char *log;
	size_t i;
	void *h;

	(void)state;
	server_start(&srv, resp, 1);
	for (i = 0; i < 2; i++)
		spans[i] = make_named_span(NULL, "GET /");
	h = new_sink_opts(srv.port, &o);
	capture_start(&cap);
	assert_int_equal(http_sink_ops.export(h, spans, 2), 0);
	log = capture_end(&cap);
	sink_stats(h, &st);
	http_sink_ops.free(h);
	server_join(&srv);

	assert_int_equal(st.rejected, 1);
	if (!strstr(log, "rejected 1 of 2 spans: no?name"))
		fail_msg("want the JSON partial success in the log, got \"%s\"", log);
	assert_string_equal(srv.reqs[0].content_type, "application/json");
	free(log);
	server_free(&srv);
	for (i = 0; i < 2; i++)
		span__free(spans[i]);
}

/* ---- the metrics path ------------------------------------------------------------------- */

/* A batch of N points from a real store, N routes of one process; the store is gone after. */
static struct metrics_batch *make_metrics_batch(struct resource *res, int n)
{
	struct metrics *m = metrics__new(&(struct metrics_opts){
		.exemplars = METRIC_EXEMPLARS_ALWAYS_ON,
		.cardinality_limit = 2000,
	});
	struct metrics_batch *b;
	char route[32];
	int i;

	assert_non_null(m);
	for (i = 0; i < n; i++) {
		struct span *s = make_named_span(res, "GET");

		snprintf(route, sizeof(route), "/r%d", i);
		assert_int_equal(span__set_str(s, SC_HTTP_ROUTE, route, strlen(route)), 0);
		assert_int_equal(span__set_str(s, SC_HTTP_REQUEST_METHOD, "GET", 3), 0);
		metrics__record_span(m, s, true);
		span__free(s);
	}
	b = metrics__collect(m, 1700000060000000000ULL, false);
	assert_non_null(b);
	assert_int_equal(b->n, (size_t)n);
	metrics__free(m);
	return b;
}

#define metrics_response_(fn)                                                                      \
	opentelemetry__proto__collector__metrics__v1__export_metrics_service_response__##fn

/* A metrics sink for 127.0.0.1:PORT/v1/metrics with O's settings and the test headers. */
static void *new_metrics_sink(int port, struct http_sink_opts *o)
{
	char url[128];
	void *h;

	snprintf(url, sizeof(url), "http://127.0.0.1:%d/v1/metrics", port);
	o->url = url;
	o->headers = test_headers;
	o->nheaders = 2;
	o->metrics = true;
	if (!o->timeout_ms)
		o->timeout_ms = WAIT_SEC * 1000;
	h = http_sink__new(o);
	assert_non_null(h);
	return h;
}

static struct resource *metrics_resource(void)
{
	struct resource *res = resource__new();

	assert_non_null(res);
	assert_int_equal(resource__set_str(res, SC_SERVICE_NAME, "checkout"), 0);
	return res;
}

static void test_export__http_metrics_round_trip(void **state)
{
	const struct srv_resp resp[1] = { { .status = 200, .body = "" } };
	Opentelemetry__Proto__Collector__Metrics__V1__ExportMetricsServiceRequest *req;
	const Opentelemetry__Proto__Metrics__V1__Metric *m;
	struct http_sink_opts o = {};
	struct resource *res = metrics_resource();
	struct metrics_batch *b = make_metrics_batch(res, 3);
	struct exporter_stats st;
	struct server srv;
	void *h;

	(void)state;
	server_start(&srv, resp, 1);
	h = new_metrics_sink(srv.port, &o);
	assert_int_equal(http_sink_ops.export_metrics(h, b), 0);
	sink_stats(h, &st);
	http_sink_ops.free(h);
	server_join(&srv);

	assert_int_equal(srv.nreqs, 1);
	assert_string_equal(srv.reqs[0].method, "POST");
	assert_string_equal(srv.reqs[0].path, "/v1/metrics");
	assert_string_equal(srv.reqs[0].content_type, "application/x-protobuf");
	assert_string_equal(srv.reqs[0].api_key, "sekret-value-42");
	assert_true(srv.reqs[0].has_empty);
	req = opentelemetry__proto__collector__metrics__v1__export_metrics_service_request__unpack(
		NULL, srv.reqs[0].body_len, srv.reqs[0].body);
	assert_non_null(req);
	assert_int_equal(req->n_resource_metrics, 1);
	assert_string_equal(req->resource_metrics[0]->resource->attributes[0]->value->string_value,
			    "checkout");
	assert_int_equal(req->resource_metrics[0]->scope_metrics[0]->n_metrics, 1);
	m = req->resource_metrics[0]->scope_metrics[0]->metrics[0];
	assert_string_equal(m->name, "http.server.request.duration");
	assert_int_equal(m->histogram->n_data_points, 3);
	assert_int_equal(m->histogram->data_points[0]->n_exemplars, 1);
	opentelemetry__proto__collector__metrics__v1__export_metrics_service_request__free_unpacked(
		req, NULL);
	assert_int_equal(st.retries, 0);
	assert_int_equal(st.rejected, 0);
	server_free(&srv);
	metrics_batch__free(b);
	resource__free(res);
}

/* An ExportMetricsServiceResponse's partial success: rejected_data_points counted. */
static void test_export__http_metrics_partial_success(void **state)
{
	Opentelemetry__Proto__Collector__Metrics__V1__ExportMetricsServiceResponse pr =
		OPENTELEMETRY__PROTO__COLLECTOR__METRICS__V1__EXPORT_METRICS_SERVICE_RESPONSE__INIT;
	Opentelemetry__Proto__Collector__Metrics__V1__ExportMetricsPartialSuccess ps =
		OPENTELEMETRY__PROTO__COLLECTOR__METRICS__V1__EXPORT_METRICS_PARTIAL_SUCCESS__INIT;
	static uint8_t body[256];
	struct srv_resp resp[1] = { { .status = 200, .body = (const char *)body } };
	struct http_sink_opts o = {};
	struct resource *res = metrics_resource();
	struct metrics_batch *b = make_metrics_batch(res, 3);
	struct exporter_stats st;
	struct test_capture cap;
	struct server srv;
	char *log;
	void *h;

	(void)state;
	ps.rejected_data_points = 2;
	ps.error_message = "too many points\n";
	pr.partial_success = &ps;
	assert_true(metrics_response_(get_packed_size)(&pr) <= sizeof(body));
	resp[0].body_len = metrics_response_(pack)(&pr, body);
	server_start(&srv, resp, 1);
	h = new_metrics_sink(srv.port, &o);
	capture_start(&cap);
	assert_int_equal(http_sink_ops.export_metrics(h, b), 0); /* the rest was accepted */
	log = capture_end(&cap);
	sink_stats(h, &st);
	http_sink_ops.free(h);
	server_join(&srv);

	assert_int_equal(st.rejected, 2);
	assert_int_equal(st.retries, 0);
	if (!strstr(log, "rejected 2 of 3 metric points: too many points?"))
		fail_msg("want the partial success in the log, got \"%s\"", log);
	free(log);
	server_free(&srv);
	metrics_batch__free(b);
	resource__free(res);
}

/* With http/json: an OTLP/JSON body, and rejectedDataPoints (not rejectedSpans) counted. */
static void test_export__http_metrics_json(void **state)
{
	const struct srv_resp resp[2] = {
		{ .status = 200,
		  .body = "{\"partialSuccess\":{\"rejectedDataPoints\":\"1\","
			  "\"errorMessage\":\"duplicate\"}}" },
		{ .status = 200, .body = "{\"partialSuccess\":{\"rejectedSpans\":\"5\"}}" },
	};
	struct http_sink_opts o = { .json = true };
	struct resource *res = metrics_resource();
	struct metrics_batch *b = make_metrics_batch(res, 3);
	struct exporter_stats st;
	struct test_capture cap;
	struct server srv;
	const cJSON *rms;
	cJSON *doc;
	char *log;
	void *h;

	(void)state;
	server_start(&srv, resp, 2);
	h = new_metrics_sink(srv.port, &o);
	capture_start(&cap);
	assert_int_equal(http_sink_ops.export_metrics(h, b), 0);
	assert_int_equal(http_sink_ops.export_metrics(h, b), 0);
	log = capture_end(&cap);
	sink_stats(h, &st);
	http_sink_ops.free(h);
	server_join(&srv);

	assert_int_equal(st.rejected, 1);
	if (!strstr(log, "rejected 1 of 3 metric points: duplicate"))
		fail_msg("want the JSON partial success in the log, got \"%s\"", log);
	assert_string_equal(srv.reqs[0].path, "/v1/metrics");
	assert_string_equal(srv.reqs[0].content_type, "application/json");
	doc = cJSON_ParseWithLength((const char *)srv.reqs[0].body, srv.reqs[0].body_len);
	assert_non_null(doc);
	rms = cJSON_GetObjectItemCaseSensitive(doc, "resourceMetrics");
	assert_int_equal(cJSON_GetArraySize(rms), 1);
	cJSON_Delete(doc);
	free(log);
	server_free(&srv);
	metrics_batch__free(b);
	resource__free(res);
}

/* How many times NEEDLE occurs in HAYSTACK. */
static int occurrences(const char *haystack, const char *needle)
{
	int n = 0;

	for (const char *p = haystack; (p = strstr(p, needle)); p += strlen(needle))
		n++;
	return n;
}

/*
 * A metrics endpoint that keeps failing the same way (a backend that takes no metrics) is said
 * once, then at debug level, though its answers differ in their details (a request id); another
 * failure is said, and so is the recovery.
 */
static void test_export__http_metrics_failure_said_once(void **state)
{
	const struct srv_resp resp[4] = {
		{ .status = 400, .body = "bad request id=1" },
		{ .status = 400, .body = "bad request id=2" },
		{ .status = 404, .body = "no metrics here" },
		{ .status = 200, .body = "" },
	};
	struct http_sink_opts o = {};
	struct resource *res = metrics_resource();
	struct metrics_batch *b = make_metrics_batch(res, 1);
	struct test_capture cap;
	struct server srv;
	char *log;
	void *h;

	(void)state;
	server_start(&srv, resp, 4);
	h = new_metrics_sink(srv.port, &o);
	capture_start(&cap);
	assert_int_equal(http_sink_ops.export_metrics(h, b), -EIO);
	assert_int_equal(http_sink_ops.export_metrics(h, b), -EIO);
	assert_int_equal(http_sink_ops.export_metrics(h, b), -EIO);
	assert_int_equal(http_sink_ops.export_metrics(h, b), 0);
	log = capture_end(&cap);
	http_sink_ops.free(h);
	server_join(&srv);

	if (occurrences(log, "failed") != 2 || !strstr(log, "HTTP 400: bad request id=1") ||
	    strstr(log, "id=2") || !strstr(log, "HTTP 404: no metrics here; 1 metric points") ||
	    !strstr(log, "works again"))
		fail_msg("want the 400 once, the 404, and the recovery; got \"%s\"", log);
	free(log);
	server_free(&srv);
	metrics_batch__free(b);
	resource__free(res);
}

/* A collector that never answers: the same failure every time, said once, however long it took. */
static void test_export__http_metrics_timeout_said_once(void **state)
{
	struct sockaddr_in a = { .sin_family = AF_INET };
	struct http_sink_opts o = { .timeout_ms = 50, .backoff_ms = 1 };
	struct resource *res = metrics_resource();
	struct metrics_batch *b = make_metrics_batch(res, 1);
	socklen_t alen = sizeof(a);
	struct test_capture cap;
	int fd, i;
	char *log;
	void *h;

	(void)state;
	/* Listening, never accepting: connections complete and requests are never answered. */
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	assert_true(fd >= 0);
	assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0);
	assert_int_equal(getsockname(fd, (struct sockaddr *)&a, &alen), 0);
	assert_int_equal(listen(fd, 64), 0);
	h = new_metrics_sink(ntohs(a.sin_port), &o);
	capture_start(&cap);
	for (i = 0; i < 8; i++)
		assert_int_equal(http_sink_ops.export_metrics(h, b), -EAGAIN);
	log = capture_end(&cap);
	http_sink_ops.free(h);
	close(fd);

	if (occurrences(log, "failed") != 1)
		fail_msg("want the time-out said once in 8 exports, got \"%s\"", log);
	free(log);
	metrics_batch__free(b);
	resource__free(res);
}

/* A metrics sink's cleartext warning is about metric points, not spans. */
static void test_export__http_metrics_cleartext_warning(void **state)
{
	struct http_sink_opts o = {
		.url = "http://collector.example:4318/v1/metrics",
		.timeout_ms = 1000,
		.metrics = true,
	};
	struct test_capture cap;
	char *log;
	void *h;

	(void)state;
	capture_start(&cap);
	h = http_sink__new(&o);
	log = capture_end(&cap);
	assert_non_null(h);
	http_sink_ops.free(h);
	if (!strstr(log, "metric points go to 'http://collector.example:4318/v1/metrics' "
			 "unencrypted"))
		fail_msg("want the warning about metric points, got \"%s\"", log);
	free(log);
}

static void test_export__shutdown_ends_backoff(void **state)
{
	const struct srv_resp resp[1] = {
		{ .status = 503, .body = "", .headers = "Retry-After: 60\r\n" },
	};
	struct exporter_opts eo = { .max_queue = 8, .max_batch = 8, .delay_ms = 20 };
	/* A long timeout, so the 60 s wait is allowed and only the shutdown can end it. */
	struct http_sink_opts o = { .timeout_ms = 120000 };
	struct timespec nap = { .tv_nsec = 1000000 };
	struct exporter_stats st;
	struct test_capture cap;
	struct exporter *e;
	struct server srv;
	long long t0, took;
	char *log;
	int i;

	(void)state;
	server_start(&srv, resp, 1);
	eo.ops = &http_sink_ops;
	eo.ctx = new_sink_opts(srv.port, &o);
	e = exporter__new(&eo);
	assert_non_null(e);
	capture_start(&cap);
	assert_int_equal(exporter__submit(e, make_named_span(NULL, "GET /")), 0);
	for (i = 0; i < WAIT_SEC * 1000 && !__atomic_load_n(&srv.nreqs, __ATOMIC_SEQ_CST); i++)
		nanosleep(&nap, NULL);
	t0 = mono_ms();
	exporter__shutdown(e);
	took = mono_ms() - t0;
	log = capture_end(&cap);
	exporter__stats(e, &st);
	exporter__free(e);
	server_join(&srv);

	assert_int_equal(srv.nreqs, 1);
	if (took >= WAIT_SEC * 1000)
		fail_msg("shutdown took %lld ms during a 60 s backoff", took);
	assert_int_equal(st.exported, 0);
	assert_int_equal(st.dropped_export_failed, 1);
	assert_int_equal(st.retries, 0);
	assert_non_null(strstr(log, "shutting down"));
	free(log);
	server_free(&srv);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_export__queue_full_drops_and_counts),
		cmocka_unit_test(test_export__submit_many),
		cmocka_unit_test(test_export__batches_by_size),
		cmocka_unit_test(test_export__delay_flush),
		cmocka_unit_test(test_export__shutdown_drains),
		cmocka_unit_test(test_export__failed_export_counts),
		cmocka_unit_test(test_export__new_rejects_bad_opts),
		cmocka_unit_test(test_export__thread_blocks_termination_signals),
		cmocka_unit_test(test_export__abandon_gives_up_what_is_left),
		cmocka_unit_test(test_export__abandon_waits_out_the_grace),
		cmocka_unit_test(test_export__http_round_trip),
		cmocka_unit_test(test_export__http_connection_refused),
		cmocka_unit_test(test_export__exporter_over_http),
		cmocka_unit_test(test_export__http_sink_rejects_bad_header),
		cmocka_unit_test(test_export__http_retry_after),
		cmocka_unit_test(test_export__http_400_not_retried),
		cmocka_unit_test(test_export__http_refused_then_up),
		cmocka_unit_test(test_export__http_gzip),
		cmocka_unit_test(test_export__http_partial_success),
		cmocka_unit_test(test_export__http_json_partial_success),
		cmocka_unit_test(test_export__cleartext_warning),
		cmocka_unit_test(test_export__shutdown_ends_backoff),
		cmocka_unit_test(test_export__transient_failure_keeps_batch),
		cmocka_unit_test(test_export__transient_failure_bounded_and_dropped_at_exit),
		cmocka_unit_test(test_export__http_metrics_round_trip),
		cmocka_unit_test(test_export__http_metrics_partial_success),
		cmocka_unit_test(test_export__http_metrics_json),
		cmocka_unit_test(test_export__http_metrics_failure_said_once),
		cmocka_unit_test(test_export__http_metrics_timeout_said_once),
		cmocka_unit_test(test_export__http_metrics_cleartext_warning),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
