// SPDX-License-Identifier: MIT
/*
 * Tests for function spans: the --functions file (functions.c: what it accepts, and for each kind
 * of mistake the message a user sees), and the resolution (funcresolve.c, argplan.c) against
 * examples/functions
 * built by the test, with DWARF and stripped: probe sites, register slots and pointer paths for
 * each argument, and the inlined and missing functions named; and --cpu-time's probe (cputime.c).
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <elf.h>
#include <errno.h>
#include <string.h>
#include <sys/stat.h>

#include "analysis/cputime.h"
#include "analysis/elf.h"
#include "analysis/funcresolve.h"
#include "analysis/functions.h"
#include "analysis/offsets.h"
#include "analysis/target.h"
#include "helpers.h"

#define EXAMPLE "../../../examples/functions"

static struct offsets *tables;

static int group_setup(void **state)
{
	(void)state;
	tables = test_load_offsets();
	return tables ? 0 : -1;
}

static int group_teardown(void **state)
{
	(void)state;
	offsets__free(tables);
	return 0;
}

static struct functions *parse(const char *json)
{
	return functions__parse(json, strlen(json), "test.json");
}

static void test_functions__parses_every_form(void **state)
{
	struct functions *fs;
	const struct func_decl *d;

	(void)state;
	fs = parse(
	    "{\"functions\": ["
	    " {\"symbol\": \"main.(*Store).Get\", \"binary\": \"svc\","
	    "  \"args\": [\"key\", \"s.cfg.Limit\"]},"
	    " {\"pattern\": \"main.(\\\\*Store).*\", \"max\": 3},"
	    " {\"symbol\": \"main.process\", \"params\": [\"string\", \"int\", \"bool\","
	    "  \"float64\", \"int8\"],"
	    "  \"args\": [{\"name\": \"level\", \"position\": 5, \"type\": \"int8\"}]},"
	    " {\"symbol\": \"main.f\", \"args\": [{\"name\": \"p\", \"position\": 2, \"type\":"
	    "  \"*main.T\"}, {\"name\": \"s\", \"position\": 1, \"type\": \"string\"}]}"
	    "]}");
	assert_non_null(fs);
	assert_int_equal(fs->ndecls, 4);
	d = &fs->decls[0];
	assert_string_equal(d->symbol, "main.(*Store).Get");
	assert_null(d->pattern);
	assert_string_equal(d->binary, "svc");
	assert_int_equal(d->nargs, 2);
	assert_string_equal(d->args[1].path, "s.cfg.Limit");
	assert_int_equal(d->args[1].position, 0);
	assert_int_equal(d->max_matches, FUNCTIONS_DEFAULT_MAX_MATCHES);
	d = &fs->decls[1];
	assert_null(d->symbol);
	assert_string_equal(d->pattern, "main.(\\*Store).*");
	assert_int_equal(d->max_matches, 3);
	d = &fs->decls[2];
	assert_int_equal(d->nparams, 5);
	assert_int_equal(d->params[3], GO_TYPE_FLOAT);
	assert_int_equal(d->args[0].position, 5);
	assert_int_equal(d->args[0].type, GO_TYPE_INT);
	assert_int_equal(d->args[0].size, 1);
	d = &fs->decls[3];
	assert_int_equal(d->args[0].type, GO_TYPE_POINTER);
	assert_int_equal(d->args[1].type, GO_TYPE_STRING);
	functions__free(fs);

	/* An empty list is a valid file. */
	fs = parse("{\"functions\": []}");
	assert_non_null(fs);
	assert_int_equal(fs->ndecls, 0);
	functions__free(fs);
}

/* Parses JSON expecting NULL with EINVAL and a message holding WANT. */
static void expect_refused(const char *json, const char *want)
{
	struct test_capture cap;
	struct functions *fs;
	int err;
	char *out;

	assert_int_equal(test_capture_start(&cap), 0);
	fs = parse(json);
	err = errno;
	out = test_capture_end(&cap);
	assert_non_null(out);
	if (fs || err != EINVAL || !strstr(out, want))
		fail_msg("%s: want EINVAL and a message with \"%s\"; got %p, %d and \"%s\"", json,
			 want, (void *)fs, err, out);
	free(out);
}

