/* SPDX-License-Identifier: MIT */
/*
 * Go's internal register ABI (ABIInternal, Go 1.17 and later): which registers each parameter of
 * a function is in at its entry, from the parameters' types alone.
 */
#ifndef GOSPAN_ABI_H
#define GOSPAN_ABI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "analysis/gotype.h"

/* One parameter, in order of the function's parameter list (the receiver first). */
struct abi_param {
	unsigned nint, nfloat; /* registers it takes; GO_TYPE_STACK: none, it goes on the stack */
	bool stack;	       /* in: never in registers (array of 2+); out: passed on the stack */
	unsigned int_slot;     /* out: first integer register, 1-based; 0 when none */
	unsigned float_slot;   /* out: first float register, 1-based; 0 when none */
};

/* The integer and float registers that carry arguments on MACHINE (an ELF e_machine). */
void abi__reg_counts(uint16_t machine, unsigned *nint, unsigned *nfloat);
/* The register counts of one Go type (strings 2, slices 3, floats 1 float, ...). */
void abi__type_regs(enum go_type type, unsigned *nint, unsigned *nfloat, bool *stack);
/*
 * Assigns registers to PARAMS[0..N) in order, as Go's ABIInternal does: a parameter takes all
 * its registers or, when they do not all remain, goes on the stack whole. NINT and NFLOAT are
 * the architecture's counts (abi__reg_counts).
 */
void abi__assign(struct abi_param *params, size_t n, unsigned nint, unsigned nfloat);

#endif
