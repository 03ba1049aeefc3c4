// SPDX-License-Identifier: MIT
/*
 * Data store clients in a target (datastores.h). database/sql is probed where it hands each call
 * to its driver: every driver goes through there, and those functions are only called directly,
 * so their ends go in their callers on instructions the kernel emulates (bpf/db.bpf.c).
 * pgx's methods end inside themselves, after the inner call that does their work, also on
 * emulated instructions; go-redis's command processor where its retry loop is over, likewise;
 * go-redis's pipelines at their RETs.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/analysis.h"
#include "analysis/datastores.h"
#include "analysis/gobin.h"
#include "core/log.h"
#include "analysis/offsets.h"
#include "analysis/planner.h"
#include "analysis/sites.h"

#define SQL_QUERY "database/sql.ctxDriverQuery"
#define SQL_EXEC "database/sql.ctxDriverExec"
#define SQL_ROWS "database/sql.rowsiFromStatement"
#define SQL_RESULT "database/sql.resultFromStatement"
#define SQL_STMT_QUERY "database/sql.(*Stmt).QueryContext"
#define SQL_STMT_EXEC "database/sql.(*Stmt).ExecContext"
#define SQL_PREPARE "database/sql.ctxDriverPrepare"
#define SQL_BEGIN "database/sql.ctxDriverBegin"
#define SQL_COMMIT "database/sql.(*Tx).Commit"
#define SQL_ROLLBACK "database/sql.(*Tx).rollback"

#define PGX_MODULE "github.com/jackc/pgx/v5"
#define PGX_QUERY PGX_MODULE ".(*Conn).Query"
#define PGX_EXEC PGX_MODULE ".(*Conn).Exec"
#define PGX_BATCH PGX_MODULE ".(*Conn).SendBatch"

#define PGX_STDLIB_CONN PGX_MODULE "/stdlib.(*Conn)"
#define PQ_MODULE "github.com/lib/pq"
#define PQ_CONN PQ_MODULE ".(*conn)"
#define MYSQL_MODULE "github.com/go-sql-driver/mysql"
#define MYSQL_CONN MYSQL_MODULE ".(*mysqlConn)"

#define REDIS_MODULE "github.com/redis/go-redis/v9"
#define REDIS_PROCESS REDIS_MODULE ".(*baseClient).process"
/*
 * From v9.23 process only calls processStartingAt, whose first arguments are the same, and is
 * inlined into its method value: the binary may keep an out-of-line process that nothing calls
 * (another package's code can make the linker keep it). Every command goes through
 * processStartingAt, so it is probed where it exists.
 */
#define REDIS_PROCESS_AT REDIS_MODULE ".(*baseClient).processStartingAt"
/*
 * The processor is called only from its method value, which the hooks call through a func
 * value, so its ends cannot go in its callers; and it ends in calls it returns at once
 * (processCommand, which returns processWithRetry's; before v9.22 it holds the retry loop
 * itself): no instruction the kernel emulates follows the command's work in it. Its ends go
 * where the work is over instead: in the retry loop, on the first emulated instruction of each
 * way that leaves it for good, where the error it will return is in registers
 * (sites__error_ends shows it for every way, through the frame's spills). The other ways out
 * (a command refused before it is sent, a cached reply, retries run out where the error is not
 * in registers) keep their RETs.
 */
#define REDIS_COMMAND REDIS_MODULE ".(*baseClient).processCommand"
#define REDIS_WITH_RETRY REDIS_MODULE ".(*baseClient).processWithRetry"
#define REDIS_CACHED REDIS_MODULE ".(*baseClient).processCached"
#define REDIS_ATTEMPT REDIS_MODULE ".(*baseClient)._process"
/*
 * The pipelines' processors make their error after the work (their commands' first, returned
 * at once): their RETs.
 */
#define REDIS_PIPELINE REDIS_MODULE ".(*baseClient).processPipeline"
#define REDIS_TX_PIPELINE REDIS_MODULE ".(*baseClient).processTxPipeline"

/*
 * database/sql drivers by package path, and the db.system.name the conventions give their
 * database. A fork or a driver not listed is "other_sql".
 */
