// SPDX-License-Identifier: MIT
/*
 * Database query text: one lexer, which cuts SQL into tokens the way the database would, and two
 * readers of its tokens. The sanitizer copies every token but literals (replaced by '?') and
 * comments (dropped); the summary reads the first keyword and the one table a statement names.
 *
 * A literal is safe only where the lexer ends it where the database does. So every dialect is lexed
 * by its own rules, and where the rules are unknown (GENERIC) a token that dialects end in
 * different places, such as '\'' after a backslash or a dollar quote holding a quote, stands for
 * the whole rest of the text: what cannot be told apart is replaced, never guessed.
 */
#include <stdint.h>
#include <string.h>

#include "model/dbquery.h"

/* The longest first word taken as an operation; SQL keywords are far shorter. */
#define OP_MAX 32

enum tok_kind {
	TOK_END,
	TOK_SPACE,   /* whitespace */
	TOK_COMMENT, /* a whole comment */
	TOK_WORD,    /* keyword or identifier, or the name of a :name, @name, $name parameter */
	TOK_QUOTED,  /* quoted identifier */
	TOK_PARAM,   /* $1, ?1 */
	TOK_LITERAL, /* string, number, dollar-quoted text */
	TOK_PUNCT,   /* one byte of anything else */
	TOK_REST,    /* a literal that does not end, or ends where dialects disagree: the rest */
};

struct token {
	enum tok_kind kind;
	size_t start, end;
};

struct lexer {
	const char *s;
	size_t len, pos;
	enum db_dialect d;
	bool truncated;
	/*
	 * GENERIC: where the ']' after the last '[' is. SQLite and SQL Server read [...] as a
	 * quoted identifier, PostgreSQL as a subscript; a token that starts inside and runs past
	 * it is read differently by them.
	 */
	size_t bracket;
	bool no_bracket; /* no ']' from here on: nothing left to look for */
};

enum esc {
	ESC_DOUBLE,    /* a quote is escaped by doubling it (the standard) */
	ESC_BACKSLASH, /* doubling, and a backslash escapes the byte after it */
	ESC_EITHER,    /* unknown: both must end the text at the same place */
};

static bool is_space(char c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}

static bool is_digit(char c)
{
	return c >= '0' && c <= '9';
}

