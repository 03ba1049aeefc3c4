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

/* Whether a data section of CM holds ADDR as a pointer (Go aligns them to 8). */
static bool stored_in_data(const struct code_map *cm, uint64_t addr)
{
	/* Not .gopclntab: Go 1.16-1.17 tables hold every function's entry address. */
	static const char *const sections[] = { ".rodata", ".data.rel.ro", ".noptrdata", ".data" };
	const uint8_t *data;
	uint64_t sec_addr;
	size_t size, i, k;

	for (k = 0; k < sizeof(sections) / sizeof(sections[0]); k++) {
		if (elf_file__section(cm->ef, sections[k], (const void **)&data, &size, &sec_addr))
			continue;
		for (i = (8 - sec_addr % 8) % 8; i + 8 <= size; i += 8)
			if (le64(data + i) == addr)
				return true;
	}
	/* A position-independent binary: pointers are relocations, the address their addend. */
	if (!elf_file__section(cm->ef, ".rela.dyn", (const void **)&data, &size, NULL)) {
		for (i = 0; i + sizeof(Elf64_Rela) <= size; i += sizeof(Elf64_Rela)) {
			Elf64_Rela r;

			memcpy(&r, data + i, sizeof(r));
			if ((uint64_t)r.r_addend == addr)
				return true;
		}
	}
	return false;
}

/*
 * Whether the code of CM loads ADDR with a RIP-relative LEA (REX.W 8D /r, mod 00, r/m 101). A
 * byte pattern, not a decoding: a match inside another instruction only costs the RET probes.
 */
static bool loaded_by_code(const struct code_map *cm, uint64_t addr)
{
	const uint8_t *t = cm->text;
	size_t i;

	for (i = 0; i + 7 <= cm->text_len; i++) {
		if ((t[i] != 0x48 && t[i] != 0x4c) || t[i + 1] != 0x8d || (t[i + 2] & 0xc7) != 0x05)
			continue;
		if (cm->text_addr + i + 7 + (int64_t)le32(t + i + 3) == addr)
			return true;
	}
	return false;
}

/*
 * Whether a type's method table may name ADDR: its code offset from runtime.text, as a 4-byte
 * word of .rodata. A byte pattern too: a stray match only costs the RET probes.
 */
static bool in_method_table(const struct code_map *cm, uint64_t addr)
{
	const uint8_t *data;
	uint64_t sec_addr;
	size_t size, i;
	int32_t off;

	if (!cm->text_base || addr < cm->text_base || addr - cm->text_base > INT32_MAX)
		return true; /* cannot tell */
	off = (int32_t)(addr - cm->text_base);
	if (elf_file__section(cm->ef, ".rodata", (const void **)&data, &size, &sec_addr))
		return true;
	for (i = (4 - sec_addr % 4) % 4; i + 4 <= size; i += 4)
		if (le32(data + i) == off)
			return true;
	return false;
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
	const uint8_t *t = cm->text;
	struct call_site c;
	size_t cap = 0, i;
	uint64_t from;
	long idx;
	int err = 0;

	*calls = NULL;
	*n = 0;
	if (cm->machine != EM_X86_64)
		return -EOPNOTSUPP;
	if (stored_in_data(cm, addr) || loaded_by_code(cm, addr) ||
	    (!(flags & FIND_CALLS_NOT_DYNAMIC) && in_method_table(cm, addr)))
		return -ENOENT;
	for (i = 0; i + 5 <= cm->text_len; i++) {
		if (t[i] != 0xe8 && t[i] != 0xe9)
			continue;
		from = cm->text_addr + i;
		if (from + 5 + (int64_t)le32(t + i + 1) != addr)
			continue;
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
