// SPDX-License-Identifier: MIT
/*
 * Function spans' ends in a caller's caller. A traced function's call ends in its caller, on the
 * first instruction the kernel emulates after the return (sites.c). When the call is the
 * caller's last, only its epilogue follows (MOVQ x(SP), BP; ADDQ $n, SP; POPQ BP; RET), which
 * the kernel single-steps; the first emulated instruction after the return is then in the
 * caller's callers, after their call of it. Between the two nothing runs but epilogues, so the
 * span ends there as right as in the caller: after the return, before any other call.
 *
 * That site is probed for the function's call with the caller's frame counted in: the end program
 * finds the call's frame by its depth below the top of the stack (bpf/functions.bpf.c), which
 * is the site's SP plus the return address and frame of every caller that returned at once. An
 * end found this way fires for that one call: a call of the caller that did not call the function
 * finds no frame at that depth. The caller cannot have recovered a panic of the function: a
 * function with a deferred call runs it (or runtime.deferreturn) on every way out, so its last
 * call is never followed by its RET alone. A panic recovered further up leaves the call's frame
 * behind, and runtime.recovery's probe drops it (func_recover).
 *
 * Only where every call of each caller on the way is a direct CALL gospan finds: a caller reached
 * through a func value, an interface or a method table could return anywhere, and its end stays
 * single-stepped (the attach line says so).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/elf.h"
#include "analysis/funcends.h"
#include "events.h"

/* How far from a return the caller's RET may be: Go's epilogues are a few instructions. */
#define EPILOGUE_MAX 16

/* By how much instruction B (LEN bytes) raises SP, into *UP; false when it is not known. */
static bool sp_rise(const uint8_t *b, size_t len, uint32_t *up)
{
	int32_t imm;

	/* POPQ r (not SP): 58+r, or 41 58+r for R8-R15. */
	if (len == 1 && b[0] >= 0x58 && b[0] <= 0x5f && b[0] != 0x5c) {
		*up = 8;
		return true;
	}
	if (len == 2 && b[0] == 0x41 && b[1] >= 0x58 && b[1] <= 0x5f) {
		*up = 8;
		return true;
	}
	/* ADDQ $imm, SP (REX.W 83 /0 ib, 81 /0 id) and SUBQ of a negative (/5), as Go writes 128. */
	if (len < 4 || b[0] != 0x48 || (b[2] != 0xc4 && b[2] != 0xec))
		return false;
	if (b[1] == 0x83 && len == 4)
		imm = (int8_t)b[3];
	else if (b[1] == 0x81 && len == 7)
		memcpy(&imm, b + 3, sizeof(imm));
	else
		return false;
	if (b[2] == 0xec)
		imm = -imm;
	if (imm <= 0)
		return false;
	*up = (uint32_t)imm;
	return true;
}

bool funcends__returns_at_once(const struct insns *ins, const uint8_t *code, long ret_idx,
			       uint32_t *frame)
{
	const struct insn *d;
	uint32_t up, sum = 0;
	long i;

	for (i = ret_idx; i < (long)ins->n && i < ret_idx + EPILOGUE_MAX; i++) {
		d = &ins->v[i];
		if (d->kind == INSN_RET) {
			/* A plain RET: RET imm16 would pop more than the return address. */
			if (d->len != 1 || code[d->off] != 0xc3)
				return false;
			*frame = sum;
			return true;
		}
		/* Calls, branches, PUSH: not an epilogue. A NOP, even emulated, changes nothing. */
		if (d->kind != INSN_OTHER && d->kind != INSN_NOP)
			return false;
		if (!(d->writes & (1u << X86_SP)))
			continue;
		if (!sp_rise(code + d->off, d->len, &up) || sum + up > COOKIE_FRAMES_MAX)
			return false;
		sum += up;
	}
	return false;
}

/* Where the ends found go, without repeats. */
struct chain {
	const struct code_map *cm;
	const struct funcends_plan *plan;
	bool with_caller; /* some call ends with a traced caller's */
	struct end_site *v;
	size_t n, cap;
	uint64_t stepped_in; /* the caller at which the search stopped */
	const char *why;
};

