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

#include "disasm.h"
#include "log.h"

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
} capstone;

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
	if (!capstone.open || !capstone.option || !capstone.malloc || !capstone.disasm_iter ||
	    !capstone.free || !capstone.close || !capstone.errno_of || !capstone.strerror) {
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

int disasm__entry_site(uint16_t machine, const uint8_t *code, size_t len, uint64_t addr,
		       uint64_t *off)
{
	const uint8_t *p = code;
	uint64_t pc = addr;
	size_t left = len;
	cs_insn *insn = NULL;
	int step = 0, err = 0;
	csh cs;

	*off = 0;
	if (machine != EM_X86_64)
		return 0; /* arm64 single-steps its prologue's stores either way */
	err = capstone_start(machine, true, &cs);
	if (err)
		return err;
	insn = capstone.malloc(cs);
	if (!insn) {
		pr_err("cannot disassemble: %s", capstone.strerror(capstone.errno_of(cs)));
		err = -ENOMEM;
		goto cleanup;
	}
	while (step < 4 && capstone.disasm_iter(cs, &p, &left, &pc, insn)) {
		if (step == 0 && !prologue_step(insn, 0))
			step = 1; /* no LEA: this instruction must be the CMP */
		if (!prologue_step(insn, step))
			break;
		if (step == 3)
			*off = insn->address - addr;
		step = step == 0 ? 1 : step + 1;
	}
cleanup:
	capstone.free(insn, insn ? 1 : 0);
	capstone.close(&cs);
	return err;
}
