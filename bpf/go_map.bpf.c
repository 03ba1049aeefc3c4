// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The walk of a Go map[string][]string for one key (go_map.bpf.h): hash buckets (Go <= 1.23)
 * and Swiss tables (Go 1.24+), as the target config describes them, within fixed bounds.
 */
#include <linux/bpf.h>

#include "go_map.bpf.h"

#define MAP_KIND_BUCKETS 1
#define MAP_KIND_SWISS 2

/* Walk bounds: far beyond the 10-30 headers of real requests. */
#define MAP_MAX_BUCKETS 16	/* B <= 4 */
#define MAP_MAX_OVERFLOW 2	/* overflow buckets followed per bucket */
#define MAP_MAX_TABLES 4	/* Swiss directory entries */
#define MAP_MAX_GROUPS 8	/* groups per Swiss table */
#define MAP_SLOTS 8		/* slots per bucket and per group, in both layouts */
#define MAP_MIN_TOPHASH 5	/* bucket tophash values below this mark empty or moved slots */
#define GO_SLICE_SIZE 24	/* a slice header: pointer, length, capacity */
#define PAGE_BYTES 4096		/* the smallest page a Go heap is mapped in */

/*
 * The walk is made of global functions (not inlined, not static): the verifier checks each one
 * once, on its own, and a call to one costs it a single step wherever it is made. Inlined, every
 * slot of every bucket was checked again for each path into it and each of the three lookups
 * (traceparent, tracestate, the writer's check): over 800,000 instructions processed and two
 * seconds of load time for one program. Pointer arguments may be NULL to the verifier's eyes, so
 * each function checks them; results come back through OUT, never through static state.
 */

/*
 * A group or bucket is copied whole, in one read, and its slots' key and value headers are
 * picked from the copy: only a key of the right length costs another read. Both layouts of
 * map[string][]string fit (a bucket is 336 bytes, a group 328); a field past the bound is read
 * on its own.
 */
#define MAP_GROUP_MAX 512
_Static_assert((MAP_GROUP_MAX & (MAP_GROUP_MAX - 1)) == 0, "MAP_GROUP_MAX: a power of two");

struct map_scratch {
	__u8 b[MAP_GROUP_MAX + 8]; /* slack for snap_word()'s mask */
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct map_scratch);
} map_scratch SEC(".maps");

/*
 * The word at OFF in the LEN bytes (8 at least) copied from ADDR into SNAP, or read from
 * ADDR + OFF. Whether the copy holds it is computed, not tested on OFF: a test would leave the
 * verifier a different range of OFF (and of the slot offsets it is made from, which it links to
 * it) on each way out, the ways would not join again, and the four words of a slot made sixteen
 * paths: most of the walk's 36k verified instructions. The mask bounds the load either way.
 */
static __always_inline __u64 snap_word(const __u8 *snap, __u64 len, __u64 addr, __u64 off)
{
	/* Sign set when OFF + 8 > LEN, or OFF is past 2^63 (never a field's). */
	__u64 outside = ((len - 8 - off) | off) >> 63;

	asm volatile("" : "+r"(outside));
	if (!outside)
		return *(const __u64 *)(snap + (off & (MAP_GROUP_MAX - 1)));
	return go_read_word((const void *)addr, off);
}

/* Copies the SIZE bytes at ADDR (at most MAP_GROUP_MAX) into MS; the length copied, 0 on a fault.
 */
static __always_inline __u64 snap_copy(struct map_scratch *ms, __u64 addr, __s64 size)
{
	__u64 n, first;

	if (size < 8)
		return 0;
	/*
	 * Bounded after the barrier, on the register the helper is given: clang's bound on the
	 * signed SIZE left Linux 6.1's verifier a length whose minimum may be negative (it refuses
	 * the program).
	 */
	n = (__u64)size;
	asm volatile("" : "+r"(n));
	if (n > MAP_GROUP_MAX)
		n = MAP_GROUP_MAX;
	if (!bpf_probe_read_user(ms->b, n, (const void *)addr))
		return n;
	/*
	 * Its end may lie in a page the process has not touched yet (the runtime does not write
	 * memory fresh from the kernel, which is zero): such a page is not present, a read cannot
	 * fault it in, and it holds no entry. What lies before that page is copied; snap_word()
	 * reads past it word by word, and finds nothing there.
	 */
	first = PAGE_BYTES - (addr & (PAGE_BYTES - 1));
	if (first < 8 || first >= n ||
	    bpf_probe_read_user(ms->b, first & (MAP_GROUP_MAX - 1), (const void *)addr))
		return 0;
	return first;
}

