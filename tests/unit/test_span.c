// SPDX-License-Identifier: MIT
/*
 * Unit tests for span.c: UTF-8 sanitizing (the byte patterns of RFC 3629 and Unicode's
 * replacement practice, plus random bytes checked by a decoder written differently from the
 * one under test), arena and attribute-table exhaustion, attribute replacement, resources, and
 * id generation.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "helpers.h"
#include "model/semconv.h"
#include "model/span.h"

#define FFFD "\xef\xbf\xbd"

/*
 * An independent validity check: decode the code point arithmetically, then reject what RFC
 * 3629 forbids (overlong forms, surrogates, beyond U+10FFFF), instead of span.c's byte ranges.
 */
static bool valid_utf8(const char *buf, size_t len)
{
	const unsigned char *s = (const unsigned char *)buf;
	size_t i = 0;

	while (i < len) {
		uint32_t cp, min;
		size_t n, k;

		if (s[i] < 0x80) {
			i++;
			continue;
		} else if ((s[i] & 0xe0) == 0xc0) {
			n = 2, cp = s[i] & 0x1f, min = 0x80;
		} else if ((s[i] & 0xf0) == 0xe0) {
			n = 3, cp = s[i] & 0x0f, min = 0x800;
		} else if ((s[i] & 0xf8) == 0xf0) {
			n = 4, cp = s[i] & 0x07, min = 0x10000;
		} else {
			return false;
		}
		if (i + n > len)
			return false;
		for (k = 1; k < n; k++) {
			if ((s[i + k] & 0xc0) != 0x80)
				return false;
			cp = cp << 6 | (s[i + k] & 0x3f);
		}
		if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
			return false;
		i += n;
	}
	return true;
}

/* Sanitizes IN (INLEN bytes) with a roomy buffer and checks the exact output. */
static void check_sanitize(const char *in, size_t inlen, const char *want)
{
	char out[256];
	size_t w;

	memset(out, 'X', sizeof(out));
	w = utf8_sanitize(out, sizeof(out), in, inlen);
	assert_int_equal(w, strlen(want));
	assert_memory_equal(out, want, w + 1); /* including the NUL */
	assert_true(valid_utf8(out, w));
}

static void test_span__utf8_ascii(void **state)
{
	(void)state;
	check_sanitize("GET /users/42?x=1", 17, "GET /users/42?x=1");
	/* LEN bounds the read: the bytes after it are not looked at. */
	check_sanitize("abcdef", 3, "abc");
}

static void test_span__utf8_multibyte(void **state)
{
	/* 2, 3 and 4 byte characters, and the boundaries of each range, pass unchanged. */
	static const char *valid[] = {
		"h\xc3\xa9llo",		/* é */
		"\xe2\x82\xac 5",	/* € */
		"\xf0\x9d\x84\x9e",	/* U+1D11E */
		"\xc2\x80",		/* U+0080, the smallest two-byte */
		"\xdf\xbf",		/* U+07FF */
		"\xe0\xa0\x80",		/* U+0800, the smallest three-byte */
		"\xed\x9f\xbf",		/* U+D7FF, just below the surrogates */
		"\xee\x80\x80",		/* U+E000, just above them */
		"\xef\xbf\xbf",		/* U+FFFF */
		"\xf0\x90\x80\x80",	/* U+10000, the smallest four-byte */
		"\xf4\x8f\xbf\xbf",	/* U+10FFFF, the largest code point */
		"\xe6\x97\xa5\xe6\x9c\xac\xe8\xaa\x9e", /* 日本語 */
	};
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(valid) / sizeof(valid[0]); i++)
		check_sanitize(valid[i], strlen(valid[i]), valid[i]);
}

