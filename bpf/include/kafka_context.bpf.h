/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * What the Kafka clients' probes share (defined in kafka.bpf.c): marking a message for the
 * socket-layer writer, and the walk of a message's headers for trace context, for the clients
 * whose header slices have one shape (kafka-go's []Header, franz-go's []RecordHeader: a name
 * string and a value []byte each).
 */
#ifndef GOSPAN_KAFKA_CONTEXT_BPF_H
#define GOSPAN_KAFKA_CONTEXT_BPF_H

#include "events.h"
#include "kafka_mark.bpf.h"

/* A Go []byte's header: a string's, and its capacity. */
struct kafka_bytes {
	const char *ptr;
	__s64 len;
	__s64 cap;
};

/* The []byte B's first N bytes into DST; *LEN its length (-1: nil), as the writer hashes it. */
static __always_inline void kafka_fp_part(__u8 *dst, __u32 n, const struct kafka_bytes *b,
					  __s32 *len)
{
	*len = b->ptr ? (__s32)b->len : -1;
	if (b->ptr && b->len > 0)
		bpf_probe_read_user(dst, (__u64)b->len < n ? (__u32)b->len : n, b->ptr);
}

/*
 * Marks the message whose key and value FP holds (this CPU's scratch, held) as CTX's, for process
 * PID: the socket-layer writer finds the mark by the same fingerprint in the produce request
 * (kafka_mark.bpf.h). CTX is handed whole, padding included: zero it before filling it.
 */
int gospan_kafka_mark(struct kafka_fp_input *fp, __u32 pid, const struct span_ctx *ctx);

/* Headers looked at a message; the bytes one header takes at most. */
#define KAFKA_HEADERS_MAX 16
#define KAFKA_HEADER_MAX 64

/* Where a client's header element keeps its name and value, and its size (target_config's). */
struct kafka_header_layout {
	__s64 key, value, size;
};

/* The walk's room, in the caller's per-CPU scratch: one header, and its name zero-padded. */
struct kafka_header_walk {
	__u8 header[KAFKA_HEADER_MAX];
	__u64 name[2];
};

/*
 * The trace context among the headers of the slice at HDRS laid out as L: its traceparent parsed
 * into E's ids (1), its tracestate into E's. W: this CPU's scratch, held. A global function: the
 * verifier checks it once for a program, not header after header on every path through it.
 */
int gospan_kafka_context(const struct kafka_header_layout *l, struct kafka_header_walk *w,
			 __u64 hdrs, struct kafka_process *e);

#endif
