// SPDX-License-Identifier: MIT
/*
 * Tests for target.c: the analysis of real Go binaries built by the test, and the refusals a user
 * sees for binaries gospan cannot trace.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <string.h>

#include "analysis/datastores.h"
#include "analysis/elf.h"
#include "analysis/gobin.h"
#include "helpers.h"
#include "analysis/offsets.h"
#include "analysis/target.h"

static struct offsets *tables;

static int group_setup(void **state)
{
	(void)state;
	tables = test_load_offsets();
	return tables ? 0 : -1;
}

static int group_teardown(void **state)
{
	(void)state;
	offsets__free(tables);
	return 0;
}

/*
 * The address of the first instruction of FUNC in BIN, as `go tool objdump` shows it, whose text
 * starts with WANT and which comes after one starting with AFTER (NULL: anywhere), itself right
 * after one equal to PREV (NULL: any). 0 when there is none.
 */
static uint64_t objdump_find(const char *bin, const char *func, const char *after,
			     const char *prev, const char *want)
{
	char cmd[1024], line[1024], last[256] = "", *f[8], *tok, *save;
	unsigned long long addr;
	bool armed = !after;
	uint64_t found = 0;
	FILE *p;
	int nf;

	snprintf(cmd, sizeof(cmd), "go tool objdump -s '^%s$' '%s'", func, bin);
	p = popen(cmd, "r");
	assert_non_null(p);
	while (!found && fgets(line, sizeof(line), p)) {
		for (nf = 0, tok = strtok_r(line, "\t", &save); tok && nf < 8;
		     tok = strtok_r(NULL, "\t", &save))
			if (tok[strspn(tok, " \n")])
				f[nf++] = tok;
		if (nf < 4 || sscanf(f[1], "0x%llx", &addr) != 1)
			continue;
		for (size_t e = strlen(f[3]); e && f[3][e - 1] == ' '; e--)
			f[3][e - 1] = '\0';
		if (armed && !strncmp(f[3], want, strlen(want)) && (!prev || !strcmp(last, prev)))
			found = addr;
		if (!armed && !strncmp(f[3], after, strlen(after)))
			armed = true;
		snprintf(last, sizeof(last), "%s", f[3]);
	}
	pclose(p);
	return found;
}

static uint64_t file_offset(struct elf_file *ef, uint64_t addr)
{
	uint64_t off = 0;

	assert_int_equal(elf_file__addr_to_offset(ef, addr, &off), 0);
	return off;
}

/*
 * Where the requests' ends are, checked against the Go toolchain's own disassembler: an HTTP/1
 * request's in conn.serve on its next direct call (hijacked), past the context's cancel; a call's
 * on the JE or JNE that tests persistConn.roundTrip's error. No RET is probed on either path, and
 * each site is one the kernel emulates.
 */
static void check_ends(struct elf_file *ef, const char *bin, const struct target *t)
{
	const char *conn_serve = "net/http.\\(\\*conn\\).serve";
	const char *round_trip = "net/http.\\(\\*Transport\\).roundTrip";
	struct elf_symbol wrapper;
	uint64_t want;
	size_t i;
	bool seen = false;

	want = file_offset(ef, objdump_find(bin, conn_serve, "CALL net/http.serverHandler.ServeHTTP",
					    NULL, "CALL net/http.(*conn).hijacked"));
	assert_int_equal(t->serve_http.nrets, 0);
	for (i = 0; i < t->serve_http.nends; i++) {
		assert_true(t->serve_http.ends[i].in_caller);
		if (t->serve_http.ends[i].off == want) {
			assert_true(t->serve_http.ends[i].emulated);
			seen = true;
		}
	}
	assert_true(seen);
	assert_true(t->serve_http.entry_emulated);
	assert_int_equal(t->server_steps, 0);

	/*
	 * An HTTP/2 request's: the CALL of the writer's handlerDone in runHandler's deferred
	 * closure (net/http's bundled server up to Go 1.26, net/http/internal/http2 after), and no
	 * longer the return address in the TLS wrapper, which would be single-stepped.
	 */
	want = objdump_find(bin, "net/http.\\(\\*http2serverConn\\).runHandler.func1", NULL, NULL,
			    "CALL net/http.(*http2responseWriter).handlerDone");
	if (!want)
		want = objdump_find(bin,
				    "net/http/internal/http2.\\(\\*serverConn\\).runHandler.func1",
				    NULL, NULL,
				    "CALL net/http/internal/http2.(*responseWriter).handlerDone");
	assert_int_not_equal(want, 0);
	assert_int_equal(t->serve_http2.nends, 1);
	assert_int_equal(t->serve_http2.ends[0].off, file_offset(ef, want));
	assert_true(t->serve_http2.ends[0].emulated);
	assert_int_equal(t->serve_http2.nrets, 0);
	assert_int_equal(t->http2_steps, 0);
	assert_int_equal(elf_file__find_symbol(ef, "net/http.initALPNRequest.ServeHTTP", &wrapper),
			 0);
	for (i = 0; i < t->serve_http.nends; i++)
		assert_int_not_equal(t->serve_http.ends[i].caller, wrapper.addr);

	want = objdump_find(bin, round_trip, "CALL net/http.(*persistConn).roundTrip(SB)",
			    "TESTQ BX, BX", "J");
	assert_int_not_equal(want, 0);
	assert_int_equal(t->round_trip.nends, 1);
	assert_true(t->round_trip.ends[0].if_no_error);
	assert_true(t->round_trip.ends[0].emulated);
	assert_int_equal(t->round_trip.ends[0].off, file_offset(ef, want));
	/* The RETs of the error-free way out are not probed; the others are. */
	assert_true(t->round_trip.nrets >= 1);
	for (i = 0; i < t->round_trip.nrets; i++)
		assert_true(t->round_trip.ret_offs[i] > t->round_trip.entry_off);
	assert_int_equal(t->client_steps, 0);
}

