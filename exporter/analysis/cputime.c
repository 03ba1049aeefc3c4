// SPDX-License-Identifier: MIT
/*
 * On-CPU time: runtime.casgstatus sees every goroutine state change the scheduler makes, so a
 * probe at its entry can keep each goroutine's running time (bpf/go_runtime.bpf.c); every span kind
 * then subtracts the clock at its start from the clock at its end. Only its entry is probed.
 */
#include <errno.h>

#include "analysis/analysis.h"
#include "analysis/cputime.h"
#include "analysis/target.h"
#include "core/log.h"

#define SYM_CASGSTATUS "runtime.casgstatus"

int cputime__resolve(struct target *t)
{
	int err;

	if (!t->analysis)
		return -EINVAL;
	err = analysis__find_site(t->analysis, SYM_CASGSTATUS, &t->casgstatus, SITE_ENTRY, 0);
	if (!err) {
		t->cfg.cpu_time = 1;
	} else if (err == -ENOENT) {
		pr_warn("'%s' has no %s: spans carry no on-CPU time", t->exe_name, SYM_CASGSTATUS);
		t->casgstatus = (struct probe_site){};
		err = 0;
	}
	return err;
}
