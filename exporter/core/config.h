/* SPDX-License-Identifier: MIT */
/*
 * Settings from the command line and the OTEL_* environment, table-driven: each setting has one
 * typed parser, a default, and an error that names the variable and the value it refused.
 */
#ifndef GOSPAN_CONFIG_H
#define GOSPAN_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <sys/types.h>

#include "events.h"
#include "core/log.h"

#define CONFIG_MAX_SETTINGS 72
#define CONFIG_TLS_PATHS 9

/* OTEL_TRACES_SAMPLER's decision for spans without a parent to follow. */
enum root_sampler {
	ROOT_ALWAYS_ON = SAMPLER_ALWAYS_ON,
	ROOT_ALWAYS_OFF = SAMPLER_ALWAYS_OFF,
	ROOT_RATIO = SAMPLER_RATIO,
};

/* What data store spans keep of a query (GOSPAN_DB_QUERY_TEXT). */
enum db_query_text {
	DB_QUERY_TEXT_SANITIZED, /* literal values replaced by '?': the default */
	DB_QUERY_TEXT_RAW,	 /* as the service sent it */
	DB_QUERY_TEXT_NONE,	 /* no db.query.text at all */
};

/* One "key=value" of a list setting (OTEL_EXPORTER_OTLP_HEADERS, OTEL_RESOURCE_ATTRIBUTES). */
struct header_kv {
	char *key;
	char *value; /* secret material (API keys): never logged */
};

enum traces_exporter {
	TRACES_EXPORTER_OTLP,
	TRACES_EXPORTER_CONSOLE,
	TRACES_EXPORTER_NONE,
};

/* OTEL_METRICS_EXPORTER */
enum metrics_exporter {
	METRICS_EXPORTER_OTLP,
	METRICS_EXPORTER_PROMETHEUS,
	METRICS_EXPORTER_CONSOLE,
	METRICS_EXPORTER_NONE,
};

/* OTEL_EXPORTER_OTLP_METRICS_TEMPORALITY_PREFERENCE */
enum metrics_temporality {
	METRICS_TEMPORALITY_CUMULATIVE,
	METRICS_TEMPORALITY_DELTA,
	METRICS_TEMPORALITY_LOWMEMORY,
};

/* OTEL_METRICS_EXEMPLAR_FILTER */
enum exemplar_filter {
	EXEMPLAR_FILTER_TRACE_BASED,
	EXEMPLAR_FILTER_ALWAYS_ON,
	EXEMPLAR_FILTER_ALWAYS_OFF,
};

/*
 * Where one signal's OTLP exports go: the general OTEL_EXPORTER_OTLP_* settings, each overridden
 * by the signal's own (_TRACES_, _METRICS_) when that is set.
 */
struct otlp_dest {
	/* _ENDPOINT of the signal as given, or OTEL_EXPORTER_OTLP_ENDPOINT/v1/<signal> */
	char *url;
	/* _HEADERS, the signal's overriding the general ones by name */
	struct header_kv *headers;
	size_t nheaders;
	long timeout_ms; /* _TIMEOUT */
	bool gzip;	 /* _COMPRESSION=gzip */
	bool json;	 /* _PROTOCOL=http/json */
	/* _CERTIFICATE, _CLIENT_CERTIFICATE, _CLIENT_KEY, or NULL */
	char *ca_file;
	char *client_cert;
	char *client_key;
};

/* --pid and --exe may be repeated, up to this many targets in all. */
#define CONFIG_MAX_TARGETS 16

