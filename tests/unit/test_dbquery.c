// SPDX-License-Identifier: MIT
/*
 * Unit tests for dbquery.c: the sanitized text of queries as each dialect reads them, compared
 * whole, so that a literal left in place or a token lost fails; a password in every form a query
 * can carry it, cut at every length a capture could cut it, never in the output; and what the
 * statement reader makes of each form of statement, per dialect: the shared case table
 * (testdata/sql_statements.tsv, which the e2e test runs on the databases themselves) and the
 * reader's own corners (names, several tables, CTEs, cut texts, literals never taken as names).
 */
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <setjmp.h>
#include <errno.h>
#include <stdio.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "model/dbquery.h"

#define PG DB_DIALECT_POSTGRESQL
#define MY DB_DIALECT_MYSQL
#define LITE DB_DIALECT_SQLITE
#define GEN DB_DIALECT_GENERIC

static const char *const dialect_names[] = {"generic", "postgresql", "mysql", "sqlite"};

/* Sanitizes IN (a C string) as dialect D with room to spare and compares the whole output. */
static void check(enum db_dialect d, bool truncated, const char *in, const char *want)
{
	char out[512];
	size_t n;

	memset(out, 'Z', sizeof(out));
	n = dbquery__sanitize(in, strlen(in), truncated, d, out, sizeof(out));
	if (strcmp(out, want))
		fail_msg("%s%s: '%s' gave '%s', want '%s'", dialect_names[d],
			 truncated ? " (truncated)" : "", in, out, want);
	assert_int_equal(n, strlen(want));
}

static void check_all(const char *in, const char *want)
{
	check(GEN, false, in, want);
	check(PG, false, in, want);
	check(MY, false, in, want);
	check(LITE, false, in, want);
}

static void test_dbquery__examples(void **state)
{
	(void)state;
	check_all("SELECT * FROM users WHERE name = 'bob' AND age > 42",
		  "SELECT * FROM users WHERE name = ? AND age > ?");
	check(PG, false, "UPDATE users SET password = 'hunter2' WHERE id = $1",
	      "UPDATE users SET password = ? WHERE id = $1");
	check(GEN, false, "UPDATE users SET password = 'hunter2' WHERE id = $1",
	      "UPDATE users SET password = ? WHERE id = $1");
	check(PG, false, "INSERT INTO t(a,b) VALUES (1.5e3, E'it\\'s')",
	      "INSERT INTO t(a,b) VALUES (?, ?)");
	check(GEN, false, "INSERT INTO t(a,b) VALUES (1.5e3, E'it\\'s')",
	      "INSERT INTO t(a,b) VALUES (?, ?)");
	check(PG, false, "SELECT $x$secret$x$", "SELECT ?");
}

static void test_dbquery__empty(void **state)
{
	char out[8];

	(void)state;
	memset(out, 'Z', sizeof(out));
	assert_int_equal(dbquery__sanitize("", 0, false, PG, out, sizeof(out)), 0);
	assert_string_equal(out, "");
	memset(out, 'Z', sizeof(out));
	assert_int_equal(dbquery__sanitize(NULL, 0, true, GEN, out, sizeof(out)), 0);
	assert_string_equal(out, "");
	/* LEN bounds the input: what lies past it is not read. */
	assert_int_equal(dbquery__sanitize("SELECT 1", 6, false, PG, out, sizeof(out)), 6);
	assert_string_equal(out, "SELECT");
}

static void test_dbquery__comments(void **state)
{
	(void)state;
	check_all("-- hi", "");
	check_all("/* hi */", "");
	check_all("  -- it's 42", "  ");
	/* A comment that does not end may have been cut: it holds anything. */
	check_all("/* hi", "?");
	check_all("SELECT 1 /* 'x' 42", "SELECT ? ?");
	check_all("SELECT/**/1", "SELECT ?");
	check_all("a/*x*/b", "a b");
	check_all("a /*x*/ b", "a  b");
	check_all("SELECT 1 -- note\nFROM t", "SELECT ? \nFROM t");
	check_all("SELECT 1 -- it's\nFROM t", "SELECT ? \nFROM t");
}

static void test_dbquery__nested_comments(void **state)
{
	(void)state;
	check(PG, false, "SELECT /* a /* b */ c */ 1", "SELECT  ?");
	check(PG, false, "SELECT /* a /* b */ 'c' */ 1", "SELECT  ?");
	check(PG, false, "SELECT /* a /* b */ c 1", "SELECT ?");
	/* MySQL and SQLite end a comment at its first close. */
	check(MY, false, "SELECT /* a /* b */ c */ 1", "SELECT  c */ ?");
	check(LITE, false, "SELECT /* a /* b */ c */ 1", "SELECT  c */ ?");
	/* Nesting or not changes where the comment ends: GENERIC cannot tell, so it all goes. */
	check(GEN, false, "SELECT /* a /* b */ c */ 1", "SELECT ?");
	check(GEN, false, "SELECT /* a * / b */ 1", "SELECT  ?");
}

