// SPDX-License-Identifier: MIT
/*
 * A data store call's record (struct db_call) as a CLIENT span's name and attributes, after the
 * database conventions: db.system.name, db.operation.name, db.collection.name where the query
 * makes it plain, db.query.text (literals replaced by '?' unless the setting says raw),
 * server.address and server.port where the client knows them, and on failure error.type and
 * db.response.status_code. The data store family's records (records_family.h) become spans here.
 */
#include <arpa/inet.h>
#include <ctype.h>
#include <stdio.h>
#include <string.h>

#include "model/attrs.h"
#include "analysis/datastores.h"
#include "model/dbquery.h"
#include "capture/dbspan.h"
#include "events.h"
#include "capture/process.h"
#include "capture/records.h"
#include "capture/records_family.h"
#include "model/semconv.h"
#include "model/span.h"
#include "analysis/target.h"

/* go-redis's "the key does not exist" reply: a result, not a failure. */
#define REDIS_NIL "redis: nil"

static enum db_dialect dialect_of(const char *system)
{
	if (!strcmp(system, "postgresql"))
		return DB_DIALECT_POSTGRESQL;
	if (!strcmp(system, "mysql"))
		return DB_DIALECT_MYSQL;
	if (!strcmp(system, "sqlite"))
		return DB_DIALECT_SQLITE;
	return DB_DIALECT_GENERIC;
}

/* The Ith of an error value's leading strings as captured (LENS, STRS), NUL-terminated. */
static size_t err_string(const uint16_t *lens, const char (*strs)[MAX_DB_ERROR_LEN], int i,
			 char *out, size_t cap)
{
	return attrs__captured_copy(out, cap, strs[i], lens[i], MAX_DB_ERROR_LEN);
}

/*
 * An SQLSTATE: five digits or upper-case letters, some digits among them (every code has: that
 * tells it from a severity, "ERROR", which comes before it).
 */
static bool is_sqlstate(const char *s)
{
	bool digit = false;
	int i;

	for (i = 0; i < 5; i++) {
		if (!isdigit((unsigned char)s[i]) && !isupper((unsigned char)s[i]))
			return false;
		digit = digit || isdigit((unsigned char)s[i]);
	}
	return digit && !s[5];
}

/*
 * The span's name, as the conventions build it: the query's summary where there is one, else
 * the operation, else the system's name.
 */
static void set_name(struct span *s, const char *summary, const char *op, const char *system)
{
	const char *name = summary[0] ? summary : op[0] ? op : system;

	span__set_name(s, name, strlen(name));
}

/* Sets KEY to VAL unless VAL is empty (the statement did not say). */
static void set_said(struct span *s, const char *key, const char *val)
{
	if (val[0])
		span__set_str(s, key, val, strlen(val));
}

/*
 * A SQL call: its text sanitized (or not); its operation, collection, summary and procedure
 * read from the text as captured, by the database's own dialect (dbquery.h says why no literal
 * can become a name).
 */
static void fill_sql(struct span *s, const struct db_call *e, const char *system,
		     enum db_query_text mode)
{
	static const char *const tx_ops[] = { [DB_SQL_BEGIN] = "BEGIN", [DB_SQL_COMMIT] = "COMMIT",
					      [DB_SQL_ROLLBACK] = "ROLLBACK" };
	char raw[MAX_DB_QUERY_LEN * 3 + 1], text[MAX_DB_QUERY_LEN * 3 + 1];
	struct dbquery_statement st;
	bool cut = e->query_len > MAX_DB_QUERY_LEN;
	enum db_dialect dialect = dialect_of(system);
	const char *op_name;
	size_t n;

