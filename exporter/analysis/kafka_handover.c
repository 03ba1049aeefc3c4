// SPDX-License-Identifier: MIT
/*
 * Where a kafka-go read hands its Message over, found inside the read itself (kafka.h). A read
 * returns (Message, error); the Message is too big for registers and goes back in the caller's
 * frame, which the read fills from a variable of its own right before its RET. The callers copy
 * it again before any instruction the kernel emulates (go1.26 writes a long run of moves there),
 * and the RET itself is single-stepped; but the way to the RET that returns a message passes an
 * emulated instruction of the read's own: the JE after its last call (FetchMessage's errors.Is,
 * ReadMessage's CommitMessages, or the test of the reader's GroupID), a NOP, or the CALL of
 * runtime.duffcopy that copies the Message. From there the code only moves data to the RET.
 *
 * The code from each such instruction to the RETs is followed with a small symbolic state (what
 * each register and each stack word written on the way holds, in terms of the SP and registers
 * at the probe): a way ends at a RET that returns a Message read from a place known at the probe
 * and an error known there (nil, or a stack word), or at a RET whose error is a package-level
 * value or whose Message is zeroed (no message). The probes are those instructions whose ways
 * every way into a RET that may return a message passes; where any such way cannot be followed
 * (a call on it, a register it cannot tell), there are none, and the read's ends stay where they
 * were. amd64 only.
 */
#include <elf.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/analysis.h"
#include "analysis/disasm.h"
#include "analysis/kafka.h"
#include "core/log.h"

/* A place relative to the site's SP, or to register N (0-15) as it was at the site. */
#define BASE_SP 16
/* Stack words a way may write, ways a site's instruction may fork into, instructions a way. */
#define SLOTS_MAX 128
#define LEAVES_MAX 16
#define WAY_INSNS_MAX 512

enum val_kind {
	V_UNK,
	V_ZERO,
	V_GLOBAL, /* loaded from, or the address of, a package-level symbol: not nil */
	V_ADDR,	  /* BASE + OFF */
	V_LOAD,	  /* the word at BASE + OFF, as it was at the site */
};

struct val {
	uint8_t kind;
	int8_t base;
	int32_t off;
};

struct slot {
	int8_t base;
	int32_t off;
	struct val v;
};

/* What the code holds, followed from a site. */
struct sim {
	struct val reg[32][2]; /* general registers [0]; XMM registers their two words */
	struct slot slot[SLOTS_MAX];
	size_t nslots;
	bool mem_lost; /* written somewhere unknown: loads are unknown */
	/* Written from LOST_FROM up, how far unknown (runtime.duff*), relative to LOST_BASE. */
	bool lost;
	int8_t lost_base;
	int32_t lost_from;
	int32_t sp; /* SP less the site's SP */
};

/* Where a way ends. */
enum way_kind { WAY_UNDECIDED, WAY_MESSAGE, WAY_ERROR };

struct way {
	enum way_kind kind;
	int8_t msg_reg;
	int32_t msg_off, err_off, ret_off;
};

struct ctx {
	const struct insns *ins;
	int64_t msg_size;
	uint64_t duff_lo[2], duff_hi[2]; /* runtime.duffcopy, runtime.duffzero */
	size_t leaves;
};

static bool is_duff(const struct ctx *c, uint64_t target)
{
	size_t i;

	for (i = 0; i < 2; i++)
		if (target >= c->duff_lo[i] && target < c->duff_hi[i])
			return true;
	return false;
}

static struct val val_of(uint8_t kind, int8_t base, int32_t off)
{
	return (struct val){ .kind = kind, .base = base, .off = off };
}

static void sim_start(struct sim *s)
{
	int r;

	memset(s, 0, sizeof(*s));
	for (r = 0; r < 16; r++)
		s->reg[r][0] = val_of(V_ADDR, (int8_t)r, 0);
	s->reg[X86_SP][0] = val_of(V_ADDR, BASE_SP, 0);
	s->reg[X86_XMM(15)][0] = s->reg[X86_XMM(15)][1] = val_of(V_ZERO, 0, 0);
}

