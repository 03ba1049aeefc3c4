// SPDX-License-Identifier: MIT
/*
 * bench/floor: the benchmark's calibration. It analyses a Go process with gospan's own target
 * analysis (exporter/analysis/target.c and the modules under it, linked from libgospan.a) and attaches
 * empty BPF programs at exactly the sites gospan would attach to: ServeHTTP's entry and ends,
 * runtime.gopanic, (*Transport).roundTrip's entry and ends, the call site where requests are
 * marked for the socket-layer writer, the sites where gospan reads the route a router framework
 * matched (gin, echo, chi, gorilla/mux, Fiber: found as gospan finds them, DWARF or its offset
 * tables), fasthttp's server (where a request starts and where it is answered) and client,
 * runtime.newproc1's ends with --follow-goroutines.
 * The service then pays the uprobe traps and nothing else: the floor gospan is measured against.
 * --sites picks other sites for the same functions: gospan's entry sites with every RET (what
 * gospan probed before its end sites), or the first instruction with every RET (what other
 * uprobe tracers probe), so the benchmark shows what each choice costs.
 *
 *   floor --pid PID [--sites gospan|push-rets|first-rets] [--follow-goroutines]
 *   floor --pid PID --ops
 *   floor --verifier
 *
 * Prints "floor: attached: ..." when the probes are live; on SIGINT/SIGTERM detaches and prints
 * each program's run count and run time, then "floor: runs N, run_time_ns T" (the kernel's counts,
 * kept while kernel.bpf_stats_enabled=1).
 *
 * --ops is the cost model instead: at ServeHTTP's entry and RETs it attaches an empty program
 * and, on the same uprobes, programs doing one kind of operation each (bench/floor/ops.bpf.c):
 * their run times minus the empty program's are what those operations cost here.
 *
 * --verifier loads every program of gospan's own BPF object (the skeleton libgospan.a embeds)
 * once, and prints how long that took and what the verifier reports for each program: what
 * gospan's start costs for a target with every family (gospan loads a family's programs when a
 * target first has it).
 */
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "analysis/disasm.h"
#include "analysis/embed.h"
#include "analysis/emulation.h"
#include "empty.skel.h"
#include "http.skel.h"
#include "core/log.h"
#include "ops.skel.h"
#include "analysis/offsets.h"
#include "capture/probes.h"
#include "analysis/target.h"

static volatile sig_atomic_t stop_signal;

static void on_signal(int sig)
{
	stop_signal = sig;
}

struct floor {
	struct empty_bpf *skel;
	struct ops_bpf *ops;
	struct ring_buffer *rb;
	struct bpf_link **links;
	size_t nlinks, cap;
	size_t emulated, stepped;
};

/* Same options as gospan's attach_one(): a plain uprobe at a file offset, with a cookie. */
static int attach_at(struct floor *f, struct bpf_program *prog, pid_t pid, const char *path,
		     uint64_t off)
{
	LIBBPF_OPTS(bpf_uprobe_opts, opts, .bpf_cookie = 0, .retprobe = false);
	struct bpf_link *link, **links;

	if (f->nlinks == f->cap) {
		size_t cap = f->cap ? f->cap * 2 : 16;

		links = realloc(f->links, cap * sizeof(*links));
		if (!links)
			return -ENOMEM;
		f->links = links;
		f->cap = cap;
	}
	link = bpf_program__attach_uprobe_opts(prog, pid, path, off, &opts);
	if (!link) {
		int err = -errno;

		fprintf(stderr, "floor: cannot attach uprobe to '%s' at offset 0x%llx: %s\n", path,
			(unsigned long long)off, strerror(-err));
		return err;
	}
	f->links[f->nlinks++] = link;
	return 0;
}

/* ENTRY at the site's entry, ENDS at its RETs and other ends; counts emulated and stepped. */
static int attach_site(struct floor *f, struct bpf_program *entry, struct bpf_program *ends,
		       pid_t pid, const char *path, const struct probe_site *site)
{
	size_t i;
	int err = 0;

	if (!site->addr)
		return 0;
	/* As probes.c: the entry on the direct CALLs of it, when the planner chose those. */
	for (i = 0; !err && entry && i < site->nentry_calls; i++) {
		err = attach_at(f, entry, pid, path, site->entry_calls[i]);
		f->emulated += !err;
	}
	if (!err && entry && !site->nentry_calls) {
		err = attach_at(f, entry, pid, path, site->entry_off);
		*(site->entry_emulated ? &f->emulated : &f->stepped) += !err;
	}
	for (i = 0; !err && ends && i < site->nrets; i++) {
		err = attach_at(f, ends, pid, path, site->ret_offs[i]);
		f->stepped += !err;
	}
	for (i = 0; !err && ends && i < site->nends; i++) {
		err = attach_at(f, ends, pid, path, site->ends[i].off);
		*(site->ends[i].emulated ? &f->emulated : &f->stepped) += !err;
	}
	return err;
}