static void test_dbquery__doubled_quotes(void **state)
{
	(void)state;
	check_all("SELECT 'it''s'", "SELECT ?");
	check_all("SELECT 'a''b' || 'c', ''", "SELECT ? || ?, ?");
	check_all("SELECT ''''", "SELECT ?");
	check(PG, false, "SELECT \"a\"\"b\" FROM t", "SELECT \"a\"\"b\" FROM t");
	check(MY, false, "SELECT `a``b` FROM t", "SELECT `a``b` FROM t");
}

static void test_dbquery__backslashes(void **state)
{
	(void)state;
	/* MySQL escapes with a backslash; PostgreSQL's plain strings do not. */
	check(MY, false, "SELECT 'it\\'s', 'x'", "SELECT ?, ?");
	check(MY, false, "SELECT 'a\\\\', b", "SELECT ?, b");
	check(PG, false, "SELECT 'a\\', b", "SELECT ?, b");
	check(LITE, false, "SELECT 'a\\', b", "SELECT ?, b");
	check(PG, false, "SELECT E'it\\'s', e'\\\\', b", "SELECT ?, ?, b");
	/* GENERIC: either reading could be the database's; the two disagree, so the rest goes. */
	check(GEN, false, "SELECT 'a\\', 'secret' FROM t", "SELECT ?");
	check(GEN, false, "SELECT 'C:\\\\dir', b", "SELECT ?, b");
	check(GEN, false, "SELECT 'C:\\dir', b", "SELECT ?, b");
}

static void test_dbquery__double_quotes(void **state)
{
	(void)state;
	/* MySQL: a string. PostgreSQL and GENERIC: an identifier. */
	check(MY, false, "SELECT \"bob\" FROM t", "SELECT ? FROM t");
	check(MY, false, "SELECT \"a\\\"b\", c", "SELECT ?, c");
	check(PG, false, "SELECT \"bob\" FROM t", "SELECT \"bob\" FROM t");
	check(GEN, false, "SELECT \"bob\" FROM t", "SELECT \"bob\" FROM t");
	/* SQLite takes "bob" for the string 'bob' when no column is named so. */
	check(LITE, false, "SELECT \"bob\" FROM t", "SELECT ? FROM t");
	/* Backquotes, [ ] (SQLite) and U&"" (PostgreSQL) quote identifiers. */
	check(MY, false, "SELECT `x1` FROM `my t`", "SELECT `x1` FROM `my t`");
	check(LITE, false, "SELECT [my col 1] FROM t", "SELECT [my col 1] FROM t");
	check(PG, false, "SELECT U&\"d\\0061t\" FROM t", "SELECT U&\"d\\0061t\" FROM t");
	/* An identifier with a quote in it is no identifier a secret-free query needs. */
	check(PG, false, "SELECT \"it's\" FROM t", "SELECT ? FROM t");
	check(GEN, false, "SELECT \"a\\\" FROM t WHERE x = \"", "SELECT ?");
}

static void test_dbquery__prefixed_strings(void **state)
{
	(void)state;
	check(PG, false, "SELECT N'x', B'01', X'ff', U&'d\\0061t', e'\\n'", "SELECT ?, ?, ?, ?, ?");
	check(GEN, false, "SELECT N'x', b'01', x'ff', u&'d\\0061t', E'\\n'",
	      "SELECT ?, ?, ?, ?, ?");
	check(MY, false, "SELECT N'x', X'ff', _utf8mb4'y'", "SELECT ?, ?, _utf8mb4?");
	/* MySQL has no U&'': an operator and a string. */
	check(MY, false, "SELECT U&'x'", "SELECT U&?");
	check(LITE, false, "SELECT X'00ff'", "SELECT ?");
	/* A word that ends in a prefix letter is not a prefix. */
	check(PG, false, "SELECT date '2024-01-01', type'x'", "SELECT date ?, type?");
}

static void test_dbquery__dollar_quotes(void **state)
{
	(void)state;
	check(PG, false, "SELECT $$a$b$$, $1", "SELECT ?, $1");
	check(PG, false, "SELECT $body$ it's $$ $b$ $body$ + 1", "SELECT ? + ?");
	check(PG, false, "SELECT $a$ x $b$ y $a$", "SELECT ?");
	check(PG, false, "SELECT $_tag1$x$_tag1$", "SELECT ?");
	/* Not closed: all of it. */
	check(PG, false, "SELECT $a$ secret", "SELECT ?");
	check(PG, false, "SELECT $a$ secret $b$", "SELECT ?");
	/* "$" in an identifier opens nothing. */
	check(PG, false, "SELECT a$b$c FROM t", "SELECT a$b$c FROM t");
	check(GEN, false, "SELECT $x$secret$x$ FROM t", "SELECT ? FROM t");
	/* GENERIC: a body with a quote reads differently where $$ quotes nothing. */
	check(GEN, false, "SELECT $$ 'x $$ secret' FROM t", "SELECT ?");
	/* MySQL has no dollar quotes: identifiers; SQLite: $name parameters. */
	check(MY, false, "SELECT $a$ FROM t", "SELECT $a$ FROM t");
	check(LITE, false, "SELECT * FROM t WHERE a = $name", "SELECT * FROM t WHERE a = $name");
}

