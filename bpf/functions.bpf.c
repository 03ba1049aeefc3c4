// SPDX-License-Identifier: GPL-2.0
/*
 * Function spans (--functions), linked with the other uprobe families into one object, whose
 * maps and helpers it shares (probe.bpf.h). On-CPU time (--cpu-time) is kept by go_runtime.bpf.c.
 *
 * Any function's entry and its ends are probed: its RETs, or the places its calls return to when
 * all of them are direct calls (exporter/analysis/sites.h), or, for a call its caller makes last,
 * the places the caller's calls return to (exporter/analysis/funcends.c). Entry records its
 * arguments as raw words and bounded strings, as the func_config user space derived from DWARF
 * or the config file says, and pushes a frame on the goroutine's span stack; the end that
 * belongs to that frame pops it, and ends with it the calls above it that returned at once into
 * it (FUNC_ENDS_WITH_CALLER). runtime.recovery's probe drops the frames a recovered panic left.
 */
#include "probe.bpf.h"

/*
 * A goroutine's open function calls (--functions), innermost last. The goroutine's current span
 * is the `active` of its `goroutines` entry, as for server spans; each frame keeps what `active`
 * held before its call, so returns restore it in LIFO order and a server span started inside a
 * function span (or the other way round) nests. SDEPTH, the distance from the stack top (g.stack.hi - SP),
 * survives a stack move and is the same at entry and at the call's RETs: a RET pairs with the
 * frame of its own call even when calls in between never returned (a recovered panic), and a
 * second entry at the same SDEPTH is the prologue re-run after stack growth, not recursion.
 */
struct span_frame {
	struct span_ctx prev; /* `active` before this call, when HAS_PREV */
	__u64 start_ns;
	__u64 cpu_start_ns; /* the goroutine's running time at entry (--cpu-time) */
	__u64 sdepth;
	__u64 span_id; /* the call's own span, as active_put put it */
	__u32 func;
	__u32 has_prev;
};

struct span_stack {
	__u32 depth; /* frames in use */
	__u32 _pad;
	struct span_frame frames[MAX_SPAN_DEPTH];
};

_Static_assert((MAX_SPAN_DEPTH & (MAX_SPAN_DEPTH - 1)) == 0, "MAX_SPAN_DEPTH: a power of two");

/* One per traced function: the attach cookie minus FUNC_COOKIE_BASE is the index. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, MAX_FUNCS);
	__type(key, __u32);
	__type(value, struct func_config);
} funcs SEC(".maps");

/* Open function calls, by goroutine. LRU: goroutines that exit mid-call leave theirs behind. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 65536);
	__type(key, struct goroutine_key);
	__type(value, struct span_stack);
} span_stacks SEC(".maps");

/* A zeroed span_stack: too big for the stack, copied into the map for a goroutine's first call. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct span_stack);
} empty_stack SEC(".maps");

/*
 * Drops the frames of ST from AT up: calls that are over, whose end will never be seen. The
 * goroutine's current span goes back to what it was before them when it is one of theirs; a
 * span begun since (a request served after them) stays.
 */
static __always_inline void drop_frames(const struct goroutine_key *key, struct span_stack *st,
					__u32 at)
{
	const struct goroutine_state *gs = bpf_map_lookup_elem(&goroutines, key);
	const struct span_frame *fr;
	__u32 j, d = st->depth;
	bool theirs = false;
	__u64 cur;

	if (at >= MAX_SPAN_DEPTH || at >= d)
		return;
	if (gs && gs->active.live) {
		__builtin_memcpy(&cur, gs->active.span_id, sizeof(cur));
		for (j = 0; j < MAX_SPAN_DEPTH; j++) {
			if (j >= d)
				break;
			if (j >= at && st->frames[j].span_id == cur) {
				theirs = true;
				break;
			}
		}
	}
	fr = &st->frames[at];
	if (theirs && fr->has_prev)
		active_put(key, &fr->prev);
	else if (theirs)
		active_clear(key);
	st->depth = at;
}

