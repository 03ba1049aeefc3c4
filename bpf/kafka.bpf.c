// SPDX-License-Identifier: GPL-2.0
/*
 * Kafka capture through segmentio/kafka-go (exporter/analysis/kafka.c places the probes).
 *
 * Producer: (*Writer).WriteMessages(ctx, msgs...) is the PRODUCER span: its entry chooses the
 * span's ids as a child of the span the goroutine works for and notes the topic, the count and
 * the first message's key; its end (after its direct CALLs, else its RETs) sends the whole span
 * with the call's error.
 *
 * sarama's SyncProducer: SendMessage(msg) and SendMessages(msgs), called through the
 * SyncProducer interface (their ends at their RETs), are PRODUCER spans the same way;
 * SendMessage's results say the message's partition and offset.
 *
 * Consumer: a message is processed from the moment a read hands it over ((*Reader).ReadMessage
 * or FetchMessage has returned it, without error, to the application) until the goroutine asks
 * for the next one, commits (CommitMessages) or closes the reader: that is the CONSUMER span,
 * the goroutine's span meanwhile, so that the calls made while processing are its children. It
 * continues the trace whose traceparent the message's headers carry, else starts one. A read
 * returns its Message (too big for registers) in the caller's frame, at the SP of the call, and
 * its error in the first two result registers.
 *
 * Linked with the other uprobe families into one object (probe.bpf.h).
 */
#include "probe.bpf.h"
#include "kafka_context.bpf.h"
#include "sarama.bpf.h"

/* The headers of a message searched for trace context, and a Header's size at most. */
/* Messages of one send marked for the socket-layer writer; the rest go without context. */
#define KAFKA_MARKS_MAX 32


/* A send in flight, by goroutine: its record, filled at entry. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 16384);
	__type(key, struct goroutine_key);
	__type(value, struct kafka_produce);
} kafka_sends SEC(".maps");

SHARED_MAP_DEFINE(kafka_consumers)

/*
 * One CPU's scratch: a send's record before it is in its map, a consumer's first entry, a
 * header and its name. Claimed for a program's whole run.
 */
struct kafka_scratch {
	__u64 busy;
	union {
		struct kafka_produce send;
		struct kafka_consumer consumer;
	};
	struct kafka_header_walk walk;
	struct kafka_fp_input fp;
};

UPROBE_SCRATCH(kafka_scratch, struct kafka_scratch)

/*
 * A global function (not inlined, not static), so that the verifier checks the fingerprint, a
 * hundred and seventy instructions without a branch, once for a program: inlined in the loops
 * over a send's messages, it was checked again for each of the 32 messages and each path there,
 * most of kafka_send_entry's 61k and kafka_sarama_many_entry's 72k instructions. The mark's key
 * and value are built on this function's stack, the memory a map helper takes on every kernel:
 * to the verifier, a global function's pointer arguments are memory of no known kind.
 */
__noinline int gospan_kafka_mark(struct kafka_fp_input *fp, __u32 pid, const struct span_ctx *ctx)
{
	struct kafka_mark_key mk = { .pid = pid };
	struct span_ctx c;

	if (!fp || !ctx)
		return 0;
	mk.fingerprint = kafka_fingerprint(fp);
	c = *ctx;
	return bpf_map_update_elem(&kafka_marks, &mk, &c, BPF_ANY) ? 0 : 1;
}

/*
 * Marks the N messages at MSG (the first KAFKA_MARKS_MAX) for the socket-layer writer, which puts
 * CTX into their records' headers as the produce request carrying them passes
 * (bpf/kafka_wire.bpf.c). SC, this CPU's scratch, held.
 */
static __always_inline void mark_messages(const struct target_config *cfg, __u32 pid, void *msg,
					  __s64 n, const struct span_ids *ids,
					  struct kafka_scratch *sc)
{
	struct span_ctx ctx = {}; /* its padding too: it goes to a global function */
	struct kafka_bytes b;
	__s64 i;

