// SPDX-License-Identifier: MIT
/*
 * Tests for trusted_file.c: a file gospan may read is read whole; each kind of file it must not
 * read (writable by others, another user's, not a regular file, too large, reached through a
 * link to any of those) is refused with the errno and the reason a user sees. Files are made in
 * a scratch directory with explicit modes, so the umask of whoever runs the tests does not matter.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "helpers.h"
#include "core/trusted_file.h"

#define MAX_SIZE (1 << 20)
#define NOBODY 65534

static char dir[64];

static int group_setup(void **state)
{
	(void)state;
	snprintf(dir, sizeof(dir), "/tmp/gospan-trusted-XXXXXX");
	if (!mkdtemp(dir))
		return -1;
	/* Searchable by all, so a child that gave up root can still reach the files. */
	return chmod(dir, 0755);
}

static int group_teardown(void **state)
{
	(void)state;
	return test_sh("rm -rf '%s'", dir) ? -1 : 0;
}

/* DIR/NAME, in a static buffer (one of four, so a few can be live at once). */
static const char *at(const char *name)
{
	static char bufs[4][128];
	static int i;
	char *p = bufs[i++ % 4];

	snprintf(p, sizeof(bufs[0]), "%s/%s", dir, name);
	return p;
}

/* Creates DIR/NAME with TEXT and exactly MODE; returns its path. */
static const char *make_file(const char *name, const char *text, mode_t mode)
{
	const char *path = at(name);
	int fd;

	unlink(path);
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	/* fchmod, not the mode of open(): that one goes through the umask. */
	assert_int_equal(fchmod(fd, mode), 0);
	assert_int_equal(close(fd), 0);
	return path;
}

static const char *make_link(const char *name, const char *target)
{
	const char *path = at(name);

	unlink(path);
	assert_int_equal(symlink(target, path), 0);
	return path;
}

/* trusted_file__open(PATH) must fail with ERR and a reason that contains WANT. */
static void expect_refused(const char *path, int err, const char *want)
{
	char why[TRUSTED_FILE_WHY_MAX];
	int fd;

	why[0] = '\0';
	fd = trusted_file__open(path, MAX_SIZE, why, sizeof(why));
	if (fd >= 0)
		close(fd);
	if (fd != -err || !strstr(why, want))
		fail_msg("'%s': want %d and a reason with \"%s\"; got %d and \"%s\"", path, -err,
			 want, fd, why);
}

/* trusted_file__read(PATH) must give back exactly TEXT. */
static void expect_read(const char *path, const char *text)
{
	char why[TRUSTED_FILE_WHY_MAX] = "", *buf;
	size_t len = 0;

	buf = trusted_file__read(path, MAX_SIZE, &len, why, sizeof(why));
	if (!buf)
		fail_msg("'%s': want it read; refused: %s", path, why);
	assert_int_equal(len, strlen(text));
	assert_string_equal(buf, text);
	free(buf);
}

static void test_trusted_file__reads_a_good_file(void **state)
{
	char why[TRUSTED_FILE_WHY_MAX];
	const char *path;
	int fd, flags;

	(void)state;
	expect_read(make_file("good.json", "{\"functions\": []}\n", 0644), "{\"functions\": []}\n");
	expect_read(make_file("private.pem", "key\n", 0600), "key\n");
	expect_read(make_file("readonly.pem", "ca\n", 0444), "ca\n");
	expect_read(make_file("empty.json", "", 0644), "");

	/* The descriptor reads the file, and is not inherited by what gospan might run. */
	path = make_file("fd.json", "x", 0640);
	fd = trusted_file__open(path, MAX_SIZE, why, sizeof(why));
	assert_true(fd >= 0);
	flags = fcntl(fd, F_GETFD);
	assert_true(flags >= 0 && (flags & FD_CLOEXEC));
	assert_int_equal(read(fd, why, sizeof(why)), 1);
	assert_int_equal(why[0], 'x');
	close(fd);
}

