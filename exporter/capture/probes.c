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
#include <time.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "analysis/disasm.h"
#include "analysis/emulation.h"
#include "http.skel.h"
#include "core/log.h"
#include "capture/probes.h"
#include "analysis/sites.h"
#include "analysis/target.h"
#include "capture/uprobes.h"
#include "capture/wire.h"

/* Hold the ring buffer reader's wakeup until this much is unconsumed (1/4 of the buffer). */
#define WAKE_FRACTION 4

/*
 * The programs load in groups, each when a target first needs one: the verifier is most of
 * gospan's start, and most of the programs are for families the target does not have (all of
 * them took half a second here; a net/http service's, a fifth of that). A group is a copy of the
 * object opened with only its programs to load and every map, the internal ones too, taken from
 * the first copy: one set of maps, as if one object. The first copy loads the start-up
 * measurement and the Go runtime's programs, which every target uses. A program's group is the
 * first row its name starts with.
 *
 * The maps of calls in flight that only one group's programs use are made by that group's copy,
 * when it loads, not with the others: an LRU hash is allocated whole when it is made, and a
 * net/http service paid for the Kafka clients' tables and the rest (all of them, 215 MiB of the
 * kernel's memory, locked; half a second of an attach in an emulated virtual machine). A map's
 * group is the row one of whose map prefixes its name starts with. A program of another group
 * that used one would find no map behind it and be refused, as every test of that group loads.
 */
static const struct group {
	const char *prefix;
	const char *what; /* NULL: loaded with the maps */
	const char *const *maps; /* the maps only this group's programs use, by name prefix */
} groups[] = {
	{ "grpc_", "gRPC", (const char *const[]){ "rpc_", NULL } },
	{ "db_", "data store", (const char *const[]){ "db_calls", NULL } },
	{ "func_", "function", (const char *const[]){ "span_stacks", NULL } },
	{ "fasthttp_", "fasthttp", (const char *const[]){ "fh_", NULL } },
	{ "kafka_", "Kafka",
	  (const char *const[]){ "kafka_sarama_", "kafka_franz_", "kafka_consumers", "kafka_sends",
				 NULL } },
	{ "cpu_", "on-CPU time", NULL },
	{ "go_", NULL, NULL },
	{ "goroutine_", NULL, NULL },
	{ "process_", NULL, NULL },
	{ "calibrate", NULL, NULL },
	{ "", "net/http", NULL },
};

#define NGROUPS (sizeof(groups) / sizeof(groups[0]))

struct probes {
	struct http_bpf *skel; /* the maps, and the programs loaded with them */
	struct http_bpf *group[NGROUPS]; /* the copy that loaded each group's programs */
	int group_err[NGROUPS]; /* why a group did not load: not tried again */
	bool multi; /* the uprobes are uprobe_multi programs */
	struct ring_buffer *rb;
	struct uprobes *uprobes;
	uint32_t ntargets;
	uint32_t nfuncs; /* entries of the funcs map in use */
	uint32_t nroutes; /* entries of the route_sites map in use */
	int ncpus;
	struct wire *wire; /* the socket-layer writer of trace context; NULL: none goes out */
	struct bpf_link *cpu_switch; /* --cpu-time: the kernel's thread switches, for every target */
};

/*
 * libbpf's own lines (its warnings included: a failed load's verifier log, a map it could not
 * make) are for OTEL_LOG_LEVEL=debug: at the other levels gospan's message about the same failure
 * says what failed and what to do, once. libbpf's debug chatter is not shown at all. Its text
 * already starts with "libbpf: ".
 */
static int libbpf_log(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	char buf[4096];
	size_t n;

	if (level == LIBBPF_DEBUG || log_get_level() < LOG_DEBUG)
		return 0;
	vsnprintf(buf, sizeof(buf), fmt, ap);
	n = strlen(buf);
	while (n && buf[n - 1] == '\n')
		buf[--n] = '\0';
	log_msg(LOG_DEBUG, "%s", buf);
	return 0;
}

static size_t group_of(const char *name)
{
	size_t g;

	for (g = 0; g < NGROUPS - 1; g++)
		if (!strncmp(name, groups[g].prefix, strlen(groups[g].prefix)))
			break;
	return g;
}

/* Whether PROG is one of the programs group G loads (G < 0: those loaded with the maps). */
static bool in_group(const struct bpf_program *prog, ssize_t g)
{
	size_t mine = group_of(bpf_program__name(prog));

	return g < 0 ? !groups[mine].what : mine == (size_t)g;
}

/* The group that makes MAP when it loads, or -1: MAP is made with the first copy. */
static ssize_t map_group(const struct bpf_map *map)
{
	const char *name = bpf_map__name(map);
	const char *const *m;
	size_t g;

	for (g = 0; g < NGROUPS; g++)
		for (m = groups[g].maps; m && *m; m++)
			if (!strncmp(name, *m, strlen(*m)))
				return (ssize_t)g;
	return -1;
}

/*
 * Opens a copy of the BPF object that loads group G's programs and makes its maps (G < 0: the
 * first copy's, and every map of no group).
 */
static struct http_bpf *open_copy(struct probes *p, ssize_t g)
{
	struct bpf_program *prog;
	struct http_bpf *s;
	struct bpf_map *map;
	ssize_t owner;

	s = http_bpf__open();
	if (!s)
		return NULL;
	bpf_object__for_each_program(prog, s->obj)
		bpf_program__set_autoload(prog, in_group(prog, g));
	bpf_object__for_each_map(map, s->obj) {
		owner = map_group(map);
		if (owner >= 0 && owner != g && bpf_map__set_autocreate(map, false)) {
			http_bpf__destroy(s);
			errno = EINVAL;
			return NULL;
		}
	}
	if (p->multi)
		uprobes__use_multi(s->obj, s->progs.calibrate);
	return s;
}

