// SPDX-License-Identifier: MIT
/*
 * RET finder: a linear sweep with capstone over one function's bytes. Go's compilers emit no
 * jump tables or other data inside amd64 functions, so a sweep from the symbol start sees every
 * instruction; arm64 instructions are all 4 bytes wide, so a sweep cannot lose its alignment.
 *
 * What a function symbol may hold besides code decides when the sweep gives up:
 *  - amd64: the linker pads between functions with int3 (0xcc), which decodes as an instruction;
 *    a byte run that does not decode is only accepted at the tail, and only if it is all padding
 *    (0xcc or 0x00). Anywhere else it means the bytes are not this machine's code: -EINVAL.
 *  - arm64: the assembler may place literal pools (constants loaded PC-relative) inside the
 *    function, and padding is zero words; neither need decode. An undecodable word is skipped, as
 *    it cannot shift the decoding of the next one. Only a partial trailing word that is not zero
 *    padding is -EINVAL.
 * A skipped data word that happened to encode RET would be reported as a return; at worst that is
 * a probe that never fires, never a missed return. Capstone 4 does not know every AVX-512
 * instruction of the runtime's hand-written assembly: such a function is -EINVAL, which refuses
 * to probe it rather than probing a misread instruction stream. Compiled Go code is unaffected.
 */
#include <capstone/capstone.h>
#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/disasm.h"
#include "core/log.h"

/*
 * capstone is opened on first use and closed by disasm__release(): gospan needs it only while it
 * analyses a target, and once loaded its tables (relocated at load) hold 5 MB of resident memory,
 * more than the rest of gospan's own. CAPSTONE_SONAME is the library the build found.
 */
static struct {
	void *handle;
	typeof(cs_open) *open;
	typeof(cs_option) *option;
	typeof(cs_malloc) *malloc;
	typeof(cs_disasm_iter) *disasm_iter;
	typeof(cs_free) *free;
	typeof(cs_close) *close;
	typeof(cs_errno) *errno_of;
	typeof(cs_strerror) *strerror;
	typeof(cs_regs_access) *regs_access;
} capstone;

#ifdef CAPSTONE_STATIC
/* make STATIC=1 links capstone in: its functions are gospan's own, and nothing is closed. */
static int capstone_load(void)
{
	capstone.open = cs_open;
	capstone.option = cs_option;
	capstone.malloc = cs_malloc;
	capstone.disasm_iter = cs_disasm_iter;
	capstone.free = cs_free;
	capstone.close = cs_close;
	capstone.errno_of = cs_errno;
	capstone.strerror = cs_strerror;
	capstone.regs_access = cs_regs_access;
	return 0;
}

void disasm__release(void)
{
}
#else
static int capstone_load(void)
{
	void *h;

	if (capstone.handle)
		return 0;
	h = dlopen(CAPSTONE_SONAME, RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		pr_err("cannot load capstone, needed to find where to probe: %s", dlerror());
		return -ENOENT;
	}
	capstone.open = dlsym(h, "cs_open");
	capstone.option = dlsym(h, "cs_option");
	capstone.malloc = dlsym(h, "cs_malloc");
	capstone.disasm_iter = dlsym(h, "cs_disasm_iter");
	capstone.free = dlsym(h, "cs_free");
	capstone.close = dlsym(h, "cs_close");
	capstone.errno_of = dlsym(h, "cs_errno");
	capstone.strerror = dlsym(h, "cs_strerror");
	capstone.regs_access = dlsym(h, "cs_regs_access");
	if (!capstone.open || !capstone.option || !capstone.malloc || !capstone.disasm_iter ||
	    !capstone.free || !capstone.close || !capstone.errno_of || !capstone.strerror || !capstone.regs_access) {
		pr_err("cannot load capstone: '%s' lacks a function gospan uses", CAPSTONE_SONAME);
		dlclose(h);
		return -ENOENT;
	}
	capstone.handle = h;
	return 0;
}

