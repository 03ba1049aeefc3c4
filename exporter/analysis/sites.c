// SPDX-License-Identifier: MIT
/*
 * End sites without RET probes (sites.h). Everything here reads the decoded instructions of
 * disasm.c; nothing is guessed from a Go version. Each query refuses what it cannot show right for
 * every path, and its caller then keeps the RET probes of that path: a wrong end site would end
 * spans at the wrong time, a missing one would lose them.
 */
#include <errno.h>
#include <elf.h>
#include <stdlib.h>
#include <string.h>

#include "core/log.h"
#include "analysis/sites.h"

/* How far past a return the straight line is followed: Go puts the next call within a few. */
#define AFTER_CALL_MAX 24
/* How far the success branch of sites__success_exit may go before its RETs. */
#define REGION_MAX 2048

int sites__slot_of(int reg)
{
	/* Go's amd64 register ABI: integer results and arguments, in order. */
	static const int slots[] = { X86_AX, X86_BX, X86_CX, X86_DI, X86_SI, X86_R8,
				     X86_R8 + 1, X86_R8 + 2, X86_R8 + 3 };
	size_t i;

	for (i = 0; i < sizeof(slots) / sizeof(slots[0]); i++)
		if (slots[i] == reg)
			return (int)i + 1;
	return 0;
}

/* The x86 register of the Go ABI's integer result SLOT (1: first); -1 when there is none. */
static int reg_of_slot(int slot)
{
	int r;

	for (r = 0; r < 16; r++)
		if (sites__slot_of(r) == slot)
			return r;
	return -1;
}

void sites__after_call(const struct insns *ins, long ret_idx, unsigned int flags, int result_reg,
		       struct end_site *out)
{
	uint16_t held = result_reg >= 0 ? 1u << result_reg : 0;
	uint16_t keep = 0;
	const struct insn *d;
	long i;
	int r;

	if ((flags & AFTER_CALL_KEEP_PAIR) && result_reg >= 0) {
		r = reg_of_slot(sites__slot_of(result_reg) + 1);
		keep = r >= 0 ? 1u << r : 0;
	}

	memset(out, 0, sizeof(*out)); /* no cond: an end on every way */
	out->off = ins->addr + ins->v[ret_idx].off;
	out->caller = ins->addr;
	out->emulated = ins->v[ret_idx].emulated;
	out->in_caller = true;
	out->if_no_error = false;
	out->result = -1;
	out->frames = 0;
	/* A jump table may land anywhere: only the return address itself is sure. */
	if (ins->unknown_targets)
		return;
	for (i = ret_idx; i < (long)ins->n && i < ret_idx + AFTER_CALL_MAX; i++) {
		d = &ins->v[i];
		/*
		 * Another path joins here, and the site fires for it too: harmless where the program
		 * finds no call of its own in flight (the state it keeps says), not where it reads a
		 * result from a register that path never set.
		 */
		if (i > ret_idx && d->branch_target && result_reg >= 0)
			return;
		if (d->emulated) {
			if (result_reg >= 0 && !(held & (1u << result_reg))) {
				for (r = 0; r < 16 && !(held & (1u << r)); r++)
					;
				if (!sites__slot_of(r))
					return;
				out->result = (int8_t)r;
			}
			out->off = ins->addr + d->off;
			out->emulated = true;
			return;
		}
		if (d->kind == INSN_RET || d->kind == INSN_JMP_IND || d->kind == INSN_JCC ||
		    d->kind == INSN_JMP)
			return; /* (a Jcc or JMP single-stepped: 0x66-prefixed, JRCXZ) */
		if (d->kind == INSN_CALL_IND && !(flags & AFTER_CALL_PASS_CALLS))
			return;
		if (d->kind != INSN_CALL_IND && (d->writes & (1u << X86_SP)))
			return; /* the in-caller SP adjustment would be wrong past it */
		if (d->writes & keep)
			return;
		if (d->mov_src >= 0 && (held & (1u << d->mov_src)))
			held |= d->writes;
		else
			held &= ~d->writes;
		if (result_reg >= 0 && !held)
			return;
	}
}

/* Whether every branch to instruction T of INS is a JMP right after a call. */
static bool joins_after_calls(const struct insns *ins, long t)
{
	uint64_t at = ins->addr + ins->v[t].off;
	size_t j;

	for (j = 0; j < ins->n; j++) {
		const struct insn *d = &ins->v[j];

		if ((d->kind != INSN_JMP && d->kind != INSN_JCC) || d->target != at)
			continue;
		if (d->kind != INSN_JMP || !j ||
		    (ins->v[j - 1].kind != INSN_CALL && ins->v[j - 1].kind != INSN_CALL_IND))
			return false;
	}
	return true;
}

/* The instruction index a direct branch of INS goes to; -1 outside the function. */
static long branch_index(const struct insns *ins, const struct insn *d)
{
	if (d->target < ins->addr || d->target >= ins->addr + ins->len)
		return -1;
	return disasm__index(ins, d->target - ins->addr);
}

/* Falls into the next instruction when done. */
static bool falls_through(const struct insn *d)
{
	return d->kind != INSN_RET && d->kind != INSN_JMP && d->kind != INSN_JMP_IND;
}

/*
 * Marks in SEEN what the branch starting at ENTRY reaches up to its RETs, which go into *EXCL;
 * -ENOENT when it leaves the function, loops back to SITE, jumps through a table or is too long.
 */
