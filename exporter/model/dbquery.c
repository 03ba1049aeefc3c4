// SPDX-License-Identifier: MIT
/*
 * Database query text: one lexer, which cuts SQL into tokens the way the database would, and two
 * readers of its tokens. The sanitizer copies every token but literals (replaced by '?') and
 * comments (dropped); the statement reader follows just enough grammar (statement heads, FROM
 * and JOIN lists, parentheses, CTEs) to say which operations act on which tables.
 *
 * A literal is safe only where the lexer ends it where the database does. So every dialect is lexed
 * by its own rules, and where the rules are unknown (GENERIC) a token that dialects end in
 * different places, such as '\'' after a backslash or a dollar quote holding a quote, stands for
 * the whole rest of the text: what cannot be told apart is replaced, never guessed.
 */
#include <stdio.h>
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

/* ---- the statement reader ------------------------------------------------------------------ */

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

/* Parentheses followed; a statement nested deeper is read no further (what was read decides). */
#define MAX_DEPTH 32
/* CTE names remembered, and targets remembered since the last operation (for not repeating). */
#define MAX_CTES 16
#define MAX_RECENT 16

/* What the next name in the text is, when the grammar says one comes. */
enum expect {
	EXP_NONE,
	EXP_TABLE,	/* the table of INSERT, MERGE, CREATE/DROP/ALTER/TRUNCATE TABLE */
	EXP_TABLE_REF,	/* a table reference of FROM, JOIN, USING, UPDATE: may be f(...) or (...) */
	EXP_TABLE_LAST, /* a table after which nothing names one (ALTER TABLE, COPY) */
	EXP_PROC,	/* CALL's procedure */
	EXP_CTE_NAME,	/* WITH [RECURSIVE] name */
	EXP_CTE_AS,	/* after the CTE's name: its column list, then AS */
	EXP_CTE_BODY,	/* after AS: [NOT] MATERIALIZED, then the '(' of its body */
	EXP_CTE_NEXT,	/* after a CTE's body: ',' and the next, or the statement */
};

/* Which statements may begin at the next word. */
enum start {
	START_NONE,
	START_QUERY, /* after a plain '(': WITH (SELECT is taken anywhere) */
	START_ANY,   /* a statement: the text's start, after ';', a CTE or EXPLAIN */
};

enum frame_kind {
	FRAME_PLAIN,
	FRAME_CTE_COLS, /* WITH x (a, b) */
	FRAME_CTE_BODY, /* WITH x AS ( ... ) */
	FRAME_COPY,	/* COPY ( query ) */
};

/* One level of parentheses (level 0 is the statement itself). */
struct frame {
	enum frame_kind kind;
	bool dml;     /* SELECT, UPDATE or DELETE opened here: FROM lists tables */
	bool in_from; /* inside a table list: ',' brings another table */
	bool del;     /* a DELETE: USING lists tables */
	bool merge;   /* a MERGE: USING names its source */
	bool list;    /* DROP/TRUNCATE: ',' brings another table, no f(...) */
};

struct span_ref {
	size_t start, end;
};

struct reader {
	struct lexer lx;
	struct dbquery_statement *st;
	struct frame frames[MAX_DEPTH];
	int depth;
	enum expect expect;
	enum start start;
	bool stop;	    /* the rest of this statement names nothing: skip to ';' */
	bool done;	    /* nested too deep: nothing more is read */
	bool copy;	    /* COPY: a '(' for its table opens its query */
	bool prev_distinct; /* the word before was DISTINCT (IS DISTINCT FROM is no table list) */
	/* db.operation.name: set from the first word, or by the first operation after WITH */
	bool op_set, op_pending, op_any_depth;
	bool copy_query;
	/* the distinct targets: the first as written, and whether another differs from it */
	struct span_ref first;
	int targets;
	struct span_ref ctes[MAX_CTES];
	size_t nctes;
	struct span_ref recent[MAX_RECENT];
	size_t nrecent;
	size_t sum_len;
	bool sum_full;
};

