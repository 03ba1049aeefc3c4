// SPDX-License-Identifier: MIT
/*
 * The traced processes and their resources. A process is registered lazily on its first record,
 * so --exe picks up every process of a binary, including ones started after gospan.
 */
#include <errno.h>
#include <signal.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/config.h"
#include "capture/container.h"
#include "events.h"
#include "analysis/gobin.h"
#include "core/log.h"
#include "capture/process.h"
#include "model/semconv.h"
#include "model/span.h"
#include "analysis/target.h"
#include "core/version.h"

struct process_table {
	const struct config *cfg;
	const struct target *targets[MAX_TARGETS];
	struct process *procs;
	char hostname[256];
};

struct process_table *process_table__new(const struct config *cfg)
{
	struct process_table *pt = calloc(1, sizeof(*pt));

	if (!pt)
		return NULL;
	pt->cfg = cfg;
	if (gethostname(pt->hostname, sizeof(pt->hostname) - 1))
		pt->hostname[0] = '\0';
	return pt;
}

void process_table__free(struct process_table *pt)
{
	struct process *p, *next;

	if (!pt)
		return;
	for (p = pt->procs; p; p = next) {
		next = p->next;
		resource__free(p->res);
		free(p);
	}
	free(pt);
}

int process_table__add_target(struct process_table *pt, uint32_t cookie, const struct target *t)
{
	if (cookie >= MAX_TARGETS)
		return -E2BIG;
	pt->targets[cookie] = t;
	return 0;
}

const struct target *process_table__target(const struct process_table *pt, uint32_t cookie)
{
	return cookie < MAX_TARGETS ? pt->targets[cookie] : NULL;
}

struct process *process_table__find(struct process_table *pt, pid_t pid)
{
	struct process *p;

	for (p = pt->procs; p; p = p->next)
		if (p->pid == pid)
			return p;
	return NULL;
}

void process_table__remove(struct process_table *pt, pid_t pid)
{
	struct process **pp, *p;

	for (pp = &pt->procs; (p = *pp); pp = &p->next) {
		if (p->pid == pid) {
			*pp = p->next;
			resource__free(p->res);
			free(p);
			return;
		}
	}
}

size_t process_table__prune(struct process_table *pt, bool (*busy)(void *ctx, pid_t pid),
			    void *ctx)
{
	struct process **pp, *p;
	size_t n = 0;

	for (pp = &pt->procs; (p = *pp);) {
		if (kill(p->pid, 0) && errno == ESRCH && !busy(ctx, p->pid)) {
			pr_debug("process %d exited: forgotten", (int)p->pid);
			*pp = p->next;
			resource__free(p->res);
			free(p);
			n++;
			continue;
		}
		pp = &p->next;
	}
	return n;
}

/*
 * The value of NAME in the process's initial environment, copied to BUF (cut to fit); false if
 * absent. /proc/PID/environ is the target's memory: the process may overwrite it, and may even
 * point the kernel at another range with prctl(PR_SET_MM_MAP), which takes no privilege. So
 * neither an entry's length nor the total is trusted: the scan keeps one chunk, never a whole
 * entry, and stops after as much as exec() lets argv and environment take together (6 MiB).
 */
#define ENVIRON_SCAN_MAX (6 << 20)

static bool proc_getenv(pid_t pid, const char *name, char *buf, size_t size)
{
	enum { MATCHING, COPYING, SKIPPING } state = MATCHING;
	size_t i, n, seen = 0, at = 0, out = 0, nlen = strlen(name);
	char path[64], chunk[4096];
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/environ", (int)pid);
	f = fopen(path, "re");
	if (!f) {
		/* Not silent: the service would be named after its executable for no clear reason. */
		if (errno == EACCES || errno == EPERM)
			pr_warn("cannot read %s: %s; its %s is not seen (reading another user's "
				"environment needs CAP_DAC_READ_SEARCH)",
				path, strerror(errno), name);
		return false;
	}
	/* NUL-separated entries; AT counts how much of NAME= the current entry has matched. */
	while (seen < ENVIRON_SCAN_MAX && (n = fread(chunk, 1, sizeof(chunk), f))) {
		seen += n;
		for (i = 0; i < n; i++) {
			char c = chunk[i];

			if (state == COPYING) {
				if (!c || out + 1 >= size)
					goto done;
				buf[out++] = c;
			} else if (!c) {
				state = MATCHING;
				at = 0;
			} else if (state == MATCHING) {
				if (at < nlen ? c != name[at] : c != '=')
					state = SKIPPING;
				else if (at++ == nlen)
					state = COPYING;
			}
		}
	}
done:
	fclose(f);
	/* A value cut by the end of the file or of the scan is kept, as far as it went. */
	if (state != COPYING)
		return false;
	if (size)
		buf[out] = '\0';
	return true;
}

/*
 * How far the PIE binary was moved from its link address: where its offset-0 mapping starts,
 * minus the link address of offset 0 (Go links PIE at 0x400000, not at 0).
 */
