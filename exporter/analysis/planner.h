/* SPDX-License-Identifier: MIT */
/*
 * Site planning: where the probes of one function go (planner.c). A probe_site is what the
 * capture side attaches: file offsets of an entry and of the ends of each call.
 */
#ifndef GOSPAN_PLANNER_H
#define GOSPAN_PLANNER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "analysis/sites.h"

struct elf_file;
struct pclntab;
struct site_planner;

/*
 * One probed function: a uprobe at ENTRY_OFF, and its ends: one at each RET_OFFS[i] that must
 * stay (single-stepped on amd64, simulated on arm64: RETS_EMULATED), one at each ENDS[i], in its
 * callers or after its main inner call (sites.h). All file offsets.
 */
struct probe_site {
	const char *symbol;
	uint64_t addr; /* link-time address of the function */
	uint64_t entry_off;
	uint64_t entry_at; /* ... and its link-time address */
	bool entry_emulated;
	/*
	 * When its own entry would be single-stepped (a function without Go's stack check, whose
	 * first instruction the kernel does not emulate) and every call of it is a direct CALL:
	 * the entry probes go on those CALLs instead, in its callers, and ENTRY_OFF is not probed.
	 */
	uint64_t *entry_calls;
	size_t nentry_calls;
	uint64_t *ret_offs;
	size_t nrets;
	/*
	 * Whether the kernel emulates the RETs: arm64's uprobes simulate RET (simulate_br_blr_ret,
	 * since arm64 uprobes came in 4.10; emulation.c measures it); amd64's single-step it.
	 */
	bool rets_emulated;
	struct end_site *ends;
	size_t nends;
	/* Why the RETs stay, when they do and ends were wanted: for --verbose. NULL otherwise. */
	const char *rets_why;
};

/*
 * Where probes go in the binary EF (whose Go function table PT, may be NULL, is used when it has
 * no .symtab). NULL with errno set on failure.
 */
struct site_planner *site_planner__new(struct elf_file *ef, struct pclntab *pt);
/* The Go function table to use from now on, opened after SP was made (a stripped binary). */
void site_planner__set_pclntab(struct site_planner *sp, struct pclntab *pt);
void site_planner__free(struct site_planner *sp);

/* What site_planner__probe_sites() finds in a function besides its entry. */
enum site_kind {
	SITE_ENTRY,    /* the entry only */
	SITE_RETS,     /* the entry and every return */
	SITE_ENDS,     /* the entry and its ends: in its callers where all are known, else RETs */
	SITE_CALLS_TO, /* the entry and the direct calls to CALLEE (in ret_offs) */
};

/* Where the RETs go instead, for bench/floor's rows: what peers and older gospans probed. */
enum site_policy {
	SITES_BEST,	   /* emulated sites wherever they can be shown right */
	SITES_PUSH_RETS,   /* gospan before: the entry past the stack check, every RET */
	SITES_FIRST_RETS,  /* the first instruction and every RET (other uprobe tracers) */
};
extern enum site_policy site_planner_policy;

/*
 * The probe sites of the function at link-time address ADDR, SIZE bytes long: SITE's entry_off
 * (see disasm__entry_site) and, by KIND, ret_offs and ends, all file offsets. SITE->symbol is
 * left to the caller. On failure, a negative errno (-ENODATA: no size; -ENOENT: no return or call
 * found) and WHY says which step failed, for the caller's message at the caller's severity.
 */
int site_planner__probe_sites(struct site_planner *sp, uint64_t addr, uint64_t size,
			      enum site_kind kind, uint64_t callee, struct probe_site *site,
			      char *why, size_t why_len);

/*
 * Replaces SITE's RET probes by end sites in its callers, when every call of it is a direct call
 * (FIND_FLAGS, AFTER_FLAGS, RESULT_REG: see sites.h). Otherwise the RETs stay, and why is noted
 * in SITE->rets_why. Negative errno only when the plan could not be made (-ENOMEM).
 */
int site_planner__caller_ends(struct site_planner *sp, struct probe_site *site,
			      unsigned int find_flags, unsigned int after_flags, int result_reg);

/*
 * SITE's one end right after the one direct call of CALLEE in the function at ADDR (SIZE bytes):
 * the first emulated instruction its return leads to (sites__after_call), before which no
 * instruction writes the registers of KEEP (a mask of x86 register numbers: results to read
 * there) and no other path joins. -ENOENT when the code has no such call, more than one, or no
 * such instruction; -EOPNOTSUPP on arm64.
 */
int site_planner__after_call(struct site_planner *sp, uint64_t addr, uint64_t size,
			     uint64_t callee, uint16_t keep, struct probe_site *site);
