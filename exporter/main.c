// SPDX-License-Identifier: MIT
/*
 * gospan: traces a running Go service's HTTP requests with eBPF and exports them as
 * OpenTelemetry spans. The lifecycle is one straight line: settings -> find the target -> analyse
 * it -> start the exporter -> load and attach the probes -> poll until told to stop -> detach,
 * drain, flush, summarise.
 */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <linux/capability.h>
#include <malloc.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "core/caps.h"
#include "core/clock.h"
#include "core/config.h"
#include "export/console.h"
#include "analysis/datastores.h"
#include "analysis/disasm.h"
#include "analysis/elf.h"
#include "analysis/embed.h"
#include "export/export.h"
#include "export/export_http.h"
#include "export/metrics_export.h"
#include "export/prometheus.h"
#include "analysis/cputime.h"
#include "analysis/funcresolve.h"
#include "analysis/functions.h"
#include "analysis/gobin.h"
#include "core/log.h"
#include "analysis/offsets.h"
#include "capture/probes.h"
#include "capture/process.h"
#include "capture/records.h"
#include "model/metrics.h"
#include "model/semconv.h"
#include "model/span.h"
#include "analysis/target.h"
#include "core/version.h"

extern char **environ;

/*
 * The reader wakes every POLL_MS, or sooner when a quarter of the ring buffer fills: records do
 * not wake it one by one. Under load it comes back after POLL_BUSY_MS instead, so that what one
 * poll hands the export queue stays well under OTEL_BSP_MAX_QUEUE_SIZE (2048 spans are 50 ms at
 * 41,000 spans/s, less with a batch in flight): the queue took drops from about 28,000 spans/s
 * with 50 ms polls alone.
 */
#define POLL_MS 50
#define POLL_BUSY_MS 10
#define POLL_BUSY_RECORDS 64 /* records in the last poll that make the reader come back soon */
#define TICK_NS 500000000ULL		/* panic grace checks, target liveness */
#define CLOCK_RESYNC_NS 1000000000ULL	/* follow clock adjustments within a second */
#define STATUS_EVERY_NS 10000000000ULL	/* --verbose status line */
#define PANIC_GRACE_NS 5000000000ULL	/* a recovered panic still returns within this */
#define WAIT_EXE_POLL_US 200000
#define FLUSH_CHECK_MS 100     /* how soon a second signal cuts the final export short */
#define FLUSH_CUT_GRACE_MS 200 /* what the batch in the sink still gets then */
#define FLUSH_SAY_MS 1000      /* a final export this slow says how to cut it short */

static volatile sig_atomic_t stop_signal;
static volatile sig_atomic_t nsignals; /* up to 2: a second one cuts the final export short */

static void on_signal(int sig)
{
	stop_signal = sig;
	if (nsignals < 2)
		nsignals++;
}

/* SIGINT and SIGTERM: what stops gospan. */
static void stop_signals(sigset_t *set)
{
	sigemptyset(set);
	sigaddset(set, SIGINT);
	sigaddset(set, SIGTERM);
}

/*
 * SIGINT and SIGTERM stop gospan; SIGPIPE is ignored, so that a collector closing the connection
 * or a stdout nobody reads any more (gospan | head) is a write that fails, said and counted, not
 * the end of gospan. The stop signals are held until release_signals(): threads started
 * meanwhile (the export thread, the uprobe emulation trials' reaper) inherit the mask, so only
 * this thread, the one that acts on them, ever takes them.
 */
static int install_signals(void)
{
	struct sigaction sa = { .sa_handler = on_signal }, ign = { .sa_handler = SIG_IGN };
	sigset_t set;

	stop_signals(&sa.sa_mask);
	sigemptyset(&ign.sa_mask);
	/* No SA_RESTART: a signal must break the ring-buffer wait. */
	if (sigaction(SIGINT, &sa, NULL) || sigaction(SIGTERM, &sa, NULL) ||
	    sigaction(SIGPIPE, &ign, NULL))
		return -errno;
	stop_signals(&set);
	return -pthread_sigmask(SIG_BLOCK, &set, NULL);
}

/* Lets the held stop signals in: the setup that starts threads is over. */
static int release_signals(void)
{
	sigset_t set;

	stop_signals(&set);
	return -pthread_sigmask(SIG_UNBLOCK, &set, NULL);
}

/*
 * Whether reading PID's /proc/PID/exe and maps takes CAP_SYS_PTRACE: the process is another
 * user's, or gospan is refused them. A process that is gone is not: resolve_target says so.
 */
static bool needs_ptrace(pid_t pid)
{
	char path[64], buf[PATH_MAX];
	struct stat st;

	snprintf(path, sizeof(path), "/proc/%d", (int)pid);
	if (stat(path, &st))
		return false;
	if (st.st_uid != geteuid())
		return true;
	snprintf(path, sizeof(path), "/proc/%d/exe", (int)pid);
	return readlink(path, buf, sizeof(buf)) < 0 && (errno == EACCES || errno == EPERM);
}

/*
 * Checks, before anything is loaded, the capabilities gospan cannot trace without: CAP_BPF and
 * CAP_PERFMON (or CAP_SYS_ADMIN, which covers both) to load and attach its programs, and
 * CAP_SYS_PTRACE when a --pid target is another user's. Those that only cost a part
 * (CAP_NET_ADMIN for outgoing trace context, CAP_DAC_READ_SEARCH for another user's environment)
 * are said where they are missed. What is missing is said in one line, with how to grant it:
 * -EPERM.
 */
static int check_privileges(const struct config *cfg)
{
	char self[PATH_MAX], missing[96], setcap[96], unit[96], why[160], subject[PATH_MAX + 16];
	uint64_t have, need, lack;
	size_t i, len = 0;
	pid_t other = 0;
	ssize_t n;

	if (caps__effective(&have))
		return 0; /* unknown: the kernel will say what it refuses */
	need = have & CAPS_BIT(CAP_SYS_ADMIN) ? CAPS_BIT(CAP_SYS_ADMIN) :
						CAPS_BIT(CAP_BPF) | CAPS_BIT(CAP_PERFMON);
	for (i = 0; !other && i < cfg->npids; i++)
		if (needs_ptrace(cfg->pids[i]))
			other = cfg->pids[i];
	if (other)
		need |= CAPS_BIT(CAP_SYS_PTRACE);
	lack = need & ~have;
	if (!lack)
		return 0;

	why[0] = '\0';
	if (lack & (CAPS_BIT(CAP_BPF) | CAPS_BIT(CAP_PERFMON)))
		len = snprintf(why, sizeof(why), "CAP_BPF and CAP_PERFMON load the probes, or "
						 "CAP_SYS_ADMIN in their place");
	if (lack & CAPS_BIT(CAP_SYS_PTRACE))
		snprintf(why + len, sizeof(why) - len, "%sCAP_SYS_PTRACE reads the process of "
						       "another user", len ? "; " : "");
	caps__list(lack, CAPS_PROSE, missing, sizeof(missing));
	caps__list(need, CAPS_SETCAP, setcap, sizeof(setcap));
	caps__list(need, CAPS_SYSTEMD, unit, sizeof(unit));
	n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (n > 0)
		self[n] = '\0';
	else
		strcpy(self, "gospan");
	if (other || cfg->npids)
		snprintf(subject, sizeof(subject), "process %d", (int)(other ?: cfg->pids[0]));
	else
		snprintf(subject, sizeof(subject), "'%s'", cfg->exes[0]);
	pr_err("cannot trace %s: missing %s (%s); run gospan as root, or grant them: sudo setcap "
	       "%s=ep '%s' (in a systemd unit: AmbientCapabilities=%s)",
	       subject, missing, why, setcap, self, unit);
	return -EPERM;
}

/*
 * The first process running the file at PATH: the same device and inode when PATH exists here,
 * else (PATH_HERE false) the same path as the process itself sees it, which is how a binary in
 * another container's mount namespace is named. 0 if none.
 */
static pid_t find_process_of(const char *path, bool path_here)
{
	char exe[64], link[PATH_MAX];
	struct stat want, st;
	struct dirent *d;
	pid_t found = 0;
	ssize_t n;
	DIR *dir;

	if (path_here && stat(path, &want))
		return 0;
	dir = opendir("/proc");
	if (!dir)
		return 0;
	while ((d = readdir(dir))) {
		char *end;
		long pid = strtol(d->d_name, &end, 10);

		if (*end || pid <= 0 || pid == getpid())
			continue;
		snprintf(exe, sizeof(exe), "/proc/%ld/exe", pid);
		if (path_here) {
			if (!stat(exe, &st) && st.st_dev == want.st_dev &&
			    st.st_ino == want.st_ino) {
				found = (pid_t)pid;
				break;
			}
			continue;
		}
		n = readlink(exe, link, sizeof(link) - 1);
		if (n <= 0)
			continue;
		link[n] = '\0';
		if (!strcmp(link, path)) {
			found = (pid_t)pid;
			break;
		}
	}
	closedir(dir);
	return found;
}