static const struct {
	const char *pkg;
	const char *system;
} drivers[] = {
	{ "github.com/lib/pq", "postgresql" },
	{ "github.com/jackc/pgx", "postgresql" },
	{ "github.com/go-sql-driver/mysql", "mysql" },
	{ "modernc.org/sqlite", "sqlite" },
	{ "github.com/mattn/go-sqlite3", "sqlite" },
	{ "github.com/glebarez/go-sqlite", "sqlite" },
	{ "github.com/ncruces/go-sqlite3", "sqlite" },
	{ "github.com/microsoft/go-mssqldb", "microsoft.sql_server" },
	{ "github.com/denisenkom/go-mssqldb", "microsoft.sql_server" },
	{ "github.com/sijms/go-ora", "oracle.db" },
	{ "github.com/godror/godror", "oracle.db" },
	{ "github.com/mattn/go-oci8", "oracle.db" },
	{ "github.com/ClickHouse/clickhouse-go", "clickhouse" },
	{ "github.com/trinodb/trino-go-client", "trino" },
	{ "github.com/ibmdb/go_ibm_db", "ibm.db2" },
	{ "github.com/nakagami/firebirdsql", "firebirdsql" },
};

/*
 * The methods whose address the probes see first in a driver connection's itab: the first
 * method of QueryerContext, Queryer, ExecerContext, Execer and Conn (methods in name order).
 */
static const char *const driver_methods[] = { ".QueryContext", ".Query", ".ExecContext", ".Exec",
					      ".Begin" };

static int cmp_method(const void *a, const void *b)
{
	const struct db_method *x = a, *y = b;

	return x->addr < y->addr ? -1 : x->addr > y->addr;
}

static bool ends_with(const char *s, const char *suffix)
{
	size_t n = strlen(s), m = strlen(suffix);

	return n >= m && !strcmp(s + n - m, suffix);
}

/* The driver package NAME (a function's symbol) belongs to; NULL when none. */
static const char *driver_system(const char *name)
{
	size_t i, n;

	for (i = 0; i < sizeof(drivers) / sizeof(drivers[0]); i++) {
		n = strlen(drivers[i].pkg);
		if (!strncmp(name, drivers[i].pkg, n) && (name[n] == '.' || name[n] == '/'))
			return drivers[i].system;
	}
	return NULL;
}

/*
 * "github.com/lib/pq.(*Error).Error" -> "*pq.Error", "context.deadlineExceededError.Error" ->
 * "context.deadlineExceededError": an Error method's receiver as Go's %T names it. NULL when
 * NAME is not such a method, or on ENOMEM.
 */
static char *error_type_name(const char *name)
{
	size_t len = strlen(name) - strlen(".Error");
	const char *seg, *dot, *recv, *end = name + len;
	bool ptr = false;
	char *out;
	int n;

	seg = name;
	for (recv = name; recv < end; recv++)
		if (*recv == '/')
			seg = recv + 1;
	/* The package name ends at the first dot of the last path segment. */
	dot = memchr(seg, '.', end - seg);
	if (!dot || dot + 1 >= end)
		return NULL;
	recv = dot + 1;
	if (!strncmp(recv, "(*", 2) && end[-1] == ')') {
		ptr = true;
		recv += 2;
		end--;
	}
	/* A type of the package's: one identifier, no closure or generic instance */
	if (recv >= end || memchr(recv, '.', end - recv) || memchr(recv, '[', end - recv) ||
	    memchr(recv, '(', end - recv))
		return NULL;
	n = asprintf(&out, "%s%.*s.%.*s", ptr ? "*" : "", (int)(dot - seg), seg,
		     (int)(end - recv), recv);
	return n < 0 ? NULL : out;
}

int datastores__index_methods(struct analysis *a, struct db_target *d)
{
	const struct sym_entry *syms;
	size_t n, i, j, nd = 0, ne = 0;
	const char *system;
	char *type;

	if (d->errors)
		return 0;
	n = analysis__functions(a, &syms);
	d->drivers = calloc(n ? n : 1, sizeof(*d->drivers));
	d->errors = calloc(n ? n : 1, sizeof(*d->errors));
	if (!d->drivers || !d->errors)
		return -ENOMEM;
	for (i = 0; i < n; i++) {
		if (!syms[i].is_func || !syms[i].name)
			continue;
		if (ends_with(syms[i].name, ".Error")) {
			type = error_type_name(syms[i].name);
			if (type) {
				d->errors[ne].addr = syms[i].addr;
				d->errors[ne++].what = type;
			}
			continue;
		}
		system = driver_system(syms[i].name);
		if (!system)
			continue;
		for (j = 0; j < sizeof(driver_methods) / sizeof(driver_methods[0]); j++) {
			if (ends_with(syms[i].name, driver_methods[j])) {
				d->drivers[nd].addr = syms[i].addr;
				d->drivers[nd++].what = system;
				break;
			}
		}
	}
	d->ndrivers = nd;
	d->nerrors = ne;
	/* Sized for every function while counting: keep what was found (a failed shrink keeps all). */
	d->drivers = realloc(d->drivers, (nd ? nd : 1) * sizeof(*d->drivers)) ?: d->drivers;
	d->errors = realloc(d->errors, (ne ? ne : 1) * sizeof(*d->errors)) ?: d->errors;
	qsort(d->drivers, nd, sizeof(*d->drivers), cmp_method);
	qsort(d->errors, ne, sizeof(*d->errors), cmp_method);
	return 0;
}

