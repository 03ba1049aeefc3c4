// SPDX-License-Identifier: MIT
/*
 * OTLP/HTTP protobuf transport. One libcurl easy handle lives as long as the sink, so the
 * connection to the collector is kept alive across batches. Header values can be API keys: they
 * are sent, never logged. Failures the OTLP specification calls transient (429, 502, 503, 504,
 * no connection) are retried with jittered exponential backoff, honouring Retry-After. Each
 * request has the OTLP timeout; one export call, its retries included, has the batch timeout, and
 * when that runs out the call returns -EAGAIN and the batch processor calls again with the same
 * spans. The backoff carries on across those calls, so a long outage costs a request every 30 s
 * at most. The waits happen on the export thread and end at once on shutdown, after which each
 * batch gets one last request and no retry.
 */
#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include <cjson/cJSON.h>
#include <curl/curl.h>
#include <zlib.h>

#include "core/config.h"
#include "export/export.h"
#include "export/export_http.h"
#include "core/log.h"
#include "export/otlp.h"
#include "core/version.h"

#include "model/metrics.h"
#include "opentelemetry/proto/collector/metrics/v1/metrics_service.pb-c.h"
#include "opentelemetry/proto/collector/trace/v1/trace_service.pb-c.h"

#define BODY_KEEP 200	    /* bytes of an error response worth showing */
#define BODY_MAX (16 << 10) /* response bytes kept for decoding a partial success */
#define CONNECT_TIMEOUT_MAX_MS 5000
#define BACKOFF_DEFAULT_MS 1000
#define BACKOFF_MAX_MS 30000

struct http_sink {
	bool json; /* the body is OTLP/JSON */
	bool metrics;	  /* it sends metric points, not spans */
	const char *noun; /* what it sends, for messages */
	/*
	 * The last request's failure by kind ("HTTP 503", "curl 28"), and for metrics the kind last
	 * said, not said again: the text of a failure varies when its kind does not (curl's "timed
	 * out after 201 milliseconds", a request id in an error body).
	 */
	char kind[32], said[32];
	CURL *curl;
	struct curl_slist *headers;
	char **secrets; /* the configured header values, hidden wherever a response is shown */
	size_t nsecrets;
	char *url;
	char *shown; /* URL as messages show it: without user info */
	char errbuf[CURL_ERROR_SIZE];
	uint8_t body[BODY_MAX + 1];
	size_t body_len;
	bool body_cut; /* the response was longer than BODY_MAX */
	long timeout_ms, batch_timeout_ms, backoff_ms;
	bool gzip;
	/* The export thread's: transient failures in a row, and when the next request may go. */
	unsigned int streak;
	long long next_ms;
	unsigned int seed; /* jitter: rand_r, used by the export thread only */

	/* Shared with exporter__shutdown and exporter__stats, which run on other threads. */
	pthread_mutex_t lock;
	pthread_cond_t cond; /* CLOCK_MONOTONIC; signalled by stop */
	bool stopping;
	long long stop_deadline_ms; /* exports end by then once stopping */
	uint64_t retries, rejected;
};

/* What one request came to. */
enum attempt {
	ATTEMPT_OK,
	ATTEMPT_RETRY, /* transient: worth sending again */
	ATTEMPT_FAIL,
};

static long long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000LL + ts.tv_nsec / 1000000;
}

static pthread_once_t curl_once = PTHREAD_ONCE_INIT;
static CURLcode curl_init_rc;

/* curl_global_init is not thread-safe and must run once per process. */
static void curl_init(void)
{
	curl_init_rc = curl_global_init(CURL_GLOBAL_DEFAULT);
}

/*
 * Keeps the start of the response body: a partial success to decode, or an error to show. The
 * rest is read and discarded.
 */
