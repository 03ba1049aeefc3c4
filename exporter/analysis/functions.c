// SPDX-License-Identifier: MIT
/*
 * Function spans: the --functions file and its resolution against one target. The file names
 * functions by symbol or glob pattern, never by address; gospan finds each one's entry and RETs
 * itself (.symtab, or the Go function table of a stripped binary; capstone for the RETs) and
 * works out where each recorded argument is at entry: which registers Go's register ABI puts the
 * parameter in, and, for a path like "o.Customer.Name", which offsets to follow from it. Types come
 * from DWARF, or, in a binary without it, from what the file declares. What cannot be traced is
 * said once per function at start, with the reason.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "analysis/abi.h"
#include "analysis/disasm.h"
#include "analysis/dwarf.h"
#include "analysis/elf.h"
#include "analysis/functions.h"
#include "core/log.h"
#include "analysis/pclntab.h"
#include "analysis/symname.h"
#include "core/trusted_file.h"

#define FILE_MAX_SIZE (1 << 20)
#define MAX_PARAMS_DECL 16
#define CLOSEST_MAX 3
/* g.stack.hi: runtime.g begins with its stack {lo, hi uintptr}, in every release since Go 1.0. */
#define G_STACK_HI_OFFSET 8

/* ---- the file ------------------------------------------------------------------------------ */

static const struct {
	const char *name;
	enum go_type type;
	unsigned size;
} type_names[] = {
    {"bool", GO_TYPE_BOOL, 1},	       {"int", GO_TYPE_INT, 8},
    {"int8", GO_TYPE_INT, 1},	       {"int16", GO_TYPE_INT, 2},
    {"int32", GO_TYPE_INT, 4},	       {"rune", GO_TYPE_INT, 4},
    {"int64", GO_TYPE_INT, 8},	       {"uint", GO_TYPE_UINT, 8},
    {"uint8", GO_TYPE_UINT, 1},	       {"byte", GO_TYPE_UINT, 1},
    {"uint16", GO_TYPE_UINT, 2},       {"uint32", GO_TYPE_UINT, 4},
    {"uint64", GO_TYPE_UINT, 8},       {"uintptr", GO_TYPE_UINT, 8},
    {"float32", GO_TYPE_FLOAT, 4},     {"float64", GO_TYPE_FLOAT, 8},
    {"complex64", GO_TYPE_COMPLEX, 8}, {"complex128", GO_TYPE_COMPLEX, 16},
    {"string", GO_TYPE_STRING, 16},    {"pointer", GO_TYPE_POINTER, 8},
    {"map", GO_TYPE_POINTER, 8},       {"chan", GO_TYPE_POINTER, 8},
    {"func", GO_TYPE_POINTER, 8},      {"slice", GO_TYPE_SLICE, 24},
    {"interface", GO_TYPE_IFACE, 16},  {"error", GO_TYPE_IFACE, 16},
    {"any", GO_TYPE_IFACE, 16},
};

enum go_type go_type__parse(const char *name, unsigned *size)
{
	size_t i;

	/* Every pointer, map, chan and func is one word; the pointee does not matter here. */
	if (name[0] == '*' || !strncmp(name, "map[", 4) || !strncmp(name, "chan ", 5) ||
	    !strncmp(name, "func(", 5)) {
		*size = 8;
		return GO_TYPE_POINTER;
	}
	if (!strncmp(name, "[]", 2)) {
		*size = 24;
		return GO_TYPE_SLICE;
	}
	for (i = 0; i < sizeof(type_names) / sizeof(type_names[0]); i++) {
		if (!strcmp(name, type_names[i].name)) {
			*size = type_names[i].size;
			return type_names[i].type;
		}
	}
	return GO_TYPE_NONE;
}

