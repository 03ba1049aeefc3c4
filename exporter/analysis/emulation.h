/* SPDX-License-Identifier: MIT */
/*
 * Measuring at start which instructions this kernel's uprobes emulate (struct emulation, in
 * disasm.h): the sites gospan chooses depend on it.
 */
#ifndef GOSPAN_EMULATION_H
#define GOSPAN_EMULATION_H

#include "analysis/disasm.h"

struct bpf_program;

/*
 * Probes a PUSH and a long NOP (amd64) or a RET (arm64) of gospan's own code in short-lived
 * children, with PROG (a uprobe program that does nothing), and says in *E whether the kernel
 * emulated them. 0 or a negative
 * errno (E is then left alone).
 */
int emulation__measure(struct bpf_program *prog, struct emulation *e);
/* Waits until the measurement's probes are detached (a thread does it): before PROG goes. */
void emulation__release(void);

/*
 * For tests of the sites chosen on kernels unlike this one: GOSPAN_UPROBE_EMULATION, a comma list
 * of "push", "long_nop" and "ret" (empty: none), replaces what was measured. 0 when unset or valid,
 * -EINVAL (said) otherwise.
 */
int emulation__override(struct emulation *e);

#endif
