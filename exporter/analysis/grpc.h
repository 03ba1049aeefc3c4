/* SPDX-License-Identifier: MIT */
/*
 * Target analysis for grpc-go (google.golang.org/grpc): its server's and client's probe sites
 * and the offsets of its structs (grpc.c). The gRPC column's analysis part.
 */
#ifndef GOSPAN_GRPC_H
#define GOSPAN_GRPC_H

#include <stdint.h>

#include "events.h"
#include "analysis/planner.h"

struct analysis;
struct offsets;

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

/*
 * gRPC's probe sites into G, when the binary of A uses grpc-go. A side that cannot be probed is
 * left out (its sites' addr 0), and the log says so.
 */
void grpc__find_sites(struct analysis *a, struct grpc_target *g);

/*
 * gRPC's offsets (A's DWARF, else GRPC_TABLES) and the rest of its part of the BPF config C,
 * once the Go offsets GO_OFFS (GO_FIELD__COUNT of them) are known. A side whose required offsets
 * are missing is left out, and the log says so.
 */
void grpc__configure(struct analysis *a, struct grpc_target *g, const struct offsets *grpc_tables,
		     const int64_t *go_offs, struct target_config *c);

void grpc__release(struct grpc_target *g);

#endif