static int consume(void *ctx, void *data, size_t size)
{
	(void)ctx;
	(void)data;
	(void)size;
	return 0;
}

/* An empty program at each router framework's site, as probes.c's attach_routes() (ends only). */
static int attach_routes(struct floor *f, struct bpf_program *prog, pid_t pid, const char *path,
			 const struct router_target *r)
{
	const struct probe_site *site;
	size_t i, j;
	int err = 0;

	for (i = 0; !err && i < r->n; i++) {
		site = &r->v[i].site;
		for (j = 0; !err && j < site->nends; j++) {
			err = attach_at(f, prog, pid, path, site->ends[j].off);
			*(site->ends[j].emulated ? &f->emulated : &f->stepped) += !err;
		}
	}
	return err;
}

/*
 * fasthttp's server and client, as probes.c's attach_fasthttp(): the client's entry and ends,
 * the answers' CALLs, then the requests' starts (emulated CALLs, the server entry program's).
 */
static int attach_fasthttp(struct floor *f, pid_t pid, const char *path,
			   const struct fasthttp_target *h)
{
	typeof(f->skel->progs) *pr = &f->skel->progs;
	size_t i;
	int err;

	err = attach_site(f, pr->floor_client_entry, pr->floor_client_return, pid, path,
			  &h->client);
	if (!err)
		err = attach_site(f, NULL, pr->floor_serve_return, pid, path, &h->end);
	for (i = 0; !err && h->start.addr && i < h->start.nends; i++) {
		err = attach_at(f, pr->floor_serve_entry, pid, path, h->start.ends[i].off);
		f->emulated += !err;
	}
	return err;
}

/* The cost model (--ops): every ops program at ServeHTTP's entry and at each of its RETs. */
static int attach_ops(struct floor *f, pid_t pid, const char *path, const struct probe_site *site)
{
	struct bpf_program *prog;
	size_t i;
	int err;

	f->ops = ops_bpf__open_and_load();
	if (!f->ops) {
		err = -errno;
		fprintf(stderr, "floor: cannot load the cost-model programs: %s\n", strerror(-err));
		return err;
	}
	f->rb = ring_buffer__new(bpf_map__fd(f->ops->maps.ring), consume, NULL, NULL);
	if (!f->rb) {
		err = -errno;
		fprintf(stderr, "floor: cannot open the ring buffer: %s\n", strerror(-err));
		return err;
	}
	bpf_object__for_each_program(prog, f->ops->obj)
	{
		err = attach_at(f, prog, pid, path, site->entry_off);
		for (i = 0; !err && i < site->nrets; i++)
			err = attach_at(f, prog, pid, path, site->ret_offs[i]);
		for (i = 0; !err && i < site->nends; i++)
			err = attach_at(f, prog, pid, path, site->ends[i].off);
		if (err)
			return err;
	}
	return 0;
}

/* One part of the attach line: SEP is " " before the first, " + " after it. */
__attribute__((format(printf, 2, 3))) static void say_site(const char **sep, const char *fmt, ...)
{
	va_list ap;

	fputs(*sep, stdout);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	*sep = " + ";
}

static void print_runs(struct bpf_object *obj)
{
	struct bpf_program *prog;
	struct bpf_prog_info info;
	unsigned long long runs = 0, ns = 0;
	__u32 len;
	int fd;

	bpf_object__for_each_program(prog, obj)
	{
		fd = bpf_program__fd(prog);
		if (fd < 0)
			continue;
		memset(&info, 0, sizeof(info));
		len = sizeof(info);
		if (bpf_obj_get_info_by_fd(fd, &info, &len))
			continue;
		printf("floor: program %s runs %llu run_time_ns %llu\n", bpf_program__name(prog),
		       (unsigned long long)info.run_cnt, (unsigned long long)info.run_time_ns);
		runs += info.run_cnt;
		ns += info.run_time_ns;
	}
	printf("floor: runs %llu, run_time_ns %llu\n", runs, ns);
}

