// SPDX-License-Identifier: MIT
/*
 * Settings, table-driven. Each row names a variable and/or option, its default and one typed
 * parser; values apply in the order defaults, environment, command line, so the later source
 * wins. A refused value stops gospan at start with a message naming the setting and the value.
 */
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "log.h"

enum source {
	SRC_DEFAULT,
	SRC_ENV,
	SRC_CLI,
};

static const char *const source_names[] = { "default", "environment", "command line" };

struct setting {
	const char *env; /* variable, or NULL */
	const char *opt; /* long option without "--", or NULL */
	const char *def; /* default as text, or NULL for unset */
	const char *help;
	int (*parse)(struct config *cfg, const struct setting *s, const char *name, const char *val);
	bool secret; /* value never printed */
	bool flag;   /* option takes no value */
};

static int parse_pid(struct config *cfg, const struct setting *s, const char *name, const char *val);
static int parse_exe(struct config *cfg, const struct setting *s, const char *name, const char *val);
static int parse_flag(struct config *cfg, const struct setting *s, const char *name, const char *val);
static int parse_service(struct config *cfg, const struct setting *s, const char *name,
			 const char *val);
static int parse_res_attrs(struct config *cfg, const struct setting *s, const char *name,
			   const char *val);
static int parse_exporter(struct config *cfg, const struct setting *s, const char *name,
			  const char *val);
static int parse_endpoint(struct config *cfg, const struct setting *s, const char *name,
			  const char *val);
static int parse_protocol(struct config *cfg, const struct setting *s, const char *name,
			  const char *val);
static int parse_headers(struct config *cfg, const struct setting *s, const char *name,
			 const char *val);
static int parse_ms(struct config *cfg, const struct setting *s, const char *name, const char *val);
static int parse_count(struct config *cfg, const struct setting *s, const char *name,
		       const char *val);
static int parse_log_level(struct config *cfg, const struct setting *s, const char *name,
			   const char *val);

enum {
	S_PID,
	S_EXE,
	S_VERBOSE,
	S_HELP,
	S_VERSION,
	S_SERVICE_NAME,
	S_RESOURCE_ATTRS,
	S_TRACES_EXPORTER,
	S_ENDPOINT,
	S_TRACES_ENDPOINT,
	S_PROTOCOL,
	S_TRACES_PROTOCOL,
	S_HEADERS,
	S_TRACES_HEADERS,
	S_TIMEOUT,
	S_TRACES_TIMEOUT,
	S_BSP_DELAY,
	S_BSP_QUEUE,
	S_BSP_BATCH,
	S_LOG_LEVEL,
	S__COUNT,
};

_Static_assert(S__COUNT <= CONFIG_MAX_SETTINGS, "raise CONFIG_MAX_SETTINGS");