	if (cfg->kg_msg_size <= 0 || cfg->kg_msg_key < 0 || cfg->kg_msg_value < 0)
		return;
	span_ctx_of(&ctx, ids);
	for (i = 0; i < KAFKA_MARKS_MAX; i++) {
		void *m = msg + i * cfg->kg_msg_size;

		if (i >= n)
			break;
		if (bpf_probe_read_user(&b, sizeof(b), m + cfg->kg_msg_key))
			break;
		kafka_fp_clear(&sc->fp);
		kafka_fp_part(sc->fp.key, KAFKA_FP_KEY, &b, &sc->fp.key_len);
		if (bpf_probe_read_user(&b, sizeof(b), m + cfg->kg_msg_value))
			break;
		kafka_fp_part(sc->fp.value, KAFKA_FP_VALUE, &b, &sc->fp.value_len);
		gospan_kafka_mark(&sc->fp, pid, &ctx);
	}
}

/* At WriteMessages' entry (w, ctx, msgs...): the send's record, kept for its end. */
static __always_inline void send_start(GO_REGS *ctx, struct kafka_scratch *sc)
{
	struct kafka_produce *e = &sc->send;
	const struct target_config *cfg;
	struct goroutine_key key;
	struct kafka_bytes key_bytes;
	struct go_iface addr;
	void *w, *msg;
	__s64 n;

	cfg = probe_context(ctx, &key);
	if (!cfg || !cfg->kafka_go)
		return;
	w = (void *)go_arg(ctx, 1);
	msg = (void *)go_arg(ctx, 4);
	n = (__s64)go_arg(ctx, 5);
	/* WriteMessages returns at once when there is nothing to send. */
	if (n <= 0 || !msg)
		return;
	fill_header(&e->hdr, EVENT_KAFKA_PRODUCE, &key, bpf_ktime_get_ns());
	child_span(ctx, cfg, &key, &e->ids);
	e->cookie = (__u32)bpf_get_attach_cookie(ctx);
	e->count = n > 0xffffffffLL ? 0xffffffffU : (__u32)n;
	e->end_ns = 0;
	e->partition = e->offset = -1;
	e->err_itab = e->err_fn = 0;
	/* The Writer's topic, else the message's own. */
	e->topic_len = go_read_string(e->topic, MAX_KAFKA_TOPIC_LEN, w + cfg->kg_writer_topic);
	if (!e->topic_len)
		e->topic_len =
		    go_read_string(e->topic, MAX_KAFKA_TOPIC_LEN, msg + cfg->kg_msg_topic);
	bpf_probe_read_user(&key_bytes, sizeof(key_bytes), msg + cfg->kg_msg_key);
	e->has_key = kafka_key(cfg, &key_bytes, e->key, &e->key_len);
	e->addr_fn = 0;
	e->addr_len = 0;
	if (cfg->kg_writer_addr >= 0 && cfg->kg_netaddr_address >= 0 &&
	    !bpf_probe_read_user(&addr, sizeof(addr), w + cfg->kg_writer_addr) && addr.data) {
		e->addr_fn = go_itab_fn0(addr.itab);
		e->addr_len = go_read_string(e->addr, MAX_KAFKA_ADDR_LEN,
					     (void *)addr.data + cfg->kg_netaddr_address);
	}
	if (bpf_map_update_elem(&kafka_sends, &key, e, BPF_ANY)) {
		count_drop(DROP_INFLIGHT_FULL);
		return;
	}
	if (cfg->propagate) {
		track_process(cfg, key.pid);
		mark_messages(cfg, key.pid, msg, n, &e->ids, sc);
	}
}

SEC("uprobe")
int kafka_send_entry(GO_REGS *ctx)
{
	struct kafka_scratch *sc = kafka_scratch_claim();

	if (sc) {
		send_start(ctx, sc);
		scratch_unclaim(&sc->busy);
	}
	return 0;
}

