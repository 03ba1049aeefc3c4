// SPDX-License-Identifier: MIT
/*
 * Fuzzes bpf/include/http1.h, the request-line parser that lets the sk_msg program add a
 * Traceparent line to a message a traced process sends: a wrong REQUEST there corrupts another
 * protocol's bytes, so beyond the sanitizers this checks what the parser promises, aborting on
 * any violation. The input is the message's bytes.
 *
 * - the verdict is REQUEST, NOT_REQUEST or LINE_UNENDED, and on REQUEST the line it found is
 *   "METHOD SP target SP HTTP/1.<digit> CRLF" ending at line_end, within the input and the bound;
 * - it agrees with a reference written here with memchr() and memcmp(), on whether the bytes
 *   start with a request line and where it ends;
 * - REQUEST and NOT_REQUEST (of at least one byte) are final: no prefix decided otherwise, and
 *   no longer input with the same start decides otherwise; LINE_UNENDED means some ending makes
 *   the bytes a request;
 * - http1_method_len(), the sk_msg program's first look, finds the method the parser took, from
 *   the 17 bytes that program pulls.
 */
#include "http1.h"
#include "fuzz.h"

/* The shortest request line: "A / HTTP/1.1\r\n". */
#define MIN_LINE 14

/* RFC 9110, section 5.6.2, spelt out rather than taken from http1_tchar(). */
static const char tchars[] = "!#$%&'*+-.^_`|~0123456789"
			     "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";

static int ref_tchar(uint8_t c)
{
	return c && strchr(tchars, c);
}

static int ref_digit(uint8_t c)
{
	return c && memchr("0123456789", c, 10);
}

/* The reference's method: its length when 1 to 16 tchars and a space start P..LEN, or 0. */
static size_t ref_method_len(const uint8_t *p, size_t len)
{
	const uint8_t *sp = memchr(p, ' ', len < HTTP1_METHOD_MAX + 1 ? len : HTTP1_METHOD_MAX + 1);
	size_t i;

	if (!sp)
		return 0;
	for (i = 0; p + i < sp; i++)
		if (!ref_tchar(p[i]))
			return 0;
	return i;
}

/*
 * The reference: the end of the request line that starts P..LEN (just past its CRLF), or 0.
 * The method ends at the first space and the target at the next, so memchr() finds them.
 */
static size_t ref_request_line(const uint8_t *p, size_t len)
{
	size_t lim = len < HTTP1_LINE_MAX ? len : HTTP1_LINE_MAX, m, t, i;
	const uint8_t *sp;

	m = ref_method_len(p, lim);
	if (!m)
		return 0;
	sp = memchr(p + m + 1, ' ', lim - m - 1);
	if (!sp)
		return 0;
	t = (size_t)(sp - p);
	if (t == m + 1)
		return 0;
	for (i = m + 1; i < t; i++)
		if (p[i] <= ' ' || p[i] == 0x7f)
			return 0;
	if (t + 1 + HTTP1_VERSION_LEN > lim)
		return 0;
	if (memcmp(p + t + 1, "HTTP/1.", 7) || !ref_digit(p[t + 8]) || memcmp(p + t + 9, "\r\n", 2))
		return 0;
	return t + 1 + HTTP1_VERSION_LEN;
}

/* The verdict for P..LEN, and the line end, UINT32_MAX unless REQUEST. */
static enum http1_verdict parse(const uint8_t *p, size_t len, uint32_t *line_end)
{
	*line_end = UINT32_MAX;
	return http1_request_line(p, (uint32_t)len, line_end);
}

/* An exact-size copy of P..LEN followed by TAIL..TAIL_LEN, so ASan sees reads past it. */
static uint8_t *joined(const uint8_t *p, size_t len, const void *tail, size_t tail_len)
{
	uint8_t *q = malloc(len + tail_len ? len + tail_len : 1);

	if (!q)
		abort();
	memcpy(q, p, len);
	memcpy(q + len, tail, tail_len);
	return q;
}

/* What a REQUEST verdict says about the bytes, checked byte by byte. */
static void check_request(const uint8_t *p, size_t len, uint32_t line_end)
{
	uint32_t m, i, head = len < HTTP1_METHOD_MAX + 1 ? len : HTTP1_METHOD_MAX + 1;

	CHECK(line_end >= MIN_LINE && line_end <= len && line_end <= HTTP1_LINE_MAX);
	CHECK(!memcmp(p + line_end - 2, "\r\n", 2));
	CHECK(!memcmp(p + line_end - HTTP1_VERSION_LEN, "HTTP/1.", 7));
	CHECK(ref_digit(p[line_end - 3]));
	CHECK(p[line_end - HTTP1_VERSION_LEN - 1] == ' ');
	m = http1_method_len(p, p + len);
	CHECK(m >= 1 && m <= HTTP1_METHOD_MAX && p[m] == ' ');
	CHECK(http1_method_len(p, p + head) == m);
	for (i = 0; i < m; i++)
		CHECK(ref_tchar(p[i]));
	/* A target of one visible character or more. */
	CHECK(m + 1 < line_end - HTTP1_VERSION_LEN - 1);
	for (i = m + 1; i < line_end - HTTP1_VERSION_LEN - 1; i++)
		CHECK(p[i] > ' ' && p[i] != 0x7f);
}

