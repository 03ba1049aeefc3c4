// SPDX-License-Identifier: MIT
/*
 * Unit tests for dbspan.c: what a data store call's record becomes. The records are built here
 * as db.bpf.c fills them (runtime addresses, the load bias taken off by dbspan), against a
 * db_target whose method tables are made by hand: which driver a method names, which Go type an
 * Error method is of.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "capture/dbspan.h"
#include "events.h"
#include "model/semconv.h"
#include "model/span.h"
#include "analysis/target.h"

#define BIAS 0x10000
#define PQ_QUERY 0x401000 /* github.com/lib/pq.(*conn).QueryContext */
#define SQLITE_QUERY 0x402000
#define PQ_ERROR 0x403000      /* github.com/lib/pq.(*Error).Error */
#define PGX_PGERROR 0x404000   /* *pgconn.PgError */
#define PGX_PREPARE 0x405000   /* *pgconn.PrepareError */
#define REDIS_ERROR 0x406000   /* proto.RedisError */
#define ERROR_STRING 0x407000  /* *errors.errorString */
#define MYSQL_QUERY 0x408000   /* github.com/go-sql-driver/mysql.(*mysqlConn).QueryContext */
#define MYSQL_ERROR 0x409000   /* *mysql.MySQLError */

static struct db_method drivers[] = { { PQ_QUERY, "postgresql" },
				      { SQLITE_QUERY, "sqlite" },
				      { MYSQL_QUERY, "mysql" } };
static struct db_method errors[] = {
	{ PQ_ERROR, "*pq.Error" },	      { PGX_PGERROR, "*pgconn.PgError" },
	{ PGX_PREPARE, "*pgconn.PrepareError" }, { REDIS_ERROR, "proto.RedisError" },
	{ ERROR_STRING, "*errors.errorString" }, { MYSQL_ERROR, "*mysql.MySQLError" },
};
static struct db_target target = { .drivers = drivers, .ndrivers = 3, .errors = errors, .nerrors = 6 };

static void set_str(char *dst, size_t cap, uint32_t *len, const char *s)
{
	size_t n = strlen(s);

	memcpy(dst, s, n < cap ? n : cap);
	*len = (uint32_t)n;
}

static struct db_call *sql_call(const char *query, uint64_t driver)
{
	struct db_call *e = calloc(1, sizeof(*e));

	assert_non_null(e);
	e->hdr.type = EVENT_DB_CALL;
	e->client = DB_CLIENT_SQL;
	e->driver_fn = driver ? driver + BIAS : 0;
	set_str(e->query, sizeof(e->query), &e->query_len, query);
	return e;
}

static void set_err(struct db_call *e, uint64_t fn, const char *const *strs, size_t n)
{
	size_t i;
	uint32_t len;

	e->err_itab = 0x7000;
	e->err_fn = fn + BIAS;
	for (i = 0; i < n; i++) {
		set_str(e->err[i], MAX_DB_ERROR_LEN, &len, strs[i]);
		e->err_lens[i] = (uint16_t)len;
	}
}

static const char *str_attr(const struct span *s, const char *key)
{
	const struct attr *a = span__get(s, key);

	return a ? a->s : NULL;
}

static struct span *fill(const struct db_call *e, enum db_query_text mode)
{
	struct span *s = span__alloc();

	assert_non_null(s);
	dbspan__fill(s, e, &target, BIAS, mode);
	return s;
}

static void test_dbspan__sql_sanitized_by_default(void **state)
{
	struct db_call *e = sql_call("UPDATE users SET password = 'hunter2' WHERE id = 42", PQ_QUERY);
	struct span *s = fill(e, DB_QUERY_TEXT_SANITIZED);

	(void)state;
	assert_string_equal(s->name, "UPDATE users");
	assert_string_equal(str_attr(s, SC_DB_SYSTEM_NAME), "postgresql");
	assert_string_equal(str_attr(s, SC_DB_OPERATION_NAME), "UPDATE");
	assert_string_equal(str_attr(s, SC_DB_COLLECTION_NAME), "users");
	assert_string_equal(str_attr(s, SC_DB_QUERY_SUMMARY), "UPDATE users");
	assert_null(span__get(s, SC_DB_STORED_PROCEDURE_NAME));
	assert_string_equal(str_attr(s, SC_DB_QUERY_TEXT),
			    "UPDATE users SET password = ? WHERE id = ?");
	assert_int_equal(s->status, SPAN_STATUS_UNSET);
	assert_null(span__get(s, GOSPAN_TRUNCATED));
	span__free(s);
	s = fill(e, DB_QUERY_TEXT_RAW);
	assert_string_equal(str_attr(s, SC_DB_QUERY_TEXT),
			    "UPDATE users SET password = 'hunter2' WHERE id = 42");
	span__free(s);
	s = fill(e, DB_QUERY_TEXT_NONE);
	assert_null(span__get(s, SC_DB_QUERY_TEXT));
	assert_string_equal(s->name, "UPDATE users");
	span__free(s);
	free(e);
}

