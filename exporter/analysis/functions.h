/* SPDX-License-Identifier: MIT */
/*
 * The --functions file: which functions of which binaries become spans, and which of their
 * arguments are recorded, with the types of parameters the file declares for binaries without
 * DWARF. Its content only, every entry checked when read; funcresolve.h finds the functions in a
 * target. The format is in docs/functions.md.
 */
#ifndef GOSPAN_FUNCTIONS_H
#define GOSPAN_FUNCTIONS_H

#include <stdbool.h>
#include <stddef.h>

#include "events.h"
#include "analysis/gotype.h"

/* A pattern matches at most this many functions unless its entry says "max". */
#define FUNCTIONS_DEFAULT_MAX_MATCHES 64
#define FUNCTIONS_MAX_ENTRIES 256
/* Bytes of an argument's name or path: an attribute key longer than this is a mistake. */
#define FUNC_ARG_PATH_MAX 128
/* Parameters whose types an entry can declare ("params", an argument's "position"). */
#define FUNC_MAX_PARAMS 16

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
	enum go_type params[FUNC_MAX_PARAMS];
	unsigned param_sizes[FUNC_MAX_PARAMS];
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

/* Parses a Go type name as the file writes it ("int32", "string", "*T"); GO_TYPE_NONE: unknown. */
enum go_type go_type__parse(const char *name, unsigned *size);

#endif