static size_t on_body(char *data, size_t size, size_t nmemb, void *arg)
{
	struct http_sink *h = arg;
	size_t n = size * nmemb, room = BODY_MAX - h->body_len, take;

	take = n < room ? n : room;
	memcpy(h->body + h->body_len, data, take);
	h->body_len += take;
	if (take < n)
		h->body_cut = true;
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
	while (h->nsecrets)
		free(h->secrets[--h->nsecrets]);
	free(h->secrets);
	free(h->url);
	free(h->shown);
	pthread_cond_destroy(&h->cond);
	pthread_mutex_destroy(&h->lock);
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

	h->secrets = calloc(opts->nheaders + 1, sizeof(*h->secrets));
	if (!h->secrets)
		return -ENOMEM;

	h->json = opts->json;
	err = add_header(&h->headers, opts->json ? "Content-Type: application/json" :
						   "Content-Type: application/x-protobuf");
	/* Else curl waits for "100 Continue" before large bodies, which some servers never send. */
	if (!err)
		err = add_header(&h->headers, "Expect:");
	if (!err && opts->gzip)
		err = add_header(&h->headers, "Content-Encoding: gzip");
	for (i = 0; !err && i < opts->nheaders; i++) {
		const struct header_kv *kv = &opts->headers[i];

		if (!*kv->key || strpbrk(kv->key, ":\r\n \t") || strpbrk(kv->value, "\r\n")) {
			pr_err("cannot use header '%s' for '%s': malformed name or value", kv->key,
			       h->shown);
			return -EINVAL;
		}
		if (*kv->value ? asprintf(&line, "%s: %s", kv->key, kv->value) < 0 :
				 asprintf(&line, "%s;", kv->key) < 0)
			return -ENOMEM;
		err = add_header(&h->headers, line);
		free(line);
		if (!err && *kv->value) {
			h->secrets[h->nsecrets] = strdup(kv->value);
			if (!h->secrets[h->nsecrets])
				return -ENOMEM;
			h->nsecrets++;
		}
	}
	return err;
}

/*
 * Covers every configured header value in TEXT[0..LEN) with '*'. Some collectors and proxies
 * answer with the request's headers (in an error body, or in a partial success's message), and
 * those values are API keys: whatever of a response is shown passes through here first, whole,
 * before it is cut to size, so no part of a key survives at the cut either.
 */
static void hide_secrets(const struct http_sink *h, char *text, size_t len)
{
	char *p, *end;
	size_t i, n;

	if (!text || !len)
		return; /* NULL + 0 is undefined behaviour too */
	end = text + len;
	for (i = 0; i < h->nsecrets; i++) {
		n = strlen(h->secrets[i]);
		for (p = text; (p = memmem(p, end - p, h->secrets[i], n)); p += n)
			memset(p, '*', n);
	}
}

/* The sink's lock and a condition variable on the monotonic clock, for backoff waits. */
static int sync_init(struct http_sink *h)
{
	pthread_condattr_t attr;
	int err;

	err = pthread_condattr_init(&attr);
	if (err)
		return -err;
	err = pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
	if (!err)
		err = pthread_cond_init(&h->cond, &attr);
	pthread_condattr_destroy(&attr);
	if (err)
		return -err;
	err = pthread_mutex_init(&h->lock, NULL);
	if (err) {
		pthread_cond_destroy(&h->cond);
		return -err;
	}
	return 0;
}

/* Whether HOST (as curl gives it: IPv6 in brackets) is this machine's loopback. */
static bool host_is_loopback(const char *host)
{
	struct in6_addr a6;
	struct in_addr a4;
	char v6[INET6_ADDRSTRLEN + 2];
	size_t n = strlen(host);

	if (!strcasecmp(host, "localhost"))
		return true;
	if (inet_pton(AF_INET, host, &a4) == 1)
		return (ntohl(a4.s_addr) >> 24) == 127;
	if (host[0] == '[' && n > 2 && n - 2 < sizeof(v6)) {
		memcpy(v6, host + 1, n - 2);
		v6[n - 2] = '\0';
		return inet_pton(AF_INET6, v6, &a6) == 1 && IN6_IS_ADDR_LOOPBACK(&a6);
	}
	return false;
}