static void test_dbspan__system_from_the_driver(void **state)
{
	struct db_call *e = sql_call("SELECT 1", SQLITE_QUERY);
	struct span *s = fill(e, DB_QUERY_TEXT_SANITIZED);

	(void)state;
	assert_string_equal(str_attr(s, SC_DB_SYSTEM_NAME), "sqlite");
	/* no table: the operation alone */
	assert_string_equal(s->name, "SELECT");
	assert_string_equal(str_attr(s, SC_DB_QUERY_SUMMARY), "SELECT");
	assert_null(span__get(s, SC_DB_COLLECTION_NAME));
	span__free(s);
	/* a driver gospan does not know, or none seen */
	e->driver_fn = 0x999999 + BIAS;
	s = fill(e, DB_QUERY_TEXT_SANITIZED);
	assert_string_equal(str_attr(s, SC_DB_SYSTEM_NAME), "other_sql");
	span__free(s);
	free(e);
}

static void test_dbspan__cut_query_is_marked_and_leaks_nothing(void **state)
{
	char q[MAX_DB_QUERY_LEN + 100];
	struct db_call *e;
	struct span *s;

	(void)state;
	memset(q, ' ', sizeof(q));
	memcpy(q, "SELECT * FROM t WHERE a = 1", 27);
	/* a string literal the capture bound cuts: its head must not go out */
	memcpy(q + MAX_DB_QUERY_LEN - 10, "'topsecret-and-more'", 20);
	q[sizeof(q) - 1] = '\0';
	e = sql_call(q, PQ_QUERY);
	s = fill(e, DB_QUERY_TEXT_SANITIZED);
	assert_null(strstr(str_attr(s, SC_DB_QUERY_TEXT), "topsec"));
	assert_non_null(strstr(str_attr(s, GOSPAN_TRUNCATED), SC_DB_QUERY_TEXT));
	span__free(s);
	free(e);
}

static void test_dbspan__postgresql_error_codes(void **state)
{
	static const char *const pq[] = { "ERROR", "42601", "syntax error at or near \"SELEC\"" };
	/* pgx: Severity, SeverityUnlocalized, Code, Message; wrapped in a PrepareError */
	static const char *const pgx[] = { "ERROR", "ERROR", "42P01", "relation does not exist" };
	struct db_call *e = sql_call("SELEC 1", PQ_QUERY);
	struct span *s;
	uint32_t len;
	size_t i;

	(void)state;
	set_err(e, PQ_ERROR, pq, 3);
	s = fill(e, DB_QUERY_TEXT_SANITIZED);
	assert_int_equal(s->status, SPAN_STATUS_ERROR);
	assert_string_equal(str_attr(s, SC_ERROR_TYPE), "42601");
	assert_string_equal(str_attr(s, SC_DB_RESPONSE_STATUS_CODE), "42601");
	assert_null(s->status_msg); /* a message may quote values */
	span__free(s);
	s = fill(e, DB_QUERY_TEXT_RAW);
	assert_string_equal(s->status_msg, "syntax error at or near \"SELEC\"");
	span__free(s);

	memset(e->err_lens, 0, sizeof(e->err_lens));
	e->err_fn = PGX_PREPARE + BIAS; /* its own strings are none: its first words an error */
	e->inner_fn = PGX_PGERROR + BIAS;
	for (i = 0; i < 4; i++) {
		set_str(e->inner[i], MAX_DB_ERROR_LEN, &len, pgx[i]);
		e->inner_lens[i] = (uint16_t)len;
	}
	s = fill(e, DB_QUERY_TEXT_SANITIZED);
	assert_string_equal(str_attr(s, SC_ERROR_TYPE), "42P01");
	span__free(s);
	free(e);
}

