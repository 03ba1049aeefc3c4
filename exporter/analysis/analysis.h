/* SPDX-License-Identifier: MIT */
/*
 * One reading of a Go binary, shared by the analyses of what it runs (target.c for net/http and
 * gRPC, datastores.c for data store clients): the binary opened once, its functions found by
 * name with or without .symtab, and their probe sites planned.
 */
#ifndef GOSPAN_ANALYSIS_H
#define GOSPAN_ANALYSIS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "analysis/elf.h"
#include "analysis/planner.h"

struct gobin;
struct pclntab;

struct analysis {
	const char *path; /* the binary, for messages */
	uint16_t machine;
	const struct gobin *gobin;
	struct elf_file *ef;
	bool has_symtab;
	struct pclntab *pt; /* opened when the first symbol is looked up in a stripped binary */
	struct site_planner *sp;
};

/*
 * Starts reading EF, the binary at PATH whose buildinfo is GB (both kept by the caller, and
 * outliving A). -ENOMEM on failure. analysis__release() frees what it opened.
 */
int analysis__init(struct analysis *a, struct elf_file *ef, const char *path,
		   const struct gobin *gb);
void analysis__release(struct analysis *a);

/* The function NAME: in .symtab when the binary has one, else in Go's function table. */
int analysis__find_func(struct analysis *a, const char *name, struct elf_symbol *sym);

/*
 * SITE for the function SYMBOL (site_planner__probe_sites' KIND and CALLEE). A missing symbol
 * returns its error, quietly: the caller knows what it means; other failures are logged.
 */
int analysis__site(struct analysis *a, const char *symbol, struct probe_site *site,
		   enum site_kind kind, uint64_t callee);

/* analysis__site(), but -ENOENT for any missing symbol, whatever the lookup's own error. */
int analysis__find_site(struct analysis *a, const char *symbol, struct probe_site *site,
			enum site_kind kind, uint64_t callee);

/*
 * Moves SITE's ends from its RETs into its callers where every call of it is direct (sites.h:
 * FIND_FLAGS, AFTER_FLAGS, RESULT_REG); else its RETs stay and rets_why says why.
 */
int analysis__caller_ends(struct analysis *a, struct probe_site *site, unsigned int find_flags,
			  unsigned int after_flags, int result_reg);

/*
 * Moves SITE's ends from the RETs of its ways out after a call of one of the N functions named
 * INNER (those the binary lacks are left out) to right after those calls (site_planner__inner_ends:
 * RESULT_REG, IF_NO_ERROR; the result's pair kept with it); its other RETs stay.
 */
int analysis__inner_ends(struct analysis *a, struct probe_site *site, const char *const *inner,
			 size_t n, int result_reg, bool if_no_error);

/* Every function of the binary, sorted by name (the index .symtab's or Go's table gives). */
size_t analysis__functions(struct analysis *a, const struct sym_entry **out);

#endif