void disasm__release(void)
{
	if (capstone.handle)
		dlclose(capstone.handle);
	capstone.handle = NULL;
}
#endif

/*
 * A capstone handle for MACHINE's code in *CS, with operand details when DETAIL: loads capstone
 * first if need be. -EOPNOTSUPP for a machine other than x86-64 and arm64.
 */
static int capstone_start(uint16_t machine, bool detail, csh *cs)
{
	cs_arch arch;
	cs_mode mode;
	cs_err cerr;
	int err;

	switch (machine) {
	case EM_X86_64:
		arch = CS_ARCH_X86;
		mode = CS_MODE_64;
		break;
	case EM_AARCH64:
		arch = CS_ARCH_ARM64;
		mode = CS_MODE_ARM;
		break;
	default:
		return -EOPNOTSUPP;
	}
	err = capstone_load();
	if (err)
		return err;
	cerr = capstone.open(arch, mode, cs);
	if (cerr != CS_ERR_OK) {
		pr_err("cannot start capstone for machine %u: %s", machine, capstone.strerror(cerr));
		return cerr == CS_ERR_MEM ? -ENOMEM : -EOPNOTSUPP;
	}
	if (!detail)
		return 0;
	cerr = capstone.option(*cs, CS_OPT_DETAIL, CS_OPT_ON);
	if (cerr != CS_ERR_OK) {
		pr_err("cannot ask capstone for operands: %s", capstone.strerror(cerr));
		capstone.close(cs);
		return -EINVAL;
	}
	return 0;
}

#define ARM64_INSN_LEN 4

struct rets {
	uint64_t *offs;
	size_t n, cap;
};

static int rets_add(struct rets *r, uint64_t off)
{
	if (r->n == r->cap) {
		size_t cap = r->cap ? 2 * r->cap : 8;
		uint64_t *offs = realloc(r->offs, cap * sizeof(*offs));

		if (!offs)
			return -ENOMEM;
		r->offs = offs;
		r->cap = cap;
	}
	r->offs[r->n++] = off;
	return 0;
}

static bool all_padding(const uint8_t *p, size_t len, bool int3_ok)
{
	size_t i;

	for (i = 0; i < len; i++) {
		if (p[i] && !(int3_ok && p[i] == 0xcc))
			return false;
	}
	return true;
}

/* What the sweep collects: returns, or direct calls to one address (CALL_TO != 0). */
static bool wanted(uint16_t machine, const cs_insn *insn, uint64_t call_to)
{
	if (!call_to)
		return insn->id == (machine == EM_X86_64 ? X86_INS_RET : ARM64_INS_RET);
	if (machine == EM_X86_64)
		return insn->id == X86_INS_CALL && insn->detail->x86.op_count == 1 &&
		       insn->detail->x86.operands[0].type == X86_OP_IMM &&
		       (uint64_t)insn->detail->x86.operands[0].imm == call_to;
	return insn->id == ARM64_INS_BL && insn->detail->arm64.op_count == 1 &&
	       insn->detail->arm64.operands[0].type == ARM64_OP_IMM &&
	       (uint64_t)insn->detail->arm64.operands[0].imm == call_to;
}

static int sweep(csh cs, uint16_t machine, const uint8_t *code, size_t len, uint64_t addr,
		 uint64_t call_to, struct rets *r)
{
	const uint8_t *p = code;
	uint64_t pc = addr;
	size_t left = len;
	cs_insn *insn;
	int err = 0;

	insn = capstone.malloc(cs);
	if (!insn) {
		pr_err("cannot disassemble: %s", capstone.strerror(capstone.errno_of(cs)));
		return -ENOMEM;
	}
	while (left) {
		/* cs_disasm_iter advances p, left and pc past each instruction it decodes. */
		while (capstone.disasm_iter(cs, &p, &left, &pc, insn)) {
			if (wanted(machine, insn, call_to)) {
				err = rets_add(r, insn->address - addr);
				if (err)
					goto cleanup;
			}
		}
		if (!left)
			break;
		if (machine == EM_AARCH64 && left >= ARM64_INSN_LEN) {
			p += ARM64_INSN_LEN;
			pc += ARM64_INSN_LEN;
			left -= ARM64_INSN_LEN;
			continue;
		}
		if (!all_padding(p, left, machine == EM_X86_64)) {
			pr_debug("cannot decode the code at 0x%llx (offset %zu of %zu)",
				 (unsigned long long)pc, len - left, len);
			err = -EINVAL;
		}
		break;
	}
cleanup:
	capstone.free(insn, 1);
	return err;
}

