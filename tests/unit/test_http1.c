// SPDX-License-Identifier: MIT
/*
 * Unit tests for bpf/include/http1.h, the request-line parser that decides whether the sk_msg
 * program may add a Traceparent line to a message. A false REQUEST corrupts somebody else's
 * protocol (TLS, HTTP/2, a body), so most cases here are bytes that must be left alone; the
 * requests check the offset the header lines go at. The verdicts are also checked against the
 * way BPF runs the parser, one byte at a time.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "http1.h"

/* A string literal as (bytes, length), without its NUL, which may be inside on purpose. */
#define LIT(s) (const __u8 *)(s), sizeof(s) - 1

/* Line end of a verdict other than REQUEST: the parser must leave *line_end alone. */
#define UNTOUCHED 0xdeadbeefU

static const char *verdict_name(enum http1_verdict v)
{
	switch (v) {
	case HTTP1_REQUEST:
		return "REQUEST";
	case HTTP1_NOT_REQUEST:
		return "NOT_REQUEST";
	case HTTP1_LINE_UNENDED:
		return "LINE_UNENDED";
	case HTTP1_MORE:
		return "MORE";
	}
	return "?";
}

/* The verdict for P..LEN, and the line end when it is REQUEST (UNTOUCHED otherwise). */
static enum http1_verdict parse(const __u8 *p, size_t len, __u32 *line_end)
{
	*line_end = UNTOUCHED;
	return http1_request_line(p, (__u32)len, line_end);
}

/* http1_method_len() of P..LEN: the shape the literals come in. */
static __u32 method_len(const __u8 *p, size_t len)
{
	return http1_method_len(p, p + len);
}

static void check_verdict(const char *what, const __u8 *p, size_t len, enum http1_verdict want,
			  __u32 want_end)
{
	enum http1_verdict v;
	__u32 line_end;

	v = parse(p, len, &line_end);
	if (v != want)
		fail_msg("%s: verdict %s, want %s", what, verdict_name(v), verdict_name(want));
	if (want != HTTP1_REQUEST)
		want_end = UNTOUCHED;
	if (line_end != want_end)
		fail_msg("%s: line_end %u, want %u", what, line_end, want_end);
}

/* A request whose line is the bytes up to and including the first CRLF. */
static void check_request(const char *what, const __u8 *p, size_t len)
{
	const __u8 *crlf = memmem(p, len, "\r\n", 2);

	assert_non_null(crlf);
	check_verdict(what, p, len, HTTP1_REQUEST, (__u32)(crlf + 2 - p));
}

#define REQUEST(s) check_request(s, LIT(s))
#define NOT_REQUEST(s) check_verdict(s, LIT(s), HTTP1_NOT_REQUEST, 0)
#define UNENDED(s) check_verdict(s, LIT(s), HTTP1_LINE_UNENDED, 0)

static void test_http1__origin_form(void **state)
{
	(void)state;
	check_verdict("GET /", LIT("GET / HTTP/1.1\r\n"), HTTP1_REQUEST, 16);
	REQUEST("GET /api/users?id=42&q=a%20b#frag HTTP/1.1\r\n");
	REQUEST("POST /v1/traces HTTP/1.1\r\n");
	REQUEST("DELETE /items/7 HTTP/1.1\r\n");
	/* The shortest request line there is. */
	check_verdict("A /", LIT("A / HTTP/1.1\r\n"), HTTP1_REQUEST, 14);
	/* Bytes past ASCII are not control characters: a raw UTF-8 path is still a target. */
	REQUEST("GET /caf\xc3\xa9 HTTP/1.1\r\n");
}

static void test_http1__absolute_authority_asterisk(void **state)
{
	(void)state;
	/* To a proxy. */
	REQUEST("GET http://backend.internal:8080/api?x=1 HTTP/1.1\r\n");
	REQUEST("CONNECT backend.internal:443 HTTP/1.1\r\n");
	REQUEST("OPTIONS * HTTP/1.1\r\n");
	REQUEST("M-SEARCH * HTTP/1.1\r\n");
}