static void test_functions__refuses_with_a_reason(void **state)
{
	struct functions *fs;

	(void)state;
	expect_refused("{\"functions\": [", "invalid functions file 'test.json': not JSON");
	expect_refused("[]", "expected {\"functions\": [...]}");
	expect_refused("{\"functions\": [], \"extra\": 1}", "unknown key 'extra'");
	expect_refused("{\"functions\": [{\"symbol\": \"a\", \"argz\": []}]}",
		       "entry 1: unknown key 'argz'");
	expect_refused("{\"functions\": [{\"symbol\": \"a\"}, {\"symbol\": \"b\", "
		       "\"pattern\": \"c\"}]}",
		       "entry 2: needs one of \"symbol\" or \"pattern\"");
	expect_refused("{\"functions\": [{}]}", "needs one of \"symbol\" or \"pattern\"");
	expect_refused("{\"functions\": [{\"symbol\": \"\"}]}", "non-empty strings");
	expect_refused("{\"functions\": [{\"symbol\": \"a\", \"max\": 3}]}",
		       "\"max\" goes with \"pattern\"");
	expect_refused("{\"functions\": [{\"pattern\": \"a*\", \"max\": 0}]}",
		       "\"max\" goes with \"pattern\"");
	expect_refused("{\"functions\": [{\"symbol\": \"a\", \"binary\": \"/usr/bin/x\"}]}",
		       "without a directory");
	expect_refused("{\"functions\": [{\"symbol\": \"a\", \"args\": [\"a\", \"b\", \"c\", "
		       "\"d\", \"e\"]}]}",
		       "more than 4 args");
	expect_refused("{\"functions\": [{\"symbol\": \"a\", \"args\": [\"req..URL\"]}]}",
		       "argument 'req..URL' is not a name or a path");
	expect_refused("{\"functions\": [{\"symbol\": \"a\", \"args\": [3]}]}",
		       "an argument is a string");
	{
		char json[256], path[FUNC_ARG_PATH_MAX + 2];

		/* The longest path is taken; one byte more is refused, naming the bound. */
		memset(path, 'a', sizeof(path) - 1);
		path[sizeof(path) - 2] = '\0';
		snprintf(json, sizeof(json),
			 "{\"functions\": [{\"symbol\": \"a\", \"args\": "
			 "[\"%s\"]}]}",
			 path);
		fs = parse(json);
		assert_non_null(fs);
		assert_string_equal(fs->decls[0].args[0].path, path);
		functions__free(fs);
		path[sizeof(path) - 2] = 'a';
		path[sizeof(path) - 1] = '\0';
		snprintf(json, sizeof(json),
			 "{\"functions\": [{\"symbol\": \"a\", \"args\": "
			 "[{\"name\": \"%s\"}]}]}",
			 path);
		expect_refused(json, "a parameter name or a path, at most 128 bytes");
	}
	expect_refused("{\"functions\": [{\"symbol\": \"a\", \"args\": [{\"name\": \"x\", "
		       "\"position\": 2, \"type\": \"int\"}]}]}",
		       "argument 'x' at position 2: the types of the parameters before it");
	expect_refused("{\"functions\": [{\"symbol\": \"a\", \"args\": [{\"name\": \"x\", "
		       "\"position\": 1, \"type\": \"intt\"}]}]}",
		       "\"type\" must be a Go type");
	expect_refused("{\"functions\": [{\"symbol\": \"a\", \"args\": [{\"name\": \"x\", "
		       "\"position\": 0, \"type\": \"int\"}]}]}",
		       "\"position\" is the parameter's place");
	expect_refused("{\"functions\": [{\"symbol\": \"a\", \"args\": [{\"name\": \"x.y\", "
		       "\"position\": 1, \"type\": \"int\"}]}]}",
		       "a path needs DWARF");
	expect_refused("{\"functions\": [{\"symbol\": \"a\", \"params\": [\"int\"], \"args\": "
		       "[{\"name\": \"x\", \"position\": 1, \"type\": \"string\"}]}]}",
		       "its type and \"params\" differ");
	expect_refused("{\"functions\": [{\"symbol\": \"a\", \"params\": [\"struct{}\"]}]}",
		       "'struct{}' is not a Go type gospan knows");
}

