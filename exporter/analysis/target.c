// SPDX-License-Identifier: MIT
/*
 * Target analysis: decides where to probe a Go binary and with which struct offsets. The order is
 * cheapest-refusal first: not ELF, not Go, Go too old, no net/http, then the costly parts (symbol
 * lookup, disassembly, offset tables).
 */
#include <elf.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/analysis.h"
#include "analysis/datastores.h"
#include "analysis/planner.h"
#include "analysis/sites.h"
#include "analysis/disasm.h"
#include "analysis/dwarf.h"
#include "analysis/elf.h"
#include "analysis/gobin.h"
#include "core/log.h"
#include "analysis/pclntab.h"
#include "analysis/target.h"

#define SYM_SERVE_HTTP "net/http.serverHandler.ServeHTTP"
#define SYM_HTTP2_HANDLER "net/http.http2Handler.ServeHTTP"
#define SYM_CONN_SERVE "net/http.(*conn).serve"
#define SYM_GOPANIC "runtime.gopanic"
#define SYM_RESPONSE_ITAB "go:itab.*net/http.response,net/http.ResponseWriter"
#define SYM_H2_WRITER_ITAB "go:itab.*net/http.http2responseWriter,net/http.ResponseWriter"
/* From Go 1.27: a one-pointer struct wrapping net/http/internal/http2's writer. */
#define SYM_H2_WRITER_ITAB_127 "go:itab.net/http.http2ResponseWriter,net/http.ResponseWriter"
#define SYM_ROUND_TRIP "net/http.(*Transport).roundTrip"
#define SYM_PCONN_ROUND_TRIP "net/http.(*persistConn).roundTrip"
#define SYM_REQUEST_WRITE "net/http.(*Request).write"
#define SYM_WRITE_SUBSET "net/http.Header.writeSubset"
#define SYM_NEWPROC1 "runtime.newproc1"
#define SYM_RUNTIME_MAIN "runtime.main"
#define SYM_BUFIO_ITAB "go:itab.*bufio.Writer,io.Writer"
#define SYM_TLSG "runtime.tlsg"
/* Up to Go 1.26, net/http's HTTP/2 server calls ServeHTTP through these, in tail position. */
#define SYM_H2_WRAPPER_TLS "net/http.initALPNRequest.ServeHTTP"
#define SYM_H2_WRAPPER_H2C "net/http.unencryptedHTTP2Request.ServeHTTP"



/*
 * Layout of map[string][]string storage, from the sizes of its key (a string: 16 bytes) and value
 * (a slice: 24 bytes) and the runtime's rules, which DWARF does not describe as a struct.
 * Buckets (Go <= 1.23): 8 tophash bytes, 8 keys, 8 values, an overflow pointer; hmap.oldbuckets
 * follows hmap.buckets. Swiss groups (Go 1.24+): an 8-byte control word, then 8 key/value slots.
 */
#define GO_STRING_SIZE 16
#define GO_SLICE_SIZE 24
#define MAP_SLOTS 8

/* Fields without which no server span can be built. */
/* The goroutine id first: it is all that function spans need. */
static const enum go_field required_fields[] = {
	GO_FIELD_G_GOID,	GO_FIELD_REQ_METHOD,	  GO_FIELD_REQ_URL,
	GO_FIELD_REQ_PROTO,	GO_FIELD_REQ_HOST,	  GO_FIELD_REQ_REMOTE_ADDR,
	GO_FIELD_REQ_TLS,	GO_FIELD_REQ_CONTENT_LENGTH, GO_FIELD_URL_PATH,
	GO_FIELD_RESPONSE_STATUS,
};

/*
 * The offsets: from the binary's own DWARF when it has some (exact for whatever Go built it,
 * including releases newer than the tables), else from the tables for its Go version. Where both
 * exist and disagree, DWARF wins and the difference is logged: it means a table is wrong.
 */
