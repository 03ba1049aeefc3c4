// SPDX-License-Identifier: MIT
/*
 * Settings, table-driven. Each row names a variable and/or option, its default and one typed
 * parser; values apply in the order defaults, environment, command line, so the later source
 * wins. A refused value stops gospan at start with a message naming the setting and the value:
 * a typo found then is one clear line, found later it is a failed export every few seconds.
 */
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "core/config.h"
#include "core/log.h"
#include "core/trusted_file.h"

/* A CA bundle is a few hundred KiB (Mozilla's: about 200); a certificate or a key, a few KiB. */
#define TLS_FILE_MAX_SIZE (4 << 20)

enum source {
	SRC_DEFAULT,
	SRC_ENV,
	SRC_CLI,
};

static const char *const source_names[] = { "default", "environment", "command line" };

enum setting_id {
	S_PID,
	S_EXE,
	S_VERBOSE,
	S_FOLLOW_GOROUTINES,
	S_FUNCTIONS,
	S_CPU_TIME,
	S_DB_QUERY_TEXT,
	S_CAPTURE_MESSAGE_KEY,
	S_MAX_PENDING_AGE,
	S_HELP,
	S_VERSION,
	S_SERVICE_NAME,
	S_RESOURCE_ATTRS,
	S_TRACES_EXPORTER,
	S_ENDPOINT,
	S_TRACES_ENDPOINT,
	S_METRICS_ENDPOINT,
	S_PROTOCOL,
	S_TRACES_PROTOCOL,
	S_METRICS_PROTOCOL,
	S_HEADERS,
	S_TRACES_HEADERS,
	S_METRICS_HEADERS,
	S_TIMEOUT,
	S_TRACES_TIMEOUT,
	S_METRICS_TIMEOUT,
	S_BSP_DELAY,
	S_BSP_EXPORT_TIMEOUT,
	S_BSP_QUEUE,
	S_BSP_BATCH,
	S_LOG_LEVEL,
	S_SAMPLER,
	S_SAMPLER_ARG,
	S_PROPAGATORS,
	S_SDK_DISABLED,
	S_COMPRESSION,
	S_TRACES_COMPRESSION,
	S_METRICS_COMPRESSION,
	S_CERTIFICATE,
	S_TRACES_CERTIFICATE,
	S_METRICS_CERTIFICATE,
	S_CLIENT_CERT,
	S_TRACES_CLIENT_CERT,
	S_METRICS_CLIENT_CERT,
	S_CLIENT_KEY,
	S_TRACES_CLIENT_KEY,
	S_METRICS_CLIENT_KEY,
	S_INSECURE,
	S_TRACES_INSECURE,
	S_METRICS_INSECURE,
	S_METRICS_EXPORTER,
	S_METRIC_INTERVAL,
	S_METRIC_TIMEOUT,
	S_TEMPORALITY,
	S_EXEMPLAR_FILTER,
	S_CARDINALITY,
	S_PROMETHEUS_HOST,
	S_PROMETHEUS_PORT,
	S__COUNT,
};

_Static_assert(S__COUNT <= CONFIG_MAX_SETTINGS, "raise CONFIG_MAX_SETTINGS");
_Static_assert(S_METRICS_CLIENT_KEY - S_CERTIFICATE + 1 == CONFIG_TLS_PATHS,
	       "one tls_paths slot per TLS file setting");
/* Each general OTLP setting is followed by its _TRACES_ and its _METRICS_ override. */

/* NAME is how the value was given ("--pid", "OTEL_BSP_SCHEDULE_DELAY"), for messages. */
typedef int (*parse_fn)(struct config *cfg, enum setting_id id, const char *name, const char *val);

struct setting {
	const char *env; /* variable, or NULL */
	const char *opt; /* long option without "--", or NULL */
	char short_opt;	 /* one-letter alias, or 0 */
	const char *def; /* default as text, or NULL for unset */
	const char *help;
	parse_fn parse;
	bool secret; /* value never printed */
	bool flag;   /* option takes no value */
};

static int parse_pid(struct config *cfg, enum setting_id id, const char *name, const char *val);
static int parse_exe(struct config *cfg, enum setting_id id, const char *name, const char *val);
static int parse_functions(struct config *cfg, enum setting_id id, const char *name,
			   const char *val);
static int parse_flag(struct config *cfg, enum setting_id id, const char *name, const char *val);
static int parse_bool(struct config *cfg, enum setting_id id, const char *name, const char *val);
static int parse_compression(struct config *cfg, enum setting_id id, const char *name,
			     const char *val);
static int parse_file(struct config *cfg, enum setting_id id, const char *name, const char *val);
static int parse_sampler(struct config *cfg, enum setting_id id, const char *name, const char *val);
static int parse_ratio(struct config *cfg, enum setting_id id, const char *name, const char *val);
static int parse_propagators(struct config *cfg, enum setting_id id, const char *name,
			     const char *val);
static int parse_service(struct config *cfg, enum setting_id id, const char *name,
			 const char *val);
static int parse_res_attrs(struct config *cfg, enum setting_id id, const char *name,
			   const char *val);
static int parse_db_query_text(struct config *cfg, enum setting_id id, const char *name,
			       const char *val);
static int parse_exporter(struct config *cfg, enum setting_id id, const char *name,
			  const char *val);
static int parse_pending_age(struct config *cfg, enum setting_id id, const char *name,
			     const char *val);
static int parse_endpoint(struct config *cfg, enum setting_id id, const char *name,
			  const char *val);
static int parse_protocol(struct config *cfg, enum setting_id id, const char *name,
			  const char *val);
static int parse_headers(struct config *cfg, enum setting_id id, const char *name,
			 const char *val);
static int parse_ms(struct config *cfg, enum setting_id id, const char *name, const char *val);
static int parse_count(struct config *cfg, enum setting_id id, const char *name, const char *val);
static int parse_log_level(struct config *cfg, enum setting_id id, const char *name,
			   const char *val);
static int parse_metrics_choice(struct config *cfg, enum setting_id id, const char *name,
				const char *val);
static int parse_host(struct config *cfg, enum setting_id id, const char *name, const char *val);