static int walk_region(const struct insns *ins, long site, long entry, bool *seen, long *excl,
		       size_t *nexcl)
{
	long *stack, i, t;
	size_t top = 0, count = 0;
	int err = 0;

	stack = malloc(2 * REGION_MAX * sizeof(*stack));
	if (!stack)
		return -ENOMEM;
	stack[top++] = entry;
	while (top) {
		i = stack[--top];
		if (i < 0 || i >= (long)ins->n || i == site) {
			err = -ENOENT;
			break;
		}
		if (seen[i])
			continue;
		seen[i] = true;
		if (++count > REGION_MAX) {
			err = -ENOENT;
			break;
		}
		switch (ins->v[i].kind) {
		case INSN_RET:
			excl[(*nexcl)++] = i;
			continue;
		case INSN_JMP_IND:
			err = -ENOENT;
			break;
		case INSN_JMP:
		case INSN_JCC:
			t = branch_index(ins, &ins->v[i]);
			if (t < 0) {
				err = -ENOENT; /* a tail call: returns where we cannot see */
				break;
			}
			stack[top++] = t;
			break;
		default:
			break;
		}
		if (err)
			break;
		if (falls_through(&ins->v[i]))
			stack[top++] = i + 1;
	}
	free(stack);
	return err;
}

/* Whether the edge FROM -> TO is one of the N edges (FROMS[i], TOS[i]). */
static bool edge_allowed(const long *froms, const long *tos, size_t n, long from, long to)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (froms[i] == from && tos[i] == to)
			return true;
	return false;
}

/*
 * Whether only the N edges (FROMS[i], TOS[i]) lead into the instructions SEEN marks, none of
 * which is the function's start (a way in that passes none of those edges).
 */
static bool region_closed(const struct insns *ins, const long *froms, const long *tos, size_t n,
			  const bool *seen)
{
	bool dead = false;
	size_t j;
	long t;

	if (ins->n && seen[0])
		return false;
	for (j = 0; j < ins->n; j++) {
		const struct insn *d = &ins->v[j];

		/* Padding after a jump that nothing jumps to (a NOP aligning a branch target). */
		dead = j && !d->branch_target && (dead || !falls_through(&ins->v[j - 1]));
		if (seen[j] || dead)
			continue;
		if (d->kind == INSN_JMP || d->kind == INSN_JCC) {
			t = branch_index(ins, d);
			if (t >= 0 && seen[t] && !edge_allowed(froms, tos, n, (long)j, t)) {
				pr_debug("  +0x%x jumps into it at +0x%x", d->off, ins->v[t].off);
				return false;
			}
		}
		if (falls_through(d) && j + 1 < ins->n && seen[j + 1] &&
		    !edge_allowed(froms, tos, n, (long)j, (long)j + 1)) {
			pr_debug("  +0x%x falls into it", d->off);
			return false;
		}
	}
	return true;
}

int sites__success_exit(const struct insns *ins, long ret_idx, int err_reg, uint16_t results,
			struct end_site *site, long **excl, size_t *nexcl)
{
	const struct insn *d = NULL;
	long i, jcc = -1, entry;
	bool *seen = NULL;
	long *rets = NULL;
	size_t n = 0;
	int err;

	*excl = NULL;
	*nexcl = 0;
	if (ins->unknown_targets)
		return -ENOENT;
	for (i = ret_idx; i < (long)ins->n && i < ret_idx + AFTER_CALL_MAX; i++) {
		d = &ins->v[i];
		/* The other results may join here: the interface call of an alternative. */
		if (i > ret_idx && d->branch_target && !joins_after_calls(ins, i))
			return -ENOENT;
		if (d->kind == INSN_JCC) {
			jcc = i;
			break;
		}
		if ((d->kind != INSN_OTHER && d->kind != INSN_NOP) || (d->writes & results))
			return -ENOENT;
	}
	if (jcc <= ret_idx || !d->emulated || !d->jcc_zf || ins->v[jcc - 1].test_reg != err_reg)
		return -ENOENT;
	/* JE: taken when the error is nil; JNE: falls through then. */
	entry = d->jcc_if_zero ? branch_index(ins, d) : jcc + 1;
	if (entry < 0)
		return -ENOENT;
	seen = calloc(ins->n, sizeof(*seen));
	rets = calloc(REGION_MAX + 1, sizeof(*rets));
	if (!seen || !rets) {
		err = -ENOMEM;
		goto cleanup;
	}
	err = walk_region(ins, jcc, entry, seen, rets, &n);
	if (err) {
		pr_debug("0x%llx: the error-free branch at +0x%x cannot be followed to its RETs",
			 (unsigned long long)ins->addr, d->off);
		goto cleanup;
	}
	if (!n || !region_closed(ins, &jcc, &entry, 1, seen)) {
		pr_debug("0x%llx: the error-free branch at +0x%x shares code with other paths",
			 (unsigned long long)ins->addr, d->off);
		err = -ENOENT;
		goto cleanup;
	}
	memset(site, 0, sizeof(*site));
	site->off = ins->addr + d->off;
	site->caller = ins->addr;
	site->emulated = true;
	site->in_caller = false;
	site->if_no_error = true;
	site->result = -1;
	site->frames = 0;
	*excl = rets;
	*nexcl = n;
	rets = NULL;
cleanup:
	free(seen);
	free(rets);
	return err;
}

/* Whether instruction T of INS is the target of a direct branch from one SEEN marks. */
static bool jumped_to_from(const struct insns *ins, long t, const bool *seen)
{
	size_t j;

	for (j = 0; j < ins->n; j++)
		if (seen[j] && (ins->v[j].kind == INSN_JMP || ins->v[j].kind == INSN_JCC) &&
		    branch_index(ins, &ins->v[j]) == t)
			return true;
	return false;
}

