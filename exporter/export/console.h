/* SPDX-License-Identifier: MIT */
/*
 * OTEL_TRACES_EXPORTER=console: each finished trace as an indented waterfall on a stream, for
 * trying gospan without a backend. OTEL_METRICS_EXPORTER=console: the RED metrics as a table per
 * service, each export interval and at exit. The layouts and the rules for when a trace or a
 * table is printed are described at the top of console.c.
 */
#ifndef GOSPAN_CONSOLE_H
#define GOSPAN_CONSOLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

struct span;

extern const struct sink_ops console_sink_ops;

struct console_opts {
	FILE *out; /* not closed on free */
	/* Under each trace's tree, also every span's full line: ids and all attributes. */
	bool verbose;
	/* Spans held while their traces wait for a root; 0 = 1024. Beyond, the oldest goes out. */
	size_t max_pending;
	/* A trace whose root has not come this long after its first span is printed; 0 = 10000. */
	unsigned int orphan_ms;
	/* CLOCK_MONOTONIC in ns for the wait above; NULL = the real one. Tests pass their own. */
	uint64_t (*now_ns)(void);
};

/*
 * A console sink for exporter_opts.ctx (spans) or metric_reader_opts.ctx (metrics) with
 * &console_sink_ops: one sink per signal, since each is called from its own thread. NULL with
 * errno on failure. console_sink__new(out) is the same with every other option at its default.
 */
void *console_sink__new_opts(const struct console_opts *opts);
void *console_sink__new(FILE *out);
/*
 * Formats one span as its full line (no newline) into BUF, as the verbose mode prints it:
 *   SERVER GET /users/{id} 200 1.234ms trace=... span=... parent=- service=shop url.path=/users/42
 * Returns what snprintf returns.
 */
int console__format_span(const struct span *s, char *buf, size_t size);

#endif
