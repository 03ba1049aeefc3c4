// SPDX-License-Identifier: MIT
/*
 * Embeds the offset tables with .incbin instead of generating C arrays: the JSON stays the one
 * source, and the assembler pulls it in as bytes. OFFSETS_JSON (the Go table), GRPC_OFFSETS_JSON
 * (grpc-go's), PGX_OFFSETS_JSON (pgx's) and REDIS_OFFSETS_JSON (go-redis's) are set by the
 * Makefile.
 */
#include "analysis/embed.h"

#ifndef OFFSETS_JSON
#error "OFFSETS_JSON must name the Go offset table file"
#endif
#ifndef GRPC_OFFSETS_JSON
#error "GRPC_OFFSETS_JSON must name the grpc-go offset table file"
#endif
#ifndef PGX_OFFSETS_JSON
#error "PGX_OFFSETS_JSON must name the pgx offset table file"
#endif
#ifndef REDIS_OFFSETS_JSON
#error "REDIS_OFFSETS_JSON must name the go-redis offset table file"
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

__asm__(EMBED_JSON("gospan_offsets_json", OFFSETS_JSON));
__asm__(EMBED_JSON("gospan_grpc_offsets_json", GRPC_OFFSETS_JSON));
__asm__(EMBED_JSON("gospan_pgx_offsets_json", PGX_OFFSETS_JSON));
__asm__(EMBED_JSON("gospan_redis_offsets_json", REDIS_OFFSETS_JSON));
