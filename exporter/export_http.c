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
#include "version.h"

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

/* curl_global_init is not thread-safe and must run once per process. */
static void curl_init(void)
{
	curl_init_rc = curl_global_init(CURL_GLOBAL_DEFAULT);
}

/* Keeps the start of the response body for error messages; the rest is read and discarded. */
static size_t on_body(char *data, size_t size, size_t nmemb, void *arg)
{
	struct http_sink *h = arg;
	size_t n = size * nmemb, room = BODY_KEEP - h->body_len, take;

	take = n < room ? n : room;
	memcpy(h->body + h->body_len, data, take);
	h->body_len += take;
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

/* Appends LINE to *LIST; the list is left as it was when curl cannot copy the line. */
static int add_header(struct curl_slist **list, const char *line)
{
	struct curl_slist *l = curl_slist_append(*list, line);

	if (!l)
		return -ENOMEM;
	*list = l;
	return 0;
}

/*
 * "Key: value" for each configured header. curl reads "Key:" as "remove this header", so an empty
 * value is written "Key;", its way of sending a header with nothing after the colon.
 */
static int build_headers(struct http_sink *h, const struct http_sink_opts *opts)
{
	char *line;
	size_t i;
	int err;

	err = add_header(&h->headers, "Content-Type: application/x-protobuf");
	/* Else curl waits for "100 Continue" before large bodies, which some servers never send. */
	if (!err)
		err = add_header(&h->headers, "Expect:");
	for (i = 0; !err && i < opts->nheaders; i++) {
		const struct header_kv *kv = &opts->headers[i];

		if (!*kv->key || strpbrk(kv->key, ":\r\n \t") || strpbrk(kv->value, "\r\n")) {
			pr_err("cannot use header '%s' for '%s': malformed name or value", kv->key,
			       opts->url);
			return -EINVAL;
		}
		if (*kv->value ? asprintf(&line, "%s: %s", kv->key, kv->value) < 0 :
				 asprintf(&line, "%s;", kv->key) < 0)
			return -ENOMEM;
		err = add_header(&h->headers, line);
		free(line);
	}
	return err;
}

void *http_sink__new(const struct http_sink_opts *opts)
{
	struct http_sink *h;
	const char *what;
	long connect_ms;
	CURLcode rc;
	int err;

	pthread_once(&curl_once, curl_init);
	if (curl_init_rc != CURLE_OK) {
		pr_err("cannot initialise libcurl: %s", curl_easy_strerror(curl_init_rc));
		errno = EIO;
		return NULL;
	}
	if (!opts->url || opts->timeout_ms <= 0) {
		errno = EINVAL;
		return NULL;
	}
	h = calloc(1, sizeof(*h));
	if (!h)
		return NULL;
	err = -ENOMEM;
	h->url = strdup(opts->url);
	if (!h->url)
		goto cleanup;
	h->curl = curl_easy_init();
	if (!h->curl) {
		pr_err("cannot create an HTTP client for '%s': curl_easy_init failed", opts->url);
		goto cleanup;
	}
	err = build_headers(h, opts);
	if (err)
		goto cleanup;

	connect_ms = opts->timeout_ms < CONNECT_TIMEOUT_MAX_MS ? opts->timeout_ms :
								  CONNECT_TIMEOUT_MAX_MS;
	/* Each option is checked: a silently ignored one could mean no TLS verification. */
#define SETOPT(opt, val)                                                                           \
	do {                                                                                       \
		what = #opt;                                                                       \
		rc = curl_easy_setopt(h->curl, opt, val);                                          \
		if (rc != CURLE_OK)                                                                \
			goto setopt_failed;                                                        \
	} while (0)
	SETOPT(CURLOPT_URL, h->url);
	SETOPT(CURLOPT_POST, 1L);
	SETOPT(CURLOPT_HTTPHEADER, h->headers);
	SETOPT(CURLOPT_USERAGENT, GOSPAN_NAME "/" GOSPAN_VERSION);
	SETOPT(CURLOPT_TIMEOUT_MS, opts->timeout_ms);
	SETOPT(CURLOPT_CONNECTTIMEOUT_MS, connect_ms);
	SETOPT(CURLOPT_NOSIGNAL, 1L); /* the export thread must not take signals via alarm() */
	SETOPT(CURLOPT_SSL_VERIFYPEER, 1L);
	SETOPT(CURLOPT_SSL_VERIFYHOST, 2L);
	SETOPT(CURLOPT_ERRORBUFFER, h->errbuf);
	SETOPT(CURLOPT_WRITEFUNCTION, on_body);
	SETOPT(CURLOPT_WRITEDATA, h);
	SETOPT(CURLOPT_TCP_KEEPALIVE, 1L);
#undef SETOPT
	return h;

setopt_failed:
	pr_err("cannot set up the HTTP client for '%s': %s: %s", opts->url, what,
	       curl_easy_strerror(rc));
	err = -EINVAL;
cleanup:
	http_sink_free(h);
	errno = -err;
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
	err = -EIO;
	rc = curl_easy_setopt(h->curl, CURLOPT_POSTFIELDS, buf);
	if (rc == CURLE_OK)
		rc = curl_easy_setopt(h->curl, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)len);
	if (rc == CURLE_OK)
		rc = curl_easy_perform(h->curl);
	if (rc != CURLE_OK) {
		pr_err("export to '%s' failed: %s", h->url,
		       h->errbuf[0] ? h->errbuf : curl_easy_strerror(rc));
		goto cleanup;
	}
	rc = curl_easy_getinfo(h->curl, CURLINFO_RESPONSE_CODE, &status);
	if (rc != CURLE_OK) {
		pr_err("export to '%s' failed: no response code: %s", h->url,
		       curl_easy_strerror(rc));
		goto cleanup;
	}
	if (status < 200 || status > 299) {
		printable(h->body, h->body_len);
		pr_err("export to '%s' failed: HTTP %ld%s%s", h->url, status,
		       h->body_len ? ": " : "", h->body);
		goto cleanup;
	}
	pr_debug("exported %zu spans (%zu bytes) to '%s'", n, len, h->url);
	err = 0;
cleanup:
	/* The handle keeps the pointer; it is replaced before the next perform. */
	free(buf);
	return err;
}

const struct sink_ops http_sink_ops = {
	.name = "otlp",
	.export = http_export,
	.free = http_sink_free,
};
