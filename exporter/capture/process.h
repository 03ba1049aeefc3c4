/* SPDX-License-Identifier: MIT */
/*
 * What gospan knows of each traced process: its resource (service.name, process.*, host.name,
 * container.*, k8s.pod.uid) and where its binary is loaded. Built on a process's first record,
 * from /proc and the target analysis; never from the target's memory.
 */
#ifndef GOSPAN_PROCESS_H
#define GOSPAN_PROCESS_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

struct config;
struct resource;
struct target;

struct process {
	pid_t pid;
	const struct target *target;
	struct resource *res;
	uint64_t load_bias; /* runtime address - link-time address (PIE); 0 otherwise */
	struct process *next;
};

struct process_table;

/* CFG supplies OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES; it must outlive the table. */
struct process_table *process_table__new(const struct config *cfg);
void process_table__free(struct process_table *pt);
/* Registers target T under COOKIE, as given by probes__attach. */
int process_table__add_target(struct process_table *pt, uint32_t cookie, const struct target *t);
const struct target *process_table__target(const struct process_table *pt, uint32_t cookie);
/* The process PID running the target of COOKIE, created on first use. NULL on failure (errno). */
struct process *process_table__get(struct process_table *pt, pid_t pid, uint32_t cookie);
/* The process PID if known, else NULL. */
struct process *process_table__find(struct process_table *pt, pid_t pid);
/* How far PID's PIE binary was moved from LINK_BASE, its link address of file offset 0; 0 if unknown. */
uint64_t process__load_bias(pid_t pid, uint64_t link_base);
/* Forgets PID (it exited). */
void process_table__remove(struct process_table *pt, pid_t pid);
/*
 * Forgets every process that has exited, so that --exe with a service restarting for days keeps
 * a table as long as the processes alive. BUSY(CTX, PID) says whether calls still open point at
 * the process (records.c); such a process stays until they are gone. Returns how many went.
 */
size_t process_table__prune(struct process_table *pt, bool (*busy)(void *ctx, pid_t pid),
			    void *ctx);

#endif
