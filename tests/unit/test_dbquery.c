// SPDX-License-Identifier: MIT
/*
 * Unit tests for dbquery.c: the sanitized text of queries as each dialect reads them, compared
 * whole, so that a literal left in place or a token lost fails; a password in every form a query
 * can carry it, cut at every length a capture could cut it, never in the output; and the
 * operation and table of each kind of statement, and none where a statement names several.
 */
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <setjmp.h>
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

/* ---- summary --------------------------------------------------------------------------------- */

static void check_summary(const char *sql, const char *want_op, const char *want_coll)
{
	char op[32], coll[64];

	memset(op, 'Z', sizeof(op));
	memset(coll, 'Z', sizeof(coll));
	dbquery__summary(sql, strlen(sql), op, sizeof(op), coll, sizeof(coll));
	if (strcmp(op, want_op) || strcmp(coll, want_coll))
		fail_msg("'%s' gave op '%s' collection '%s', want '%s' '%s'", sql, op, coll,
			 want_op, want_coll);
}

static void test_dbquery__summary_statements(void **state)
{
	(void)state;
	check_summary("SELECT * FROM users WHERE id = 1", "SELECT", "users");
	check_summary("select * from orders", "SELECT", "orders");
	check_summary("SeLeCt a FROM Orders", "SELECT", "Orders");
	check_summary("INSERT INTO t(a, b) VALUES (1, 2)", "INSERT", "t");
	check_summary("insert into t values (1), (2) returning id", "INSERT", "t");
	check_summary("INSERT t VALUES (1)", "INSERT", "t");
	check_summary("INSERT IGNORE INTO t SET a = 1", "INSERT", "t");
	check_summary("INSERT INTO t VALUES (1) ON DUPLICATE KEY UPDATE a = 2", "INSERT", "t");
	check_summary("REPLACE INTO kv VALUES ('k', 'v')", "REPLACE", "kv");
	check_summary("UPDATE users SET a = 1, b = 2 WHERE id = 2", "UPDATE", "users");
	check_summary("UPDATE ONLY users u SET a = 1", "UPDATE", "users");
	check_summary("DELETE FROM sessions WHERE expires < now()", "DELETE", "sessions");
	check_summary("DELETE LOW_PRIORITY FROM sessions", "DELETE", "sessions");
	check_summary(
	    "CREATE TABLE IF NOT EXISTS events (id int, user_id int REFERENCES users(id))",
	    "CREATE", "events");
	check_summary("CREATE TEMPORARY TABLE tmp (a int)", "CREATE", "tmp");
	check_summary("CREATE INDEX i ON t (a)", "CREATE", "");
	check_summary("DROP TABLE IF EXISTS old_t CASCADE", "DROP", "old_t");
	check_summary("DROP TABLE t", "DROP", "t");
	check_summary("DROP VIEW v", "DROP", "");
	check_summary("TRUNCATE TABLE logs", "TRUNCATE", "logs");
	check_summary("TRUNCATE logs RESTART IDENTITY", "TRUNCATE", "logs");
	check_summary("ALTER TABLE users ADD COLUMN age int, ADD COLUMN b int", "ALTER", "users");
	check_summary("ALTER TABLE IF EXISTS ONLY users DROP COLUMN age", "ALTER", "users");
	check_summary("BEGIN", "BEGIN", "");
	check_summary("commit", "COMMIT", "");
	check_summary("ROLLBACK TO SAVEPOINT s1", "ROLLBACK", "");
	check_summary("SET search_path = app", "SET", "");
	check_summary("EXPLAIN SELECT * FROM t", "EXPLAIN", "");
	check_summary("SELECT 1", "SELECT", "");
	check_summary("SELECT*FROM t", "SELECT", "t");
}

static void test_dbquery__summary_names(void **state)
{
	(void)state;
	check_summary("SELECT * FROM public.users", "SELECT", "public.users");
	check_summary("SELECT * FROM db.public.users u", "SELECT", "db.public.users");
	check_summary("SELECT * FROM \"Public\".\"Orders\"", "SELECT", "Public.Orders");
	check_summary("SELECT * FROM \"Orders\" WHERE a = 1", "SELECT", "Orders");
	check_summary("INSERT INTO `shop`.`order items` VALUES (1)", "INSERT", "shop.order items");
	check_summary("UPDATE \"a\"\"b\" SET c = 1", "UPDATE", "a\"b");
	check_summary("DELETE FROM \"\" WHERE a = 1", "DELETE", "");
	/* "a . b" is not written as one name; the name is a. */
	check_summary("SELECT * FROM a .b", "SELECT", "a");
}

