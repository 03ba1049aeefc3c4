// SPDX-License-Identifier: MIT
/*
 * OTLP/HTTP protobuf transport. One libcurl easy handle lives as long as the sink, so the
 * connection to the collector is kept alive across batches. Header values can be API keys: they
 * are sent, never logged.
 */
#include <ctype.h>
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include <curl/curl.h>

#include "export.h"
#include "export_http.h"
#include "log.h"
#include "otlp.h"

#define BODY_KEEP 200 /* bytes of an error response worth showing */
#define CONNECT_TIMEOUT_MAX_MS 5000

struct http_sink {
	CURL *curl;
	struct curl_slist *headers;
	char *url;
	char errbuf[CURL_ERROR_SIZE];
	char body[BODY_KEEP + 1];
	size_t body_len;
};

static pthread_once_t curl_once = PTHREAD_ONCE_INIT;
static CURLcode curl_init_rc;

static void curl_init(void)
{
	curl_init_rc = curl_global_init(CURL_GLOBAL_DEFAULT);
}

/* Keeps the start of the response body for error messages; the rest is read and discarded. */
static size_t on_body(char *data, size_t size, size_t nmemb, void *arg)
{
	struct http_sink *h = arg;
	size_t n = size * nmemb, room = BODY_KEEP - h->body_len;

	if (room) {
		size_t take = n < room ? n : room;

		memcpy(h->body + h->body_len, data, take);
		h->body_len += take;
	}
	return n;
}

static void http_sink_free(void *ctx)
{
	struct http_sink *h = ctx;

	if (!h)
		return;
	if (h->curl)
		curl_easy_cleanup(h->curl);
	curl_slist_free_all(h->headers);
	free(h->url);
	free(h);
}

#define SETOPT(h, opt, val)                                                                        \
	do {                                                                                       \
		CURLcode _rc = curl_easy_setopt((h)->curl, opt, val);                              \
		if (_rc != CURLE_OK) {                                                             \
			pr_err("cannot set up the OTLP/HTTP client (%s): %s", #opt,                \
			       curl_easy_strerror(_rc));                                           \
			goto cleanup;                                                              \
		}                                                                                  \
	} while (0)

void *http_sink__new(const struct http_sink_opts *opts)
{
	struct http_sink *h;
	struct curl_slist *l;
	long connect_ms;
	char *line;
	size_t i;

	pthread_once(&curl_once, curl_init);
	if (curl_init_rc != CURLE_OK) {
		pr_err("cannot initialise libcurl: %s", curl_easy_strerror(curl_init_rc));
		errno = EIO;
		return NULL;
	}
	h = calloc(1, sizeof(*h));
	if (!h)
		return NULL;
	h->url = strdup(opts->url);
	h->curl = curl_easy_init();
	if (!h->url || !h->curl)
		goto nomem;

	l = curl_slist_append(NULL, "Content-Type: application/x-protobuf");
	if (!l)
		goto nomem;
	h->headers = l;
	for (i = 0; i < opts->nheaders; i++) {
		if (asprintf(&line, "%s: %s", opts->headers[i].key, opts->headers[i].value) < 0)
			goto nomem;
		l = curl_slist_append(h->headers, line);
		free(line);
		if (!l)
			goto nomem;
		h->headers = l;
	}

	connect_ms = opts->timeout_ms < CONNECT_TIMEOUT_MAX_MS ? opts->timeout_ms :
								  CONNECT_TIMEOUT_MAX_MS;
	SETOPT(h, CURLOPT_URL, h->url);
	SETOPT(h, CURLOPT_POST, 1L);
	SETOPT(h, CURLOPT_HTTPHEADER, h->headers);
	SETOPT(h, CURLOPT_TIMEOUT_MS, opts->timeout_ms);
	SETOPT(h, CURLOPT_CONNECTTIMEOUT_MS, connect_ms);
	SETOPT(h, CURLOPT_NOSIGNAL, 1L); /* the export thread must not take signals via alarm() */
	SETOPT(h, CURLOPT_SSL_VERIFYPEER, 1L);
	SETOPT(h, CURLOPT_SSL_VERIFYHOST, 2L);
	SETOPT(h, CURLOPT_ERRORBUFFER, h->errbuf);
	SETOPT(h, CURLOPT_WRITEFUNCTION, on_body);
	SETOPT(h, CURLOPT_WRITEDATA, h);
	SETOPT(h, CURLOPT_TCP_KEEPALIVE, 1L);
	return h;

nomem:
	errno = ENOMEM;
	http_sink_free(h);
	return NULL;
cleanup:
	http_sink_free(h);
	errno = EINVAL;
	return NULL;
}

/* A response body made printable: control bytes and non-ASCII shown as '?'. */
static void printable(char *s, size_t len)
{
	size_t i;

	for (i = 0; i < len; i++)
		if (!isprint((unsigned char)s[i]))
			s[i] = '?';
	s[len] = '\0';
}

static int http_export(void *ctx, struct span *const *spans, size_t n)
{
	struct http_sink *h = ctx;
	uint8_t *buf = NULL;
	long status = 0;
	size_t len;
	CURLcode rc;
	int err;

	err = otlp__encode(spans, n, &buf, &len);
	if (err) {
		pr_err("cannot encode %zu spans as OTLP: %s", n, strerror(-err));
		return err;
	}
	h->body_len = 0;
	h->errbuf[0] = '\0';
	rc = curl_easy_setopt(h->curl, CURLOPT_POSTFIELDS, buf);
	if (rc == CURLE_OK)
		rc = curl_easy_setopt(h->curl, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)len);
	if (rc == CURLE_OK)
		rc = curl_easy_perform(h->curl);
	if (rc != CURLE_OK) {
		pr_err("export of %zu spans to '%s' failed: %s", n, h->url,
		       h->errbuf[0] ? h->errbuf : curl_easy_strerror(rc));
		err = -EIO;
		goto cleanup;
	}
	rc = curl_easy_getinfo(h->curl, CURLINFO_RESPONSE_CODE, &status);
	if (rc != CURLE_OK || status < 200 || status > 299) {
		printable(h->body, h->body_len);
		pr_err("export of %zu spans to '%s' failed: HTTP %ld%s%s", n, h->url, status,
		       h->body_len ? ": " : "", h->body);
		err = -EIO;
		goto cleanup;
	}
	err = 0;
cleanup:
	free(buf);
	return err;
}

const struct sink_ops http_sink_ops = {
	.name = "otlp",
	.export = http_export,
	.free = http_sink_free,
};
