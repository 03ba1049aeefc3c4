/* SPDX-License-Identifier: MIT */
/* OTEL_TRACES_EXPORTER=console: one readable line per span, for trying gospan without a backend. */
#ifndef GOSPAN_CONSOLE_H
#define GOSPAN_CONSOLE_H

#include <stdio.h>

struct span;

extern const struct sink_ops console_sink_ops;

/* Writes to OUT (not closed on free). NULL with errno on failure. */
void *console_sink__new(FILE *out);
/* Formats one span as the console line (no newline) into BUF; returns what snprintf returns. */
int console__format_span(const struct span *s, char *buf, size_t size);

#endif
