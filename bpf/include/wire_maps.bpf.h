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
#include "shared_map.bpf.h"

/*
 * Processes whose client sockets the writer tracks, by tgid: filled by the HTTP and gRPC client
 * entries (track_process()).
 */
SHARED_MAP(traced, BPF_MAP_TYPE_LRU_HASH, MAX_TRACED_PROCS, __u32, struct traced_process);

/*
 * The context of the request each goroutine is about to send, by the goroutine that writes it
 * (net/http's persistConn.writeLoop): set where Request.write has put the request line in the
 * connection's buffer, taken by the writer at that goroutine's next write on a socket. Keyed
 * by goroutine, not thread: the goroutine may move to another thread before it writes.
 */
SHARED_MAP(pending, BPF_MAP_TYPE_LRU_HASH, 65536, struct goroutine_key, struct pending_ctx);

/*
 * The context of a gRPC call's HEADERS frame, by the goroutine that writes it (the connection's
 * loopy writer) and the frame's stream id: set where the writer is handed the call's header
 * fields, taken by the socket-layer writer when that frame passes.
 */
SHARED_MAP(h2_marks, BPF_MAP_TYPE_LRU_HASH, 16384, struct h2_mark_key, struct span_ctx);

/*
 * How many marks each writing goroutine has waiting: HTTP/2 messages of goroutines with none
 * are let go without reading their frames.
 */
SHARED_MAP(h2_writers, BPF_MAP_TYPE_LRU_HASH, 16384, struct goroutine_key, __u64);

/*
 * The context of each Kafka message a producer call is sending, by process and fingerprint:
 * set at the call's entry (bpf/kafka.bpf.c), taken by the socket-layer writer when the produce
 * request that carries the message passes (bpf/kafka_wire.bpf.c).
 */
SHARED_MAP(kafka_marks, BPF_MAP_TYPE_LRU_HASH, 65536, struct kafka_mark_key, struct span_ctx);

/* Incoming tracestate of the traces being served, by process and trace. */
SHARED_MAP(tracestates, BPF_MAP_TYPE_LRU_HASH, 4096, struct tracestate_key, struct tracestate_val);

/* What became of outgoing trace context (enum propagation_result), per CPU. */
SHARED_MAP(propagation, BPF_MAP_TYPE_PERCPU_ARRAY, PROP__COUNT, __u32, __u64);

/* The maps above, which wire_maps.bpf.c defines, all in this one list. */
#define WIRE_MAPS(X)                                                                               \
	X(traced) X(pending) X(h2_marks) X(h2_writers) X(kafka_marks) X(tracestates) X(propagation)

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