/*
 * If the string at KEY_PTR, as long as K (the caller checked), equals K and the []string
 * (VALS_PTR, VALS_LEN) has a non-empty first element, stores that element's header in OUT and
 * returns 1; otherwise 0.
 */
__noinline int gospan_map_slot(__u64 key_ptr, __u64 vals_ptr, __s64 vals_len,
			       const struct map_key *k, struct go_string *out)
{
	/*
	 * Zeroed: Linux 6.1's verifier wants the stack a helper writes a length not known in
	 * advance into initialized. As small as the key, and the value read into OUT: 6.1 counts
	 * each frame of a call chain in 32-byte steps, and serve_http_entry's deepest chain
	 * (header search, bucket, slot) must stay within 512 bytes.
	 */
	char buf[MAP_KEY_MAX] = {};
	__u32 i, n;

	if (!k || !out)
		return 0;
	/*
	 * Exactly the key's length: a string may end where the mapped memory does (heap pages
	 * the process has not touched yet are not present, and a read cannot fault them in).
	 */
	n = k->len;
	if (n > MAP_KEY_MAX || bpf_probe_read_user(buf, n & (MAP_KEY_MAX * 2 - 1), (const void *)key_ptr))
		return 0;
	for (i = 0; i < MAP_KEY_MAX; i++) {
		if (i >= k->len)
			break;
		if (buf[i] != k->name[i])
			return 0;
	}
	if (vals_len < 1 || !vals_ptr)
		return 0;
	if (bpf_probe_read_user(out, sizeof(*out), (const void *)vals_ptr) || out->len <= 0 ||
	    !out->ptr) {
		out->ptr = NULL;
		out->len = 0;
		return 0;
	}
	return 1;
}

/* One bucket chain of a bucketed map, from bucket B. */
__noinline int gospan_map_bucket(const struct target_config *cfg, __u64 b, const struct map_key *k,
				 struct go_string *out)
{
	struct map_scratch *ms;
	__u64 n, key, elem;
	__u32 chain, i, zero = 0;

	ms = bpf_map_lookup_elem(&map_scratch, &zero);
	if (!cfg || !k || !ms)
		return 0;
	for (chain = 0; chain <= MAP_MAX_OVERFLOW && b; chain++) {
		n = snap_copy(ms, b, cfg->bucket_size);
		if (!n)
			return 0;
		for (i = 0; i < MAP_SLOTS; i++) {
			if (ms->b[i] < MAP_MIN_TOPHASH)
				continue;
			key = cfg->bucket_keys + i * sizeof(struct go_string);
			elem = cfg->bucket_elems + i * GO_SLICE_SIZE;
			if (snap_word(ms->b, n, b, key + 8) != k->len)
				continue;
			if (gospan_map_slot(snap_word(ms->b, n, b, key),
					    snap_word(ms->b, n, b, elem),
					    snap_word(ms->b, n, b, elem + 8), k, out))
				return 1;
		}
		b = snap_word(ms->b, n, b, cfg->bucket_overflow);
	}
	return 0;
}

/* One Swiss-table group: a control word (a byte per slot, high bit set = empty) and 8 slots. */
__noinline int gospan_map_group(const struct target_config *cfg, __u64 g, const struct map_key *k,
				struct go_string *out)
{
	struct map_scratch *ms;
	__u64 n, ctrl, key, elem;
	__u32 i, zero = 0;

