// SPDX-License-Identifier: MIT
/*
 * Unit tests for config.c: defaults, every variable and option, the command line winning over the
 * environment, traces URL joining, header and resource-attribute lists, and for each kind of bad
 * value both the -EINVAL and the message a user would see on stderr.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>

#include <cmocka.h>

#include "core/config.h"
#include "helpers.h"

#define ENV(...) ((char *[]){ __VA_ARGS__, NULL })
#define ARGS(...) ((const char *[]){ __VA_ARGS__, NULL })
#define NO_ENV ((char *[]){ NULL })
#define NO_ARGS ((const char *[]){ NULL })

/* stderr capture that fails the test when it cannot be set up. */
static void capture_start(struct test_capture *c)
{
	assert_int_equal(test_capture_start(c), 0);
}

static char *capture_end(struct test_capture *c)
{
	char *buf = test_capture_end(c);

	assert_non_null(buf);
	return buf;
}

/* Runs config__parse with "gospan" and ARGS as argv; ARGS and ENVP are NULL-terminated. */
static int parse(struct config *cfg, char **envp, const char *const *args)
{
	char *argv[32] = { "gospan" };
	int argc = 1;

	while (*args) {
		assert_true(argc < 31);
		argv[argc++] = (char *)*args++;
	}
	return config__parse(cfg, argc, argv, envp);
}

/* Parses expecting -EINVAL, a message holding WANT, and no message holding SECRET (may be NULL). */
static void expect_invalid_secret(char **envp, const char *const *args, const char *want,
				  const char *secret)
{
	struct test_capture cap;
	struct config cfg;
	char *out;
	int err;

	capture_start(&cap);
	err = parse(&cfg, envp, args);
	out = capture_end(&cap);
	if (err != -EINVAL || !strstr(out, want) || (secret && strstr(out, secret)))
		fail_msg("want -EINVAL and a message with \"%s\"; got %d and \"%s\"", want, err,
			 out);
	/* A failed parse leaves nothing to free and nothing half-set. */
	assert_null(cfg.traces.url);
	assert_null(cfg.traces.headers);
	free(out);
	config__free(&cfg);
}

static void expect_invalid(char **envp, const char *const *args, const char *want)
{
	expect_invalid_secret(envp, args, want, NULL);
}

static void test_config__defaults(void **state)
{
	struct config cfg;

	(void)state;
	assert_int_equal(parse(&cfg, NO_ENV, NO_ARGS), 0);
	assert_int_equal(cfg.npids, 0);
	assert_int_equal(cfg.nexes, 0);
	assert_false(cfg.verbose);
	assert_false(cfg.help);
	assert_false(cfg.version);
	assert_null(cfg.service_name);
	assert_int_equal(cfg.nresource_attrs, 0);
	assert_int_equal(cfg.exporter, TRACES_EXPORTER_OTLP);
	assert_string_equal(cfg.traces.url, "http://localhost:4318/v1/traces");
	assert_int_equal(cfg.traces.nheaders, 0);
	assert_int_equal(cfg.traces.timeout_ms, 10000);
	assert_int_equal(cfg.bsp_schedule_delay_ms, 5000);
	assert_int_equal(cfg.bsp_max_queue, 2048);
	assert_int_equal(cfg.bsp_max_batch, 512);
	assert_int_equal(cfg.log_level, LOG_INFO);
	config__free(&cfg);
}

static void test_config__every_variable(void **state)
{
	char **env = ENV("PATH=/usr/bin", "OTEL_GO_AUTO_TARGET_PID=4242",
			 "OTEL_SERVICE_NAME=checkout", "OTEL_RESOURCE_ATTRIBUTES=team=payments",
			 "OTEL_TRACES_EXPORTER=console",
			 "OTEL_EXPORTER_OTLP_ENDPOINT=https://collector.example:4318",
			 "OTEL_EXPORTER_OTLP_PROTOCOL=http/protobuf",
			 "OTEL_EXPORTER_OTLP_HEADERS=x-api-key=k1",
			 "OTEL_EXPORTER_OTLP_TIMEOUT=2500", "OTEL_BSP_SCHEDULE_DELAY=250",
			 "OTEL_BSP_MAX_QUEUE_SIZE=100", "OTEL_BSP_MAX_EXPORT_BATCH_SIZE=10",
			 "OTEL_LOG_LEVEL=debug");
	struct config cfg;

	(void)state;
	assert_int_equal(parse(&cfg, env, NO_ARGS), 0);
	assert_int_equal(cfg.npids, 1);
	assert_int_equal(cfg.pids[0], 4242);
	assert_string_equal(cfg.service_name, "checkout");
	assert_int_equal(cfg.nresource_attrs, 1);
	assert_string_equal(cfg.resource_attrs[0].key, "team");
	assert_string_equal(cfg.resource_attrs[0].value, "payments");
	assert_int_equal(cfg.exporter, TRACES_EXPORTER_CONSOLE);
	assert_string_equal(cfg.traces.url, "https://collector.example:4318/v1/traces");
	assert_int_equal(cfg.traces.nheaders, 1);
	assert_string_equal(cfg.traces.headers[0].key, "x-api-key");
	assert_string_equal(cfg.traces.headers[0].value, "k1");
	assert_int_equal(cfg.traces.timeout_ms, 2500);
	assert_int_equal(cfg.bsp_schedule_delay_ms, 250);
	assert_int_equal(cfg.bsp_max_queue, 100);
	assert_int_equal(cfg.bsp_max_batch, 10);
	assert_int_equal(cfg.log_level, LOG_DEBUG);
	config__free(&cfg);

	env = ENV("OTEL_GO_AUTO_TARGET_EXE=/srv/app", "OTEL_TRACES_EXPORTER=none",
		  "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT=http://127.0.0.1:9999/custom/path",
		  "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL=http/protobuf",
		  "OTEL_EXPORTER_OTLP_TRACES_HEADERS=a=b",
		  "OTEL_EXPORTER_OTLP_TRACES_TIMEOUT=700", "OTEL_LOG_LEVEL=error");
	assert_int_equal(parse(&cfg, env, NO_ARGS), 0);
	assert_int_equal(cfg.nexes, 1);
	assert_string_equal(cfg.exes[0], "/srv/app");
	assert_int_equal(cfg.npids, 0);
	assert_int_equal(cfg.exporter, TRACES_EXPORTER_NONE);
	assert_string_equal(cfg.traces.url, "http://127.0.0.1:9999/custom/path");
	assert_int_equal(cfg.traces.nheaders, 1);
	assert_string_equal(cfg.traces.headers[0].key, "a");
	assert_int_equal(cfg.traces.timeout_ms, 700);
	assert_int_equal(cfg.log_level, LOG_ERROR);
	config__free(&cfg);
}

/* The SDKs' rule: an empty variable is the same as an unset one. */
static void test_config__empty_variable_is_unset(void **state)
{
	char **env = ENV("OTEL_BSP_SCHEDULE_DELAY=", "OTEL_TRACES_EXPORTER=",
			 "OTEL_SERVICE_NAME=", "OTEL_EXPORTER_OTLP_ENDPOINT=");
	struct config cfg;

	(void)state;
	assert_int_equal(parse(&cfg, env, NO_ARGS), 0);
	assert_int_equal(cfg.bsp_schedule_delay_ms, 5000);
	assert_int_equal(cfg.exporter, TRACES_EXPORTER_OTLP);
	assert_null(cfg.service_name);
	assert_string_equal(cfg.traces.url, "http://localhost:4318/v1/traces");
	config__free(&cfg);
}

