// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Data store client calls: database/sql (any driver), pgx v5's own API and go-redis v9. Each
 * call becomes one record, sent when it returns (struct db_call): a call has no children, so its
 * ids can be chosen at its end, and a call that never happened (database/sql's fast path refused
 * by the driver) costs nothing in user space.
 *
 * database/sql is probed where it hands a call to its driver, which is where every query, exec,
 * prepared statement and transaction statement goes, whatever the driver:
 *   ctxDriverQuery / ctxDriverExec   a query or exec with its text (DB, Conn and Tx alike);
 *   rowsiFromStatement / resultFromStatement   a prepared statement's execution, whose text was
 *   noted by (*Stmt).QueryContext / ExecContext, or by ctxDriverPrepare on the way there.
 * Their calls are direct, so exporter/analysis/datastores.c puts the ends in their callers, on
 * instructions the kernel emulates: no single-stepped hit a query.
 *
 * pgx's Conn.Query, Exec and SendBatch are probed at their entries and, inside them, right after
 * the inner call that does the work, where the kernel emulates the instruction; the RETs of
 * their ways out before it stay. go-redis's baseClient.process (or processStartingAt) is probed
 * at its entry and where its retry loop is over, on emulated instructions (the RETs of its rare
 * other ways out stay); its pipelines' processors at their entries and RETs.
 *
 * Linked with the other uprobe families into one object, whose maps and helpers it uses
 * (probe.bpf.h).
 */
#include "probe.bpf.h"
#include "go_net.bpf.h"

/* database/sql's ErrSkip: the driver declined the fast path and the call goes on prepared. */
#define SQL_ERR_SKIP "driver: skip fast-path"
#define SQL_ERR_SKIP_LEN 22
/* database/sql's ErrTxDone: the transaction was over before this call. */
#define SQL_ERR_TX_DONE "sql: transaction has already"
#define SQL_ERR_TX_DONE_LEN 28

/*
 * A call in flight longer than this is taken for one that never ended (its goroutine panicked
 * in the driver): a call made after it starts afresh instead of counting as part of it.
 */
#define DB_NEST_MAX_NS (60ULL * 1000000000ULL)

/*
 * The driver connection a database/sql call went to: its itab's first method (DRIVER_FN, a
 * runtime address: it names the driver), its data word, which of the target's sql_servers it is
 * (+ 1; 0: none), and the process's load bias as the entry's probe saw it (a peer's itab is told
 * by it).
 */
struct sql_conn {
	__u64 driver_fn;
	__u64 conn;
	__u64 bias;
	__u32 server;
	__u32 _pad;
};

/* A call in flight on a goroutine, until its end; then START_NS is 0. */
struct db_pending {
	__u64 start_ns;
	__u64 query_ptr;
	__s64 query_len;
	/* A prepared statement's text, noted before its execution begins (0: none). */
	__u64 note_ptr;
	__s64 note_len;
	struct sql_conn sql;
	__u64 obj;   /* pgx: the *Conn; go-redis: the *baseClient */
	__u64 items; /* pgx: the *Batch; go-redis: the command's data word, or the commands' array */
	__u32 nitems;
	__u32 client; /* enum db_client */
	__u32 err_slot; /* where the call returns its error's itab; 0: it returns none */
	/* pgx calls inside this database/sql call (pgx's own database/sql driver): not spans */
	__u32 nested;
	__u32 sql_op;	     /* enum db_sql_op */
	__u32 _pad;
	/* The connection of the goroutine's last database/sql call: a transaction's end is on it. */
	struct sql_conn last_sql;
};

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 16384);
	__type(key, struct goroutine_key);
	__type(value, struct db_pending);
} db_calls SEC(".maps");

/*
 * Starts a call on KEY's goroutine, unless the same call is already in flight there: an entry
 * probed at a function's first instruction fires again when its stack check grows the stack.
 */
