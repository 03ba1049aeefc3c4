// SPDX-License-Identifier: GPL-2.0
/*
 * Outgoing trace context at the socket layer. A sockops program in the traced processes'
 * cgroups puts their client TCP sockets in a sockhash (user space adds the ones that were open
 * before gospan came); an sk_msg program on that sockhash sees every message those sockets send,
 * before TCP segments it, and adds "Traceparent:" (and "Tracestate:") after the request line of
 * an HTTP/1 request that the uprobes marked. It changes only bytes that go out: no write into
 * the service's memory, so it works on kernels in lockdown, where bpf_probe_write_user does not.
 *
 * Which request a message is: the goroutine that writes it. The uprobe at Request.write keys the
 * request's context by that goroutine (`pending`); here the sending thread's goroutine is found
 * from where Go keeps the current g (amd64: thread-local storage at the FS base; arm64: X28, in
 * the user registers the system call saved), so a goroutine that moved to another thread
 * between the two still finds its own context.
 */
#include <stdbool.h>
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>

#include "events.h"
#include "http1.h"
#include "kafka_wire.bpf.h"
#include "scratch.bpf.h"
#include "trace_context.bpf.h"
#include "wire_maps.bpf.h"

char LICENSE[] SEC("license") = "GPL";

SHARED_MAP_DEFINE(kafka_tail)

/* The kernel's own layouts, relocated by libbpf against the running kernel's BTF (CO-RE). */
#if defined(__TARGET_ARCH_arm64)
struct task_struct {
	int tgid;
	void *stack;
} __attribute__((preserve_access_index));

/* arm64's struct pt_regs: the user registers a system call saved (in an anonymous union there). */
struct pt_regs___arm64 {
	__u64 regs[31];
	__u64 pstate;
} __attribute__((preserve_access_index));

/*
 * The kernel's THREAD_SIZE, which BTF does not give: 16 kB, or the page size where pages are
 * larger (64 kB pages); user space sets it (wire.c). A kernel whose stacks are larger still
 * (KASAN doubles them) fails the EL0 check in sender_g() and sends no trace context.
 */
const volatile __u64 arm64_thread_size = 16384;
#else
struct thread_struct {
	unsigned long fsbase;
} __attribute__((preserve_access_index));

struct task_struct {
	int tgid;
	struct thread_struct thread;
} __attribute__((preserve_access_index));
#endif

/* The client sockets of traced processes, by socket cookie. */
struct {
	__uint(type, BPF_MAP_TYPE_SOCKHASH);
	__uint(max_entries, 65536);
	__type(key, __u64);
	__type(value, __u64);
} sockets SEC(".maps");

/*
 * Sockets a traced process is connecting, by cookie: connect() runs in the process, but the
 * connection is established in softirq, where the current task is anybody's.
 */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 16384);
	__type(key, __u64);
	__type(value, __u8);
} connecting SEC(".maps");

/* The header lines written after the request line. */
#define TRACESTATE_PREFIX_LEN 12 /* "Tracestate: " */
#define CONTEXT_LINES_MAX (TRACEPARENT_LINE_LEN + TRACESTATE_PREFIX_LEN + MAX_TRACESTATE_LEN + 2)

/*
 * HTTP/2 (gRPC over cleartext): a frame's 9-byte header, the frame types and flags that matter,
 * and bounds. A header field is added to a HEADERS frame only at the end of a complete header
 * block (END_HEADERS, no padding): there it starts a field of its own, after the pseudo-headers,
 * and the HPACK decoder's state is untouched by a literal that is not indexed. The frame must
 * stay within SETTINGS_MAX_FRAME_SIZE's default, which every peer accepts.
 */
#define H2_FRAME_HEADER 9
#define H2_TYPE_MAX 9 /* CONTINUATION: the last frame type RFC 9113 defines */
#define H2_HEADERS 0x1
#define H2_END_HEADERS 0x4
#define H2_PADDED 0x8
#define H2_MAX_FRAME 16384
#define H2_FRAMES_MAX 1024 /* frames one message is read through */
#define H2_EDITS_MAX 128 /* HEADERS frames one message may carry context into */
/* 0x00 (literal, not indexed, new name), 11, "traceparent", 55, the value. */
#define HPACK_TRACEPARENT_LEN (2 + 11 + 1 + TRACEPARENT_LEN)
/* 0x00, 10, "tracestate", its length in 1 to 3 bytes (7-bit prefix), the value. */
#define HPACK_CONTEXT_MAX (HPACK_TRACEPARENT_LEN + 2 + 10 + 3 + MAX_TRACESTATE_LEN)