static void test_dbquery__placeholders(void **state)
{
	(void)state;
	check(PG, false, "WHERE a = $1 AND b = $12 AND c = ? AND d = :name AND e = @p",
	      "WHERE a = $1 AND b = $12 AND c = ? AND d = :name AND e = @p");
	check(GEN, false, "WHERE a = $1 AND c = ? AND d = :name",
	      "WHERE a = $1 AND c = ? AND d = :name");
	check(MY, false, "WHERE a = ? AND b = @v", "WHERE a = ? AND b = @v");
	check(LITE, false, "WHERE a = ?1 AND b = :b AND c = @c",
	      "WHERE a = ?1 AND b = :b AND c = @c");
	check(PG, false, "SELECT a::int, b::text FROM t", "SELECT a::int, b::text FROM t");
}

static void test_dbquery__numbers(void **state)
{
	(void)state;
	check_all("SELECT 1.5e3, .5, 0x1F, 1e-3, 2E+10, 1_000, 5., -5, 42",
		  "SELECT ?, ?, ?, ?, ?, ?, ?, -?, ?");
	check_all("SELECT t1.col_2, a1 FROM t1 WHERE a1 = 10",
		  "SELECT t1.col_2, a1 FROM t1 WHERE a1 = ?");
	check(PG, false, "SELECT \"x1\", \"2\" FROM t", "SELECT \"x1\", \"2\" FROM t");
	check_all("SELECT t.5, x+1, x-1, 3*4", "SELECT t.?, x+?, x-?, ?*?");
	/* Hex has no signed exponent: 0x1e plus 5. */
	check_all("SELECT 0x1e+5", "SELECT ?+?");
	/* Whatever is stuck to a number goes with it. */
	check_all("SELECT 123abc, 1.2.3", "SELECT ?, ?");
	check_all("LIMIT 10 OFFSET 20", "LIMIT ? OFFSET ?");
}

static void test_dbquery__keywords_kept(void **state)
{
	(void)state;
	check_all("select * from T where a IS NULL and b = TRUE or c = false",
		  "select * from T where a IS NULL and b = TRUE or c = false");
	check_all("SELECT\t*\r\n  FROM t", "SELECT\t*\r\n  FROM t");
	check_all("SELECT café FROM tbl_ü", "SELECT café FROM tbl_ü");
}

static void test_dbquery__mysql_comments(void **state)
{
	(void)state;
	check(MY, false, "SELECT 1 # it's 42\nFROM t", "SELECT ? \nFROM t");
	/* MySQL wants a space after "--": 1 - -1. */
	check(MY, false, "SELECT 1--1", "SELECT ?--?");
	check(MY, false, "SELECT 1-- 1", "SELECT ?");
	check(MY, false, "SELECT 1--", "SELECT ?");
	check(PG, false, "SELECT 1--1", "SELECT ?");
	/* PostgreSQL's '#' is an operator. */
	check(PG, false, "SELECT 5 # 3", "SELECT ? # ?");
	/* GENERIC drops a '#' line, unless the line opens something PostgreSQL would go on with. */
	check(GEN, false, "SELECT 1 # note\nFROM t", "SELECT ? \nFROM t");
	check(GEN, false, "SELECT a # 'x\nsecret' FROM t", "SELECT a ?");
	check(GEN, false, "SELECT 1--'\nsecret' FROM t", "SELECT ??");
}

static void test_dbquery__brackets(void **state)
{
	(void)state;
	check(PG, false, "SELECT a[1], ARRAY['x','y']", "SELECT a[?], ARRAY[?,?]");
	check(GEN, false, "SELECT a[1], ARRAY['x','y']", "SELECT a[?], ARRAY[?,?]");
	/* SQLite reads [it's] as a name; a string from the quote would end elsewhere. */
	check(GEN, false, "SELECT [it's] FROM t WHERE p = 'secret'", "SELECT [it?");
	check(LITE, false, "SELECT [it's] FROM t WHERE p = 'secret'",
	      "SELECT ? FROM t WHERE p = ?");
	check(LITE, false, "SELECT [a FROM t", "SELECT ?");
}

static void test_dbquery__nul_byte(void **state)
{
	static const char in[] = "SELECT a\0b, '\0'";
	char out[32];

	(void)state;
	assert_int_equal(dbquery__sanitize(in, sizeof(in) - 1, false, PG, out, sizeof(out)), 13);
	assert_string_equal(out, "SELECT a?b, ?");
}

static void test_dbquery__truncated(void **state)
{
	(void)state;
	check_all("SELECT 'abc", "SELECT ?");
	check(GEN, true, "SELECT 'abc", "SELECT ?");
	check(PG, true, "SELECT 'abc", "SELECT ?");
	check(MY, true, "SELECT \"abc", "SELECT ?");
	check(PG, true, "SELECT 12", "SELECT ?");
	check(PG, true, "SELECT E'abc\\", "SELECT ?");
	check(PG, true, "SELECT 'ab''", "SELECT ?");
	check(PG, true, "SELECT \"ab", "SELECT ?");
	check(MY, true, "SELECT `ab", "SELECT ?");
	check(PG, true, "SELECT $a$ab$", "SELECT ?");
	/* "$ta" may be the start of a dollar quote the capture cut; whole, it is just text. */
	check(PG, true, "SELECT $ta", "SELECT ?");
	check(PG, false, "SELECT $ta", "SELECT $ta");
	/* Nothing is added to say so: the caller records the truncation. */
	check(PG, true, "SELECT * FROM t", "SELECT * FROM t");
}

