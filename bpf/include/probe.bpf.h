/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What the uprobe families share (http.bpf.c, grpc.bpf.c, db.bpf.c, functions.bpf.c,
 * go_runtime.bpf.c): they are linked into one object with one skeleton, and these are its common
 * maps, defined in maps.bpf.c, and the helpers every probe uses to find its target's config and
 * its goroutine, to start a record, and to read and set the span a goroutine works for.
 */
#ifndef GOSPAN_PROBE_BPF_H
#define GOSPAN_PROBE_BPF_H

#include <stdbool.h>
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

#include "arch.bpf.h"
#include "events.h"
#include "go_types.bpf.h"
#include "ring.bpf.h"
#include "scratch.bpf.h"
#include "shared_map.bpf.h"
#include "trace_context.bpf.h"
#include "wire_maps.bpf.h"

/* Per-target offsets and register slots; the attach cookie is the index. */
SHARED_MAP(targets, BPF_MAP_TYPE_ARRAY, MAX_TARGETS, __u32, struct target_config);

/*
 * What each goroutine is doing, in one entry so that a probe finds it with one lookup: the span it
 * works for (`active`, read through active_get()) and its ServeHTTP call in flight (`server`).
 * LRU, so that entries of calls whose RET never comes (a goroutine killed by runtime.Goexit, a
 * process that exits mid-request) and of goroutines that are gone can never fill it; the calls
 * user space knows panicked are resolved through `forgotten`. Nothing is deleted when a call
 * ends: the entry is marked (server.start_ns 0, active.live 0) and rewritten in place by the
 * goroutine's next call. A connection's goroutine serves its keep-alive requests one after
 * another, and rewriting costs nothing where an LRU update and a delete cost half a microsecond.
 */
SHARED_MAP(goroutines, BPF_MAP_TYPE_LRU_HASH, 65536, struct goroutine_key, struct goroutine_state);

/*
 * The ServeHTTP calls that panicked and that user space has ended without their RET
 * (probes__forget): goroutine -> the call's start_ns. User space never writes a `goroutines`
 * entry, which BPF rewrites in place and so cannot be read, changed and written back safely
 * (BPF_F_LOCK needs a bpf_spin_lock, which tracing programs may not take). The goroutine's own
 * probes end the call when they next write its entry (own_state()); other goroutines read it as
 * ended (active_get()). Only an entry whose call is marked panicked is looked for here, so calls
 * that do not panic never pay the lookup. Most entries are never used (net/http's recover ends
 * the goroutine) and wait for eviction: a start_ns never comes back, so a stale one matches
 * nothing. One evicted while still needed leaves the goroutine naming the panicked span.
 */
SHARED_MAP(forgotten, BPF_MAP_TYPE_LRU_HASH, 4096, struct goroutine_key, __u64);

/*
 * A zeroed goroutine_state, never written: a goroutine's first entry in `goroutines` is made
 * from it and then filled in place. Built on the stack instead, its 160 bytes were in the frame
 * of every program that starts a span, and with the header map walk's frames below gRPC's
 * server entry the chain passed the 512 bytes the verifier allows.
 */
SHARED_MAP(goroutine_zero, BPF_MAP_TYPE_ARRAY, 1, __u32, struct goroutine_state);

/* Records not sent, by reason (enum drop_reason), per CPU. */
SHARED_MAP(drops, BPF_MAP_TYPE_PERCPU_ARRAY, DROP__COUNT, __u32, __u64);

/*
 * How much of http.Request's head serve_http_entry copies in one read (and of a gRPC stream's,
 * grpc_server_entry): its fields are picked from the copy, which costs one bpf_probe_read_user
 * instead of one per field. In every release the offset tables cover, the fields read at entry
 * (Method .. TLS) lie in the first 0xd8 bytes (a stream's context and method in the first 0x68);
 * a field past the bound is read on its own.
 */
#define REQ_SNAP_MAX 256
_Static_assert((REQ_SNAP_MAX & (REQ_SNAP_MAX - 1)) == 0, "REQ_SNAP_MAX: a power of two");

/*
 * Scratch for records and lines too big for the 512-byte stack. A program claims it (BUSY,
 * scratch_claim()) for its whole run; map_scratch and tracestate_scratch are used only by
 * programs that hold this claim, and it covers them too.
 */
