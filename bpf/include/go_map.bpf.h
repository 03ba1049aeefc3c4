/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Looking one key up in a Go map[string][]string (http.Header) from BPF, without a probe per
 * header line: a bounded walk of the map's own memory (go_map.bpf.c). Two layouts: hash buckets
 * (Go <= 1.23) and Swiss tables (Go 1.24+). Offsets and sizes come from the target config; a map
 * larger than the walk bounds is searched only in part, never past them.
 */
#ifndef GOSPAN_GO_MAP_BPF_H
#define GOSPAN_GO_MAP_BPF_H

#include <linux/types.h>
#include <bpf/bpf_helpers.h>

#include "events.h"
#include "go_types.bpf.h"

#define MAP_KEY_MAX 16 /* the longest key looked up */

/* The key being looked up, read once into BPF memory. */
struct map_key {
	char name[MAP_KEY_MAX];
	__u32 len;
};

/*
 * Finds header K in the Go map at M: 1 and its first value's string header in OUT, else 0. A
 * global function (go_map.bpf.c): the verifier checks it once, on its own.
 */
int gospan_header_find(const struct target_config *cfg, __u64 m, const struct map_key *k,
		       struct go_string *out);

/*
 * Copies the first value of header K in the Go map at M into DST (CAP bytes, a constant after
 * inlining); returns its real length, 0 when absent (or beyond the walk bounds, or the layout is
 * unknown).
 */
static __always_inline __u32 go_header_get(const struct target_config *cfg, const void *m,
					   const struct map_key *k, char *dst, __u32 cap)
{
	struct go_string val = {};

	if (!gospan_header_find(cfg, (__u64)m, k, &val))
		return 0;
	return go_copy_string(dst, cap, val.ptr, val.len);
}

#endif