/* Go's ABIInternal keeps X15 zero, and the stack pointer is tracked apart. */
static void set_reg(struct sim *s, int r, struct val lo, struct val hi)
{
	if (r < 0 || r >= 32 || r == X86_SP || r == X86_XMM(15))
		return;
	s->reg[r][0] = lo;
	s->reg[r][1] = hi;
}

/* The address INS's memory operand names, as BASE + OFF; false when it cannot be told. */
static bool mem_addr(const struct sim *s, const struct insn *in, int8_t *base, int32_t *off)
{
	const struct val *b;

	if (in->mem_index || in->mem_base < 0)
		return false;
	if (in->mem_base == X86_SP) {
		*base = BASE_SP;
		*off = s->sp + in->disp;
		return true;
	}
	b = &s->reg[in->mem_base][0];
	if (b->kind != V_ADDR)
		return false;
	*base = b->base;
	*off = b->off + in->disp;
	return true;
}

static struct slot *find_slot(struct sim *s, int8_t base, int32_t off)
{
	size_t i;

	for (i = 0; i < s->nslots; i++)
		if (s->slot[i].base == base && s->slot[i].off == off)
			return &s->slot[i];
	return NULL;
}

/* The word at BASE + OFF: written on the way, else as it was at the site. */
static struct val load_word(struct sim *s, int8_t base, int32_t off)
{
	struct slot *sl;
	size_t i;

	if (s->mem_lost)
		return val_of(V_UNK, 0, 0);
	sl = find_slot(s, base, off);
	if (sl)
		return sl->v;
	if (s->lost && base == s->lost_base && off + 8 > s->lost_from)
		return val_of(V_UNK, 0, 0);
	for (i = 0; i < s->nslots; i++)
		if (s->slot[i].base == base && s->slot[i].off > off - 8 && s->slot[i].off < off + 8)
			return val_of(V_UNK, 0, 0); /* a word written across it */
	return val_of(V_LOAD, base, off);
}

static void store_word(struct sim *s, int8_t base, int32_t off, struct val v)
{
	struct slot *sl = find_slot(s, base, off);
	size_t i;

	for (i = 0; i < s->nslots; i++)
		if (s->slot[i].base == base && s->slot[i].off > off - 8 &&
		    s->slot[i].off < off + 8 && s->slot[i].off != off)
			s->slot[i].v = val_of(V_UNK, 0, 0);
	if (!sl) {
		if (s->nslots == SLOTS_MAX) {
			s->mem_lost = true;
			return;
		}
		sl = &s->slot[s->nslots++];
		sl->base = base;
		sl->off = off;
	}
	sl->v = v;
}

/*
 * Every word from BASE + OFF up may have been written (runtime.duff*'s stores, which go up from
 * DI less a little where the code enters them part way), with zeros only when ZEROES: a word
 * known to be zero stays so.
 */
static void lose_from(struct sim *s, int8_t base, int32_t off, bool zeroes)
{
	size_t i;

	for (i = 0; i < s->nslots; i++)
		if (s->slot[i].base == base && s->slot[i].off + 8 > off &&
		    !(zeroes && s->slot[i].v.kind == V_ZERO))
			s->slot[i].v = val_of(V_UNK, 0, 0);
	if (s->lost && (s->lost_base != base || s->lost_from < off)) {
		s->mem_lost = s->lost_base != base;
		return;
	}
	s->lost = true;
	s->lost_base = base;
	s->lost_from = off;
}