static int pick_offsets(struct target *t, const struct offsets *tables)
{
	const struct gobin *gb = t->gobin;
	int64_t table[GO_FIELD__COUNT], dw[GO_FIELD__COUNT];
	bool have_table, have_dwarf;
	size_t i;
	int err;

	have_table = !offsets__find(tables, gb->major, gb->minor, gb->patch, table,
				    &t->offsets_version);
	err = dwarf__read_offsets(t->path, dw);
	have_dwarf = !err;
	if (err && err != -ENODATA && have_table)
		pr_warn("using the offset tables for '%s': its DWARF could not be read", t->path);
	if (!have_table && !have_dwarf) {
		offsets__explain_miss(tables, gb->major, gb->minor, gb->patch);
		return -ENOENT;
	}
	/*
	 * With DWARF, its answer is the whole answer, "no such member" included: a table row may
	 * be the nearest release below the target's, and describe a layout it no longer has.
	 */
	for (i = 0; i < GO_FIELD__COUNT; i++) {
		/*
		 * DWARF's -1 is most often a part of the library the binary does not link (a gRPC
		 * service without net/http's server has no http.response): no reason to warn.
		 */
		if (have_dwarf && have_table && dw[i] >= 0 && table[i] != dw[i])
			pr_warn("'%s' is at offset %lld in the DWARF of '%s' but %lld in the table "
				"for Go %s: using DWARF (-1: absent)",
				go_field_names[i], (long long)dw[i], t->path, (long long)table[i],
				t->offsets_version);
		t->offs[i] = have_dwarf ? dw[i] : table[i];
	}
	t->offsets_source = have_dwarf ? "DWARF" : "table";
	/* Without net/http's server only the goroutine id is needed (function spans). */
	for (i = 0; i < (t->serve_http.addr ? sizeof(required_fields) / sizeof(required_fields[0]) :
					      1);
	     i++) {
		if (t->offs[required_fields[i]] < 0) {
			pr_err("cannot trace '%s' (Go %d.%d.%d): no offset for '%s' in its %s",
			       t->path, gb->major, gb->minor, gb->patch,
			       go_field_names[required_fields[i]],
			       have_dwarf ? "DWARF or the tables" : "offset table");
			return -ENOENT;
		}
	}
	return 0;
}

/*
 * (*Transport).roundTrip's only caller, RoundTrip, calls it in tail position, where nothing the
 * kernel emulates follows the return. Its usual way out is after (*persistConn).roundTrip (or
 * the HTTP/2 transport's RoundTrip) returns no error: that JE or JNE becomes the end of a call
 * that succeeded (the client_success program reads the results the test just saw), and only the
 * RETs of the other ways out (errors, which may first retry) keep their probes.
 */
static int plan_success_end(struct analysis *a, struct probe_site *site, const char *inner)
{
	struct elf_symbol fn, callee;
	struct insns ins = {};
	struct end_site end;
	uint8_t *code = NULL;
	long *excl = NULL, call = -1;
	size_t nexcl = 0, i;
	int err;

	if (site_planner_policy != SITES_BEST)
		return 0;
	site->rets_why = "its way out is not one test of an inner call's error";
	if (analysis__find_func(a, SYM_ROUND_TRIP, &fn) || analysis__find_func(a, inner, &callee))
		return 0;
	code = malloc(fn.size);
	if (!code)
		return -ENOMEM;
	err = elf_file__read_addr(a->ef, fn.addr, code, fn.size);
	if (!err)
		err = disasm__decode(a->machine, code, fn.size, fn.addr, &ins);
	if (err) {
		err = err == -ENOMEM ? err : 0;
		goto cleanup;
	}
	for (i = 0; i < ins.n; i++) {
		if (ins.v[i].kind != INSN_CALL || ins.v[i].target != callee.addr)
			continue;
		if (call >= 0)
			goto cleanup; /* two calls: which one ends the call is not plain */
		call = (long)i;
	}
	if (call < 0 || sites__success_exit(&ins, call + 1, X86_BX,
					    (1u << X86_AX) | (1u << X86_BX) | (1u << X86_CX),
					    &end, &excl, &nexcl))
		goto cleanup;
	site->ends = malloc(sizeof(*site->ends));
	if (!site->ends) {
		err = -ENOMEM;
		goto cleanup;
	}
	site->ends[0] = end;
	site->nends = 1;
	err = site_planner__ends_to_offsets(a->sp, site);
	if (err)
		goto cleanup;
	/* Keep the RETs the error-free branch does not reach. */
	site->rets_why = site_planner__drop_rets(a->sp, site, &ins, excl, nexcl) ?
				 "for the calls that fail" :
				 NULL;
cleanup:
	if (err) {
		free(site->ends);
		site->ends = NULL;
		site->nends = 0;
	}
	free(excl);
	disasm__insns_free(&ins);
	free(code);
	return err;
}

static int find_site(struct analysis *a, const char *symbol, struct probe_site *site,
		     bool want_rets)
{
	return analysis__site(a, symbol, site, want_rets ? SITE_RETS : SITE_ENTRY, 0);
}