static int chain_add(struct chain *c, const struct end_site *e)
{
	size_t i;

	for (i = 0; i < c->n; i++)
		if (c->v[i].off == e->off && c->v[i].frames == e->frames)
			return 0;
	if (c->n == c->cap) {
		size_t ncap = c->cap ? 2 * c->cap : 8;
		struct end_site *v = realloc(c->v, ncap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		c->v = v;
		c->cap = ncap;
	}
	c->v[c->n++] = *e;
	return 0;
}

/* The bytes of the function INS, from the code map's text; NULL when they are not in it. */
static const uint8_t *code_of(const struct code_map *cm, const struct insns *ins)
{
	if (ins->addr < cm->text_addr || ins->addr - cm->text_addr + ins->len > cm->text_len)
		return NULL;
	return cm->text + (ins->addr - cm->text_addr);
}

/*
 * The ends of a call that returns to instruction RET_IDX of INS, with FRAMES bytes of frames of
 * callers that returned at once below that (LEVEL of them), into C. -ENOENT (C->why says why)
 * when one of them cannot be shown right.
 */
static int ends_after(struct chain *c, const struct insns *ins, long ret_idx, uint32_t frames,
		      int level)
{
	struct call_site *calls = NULL;
	const uint8_t *code;
	struct end_site e;
	uint32_t frame;
	size_t n = 0, i;
	int err;

	sites__after_call(ins, ret_idx, 0, -1, &e);
	if (e.emulated) {
		e.frames = frames;
		err = elf_file__addr_to_offset(c->cm->ef, e.off, &e.off);
		return err ? -ENOENT : chain_add(c, &e);
	}
	code = code_of(c->cm, ins);
	if (!code || !funcends__returns_at_once(ins, code, ret_idx, &frame)) {
		c->stepped_in = ins->addr;
		c->why = level ? "a caller on the way does not return at once after its call, nor "
				 "reach an emulated instruction" :
				 "nothing the kernel emulates follows the return in its caller";
		return -ENOENT;
	}
	for (i = 0; i < c->plan->ntraced; i++) {
		if (c->plan->traced[i] == ins->addr) {
			/* Traced: its call's end finds this call's frame above its own. */
			c->with_caller = true;
			return 0;
		}
	}
	if (level == FUNCENDS_CHAIN_MAX) {
		c->stepped_in = ins->addr;
		c->why = "its callers return at once after it, too many in a row";
		return -ENOENT;
	}
	/* The caller's own return address and frame: 8 bytes more than its RET saw. */
	if ((uint64_t)frames + frame + 8 > COOKIE_FRAMES_MAX)
		return -ENOENT;
	err = sites__find_calls(c->cm, ins->addr, 0, &calls, &n);
	if (err == -ENOMEM)
		return err;
	if (err) {
		c->stepped_in = ins->addr;
		c->why = "its caller returns at once after it and is called indirectly or as a "
			 "tail call, from places that cannot all be found";
		return -ENOENT;
	}
	for (i = 0; !err && i < n; i++)
		err = ends_after(c, &calls[i].ins, calls[i].ret_idx, frames + frame + 8,
				 level + 1);
	sites__free_calls(calls, n);
	return err;
}

int funcends__through_callers(struct site_planner *sp, struct probe_site *site,
			      struct funcends_plan *plan)
{
	const struct code_map *cm = site_planner__code_map(sp);
	struct call_site *calls = NULL;
	struct end_site *ends = NULL;
	struct chain c = {};
	size_t n = 0, i, nends = 0, at;
	bool any = false, with_caller;
	int err;

	plan->ends_with_caller = false;
	plan->stepped_in = 0;
	plan->why = NULL;
	for (i = 0; i < site->nends; i++)
		any |= !site->ends[i].emulated && site->ends[i].in_caller;
	if (!any || !cm)
		return 0;
	/* The calls the ends were planned from, in the same order (site_planner__caller_ends). */
	err = sites__find_calls(cm, site->addr, 0, &calls, &n);
	if (err)
		return err == -ENOMEM ? err : 0;
	if (n != site->nends)
		goto cleanup;
	c.cm = cm;
	c.plan = plan;
	for (i = 0; !err && i < n; i++) {
		const struct end_site *e = &site->ends[i];

		if (e->emulated || !e->in_caller || e->caller != calls[i].ins.addr) {
			err = chain_add(&c, e);
			continue;
		}
		at = c.n;
		with_caller = c.with_caller;
		err = ends_after(&c, &calls[i].ins, calls[i].ret_idx, 0, 0);
		if (err == -ENOENT) {
			/* This call's end stays where it was, single-stepped. */
			c.n = at;
			c.with_caller = with_caller;
			if (!plan->stepped_in) {
				plan->stepped_in = c.stepped_in;
				plan->why = c.why;
			}
			err = chain_add(&c, e);
		}
	}
	if (err)
		goto cleanup;
	plan->ends_with_caller = c.with_caller;
	nends = c.n;
	ends = c.v;
	c.v = NULL;
	free(site->ends);
	site->ends = ends;
	site->nends = nends;
cleanup:
	free(c.v);
	sites__free_calls(calls, n);
	return err == -ENOMEM ? err : 0;
}