/*
 * Spans carry paths, addresses and the API key header: over plain http they can be read on the
 * way to a collector on another host. Said once, at start; loopback is left alone.
 */
static void warn_if_cleartext(const char *url, const char *noun)
{
	char *scheme = NULL, *host = NULL;
	CURLU *u = curl_url();

	if (!u)
		return;
	if (curl_url_set(u, CURLUPART_URL, url, 0) == CURLUE_OK &&
	    curl_url_get(u, CURLUPART_SCHEME, &scheme, 0) == CURLUE_OK &&
	    curl_url_get(u, CURLUPART_HOST, &host, 0) == CURLUE_OK &&
	    !strcasecmp(scheme, "http") && !host_is_loopback(host))
		pr_warn("%s go to '%s' unencrypted (http://, not this host): use https:// "
			"unless the network between is trusted",
			noun, url);
	curl_free(host);
	curl_free(scheme);
	curl_url_cleanup(u);
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
	if (!opts->url || opts->timeout_ms <= 0 || opts->backoff_ms < 0) {
		errno = EINVAL;
		return NULL;
	}
	h = calloc(1, sizeof(*h));
	if (!h)
		return NULL;
	err = sync_init(h);
	if (err) {
		free(h);
		errno = -err;
		return NULL;
	}
	h->timeout_ms = opts->timeout_ms;
	h->batch_timeout_ms = opts->batch_timeout_ms > 0 ? opts->batch_timeout_ms : opts->timeout_ms;
	h->backoff_ms = opts->backoff_ms ? opts->backoff_ms : BACKOFF_DEFAULT_MS;
	h->gzip = opts->gzip;
	h->metrics = opts->metrics;
	h->noun = opts->metrics ? "metric points" : "spans";
	h->seed = (unsigned int)now_ms() ^ (unsigned int)(uintptr_t)h;
	err = -ENOMEM;
	h->url = strdup(opts->url);
	h->shown = config__printable_url(opts->url);
	if (!h->url || !h->shown)
		goto cleanup;
	h->curl = curl_easy_init();
	if (!h->curl) {
		pr_err("cannot create an HTTP client for '%s': curl_easy_init failed", h->shown);
		goto cleanup;
	}
	err = build_headers(h, opts);
	if (err)
		goto cleanup;
	warn_if_cleartext(h->shown, h->noun);

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
	if (opts->ca_file)
		SETOPT(CURLOPT_CAINFO, opts->ca_file);
	if (opts->client_cert)
		SETOPT(CURLOPT_SSLCERT, opts->client_cert);
	if (opts->client_key)
		SETOPT(CURLOPT_SSLKEY, opts->client_key);
#undef SETOPT
	return h;

setopt_failed:
	pr_err("cannot set up the HTTP client for '%s': %s: %s", h->shown, what,
	       curl_easy_strerror(rc));
	err = -EINVAL;
cleanup:
	http_sink_free(h);
	errno = -err;
	return NULL;
}

/* The first LEN bytes of S made printable and terminated: control bytes and non-ASCII as '?'. */
static void printable(char *s, size_t len)
{
	size_t i;

	for (i = 0; i < len; i++)
		if (!isprint((unsigned char)s[i]))
			s[i] = '?';
	s[len] = '\0';
}