/* One direct call in a function, and where its return leads (site_planner__calls_in). */
struct call_pair {
	uint64_t call;	       /* the CALL: a file offset */
	struct end_site after; /* sites__after_call's; its off a file offset */
	uint32_t tag;	       /* the caller's */
};

/*
 * Every direct call of CALLEE in the function at ADDR (SIZE bytes), appended to *PAIRS
 * (realloc'ed; *N of them), each with TAG: the CALL, where the callee's arguments are in
 * registers and the kernel emulates the instruction, and the end site its return leads to
 * (sites__after_call with AFTER_FLAGS and RESULT_REG). 0 when there is none; -EOPNOTSUPP on arm64.
 */
int site_planner__calls_in(struct site_planner *sp, uint64_t addr, uint64_t size, uint64_t callee,
			   unsigned int after_flags, int result_reg, uint32_t tag,
			   struct call_pair **pairs, size_t *n);

/*
 * Whether the function at ADDR (SIZE bytes) may call one of the N functions at TARGETS directly:
 * a byte scan for CALL rel32, without decoding (false positives, no false negatives), to tell
 * which of many functions are worth decoding. Always true on arm64.
 */
bool site_planner__may_call(struct site_planner *sp, uint64_t addr, uint64_t size,
			    const uint64_t *targets, size_t n);

/*
 * The functions the function at ADDR (SIZE bytes) calls directly: their addresses into *OUT
 * (malloc'ed, *N of them, in the order of the calls, repeats left in). -EOPNOTSUPP on arm64.
 */
int site_planner__callees(struct site_planner *sp, uint64_t addr, uint64_t size, uint64_t **out,
			  size_t *n);

/*
 * Replaces SITE's RETs on the ways out after its calls of the NCALLEES functions at CALLEES
 * (SIZE: the function's length) by end sites right after those calls (sites__after_inner, with
 * AFTER_FLAGS and RESULT_REG; IF_NO_ERROR marks them as ends of calls whose error is nil), and
 * keeps the RETs of its other ways out. When the code does not allow it, the RETs stay and
 * rets_why says why. Negative errno only when the plan could not be made (-ENOMEM).
 */
int site_planner__inner_ends(struct site_planner *sp, struct probe_site *site, uint64_t size,
			     const uint64_t *callees, size_t ncallees, unsigned int after_flags,
			     int result_reg, bool if_no_error);

/*
 * Drops from SITE's RETs those of the NEXCL instruction indexes EXCL of INS (the function SITE
 * probes, decoded), which other ends replace. Returns how many RETs stay.
 */
size_t site_planner__drop_rets(struct site_planner *sp, struct probe_site *site,
			       const struct insns *ins, const long *excl, size_t nexcl);

/* SP's binary's code, for finding the calls of a function; NULL when it has none to search. */
const struct code_map *site_planner__code_map(struct site_planner *sp);

/* Turns the code addresses of SITE's ends into file offsets. */
int site_planner__ends_to_offsets(struct site_planner *sp, struct probe_site *site);

/*
 * A call whose work is done in a function it reaches through a chain of calls that return its
 * error: ADDR[0] (the probed function) calls ADDR[1], ..., whose last, ADDR[N - 1], calls WORK
 * (a retry loop around its attempts). The functions are SIZE[i] bytes long; ALSO: the other
 * functions that may call the last (and return its error as it is).
 */
#define ERROR_CHAIN_MAX 4
struct error_chain {
	uint64_t addr[ERROR_CHAIN_MAX], size[ERROR_CHAIN_MAX];
	size_t n;
	uint64_t work;
	uint64_t also[4];
	size_t nalso;
};

/*
 * Replaces SITE's RETs by the ends of CHAIN's last function after its work
 * (sites__error_ends), and keeps the RETs, in any function of the chain, of the ways out that
 * pass none. When the code does not allow it, the RETs stay and rets_why says why. *NIL_STEPS:
 * the single-stepped ends of a call whose work returned no error. Negative errno only when the
 * plan could not be made (-ENOMEM).
 */
int site_planner__error_ends(struct site_planner *sp, struct probe_site *site,
			     const struct error_chain *chain, int *nil_steps);

void probe_site__release(struct probe_site *s);

/*
 * Hits of S's probes that the kernel single-steps on a call's usual way: its entry (when ENTRY
 * and it is not probed in its callers), then one for an end: the first single-stepped end, else
 * its RETs where they are single-stepped.
 */
int probe_site__stepped(const struct probe_site *s, bool entry);

/*
 * The single-stepped hits (two traps each) of one call of SITE: made from CALLER, or through its
 * error-free end (SUCCESS), on the first end that fits, else a RET; with neither, the costliest
 * way out of any call.
 */
int probe_site__steps(const struct probe_site *site, uint64_t caller, bool success);

#endif