static const struct setting settings[S__COUNT] = {
	[S_PID] = { .env = "OTEL_GO_AUTO_TARGET_PID", .opt = "pid",
		    .help = "process to trace; repeat --pid or --exe to trace several",
		    .parse = parse_pid },
	[S_EXE] = { .env = "OTEL_GO_AUTO_TARGET_EXE", .opt = "exe",
		    .help = "executable to trace: every process running it, waiting for the first; "
			    "a path that is not in gospan's mount namespace is looked for as the "
			    "processes see it (in a container)",
		    .parse = parse_exe },
	[S_VERBOSE] = { .opt = "verbose", .short_opt = 'v', .help = "status line every 10 s; with the console exporter, every span's full line too",
			.parse = parse_flag, .flag = true },
	[S_FOLLOW_GOROUTINES] = { .env = "GOSPAN_FOLLOW_GOROUTINES", .opt = "follow-goroutines",
				  .def = "false",
				  .help = "hand spans down goroutine generations (up to 8) by probing "
					  "runtime.newproc1: one more probe hit per goroutine started; "
					  "without it a goroutine inherits only from the one that started it",
				  .parse = parse_bool, .flag = true },
	[S_FUNCTIONS] = { .env = "GOSPAN_FUNCTIONS_FILE", .opt = "functions",
			  .help = "JSON file listing functions to trace as spans, with arguments to "
				  "record (docs/functions.md)",
			  .parse = parse_functions },
	[S_CPU_TIME] = { .env = "GOSPAN_CPU_TIME", .opt = "cpu-time", .def = "false",
			 .help = "add each span's on-CPU time (gospan.cpu_time_ns) by probing "
				 "runtime.execute and runtime.schedule: two emulated probe hits per "
				 "goroutine switch",
			 .parse = parse_bool, .flag = true },
	[S_DB_QUERY_TEXT] = { .env = "GOSPAN_DB_QUERY_TEXT", .opt = "db-query-text",
			      .def = "sanitized",
			      .help = "what data store spans keep of a query in db.query.text: "
				      "sanitized (every literal value replaced by ?), raw (as sent, "
				      "secrets included) or none",
			      .parse = parse_db_query_text },
	[S_CAPTURE_MESSAGE_KEY] = { .env = "GOSPAN_CAPTURE_MESSAGE_KEY",
				    .opt = "capture-message-key", .def = "false",
				    .help = "put a Kafka message's key (its first 64 bytes) in "
					    "messaging.kafka.message.key: keys can be user ids or "
					    "other personal data",
				    .parse = parse_bool, .flag = true },
	[S_MAX_PENDING_AGE] = { .env = "GOSPAN_MAX_PENDING_AGE", .opt = "max-pending-age",
				.def = "600", .parse = parse_pending_age,
				.help = "seconds a call may stay open, unless its probes still hold "
					"it, before its end counts as lost (end_lost); 0: never" },
	[S_HELP] = { .opt = "help", .short_opt = 'h', .help = "this help", .parse = parse_flag,
		     .flag = true },
	[S_VERSION] = { .opt = "version", .help = "print the version", .parse = parse_flag,
			.flag = true },
	[S_SERVICE_NAME] = { .env = "OTEL_SERVICE_NAME",
			     .help = "service.name (default: the target's OTEL_SERVICE_NAME, else "
				     "its executable name)",
			     .parse = parse_service },
	[S_RESOURCE_ATTRS] = { .env = "OTEL_RESOURCE_ATTRIBUTES",
			       .help = "extra resource attributes, key=value,... (values "
				       "percent-decoded)",
			       .parse = parse_res_attrs },
	[S_TRACES_EXPORTER] = { .env = "OTEL_TRACES_EXPORTER", .def = "otlp",
				.help = "otlp, console or none", .parse = parse_exporter },
	[S_ENDPOINT] = { .env = "OTEL_EXPORTER_OTLP_ENDPOINT", .def = "http://localhost:4318",
			 .help = "OTLP/HTTP base URL; traces go to <base>/v1/traces, metrics to "
				 "<base>/v1/metrics",
			 .parse = parse_endpoint },
	[S_TRACES_ENDPOINT] = { .env = "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
				.help = "full traces URL, used as given", .parse = parse_endpoint },
	[S_METRICS_ENDPOINT] = { .env = "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT",
				 .help = "full metrics URL, used as given", .parse = parse_endpoint },
	[S_PROTOCOL] = { .env = "OTEL_EXPORTER_OTLP_PROTOCOL", .def = "http/protobuf",
			 .help = "http/protobuf or http/json (gRPC is not supported)", .parse = parse_protocol },
	[S_TRACES_PROTOCOL] = { .env = "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL",
				.help = "http/protobuf or http/json; overrides the above",
				.parse = parse_protocol },
	[S_METRICS_PROTOCOL] = { .env = "OTEL_EXPORTER_OTLP_METRICS_PROTOCOL",
				 .help = "http/protobuf or http/json for metrics; overrides "
					 "OTEL_EXPORTER_OTLP_PROTOCOL",
				 .parse = parse_protocol },
	[S_HEADERS] = { .env = "OTEL_EXPORTER_OTLP_HEADERS",
			.help = "request headers, key=value,... (values percent-decoded)",
			.parse = parse_headers, .secret = true },
	[S_TRACES_HEADERS] = { .env = "OTEL_EXPORTER_OTLP_TRACES_HEADERS",
			       .help = "traces request headers; override the above by name",
			       .parse = parse_headers, .secret = true },
	[S_METRICS_HEADERS] = { .env = "OTEL_EXPORTER_OTLP_METRICS_HEADERS",
				.help = "metrics request headers; override OTEL_EXPORTER_OTLP_HEADERS "
					"by name",
				.parse = parse_headers, .secret = true },
	[S_TIMEOUT] = { .env = "OTEL_EXPORTER_OTLP_TIMEOUT", .def = "10000",
			.help = "timeout of each export request (connect, send, answer), ms",
			.parse = parse_ms },
	[S_TRACES_TIMEOUT] = { .env = "OTEL_EXPORTER_OTLP_TRACES_TIMEOUT",
			       .help = "traces request timeout, ms; overrides the above",
			       .parse = parse_ms },
	[S_METRICS_TIMEOUT] = { .env = "OTEL_EXPORTER_OTLP_METRICS_TIMEOUT",
				.help = "metrics request timeout, ms; overrides "
					"OTEL_EXPORTER_OTLP_TIMEOUT",
				.parse = parse_ms },
	[S_BSP_DELAY] = { .env = "OTEL_BSP_SCHEDULE_DELAY", .def = "5000",
			  .help = "longest wait before queued spans are sent, ms",
			  .parse = parse_ms },
	[S_BSP_EXPORT_TIMEOUT] = { .env = "OTEL_BSP_EXPORT_TIMEOUT", .def = "30000",
				   .help = "time one batch may spend on requests and retries, ms; "
					   "after a transient failure it stays queued and is sent "
					   "again later, and at exit what is queued gets this long",
				   .parse = parse_ms },
	[S_BSP_QUEUE] = { .env = "OTEL_BSP_MAX_QUEUE_SIZE", .def = "2048",
			  .help = "spans queued for export at most; beyond, spans are dropped "
				  "and counted",
			  .parse = parse_count },
	[S_BSP_BATCH] = { .env = "OTEL_BSP_MAX_EXPORT_BATCH_SIZE", .def = "512",
			  .help = "spans per export request at most", .parse = parse_count },
	[S_LOG_LEVEL] = { .env = "OTEL_LOG_LEVEL", .def = "info",
			  .help = "error, warn, info or debug", .parse = parse_log_level },
	[S_PROPAGATORS] = { .env = "OTEL_PROPAGATORS", .def = "tracecontext",
			    .help = "tracecontext: W3C traceparent and tracestate are read from "
				    "incoming requests and added to outgoing HTTP/1 requests (at "
				    "the socket layer); none: neither",
			    .parse = parse_propagators },
	[S_SAMPLER] = { .env = "OTEL_TRACES_SAMPLER", .def = "parentbased_always_on",
			.help = "always_on, always_off, traceidratio, parentbased_always_on, "
				"parentbased_always_off or parentbased_traceidratio",
			.parse = parse_sampler },
	[S_SAMPLER_ARG] = { .env = "OTEL_TRACES_SAMPLER_ARG", .def = "1.0",
			    .help = "the ratio of traces kept by the traceidratio samplers, 0 to 1",
			    .parse = parse_ratio },
	[S_SDK_DISABLED] = { .env = "OTEL_SDK_DISABLED", .def = "false",
			     .help = "true: gospan traces nothing and exits at once",
			     .parse = parse_bool },
	[S_COMPRESSION] = { .env = "OTEL_EXPORTER_OTLP_COMPRESSION", .def = "none",
			    .help = "request body compression: gzip or none",
			    .parse = parse_compression },
	[S_TRACES_COMPRESSION] = { .env = "OTEL_EXPORTER_OTLP_TRACES_COMPRESSION",
				   .help = "gzip or none; overrides the above",
				   .parse = parse_compression },
	[S_METRICS_COMPRESSION] = { .env = "OTEL_EXPORTER_OTLP_METRICS_COMPRESSION",
				    .help = "gzip or none for metrics; overrides "
					    "OTEL_EXPORTER_OTLP_COMPRESSION",
				    .parse = parse_compression },
	[S_CERTIFICATE] = { .env = "OTEL_EXPORTER_OTLP_CERTIFICATE",
			    .help = "PEM file of the CAs that verify the collector (https); "
				    "default: the system's",
			    .parse = parse_file },
	[S_TRACES_CERTIFICATE] = { .env = "OTEL_EXPORTER_OTLP_TRACES_CERTIFICATE",
				   .help = "traces CA file; overrides the above",
				   .parse = parse_file },
	[S_METRICS_CERTIFICATE] = { .env = "OTEL_EXPORTER_OTLP_METRICS_CERTIFICATE",
				    .help = "metrics CA file; overrides OTEL_EXPORTER_OTLP_CERTIFICATE",
				    .parse = parse_file },
	[S_CLIENT_CERT] = { .env = "OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE",
			    .help = "PEM client certificate, for mutual TLS", .parse = parse_file },
	[S_TRACES_CLIENT_CERT] = { .env = "OTEL_EXPORTER_OTLP_TRACES_CLIENT_CERTIFICATE",
				   .help = "traces client certificate; overrides the above",
				   .parse = parse_file },
	[S_METRICS_CLIENT_CERT] = { .env = "OTEL_EXPORTER_OTLP_METRICS_CLIENT_CERTIFICATE",
				    .help = "metrics client certificate; overrides "
					    "OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE",
				    .parse = parse_file },
	[S_CLIENT_KEY] = { .env = "OTEL_EXPORTER_OTLP_CLIENT_KEY",
			   .help = "PEM private key of the client certificate",
			   .parse = parse_file },
	[S_TRACES_CLIENT_KEY] = { .env = "OTEL_EXPORTER_OTLP_TRACES_CLIENT_KEY",
				  .help = "traces client key; overrides the above",
				  .parse = parse_file },
	[S_METRICS_CLIENT_KEY] = { .env = "OTEL_EXPORTER_OTLP_METRICS_CLIENT_KEY",
				   .help = "metrics client key; overrides OTEL_EXPORTER_OTLP_CLIENT_KEY",
				   .parse = parse_file },
	[S_INSECURE] = { .env = "OTEL_EXPORTER_OTLP_INSECURE", .def = "false",
			 .help = "true or false; gRPC only, ignored for http/protobuf, where the "
				 "endpoint's http:// or https:// decides",
			 .parse = parse_bool },
	[S_TRACES_INSECURE] = { .env = "OTEL_EXPORTER_OTLP_TRACES_INSECURE",
				.help = "true or false; ignored like the above",
				.parse = parse_bool },
	[S_METRICS_INSECURE] = { .env = "OTEL_EXPORTER_OTLP_METRICS_INSECURE",
				 .help = "true or false; ignored like the above",
				 .parse = parse_bool },
	[S_METRICS_EXPORTER] = { .env = "OTEL_METRICS_EXPORTER", .def = "otlp",
				 .help = "RED metrics of every call: otlp (to the metrics endpoint), "
					 "prometheus (served for scraping), console (a table per "
					 "interval and at exit) or none",
				 .parse = parse_metrics_choice },
	[S_METRIC_INTERVAL] = { .env = "OTEL_METRIC_EXPORT_INTERVAL", .def = "60000",
				.help = "time between metric exports (otlp, console), ms",
				.parse = parse_ms },
	[S_METRIC_TIMEOUT] = { .env = "OTEL_METRIC_EXPORT_TIMEOUT", .def = "30000",
			       .help = "time one metric export may spend on requests and retries, "
				       "ms",
			       .parse = parse_ms },
	[S_TEMPORALITY] = { .env = "OTEL_EXPORTER_OTLP_METRICS_TEMPORALITY_PREFERENCE",
			    .def = "cumulative",
			    .help = "cumulative, delta, or lowmemory (delta histograms, cumulative "
				    "counters)",
			    .parse = parse_metrics_choice },
	[S_EXEMPLAR_FILTER] = { .env = "OTEL_METRICS_EXEMPLAR_FILTER", .def = "trace_based",
				.help = "trace_based (exemplars of exported spans), always_on or "
					"always_off",
				.parse = parse_metrics_choice },
	[S_CARDINALITY] = { .env = "GOSPAN_METRICS_CARDINALITY_LIMIT", .def = "2000",
			    .help = "attribute sets per metric and process, the overflow set "
				    "(otel.metric.overflow=true) included",
			    .parse = parse_count },
	[S_PROMETHEUS_HOST] = { .env = "OTEL_EXPORTER_PROMETHEUS_HOST", .def = "localhost",
				.help = "address the Prometheus endpoint listens on",
				.parse = parse_host },
	[S_PROMETHEUS_PORT] = { .env = "OTEL_EXPORTER_PROMETHEUS_PORT", .def = "9464",
				.help = "port of the Prometheus endpoint (/metrics)",
				.parse = parse_count },
};

