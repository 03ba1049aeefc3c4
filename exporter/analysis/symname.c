// SPDX-License-Identifier: MIT
/*
 * Go symbol names: glob matching for --functions patterns, span names without package
 * directories, and an edit distance for "closest:" suggestions. Pure string work: no binary is
 * read here.
 */
#include <string.h>

#include "analysis/symname.h"

bool symname__glob(const char *p, const char *s)
{
	const char *star_p = NULL, *star_s = NULL;

	while (*s) {
		if (*p == '\\' && p[1]) {
			if (p[1] != *s)
				goto backtrack;
			p += 2;
			s++;
		} else if (*p == '*') {
			star_p = ++p;
			star_s = s;
		} else if (*p == '?' || *p == *s) {
			p++;
			s++;
		} else {
		backtrack:
			if (!star_p)
				return false;
			p = star_p;
			s = ++star_s;
		}
	}
	while (*p == '*')
		p++;
	return !*p;
}

const char *symname__short(const char *symbol)
{
	size_t head = strcspn(symbol, "[("); /* generic brackets and receivers may hold slashes */
	const char *slash = NULL, *p;

	for (p = symbol; p < symbol + head; p++)
		if (*p == '/')
			slash = p;
	return slash ? slash + 1 : symbol;
}

size_t symname__distance(const char *a, const char *b, size_t limit)
{
	size_t la = strlen(a), lb = strlen(b), i, j, row[256], prev, tmp, best;

	if (lb >= sizeof(row) / sizeof(row[0]) || (la > lb ? la - lb : lb - la) >= limit)
		return limit;
	for (j = 0; j <= lb; j++)
		row[j] = j;
	for (i = 1; i <= la; i++) {
		prev = row[0];
		row[0] = i;
		best = row[0];
		for (j = 1; j <= lb; j++) {
			tmp = row[j];
			row[j] = a[i - 1] == b[j - 1]
				     ? prev
				     : 1 + (prev < row[j - 1]
						? (prev < row[j] ? prev : row[j])
						: (row[j - 1] < row[j] ? row[j - 1] : row[j]));
			prev = tmp;
			if (row[j] < best)
				best = row[j];
		}
		if (best >= limit)
			return limit;
	}
	return row[lb] < limit ? row[lb] : limit;
}
