// SPDX-License-Identifier: MIT
/*
 * gRPC (google.golang.org/grpc) in a target (grpc.h): where its server and client calls are
 * probed (bpf/grpc.bpf.c), where a call's trace context meets its HEADERS frame, and the offsets
 * of grpc-go's structs, from the binary's DWARF or the grpc-go table.
 */
#include <stdio.h>
#include <string.h>

#include "analysis/analysis.h"
#include "analysis/fields.h"
#include "analysis/gobin.h"
#include "analysis/grpc.h"
#include "analysis/offsets.h"
#include "analysis/planner.h"
#include "analysis/sites.h"
#include "core/log.h"

#define GRPC_MODULE "google.golang.org/grpc"
#define SYM_GRPC_HANDLE_STREAM "google.golang.org/grpc.(*Server).handleStream"
/* The HTTP/2 transport's status writer: writeStatus since ServerStream came, WriteStatus before. */
#define SYM_GRPC_WRITE_STATUS "google.golang.org/grpc/internal/transport.(*http2Server).writeStatus"
#define SYM_GRPC_WRITE_STATUS_OLD \
	"google.golang.org/grpc/internal/transport.(*http2Server).WriteStatus"
#define SYM_GRPC_HANDLER_WRITE_STATUS \
	"google.golang.org/grpc/internal/transport.(*serverHandlerTransport).writeStatus"
#define SYM_GRPC_HANDLER_WRITE_STATUS_OLD \
	"google.golang.org/grpc/internal/transport.(*serverHandlerTransport).WriteStatus"
#define SYM_GRPC_NEW_CLIENT_STREAM "google.golang.org/grpc.newClientStream"
#define SYM_GRPC_NEW_ATTEMPT "google.golang.org/grpc.(*clientStream).newAttemptLocked"
#define SYM_GRPC_ATTEMPT_FINISH "google.golang.org/grpc.(*csAttempt).finish"
#define SYM_GRPC_HEADER_FIELDS \
	"google.golang.org/grpc/internal/transport.(*http2Client).createHeaderFields"
#define SYM_GRPC_WRITE_HEADER "google.golang.org/grpc/internal/transport.(*loopyWriter).writeHeader"
#define SYM_GRPC_ORIGINATE_STREAM \
	"google.golang.org/grpc/internal/transport.(*loopyWriter).originateStream"
/* Where originateStream is inlined (newer releases), its caller: the client's header handler. */
#define SYM_GRPC_CLIENT_HEADER_HANDLER \
	"google.golang.org/grpc/internal/transport.(*loopyWriter).clientHeaderHandler"
/* Methods whose addresses identify interface values in BPF (bpf/grpc.bpf.c). */
#define SYM_VALUECTX_VALUE "context.(*valueCtx).Value"
#define SYM_TCPADDR_NETWORK "net.(*TCPAddr).Network"
#define SYM_STATUS_ERROR "google.golang.org/grpc/internal/status.(*Error).Error"
#define SYM_ERROR_STRING "errors.(*errorString).Error"

static uint64_t method_addr(struct analysis *a, const char *symbol)
{
	struct elf_symbol sym;

	return analysis__find_func(a, symbol, &sym) ? 0 : sym.addr;
}

/* The link-time address SITE's entry is probed at; 0 when it is probed in its callers. */
static uint64_t entry_addr(struct analysis *a, const struct probe_site *site)
{
	uint64_t addr;

	if (!site->addr || site->nentry_calls ||
	    elf_file__offset_to_addr(a->ef, site->entry_off, &addr))
		return 0;
	return addr;
}

/*
 * Where a gRPC call's context is tied to its HEADERS frame: createHeaderFields' result (the
 * header fields' slice, in AX where it has returned: an unexported method called directly) on
 * the calling goroutine, and the writer goroutine's call of writeHeader for a client's new stream,
 * in originateStream or, where that is inlined, in the client's header handler. A server's
 * answers go through the same writeHeader: probing its entry would cost every RPC served two hits
 * for nothing.
 */
static int find_grpc_context_sites(struct analysis *a, struct grpc_target *g)
{
	const char *writer = SYM_GRPC_ORIGINATE_STREAM;
	struct elf_symbol write_header, sym;
	int err;

	err = analysis__site(a, SYM_GRPC_HEADER_FIELDS, &g->header_fields, SITE_RETS, 0);
	if (!err && site_planner_policy == SITES_BEST)
		err = site_planner__caller_ends(a->sp, &g->header_fields, FIND_CALLS_NOT_DYNAMIC, 0, X86_AX);
	if (!err)
		err = analysis__find_func(a, SYM_GRPC_WRITE_HEADER, &write_header);
	if (!err && analysis__find_func(a, writer, &sym))
		writer = SYM_GRPC_CLIENT_HEADER_HANDLER;
	if (!err)
		err = analysis__site(a, writer, &g->write_header, SITE_CALLS_TO, write_header.addr);
	return err;
}

