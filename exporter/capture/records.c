// SPDX-License-Identifier: MIT
/*
 * Ring-buffer records to spans: each record goes to the handler its family's module (http.c,
 * grpc.c, funcspan.c, dbspan.c) lists for its type, and the calls those handlers open are kept
 * here until their end, in a table keyed by (pid, goroutine). A call's span is built as its
 * records come (so no record is copied); what it means, its name and attributes, is its family's.
 * Here: which call an end closes, calls that panicked or never returned, calls whose end was
 * lost, and a count for every record that became no span.
 */
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "core/clock.h"
#include "events.h"
#include "core/log.h"
#include "capture/process.h"
#include "capture/records.h"
#include "capture/records_family.h"
#include "model/semconv.h"
#include "model/span.h"

#define PENDING_BUCKETS 4096 /* power of two */
/* Freed call structs kept for reuse: for this many sizes (a family's), this many of each. */
#define SPARE_SIZES 8
#define SPARE_CALLS 64

const char *const records_drop_names[RECORDS_DROP__COUNT] = {
	[RECORDS_DROP_MALFORMED] = "malformed_record",
	[RECORDS_DROP_NO_START] = "start_lost",
	[RECORDS_DROP_ABANDONED] = "no_return",
	[RECORDS_DROP_PROCESS_EXITED] = "process_exited",
	[RECORDS_DROP_NO_PROCESS] = "unknown_process",
	[RECORDS_DROP_NO_MEMORY] = "out_of_memory",
	[RECORDS_DROP_TOO_MANY_PENDING] = "too_many_in_flight",
	[RECORDS_DROP_END_LOST] = "end_lost",
	[RECORDS_DROP_UNFINISHED] = "in_flight_at_exit",
};

/*
 * The protocol families, each a capture/<family>.c whose list of records records_family.h
 * declares: a new family adds a line here and one there.
 */
static const struct record_handler *const families[] = {
	http_records,
	grpc_records,
	func_records,
	db_records,
	route_records,
	fasthttp_records,
	kafka_records,
	procstart_records,
};

struct records {
	struct records_opts opts;
	/* Each record type's handler, indexed by type: the families' lists, read once. */
	const struct record_handler **handlers;
	uint32_t ntypes;
	struct pending *buckets[PENDING_BUCKETS];
	struct records_stats stats;
	/*
	 * Call structs of ended calls, by size, linked through next: a call's struct is freed
	 * and another made for each span, on this one thread. Kept here rather than left to
	 * malloc because the compiler turns malloc and memset into calloc, which glibc serves
	 * without its per-thread cache (350 instructions a span under callgrind).
	 */
	struct {
		size_t size;
		struct pending *head;
		unsigned int n;
	} spare[SPARE_SIZES];
};

/* Indexes the families' handlers by record type; -EEXIST when two claim a type (a bug). */
static int index_handlers(struct records *r)
{
	const struct record_handler *h;
	size_t i;

	for (i = 0; i < sizeof(families) / sizeof(families[0]); i++)
		for (h = families[i]; h->handle; h++)
			if (h->type >= r->ntypes)
				r->ntypes = h->type + 1;
	r->handlers = calloc(r->ntypes, sizeof(*r->handlers));
	if (!r->handlers)
		return -ENOMEM;
	for (i = 0; i < sizeof(families) / sizeof(families[0]); i++) {
		for (h = families[i]; h->handle; h++) {
			if (r->handlers[h->type]) {
				pr_err("cannot dispatch record type %u: two families handle it",
				       h->type);
				return -EEXIST;
			}
			r->handlers[h->type] = h;
		}
	}
	return 0;
}

struct records *records__new(const struct records_opts *opts)
{
	struct records *r = calloc(1, sizeof(*r));
	int err;

	if (!r)
		return NULL;
	r->opts = *opts;
	err = index_handlers(r);
	if (err) {
		records__free(r);
		errno = -err;
		return NULL;
	}
	return r;
}

/* A zeroed call struct of SIZE bytes; NULL without memory. */
static struct pending *call_alloc(struct records *r, size_t size)
{
	struct pending *p = NULL;
	size_t i;

	for (i = 0; i < SPARE_SIZES && !p; i++) {
		if (r->spare[i].size == size && r->spare[i].head) {
			p = r->spare[i].head;
			r->spare[i].head = p->next;
			r->spare[i].n--;
		}
	}
	if (!p)
		p = malloc(size);
	if (p)
		memset(p, 0, size);
	return p;
}