static int find(uint16_t machine, const uint8_t *code, size_t len, uint64_t addr, uint64_t call_to,
		uint64_t **offs, size_t *n)
{
	struct rets r = { 0 };
	cs_err cerr;
	csh cs;
	int err;

	/* Call targets need operand details; returns do not, and the sweep is faster without. */
	err = capstone_start(machine, call_to != 0, &cs);
	if (err)
		return err;
	err = sweep(cs, machine, code, len, addr, call_to, &r);
	if (!err && !r.n)
		err = -ENOENT;
	cerr = capstone.close(&cs);
	if (!err && cerr != CS_ERR_OK) {
		pr_err("cannot close capstone: %s", capstone.strerror(cerr));
		err = -EINVAL;
	}
	if (err) {
		free(r.offs);
		return err;
	}
	*offs = r.offs;
	*n = r.n;
	return 0;
}

int disasm__find_rets(uint16_t machine, const uint8_t *code, size_t len, uint64_t addr,
		      uint64_t **offs, size_t *n)
{
	return find(machine, code, len, addr, 0, offs, n);
}

int disasm__find_calls(uint16_t machine, const uint8_t *code, size_t len, uint64_t addr,
		       uint64_t target, uint64_t **offs, size_t *n)
{
	if (!target)
		return -EINVAL;
	return find(machine, code, len, addr, target, offs, n);
}

/* Operand I of INSN is register REG. */
static bool op_reg(const cs_x86 *x, int i, x86_reg reg)
{
	return x->op_count > i && x->operands[i].type == X86_OP_REG && x->operands[i].reg == reg;
}

/* Go's stack-bound check reads g.stackguard0, at 0x10 in the g that R14 holds (ABIInternal). */
#define GO_STACKGUARD0 0x10

/*
 * INSN is the step of Go's amd64 prologue numbered STEP: 0 the optional LEA R12, -n(SP) of a
 * frame over a page; 1 CMP SP or R12, 0x10(R14); 2 JBE or JB to morestack; 3 PUSH BP.
 */
static bool prologue_step(const cs_insn *insn, int step)
{
	const cs_x86 *x = &insn->detail->x86;

	switch (step) {
	case 0:
		return insn->id == X86_INS_LEA && op_reg(x, 0, X86_REG_R12) && x->op_count == 2 &&
		       x->operands[1].type == X86_OP_MEM && x->operands[1].mem.base == X86_REG_RSP;
	case 1:
		return insn->id == X86_INS_CMP && x->op_count == 2 &&
		       (op_reg(x, 0, X86_REG_RSP) || op_reg(x, 0, X86_REG_R12)) &&
		       x->operands[1].type == X86_OP_MEM &&
		       x->operands[1].mem.base == X86_REG_R14 &&
		       x->operands[1].mem.index == X86_REG_INVALID &&
		       x->operands[1].mem.disp == GO_STACKGUARD0;
	case 2:
		return insn->id == X86_INS_JBE || insn->id == X86_INS_JB;
	default:
		return insn->id == X86_INS_PUSH && op_reg(x, 0, X86_REG_RBP);
	}
}



/*
 * Until emulation.c has measured, what current kernels do (PUSH since 6.9, long NOPs since 6.17;
 * arm64's RET always).
 */
static struct emulation emulation = { .push = true, .long_nop = true, .ret = true };

void disasm__set_emulation(const struct emulation *e)
{
	emulation = *e;
}