/* The function probe's config, its target's, and the goroutine; NULL when unusable. */
static __always_inline const struct func_config *func_context(GO_REGS *ctx,
							      const struct target_config **cfg,
							      struct goroutine_key *key,
							      __u32 *fidx, __u64 *sdepth)
{
	const struct func_config *fc;
	void *g = GO_G_PTR(ctx);
	__u64 cookie = bpf_get_attach_cookie(ctx);

	*fidx = (__u32)cookie - FUNC_COOKIE_BASE;
	fc = bpf_map_lookup_elem(&funcs, fidx);
	if (!fc) {
		count_drop(DROP_NO_CONFIG);
		return NULL;
	}
	*cfg = bpf_map_lookup_elem(&targets, &fc->target);
	if (!*cfg) {
		count_drop(DROP_NO_CONFIG);
		return NULL;
	}
	key->pid = bpf_get_current_pid_tgid() >> 32;
	key->_pad = 0;
	key->goid = go_read_word(g, (*cfg)->g_goid);
	/*
	 * In the caller, past the return: the frame's depth as its entry and RET saw it; in a
	 * caller's caller, after callers that returned at once, their frames above that.
	 */
	*sdepth = go_read_word(g, (*cfg)->g_stack_hi) - GO_SP(ctx) +
		  (cookie & COOKIE_IN_CALLER ? 8 + COOKIE_FRAMES(cookie) : 0);
	return fc;
}

/* Reads one argument as SPEC says; V->ok stays 0 when it cannot be read. */
static __always_inline void read_arg(GO_REGS *ctx, const struct func_arg_spec *spec,
				     struct func_arg_value *v)
{
	__u64 p, n;
	__u32 i, last;

	v->word = 0;
	v->len = 0;
	v->ok = 0;
	switch (spec->kind) {
	case FUNC_ARG_REG:
		v->word = go_arg(ctx, spec->reg);
		v->ok = 1;
		return;
	case FUNC_ARG_REG_STRING:
		v->len =
		    go_copy_string(v->str, MAX_ARG_STR_LEN, (const char *)go_arg(ctx, spec->reg),
				   (__s64)go_arg(ctx, spec->reg2));
		v->ok = 1;
		return;
	case FUNC_ARG_MEM:
	case FUNC_ARG_MEM_STRING:
		break;
	default:
		return;
	}
	if (spec->nderefs < 1 || spec->nderefs > MAX_ARG_DEREFS)
		return;
	last = spec->nderefs - 1;
	p = go_arg(ctx, spec->reg);
	for (i = 0; i < MAX_ARG_DEREFS - 1; i++) {
		if (i >= last)
			break;
		if (!p || bpf_probe_read_user(&p, sizeof(p), (void *)(p + spec->offs[i])))
			return;
	}
	if (!p)
		return; /* a nil pointer on the way: no value */
	/*
	 * Constant indexes: clang spills LAST and checks a copy, and Linux 6.1's verifier does not
	 * carry a bound from a register to the stack slot it was filled from.
	 */
	_Static_assert(MAX_ARG_DEREFS == 3, "one index a dereference");
	p += last == 0 ? spec->offs[0] : last == 1 ? spec->offs[1] : spec->offs[2];
	if (spec->kind == FUNC_ARG_MEM_STRING) {
		v->len = go_read_string(v->str, MAX_ARG_STR_LEN, (void *)p);
		v->ok = 1;
		return;
	}
	n = spec->size;
	if (n < 1 || n > 8)
		return;
	if (bpf_probe_read_user(&v->word, n, (void *)p))
		return;
	v->ok = 1;
}