static void test_http1__versions(void **state)
{
	(void)state;
	check_verdict("1.0", LIT("GET / HTTP/1.0\r\n"), HTTP1_REQUEST, 16);
	check_verdict("1.1", LIT("GET / HTTP/1.1\r\n"), HTTP1_REQUEST, 16);
	/* "HTTP/1.<digit>": a minor version the parser does not know is still HTTP/1 framing. */
	check_verdict("1.9", LIT("GET / HTTP/1.9\r\n"), HTTP1_REQUEST, 16);
	NOT_REQUEST("GET / HTTP/1.x\r\n");
	NOT_REQUEST("GET / HTTP/2.0\r\n");
	NOT_REQUEST("GET / HTTP/3\r\n");
	NOT_REQUEST("GET / HTTP/1.10\r\n");
	NOT_REQUEST("GET / HTTP/11.1\r\n");
	NOT_REQUEST("GET / HTTP/1.1 \r\n");
	NOT_REQUEST("GET / HTTPS/1.1\r\n");
	NOT_REQUEST("GET / http/1.1\r\n");
	NOT_REQUEST("GET / Http/1.1\r\n");
}

static void test_http1__methods(void **state)
{
	(void)state;
	REQUEST("PROPFIND /dav/ HTTP/1.1\r\n");
	REQUEST("VERSION-CONTROL /x HTTP/1.1\r\n");
	/* Methods are case-sensitive tokens: a lowercase one is a (custom) method too. */
	REQUEST("get / HTTP/1.1\r\n");
	/* Every token special character, 15 of them. */
	REQUEST("!#$%&'*+-.^_`|~ / HTTP/1.1\r\n");
	/* 16 characters is the bound, 17 is past it. */
	check_verdict("16", LIT("ABCDEFGHIJKLMNOP / HTTP/1.1\r\n"), HTTP1_REQUEST, 29);
	NOT_REQUEST("ABCDEFGHIJKLMNOPQ / HTTP/1.1\r\n");
	/* Past the bound, the verdict comes without waiting for the rest. */
	NOT_REQUEST("ABCDEFGHIJKLMNOPQ");
	UNENDED("ABCDEFGHIJKLMNOP");
	/* Not token characters. */
	NOT_REQUEST("GE(T / HTTP/1.1\r\n");
	NOT_REQUEST("GE:T / HTTP/1.1\r\n");
	NOT_REQUEST("G\"T / HTTP/1.1\r\n");
	NOT_REQUEST("G\xc3\x89T / HTTP/1.1\r\n");
}

static void test_http1__headers_and_body_follow(void **state)
{
	static const char req[] = "POST /v1/orders HTTP/1.1\r\n"
				  "Host: backend:8080\r\n"
				  "User-Agent: Go-http-client/1.1\r\n"
				  "Content-Length: 7\r\n"
				  "Content-Type: application/json\r\n"
				  "\r\n"
				  "{\"a\":1}";
	__u32 line_end;

	(void)state;
	assert_int_equal(parse(LIT(req), &line_end), HTTP1_REQUEST);
	assert_int_equal(line_end, strlen("POST /v1/orders HTTP/1.1\r\n"));
	/* Where the Traceparent line goes: the first header line starts there. */
	assert_memory_equal(req + line_end, "Host: ", 6);
}

static void test_http1__pipelined(void **state)
{
	static const char two[] = "GET /first HTTP/1.1\r\nHost: a\r\n\r\n"
				  "GET /second/longer HTTP/1.1\r\nHost: a\r\n\r\n";
	__u32 line_end;

	(void)state;
	assert_int_equal(parse(LIT(two), &line_end), HTTP1_REQUEST);
	assert_int_equal(line_end, strlen("GET /first HTTP/1.1\r\n"));
	/* Request lines back to back, no headers: still the first line's end. */
	check_verdict("back to back", LIT("GET /a HTTP/1.1\r\nGET /b HTTP/1.1\r\n"), HTTP1_REQUEST,
		      17);
}

