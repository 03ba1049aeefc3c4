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
#include "analysis/offsets.h"
#include "analysis/sites.h"

struct gobin;
struct traced_func;

/*
 * One probed function: a uprobe at ENTRY_OFF, and its ends: one at each RET_OFFS[i] that must
 * stay (always single-stepped), one at each ENDS[i], in its callers or after its main inner call
 * (sites.h). All file offsets.
 */
struct probe_site {
	const char *symbol;
	uint64_t addr; /* link-time address of the function */
	uint64_t entry_off;
	bool entry_emulated;
	/*
	 * When its own entry would be single-stepped (a function without Go's stack check, whose
	 * first instruction the kernel does not emulate) and every call of it is a direct CALL:
	 * the entry probes go on those CALLs instead, in its callers, and ENTRY_OFF is not probed.
	 */
	uint64_t *entry_calls;
	size_t nentry_calls;
	uint64_t *ret_offs;
	size_t nrets;
	struct end_site *ends;
	size_t nends;
	/* Why the RETs stay, when they do and ends were wanted: for --verbose. NULL otherwise. */
	const char *rets_why;
};


/*
 * gRPC (google.golang.org/grpc) in a binary: VERSION[0] 0 when it has none. Each probe_site's
 * addr is 0 when that part is not traced (no server, no client, or no offsets for it).
 */
struct grpc_target {
	char version[32]; /* the module's version in buildinfo, e.g. "v1.62.1" */
	const char *offsets_source; /* "DWARF", or "table v1.62.0" */
	char offsets_desc[48];
	struct probe_site handle_stream;  /* (*Server).handleStream: entry */
	struct probe_site write_status;	  /* the HTTP/2 transport's status writer: entry */
	struct probe_site handler_write_status; /* the ServeHTTP transport's: entry, if any */
	struct probe_site new_stream;	  /* newClientStream: entry */
	struct probe_site new_attempt;	  /* (*clientStream).newAttemptLocked: entry */
	struct probe_site attempt_finish; /* (*csAttempt).finish: entry */
	/* Outgoing trace context: where a call's header fields are made, and where written. */
	struct probe_site header_fields; /* (*http2Client).createHeaderFields: ends only */
	struct probe_site write_header;	 /* originateStream's calls of writeHeader: ends */
	/* Link-time addresses of the methods that identify interface values (events.h). */
	uint64_t fn_valuectx_value, fn_tcpaddr_network, fn_status_error, fn_error_string;
	int server_steps, client_steps; /* as target.server_steps; -1: not traced */
};

/* A driver's or a library's method, by its link-time address, and what it says. */
struct db_method {
	uint64_t addr;
	const char *what; /* db.system.name of a driver's method; an error's Go type (%T) */
};

/*
 * Data store clients in a binary (datastores.c). Each probe_site's addr is 0 when that part is
 * not traced.
 */
struct db_target {
	/* database/sql: where calls reach the driver, and where prepared statements are noted. */
	struct probe_site sql_query, sql_exec;	  /* ctxDriverQuery, ctxDriverExec */
	struct probe_site sql_rows, sql_result;	  /* rowsiFromStatement, resultFromStatement */
	struct probe_site sql_stmt_query, sql_stmt_exec; /* (*Stmt).QueryContext, ExecContext: entry */
	struct probe_site sql_prepare;		  /* ctxDriverPrepare: entry */
	struct probe_site sql_begin;		  /* ctxDriverBegin */
	struct probe_site sql_commit, sql_rollback; /* (*Tx).Commit, (*Tx).rollback */
	/* pgx v5 (github.com/jackc/pgx/v5): (*Conn).Query, Exec, SendBatch */
	char pgx_version[32];
	char pgx_offsets[48]; /* "DWARF", "table v5.7.0" */
	struct probe_site pgx_query, pgx_exec, pgx_batch;
	/* go-redis v9: (*baseClient).process and the pipelines' processors */
	char redis_version[32];
	char redis_offsets[48];
	struct probe_site redis_process, redis_pipeline, redis_tx_pipeline;
	/* Sorted by address: the drivers' methods that name a database, errors' Error methods. */
	struct db_method *drivers;
	size_t ndrivers;
	struct db_method *errors;
	size_t nerrors;
	/* Single-stepped hits of one call; -1: not traced. */
	int sql_steps, pgx_steps, redis_steps;
};

/* The offset tables of the libraries gospan knows, for target__analyse; any may be NULL. */
struct module_tables {
	const struct offsets *grpc, *pgx, *redis;
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
	/*
	 * Single-stepped probe hits (two traps each) of one HTTP/1 request served and of one
	 * outgoing call that succeeds, on the usual path; -1 when there is no such probe.
	 */
	int server_steps, client_steps;
	struct grpc_target grpc;
	struct db_target db;
};

/*
 * Analyses the Go binary at PATH; EXE_NAME names it in messages and resources (NULL: PATH's
 * basename). NULL with errno set when it cannot be traced; the reason is logged.
 */
struct target *target__analyse(const char *path, const char *exe_name, const struct offsets *tables,
			       const struct module_tables *modules, bool need_http);
void target__free(struct target *t);

struct elf_file;
struct pclntab;
struct site_planner;

/*
 * Where probes go in the binary EF (whose Go function table PT, may be NULL, is used when it has
 * no .symtab). NULL with errno set on failure.
 */
struct site_planner *site_planner__new(struct elf_file *ef, struct pclntab *pt);
void site_planner__free(struct site_planner *sp);

/* What target__probe_sites() finds in a function besides its entry. */
enum site_kind {
	SITE_ENTRY,    /* the entry only */
	SITE_RETS,     /* the entry and every return */
	SITE_ENDS,     /* the entry and its ends: in its callers where all are known, else RETs */
	SITE_CALLS_TO, /* the entry and the direct calls to CALLEE (in ret_offs) */
};

/* Where the RETs go instead, for bench/floor's rows: what peers and older gospans probed. */
enum site_policy {
	SITES_BEST,	   /* emulated sites wherever they can be shown right */
	SITES_PUSH_RETS,   /* gospan before: the entry past the stack check, every RET */
	SITES_FIRST_RETS,  /* the first instruction and every RET (other uprobe tracers) */
};
extern enum site_policy target_site_policy;

/*
 * The probe sites of the function at link-time address ADDR, SIZE bytes long: SITE's entry_off
 * (see disasm__entry_site) and, by KIND, ret_offs and ends, all file offsets. SITE->symbol is
 * left to the caller. On failure, a negative errno (-ENODATA: no size; -ENOENT: no return or call
 * found) and WHY says which step failed, for the caller's message at the caller's severity.
 */
int target__probe_sites(struct site_planner *sp, uint64_t addr, uint64_t size,
			enum site_kind kind, uint64_t callee, struct probe_site *site, char *why,
			size_t why_len);
void probe_site__release(struct probe_site *s);

#endif
