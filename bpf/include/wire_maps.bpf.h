/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The maps the uprobes (http.bpf.c and the other uprobe families) and the socket-layer writer
 * (wire.bpf.c) share. They are two objects, so that a kernel without cgroup BPF or sockhash still
 * gets its spans: wire_maps.bpf.c, which defines these maps, is linked into each, and user space
 * hands the writer the uprobe object's maps (bpf_map__reuse_fd) before loading it.
 */
#ifndef GOSPAN_WIRE_MAPS_BPF_H
#define GOSPAN_WIRE_MAPS_BPF_H

#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

#include "events.h"

/*
 * Processes whose client sockets the writer tracks, by tgid: filled by the HTTP and gRPC client
 * entries (track_process()).
 */
struct traced_map {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, MAX_TRACED_PROCS);
	__type(key, __u32);
	__type(value, struct traced_process);
};

extern struct traced_map traced SEC(".maps");

/*
 * The context of the request each goroutine is about to send, by the goroutine that writes it
 * (net/http's persistConn.writeLoop): set where Request.write has put the request line in the
 * connection's buffer, taken by the writer at that goroutine's next write on a socket. Keyed
 * by goroutine, not thread: the goroutine may move to another thread before it writes.
 */
struct pending_map {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 65536);
	__type(key, struct goroutine_key);
	__type(value, struct pending_ctx);
};

extern struct pending_map pending SEC(".maps");

/*
 * The context of a gRPC call's HEADERS frame, by the goroutine that writes it (the connection's
 * loopy writer) and the frame's stream id: set where the writer is handed the call's header
 * fields, taken by the socket-layer writer when that frame passes.
 */
struct h2_marks_map {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 16384);
	__type(key, struct h2_mark_key);
	__type(value, struct span_ctx);
};

extern struct h2_marks_map h2_marks SEC(".maps");

/*
 * How many marks each writing goroutine has waiting: HTTP/2 messages of goroutines with none
 * are let go without reading their frames.
 */
struct h2_writers_map {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 16384);
	__type(key, struct goroutine_key);
	__type(value, __u64);
};

extern struct h2_writers_map h2_writers SEC(".maps");

/* Incoming tracestate of the traces being served, by process and trace. */
struct tracestates_map {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 4096);
	__type(key, struct tracestate_key);
	__type(value, struct tracestate_val);
};

extern struct tracestates_map tracestates SEC(".maps");

/* What became of outgoing trace context (enum propagation_result), per CPU. */
struct propagation_map {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, PROP__COUNT);
	__type(key, __u32);
	__type(value, __u64);
};

extern struct propagation_map propagation SEC(".maps");

static __always_inline void count_propagation_n(__u32 what, __u64 n)
{
	__u64 *cnt = bpf_map_lookup_elem(&propagation, &what);

	if (cnt)
		*cnt += n;
}

static __always_inline void count_propagation(__u32 what)
{
	count_propagation_n(what, 1);
}

#endif