/* Frees P's span and keeps P for call_alloc, unless enough of its size are kept already. */
static void pending_free(struct records *r, struct pending *p)
{
	size_t i, size = p->kind->size;

	span__free(p->span);
	for (i = 0; i < SPARE_SIZES; i++) {
		if (!r->spare[i].size)
			r->spare[i].size = size;
		if (r->spare[i].size != size)
			continue;
		if (r->spare[i].n >= SPARE_CALLS)
			break;
		p->next = r->spare[i].head;
		r->spare[i].head = p;
		r->spare[i].n++;
		return;
	}
	free(p);
}

void records__free(struct records *r)
{
	struct pending *p, *next;
	size_t i;

	if (!r)
		return;
	for (i = 0; i < PENDING_BUCKETS; i++) {
		for (p = r->buckets[i]; p; p = next) {
			next = p->next;
			span__free(p->span);
			free(p);
		}
	}
	for (i = 0; i < SPARE_SIZES; i++) {
		for (p = r->spare[i].head; p; p = next) {
			next = p->next;
			free(p);
		}
	}
	free(r->handlers);
	free(r);
}

const struct records_opts *records__opts(const struct records *r)
{
	return &r->opts;
}

static struct pending **bucket(struct records *r, uint32_t pid, uint64_t goid)
{
	uint64_t h = (goid ^ ((uint64_t)pid << 32)) * 0x9e3779b97f4a7c15ULL;

	return &r->buckets[(h >> 32) & (PENDING_BUCKETS - 1)];
}

struct pending *records__take_if(struct records *r, const struct call_kind *kind, uint32_t pid,
				 uint64_t goid,
				 bool (*match)(const struct pending *p, const void *arg),
				 const void *arg)
{
	struct pending **pp, *p;

	for (pp = bucket(r, pid, goid); (p = *pp); pp = &p->next) {
		if (p->pid == pid && p->goid == goid && p->kind == kind &&
		    (!match || match(p, arg))) {
			*pp = p->next;
			r->stats.pending--;
			return p;
		}
	}
	return NULL;
}

static bool started_at(const struct pending *p, const void *start_ns)
{
	return p->start_ns == *(const uint64_t *)start_ns;
}

/* Finds and unlinks the pending call of (pid, goid, kind) that started at START_NS (0: any). */
static struct pending *take(struct records *r, const struct call_kind *kind, uint32_t pid,
			    uint64_t goid, uint64_t start_ns)
{
	return records__take_if(r, kind, pid, goid, start_ns ? started_at : NULL, &start_ns);
}

struct pending *records__find(struct records *r, const struct call_kind *kind, uint32_t pid,
			      uint64_t goid)
{
	struct pending *p;

	for (p = *bucket(r, pid, goid); p; p = p->next)
		if (p->pid == pid && p->goid == goid && p->kind == kind)
			return p;
	return NULL;
}

static void drop(struct records *r, struct pending *p, enum records_drop why)
{
	if (p->panic_ns)
		r->stats.panics_held--;
	r->stats.dropped[why]++;
	pending_free(r, p);
}

/*
 * Hands a finished span on, measured for the metrics first, into the place held for it when
 * HELD, unless its trace is not sampled: the caller said so in the traceparent flags, and a parent-based sampler keeps no span
 * of such a trace (nor is a place held for one).
 */
static void emit(struct records *r, struct span *s, bool held)
{
	if (r->opts.measure)
		r->opts.measure(r->opts.ctx, s, s->flags & 1, held);
	if (!(s->flags & 1)) {
		r->stats.unsampled++;
		span__free(s);
		return;
	}
	r->stats.spans++;
	if (held)
		r->opts.submit_held(r->opts.ctx, s);
	else
		r->opts.submit(r->opts.ctx, s);
}

void records__emit(struct records *r, struct span *s)
{
	emit(r, s, false);
}

/*
 * A span's end: its start plus the monotonic time between the two. Converting the end on its own
 * would use the clock offset current then, and a step of the wall clock since the start (a resync)
 * would become part of the span's duration, a negative one for a step back. An end before its
 * start (a corrupt record) gives a span of no duration.
 */
static void set_end(struct span *s, uint64_t start_mono, uint64_t end_mono)
{
	s->end_ns = s->start_ns + (end_mono > start_mono ? end_mono - start_mono : 0);
}

/*
 * The one way a call's span is finished, whatever its kind: its on-CPU time when the end record
 * carries one (CPU_NS ~0: not measured), the panic it may have outlived, and the span handed on,
 * into the place held for it since that panic if there is one. P is freed; the span is gone on.
 */
void records__finish(struct records *r, struct pending *p, uint64_t cpu_ns)
{
	if (cpu_ns != ~0ULL)
		span__set_int(p->span, GOSPAN_CPU_TIME_NS, (int64_t)cpu_ns);
	if (p->panic_ns)
		r->stats.panics_held--;
	emit(r, p->span, p->held);
	p->span = NULL;
	pending_free(r, p);
}

