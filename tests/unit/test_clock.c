// SPDX-License-Identifier: MIT
/*
 * Unit tests for clock.c against the kernel's own clocks: the offset must match a reading of
 * CLOCK_REALTIME - CLOCK_MONOTONIC taken independently here, the stated error must be small, and
 * converting "now" must land next to CLOCK_REALTIME. Bounds are loose enough for a busy CI host
 * and still far tighter than any real bug (a wrong sign or unit is off by seconds or more).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdlib.h>
#include <time.h>

#include <cmocka.h>

#include "core/clock.h"

#define NSEC_PER_USEC 1000LL
#define NSEC_PER_MSEC 1000000LL

static int64_t read_ns(clockid_t id)
{
	struct timespec ts;

	assert_int_equal(clock_gettime(id, &ts), 0);
	return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static int64_t abs64(int64_t v)
{
	return v < 0 ? -v : v;
}

static void test_clock__offset_matches_kernel_clocks(void **state)
{
	struct clock_sync c = {};
	int64_t mono, real, expect;

	(void)state;
	assert_int_equal(clock__sync(&c), 0);
	mono = read_ns(CLOCK_MONOTONIC);
	real = read_ns(CLOCK_REALTIME);
	expect = real - mono;
	/* Both readings sit microseconds apart; a millisecond only leaves room for preemption. */
	if (abs64(c.offset_ns - expect) > NSEC_PER_MSEC)
		fail_msg("offset %lld ns, kernel clocks say %lld ns", (long long)c.offset_ns,
			 (long long)expect);
	assert_true(c.offset_ns > 0); /* the epoch is long before boot */
}

static void test_clock__error_is_small(void **state)
{
	struct clock_sync c = {};

	(void)state;
	assert_int_equal(clock__sync(&c), 0);
	/* Eight tries keep the tightest bracket; one untouched by preemption is well under this. */
	if (c.error_ns >= 100 * NSEC_PER_USEC)
		fail_msg("error %llu ns, expected < 100 us", (unsigned long long)c.error_ns);
	assert_true(c.synced_mono > 0);
	assert_true(c.synced_mono <= (uint64_t)read_ns(CLOCK_MONOTONIC));
}

static void test_clock__now_converts_to_realtime(void **state)
{
	struct clock_sync c = {};
	int64_t real_before, real_after, got;

	(void)state;
	assert_int_equal(clock__sync(&c), 0);
	real_before = read_ns(CLOCK_REALTIME);
	got = (int64_t)clock__to_unix_ns(&c, clock__mono_now());
	real_after = read_ns(CLOCK_REALTIME);
	if (got < real_before - NSEC_PER_MSEC || got > real_after + NSEC_PER_MSEC)
		fail_msg("converted now %lld outside [%lld, %lld] +- 1 ms", (long long)got,
			 (long long)real_before, (long long)real_after);
}

/* A BPF timestamp from the past converts to the UNIX time it happened at. */
static void test_clock__past_timestamp(void **state)
{
	struct clock_sync c = {};
	int64_t mono, real;

	(void)state;
	mono = read_ns(CLOCK_MONOTONIC);
	real = read_ns(CLOCK_REALTIME);
	assert_int_equal(clock__sync(&c), 0);
	assert_true(abs64((int64_t)clock__to_unix_ns(&c, mono) - real) < NSEC_PER_MSEC);
}

static void test_clock__maybe_resync(void **state)
{
	struct clock_sync c = {};
	uint64_t first;

	(void)state;
	assert_int_equal(clock__sync(&c), 0);
	first = c.synced_mono;
	/* Not due: nothing changes. */
	assert_int_equal(clock__maybe_resync(&c, 3600ULL * 1000000000ULL), 0);
	assert_int_equal(c.synced_mono, first);
	/* Due (interval 0 forces it): a fresh sync, later than the first. */
	assert_int_equal(clock__maybe_resync(&c, 0), 0);
	assert_true(c.synced_mono > first);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_clock__offset_matches_kernel_clocks),
		cmocka_unit_test(test_clock__error_is_small),
		cmocka_unit_test(test_clock__now_converts_to_realtime),
		cmocka_unit_test(test_clock__past_timestamp),
		cmocka_unit_test(test_clock__maybe_resync),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