static void test_span__utf8_invalid(void **state)
{
	(void)state;
	/* A lone continuation byte, bytes that never occur, and C0/C1 (always overlong). */
	check_sanitize("a\x80z", 3, "a" FFFD "z");
	check_sanitize("\xff\xfe", 2, FFFD FFFD);
	check_sanitize("\xf5\x80", 2, FFFD FFFD);
	check_sanitize("\xc0\xaf", 2, FFFD FFFD);	  /* overlong '/' */
	check_sanitize("\xc1\xbf", 2, FFFD FFFD);
	/* Overlong three and four byte forms: the lead's range check rejects the second byte. */
	check_sanitize("\xe0\x80\xaf", 3, FFFD FFFD FFFD);
	check_sanitize("\xf0\x8f\xbf\xbf", 4, FFFD FFFD FFFD FFFD);
	/* UTF-16 surrogates encoded as UTF-8 (CESU) are not UTF-8. */
	check_sanitize("\xed\xa0\x80", 3, FFFD FFFD FFFD);
	check_sanitize("\xed\xbf\xbf", 3, FFFD FFFD FFFD);
	/* Beyond U+10FFFF. */
	check_sanitize("\xf4\x90\x80\x80", 4, FFFD FFFD FFFD FFFD);
	/* A truncated sequence is one U+FFFD and does not swallow the character after it. */
	check_sanitize("\xe2\x82" "A", 3, FFFD "A");
	check_sanitize("\xf0\x9d\x84\xc3\xa9", 5, FFFD "\xc3\xa9");
	check_sanitize("\xe2\xe2\x82\xac", 4, FFFD "\xe2\x82\xac");
}

static void test_span__utf8_input_cut_mid_character(void **state)
{
	(void)state;
	/* A capture bound inside € leaves two of its three bytes: they become one U+FFFD. */
	check_sanitize("ab\xe2\x82\xac", 4, "ab" FFFD);
	check_sanitize("ab\xf0\x9d\x84\x9e", 5, "ab" FFFD);
	check_sanitize("ab\xc3\xa9", 3, "ab" FFFD);
}

static void test_span__utf8_output_cut_never_splits(void **state)
{
	char out[16];
	size_t w;

	(void)state;
	/* "a€": 4 bytes, so 5 with the NUL. Every smaller capacity must drop € whole. */
	for (size_t cap = 2; cap < 5; cap++) {
		memset(out, 'X', sizeof(out));
		w = utf8_sanitize(out, cap, "a\xe2\x82\xac", 4);
		assert_int_equal(w, 1);
		assert_string_equal(out, "a");
		assert_int_equal(out[cap], 'X'); /* nothing written past the capacity */
	}
	w = utf8_sanitize(out, 5, "a\xe2\x82\xac", 4);
	assert_int_equal(w, 4);
	assert_string_equal(out, "a\xe2\x82\xac");

	/* A replacement character is cut like any other: "ab" + U+FFFD needs 6 bytes. */
	memset(out, 'X', sizeof(out));
	w = utf8_sanitize(out, 5, "ab\xff", 3);
	assert_int_equal(w, 2);
	assert_string_equal(out, "ab");
	w = utf8_sanitize(out, 6, "ab\xff", 3);
	assert_int_equal(w, 5);
	assert_string_equal(out, "ab" FFFD);

	/* A four-byte character at the end, one byte short of room. */
	w = utf8_sanitize(out, 4, "\xf0\x9d\x84\x9e", 4);
	assert_int_equal(w, 0);
	assert_string_equal(out, "");
}

static void test_span__utf8_empty(void **state)
{
	char out[4] = "XYZ";
	size_t w;

	(void)state;
	w = utf8_sanitize(out, sizeof(out), "", 0);
	assert_int_equal(w, 0);
	assert_int_equal(out[0], '\0');

	/* No room even for the NUL: nothing is written. */
	memcpy(out, "XYZ", 4);
	w = utf8_sanitize(out, 0, "abc", 3);
	assert_int_equal(w, 0);
	assert_memory_equal(out, "XYZ", 4);

	/* Room for the NUL only. */
	w = utf8_sanitize(out, 1, "abc", 3);
	assert_int_equal(w, 0);
	assert_int_equal(out[0], '\0');
	assert_int_equal(out[1], 'Y');
}

/* Random bytes, biased towards the interesting range, always come out valid and bounded. */
static void test_span__utf8_random_bytes_always_valid(void **state)
{
	char in[64], out[200];
	int iter;

	(void)state;
	srand(1234);
	for (iter = 0; iter < 20000; iter++) {
		size_t len = (size_t)rand() % sizeof(in);
		size_t cap = 1 + (size_t)rand() % sizeof(out);
		size_t i, w;

		for (i = 0; i < len; i++) {
			int r = rand();
			/* No NUL, so that strlen can check the returned length. */
			in[i] = (char)(r & 1 ? 0x80 + (r >> 1) % 0x80 : 1 + (r >> 1) % 0x7f);
		}
		memset(out, 'X', sizeof(out));
		w = utf8_sanitize(out, cap, in, len);
		assert_true(w < cap);
		assert_int_equal(out[w], '\0');
		assert_int_equal(strlen(out), w);
		assert_true(valid_utf8(out, w));
		if (cap < sizeof(out))
			assert_int_equal(out[cap], 'X');
		/* Valid input with room enough is copied byte for byte. */
		if (valid_utf8(in, len) && cap > len) {
			assert_int_equal(w, len);
			assert_memory_equal(out, in, len);
		}
	}
}

