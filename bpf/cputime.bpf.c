// SPDX-License-Identifier: GPL-2.0
/*
 * On-CPU time per goroutine (--cpu-time): the time its thread was on a CPU while the goroutine
 * was the one it ran. Two layers switch what runs. Go's scheduler puts a goroutine on a thread
 * in runtime.execute and takes it off by calling runtime.schedule (every way off, a park, a
 * yield, a preemption, an exit, a syscall that lost its P, goes through it); the kernel takes
 * the thread itself off its CPU and back (sched_switch), in a blocking syscall or when another
 * task preempts it. A goroutine's clock (gclocks) runs only while both say it runs.
 *
 * Two uprobe hits per scheduling round, both on emulated instructions, where probing the state
 * changes themselves (runtime.casgstatus) cost about eight, a system call two of them. The
 * tracepoint costs no trap. Only goroutines that had a span are followed: they have a clock, and
 * gthreads says which of them each thread runs (probe.bpf.h).
 */
#include "probe.bpf.h"

#include <bpf/bpf_tracing.h>

/* The fields the switch reads; CO-RE finds them in the running kernel's task_struct. */
struct sched_entity {
	__u64 sum_exec_runtime;
} __attribute__((preserve_access_index));

struct task_struct {
	int pid;
	int tgid;
	struct sched_entity se;
} __attribute__((preserve_access_index));

/* The thread entry T, if it names a goroutine of process TGID: the thread is not reused. */
static __always_inline bool runs_one(const struct gclock_key *t, __u32 tgid)
{
	return t && t->g && t->pid == tgid;
}

/*
 * Pauses clock T at NOW. RUNTIME: the thread's runtime by the kernel's count, where it is exact
 * (at its switch off a CPU), else 0. A clock that ran from the thread's switch onto the CPU to its
 * switch off counts what the kernel counts: under a storm of wakeups the kernel ends a preempted
 * thread's slice when the wakeup asks for the switch, microseconds before it happens, and a slice
 * of tens of microseconds by the clock was 15 to 35 % longer than the thread's runtime.
 */
static __always_inline void clock_stop(const struct gclock_key *t, __u64 now, __u64 runtime)
{
	struct gclock *c = bpf_map_lookup_elem(&gclocks, t);

	if (!c || !c->running)
		return;
	if (runtime && c->base_runtime && runtime >= c->base_runtime)
		c->total_ns += runtime - c->base_runtime;
	else
		c->total_ns += now - c->since_ns;
	c->running = 0;
}

/* Restarts clock T at NOW, the thread's switch onto a CPU, its runtime then RUNTIME. */
static __always_inline void clock_start(const struct gclock_key *t, __u64 now, __u64 runtime)
{
	struct gclock *c = bpf_map_lookup_elem(&gclocks, t);

	if (c && !c->running)
		gclock_run(c, now, runtime);
}

/*
 * runtime.execute(gp *g, inheritTime bool), past its stack check: GP runs on this thread from
 * now. A clock still running (park_m runs a goroutine whose unlock function failed again at
 * once, without runtime.schedule) keeps what it counted.
 */
SEC("uprobe")
int cpu_execute(GO_REGS *ctx)
{
	__u64 id = bpf_get_current_pid_tgid();
	struct gclock_key key = {.pid = id >> 32, .g = go_arg(ctx, 1)};
	struct gclock *c;
	__u64 now;

	c = bpf_map_lookup_elem(&gclocks, &key);
	if (!c)
		return 0;
	now = bpf_ktime_get_ns();
	if (c->running)
		c->total_ns += now - c->since_ns;
	gclock_run(c, now, 0);
	gthread_set((__u32)id, &key);
	return 0;
}

/* runtime.schedule(), past its stack check: the goroutine this thread ran is off it. */
SEC("uprobe")
int cpu_schedule(GO_REGS *ctx)
{
	__u64 id = bpf_get_current_pid_tgid();
	__u32 tid = (__u32)id;
	struct gclock_key *t;

	t = bpf_map_lookup_elem(&gthreads, &tid);
	if (!runs_one(t, id >> 32))
		return 0;
	clock_stop(t, bpf_ktime_get_ns(), 0);
	t->g = 0;
	return 0;
}

/* The kernel switches threads: PREV's goroutine stops counting, NEXT's starts again. */
SEC("tp_btf/sched_switch")
int BPF_PROG(cpu_switch, bool preempt, struct task_struct *prev, struct task_struct *next)
{
	__u32 prev_tid = prev->pid, next_tid = next->pid;
	struct gclock_key *t;
	__u64 now = 0;

	t = bpf_map_lookup_elem(&gthreads, &prev_tid);
	if (runs_one(t, prev->tgid)) {
		now = bpf_ktime_get_ns();
		clock_stop(t, now, prev->se.sum_exec_runtime);
	}
	t = bpf_map_lookup_elem(&gthreads, &next_tid);
	if (runs_one(t, next->tgid))
		clock_start(t, now ?: bpf_ktime_get_ns(), next->se.sum_exec_runtime);
	return 0;
}
