// SPDX-License-Identifier: GPL-2.0
/*
 * bench/feed's producer: ServeHTTP start and end records, in gospan's own record layout, written
 * straight into a running gospan's ring buffer. Run by BPF_PROG_TEST_RUN, so a span costs no
 * uprobe trap: on a 2-CPU machine the traps of a traced Go program cap the span rate far below
 * what gospan's user-space half can take, and this is how that half is driven past the cap.
 *
 * The records copy a template user space fills (one real-looking request), and differ where
 * gospan tells calls apart: times, ids and goroutine ids, taken in turn from CONNS of them as a
 * server's keep-alive connections would.
 *
 * Linked with bpf/ring.bpf.c, gospan's own ring buffer and wakeup threshold (ring.bpf.h): user
 * space replaces the buffer with the running gospan's (bpf_map__reuse_fd) before load.
 */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

#include "feed.h"
#include "ring.bpf.h"

char LICENSE[] SEC("license") = "GPL";

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct feed_template);
} template SEC(".maps");

/* Goroutine ids in use, one per connection, as wrk -c64 would make them. */
#define CONNS 64
#define GOID_BASE 1000

struct loop_ctx {
	const struct feed_template *t;
	__u64 seq;
	__u32 written;
	__u32 full;
};

static int one_span(__u32 i, struct loop_ctx *c)
{
	struct http_server_start *s;
	struct http_server_end *e;
	__u64 now = bpf_ktime_get_ns(), goid = GOID_BASE + (c->seq + i) % CONNS;
	__u32 *w;
	int k;

	/* Both records or neither: a start without its end would be a call gospan waits for. */
	s = bpf_ringbuf_reserve(&events, sizeof(*s), 0);
	if (!s) {
		c->full++;
		return 1; /* stop: the reader is behind */
	}
	e = bpf_ringbuf_reserve(&events, sizeof(*e), 0);
	if (!e) {
		bpf_ringbuf_discard(s, BPF_RB_NO_WAKEUP);
		c->full++;
		return 1;
	}
	bpf_probe_read_kernel(s, sizeof(*s), &c->t->start);
	s->hdr.goid = goid;
	s->hdr.start_ns = now;
	w = (__u32 *)s->ids.trace_id;
	for (k = 0; k < 4; k++)
		w[k] = bpf_get_prandom_u32();
	w = (__u32 *)s->ids.span_id;
	w[0] = bpf_get_prandom_u32();
	w[1] = bpf_get_prandom_u32() | 1; /* never the all-zero invalid id */
	bpf_probe_read_kernel(e, sizeof(*e), &c->t->end);
	e->hdr.goid = goid;
	e->hdr.start_ns = now;
	e->end_ns = now + 20000;
	bpf_ringbuf_submit(s, BPF_RB_NO_WAKEUP);
	bpf_ringbuf_submit(e, submit_flags());
	c->written++;
	return 0;
}

SEC("syscall")
int feed(struct feed_args *args)
{
	struct loop_ctx c = { .seq = args->seq };
	__u32 zero = 0;

	c.t = bpf_map_lookup_elem(&template, &zero);
	if (!c.t)
		return 1;
	bpf_loop(args->count, one_span, &c, 0);
	args->written = c.written;
	args->full = c.full;
	return 0;
}