static void test_dbquery__small_buffers(void **state)
{
	static const char q[] = "SELECT * FROM t WHERE a = 'x'";
	char out[64];

	(void)state;
	/* CAP 0: not a byte written. */
	memset(out, 'Z', sizeof(out));
	assert_int_equal(dbquery__sanitize(q, strlen(q), false, PG, out, 0), 0);
	assert_int_equal(out[0], 'Z');
	assert_int_equal(dbquery__sanitize(q, strlen(q), false, PG, NULL, 0), 0);

	memset(out, 'Z', sizeof(out));
	assert_int_equal(dbquery__sanitize(q, strlen(q), false, PG, out, 1), 0);
	assert_string_equal(out, "");
	assert_int_equal(out[1], 'Z');

	memset(out, 'Z', sizeof(out));
	assert_int_equal(dbquery__sanitize(q, strlen(q), false, PG, out, 8), 7);
	assert_string_equal(out, "SELECT ");
	assert_int_equal(out[8], 'Z');

	/* Room for all but the NUL, then for all. */
	memset(out, 'Z', sizeof(out));
	assert_int_equal(dbquery__sanitize(q, strlen(q), false, PG, out, 27), 26);
	assert_string_equal(out, "SELECT * FROM t WHERE a = ");
	assert_int_equal(dbquery__sanitize(q, strlen(q), false, PG, out, 28), 27);
	assert_string_equal(out, "SELECT * FROM t WHERE a = ?");
}

static void test_dbquery__utf8_cut(void **state)
{
	static const char q[] = "SELECT \"\xc3\xa9\xe2\x82\xac\" FROM t"; /* "é€" */
	char out[32];

	(void)state;
	/* A cut inside é or € drops the character's first bytes too. */
	assert_int_equal(dbquery__sanitize(q, strlen(q), false, PG, out, 10), 8);
	assert_string_equal(out, "SELECT \"");
	assert_int_equal(dbquery__sanitize(q, strlen(q), false, PG, out, 11), 10);
	assert_string_equal(out, "SELECT \"\xc3\xa9");
	assert_int_equal(dbquery__sanitize(q, strlen(q), false, PG, out, 12), 10);
	assert_int_equal(dbquery__sanitize(q, strlen(q), false, PG, out, 13), 10);
	assert_string_equal(out, "SELECT \"\xc3\xa9");
	assert_int_equal(dbquery__sanitize(q, strlen(q), false, PG, out, 14), 13);
	assert_string_equal(out, "SELECT \"\xc3\xa9\xe2\x82\xac");
}

/* Fails when OUT holds three bytes running of the password "hunter2" or of the PIN 90817. */
static void assert_no_secret(const char *out, const char *in, enum db_dialect d, size_t cut)
{
	static const char *const secrets[] = {"hunter2", "90817"};
	size_t i, k;

	for (i = 0; i < 2; i++)
		for (k = 0; k + 3 <= strlen(secrets[i]); k++)
			if (memmem(out, strlen(out), secrets[i] + k, 3))
				fail_msg("%s: '%.*s' gave '%s'", dialect_names[d], (int)cut, in,
					 out);
}

static void test_dbquery__password_never_leaves(void **state)
{
	/* Each with the dialects (a bit each) that read the secret as a literal or a comment. */
	static const struct {
		const char *q;
		unsigned dialects;
	} cases[] = {
		{ "UPDATE users SET password = 'hunter2', pin = 90817 WHERE id = $1", 0xf },
		{ "UPDATE users SET password = 'hun''ter2' WHERE id = 1", 0xf },
		{ "ALTER ROLE app PASSWORD E'hunt\\'er2'", 1 << GEN | 1 << PG },
		{ "SELECT 1 FROM users WHERE pw = 'hunt\\'er2' AND pin = 90817", 1 << MY },
		{ "SELECT 1 FROM users WHERE pw = \"hunter2\"", 1 << MY | 1 << LITE },
		{ "SELECT 1 FROM users WHERE pw = $k$hunter2$k$", 1 << GEN | 1 << PG },
		{ "SELECT 1 FROM users WHERE pw = $$hunter2$$ AND n=90817e1", 1 << GEN | 1 << PG },
		{ "SELECT 1 /* pw hunter2 */ FROM users -- pin 90817\n", 0xf },
		{ "SELECT 1 FROM users # hunter2\n", 1 << GEN | 1 << MY },
		{ "SELECT 1 FROM users WHERE pw = N'hunter2' OR pw = X'90817'", 0xf },
		{ "SELECT 1 FROM users WHERE pw = 'a\\', 'hunter2'", 0xf & ~(1u << MY) },
	};
	char out[256];
	size_t i, cut;
	int d;

	(void)state;
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		for (d = GEN; d <= LITE; d++) {
			if (!(cases[i].dialects & 1u << d))
				continue;
			/* Every length a capture could cut the query at, and the whole of it. */
			for (cut = 0; cut <= strlen(cases[i].q); cut++) {
				dbquery__sanitize(cases[i].q, cut, cut < strlen(cases[i].q), d, out,
						  sizeof(out));
				assert_no_secret(out, cases[i].q, d, cut);
				assert_null(strchr(out, '\''));
			}
		}
	}
}