/* INS's data move applied to S; false when the way cannot be followed past it. */
static bool step(struct sim *s, const struct insn *in)
{
	struct val lo = val_of(V_UNK, 0, 0), hi = lo;
	int8_t base;
	int32_t off;
	bool at;
	int r;

	switch (in->op) {
	case OP_MOV:
		if (in->size != 8 && in->size != 16) {
			/* Part of a word: what it writes is unknown. */
			if (!in->to_mem)
				set_reg(s, in->reg, lo, hi);
			else if (in->has_mem && mem_addr(s, in, &base, &off))
				store_word(s, base, off & ~7, lo);
			else
				s->mem_lost = true;
			return true;
		}
		if (!in->has_mem) {
			/* A register copied (64 bits), or an immediate. */
			if (in->reg >= 0 && in->reg < 16 && in->mov_src >= 0)
				lo = s->reg[in->mov_src][0];
			set_reg(s, in->reg, lo, hi);
			return true;
		}
		at = in->mem_base == -2 ? false : mem_addr(s, in, &base, &off);
		if (in->to_mem) {
			if (!at) {
				s->mem_lost = true;
				return true;
			}
			if (in->reg >= 0) {
				lo = s->reg[in->reg][0];
				hi = s->reg[in->reg][1];
			}
			store_word(s, base, off, lo);
			if (in->size == 16)
				store_word(s, base, off + 8, hi);
			return true;
		}
		if (in->mem_base == -2) {
			lo = val_of(V_GLOBAL, 0, 0);
		} else if (at) {
			lo = load_word(s, base, off);
			if (in->size == 16)
				hi = load_word(s, base, off + 8);
		}
		set_reg(s, in->reg, lo, hi);
		return true;
	case OP_LEA:
		if (in->mem_base == -2)
			lo = val_of(V_GLOBAL, 0, 0);
		else if (mem_addr(s, in, &base, &off))
			lo = val_of(V_ADDR, base, off);
		set_reg(s, in->reg, lo, hi);
		return true;
	case OP_ZERO:
		lo = hi = val_of(V_ZERO, 0, 0);
		set_reg(s, in->reg, lo, hi);
		return true;
	case OP_SP_ADD:
		s->sp += in->disp;
		break;
	default:
		if (in->kind == INSN_NOP)
			return true;
		if (in->writes & (1u << X86_SP))
			return false; /* SP moved by something else */
		/* What else writes an XMM register is not in WRITES: none but X15 is kept. */
		for (r = 16; r < 31; r++)
			set_reg(s, r, lo, hi);
		break;
	}
	for (r = 0; r < 16; r++)
		if (r != X86_SP && (in->writes & (1u << r)))
			set_reg(s, r, lo, hi);
	if (in->mem_write) {
		if (in->has_mem && mem_addr(s, in, &base, &off)) {
			store_word(s, base, off, lo);
			store_word(s, base, off + 8, lo);
		} else {
			s->mem_lost = true;
		}
	}
	return true;
}

/*
 * Whether the way may have written into the SIZE bytes at BASE + OFF: a word at the same base
 * over them, or one at another base (where it is cannot be compared) other than the results and
 * the caller's frame above them, which a Message of the read's own cannot be.
 */
static bool written(const struct sim *s, int8_t base, int32_t off, int64_t size)
{
	size_t i;

	if (s->lost && (s->lost_base == base ? s->lost_from < off + size :
					       s->lost_base != BASE_SP || s->lost_from < s->sp))
		return true;
	for (i = 0; i < s->nslots; i++) {
		const struct slot *w = &s->slot[i];

		if (w->base == base ? w->off + 8 > off && w->off < off + size :
				      w->base != BASE_SP || w->off < s->sp)
			return true;
	}
	return false;
}

/*
 * Where a way that reached a RET with S ends: its Message is the one at its place at the site
 * when the first word of the results was read from there and nothing on the way wrote into it
 * (the Go compiler copies a variable into the results in one run; a place relative to a register
 * is not compared with the stack words written, which are the results').
 */
static struct way at_ret(const struct ctx *c, const struct sim *s)
{
	struct sim *m = (struct sim *)s;
	struct way w = { .kind = WAY_UNDECIDED };
	struct val word0, err = s->reg[X86_AX][0];

