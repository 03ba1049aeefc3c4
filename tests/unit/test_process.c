// SPDX-License-Identifier: MIT
/*
 * Tests for process.c: service.name from the target's own OTEL_SERVICE_NAME, read from
 * /proc/PID/environ. That file is the target's memory, so besides the ordinary case (a child
 * exec'd with an environment) there are children that point their environment elsewhere with
 * prctl(PR_SET_MM_MAP), as any process may: entries of megabytes without a NUL, the variable
 * past the scan's bound, a value longer than gospan keeps.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <linux/prctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/config.h"
#include "analysis/gobin.h"
#include "helpers.h"
#include "capture/process.h"
#include "model/semconv.h"
#include "model/span.h"
#include "analysis/target.h"
#include <sys/stat.h>

#define MIB (1 << 20)

/* service.name of process PID as process_table__get() finds it; malloc'ed. */
static char *service_name_of(pid_t pid)
{
	struct gobin gb = { .major = 1, .minor = 22, .patch = 0 };
	struct target t = { .exe_name = "fake-exe", .gobin = &gb };
	const struct attr *a;
	struct process_table *pt;
	struct config cfg = {};
	struct process *p;
	char *name;

	pt = process_table__new(&cfg);
	assert_non_null(pt);
	assert_int_equal(process_table__add_target(pt, 0, &t), 0);
	p = process_table__get(pt, pid, 0);
	assert_non_null(p);
	a = resource__get(p->res, SC_SERVICE_NAME);
	assert_non_null(a);
	name = strdup(a->s);
	assert_non_null(name);
	process_table__free(pt);
	return name;
}

static void reap(pid_t pid)
{
	int status;

	kill(pid, SIGKILL);
	waitpid(pid, &status, 0);
}

/*
 * The pipe closes early in exec, before the kernel has laid out the new stack: until then
 * /proc/PID/environ reads empty. Waits (at most 10 s) until it has something.
 */
static void wait_for_environ(pid_t pid)
{
	char path[64], buf[16];
	ssize_t n = 0;
	int fd, i;

	snprintf(path, sizeof(path), "/proc/%d/environ", (int)pid);
	for (i = 0; i < 10000 && n <= 0; i++) {
		if (i)
			usleep(1000);
		fd = open(path, O_RDONLY | O_CLOEXEC);
		assert_true(fd >= 0);
		n = read(fd, buf, sizeof(buf));
		close(fd);
	}
	assert_true(n > 0);
}

static void test_process__service_name_from_environ(void **state)
{
	char *const argv[] = { "sleep", "30", NULL };
	char *const envp[] = { "A=1", "OTEL_SERVICE_NAMES=not-this", "OTEL_SERVICE_NAME=checkout",
			       "OTEL_SERVICE_NAME=second", NULL };
	char *name;
	pid_t pid;
	int fds[2];
	char c;

	(void)state;
	/* The pipe closes on exec: then the environment is the new one. */
	assert_int_equal(pipe2(fds, O_CLOEXEC), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		close(fds[0]);
		execve("/bin/sleep", argv, envp);
		_exit(127);
	}
	close(fds[1]);
	assert_int_equal(read(fds[0], &c, 1), 0);
	close(fds[0]);
	wait_for_environ(pid);
	name = service_name_of(pid);
	reap(pid);
	/* The first of duplicates, as getenv; a longer name is another variable. */
	assert_string_equal(name, "checkout");
	free(name);
}

/*
 * A child whose /proc/PID/environ is the LEN bytes at ENV (copied before fork). Returns its pid,
 * or 0 when this kernel does not let it (no CONFIG_CHECKPOINT_RESTORE, a seccomp filter).
 */
static pid_t spawn_with_environ(const char *env, size_t len)
{
	int fds[2];
	pid_t pid;
	char ok = 0;

	assert_int_equal(pipe2(fds, O_CLOEXEC), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		unsigned long long v[64] = {};
		char stat[1024], *p, *tok;
		struct prctl_mm_map mm;
		FILE *f;
		int i;

		f = fopen("/proc/self/stat", "re");
		if (!f || !fgets(stat, sizeof(stat), f) || !(p = strrchr(stat, ')')))
			_exit(1);
		/* Fields from 3 on, numbered as in proc(5). */
		for (i = 3, tok = strtok(p + 2, " "); tok && i < 64; tok = strtok(NULL, " "))
			v[i++] = strtoull(tok, NULL, 10);
		mm = (struct prctl_mm_map){
			.start_code = v[26], .end_code = v[27], .start_stack = v[28],
			.start_data = v[45], .end_data = v[46], .start_brk = v[47],
			.brk = (unsigned long)sbrk(0), .arg_start = v[48], .arg_end = v[49],
			.env_start = (unsigned long)env, .env_end = (unsigned long)env + len,
			.exe_fd = (__u32)-1,
		};
		ok = !prctl(PR_SET_MM, PR_SET_MM_MAP, &mm, sizeof(mm), 0);
		if (write(fds[1], &ok, 1) != 1 || !ok)
			_exit(1);
		pause();
		_exit(0);
	}
	close(fds[1]);
	if (read(fds[0], &ok, 1) != 1 || !ok) {
		reap(pid);
		pid = 0;
	}
	close(fds[0]);
	return pid;
}

/* An environment of LEN bytes: FILL, then "\0", then TAIL (with its NUL). */
static char *environ_of(size_t fill, const char *tail, size_t *len)
{
	size_t tlen = strlen(tail) + 1;
	char *env = malloc(fill + 1 + tlen);

	assert_non_null(env);
	memset(env, 'x', fill);
	env[fill] = '\0';
	memcpy(env + fill + 1, tail, tlen);
	*len = fill + 1 + tlen;
	return env;
}

