// SPDX-License-Identifier: MIT
/*
 * Which instructions this kernel's uprobes emulate, measured rather than guessed from a version
 * (distributions backport, and a kernel may lack what its version number suggests).
 *
 * A uprobe on an instruction the kernel cannot emulate runs a copy of it out of line, in a page
 * the kernel maps into the process the first time it needs one ("[uprobes]" in its maps). So a
 * fresh child that hits a probe on the instruction in question, and has that page afterwards,
 * had it single-stepped: one hit tells. A MOV, which no kernel emulates, checks that the sign
 * shows; where it does not, the hits are timed instead (a single-step costs about ten times an
 * emulated hit).
 * amd64: PUSH and a long NOP, against a MOV; arm64: RET, against a MOV (an ORR, which arm64
 * single-steps), since gospan's arm64 ends are RETs.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdbool.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <bpf/libbpf.h>

#include "analysis/disasm.h"
#include "analysis/emulation.h"
#include "core/log.h"

/* The instructions measured, each at the start of a function of gospan's own. */
void emulation_probe_mov(void);
void emulation_probe_push(void);
void emulation_probe_nop(void);
void emulation_probe_ret(void);

#if defined(__x86_64__)
__asm__(".text\n"
	".globl emulation_probe_mov\n"
	".type emulation_probe_mov, @function\n"
	"emulation_probe_mov:\n"
	"	mov %rdi, %rax\n"
	"	ret\n"
	".size emulation_probe_mov, .-emulation_probe_mov\n"
	".globl emulation_probe_push\n"
	".type emulation_probe_push, @function\n"
	"emulation_probe_push:\n"
	"	push %rbp\n"
	"	pop %rbp\n"
	"	ret\n"
	".size emulation_probe_push, .-emulation_probe_push\n"
	".globl emulation_probe_nop\n"
	".type emulation_probe_nop, @function\n"
	"emulation_probe_nop:\n"
	/* NOPW 0(AX)(AX*1), as Go pads after calls */
	"	.byte 0x66, 0x0f, 0x1f, 0x44, 0x00, 0x00\n"
	"	ret\n"
	".size emulation_probe_nop, .-emulation_probe_nop\n");
#elif defined(__aarch64__)
__asm__(".text\n"
	".globl emulation_probe_mov\n"
	".type emulation_probe_mov, %function\n"
	"emulation_probe_mov:\n"
	"	mov x0, x1\n"
	"	ret\n"
	".size emulation_probe_mov, .-emulation_probe_mov\n"
	".globl emulation_probe_ret\n"
	".type emulation_probe_ret, %function\n"
	"emulation_probe_ret:\n"
	"	ret\n"
	".size emulation_probe_ret, .-emulation_probe_ret\n");
#endif

/*
 * Hits per timed child: enough for a timing that a scheduler tick does not decide. Only timed
 * where the out-of-line page does not show: in a virtual machine that emulates the CPU, 600
 * hits were a second of every gospan's start.
 */
#define HITS 200
#define TRIALS 3

/*
 * The trials' probes, detached by a thread of their own: taking a uprobe away waits for an RCU
 * grace period, about 0.1 s here, which gospan's start need not wait for.
 */
static struct {
	struct bpf_link *links[TRIALS];
	int n;
	pthread_t reaper;
	bool reaping;
} trials;

#if defined(__x86_64__) || defined(__aarch64__)
static void *reap(void *arg)
{
	int i;

	(void)arg;
	for (i = 0; i < trials.n; i++)
		bpf_link__destroy(trials.links[i]);
	return NULL;
}
#endif

void emulation__release(void)
{
	int i;

	if (trials.reaping)
		pthread_join(trials.reaper, NULL);
	else
		for (i = 0; i < trials.n; i++)
			bpf_link__destroy(trials.links[i]);
	trials.n = 0;
	trials.reaping = false;
}

#if defined(__x86_64__) || defined(__aarch64__)
/* What a child reports: whether the out-of-line page appeared; the time per hit, 0 if untimed. */
struct trial {
	int xol;
	uint64_t ns_per_hit;
};