static void test_target__http_server_is_analysed(void **state)
{
	const char *bin = test_go_build("httpserver", "target-httpserver", "", "");
	struct elf_symbol sym;
	struct elf_file *ef;
	struct target *t;

	(void)state;
	assert_non_null(bin);
	t = target__analyse(bin, NULL, tables, NULL, true);
	assert_non_null(t);
	assert_string_equal(t->exe_name, "target-httpserver");
	assert_int_equal(t->gobin->major, 1);
	assert_true(t->gobin->minor >= 17);
	assert_non_null(t->offsets_version);
	/* Built with DWARF, so the offsets come from the binary itself. */
	assert_string_equal(t->offsets_source, "DWARF");

	/* The entry is the symbol's file offset; every RET lies inside the function. */
	ef = elf_file__open(bin);
	assert_non_null(ef);
	assert_int_equal(elf_file__find_symbol(ef, "net/http.serverHandler.ServeHTTP", &sym), 0);
	assert_int_equal(t->serve_http.addr, sym.addr);
	check_ends(ef, bin, t);
	assert_int_equal(elf_file__find_symbol(ef, "runtime.gopanic", &sym), 0);
	assert_int_equal(t->gopanic.addr, sym.addr);
	assert_int_equal(elf_file__find_symbol(ef, "runtime.main", &sym), 0);
	assert_int_equal(t->runtime_main.addr, sym.addr);
	assert_int_not_equal(t->runtime_main.entry_off, 0);
	assert_int_not_equal(t->response_itab, 0);
	elf_file__close(ef);

	/* What BPF gets: the table's offsets and ServeHTTP's argument slots. */
	assert_int_equal(t->cfg.g_goid, t->offs[GO_FIELD_G_GOID]);
	assert_true(t->cfg.g_goid > 0);
	assert_int_equal(t->cfg.req_method, 0);
	assert_int_equal(t->cfg.arg_rw_itab, 2);
	assert_int_equal(t->cfg.arg_rw_data, 3);
	assert_int_equal(t->cfg.arg_req, 4);
	target__free(t);
}

/*
 * The socket-layer writer finds a thread's goroutine at tls_g from its FS base. Go keeps g in
 * the word right below it in every build of an 8-byte TLS block of its own: without libc (Go
 * sets FS itself, no PT_TLS) and with it (runtime.tlsg at the start of the executable's block,
 * which glibc puts right below the thread pointer).
 */