int sites__after_inner(const struct insns *ins, const long *calls, size_t n, unsigned int flags,
		       int result_reg, struct end_site *ends, long **excl, size_t *nexcl)
{
	bool *seen = NULL, *mine = NULL;
	long *rets = NULL, *tos = NULL, *at = NULL;
	size_t i, j, k, nrets = 0, nmine;
	int err = -ENOENT;

	*excl = NULL;
	*nexcl = 0;
	if (!n || ins->unknown_targets)
		return -ENOENT;
	seen = calloc(ins->n, sizeof(*seen));
	mine = calloc(ins->n, sizeof(*mine));
	/* Room for the RETs kept and one walk's, some of them found again. */
	rets = calloc(2 * ins->n + 1, sizeof(*rets));
	tos = calloc(n, sizeof(*tos));
	at = calloc(n, sizeof(*at));
	if (!seen || !mine || !rets || !tos || !at) {
		err = -ENOMEM;
		goto cleanup;
	}
	for (i = 0; i < n; i++) {
		if (calls[i] < 0 || calls[i] + 1 >= (long)ins->n ||
		    ins->v[calls[i]].kind != INSN_CALL)
			goto cleanup;
		tos[i] = calls[i] + 1;
		sites__after_call(ins, tos[i], flags, result_reg, &ends[i]);
		at[i] = disasm__index(ins, ends[i].off - ins->addr);
		if (!ends[i].emulated || at[i] < 0)
			goto cleanup;
		/* In the function's own frame: not after its return, as sites__after_call says. */
		ends[i].in_caller = false;
	}
	for (i = 0; i < n; i++) {
		memset(mine, 0, ins->n * sizeof(*mine));
		nmine = 0;
		err = walk_region(ins, -1, tos[i], mine, rets + nrets, &nmine);
		if (err) {
			pr_debug("0x%llx: the way from the call at +0x%x cannot be followed to its "
				 "RETs",
				 (unsigned long long)ins->addr, ins->v[calls[i]].off);
			goto cleanup;
		}
		err = -ENOENT;
		/*
		 * Each call passes its own site once: no way from it leads to a probed call again
		 * (a loop), back to its site, or to another call's site.
		 */
		for (j = 0; j < n; j++)
			if (mine[calls[j]] || (j != i && mine[at[j]]))
				goto cleanup;
		for (j = (size_t)tos[i]; j <= (size_t)at[i]; j++)
			if (jumped_to_from(ins, (long)j, mine))
				goto cleanup;
		/* RETs the ways from two calls share were counted by the first. */
		for (j = 0, k = nrets; j < nmine; j++)
			if (!seen[rets[nrets + j]])
				rets[k++] = rets[nrets + j];
		nrets = k;
		for (j = 0; j < ins->n; j++)
			seen[j] |= mine[j];
	}
	if (!nrets || !region_closed(ins, calls, tos, n, seen)) {
		pr_debug("0x%llx: the ways after the calls share code with other paths",
			 (unsigned long long)ins->addr);
		goto cleanup;
	}
	*excl = rets;
	*nexcl = nrets;
	rets = NULL;
	err = 0;
cleanup:
	free(seen);
	free(mine);
	free(rets);
	free(tos);
	free(at);
	return err;
}

static uint64_t le64(const uint8_t *p)
{
	uint64_t v;

	memcpy(&v, p, sizeof(v));
	return v;
}

static int32_t le32(const uint8_t *p)
{
	int32_t v;

	memcpy(&v, p, sizeof(v));
	return v;
}

/*
 * What sites__find_calls() asks of a whole binary, found in one pass over it and kept sorted:
 * the calls and jumps into its code, the code addresses its data and its LEAs hold, the words its
 * method tables may hold. A pass over a 120 MB binary takes tens of milliseconds, and an attach
 * asks for dozens of functions' callers.
 */
struct code_refs {
	bool built;
	bool no_mtab;	    /* the method tables' words cannot be told: any address may be in one */
	uint64_t *jumps;    /* (target offset << 32 | offset) of each CALL or JMP rel32 into .text */
	size_t njumps;
	/*
	 * A bit per byte of .text: set where an 8-byte word of data (or a relocation's addend)
	 * holds its address, or a RIP-relative LEA loads it (TAKEN); where a 4-byte word of .rodata
	 * holds its offset from runtime.text (MTAB). Bits, not sorted lists: .rodata's small numbers
	 * alone would be millions of entries to sort.
	 */
	uint64_t *taken, *mtab;
};

struct code_refs *sites__refs_new(void)
{
	return calloc(1, sizeof(struct code_refs));
}

static void refs_release(struct code_refs *r)
{
	free(r->jumps);
	free(r->taken);
	free(r->mtab);
	memset(r, 0, sizeof(*r));
}

void sites__refs_free(struct code_refs *r)
{
	if (!r)
		return;
	refs_release(r);
	free(r);
}

