// SPDX-License-Identifier: MIT
/*
 * uprobe links (uprobes.h). The uprobe_multi link is made with the bpf(2) syscall itself: the
 * libbpf of Debian 12 (1.1) predates it.
 */
#include <errno.h>
#include <linux/capability.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "core/log.h"
#include "capture/uprobes.h"

/* From the kernel's enum bpf_attach_type (Linux 6.6), newer than these headers. */
#define GOSPAN_TRACE_UPROBE_MULTI 48

/* bpf(BPF_LINK_CREATE)'s attributes for a uprobe_multi link, as the kernel lays them out. */
struct uprobe_multi_attr {
	uint32_t prog_fd;
	uint32_t target_fd;
	uint32_t attach_type;
	uint32_t flags;
	uint64_t path;
	uint64_t offsets;
	uint64_t ref_ctr_offsets;
	uint64_t cookies;
	uint32_t cnt;
	uint32_t multi_flags;
	uint32_t pid;
	uint32_t _pad;
};

/* One link: a libbpf one (a plain uprobe) or a uprobe_multi link's fd. */
struct link {
	struct bpf_link *link;
	int fd;
};

/* A probe waiting for its program's uprobe_multi link. */
struct queued {
	struct bpf_program *prog;
	const char *path;
	pid_t pid;
	uint64_t off, cookie;
	bool entry;
};

struct uprobes {
	bool multi;
	bool made_multi; /* a uprobe_multi link was made: the kernel has them */
	struct link *links;
	size_t nlinks, cap_links;
	struct queued *queue;
	size_t nqueue, cap_queue;
};

void uprobes__use_multi(struct bpf_object *obj, const struct bpf_program *except)
{
	struct bpf_program *prog;

	bpf_object__for_each_program(prog, obj) {
		if (prog != except && bpf_program__type(prog) == BPF_PROG_TYPE_KPROBE)
			bpf_program__set_expected_attach_type(prog, GOSPAN_TRACE_UPROBE_MULTI);
	}
}

struct uprobes *uprobes__new(bool multi)
{
	struct uprobes *u = calloc(1, sizeof(*u));

	if (u)
		u->multi = multi;
	return u;
}

static int grow(void **v, size_t *cap, size_t n, size_t size)
{
	size_t c = *cap ? *cap * 2 : 16;
	void *p;

	if (n < *cap)
		return 0;
	p = realloc(*v, c * size);
	if (!p)
		return -ENOMEM;
	*v = p;
	*cap = c;
	return 0;
}

/* Whether CAP is in gospan's effective set (capget, no libcap needed). */
static bool has_cap(int cap)
{
	struct __user_cap_header_struct hdr = { .version = _LINUX_CAPABILITY_VERSION_3 };
	struct __user_cap_data_struct data[_LINUX_CAPABILITY_U32S_3] = {};

	if (syscall(SYS_capget, &hdr, data))
		return true; /* unknown: do not blame a capability */
	return data[cap / 32].effective & (1U << (cap % 32));
}

static void say_attach_failed(const char *path, uint64_t off, size_t n, int err)
{
	if (n > 1)
		pr_err("cannot attach %zu uprobes to '%s' (the first at offset 0x%llx): %s", n, path,
		       (unsigned long long)off, strerror(-err));
	else
		pr_err("cannot attach uprobe to '%s' at offset 0x%llx: %s", path,
		       (unsigned long long)off, strerror(-err));
	/*
	 * Kernels with the fix for CVE-2025-38466 (stable backports included) let only
	 * CAP_SYS_ADMIN create uprobes; CAP_PERFMON was enough before. Say so, or the user is left
	 * guessing which capability is missing.
	 */
	if ((err == -EACCES || err == -EPERM) && !has_cap(CAP_SYS_ADMIN))
		pr_err("this kernel lets only CAP_SYS_ADMIN create uprobes: run gospan as root or add "
		       "CAP_SYS_ADMIN to CAP_BPF, CAP_PERFMON and CAP_SYS_PTRACE");
}