/* When a child times its hits. */
enum timing {
	TIME_NEVER,
	TIME_WITHOUT_PAGE, /* where the out-of-line page does not show */
	TIME_ALWAYS,
};

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

/*
 * Whether this process has the kernel's out-of-line page; -errno when its maps cannot be read.
 * Plain read(2): the child of a threaded process may not use stdio.
 */
static int has_xol_page(void)
{
	static const char mark[] = "[uprobes]";
	char buf[4096 + sizeof(mark)];
	size_t keep = 0;
	ssize_t n;
	int fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC), found = 0;

	if (fd < 0)
		return -errno;
	while (!found && (n = read(fd, buf + keep, sizeof(buf) - 1 - keep)) > 0) {
		size_t len = keep + (size_t)n;

		buf[len] = '\0';
		found = strstr(buf, mark) != NULL;
		/* A mark cut by the read: keep what may be its start for the next. */
		keep = len < sizeof(mark) - 1 ? len : sizeof(mark) - 1;
		memmove(buf, buf + len - keep, keep);
	}
	close(fd);
	return n < 0 ? -errno : found;
}

/*
 * The child: waits for the probe, hits it once, looks for the out-of-line page, and times HITS
 * more hits as TIMING says; reports. Never returns.
 */
static void child(int go_fd, int report_fd, void (*fn)(void), enum timing timing)
{
	struct trial t = {};
	uint64_t t0;
	char c;
	int i;

	if (read(go_fd, &c, 1) != 1)
		_exit(1);
	fn();
	t.xol = has_xol_page();
	if (timing == TIME_ALWAYS || (timing == TIME_WITHOUT_PAGE && t.xol != 1)) {
		t0 = now_ns();
		for (i = 0; i < HITS; i++)
			fn();
		t.ns_per_hit = (now_ns() - t0) / HITS;
	}
	_exit(write(report_fd, &t, sizeof(t)) == sizeof(t) ? 0 : 1);
}

/* The file offset of FN in gospan's own executable, from where it is mapped. */
static int self_offset(void (*fn)(void), uint64_t *off)
{
	unsigned long start, end, pgoff;
	uintptr_t a = (uintptr_t)fn;
	char line[512], perms[8];
	FILE *f = fopen("/proc/self/maps", "re");
	int err = -ENOENT;

	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%lx-%lx %7s %lx", &start, &end, perms, &pgoff) != 4)
			continue;
		if (a >= start && a < end && perms[2] == 'x') {
			*off = a - start + pgoff;
			err = 0;
			break;
		}
	}
	fclose(f);
	return err;
}

/* Hits a probe of PROG on FN in a fresh child, timed as TIMING says; its report into *T. */
static int trial(struct bpf_program *prog, void (*fn)(void), enum timing timing,
		 struct trial *t)
{
	int go[2] = { -1, -1 }, report[2] = { -1, -1 }, status, err;
	struct bpf_link *link = NULL;
	uint64_t off = 0;
	pid_t pid = -1;
	ssize_t n;

	err = self_offset(fn, &off);
	if (err)
		return err;
	if (pipe2(go, O_CLOEXEC) || pipe2(report, O_CLOEXEC)) {
		err = -errno;
		goto cleanup;
	}
	pid = fork();
	if (pid < 0) {
		err = -errno;
		goto cleanup;
	}
	if (!pid)
		child(go[0], report[1], fn, timing);
	link = bpf_program__attach_uprobe_opts(prog, pid, "/proc/self/exe", off,
					       &(struct bpf_uprobe_opts){ .sz = sizeof(struct bpf_uprobe_opts) });
	if (!link) {
		err = -errno;
		goto cleanup;
	}
	close(report[1]);
	report[1] = -1;
	if (write(go[1], "g", 1) != 1) {
		err = -errno;
		goto cleanup;
	}
	n = read(report[0], t, sizeof(*t));
	err = n == sizeof(*t) ? 0 : -EIO;
cleanup:
	if (link && trials.n < TRIALS && !trials.reaping)
		trials.links[trials.n++] = link; /* the child is gone: it fires no more */
	else
		bpf_link__destroy(link);
	if (pid > 0) {
		kill(pid, SIGKILL);
		waitpid(pid, &status, 0);
	}
	if (go[0] >= 0) {
		close(go[0]);
		close(go[1]);
	}
	if (report[0] >= 0)
		close(report[0]);
	if (report[1] >= 0)
		close(report[1]);
	return err;
}