static int refuse(const char *name, const char *val, const char *why)
{
	pr_err("invalid %s '%s': %s", name, val, why);
	return -EINVAL;
}

/* refuse() for a URL, shown without its user info (which may hold a password). */
static int refuse_url(const char *name, const char *url, const char *why)
{
	char *shown = config__printable_url(url);

	refuse(name, shown ? shown : "(URL)", why);
	free(shown);
	return -EINVAL;
}

/*
 * Strict decimal: digits only, the whole string, no overflow. strtol alone would accept " 12"
 * and "+12" and stop quietly at the "abc" of "12abc".
 */
static int parse_long(const char *name, const char *val, long min, long max, long *out)
{
	const char *p = *val == '-' ? val + 1 : val;
	char why[64];
	long v;

	if (!*p)
		return refuse(name, val, "not a number");
	for (; *p; p++)
		if (!isdigit((unsigned char)*p))
			return refuse(name, val, "not a number");
	errno = 0;
	v = strtol(val, NULL, 10);
	if (v < min) {
		if (min == 1)
			return refuse(name, val, "must be positive");
		snprintf(why, sizeof(why), "less than %ld", min);
		return refuse(name, val, why);
	}
	if (errno == ERANGE || v > max) {
		snprintf(why, sizeof(why), "larger than %ld", max);
		return refuse(name, val, why);
	}
	*out = v;
	return 0;
}