static struct frame *top(struct reader *r)
{
	return &r->frames[r->depth < MAX_DEPTH ? r->depth : MAX_DEPTH - 1];
}

/* The next significant token, not taken. */
static enum tok_kind peek(const struct lexer *lx, struct token *t)
{
	struct lexer la = *lx;

	return next_sig(&la, t);
}

static bool peek_punct(const struct lexer *lx, char c)
{
	struct lexer la = *lx;
	struct token t;

	next_sig(&la, &t);
	return is_punct(&la, &t, c);
}

/*
 * Appends one part (an operation or a target) to the summary. Parts are never cut: the first
 * that does not fit in DBQUERY_SUMMARY_MAX ends the summary there, as the conventions ask.
 */
static void add_part(struct reader *r, const char *p, size_t n)
{
	char *sum = r->st->summary;
	size_t need = n + (r->sum_len ? 1 : 0);

	if (r->sum_full || !n)
		return;
	if (r->sum_len + need > DBQUERY_SUMMARY_MAX) {
		r->sum_full = true;
		return;
	}
	if (r->sum_len)
		sum[r->sum_len++] = ' ';
	memcpy(sum + r->sum_len, p, n);
	r->sum_len += n;
	sum[r->sum_len] = '\0';
}

static void set_operation(struct reader *r, const char *op)
{
	snprintf(r->st->operation, sizeof(r->st->operation), "%s", op);
	r->op_set = true;
	r->op_pending = false;
}

/* An operation met in the text, OP upper case. */
static void add_op(struct reader *r, const char *op)
{
	if (r->op_pending && (r->op_any_depth || r->depth == 0))
		set_operation(r, op);
	add_part(r, op, strlen(op));
	r->nrecent = 0;
}

static bool same_text(const struct reader *r, struct span_ref a, struct span_ref b, bool icase)
{
	size_t i, n = a.end - a.start;

	if (n != b.end - b.start)
		return false;
	for (i = 0; i < n; i++) {
		char x = r->lx.s[a.start + i], y = r->lx.s[b.start + i];

		if (icase ? upper(x) != upper(y) : x != y)
			return false;
	}
	return true;
}

static void unquote(const struct reader *r, struct span_ref name, char *buf, size_t cap);

/* Whether NAME is words and dots only: nothing its quotes kept apart (a space, a quote). */
static bool plain_name(const char *name)
{
	for (; *name; name++)
		if (!is_ident_char(*name) && *name != '.')
			return false;
	return true;
}

/*
 * The name at N into the summary: without its quotes where it is words and dots only
 * ("orm_items", `shop`.`items`: gorm quotes every name, and the summary is then the span's name
 * and matches db.collection.name), else as written ("song list").
 */
static void add_name(struct reader *r, struct span_ref n)
{
	char plain[256];

	unquote(r, n, plain, sizeof(plain));
	if (plain[0] && plain_name(plain))
		add_part(r, plain, strlen(plain));
	else
		add_part(r, r->lx.s + n.start, n.end - n.start);
}

/*
 * A table named at N. A reference to a CTE is none; a table already named since the last
 * operation is not named again (DELETE FROM a USING a JOIN b: DELETE a b).
 */
static void add_target(struct reader *r, struct span_ref n)
{
	size_t i;

	for (i = 0; i < r->nctes; i++)
		if (same_text(r, n, r->ctes[i], true))
			return;
	for (i = 0; i < r->nrecent; i++)
		if (same_text(r, n, r->recent[i], false))
			return;
	if (r->nrecent < MAX_RECENT)
		r->recent[r->nrecent++] = n;
	if (!r->targets) {
		r->first = n;
		r->targets = 1;
	} else if (!same_text(r, n, r->first, false)) {
		r->targets = 2;
	}
	add_name(r, n);
}

/*
 * Whether T can be one part of a name. This is where a literal is kept from passing for a name:
 * only a word or a token the dialect's lexer calls a quoted identifier is one, and "..." in
 * MySQL and SQLite, which the lexer calls a string (it can be one in an expression), only here,
 * where the grammar wants a name and a string is no value but a syntax error. A quoted part
 * holding a quote of the other kind, a backslash or a control byte is none.
 */
