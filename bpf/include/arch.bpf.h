/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The Go internal register ABI (Go 1.17+), per architecture: where the current goroutine's g
 * lives and which register holds the Nth integer argument. Slots are 1-based and chosen by user
 * space (it knows each probed function's signature), so BPF code holds no signatures.
 */
#ifndef GOSPAN_ARCH_BPF_H
#define GOSPAN_ARCH_BPF_H

#include <linux/types.h>

/*
 * Each case loads at a constant offset and pins the value with an empty asm: otherwise clang
 * merges the cases into one load through a computed context pointer, which the verifier refuses.
 */
#define GO_REG_LOAD(v, field)                                                                      \
	do {                                                                                       \
		v = ctx->field;                                                                    \
		asm volatile("" : "+r"(v));                                                        \
	} while (0)

#if defined(__TARGET_ARCH_x86)

#include <asm/ptrace.h>

/* amd64: g in R14; integer args in RAX, RBX, RCX, RDI, RSI, R8, R9, R10, R11. */
#define GO_REGS struct pt_regs
#define GO_G_PTR(ctx) ((void *)(ctx)->r14)
/* The closure context register: a func value's closure, at the entry of the code it calls. */
#define GO_CLOSURE_PTR(ctx) ((ctx)->rdx)
/* The stack pointer: at a function's entry and at its RETs it points at the return address. */
#define GO_SP(ctx) ((ctx)->rsp)
/* Where the probe fired: the probed instruction's address. */
#define GO_IP(ctx) ((ctx)->rip)

static __always_inline __u64 go_arg(const GO_REGS *ctx, __u32 slot)
{
	__u64 v = 0;

	switch (slot) {
	case 1:
		GO_REG_LOAD(v, rax);
		break;
	case 2:
		GO_REG_LOAD(v, rbx);
		break;
	case 3:
		GO_REG_LOAD(v, rcx);
		break;
	case 4:
		GO_REG_LOAD(v, rdi);
		break;
	case 5:
		GO_REG_LOAD(v, rsi);
		break;
	case 6:
		GO_REG_LOAD(v, r8);
		break;
	case 7:
		GO_REG_LOAD(v, r9);
		break;
	case 8:
		GO_REG_LOAD(v, r10);
		break;
	case 9:
		GO_REG_LOAD(v, r11);
		break;
	}
	return v;
}

#elif defined(__TARGET_ARCH_arm64)

/*
 * The kernel's arm64 struct pt_regs begins with the user register file; declared here so the BPF
 * object builds on any host without the arm64 uapi headers.
 */
struct gospan_arm64_regs {
	__u64 regs[31];
	__u64 sp;
	__u64 pc;
	__u64 pstate;
};

/* arm64: g in X28; integer args in X0..X15. */
#define GO_REGS struct gospan_arm64_regs
#define GO_G_PTR(ctx) ((void *)(ctx)->regs[28])
#define GO_CLOSURE_PTR(ctx) ((ctx)->regs[26])
/* The stack pointer: the same at a function's entry and at its RETs (the epilogue restores it). */
#define GO_SP(ctx) ((ctx)->sp)
#define GO_IP(ctx) ((ctx)->pc)

static __always_inline __u64 go_arg(const GO_REGS *ctx, __u32 slot)
{
	__u64 v = 0;

	/* One constant-offset load per slot, for the verifier (see GO_REG_LOAD). */
	switch (slot) {
	case 1:
		GO_REG_LOAD(v, regs[0]);
		break;
	case 2:
		GO_REG_LOAD(v, regs[1]);
		break;
	case 3:
		GO_REG_LOAD(v, regs[2]);
		break;
	case 4:
		GO_REG_LOAD(v, regs[3]);
		break;
	case 5:
		GO_REG_LOAD(v, regs[4]);
		break;
	case 6:
		GO_REG_LOAD(v, regs[5]);
		break;
	case 7:
		GO_REG_LOAD(v, regs[6]);
		break;
	case 8:
		GO_REG_LOAD(v, regs[7]);
		break;
	case 9:
		GO_REG_LOAD(v, regs[8]);
		break;
	case 10:
		GO_REG_LOAD(v, regs[9]);
		break;
	case 11:
		GO_REG_LOAD(v, regs[10]);
		break;
	case 12:
		GO_REG_LOAD(v, regs[11]);
		break;
	case 13:
		GO_REG_LOAD(v, regs[12]);
		break;
	case 14:
		GO_REG_LOAD(v, regs[13]);
		break;
	case 15:
		GO_REG_LOAD(v, regs[14]);
		break;
	case 16:
		GO_REG_LOAD(v, regs[15]);
		break;
	}
	return v;
}

#else
#error "gospan supports amd64 (__TARGET_ARCH_x86) and arm64 (__TARGET_ARCH_arm64)"
#endif

#endif