const struct emulation *disasm__emulation(void)
{
	return &emulation;
}

/* The x86 register number of capstone's REG, any width of the 16 general registers; -1 else. */
static int gp_number(x86_reg reg)
{
	static const x86_reg regs[][5] = {
		{ X86_REG_RAX, X86_REG_EAX, X86_REG_AX, X86_REG_AL, X86_REG_AH },
		{ X86_REG_RCX, X86_REG_ECX, X86_REG_CX, X86_REG_CL, X86_REG_CH },
		{ X86_REG_RDX, X86_REG_EDX, X86_REG_DX, X86_REG_DL, X86_REG_DH },
		{ X86_REG_RBX, X86_REG_EBX, X86_REG_BX, X86_REG_BL, X86_REG_BH },
		{ X86_REG_RSP, X86_REG_ESP, X86_REG_SP, X86_REG_SPL },
		{ X86_REG_RBP, X86_REG_EBP, X86_REG_BP, X86_REG_BPL },
		{ X86_REG_RSI, X86_REG_ESI, X86_REG_SI, X86_REG_SIL },
		{ X86_REG_RDI, X86_REG_EDI, X86_REG_DI, X86_REG_DIL },
		{ X86_REG_R8, X86_REG_R8D, X86_REG_R8W, X86_REG_R8B },
		{ X86_REG_R9, X86_REG_R9D, X86_REG_R9W, X86_REG_R9B },
		{ X86_REG_R10, X86_REG_R10D, X86_REG_R10W, X86_REG_R10B },
		{ X86_REG_R11, X86_REG_R11D, X86_REG_R11W, X86_REG_R11B },
		{ X86_REG_R12, X86_REG_R12D, X86_REG_R12W, X86_REG_R12B },
		{ X86_REG_R13, X86_REG_R13D, X86_REG_R13W, X86_REG_R13B },
		{ X86_REG_R14, X86_REG_R14D, X86_REG_R14W, X86_REG_R14B },
		{ X86_REG_R15, X86_REG_R15D, X86_REG_R15W, X86_REG_R15B },
	};
	size_t i, j;

	if (reg == X86_REG_INVALID)
		return -1;
	for (i = 0; i < sizeof(regs) / sizeof(regs[0]); i++)
		for (j = 0; j < 5; j++)
			if (regs[i][j] == reg)
				return (int)i;
	return -1;
}

/* The 64-bit general register operand I of X, as a register number; -1 when it is not one. */
static int reg64_operand(const cs_x86 *x, int i)
{
	if (x->op_count <= i || x->operands[i].type != X86_OP_REG || x->operands[i].size != 8)
		return -1;
	return gp_number(x->operands[i].reg);
}

/*
 * Classifies INSN from its bytes, as arch/x86/kernel/uprobes.c decides what it emulates: the
 * opcode after any legacy and REX prefixes. A branch with an operand-size prefix (0x66) is
 * single-stepped; a NOP is emulated whatever its prefixes.
 */
