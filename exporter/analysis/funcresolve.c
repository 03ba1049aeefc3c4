// SPDX-License-Identifier: MIT
/*
 * Function spans resolved against one target. The file names functions by symbol or glob
 * pattern, never by address: gospan finds each one's entry and ends itself (.symtab, or the Go
 * function table of a stripped binary; capstone for the ends), and asks DWARF, in one walk for
 * them all, where their arguments are (argplan.c) and which of the missing ones the compiler
 * inlined. What cannot be traced is said once per function at start, with the reason.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/analysis.h"
#include "analysis/argplan.h"
#include "analysis/disasm.h"
#include "analysis/dwarf.h"
#include "analysis/elf.h"
#include "analysis/funcends.h"
#include "analysis/funcresolve.h"
#include "analysis/functions.h"
#include "analysis/symname.h"
#include "analysis/target.h"
#include "core/log.h"

#define CLOSEST_MAX 3
/* g.stack.hi: runtime.g begins with its stack {lo, hi uintptr}, in every release since Go 1.0. */
#define G_STACK_HI_OFFSET 8

/* The target's functions, sorted by name: .symtab's, or the Go function table's. */
struct symbols {
	struct analysis *a; /* the target's */
	const struct sym_entry *all;
	size_t n;
};

static const struct sym_entry *find_symbol(const struct symbols *s, const char *name)
{
	size_t lo = 0, hi = s->n, mid;

	while (lo < hi) {
		mid = lo + (hi - lo) / 2;
		if (strcmp(s->all[mid].name, name) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (; lo < s->n && !strcmp(s->all[lo].name, name); lo++)
		if (s->all[lo].is_func)
			return &s->all[lo];
	return NULL;
}

/*
 * Whether NAME appears in the Go function name table although no function has it: the names of
 * inlined calls are kept there for stack traces, so this is how a stripped binary tells
 * "inlined" from "absent".
 */
static bool named_in_pclntab(const struct symbols *s, const char *name)
{
	const void *data;
	const char *p, *end;
	size_t size, len = strlen(name);

	if (elf_file__section(s->a->ef, ".gopclntab", &data, &size, NULL))
		return false;
	p = data;
	end = p + size;
	while (p < end && (p = memmem(p, end - p, name, len))) {
		if (p > (const char *)data && p[-1] == '\0' && p + len < end && p[len] == '\0')
			return true;
		p++;
	}
	return false;
}

static void say_closest(const struct symbols *s, const char *want, const char *exe)
{
	const char *best[CLOSEST_MAX] = {};
	size_t dist[CLOSEST_MAX], i, k, d, limit;
	char list[512];
	size_t len = 0;

	for (k = 0; k < CLOSEST_MAX; k++)
		dist[k] = SIZE_MAX;
	limit = strlen(want) / 3 + 3;
	for (i = 0; i < s->n; i++) {
		if (!s->all[i].is_func)
			continue;
		d = symname__distance(want, s->all[i].name, limit);
		/* Same function name in another package, or another method of the same type. */
		if (d >= limit && !strcmp(symname__short(want), symname__short(s->all[i].name)))
			d = limit - 1;
		if (d >= limit || (best[CLOSEST_MAX - 1] && d >= dist[CLOSEST_MAX - 1]))
			continue;
		for (k = CLOSEST_MAX - 1; k > 0 && (!best[k - 1] || dist[k - 1] > d); k--) {
			best[k] = best[k - 1];
			dist[k] = dist[k - 1];
		}
		best[k] = s->all[i].name;
		dist[k] = d;
	}
	list[0] = '\0';
	for (k = 0; k < CLOSEST_MAX && best[k]; k++)
		len += snprintf(list + len, len < sizeof(list) ? sizeof(list) - len : 0, "%s'%s'",
				k ? ", " : "", best[k]);
	if (best[0])
		pr_warn("function '%s' not found in '%s'; closest: %s", want, exe, list);
	else
		pr_warn("function '%s' not found in '%s', nor anything close to it", want, exe);
}

/* One function chosen for a target, before its sites and arguments are worked out. */
struct pick {
	const struct sym_entry *sym;
	const struct func_decl *decl;
	struct dwarf_arg dargs[MAX_FUNC_ARGS]; /* DWARF's answers for its by-name arguments */
};

static bool already_picked(const struct pick *picks, size_t n, const struct sym_entry *sym)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (picks[i].sym->addr == sym->addr && !strcmp(picks[i].sym->name, sym->name))
			return true;
	return false;
}

static bool decl_applies(const struct func_decl *d, const struct target *t)
{
	return !d->binary || !strcmp(d->binary, t->exe_name);
}

/* Picks the functions FS names for T: exact symbols, then pattern matches, each once. */
static size_t pick_functions(const struct functions *fs, const struct target *t,
			     const struct symbols *s, struct pick *picks, const char **missing,
			     size_t *nmissing)
{
	size_t n = 0, i, j, matched;

	*nmissing = 0;
	for (i = 0; i < fs->ndecls; i++) {
		const struct func_decl *d = &fs->decls[i];
		const struct sym_entry *sym;

		if (!decl_applies(d, t))
			continue;
		if (d->symbol) {
			sym = find_symbol(s, d->symbol);
			if (!sym) {
				missing[(*nmissing)++] = d->symbol;
				continue;
			}
			if (n < MAX_FUNCS && !already_picked(picks, n, sym)) {
				picks[n].sym = sym;
				picks[n++].decl = d;
			}
			continue;
		}
		matched = 0;
		for (j = 0; j < s->n; j++) {
			sym = &s->all[j];
			if (!sym->is_func || !symname__glob(d->pattern, sym->name))
				continue;
			matched++;
			if (matched > d->max_matches || n >= MAX_FUNCS ||
			    already_picked(picks, n, sym))
				continue;
			picks[n].sym = sym;
			picks[n++].decl = d;
		}
		if (!matched)
			pr_warn("pattern '%s' matches no function in '%s'", d->pattern,
				t->exe_name);
		else if (matched > d->max_matches)
			pr_warn("pattern '%s' matches %zu functions in '%s': tracing the first %zu "
				"by name (raise its \"max\", up to %d, to trace more)",
				d->pattern, matched, t->exe_name, d->max_matches, MAX_FUNCS);
		else
			pr_info("pattern '%s' matches %zu function%s in '%s'", d->pattern, matched,
				matched == 1 ? "" : "s", t->exe_name);
	}
	if (n == MAX_FUNCS)
		pr_warn("'%s': tracing %d functions at most", t->exe_name, MAX_FUNCS);
	return n;
}

/*
 * Asks DWARF, in one walk, about the N picked functions (DW[i] for PICKS[i], its by-name
 * arguments) and the NMISSING missing ones after them (inlined or not). Whether the binary has
 * DWARF that could be read.
 */
static bool read_dwarf(const struct target *t, struct pick *picks, size_t n,
		       const char *const *missing, size_t nmissing, struct dwarf_func *dw)
{
	size_t i, j;
	int err;

	for (i = 0; i < n; i++) {
		const struct func_decl *d = picks[i].decl;

		dw[i].name = picks[i].sym->name;
		dw[i].args = picks[i].dargs;
		for (j = 0; j < d->nargs; j++)
			if (!d->args[j].position)
				picks[i].dargs[dw[i].nargs++].path = d->args[j].path;
	}
	for (i = 0; i < nmissing; i++)
		dw[n + i].name = missing[i];
	err = dwarf__read_funcs(t->path, dw, n + nmissing);
	if (err && err != -ENODATA)
		pr_warn("'%s': its DWARF could not be read: arguments are found by position only",
			t->exe_name);
	return !err;
}

/* Says why each function the file names and T lacks cannot be traced. */
static void say_missing(const struct target *t, const struct symbols *s, const char *const *missing,
			size_t nmissing, const struct dwarf_func *dw, bool have_dwarf)
{
	size_t i;

	for (i = 0; i < nmissing; i++) {
		if (dw[i].inlined || (!have_dwarf && named_in_pclntab(s, missing[i])))
			pr_warn("function '%s' cannot be traced in '%s': the compiler inlined it "
				"into its callers, so it has no code of its own to probe (mark it "
				"//go:noinline to trace it)",
				missing[i], t->exe_name);
		else
			say_closest(s, missing[i], t->exe_name);
	}
}

/* The name of the function at ADDR, for messages. */
static const char *symbol_at(const struct symbols *s, uint64_t addr)
{
	size_t i;

	for (i = 0; i < s->n; i++)
		if (s->all[i].is_func && s->all[i].addr == addr)
			return s->all[i].name;
	return "?";
}

/*
 * Moves the ends of T's traced functions that follow a caller's last call (funcends.c), once
 * all of them are known: a call may end with a traced caller's.
 */
static int plan_tail_ends(struct target *t, struct symbols *s)
{
	struct funcends_plan plan = {};
	uint64_t *traced;
	size_t i;
	int err = 0;

	if (site_planner_policy != SITES_BEST || !t->nfuncs)
		return 0;
	traced = calloc(t->nfuncs, sizeof(*traced));
	if (!traced)
		return -ENOMEM;
	for (i = 0; i < t->nfuncs; i++)
		traced[i] = t->funcs[i].site.addr;
	plan.traced = traced;
	plan.ntraced = t->nfuncs;
	for (i = 0; !err && i < t->nfuncs; i++) {
		struct traced_func *f = &t->funcs[i];

		err = funcends__through_callers(s->a->sp, &f->site, &plan);
		if (plan.ends_with_caller)
			f->cfg.flags |= FUNC_ENDS_WITH_CALLER;
		if (plan.stepped_in)
			pr_info("function '%s' in '%s': its end after its call in '%s' is "
				"single-stepped: %s",
				f->symbol, t->exe_name, symbol_at(s, plan.stepped_in), plan.why);
	}
	free(traced);
	return err;
}

/*
 * Plans T->func_recover: runtime.recovery's call of gogo, where a recovered panic resumes its
 * goroutine (bpf/functions.bpf.c, func_recover). Left empty, with a note, when the binary has no
 * such call: then calls a recovered panic ended stay open until their callers end.
 */
static int plan_recover(struct target *t, struct symbols *s)
{
	const struct sym_entry *rec = find_symbol(s, "runtime.recovery");
	const struct sym_entry *gogo = find_symbol(s, "runtime.gogo.abi0");
	uint8_t *code = NULL;
	uint64_t *offs = NULL;
	size_t n = 0;
	int err;

	memset(&t->func_recover, 0, sizeof(t->func_recover));
	if (!gogo)
		gogo = find_symbol(s, "runtime.gogo");
	if (!rec || !rec->size || !gogo) {
		pr_debug("'%s': no runtime.recovery call of gogo to probe", t->exe_name);
		return 0;
	}
	code = malloc(rec->size);
	if (!code)
		return -ENOMEM;
	err = elf_file__read_addr(s->a->ef, rec->addr, code, rec->size);
	err = err ?: disasm__find_calls(t->machine, code, rec->size, rec->addr, gogo->addr, &offs,
					&n);
	if (!err && n == 1)
		err = elf_file__addr_to_offset(s->a->ef, rec->addr + offs[0],
					       &t->func_recover.entry_off);
	if (err == -ENOMEM)
		goto cleanup;
	if (err || n != 1) {
		pr_info("'%s': runtime.recovery has %zu calls of gogo: a call a recovered panic "
			"ended stays open until a call at its depth begins",
			t->exe_name, err ? 0 : n);
		err = 0;
		goto cleanup;
	}
	t->func_recover.symbol = "runtime.recovery";
	t->func_recover.addr = rec->addr;
	/* A direct CALL, emulated; arm64's BL, simulated. */
	t->func_recover.entry_emulated = true;
cleanup:
	free(code);
	free(offs);
	return err;
}

/*
 * Makes F the traced function of pick PK, DW its DWARF answer: its names, its probe sites, its
 * argument plan. -EAGAIN, said why, when it has no probe sites: F is left empty. On another
 * failure F keeps what it has, for target__release_funcs.
 */
static int trace_pick(struct traced_func *f, const struct pick *pk, const struct dwarf_func *dw,
		      const struct target *t, struct symbols *s, bool have_dwarf)
{
	char why[128];

	f->symbol = strdup(pk->sym->name);
	f->name = f->symbol ? strdup(symname__short(f->symbol)) : NULL;
	if (!f->name)
		return -ENOMEM;
	f->site.symbol = f->symbol;
	if (site_planner__probe_sites(s->a->sp, pk->sym->addr, pk->sym->size, SITE_ENDS, 0,
				      &f->site, why, sizeof(why))) {
		pr_warn("function '%s' cannot be traced in '%s': %s", f->symbol, t->exe_name, why);
		/* Whatever was planned before the step that failed. */
		probe_site__release(&f->site);
		free(f->symbol);
		free(f->name);
		memset(f, 0, sizeof(*f));
		return -EAGAIN;
	}
	if (dw->inlined)
		pr_info("function '%s' is also inlined into some of its callers in '%s': those "
			"calls make no span",
			f->symbol, t->exe_name);
	return argplan__plan(f, pk->decl, dw, t->machine, have_dwarf);
}

int functions__resolve(const struct functions *fs, struct target *t)
{
	const char *missing[FUNCTIONS_MAX_ENTRIES];
	struct dwarf_func *dw = NULL;
	struct pick *picks = NULL;
	struct symbols s = {};
	size_t n, nmissing, i;
	bool have_dwarf;
	int err;

	/* Function probes tell a call from its nested ones by the depth of its frame. */
	t->cfg.g_stack_hi = G_STACK_HI_OFFSET;
	if (!t->analysis) {
		target__release_funcs(t);
		return -EINVAL;
	}
	s.a = t->analysis;
	s.n = analysis__functions(s.a, &s.all);
	picks = calloc(MAX_FUNCS, sizeof(*picks));
	dw = calloc(MAX_FUNCS + FUNCTIONS_MAX_ENTRIES, sizeof(*dw));
	if (!picks || !dw) {
		err = -ENOMEM;
		goto cleanup;
	}
	n = pick_functions(fs, t, &s, picks, missing, &nmissing);
	have_dwarf = read_dwarf(t, picks, n, missing, nmissing, dw);
	say_missing(t, &s, missing, nmissing, dw + n, have_dwarf);
	t->funcs = calloc(n ? n : 1, sizeof(*t->funcs));
	if (!t->funcs) {
		err = -ENOMEM;
		goto cleanup;
	}
	err = n ? plan_recover(t, &s) : 0;
	for (i = 0; !err && i < n; i++) {
		err = trace_pick(&t->funcs[t->nfuncs++], &picks[i], &dw[i], t, &s, have_dwarf);
		if (err == -EAGAIN) {
			t->nfuncs--; /* left empty: the next pick takes its place */
			err = 0;
		} else if (err) {
			goto cleanup;
		}
	}
	err = err ?: plan_tail_ends(t, &s);
cleanup:
	free(picks);
	free(dw);
	if (err)
		target__release_funcs(t);
	return err;
}