static void usage(FILE *fp)
{
	fprintf(fp, "usage: floor --pid PID [--sites gospan|push-rets|first-rets] "
		    "[--follow-goroutines | --ops]\n"
		    "       floor --verifier\n"
		    "--sites: gospan's (default); its entry sites with every RET (gospan before "
		    "its end sites); the first instruction and every RET (other uprobe tracers)\n");
}

/* The number after KEY in the verifier's log LOG, or -1. */
static long long log_number(const char *log, const char *key)
{
	const char *p = strstr(log, key);

	return p ? strtoll(p + strlen(key), NULL, 10) : -1;
}

static int verifier_stats(void)
{
	static char logs[16][4096];
	struct bpf_program *prog;
	struct timespec t0, t1;
	struct http_bpf *skel;
	int i = 0, err;

	skel = http_bpf__open();
	if (!skel) {
		err = -errno;
		fprintf(stderr, "floor: cannot open gospan's BPF object: %s\n", strerror(-err));
		return err;
	}
	bpf_object__for_each_program(prog, skel->obj)
	{
		if (i == (int)(sizeof(logs) / sizeof(logs[0])))
			break;
		/* Level 4: statistics only, which costs the verifier nothing extra. */
		bpf_program__set_log_level(prog, 4);
		bpf_program__set_log_buf(prog, logs[i++], sizeof(logs[0]));
	}
	clock_gettime(CLOCK_MONOTONIC, &t0);
	err = http_bpf__load(skel);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	if (err) {
		fprintf(stderr, "floor: cannot load gospan's BPF programs: %s\n", strerror(-err));
		http_bpf__destroy(skel);
		return err;
	}
	printf("floor: verifier: load_us %lld\n",
	       (long long)(t1.tv_sec - t0.tv_sec) * 1000000 + (t1.tv_nsec - t0.tv_nsec) / 1000);
	i = 0;
	bpf_object__for_each_program(prog, skel->obj)
	{
		const char *log = i < (int)(sizeof(logs) / sizeof(logs[0])) ? logs[i++] : "";

		if (!bpf_program__autoload(prog))
			continue;
		printf("floor: verifier: program %s insns %lld time_us %lld\n",
		       bpf_program__name(prog), log_number(log, "processed "),
		       log_number(log, "verification time "));
	}
	http_bpf__destroy(skel);
	return 0;
}

