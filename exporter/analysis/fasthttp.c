// SPDX-License-Identifier: MIT
/*
 * fasthttp in a target (fasthttp.h). Its server loop ((*Server).serveConn, serveConnCounted from
 * v1.78) reads each request's line and headers, then its body with a direct CALL of
 * (*Request).readLimitBody (readBodyStream when the server streams bodies), the RequestCtx's
 * Request in the first argument register; after the handler it writes the answer with a direct
 * CALL of writeResponse(ctx, bw), or, where that is inlined (v1.40, v1.41), of
 * (*Response).Write(&ctx.Response, bw). The client's (*HostClient).Do makes each attempt with a
 * direct CALL of (*HostClient).do(req, resp) (retry bool, err error). tests/e2e/fasthttp/SITES.md
 * has the instructions of every release checked.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/analysis.h"
#include "analysis/disasm.h"
#include "analysis/fasthttp.h"
#include "analysis/gobin.h"
#include "analysis/offsets.h"
#include "analysis/sites.h"
#include "core/log.h"

#define FH_MODULE "github.com/valyala/fasthttp"
#define FH FH_MODULE "."
#define SYM_SERVE_COUNTED FH "(*Server).serveConnCounted"
#define SYM_SERVE_CONN FH "(*Server).serveConn"
#define SYM_READ_LIMIT_BODY FH "(*Request).readLimitBody"
#define SYM_READ_BODY_STREAM FH "(*Request).readBodyStream"
#define SYM_WRITE_RESPONSE FH "writeResponse"
#define SYM_RESPONSE_WRITE FH "(*Response).Write"
#define SYM_HOSTCLIENT_DO FH "(*HostClient).do"
/* The methods that tell a *net.TCPConn in a net.Conn, and a *net.TCPAddr in a net.Addr. */
#define SYM_TCPCONN_CLOSE "net.(*TCPConn).Close"
#define SYM_TCPADDR_NETWORK "net.(*TCPAddr).Network"

/* An argsKV is {key, value []byte; noValue bool}: the bool and its padding end it. */
#define ARGSKV_TAIL (24 + 8)

/* OFF + ADD, or -1 when either is unknown. */
static int64_t sum(int64_t off, int64_t add)
{
	return off < 0 || add < 0 ? -1 : off + add;
}

/*
 * The direct CALLs of CALLEE in the function LOOP into SITE: -ENOENT, quietly, when either or
 * none is (an inlined callee, which the caller may look for another way).
 */
static int calls_in(struct analysis *a, const char *loop, const char *callee,
		    struct probe_site *site)
{
	struct elf_symbol fn, sym;
	char why[128];
	int err;

	if (analysis__find_func(a, loop, &fn) || analysis__find_func(a, callee, &sym))
		return -ENOENT;
	site->symbol = loop;
	err = site_planner__probe_sites(a->sp, fn.addr, fn.size, SITE_CALLS_TO, sym.addr, site, why,
					sizeof(why));
	if (!err && !site->nends)
		err = -ENOENT;
	return err;
}

/* Appends the ends of FROM to those of TO; FROM is released. */
static int merge_ends(struct probe_site *to, struct probe_site *from)
{
	struct end_site *ends;

	ends = realloc(to->ends, (to->nends + from->nends) * sizeof(*ends));
	if (!ends)
		return -ENOMEM;
	memcpy(ends + to->nends, from->ends, from->nends * sizeof(*ends));
	to->ends = ends;
	to->nends += from->nends;
	probe_site__release(from);
	return 0;
}

/*
 * The server loop's sites: the CALLs that read a request's body (both kinds, where linked), and
 * those that write the answer, writeResponse's or, where it is inlined, (*Response).Write's.
 */
static int find_server(struct analysis *a, struct fasthttp_target *f)
{
	const char *loop = SYM_SERVE_COUNTED;
	struct probe_site stream = {};
	struct elf_symbol sym;
	uint64_t addr;
	size_t i;
	int err;

	if (analysis__find_func(a, loop, &sym))
		loop = SYM_SERVE_CONN;
	err = calls_in(a, loop, SYM_READ_LIMIT_BODY, &f->start);
	if (err)
		return err;
	err = calls_in(a, loop, SYM_READ_BODY_STREAM, &stream);
	if (!err)
		err = merge_ends(&f->start, &stream);
	else if (err == -ENOENT)
		err = 0;
	if (err)
		return err;
	f->start_at = calloc(f->start.nends, sizeof(*f->start_at));
	if (!f->start_at)
		return -ENOMEM;
	for (i = 0; i < f->start.nends; i++)
		if (!elf_file__offset_to_addr(a->ef, f->start.ends[i].off, &addr) &&
		    addr < (1ULL << 32))
			f->start_at[i] = addr;
	f->end_ctx = 0;
	err = calls_in(a, loop, SYM_WRITE_RESPONSE, &f->end);
	if (err == -ENOENT) {
		probe_site__release(&f->end);
		f->end_ctx = f->offs[FASTHTTP_FIELD_CTX_RESPONSE];
		err = calls_in(a, loop, SYM_RESPONSE_WRITE, &f->end);
	}
	return err;
}