/* Opens and loads the first copy into P->skel: the maps, and the programs loaded with them. */
static int open_and_load(struct probes *p)
{
	p->skel = open_copy(p, -1);
	if (!p->skel) {
		pr_err("cannot open the BPF object: %s", strerror(errno));
		return -errno;
	}
	p->skel->rodata->wake_threshold =
		bpf_map__max_entries(p->skel->maps.events) / WAKE_FRACTION;
	return http_bpf__load(p->skel);
}

/*
 * What a refused load means, after its error: the kernel said no (a capability), its verifier
 * refused a program (EACCES, as root too: --verbose shows the verifier's log), or it lacks
 * something gospan needs (EINVAL: a kernel older than 5.15 has no attach cookies).
 */
static const char *load_hint(int err)
{
	static char old[96];
	struct utsname u;
	int major, minor;

	if (err == -EPERM)
		return " (run as root, or with CAP_BPF and CAP_PERFMON)";
	if (err == -EACCES)
		return " (this kernel's BPF verifier refused a program; --verbose shows why, "
		       "docs/troubleshooting.md)";
	if (err == -EINVAL && !uname(&u) && sscanf(u.release, "%d.%d", &major, &minor) == 2 &&
	    (major < 5 || (major == 5 && minor < 15))) {
		snprintf(old, sizeof(old), " (Linux %d.%d: gospan needs Linux 5.15 or newer)", major,
			 minor);
		return old;
	}
	return "";
}

/* Loads group G's copy, with the first copy's maps. */
static int load_group(struct probes *p, size_t g)
{
	struct timespec t0, t1;
	struct http_bpf *s;
	struct bpf_map *map;
	int err, fd;

	s = open_copy(p, (ssize_t)g);
	if (!s) {
		err = -errno;
		pr_err("cannot open the BPF object for the %s probes: %s", groups[g].what,
		       strerror(-err));
		return err;
	}
	bpf_object__for_each_map(map, s->obj) {
		if (map_group(map) >= 0)
			continue; /* this copy makes it, or no program of it uses it */
		fd = bpf_object__find_map_fd_by_name(p->skel->obj, bpf_map__name(map));
		err = fd < 0 ? -ENOENT : bpf_map__reuse_fd(map, fd);
		if (err) {
			pr_err("cannot give the %s probes the map '%s': %s", groups[g].what,
			       bpf_map__name(map), strerror(-err));
			goto fail;
		}
	}
	clock_gettime(CLOCK_MONOTONIC, &t0);
	err = http_bpf__load(s);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	pr_debug("the %s probes' BPF programs loaded in %.0f ms%s", groups[g].what,
		 (double)(t1.tv_sec - t0.tv_sec) * 1e3 + (double)(t1.tv_nsec - t0.tv_nsec) / 1e6,
		 err ? " (refused)" : "");
	if (err) {
		pr_err("cannot load the %s probes' BPF programs: %s%s", groups[g].what,
		       strerror(-err), load_hint(err));
		goto fail;
	}
	p->group[g] = s;
	return 0;
fail:
	http_bpf__destroy(s);
	return err;
}

/*
 * PROG (a program of the first copy, where most are not loaded) as loaded: its group loaded
 * first if it was not. NULL with errno when that failed (said once, at the failure).
 */
static struct bpf_program *loaded(struct probes *p, struct bpf_program *prog)
{
	const char *name = bpf_program__name(prog);
	size_t g = group_of(name);

	if (!groups[g].what)
		return prog;
	if (!p->group[g] && !p->group_err[g])
		p->group_err[g] = load_group(p, g);
	if (p->group_err[g]) {
		errno = -p->group_err[g];
		return NULL;
	}
	return bpf_object__find_program_by_name(p->group[g]->obj, name);
}

/* uprobes__add() with PROG as loaded. */
static int add_probe(struct probes *p, struct bpf_program *prog, const char *path, pid_t pid,
		     uint64_t off, uint64_t cookie, bool entry)
{
	struct bpf_program *at = loaded(p, prog);

	if (!at)
		return errno ? -errno : -ENOENT;
	return uprobes__add(p->uprobes, at, path, pid, off, cookie, entry);
}

struct probes *probes__load(probes_record_fn fn, void *ctx, bool propagate)
{
	struct emulation emu;
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
	p->multi = !getenv("GOSPAN_UPROBE_MULTI") || strcmp(getenv("GOSPAN_UPROBE_MULTI"), "0");
	err = open_and_load(p);
	if (err && p->multi) {
		/* A kernel before 6.6: plain uprobe links, one a probe. */
		pr_debug("cannot load the uprobe programs as uprobe_multi programs (%s): using "
			 "plain uprobe links",
			 strerror(-err));
		http_bpf__destroy(p->skel);
		p->multi = false;
		err = open_and_load(p);
	}
	if (!err) {
		p->uprobes = uprobes__new(p->multi);
		err = p->uprobes ? 0 : -ENOMEM;
	}
	if (err) {
		pr_err("cannot load the BPF programs: %s%s", strerror(-err), load_hint(err));
		goto cleanup;
	}
	/* Before any target is analysed: where its probes go depends on it. */
	err = emulation__measure(p->skel->progs.calibrate, &emu);
	if (!err)
		err = emulation__override(&emu);
	if (err)
		pr_warn("cannot tell which instructions this kernel's uprobes emulate (%s): "
			"assuming PUSH, long NOPs and arm64's RET are", strerror(-err));
	else
		disasm__set_emulation(&emu);
	pr_debug("this kernel's uprobes emulate PUSH: %s; long NOPs: %s; RET (arm64): %s",
		 disasm__emulation()->push ? "yes" : "no",
		 disasm__emulation()->long_nop ? "yes" : "no",
		 disasm__emulation()->ret ? "yes" : "no");
	p->rb = ring_buffer__new(bpf_map__fd(p->skel->maps.events), (ring_buffer_sample_fn)fn, ctx,
				 NULL);
	if (!p->rb) {
		err = -errno;
		pr_err("cannot open the ring buffer: %s", strerror(-err));
		goto cleanup;
	}
	/* Spans do not need it: without it (the reason is said), calls carry no context out. */
	if (propagate)
		p->wire = wire__load(p->skel->obj);
	return p;

cleanup:
	probes__destroy(p);
	errno = -err;
	return NULL;
}