void records__finish_at(struct records *r, struct pending *p, uint64_t end_ns, uint64_t cpu_ns)
{
	if (!p) {
		r->stats.dropped[RECORDS_DROP_NO_START]++;
		return;
	}
	set_end(p->span, p->start_ns, end_ns);
	records__finish(r, p, cpu_ns);
}

/* A panicked call that did not return: the request failed at the panic. */
static void finish_panicked(struct records *r, struct pending *p)
{
	struct span *s = p->span;

	set_end(s, p->start_ns, p->panic_ns);
	s->status = SPAN_STATUS_ERROR;
	s->status_msg = span__strndup(s, "handler panicked", 16);
	span__set_str(s, SC_ERROR_TYPE, "panic", 5);
	if (p->kind->panicked)
		p->kind->panicked(p);
	if (r->opts.forget)
		r->opts.forget(r->opts.ctx, p->pid, p->goid, p->start_ns);
	r->stats.panics++;
	records__finish(r, p, ~0ULL);
}

/* A call its goroutine left for another without returning: failed at its panic, if it had one. */
void records__abandon(struct records *r, struct pending *p)
{
	if (p->panic_ns)
		finish_panicked(r, p);
	else
		drop(r, p, RECORDS_DROP_ABANDONED);
}

/*
 * Whether the call still returns (a panic recovered inside the handler) or not (recovered above
 * it, as net/http does, closing the connection or resetting the stream) is only known when its
 * end comes or the grace passes. Its span takes its place in the export queue now, as if it had
 * ended at the panic: spans queued during the wait cannot take that place.
 */
void records__panicked(struct records *r, struct pending *p, uint64_t panic_ns)
{
	p->panic_ns = panic_ns;
	r->stats.panics_held++;
	if (r->opts.hold && (p->span->flags & 1))
		p->held = !r->opts.hold(r->opts.ctx);
}

/* The ids BPF chose for the span: no random ones to draw here. */
static void set_ids(struct span *s, const struct span_ids *ids)
{
	memcpy(s->trace_id, ids->trace_id, sizeof(s->trace_id));
	memcpy(s->span_id, ids->span_id, sizeof(s->span_id));
	memcpy(s->parent_span_id, ids->parent_span_id, sizeof(s->parent_span_id));
	s->flags = ids->flags;
	s->parent_known = !span__id_is_zero(s->parent_span_id, sizeof(s->parent_span_id));
	s->remote_parent = ids->remote_parent;
}

/*
 * The span of a call that began as header H says, of the process it names: ids as BPF chose
 * them, its start converted. NULL when the process or the memory cannot be had (counted).
 */
static struct span *new_span(struct records *r, const struct record_header *h, uint32_t cookie,
			     const struct span_ids *ids, enum span_kind kind,
			     struct process **procp)
{
	struct process *proc;
	struct span *s;

	proc = process_table__get(r->opts.processes, h->pid, cookie);
	if (!proc) {
		r->stats.dropped[RECORDS_DROP_NO_PROCESS]++;
		return NULL;
	}
	s = span__alloc();
	if (!s) {
		r->stats.dropped[RECORDS_DROP_NO_MEMORY]++;
		return NULL;
	}
	span__set_resource(s, proc->res);
	s->kind = kind;
	s->start_ns = clock__to_unix_ns(r->opts.clock, h->start_ns);
	set_ids(s, ids);
	*procp = proc;
	return s;
}

struct span *records__whole_span(struct records *r, const struct record_header *h,
				 uint32_t cookie, const struct span_ids *ids, enum span_kind kind,
				 uint64_t end_ns, struct process **proc)
{
	struct span *s = new_span(r, h, cookie, ids, kind, proc);

	if (!s)
		return NULL;
	/* Its family reads the record through the target (as dbspan__fill does). */
	if (!(*proc)->target) {
		span__free(s);
		r->stats.dropped[RECORDS_DROP_NO_PROCESS]++;
		return NULL;
	}
	set_end(s, h->start_ns, end_ns);
	return s;
}