/*
 * The HTTP/2 servers that run net/http's handlers: net/http's bundled copy (Go 1.17 to 1.26),
 * net/http/internal/http2 (1.27 on), and golang.org/x/net/http2 where a service configures it
 * (http2.ConfigureServer). Each runs a request's handler on a goroutine of its own, in
 * runHandler, whose deferred closure calls the writer's handlerDone only when the handler
 * returned (didPanic false): the direct CALL of it, emulated, ends the request on that goroutine
 * after ServeHTTP and the wrappers above it returned, before handlerDone flushes the response
 * and gives the writer's state (the status) back to a pool. A handler that panics through
 * runHandler runs the closure without reaching that CALL: gopanic's probe ends such a request.
 * WRAPPED: whether it reaches ServeHTTP through the wrappers SYM_H2_WRAPPER_*, whose ends it
 * makes useless (from Go 1.27 net/http's own server calls http2Handler.ServeHTTP instead).
 */
static const struct h2_server {
	const char *run_handler; /* its closures are run_handler.func1, .func2, ... */
	const char *handler_done;
	bool wrapped;
} h2_servers[] = {
	{ "net/http.(*http2serverConn).runHandler", "net/http.(*http2responseWriter).handlerDone",
	  true },
	{ "net/http/internal/http2.(*serverConn).runHandler",
	  "net/http/internal/http2.(*responseWriter).handlerDone", false },
	{ "golang.org/x/net/http2.(*serverConn).runHandler",
	  "golang.org/x/net/http2.(*responseWriter).handlerDone", true },
};

/* The closures of runHandler looked through: the deferred one is func1, or func2 before 1.22. */
#define H2_CLOSURES 3

/*
 * The CALL of handlerDone in S's runHandler closures: into *PAIRS (*N grown by one). -ENOENT
 * when there is not exactly one (handlerDone inlined, another shape); -EOPNOTSUPP on arm64.
 */
static int h2_done_call(struct analysis *a, const struct h2_server *s, struct call_pair **pairs,
			size_t *n)
{
	struct elf_symbol done, fn;
	size_t before = *n;
	char name[128];
	int i, err = 0;

	if (analysis__find_func(a, s->handler_done, &done))
		return -ENOENT;
	for (i = 1; !err && i <= H2_CLOSURES; i++) {
		snprintf(name, sizeof(name), "%s.func%d", s->run_handler, i);
		if (!analysis__find_func(a, name, &fn))
			err = site_planner__calls_in(a->sp, fn.addr, fn.size, done.addr, 0, -1, 0,
						     pairs, n);
	}
	if (!err && *n != before + 1)
		err = -ENOENT;
	return err;
}

/*
 * HTTP/2 requests' ends at the handlerDone CALLs of every HTTP/2 server the binary links
 * (h2_servers), instead of the single-stepped return addresses in the wrappers and, from Go
 * 1.27, http2Handler.ServeHTTP's RETs, when each server's CALL is found; otherwise those stay.
 * A custom TLSNextProto handler that calls the wrapped Handler itself would run no such CALL.
 */
static int plan_http2_ends(struct analysis *a, struct target *t)
{
	struct call_pair *pairs = NULL;
	struct probe_site h2 = {};
	struct elf_symbol fn, tls = {}, h2c = {};
	bool wrapped = false;
	size_t n = 0, i, kept;
	int err = 0;

	if (site_planner_policy != SITES_BEST || !t->serve_http.nends || t->serve_http.nrets)
		return 0;
	for (i = 0; i < sizeof(h2_servers) / sizeof(h2_servers[0]); i++) {
		if (analysis__find_func(a, h2_servers[i].run_handler, &fn))
			continue; /* not linked */
		err = h2_done_call(a, &h2_servers[i], &pairs, &n);
		if (err) {
			pr_debug("'%s': %s in the closures of %s: HTTP/2 requests end in "
				 "ServeHTTP's callers",
				 a->path,
				 err == -ENOENT ? "not one direct call of handlerDone" :
						  strerror(-err),
				 h2_servers[i].run_handler);
			err = err == -ENOMEM ? err : 0;
			goto cleanup;
		}
		wrapped |= h2_servers[i].wrapped;
	}
	if (!n)
		goto cleanup;
	h2.ends = calloc(n, sizeof(*h2.ends));
	if (!h2.ends) {
		err = -ENOMEM;
		goto cleanup;
	}
	for (i = 0; i < n; i++) {
		/* A direct CALL: the kernel emulates it; the program reads no register. */
		h2.ends[i] = (struct end_site){ .off = pairs[i].call,
						.caller = pairs[i].after.caller,
						.emulated = true,
						.result = -1 };
	}
	h2.nends = n;
	h2.symbol = "HTTP/2 runHandler closures";
	h2.addr = h2.ends[0].caller;
	probe_site__release(&t->serve_http2);
	t->serve_http2 = h2;
	if (!wrapped)
		goto cleanup;
	analysis__find_func(a, SYM_H2_WRAPPER_TLS, &tls);
	analysis__find_func(a, SYM_H2_WRAPPER_H2C, &h2c);
	for (i = kept = 0; i < t->serve_http.nends; i++) {
		uint64_t caller = t->serve_http.ends[i].caller;

		if (caller && (caller == tls.addr || caller == h2c.addr))
			continue;
		t->serve_http.ends[kept++] = t->serve_http.ends[i];
	}
	t->serve_http.nends = kept;
cleanup:
	free(pairs);
	return err;
}