int main(int argc, char **argv)
{
	struct sigaction sa = {.sa_handler = on_signal};
	bool follow = false, ops = false, inject;
	char path[64], *end;
	const char *sep = " ";
	struct offsets *tables = NULL;
	struct module_tables modules = {};
	struct target *t = NULL;
	struct floor f = {};
	struct emulation emu;
	typeof(f.skel->progs) *pr;
	pid_t pid = 0;
	int i, err = 0;

	for (i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--pid") && i + 1 < argc) {
			long v = strtol(argv[++i], &end, 10);

			if (*end || v <= 0 || v > INT_MAX) {
				fprintf(stderr, "floor: '%s' is not a process id\n", argv[i]);
				return 2;
			}
			pid = (pid_t)v;
		} else if (!strcmp(argv[i], "--sites") && i + 1 < argc) {
			i++;
			if (!strcmp(argv[i], "gospan")) {
				site_planner_policy = SITES_BEST;
			} else if (!strcmp(argv[i], "push-rets")) {
				site_planner_policy = SITES_PUSH_RETS;
			} else if (!strcmp(argv[i], "first-rets")) {
				site_planner_policy = SITES_FIRST_RETS;
			} else {
				usage(stderr);
				return 2;
			}
		} else if (!strcmp(argv[i], "--follow-goroutines")) {
			follow = true;
		} else if (!strcmp(argv[i], "--ops")) {
			ops = true;
		} else if (!strcmp(argv[i], "--verifier")) {
			return verifier_stats() ? 1 : 0;
		} else if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
			usage(stdout);
			return 0;
		} else {
			usage(stderr);
			return 2;
		}
	}
	if (!pid) {
		usage(stderr);
		return 2;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	log_set_level(LOG_WARN);
	sigemptyset(&sa.sa_mask);
	if (sigaction(SIGINT, &sa, NULL) || sigaction(SIGTERM, &sa, NULL)) {
		perror("floor: sigaction");
		return 1;
	}

	tables = offsets__parse(gospan_offsets_json, gospan_offsets_json_end - gospan_offsets_json);
	if (!tables) {
		err = -errno;
		goto cleanup;
	}
	/* The router frameworks' tables, for their sites in binaries without DWARF. */
	err = module_tables__load(&modules);
	if (err)
		goto cleanup;
	f.skel = empty_bpf__open_and_load();
	if (!f.skel) {
		err = -errno;
		fprintf(stderr, "floor: cannot load the empty BPF programs: %s\n", strerror(-err));
		goto cleanup;
	}
	/* As gospan does before it places its probes. */
	err = emulation__measure(f.skel->progs.floor_panic, &emu);
	if (err) {
		fprintf(stderr, "floor: cannot tell what the kernel emulates: %s\n", strerror(-err));
		goto cleanup;
	}
	disasm__set_emulation(&emu);
	snprintf(path, sizeof(path), "/proc/%d/exe", (int)pid);
	/* With gospan's module tables: the routers' sites are found as gospan finds them. */
	t = target__analyse(path, NULL, tables, &modules, true);
	if (!t) {
		err = -errno;
		goto cleanup;
	}
	if (ops) {
		err = attach_ops(&f, pid, path, &t->serve_http);
		if (err)
			goto cleanup;
		printf("floor: attached: pid %d, cost model, %zu probes\n", (int)pid, f.nlinks);
		goto run;
	}
	/* The order and the sites of probes__attach() in exporter/capture/probes.c. */
	inject = t->round_trip.addr != 0;
	pr = &f.skel->progs;
	err = attach_site(&f, NULL, pr->floor_serve_return, pid, path, &t->serve_http2);
	if (!err)
		err = attach_site(&f, pr->floor_serve_entry, pr->floor_serve_return, pid, path,
				  &t->serve_http);
	if (!err)
		err = attach_site(&f, pr->floor_panic, NULL, pid, path, &t->gopanic);
	if (!err)
		err = attach_site(&f, pr->floor_client_entry, pr->floor_client_return, pid, path,
				  &t->round_trip);
	if (!err && inject)
		err = attach_site(&f, NULL, pr->floor_inject, pid, path, &t->inject);
	if (!err)
		err = attach_routes(&f, pr->floor_route, pid, path, &t->routers);
	if (!err)
		err = attach_fasthttp(&f, pid, path, &t->fasthttp);
	if (!err && follow)
		err = attach_site(&f, NULL, pr->floor_goroutine, pid, path, &t->newproc1);
	if (err)
		goto cleanup;
	printf("floor: attached: pid %d, %zu probes (%zu emulated, %zu single-stepped;", (int)pid,
	       f.nlinks, f.emulated, f.stepped);
	if (t->serve_http.addr)
		say_site(&sep, "ServeHTTP entry + %zu ends",
			 t->serve_http.nrets + t->serve_http.nends);
	if (t->gopanic.addr)
		say_site(&sep, "gopanic");
	if (t->round_trip.addr)
		say_site(&sep, "HTTP client");
	if (inject && t->inject.addr)
		say_site(&sep, "request marker");
	for (i = 0; i < (int)t->routers.n; i++)
		say_site(&sep, "%s routes", t->routers.v[i].name);
	if (fasthttp__serves(&t->fasthttp))
		say_site(&sep, "fasthttp server");
	if (t->fasthttp.client.addr)
		say_site(&sep, "fasthttp client");
	if (follow && t->newproc1.addr)
		say_site(&sep, "newproc1");
	printf(")\n");

run:
	while (!stop_signal) {
		if (kill(pid, 0) && errno == ESRCH)
			break;
		if (f.rb)
			ring_buffer__consume(f.rb);
		usleep(f.rb ? 50000 : 200000);
	}
	while (f.nlinks)
		bpf_link__destroy(f.links[--f.nlinks]);
	print_runs(ops ? f.ops->obj : f.skel->obj);
	if (ops)
		printf("floor: ring buffer full %llu times\n",
		       (unsigned long long)f.ops->bss->ring_full);

cleanup:
	while (f.nlinks)
		bpf_link__destroy(f.links[--f.nlinks]);
	free(f.links);
	ring_buffer__free(f.rb);
	ops_bpf__destroy(f.ops);
	emulation__release();
	empty_bpf__destroy(f.skel);
	target__free(t);
	module_tables__free(&modules);
	offsets__free(tables);
	return err ? 1 : 0;
}