static void test_dbquery__summary_several_tables(void **state)
{
	(void)state;
	check_summary("SELECT * FROM (SELECT 1) s", "SELECT", "");
	check_summary("SELECT * FROM a JOIN b ON a.id = b.id", "SELECT", "");
	check_summary("SELECT * FROM a LEFT OUTER JOIN b USING (id)", "SELECT", "");
	check_summary("SELECT * FROM a STRAIGHT_JOIN b", "SELECT", "");
	check_summary("SELECT * FROM a, b WHERE a.id = b.id", "SELECT", "");
	check_summary("SELECT * FROM a x, b y", "SELECT", "");
	check_summary("SELECT * FROM a AS x, b", "SELECT", "");
	check_summary("SELECT * FROM a WHERE id IN (SELECT id FROM b)", "SELECT", "");
	check_summary("SELECT (SELECT max(x) FROM b) FROM a", "SELECT", "");
	check_summary("SELECT a FROM t UNION SELECT b FROM u", "SELECT", "");
	check_summary("SELECT * FROM generate_series(1, 3)", "SELECT", "");
	check_summary("UPDATE t SET a = u.a FROM u WHERE t.id = u.id", "UPDATE", "");
	check_summary("UPDATE t1, t2 SET t1.a = t2.a", "UPDATE", "");
	check_summary("DELETE FROM t USING u WHERE t.id = u.id", "DELETE", "");
	check_summary("DELETE t1 FROM t1 JOIN t2 ON t1.id = t2.id", "DELETE", "");
	check_summary("INSERT INTO t SELECT * FROM u", "INSERT", "");
	check_summary("CREATE TABLE t AS SELECT 1", "CREATE", "");
	check_summary("DROP TABLE a, b", "DROP", "");
	check_summary("TRUNCATE a, b", "TRUNCATE", "");
}

static void test_dbquery__summary_one_table(void **state)
{
	(void)state;
	/* FROM inside a function's parentheses and commas after the FROM list name no table. */
	check_summary("SELECT extract(year FROM ts), substring(s FROM 2) FROM t", "SELECT", "t");
	check_summary("SELECT a, b FROM t ORDER BY a, b", "SELECT", "t");
	check_summary("SELECT * FROM t GROUP BY a, b LIMIT 10, 20", "SELECT", "t");
	check_summary("SELECT * FROM t AS x WHERE x.a IN ($1, $2)", "SELECT", "t");
	check_summary("SELECT * FROM ONLY t", "SELECT", "t");
	check_summary("SELECT * FROM t FOR UPDATE", "SELECT", "t");
	check_summary("SELECT * FROM t; ", "SELECT", "t");
	/* Cut by the capture: what was seen decides. */
	check_summary("SELECT * FROM users WHERE name = 'bo", "SELECT", "users");
	check_summary("INSERT INTO t VALUES ('a long value cut", "INSERT", "t");
}

static void test_dbquery__summary_leading(void **state)
{
	(void)state;
	check_summary("  /* hi */ -- x\n (SELECT * FROM t)", "SELECT", "t");
	check_summary("((select 1))", "SELECT", "");
	check_summary("(SELECT * FROM t) UNION (SELECT * FROM u)", "SELECT", "");
	check_summary("\n\tDELETE FROM t", "DELETE", "t");
}

static void test_dbquery__summary_with(void **state)
{
	(void)state;
	check_summary("WITH x AS (SELECT * FROM t) SELECT * FROM x", "SELECT", "");
	check_summary("with recursive r(n) AS (SELECT 1 UNION SELECT n + 1 FROM r) "
		      "insert into t select n from r",
		      "INSERT", "");
	check_summary("WITH a AS (SELECT 1), b AS (DELETE FROM t RETURNING *) UPDATE u SET x = 1",
		      "UPDATE", "");
	check_summary("WITH x AS (SELECT 1)", "WITH", "");
}

static void test_dbquery__summary_nothing(void **state)
{
	(void)state;
	check_summary("", "", "");
	check_summary("   ", "", "");
	check_summary("-- only a comment", "", "");
	check_summary("/* only a comment */", "", "");
	check_summary("my_proc(1)", "", "");
	check_summary("'SELECT'", "", "");
	check_summary("42", "", "");
	check_summary("\"SELECT\" 1", "", "");
	check_summary("SELECT1 FROM t", "", "");
}

