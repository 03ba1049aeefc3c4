/* SPDX-License-Identifier: MIT */
/*
 * On-CPU time (--cpu-time): the probe on the Go scheduler's goroutine state changes that lets
 * every span of a target carry how long its goroutine ran.
 */
#ifndef GOSPAN_CPUTIME_H
#define GOSPAN_CPUTIME_H

struct target;

/*
 * Finds runtime.casgstatus in target T (analysed, its analysis not yet ended): T->casgstatus
 * gets its entry and T->cfg.cpu_time is set. A binary without it is said and traced without
 * on-CPU time (0). A negative errno when the binary cannot be read, -EINVAL when T's analysis
 * has ended.
 */
int cputime__resolve(struct target *t);

#endif
