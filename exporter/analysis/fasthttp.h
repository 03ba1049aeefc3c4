/* SPDX-License-Identifier: MIT */
/*
 * Target analysis for fasthttp (github.com/valyala/fasthttp), which serves and calls HTTP/1
 * without net/http: where its server loop starts and answers a request and where its HostClient
 * makes an attempt (direct CALLs the kernel emulates, and the first emulated instruction after
 * one), and the offsets bpf/fasthttp.bpf.c reads with (DWARF, else fasthttp's offset table).
 */
#ifndef GOSPAN_FASTHTTP_H
#define GOSPAN_FASTHTTP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "events.h"
#include "analysis/fields.h"
#include "analysis/planner.h"

struct analysis;
struct module_tables;

/* fasthttp in a binary: VERSION[0] 0 when it has none; a site's addr 0 when it is not probed. */
struct fasthttp_target {
	char version[32]; /* the module's version in buildinfo */
	char offsets[48]; /* "DWARF", "table v1.78.0" */
	int64_t offs[FASTHTTP_FIELD__COUNT];
	/*
	 * The server loop's CALLs that read a request's body (ends: one of them starts each
	 * request), with the link-time address of each in START_AT (0: above 4 GiB, no peer
	 * address), which the probe's cookie carries for the load bias.
	 */
	struct probe_site start;
	uint64_t *start_at;
	struct probe_site end;	  /* its CALLs that write the answer: ends */
	int64_t end_ctx;	  /* what the end CALL's first argument is less the *RequestCtx */
	struct probe_site client; /* (*HostClient).do: entry (in its callers) and ends after them */
	int server_steps, client_steps; /* single-stepped hits a request, a call; -1: not traced */
};

/*
 * Finds fasthttp in the binary of A (its buildinfo), its server's and client's sites and its
 * offsets (DWARF, else MODULES' table) into F. A side that cannot be probed or read is left out
 * and said once at warning level, naming the release. -ENOMEM is the only failure.
 */
int fasthttp__find(struct analysis *a, const struct module_tables *modules,
		   struct fasthttp_target *f);

/*
 * F's part of the BPF config C: offsets summed from the table's members, the methods that tell
 * a *net.TCPConn and a *net.TCPAddr (GO_OFFS: the Go fields, for the TCPAddr's).
 */
void fasthttp__configure(struct analysis *a, struct fasthttp_target *f, const int64_t *go_offs,
			 struct target_config *c);

/* Whether F's server is probed. */
bool fasthttp__serves(const struct fasthttp_target *f);

void fasthttp__release(struct fasthttp_target *f);

#endif