static int refuse(const char *origin, size_t entry, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int refuse(const char *origin, size_t entry, const char *fmt, ...)
{
	char why[256];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	if (entry)
		pr_err("invalid functions file '%s': entry %zu: %s", origin, entry, why);
	else
		pr_err("invalid functions file '%s': %s", origin, why);
	return -EINVAL;
}

static bool only_keys(const cJSON *obj, const char *const *keys, const char **bad)
{
	const cJSON *it;
	size_t i;

	cJSON_ArrayForEach(it, obj)
	{
		for (i = 0; keys[i]; i++)
			if (it->string && !strcmp(it->string, keys[i]))
				break;
		if (!keys[i]) {
			*bad = it->string ? it->string : "?";
			return false;
		}
	}
	return true;
}

/* A path of Go identifiers separated by dots: what an argument is named by. */
static bool valid_path(const char *s)
{
	bool start = true;

	if (!*s || strlen(s) > FUNC_ARG_PATH_MAX)
		return false;
	for (; *s; s++) {
		if (*s == '.') {
			if (start)
				return false;
			start = true;
			continue;
		}
		if (!(*s == '_' || (*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') ||
		      (!start && *s >= '0' && *s <= '9') || (unsigned char)*s >= 0x80))
			return false;
		start = false;
	}
	return !start;
}

static int parse_arg(struct func_decl *d, const cJSON *a, const char *origin, size_t entry)
{
	static const char *const keys[] = {"name", "position", "type", NULL};
	struct func_arg_decl *ad = &d->args[d->nargs];
	const cJSON *name, *pos, *type;
	const char *bad;

	if (d->nargs == MAX_FUNC_ARGS)
		return refuse(origin, entry, "more than %d args", MAX_FUNC_ARGS);
	if (cJSON_IsString(a)) {
		if (!valid_path(a->valuestring))
			return refuse(origin, entry,
				      "argument '%.*s' is not a name or a path like "
				      "\"req.URL.Path\" of at most %d bytes",
				      FUNC_ARG_PATH_MAX, a->valuestring, FUNC_ARG_PATH_MAX);
		ad->path = strdup(a->valuestring);
		if (!ad->path)
			return -ENOMEM;
		d->nargs++;
		return 0;
	}
	if (!cJSON_IsObject(a))
		return refuse(origin, entry,
			      "an argument is a string (a parameter name or path) or "
			      "an object with \"name\", \"position\" and \"type\"");
	if (!only_keys(a, keys, &bad))
		return refuse(origin, entry, "unknown argument key '%s'", bad);
	name = cJSON_GetObjectItemCaseSensitive(a, "name");
	pos = cJSON_GetObjectItemCaseSensitive(a, "position");
	type = cJSON_GetObjectItemCaseSensitive(a, "type");
	if (!cJSON_IsString(name) || !valid_path(name->valuestring))
		return refuse(origin, entry,
			      "an argument needs a \"name\": a parameter name or a path, "
			      "at most %d bytes",
			      FUNC_ARG_PATH_MAX);
	if (pos || type) {
		if (!cJSON_IsNumber(pos) || pos->valuedouble < 1 ||
		    pos->valuedouble > MAX_PARAMS_DECL || pos->valuedouble != (int)pos->valuedouble)
			return refuse(origin, entry,
				      "argument '%s': \"position\" is the parameter's "
				      "place, 1 to %d (the receiver is 1)",
				      name->valuestring, MAX_PARAMS_DECL);
		if (!cJSON_IsString(type) ||
		    !(ad->type = go_type__parse(type->valuestring, &ad->size)))
			return refuse(origin, entry,
				      "argument '%s': \"type\" must be a Go type "
				      "such as int, int32, uint64, bool, float64, string",
				      name->valuestring);
		if (strchr(name->valuestring, '.'))
			return refuse(origin, entry,
				      "argument '%s': a path needs DWARF; by position "
				      "only the parameter itself is read",
				      name->valuestring);
		ad->position = (unsigned)pos->valuedouble;
	}
	ad->path = strdup(name->valuestring);
	if (!ad->path)
		return -ENOMEM;
	d->nargs++;
	return 0;
}

static int parse_entry(struct func_decl *d, const cJSON *e, const char *origin, size_t entry)
{
	static const char *const keys[] = {"symbol", "pattern", "binary", "args",
					   "params", "max",	NULL};
	const cJSON *sym, *pat, *bin, *args, *params, *max, *a;
	const char *bad;
	size_t i;
	int err;

	if (!cJSON_IsObject(e))
		return refuse(origin, entry, "not an object");
	if (!only_keys(e, keys, &bad))
		return refuse(origin, entry, "unknown key '%s'", bad);
	sym = cJSON_GetObjectItemCaseSensitive(e, "symbol");
	pat = cJSON_GetObjectItemCaseSensitive(e, "pattern");
	bin = cJSON_GetObjectItemCaseSensitive(e, "binary");
	args = cJSON_GetObjectItemCaseSensitive(e, "args");
	params = cJSON_GetObjectItemCaseSensitive(e, "params");
	max = cJSON_GetObjectItemCaseSensitive(e, "max");
	if (!sym == !pat)
		return refuse(origin, entry, "needs one of \"symbol\" or \"pattern\"");
	if ((sym && (!cJSON_IsString(sym) || !*sym->valuestring)) ||
	    (pat && (!cJSON_IsString(pat) || !*pat->valuestring)))
		return refuse(origin, entry, "\"symbol\" and \"pattern\" are non-empty strings");
	if (bin && (!cJSON_IsString(bin) || !*bin->valuestring || strchr(bin->valuestring, '/')))
		return refuse(origin, entry,
			      "\"binary\" is an executable's name, without a "
			      "directory");
	if (max && (!pat || !cJSON_IsNumber(max) || max->valuedouble < 1 ||
		    max->valuedouble > MAX_FUNCS || max->valuedouble != (int)max->valuedouble))
		return refuse(origin, entry, "\"max\" goes with \"pattern\", 1 to %d", MAX_FUNCS);
	if (args && !cJSON_IsArray(args))
		return refuse(origin, entry, "\"args\" is a list");
	if (params && !cJSON_IsArray(params))
		return refuse(origin, entry, "\"params\" is a list of Go types, receiver first");
	d->symbol = sym ? strdup(sym->valuestring) : NULL;
	d->pattern = pat ? strdup(pat->valuestring) : NULL;
	d->binary = bin ? strdup(bin->valuestring) : NULL;
	if ((sym && !d->symbol) || (pat && !d->pattern) || (bin && !d->binary))
		return -ENOMEM;
	d->max_matches = max ? (size_t)max->valuedouble : FUNCTIONS_DEFAULT_MAX_MATCHES;
	cJSON_ArrayForEach(a, args)
	{
		err = parse_arg(d, a, origin, entry);
		if (err)
			return err;
	}
	cJSON_ArrayForEach(a, params)
	{
		if (d->nparams == MAX_PARAMS_DECL)
			return refuse(origin, entry, "more than %d \"params\"", MAX_PARAMS_DECL);
		if (!cJSON_IsString(a) || !(d->params[d->nparams] = go_type__parse(
						a->valuestring, &d->param_sizes[d->nparams])))
			return refuse(origin, entry,
				      "\"params\": '%s' is not a Go type gospan "
				      "knows (int, string, *T, []T, map[K]V, ...)",
				      cJSON_IsString(a) ? a->valuestring : "?");
		d->nparams++;
	}
	/* By position: every parameter up to the last one read must have a known type. */
	for (i = 0; i < d->nargs; i++) {
		struct func_arg_decl *ad = &d->args[i];
		unsigned p;

		if (!ad->position)
			continue;
		if (ad->position <= d->nparams && d->params[ad->position - 1] != ad->type)
			return refuse(origin, entry,
				      "argument '%s': its type and \"params\" differ", ad->path);
		for (p = 1; p < ad->position; p++) {
			size_t j;
			bool known = p <= d->nparams;

			for (j = 0; !known && j < d->nargs; j++)
				known = d->args[j].position == p;
			if (!known)
				return refuse(origin, entry,
					      "argument '%s' at position %u: the "
					      "types of the parameters before it are "
					      "needed (\"params\")",
					      ad->path, ad->position);
		}
	}
	return 0;
}

void functions__free(struct functions *fs)
{
	size_t i, j;

	if (!fs)
		return;
	for (i = 0; i < fs->ndecls; i++) {
		struct func_decl *d = &fs->decls[i];

		free(d->symbol);
		free(d->pattern);
		free(d->binary);
		for (j = 0; j < d->nargs; j++)
			free(d->args[j].path);
	}
	free(fs->decls);
	free(fs);
}

struct functions *functions__parse(const char *buf, size_t len, const char *origin)
{
	const cJSON *list, *e;
	struct functions *fs;
	cJSON *root;
	const char *bad;
	size_t n = 0;
	int err = 0;
	static const char *const keys[] = {"functions", NULL};

	root = cJSON_ParseWithLength(buf, len);
	if (!root) {
		const char *at = cJSON_GetErrorPtr();

		refuse(origin, 0, "not JSON (near byte %zu)",
		       at && at >= buf && at <= buf + len ? (size_t)(at - buf) : (size_t)0);
		errno = EINVAL;
		return NULL;
	}
	fs = calloc(1, sizeof(*fs));
	if (!fs) {
		err = -ENOMEM;
		goto cleanup;
	}
	list = cJSON_GetObjectItemCaseSensitive(root, "functions");
	if (!cJSON_IsObject(root) || !cJSON_IsArray(list)) {
		err = refuse(origin, 0, "expected {\"functions\": [...]}");
		goto cleanup;
	}
	if (!only_keys(root, keys, &bad)) {
		err = refuse(origin, 0, "unknown key '%s'", bad);
		goto cleanup;
	}
	n = (size_t)cJSON_GetArraySize(list);
	if (n > FUNCTIONS_MAX_ENTRIES) {
		err = refuse(origin, 0, "more than %d entries", FUNCTIONS_MAX_ENTRIES);
		goto cleanup;
	}
	fs->decls = calloc(n ? n : 1, sizeof(*fs->decls));
	if (!fs->decls) {
		err = -ENOMEM;
		goto cleanup;
	}
	cJSON_ArrayForEach(e, list)
	{
		err = parse_entry(&fs->decls[fs->ndecls], e, origin, fs->ndecls + 1);
		fs->ndecls++;
		if (err)
			goto cleanup;
	}
cleanup:
	cJSON_Delete(root);
	if (err) {
		functions__free(fs);
		errno = -err;
		return NULL;
	}
	return fs;
}

struct functions *functions__load(const char *path)
{
	char why[TRUSTED_FILE_WHY_MAX];
	struct functions *fs;
	size_t len;
	char *buf;
	int err;

	/* The file decides what gospan copies out of a service: only one nobody else can write. */
	buf = trusted_file__read(path, FILE_MAX_SIZE, &len, why, sizeof(why));
	if (!buf) {
		err = errno;
		pr_err("cannot read functions file '%s': %s", path, why);
		errno = err;
		return NULL;
	}
	fs = functions__parse(buf, len, path);
	free(buf);
	return fs;
}

/* ---- resolution against a target ------------------------------------------------------------ */

/* The function symbols of the target, from .symtab or the Go function table. */
struct symbols {
	struct elf_file *ef;
	struct pclntab *pt;
	struct site_planner *sp;
	const struct sym_entry *all;
	size_t n;
};

static int open_symbols(struct symbols *s, const char *path)
{
	s->ef = elf_file__open(path);
	if (!s->ef)
		return -errno;
	s->n = elf_file__symbols(s->ef, &s->all);
	if (!s->n) {
		s->pt = pclntab__open(s->ef);
		if (!s->pt)
			return -errno;
		s->n = pclntab__functions(s->pt, &s->all);
	}
	s->sp = site_planner__new(s->ef, s->pt);
	return s->sp ? 0 : -ENOMEM;
}

static void close_symbols(struct symbols *s)
{
	site_planner__free(s->sp);
	pclntab__close(s->pt);
	elf_file__close(s->ef);
}

static const struct sym_entry *find_symbol(const struct symbols *s, const char *name)
{
	size_t lo = 0, hi = s->n, mid;
	int c;

	while (lo < hi) {
		mid = lo + (hi - lo) / 2;
		c = strcmp(s->all[mid].name, name);
		if (c < 0)
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

	if (elf_file__section(s->ef, ".gopclntab", &data, &size, NULL))
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
	struct dwarf_func dw;
	struct dwarf_arg dargs[MAX_FUNC_ARGS];
};

static bool already_picked(const struct pick *picks, size_t n, const struct sym_entry *sym)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (picks[i].sym->addr == sym->addr && !strcmp(picks[i].sym->name, sym->name))
			return true;
	return false;
}

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

/* Works out the func_config of function F from the DWARF answer or the declared types. */
static void plan_args(struct target *t, struct traced_func *f, struct pick *pk, bool have_dwarf)
{
	const struct func_decl *d = pk->decl;
	struct abi_param params[DWARF_MAX_PARAMS] = {};
	unsigned nint, nfloat;
	size_t np = 0, i;

	/* The parameters' registers: from DWARF when it describes the function, else declared. */
	if (pk->dw.found) {
		np = pk->dw.nparams;
		for (i = 0; i < np; i++) {
			params[i].nint = pk->dw.params[i].nint;
			params[i].nfloat = pk->dw.params[i].nfloat;
			params[i].stack = pk->dw.params[i].stack;
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
	abi__reg_counts(t->machine, &nint, &nfloat);
	abi__assign(params, np, nint, nfloat);

	for (i = 0; i < d->nargs; i++) {
		const struct func_arg_decl *ad = &d->args[i];
		struct func_arg_spec *spec = &f->cfg.args[f->cfg.nargs];
		struct traced_arg *ta = &f->args[f->cfg.nargs];
		struct dwarf_arg *da = &pk->dargs[i];
		unsigned param, size, k;
		enum go_type type;

		if (ad->position) {
			param = ad->position - 1;
			type = ad->type;
			size = ad->size;
			da->nderefs = 0;
		} else if (!pk->dw.found) {
			pr_warn("argument '%s' of '%s' not recorded: %s", ad->path, f->symbol,
				have_dwarf ? "DWARF does not describe the function"
					   : "the binary has no DWARF; give its \"position\" and "
					     "\"type\" in the functions file");
			continue;
		} else if (da->err) {
			/* A pattern's args apply to the functions that have such a parameter. */
			if (d->pattern && da->err == -ENOENT &&
			    !strncmp(da->why, "no parameter", 12))
				pr_debug("argument '%s' of '%s' not recorded: %s", ad->path,
					 f->symbol, da->why);
			else
				pr_warn("argument '%s' of '%s' not recorded: %s", ad->path,
					f->symbol, da->why);
			continue;
		} else {
			param = da->param;
			type = kind_type(da->kind);
			size = da->size;
		}
		if (param >= np || params[param].stack) {
			pr_warn("argument '%s' of '%s' not recorded: the register ABI passes it on "
				"the stack",
				ad->path, f->symbol);
			continue;
		}
		if (!da->nderefs && (type == GO_TYPE_FLOAT || type == GO_TYPE_COMPLEX)) {
			pr_warn(
			    "argument '%s' of '%s' not recorded: it is in a float register, and "
			    "uprobe programs see integer registers only",
			    ad->path, f->symbol);
			continue;
		}
		if (type != GO_TYPE_BOOL && type != GO_TYPE_INT && type != GO_TYPE_UINT &&
		    type != GO_TYPE_FLOAT && type != GO_TYPE_STRING) {
			pr_warn(
			    "argument '%s' of '%s' not recorded: only numbers, bools and strings "
			    "are recorded (name a field through a pointer: \"%s.Field\")",
			    ad->path, f->symbol, ad->path);
			continue;
		}
		memset(spec, 0, sizeof(*spec));
		spec->reg = (uint8_t)params[param].int_slot;
		spec->size = (uint8_t)(size > 8 ? 8 : size);
		if (da->nderefs) {
			spec->kind = type == GO_TYPE_STRING ? FUNC_ARG_MEM_STRING : FUNC_ARG_MEM;
			spec->nderefs = (uint8_t)da->nderefs;
			for (k = 0; k < da->nderefs; k++)
				spec->offs[k] = da->offs[k];
		} else if (type == GO_TYPE_STRING) {
			spec->kind = FUNC_ARG_REG_STRING;
			spec->reg2 = spec->reg + 1;
		} else {
			spec->kind = FUNC_ARG_REG;
		}
		ta->type = type;
		ta->size = size;
		ta->path = strdup(ad->path);
		if (!ta->path)
			continue;
		f->cfg.nargs++;
	}
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

int functions__resolve(const struct functions *fs, struct target *t)
{
	struct symbols s = {};
	struct pick *picks = NULL;
	struct dwarf_func *dw = NULL;
	const char *missing[FUNCTIONS_MAX_ENTRIES];
	size_t n, nmissing, i, j, ndw;
	bool have_dwarf;
	char why[128];
	int err;

	/* Function probes tell a call from its nested ones by the depth of its frame. */
	t->cfg.g_stack_hi = G_STACK_HI_OFFSET;
	err = open_symbols(&s, t->path);
	if (err)
		goto cleanup;
	picks = calloc(MAX_FUNCS, sizeof(*picks));
	dw = calloc(MAX_FUNCS + FUNCTIONS_MAX_ENTRIES, sizeof(*dw));
	if (!picks || !dw) {
		err = -ENOMEM;
		goto cleanup;
	}
	n = pick_functions(fs, t, &s, picks, missing, &nmissing);

	/* One DWARF walk answers for every picked function and every missing one. */
	for (i = 0; i < n; i++) {
		struct pick *pk = &picks[i];

		pk->dw.name = pk->sym->name;
		pk->dw.args = pk->dargs;
		for (j = 0; j < pk->decl->nargs; j++) {
			if (!pk->decl->args[j].position)
				pk->dargs[pk->dw.nargs++].path = pk->decl->args[j].path;
		}
		dw[i] = pk->dw;
	}
	for (ndw = n, i = 0; i < nmissing; i++)
		dw[ndw++].name = missing[i];
	err = dwarf__read_funcs(t->path, dw, ndw);
	have_dwarf = !err;
	if (err && err != -ENODATA)
		pr_warn("'%s': its DWARF could not be read: arguments are found by position only",
			t->exe_name);
	err = 0;

	for (i = 0; i < nmissing; i++) {
		if (dw[n + i].inlined || (!have_dwarf && named_in_pclntab(&s, missing[i])))
			pr_warn("function '%s' cannot be traced in '%s': the compiler inlined it "
				"into its callers, so it has no code of its own to probe (mark it "
				"//go:noinline to trace it)",
				missing[i], t->exe_name);
		else
			say_closest(&s, missing[i], t->exe_name);
	}

	t->funcs = calloc(n ? n : 1, sizeof(*t->funcs));
	if (!t->funcs) {
		err = -ENOMEM;
		goto cleanup;
	}
	for (i = 0; i < n; i++) {
		struct traced_func *f = &t->funcs[t->nfuncs];
		struct pick *pk = &picks[i];

		/* The DWARF answer, with the argument paths still pointing into the pick. */
		dw[i].args = pk->dargs;
		pk->dw = dw[i];
		f->symbol = strdup(pk->sym->name);
		f->name = f->symbol ? strdup(symname__short(f->symbol)) : NULL;
		if (!f->name) {
			free(f->symbol);
			err = -ENOMEM;
			goto cleanup;
		}
		f->site.symbol = f->symbol;
		err = site_planner__probe_sites(s.sp, pk->sym->addr, pk->sym->size, SITE_ENDS, 0,
						&f->site, why, sizeof(why));
		if (err) {
			pr_warn("function '%s' cannot be traced in '%s': %s", f->symbol,
				t->exe_name, why);
			free(f->symbol);
			free(f->name);
			memset(f, 0, sizeof(*f));
			err = 0;
			continue;
		}
		if (pk->dw.inlined)
			pr_info("function '%s' is also inlined into some of its callers in '%s': "
				"those calls make no span",
				f->symbol, t->exe_name);
		/* The args map to decl args in order, the by-position ones skipped in DWARF. */
		{
			struct dwarf_arg tmp[MAX_FUNC_ARGS] = {};
			size_t k = 0;

			for (j = 0; j < pk->decl->nargs; j++)
				if (!pk->decl->args[j].position)
					tmp[j] = pk->dargs[k++];
			memcpy(pk->dargs, tmp, sizeof(tmp));
		}
		plan_args(t, f, pk, have_dwarf);
		t->nfuncs++;
	}
cleanup:
	free(picks);
	free(dw);
	if (s.ef)
		close_symbols(&s);
	if (err)
		target__release_funcs(t);
	return err;
}