/* ---- the statement reader ---------------------------------------------------------------- */

/* Reads SQL as dialect D and compares every field; PROC NULL for none. */
static void check_read(enum db_dialect d, bool cut, const char *sql, const char *op,
		       const char *coll, const char *summary, const char *proc)
{
	struct dbquery_statement st;

	memset(&st, 'Z', sizeof(st));
	dbquery__read(sql, strlen(sql), cut, d, &st);
	if (strcmp(st.operation, op) || strcmp(st.collection, coll) ||
	    strcmp(st.summary, summary) || strcmp(st.procedure, proc ? proc : ""))
		fail_msg("%s%s: '%s' gave op '%s' collection '%s' summary '%s' procedure '%s', "
			 "want '%s' '%s' '%s' '%s'",
			 dialect_names[d], cut ? " (cut)" : "", sql, st.operation, st.collection,
			 st.summary, st.procedure, op, coll, summary, proc ? proc : "");
}

#define check_gen(sql, op, coll, summary) check_read(GEN, false, sql, op, coll, summary, NULL)

/*
 * The shared case table (testdata/sql_statements.tsv, also run against the databases by
 * tests/e2e/test_sql_dialects.py): every case of dialect NAME. Returns the number checked.
 */
static int check_table(const char *name, enum db_dialect d)
{
	char line[2048], *f[8], *p;
	int n = 0, lineno = 0, k;
	FILE *in = fopen("testdata/sql_statements.tsv", "r");

	if (!in)
		fail_msg("cannot open 'testdata/sql_statements.tsv': %s", strerror(errno));
	while (fgets(line, sizeof(line), in)) {
		lineno++;
		if (line[0] == '#' || line[0] == '\n')
			continue;
		if (!strchr(line, '\n'))
			fail_msg("sql_statements.tsv:%d: longer than %zu bytes", lineno,
				 sizeof(line));
		line[strcspn(line, "\n")] = '\0';
		for (k = 0, p = line; k < 8; k++) {
			f[k] = p;
			p = strchr(p, '\t');
			if (!p) {
				k++;
				break;
			}
			*p++ = '\0';
		}
		if (k < 7)
			fail_msg("sql_statements.tsv:%d: %d columns, want 7 or 8", lineno, k);
		if (strcmp(f[0], name))
			continue;
		if (strcmp(f[1], "run") && strcmp(f[1], "cut") && strcmp(f[1], "norun"))
			fail_msg("sql_statements.tsv:%d: kind '%s'", lineno, f[1]);
		check_read(d, !strcmp(f[1], "cut"), f[2], f[3], f[4], f[5], f[6]);
		n++;
	}
	fclose(in);
	return n;
}

static void test_dbquery__table_postgresql(void **state)
{
	(void)state;
	assert_true(check_table("postgresql", PG) >= 40);
}

static void test_dbquery__table_mysql(void **state)
{
	(void)state;
	assert_true(check_table("mysql", MY) >= 30);
}

static void test_dbquery__table_sqlite(void **state)
{
	(void)state;
	assert_true(check_table("sqlite", LITE) >= 30);
}

static void test_dbquery__table_generic(void **state)
{
	(void)state;
	assert_true(check_table("generic", GEN) >= 15);
}

static void test_dbquery__statements(void **state)
{
	(void)state;
	check_gen("SELECT * FROM users WHERE id = 1", "SELECT", "users", "SELECT users");
	check_gen("select * from orders", "SELECT", "orders", "SELECT orders");
	check_gen("SeLeCt a FROM Orders", "SELECT", "Orders", "SELECT Orders");
	check_gen("INSERT INTO t(a, b) VALUES (1, 2)", "INSERT", "t", "INSERT t");
	check_gen("insert into t values (1), (2) returning id", "INSERT", "t", "INSERT t");
	check_gen("INSERT t VALUES (1)", "INSERT", "t", "INSERT t");
	check_gen("INSERT IGNORE INTO t SET a = 1", "INSERT", "t", "INSERT t");
	check_gen("INSERT INTO t VALUES (1) ON DUPLICATE KEY UPDATE a = 2, b = 3", "INSERT", "t",
		  "INSERT t");
	check_gen("REPLACE INTO kv VALUES ('k', 'v')", "REPLACE", "kv", "REPLACE kv");
	check_gen("UPDATE users SET a = 1, b = 2 WHERE id = 2", "UPDATE", "users", "UPDATE users");
	check_gen("UPDATE ONLY users u SET a = 1", "UPDATE", "users", "UPDATE users");
	check_gen("DELETE FROM sessions WHERE expires < now()", "DELETE", "sessions",
		  "DELETE sessions");
	check_gen("DELETE LOW_PRIORITY FROM sessions", "DELETE", "sessions", "DELETE sessions");
	check_gen("CREATE TABLE IF NOT EXISTS events (id int, user_id int REFERENCES users(id))",
		  "CREATE", "events", "CREATE events");
	check_gen("CREATE TEMPORARY TABLE tmp (a int)", "CREATE", "tmp", "CREATE tmp");
	check_gen("CREATE INDEX i ON t (a)", "CREATE", "", "CREATE");
	check_gen("DROP TABLE IF EXISTS old_t CASCADE", "DROP", "old_t", "DROP old_t");
	check_gen("DROP VIEW v", "DROP", "v", "DROP v");
	check_gen("TRUNCATE TABLE logs", "TRUNCATE", "logs", "TRUNCATE logs");
	check_gen("TRUNCATE logs RESTART IDENTITY", "TRUNCATE", "logs", "TRUNCATE logs");
	check_gen("ALTER TABLE users ADD COLUMN age int, ADD COLUMN b int", "ALTER", "users",
		  "ALTER users");
	check_gen("ALTER TABLE IF EXISTS ONLY users DROP COLUMN age", "ALTER", "users",
		  "ALTER users");
	check_gen("SET search_path = app", "SET", "", "SET");
	check_gen("SELECT*FROM t", "SELECT", "t", "SELECT t");
	check_gen("SELECT * FROM t; ", "SELECT", "t", "SELECT t");
	/* after ';' the next statement's parts follow; the operation is the first's */
	check_gen("DELETE FROM a; SELECT * FROM b", "DELETE", "", "DELETE a SELECT b");
	check_gen("EXPLAIN QUERY PLAN SELECT * FROM t", "EXPLAIN", "", "EXPLAIN SELECT t");
	check_gen("EXPLAIN ANALYZE VERBOSE DELETE FROM t", "EXPLAIN", "", "EXPLAIN DELETE t");
	check_gen("EXPLAIN FORMAT=TREE SELECT 1", "EXPLAIN", "", "EXPLAIN SELECT");
	check_gen("COPY t FROM '/tmp/x.csv' WITH (FORMAT csv)", "COPY", "t", "COPY t");
	check_gen("COPY public.t (a, b) TO STDOUT", "COPY", "public.t", "COPY public.t");
	check_read(GEN, false, "CALL \"Proc\"(1)", "CALL", "", "CALL Proc", "Proc");
}

