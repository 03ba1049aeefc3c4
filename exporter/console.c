// SPDX-License-Identifier: MIT
/*
 * The console sink: each span as one line a person can read and grep, e.g.
 *   SERVER GET /users/{id} 200 1.234ms trace=... span=... parent=- service=shop url.path=/users/42
 * A batch is written with one fwrite so that lines from a batch are not interleaved with other
 * output of the process, and values are escaped so that a captured newline cannot forge a line.
 */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "console.h"
#include "export.h"
#include "log.h"
#include "semconv.h"
#include "span.h"

#define LINE_HINT 512 /* a typical line; the batch buffer grows when lines are longer */

/* An snprintf-like writer: writes what fits, always NUL-terminated, and counts everything. */
struct out {
	char *buf;
	size_t size;
	size_t len; /* as if the buffer were unbounded */
};

static void put_bytes(struct out *o, const char *s, size_t n)
{
	if (o->len < o->size) {
		size_t room = o->size - o->len - 1;

		memcpy(o->buf + o->len, s, n < room ? n : room);
		o->buf[o->len + (n < room ? n : room)] = '\0';
	}
	o->len += n;
}

static void put_str(struct out *o, const char *s)
{
	put_bytes(o, s, strlen(s));
}

static void put_char(struct out *o, char c)
{
	put_bytes(o, &c, 1);
}

