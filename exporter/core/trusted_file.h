/* SPDX-License-Identifier: MIT */
/*
 * Files gospan takes its own configuration from (the --functions file, the TLS files), opened
 * only when no one but root or gospan's own user could have written them. The rule, and why
 * links are followed, is at the top of trusted_file.c and in docs/configuration.md.
 */
#ifndef GOSPAN_TRUSTED_FILE_H
#define GOSPAN_TRUSTED_FILE_H

#include <stddef.h>

/* Room for any reason the functions below give, a resolved path included. */
#define TRUSTED_FILE_WHY_MAX 4352

/*
 * Opens PATH for reading when it is a regular file of at most MAX_SIZE bytes, owned by root or
 * by the user gospan runs as (or, under sudo, by the user who ran sudo), and writable by no
 * group and no other user. Returns the descriptor (O_CLOEXEC), or a negative errno with the
 * reason in WHY, worded to follow "cannot read ... 'PATH': ": the open(2) error, -EISDIR or
 * -EINVAL (not a regular file), -EPERM (owner or mode), -EFBIG (too large).
 */
int trusted_file__open(const char *path, size_t max_size, char *why, size_t why_size);

/*
 * The whole of PATH, checked as trusted_file__open() does, NUL-terminated in a malloc'ed buffer;
 * its length in *LEN. NULL with errno set and the reason in WHY on failure.
 */
char *trusted_file__read(const char *path, size_t max_size, size_t *len, char *why,
			 size_t why_size);

#endif