static int replace_str(char **dst, const char *val)
{
	char *s = strdup(val);

	if (!s)
		return -ENOMEM;
	free(*dst);
	*dst = s;
	return 0;
}

static int too_many_targets(const char *name, const char *val)
{
	char why[64];

	snprintf(why, sizeof(why), "more than %d targets", CONFIG_MAX_TARGETS);
	return refuse(name, val, why);
}

/* Repeatable: each --pid adds a process; the same one twice counts once. */
static int parse_pid(struct config *cfg, enum setting_id id, const char *name, const char *val)
{
	size_t i;
	long v;
	int err;

	(void)id;
	err = parse_long(name, val, 1, INT_MAX, &v);
	if (err)
		return err;
	for (i = 0; i < cfg->npids; i++)
		if (cfg->pids[i] == (pid_t)v)
			return 0;
	if (cfg->npids + cfg->nexes >= CONFIG_MAX_TARGETS)
		return too_many_targets(name, val);
	cfg->pids[cfg->npids++] = (pid_t)v;
	return 0;
}

/* Repeatable like --pid. */
static int parse_exe(struct config *cfg, enum setting_id id, const char *name, const char *val)
{
	size_t i;

	(void)id;
	if (!*val)
		return refuse(name, val, "empty path");
	for (i = 0; i < cfg->nexes; i++)
		if (!strcmp(cfg->exes[i], val))
			return 0;
	if (cfg->npids + cfg->nexes >= CONFIG_MAX_TARGETS)
		return too_many_targets(name, val);
	cfg->exes[cfg->nexes] = strdup(val);
	if (!cfg->exes[cfg->nexes])
		return -ENOMEM;
	cfg->nexes++;
	return 0;
}

static int parse_functions(struct config *cfg, enum setting_id id, const char *name,
			   const char *val)
{
	(void)id;
	if (!*val)
		return refuse(name, val, "empty path");
	return replace_str(&cfg->functions_file, val);
}

/* Forgets the targets the environment named: the command line names its own. */
static void drop_env_targets(struct config *cfg)
{
	size_t i;

	for (i = 0; i < cfg->nexes; i++)
		free(cfg->exes[i]);
	cfg->nexes = cfg->npids = 0;
	cfg->source[S_PID] = cfg->source[S_EXE] = SRC_DEFAULT;
	cfg->raw[S_PID] = cfg->raw[S_EXE] = NULL;
}

static int parse_flag(struct config *cfg, enum setting_id id, const char *name, const char *val)
{
	(void)name;
	(void)val;
	if (id == S_VERBOSE)
		cfg->verbose = true;
	else if (id == S_HELP)
		cfg->help = true;
	else
		cfg->version = true;
	return 0;
}

static int parse_bool(struct config *cfg, enum setting_id id, const char *name, const char *val)
{
	bool v;

	if (!strcasecmp(val, "true") || !strcmp(val, "1"))
		v = true;
	else if (!strcasecmp(val, "false") || !strcmp(val, "0"))
		v = false;
	else
		return refuse(name, val, "expected true or false");
	if (id == S_FOLLOW_GOROUTINES)
		cfg->follow_goroutines = v;
	else if (id == S_CPU_TIME)
		cfg->cpu_time = v;
	else if (id == S_CAPTURE_MESSAGE_KEY)
		cfg->capture_message_key = v;
	else if (id == S_SDK_DISABLED)
		cfg->sdk_disabled = v;
	/* S_INSECURE, S_TRACES_INSECURE: checked, then unused (see their help). */
	return 0;
}

static int parse_sampler(struct config *cfg, enum setting_id id, const char *name, const char *val)
{
	static const struct {
		const char *name;
		enum root_sampler root;
		bool parent_based;
	} samplers[] = {
		{ "always_on", ROOT_ALWAYS_ON, false },
		{ "always_off", ROOT_ALWAYS_OFF, false },
		{ "traceidratio", ROOT_RATIO, false },
		{ "parentbased_always_on", ROOT_ALWAYS_ON, true },
		{ "parentbased_always_off", ROOT_ALWAYS_OFF, true },
		{ "parentbased_traceidratio", ROOT_RATIO, true },
	};
	size_t i;

	(void)id;
	for (i = 0; i < sizeof(samplers) / sizeof(samplers[0]); i++) {
		if (!strcmp(val, samplers[i].name)) {
			cfg->root_sampler = samplers[i].root;
			cfg->parent_based = samplers[i].parent_based;
			return 0;
		}
	}
	return refuse(name, val,
		      "expected always_on, always_off, traceidratio, parentbased_always_on, "
		      "parentbased_always_off or parentbased_traceidratio");
}

/*
 * OTEL_PROPAGATORS, a list as the SDKs take it. gospan speaks W3C trace context only: a list
 * naming another format is refused rather than half honoured.
 */
static int parse_propagators(struct config *cfg, enum setting_id id, const char *name,
			     const char *val)
{
	const char *p = val, *e;
	bool tc = false, none = false;
	size_t n;

	(void)id;
	while (*p) {
		e = strchr(p, ',') ?: p + strlen(p);
		while (p < e && *p == ' ')
			p++;
		n = (size_t)(e - p);
		while (n && p[n - 1] == ' ')
			n--;
		if (n == 12 && !strncmp(p, "tracecontext", 12))
			tc = true;
		else if (n == 4 && !strncmp(p, "none", 4))
			none = true;
		else if (n)
			return refuse(name, val,
				      "gospan propagates W3C trace context only: expected "
				      "tracecontext or none");
		p = *e ? e + 1 : e;
	}
	if (tc == none)
		return refuse(name, val, "expected tracecontext or none");
	cfg->propagate = tc;
	return 0;
}

static int parse_ratio(struct config *cfg, enum setting_id id, const char *name, const char *val)
{
	char *end;
	double v;

	(void)id;
	errno = 0;
	v = strtod(val, &end);
	if (!*val || *end || errno || !(v >= 0.0 && v <= 1.0))
		return refuse(name, val, "expected a number from 0 to 1");
	cfg->sampler_ratio = v;
	return 0;
}

static int parse_service(struct config *cfg, enum setting_id id, const char *name,
			 const char *val)
{
	(void)id;
	(void)name;
	return replace_str(&cfg->service_name, val);
}

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	c = (char)tolower((unsigned char)c);
	return c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