static void test_config__cli_options(void **state)
{
	struct config cfg;

	(void)state;
	assert_int_equal(parse(&cfg, NO_ENV, ARGS("--pid", "17", "-v")), 0);
	assert_int_equal(cfg.npids, 1);
	assert_int_equal(cfg.pids[0], 17);
	assert_true(cfg.verbose);
	assert_false(cfg.help);
	config__free(&cfg);

	assert_int_equal(parse(&cfg, NO_ENV, ARGS("--exe=/usr/local/bin/api", "--verbose", "-h",
						  "--version")),
			 0);
	assert_int_equal(cfg.nexes, 1);
	assert_string_equal(cfg.exes[0], "/usr/local/bin/api");
	assert_true(cfg.verbose);
	assert_true(cfg.help);
	assert_true(cfg.version);
	config__free(&cfg);

	assert_int_equal(parse(&cfg, NO_ENV, ARGS("--help")), 0);
	assert_true(cfg.help);
	config__free(&cfg);
}

static void test_config__cli_wins_over_env(void **state)
{
	char **env = ENV("OTEL_GO_AUTO_TARGET_PID=5", "OTEL_GO_AUTO_TARGET_EXE=/from/env");
	struct config cfg;

	(void)state;
	/* The command line's --pid hides the environment's exe, and the other way round. */
	assert_int_equal(parse(&cfg, env, ARGS("--pid=7")), 0);
	assert_int_equal(cfg.npids, 1);
	assert_int_equal(cfg.pids[0], 7);
	assert_int_equal(cfg.nexes, 0);
	config__free(&cfg);

	assert_int_equal(parse(&cfg, env, ARGS("--exe", "/from/cli")), 0);
	assert_int_equal(cfg.npids, 0);
	assert_int_equal(cfg.nexes, 1);
	assert_string_equal(cfg.exes[0], "/from/cli");
	config__free(&cfg);

	/* Both from the environment: two targets. */
	assert_int_equal(parse(&cfg, env, NO_ARGS), 0);
	assert_int_equal(cfg.npids, 1);
	assert_int_equal(cfg.pids[0], 5);
	assert_int_equal(cfg.nexes, 1);
	assert_string_equal(cfg.exes[0], "/from/env");
	config__free(&cfg);
}

/* --pid and --exe repeat: every target is kept once, up to CONFIG_MAX_TARGETS. */
static void test_config__several_targets(void **state)
{
	char *argv[2 * CONFIG_MAX_TARGETS + 4] = { "gospan" };
	char pids[CONFIG_MAX_TARGETS + 1][16];
	struct test_capture cap;
	struct config cfg;
	char *log;
	int i, argc = 1;

	(void)state;
	assert_int_equal(parse(&cfg, NO_ENV, ARGS("--pid", "10", "--exe", "/a", "--pid=11", "--exe",
						  "/b", "--pid", "10", "--exe", "/a")),
			 0);
	assert_int_equal(cfg.npids, 2);
	assert_int_equal(cfg.pids[0], 10);
	assert_int_equal(cfg.pids[1], 11);
	assert_int_equal(cfg.nexes, 2);
	assert_string_equal(cfg.exes[0], "/a");
	assert_string_equal(cfg.exes[1], "/b");
	config__free(&cfg);

	for (i = 0; i <= CONFIG_MAX_TARGETS; i++) {
		snprintf(pids[i], sizeof(pids[i]), "%d", 100 + i);
		argv[argc++] = "--pid";
		argv[argc++] = pids[i];
	}
	argv[argc] = NULL;
	capture_start(&cap);
	assert_int_equal(config__parse(&cfg, argc, argv, NO_ENV), -EINVAL);
	log = capture_end(&cap);
	assert_non_null(strstr(log, "more than 16 targets"));
	free(log);
}

static void test_config__bad_cli(void **state)
{
	(void)state;
	expect_invalid(NO_ENV, ARGS("--bogus"), "unknown option '--bogus'");
	expect_invalid(NO_ENV, ARGS("-x"), "unknown option '-x'");
	expect_invalid(NO_ENV, ARGS("1234"), "unexpected argument '1234'");
	expect_invalid(NO_ENV, ARGS("--pid"), "option '--pid' needs a value");
	expect_invalid(NO_ENV, ARGS("--verbose=yes"), "option '--verbose' takes no value");
	expect_invalid(NO_ENV, ARGS("--exe="), "invalid --exe '': empty path");
	expect_invalid(NO_ENV, ARGS("--pid", "abc"), "invalid --pid 'abc': not a number");
	expect_invalid(NO_ENV, ARGS("--pid", "0"), "invalid --pid '0': must be positive");
	expect_invalid(NO_ENV, ARGS("--pid", "-12"), "invalid --pid '-12': must be positive");
	expect_invalid(NO_ENV, ARGS("--pid", "99999999999"), "invalid --pid '99999999999': larger");
	expect_invalid(ENV("OTEL_GO_AUTO_TARGET_PID=1x"), NO_ARGS,
		       "invalid OTEL_GO_AUTO_TARGET_PID '1x': not a number");
}

/* Every numeric variable refuses what strtol alone would have let through. */
static void test_config__bad_numbers(void **state)
{
	static const char *const vars[] = {
		"OTEL_EXPORTER_OTLP_TIMEOUT", "OTEL_EXPORTER_OTLP_TRACES_TIMEOUT",
		"OTEL_BSP_SCHEDULE_DELAY",    "OTEL_BSP_MAX_QUEUE_SIZE",
		"OTEL_BSP_MAX_EXPORT_BATCH_SIZE",
	};
	static const struct {
		const char *val, *why;
	} bad[] = {
		{ "abc", "not a number" },
		{ "12abc", "not a number" },
		{ " 12", "not a number" },
		{ "12 ", "not a number" },
		{ "+12", "not a number" },
		{ "0x10", "not a number" },
		{ "1.5", "not a number" },
		{ "-", "not a number" },
		{ "0", "must be positive" },
		{ "-5", "must be positive" },
		{ "99999999999999999999999", "larger than" },
	};
	char var[128], want[160];
	size_t i, j;

	(void)state;
	for (i = 0; i < sizeof(vars) / sizeof(vars[0]); i++) {
		for (j = 0; j < sizeof(bad) / sizeof(bad[0]); j++) {
			snprintf(var, sizeof(var), "%s=%s", vars[i], bad[j].val);
			snprintf(want, sizeof(want), "invalid %s '%s': %s", vars[i], bad[j].val,
				 bad[j].why);
			expect_invalid(ENV(var), NO_ARGS, want);
		}
	}
	/* The exact wording the brief promises users. */
	expect_invalid(ENV("OTEL_BSP_SCHEDULE_DELAY=abc"), NO_ARGS,
		       "gospan: invalid OTEL_BSP_SCHEDULE_DELAY 'abc': not a number\n");
	/* Queue sizes have a ceiling: the queue is allocated whole. */
	expect_invalid(ENV("OTEL_BSP_MAX_QUEUE_SIZE=100000000"), NO_ARGS, "larger than");
}

