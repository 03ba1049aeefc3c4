// SPDX-License-Identifier: MIT
/*
 * Fuzzes gobin.c: the Go buildinfo of a binary (both the inline format of Go 1.18+ and the
 * pointer format before it), the module list and the Go version string. The input is the file.
 */
#include "analysis/elf.h"
#include "fuzz.h"
#include "analysis/gobin.h"

static struct fuzz_file file;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	fuzz_init_log();
	fuzz_file_init(&file, "fuzz-gobin");
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *path = fuzz_file_set(&file, data, size);
	struct elf_file *ef;
	struct gobin *gb;
	size_t i, n = 0;
	int major, minor, patch;

	if (!path)
		return 0;
	ef = elf_file__open(path);
	if (!ef)
		return 0;
	gb = gobin__read(ef);
	if (gb) {
		/* Every string handed out must be a whole C string. */
		n += strlen(gb->go_version);
		if (gb->main_path)
			n += strlen(gb->main_path) + strlen(gb->main_version);
		for (i = 0; i < gb->ndeps; i++)
			n += strlen(gb->deps[i].path) + strlen(gb->deps[i].version);
		gobin__parse_version(gb->go_version, &major, &minor, &patch);
		gobin__free(gb);
	}
	elf_file__close(ef);
	return n == SIZE_MAX;
}