static void classify(const cs_insn *insn, struct insn *out)
{
	const uint8_t *b = insn->bytes, *end = insn->bytes + insn->size;
	bool p66 = false, rex = false, rex_b = false;
	uint8_t op, modrm_reg;

	for (; b < end; b++) {
		if (*b == 0x66)
			p66 = true;
		else if (*b == 0x67 || *b == 0xf2 || *b == 0xf3 || *b == 0xf0 || *b == 0x2e ||
			 *b == 0x36 || *b == 0x3e || *b == 0x26 || *b == 0x64 || *b == 0x65)
			continue;
		else
			break;
	}
	if (b < end && (*b & 0xf0) == 0x40) {
		rex = true;
		rex_b = *b & 1;
		b++;
	}
	out->kind = INSN_OTHER;
	out->emulated = false;
	if (b >= end)
		return;
	op = *b;
	if (op == 0x90 && !rex_b) {
		out->kind = INSN_NOP;
		out->emulated = true;
	} else if (op == 0x0f && b + 1 < end && b[1] == 0x1f) {
		out->kind = INSN_NOP;
		out->emulated = emulation.long_nop;
	} else if (op == 0xe8) {
		out->kind = INSN_CALL;
		out->emulated = !p66;
	} else if (op == 0xe9 || op == 0xeb) {
		out->kind = INSN_JMP;
		out->emulated = !p66;
	} else if ((op >= 0x70 && op <= 0x7f) ||
		   (op == 0x0f && b + 1 < end && b[1] >= 0x80 && b[1] <= 0x8f)) {
		uint8_t cc = op == 0x0f ? b[1] - 0x80 : op - 0x70;

		out->kind = INSN_JCC;
		out->emulated = !p66;
		out->jcc_zf = cc == 4 || cc == 5;
		out->jcc_if_zero = cc == 4;
	} else if (op == 0xe3) {
		out->kind = INSN_JCC; /* JRCXZ: a branch the kernel single-steps */
	} else if (op == 0xc3 || op == 0xc2) {
		out->kind = INSN_RET;
	} else if (op >= 0x50 && op <= 0x57) {
		out->kind = INSN_PUSH;
		/* The kernel emulates PUSH with no prefix but REX.B (r8-r15). */
		out->emulated = emulation.push && !p66 && (!rex || (b[-1] == 0x41));
	} else if (op == 0xff && b + 1 < end) {
		modrm_reg = (b[1] >> 3) & 7;
		if (modrm_reg == 2 || modrm_reg == 3)
			out->kind = INSN_CALL_IND;
		else if (modrm_reg == 4 || modrm_reg == 5)
			out->kind = INSN_JMP_IND;
	}
}

/* Register number of REG for insn.reg: 0-15 general (any width), X86_XMM(n); -1 else. */
static int any_number(x86_reg reg)
{
	if (reg >= X86_REG_XMM0 && reg <= X86_REG_XMM15)
		return X86_XMM(reg - X86_REG_XMM0);
	return gp_number(reg);
}

/* OUT's data move (enum insn_op), from INSN's operands. */
static void data_move(const cs_insn *insn, struct insn *out)
{
	const cs_x86 *x = &insn->detail->x86;
	const cs_x86_op *op;
	int i, r;

	out->reg = out->mem_base = -1;
	for (i = 0; i < x->op_count; i++) {
		op = &x->operands[i];
		if (op->type == X86_OP_MEM) {
			out->has_mem = true;
			out->mem_base = op->mem.base == X86_REG_RIP ? -2 : (int8_t)gp_number(op->mem.base);
			out->mem_index = op->mem.index != X86_REG_INVALID;
			out->disp = (int32_t)op->mem.disp;
			/*
			 * Intel syntax puts the destination first; capstone 4 leaves ACCESS unset
			 * for some SSE moves. Another instruction that only reads its first operand
			 * counts as a write: the worst case.
			 */
			if ((op->access & CS_AC_WRITE) ||
			    (i == 0 && insn->id != X86_INS_NOP && insn->id != X86_INS_CMP &&
			     insn->id != X86_INS_TEST))
				out->mem_write = out->to_mem = true;
		} else if (op->type == X86_OP_REG && out->reg < 0) {
			out->reg = (int8_t)any_number(op->reg);
		}
	}
	switch (insn->id) {
	case X86_INS_MOV:
	case X86_INS_MOVUPS:
	case X86_INS_MOVAPS:
	case X86_INS_MOVDQU:
		if (x->op_count != 2)
			break;
		out->size = x->operands[0].size;
		out->op = OP_MOV;
		break;
	case X86_INS_LEA:
		out->op = OP_LEA;
		out->size = 8;
		break;
	case X86_INS_XOR:
	case X86_INS_XORPS:
		if (x->op_count == 2 && x->operands[0].type == X86_OP_REG &&
		    x->operands[1].type == X86_OP_REG && x->operands[0].reg == x->operands[1].reg)
			out->op = OP_ZERO;
		break;
	case X86_INS_POP:
		out->op = OP_SP_ADD;
		out->disp = 8;
		break;
	case X86_INS_ADD:
	case X86_INS_SUB:
		r = reg64_operand(x, 0);
		if (r == X86_SP && x->op_count == 2 && x->operands[1].type == X86_OP_IMM) {
			out->op = OP_SP_ADD;
			out->disp = (int32_t)(insn->id == X86_INS_ADD ? x->operands[1].imm :
									-x->operands[1].imm);
		}
		break;
	default:
		break;
	}
}

