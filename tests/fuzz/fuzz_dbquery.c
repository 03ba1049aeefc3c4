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
 * - the operation is upper-case letters and the table name a whole name, both the same or empty
 *   with smaller buffers; and each part of the name is in the GENERIC sanitized text, so that it
 *   came from an identifier, never from a literal or a comment.
 *
 * Byte 0: bits 0-1 the dialect, bit 2 whether the capture was cut; the rest is the query.
 */
#include "model/dbquery.h"
#include "fuzz.h"

#define CHECK(cond)                                                                              \
	do {                                                                                     \
		if (!(cond)) {                                                                   \
			fprintf(stderr, "fuzz_dbquery: %s:%d: %s\n", __FILE__, __LINE__, #cond); \
			abort();                                                                 \
		}                                                                                \
	} while (0)

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

/* Each '.'-separated part of NAME is in TEXT, unless quotes inside the name were doubled. */
static void check_name_in(const char *name, const char *text)
{
	const char *p = name, *dot;
	size_t n;

	if (strpbrk(name, "\"`"))
		return;
	while (*p) {
		dot = strchr(p, '.');
		n = dot ? (size_t)(dot - p) : strlen(p);
		if (n && !memmem(text, strlen(text), p, n)) {
			fprintf(stderr, "fuzz_dbquery: table '%s' is not in '%s'\n", name, text);
			abort();
		}
		p += n + (dot != NULL);
	}
}

static void check_summary(const char *in, size_t len)
{
	static const size_t caps[] = {0, 1, 4, 7, 9};
	char op[32 + SLACK], coll[256 + SLACK], op2[16 + SLACK], coll2[16 + SLACK], *text;
	size_t i, k, n;

	memset(op, CANARY, sizeof(op));
	memset(coll, CANARY, sizeof(coll));
	dbquery__summary(in, len, op, 32, coll, 256);
	CHECK(memchr(op, '\0', 32) && memchr(coll, '\0', 256));
	for (i = 32; i < sizeof(op); i++)
		CHECK((unsigned char)op[i] == CANARY);
	for (i = 256; i < sizeof(coll); i++)
		CHECK((unsigned char)coll[i] == CANARY);
	for (i = 0; op[i]; i++)
		CHECK(op[i] >= 'A' && op[i] <= 'Z');

	for (i = 0; i < sizeof(caps) / sizeof(caps[0]); i++) {
		k = caps[i];
		memset(op2, CANARY, sizeof(op2));
		memset(coll2, CANARY, sizeof(coll2));
		dbquery__summary(in, len, op2, k, coll2, k);
		if (!k) {
			CHECK((unsigned char)op2[0] == CANARY && (unsigned char)coll2[0] == CANARY);
			continue;
		}
		CHECK(!strcmp(op2, strlen(op) < k ? op : ""));
		/* A name too long for 256 bytes is none; cut shorter, none either. */
		CHECK(!strcmp(coll2, strlen(coll) < k ? coll : ""));
		CHECK((unsigned char)op2[k] == CANARY && (unsigned char)coll2[k] == CANARY);
	}

	if (!coll[0])
		return;
	text = sanitize(in, len, false, DB_DIALECT_GENERIC, len + 1, &n);
	check_name_in(coll, text);
	free(text);
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
	char *in, *text;
	size_t len, n;
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
	check_summary(in, len);
	/* As gospan runs it: the summary of the sanitized text. */
	text = sanitize(in, len, cut, d, len + 1, &n);
	check_summary(text, n);
	free(text);
	free(in);
	return 0;
}