static void test_config__exporter_values(void **state)
{
	struct config cfg;

	(void)state;
	assert_int_equal(parse(&cfg, ENV("OTEL_TRACES_EXPORTER=otlp"), NO_ARGS), 0);
	assert_int_equal(cfg.exporter, TRACES_EXPORTER_OTLP);
	config__free(&cfg);
	assert_int_equal(parse(&cfg, ENV("OTEL_TRACES_EXPORTER=console"), NO_ARGS), 0);
	assert_int_equal(cfg.exporter, TRACES_EXPORTER_CONSOLE);
	config__free(&cfg);
	assert_int_equal(parse(&cfg, ENV("OTEL_TRACES_EXPORTER=none"), NO_ARGS), 0);
	assert_int_equal(cfg.exporter, TRACES_EXPORTER_NONE);
	config__free(&cfg);
	expect_invalid(ENV("OTEL_TRACES_EXPORTER=jaeger"), NO_ARGS,
		       "invalid OTEL_TRACES_EXPORTER 'jaeger'");
	expect_invalid(ENV("OTEL_TRACES_EXPORTER=OTLP "), NO_ARGS,
		       "invalid OTEL_TRACES_EXPORTER 'OTLP '");
	expect_invalid(ENV("OTEL_EXPORTER_OTLP_PROTOCOL=grpc"), NO_ARGS,
		       "invalid OTEL_EXPORTER_OTLP_PROTOCOL 'grpc': gRPC is not supported");
	expect_invalid(ENV("OTEL_LOG_LEVEL=loud"), NO_ARGS, "invalid OTEL_LOG_LEVEL 'loud'");
}

static void expect_traces_url(char **envp, const char *want)
{
	struct config cfg;

	assert_int_equal(parse(&cfg, envp, NO_ARGS), 0);
	assert_string_equal(cfg.traces.url, want);
	config__free(&cfg);
}

static void test_config__endpoint_joining(void **state)
{
	(void)state;
	expect_traces_url(ENV("OTEL_EXPORTER_OTLP_ENDPOINT=http://otel:4318"),
			  "http://otel:4318/v1/traces");
	expect_traces_url(ENV("OTEL_EXPORTER_OTLP_ENDPOINT=http://otel:4318/"),
			  "http://otel:4318/v1/traces");
	expect_traces_url(ENV("OTEL_EXPORTER_OTLP_ENDPOINT=https://gw.example/otlp/"),
			  "https://gw.example/otlp/v1/traces");
	expect_traces_url(ENV("OTEL_EXPORTER_OTLP_ENDPOINT=http://[::1]:4318"),
			  "http://[::1]:4318/v1/traces");
	/* The traces endpoint is used as given, never appended to, and wins over the base. */
	expect_traces_url(ENV("OTEL_EXPORTER_OTLP_ENDPOINT=http://base:4318",
			      "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT=http://traces:4318/"),
			  "http://traces:4318/");
	expect_traces_url(ENV("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT=HTTPS://u@h:443/x?y=1"),
			  "HTTPS://u@h:443/x?y=1");
}

static void test_config__bad_urls(void **state)
{
	static const struct {
		const char *url, *why, *shown; /* SHOWN: as the message shows URL, when not as is */
	} bad[] = {
		{ "ftp://otel:4318", "not an http:// or https:// URL", NULL },
		{ "localhost:4318", "not an http:// or https:// URL", NULL },
		{ "http:/otel", "not an http:// or https:// URL", NULL },
		{ "http://", "no host in URL", NULL },
		{ "http:///v1/traces", "no host in URL", NULL },
		{ "http://:4318", "no host in URL", NULL },
		{ "http://user@:4318", "no host in URL", "http://REDACTED@:4318" },
		{ "http://otel:0", "bad port in URL", NULL },
		{ "http://otel:65536", "bad port in URL", NULL },
		{ "http://otel:43x8", "bad port in URL", NULL },
		{ "http://otel:", "bad port in URL", NULL },
		{ "http://[]:4318", "bad IPv6 address in URL", NULL },
		{ "http://[::1", "bad IPv6 address in URL", NULL },
		{ "http://otel 4318", "space or control character in URL", NULL },
	};
	char var[160], want[200];
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		snprintf(var, sizeof(var), "OTEL_EXPORTER_OTLP_ENDPOINT=%s", bad[i].url);
		snprintf(want, sizeof(want), "invalid OTEL_EXPORTER_OTLP_ENDPOINT '%s': %s",
			 bad[i].shown ? bad[i].shown : bad[i].url, bad[i].why);
		expect_invalid(ENV(var), NO_ARGS, want);
		snprintf(var, sizeof(var), "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT=%s", bad[i].url);
		expect_invalid(ENV(var), NO_ARGS, "invalid OTEL_EXPORTER_OTLP_TRACES_ENDPOINT");
	}
}

static const char *header(const struct config *cfg, const char *key)
{
	size_t i;

	for (i = 0; i < cfg->traces.nheaders; i++)
		if (!strcmp(cfg->traces.headers[i].key, key))
			return cfg->traces.headers[i].value;
	return NULL;
}

static void test_config__headers_decoding(void **state)
{
	char **env = ENV("OTEL_EXPORTER_OTLP_HEADERS= Api-Key = s3cr%65t%20v%2Calue ,"
			 "x-tenant=a%3Db,,Empty=,x-tenant=last");
	struct config cfg;

	(void)state;
	assert_int_equal(parse(&cfg, env, NO_ARGS), 0);
	/* Trimmed, percent-decoded, empty entries skipped, a repeated name keeps its last value. */
	assert_int_equal(cfg.traces.nheaders, 3);
	assert_string_equal(header(&cfg, "Api-Key"), "s3cret v,alue");
	assert_string_equal(header(&cfg, "x-tenant"), "last");
	assert_string_equal(header(&cfg, "Empty"), "");
	config__free(&cfg);
}

static void test_config__traces_headers_override(void **state)
{
	char **env = ENV("OTEL_EXPORTER_OTLP_HEADERS=Authorization=Basic%20AAA,x-org=1",
			 "OTEL_EXPORTER_OTLP_TRACES_HEADERS=authorization=Bearer%20BBB,x-only=2");
	struct config cfg;

	(void)state;
	assert_int_equal(parse(&cfg, env, NO_ARGS), 0);
	/* Header names compare case-insensitively, so "authorization" replaces "Authorization". */
	assert_int_equal(cfg.traces.nheaders, 3);
	assert_null(header(&cfg, "Authorization"));
	assert_string_equal(header(&cfg, "authorization"), "Bearer BBB");
	assert_string_equal(header(&cfg, "x-org"), "1");
	assert_string_equal(header(&cfg, "x-only"), "2");
	config__free(&cfg);
}

static void test_config__bad_headers(void **state)
{
	(void)state;
	/* Refused, and the message never repeats the value: it may be an API key. */
	expect_invalid_secret(ENV("OTEL_EXPORTER_OTLP_HEADERS=api-key"), NO_ARGS,
			      "invalid OTEL_EXPORTER_OTLP_HEADERS '(hidden)': expected key=value",
			      "api-key");
	expect_invalid_secret(ENV("OTEL_EXPORTER_OTLP_HEADERS==topsecret"), NO_ARGS, "empty key",
			      "topsecret");
	expect_invalid_secret(ENV("OTEL_EXPORTER_OTLP_HEADERS=k=topsecret%zz"), NO_ARGS,
			      "bad percent-encoding", "topsecret");
	expect_invalid_secret(ENV("OTEL_EXPORTER_OTLP_HEADERS=k=topsecret%4"), NO_ARGS,
			      "bad percent-encoding", "topsecret");
	expect_invalid_secret(ENV("OTEL_EXPORTER_OTLP_HEADERS=k=top%00secret"), NO_ARGS,
			      "bad percent-encoding", "secret");
	expect_invalid_secret(ENV("OTEL_EXPORTER_OTLP_TRACES_HEADERS=bad key=topsecret"), NO_ARGS,
			      "header name is not an HTTP token", "topsecret");
	expect_invalid_secret(ENV("OTEL_EXPORTER_OTLP_HEADERS=k=topsecret%0D%0AX-Evil:%201"),
			      NO_ARGS, "value of header 'k' holds a control character",
			      "topsecret");
}

