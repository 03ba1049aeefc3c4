/* SPDX-License-Identifier: MIT */
/*
 * What a database span says about its query: the query text with every literal value replaced by
 * '?' (db.query.text must never carry a password or a customer's data), and the operation and
 * the one table it acts on (db.operation.name, db.collection.name) where the text makes them plain.
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

/*
 * The operation of the query SQL (LEN bytes) into OP: its first keyword upper-cased (SELECT,
 * INSERT, BEGIN, ...; after WITH, the statement the CTEs lead to), and the table it acts on into
 * COLL, as written (schema.table kept, quotes taken off), when it acts on that one table only
 * (no join, subquery, union or second table). SQL is read as GENERIC; sanitized text will do.
 * An empty string for what cannot be said or does not fit; nothing written to a buffer of cap 0.
 */
void dbquery__summary(const char *sql, size_t len, char *op, size_t op_cap, char *coll,
		      size_t coll_cap);

#endif
