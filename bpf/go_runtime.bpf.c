// SPDX-License-Identifier: GPL-2.0
/*
 * Probes in the Go runtime that serve every family, linked with them into one object
 * (probe.bpf.h): runtime.newproc1 hands the span a goroutine works for to the goroutines it
 * starts, and runtime.casgstatus keeps, per goroutine with a span, how long it has been on a CPU
 * (--cpu-time): a span's on-CPU time is the difference between its start and its end
 * (gclock_now()). runtime.main's entry tells user space of a new process of the binary (--exe),
 * for the socket-layer writer of trace context.
 */
#include "probe.bpf.h"

/*
 * At runtime.newproc1's RETs, on the system stack: the new goroutine is its result, and it
 * records who started it (g.parentGoid, Go 1.21+). If the parent works for a span, so does the
 * child, MAX_GOROUTINE_DEPTH generations down at most.
 */
SEC("uprobe")
int goroutine_created(GO_REGS *ctx)
{
	const struct target_config *cfg;
	struct goroutine_key parent = {}, child = {};
	struct span_ctx *pctx, cctx;
	__u64 attach_cookie = bpf_get_attach_cookie(ctx);
	__u32 cookie = (__u32)attach_cookie, slot = COOKIE_RESULT_SLOT(attach_cookie);
	void *newg;

	cfg = bpf_map_lookup_elem(&targets, &cookie);
	if (!cfg || cfg->g_parent_goid < 0)
		return 0;
	newg = (void *)go_arg(ctx, slot ? slot : cfg->ret_newproc_g);
	if (!newg)
		return 0;
	parent.pid = child.pid = bpf_get_current_pid_tgid() >> 32;
	parent.goid = go_read_word(newg, cfg->g_parent_goid);
	pctx = active_get(&parent);
	if (!pctx || pctx->depth >= MAX_GOROUTINE_DEPTH)
		return 0;
	cctx = *pctx;
	cctx.depth++;
	child.goid = go_read_word(newg, cfg->g_goid);
	active_put(&child, &cctx);
	return 0;
}

/* Whether a goroutine in Go status S is using a CPU. */
static __always_inline bool on_cpu(__u32 s)
{
	return s == GO_STATUS_RUNNING || s == GO_STATUS_COPYSTACK;
}

/*
 * runtime.casgstatus(gp *g, oldval, newval uint32): every goroutine state change the scheduler
 * makes. Only changes onto or off a CPU matter, and they are told apart before any map lookup,
 * so the others cost the probe hit alone.
 */
SEC("uprobe")
int go_casgstatus(GO_REGS *ctx)
{
	__u32 cookie = (__u32)bpf_get_attach_cookie(ctx);
	__u32 oldval = (__u32)go_arg(ctx, 2), newval = (__u32)go_arg(ctx, 3);
	const struct target_config *cfg;
	struct goroutine_key key = {};
	struct gclock *c;
	__u64 now;

	if (on_cpu(oldval) == on_cpu(newval))
		return 0;
	cfg = bpf_map_lookup_elem(&targets, &cookie);
	if (!cfg)
		return 0;
	key.pid = bpf_get_current_pid_tgid() >> 32;
	key.goid = go_read_word((void *)go_arg(ctx, 1), cfg->g_goid);
	c = bpf_map_lookup_elem(&gclocks, &key);
	if (!c)
		return 0;
	now = bpf_ktime_get_ns();
	if (on_cpu(newval)) {
		c->since_ns = now;
		c->running = 1;
	} else if (c->running) {
		c->total_ns += now - c->since_ns;
		c->running = 0;
	}
	return 0;
}

/*
 * runtime.main's entry, once a process (attached for --exe where trace context goes out): the
 * process joins `traced` as its first client call would make it join, and user space is woken
 * at once to attach the socket-layer writer to its cgroup, before package init and main.main can
 * connect anywhere. A wakeup a process start is nothing; a connection made before the attach
 * would go without traceparent until the next sync (up to TICK_NS later).
 */
SEC("uprobe")
int process_started(GO_REGS *ctx)
{
	const struct target_config *cfg;
	struct goroutine_key key;
	struct process_start *e;

	cfg = probe_context(ctx, &key);
	if (!cfg)
		return 0;
	track_process(cfg, key.pid);
	e = bpf_ringbuf_reserve(&events, sizeof(*e), 0);
	if (!e) {
		count_drop(DROP_RINGBUF_FULL);
		return 0;
	}
	fill_header(&e->hdr, EVENT_PROCESS_START, &key, bpf_ktime_get_ns());
	e->cookie = (__u32)bpf_get_attach_cookie(ctx);
	e->_pad = 0;
	bpf_ringbuf_submit(e, BPF_RB_FORCE_WAKEUP);
	return 0;
}