	if (e->sql_op) {
		/* A transaction's own call: what the driver sends for it is its business. */
		op_name = e->sql_op < sizeof(tx_ops) / sizeof(tx_ops[0]) ? tx_ops[e->sql_op] : NULL;
		if (op_name)
			span__set_str(s, SC_DB_OPERATION_NAME, op_name, strlen(op_name));
		set_name(s, "", op_name ? op_name : "", system);
		return;
	}
	n = attrs__captured_copy(raw, sizeof(raw), e->query, e->query_len, MAX_DB_QUERY_LEN);
	dbquery__sanitize(raw, n, cut, dialect, text, sizeof(text));
	dbquery__read(raw, n, cut, dialect, &st);
	if (e->client == DB_CLIENT_PGX_BATCH) {
		span__set_int(s, SC_DB_OPERATION_BATCH_SIZE, e->batch_size);
		/* Of a batch the text is its first query's: the others are not read. */
		cut = cut || e->batch_size > 1;
		memset(&st, 0, sizeof(st));
		snprintf(st.operation, sizeof(st.operation), "BATCH");
	}
	set_said(s, SC_DB_OPERATION_NAME, st.operation);
	set_said(s, SC_DB_COLLECTION_NAME, st.collection);
	set_said(s, SC_DB_QUERY_SUMMARY, st.summary);
	set_said(s, SC_DB_STORED_PROCEDURE_NAME, st.procedure);
	set_name(s, st.summary, st.operation, system);
	if (mode == DB_QUERY_TEXT_NONE || !n)
		return;
	if (mode == DB_QUERY_TEXT_RAW)
		span__set_str(s, SC_DB_QUERY_TEXT, raw, n);
	else
		span__set_str(s, SC_DB_QUERY_TEXT, text, strlen(text));
	if (cut)
		attrs__mark_truncated(s, SC_DB_QUERY_TEXT);
}

/* Appends STR to BUF (CAP bytes, *LEN used so far), as much as fits. */
static void append(char *buf, size_t cap, size_t *len, const char *str)
{
	int n = snprintf(buf + *len, cap - *len, "%s", str);

	*len += n < 0 ? 0 : (size_t)n < cap - *len ? (size_t)n : cap - *len - 1;
}

/*
 * A Redis call: each command's name, upper-cased, with a '?' for each argument (the raw text is
 * not captured: keys and values never leave the kernel).
 */
static void fill_redis(struct span *s, const struct db_call *e, enum db_query_text mode)
{
	char text[MAX_DB_BATCH * (MAX_DB_COMMAND_LEN + 2 * 32 + 2) + 8], name[MAX_DB_COMMAND_LEN + 1];
	size_t len = 0, i, j, shown;
	bool cut = false;

	shown = e->batch_size < MAX_DB_BATCH ? e->batch_size : MAX_DB_BATCH;
	text[0] = '\0';
	for (i = 0; i < shown; i++) {
		for (j = 0; j < MAX_DB_COMMAND_LEN && e->commands[i][j]; j++)
			name[j] = (char)toupper((unsigned char)e->commands[i][j]);
		name[j] = '\0';
		if (!name[0] || !isalpha((unsigned char)name[0]))
			snprintf(name, sizeof(name), "?");
		if (i)
			append(text, sizeof(text), &len, "; ");
		append(text, sizeof(text), &len, name);
		for (j = 1; j < e->nargs[i]; j++) {
			if (j > 32) {
				/* a long MSET: the count is in the arguments, not the shape */
				append(text, sizeof(text), &len, " ...");
				cut = true;
				break;
			}
			append(text, sizeof(text), &len, " ?");
		}
		if (i == 0 && e->client == DB_CLIENT_REDIS) {
			span__set_str(s, SC_DB_OPERATION_NAME, name, strlen(name));
			set_name(s, name, "", "redis");
		}
	}
	if (e->batch_size > shown) {
		append(text, sizeof(text), &len, "; ...");
		cut = true;
	}
	if (e->client == DB_CLIENT_REDIS_PIPELINE) {
		span__set_str(s, SC_DB_OPERATION_NAME, "PIPELINE", 8);
		span__set_int(s, SC_DB_OPERATION_BATCH_SIZE, e->batch_size);
		set_name(s, "PIPELINE", "", "redis");
	}
	if (mode == DB_QUERY_TEXT_NONE || !text[0])
		return;
	span__set_str(s, SC_DB_QUERY_TEXT, text, len);
	if (cut)
		attrs__mark_truncated(s, SC_DB_QUERY_TEXT);
}

