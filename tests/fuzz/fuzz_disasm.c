// SPDX-License-Identifier: MIT
/*
 * Fuzzes disasm.c: capstone over a target's code bytes, looking for the return instructions and
 * the direct calls gospan places uprobes on; and sites.c's end sites over the decoded code, after
 * each call it holds. The input is one byte choosing the machine (bit 0: arm64, else x86-64),
 * eight bytes of call target (little-endian, an offset from the code's start), then the code.
 * Every offset or address handed back must lie inside the code.
 */
#include <elf.h>

#include "analysis/disasm.h"
#include "fuzz.h"
#include "analysis/sites.h"

#define CODE_ADDR 0x401000

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	fuzz_init_log();
	return 0;
}

static void check(const uint64_t *offs, size_t n, size_t len)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (offs[i] >= len)
			abort();
}

/* Every end site sites.c finds after the calls in the decoded CODE lies in it. */
static void check_sites(uint16_t machine, const uint8_t *code, size_t len)
{
	struct insns ins;
	struct end_site site;
	long *excl = NULL;
	size_t i, j, nexcl;

	if (disasm__decode(machine, code, len, CODE_ADDR, &ins))
		return;
	for (i = 0; i + 1 < ins.n; i++) {
		if (ins.v[i].kind != INSN_CALL && ins.v[i].kind != INSN_CALL_IND)
			continue;
		sites__after_call(&ins, (long)i + 1, AFTER_CALL_PASS_CALLS, X86_AX, &site);
		if (site.off < CODE_ADDR || site.off >= CODE_ADDR + len)
			abort();
		if (sites__success_exit(&ins, (long)i + 1, X86_BX, 1u << X86_AX, &site, &excl,
					&nexcl))
			continue;
		if (site.off < CODE_ADDR || site.off >= CODE_ADDR + len || !nexcl)
			abort();
		for (j = 0; j < nexcl; j++)
			if (excl[j] < 0 || (size_t)excl[j] >= ins.n ||
			    ins.v[excl[j]].kind != INSN_RET)
				abort();
		free(excl);
	}
	disasm__insns_free(&ins);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint16_t machine;
	uint64_t target = 0, *offs = NULL;
	uint8_t *code;
	size_t n = 0, len;
	int i;

	if (size < 9)
		return 0;
	machine = data[0] & 1 ? EM_AARCH64 : EM_X86_64;
	for (i = 0; i < 8; i++)
		target |= (uint64_t)data[1 + i] << (8 * i);
	len = size - 9;
	code = fuzz_dup(data + 9, len);
	if (!code)
		return 0;
	if (!disasm__find_rets(machine, code, len, CODE_ADDR, &offs, &n))
		check(offs, n, len);
	free(offs);
	offs = NULL;
	n = 0;
	if (!disasm__find_calls(machine, code, len, CODE_ADDR, CODE_ADDR + target, &offs, &n))
		check(offs, n, len);
	free(offs);
	check_sites(machine, code, len);
	free(code);
	return 0;
}
