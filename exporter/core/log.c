// SPDX-License-Identifier: MIT
/* Leveled logging: one place decides what reaches stderr and how it is prefixed. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "core/log.h"

static enum log_level cur_level = LOG_INFO;

void log_set_level(enum log_level level)
{
	cur_level = level;
}

enum log_level log_get_level(void)
{
	return cur_level;
}

int log_parse_level(const char *s, enum log_level *out)
{
	static const struct {
		const char *name;
		enum log_level level;
	} names[] = {
		{ "error", LOG_ERROR }, { "warn", LOG_WARN },	{ "warning", LOG_WARN },
		{ "info", LOG_INFO },	{ "debug", LOG_DEBUG },
	};
	size_t i;

	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		if (!strcasecmp(s, names[i].name)) {
			*out = names[i].level;
			return 0;
		}
	}
	return -EINVAL;
}

void log_vmsg(enum log_level level, const char *fmt, va_list ap)
{
	char small[1024], *buf = small;
	va_list again;
	int n;

	if (level > cur_level)
		return;
	/* Format first and write once, so lines from two threads never interleave. */
	va_copy(again, ap);
	n = vsnprintf(small, sizeof(small), fmt, ap);
	/* A longer message (the verifier's log, which libbpf passes whole) is kept whole. */
	if (n >= (int)sizeof(small)) {
		buf = malloc((size_t)n + 1);
		if (buf)
			n = vsnprintf(buf, (size_t)n + 1, fmt, again);
		else
			buf = small, n = sizeof(small) - 1;
	}
	va_end(again);
	if (n < 0)
		goto out;
	if (n > 0 && buf[n - 1] == '\n')
		buf[--n] = '\0';
	fprintf(stderr, "gospan: %s\n", buf);
out:
	if (buf != small)
		free(buf);
}

void log_msg(enum log_level level, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	log_vmsg(level, fmt, ap);
	va_end(ap);
}