static void test_config__resource_attributes(void **state)
{
	char **env = ENV("OTEL_RESOURCE_ATTRIBUTES=service.version=1.2.3, deployment.environment="
			 "prod%20eu,,k=a%3Db%2Cc,service.version=1.2.4");
	struct config cfg;

	(void)state;
	assert_int_equal(parse(&cfg, env, NO_ARGS), 0);
	assert_int_equal(cfg.nresource_attrs, 3);
	assert_string_equal(cfg.resource_attrs[0].key, "service.version");
	assert_string_equal(cfg.resource_attrs[0].value, "1.2.4");
	assert_string_equal(cfg.resource_attrs[1].key, "deployment.environment");
	assert_string_equal(cfg.resource_attrs[1].value, "prod eu");
	assert_string_equal(cfg.resource_attrs[2].key, "k");
	assert_string_equal(cfg.resource_attrs[2].value, "a=b,c");
	config__free(&cfg);

	expect_invalid(ENV("OTEL_RESOURCE_ATTRIBUTES=a=1,novalue"), NO_ARGS,
		       "invalid OTEL_RESOURCE_ATTRIBUTES 'a=1,novalue': expected key=value pairs");
	expect_invalid(ENV("OTEL_RESOURCE_ATTRIBUTES= =x"), NO_ARGS, "empty key");
	expect_invalid(ENV("OTEL_RESOURCE_ATTRIBUTES=k=50%"), NO_ARGS,
		       "invalid OTEL_RESOURCE_ATTRIBUTES 'k=50%': bad percent-encoding");
}

static void test_config__timeouts(void **state)
{
	struct config cfg;

	(void)state;
	assert_int_equal(parse(&cfg, ENV("OTEL_EXPORTER_OTLP_TIMEOUT=3000"), NO_ARGS), 0);
	assert_int_equal(cfg.traces.timeout_ms, 3000);
	config__free(&cfg);
	assert_int_equal(parse(&cfg,
			       ENV("OTEL_EXPORTER_OTLP_TIMEOUT=3000",
				   "OTEL_EXPORTER_OTLP_TRACES_TIMEOUT=1500"),
			       NO_ARGS),
			 0);
	assert_int_equal(cfg.traces.timeout_ms, 1500);
	config__free(&cfg);
}

static void test_config__batch_and_queue(void **state)
{
	struct config cfg;
	size_t len;
	char *out;
	FILE *f;

	(void)state;
	/* A small queue alone shrinks the default batch instead of refusing it. */
	assert_int_equal(parse(&cfg, ENV("OTEL_BSP_MAX_QUEUE_SIZE=100"), NO_ARGS), 0);
	assert_int_equal(cfg.bsp_max_queue, 100);
	assert_int_equal(cfg.bsp_max_batch, 100);
	f = open_memstream(&out, &len);
	assert_non_null(f);
	config__print_help(&cfg, f);
	assert_int_equal(fclose(f), 0);
	assert_non_null(strstr(out, "= 100 (capped at the queue size)  [default]"));
	free(out);
	config__free(&cfg);
	assert_int_equal(parse(&cfg,
			       ENV("OTEL_BSP_MAX_QUEUE_SIZE=100",
				   "OTEL_BSP_MAX_EXPORT_BATCH_SIZE=100"),
			       NO_ARGS),
			 0);
	assert_int_equal(cfg.bsp_max_batch, 100);
	config__free(&cfg);
	expect_invalid(ENV("OTEL_BSP_MAX_QUEUE_SIZE=100", "OTEL_BSP_MAX_EXPORT_BATCH_SIZE=101"),
		       NO_ARGS,
		       "invalid OTEL_BSP_MAX_EXPORT_BATCH_SIZE '101': larger than "
		       "OTEL_BSP_MAX_QUEUE_SIZE (100)");
	expect_invalid(ENV("OTEL_BSP_MAX_EXPORT_BATCH_SIZE=4096"), NO_ARGS,
		       "larger than OTEL_BSP_MAX_QUEUE_SIZE (2048)");
}

static void test_config__help_shows_values_and_sources(void **state)
{
	char **env = ENV("OTEL_EXPORTER_OTLP_HEADERS=api-key=hunter2",
			 "OTEL_BSP_SCHEDULE_DELAY=1234", "OTEL_GO_AUTO_TARGET_PID=99");
	struct config cfg;
	size_t len;
	char *out;
	FILE *f;

	(void)state;
	assert_int_equal(parse(&cfg, env, ARGS("--pid", "42")), 0);
	f = open_memstream(&out, &len);
	assert_non_null(f);
	config__print_help(&cfg, f);
	assert_int_equal(fclose(f), 0);

	assert_non_null(strstr(out, "usage: gospan"));
	assert_non_null(strstr(out, "--pid, OTEL_GO_AUTO_TARGET_PID\n"));
	assert_non_null(strstr(out, "= 42  [command line]"));
	assert_non_null(strstr(out, "OTEL_BSP_SCHEDULE_DELAY\n"));
	assert_non_null(strstr(out, "= 1234  [environment]"));
	assert_non_null(strstr(out, "= 2048  [default]"));
	assert_non_null(strstr(out, "= http://localhost:4318  [default]"));
	assert_non_null(strstr(out, "-v, --verbose"));
	assert_non_null(strstr(out, "= (set, hidden)  [environment]"));
	assert_null(strstr(out, "hunter2"));
	assert_non_null(strstr(out, "traces are sent to http://localhost:4318/v1/traces"));
	free(out);
	config__free(&cfg);
}

/* A scratch directory with three small files standing in for the PEM ones. */
struct tls_files {
	char dir[64], ca[96], cert[96], key[96];
};

static void tls_files_make(struct tls_files *t)
{
	const char *paths[3];
	FILE *f;
	int i;

	snprintf(t->dir, sizeof(t->dir), "/tmp/gospan-test-XXXXXX");
	assert_non_null(mkdtemp(t->dir));
	snprintf(t->ca, sizeof(t->ca), "%s/ca.pem", t->dir);
	snprintf(t->cert, sizeof(t->cert), "%s/cert.pem", t->dir);
	snprintf(t->key, sizeof(t->key), "%s/key.pem", t->dir);
	paths[0] = t->ca;
	paths[1] = t->cert;
	paths[2] = t->key;
	for (i = 0; i < 3; i++) {
		f = fopen(paths[i], "w");
		assert_non_null(f);
		assert_true(fputs("-----BEGIN CERTIFICATE-----\n", f) >= 0);
		/* gospan refuses a file others can write: not left to the umask. */
		assert_int_equal(fchmod(fileno(f), 0644), 0);
		assert_int_equal(fclose(f), 0);
	}
}

static void tls_files_remove(struct tls_files *t)
{
	unlink(t->ca);
	unlink(t->cert);
	unlink(t->key);
	rmdir(t->dir);
}