/* BUF gzip-compressed into a new buffer (RFC 1952), for Content-Encoding: gzip. */
static int gzip_body(const uint8_t *buf, size_t len, uint8_t **out, size_t *out_len)
{
	z_stream zs = {};
	uint8_t *z = NULL;
	uLong cap;
	int zrc, err = -ENOMEM;

	if (len > UINT_MAX)
		return -EFBIG;
	/* 15 + 16: the largest window, with a gzip header and trailer instead of zlib's. */
	zrc = deflateInit2(&zs, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY);
	if (zrc != Z_OK)
		return zrc == Z_MEM_ERROR ? -ENOMEM : -EINVAL;
	cap = deflateBound(&zs, len);
	if (cap > UINT_MAX) {
		err = -EFBIG;
		goto cleanup;
	}
	z = malloc(cap);
	if (!z)
		goto cleanup;
	zs.next_in = (Bytef *)buf;
	zs.avail_in = (uInt)len;
	zs.next_out = z;
	zs.avail_out = (uInt)cap;
	/* deflateBound is enough for one Z_FINISH call: anything else is a zlib failure. */
	zrc = deflate(&zs, Z_FINISH);
	if (zrc != Z_STREAM_END) {
		err = -EIO;
		goto cleanup;
	}
	*out = z;
	*out_len = zs.total_out;
	z = NULL;
	err = 0;
cleanup:
	deflateEnd(&zs);
	free(z);
	return err;
}

/* Connection-level failures worth another try; anything else (TLS setup, bad URL) is not. */
static bool curl_retryable(CURLcode rc)
{
	switch (rc) {
	case CURLE_COULDNT_RESOLVE_HOST:
	case CURLE_COULDNT_CONNECT:
	case CURLE_OPERATION_TIMEDOUT:
	case CURLE_SEND_ERROR:
	case CURLE_RECV_ERROR:
	case CURLE_GOT_NOTHING:
		return true;
	default:
		return false;
	}
}

/* The statuses the OTLP/HTTP specification lists as retryable. */
static bool status_retryable(long status)
{
	return status == 429 || status == 502 || status == 503 || status == 504;
}

/*
 * Logs and counts a partial success: REJECTED of N spans refused, with the collector's MESSAGE
 * (the decoded response's memory, where configured header values are hidden).
 */
static void report_partial_success(struct http_sink *h, long long rejected, char *message,
				   size_t n)
{
	char msg[BODY_KEEP + 1];
	size_t mlen = message ? strlen(message) : 0;

	if (!rejected && !mlen)
		return;
	hide_secrets(h, message, mlen);
	if (mlen > BODY_KEEP)
		mlen = BODY_KEEP;
	memcpy(msg, message ? message : "", mlen);
	printable(msg, mlen);
	pr_warn("collector at '%s' rejected %lld of %zu %s%s%s", h->shown, rejected, n, h->noun,
		mlen ? ": " : "", msg);
	if (rejected > 0) {
		pthread_mutex_lock(&h->lock);
		h->rejected += (uint64_t)rejected;
		pthread_mutex_unlock(&h->lock);
	}
}

/* An ExportMetricsServiceResponse in protobuf. */
static void check_partial_success_metrics(struct http_sink *h, const uint8_t *body, size_t len,
					  size_t n)
{
	Opentelemetry__Proto__Collector__Metrics__V1__ExportMetricsServiceResponse *resp;
	Opentelemetry__Proto__Collector__Metrics__V1__ExportMetricsPartialSuccess *ps;

	resp = opentelemetry__proto__collector__metrics__v1__export_metrics_service_response__unpack(
		NULL, len, body);
	if (!resp) {
		pr_debug("response from '%s' is not an ExportMetricsServiceResponse", h->shown);
		return;
	}
	ps = resp->partial_success;
	if (ps)
		report_partial_success(h, (long long)ps->rejected_data_points, ps->error_message, n);
	opentelemetry__proto__collector__metrics__v1__export_metrics_service_response__free_unpacked(
		resp, NULL);
}

