// SPDX-License-Identifier: MIT
/*
 * The console sink: each finished trace as a waterfall a person can read at a glance, and the
 * RED metrics as a table per service (below). A trace, e.g.
 *
 *   trace eb83beea7234d97b5032e888634b1a03  frontend  2 spans  0.879 ms
 *     SERVER GET /direct/{id} 200 ........     0.879 ms |########################################|
 *       CLIENT GET 200 -> 127.0.0.1:33805      0.617 ms |  #############################         |
 *
 * A header names the trace, the service of its first span, how many spans and the time from the
 * first start to the last end. Under it, one line per span: indented by depth (children in order
 * of start), kind, name, HTTP status, ERROR with error.type, the peer of a CLIENT span, the
 * duration, and a bar of BAR_WIDTH columns placed by the span's start and scaled by its duration
 * against the whole trace's window; a span too short for a column still gets one mark. The label
 * column widens to the longest label seen so far (up to LABEL_MAX, cut with an ellipsis beyond)
 * and never narrows, so that the bars of one trace after another stay in the same columns. With
 * console_opts.verbose every span's full line (ids, every attribute, the format of
 * console__format_span) follows the tree, unindented, so those lines can still be grepped.
 *
 * Spans arrive as they end, children usually before their parent, possibly over several batches.
 * They wait, copied down to what is printed, until their trace's local root arrives: a span with
 * no parent, or whose parent is in another process (an incoming traceparent). The root's tree is
 * printed at the end of the batch that brought it. When gospan traces both ends of a call and
 * holds the caller's CLIENT span too, the callee's root hangs under it and both are one tree
 * (if a batch boundary falls between the two, they are printed as two trees). A span whose parent
 * was printed already (a goroutine that outlived its request) is printed as a late continuation
 * under its parent's depth, marked "(late)". A trace whose root never comes is printed as it is,
 * rootless, once its first span has waited console_opts.orphan_ms (looked at whenever a batch
 * comes, as the sink has no thread of its own), or when the buffer of console_opts.max_pending
 * spans is full (oldest trace first), and everything still waiting is printed when the sink is
 * freed: nothing is dropped silently.
 *
 * The metrics (export_metrics, from the metric reader) are a table per service, e.g.
 *
 *   metrics of frontend (pid 4242), last 60.0 s:
 *     KIND         OPERATION                       REQUESTS  RATE/S  ERRORS  ERROR%  P50 ms ...
 *     http server  GET /backend-fail                      2    0.03       2  100.0%   0.249 ...
 *     http client  GET 127.0.0.1:43761                   10    0.17       2   20.0%   2.500 ...
 *     rpc client   inventory.v1.Inventory/GetItem         6    0.10       0    0.0%   0.417 ...
 *
 *   metrics of gospan (pid 4300), last 60.0 s: spans exported 24, lost 0
 *
 * One row per operation: an HTTP server's method and route, an HTTP client's method and server,
 * an RPC's service/method, a data store's system, operation and collection; its status codes
 * merged, the calls of points with error.type counted as errors, the percentiles estimated from
 * the merged buckets (metric_point__quantile), in milliseconds whatever the instrument's unit.
 * The rate is over the time the service's points cover: the interval, or from its first call
 * when that came within it. The instrument's overflow set is a row of its own, "(other:
 * cardinality limit)", whose errors are not known. Services come in order of name and pid,
 * then gospan's own line: of its health sums only the spans exported and lost, which tell
 * whether the traces are whole (the rest its summary line says at exit).
 *
 * main.c asks the store for delta points, so each table shows one interval: what a person
 * watching a terminal wants to see change. The sink adds the intervals up per service name,
 * and at exit, in place of the last interval's few seconds, prints those totals ("at exit,
 * totals over N s", rates over the time from the service's first call to the exit; the
 * processes of a service merged, their pids in the title). Cumulative points, already totals,
 * are printed as they come ("totals over N s"), the last batch's as the totals at exit.
 *
 * The output of one batch is written with one fwrite, so a trace or a table is never
 * interleaved with other output of the process (the span and metric sinks write to the same
 * stdout from their own threads), and values are escaped so that a captured newline cannot forge
 * a line.
 */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/clock.h"
#include "export/console.h"
#include "export/export.h"
#include "core/log.h"
#include "model/metrics.h"
#include "model/semconv.h"
#include "model/span.h"

#define BAR_WIDTH 40
#define INDENT 2
/* Deeper spans are drawn at this depth: a wider margin would eat the line; the bar still tells. */
#define MAX_INDENT_DEPTH 12
/* The label column (margin included) grows to the longest label so far, within these bounds. */
#define LABEL_MIN 32
#define LABEL_MAX 72
#define DEFAULT_MAX_PENDING 1024
/* Twice the default OTEL_BSP_SCHEDULE_DELAY: a root one batch late still finds its children. */
#define DEFAULT_ORPHAN_MS 10000
/* Printed spans remembered so that a late child finds its parent's depth and window. */
#define SEEN_BITS 12
#define SEEN_SLOTS (1u << SEEN_BITS)
#define OUT_HINT 4096

/*
 * An snprintf-like writer: writes what fits, always NUL-terminated, and counts everything. In
 * GROW mode it reallocates instead, and remembers a failed reallocation in NOMEM.
 */
struct out {
	char *buf;
	size_t size;
	size_t len; /* as if the buffer were unbounded */
	bool grow;
	bool nomem;
};

static void grow(struct out *o, size_t need)
{
	size_t cap = o->size ? o->size : OUT_HINT;
	char *buf;

	while (cap < need)
		cap *= 2;
	buf = realloc(o->buf, cap);
	if (!buf) {
		o->nomem = true;
		return;
	}
	o->buf = buf;
	o->size = cap;
}