static void test_config__compression(void **state)
{
	struct config cfg;

	(void)state;
	assert_int_equal(parse(&cfg, NO_ENV, NO_ARGS), 0);
	assert_false(cfg.traces.gzip);
	config__free(&cfg);

	assert_int_equal(parse(&cfg, ENV("OTEL_EXPORTER_OTLP_COMPRESSION=gzip"), NO_ARGS), 0);
	assert_true(cfg.traces.gzip);
	config__free(&cfg);

	/* The traces variable wins, either way. */
	assert_int_equal(parse(&cfg,
			       ENV("OTEL_EXPORTER_OTLP_COMPRESSION=gzip",
				   "OTEL_EXPORTER_OTLP_TRACES_COMPRESSION=none"),
			       NO_ARGS),
			 0);
	assert_false(cfg.traces.gzip);
	config__free(&cfg);
	assert_int_equal(parse(&cfg, ENV("OTEL_EXPORTER_OTLP_TRACES_COMPRESSION=gzip"), NO_ARGS),
			 0);
	assert_true(cfg.traces.gzip);
	config__free(&cfg);

	expect_invalid(ENV("OTEL_EXPORTER_OTLP_COMPRESSION=zstd"), NO_ARGS,
		       "invalid OTEL_EXPORTER_OTLP_COMPRESSION 'zstd': expected gzip or none");
	expect_invalid(ENV("OTEL_EXPORTER_OTLP_TRACES_COMPRESSION=GZIP"), NO_ARGS,
		       "invalid OTEL_EXPORTER_OTLP_TRACES_COMPRESSION 'GZIP': expected gzip or "
		       "none");
}

static void test_config__tls_files(void **state)
{
	char ca[160], tca[160], cert[160], key[160], tkey[160], want[256];
	struct tls_files t;
	struct config cfg;

	(void)state;
	tls_files_make(&t);
	snprintf(ca, sizeof(ca), "OTEL_EXPORTER_OTLP_CERTIFICATE=%s", t.ca);
	snprintf(tca, sizeof(tca), "OTEL_EXPORTER_OTLP_TRACES_CERTIFICATE=%s", t.cert);
	snprintf(cert, sizeof(cert), "OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE=%s", t.cert);
	snprintf(key, sizeof(key), "OTEL_EXPORTER_OTLP_CLIENT_KEY=%s", t.key);
	snprintf(tkey, sizeof(tkey), "OTEL_EXPORTER_OTLP_TRACES_CLIENT_KEY=%s", t.ca);

	assert_int_equal(parse(&cfg, NO_ENV, NO_ARGS), 0);
	assert_null(cfg.traces.ca_file);
	assert_null(cfg.traces.client_cert);
	assert_null(cfg.traces.client_key);
	config__free(&cfg);

	assert_int_equal(parse(&cfg, ENV(ca, cert, key), NO_ARGS), 0);
	assert_string_equal(cfg.traces.ca_file, t.ca);
	assert_string_equal(cfg.traces.client_cert, t.cert);
	assert_string_equal(cfg.traces.client_key, t.key);
	config__free(&cfg);

	/* _TRACES_ variables win over the general ones. */
	assert_int_equal(parse(&cfg, ENV(ca, tca, cert, key, tkey), NO_ARGS), 0);
	assert_string_equal(cfg.traces.ca_file, t.cert);
	assert_string_equal(cfg.traces.client_key, t.ca);
	config__free(&cfg);

	/* A key alone has no certificate to go with. */
	snprintf(tkey, sizeof(tkey), "invalid OTEL_EXPORTER_OTLP_CLIENT_KEY '%s': no client", t.key);
	expect_invalid(ENV(key), NO_ARGS, tkey);

	/* A directory is not a certificate file. */
	snprintf(ca, sizeof(ca), "OTEL_EXPORTER_OTLP_CERTIFICATE=%s", t.dir);
	snprintf(tca, sizeof(tca), "invalid OTEL_EXPORTER_OTLP_CERTIFICATE '%s': not a regular file",
		 t.dir);
	expect_invalid(ENV(ca), NO_ARGS, tca);

	/* A CA that anyone could replace is no CA (the rule itself: test_trusted_file.c). */
	assert_int_equal(chmod(t.ca, 0666), 0);
	snprintf(ca, sizeof(ca), "OTEL_EXPORTER_OTLP_CERTIFICATE=%s", t.ca);
	snprintf(want, sizeof(want),
		 "invalid OTEL_EXPORTER_OTLP_CERTIFICATE '%s': writable by its group and any user "
		 "(mode 0666",
		 t.ca);
	expect_invalid(ENV(ca), NO_ARGS, want);
	tls_files_remove(&t);
}

static void test_config__tls_file_missing(void **state)
{
	static const char *const vars[] = {
		"OTEL_EXPORTER_OTLP_CERTIFICATE",
		"OTEL_EXPORTER_OTLP_TRACES_CERTIFICATE",
		"OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE",
		"OTEL_EXPORTER_OTLP_TRACES_CLIENT_CERTIFICATE",
		"OTEL_EXPORTER_OTLP_CLIENT_KEY",
		"OTEL_EXPORTER_OTLP_TRACES_CLIENT_KEY",
	};
	char var[160], want[200];
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(vars) / sizeof(vars[0]); i++) {
		snprintf(var, sizeof(var), "%s=/nonexistent/gospan/ca.pem", vars[i]);
		snprintf(want, sizeof(want),
			 "invalid %s '/nonexistent/gospan/ca.pem': No such file or directory",
			 vars[i]);
		expect_invalid(ENV(var), NO_ARGS, want);
	}
}

static void test_config__insecure(void **state)
{
	struct config cfg;

	(void)state;
	/* Accepted for compatibility with gRPC setups; http/protobuf goes by the URL scheme. */
	assert_int_equal(parse(&cfg,
			       ENV("OTEL_EXPORTER_OTLP_INSECURE=true",
				   "OTEL_EXPORTER_OTLP_TRACES_INSECURE=false",
				   "OTEL_EXPORTER_OTLP_ENDPOINT=https://collector:4318"),
			       NO_ARGS),
			 0);
	assert_string_equal(cfg.traces.url, "https://collector:4318/v1/traces");
	config__free(&cfg);
	expect_invalid(ENV("OTEL_EXPORTER_OTLP_INSECURE=yes"), NO_ARGS,
		       "invalid OTEL_EXPORTER_OTLP_INSECURE 'yes': expected true or false");
	expect_invalid(ENV("OTEL_EXPORTER_OTLP_TRACES_INSECURE=2"), NO_ARGS,
		       "invalid OTEL_EXPORTER_OTLP_TRACES_INSECURE '2': expected true or false");
}

/* URLs as messages show them: user info replaced, the rest as given. */
static void test_config__printable_url(void **state)
{
	static const char *const cases[][2] = {
		{ "http://u:pw@host:4318/v1/traces", "http://REDACTED@host:4318/v1/traces" },
		{ "https://user@h/p?q=a@b#f@g", "https://REDACTED@h/p?q=a@b#f@g" },
		{ "http://a@b:c@[::1]:1/x", "http://REDACTED@[::1]:1/x" },
		{ "http://host:4318/v1/traces?to=x@y", "http://host:4318/v1/traces?to=x@y" },
		{ "http://@host/", "http://REDACTED@host/" },
		{ "not a url @ all", "not a url @ all" },
	};
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char *shown = config__printable_url(cases[i][0]);

		assert_non_null(shown);
		assert_string_equal(shown, cases[i][1]);
		free(shown);
	}
	assert_null(config__printable_url(NULL));
}

/* ---- metrics settings ------------------------------------------------------------------- */

static const char *dest_header(const struct otlp_dest *d, const char *key)
{
	size_t i;

	for (i = 0; i < d->nheaders; i++)
		if (!strcmp(d->headers[i].key, key))
			return d->headers[i].value;
	return NULL;
}

static char *help_text(const struct config *cfg)
{
	size_t len;
	char *out;
	FILE *f;

	f = open_memstream(&out, &len);
	assert_non_null(f);
	config__print_help(cfg, f);
	assert_int_equal(fclose(f), 0);
	return out;
}