/* Every proper prefix of a request line starts like one: LINE_UNENDED, never a guess. */
static void test_http1__split_line(void **state)
{
	static const char line[] = "GET http://example.com/a/b?c=d HTTP/1.1\r\nHost: x\r\n\r\n";
	size_t n, end = strlen("GET http://example.com/a/b?c=d HTTP/1.1\r\n");
	enum http1_verdict v;
	__u32 line_end;

	(void)state;
	NOT_REQUEST("");
	UNENDED("GET /api/us");		    /* mid-target */
	UNENDED("GET /api/users H");	    /* mid-version */
	UNENDED("GET /api/users HTTP/1.1"); /* no CRLF */
	UNENDED("GET /api/users HTTP/1.1\r");
	for (n = 1; n < end; n++) {
		v = parse((const __u8 *)line, n, &line_end);
		if (v != HTTP1_LINE_UNENDED)
			fail_msg("prefix of %zu bytes: %s, want LINE_UNENDED", n, verdict_name(v));
		assert_int_equal(line_end, UNTOUCHED);
	}
	for (n = end; n <= sizeof(line) - 1; n++) {
		assert_int_equal(parse((const __u8 *)line, n, &line_end), HTTP1_REQUEST);
		assert_int_equal(line_end, end);
	}
}

/* A request line of LEN bytes (CRLF included) with a target of 'a's, then "Host: x\r\n\r\n". */
static __u8 *long_request(size_t len, size_t *total)
{
	static const char tail[] = "Host: x\r\n\r\n";
	__u8 *buf;

	assert_true(len >= 16);
	*total = len + sizeof(tail) - 1;
	buf = malloc(*total);
	assert_non_null(buf);
	memcpy(buf, "GET /", 5);
	memset(buf + 5, 'a', len - 16);
	memcpy(buf + len - 11, " HTTP/1.1\r\n", 11);
	memcpy(buf + len, tail, sizeof(tail) - 1);
	return buf;
}

static void test_http1__line_max(void **state)
{
	size_t total;
	__u8 *buf;

	(void)state;
	/* A line of exactly HTTP1_LINE_MAX bytes is within the bound (BPF reads that many). */
	buf = long_request(HTTP1_LINE_MAX, &total);
	check_verdict("LINE_MAX", buf, total, HTTP1_REQUEST, HTTP1_LINE_MAX);
	check_verdict("LINE_MAX, nothing after", buf, HTTP1_LINE_MAX, HTTP1_REQUEST,
		      HTTP1_LINE_MAX);
	free(buf);
	/* One more byte and the line is not touched, however many bytes follow. */
	buf = long_request(HTTP1_LINE_MAX + 1, &total);
	check_verdict("LINE_MAX + 1", buf, total, HTTP1_LINE_UNENDED, 0);
	check_verdict("LINE_MAX + 1, cut", buf, HTTP1_LINE_MAX, HTTP1_LINE_UNENDED, 0);
	free(buf);
	buf = long_request(3 * HTTP1_LINE_MAX, &total);
	check_verdict("3 * LINE_MAX", buf, total, HTTP1_LINE_UNENDED, 0);
	/* Past the bound, even a byte that could never be in a line does not change that. */
	buf[HTTP1_LINE_MAX] = '\0';
	check_verdict("NUL past LINE_MAX", buf, total, HTTP1_LINE_UNENDED, 0);
	buf[HTTP1_LINE_MAX - 1] = '\0';
	check_verdict("NUL at LINE_MAX", buf, total, HTTP1_NOT_REQUEST, 0);
	free(buf);
}

/* Bytes that are not an HTTP/1 request line, and what each must be. */
struct not_request {
	const char *what;
	const __u8 *p;
	size_t len;
	enum http1_verdict want;
};