static __always_inline struct db_pending *db_begin(const struct goroutine_key *key, __u32 client,
						   __u64 query_ptr, __s64 query_len, __u64 obj,
						   __u64 now)
{
	struct db_pending *p = bpf_map_lookup_elem(&db_calls, key);
	struct db_pending fresh = {};

	if (p && p->start_ns && p->client == client && p->query_ptr == query_ptr &&
	    p->obj == obj)
		return NULL;
	if (!p) {
		if (bpf_map_update_elem(&db_calls, key, &fresh, BPF_NOEXIST) &&
		    !bpf_map_lookup_elem(&db_calls, key)) {
			count_drop(DROP_INFLIGHT_FULL);
			return NULL;
		}
		p = bpf_map_lookup_elem(&db_calls, key);
		if (!p)
			return NULL;
	}
	p->start_ns = now;
	p->query_ptr = query_ptr;
	p->query_len = query_len;
	__builtin_memset(&p->sql, 0, sizeof(p->sql));
	p->obj = obj;
	p->items = 0;
	p->nitems = 0;
	p->client = client;
	p->err_slot = 0;
	p->nested = 0;
	p->sql_op = DB_SQL_QUERY;
	return p;
}

/* The leading strings of the value at DATA into LENS and STRS (struct db_call's err). */
static __always_inline void leading_strings(__u64 data, __u16 *lens,
					    char strs[DB_ERROR_STRS][MAX_DB_ERROR_LEN])
{
	struct go_string s[DB_ERROR_STRS];
	__u32 i;

	for (i = 0; i < DB_ERROR_STRS; i++)
		lens[i] = 0;
	if (!data || bpf_probe_read_user(s, sizeof(s), (void *)data))
		return;
	for (i = 0; i < DB_ERROR_STRS; i++)
		if (s[i].len > 0 && s[i].len <= 4096)
			lens[i] = (__u16)go_copy_string(strs[i], MAX_DB_ERROR_LEN, s[i].ptr,
							s[i].len);
}

/*
 * The leading strings of an error value whose data word is DATA (struct db_call), and of the
 * error it may wrap: what each means, user space knows from the types. Words that are not a
 * string header give a length 0 or a read that fails.
 */
static __always_inline void error_strings(__u64 data, struct db_call *e)
{
	struct go_string s8 = {};
	__u64 w[2] = {};
	bool read;

	leading_strings(data, e->err_lens, e->err);
	read = data && !bpf_probe_read_user(w, sizeof(w), (void *)data);
	e->err_head = read ? w[0] : 0;
	e->err_len8 = 0;
	if (data && !bpf_probe_read_user(&s8, sizeof(s8), (void *)(data + 8)) && s8.len > 0 &&
	    s8.len <= 4096)
		e->err_len8 = (__u16)go_copy_string(e->err8, MAX_DB_ERROR_LEN, s8.ptr, s8.len);
	e->inner_fn = 0;
	if (read && w[0] && w[1])
		e->inner_fn = go_itab_fn0(w[0]);
	leading_strings(e->inner_fn ? w[1] : 0, e->inner_lens, e->inner);
}

/* Whether the call's error text begins with WANT (LEN bytes, at most MAX_DB_ERROR_LEN). */
static __always_inline bool error_is(const struct db_call *e, const char *want, __u32 len)
{
	__u32 i;

	if (e->err_lens[0] < len)
		return false;
	for (i = 0; i < len && i < MAX_DB_ERROR_LEN; i++)
		if (e->err[0][i] != want[i])
			return false;
	return true;
}

/*
 * A go-redis command, from its data word (every command type embeds baseCmd first): the name in
 * its first argument, when that is a string, into NAME; the argument count into *NARGS.
 */
