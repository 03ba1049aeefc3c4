/* SPDX-License-Identifier: MIT */
/*
 * The span model shared by span building and every exporter: ids, times in UNIX nanoseconds,
 * attributes by OpenTelemetry semantic-convention names (semconv.h). Attribute values live in an
 * arena inside the span, so a span is one block of memory, freed with span__free().
 */
#ifndef GOSPAN_SPAN_H
#define GOSPAN_SPAN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* Values are OTLP's Span.SpanKind and Status.StatusCode. */
enum span_kind {
	SPAN_KIND_UNSPECIFIED = 0,
	SPAN_KIND_INTERNAL = 1,
	SPAN_KIND_SERVER = 2,
	SPAN_KIND_CLIENT = 3,
	SPAN_KIND_PRODUCER = 4,
	SPAN_KIND_CONSUMER = 5,
};

enum span_status {
	SPAN_STATUS_UNSET = 0,
	SPAN_STATUS_OK = 1,
	SPAN_STATUS_ERROR = 2,
};

enum attr_type {
	ATTR_STRING,
	ATTR_INT,
	ATTR_BOOL,
	ATTR_DOUBLE,
};

struct attr {
	const char *key; /* not owned: a semconv.h constant or a string in the same span's arena */
	enum attr_type type;
	/*
	 * The lengths of the key and of a string value, without the NUL, so that the OTLP encoder
	 * measures no string. span__set_* fill them in (a span's strings are bounded by its
	 * arena, so 16 bits hold them); attributes made elsewhere (a resource's, a metric
	 * point's) leave them 0 and are measured where they are encoded.
	 */
	uint16_t key_len, len;
	union {
		const char *s; /* NUL-terminated, valid UTF-8 */
		int64_t i;
		bool b;
		double d;
	};
};

/*
 * Resource attributes of one traced process; owns its strings. Reference-counted: the process
 * table holds one reference while the process is known, and each span that points to it holds
 * one until it is exported, so a process that exits can be forgotten while its spans still wait
 * in the export queue.
 */
#define RESOURCE_MAX_ATTRS 48
struct resource {
	unsigned int refs; /* atomic: spans are freed on the export thread */
	size_t nattrs;
	struct attr attrs[RESOURCE_MAX_ATTRS];
};

/* A resource with one reference. */
struct resource *resource__new(void);
/* Takes one more reference; returns R. */
struct resource *resource__hold(struct resource *r);
/* Sets (or replaces) KEY; both are copied. -ENOSPC when full, -ENOMEM. */
int resource__set_str(struct resource *r, const char *key, const char *val);
int resource__set_int(struct resource *r, const char *key, int64_t val);
const struct attr *resource__get(const struct resource *r, const char *key);
/* Drops one reference; the last frees R. */
void resource__free(struct resource *r);

#define SPAN_MAX_ATTRS 32
#define SPAN_ARENA_SIZE 2048

struct span {
	const struct resource *res; /* a reference of its own when res_held */
	bool res_held;
	uint8_t trace_id[16];
	uint8_t span_id[8];
	uint8_t parent_span_id[8]; /* all zero: a root span */
	uint32_t flags;		   /* W3C trace flags; bit 0 = sampled */
	bool parent_known;	   /* whether the parent is remote (another process) is known */
	bool remote_parent;	   /* the parent came from another process (traceparent) */
	const char *trace_state;   /* W3C tracestate as received, in the arena; NULL = none */
	const char *name;	   /* in the arena */
	uint16_t name_len;	   /* its length, set with it by span__set_name() */
	enum span_kind kind;
	uint64_t start_ns; /* UNIX epoch nanoseconds */
	uint64_t end_ns;
	enum span_status status;
	const char *status_msg; /* NULL or in the arena */
	/*
	 * A bit per attribute key, from its length and first byte: a key whose bit is clear is
	 * not in the table, which spares the search most attributes would make on their way in.
	 */
	uint32_t key_bits;
	size_t nattrs;
	struct attr attrs[SPAN_MAX_ATTRS];
	size_t arena_used;
	size_t arena_cap; /* SPAN_ARENA_SIZE, or arena_used once span__shrink() gave the rest back */
	struct span_chunk *chunk; /* where span__shrink() put it; NULL: malloc'ed on its own */
	char arena[SPAN_ARENA_SIZE];
};