static void test_dbquery__names(void **state)
{
	(void)state;
	check_gen("SELECT * FROM public.users", "SELECT", "public.users", "SELECT public.users");
	check_gen("SELECT * FROM db.public.users u", "SELECT", "db.public.users",
		  "SELECT db.public.users");
	/* quotes off a name of words and dots, as db.collection.name has it; kept round a space */
	check_gen("SELECT * FROM \"Public\".\"Orders\"", "SELECT", "Public.Orders",
		  "SELECT Public.Orders");
	check_gen("INSERT INTO `shop`.`order items` VALUES (1)", "INSERT", "shop.order items",
		  "INSERT `shop`.`order items`");
	check_gen("UPDATE \"a\"\"b\" SET c = 1", "UPDATE", "a\"b", "UPDATE \"a\"\"b\"");
	check_gen("DELETE FROM \"\" WHERE a = 1", "DELETE", "", "DELETE");
	/* "a . b" is not written as one name; the name is a. */
	check_gen("SELECT * FROM a .b", "SELECT", "a", "SELECT a");
	/* [x] is SQLite's quoted name; to GENERIC and PostgreSQL it is no name */
	check_read(LITE, false, "DELETE FROM [a b].[c] WHERE x = 'y'", "DELETE", "a b.c",
		   "DELETE [a b].[c]", NULL);
	check_read(PG, false, "DELETE FROM [a]", "DELETE", "", "DELETE", NULL);
	/* "x" is a name in a name's place in every dialect, never in an expression */
	check_read(MY, false, "UPDATE \"t\" SET a = \"v\"", "UPDATE", "t", "UPDATE t", NULL);
	check_read(LITE, false, "SELECT \"a\" FROM \"t\"", "SELECT", "t", "SELECT t", NULL);
}

static void test_dbquery__several_tables(void **state)
{
	(void)state;
	check_gen("SELECT * FROM (SELECT 1) s", "SELECT", "", "SELECT SELECT");
	check_gen("SELECT * FROM (SELECT * FROM t) s", "SELECT", "t", "SELECT SELECT t");
	check_gen("SELECT * FROM a LEFT OUTER JOIN b USING (id)", "SELECT", "", "SELECT a b");
	check_gen("SELECT * FROM a x, b y", "SELECT", "", "SELECT a b");
	check_gen("SELECT * FROM a AS x, b", "SELECT", "", "SELECT a b");
	check_gen("SELECT * FROM (a JOIN b ON a.x = b.x) JOIN c ON c.y = a.y", "SELECT", "",
		  "SELECT a b c");
	check_gen("SELECT (SELECT max(x) FROM b) FROM a", "SELECT", "", "SELECT SELECT b a");
	check_gen("UPDATE t1, t2 SET t1.a = t2.a", "UPDATE", "", "UPDATE t1 t2");
	check_gen("DELETE t1 FROM t1 JOIN t2 ON t1.id = t2.id", "DELETE", "", "DELETE t1 t2");
	check_gen("INSERT INTO t SELECT * FROM u", "INSERT", "", "INSERT t SELECT u");
	check_gen("INSERT INTO t SELECT * FROM t", "INSERT", "t", "INSERT t SELECT t");
	check_gen("CREATE TABLE t AS SELECT 1", "CREATE", "t", "CREATE t SELECT");
	check_gen("TRUNCATE a, b", "TRUNCATE", "", "TRUNCATE a b");
	check_gen("MERGE INTO t USING (SELECT * FROM s) AS x ON t.id = x.id WHEN MATCHED THEN "
		  "UPDATE SET a = 1, b = 2",
		  "MERGE", "", "MERGE t SELECT s");
	check_gen("MERGE INTO t USING (SELECT 1 AS id) AS x ON t.id = x.id WHEN NOT MATCHED THEN "
		  "INSERT (id) VALUES (x.id)",
		  "MERGE", "t", "MERGE t SELECT");
}