static __always_inline void redis_command(const struct target_config *cfg, __u64 cmd, char *name,
					  __u8 *nargs)
{
	struct go_string s = {};
	__u64 args[2], arg0[2];
	__u8 kind = 0;

	if (!cmd || bpf_probe_read_user(args, sizeof(args), (void *)(cmd + cfg->redis_cmd_args)))
		return;
	*nargs = args[1] > 255 ? 255 : (__u8)args[1];
	if (!args[0] || !args[1] || bpf_probe_read_user(arg0, sizeof(arg0), (void *)args[0]))
		return;
	if (!arg0[0] || !arg0[1] ||
	    bpf_probe_read_user(&kind, 1, (void *)(arg0[0] + GO_TYPE_KIND_OFF)) ||
	    (kind & GO_TYPE_KIND_MASK) != GO_KIND_STRING_ ||
	    bpf_probe_read_user(&s, sizeof(s), (void *)arg0[1]))
		return;
	go_copy_string(name, MAX_DB_COMMAND_LEN, s.ptr, s.len);
}

/* The go-redis part of a record: what was sent, and to which server. */
static __always_inline void redis_details(const struct target_config *cfg,
					  const struct db_pending *p, struct db_call *e)
{
	__u64 opt, cmd;
	__u32 i;

	if (cfg->redis_client_opt >= 0 && cfg->redis_opt_addr >= 0) {
		opt = go_read_word((void *)p->obj, cfg->redis_client_opt);
		if (opt)
			e->addr_len = go_read_string(e->addr, MAX_DB_ADDR_LEN,
						     (void *)(opt + cfg->redis_opt_addr));
	}
	if (cfg->redis_cmd_args < 0)
		return;
	if (p->client == DB_CLIENT_REDIS) {
		e->batch_size = 1;
		redis_command(cfg, p->items, e->commands[0], &e->nargs[0]);
		return;
	}
	e->batch_size = p->nitems;
	for (i = 0; i < MAX_DB_BATCH; i++) {
		if (i >= p->nitems)
			break;
		/* []Cmder: interface values, their data word second */
		cmd = go_read_word((void *)p->items, 16 * i + 8);
		redis_command(cfg, cmd, e->commands[i], &e->nargs[i]);
	}
}

/* The pgx part of a record: the server the connection was configured for, a batch's size. */
static __always_inline void pgx_details(const struct target_config *cfg,
					const struct db_pending *p, struct db_call *e)
{
	__u64 conf, queries[2], first;
	__u16 port = 0;

	if (cfg->pgx_conn_config >= 0 && cfg->pgx_config_host >= 0) {
		conf = go_read_word((void *)p->obj, cfg->pgx_conn_config);
		if (conf) {
			e->addr_len = go_read_string(e->addr, MAX_DB_ADDR_LEN,
						     (void *)(conf + cfg->pgx_config_host));
			if (cfg->pgx_config_port >= 0 &&
			    !bpf_probe_read_user(&port, sizeof(port),
						 (void *)(conf + cfg->pgx_config_port)))
				e->port = port;
		}
	}
	if (p->client != DB_CLIENT_PGX_BATCH || cfg->pgx_batch_queries < 0 ||
	    bpf_probe_read_user(queries, sizeof(queries),
				(void *)(p->items + cfg->pgx_batch_queries)))
		return;
	e->batch_size = queries[1] > 0xffffffffULL ? 0xffffffffU : (__u32)queries[1];
	first = queries[1] ? go_read_word((void *)queries[0], 0) : 0;
	if (first && cfg->pgx_query_sql >= 0)
		e->query_len = go_read_string(e->query, MAX_DB_QUERY_LEN,
					      (void *)(first + cfg->pgx_query_sql));
}

/*
 * Which of the target's sql_servers the driver connection whose itab's first method is FN (a
 * runtime address, BIAS above its link-time one) is of: its index + 1; 0 when none.
 */
static __always_inline __u32 sql_server_of(const struct target_config *cfg, __u64 fn, __u64 bias)
{
	__u32 i, j;

	if (!fn)
		return 0;
	fn -= bias;
	for (i = 0; i < MAX_SQL_SERVERS; i++)
		for (j = 0; j < SQL_SERVER_FNS; j++)
			if (cfg->sql_servers[i].fns[j] == fn)
				return i + 1;
	return 0;
}

/*
 * Where the driver connection CONN of sql_servers[SERVER - 1] says its server is, into E: its
 * host and port, or its net.Conn's peer (BIAS: the process's load bias). By value, not as the
 * map's struct sql_conn: the index must be the one checked.
 */