/* After WriteMessages: its error in the first result slots (or where the caller moved it). */
SEC("uprobe")
int kafka_send_end(GO_REGS *ctx)
{
	__u64 now = bpf_ktime_get_ns(), cookie = bpf_get_attach_cookie(ctx);
	__u32 slot = COOKIE_RESULT_SLOT(cookie);
	const struct target_config *cfg;
	struct goroutine_key key;
	struct kafka_produce *e;

	cfg = probe_context(ctx, &key);
	if (!cfg)
		return 0;
	e = bpf_map_lookup_elem(&kafka_sends, &key);
	if (!e)
		return 0;
	e->end_ns = now;
	e->err_itab = go_arg(ctx, slot ? slot : 1);
	e->err_fn = go_itab_fn0(e->err_itab);
	if (bpf_ringbuf_output(&events, e, sizeof(*e), submit_flags()))
		count_drop(DROP_RINGBUF_FULL);
	bpf_map_delete_elem(&kafka_sends, &key);
	return 0;
}

/*
 * The sarama ProducerMessages at MSGS (N pointers to them) or the one at ONE: the send's record
 * from the first, and each marked for the socket-layer writer (KAFKA_MARKS_MAX of them).
 */
static __always_inline void sarama_start(GO_REGS *ctx, struct kafka_scratch *sc, void *one,
					 void *const *msgs, __s64 n)
{
	struct kafka_produce *e = &sc->send;
	const struct target_config *cfg;
	struct goroutine_key key;
	struct span_ctx sctx = {}; /* its padding too: it goes to a global function */
	void *m = one;
	__s64 i;

	cfg = probe_context(ctx, &key);
	if (!cfg || !cfg->sarama)
		return;
	if (!m && (n <= 0 || !msgs || bpf_probe_read_user(&m, sizeof(m), msgs)))
		return;
	if (!m)
		return;
	sarama_send_begin(ctx, cfg, &key, e, m,
			  one ? 1 : (n > 0xffffffffLL ? 0xffffffffU : (__u32)n));
	if (bpf_map_update_elem(&kafka_sends, &key, e, BPF_ANY)) {
		count_drop(DROP_INFLIGHT_FULL);
		return;
	}
	if (!cfg->propagate)
		return;
	track_process(cfg, key.pid);
	span_ctx_of(&sctx, &e->ids);
	for (i = 0; i < KAFKA_MARKS_MAX; i++) {
		if (i >= (one ? 1 : n))
			break;
		if (!one && bpf_probe_read_user(&m, sizeof(m), msgs + i))
			break;
		if (!sarama_mark(cfg, key.pid, m, &sctx, &sc->fp))
			break;
	}
}

/* At (*syncProducer).SendMessage(msg): one message. */
SEC("uprobe")
int kafka_sarama_one_entry(GO_REGS *ctx)
{
	struct kafka_scratch *sc = kafka_scratch_claim();

	if (sc) {
		sarama_start(ctx, sc, (void *)go_arg(ctx, 2), NULL, 0);
		scratch_unclaim(&sc->busy);
	}
	return 0;
}

/* At (*syncProducer).SendMessages(msgs []*ProducerMessage). */
SEC("uprobe")
int kafka_sarama_many_entry(GO_REGS *ctx)
{
	struct kafka_scratch *sc = kafka_scratch_claim();

	if (sc) {
		sarama_start(ctx, sc, NULL, (void *const *)go_arg(ctx, 2), (__s64)go_arg(ctx, 3));
		scratch_unclaim(&sc->busy);
	}
	return 0;
}

/* After SendMessage: (partition int32, offset int64, err error) in the result slots. */
SEC("uprobe")
int kafka_sarama_one_end(GO_REGS *ctx)
{
	const struct target_config *cfg;
	struct goroutine_key key;
	struct kafka_produce *e;

	cfg = probe_context(ctx, &key);
	if (!cfg)
		return 0;
	e = bpf_map_lookup_elem(&kafka_sends, &key);
	if (!e)
		return 0;
	e->end_ns = bpf_ktime_get_ns();
	e->err_itab = go_arg(ctx, 3);
	e->err_fn = go_itab_fn0(e->err_itab);
	if (!e->err_itab) {
		e->partition = (__s32)go_arg(ctx, 1);
		e->offset = (__s64)go_arg(ctx, 2);
	}
	if (bpf_ringbuf_output(&events, e, sizeof(*e), submit_flags()))
		count_drop(DROP_RINGBUF_FULL);
	bpf_map_delete_elem(&kafka_sends, &key);
	return 0;
}

