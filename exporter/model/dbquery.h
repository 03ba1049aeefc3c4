/* SPDX-License-Identifier: MIT */
/*
 * What a database span says about its query: the query text with every literal value replaced by
 * '?' (db.query.text must never carry a password or a customer's data), and what the statement
 * does: its operation, the tables it acts on (db.query.summary, db.operation.name,
 * db.collection.name) and the procedure it calls, read by the statement's own dialect.
 */
#ifndef GOSPAN_DBQUERY_H
#define GOSPAN_DBQUERY_H

#include <stdbool.h>
#include <stddef.h>

/*
 * How the text is quoted. MySQL reads "..." as a string, lets a backslash escape inside strings
 * and starts comments with '#'; PostgreSQL has E'...' and dollar quotes and nests comments;
 * SQLite takes a "..." that names no column for a string. GENERIC, for a database gospan cannot
 * tell, reads "..." as a name and '#' as a comment, and wherever the dialects would end a string
 * or comment in different places (a backslash before a quote, a nested comment), replaces
 * everything from there to the end.
 */
enum db_dialect {
	DB_DIALECT_GENERIC,
	DB_DIALECT_POSTGRESQL,
	DB_DIALECT_MYSQL,
	DB_DIALECT_SQLITE,
};

/*
 * Copies the SQL text IN (LEN bytes, cut short by the capture when TRUNCATED) to OUT with every
 * literal replaced by '?' and comments removed; placeholders ($1, ?, :name), identifiers,
 * keywords and whitespace are copied as they are. A string, comment or dollar quote that does
 * not end is replaced by one '?' to the end. OUT gets at most CAP - 1 bytes and a NUL (nothing
 * when CAP is 0), cut before a partial UTF-8 character. Returns the bytes written before the NUL.
 */
size_t dbquery__sanitize(const char *in, size_t len, bool truncated, enum db_dialect d, char *out,
			 size_t cap);

/* db.query.summary is at most this long (the conventions' bound). */
#define DBQUERY_SUMMARY_MAX 255

/* What a statement says of itself; every field NUL-terminated, "" for what it does not say. */
struct dbquery_statement {
	/* db.operation.name: the leading keyword upper-cased (after WITH, the statement's) */
	char operation[32];
	/* db.collection.name: the one table, quotes taken off, schema kept */
	char collection[256];
	/* db.query.summary: operations upper-cased and their targets, in text order */
	char summary[DBQUERY_SUMMARY_MAX + 1];
	/* db.stored_procedure.name: CALL's procedure, quotes taken off */
	char procedure[256];
};

/*
 * Reads the statement SQL (LEN bytes, cut short by the capture when TRUNCATED) as dialect D
 * reads it, into ST.
 *
 * The summary lists the operations and the tables they act on, in the order of the text:
 * "INSERT shipping_details SELECT orders", "SELECT SELECT orders customers". Operations are the
 * statement keywords (SELECT anywhere; INSERT, UPDATE, DELETE, MERGE, ... where a statement
 * begins, so ON DUPLICATE KEY UPDATE, DO UPDATE and MERGE's THEN INSERT are no operations), and
 * dialect modifiers (INSERT OR REPLACE, INSERT IGNORE, LOW_PRIORITY) are none. Targets are
 * written as in the text, schema kept, each once after its operation, their quotes taken off
 * where the name is words and dots only ("orm_items" gives orm_items: ORMs quote every name, and
 * the summary is the span's name), kept where they hold a name together, as in the conventions'
 * example (FROM "song list" gives SELECT "song list"); a CTE's name, a
 * function in FROM (generate_series(...)) and MySQL's DUAL are none.
 * CALL's procedure follows CALL; EXPLAIN is followed by its statement's summary. At most
 * DBQUERY_SUMMARY_MAX bytes, ended before the first part that does not fit, never inside one.
 *
 * The collection is given when the summary has one table (however often), except for EXPLAIN,
 * CALL and COPY (query): a join, a second FROM table, UPDATE ... FROM, DELETE ... USING, MERGE
 * from a table each name two. It is the summary's target with its quotes off ("Orders" gives
 * Orders, "song list" song list), as gospan gave it before and the databases print it: a table
 * keeps one db.collection.name whether or not the application quotes it.
 *
 * A literal never becomes a name. Names are read only where the grammar wants one (after FROM,
 * JOIN, INTO, UPDATE, USING, TABLE, MERGE INTO, COPY, CALL, and ',' in a table list), and only
 * from a word or a token the dialect's lexer reads as a quoted identifier ("x" in PostgreSQL
 * and GENERIC, `x` in all, [x] in SQLite). The one exception is "x" in MySQL and SQLite, a
 * string to their lexers in an expression: in a name's place a string is no value (MySQL
 * without ANSI_QUOTES rejects it, SQLite and ANSI_QUOTES take the name), so there it is taken.
 * 'x', numbers, E'', dollar quotes, and a quoted name holding a quote of the other kind, a
 * backslash or a control byte are never taken; nothing after a literal that does not end is
 * read; and in a text cut short, a name reaching the cut is not taken (it may be cut itself).
 */
void dbquery__read(const char *sql, size_t len, bool truncated, enum db_dialect d,
		   struct dbquery_statement *st);

#endif