static void test_trusted_file__refuses_writable_by_others(void **state)
{
	char why[TRUSTED_FILE_WHY_MAX];
	size_t len;

	(void)state;
	expect_refused(make_file("g.json", "{}", 0664), EPERM,
		       "writable by its group (mode 0664, owner uid");
	expect_refused(make_file("o.json", "{}", 0646), EPERM, "writable by any user (mode 0646");
	expect_refused(make_file("go.json", "{}", 0666), EPERM,
		       "writable by its group and any user (mode 0666");
	/* Set-id and sticky bits are shown, since the mode is the whole of it. */
	expect_refused(make_file("sticky.json", "{}", 01666), EPERM, "(mode 1666");

	/* Nothing is read from a refused file. */
	errno = 0;
	assert_null(trusted_file__read(at("go.json"), MAX_SIZE, &len, why, sizeof(why)));
	assert_int_equal(errno, EPERM);
	assert_non_null(strstr(why, "writable by its group and any user"));
}

static void test_trusted_file__refuses_another_users_file(void **state)
{
	char want[128];
	const char *path;
	pid_t pid;
	int status;

	(void)state;
	if (geteuid() != 0)
		TEST_SKIP("giving a file to another user needs root");
	unsetenv("SUDO_UID");
	path = make_file("nobody.json", "{}", 0644);
	assert_int_equal(chown(path, NOBODY, NOBODY), 0);
	expect_refused(path, EPERM,
		       "owned by uid 65534 (mode 0644), not by root: another user could change it");

	/* Run through sudo, the files of the user who ran it are theirs to give. */
	setenv("SUDO_UID", "65534", 1);
	expect_read(path, "{}");
	expect_read(make_file("root.json", "{}", 0644), "{}");
	setenv("SUDO_UID", "65534x", 1);
	expect_refused(path, EPERM, "not by root:");
	setenv("SUDO_UID", "1000", 1);
	expect_refused(path, EPERM, "not by root or uid 1000 (SUDO_UID)");
	unsetenv("SUDO_UID");

	/*
	 * Run as an ordinary user, gospan trusts root's files and its own, no one else's. In a
	 * child, since giving up root (even the effective uid only) is for one process.
	 */
	path = make_file("alice.json", "{}", 0644);
	assert_int_equal(chown(path, 1234, 1234), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		char why[TRUSTED_FILE_WHY_MAX];
		int ok = 1, fd;

		if (setegid(NOBODY) || seteuid(NOBODY))
			_exit(2);
		fd = trusted_file__open(at("nobody.json"), MAX_SIZE, why, sizeof(why));
		ok &= fd >= 0;
		fd = trusted_file__open(at("root.json"), MAX_SIZE, why, sizeof(why));
		ok &= fd >= 0;
		fd = trusted_file__open(at("alice.json"), MAX_SIZE, why, sizeof(why));
		ok &= fd == -EPERM &&
		      strstr(why, "owned by uid 1234 (mode 0644), not by root or uid 65534 "
				  "(gospan's user)") != NULL;
		_exit(ok ? 0 : 1);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	snprintf(want, sizeof(want), "child as uid %d: exit status %d", NOBODY,
		 WIFEXITED(status) ? WEXITSTATUS(status) : -1);
	if (!WIFEXITED(status) || WEXITSTATUS(status))
		fail_msg("%s (1: a check went wrong, 2: cannot give up root)", want);
}

/* The FIFO test hangs: say so and fail (async-signal-safe calls only). */
static void on_alarm(int sig)
{
	static const char msg[] = "test_trusted_file: opening a FIFO blocked\n";

	(void)sig;
	if (write(2, msg, sizeof(msg) - 1) < 0)
		_exit(3);
	_exit(3);
}

static void test_trusted_file__refuses_what_is_not_a_file(void **state)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	const char *path;
	int s;

	(void)state;
	/* A FIFO nobody writes to would block a plain open() for ever: make that a failure. */
	path = at("fifo");
	unlink(path);
	assert_int_equal(mkfifo(path, 0600), 0);
	signal(SIGALRM, on_alarm);
	alarm(10);
	expect_refused(path, EINVAL, "not a regular file but a FIFO");
	alarm(0);
	signal(SIGALRM, SIG_DFL);

	expect_refused(dir, EISDIR, "not a regular file but a directory");
	expect_refused("/dev/zero", EINVAL, "not a regular file but a character device");
	expect_refused("/dev/null", EINVAL, "not a regular file but a character device");

	path = at("sock");
	unlink(path);
	s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	assert_true(s >= 0);
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	assert_int_equal(bind(s, (struct sockaddr *)&sa, sizeof(sa)), 0);
	expect_refused(path, EINVAL, "not a regular file but a socket");
	close(s);

	expect_refused(at("missing.json"), ENOENT, "No such file or directory");
}