/*
 * What an error of Go type TYPE says, from its leading strings (LENS, STRS): the database's own
 * code into CODE where it carries one (an SQLSTATE of PostgreSQL's, a Redis error's prefix) and
 * its message into MSG. -1 for go-redis's "redis: nil", which is no failure; 0 otherwise.
 */
static int read_error(const char *type, const char *system, const uint16_t *lens,
		      const char (*strs)[MAX_DB_ERROR_LEN], char *code, size_t code_cap,
		      char *msg, size_t msg_cap)
{
	char str[MAX_DB_ERROR_LEN * 3 + 1];
	size_t i, n;

	if (!type)
		return 0;
	if (strstr(type, "RedisError")) {
		n = err_string(lens, strs, 0, str, sizeof(str));
		if (n == strlen(REDIS_NIL) && !strcmp(str, REDIS_NIL))
			return -1;
		/* "ERR ...", "WRONGTYPE ...": the prefix is the status */
		for (i = 0; i < code_cap - 1 && isupper((unsigned char)str[i]); i++)
			code[i] = str[i];
		code[i] = '\0';
		snprintf(msg, msg_cap, "%s", str);
	} else if (!strcmp(type, "*errors.errorString")) {
		err_string(lens, strs, 0, msg, msg_cap);
	} else if (!strcmp(system, "postgresql") &&
		   (strstr(type, "pq.Error") || strstr(type, "pgconn.PgError"))) {
		/* Severity first; then the code (after the unlocalized severity in newer pgx) */
		for (i = 1; i < DB_ERROR_STRS - 1; i++) {
			err_string(lens, strs, (int)i, str, sizeof(str));
			if (is_sqlstate(str) && code_cap > 5) {
				memcpy(code, str, 6);
				err_string(lens, strs, (int)i + 1, msg, msg_cap);
				break;
			}
		}
	}
	return 0;
}

/*
 * go-sql-driver/mysql's *MySQLError: the server's error number (a uint16 first in the value,
 * E's err_head) into CODE, as the conventions want MySQL's codes, and its Message (at the
 * value's second word, E's err8) into MSG.
 */
static void read_mysql_error(const struct db_call *e, char *code, size_t code_cap, char *msg,
			     size_t msg_cap)
{
	unsigned int number = (unsigned int)(e->err_head & 0xffff);

	if (number)
		snprintf(code, code_cap, "%u", number);
	attrs__captured_copy(msg, msg_cap, e->err8, e->err_len8, MAX_DB_ERROR_LEN);
}

/*
 * The call failed: status ERROR, and error.type the database's own code where the error (or the
 * error it wraps, as pgx's PrepareError does) carries one, else the error's Go type. Messages
 * can quote the query's values: they go out only with the raw setting.
 */