/*
 * For --exe: the binary to analyse and attach to, waiting for its first process. A path that
 * does not exist in gospan's own mount namespace is looked for inside the processes' (another
 * container's), and reached through the process's /proc/PID/exe: the very file it runs, where
 * /proc/PID/root/PATH would resolve an absolute link inside the container against gospan's own
 * root, letting the container point gospan at a file of the host's. The uprobes sit on that
 * file's inode, so later processes of the same file are traced too.
 */
/*
 * A file --exe names in gospan's own mount namespace must be a Go program gospan can trace: one
 * that is not (/bin/ls, a truncated binary, Go before 1.17) is refused now, with the reason, not
 * awaited. 0, or a negative errno with the reason logged.
 */
static int check_exe(const char *path)
{
	struct elf_file *ef;
	struct gobin *gb;
	int err = 0;

	ef = elf_file__open(path);
	if (!ef)
		return -errno;
	gb = gobin__read(ef);
	if (!gb) {
		err = -errno;
	} else {
		err = gobin__check_abi(gb, elf_file__machine(ef), path);
	}
	gobin__free(gb);
	elf_file__close(ef);
	return err;
}

static int resolve_exe(const char *exe, char *path, size_t size, char *real, pid_t *pid)
{
	bool here = true, said = false;
	int err;

	if (!realpath(exe, real)) {
		if ((errno != ENOENT && errno != ENOTDIR) || exe[0] != '/' ||
		    strlen(exe) >= PATH_MAX) {
			pr_err("cannot trace '%s': %s", exe, strerror(errno));
			return -errno;
		}
		/* Not here: perhaps in a container. Matched as the processes see it. */
		here = false;
		strcpy(real, exe);
	} else {
		err = check_exe(real);
		if (err)
			return err;
	}
	while (!(*pid = find_process_of(real, here))) {
		if (stop_signal)
			return -EINTR;
		if (!said) {
			pr_info(here ? "waiting for a process running '%s'" :
				       "waiting for a process running '%s': not in this mount "
				       "namespace, looking for it in the processes' own",
				real);
			said = true;
		}
		usleep(WAIT_EXE_POLL_US);
	}
	if (here) {
		snprintf(path, size, "%s", real);
	} else if ((size_t)snprintf(path, size, "/proc/%d/exe", (int)*pid) >= size) {
		pr_err("cannot trace '%s': path too long", real);
		return -ENAMETOOLONG;
	} else {
		pr_info("found '%s' in the mount namespace of process %d", real, (int)*pid);
	}
	return 0;
}

/*
 * Picks the binary to analyse and probe: process ONLY_PID's (--pid), or EXE's (--exe), waiting
 * for its first process.
 */
static int resolve_target(pid_t only_pid, const char *exe, char *path, size_t size, char *name,
			  size_t name_size, pid_t *pid)
{
	char link[64], real[PATH_MAX];
	const char *base;
	ssize_t n;
	int err;

	if (only_pid) {
		*pid = only_pid;
		snprintf(link, sizeof(link), "/proc/%d/exe", (int)only_pid);
		n = readlink(link, real, sizeof(real) - 1);
		if (n < 0) {
			pr_err("cannot trace process %d: %s", (int)only_pid,
			       errno == ENOENT ? "no such process" : strerror(errno));
			return -ESRCH;
		}
		real[n] = '\0';
		/* /proc/PID/exe reaches the binary even when it was deleted or is in a container. */
		snprintf(path, size, "%s", link);
	} else {
		err = resolve_exe(exe, path, size, real, pid);
		if (err)
			return err;
	}
	base = strrchr(real, '/');
	base = base ? base + 1 : real;
	if (strlen(base) >= name_size) {
		pr_err("cannot trace '%s': executable name too long", real);
		return -ENAMETOOLONG;
	}
	strcpy(name, base);
	/* A deleted binary's link ends in " (deleted)": keep the name readable. */
	if ((n = strlen(name)) > 10 && !strcmp(name + n - 10, " (deleted)"))
		name[n - 10] = '\0';
	return 0;
}

/* One --pid or --exe. */
struct traced {
	struct target *target;
	pid_t only_pid; /* --pid; 0 for --exe, which traces every process of the file */
	pid_t pid;	/* the process found first */
	bool exited;	/* --pid: said once */
};

/* A count of spans lost, by the reason the summary gives it. */
struct drop {
	const char *reason;
	uint64_t n;
	bool cause; /* a cause of another count, not spans of its own: out of the total */
};

#define MAX_DROPS (DROP__COUNT + RECORDS_DROP__COUNT + 3)

/*
 * What gospan's own health metrics report, as of the reader's last tick: the metric reader's
 * thread reads it, the ring-buffer reader's writes it, and neither waits on the other for more
 * than a copy.
 */
struct health {
	pthread_mutex_t lock;
	struct exporter_stats spans;
	struct drop drops[MAX_DROPS];
	size_t ndrops;
};

/* Spans the reader hands over to the export queue at a time, at most. */
#define OUTBOX_SPANS 64

struct app {
	struct config cfg;
	struct offsets *tables;
	struct module_tables modules;
	struct functions *functions; /* --functions FILE; NULL: none */
	struct traced traced[CONFIG_MAX_TARGETS];
	size_t ntraced;
	struct exporter *exporter;
	/* Finished spans not yet handed to the exporter: one lock for many (flush_outbox). */
	struct span *outbox[OUTBOX_SPANS];
	size_t noutbox;
	struct process_table *processes;
	struct records *records;
	struct probes *probes;
	struct clock_sync clock;
	uint64_t discarded; /* OTEL_TRACES_EXPORTER=none */
	struct metrics *metrics; /* NULL: OTEL_METRICS_EXPORTER=none */
	struct metric_reader *metric_reader;
	struct prometheus *prometheus; /* OTEL_METRICS_EXPORTER=prometheus */
	struct resource *self; /* gospan's own resource, for its health metrics */
	struct health health;
};

/*
 * Hands the spans waiting in the outbox to the export queue, which counts its own drops. Called
 * after each poll of the ring buffer and whatever else may finish spans, so a span waits there
 * no longer than the records of one poll take to read.
 */
static void flush_outbox(struct app *app)
{
	if (!app->noutbox)
		return;
	exporter__submit_many(app->exporter, app->outbox, app->noutbox);
	app->noutbox = 0;
}

static void submit_span(void *ctx, struct span *s)
{
	struct app *app = ctx;

	if (!app->exporter) {
		app->discarded++;
		span__free(s);
		return;
	}
	/*
	 * Finished: its arena's unused tail need not wait in the queue with it. A span the queue
	 * has no room for is not copied first: its copy's place in a chunk would stay taken until
	 * every span around it in the chunk is sent, and under a full queue those places add up.
	 */
	if (exporter__has_room(app->exporter, app->noutbox))
		s = span__shrink(s);
	app->outbox[app->noutbox++] = s;
	if (app->noutbox == OUTBOX_SPANS)
		flush_outbox(app);
}

/* A panicked call's span keeps a place in the queue while it may still return. */
static int hold_place(void *ctx)
{
	struct app *app = ctx;

	if (!app->exporter)
		return -ENOSPC;
	flush_outbox(app); /* the spans that finished before it count against the queue first */
	return exporter__hold(app->exporter);
}

static void submit_held(void *ctx, struct span *s)
{
	struct app *app = ctx;

	flush_outbox(app); /* the spans that finished before it go first */
	exporter__submit_held(app->exporter, span__shrink(s)); /* held: app->exporter is set */
}

static bool process_busy(void *ctx, pid_t pid)
{
	return records__has_calls(ctx, pid);
}

static void forget_call(void *ctx, uint32_t pid, uint64_t goid, uint64_t start_ns)
{
	struct app *app = ctx;

	probes__forget(app->probes, pid, goid, start_ns);
}

static int call_in_flight(void *ctx, uint32_t type, uint32_t pid, uint64_t goid,
			  uint64_t start_ns)
{
	struct app *app = ctx;

	return probes__in_flight(app->probes, type, pid, goid, start_ns);
}

/*
 * A new process of an --exe target: its cgroup gets the socket-layer writer now, before its first
 * connection. A failure is said where it happens and costs only its trace context.
 */
static void process_started(void *ctx, uint32_t pid, uint32_t cookie)
{
	struct app *app = ctx;
	const struct target *t = process_table__target(app->processes, cookie);

	if (t)
		probes__track_process(app->probes, (pid_t)pid, t);
}