static void test_dbspan__other_errors_by_go_type(void **state)
{
	static const char *const canceled[] = { "context canceled" };
	struct db_call *e = sql_call("SELECT pg_sleep(5)", PQ_QUERY);
	struct span *s;

	(void)state;
	set_err(e, ERROR_STRING, canceled, 1);
	s = fill(e, DB_QUERY_TEXT_SANITIZED);
	assert_int_equal(s->status, SPAN_STATUS_ERROR);
	assert_string_equal(str_attr(s, SC_ERROR_TYPE), "*errors.errorString");
	assert_null(span__get(s, SC_DB_RESPONSE_STATUS_CODE));
	span__free(s);
	s = fill(e, DB_QUERY_TEXT_RAW);
	assert_string_equal(s->status_msg, "context canceled");
	span__free(s);
	/* an error whose type the binary does not name */
	e->err_fn = 0x123456 + BIAS;
	s = fill(e, DB_QUERY_TEXT_SANITIZED);
	assert_string_equal(str_attr(s, SC_ERROR_TYPE), "_OTHER");
	span__free(s);
	free(e);
}

/*
 * go-sql-driver/mysql's *MySQLError: its Number (the value's first two bytes, then SQLSTATE's
 * five from v1.7) is db.response.status_code and error.type, as the conventions' MySQL page
 * says; its Message (the string at the value's second word) only with the raw setting.
 */
static void test_dbspan__mysql_error_number(void **state)
{
	struct db_call *e = sql_call("SELEC 1", MYSQL_QUERY);
	struct span *s;
	uint32_t len;

	(void)state;
	e->err_itab = 0x7000;
	e->err_fn = MYSQL_ERROR + BIAS;
	/* 1064, then "42000" as the bytes after it */
	e->err_head = 1064 | (uint64_t)'4' << 16 | (uint64_t)'2' << 24 | (uint64_t)'0' << 32 |
		      (uint64_t)'0' << 40 | (uint64_t)'0' << 48;
	set_str(e->err8, MAX_DB_ERROR_LEN, &len, "You have an error in your SQL syntax");
	e->err_len8 = (uint16_t)len;
	s = fill(e, DB_QUERY_TEXT_SANITIZED);
	assert_string_equal(str_attr(s, SC_DB_SYSTEM_NAME), "mysql");
	assert_int_equal(s->status, SPAN_STATUS_ERROR);
	assert_string_equal(str_attr(s, SC_ERROR_TYPE), "1064");
	assert_string_equal(str_attr(s, SC_DB_RESPONSE_STATUS_CODE), "1064");
	assert_true(!s->status_msg || !s->status_msg[0]);
	span__free(s);
	s = fill(e, DB_QUERY_TEXT_RAW);
	assert_string_equal(s->status_msg, "You have an error in your SQL syntax");
	span__free(s);
	/* no number: the Go type, as for any other error */
	e->err_head = 0;
	s = fill(e, DB_QUERY_TEXT_SANITIZED);
	assert_string_equal(str_attr(s, SC_ERROR_TYPE), "*mysql.MySQLError");
	assert_null(span__get(s, SC_DB_RESPONSE_STATUS_CODE));
	span__free(s);
	free(e);
}

/*
 * database/sql's server, as the driver's connection says it: go-sql-driver/mysql's "host:port"
 * Addr, pq's host and port apart; a unix socket's path is no server address.
 */
static void test_dbspan__sql_server_address(void **state)
{
	struct db_call *e = sql_call("SELECT 1", MYSQL_QUERY);
	const struct attr *port;
	struct span *s;

	(void)state;
	set_str(e->addr, sizeof(e->addr), &e->addr_len, "db.internal:3307");
	s = fill(e, DB_QUERY_TEXT_SANITIZED);
	assert_string_equal(str_attr(s, SC_SERVER_ADDRESS), "db.internal");
	port = span__get(s, SC_SERVER_PORT);
	assert_non_null(port);
	assert_int_equal(port->i, 3307);
	span__free(s);
	free(e);

	e = sql_call("SELECT 1", PQ_QUERY);
	set_str(e->addr, sizeof(e->addr), &e->addr_len, "pg.internal");
	e->port = 5433;
	s = fill(e, DB_QUERY_TEXT_SANITIZED);
	assert_string_equal(str_attr(s, SC_SERVER_ADDRESS), "pg.internal");
	port = span__get(s, SC_SERVER_PORT);
	assert_non_null(port);
	assert_int_equal(port->i, 5433);
	span__free(s);

	set_str(e->addr, sizeof(e->addr), &e->addr_len, "/var/run/postgresql");
	s = fill(e, DB_QUERY_TEXT_SANITIZED);
	assert_null(span__get(s, SC_SERVER_ADDRESS));
	assert_null(span__get(s, SC_SERVER_PORT));
	span__free(s);
	free(e);
}

