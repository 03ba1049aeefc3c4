/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The HTTP/1.x request line, as the socket-layer writer of trace context sees the bytes a
 * process sends: the one parser shared by the sk_msg program (bpf/wire.bpf.c) and user space's
 * unit test and fuzzer. It decides whether a message may be touched at all, so it is strict:
 * anything that is not exactly "METHOD SP target SP HTTP/1.<digit> CRLF" at the start of the
 * bytes is left alone, which keeps TLS records, the HTTP/2 preface ("PRI * HTTP/2.0"), bodies
 * and other protocols untouched.
 *
 * It takes one byte at a time (http1_feed), so that BPF can run it from bpf_loop(): a plain
 * loop over a 2 KiB line has more branches than the verifier follows.
 */
#ifndef GOSPAN_HTTP1_H
#define GOSPAN_HTTP1_H

#include <linux/types.h>

#ifndef __always_inline
#define __always_inline inline __attribute__((always_inline))
#endif

/* The longest method token accepted ("VERSION-CONTROL" is 15). */
#define HTTP1_METHOD_MAX 16
/* How far the end of the request line is looked for: a longer line is not touched. */
#define HTTP1_LINE_MAX 2048
/* "HTTP/1.x\r\n" */
#define HTTP1_VERSION_LEN 10
/* The shortest request line: "A / HTTP/1.1\r\n". */
#define HTTP1_LINE_MIN 14

enum http1_verdict {
	HTTP1_REQUEST = 0,  /* a complete HTTP/1.x request line starts the bytes */
	HTTP1_NOT_REQUEST,  /* something else: another protocol, HTTP/2, a body, TLS */
	HTTP1_LINE_UNENDED, /* it starts like one, but its end is not within the bytes or the bound */
	HTTP1_MORE,	    /* (http1_feed) so far so good: the next byte, please */
};

enum http1_part {
	HTTP1_IN_METHOD = 0,
	HTTP1_IN_TARGET,
	HTTP1_IN_VERSION,
};

/* Where a request line being fed is; all zero to start. */
struct http1_parser {
	__u32 pos;  /* bytes taken */
	__u32 part; /* enum http1_part */
	__u32 len;  /* bytes of the current part so far */
	__u32 line_end; /* on HTTP1_REQUEST: the offset just past the line's CRLF */
};

/*
 * A token character of RFC 9110 (section 5.6.2): what a method is made of. A bit per ASCII
 * character (bit C of the pair): letters, digits and !#$%&'*+-.^_`|~.
 */
#define HTTP1_TCHAR_LO 0x03ff6cfa00000000ULL
#define HTTP1_TCHAR_HI 0x57ffffffc7fffffeULL

static __always_inline int http1_tchar(__u8 c)
{
	if (c >= 128)
		return 0;
	return (int)(((c < 64 ? HTTP1_TCHAR_LO : HTTP1_TCHAR_HI) >> (c & 63)) & 1);
}

/* Byte K of "HTTP/1.x\r\n", 0 for the digit x. (A switch: no constant table in BPF's rodata.) */
static __always_inline __u8 http1_version_byte(__u32 k)
{
	switch (k) {
	case 0: return 'H';
	case 1: return 'T';
	case 2: return 'T';
	case 3: return 'P';
	case 4: return '/';
	case 5: return '1';
	case 6: return '.';
	case 8: return '\r';
	case 9: return '\n';
	}
	return 0;
}

/* Takes the next byte C of a request line: HTTP1_MORE, or the verdict. */
static __always_inline enum http1_verdict http1_feed(struct http1_parser *ps, __u8 c)
{
	__u8 want;

	ps->pos++;
	if (ps->pos > HTTP1_LINE_MAX)
		return HTTP1_LINE_UNENDED;
	switch (ps->part) {
	case HTTP1_IN_METHOD:
		if (c == ' ' && ps->len) {
			ps->part = HTTP1_IN_TARGET;
			ps->len = 0;
			return HTTP1_MORE;
		}
		if (!http1_tchar(c) || ++ps->len > HTTP1_METHOD_MAX)
			return HTTP1_NOT_REQUEST;
		return HTTP1_MORE;
	case HTTP1_IN_TARGET:
		if (c == ' ' && ps->len) {
			ps->part = HTTP1_IN_VERSION;
			ps->len = 0;
			return HTTP1_MORE;
		}
		/* Visible characters only: no space, control character or DEL in a target. */
		if (c <= ' ' || c == 0x7f)
			return HTTP1_NOT_REQUEST;
		ps->len++;
		return HTTP1_MORE;
	case HTTP1_IN_VERSION:
		want = http1_version_byte(ps->len);
		if (want ? c != want : c < '0' || c > '9')
			return HTTP1_NOT_REQUEST;
		if (++ps->len < HTTP1_VERSION_LEN)
			return HTTP1_MORE;
		ps->line_end = ps->pos;
		return HTTP1_REQUEST;
	}
	return HTTP1_NOT_REQUEST;
}

/*
 * The length of the method token that starts P..END and is followed by a space, or 0: a first
 * look, cheap enough for every message, before anything else is done.
 */
static __always_inline __u32 http1_method_len(const __u8 *p, const __u8 *end)
{
	__u32 i;

	for (i = 0; i <= HTTP1_METHOD_MAX; i++) {
		if (p + i + 1 > end)
			return 0;
		if (p[i] == ' ')
			return i;
		if (!http1_tchar(p[i]))
			return 0;
	}
	return 0;
}

/*
 * Whether the LEN bytes at P start with a complete HTTP/1.x request line; on HTTP1_REQUEST,
 * *LINE_END is the offset just past its CRLF, where more header lines can go. For user space:
 * BPF feeds the bytes from bpf_loop().
 */
static __always_inline enum http1_verdict http1_request_line(const __u8 *p, __u32 len,
							      __u32 *line_end)
{
	struct http1_parser ps = {};
	enum http1_verdict v = HTTP1_MORE;
	__u32 i;

	for (i = 0; i < len && v == HTTP1_MORE; i++)
		v = http1_feed(&ps, p[i]);
	if (v == HTTP1_MORE)
		return len ? HTTP1_LINE_UNENDED : HTTP1_NOT_REQUEST;
	if (v == HTTP1_REQUEST)
		*line_end = ps.line_end;
	return v;
}

#endif
