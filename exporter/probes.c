// SPDX-License-Identifier: MIT
/*
 * libbpf glue. Every uprobe is a plain uprobe at a file offset (entry or a RET): never a
 * uretprobe, which rewrites the return address on a stack Go may move. The attach cookie selects
 * the target's offsets in the `targets` map, so one loaded object serves many binaries.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "http_server.skel.h"
#include "log.h"
#include "probes.h"
#include "target.h"

/* Hold the ring buffer reader's wakeup until this much is unconsumed (1/4 of the buffer). */
#define WAKE_FRACTION 4

struct probes {
	struct http_server_bpf *skel;
	struct ring_buffer *rb;
	struct bpf_link **links;
	size_t nlinks, cap_links;
	uint32_t ntargets;
	int ncpus;
};

static int libbpf_log(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	enum log_level l = level == LIBBPF_WARN ? LOG_WARN :
			   level == LIBBPF_INFO ? LOG_DEBUG :
						  LOG_DEBUG + 1;
	char buf[1024];

	if (l > log_get_level())
		return 0;
	vsnprintf(buf, sizeof(buf), fmt, ap);
	log_msg(l > LOG_DEBUG ? LOG_DEBUG : l, "libbpf: %s", buf);
	return 0;
}

struct probes *probes__load(probes_record_fn fn, void *ctx)
{
	struct probes *p;
	int err;

	libbpf_set_print(libbpf_log);
	p = calloc(1, sizeof(*p));
	if (!p)
		return NULL;
	p->ncpus = libbpf_num_possible_cpus();
	if (p->ncpus <= 0) {
		err = p->ncpus ? p->ncpus : -EINVAL;
		pr_err("cannot count possible CPUs: %s", strerror(-err));
		goto cleanup;
	}
	p->skel = http_server_bpf__open();
	if (!p->skel) {
		err = -errno;
		pr_err("cannot open the BPF object: %s", strerror(-err));
		goto cleanup;
	}
	p->skel->rodata->wake_threshold =
		bpf_map__max_entries(p->skel->maps.events) / WAKE_FRACTION;
	err = http_server_bpf__load(p->skel);
	if (err) {
		pr_err("cannot load the BPF programs: %s%s", strerror(-err),
		       err == -EPERM ? " (run as root, or with CAP_BPF and CAP_PERFMON)" : "");
		goto cleanup;
	}
	p->rb = ring_buffer__new(bpf_map__fd(p->skel->maps.events), (ring_buffer_sample_fn)fn, ctx,
				 NULL);
	if (!p->rb) {
		err = -errno;
		pr_err("cannot open the ring buffer: %s", strerror(-err));
		goto cleanup;
	}
	return p;

cleanup:
	probes__destroy(p);
	errno = -err;
	return NULL;
}

static int attach_one(struct probes *p, struct bpf_program *prog, pid_t pid, const char *path,
		      uint64_t off, uint32_t cookie)
{
	LIBBPF_OPTS(bpf_uprobe_opts, opts, .bpf_cookie = cookie, .retprobe = false);
	struct bpf_link *link, **links;
	int err;

	if (p->nlinks == p->cap_links) {
		size_t cap = p->cap_links ? p->cap_links * 2 : 16;

		links = realloc(p->links, cap * sizeof(*links));
		if (!links)
			return -ENOMEM;
		p->links = links;
		p->cap_links = cap;
	}
	link = bpf_program__attach_uprobe_opts(prog, pid, path, off, &opts);
	if (!link) {
		err = -errno;
		pr_err("cannot attach uprobe to '%s' at offset 0x%llx: %s", path,
		       (unsigned long long)off, strerror(-err));
		return err;
	}
	p->links[p->nlinks++] = link;
	return 0;
}

int probes__attach(struct probes *p, const struct target *t, pid_t pid, uint32_t *cookie)
{
	const struct probe_site *s = &t->serve_http;
	size_t first = p->nlinks, i;
	uint32_t c = p->ntargets;
	int err;

	if (c >= MAX_TARGETS) {
		pr_err("cannot trace '%s': already tracing %d binaries", t->path, MAX_TARGETS);
		return -E2BIG;
	}
	err = bpf_map_update_elem(bpf_map__fd(p->skel->maps.targets), &c, &t->cfg, BPF_ANY);
	if (err) {
		err = -errno;
		pr_err("cannot store the offsets of '%s': %s", t->path, strerror(-err));
		return err;
	}

	err = attach_one(p, p->skel->progs.serve_http_entry, pid, t->path, s->entry_off, c);
	for (i = 0; !err && i < s->nrets; i++)
		err = attach_one(p, p->skel->progs.serve_http_return, pid, t->path, s->ret_offs[i],
				 c);
	if (!err && t->gopanic.addr)
		err = attach_one(p, p->skel->progs.go_panic, pid, t->path, t->gopanic.entry_off, c);
	if (err) {
		/* All or nothing: an entry without its RETs would only fill the in-flight map. */
		while (p->nlinks > first)
			bpf_link__destroy(p->links[--p->nlinks]);
		return err;
	}
	p->ntargets++;
	*cookie = c;
	return (int)(p->nlinks - first);
}

int probes__poll(struct probes *p, int timeout_ms)
{
	int n, m;

	/* Records come without wakeups, so a timeout is the normal way out of the wait. */
	n = ring_buffer__poll(p->rb, timeout_ms);
	if (n < 0 && n != -EINTR)
		return n;
	m = ring_buffer__consume(p->rb);
	if (m < 0 && m != -EINTR)
		return m;
	return (n > 0 ? n : 0) + (m > 0 ? m : 0);
}

int probes__drops(struct probes *p, uint64_t out[DROP__COUNT])
{
	uint64_t *vals;
	uint32_t r;
	int fd = bpf_map__fd(p->skel->maps.drops), err = 0, cpu;

	vals = calloc(p->ncpus, sizeof(*vals));
	if (!vals)
		return -ENOMEM;
	for (r = 0; r < DROP__COUNT; r++) {
		out[r] = 0;
		if (bpf_map_lookup_elem(fd, &r, vals)) {
			err = -errno;
			break;
		}
		for (cpu = 0; cpu < p->ncpus; cpu++)
			out[r] += vals[cpu];
	}
	free(vals);
	return err;
}

int probes__forget(struct probes *p, uint32_t pid, uint64_t goid, uint64_t start_ns)
{
	struct goroutine_key key = { .pid = pid, .goid = goid };
	int fd = bpf_map__fd(p->skel->maps.inflight);
	struct inflight_call val;

	if (bpf_map_lookup_elem(fd, &key, &val))
		return -errno;
	/* The goroutine may have moved on to a new call since: leave that one alone. */
	if (val.start_ns != start_ns)
		return -ESTALE;
	if (bpf_map_delete_elem(fd, &key))
		return -errno;
	return 0;
}

void probes__detach(struct probes *p)
{
	while (p->nlinks)
		bpf_link__destroy(p->links[--p->nlinks]);
}

void probes__destroy(struct probes *p)
{
	if (!p)
		return;
	probes__detach(p);
	free(p->links);
	ring_buffer__free(p->rb);
	http_server_bpf__destroy(p->skel);
	free(p);
}