static bool is_zero(const uint8_t *b, size_t n)
{
	while (n--)
		if (b[n])
			return false;
	return true;
}

static void test_span__new_is_zeroed_with_ids(void **state)
{
	struct span *s = span__new();

	(void)state;
	assert_non_null(s);
	assert_false(is_zero(s->trace_id, sizeof(s->trace_id)));
	assert_false(is_zero(s->span_id, sizeof(s->span_id)));
	assert_true(is_zero(s->parent_span_id, sizeof(s->parent_span_id)));
	assert_null(s->name);
	assert_null(s->status_msg);
	assert_null(s->res);
	assert_int_equal(s->nattrs, 0);
	assert_int_equal(s->arena_used, 0);
	assert_int_equal(s->flags, 0);
	assert_int_equal(s->start_ns, 0);
	span__free(s);
}

static void test_span__ids_differ(void **state)
{
	struct span *a = span__new(), *b = span__new();

	(void)state;
	assert_non_null(a);
	assert_non_null(b);
	assert_memory_not_equal(a->trace_id, b->trace_id, sizeof(a->trace_id));
	assert_memory_not_equal(a->span_id, b->span_id, sizeof(a->span_id));
	/* The two halves of one trace id are not one value repeated. */
	assert_memory_not_equal(a->trace_id, a->trace_id + 8, 8);
	span__free(a);
	span__free(b);
}

static void test_span__random_id_never_zero(void **state)
{
	unsigned seen[256] = { 0 };
	uint8_t b;
	int i, distinct = 0;

	(void)state;
	/*
	 * One byte at a time is zero once in 256 draws, so 5000 draws hit the redraw path about
	 * 20 times: a zero would get through if it were not redrawn.
	 */
	for (i = 0; i < 5000; i++) {
		assert_int_equal(span__random_id(&b, 1), 0);
		assert_int_not_equal(b, 0);
		seen[b]++;
	}
	for (i = 1; i < 256; i++)
		distinct += seen[i] != 0;
	assert_true(distinct > 200); /* random, not a counter stuck on a few values */
	assert_int_equal(span__random_id(NULL, 8), -EINVAL);
	assert_int_equal(span__random_id(&b, 0), -EINVAL);
}

static void test_span__arena_exhaustion(void **state)
{
	struct span *s = span__new();
	char big[SPAN_ARENA_SIZE];
	const char *p;

	(void)state;
	assert_non_null(s);
	memset(big, 'a', sizeof(big));
	/* Exactly the arena: SIZE-1 bytes and the NUL. */
	p = span__strndup(s, big, SPAN_ARENA_SIZE - 1);
	assert_non_null(p);
	assert_int_equal(strlen(p), SPAN_ARENA_SIZE - 1);
	assert_int_equal(s->arena_used, SPAN_ARENA_SIZE);
	/* Not even an empty string fits now. */
	assert_null(span__strndup(s, "", 0));
	assert_int_equal(span__set_name(s, "x", 1), -ENOSPC);
	assert_null(s->name);
	assert_int_equal(span__set_str(s, SC_URL_PATH, "/", 1), -ENOSPC);
	assert_null(span__get(s, SC_URL_PATH));
	/* Non-string attributes need no arena. */
	assert_int_equal(span__set_int(s, SC_HTTP_RESPONSE_STATUS_CODE, 200), 0);
	span__free(s);

	/* A value that does not fit whole is refused, not cut, and the arena is not consumed. */
	s = span__new();
	assert_non_null(s);
	assert_int_equal(span__set_str(s, SC_URL_PATH, big, 1000), 0);
	assert_int_equal(s->arena_used, 1001);
	assert_int_equal(span__set_str(s, SC_HTTP_ROUTE, big, SPAN_ARENA_SIZE - 1001), -ENOSPC);
	assert_int_equal(s->arena_used, 1001);
	assert_null(span__get(s, SC_HTTP_ROUTE));
	assert_int_equal(strlen(span__get(s, SC_URL_PATH)->s), 1000);
	/* The last byte that fits. */
	assert_int_equal(span__set_str(s, SC_HTTP_ROUTE, big, SPAN_ARENA_SIZE - 1002), 0);
	assert_int_equal(s->arena_used, SPAN_ARENA_SIZE);
	span__free(s);

	/* Growth by sanitizing counts: 700 bad bytes need 2100 bytes of U+FFFD. */
	s = span__new();
	assert_non_null(s);
	memset(big, 0xff, 700);
	assert_int_equal(span__set_str(s, SC_URL_PATH, big, 700), -ENOSPC);
	assert_int_equal(span__set_str(s, SC_URL_PATH, big, 600), 0);
	assert_int_equal(strlen(span__get(s, SC_URL_PATH)->s), 1800);
	span__free(s);
}