static const char *lookup(const struct db_method *v, size_t n, uint64_t addr)
{
	const struct db_method key = { .addr = addr }, *m;

	if (!n || !addr)
		return NULL;
	m = bsearch(&key, v, n, sizeof(*v), cmp_method);
	return m ? m->what : NULL;
}

const char *datastores__system(const struct db_target *d, uint64_t fn)
{
	const char *s = lookup(d->drivers, d->ndrivers, fn);

	return s ? s : "other_sql";
}

const char *datastores__error_type(const struct db_target *d, uint64_t fn)
{
	return lookup(d->errors, d->nerrors, fn);
}

/*
 * A call's end: its RETs, moved into its callers where every call is direct. RESULT_REG holds
 * the error's itab as returned, and the data word after it must stay too (db_sql_end).
 */
static int find_call(struct analysis *a, const char *symbol, struct probe_site *site,
		     int result_reg, unsigned int find_flags)
{
	int err;

	err = analysis__find_site(a, symbol, site, SITE_RETS, 0);
	if (!err && site_planner_policy == SITES_BEST)
		err = analysis__caller_ends(a, site, find_flags, AFTER_CALL_KEEP_PAIR, result_reg);
	return err;
}

static void drop_sites(struct probe_site **sites, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++) {
		probe_site__release(sites[i]);
		sites[i]->addr = 0;
	}
}

/*
 * database/sql: the driver calls, the transaction's begin and end, and the two places a
 * prepared statement's text is noted. The linker keeps only what the program uses: each is
 * optional. Any other failure leaves database/sql untraced, rather than traced in part.
 */
static int find_sql_sites(struct analysis *a, struct db_target *d)
{
	struct probe_site *all[] = { &d->sql_query,	 &d->sql_exec,	     &d->sql_rows,
				     &d->sql_result,	 &d->sql_stmt_query, &d->sql_stmt_exec,
				     &d->sql_prepare,	 &d->sql_begin,	     &d->sql_commit,
				     &d->sql_rollback };
	/* The driver calls return (a result interface, error): the error's itab is in CX. */
	const struct {
		const char *symbol;
		struct probe_site *site;
		int result_reg; /* -1: its entry alone */
		unsigned int find_flags;
	} parts[] = {
		{ SQL_QUERY, &d->sql_query, X86_CX, FIND_CALLS_NOT_DYNAMIC },
		{ SQL_EXEC, &d->sql_exec, X86_CX, FIND_CALLS_NOT_DYNAMIC },
		{ SQL_ROWS, &d->sql_rows, X86_CX, FIND_CALLS_NOT_DYNAMIC },
		{ SQL_RESULT, &d->sql_result, X86_CX, FIND_CALLS_NOT_DYNAMIC },
		{ SQL_BEGIN, &d->sql_begin, X86_CX, FIND_CALLS_NOT_DYNAMIC },
		/* Commit is exported: its callers are the application's, maybe through interfaces */
		{ SQL_COMMIT, &d->sql_commit, X86_AX, 0 },
		{ SQL_ROLLBACK, &d->sql_rollback, X86_AX, FIND_CALLS_NOT_DYNAMIC },
		{ SQL_STMT_QUERY, &d->sql_stmt_query, -1, 0 },
		{ SQL_STMT_EXEC, &d->sql_stmt_exec, -1, 0 },
		{ SQL_PREPARE, &d->sql_prepare, -1, 0 },
	};
	size_t i;
	int err = 0;

	for (i = 0; !err && i < sizeof(parts) / sizeof(parts[0]); i++) {
		err = parts[i].result_reg < 0 ?
			      analysis__find_site(a, parts[i].symbol, parts[i].site, SITE_ENTRY, 0) :
			      find_call(a, parts[i].symbol, parts[i].site, parts[i].result_reg,
					parts[i].find_flags);
		if (err == -ENOENT) {
			parts[i].site->addr = 0;
			err = 0;
		}
	}
	if (err == -ENOMEM)
		return err;
	if (err) {
		pr_warn("'%s' uses database/sql, but where it calls its driver could not be "
			"probed (%s): no SQL spans",
			a->path, strerror(-err));
		drop_sites(all, sizeof(all) / sizeof(all[0]));
		return 0;
	}
	if (d->sql_query.addr)
		d->sql_steps = probe_site__steps(&d->sql_query, 0, false);
	else if (d->sql_exec.addr)
		d->sql_steps = probe_site__steps(&d->sql_exec, 0, false);
	return 0;
}