/* What an end probe's program must know about its place (bpf/include/events.h). */
static uint64_t end_cookie(const struct end_site *e, uint32_t c)
{
	uint64_t cookie = c;

	if (e->in_caller)
		cookie |= COOKIE_IN_CALLER | (uint64_t)e->frames << COOKIE_FRAMES_SHIFT;
	if (e->result >= 0)
		cookie |= (uint64_t)sites__slot_of(e->result) << COOKIE_RESULT_SHIFT;
	if (e->cond_slot) {
		cookie |= (uint64_t)e->cond_slot << COOKIE_COND_SHIFT;
		cookie |= (uint64_t)(e->cond_size & 0xf) << (COOKIE_COND_SHIFT + 4);
		if (e->cond_if_zero)
			cookie |= COOKIE_COND_IF_ZERO;
	}
	return cookie;
}

/*
 * The programs of one probed function: ENTRY at its entry, if given; AT_RETS at the RETs that
 * stay, AT_ENDS at its other ends, SUCCESS (when given) at those that end only error-free calls.
 * Nothing when the site's addr is 0. Counts what each probe costs in *N. ENTRY_AT: the entry's
 * cookie carries its link-time address above the target, for a program that needs the
 * process's load bias (bpf/include/go_net.bpf.h's load_bias).
 */
struct site_progs {
	struct bpf_program *entry, *at_rets, *at_ends, *success;
	bool entry_at;
};

static int attach_site(struct probes *p, const struct site_progs *sp, pid_t pid, const char *path,
		       const struct probe_site *site, uint32_t c, struct probe_counts *n)
{
	struct bpf_program *prog;
	size_t i;
	int err = 0;

	if (!site->addr)
		return 0;
	/*
	 * Ends first: a call that begins between the attach of its entry and of its ends would
	 * never end, and the goroutine's next spans would be its children. An end without its
	 * entry finds no call and does nothing.
	 */
	for (i = 0; !err && i < site->nrets; i++) {
		err = add_probe(p, sp->at_rets, path, pid, site->ret_offs[i], c, false);
		*(site->rets_emulated ? &n->emulated : &n->stepped) += !err;
	}
	for (i = 0; !err && i < site->nends; i++) {
		const struct end_site *e = &site->ends[i];

		prog = e->if_no_error && sp->success ? sp->success : sp->at_ends;
		err = add_probe(p, prog, path, pid, e->off, end_cookie(e, c), false);
		*(e->emulated ? &n->emulated : &n->stepped) += !err;
	}
	for (i = 0; !err && sp->entry && i < site->nentry_calls; i++) {
		err = add_probe(p, sp->entry, path, pid, site->entry_calls[i],
				   c | COOKIE_IN_CALLER, true);
		n->emulated += !err;
	}
	if (!err && sp->entry && !site->nentry_calls) {
		err = add_probe(p, sp->entry, path, pid, site->entry_off,
				   c | (sp->entry_at ? site->entry_at << 32 : 0), true);
		*(site->entry_emulated ? &n->emulated : &n->stepped) += !err;
	}
	return err;
}

/* T's function probes: each function's config in the funcs map, its entry and ends. */
static int attach_functions(struct probes *p, struct target *t, pid_t pid, uint32_t c,
			    struct probe_counts *n)
{
	const struct site_progs progs = { .entry = p->skel->progs.func_entry,
					   .at_rets = p->skel->progs.func_return,
					   .at_ends = p->skel->progs.func_return };
	const struct site_progs recover = { .entry = p->skel->progs.func_recover };
	uint32_t idx, cookie;
	size_t i;
	int err = 0;

	if (p->nfuncs + t->nfuncs > MAX_FUNCS) {
		pr_err("cannot trace the functions of '%s': %d functions at most in all", t->path,
		       MAX_FUNCS);
		return -E2BIG;
	}
	t->func_base = p->nfuncs;
	for (i = 0; !err && i < t->nfuncs; i++) {
		struct traced_func *f = &t->funcs[i];

		idx = t->func_base + (uint32_t)i;
		cookie = FUNC_COOKIE_BASE + idx;
		f->cfg.target = c;
		if (bpf_map_update_elem(bpf_map__fd(p->skel->maps.funcs), &idx, &f->cfg, BPF_ANY)) {
			err = -errno;
			pr_err("cannot store the config of '%s': %s", f->symbol, strerror(-err));
			break;
		}
		err = attach_site(p, &progs, pid, t->path, &f->site, cookie, n);
	}
	if (!err && t->nfuncs)
		err = attach_site(p, &recover, pid, t->path, &t->func_recover, c, n);
	if (!err)
		p->nfuncs += (uint32_t)t->nfuncs;
	return err;
}

/*
 * T's router frameworks: how each finds its route templates in the route_sites map, and its
 * probes, whose cookies carry that map's index above the target's (events.h).
 */
static int attach_routes(struct probes *p, struct target *t, pid_t pid, uint32_t c,
			 struct probe_counts *n)
{
	struct router_target *r = &t->routers;
	const struct router *rt;
	uint64_t cookie;
	uint32_t idx;
	size_t i, j;
	int err = 0;

