// SPDX-License-Identifier: MIT
/*
 * Fuzzes functions.c's reading of a --functions file (cJSON underneath): entries, patterns,
 * argument paths and declared types, then each pattern matched against real symbol names as
 * target analysis does. The input is the JSON text, not NUL-terminated.
 */
#include "analysis/functions.h"
#include "analysis/symname.h"
#include "fuzz.h"

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	fuzz_init_log();
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char *const symbols[] = {
	    "main.main",
	    "main.(*Store).Get",
	    "net/http.serverHandler.ServeHTTP",
	    "github.com/a/b/pkg.(*T[go.shape.int]).M",
	    "type:.eq.[2]interface {}",
	    "example.com/x.F.func1.2",
	    "",
	};
	struct functions *fs;
	size_t i, j, n = 0;
	char *json = fuzz_dup(data, size);

	if (!json)
		return 0;
	fs = functions__parse(json, size, "fuzz.json");
	free(json);
	if (!fs)
		return 0;
	for (i = 0; i < fs->ndecls; i++) {
		const struct func_decl *d = &fs->decls[i];

		if ((!d->symbol) == (!d->pattern) || d->nargs > MAX_FUNC_ARGS ||
		    d->nparams > FUNC_MAX_PARAMS)
			abort();
		for (j = 0; j < d->nargs; j++)
			n += strlen(d->args[j].path);
		if (d->symbol)
			n += strlen(symname__short(d->symbol));
		for (j = 0; d->pattern && j < sizeof(symbols) / sizeof(symbols[0]); j++)
			n += symname__glob(d->pattern, symbols[j]);
		if (d->pattern)
			n += symname__glob(d->pattern, d->pattern);
	}
	functions__free(fs);
	return n == SIZE_MAX;
}