static void test_dbspan__transaction_calls(void **state)
{
	struct db_call *e = sql_call("", PQ_QUERY);
	struct span *s;

	(void)state;
	e->query_len = 0;
	e->sql_op = DB_SQL_COMMIT;
	s = fill(e, DB_QUERY_TEXT_SANITIZED);
	assert_string_equal(s->name, "COMMIT");
	assert_string_equal(str_attr(s, SC_DB_OPERATION_NAME), "COMMIT");
	assert_null(span__get(s, SC_DB_QUERY_TEXT));
	span__free(s);
	free(e);
}

static struct db_call *redis_call(enum db_client client, const char *const *names,
				  const uint8_t *nargs, uint32_t n)
{
	struct db_call *e = calloc(1, sizeof(*e));
	uint32_t i, len;

	assert_non_null(e);
	e->client = client;
	e->batch_size = n;
	for (i = 0; i < n && i < MAX_DB_BATCH; i++) {
		snprintf(e->commands[i], MAX_DB_COMMAND_LEN, "%s", names[i]);
		e->nargs[i] = nargs[i];
	}
	set_str(e->addr, MAX_DB_ADDR_LEN, &len, "127.0.0.1:6379");
	e->addr_len = len;
	return e;
}

static void test_dbspan__redis_command(void **state)
{
	static const char *const names[] = { "set" };
	static const uint8_t nargs[] = { 3 };
	static const char *const nil[] = { "redis: nil" }, *const wrong[] = { "WRONGTYPE Operation" };
	struct db_call *e = redis_call(DB_CLIENT_REDIS, names, nargs, 1);
	const struct attr *port;
	struct span *s;

	(void)state;
	s = fill(e, DB_QUERY_TEXT_SANITIZED);
	assert_string_equal(s->name, "SET");
	assert_string_equal(str_attr(s, SC_DB_SYSTEM_NAME), "redis");
	assert_string_equal(str_attr(s, SC_DB_OPERATION_NAME), "SET");
	assert_string_equal(str_attr(s, SC_DB_QUERY_TEXT), "SET ? ?");
	assert_string_equal(str_attr(s, SC_SERVER_ADDRESS), "127.0.0.1");
	port = span__get(s, SC_SERVER_PORT);
	assert_non_null(port);
	assert_int_equal(port->i, 6379);
	span__free(s);
	/* a missing key is an answer, not a failure */
	set_err(e, REDIS_ERROR, nil, 1);
	s = fill(e, DB_QUERY_TEXT_SANITIZED);
	assert_int_equal(s->status, SPAN_STATUS_UNSET);
	assert_null(span__get(s, SC_ERROR_TYPE));
	span__free(s);
	set_err(e, REDIS_ERROR, wrong, 1);
	s = fill(e, DB_QUERY_TEXT_SANITIZED);
	assert_int_equal(s->status, SPAN_STATUS_ERROR);
	assert_string_equal(str_attr(s, SC_ERROR_TYPE), "WRONGTYPE");
	assert_string_equal(str_attr(s, SC_DB_RESPONSE_STATUS_CODE), "WRONGTYPE");
	span__free(s);
	free(e);
}

