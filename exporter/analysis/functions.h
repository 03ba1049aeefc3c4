/* SPDX-License-Identifier: MIT */
/*
 * Function spans (--functions FILE): the JSON file that lists which functions of which binaries
 * become spans and which of their arguments are recorded, and its resolution against one target:
 * symbols (exact or by glob pattern) to probe sites, argument names and paths to register slots
 * and memory offsets (from DWARF, or from the types the file declares), and the functions that
 * cannot be probed because the compiler inlined them. The file format is in docs/functions.md.
 */
#ifndef GOSPAN_FUNCTIONS_H
#define GOSPAN_FUNCTIONS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "events.h"
#include "analysis/gotype.h"
#include "analysis/target.h"

/* A pattern matches at most this many functions unless its entry says "max". */
#define FUNCTIONS_DEFAULT_MAX_MATCHES 64
#define FUNCTIONS_MAX_ENTRIES 256
/* Bytes of an argument's name or path: an attribute key longer than this is a mistake. */
#define FUNC_ARG_PATH_MAX 128

/* One argument to record, as the file gives it. */
struct func_arg_decl {
	char *path;	   /* "key", "o.Customer.Name"; for by-position args, the attribute name */
	unsigned position; /* 0: found by name in DWARF; else the 1-based parameter position */
	enum go_type type; /* by position: the declared type */
	unsigned size;	   /* by position: the value's size in bytes */
};

/* One entry of the "functions" list. */
struct func_decl {
	char *symbol;  /* the full symbol name, or NULL when PATTERN is used */
	char *pattern; /* a glob on symbol names */
	char *binary;  /* only for executables of this name (basename); NULL: every target */
	size_t max_matches;
	/*
	 * By-position parameter types, 1-based: PARAMS[i] is parameter i+1 (the receiver counts),
	 * needed without DWARF to know which registers an argument is in.
	 */
	struct func_arg_decl args[MAX_FUNC_ARGS];
	size_t nargs;
	enum go_type params[16];
	unsigned param_sizes[16];
	size_t nparams;
};

struct functions {
	struct func_decl *decls;
	size_t ndecls;
};

/*
 * Parses the JSON in BUF (LEN bytes); ORIGIN names it in messages. NULL with errno EINVAL when it
 * is not a valid functions file (the reason logged, with the entry it is about), ENOMEM.
 */
struct functions *functions__parse(const char *buf, size_t len, const char *origin);
/* Reads and parses the file at PATH. */
struct functions *functions__load(const char *path);
void functions__free(struct functions *fs);

/*
 * Finds in target T (analysed) the functions FS lists for it, fills T->funcs, and says at start,
 * per function, what cannot be traced: not found (with the closest names), inlined, arguments
 * that cannot be read. 0 on success, also when nothing matched; negative errno on failure.
 */
int functions__resolve(const struct functions *fs, struct target *t);

/* Parses a Go type name as the file writes it ("int32", "string", "*T"); GO_TYPE_NONE: unknown. */
enum go_type go_type__parse(const char *name, unsigned *size);

#endif
