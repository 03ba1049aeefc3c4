// SPDX-License-Identifier: GPL-2.0
/*
 * Probes in the Go runtime that serve every family, linked with them into one object
 * (probe.bpf.h): runtime.newproc1 hands the span a goroutine works for to the goroutines it
 * starts; runtime.main's entry tells user space of a new process of the binary (--exe), for the
 * socket-layer writer of trace context. (On-CPU time, which the scheduler's functions also give,
 * is cputime.bpf.c's.)
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
