// SPDX-License-Identifier: MIT
/*
 * The span model: ids, resources and attributes. Every string that enters a span or a resource
 * is made valid UTF-8 on the way in, because every one of them ends up in an OTLP string field
 * and a receiver rejects the whole request over one bad byte; the bytes a probe captures from a
 * target are whatever the target had in memory.
 */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "model/span.h"

#define UTF8_REPLACEMENT "\xef\xbf\xbd" /* U+FFFD */
#define UTF8_REPLACEMENT_LEN 3

/*
 * Length of the well-formed sequence starting at S (at most AVAIL bytes), following the table
 * of RFC 3629 section 4, which already excludes overlong forms, surrogates and code points
 * above U+10FFFF. Returns 0 when the sequence is ill-formed and sets *BAD to how many bytes
 * one U+FFFD replaces: the maximal prefix of a well-formed sequence, at least one byte, as
 * Unicode recommends, so a lead byte followed by a valid character does not swallow it.
 */
static size_t utf8_seq_len(const unsigned char *s, size_t avail, size_t *bad)
{
	unsigned char c = s[0], lo = 0x80, hi = 0xbf;
	size_t need, i;

	if (c < 0x80)
		return 1;
	if (c >= 0xc2 && c <= 0xdf) {
		need = 2;
	} else if (c >= 0xe0 && c <= 0xef) {
		need = 3;
		if (c == 0xe0)
			lo = 0xa0; /* below is overlong */
		else if (c == 0xed)
			hi = 0x9f; /* above is a UTF-16 surrogate */
	} else if (c >= 0xf0 && c <= 0xf4) {
		need = 4;
		if (c == 0xf0)
			lo = 0x90; /* below is overlong */
		else if (c == 0xf4)
			hi = 0x8f; /* above is past U+10FFFF */
	} else {
		*bad = 1; /* a continuation byte, C0/C1 (always overlong) or F5..FF */
		return 0;
	}
	for (i = 1; i < need; i++) {
		if (i >= avail || s[i] < lo || s[i] > hi) {
			*bad = i;
			return 0;
		}
		lo = 0x80;
		hi = 0xbf;
	}
	return need;
}

#define BYTES_01 0x0101010101010101ULL
#define BYTES_80 0x8080808080808080ULL

/*
 * How many bytes from S on (at most LEN) are ASCII other than NUL; eight at a time while it
 * can. A NUL ends the run so that the copy can tell a string C code sees shorter than it is.
 */
static size_t ascii_run(const unsigned char *s, size_t len)
{
	size_t i = 0;
	uint64_t word;

	for (; i + 8 <= len; i += 8) {
		memcpy(&word, s + i, 8);
		/* A byte of 0x80 or more, or a zero byte (the classic haszero test). */
		if ((word | ((word - BYTES_01) & ~word)) & BYTES_80)
			break;
	}
	while (i < len && s[i] && s[i] < 0x80)
		i++;
	return i;
}

/*
 * utf8_sanitize with the count of input bytes consumed, so that callers copying into a bounded
 * arena can tell a complete copy from a cut one, and whether a NUL was copied (*NUL, unless
 * NULL): then the string C code reads ends there, before all that was written.
 */
static size_t utf8_copy(char *dst, size_t cap, const char *src, size_t len, size_t *consumed,
			bool *nul)
{
	const unsigned char *in = (const unsigned char *)src;
	size_t r = 0, w = 0;

	if (!cap) {
		*consumed = 0;
		return 0;
	}
	/* Nearly every string is ASCII and fits: one run, one copy, none of the loop's steps. */
	if (len && len < cap && ascii_run(in, len) == len) {
		memcpy(dst, in, len);
		dst[len] = '\0';
		*consumed = len;
		return len;
	}
	while (r < len) {
		size_t bad = 0, n = ascii_run(in + r, len - r), out;
		const char *from;

		/* ASCII, nearly all a request holds, is copied a run at a time, cut where it fills. */
		if (n) {
			if (n > cap - 1 - w)
				n = cap - 1 - w;
			memcpy(dst + w, in + r, n);
			w += n;
			r += n;
			if (w + 1 >= cap)
				break;
			continue;
		}
		if (!in[r] && nul)
			*nul = true;
		n = utf8_seq_len(in + r, len - r, &bad);
		from = n ? (const char *)in + r : UTF8_REPLACEMENT;
		out = n ? n : UTF8_REPLACEMENT_LEN;

		if (w + out + 1 > cap)
			break;
		memcpy(dst + w, from, out);
		w += out;
		r += n ? n : bad;
	}
	dst[w] = '\0';
	*consumed = r;
	return w;
}

size_t utf8_sanitize(char *dst, size_t cap, const char *src, size_t len)
{
	size_t consumed;

	return utf8_copy(dst, cap, src, len, &consumed, NULL);
}