static int start_exporter(struct app *app)
{
	const struct config *cfg = &app->cfg;
	struct exporter_opts opts = {
		.max_queue = cfg->bsp_max_queue,
		.max_batch = cfg->bsp_max_batch,
		.delay_ms = cfg->bsp_schedule_delay_ms,
	};
	struct http_sink_opts http = {
		.url = cfg->traces.url,
		.headers = cfg->traces.headers,
		.nheaders = cfg->traces.nheaders,
		.timeout_ms = cfg->traces.timeout_ms,
		.batch_timeout_ms = cfg->bsp_export_timeout_ms,
		.gzip = cfg->traces.gzip,
		.json = cfg->traces.json,
		.ca_file = cfg->traces.ca_file,
		.client_cert = cfg->traces.client_cert,
		.client_key = cfg->traces.client_key,
	};

	switch (cfg->exporter) {
	case TRACES_EXPORTER_NONE:
		return 0;
	case TRACES_EXPORTER_CONSOLE:
		opts.ops = &console_sink_ops;
		/* --verbose adds every span's full line (ids, attributes) under its trace. */
		opts.ctx = console_sink__new_opts(
			&(struct console_opts){ .out = stdout, .verbose = cfg->verbose });
		break;
	case TRACES_EXPORTER_OTLP:
		opts.ops = &http_sink_ops;
		opts.ctx = http_sink__new(&http);
		break;
	}
	if (!opts.ctx)
		return -errno;
	app->exporter = exporter__new(&opts);
	if (!app->exporter) {
		int err = -errno;

		opts.ops->free(opts.ctx);
		pr_err("cannot start the exporter: %s", strerror(-err));
		return err;
	}
	return 0;
}

/* Every count of spans lost, by reason, as the summary says them: into OUT, how many. */
static size_t span_drops(struct app *app, const struct records_stats *rs,
			 const struct exporter_stats *es, struct drop *out)
{
	uint64_t bpf[DROP__COUNT] = {};
	size_t n = 0;
	int i;

	if (app->probes)
		probes__drops(app->probes, bpf);
#define DROP(name, count, is_cause)                                                                \
	out[n++] = (struct drop){ .reason = (name), .n = (count), .cause = (is_cause) }
	DROP("ringbuf_full", bpf[DROP_RINGBUF_FULL], false);
	DROP("inflight_map_full", bpf[DROP_INFLIGHT_FULL], false);
	DROP("no_target_config", bpf[DROP_NO_CONFIG], false);
	DROP("call_stack_full", bpf[DROP_STACK_FULL], false);
	/* A cause, not a span of its own: the call it ended is counted as end_lost. */
	DROP("end_without_entry", bpf[DROP_END_NO_ENTRY], true);
	DROP("scratch_busy", bpf[DROP_SCRATCH_BUSY], false);
	DROP("kafka_batch_too_big", bpf[DROP_KAFKA_BATCH], false);
	for (i = 0; i < RECORDS_DROP__COUNT; i++)
		DROP(records_drop_names[i], rs->dropped[i], false);
	DROP("queue_full", es->dropped_queue_full, false);
	DROP("export_failed", es->dropped_export_failed, false);
	DROP("not_flushed", es->dropped_not_flushed, false);
#undef DROP
	return n;
}

/* The health metrics' counts, now: on the ring-buffer reader's thread, each tick and at exit. */
static void update_health(struct app *app)
{
	struct records_stats rs = {};
	struct exporter_stats es = {};
	struct drop drops[MAX_DROPS];
	size_t n;

	if (!app->metrics)
		return;
	records__stats(app->records, &rs);
	if (app->exporter)
		exporter__stats(app->exporter, &es);
	n = span_drops(app, &rs, &es, drops);
	pthread_mutex_lock(&app->health.lock);
	app->health.spans = es;
	memcpy(app->health.drops, drops, n * sizeof(*drops));
	app->health.ndrops = n;
	pthread_mutex_unlock(&app->health.lock);
}

/*
 * A finished span, before sampling and the export queue: measured for the metrics. It may be an
 * exemplar when it goes on to be exported: sampled, and the queue has room (or a place held).
 */
static void measure_span(void *ctx, const struct span *s, bool sampled, bool held)
{
	struct app *app = ctx;
	bool exported = sampled && app->exporter &&
			app->cfg.exemplar_filter == EXEMPLAR_FILTER_TRACE_BASED &&
			(held || exporter__has_room(app->exporter, app->noutbox));

	metrics__record_span(app->metrics, s, exported);
}

/* gospan's own health, as the semantic conventions name an SDK's (otel.sdk.*). */
static const char *const sdk_keys[] = { "otel.component.type", "otel.component.name",
					SC_ERROR_TYPE };
static const char *const drop_keys[] = { "gospan.drop.reason" };
#define HEALTH_SUM(nm, what, u, is_counter, k)                                                     \
	{                                                                                          \
		.name = nm, .description = what, .unit = u, .kind = METRIC_SUM,                    \
		.monotonic = is_counter, .observed = true, .keys = k,                              \
		.nkeys = sizeof(k) / sizeof(k[0]),                                                 \
	}
static const struct metric_desc health_processed =
	HEALTH_SUM("otel.sdk.processor.span.processed",
		   "Spans the batch span processor took, or dropped (error.type).", "{span}", true,
		   sdk_keys);
static const struct metric_desc health_exported =
	HEALTH_SUM(METRIC_SPANS_EXPORTED,
		   "Spans whose export ended: sent, or lost (error.type).", "{span}", true,
		   sdk_keys);
static const struct metric_desc health_queue_size =
	HEALTH_SUM("otel.sdk.processor.span.queue.size", "Spans waiting in the export queue.",
		   "{span}", false, sdk_keys);
static const struct metric_desc health_queue_capacity =
	HEALTH_SUM("otel.sdk.processor.span.queue.capacity", "Spans the export queue can hold.",
		   "{span}", false, sdk_keys);
static const struct metric_desc health_points =
	HEALTH_SUM("otel.sdk.exporter.metric_data_point.exported",
		   "Metric points whose export ended: sent, or lost (error.type).",
		   "{data_point}", true, sdk_keys);
static const struct metric_desc health_dropped =
	HEALTH_SUM(METRIC_SPANS_DROPPED,
		   "Calls and spans gospan lost, by reason: what its summary line counts.", "{span}",
		   true, drop_keys);

/* One health point: DESC of COMPONENT, lost for ERROR (NULL: the ones that went well). */
static void observe_health(struct metrics *m, struct app *app, const struct metric_desc *desc,
			   const char *type, const char *name, const char *error, uint64_t value)
{
	struct attr a[3] = {
		{ .key = "otel.component.type", .type = ATTR_STRING, .s = type },
		{ .key = "otel.component.name", .type = ATTR_STRING, .s = name },
		{ .key = SC_ERROR_TYPE, .type = ATTR_STRING, .s = error },
	};

	metrics__observe(m, desc, app->self, a, error ? 3 : 2, (int64_t)value);
}

/* The metrics store's observe callback, on the thread that collects. */
static void observe_all_health(void *ctx, struct metrics *m)
{
	struct app *app = ctx;
	struct metric_reader_stats mr = {};
	const char *sp = "batching_span_processor", *spn = "batching_span_processor/0";
	const char *ex = app->cfg.traces.json ? "otlp_http_json_span_exporter" :
						"otlp_http_span_exporter";
	const char *mx = app->cfg.metrics.json ? "otlp_http_json_metric_exporter" :
						 "otlp_http_metric_exporter";
	char exn[64], mxn[64];
	struct health h;
	size_t i;

	snprintf(exn, sizeof(exn), "%s/0", ex);
	snprintf(mxn, sizeof(mxn), "%s/0", mx);
	pthread_mutex_lock(&app->health.lock);
	h = app->health;
	pthread_mutex_unlock(&app->health.lock);
	if (app->exporter) {
		observe_health(m, app, &health_processed, sp, spn, NULL,
			       h.spans.submitted - h.spans.dropped_queue_full);
		observe_health(m, app, &health_processed, sp, spn, "queue_full",
			       h.spans.dropped_queue_full);
		observe_health(m, app, &health_queue_size, sp, spn, NULL, h.spans.queue_depth);
		observe_health(m, app, &health_queue_capacity, sp, spn, NULL,
			       (uint64_t)app->cfg.bsp_max_queue);
		observe_health(m, app, &health_exported, ex, exn, NULL, h.spans.exported);
		observe_health(m, app, &health_exported, ex, exn, "export_failed",
			       h.spans.dropped_export_failed);
		observe_health(m, app, &health_exported, ex, exn, "not_flushed",
			       h.spans.dropped_not_flushed);
		observe_health(m, app, &health_exported, ex, exn, "rejected", h.spans.rejected);
	}
	if (app->metric_reader) {
		metric_reader__stats(app->metric_reader, &mr);
		observe_health(m, app, &health_points, mx, mxn, NULL, mr.points);
		observe_health(m, app, &health_points, mx, mxn, "export_failed", mr.points_failed);
	}
	for (i = 0; i < h.ndrops; i++) {
		struct attr a = { .key = "gospan.drop.reason", .type = ATTR_STRING,
				  .s = h.drops[i].reason };

		if (!h.drops[i].cause)
			metrics__observe(m, &health_dropped, app->self, &a, 1, (int64_t)h.drops[i].n);
	}
}