/* Fills OUT for INSN: its kind, emulation, registers written, and what the queries need. */
static void describe(csh cs, const cs_insn *insn, uint64_t addr, struct insn *out)
{
	const cs_x86 *x = &insn->detail->x86;
	cs_regs rd, wr;
	uint8_t nrd = 0, nwr = 0, i;
	int r;

	memset(out, 0, sizeof(*out));
	out->off = (uint32_t)(insn->address - addr);
	out->len = (uint8_t)insn->size;
	out->test_reg = out->mov_src = out->test_any = -1;
	classify(insn, out);
	if ((out->kind == INSN_CALL || out->kind == INSN_JMP || out->kind == INSN_JCC) &&
	    x->op_count == 1 && x->operands[0].type == X86_OP_IMM)
		out->target = (uint64_t)x->operands[0].imm;
	if (capstone.regs_access(cs, insn, rd, &nrd, wr, &nwr) == CS_ERR_OK) {
		for (i = 0; i < nwr; i++) {
			r = gp_number(wr[i]);
			if (r >= 0)
				out->writes |= 1u << r;
		}
		for (i = 0; i < nrd; i++) {
			r = gp_number(rd[i]);
			if (r >= 0)
				out->reads |= 1u << r;
		}
	} else {
		out->writes = out->reads = 0xffff; /* unknown: assume the worst */
	}
	/* A call may change every register the Go ABI does not keep (all but SP, BP, R14, R15). */
	if (out->kind == INSN_CALL || out->kind == INSN_CALL_IND)
		out->writes |= 0xffff & ~((1u << X86_SP) | (1u << X86_BP) | (1u << 14) | (1u << 15));
	if (insn->id == X86_INS_TEST) {
		r = reg64_operand(x, 0);
		if (r >= 0 && r == reg64_operand(x, 1))
			out->test_reg = (int8_t)r;
		/* Any width, where the low part tested is the register's (not AH...DH). */
		if (x->op_count == 2 && x->operands[0].type == X86_OP_REG &&
		    x->operands[1].type == X86_OP_REG &&
		    x->operands[0].reg == x->operands[1].reg && x->operands[0].reg != X86_REG_AH &&
		    x->operands[0].reg != X86_REG_BH && x->operands[0].reg != X86_REG_CH &&
		    x->operands[0].reg != X86_REG_DH) {
			out->test_size = x->operands[0].size;
			out->test_any = (int8_t)gp_number(x->operands[0].reg);
		}
	} else if (insn->id == X86_INS_MOV && reg64_operand(x, 0) >= 0) {
		out->mov_src = (int8_t)reg64_operand(x, 1);
	}
	data_move(insn, out);
}