/*
 * At kafka-go's FetchMessage's entry (ReadMessage makes it too) and franz-go's polls'
 * (PollRecords, PollFetches): the goroutine asks for its next messages, so the one it processed
 * is done; the reader or client (the receiver, first) is noted for those the read hands over.
 */
SEC("uprobe")
int kafka_fetch_entry(GO_REGS *ctx)
{
	__u64 now = bpf_ktime_get_ns();
	const struct target_config *cfg;
	struct goroutine_key key;
	struct kafka_consumer *c;
	struct kafka_scratch *sc;

	cfg = probe_context(ctx, &key);
	if (!cfg || (!cfg->kafka_go && !cfg->franz))
		return 0;
	c = bpf_map_lookup_elem(&kafka_consumers, &key);
	if (c) {
		kafka_process_end(&key, c, now);
		c->handle = go_arg(ctx, 1);
		return 0;
	}
	sc = kafka_scratch_claim();
	if (!sc)
		return 0;
	__builtin_memset(&sc->consumer, 0, sizeof(sc->consumer));
	sc->consumer.handle = go_arg(ctx, 1);
	if (bpf_map_update_elem(&kafka_consumers, &key, &sc->consumer, BPF_ANY))
		count_drop(DROP_INFLIGHT_FULL);
	scratch_unclaim(&sc->busy);
	return 0;
}

/*
 * Where the message the goroutine processed is done: kafka-go's CommitMessages' and Close's
 * entries, franz-go's RecordIter.Next's entry and EachRecord's RETs, the RETs of a sarama
 * consumer group handler's ConsumeClaim.
 */
SEC("uprobe")
int kafka_settle(GO_REGS *ctx)
{
	__u64 now = bpf_ktime_get_ns();
	const struct target_config *cfg;
	struct goroutine_key key;
	struct kafka_consumer *c;

	cfg = probe_context(ctx, &key);
	if (!cfg || (!cfg->kafka_go && !cfg->franz && !cfg->sarama_group))
		return 0;
	c = bpf_map_lookup_elem(&kafka_consumers, &key);
	if (c)
		kafka_process_end(&key, c, now);
	return 0;
}

/*
 * Header I of the slice at BASE, as L lays them out: 1 where it is a traceparent that was read
 * into E, 0 where it is something else (a tracestate is copied into E), -1 where it cannot be
 * read. A name is compared as two words with one branch, its bytes read into a zeroed buffer
 * (Kafka's header names are compared as they are: no case folding).
 */