/*
 * The client's attempts: (*HostClient).do's entry, and its ends moved after its direct CALLs,
 * where the error's itab is in BX (after the retry flag) and its data word in CX.
 */
static int find_client(struct analysis *a, struct fasthttp_target *f)
{
	int err;

	err = analysis__find_site(a, SYM_HOSTCLIENT_DO, &f->client, SITE_RETS, 0);
	if (!err && site_planner_policy == SITES_BEST)
		err = analysis__caller_ends(a, &f->client,
					    FIND_CALLS_NOT_DYNAMIC | FIND_CALLS_ENTRY_IN_CALLERS,
					    AFTER_CALL_KEEP_PAIR, X86_BX);
	return err;
}

static void drop(struct probe_site *s)
{
	probe_site__release(s);
	s->addr = 0;
}

/* Whether the offsets the server's probes cannot go without are known. */
static bool server_readable(const struct fasthttp_target *f)
{
	const int64_t *o = f->offs;

	return o[FASTHTTP_FIELD_CTX_REQUEST] >= 0 && o[FASTHTTP_FIELD_CTX_RESPONSE] >= 0 &&
	       sum(o[FASTHTTP_FIELD_REQ_HEADER], o[FASTHTTP_FIELD_RH_METHOD]) >= 0 &&
	       sum(o[FASTHTTP_FIELD_REQ_HEADER], o[FASTHTTP_FIELD_RH_REQUEST_URI]) >= 0 &&
	       sum(o[FASTHTTP_FIELD_RESP_HEADER], o[FASTHTTP_FIELD_RESPH_STATUS_CODE]) >= 0;
}

/* Whether those of the client's are. */
static bool client_readable(const struct fasthttp_target *f)
{
	const int64_t *o = f->offs;

	return sum(o[FASTHTTP_FIELD_REQ_HEADER], o[FASTHTTP_FIELD_RH_METHOD]) >= 0 &&
	       sum(o[FASTHTTP_FIELD_REQ_URI], o[FASTHTTP_FIELD_URI_PATH]) >= 0 &&
	       sum(o[FASTHTTP_FIELD_REQ_URI], o[FASTHTTP_FIELD_URI_HOST]) >= 0 &&
	       sum(o[FASTHTTP_FIELD_RESP_HEADER], o[FASTHTTP_FIELD_RESPH_STATUS_CODE]) >= 0;
}

int fasthttp__find(struct analysis *a, const struct module_tables *modules,
		   struct fasthttp_target *f)
{
	const char *version = gobin__module_version(a->gobin, FH_MODULE);
	int err;

	memset(f, 0, sizeof(*f));
	f->server_steps = f->client_steps = -1;
	if (!version)
		return 0;
	snprintf(f->version, sizeof(f->version), "%s", version);
	err = module_offsets__for_binary(modules ? modules->fasthttp : NULL, FH_MODULE, a->path,
					 a->gobin, f->offs, f->offsets, sizeof(f->offsets));
	if (err == -ENOMEM)
		return err;
	if (err) {
		pr_warn("'%s' uses fasthttp %s, whose structs gospan cannot read (no DWARF and no "
			"offset table row): its requests and calls are not traced",
			a->path, version);
		return 0;
	}
	err = server_readable(f) ? find_server(a, f) : -ENODATA;
	if (err == -ENOMEM)
		return err;
	if (err) {
		if (err != -ENOENT || f->start.nends)
			pr_warn("'%s' uses fasthttp %s, but its server could not be probed (%s): "
				"no fasthttp server spans",
				a->path, version, strerror(-err));
		drop(&f->start);
		drop(&f->end);
		free(f->start_at);
		f->start_at = NULL;
	}
	err = client_readable(f) ? find_client(a, f) : -ENODATA;
	if (err == -ENOMEM)
		return err;
	if (err) {
		if (err != -ENOENT)
			pr_warn("'%s' uses fasthttp %s, but its client could not be probed (%s): "
				"no fasthttp client spans",
				a->path, version, strerror(-err));
		drop(&f->client);
	}
	if (f->start.addr)
		f->server_steps = probe_site__stepped(&f->start, true) + probe_site__stepped(&f->end, true);
	if (f->client.addr)
		f->client_steps = probe_site__stepped(&f->client, true);
	return 0;
}

