// SPDX-License-Identifier: MIT
/*
 * Tests for wire.c's cgroup path arithmetic: where the cgroup of a traced process is under the
 * cgroup v2 mount gospan sees, on a host and inside a cgroup namespace (a Kubernetes pod with
 * the host's hierarchy mounted), where both paths are given against the namespace's root.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <string.h>

#include "capture/wire.h"

static void check(const char *path, const char *root, const char *want)
{
	const char *got = wire__cgroup_below(path, root);

	if (!want) {
		if (got)
			fail_msg("'%s' under '%s': got '%s', expected none", path, root, got);
		return;
	}
	if (!got || strcmp(got, want))
		fail_msg("'%s' under '%s': got '%s', expected '%s'", path, root, got ? got : "(none)",
			 want);
}

static void test_wire__cgroup_on_a_host(void **state)
{
	(void)state;
	check("/", "/", "");
	check("/system.slice/app.service", "/", "system.slice/app.service");
}

static void test_wire__cgroup_in_a_namespace(void **state)
{
	(void)state;
	/* gospan's namespace root is two levels below the host's; the mount shows the host's. */
	check("/../../kubepods/pod1/c2", "/../..", "kubepods/pod1/c2");
	check("/../..", "/../..", "");
	/* gospan's own namespace root: where it lies below the host's the strings cannot say. */
	check("/", "/../..", NULL);
	/* A mount of a subtree only shows what is below it. */
	check("/a/b/c", "/a/b", "c");
	check("/a/bc", "/a/b", NULL);
	check("/x", "/a/b", NULL);
	check("/a/b/", "/a/b/", "");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_wire__cgroup_on_a_host),
		cmocka_unit_test(test_wire__cgroup_in_a_namespace),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