/*
 * pgx's Conn methods are exported, and reached from the application, through pgxpool, through
 * interfaces of its own: their callers cannot all be found. Their ends go inside them instead,
 * right after the inner call that does the work, where every way out after it passes
 * (sites__after_inner); the RETs of the ways out before it (a failure found first) stay.
 * - Exec after (*Conn).exec, which returns what Exec does: (CommandTag, error), the error in
 *   CX (slot 3) and DI.
 * - Query after the pgconn call that sends the query and reads its reply up to the rows
 *   (ExecStatement, or ExecPrepared in older releases, or ExecParams). Query's error on those
 *   ways is rows.err of the rows getRows made just before, which only rows.fatal sets, and every
 *   rows.fatal returns at once: nil. Its failures come out on the other ways (preparing the
 *   statement, building the arguments, the simple protocol), whose RETs stay, or later from the
 *   rows, as at its RETs.
 * - SendBatch, where it is a wrapper (for batches that begin a transaction), after
 *   (*Conn).sendBatch; before, after the sender of the batch's query mode it returns the result
 *   of, where its deferred tracer end (open-coded: a test after each call) leaves a way out of
 *   its own to each. It returns no error.
 */
#define PGX_CONN_EXEC PGX_MODULE "/pgconn.(*PgConn).Exec"
#define PGX_SEND_MODE PGX_MODULE ".(*Conn).sendBatchQueryExecMode"
static const struct {
	const char *inner[6];
	int result_reg; /* the error's itab after the inner call; -1: none read there */
	bool if_no_error;
} pgx_inner[] = {
	{ { PGX_CONN_EXEC "Statement", PGX_CONN_EXEC "Prepared", PGX_CONN_EXEC "Params" },
	  -1,
	  true },
	{ { PGX_MODULE ".(*Conn).exec" }, X86_CX, false },
	{ { PGX_MODULE ".(*Conn).sendBatch", PGX_SEND_MODE "SimpleProtocol", PGX_SEND_MODE "Exec",
	    PGX_SEND_MODE "CacheStatement", PGX_SEND_MODE "CacheDescribe",
	    PGX_SEND_MODE "DescribeExec" },
	  -1,
	  false },
};

/* pgx's Conn methods: each linked only where the program calls it. */
static int find_pgx_sites(struct analysis *a, struct db_target *d)
{
	struct probe_site *sites[] = { &d->pgx_query, &d->pgx_exec, &d->pgx_batch };
	const char *const symbols[] = { PGX_QUERY, PGX_EXEC, PGX_BATCH };
	const char *version = gobin__module_version(a->gobin, PGX_MODULE);
	size_t i, n;
	int err = 0, steps;

	if (!version)
		return 0;
	snprintf(d->pgx_version, sizeof(d->pgx_version), "%s", version);
	for (i = 0; !err && i < sizeof(sites) / sizeof(sites[0]); i++) {
		err = analysis__find_site(a, symbols[i], sites[i], SITE_RETS, 0);
		if (err == -ENOENT) {
			sites[i]->addr = 0;
			err = 0;
			continue;
		}
		if (err || site_planner_policy != SITES_BEST)
			continue;
		for (n = 0; n < 6 && pgx_inner[i].inner[n]; n++)
			;
		err = analysis__inner_ends(a, sites[i], pgx_inner[i].inner, n,
					   pgx_inner[i].result_reg, pgx_inner[i].if_no_error);
	}
	if (err == -ENOMEM)
		return err;
	if (err) {
		pr_warn("'%s' uses pgx %s, but its Conn's methods could not be probed (%s): no pgx "
			"spans",
			a->path, version, strerror(-err));
		drop_sites(sites, sizeof(sites) / sizeof(sites[0]));
		return 0;
	}
	/* A query's usual way: through the ends inside the method where it has them. */
	for (i = 0; i < sizeof(sites) / sizeof(sites[0]); i++) {
		if (!sites[i]->addr)
			continue;
		steps = probe_site__steps(sites[i], sites[i]->addr, false);
		if (steps > d->pgx_steps)
			d->pgx_steps = steps;
	}
	return 0;
}