/* A zeroed span with fresh random trace and span ids (getrandom). NULL with errno on failure. */
struct span *span__new(void);
/*
 * A span whose ids the caller sets (getrandom costs a sixth of the export path), zeroed up to
 * its attribute table: the table and the arena are read only up to nattrs and arena_used.
 */
struct span *span__alloc(void);
void span__free(struct span *s);
/*
 * A finished span without its arena's unused tail: a compact copy, its pointers into the arena
 * following, or S itself when there is nothing worth copying (or no memory for it). Nothing can
 * be added to it afterwards. A span waits in the export queue, often by the thousand, and most
 * use a few hundred bytes of the arena's 2 KiB. The copies are packed one after another into
 * chunks the calling thread fills, and S goes back to that thread's few spare spans, which
 * span__alloc() hands out again: building and queueing a span costs no malloc or free of its
 * own. A chunk is freed with the last span in it, on whichever thread frees that.
 */
struct span *span__shrink(struct span *s);
/* Points S at R and holds a reference to it, dropped by span__free. */
void span__set_resource(struct span *s, struct resource *r);
/* True when all LEN bytes of ID are zero: OTLP's "no id" (a root span's parent). */
bool span__id_is_zero(const uint8_t *id, size_t len);
/* Fills BUF with random bytes, never all zero (an all-zero id is invalid in OTLP). */
int span__random_id(uint8_t *buf, size_t len);

/* Copies LEN bytes of STR into the arena, NUL-terminated. NULL when the arena is full. */
const char *span__strndup(struct span *s, const char *str, size_t len);
/* Sets the name (copied). -ENOSPC when the arena is full. */
int span__set_name(struct span *s, const char *name, size_t len);
/*
 * Adds an attribute KEY of KEY_LEN bytes; string values are copied into the arena. -ENOSPC when
 * full, -EINVAL for a key longer than an attribute can say.
 */
int span__add_str(struct span *s, const char *key, size_t key_len, const char *val, size_t len);
int span__add_int(struct span *s, const char *key, size_t key_len, int64_t val);
int span__add_bool(struct span *s, const char *key, size_t key_len, bool val);
int span__add_double(struct span *s, const char *key, size_t key_len, double val);

/*
 * The same with KEY measured here. Inline on purpose: nearly every key is a semconv.h literal,
 * whose strlen the compiler works out, so its length costs nothing at run time.
 */
static inline size_t span__key_len(const char *key)
{
	return key ? strlen(key) : 0;
}

static inline int span__set_str(struct span *s, const char *key, const char *val, size_t len)
{
	return span__add_str(s, key, span__key_len(key), val, len);
}

static inline int span__set_int(struct span *s, const char *key, int64_t val)
{
	return span__add_int(s, key, span__key_len(key), val);
}

static inline int span__set_bool(struct span *s, const char *key, bool val)
{
	return span__add_bool(s, key, span__key_len(key), val);
}

static inline int span__set_double(struct span *s, const char *key, double val)
{
	return span__add_double(s, key, span__key_len(key), val);
}
/* The attribute KEY of KEY_LEN bytes; NULL when S has none. */
const struct attr *span__find(const struct span *s, const char *key, size_t key_len);

/* The same with KEY measured here, inline for the reason span__set_str is. */
static inline const struct attr *span__get(const struct span *s, const char *key)
{
	return key ? span__find(s, key, strlen(key)) : NULL;
}

/*
 * Copies SRC (LEN bytes) to DST (capacity CAP including the NUL) as valid UTF-8: invalid
 * sequences become U+FFFD and a cut never splits a character. Returns the bytes written
 * (excluding the NUL). OTLP string fields must be UTF-8; targets' bytes need not be.
 */
size_t utf8_sanitize(char *dst, size_t cap, const char *src, size_t len);

#endif