/* The fields of a table entry: the literal names itself. */
#define CASE(s, w) s, LIT(s), HTTP1_##w

static const __u8 tls_client_hello[] = {
    0x16, 0x03, 0x01, 0x02, 0x00, 0x01, 0x00, 0x01, 0xfc, 0x03, 0x03, 0x8a, 0x2f, 0x11, 0x4e,
    0x20, 0x47, 0x45, 0x54, 0x20, 0x2f, 0x20, 0x48, 0x54, 0x54, 0x50, 0x2f, 0x31, 0x2e, 0x31,
};
static const __u8 tls_app_data[] = {
    0x17, 0x03, 0x03, 0x00, 0x20, 0x47, 0x45, 0x54, 0x20, 0x2f, 0x20, 0x48,
    0x54, 0x54, 0x50, 0x2f, 0x31, 0x2e, 0x31, 0x0d, 0x0a, 0x00, 0x00, 0x00,
};

static const struct not_request not_requests[] = {
    {CASE("", NOT_REQUEST)},
    {"TLS ClientHello", tls_client_hello, sizeof(tls_client_hello), HTTP1_NOT_REQUEST},
    {"TLS application data", tls_app_data, sizeof(tls_app_data), HTTP1_NOT_REQUEST},
    {CASE("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", NOT_REQUEST)},
    {CASE("HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n", NOT_REQUEST)},
    {CASE("HTTP/1.1 200 OK\r\n", NOT_REQUEST)},
    {CASE("{\"a\":1}", NOT_REQUEST)},
    /*
     * A body of two words could still be the start of "hello world HTTP/1.1\r\n": not a
     * request, and not known not to be one. Only its end settles it.
     */
    {CASE("hello world", LINE_UNENDED)},
    {CASE("hello world\r\n", NOT_REQUEST)},
    {CASE("hello world and more", NOT_REQUEST)},
    {CASE("GET / http/1.1\r\n", NOT_REQUEST)},
    {CASE("GET / HTTP/1.1\n", NOT_REQUEST)},
    {CASE("GET / HTTP/1.1\n\n", NOT_REQUEST)},
    {CASE("GET / HTTP/1.1\r\r\n", NOT_REQUEST)},
    {CASE("GET /\n", NOT_REQUEST)},
    {CASE("GET  / HTTP/1.1\r\n", NOT_REQUEST)},
    {CASE("GET /  HTTP/1.1\r\n", NOT_REQUEST)},
    {CASE("GET  HTTP/1.1\r\n", NOT_REQUEST)}, /* no target */
    {CASE("GET /a b HTTP/1.1\r\n", NOT_REQUEST)},
    {CASE("GET /a\tb HTTP/1.1\r\n", NOT_REQUEST)},
    {CASE("GET\t/ HTTP/1.1\r\n", NOT_REQUEST)},
    {CASE("GET /\t HTTP/1.1\r\n", NOT_REQUEST)},
    {CASE("GET /a\x7f HTTP/1.1\r\n", NOT_REQUEST)},
    {CASE("GET /a\x01 HTTP/1.1\r\n", NOT_REQUEST)},
    {CASE("GET /a\x1b[0m HTTP/1.1\r\n", NOT_REQUEST)},
    {CASE("GET /a\r\n HTTP/1.1\r\n", NOT_REQUEST)},
    {CASE(" / HTTP/1.1\r\n", NOT_REQUEST)},
    {CASE(" GET / HTTP/1.1\r\n", NOT_REQUEST)},
    {CASE("\r\nGET / HTTP/1.1\r\n", NOT_REQUEST)},
    {CASE("GET / HTTP/1.1\0\r\n", NOT_REQUEST)},
    {CASE("GET /\0 HTTP/1.1\r\n", NOT_REQUEST)},
    {CASE("G\0T / HTTP/1.1\r\n", NOT_REQUEST)},
    {CASE("\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0", NOT_REQUEST)},
    {CASE("*2\r\n$3\r\nGET\r\n$3\r\nkey\r\n", NOT_REQUEST)},
    {CASE("EHLO x\r\n", NOT_REQUEST)},
    {CASE("EHLO mail.example.com\r\n", NOT_REQUEST)},
    {CASE("SSH-2.0-OpenSSH_9.2\r\n", NOT_REQUEST)},
};

