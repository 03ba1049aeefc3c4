// SPDX-License-Identifier: MIT
/*
 * Embeds the offset tables with .incbin instead of generating a C array: the JSON stays the one
 * source, and the assembler pulls it in as bytes. OFFSETS_JSON is set by the Makefile.
 */
#include "embed.h"

#ifndef OFFSETS_JSON
#error "OFFSETS_JSON must name the offset table file"
#endif

__asm__(".pushsection .rodata\n"
	".global gospan_offsets_json\n"
	".type gospan_offsets_json, @object\n"
	"gospan_offsets_json:\n"
	".incbin \"" OFFSETS_JSON "\"\n"
	".global gospan_offsets_json_end\n"
	"gospan_offsets_json_end:\n"
	".byte 0\n"
	".popsection\n");