static const struct setting settings[S__COUNT] = {
	[S_PID] = { "OTEL_GO_AUTO_TARGET_PID", "pid", NULL, "process to trace", parse_pid },
	[S_EXE] = { "OTEL_GO_AUTO_TARGET_EXE", "exe", NULL,
		    "executable to trace: every process running it, waiting for the first",
		    parse_exe },
	[S_VERBOSE] = { NULL, "verbose", NULL, "status line every 10 s", parse_flag, false, true },
	[S_HELP] = { NULL, "help", NULL, "this help", parse_flag, false, true },
	[S_VERSION] = { NULL, "version", NULL, "print the version", parse_flag, false, true },
	[S_SERVICE_NAME] = { "OTEL_SERVICE_NAME", NULL, NULL,
			     "service.name (default: the target's OTEL_SERVICE_NAME, else its "
			     "executable name)",
			     parse_service },
	[S_RESOURCE_ATTRS] = { "OTEL_RESOURCE_ATTRIBUTES", NULL, NULL,
			       "extra resource attributes, key=value,...", parse_res_attrs },
	[S_TRACES_EXPORTER] = { "OTEL_TRACES_EXPORTER", NULL, "otlp", "otlp, console or none",
				parse_exporter },
	[S_ENDPOINT] = { "OTEL_EXPORTER_OTLP_ENDPOINT", NULL, "http://localhost:4318",
			 "OTLP/HTTP base URL; traces go to <base>/v1/traces", parse_endpoint },
	[S_TRACES_ENDPOINT] = { "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", NULL, NULL,
				"full traces URL, used as given", parse_endpoint },
	[S_PROTOCOL] = { "OTEL_EXPORTER_OTLP_PROTOCOL", NULL, "http/protobuf",
			 "only http/protobuf is supported", parse_protocol },
	[S_TRACES_PROTOCOL] = { "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", NULL, NULL,
				"only http/protobuf is supported", parse_protocol },
	[S_HEADERS] = { "OTEL_EXPORTER_OTLP_HEADERS", NULL, NULL,
			"request headers, key=value,... (values percent-decoded)", parse_headers,
			true },
	[S_TRACES_HEADERS] = { "OTEL_EXPORTER_OTLP_TRACES_HEADERS", NULL, NULL,
			       "traces request headers, override the above", parse_headers, true },
	[S_TIMEOUT] = { "OTEL_EXPORTER_OTLP_TIMEOUT", NULL, "10000", "export timeout, ms",
			parse_ms },
	[S_TRACES_TIMEOUT] = { "OTEL_EXPORTER_OTLP_TRACES_TIMEOUT", NULL, NULL,
			       "traces export timeout, ms", parse_ms },
	[S_BSP_DELAY] = { "OTEL_BSP_SCHEDULE_DELAY", NULL, "5000",
			  "longest wait before a batch is sent, ms", parse_ms },
	[S_BSP_QUEUE] = { "OTEL_BSP_MAX_QUEUE_SIZE", NULL, "2048",
			  "spans queued for export at most; beyond, spans are dropped and counted",
			  parse_count },
	[S_BSP_BATCH] = { "OTEL_BSP_MAX_EXPORT_BATCH_SIZE", NULL, "512", "spans per export request",
			  parse_count },
	[S_LOG_LEVEL] = { "OTEL_LOG_LEVEL", NULL, "info", "error, warn, info or debug",
			  parse_log_level },
};

static int refuse(const char *name, const char *val, const char *why)
{
	pr_err("invalid %s '%s': %s", name, val, why);
	return -EINVAL;
}

