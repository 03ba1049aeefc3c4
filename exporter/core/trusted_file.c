// SPDX-License-Identifier: MIT
/*
 * Opens the files gospan takes its own configuration from the way sshd (StrictModes) and sudo
 * treat theirs. gospan runs as root beside production services, and what such a file says
 * decides which functions it probes, which arguments it copies out of a service and which
 * collector it trusts: so a file that another user could have written is refused, with the
 * owner and mode in the message, before a byte of it is used.
 *
 * Every check is made with fstat() on what was opened, never on the path, so nothing can be
 * swapped in between the check and the read. The file is first opened with O_PATH, which opens
 * nothing for I/O: a FIFO cannot block gospan and a device (a watchdog, a tape) never sees an
 * open(). Only a file that passed is opened for reading, through /proc/self/fd, which reaches
 * the very inode that was checked.
 *
 * Symbolic links are followed, deliberately. Kubernetes mounts a ConfigMap or a Secret as links
 * (f.json -> ..data/f.json, ..data -> ..2024_06_01_12_00_00.1234), so O_NOFOLLOW would refuse
 * the usual deployment. A link planted by another user gains nothing: what is checked is the
 * file the link leads to, and a file of theirs is refused. The directories on the way are not
 * checked: a file is read once through the descriptor that was checked, so what was read cannot
 * be changed afterwards (libcurl reopening the TLS files by path is the exception, config.c),
 * and a walk like StrictModes' would refuse every ConfigMap, whose volume root is mode 0777.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/trusted_file.h"

/*
 * Under sudo, the user who ran it. That user already chose every setting on the command line,
 * so trusting their own file gives them nothing more, and the documented
 * `sudo gospan --functions functions.json` works on a file in their checkout. Only when the
 * real uid is root, as sudo leaves it: otherwise the variable is left over from elsewhere.
 */
static bool sudo_uid(uid_t *uid)
{
	const char *s = getenv("SUDO_UID");
	unsigned long v;
	char *end;

	if (!s || *s < '0' || *s > '9' || getuid() != 0)
		return false;
	errno = 0;
	v = strtoul(s, &end, 10);
	if (errno || *end || v >= (unsigned long)(uid_t)-1)
		return false;
	*uid = (uid_t)v;
	return true;
}

static const char *kind_of(mode_t mode)
{
	switch (mode & S_IFMT) {
	case S_IFDIR:
		return "a directory";
	case S_IFIFO:
		return "a FIFO";
	case S_IFCHR:
		return "a character device";
	case S_IFBLK:
		return "a block device";
	case S_IFSOCK:
		return "a socket";
	default:
		return "of an unknown type";
	}
}

/* "1 MiB" for a whole number of MiB, else bytes. */
static void format_size(char *buf, size_t size, size_t n)
{
	if (n && !(n % (1 << 20)))
		snprintf(buf, size, "%zu MiB", n >> 20);
	else
		snprintf(buf, size, "%zu bytes", n);
}

/*
 * "a link to 'REAL', which is " when PATH itself is a link, so that a refusal names the file it
 * is about; "" otherwise. Only for the message: a race here changes the wording, not the checks.
 */
static void link_prefix(const char *path, int pfd, char *buf, size_t size)
{
	char self[64], real[PATH_MAX];
	struct stat lst;
	ssize_t n;

	buf[0] = '\0';
	if (lstat(path, &lst) || !S_ISLNK(lst.st_mode))
		return;
	snprintf(self, sizeof(self), "/proc/self/fd/%d", pfd);
	n = readlink(self, real, sizeof(real) - 1);
	if (n <= 0)
		return;
	real[n] = '\0';
	snprintf(buf, size, "a link to '%s', which is ", real);
}

