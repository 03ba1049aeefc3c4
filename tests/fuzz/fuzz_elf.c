// SPDX-License-Identifier: MIT
/*
 * Fuzzes elf.c: opening a target binary (headers, segments, sections, .symtab) and the lookups
 * target analysis makes on it afterwards. The input is the whole file.
 */
#include "analysis/elf.h"
#include "fuzz.h"

static struct fuzz_file file;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	fuzz_init_log();
	fuzz_file_init(&file, "fuzz-elf");
	return 0;
}

/* What target analysis asks of every binary: sections, symbols, and bytes at their addresses. */
static void probe(struct elf_file *ef)
{
	static const char *const sections[] = {
	    ".text",	    ".go.buildinfo", ".gopclntab",  ".symtab",
	    ".data.rel.ro", ".rodata",	     ".debug_info", ""};
	static const char *const symbols[] = {"net/http.serverHandler.ServeHTTP", "main.main",
					      "runtime.gopanic",
					      "go:itab.*net/http.response,net/http.ResponseWriter"};
	uint8_t buf[64];
	struct elf_symbol sym;
	const void *data;
	uint64_t addr, off, back;
	size_t i, size;

	(void)elf_file__machine(ef);
	(void)elf_file__is_pie(ef);
	for (i = 0; i < sizeof(sections) / sizeof(sections[0]); i++) {
		if (elf_file__section(ef, sections[i], &data, &size, &addr))
			continue;
		/* The bytes must be readable as long as the file is open. */
		if (size)
			buf[0] = ((const uint8_t *)data)[size - 1];
		if (!elf_file__addr_to_offset(ef, addr, &off))
			elf_file__offset_to_addr(ef, off, &back);
		elf_file__read_addr(ef, addr, buf, size < sizeof(buf) ? size : sizeof(buf));
		elf_file__read_addr(ef, addr + size - 1, buf, 1);
	}
	for (i = 0; i < sizeof(symbols) / sizeof(symbols[0]); i++) {
		if (elf_file__find_symbol(ef, symbols[i], &sym))
			continue;
		if (!elf_file__addr_to_offset(ef, sym.addr, &off))
			elf_file__offset_to_addr(ef, off, &back);
		elf_file__read_addr(ef, sym.addr, buf,
				    sym.size < sizeof(buf) ? sym.size : sizeof(buf));
	}
	elf_file__read_addr(ef, UINT64_MAX - 3, buf, 8);
	elf_file__read_addr(ef, 0, buf, 0);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *path = fuzz_file_set(&file, data, size);
	struct elf_file *ef;

	if (!path)
		return 0;
	ef = elf_file__open(path);
	if (!ef)
		return 0;
	probe(ef);
	elf_file__close(ef);
	return 0;
}
