/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The Go internal register ABI (Go 1.17+), per architecture: where the current goroutine's g
 * lives and which register holds the Nth integer argument. Slots are 1-based and chosen by user
 * space (it knows each probed function's signature), so BPF code holds no signatures.
 */
#ifndef GOSPAN_ARCH_BPF_H
#define GOSPAN_ARCH_BPF_H

#include <linux/types.h>

#if defined(__TARGET_ARCH_x86)

#include <asm/ptrace.h>

/* amd64: g in R14; integer args in RAX, RBX, RCX, RDI, RSI, R8, R9, R10, R11. */
#define GO_REGS struct pt_regs
#define GO_G_PTR(ctx) ((void *)(ctx)->r14)

static __always_inline __u64 go_arg(const GO_REGS *ctx, __u32 slot)
{
	switch (slot) {
	case 1: return ctx->rax;
	case 2: return ctx->rbx;
	case 3: return ctx->rcx;
	case 4: return ctx->rdi;
	case 5: return ctx->rsi;
	case 6: return ctx->r8;
	case 7: return ctx->r9;
	case 8: return ctx->r10;
	case 9: return ctx->r11;
	default: return 0;
	}
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

static __always_inline __u64 go_arg(const GO_REGS *ctx, __u32 slot)
{
	if (slot < 1 || slot > 16)
		return 0;
	return ctx->regs[(slot - 1) & 15];
}

#else
#error "gospan supports amd64 (__TARGET_ARCH_x86) and arm64 (__TARGET_ARCH_arm64)"
#endif

#endif