/*
 * A command's ends where its work is over (REDIS_COMMAND's comment): the chain from the probed
 * processor to the retry loop, which calls _process for each attempt.
 */
static int redis_ends(struct analysis *a, struct db_target *d)
{
	struct probe_site *site = &d->redis_process;
	const char *const links[] = { REDIS_COMMAND, REDIS_WITH_RETRY };
	struct error_chain chain = { .n = 1 };
	struct elf_symbol sym;
	size_t i;
	int err, steps;

	if (analysis__find_func(a, REDIS_ATTEMPT, &sym)) {
		site->rets_why = "its retry loop's attempts were not found";
		return 0;
	}
	chain.work = sym.addr;
	if (analysis__find_func(a, site->symbol, &sym))
		return 0; /* found a moment ago: its RETs, as planned */
	chain.addr[0] = sym.addr;
	chain.size[0] = sym.size;
	/* From v9.22 the loop is processWithRetry's, reached through processCommand. */
	for (i = 0; i < sizeof(links) / sizeof(links[0]); i++) {
		if (analysis__find_func(a, links[i], &sym))
			continue;
		chain.addr[chain.n] = sym.addr;
		chain.size[chain.n++] = sym.size;
	}
	/* A cached command's miss runs the loop too, and returns its error as it is. */
	if (chain.n > 1 && !analysis__find_func(a, REDIS_CACHED, &sym))
		chain.also[chain.nalso++] = sym.addr;
	err = site_planner__error_ends(a->sp, site, &chain, &steps);
	if (err || !site->nends)
		return err;
	d->redis_steps = !site->entry_emulated + steps;
	return 0;
}

static int find_redis_sites(struct analysis *a, struct db_target *d)
{
	const char *version = gobin__module_version(a->gobin, REDIS_MODULE);
	int err, tx_steps;

	if (!version)
		return 0;
	snprintf(d->redis_version, sizeof(d->redis_version), "%s", version);
	err = analysis__find_site(a, REDIS_PROCESS_AT, &d->redis_process, SITE_RETS, 0);
	if (err == -ENOENT)
		err = analysis__find_site(a, REDIS_PROCESS, &d->redis_process, SITE_RETS, 0);
	if (err == -ENOMEM)
		return err;
	if (err) {
		pr_warn("'%s' uses go-redis %s, but its command processor was not found: no "
			"Redis spans",
			a->path, version);
		drop_sites((struct probe_site *[]){ &d->redis_process }, 1);
		return 0;
	}
	/* Pipelines are linked only where the program makes some. */
	err = analysis__find_site(a, REDIS_PIPELINE, &d->redis_pipeline, SITE_RETS, 0);
	if (err == -ENOMEM)
		return err;
	err = analysis__find_site(a, REDIS_TX_PIPELINE, &d->redis_tx_pipeline, SITE_RETS, 0);
	if (err == -ENOMEM)
		return err;
	d->redis_steps = probe_site__steps(&d->redis_process, 0, false);
	/* A pipeline's work ends in its processor: a RET, single-stepped where not emulated. */
	if (d->redis_pipeline.addr)
		d->redis_pipe_steps = probe_site__steps(&d->redis_pipeline, 0, false);
	tx_steps = d->redis_tx_pipeline.addr ? probe_site__steps(&d->redis_tx_pipeline, 0, false) : -1;
	if (tx_steps > d->redis_pipe_steps)
		d->redis_pipe_steps = tx_steps;
	if (site_planner_policy == SITES_BEST)
		return redis_ends(a, d);
	return 0;
}

int datastores__find_sites(struct analysis *a, struct db_target *d)
{
	int err;

	d->sql_steps = d->pgx_steps = d->redis_steps = d->redis_pipe_steps = -1;
	err = find_sql_sites(a, d);
	err = err ?: find_pgx_sites(a, d);
	err = err ?: find_redis_sites(a, d);
	if (!err && datastores__any(d))
		err = datastores__index_methods(a, d);
	return err;
}

