/* SPDX-License-Identifier: MIT */
/*
 * The capabilities gospan runs with, read with capget(2) rather than through libcap, and their
 * names in the forms a user types them: what lets gospan say in one line, before it loads
 * anything, which capabilities it lacks and how to grant them.
 */
#ifndef GOSPAN_CAPS_H
#define GOSPAN_CAPS_H

#include <stddef.h>
#include <stdint.h>

/* A set of capabilities has bit N for capability N (linux/capability.h). */
#define CAPS_BIT(cap) (1ULL << (cap))

/* How caps__list writes a set. */
enum caps_style {
	CAPS_PROSE,   /* "CAP_BPF, CAP_PERFMON and CAP_SYS_PTRACE" */
	CAPS_SETCAP,  /* "cap_bpf,cap_perfmon,cap_sys_ptrace", for setcap(8) */
	CAPS_SYSTEMD, /* "CAP_BPF CAP_PERFMON CAP_SYS_PTRACE", for AmbientCapabilities= */
};

/* The calling thread's effective capabilities into *SET: 0, or a negative errno. */
int caps__effective(uint64_t *set);
/*
 * SET's capabilities, in the order of their numbers, into BUF as STYLE says (a capability
 * without a name as its number). The length the whole list needs: BUF holds it when smaller
 * than SIZE, else it is cut and terminated.
 */
size_t caps__list(uint64_t set, enum caps_style style, char *buf, size_t size);

#endif
