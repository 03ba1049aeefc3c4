/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * W3C trace context in BPF: fresh ids, and traceparent read from and written into requests.
 * Ids are chosen here, not in user space, because a call must carry its span's id in the same
 * instant the span begins.
 */
#ifndef GOSPAN_TRACE_CONTEXT_BPF_H
#define GOSPAN_TRACE_CONTEXT_BPF_H

#include <linux/types.h>
#include <bpf/bpf_helpers.h>

#include "events.h"

/* Random bytes; an all-zero id is invalid, so the last byte is never left at zero. */
static __always_inline void random_id(__u8 *id, __u32 len)
{
	__u32 i, r;

	for (i = 0; i < len; i += 4) {
		r = bpf_get_prandom_u32();
		__builtin_memcpy(id + i, &r, 4);
	}
	id[len - 1] |= 1;
}

/* The sampled flag (0 or 1) for a span without a parent to follow, by its trace id. */
static __always_inline __u8 sample_root(__u32 sampler, __u64 bound, const __u8 *trace_id)
{
	__u64 x = 0;
	__u32 i;

	if (sampler == SAMPLER_ALWAYS_OFF)
		return 0;
	if (sampler != SAMPLER_RATIO)
		return 1;
	for (i = 8; i < 16; i++)
		x = x << 8 | trace_id[i];
	return (x >> 1) < bound;
}

/* The ids of a span whose parent is PARENT (NULL: a new trace), sampled as the config says. */
static __always_inline void child_ids(struct span_ids *ids, const struct span_ctx *parent,
				      __u32 sampler, __u32 parent_based, __u64 bound)
{
	__builtin_memset(ids, 0, sizeof(*ids));
	if (parent) {
		__builtin_memcpy(ids->trace_id, parent->trace_id, sizeof(ids->trace_id));
		__builtin_memcpy(ids->parent_span_id, parent->span_id, sizeof(parent->span_id));
		ids->flags = parent_based ? parent->flags :
					    (parent->flags & ~1) | sample_root(sampler, bound,
									       ids->trace_id);
	} else {
		random_id(ids->trace_id, sizeof(ids->trace_id));
		ids->flags = sample_root(sampler, bound, ids->trace_id);
	}
	random_id(ids->span_id, sizeof(ids->span_id));
}

/*
 * Parses the Go string (PTR, LEN), a version-00 traceparent ("00-<trace id>-<parent id>-<flags>"),
 * into IDS: trace id, the caller's span as parent, flags, remote_parent. 1 when it is one, else 0
 * (IDS then untouched). A global function (trace_context.bpf.c): the verifier checks it once for
 * a program, not at every place and path that reaches it.
 */
int gospan_traceparent_read(__u64 ptr, __s64 len, struct span_ids *ids);

/*
 * The first 8 bytes of the string S as a word, in memory order: a constant after inlining. Header
 * names are compared a word at a time with it, without a branch a byte.
 */
static __always_inline __u64 word8(const char *s)
{
	__u64 w;

	__builtin_memcpy(&w, s, 8);
	return w;
}

/* Computed, not looked up: static const tables end up in .rodata, which clang 14 describes wrongly. */
static __always_inline char hex_digit(__u8 v)
{
	return v < 10 ? '0' + v : 'a' + v - 10;
}

static __always_inline void hex_encode(char *out, const __u8 *in, __u32 n)
{
	__u32 i;

	for (i = 0; i < 16; i++) {
		if (i >= n)
			break;
		out[2 * i] = hex_digit((in[i] >> 4) & 0xf);
		out[2 * i + 1] = hex_digit(in[i] & 0xf);
	}
}

/* The traceparent value "00-<trace id>-<span id>-<flags>" naming CTX's span: TRACEPARENT_LEN. */
static __always_inline void traceparent_value(char *out, const struct span_ctx *ctx)
{
	out[0] = '0';
	out[1] = '0';
	out[2] = '-';
	hex_encode(out + 3, ctx->trace_id, 16);
	out[35] = '-';
	hex_encode(out + 36, ctx->span_id, 8);
	out[52] = '-';
	hex_encode(out + 53, &ctx->flags, 1);
}

/* The header line "Traceparent: 00-<trace id>-<span id>-<flags>\r\n" naming CTX's span. */
#define TRACEPARENT_LINE_LEN (13 + TRACEPARENT_LEN + 2)
static __always_inline void traceparent_line(char *line, const struct span_ctx *ctx)
{
	__builtin_memcpy(line, "Traceparent: ", 13);
	traceparent_value(line + 13, ctx);
	line[68] = '\r';
	line[69] = '\n';
}

#endif
