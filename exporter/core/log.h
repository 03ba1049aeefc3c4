/* SPDX-License-Identifier: MIT */
/*
 * Leveled logging to stderr. Every message starts with "gospan: " so it stands out in a service's
 * mixed logs; the level comes from OTEL_LOG_LEVEL (error, warn, info, debug).
 */
#ifndef GOSPAN_LOG_H
#define GOSPAN_LOG_H

#include <stdarg.h>

enum log_level {
	LOG_ERROR = 0,
	LOG_WARN,
	LOG_INFO,
	LOG_DEBUG,
};

void log_set_level(enum log_level level);
enum log_level log_get_level(void);
/* Parses "error", "warn", "info", "debug" (OpenTelemetry's names); -EINVAL otherwise. */
int log_parse_level(const char *s, enum log_level *out);
void log_msg(enum log_level level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void log_vmsg(enum log_level level, const char *fmt, va_list ap);

#define pr_err(...) log_msg(LOG_ERROR, __VA_ARGS__)
#define pr_warn(...) log_msg(LOG_WARN, __VA_ARGS__)
#define pr_info(...) log_msg(LOG_INFO, __VA_ARGS__)
#define pr_debug(...) log_msg(LOG_DEBUG, __VA_ARGS__)

#endif