__noinline int gospan_kafka_header(const struct kafka_header_layout *l, struct kafka_header_walk *w,
				   __u64 base, __u64 i, struct kafka_process *e)
{
	__u64 tp_head = word8("tracepar"), tp_tail = word8("ent\0\0\0\0");
	__u64 ts_head = word8("tracesta"), ts_tail = word8("te\0\0\0\0\0");
	const struct kafka_bytes *v;
	const struct go_string *k;
	__u64 size, klen, at;

	if (!l || !w || !e)
		return -1;
	size = l->size;
	if (size <= 0 || size > KAFKA_HEADER_MAX || i >= KAFKA_HEADERS_MAX)
		return -1;
	at = base + i * (l->indirect ? sizeof(at) : size);
	if (l->indirect && (bpf_probe_read_user(&at, sizeof(at), (void *)at) || !at))
		return -1;
	if (bpf_probe_read_user(w->header, size, (void *)at))
		return -1;
	k = (const void *)(w->header + (l->key & (KAFKA_HEADER_MAX - 1)));
	v = (const void *)(w->header + (l->value & (KAFKA_HEADER_MAX - 1)));
	klen = k->len;
	if (klen != 11 && klen != 10)
		return 0;
	w->name[0] = w->name[1] = 0;
	/*
	 * Clang tests (KLEN & ~1) == 10, which bounds a copy of KLEN only: the mask, which clang
	 * must keep past the barrier, bounds the length read for the verifier.
	 */
	asm volatile("" : "+r"(klen));
	if (bpf_probe_read_user(w->name, klen & 15, k->ptr))
		return 0;
	if (!((w->name[0] ^ tp_head) | (w->name[1] ^ tp_tail) | (klen ^ 11)))
		return gospan_traceparent_read((__u64)v->ptr, v->len, &e->ids);
	if (!((w->name[0] ^ ts_head) | (w->name[1] ^ ts_tail) | (klen ^ 10)))
		e->tracestate_len = go_copy_string(e->tracestate, MAX_TRACESTATE_LEN, v->ptr, v->len);
	return 0;
}

/*
 * The headers of a record, HDRS its header slice, as L lays them out. Unrolled, with no early
 * exit (a header that cannot be read stops the rest by STOP), each header read by a function of
 * its own: as a loop with exits, clang laid it out entered by a jump and closed by falling
 * through into its head, a back-edge that Linux 6.1's verifier refuses (only a jump may close a
 * loop there; tests/bpf_back_edges.py looks for such edges).
 */
__noinline int gospan_kafka_context(const struct kafka_header_layout *l, struct kafka_header_walk *w,
				    __u64 hdrs, struct kafka_process *e)
{
	int found = 0, got, stop = 0;
	struct kafka_bytes s;
	__u64 i;

	if (!l || !w || !e)
		return 0;
	if (l->size <= 0 || l->size > KAFKA_HEADER_MAX || l->key < 0 ||
	    l->key > KAFKA_HEADER_MAX - sizeof(struct go_string) || l->value < 0 ||
	    l->value > KAFKA_HEADER_MAX - sizeof(struct kafka_bytes) ||
	    bpf_probe_read_user(&s, sizeof(s), (const void *)hdrs) || !s.ptr || s.len <= 0)
		return 0;
#pragma clang loop unroll(full)
	for (i = 0; i < KAFKA_HEADERS_MAX; i++) {
		if (stop || i >= (__u64)s.len)
			continue;
		got = gospan_kafka_header(l, w, (__u64)s.ptr, i, e);
		stop = got < 0;
		found |= got > 0;
	}
	return found;
}

/*
 * After a read returned (to the application): the message it handed over, at the SP of the
 * call (8 above it at a RET), its error in the first result slots. No error: the message is
 * being processed from now.
 */
static __always_inline void hand_over(GO_REGS *ctx, struct kafka_scratch *sc,
				      const struct target_config *cfg,
				      const struct goroutine_key *kp, struct kafka_consumer *c,
				      void *msg, __u64 now)
{
	struct goroutine_key key = *kp;
	struct kafka_header_layout hl = {};
	struct kafka_process *e;
	struct go_string brokers;
	struct kafka_bytes kb;
	bool has_tp;
	void *r;

	/* One still open: a read of another reader began it, whose return was not seen. */
	kafka_process_end(&key, c, now);
	r = (void *)c->handle;
	e = &c->rec;
	__builtin_memset(&e->ids, 0, sizeof(e->ids));
	e->tracestate_len = 0;
	hl.key = cfg->kg_header_key;
	hl.value = cfg->kg_header_value;
	hl.size = cfg->kg_header_size;
	has_tp = cfg->propagate &&
		 gospan_kafka_context(&hl, &sc->walk, (__u64)msg + cfg->kg_msg_headers, e);
	kafka_process_ids(ctx, cfg, &key, e, has_tp, now);
	e->topic_len = go_read_string(e->topic, MAX_KAFKA_TOPIC_LEN, msg + cfg->kg_msg_topic);
	e->partition = (__s64)go_read_word(msg, cfg->kg_msg_partition);
	e->offset = (__s64)go_read_word(msg, cfg->kg_msg_offset);
	bpf_probe_read_user(&kb, sizeof(kb), msg + cfg->kg_msg_key);
	e->has_key = kafka_key(cfg, &kb, e->key, &e->key_len);
	e->group_len = r && cfg->kg_reader_group >= 0 ?
			       go_read_string(e->group, MAX_KAFKA_GROUP_LEN, r + cfg->kg_reader_group) :
			       0;
	e->addr_len = 0;
	if (r && cfg->kg_reader_brokers >= 0 &&
	    !bpf_probe_read_user(&brokers, sizeof(brokers), r + cfg->kg_reader_brokers) &&
	    brokers.ptr && brokers.len > 0)
		e->addr_len = go_read_string(e->addr, MAX_KAFKA_ADDR_LEN, brokers.ptr);

	kafka_process_start(&key, c);
}

