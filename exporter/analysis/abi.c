// SPDX-License-Identifier: MIT
/*
 * Go's register ABI: how the compiler's ABIInternal assigns parameters to registers, as Go's
 * src/cmd/compile/abi-internal.md specifies it. It must match the compiler exactly: a wrong
 * register is read without any error, and the span carries a wrong value.
 */
#include <elf.h>

#include "analysis/abi.h"

void abi__reg_counts(uint16_t machine, unsigned *nint, unsigned *nfloat)
{
	/* amd64: RAX RBX RCX RDI RSI R8-R11, X0-X14; arm64: R0-R15, F0-F15. */
	*nint = machine == EM_AARCH64 ? 16 : 9;
	*nfloat = machine == EM_AARCH64 ? 16 : 15;
}

void abi__type_regs(enum go_type type, unsigned *nint, unsigned *nfloat, bool *stack)
{
	*nint = *nfloat = 0;
	*stack = false;
	switch (type) {
	case GO_TYPE_FLOAT:
		*nfloat = 1;
		break;
	case GO_TYPE_COMPLEX:
		*nfloat = 2;
		break;
	case GO_TYPE_STRING:
	case GO_TYPE_IFACE:
		*nint = 2;
		break;
	case GO_TYPE_SLICE:
		*nint = 3;
		break;
	case GO_TYPE_STACK:
	case GO_TYPE_NONE:
		*stack = true;
		break;
	default:
		*nint = 1;
		break;
	}
}

void abi__assign(struct abi_param *params, size_t n, unsigned nint, unsigned nfloat)
{
	unsigned ni = 0, nf = 0;
	size_t i;

	for (i = 0; i < n; i++) {
		struct abi_param *p = &params[i];

		p->int_slot = p->float_slot = 0;
		if (p->stack || ni + p->nint > nint || nf + p->nfloat > nfloat) {
			/* All or nothing: a parameter never straddles registers and stack. */
			p->stack = true;
			continue;
		}
		if (p->nint)
			p->int_slot = ni + 1;
		if (p->nfloat)
			p->float_slot = nf + 1;
		ni += p->nint;
		nf += p->nfloat;
	}
}
