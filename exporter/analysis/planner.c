// SPDX-License-Identifier: MIT
/*
 * Site planning: turns a function's address and size into its probe sites, the file offsets
 * uprobes take. Its entry where the kernel emulates the instruction when it can, its RETs, and,
 * where every call of it is a direct call, ends in its callers instead of its RETs (sites.c).
 */
#include <elf.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/disasm.h"
#include "core/log.h"
#include "analysis/elf.h"
#include "analysis/pclntab.h"
#include "analysis/planner.h"
#include "analysis/sites.h"

enum site_policy site_planner_policy = SITES_BEST;

/* A function's extent, for finding which one holds an address. */
struct func_span {
	uint64_t addr, size;
};

struct site_planner {
	struct elf_file *ef;
	uint16_t machine;
	struct pclntab *pt;
	struct func_span *funcs; /* sorted by address; built on first use */
	size_t nfuncs;
	struct code_map cm;
	int cm_err; /* 1: not yet built */
};

struct site_planner *site_planner__new(struct elf_file *ef, struct pclntab *pt)
{
	struct site_planner *sp = calloc(1, sizeof(*sp));

	if (!sp)
		return NULL;
	sp->ef = ef;
	sp->machine = elf_file__machine(ef);
	sp->pt = pt;
	sp->cm_err = 1;
	return sp;
}

void site_planner__set_pclntab(struct site_planner *sp, struct pclntab *pt)
{
	sp->pt = pt;
}

void site_planner__free(struct site_planner *sp)
{
	if (!sp)
		return;
	free(sp->funcs);
	sites__refs_free(sp->cm.refs);
	free(sp);
}

static int cmp_span(const void *a, const void *b)
{
	const struct func_span *x = a, *y = b;

	return x->addr < y->addr ? -1 : x->addr > y->addr;
}