struct scratch {
	__u64 busy;
	char tp[TRACEPARENT_LEN + 1];
	__u8 req[REQ_SNAP_MAX + 16]; /* slack for the masks of req_word() and req_string() */
	struct goroutine_state state; /* a goroutine's first entry, before it is in the map */
	/*
	 * An incoming traceparent, parsed before it goes into its record: the global functions are
	 * handed stack and map memory only, and on the stack it would take the server entries'
	 * frames with the header map walk's below them past the 512 bytes the verifier allows.
	 */
	struct span_ids ids;
};

_Static_assert(__builtin_offsetof(struct scratch, busy) == 0, "scratch_take(): busy word first");

SHARED_MAP(scratch, BPF_MAP_TYPE_PERCPU_ARRAY, 1, __u32, struct scratch);

SHARED_MAP(tracestate_scratch, BPF_MAP_TYPE_PERCPU_ARRAY, 1, __u32, struct tracestate_val);

/*
 * On-CPU time per goroutine (--cpu-time, cputime.bpf.c): only goroutines that had a span are
 * followed. Their clocks are kept by the address of their g, which the scheduler's probes are
 * handed (no read of the goid, a fifth of runtime.execute's probe). A g the runtime reuses for a
 * new goroutine keeps its clock: a span's time is a difference on one goroutine's clock.
 * RUNNING: the goroutine is on a thread that is on a CPU.
 */
struct gclock_key {
	__u32 pid;
	__u32 _pad;
	__u64 g;
};

struct gclock {
	__u64 total_ns; /* time spent on a CPU, up to SINCE_NS when RUNNING */
	__u64 since_ns;
	__u32 running;
	/*
	 * BASE_RUNTIME holds the thread's runtime by the kernel's count (se.sum_exec_runtime) when
	 * the clock started at the thread's switch onto a CPU; 0 when it started elsewhere.
	 */
	__u32 _pad;
	__u64 base_runtime;
};

SHARED_MAP(gclocks, BPF_MAP_TYPE_LRU_HASH, 65536, struct gclock_key, struct gclock);

/* The followed goroutine a thread runs, by thread id: the key of its clock; G 0: none. */
SHARED_MAP(gthreads, BPF_MAP_TYPE_LRU_HASH, 16384, __u32, struct gclock_key);

/* The maps above, which maps.bpf.c defines, all in this one list. */
#define PROBE_MAPS(X)                                                                              \
	X(targets) X(goroutines) X(goroutine_zero) X(forgotten) X(drops) X(scratch)                 \
	X(tracestate_scratch) X(gclocks) X(gthreads)

/* REASON counted N times. */
static __always_inline void count_drops(__u32 reason, __u64 n)
{
	__u64 *cnt = bpf_map_lookup_elem(&drops, &reason);

	if (cnt)
		*cnt += n;
}

static __always_inline void count_drop(__u32 reason)
{
	count_drops(reason, 1);
}

/*
 * A family's per-CPU scratch: the map NAME of one VAL_T (its busy word first), and
 * NAME_claim(), this CPU's value claimed (scratch.bpf.h), or NULL, counted as scratch_busy, when
 * a program this one preempted holds it.
 */
#define UPROBE_SCRATCH(name, val_t)                                                                \
	_Static_assert(__builtin_offsetof(val_t, busy) == 0, "scratch_take(): busy first");       \
	struct {                                                                                   \
		__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);                                           \
		__uint(max_entries, 1);                                                            \
		__type(key, __u32);                                                                \
		__type(value, val_t);                                                              \
	} name SEC(".maps");                                                                       \
	static __always_inline val_t *name##_claim(void)                                          \
	{                                                                                          \
		val_t *sc = scratch_take(&name);                                                   \
                                                                                                   \
		if (!sc)                                                                           \
			count_drop(DROP_SCRATCH_BUSY);                                             \
		return sc;                                                                         \
	}

/* This CPU's scratch, claimed (scratch.bpf.h); NULL, counted, when a preempted program has it. */
static __always_inline struct scratch *scratch_claim(void)
{
	struct scratch *sc = scratch_take(&scratch);

	if (!sc)
		count_drop(DROP_SCRATCH_BUSY);
	return sc;
}

/*
 * The head of a Go struct (http.Request's, a gRPC stream's) as snap_head() copied it into the
 * scratch, and where the struct itself is: its fields are picked from the copy, one read for
 * all of them instead of one each.
 */
struct req_view {
	const void *req;
	const __u8 *snap;
	__u64 len; /* bytes copied; 0 when the copy failed: every field is then read on its own */
};