static __always_inline void sql_details(const struct target_config *cfg, __u32 server, __u64 conn,
					__u64 bias, struct db_call *e)
{
	const struct sql_server *s;
	struct net_endpoint ep;
	__u64 at = conn, idx;
	__u16 port = 0;
	__u32 i;

	if (!server || server > MAX_SQL_SERVERS || !conn)
		return;
	/*
	 * The index bounded as it is used: clang tests SERVER and indexes with SERVER - 1 made
	 * from it in 32 bits, which Linux 6.1's verifier cannot bound (it refuses the program).
	 */
	idx = server - 1;
	asm volatile("" : "+r"(idx));
	if (idx >= MAX_SQL_SERVERS)
		return;
	s = &cfg->sql_servers[idx];
	if (s->peer >= 0) {
		read_conn_peer(cfg, (void *)(conn + s->peer), bias, &ep);
		if (ep.ip_len == 4 || ep.ip_len == 16) {
			__builtin_memcpy(e->addr, ep.ip, sizeof(ep.ip));
			e->addr_ip = ep.ip_len;
			e->addr_len = ep.ip_len;
			e->port = ep.port;
		}
		return;
	}
	for (i = 0; i < SQL_SERVER_HOPS; i++) {
		if (s->hops[i] < 0)
			break;
		at = go_read_word((void *)at, s->hops[i]);
		if (!at)
			return;
	}
	if (s->host < 0)
		return;
	e->addr_len = go_read_string(e->addr, MAX_DB_ADDR_LEN, (void *)(at + s->host));
	if (s->port >= 0 && !bpf_probe_read_user(&port, sizeof(port), (void *)(at + s->port)))
		e->port = port;
}

/*
 * Ends the call in flight on this goroutine, of a client in [LO, HI]: one record. Its error's
 * itab is in ERR_SLOT, its data word in DATA_SLOT (0: the call returns no error).
 */
static __always_inline int db_end(GO_REGS *ctx, __u32 lo, __u32 hi, __u32 err_slot,
				  __u32 data_slot)
{
	__u64 now = bpf_ktime_get_ns();
	const struct target_config *cfg;
	struct goroutine_key key;
	struct db_pending *p;
	struct db_call *e;
	__u64 err_itab = 0, err_data = 0;

	cfg = probe_context(ctx, &key);
	if (!cfg)
		return 0;
	p = bpf_map_lookup_elem(&db_calls, &key);
	if (!p || !p->start_ns)
		return 0;
	/*
	 * The end of a call made inside another: pgx's inside a database/sql call through pgx's
	 * driver, or inside pgx itself; go-redis's connection set-up (HELLO) inside the command
	 * that needed the connection. Ends come in the reverse order of entries.
	 */
	if ((lo == DB_CLIENT_PGX || lo == DB_CLIENT_REDIS) && p->nested) {
		p->nested--;
		return 0;
	}
	if (p->client < lo || p->client > hi)
		return 0;
	if (err_slot && p->err_slot) {
		err_itab = go_arg(ctx, err_slot);
		err_data = go_arg(ctx, data_slot);
	}

	e = bpf_ringbuf_reserve(&events, sizeof(*e), 0);
	if (!e) {
		count_drop(DROP_RINGBUF_FULL);
		p->start_ns = 0;
		return 0;
	}
	error_strings(err_itab ? err_data : 0, e);
	/*
	 * A transaction's watcher rolls back one already committed when its context ends: no
	 * call, only database/sql's ErrTxDone.
	 */
	if (p->client == DB_CLIENT_SQL && p->sql_op == DB_SQL_ROLLBACK &&
	    error_is(e, SQL_ERR_TX_DONE, SQL_ERR_TX_DONE_LEN)) {
		bpf_ringbuf_discard(e, BPF_RB_NO_WAKEUP);
		p->start_ns = 0;
		return 0;
	}
	if (p->client == DB_CLIENT_SQL && error_is(e, SQL_ERR_SKIP, SQL_ERR_SKIP_LEN)) {
		/* Not a call: database/sql prepares the statement now, and its execution is one. */
		bpf_ringbuf_discard(e, BPF_RB_NO_WAKEUP);
		p->note_ptr = p->query_ptr;
		p->note_len = p->query_len;
		p->start_ns = 0;
		return 0;
	}
	fill_header(&e->hdr, EVENT_DB_CALL, &key, p->start_ns);
	child_span(ctx, cfg, &key, &e->ids);
	e->end_ns = now;
	e->cookie = (__u32)bpf_get_attach_cookie(ctx);
	e->client = p->client;
	e->driver_fn = p->sql.driver_fn;
	e->sql_op = (__u16)p->sql_op;
	if (p->sql.driver_fn)
		p->last_sql = p->sql;
	e->err_itab = err_itab;
	e->err_fn = go_itab_fn0(err_itab);
	e->batch_size = 0;
	e->addr_len = 0;
	e->addr_ip = 0;
	e->port = 0;
	__builtin_memset(e->nargs, 0, sizeof(e->nargs));
	__builtin_memset(e->commands, 0, sizeof(e->commands));
	e->query_len = p->query_ptr ? go_copy_string(e->query, MAX_DB_QUERY_LEN,
						     (const char *)p->query_ptr, p->query_len) :
				      0;
	if (p->client == DB_CLIENT_PGX || p->client == DB_CLIENT_PGX_BATCH)
		pgx_details(cfg, p, e);
	else if (p->client == DB_CLIENT_REDIS || p->client == DB_CLIENT_REDIS_PIPELINE)
		redis_details(cfg, p, e);
	else
		sql_details(cfg, p->sql.server, p->sql.conn, p->sql.bias, e);
	p->start_ns = 0;
	bpf_ringbuf_submit(e, submit_flags());
	return 0;
}