	if (!r->n)
		return 0;
	if (p->nroutes + r->n > MAX_ROUTE_SITES) {
		pr_warn("'%s': no routes from its router framework: %d frameworks at most in all "
			"targets",
			t->path, MAX_ROUTE_SITES);
		return 0;
	}
	r->site_base = p->nroutes;
	for (i = 0; !err && i < r->n; i++) {
		rt = &r->v[i];
		idx = r->site_base + (uint32_t)i;
		if (bpf_map_update_elem(bpf_map__fd(p->skel->maps.route_sites), &idx, &rt->recipe,
					BPF_ANY)) {
			err = -errno;
			pr_err("cannot store how '%s' finds %s routes: %s", t->path, rt->name,
			       strerror(-err));
			break;
		}
		cookie = c | ((uint64_t)idx << ROUTE_SITE_SHIFT);
		for (j = 0; !err && j < rt->site.nends; j++) {
			err = add_probe(p, p->skel->progs.route_seen, t->path, pid,
					   rt->site.ends[j].off, cookie, false);
			*(rt->site.ends[j].emulated ? &n->emulated : &n->stepped) += !err;
		}
	}
	if (!err)
		p->nroutes += (uint32_t)r->n;
	return err;
}

/*
 * fasthttp's probes: the answers' CALLs and the client's attempts as any site; the requests'
 * starts with their link-time address above the target in the cookie (bpf/fasthttp.bpf.c takes
 * the process's load bias from it), last, so that no request starts without its end in place.
 */
static int attach_fasthttp(struct probes *p, struct target *t, pid_t pid, uint32_t c,
			   struct probe_counts *n)
{
	const struct site_progs end = { .at_ends = p->skel->progs.fasthttp_server_end };
	const struct site_progs client = { .entry = p->skel->progs.fasthttp_client_entry,
					   .at_rets = p->skel->progs.fasthttp_client_end,
					   .at_ends = p->skel->progs.fasthttp_client_end };
	const struct fasthttp_target *f = &t->fasthttp;
	size_t i;
	int err;

	err = attach_site(p, &client, pid, t->path, &f->client, c, n);
	err = err ?: attach_site(p, &end, pid, t->path, &f->end, c, n);
	for (i = 0; !err && f->start.addr && i < f->start.nends; i++) {
		err = add_probe(p, p->skel->progs.fasthttp_server_entry, t->path, pid,
				   f->start.ends[i].off, c | f->start_at[i] << 32, true);
		n->emulated += !err;
	}
	return err;
}

/*
 * franz-go's probes: the sends' ends (a record's promise, ProduceSync's) before their entries;
 * where a goroutine is done with a record (Next's entry, EachRecord's ends, a poll's entry)
 * before Next's ends, which hand one over.
 */
static int attach_franz(struct probes *p, struct target *t, pid_t pid, uint32_t c,
			struct probe_counts *n)
{
	const struct site_progs promise = { .entry = p->skel->progs.kafka_franz_promise };
	const struct site_progs produce = { .entry = p->skel->progs.kafka_franz_produce_entry };
	const struct site_progs sync = { .entry = p->skel->progs.kafka_franz_sync_entry,
					 .at_rets = p->skel->progs.kafka_franz_sync_end,
					 .at_ends = p->skel->progs.kafka_franz_sync_end };
	const struct site_progs poll = { .entry = p->skel->progs.kafka_fetch_entry };
	const struct site_progs settle = { .entry = p->skel->progs.kafka_settle };
	const struct site_progs settle_rets = { .at_rets = p->skel->progs.kafka_settle,
						.at_ends = p->skel->progs.kafka_settle };
	const struct site_progs delivered = { .at_rets = p->skel->progs.kafka_franz_delivered,
					      .at_ends = p->skel->progs.kafka_franz_delivered };
	const struct kafka_target *k = &t->kafka;
	struct probe_site part;
	size_t i;
	int err;

	err = attach_site(p, &promise, pid, t->path, &k->fz_promise, c, n);
	err = err ?: attach_site(p, &sync, pid, t->path, &k->fz_sync, c, n);
	err = err ?: attach_site(p, &produce, pid, t->path, &k->fz_produce, c, n);
	err = err ?: attach_site(p, &poll, pid, t->path, &k->fz_poll, c, n);
	err = err ?: attach_site(p, &poll, pid, t->path, &k->fz_poll_fetches, c, n);
	err = err ?: attach_site(p, &settle_rets, pid, t->path, &k->fz_each, c, n);
	/* Next: its entry ends a record, its RETs hand the next one over. */
	part = k->fz_next;
	part.nrets = part.nends = 0;
	err = err ?: attach_site(p, &settle, pid, t->path, &part, c, n);
	part = k->fz_next;
	part.nentry_calls = 0;
	err = err ?: attach_site(p, &delivered, pid, t->path, &part, c, n);
	for (i = 0; !err && i < k->fz_nnext_calls; i++) {
		err = add_probe(p, p->skel->progs.kafka_franz_delivered, t->path, pid,
				k->fz_next_calls[i],
				c | (uint64_t)FRANZ_AT_NEXT_CALL << COOKIE_OP_SHIFT, false);
		n->emulated += !err;
	}
	return err;
}

/*
 * sarama's consumer groups: where a claim's channel is told (its goroutine's start, its
 * partition consumer's return, MarkMessage) and the handlers' RETs, which end a message, before
 * the receives; at each, where it returns to (which hands a message over) before its CALL.
 */
static int attach_sarama_groups(struct probes *p, struct target *t, pid_t pid, uint32_t c,
				struct probe_counts *n)
{
	const struct site_progs claim = { .entry = p->skel->progs.kafka_sarama_claim };
	const struct site_progs partition = { .at_rets = p->skel->progs.kafka_sarama_partition };
	const struct site_progs mark = { .entry = p->skel->progs.kafka_sarama_mark };
	const struct site_progs settle = { .at_rets = p->skel->progs.kafka_settle };
	const struct kafka_target *k = &t->kafka;
	struct probe_site part;
	uint64_t kind;
	size_t i;
	int err;

