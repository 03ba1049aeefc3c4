/* SPDX-License-Identifier: MIT */
/*
 * Finding a function's return instructions with capstone, so exits are probed with plain uprobes:
 * uretprobes rewrite the return address on the stack, which Go moves when it grows a stack.
 */
#ifndef GOSPAN_DISASM_H
#define GOSPAN_DISASM_H

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
 * start into *OFF: past Go's stack-bound check, on the PUSH of the frame pointer that follows it,
 * when the function begins that way (amd64, Go 1.21+); otherwise 0, the start. The kernel
 * emulates a PUSH where it must single-step most instructions, a second trap at each hit; and
 * the check reads no argument register and changes none, nor SP, so the probe sees the call as
 * at its first instruction, once per call even when the stack grows (morestack restarts the
 * function from its start). 0 or a negative errno (capstone failing).
 */
int disasm__entry_site(uint16_t machine, const uint8_t *code, size_t len, uint64_t addr,
		       uint64_t *off);

/*
 * Closes capstone, which the functions above open on first use: for when no analysis is near
 * (capstone's tables hold 5 MB of resident memory while it is loaded).
 */
void disasm__release(void);

#endif
