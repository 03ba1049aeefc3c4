// SPDX-License-Identifier: MIT
/* Tests for symname.c: glob patterns on symbol names, span names, and the "closest:" distance. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include "analysis/symname.h"

static void test_symname__glob_short_and_distance(void **state)
{
	(void)state;
	assert_true(symname__glob("main.*", "main.fib"));
	assert_true(symname__glob("main.(*Store).*", "main.(*Store).Get"));
	assert_true(symname__glob("main.(\\*Store).Get", "main.(*Store).Get"));
	assert_false(symname__glob("main.(\\*Store).Get", "main.(xStore).Get"));
	assert_true(symname__glob("*.Handle?", "github.com/a/b.HandleX"));
	assert_false(symname__glob("*.Handle?", "github.com/a/b.Handle"));
	assert_true(symname__glob("a*b*c", "axxbyyc"));
	assert_false(symname__glob("a*b*c", "axxbyyd"));
	assert_false(symname__glob("main.fib", "main.fibx"));

	assert_string_equal(symname__short("main.fib"), "main.fib");
	assert_string_equal(
	    symname__short("github.com/free5gc/amf/internal/gmm.HandleRegistrationRequest"),
	    "gmm.HandleRegistrationRequest");
	assert_string_equal(symname__short("net/http.(*Transport).roundTrip"),
			    "http.(*Transport).roundTrip");
	/* A slash inside generic brackets is not the package's. */
	assert_string_equal(symname__short("example.com/p.F[example.com/q.T]"),
			    "p.F[example.com/q.T]");

	/* The distance behind "closest:", cut at its limit. */
	assert_int_equal(symname__distance("main.proces", "main.process", 5), 1);
	assert_int_equal(symname__distance("main.process", "main.prcess", 5), 1);
	assert_int_equal(symname__distance("main.fib", "main.fib", 5), 0);
	assert_int_equal(symname__distance("main.fib", "net/http.Get", 5), 5);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_symname__glob_short_and_distance),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