uint64_t process__load_bias(pid_t pid, uint64_t link_base)
{
	char path[64], line[PATH_MAX + 128], exe[PATH_MAX], *mpath;
	unsigned long long start, end, off;
	uint64_t bias = 0;
	ssize_t n;
	FILE *f;
	int c;

	snprintf(path, sizeof(path), "/proc/%d/exe", (int)pid);
	n = readlink(path, exe, sizeof(exe) - 1);
	if (n <= 0 || (size_t)n >= sizeof(exe) - 1) /* none, or cut short: no line can match */
		return 0;
	exe[n] = '\0';
	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	f = fopen(path, "re");
	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f)) {
		/*
		 * The file names in maps are the target's to choose: the rest of a line longer than
		 * the buffer must not be read as a line of its own, so it is skipped whole.
		 */
		if (!strchr(line, '\n') && !feof(f)) {
			while ((c = getc(f)) != EOF && c != '\n')
				;
			continue;
		}
		if (sscanf(line, "%llx-%llx %*s %llx", &start, &end, &off) != 3 || off)
			continue;
		mpath = strchr(line, '/');
		if (mpath && !strncmp(mpath, exe, n) && (mpath[n] == '\n' || mpath[n] == '\0')) {
			bias = start - link_base;
			break;
		}
	}
	fclose(f);
	return bias;
}

static int build_resource(struct process_table *pt, struct process *p)
{
	const struct config *cfg = pt->cfg;
	const struct target *t = p->target;
	struct container_info ci;
	char val[512];
	size_t i;
	int err;

	p->res = resource__new();
	if (!p->res)
		return -ENOMEM;
	err = resource__set_str(p->res, SC_TELEMETRY_SDK_NAME, GOSPAN_NAME);
	/* The spans describe a Go program, so that is the language backends should show. */
	err = err ?: resource__set_str(p->res, SC_TELEMETRY_SDK_LANGUAGE, "go");
	err = err ?: resource__set_str(p->res, SC_TELEMETRY_SDK_VERSION, GOSPAN_VERSION);
	err = err ?: resource__set_int(p->res, SC_PROCESS_PID, p->pid);
	err = err ?: resource__set_str(p->res, SC_PROCESS_EXECUTABLE_NAME, t->exe_name);
	err = err ?: resource__set_str(p->res, SC_PROCESS_RUNTIME_NAME, "go");
	snprintf(val, sizeof(val), "go%d.%d.%d", t->gobin->major, t->gobin->minor,
		 t->gobin->patch);
	err = err ?: resource__set_str(p->res, SC_PROCESS_RUNTIME_VERSION, val);
	if (pt->hostname[0])
		err = err ?: resource__set_str(p->res, SC_HOST_NAME, pt->hostname);
	/* From the cgroup paths, which the kernel writes: no container is no attribute. */
	if (!err && !container__read(p->pid, &ci)) {
		if (ci.id[0])
			err = resource__set_str(p->res, SC_CONTAINER_ID, ci.id);
		if (ci.runtime)
			err = err ?: resource__set_str(p->res, SC_CONTAINER_RUNTIME_NAME,
						       ci.runtime);
		if (ci.pod_uid[0])
			err = err ?: resource__set_str(p->res, SC_K8S_POD_UID, ci.pod_uid);
	}
	/* OTEL_RESOURCE_ATTRIBUTES may refine what was detected. */
	for (i = 0; !err && i < cfg->nresource_attrs; i++)
		err = resource__set_str(p->res, cfg->resource_attrs[i].key,
					cfg->resource_attrs[i].value);
	if (err)
		return err;

	/*
	 * service.name: gospan's OTEL_SERVICE_NAME, else service.name from its
	 * OTEL_RESOURCE_ATTRIBUTES, else the target's own OTEL_SERVICE_NAME, else the executable.
	 */
	if (cfg->service_name)
		return resource__set_str(p->res, SC_SERVICE_NAME, cfg->service_name);
	if (resource__get(p->res, SC_SERVICE_NAME))
		return 0;
	if (proc_getenv(p->pid, "OTEL_SERVICE_NAME", val, sizeof(val)) && val[0])
		return resource__set_str(p->res, SC_SERVICE_NAME, val);
	return resource__set_str(p->res, SC_SERVICE_NAME, t->exe_name);
}

struct process *process_table__get(struct process_table *pt, pid_t pid, uint32_t cookie)
{
	const struct target *t = process_table__target(pt, cookie);
	struct process *p = process_table__find(pt, pid);
	int err;

	if (p)
		return p;
	if (!t) {
		errno = ENOENT;
		return NULL;
	}
	p = calloc(1, sizeof(*p));
	if (!p)
		return NULL;
	p->pid = pid;
	p->target = t;
	if (t->pie)
		p->load_bias = process__load_bias(pid, t->link_base);
	err = build_resource(pt, p);
	if (err) {
		pr_warn("cannot describe process %d: %s", (int)pid, strerror(-err));
		resource__free(p->res);
		free(p);
		errno = -err;
		return NULL;
	}
	p->next = pt->procs;
	pt->procs = p;
	pr_debug("tracing process %d ('%s')", (int)pid, t->exe_name);
	return p;
}