SEC("uprobe")
int func_entry(GO_REGS *ctx)
{
	__u64 now = bpf_ktime_get_ns(), sdepth;
	const struct target_config *cfg;
	const struct func_config *fc;
	struct span_ctx *cur;
	struct span_frame *top, *fr;
	struct goroutine_key key;
	struct span_stack *st;
	struct func_start *e;
	struct span_ctx sc = {};
	__u32 fidx, d, i, j, zero = 0;

	fc = func_context(ctx, &cfg, &key, &fidx, &sdepth);
	if (!fc)
		return 0;
	st = bpf_map_lookup_elem(&span_stacks, &key);
	if (!st) {
		struct span_stack *empty = bpf_map_lookup_elem(&empty_stack, &zero);

		if (!empty)
			return 0;
		bpf_map_update_elem(&span_stacks, &key, empty, BPF_NOEXIST);
		st = bpf_map_lookup_elem(&span_stacks, &key);
		if (!st) {
			count_drop(DROP_INFLIGHT_FULL);
			return 0;
		}
	}
	d = st->depth;
	if (d > MAX_SPAN_DEPTH)
		return 0; /* cannot happen: only this goroutine's probes write it */
	if (d > 0) {
		top = &st->frames[(d - 1) & (MAX_SPAN_DEPTH - 1)];
		/* The prologue re-run after runtime.morestack: the same call, keep its start. */
		if (top->func == fidx && top->sdepth == sdepth)
			return 0;
	}
	/*
	 * A frame as deep as this call or deeper is over: its call's end was never seen (one that
	 * was to end with a caller whose own call began before gospan attached). Dropped with what
	 * is above it; user space drops their calls when this one starts at its place.
	 */
	for (j = 0; j < MAX_SPAN_DEPTH; j++) {
		if (j >= d)
			break;
		if (st->frames[j].sdepth >= sdepth) {
			drop_frames(&key, st, j);
			d = j;
			break;
		}
	}
	if (d == MAX_SPAN_DEPTH) {
		count_drop(DROP_STACK_FULL);
		return 0;
	}

	e = bpf_ringbuf_reserve(&events, sizeof(*e), 0);
	if (!e) {
		count_drop(DROP_RINGBUF_FULL);
		return 0;
	}
	fill_header(&e->hdr, EVENT_FUNC_START, &key, now);
	e->func = fidx;
	e->depth = d;
	e->cookie = fc->target;

	/* A child of what the goroutine works for, or of what its parent goroutine does. */
	cur = child_span(ctx, cfg, &key, &e->ids);
	for (i = 0; i < MAX_FUNC_ARGS; i++) {
		if (i >= fc->nargs)
			break;
		read_arg(ctx, &fc->args[i], &e->args[i]);
	}

	fr = &st->frames[d & (MAX_SPAN_DEPTH - 1)];
	fr->has_prev = cur != NULL;
	if (cur)
		fr->prev = *cur;
	fr->start_ns = now;
	fr->cpu_start_ns = cfg->cpu_time ? gclock_now(ctx, key.pid, now) : 0;
	fr->sdepth = sdepth;
	fr->func = fidx;
	__builtin_memcpy(&fr->span_id, e->ids.span_id, sizeof(fr->span_id));
	st->depth = d + 1;

	span_ctx_of(&sc, &e->ids);
	active_put(&key, &sc);
	bpf_ringbuf_submit(e, submit_flags());
	return 0;
}

/*
 * Ends the call of frame FR, at POS on KEY's stack, at NOW: a call that returned at once into
 * the one whose end is being handled, when its function is known to (FUNC_ENDS_WITH_CALLER).
 * Otherwise its frame is only dropped, as a call that never returned.
 */
static __always_inline void end_with_caller(const GO_REGS *ctx, const struct target_config *cfg,
					    const struct goroutine_key *key,
					    const struct span_frame *fr, __u32 pos, __u64 now)
{
	const struct func_config *fc;
	struct func_end *e;
	__u32 fidx = fr->func;

	fc = bpf_map_lookup_elem(&funcs, &fidx);
	if (!fc || !(fc->flags & FUNC_ENDS_WITH_CALLER))
		return;
	e = bpf_ringbuf_reserve(&events, sizeof(*e), 0);
	if (!e) {
		count_drop(DROP_RINGBUF_FULL);
		return;
	}
	fill_header(&e->hdr, EVENT_FUNC_END, key, fr->start_ns);
	e->end_ns = now;
	e->cpu_ns = cfg->cpu_time ? gclock_now(ctx, key->pid, now) - fr->cpu_start_ns : ~0ULL;
	e->func = fidx;
	e->depth = pos;
	bpf_ringbuf_submit(e, submit_flags());
}

