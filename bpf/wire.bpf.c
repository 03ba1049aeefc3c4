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
 * from its FS base, where Go keeps the current g, so a goroutine that moved to another thread
 * between the two still finds its own context.
 */
#include <stdbool.h>
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>

#include "events.h"
#include "http1.h"
#include "trace_context.bpf.h"
#include "wire_maps.bpf.h"

char LICENSE[] SEC("license") = "GPL";

/* The kernel's own layouts, relocated by libbpf against the running kernel's BTF (CO-RE). */
struct thread_struct {
	unsigned long fsbase;
} __attribute__((preserve_access_index));

struct task_struct {
	int tgid;
	struct thread_struct thread;
} __attribute__((preserve_access_index));

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
 * The request-line parser's state lives here, not on the stack: the verifier does not follow
 * values in map memory, so it checks feed_byte() once instead of once per value of a counter.
 */
struct wire_scratch {
	char lines[CONTEXT_LINES_MAX];
	__u8 head[HTTP1_LINE_MAX]; /* the message's first bytes */
	struct http1_parser ps;
	__u32 len;   /* bytes in HEAD */
	__u32 verdict; /* enum http1_verdict */
};

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

/* The goroutine of the thread sending MSG, or false when it is not in a traced Go process. */
static __always_inline bool sender_goroutine(struct goroutine_key *key)
{
	const struct traced_process *tp;
	struct task_struct *task;
	__u64 fsbase, g = 0, goid = 0;

	key->pid = bpf_get_current_pid_tgid() >> 32;
	key->_pad = 0;
	tp = bpf_map_lookup_elem(&traced, &key->pid);
	if (!tp)
		return false;
	task = (struct task_struct *)bpf_get_current_task();
	fsbase = BPF_CORE_READ(task, thread.fsbase);
	if (!fsbase || bpf_probe_read_user(&g, sizeof(g), (void *)(fsbase + tp->tls_g)) || !g ||
	    bpf_probe_read_user(&goid, sizeof(goid), (void *)(g + tp->g_goid)))
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

SEC("sk_msg")
int write_trace_context(struct sk_msg_md *msg)
{
	struct goroutine_key key;
	struct pending_ctx *pc, ctx;
	struct wire_scratch *sc;
	__u32 zero = 0, line_end, n, i, scan;
	struct line_scan ls;
	__u8 *data, *end;
	__u64 avail;

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
	if (!http1_method_len(data, end))
		return SK_PASS;
	if (!sender_goroutine(&key))
		return SK_PASS;
	pc = bpf_map_lookup_elem(&pending, &key);
	if (!pc)
		return SK_PASS;
	ctx = *pc;
	bpf_map_delete_elem(&pending, &key);

	sc = bpf_map_lookup_elem(&wire_scratch, &zero);
	if (!sc)
		return SK_PASS;
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
	if (!scan || scan > HTTP1_LINE_MAX || bpf_probe_read_kernel(sc->head, scan, data)) {
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
	n = context_lines(sc->lines, &ctx, key.pid);
	if (n > CONTEXT_LINES_MAX)
		return SK_PASS;
	if (bpf_msg_push_data(msg, line_end, n, 0)) {
		count_propagation(PROP_NO_ROOM);
		return SK_PASS;
	}
	/* The N bytes pushed are not ours to leave unwritten: take them out again, or drop. */
	if (pull(msg, line_end, n) || (__u8 *)msg->data + n > (__u8 *)msg->data_end) {
		count_propagation(PROP_NO_ROOM);
		return bpf_msg_pop_data(msg, line_end, n, 0) ? SK_DROP : SK_PASS;
	}
	/* A word at a time, then the tail: fewer steps for the verifier to follow. */
	data = msg->data;
	end = msg->data_end;
	for (i = 0; i < CONTEXT_LINES_MAX / 8; i++) {
		if (i * 8 + 8 > n || data + i * 8 + 8 > end)
			break;
		*(__u64 *)(data + i * 8) = *(__u64 *)(sc->lines + i * 8);
	}
	for (i = i * 8; i < CONTEXT_LINES_MAX; i++) {
		if (i >= n || data + i + 1 > end)
			break;
		data[i] = sc->lines[i];
	}
	count_propagation(PROP_INJECTED);
	return SK_PASS;
}