static void test_target__goroutine_is_found_below_the_thread_pointer(void **state)
{
	static const struct {
		const char *out, *env, *flags;
	} builds[] = {
		{ "target-tls-plain", "", "" },
		{ "target-tls-pie", "", "-buildmode=pie" },
		{ "target-tls-cgo", "CGO_ENABLED=1", "-ldflags=-linkmode=external" },
		{ "target-tls-cgo-stripped", "CGO_ENABLED=1", "'-ldflags=-s -w -linkmode=external'" },
	};
	struct target *t;
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(builds) / sizeof(builds[0]); i++) {
		const char *bin =
			test_go_build("httpserver", builds[i].out, builds[i].env, builds[i].flags);

		assert_non_null(bin);
		t = target__analyse(bin, NULL, tables, NULL, true);
		assert_non_null(t);
		if (t->cfg.tls_g != -8)
			fail_msg("%s: g at %lld from the thread pointer, expected -8", builds[i].out,
				 (long long)t->cfg.tls_g);
		/* Every flavour: no single-stepped probe on a request's or a call's usual path. */
		if (t->server_steps != 0 || t->client_steps != 0)
			fail_msg("%s: %d single-stepped hits per request, %d per call", builds[i].out,
				 t->server_steps, t->client_steps);
		target__free(t);
	}
}

static void test_target__refuses_what_it_cannot_trace(void **state)
{
	struct target *t;
	const char *nohttp;
	char path[4096];

	(void)state;
	errno = 0;
	assert_null(target__analyse("/bin/true", NULL, tables, NULL, true));
	assert_int_equal(errno, ENOEXEC);

	assert_true((size_t)snprintf(path, sizeof(path), "%s/not-elf.txt", test_data_dir()) <
		    sizeof(path));
	assert_int_equal(test_sh("echo 'hello' > '%s'", path), 0);
	errno = 0;
	assert_null(target__analyse(path, NULL, tables, NULL, true));
	assert_int_not_equal(errno, 0);

	errno = 0;
	assert_null(target__analyse("/nonexistent/gospan-target", NULL, tables, NULL, true));
	assert_int_equal(errno, ENOENT);

	nohttp = test_go_build("nohttp", "target-nohttp", "", "");
	assert_non_null(nohttp);
	errno = 0;
	assert_null(target__analyse(nohttp, NULL, tables, NULL, true));
	assert_int_equal(errno, ENOENT);
	/* With functions to trace instead, it is analysed: no server site, the goroutine id. */
	t = target__analyse(nohttp, NULL, tables, NULL, false);
	assert_non_null(t);
	assert_int_equal(t->serve_http.addr, 0);
	assert_true(t->offs[GO_FIELD_G_GOID] > 0);
	target__free(t);

}

/* -s -w: no .symtab, no DWARF. Functions come from the Go function table, offsets from tables. */
static void test_target__stripped_binary_is_analysed(void **state)
{
	const char *plain_bin = test_go_build("httpserver", "target-twin", "", "");
	struct target *plain, *stripped;
	const char *bin;
	size_t i;

	(void)state;
	assert_non_null(plain_bin);
	plain = target__analyse(plain_bin, NULL, tables, NULL, true);
	assert_non_null(plain);
	bin = test_go_build("httpserver", "target-stripped", "", "-ldflags='-s -w'");
	assert_non_null(bin);
	stripped = target__analyse(bin, NULL, tables, NULL, true);
	assert_non_null(stripped);

	assert_string_equal(stripped->offsets_source, "table");
	assert_int_equal(stripped->response_itab, 0); /* a data symbol: gone with .symtab */
	/* -s -w does not move code: the same probe sites as the unstripped twin. */
	assert_int_equal(stripped->serve_http.entry_off, plain->serve_http.entry_off);
	assert_int_equal(stripped->serve_http.nrets, plain->serve_http.nrets);
	for (i = 0; i < plain->serve_http.nrets; i++)
		assert_int_equal(stripped->serve_http.ret_offs[i], plain->serve_http.ret_offs[i]);
	assert_int_equal(stripped->serve_http.nends, plain->serve_http.nends);
	for (i = 0; i < plain->serve_http.nends; i++)
		assert_int_equal(stripped->serve_http.ends[i].off, plain->serve_http.ends[i].off);
	/* HTTP/2's ends are found by name too: the Go function table has the closures'. */
	assert_int_equal(stripped->serve_http2.nends, plain->serve_http2.nends);
	for (i = 0; i < plain->serve_http2.nends; i++)
		assert_int_equal(stripped->serve_http2.ends[i].off, plain->serve_http2.ends[i].off);
	assert_int_equal(stripped->http2_steps, plain->http2_steps);
	assert_int_equal(stripped->round_trip.nends, plain->round_trip.nends);
	assert_int_equal(stripped->round_trip.nrets, plain->round_trip.nrets);
	assert_int_equal(stripped->round_trip.ends[0].off, plain->round_trip.ends[0].off);
	assert_int_equal(stripped->server_steps, 0);
	assert_int_equal(stripped->client_steps, 0);
	assert_int_equal(stripped->gopanic.entry_off, plain->gopanic.entry_off);
	/* Found in the function table Go keeps for itself. */
	assert_int_equal(stripped->runtime_main.entry_off, plain->runtime_main.entry_off);
	/*
	 * The table and the DWARF agree on this release, on what the binary links: it has no
	 * database/sql, whose Stmt its DWARF does not describe (-1) and the table does.
	 */
	for (i = 0; i < GO_FIELD__COUNT; i++) {
		if (i == GO_FIELD_SQL_STMT_QUERY) {
			assert_int_equal(plain->offs[i], -1);
			assert_int_equal(stripped->offs[i], 8);
			continue;
		}
		assert_int_equal(stripped->offs[i], plain->offs[i]);
	}
	target__free(plain);
	target__free(stripped);
}