static void test_http1__not_requests(void **state)
{
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(not_requests) / sizeof(not_requests[0]); i++)
		check_verdict(not_requests[i].what, not_requests[i].p, not_requests[i].len,
			      not_requests[i].want, 0);
}

static const char *const requests[] = {
    "GET / HTTP/1.1\r\n",
    "A / HTTP/1.1\r\n",
    "GET /api/users?id=42 HTTP/1.1\r\nHost: backend\r\n\r\n",
    "POST /v1/traces HTTP/1.0\r\nContent-Length: 2\r\n\r\n{}",
    "M-SEARCH * HTTP/1.1\r\nHOST: 239.255.255.250:1900\r\n\r\n",
    "OPTIONS * HTTP/1.1\r\n",
    "GET http://example.com/ HTTP/1.1\r\n",
    "ABCDEFGHIJKLMNOP / HTTP/1.1\r\n",
    "GET /a HTTP/1.1\r\nGET /b HTTP/1.1\r\n",
};

/*
 * The length of the method http1_method_len() finds must be what the whole parser took as the
 * method, also when END leaves only the 17 bytes the sk_msg program pulls before it looks.
 */
static void check_method_len(const char *what, const __u8 *p, size_t len)
{
	size_t head = len < HTTP1_METHOD_MAX + 1 ? len : HTTP1_METHOD_MAX + 1;
	__u32 m = http1_method_len(p, p + len), line_end;
	enum http1_verdict v = parse(p, len, &line_end);
	const __u8 *sp;

	if (http1_method_len(p, p + head) != m)
		fail_msg("%s: method length %u from %zu bytes, %u from all", what,
			 http1_method_len(p, p + head), head, m);
	if (m) {
		/* A token, 1 to 16 long, and a space after it. */
		assert_true(m <= HTTP1_METHOD_MAX);
		assert_int_equal(p[m], ' ');
		/* Then the parser cannot have refused the method part. */
		assert_int_equal(parse(p, m + 1, &line_end), HTTP1_LINE_UNENDED);
	}
	if (v == HTTP1_REQUEST) {
		sp = memchr(p, ' ', len);
		if (!m || !sp || m != (size_t)(sp - p))
			fail_msg("%s: a request, but method length %u", what, m);
	}
}

static void test_http1__method_len(void **state)
{
	static const __u8 get[] = "GET / HTTP/1.1\r\n";
	size_t i;

	(void)state;
	assert_int_equal(method_len(LIT("GET / HTTP/1.1\r\n")), 3);
	assert_int_equal(method_len(LIT("M-SEARCH * HTTP/1.1\r\n")), 8);
	assert_int_equal(method_len(LIT("ABCDEFGHIJKLMNOP / HTTP/1.1\r\n")), 16);
	assert_int_equal(method_len(LIT("ABCDEFGHIJKLMNOPQ / HTTP/1.1\r\n")), 0);
	assert_int_equal(method_len(LIT(" GET / HTTP/1.1\r\n")), 0);
	assert_int_equal(method_len(LIT("GET")), 0);
	assert_int_equal(method_len(LIT("GET ")), 3);
	assert_int_equal(method_len(LIT("")), 0);
	assert_int_equal(method_len(LIT("hello world")), 5);
	assert_int_equal(method_len(LIT("EHLO x\r\n")), 4);
	assert_int_equal(method_len(LIT("HTTP/1.1 200 OK\r\n")), 0);
	assert_int_equal(method_len(LIT("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n")), 3);
	assert_int_equal(method_len(tls_client_hello, 30), 0);
	/* The bytes past END are not looked at: the space after "GET" is beyond it. */
	assert_int_equal(http1_method_len(get, get + 3), 0);
	assert_int_equal(http1_method_len(get, get + 4), 3);

	for (i = 0; i < sizeof(requests) / sizeof(requests[0]); i++)
		check_method_len(requests[i], (const __u8 *)requests[i], strlen(requests[i]));
	for (i = 0; i < sizeof(not_requests) / sizeof(not_requests[0]); i++)
		check_method_len(not_requests[i].what, not_requests[i].p, not_requests[i].len);
}