	/* The results begin above the return address, at SP + 8. */
	word0 = load_word(m, BASE_SP, s->sp + 8);
	if (word0.kind == V_ZERO || err.kind == V_GLOBAL) {
		w.kind = WAY_ERROR;
		return w;
	}
	if (word0.kind != V_LOAD || (word0.base != BASE_SP && word0.base >= 16) ||
	    written(s, word0.base, word0.off, c->msg_size))
		return w;
	if (err.kind == V_ZERO)
		w.err_off = -1;
	else if (err.kind == V_LOAD && err.base == BASE_SP && err.off >= 0)
		w.err_off = err.off;
	else
		return w;
	w.kind = WAY_MESSAGE;
	w.msg_reg = word0.base == BASE_SP ? X86_SP : word0.base;
	w.msg_off = word0.off;
	w.ret_off = s->sp;
	return w;
}

static bool same_way(const struct way *a, const struct way *b)
{
	if (a->kind != b->kind)
		return false;
	return a->kind != WAY_MESSAGE ||
	       (a->msg_reg == b->msg_reg && a->msg_off == b->msg_off &&
		a->err_off == b->err_off && a->ret_off == b->ret_off);
}

/* Adds the end LEAF to OUT: every leaf of a way must end alike, else it is undecided. */
static void leaf(struct ctx *c, struct way *out, const struct way *l, bool *first)
{
	c->leaves++;
	if (*first) {
		*out = *l;
		*first = false;
	} else if (!same_way(out, l)) {
		out->kind = WAY_UNDECIDED;
	}
}

/* Follows the code from instruction I with S (its own copy), into OUT. */
static void follow(struct ctx *c, long i, struct sim *s, size_t steps, struct way *out, bool *first)
{
	const struct insns *ins = c->ins;
	const struct way undecided = { .kind = WAY_UNDECIDED };
	const struct insn *in;
	struct sim *fork;
	long t;

	while (!(!*first && out->kind == WAY_UNDECIDED)) {
		if (i < 0 || (size_t)i >= ins->n || steps++ > WAY_INSNS_MAX ||
		    c->leaves >= LEAVES_MAX) {
			leaf(c, out, &undecided, first);
			return;
		}
		in = &ins->v[i];
		switch (in->kind) {
		case INSN_RET: {
			struct way w = at_ret(c, s);

			leaf(c, out, &w, first);
			return;
		}
		case INSN_CALL:
			if (!is_duff(c, in->target)) {
				leaf(c, out, &undecided, first);
				return;
			}
			/* runtime.duff*: copies from SI to DI, or zeroes from DI, in its frame. */
			if (s->reg[X86_DI][0].kind == V_ADDR)
				lose_from(s, s->reg[X86_DI][0].base, s->reg[X86_DI][0].off,
					  in->target >= c->duff_lo[1] && in->target < c->duff_hi[1]);
			else
				s->mem_lost = true;
			set_reg(s, X86_SI, val_of(V_UNK, 0, 0), val_of(V_UNK, 0, 0));
			set_reg(s, X86_DI, val_of(V_UNK, 0, 0), val_of(V_UNK, 0, 0));
			set_reg(s, X86_XMM(0), val_of(V_UNK, 0, 0), val_of(V_UNK, 0, 0));
			i++;
			continue;
		case INSN_CALL_IND:
		case INSN_JMP_IND:
			leaf(c, out, &undecided, first);
			return;
		case INSN_JMP:
			t = disasm__index(ins, in->target - ins->addr);
			if (in->target < ins->addr || t < 0) {
				leaf(c, out, &undecided, first);
				return;
			}
			i = t;
			continue;
		case INSN_JCC:
			t = disasm__index(ins, in->target - ins->addr);
			if (in->target < ins->addr || t < 0) {
				leaf(c, out, &undecided, first);
				return;
			}
			fork = malloc(sizeof(*fork));
			if (!fork) {
				leaf(c, out, &undecided, first);
				return;
			}
			*fork = *s;
			follow(c, t, fork, steps, out, first);
			free(fork);
			i++;
			continue;
		default:
			if (!step(s, in)) {
				leaf(c, out, &undecided, first);
				return;
			}
			i++;
		}
	}
}