/*
 * Whether the kernel emulated FN's first instruction (WHAT, for the log), judged against CONTROL
 * (single-stepped).
 */
static int emulated(struct bpf_program *prog, void (*fn)(void), const char *what,
		    const struct trial *control, bool *out)
{
	bool by_page = control->xol == 1;
	struct trial t;
	int err = trial(prog, fn, by_page ? TIME_NEVER : TIME_ALWAYS, &t);

	if (err)
		return err;
	if (by_page) {
		*out = t.xol == 0;
		pr_debug("uprobe hit on %s: %s (out-of-line page %s; a MOV's made one)", what,
			 *out ? "emulated" : "single-stepped", *out ? "not made" : "made");
	} else {
		*out = t.ns_per_hit * 3 < control->ns_per_hit;
		pr_debug("uprobe hit on %s: %s, %" PRIu64 " ns (single-stepped MOV: %" PRIu64 " ns)",
			 what, *out ? "emulated" : "single-stepped", t.ns_per_hit,
			 control->ns_per_hit);
	}
	return 0;
}
#endif

int emulation__measure(struct bpf_program *prog, struct emulation *e)
{
#if defined(__x86_64__) || defined(__aarch64__)
	struct emulation found = {};
	struct trial control;
	int err;

	err = trial(prog, emulation_probe_mov, TIME_WITHOUT_PAGE, &control);
#if defined(__x86_64__)
	if (!err)
		err = emulated(prog, emulation_probe_push, "PUSH", &control, &found.push);
	if (!err)
		err = emulated(prog, emulation_probe_nop, "a long NOP", &control, &found.long_nop);
#else
	if (!err)
		err = emulated(prog, emulation_probe_ret, "RET", &control, &found.ret);
#endif
	if (!pthread_create(&trials.reaper, NULL, reap, NULL))
		trials.reaping = true;
	if (err)
		return err;
	if (control.xol != 1)
		pr_debug("no out-of-line page seen for a MOV: what the kernel emulates was timed");
	*e = found;
	return 0;
#else
	(void)prog;
	memset(e, 0, sizeof(*e));
	return 0;
#endif
}

int emulation__override(struct emulation *e)
{
	const char *v = getenv("GOSPAN_UPROBE_EMULATION"), *p;
	struct emulation o = {};
	size_t len;

	if (!v)
		return 0;
	for (p = v; *p; p += len + (p[len] == ',')) {
		len = strcspn(p, ",");
		if (len == 4 && !strncmp(p, "push", 4)) {
			o.push = true;
		} else if (len == 8 && !strncmp(p, "long_nop", 8)) {
			o.long_nop = true;
		} else if (len == 3 && !strncmp(p, "ret", 3)) {
			o.ret = true;
		} else if (len) {
			pr_err("GOSPAN_UPROBE_EMULATION: '%.*s' is not push, long_nop or ret",
			       (int)len, p);
			return -EINVAL;
		}
	}
	pr_info("GOSPAN_UPROBE_EMULATION: probes placed as if the kernel emulated PUSH: %s, "
		"long NOPs: %s, RET (arm64): %s (it does: %s, %s, %s)",
		o.push ? "yes" : "no", o.long_nop ? "yes" : "no", o.ret ? "yes" : "no",
		e->push ? "yes" : "no", e->long_nop ? "yes" : "no", e->ret ? "yes" : "no");
	*e = o;
	return 0;
}