	err = attach_site(p, &claim, pid, t->path, &k->sm_consume, c, n);
	err = err ?: attach_site(p, &partition, pid, t->path, &k->sm_partition, c, n);
	err = err ?: attach_site(p, &mark, pid, t->path, &k->sm_mark, c, n);
	for (i = 0; !err && i < k->sm_nhandlers; i++) {
		part = k->sm_handlers[i];
		part.nends = 0;
		err = attach_site(p, &settle, pid, t->path, &part, c, n);
	}
	for (i = 0; !err && i < k->sm_nrecvs; i++) {
		const struct call_pair *r = &k->sm_recvs[i];

		kind = (uint64_t)r->tag << COOKIE_OP_SHIFT;
		err = add_probe(p, p->skel->progs.kafka_sarama_received, t->path, pid,
				   r->after.off, end_cookie(&r->after, c) | kind, false);
		*(r->after.emulated ? &n->emulated : &n->stepped) += !err;
		err = err ?: add_probe(p, p->skel->progs.kafka_sarama_recv, t->path, pid, r->call,
				       c | kind, true);
		n->emulated += !err;
	}
	return err;
}

/*
 * sarama's AsyncProducer: where one is made and the dispatcher's receive, which tell an input
 * channel, and where sarama is done with messages, before the application's sends, which begin
 * a message.
 */
static int attach_sarama_async(struct probes *p, struct target *t, pid_t pid, uint32_t c,
			       struct probe_counts *n)
{
	const struct {
		const struct probe_site *site;
		enum sarama_end kind;
	} ends[] = { { &t->kafka.sm_successes, SARAMA_END_SUCCESSES },
		     { &t->kafka.sm_errors, SARAMA_END_ERRORS },
		     { &t->kafka.sm_error, SARAMA_END_ERROR } };
	const struct site_progs made = { .at_rets = p->skel->progs.kafka_sarama_made };
	const struct kafka_target *k = &t->kafka;
	const struct probe_site *s;
	uint64_t op;
	size_t i;
	int err;

	err = attach_site(p, &made, pid, t->path, &k->sm_made, c, n);
	for (i = 0; !err && i < sizeof(ends) / sizeof(ends[0]); i++) {
		s = ends[i].site;
		if (!s->addr)
			continue;
		op = (uint64_t)ends[i].kind << COOKIE_OP_SHIFT;
		err = add_probe(p, p->skel->progs.kafka_sarama_end, t->path, pid, s->entry_off,
				c | op, true);
		*(s->entry_emulated ? &n->emulated : &n->stepped) += !err;
	}
	for (i = 0; !err && i < k->sm_ninputs; i++) {
		err = add_probe(p, p->skel->progs.kafka_sarama_input, t->path, pid,
				k->sm_inputs[i].call, c, true);
		n->emulated += !err;
	}
	for (i = 0; !err && i < k->sm_nsends; i++) {
		const struct call_pair *send = &k->sm_sends[i];

		op = (uint64_t)send->tag << COOKIE_OP_SHIFT;
		/* A select's return, which says whether it sent, before its CALL. */
		if (send->tag == SEND_SELECT) {
			err = add_probe(p, p->skel->progs.kafka_sarama_offered, t->path, pid,
					send->after.off, end_cookie(&send->after, c) | op, false);
			*(send->after.emulated ? &n->emulated : &n->stepped) += !err;
		}
		err = err ?: add_probe(p, p->skel->progs.kafka_sarama_send, t->path, pid,
				       send->call, c | op, true);
		n->emulated += !err;
	}
	return err;
}

/*
 * kafka-go's probes: the sends' entries and ends; where a goroutine is done with a message (its
 * next read's entry, a commit's, the reader's close); the reads' ends that hand one over. The
 * ends that begin a message go last, so that none begins without the probes that end it.
 */
static int attach_kafka(struct probes *p, struct target *t, pid_t pid, uint32_t c,
			struct probe_counts *n)
{
	const struct site_progs send = { .entry = p->skel->progs.kafka_send_entry,
					 .at_rets = p->skel->progs.kafka_send_end,
					 .at_ends = p->skel->progs.kafka_send_end };
	const struct site_progs settle = { .entry = p->skel->progs.kafka_settle };
	const struct site_progs fetch = { .entry = p->skel->progs.kafka_fetch_entry };
	const struct site_progs delivered = { .at_rets = p->skel->progs.kafka_delivered,
					      .at_ends = p->skel->progs.kafka_delivered };
	const struct site_progs sarama_one = { .entry = p->skel->progs.kafka_sarama_one_entry,
					       .at_rets = p->skel->progs.kafka_sarama_one_end,
					       .at_ends = p->skel->progs.kafka_sarama_one_end };
	const struct site_progs sarama_many = { .entry = p->skel->progs.kafka_sarama_many_entry,
						.at_rets = p->skel->progs.kafka_send_end,
						.at_ends = p->skel->progs.kafka_send_end };
	const struct kafka_target *k = &t->kafka;
	struct probe_site entry_only;
	size_t i;
	int err;

