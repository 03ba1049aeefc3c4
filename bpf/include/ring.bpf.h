/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The ring buffer records leave BPF through, and when a submit wakes the reader. Defined once, in
 * ring.bpf.c, which is linked into every object that writes records: gospan's uprobe object and
 * bench/feed's producer (whose ring buffer user space swaps for a running gospan's).
 */
#ifndef GOSPAN_RING_BPF_H
#define GOSPAN_RING_BPF_H

#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

struct events_map {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 2 << 20);
};

extern struct events_map events SEC(".maps");

/* Unconsumed bytes at which a submit wakes the reader; below it the reader polls on a timer. */
extern const volatile __u64 wake_threshold;

/* No wakeup per record: the wakeup costs more than the rest of the probe. */
static __always_inline __u64 submit_flags(void)
{
	return bpf_ringbuf_query(&events, BPF_RB_AVAIL_DATA) >= wake_threshold ?
		       BPF_RB_FORCE_WAKEUP :
		       BPF_RB_NO_WAKEUP;
}

#endif