/* An ExportTraceServiceResponse in protobuf. */
static void check_partial_success_pb(struct http_sink *h, const uint8_t *body, size_t len, size_t n)
{
	Opentelemetry__Proto__Collector__Trace__V1__ExportTraceServiceResponse *resp;
	Opentelemetry__Proto__Collector__Trace__V1__ExportTracePartialSuccess *ps;

	if (h->metrics) {
		check_partial_success_metrics(h, body, len, n);
		return;
	}
	resp = opentelemetry__proto__collector__trace__v1__export_trace_service_response__unpack(
		NULL, len, body);
	if (!resp) {
		pr_debug("response from '%s' is not an ExportTraceServiceResponse", h->shown);
		return;
	}
	ps = resp->partial_success;
	if (ps)
		report_partial_success(h, (long long)ps->rejected_spans, ps->error_message, n);
	opentelemetry__proto__collector__trace__v1__export_trace_service_response__free_unpacked(
		resp, NULL);
}

/*
 * The same in OTLP/JSON: {"partialSuccess": {"rejectedSpans": "2", "errorMessage": "..."}}
 * (rejectedDataPoints for metrics).
 * The JSON mapping writes 64-bit integers as strings, but numbers are accepted too.
 */
static void check_partial_success_json(struct http_sink *h, const uint8_t *body, size_t len,
				       size_t n)
{
	const cJSON *ps, *rej, *msg;
	long long rejected = 0;
	cJSON *resp;
	char *end;

	resp = cJSON_ParseWithLength((const char *)body, len);
	if (!resp) {
		pr_debug("response from '%s' is not JSON", h->shown);
		return;
	}
	ps = cJSON_GetObjectItemCaseSensitive(resp, "partialSuccess");
	if (cJSON_IsObject(ps)) {
		rej = cJSON_GetObjectItemCaseSensitive(ps, h->metrics ? "rejectedDataPoints" :
									      "rejectedSpans");
		msg = cJSON_GetObjectItemCaseSensitive(ps, "errorMessage");
		if (cJSON_IsNumber(rej)) {
			/* Out of range or NaN: no count, as for a string (converting is UB). */
			if (rej->valuedouble >= -0x1p63 && rej->valuedouble < 0x1p63)
				rejected = (long long)rej->valuedouble;
		} else if (cJSON_IsString(rej)) {
			errno = 0;
			rejected = strtoll(rej->valuestring, &end, 10);
			if (errno || *end || end == rej->valuestring)
				rejected = 0;
		}
		report_partial_success(h, rejected, cJSON_IsString(msg) ? msg->valuestring : NULL,
				       n);
	}
	cJSON_Delete(resp);
}

/*
 * Logs a partial success (some spans refused) from a 2xx body. A body that does not decode is
 * not an error: the spans were accepted, and some receivers answer with nothing at all.
 */
static void check_partial_success(struct http_sink *h, const uint8_t *body, size_t len, size_t n)
{
	if (!len)
		return;
	if (h->body_cut) {
		pr_debug("response from '%s' longer than %d bytes: not decoded", h->shown, BODY_MAX);
		return;
	}
	if (h->json)
		check_partial_success_json(h, body, len, n);
	else
		check_partial_success_pb(h, body, len, n);
}

uint64_t http_sink__parse_response(const void *body, size_t len, bool json, size_t n)
{
	struct http_sink *h = calloc(1, sizeof(*h));
	uint64_t rejected = 0;

	if (!h)
		return 0;
	h->shown = strdup("(response)");
	h->noun = "spans";
	if (h->shown && !pthread_mutex_init(&h->lock, NULL)) {
		h->json = json;
		h->body_cut = len > BODY_MAX; /* what on_body() would have kept */
		check_partial_success(h, body, len, n);
		rejected = h->rejected;
		pthread_mutex_destroy(&h->lock);
	}
	free(h->shown);
	free(h);
	return rejected;
}

/*
 * Sends BODY once with at most BUDGET_MS to spend. On ATTEMPT_RETRY, *RETRY_AFTER_MS is the
 * server's Retry-After, or -1 when it gave none; WHY says what went wrong, for the log.
 */