static void test_span__attr_table_full(void **state)
{
	static char keys[SPAN_MAX_ATTRS + 1][16];
	struct span *s = span__new();
	size_t used;
	int i;

	(void)state;
	assert_non_null(s);
	for (i = 0; i < SPAN_MAX_ATTRS; i++) {
		snprintf(keys[i], sizeof(keys[i]), "k%d", i);
		assert_int_equal(span__set_int(s, keys[i], i), 0);
	}
	snprintf(keys[i], sizeof(keys[i]), "k%d", i);
	used = s->arena_used;
	assert_int_equal(span__set_int(s, keys[i], 1), -ENOSPC);
	assert_int_equal(span__set_bool(s, keys[i], true), -ENOSPC);
	assert_int_equal(span__set_double(s, keys[i], 1.0), -ENOSPC);
	assert_int_equal(span__set_str(s, keys[i], "v", 1), -ENOSPC);
	assert_int_equal(s->arena_used, used); /* a refused string takes no arena */
	assert_int_equal(s->nattrs, SPAN_MAX_ATTRS);
	/* Replacing an existing key still works when the table is full. */
	assert_int_equal(span__set_str(s, keys[3], "three", 5), 0);
	assert_int_equal(s->nattrs, SPAN_MAX_ATTRS);
	assert_int_equal(span__get(s, "k3")->type, ATTR_STRING);
	assert_string_equal(span__get(s, "k3")->s, "three");
	span__free(s);
}

static void test_span__set_replaces_and_gets(void **state)
{
	struct span *s = span__new();
	char path[] = "/users/42";
	const struct attr *a;

	(void)state;
	assert_non_null(s);
	assert_int_equal(span__set_name(s, "GET /users/{id}", 15), 0);
	assert_string_equal(s->name, "GET /users/{id}");
	assert_int_equal(span__set_str(s, SC_URL_PATH, path, strlen(path)), 0);
	path[1] = 'X'; /* the value was copied */
	assert_string_equal(span__get(s, SC_URL_PATH)->s, "/users/42");

	assert_int_equal(span__set_str(s, SC_URL_PATH, "/other", 6), 0);
	assert_int_equal(span__set_int(s, SC_HTTP_RESPONSE_STATUS_CODE, 404), 0);
	assert_int_equal(span__set_bool(s, "b", true), 0);
	assert_int_equal(span__set_double(s, "d", 0.5), 0);
	assert_int_equal(s->nattrs, 4);
	assert_string_equal(span__get(s, SC_URL_PATH)->s, "/other");

	/* A key compares by content, and its type can change. */
	assert_int_equal(span__set_int(s, "b", -7), 0);
	assert_int_equal(s->nattrs, 4);
	a = span__get(s, "b");
	assert_non_null(a);
	assert_int_equal(a->type, ATTR_INT);
	assert_int_equal(a->i, -7);
	a = span__get(s, "d");
	assert_int_equal(a->type, ATTR_DOUBLE);
	assert_true(a->d == 0.5);
	a = span__get(s, SC_HTTP_RESPONSE_STATUS_CODE);
	assert_int_equal(a->type, ATTR_INT);
	assert_int_equal(a->i, 404);
	assert_null(span__get(s, "missing"));
	assert_null(span__get(s, NULL));

	/* Values are made valid UTF-8 on the way in; a length bounds the copy. */
	assert_int_equal(span__set_str(s, "raw", "a\xc0z", 3), 0);
	assert_string_equal(span__get(s, "raw")->s, "a" FFFD "z");
	assert_int_equal(span__set_str(s, "cut", "abcdef", 2), 0);
	assert_string_equal(span__get(s, "cut")->s, "ab");
	assert_int_equal(span__set_str(s, "empty", NULL, 0), 0);
	assert_string_equal(span__get(s, "empty")->s, "");
	assert_int_equal(span__set_str(s, "bad", NULL, 3), -EINVAL);
	span__free(s);
}