struct h2_edit {
	__u32 off; /* where the frame starts in the message */
	__u32 len; /* its payload length */
	__u32 stream_id;
	__u32 _pad;
};

/*
 * The walk over one message's HTTP/2 frames, in bpf_loop() steps. It lives in `wire_scratch`,
 * not on the stack, for the reason the request-line parser's state does.
 */
struct h2_walk {
	struct h2_mark_key mk;
	__u32 off, size;
	__u32 nedits, missed;
	__u32 bad;     /* not HTTP/2 frames: nothing may be changed */
	__u32 verdict; /* sk_msg's answer */
	__u32 drop;    /* the frames are not whole: the marks found are given up, not used */
	__u32 _pad;
};

/* What is written into a message: HTTP/1 header lines, or HPACK fields. */
#define LINES_MAX (CONTEXT_LINES_MAX > HPACK_CONTEXT_MAX ? CONTEXT_LINES_MAX : HPACK_CONTEXT_MAX)

/*
 * One message's scratch. The request-line parser's state lives here, not on the stack: the
 * verifier does not follow values in map memory, so it checks feed_byte() once instead of once
 * per value of a counter.
 */
struct wire_scratch {
	__u64 busy; /* claimed for a program's whole run (scratch.bpf.h) */
	char lines[LINES_MAX];
	struct h2_edit edits[H2_EDITS_MAX];
	struct h2_walk walk;
	__u8 head[HTTP1_LINE_MAX]; /* the message's first bytes */
	struct http1_parser ps;
	__u32 len;   /* bytes in HEAD */
	__u32 verdict; /* enum http1_verdict */
};

_Static_assert(__builtin_offsetof(struct wire_scratch, busy) == 0, "scratch_take(): busy first");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct wire_scratch);
} wire_scratch SEC(".maps");

SEC("sockops")
int track_client_sockets(struct bpf_sock_ops *ops)
{
	struct task_struct *task;
	__u64 cookie;
	__u32 tgid;
	__u8 one = 1;

	switch (ops->op) {
	case BPF_SOCK_OPS_TCP_CONNECT_CB:
		/* In connect(), on the connecting thread. */
		task = (struct task_struct *)bpf_get_current_task();
		tgid = (__u32)BPF_CORE_READ(task, tgid);
		if (!bpf_map_lookup_elem(&traced, &tgid))
			return 1;
		cookie = bpf_get_socket_cookie(ops);
		bpf_map_update_elem(&connecting, &cookie, &one, BPF_ANY);
		return 1;
	case BPF_SOCK_OPS_ACTIVE_ESTABLISHED_CB:
		cookie = bpf_get_socket_cookie(ops);
		if (!bpf_map_lookup_elem(&connecting, &cookie))
			return 1;
		bpf_map_delete_elem(&connecting, &cookie);
		bpf_sock_hash_update(ops, &sockets, &cookie, BPF_NOEXIST);
		return 1;
	}
	return 1;
}

#if defined(__TARGET_ARCH_arm64)
/*
 * The sending thread's g. Go on arm64 keeps it in X28, not in thread-local storage, and the
 * thread is in a system call (send, write): its user registers are where the kernel saved them,
 * one struct pt_regs below the top of its kernel stack (task_pt_regs()). bpf_task_pt_regs()
 * would say where, but socket programs may not call it. The saved PSTATE must say EL0 (user
 * mode), else what was read is no user register file.
 */
static __always_inline __u64 sender_g(const struct traced_process *tp)
{
	struct task_struct *task = (struct task_struct *)bpf_get_current_task();
	__u64 size = bpf_core_type_size(struct pt_regs___arm64);
	__u64 pstate = 1, g = 0;
	char *regs;

	(void)tp;
	regs = (char *)BPF_CORE_READ(task, stack);
	if (!regs || size > arm64_thread_size)
		return 0;
	regs += arm64_thread_size - size;
	if (bpf_probe_read_kernel(&pstate, sizeof(pstate),
				  regs + bpf_core_field_offset(struct pt_regs___arm64, pstate)) ||
	    (pstate & 0xf) != 0 ||
	    bpf_probe_read_kernel(&g, sizeof(g),
				  regs + bpf_core_field_offset(struct pt_regs___arm64, regs) + 28 * 8))
		return 0;
	return g;
}
#else
/* The sending thread's g: at TLS_G from its FS base, where Go on amd64 keeps it. */
static __always_inline __u64 sender_g(const struct traced_process *tp)
{
	struct task_struct *task = (struct task_struct *)bpf_get_current_task();
	__u64 fsbase = BPF_CORE_READ(task, thread.fsbase), g = 0;

	if (!fsbase || bpf_probe_read_user(&g, sizeof(g), (void *)(fsbase + tp->tls_g)))
		return 0;
	return g;
}
#endif