	err = attach_site(p, &send, pid, t->path, &k->send, c, n);
	/* SendMessage's end without its RETs, before its entry: the Jcc that tests its error. */
	if (!err && k->sm_sent && k->sarama_one.addr) {
		err = add_probe(p, p->skel->progs.kafka_sarama_sent, t->path, pid, k->sm_sent_at,
				c | (uint64_t)k->sm_sent_reg << COOKIE_OP_SHIFT, false);
		n->emulated += !err;
	}
	err = err ?: attach_site(p, &sarama_one, pid, t->path, &k->sarama_one, c, n);
	err = err ?: attach_site(p, &sarama_many, pid, t->path, &k->sarama_many, c, n);
	err = err ?: attach_site(p, &settle, pid, t->path, &k->commit, c, n);
	err = err ?: attach_site(p, &settle, pid, t->path, &k->close, c, n);
	/* FetchMessage's entry apart from its ends, which go with ReadMessage's. */
	entry_only = k->fetch;
	entry_only.nrets = entry_only.nends = 0;
	err = err ?: attach_site(p, &fetch, pid, t->path, &entry_only, c, n);
	entry_only = k->fetch;
	entry_only.nentry_calls = 0;
	err = err ?: attach_site(p, &delivered, pid, t->path, &entry_only, c, n);
	err = err ?: attach_site(p, &delivered, pid, t->path, &k->read, c, n);
	/* The reads' own emulated instructions on their way to a RET that returns a Message. */
	for (i = 0; !err && i < k->nhandover; i++) {
		err = add_probe(p, p->skel->progs.kafka_handed, t->path, pid, k->handover[i].off,
				c | (uint64_t)i << COOKIE_OP_SHIFT, false);
		n->emulated += !err;
	}
	err = err ?: attach_sarama_groups(p, t, pid, c, n);
	err = err ?: attach_sarama_async(p, t, pid, c, n);
	return err ?: attach_franz(p, t, pid, c, n);
}

/* Whether T sends Kafka messages, whose trace context the writer's Kafka part adds. */
static bool produces(const struct target *t)
{
	return t->kafka.send.addr || t->kafka.sarama_one.addr || t->kafka.sarama_many.addr ||
	       t->kafka.sm_nsends || t->kafka.fz_sync.addr || t->kafka.fz_produce.addr;
}

/*
 * Whether T makes calls whose trace context the socket-layer writer sends out: HTTP and gRPC
 * calls, and Kafka sends (their produce requests' records). A producer's connections to its
 * brokers are mostly open before gospan comes (its earlier sends, its metadata requests), and
 * are kept: tracked only from its first send on (at the sync after it), the sends until then
 * would go without context.
 */
static bool makes_calls(const struct target *t)
{
	return t->round_trip.addr || t->grpc.new_stream.addr || t->fasthttp.client.addr ||
	       produces(t);
}

/*
 * --cpu-time's tracepoint on the kernel's thread switches, once for all targets: it stops and
 * restarts the clocks of the goroutines the threads run (bpf/cputime.bpf.c). It stays when a
 * target's attach fails: without a followed thread it does nothing but look one up.
 */
static int attach_cpu_switch(struct probes *p)
{
	struct bpf_program *prog;
	int err;

	if (p->cpu_switch)
		return 0;
	prog = loaded(p, p->skel->progs.cpu_switch);
	if (!prog)
		return errno ? -errno : -ENOENT;
	p->cpu_switch = bpf_program__attach(prog);
	if (!p->cpu_switch) {
		err = -errno;
		pr_err("cannot attach to the kernel's sched_switch tracepoint for on-CPU time: %s "
		       "(it needs the kernel's BTF, /sys/kernel/btf/vmlinux)",
		       strerror(-err));
		return err;
	}
	return 0;
}