/*
 * A Go release newer than every table: traced through its DWARF, refused when stripped. The
 * table here stops at 1.17.0, so the installed Go plays the part of a release from the future.
 */
static void test_target__newer_than_tables_needs_dwarf(void **state)
{
	static const char old_table[] =
		"{\"schema\": 1, \"versions\": [\"1.17.0\"], \"fields\": {"
		"\"runtime.g.goid\": [{\"from\": \"1.17.0\", \"to\": \"1.17.0\", \"offset\": 152}]}}";
	const char *plain_bin, *stripped_bin;
	struct test_capture cap;
	struct offsets *old;
	struct target *t;
	char *msg;

	(void)state;
	old = offsets__parse(old_table, sizeof(old_table) - 1);
	assert_non_null(old);
	plain_bin = test_go_build("httpserver", "target-future", "", "");
	assert_non_null(plain_bin);
	t = target__analyse(plain_bin, NULL, old, NULL, true);
	assert_non_null(t);
	assert_string_equal(t->offsets_source, "DWARF");
	assert_true(t->cfg.g_goid > 0);
	assert_true(t->cfg.response_status > 0);
	target__free(t);

	stripped_bin = test_go_build("httpserver", "target-future-stripped", "", "-ldflags='-s -w'");
	assert_non_null(stripped_bin);
	assert_int_equal(test_capture_start(&cap), 0);
	errno = 0;
	t = target__analyse(stripped_bin, NULL, old, NULL, true);
	msg = test_capture_end(&cap);
	assert_null(t);
	assert_int_equal(errno, ENOENT);
	assert_non_null(msg);
	assert_non_null(strstr(msg, "no offsets for Go 1."));
	assert_non_null(strstr(msg, "make offsets"));
	free(msg);
	offsets__free(old);
}

/*
 * A pgx and go-redis client without a server (testdata/dbclient, at the oldest releases its go.mod
 * names), which also pings through pgx's database/sql driver: traced for its data store calls alone, with the clients' offsets from its DWARF, and
 * the errors it can return named by their Go type, found from their Error methods.
 */
