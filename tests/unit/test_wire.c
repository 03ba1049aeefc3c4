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

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

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
	/* Outside gospan's cgroup namespace: no mount of it shows that. */
	check("/../../kubepods/pod1/c2", "/", NULL);
	check("/..", "/", NULL);
	check("/..x/c", "/", "..x/c");
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

/* Writes TEXT to a temporary file and reads it as a mountinfo file. */
static int find_in(const char *text, struct cgroup2_mount *out)
{
	char path[] = "/tmp/gospan-test-mountinfo-XXXXXX";
	int fd, err;

	fd = mkstemp(path);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	close(fd);
	err = wire__find_cgroup2(path, out);
	unlink(path);
	return err;
}

static void test_wire__find_cgroup2(void **state)
{
	struct cgroup2_mount m;

	(void)state;
	/* A hybrid host (systemd): v1 hierarchies, cgroup2 beside them with its flags. */
	assert_int_equal(find_in("31 23 0:28 / /sys/fs/cgroup ro,nosuid,nodev,noexec shared:9 - "
				 "tmpfs tmpfs ro,mode=755\n"
				 "32 31 0:29 / /sys/fs/cgroup/unified rw,nosuid,nodev,noexec,relatime "
				 "shared:10 - cgroup2 cgroup2 rw,nsdelegate\n"
				 "33 31 0:30 / /sys/fs/cgroup/systemd rw,nosuid,nodev,noexec,relatime "
				 "shared:11 - cgroup cgroup rw,xattr,name=systemd\n",
				 &m),
			 0);
	assert_string_equal(m.mnt, "/sys/fs/cgroup/unified");
	assert_string_equal(m.root, "/");
	assert_string_equal(m.super_opts, "rw,nsdelegate");
	/* A pod with the host's hierarchy, seen from its own cgroup namespace. */
	assert_int_equal(find_in("1268 1259 0:26 /../.. /sys/fs/cgroup rw,nosuid,nodev,noexec,"
				 "relatime - cgroup2 cgroup2 rw,nsdelegate,memory_recursiveprot\n",
				 &m),
			 0);
	assert_string_equal(m.root, "/../..");
	assert_string_equal(m.super_opts, "rw,nsdelegate,memory_recursiveprot");
	/* A Docker container on a cgroup v1 host: v1 hierarchies only. */
	assert_int_equal(find_in("78 77 0:29 /docker/7f0d /sys/fs/cgroup/cpu ro,nosuid - cgroup "
				 "cgroup rw,cpu\n",
				 &m),
			 -ENOENT);
	/* A cgroup mount whose source is named cgroup2 is still v1. */
	assert_int_equal(find_in("78 77 0:29 / /mnt ro - cgroup cgroup2 rw,cpu\n", &m), -ENOENT);
	assert_int_equal(find_in("", &m), -ENOENT);
	assert_int_equal(wire__find_cgroup2("/nonexistent/mountinfo", &m), -ENOENT);
	/* This process's own, the file gospan reads: a mount found has an absolute mount point. */
	if (!wire__find_cgroup2("/proc/self/mountinfo", &m))
		assert_true(m.mnt[0] == '/');
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_wire__cgroup_on_a_host),
		cmocka_unit_test(test_wire__cgroup_in_a_namespace),
		cmocka_unit_test(test_wire__find_cgroup2),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