struct pending *records__open_call(struct records *r, const struct call_kind *kind,
				   const struct record_header *h, uint32_t cookie,
				   const struct span_ids *ids)
{
	struct pending *p, *old, **b;
	struct process *proc;
	struct span *s;

	/* Calls that nest or run side by side: an open one is not a call that vanished. */
	old = kind->several ? NULL : take(r, kind, h->pid, h->goid, 0);
	/* The goroutine started a new call: the old one will never return. */
	if (old)
		records__abandon(r, old);
	if (r->stats.pending >= r->opts.max_pending) {
		r->stats.dropped[RECORDS_DROP_TOO_MANY_PENDING]++;
		return NULL;
	}
	s = new_span(r, h, cookie, ids, kind->span_kind, &proc);
	if (!s)
		return NULL;
	p = call_alloc(r, kind->size);
	if (!p) {
		span__free(s);
		r->stats.dropped[RECORDS_DROP_NO_MEMORY]++;
		return NULL;
	}
	p->kind = kind;
	p->pid = h->pid;
	p->goid = h->goid;
	p->start_ns = h->start_ns;
	p->aged_from_ns = h->start_ns;
	p->span = s;
	p->proc = proc;

	b = bucket(r, p->pid, p->goid);
	p->next = *b;
	*b = p;
	r->stats.pending++;
	return p;
}

struct pending *records__close_call(struct records *r, const struct call_kind *kind,
				    const struct record_header *h, uint64_t end_ns)
{
	/* A goroutine may have several calls of the kind open: the start time names the call. */
	struct pending *p = take(r, kind, h->pid, h->goid, kind->several ? h->start_ns : 0);

	if (!p) {
		r->stats.dropped[RECORDS_DROP_NO_START]++;
		return NULL;
	}
	if (p->start_ns != h->start_ns) {
		/* The goroutine has started a call since: the one held never returned. */
		records__abandon(r, p);
		r->stats.dropped[RECORDS_DROP_NO_START]++;
		return NULL;
	}
	set_end(p->span, p->start_ns, end_ns);
	return p;
}

int records__handle(void *ctx, const void *data, size_t size)
{
	const struct record_header *h = data;
	const struct record_handler *rh = NULL;
	struct records *r = ctx;

	if (size >= sizeof(*h) && h->type < r->ntypes)
		rh = r->handlers[h->type];
	/* A record too short for its type, or of a type no family handles. */
	if (!rh || size < rh->size) {
		r->stats.dropped[RECORDS_DROP_MALFORMED]++;
		return 0;
	}
	rh->handle(r, data);
	return 0;
}

/*
 * Whether P's end was lost: it has been in flight past the bound, and BPF no longer holds it (the
 * ring buffer was full at its end, its entry was evicted) or cannot say. Dropped, not exported:
 * when it ended is not known, and a span with an end made up here (the sweep's time, minutes
 * late) would put a false latency into every percentile built from the spans, and an error
 * status a failure the service may never have had. A panicked call has its own, shorter, grace.
 */
static bool end_lost(struct records *r, struct pending *p, uint64_t now_ns)
{
	uint64_t bound = r->opts.max_pending_age_ns;

	if (!bound || p->panic_ns || now_ns < p->aged_from_ns || now_ns - p->aged_from_ns < bound)
		return false;
	if (r->opts.in_flight && r->opts.in_flight(r->opts.ctx, p->kind->start_type, p->pid,
						   p->goid, p->start_ns) > 0) {
		/* Long, not lost (a WebSocket, a stream): asked again a bound from now. */
		p->aged_from_ns = now_ns;
		return false;
	}
	return true;
}

static void sweep(struct records *r, uint64_t now_ns, bool final)
{
	struct pending **pp, *p;
	size_t i;

	for (i = 0; i < PENDING_BUCKETS; i++) {
		pp = &r->buckets[i];
		while ((p = *pp)) {
			bool gone = !final && kill(p->pid, 0) && errno == ESRCH;
			bool expired = p->panic_ns && (final || gone ||
						       now_ns - p->panic_ns >= r->opts.panic_grace_ns);
			bool lost = !expired && !gone && !final && end_lost(r, p, now_ns);

			if (!expired && !gone && !final && !lost) {
				pp = &p->next;
				continue;
			}
			*pp = p->next;
			r->stats.pending--;
			if (expired)
				finish_panicked(r, p);
			else
				drop(r, p,
				     final ? RECORDS_DROP_UNFINISHED :
				     lost  ? RECORDS_DROP_END_LOST :
					     RECORDS_DROP_PROCESS_EXITED);
		}
	}
}

void records__tick(struct records *r, uint64_t now_ns)
{
	if (r->stats.pending)
		sweep(r, now_ns, false);
}

bool records__has_calls(const struct records *r, pid_t pid)
{
	const struct pending *p;
	size_t i;

	if (!r->stats.pending)
		return false;
	for (i = 0; i < PENDING_BUCKETS; i++)
		for (p = r->buckets[i]; p; p = p->next)
			if (p->pid == (uint32_t)pid)
				return true;
	return false;
}

void records__flush(struct records *r)
{
	sweep(r, 0, true);
}

void records__stats(const struct records *r, struct records_stats *out)
{
	*out = r->stats;
}