/*
 * The client side: optional, a service may make no HTTP calls. Without the injection point or
 * the *bufio.Writer itab, client spans are still made but carry no trace context out.
 */
static void find_client_sites(struct analysis *a, struct target *t)
{
	struct elf_symbol callee, sym;

	if (find_site(a, SYM_ROUND_TRIP, &t->round_trip, true) ||
	    plan_success_end(a, &t->round_trip, SYM_PCONN_ROUND_TRIP)) {
		probe_site__release(&t->round_trip);
		t->round_trip.addr = 0;
		return;
	}
	if (analysis__find_func(a, SYM_WRITE_SUBSET, &callee) ||
	    analysis__site(a, SYM_REQUEST_WRITE, &t->inject, SITE_CALLS_TO, callee.addr)) {
		pr_warn("'%s': the place where requests are written was not found: client calls "
			"will not carry trace context",
			t->path);
		t->inject.addr = 0;
		return;
	}
	/*
	 * (*Request).write calls writeSubset for the request's own Header, then (inlined from
	 * Header.write) for the transport's extra headers, which every default client has
	 * (Accept-Encoding). Only the first marks a request: the other would be a probe hit per
	 * call for nothing. Go compiles them in source order; test_go_versions.py checks the
	 * context goes out on every release.
	 */
	if (t->inject.nends > 1)
		t->inject.nends = 1;
	if (a->has_symtab && !elf_file__find_symbol(a->ef, SYM_BUFIO_ITAB, &sym))
		t->bufio_itab = sym.addr;
}

/*
 * Where a thread's current g is, from its thread pointer (amd64: the FS base), for the
 * socket-layer writer, which sees threads. A Go program linked without libc sets FS itself and
 * keeps g in the word below it. Otherwise runtime.tlsg is a variable of the executable's TLS
 * block, which the x86-64 TLS ABI puts right below the thread pointer: at its offset in the
 * block less the block's size rounded up to its alignment. Stripped binaries have no symbol for
 * it: Go puts it first, and a block of Go's alone holds nothing else.
 */
static int64_t tls_g_offset(struct analysis *a)
{
	uint64_t memsz, align, in_block = 0;
	struct elf_symbol sym;

	if (elf_file__tls(a->ef, &memsz, &align))
		return -8;
	if (a->has_symtab && !elf_file__find_symbol(a->ef, SYM_TLSG, &sym))
		in_block = sym.addr;
	return (int64_t)in_block - (int64_t)((memsz + align - 1) / align * align);
}

static int64_t max_i64(int64_t a, int64_t b)
{
	return a > b ? a : b;
}

/* Where a map head word ends, or 0 when it is not a word at a multiple of 8 of the head. */
static int64_t head_word_end(int64_t off)
{
	return off >= 0 && off % 8 == 0 && off + 8 <= MAP_HEAD_MAX ? off + 8 : 0;
}

