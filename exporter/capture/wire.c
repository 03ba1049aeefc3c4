// SPDX-License-Identifier: MIT
/*
 * The socket-layer writer of outgoing trace context: see wire.h, and bpf/wire.bpf.c for what
 * its programs do. The sockops program goes on each traced process's own cgroup (cgroup v2),
 * so it runs only where traced processes are; it still adds only their sockets, picked by
 * process in BPF. Its links and the sockhash live only as long as gospan's descriptors: when
 * gospan exits, however it exits, the kernel detaches the programs and takes every socket out
 * of the sockhash, and the traced service's connections carry on as plain TCP.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <limits.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <linux/mount.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "events.h"
#include "core/log.h"
#include "capture/wire.h"
#include "kafka_wire.skel.h"
#include "wire.skel.h"

#ifndef SO_COOKIE
#define SO_COOKIE 57
#endif
#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434
#endif
#ifndef SYS_pidfd_getfd
#define SYS_pidfd_getfd 438
#endif
/* The new mount API (Linux 5.2): the same numbers on every architecture gospan builds for. */
#ifndef SYS_fsopen
#define SYS_fsopen 430
#endif
#ifndef SYS_fsconfig
#define SYS_fsconfig 431
#endif
#ifndef SYS_fsmount
#define SYS_fsmount 432
#endif

/* The sockets of one process looked at when it is added: listeners tell client sockets apart. */
#define MAX_SOCKETS 4096

struct cgroup_link {
	char *path;
	ino_t ino; /* the cgroup's inode: a cgroup made anew at the same path has another */
	struct bpf_link *link;
};

struct wire {
	struct wire_bpf *skel;
	struct bpf_object *http_obj; /* the uprobes' object, whose maps the writer's share */
	struct kafka_wire_bpf *kafka; /* its Kafka part, once loaded (wire__enable_kafka) */
	bool kafka_failed;	     /* ... or why not, said once */
	char cgroup_mnt[PATH_MAX];  /* where the cgroup v2 hierarchy is mounted */
	char cgroup_root[PATH_MAX]; /* the cgroup at the mount's top: see wire__find_cgroup2() */
	int cgroup_fd;		    /* a detached mount of it (mount_cgroup2()), or -1 */
	struct cgroup_link *cgroups;
	size_t ncgroups;
	pid_t *pids; /* processes added */
	size_t npids, cap_pids;
};

/* The maps the two objects share (bpf/include/wire_maps.bpf.h), by name. */
static const char *const shared_maps[] = { "traced",	   "pending",  "tracestates", "propagation",
					   "h2_marks", "h2_writers", "kafka_marks" };

int wire__find_cgroup2(const char *mountinfo, struct cgroup2_mount *out)
{
	char line[4096], m[PATH_MAX], r[PATH_MAX], o[256], *sep;
	int err = -ENOENT;
	FILE *f;

	f = fopen(mountinfo, "re");
	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		/* "ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTIONS [OPTIONAL...] - TYPE SOURCE SUPER" */
		sep = strstr(line, " - ");
		if (!sep || strncmp(sep + 3, "cgroup2 ", 8))
			continue;
		if (sscanf(line, "%*s %*s %*s %4095s %4095s", r, m) != 2)
			continue;
		if (sscanf(sep + 11, "%*s %255s", o) != 1)
			o[0] = '\0';
		if (strlen(m) >= sizeof(out->mnt) || strlen(r) >= sizeof(out->root)) {
			err = -ENAMETOOLONG;
			break;
		}
		memcpy(out->mnt, m, strlen(m) + 1);
		memcpy(out->root, r, strlen(r) + 1);
		memcpy(out->super_opts, o, strlen(o) + 1);
		err = 0;
		break;
	}
	fclose(f);
	return err;
}

/*
 * The hierarchy-wide flags a cgroup2 mount sets. Every cgroup2 mount made in the initial cgroup
 * namespace (mount(2), or fsconfig's FSCONFIG_CMD_CREATE) sets them on the one hierarchy to
 * exactly what it asks for (apply_cgroup_root_flags() in the kernel): one made without them
 * would turn nsdelegate or memory_recursiveprot off for the whole host. So they are asked for
 * as the host has them.
 */