	ms = bpf_map_lookup_elem(&map_scratch, &zero);
	if (!cfg || !k || !ms)
		return 0;
	n = snap_copy(ms, g, cfg->group_size);
	if (!n)
		return 0;
	ctrl = *(const __u64 *)ms->b;
	for (i = 0; i < MAP_SLOTS; i++) {
		if ((ctrl >> (8 * i)) & 0x80)
			continue;
		key = cfg->group_slots + i * cfg->slot_size;
		elem = key + cfg->slot_elem;
		if (snap_word(ms->b, n, g, key + 8) != k->len)
			continue;
		if (gospan_map_slot(snap_word(ms->b, n, g, key), snap_word(ms->b, n, g, elem),
				    snap_word(ms->b, n, g, elem + 8), k, out))
			return 1;
	}
	return 0;
}

/* The word at OFF (a multiple of 8, user space checked) of a map head as copied. */
static __always_inline __u64 head_word(const __u8 *head, __s64 off)
{
	return *(const __u64 *)(head + ((__u64)off & (MAP_HEAD_MAX - 8)));
}

static __always_inline int map_find_buckets(const struct target_config *cfg, const __u8 *head,
					    const struct map_key *k, struct go_string *out)
{
	__u64 buckets = head_word(head, cfg->hmap_buckets);
	__u64 old = head_word(head, cfg->hmap_oldbuckets);
	__u8 b = head[(__u64)cfg->hmap_b & (MAP_HEAD_MAX - 1)];
	__u32 i, nb;

	if (b > 4)
		return 0;
	nb = 1U << b;
	for (i = 0; i < MAP_MAX_BUCKETS && i < nb && buckets; i++) {
		if (gospan_map_bucket(cfg, buckets + i * cfg->bucket_size, k, out))
			return 1;
	}
	/* A growing map still holds entries not yet moved in its old buckets (half as many). */
	for (i = 0; i < MAP_MAX_BUCKETS && i < nb / 2 && old; i++) {
		if (gospan_map_bucket(cfg, old + i * cfg->bucket_size, k, out))
			return 1;
	}
	return 0;
}

static __always_inline int map_find_swiss(const struct target_config *cfg, const __u8 *head,
					  const struct map_key *k, struct go_string *out)
{
	__u64 dir = head_word(head, cfg->swiss_dir_ptr), table, groups, mask;
	__s64 dir_len = (__s64)head_word(head, cfg->swiss_dir_len);
	__u32 t, g;

	if (!dir)
		return 0;
	/* A small map has no directory: its one group is where the directory would be. */
	if (dir_len == 0)
		return gospan_map_group(cfg, dir, k, out);
	for (t = 0; t < MAP_MAX_TABLES && t < dir_len; t++) {
		table = go_read_word((const void *)dir, t * 8);
		if (!table)
			continue;
		groups = go_read_word((const void *)table, cfg->table_groups_data);
		mask = go_read_word((const void *)table, cfg->table_groups_mask);
		for (g = 0; g < MAP_MAX_GROUPS && g <= mask && groups; g++) {
			if (gospan_map_group(cfg, groups + g * cfg->group_size, k, out))
				return 1;
		}
	}
	return 0;
}

/*
 * Finds header K in the Go map at M: 1 and its first value's string header in OUT, else 0. The
 * map's head comes in one read: its count, and where the walk starts.
 */
__noinline int gospan_header_find(const struct target_config *cfg, __u64 m, const struct map_key *k,
				  struct go_string *out)
{
	__u8 head[MAP_HEAD_MAX] = {};
	__u64 n;

	if (!cfg || !m)
		return 0;
	n = (__u64)cfg->map_head_size;
	if (n < 8 || n > MAP_HEAD_MAX || bpf_probe_read_user(head, n, (const void *)m))
		return 0;
	/* No header lines (Host is not one in the map): nothing to look for. */
	if (cfg->map_count >= 0 && !head_word(head, cfg->map_count))
		return 0;
	if (cfg->map_kind == MAP_KIND_BUCKETS)
		return map_find_buckets(cfg, head, k, out);
	if (cfg->map_kind == MAP_KIND_SWISS)
		return map_find_swiss(cfg, head, k, out);
	return 0;
}