static enum attempt post_once(struct http_sink *h, const uint8_t *body, size_t len, size_t n,
			      long long budget_ms, long long *retry_after_ms, char *why,
			      size_t why_len)
{
	curl_off_t retry_after = 0;
	long status = 0, connect_ms;
	size_t shown;
	CURLcode rc;

	*retry_after_ms = -1;
	h->body_len = 0;
	h->body_cut = false;
	h->errbuf[0] = '\0';
	connect_ms = budget_ms < CONNECT_TIMEOUT_MAX_MS ? (long)budget_ms : CONNECT_TIMEOUT_MAX_MS;
	rc = curl_easy_setopt(h->curl, CURLOPT_POSTFIELDS, body);
	if (rc == CURLE_OK)
		rc = curl_easy_setopt(h->curl, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)len);
	if (rc == CURLE_OK)
		rc = curl_easy_setopt(h->curl, CURLOPT_TIMEOUT_MS, (long)budget_ms);
	if (rc == CURLE_OK)
		rc = curl_easy_setopt(h->curl, CURLOPT_CONNECTTIMEOUT_MS, connect_ms);
	if (rc != CURLE_OK) {
		snprintf(why, why_len, "%s", curl_easy_strerror(rc));
		snprintf(h->kind, sizeof(h->kind), "curl %d", (int)rc);
		return ATTEMPT_FAIL;
	}
	rc = curl_easy_perform(h->curl);
	if (rc != CURLE_OK) {
		snprintf(why, why_len, "%s", h->errbuf[0] ? h->errbuf : curl_easy_strerror(rc));
		snprintf(h->kind, sizeof(h->kind), "curl %d", (int)rc);
		return curl_retryable(rc) ? ATTEMPT_RETRY : ATTEMPT_FAIL;
	}
	rc = curl_easy_getinfo(h->curl, CURLINFO_RESPONSE_CODE, &status);
	if (rc != CURLE_OK) {
		snprintf(why, why_len, "no response code: %s", curl_easy_strerror(rc));
		snprintf(h->kind, sizeof(h->kind), "curl %d", (int)rc);
		return ATTEMPT_FAIL;
	}
	if (status >= 200 && status <= 299) {
		check_partial_success(h, h->body, h->body_len, n);
		return ATTEMPT_OK;
	}
	hide_secrets(h, (char *)h->body, h->body_len);
	shown = h->body_len < BODY_KEEP ? h->body_len : BODY_KEEP;
	printable((char *)h->body, shown);
	snprintf(why, why_len, "HTTP %ld%s%.*s", status, shown ? ": " : "", (int)shown,
		 (char *)h->body);
	snprintf(h->kind, sizeof(h->kind), "HTTP %ld", status);
	if (!status_retryable(status))
		return ATTEMPT_FAIL;
	/* Delta-seconds or an HTTP date, both turned into seconds from now by libcurl. */
	rc = curl_easy_getinfo(h->curl, CURLINFO_RETRY_AFTER, &retry_after);
	if (rc == CURLE_OK && retry_after > 0)
		*retry_after_ms = retry_after > LLONG_MAX / 1000 ? LLONG_MAX : retry_after * 1000LL;
	return ATTEMPT_RETRY;
}

/* The wait before retry number ATTEMPT (0 first): doubling, capped, then jittered to 50-100 %. */
static long long backoff_ms(struct http_sink *h, unsigned int attempt)
{
	long long d = h->backoff_ms;

	while (attempt-- && d < BACKOFF_MAX_MS)
		d *= 2;
	if (d > BACKOFF_MAX_MS)
		d = BACKOFF_MAX_MS;
	/* Many exporters that lost the same collector must not come back in step. */
	return d / 2 + rand_r(&h->seed) % (d / 2 + 1);
}

