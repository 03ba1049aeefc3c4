/* SPDX-License-Identifier: MIT */
/*
 * Go symbol names as people write them: glob patterns of the --functions file, the span name a
 * symbol gets, and how far apart two names are, to suggest the closest one when a name is absent.
 */
#ifndef GOSPAN_SYMNAME_H
#define GOSPAN_SYMNAME_H

#include <stdbool.h>
#include <stddef.h>

/* Shell-style glob on a symbol name: '*' and '?' match any characters, '\\' escapes. */
bool symname__glob(const char *pattern, const char *name);
/* The span name of SYMBOL: "github.com/a/b/pkg.(*T).M" -> "pkg.(*T).M". */
const char *symname__short(const char *symbol);
/* The edit distance of A and B, stopping early at LIMIT (returns LIMIT then). */
size_t symname__distance(const char *a, const char *b, size_t limit);

#endif
