// SPDX-License-Identifier: MIT
/*
 * The functions family: records of the functions a --functions file names made into INTERNAL
 * spans, named after the function, with code.function.name and the arguments the file asks for
 * as gospan.arg.* attributes. Calls nest on a goroutine, and a RET can end several at once.
 */
#include <stdio.h>
#include <string.h>

#include "model/attrs.h"
#include "events.h"
#include "analysis/gotype.h"
#include "capture/process.h"
#include "capture/records_family.h"
#include "model/semconv.h"
#include "model/span.h"
#include "analysis/target.h"

struct func_call {
	struct pending call;
	uint32_t depth; /* position on the goroutine's stack of open calls */
};

/* records.c frees a call through its struct pending. */
_Static_assert(offsetof(struct func_call, call) == 0, "struct func_call: pending first");

static const struct call_kind function_call = {
	.start_type = EVENT_FUNC_START,
	.span_kind = SPAN_KIND_INTERNAL,
	/* Several per goroutine (nested): told apart by start time. */
	.several = true,
	.size = sizeof(struct func_call),
};

/* Sets the attribute of argument A, gospan.arg.<its path>, formatted as its declared type. */
static void set_arg(struct span *s, const struct traced_arg *a, const struct func_arg_value *v)
{
	unsigned bits = a->size >= 1 && a->size < 8 ? a->size * 8 : 64;
	uint64_t w = v->word;
	const char *key;
	char buf[256];
	float f32;
	int n;

	if (!a->path || !v->ok)
		return;
	/* The functions file bounds paths well below this (FUNC_ARG_PATH_MAX). */
	n = snprintf(buf, sizeof(buf), "%s%s", GOSPAN_ARG_PREFIX, a->path);
	if (n < 0 || (size_t)n >= sizeof(buf))
		return;
	key = span__strndup(s, buf, (size_t)n);
	if (!key)
		return;
	if (bits < 64)
		w &= (1ULL << bits) - 1;
	switch (a->type) {
	case GO_TYPE_BOOL:
		span__set_bool(s, key, (w & 0xff) != 0);
		break;
	case GO_TYPE_INT:
		/* Sign-extend from the value's own width. */
		if (bits < 64 && (w >> (bits - 1)) & 1)
			w |= ~0ULL << bits;
		span__set_int(s, key, (int64_t)w);
		break;
	case GO_TYPE_UINT:
		span__set_int(s, key, (int64_t)w); /* OTLP has no unsigned: above 2^63 wraps */
		break;
	case GO_TYPE_FLOAT:
		if (a->size == 4) {
			uint32_t u = (uint32_t)w;

			memcpy(&f32, &u, sizeof(f32));
			span__set_double(s, key, f32);
		} else {
			double d;

			memcpy(&d, &w, sizeof(d));
			span__set_double(s, key, d);
		}
		break;
	case GO_TYPE_STRING:
		attrs__set_captured(s, key, v->str, v->len, MAX_ARG_STR_LEN);
		break;
	default:
		break;
	}
}

/* The function a record names, through its target: NULL when unknown. */
static const struct traced_func *record_func(const struct process *proc, uint32_t func)
{
	const struct target *t = proc->target;

	if (!t || func < t->func_base || func - t->func_base >= t->nfuncs)
		return NULL;
	return &t->funcs[func - t->func_base];
}

/* A call still open at or above the place a new call takes on the goroutine's stack. */
static bool replaced_by(const struct pending *p, const void *record)
{
	const struct func_start *e = record;

	return container_of(p, const struct func_call, call)->depth >= e->depth;
}

static void on_func_start(struct records *r, const void *record)
{
	const struct func_start *e = record;
	const struct traced_func *f;
	struct pending *p;
	struct span *s;
	uint32_t i;

	/*
	 * BPF pushes the call at E->DEPTH: a call left there never returned, its frame dropped
	 * when a recovered panic resumed the goroutine above it (func_recover).
	 */
	while ((p = records__take_if(r, &function_call, e->hdr.pid, e->hdr.goid, replaced_by, e)))
		records__abandon(r, p);
	p = records__open_call(r, &function_call, &e->hdr, e->cookie, &e->ids);
	if (!p)
		return;
	container_of(p, struct func_call, call)->depth = e->depth;
	s = p->span;
	f = record_func(p->proc, e->func);
	if (!f) {
		span__set_name(s, "function", 8);
		return;
	}
	span__set_name(s, f->name, strlen(f->name));
	span__set_str(s, SC_CODE_FUNCTION_NAME, f->symbol, strlen(f->symbol));
	for (i = 0; i < f->cfg.nargs && i < MAX_FUNC_ARGS; i++)
		set_arg(s, &f->args[i], &e->args[i]);
}

/* The call a RET ends. */
static bool ended_by(const struct pending *p, const void *record)
{
	const struct func_end *e = record;

	return p->start_ns == e->hdr.start_ns;
}

/* A call made by the one a RET ends, still open: it never returned. */
static bool nested_in(const struct pending *p, const void *record)
{
	const struct func_end *e = record;

	return container_of(p, const struct func_call, call)->depth > e->depth &&
	       p->start_ns > e->hdr.start_ns;
}

static void on_func_end(struct records *r, const void *record)
{
	const struct func_end *e = record;
	struct pending *p, *found = NULL;

	/*
	 * The call this RET ends, and with it every call it made that is still open: those never
	 * returned (a panic recovered in between), and BPF has dropped their frames.
	 */
	while ((p = records__take_if(r, &function_call, e->hdr.pid, e->hdr.goid, nested_in, e)))
		records__abandon(r, p);
	while ((p = records__take_if(r, &function_call, e->hdr.pid, e->hdr.goid, ended_by, e))) {
		/* Two calls of one goroutine never start in the same ns: keep one, count one. */
		if (found)
			records__abandon(r, found);
		found = p;
	}
	records__finish_at(r, found, e->end_ns, e->cpu_ns);
}

const struct record_handler func_records[] = {
	{ EVENT_FUNC_START, sizeof(struct func_start), on_func_start },
	{ EVENT_FUNC_END, sizeof(struct func_end), on_func_end },
	{ 0 },
};
