/* SPDX-License-Identifier: MIT */
/*
 * Function spans' ends in a caller's caller (funcends.c): where a traced function's call is the
 * last thing its caller does, the first instruction the kernel emulates after the return is in
 * the caller's own callers.
 */
#ifndef GOSPAN_FUNCENDS_H
#define GOSPAN_FUNCENDS_H

#include <stdbool.h>
#include <stdint.h>

#include "analysis/disasm.h"
#include "analysis/planner.h"
#include "analysis/sites.h"

/* How many callers returning at once, one into the next, an end is sought through. */
#define FUNCENDS_CHAIN_MAX 4

/*
 * Whether the straight line from instruction RET_IDX of INS (the return address of a call in
 * it) runs to a RET through instructions that only move data and raise SP: the call was the
 * function's last, and it returns at once. *FRAME: by how many bytes SP rises on the way (the
 * function's frame: the return address RET pops is that far above SP at RET_IDX). CODE: INS's
 * bytes, from its start.
 */
bool funcends__returns_at_once(const struct insns *ins, const uint8_t *code, long ret_idx,
			       uint32_t *frame);

/* Where a function's ends go when its callers return at once after it. */
struct funcends_plan {
	/* The traced functions of the target (link-time addresses), itself included. */
	const uint64_t *traced;
	size_t ntraced;
	/*
	 * Out: some of its calls end with a traced caller's call they returned at once into,
	 * at that call's end, with no probe of their own (FUNC_ENDS_WITH_CALLER).
	 */
	bool ends_with_caller;
	/* Out: the caller of the first end left single-stepped, and why; 0 and NULL: none. */
	uint64_t stepped_in;
	const char *why;
};

/*
 * Replaces each end of SITE (site_planner__probe_sites' SITE_ENDS plan, ends in its callers)
 * that the kernel would single-step because its caller returns at once after the call. Where a
 * caller on the way is one of PLAN's traced functions, the call ends with that caller's call
 * (its frame sits above the caller's when that ends): no end of its own. Otherwise by ends in the
 * caller's callers (sites__find_calls), each the first emulated instruction after their call's
 * return, with the frames in between in end_site.frames; through up to FUNCENDS_CHAIN_MAX such
 * callers. An end stays single-stepped when a caller on the way is called in a way that cannot
 * be found (indirectly, as a tail call, through a method table) or neither returns at once nor
 * reaches an emulated instruction. 0, or -ENOMEM.
 */
int funcends__through_callers(struct site_planner *sp, struct probe_site *site,
			      struct funcends_plan *plan);

#endif
