// SPDX-License-Identifier: MIT
/*
 * Fuzzes pclntab.c: finding the Go function table of a binary (named section or scanned for),
 * its header, the text start (header, moduledata, .text), and every function record and name.
 * The input is the file.
 */
#include "analysis/elf.h"
#include "fuzz.h"
#include "analysis/pclntab.h"

static struct fuzz_file file;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	fuzz_init_log();
	fuzz_file_init(&file, "fuzz-pclntab");
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char *const names[] = {"net/http.serverHandler.ServeHTTP", "main.main",
					    "runtime.gopanic", "runtime.newproc1", ""};
	const char *path = fuzz_file_set(&file, data, size);
	struct elf_symbol sym;
	struct elf_file *ef;
	struct pclntab *pt;
	size_t i;

	if (!path)
		return 0;
	ef = elf_file__open(path);
	if (!ef)
		return 0;
	pt = pclntab__open(ef);
	if (pt) {
		for (i = 0; i < sizeof(names) / sizeof(names[0]); i++)
			pclntab__find_func(pt, names[i], &sym);
		pclntab__close(pt);
	}
	elf_file__close(ef);
	return 0;
}