int uprobes__add(struct uprobes *u, struct bpf_program *prog, const char *path, pid_t pid,
		 uint64_t off, uint64_t cookie, bool entry)
{
	LIBBPF_OPTS(bpf_uprobe_opts, opts, .bpf_cookie = cookie, .retprobe = false);
	struct bpf_link *link;
	int err;

	if (u->multi) {
		if (grow((void **)&u->queue, &u->cap_queue, u->nqueue, sizeof(*u->queue)))
			return -ENOMEM;
		u->queue[u->nqueue++] = (struct queued){ .prog = prog, .path = path, .pid = pid,
							 .off = off, .cookie = cookie,
							 .entry = entry };
		return 0;
	}
	if (grow((void **)&u->links, &u->cap_links, u->nlinks, sizeof(*u->links)))
		return -ENOMEM;
	link = bpf_program__attach_uprobe_opts(prog, pid, path, off, &opts);
	if (!link) {
		err = -errno;
		say_attach_failed(path, off, 1, err);
		return err;
	}
	u->links[u->nlinks++] = (struct link){ .link = link, .fd = -1 };
	return 0;
}

/*
 * bpf(BPF_LINK_CREATE) of a uprobe_multi link: PROG at the N offsets OFFS of PATH, with COOKIES,
 * for process PID (0: every process running the file). The link's fd, or a negative errno.
 */
static int link_multi(struct bpf_program *prog, const char *path, const uint64_t *offs,
		      const uint64_t *cookies, size_t n, uint32_t pid)
{
	struct uprobe_multi_attr attr = {};
	int fd;

	attr.prog_fd = (uint32_t)bpf_program__fd(prog);
	attr.attach_type = GOSPAN_TRACE_UPROBE_MULTI;
	attr.path = (uint64_t)(uintptr_t)path;
	attr.offsets = (uint64_t)(uintptr_t)offs;
	attr.cookies = (uint64_t)(uintptr_t)cookies;
	attr.cnt = (uint32_t)n;
	attr.pid = pid;
	fd = (int)syscall(__NR_bpf, BPF_LINK_CREATE, &attr, sizeof(attr));
	return fd < 0 ? -errno : fd;
}

/*
 * Whether the kernel makes uprobe_multi links, by asking for one of the first queued probe's
 * program with a PID no process has: -EINVAL without them (the attach type is unknown), else
 * the PID's refusal (-ESRCH).
 */
static int probe_multi(struct uprobes *u)
{
	const struct queued *q = &u->queue[0];
	uint64_t cookie = 0;
	int fd;

	/* a PID above pid_max's limit */
	fd = link_multi(q->prog, q->path, &q->off, &cookie, 1, 0x3fffffff);
	if (fd < 0)
		return fd;
	close(fd);
	return 0;
}

/* One uprobe_multi link for the N probes of Q[0].prog listed in IDX. */
static int attach_multi(struct uprobes *u, const size_t *idx, size_t n)
{
	const struct queued *q = &u->queue[idx[0]];
	uint64_t *offs, *cookies;
	size_t i;
	int fd, err = 0;

	if (grow((void **)&u->links, &u->cap_links, u->nlinks, sizeof(*u->links)))
		return -ENOMEM;
	offs = calloc(n, sizeof(*offs));
	cookies = calloc(n, sizeof(*cookies));
	if (!offs || !cookies) {
		err = -ENOMEM;
		goto cleanup;
	}
	for (i = 0; i < n; i++) {
		offs[i] = u->queue[idx[i]].off;
		cookies[i] = u->queue[idx[i]].cookie;
	}
	/* -1 (every process running the file) is 0 here */
	fd = link_multi(q->prog, q->path, offs, cookies, n, q->pid > 0 ? (uint32_t)q->pid : 0);
	if (fd < 0) {
		err = fd;
		say_attach_failed(q->path, offs[0], n, err);
		goto cleanup;
	}
	u->links[u->nlinks++] = (struct link){ .fd = fd };
	u->made_multi = true;
cleanup:
	free(offs);
	free(cookies);
	return err;
}