/*
 * Percent-decodes LEN bytes of SRC into a new string; NULL with errno EINVAL on a bad escape. An
 * encoded NUL is refused too: it would silently cut the value short.
 */
static char *percent_decode(const char *src, size_t len)
{
	char *out = malloc(len + 1), *o = out;
	size_t i;
	int hi, lo;

	if (!out)
		return NULL;
	for (i = 0; i < len; i++) {
		if (src[i] != '%') {
			*o++ = src[i];
			continue;
		}
		hi = i + 1 < len ? hexval(src[i + 1]) : -1;
		lo = i + 2 < len ? hexval(src[i + 2]) : -1;
		if (hi < 0 || lo < 0 || (hi | lo) == 0) {
			free(out);
			errno = EINVAL;
			return NULL;
		}
		*o++ = (char)(hi << 4 | lo);
		i += 2;
	}
	*o = '\0';
	return out;
}

static void trim(const char **b, const char **e)
{
	while (*b < *e && isspace((unsigned char)**b))
		(*b)++;
	while (*e > *b && isspace((unsigned char)(*e)[-1]))
		(*e)--;
}

static void free_kvs(struct header_kv *kv, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++) {
		free(kv[i].key);
		free(kv[i].value);
	}
	free(kv);
}

/* RFC 9110 token characters: what an HTTP header name may be made of. */
static bool is_token(const char *s)
{
	for (; *s; s++)
		if (!isalnum((unsigned char)*s) && !strchr("!#$%&'*+-.^_`|~", *s))
			return false;
	return true;
}

/* A decoded CR or LF in a header value would let the setting inject whole header lines. */
static bool has_ctl(const char *s)
{
	for (; *s; s++)
		if (((unsigned char)*s < 0x20 && *s != '\t') || *s == 0x7f)
			return true;
	return false;
}

/*
 * Parses "k=v,k2=v2" (the Baggage-like list the OTel variables use), values percent-decoded. A
 * key given twice keeps its last value. For headers (SECRET), names must be HTTP tokens, values
 * free of control characters, and messages never repeat the value.
 */
static int parse_kv_list(const char *name, const char *val, bool secret, struct header_kv **out,
			 size_t *nout)
{
	const char *p, *end, *eq, *kb, *ke, *vb, *ve, *shown = secret ? "(hidden)" : val;
	struct header_kv *kv = NULL, *tmp;
	char *key = NULL, *value = NULL;
	size_t n = 0, i;
	int err;

	for (p = val; *p; p = *end ? end + 1 : end) {
		end = p + strcspn(p, ",");
		kb = p;
		ke = end;
		trim(&kb, &ke);
		if (kb == ke)
			continue; /* "a=1,,b=2" or a trailing comma: tolerated, as the SDKs do */
		eq = memchr(kb, '=', ke - kb);
		if (!eq) {
			err = refuse(name, shown, "expected key=value pairs");
			goto cleanup;
		}
		vb = eq + 1;
		ve = ke;
		ke = eq;
		trim(&kb, &ke);
		trim(&vb, &ve);
		if (kb == ke) {
			err = refuse(name, shown, "empty key");
			goto cleanup;
		}
		key = strndup(kb, ke - kb);
		if (!key) {
			err = -ENOMEM;
			goto cleanup;
		}
		value = percent_decode(vb, ve - vb);
		if (!value) {
			err = errno == EINVAL ? refuse(name, shown, "bad percent-encoding") :
						-ENOMEM;
			goto cleanup;
		}
		if (secret && !is_token(key)) {
			err = refuse(name, shown, "header name is not an HTTP token");
			goto cleanup;
		}
		if (secret && has_ctl(value)) {
			pr_err("invalid %s: value of header '%s' holds a control character", name,
			       key);
			err = -EINVAL;
			goto cleanup;
		}
		for (i = 0; i < n; i++)
			if (secret ? !strcasecmp(kv[i].key, key) : !strcmp(kv[i].key, key))
				break;
		if (i < n) {
			free(kv[i].value);
			kv[i].value = value;
			free(key);
			key = value = NULL;
			continue;
		}
		tmp = realloc(kv, (n + 1) * sizeof(*kv));
		if (!tmp) {
			err = -ENOMEM;
			goto cleanup;
		}
		kv = tmp;
		kv[n].key = key;
		kv[n].value = value;
		n++;
		key = value = NULL;
	}
	free_kvs(*out, *nout);
	*out = kv;
	*nout = n;
	return 0;

cleanup:
	free(key);
	free(value);
	free_kvs(kv, n);
	return err;
}

static int parse_res_attrs(struct config *cfg, enum setting_id id, const char *name,
			   const char *val)
{
	(void)id;
	return parse_kv_list(name, val, false, &cfg->resource_attrs, &cfg->nresource_attrs);
}

static int parse_headers(struct config *cfg, enum setting_id id, const char *name,
			 const char *val)
{
	return parse_kv_list(name, val, true, &cfg->headers_by[id - S_HEADERS],
			     &cfg->nheaders_by[id - S_HEADERS]);
}

static int parse_db_query_text(struct config *cfg, enum setting_id id, const char *name,
			       const char *val)
{
	(void)id;
	if (!strcmp(val, "sanitized"))
		cfg->db_query_text = DB_QUERY_TEXT_SANITIZED;
	else if (!strcmp(val, "raw"))
		cfg->db_query_text = DB_QUERY_TEXT_RAW;
	else if (!strcmp(val, "none"))
		cfg->db_query_text = DB_QUERY_TEXT_NONE;
	else
		return refuse(name, val, "expected sanitized, raw or none");
	return 0;
}

static int parse_pending_age(struct config *cfg, enum setting_id id, const char *name,
			     const char *val)
{
	(void)id;
	/* A week at most: past that a typo (ms for s) is likelier than a call that long. */
	return parse_long(name, val, 0, 7L * 24 * 3600, &cfg->max_pending_age_s);
}

static int parse_exporter(struct config *cfg, enum setting_id id, const char *name,
			  const char *val)
{
	(void)id;
	if (!strcmp(val, "otlp"))
		cfg->exporter = TRACES_EXPORTER_OTLP;
	else if (!strcmp(val, "console"))
		cfg->exporter = TRACES_EXPORTER_CONSOLE;
	else if (!strcmp(val, "none"))
		cfg->exporter = TRACES_EXPORTER_NONE;
	else
		return refuse(name, val, "expected otlp, console or none");
	return 0;
}

