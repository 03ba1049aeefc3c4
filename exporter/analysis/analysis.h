/* SPDX-License-Identifier: MIT */
/*
 * What target.c lends the analyses of the libraries a service uses (datastores.c): the binary
 * being read, and the ways to find functions and plan their probe sites.
 */
#ifndef GOSPAN_ANALYSIS_H
#define GOSPAN_ANALYSIS_H

#include <stdbool.h>
#include <stdint.h>

#include "analysis/elf.h"
#include "analysis/target.h"

struct pclntab;

/* One target__analyse() run. */
struct analysis {
	struct target *t;
	struct elf_file *ef;
	bool has_symtab;
	struct pclntab *pt; /* opened when the first symbol is looked up in a stripped binary */
	struct site_planner *sp;
};

/* The function NAME: in .symtab when the binary has one, else in Go's function table. */
int analysis__find_func(struct analysis *a, const char *name, struct elf_symbol *sym);

/*
 * SITE for the function SYMBOL (target__probe_sites' KIND and CALLEE). -ENOENT, quietly, when
 * the binary has no such function; other failures are logged.
 */
int analysis__find_site(struct analysis *a, const char *symbol, struct probe_site *site,
			enum site_kind kind, uint64_t callee);

/*
 * Moves SITE's ends from its RETs into its callers where every call of it is direct (sites.h:
 * FIND_FLAGS, AFTER_FLAGS, RESULT_REG); else its RETs stay and rets_why says why.
 */
int analysis__caller_ends(struct analysis *a, struct probe_site *site, unsigned int find_flags,
			  unsigned int after_flags, int result_reg);

/* Every function of the binary, sorted by name (the index .symtab's or Go's table gives). */
size_t analysis__functions(struct analysis *a, const struct sym_entry **out);

#endif
