// SPDX-License-Identifier: MIT
/* Tests for abi.c: Go's register assignment (ABIInternal) on amd64 and arm64. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <elf.h>
#include <string.h>

#include "analysis/abi.h"

static void assign(struct abi_param *p, const enum go_type *types, size_t n, unsigned nint,
		   unsigned nfloat)
{
	size_t i;

	for (i = 0; i < n; i++)
		abi__type_regs(types[i], &p[i].nint, &p[i].nfloat, &p[i].stack);
	abi__assign(p, n, nint, nfloat);
}

static void test_abi__register_assignment(void **state)
{
	struct abi_param p[8] = {};
	unsigned nint, nfloat;

	(void)state;
	abi__reg_counts(EM_X86_64, &nint, &nfloat);
	assert_int_equal(nint, 9);
	assert_int_equal(nfloat, 15);
	abi__reg_counts(EM_AARCH64, &nint, &nfloat);
	assert_int_equal(nint, 16);
	assert_int_equal(nfloat, 16);
	/* process(user string, n int, ok bool, ratio float64, level int8) on amd64. */
	assign(
	    p,
	    (enum go_type[]){GO_TYPE_STRING, GO_TYPE_INT, GO_TYPE_BOOL, GO_TYPE_FLOAT, GO_TYPE_INT},
	    5, 9, 15);
	assert_int_equal(p[0].int_slot, 1);
	assert_int_equal(p[1].int_slot, 3);
	assert_int_equal(p[2].int_slot, 4);
	assert_int_equal(p[3].int_slot, 0);
	assert_int_equal(p[3].float_slot, 1);
	assert_int_equal(p[4].int_slot, 5);

	/* Four strings take 8 of amd64's 9 registers: a fifth goes on the stack whole, and an
	 * int after it still gets the last register. */
	memset(p, 0, sizeof(p));
	assign(p,
	       (enum go_type[]){GO_TYPE_STRING, GO_TYPE_STRING, GO_TYPE_STRING, GO_TYPE_STRING,
				GO_TYPE_STRING, GO_TYPE_INT},
	       6, 9, 15);
	assert_int_equal(p[3].int_slot, 7);
	assert_true(p[4].stack);
	assert_int_equal(p[4].int_slot, 0);
	assert_false(p[5].stack);
	assert_int_equal(p[5].int_slot, 9);
	/* arm64 has 16: the fifth string fits. */
	memset(p, 0, sizeof(p));
	assign(p,
	       (enum go_type[]){GO_TYPE_STRING, GO_TYPE_STRING, GO_TYPE_STRING, GO_TYPE_STRING,
				GO_TYPE_STRING, GO_TYPE_INT},
	       6, 16, 16);
	assert_int_equal(p[4].int_slot, 9);
	assert_int_equal(p[5].int_slot, 11);
	/* Slices take three, interfaces two, complex two floats; arrays of 2+ never registers. */
	memset(p, 0, sizeof(p));
	assign(p,
	       (enum go_type[]){GO_TYPE_SLICE, GO_TYPE_IFACE, GO_TYPE_COMPLEX, GO_TYPE_STACK,
				GO_TYPE_FLOAT, GO_TYPE_POINTER},
	       6, 9, 15);
	assert_int_equal(p[1].int_slot, 4);
	assert_int_equal(p[2].float_slot, 1);
	assert_true(p[3].stack);
	assert_int_equal(p[4].float_slot, 3);
	assert_int_equal(p[5].int_slot, 6);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_abi__register_assignment),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
