/* SPDX-License-Identifier: MIT */
/*
 * Shared by the libFuzzer harnesses: each one feeds the input to one exporter parser the way
 * gospan itself hands it over. Parsers that open a path get the input as a memfd named by
 * /proc/self/fd/N, so every run reads a real file without touching the disk.
 */
#ifndef GOSPAN_FUZZ_H
#define GOSPAN_FUZZ_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "core/log.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv);

/*
 * Debug level by default, so the message formatting is fuzzed too; the Makefile runs the
 * harnesses with -close_fd_mask=2, which keeps libFuzzer's and the sanitizers' reports.
 */
static inline void fuzz_init_log(void)
{
	log_set_level(getenv("FUZZ_LOG_QUIET") ? LOG_ERROR : LOG_DEBUG);
}

struct fuzz_file {
	int fd;
	char path[64];
};

/* A memfd the harness rewrites for every input; exits on failure (nothing to fuzz without it). */
static inline void fuzz_file_init(struct fuzz_file *f, const char *name)
{
	f->fd = memfd_create(name, MFD_CLOEXEC);
	if (f->fd < 0) {
		perror("fuzz: memfd_create");
		exit(1);
	}
	snprintf(f->path, sizeof(f->path), "/proc/self/fd/%d", f->fd);
}

/* Makes the file hold exactly DATA; returns its path, or NULL when it cannot be written. */
static inline const char *fuzz_file_set(struct fuzz_file *f, const uint8_t *data, size_t size)
{
	size_t done = 0;
	ssize_t n;

	if (ftruncate(f->fd, 0))
		return NULL;
	while (done < size) {
		n = pwrite(f->fd, data + done, size - done, (off_t)done);
		if (n <= 0)
			return NULL;
		done += (size_t)n;
	}
	return f->path;
}

/*
 * What a harness checks beyond the sanitizers: a violation names the harness's file and line and
 * the condition, and aborts, which libFuzzer reports as a crash with the input.
 */
#define CHECK(cond)                                                                              \
	do {                                                                                     \
		if (!(cond)) {                                                                   \
			fprintf(stderr, "%s:%d: %s\n", __FILE__, __LINE__, #cond);               \
			abort();                                                                 \
		}                                                                                \
	} while (0)

/* An exact-size heap copy, so that ASan sees a read one byte past the input. */
static inline void *fuzz_dup(const uint8_t *data, size_t size)
{
	void *p = malloc(size ? size : 1);

	if (p && size)
		memcpy(p, data, size);
	return p;
}

#endif