/* gospan's own resource: what its health metrics are of. */
static struct resource *self_resource(void)
{
	struct resource *r = resource__new();
	char host[256];
	int err;

	if (!r)
		return NULL;
	err = resource__set_str(r, SC_SERVICE_NAME, GOSPAN_NAME);
	err = err ?: resource__set_str(r, "service.version", GOSPAN_VERSION);
	err = err ?: resource__set_str(r, SC_TELEMETRY_SDK_NAME, GOSPAN_NAME);
	err = err ?: resource__set_str(r, SC_TELEMETRY_SDK_VERSION, GOSPAN_VERSION);
	err = err ?: resource__set_int(r, SC_PROCESS_PID, getpid());
	err = err ?: resource__set_str(r, SC_PROCESS_EXECUTABLE_NAME, GOSPAN_NAME);
	if (!err && !gethostname(host, sizeof(host) - 1)) {
		host[sizeof(host) - 1] = '\0';
		err = resource__set_str(r, SC_HOST_NAME, host);
	}
	if (err) {
		resource__free(r);
		errno = -err;
		return NULL;
	}
	return r;
}

/* The Prometheus endpoint: scraped, so no reader of ours collects in between. */
static int start_prometheus(struct app *app)
{
	const struct config *cfg = &app->cfg;
	bool v6 = strchr(cfg->prometheus_host, ':') != NULL;
	char origin[512];

	snprintf(origin, sizeof(origin),
		 "OTEL_EXPORTER_PROMETHEUS_HOST=%s, OTEL_EXPORTER_PROMETHEUS_PORT=%ld",
		 cfg->prometheus_host, cfg->prometheus_port);
	app->prometheus = prometheus__new(&(struct prometheus_opts){
		.host = cfg->prometheus_host,
		.port = (int)cfg->prometheus_port,
		.metrics = app->metrics,
		.origin = origin,
	});
	if (!app->prometheus)
		return -errno; /* said, with the address */
	pr_info("metrics: served for Prometheus at http://%s%s%s:%d/metrics", v6 ? "[" : "",
		cfg->prometheus_host, v6 ? "]" : "", prometheus__port(app->prometheus));
	return 0;
}

/*
 * The metrics store and its reader, as OTEL_METRICS_EXPORTER says: OTLP to the metrics
 * endpoint, or the console, every OTEL_METRIC_EXPORT_INTERVAL; Prometheus, on each scrape;
 * none, nothing at all.
 */
static int start_metrics(struct app *app)
{
	const struct config *cfg = &app->cfg;
	static const enum metric_temporality temporalities[] = {
		[METRICS_TEMPORALITY_CUMULATIVE] = METRIC_TEMPORALITY_CUMULATIVE,
		[METRICS_TEMPORALITY_DELTA] = METRIC_TEMPORALITY_DELTA,
		[METRICS_TEMPORALITY_LOWMEMORY] = METRIC_TEMPORALITY_LOWMEMORY,
	};
	static const enum metric_exemplars filters[] = {
		[EXEMPLAR_FILTER_TRACE_BASED] = METRIC_EXEMPLARS_TRACE_BASED,
		[EXEMPLAR_FILTER_ALWAYS_ON] = METRIC_EXEMPLARS_ALWAYS_ON,
		[EXEMPLAR_FILTER_ALWAYS_OFF] = METRIC_EXEMPLARS_ALWAYS_OFF,
	};
	struct http_sink_opts http = {
		.url = cfg->metrics.url,
		.headers = cfg->metrics.headers,
		.nheaders = cfg->metrics.nheaders,
		.timeout_ms = cfg->metrics.timeout_ms,
		.batch_timeout_ms = cfg->metric_timeout_ms,
		.gzip = cfg->metrics.gzip,
		.json = cfg->metrics.json,
		.ca_file = cfg->metrics.ca_file,
		.client_cert = cfg->metrics.client_cert,
		.client_key = cfg->metrics.client_key,
		.metrics = true,
	};
	static const char *const temporality_names[] = { "cumulative", "delta", "lowmemory" };
	struct metric_reader_opts ro = { .interval_ms = cfg->metric_interval_ms };
	bool prometheus = cfg->metrics_exporter == METRICS_EXPORTER_PROMETHEUS;
	int err;

	if (cfg->metrics_exporter == METRICS_EXPORTER_NONE)
		return 0;
	/*
	 * A scraper reads totals: a delta is reset by each collection, so two scrapers (or a
	 * retried scrape) would each see part of the counts. The specification's pull exporters
	 * are cumulative whatever the preference says.
	 */
	if (prometheus && cfg->temporality != METRICS_TEMPORALITY_CUMULATIVE)
		pr_warn("OTEL_EXPORTER_OTLP_METRICS_TEMPORALITY_PREFERENCE=%s is not used with "
			"OTEL_METRICS_EXPORTER=prometheus: Prometheus is served cumulative counts",
			temporality_names[cfg->temporality]);
	err = pthread_mutex_init(&app->health.lock, NULL);
	if (err)
		return -err;
	app->self = self_resource();
	if (!app->self)
		return -errno;
	app->metrics = metrics__new(&(struct metrics_opts){
		/*
		 * Prometheus is cumulative, and its text format 0.0.4 has no exemplars: none are
		 * kept for nothing. The console shows what each interval measured, and at exit
		 * adds the intervals up (console.c): it needs deltas, whatever the OTLP
		 * preference says.
		 */
		.temporality = prometheus ? METRIC_TEMPORALITY_CUMULATIVE :
			       cfg->metrics_exporter == METRICS_EXPORTER_CONSOLE ?
					    METRIC_TEMPORALITY_DELTA :
					    temporalities[cfg->temporality],
		.exemplars = prometheus ? METRIC_EXEMPLARS_ALWAYS_OFF :
					  filters[cfg->exemplar_filter],
		.cardinality_limit = (size_t)cfg->metrics_cardinality,
		.observe = observe_all_health,
		.observe_ctx = app,
	});
	if (!app->metrics)
		return -errno;
	switch (cfg->metrics_exporter) {
	case METRICS_EXPORTER_OTLP:
		ro.ops = &http_sink_ops;
		ro.ctx = http_sink__new(&http);
		break;
	case METRICS_EXPORTER_CONSOLE:
		/*
		 * A sink of its own: the metric reader calls it from its thread, apart from the
		 * span exporter's console. Each writes a whole table or trace in one fwrite, so
		 * the two never interleave on stdout.
		 */
		ro.ops = &console_sink_ops;
		ro.ctx = console_sink__new_opts(&(struct console_opts){ .out = stdout });
		break;
	case METRICS_EXPORTER_PROMETHEUS:
		return start_prometheus(app);
	default:
		return 0; /* METRICS_EXPORTER_NONE: returned above, before any store */
	}
	if (!ro.ctx)
		return -errno;
	ro.metrics = app->metrics;
	app->metric_reader = metric_reader__new(&ro);
	if (!app->metric_reader) {
		err = -errno;
		ro.ops->free(ro.ctx);
		pr_err("cannot start the metric reader: %s", strerror(-err));
		return err;
	}
	return 0;
}

/* The metrics' last export, then what they came to. */
static void stop_metrics(struct app *app)
{
	struct metric_reader_stats mr = {};
	struct prometheus_stats ps = {};
	struct metrics_stats ms = {};
	char limited[128] = "", delivered[160];

	if (!app->metrics)
		return;
	update_health(app);
	metric_reader__shutdown(app->metric_reader);
	metrics__stats(app->metrics, &ms);
	if (app->metric_reader)
		metric_reader__stats(app->metric_reader, &mr);
	if (ms.limited)
		snprintf(limited, sizeof(limited),
			 " (cardinality limit reached by %llu metrics: %llu calls counted in "
			 "otel.metric.overflow)",
			 (unsigned long long)ms.limited, (unsigned long long)ms.overflowed);
	if (app->prometheus) {
		prometheus__stats(app->prometheus, &ps);
		snprintf(delivered, sizeof(delivered),
			 "scrapes served %llu (bad requests %llu, timed out %llu, failed %llu)",
			 (unsigned long long)ps.scrapes, (unsigned long long)ps.bad_requests,
			 (unsigned long long)ps.timeouts, (unsigned long long)ps.failures);
	} else {
		snprintf(delivered, sizeof(delivered),
			 "exports %llu (%llu points), failed %llu (%llu points)",
			 (unsigned long long)mr.exports, (unsigned long long)mr.points,
			 (unsigned long long)mr.failures, (unsigned long long)mr.points_failed);
	}
	pr_info("metrics: calls measured %llu, attribute sets %llu%s; %s%s",
		(unsigned long long)ms.measurements, (unsigned long long)ms.series, limited,
		delivered, ms.no_memory ? " (out of memory: measurements lost)" : "");
}

