/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Looking one key up in a Go map[string][]string (http.Header) from BPF, without a probe per
 * header line: a bounded walk of the map's own memory. Two layouts: hash buckets (Go <= 1.23)
 * and Swiss tables (Go 1.24+). Offsets and sizes come from the target config; a map larger than
 * the walk bounds is searched only in part, never past them.
 */
#ifndef GOSPAN_GO_MAP_BPF_H
#define GOSPAN_GO_MAP_BPF_H

#include <linux/types.h>
#include <bpf/bpf_helpers.h>

#include "events.h"
#include "go_types.bpf.h"

#define MAP_KIND_BUCKETS 1
#define MAP_KIND_SWISS 2

/* Walk bounds: far beyond the 10-30 headers of real requests. */
#define MAP_MAX_BUCKETS 16	/* B <= 4 */
#define MAP_MAX_OVERFLOW 2	/* overflow buckets followed per bucket */
#define MAP_MAX_TABLES 4	/* Swiss directory entries */
#define MAP_MAX_GROUPS 8	/* groups per Swiss table */
#define MAP_SLOTS 8		/* slots per bucket and per group, in both layouts */
#define MAP_MIN_TOPHASH 5	/* bucket tophash values below this mark empty or moved slots */
#define MAP_KEY_MAX 16		/* the longest key looked up */
#define GO_SLICE_SIZE 24	/* a slice header: pointer, length, capacity */

/* The key being looked up, read once into BPF memory. */
struct map_key {
	char name[MAP_KEY_MAX];
	__u32 len;
};

/*
 * If the string at KEY_ADDR equals K, copies the first element of the []string at ELEM_ADDR into
 * DST (CAP bytes) and returns its real length (at least 1); 0 when the key differs.
 */
static __always_inline __u32 map_slot_match(const void *key_addr, const void *elem_addr,
					    const struct map_key *k, char *dst, __u32 cap)
{
	struct go_string key;
	char buf[MAP_KEY_MAX];
	struct {
		const void *ptr;
		__s64 len;
		__s64 cap;
	} vals;
	__u32 i, n;

	if (bpf_probe_read_user(&key, sizeof(key), key_addr) || key.len != k->len)
		return 0;
	if (bpf_probe_read_user(buf, sizeof(buf), key.ptr))
		return 0;
	for (i = 0; i < MAP_KEY_MAX; i++) {
		if (i >= k->len)
			break;
		if (buf[i] != k->name[i])
			return 0;
	}
	if (bpf_probe_read_user(&vals, sizeof(vals), elem_addr) || vals.len < 1 || !vals.ptr)
		return 0;
	n = go_read_string(dst, cap, vals.ptr);
	return n ? n : 0;
}

/* One bucket chain of a bucketed map. */
static __always_inline __u32 map_walk_bucket(const struct target_config *cfg, const void *b,
					     const struct map_key *k, char *dst, __u32 cap)
{
	__u8 tophash[MAP_SLOTS];
	__u32 chain, i, n;

	for (chain = 0; chain <= MAP_MAX_OVERFLOW && b; chain++) {
		if (bpf_probe_read_user(tophash, sizeof(tophash), b))
			return 0;
		for (i = 0; i < MAP_SLOTS; i++) {
			if (tophash[i] < MAP_MIN_TOPHASH)
				continue;
			n = map_slot_match(b + cfg->bucket_keys + i * sizeof(struct go_string),
					   b + cfg->bucket_elems + i * GO_SLICE_SIZE, k, dst, cap);
			if (n)
				return n;
		}
		b = (const void *)go_read_word(b, cfg->bucket_overflow);
	}
	return 0;
}

static __always_inline __u32 map_get_buckets(const struct target_config *cfg, const void *m,
					     const struct map_key *k, char *dst, __u32 cap)
{
	const void *buckets, *old;
	__u8 b = 0;
	__u32 i, nb, n;

	if (bpf_probe_read_user(&b, sizeof(b), m + cfg->hmap_b) || b > 4)
		return 0;
	nb = 1U << b;
	buckets = (const void *)go_read_word(m, cfg->hmap_buckets);
	for (i = 0; i < MAP_MAX_BUCKETS && i < nb && buckets; i++) {
		n = map_walk_bucket(cfg, buckets + i * cfg->bucket_size, k, dst, cap);
		if (n)
			return n;
	}
	/* While the map grows, entries not yet moved are still in the old buckets (half as many). */
	old = (const void *)go_read_word(m, cfg->hmap_oldbuckets);
	for (i = 0; i < MAP_MAX_BUCKETS && i < nb / 2 && old; i++) {
		n = map_walk_bucket(cfg, old + i * cfg->bucket_size, k, dst, cap);
		if (n)
			return n;
	}
	return 0;
}

/* One Swiss-table group: a control word (a byte per slot, high bit set = empty) and 8 slots. */
static __always_inline __u32 map_walk_group(const struct target_config *cfg, const void *g,
					    const struct map_key *k, char *dst, __u32 cap)
{
	__u64 ctrl;
	__u32 i, n;

	if (bpf_probe_read_user(&ctrl, sizeof(ctrl), g))
		return 0;
	for (i = 0; i < MAP_SLOTS; i++) {
		if ((ctrl >> (8 * i)) & 0x80)
			continue;
		n = map_slot_match(g + cfg->group_slots + i * cfg->slot_size,
				   g + cfg->group_slots + i * cfg->slot_size + cfg->slot_elem, k, dst,
				   cap);
		if (n)
			return n;
	}
	return 0;
}

static __always_inline __u32 map_get_swiss(const struct target_config *cfg, const void *m,
					   const struct map_key *k, char *dst, __u32 cap)
{
	const void *dir, *table, *groups;
	__s64 dir_len;
	__u64 mask;
	__u32 t, g, n;

	dir = (const void *)go_read_word(m, cfg->swiss_dir_ptr);
	dir_len = (__s64)go_read_word(m, cfg->swiss_dir_len);
	if (!dir)
		return 0;
	/* A small map has no directory: its one group is where the directory would be. */
	if (dir_len == 0)
		return map_walk_group(cfg, dir, k, dst, cap);
	for (t = 0; t < MAP_MAX_TABLES && t < dir_len; t++) {
		table = (const void *)go_read_word(dir, t * 8);
		if (!table)
			continue;
		groups = (const void *)go_read_word(table, cfg->table_groups_data);
		mask = go_read_word(table, cfg->table_groups_mask);
		for (g = 0; g < MAP_MAX_GROUPS && g <= mask && groups; g++) {
			n = map_walk_group(cfg, groups + g * cfg->group_size, k, dst, cap);
			if (n)
				return n;
		}
	}
	return 0;
}

/*
 * Copies the first value of header K in the Go map at M into DST; returns its real length, 0 when
 * absent (or beyond the walk bounds, or the layout is unknown).
 */
static __always_inline __u32 go_header_get(const struct target_config *cfg, const void *m,
					   const struct map_key *k, char *dst, __u32 cap)
{
	if (!m)
		return 0;
	if (cfg->map_kind == MAP_KIND_BUCKETS)
		return map_get_buckets(cfg, m, k, dst, cap);
	if (cfg->map_kind == MAP_KIND_SWISS)
		return map_get_swiss(cfg, m, k, dst, cap);
	return 0;
}

#endif