static int insns_add(struct insns *ins, size_t *cap, const struct insn *in)
{
	if (ins->n == *cap) {
		size_t ncap = *cap ? 2 * *cap : 256;
		struct insn *v = realloc(ins->v, ncap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		ins->v = v;
		*cap = ncap;
	}
	ins->v[ins->n++] = *in;
	return 0;
}

/* A capstone handle with operand details in *CS, and an instruction to decode into in *INSN. */
static int capstone_detailed(uint16_t machine, csh *cs, cs_insn **insn)
{
	int err = capstone_start(machine, true, cs);

	if (err)
		return err;
	*insn = capstone.malloc(*cs);
	if (!*insn) {
		pr_err("cannot disassemble: %s", capstone.strerror(capstone.errno_of(*cs)));
		capstone.close(cs);
		return -ENOMEM;
	}
	return 0;
}

long disasm__index(const struct insns *ins, uint64_t off)
{
	size_t lo = 0, hi = ins->n, mid;

	while (lo < hi) {
		mid = lo + (hi - lo) / 2;
		if (ins->v[mid].off < off)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < ins->n && ins->v[lo].off == off ? (long)lo : -1;
}

int disasm__decode(uint16_t machine, const uint8_t *code, size_t len, uint64_t addr,
		   struct insns *out)
{
	const uint8_t *p = code;
	uint64_t pc = addr;
	size_t left = len, cap = 0, i;
	cs_insn *insn = NULL;
	struct insn d;
	int err;
	long t;
	csh cs;

	memset(out, 0, sizeof(*out));
	out->addr = addr;
	out->len = len;
	if (machine != EM_X86_64)
		return -EOPNOTSUPP;
	err = capstone_detailed(machine, &cs, &insn);
	if (err)
		return err;
	while (capstone.disasm_iter(cs, &p, &left, &pc, insn)) {
		describe(cs, insn, addr, &d);
		err = insns_add(out, &cap, &d);
		if (err)
			goto cleanup;
	}
	if (left && !all_padding(p, left, true)) {
		pr_debug("cannot decode the code at 0x%llx (offset %zu of %zu)",
			 (unsigned long long)pc, len - left, len);
		err = -EINVAL;
		goto cleanup;
	}
	/* Trailing int3 padding decodes as instructions: they are never reached. */
	for (i = 0; i < out->n; i++) {
		if (out->v[i].kind == INSN_JMP_IND)
			out->unknown_targets = true;
		if ((out->v[i].kind != INSN_JMP && out->v[i].kind != INSN_JCC) ||
		    out->v[i].target < addr || out->v[i].target >= addr + len)
			continue;
		t = disasm__index(out, out->v[i].target - addr);
		if (t >= 0)
			out->v[t].branch_target = true;
		else
			out->unknown_targets = true; /* into the middle of an instruction */
	}
cleanup:
	if (insn)
		capstone.free(insn, 1);
	capstone.close(&cs);
	if (err)
		disasm__insns_free(out);
	return err;
}

void disasm__insns_free(struct insns *ins)
{
	free(ins->v);
	ins->v = NULL;
	ins->n = 0;
}

int disasm__entry_site(uint16_t machine, const uint8_t *code, size_t len, uint64_t addr,
		       uint64_t *off, bool *emulated)
{
	const uint8_t *p = code;
	uint64_t pc = addr;
	size_t left = len;
	cs_insn *insn = NULL;
	struct insn d;
	int step = 0, err = 0;
	bool first = true;
	csh cs;

	*off = 0;
	*emulated = false;
	if (machine != EM_X86_64)
		return 0; /* arm64 single-steps its prologue's stores either way */
	err = capstone_detailed(machine, &cs, &insn);
	if (err)
		return err;
	while (step < 4 && capstone.disasm_iter(cs, &p, &left, &pc, insn)) {
		describe(cs, insn, addr, &d);
		if (first) /* the start, unless the prologue offers better */
			*emulated = d.emulated;
		first = false;
		if (step == 0 && !prologue_step(insn, 0))
			step = 1; /* no LEA: this instruction must be the CMP */
		if (!prologue_step(insn, step))
			break;
		/*
		 * The stack check's Jcc is emulated on every kernel but runs twice when the stack
		 * grows (morestack restarts the function): the entry programs take the second run
		 * for the first. The PUSH after it runs once, where the kernel emulates it.
		 */
		if ((step == 2 || step == 3) && d.emulated) {
			*off = insn->address - addr;
			*emulated = true;
		}
		step = step == 0 ? 1 : step + 1;
	}
	capstone.free(insn, 1);
	capstone.close(&cs);
	return 0;
}
