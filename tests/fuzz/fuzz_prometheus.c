// SPDX-License-Identifier: MIT
/*
 * Fuzzes the Prometheus exporter's request parser (prometheus.c), which reads whatever any
 * client on the network sends to the metrics port. Beyond the sanitizers this checks what the
 * parser promises, aborting on any violation: a result is a head length ending at a LF within
 * the bound, 0, -EBADMSG or -EMSGSIZE (only at the bound); and a prefix of the input is never
 * answered otherwise than the whole: a complete head found in a prefix is the same head, and a
 * prefix refused is the whole refused, so the server can answer as soon as it knows.
 *
 * The input is the bytes a client sent, as they arrived.
 */
#include <errno.h>

#include "export/prometheus.h"
#include "fuzz.h"

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	return 0;
}

static int parse(const char *buf, size_t len, struct prometheus_request *req)
{
	size_t bound = len < PROMETHEUS_REQUEST_MAX ? len : PROMETHEUS_REQUEST_MAX;
	int r;

	memset(req, 0, sizeof(*req));
	r = prometheus__parse_request(buf, len, req);
	CHECK(r == 0 || r == -EBADMSG || r == -EMSGSIZE || (r > 0 && (size_t)r <= bound));
	CHECK(r != -EMSGSIZE || len >= PROMETHEUS_REQUEST_MAX);
	if (r > 0) {
		CHECK(buf[r - 1] == '\n');
		CHECK(req->method == PROMETHEUS_GET || req->method == PROMETHEUS_HEAD ||
		      req->method == PROMETHEUS_OTHER);
	}
	return r;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct prometheus_request whole, part;
	size_t cuts[2] = { size / 2, size ? size - 1 : 0 }, i;
	char *buf = fuzz_dup(data, size);
	int r, rp;

	if (!buf)
		abort();
	r = parse(buf, size, &whole);
	for (i = 0; i < 2; i++) {
		rp = parse(buf, cuts[i], &part);
		if (rp > 0)
			CHECK(rp == r && part.method == whole.method &&
			      part.metrics == whole.metrics);
		else if (rp < 0)
			CHECK(rp == r);
	}
	free(buf);
	return 0;
}
