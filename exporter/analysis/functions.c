// SPDX-License-Identifier: MIT
/*
 * The --functions file, read and checked: every entry names functions by symbol or glob pattern,
 * never by address, and the arguments to record by parameter name or path through pointers, or by
 * position and declared type for a binary without DWARF. A mistake is refused with the entry it is
 * in and what is wrong, before anything is probed. The file is trusted input (trusted_file.h):
 * it decides what gospan copies out of a service.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "analysis/functions.h"
#include "core/log.h"
#include "core/trusted_file.h"

#define FILE_MAX_SIZE (1 << 20)

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
		    pos->valuedouble > FUNC_MAX_PARAMS || pos->valuedouble != (int)pos->valuedouble)
			return refuse(origin, entry,
				      "argument '%s': \"position\" is the parameter's "
				      "place, 1 to %d (the receiver is 1)",
				      name->valuestring, FUNC_MAX_PARAMS);
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
		if (d->nparams == FUNC_MAX_PARAMS)
			return refuse(origin, entry, "more than %d \"params\"", FUNC_MAX_PARAMS);
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