/* Where the way from instruction I goes, with the state at a site (I itself is run). */
static struct way way_from(struct ctx *c, long i)
{
	struct way out = { .kind = WAY_UNDECIDED };
	struct sim *s = malloc(sizeof(*s));
	bool first = true;

	if (!s)
		return out;
	sim_start(s);
	c->leaves = 0;
	follow(c, i, s, 0, &out, &first);
	free(s);
	return out;
}

/* The first instruction of the straight run that ends at I, after any call but runtime.duff*. */
static long run_start(const struct ctx *c, long i)
{
	const struct insns *ins = c->ins;

	while (i > 0 && !ins->v[i].branch_target) {
		const struct insn *p = &ins->v[i - 1];

		if (p->kind == INSN_RET || p->kind == INSN_JMP || p->kind == INSN_JMP_IND ||
		    p->kind == INSN_JCC || p->kind == INSN_CALL_IND ||
		    (p->kind == INSN_CALL && !is_duff(c, p->target)))
			break;
		i--;
	}
	return i;
}

/* Whether the RET at R returns a zeroed Message: `return Message{}, err` (a way out of error). */
static bool zeroed_ret(struct ctx *c, long r)
{
	struct way w = way_from(c, run_start(c, r));

	return w.kind == WAY_ERROR;
}

struct found {
	struct kafka_handover *v;
	size_t n, max;
	bool failed;
};

/* Adds the site at instruction I, taken when COND, whose way is W. */
static void add_site(const struct ctx *c, struct found *f, long i, uint8_t cond,
		     const struct way *w)
{
	struct kafka_handover *h;
	size_t j;

	for (j = 0; j < f->n; j++) {
		h = &f->v[j];
		if (h->at != c->ins->addr + c->ins->v[i].off || h->msg_reg != w->msg_reg ||
		    h->msg_off != w->msg_off || h->err_off != w->err_off ||
		    h->ret_off != w->ret_off)
			continue;
		if (h->cond != cond)
			h->cond = KAFKA_HANDOVER_ALWAYS; /* both ways of one Jcc */
		return;
	}
	if (f->n == f->max) {
		f->failed = true;
		return;
	}
	h = &f->v[f->n++];
	memset(h, 0, sizeof(*h));
	h->at = c->ins->addr + c->ins->v[i].off;
	h->cond = cond;
	h->msg_reg = w->msg_reg;
	h->msg_off = w->msg_off;
	h->err_off = w->err_off;
	h->ret_off = w->ret_off;
}

/*
 * The edge from the branch P (TAKEN: its jump, else its fall-through) into the code that reaches
 * a RET: a site where its way hands a message over, nothing more where it errs; false when the way
 * cannot be told, and the walk goes on above P.
 */
static bool edge_decided(struct ctx *c, struct found *f, long p, bool taken)
{
	const struct insn *in = &c->ins->v[p];
	struct way w;
	uint8_t cond;
	long t;

	if (!in->emulated)
		return false;
	t = taken ? disasm__index(c->ins, in->target - c->ins->addr) : p + 1;
	w = way_from(c, t);
	if (w.kind == WAY_UNDECIDED)
		return false;
	if (w.kind == WAY_MESSAGE) {
		if (in->kind == INSN_JMP) {
			cond = KAFKA_HANDOVER_ALWAYS;
		} else if (in->jcc_zf) {
			cond = taken == in->jcc_if_zero ? KAFKA_HANDOVER_IF_ZF :
							  KAFKA_HANDOVER_IF_NOT_ZF;
		} else {
			/* Which way it goes cannot be read from the flags at the probe. */
			return false;
		}
		add_site(c, f, p, cond, &w);
	}
	return true;
}

/*
 * Walks back from the RET at R over every way into it, up to the sites that decide it. Fails
 * (F->failed) where a way comes from a call, the function's start or an indirect jump.
 */