/* Strict decimal: the whole string, no sign unless allowed, no overflow. */
static int parse_long(const char *name, const char *val, long min, long max, long *out)
{
	char *end;
	long v;

	if (!*val || isspace((unsigned char)*val))
		return refuse(name, val, "not a number");
	errno = 0;
	v = strtol(val, &end, 10);
	if (*end)
		return refuse(name, val, "not a number");
	if (errno == ERANGE || v < min || v > max) {
		char why[96];

		snprintf(why, sizeof(why), "out of range (%ld to %ld)", min, max);
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

static int parse_pid(struct config *cfg, const struct setting *s, const char *name, const char *val)
{
	long v;
	int err;

	(void)s;
	err = parse_long(name, val, 1, INT_MAX, &v);
	if (!err)
		cfg->pid = (pid_t)v;
	return err;
}

static int parse_exe(struct config *cfg, const struct setting *s, const char *name, const char *val)
{
	(void)s;
	if (!*val)
		return refuse(name, val, "empty path");
	return replace_str(&cfg->exe, val);
}

static int parse_flag(struct config *cfg, const struct setting *s, const char *name, const char *val)
{
	(void)name;
	(void)val;
	if (s == &settings[S_VERBOSE])
		cfg->verbose = true;
	else if (s == &settings[S_HELP])
		cfg->help = true;
	else
		cfg->version = true;
	return 0;
}

static int parse_service(struct config *cfg, const struct setting *s, const char *name,
			 const char *val)
{
	(void)s;
	(void)name;
	if (!*val)
		return 0; /* empty means unset, as in the SDKs */
	return replace_str(&cfg->service_name, val);
}

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	c = (char)tolower((unsigned char)c);
	return c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

/* Percent-decodes LEN bytes of SRC into a new string; NULL with errno EINVAL on a bad escape. */
static char *percent_decode(const char *src, size_t len)
{
	char *out = malloc(len + 1), *o = out;
	size_t i;

	if (!out)
		return NULL;
	for (i = 0; i < len; i++) {
		if (src[i] == '%') {
			int hi = i + 1 < len ? hexval(src[i + 1]) : -1;
			int lo = i + 2 < len ? hexval(src[i + 2]) : -1;

			if (hi < 0 || lo < 0) {
				free(out);
				errno = EINVAL;
				return NULL;
			}
			*o++ = (char)(hi << 4 | lo);
			i += 2;
		} else {
			*o++ = src[i];
		}
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

/* Parses "k=v,k2=v2" (the W3C Baggage-like list the OTel variables use), values percent-decoded. */
static int parse_kv_list(const char *name, const char *val, bool secret, struct header_kv **out,
			 size_t *nout)
{
	struct header_kv *kv = NULL, *tmp;
	const char *p = val, *end, *eq, *kb, *ke, *vb, *ve;
	size_t n = 0;
	int err = 0;

	while (*p) {
		end = strchr(p, ',');
		if (!end)
			end = p + strlen(p);
		kb = p;
		ke = end;
		trim(&kb, &ke);
		if (kb == ke)
			goto next; /* empty entry: tolerated, as the SDKs do */
		eq = memchr(kb, '=', ke - kb);
		if (!eq || eq == kb) {
			err = refuse(name, secret ? "(hidden)" : val, "expected key=value pairs");
			goto cleanup;
		}
		vb = eq + 1;
		ve = ke;
		ke = eq;
		trim(&kb, &ke);
		trim(&vb, &ve);
		tmp = realloc(kv, (n + 1) * sizeof(*kv));
		if (!tmp) {
			err = -ENOMEM;
			goto cleanup;
		}
		kv = tmp;
		kv[n].key = strndup(kb, ke - kb);
		kv[n].value = percent_decode(vb, ve - vb);
		n++;
		if (!kv[n - 1].key || !kv[n - 1].value) {
			err = errno == EINVAL ? refuse(name, secret ? "(hidden)" : val,
						       "bad percent-encoding") :
						-ENOMEM;
			goto cleanup;
		}
next:
		p = *end ? end + 1 : end;
	}
	free_kvs(*out, *nout);
	*out = kv;
	*nout = n;
	return 0;
cleanup:
	free_kvs(kv, n);
	return err;
}

static int parse_res_attrs(struct config *cfg, const struct setting *s, const char *name,
			   const char *val)
{
	(void)s;
	return parse_kv_list(name, val, false, &cfg->resource_attrs, &cfg->nresource_attrs);
}

static int parse_headers(struct config *cfg, const struct setting *s, const char *name,
			 const char *val)
{
	if (s == &settings[S_HEADERS])
		return parse_kv_list(name, val, true, &cfg->base_headers, &cfg->nbase_headers);
	return parse_kv_list(name, val, true, &cfg->traces_headers, &cfg->ntraces_headers);
}

static int parse_exporter(struct config *cfg, const struct setting *s, const char *name,
			  const char *val)
{
	(void)s;
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

/* http or https, then a host. The rest is the collector's business. */
static int check_url(const char *name, const char *val)
{
	const char *host;

	if (!strncmp(val, "http://", 7))
		host = val + 7;
	else if (!strncmp(val, "https://", 8))
		host = val + 8;
	else
		return refuse(name, val, "expected an http:// or https:// URL");
	if (!*host || *host == '/' || *host == ':' || strpbrk(host, " \t\r\n"))
		return refuse(name, val, "no host in URL");
	return 0;
}

static int parse_endpoint(struct config *cfg, const struct setting *s, const char *name,
			  const char *val)
{
	int err = check_url(name, val);

	if (err)
		return err;
	if (s == &settings[S_ENDPOINT])
		return replace_str(&cfg->otlp_endpoint, val);
	return replace_str(&cfg->otlp_traces_endpoint, val);
}

static int parse_protocol(struct config *cfg, const struct setting *s, const char *name,
			  const char *val)
{
	(void)cfg;
	(void)s;
	if (!strcmp(val, "http/protobuf"))
		return 0;
	if (!strcmp(val, "grpc"))
		return refuse(name, val, "gRPC is not supported; use http/protobuf (port 4318)");
	return refuse(name, val, "only http/protobuf is supported");
}

static int parse_ms(struct config *cfg, const struct setting *s, const char *name, const char *val)
{
	long v, *dst;
	int err;

	if (s == &settings[S_TIMEOUT])
		dst = &cfg->base_timeout_ms;
	else if (s == &settings[S_TRACES_TIMEOUT])
		dst = &cfg->traces_timeout_ms;
	else
		dst = &cfg->bsp_schedule_delay_ms;
	/* A delay of 0 would spin the export thread; a timeout of 0 would never end. */
	err = parse_long(name, val, 1, 24L * 3600 * 1000, &v);
	if (!err)
		*dst = v;
	return err;
}

static int parse_count(struct config *cfg, const struct setting *s, const char *name,
		       const char *val)
{
	long v;
	int err;

	err = parse_long(name, val, 1, 1L << 24, &v);
	if (err)
		return err;
	if (s == &settings[S_BSP_QUEUE])
		cfg->bsp_max_queue = v;
	else
		cfg->bsp_max_batch = v;
	return 0;
}

static int parse_log_level(struct config *cfg, const struct setting *s, const char *name,
			   const char *val)
{
	(void)s;
	if (log_parse_level(val, &cfg->log_level))
		return refuse(name, val, "expected error, warn, info or debug");
	return 0;
}

static const char *env_lookup(char **envp, const char *name)
{
	size_t n = strlen(name);

	for (; envp && *envp; envp++)
		if (!strncmp(*envp, name, n) && (*envp)[n] == '=')
			return *envp + n + 1;
	return NULL;
}

static int apply(struct config *cfg, int idx, const char *name, const char *val, enum source src)
{
	int err = settings[idx].parse(cfg, &settings[idx], name, val);

	if (!err) {
		cfg->raw[idx] = val;
		cfg->source[idx] = src;
	}
	return err;
}

static int parse_cli(struct config *cfg, int argc, char **argv)
{
	const char *arg, *val, *eq;
	size_t len;
	int i, idx;

	for (i = 1; i < argc; i++) {
		arg = argv[i];
		if (!strcmp(arg, "-h"))
			arg = "--help";
		else if (!strcmp(arg, "-v"))
			arg = "--verbose";
		if (strncmp(arg, "--", 2)) {
			pr_err("unexpected argument '%s'; see --help", arg);
			return -EINVAL;
		}
		arg += 2;
		eq = strchr(arg, '=');
		len = eq ? (size_t)(eq - arg) : strlen(arg);
		for (idx = 0; idx < S__COUNT; idx++)
			if (settings[idx].opt && strlen(settings[idx].opt) == len &&
			    !strncmp(settings[idx].opt, arg, len))
				break;
		if (idx == S__COUNT) {
			pr_err("unknown option '%s'; see --help", argv[i]);
			return -EINVAL;
		}
		if (settings[idx].flag) {
			if (eq) {
				pr_err("option '--%s' takes no value", settings[idx].opt);
				return -EINVAL;
			}
			val = "true";
		} else if (eq) {
			val = eq + 1;
		} else if (i + 1 < argc) {
			val = argv[++i];
		} else {
			pr_err("option '--%s' needs a value", settings[idx].opt);
			return -EINVAL;
		}
		char name[64];

		snprintf(name, sizeof(name), "--%s", settings[idx].opt);
		if (apply(cfg, idx, name, val, SRC_CLI))
			return -EINVAL;
	}
	return 0;
}

/* Puts together what depends on several settings: the traces URL, headers, timeout. */
static int finish(struct config *cfg)
{
	const char *base = cfg->otlp_endpoint;
	size_t i, j, len;

	if (cfg->otlp_traces_endpoint) {
		if (replace_str(&cfg->traces_url, cfg->otlp_traces_endpoint))
			return -ENOMEM;
	} else {
		len = strlen(base);
		while (len && base[len - 1] == '/')
			len--;
		free(cfg->traces_url);
		if (asprintf(&cfg->traces_url, "%.*s/v1/traces", (int)len, base) < 0) {
			cfg->traces_url = NULL;
			return -ENOMEM;
		}
	}

	/* Traces headers override general ones with the same (case-insensitive) name. */
	free_kvs(cfg->headers, cfg->nheaders);
	cfg->headers = calloc(cfg->nbase_headers + cfg->ntraces_headers + 1, sizeof(*cfg->headers));
	cfg->nheaders = 0;
	if (!cfg->headers)
		return -ENOMEM;
	for (i = 0; i < cfg->nbase_headers; i++) {
		for (j = 0; j < cfg->ntraces_headers; j++)
			if (!strcasecmp(cfg->base_headers[i].key, cfg->traces_headers[j].key))
				break;
		if (j < cfg->ntraces_headers)
			continue;
		cfg->headers[cfg->nheaders].key = strdup(cfg->base_headers[i].key);
		cfg->headers[cfg->nheaders++].value = strdup(cfg->base_headers[i].value);
	}
	for (j = 0; j < cfg->ntraces_headers; j++) {
		cfg->headers[cfg->nheaders].key = strdup(cfg->traces_headers[j].key);
		cfg->headers[cfg->nheaders++].value = strdup(cfg->traces_headers[j].value);
	}
	for (i = 0; i < cfg->nheaders; i++)
		if (!cfg->headers[i].key || !cfg->headers[i].value)
			return -ENOMEM;

	cfg->export_timeout_ms = cfg->traces_timeout_ms ? cfg->traces_timeout_ms :
							  cfg->base_timeout_ms;
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
	const char *val;
	int idx, err;

	memset(cfg, 0, sizeof(*cfg));
	for (idx = 0; idx < S__COUNT; idx++) {
		if (settings[idx].def) {
			err = apply(cfg, idx, settings[idx].env, settings[idx].def, SRC_DEFAULT);
			if (err)
				return err;
		}
	}
	for (idx = 0; idx < S__COUNT; idx++) {
		if (!settings[idx].env)
			continue;
		val = env_lookup(envp, settings[idx].env);
		if (val && apply(cfg, idx, settings[idx].env, val, SRC_ENV))
			return -EINVAL;
	}
	err = parse_cli(cfg, argc, argv);
	if (err)
		return err;
	/* --pid and --exe name the target together: one from the command line hides the other's variable. */
	if (cfg->source[S_PID] == SRC_CLI && cfg->source[S_EXE] == SRC_ENV) {
		free(cfg->exe);
		cfg->exe = NULL;
		cfg->source[S_EXE] = SRC_DEFAULT;
		cfg->raw[S_EXE] = NULL;
	} else if (cfg->source[S_EXE] == SRC_CLI && cfg->source[S_PID] == SRC_ENV) {
		cfg->pid = 0;
		cfg->source[S_PID] = SRC_DEFAULT;
		cfg->raw[S_PID] = NULL;
	}
	return finish(cfg);
}

void config__free(struct config *cfg)
{
	free(cfg->exe);
	free(cfg->service_name);
	free(cfg->traces_url);
	free(cfg->otlp_endpoint);
	free(cfg->otlp_traces_endpoint);
	free_kvs(cfg->resource_attrs, cfg->nresource_attrs);
	free_kvs(cfg->headers, cfg->nheaders);
	free_kvs(cfg->base_headers, cfg->nbase_headers);
	free_kvs(cfg->traces_headers, cfg->ntraces_headers);
	memset(cfg, 0, sizeof(*cfg));
}

void config__print_help(const struct config *cfg, FILE *out)
{
	const struct setting *s;
	const char *val;
	int idx;

	fprintf(out, "usage: gospan --pid PID | --exe PATH [--verbose]\n\n"
		     "Traces the HTTP requests a running Go service serves and exports them as\n"
		     "OpenTelemetry spans (OTLP/HTTP protobuf). Needs root, or CAP_BPF, CAP_PERFMON\n"
		     "and CAP_SYS_PTRACE.\n\nsettings (current value, source):\n");
	for (idx = 0; idx < S__COUNT; idx++) {
		s = &settings[idx];
		if (s->opt && s->env)
			fprintf(out, "  --%s, %s\n", s->opt, s->env);
		else if (s->opt)
			fprintf(out, "  --%s\n", s->opt);
		else
			fprintf(out, "  %s\n", s->env);
		val = cfg->raw[idx];
		if (!val)
			val = "(unset)";
		else if (s->secret && cfg->source[idx] != SRC_DEFAULT)
			val = "(set, hidden)";
		fprintf(out, "      %s\n      = %s  [%s]\n", s->help, val,
			source_names[cfg->source[idx]]);
	}
	fprintf(out, "\ntraces are sent to %s\n", cfg->traces_url ? cfg->traces_url : "(unset)");
}
