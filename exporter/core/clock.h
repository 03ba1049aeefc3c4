/* SPDX-License-Identifier: MIT */
/*
 * BPF timestamps are CLOCK_MONOTONIC (bpf_ktime_get_ns); spans need UNIX time. The offset between
 * the two clocks is taken from tight paired readings and refreshed, so NTP steps are followed.
 */
#ifndef GOSPAN_CLOCK_H
#define GOSPAN_CLOCK_H

#include <stdint.h>

struct clock_sync {
	int64_t offset_ns;    /* CLOCK_REALTIME - CLOCK_MONOTONIC */
	uint64_t error_ns;    /* half the monotonic gap of the best reading pair: the uncertainty */
	uint64_t synced_mono; /* CLOCK_MONOTONIC when last synced */
};

/* Takes several paired readings and keeps the tightest. -errno when a clock cannot be read. */
int clock__sync(struct clock_sync *c);
/* Re-syncs when INTERVAL_NS have passed since the last sync. */
int clock__maybe_resync(struct clock_sync *c, uint64_t interval_ns);
uint64_t clock__to_unix_ns(const struct clock_sync *c, uint64_t mono_ns);
uint64_t clock__mono_now(void);
/* UNIX time now, ns: when metric points are collected. */
uint64_t clock__unix_now(void);

#endif
