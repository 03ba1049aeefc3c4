// SPDX-License-Identifier: MIT
/*
 * Monotonic to UNIX time. A reading of CLOCK_REALTIME between two readings of CLOCK_MONOTONIC is
 * bracketed by them; the tightest bracket of several tries gives the offset with the least
 * uncertainty (a preemption between two reads only widens that one bracket).
 */
#include <errno.h>
#include <stdint.h>
#include <time.h>

#include "core/clock.h"

#define SYNC_TRIES 8

static uint64_t ts_ns(const struct timespec *ts)
{
	return (uint64_t)ts->tv_sec * 1000000000ULL + (uint64_t)ts->tv_nsec;
}

static uint64_t now_ns(clockid_t clock)
{
	struct timespec ts;

	/* These clocks cannot fail given a valid pointer; 0 makes a broken libc obvious. */
	if (clock_gettime(clock, &ts))
		return 0;
	return ts_ns(&ts);
}

uint64_t clock__mono_now(void)
{
	return now_ns(CLOCK_MONOTONIC);
}

uint64_t clock__unix_now(void)
{
	return now_ns(CLOCK_REALTIME);
}

int clock__sync(struct clock_sync *c)
{
	uint64_t a, b, gap, best_gap = UINT64_MAX;
	struct timespec m1, r, m2;
	int i;

	for (i = 0; i < SYNC_TRIES; i++) {
		if (clock_gettime(CLOCK_MONOTONIC, &m1) || clock_gettime(CLOCK_REALTIME, &r) ||
		    clock_gettime(CLOCK_MONOTONIC, &m2))
			return -errno;
		a = ts_ns(&m1);
		b = ts_ns(&m2);
		gap = b - a;
		if (gap < best_gap) {
			best_gap = gap;
			c->offset_ns = (int64_t)(ts_ns(&r) - (a + gap / 2));
			c->error_ns = gap / 2;
			c->synced_mono = b;
		}
	}
	return 0;
}

int clock__maybe_resync(struct clock_sync *c, uint64_t interval_ns)
{
	if (interval_ns && clock__mono_now() - c->synced_mono < interval_ns)
		return 0;
	return clock__sync(c);
}

uint64_t clock__to_unix_ns(const struct clock_sync *c, uint64_t mono_ns)
{
	/* Unsigned, so that a time no clock gives (a corrupt record) wraps instead of being UB. */
	return mono_ns + (uint64_t)c->offset_ns;
}
