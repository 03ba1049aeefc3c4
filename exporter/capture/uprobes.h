/* SPDX-License-Identifier: MIT */
/*
 * How gospan's uprobes are attached and detached. A plain uprobe link per probe costs the kernel
 * a wait for readers (an RCU grace period) at each detach: with a few dozen probes, stopping
 * gospan took seconds. A uprobe_multi link (Linux 6.6) holds every probe of one program in one
 * binary and pays that wait once. Where the kernel has no uprobe_multi links, each probe gets a
 * plain link as before.
 */
#ifndef GOSPAN_UPROBES_H
#define GOSPAN_UPROBES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct bpf_object;
struct bpf_program;
struct uprobes;

/*
 * Before OBJ is loaded: makes its uprobe programs, all but EXCEPT (attached alone, by
 * emulation.c), uprobe_multi programs. Their links must then be made here.
 */
void uprobes__use_multi(struct bpf_object *obj, const struct bpf_program *except);

/* An empty set of links; MULTI: uprobes__use_multi() was applied to the programs. */
struct uprobes *uprobes__new(bool multi);
/* Detaches everything and frees U. */
void uprobes__free(struct uprobes *u);

/*
 * A probe of PROG at file offset OFF of PATH, for process PID (-1: every process running PATH),
 * with attach cookie COOKIE. ENTRY: it starts calls (attached after the probes that end them).
 * With multi links it waits for uprobes__commit(). A negative errno, logged, on failure.
 */
int uprobes__add(struct uprobes *u, struct bpf_program *prog, const char *path, pid_t pid,
		 uint64_t off, uint64_t cookie, bool entry);

/*
 * Attaches what uprobes__add() queued since the last commit: the programs that end calls
 * first, then those that start them, one link each. A negative errno, logged, on failure, and
 * the queue is dropped.
 */
int uprobes__commit(struct uprobes *u);

/* How many links U holds: a mark for uprobes__rollback(). */
size_t uprobes__mark(const struct uprobes *u);
/* Detaches the links made after MARK, and drops what is queued. */
void uprobes__rollback(struct uprobes *u, size_t mark);
/* Detaches every link. */
void uprobes__detach(struct uprobes *u);

#endif
