/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What the socket-layer writer (wire.bpf.c) asks of its Kafka part (kafka_wire.bpf.c): whether a
 * message begins like a produce request, and the program that rewrites one, which it
 * tail-calls through kafka_tail. That program is an object of its own, whose verification is paid
 * only where it is needed: user space loads it and puts it in kafka_tail only once a traced
 * process has a Kafka producer; until then the tail call finds nothing and the message goes as
 * it is.
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

/* Entry 0: kafka_wire.bpf.c's kafka_produce program, once loaded. Defined in wire.bpf.c. */
SHARED_MAP(kafka_tail, BPF_MAP_TYPE_PROG_ARRAY, 1, __u32, __u32);

#endif