/* Scheme http or https, then an authority with a host and at most a numeric port. */
static int check_url(const char *name, const char *val)
{
	const char *p, *c, *end, *at, *host, *host_end;
	long port = 0;

	if (!strncasecmp(val, "http://", 7))
		p = val + 7;
	else if (!strncasecmp(val, "https://", 8))
		p = val + 8;
	else
		return refuse_url(name, val, "not an http:// or https:// URL");
	for (c = val; *c; c++)
		if ((unsigned char)*c <= ' ' || *c == 0x7f)
			return refuse_url(name, val, "space or control character in URL");
	end = p + strcspn(p, "/?#");
	at = memrchr(p, '@', end - p);
	host = at ? at + 1 : p;
	if (*host == '[') {
		host_end = memchr(host, ']', end - host);
		if (!host_end || host_end == host + 1)
			return refuse_url(name, val, "bad IPv6 address in URL");
		host_end++;
	} else {
		host_end = memchr(host, ':', end - host);
		if (!host_end)
			host_end = end;
		if (host_end == host)
			return refuse_url(name, val, "no host in URL");
	}
	if (host_end == end)
		return 0;
	if (*host_end != ':' || host_end + 1 == end)
		return refuse_url(name, val, "bad port in URL");
	for (c = host_end + 1; c < end; c++) {
		if (!isdigit((unsigned char)*c) || port > 65535)
			return refuse_url(name, val, "bad port in URL");
		port = port * 10 + (*c - '0');
	}
	if (port < 1 || port > 65535)
		return refuse_url(name, val, "bad port in URL");
	return 0;
}

static int parse_endpoint(struct config *cfg, enum setting_id id, const char *name,
			  const char *val)
{
	int err = check_url(name, val);

	if (err)
		return err;
	return replace_str(&cfg->endpoint_by[id - S_ENDPOINT], val);
}

static int parse_protocol(struct config *cfg, enum setting_id id, const char *name,
			  const char *val)
{
	if (!strcmp(val, "http/protobuf") || !strcmp(val, "http/json")) {
		cfg->json_by[id - S_PROTOCOL] = !strcmp(val, "http/json");
		return 0;
	}
	if (!strcmp(val, "grpc"))
		return refuse(name, val,
			      "gRPC is not supported; use http/protobuf or http/json (port 4318)");
	return refuse(name, val, "expected http/protobuf or http/json");
}

static int parse_compression(struct config *cfg, enum setting_id id, const char *name,
			     const char *val)
{
	bool gzip;

	if (!strcmp(val, "gzip"))
		gzip = true;
	else if (!strcmp(val, "none"))
		gzip = false;
	else
		return refuse(name, val, "expected gzip or none");
	cfg->gzip_by[id - S_COMPRESSION] = gzip;
	return 0;
}

/*
 * A TLS file must be there and readable at start: libcurl would only say so at the first
 * export, as a TLS error that does not name the setting. And only root or gospan's own user
 * may be able to write it: whoever could change the CA file could read the spans on their way.
 * libcurl opens the file again by its path when it connects, so the directory that holds it
 * must be as closely held (docs/configuration.md).
 */
static int parse_file(struct config *cfg, enum setting_id id, const char *name, const char *val)
{
	char why[TRUSTED_FILE_WHY_MAX];
	int fd;

	if (!*val)
		return refuse(name, val, "empty path");
	fd = trusted_file__open(val, TLS_FILE_MAX_SIZE, why, sizeof(why));
	if (fd < 0)
		return refuse(name, val, why);
	close(fd);
	return replace_str(&cfg->tls_paths[id - S_CERTIFICATE], val);
}

static int parse_ms(struct config *cfg, enum setting_id id, const char *name, const char *val)
{
	long v, *dst;
	int err;

	if (id >= S_TIMEOUT && id <= S_METRICS_TIMEOUT)
		dst = &cfg->timeout_by[id - S_TIMEOUT];
	else if (id == S_METRIC_INTERVAL)
		dst = &cfg->metric_interval_ms;
	else if (id == S_METRIC_TIMEOUT)
		dst = &cfg->metric_timeout_ms;
	else if (id == S_BSP_EXPORT_TIMEOUT)
		dst = &cfg->bsp_export_timeout_ms;
	else
		dst = &cfg->bsp_schedule_delay_ms;
	/* A delay of 0 would spin the export thread; a timeout of 0 means none to libcurl. */
	err = parse_long(name, val, 1, 24L * 3600 * 1000, &v);
	if (!err)
		*dst = v;
	return err;
}

static int parse_count(struct config *cfg, enum setting_id id, const char *name, const char *val)
{
	long v;
	int err;

	if (id == S_PROMETHEUS_PORT)
		return parse_long(name, val, 1, 65535, &cfg->prometheus_port);
	/* Below 2, the overflow set alone would take every call. */
	if (id == S_CARDINALITY)
		return parse_long(name, val, 2, 1L << 20, &cfg->metrics_cardinality);
	/* The queue is allocated whole at start: a bound keeps a typo from asking for gigabytes. */
	err = parse_long(name, val, 1, 1L << 24, &v);
	if (err)
		return err;
	if (id == S_BSP_QUEUE)
		cfg->bsp_max_queue = v;
	else
		cfg->bsp_max_batch = v;
	return 0;
}

static int parse_log_level(struct config *cfg, enum setting_id id, const char *name,
			   const char *val)
{
	(void)id;
	if (log_parse_level(val, &cfg->log_level))
		return refuse(name, val, "expected error, warn, info or debug");
	return 0;
}

/* The metrics settings that pick one of a few names: each its table of names and values. */
static int parse_metrics_choice(struct config *cfg, enum setting_id id, const char *name,
				const char *val)
{
	static const char *const exporters[] = { "otlp", "prometheus", "console", "none", NULL };
	static const char *const temporalities[] = { "cumulative", "delta", "lowmemory", NULL };
	static const char *const filters[] = { "trace_based", "always_on", "always_off", NULL };
	const char *const *names = id == S_METRICS_EXPORTER ? exporters :
				   id == S_TEMPORALITY	     ? temporalities :
							       filters;
	char why[96];
	size_t i, len;

	/* The SDK specification reads enum values case-insensitively. */
	for (i = 0; names[i]; i++) {
		if (strcasecmp(val, names[i]))
			continue;
		if (id == S_METRICS_EXPORTER)
			cfg->metrics_exporter = (enum metrics_exporter)i;
		else if (id == S_TEMPORALITY)
			cfg->temporality = (enum metrics_temporality)i;
		else
			cfg->exemplar_filter = (enum exemplar_filter)i;
		return 0;
	}
	if (id == S_METRICS_EXPORTER && strchr(val, ','))
		return refuse(name, val, "one metrics exporter at a time: otlp, prometheus, console "
					 "or none");
	len = snprintf(why, sizeof(why), "expected %s", names[0]);
	for (i = 1; names[i] && len < sizeof(why); i++)
		len += snprintf(why + len, sizeof(why) - len, "%s%s", names[i + 1] ? ", " : " or ",
				names[i]);
	return refuse(name, val, why);
}

/* A host name or address to listen on: not empty, no spaces, no port. */
static int parse_host(struct config *cfg, enum setting_id id, const char *name, const char *val)
{
	const char *colon = strchr(val, ':');

	(void)id;
	if (!*val || strpbrk(val, " \t/"))
		return refuse(name, val, "expected a host name or an IP address");
	/* One colon is "host:port" (an IPv6 address has two or more), as is "[v6]:port". */
	if ((colon && !strchr(colon + 1, ':')) || strstr(val, "]:"))
		return refuse(name, val,
			      "expected a host name or an IP address without a port (the port is "
			      "OTEL_EXPORTER_PROMETHEUS_PORT)");
	return replace_str(&cfg->prometheus_host, val);
}