static void walk_back(struct ctx *c, struct found *f, long r, uint8_t *seen)
{
	const struct insns *ins = c->ins;
	long *stack, top = 0, i, p;
	struct way w;

	stack = malloc(ins->n * sizeof(*stack));
	if (!stack) {
		f->failed = true;
		return;
	}
	stack[top++] = r;
	seen[r] = 1;
	while (top && !f->failed) {
		i = stack[--top];
		const struct insn *in = &ins->v[i];

		if (i == 0 || in->kind == INSN_CALL_IND ||
		    (in->kind == INSN_CALL && !is_duff(c, in->target))) {
			f->failed = true;
			break;
		}
		/* An emulated instruction on the straight way: the probe itself, if it decides. */
		if (i != r && in->emulated && (in->kind == INSN_NOP || in->kind == INSN_CALL)) {
			w = way_from(c, i);
			if (w.kind == WAY_MESSAGE) {
				add_site(c, f, i, KAFKA_HANDOVER_ALWAYS, &w);
				continue;
			}
			if (w.kind == WAY_ERROR)
				continue;
		}
		/* Its predecessors: the instruction before, falling through, and the branches. */
		p = i - 1;
		if (ins->v[p].kind == INSN_JCC) {
			if (!edge_decided(c, f, p, false) && !seen[p]) {
				seen[p] = 1;
				stack[top++] = p;
			}
		} else if (ins->v[p].kind != INSN_RET && ins->v[p].kind != INSN_JMP &&
			   ins->v[p].kind != INSN_JMP_IND && !seen[p]) {
			seen[p] = 1;
			stack[top++] = p;
		}
		if (!in->branch_target)
			continue;
		for (p = 0; p < (long)ins->n; p++) {
			const struct insn *b = &ins->v[p];

			if ((b->kind != INSN_JMP && b->kind != INSN_JCC) ||
			    b->target != ins->addr + in->off)
				continue;
			if (!edge_decided(c, f, p, true) && !seen[p]) {
				seen[p] = 1;
				stack[top++] = p;
			}
		}
	}
	free(stack);
}

int kafka_handover__find(struct analysis *a, const char *symbol, int64_t msg_size,
			 struct kafka_handover *out, size_t max, size_t *n)
{
	static const char *const duff[] = { "runtime.duffcopy", "runtime.duffzero" };
	struct found f = { .v = out, .max = max };
	struct ctx c = {};
	struct elf_symbol fn, d;
	struct insns ins = {};
	uint8_t *code = NULL, *seen = NULL;
	size_t i, rets = 0;
	int err;

	*n = 0;
	if (a->machine != EM_X86_64)
		return -EOPNOTSUPP;
	if (msg_size <= 0)
		return -ENOENT;
	c.msg_size = msg_size;
	err = analysis__find_func(a, symbol, &fn);
	if (err)
		return -ENOENT;
	for (i = 0; i < 2; i++)
		if (!analysis__find_func(a, duff[i], &d)) {
			c.duff_lo[i] = d.addr;
			c.duff_hi[i] = d.addr + d.size;
		}
	code = malloc(fn.size ? fn.size : 1);
	if (!code)
		return -ENOMEM;
	err = elf_file__read_addr(a->ef, fn.addr, code, fn.size);
	err = err ?: disasm__decode(a->machine, code, fn.size, fn.addr, &ins);
	if (err)
		goto cleanup;
	err = -ENOENT;
	if (ins.unknown_targets)
		goto cleanup;
	seen = calloc(ins.n ? ins.n : 1, 1);
	if (!seen) {
		err = -ENOMEM;
		goto cleanup;
	}
	c.ins = &ins;
	for (i = 0; i < ins.n && !f.failed; i++) {
		if (ins.v[i].kind != INSN_RET || zeroed_ret(&c, (long)i))
			continue;
		rets++;
		walk_back(&c, &f, (long)i, seen);
	}
	if (f.failed || !rets || !f.n)
		goto cleanup;
	for (i = 0; i < f.n; i++) {
		err = elf_file__addr_to_offset(a->ef, f.v[i].at, &f.v[i].off);
		if (err)
			goto cleanup;
	}
	*n = f.n;
	err = 0;
cleanup:
	if (err)
		*n = 0;
	free(seen);
	free(code);
	disasm__insns_free(&ins);
	return err;
}
