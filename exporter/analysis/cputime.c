// SPDX-License-Identifier: MIT
/*
 * On-CPU time: the Go scheduler puts a goroutine on a thread in runtime.execute and takes it off
 * by calling runtime.schedule, so probes at their entries (past the stack check, on the frame
 * pointer's PUSH, which the kernel emulates) tell which goroutine each thread runs, and the
 * kernel's sched_switch tracepoint when the thread itself runs (bpf/cputime.bpf.c). Every span
 * kind then subtracts the goroutine's clock at its start from its clock at its end.
 */
#include <errno.h>

#include "analysis/analysis.h"
#include "analysis/cputime.h"
#include "analysis/target.h"
#include "core/log.h"

#define SYM_EXECUTE "runtime.execute"
#define SYM_SCHEDULE "runtime.schedule"

int cputime__resolve(struct target *t)
{
	const char *missing = SYM_EXECUTE;
	int err;

	if (!t->analysis)
		return -EINVAL;
	err = analysis__find_site(t->analysis, SYM_EXECUTE, &t->cpu_execute, SITE_ENTRY, 0);
	if (!err) {
		missing = SYM_SCHEDULE;
		err = analysis__find_site(t->analysis, SYM_SCHEDULE, &t->cpu_schedule, SITE_ENTRY,
					  0);
	}
	if (!err) {
		t->cfg.cpu_time = 1;
	} else if (err == -ENOENT) {
		pr_warn("'%s' has no %s: spans carry no on-CPU time", t->exe_name, missing);
		t->cpu_execute = t->cpu_schedule = (struct probe_site){};
		err = 0;
	}
	return err;
}