/* A malloc'ed, sanitized copy; the worst case is every byte becoming a three-byte U+FFFD. */
static char *utf8_dup(const char *src)
{
	size_t len = strlen(src), consumed;
	char *dst = malloc(len * UTF8_REPLACEMENT_LEN + 1);

	if (!dst)
		return NULL;
	utf8_copy(dst, len * UTF8_REPLACEMENT_LEN + 1, src, len, &consumed, NULL);
	return dst;
}

struct resource *resource__new(void)
{
	struct resource *r = calloc(1, sizeof(*r));

	if (r)
		r->refs = 1;
	return r;
}

struct resource *resource__hold(struct resource *r)
{
	__atomic_add_fetch(&r->refs, 1, __ATOMIC_RELAXED);
	return r;
}

static struct attr *resource_find(const struct resource *r, const char *key)
{
	size_t i;

	for (i = 0; i < r->nattrs; i++)
		if (!strcmp(r->attrs[i].key, key))
			return (struct attr *)&r->attrs[i];
	return NULL;
}

/*
 * The slot for KEY: the existing attribute, its old string value freed, or a new one with its
 * own copy of the key. The caller sets type and value.
 */
static int resource_slot(struct resource *r, const char *key, struct attr **out)
{
	struct attr *a = resource_find(r, key);
	char *k;

	if (a) {
		if (a->type == ATTR_STRING)
			free((char *)a->s);
		a->s = NULL;
		*out = a;
		return 0;
	}
	if (r->nattrs >= RESOURCE_MAX_ATTRS)
		return -ENOSPC;
	k = utf8_dup(key);
	if (!k)
		return -ENOMEM;
	a = &r->attrs[r->nattrs++];
	a->key = k;
	a->type = ATTR_INT;
	a->i = 0;
	*out = a;
	return 0;
}

int resource__set_str(struct resource *r, const char *key, const char *val)
{
	struct attr *a;
	char *v;
	int err;

	if (!r || !key || !val)
		return -EINVAL;
	/* Copied first so that a failure leaves an existing value in place. */
	v = utf8_dup(val);
	if (!v)
		return -ENOMEM;
	err = resource_slot(r, key, &a);
	if (err) {
		free(v);
		return err;
	}
	a->type = ATTR_STRING;
	a->s = v;
	return 0;
}

int resource__set_int(struct resource *r, const char *key, int64_t val)
{
	struct attr *a;
	int err;

	if (!r || !key)
		return -EINVAL;
	err = resource_slot(r, key, &a);
	if (err)
		return err;
	a->type = ATTR_INT;
	a->i = val;
	return 0;
}

const struct attr *resource__get(const struct resource *r, const char *key)
{
	if (!r || !key)
		return NULL;
	return resource_find(r, key);
}

void resource__free(struct resource *r)
{
	size_t i;

	if (!r || __atomic_sub_fetch(&r->refs, 1, __ATOMIC_ACQ_REL))
		return;
	for (i = 0; i < r->nattrs; i++) {
		free((char *)r->attrs[i].key);
		if (r->attrs[i].type == ATTR_STRING)
			free((char *)r->attrs[i].s);
	}
	free(r);
}

bool span__id_is_zero(const uint8_t *id, size_t len)
{
	uint64_t w, any = 0;
	size_t i = 0;

	/* Ids are 8 or 16 bytes: a word at a time, as every span asks it a few times. */
	for (; i + 8 <= len; i += 8) {
		memcpy(&w, id + i, sizeof(w));
		any |= w;
	}
	for (; i < len; i++)
		any |= id[i];
	return !any;
}

int span__random_id(uint8_t *buf, size_t len)
{
	size_t got;
	ssize_t n;

	if (!buf || !len)
		return -EINVAL;
	/* An all-zero draw is rare for 8 or 16 bytes but must still be redrawn, not patched. */
	do {
		for (got = 0; got < len; got += n) {
			n = getrandom(buf + got, len - got, 0);
			if (n < 0) {
				if (errno == EINTR) {
					n = 0;
					continue;
				}
				return -errno;
			}
		}
	} while (span__id_is_zero(buf, len));
	return 0;
}

/*
 * Finished spans are copied into chunks of this size (span__shrink), some fifty spans of the
 * example service's each; a chunk is freed when the last of them is.
 */
#define SPAN_CHUNK_SIZE (64 << 10)
/*
 * Full-size spans a thread keeps for reuse (3.4 KiB each): enough for the ups and downs of the
 * calls in flight, which a span ending and the next starting keep level.
 */
#define SPARE_SPANS 16

struct span_chunk {
	unsigned int refs; /* atomic: the spans in it, and one for the thread still filling it */
	size_t used;
	_Alignas(16) char data[];
};