SEC("uprobe")
int func_return(GO_REGS *ctx)
{
	__u64 now = bpf_ktime_get_ns(), sdepth;
	const struct target_config *cfg;
	const struct func_config *fc;
	struct goroutine_key key;
	struct span_stack *st;
	struct span_frame *fr;
	struct func_end *e;
	__u32 fidx, d, i, j, at = MAX_SPAN_DEPTH;

	fc = func_context(ctx, &cfg, &key, &fidx, &sdepth);
	if (!fc)
		return 0;
	st = bpf_map_lookup_elem(&span_stacks, &key);
	if (!st)
		return 0; /* the call began before we attached */
	d = st->depth;
	/*
	 * Innermost first. Frames above the one found belong to calls that never returned (a
	 * panic recovered further up); they are dropped with it, and user space counts them.
	 */
	for (j = 0; j < MAX_SPAN_DEPTH; j++) {
		if (j >= d)
			break;
		i = (d - 1 - j) & (MAX_SPAN_DEPTH - 1);
		fr = &st->frames[i];
		if (fr->func == fidx && fr->sdepth == sdepth) {
			at = i;
			break;
		}
	}
	if (at >= MAX_SPAN_DEPTH)
		return 0; /* not a call we saw begin (too deep, or before we attached) */
	/*
	 * The calls above it are over: those that returned at once into it end now with it,
	 * innermost first (user space drops a call's nested calls when it ends).
	 */
	for (j = 0; j < MAX_SPAN_DEPTH; j++) {
		if (j >= d || d - 1 - j <= at)
			break;
		i = (d - 1 - j) & (MAX_SPAN_DEPTH - 1);
		end_with_caller(ctx, cfg, &key, &st->frames[i], i, now);
	}
	fr = &st->frames[at];
	st->depth = at;
	if (fr->has_prev)
		active_put(&key, &fr->prev);
	else
		active_clear(&key);

	e = bpf_ringbuf_reserve(&events, sizeof(*e), 0);
	if (!e) {
		count_drop(DROP_RINGBUF_FULL);
		return 0;
	}
	fill_header(&e->hdr, EVENT_FUNC_END, &key, fr->start_ns);
	e->end_ns = now;
	e->cpu_ns = cfg->cpu_time ? gclock_now(ctx, key.pid, now) - fr->cpu_start_ns : ~0ULL;
	e->func = fidx;
	e->depth = at;
	bpf_ringbuf_submit(e, submit_flags());
	return 0;
}

/*
 * runtime.recovery's call of gogo, which resumes a goroutine in the function whose deferred call
 * recovered a panic, with its SP. Every call deeper than that SP is over and will never reach
 * its end: its frame is dropped here (user space drops its call at the goroutine's next record),
 * and the goroutine's current span goes back to what it was before the outermost of them. Left
 * open, such a frame could be ended later by an end site its depth happens to match, in a
 * caller's caller most of all. Fires only when a panic is recovered.
 *
 * recovery runs on the thread's g0 (mcall), so the goroutine is the one the gobuf names: gogo is
 * an ABI0 function, its one argument on the stack (ABI0_ARG0), a *gobuf whose sp and g are its
 * first and third words in every Go release. arm64's sp is RSP as the resumed function had it,
 * which is also what its frames' depths are measured from (at their first instruction).
 */
/* Where an ABI0 function's first argument is at its call: above arm64's slot for the saved LR. */
#if defined(__TARGET_ARCH_x86)
#define ABI0_ARG0 0
#else
#define ABI0_ARG0 8
#endif

SEC("uprobe")
int func_recover(GO_REGS *ctx)
{
	const struct target_config *cfg;
	struct goroutine_key key;
	struct span_stack *st;
	__u64 buf, sp, g, cut;
	__u32 cookie = (__u32)bpf_get_attach_cookie(ctx);
	__u32 d, i, j, at = MAX_SPAN_DEPTH;

	cfg = bpf_map_lookup_elem(&targets, &cookie);
	if (!cfg)
		return 0;
	buf = go_read_word((void *)GO_SP(ctx), ABI0_ARG0);
	if (!buf)
		return 0;
	sp = go_read_word((void *)buf, 0);
	g = go_read_word((void *)buf, 16);
	if (!sp || !g)
		return 0;
	key.pid = bpf_get_current_pid_tgid() >> 32;
	key._pad = 0;
	key.goid = go_read_word((void *)g, cfg->g_goid);
	st = bpf_map_lookup_elem(&span_stacks, &key);
	if (!st)
		return 0;
	cut = go_read_word((void *)g, cfg->g_stack_hi) - sp;
	d = st->depth;
	/*
	 * Outermost first: the first frame of a call the resumed function made (its depth at least
	 * the resumed SP's: 8 more on amd64, where the CALL pushed the return address), and all
	 * above it. The resumed function's own frame is shallower.
	 */
	for (j = 0; j < MAX_SPAN_DEPTH; j++) {
		if (j >= d)
			break;
		i = j & (MAX_SPAN_DEPTH - 1);
		if (st->frames[i].sdepth >= cut) {
			at = i;
			break;
		}
	}
	drop_frames(&key, st, at);
	return 0;
}
