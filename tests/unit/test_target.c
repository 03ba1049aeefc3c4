// SPDX-License-Identifier: MIT
/*
 * Tests for target.c: the analysis of real Go binaries built by the test, and the refusals a user
 * sees for binaries gospan cannot trace.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <string.h>

#include "elf.h"
#include "gobin.h"
#include "helpers.h"
#include "offsets.h"
#include "target.h"

static struct offsets *tables;

static int group_setup(void **state)
{
	size_t len;
	char *json = test_read_file("../../offsets/go_offsets.json", &len);

	(void)state;
	if (!json)
		return -1;
	tables = offsets__parse(json, len);
	free(json);
	return tables ? 0 : -1;
}

static int group_teardown(void **state)
{
	(void)state;
	offsets__free(tables);
	return 0;
}

static void test_target__http_server_is_analysed(void **state)
{
	const char *bin = test_go_build("httpserver", "target-httpserver", "", "");
	struct elf_symbol sym;
	struct elf_file *ef;
	struct target *t;
	size_t i;

	(void)state;
	assert_non_null(bin);
	t = target__analyse(bin, NULL, tables);
	assert_non_null(t);
	assert_string_equal(t->exe_name, "target-httpserver");
	assert_int_equal(t->gobin->major, 1);
	assert_true(t->gobin->minor >= 17);
	assert_non_null(t->offsets_version);

	/* The entry is the symbol's file offset; every RET lies inside the function. */
	ef = elf_file__open(bin);
	assert_non_null(ef);
	assert_int_equal(elf_file__find_symbol(ef, "net/http.serverHandler.ServeHTTP", &sym), 0);
	assert_int_equal(t->serve_http.addr, sym.addr);
	assert_true(t->serve_http.nrets >= 1);
	for (i = 0; i < t->serve_http.nrets; i++) {
		assert_true(t->serve_http.ret_offs[i] > t->serve_http.entry_off);
		assert_true(t->serve_http.ret_offs[i] < t->serve_http.entry_off + sym.size);
	}
	assert_int_equal(elf_file__find_symbol(ef, "runtime.gopanic", &sym), 0);
	assert_int_equal(t->gopanic.addr, sym.addr);
	assert_int_not_equal(t->response_itab, 0);
	elf_file__close(ef);

	/* What BPF gets: the table's offsets and ServeHTTP's argument slots. */
	assert_int_equal(t->cfg.g_goid, t->offs[GO_FIELD_G_GOID]);
	assert_true(t->cfg.g_goid > 0);
	assert_int_equal(t->cfg.req_method, 0);
	assert_int_equal(t->cfg.arg_rw_itab, 2);
	assert_int_equal(t->cfg.arg_rw_data, 3);
	assert_int_equal(t->cfg.arg_req, 4);
	target__free(t);
}

static void test_target__refuses_what_it_cannot_trace(void **state)
{
	const char *nohttp, *stripped;
	char path[4096];

	(void)state;
	errno = 0;
	assert_null(target__analyse("/bin/true", NULL, tables));
	assert_int_equal(errno, ENOEXEC);

	assert_true((size_t)snprintf(path, sizeof(path), "%s/not-elf.txt", test_data_dir()) <
		    sizeof(path));
	assert_int_equal(test_sh("echo 'hello' > '%s'", path), 0);
	errno = 0;
	assert_null(target__analyse(path, NULL, tables));
	assert_int_not_equal(errno, 0);

	errno = 0;
	assert_null(target__analyse("/nonexistent/gospan-target", NULL, tables));
	assert_int_equal(errno, ENOENT);

	nohttp = test_go_build("nohttp", "target-nohttp", "", "");
	assert_non_null(nohttp);
	errno = 0;
	assert_null(target__analyse(nohttp, NULL, tables));
	assert_int_equal(errno, ENOENT);

	stripped = test_go_build("httpserver", "target-stripped", "", "-ldflags='-s -w'");
	assert_non_null(stripped);
	errno = 0;
	assert_null(target__analyse(stripped, NULL, tables));
	assert_int_equal(errno, EOPNOTSUPP);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_target__http_server_is_analysed),
		cmocka_unit_test(test_target__refuses_what_it_cannot_trace),
	};

	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
