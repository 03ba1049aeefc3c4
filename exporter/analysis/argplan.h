/* SPDX-License-Identifier: MIT */
/*
 * The argument plan of one traced function: where each argument its --functions entry names is
 * when the function is entered, and what the value is formatted as.
 */
#ifndef GOSPAN_ARGPLAN_H
#define GOSPAN_ARGPLAN_H

#include <stdbool.h>
#include <stdint.h>

struct dwarf_func;
struct func_decl;
struct traced_func;

/*
 * Plans the arguments entry D names for function F (F->symbol set): their places for BPF in
 * F->cfg.args and how each is formatted in F->args. DW is DWARF's answer for F (DW->found false:
 * it does not describe F), DW->args the by-name arguments of D, in D's order. HAVE_DWARF says
 * whether the binary has DWARF at all; MACHINE is its ELF e_machine. An argument that cannot be
 * recorded is left out, and said with the reason. 0, or -ENOMEM.
 */
int argplan__plan(struct traced_func *f, const struct func_decl *d, const struct dwarf_func *dw,
		  uint16_t machine, bool have_dwarf);

#endif
