// SPDX-License-Identifier: MIT
/*
 * Fuzzes offsets.c: the JSON offset tables (cJSON underneath) and the lookup of a Go version in
 * them. The input is the JSON text, not NUL-terminated, as offsets__parse takes it.
 */
#include "fuzz.h"
#include "analysis/offsets.h"

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	fuzz_init_log();
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const int versions[][3] = {
	    {1, 17, 0}, {1, 22, 12}, {1, 26, 99}, {1, 0, 0}, {2, 0, 0}};
	char *json = fuzz_dup(data, size);
	int64_t out[GO_FIELD__COUNT];
	const char *resolved;
	struct offsets *o;
	size_t i;
	int f;

	if (!json)
		return 0;
	o = offsets__parse(json, size);
	free(json);
	if (!o)
		return 0;
	for (i = 0; i < sizeof(versions) / sizeof(versions[0]); i++) {
		if (offsets__find(o, versions[i][0], versions[i][1], versions[i][2], out,
				  &resolved)) {
			offsets__explain_miss(o, versions[i][0], versions[i][1], versions[i][2]);
			continue;
		}
		for (f = 0; f < GO_FIELD__COUNT; f++)
			if (out[f] < -1 || out[f] > (1 << 16))
				abort();
		if (strlen(resolved) >= 32)
			abort();
	}
	offsets__free(o);
	return 0;
}
