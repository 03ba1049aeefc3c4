/* SPDX-License-Identifier: MIT */
/*
 * The Go function table (pclntab) of a target binary: the name -> address map the Go runtime
 * itself needs for stack traces, so it survives `-ldflags="-s -w"`, which drops .symtab. gospan
 * falls back to it when a function is not in .symtab. Go 1.16 and newer table formats only.
 */
#ifndef GOSPAN_PCLNTAB_H
#define GOSPAN_PCLNTAB_H

#include "analysis/elf.h"

struct pclntab;

/*
 * Opens the Go function table of EF. NULL with errno: ENOENT when there is none, EINVAL when it
 * is malformed or of a format not supported (Go 1.16+ formats: magic 0xfffffffa (1.16-1.17),
 * 0xfffffff0 (1.18-1.19), 0xfffffff1 (1.20+)), logged. Names point into EF's mapping: close the
 * table before EF.
 */
struct pclntab *pclntab__open(struct elf_file *ef);
/*
 * Finds function NAME ("net/http.serverHandler.ServeHTTP"): its link-time entry address and size
 * (up to the next function's entry). -ENOENT if absent.
 *
 * Names are matched as .symtab spells them, with two limits of the table itself: an assembly
 * function and its ABI wrapper share one name (the lower address is returned; .symtab calls the
 * assembly one "NAME.abi0"), and Go 1.18-1.20 store generic instantiations as "F[...]", so a full
 * instantiated name is not found there.
 */
int pclntab__find_func(const struct pclntab *pt, const char *name, struct elf_symbol *out);
/* Every function of the table, sorted by name; their count. */
size_t pclntab__functions(const struct pclntab *pt, const struct sym_entry **out);
/* runtime.text, what method tables' code offsets count from (Go 1.18+); 0 when unknown. */
uint64_t pclntab__text_start(const struct pclntab *pt);
void pclntab__close(struct pclntab *pt);

#endif