/* Whether the kernel counts BPF program runs (sysctl kernel.bpf_stats_enabled). */
static bool bpf_stats_enabled(void)
{
	FILE *f = fopen("/proc/sys/kernel/bpf_stats_enabled", "re");
	int c = f ? fgetc(f) : EOF;

	if (f)
		fclose(f);
	return c == '1';
}

static void print_summary(struct app *app, bool final)
{
	struct records_stats rs = {};
	struct exporter_stats es = {};
	uint64_t prop[PROP__COUNT] = {}, total = 0, hits;
	struct drop drops[MAX_DROPS];
	char reasons[1024], per[512];
	size_t len = 0, n, i;

	records__stats(app->records, &rs);
	if (app->exporter)
		exporter__stats(app->exporter, &es);
	if (app->probes)
		probes__propagation(app->probes, prop);
	reasons[0] = '\0';
	n = span_drops(app, &rs, &es, drops);
	for (i = 0; i < n; i++) {
		if (drops[i].n && len < sizeof(reasons))
			len += snprintf(reasons + len, sizeof(reasons) - len, " %s=%llu",
					drops[i].reason, (unsigned long long)drops[i].n);
		total += drops[i].cause ? 0 : drops[i].n;
	}

	if (final && app->probes && bpf_stats_enabled() &&
	    !probes__hits(app->probes, &hits, per, sizeof(per))) {
		pr_info("probe hits: %llu (counted by the kernel: kernel.bpf_stats_enabled=1)%s%s",
			(unsigned long long)hits, per[0] ? ": " : "", per);
	}
	pr_info("%s: spans captured %llu, exported %llu, dropped %llu%s%s%s; panics %llu, "
		"in flight %llu, queued %llu, export failures %llu, retries %llu, rejected by the "
		"backend %llu, not sampled %llu; trace context "
		"sent %llu (not sent: already set %llu, request line not in the first write %llu, "
		"not HTTP/1 %llu, https %llu, socket not tracked %llu, HTTP/2 frames not whole %llu, "
		"scratch busy %llu); Kafka records given trace context %llu (not given: already set "
		"%llu, compressed batch %llu, no room %llu; produce requests not rewritten, "
		"not whole in one write %llu)%s",
		final ? "summary" : "status", (unsigned long long)rs.spans,
		(unsigned long long)es.exported, (unsigned long long)total, total ? " (" : "",
		total ? reasons + 1 : "", total ? ")" : "", (unsigned long long)rs.panics,
		(unsigned long long)rs.pending, (unsigned long long)es.queue_depth,
		(unsigned long long)es.export_failures, (unsigned long long)es.retries,
		(unsigned long long)es.rejected, (unsigned long long)rs.unsampled,
		(unsigned long long)prop[PROP_INJECTED], (unsigned long long)prop[PROP_ALREADY_SET],
		(unsigned long long)prop[PROP_NO_ROOM], (unsigned long long)prop[PROP_NOT_HTTP1],
		(unsigned long long)prop[PROP_TLS], (unsigned long long)prop[PROP_UNSEEN],
		(unsigned long long)prop[PROP_H2_NOT_WHOLE],
		(unsigned long long)prop[PROP_SCRATCH_BUSY],
		(unsigned long long)prop[PROP_KAFKA_INJECTED],
		(unsigned long long)prop[PROP_KAFKA_ALREADY_SET],
		(unsigned long long)prop[PROP_KAFKA_COMPRESSED],
		(unsigned long long)prop[PROP_KAFKA_NO_ROOM],
		(unsigned long long)prop[PROP_KAFKA_NOT_WHOLE],
		app->exporter ? "" : " (OTEL_TRACES_EXPORTER=none: nothing exported)");
}

static int run(struct app *app)
{
	uint64_t now, next_tick = 0, next_sync, next_status;
	size_t i, live_pids = app->cfg.npids;
	int n = 0;

	next_sync = next_status = clock__mono_now();
	next_sync += CLOCK_RESYNC_NS;
	next_status += STATUS_EVERY_NS;
	while (!stop_signal) {
		n = probes__poll(app->probes, n >= POLL_BUSY_RECORDS ? POLL_BUSY_MS : POLL_MS);
		flush_outbox(app);
		if (n < 0 && n != -EINTR) {
			pr_err("cannot read the ring buffer: %s", strerror(-n));
			return n;
		}
		now = clock__mono_now();
		if (now >= next_sync) {
			clock__maybe_resync(&app->clock, 0);
			next_sync = now + CLOCK_RESYNC_NS;
		}
		if (now >= next_tick) {
			records__tick(app->records, now);
			flush_outbox(app);
			next_tick = now + TICK_NS;
			/* --pid targets that are gone; gospan ends with the last, unless --exe. */
			for (i = 0; i < app->ntraced; i++) {
				struct traced *t = &app->traced[i];

				if (!t->only_pid || t->exited || !kill(t->only_pid, 0) ||
				    errno != ESRCH)
					continue;
				t->exited = true;
				live_pids--;
				pr_info("target process %d exited", (int)t->only_pid);
			}
			if (!live_pids && !app->cfg.nexes)
				break;
			process_table__prune(app->processes, process_busy, app->records);
			probes__sync(app->probes);
			update_health(app);
		}
		if (app->cfg.verbose && now >= next_status) {
			print_summary(app, false);
			next_status = now + STATUS_EVERY_NS;
		}
	}
	return 0;
}

/*
 * The final export of what is queued, watching for a signal beyond the FIRST (1 when a signal
 * stopped gospan, else 0): that one cuts the export short, giving up what is left. 0 when the
 * export ran its course; -ECANCELED when it was cut short; -EBUSY when it was and the export
 * thread is still inside its sink (a collector that does not answer, a stdout nobody reads).
 */
static int flush_exports(struct exporter *e, int first)
{
	struct exporter_stats st;
	long waited = 0;
	uint64_t lost;
	int err;

	exporter__stop(e);
	for (; exporter__wait(e, FLUSH_CHECK_MS); waited += FLUSH_CHECK_MS) {
		if (waited == FLUSH_SAY_MS) {
			exporter__stats(e, &st);
			pr_info("still exporting %llu spans: %s stops now, giving them up",
				(unsigned long long)st.queue_depth,
				first ? "a second SIGINT or SIGTERM" : "SIGINT or SIGTERM");
		}
		if (nsignals <= first)
			continue;
		err = exporter__abandon(e, FLUSH_CUT_GRACE_MS, &lost);
		pr_warn("%s: stopping now, %llu span%s not exported",
			first ? "second signal" : "signal during the final export",
			(unsigned long long)lost, lost == 1 ? "" : "s");
		return err ? -EBUSY : -ECANCELED;
	}
	return 0;
}

/* N single-stepped hits, or "no" probe: into BUF. */
static const char *steps_text(int n, char buf[16])
{
	if (n < 0)
		return "no probe for";
	snprintf(buf, 16, "%d", n);
	return buf;
}

/* One line per probed function of SITE: where its probes are and what each hit costs. */
static void say_site(const char *what, const struct probe_site *s)
{
	size_t i, emulated = 0, n = s->nends + s->nrets;
	char entry[96];

	if (!s->addr)
		return;
	for (i = 0; i < s->nends; i++)
		emulated += s->ends[i].emulated;
	if (s->rets_emulated)
		emulated += s->nrets;
	if (s->nentry_calls)
		snprintf(entry, sizeof(entry), "entry on its %zu direct call%s (emulated)",
			 s->nentry_calls, s->nentry_calls == 1 ? "" : "s");
	else
		snprintf(entry, sizeof(entry), "entry %s at file offset 0x%llx",
			 s->entry_emulated ? "emulated" : "single-stepped",
			 (unsigned long long)s->entry_off);
	pr_info("  %s: %s; %zu end%s (%zu emulated, %zu single-stepped%s%s)", what, entry, n,
		n == 1 ? "" : "s", emulated, n - emulated, s->nrets ? ", RETs kept: " : "",
		s->nrets ? (s->rets_why ? s->rets_why : "wanted") : "");
}

/*
 * N calls probed at their CALL (emulated), as WHAT: one line; and where they return to, for
 * those whose tag is AFTER_TAG (0: every one) or none when AFTER_TAG is -1.
 */
static void say_calls(const char *what, const struct call_pair *calls, size_t n, int after_tag)
{
	size_t i, emulated = 0, after = 0;

	if (!n)
		return;
	for (i = 0; after_tag >= 0 && i < n; i++) {
		if (after_tag && calls[i].tag != (uint32_t)after_tag)
			continue;
		after++;
		emulated += calls[i].after.emulated;
	}
	pr_info("  %s: %zu CALLs (emulated); %zu of them probed where they return to, %zu "
		"emulated and %zu single-stepped",
		what, n, after, emulated, after - emulated);
}