/*
 * From a file: read when only root or gospan's user can change it, refused with the reason
 * otherwise (the rule itself is tested in test_trusted_file.c).
 */
static void test_functions__load_checks_the_file(void **state)
{
	static const char json[] = "{\"functions\": [{\"symbol\": \"main.fib\"}]}";
	char dir[] = "/tmp/gospan-functions-XXXXXX", path[64], want[160];
	struct test_capture cap;
	struct functions *fs;
	char *out;
	FILE *f;

	(void)state;
	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/functions.json", dir);
	f = fopen(path, "w");
	assert_non_null(f);
	assert_true(fputs(json, f) >= 0);
	assert_int_equal(fchmod(fileno(f), 0644), 0);
	assert_int_equal(fclose(f), 0);

	fs = functions__load(path);
	assert_non_null(fs);
	assert_int_equal(fs->ndecls, 1);
	functions__free(fs);

	assert_int_equal(chmod(path, 0646), 0);
	assert_int_equal(test_capture_start(&cap), 0);
	errno = 0;
	fs = functions__load(path);
	assert_int_equal(errno, EPERM);
	out = test_capture_end(&cap);
	assert_null(fs);
	assert_non_null(out);
	snprintf(want, sizeof(want),
		 "cannot read functions file '%s': writable by any user (mode 0646", path);
	if (!strstr(out, want))
		fail_msg("want \"%s\"; got \"%s\"", want, out);
	free(out);
	assert_int_equal(unlink(path), 0);
	assert_int_equal(rmdir(dir), 0);
}

static const struct traced_func *find(const struct target *t, const char *symbol)
{
	size_t i;

	for (i = 0; i < t->nfuncs; i++)
		if (!strcmp(t->funcs[i].symbol, symbol))
			return &t->funcs[i];
	return NULL;
}

static const char CONFIG[] =
    "{\"functions\": ["
    " {\"symbol\": \"main.process\", \"args\": [\"user\", \"n\", \"ok\", \"level\"]},"
    " {\"symbol\": \"main.handleOrder\", \"args\": [\"o.ID\", \"o.Customer.Name\","
    "  \"o.Customer.Tier\", \"o.Express\"]},"
    " {\"symbol\": \"main.fib\", \"args\": [\"n\", {\"name\": \"first\", \"position\": 1,"
    "  \"type\": \"int\"}, \"nope\"]},"
    " {\"symbol\": \"main.process\", \"args\": [\"ratio\"], \"binary\": \"other\"},"
    " {\"pattern\": \"main.(\\\\*Store).Get\", \"args\": [\"key\", \"s.cfg.Limit\","
    "  \"s.cfg.Ratio\"]},"
    " {\"symbol\": \"main.double\"},"
    " {\"symbol\": \"main.proces\"}"
    "]}";