/* The goroutine of the thread sending MSG, or false when it is not in a traced Go process. */
static __always_inline bool sender_goroutine(struct goroutine_key *key)
{
	const struct traced_process *tp;
	__u64 g, goid = 0;

	key->pid = bpf_get_current_pid_tgid() >> 32;
	key->_pad = 0;
	tp = bpf_map_lookup_elem(&traced, &key->pid);
	if (!tp)
		return false;
	g = sender_g(tp);
	if (!g || bpf_probe_read_user(&goid, sizeof(goid), (void *)(g + tp->g_goid)))
		return false;
	key->goid = goid;
	return true;
}

/* Writes the context lines for CTX into LINES; returns their length. */
static __always_inline __u32 context_lines(char *lines, const struct pending_ctx *p, __u32 pid)
{
	struct tracestate_key tk = { .pid = pid };
	const struct tracestate_val *ts;
	__u32 n = TRACEPARENT_LINE_LEN, len;

	traceparent_line(lines, &p->ctx);
	__builtin_memcpy(tk.trace_id, p->ctx.trace_id, sizeof(tk.trace_id));
	ts = bpf_map_lookup_elem(&tracestates, &tk);
	if (!ts || !ts->len || ts->len > MAX_TRACESTATE_LEN)
		return n;
	__builtin_memcpy(lines + n, "Tracestate: ", TRACESTATE_PREFIX_LEN);
	n += TRACESTATE_PREFIX_LEN;
	len = ts->len;
	if (len > MAX_TRACESTATE_LEN ||
	    bpf_probe_read_kernel(lines + n, len & (MAX_TRACESTATE_LEN * 2 - 1), ts->s))
		return TRACEPARENT_LINE_LEN;
	n += len;
	if (n > CONTEXT_LINES_MAX - 2)
		return TRACEPARENT_LINE_LEN;
	lines[n] = '\r';
	lines[n + 1] = '\n';
	return n + 2;
}

struct line_scan {
	struct wire_scratch *sc;
};

/* bpf_loop()'s step: byte I of the message's head into the parser; 1 ends the loop. */
static long feed_byte(__u32 i, struct line_scan *ls)
{
	struct wire_scratch *sc = ls->sc;
	__u32 k = i;

	if (i >= sc->len)
		return 1;
	/* Clang would drop a mask it can prove redundant; the verifier needs it. */
	asm volatile("" : "+r"(k));
	sc->verdict = http1_feed(&sc->ps, sc->head[k & (HTTP1_LINE_MAX - 1)]);
	return sc->verdict != HTTP1_MORE;
}

/* The bytes of MSG from START, after making LEN of them one run (bpf_msg_pull_data). */
static __always_inline int pull(struct sk_msg_md *msg, __u32 start, __u32 len)
{
	return bpf_msg_pull_data(msg, start, start + len, 0);
}

/* The trace's incoming tracestate kept for PID, or NULL. */
static __always_inline const struct tracestate_val *kept_tracestate(const struct span_ctx *ctx,
								     __u32 pid)
{
	struct tracestate_key tk = { .pid = pid };
	const struct tracestate_val *ts;

	__builtin_memcpy(tk.trace_id, ctx->trace_id, sizeof(tk.trace_id));
	ts = bpf_map_lookup_elem(&tracestates, &tk);
	return ts && ts->len && ts->len <= MAX_TRACESTATE_LEN ? ts : NULL;
}

