// SPDX-License-Identifier: MIT
/*
 * Fuzzes container.c, which reads /proc/PID/cgroup: cgroup names below a delegated subtree are
 * the traced process's to choose. Beyond the sanitizers this checks what the parser promises,
 * aborting on any violation: the id is empty or 64 lower-case hex digits, the pod UID empty or
 * 8-4-4-4-12 lower-case hex with dashes, a runtime only with an id, -ENOENT exactly when both
 * are empty; and the result does not depend on bytes past the length given.
 *
 * The input is the file's text, as is.
 */
#include <errno.h>
#include <stdbool.h>

#include "capture/container.h"
#include "fuzz.h"

static bool lower_hex(char c)
{
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
}

static void check_info(const struct container_info *ci, int err)
{
	size_t i, n;

	n = strnlen(ci->id, sizeof(ci->id));
	CHECK(n == 0 || n == CONTAINER_ID_LEN);
	for (i = 0; i < n; i++)
		CHECK(lower_hex(ci->id[i]));
	n = strnlen(ci->pod_uid, sizeof(ci->pod_uid));
	CHECK(n == 0 || n == POD_UID_LEN);
	for (i = 0; i < n; i++)
		CHECK(i == 8 || i == 13 || i == 18 || i == 23 ? ci->pod_uid[i] == '-' :
								lower_hex(ci->pod_uid[i]));
	CHECK(!ci->runtime || ci->id[0]);
	CHECK(err == 0 || err == -ENOENT);
	CHECK((err == -ENOENT) == (!ci->id[0] && !ci->pod_uid[0]));
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char tail[] =
		"/docker/0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef\n";
	struct container_info a, b;
	char *text, *padded;
	int err;

	text = fuzz_dup(data, size);
	padded = malloc(size + sizeof(tail));
	if (!text || !padded)
		abort();
	err = container__parse(text, size, &a);
	check_info(&a, err);
	/* The same text followed by a container's path: not read, so the same answer. */
	memcpy(padded, data, size);
	memcpy(padded + size, tail, sizeof(tail) - 1);
	CHECK(container__parse(padded, size, &b) == err);
	CHECK(!strcmp(a.id, b.id) && !strcmp(a.pod_uid, b.pod_uid) && a.runtime == b.runtime);
	free(padded);
	free(text);
	return 0;
}
