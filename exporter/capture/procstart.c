// SPDX-License-Identifier: MIT
/*
 * The start of a traced binary's new process (--exe), from runtime.main's probe
 * (bpf/go_runtime.bpf.c): no span, only the news, handed on (records_opts.process_started) so
 * that the socket-layer writer gets onto the process's cgroup before its first connection.
 */
#include "events.h"
#include "capture/records.h"
#include "capture/records_family.h"

static void process_start(struct records *r, const void *record)
{
	const struct process_start *e = record;
	const struct records_opts *o = records__opts(r);

	if (o->process_started)
		o->process_started(o->ctx, e->hdr.pid, e->cookie);
}

const struct record_handler procstart_records[] = {
	{ EVENT_PROCESS_START, sizeof(struct process_start), process_start },
	{ 0 },
};