static bool is_alpha(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

/* Bytes of UTF-8 characters count as letters: every dialect takes them in identifiers. */
static bool is_ident_start(char c)
{
	return is_alpha(c) || c == '_' || (unsigned char)c >= 0x80;
}

static bool is_ident_char(char c)
{
	return is_ident_start(c) || is_digit(c) || c == '$';
}

static char upper(char c)
{
	return c >= 'a' && c <= 'z' ? (char)(c - 'a' + 'A') : c;
}

/* One past the quote that closes the text opened at S[OPEN], or 0 when nothing closes it. */
static size_t quote_end(const char *s, size_t len, size_t open, bool backslash)
{
	char q = s[open];
	size_t i;

	for (i = open + 1; i < len; i++) {
		if (backslash && s[i] == '\\') {
			i++;
			continue;
		}
		if (s[i] != q)
			continue;
		if (i + 1 < len && s[i + 1] == q) {
			i++;
			continue;
		}
		return i + 1;
	}
	return 0;
}

static size_t quoted_end(const struct lexer *lx, size_t open, enum esc esc)
{
	size_t plain, bs;

	if (esc != ESC_EITHER)
		return quote_end(lx->s, lx->len, open, esc == ESC_BACKSLASH);
	plain = quote_end(lx->s, lx->len, open, false);
	bs = quote_end(lx->s, lx->len, open, true);
	return plain == bs ? plain : 0;
}

/*
 * GENERIC: whether S[FROM..TO), read as SQL by a dialect that does not see the comment or dollar
 * quote it is in here, could open something that runs past TO: a quote, a '[' or a block
 * comment; in a line comment also a '$' (a dollar quote to PostgreSQL), in a dollar quote's body
 * also a line comment (to the dialects without dollar quotes).
 */
static bool risky(const char *s, size_t from, size_t to, bool line)
{
	size_t i;

	for (i = from; i < to; i++) {
		switch (s[i]) {
		case '\'':
		case '"':
		case '`':
		case '[':
			return true;
		case '$':
			if (line)
				return true;
			break;
		case '#':
			if (!line)
				return true;
			break;
		case '/':
			if (i + 1 < to && s[i + 1] == '*')
				return true;
			break;
		case '-':
			if (!line && i + 1 < to && s[i + 1] == '-')
				return true;
			break;
		}
	}
	return false;
}

/* A comment from POS (after its one- or two-byte opener, OPENER bytes) to the end of its line. */
static enum tok_kind lex_line_comment(struct lexer *lx, size_t opener, size_t *end)
{
	const char *s = lx->s, *cr;
	size_t i = lx->pos + opener, body = i;
	/* PostgreSQL ends the line at '\r' too; MySQL and SQLite only at '\n'. */
	bool cr_ends = lx->d == DB_DIALECT_POSTGRESQL;

	while (i < lx->len && s[i] != '\n' && !(cr_ends && s[i] == '\r'))
		i++;
	*end = i;
	if (lx->d != DB_DIALECT_GENERIC)
		return TOK_COMMENT;
	/*
	 * PostgreSQL reads '#' as an operator and MySQL "--x" as two minus signs: the whole line
	 * is SQL to them. PostgreSQL ends the line at a '\r': what follows it is SQL.
	 */
	if (s[lx->pos] == '#' || (body < lx->len && !is_space(s[body])))
		return risky(s, body, i, true) ? TOK_REST : TOK_COMMENT;
	cr = memchr(s + body, '\r', i - body);
	if (cr && risky(s, (size_t)(cr - s), i, true))
		return TOK_REST;
	return TOK_COMMENT;
}

/* A block comment at POS; PostgreSQL nests them, MySQL and SQLite end at the first close. */
static enum tok_kind lex_block_comment(struct lexer *lx, size_t *end)
{
	const char *s = lx->s;
	size_t i = lx->pos + 2, depth = 1;

	while (i + 1 < lx->len) {
		if (s[i] == '*' && s[i + 1] == '/') {
			i += 2;
			if (!--depth) {
				*end = i;
				return TOK_COMMENT;
			}
			continue;
		}
		if (s[i] == '/' && s[i + 1] == '*') {
			/* GENERIC cannot know whether this opens a level or is comment text. */
			if (lx->d == DB_DIALECT_GENERIC)
				return TOK_REST;
			if (lx->d == DB_DIALECT_POSTGRESQL) {
				depth++;
				i += 2;
				continue;
			}
		}
		i++;
	}
	return TOK_REST;
}

/* At '$' in PostgreSQL and GENERIC: $1, or a dollar quote $$...$$ or $tag$...$tag$. */
static enum tok_kind lex_dollar(struct lexer *lx, size_t *end)
{
	const char *s = lx->s, *close;
	size_t i = lx->pos + 1, body;

	if (i < lx->len && is_digit(s[i])) {
		while (i < lx->len && is_digit(s[i]))
			i++;
		*end = i;
		return TOK_PARAM;
	}
	if (i < lx->len && is_ident_start(s[i]))
		while (i < lx->len && is_ident_char(s[i]) && s[i] != '$')
			i++;
	if (i >= lx->len) {
		/* A capture cut inside "$tag" may have cut a dollar quote's opening. */
		if (lx->truncated && i > lx->pos + 1)
			return TOK_REST;
		*end = lx->pos + 1;
		return TOK_PUNCT;
	}
	if (s[i] != '$') {
		*end = lx->pos + 1;
		return TOK_PUNCT;
	}
	body = i + 1;
	close = memmem(s + body, lx->len - body, s + lx->pos, body - lx->pos);
	if (!close)
		return TOK_REST;
	if (lx->d == DB_DIALECT_GENERIC && risky(s, body, (size_t)(close - s), false))
		return TOK_REST;
	*end = (size_t)(close - s) + (body - lx->pos);
	return TOK_LITERAL;
}

/* A number at POS: digits, '.', exponent and its sign, hex digits, '_'; junk after it goes too. */
static size_t number_end(const struct lexer *lx)
{
	const char *s = lx->s;
	size_t start = lx->pos, i = start;
	/* 0x1e+5 is 0x1e plus 5; only a decimal number has a signed exponent. */
	bool decimal = !(s[i] == '0' && i + 1 < lx->len && s[i + 1] && strchr("xXbBoO", s[i + 1]));

	while (i < lx->len) {
		if (is_ident_char(s[i]) || s[i] == '.')
			i++;
		else if ((s[i] == '+' || s[i] == '-') && decimal && i > start &&
			 (s[i - 1] == 'e' || s[i - 1] == 'E') && i + 1 < lx->len &&
			 is_digit(s[i + 1]))
			i++;
		else
			break;
	}
	return i;
}

/* How a string opened by a quote after PREFIX (0, or one of E N B X U) escapes its quotes. */
static enum esc string_esc(enum db_dialect d, char prefix)
{
	switch (d) {
	case DB_DIALECT_MYSQL:
		return ESC_BACKSLASH;
	case DB_DIALECT_POSTGRESQL:
		return upper(prefix) == 'E' ? ESC_BACKSLASH : ESC_DOUBLE;
	case DB_DIALECT_SQLITE:
		return ESC_DOUBLE;
	case DB_DIALECT_GENERIC:
	default:
		/* E'' and U&'' are PostgreSQL's own, and it says how they escape. */
		if (upper(prefix) == 'E')
			return ESC_BACKSLASH;
		return upper(prefix) == 'U' ? ESC_DOUBLE : ESC_EITHER;
	}
}

/* The quoted text opened at OPEN as KIND; an identifier holding a quote is taken as a literal. */
static enum tok_kind lex_quoted(struct lexer *lx, size_t open, enum esc esc, enum tok_kind kind,
				size_t *end)
{
	size_t e = quoted_end(lx, open, esc);

	if (!e)
		return TOK_REST;
	*end = e;
	if (kind == TOK_QUOTED && memchr(lx->s + open, '\'', e - open))
		return TOK_LITERAL;
	return kind;
}

/* A word at POS, or a string it prefixes: E'' N'' B'' X'' U&''. */
static enum tok_kind lex_word(struct lexer *lx, size_t *end)
{
	const char *s = lx->s;
	size_t i = lx->pos + 1;
	char c = s[lx->pos];

	while (i < lx->len && is_ident_char(s[i]))
		i++;
	if (i == lx->pos + 1 && i < lx->len && s[i] == '\'' && strchr("EeNnBbXx", c))
		return lex_quoted(lx, i, string_esc(lx->d, c), TOK_LITERAL, end);
	/* MySQL has no U&'', and there '&' is an operator before a string of its own. */
	if (i == lx->pos + 1 && (c == 'U' || c == 'u') && lx->d != DB_DIALECT_MYSQL &&
	    i + 1 < lx->len && s[i] == '&' && s[i + 1] == '\'')
		return lex_quoted(lx, i + 1, string_esc(lx->d, c), TOK_LITERAL, end);
	*end = i;
	return TOK_WORD;
}

/* At '[': SQLite's quoted identifier; in GENERIC, the ']' that tokens must not run past. */
static enum tok_kind lex_bracket(struct lexer *lx, size_t *end)
{
	const char *s = lx->s, *close;

	if (lx->d == DB_DIALECT_SQLITE) {
		close = memchr(s + lx->pos, ']', lx->len - lx->pos);
		if (!close)
			return TOK_REST;
		*end = (size_t)(close - s) + 1;
		return memchr(s + lx->pos, '\'', *end - lx->pos) ? TOK_LITERAL : TOK_QUOTED;
	}
	/* Looked for once per ']', so that "[[[[" stays linear. */
	if (lx->d == DB_DIALECT_GENERIC && !lx->no_bracket && lx->bracket <= lx->pos) {
		close = memchr(s + lx->pos, ']', lx->len - lx->pos);
		if (close)
			lx->bracket = (size_t)(close - s);
		else
			lx->no_bracket = true;
	}
	*end = lx->pos + 1;
	return TOK_PUNCT;
}

static enum tok_kind lex_one(struct lexer *lx, size_t *end)
{
	const char *s = lx->s;
	size_t p = lx->pos;
	char c = s[p], next = p + 1 < lx->len ? s[p + 1] : 0;
	bool pg_like = lx->d == DB_DIALECT_POSTGRESQL || lx->d == DB_DIALECT_GENERIC;

	if (is_space(c)) {
		while (p < lx->len && is_space(s[p]))
			p++;
		*end = p;
		return TOK_SPACE;
	}
	/* MySQL wants a space or a control byte after "--": "1--1" is 1 - -1. */
	if (c == '-' && next == '-' &&
	    (lx->d != DB_DIALECT_MYSQL || p + 2 >= lx->len || (unsigned char)s[p + 2] <= ' ' ||
	     s[p + 2] == 0x7f))
		return lex_line_comment(lx, 2, end);
	if (c == '#' && (lx->d == DB_DIALECT_MYSQL || lx->d == DB_DIALECT_GENERIC))
		return lex_line_comment(lx, 1, end);
	if (c == '/' && next == '*')
		return lex_block_comment(lx, end);
	if (c == '\'')
		return lex_quoted(lx, p, string_esc(lx->d, 0), TOK_LITERAL, end);
	if (c == '"') {
		if (lx->d == DB_DIALECT_MYSQL)
			return lex_quoted(lx, p, ESC_BACKSLASH, TOK_LITERAL, end);
		/* SQLite takes "x" for the string 'x' when no column is named x. */
		if (lx->d == DB_DIALECT_SQLITE)
			return lex_quoted(lx, p, ESC_DOUBLE, TOK_LITERAL, end);
		return lex_quoted(lx, p, lx->d == DB_DIALECT_GENERIC ? ESC_EITHER : ESC_DOUBLE,
				  TOK_QUOTED, end);
	}
	if (c == '`')
		return lex_quoted(lx, p, ESC_DOUBLE, TOK_QUOTED, end);
	if (c == '[')
		return lex_bracket(lx, end);
	if (c == '$' && pg_like)
		return lex_dollar(lx, end);
	if (c == '?' && lx->d == DB_DIALECT_SQLITE && is_digit(next)) {
		for (p++; p < lx->len && is_digit(s[p]); p++)
			;
		*end = p;
		return TOK_PARAM;
	}
	/* ".5" is a number, "t.5" a qualifier and a number. */
	if (is_digit(c) ||
	    (c == '.' && is_digit(next) &&
	     !(p > 0 && (is_ident_char(s[p - 1]) || (s[p - 1] && strchr("\"`])", s[p - 1])))))) {
		*end = number_end(lx);
		return TOK_LITERAL;
	}
	/* MySQL identifiers and SQLite's $name parameters may start with '$'. */
	if (is_ident_start(c) || c == '$')
		return lex_word(lx, end);
	*end = p + 1;
	return TOK_PUNCT;
}

static enum tok_kind lex(struct lexer *lx, struct token *t)
{
	size_t end = lx->len;

	t->start = lx->pos;
	if (lx->pos >= lx->len) {
		t->kind = TOK_END;
		t->end = lx->pos;
		return TOK_END;
	}
	t->kind = lex_one(lx, &end);
	if (t->kind == TOK_REST)
		end = lx->len;
	/* GENERIC: a token that crosses the ']' of a '[' ends elsewhere for SQLite. */
	if (lx->d == DB_DIALECT_GENERIC && lx->bracket > t->start && end > lx->bracket) {
		t->kind = TOK_REST;
		end = lx->len;
	}
	t->end = end;
	lx->pos = end;
	return t->kind;
}

static void lexer_init(struct lexer *lx, const char *s, size_t len, enum db_dialect d,
		       bool truncated)
{
	memset(lx, 0, sizeof(*lx));
	lx->s = s;
	lx->len = s ? len : 0;
	lx->d = d;
	lx->truncated = truncated;
}

/* ---- the sanitizer ------------------------------------------------------------------------- */

struct out {
	char *buf;
	size_t cap, n;
	bool cut;
	char last;
};

static void put(struct out *o, char c)
{
	o->last = c;
	if (o->n + 1 < o->cap)
		o->buf[o->n++] = c;
	else
		o->cut = true;
}

/* Where to cut S..N so that it does not end inside a UTF-8 character. */
static size_t utf8_boundary(const char *s, size_t n)
{
	size_t i = n, need;
	unsigned char c;

	while (i > 0 && n - i < 3 && ((unsigned char)s[i - 1] & 0xc0) == 0x80)
		i--;
	if (!i)
		return n;
	c = (unsigned char)s[i - 1];
	if (c < 0xc0)
		return n;
	need = c >= 0xf0 ? 4 : c >= 0xe0 ? 3 : 2;
	return n - (i - 1) < need ? i - 1 : n;
}

size_t dbquery__sanitize(const char *in, size_t len, bool truncated, enum db_dialect d, char *out,
			 size_t cap)
{
	struct out o = {.buf = out, .cap = cap};
	struct lexer lx;
	struct token t;
	size_t i;

	if (!cap)
		return 0;
	lexer_init(&lx, in, len, d, truncated);
	while (lex(&lx, &t) != TOK_END && !o.cut) {
		switch (t.kind) {
		case TOK_LITERAL:
		case TOK_REST:
			put(&o, '?');
			break;
		case TOK_COMMENT:
			/* A space only where the comment kept two tokens apart. */
			if (o.last && !is_space(o.last) && lx.pos < lx.len && !is_space(in[lx.pos]))
				put(&o, ' ');
			break;
		default:
			/* A NUL is no part of SQL; '?' keeps the output one C string. */
			for (i = t.start; i < t.end; i++)
				put(&o, in[i] ? in[i] : '?');
			break;
		}
	}
	if (o.cut)
		o.n = utf8_boundary(out, o.n);
	out[o.n] = '\0';
	return o.n;
}

/* ---- the summary --------------------------------------------------------------------------- */

/* The next token that is neither space nor comment. */
static enum tok_kind next_sig(struct lexer *lx, struct token *t)
{
	while (lex(lx, t) == TOK_SPACE || t->kind == TOK_COMMENT)
		;
	return t->kind;
}

static bool is_punct(const struct lexer *lx, const struct token *t, char c)
{
	return t->kind == TOK_PUNCT && lx->s[t->start] == c;
}

/* Follows parentheses: T opens or closes one, and *DEPTH is moved by it. */
static bool nests(const struct lexer *lx, const struct token *t, int *depth)
{
	if (is_punct(lx, t, '('))
		(*depth)++;
	else if (is_punct(lx, t, ')'))
		(*depth)--;
	else
		return false;
	return true;
}

/* Whether T is one of the words of SET (upper case, separated by spaces), in any case. */
static bool is_word(const struct lexer *lx, const struct token *t, const char *set)
{
	size_t n = t->end - t->start, k, i;

	if (t->kind != TOK_WORD)
		return false;
	while (*set) {
		k = strcspn(set, " ");
		if (k == n) {
			for (i = 0; i < n && upper(lx->s[t->start + i]) == set[i]; i++)
				;
			if (i == n)
				return true;
		}
		set += k;
		set += *set == ' ';
	}
	return false;
}

/* Takes the next token when it is one of the words of SET. */
static bool take_word(struct lexer *lx, const char *set)
{
	struct lexer la = *lx;
	struct token t;

	if (next_sig(&la, &t) != TOK_WORD || !is_word(&la, &t, set))
		return false;
	*lx = la;
	return true;
}

static void skip_words(struct lexer *lx, const char *set)
{
	while (take_word(lx, set))
		;
}

/* Appends one part of a name, T, to BUF (N bytes so far), without its quotes. */
static bool name_part(const struct lexer *lx, const struct token *t, char *buf, size_t cap,
		      size_t *n)
{
	const char *s = lx->s;
	size_t i = t->start, end = t->end;
	char q = 0;

	if (t->kind == TOK_QUOTED) {
		q = s[i];
		if (q != '"' && q != '`')
			return false;
		i++;
		end--;
		if (i == end)
			return false;
	} else if (t->kind != TOK_WORD) {
		return false;
	}
	for (; i < end; i++) {
		if (!s[i] || *n + 1 >= cap)
			return false;
		buf[(*n)++] = s[i];
		if (q && s[i] == q)
			i++; /* the second of a doubled quote */
	}
	return true;
}

/* The name at LX (a, a.b, "A"."b") into BUF, NUL-terminated; false, and nothing, when none fits. */
static bool read_name(struct lexer *lx, char *buf, size_t cap)
{
	struct lexer la;
	struct token t, dot;
	size_t n = 0;

	next_sig(lx, &t);
	for (;;) {
		if (!name_part(lx, &t, buf, cap, &n))
			return false;
		la = *lx;
		lex(&la, &dot);
		if (!is_punct(&la, &dot, '.'))
			break;
		lex(&la, &t);
		if (t.kind != TOK_WORD && t.kind != TOK_QUOTED)
			break;
		if (n + 1 >= cap)
			return false;
		buf[n++] = '.';
		*lx = la;
	}
	buf[n] = '\0';
	return true;
}

/* Whether a ',' follows the name just read, after an alias if any: "FROM a x, b". */
static bool more_tables(const struct lexer *lx)
{
	struct lexer la = *lx;
	struct token t;

	next_sig(&la, &t);
	if (is_word(&la, &t, "AS"))
		next_sig(&la, &t);
	if (t.kind == TOK_WORD || t.kind == TOK_QUOTED)
		next_sig(&la, &t);
	return is_punct(&la, &t, ',');
}

/*
 * Reads the rest of a statement that opened at parenthesis depth DEPTH and says whether it acts
 * on one table: no join, no other SELECT (a subquery, a UNION), no second FROM (UPDATE ... FROM),
 * and for DELETE no USING. With SELECT, the first FROM at DEPTH names the table, into BUF.
 * A literal that does not end ends the reading: what was read decides.
 */
static bool one_table(struct lexer *lx, int depth, bool select, bool del, char *buf, size_t cap)
{
	struct lexer la;
	struct token t;
	bool found = !select;
	int d = depth;

	while (next_sig(lx, &t) != TOK_END && t.kind != TOK_REST) {
		if (nests(lx, &t, &d) || t.kind != TOK_WORD)
			continue;
		if (is_word(lx, &t, "JOIN STRAIGHT_JOIN SELECT"))
			return false;
		if (d == depth && del && is_word(lx, &t, "USING"))
			return false;
		if (d != depth || !is_word(lx, &t, "FROM"))
			continue;
		if (found)
			return false;
		skip_words(lx, "ONLY");
		if (!read_name(lx, buf, cap) || more_tables(lx))
			return false;
		/* FROM f(...) reads a function's rows. */
		la = *lx;
		if (next_sig(&la, &t) == TOK_PUNCT && is_punct(&la, &t, '('))
			return false;
		found = true;
	}
	return found;
}

/*
 * Statements that name their table before anything else: words that may come between the
 * keyword and the one that introduces the table, that keyword, and words that may follow it.
 */
static const struct {
	const char *op, *before, *intro, *after;
	bool intro_required;
} targets[] = {
	{ "INSERT", "LOW_PRIORITY DELAYED HIGH_PRIORITY IGNORE", "INTO", "", false },
	{ "REPLACE", "LOW_PRIORITY DELAYED", "INTO", "", false },
	{ "UPDATE", "LOW_PRIORITY IGNORE ONLY", "", "", false },
	{ "DELETE", "LOW_PRIORITY QUICK IGNORE", "FROM", "ONLY", true },
	{ "CREATE", "OR REPLACE GLOBAL LOCAL TEMPORARY TEMP UNLOGGED", "TABLE", "IF NOT EXISTS",
	  true },
	{ "DROP", "TEMPORARY", "TABLE", "IF EXISTS", true },
	{ "TRUNCATE", "", "TABLE", "ONLY", false },
	{ "ALTER", "", "TABLE", "IF EXISTS ONLY", true },
};

/* The table of the statement whose keyword OP was read from LX, at depth DEPTH. */
static bool collection(struct lexer *lx, const char *op, int depth, char *buf, size_t cap)
{
	size_t i;

	if (!strcmp(op, "SELECT"))
		return one_table(lx, depth, true, false, buf, cap);
	for (i = 0; i < sizeof(targets) / sizeof(targets[0]); i++)
		if (!strcmp(op, targets[i].op))
			break;
	if (i == sizeof(targets) / sizeof(targets[0]))
		return false;
	skip_words(lx, targets[i].before);
	if (*targets[i].intro && !take_word(lx, targets[i].intro) && targets[i].intro_required)
		return false;
	skip_words(lx, targets[i].after);
	if (!read_name(lx, buf, cap) || more_tables(lx))
		return false;
	return one_table(lx, depth, false, !strcmp(op, "DELETE"), buf, cap);
}

/* WITH ... AS (...): the statement the CTEs lead to, the first of these at the same depth. */
static const char *with_op(struct lexer *lx, int depth)
{
	static const char *const ops[] = {"SELECT", "INSERT", "UPDATE", "DELETE"};
	struct token t;
	size_t i;
	int d = depth;

	while (next_sig(lx, &t) != TOK_END && t.kind != TOK_REST) {
		if (!nests(lx, &t, &d) && d == depth)
			for (i = 0; i < sizeof(ops) / sizeof(ops[0]); i++)
				if (is_word(lx, &t, ops[i]))
					return ops[i];
	}
	return "WITH";
}

void dbquery__summary(const char *sql, size_t len, char *op, size_t op_cap, char *coll,
		      size_t coll_cap)
{
	char kw[OP_MAX];
	struct lexer lx;
	struct token t;
	int depth = 0;
	size_t i, n;

	if (op_cap)
		op[0] = '\0';
	if (coll_cap)
		coll[0] = '\0';
	lexer_init(&lx, sql, len, DB_DIALECT_GENERIC, false);
	while (next_sig(&lx, &t) == TOK_PUNCT && is_punct(&lx, &t, '('))
		depth++;
	n = t.end - t.start;
	if (t.kind != TOK_WORD || n >= sizeof(kw))
		return;
	for (i = 0; i < n; i++) {
		if (!is_alpha(sql[t.start + i]))
			return;
		kw[i] = upper(sql[t.start + i]);
	}
	kw[n] = '\0';
	if (!strcmp(kw, "WITH")) {
		/* The CTEs name tables of their own: no one table to give. */
		strcpy(kw, with_op(&lx, depth));
	} else if (coll_cap && !collection(&lx, kw, depth, coll, coll_cap)) {
		coll[0] = '\0';
	}
	if (strlen(kw) < op_cap)
		memcpy(op, kw, strlen(kw) + 1);
}
