// SPDX-License-Identifier: MIT
/*
 * One reading of a Go binary: functions by name from .symtab, or from the function table the Go
 * runtime itself needs, which survives -ldflags=-s; and their probe sites.
 */
#include <errno.h>
#include <stdlib.h>

#include "analysis/analysis.h"
#include "analysis/dwarf.h"
#include "analysis/pclntab.h"
#include "core/log.h"

int analysis__init(struct analysis *a, struct elf_file *ef, const char *path,
		   const struct gobin *gb)
{
	*a = (struct analysis){
		.path = path,
		.machine = elf_file__machine(ef),
		.gobin = gb,
		.ef = ef,
		.has_symtab = elf_file__section(ef, ".symtab", &(const void *){ NULL },
						&(size_t){ 0 }, &(uint64_t){ 0 }) != -ENOENT,
	};
	a->sp = site_planner__new(ef, NULL);
	return a->sp ? 0 : -ENOMEM;
}

void analysis__release(struct analysis *a)
{
	dwarf__release();
	site_planner__free(a->sp);
	pclntab__close(a->pt);
	a->sp = NULL;
	a->pt = NULL;
}

int analysis__find_func(struct analysis *a, const char *name, struct elf_symbol *sym)
{
	if (a->has_symtab)
		return elf_file__find_symbol(a->ef, name, sym);
	if (!a->pt) {
		a->pt = pclntab__open(a->ef);
		if (!a->pt)
			return -errno;
		site_planner__set_pclntab(a->sp, a->pt);
	}
	return pclntab__find_func(a->pt, name, sym);
}

int analysis__site(struct analysis *a, const char *symbol, struct probe_site *site,
		   enum site_kind kind, uint64_t callee)
{
	struct elf_symbol sym;
	char why[128];
	int err;

	site->symbol = symbol;
	err = analysis__find_func(a, symbol, &sym);
	if (err)
		return err;
	err = site_planner__probe_sites(a->sp, sym.addr, sym.size, kind, callee, site, why,
					sizeof(why));
	if (err)
		pr_err("cannot probe '%s' in '%s': %s", symbol, a->path, why);
	return err;
}

int analysis__find_site(struct analysis *a, const char *symbol, struct probe_site *site,
			enum site_kind kind, uint64_t callee)
{
	struct elf_symbol sym;

	if (analysis__find_func(a, symbol, &sym))
		return -ENOENT;
	return analysis__site(a, symbol, site, kind, callee);
}

int analysis__caller_ends(struct analysis *a, struct probe_site *site, unsigned int find_flags,
			  unsigned int after_flags, int result_reg)
{
	return site_planner__caller_ends(a->sp, site, find_flags, after_flags, result_reg);
}

int analysis__inner_ends(struct analysis *a, struct probe_site *site, const char *const *inner,
			 size_t n, int result_reg, bool if_no_error)
{
	struct elf_symbol fn, sym;
	uint64_t *callees;
	size_t i, found = 0;
	int err;

	if (analysis__find_func(a, site->symbol, &fn))
		return 0; /* its RETs, as planned */
	callees = calloc(n ? n : 1, sizeof(*callees));
	if (!callees)
		return -ENOMEM;
	for (i = 0; i < n; i++)
		if (!analysis__find_func(a, inner[i], &sym))
			callees[found++] = sym.addr;
	err = site_planner__inner_ends(a->sp, site, fn.size, callees, found,
				       result_reg >= 0 ? AFTER_CALL_KEEP_PAIR : 0, result_reg,
				       if_no_error);
	free(callees);
	return err;
}

size_t analysis__functions(struct analysis *a, const struct sym_entry **out)
{
	struct elf_symbol sym;

	if (a->has_symtab)
		return elf_file__symbols(a->ef, out);
	/* Opens the function table, which a lookup does on first use. */
	analysis__find_func(a, "runtime.main", &sym);
	if (!a->pt) {
		*out = NULL;
		return 0;
	}
	return pclntab__functions(a->pt, out);
}
