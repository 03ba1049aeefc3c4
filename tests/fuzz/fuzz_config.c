// SPDX-License-Identifier: MIT
/*
 * Fuzzes config.c: settings from the environment and the command line. The input is
 * NUL-separated strings: environment entries ("NAME=value") up to the first empty string, then
 * command-line arguments (argv[1]...), the way a process receives both. The settings that name
 * a file to open are pointed at one of a few known paths, never at one the fuzzer made up.
 */
#include "core/config.h"
#include "fuzz.h"

#define MAX_STRINGS 64

static char tls_file[] = "/tmp/gospan-fuzz-config-XXXXXX";
static FILE *devnull;

static void remove_tls_file(void)
{
	unlink(tls_file);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	int fd;

	(void)argc;
	(void)argv;
	fuzz_init_log();
	fd = mkstemp(tls_file);
	if (fd < 0) {
		perror("fuzz: mkstemp");
		exit(1);
	}
	close(fd);
	atexit(remove_tls_file);
	devnull = fopen("/dev/null", "w");
	if (!devnull) {
		perror("fuzz: /dev/null");
		exit(1);
	}
	return 0;
}

/*
 * "..._CERTIFICATE=x" and "..._CLIENT_KEY=x" make config.c open x. Opening a device file can
 * have effects (a watchdog, a tape), so those values become a regular file, a directory, a
 * missing path or the empty string, picked by the value's length.
 */
static char *safe_entry(char *entry)
{
	static const char *const paths[] = {tls_file, "/", "/nonexistent/gospan-fuzz", ""};
	char *eq = strchr(entry, '='), *out;
	const char *p;
	size_t nlen;

	if (!eq || (!memmem(entry, eq - entry, "CERTIFICATE", 11) &&
		    !memmem(entry, eq - entry, "CLIENT_KEY", 10)))
		return entry;
	nlen = eq - entry;
	p = paths[strlen(eq + 1) % (sizeof(paths) / sizeof(paths[0]))];
	out = malloc(nlen + 2 + strlen(p));
	if (!out)
		return NULL;
	memcpy(out, entry, nlen + 1);
	strcpy(out + nlen + 1, p);
	free(entry);
	return out;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *env[MAX_STRINGS + 1] = {0}, *argv[MAX_STRINGS + 2] = {"gospan"};
	size_t pos = 0, nenv = 0, i;
	int argc = 1, in_argv = 0;
	struct config cfg;

	while (pos < size && nenv + (size_t)argc < MAX_STRINGS) {
		const uint8_t *nul = memchr(data + pos, '\0', size - pos);
		size_t len = nul ? (size_t)(nul - (data + pos)) : size - pos;
		char *s;

		if (!len && !in_argv) {
			in_argv = 1;
			pos += 1;
			continue;
		}
		s = strndup((const char *)data + pos, len);
		if (!s)
			goto cleanup;
		if (in_argv) {
			argv[argc++] = s;
		} else {
			s = safe_entry(s);
			if (!s)
				goto cleanup;
			env[nenv++] = s;
		}
		pos += len + 1;
	}
	if (!config__parse(&cfg, argc, argv, env)) {
		config__print_help(&cfg, devnull);
		config__free(&cfg);
	}
cleanup:
	for (i = 0; i < nenv; i++)
		free(env[i]);
	for (i = 1; i < (size_t)argc; i++)
		free(argv[i]);
	return 0;
}
