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
#include "analysis/datastores.h"
#include "analysis/fasthttp.h"
#include "analysis/kafka.h"
#include "analysis/gotype.h"
#include "analysis/grpc.h"
#include "analysis/offsets.h"
#include "analysis/planner.h"
#include "analysis/routers.h"

struct analysis;
struct gobin;

/* How one recorded argument is formatted: what the file names it by, and its type. */
struct traced_arg {
	char *path; /* "key", "o.Customer.Name": the span model makes the attribute key of it */
	enum go_type type;
	unsigned size;
};

/* One function to probe in one target. */
struct traced_func {
	char *symbol;
	char *name; /* the span name: the symbol without its package directories */
	struct probe_site site;
	struct func_config cfg; /* cfg.target is set at attach */
	struct traced_arg args[MAX_FUNC_ARGS];
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
	/*
	 * Where HTTP/2 requests end when not in serve_http's callers: the direct CALLs of the
	 * writer's handlerDone in the HTTP/2 servers' runHandler closures (ends), else, from Go
	 * 1.27, http2Handler.ServeHTTP's RETs; addr 0 = none
	 */
	struct probe_site serve_http2;
	struct probe_site gopanic; /* entry only; addr 0 when the binary has none */
	/* Client side; addr 0 when the binary makes no HTTP calls. */
	struct probe_site round_trip;
	struct probe_site inject;   /* calls of Header.writeSubset in (*Request).write: ret_offs */
	struct probe_site newproc1; /* RETs only; addr 0 without g.parentGoid (Go < 1.21) */
	/* Entry only, once a process: new processes of the binary (--exe); addr 0 = none. */
	struct probe_site runtime_main;
	uint64_t bufio_itab;	    /* *bufio.Writer's io.Writer itab; 0 = unknown (stripped) */
	uint64_t response_itab; /* link-time address of the *http.response ResponseWriter itab; 0 = unknown */
	uint64_t h2_writer_itab; /* the same for HTTP/2's *http2responseWriter */
	struct target_config cfg; /* what the BPF programs get */
	/* --functions: what functions__resolve found; FUNC_BASE is the first one's funcs index. */
	struct traced_func *funcs;
	size_t nfuncs;
	uint32_t func_base;
	/* runtime.recovery's call of gogo (entry_off): drops the calls a recovered panic ended */
	struct probe_site func_recover;
	/* --cpu-time: runtime.execute's and runtime.schedule's entries; addr 0 = none */
	struct probe_site cpu_execute, cpu_schedule;
	/*
	 * Single-stepped probe hits (two traps each) of one HTTP/1 request served and of one
	 * outgoing call that succeeds, on the usual path; -1 when there is no such probe.
	 */
	int server_steps, client_steps;
	int http2_steps; /* ... and of one HTTP/2 request served; -1: no HTTP/2 server */
	int client_fail_steps; /* ... and of one call that fails (on its way out, a RET) */
	struct grpc_target grpc;
	struct db_target db;
	struct router_target routers; /* route templates of the router frameworks it serves with */
	struct fasthttp_target fasthttp; /* its fasthttp server and client, if it links fasthttp */
	struct kafka_target kafka;	 /* its Kafka producers and consumers (kafka-go) */
	/*
	 * The binary as target__analyse read it, open for functions__resolve and
	 * cputime__resolve so that they need not read it again; NULL after target__end_analysis.
	 */
	struct analysis *analysis;
};

/*
 * Analyses the Go binary at PATH; EXE_NAME names it in messages and resources (NULL: PATH's
 * basename). NULL with errno set when it cannot be traced; the reason is logged.
 */
struct target *target__analyse(const char *path, const char *exe_name, const struct offsets *tables,
			       const struct module_tables *modules, bool need_http);
/* Closes the binary target__analyse left open (T->analysis) once nothing more is resolved in it. */
void target__end_analysis(struct target *t);
void target__free(struct target *t);
/* Frees T's function probes (what functions__resolve put in T) and leaves it none. */
void target__release_funcs(struct target *t);

#endif