bool datastores__sql(const struct db_target *d)
{
	return d->sql_query.addr || d->sql_exec.addr || d->sql_rows.addr || d->sql_result.addr;
}

bool datastores__pgx(const struct db_target *d)
{
	return d->pgx_query.addr || d->pgx_exec.addr || d->pgx_batch.addr;
}

bool datastores__any(const struct db_target *d)
{
	return datastores__sql(d) || datastores__pgx(d) || d->redis_process.addr;
}

/*
 * A library's offsets into OUT (COUNT of them, -1 each when unknown): from the binary's DWARF,
 * else its table. False, and the reason logged, when neither knows them.
 */
static bool module_offsets(struct analysis *a, const struct offsets *table, const char *module,
			   const char *version, int64_t *out, size_t count, char *desc,
			   size_t desc_len, const char *what)
{
	size_t i;
	int err;

	for (i = 0; i < count; i++)
		out[i] = -1;
	err = module_offsets__for_binary(table, module, a->path, a->gobin, out, desc,
					 desc_len);
	if (err) {
		pr_warn("'%s' uses %s %s, whose struct layouts gospan does not know (no DWARF and "
			"no offset table row): %s; 'make offsets' adds newer releases",
			a->path, module, version, what);
		return false;
	}
	return true;
}

/*
 * The methods an itab of a driver's connection type RECV ("github.com/lib/pq.(*conn)") may have
 * first: QueryerContext's, Queryer's, ExecerContext's, Execer's and driver.Conn's, into S. A
 * method the program never calls may not be linked; -ENOENT when none is.
 */
static int server_fns(struct analysis *a, const char *recv, struct sql_server *s)
{
	static const char *const methods[SQL_SERVER_FNS] = { "QueryContext", "Query",
							     "ExecContext", "Exec", "Begin" };
	struct elf_symbol sym;
	char name[160];
	size_t i, n = 0;

	for (i = 0; i < SQL_SERVER_FNS; i++) {
		snprintf(name, sizeof(name), "%s.%s", recv, methods[i]);
		if (!analysis__find_func(a, name, &sym))
			s->fns[n++] = sym.addr;
	}
	return n ? 0 : -ENOENT;
}

/*
 * The next free entry of C's sql_servers for the driver whose connection type is RECV, with no
 * way to its server yet; NULL when the binary has none of its methods or the table is full.
 */
static struct sql_server *add_server(struct analysis *a, struct target_config *c, const char *recv)
{
	struct sql_server *s;
	size_t i;

	for (i = 0; i < MAX_SQL_SERVERS && c->sql_servers[i].fns[0]; i++)
		;
	if (i == MAX_SQL_SERVERS)
		return NULL;
	s = &c->sql_servers[i];
	memset(s, 0, sizeof(*s));
	s->hops[0] = s->hops[1] = s->host = s->port = s->peer = -1;
	if (server_fns(a, recv, s)) {
		memset(s, 0, sizeof(*s));
		return NULL;
	}
	return s;
}

/*
 * Whether C can read the peer of a connection's net.Conn (bpf/include/go_net.bpf.h's
 * read_conn_peer): the Go offsets GO_OFFS from a *net.TCPConn to its peer's *net.TCPAddr, and the
 * methods that tell those types in their interfaces, which it sets in C.
 */
static bool peer_readable(struct analysis *a, const int64_t *go_offs, struct target_config *c)
{
	struct elf_symbol sym;

	/* The binary's own Go offsets; gRPC's and fasthttp's analyses set the same. */
	c->conn_fd = go_offs[GO_FIELD_CONN_FD];
	c->netfd_raddr = go_offs[GO_FIELD_NETFD_RADDR];
	c->tcpaddr_ip = go_offs[GO_FIELD_TCPADDR_IP];
	c->tcpaddr_port = go_offs[GO_FIELD_TCPADDR_PORT];
	if (!c->fn_tcpconn_close && !analysis__find_func(a, "net.(*TCPConn).Close", &sym))
		c->fn_tcpconn_close = sym.addr;
	if (!c->fn_tcpaddr_network && !analysis__find_func(a, "net.(*TCPAddr).Network", &sym))
		c->fn_tcpaddr_network = sym.addr;
	return c->conn_fd >= 0 && c->netfd_raddr >= 0 && c->tcpaddr_ip >= 0 &&
	       c->tcpaddr_port >= 0 && c->fn_tcpconn_close && c->fn_tcpaddr_network;
}