/* END, or where the field at OFF of SIZE bytes ends if that is further (and within the bound). */
static __always_inline __u64 field_end(__s64 off, __u64 size, __u64 end)
{
	if (off < 0 || off > REQ_SNAP_MAX)
		return end;
	return (__u64)off + size > end ? (__u64)off + size : end;
}

/*
 * Copies the first END bytes (at most REQ_SNAP_MAX) of the struct at PTR into SC's snapshot.
 * Exactly what the fields need: memory past a struct may be a page the process never touched,
 * which a read cannot fault in, and the whole copy would fail.
 */
static __always_inline void snap_head(struct scratch *sc, const void *ptr, __u64 end,
				      struct req_view *v)
{
	if (end > REQ_SNAP_MAX)
		end = REQ_SNAP_MAX;
	v->req = ptr;
	v->snap = sc->req;
	v->len = 0;
	if (end && !bpf_probe_read_user(sc->req, end, ptr))
		v->len = end;
}

/*
 * The word at OFF in the struct: from the copy when it holds it. Whether it does is computed,
 * not tested on OFF (as go_map.bpf.c's snap_word()): a test leaves the verifier other ranges on
 * each way out, and the ways of the fields read one after another did not join again.
 */
static __always_inline __u64 req_word(const struct req_view *v, __s64 off)
{
	__u64 o = (__u64)off;
	/* Sign set when O + 8 > LEN (a failed copy's LEN is 0), or OFF is negative. */
	__u64 outside = ((v->len - 8 - o) | o) >> 63;

	asm volatile("" : "+r"(outside));
	if (!outside)
		return *(const __u64 *)(v->snap + (o & (REQ_SNAP_MAX - 1)));
	return go_read_word(v->req, off);
}

/* The Go string at OFF in the struct into DST (CAP bytes); its real length, as go_read_string. */
static __always_inline __u32 req_string(const struct req_view *v, __s64 off, char *dst, __u32 cap)
{
	return go_copy_string(dst, cap, (const char *)req_word(v, off),
			      (__s64)req_word(v, off + 8));
}

/* Runs the uprobe program BODY with this CPU's scratch claimed, and gives it back. */
static __always_inline int with_scratch(GO_REGS *ctx, void (*body)(GO_REGS *, struct scratch *))
{
	struct scratch *sc = scratch_claim();

	if (sc) {
		body(ctx, sc);
		scratch_unclaim(&sc->busy);
	}
	return 0;
}

/* Finds this probe's target config and the current goroutine's key; NULL if unusable. */
static __always_inline const struct target_config *probe_context(GO_REGS *ctx,
								 struct goroutine_key *key)
{
	__u32 cookie = (__u32)bpf_get_attach_cookie(ctx);
	const struct target_config *cfg = bpf_map_lookup_elem(&targets, &cookie);

	if (!cfg) {
		count_drop(DROP_NO_CONFIG);
		return NULL;
	}
	key->pid = bpf_get_current_pid_tgid() >> 32;
	key->_pad = 0;
	key->goid = go_read_word(GO_G_PTR(ctx), cfg->g_goid);
	return cfg;
}

static __always_inline void fill_header(struct record_header *h, __u32 type,
					const struct goroutine_key *key, __u64 start_ns)
{
	h->type = type;
	h->pid = key->pid;
	h->goid = key->goid;
	h->start_ns = start_ns;
}

/*
 * Whether GS, KEY's entry, holds a ServeHTTP call that panicked and that user space has ended
 * since (`forgotten`): its RET will not come, and the goroutine is back to the span it worked for
 * before the call, if any. Callers test gs->server.panicked first, so that only such a call costs
 * a lookup.
 */
static __always_inline bool server_forgotten(const struct goroutine_key *key,
					     const struct goroutine_state *gs)
{
	__u64 *start = bpf_map_lookup_elem(&forgotten, key);

	return start && gs->server.start_ns && *start == gs->server.start_ns;
}

/*
 * Ends the forgotten call in GS, KEY's entry, as its RET would have: only the goroutine's own
 * probes call this, as only they write their entry. A goroutine that works for no span already
 * (a function the call was made in has returned since) stays so.
 */
static __always_inline void server_forget(const struct goroutine_key *key,
					  struct goroutine_state *gs)
{
	if (gs->server.has_prev && gs->active.live)
		gs->active = gs->server.prev;
	else
		gs->active.live = 0;
	gs->server.start_ns = 0;
	gs->server.panicked = 0;
	bpf_map_delete_elem(&forgotten, key);
}