/* --verbose: every probed function's sites. */
static void say_sites(const struct target *t)
{
	size_t i;

	say_site(t->serve_http.symbol, &t->serve_http);
	if (t->serve_http2.nends)
		pr_info("  %s: %zu CALL%s of handlerDone (emulated), where HTTP/2 requests end",
			t->serve_http2.symbol, t->serve_http2.nends,
			t->serve_http2.nends == 1 ? "" : "s");
	else if (t->serve_http2.addr)
		pr_info("  %s: %zu RETs (%s), where HTTP/2 requests end; no entry probe",
			t->serve_http2.symbol, t->serve_http2.nrets,
			t->serve_http2.rets_emulated ? "emulated" : "single-stepped");
	say_site(t->round_trip.symbol, &t->round_trip);
	say_site(t->grpc.handle_stream.symbol, &t->grpc.handle_stream);
	say_site(t->grpc.write_status.symbol, &t->grpc.write_status);
	say_site(t->grpc.handler_write_status.symbol, &t->grpc.handler_write_status);
	say_site(t->grpc.new_stream.symbol, &t->grpc.new_stream);
	say_site(t->grpc.new_attempt.symbol, &t->grpc.new_attempt);
	say_site(t->grpc.attempt_finish.symbol, &t->grpc.attempt_finish);
	say_site(t->grpc.header_fields.symbol, &t->grpc.header_fields);
	say_site(t->grpc.write_header.symbol, &t->grpc.write_header);
	say_site(t->db.sql_query.symbol, &t->db.sql_query);
	say_site(t->db.sql_exec.symbol, &t->db.sql_exec);
	say_site(t->db.sql_rows.symbol, &t->db.sql_rows);
	say_site(t->db.sql_result.symbol, &t->db.sql_result);
	say_site(t->db.sql_stmt_query.symbol, &t->db.sql_stmt_query);
	say_site(t->db.sql_stmt_exec.symbol, &t->db.sql_stmt_exec);
	say_site(t->db.sql_prepare.symbol, &t->db.sql_prepare);
	say_site(t->db.sql_begin.symbol, &t->db.sql_begin);
	say_site(t->db.sql_commit.symbol, &t->db.sql_commit);
	say_site(t->db.sql_rollback.symbol, &t->db.sql_rollback);
	say_site(t->db.pgx_query.symbol, &t->db.pgx_query);
	say_site(t->db.pgx_exec.symbol, &t->db.pgx_exec);
	say_site(t->db.pgx_batch.symbol, &t->db.pgx_batch);
	say_site(t->db.redis_process.symbol, &t->db.redis_process);
	say_site(t->db.redis_pipeline.symbol, &t->db.redis_pipeline);
	say_site(t->db.redis_tx_pipeline.symbol, &t->db.redis_tx_pipeline);
	say_site(t->kafka.send.symbol, &t->kafka.send);
	say_site(t->kafka.fetch.symbol, &t->kafka.fetch);
	say_site(t->kafka.read.symbol, &t->kafka.read);
	if (t->kafka.nhandover)
		pr_info("  kafka-go's FetchMessage and ReadMessage: %zu probe%s inside them, where "
			"they hand a Message over (emulated)",
			t->kafka.nhandover, t->kafka.nhandover == 1 ? "" : "s");
	say_site(t->kafka.commit.symbol, &t->kafka.commit);
	say_site(t->kafka.close.symbol, &t->kafka.close);
	say_site(t->kafka.sarama_one.symbol, &t->kafka.sarama_one);
	say_site(t->kafka.sarama_many.symbol, &t->kafka.sarama_many);
	say_site(t->kafka.fz_sync.symbol, &t->kafka.fz_sync);
	say_site(t->kafka.fz_produce.symbol, &t->kafka.fz_produce);
	say_site(t->kafka.fz_promise.symbol, &t->kafka.fz_promise);
	say_site(t->kafka.fz_poll.symbol, &t->kafka.fz_poll);
	say_site(t->kafka.fz_poll_fetches.symbol, &t->kafka.fz_poll_fetches);
	say_site(t->kafka.fz_next.symbol, &t->kafka.fz_next);
	if (t->kafka.fz_nnext_calls)
		pr_info("  franz-go's Next: %zu probe%s on its last CALL, where it hands a record "
			"over (emulated)",
			t->kafka.fz_nnext_calls, t->kafka.fz_nnext_calls == 1 ? "" : "s");
	say_site(t->kafka.fz_each.symbol, &t->kafka.fz_each);
	say_site(t->kafka.sm_consume.symbol, &t->kafka.sm_consume);
	say_site(t->kafka.sm_partition.symbol, &t->kafka.sm_partition);
	say_site(t->kafka.sm_mark.symbol, &t->kafka.sm_mark);
	for (i = 0; i < t->kafka.sm_nhandlers; i++)
		say_site(t->kafka.sm_handlers[i].symbol, &t->kafka.sm_handlers[i]);
	say_calls("sarama consumer group handlers' receives", t->kafka.sm_recvs,
		  t->kafka.sm_nrecvs, 0);
	say_site(t->kafka.sm_made.symbol, &t->kafka.sm_made);
	say_site(t->kafka.sm_successes.symbol, &t->kafka.sm_successes);
	say_site(t->kafka.sm_errors.symbol, &t->kafka.sm_errors);
	say_site(t->kafka.sm_error.symbol, &t->kafka.sm_error);
	say_calls("sarama AsyncProducer dispatcher's receives", t->kafka.sm_inputs,
		  t->kafka.sm_ninputs, -1);
	say_calls("channel sends of the binary's own code (sarama AsyncProducer)",
		  t->kafka.sm_sends, t->kafka.sm_nsends, SEND_SELECT);
	for (i = 0; i < t->nfuncs; i++)
		say_site(t->funcs[i].symbol, &t->funcs[i].site);
}

/*
 * T's function spans, for the attach line: " + 3 functions (single-stepped hits: 0 a call)", or
 * with the costliest function named: "1 a call of main.writeJSON, and of 1 more".
 */
static void funcs_part(const struct target *t, char *buf, size_t len)
{
	const char *worst_name = NULL;
	size_t i, stepped = 0;
	int worst = 0, n;

	buf[0] = '\0';
	if (!t->nfuncs)
		return;
	for (i = 0; i < t->nfuncs; i++) {
		n = probe_site__stepped(&t->funcs[i].site, true);
		stepped += n > 0;
		if (n > worst) {
			worst = n;
			worst_name = t->funcs[i].symbol;
		}
	}
	n = snprintf(buf, len, " + %zu function%s (single-stepped hits: %d a call", t->nfuncs,
		     t->nfuncs == 1 ? "" : "s", worst);
	if (n > 0 && (size_t)n < len && worst_name)
		n += snprintf(buf + n, len - (size_t)n, " of %s", worst_name);
	if (n > 0 && (size_t)n < len && stepped > 1)
		n += snprintf(buf + n, len - (size_t)n, ", and of %zu more", stepped - 1);
	if (n > 0 && (size_t)n < len)
		snprintf(buf + n, len - (size_t)n, ")");
}

/*
 * What gospan traces of T's gRPC, for the attach line: " + gRPC server + gRPC client (grpc-go
 * v1.62.1, offsets from DWARF; single-stepped hits: 0 an RPC served, 0 an RPC made)", or why not.
 */
static void grpc_parts(const struct target *t, char *buf, size_t size)
{
	const struct grpc_target *g = &t->grpc;
	char served[16], made[16];

	buf[0] = '\0';
	if (!g->version[0])
		return;
	if (!g->handle_stream.addr && !g->new_stream.addr) {
		snprintf(buf, size, " + no gRPC (grpc-go %s: see the warning above)", g->version);
		return;
	}
	snprintf(buf, size,
		 "%s%s (grpc-go %s, offsets from %s; single-stepped hits: %s an RPC served, %s an "
		 "RPC made)",
		 g->handle_stream.addr ? " + gRPC server" : "",
		 g->new_stream.addr ? " + gRPC client" : "", g->version,
		 g->offsets_source ? g->offsets_source : "nowhere",
		 steps_text(g->server_steps, served), steps_text(g->client_steps, made));
}

/*
 * What gospan traces of T's data store clients, for the attach line: " + SQL (database/sql;
 * single-stepped hits: 0 a query) + pgx (v5.7.6, offsets from DWARF; 2 a query) + Redis
 * (go-redis v9.17.3, ...; 1 a command)".
 */
