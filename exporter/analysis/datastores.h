/* SPDX-License-Identifier: MIT */
/*
 * Target analysis for data store clients: database/sql (any driver), pgx v5 and go-redis v9.
 * Where their calls are probed, which offsets their structs need, and the tables that turn what
 * the probes see (a driver's method, an error's method) into names for the spans.
 */
#ifndef GOSPAN_DATASTORES_H
#define GOSPAN_DATASTORES_H

#include <stdbool.h>
#include <stdint.h>

struct analysis;
struct db_target;
struct module_tables;

/*
 * Finds the clients the binary links and their probe sites into a->t->db. A client that cannot be
 * probed is left out with a warning. -ENOMEM is the only failure.
 */
int datastores__find_sites(struct analysis *a);

/*
 * Picks the clients' offsets (DWARF, else MODULES' tables) and fills their part of the BPF
 * config; run after the Go offsets are known. A client whose required offsets are missing is
 * left out with a warning. -ENOMEM is the only failure.
 */
int datastores__configure(struct analysis *a, const struct module_tables *modules);

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

/* Go's name of an error's type (as %T prints it) from its Error method; NULL when unknown. */
const char *datastores__error_type(const struct db_target *d, uint64_t fn);

void datastores__release(struct db_target *d);

#endif
