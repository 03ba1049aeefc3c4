/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Readers for Go values in the target's memory. A Go string is (ptr, len); we copy at most the
 * bound and hand back the real length, so user space can tell a cut value from a short one.
 */
#ifndef GOSPAN_GO_TYPES_BPF_H
#define GOSPAN_GO_TYPES_BPF_H

#include <linux/types.h>
#include <bpf/bpf_helpers.h>

#include "events.h"

/* Go's reflect kinds in a type descriptor (internal/abi): the low 5 bits of the kind byte. */
#define GO_TYPE_KIND_OFF 23
#define GO_TYPE_KIND_MASK 0x1f
#define GO_KIND_MAP_ 21
#define GO_KIND_SLICE_ 23
#define GO_KIND_STRING_ 24
/* A map type's key and element types follow the 48-byte common type descriptor. */
#define GO_MAPTYPE_KEY 48
#define GO_MAPTYPE_ELEM 56

struct go_string {
	const char *ptr;
	__s64 len;
};

/* A Go interface value: its itab word (the type's, for an empty interface) and its data word. */
struct go_iface {
	__u64 itab, data;
};

/*
 * Copies the Go string (PTR, LEN) into DST (CAP bytes, a constant after inlining). Returns the
 * string's real length, saturated to 32 bits, or 0 when it cannot be read.
 */
static __always_inline __u32 go_copy_string(char *dst, __u32 cap, const char *ptr, __s64 len)
{
	__u64 n;

	if (len <= 0 || !ptr)
		return 0;
	n = (__u64)len < cap ? (__u64)len : cap;
	if (bpf_probe_read_user(dst, n, ptr))
		return 0;
	return (__u64)len > 0xffffffffULL ? 0xffffffffU : (__u32)len;
}

/*
 * Copies the Go string whose header is at HDR into DST (CAP bytes, a constant after inlining).
 * Returns the string's real length, saturated to 32 bits, or 0 when it cannot be read: then DST
 * holds nothing user space will look at.
 */
static __always_inline __u32 go_read_string(char *dst, __u32 cap, const void *hdr)
{
	struct go_string s;

	if (bpf_probe_read_user(&s, sizeof(s), hdr))
		return 0;
	return go_copy_string(dst, cap, s.ptr, s.len);
}

/* Reads a pointer-sized word at BASE + OFF; 0 when unreadable. */
static __always_inline __u64 go_read_word(const void *base, __s64 off)
{
	__u64 v = 0;

	if (bpf_probe_read_user(&v, sizeof(v), (const char *)base + off))
		return 0;
	return v;
}

/*
 * The first method word of the interface whose itab is ITAB (ITAB_FUN0, events.h): which type's
 * method it is tells the concrete type; 0 when there is no itab.
 */
static __always_inline __u64 go_itab_fn0(__u64 itab)
{
	return itab ? go_read_word((void *)itab, ITAB_FUN0) : 0;
}

#endif