static __always_inline void delivered(GO_REGS *ctx, struct kafka_scratch *sc)
{
	__u64 now = bpf_ktime_get_ns(), cookie = bpf_get_attach_cookie(ctx);
	__u32 slot = COOKIE_RESULT_SLOT(cookie);
	const struct target_config *cfg;
	struct goroutine_key key;
	struct kafka_consumer *c;

	cfg = probe_context(ctx, &key);
	if (!cfg || !cfg->kafka_go)
		return;
	c = bpf_map_lookup_elem(&kafka_consumers, &key);
	/* None: the read began before gospan attached. An error: no message. */
	if (!c || go_arg(ctx, slot ? slot : 1))
		return;
	hand_over(ctx, sc, cfg, &key, c,
		  (void *)(GO_SP(ctx) + (cookie & COOKIE_IN_CALLER ? 0 : 8)), now);
}

SEC("uprobe")
int kafka_delivered(GO_REGS *ctx)
{
	struct kafka_scratch *sc = kafka_scratch_claim();

	if (sc) {
		delivered(ctx, sc);
		scratch_unclaim(&sc->busy);
	}
	return 0;
}

#if defined(__TARGET_ARCH_x86)
/* The x86 register numbered N (the instruction encoding's numbers) at the probe. */
static __always_inline __u64 x86_reg(const GO_REGS *ctx, __u32 n)
{
	__u64 v = 0;

	switch (n) {
	case 0:
		GO_REG_LOAD(v, rax);
		break;
	case 1:
		GO_REG_LOAD(v, rcx);
		break;
	case 2:
		GO_REG_LOAD(v, rdx);
		break;
	case 3:
		GO_REG_LOAD(v, rbx);
		break;
	case 4:
		GO_REG_LOAD(v, rsp);
		break;
	case 5:
		GO_REG_LOAD(v, rbp);
		break;
	case 6:
		GO_REG_LOAD(v, rsi);
		break;
	case 7:
		GO_REG_LOAD(v, rdi);
		break;
	case 8:
		GO_REG_LOAD(v, r8);
		break;
	case 9:
		GO_REG_LOAD(v, r9);
		break;
	case 10:
		GO_REG_LOAD(v, r10);
		break;
	case 11:
		GO_REG_LOAD(v, r11);
		break;
	case 12:
		GO_REG_LOAD(v, r12);
		break;
	case 13:
		GO_REG_LOAD(v, r13);
		break;
	case 14:
		GO_REG_LOAD(v, r14);
		break;
	case 15:
		GO_REG_LOAD(v, r15);
		break;
	}
	return v;
}

/* ZF in the flags the probed instruction (a Jcc) is about to test. */
#define X86_FLAGS_ZF (1ULL << 6)

/*
 * Inside a read, on its way to the RET that returns a Message (kafka_handover_site, by
 * COOKIE_OP): when the way is taken (a Jcc's flags), the error nil and the read made by the
 * application (not by ReadMessage), the message is being processed from now.
 */