/* The link-time address of the function SYMBOL; 0: none. */
static uint64_t func_addr(struct analysis *a, const char *symbol)
{
	struct elf_symbol sym;

	return analysis__find_func(a, symbol, &sym) ? 0 : sym.addr;
}

void fasthttp__configure(struct analysis *a, struct fasthttp_target *f, const int64_t *go_offs,
			 struct target_config *c)
{
	const int64_t *o = f->offs;
	int64_t req_hdr = o[FASTHTTP_FIELD_REQ_HEADER], resp_hdr = o[FASTHTTP_FIELD_RESP_HEADER];
	int64_t uri = o[FASTHTTP_FIELD_REQ_URI], shared;

	c->fasthttp_server = f->start.addr != 0;
	c->fasthttp_client = f->client.addr != 0;
	if (!c->fasthttp_server && !c->fasthttp_client)
		return;
	c->fh_ctx_request = o[FASTHTTP_FIELD_CTX_REQUEST];
	c->fh_ctx_response = o[FASTHTTP_FIELD_CTX_RESPONSE];
	c->fh_ctx_conn = o[FASTHTTP_FIELD_CTX_CONN];
	c->fh_end_ctx = f->end_ctx;
	c->fh_req_method = sum(req_hdr, o[FASTHTTP_FIELD_RH_METHOD]);
	c->fh_req_uri = sum(req_hdr, o[FASTHTTP_FIELD_RH_REQUEST_URI]);
	c->fh_req_host = sum(req_hdr, o[FASTHTTP_FIELD_RH_HOST]);
	/* Later releases keep what requests and responses share in an embedded header struct. */
	if (o[FASTHTTP_FIELD_RH_HEADER] >= 0) {
		shared = sum(req_hdr, o[FASTHTTP_FIELD_RH_HEADER]);
		c->fh_req_proto = sum(shared, o[FASTHTTP_FIELD_HEADER_PROTOCOL]);
		c->fh_req_headers = sum(shared, o[FASTHTTP_FIELD_HEADER_H]);
		c->fh_req_content_length = sum(shared, o[FASTHTTP_FIELD_HEADER_CONTENT_LENGTH]);
	} else {
		c->fh_req_proto = sum(req_hdr, o[FASTHTTP_FIELD_RH_PROTO]);
		c->fh_req_headers = sum(req_hdr, o[FASTHTTP_FIELD_RH_H]);
		c->fh_req_content_length = sum(req_hdr, o[FASTHTTP_FIELD_RH_CONTENT_LENGTH]);
	}
	if (o[FASTHTTP_FIELD_RESPH_HEADER] >= 0)
		c->fh_resp_proto = sum(sum(resp_hdr, o[FASTHTTP_FIELD_RESPH_HEADER]),
				       o[FASTHTTP_FIELD_HEADER_PROTOCOL]);
	else
		c->fh_resp_proto = sum(resp_hdr, o[FASTHTTP_FIELD_RESPH_PROTOCOL]);
	c->fh_req_tls = o[FASTHTTP_FIELD_REQ_IS_TLS];
	c->fh_uri_scheme = sum(uri, o[FASTHTTP_FIELD_URI_SCHEME]);
	c->fh_uri_host = sum(uri, o[FASTHTTP_FIELD_URI_HOST]);
	c->fh_uri_path = sum(uri, o[FASTHTTP_FIELD_URI_PATH]);
	c->fh_uri_query = sum(uri, o[FASTHTTP_FIELD_URI_QUERY]);
	c->fh_resp_status = sum(resp_hdr, o[FASTHTTP_FIELD_RESPH_STATUS_CODE]);
	c->fh_kv_key = o[FASTHTTP_FIELD_KV_KEY];
	c->fh_kv_value = o[FASTHTTP_FIELD_KV_VALUE];
	c->fh_kv_size = sum(c->fh_kv_value, ARGSKV_TAIL);
	c->conn_fd = o[FASTHTTP_FIELD_CONN_FD];
	c->netfd_raddr = o[FASTHTTP_FIELD_NETFD_RADDR];
	/* What gRPC's probes also read, when the binary has no gRPC to set them. */
	c->tcpaddr_ip = go_offs[GO_FIELD_TCPADDR_IP];
	c->tcpaddr_port = go_offs[GO_FIELD_TCPADDR_PORT];
	if (!c->fn_tcpaddr_network)
		c->fn_tcpaddr_network = func_addr(a, SYM_TCPADDR_NETWORK);
	c->fn_tcpconn_close = func_addr(a, SYM_TCPCONN_CLOSE);
}

bool fasthttp__serves(const struct fasthttp_target *f)
{
	return f->start.addr != 0;
}

void fasthttp__release(struct fasthttp_target *f)
{
	probe_site__release(&f->start);
	probe_site__release(&f->end);
	probe_site__release(&f->client);
	free(f->start_at);
	f->start_at = NULL;
}