int probes__attach(struct probes *p, struct target *t, pid_t pid, bool follow_goroutines,
		   uint32_t *cookie, struct probe_counts *n)
{
	const struct site_progs server = { .entry = p->skel->progs.serve_http_entry,
					   .at_rets = p->skel->progs.serve_http_return,
					   .at_ends = p->skel->progs.serve_http_return };
	const struct site_progs server_end = { .at_rets = p->skel->progs.serve_http_return,
					       .at_ends = p->skel->progs.serve_http2_done };
	const struct site_progs panic = { .entry = p->skel->progs.go_panic };
	const struct site_progs started = { .entry = p->skel->progs.process_started };
	const struct site_progs client = { .entry = p->skel->progs.client_entry,
					   .at_rets = p->skel->progs.client_return,
					   .at_ends = p->skel->progs.client_return,
					   .success = p->skel->progs.client_success };
	const struct site_progs marker = { .at_ends = p->skel->progs.mark_request };
	const struct site_progs newg = { .at_rets = p->skel->progs.goroutine_created,
					 .at_ends = p->skel->progs.goroutine_created };
	const struct site_progs cpu_on = { .entry = p->skel->progs.cpu_execute };
	const struct site_progs cpu_off = { .entry = p->skel->progs.cpu_schedule };
	const struct site_progs rpc_server = { .entry = p->skel->progs.grpc_server_entry };
	const struct site_progs rpc_status = { .entry = p->skel->progs.grpc_server_status };
	const struct site_progs rpc_client = { .entry = p->skel->progs.grpc_client_entry };
	const struct site_progs rpc_stream = { .entry = p->skel->progs.grpc_client_stream };
	const struct site_progs rpc_finish = { .entry = p->skel->progs.grpc_client_end };
	const struct site_progs rpc_fields = { .at_rets = p->skel->progs.grpc_header_fields,
					       .at_ends = p->skel->progs.grpc_header_fields };
	const struct site_progs rpc_header = { .at_ends = p->skel->progs.grpc_write_header };
	/* database/sql's entries tell a driver's connection by its methods' addresses (entry_at). */
	const struct site_progs sql_call = { .entry = p->skel->progs.db_sql_entry,
					     .at_rets = p->skel->progs.db_sql_end,
					     .at_ends = p->skel->progs.db_sql_end,
					     .entry_at = true };
	const struct site_progs sql_stmt_call = { .entry = p->skel->progs.db_sql_stmt_entry,
						  .at_rets = p->skel->progs.db_sql_end,
						  .at_ends = p->skel->progs.db_sql_end,
						  .entry_at = true };
	const struct site_progs sql_begin = { .entry = p->skel->progs.db_sql_begin,
					      .at_rets = p->skel->progs.db_sql_end,
					      .at_ends = p->skel->progs.db_sql_end,
					      .entry_at = true };
	const struct site_progs sql_commit = { .entry = p->skel->progs.db_sql_commit,
					       .at_rets = p->skel->progs.db_sql_tx_end,
					       .at_ends = p->skel->progs.db_sql_tx_end };
	const struct site_progs sql_rollback = { .entry = p->skel->progs.db_sql_rollback,
						 .at_rets = p->skel->progs.db_sql_tx_end,
						 .at_ends = p->skel->progs.db_sql_tx_end };
	const struct site_progs sql_stmt = { .entry = p->skel->progs.db_sql_stmt };
	const struct site_progs sql_prepare = { .entry = p->skel->progs.db_sql_prepare };
	const struct site_progs pgx = { .entry = p->skel->progs.db_pgx_entry,
					.at_rets = p->skel->progs.db_pgx_end,
					.at_ends = p->skel->progs.db_pgx_end,
					.success = p->skel->progs.db_pgx_success };
	const struct site_progs pgx_batch = { .entry = p->skel->progs.db_pgx_batch_entry,
					      .at_rets = p->skel->progs.db_pgx_end,
					      .at_ends = p->skel->progs.db_pgx_end };
	const struct site_progs redis = { .entry = p->skel->progs.db_redis_entry,
					  .at_rets = p->skel->progs.db_redis_cmd_end,
					  .at_ends = p->skel->progs.db_redis_cmd_end };
	const struct site_progs redis_pipe = { .entry = p->skel->progs.db_redis_pipeline_entry,
					       .at_rets = p->skel->progs.db_redis_end,
					       .at_ends = p->skel->progs.db_redis_end };
	const struct grpc_target *g = &t->grpc;
	const struct db_target *d = &t->db;
	size_t first = uprobes__mark(p->uprobes);
	uint32_t c = p->ntargets;
	int err;

	memset(n, 0, sizeof(*n));
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

	/* HTTP/2's ends before the entry they end. */
	err = attach_site(p, &server_end, pid, t->path, &t->serve_http2, c, n);
	err = err ?: attach_site(p, &server, pid, t->path, &t->serve_http, c, n);
	err = err ?: attach_site(p, &panic, pid, t->path, &t->gopanic, c, n);
	err = err ?: attach_site(p, &client, pid, t->path, &t->round_trip, c, n);
	/* gRPC: the status writer and the stream's end before the calls' entries. */
	err = err ?: attach_site(p, &rpc_status, pid, t->path, &g->write_status, c, n);
	err = err ?: attach_site(p, &rpc_status, pid, t->path, &g->handler_write_status, c, n);
	err = err ?: attach_site(p, &rpc_server, pid, t->path, &g->handle_stream, c, n);
	err = err ?: attach_site(p, &rpc_finish, pid, t->path, &g->attempt_finish, c, n);
	err = err ?: attach_site(p, &rpc_stream, pid, t->path, &g->new_attempt, c, n);
	err = err ?: attach_site(p, &rpc_client, pid, t->path, &g->new_stream, c, n);
	if (p->wire && g->new_stream.addr) {
		err = err ?: attach_site(p, &rpc_header, pid, t->path, &g->write_header, c, n);
		err = err ?: attach_site(p, &rpc_fields, pid, t->path, &g->header_fields, c, n);
	}
	if (p->wire && t->round_trip.addr)
		err = err ?: attach_site(p, &marker, pid, t->path, &t->inject, c, n);
	/* Data stores: statements' texts are noted before the calls that read them begin. */
	err = err ?: attach_site(p, &sql_stmt, pid, t->path, &d->sql_stmt_query, c, n);
	err = err ?: attach_site(p, &sql_stmt, pid, t->path, &d->sql_stmt_exec, c, n);
	err = err ?: attach_site(p, &sql_prepare, pid, t->path, &d->sql_prepare, c, n);
	err = err ?: attach_site(p, &sql_call, pid, t->path, &d->sql_query, c, n);
	err = err ?: attach_site(p, &sql_call, pid, t->path, &d->sql_exec, c, n);
	err = err ?: attach_site(p, &sql_stmt_call, pid, t->path, &d->sql_rows, c, n);
	err = err ?: attach_site(p, &sql_stmt_call, pid, t->path, &d->sql_result, c, n);
	err = err ?: attach_site(p, &sql_begin, pid, t->path, &d->sql_begin, c, n);
	err = err ?: attach_site(p, &sql_commit, pid, t->path, &d->sql_commit, c, n);
	err = err ?: attach_site(p, &sql_rollback, pid, t->path, &d->sql_rollback, c, n);
	err = err ?: attach_site(p, &pgx, pid, t->path, &d->pgx_query, c, n);
	err = err ?: attach_site(p, &pgx, pid, t->path, &d->pgx_exec, c, n);
	err = err ?: attach_site(p, &pgx_batch, pid, t->path, &d->pgx_batch, c, n);
	err = err ?: attach_site(p, &redis, pid, t->path, &d->redis_process, c, n);
	err = err ?: attach_site(p, &redis_pipe, pid, t->path, &d->redis_pipeline, c, n);
	err = err ?: attach_site(p, &redis_pipe, pid, t->path, &d->redis_tx_pipeline, c, n);
	if (follow_goroutines)
		err = err ?: attach_site(p, &newg, pid, t->path, &t->newproc1, c, n);
	err = err ?: attach_functions(p, t, pid, c, n);
	err = err ?: attach_routes(p, t, pid, c, n);
	err = err ?: attach_fasthttp(p, t, pid, c, n);
	err = err ?: attach_kafka(p, t, pid, c, n);
	if (!err && p->wire && produces(t))
		wire__enable_kafka(p->wire);
	if (t->cfg.cpu_time) {
		err = err ?: attach_cpu_switch(p);
		err = err ?: attach_site(p, &cpu_off, pid, t->path, &t->cpu_schedule, c, n);
		err = err ?: attach_site(p, &cpu_on, pid, t->path, &t->cpu_execute, c, n);
	}
	/*
	 * --exe: the binary's processes to come get the writer on their cgroup as they start
	 * (probes__track_process, from their process_start record), not at the sync after their
	 * first call, whose connection would be made before it. One hit a process: not counted
	 * with the per-request single-stepped hits. A process already past runtime.main never
	 * hits it: add_target tracks the one found, the others join at their first call.
	 */
	if (pid == -1 && p->wire && makes_calls(t))
		err = err ?: attach_site(p, &started, pid, t->path, &t->runtime_main, c, n);
	err = err ?: uprobes__commit(p->uprobes);
	if (err) {
		/* All or nothing: an entry without its ends would only fill the in-flight map. */
		uprobes__rollback(p->uprobes, first);
		return err;
	}
	p->ntargets++;
	*cookie = c;
	return (int)(n->emulated + n->stepped);
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

/* Sums the per-CPU counters 0..N-1 of the per-CPU array FD into OUT. */
static int sum_percpu(struct probes *p, int fd, uint32_t n, uint64_t *out)
{
	uint64_t *vals;
	uint32_t r;
	int err = 0, cpu;

	vals = calloc(p->ncpus, sizeof(*vals));
	if (!vals)
		return -ENOMEM;
	for (r = 0; r < n; r++) {
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

int probes__drops(struct probes *p, uint64_t out[DROP__COUNT])
{
	return sum_percpu(p, bpf_map__fd(p->skel->maps.drops), DROP__COUNT, out);
}

/*
 * How many times PROG ran on the targets into *RUNS: 0 for a program that is not loaded, and for
 * gospan's own start-up measurement, which is no probe of theirs.
 */
static int program_runs(struct probes *p, struct bpf_program *prog, uint64_t *runs)
{
	struct bpf_prog_info info = {};
	__u32 len = sizeof(info);
	int fd = bpf_program__fd(prog);

	*runs = 0;
	if (fd < 0 || prog == p->skel->progs.calibrate)
		return 0;
	if (bpf_obj_get_info_by_fd(fd, &info, &len))
		return -errno;
	*runs = info.run_cnt;
	return 0;
}

/* The copy of the object that loaded group G's programs (G == NGROUPS: the first); NULL: none. */
static struct bpf_object *copy_obj(const struct probes *p, size_t g)
{
	if (g == NGROUPS)
		return p->skel->obj;
	return p->group[g] ? p->group[g]->obj : NULL;
}

int probes__hits(struct probes *p, uint64_t *hits, char *buf, size_t size)
{
	struct bpf_program *prog;
	size_t len = 0, g;
	uint64_t runs;
	int err;

	*hits = 0;
	if (buf)
		buf[0] = '\0';
	for (g = 0; g <= NGROUPS; g++) {
		if (!copy_obj(p, g))
			continue;
		bpf_object__for_each_program(prog, copy_obj(p, g)) {
			err = program_runs(p, prog, &runs);
			if (err)
				return err;
			*hits += runs;
			if (buf && runs && len < size)
				len += snprintf(buf + len, size - len, "%s%s=%llu",
						len ? " " : "", bpf_program__name(prog),
						(unsigned long long)runs);
		}
	}
	return 0;
}

bool probes__can_propagate(const struct probes *p)
{
	return p->wire != NULL;
}

int probes__track_process(struct probes *p, pid_t pid, const struct target *t)
{
	if (!p->wire || !makes_calls(t))
		return 0;
	return wire__add_process(p->wire, pid, &t->cfg);
}

void probes__sync(struct probes *p)
{
	if (p->wire)
		wire__sync(p->wire);
}

int probes__propagation(struct probes *p, uint64_t out[PROP__COUNT])
{
	return sum_percpu(p, bpf_map__fd(p->skel->maps.propagation), PROP__COUNT, out);
}

/*
 * Never a read, change and write back of the goroutine's `goroutines` entry: BPF rewrites it in
 * place, and a request the goroutine began in between would be lost to the copy written back.
 * The goroutine's own probes end the call when they next find it (bpf/include/probe.bpf.h).
 */
int probes__forget(struct probes *p, uint32_t pid, uint64_t goid, uint64_t start_ns)
{
	struct goroutine_key key = { .pid = pid, .goid = goid };

	if (bpf_map_update_elem(bpf_map__fd(p->skel->maps.forgotten), &key, &start_ns, BPF_ANY))
		return -errno;
	return 0;
}

int probes__in_flight(struct probes *p, uint32_t type, uint32_t pid, uint64_t goid,
		      uint64_t start_ns)
{
	struct goroutine_key key = { .pid = pid, .goid = goid };
	struct goroutine_state gs;
	struct client_call cc;
	int err;

	/* Read, never written: a copy torn by the goroutine's own probe only delays the answer. */
	switch (type) {
	case EVENT_HTTP_SERVER_START:
		err = bpf_map_lookup_elem(bpf_map__fd(p->skel->maps.goroutines), &key, &gs);
		return err ? (errno == ENOENT ? 0 : -errno) : gs.server.start_ns == start_ns;
	case EVENT_HTTP_CLIENT_START:
		err = bpf_map_lookup_elem(bpf_map__fd(p->skel->maps.client_calls), &key, &cc);
		return err ? (errno == ENOENT ? 0 : -errno) : cc.start_ns == start_ns;
	default:
		/* Function frames and gRPC calls: kept in shapes events.h does not share. */
		return -EOPNOTSUPP;
	}
}

void probes__detach(struct probes *p)
{
	uprobes__detach(p->uprobes);
}

void probes__destroy(struct probes *p)
{
	size_t g;

	if (!p)
		return;
	uprobes__free(p->uprobes);
	bpf_link__destroy(p->cpu_switch);
	emulation__release();
	wire__destroy(p->wire);
	ring_buffer__free(p->rb);
	for (g = 0; g < NGROUPS; g++)
		http_bpf__destroy(p->group[g]);
	http_bpf__destroy(p->skel);
	free(p);
}