static void test_dbquery__one_table(void **state)
{
	(void)state;
	/* FROM inside a function's parentheses and commas after the FROM list name no table. */
	check_gen("SELECT extract(year FROM ts), substring(s FROM 2) FROM t", "SELECT", "t",
		  "SELECT t");
	check_gen("SELECT a, b FROM t ORDER BY a, b", "SELECT", "t", "SELECT t");
	check_gen("SELECT * FROM t GROUP BY a, b LIMIT 10, 20", "SELECT", "t", "SELECT t");
	check_gen("SELECT * FROM t AS x WHERE x.a IN ($1, $2)", "SELECT", "t", "SELECT t");
	check_gen("SELECT * FROM t FOR UPDATE OF t, u", "SELECT", "t", "SELECT t");
	check_gen("SELECT * FROM t WHERE a IS NOT DISTINCT FROM b", "SELECT", "t", "SELECT t");
	/* Cut by the capture: what was read decides; a name reaching the cut is not taken. */
	check_read(GEN, true, "SELECT * FROM users WHERE name = 'bo", "SELECT", "users",
		   "SELECT users", NULL);
	check_read(GEN, true, "INSERT INTO t VALUES ('a long value cut", "INSERT", "t", "INSERT t",
		   NULL);
	check_read(GEN, true, "SELECT * FROM a, use", "SELECT", "a", "SELECT a", NULL);
	check_read(GEN, false, "SELECT * FROM a, use", "SELECT", "", "SELECT a use", NULL);
	check_read(PG, true, "SELECT * FROM a JOIN public.", "SELECT", "a", "SELECT a", NULL);
}

static void test_dbquery__leading(void **state)
{
	(void)state;
	check_gen("  /* hi */ -- x\n (SELECT * FROM t)", "SELECT", "t", "SELECT t");
	check_gen("((select 1))", "SELECT", "", "SELECT");
	check_gen("(SELECT * FROM t) UNION (SELECT * FROM u)", "SELECT", "", "SELECT t SELECT u");
	check_gen("\n\tDELETE FROM t", "DELETE", "t", "DELETE t");
}

static void test_dbquery__with(void **state)
{
	(void)state;
	/* a CTE's name is no table: its body's tables are */
	check_gen("WITH x AS (SELECT * FROM t) SELECT * FROM x", "SELECT", "t", "SELECT t SELECT");
	check_gen("WITH X AS (SELECT * FROM t) SELECT * FROM x JOIN u ON true", "SELECT", "",
		  "SELECT t SELECT u");
	check_gen("with recursive r(n) AS (SELECT 1 UNION SELECT n + 1 FROM r) "
		  "insert into t select n from r",
		  "INSERT", "t", "SELECT SELECT INSERT t SELECT");
	check_gen("WITH a AS (SELECT 1), b AS (DELETE FROM t RETURNING *) UPDATE u SET x = 1",
		  "UPDATE", "", "SELECT DELETE t UPDATE u");
	check_gen("WITH a AS MATERIALIZED (SELECT * FROM t) DELETE FROM u USING a", "DELETE", "",
		  "SELECT t DELETE u");
	check_gen("WITH x AS (SELECT 1)", "WITH", "", "SELECT");
	/* WITH that is no CTE list: WITH ORDINALITY, WITH TIME ZONE */
	check_gen("SELECT * FROM unnest(a) WITH ORDINALITY", "SELECT", "", "SELECT");
	check_gen("SELECT CAST(a AS timestamp WITH TIME ZONE) FROM t", "SELECT", "t", "SELECT t");
}

static void test_dbquery__nothing(void **state)
{
	struct dbquery_statement st;

	(void)state;
	check_gen("", "", "", "");
	check_gen("   ", "", "", "");
	check_gen("-- only a comment", "", "", "");
	check_gen("/* only a comment */", "", "", "");
	check_gen("'SELECT'", "", "", "");
	check_gen("42", "", "", "");
	check_gen("\"SELECT\" 1", "", "", "");
	check_gen("SELECT1 FROM t", "", "", "");
	check_gen("my_proc(1)", "MY_PROC", "", "MY_PROC");
	memset(&st, 'Z', sizeof(st));
	dbquery__read(NULL, 0, false, GEN, &st);
	assert_string_equal(st.operation, "");
	assert_string_equal(st.summary, "");
}

