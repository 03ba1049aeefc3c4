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

/* A captured Go string as valid UTF-8 in OUT (OUT_CAP bytes); returns the bytes written. */
size_t attrs__captured_copy(char *out, size_t out_cap, const char *data, uint32_t len, size_t cap)
{
	return utf8_sanitize(out, out_cap, data, captured_len(data, len, cap));
}

/*
 * The port in P: decimal digits only, at most 65535; -1 for anything else. A Go address holds
 * nothing but digits there; strtol, which also skips blanks and takes a sign, was 3 % of the
 * instructions gospan spends on a span.
 */
static long parse_port(const char *p)
{
	long port = 0;

	if (!*p)
		return -1;
	for (; *p; p++) {
		if (*p < '0' || *p > '9')
			return -1;
		port = port * 10 + (*p - '0');
		if (port > 65535)
			return -1;
	}
	return port;
}

/* Splits "host:port", "[v6]:port", "host" or "v6" into SPAN attributes HOST_KEY and PORT_KEY. */
void attrs__set_host_port(struct span *s, const char *hp, const char *host_key,
			  const char *port_key)
{
	const char *host = hp, *colon, *end;
	size_t hlen = strlen(hp);
	long port = -1;

	if (hp[0] == '[') {
		end = strchr(hp, ']');
		if (!end)
			return;
		host = hp + 1;
		hlen = end - host;
		colon = end[1] == ':' ? end + 1 : NULL;
	} else {
		colon = strrchr(hp, ':');
		/* More than one colon without brackets: a bare IPv6 address, no port. */
		if (colon && strchr(hp, ':') != colon)
			colon = NULL;
		if (colon)
			hlen = colon - hp;
	}
	if (colon)
		port = parse_port(colon + 1);
	if (hlen)
		span__set_str(s, host_key, host, hlen);
	if (port >= 0)
		span__set_int(s, port_key, port);
}