static void fill_map_layout(struct target *t)
{
	struct target_config *c = &t->cfg;
	int64_t count = -1, end = 0;

	if (t->offs[GO_FIELD_HMAP_B] >= 0 && t->offs[GO_FIELD_HMAP_BUCKETS] >= 0) {
		c->map_kind = 1;
		c->hmap_b = t->offs[GO_FIELD_HMAP_B];
		c->hmap_buckets = t->offs[GO_FIELD_HMAP_BUCKETS];
		c->hmap_oldbuckets = c->hmap_buckets + 8;
		c->bucket_keys = MAP_SLOTS;
		c->bucket_elems = c->bucket_keys + MAP_SLOTS * GO_STRING_SIZE;
		c->bucket_overflow = c->bucket_elems + MAP_SLOTS * GO_SLICE_SIZE;
		c->bucket_size = c->bucket_overflow + 8;
		count = t->offs[GO_FIELD_HMAP_COUNT];
		/* oldbuckets follows buckets: its end is theirs. */
		if (c->hmap_b < MAP_HEAD_MAX && head_word_end(c->hmap_buckets) &&
		    head_word_end(c->hmap_oldbuckets))
			end = max_i64(c->hmap_b + 1, head_word_end(c->hmap_oldbuckets));
	} else if (t->offs[GO_FIELD_SWISS_DIR_PTR] >= 0 && t->offs[GO_FIELD_SWISS_DIR_LEN] >= 0 &&
		   t->offs[GO_FIELD_SWISS_TABLE_GROUPS] >= 0 &&
		   t->offs[GO_FIELD_SWISS_GROUPS_DATA] >= 0 &&
		   t->offs[GO_FIELD_SWISS_GROUPS_MASK] >= 0) {
		c->map_kind = 2;
		c->swiss_dir_ptr = t->offs[GO_FIELD_SWISS_DIR_PTR];
		c->swiss_dir_len = t->offs[GO_FIELD_SWISS_DIR_LEN];
		c->table_groups_data =
			t->offs[GO_FIELD_SWISS_TABLE_GROUPS] + t->offs[GO_FIELD_SWISS_GROUPS_DATA];
		c->table_groups_mask =
			t->offs[GO_FIELD_SWISS_TABLE_GROUPS] + t->offs[GO_FIELD_SWISS_GROUPS_MASK];
		c->group_slots = 8;
		c->slot_size = GO_STRING_SIZE + GO_SLICE_SIZE;
		c->slot_elem = GO_STRING_SIZE;
		c->group_size = c->group_slots + MAP_SLOTS * c->slot_size;
		count = t->offs[GO_FIELD_SWISS_USED];
		if (head_word_end(c->swiss_dir_ptr) && head_word_end(c->swiss_dir_len))
			end = max_i64(head_word_end(c->swiss_dir_ptr),
				      head_word_end(c->swiss_dir_len));
	} else {
		pr_warn("'%s': the layout of its maps is unknown: incoming traceparent headers will "
			"be ignored",
			t->path);
		return;
	}
	if (!end) {
		/* Every Go release so far keeps them in its first 32 bytes. */
		pr_warn("'%s': its maps keep their head fields past %d bytes: incoming traceparent "
			"headers will be ignored",
			t->path, MAP_HEAD_MAX);
		c->map_kind = 0;
		return;
	}
	/* Without a usable count the map is walked whatever its size. */
	c->map_count = head_word_end(count) ? count : -1;
	c->map_head_size = max_i64(end, head_word_end(c->map_count));
}

static void fill_config(struct target *t)
{
	struct target_config *c = &t->cfg;

	c->g_goid = t->offs[GO_FIELD_G_GOID];
	c->req_method = t->offs[GO_FIELD_REQ_METHOD];
	c->req_url = t->offs[GO_FIELD_REQ_URL];
	c->req_proto = t->offs[GO_FIELD_REQ_PROTO];
	c->req_host = t->offs[GO_FIELD_REQ_HOST];
	c->req_remote_addr = t->offs[GO_FIELD_REQ_REMOTE_ADDR];
	c->req_content_length = t->offs[GO_FIELD_REQ_CONTENT_LENGTH];
	c->req_tls = t->offs[GO_FIELD_REQ_TLS];
	c->req_pattern = t->offs[GO_FIELD_REQ_PATTERN];
	c->req_pat = t->offs[GO_FIELD_REQ_PAT];
	c->pattern_str = t->offs[GO_FIELD_PATTERN_STR];
	c->url_path = t->offs[GO_FIELD_URL_PATH];
	c->response_status = t->offs[GO_FIELD_RESPONSE_STATUS];
	/* HTTP/2's writer: net/http's bundled copy up to Go 1.26, net/http/internal/http2 after. */
	if (t->offs[GO_FIELD_H2_RW_RWS] >= 0) {
		c->h2_rw_rws = t->offs[GO_FIELD_H2_RW_RWS];
		c->h2_rws_status = t->offs[GO_FIELD_H2_RWS_STATUS];
	} else {
		c->h2_rw_rws = t->offs[GO_FIELD_H2I_RW_RWS];
		c->h2_rws_status = t->offs[GO_FIELD_H2I_RWS_STATUS];
	}
	/*
	 * func (sh serverHandler) ServeHTTP(rw ResponseWriter, req *Request): the one-pointer
	 * receiver takes slot 1, the interface slots 2 (type word) and 3 (data word), req slot 4.
	 * The same on amd64 and arm64, which differ only in which registers the slots are.
	 */
	c->arg_rw_itab = 2;
	c->arg_rw_data = 3;
	c->arg_req = 4;

	c->req_header = t->offs[GO_FIELD_REQ_HEADER];
	/* A PIE binary's itab moves with it: the caller adds the process's load bias. */
	c->bufio_itab = t->pie ? 0 : t->bufio_itab;
	c->g_parent_goid = t->offs[GO_FIELD_G_PARENT_GOID];
	c->url_scheme = t->offs[GO_FIELD_URL_SCHEME];
	c->url_host = t->offs[GO_FIELD_URL_HOST];
	c->url_raw_query = t->offs[GO_FIELD_URL_RAW_QUERY];
	c->resp_status_code = t->offs[GO_FIELD_RESP_STATUS_CODE];
	c->resp_proto = t->offs[GO_FIELD_RESP_PROTO];
	c->bufio_n = t->offs[GO_FIELD_BUFIO_N];
	fill_map_layout(t);
	/* (t *Transport) roundTrip(req *Request) (*Response, error) */
	c->arg_rt_req = 2;
	c->ret_rt_resp = 1;
	c->ret_rt_err = 2;
	/* (h Header) writeSubset(w io.Writer, ...): the map, then the interface's two words */
	c->arg_ws_header = 1;
	c->arg_ws_w_itab = 2;
	c->arg_ws_w_data = 3;
	/* newproc1(...) *g */
	c->ret_newproc_g = 1;
}