/* The OTel spec treats an empty variable as unset; the first of duplicates wins, as in getenv. */
static const char *env_lookup(char **envp, const char *name)
{
	size_t n = strlen(name);

	for (; envp && *envp; envp++)
		if (!strncmp(*envp, name, n) && (*envp)[n] == '=')
			return (*envp)[n + 1] ? *envp + n + 1 : NULL;
	return NULL;
}

static int apply(struct config *cfg, enum setting_id id, const char *name, const char *val,
		 enum source src)
{
	int err = settings[id].parse(cfg, id, name, val);

	if (!err) {
		cfg->raw[id] = val;
		cfg->source[id] = src;
	}
	return err;
}

/* Finds the setting for ARG (without leading dashes, LEN bytes); S__COUNT when there is none. */
static enum setting_id find_option(const char *arg, size_t len, bool is_short)
{
	int id;

	for (id = 0; id < S__COUNT; id++) {
		if (is_short && len == 1 && settings[id].short_opt == arg[0])
			return id;
		if (!is_short && settings[id].opt && strlen(settings[id].opt) == len &&
		    !strncmp(settings[id].opt, arg, len))
			return id;
	}
	return S__COUNT;
}

/* --name value, --name=value, and -h/-v; anything else is refused, never skipped. */
static int parse_cli(struct config *cfg, int argc, char **argv)
{
	const char *arg, *val, *eq;
	enum setting_id id;
	char name[64];
	bool is_short;
	size_t len;
	int i;

	for (i = 1; i < argc; i++) {
		arg = argv[i];
		if (arg[0] != '-') {
			pr_err("unexpected argument '%s'; see --help", arg);
			return -EINVAL;
		}
		is_short = arg[1] != '-';
		arg += is_short ? 1 : 2;
		eq = is_short ? NULL : strchr(arg, '=');
		len = eq ? (size_t)(eq - arg) : strlen(arg);
		id = find_option(arg, len, is_short);
		if (id == S__COUNT) {
			pr_err("unknown option '%s'; see --help", argv[i]);
			return -EINVAL;
		}
		snprintf(name, sizeof(name), "--%s", settings[id].opt);
		if (settings[id].flag) {
			if (eq) {
				pr_err("option '%s' takes no value", name);
				return -EINVAL;
			}
			val = "true";
		} else if (eq) {
			val = eq + 1;
		} else if (i + 1 < argc) {
			val = argv[++i];
		} else {
			pr_err("option '%s' needs a value", name);
			return -EINVAL;
		}
		/*
		 * --pid and --exe name the targets together: the first one on the command line
		 * hides the variables, so a stale one in the environment adds no target.
		 */
		if ((id == S_PID || id == S_EXE) && cfg->source[S_PID] != SRC_CLI &&
		    cfg->source[S_EXE] != SRC_CLI)
			drop_env_targets(cfg);
		if (apply(cfg, id, name, val, SRC_CLI))
			return -EINVAL;
	}
	return 0;
}

/*
 * One signal's destination D: SIG 1 for traces, 2 for metrics, PATH its path under the general
 * endpoint. Each setting of the signal's own that is set wins over the general one; its headers
 * override the general ones with the same (case-insensitive) name.
 */
static int make_dest(struct config *cfg, struct otlp_dest *d, int sig, const char *path)
{
	const char *base = cfg->endpoint_by[0], *p;
	const struct header_kv *gen = cfg->headers_by[0], *own = cfg->headers_by[sig];
	size_t ngen = cfg->nheaders_by[0], nown = cfg->nheaders_by[sig], i, j, len;
	enum setting_id key;
	char **dst;

	if (cfg->endpoint_by[sig]) {
		if (replace_str(&d->url, cfg->endpoint_by[sig]))
			return -ENOMEM;
	} else {
		len = strlen(base);
		while (len && base[len - 1] == '/')
			len--;
		free(d->url);
		if (asprintf(&d->url, "%.*s%s", (int)len, base, path) < 0) {
			d->url = NULL;
			return -ENOMEM;
		}
	}
	free_kvs(d->headers, d->nheaders);
	d->nheaders = 0;
	d->headers = calloc(ngen + nown + 1, sizeof(*d->headers));
	if (!d->headers)
		return -ENOMEM;
	for (i = 0; i < ngen + nown; i++) {
		const struct header_kv *kv = i < ngen ? &gen[i] : &own[i - ngen];

		for (j = 0; i < ngen && j < nown; j++)
			if (!strcasecmp(kv->key, own[j].key))
				break;
		if (i < ngen && j < nown)
			continue;
		d->headers[d->nheaders].key = strdup(kv->key);
		d->headers[d->nheaders++].value = strdup(kv->value);
	}
	for (i = 0; i < d->nheaders; i++)
		if (!d->headers[i].key || !d->headers[i].value)
			return -ENOMEM;

	d->timeout_ms = cfg->timeout_by[sig] ? cfg->timeout_by[sig] : cfg->timeout_by[0];
	d->gzip = cfg->raw[S_COMPRESSION + sig] ? cfg->gzip_by[sig] : cfg->gzip_by[0];
	d->json = cfg->raw[S_PROTOCOL + sig] ? cfg->json_by[sig] : cfg->json_by[0];
	for (i = 0; i < 3; i++) {
		p = cfg->tls_paths[3 * i + sig] ?: cfg->tls_paths[3 * i];
		dst = i == 0 ? &d->ca_file : i == 1 ? &d->client_cert : &d->client_key;
		free(*dst);
		*dst = p ? strdup(p) : NULL;
		if (p && !*dst)
			return -ENOMEM;
	}
	if (d->client_key && !d->client_cert) {
		key = cfg->tls_paths[S_CLIENT_KEY - S_CERTIFICATE + sig] ? S_CLIENT_KEY + sig :
									    S_CLIENT_KEY;
		pr_err("invalid %s '%s': no client certificate to go with it", settings[key].env,
		       d->client_key);
		return -EINVAL;
	}
	return 0;
}

static void free_dest(struct otlp_dest *d)
{
	free(d->url);
	free_kvs(d->headers, d->nheaders);
	free(d->ca_file);
	free(d->client_cert);
	free(d->client_key);
}