/*
 * database/sql spans' server.address and server.port, from the connections of the drivers that
 * keep them: lib/pq (v1.11 on: its Config, by value; before, the peer of its net.Conn),
 * go-sql-driver/mysql (its *Config's Addr) and pgx's own driver (its *pgx.Conn's
 * configuration, PGX: pgx's offsets, or NULL). GO_OFFS: the Go offsets.
 */
static void configure_sql_servers(struct analysis *a, const struct module_tables *modules,
				  const int64_t *go_offs, const int64_t *pgx,
				  struct target_config *c)
{
	int64_t pq[PQ_FIELD__COUNT], my[MYSQL_FIELD__COUNT];
	const char *version;
	struct sql_server *s;
	char desc[48];

	version = gobin__module_version(a->gobin, PQ_MODULE);
	if (version && (s = add_server(a, c, PQ_CONN)) &&
	    module_offsets(a, modules ? modules->pq : NULL, PQ_MODULE, version, pq, PQ_FIELD__COUNT,
			   desc, sizeof(desc), "its spans will have no server address")) {
		if (pq[PQ_FIELD_CONN_CFG] >= 0 && pq[PQ_FIELD_CONFIG_HOST] >= 0) {
			s->host = (int32_t)(pq[PQ_FIELD_CONN_CFG] + pq[PQ_FIELD_CONFIG_HOST]);
			if (pq[PQ_FIELD_CONFIG_PORT] >= 0)
				s->port = (int32_t)(pq[PQ_FIELD_CONN_CFG] +
						    pq[PQ_FIELD_CONFIG_PORT]);
		} else if (pq[PQ_FIELD_CONN_C] >= 0 && peer_readable(a, go_offs, c)) {
			/* Its options are a map: the address its socket is connected to instead. */
			s->peer = (int32_t)pq[PQ_FIELD_CONN_C];
		} else {
			pr_info("'%s' uses lib/pq %s, which keeps its connections' host in a map, and "
				"the way to its socket's peer is unknown (no DWARF, and a Go release "
				"the table lacks): its spans have no server address",
				a->path, version);
		}
	}
	version = gobin__module_version(a->gobin, MYSQL_MODULE);
	if (version && (s = add_server(a, c, MYSQL_CONN)) &&
	    module_offsets(a, modules ? modules->mysql : NULL, MYSQL_MODULE, version, my,
			   MYSQL_FIELD__COUNT, desc, sizeof(desc),
			   "its spans will have no server address")) {
		s->hops[0] = (int32_t)my[MYSQL_FIELD_CONN_CFG];
		s->host = s->hops[0] >= 0 ? (int32_t)my[MYSQL_FIELD_CONFIG_ADDR] : -1;
	}
	if (pgx && pgx[PGX_FIELD_STDLIB_CONN] >= 0 && pgx[PGX_FIELD_CONN_CONFIG] >= 0 &&
	    pgx[PGX_FIELD_CONNCONFIG_CONFIG] >= 0 && pgx[PGX_FIELD_CONFIG_HOST] >= 0 &&
	    (s = add_server(a, c, PGX_STDLIB_CONN))) {
		s->hops[0] = (int32_t)pgx[PGX_FIELD_STDLIB_CONN];
		s->hops[1] = (int32_t)pgx[PGX_FIELD_CONN_CONFIG];
		s->host = (int32_t)(pgx[PGX_FIELD_CONNCONFIG_CONFIG] + pgx[PGX_FIELD_CONFIG_HOST]);
		if (pgx[PGX_FIELD_CONFIG_PORT] >= 0)
			s->port = (int32_t)(pgx[PGX_FIELD_CONNCONFIG_CONFIG] +
					    pgx[PGX_FIELD_CONFIG_PORT]);
	}
}

