/* SPDX-License-Identifier: MIT */
/*
 * A data store call (struct db_call, bpf/include/events.h) as a span's name and attributes, after
 * the OpenTelemetry database conventions.
 */
#ifndef GOSPAN_DBSPAN_H
#define GOSPAN_DBSPAN_H

#include <stdint.h>

#include "core/config.h"

struct db_call;
struct db_target;
struct span;

/*
 * Names S and sets its database attributes from E, a call of a process running the target
 * whose data store clients are D, loaded BIAS bytes from its link-time addresses. MODE: what
 * db.query.text keeps of the query.
 */
void dbspan__fill(struct span *s, const struct db_call *e, const struct db_target *d,
		  uint64_t bias, enum db_query_text mode);

#endif