static bool name_part_ok(const struct reader *r, const struct token *t)
{
	const char *s = r->lx.s;
	size_t i, n = t->end - t->start;

	switch (t->kind) {
	case TOK_WORD:
		/* $name and the like are parameters (SQLite, MySQL user variables start with @). */
		return s[t->start] != '$';
	case TOK_QUOTED:
		break;
	case TOK_LITERAL:
		if (r->lx.d != DB_DIALECT_MYSQL && r->lx.d != DB_DIALECT_SQLITE)
			return false;
		if (s[t->start] != '"' || n < 2 || s[t->end - 1] != '"')
			return false;
		break;
	default:
		return false;
	}
	if (n < 3)
		return false;
	for (i = t->start + 1; i + 1 < t->end; i++)
		if ((unsigned char)s[i] < 0x20 || s[i] == '\'' || s[i] == '\\')
			return false;
	return true;
}

/*
 * Reads the name whose first part is T (a, a.b, "A"."b", `a`.`b`, [a].[b]), as written, into
 * *N. False when T is no name, or when the name reaches the end of a text cut short (it may be
 * cut itself).
 */
static bool read_name(struct reader *r, const struct token *t, struct span_ref *n)
{
	struct lexer la;
	struct token dot, part;

	if (!name_part_ok(r, t))
		return false;
	n->start = t->start;
	n->end = t->end;
	for (;;) {
		la = r->lx;
		lex(&la, &dot);
		if (!is_punct(&la, &dot, '.'))
			break;
		lex(&la, &part);
		if (!name_part_ok(r, &part)) {
			/* "schema." at the cut: the table's name is what was cut */
			if (r->lx.truncated && dot.end >= r->lx.len)
				n->end = dot.end;
			break;
		}
		n->end = part.end;
		r->lx = la;
	}
	return !(r->lx.truncated && n->end >= r->lx.len);
}

/* NAME without its quotes into BUF (CAP bytes); "" when it does not fit. */
static void unquote(const struct reader *r, struct span_ref name, char *buf, size_t cap)
{
	const char *s = r->lx.s;
	size_t i = name.start, n = 0;
	char close = 0;

	for (; i < name.end; i++) {
		char c = s[i];

		if (!close && (c == '"' || c == '`' || c == '[')) {
			close = c == '[' ? ']' : c;
			continue;
		}
		if (close && c == close) {
			if (close != ']' && i + 1 < name.end && s[i + 1] == close) {
				i++;
			} else {
				close = 0;
				continue;
			}
		}
		if (n + 1 >= cap) {
			buf[0] = '\0';
			return;
		}
		buf[n++] = c;
	}
	buf[n] = '\0';
}

static void push(struct reader *r, enum frame_kind kind)
{
	if (r->depth + 1 >= MAX_DEPTH) {
		r->done = true;
		return;
	}
	r->depth++;
	memset(top(r), 0, sizeof(*top(r)));
	top(r)->kind = kind;
}

static void pop(struct reader *r)
{
	enum frame_kind kind;

	if (!r->depth)
		return;
	kind = top(r)->kind;
	r->depth--;
	if (kind == FRAME_CTE_BODY)
		r->expect = EXP_CTE_NEXT;
	else if (kind == FRAME_CTE_COLS)
		r->expect = EXP_CTE_AS;
	else if (kind == FRAME_COPY)
		r->stop = true;
}

/* Skips the parenthesized list that LX is before, whole: EXPLAIN (ANALYZE, FORMAT JSON). */
static void skip_group(struct lexer *lx)
{
	struct token t;
	int d = 0;

	while (next_sig(lx, &t) != TOK_END && t.kind != TOK_REST) {
		if (nests(lx, &t, &d) && d == 0)
			return;
	}
}