/* Sleeps until UNTIL_MS (monotonic); false as soon as the sink is stopped. */
static bool sleep_until(struct http_sink *h, long long until_ms)
{
	struct timespec ts = { .tv_sec = until_ms / 1000, .tv_nsec = until_ms % 1000 * 1000000 };
	bool stopped;

	pthread_mutex_lock(&h->lock);
	while (!h->stopping && now_ms() < until_ms)
		if (pthread_cond_timedwait(&h->cond, &h->lock, &ts) == ETIMEDOUT)
			break;
	stopped = h->stopping;
	pthread_mutex_unlock(&h->lock);
	return !stopped;
}

/* BUF (LEN bytes), gzipped when configured: *BODY is BUF, or *ZBUF made here. */
static int maybe_gzip(struct http_sink *h, uint8_t *buf, size_t len, uint8_t **zbuf,
		      uint8_t **body, size_t *blen)
{
	size_t zlen;
	int err;

	*body = buf;
	*blen = len;
	if (!h->gzip)
		return 0;
	err = gzip_body(buf, len, zbuf, &zlen);
	if (err) {
		pr_err("cannot gzip %zu bytes of OTLP for '%s': %s", len, h->shown, strerror(-err));
		return err;
	}
	*body = *zbuf;
	*blen = zlen;
	return 0;
}

static bool sink_stopping(struct http_sink *h, long long *stop_deadline_ms)
{
	bool stopping;

	pthread_mutex_lock(&h->lock);
	stopping = h->stopping;
	*stop_deadline_ms = h->stop_deadline_ms;
	pthread_mutex_unlock(&h->lock);
	return stopping;
}

static void count_retry(struct http_sink *h)
{
	pthread_mutex_lock(&h->lock);
	h->retries++;
	pthread_mutex_unlock(&h->lock);
}

/*
 * A metrics endpoint failing as it did the last time (the same kind of failure, h->kind: a
 * backend that takes no metrics, one that is down) is said once, then at debug level: the summary
 * counts every failure.
 */