/* A table name never comes out of a string, a number or a comment. */
static void test_dbquery__no_literal(void **state)
{
	(void)state;
	check_gen("SELECT 'FROM secret' FROM t", "SELECT", "t", "SELECT t");
	check_gen("SELECT * /* FROM secret */ FROM t", "SELECT", "t", "SELECT t");
	check_gen("SELECT $$ FROM secret $$ FROM t", "SELECT", "t", "SELECT t");
	check_gen("SELECT \"x\" FROM t", "SELECT", "t", "SELECT t");
	/* A MySQL escape would hide the first FROM in the string: the rest is not read. */
	check_gen("SELECT 'a\\' FROM secret' FROM t", "SELECT", "", "SELECT");
	check_gen("SELECT 1 # FROM secret'\n", "SELECT", "", "SELECT");
	check_gen("SELECT * FROM 'secret'", "SELECT", "", "SELECT");
	check_gen("INSERT INTO 'secret' VALUES (1)", "INSERT", "", "INSERT");
	check_gen("DELETE FROM \"it's\"", "DELETE", "", "DELETE");
	check_gen("SELECT * FROM 42", "SELECT", "", "SELECT");
	check_read(PG, false, "SELECT * FROM $1", "SELECT", "", "SELECT", NULL);
	check_read(PG, false, "UPDATE E'secret' SET a = 1", "UPDATE", "", "UPDATE", NULL);
	check_read(PG, false, "INSERT INTO $q$secret$q$ VALUES (1)", "INSERT", "", "INSERT", NULL);
	check_read(LITE, false, "DELETE FROM 'secret'", "DELETE", "", "DELETE", NULL);
	check_read(LITE, false, "SELECT * FROM $secret", "SELECT", "", "SELECT", NULL);
	check_read(MY, false, "INSERT INTO \"se\\\"cret\" VALUES (1)", "INSERT", "", "INSERT",
		   NULL);
	check_read(MY, false, "SELECT * FROM t WHERE a IN (\"x\", \"y\")", "SELECT", "t",
		   "SELECT t", NULL);
	check_read(MY, false, "SELECT * FROM t, \"it's\"", "SELECT", "t", "SELECT t", NULL);
	check_read(PG, false, "CALL p('secret')", "CALL", "", "CALL p", "p");
	check_read(PG, false, "CALL 'secret'()", "CALL", "", "CALL", NULL);
}

/* Parts are never cut: the first that does not fit in 255 bytes ends the summary. */
static void test_dbquery__summary_bound(void **state)
{
	char sql[1024], want[300], name[64];
	struct dbquery_statement st;
	size_t n = 0, w = 0;
	int i;

	(void)state;
	n = (size_t)snprintf(sql, sizeof(sql), "SELECT * FROM ");
	w = (size_t)snprintf(want, sizeof(want), "SELECT");
	for (i = 0; i < 30; i++) {
		snprintf(name, sizeof(name), "table_number_%02d", i);
		n += (size_t)snprintf(sql + n, sizeof(sql) - n, "%s%s", i ? ", " : "", name);
		if (w + 1 + strlen(name) <= DBQUERY_SUMMARY_MAX)
			w += (size_t)snprintf(want + w, sizeof(want) - w, " %s", name);
	}
	dbquery__read(sql, n, false, GEN, &st);
	assert_string_equal(st.summary, want);
	assert_true(strlen(st.summary) <= DBQUERY_SUMMARY_MAX);
	assert_true(strlen(st.summary) > DBQUERY_SUMMARY_MAX - 17);
	assert_string_equal(st.collection, "");
	/* LEN bounds the text */
	dbquery__read("SELECT * FROM users", 16, false, GEN, &st);
	assert_string_equal(st.summary, "SELECT us");
	dbquery__read("SELECT * FROM users", 16, true, GEN, &st);
	assert_string_equal(st.summary, "SELECT");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_dbquery__examples),
		cmocka_unit_test(test_dbquery__empty),
		cmocka_unit_test(test_dbquery__comments),
		cmocka_unit_test(test_dbquery__nested_comments),
		cmocka_unit_test(test_dbquery__doubled_quotes),
		cmocka_unit_test(test_dbquery__backslashes),
		cmocka_unit_test(test_dbquery__double_quotes),
		cmocka_unit_test(test_dbquery__prefixed_strings),
		cmocka_unit_test(test_dbquery__dollar_quotes),
		cmocka_unit_test(test_dbquery__placeholders),
		cmocka_unit_test(test_dbquery__numbers),
		cmocka_unit_test(test_dbquery__keywords_kept),
		cmocka_unit_test(test_dbquery__mysql_comments),
		cmocka_unit_test(test_dbquery__brackets),
		cmocka_unit_test(test_dbquery__nul_byte),
		cmocka_unit_test(test_dbquery__truncated),
		cmocka_unit_test(test_dbquery__small_buffers),
		cmocka_unit_test(test_dbquery__utf8_cut),
		cmocka_unit_test(test_dbquery__password_never_leaves),
		cmocka_unit_test(test_dbquery__table_postgresql),
		cmocka_unit_test(test_dbquery__table_mysql),
		cmocka_unit_test(test_dbquery__table_sqlite),
		cmocka_unit_test(test_dbquery__table_generic),
		cmocka_unit_test(test_dbquery__statements),
		cmocka_unit_test(test_dbquery__names),
		cmocka_unit_test(test_dbquery__several_tables),
		cmocka_unit_test(test_dbquery__one_table),
		cmocka_unit_test(test_dbquery__leading),
		cmocka_unit_test(test_dbquery__with),
		cmocka_unit_test(test_dbquery__nothing),
		cmocka_unit_test(test_dbquery__no_literal),
		cmocka_unit_test(test_dbquery__summary_bound),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
