/* SPDX-License-Identifier: MIT */
/*
 * Target analysis for data store clients: database/sql (any driver), pgx v5 and go-redis v9.
 * Where their calls are probed, which offsets their structs need, and the tables that turn what
 * the probes see (a driver's method, an error's method) into names for the spans.
 */
#ifndef GOSPAN_DATASTORES_H
#define GOSPAN_DATASTORES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "events.h"
#include "analysis/planner.h"

struct analysis;
struct module_tables;

/* A driver's or a library's method, by its link-time address, and what it says. */
struct db_method {
	uint64_t addr;
	const char *what; /* db.system.name of a driver's method; an error's Go type (%T) */
};

/*
 * Data store clients in a binary. Each probe_site's addr is 0 when that part is
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
	int redis_pipe_steps; /* ... of one pipeline (a plain one or a transaction's) */
};



/*
 * Finds the clients the binary links and their probe sites into D. A client that cannot be
 * probed is left out with a warning. -ENOMEM is the only failure.
 */
int datastores__find_sites(struct analysis *a, struct db_target *d);

/*
 * Picks the clients' offsets (DWARF, else MODULES' tables) and fills their part of the BPF
 * config C; run after the Go offsets GO_OFFS (GO_FIELD__COUNT of them) are known. A client whose
 * required offsets are missing is left out with a warning. -ENOMEM is the only failure.
 */
int datastores__configure(struct analysis *a, struct db_target *d, const int64_t *go_offs,
			  const struct module_tables *modules, struct target_config *c);

/* Whether database/sql's calls are traced (any of its driver calls is probed). */
bool datastores__sql(const struct db_target *d);

/* Whether any of pgx's Conn methods is probed. */
bool datastores__pgx(const struct db_target *d);

/* Whether any data store client is traced. */
bool datastores__any(const struct db_target *d);

/*
 * db.system.name of the database/sql driver whose method is at link-time address FN (struct
 * db_call's driver_fn): "postgresql", "mysql", "sqlite", ...; "other_sql" when unknown.
 */
const char *datastores__system(const struct db_target *d, uint64_t fn);

/*
 * Indexes the binary's database/sql drivers' identifying methods and its Error methods (for
 * datastores__system and datastores__error_type), once; the data store clients' analysis does
 * it, and another family whose errors are named by type asks for it. -ENOMEM on failure.
 */
int datastores__index_methods(struct analysis *a, struct db_target *d);

/* Go's name of an error's type (as %T prints it) from its Error method; NULL when unknown. */
const char *datastores__error_type(const struct db_target *d, uint64_t fn);

void datastores__release(struct db_target *d);

#endif
