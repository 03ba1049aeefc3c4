/* SPDX-License-Identifier: MIT */
/*
 * Struct member offsets read from the target's own DWARF with libdw. A binary that carries its
 * debug information describes its exact layouts, so a Go release newer than the offset tables
 * works without regenerating them; the tables remain the answer for binaries built with -w.
 */
#ifndef GOSPAN_DWARF_H
#define GOSPAN_DWARF_H

#include <stdint.h>

#include "offsets.h"

/*
 * Reads the offsets of the fields in go_field_names[] (exporter/offsets.h) from PATH's DWARF.
 * OUT[i] = byte offset of the member, or -1 when the binary's DWARF has no such struct/member.
 * 0 on success (at least runtime.g.goid found); -ENODATA when PATH has no DWARF (stripped,
 * -ldflags=-w); other negative errno on failure, logged: -ENOENT when the DWARF describes no
 * runtime.g.goid (not a Go binary), -ENOEXEC when PATH is not ELF, -EINVAL when the ELF file or
 * its DWARF is corrupt or truncated, else open(2)'s errno.
 */
int dwarf__read_offsets(const char *path, int64_t out[GO_FIELD__COUNT]);

#endif
