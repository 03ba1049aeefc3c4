// SPDX-License-Identifier: MIT
/*
 * Argument plans: which integer registers Go's register ABI puts a parameter in, and, for a path
 * like "o.Customer.Name", which offsets to follow from it. The parameters' types come from
 * DWARF, or, in a binary without it, from what the functions file declares. Only what a uprobe
 * program can read is planned (integer registers, and memory through them), and only what
 * records.c can format (numbers, bools, strings); each other argument is said once, at start.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/abi.h"
#include "analysis/argplan.h"
#include "analysis/dwarf.h"
#include "analysis/functions.h"
#include "analysis/target.h"
#include "core/log.h"

/* Where one argument's value is at entry, and its type. */
struct place {
	unsigned param; /* 0-based, the receiver first */
	enum go_type type;
	unsigned size;
	unsigned nderefs; /* 0: in the parameter's registers; else pointer hops through OFFS */
	const int32_t *offs;
};

static enum go_type kind_type(int kind)
{
	if (kind == GO_KIND_BOOL)
		return GO_TYPE_BOOL;
	if (kind >= GO_KIND_INT && kind <= GO_KIND_INT64)
		return GO_TYPE_INT;
	if (kind >= GO_KIND_UINT && kind <= GO_KIND_UINTPTR)
		return GO_TYPE_UINT;
	if (kind == GO_KIND_FLOAT32 || kind == GO_KIND_FLOAT64)
		return GO_TYPE_FLOAT;
	if (kind == GO_KIND_STRING)
		return GO_TYPE_STRING;
	return GO_TYPE_NONE;
}

/* The registers of the parameters: from DWARF when it describes the function, else declared. */
static size_t plan_params(struct abi_param *params, const struct func_decl *d,
			  const struct dwarf_func *dw, uint16_t machine)
{
	unsigned nint, nfloat;
	size_t np, i;

	if (dw->found) {
		np = dw->nparams;
		for (i = 0; i < np; i++) {
			params[i].nint = dw->params[i].nint;
			params[i].nfloat = dw->params[i].nfloat;
			params[i].stack = dw->params[i].stack;
		}
	} else {
		for (i = 0; i < d->nparams; i++)
			abi__type_regs(d->params[i], &params[i].nint, &params[i].nfloat,
				       &params[i].stack);
		np = d->nparams;
		for (i = 0; i < d->nargs; i++) {
			unsigned p = d->args[i].position;

			if (p && p > d->nparams) {
				abi__type_regs(d->args[i].type, &params[p - 1].nint,
					       &params[p - 1].nfloat, &params[p - 1].stack);
				np = p > np ? p : np;
			}
		}
	}
	abi__reg_counts(machine, &nint, &nfloat);
	abi__assign(params, np, nint, nfloat);
	return np;
}

/*
 * Where argument AD is: from its declared position, or DWARF's answer DA (NULL when DWARF does
 * not describe the function). False, and said why, when that is not known.
 */
static bool find_place(struct place *pl, const struct func_arg_decl *ad, const struct dwarf_arg *da,
		       const struct traced_func *f, const struct func_decl *d, bool have_dwarf)
{
	if (ad->position) {
		*pl = (struct place){.param = ad->position - 1, .type = ad->type, .size = ad->size};
		return true;
	}
	if (!da) {
		pr_warn("argument '%s' of '%s' not recorded: %s", ad->path, f->symbol,
			have_dwarf ? "DWARF does not describe the function"
				   : "the binary has no DWARF; give its \"position\" and "
				     "\"type\" in the functions file");
		return false;
	}
	if (da->err) {
		/* A pattern's args apply to the functions that have such a parameter. */
		if (d->pattern && da->err == -ENOENT && !strncmp(da->why, "no parameter", 12))
			pr_debug("argument '%s' of '%s' not recorded: %s", ad->path, f->symbol,
				 da->why);
		else
			pr_warn("argument '%s' of '%s' not recorded: %s", ad->path, f->symbol,
				da->why);
		return false;
	}
	*pl = (struct place){.param = da->param,
			     .type = kind_type(da->kind),
			     .size = da->size,
			     .nderefs = da->nderefs,
			     .offs = da->offs};
	return true;
}

/* Whether a uprobe program can read PL and records.c format it; said why not when not. */
static bool readable(const struct place *pl, const struct abi_param *params, size_t np,
		     const char *path, const char *symbol)
{
	enum go_type type = pl->type;

	if (pl->param >= np || params[pl->param].stack) {
		pr_warn(
		    "argument '%s' of '%s' not recorded: the register ABI passes it on the stack",
		    path, symbol);
		return false;
	}
	if (!pl->nderefs && (type == GO_TYPE_FLOAT || type == GO_TYPE_COMPLEX)) {
		pr_warn("argument '%s' of '%s' not recorded: it is in a float register, and uprobe "
			"programs see integer registers only",
			path, symbol);
		return false;
	}
	if (type != GO_TYPE_BOOL && type != GO_TYPE_INT && type != GO_TYPE_UINT &&
	    type != GO_TYPE_FLOAT && type != GO_TYPE_STRING) {
		pr_warn("argument '%s' of '%s' not recorded: only numbers, bools and strings are "
			"recorded (name a field through a pointer: \"%s.Field\")",
			path, symbol, path);
		return false;
	}
	return true;
}

static void set_spec(struct func_arg_spec *spec, const struct place *pl,
		     const struct abi_param *param)
{
	unsigned k;

	memset(spec, 0, sizeof(*spec));
	spec->reg = (uint8_t)param->int_slot;
	spec->size = (uint8_t)(pl->size > 8 ? 8 : pl->size);
	if (pl->nderefs) {
		spec->kind = pl->type == GO_TYPE_STRING ? FUNC_ARG_MEM_STRING : FUNC_ARG_MEM;
		spec->nderefs = (uint8_t)pl->nderefs;
		for (k = 0; k < pl->nderefs; k++)
			spec->offs[k] = pl->offs[k];
	} else if (pl->type == GO_TYPE_STRING) {
		spec->kind = FUNC_ARG_REG_STRING;
		spec->reg2 = spec->reg + 1;
	} else {
		spec->kind = FUNC_ARG_REG;
	}
}

int argplan__plan(struct traced_func *f, const struct func_decl *d, const struct dwarf_func *dw,
		  uint16_t machine, bool have_dwarf)
{
	struct abi_param params[DWARF_MAX_PARAMS] = {};
	size_t np, i, by_name = 0;

	np = plan_params(params, d, dw, machine);
	for (i = 0; i < d->nargs; i++) {
		const struct func_arg_decl *ad = &d->args[i];
		const struct dwarf_arg *da = NULL;
		struct traced_arg *ta = &f->args[f->cfg.nargs];
		struct place pl;

		/* DWARF answered for the by-name arguments only, in the entry's order. */
		if (!ad->position && dw->found && by_name < dw->nargs)
			da = &dw->args[by_name];
		if (!ad->position)
			by_name++;
		if (!find_place(&pl, ad, da, f, d, have_dwarf) ||
		    !readable(&pl, params, np, ad->path, f->symbol))
			continue;
		ta->path = strdup(ad->path);
		if (!ta->path)
			return -ENOMEM;
		ta->type = pl.type;
		ta->size = pl.size;
		set_spec(&f->cfg.args[f->cfg.nargs], &pl, &params[pl.param]);
		f->cfg.nargs++;
	}
	return 0;
}