static __always_inline void handed(GO_REGS *ctx, struct kafka_scratch *sc)
{
	__u64 now = bpf_ktime_get_ns(), cookie = bpf_get_attach_cookie(ctx);
	const struct kafka_handover_site *h;
	const struct target_config *cfg;
	struct goroutine_key key;
	struct kafka_consumer *c;
	__u64 sp = GO_SP(ctx), zf, ret, base;
	__u32 i = COOKIE_OP(cookie);

	cfg = probe_context(ctx, &key);
	if (!cfg || !cfg->kafka_go || i >= KAFKA_HANDOVERS_MAX)
		return;
	h = &cfg->kg_handover[i];
	zf = ctx->eflags & X86_FLAGS_ZF;
	if ((h->cond == KAFKA_HANDOVER_IF_ZF && !zf) || (h->cond == KAFKA_HANDOVER_IF_NOT_ZF && zf))
		return;
	if (h->err_off >= 0 && go_read_word((void *)sp, h->err_off))
		return;
	if (h->skip_hi) {
		ret = go_read_word((void *)sp, h->ret_off) - (GO_IP(ctx) - h->at);
		if (ret >= h->skip_lo && ret < h->skip_hi)
			return;
	}
	c = bpf_map_lookup_elem(&kafka_consumers, &key);
	/* None: the read began before gospan attached. */
	if (!c)
		return;
	base = h->msg_reg == 4 ? sp : x86_reg(ctx, h->msg_reg);
	hand_over(ctx, sc, cfg, &key, c, (void *)(base + h->msg_off), now);
}

SEC("uprobe")
int kafka_handed(GO_REGS *ctx)
{
	struct kafka_scratch *sc = kafka_scratch_claim();

	if (sc) {
		handed(ctx, sc);
		scratch_unclaim(&sc->busy);
	}
	return 0;
}

/*
 * At the Jcc with which sarama's SendMessage tests the *ProducerError its expectation brought
 * (in the register COOKIE_OP names): nil, the message was sent, its partition and offset in it
 * (at SP + sm_sent_msg_slot); else the error is its Err.
 */
SEC("uprobe")
int kafka_sarama_sent(GO_REGS *ctx)
{
	__u64 now = bpf_ktime_get_ns(), cookie = bpf_get_attach_cookie(ctx), perr, msg;
	const struct target_config *cfg;
	struct goroutine_key key;
	struct kafka_produce *e;
	__s32 partition = -1;

	cfg = probe_context(ctx, &key);
	if (!cfg || cfg->sm_sent_msg_slot < 0 || cfg->sm_sent_err_at < 0)
		return 0;
	e = bpf_map_lookup_elem(&kafka_sends, &key);
	if (!e)
		return 0;
	e->end_ns = now;
	perr = x86_reg(ctx, COOKIE_OP(cookie));
	if (perr) {
		e->err_itab = go_read_word((void *)perr, cfg->sm_sent_err_at);
		e->err_fn = go_itab_fn0(e->err_itab);
	} else {
		msg = go_read_word((void *)GO_SP(ctx), cfg->sm_sent_msg_slot);
		if (msg && !bpf_probe_read_user(&partition, sizeof(partition),
						(void *)(msg + cfg->sm_msg_partition)))
			e->partition = partition;
		if (msg)
			e->offset = (__s64)go_read_word((void *)msg, cfg->sm_msg_offset);
	}
	if (bpf_ringbuf_output(&events, e, sizeof(*e), submit_flags()))
		count_drop(DROP_RINGBUF_FULL);
	bpf_map_delete_elem(&kafka_sends, &key);
	return 0;
}
#else
/* arm64: the reads' and SendMessage's ends stay where they were (kafka_handover.c, kafka.c). */
SEC("uprobe")
int kafka_handed(GO_REGS *ctx)
{
	return 0;
}

SEC("uprobe")
int kafka_sarama_sent(GO_REGS *ctx)
{
	return 0;
}
#endif