/* The link-time address of SYMBOL, a method whose address BPF compares with itab words; 0: none. */
/* What target.server_steps, http2_steps and client_steps say. */
static void count_steps(struct analysis *a, struct target *t)
{
	struct elf_symbol serve = {}, wrapper = {};
	size_t i;

	t->server_steps = t->client_steps = t->http2_steps = t->client_fail_steps = -1;
	if (t->serve_http.addr) {
		analysis__find_func(a, SYM_CONN_SERVE, &serve);
		t->server_steps = probe_site__steps(&t->serve_http, serve.addr, false);
	}
	/* HTTP/2: the entry, then its own end, else the TLS wrapper's (h2c's costs the same). */
	for (i = 0; t->serve_http.addr && i < sizeof(h2_servers) / sizeof(h2_servers[0]); i++) {
		if (analysis__find_func(a, h2_servers[i].run_handler, &serve))
			continue;
		if (t->serve_http2.addr)
			t->http2_steps = !t->serve_http.entry_emulated +
					 probe_site__stepped(&t->serve_http2, false);
		else if (!analysis__find_func(a, SYM_H2_WRAPPER_TLS, &wrapper))
			t->http2_steps = probe_site__steps(&t->serve_http, wrapper.addr, false);
		break;
	}
	/*
	 * The request marker is a direct CALL: emulated. A call that fails leaves through one of
	 * roundTrip's RETs: its only caller returns at once and is reached through the
	 * RoundTripper interface, so no emulated end after them can be found.
	 */
	if (t->round_trip.addr) {
		t->client_steps = probe_site__steps(&t->round_trip, 0, true);
		t->client_fail_steps = probe_site__steps(&t->round_trip, 0, false);
	}
}