/*
 * Whether a call of CLIENT made now on KEY's goroutine is part of the call in flight there: pgx
 * under database/sql (pgx's own driver) or under pgx; go-redis under go-redis (a new connection's
 * HELLO). Counted, so that its end is not taken for the other's.
 */
static __always_inline bool db_nested(const struct goroutine_key *key, __u32 client, __u64 qp,
				      __u64 obj, __u64 now)
{
	struct db_pending *p = bpf_map_lookup_elem(&db_calls, key);
	bool inside;

	if (!p || !p->start_ns || now - p->start_ns >= DB_NEST_MAX_NS)
		return false;
	/*
	 * The same call's entry again (an entry at a function's first instruction, as on arm64,
	 * fires again when the stack check grows the stack): db_begin() leaves the call as it is.
	 * Counted as nested, its end would be taken for the inner call's and the span lost.
	 */
	if (p->client == client && p->query_ptr == qp && p->obj == obj)
		return false;
	if (client == DB_CLIENT_PGX || client == DB_CLIENT_PGX_BATCH)
		inside = p->client <= DB_CLIENT_PGX_BATCH;
	else
		inside = client >= DB_CLIENT_REDIS && p->client >= DB_CLIENT_REDIS;
	if (inside)
		p->nested++;
	return inside;
}

/*
 * The entry of a call of CLIENT, with its text (QP, QL) and its client object OBJ: the call in
 * flight on this goroutine from now, or NULL when it is not one of its own; its target's config
 * into *CFGP.
 */
static __always_inline struct db_pending *db_entry(GO_REGS *ctx, __u32 client, __u64 qp, __s64 ql,
						   __u64 obj, const struct target_config **cfgp)
{
	__u64 now = bpf_ktime_get_ns();
	const struct target_config *cfg;
	struct goroutine_key key;
	bool on;

	cfg = probe_context(ctx, &key);
	if (!cfg)
		return NULL;
	*cfgp = cfg;
	on = client == DB_CLIENT_SQL ? cfg->db_sql :
	     client <= DB_CLIENT_PGX_BATCH ? cfg->db_pgx :
					    cfg->db_redis;
	if (!on || db_nested(&key, client, qp, obj, now))
		return NULL;
	return db_begin(&key, client, qp, ql, obj, now);
}