/* Puts together what depends on several settings: each signal's destination, the batch. */
static int finish(struct config *cfg)
{
	int err;

	err = make_dest(cfg, &cfg->traces, 1, "/v1/traces");
	if (err)
		return err;
	/* Metrics go nowhere over OTLP unless exported so: their settings are not checked. */
	if (cfg->metrics_exporter == METRICS_EXPORTER_OTLP) {
		err = make_dest(cfg, &cfg->metrics, 2, "/v1/metrics");
		if (err)
			return err;
	}

	/* A small queue alone shrinks the default batch; a batch set above it is a mistake. */
	if (cfg->bsp_max_batch > cfg->bsp_max_queue && cfg->source[S_BSP_BATCH] == SRC_DEFAULT)
		cfg->bsp_max_batch = cfg->bsp_max_queue;
	if (cfg->bsp_max_batch > cfg->bsp_max_queue) {
		pr_err("invalid OTEL_BSP_MAX_EXPORT_BATCH_SIZE '%ld': larger than "
		       "OTEL_BSP_MAX_QUEUE_SIZE (%ld)",
		       cfg->bsp_max_batch, cfg->bsp_max_queue);
		return -EINVAL;
	}
	return 0;
}

int config__parse(struct config *cfg, int argc, char **argv, char **envp)
{
	const struct setting *s;
	const char *val;
	int id, err;

	memset(cfg, 0, sizeof(*cfg));
	for (id = 0; id < S__COUNT; id++) {
		s = &settings[id];
		if (!s->def)
			continue;
		err = apply(cfg, id, s->env ? s->env : s->opt, s->def, SRC_DEFAULT);
		if (err)
			goto cleanup;
	}
	for (id = 0; id < S__COUNT; id++) {
		if (!settings[id].env)
			continue;
		val = env_lookup(envp, settings[id].env);
		if (!val)
			continue;
		err = apply(cfg, id, settings[id].env, val, SRC_ENV);
		if (err)
			goto cleanup;
	}
	err = parse_cli(cfg, argc, argv);
	if (err)
		goto cleanup;
	err = finish(cfg);
	if (err)
		goto cleanup;
	return 0;

cleanup:
	if (err == -ENOMEM)
		pr_err("cannot read settings: out of memory");
	/* Leaves CFG zeroed, so a caller's config__free stays harmless. */
	config__free(cfg);
	return err;
}

void config__free(struct config *cfg)
{
	size_t i;

	for (i = 0; i < CONFIG_TLS_PATHS; i++)
		free(cfg->tls_paths[i]);
	free_dest(&cfg->traces);
	free_dest(&cfg->metrics);
	for (i = 0; i < 3; i++) {
		free(cfg->endpoint_by[i]);
		free_kvs(cfg->headers_by[i], cfg->nheaders_by[i]);
	}
	free(cfg->prometheus_host);
	for (i = 0; i < cfg->nexes; i++)
		free(cfg->exes[i]);
	free(cfg->service_name);
	free(cfg->functions_file);
	free_kvs(cfg->resource_attrs, cfg->nresource_attrs);
	memset(cfg, 0, sizeof(*cfg));
}

/* "1, 2, 3" or "a, b": the --pid (PIDS) or --exe targets, cut to SIZE. */
static const char *list_targets(const struct config *cfg, bool pids, char *buf, size_t size)
{
	size_t i, n = pids ? cfg->npids : cfg->nexes, len = 0;

	buf[0] = '\0';
	for (i = 0; i < n && len < size; i++) {
		if (pids)
			len += snprintf(buf + len, size - len, "%s%d", i ? ", " : "",
					(int)cfg->pids[i]);
		else
			len += snprintf(buf + len, size - len, "%s%s", i ? ", " : "",
					cfg->exes[i]);
	}
	return buf;
}

void config__print_help(const struct config *cfg, FILE *out)
{
	char capped[512], *shown, *printable = NULL;
	const struct setting *s;
	const char *val;
	int id;

	fputs("usage: gospan [--pid PID | --exe PATH]... [--verbose]\n"
	      "       gospan --help | --version\n\n"
	      "Traces the HTTP requests a running Go service serves and exports them as\n"
	      "OpenTelemetry spans (OTLP/HTTP protobuf). Needs root, or CAP_BPF, CAP_PERFMON\n"
	      "and CAP_SYS_PTRACE, plus CAP_SYS_ADMIN on kernels that reserve uprobes to it\n"
	      "(the fix for CVE-2025-38466). Command-line options win over the environment.\n\n"
	      "settings (current value, source):\n",
	      out);
	for (id = 0; id < S__COUNT; id++) {
		s = &settings[id];
		if (s->opt && s->short_opt)
			fprintf(out, "  -%c, --%s", s->short_opt, s->opt);
		else if (s->opt)
			fprintf(out, "  --%s", s->opt);
		if (s->opt && s->env)
			fprintf(out, ", %s\n", s->env);
		else if (s->opt)
			fputc('\n', out);
		else
			fprintf(out, "  %s\n", s->env);
		val = cfg->raw[id];
		/* Repeated targets: all of them, not only the last one given. */
		if (id == S_PID && cfg->npids > 1)
			val = list_targets(cfg, true, capped, sizeof(capped));
		else if (id == S_EXE && cfg->nexes > 1)
			val = list_targets(cfg, false, capped, sizeof(capped));
		if (!val)
			val = "(unset)";
		else if (s->secret)
			val = "(set, hidden)";
		else if (s->parse == parse_endpoint)
			val = (printable = config__printable_url(val)) ? printable : "(unprintable)";
		/* The default batch shrinks to a smaller queue (finish()): show what is used. */
		if (id == S_BSP_BATCH && cfg->raw[id] &&
		    strtol(cfg->raw[id], NULL, 10) != cfg->bsp_max_batch) {
			snprintf(capped, sizeof(capped), "%ld (capped at the queue size)",
				 cfg->bsp_max_batch);
			val = capped;
		}
		fprintf(out, "      %s\n      = %s  [%s]\n", s->help, val,
			source_names[cfg->source[id]]);
		free(printable);
		printable = NULL;
	}
	shown = cfg->traces.url ? config__printable_url(cfg->traces.url) : NULL;
	fprintf(out, "\ntraces are sent to %s\n", shown ? shown : cfg->traces.url ? "(unprintable)" :
								       "(unset)");
	free(shown);
	if (cfg->metrics_exporter == METRICS_EXPORTER_OTLP) {
		shown = cfg->metrics.url ? config__printable_url(cfg->metrics.url) : NULL;
		fprintf(out, "metrics are sent to %s\n", shown ? shown : "(unprintable)");
		free(shown);
	} else if (cfg->metrics_exporter == METRICS_EXPORTER_PROMETHEUS) {
		fprintf(out, "metrics are served at http://%s:%ld/metrics\n", cfg->prometheus_host,
			cfg->prometheus_port);
	}
}

char *config__printable_url(const char *url)
{
	const char *auth, *end, *at = NULL, *p;
	char *out;

	if (!url) {
		errno = EINVAL;
		return NULL;
	}
	auth = strstr(url, "://");
	if (!auth)
		return strdup(url);
	auth += 3;
	/* The authority ends at the path, query or fragment; user info ends at its last '@'. */
	end = auth + strcspn(auth, "/?#");
	for (p = auth; p < end; p++)
		if (*p == '@')
			at = p;
	if (!at)
		return strdup(url);
	if (asprintf(&out, "%.*sREDACTED%s", (int)(auth - url), url, at) < 0)
		return NULL;
	return out;
}
