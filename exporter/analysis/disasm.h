/* SPDX-License-Identifier: MIT */
/*
 * Finding a function's return instructions with capstone, so exits are probed with plain uprobes:
 * uretprobes rewrite the return address on the stack, which Go moves when it grows a stack.
 */
#ifndef GOSPAN_DISASM_H
#define GOSPAN_DISASM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*
 * Decodes CODE (LEN bytes of one function, loaded at ADDR) for MACHINE (EM_X86_64 or EM_AARCH64)
 * and returns in *OFFS (malloc'ed, caller frees) the offsets from the function start of every
 * return instruction, in *N their count. -EOPNOTSUPP for another machine, -EINVAL when the bytes
 * do not decode as a whole, -ENOENT when there is no return instruction.
 */
int disasm__find_rets(uint16_t machine, const uint8_t *code, size_t len, uint64_t addr,
		      uint64_t **offs, size_t *n);

/*
 * Like disasm__find_rets, for the direct calls (x86 CALL rel32, arm64 BL) to TARGET, a link-time
 * address: where a callee's arguments are in registers but the callee has not begun. -ENOENT
 * when there is none.
 */
int disasm__find_calls(uint16_t machine, const uint8_t *code, size_t len, uint64_t addr,
		       uint64_t target, uint64_t **offs, size_t *n);

/*
 * Where to put the entry probe of the function CODE (LEN bytes at ADDR), as an offset from its
 * start into *OFF, and whether the kernel emulates the instruction there into *EMULATED. Past
 * Go's stack-bound check ([LEAQ -n(SP), R12;] CMPQ SP|R12, 0x10(R14); JBE|JB morestack), which
 * reads no argument register and changes none, nor SP, so the probe sees the call as its first
 * instruction would: on the PUSHQ BP that follows (Go 1.21+) where the kernel emulates PUSH, else
 * on the check's conditional jump, which every kernel emulates but which runs a second time when
 * the stack grows (the entry programs tell the two runs apart); otherwise 0, the start. 0 or a
 * negative errno (capstone failing). arm64: always 0 (see docs/arm64.md).
 */
int disasm__entry_site(uint16_t machine, const uint8_t *code, size_t len, uint64_t addr,
		       uint64_t *off, bool *emulated);

/*
 * What this kernel's uprobes run without single-stepping, beyond what every kernel gospan runs on
 * emulates (direct CALL and JMP, Jcc, the one-byte NOP): measured at start (emulation.c), not
 * guessed from a version. A probe on any other instruction costs a second trap per hit.
 */
struct emulation {
	bool push;     /* PUSH of a register (Linux 6.9+): Go's PUSHQ BP after the stack check */
	bool long_nop; /* NOP with operands (0f 1f), which Go puts after many calls */
	bool ret;      /* arm64's RET (simulated since arm64 uprobes came, 4.10); amd64: unused */
};

/* Sets what disasm__decode() counts as emulated; until then, PUSH and long NOPs are assumed. */
void disasm__set_emulation(const struct emulation *e);
const struct emulation *disasm__emulation(void);

/* What an instruction is, as far as control flow and uprobes go. */
enum insn_kind {
	INSN_OTHER,
	INSN_RET,
	INSN_CALL,     /* direct: CALL rel32 */
	INSN_CALL_IND, /* through a register or memory */
	INSN_JMP,      /* direct, unconditional */
	INSN_JMP_IND,  /* through a register or memory: a jump table */
	INSN_JCC,      /* direct, conditional */
	INSN_NOP,
	INSN_PUSH,
};

/* x86 register numbers, as the instruction encoding numbers them (bit N of insn.writes). */
enum { X86_AX, X86_CX, X86_DX, X86_BX, X86_SP, X86_BP, X86_SI, X86_DI, X86_R8 };
/* XMM register N as insn.reg numbers it: after the 16 general ones. */
#define X86_XMM(n) (16 + (n))

/* The data moves that following a value through a function's code needs (kafka_handover.c). */
enum insn_op {
	OP_NONE,  /* anything else: what it writes is in WRITES and MEM_WRITE */
	OP_MOV,	  /* MOV (SIZE bytes), MOVUPS/MOVAPS/MOVDQU (16): REG to or from MEM, or an IMM */
	OP_LEA,	  /* LEA MEM, REG */
	OP_ZERO,  /* XOR REG, REG (32 or 64 bits) or XORPS: REG is 0 */
	OP_SP_ADD /* ADD or SUB of an immediate to SP: DISP is what SP moves by */
};

struct insn {
	uint32_t off; /* from the function start */
	uint8_t len;
	uint8_t kind;		/* enum insn_kind */
	bool emulated;		/* a uprobe here costs one trap, not two */
	bool branch_target;	/* a direct branch of the function lands here */
	bool jcc_if_zero;	/* JE (taken when ZF is set); JNE: false. Other Jcc: unused */
	bool jcc_zf;		/* a JE or JNE */
	int8_t test_reg;	/* TEST r, r of a 64-bit register: r; else -1 */
	int8_t test_any;	/* TEST r, r of any width: r, its low TEST_SIZE bytes; else -1 */
	uint8_t test_size;
	int8_t mov_src;		/* MOV r64, r64: the source register; else -1 (dst: the write) */
	uint16_t writes;	/* general registers written, bit per x86 register number */
	uint16_t reads;		/* general registers read, the same way */
	uint64_t target;	/* direct CALL, JMP, Jcc: the address it goes to */
	/*
	 * Its data move (enum insn_op): REG the register operand (-1: none, an immediate), MEM the
	 * memory one when HAS_MEM (MEM_BASE its base register, -1: none, -2: RIP; MEM_INDEX an index
	 * register there), DISP its displacement; TO_MEM: MEM is written (a store). MEM_WRITE: the
	 * instruction writes memory through an operand, whatever its op.
	 */
	uint8_t op;
	uint8_t size; /* of the move, in bytes */
	int8_t reg;
	int8_t mem_base;
	bool has_mem, mem_index, to_mem, mem_write;
	int32_t disp;
};

/* One function decoded: every instruction in order. */
struct insns {
	uint64_t addr;
	size_t len;
	struct insn *v;
	size_t n;
	bool unknown_targets; /* an indirect jump: some branch targets cannot be known */
};

/*
 * Decodes the function CODE (LEN bytes at ADDR) into OUT (free it with disasm__insns_free):
 * amd64 only (-EOPNOTSUPP on arm64, whose sites are chosen as before), -EINVAL when the bytes do
 * not decode as a whole (see disasm__find_rets).
 */
int disasm__decode(uint16_t machine, const uint8_t *code, size_t len, uint64_t addr,
		   struct insns *out);
void disasm__insns_free(struct insns *ins);
/* The index of the instruction at offset OFF, or -1 when no instruction starts there. */
long disasm__index(const struct insns *ins, uint64_t off);

/*
 * Closes capstone, which the functions above open on first use: for when no analysis is near
 * (capstone's tables hold 5 MB of resident memory while it is loaded).
 */
void disasm__release(void);

#endif