static void test_config__metrics_defaults(void **state)
{
	struct config cfg;
	char *out;

	(void)state;
	assert_int_equal(parse(&cfg, NO_ENV, NO_ARGS), 0);
	assert_int_equal(cfg.metrics_exporter, METRICS_EXPORTER_OTLP);
	assert_string_equal(cfg.metrics.url, "http://localhost:4318/v1/metrics");
	assert_int_equal(cfg.metrics.nheaders, 0);
	assert_int_equal(cfg.metrics.timeout_ms, 10000);
	assert_false(cfg.metrics.gzip);
	assert_false(cfg.metrics.json);
	assert_null(cfg.metrics.ca_file);
	assert_null(cfg.metrics.client_cert);
	assert_null(cfg.metrics.client_key);
	assert_int_equal(cfg.metric_interval_ms, 60000);
	assert_int_equal(cfg.metric_timeout_ms, 30000);
	assert_int_equal(cfg.temporality, METRICS_TEMPORALITY_CUMULATIVE);
	assert_int_equal(cfg.exemplar_filter, EXEMPLAR_FILTER_TRACE_BASED);
	assert_int_equal(cfg.metrics_cardinality, 2000);
	assert_string_equal(cfg.prometheus_host, "localhost");
	assert_int_equal(cfg.prometheus_port, 9464);
	out = help_text(&cfg);
	assert_non_null(strstr(out, "OTEL_METRICS_EXPORTER\n"));
	assert_non_null(strstr(out, "= 60000  [default]"));
	assert_non_null(strstr(out, "= cumulative  [default]"));
	assert_non_null(strstr(out, "= trace_based  [default]"));
	assert_non_null(strstr(out, "metrics are sent to http://localhost:4318/v1/metrics\n"));
	free(out);
	config__free(&cfg);
}

static void test_config__metrics_values(void **state)
{
	static const struct {
		const char *var;
		int want;
	} exporters[] = {
		{ "OTEL_METRICS_EXPORTER=otlp", METRICS_EXPORTER_OTLP },
		{ "OTEL_METRICS_EXPORTER=prometheus", METRICS_EXPORTER_PROMETHEUS },
		{ "OTEL_METRICS_EXPORTER=console", METRICS_EXPORTER_CONSOLE },
		{ "OTEL_METRICS_EXPORTER=none", METRICS_EXPORTER_NONE },
	}, temporalities[] = {
		{ "OTEL_EXPORTER_OTLP_METRICS_TEMPORALITY_PREFERENCE=cumulative",
		  METRICS_TEMPORALITY_CUMULATIVE },
		{ "OTEL_EXPORTER_OTLP_METRICS_TEMPORALITY_PREFERENCE=delta",
		  METRICS_TEMPORALITY_DELTA },
		/* The specification's temporality values are case-insensitive. */
		{ "OTEL_EXPORTER_OTLP_METRICS_TEMPORALITY_PREFERENCE=LowMemory",
		  METRICS_TEMPORALITY_LOWMEMORY },
		{ "OTEL_EXPORTER_OTLP_METRICS_TEMPORALITY_PREFERENCE=DELTA",
		  METRICS_TEMPORALITY_DELTA },
	}, filters[] = {
		{ "OTEL_METRICS_EXEMPLAR_FILTER=trace_based", EXEMPLAR_FILTER_TRACE_BASED },
		{ "OTEL_METRICS_EXEMPLAR_FILTER=always_on", EXEMPLAR_FILTER_ALWAYS_ON },
		{ "OTEL_METRICS_EXEMPLAR_FILTER=always_off", EXEMPLAR_FILTER_ALWAYS_OFF },
	};
	struct config cfg;
	size_t i;
	char *out;

	(void)state;
	for (i = 0; i < sizeof(exporters) / sizeof(exporters[0]); i++) {
		assert_int_equal(parse(&cfg, ENV((char *)exporters[i].var), NO_ARGS), 0);
		assert_int_equal(cfg.metrics_exporter, exporters[i].want);
		/* Only an OTLP exporter has a destination. */
		if (exporters[i].want == METRICS_EXPORTER_OTLP)
			assert_non_null(cfg.metrics.url);
		else
			assert_null(cfg.metrics.url);
		config__free(&cfg);
	}
	for (i = 0; i < sizeof(temporalities) / sizeof(temporalities[0]); i++) {
		assert_int_equal(parse(&cfg, ENV((char *)temporalities[i].var), NO_ARGS), 0);
		assert_int_equal(cfg.temporality, temporalities[i].want);
		config__free(&cfg);
	}
	for (i = 0; i < sizeof(filters) / sizeof(filters[0]); i++) {
		assert_int_equal(parse(&cfg, ENV((char *)filters[i].var), NO_ARGS), 0);
		assert_int_equal(cfg.exemplar_filter, filters[i].want);
		config__free(&cfg);
	}
	assert_int_equal(parse(&cfg,
			       ENV("OTEL_METRIC_EXPORT_INTERVAL=1500",
				   "OTEL_METRIC_EXPORT_TIMEOUT=700",
				   "GOSPAN_METRICS_CARDINALITY_LIMIT=2",
				   "OTEL_EXPORTER_PROMETHEUS_HOST=0.0.0.0",
				   "OTEL_EXPORTER_PROMETHEUS_PORT=9100",
				   "OTEL_METRICS_EXPORTER=prometheus"),
			       NO_ARGS),
			 0);
	assert_int_equal(cfg.metric_interval_ms, 1500);
	assert_int_equal(cfg.metric_timeout_ms, 700);
	assert_int_equal(cfg.metrics_cardinality, 2);
	assert_string_equal(cfg.prometheus_host, "0.0.0.0");
	assert_int_equal(cfg.prometheus_port, 9100);
	out = help_text(&cfg);
	assert_non_null(strstr(out, "metrics are served at http://0.0.0.0:9100/metrics\n"));
	assert_null(strstr(out, "metrics are sent to"));
	free(out);
	config__free(&cfg);
	assert_int_equal(parse(&cfg,
			       ENV("GOSPAN_METRICS_CARDINALITY_LIMIT=1048576",
				   "OTEL_EXPORTER_PROMETHEUS_HOST=::",
				   "OTEL_EXPORTER_PROMETHEUS_PORT=65535"),
			       NO_ARGS),
			 0);
	assert_int_equal(cfg.metrics_cardinality, 1048576);
	assert_string_equal(cfg.prometheus_host, "::");
	assert_int_equal(cfg.prometheus_port, 65535);
	config__free(&cfg);
}

/* The SDK specification reads enum values case-insensitively: so does gospan, for metrics. */
static void test_config__metrics_values_any_case(void **state)
{
	struct config cfg;

	(void)state;
	assert_int_equal(config__parse(&cfg, 1, (char *[]){ "gospan", NULL },
				       ENV("OTEL_METRICS_EXPORTER=Console",
					   "OTEL_EXPORTER_OTLP_METRICS_TEMPORALITY_PREFERENCE=DELTA",
					   "OTEL_METRICS_EXEMPLAR_FILTER=Always_Off")),
			 0);
	assert_int_equal(cfg.metrics_exporter, METRICS_EXPORTER_CONSOLE);
	assert_int_equal(cfg.temporality, METRICS_TEMPORALITY_DELTA);
	assert_int_equal(cfg.exemplar_filter, EXEMPLAR_FILTER_ALWAYS_OFF);
	config__free(&cfg);
}

