/* SPDX-License-Identifier: GPL-2.0 */
/*
 * How a Kafka message is known again in the produce request that carries it: the producer's
 * probe (bpf/kafka.bpf.c) sees the message in the service's memory, the socket-layer writer
 * (bpf/kafka_wire.bpf.c) sees its record on the wire, written by another goroutine later, maybe
 * batched with other calls' messages. Both hash what they both see: the key's and the value's
 * lengths and their first bytes (FNV-1a). Two messages alike in all of that are one message to
 * the writer: the later one's context goes with whichever is sent first.
 */
#ifndef GOSPAN_KAFKA_MARK_BPF_H
#define GOSPAN_KAFKA_MARK_BPF_H

#include <linux/types.h>

#define KAFKA_FP_KEY 16	  /* key bytes hashed */
#define KAFKA_FP_VALUE 32 /* value bytes hashed */

/*
 * What is hashed, in scratch memory: the lengths (negative: none) and the bytes copied, the
 * rest of each array zero (kafka_fp_clear() first), so that the hash takes every byte of both
 * and has no branch: a loop with a way out a byte is a path a length for the verifier.
 */
struct kafka_fp_input {
	__s32 key_len;
	__s32 value_len;
	__u8 key[KAFKA_FP_KEY];
	__u8 value[KAFKA_FP_VALUE];
};

static __always_inline __u64 fnv1a(__u64 h, __u8 b)
{
	return (h ^ b) * 0x100000001b3ULL;
}

/* IN's byte arrays zeroed, before a key and a value are copied in. */
static __always_inline void kafka_fp_clear(struct kafka_fp_input *in)
{
	__builtin_memset(in->key, 0, sizeof(in->key));
	__builtin_memset(in->value, 0, sizeof(in->value));
}

/* The fingerprint of IN: a length below 0 (none) counts as 0. */
static __always_inline __u64 kafka_fingerprint(const struct kafka_fp_input *in)
{
	__u32 kl = in->key_len > 0 ? (__u32)in->key_len : 0;
	__u32 vl = in->value_len > 0 ? (__u32)in->value_len : 0;
	__u64 h = 0xcbf29ce484222325ULL;
	__u32 i;

	for (i = 0; i < 4; i++)
		h = fnv1a(h, (__u8)(kl >> (8 * i)));
	for (i = 0; i < 4; i++)
		h = fnv1a(h, (__u8)(vl >> (8 * i)));
	for (i = 0; i < KAFKA_FP_KEY; i++)
		h = fnv1a(h, in->key[i]);
	for (i = 0; i < KAFKA_FP_VALUE; i++)
		h = fnv1a(h, in->value[i]);
	return h;
}

#endif
