// SPDX-License-Identifier: MIT
/*
 * Fuzzes dbquery.c, which reads the SQL text a traced service sends its database: any bytes,
 * cut anywhere by the capture. Beyond the sanitizers this checks what the module promises,
 * aborting on any violation:
 *
 * - the sanitized text stays within its buffer, ends with a NUL, is as long as returned, and is
 *   never longer than the input (a literal or comment becomes at most one byte);
 * - it holds no single quote, in any dialect: every '...' is a literal, and an identifier with a
 *   quote in it is replaced too;
 * - with a smaller buffer it is the whole text's start, cut at most three bytes short (the start
 *   of a UTF-8 character); and sanitizing it again changes nothing;
 * - the statement reader's fields end within their arrays, the operation is upper-case letters
 *   and '_', the summary at most 255 bytes with no space at either end, and a table or a
 *   procedure only with a summary that holds it;
 * - the reader gives the same for the text as for the sanitized text, so that no literal can
 *   become, or change, any part of what it gives (check_read says where this is not asked).
 *
 * Byte 0: bits 0-1 the dialect, bit 2 whether the capture was cut; the rest is the query.
 */
#include "model/dbquery.h"
#include "fuzz.h"

/* Past the end of every output buffer, to catch a write beyond CAP. */
#define CANARY 0x5a
#define SLACK 16

static void check_out(const char *out, size_t cap, size_t n)
{
	size_t i;

	if (!cap)
		return;
	CHECK(n < cap);
	CHECK(out[n] == '\0');
	CHECK(strlen(out) == n);
	CHECK(!memchr(out, '\'', n));
	for (i = cap; i < cap + SLACK; i++)
		CHECK((unsigned char)out[i] == CANARY);
}

/* Sanitizes into a fresh buffer of CAP bytes followed by canaries; the caller frees it. */
static char *sanitize(const char *in, size_t len, bool cut, enum db_dialect d, size_t cap,
		      size_t *n)
{
	char *out = malloc(cap + SLACK);

	if (!out)
		abort();
	memset(out, CANARY, cap + SLACK);
	*n = dbquery__sanitize(in, len, cut, d, out, cap);
	if (!cap)
		CHECK(*n == 0 && (unsigned char)out[0] == CANARY);
	check_out(out, cap, *n);
	return out;
}

static void check_sanitize(const char *in, size_t len, bool cut, enum db_dialect d)
{
	static const size_t caps[] = {0, 1, 2, 3, 8, 17, 64};
	size_t n, m, k, i;
	char *whole, *part, *again;

	whole = sanitize(in, len, cut, d, len + 1, &n);
	CHECK(n <= len);
	for (i = 0; i < sizeof(caps) / sizeof(caps[0]); i++) {
		k = caps[i];
		part = sanitize(in, len, cut, d, k, &m);
		if (k) {
			CHECK(!memcmp(part, whole, m));
			CHECK(m == (n < k ? n : m) && (n < k || m + 4 >= k));
		}
		free(part);
	}
	/*
	 * What was cut stays cut in the second pass; the text itself is whole. MySQL reads "--"
	 * as a comment only before a space or a control byte, so a comment dropped after dashes
	 * can leave one that the second pass drops: no fixed point there.
	 */
	again = sanitize(whole, n, false, d, n + 1, &m);
	if ((d != DB_DIALECT_MYSQL || !memmem(whole, n, "--", 2)) &&
	    (m != n || memcmp(again, whole, n))) {
		fprintf(stderr, "fuzz_dbquery: not a fixed point: '%s' -> '%s'\n", whole, again);
		abort();
	}
	free(again);
	free(whole);
}

/* A field of the statement ends within its array. */
#define CHECK_FIELD(st, f) CHECK(memchr((st)->f, '\0', sizeof((st)->f)))

static void check_fields(const struct dbquery_statement *st)
{
	size_t i, n;

	CHECK_FIELD(st, operation);
	CHECK_FIELD(st, collection);
	CHECK_FIELD(st, summary);
	CHECK_FIELD(st, procedure);
	for (i = 0; st->operation[i]; i++)
		CHECK((st->operation[i] >= 'A' && st->operation[i] <= 'Z') ||
		      st->operation[i] == '_');
	n = strlen(st->summary);
	CHECK(n <= DBQUERY_SUMMARY_MAX);
	CHECK(!n || (st->summary[0] != ' ' && st->summary[n - 1] != ' '));
	/* a table is a target of the summary; a procedure follows a CALL */
	CHECK(!st->collection[0] ||
	      (n && strcmp(st->operation, "EXPLAIN") && strcmp(st->operation, "CALL")));
	CHECK(!st->procedure[0] || strstr(st->summary, "CALL"));
}

/*
 * What the reader gives for IN (LEN bytes), read as dialect D, is what it gives for the text
 * with every literal replaced by '?' (the sanitizer's output): so no literal, whatever its
 * bytes, can make or become any part of the summary, the table or the procedure. Three known
 * exceptions are not compared: "x" in a name's place in MySQL and SQLite (a name there, a
 * string to the sanitizer: dbquery.h), a NUL (the sanitizer writes '?' for it, which turns a
 * quoted name holding one, never taken, into one taken), and MySQL text where dropping a
 * comment made a new "--".
 */
static bool same_reading(const struct dbquery_statement *a, const struct dbquery_statement *b)
{
	return !strcmp(a->summary, b->summary) && !strcmp(a->collection, b->collection) &&
	       !strcmp(a->procedure, b->procedure) && !strcmp(a->operation, b->operation);
}

static void check_read(const char *in, size_t len, bool cut, enum db_dialect d)
{
	struct dbquery_statement *raw, *san, *whole;
	char *text;
	size_t n;

	raw = malloc(sizeof(*raw));
	san = malloc(sizeof(*san));
	whole = malloc(sizeof(*whole));
	if (!raw || !san || !whole)
		abort();
	dbquery__read(in, len, cut, d, raw);
	check_fields(raw);
	text = sanitize(in, len, cut, d, len + 1, &n);
	dbquery__read(text, n, cut, d, san);
	check_fields(san);
	/*
	 * A cut text whose end was a comment loses it to the sanitizer, and with it what told
	 * that the name before it was whole: then the sanitized text read as whole agrees.
	 */
	dbquery__read(text, n, false, d, whole);
	if (!((d == DB_DIALECT_MYSQL || d == DB_DIALECT_SQLITE) && memchr(in, '"', len)) &&
	    !memchr(in, '\0', len) && !(d == DB_DIALECT_MYSQL && memmem(text, n, "--", 2)) &&
	    !same_reading(raw, san) && !(cut && same_reading(raw, whole))) {
		fprintf(stderr,
			"fuzz_dbquery: a literal changed the reading: '%.*s' gave '%s' '%s' '%s', "
			"sanitized '%s' gave '%s' '%s' '%s'\n",
			(int)len, in, raw->operation, raw->collection, raw->summary, text,
			san->operation, san->collection, san->summary);
		abort();
	}
	free(text);
	free(whole);
	free(san);
	free(raw);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	enum db_dialect d;
	char *in;
	size_t len;
	bool cut;

	if (!size)
		return 0;
	d = (enum db_dialect)(data[0] & 3);
	cut = data[0] & 4;
	len = size - 1;
	in = fuzz_dup(data + 1, len);
	if (!in)
		return 0;
	check_sanitize(in, len, cut, d);
	check_read(in, len, cut, d);
	free(in);
	return 0;
}