/* Writes the HPACK fields for CTX into OUT (HPACK_CONTEXT_MAX bytes); returns their length. */
static __always_inline __u32 hpack_context(char *out, const struct span_ctx *ctx, __u32 pid)
{
	const struct tracestate_val *ts = kept_tracestate(ctx, pid);
	__u32 n = HPACK_TRACEPARENT_LEN, len, rest;

	out[0] = 0;
	out[1] = 11;
	__builtin_memcpy(out + 2, "traceparent", 11);
	out[13] = TRACEPARENT_LEN;
	traceparent_value(out + 14, ctx);
	if (!ts)
		return n;
	len = ts->len;
	if (len > MAX_TRACESTATE_LEN)
		return n;
	out[n] = 0;
	out[n + 1] = 10;
	__builtin_memcpy(out + n + 2, "tracestate", 10);
	n += 12;
	/* An HPACK integer: a 7-bit prefix, then 7 bits a byte. */
	if (len < 127) {
		out[n++] = len;
	} else {
		out[n++] = 127;
		rest = len - 127;
		if (rest >= 128) {
			out[n++] = (rest & 0x7f) | 0x80;
			rest >>= 7;
		}
		out[n++] = rest;
	}
	if (n > HPACK_TRACEPARENT_LEN + 2 + 10 + 3 ||
	    bpf_probe_read_kernel(out + n, len & (MAX_TRACESTATE_LEN * 2 - 1), ts->s))
		return HPACK_TRACEPARENT_LEN;
	return n + len;
}

/* Writes N bytes of SRC at offset AT of MSG, which must be there; false when they could not be. */
static __always_inline bool msg_write(struct sk_msg_md *msg, __u32 at, const char *src, __u32 n)
{
	__u8 *data, *end;
	__u32 i;

	if (pull(msg, at, n))
		return false;
	data = msg->data;
	end = msg->data_end;
	if (data + n > end)
		return false;
	for (i = 0; i < LINES_MAX / 8; i++) {
		if (i * 8 + 8 > n || data + i * 8 + 8 > end)
			break;
		*(__u64 *)(data + i * 8) = *(__u64 *)(src + i * 8);
	}
	for (i = i * 8; i < LINES_MAX; i++) {
		if (i >= n || data + i + 1 > end)
			break;
		data[i] = src[i];
	}
	return true;
}

/* One mark of goroutine KEY's fewer waiting. */
static __always_inline void writer_done(const struct goroutine_key *key)
{
	__u64 *cnt = bpf_map_lookup_elem(&h2_writers, key);

	if (cnt && *cnt)
		__sync_fetch_and_add(cnt, -1);
}

/* What the walk's steps are handed: the message, and the scratch that holds the walk. */
struct h2_loop {
	struct sk_msg_md *msg;
	struct wire_scratch *sc;
};

/* Step I: the frame at the walk's offset; 1 ends the walk (the message's end, or something wrong). */
static long h2_scan_frame(__u32 i, struct h2_loop *l)
{
	struct sk_msg_md *msg = l->msg;
	struct h2_walk *w = &l->sc->walk;
	struct h2_edit *ed;
	__u8 *data, *end;
	__u32 len;

	if (w->off >= w->size)
		return 1;
	if (w->off + H2_FRAME_HEADER > w->size || pull(msg, w->off, H2_FRAME_HEADER)) {
		w->bad = 1;
		return 1;
	}
	data = msg->data;
	end = msg->data_end;
	if (data + H2_FRAME_HEADER > end || data[3] > H2_TYPE_MAX) {
		w->bad = 1;
		return 1;
	}
	len = (__u32)data[0] << 16 | (__u32)data[1] << 8 | data[2];
	if (data[3] == H2_HEADERS && (data[4] & H2_END_HEADERS) && !(data[4] & H2_PADDED)) {
		w->mk.stream_id = ((__u32)data[5] & 0x7f) << 24 | (__u32)data[6] << 16 |
				  (__u32)data[7] << 8 | data[8];
		if (bpf_map_lookup_elem(&h2_marks, &w->mk)) {
			if (w->nedits >= H2_EDITS_MAX) {
				w->missed++;
			} else {
				ed = &l->sc->edits[w->nedits & (H2_EDITS_MAX - 1)];
				ed->off = w->off;
				ed->len = len;
				ed->stream_id = w->mk.stream_id;
				w->nedits++;
			}
		}
	}
	w->off += H2_FRAME_HEADER + len;
	return 0;
}