static void fill_error(struct span *s, const struct db_call *e, const struct db_target *d,
		       uint64_t bias, const char *system, enum db_query_text mode)
{
	char code[16] = "", msg[MAX_DB_ERROR_LEN * 3 + 1] = "";
	const char *type = e->err_fn ? datastores__error_type(d, e->err_fn - bias) : NULL;
	const char *inner = e->inner_fn ? datastores__error_type(d, e->inner_fn - bias) : NULL;

	if (type && !strcmp(type, "*mysql.MySQLError"))
		read_mysql_error(e, code, sizeof(code), msg, sizeof(msg));
	else if (read_error(type, system, e->err_lens, e->err, code, sizeof(code), msg,
			    sizeof(msg)))
		return;
	if (!code[0] && inner &&
	    read_error(inner, system, e->inner_lens, e->inner, code, sizeof(code), msg,
		       sizeof(msg)))
		return;
	s->status = SPAN_STATUS_ERROR;
	if (code[0]) {
		span__set_str(s, SC_DB_RESPONSE_STATUS_CODE, code, strlen(code));
		span__set_str(s, SC_ERROR_TYPE, code, strlen(code));
	} else {
		span__set_str(s, SC_ERROR_TYPE, type ? type : "_OTHER",
			      strlen(type ? type : "_OTHER"));
	}
	if (mode == DB_QUERY_TEXT_RAW && msg[0])
		s->status_msg = span__strndup(s, msg, strlen(msg));
}

/*
 * Where the client says the server is: go-redis's "host:port", pgx's and pq's host and port,
 * go-sql-driver/mysql's "host:port"; or, for a driver that keeps no host, the IP address its
 * socket is connected to.
 */
static void fill_server(struct span *s, const struct db_call *e)
{
	char addr[MAX_DB_ADDR_LEN * 3 + 1];

	if (e->addr_ip == 4 || e->addr_ip == 16) {
		if (!inet_ntop(e->addr_ip == 4 ? AF_INET : AF_INET6, e->addr, addr, sizeof(addr)))
			return;
		span__set_str(s, SC_SERVER_ADDRESS, addr, strlen(addr));
		if (e->port)
			span__set_int(s, SC_SERVER_PORT, e->port);
		return;
	}
	if (!e->addr_len || e->addr_len > MAX_DB_ADDR_LEN)
		return;
	attrs__captured_copy(addr, sizeof(addr), e->addr, e->addr_len, MAX_DB_ADDR_LEN);
	/* A unix socket's directory (pgx) or path is no server address. */
	if (addr[0] == '/')
		return;
	if (e->port) {
		span__set_str(s, SC_SERVER_ADDRESS, addr, strlen(addr));
		span__set_int(s, SC_SERVER_PORT, e->port);
		return;
	}
	attrs__set_host_port(s, addr, SC_SERVER_ADDRESS, SC_SERVER_PORT);
}

void dbspan__fill(struct span *s, const struct db_call *e, const struct db_target *d,
		  uint64_t bias, enum db_query_text mode)
{
	const char *system;

	switch (e->client) {
	case DB_CLIENT_SQL:
		system = datastores__system(d, e->driver_fn ? e->driver_fn - bias : 0);
		break;
	case DB_CLIENT_PGX:
	case DB_CLIENT_PGX_BATCH:
		system = "postgresql";
		break;
	default:
		system = "redis";
		break;
	}
	span__set_str(s, SC_DB_SYSTEM_NAME, system, strlen(system));
	if (e->client == DB_CLIENT_REDIS || e->client == DB_CLIENT_REDIS_PIPELINE)
		fill_redis(s, e, mode);
	else
		fill_sql(s, e, system, mode);
	/* A command record without a command (the probes never send one) still names its span. */
	if (!s->name)
		set_name(s, "", "", system);
	fill_server(s, e);
	if (e->err_itab)
		fill_error(s, e, d, bias, system, mode);
}

/* A data store call: one record, the whole span (it has no children). */
static void on_db_call(struct records *r, const void *record)
{
	const struct db_call *e = record;
	struct process *proc;
	struct span *s;

	s = records__whole_span(r, &e->hdr, e->cookie, &e->ids, SPAN_KIND_CLIENT, e->end_ns, &proc);
	if (!s)
		return;
	dbspan__fill(s, e, &proc->target->db, proc->load_bias,
		     (enum db_query_text)records__opts(r)->db_query_text);
	records__emit(r, s);
}

const struct record_handler db_records[] = {
	{ EVENT_DB_CALL, sizeof(struct db_call), on_db_call },
	{ 0 },
};