/*
 * The calling thread's chunk and spare spans. Only span__shrink() fills them, on the thread that
 * builds spans (the ring-buffer reader); any thread may free a span, which touches only its
 * chunk's count.
 */
static __thread struct span_chunk *chunk_filling;
static __thread struct span *spare[SPARE_SPANS];
static __thread unsigned int nspare;

static void chunk_put(struct span_chunk *c)
{
	if (!__atomic_sub_fetch(&c->refs, 1, __ATOMIC_ACQ_REL))
		free(c);
}

/* SIZE bytes (a multiple of 16) from the thread's chunk, counted in it; NULL without memory. */
static void *chunk_alloc(size_t size, struct span_chunk **owner)
{
	struct span_chunk *c = chunk_filling;
	void *p;

	if (!c || c->used + size > SPAN_CHUNK_SIZE - sizeof(*c)) {
		c = malloc(SPAN_CHUNK_SIZE);
		if (!c)
			return NULL;
		c->refs = 1;
		c->used = 0;
		if (chunk_filling)
			chunk_put(chunk_filling);
		chunk_filling = c;
	}
	p = c->data + c->used;
	c->used += size;
	__atomic_add_fetch(&c->refs, 1, __ATOMIC_RELAXED);
	*owner = c;
	return p;
}

/*
 * A span with its head zeroed. The attribute table and the arena are not: nothing reads an
 * attribute past nattrs or the arena past arena_used, and zeroing their 2.8 KiB for every span
 * was 7% of gospan's CPU per exported span.
 */
struct span *span__alloc(void)
{
	struct span *s = nspare ? spare[--nspare] : malloc(sizeof(*s));

	if (!s)
		return NULL;
	memset(s, 0, offsetof(struct span, attrs));
	s->arena_used = 0;
	s->arena_cap = SPAN_ARENA_SIZE;
	s->chunk = NULL;
	return s;
}

/* *P moved along with the arena, from S's to N's, when it points into it. */
static void arena_follow(const struct span *s, const struct span *n, const char **p)
{
	uintptr_t a = (uintptr_t)s->arena, v = (uintptr_t)*p;

	if (*p && v >= a && v < a + s->arena_used)
		*p = n->arena + (v - a);
}

struct span *span__shrink(struct span *s)
{
	size_t size, i;
	struct span_chunk *c;
	struct span *n;

	/* Already compact (shrunk before), or with too little to give back to be worth a copy. */
	if (!s || s->chunk || s->arena_cap != SPAN_ARENA_SIZE)
		return s;
	size = (offsetof(struct span, arena) + s->arena_used + 15) & ~(size_t)15;
	if (size + 64 >= sizeof(*s))
		return s;
	n = chunk_alloc(size, &c);
	if (!n)
		return s;
	/* The head and the attributes in use, then the arena's bytes in use: nothing else. */
	memcpy(n, s, offsetof(struct span, attrs) + s->nattrs * sizeof(s->attrs[0]));
	memcpy(n->arena, s->arena, s->arena_used);
	n->arena_used = n->arena_cap = s->arena_used;
	n->chunk = c;
	arena_follow(s, n, &n->name);
	arena_follow(s, n, &n->trace_state);
	arena_follow(s, n, &n->status_msg);
	for (i = 0; i < n->nattrs; i++) {
		arena_follow(s, n, &n->attrs[i].key);
		if (n->attrs[i].type == ATTR_STRING)
			arena_follow(s, n, &n->attrs[i].s);
	}
	/* Its resource reference went with the copy; the span itself is kept for the next. */
	if (nspare < SPARE_SPANS)
		spare[nspare++] = s;
	else
		free(s);
	return n;
}

struct span *span__new(void)
{
	struct span *s = span__alloc();
	int err;

	if (!s)
		return NULL;
	err = span__random_id(s->trace_id, sizeof(s->trace_id));
	if (!err)
		err = span__random_id(s->span_id, sizeof(s->span_id));
	if (err) {
		free(s);
		errno = -err;
		return NULL;
	}
	return s;
}

void span__free(struct span *s)
{
	if (!s)
		return;
	if (s->res_held)
		resource__free((struct resource *)s->res);
	if (s->chunk)
		chunk_put(s->chunk);
	else
		free(s);
}

void span__set_resource(struct span *s, struct resource *r)
{
	if (s->res_held)
		resource__free((struct resource *)s->res);
	s->res = resource__hold(r);
	s->res_held = true;
}

/*
 * Copies STR into the arena as valid UTF-8. Valid input is copied byte for byte; invalid bytes
 * grow into U+FFFD, and a copy that does not fit whole is refused rather than cut, so that a
 * value never silently loses its end. *OUT_LEN is the copy's length as C code reads it (to a
 * NUL).
 */
