/* SPDX-License-Identifier: MIT */
/*
 * What records.c shares with the protocol families' capture modules (http.c, grpc.c, funcspan.c,
 * dbspan.c), private to capture/: a family lists the records it turns into spans, and holds its
 * calls open and closes them through records.c, which owns the calls in flight (their table,
 * their panics, their loss, their drop counts). Adding a family adds its module and one entry
 * to records.c's list of families.
 */
#ifndef GOSPAN_RECORDS_FAMILY_H
#define GOSPAN_RECORDS_FAMILY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "model/span.h"

#ifndef container_of
#define container_of(ptr, type, member) ((type *)((char *)(ptr) - offsetof(type, member)))
#endif

struct process;
struct record_header;
struct records;
struct records_opts;
struct span_ids;

/* A record type a family handles, and how: records.c's dispatch table is made of these. */
struct record_handler {
	uint32_t type; /* enum event_type */
	size_t size;   /* of its struct: a shorter record is malformed */
	void (*handle)(struct records *r, const void *record);
};

/* The list each family exports, ended by an entry without HANDLE; records.c lists the lists. */
extern const struct record_handler http_records[];
extern const struct record_handler grpc_records[];
extern const struct record_handler func_records[];
extern const struct record_handler db_records[];
extern const struct record_handler route_records[];
extern const struct record_handler fasthttp_records[];
extern const struct record_handler kafka_records[];
extern const struct record_handler procstart_records[];

struct pending;

/* A kind of call a family holds open between its start and end records. */
struct call_kind {
	uint32_t start_type; /* its start record's type, for opts.in_flight */
	enum span_kind span_kind;
	/*
	 * A goroutine may have several open at once (nested function calls, gRPC streams): a new
	 * one does not end the one open, and an end names its call by start time.
	 */
	bool several;
	/* The family's struct of the call, whose first member is its struct pending. */
	size_t size;
	/* Optional: what it sets on the span of a call that panicked and never returned. */
	void (*panicked)(struct pending *p);
};

/*
 * A call in flight, whose span is built as its records come: the first member of its family's
 * struct. A family reads it; records.c alone writes it.
 */
struct pending {
	const struct call_kind *kind;
	uint32_t pid;
	uint64_t goid;
	uint64_t start_ns; /* monotonic, from the record: names the call */
	uint64_t panic_ns; /* monotonic; 0 = no panic seen */
	uint64_t aged_from_ns; /* monotonic: its start, or when BPF last said it still held it */
	bool held;	       /* its span has a place held in the export queue (opts.hold) */
	struct span *span;
	struct process *proc;
	struct pending *next; /* in its bucket of records.c's table */
};

/*
 * Opens the call of KIND a start record names (its header H, attach cookie COOKIE), with its
 * span: ids as BPF chose them (the calls it makes already carry them), times converted, the
 * family's struct zeroed past its struct pending. NULL when it cannot be held (counted).
 */
struct pending *records__open_call(struct records *r, const struct call_kind *kind,
				   const struct record_header *h, uint32_t cookie,
				   const struct span_ids *ids);
/*
 * Takes the call of KIND an end record closes and sets its span's end; NULL (counted) when the
 * start was lost, or when the call held is an older one that never returned.
 */
struct pending *records__close_call(struct records *r, const struct call_kind *kind,
				    const struct record_header *h, uint64_t end_ns);
/*
 * Hands a closed call's span on: its on-CPU time when the end record carries one (CPU_NS ~0: not
 * measured), into the place held for it since a panic if there is one. P is freed.
 */
void records__finish(struct records *r, struct pending *p, uint64_t cpu_ns);
/* The open call of KIND of (PID, GOID), the newest: NULL when none is. */
struct pending *records__find(struct records *r, const struct call_kind *kind, uint32_t pid,
			      uint64_t goid);
/*
 * Takes out of the table the first open call of KIND of (PID, GOID) that MATCH (called with ARG)
 * accepts, for a family whose end records name their call in a way of their own.
 */
struct pending *records__take_if(struct records *r, const struct call_kind *kind, uint32_t pid,
				 uint64_t goid,
				 bool (*match)(const struct pending *p, const void *arg),
				 const void *arg);
/*
 * P, taken out of the table, ended at END_NS (monotonic): finished as records__finish does. P
 * NULL: an end whose start was lost (counted).
 */
void records__finish_at(struct records *r, struct pending *p, uint64_t end_ns, uint64_t cpu_ns);
/*
 * P, taken out of the table, will never return (its goroutine left it): failed at its panic if
 * it had one, else dropped (counted).
 */
void records__abandon(struct records *r, struct pending *p);
/*
 * Marks open call P as panicked at PANIC_NS: finished as failed there unless it still returns
 * within the grace. Its span takes its place in the export queue now.
 */
void records__panicked(struct records *r, struct pending *p, uint64_t panic_ns);

/*
 * The span of a call one record tells whole (start, end, ids), which was never in flight here,
 * for the family to fill and hand to records__emit; *PROC is the process the record names, whose
 * target is known. NULL (counted) when that process, its target or the memory cannot be had.
 */
struct span *records__whole_span(struct records *r, const struct record_header *h,
				 uint32_t cookie, const struct span_ids *ids, enum span_kind kind,
				 uint64_t end_ns, struct process **proc);
/* Hands on a span records__whole_span gave (and frees it when its trace is unsampled). */
void records__emit(struct records *r, struct span *s);
/* The options R was made with: the families' settings are among them (db_query_text). */
const struct records_opts *records__opts(const struct records *r);

#endif