/* RFC 9110, section 5.6.2, written out: tchar = "!" / "#" / ... / DIGIT / ALPHA. */
static const char rfc9110_tchar[] = "!#$%&'*+-.^_`|~"
				    "0123456789"
				    "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
				    "abcdefghijklmnopqrstuvwxyz";

static void test_http1__tchar_is_rfc9110(void **state)
{
	int c, want, n = 0;

	(void)state;
	for (c = 0; c < 256; c++) {
		/* strchr() finds the terminating NUL too: NUL is no tchar. */
		want = c && strchr(rfc9110_tchar, c);
		if (http1_tchar((__u8)c) != want)
			fail_msg("byte 0x%02x: http1_tchar %d, RFC 9110 says %d", c,
				 http1_tchar((__u8)c), want);
		n += want;
	}
	assert_int_equal(n, 15 + 10 + 26 + 26);
}

/*
 * BPF's way: one parser fed a byte at a time from bpf_loop(). After every byte, the verdict so
 * far (HTTP1_MORE meaning "starts like one") must be what http1_request_line() says of the
 * bytes fed so far, and once decided, of every longer prefix.
 */
static void check_feed(const char *what, const __u8 *p, size_t len)
{
	struct http1_parser ps = {};
	enum http1_verdict fed = HTTP1_MORE, v;
	__u32 line_end;
	size_t n;

	for (n = 1; n <= len; n++) {
		if (fed == HTTP1_MORE) {
			fed = http1_feed(&ps, p[n - 1]);
			assert_int_equal(ps.pos, n);
		}
		v = parse(p, n, &line_end);
		if (v != (fed == HTTP1_MORE ? HTTP1_LINE_UNENDED : fed))
			fail_msg("%s, %zu bytes: fed %s, http1_request_line %s", what, n,
				 verdict_name(fed), verdict_name(v));
		if (v == HTTP1_REQUEST)
			assert_int_equal(line_end, ps.line_end);
	}
}

static void test_http1__feed_matches_request_line(void **state)
{
	size_t i, total;
	__u8 *buf;

	(void)state;
	for (i = 0; i < sizeof(requests) / sizeof(requests[0]); i++)
		check_feed(requests[i], (const __u8 *)requests[i], strlen(requests[i]));
	for (i = 0; i < sizeof(not_requests) / sizeof(not_requests[0]); i++)
		check_feed(not_requests[i].what, not_requests[i].p, not_requests[i].len);
	buf = long_request(HTTP1_LINE_MAX, &total);
	check_feed("LINE_MAX", buf, total);
	free(buf);
	buf = long_request(HTTP1_LINE_MAX + 1, &total);
	check_feed("LINE_MAX + 1", buf, total);
	free(buf);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_http1__origin_form),
	    cmocka_unit_test(test_http1__absolute_authority_asterisk),
	    cmocka_unit_test(test_http1__versions),
	    cmocka_unit_test(test_http1__methods),
	    cmocka_unit_test(test_http1__headers_and_body_follow),
	    cmocka_unit_test(test_http1__pipelined),
	    cmocka_unit_test(test_http1__split_line),
	    cmocka_unit_test(test_http1__line_max),
	    cmocka_unit_test(test_http1__not_requests),
	    cmocka_unit_test(test_http1__method_len),
	    cmocka_unit_test(test_http1__tchar_is_rfc9110),
	    cmocka_unit_test(test_http1__feed_matches_request_line),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
