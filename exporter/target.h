/* SPDX-License-Identifier: MIT */
/*
 * Target analysis: everything gospan decides about a Go binary before touching the kernel. It
 * reads the binary (ELF, buildinfo), finds where to probe (entry and RET file offsets), and picks
 * the struct offsets for its Go version. Nothing here needs privileges.
 */
#ifndef GOSPAN_TARGET_H
#define GOSPAN_TARGET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "events.h"
#include "offsets.h"

struct gobin;
struct traced_func;

/* One probed function: a uprobe at ENTRY_OFF and one at each RET_OFFS[i] (file offsets). */
struct probe_site {
	const char *symbol;
	uint64_t addr; /* link-time address of the function */
	uint64_t entry_off;
	uint64_t *ret_offs;
	size_t nrets;
};

struct target {
	char *path;	/* what was analysed (e.g. /proc/PID/exe) */
	char *exe_name; /* basename of the executable */
	uint16_t machine;
	bool pie;
	uint64_t link_base; /* link-time address of file offset 0: runtime base - this = load bias */
	struct gobin *gobin;
	const char *offsets_version; /* the table version consulted; NULL when the tables have none */
	const char *offsets_source;  /* "DWARF" or "table" */
	int64_t offs[GO_FIELD__COUNT];
	struct probe_site serve_http;
	struct probe_site gopanic; /* entry only; addr 0 when the binary has none */
	/* Client side; addr 0 when the binary makes no HTTP calls. */
	struct probe_site round_trip;
	struct probe_site inject;   /* calls of Header.writeSubset in (*Request).write: ret_offs */
	struct probe_site newproc1; /* RETs only; addr 0 without g.parentGoid (Go < 1.21) */
	uint64_t bufio_itab;	    /* *bufio.Writer's io.Writer itab; 0 = unknown (stripped) */
	uint64_t response_itab; /* link-time address of the *http.response ResponseWriter itab; 0 = unknown */
	struct target_config cfg; /* what the BPF programs get */
	/* --functions: what functions__resolve found; FUNC_BASE is the first one's funcs index. */
	struct traced_func *funcs;
	size_t nfuncs;
	uint32_t func_base;
	struct probe_site casgstatus; /* --cpu-time: runtime.casgstatus's entry; addr 0 = none */
};

/*
 * Analyses the Go binary at PATH; EXE_NAME names it in messages and resources (NULL: PATH's
 * basename). NULL with errno set when it cannot be traced; the reason is logged.
 */
struct target *target__analyse(const char *path, const char *exe_name, const struct offsets *tables,
			       bool need_http);
void target__free(struct target *t);

struct elf_file;

/* What target__probe_sites() finds in a function besides its entry. */
enum site_kind {
	SITE_ENTRY,    /* the entry only */
	SITE_RETS,     /* the entry and every return */
	SITE_CALLS_TO, /* the entry and the direct calls to CALLEE (in ret_offs) */
};

/*
 * The probe sites of the function at link-time address ADDR, SIZE bytes long, in EF: SITE's
 * entry_off (the place after Go's stack check, see disasm__entry_site) and, by KIND, ret_offs,
 * all file offsets. SITE->symbol is left to the caller. On failure, a negative errno (-ENODATA:
 * no size; -ENOENT: no return or call found) and WHY says which step failed, for the caller's
 * message at the caller's severity.
 */
int target__probe_sites(struct elf_file *ef, uint16_t machine, uint64_t addr, uint64_t size,
			enum site_kind kind, uint64_t callee, struct probe_site *site, char *why,
			size_t why_len);

#endif
