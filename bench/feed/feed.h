/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* What feed.c and feed.bpf.c share: the records' template and a test run's context. */
#ifndef GOSPAN_BENCH_FEED_H
#define GOSPAN_BENCH_FEED_H

#include <linux/types.h>

#include "events.h"

/* The template map's one value: what every span's two records copy. */
struct feed_template {
	struct http_server_start start;
	struct http_server_end end;
};

/* What one run asks for, and what it did: the test run's context. */
struct feed_args {
	__u64 seq;     /* spans written before this run */
	__u32 count;   /* spans to write */
	__u32 written; /* out: spans whose two records both went in */
	__u32 full;    /* out: records refused because the ring buffer was full */
	__u32 _pad;
};

#endif
