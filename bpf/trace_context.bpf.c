// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * An incoming traceparent parsed (trace_context.bpf.h): the HTTP, fasthttp, gRPC and Kafka
 * consumer probes all read one. A global function (not inlined, not static), so that the
 * verifier checks it once for each program that calls it. Inlined, it was checked again on every
 * path that reached it (in Kafka's header walk, once for each header looked at) and was most of
 * what serve_http_entry and kafka_delivered cost the verifier.
 */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

#include "trace_context.bpf.h"

/*
 * The value of the hex digit C (W3C: lowercase only); 1 set in *BAD when it is not one. No branch:
 * BPF has no conditional move, and a test per character is a fork per character for the
 * verifier. X lies in [0, N) exactly when X - N is negative and X is not: the sign bit of their
 * XOR.
 */
static __always_inline __u8 hex_nibble(__u8 c, __u64 *bad)
{
	__s64 d = (__s64)c - '0', a = (__s64)c - 'a';
	__u64 is_d = (__u64)((d - 10) ^ d) >> 63;
	__u64 is_a = (__u64)((a - 6) ^ a) >> 63;

	*bad |= (is_d | is_a) ^ 1;
	return (__u8)((d & -is_d) | ((a + 10) & -is_a));
}

/* Decodes the 2*N hex characters at S into N bytes; sets *BAD on a bad character or a zero id. */
static __always_inline void hex_decode(const char *s, __u8 *out, __u32 n, __u64 *bad)
{
	__u8 any = 0;
	__u32 i;

	for (i = 0; i < n; i++) {
		out[i] = hex_nibble(s[2 * i], bad) << 4 | hex_nibble(s[2 * i + 1], bad);
		any |= out[i];
	}
	/* 1 when ANY is 0: 0 - 1 is the only negative. */
	*bad |= (__u64)((__s64)any - 1) >> 63;
}

__noinline int gospan_traceparent_read(__u64 ptr, __s64 len, struct span_ids *ids)
{
	__u8 trace_id[16], parent[8], flags;
	char tp[TRACEPARENT_LEN + 1];
	__u64 bad;

	if (!ids || len != TRACEPARENT_LEN || !ptr ||
	    bpf_probe_read_user(tp, TRACEPARENT_LEN, (const void *)ptr))
		return 0;
	/* Every character is looked at whatever the others hold; one branch decides, at the end. */
	bad = (__u8)(tp[0] ^ '0') | (__u8)(tp[1] ^ '0') | (__u8)(tp[2] ^ '-') |
	      (__u8)(tp[35] ^ '-') | (__u8)(tp[52] ^ '-');
	hex_decode(tp + 3, trace_id, 16, &bad);
	hex_decode(tp + 36, parent, 8, &bad);
	flags = hex_nibble(tp[53], &bad) << 4 | hex_nibble(tp[54], &bad);
	/* Else clang may test each part of BAD as it is made. */
	asm volatile("" : "+r"(bad));
	if (bad)
		return 0;
	__builtin_memcpy(ids->trace_id, trace_id, 16);
	__builtin_memcpy(ids->parent_span_id, parent, 8);
	ids->flags = flags;
	ids->remote_parent = 1;
	return 1;
}