/* Step I: the I-th marked frame from the last; 1 ends the walk. */
static long h2_edit_frame(__u32 i, struct h2_loop *l)
{
	struct sk_msg_md *msg = l->msg;
	struct wire_scratch *sc = l->sc;
	struct h2_walk *w = &sc->walk;
	const struct span_ctx *ctx;
	struct goroutine_key key = { .pid = w->mk.pid, .goid = w->mk.goid };
	struct h2_edit *ed;
	__u32 n, len, at, k;
	__u8 len_be[3];

	if (i >= w->nedits)
		return 1;
	k = w->nedits - 1 - i;
	ed = &sc->edits[k & (H2_EDITS_MAX - 1)];
	w->mk.stream_id = ed->stream_id;
	ctx = bpf_map_lookup_elem(&h2_marks, &w->mk);
	if (!ctx)
		return 0;
	if (w->drop) {
		/* Its frame goes out as it is: the mark must not wait for a frame that is gone. */
		bpf_map_delete_elem(&h2_marks, &w->mk);
		writer_done(&key);
		count_propagation(PROP_H2_NOT_WHOLE);
		return 0;
	}
	n = hpack_context(sc->lines, ctx, w->mk.pid);
	bpf_map_delete_elem(&h2_marks, &w->mk);
	writer_done(&key);
	len = ed->len + n;
	if (len > H2_MAX_FRAME || n > HPACK_CONTEXT_MAX) {
		count_propagation(PROP_NO_ROOM);
		return 0;
	}
	at = ed->off + H2_FRAME_HEADER + ed->len;
	if (bpf_msg_push_data(msg, at, n, 0)) {
		count_propagation(PROP_NO_ROOM);
		return 0;
	}
	len_be[0] = len >> 16;
	len_be[1] = len >> 8;
	len_be[2] = len;
	/* The bytes pushed and the length go together, or the pushed bytes go again, or all. */
	if (!msg_write(msg, at, sc->lines, n) || !msg_write(msg, ed->off, (char *)len_be, 3)) {
		count_propagation(PROP_NO_ROOM);
		if (bpf_msg_pop_data(msg, at, n, 0))
			w->verdict = SK_DROP;
		return 1;
	}
	count_propagation(PROP_INJECTED);
	return 0;
}

/*
 * An HTTP/2 message of a goroutine with marked HEADERS frames waiting (a gRPC connection's
 * writer): its frames are read from the start, and only when they end exactly where the message
 * does is it known where each frame begins (a message can end inside a frame, when the writer's
 * buffer filled up). Then each marked HEADERS frame gets the trace context at the end of its
 * header block, the last frame first so that the offsets found stay right.
 */
static __always_inline int h2_write_context(struct sk_msg_md *msg, const struct goroutine_key *key,
					    struct wire_scratch *sc)
{
	struct h2_loop l = { .msg = msg, .sc = sc };
	struct h2_walk *w = &sc->walk;

	__builtin_memset(w, 0, sizeof(*w));
	w->mk.pid = key->pid;
	w->mk.goid = key->goid;
	w->size = msg->size;
	w->verdict = SK_PASS;
	bpf_loop(H2_FRAMES_MAX, h2_scan_frame, &l, 0);
	/* More new streams in one message than it is read for: theirs stay behind, said so. */
	if (w->missed)
		count_propagation_n(PROP_H2_NOT_WHOLE, w->missed);
	if (!w->nedits || w->bad)
		return SK_PASS;
	/* Where the frames begin is not known for sure when they do not end with the message. */
	w->drop = w->off != w->size;
	bpf_loop(H2_EDITS_MAX, h2_edit_frame, &l, 0);
	return w->verdict;
}

/*
 * This CPU's wire_scratch, claimed (scratch.bpf.h); NULL, counted, when a preempted program has
 * it.
 */
static __always_inline struct wire_scratch *wire_scratch_claim(void)
{
	struct wire_scratch *sc = scratch_take(&wire_scratch);

	if (!sc)
		count_propagation(PROP_SCRATCH_BUSY);
	return sc;
}

/*
 * Adds the context CTX of process PID's request after the request line of MSG, if MSG starts an
 * HTTP/1 request; SC, this CPU's scratch, held. The message's verdict.
 */
