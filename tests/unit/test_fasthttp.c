// SPDX-License-Identifier: MIT
/*
 * capture/fasthttp.c: what fasthttp's server records carry raw, made into what net/http's give.
 * The request URI as fasthttp keeps it (Header.requestURI: the origin form with its query, or
 * the absolute form) into the path net/url's URL.Path would hold, escapes decoded; a
 * *net.TCPAddr's IP and port into the "ip:port" of http.Request.RemoteAddr.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "events.h"
#include "capture/fasthttp.h"

static void expect_path(const char *uri, const char *want)
{
	char out[64];
	size_t n = fasthttp__uri_path(uri, strlen(uri), out, sizeof(out));

	assert_string_equal(out, want);
	assert_int_equal(n, strlen(want));
}

static void test_fasthttp__uri_path(void **state)
{
	(void)state;
	expect_path("/users/42", "/users/42");
	expect_path("/users/42?x=1&token=s3cr3t", "/users/42");
	expect_path("/a%20b?q=%20", "/a b");
	expect_path("/caf%C3%A9/%2F", "/caf\xc3\xa9//");
	/* net/http would answer 400: the path is given as received, not half decoded. */
	expect_path("/a%2/b%20", "/a%2/b%20");
	expect_path("/bad%zz", "/bad%zz");
	/* The absolute form: the path begins after the authority. */
	expect_path("http://example.com:8080/x/y?z", "/x/y");
	expect_path("http://example.com", "");
	expect_path("*", "*");
	expect_path("?only=query", "");
	expect_path("", "");
}

static void test_fasthttp__uri_path_longer_than_out(void **state)
{
	char out[8];
	size_t n;

	(void)state;
	n = fasthttp__uri_path("/0123456789?q", 13, out, sizeof(out));
	assert_int_equal(n, 11);
	assert_string_equal(out, "/012345");
	n = fasthttp__uri_path("/a%41", 5, out, 0);
	assert_int_equal(n, 3);
}

static void expect_endpoint(const uint8_t *ip, uint8_t ip_len, uint16_t port, const char *want)
{
	struct net_endpoint ep = { .ip_len = ip_len, .port = port };
	char out[64];

	memcpy(ep.ip, ip, ip_len);
	assert_int_equal(fasthttp__endpoint(&ep, out, sizeof(out)), strlen(want));
	if (*want)
		assert_string_equal(out, want);
}

static void test_fasthttp__endpoint(void **state)
{
	static const uint8_t v4[4] = { 127, 0, 0, 1 };
	/* Go's 16-byte form of an IPv4 address, which net.TCPAddr often holds. */
	static const uint8_t v4_in_v6[16] = { [10] = 0xff, [11] = 0xff, 10, 1, 2, 3 };
	static const uint8_t v6[16] = { 0x20, 0x01, 0x0d, 0xb8, [15] = 1 };
	static const uint8_t loopback6[16] = { [15] = 1 };

	(void)state;
	expect_endpoint(v4, 4, 53156, "127.0.0.1:53156");
	expect_endpoint(v4_in_v6, 16, 80, "10.1.2.3:80");
	expect_endpoint(v6, 16, 443, "[2001:db8::1]:443");
	expect_endpoint(loopback6, 16, 8080, "[::1]:8080");
	/* Not a *net.TCPAddr (the probe left it empty): no address at all. */
	expect_endpoint(v4, 0, 80, "");
	expect_endpoint(v6, 5, 80, ""); /* a length no address has */
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_fasthttp__uri_path),
		cmocka_unit_test(test_fasthttp__uri_path_longer_than_out),
		cmocka_unit_test(test_fasthttp__endpoint),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