/*
 * The queue attached with plain links, in its order (ends were queued first per site): for a
 * kernel that loaded the programs but makes no uprobe_multi link (before 6.6, where the attach
 * type was not checked at load).
 */
static int commit_plain(struct uprobes *u)
{
	size_t i, n = u->nqueue;
	int pass, err = 0;

	u->multi = false;
	u->nqueue = 0;
	for (pass = 0; !err && pass < 2; pass++)
		for (i = 0; !err && i < n; i++)
			if (u->queue[i].entry == (pass == 1))
				err = uprobes__add(u, u->queue[i].prog, u->queue[i].path,
						   u->queue[i].pid, u->queue[i].off,
						   u->queue[i].cookie, u->queue[i].entry);
	return err;
}

int uprobes__commit(struct uprobes *u)
{
	size_t *idx = NULL, i, j, n;
	int pass, err = 0;

	if (!u->nqueue)
		return 0;
	if (!u->made_multi && probe_multi(u) == -EINVAL) {
		pr_debug("this kernel makes no uprobe_multi links: plain uprobe links");
		return commit_plain(u);
	}
	idx = calloc(u->nqueue, sizeof(*idx));
	if (!idx) {
		err = -ENOMEM;
		goto cleanup;
	}
	/* Ends first: a call begun before its end is probed would never end. */
	for (pass = 0; !err && pass < 2; pass++) {
		for (i = 0; !err && i < u->nqueue; i++) {
			const struct queued *q = &u->queue[i];

			if (q->entry != (pass == 1) || !q->prog)
				continue;
			/* Every probe of this program in this pass, taken off the queue. */
			for (n = 0, j = i; j < u->nqueue; j++) {
				if (u->queue[j].prog == q->prog && u->queue[j].entry == q->entry)
					idx[n++] = j;
			}
			err = attach_multi(u, idx, n);
			for (j = 1; j < n; j++)
				u->queue[idx[j]].prog = NULL;
		}
	}
cleanup:
	free(idx);
	u->nqueue = 0;
	return err;
}

size_t uprobes__mark(const struct uprobes *u)
{
	return u->nlinks;
}

/*
 * Links are taken away by up to this many threads at once: the kernel waits for an RCU grace
 * period as it removes each uprobe (20-70 ms here, far more in an emulated virtual machine),
 * and removals that wait together share one. One after the other, a net/http service's 24
 * plain uprobes held gospan's exit for 0.35 s on this machine and 1.5 s under qemu's TCG.
 */
#define DETACH_THREADS 16

/* Links [FROM, TO) of a detach, taken one at a time by each of its threads. */
struct detach {
	struct link *links;
	size_t to;
	size_t next; /* the next link to take, atomically */
};

static void *detach_some(void *arg)
{
	struct detach *d = arg;
	struct link *l;
	size_t i;

	while ((i = __atomic_fetch_add(&d->next, 1, __ATOMIC_RELAXED)) < d->to) {
		l = &d->links[i];
		if (l->link)
			bpf_link__destroy(l->link);
		else
			close(l->fd);
	}
	return NULL;
}

void uprobes__rollback(struct uprobes *u, size_t mark)
{
	struct detach d = { .links = u->links, .to = u->nlinks, .next = mark };
	pthread_t threads[DETACH_THREADS - 1];
	size_t n = 0, want;

	u->nqueue = 0;
	if (u->nlinks <= mark)
		return;
	want = u->nlinks - mark < DETACH_THREADS ? u->nlinks - mark : DETACH_THREADS;
	/* Where a thread cannot be had, the ones there are (this one at least) take its share. */
	while (n + 1 < want && !pthread_create(&threads[n], NULL, detach_some, &d))
		n++;
	detach_some(&d);
	while (n)
		pthread_join(threads[--n], NULL);
	u->nlinks = mark;
}

void uprobes__detach(struct uprobes *u)
{
	uprobes__rollback(u, 0);
}

void uprobes__free(struct uprobes *u)
{
	if (!u)
		return;
	uprobes__detach(u);
	free(u->links);
	free(u->queue);
	free(u);
}
