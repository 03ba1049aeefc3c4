/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Maps that several parts of one BPF object use (the parts are compiled apart and linked by
 * bpftool gen object). A header declares each with SHARED_MAP(): its type, named NAME_map, and
 * an extern declaration of it; one part defines it with SHARED_MAP_DEFINE(NAME). libbpf's linker
 * joins the declarations to the definition by name, and wants the same type on both sides: the
 * one macro gives them that.
 */
#ifndef GOSPAN_SHARED_MAP_BPF_H
#define GOSPAN_SHARED_MAP_BPF_H

#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

#define SHARED_MAP(name, map_type, max, key_type, value_type)                                      \
	struct name##_map {                                                                        \
		__uint(type, map_type);                                                            \
		__uint(max_entries, max);                                                          \
		__type(key, key_type);                                                             \
		__type(value, value_type);                                                         \
	};                                                                                         \
	extern struct name##_map name SEC(".maps")

#define SHARED_MAP_DEFINE(name) struct name##_map name SEC(".maps");

#endif