/*
 * KEY's entry, with a call user space has forgotten ended first: for the goroutine's own probes,
 * before they write it.
 */
static __always_inline struct goroutine_state *own_state(const struct goroutine_key *key)
{
	struct goroutine_state *gs = bpf_map_lookup_elem(&goroutines, key);

	if (gs && gs->server.panicked && server_forgotten(key, gs))
		server_forget(key, gs);
	return gs;
}

/*
 * The server call (net/http's ServeHTTP, fasthttp's request) goroutine KEY is ending, with the
 * goroutine back to the span it worked for before it (a function span), if any; NULL when it has
 * none in flight: begun before gospan attached, or ended already (forgotten at a panic), or its
 * entry gone from the LRU map (counted).
 */
static __always_inline struct inflight_call *server_call_end(const struct goroutine_key *key)
{
	struct goroutine_state *gs = own_state(key);

	if (!gs) {
		count_drop(DROP_END_NO_ENTRY);
		return NULL;
	}
	if (!gs->server.start_ns)
		return NULL;
	if (gs->server.has_prev)
		gs->active = gs->server.prev;
	else
		gs->active.live = 0;
	return &gs->server;
}

/*
 * The span KEY's goroutine works for, or NULL. Entries are written in place, so a goroutine
 * reading another's entry (a child its parent's) while that one rewrites it could see half of
 * each span: only when the parent starts a new span in that same instant, when which span is the
 * parent is a matter of timing anyway. Read only, as another goroutine's entry must be: a call
 * that was forgotten is read as ended.
 */
static __always_inline struct span_ctx *active_get(const struct goroutine_key *key)
{
	struct goroutine_state *gs = bpf_map_lookup_elem(&goroutines, key);

	if (!gs || !gs->active.live)
		return NULL;
	if (gs->server.panicked && server_forgotten(key, gs))
		return gs->server.has_prev ? &gs->server.prev : NULL;
	return &gs->active;
}

/* The goroutine KEY now works for SC: the entry it left behind is reused when there is one. */
static __always_inline void active_put(const struct goroutine_key *key, const struct span_ctx *sc)
{
	struct goroutine_state *gs = own_state(key);
	const struct goroutine_state *zero;
	__u32 idx = 0;

	if (!gs) {
		zero = bpf_map_lookup_elem(&goroutine_zero, &idx);
		if (!zero || bpf_map_update_elem(&goroutines, key, zero, BPF_ANY))
			return;
		gs = bpf_map_lookup_elem(&goroutines, key);
		if (!gs)
			return;
	}
	gs->active = *sc;
	gs->active.live = 1;
}

/* The goroutine KEY works for no span any more. */
static __always_inline void active_clear(const struct goroutine_key *key)
{
	struct goroutine_state *gs = own_state(key);

	if (gs)
		gs->active.live = 0;
}

/* SC names the span IDS: calls the goroutine makes while SC is its `active` become its children. */
static __always_inline void span_ctx_of(struct span_ctx *sc, const struct span_ids *ids)
{
	__builtin_memcpy(sc->trace_id, ids->trace_id, sizeof(sc->trace_id));
	__builtin_memcpy(sc->span_id, ids->span_id, sizeof(sc->span_id));
	sc->flags = ids->flags;
	sc->depth = 0;
	sc->live = 1;
}

/*
 * The span of the goroutine that started goroutine KEY, found with one read of g.parentGoid at no
 * extra probe hit (deeper generations: --follow-goroutines); NULL when it has none or the target
 * does not say.
 */
static __always_inline struct span_ctx *parent_goroutine_span(GO_REGS *ctx,
							      const struct target_config *cfg,
							      const struct goroutine_key *key)
{
	struct goroutine_key pk = { .pid = key->pid };

	if (cfg->g_parent_goid < 0)
		return NULL;
	pk.goid = go_read_word(GO_G_PTR(ctx), cfg->g_parent_goid);
	return active_get(&pk);
}

/*
 * Chooses IDS for the span of a call made on goroutine KEY, sampled as CFG says: a child of the
 * span the goroutine works for, else of its parent goroutine's, else the first span of a new
 * trace. Returns the span the goroutine itself works for (NULL: none), for a caller that makes
 * the new span the goroutine's.
 */
static __always_inline struct span_ctx *child_span(GO_REGS *ctx, const struct target_config *cfg,
						   const struct goroutine_key *key,
						   struct span_ids *ids)
{
	struct span_ctx *own = active_get(key);