static void test_dbspan__redis_pipeline(void **state)
{
	static const char *const names[] = { "set", "incr", "get", "get", "get",
					     "get", "get", "get", "get", "get" };
	static const uint8_t nargs[] = { 3, 2, 2, 2, 2, 2, 2, 2, 2, 2 };
	struct db_call *e = redis_call(DB_CLIENT_REDIS_PIPELINE, names, nargs, 3);
	const struct attr *size;
	struct span *s;

	(void)state;
	s = fill(e, DB_QUERY_TEXT_SANITIZED);
	assert_string_equal(s->name, "PIPELINE");
	assert_string_equal(str_attr(s, SC_DB_QUERY_TEXT), "SET ? ?; INCR ?; GET ?");
	size = span__get(s, SC_DB_OPERATION_BATCH_SIZE);
	assert_non_null(size);
	assert_int_equal(size->i, 3);
	assert_null(span__get(s, GOSPAN_TRUNCATED));
	span__free(s);
	free(e);
	/* more commands than are named: the text says so, and is marked cut */
	e = redis_call(DB_CLIENT_REDIS_PIPELINE, names, nargs, 10);
	s = fill(e, DB_QUERY_TEXT_SANITIZED);
	assert_non_null(strstr(str_attr(s, SC_DB_QUERY_TEXT), "; ..."));
	assert_non_null(span__get(s, GOSPAN_TRUNCATED));
	span__free(s);
	free(e);
}

/*
 * Every record makes a named span, whatever its counts say: a Redis command record with no
 * command in it (batch_size 0, as fuzz_records sent one) once left the span without a name.
 */
static void test_dbspan__every_record_is_named(void **state)
{
	static const enum db_client clients[] = { DB_CLIENT_SQL, DB_CLIENT_PGX,
						  DB_CLIENT_PGX_BATCH, DB_CLIENT_REDIS,
						  DB_CLIENT_REDIS_PIPELINE, 200 };
	struct db_call *e;
	struct span *s;
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(clients) / sizeof(clients[0]); i++) {
		e = redis_call(clients[i], NULL, NULL, 0);
		s = fill(e, DB_QUERY_TEXT_SANITIZED);
		assert_non_null(s->name);
		assert_true(s->name[0] != '\0');
		span__free(s);
		free(e);
	}
}

static void test_dbspan__pgx_server_and_batch(void **state)
{
	struct db_call *e = sql_call("SELECT name FROM items WHERE id = $1", 0);
	const struct attr *a;
	struct span *s;
	uint32_t len;

	(void)state;
	e->client = DB_CLIENT_PGX;
	set_str(e->addr, MAX_DB_ADDR_LEN, &len, "db.internal");
	e->addr_len = len;
	e->port = 5432;
	s = fill(e, DB_QUERY_TEXT_SANITIZED);
	assert_string_equal(str_attr(s, SC_DB_SYSTEM_NAME), "postgresql");
	assert_string_equal(str_attr(s, SC_SERVER_ADDRESS), "db.internal");
	a = span__get(s, SC_SERVER_PORT);
	assert_non_null(a);
	assert_int_equal(a->i, 5432);
	span__free(s);
	/* a unix socket's directory is no server address */
	set_str(e->addr, MAX_DB_ADDR_LEN, &len, "/var/run/postgresql");
	e->addr_len = len;
	s = fill(e, DB_QUERY_TEXT_SANITIZED);
	assert_null(span__get(s, SC_SERVER_ADDRESS));
	span__free(s);
	e->client = DB_CLIENT_PGX_BATCH;
	e->batch_size = 3;
	s = fill(e, DB_QUERY_TEXT_SANITIZED);
	assert_string_equal(s->name, "BATCH");
	assert_string_equal(str_attr(s, SC_DB_OPERATION_NAME), "BATCH");
	assert_null(span__get(s, SC_DB_QUERY_SUMMARY));
	assert_null(span__get(s, SC_DB_COLLECTION_NAME));
	a = span__get(s, SC_DB_OPERATION_BATCH_SIZE);
	assert_non_null(a);
	assert_int_equal(a->i, 3);
	/* only the first query's text is read */
	assert_non_null(strstr(str_attr(s, GOSPAN_TRUNCATED), SC_DB_QUERY_TEXT));
	span__free(s);
	free(e);
}