/*
 * The database/sql call P goes to the driver connection whose interface is ITAB, CONN: its
 * driver, and which of the target's sql_servers it is. The entry probes' attach cookies carry
 * their link-time address above the target (exporter/capture/probes.c): with the probe's own,
 * the process's load bias.
 */
static __always_inline void sql_conn(GO_REGS *ctx, const struct target_config *cfg,
				     struct db_pending *p, __u64 itab, __u64 conn)
{
	p->sql.driver_fn = go_itab_fn0(itab);
	p->sql.conn = conn;
	p->sql.bias = load_bias(ctx, bpf_get_attach_cookie(ctx) >> 32);
	p->sql.server = sql_server_of(cfg, p->sql.driver_fn, p->sql.bias);
}

/*
 * At the entry of ctxDriverQuery or ctxDriverExec: func(ctx context.Context, queryerCtx
 * driver.QueryerContext, queryer driver.Queryer, query string, nvdargs []driver.NamedValue),
 * the same shape for both: the two interfaces in slots 3-4 and 5-6 (one of them nil), the
 * text in 7-8.
 */
SEC("uprobe")
int db_sql_entry(GO_REGS *ctx)
{
	const struct target_config *cfg = NULL;
	struct db_pending *p = db_entry(ctx, DB_CLIENT_SQL, go_arg(ctx, 7), (__s64)go_arg(ctx, 8), 0,
					&cfg);
	__u64 itab = go_arg(ctx, 3);

	if (p && cfg) {
		if (itab)
			sql_conn(ctx, cfg, p, itab, go_arg(ctx, 4));
		else
			sql_conn(ctx, cfg, p, go_arg(ctx, 5), go_arg(ctx, 6));
		p->err_slot = 3;
	}
	return 0;
}

/* Notes a prepared statement's text (PTR, LEN) for its execution, next on this goroutine. */
static __always_inline int note_query(GO_REGS *ctx, __u64 ptr, __s64 len)
{
	const struct target_config *cfg;
	struct goroutine_key key;
	struct db_pending fresh = {}, *p;

	cfg = probe_context(ctx, &key);
	if (!cfg || !cfg->db_sql)
		return 0;
	p = bpf_map_lookup_elem(&db_calls, &key);
	if (!p) {
		fresh.note_ptr = ptr;
		fresh.note_len = len;
		bpf_map_update_elem(&db_calls, &key, &fresh, BPF_NOEXIST);
		return 0;
	}
	p->note_ptr = ptr;
	p->note_len = len;
	return 0;
}

/* At the entry of (*Stmt).QueryContext or ExecContext, the statement in slot 1: its text. */
SEC("uprobe")
int db_sql_stmt(GO_REGS *ctx)
{
	__u32 cookie = (__u32)bpf_get_attach_cookie(ctx);
	const struct target_config *cfg = bpf_map_lookup_elem(&targets, &cookie);
	struct go_string q;

	if (!cfg || cfg->sql_stmt_query < 0 ||
	    bpf_probe_read_user(&q, sizeof(q), (void *)(go_arg(ctx, 1) + cfg->sql_stmt_query)))
		return 0;
	return note_query(ctx, (__u64)q.ptr, q.len);
}

/*
 * At ctxDriverPrepare's entry: func(ctx context.Context, ci driver.Conn, query string), the text
 * in slots 5-6. A statement prepared for a query the driver would not run directly (ErrSkip, or a
 * driver without Queryer) is executed next, and this is its text.
 */
SEC("uprobe")
int db_sql_prepare(GO_REGS *ctx)
{
	return note_query(ctx, go_arg(ctx, 5), (__s64)go_arg(ctx, 6));
}

/*
 * At the entry of rowsiFromStatement or resultFromStatement: func(ctx context.Context,
 * ci driver.Conn, ds *driverStmt, args ...any): a prepared statement executed, the driver's
 * connection in slots 3-4, the text the one noted last on this goroutine.
 */