static const char *const cgroup2_flags[] = {
	"nsdelegate", "favordynmods", "memory_localevents", "memory_recursiveprot",
	"memory_hugetlb_accounting", "pids_localevents",
};

static bool same_mount_ns(pid_t a, pid_t b)
{
	struct stat sa, sb;
	char path[64];

	snprintf(path, sizeof(path), "/proc/%d/ns/mnt", (int)a);
	if (stat(path, &sa))
		return false;
	snprintf(path, sizeof(path), "/proc/%d/ns/mnt", (int)b);
	if (stat(path, &sb))
		return false;
	return sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

/*
 * The flags of the host's cgroup2 mount, from PID 1's mountinfo (the host's init when gospan
 * shares the host's PID namespace, as it must to trace its processes from a container): into
 * OPTS, "" when PID 1 mounts no cgroup2. -ENOENT when they cannot be known: PID 1 shares
 * gospan's mount namespace, whose lack of a cgroup2 mount is why this is asked.
 */
static int host_cgroup2_flags(char *opts, size_t size)
{
	struct cgroup2_mount host;
	int err;

	if (same_mount_ns(1, getpid()))
		return -ENOENT;
	err = wire__find_cgroup2("/proc/1/mountinfo", &host);
	if (err == -ENOENT) {
		opts[0] = '\0';
		return 0;
	}
	if (err)
		return err;
	snprintf(opts, size, "%s", host.super_opts);
	return 0;
}

/*
 * A cgroup2 mount of gospan's own, attached nowhere (fsopen, fsconfig, fsmount): for a mount
 * namespace without one, as in a container on a cgroup v1 or hybrid host. Its top is the root
 * of gospan's cgroup namespace, which /proc/PID/cgroup paths are given against. Read-only: the
 * cgroups are only opened, to attach to. The mount's descriptor or -errno, *STEP naming the
 * call that failed.
 */
#define MOUNT_ATTRS (MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV | MOUNT_ATTR_NOEXEC)

static int mount_cgroup2(const char *super_opts, const char **step)
{
	char opts[256], *tok, *save = NULL;
	int fs, mnt = -1;
	size_t i;

	*step = "fsopen";
	fs = (int)syscall(SYS_fsopen, "cgroup2", FSOPEN_CLOEXEC);
	if (fs < 0)
		return -errno;
	*step = "fsconfig";
	snprintf(opts, sizeof(opts), "%s", super_opts);
	for (tok = strtok_r(opts, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		for (i = 0; i < sizeof(cgroup2_flags) / sizeof(cgroup2_flags[0]); i++)
			if (!strcmp(tok, cgroup2_flags[i]))
				break;
		if (i < sizeof(cgroup2_flags) / sizeof(cgroup2_flags[0]) &&
		    syscall(SYS_fsconfig, fs, FSCONFIG_SET_FLAG, tok, NULL, 0))
			goto cleanup;
	}
	if (syscall(SYS_fsconfig, fs, FSCONFIG_CMD_CREATE, NULL, NULL, 0))
		goto cleanup;
	*step = "fsmount";
	mnt = (int)syscall(SYS_fsmount, fs, FSMOUNT_CLOEXEC, MOUNT_ATTRS);
cleanup:
	if (mnt < 0)
		mnt = -errno;
	close(fs);
	return mnt;
}

/* Why STEP failed with ERR, in words an operator can act on; "" when there is nothing to add. */
static const char *mount_hint(int err)
{
	switch (err) {
	case -EPERM:
		return " (it needs CAP_SYS_ADMIN, and a container's seccomp profile must allow "
		       "fsopen, fsconfig and fsmount; Docker's default one does with CAP_SYS_ADMIN)";
	case -ENOSYS:
		return " (the kernel is older than 5.2, or a seccomp filter refuses the call)";
	case -ENODEV:
		return " (the kernel has no cgroup v2)";
	default:
		return "";
	}
}

const char *wire__cgroup_below(const char *path, const char *root)
{
	size_t n = strlen(root);

	while (n > 1 && root[n - 1] == '/')
		n--;
	if (n == 1 && root[0] == '/') {
		path += strspn(path, "/");
		/* Above the namespace's root: no ".." leads there from a mount of it. */
		if (!strncmp(path, "..", 2) && (!path[2] || path[2] == '/'))
			return NULL;
		return path;
	}
	if (strncmp(path, root, n) || (path[n] && path[n] != '/'))
		return NULL;
	return path + n + strspn(path + n, "/");
}

/*
 * Where the sockops program attaches: the cgroup v2 mount gospan sees, else a detached mount of
 * its own. The reason is logged when there is neither.
 */
static int attach_point(struct wire *w)
{
	struct cgroup2_mount cg;
	char flags[256];
	const char *step;
	int err, fd;

	err = wire__find_cgroup2("/proc/self/mountinfo", &cg);
	if (!err) {
		memcpy(w->cgroup_mnt, cg.mnt, sizeof(cg.mnt));
		memcpy(w->cgroup_root, cg.root, sizeof(cg.root));
		return 0;
	}
	if (err != -ENOENT) {
		pr_warn("outgoing trace context is off: cannot read /proc/self/mountinfo for the "
			"cgroup v2 mount: %s",
			strerror(-err));
		return err;
	}
	err = host_cgroup2_flags(flags, sizeof(flags));
	if (err) {
		pr_warn("outgoing trace context is off: no cgroup v2 mount here, and none is made: "
			"the host's cgroup2 mount flags are not in /proc/1/mountinfo (%s), and a "
			"mount without them would change them for the whole host; run gospan in the "
			"host's PID namespace (--pid=host), or mount the hierarchy, e.g. 'mount -t "
			"cgroup2 none /sys/fs/cgroup/unified'",
			err == -ENOENT ? "PID 1 shares gospan's mount namespace" : strerror(-err));
		return err;
	}
	fd = mount_cgroup2(flags, &step);
	if (fd < 0) {
		pr_warn("outgoing trace context is off: no cgroup v2 mount in /proc/self/mountinfo, "
			"and a detached one could not be made: %s: %s%s",
			step, strerror(-fd), mount_hint(fd));
		return fd;
	}
	w->cgroup_fd = fd;
	snprintf(w->cgroup_mnt, sizeof(w->cgroup_mnt), "(gospan's detached cgroup2 mount)");
	snprintf(w->cgroup_root, sizeof(w->cgroup_root), "/");
	pr_info("no cgroup v2 mount here: mounted the hierarchy for gospan alone (detached, "
		"read-only%s%s)",
		flags[0] ? ", as the host has it: " : "", flags);
	return 0;
}

/* OBJ's copies of the shared maps replaced by HTTP_OBJ's, before OBJ loads; WHAT says the cost. */
static int share_maps(struct bpf_object *obj, struct bpf_object *http_obj, const char *what)
{
	struct bpf_map *shared;
	size_t i;
	int err, fd;

	for (i = 0; i < sizeof(shared_maps) / sizeof(shared_maps[0]); i++) {
		shared = bpf_object__find_map_by_name(obj, shared_maps[i]);
		fd = bpf_object__find_map_fd_by_name(http_obj, shared_maps[i]);
		err = !shared || fd < 0 ? -ENOENT : bpf_map__reuse_fd(shared, fd);
		if (err) {
			pr_warn("%s: cannot share map '%s': %s", what, shared_maps[i],
				strerror(-err));
			return err;
		}
	}
	return 0;
}

int wire__enable_kafka(struct wire *w)
{
	const char *what = "Kafka messages will carry no trace context";
	int err, fd;

	if (w->kafka || w->kafka_failed)
		return 0;
	w->kafka = kafka_wire_bpf__open();
	if (!w->kafka) {
		err = -errno;
		pr_warn("%s: cannot open its BPF object: %s", what, strerror(-err));
		goto fail;
	}
	err = share_maps(w->kafka->obj, w->http_obj, what);
	if (err)
		goto fail;
	err = kafka_wire_bpf__load(w->kafka);
	if (err) {
		pr_warn("%s: the kernel refused its socket-layer program: %s", what,
			strerror(-err));
		goto fail;
	}
	fd = bpf_program__fd(w->kafka->progs.kafka_produce);
	if (bpf_map_update_elem(bpf_map__fd(w->skel->maps.kafka_tail), &(uint32_t){ 0 }, &fd,
				BPF_ANY)) {
		err = -errno;
		pr_warn("%s: cannot hand the socket-layer writer its Kafka program: %s", what,
			strerror(-err));
		goto fail;
	}
	pr_debug("Kafka produce requests get trace context at the socket layer");
	return 0;
fail:
	kafka_wire_bpf__destroy(w->kafka);
	w->kafka = NULL;
	w->kafka_failed = true;
	return err;
}

struct wire *wire__load(struct bpf_object *http_obj)
{
	struct wire *w;
	int err;
#if defined(__aarch64__)
	long page;
#endif

	w = calloc(1, sizeof(*w));
	if (!w)
		return NULL;
	w->cgroup_fd = -1;
	err = attach_point(w);
	if (err)
		goto cleanup;
	w->skel = wire_bpf__open();
	if (!w->skel) {
		err = -errno;
		pr_warn("outgoing trace context is off: cannot open its BPF object: %s",
			strerror(-err));
		goto cleanup;
	}
	w->http_obj = http_obj;
#if defined(__aarch64__)
	/* arm64's THREAD_SIZE: 16 kB, or the page size where pages are larger (wire.bpf.c). */
	page = sysconf(_SC_PAGESIZE);
	w->skel->rodata->arm64_thread_size = page > 16384 ? (uint64_t)page : 16384;
#endif
	err = share_maps(w->skel->obj, http_obj, "outgoing trace context is off");
	if (err)
		goto cleanup;
	err = wire_bpf__load(w->skel);
	if (err) {
		pr_warn("outgoing trace context is off: the kernel refused the socket-layer "
			"programs (sockops, sk_msg, sockhash): %s%s",
			strerror(-err),
			err == -EPERM ? " (they need CAP_NET_ADMIN, or root)" :
			err == -ESRCH || err == -ENOENT ?
					" (they need the kernel's BTF, /sys/kernel/btf/vmlinux)" :
					"");
		goto cleanup;
	}
	/*
	 * Attached to the map, not through a link: the map holds the program, and the kernel
	 * releases both when the last descriptor of the map closes, at gospan's exit.
	 */
	if (bpf_prog_attach(bpf_program__fd(w->skel->progs.write_trace_context),
			    bpf_map__fd(w->skel->maps.sockets), BPF_SK_MSG_VERDICT, 0)) {
		err = -errno;
		pr_warn("outgoing trace context is off: cannot attach the sk_msg program to its "
			"sockhash: %s",
			strerror(-err));
		goto cleanup;
	}
	return w;

cleanup:
	wire__destroy(w);
	errno = -err;
	return NULL;
}

/* PID's cgroup v2 path below the hierarchy's root, from /proc/PID/cgroup's "0::" line. */
static int process_cgroup(pid_t pid, char *out, size_t size)
{
	char path[64], line[PATH_MAX];
	int err = -ENOENT;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/cgroup", (int)pid);
	f = fopen(path, "re");
	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		if (strncmp(line, "0::", 3))
			continue;
		line[strcspn(line, "\n")] = '\0';
		if (strlen(line + 3) >= size) {
			err = -ENAMETOOLONG;
			break;
		}
		memcpy(out, line + 3, strlen(line + 3) + 1);
		err = 0;
		break;
	}
	fclose(f);
	return err;
}

/*
 * Lets go of the link to cgroup I, which is gone: the link held the dead cgroup in the kernel's
 * memory for as long as gospan runs.
 */
static void forget_cgroup(struct wire *w, size_t i)
{
	bpf_link__destroy(w->cgroups[i].link);
	free(w->cgroups[i].path);
	w->cgroups[i] = w->cgroups[--w->ncgroups];
}

/*
 * Opens the cgroup at REL (a /proc/PID/cgroup path) under the hierarchy gospan sees, its full
 * name into FULL for messages; the descriptor, or -errno (-ENOENT with *OUTSIDE set when the
 * cgroup is not below the mount's top).
 */
static int open_cgroup(struct wire *w, const char *rel, char *full, size_t size, bool *outside)
{
	const char *below = wire__cgroup_below(rel, w->cgroup_root);
	int fd;

	*outside = !below;
	if (!below)
		return -ENOENT;
	snprintf(full, size, "%s/%s", w->cgroup_mnt, below);
	if (w->cgroup_fd >= 0)
		fd = openat(w->cgroup_fd, below[0] ? below : ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	else
		fd = open(full, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	return fd < 0 ? -errno : fd;
}

/*
 * Attaches the sockops program to PID's cgroup, once per cgroup. Once per cgroup, not per path:
 * a container restarted by its runtime gets a new cgroup at the old path, which the program
 * attached to the old one does not cover, so the link is made again there.
 */
static int attach_cgroup(struct wire *w, pid_t pid)
{
	char rel[PATH_MAX], full[PATH_MAX * 2];
	struct cgroup_link *links;
	struct bpf_link *link;
	struct stat st;
	bool outside;
	size_t i;
	int err, fd;

	err = process_cgroup(pid, rel, sizeof(rel));
	if (err) {
		pr_warn("process %d: no cgroup v2 membership in /proc/%d/cgroup: its calls carry "
			"no trace context",
			(int)pid, (int)pid);
		return err;
	}
	fd = open_cgroup(w, rel, full, sizeof(full), &outside);
	if (fd < 0) {
		if (outside)
			pr_warn("process %d: its cgroup '%s' is not below '%s', the top of the cgroup "
				"v2 mount at '%s': its calls carry no trace context (mount the host's "
				"cgroup hierarchy where gospan runs)",
				(int)pid, rel, w->cgroup_root, w->cgroup_mnt);
		else
			pr_warn("process %d: cannot open its cgroup '%s': %s: its calls carry no "
				"trace context",
				(int)pid, full, strerror(-fd));
		return fd;
	}
	if (fstat(fd, &st)) {
		err = -errno;
		close(fd);
		return err;
	}
	for (i = 0; i < w->ncgroups; i++) {
		if (strcmp(w->cgroups[i].path, rel))
			continue;
		if (w->cgroups[i].ino == st.st_ino) {
			close(fd);
			return 0;
		}
		forget_cgroup(w, i);
		break;
	}
	link = bpf_program__attach_cgroup(w->skel->progs.track_client_sockets, fd);
	err = link ? 0 : -errno;
	close(fd);
	if (err) {
		pr_warn("process %d: cannot attach to its cgroup '%s': %s: its calls carry no "
			"trace context",
			(int)pid, full, strerror(-err));
		return err;
	}
	links = realloc(w->cgroups, (w->ncgroups + 1) * sizeof(*links));
	if (!links || !(links[w->ncgroups].path = strdup(rel))) {
		if (links)
			w->cgroups = links;
		bpf_link__destroy(link);
		return -ENOMEM;
	}
	links[w->ncgroups].link = link;
	links[w->ncgroups].ino = st.st_ino;
	w->cgroups = links;
	w->ncgroups++;
	pr_debug("socket-layer writer attached to cgroup '%s'", full);
	return 0;
}

static int sockopt_int(int fd, int level, int name)
{
	socklen_t len = sizeof(int);
	int v = -1;

	if (getsockopt(fd, level, name, &v, &len))
		return -1;
	return v;
}

static int local_port(int fd)
{
	struct sockaddr_storage ss;
	socklen_t len = sizeof(ss);

	if (getsockname(fd, (struct sockaddr *)&ss, &len))
		return -1;
	if (ss.ss_family == AF_INET)
		return ntohs(((struct sockaddr_in *)&ss)->sin_port);
	if (ss.ss_family == AF_INET6)
		return ntohs(((struct sockaddr_in6 *)&ss)->sin6_port);
	return -1;
}

struct open_socket {
	int fd; /* our duplicate */
	int port;
};

/*
 * Adds PID's open client TCP connections to the sockhash: no sockops event comes for a
 * connection established before the program was attached. Each socket is duplicated into
 * gospan (pidfd_getfd), which the sockhash update needs, and closed again. A connection is a
 * client's when its local port is none the process listens on.
 */
static int add_open_sockets(struct wire *w, pid_t pid)
{
	struct open_socket *est = NULL;
	int listen_ports[64], nlisten = 0, nest = 0, added = 0, pidfd, fd, dup, i, j, err = 0;
	char dir[64], link[320], target[64];
	struct dirent *d;
	__u64 cookie, sock;
	socklen_t len;
	DIR *fds = NULL;

	pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
	if (pidfd < 0) {
		err = -errno;
		pr_warn("process %d: cannot open it (pidfd_open): %s: the connections it had open "
			"before gospan came carry no trace context",
			(int)pid, strerror(-err));
		return err;
	}
	snprintf(dir, sizeof(dir), "/proc/%d/fd", (int)pid);
	fds = opendir(dir);
	if (!fds) {
		err = -errno;
		pr_warn("process %d: cannot list its open files in '%s': %s%s: the connections it "
			"had open before gospan came carry no trace context",
			(int)pid, dir, strerror(-err),
			err == -EACCES ? " (another user's process: gospan needs CAP_DAC_READ_SEARCH)" :
					 "");
		goto cleanup;
	}
	est = calloc(MAX_SOCKETS, sizeof(*est));
	if (!est) {
		err = -ENOMEM;
		goto cleanup;
	}
	while ((d = readdir(fds)) && nest < MAX_SOCKETS) {
		ssize_t n;

		if (d->d_name[0] == '.')
			continue;
		snprintf(link, sizeof(link), "%s/%s", dir, d->d_name);
		n = readlink(link, target, sizeof(target) - 1);
		if (n <= 0)
			continue;
		target[n] = '\0';
		if (strncmp(target, "socket:", 7))
			continue;
		fd = atoi(d->d_name);
		dup = (int)syscall(SYS_pidfd_getfd, pidfd, fd, 0);
		if (dup < 0) {
			err = -errno;
			pr_warn("process %d: cannot take a look at its socket %d: %s: its open "
				"connections carry no trace context",
				(int)pid, fd, strerror(-err));
			goto cleanup;
		}
		if (sockopt_int(dup, SOL_SOCKET, SO_TYPE) != SOCK_STREAM ||
		    sockopt_int(dup, SOL_SOCKET, SO_PROTOCOL) != IPPROTO_TCP) {
			close(dup);
			continue;
		}
		if (sockopt_int(dup, SOL_SOCKET, SO_ACCEPTCONN) == 1) {
			if (nlisten < (int)(sizeof(listen_ports) / sizeof(listen_ports[0])))
				listen_ports[nlisten++] = local_port(dup);
			close(dup);
			continue;
		}
		{
			struct tcp_info ti;

			len = sizeof(ti);
			if (getsockopt(dup, IPPROTO_TCP, TCP_INFO, &ti, &len) ||
			    ti.tcpi_state != TCP_ESTABLISHED) {
				close(dup);
				continue;
			}
		}
		est[nest].fd = dup;
		est[nest].port = local_port(dup);
		nest++;
	}
	for (i = 0; i < nest; i++) {
		bool server = false;

		for (j = 0; j < nlisten; j++)
			server |= listen_ports[j] == est[i].port;
		len = sizeof(cookie);
		if (server || getsockopt(est[i].fd, SOL_SOCKET, SO_COOKIE, &cookie, &len))
			continue;
		sock = (__u64)est[i].fd;
		if (bpf_map_update_elem(bpf_map__fd(w->skel->maps.sockets), &cookie, &sock,
					BPF_NOEXIST) &&
		    errno != EEXIST) {
			pr_warn("process %d: cannot track an open connection: %s", (int)pid,
				strerror(errno));
			continue;
		}
		added++;
	}
	if (added)
		pr_info("process %d: %d open client connection%s tracked: %s HTTP/1 requests "
			"and cleartext gRPC calls carry trace context",
			(int)pid, added, added == 1 ? " is" : "s are", added == 1 ? "its" : "their");

cleanup:
	for (i = 0; est && i < nest; i++)
		close(est[i].fd);
	free(est);
	if (fds)
		closedir(fds);
	close(pidfd);
	return err;
}

static bool known_pid(const struct wire *w, pid_t pid)
{
	size_t i;

	for (i = 0; i < w->npids; i++)
		if (w->pids[i] == pid)
			return true;
	return false;
}

static int remember_pid(struct wire *w, pid_t pid)
{
	pid_t *pids;
	size_t cap;

	if (w->npids == w->cap_pids) {
		cap = w->cap_pids ? w->cap_pids * 2 : 16;
		pids = realloc(w->pids, cap * sizeof(*pids));
		if (!pids)
			return -ENOMEM;
		w->pids = pids;
		w->cap_pids = cap;
	}
	w->pids[w->npids++] = pid;
	return 0;
}

/* Tracks PID; TP is its entry for `traced`, NULL when the client probe has put it there. */
static int add_process(struct wire *w, pid_t pid, const struct traced_process *tp)
{
	__u32 key = (__u32)pid;
	int err;

	if (known_pid(w, pid))
		return 0;
	err = remember_pid(w, pid);
	if (!err && tp &&
	    bpf_map_update_elem(bpf_map__fd(w->skel->maps.traced), &key, tp, BPF_ANY))
		err = -errno;
	if (err) {
		pr_warn("process %d: cannot track it for trace context: %s: its calls carry none",
			(int)pid, strerror(-err));
		return err;
	}
	/* The cgroup first: a connection made meanwhile is then announced by sockops. */
	err = attach_cgroup(w, pid);
	if (err)
		return err;
	return add_open_sockets(w, pid);
}

int wire__add_process(struct wire *w, pid_t pid, const struct target_config *cfg)
{
	struct traced_process tp = { .g_goid = cfg->g_goid, .tls_g = cfg->tls_g };

	return add_process(w, pid, &tp);
}

/*
 * Lets go of the links to cgroups that are gone (a container removed, or made anew at the same
 * path), which a host whose containers come and go would otherwise gather without end.
 */
static void prune_cgroups(struct wire *w)
{
	char full[PATH_MAX * 2];
	struct stat st;
	bool outside, gone;
	size_t i;
	int fd;

	for (i = 0; i < w->ncgroups;) {
		fd = open_cgroup(w, w->cgroups[i].path, full, sizeof(full), &outside);
		gone = fd == -ENOENT && !outside;
		if (fd >= 0) {
			gone = !fstat(fd, &st) && st.st_ino != w->cgroups[i].ino;
			close(fd);
		}
		if (!gone) {
			i++;
			continue;
		}
		pr_debug("cgroup '%s' is gone: its link is let go", full);
		forget_cgroup(w, i);
	}
}

void wire__sync(struct wire *w)
{
	int fd = bpf_map__fd(w->skel->maps.traced);
	__u32 key, next, *prev = NULL;
	size_t i;

	while (!bpf_map_get_next_key(fd, prev, &next)) {
		key = next;
		prev = &key;
		add_process(w, (pid_t)key, NULL);
	}
	/* Processes that are gone: their entries would only keep the table full. */
	for (i = 0; i < w->npids;) {
		if (kill(w->pids[i], 0) && errno == ESRCH) {
			key = (__u32)w->pids[i];
			bpf_map_delete_elem(fd, &key);
			w->pids[i] = w->pids[--w->npids];
			continue;
		}
		i++;
	}
	prune_cgroups(w);
}

void wire__destroy(struct wire *w)
{
	size_t i;

	if (!w)
		return;
	for (i = 0; i < w->ncgroups; i++) {
		bpf_link__destroy(w->cgroups[i].link);
		free(w->cgroups[i].path);
	}
	free(w->cgroups);
	free(w->pids);
	kafka_wire_bpf__destroy(w->kafka);
	wire_bpf__destroy(w->skel);
	if (w->cgroup_fd >= 0)
		close(w->cgroup_fd);
	free(w);
}