static void test_target__data_store_clients(void **state)
{
	const char *bin = test_go_build("dbclient", "target-dbclient", "", "");
	struct elf_symbol sym;
	struct elf_file *ef;
	struct target *t;
	size_t i;

	(void)state;
	assert_non_null(bin);
	t = target__analyse(bin, NULL, tables, NULL, true);
	assert_non_null(t);
	assert_int_equal(t->serve_http.addr, 0);
	assert_true(datastores__any(&t->db));
	/*
	 * It pings through pgx's database/sql driver too: database/sql is traced, and its
	 * connections' server is read the way of pgx's own (stdlib.Conn.conn, then Conn.config).
	 */
	assert_true(datastores__sql(&t->db));
	assert_int_not_equal(t->cfg.sql_servers[0].fns[0], 0);
	assert_int_equal(t->cfg.sql_servers[0].hops[0], 0);
	assert_int_equal(t->cfg.sql_servers[0].hops[1], 8);
	assert_int_equal(t->cfg.sql_servers[0].host, 0);
	assert_int_equal(t->cfg.sql_servers[0].port, 16);
	assert_int_equal(t->cfg.sql_servers[1].fns[0], 0);
	/* the program sends a batch; pgx's database/sql driver links Query */
	assert_int_not_equal(t->db.pgx_query.addr, 0);
	assert_int_not_equal(t->db.pgx_batch.addr, 0);
	assert_int_not_equal(t->db.redis_process.addr, 0);
	assert_string_equal(t->db.pgx_offsets, "DWARF");
	assert_int_equal(t->cfg.db_pgx, 1);
	assert_int_equal(t->cfg.db_redis, 1);
	assert_int_equal(t->cfg.db_sql, 1);
	assert_int_equal(t->cfg.pgx_conn_config, 8);
	assert_int_equal(t->cfg.pgx_config_host, 0);
	assert_int_equal(t->cfg.pgx_config_port, 16);
	assert_int_equal(t->cfg.redis_cmd_args, 16);
	assert_int_equal(t->cfg.redis_opt_addr, 16);
	/*
	 * pgx's ends inside its methods, right after the inner call that does the work, each on an
	 * instruction the kernel emulates: Query's after the pgconn call that sends the query (a
	 * call whose error is nil there), SendBatch's (v5.0.0: no sendBatch yet) after each query
	 * mode's sender; the RETs of the ways out before them kept.
	 */
	assert_int_equal(t->db.pgx_steps, 0);
	assert_true(t->db.pgx_query.nends >= 2 && t->db.pgx_query.nrets >= 1);
	for (i = 0; i < t->db.pgx_query.nends; i++) {
		assert_true(t->db.pgx_query.ends[i].emulated);
		assert_true(t->db.pgx_query.ends[i].if_no_error);
		assert_int_equal(t->db.pgx_query.ends[i].caller, t->db.pgx_query.addr);
	}
	assert_int_equal(t->db.pgx_batch.nends, 5);
	for (i = 0; i < t->db.pgx_batch.nends; i++) {
		assert_true(t->db.pgx_batch.ends[i].emulated);
		assert_false(t->db.pgx_batch.ends[i].if_no_error);
	}
	assert_string_equal(t->db.pgx_batch.rets_why, "for the ways out before its inner calls");
	/*
	 * go-redis v9.0.0's process holds its retry loop, whose two ways out after an attempt meet
	 * at a RET with nothing emulated before it: they end on the two jumps that leave, JE on
	 * the error's itab (nil) and JNE on _process's retry flag (false, one byte), each on its
	 * way out alone, the error (_process's, in slots 2-3) read there. The RET of retries run
	 * out stays.
	 */
	assert_int_equal(t->db.redis_steps, 0);
	assert_int_equal(t->db.redis_process.nends, 2);
	for (i = 0; i < t->db.redis_process.nends; i++) {
		const struct end_site *e = &t->db.redis_process.ends[i];

		assert_true(e->emulated);
		assert_false(e->in_caller);
		assert_int_equal(e->caller, t->db.redis_process.addr);
		assert_int_equal(sites__slot_of(e->result), 2);
		assert_true(e->cond_if_zero);
		assert_true((e->cond_slot == 2 && e->cond_size == 8) ||
			    (e->cond_slot == 1 && e->cond_size == 1));
	}
	assert_int_not_equal(t->db.redis_process.ends[0].cond_slot,
			     t->db.redis_process.ends[1].cond_slot);
	assert_int_equal(t->db.redis_process.nrets, 1);
	assert_string_equal(t->db.redis_process.rets_why,
			    "for the ways out that end without its work");

	ef = elf_file__open(bin);
	assert_non_null(ef);
	assert_int_equal(elf_file__find_symbol(ef, "github.com/jackc/pgx/v5/pgconn.(*PgError).Error",
					       &sym),
			 0);
	assert_string_equal(datastores__error_type(&t->db, sym.addr), "*pgconn.PgError");
	assert_int_equal(elf_file__find_symbol(ef, "errors.(*errorString).Error", &sym), 0);
	assert_string_equal(datastores__error_type(&t->db, sym.addr), "*errors.errorString");
	assert_null(datastores__error_type(&t->db, sym.addr + 1));
	/* no driver of database/sql's in it */
	assert_string_equal(datastores__system(&t->db, sym.addr), "other_sql");
	elf_file__close(ef);
	target__free(t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_target__http_server_is_analysed),
		cmocka_unit_test(test_target__goroutine_is_found_below_the_thread_pointer),
		cmocka_unit_test(test_target__refuses_what_it_cannot_trace),
		cmocka_unit_test(test_target__stripped_binary_is_analysed),
		cmocka_unit_test(test_target__data_store_clients),
		cmocka_unit_test(test_target__newer_than_tables_needs_dwarf),
	};

	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