/* A shrunk span keeps every string, its arena pointers follow any move, and it takes no more. */
static void test_span__shrink(void **state)
{
	struct span *s = span__new(), *keep;
	const char *key, *a, *b;
	int i;

	(void)state;
	assert_non_null(s);
	keep = span__new(); /* allocated between: makes a move more likely, not needed */
	assert_int_equal(span__set_name(s, "GET /users/{id}", 15), 0);
	s->trace_state = span__strndup(s, "k=v", 3);
	s->status_msg = span__strndup(s, "boom", 4);
	key = span__strndup(s, "gospan.arg.name", 15); /* a key made at run time */
	assert_int_equal(span__set_str(s, key, "Alice", 5), 0);
	assert_int_equal(span__set_str(s, SC_URL_PATH, "/users/42", 9), 0);
	assert_int_equal(span__set_int(s, SC_HTTP_RESPONSE_STATUS_CODE, 200), 0);
	for (i = 0; i < 5; i++) {
		s = span__shrink(s); /* again: no-op then */
		assert_non_null(s);
		assert_true(s->arena_cap == s->arena_used);
		assert_string_equal(s->name, "GET /users/{id}");
		assert_string_equal(s->trace_state, "k=v");
		assert_string_equal(s->status_msg, "boom");
		assert_string_equal(span__get(s, "gospan.arg.name")->s, "Alice");
		assert_string_equal(span__get(s, SC_URL_PATH)->s, "/users/42");
		assert_int_equal(span__get(s, SC_HTTP_RESPONSE_STATUS_CODE)->i, 200);
		/* Every string is in the span's own (new) arena. */
		a = s->arena;
		b = s->arena + s->arena_used;
		assert_true(s->name >= a && s->name < b);
		assert_true(s->attrs[0].key >= a && s->attrs[0].key < b);
		assert_true(s->attrs[0].s >= a && s->attrs[0].s < b);
		assert_string_equal(s->attrs[1].key, SC_URL_PATH);
	}
	assert_null(span__strndup(s, "x", 1));
	assert_int_equal(span__set_str(s, "more", "x", 1), -ENOSPC);
	assert_null(span__shrink(NULL));
	span__free(s);
	span__free(keep);
}

static void test_span__resource(void **state)
{
	struct resource *r = resource__new();
	char val[] = "shop";
	const struct attr *a;
	char key[32];
	int i;

	(void)state;
	assert_non_null(r);
	assert_int_equal(resource__set_str(r, SC_SERVICE_NAME, val), 0);
	val[0] = 'X'; /* copied */
	assert_int_equal(resource__set_int(r, SC_PROCESS_PID, 4242), 0);
	a = resource__get(r, SC_SERVICE_NAME);
	assert_non_null(a);
	assert_int_equal(a->type, ATTR_STRING);
	assert_string_equal(a->s, "shop");
	assert_int_equal(resource__get(r, SC_PROCESS_PID)->i, 4242);
	assert_null(resource__get(r, SC_HOST_NAME));

	/* Replacing keeps one entry, and a string can become an int and back. */
	assert_int_equal(resource__set_str(r, SC_SERVICE_NAME, "cart"), 0);
	assert_int_equal(resource__set_int(r, SC_SERVICE_NAME, 1), 0);
	assert_int_equal(resource__set_str(r, SC_SERVICE_NAME, "b\xff" "d"), 0);
	assert_int_equal(r->nattrs, 2);
	assert_string_equal(resource__get(r, SC_SERVICE_NAME)->s, "b" FFFD "d");

	/* The key is copied too: a caller may pass a key from a buffer it reuses. */
	for (i = 2; i < RESOURCE_MAX_ATTRS; i++) {
		snprintf(key, sizeof(key), "custom.%d", i);
		assert_int_equal(resource__set_int(r, key, i), 0);
	}
	assert_int_equal(resource__get(r, "custom.17")->i, 17);
	assert_int_equal(resource__set_str(r, "one.more", "x"), -ENOSPC);
	assert_int_equal(resource__set_int(r, "one.more", 1), -ENOSPC);
	assert_int_equal(resource__set_str(r, "custom.17", "replaced"), 0);
	assert_string_equal(resource__get(r, "custom.17")->s, "replaced");
	assert_int_equal(resource__set_str(r, NULL, "x"), -EINVAL);
	assert_int_equal(resource__set_str(r, "k", NULL), -EINVAL);
	resource__free(r);
	resource__free(NULL);
}