/* EXPLAIN's options in any dialect: ANALYZE, VERBOSE, (...), QUERY PLAN, FORMAT=JSON. */
static void skip_explain_options(struct lexer *lx)
{
	struct lexer la;
	struct token t;

	for (;;) {
		if (take_word(lx, "ANALYZE ANALYSE VERBOSE QUERY PLAN EXTENDED PARTITIONS"))
			continue;
		if (peek_punct(lx, '(')) {
			skip_group(lx);
			continue;
		}
		la = *lx;
		if (take_word(&la, "FORMAT") && next_sig(&la, &t) == TOK_PUNCT &&
		    is_punct(&la, &t, '=') && next_sig(&la, &t) == TOK_WORD) {
			*lx = la;
			continue;
		}
		return;
	}
}

/* The word T, upper-cased, into OP (OP_MAX): letters and '_' only, else false. */
static bool keyword(const struct reader *r, const struct token *t, char *op)
{
	size_t i, n = t->end - t->start;

	if (t->kind != TOK_WORD || !n || n >= OP_MAX)
		return false;
	for (i = 0; i < n; i++) {
		char c = r->lx.s[t->start + i];

		if (!is_alpha(c) && c != '_')
			return false;
		op[i] = upper(c);
	}
	op[n] = '\0';
	return true;
}

/* A name where the grammar expects one (r->expect); false when T is not taken as one. */
static bool expected_name(struct reader *r, const struct token *t)
{
	struct span_ref n;
	enum expect e = r->expect;

	if (e == EXP_TABLE_REF && is_word(&r->lx, t, "LATERAL ONLY"))
		return true;
	/* These begin a subquery or a clause: the reference was (...) or is missing. */
	if (is_word(&r->lx, t, "SELECT WITH VALUES WHERE SET ON USING JOIN AS TABLE"))
		return false;
	r->expect = EXP_NONE;
	if (!name_part_ok(r, t))
		return false;
	if (!read_name(r, t, &n))
		return true;
	switch (e) {
	case EXP_TABLE_REF:
		/* FROM f(...) reads a function's rows; DUAL is MySQL's no-table. */
		if (peek_punct(&r->lx, '('))
			return true;
		if (r->lx.d != DB_DIALECT_POSTGRESQL && r->lx.d != DB_DIALECT_SQLITE &&
		    t->kind == TOK_WORD && n.end - n.start == 4 && is_word(&r->lx, t, "DUAL"))
			return true;
		add_target(r, n);
		return true;
	case EXP_TABLE_LAST:
		add_target(r, n);
		r->stop = true;
		return true;
	case EXP_PROC:
		unquote(r, n, r->st->procedure, sizeof(r->st->procedure));
		add_name(r, n);
		r->stop = true;
		return true;
	case EXP_CTE_NAME:
		if (r->nctes < MAX_CTES)
			r->ctes[r->nctes++] = n;
		r->expect = EXP_CTE_AS;
		return true;
	default:
		add_target(r, n);
		return true;
	}
}

/*
 * The keyword OP where a statement may start (START): reads the statement's head. False when OP
 * begins no statement here (SELECT is read wherever it is, by word()).
 */
