// SPDX-License-Identifier: MIT
/*
 * Fuzzes dwarf.c through libelf and libdw (plain, SHF_COMPRESSED and .zdebug sections): the
 * struct member offsets gospan reads from every target with DWARF, and the functions, parameters
 * and argument paths --functions asks for. The input is the file. Every offset handed out must
 * be one BPF may use: -1, or within the bound dwarf.c promises; FUZZ_PRINT=1 shows what was read.
 */
#include "analysis/dwarf.h"
#include "fuzz.h"

static struct fuzz_file file;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	fuzz_init_log();
	fuzz_file_init(&file, "fuzz-dwarf");
	return 0;
}

static void check_offsets(const char *path)
{
	int64_t out[GO_FIELD__COUNT];
	int i, err;

	err = dwarf__read_offsets(path, out);
	for (i = 0; i < GO_FIELD__COUNT; i++) {
		if (out[i] < -1 || out[i] > (1 << 16) || (err && out[i] != -1)) {
			fprintf(stderr, "fuzz: field %s = %lld (err %d)\n", go_field_names[i],
				(long long)out[i], err);
			abort();
		}
	}
}

/* Functions of the seed binaries (tests/unit/testdata/httpserver), as a functions file names them.
 */
static void check_funcs(const char *path)
{
	static const char *const serve_args[] = {"rw",		 "req.Method",
						 "req.URL.Path", "req.ContentLength",
						 "sh.srv.Addr",	 "req.URL.User.username"};
	static const char *const conn_args[] = {"c.remoteAddr", "ctx", "c.server.MaxHeaderBytes"};
	static const char *const url_args[] = {"u.Host", "u.ForceQuery", "u"};
	static const char *const get_args[] = {"key", "h"};
	struct dwarf_arg serve[6], conn[3], url[3], get[2];
	struct dwarf_func funcs[] = {
	    {.name = "net/http.serverHandler.ServeHTTP", .args = serve, .nargs = 6},
	    {.name = "net/http.(*conn).serve", .args = conn, .nargs = 3},
	    {.name = "net/url.(*URL).String", .args = url, .nargs = 3},
	    {.name = "net/http.Header.Get", .args = get, .nargs = 2},
	    {.name = "main.main"},
	    {.name = "fmt.Fprintln"},
	    {.name = "no.such.function"},
	};
	size_t i, j;
	int err;

	memset(serve, 0, sizeof(serve));
	memset(conn, 0, sizeof(conn));
	memset(url, 0, sizeof(url));
	memset(get, 0, sizeof(get));
	for (i = 0; i < 6; i++)
		serve[i].path = serve_args[i];
	for (i = 0; i < 3; i++) {
		conn[i].path = conn_args[i];
		url[i].path = url_args[i];
	}
	for (i = 0; i < 2; i++)
		get[i].path = get_args[i];
	err = dwarf__read_funcs(path, funcs, sizeof(funcs) / sizeof(funcs[0]));
	for (i = 0; i < sizeof(funcs) / sizeof(funcs[0]); i++) {
		struct dwarf_func *f = &funcs[i];

		if (f->nparams > DWARF_MAX_PARAMS)
			abort();
		for (j = 0; j < f->nparams; j++)
			if (strnlen(f->params[j].name, DWARF_NAME_MAX) == DWARF_NAME_MAX)
				abort();
		for (j = 0; j < f->nargs; j++) {
			struct dwarf_arg *a = &f->args[j];

			if (!f->found || a->err) /* only what was read is used */
				continue;
			if (a->param >= f->nparams || a->nderefs > DWARF_MAX_DEREFS ||
			    strnlen(a->why, sizeof(a->why)) == sizeof(a->why))
				abort();
		}
		if (getenv("FUZZ_PRINT"))
			fprintf(stderr, "fuzz: err %d: %s found %d inlined %d params %zu\n", err,
				f->name, f->found, f->inlined, f->nparams);
		for (j = 0; getenv("FUZZ_PRINT") && j < f->nargs; j++)
			fprintf(stderr, "fuzz:   %s: err %d %s kind %d derefs %u\n",
				f->args[j].path, f->args[j].err,
				f->args[j].err ? f->args[j].why : "", f->args[j].kind,
				f->args[j].nderefs);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *path = fuzz_file_set(&file, data, size);

	if (!path)
		return 0;
	check_offsets(path);
	check_funcs(path);
	return 0;
}