struct target *target__analyse(const char *path, const char *exe_name, const struct offsets *tables,
			       const struct module_tables *modules, bool need_http)
{
	struct analysis a = {};
	struct elf_file *ef = NULL;
	struct elf_symbol sym;
	struct target *t;
	const char *base;
	int err;

	t = calloc(1, sizeof(*t));
	if (!t)
		return NULL;
	base = exe_name ? exe_name : strrchr(path, '/');
	if (!exe_name)
		base = base ? base + 1 : path;
	t->path = strdup(path);
	t->exe_name = strdup(base);
	if (!t->path || !t->exe_name) {
		err = -ENOMEM;
		goto cleanup;
	}

	ef = elf_file__open(path);
	if (!ef) {
		err = -errno;
		goto cleanup;
	}
	t->machine = elf_file__machine(ef);
	t->pie = elf_file__is_pie(ef);
	if (t->pie && elf_file__offset_to_addr(ef, 0, &t->link_base)) {
		pr_err("cannot trace '%s': no loadable segment maps the start of the file", path);
		err = -EINVAL;
		goto cleanup;
	}
	if (t->machine != EM_X86_64 && t->machine != EM_AARCH64) {
		pr_err("cannot trace '%s': unsupported machine %u (amd64 and arm64 are supported)",
		       path, t->machine);
		err = -EOPNOTSUPP;
		goto cleanup;
	}
#if defined(__x86_64__)
	if (t->machine != EM_X86_64) {
#elif defined(__aarch64__)
	if (t->machine != EM_AARCH64) {
#else
	if (1) {
#endif
		pr_err("cannot trace '%s': it is built for another architecture than this machine",
		       path);
		err = -EOPNOTSUPP;
		goto cleanup;
	}

	t->gobin = gobin__read(ef);
	if (!t->gobin) {
		err = -errno;
		goto cleanup;
	}
	if (!t->gobin->major) {
		pr_err("cannot trace '%s': built with '%s', not a Go release gospan can identify",
		       path, t->gobin->go_version);
		err = -EOPNOTSUPP;
		goto cleanup;
	}
	err = gobin__check_abi(t->gobin, t->machine, path);
	if (err)
		goto cleanup;

	err = analysis__init(&a, ef, t->path, t->gobin);
	if (err)
		goto cleanup;
	err = find_site(&a, SYM_SERVE_HTTP, &t->serve_http, true);
	/*
	 * Its callers: conn.serve for HTTP/1, whose next direct call (hijacked) follows the request
	 * context's cancel, and the HTTP/2 wrappers, whose ends are their own return addresses.
	 * Nothing in net/http makes a serverHandler an interface value at run time.
	 */
	if (!err && site_planner_policy == SITES_BEST)
		err = site_planner__caller_ends(a.sp, &t->serve_http, FIND_CALLS_NOT_DYNAMIC,
				       AFTER_CALL_PASS_CALLS, -1);
	/*
	 * Except from Go 1.27, where net/http/internal/http2's server calls http2Handler.ServeHTTP,
	 * which calls the serverHandler through a Handler interface: no caller site sees that
	 * call, so HTTP/2 requests end at that wrapper's RETs (single-stepped, HTTP/2 only).
	 */
	if (!err && find_site(&a, SYM_HTTP2_HANDLER, &t->serve_http2, true)) {
		probe_site__release(&t->serve_http2);
		t->serve_http2.addr = 0;
	}
	/* Better: where the HTTP/2 servers' goroutines get control back, emulated. */
	if (!err && plan_http2_ends(&a, t) == -ENOMEM) {
		err = -ENOMEM;
		goto cleanup;
	}
	grpc__find_sites(&a, &t->grpc);
	/* A worker without a server may still call databases: their spans start traces. */
	if (datastores__find_sites(&a, &t->db) == -ENOMEM ||
	    fasthttp__find(&a, modules, &t->fasthttp) == -ENOMEM ||
	    kafka__find(&a, modules, &t->kafka) == -ENOMEM ||
	    (kafka__any(&t->kafka) && datastores__index_methods(&a, &t->db) == -ENOMEM)) {
		err = -ENOMEM;
		goto cleanup;
	}
	if (err == -ENOENT &&
	    (!need_http || t->grpc.handle_stream.addr || fasthttp__serves(&t->fasthttp) ||
	     datastores__any(&t->db) || kafka__any(&t->kafka))) {
		/*
		 * A gRPC or fasthttp server, data store calls, Kafka messages, or a --functions
		 * file's functions
		 */
		pr_info("'%s' does not serve HTTP with net/http: only its %s traced", path,
			t->grpc.handle_stream.addr	 ? "gRPC calls are" :
			fasthttp__serves(&t->fasthttp) ? "fasthttp requests and calls are" :
			datastores__any(&t->db)		 ? "data store calls are" :
			kafka__any(&t->kafka)		 ? "Kafka messages are" :
							   "functions are");
		t->serve_http.addr = 0;
		err = 0;
	} else if (err) {
		if (err == -ENOENT)
			pr_err("'%s' serves neither HTTP with net/http nor gRPC: nothing to trace",
			       path);
		goto cleanup;
	}
	/* Without gopanic a panicking handler is only noticed when gospan stops. */
	if (find_site(&a, SYM_GOPANIC, &t->gopanic, false)) {
		pr_warn("'%s' has no %s: panicking handlers will produce no span", path, SYM_GOPANIC);
		t->gopanic.addr = 0;
	}
	find_client_sites(&a, t);
	/*
	 * A process's start, before it can connect anywhere: where trace context goes out, its
	 * cgroup gets the socket-layer writer then. Without it, at its first client call's sync.
	 */
	if (find_site(&a, SYM_RUNTIME_MAIN, &t->runtime_main, false)) {
		probe_site__release(&t->runtime_main);
		t->runtime_main.addr = 0;
	}
	/* Handing spans to new goroutines needs g.parentGoid (Go 1.21+); checked after offsets. */
	if (find_site(&a, SYM_NEWPROC1, &t->newproc1, true) ||
	    (site_planner_policy == SITES_BEST &&
	     site_planner__caller_ends(a.sp, &t->newproc1, FIND_CALLS_NOT_DYNAMIC, 0, X86_AX))) {
		probe_site__release(&t->newproc1);
		t->newproc1.addr = 0;
	}
	/* Data symbols are not in the function table: stripped binaries go without the itab. */
	if (a.has_symtab && !elf_file__find_symbol(ef, SYM_RESPONSE_ITAB, &sym))
		t->response_itab = sym.addr;
	if (a.has_symtab && (!elf_file__find_symbol(ef, SYM_H2_WRITER_ITAB, &sym) ||
			     !elf_file__find_symbol(ef, SYM_H2_WRITER_ITAB_127, &sym)))
		t->h2_writer_itab = sym.addr;
	t->cfg.tls_g = tls_g_offset(&a);

	err = pick_offsets(t, tables);
	if (err)
		goto cleanup;
	if (t->offs[GO_FIELD_G_PARENT_GOID] < 0)
		t->newproc1.addr = 0;
	if (t->round_trip.addr && (t->offs[GO_FIELD_URL_SCHEME] < 0 ||
				   t->offs[GO_FIELD_URL_HOST] < 0 ||
				   t->offs[GO_FIELD_RESP_STATUS_CODE] < 0)) {
		pr_warn("'%s': no offsets for the HTTP client's structs: no client spans", path);
		t->round_trip.addr = 0;
	}
	fill_config(t);
	grpc__configure(&a, &t->grpc, modules ? modules->grpc : NULL, t->offs, &t->cfg);
	err = datastores__configure(&a, &t->db, t->offs, modules, &t->cfg);
	if (err)
		goto cleanup;
	fasthttp__configure(&a, &t->fasthttp, t->offs, &t->cfg);
	kafka__configure(&t->kafka, &t->cfg);
	/* Routers serve inside net/http's or fasthttp's server: their routes go to its spans. */
	if (t->serve_http.addr || fasthttp__serves(&t->fasthttp)) {
		err = routers__find(&a, modules, &t->routers);
		if (err)
			goto cleanup;
	}
	count_steps(&a, t);
	t->analysis = malloc(sizeof(*t->analysis));
	if (!t->analysis) {
		err = -ENOMEM;
		goto cleanup;
	}
	*t->analysis = a; /* owns EF from here on */
	return t;

cleanup:
	analysis__release(&a);
	if (ef)
		elf_file__close(ef);
	target__free(t);
	errno = -err;
	return NULL;
}

void target__end_analysis(struct target *t)
{
	struct elf_file *ef;

	if (!t->analysis)
		return;
	ef = t->analysis->ef;
	analysis__release(t->analysis);
	elf_file__close(ef);
	free(t->analysis);
	t->analysis = NULL;
}

void target__free(struct target *t)
{
	if (!t)
		return;
	target__end_analysis(t);
	probe_site__release(&t->serve_http);
	probe_site__release(&t->serve_http2);
	probe_site__release(&t->gopanic);
	probe_site__release(&t->round_trip);
	probe_site__release(&t->inject);
	probe_site__release(&t->newproc1);
	probe_site__release(&t->runtime_main);
	grpc__release(&t->grpc);
	datastores__release(&t->db);
	routers__release(&t->routers);
	fasthttp__release(&t->fasthttp);
	kafka__release(&t->kafka);
	target__release_funcs(t);
	gobin__free(t->gobin);
	free(t->path);
	free(t->exe_name);
	free(t);
}

void target__release_funcs(struct target *t)
{
	size_t i, j;

	for (i = 0; i < t->nfuncs; i++) {
		free(t->funcs[i].symbol);
		free(t->funcs[i].name);
		probe_site__release(&t->funcs[i].site);
		for (j = 0; j < MAX_FUNC_ARGS; j++)
			free(t->funcs[i].args[j].path);
	}
	free(t->funcs);
	t->funcs = NULL;
	t->nfuncs = 0;
	probe_site__release(&t->func_recover);
	memset(&t->func_recover, 0, sizeof(t->func_recover));
}