static void test_config__bad_metrics_values(void **state)
{
	static const struct {
		const char *var, *want;
	} cases[] = {
		{ "OTEL_METRICS_EXPORTER=statsd",
		  "invalid OTEL_METRICS_EXPORTER 'statsd': expected otlp, prometheus, console or "
		  "none" },
		{ "OTEL_METRICS_EXPORTER=otlp,prometheus",
		  "invalid OTEL_METRICS_EXPORTER 'otlp,prometheus': one metrics exporter at a "
		  "time" },
		{ "OTEL_EXPORTER_OTLP_METRICS_TEMPORALITY_PREFERENCE=both",
		  "invalid OTEL_EXPORTER_OTLP_METRICS_TEMPORALITY_PREFERENCE 'both': expected "
		  "cumulative, delta or lowmemory" },
		{ "OTEL_METRICS_EXEMPLAR_FILTER=sometimes",
		  "invalid OTEL_METRICS_EXEMPLAR_FILTER 'sometimes': expected trace_based, "
		  "always_on or always_off" },
		{ "OTEL_METRIC_EXPORT_INTERVAL=0",
		  "invalid OTEL_METRIC_EXPORT_INTERVAL '0': must be positive" },
		{ "OTEL_METRIC_EXPORT_INTERVAL=60s",
		  "invalid OTEL_METRIC_EXPORT_INTERVAL '60s': not a number" },
		{ "OTEL_METRIC_EXPORT_TIMEOUT=-1",
		  "invalid OTEL_METRIC_EXPORT_TIMEOUT '-1': must be positive" },
		{ "OTEL_METRIC_EXPORT_TIMEOUT=99999999999",
		  "invalid OTEL_METRIC_EXPORT_TIMEOUT '99999999999': larger than 86400000" },
		{ "GOSPAN_METRICS_CARDINALITY_LIMIT=1",
		  "invalid GOSPAN_METRICS_CARDINALITY_LIMIT '1': less than 2" },
		{ "GOSPAN_METRICS_CARDINALITY_LIMIT=1048577",
		  "invalid GOSPAN_METRICS_CARDINALITY_LIMIT '1048577': larger than 1048576" },
		{ "GOSPAN_METRICS_CARDINALITY_LIMIT=many",
		  "invalid GOSPAN_METRICS_CARDINALITY_LIMIT 'many': not a number" },
		{ "OTEL_EXPORTER_PROMETHEUS_PORT=0",
		  "invalid OTEL_EXPORTER_PROMETHEUS_PORT '0': must be positive" },
		{ "OTEL_EXPORTER_PROMETHEUS_PORT=65536",
		  "invalid OTEL_EXPORTER_PROMETHEUS_PORT '65536': larger than 65535" },
		{ "OTEL_EXPORTER_PROMETHEUS_HOST=my host",
		  "invalid OTEL_EXPORTER_PROMETHEUS_HOST 'my host': expected a host name or an IP "
		  "address" },
		{ "OTEL_EXPORTER_PROMETHEUS_HOST=http://localhost",
		  "invalid OTEL_EXPORTER_PROMETHEUS_HOST 'http://localhost'" },
		/* The port has a variable of its own: "host:port" would never bind. */
		{ "OTEL_EXPORTER_PROMETHEUS_HOST=localhost:9464",
		  "invalid OTEL_EXPORTER_PROMETHEUS_HOST 'localhost:9464': expected a host name or "
		  "an IP address without a port (the port is OTEL_EXPORTER_PROMETHEUS_PORT)" },
		{ "OTEL_EXPORTER_PROMETHEUS_HOST=[::1]:9464",
		  "invalid OTEL_EXPORTER_PROMETHEUS_HOST '[::1]:9464': expected a host name or an "
		  "IP address without a port" },
		{ "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT=ftp://m:21/",
		  "invalid OTEL_EXPORTER_OTLP_METRICS_ENDPOINT 'ftp://m:21/': not an http:// or "
		  "https:// URL" },
		{ "OTEL_EXPORTER_OTLP_METRICS_PROTOCOL=grpc",
		  "invalid OTEL_EXPORTER_OTLP_METRICS_PROTOCOL 'grpc': gRPC is not supported" },
		{ "OTEL_EXPORTER_OTLP_METRICS_COMPRESSION=zstd",
		  "invalid OTEL_EXPORTER_OTLP_METRICS_COMPRESSION 'zstd': expected gzip or none" },
		{ "OTEL_EXPORTER_OTLP_METRICS_TIMEOUT=0",
		  "invalid OTEL_EXPORTER_OTLP_METRICS_TIMEOUT '0': must be positive" },
		{ "OTEL_EXPORTER_OTLP_METRICS_INSECURE=maybe",
		  "invalid OTEL_EXPORTER_OTLP_METRICS_INSECURE 'maybe': expected true or false" },
	};
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		expect_invalid(ENV((char *)cases[i].var), NO_ARGS, cases[i].want);
	expect_invalid_secret(ENV("OTEL_EXPORTER_OTLP_METRICS_HEADERS=api-key"), NO_ARGS,
			      "invalid OTEL_EXPORTER_OTLP_METRICS_HEADERS '(hidden)': expected "
			      "key=value",
			      "api-key");
}

/* Each _METRICS_ setting overrides the general one for metrics, and leaves traces alone. */
static void test_config__metrics_overrides(void **state)
{
	struct config cfg;

	(void)state;
	/* The general endpoint is a base: /v1/metrics is appended, a trailing slash dropped. */
	assert_int_equal(parse(&cfg, ENV("OTEL_EXPORTER_OTLP_ENDPOINT=http://x:4318/"), NO_ARGS),
			 0);
	assert_string_equal(cfg.metrics.url, "http://x:4318/v1/metrics");
	assert_string_equal(cfg.traces.url, "http://x:4318/v1/traces");
	config__free(&cfg);
	assert_int_equal(parse(&cfg, ENV("OTEL_EXPORTER_OTLP_ENDPOINT=https://gw/otlp"), NO_ARGS),
			 0);
	assert_string_equal(cfg.metrics.url, "https://gw/otlp/v1/metrics");
	config__free(&cfg);

	/* The metrics endpoint is used as given; the traces one does not touch metrics. */
	assert_int_equal(parse(&cfg,
			       ENV("OTEL_EXPORTER_OTLP_ENDPOINT=http://base:4318",
				   "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT=http://m:9090/ingest/",
				   "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT=http://t:4318/t"),
			       NO_ARGS),
			 0);
	assert_string_equal(cfg.metrics.url, "http://m:9090/ingest/");
	assert_string_equal(cfg.traces.url, "http://t:4318/t");
	config__free(&cfg);
	assert_int_equal(parse(&cfg, ENV("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT=http://t:1/t"),
			       NO_ARGS),
			 0);
	assert_string_equal(cfg.metrics.url, "http://localhost:4318/v1/metrics");
	config__free(&cfg);

	/* Headers: merged by name, case-insensitively, each signal with its own. */
	assert_int_equal(parse(&cfg,
			       ENV("OTEL_EXPORTER_OTLP_HEADERS=Api-Key=general,x-org=1",
				   "OTEL_EXPORTER_OTLP_METRICS_HEADERS=API-KEY=metrics,x-m=2",
				   "OTEL_EXPORTER_OTLP_TRACES_HEADERS=api-key=traces"),
			       NO_ARGS),
			 0);
	assert_int_equal(cfg.metrics.nheaders, 3);
	assert_null(dest_header(&cfg.metrics, "Api-Key"));
	assert_string_equal(dest_header(&cfg.metrics, "API-KEY"), "metrics");
	assert_string_equal(dest_header(&cfg.metrics, "x-org"), "1");
	assert_string_equal(dest_header(&cfg.metrics, "x-m"), "2");
	assert_int_equal(cfg.traces.nheaders, 2);
	assert_string_equal(dest_header(&cfg.traces, "api-key"), "traces");
	assert_string_equal(dest_header(&cfg.traces, "x-org"), "1");
	assert_null(dest_header(&cfg.traces, "x-m"));
	config__free(&cfg);

	/* Timeout, compression, protocol: the signal's own wins, either way. */
	assert_int_equal(parse(&cfg,
			       ENV("OTEL_EXPORTER_OTLP_TIMEOUT=2000",
				   "OTEL_EXPORTER_OTLP_METRICS_TIMEOUT=500",
				   "OTEL_EXPORTER_OTLP_COMPRESSION=gzip",
				   "OTEL_EXPORTER_OTLP_METRICS_COMPRESSION=none",
				   "OTEL_EXPORTER_OTLP_PROTOCOL=http/json",
				   "OTEL_EXPORTER_OTLP_METRICS_PROTOCOL=http/protobuf"),
			       NO_ARGS),
			 0);
	assert_int_equal(cfg.metrics.timeout_ms, 500);
	assert_int_equal(cfg.traces.timeout_ms, 2000);
	assert_false(cfg.metrics.gzip);
	assert_true(cfg.traces.gzip);
	assert_false(cfg.metrics.json);
	assert_true(cfg.traces.json);
	config__free(&cfg);
	assert_int_equal(parse(&cfg,
			       ENV("OTEL_EXPORTER_OTLP_TRACES_TIMEOUT=700",
				   "OTEL_EXPORTER_OTLP_METRICS_COMPRESSION=gzip",
				   "OTEL_EXPORTER_OTLP_METRICS_PROTOCOL=http/json",
				   "OTEL_EXPORTER_OTLP_TRACES_COMPRESSION=none"),
			       NO_ARGS),
			 0);
	assert_int_equal(cfg.metrics.timeout_ms, 10000);
	assert_int_equal(cfg.traces.timeout_ms, 700);
	assert_true(cfg.metrics.gzip);
	assert_false(cfg.traces.gzip);
	assert_true(cfg.metrics.json);
	assert_false(cfg.traces.json);
	config__free(&cfg);
}

