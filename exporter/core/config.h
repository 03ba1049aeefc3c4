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

#define CONFIG_MAX_SETTINGS 48
#define CONFIG_TLS_PATHS 6

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
	/* OTEL_EXPORTER_OTLP_TRACES_ENDPOINT as given, or OTEL_EXPORTER_OTLP_ENDPOINT/v1/traces */
	char *traces_url;
	/* OTEL_EXPORTER_OTLP_HEADERS, with OTEL_EXPORTER_OTLP_TRACES_HEADERS overriding by name */
	struct header_kv *headers;
	size_t nheaders;
	long export_timeout_ms; /* OTEL_EXPORTER_OTLP_TRACES_TIMEOUT / OTEL_EXPORTER_OTLP_TIMEOUT */
	bool gzip; /* OTEL_EXPORTER_OTLP_[TRACES_]COMPRESSION=gzip */
	bool protocol_json; /* OTEL_EXPORTER_OTLP_[TRACES_]PROTOCOL=http/json */
	/* OTEL_EXPORTER_OTLP_[TRACES_]CERTIFICATE, _CLIENT_CERTIFICATE, _CLIENT_KEY, or NULL */
	char *ca_file;
	char *client_cert;
	char *client_key;

	long bsp_schedule_delay_ms; /* OTEL_BSP_SCHEDULE_DELAY, default 5000 */
	long bsp_export_timeout_ms; /* OTEL_BSP_EXPORT_TIMEOUT, default 30000 */
	long bsp_max_queue;	    /* OTEL_BSP_MAX_QUEUE_SIZE, default 2048 */
	long bsp_max_batch;	    /* OTEL_BSP_MAX_EXPORT_BATCH_SIZE, default 512 */

	enum log_level log_level; /* OTEL_LOG_LEVEL, default info */

	/* Private to config.c: raw values as given, where they came from, and partial results. */
	const char *raw[CONFIG_MAX_SETTINGS];
	unsigned char source[CONFIG_MAX_SETTINGS];
	char *otlp_endpoint;
	char *otlp_traces_endpoint;
	struct header_kv *base_headers;
	size_t nbase_headers;
	struct header_kv *traces_headers;
	size_t ntraces_headers;
	long base_timeout_ms;
	long traces_timeout_ms;
	bool base_gzip, traces_gzip;
	char *tls_paths[CONFIG_TLS_PATHS]; /* per setting, general then traces, in enum order */
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