/* The checks on the file PFD (opened with O_PATH from PATH) as ST describes it. */
static int check(const char *path, int pfd, const struct stat *st, size_t max_size, char *why,
		 size_t why_size)
{
	char pre[PATH_MAX + 64], trusted[96] = "", lim[32];
	mode_t mode = st->st_mode & 07777;
	uid_t euid = geteuid(), su;

	if (!S_ISREG(st->st_mode)) {
		link_prefix(path, pfd, pre, sizeof(pre));
		snprintf(why, why_size, "%snot a regular file but %s", pre, kind_of(st->st_mode));
		return S_ISDIR(st->st_mode) ? -EISDIR : -EINVAL;
	}
	if (euid != 0)
		snprintf(trusted, sizeof(trusted), " or uid %u (gospan's user)", (unsigned)euid);
	if (sudo_uid(&su) && su != 0 && su != euid)
		snprintf(trusted + strlen(trusted), sizeof(trusted) - strlen(trusted),
			 " or uid %u (SUDO_UID)", (unsigned)su);
	else
		su = 0;
	if (st->st_uid != 0 && st->st_uid != euid && st->st_uid != su) {
		link_prefix(path, pfd, pre, sizeof(pre));
		snprintf(why, why_size,
			 "%sowned by uid %u (mode %04o), not by root%s: another user could change it",
			 pre, (unsigned)st->st_uid, (unsigned)mode, trusted);
		return -EPERM;
	}
	/*
	 * With a POSIX ACL the group bits are the ACL's mask, the most any named user or group
	 * may do: a write granted to anyone by ACL shows here too.
	 */
	if (mode & (S_IWGRP | S_IWOTH)) {
		link_prefix(path, pfd, pre, sizeof(pre));
		snprintf(why, why_size, "%swritable by %s (mode %04o, owner uid %u, group gid %u)",
			 pre,
			 (mode & S_IWGRP) && (mode & S_IWOTH) ? "its group and any user" :
			 mode & S_IWGRP			      ? "its group" :
								"any user",
			 (unsigned)mode, (unsigned)st->st_uid, (unsigned)st->st_gid);
		return -EPERM;
	}
	if (st->st_size < 0 || (unsigned long long)st->st_size > max_size) {
		link_prefix(path, pfd, pre, sizeof(pre));
		format_size(lim, sizeof(lim), max_size);
		snprintf(why, why_size, "%slarger than %s (%lld bytes)", pre, lim,
			 (long long)st->st_size);
		return -EFBIG;
	}
	return 0;
}

int trusted_file__open(const char *path, size_t max_size, char *why, size_t why_size)
{
	struct stat st, rst;
	char self[64];
	int pfd, fd = -1, err;

	pfd = open(path, O_PATH | O_CLOEXEC);
	if (pfd < 0) {
		err = -errno;
		snprintf(why, why_size, "%s", strerror(-err));
		return err;
	}
	if (fstat(pfd, &st)) {
		err = -errno;
		snprintf(why, why_size, "cannot stat what was opened: %s", strerror(-err));
		goto cleanup;
	}
	err = check(path, pfd, &st, max_size, why, why_size);
	if (err)
		goto cleanup;
	snprintf(self, sizeof(self), "/proc/self/fd/%d", pfd);
	fd = open(self, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	if (fd < 0) {
		err = -errno;
		snprintf(why, why_size, "cannot open it for reading through %s: %s%s", self,
			 strerror(-err), err == -ENOENT ? " (is /proc mounted?)" : "");
		goto cleanup;
	}
	/* The magic link leads to the same inode; a /proc that did otherwise is not trusted. */
	if (fstat(fd, &rst) || rst.st_dev != st.st_dev || rst.st_ino != st.st_ino) {
		err = -EIO;
		snprintf(why, why_size, "reopened through %s, it was another file", self);
		goto cleanup;
	}
cleanup:
	close(pfd);
	if (err) {
		if (fd >= 0)
			close(fd);
		return err;
	}
	return fd;
}

char *trusted_file__read(const char *path, size_t max_size, size_t *len, char *why,
			 size_t why_size)
{
	char *buf = NULL, lim[32];
	size_t n = 0;
	ssize_t r;
	int fd, err = 0;

	fd = trusted_file__open(path, max_size, why, why_size);
	if (fd < 0) {
		errno = -fd;
		return NULL;
	}
	/* One byte more than allowed, so a file that grew after fstat() is caught as well. */
	buf = malloc(max_size + 2);
	if (!buf) {
		err = -ENOMEM;
		snprintf(why, why_size, "%s", strerror(ENOMEM));
		goto cleanup;
	}
	while (n <= max_size) {
		r = read(fd, buf + n, max_size + 1 - n);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			err = -errno;
			snprintf(why, why_size, "%s", strerror(-err));
			goto cleanup;
		}
		if (!r)
			break;
		n += (size_t)r;
	}
	if (n > max_size) {
		err = -EFBIG;
		format_size(lim, sizeof(lim), max_size);
		snprintf(why, why_size, "grew larger than %s while it was read", lim);
		goto cleanup;
	}
	buf[n] = '\0';
	*len = n;
cleanup:
	close(fd);
	if (err) {
		free(buf);
		errno = -err;
		return NULL;
	}
	return buf;
}
