/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * What the Kafka clients' probes share (defined in kafka.bpf.c): marking a message for the
 * socket-layer writer; the walk of a message's headers for trace context, for the clients whose
 * header slices have one shape (kafka-go's []Header, franz-go's []RecordHeader: a name string
 * and a value []byte each); and a consumer goroutine's state, whose message is processed from a
 * read's return to its next read (kafka_fetch_entry), a commit or a close (kafka_settle).
 */
#ifndef GOSPAN_KAFKA_CONTEXT_BPF_H
#define GOSPAN_KAFKA_CONTEXT_BPF_H

#include "events.h"
#include "kafka_mark.bpf.h"
#include "probe.bpf.h"

/* A Go []byte's header: a string's, and its capacity. */
struct kafka_bytes {
	const char *ptr;
	__s64 len;
	__s64 cap;
};

/* The []byte B's first N bytes into DST; *LEN its length (-1: nil), as the writer hashes it. */
static __always_inline void kafka_fp_part(__u8 *dst, __u32 n, const struct kafka_bytes *b,
					  __s32 *len)
{
	*len = b->ptr ? (__s32)b->len : -1;
	if (b->ptr && b->len > 0)
		bpf_probe_read_user(dst, (__u64)b->len < n ? (__u32)b->len : n, b->ptr);
}

/*
 * A message's key, the []byte B (zeroed when it could not be read): whether there is one, and
 * where keys are captured (GOSPAN_CAPTURE_MESSAGE_KEY), its bytes into KEY, *KEY_LEN of them.
 */
static __always_inline __u8 kafka_key(const struct target_config *cfg, const struct kafka_bytes *b,
				      char *key, __u32 *key_len)
{
	*key_len = 0;
	if (!b->ptr || b->len <= 0)
		return 0;
	if (cfg->kafka_key)
		*key_len = go_copy_string(key, MAX_KAFKA_KEY_LEN, b->ptr, b->len);
	return 1;
}

/*
 * Marks the message whose key and value FP holds (this CPU's scratch, held) as CTX's, for process
 * PID: the socket-layer writer finds the mark by the same fingerprint in the produce request
 * (kafka_mark.bpf.h). CTX is handed whole, padding included: zero it before filling it.
 */
int gospan_kafka_mark(struct kafka_fp_input *fp, __u32 pid, const struct span_ctx *ctx);

/* Headers looked at a message; the bytes one header takes at most. */
#define KAFKA_HEADERS_MAX 16
#define KAFKA_HEADER_MAX 64

/*
 * Where a client's header element keeps its name and value, and its size (target_config's);
 * INDIRECT: the slice holds pointers to the elements (sarama's []*RecordHeader).
 */
struct kafka_header_layout {
	__s64 key, value, size, indirect;
};

/* The walk's room, in the caller's per-CPU scratch: one header, and its name zero-padded. */
struct kafka_header_walk {
	__u8 header[KAFKA_HEADER_MAX];
	__u64 name[2];
};

/*
 * The trace context among the headers of the slice at HDRS laid out as L: its traceparent parsed
 * into E's ids (1), its tracestate into E's. W: this CPU's scratch, held. A global function: the
 * verifier checks it once for a program, not header after header on every path through it.
 */
int gospan_kafka_context(const struct kafka_header_layout *l, struct kafka_header_walk *w,
			 __u64 hdrs, struct kafka_process *e);

/*
 * A consumer goroutine: the reader or client (HANDLE) its last read was made on, and the message
 * it processes (OPEN) with the span it worked for before (PREV, when HAS_PREV), restored at the
 * end.
 *
 * sarama's consumer groups (kafka_sarama.bpf.c): HANDLE is the claim's channel, once CONFIRMED.
 * A receive in flight (RECV, its enum recv_kind; 0: none) from channel RECV_CHAN puts its
 * message where RECV_AT says (a select: its cases), an offset from SP when RECV_ON_STACK (the
 * stack may move while the goroutine waits). Until CONFIRMED, LAST is the message the
 * goroutine received last, from LAST_CHAN, for MarkMessage to tell that channel the claim's.
 */
struct kafka_consumer {
	__u64 handle;
	__u32 open;
	__u32 has_prev;
	struct span_ctx prev;
	struct kafka_process rec;
	__u64 recv_chan;
	__u64 recv_at;
	__u64 last;
	__u64 last_chan;
	__u8 recv;
	__u8 recv_on_stack;
	__u8 confirmed;
	__u8 _pad[5];
};

SHARED_MAP(kafka_consumers, BPF_MAP_TYPE_LRU_HASH, 16384, struct goroutine_key,
	   struct kafka_consumer);

/*
 * Goroutine KEY's consumer state, made where it has none from FRESH (this CPU's scratch, held,
 * zeroed here); NULL, counted, when the map is full.
 */
static __always_inline struct kafka_consumer *kafka_consumer_of(const struct goroutine_key *key,
								struct kafka_consumer *fresh)
{
	struct kafka_consumer *c = bpf_map_lookup_elem(&kafka_consumers, key);

	if (c)
		return c;
	__builtin_memset(fresh, 0, sizeof(*fresh));
	if (bpf_map_update_elem(&kafka_consumers, key, fresh, BPF_NOEXIST) &&
	    !bpf_map_lookup_elem(&kafka_consumers, key)) {
		count_drop(DROP_INFLIGHT_FULL);
		return NULL;
	}
	return bpf_map_lookup_elem(&kafka_consumers, key);
}

/*
 * Ends the message C's goroutine KEY processes, at NOW: its span goes out, and the goroutine is
 * back to the span it worked for before.
 */
static __always_inline void kafka_process_end(const struct goroutine_key *key,
					      struct kafka_consumer *c, __u64 now)
{
	struct goroutine_state *gs;

	if (!c->open)
		return;
	c->open = 0;
	c->rec.end_ns = now;
	if (bpf_ringbuf_output(&events, &c->rec, sizeof(c->rec), submit_flags()))
		count_drop(DROP_RINGBUF_FULL);
	gs = own_state(key);
	if (!gs)
		return;
	if (c->has_prev)
		gs->active = c->prev;
	else
		gs->active.live = 0;
}

/*
 * E, a message handed to the application on goroutine KEY at NOW, gets its ids (continuing the
 * trace of its headers' traceparent when HAS_TP) and its record header.
 */
static __always_inline void kafka_process_ids(GO_REGS *ctx, const struct target_config *cfg,
					      const struct goroutine_key *key,
					      struct kafka_process *e, bool has_tp, __u64 now)
{
	server_ids(cfg, &e->ids, has_tp, NULL);
	if (e->ids.remote_parent && e->tracestate_len)
		keep_tracestate(key->pid, e->ids.trace_id, e->tracestate, e->tracestate_len);
	fill_header(&e->hdr, EVENT_KAFKA_PROCESS, key, now);
	e->cookie = (__u32)bpf_get_attach_cookie(ctx);
	e->end_ns = 0;
}

/*
 * The message C holds is being processed from now: goroutine KEY works for its span until
 * kafka_process_end(), and then for the one it worked for before.
 */
static __always_inline void kafka_process_start(const struct goroutine_key *key,
						struct kafka_consumer *c)
{
	struct goroutine_state *gs = own_state(key);
	struct span_ctx own;

	c->has_prev = gs && gs->active.live;
	if (c->has_prev)
		c->prev = gs->active;
	span_ctx_of(&own, &c->rec.ids);
	if (gs)
		gs->active = own;
	else
		active_put(key, &own);
	c->open = 1;
}

#endif
