// SPDX-License-Identifier: MIT
/*
 * Unit tests for attrs.c: "host:port" as Go writes addresses (net.JoinHostPort, URL.Host) split
 * into a span's two attributes, and what is not a port left out.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "helpers.h"
#include "model/attrs.h"
#include "model/semconv.h"
#include "model/span.h"

/* HP (LEN bytes) split into a fresh span; its server.address ("" for none) and port (-1). */
static struct span *split(const char *hp, size_t len, const char **host, int64_t *port)
{
	struct span *s = span__new();
	const struct attr *a;

	assert_non_null(s);
	attrs__host_port(s, hp, len, SC_SERVER_ADDRESS, strlen(SC_SERVER_ADDRESS), SC_SERVER_PORT,
			 strlen(SC_SERVER_PORT));
	a = span__get(s, SC_SERVER_ADDRESS);
	*host = a ? a->s : "";
	if (a)
		assert_int_equal(a->len, strlen(a->s));
	a = span__get(s, SC_SERVER_PORT);
	*port = a ? a->i : -1;
	return s;
}

static void test_attrs__host_port(void **state)
{
	static const struct {
		const char *in;
		size_t len; /* 0: strlen(in) */
		const char *host;
		int64_t port;
	} cases[] = {
		{ "example.com:8080", 0, "example.com", 8080 },
		{ "10.0.0.1:0", 0, "10.0.0.1", 0 },
		{ "10.0.0.1:65535", 0, "10.0.0.1", 65535 },
		{ "[::1]:443", 0, "::1", 443 },
		{ "[fe80::1%eth0]:80", 0, "fe80::1%eth0", 80 },
		{ "::1", 0, "::1", -1 },		/* a bare IPv6 address: no port */
		{ "[::1]", 0, "::1", -1 },
		{ "[::1", 0, "", -1 },			/* no closing bracket: nothing */
		{ "host", 0, "host", -1 },
		{ "host:", 0, "host", -1 },
		{ "host:65536", 0, "host", -1 },	/* past a port's range */
		{ "host:+80", 0, "host", -1 },		/* digits only, as Go writes ports */
		{ "host: 80", 0, "host", -1 },
		{ "host:80x", 0, "host", -1 },
		{ ":9090", 0, "", 9090 },		/* Go's "every interface" address */
		{ "host:8080trailing", 8, "host", 808 }, /* the length given bounds it */
		{ "a\0b:80", 6, "a", -1 },		/* C code reads it to the NUL */
	};
	const char *host;
	int64_t port;
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct span *s = split(cases[i].in, cases[i].len ?: strlen(cases[i].in), &host,
				       &port);

		if (strcmp(host, cases[i].host) || port != cases[i].port)
			fail_msg("'%s': host '%s' port %lld, want '%s' %lld", cases[i].in, host,
				 (long long)port, cases[i].host, (long long)cases[i].port);
		span__free(s);
	}
}

/* The inline form measures the string and the keys; the same split. */
static void test_attrs__set_host_port(void **state)
{
	struct span *s = span__new();

	(void)state;
	assert_non_null(s);
	attrs__set_host_port(s, "[2001:db8::2]:5432", SC_NETWORK_PEER_ADDRESS,
			     SC_NETWORK_PEER_PORT);
	assert_string_equal(span__get(s, SC_NETWORK_PEER_ADDRESS)->s, "2001:db8::2");
	assert_int_equal(span__get(s, SC_NETWORK_PEER_ADDRESS)->key_len,
			 strlen(SC_NETWORK_PEER_ADDRESS));
	assert_int_equal(span__get(s, SC_NETWORK_PEER_PORT)->i, 5432);
	span__free(s);
}

/*
 * What C code reads of a captured string's valid copy: to a NUL it holds, and without the
 * character the capture bound cut in two; the same count as strlen() of attrs__captured_copy's.
 */
static void test_attrs__captured_text_len(void **state)
{
	static const struct {
		const char *data;
		uint32_t len; /* the Go string's real length */
		size_t cap;   /* how much of it was captured */
		size_t want;
	} cases[] = {
		{ "GET", 3, 16, 3 },
		{ "GET\0xy", 6, 16, 3 },	       /* a NUL ends it */
		{ "\0abc", 4, 16, 0 },
		{ "abcdef", 6, 4, 4 },	       /* cut at the bound */
		{ "ab\xe6\x97\xa5", 5, 4, 2 },     /* the character the bound split is left out */
		{ "ab\xe6\x97\xa5", 5, 5, 5 },     /* whole */
		{ "a\xff\0b", 4, 16, 2 },	       /* invalid bytes count as they are */
		{ "", 0, 16, 0 },
	};
	char copy[64];
	size_t i, n;

	(void)state;
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		n = attrs__captured_text_len(cases[i].data, cases[i].len, cases[i].cap);
		assert_int_equal(n, cases[i].want);
		attrs__captured_copy(copy, sizeof(copy), cases[i].data, cases[i].len, cases[i].cap);
		/* The copy's length differs only where a byte became U+FFFD. */
		if (!memchr(cases[i].data, 0xff, n))
			assert_int_equal(strlen(copy), n);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_attrs__host_port),
		cmocka_unit_test(test_attrs__set_host_port),
		cmocka_unit_test(test_attrs__captured_text_len),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