static const char *arena_copy(struct span *s, const char *str, size_t len, size_t *out_len)
{
	char *dst;
	size_t w, consumed;
	bool nul = false;

	if (!s || (!str && len) || s->arena_used >= s->arena_cap)
		return NULL;
	dst = s->arena + s->arena_used;
	w = utf8_copy(dst, s->arena_cap - s->arena_used, str, len, &consumed, &nul);
	if (consumed < len)
		return NULL;
	s->arena_used += w + 1;
	/* A Go string may hold a NUL; every reader of the copy stops there, so its length does. */
	*out_len = nul ? strlen(dst) : w;
	return dst;
}

const char *span__strndup(struct span *s, const char *str, size_t len)
{
	size_t n;

	return arena_copy(s, str, len, &n);
}

int span__set_name(struct span *s, const char *name, size_t len)
{
	const char *p;
	size_t n;

	if (!s || (!name && len))
		return -EINVAL;
	p = arena_copy(s, name, len, &n);
	if (!p)
		return -ENOSPC;
	s->name = p;
	s->name_len = (uint16_t)n;
	return 0;
}

/* KEY's bit in span.key_bits (an empty key has its NUL for a first byte). */
static uint32_t key_bit(const char *key, size_t key_len)
{
	return 1u << ((key_len + (unsigned char)key[0] * 7) & 31);
}

static struct attr *span_find(const struct span *s, const char *key, size_t key_len)
{
	size_t i;

	if (!(s->key_bits & key_bit(key, key_len)))
		return NULL;

	/*
	 * Keys are mostly semconv.h's constants, the same pointer each time; a length that
	 * differs settles most of the rest without comparing bytes (many keys share a first byte:
	 * http.*, server.*, network.*).
	 */
	for (i = 0; i < s->nattrs; i++) {
		const struct attr *a = &s->attrs[i];

		if (a->key == key || (a->key_len == key_len && !memcmp(a->key, key, key_len)))
			return (struct attr *)a;
	}
	return NULL;
}

/* The existing attribute for KEY or a new one; NULL when the span has no room left. */
static struct attr *span_slot(struct span *s, const char *key, size_t key_len)
{
	struct attr *a = span_find(s, key, key_len);

	if (a)
		return a;
	if (s->nattrs >= SPAN_MAX_ATTRS)
		return NULL;
	a = &s->attrs[s->nattrs++];
	a->key = key;
	a->key_len = (uint16_t)key_len;
	s->key_bits |= key_bit(key, key_len);
	return a;
}

int span__add_str(struct span *s, const char *key, size_t key_len, const char *val, size_t len)
{
	const char *v;
	struct attr *a;
	size_t copied;

	if (!s || !key || key_len > UINT16_MAX || (!val && len))
		return -EINVAL;
	/* Checked before the copy so that a full attribute table does not use up the arena. */
	a = span_find(s, key, key_len);
	if (!a && s->nattrs >= SPAN_MAX_ATTRS)
		return -ENOSPC;
	v = arena_copy(s, val, len, &copied);
	if (!v)
		return -ENOSPC;
	if (!a) {
		a = &s->attrs[s->nattrs++];
		a->key = key;
		a->key_len = (uint16_t)key_len;
		s->key_bits |= key_bit(key, key_len);
	}
	a->type = ATTR_STRING;
	a->s = v;
	/* The copy's, not LEN: invalid bytes grow into U+FFFD, a NUL ends it. */
	a->len = (uint16_t)copied;
	return 0;
}

/* The slot for scalar KEY, typed; NULL with *ERR set when it cannot be had. */
static struct attr *scalar_slot(struct span *s, const char *key, size_t key_len,
				enum attr_type type, int *err)
{
	struct attr *a;

	*err = -EINVAL;
	if (!s || !key || key_len > UINT16_MAX)
		return NULL;
	*err = -ENOSPC;
	a = span_slot(s, key, key_len);
	if (a) {
		a->type = type;
		a->len = 0;
	}
	return a;
}

int span__add_int(struct span *s, const char *key, size_t key_len, int64_t val)
{
	int err;
	struct attr *a = scalar_slot(s, key, key_len, ATTR_INT, &err);

	if (!a)
		return err;
	a->i = val;
	return 0;
}

int span__add_bool(struct span *s, const char *key, size_t key_len, bool val)
{
	int err;
	struct attr *a = scalar_slot(s, key, key_len, ATTR_BOOL, &err);

	if (!a)
		return err;
	a->b = val;
	return 0;
}

int span__add_double(struct span *s, const char *key, size_t key_len, double val)
{
	int err;
	struct attr *a = scalar_slot(s, key, key_len, ATTR_DOUBLE, &err);

	if (!a)
		return err;
	a->d = val;
	return 0;
}

const struct attr *span__find(const struct span *s, const char *key, size_t key_len)
{
	if (!s || !key)
		return NULL;
	return span_find(s, key, key_len);
}