struct chunk_frees {
	struct span **spans;
	size_t from, to;
};

static void *free_some(void *arg)
{
	struct chunk_frees *f = arg;

	for (size_t i = f->from; i < f->to; i++)
		span__free(f->spans[i]);
	return NULL;
}

/*
 * Shrunk spans are packed into chunks: more than one chunk's worth keeps every span's strings
 * and lengths, each freed on its own in any order and from another thread (the export thread
 * frees what the reader built); the full-size spans they came from are handed out again.
 */
static void test_span__shrink_into_chunks(void **state)
{
	enum { N = 300 };
	struct span **spans = calloc(N, sizeof(*spans));
	struct chunk_frees half = { spans, 0, N / 2 };
	struct resource *res = resource__new();
	struct span *full, *again;
	char value[32];
	pthread_t t;
	size_t i;

	(void)state;
	assert_non_null(spans);
	assert_non_null(res);
	for (i = 0; i < N; i++) {
		assert_non_null(full = span__new());
		span__set_resource(full, res);
		snprintf(value, sizeof(value), "/users/%zu", i);
		assert_int_equal(span__set_name(full, "GET /users/{id}", 15), 0);
		assert_int_equal(span__set_str(full, SC_URL_PATH, value, strlen(value)), 0);
		assert_int_equal(span__set_int(full, SC_HTTP_RESPONSE_STATUS_CODE, (int64_t)i), 0);
		spans[i] = span__shrink(full);
		assert_ptr_not_equal(spans[i], full);
		assert_non_null(spans[i]->chunk);
		/* The full-size span is the next one handed out. */
		again = span__alloc();
		assert_ptr_equal(again, full);
		span__free(again);
	}
	/* Several chunks: the first span's and the last's differ. */
	assert_ptr_not_equal(spans[0]->chunk, spans[N - 1]->chunk);
	for (i = 0; i < N; i++) {
		const struct attr *a = span__get(spans[i], SC_URL_PATH);

		snprintf(value, sizeof(value), "/users/%zu", i);
		assert_string_equal(spans[i]->name, "GET /users/{id}");
		assert_string_equal(a->s, value);
		assert_int_equal(a->len, strlen(value));
		assert_int_equal(span__get(spans[i], SC_HTTP_RESPONSE_STATUS_CODE)->i, (int64_t)i);
		assert_true(a->s >= spans[i]->arena &&
			    a->s < spans[i]->arena + spans[i]->arena_used);
	}
	assert_int_equal(pthread_create(&t, NULL, free_some, &half), 0);
	for (i = N; i-- > N / 2;)
		span__free(spans[i]);
	assert_int_equal(pthread_join(t, NULL), 0);
	/* Each span held the resource: only the test's reference is left. */
	assert_int_equal(res->refs, 1);
	resource__free(res);
	free(spans);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_span__utf8_ascii),
		cmocka_unit_test(test_span__utf8_multibyte),
		cmocka_unit_test(test_span__utf8_invalid),
		cmocka_unit_test(test_span__utf8_input_cut_mid_character),
		cmocka_unit_test(test_span__utf8_output_cut_never_splits),
		cmocka_unit_test(test_span__utf8_empty),
		cmocka_unit_test(test_span__utf8_random_bytes_always_valid),
		cmocka_unit_test(test_span__new_is_zeroed_with_ids),
		cmocka_unit_test(test_span__ids_differ),
		cmocka_unit_test(test_span__random_id_never_zero),
		cmocka_unit_test(test_span__arena_exhaustion),
		cmocka_unit_test(test_span__attr_table_full),
		cmocka_unit_test(test_span__set_replaces_and_gets),
		cmocka_unit_test(test_span__shrink),
		cmocka_unit_test(test_span__shrink_into_chunks),
		cmocka_unit_test(test_span__resource),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