/* Endings, one of which completes any start of a request line; the longest is ENDING_MAX. */
static const char *const endings[] = {
    " / HTTP/1.1\r\n",
    "/ HTTP/1.1\r\n",
    " HTTP/1.1\r\n",
    "HTTP/1.1\r\n",
    "TTP/1.1\r\n",
    "TP/1.1\r\n",
    "P/1.1\r\n",
    "/1.1\r\n",
    "1.1\r\n",
    ".1\r\n",
    "1\r\n",
    "\r\n",
    "\n",
};
#define ENDING_MAX 13

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	enum http1_verdict v, w;
	uint32_t line_end, end2, m;
	size_t ref, i, k, cuts[4];
	struct http1_parser ps = {};
	uint8_t *p, *q;
	int whole;

	p = fuzz_dup(data, size);
	if (!p)
		return 0;
	v = parse(p, size, &line_end);
	CHECK(v == HTTP1_REQUEST || v == HTTP1_NOT_REQUEST || v == HTTP1_LINE_UNENDED);
	if (v == HTTP1_REQUEST)
		check_request(p, size, line_end);
	else
		CHECK(line_end == UINT32_MAX);

	ref = ref_request_line(p, size);
	CHECK(v == HTTP1_REQUEST ? ref == line_end : ref == 0);

	/* The way BPF runs it, a byte at a time from bpf_loop(), stopping at the verdict. */
	w = HTTP1_MORE;
	for (i = 0; i < size && w == HTTP1_MORE; i++)
		w = http1_feed(&ps, p[i]);
	CHECK(ps.pos == i);
	if (w != HTTP1_MORE)
		CHECK(w == v);
	else
		CHECK(v == (size ? HTTP1_LINE_UNENDED : HTTP1_NOT_REQUEST) &&
		      size <= HTTP1_LINE_MAX);
	if (v == HTTP1_REQUEST)
		CHECK(ps.line_end == line_end && i == line_end);

	/*
	 * The first look finds the method the reference does: tchars, then a space within 17 bytes.
	 * No method found means no request, once the 17 bytes the first look needs are there.
	 */
	m = http1_method_len(p, p + size);
	CHECK(m == ref_method_len(p, size));
	if (!m && size > HTTP1_METHOD_MAX)
		CHECK(v == HTTP1_NOT_REQUEST);

	/*
	 * Empty bytes are NOT_REQUEST (nothing there to touch), the one verdict that more bytes
	 * may change; past them, every verdict but LINE_UNENDED is final.
	 */
	if (!size) {
		free(p);
		return 0;
	}

	/* Non-empty prefixes: a decided one decided for the whole. */
	cuts[0] = size / 2;
	cuts[1] = size - 1;
	cuts[2] = v == HTTP1_REQUEST ? line_end - 1 : size / 3;
	cuts[3] = (data[0] * 7u + data[size - 1]) % size;
	for (k = 0; k < 4; k++) {
		if (!cuts[k])
			continue;
		w = parse(p, cuts[k], &end2);
		if (w == HTTP1_REQUEST || w == HTTP1_NOT_REQUEST)
			CHECK(v == w && end2 == line_end);
		if (v == HTTP1_LINE_UNENDED || (v == HTTP1_REQUEST && cuts[k] < line_end))
			CHECK(w == HTTP1_LINE_UNENDED);
	}

	/* Longer inputs: the input twice, then each ending after it. */
	q = joined(p, size, p, size);
	w = parse(q, 2 * size, &end2);
	if (v != HTTP1_LINE_UNENDED)
		CHECK(w == v && end2 == line_end);
	free(q);
	whole = 0;
	for (k = 0; k < sizeof(endings) / sizeof(endings[0]); k++) {
		q = joined(p, size, endings[k], strlen(endings[k]));
		w = parse(q, size + strlen(endings[k]), &end2);
		ref = ref_request_line(q, size + strlen(endings[k]));
		CHECK(w == HTTP1_REQUEST ? ref == end2 : ref == 0);
		if (v != HTTP1_LINE_UNENDED)
			CHECK(w == v && end2 == line_end);
		whole |= w == HTTP1_REQUEST;
		free(q);
	}
	/*
	 * LINE_UNENDED is only ever a start of a request line (or one past the bound): some ending
	 * makes it whole while the bound leaves room for one.
	 */
	if (v == HTTP1_LINE_UNENDED && size + ENDING_MAX <= HTTP1_LINE_MAX)
		CHECK(whole);
	if (v == HTTP1_LINE_UNENDED && size > HTTP1_LINE_MAX)
		CHECK(parse(p, HTTP1_LINE_MAX + 1, &end2) == HTTP1_LINE_UNENDED &&
		      parse(p, HTTP1_LINE_MAX, &end2) == HTTP1_LINE_UNENDED);
	free(p);
	return 0;
}