/*
 * gRPC's probe sites, when the binary uses grpc-go. The server side needs handleStream's entry
 * and the transport's status writer, where the RPC ends; the client side newClientStream,
 * newAttemptLocked and the attempt's finish; outgoing context, find_grpc_context_sites(). A part
 * missing leaves its side untraced (or without context), and the log says so.
 */
void grpc__find_sites(struct analysis *a, struct grpc_target *g)
{
	const char *version = gobin__module_version(a->gobin, GRPC_MODULE);
	const char *status_sym = SYM_GRPC_WRITE_STATUS;
	const char *handler_status_sym = SYM_GRPC_HANDLER_WRITE_STATUS;
	struct elf_symbol sym;

	g->server_steps = g->client_steps = -1;
	if (!version)
		return;
	snprintf(g->version, sizeof(g->version), "%s", version);
	if (analysis__find_func(a, status_sym, &sym))
		status_sym = SYM_GRPC_WRITE_STATUS_OLD;
	if (analysis__find_func(a, handler_status_sym, &sym))
		handler_status_sym = SYM_GRPC_HANDLER_WRITE_STATUS_OLD;
	/*
	 * The RPC ends where the transport writes its status: the entry of its writer, which the
	 * kernel emulates, where handleStream's own end in its caller is followed by deferred
	 * calls and a RET, single-stepped. A stream served through ServeHTTP (grpc-go's
	 * serverHandlerTransport) has a status writer of its own, probed when it is linked.
	 */
	if (!analysis__find_func(a, SYM_GRPC_HANDLE_STREAM, &sym)) {
		if (analysis__site(a, SYM_GRPC_HANDLE_STREAM, &g->handle_stream, SITE_ENTRY, 0) ||
		    analysis__site(a, status_sym, &g->write_status, SITE_ENTRY, 0)) {
			pr_warn("'%s' serves gRPC (grpc-go %s) but its server could not be "
				"probed: no gRPC server spans",
				a->path, version);
			g->handle_stream.addr = g->write_status.addr = 0;
		} else if (!analysis__find_func(a, handler_status_sym, &sym) &&
			   analysis__site(a, handler_status_sym, &g->handler_write_status, SITE_ENTRY, 0)) {
			g->handler_write_status.addr = 0;
		}
	}
	if (!analysis__find_func(a, SYM_GRPC_NEW_CLIENT_STREAM, &sym)) {
		if (analysis__site(a, SYM_GRPC_NEW_CLIENT_STREAM, &g->new_stream, SITE_ENTRY, 0) ||
		    analysis__site(a, SYM_GRPC_NEW_ATTEMPT, &g->new_attempt, SITE_ENTRY, 0) ||
		    analysis__site(a, SYM_GRPC_ATTEMPT_FINISH, &g->attempt_finish, SITE_ENTRY, 0)) {
			pr_warn("'%s' makes gRPC calls (grpc-go %s) but its client could not be "
				"probed: no gRPC client spans",
				a->path, version);
			g->new_stream.addr = g->new_attempt.addr = g->attempt_finish.addr = 0;
		}
	}
	if (g->new_stream.addr && find_grpc_context_sites(a, g)) {
		pr_warn("'%s': where grpc-go %s writes a call's headers was not found: gRPC calls "
			"will not carry trace context",
			a->path, version);
		g->header_fields.addr = g->write_header.addr = 0;
	}
	g->fn_valuectx_value = method_addr(a, SYM_VALUECTX_VALUE);
	g->fn_tcpaddr_network = method_addr(a, SYM_TCPADDR_NETWORK);
	g->fn_status_error = method_addr(a, SYM_STATUS_ERROR);
	g->fn_error_string = method_addr(a, SYM_ERROR_STRING);
}

/* A gRPC offset, or -1 when OFF or BASE is unknown: BASE is where the struct lies in another. */
static int64_t nested(int64_t base, int64_t off)
{
	return base < 0 || off < 0 ? -1 : base + off;
}

/*
 * gRPC's offsets (DWARF, else the grpc-go table) into the BPF config. A side whose required
 * offsets are missing is not traced, and the log says so.
 */
static void pick_offsets(struct analysis *a, struct grpc_target *g,
			 const struct offsets *grpc_tables, const int64_t *go_offs,
			 struct target_config *c)
{
	int64_t o[GRPC_FIELD__COUNT];
	int64_t stream, status;
	int err;