static void db_parts(const struct target *t, char *buf, size_t size)
{
	const struct db_target *d = &t->db;
	char steps[16];
	size_t len = 0;

	buf[0] = '\0';
	if (datastores__sql(d))
		len += snprintf(buf + len, size - len,
				" + SQL (database/sql; single-stepped hits: %s a query)",
				steps_text(d->sql_steps, steps));
	if (datastores__pgx(d) && len < size)
		len += snprintf(buf + len, size - len,
				" + pgx (%s, offsets from %s; single-stepped hits: %s a query)",
				d->pgx_version, d->pgx_offsets[0] ? d->pgx_offsets : "nowhere",
				steps_text(d->pgx_steps, steps));
	if (!d->redis_process.addr || len >= size)
		return;
	len += snprintf(buf + len, size - len,
			" + Redis (go-redis %s, offsets from %s; single-stepped hits: %s a command",
			d->redis_version, d->redis_offsets, steps_text(d->redis_steps, steps));
	/* Pipelines are linked only where the program makes some. */
	if (d->redis_pipe_steps >= 0 && len < size)
		len += snprintf(buf + len, size - len, ", %s a pipeline",
				steps_text(d->redis_pipe_steps, steps));
	if (len < size)
		snprintf(buf + len, size - len, ")");
}

/*
 * The router frameworks whose routes T's spans get, for the attach line: " + gin routes
 * (v1.12.0, offsets from DWARF; single-stepped hits: 0 a request)".
 */
static void router_parts(const struct target *t, char *buf, size_t size)
{
	const struct router_target *r = &t->routers;
	char steps[16];
	size_t i, len = 0;

	buf[0] = '\0';
	for (i = 0; i < r->n && len < size; i++)
		len += snprintf(buf + len, size - len,
				" + %s routes (%s, offsets from %s; single-stepped hits: %s a "
				"request)",
				r->v[i].name, r->v[i].version, r->v[i].offsets,
				steps_text(r->v[i].steps, steps));
}

/*
 * What gospan traces of T's fasthttp, for the attach line: " + fasthttp server + fasthttp client
 * (v1.78.0, offsets from DWARF; single-stepped hits: 0 a request served, 0 a call made)".
 */
static void fasthttp_parts(const struct target *t, char *buf, size_t size)
{
	const struct fasthttp_target *f = &t->fasthttp;
	char served[16], made[16];

	buf[0] = '\0';
	if (!f->version[0])
		return;
	if (!f->start.addr && !f->client.addr) {
		snprintf(buf, size, " + no fasthttp (%s: see the warning above)", f->version);
		return;
	}
	snprintf(buf, size,
		 "%s%s (fasthttp %s, offsets from %s; single-stepped hits: %s a request served, %s "
		 "a call made)",
		 f->start.addr ? " + fasthttp server" : "",
		 f->client.addr ? " + fasthttp client" : "",
		 f->version, f->offsets, steps_text(f->server_steps, served),
		 steps_text(f->client_steps, made));
}

/*
 * On-CPU time, for the attach line: " + on-CPU time (single-stepped hits: 0 a goroutine switch)",
 * a switch being a runtime.execute and a runtime.schedule.
 */
static void cputime_part(const struct target *t, char *buf, size_t size)
{
	if (!t->cfg.cpu_time) {
		*buf = '\0';
		return;
	}
	snprintf(buf, size, " + on-CPU time (single-stepped hits: %d a goroutine switch)",
		 !t->cpu_execute.entry_emulated + !t->cpu_schedule.entry_emulated);
}

/*
 * What gospan traces of T's Kafka clients, for the attach line: " + Kafka producer + Kafka
 * consumer (kafka-go v0.4.51, offsets from DWARF; single-stepped hits: 0 a send, 0 a message)".
 */
static void kafka_parts(const struct target *t, char *buf, size_t size)
{
	const struct kafka_target *k = &t->kafka;
	char sends[16], messages[16];
	size_t len = 0;

	buf[0] = '\0';
	if (k->version[0] && !k->send.addr && !k->fetch.addr)
		len += snprintf(buf, size, " + no Kafka (kafka-go %s: see the warning above)",
				k->version);
	else if (k->version[0])
		len += snprintf(buf, size,
				"%s%s (kafka-go %s, offsets from %s; single-stepped hits: %s a "
				"send, %s a message)",
				k->send.addr ? " + Kafka producer" : "",
				k->fetch.addr ? " + Kafka consumer" : "", k->version, k->offsets,
				steps_text(k->send_steps, sends),
				steps_text(k->process_steps, messages));
	if (k->sarama_version[0] && len < size) {
		if (!k->sarama_one.addr && !k->sarama_many.addr && !k->sm_nrecvs)
			len += snprintf(buf + len, size - len,
					" + no Kafka (sarama %s: see the warning above)",
					k->sarama_version);
		else
			len += snprintf(buf + len, size - len,
					"%s%s (sarama %s, offsets from %s; single-stepped hits: "
					"%s a send, %s a message)",
					k->sarama_one.addr || k->sarama_many.addr ?
						" + Kafka producer" : "",
					k->sm_nrecvs ? " + Kafka consumer" : "",
					k->sarama_version, k->sarama_offsets,
					steps_text(k->sarama_steps, sends),
					steps_text(k->sarama_process_steps, messages));
	}
	if (!k->franz_version[0] || len >= size)
		return;
	if (!k->fz_sync.addr && !k->fz_produce.addr && !k->fz_next.addr)
		snprintf(buf + len, size - len, " + no Kafka (franz-go %s: see the warning above)",
			 k->franz_version);
	else
		snprintf(buf + len, size - len,
			 "%s%s (franz-go %s, offsets from %s; single-stepped hits: %s a sync "
			 "send, %s a record)",
			 k->fz_sync.addr || k->fz_produce.addr ? " + Kafka producer" : "",
			 k->fz_next.addr ? " + Kafka consumer" : "", k->franz_version,
			 k->franz_offsets, steps_text(k->franz_send_steps, sends),
			 steps_text(k->franz_process_steps, messages));
}

/*
 * " + HTTP client", and what a call that fails costs where that is more than a call that succeeds:
 * " + HTTP client (single-stepped hits: 1 a call that fails)".
 */
static void client_part(const struct target *t, char *buf, size_t size)
{
	char n[16];

	*buf = '\0';
	if (!t->round_trip.addr)
		return;
	if (t->client_fail_steps > t->client_steps)
		snprintf(buf, size, " + HTTP client (single-stepped hits: %s a call that fails)",
			 steps_text(t->client_fail_steps, n));
	else
		snprintf(buf, size, " + HTTP client");
}