struct config {
	pid_t pids[CONFIG_MAX_TARGETS]; /* --pid / OTEL_GO_AUTO_TARGET_PID */
	size_t npids;
	char *exes[CONFIG_MAX_TARGETS]; /* --exe / OTEL_GO_AUTO_TARGET_EXE */
	size_t nexes;
	bool verbose;
	bool follow_goroutines; /* --follow-goroutines / GOSPAN_FOLLOW_GOROUTINES */
	char *functions_file;	/* --functions / GOSPAN_FUNCTIONS_FILE; NULL = none */
	bool cpu_time;		/* --cpu-time / GOSPAN_CPU_TIME */
	enum db_query_text db_query_text; /* --db-query-text / GOSPAN_DB_QUERY_TEXT */
	bool capture_message_key; /* --capture-message-key / GOSPAN_CAPTURE_MESSAGE_KEY */
	long max_pending_age_s; /* --max-pending-age / GOSPAN_MAX_PENDING_AGE; 0: never */
	bool sdk_disabled;	/* OTEL_SDK_DISABLED */
	enum root_sampler root_sampler; /* OTEL_TRACES_SAMPLER */
	bool parent_based;
	double sampler_ratio; /* OTEL_TRACES_SAMPLER_ARG */
	bool propagate;	      /* OTEL_PROPAGATORS=tracecontext: trace context in and out */
	bool help;
	bool version;

	char *service_name; /* OTEL_SERVICE_NAME; NULL = from the target */
	/* OTEL_RESOURCE_ATTRIBUTES, percent-decoded */
	struct header_kv *resource_attrs;
	size_t nresource_attrs;

	enum traces_exporter exporter; /* OTEL_TRACES_EXPORTER */
	struct otlp_dest traces;

	enum metrics_exporter metrics_exporter; /* OTEL_METRICS_EXPORTER */
	struct otlp_dest metrics;
	long metric_interval_ms; /* OTEL_METRIC_EXPORT_INTERVAL, default 60000 */
	long metric_timeout_ms;	 /* OTEL_METRIC_EXPORT_TIMEOUT, default 30000 */
	enum metrics_temporality temporality;
	enum exemplar_filter exemplar_filter;
	long metrics_cardinality; /* GOSPAN_METRICS_CARDINALITY_LIMIT, default 2000 */
	char *prometheus_host;	  /* OTEL_EXPORTER_PROMETHEUS_HOST, default localhost */
	long prometheus_port;	  /* OTEL_EXPORTER_PROMETHEUS_PORT, default 9464 */

	long bsp_schedule_delay_ms; /* OTEL_BSP_SCHEDULE_DELAY, default 5000 */
	long bsp_export_timeout_ms; /* OTEL_BSP_EXPORT_TIMEOUT, default 30000 */
	long bsp_max_queue;	    /* OTEL_BSP_MAX_QUEUE_SIZE, default 2048 */
	long bsp_max_batch;	    /* OTEL_BSP_MAX_EXPORT_BATCH_SIZE, default 512 */

	enum log_level log_level; /* OTEL_LOG_LEVEL, default info */

	/* Private to config.c: raw values as given, where they came from, and partial results. */
	const char *raw[CONFIG_MAX_SETTINGS];
	unsigned char source[CONFIG_MAX_SETTINGS];
	/* Per OTLP setting: [0] the general one, [1] _TRACES_, [2] _METRICS_. */
	char *endpoint_by[3];
	struct header_kv *headers_by[3];
	size_t nheaders_by[3];
	long timeout_by[3];
	bool gzip_by[3], json_by[3];
	char *tls_paths[CONFIG_TLS_PATHS]; /* per setting: general, traces, metrics, in enum order */
};

/*
 * Fills CFG from ARGV and ENVP (a NULL-terminated "NAME=value" array, like environ). 0 on
 * success; -EINVAL with a message naming the option or variable and the refused value.
 * Command-line options win over the environment. ARGV and ENVP must outlive CFG: the raw values
 * config__print_help shows point into them. On failure CFG is left zeroed.
 */
int config__parse(struct config *cfg, int argc, char **argv, char **envp);
void config__free(struct config *cfg);
/* Prints usage and every setting with its current value and where it came from. */
void config__print_help(const struct config *cfg, FILE *out);

/*
 * URL as messages may show it: any user info ("user:password@", which an OTLP endpoint may carry)
 * replaced by "REDACTED". A malloc'ed copy; NULL with errno on failure.
 */
char *config__printable_url(const char *url);

#endif