	if (!g->handle_stream.addr && !g->new_stream.addr)
		return;
	err = grpc_offsets__for_binary(grpc_tables, a->path, a->gobin, o, g->offsets_desc,
				       sizeof(g->offsets_desc));
	if (err) {
		pr_warn("'%s' uses grpc-go %s, whose struct layouts gospan does not know (no DWARF "
			"and no offset table row): gRPC is not traced; 'make offsets' adds newer "
			"releases",
			a->path, g->version);
		g->handle_stream.addr = g->write_status.addr = g->handler_write_status.addr = 0;
		g->new_stream.addr = g->new_attempt.addr = g->attempt_finish.addr = 0;
		g->header_fields.addr = g->write_header.addr = 0;
		return;
	}
	g->offsets_source = g->offsets_desc;
	/*
	 * Newer releases hand handleStream a *ServerStream, which embeds the Stream: as a pointer
	 * from 1.69 to 1.76, followed in BPF, and as a value since.
	 */
	c->grpc_stream_deref = o[GRPC_FIELD_SERVER_STREAM_STREAM_PTR];
	stream = c->grpc_stream_deref >= 0 ? 0 :
		 o[GRPC_FIELD_SERVER_STREAM_STREAM] >= 0 ? o[GRPC_FIELD_SERVER_STREAM_STREAM] :
							    0;
	c->grpc_stream_method = nested(stream, o[GRPC_FIELD_STREAM_METHOD]);
	c->grpc_stream_ctx = nested(stream, o[GRPC_FIELD_STREAM_CTX]);
	if (o[GRPC_FIELD_HTTP2SERVER_PEER] >= 0) {
		c->grpc_st_remote_addr = nested(o[GRPC_FIELD_HTTP2SERVER_PEER], o[GRPC_FIELD_PEER_ADDR]);
		c->grpc_st_local_addr =
			nested(o[GRPC_FIELD_HTTP2SERVER_PEER], o[GRPC_FIELD_PEER_LOCAL_ADDR]);
	} else {
		c->grpc_st_remote_addr = o[GRPC_FIELD_HTTP2SERVER_REMOTE_ADDR];
		c->grpc_st_local_addr = o[GRPC_FIELD_HTTP2SERVER_LOCAL_ADDR];
	}
	c->grpc_status_proto = o[GRPC_FIELD_STATUS_S];
	c->grpc_proto_code = o[GRPC_FIELD_SPB_CODE];
	c->grpc_proto_message = o[GRPC_FIELD_SPB_MESSAGE];
	c->grpc_error_status = o[GRPC_FIELD_ERROR_S];
	c->grpc_attempt_cs = o[GRPC_FIELD_CSATTEMPT_CS];
	c->grpc_cc_target = o[GRPC_FIELD_CLIENTCONN_TARGET];
	c->tcpaddr_ip = go_offs[GO_FIELD_TCPADDR_IP];
	c->tcpaddr_port = go_offs[GO_FIELD_TCPADDR_PORT];
	c->valuectx_key = go_offs[GO_FIELD_VALUECTX_KEY];
	c->valuectx_val = go_offs[GO_FIELD_VALUECTX_VAL];
	if (c->tcpaddr_ip < 0 || c->tcpaddr_port < 0)
		c->grpc_st_remote_addr = c->grpc_st_local_addr = -1;
	status = c->grpc_status_proto >= 0 && c->grpc_proto_code >= 0 ? 0 : -1;
	if (g->handle_stream.addr && (c->grpc_stream_method < 0 || status < 0)) {
		pr_warn("'%s': no offsets for grpc-go %s's streams or statuses: no gRPC server "
			"spans",
			a->path, g->version);
		g->handle_stream.addr = g->write_status.addr = g->handler_write_status.addr = 0;
	}
	if (g->new_stream.addr && (c->grpc_attempt_cs < 0 || status < 0 ||
				   c->grpc_error_status < 0)) {
		pr_warn("'%s': no offsets for grpc-go %s's client streams: no gRPC client spans",
			a->path, g->version);
		g->new_stream.addr = g->new_attempt.addr = g->attempt_finish.addr = 0;
		g->header_fields.addr = g->write_header.addr = 0;
	}
}

/* The gRPC part of the BPF config: which sides run, and what identifies interface values. */
static void fill_config(struct analysis *a, struct grpc_target *g, struct target_config *c)
{

	c->grpc_server = g->handle_stream.addr != 0;
	c->grpc_client = g->new_stream.addr != 0;
	c->fn_valuectx_value = g->fn_valuectx_value;
	c->fn_tcpaddr_network = g->fn_tcpaddr_network;
	c->fn_status_error = g->fn_status_error;
	c->fn_error_string = g->fn_error_string;
	c->grpc_server_entry_at = entry_addr(a, &g->handle_stream);
	c->grpc_finish_at = entry_addr(a, &g->attempt_finish);
	/* Entries are emulated or not; each side's calls pass each of its probes once. */
	if (c->grpc_server)
		g->server_steps = !g->handle_stream.entry_emulated + !g->write_status.entry_emulated;
	if (c->grpc_client)
		g->client_steps = !g->new_stream.entry_emulated +
				  !g->new_attempt.entry_emulated +
				  !g->attempt_finish.entry_emulated;
}

void grpc__configure(struct analysis *a, struct grpc_target *g, const struct offsets *grpc_tables,
		     const int64_t *go_offs, struct target_config *c)
{
	pick_offsets(a, g, grpc_tables, go_offs, c);
	fill_config(a, g, c);
}

void grpc__release(struct grpc_target *g)
{
	struct probe_site *all[] = { &g->handle_stream,  &g->write_status, &g->handler_write_status,
				     &g->new_stream,	  &g->new_attempt,  &g->attempt_finish,
				     &g->header_fields, &g->write_header };
	size_t i;

	for (i = 0; i < sizeof(all) / sizeof(all[0]); i++)
		probe_site__release(all[i]);
}