static void test_functions__resolves_with_dwarf(void **state)
{
	const char *bin = test_go_build(EXAMPLE, "functions", "", "");
	const struct func_arg_spec *a;
	const struct traced_func *f;
	struct test_capture cap;
	struct functions *fs;
	struct elf_symbol sym;
	struct elf_file *ef;
	struct target *t;
	char *out;

	(void)state;
	assert_non_null(bin);
	t = target__analyse(bin, NULL, tables, NULL, true);
	assert_non_null(t);
	fs = parse(CONFIG);
	assert_non_null(fs);
	assert_int_equal(test_capture_start(&cap), 0);
	assert_int_equal(functions__resolve(fs, t), 0);
	out = test_capture_end(&cap);
	assert_non_null(out);
	assert_non_null(strstr(out, "function 'main.double' cannot be traced in 'functions': the "
				    "compiler inlined it"));
	assert_non_null(strstr(out, "function 'main.proces' not found in 'functions'; closest: "
				    "'main.process'"));
	assert_non_null(strstr(out, "argument 'nope' of 'main.fib' not recorded: no parameter"));
	/* The entry for another binary does not apply here. */
	assert_null(strstr(out, "ratio"));
	free(out);
	assert_int_equal(t->nfuncs, 4);

	f = find(t, "main.process");
	assert_non_null(f);
	assert_string_equal(f->name, "main.process");
	ef = elf_file__open(bin);
	assert_non_null(ef);
	assert_int_equal(elf_file__find_symbol(ef, "main.process", &sym), 0);
	assert_int_equal(f->site.addr, sym.addr);
	/* Called only directly: its ends are in its callers, past the calls, none in itself. */
	assert_int_equal(f->site.nrets, 0);
	assert_true(f->site.nends >= 1);
	for (size_t i = 0; i < f->site.nends; i++) {
		uint64_t start;

		assert_true(f->site.ends[i].in_caller);
		assert_int_equal(elf_file__addr_to_offset(ef, sym.addr, &start), 0);
		assert_true(f->site.ends[i].off < start || f->site.ends[i].off >= start + sym.size);
	}
	elf_file__close(ef);
	/* user: a string in the 1st and 2nd registers; n 3rd; ok 4th; level 5th (ratio is in X0).
	 */
	assert_int_equal(f->cfg.nargs, 4);
	a = f->cfg.args;
	assert_int_equal(a[0].kind, FUNC_ARG_REG_STRING);
	assert_int_equal(a[0].reg, 1);
	assert_int_equal(a[0].reg2, 2);
	assert_int_equal(a[1].kind, FUNC_ARG_REG);
	assert_int_equal(a[1].reg, 3);
	assert_int_equal(a[2].reg, 4);
	assert_int_equal(f->args[2].type, GO_TYPE_BOOL);
	assert_int_equal(a[3].reg, 5);
	assert_int_equal(a[3].size, 1);
	assert_int_equal(f->args[3].type, GO_TYPE_INT);
	assert_string_equal(f->args[3].path, "level");

	/* Paths: Order{ID int64 @0, Customer *Customer @8, Express bool @16},
	 * Customer{Name string @0, Tier int32 @16}. */
	f = find(t, "main.handleOrder");
	assert_non_null(f);
	a = f->cfg.args;
	assert_int_equal(a[0].kind, FUNC_ARG_MEM);
	assert_int_equal(a[0].nderefs, 1);
	assert_int_equal(a[0].offs[0], 0);
	assert_int_equal(a[0].size, 8);
	assert_int_equal(a[1].kind, FUNC_ARG_MEM_STRING);
	assert_int_equal(a[1].nderefs, 2);
	assert_int_equal(a[1].offs[0], 8);
	assert_int_equal(a[1].offs[1], 0);
	assert_int_equal(a[2].kind, FUNC_ARG_MEM);
	assert_int_equal(a[2].offs[1], 16);
	assert_int_equal(a[2].size, 4);
	assert_int_equal(a[3].offs[0], 16);
	assert_int_equal(f->args[3].type, GO_TYPE_BOOL);

	/* A struct held by value inside the pointee: offsets add up within one hop. */
	f = find(t, "main.(*Store).Get");
	assert_non_null(f);
	a = f->cfg.args;
	assert_int_equal(f->cfg.nargs, 3);
	assert_int_equal(a[0].kind, FUNC_ARG_REG_STRING);
	assert_int_equal(a[0].reg, 2); /* the receiver is the 1st */
	assert_int_equal(a[1].kind, FUNC_ARG_MEM);
	assert_int_equal(a[1].reg, 1);
	assert_int_equal(a[1].nderefs, 1);
	assert_int_equal(a[1].offs[0], 16); /* Store{name string @0, cfg Config @16}, Limit @0 */
	assert_int_equal(f->args[2].type, GO_TYPE_FLOAT);
	assert_int_equal(a[2].offs[0], 24);

	/* By name and by position in one entry: DWARF answers for the by-name ones, in order. */
	f = find(t, "main.fib");
	assert_non_null(f);
	assert_int_equal(f->cfg.nargs, 2);
	assert_string_equal(f->args[0].path, "n");
	assert_int_equal(f->cfg.args[0].reg, 1);
	assert_string_equal(f->args[1].path, "first");
	assert_int_equal(f->cfg.args[1].kind, FUNC_ARG_REG);
	assert_int_equal(f->cfg.args[1].reg, 1);
	assert_int_equal(t->cfg.cpu_time, 0);
	functions__free(fs);
	target__free(t);
}