static bool statement(struct reader *r, const char *op, enum start start)
{
	struct lexer *lx = &r->lx;
	struct frame *f = top(r);

	if (!strcmp(op, "SELECT"))
		return false;
	if (!strcmp(op, "WITH")) {
		if (!r->op_set)
			r->op_pending = true;
		skip_words(lx, "RECURSIVE");
		r->expect = EXP_CTE_NAME;
		return true;
	}
	if (start != START_ANY)
		return false;
	if (!strcmp(op, "INSERT") || !strcmp(op, "REPLACE") || !strcmp(op, "UPSERT")) {
		/* SQLite's INSERT OR REPLACE, MySQL's INSERT LOW_PRIORITY IGNORE: no part of it. */
		skip_words(lx, "OR REPLACE IGNORE ABORT FAIL ROLLBACK LOW_PRIORITY DELAYED "
			       "HIGH_PRIORITY");
		take_word(lx, "INTO");
		r->expect = EXP_TABLE;
	} else if (!strcmp(op, "UPDATE")) {
		skip_words(lx, "OR ROLLBACK ABORT REPLACE FAIL IGNORE LOW_PRIORITY ONLY");
		f->dml = f->in_from = true;
		r->expect = EXP_TABLE_REF;
	} else if (!strcmp(op, "DELETE")) {
		/* MySQL's DELETE a, b FROM ...: the tables it names are those of FROM. */
		skip_words(lx, "LOW_PRIORITY QUICK IGNORE");
		f->dml = f->del = true;
	} else if (!strcmp(op, "MERGE")) {
		take_word(lx, "INTO");
		f->merge = true;
		r->expect = EXP_TABLE;
	} else if (r->depth) {
		/* Only data-changing statements nest (CTE bodies, COPY's query). */
		return false;
	} else if (!strcmp(op, "COPY")) {
		r->copy = true;
		r->expect = EXP_TABLE_LAST;
	} else if (!strcmp(op, "CALL")) {
		r->expect = EXP_PROC;
	} else if (!strcmp(op, "EXPLAIN")) {
		add_op(r, op);
		skip_explain_options(lx);
		r->start = START_ANY;
		return true;
	} else if (!strcmp(op, "CREATE") || !strcmp(op, "DROP") || !strcmp(op, "ALTER") ||
		   !strcmp(op, "TRUNCATE")) {
		add_op(r, op);
		skip_words(lx,
			   "OR REPLACE GLOBAL LOCAL TEMPORARY TEMP UNLOGGED MATERIALIZED VIRTUAL");
		if (!take_word(lx, "TABLE VIEW") && strcmp(op, "TRUNCATE")) {
			r->stop = true;
			return true;
		}
		skip_words(lx, "IF NOT EXISTS ONLY");
		/* ALTER TABLE t RENAME TO u: the rest names no table it reads. */
		r->expect = strcmp(op, "ALTER") ? EXP_TABLE : EXP_TABLE_LAST;
		f->list = !strcmp(op, "DROP") || !strcmp(op, "TRUNCATE");
		return true;
	} else {
		/* BEGIN, SET, SHOW, PRAGMA, VALUES, ...: the operation alone. */
		add_op(r, op);
		r->stop = true;
		return true;
	}
	add_op(r, op);
	return true;
}

/* Words that end a FROM list (or UPDATE's), so that a ',' after them brings no table. */
#define LIST_ENDS                                                                           \
	"WHERE GROUP ORDER HAVING LIMIT WINDOW UNION INTERSECT EXCEPT MINUS RETURNING SET " \
	"VALUES OFFSET FETCH FOR QUALIFY DUPLICATE CONFLICT DO UPDATE WHEN THEN INTO"

/* A word in the body of a statement, where START says which statements may begin. */
static void word(struct reader *r, const struct token *t, enum start start)
{
	struct lexer *lx = &r->lx;
	struct frame *f = top(r);
	char op[OP_MAX];
	bool distinct = r->prev_distinct;

	r->prev_distinct = is_word(lx, t, "DISTINCT");
	if (keyword(r, t, op) && start != START_NONE && statement(r, op, start))
		return;
	if (is_word(lx, t, "SELECT")) {
		add_op(r, "SELECT");
		f->dml = true;
		f->in_from = false;
	} else if (is_word(lx, t, "FROM")) {
		if (f->dml && !distinct) {
			f->in_from = true;
			r->expect = EXP_TABLE_REF;
		}
	} else if (is_word(lx, t, "JOIN STRAIGHT_JOIN")) {
		f->in_from = true;
		r->expect = EXP_TABLE_REF;
	} else if (is_word(lx, t, "USING")) {
		/* JOIN ... USING (a) lists columns; DELETE's and MERGE's USING a table. */
		if ((f->del || f->merge) && !peek_punct(lx, '(')) {
			f->in_from = f->del;
			r->expect = EXP_TABLE_REF;
		}
	} else if (is_word(lx, t, LIST_ENDS)) {
		f->in_from = false;
		f->list = false;
	}
}