/* A growing array of N elements of SIZE bytes at *V, room for *CAP: room for one more. */
static int grow(void **v, size_t n, size_t *cap, size_t size)
{
	size_t ncap;
	void *g;

	if (n < *cap)
		return 0;
	ncap = *cap ? 2 * *cap : 1024;
	g = realloc(*v, ncap * size);
	if (!g)
		return -ENOMEM;
	*v = g;
	*cap = ncap;
	return 0;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* Sets the bit of ADDR in BITS, a bit per byte of CM's .text, when ADDR is in it. */
static void mark(const struct code_map *cm, uint64_t *bits, uint64_t addr)
{
	uint64_t off = addr - cm->text_addr;

	if (addr >= cm->text_addr && off < cm->text_len)
		bits[off / 64] |= 1ULL << (off % 64);
}

static bool marked(const struct code_map *cm, const uint64_t *bits, uint64_t addr)
{
	uint64_t off = addr - cm->text_addr;

	return addr >= cm->text_addr && off < cm->text_len && (bits[off / 64] >> (off % 64) & 1);
}

/* The calls and jumps into .text, and the RIP-relative LEAs of its addresses. */
static int refs_scan_text(const struct code_map *cm, struct code_refs *r)
{
	const uint8_t *t = cm->text;
	size_t cap = 0, i;
	uint64_t to;

	for (i = 0; i + 5 <= cm->text_len; i++) {
		if (t[i] == 0xe8 || t[i] == 0xe9) {
			to = cm->text_addr + i + 5 + (int64_t)le32(t + i + 1);
			if (to < cm->text_addr || to - cm->text_addr >= cm->text_len)
				continue;
			if (grow((void **)&r->jumps, r->njumps, &cap, sizeof(*r->jumps)))
				return -ENOMEM;
			r->jumps[r->njumps++] = (to - cm->text_addr) << 32 | i;
		} else if ((t[i] == 0x48 || t[i] == 0x4c) && i + 7 <= cm->text_len &&
			   t[i + 1] == 0x8d && (t[i + 2] & 0xc7) == 0x05) {
			mark(cm, r->taken, cm->text_addr + i + 7 + (int64_t)le32(t + i + 3));
		}
	}
	qsort(r->jumps, r->njumps, sizeof(*r->jumps), cmp_u64);
	return 0;
}

/*
 * The code addresses the data holds: 8-byte words of the data sections (Go aligns pointers to 8;
 * not .gopclntab, whose Go 1.16-1.17 tables hold every function's entry), and in a
 * position-independent binary the relocations' addends, which its pointers are.
 */
static void refs_scan_data(const struct code_map *cm, struct code_refs *r)
{
	static const char *const sections[] = { ".rodata", ".data.rel.ro", ".noptrdata", ".data" };
	const uint8_t *data;
	uint64_t sec_addr;
	size_t size, i, k;

	for (k = 0; k < sizeof(sections) / sizeof(sections[0]); k++) {
		if (elf_file__section(cm->ef, sections[k], (const void **)&data, &size, &sec_addr))
			continue;
		for (i = (8 - sec_addr % 8) % 8; i + 8 <= size; i += 8)
			mark(cm, r->taken, le64(data + i));
	}
	if (!elf_file__section(cm->ef, ".rela.dyn", (const void **)&data, &size, NULL)) {
		for (i = 0; i + sizeof(Elf64_Rela) <= size; i += sizeof(Elf64_Rela)) {
			Elf64_Rela rel;

			memcpy(&rel, data + i, sizeof(rel));
			mark(cm, r->taken, (uint64_t)rel.r_addend);
		}
	}
}

/*
 * The words a type's method table may hold for a function of .text: its code offset from
 * runtime.text, as a 4-byte word of .rodata. A byte pattern: a stray match only costs the RET
 * probes.
 */
static void refs_scan_mtab(const struct code_map *cm, struct code_refs *r)
{
	const uint8_t *data;
	uint64_t sec_addr;
	size_t size, i;

	r->no_mtab = !cm->text_base || cm->text_addr < cm->text_base ||
		     cm->text_addr - cm->text_base + cm->text_len > INT32_MAX ||
		     elf_file__section(cm->ef, ".rodata", (const void **)&data, &size, &sec_addr);
	if (r->no_mtab)
		return;
	for (i = (4 - sec_addr % 4) % 4; i + 4 <= size; i += 4)
		mark(cm, r->mtab, cm->text_base + (uint32_t)le32(data + i));
}

static int refs_build(const struct code_map *cm, struct code_refs *r)
{
	size_t words = cm->text_len / 64 + 1;
	int err;

	if (r->built)
		return 0;
	r->taken = calloc(words, sizeof(*r->taken));
	r->mtab = calloc(words, sizeof(*r->mtab));
	err = r->taken && r->mtab ? refs_scan_text(cm, r) : -ENOMEM;
	if (err) {
		refs_release(r);
		return err;
	}
	refs_scan_data(cm, r);
	refs_scan_mtab(cm, r);
	r->built = true;
	return 0;
}

/* The first of R's calls and jumps to the .text offset TO (R->njumps if none). */
static size_t first_jump_to(const struct code_refs *r, uint64_t to)
{
	size_t lo = 0, hi = r->njumps, mid;

	while (lo < hi) {
		mid = lo + (hi - lo) / 2;
		if (r->jumps[mid] >> 32 < to)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static int calls_add(struct call_site **calls, size_t *n, size_t *cap, const struct call_site *c)
{
	if (*n == *cap) {
		size_t ncap = *cap ? 2 * *cap : 4;
		struct call_site *v = realloc(*calls, ncap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		*calls = v;
		*cap = ncap;
	}
	(*calls)[(*n)++] = *c;
	return 0;
}

/* Decodes the function SYM of CM into INS. */
static int decode_at(const struct code_map *cm, const struct elf_symbol *sym, struct insns *ins)
{
	uint8_t *code;
	int err;

	if (!sym->size)
		return -ENODATA;
	code = malloc(sym->size);
	if (!code)
		return -ENOMEM;
	err = elf_file__read_addr(cm->ef, sym->addr, code, sym->size);
	if (!err)
		err = disasm__decode(cm->machine, code, sym->size, sym->addr, ins);
	free(code);
	return err;
}

void sites__free_calls(struct call_site *calls, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		disasm__insns_free(&calls[i].ins);
	free(calls);
}

int sites__find_calls(const struct code_map *cm, uint64_t addr, unsigned int flags,
		      struct call_site **calls, size_t *n)
{
	struct code_refs *r = cm->refs;
	struct call_site c;
	size_t cap = 0, j;
	uint64_t from, to;
	long idx;
	int err = 0;

	*calls = NULL;
	*n = 0;
	if (cm->machine != EM_X86_64)
		return -EOPNOTSUPP;
	if (addr < cm->text_addr || addr - cm->text_addr >= cm->text_len)
		return -ENOENT;
	err = refs_build(cm, r);
	if (err)
		return err;
	to = addr - cm->text_addr;
	if (marked(cm, r->taken, addr) ||
	    (!(flags & FIND_CALLS_NOT_DYNAMIC) && (r->no_mtab || marked(cm, r->mtab, addr))))
		return -ENOENT;
	for (j = first_jump_to(r, to); j < r->njumps && r->jumps[j] >> 32 == to; j++) {
		from = cm->text_addr + (uint32_t)r->jumps[j];
		memset(&c, 0, sizeof(c));
		if (cm->func_at(cm->ctx, from, &c.caller))
			continue; /* bytes outside any function */
		err = decode_at(cm, &c.caller, &c.ins);
		if (err)
			break;
		idx = disasm__index(&c.ins, from - c.caller.addr);
		if (idx < 0 || c.ins.v[idx].target != addr ||
		    (c.ins.v[idx].kind == INSN_JMP && c.caller.addr == addr)) {
			/* Not an instruction, or the jump back to the start after morestack. */
			disasm__insns_free(&c.ins);
			continue;
		}
		if (c.ins.v[idx].kind != INSN_CALL || idx + 1 >= (long)c.ins.n) {
			/* A tail call: the return goes to a caller we do not see. */
			disasm__insns_free(&c.ins);
			err = -ENOENT;
			break;
		}
		c.ret_idx = idx + 1;
		err = calls_add(calls, n, &cap, &c);
		if (err) {
			disasm__insns_free(&c.ins);
			break;
		}
	}
	if (!err && !*n)
		err = -ENOENT;
	if (err) {
		sites__free_calls(*calls, *n);
		*calls = NULL;
		*n = 0;
	}
	return err;
}

/*
 * Following the error a function returns (sites__error_ends). A location (a register, or an
 * 8-byte word of the frame at d(SP)) holds VAL_TOP (not known), RES(s): the word the latest
 * work call returned in result slot s, or VAL_FRAME: an address in the frame. The meet of two
 * different values is VAL_TOP; as each location only goes down once, the walk ends.
 */
#define VAL_TOP 0xff
#define VAL_FRAME 0xfe
#define NREGS 16
/* Frames deeper than this keep their words unknown: Go's frames for such loops are small. */
#define FRAME_WORDS 128

struct flow_state {
	uint8_t reg[NREGS];
	uint8_t slot[FRAME_WORDS];
};

struct flow {
	const struct insns *ins;
	struct flow_state *in; /* before each instruction */
	bool *reached;
	bool *work;	     /* a work call */
	bool *reach_work;    /* a work call is reachable from here (or it is one) */
	int32_t taken_from;  /* the frame's address is taken from this word on; -1: never */
	const uint64_t *keeping; /* calls that keep the registers (sites__error_ends) */
	size_t nkeeping;
};

static void state_top(struct flow_state *s)
{
	memset(s, VAL_TOP, sizeof(*s));
}

/* Words [DISP, DISP + SIZE) of the frame become unknown. */
static void slots_top(struct flow_state *s, int32_t disp, uint32_t size)
{
	int32_t w;

	if (disp < 0)
		return;
	for (w = disp / 8; w < FRAME_WORDS && w * 8 < disp + (int32_t)size; w++)
		s->slot[w] = VAL_TOP;
}

/* Whether S holds an address in the frame anywhere. */
static bool holds_frame(const struct flow_state *s)
{
	return memchr(s->reg, VAL_FRAME, sizeof(s->reg)) ||
	       memchr(s->slot, VAL_FRAME, sizeof(s->slot));
}

/* How instruction D touches the frame (disasm.h's data moves, with its base SP). */
enum frame_access {
	FRAME_NONE,
	FRAME_LOAD,	/* MOV r64, d(SP) */
	FRAME_STORE,	/* MOV d(SP), r64 */
	FRAME_WRITE,	/* any other write of d(SP): its SIZE bytes, 16 when not known */
	FRAME_ANYWHERE, /* a write through an index or BP: any word */
	FRAME_ADDR,	/* LEA of d(SP): the frame's address taken */
	FRAME_OTHER,	/* a write of memory elsewhere */
};

static enum frame_access frame_access(const struct insn *d)
{
	bool sp = d->has_mem && d->mem_base == X86_SP && !d->mem_index;

	if (sp && d->op == OP_LEA)
		return FRAME_ADDR;
	if (sp && d->op == OP_MOV && d->size == 8 && d->reg >= 0 && d->reg < NREGS)
		return d->to_mem ? FRAME_STORE : FRAME_LOAD;
	if (!d->mem_write)
		return FRAME_NONE;
	if (sp)
		return FRAME_WRITE;
	if (d->has_mem && (d->mem_base == X86_SP || d->mem_base == X86_BP))
		return FRAME_ANYWHERE;
	return FRAME_OTHER;
}

static void transfer(const struct flow *f, long i, struct flow_state *s)
{
	const struct insn *d = &f->ins->v[i];
	enum frame_access fa = frame_access(d);
	uint8_t moved = VAL_TOP;
	bool frame_in = false;
	int r, k;

	/*
	 * The words whose address the function takes (Go's escape analysis keeps such a variable
	 * in the frame only when no pointer to it outlives the call) change only through an
	 * address in the frame: a call that may get one, or a store while a register holds one.
	 */
	if (f->taken_from >= 0 && (d->kind == INSN_CALL || d->kind == INSN_CALL_IND ||
				   fa == FRAME_OTHER) && holds_frame(s))
		slots_top(s, f->taken_from, FRAME_WORDS * 8);
	for (k = 0; d->kind == INSN_CALL && k < (int)f->nkeeping; k++) {
		if (d->target == f->keeping[k]) {
			s->reg[11] = s->reg[12] = s->reg[13] = VAL_TOP;
			return;
		}
	}
	if (d->kind == INSN_CALL || d->kind == INSN_CALL_IND) {
		/*
		 * Go keeps no register across a call but SP, BP and g. The frame's other words
		 * stay: callees write only the outgoing argument area, below the words the
		 * function keeps across calls.
		 */
		for (r = 0; r < NREGS; r++)
			s->reg[r] = VAL_TOP;
		if (f->work[i]) {
			/* Older results are stale: an end must read this call's. */
			for (k = 0; k < FRAME_WORDS; k++)
				if (s->slot[k] != VAL_FRAME)
					s->slot[k] = VAL_TOP;
			for (k = 1; k <= 9; k++)
				s->reg[reg_of_slot(k)] = (uint8_t)k;
		}
		return;
	}
	for (r = 0; r < NREGS; r++)
		if ((d->reads & (1u << r)) && s->reg[r] == VAL_FRAME)
			frame_in = true;
	if (d->mov_src >= 0)
		moved = s->reg[d->mov_src];
	else if (fa == FRAME_LOAD && d->disp >= 0 && d->disp % 8 == 0 && d->disp / 8 < FRAME_WORDS)
		moved = s->slot[d->disp / 8];
	else if (fa == FRAME_ADDR || frame_in)
		moved = VAL_FRAME; /* an address in the frame, or one computed from it */
	if (fa == FRAME_STORE && d->disp >= 0 && d->disp % 8 == 0 && d->disp / 8 < FRAME_WORDS)
		s->slot[d->disp / 8] = s->reg[d->reg];
	else if (fa == FRAME_STORE || fa == FRAME_WRITE)
		slots_top(s, d->disp, d->size ? d->size : 16);
	else if (fa == FRAME_ANYWHERE)
		slots_top(s, 0, FRAME_WORDS * 8);
	for (r = 0; r < NREGS; r++)
		if (d->writes & (1u << r))
			s->reg[r] = (d->mov_src >= 0 || fa == FRAME_LOAD || moved == VAL_FRAME) ?
					    moved :
					    VAL_TOP;
	/* SP moved (the prologue, the epilogue): d(SP) names other words now. */
	if (d->writes & (1u << X86_SP))
		memset(s->slot, VAL_TOP, sizeof(s->slot));
}

static bool meet(struct flow_state *into, const struct flow_state *from)
{
	bool changed = false;
	size_t k;

	for (k = 0; k < NREGS; k++) {
		if (into->reg[k] != from->reg[k] && into->reg[k] != VAL_TOP) {
			into->reg[k] = VAL_TOP;
			changed = true;
		}
	}
	for (k = 0; k < FRAME_WORDS; k++) {
		if (into->slot[k] != from->slot[k] && into->slot[k] != VAL_TOP) {
			into->slot[k] = VAL_TOP;
			changed = true;
		}
	}
	return changed;
}

/* The instructions control may go to from I: up to two, into NEXT; how many. */
static int successors(const struct insns *ins, long i, long next[2])
{
	const struct insn *d = &ins->v[i];
	int n = 0;
	long t;

	if ((d->kind == INSN_JMP || d->kind == INSN_JCC) && (t = branch_index(ins, d)) >= 0)
		next[n++] = t;
	if (falls_through(d) && i + 1 < (long)ins->n)
		next[n++] = i + 1;
	return n;
}

/* The values before each instruction reached from START, into F->in. */
static int flow_values(struct flow *f, long start)
{
	const struct insns *ins = f->ins;
	struct flow_state s;
	long *stack, next[2], i;
	size_t top = 0, k;
	bool *queued;
	int n, j;

	stack = malloc(ins->n * sizeof(*stack));
	queued = calloc(ins->n, sizeof(*queued));
	if (!stack || !queued) {
		free(stack);
		free(queued);
		return -ENOMEM;
	}
	state_top(&f->in[start]);
	f->reached[start] = true;
	stack[top++] = start;
	queued[start] = true;
	while (top) {
		i = stack[--top];
		queued[i] = false;
		s = f->in[i];
		transfer(f, i, &s);
		n = successors(ins, i, next);
		for (j = 0; j < n; j++) {
			k = (size_t)next[j];
			if (!f->reached[k]) {
				f->reached[k] = true;
				f->in[k] = s;
			} else if (!meet(&f->in[k], &s)) {
				continue;
			}
			if (!queued[k]) {
				queued[k] = true;
				stack[top++] = (long)k;
			}
		}
	}
	free(stack);
	free(queued);
	return 0;
}

/* F->reach_work: whether a work call can be reached from each instruction. */
static void flow_reach_work(struct flow *f)
{
	const struct insns *ins = f->ins;
	bool changed = true;
	long i, next[2];
	int n, j;

	for (i = 0; i < (long)ins->n; i++)
		f->reach_work[i] = f->work[i];
	while (changed) {
		changed = false;
		for (i = (long)ins->n - 1; i >= 0; i--) {
			if (f->reach_work[i])
				continue;
			n = successors(ins, i, next);
			for (j = 0; j < n; j++) {
				if (f->reach_work[next[j]]) {
					f->reach_work[i] = changed = true;
					break;
				}
			}
		}
	}
}

/*
 * How many ends each way from START passes, as a mask (bit 0: none, bit 1: one, bit 2: more),
 * into COUNT (before each instruction); an instruction ENDS marks is one end, on its way to
 * END_TO (an instruction index; -1: on every way).
 */
static int count_ends(const struct insns *ins, long start, const bool *ends, const long *end_to,
		      uint8_t *count)
{
	long *stack, next[2], i;
	size_t top = 0;
	uint8_t out, shifted;
	bool *queued;
	int n, j;

	stack = malloc(ins->n * sizeof(*stack));
	queued = calloc(ins->n, sizeof(*queued));
	if (!stack || !queued) {
		free(stack);
		free(queued);
		return -ENOMEM;
	}
	memset(count, 0, ins->n);
	count[start] = 1;
	stack[top++] = start;
	queued[start] = true;
	while (top) {
		i = stack[--top];
		queued[i] = false;
		shifted = (uint8_t)(count[i] << 1);
		shifted = (shifted & 3) | ((shifted & 4) || (count[i] & 4) ? 4 : 0);
		n = successors(ins, i, next);
		for (j = 0; j < n; j++) {
			/* An end on one way of a jump counts on that way alone. */
			out = ends[i] && (end_to[i] < 0 || end_to[i] == next[j]) ? shifted : count[i];
			if ((count[next[j]] | out) == count[next[j]])
				continue;
			count[next[j]] |= out;
			if (!queued[next[j]]) {
				queued[next[j]] = true;
				stack[top++] = next[j];
			}
		}
	}
	free(stack);
	free(queued);
	return 0;
}

/* A register of INS's state S holding RES(SLOT), with RES(SLOT + 1) in the next ABI register. */
static int pair_at(const struct flow_state *s, int slot)
{
	int r, next;

	for (r = 0; r < NREGS; r++) {
		if (s->reg[r] != slot || !sites__slot_of(r))
			continue;
		next = reg_of_slot(sites__slot_of(r) + 1);
		if (next >= 0 && s->reg[next] == slot + 1)
			return r;
	}
	return -1;
}

/* Whether every RET reached from I returns RES(SLOT), RES(SLOT + 1) in AX and BX. */
static int rets_return(const struct flow *f, long i, int slot, bool *seen)
{
	const struct insns *ins = f->ins;
	long *stack, next[2], k;
	size_t top = 0;
	int n, j, ok = 1;

	stack = malloc(ins->n * sizeof(*stack));
	if (!stack)
		return -ENOMEM;
	memset(seen, 0, ins->n * sizeof(*seen));
	stack[top++] = i;
	seen[i] = true;
	while (top && ok) {
		k = stack[--top];
		if (ins->v[k].kind == INSN_RET) {
			ok = f->in[k].reg[X86_AX] == slot && f->in[k].reg[X86_BX] == slot + 1;
			continue;
		}
		if (ins->v[k].kind == INSN_JMP_IND ||
		    ((ins->v[k].kind == INSN_JMP || ins->v[k].kind == INSN_JCC) &&
		     branch_index(ins, &ins->v[k]) < 0))
			ok = 0; /* a jump table, or a tail call */
		n = successors(ins, k, next);
		for (j = 0; j < n; j++) {
			if (!seen[next[j]]) {
				seen[next[j]] = true;
				stack[top++] = next[j];
			}
		}
	}
	free(stack);
	return ok;
}

/*
 * Whether a way from the return of the work call at CALL, its error (RES(SLOT)) nil, reaches a
 * RET that KEEP marks before an end that ENDS marks: branches that test that error go the nil
 * way; a way back to a work call or to the loop's head (a jump backwards) is a retry, which a
 * nil error does not make.
 */
static bool nil_way_steps(const struct flow *f, long call, int slot, const bool *ends,
			  const long *end_to, const bool *keep, bool *seen)
{
	const struct insns *ins = f->ins;
	const struct insn *d, *prev;
	long *stack, next[2], k;
	size_t top = 0;
	bool stepped = false;
	int n, j;

	if (call + 1 >= (long)ins->n)
		return false;
	stack = malloc(ins->n * sizeof(*stack));
	if (!stack)
		return true;
	memset(seen, 0, ins->n * sizeof(*seen));
	stack[top++] = call + 1;
	seen[call + 1] = true;
	while (top && !stepped) {
		k = stack[--top];
		d = &ins->v[k];
		if ((ends[k] && end_to[k] < 0) || f->work[k])
			continue;
		if (d->kind == INSN_RET) {
			stepped = keep[k];
			continue;
		}
		n = successors(ins, k, next);
		prev = k ? &ins->v[k - 1] : NULL;
		if (n == 2 && d->jcc_zf && prev && prev->test_reg >= 0 &&
		    f->in[k - 1].reg[prev->test_reg] == slot) {
			/* JE: taken when the error is nil; JNE: falls through then. */
			n = 1;
			next[0] = d->jcc_if_zero ? branch_index(ins, d) : k + 1;
		}
		for (j = 0; j < n; j++) {
			/* Back to the loop's head: an attempt again, which no nil error makes. */
			if (next[j] >= 0 && next[j] > k && !seen[next[j]] &&
			    !(ends[k] && end_to[k] == next[j])) {
				seen[next[j]] = true;
				stack[top++] = next[j];
			}
		}
	}
	free(stack);
	return stepped;
}

int sites__error_ends(const struct insns *ins, long start, const long *calls, size_t ncalls,
		      bool ends_inside, const uint64_t *keeping, size_t nkeeping,
		      struct end_site **ends, size_t *nends, long **kept, size_t *nkept,
		      int *nil_steps)
{
	struct flow f = {
		.ins = ins, .taken_from = -1, .keeping = keeping, .nkeeping = nkeeping
	};
	uint8_t *count = NULL;
	bool *is_end = NULL, *keep = NULL, *seen = NULL, ok;
	long next[2], i, k, *end_to = NULL;
	size_t j, nsite;
	int err = -ENOENT, slot, n, r = -1, site_reg[AFTER_CALL_MAX];
	long site_at[AFTER_CALL_MAX];
	const struct insn *t;

	*ends = NULL;
	*nends = 0;
	*kept = NULL;
	*nkept = 0;
	*nil_steps = 1;
	if (!ncalls || ins->unknown_targets || start < 0 || start >= (long)ins->n)
		return -ENOENT;
	f.in = calloc(ins->n, sizeof(*f.in));
	f.reached = calloc(ins->n, sizeof(*f.reached));
	f.work = calloc(ins->n, sizeof(*f.work));
	f.reach_work = calloc(ins->n, sizeof(*f.reach_work));
	count = calloc(ins->n, sizeof(*count));
	is_end = calloc(ins->n, sizeof(*is_end));
	keep = calloc(ins->n, sizeof(*keep));
	seen = calloc(ins->n, sizeof(*seen));
	end_to = calloc(ins->n, sizeof(*end_to));
	if (!f.in || !f.reached || !f.work || !f.reach_work || !count || !is_end || !keep ||
	    !seen || !end_to) {
		err = -ENOMEM;
		goto cleanup;
	}
	for (j = 0; j < ncalls; j++) {
		if (calls[j] < 0 || calls[j] >= (long)ins->n || ins->v[calls[j]].kind != INSN_CALL)
			goto cleanup;
		f.work[calls[j]] = true;
	}
	for (i = 0; i < (long)ins->n; i++)
		if (frame_access(&ins->v[i]) == FRAME_ADDR && ins->v[i].disp >= 0 &&
		    (f.taken_from < 0 || ins->v[i].disp < f.taken_from))
			f.taken_from = ins->v[i].disp;
	err = flow_values(&f, start);
	if (err)
		goto cleanup;
	flow_reach_work(&f);
	if (!f.reach_work[start]) {
		err = -ENOENT;
		goto cleanup;
	}
	for (slot = 1; slot <= 8; slot++) {
		nsite = 0;
		memset(is_end, 0, ins->n * sizeof(*is_end));
		for (i = 0; i < (long)ins->n; i++)
			end_to[i] = -1;
		if (ends_inside) {
			/* The callee ends the call: its CALL counts as the end, one for every way. */
			for (j = 0; j < ncalls; j++)
				is_end[calls[j]] = true;
		} else {
			/*
			 * Where the ways leave the work for good (no work call ahead), the first
			 * instruction the kernel emulates on the straight line there, if the returned
			 * error is in a pair of registers and every RET after it returns that error.
			 */
			for (i = 0; i < (long)ins->n; i++) {
				if (!f.reached[i] || !f.reach_work[i])
					continue;
				n = successors(ins, i, next);
				while (n-- > 0) {
					if (f.reach_work[next[n]] || !f.reached[next[n]])
						continue;
					for (k = next[n]; k < (long)ins->n && k < next[n] + AFTER_CALL_MAX;
					     k++) {
						/* Another way joins: the end would be its too. */
						if (k > next[n] && ins->v[k].branch_target) {
							k = (long)ins->n;
							break;
						}
						r = ins->v[k].emulated ? pair_at(&f.in[k], slot) : -1;
						if (r >= 0)
							break;
						if (!falls_through(&ins->v[k]) ||
						    ins->v[k].kind == INSN_JCC || ins->v[k].kind == INSN_JMP)
							k = (long)ins->n;
					}
					if (k >= (long)ins->n || k >= next[n] + AFTER_CALL_MAX) {
						/*
						 * None: the JE or JNE that leaves, after a TEST of an
						 * ABI register, if it holds the error too.
						 */
						t = &ins->v[i];
						k = i;
						r = t->kind == INSN_JCC && t->emulated && t->jcc_zf && i &&
								    ins->v[i - 1].test_any >= 0 &&
								    sites__slot_of(ins->v[i - 1].test_any) &&
								    next[0] != next[1] ?
							    pair_at(&f.in[i], slot) :
							    -1;
						if (r < 0)
							continue;
					}
					if (is_end[k] || nsite == AFTER_CALL_MAX)
						continue;
					err = rets_return(&f, k == i ? next[n] : k, slot, seen);
					if (err < 0)
						goto cleanup;
					if (!err)
						continue;
					is_end[k] = true;
					end_to[k] = k == i ? next[n] : -1;
					site_at[nsite] = k;
					site_reg[nsite++] = r;
				}
			}
			if (!nsite)
				continue;
			pr_debug("0x%llx: %zu ends for an error in result slot %d",
				 (unsigned long long)ins->addr, nsite, slot);
		}
		err = count_ends(ins, start, is_end, end_to, count);
		if (err)
			goto cleanup;

		/* Every way passes one end, or none and ends at a RET that keeps its probe. */
		ok = true;
		memset(keep, 0, ins->n * sizeof(*keep));
		for (i = 0; ok && i < (long)ins->n; i++) {
			if (ins->v[i].kind != INSN_RET || !count[i])
				continue;
			if (count[i] == 1)
				keep[i] = true;
			else if (count[i] != 2)
				ok = false;
			else if (ends_inside)
				/* The callee's error is what this function returns. */
				ok = f.in[i].reg[X86_AX] == 1 && f.in[i].reg[X86_BX] == 2;
		}
		if (!ok) {
			pr_debug("0x%llx: +0x%x: a RET some ways reach with %s end%s",
				 (unsigned long long)ins->addr, ins->v[i - 1].off,
				 count[i - 1] & 4 ? "two" : "one and no", count[i - 1] & 4 ? "s" : "");
			if (ends_inside)
				break;
			continue;
		}
		*kept = calloc(ins->n, sizeof(**kept));
		*ends = calloc(nsite ? nsite : 1, sizeof(**ends));
		if (!*kept || !*ends) {
			err = -ENOMEM;
			goto cleanup;
		}
		for (i = 0; i < (long)ins->n; i++)
			if (keep[i])
				(*kept)[(*nkept)++] = i;
		for (j = 0; j < nsite; j++) {
			struct end_site *e = &(*ends)[j];

			e->off = ins->addr + ins->v[site_at[j]].off;
			e->caller = ins->addr;
			e->emulated = true;
			e->in_caller = false;
			e->if_no_error = false;
			e->result = (int8_t)site_reg[j];
			if (end_to[site_at[j]] >= 0) {
				t = &ins->v[site_at[j]];
				e->cond_slot = (uint8_t)sites__slot_of(ins->v[site_at[j] - 1].test_any);
				e->cond_size = ins->v[site_at[j] - 1].test_size;
				/* JE: taken when zero; JNE: falls through then. */
				e->cond_if_zero = (end_to[site_at[j]] == branch_index(ins, t)) ==
						  t->jcc_if_zero;
			}
		}
		*nends = nsite;
		/* What a command that succeeds costs: a RET kept on its way. */
		*nil_steps = 0;
		for (i = 0; !ends_inside && i < (long)ins->n && !*nil_steps; i++)
			if (f.work[i] && nil_way_steps(&f, i, slot, is_end, end_to, keep, seen))
				*nil_steps = 1;
		err = 0;
		goto cleanup;
	}
	err = -ENOENT;
cleanup:
	if (err) {
		free(*ends);
		free(*kept);
		*ends = NULL;
		*kept = NULL;
		*nends = *nkept = 0;
	}
	free(f.in);
	free(f.reached);
	free(f.work);
	free(f.reach_work);
	free(count);
	free(is_end);
	free(keep);
	free(seen);
	free(end_to);
	return err;
}
