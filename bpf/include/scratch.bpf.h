/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The claim on a per-CPU scratch buffer. Per-CPU is not "one program at a time": since Linux 6.0
 * a uprobe's program runs under migrate_disable() and RCU, not preempt_disable() (commit
 * 8c7dcb84e3b7, bpf_prog_run_array_uprobe(); uprobe_multi's uprobe_prog_run() alike), and an
 * sk_msg program under bpf_prog_run_pin_on_cpu(), which is migrate_disable() too. On a
 * preemptible kernel (CONFIG_PREEMPT, preempt=full or lazy, PREEMPT_RT) a program can be
 * preempted mid-run and another task's program run on the same CPU, with the same scratch. So
 * each scratch carries a busy word: a program claims it with one compare-and-swap before it
 * writes there and gives it back on every way out; one that finds it taken goes without and
 * counts that. On preempt=none the claim always succeeds and costs a locked instruction.
 */
#ifndef GOSPAN_SCRATCH_BPF_H
#define GOSPAN_SCRATCH_BPF_H

#include <stdbool.h>
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

/* True when BUSY was free and is now this program's. */
static __always_inline bool scratch_try_claim(__u64 *busy)
{
	return __sync_val_compare_and_swap(busy, 0, 1) == 0;
}

/* Gives BUSY back: every write to the scratch is done before the word says so. */
static __always_inline void scratch_unclaim(__u64 *busy)
{
	asm volatile("" ::: "memory");
	*(volatile __u64 *)busy = 0;
}

/*
 * This CPU's value of MAP, a per-CPU scratch array of one entry whose value begins with its busy
 * word, claimed; NULL when a program this one preempted holds it.
 */
#define scratch_take(map)                                                                          \
	({                                                                                         \
		__u32 __zero = 0;                                                                  \
		__u64 *__busy = bpf_map_lookup_elem(map, &__zero);                                 \
		(void *)(__busy && scratch_try_claim(__busy) ? __busy : NULL);                     \
	})

#endif