static void put_bytes(struct out *o, const char *s, size_t n)
{
	if (o->grow && !o->nomem && o->len + n + 1 > o->size)
		grow(o, o->len + n + 1);
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

static void put_repeat(struct out *o, char c, size_t n)
{
	while (n--)
		put_char(o, c);
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

/* A's value: a string QUOTED as put_value() writes it, or as it is (escaped). */
static void put_attr_value(struct out *o, const struct attr *a, bool quoted)
{
	switch (a->type) {
	case ATTR_STRING:
		if (quoted)
			put_value(o, a->s);
		else
			put_escaped(o, a->s, false);
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

static void put_attr(struct out *o, const struct attr *a)
{
	put_char(o, ' ');
	put_escaped(o, a->key ? a->key : "?", false);
	put_char(o, '=');
	put_attr_value(o, a, true);
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

static const char *service_name(const struct span *s)
{
	const struct attr *a = s->res ? resource__get(s->res, SC_SERVICE_NAME) : NULL;

	return a && a->type == ATTR_STRING ? a->s : NULL;
}

/* Signed, so that an end before the start shows up instead of a huge duration. */
static double duration_ms(uint64_t start_ns, uint64_t end_ns)
{
	return (double)(int64_t)(end_ns - start_ns) / 1e6;
}

static void put_span_line(struct out *o, const struct span *s)
{
	const struct attr *a;
	const char *svc;
	size_t i;

	put_str(o, kind_name(s->kind));
	put_char(o, ' ');
	put_escaped(o, s->name && *s->name ? s->name : "-", false);
	/* The HTTP status up front: it is what one scans a request log for. */
	a = span__get(s, SC_HTTP_RESPONSE_STATUS_CODE);
	if (a && a->type == ATTR_INT)
		put_fmt(o, " %" PRId64, a->i);
	put_fmt(o, " %.3fms", duration_ms(s->start_ns, s->end_ns));
	put_str(o, " trace=");
	put_hex(o, s->trace_id, sizeof(s->trace_id));
	put_str(o, " span=");
	put_hex(o, s->span_id, sizeof(s->span_id));
	put_str(o, " parent=");
	if (span__id_is_zero(s->parent_span_id, sizeof(s->parent_span_id)))
		put_char(o, '-');
	else
		put_hex(o, s->parent_span_id, sizeof(s->parent_span_id));
	put_str(o, " service=");
	svc = service_name(s);
	if (svc)
		put_value(o, svc);
	else
		put_char(o, '-');
	if (s->status == SPAN_STATUS_ERROR)
		put_str(o, " status=ERROR");
	else if (s->status == SPAN_STATUS_OK)
		put_str(o, " status=OK");
	if (s->status_msg) {
		put_str(o, " status.message=");
		put_value(o, s->status_msg);
	}
	for (i = 0; i < s->nattrs; i++)
		put_attr(o, &s->attrs[i]);
}

int console__format_span(const struct span *s, char *buf, size_t size)
{
	struct out o = { .buf = buf, .size = size };

	if (buf && size)
		buf[0] = '\0';
	if (!s)
		return -EINVAL;
	put_span_line(&o, s);
	/* What snprintf would return; lines are far below INT_MAX, the cap is for the type. */
	return o.len > INT_MAX ? INT_MAX : (int)o.len;
}

/*
 * The short label of a span's tree line: kind, name, HTTP status, ERROR with its type (unless
 * that is only the status again), and where a CLIENT span went. Escaped like the full line.
 */
static void put_label(struct out *o, const struct span *s)
{
	const struct attr *code = span__get(s, SC_HTTP_RESPONSE_STATUS_CODE);
	const struct attr *a;
	char num[24] = "";

	put_str(o, kind_name(s->kind));
	put_char(o, ' ');
	put_escaped(o, s->name && *s->name ? s->name : "-", false);
	if (code && code->type == ATTR_INT) {
		snprintf(num, sizeof(num), "%" PRId64, code->i);
		put_char(o, ' ');
		put_str(o, num);
	}
	if (s->status == SPAN_STATUS_ERROR) {
		put_str(o, " ERROR");
		a = span__get(s, SC_ERROR_TYPE);
		if (a && a->type == ATTR_STRING && strcmp(a->s, num)) {
			put_char(o, ' ');
			put_escaped(o, a->s, false);
		} else if (!a && s->status_msg) {
			put_char(o, ' ');
			put_escaped(o, s->status_msg, false);
		}
	}
	if (s->kind != SPAN_KIND_CLIENT)
		return;
	a = span__get(s, SC_SERVER_ADDRESS);
	if (!a || a->type != ATTR_STRING)
		return;
	put_str(o, " -> ");
	put_escaped(o, a->s, false);
	a = span__get(s, SC_SERVER_PORT);
	if (a && a->type == ATTR_INT)
		put_fmt(o, ":%" PRId64, a->i);
}

/* Terminal columns of UTF-8 text: one per character (wide characters are rare in routes). */
static size_t text_cols(const char *s)
{
	size_t n = 0;

	for (; *s; s++)
		n += ((unsigned char)*s & 0xc0) != 0x80;
	return n;
}

/* Where TEXT's first COLS characters end, so a cut never splits a character. */
static size_t text_prefix(const char *s, size_t cols)
{
	size_t i = 0;

	for (; s[i]; i++) {
		if (((unsigned char)s[i] & 0xc0) != 0x80) {
			if (!cols)
				break;
			cols--;
		}
	}
	return i;
}

/* One held span: only what its lines print, in one allocation. */
struct rec {
	uint8_t span_id[8];
	uint8_t parent_id[8];
	uint64_t start_ns;
	uint64_t end_ns;
	uint64_t seq;		       /* arrival order, so equal starts keep a stable order */
	bool root;		       /* no parent, or a parent in another process */
	bool remote;		       /* the parent came in a traceparent */
	bool late;		       /* its parent was printed already */
	unsigned int late_depth;       /* the parent's depth + 1 */
	uint64_t late_start, late_end; /* the window the parent was drawn against */
	const char *label;	       /* escaped */
	const char *service;	       /* escaped; "" when unknown */
	const char *detail;	       /* the full line, when verbose; else NULL */
	size_t label_cols;
	/* Drawing scratch, valid during one draw_trace. */
	struct rec *parent, *child, *sibling;
	unsigned int depth;
	bool drawn;
	char text[];
};

struct trace {
	uint8_t trace_id[16];
	uint64_t first_ns; /* monotonic, when its first held span arrived */
	bool ready;	   /* holds a root or a late span: draw at the end of the batch */
	size_t n, cap;
	struct rec **recs;
};

/* A printed span, so that a child arriving after it knows where it belongs. */
struct seen {
	uint8_t trace_id[16];
	uint8_t span_id[8];
	bool used;
	unsigned int depth;
	uint64_t win_start, win_end;
};

struct frame {
	struct rec *next; /* the next sibling to visit at this depth */
	unsigned int depth;
};

enum draw_why {
	DRAW_ROOTS,   /* the roots and late spans that arrived, with what hangs under them */
	DRAW_TIMEOUT, /* everything: no root came in time */
	DRAW_FULL,    /* everything: the buffer is full and this trace is the oldest */
	DRAW_EXIT,    /* everything: the sink is being freed */
};

/*
 * One row of a metrics table: what a service measured for one operation (an HTTP route, a
 * server called, an RPC, a data store operation) with one instrument, its status codes and
 * errors merged into one histogram.
 */
struct mrow {
	const struct metric_desc *desc;
	unsigned int inst; /* enum metric_instrument; METRIC_INSTRUMENTS: another histogram */
	bool overflow;	   /* the instrument's overflow set, "(other: cardinality limit)" */
	bool delta;	   /* made of delta points: the totals at exit add it up */
	char *label;	   /* the operation, escaped */
	size_t label_cols;
	uint64_t start_ns, end_ns; /* UNIX: the time its points cover; end 0: none yet */
	uint64_t count, errors;	   /* errors: the calls of points with error.type */
	double sum, min, max;
	uint64_t buckets[METRIC_MAX_BOUNDS + 1];
};

/* A service's table, and gospan's own counts when the resource is gospan's. */
struct msvc {
	char *name; /* service.name, escaped */
	/* A batch's: the resource its points are of (the batch holds it). Totals: NULL. */
	const struct resource *res;
	int64_t *pids; /* distinct, in increasing order */
	size_t npids, pids_cap;
	struct mrow *rows; /* in the table's order (row_cmp) */
	size_t nrows, rows_cap;
	/* gospan's health sums: spans exported and lost, the time they cover. */
	bool spans, spans_delta, exported_seen;
	uint64_t exported, lost;
	uint64_t spans_start_ns, spans_end_ns;
};

/* The tables of one batch, or the totals at exit. */
struct mset {
	struct msvc *svcs;
	size_t n, cap;
};

struct console_sink {
	FILE *out;
	bool verbose;
	size_t max_pending;
	uint64_t orphan_ns;
	uint64_t (*now_ns)(void);
	struct trace **traces; /* waiting, oldest first; each holds at least one span */
	size_t ntraces;
	size_t npending; /* spans held over all traces */
	uint64_t seq;
	size_t label_width; /* the widest label column so far */
	struct seen *seen;  /* SEEN_SLOTS, direct-mapped: a collision only forgets an older span */
	/* Per-draw scratch, max_pending entries each, allocated once. */
	struct rec **order;
	struct rec **lines;
	struct frame *stack;
	struct out o;	    /* the output of one export call */
	struct out scratch; /* one span's label, service and detail while it is copied */
	/* Metrics: delta rows added up per service name, printed at exit. */
	struct mset totals;
	uint64_t last_batch_ns; /* UNIX: when the last batch was collected */
	bool stopping;		/* atomic: the metric reader's last export is next */
};

static void trace_free(struct trace *t)
{
	size_t i;

	if (!t)
		return;
	for (i = 0; i < t->n; i++)
		free(t->recs[i]);
	free(t->recs);
	free(t);
}

static void msvc_clear(struct msvc *v)
{
	size_t i;

	for (i = 0; i < v->nrows; i++)
		free(v->rows[i].label);
	free(v->rows);
	free(v->pids);
	free(v->name);
}

static void mset_clear(struct mset *m)
{
	size_t i;

	for (i = 0; i < m->n; i++)
		msvc_clear(&m->svcs[i]);
	free(m->svcs);
	memset(m, 0, sizeof(*m));
}

static void console_sink_destroy(struct console_sink *c)
{
	size_t i;

	for (i = 0; i < c->ntraces; i++)
		trace_free(c->traces[i]);
	free(c->traces);
	free(c->seen);
	free(c->order);
	free(c->lines);
	free(c->stack);
	free(c->o.buf);
	free(c->scratch.buf);
	mset_clear(&c->totals);
	free(c);
}

void *console_sink__new_opts(const struct console_opts *opts)
{
	struct console_sink *c;
	size_t max;

	if (!opts || !opts->out) {
		errno = EINVAL;
		return NULL;
	}
	max = opts->max_pending ? opts->max_pending : DEFAULT_MAX_PENDING;
	c = calloc(1, sizeof(*c));
	if (!c)
		return NULL;
	c->out = opts->out;
	c->verbose = opts->verbose;
	c->max_pending = max;
	c->orphan_ns = (uint64_t)(opts->orphan_ms ? opts->orphan_ms : DEFAULT_ORPHAN_MS) * 1000000;
	c->now_ns = opts->now_ns ? opts->now_ns : clock__mono_now;
	c->o.grow = true;
	c->scratch.grow = true;
	c->traces = calloc(max, sizeof(*c->traces));
	c->seen = calloc(SEEN_SLOTS, sizeof(*c->seen));
	c->order = calloc(max, sizeof(*c->order));
	c->lines = calloc(max, sizeof(*c->lines));
	/* +1: the walk pushes the level under the deepest span before it finds it empty. */
	c->stack = calloc(max + 1, sizeof(*c->stack));
	if (!c->traces || !c->seen || !c->order || !c->lines || !c->stack) {
		console_sink_destroy(c);
		errno = ENOMEM;
		return NULL;
	}
	return c;
}

void *console_sink__new(FILE *out)
{
	struct console_opts opts = { .out = out };

	return console_sink__new_opts(&opts);
}

static struct seen *seen_slot(struct console_sink *c, const uint8_t *span_id)
{
	uint64_t h;

	/*
	 * Multiplicative hashing, top bits: W3C asks for random ids, but a counter in either end
	 * of an id from another tracer must not pile into one slot either.
	 */
	memcpy(&h, span_id, sizeof(h));
	return &c->seen[(h * 0x9e3779b97f4a7c15ULL) >> (64 - SEEN_BITS)];
}

static const struct seen *seen_find(struct console_sink *c, const uint8_t *trace_id,
				    const uint8_t *span_id)
{
	const struct seen *e = seen_slot(c, span_id);

	if (!e->used || memcmp(e->span_id, span_id, sizeof(e->span_id)) ||
	    memcmp(e->trace_id, trace_id, sizeof(e->trace_id)))
		return NULL;
	return e;
}

/* Copies what S's lines need. NULL when out of memory. */
static struct rec *rec_new(struct console_sink *c, const struct span *s)
{
	struct out *o = &c->scratch;
	size_t label_len, service_len;
	const char *svc;
	struct rec *r;

	o->len = 0;
	o->nomem = false;
	put_label(o, s);
	put_char(o, '\0');
	label_len = o->len;
	svc = service_name(s);
	put_escaped(o, svc ? svc : "", false);
	put_char(o, '\0');
	service_len = o->len - label_len;
	if (c->verbose) {
		put_span_line(o, s);
		put_char(o, '\0');
	}
	if (o->nomem)
		return NULL;
	r = calloc(1, sizeof(*r) + o->len);
	if (!r)
		return NULL;
	memcpy(r->text, o->buf, o->len);
	r->label = r->text;
	r->service = r->text + label_len;
	r->detail = c->verbose ? r->text + label_len + service_len : NULL;
	r->label_cols = text_cols(r->label);
	memcpy(r->span_id, s->span_id, sizeof(r->span_id));
	memcpy(r->parent_id, s->parent_span_id, sizeof(r->parent_id));
	r->start_ns = s->start_ns;
	/* An end before the start (a clock step) draws as a point; the duration still shows it. */
	r->end_ns = s->end_ns;
	r->seq = c->seq++;
	r->remote = s->parent_known && s->remote_parent;
	r->root = r->remote || span__id_is_zero(s->parent_span_id, sizeof(s->parent_span_id));
	return r;
}

static int rec_cmp(const void *a, const void *b)
{
	const struct rec *x = *(struct rec *const *)a, *y = *(struct rec *const *)b;

	if (x->start_ns != y->start_ns)
		return x->start_ns < y->start_ns ? -1 : 1;
	/* Same start: the longer first, as a parent is drawn above the child it started with. */
	if (x->end_ns != y->end_ns)
		return x->end_ns > y->end_ns ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

static uint64_t rec_end(const struct rec *r)
{
	return r->end_ns < r->start_ns ? r->start_ns : r->end_ns;
}

/*
 * The bar of a span from START to END in the window W0..W1: the columns it covers, at least one
 * (a zero-length span, or one shorter than a column, still shows where it happened).
 */
static void put_bar(struct out *o, uint64_t w0, uint64_t w1, uint64_t start, uint64_t end)
{
	uint64_t total = w1 - w0, a, b;
	size_t first, last, i;

	if (end < start)
		end = start;
	a = start > w0 ? start - w0 : 0;
	b = end > w0 ? end - w0 : 0;
	a = a < total ? a : total;
	b = b < total ? b : total;
	/* Keep offset * BAR_WIDTH within 64 bits; only windows of years need it. */
	while (total > UINT64_MAX / BAR_WIDTH) {
		total >>= 1;
		a >>= 1;
		b >>= 1;
	}
	if (!total) {
		first = 0;
		last = 1;
	} else {
		first = a * BAR_WIDTH / total;
		last = (b * BAR_WIDTH + total - 1) / total;
	}
	if (first >= BAR_WIDTH)
		first = BAR_WIDTH - 1;
	if (last <= first)
		last = first + 1;
	if (last > BAR_WIDTH)
		last = BAR_WIDTH;
	put_char(o, '|');
	for (i = 0; i < BAR_WIDTH; i++)
		put_char(o, i >= first && i < last ? '#' : ' ');
	put_char(o, '|');
}

/* Lists the lines of a subtree in drawing order, depth first, children by start. */
static size_t walk(struct console_sink *c, struct rec *top, unsigned int depth, size_t n)
{
	size_t sp = 0;
	struct rec *r;

	top->drawn = true;
	top->depth = depth;
	c->lines[n++] = top;
	c->stack[sp++] = (struct frame){ top->child, depth + 1 };
	while (sp) {
		struct frame *f = &c->stack[sp - 1];

		r = f->next;
		if (!r) {
			sp--;
			continue;
		}
		f->next = r->sibling;
		/* A span is drawn once, even with duplicate ids making it reachable twice. */
		if (r->drawn)
			continue;
		r->drawn = true;
		r->depth = f->depth;
		c->lines[n++] = r;
		c->stack[sp++] = (struct frame){ r->child, r->depth + 1 };
	}
	return n;
}

static const char *why_text(enum draw_why why)
{
	switch (why) {
	case DRAW_TIMEOUT:
		return "root not seen in time";
	case DRAW_FULL:
		return "root not seen, buffer full";
	case DRAW_EXIT:
		return "root not seen before exit";
	default:
		return "";
	}
}

static void put_header(struct console_sink *c, const struct trace *t, size_t n, enum draw_why why,
		       uint64_t w0, uint64_t w1)
{
	const struct rec *first = c->lines[0];
	struct out *o = &c->o;
	size_t i, nlate = 0;
	bool rooted = false;

	for (i = 0; i < n; i++) {
		nlate += c->lines[i]->late;
		rooted |= c->lines[i]->root;
	}
	put_str(o, "trace ");
	put_hex(o, t->trace_id, sizeof(t->trace_id));
	if (*first->service) {
		put_str(o, "  ");
		put_str(o, first->service);
	}
	if (nlate == n) {
		put_fmt(o, "  %zu late span%s of a trace printed earlier", n, n == 1 ? "" : "s");
	} else {
		put_fmt(o, "  %zu span%s  %.3f ms", n, n == 1 ? "" : "s", duration_ms(w0, w1));
		if (nlate)
			put_fmt(o, "  %zu late", nlate);
	}
	if (first->root && first->remote) {
		put_str(o, "  remote parent ");
		put_hex(o, first->parent_id, sizeof(first->parent_id));
	}
	if (!rooted && nlate < n) {
		put_str(o, "  (");
		put_str(o, why_text(why));
		put_char(o, ')');
	}
	put_char(o, '\n');
}

static void put_line(struct console_sink *c, const struct rec *r, const char *service,
		     size_t label_width, uint64_t w0, uint64_t w1)
{
	unsigned int depth = r->depth < MAX_INDENT_DEPTH ? r->depth : MAX_INDENT_DEPTH;
	size_t indent = INDENT + INDENT * depth, avail = label_width - indent, cols = r->label_cols;
	struct out *o = &c->o;

	put_repeat(o, ' ', indent);
	if (cols > avail) {
		/* Cut to leave room for the ellipsis; the verbose line keeps the whole name. */
		put_bytes(o, r->label, text_prefix(r->label, avail - 1));
		put_str(o, "\xe2\x80\xa6");
		cols = avail;
	} else {
		put_str(o, r->label);
	}
	put_char(o, ' ');
	put_repeat(o, '.', avail - cols);
	put_fmt(o, " %9.3f ms ", duration_ms(r->start_ns, r->end_ns));
	put_bar(o, w0, w1, r->start_ns, rec_end(r));
	if (r->late)
		put_str(o, "  (late)");
	if (strcmp(r->service, service)) {
		put_str(o, "  (service ");
		put_str(o, *r->service ? r->service : "unknown");
		put_char(o, ')');
	}
	put_char(o, '\n');
}

static void trace_remove(struct console_sink *c, size_t idx)
{
	trace_free(c->traces[idx]);
	memmove(&c->traces[idx], &c->traces[idx + 1], (c->ntraces - idx - 1) * sizeof(*c->traces));
	c->ntraces--;
}

/*
 * Draws trace IDX into the batch output: with DRAW_ROOTS the subtrees of its roots and late
 * spans, otherwise everything it holds. Drawn spans are remembered and let go; the trace goes
 * when it holds nothing more.
 */
static void draw_trace(struct console_sink *c, size_t idx, enum draw_why why)
{
	struct trace *t = c->traces[idx];
	size_t i, j, n = 0, width = 0, kept = 0;
	uint64_t w0 = UINT64_MAX, w1 = 0;
	struct rec *r;

	t->ready = false;
	for (i = 0; i < t->n; i++) {
		r = t->recs[i];
		r->parent = r->child = r->sibling = NULL;
		r->drawn = false;
		c->order[i] = r;
	}
	/*
	 * Quadratic, but bounded by max_pending and paid once per trace. A root whose parent is in
	 * another process is still linked when that parent is here: gospan tracing both ends of a
	 * call draws them as one tree when they arrive together.
	 */
	for (i = 0; i < t->n; i++) {
		r = t->recs[i];
		if ((r->root && !r->remote) || r->late)
			continue;
		for (j = 0; j < t->n; j++) {
			if (j != i &&
			    !memcmp(t->recs[j]->span_id, r->parent_id, sizeof(r->parent_id))) {
				r->parent = t->recs[j];
				break;
			}
		}
	}
	qsort(c->order, t->n, sizeof(*c->order), rec_cmp);
	/* Backwards, so that each child list comes out in order of start. */
	for (i = t->n; i--;) {
		r = c->order[i];
		if (r->parent) {
			r->sibling = r->parent->child;
			r->parent->child = r;
		}
	}
	for (i = 0; i < t->n; i++) {
		r = c->order[i];
		if (!r->parent && (r->root || r->late || why != DRAW_ROOTS))
			n = walk(c, r, r->late ? r->late_depth : 0, n);
	}
	/* Whatever no top reaches hangs in a cycle of parent ids: it is drawn all the same. */
	for (i = 0; why != DRAW_ROOTS && i < t->n; i++) {
		if (!c->order[i]->drawn)
			n = walk(c, c->order[i], 0, n);
	}
	if (!n)
		return;

	for (i = 0; i < n; i++) {
		r = c->lines[i];
		w0 = r->start_ns < w0 ? r->start_ns : w0;
		w1 = rec_end(r) > w1 ? rec_end(r) : w1;
		if (r->late) {
			/* Against the window its parent was drawn in, so the bars line up. */
			w0 = r->late_start < w0 ? r->late_start : w0;
			w1 = r->late_end > w1 ? r->late_end : w1;
		}
		j = INDENT + INDENT * (r->depth < MAX_INDENT_DEPTH ? r->depth : MAX_INDENT_DEPTH);
		width = j + r->label_cols > width ? j + r->label_cols : width;
	}
	/* Never narrower than before: the bars of successive traces stay in the same columns. */
	width = width < c->label_width ? c->label_width : width;
	width = width < LABEL_MIN ? LABEL_MIN : width > LABEL_MAX ? LABEL_MAX : width;
	c->label_width = width;
	put_header(c, t, n, why, w0, w1);
	for (i = 0; i < n; i++)
		put_line(c, c->lines[i], c->lines[0]->service, width, w0, w1);
	for (i = 0; c->verbose && i < n; i++) {
		put_str(&c->o, c->lines[i]->detail);
		put_char(&c->o, '\n');
	}
	put_char(&c->o, '\n');

	for (i = 0; i < n; i++) {
		struct seen *e;

		r = c->lines[i];
		e = seen_slot(c, r->span_id);
		memcpy(e->trace_id, t->trace_id, sizeof(e->trace_id));
		memcpy(e->span_id, r->span_id, sizeof(e->span_id));
		e->used = true;
		e->depth = r->depth;
		e->win_start = w0;
		e->win_end = w1;
	}
	for (i = 0; i < t->n; i++) {
		r = t->recs[i];
		if (r->drawn)
			free(r);
		else
			t->recs[kept++] = r;
	}
	c->npending -= t->n - kept;
	t->n = kept;
	if (!t->n)
		trace_remove(c, idx);
}

static struct trace *trace_get(struct console_sink *c, const uint8_t *trace_id)
{
	struct trace *t;
	size_t i;

	/* Linear: a handful of traces wait at a time, and never more than max_pending. */
	for (i = 0; i < c->ntraces; i++)
		if (!memcmp(c->traces[i]->trace_id, trace_id, sizeof(t->trace_id)))
			return c->traces[i];
	t = calloc(1, sizeof(*t));
	if (!t)
		return NULL;
	memcpy(t->trace_id, trace_id, sizeof(t->trace_id));
	t->first_ns = c->now_ns();
	c->traces[c->ntraces++] = t;
	return t;
}

/* Holds S until its trace can be drawn. -ENOMEM when it cannot be copied. */
static int hold(struct console_sink *c, const struct span *s)
{
	const struct seen *e;
	struct trace *t;
	struct rec *r;

	/* Room first: evicting may draw (and free) the very trace S belongs to. */
	if (c->npending >= c->max_pending)
		draw_trace(c, 0, DRAW_FULL);
	r = rec_new(c, s);
	if (!r)
		return -ENOMEM;
	if (!r->root) {
		e = seen_find(c, s->trace_id, r->parent_id);
		if (e) {
			r->late = true;
			r->late_depth = e->depth + 1;
			r->late_start = e->win_start;
			r->late_end = e->win_end;
		}
	}
	t = trace_get(c, s->trace_id);
	if (!t)
		goto fail;
	if (t->n == t->cap) {
		size_t cap = t->cap ? t->cap * 2 : 4;
		struct rec **recs = realloc(t->recs, cap * sizeof(*recs));

		if (!recs) {
			if (!t->n)
				trace_remove(c, c->ntraces - 1); /* just created, so the last */
			goto fail;
		}
		t->recs = recs;
		t->cap = cap;
	}
	t->recs[t->n++] = r;
	c->npending++;
	t->ready |= r->root || r->late;
	return 0;
fail:
	free(r);
	return -ENOMEM;
}

/* Writes the batch output of WHAT (traces, metrics); -errno when the stream refuses it. */
static int flush_out(struct console_sink *c, const char *what)
{
	struct out *o = &c->o;
	size_t len = o->len;
	int err = 0;

	if (o->nomem) {
		/* What fits is still worth showing, up to its last whole line. */
		len = o->size ? o->size - 1 : 0;
		while (len && o->buf[len - 1] != '\n')
			len--;
		err = -ENOMEM;
		pr_err("cannot format %s for the console: %s", what, strerror(ENOMEM));
	}
	o->len = 0;
	o->nomem = false;
	if (!len)
		return err;
	errno = 0; /* stdio does not always set it: a stale value must not be reported */
	if (fwrite(o->buf, 1, len, c->out) != len || fflush(c->out)) {
		err = errno ? -errno : -EIO;
		pr_err("cannot write %s to the console: %s", what, strerror(-err));
		clearerr(c->out);
	}
	return err;
}

static int console_export(void *ctx, struct span *const *spans, size_t n)
{
	struct console_sink *c = ctx;
	size_t i, lost = 0;
	uint64_t now;
	int err;

	for (i = 0; i < n; i++) {
		if (spans[i] && hold(c, spans[i]))
			lost++;
	}
	for (i = 0; i < c->ntraces;) {
		size_t before = c->ntraces;

		if (c->traces[i]->ready)
			draw_trace(c, i, DRAW_ROOTS);
		if (c->ntraces == before)
			i++;
	}
	/* Oldest first: the first trace young enough ends the search. */
	now = c->now_ns();
	while (c->ntraces && now >= c->traces[0]->first_ns &&
	       now - c->traces[0]->first_ns >= c->orphan_ns)
		draw_trace(c, 0, DRAW_TIMEOUT);
	err = flush_out(c, "traces");
	if (lost) {
		pr_err("cannot hold %zu of %zu spans for the console: %s", lost, n,
		       strerror(ENOMEM));
		return err ? err : -ENOMEM;
	}
	return err;
}

/* ---- Metrics: a table per service ------------------------------------------------------------ */

/* The operation column widens to its longest name up to this, and cuts longer ones. */
#define OP_MAX 60
#define OVERFLOW_LABEL "(other: cardinality limit)"
#define PIDS_SHOWN 4 /* a title names this many pids of a service, and counts the others */

static const char *const kind_names[METRIC_INSTRUMENTS] = {
	[METRIC_HTTP_SERVER] = "http server", [METRIC_HTTP_CLIENT] = "http client",
	[METRIC_RPC_SERVER] = "rpc server",   [METRIC_RPC_CLIENT] = "rpc client",
	[METRIC_DB_CLIENT] = "db client",
};

/* The columns after KIND and OPERATION, all numbers, right-aligned. */
enum mcol { C_REQUESTS, C_RATE, C_ERRORS, C_ERROR_PCT, C_P50, C_P90, C_P99, C__COUNT };
static const char *const col_heads[C__COUNT] = {
	"REQUESTS", "RATE/S", "ERRORS", "ERROR%", "P50 ms", "P90 ms", "P99 ms",
};
#define CELL_SIZE 32

/* Which tables an export prints, and how their titles say what they cover. */
enum mprint {
	PRINT_INTERVAL, /* an interval's: each as its points are, delta or cumulative */
	PRINT_LAST,	/* the last export's, at exit: only cumulative points, totals already */
	PRINT_TOTALS,	/* the delta points added up since the start, at exit */
};

static const struct attr *point_attr(const struct metric_point *p, const char *key)
{
	size_t i;

	for (i = 0; i < p->nattrs; i++)
		if (p->attrs[i].key && !strcmp(p->attrs[i].key, key))
			return &p->attrs[i];
	return NULL;
}

static unsigned int instrument_of(const struct metric_desc *d)
{
	unsigned int i;

	for (i = 0; i < METRIC_INSTRUMENTS; i++)
		if (d == &metric_instruments[i])
			break;
	return i;
}

/* A value as the operation column shows it, "-" for none. */
static void put_plain(struct out *o, const struct attr *a)
{
	if (a)
		put_attr_value(o, a, false);
	else
		put_char(o, '-');
}

/* A space and A's value, when the point has A. */
static void put_more(struct out *o, char sep, const struct attr *a)
{
	if (!a)
		return;
	put_char(o, sep);
	put_plain(o, a);
}

/*
 * What a point's row is called: the method and route of an HTTP server (the method alone when
 * no route is known, as the span is named), the method and the server of an HTTP client, the
 * service and method of an RPC, the system, operation and collection of a data store call.
 * Status codes and error.type are left out: a row merges them.
 */
static void put_operation(struct out *o, const struct metric_point *p, unsigned int inst)
{
	const struct attr *addr;

	switch (inst) {
	case METRIC_HTTP_SERVER:
		put_plain(o, point_attr(p, SC_HTTP_REQUEST_METHOD));
		put_more(o, ' ', point_attr(p, SC_HTTP_ROUTE));
		break;
	case METRIC_HTTP_CLIENT:
		put_plain(o, point_attr(p, SC_HTTP_REQUEST_METHOD));
		addr = point_attr(p, SC_SERVER_ADDRESS);
		put_more(o, ' ', addr);
		if (addr)
			put_more(o, ':', point_attr(p, SC_SERVER_PORT));
		break;
	case METRIC_RPC_SERVER:
	case METRIC_RPC_CLIENT:
		put_plain(o, point_attr(p, SC_RPC_SERVICE));
		put_char(o, '/');
		put_plain(o, point_attr(p, SC_RPC_METHOD));
		break;
	case METRIC_DB_CLIENT:
		put_plain(o, point_attr(p, SC_DB_SYSTEM_NAME));
		put_more(o, ' ', point_attr(p, SC_DB_OPERATION_NAME));
		put_more(o, ' ', point_attr(p, SC_DB_COLLECTION_NAME));
		break;
	default:
		put_char(o, '-'); /* the KIND column names the instrument */
		break;
	}
}

/* S escaped, in O's buffer until O is used again; NULL when out of memory. */
static const char *escaped(struct out *o, const char *s)
{
	o->len = 0;
	o->nomem = false;
	put_escaped(o, s, false);
	put_char(o, '\0');
	return o->nomem ? NULL : o->buf;
}

static void window_add(uint64_t *start, uint64_t *end, uint64_t s, uint64_t e)
{
	if (!*end) {
		*start = s;
		*end = e;
		return;
	}
	*start = s < *start ? s : *start;
	*end = e > *end ? e : *end;
}

/* Adds what X counted to R, whose instrument it is. */
static void row_add(struct mrow *r, const struct mrow *x)
{
	size_t i;

	if (x->count) {
		r->min = !r->count || x->min < r->min ? x->min : r->min;
		r->max = !r->count || x->max > r->max ? x->max : r->max;
	}
	r->count += x->count;
	r->errors += x->errors;
	r->sum += x->sum;
	for (i = 0; i <= r->desc->nbounds && i <= METRIC_MAX_BOUNDS; i++)
		r->buckets[i] += x->buckets[i];
	r->delta = x->delta;
	window_add(&r->start_ns, &r->end_ns, x->start_ns, x->end_ns);
}

/* A histogram point as a row of its own. */
static void point_row(const struct metric_point *p, struct mrow *x)
{
	memset(x, 0, sizeof(*x));
	x->desc = p->desc;
	x->delta = p->delta;
	x->start_ns = p->start_ns;
	x->end_ns = p->time_ns;
	x->count = p->count;
	x->errors = point_attr(p, SC_ERROR_TYPE) ? p->count : 0;
	x->sum = p->sum;
	x->min = p->min;
	x->max = p->max;
	memcpy(x->buckets, p->buckets, sizeof(x->buckets));
}

static int row_cmp(const struct mrow *r, unsigned int inst, bool overflow, const char *label)
{
	if (r->inst != inst)
		return r->inst < inst ? -1 : 1;
	if (r->overflow != overflow)
		return r->overflow ? 1 : -1; /* after the instrument's named rows */
	return strcmp(r->label, label);
}

/* V's row for (INST, OVERFLOW, LABEL), made empty in its place when new. NULL: no memory. */
static struct mrow *msvc_row(struct msvc *v, const struct metric_desc *desc, unsigned int inst,
			     bool overflow, const char *label)
{
	size_t lo = 0, hi = v->nrows, mid;
	struct mrow *r;
	char *copy;
	int cmp;

	while (lo < hi) {
		mid = lo + (hi - lo) / 2;
		cmp = row_cmp(&v->rows[mid], inst, overflow, label);
		if (!cmp)
			return &v->rows[mid];
		if (cmp < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (v->nrows == v->rows_cap) {
		size_t cap = v->rows_cap ? v->rows_cap * 2 : 8;

		r = realloc(v->rows, cap * sizeof(*r));
		if (!r)
			return NULL;
		v->rows = r;
		v->rows_cap = cap;
	}
	copy = strdup(label);
	if (!copy)
		return NULL;
	memmove(&v->rows[lo + 1], &v->rows[lo], (v->nrows - lo) * sizeof(*r));
	v->nrows++;
	r = &v->rows[lo];
	memset(r, 0, sizeof(*r));
	r->desc = desc;
	r->inst = inst;
	r->overflow = overflow;
	r->label = copy;
	r->label_cols = text_cols(copy);
	return r;
}

/* M's service of resource RES (a batch's) or, with RES NULL, named NAME (the totals'). */
static struct msvc *mset_svc(struct mset *m, const struct resource *res, const char *name)
{
	struct msvc *v;
	size_t i;

	for (i = 0; i < m->n; i++)
		if (res ? m->svcs[i].res == res : !strcmp(m->svcs[i].name, name))
			return &m->svcs[i];
	if (m->n == m->cap) {
		size_t cap = m->cap ? m->cap * 2 : 4;

		v = realloc(m->svcs, cap * sizeof(*v));
		if (!v)
			return NULL;
		m->svcs = v;
		m->cap = cap;
	}
	v = &m->svcs[m->n];
	memset(v, 0, sizeof(*v));
	v->name = strdup(name);
	if (!v->name)
		return NULL;
	v->res = res;
	m->n++;
	return v;
}

/* PID among V's, kept in order: the title names them so, whatever the batches' order. */
static int msvc_add_pid(struct msvc *v, int64_t pid)
{
	size_t i;

	for (i = 0; i < v->npids && v->pids[i] <= pid; i++)
		if (v->pids[i] == pid)
			return 0;
	if (v->npids == v->pids_cap) {
		size_t cap = v->pids_cap ? v->pids_cap * 2 : 2;
		int64_t *pids = realloc(v->pids, cap * sizeof(*pids));

		if (!pids)
			return -ENOMEM;
		v->pids = pids;
		v->pids_cap = cap;
	}
	memmove(&v->pids[i + 1], &v->pids[i], (v->npids - i) * sizeof(*v->pids));
	v->pids[i] = pid;
	v->npids++;
	return 0;
}

/* Never below zero: a delta of a total that went back (it cannot, but it must not wrap). */
static uint64_t sum_value(const struct metric_point *p)
{
	return p->value > 0 ? (uint64_t)p->value : 0;
}

/* Point P into the tables of M, a batch's. */
static int mset_add_point(struct console_sink *c, struct mset *m, const struct metric_point *p)
{
	const struct attr *a = resource__get(p->res, SC_SERVICE_NAME);
	unsigned int inst = instrument_of(p->desc);
	const char *s;
	struct msvc *v;
	struct mrow *r, x;
	bool overflow;
	int err;

	s = escaped(&c->scratch, a && a->type == ATTR_STRING ? a->s : "unknown");
	v = s ? mset_svc(m, p->res, s) : NULL;
	if (!v)
		return -ENOMEM;
	a = resource__get(p->res, SC_PROCESS_PID);
	if (a && a->type == ATTR_INT) {
		err = msvc_add_pid(v, a->i);
		if (err)
			return err;
	}
	if (p->desc->kind == METRIC_HISTOGRAM) {
		/* The store's overflow set (metrics.c): its one attribute. */
		a = point_attr(p, "otel.metric.overflow");
		overflow = a && a->type == ATTR_BOOL && a->b;
		c->scratch.len = 0;
		c->scratch.nomem = false;
		if (overflow)
			put_str(&c->scratch, OVERFLOW_LABEL);
		else
			put_operation(&c->scratch, p, inst);
		put_char(&c->scratch, '\0');
		if (c->scratch.nomem)
			return -ENOMEM;
		r = msvc_row(v, p->desc, inst, overflow, c->scratch.buf);
		if (!r)
			return -ENOMEM;
		point_row(p, &x);
		row_add(r, &x);
		return 0;
	}
	if (strcmp(p->desc->name, METRIC_SPANS_EXPORTED) &&
	    strcmp(p->desc->name, METRIC_SPANS_DROPPED))
		return 0; /* gospan's other health sums: its summary line says them at exit */
	v->spans = true;
	v->spans_delta = p->delta;
	window_add(&v->spans_start_ns, &v->spans_end_ns, p->start_ns, p->time_ns);
	if (!strcmp(p->desc->name, METRIC_SPANS_DROPPED)) {
		v->lost += sum_value(p);
	} else if (!point_attr(p, SC_ERROR_TYPE)) {
		/* With error.type they were lost, and counted in METRIC_SPANS_DROPPED too. */
		v->exported += sum_value(p);
		v->exported_seen = true;
	}
	return 0;
}

/* B's delta rows and sums added to the totals T, by service name. */
static int totals_add(struct mset *t, const struct mset *b)
{
	const struct msvc *v;
	struct msvc *tv;
	struct mrow *r;
	size_t i, j;
	int err;

	for (i = 0; i < b->n; i++) {
		v = &b->svcs[i];
		tv = mset_svc(t, NULL, v->name);
		if (!tv)
			return -ENOMEM;
		for (j = 0; j < v->npids; j++) {
			err = msvc_add_pid(tv, v->pids[j]);
			if (err)
				return err;
		}
		for (j = 0; j < v->nrows; j++) {
			if (!v->rows[j].delta)
				continue;
			r = msvc_row(tv, v->rows[j].desc, v->rows[j].inst, v->rows[j].overflow,
				     v->rows[j].label);
			if (!r)
				return -ENOMEM;
			row_add(r, &v->rows[j]);
		}
		if (v->spans && v->spans_delta) {
			tv->spans = tv->spans_delta = true;
			tv->exported_seen |= v->exported_seen;
			tv->exported += v->exported;
			tv->lost += v->lost;
			window_add(&tv->spans_start_ns, &tv->spans_end_ns, v->spans_start_ns,
				   v->spans_end_ns);
		}
	}
	return 0;
}

static double window_s(uint64_t start_ns, uint64_t end_ns)
{
	return end_ns > start_ns ? (double)(end_ns - start_ns) / 1e9 : 0;
}

/*
 * Row R's numbers, as its columns show them. Its rate is over SECS, its table's: a row of an
 * operation called in one interval out of ten is not as fast as the others over the ten.
 */
static void row_cells(const struct mrow *r, double secs, char cells[C__COUNT][CELL_SIZE])
{
	static const double qs[] = { [C_P50] = 0.5, [C_P90] = 0.9, [C_P99] = 0.99 };
	double per_ms, q;
	struct metric_point merged = { .desc = r->desc };
	int i;

	snprintf(cells[C_REQUESTS], CELL_SIZE, "%" PRIu64, r->count);
	if (secs > 0)
		snprintf(cells[C_RATE], CELL_SIZE, "%.2f", (double)r->count / secs);
	else
		snprintf(cells[C_RATE], CELL_SIZE, "-");
	/* The overflow set has no error.type: how many of its calls failed is not known. */
	if (r->overflow)
		snprintf(cells[C_ERRORS], CELL_SIZE, "-");
	else
		snprintf(cells[C_ERRORS], CELL_SIZE, "%" PRIu64, r->errors);
	if (r->overflow || !r->count)
		snprintf(cells[C_ERROR_PCT], CELL_SIZE, "-");
	else
		snprintf(cells[C_ERROR_PCT], CELL_SIZE, "%.1f%%",
			 100.0 * (double)r->errors / (double)r->count);
	/* What metric_point__quantile reads: the merged histogram, in the instrument's unit. */
	merged.count = r->count;
	merged.sum = r->sum;
	merged.min = r->min;
	merged.max = r->max;
	memcpy(merged.buckets, r->buckets, sizeof(merged.buckets));
	per_ms = (r->desc->per_ns ? r->desc->per_ns : 1e6) / 1e6;
	for (i = C_P50; i <= C_P99; i++) {
		q = metric_point__quantile(&merged, qs[i]);
		if (isnan(q))
			snprintf(cells[i], CELL_SIZE, "-");
		else
			snprintf(cells[i], CELL_SIZE, "%.3f", q * per_ms);
	}
}

static const char *row_kind(const struct mrow *r)
{
	return r->inst < METRIC_INSTRUMENTS ? kind_names[r->inst] : r->desc->name;
}

static void put_padded(struct out *o, const char *s, size_t cols, size_t width, bool right)
{
	if (right)
		put_repeat(o, ' ', width - cols);
	put_str(o, s);
	if (!right)
		put_repeat(o, ' ', width - cols);
}

/* The N rows ROWS of one table over SECS, columns aligned to their widest cell. */
static void put_table(struct out *o, const struct mrow *const *rows, size_t n, double secs)
{
	char cells[C__COUNT][CELL_SIZE];
	size_t wkind = strlen("KIND"), wop = strlen("OPERATION"), w[C__COUNT];
	size_t i, j, len, cols;
	const struct mrow *r;

	for (j = 0; j < C__COUNT; j++)
		w[j] = strlen(col_heads[j]);
	for (i = 0; i < n; i++) {
		r = rows[i];
		len = strlen(row_kind(r));
		wkind = len > wkind ? len : wkind;
		cols = r->label_cols < OP_MAX ? r->label_cols : OP_MAX;
		wop = cols > wop ? cols : wop;
		row_cells(r, secs, cells);
		for (j = 0; j < C__COUNT; j++) {
			len = strlen(cells[j]);
			w[j] = len > w[j] ? len : w[j];
		}
	}
	put_str(o, "  ");
	put_padded(o, "KIND", strlen("KIND"), wkind, false);
	put_str(o, "  ");
	put_padded(o, "OPERATION", strlen("OPERATION"), wop, false);
	for (j = 0; j < C__COUNT; j++) {
		put_str(o, "  ");
		put_padded(o, col_heads[j], strlen(col_heads[j]), w[j], true);
	}
	put_char(o, '\n');
	for (i = 0; i < n; i++) {
		r = rows[i];
		row_cells(r, secs, cells);
		put_str(o, "  ");
		put_padded(o, row_kind(r), strlen(row_kind(r)), wkind, false);
		put_str(o, "  ");
		if (r->label_cols > wop) {
			put_bytes(o, r->label, text_prefix(r->label, wop - 1));
			put_str(o, "\xe2\x80\xa6");
		} else {
			put_padded(o, r->label, r->label_cols, wop, false);
		}
		for (j = 0; j < C__COUNT; j++) {
			put_str(o, "  ");
			put_padded(o, cells[j], strlen(cells[j]), w[j], true);
		}
		put_char(o, '\n');
	}
}

/* "metrics of NAME (pid 42)" and what the numbers cover, up to the colon. */
static void put_title(struct out *o, const struct msvc *v, enum mprint how, bool delta,
		      uint64_t start_ns, uint64_t end_ns)
{
	size_t i, shown = v->npids < PIDS_SHOWN ? v->npids : PIDS_SHOWN;

	put_str(o, "metrics of ");
	put_str(o, v->name);
	if (v->npids)
		put_str(o, v->npids == 1 ? " (pid " : " (pids ");
	for (i = 0; i < shown; i++)
		put_fmt(o, "%s%" PRId64, i ? ", " : "", v->pids[i]);
	if (v->npids > shown)
		put_fmt(o, " and %zu more", v->npids - shown);
	if (v->npids)
		put_char(o, ')');
	if (how != PRINT_INTERVAL)
		put_fmt(o, " at exit, totals over %.1f s:", window_s(start_ns, end_ns));
	else if (delta)
		put_fmt(o, ", last %.1f s:", window_s(start_ns, end_ns));
	else
		put_fmt(o, ", totals over %.1f s:", window_s(start_ns, end_ns));
}

/* The services' tables by name and pid, then gospan's own line, which has no table. */
static int svc_order(const void *a, const void *b)
{
	const struct msvc *x = *(const struct msvc *const *)a, *y = *(const struct msvc *const *)b;
	int cmp = (x->nrows == 0) - (y->nrows == 0);

	if (cmp)
		return cmp;
	cmp = strcmp(x->name, y->name);
	if (cmp)
		return cmp;
	if (x->npids && y->npids && x->pids[0] != y->pids[0])
		return x->pids[0] < y->pids[0] ? -1 : 1;
	return (x->npids > 0) - (y->npids > 0);
}

/*
 * M's tables into the output, services by name then pid: each one's rows under a title, and
 * gospan's own spans exported and lost on a line.
 */
static int put_tables(struct console_sink *c, const struct mset *m, enum mprint how)
{
	const struct msvc **svcs = NULL;
	const struct mrow **rows = NULL;
	const struct msvc *v;
	uint64_t start = 0, end = 0;
	size_t i, j, n, most = 0;
	bool delta = false, spans;

	if (!m->n)
		return 0;
	for (i = 0; i < m->n; i++)
		most = m->svcs[i].nrows > most ? m->svcs[i].nrows : most;
	svcs = calloc(m->n, sizeof(*svcs));
	rows = calloc(most ? most : 1, sizeof(*rows));
	if (!svcs || !rows) {
		free(svcs);
		free(rows);
		return -ENOMEM;
	}
	for (i = 0; i < m->n; i++)
		svcs[i] = &m->svcs[i];
	qsort(svcs, m->n, sizeof(*svcs), svc_order);
	for (i = 0; i < m->n; i++) {
		v = svcs[i];
		/* At exit, the last export's delta points are in the totals, printed next. */
		for (j = n = start = end = 0; j < v->nrows; j++) {
			if (how == PRINT_LAST && v->rows[j].delta)
				continue;
			rows[n++] = &v->rows[j];
			delta = v->rows[j].delta;
			window_add(&start, &end, v->rows[j].start_ns, v->rows[j].end_ns);
		}
		/*
		 * The totals run to the last export, the exit: a service idle since its last
		 * request was still watched, and its rates are over all that time.
		 */
		if (how == PRINT_TOTALS && c->last_batch_ns > end)
			end = c->last_batch_ns;
		if (n) {
			put_title(&c->o, v, how, delta, start, end);
			put_char(&c->o, '\n');
			put_table(&c->o, rows, n, window_s(start, end));
		}
		spans = v->spans && !(how == PRINT_LAST && v->spans_delta);
		start = v->spans_start_ns;
		end = v->spans_end_ns;
		if (how == PRINT_TOTALS && c->last_batch_ns > end)
			end = c->last_batch_ns;
		if (spans) {
			put_title(&c->o, v, how, v->spans_delta, start, end);
			put_str(&c->o, " spans ");
			if (v->exported_seen)
				put_fmt(&c->o, "exported %" PRIu64 ", ", v->exported);
			put_fmt(&c->o, "lost %" PRIu64 "\n", v->lost);
		}
		if (n || spans)
			put_char(&c->o, '\n');
	}
	free(svcs);
	free(rows);
	return 0;
}

/*
 * A batch of metric points as tables, one per service. The last export, which comes after
 * stop, prints none of its delta points: they go into the totals printed at free, which is
 * what a person who watched the intervals go by wants to see last.
 */
static int console_export_metrics(void *ctx, const struct metrics_batch *b)
{
	struct console_sink *c = ctx;
	bool last = __atomic_load_n(&c->stopping, __ATOMIC_ACQUIRE);
	struct mset m = {};
	size_t i;
	int err = 0, terr, werr;

	if (b->time_ns > c->last_batch_ns)
		c->last_batch_ns = b->time_ns;
	for (i = 0; i < b->n && !err; i++)
		if (b->points[i].res && b->points[i].desc)
			err = mset_add_point(c, &m, &b->points[i]);
	if (!err)
		err = put_tables(c, &m, last ? PRINT_LAST : PRINT_INTERVAL);
	/* Whatever the batch holds counts at exit, even when it could not be printed. */
	terr = totals_add(&c->totals, &m);
	err = err ? err : terr;
	mset_clear(&m);
	if (err)
		pr_err("cannot tabulate %zu metric points for the console: %s", b->n,
		       strerror(-err));
	werr = flush_out(c, "metrics");
	return err ? err : werr;
}

/*
 * The metric reader's last export comes next: its interval goes into the totals printed at free
 * instead of a table of its own. (The span exporter calls it too, to no effect on traces.)
 */
static void console_stop(void *ctx)
{
	struct console_sink *c = ctx;

	__atomic_store_n(&c->stopping, true, __ATOMIC_RELEASE);
}

/*
 * Everything still waiting is drawn here rather than in a stop callback: stop runs on another
 * thread while the queue is still being drained, and drawing then would cut traces whose roots
 * are in that drain. free comes after the last export.
 */
static void console_sink_free(void *ctx)
{
	struct console_sink *c = ctx;

	if (!c)
		return;
	while (c->ntraces)
		draw_trace(c, 0, DRAW_EXIT);
	flush_out(c, "traces"); /* a failure is logged; there is no one left to tell */
	if (put_tables(c, &c->totals, PRINT_TOTALS))
		pr_err("cannot print the metrics' totals: %s", strerror(ENOMEM));
	flush_out(c, "metrics");
	console_sink_destroy(c);
}

const struct sink_ops console_sink_ops = {
	.name = "console",
	.export = console_export,
	.stop = console_stop,
	.export_metrics = console_export_metrics,
	.free = console_sink_free,
};