/* A table name never comes out of a string or a comment. */
static void test_dbquery__summary_no_literal(void **state)
{
	(void)state;
	check_summary("SELECT 'FROM secret' FROM t", "SELECT", "t");
	check_summary("SELECT * /* FROM secret */ FROM t", "SELECT", "t");
	check_summary("SELECT $$ FROM secret $$ FROM t", "SELECT", "t");
	check_summary("SELECT \"x\" FROM t", "SELECT", "t");
	/* A MySQL escape would hide the first FROM in the string: with two readings, none. */
	check_summary("SELECT 'a\\' FROM secret' FROM t", "SELECT", "");
	check_summary("SELECT 1 # FROM secret'\n", "SELECT", "");
	check_summary("SELECT * FROM 'secret'", "SELECT", "");
	check_summary("INSERT INTO 'secret' VALUES (1)", "INSERT", "");
	check_summary("DELETE FROM \"it's\"", "DELETE", "");
}

/* As spans are made: the summary of the sanitized text, which no literal is left in. */
static void test_dbquery__summary_of_sanitized(void **state)
{
	static const struct {
		enum db_dialect d;
		const char *q, *op, *coll;
	} cases[] = {
		{ MY, "SELECT * FROM `orders` WHERE note = \"FROM secret\" # FROM x", "SELECT",
		  "orders" },
		{ PG, "UPDATE \"Users\" SET pw = E'\\' FROM secret' WHERE id = $1", "UPDATE",
		  "Users" },
		{ PG, "INSERT INTO public.t VALUES ($$ FROM x $$, 1.5)", "INSERT", "public.t" },
		{ LITE, "DELETE FROM [t] WHERE a = 'x'", "DELETE", "" },
		{ LITE, "DELETE FROM t WHERE a = \"x\"", "DELETE", "t" },
	};
	char text[256], op[32], coll[64];
	size_t i, n;

	(void)state;
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		n = dbquery__sanitize(cases[i].q, strlen(cases[i].q), false, cases[i].d, text,
				      sizeof(text));
		dbquery__summary(text, n, op, sizeof(op), coll, sizeof(coll));
		if (strcmp(op, cases[i].op) || strcmp(coll, cases[i].coll))
			fail_msg("'%s' (sanitized '%s') gave '%s' '%s', want '%s' '%s'", cases[i].q,
				 text, op, coll, cases[i].op, cases[i].coll);
	}
}

static void test_dbquery__summary_caps(void **state)
{
	static const char q[] = "SELECT * FROM users";
	char op[16], coll[16];

	(void)state;
	/* A name or keyword that does not fit is not given cut: it would be another one. */
	dbquery__summary(q, strlen(q), op, 6, coll, 5);
	assert_string_equal(op, "");
	assert_string_equal(coll, "");
	dbquery__summary(q, strlen(q), op, 7, coll, 6);
	assert_string_equal(op, "SELECT");
	assert_string_equal(coll, "users");
	memset(op, 'Z', sizeof(op));
	memset(coll, 'Z', sizeof(coll));
	dbquery__summary(q, strlen(q), op, 0, coll, 0);
	assert_int_equal(op[0], 'Z');
	assert_int_equal(coll[0], 'Z');
	dbquery__summary(q, strlen(q), NULL, 0, coll, sizeof(coll));
	assert_string_equal(coll, "users");
	dbquery__summary(q, strlen(q), op, sizeof(op), NULL, 0);
	assert_string_equal(op, "SELECT");
	dbquery__summary(q, strlen(q), op, 1, coll, 1);
	assert_string_equal(op, "");
	assert_string_equal(coll, "");
	dbquery__summary(NULL, 0, op, sizeof(op), coll, sizeof(coll));
	assert_string_equal(op, "");
	assert_string_equal(coll, "");
	/* LEN bounds the text. */
	dbquery__summary(q, 16, op, sizeof(op), coll, sizeof(coll));
	assert_string_equal(op, "SELECT");
	assert_string_equal(coll, "us");
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
		cmocka_unit_test(test_dbquery__summary_statements),
		cmocka_unit_test(test_dbquery__summary_names),
		cmocka_unit_test(test_dbquery__summary_several_tables),
		cmocka_unit_test(test_dbquery__summary_one_table),
		cmocka_unit_test(test_dbquery__summary_leading),
		cmocka_unit_test(test_dbquery__summary_with),
		cmocka_unit_test(test_dbquery__summary_nothing),
		cmocka_unit_test(test_dbquery__summary_no_literal),
		cmocka_unit_test(test_dbquery__summary_of_sanitized),
		cmocka_unit_test(test_dbquery__summary_caps),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