/* Fills a span for QUERY on DRIVER in MODE and checks its name and the statement's attributes. */
static void check_statement(const char *query, uint64_t driver, enum db_query_text mode,
			    const char *name, const char *op, const char *coll, const char *summary,
			    const char *proc)
{
	struct db_call *e = sql_call(query, driver);
	struct span *s = fill(e, mode);
	const char *got;

	if (strcmp(s->name, name))
		fail_msg("'%s': span name '%s', want '%s'", query, s->name, name);
	got = str_attr(s, SC_DB_OPERATION_NAME);
	if (op ? !got || strcmp(got, op) : got != NULL)
		fail_msg("'%s': operation '%s', want '%s'", query, got, op);
	got = str_attr(s, SC_DB_COLLECTION_NAME);
	if (coll ? !got || strcmp(got, coll) : got != NULL)
		fail_msg("'%s': collection '%s', want '%s'", query, got, coll);
	got = str_attr(s, SC_DB_QUERY_SUMMARY);
	if (summary ? !got || strcmp(got, summary) : got != NULL)
		fail_msg("'%s': summary '%s', want '%s'", query, got, summary);
	got = str_attr(s, SC_DB_STORED_PROCEDURE_NAME);
	if (proc ? !got || strcmp(got, proc) : got != NULL)
		fail_msg("'%s': procedure '%s', want '%s'", query, got, proc);
	span__free(s);
	free(e);
}

/*
 * The span is named by the summary, read in the driver's own dialect: SQLite's INSERT OR
 * REPLACE once named a span "INSERT OR" with the table "OR".
 */
static void test_dbspan__summary_names_the_span(void **state)
{
	(void)state;
	check_statement("INSERT OR REPLACE INTO items (id, name) VALUES (1, 'a')", SQLITE_QUERY,
			DB_QUERY_TEXT_SANITIZED, "INSERT items", "INSERT", "items", "INSERT items",
			NULL);
	check_statement("SELECT * FROM songs s JOIN artists a ON s.artist_id = a.id", PQ_QUERY,
			DB_QUERY_TEXT_SANITIZED, "SELECT songs artists", "SELECT", NULL,
			"SELECT songs artists", NULL);
	check_statement("INSERT INTO shipping_details SELECT * FROM orders WHERE id = 1", PQ_QUERY,
			DB_QUERY_TEXT_NONE, "INSERT shipping_details SELECT orders", "INSERT", NULL,
			"INSERT shipping_details SELECT orders", NULL);
	/* [x] is a name to SQLite only: the dialect is the driver's */
	check_statement("DELETE FROM [song list] WHERE id = 1", SQLITE_QUERY,
			DB_QUERY_TEXT_SANITIZED, "DELETE [song list]", "DELETE", "song list",
			"DELETE [song list]", NULL);
	check_statement("DELETE FROM [song list] WHERE id = 1", PQ_QUERY, DB_QUERY_TEXT_SANITIZED,
			"DELETE", "DELETE", NULL, "DELETE", NULL);
	/* the raw setting shows the text, never a literal in the summary */
	check_statement("SELECT * FROM t WHERE a = 'FROM secret'", PQ_QUERY, DB_QUERY_TEXT_RAW,
			"SELECT t", "SELECT", "t", "SELECT t", NULL);
	/* no operation: the system names the span */
	check_statement("'not sql'", PQ_QUERY, DB_QUERY_TEXT_SANITIZED, "postgresql", NULL, NULL,
			NULL, NULL);
}

static void test_dbspan__call_names_its_procedure(void **state)
{
	(void)state;
	check_statement("CALL add_item(7, 'secret')", PQ_QUERY, DB_QUERY_TEXT_SANITIZED,
			"CALL add_item", "CALL", NULL, "CALL add_item", "add_item");
	check_statement("CALL \"Shop\".\"Add\"()", PQ_QUERY, DB_QUERY_TEXT_SANITIZED,
			"CALL Shop.Add", "CALL", NULL, "CALL Shop.Add", "Shop.Add");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_dbspan__sql_sanitized_by_default),
		cmocka_unit_test(test_dbspan__system_from_the_driver),
		cmocka_unit_test(test_dbspan__cut_query_is_marked_and_leaks_nothing),
		cmocka_unit_test(test_dbspan__postgresql_error_codes),
		cmocka_unit_test(test_dbspan__other_errors_by_go_type),
		cmocka_unit_test(test_dbspan__mysql_error_number),
		cmocka_unit_test(test_dbspan__sql_server_address),
		cmocka_unit_test(test_dbspan__transaction_calls),
		cmocka_unit_test(test_dbspan__redis_command),
		cmocka_unit_test(test_dbspan__redis_pipeline),
		cmocka_unit_test(test_dbspan__every_record_is_named),
		cmocka_unit_test(test_dbspan__pgx_server_and_batch),
		cmocka_unit_test(test_dbspan__summary_names_the_span),
		cmocka_unit_test(test_dbspan__call_names_its_procedure),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