static void punct(struct reader *r, const struct token *t)
{
	struct frame *f = top(r);
	char c = r->lx.s[t->start];
	enum expect e = r->expect;

	r->prev_distinct = false;
	r->expect = EXP_NONE;
	r->start = START_NONE;
	if (c == '(') {
		if (e == EXP_TABLE_LAST && r->copy) {
			push(r, FRAME_COPY);
			r->copy_query = true;
			r->start = START_ANY;
		} else if (e == EXP_CTE_AS) {
			push(r, FRAME_CTE_COLS);
		} else if (e == EXP_CTE_BODY) {
			push(r, FRAME_CTE_BODY);
			r->start = START_ANY;
		} else {
			push(r, FRAME_PLAIN);
			r->start = START_QUERY;
			if (e == EXP_TABLE_REF && !r->stop && !r->done) {
				/* FROM (a JOIN b): a table list in parentheses, or a subquery. */
				top(r)->dml = top(r)->in_from = true;
				r->expect = EXP_TABLE_REF;
			}
		}
		return;
	}
	if (c == ')') {
		pop(r);
		return;
	}
	if (c == ';' && r->depth == 0) {
		memset(f, 0, sizeof(*f));
		r->stop = false;
		r->copy = false;
		r->start = START_ANY;
		return;
	}
	if (c == ',' && !r->stop) {
		if (e == EXP_CTE_NEXT)
			r->expect = EXP_CTE_NAME;
		else if (f->in_from)
			r->expect = EXP_TABLE_REF;
		else if (f->list)
			r->expect = EXP_TABLE;
	}
}

/* The CTE's head after its name and columns: AS [NOT] MATERIALIZED; '(' then opens its body. */
static bool cte_head(struct reader *r, const struct token *t)
{
	if (r->expect == EXP_CTE_AS && is_word(&r->lx, t, "AS")) {
		r->expect = EXP_CTE_BODY;
		return true;
	}
	if (r->expect == EXP_CTE_BODY && is_word(&r->lx, t, "NOT MATERIALIZED"))
		return true;
	if (r->expect != EXP_CTE_AS && r->expect != EXP_CTE_BODY)
		return false;
	r->expect = EXP_NONE;
	return false;
}

void dbquery__read(const char *sql, size_t len, bool truncated, enum db_dialect d,
		   struct dbquery_statement *st)
{
	struct reader *r, rd;
	struct token t;
	char op[OP_MAX];
	enum start start;

	memset(st, 0, sizeof(*st));
	r = &rd;
	memset(r, 0, sizeof(*r));
	r->st = st;
	lexer_init(&r->lx, sql, len, d, truncated);
	r->start = START_ANY;
	if (peek(&r->lx, &t) == TOK_PUNCT && is_punct(&r->lx, &t, '(')) {
		/* (SELECT ...) UNION (SELECT ...): the first statement in the parentheses. */
		r->op_pending = r->op_any_depth = true;
	} else if (keyword(r, &t, op)) {
		if (strcmp(op, "WITH"))
			set_operation(r, op);
	}
	while (!r->done && next_sig(&r->lx, &t) != TOK_END && t.kind != TOK_REST) {
		if (t.kind == TOK_PUNCT) {
			punct(r, &t);
			continue;
		}
		start = r->start;
		r->start = START_NONE;
		if (r->stop) {
			r->expect = EXP_NONE;
			continue;
		}
		if (cte_head(r, &t))
			continue;
		if (r->expect == EXP_CTE_NEXT) {
			/* the statement the CTEs lead to */
			r->expect = EXP_NONE;
			start = START_ANY;
		}
		if (r->expect != EXP_NONE) {
			if (expected_name(r, &t))
				continue;
			r->expect = EXP_NONE;
		}
		if (t.kind == TOK_WORD)
			word(r, &t, start);
		else
			r->prev_distinct = false;
	}
	/* WITH x AS (...) and nothing after: the text was cut, or is no statement. */
	if (r->op_pending && !r->op_any_depth)
		set_operation(r, "WITH");
	if (r->targets == 1 && strcmp(st->operation, "EXPLAIN") && strcmp(st->operation, "CALL") &&
	    !r->copy_query)
		unquote(r, r->first, st->collection, sizeof(st->collection));
}
