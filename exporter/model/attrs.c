// SPDX-License-Identifier: MIT
/*
 * Span attributes from values the probes captured (attrs.h): cut strings kept valid and marked,
 * "host:port" split.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/attrs.h"
#include "model/semconv.h"
#include "model/span.h"

/* Appends KEY to the span's list of attributes whose values were cut at the capture bound. */
void attrs__mark_truncated(struct span *s, const char *key)
{
	const struct attr *a = span__get(s, GOSPAN_TRUNCATED);
	char buf[256];

	if (a)
		snprintf(buf, sizeof(buf), "%s,%s", a->s, key);
	else
		snprintf(buf, sizeof(buf), "%s", key);
	span__set_str(s, GOSPAN_TRUNCATED, buf, strlen(buf));
}

/*
 * Length of DATA[0..N) without a trailing character the capture bound cut in two: that is a
 * truncation, not invalid input, so it is dropped rather than replaced with U+FFFD.
 */
static size_t cut_at_char(const char *data, size_t n)
{
	size_t i = n, back = 0, need;
	unsigned char c;

	/* Step back over at most three continuation bytes to the last lead byte. */
	while (i > 0 && back < 4 && ((unsigned char)data[i - 1] & 0xc0) == 0x80) {
		i--;
		back++;
	}
	if (i == 0)
		return n;
	c = (unsigned char)data[i - 1];
	need = c >= 0xf0 ? 3 : c >= 0xe0 ? 2 : c >= 0xc0 ? 1 : 0;
	if (c >= 0xc0 && back < need)
		return i - 1;
	return n;
}

/* How much of a Go string of LEN bytes is kept: at most CAP, no character cut in two. */
static size_t captured_len(const char *data, uint32_t len, size_t cap)
{
	return len > cap ? cut_at_char(data, cap) : len;
}

/*
 * Sets KEY to a captured Go string, marked when the capture cut it. The span makes the string
 * valid UTF-8 as it copies it.
 */
void attrs__set_captured(struct span *s, const char *key, const char *data, uint32_t len,
			 size_t cap)
{
	span__set_str(s, key, data, captured_len(data, len, cap));
	if (len > cap)
		attrs__mark_truncated(s, key);
}

size_t attrs__captured_text_len(const char *data, uint32_t len, size_t cap)
{
	size_t n = captured_len(data, len, cap);
	const char *nul = memchr(data, '\0', n);

	return nul ? (size_t)(nul - data) : n;
}

/* A captured Go string as valid UTF-8 in OUT (OUT_CAP bytes); returns the bytes written. */
size_t attrs__captured_copy(char *out, size_t out_cap, const char *data, uint32_t len, size_t cap)
{
	return utf8_sanitize(out, out_cap, data, captured_len(data, len, cap));
}

/*
 * The port in P (LEN bytes): decimal digits only, at most 65535; -1 for anything else. A Go
 * address holds nothing but digits there; strtol, which also skips blanks and takes a sign, was
 * 3 % of the instructions gospan spends on a span.
 */
static long parse_port(const char *p, size_t len)
{
	long port = 0;
	size_t i;

	if (!len)
		return -1;
	for (i = 0; i < len; i++) {
		if (p[i] < '0' || p[i] > '9')
			return -1;
		port = port * 10 + (p[i] - '0');
		if (port > 65535)
			return -1;
	}
	return port;
}

void attrs__host_port(struct span *s, const char *hp, size_t hp_len, const char *host_key,
		      size_t host_key_len, const char *port_key, size_t port_key_len)
{
	const char *host = hp, *colon, *end, *last = hp + hp_len;
	size_t hlen = hp_len;
	long port = -1;

	/* The text as C code reads it: a NUL ends it. */
	end = memchr(hp, '\0', hp_len);
	if (end) {
		last = end;
		hlen = end - hp;
	}
	if (hp[0] == '[') {
		end = memchr(hp, ']', last - hp);
		if (!end)
			return;
		host = hp + 1;
		hlen = end - host;
		colon = end + 1 < last && end[1] == ':' ? end + 1 : NULL;
	} else {
		colon = memrchr(hp, ':', last - hp);
		/* More than one colon without brackets: a bare IPv6 address, no port. */
		if (colon && memchr(hp, ':', last - hp) != colon)
			colon = NULL;
		if (colon)
			hlen = colon - hp;
	}
	if (colon)
		port = parse_port(colon + 1, last - colon - 1);
	if (hlen)
		span__add_str(s, host_key, host_key_len, host, hlen);
	if (port >= 0)
		span__add_int(s, port_key, port_key_len, port);
}