/* Resolves, analyses and attaches to target I of the configuration (the --pids, then the --exes). */
static int add_target(struct app *app, size_t i)
{
	const struct config *cfg = &app->cfg;
	struct traced *t = &app->traced[app->ntraced];
	char path[PATH_MAX], name[NAME_MAX + 1];
	char funcs[320] = "", server_steps[16], client_steps[16], rpc[256], db[384], routes[512];
	char fh[256], kafka[640], cpu[80], h2[64] = "", h2_steps[16], client[80];
	struct probe_counts counts;
	struct target *tg;
	uint32_t cookie;
	int err, nprobes;

	t->only_pid = i < cfg->npids ? cfg->pids[i] : 0;
	err = resolve_target(t->only_pid, t->only_pid ? NULL : cfg->exes[i - cfg->npids], path,
			     sizeof(path), name, sizeof(name), &t->pid);
	if (err)
		return err;
	/* With a --functions file, a binary that serves no HTTP is still worth tracing. */
	tg = target__analyse(path, name, app->tables, &app->modules, !app->functions);
	if (!tg) {
		err = -errno;
		disasm__release();
		return err;
	}
	t->target = tg;
	app->ntraced++;
	err = app->functions ? functions__resolve(app->functions, tg) : 0;
	if (!err && cfg->cpu_time)
		err = cputime__resolve(tg);
	/*
	 * The binary is read: its mapping and capstone would only hold memory until the next
	 * target.
	 */
	target__end_analysis(tg);
	disasm__release();
	if (err)
		return err;
	if (!tg->serve_http.addr && !tg->nfuncs && !tg->grpc.handle_stream.addr &&
	    !fasthttp__serves(&tg->fasthttp) && !datastores__any(&tg->db) &&
	    !kafka__any(&tg->kafka)) {
		pr_err("cannot trace '%s': it serves no HTTP with net/http and none of the functions "
		       "to trace is in it",
		       tg->path);
		return -ENOENT;
	}

	/* The sampler runs where ids are chosen, in BPF: see struct target_config. */
	tg->cfg.root_sampler = cfg->root_sampler;
	tg->cfg.parent_based = cfg->parent_based;
	tg->cfg.ratio_bound = (uint64_t)(cfg->sampler_ratio * 9223372036854775808.0);
	tg->cfg.propagate = cfg->propagate;
	tg->cfg.kafka_key = cfg->capture_message_key;
	/*
	 * The writer check compares runtime addresses: for a PIE binary that needs the process's
	 * load bias, known for --pid; with --exe, PIE processes go without the check.
	 */
	if (tg->pie && tg->bufio_itab && t->only_pid)
		tg->cfg.bufio_itab = tg->bufio_itab + process__load_bias(t->pid, tg->link_base);
	/* --exe traces every process of the binary, present and future: attach to the file. */
	nprobes = probes__attach(app->probes, tg, t->only_pid ? t->only_pid : -1,
				 cfg->follow_goroutines, &cookie, &counts);
	if (nprobes < 0)
		return nprobes;
	err = process_table__add_target(app->processes, cookie, tg);
	if (err)
		return err;
	/*
	 * Its resource now, while /proc still has the process's environment (OTEL_SERVICE_NAME):
	 * a short-lived target may be gone by the time its first record is read.
	 */
	if (!process_table__get(app->processes, t->pid, cookie))
		pr_warn("cannot describe process %d: %s", (int)t->pid, strerror(errno));
	/*
	 * Before its next call: its open keep-alive connections must carry context too. A failure
	 * is said where it happens, and costs only trace context: the spans are made all the same.
	 */
	probes__track_process(app->probes, t->pid, tg);
	funcs_part(tg, funcs, sizeof(funcs));
	if (tg->http2_steps >= 0)
		snprintf(h2, sizeof(h2), " (single-stepped hits: %s an HTTP/2 request)",
			 steps_text(tg->http2_steps, h2_steps));
	client_part(tg, client, sizeof(client));
	grpc_parts(tg, rpc, sizeof(rpc));
	db_parts(tg, db, sizeof(db));
	router_parts(tg, routes, sizeof(routes));
	fasthttp_parts(tg, fh, sizeof(fh));
	kafka_parts(tg, kafka, sizeof(kafka));
	cputime_part(tg, cpu, sizeof(cpu));
	pr_info("attached: pid %d, executable '%s', %s, %d probes (%zu emulated, %zu single-stepped; "
		"single-stepped hits: %s a request served, %s a call made; "
		"%s%s%s%s%s%s%s%s%s%s%s), offsets from %s%s%s",
		(int)t->pid, tg->exe_name, tg->gobin->go_version, nprobes, counts.emulated,
		counts.stepped, steps_text(tg->server_steps, server_steps),
		steps_text(tg->client_steps, client_steps),
		tg->serve_http.addr ? "HTTP server" : "no HTTP server", h2, routes,
		tg->gopanic.addr ? " + gopanic" : "", client,
		funcs, cpu, rpc, fh, db, kafka,
		tg->offsets_source,
		strcmp(tg->offsets_source, "table") ? "" : " for Go ",
		strcmp(tg->offsets_source, "table") ? "" : tg->offsets_version);
	if (cfg->verbose)
		say_sites(tg);
	return 0;
}

int main(int argc, char **argv)
{
	struct app app = {};
	bool client = false, attached = false;
	size_t i;
	int err, cut = 0;

	err = config__parse(&app.cfg, argc, argv, environ);
	if (err)
		goto cleanup;
	log_set_level(app.cfg.log_level);
	if (app.cfg.help) {
		config__print_help(&app.cfg, stdout);
		goto cleanup;
	}
	if (app.cfg.version) {
		printf("%s %s\n", GOSPAN_NAME, GOSPAN_VERSION);
		goto cleanup;
	}
	if (app.cfg.sdk_disabled) {
		pr_info("OTEL_SDK_DISABLED is true: not tracing");
		goto cleanup;
	}
	if (!app.cfg.npids && !app.cfg.nexes) {
		pr_err("name a target: --pid PID or --exe PATH (or OTEL_GO_AUTO_TARGET_PID / "
		       "OTEL_GO_AUTO_TARGET_EXE); see --help");
		err = -EINVAL;
		goto cleanup;
	}
	err = check_privileges(&app.cfg);
	if (err)
		goto cleanup;
	err = install_signals();
	if (err)
		goto cleanup;

	app.tables = offsets__parse(gospan_offsets_json,
				    gospan_offsets_json_end - gospan_offsets_json);
	if (!app.tables) {
		err = -errno;
		goto cleanup;
	}
	err = module_tables__load(&app.modules);
	if (err)
		goto cleanup;
	if (app.cfg.functions_file) {
		app.functions = functions__load(app.cfg.functions_file);
		if (!app.functions) {
			err = -errno;
			goto cleanup;
		}
	}
	err = clock__sync(&app.clock);
	if (err) {
		pr_err("cannot read the clocks: %s", strerror(-err));
		goto cleanup;
	}
	err = start_exporter(&app);
	if (err)
		goto cleanup;
	err = start_metrics(&app);
	if (err)
		goto cleanup;
	app.processes = process_table__new(&app.cfg);
	app.records = records__new(&(struct records_opts){
		.clock = &app.clock,
		.processes = app.processes,
		.submit = submit_span,
		.hold = hold_place,
		.submit_held = submit_held,
		.forget = forget_call,
		.in_flight = call_in_flight,
		.process_started = process_started,
		.measure = app.metrics ? measure_span : NULL,
		.ctx = &app,
		.panic_grace_ns = PANIC_GRACE_NS,
		.db_query_text = app.cfg.db_query_text,
		.max_pending = 65536,
		.max_pending_age_ns = (uint64_t)app.cfg.max_pending_age_s * 1000000000ULL,
	});
	if (!app.processes || !app.records) {
		err = -ENOMEM;
		goto cleanup;
	}
	/* Loaded once for every target: each attach gets its own cookie and configuration. */
	app.probes = probes__load(records__handle, app.records, app.cfg.propagate);
	if (!app.probes) {
		err = -errno;
		goto cleanup;
	}
	err = release_signals();
	if (err)
		goto detach;
	if (stop_signal) /* taken during the setup */
		goto detach;
	/* One after the other: an --exe may wait for its process, the ones before are traced. */
	for (i = 0; i < app.cfg.npids + app.cfg.nexes; i++) {
		err = add_target(&app, i);
		if (err == -EINTR) { /* stopped while an --exe waited for its process */
			err = 0;
			goto detach;
		}
		if (err)
			goto detach;
		attached = true;
		client |= app.traced[app.ntraced - 1].target->round_trip.addr != 0 ||
			  app.traced[app.ntraced - 1].target->grpc.write_header.addr != 0;
		if (stop_signal)
			goto detach;
	}
	/*
	 * The analysis is done and its buffers freed. They came from the heap (glibc had raised
	 * its mmap threshold to the size of the kernel BTF libbpf read and freed for the
	 * socket-layer writer), and stay resident unless handed back: 3 MB.
	 */
	malloc_trim(0);
	if (client && !app.cfg.propagate)
		pr_info("outgoing trace context: off (OTEL_PROPAGATORS=none)");
	else if (client && probes__can_propagate(app.probes))
		pr_info("outgoing trace context: traceparent is added to HTTP/1 requests and to "
			"cleartext gRPC calls' HEADERS frames at the socket layer (sockops + sk_msg "
			"on the targets' cgroups); nothing is written into the services' memory");
	else if (client)
		pr_warn("outgoing trace context is off (see the reason above): client spans are "
			"still made, but the services they call start traces of their own");

	err = run(&app);

detach:
	/* Stop capturing, then take what the ring buffer still holds before flushing. */
	probes__detach(app.probes);
	while (probes__poll(app.probes, 0) > 0)
		;
	records__flush(app.records);
	flush_outbox(&app);
	if (app.exporter)
		cut = flush_exports(app.exporter, stop_signal != 0);
	if (cut && !err)
		err = cut;
	/* Nothing to account for when no target was ever attached. */
	if (attached)
		print_summary(&app, true);
	if (cut != -EBUSY)
		stop_metrics(&app);
	/*
	 * The export thread left inside its sink may hold stdout's lock, which exit() would wait
	 * for, and uses what the cleanup frees: end here. The messages went to unbuffered stderr.
	 */
	if (cut == -EBUSY)
		_exit(1);

cleanup:
	/*
	 * First the metrics' readers: a scrape, or the reader's last export on a path that did
	 * not stop it, collects the store, whose health callback reads what follows.
	 */
	prometheus__free(app.prometheus);
	metric_reader__free(app.metric_reader);
	probes__destroy(app.probes);
	records__free(app.records);
	process_table__free(app.processes);
	exporter__free(app.exporter);
	metrics__free(app.metrics);
	if (app.self) {
		resource__free(app.self);
		pthread_mutex_destroy(&app.health.lock);
	}
	for (i = 0; i < app.ntraced; i++)
		target__free(app.traced[i].target);
	offsets__free(app.tables);
	module_tables__free(&app.modules);
	functions__free(app.functions);
	config__free(&app.cfg);
	return err ? 1 : 0;
}