int datastores__configure(struct analysis *a, struct db_target *d, const int64_t *go_offs,
			  const struct module_tables *modules, struct target_config *c)
{
	bool have_pgx = false;
	int64_t pgx[PGX_FIELD__COUNT], redis[REDIS_FIELD__COUNT];

	c->sql_stmt_query = go_offs[GO_FIELD_SQL_STMT_QUERY];
	c->pgx_conn_config = c->pgx_config_host = c->pgx_config_port = -1;
	c->pgx_batch_queries = c->pgx_query_sql = -1;
	c->redis_client_opt = c->redis_opt_addr = c->redis_cmd_args = -1;
	/* A binary without prepared statements has no Stmt methods, nor Stmt in its DWARF. */
	if ((d->sql_stmt_query.addr || d->sql_stmt_exec.addr) && c->sql_stmt_query < 0) {
		/* Every other part works; prepared statements would have no text. */
		pr_warn("'%s': no offset for database/sql's Stmt.query: prepared statements' spans "
			"will have no query text",
			a->path);
	}
	memset(c->sql_servers, 0, sizeof(c->sql_servers));
	/* pgx's offsets serve its own API and its database/sql driver alike. */
	if (d->pgx_version[0] && (datastores__pgx(d) || datastores__sql(d)))
		have_pgx = module_offsets(a, modules ? modules->pgx : NULL, PGX_MODULE,
					  d->pgx_version, pgx, PGX_FIELD__COUNT, d->pgx_offsets,
					  sizeof(d->pgx_offsets),
					  "pgx spans will have no server address or batch text");
	if (datastores__pgx(d) && have_pgx) {
		c->pgx_conn_config = pgx[PGX_FIELD_CONN_CONFIG];
		if (pgx[PGX_FIELD_CONNCONFIG_CONFIG] >= 0 && pgx[PGX_FIELD_CONFIG_HOST] >= 0)
			c->pgx_config_host =
				pgx[PGX_FIELD_CONNCONFIG_CONFIG] + pgx[PGX_FIELD_CONFIG_HOST];
		if (pgx[PGX_FIELD_CONNCONFIG_CONFIG] >= 0 && pgx[PGX_FIELD_CONFIG_PORT] >= 0)
			c->pgx_config_port =
				pgx[PGX_FIELD_CONNCONFIG_CONFIG] + pgx[PGX_FIELD_CONFIG_PORT];
		c->pgx_batch_queries = pgx[PGX_FIELD_BATCH_QUEUED] >= 0 ?
					       pgx[PGX_FIELD_BATCH_QUEUED] :
					       pgx[PGX_FIELD_BATCH_QUEUED_OLD];
		c->pgx_query_sql = pgx[PGX_FIELD_QUERY_SQL] >= 0 ? pgx[PGX_FIELD_QUERY_SQL] :
								    pgx[PGX_FIELD_QUERY_SQL_OLD];
	}
	if (d->redis_process.addr) {
		if (module_offsets(a, modules ? modules->redis : NULL, REDIS_MODULE,
				   d->redis_version, redis, REDIS_FIELD__COUNT, d->redis_offsets,
				   sizeof(d->redis_offsets), "no Redis spans") &&
		    redis[REDIS_FIELD_BASECMD_ARGS] >= 0) {
			c->redis_client_opt = redis[REDIS_FIELD_BASECLIENT_OPT];
			c->redis_opt_addr = redis[REDIS_FIELD_OPTIONS_ADDR];
			c->redis_cmd_args = redis[REDIS_FIELD_BASECMD_ARGS];
		} else {
			/* A span without its command would say nothing. */
			drop_sites((struct probe_site *[]){ &d->redis_process, &d->redis_pipeline,
							     &d->redis_tx_pipeline },
				   3);
			d->redis_steps = d->redis_pipe_steps = -1;
		}
	}
	if (datastores__sql(d))
		configure_sql_servers(a, modules, go_offs, have_pgx ? pgx : NULL, c);
	c->db_sql = datastores__sql(d);
	c->db_pgx = datastores__pgx(d);
	c->db_redis = d->redis_process.addr != 0;
	return 0;
}

void datastores__release(struct db_target *d)
{
	struct probe_site *all[] = { &d->sql_query,	 &d->sql_exec,	     &d->sql_rows,
				     &d->sql_result,	 &d->sql_stmt_query, &d->sql_stmt_exec,
				     &d->sql_prepare,	 &d->sql_begin,	     &d->sql_commit,
				     &d->sql_rollback,	 &d->pgx_query,	     &d->pgx_exec,
				     &d->pgx_batch,	 &d->redis_process,  &d->redis_pipeline,
				     &d->redis_tx_pipeline };
	size_t i;

	for (i = 0; i < sizeof(all) / sizeof(all[0]); i++)
		probe_site__release(all[i]);
	for (i = 0; i < d->nerrors; i++)
		free((char *)d->errors[i].what);
	free(d->drivers);
	free(d->errors);
	d->drivers = d->errors = NULL;
	d->ndrivers = d->nerrors = 0;
}