	child_ids(ids, own ? own : parent_goroutine_span(ctx, cfg, key), cfg->root_sampler,
		  cfg->parent_based, cfg->ratio_bound);
	return own;
}

/*
 * The ids of a server span: IDS holds the caller's traceparent when HAS_TP (sampled as the
 * sampler says: a parent-based one follows the caller's flag), else the span nests in OUTER (a
 * function span) or starts a trace.
 */
static __always_inline void server_ids(const struct target_config *cfg, struct span_ids *ids,
				       bool has_tp, const struct span_ctx *outer)
{
	if (!has_tp)
		child_ids(ids, outer, cfg->root_sampler, cfg->parent_based, cfg->ratio_bound);
	else if (!cfg->parent_based)
		ids->flags = (ids->flags & ~1) |
			     sample_root(cfg->root_sampler, cfg->ratio_bound, ids->trace_id);
	if (ids->remote_parent)
		random_id(ids->span_id, sizeof(ids->span_id));
}

/*
 * The incoming tracestate, for the trace's outgoing calls to carry on (W3C: a participant that
 * does not change it passes it on). One that was cut at MAX_TRACESTATE_LEN is not passed on
 * cut. Kept by trace, not by span: the calls may come from goroutines the handler started.
 */
static __always_inline void keep_tracestate(__u32 pid, const __u8 *trace_id, const char *ts,
					    __u32 len)
{
	struct tracestate_key k = { .pid = pid };
	struct tracestate_val *v;
	__u32 zero = 0;

	if (!len || len > MAX_TRACESTATE_LEN)
		return;
	v = bpf_map_lookup_elem(&tracestate_scratch, &zero);
	if (!v)
		return;
	__builtin_memcpy(k.trace_id, trace_id, sizeof(k.trace_id));
	v->len = len;
	/*
	 * One helper call: TS's alignment is not known here, and inlined the copy was 512
	 * instructions, checked again on every path of the program that reached it.
	 */
	bpf_probe_read_kernel(v->s, MAX_TRACESTATE_LEN, ts);
	bpf_map_update_elem(&tracestates, &k, v, BPF_ANY);
}

/*
 * The socket-layer writer tracks the client sockets of the processes in `traced`: a process
 * joins on its first client call, which comes before the call's connection is made.
 */
static __always_inline void track_process(const struct target_config *cfg, __u32 pid)
{
	struct traced_process tp = { .g_goid = cfg->g_goid, .tls_g = cfg->tls_g };

	if (!bpf_map_lookup_elem(&traced, &pid))
		bpf_map_update_elem(&traced, &pid, &tp, BPF_NOEXIST);
}

/*
 * Thread TID runs the goroutine whose clock is KEY: written in place where the thread has its
 * entry (an LRU hash's update takes a free node and frees the old one; a thread runs one
 * goroutine after another).
 */
static __always_inline void gthread_set(__u32 tid, const struct gclock_key *key)
{
	struct gclock_key *t = bpf_map_lookup_elem(&gthreads, &tid);

	if (t)
		*t = *key;
	else
		bpf_map_update_elem(&gthreads, &tid, key, BPF_ANY);
}

/* Clock C runs from NOW; RUNTIME: the thread's runtime then by the kernel's count, or 0. */
static __always_inline void gclock_run(struct gclock *c, __u64 now, __u64 runtime)
{
	c->since_ns = now;
	c->base_runtime = runtime;
	c->running = 1;
}

/*
 * The running time so far of the goroutine this probe runs on (process PID). It is running now,
 * on this thread: a clock that is missing (its first span) or says otherwise starts running from
 * NOW, and the thread is marked as running it, so that runtime.schedule and the kernel's
 * switches stop it.
 */
static __always_inline __u64 gclock_now(const GO_REGS *ctx, __u32 pid, __u64 now)
{
	struct gclock_key key = {.pid = pid, .g = (__u64)GO_G_PTR(ctx)};
	struct gclock *c = bpf_map_lookup_elem(&gclocks, &key);
	struct gclock fresh = {.since_ns = now, .running = 1};
	__u64 total = 0;

	if (c && c->running)
		return c->total_ns + (now - c->since_ns);
	if (c) {
		total = c->total_ns;
		gclock_run(c, now, 0);
	} else {
		bpf_map_update_elem(&gclocks, &key, &fresh, BPF_ANY);
	}
	gthread_set((__u32)bpf_get_current_pid_tgid(), &key);
	return total;
}

#endif
