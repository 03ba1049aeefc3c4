/* SPDX-License-Identifier: MIT */
/*
 * On-CPU time (--cpu-time): the probes on the Go scheduler's switches between goroutines that let
 * every span of a target carry how long its goroutine ran.
 */
#ifndef GOSPAN_CPUTIME_H
#define GOSPAN_CPUTIME_H

struct target;

/*
 * Finds runtime.execute and runtime.schedule in target T (analysed, its analysis not yet ended):
 * T->cpu_execute and T->cpu_schedule get their entries and T->cfg.cpu_time is set. A binary
 * without them is said and traced without on-CPU time (0). A negative errno when the binary cannot be read, -EINVAL when T's analysis
 * has ended.
 */
int cputime__resolve(struct target *t);

#endif