static void test_functions__resolves_stripped_by_position(void **state)
{
	const char *bin = test_go_build(EXAMPLE, "functions-stripped", "", "-ldflags='-s -w'");
	const struct traced_func *f;
	struct test_capture cap;
	struct functions *fs;
	struct target *t;
	char *out;

	(void)state;
	assert_non_null(bin);
	t = target__analyse(bin, NULL, tables, NULL, true);
	assert_non_null(t);
	fs = parse("{\"functions\": ["
		   " {\"symbol\": \"main.process\", \"params\": [\"string\", \"int\", \"bool\","
		   "  \"float64\", \"int8\"], \"args\": [\"user\","
		   "  {\"name\": \"ratio\", \"position\": 4, \"type\": \"float64\"},"
		   "  {\"name\": \"level\", \"position\": 5, \"type\": \"int8\"}]},"
		   " {\"symbol\": \"main.double\"}, {\"symbol\": \"runtime.execute\"}]}");
	assert_non_null(fs);
	assert_int_equal(test_capture_start(&cap), 0);
	assert_int_equal(functions__resolve(fs, t), 0);
	out = test_capture_end(&cap);
	assert_non_null(out);
	/* No DWARF: the inlined function is known by its name in the Go function table. */
	assert_non_null(strstr(out, "function 'main.double' cannot be traced in "
				    "'functions-stripped': the compiler inlined it"));
	assert_non_null(strstr(out, "argument 'user' of 'main.process' not recorded: the binary "
				    "has no DWARF"));
	assert_non_null(strstr(out, "argument 'ratio' of 'main.process' not recorded: it is in a "
				    "float register"));
	free(out);
	assert_int_equal(t->nfuncs, 2);
	f = find(t, "main.process");
	assert_non_null(f);
	assert_int_equal(f->cfg.nargs, 1);
	assert_int_equal(f->cfg.args[0].kind, FUNC_ARG_REG);
	assert_int_equal(f->cfg.args[0].reg, 5);
	assert_string_equal(f->args[0].path, "level");
	/*
	 * --cpu-time finds the scheduler's functions in the function table, the file's entry for
	 * one of them aside, at the same emulated entry.
	 */
	assert_int_equal(t->cfg.cpu_time, 0);
	assert_int_equal(cputime__resolve(t), 0);
	assert_int_equal(t->cfg.cpu_time, 1);
	assert_non_null(find(t, "runtime.execute"));
	assert_int_equal(t->cpu_execute.addr, find(t, "runtime.execute")->site.addr);
	assert_true(t->cpu_execute.entry_emulated);
	assert_true(t->cpu_schedule.addr && t->cpu_schedule.entry_emulated);
	/* Both read the binary target__analyse left open; once it is closed, nothing is read. */
	target__end_analysis(t);
	assert_null(t->analysis);
	assert_int_equal(cputime__resolve(t), -EINVAL);
	assert_int_equal(functions__resolve(fs, t), -EINVAL);
	assert_int_equal(t->nfuncs, 0);
	functions__free(fs);
	target__free(t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_functions__parses_every_form),
	    cmocka_unit_test(test_functions__refuses_with_a_reason),
	    cmocka_unit_test(test_functions__load_checks_the_file),
	    cmocka_unit_test(test_functions__resolves_with_dwarf),
	    cmocka_unit_test(test_functions__resolves_stripped_by_position),
	};

	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