static __always_inline int http1_write_context(struct sk_msg_md *msg, struct wire_scratch *sc,
					       const struct pending_ctx *ctx, __u32 pid)
{
	struct line_scan ls;
	__u32 line_end, n, scan;
	__u8 *data, *end;
	__u64 avail, len;

	scan = msg->size < HTTP1_LINE_MAX ? msg->size : HTTP1_LINE_MAX;
	if (pull(msg, 0, scan)) {
		count_propagation(PROP_NO_ROOM);
		return SK_PASS;
	}
	data = msg->data;
	end = msg->data_end;
	avail = (__u64)(end - data);
	if (avail < scan)
		scan = (__u32)avail;
	/*
	 * The length as a 64-bit value, tested as the helper is given it: with a 32-bit one clang
	 * tests a zero-extended copy and passes the register, whose upper half Linux 6.1's
	 * verifier does not know (it refuses the program); the barrier keeps the test clang would
	 * drop as redundant.
	 */
	len = scan;
	asm volatile("" : "+r"(len));
	if (!len || len > HTTP1_LINE_MAX || bpf_probe_read_kernel(sc->head, len, data)) {
		count_propagation(PROP_NO_ROOM);
		return SK_PASS;
	}
	ls.sc = sc;
	sc->len = scan;
	sc->verdict = HTTP1_MORE;
	__builtin_memset(&sc->ps, 0, sizeof(sc->ps));
	bpf_loop(HTTP1_LINE_MAX, feed_byte, &ls, 0);
	if (sc->verdict != HTTP1_REQUEST) {
		count_propagation(sc->verdict == HTTP1_NOT_REQUEST ? PROP_NOT_HTTP1 : PROP_NO_ROOM);
		return SK_PASS;
	}
	line_end = sc->ps.line_end;
	n = context_lines(sc->lines, ctx, pid);
	if (n > CONTEXT_LINES_MAX)
		return SK_PASS;
	if (bpf_msg_push_data(msg, line_end, n, 0)) {
		count_propagation(PROP_NO_ROOM);
		return SK_PASS;
	}
	/* The N bytes pushed are not ours to leave unwritten: take them out again, or drop. */
	if (!msg_write(msg, line_end, sc->lines, n)) {
		count_propagation(PROP_NO_ROOM);
		return bpf_msg_pop_data(msg, line_end, n, 0) ? SK_DROP : SK_PASS;
	}
	count_propagation(PROP_INJECTED);
	return SK_PASS;
}

SEC("sk_msg")
int write_trace_context(struct sk_msg_md *msg)
{
	struct goroutine_key key;
	struct pending_ctx *pc, ctx;
	struct wire_scratch *sc;
	__u8 *data, *end;
	__u64 *waiting;
	__u32 scan;
	int verdict;

	/*
	 * Cheap things first: most messages are bodies, answers or other protocols, and are let
	 * go after a look at their first bytes, before any map lookup.
	 */
	if (msg->size < HTTP1_LINE_MIN)
		return SK_PASS;
	scan = msg->size < HTTP1_METHOD_MAX + 1 ? msg->size : HTTP1_METHOD_MAX + 1;
	data = msg->data;
	end = msg->data_end;
	if (data + scan > end) {
		if (pull(msg, 0, scan))
			return SK_PASS;
		data = msg->data;
		end = msg->data_end;
	}
	if (!http1_method_len(data, end)) {
		/* A Kafka produce request of a traced process. */
		if (kafka_produce_head(data, end)) {
			__u32 pid = bpf_get_current_pid_tgid() >> 32;

			if (bpf_map_lookup_elem(&traced, &pid))
				bpf_tail_call(msg, &kafka_tail, 0);
			return SK_PASS;
		}
		/*
		 * HTTP/2 frames: a 24-bit length below 64 KiB, then a known type. Only a writer
		 * with marked frames waiting has its frames read.
		 */
		if (data + 4 > end || data[0] || data[3] > H2_TYPE_MAX || !sender_goroutine(&key))
			return SK_PASS;
		waiting = bpf_map_lookup_elem(&h2_writers, &key);
		if (!waiting || !*waiting)
			return SK_PASS;
		sc = wire_scratch_claim();
		if (!sc)
			return SK_PASS;
		verdict = h2_write_context(msg, &key, sc);
		scratch_unclaim(&sc->busy);
		return verdict;
	}
	if (!sender_goroutine(&key))
		return SK_PASS;
	pc = bpf_map_lookup_elem(&pending, &key);
	if (!pc)
		return SK_PASS;
	ctx = *pc;
	bpf_map_delete_elem(&pending, &key);

	sc = wire_scratch_claim();
	if (!sc)
		return SK_PASS;
	verdict = http1_write_context(msg, sc, &ctx, key.pid);
	scratch_unclaim(&sc->busy);
	return verdict;
}
