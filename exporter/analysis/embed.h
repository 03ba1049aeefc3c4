/* SPDX-License-Identifier: MIT */
/* Files built into the gospan binary so it runs from anywhere: the offset tables. */
#ifndef GOSPAN_EMBED_H
#define GOSPAN_EMBED_H

#include "analysis/fields.h"

/* offsets/go_offsets.json, NUL-terminated; its length excludes the NUL. */
extern const char gospan_offsets_json[];
extern const char gospan_offsets_json_end[];

/*
 * For each module NAME of GOSPAN_MODULE_TABLES, offsets/NAME_offsets.json as
 * gospan_NAME_offsets_json (gospan_grpc_offsets_json, ...) to gospan_NAME_offsets_json_end,
 * NUL-terminated; its length excludes the NUL.
 */
#define EMBED_MODULE_TABLE(name, path)                                                             \
	extern const char gospan_##name##_offsets_json[];                                          \
	extern const char gospan_##name##_offsets_json_end[];
GOSPAN_MODULE_TABLES(EMBED_MODULE_TABLE)
#undef EMBED_MODULE_TABLE

#endif