static char *name_with_environ(const char *env, size_t len)
{
	char *name;
	pid_t pid = spawn_with_environ(env, len);

	if (!pid)
		return NULL;
	name = service_name_of(pid);
	reap(pid);
	return name;
}

static void test_process__environ_is_read_within_bounds(void **state)
{
	char long_value[2100] = "OTEL_SERVICE_NAME=";
	size_t len;
	char *env, *name;

	(void)state;
	/* One entry of 5 MiB with no NUL: skipped without being held, the next one found. */
	env = environ_of(5 * MIB, "OTEL_SERVICE_NAME=within", &len);
	name = name_with_environ(env, len);
	free(env);
	if (!name)
		TEST_SKIP("prctl(PR_SET_MM_MAP) is not allowed here");
	assert_string_equal(name, "within");
	free(name);

	/* Past 6 MiB, the most exec() gives argv and environment: not looked at. */
	env = environ_of(7 * MIB, "OTEL_SERVICE_NAME=beyond", &len);
	name = name_with_environ(env, len);
	free(env);
	assert_non_null(name);
	assert_string_equal(name, "fake-exe");
	free(name);

	/* A value longer than gospan keeps is cut, not overflowed. */
	memset(long_value + 18, 'v', sizeof(long_value) - 19);
	long_value[sizeof(long_value) - 1] = '\0';
	env = environ_of(0, long_value, &len);
	name = name_with_environ(env, len);
	free(env);
	assert_non_null(name);
	assert_int_equal(strlen(name), 511);
	assert_int_equal(strspn(name, "v"), 511);
	free(name);
}

/*
 * A child moved into a cgroup named as Docker's systemd driver names a container's, in the
 * first writable cgroup hierarchy (v2, else v1's pids): the kernel then writes that path into
 * its /proc/PID/cgroup, and its resource carries container.id and container.runtime.name;
 * OTEL_RESOURCE_ATTRIBUTES given to gospan still overrides a detected value.
 */
#define FAKE_ID "0b5c5e3f3f6f2c1a9d8e7f6a5b4c3d2e1f0a9b8c7d6e5f4a3b2c1d0e9f8a7b6c"

static bool cgroup_root_for_test(char *out, size_t size)
{
	static const char *const roots[] = { "/sys/fs/cgroup/unified", "/sys/fs/cgroup",
					     "/sys/fs/cgroup/pids" };
	char probe[96];
	size_t i;

	for (i = 0; i < sizeof(roots) / sizeof(roots[0]); i++) {
		snprintf(probe, sizeof(probe), "%s/cgroup.procs", roots[i]);
		if (access(probe, W_OK))
			continue;
		snprintf(out, size, "%s", roots[i]);
		return true;
	}
	return false;
}

static void test_process__container_on_the_resource(void **state)
{
	char root[64], dir[128], scope[256], procs[320];
	struct gobin gb = { .major = 1, .minor = 22, .patch = 0 };
	struct target t = { .exe_name = "fake-exe", .gobin = &gb };
	struct header_kv over = { .key = "container.runtime.name", .value = "mine" };
	struct config cfg = { .resource_attrs = &over, .nresource_attrs = 1 };
	struct process_table *pt;
	const struct attr *a;
	struct process *p;
	pid_t pid;
	FILE *f;

	(void)state;
	if (geteuid() || !cgroup_root_for_test(root, sizeof(root)))
		TEST_SKIP("no cgroup hierarchy this test may create a cgroup in (run as root)");
	snprintf(dir, sizeof(dir), "%s/gospan-test-%d", root, (int)getpid());
	snprintf(scope, sizeof(scope), "%s/docker-" FAKE_ID ".scope", dir);
	assert_int_equal(mkdir(dir, 0755), 0);
	assert_int_equal(mkdir(scope, 0755), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		pause();
		_exit(0);
	}
	snprintf(procs, sizeof(procs), "%s/cgroup.procs", scope);
	f = fopen(procs, "we");
	assert_non_null(f);
	fprintf(f, "%d\n", (int)pid);
	assert_int_equal(fclose(f), 0);

	pt = process_table__new(&cfg);
	assert_non_null(pt);
	assert_int_equal(process_table__add_target(pt, 0, &t), 0);
	p = process_table__get(pt, pid, 0);
	reap(pid);
	rmdir(scope);
	rmdir(dir);
	assert_non_null(p);
	a = resource__get(p->res, SC_CONTAINER_ID);
	assert_non_null(a);
	assert_string_equal(a->s, FAKE_ID);
	a = resource__get(p->res, SC_CONTAINER_RUNTIME_NAME);
	assert_non_null(a);
	assert_string_equal(a->s, "mine");
	assert_null(resource__get(p->res, SC_K8S_POD_UID));
	process_table__free(pt);

	/* This test process is in no container here: no attribute at all. */
	cfg.nresource_attrs = 0;
	pt = process_table__new(&cfg);
	assert_non_null(pt);
	assert_int_equal(process_table__add_target(pt, 0, &t), 0);
	p = process_table__get(pt, getpid(), 0);
	assert_non_null(p);
	assert_null(resource__get(p->res, SC_CONTAINER_ID));
	assert_null(resource__get(p->res, SC_CONTAINER_RUNTIME_NAME));
	process_table__free(pt);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_process__service_name_from_environ),
	    cmocka_unit_test(test_process__environ_is_read_within_bounds),
	    cmocka_unit_test(test_process__container_on_the_resource),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