SEC("uprobe")
int db_sql_stmt_entry(GO_REGS *ctx)
{
	const struct target_config *cfg = NULL;
	struct db_pending *p = db_entry(ctx, DB_CLIENT_SQL, 0, 0, 0, &cfg);

	if (p && cfg) {
		p->query_ptr = p->note_ptr;
		p->query_len = p->note_len;
		sql_conn(ctx, cfg, p, go_arg(ctx, 3), go_arg(ctx, 4));
		p->err_slot = 3;
	}
	return 0;
}

/*
 * Where a database/sql driver call has returned: (result interface, error) in slots 1-4, or,
 * in the caller, the error's itab where the cookie says (the data word stays in slot 4: the
 * site was chosen so, exporter/analysis/sites.h).
 */
SEC("uprobe")
int db_sql_end(GO_REGS *ctx)
{
	__u32 slot = COOKIE_RESULT_SLOT(bpf_get_attach_cookie(ctx));

	return db_end(ctx, DB_CLIENT_SQL, DB_CLIENT_SQL, slot ? slot : 3, 4);
}

/*
 * At ctxDriverBegin's entry: func(ctx context.Context, opts *TxOptions, ci driver.Conn): a
 * transaction begins on the driver connection in slots 4-5. It returns (driver.Tx, error).
 */
SEC("uprobe")
int db_sql_begin(GO_REGS *ctx)
{
	const struct target_config *cfg = NULL;
	struct db_pending *p = db_entry(ctx, DB_CLIENT_SQL, 0, 0, go_arg(ctx, 4), &cfg);

	if (p && cfg) {
		sql_conn(ctx, cfg, p, go_arg(ctx, 4), go_arg(ctx, 5));
		p->sql_op = DB_SQL_BEGIN;
		p->err_slot = 3;
	}
	return 0;
}

/*
 * At the entries of (*Tx).Commit and (*Tx).rollback (slot 1: the Tx), which return an error
 * alone. The driver is the one of the goroutine's last call, most often the transaction's own
 * begin; a rollback on the goroutine a cancelled context ends the transaction on has none.
 */
static __always_inline int sql_tx_end_begin(GO_REGS *ctx, __u32 op)
{
	const struct target_config *cfg = NULL;
	struct db_pending *p = db_entry(ctx, DB_CLIENT_SQL, 0, 0, go_arg(ctx, 1), &cfg);

	if (p) {
		/* db_begin leaves the last driver alone */
		p->sql = p->last_sql;
		p->sql_op = op;
		p->err_slot = 1;
	}
	return 0;
}

SEC("uprobe")
int db_sql_commit(GO_REGS *ctx)
{
	return sql_tx_end_begin(ctx, DB_SQL_COMMIT);
}

SEC("uprobe")
int db_sql_rollback(GO_REGS *ctx)
{
	return sql_tx_end_begin(ctx, DB_SQL_ROLLBACK);
}

/* Where Commit or rollback has returned: the error in slots 1-2, or where the cookie says. */
SEC("uprobe")
int db_sql_tx_end(GO_REGS *ctx)
{
	__u32 slot = COOKIE_RESULT_SLOT(bpf_get_attach_cookie(ctx));

	return db_end(ctx, DB_CLIENT_SQL, DB_CLIENT_SQL, slot ? slot : 1, 2);
}

/*
 * pgx's (*Conn).Query and Exec: func(ctx context.Context, sql string, args ...any), the conn in
 * slot 1, the text in 4-5; they return their error in slots 3-4.
 */
SEC("uprobe")
int db_pgx_entry(GO_REGS *ctx)
{
	const struct target_config *cfg = NULL;
	struct db_pending *p = db_entry(ctx, DB_CLIENT_PGX, go_arg(ctx, 4), (__s64)go_arg(ctx, 5),
					go_arg(ctx, 1), &cfg);

	if (p)
		p->err_slot = 3;
	return 0;
}