static void say_failure(struct http_sink *h, enum log_level level, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void say_failure(struct http_sink *h, enum log_level level, const char *fmt, ...)
{
	va_list ap;

	if (h->metrics && !strcmp(h->kind, h->said))
		level = LOG_DEBUG;
	else if (h->metrics)
		memcpy(h->said, h->kind, sizeof(h->said));
	va_start(ap, fmt);
	log_vmsg(level, fmt, ap);
	va_end(ap);
}

/*
 * Sends BODY (BLEN bytes, N spans or points) with the retry rules: 0, -EAGAIN when a transient
 * failure outlasted the batch timeout, or another negative errno when it was refused for good.
 */
static int post(struct http_sink *h, const uint8_t *body, size_t blen, size_t n)
{
	long long deadline, stop_deadline, wait, left;
	char why[BODY_KEEP + 64] = "not sent before the shutdown deadline";
	enum attempt res;
	bool stopping;

	/*
	 * After a transient failure the processor calls again with the same batch: wait out the
	 * backoff (or Retry-After) the last call chose, unless shutting down.
	 */
	if (h->streak) {
		if (h->next_ms > now_ms())
			sleep_until(h, h->next_ms);
		count_retry(h);
	}
	snprintf(h->kind, sizeof(h->kind), "deadline");
	deadline = now_ms() + h->batch_timeout_ms;
	stopping = sink_stopping(h, &stop_deadline);
	if (stopping && stop_deadline < deadline)
		deadline = stop_deadline;

	for (;;) {
		left = deadline - now_ms();
		if (left <= 0) {
			say_failure(h, LOG_ERROR,
				    "export to '%s' failed: %s; no time left before shutdown",
				    h->shown, why);
			return -EAGAIN;
		}
		res = post_once(h, body, blen, n, left < h->timeout_ms ? left : h->timeout_ms, &wait,
				why, sizeof(why));
		if (res == ATTEMPT_OK) {
			pr_debug("exported %zu %s (%zu bytes) to '%s'", n, h->noun, blen, h->shown);
			if (h->streak || h->said[0])
				pr_info("export to '%s' works again", h->shown);
			h->streak = 0;
			h->said[0] = '\0';
			return 0;
		}
		if (res == ATTEMPT_FAIL) {
			say_failure(h, LOG_ERROR, "export to '%s' failed: %s; %zu %s dropped",
				    h->shown, why, n, h->noun);
			h->streak = 0;
			return -EIO;
		}
		if (wait < 0)
			wait = backoff_ms(h, h->streak);
		h->streak++;
		h->next_ms = now_ms() + wait;
		if (sink_stopping(h, &stop_deadline)) {
			say_failure(h, LOG_ERROR,
				    "export to '%s' failed: %s; not retried: shutting down",
				    h->shown, why);
			return -EAGAIN;
		}
		if (h->next_ms >= deadline) {
			/* Spans are not lost: the processor keeps the batch and calls again. */
			say_failure(h, LOG_WARN, "export to '%s' failed: %s; %zu %s %s", h->shown,
				    why, n, h->noun,
				    h->metrics ? "not sent, the next export carries their totals" :
						 "kept queued, retrying");
			return -EAGAIN;
		}
		say_failure(h, LOG_WARN, "export to '%s' failed: %s; retrying in %lld ms", h->shown,
			    why, wait);
		if (!sleep_until(h, h->next_ms)) {
			say_failure(h, LOG_ERROR,
				    "export to '%s' failed: %s; not retried: shutting down",
				    h->shown, why);
			return -EAGAIN;
		}
		count_retry(h);
	}
}

/*
 * Sends what an encoder made of N spans or points: BUF (LEN bytes, freed here), gzipped when
 * configured; ERR, the encoder's, is said and returned without sending.
 */
static int send_encoded(struct http_sink *h, int err, uint8_t *buf, size_t len, size_t n)
{
	uint8_t *zbuf = NULL, *body;
	size_t blen;

	if (err)
		pr_err("cannot encode %zu %s as OTLP: %s", n, h->noun, strerror(-err));
	else
		err = maybe_gzip(h, buf, len, &zbuf, &body, &blen);
	if (!err)
		err = post(h, body, blen, n);
	/* The handle keeps the pointer; it is replaced before the next perform. */
	free(zbuf);
	free(buf);
	return err;
}

static int http_export(void *ctx, struct span *const *spans, size_t n)
{
	struct http_sink *h = ctx;
	uint8_t *buf = NULL;
	size_t len = 0;
	int err;

	err = h->json ? otlp__encode_json(spans, n, (char **)&buf, &len) :
			otlp__encode(spans, n, &buf, &len);
	return send_encoded(h, err, buf, len, n);
}

static int http_export_metrics(void *ctx, const struct metrics_batch *b)
{
	struct http_sink *h = ctx;
	uint8_t *buf = NULL;
	size_t len = 0;
	int err;

	err = h->json ? otlp__encode_metrics_json(b, (char **)&buf, &len) :
			otlp__encode_metrics(b, &buf, &len);
	return send_encoded(h, err, buf, len, b->n);
}

/* From exporter__shutdown: no more backoff waits, and one batch timeout for what is left. */
static void http_sink_stop(void *ctx)
{
	struct http_sink *h = ctx;

	pthread_mutex_lock(&h->lock);
	if (!h->stopping) {
		h->stopping = true;
		h->stop_deadline_ms = now_ms() + h->batch_timeout_ms;
	}
	pthread_cond_broadcast(&h->cond);
	pthread_mutex_unlock(&h->lock);
}

static void http_sink_stats(void *ctx, struct exporter_stats *out)
{
	struct http_sink *h = ctx;

	pthread_mutex_lock(&h->lock);
	out->retries += h->retries;
	out->rejected += h->rejected;
	pthread_mutex_unlock(&h->lock);
}

const struct sink_ops http_sink_ops = {
	.name = "otlp",
	.export = http_export,
	.export_metrics = http_export_metrics,
	.stop = http_sink_stop,
	.stats = http_sink_stats,
	.free = http_sink_free,
};