static void test_trusted_file__refuses_too_large(void **state)
{
	char why[TRUSTED_FILE_WHY_MAX], *buf;
	const char *path;
	size_t len = 0;
	int fd;

	(void)state;
	/* Sparse: a size without the disk space. */
	path = make_file("big.json", "", 0644);
	fd = open(path, O_WRONLY | O_CLOEXEC);
	assert_true(fd >= 0);
	assert_int_equal(ftruncate(fd, MAX_SIZE + 1), 0);
	expect_refused(path, EFBIG, "larger than 1 MiB (1048577 bytes)");
	assert_int_equal(ftruncate(fd, (off_t)1 << 40), 0);
	expect_refused(path, EFBIG, "larger than 1 MiB (1099511627776 bytes)");

	/* The bound itself is allowed, and all of it is read. */
	assert_int_equal(ftruncate(fd, MAX_SIZE), 0);
	close(fd);
	buf = trusted_file__read(path, MAX_SIZE, &len, why, sizeof(why));
	if (!buf)
		fail_msg("a file of exactly the bound refused: %s", why);
	assert_int_equal(len, MAX_SIZE);
	assert_int_equal(buf[0], 0);
	assert_int_equal(buf[MAX_SIZE - 1], 0);
	free(buf);

	/* A bound that is not whole MiB is said in bytes. */
	fd = trusted_file__open(make_file("small.json", "12345", 0644), 4, why, sizeof(why));
	assert_int_equal(fd, -EFBIG);
	assert_non_null(strstr(why, "larger than 4 bytes (5 bytes)"));
}

static void test_trusted_file__follows_links_to_good_files(void **state)
{
	(void)state;
	make_file("real.json", "{\"ok\": 1}", 0644);
	expect_read(make_link("link.json", at("real.json")), "{\"ok\": 1}");
	/* A Kubernetes ConfigMap volume: f.json -> ..data/f.json, ..data -> ..2024_.../ */
	assert_int_equal(mkdir(at("..2024_06_01_12_00_00.1"), 0755), 0);
	make_file("..2024_06_01_12_00_00.1/f.json", "{\"cm\": 1}", 0644);
	make_link("..data", "..2024_06_01_12_00_00.1");
	expect_read(make_link("f.json", "..data/f.json"), "{\"cm\": 1}");
}

static void test_trusted_file__refuses_links_to_bad_files(void **state)
{
	char want[256];

	(void)state;
	make_file("bad.json", "{}", 0666);
	snprintf(want, sizeof(want),
		 "a link to '%s', which is writable by its group and any user (mode 0666",
		 at("bad.json"));
	expect_refused(make_link("to-bad.json", at("bad.json")), EPERM, want);
	/* Relative, through a second link: the reason names the file at the end. */
	make_link("to-bad-2.json", "to-bad.json");
	expect_refused(at("to-bad-2.json"), EPERM, want);

	snprintf(want, sizeof(want), "a link to '%s', which is not a regular file but a FIFO",
		 at("fifo2"));
	unlink(at("fifo2"));
	assert_int_equal(mkfifo(at("fifo2"), 0600), 0);
	expect_refused(make_link("to-fifo", at("fifo2")), EINVAL, want);
	expect_refused(make_link("to-zero", "/dev/zero"), EINVAL,
		       "a link to '/dev/zero', which is not a regular file but a character device");
	expect_refused(make_link("dangling", at("nothing-here")), ENOENT,
		       "No such file or directory");

	if (geteuid() == 0) {
		unsetenv("SUDO_UID");
		make_file("theirs.json", "{}", 0644);
		assert_int_equal(chown(at("theirs.json"), NOBODY, NOBODY), 0);
		snprintf(want, sizeof(want), "a link to '%s', which is owned by uid 65534",
			 at("theirs.json"));
		expect_refused(make_link("to-theirs", at("theirs.json")), EPERM, want);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_trusted_file__reads_a_good_file),
	    cmocka_unit_test(test_trusted_file__refuses_writable_by_others),
	    cmocka_unit_test(test_trusted_file__refuses_another_users_file),
	    cmocka_unit_test(test_trusted_file__refuses_what_is_not_a_file),
	    cmocka_unit_test(test_trusted_file__refuses_too_large),
	    cmocka_unit_test(test_trusted_file__follows_links_to_good_files),
	    cmocka_unit_test(test_trusted_file__refuses_links_to_bad_files),
	};

	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