/* (*Conn).SendBatch(ctx context.Context, b *Batch) BatchResults: the batch in slot 4. */
SEC("uprobe")
int db_pgx_batch_entry(GO_REGS *ctx)
{
	const struct target_config *cfg = NULL;
	struct db_pending *p = db_entry(ctx, DB_CLIENT_PGX_BATCH, 0, 0, go_arg(ctx, 1), &cfg);

	if (p)
		p->items = go_arg(ctx, 4);
	return 0;
}

/*
 * At pgx's RETs: Query's (Rows, error), Exec's (CommandTag, error); SendBatch's no error. Or in
 * Exec after (*Conn).exec has returned the same, the error's itab where the cookie says (its data
 * word stays in slot 4), or in SendBatch after sendBatch.
 */
SEC("uprobe")
int db_pgx_end(GO_REGS *ctx)
{
	__u32 slot = COOKIE_RESULT_SLOT(bpf_get_attach_cookie(ctx));

	return db_end(ctx, DB_CLIENT_PGX, DB_CLIENT_PGX_BATCH, slot ? slot : 3, 4);
}

/*
 * In Query after the pgconn call that sent the query: the ways there return no error
 * (exporter/analysis/datastores.c), and the registers hold none.
 */
SEC("uprobe")
int db_pgx_success(GO_REGS *ctx)
{
	return db_end(ctx, DB_CLIENT_PGX, DB_CLIENT_PGX_BATCH, 0, 0);
}

/*
 * go-redis: (*baseClient).process(ctx context.Context, cmd Cmder) error (or, where that is
 * inlined, processStartingAt, whose first arguments are the same), the client in slot 1 and the
 * command's data word in 5.
 */
SEC("uprobe")
int db_redis_entry(GO_REGS *ctx)
{
	const struct target_config *cfg = NULL;
	struct db_pending *p = db_entry(ctx, DB_CLIENT_REDIS, 0, 0, go_arg(ctx, 1), &cfg);

	if (p) {
		p->items = go_arg(ctx, 5);
		p->nitems = 1;
		p->err_slot = 1;
	}
	return 0;
}

/* The pipeline processors, (ctx context.Context, cmds []Cmder) error: the commands in 4-5. */
SEC("uprobe")
int db_redis_pipeline_entry(GO_REGS *ctx)
{
	const struct target_config *cfg = NULL;
	struct db_pending *p = db_entry(ctx, DB_CLIENT_REDIS_PIPELINE, 0, 0, go_arg(ctx, 1), &cfg);
	__u64 n = go_arg(ctx, 5);

	if (p) {
		p->items = go_arg(ctx, 4);
		p->nitems = n > 0xffffffffULL ? 0xffffffffU : (__u32)n;
		p->err_slot = 1;
	}
	return 0;
}

/* At the pipeline processors' RETs: the error in slots 1-2. */
SEC("uprobe")
int db_redis_end(GO_REGS *ctx)
{
	return db_end(ctx, DB_CLIENT_REDIS, DB_CLIENT_REDIS_PIPELINE, 1, 2);
}

/*
 * A command's end: where its retry loop is over, the error it returns in the slot the cookie
 * says and the next (exporter/analysis/datastores.c), or at a RET of a way out without one, the
 * error in slots 1-2. On a conditional jump, only when the register it tests sends the command
 * out of the loop. A command's alone: a pipeline in flight is not its.
 */
SEC("uprobe")
int db_redis_cmd_end(GO_REGS *ctx)
{
	__u64 cookie = bpf_get_attach_cookie(ctx);
	__u32 slot = COOKIE_RESULT_SLOT(cookie), bytes = COOKIE_COND_BYTES(cookie);
	__u64 tested;

	if (COOKIE_COND_SLOT(cookie)) {
		tested = go_arg(ctx, COOKIE_COND_SLOT(cookie));
		if (bytes < 8)
			tested &= (1ULL << (bytes * 8)) - 1;
		if (!tested != !!(cookie & COOKIE_COND_IF_ZERO))
			return 0;
	}
	if (!slot)
		slot = 1;
	return db_end(ctx, DB_CLIENT_REDIS, DB_CLIENT_REDIS, slot, slot + 1);
}
