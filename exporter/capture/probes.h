/* SPDX-License-Identifier: MIT */
/*
 * The BPF side as user space sees it: load the skeleton, give each target its config slot (the
 * attach cookie), attach uprobes at entry and every RET, read the ring buffer and the counters.
 */
#ifndef GOSPAN_PROBES_H
#define GOSPAN_PROBES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "events.h"

struct target;
struct probes;

/* Called for each ring-buffer record; return non-zero to stop the current poll. */
typedef int (*probes_record_fn)(void *ctx, const void *data, size_t size);

/*
 * Loads the BPF programs; with PROPAGATE, the socket-layer writer of trace context too, when the
 * kernel allows it (else a warning says why not). NULL with errno on failure; the reason is
 * logged.
 */
struct probes *probes__load(probes_record_fn fn, void *ctx, bool propagate);
/* How many of the probes attached cost the traced thread one trap a hit, and how many two. */
struct probe_counts {
	size_t emulated, stepped;
};

/*
 * Attaches T's probes for process PID (-1: every process running T's binary), with cookie
 * *COOKIE (assigned here); FOLLOW_GOROUTINES adds runtime.newproc1's; T's functions (--functions)
 * get their entry and ends, and T->func_base is set; with T->cfg.cpu_time, runtime.execute and
 * runtime.schedule (and, once, the kernel's sched_switch tracepoint).
 * Returns the number of uprobes attached, or a negative errno; *N, what they cost a hit.
 */
int probes__attach(struct probes *p, struct target *t, pid_t pid, bool follow_goroutines,
		   uint32_t *cookie, struct probe_counts *n);
/* Waits up to TIMEOUT_MS, then consumes whatever is in the ring buffer. Records seen, or -errno. */
int probes__poll(struct probes *p, int timeout_ms);
/* Sums the per-CPU drop counters. */
int probes__drops(struct probes *p, uint64_t out[DROP__COUNT]);
/*
 * Total runs of gospan's BPF programs: the probe hits the traced processes paid; with BUF, the
 * same per program, as "name=N ..." for the programs that ran. The kernel counts them only while
 * kernel.bpf_stats_enabled is 1.
 */
int probes__hits(struct probes *p, uint64_t *hits, char *buf, size_t size);
/*
 * Whether outgoing calls carry trace context: false when the socket-layer writer could not be
 * loaded here (the reason was logged at load).
 */
bool probes__can_propagate(const struct probes *p);
/*
 * Makes the client sockets of process PID, running target T, carry trace context: those it
 * opens from now on and the ones it has open. Nothing to do when no context goes out.
 */
int probes__track_process(struct probes *p, pid_t pid, const struct target *t);
/* Tracks the processes that made their first client call since the last sync (--exe). */
void probes__sync(struct probes *p);
/* Sums the per-CPU propagation counters (enum propagation_result). */
int probes__propagation(struct probes *p, uint64_t out[PROP__COUNT]);
/*
 * Ends the call at START_NS of goroutine GOID in PID, which panicked, if BPF still holds that
 * call when the goroutine next runs a probe: the goroutine goes back to the span it worked for
 * before, and a late RET sends nothing.
 */
int probes__forget(struct probes *p, uint32_t pid, uint64_t goid, uint64_t start_ns);
/*
 * Whether BPF still holds the call of goroutine GOID in PID that began at START_NS, whose start
 * record was of TYPE: 1 yes, 0 no (it ended unseen, or its entry was evicted), -EOPNOTSUPP for
 * the kinds of call it cannot tell (functions, gRPC), another negative errno on failure.
 */
int probes__in_flight(struct probes *p, uint32_t type, uint32_t pid, uint64_t goid,
		      uint64_t start_ns);
/* Removes every uprobe; the ring buffer stays readable so nothing already captured is lost. */
void probes__detach(struct probes *p);
/* Detaches everything and unloads. */
void probes__destroy(struct probes *p);

#endif