static void test_config__metrics_tls_files(void **state)
{
	char ca[160], mca[160], cert[160], mcert[160], mkey[160], tkey[160], want[256];
	struct tls_files t;
	struct config cfg;

	(void)state;
	tls_files_make(&t);
	snprintf(ca, sizeof(ca), "OTEL_EXPORTER_OTLP_CERTIFICATE=%s", t.ca);
	snprintf(mca, sizeof(mca), "OTEL_EXPORTER_OTLP_METRICS_CERTIFICATE=%s", t.cert);
	snprintf(cert, sizeof(cert), "OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE=%s", t.cert);
	snprintf(mcert, sizeof(mcert), "OTEL_EXPORTER_OTLP_METRICS_CLIENT_CERTIFICATE=%s", t.ca);
	snprintf(mkey, sizeof(mkey), "OTEL_EXPORTER_OTLP_METRICS_CLIENT_KEY=%s", t.key);
	snprintf(tkey, sizeof(tkey), "OTEL_EXPORTER_OTLP_TRACES_CLIENT_KEY=%s", t.key);

	/* The general files go to both signals. */
	assert_int_equal(parse(&cfg, ENV(ca), NO_ARGS), 0);
	assert_string_equal(cfg.metrics.ca_file, t.ca);
	assert_string_equal(cfg.traces.ca_file, t.ca);
	config__free(&cfg);

	/* The metrics ones to metrics only. */
	assert_int_equal(parse(&cfg, ENV(ca, mca, mcert, mkey), NO_ARGS), 0);
	assert_string_equal(cfg.metrics.ca_file, t.cert);
	assert_string_equal(cfg.metrics.client_cert, t.ca);
	assert_string_equal(cfg.metrics.client_key, t.key);
	assert_string_equal(cfg.traces.ca_file, t.ca);
	assert_null(cfg.traces.client_cert);
	assert_null(cfg.traces.client_key);
	config__free(&cfg);

	/* A metrics key with the general certificate is a pair; traces have neither. */
	assert_int_equal(parse(&cfg, ENV(cert, mkey), NO_ARGS), 0);
	assert_string_equal(cfg.metrics.client_cert, t.cert);
	assert_string_equal(cfg.metrics.client_key, t.key);
	assert_string_equal(cfg.traces.client_cert, t.cert);
	assert_null(cfg.traces.client_key);
	config__free(&cfg);

	/* A key alone, named by the variable that set it. */
	snprintf(want, sizeof(want),
		 "invalid OTEL_EXPORTER_OTLP_METRICS_CLIENT_KEY '%s': no client certificate",
		 t.key);
	expect_invalid(ENV(mkey), NO_ARGS, want);
	/* The traces key alone is the traces' problem, whatever metrics have. */
	snprintf(want, sizeof(want),
		 "invalid OTEL_EXPORTER_OTLP_TRACES_CLIENT_KEY '%s': no client certificate", t.key);
	expect_invalid(ENV(tkey, mcert), NO_ARGS, want);
	/* Metrics not sent over OTLP: their destination is not made, nor checked. */
	assert_int_equal(parse(&cfg, ENV(mkey, "OTEL_METRICS_EXPORTER=none"), NO_ARGS), 0);
	assert_null(cfg.metrics.url);
	assert_null(cfg.metrics.client_key);
	config__free(&cfg);

	snprintf(mca, sizeof(mca), "OTEL_EXPORTER_OTLP_METRICS_CERTIFICATE=%s/none.pem", t.dir);
	snprintf(want, sizeof(want),
		 "invalid OTEL_EXPORTER_OTLP_METRICS_CERTIFICATE '%s/none.pem': No such file",
		 t.dir);
	expect_invalid(ENV(mca), NO_ARGS, want);
	tls_files_remove(&t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_config__defaults),
		cmocka_unit_test(test_config__every_variable),
		cmocka_unit_test(test_config__empty_variable_is_unset),
		cmocka_unit_test(test_config__cli_options),
		cmocka_unit_test(test_config__cli_wins_over_env),
		cmocka_unit_test(test_config__several_targets),
		cmocka_unit_test(test_config__bad_cli),
		cmocka_unit_test(test_config__bad_numbers),
		cmocka_unit_test(test_config__exporter_values),
		cmocka_unit_test(test_config__endpoint_joining),
		cmocka_unit_test(test_config__bad_urls),
		cmocka_unit_test(test_config__headers_decoding),
		cmocka_unit_test(test_config__traces_headers_override),
		cmocka_unit_test(test_config__bad_headers),
		cmocka_unit_test(test_config__resource_attributes),
		cmocka_unit_test(test_config__timeouts),
		cmocka_unit_test(test_config__batch_and_queue),
		cmocka_unit_test(test_config__help_shows_values_and_sources),
		cmocka_unit_test(test_config__compression),
		cmocka_unit_test(test_config__tls_files),
		cmocka_unit_test(test_config__tls_file_missing),
		cmocka_unit_test(test_config__insecure),
		cmocka_unit_test(test_config__printable_url),
		cmocka_unit_test(test_config__metrics_defaults),
		cmocka_unit_test(test_config__metrics_values),
		cmocka_unit_test(test_config__bad_metrics_values),
		cmocka_unit_test(test_config__metrics_values_any_case),
		cmocka_unit_test(test_config__metrics_overrides),
		cmocka_unit_test(test_config__metrics_tls_files),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