static int func_at(void *ctx, uint64_t addr, struct elf_symbol *sym)
{
	struct site_planner *sp = ctx;
	size_t lo = 0, hi = sp->nfuncs, mid;

	while (lo < hi) {
		mid = lo + (hi - lo) / 2;
		if (sp->funcs[mid].addr <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!lo || addr >= sp->funcs[lo - 1].addr + sp->funcs[lo - 1].size)
		return -ENOENT;
	sym->addr = sp->funcs[lo - 1].addr;
	sym->size = sp->funcs[lo - 1].size;
	return 0;
}

/* The code map of SP's binary: its text, and its functions by address (symtab or pclntab). */
static int planner_code_map(struct site_planner *sp)
{
	const struct sym_entry *syms;
	struct elf_symbol text_sym;
	size_t n, i;
	const void *text;

	if (sp->cm_err != 1)
		return sp->cm_err;
	sp->cm_err = -ENOENT;
	n = elf_file__symbols(sp->ef, &syms);
	if (!n && sp->pt)
		n = pclntab__functions(sp->pt, &syms);
	if (!n)
		return sp->cm_err;
	sp->funcs = calloc(n, sizeof(*sp->funcs));
	if (!sp->funcs)
		return sp->cm_err = -ENOMEM;
	for (i = 0; i < n; i++) {
		if (!syms[i].is_func || !syms[i].size)
			continue;
		sp->funcs[sp->nfuncs].addr = syms[i].addr;
		sp->funcs[sp->nfuncs++].size = syms[i].size;
	}
	qsort(sp->funcs, sp->nfuncs, sizeof(*sp->funcs), cmp_span);
	if (elf_file__section(sp->ef, ".text", &text, &sp->cm.text_len, &sp->cm.text_addr))
		return sp->cm_err;
	sp->cm.text = text;
	sp->cm.ef = sp->ef;
	sp->cm.machine = sp->machine;
	sp->cm.func_at = func_at;
	sp->cm.ctx = sp;
	sp->cm.refs = sites__refs_new();
	if (!sp->cm.refs)
		return sp->cm_err = -ENOMEM;
	if (!elf_file__find_symbol(sp->ef, "runtime.text", &text_sym))
		sp->cm.text_base = text_sym.addr;
	else if (sp->pt)
		sp->cm.text_base = pclntab__text_start(sp->pt);
	return sp->cm_err = 0;
}

const struct code_map *site_planner__code_map(struct site_planner *sp)
{
	return planner_code_map(sp) ? NULL : &sp->cm;
}

void probe_site__release(struct probe_site *s)
{
	free(s->ret_offs);
	free(s->ends);
	free(s->entry_calls);
	s->ret_offs = NULL;
	s->ends = NULL;
	s->entry_calls = NULL;
	s->nrets = s->nends = s->nentry_calls = 0;
}

int site_planner__ends_to_offsets(struct site_planner *sp, struct probe_site *site)
{
	size_t i;
	int err;

	for (i = 0; i < site->nends; i++) {
		err = elf_file__addr_to_offset(sp->ef, site->ends[i].off, &site->ends[i].off);
		if (err)
			return err;
	}
	return 0;
}

/* The function at ADDR (SIZE bytes) decoded into INS. */
static int decode_func(struct site_planner *sp, uint64_t addr, uint64_t size, struct insns *ins)
{
	uint8_t *code;
	int err;

	if (sp->machine != EM_X86_64)
		return -EOPNOTSUPP;
	code = malloc(size ? size : 1);
	if (!code)
		return -ENOMEM;
	err = elf_file__read_addr(sp->ef, addr, code, size);
	err = err ?: disasm__decode(sp->machine, code, size, addr, ins);
	free(code);
	return err;
}

int site_planner__after_call(struct site_planner *sp, uint64_t addr, uint64_t size,
			     uint64_t callee, uint16_t keep, struct probe_site *site)
{
	struct insns ins = {};
	struct end_site end;
	long call = -1, at, i;
	int err;

	memset(site, 0, sizeof(*site));
	site->addr = addr;
	err = decode_func(sp, addr, size, &ins);
	if (err)
		goto cleanup;
	for (i = 0; i < (long)ins.n; i++) {
		if (ins.v[i].kind != INSN_CALL || ins.v[i].target != callee)
			continue;
		err = call >= 0 ? -ENOENT : 0;
		call = i;
	}
	if (err || call < 0 || call + 1 >= (long)ins.n) {
		err = -ENOENT;
		goto cleanup;
	}
	/* With a result register, it stops where another path joins. */
	sites__after_call(&ins, call + 1, 0, X86_AX, &end);
	at = disasm__index(&ins, end.off - addr);
	if (!end.emulated || end.result >= 0 || at < 0) {
		err = -ENOENT;
		goto cleanup;
	}
	for (i = call + 1; i < at; i++) {
		if (ins.v[i].writes & keep) {
			err = -ENOENT;
			goto cleanup;
		}
	}
	site->ends = calloc(1, sizeof(*site->ends));
	if (!site->ends) {
		err = -ENOMEM;
		goto cleanup;
	}
	site->ends[0] = end;
	site->nends = 1;
	err = site_planner__ends_to_offsets(sp, site);
cleanup:
	disasm__insns_free(&ins);
	if (err)
		probe_site__release(site);
	return err;
}

bool site_planner__may_call(struct site_planner *sp, uint64_t addr, uint64_t size,
			    const uint64_t *targets, size_t n)
{
	uint8_t buf[4096];
	uint64_t at, len, i, j, to;
	int32_t rel;

	if (sp->machine != EM_X86_64)
		return true;
	/* Chunks overlapping by 4 bytes, so that no CALL is cut in two. */
	for (at = 0; at < size; at += sizeof(buf) - 4) {
		len = size - at < sizeof(buf) ? size - at : sizeof(buf);
		if (elf_file__read_addr(sp->ef, addr + at, buf, len))
			return true;
		for (i = 0; i + 5 <= len; i++) {
			if (buf[i] != 0xe8)
				continue;
			memcpy(&rel, buf + i + 1, sizeof(rel));
			to = addr + at + i + 5 + (int64_t)rel;
			for (j = 0; j < n; j++)
				if (targets[j] && to == targets[j])
					return true;
		}
		if (len < sizeof(buf))
			break;
	}
	return false;
}

int site_planner__callees(struct site_planner *sp, uint64_t addr, uint64_t size, uint64_t **out,
			  size_t *n)
{
	struct insns ins = {};
	size_t i;
	int err;

	*out = NULL;
	*n = 0;
	err = decode_func(sp, addr, size, &ins);
	if (!err) {
		*out = calloc(ins.n ? ins.n : 1, sizeof(**out));
		err = *out ? 0 : -ENOMEM;
	}
	for (i = 0; !err && i < ins.n; i++)
		if (ins.v[i].kind == INSN_CALL)
			(*out)[(*n)++] = ins.v[i].target;
	disasm__insns_free(&ins);
	return err;
}

int site_planner__calls_in(struct site_planner *sp, uint64_t addr, uint64_t size, uint64_t callee,
			   unsigned int after_flags, int result_reg, uint32_t tag,
			   struct call_pair **pairs, size_t *n)
{
	struct insns ins = {};
	struct call_pair *grown, *pair;
	long i;
	int err;

	err = decode_func(sp, addr, size, &ins);
	for (i = 0; !err && i + 1 < (long)ins.n; i++) {
		if (ins.v[i].kind != INSN_CALL || ins.v[i].target != callee)
			continue;
		grown = realloc(*pairs, (*n + 1) * sizeof(**pairs));
		if (!grown) {
			err = -ENOMEM;
			break;
		}
		*pairs = grown;
		pair = &grown[*n];
		memset(pair, 0, sizeof(*pair));
		pair->tag = tag;
		sites__after_call(&ins, i + 1, after_flags, result_reg, &pair->after);
		err = elf_file__addr_to_offset(sp->ef, addr + ins.v[i].off, &pair->call);
		err = err ?: elf_file__addr_to_offset(sp->ef, pair->after.off, &pair->after.off);
		if (!err)
			(*n)++;
	}
	disasm__insns_free(&ins);
	return err;
}

int site_planner__caller_ends(struct site_planner *sp, struct probe_site *site,
			      unsigned int find_flags, unsigned int after_flags, int result_reg)
{
	struct call_site *calls = NULL;
	size_t n = 0, i;
	int err;

	err = planner_code_map(sp);
	if (!err)
		err = sites__find_calls(&sp->cm, site->addr, find_flags, &calls, &n);
	if (err == -ENOMEM)
		return err;
	if (err) {
		site->rets_why = err == -EOPNOTSUPP ? "not amd64" :
				 "called indirectly or as a tail call";
		return 0;
	}
	site->ends = calloc(n, sizeof(*site->ends));
	if (!site->ends) {
		err = -ENOMEM;
		goto cleanup;
	}
	for (i = 0; i < n; i++)
		sites__after_call(&calls[i].ins, calls[i].ret_idx, after_flags, result_reg,
				  &site->ends[i]);
	site->nends = n;
	err = site_planner__ends_to_offsets(sp, site);
	if (!err && !site->entry_emulated && (find_flags & FIND_CALLS_ENTRY_IN_CALLERS)) {
		site->entry_calls = calloc(n, sizeof(*site->entry_calls));
		err = site->entry_calls ? 0 : -ENOMEM;
		for (i = 0; !err && i < n; i++) {
			const struct insns *ins = &calls[i].ins;

			err = elf_file__addr_to_offset(sp->ef, ins->addr + ins->v[calls[i].ret_idx - 1].off,
						       &site->entry_calls[i]);
		}
		site->nentry_calls = err ? 0 : n;
	}
	if (err) {
		probe_site__release(site);
		goto cleanup;
	}
	free(site->ret_offs);
	site->ret_offs = NULL;
	site->nrets = 0;
cleanup:
	sites__free_calls(calls, n);
	return err;
}

size_t site_planner__drop_rets(struct site_planner *sp, struct probe_site *site,
			       const struct insns *ins, const long *excl, size_t nexcl)
{
	size_t i, j, k;
	uint64_t off;

	for (i = k = 0; i < site->nrets; i++) {
		for (j = 0; j < nexcl; j++)
			if (!elf_file__addr_to_offset(sp->ef, ins->addr + ins->v[excl[j]].off,
						      &off) &&
			    off == site->ret_offs[i])
				break;
		if (j == nexcl)
			site->ret_offs[k++] = site->ret_offs[i];
	}
	site->nrets = k;
	return k;
}

int site_planner__inner_ends(struct site_planner *sp, struct probe_site *site, uint64_t size,
			     const uint64_t *callees, size_t ncallees, unsigned int after_flags,
			     int result_reg, bool if_no_error)
{
	struct end_site *ends = NULL;
	struct insns ins = {};
	long *calls = NULL, *excl = NULL;
	size_t ncalls = 0, nexcl = 0, i, j;
	int err;

	err = decode_func(sp, site->addr, size, &ins);
	if (err) {
		site->rets_why = err == -EOPNOTSUPP ? "not amd64" : "its code does not decode";
		err = err == -ENOMEM ? err : 0;
		goto cleanup;
	}
	calls = calloc(ins.n ? ins.n : 1, sizeof(*calls));
	if (!calls) {
		err = -ENOMEM;
		goto cleanup;
	}
	for (i = 0; i < ins.n; i++) {
		for (j = 0; ins.v[i].kind == INSN_CALL && j < ncallees; j++) {
			if (callees[j] && ins.v[i].target == callees[j]) {
				calls[ncalls++] = (long)i;
				break;
			}
		}
	}
	ends = calloc(ncalls ? ncalls : 1, sizeof(*ends));
	if (!ends) {
		err = -ENOMEM;
		goto cleanup;
	}
	err = ncalls ? sites__after_inner(&ins, calls, ncalls, after_flags, result_reg, ends,
					  &excl, &nexcl) :
		       -ENOENT;
	if (err) {
		site->rets_why = ncalls ? "its ways out after its inner calls join others" :
					  "no call of the inner functions it ends after";
		err = err == -ENOMEM ? err : 0;
		goto cleanup;
	}
	for (i = 0; i < ncalls; i++)
		ends[i].if_no_error = if_no_error;
	site->ends = ends;
	site->nends = ncalls;
	ends = NULL;
	err = site_planner__ends_to_offsets(sp, site);
	if (err) {
		probe_site__release(site);
		goto cleanup;
	}
	/* Kept: the RETs of the ways out before the calls (a failure that comes first). */
	site->rets_why = site_planner__drop_rets(sp, site, &ins, excl, nexcl) ?
				 "for the ways out before its inner calls" :
				 NULL;
cleanup:
	free(ends);
	free(calls);
	free(excl);
	disasm__insns_free(&ins);
	return err;
}

int site_planner__probe_sites(struct site_planner *sp, uint64_t addr, uint64_t size,
			      enum site_kind kind, uint64_t callee, struct probe_site *site,
			      char *why, size_t why_len)
{
	uint8_t *code = NULL;
	uint64_t start_off;
	size_t i;
	int err;

	site->addr = addr;
	site->ret_offs = NULL;
	site->nrets = 0;
	site->ends = NULL;
	site->nends = 0;
	site->entry_calls = NULL;
	site->nentry_calls = 0;
	site->rets_why = NULL;
	if (!size) {
		snprintf(why, why_len, "its symbol has no size");
		return -ENODATA;
	}
	err = elf_file__addr_to_offset(sp->ef, addr, &start_off);
	if (err) {
		snprintf(why, why_len, "address 0x%llx is not in a loadable segment",
			 (unsigned long long)addr);
		return err;
	}
	code = malloc(size);
	if (!code) {
		snprintf(why, why_len, "no memory for its code");
		return -ENOMEM;
	}
	err = elf_file__read_addr(sp->ef, addr, code, size);
	if (err) {
		snprintf(why, why_len, "its code cannot be read: %s", strerror(-err));
		goto cleanup;
	}
	err = disasm__entry_site(sp->machine, code, size, addr, &site->entry_off,
				 &site->entry_emulated);
	if (err) {
		snprintf(why, why_len, "no place for its entry probe: %s", strerror(-err));
		goto cleanup;
	}
	if (site_planner_policy == SITES_FIRST_RETS) {
		site->entry_off = 0;
		site->entry_emulated = false;
	}
	site->entry_at = addr + site->entry_off;
	site->entry_off += start_off;
	if (kind == SITE_ENTRY)
		goto cleanup;
	if (kind == SITE_CALLS_TO)
		err = disasm__find_calls(sp->machine, code, size, addr, callee, &site->ret_offs,
					 &site->nrets);
	else
		err = disasm__find_rets(sp->machine, code, size, addr, &site->ret_offs,
					&site->nrets);
	if (err) {
		if (err != -ENOENT)
			snprintf(why, why_len, "%s", strerror(-err));
		else if (kind != SITE_CALLS_TO)
			snprintf(why, why_len, "no return instruction in its code");
		else
			snprintf(why, why_len, "no call to that function in its code");
		goto cleanup;
	}
	site->rets_emulated = sp->machine == EM_AARCH64 && disasm__emulation()->ret;
	/* disasm gives offsets from the function start; uprobes want file offsets. */
	for (i = 0; i < site->nrets; i++)
		site->ret_offs[i] += start_off;
	if (kind == SITE_CALLS_TO) {
		/* Direct CALLs, which every kernel emulates: ends that are not RETs. */
		site->ends = calloc(site->nrets, sizeof(*site->ends));
		if (!site->ends) {
			err = -ENOMEM;
			snprintf(why, why_len, "%s", strerror(-err));
			goto cleanup;
		}
		for (i = 0; i < site->nrets; i++) {
			site->ends[i].off = site->ret_offs[i];
			site->ends[i].caller = addr;
			site->ends[i].emulated = true;
			site->ends[i].result = -1;
		}
		site->nends = site->nrets;
		free(site->ret_offs);
		site->ret_offs = NULL;
		site->nrets = 0;
	}
	if (kind == SITE_ENDS && site_planner_policy == SITES_BEST) {
		err = site_planner__caller_ends(sp, site, FIND_CALLS_ENTRY_IN_CALLERS, 0, -1);
		if (err)
			snprintf(why, why_len, "%s", strerror(-err));
	}
cleanup:
	free(code);
	if (err)
		probe_site__release(site);
	return err;
}

int probe_site__stepped(const struct probe_site *s, bool entry)
{
	int n = entry && !s->nentry_calls ? !s->entry_emulated : 0;
	size_t i;

	for (i = 0; i < s->nends; i++)
		if (!s->ends[i].emulated)
			return n + 1;
	return n + (s->nrets && !s->rets_emulated ? 1 : 0);
}

int probe_site__steps(const struct probe_site *site, uint64_t caller, bool success)
{
	int steps = !site->entry_emulated, worst;
	size_t i;

	if (!caller && !success) {
		/* Any call: its costliest way out, a RET or an end the kernel single-steps. */
		worst = site->nrets && !site->rets_emulated ? 1 : 0;
		for (i = 0; i < site->nends; i++)
			if (!site->ends[i].emulated)
				worst = 1;
		return steps + worst;
	}
	for (i = 0; i < site->nends; i++)
		if ((!caller || site->ends[i].caller == caller) &&
		    (!success || site->ends[i].if_no_error))
			return steps + !site->ends[i].emulated;
	return steps + !site->rets_emulated; /* a RET */
}

/* Whether every direct call of the function at ADDR comes from one of the N functions ALLOWED. */
static int called_only_from(struct site_planner *sp, uint64_t addr, const uint64_t *allowed,
			    size_t n)
{
	struct call_site *calls = NULL;
	size_t ncalls = 0, i, j;
	int err;

	err = planner_code_map(sp);
	err = err ?: sites__find_calls(&sp->cm, addr, FIND_CALLS_NOT_DYNAMIC, &calls, &ncalls);
	for (i = 0; !err && i < ncalls; i++) {
		for (j = 0; j < n && calls[i].caller.addr != allowed[j]; j++)
			;
		if (j == n)
			err = -ENOENT;
	}
	sites__free_calls(calls, ncalls);
	return err;
}

/*
 * The Go runtime's write barriers, into OUT: they keep every general register but R11 (Go 1.21
 * on: gcWriteBarrier1-8 return their buffer there) and the scratch R12-R13; before, the
 * register-named ones keep them all.
 */
#define WRITE_BARRIERS 20
static size_t write_barriers(struct site_planner *sp, uint64_t *out)
{
	static const char *const names[] = {
		"runtime.gcWriteBarrier",   "runtime.gcWriteBarrier1", "runtime.gcWriteBarrier2",
		"runtime.gcWriteBarrier3",  "runtime.gcWriteBarrier4", "runtime.gcWriteBarrier5",
		"runtime.gcWriteBarrier6",  "runtime.gcWriteBarrier7", "runtime.gcWriteBarrier8",
		"runtime.gcWriteBarrierCX", "runtime.gcWriteBarrierDX", "runtime.gcWriteBarrierBX",
		"runtime.gcWriteBarrierBP", "runtime.gcWriteBarrierSI", "runtime.gcWriteBarrierR8",
		"runtime.gcWriteBarrierR9",
	};
	struct elf_symbol sym;
	size_t i, n = 0;

	for (i = 0; i < sizeof(names) / sizeof(names[0]) && n < WRITE_BARRIERS; i++)
		if (!elf_file__find_symbol(sp->ef, names[i], &sym) ||
		    (sp->pt && !pclntab__find_func(sp->pt, names[i], &sym)))
			out[n++] = sym.addr;
	return n;
}

int site_planner__error_ends(struct site_planner *sp, struct probe_site *site,
			     const struct error_chain *chain, int *nil_steps)
{
	struct end_site *ends = NULL, *fn_ends = NULL;
	uint64_t *rets = NULL, allowed[ERROR_CHAIN_MAX + 4], off;
	struct insns ins = {};
	long *calls = NULL, *kept = NULL, start;
	size_t nends = 0, nrets = 0, nfn_ends, nkept, ncalls, k, i, nallowed;
	uint64_t barriers[WRITE_BARRIERS];
	size_t nbarriers = write_barriers(sp, barriers);
	int err = 0, steps;

	*nil_steps = 1;
	if (!chain->n || chain->n > ERROR_CHAIN_MAX || chain->addr[0] != site->addr ||
	    chain->nalso > 4) {
		site->rets_why = "no chain of calls to its work";
		return 0;
	}
	for (k = 0; !err && k < chain->n; k++) {
		err = decode_func(sp, chain->addr[k], chain->size[k], &ins);
		if (err)
			break;
		calls = calloc(ins.n ? ins.n : 1, sizeof(*calls));
		rets = rets ? rets : calloc(1, sizeof(*rets));
		if (!calls || !rets) {
			err = -ENOMEM;
			break;
		}
		for (i = ncalls = 0; i < ins.n; i++)
			if (ins.v[i].kind == INSN_CALL &&
			    ins.v[i].target == (k + 1 < chain->n ? chain->addr[k + 1] : chain->work))
				calls[ncalls++] = (long)i;
		start = k ? 0 : disasm__index(&ins, site->entry_at - site->addr);
		err = sites__error_ends(&ins, start, calls, ncalls, k + 1 < chain->n, barriers,
					nbarriers, &fn_ends, &nfn_ends, &kept, &nkept, &steps);
		if (err) {
			pr_debug("0x%llx: its ways out could not all be followed to one end each (%zu "
				 "calls of its work)",
				 (unsigned long long)chain->addr[k], ncalls);
			break;
		}
		/* Only the chain reaches a link: its ends cannot end a call of another's. */
		if (k) {
			for (nallowed = 0; nallowed < k; nallowed++)
				allowed[nallowed] = chain->addr[nallowed];
			for (i = 0; k + 1 == chain->n && i < chain->nalso; i++)
				allowed[nallowed++] = chain->also[i];
			err = called_only_from(sp, chain->addr[k], allowed, nallowed);
			if (err)
				pr_debug("0x%llx: called from outside its chain",
					 (unsigned long long)chain->addr[k]);
		}
		if (!err && k + 1 == chain->n) {
			ends = fn_ends;
			nends = nfn_ends;
			fn_ends = NULL;
			*nil_steps = steps;
			for (i = 0; !err && i < nends; i++)
				err = elf_file__addr_to_offset(sp->ef, ends[i].off, &ends[i].off);
		}
		if (!err && nkept) {
			uint64_t *grown = realloc(rets, (nrets + nkept) * sizeof(*rets));

			err = grown ? 0 : -ENOMEM;
			rets = grown ? grown : rets;
		}
		for (i = 0; !err && i < nkept; i++) {
			err = elf_file__addr_to_offset(sp->ef, ins.addr + ins.v[kept[i]].off, &off);
			rets[nrets++] = off;
		}
		free(fn_ends);
		free(kept);
		free(calls);
		fn_ends = NULL;
		kept = NULL;
		calls = NULL;
		disasm__insns_free(&ins);
		memset(&ins, 0, sizeof(ins));
	}
	if (!err && !nends)
		err = -ENOENT;
	if (err) {
		site->rets_why = err == -EOPNOTSUPP ? "not amd64" :
				 "its work's ways out could not all be followed";
		*nil_steps = 1;
		err = err == -ENOMEM ? err : 0;
		goto cleanup;
	}
	free(site->ends);
	site->ends = ends;
	site->nends = nends;
	ends = NULL;
	free(site->ret_offs);
	site->ret_offs = rets;
	site->nrets = nrets;
	rets = NULL;
	site->rets_why = site->nrets ? "for the ways out that end without its work" : NULL;
cleanup:
	free(ends);
	free(fn_ends);
	free(kept);
	free(calls);
	free(rets);
	disasm__insns_free(&ins);
	return err;
}
