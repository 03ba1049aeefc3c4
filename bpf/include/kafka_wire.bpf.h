/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What the socket-layer writer (wire.bpf.c) asks of the Kafka part linked into its object
 * (kafka_wire.bpf.c): whether a message begins like a produce request, and the program that
 * rewrites one, which it tail-calls through kafka_tail (user space puts the program there once
 * the object is loaded). A tail call, not a call: a global function taking the sk_msg context
 * from another part of the object is refused by the kernel (the linked BTF names its type only
 * as a forward declaration), and a static one would put the whole rewriting in wire.bpf.c.
 */
#ifndef GOSPAN_KAFKA_WIRE_BPF_H
#define GOSPAN_KAFKA_WIRE_BPF_H

#include <stdbool.h>
#include <linux/bpf.h>

#include "shared_map.bpf.h"

/* The request header's first 8 bytes: size, API key 0 (Produce), a version from 3 to 13. */
static __always_inline bool kafka_produce_head(const __u8 *d, const __u8 *end)
{
	return d + 8 <= end && d[4] == 0 && d[5] == 0 && d[6] == 0 && d[7] >= 3 && d[7] <= 13;
}

/* Entry 0: kafka_wire.bpf.c's kafka_produce program. */
SHARED_MAP(kafka_tail, BPF_MAP_TYPE_PROG_ARRAY, 1, __u32, __u32);

#endif