static void put_fmt(struct out *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void put_fmt(struct out *o, const char *fmt, ...)
{
	char tmp[64]; /* numbers and ids only */
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(tmp, sizeof(tmp), fmt, ap);
	va_end(ap);
	if (n > 0)
		put_bytes(o, tmp, (size_t)n < sizeof(tmp) ? (size_t)n : sizeof(tmp) - 1);
}

static void put_hex(struct out *o, const uint8_t *id, size_t len)
{
	static const char digits[] = "0123456789abcdef";
	size_t i;

	for (i = 0; i < len; i++) {
		put_char(o, digits[id[i] >> 4]);
		put_char(o, digits[id[i] & 0xf]);
	}
}

static bool needs_quotes(const char *s)
{
	const unsigned char *p = (const unsigned char *)s;

	if (!*p)
		return true; /* an empty value would look like a missing one */
	for (; *p; p++)
		if (*p <= ' ' || *p == '"' || *p == '\\' || *p == '=' || *p == 0x7f)
			return true;
	return false;
}

/*
 * Writes S with control bytes escaped (and, in QUOTED mode, quotes and backslashes too), so
 * that the line stays one line and a quoted value can be read back unambiguously. Bytes above
 * 0x7f are UTF-8 (span.c guarantees it) and pass through.
 */
static void put_escaped(struct out *o, const char *s, bool quoted)
{
	const unsigned char *p = (const unsigned char *)s;

	for (; *p; p++) {
		if (*p == '\n')
			put_str(o, "\\n");
		else if (*p == '\t')
			put_str(o, "\\t");
		else if (*p == '\r')
			put_str(o, "\\r");
		else if (*p < ' ' || *p == 0x7f)
			put_fmt(o, "\\x%02x", *p);
		else if (quoted && (*p == '"' || *p == '\\'))
			put_fmt(o, "\\%c", *p);
		else
			put_char(o, (char)*p);
	}
}

static void put_value(struct out *o, const char *s)
{
	if (!s)
		s = "";
	if (needs_quotes(s)) {
		put_char(o, '"');
		put_escaped(o, s, true);
		put_char(o, '"');
	} else {
		put_escaped(o, s, false);
	}
}

static void put_attr(struct out *o, const struct attr *a)
{
	put_char(o, ' ');
	put_escaped(o, a->key ? a->key : "?", false);
	put_char(o, '=');
	switch (a->type) {
	case ATTR_STRING:
		put_value(o, a->s);
		break;
	case ATTR_INT:
		put_fmt(o, "%" PRId64, a->i);
		break;
	case ATTR_BOOL:
		put_str(o, a->b ? "true" : "false");
		break;
	case ATTR_DOUBLE:
		put_fmt(o, "%g", a->d);
		break;
	default:
		put_char(o, '?');
		break;
	}
}

static const char *kind_name(enum span_kind kind)
{
	switch (kind) {
	case SPAN_KIND_INTERNAL:
		return "INTERNAL";
	case SPAN_KIND_SERVER:
		return "SERVER";
	case SPAN_KIND_CLIENT:
		return "CLIENT";
	case SPAN_KIND_PRODUCER:
		return "PRODUCER";
	case SPAN_KIND_CONSUMER:
		return "CONSUMER";
	default:
		return "UNSPECIFIED";
	}
}


int console__format_span(const struct span *s, char *buf, size_t size)
{
	struct out o = { .buf = buf, .size = size };
	const struct attr *a;
	size_t i;

	if (buf && size)
		buf[0] = '\0';
	if (!s)
		return -EINVAL;
	put_str(&o, kind_name(s->kind));
	put_char(&o, ' ');
	put_escaped(&o, s->name && *s->name ? s->name : "-", false);
	/* The HTTP status up front: it is what one scans a request log for. */
	a = span__get(s, SC_HTTP_RESPONSE_STATUS_CODE);
	if (a && a->type == ATTR_INT)
		put_fmt(&o, " %" PRId64, a->i);
	/* Signed, so that an end before the start shows up instead of a huge duration. */
	put_fmt(&o, " %.3fms", (double)(int64_t)(s->end_ns - s->start_ns) / 1e6);
	put_str(&o, " trace=");
	put_hex(&o, s->trace_id, sizeof(s->trace_id));
	put_str(&o, " span=");
	put_hex(&o, s->span_id, sizeof(s->span_id));
	put_str(&o, " parent=");
	if (span__id_is_zero(s->parent_span_id, sizeof(s->parent_span_id)))
		put_char(&o, '-');
	else
		put_hex(&o, s->parent_span_id, sizeof(s->parent_span_id));
	put_str(&o, " service=");
	a = s->res ? resource__get(s->res, SC_SERVICE_NAME) : NULL;
	if (a && a->type == ATTR_STRING)
		put_value(&o, a->s);
	else
		put_char(&o, '-');
	if (s->status == SPAN_STATUS_ERROR)
		put_str(&o, " status=ERROR");
	else if (s->status == SPAN_STATUS_OK)
		put_str(&o, " status=OK");
	if (s->status_msg) {
		put_str(&o, " status.message=");
		put_value(&o, s->status_msg);
	}
	for (i = 0; i < s->nattrs; i++)
		put_attr(&o, &s->attrs[i]);
	/* What snprintf would return; lines are far shorter than INT_MAX, the cap is for the type. */
	return o.len > INT_MAX ? INT_MAX : (int)o.len;
}

struct console_sink {
	FILE *out;
	char *buf;
	size_t cap;
};

static void console_sink_free(void *ctx)
{
	struct console_sink *c = ctx;

	if (!c)
		return;
	free(c->buf);
	free(c);
}

void *console_sink__new(FILE *out)
{
	struct console_sink *c;

	if (!out) {
		errno = EINVAL;
		return NULL;
	}
	c = calloc(1, sizeof(*c));
	if (!c)
		return NULL;
	c->out = out;
	return c;
}

/* Makes room for NEED more bytes after LEN, growing geometrically. */
static int reserve(struct console_sink *c, size_t len, size_t need)
{
	size_t cap = c->cap ? c->cap : LINE_HINT;
	char *buf;

	if (len + need <= c->cap)
		return 0;
	while (cap < len + need)
		cap *= 2;
	buf = realloc(c->buf, cap);
	if (!buf)
		return -ENOMEM;
	c->buf = buf;
	c->cap = cap;
	return 0;
}

static int console_export(void *ctx, struct span *const *spans, size_t n)
{
	struct console_sink *c = ctx;
	size_t i, len = 0;
	int err, w;

	for (i = 0; i < n; i++) {
		if (!spans[i])
			continue;
		err = reserve(c, len, LINE_HINT);
		if (err)
			goto fail;
		w = console__format_span(spans[i], c->buf + len, c->cap - len);
		if (w < 0)
			continue;
		/* +2: the newline, and the NUL the formatter always writes. */
		if ((size_t)w + 2 > c->cap - len) {
			err = reserve(c, len, (size_t)w + 2);
			if (err)
				goto fail;
			w = console__format_span(spans[i], c->buf + len, c->cap - len);
		}
		len += (size_t)w;
		c->buf[len++] = '\n';
	}
	if (!len)
		return 0;
	errno = 0; /* stdio does not always set it: a stale value must not be reported */
	if (fwrite(c->buf, 1, len, c->out) != len || fflush(c->out)) {
		err = errno ? -errno : -EIO;
		pr_err("cannot write %zu spans to the console: %s", n, strerror(-err));
		clearerr(c->out);
		return err;
	}
	return 0;
fail:
	pr_err("cannot format %zu spans for the console: %s", n, strerror(-err));
	return err;
}

const struct sink_ops console_sink_ops = {
	.name = "console",
	.export = console_export,
	.free = console_sink_free,
};
