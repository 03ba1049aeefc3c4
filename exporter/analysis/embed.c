// SPDX-License-Identifier: MIT
/*
 * Embeds the offset tables with .incbin instead of generating C arrays: the JSON stays the one
 * source, and the assembler pulls it in as bytes. OFFSETS_DIR, set by the Makefile, is the
 * directory of the tables: go_offsets.json (the Go table) and NAME_offsets.json for each module
 * NAME of GOSPAN_MODULE_TABLES (fields.h).
 */
#include "analysis/embed.h"

#ifndef OFFSETS_DIR
#error "OFFSETS_DIR must name the directory of the offset tables (offsets/)"
#endif

/* Each table is followed by a NUL that its end symbol leaves out, so it is also a C string. */
#define EMBED_JSON(sym, file)                                                                      \
	".pushsection .rodata\n"                                                                   \
	".global " sym "\n"                                                                        \
	".type " sym ", @object\n" sym ":\n"                                                       \
	".incbin \"" file "\"\n"                                                                   \
	".global " sym "_end\n" sym "_end:\n"                                                      \
	".byte 0\n"                                                                                \
	".popsection\n"

__asm__(EMBED_JSON("gospan_offsets_json", OFFSETS_DIR "/go_offsets.json"));

#define EMBED_MODULE_TABLE(name, path)                                                             \
	__asm__(EMBED_JSON("gospan_" #name "_offsets_json", OFFSETS_DIR "/" #name "_offsets.json"));
GOSPAN_MODULE_TABLES(EMBED_MODULE_TABLE)
#undef EMBED_MODULE_TABLE
