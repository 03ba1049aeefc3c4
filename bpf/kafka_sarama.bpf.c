// SPDX-License-Identifier: GPL-2.0
/*
 * IBM/sarama's consumer groups (exporter/analysis/kafka_sarama.c places the probes).
 *
 * sarama hands a claim's messages to the application through a channel: the handler's
 * ConsumeClaim(session, claim) receives each *ConsumerMessage from claim.Messages(), and no
 * sarama function runs on its goroutine per message. So the receives are probed, in the
 * application's ConsumeClaim methods: each CALL of the Go runtime's runtime.chanrecv1,
 * chanrecv2, selectnbrecv or selectgo (a direct CALL: emulated) and the first instruction its
 * return leads to. A receive from the claim's channel ends the message processed before (a
 * CONSUMER span); the message it returns is processed from then until the goroutine's next
 * receive from that channel or ConsumeClaim's return (kafka_settle at its RETs).
 *
 * Which channel is the claim's: sarama runs a claim on a goroutine of its own, in
 * (*consumerGroupSession).consume, which notes the group (kafka_sarama_claim), makes the claim's
 * partition consumer ((*consumer).ConsumePartition, whose return names its channel:
 * kafka_sarama_partition), then calls the handler's ConsumeClaim. A claim begun before gospan
 * attached is told by the application's MarkMessage(msg) instead: the message the goroutine last
 * received, from a channel then named the claim's (its first message has no span).
 *
 * AsyncProducer: the application sends a *ProducerMessage on the producer's Input() channel;
 * that send, a CALL of runtime.chansend1 or selectgo in the application's code whose channel is
 * an AsyncProducer's input, begins the message's PRODUCER span, a child of the span its
 * goroutine works for, and marks it for the socket-layer writer (a select's, once its return
 * says it chose that case). Which channels are inputs:
 * the one newAsyncProducer's result has, and the one (*asyncProducer).dispatcher receives from
 * (at its receive's CALL, each loop: a producer made before gospan attached is known from its
 * second message on). The span ends where sarama
 * is done with the message: returnSuccesses(batch) (the broker has it), returnErrors(batch, err)
 * or returnError(msg, err).
 *
 * Linked with the other uprobe families into one object (probe.bpf.h).
 */
#include "probe.bpf.h"
#include "kafka_context.bpf.h"
#include "sarama.bpf.h"

/* A select's cases looked through for the claim's channel. */
#define SELECT_CASES_MAX 8
/* An address at most this far above SP is in the goroutine's stack frame: kept as an offset. */
#define STACK_SPAN_MAX (1 << 20)

/* A select case as the Go compiler lays it out for runtime.selectgo (Go 1.17+). */
struct go_scase {
	__u64 c;
	__u64 elem;
};

/* A batch's messages an end looks through: the rest are counted (DROP_KAFKA_BATCH). */
#define SARAMA_BATCH_MAX 1024

/*
 * A select of the application's offering a message (MSG) to an AsyncProducer's input, as its
 * case CASEI, until it returns: the message's record, kept only if that case is the one chosen.
 */
struct sarama_offer {
	struct kafka_produce rec;
	__u64 msg;
	__u64 casei;
};

/* One CPU's scratch, claimed for a program's whole run. */
struct sarama_scratch {
	__u64 busy;
	union {
		struct kafka_consumer consumer;
		struct kafka_produce send;
		struct sarama_offer offer;
	};
	struct kafka_header_walk walk;
	struct kafka_fp_input fp;
};

/* A pointer of a process's: an AsyncProducer's input channel, a message in flight. */
struct sarama_ptr_key {
	__u32 pid;
	__u32 _pad;
	__u64 ptr;
};

/* The input channels of the process's AsyncProducers, as their dispatchers receive from them. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 1024);
	__type(key, struct sarama_ptr_key);
	__type(value, __u8);
} kafka_sarama_inputs SEC(".maps");

/* The selects offering a message to an AsyncProducer's input, by goroutine, until they return. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 4096);
	__type(key, struct goroutine_key);
	__type(value, struct sarama_offer);
} kafka_sarama_offers SEC(".maps");

/* A message sent to an AsyncProducer, by its *ProducerMessage, until sarama is done with it. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 65536);
	__type(key, struct sarama_ptr_key);
	__type(value, struct kafka_produce);
} kafka_sarama_async SEC(".maps");

UPROBE_SCRATCH(kafka_sarama_scratch, struct sarama_scratch)

/* The group ID of the *consumerGroupSession S into GROUP: its length, 0 when unknown. */
static __always_inline __u32 session_group(const struct target_config *cfg, const void *s,
					   char *group)
{
	void *g = NULL;

	if (!s || cfg->sm_session_group < 0 || cfg->sm_group_id < 0 ||
	    bpf_probe_read_user(&g, sizeof(g), s + cfg->sm_session_group) || !g)
		return 0;
	return go_read_string(group, MAX_KAFKA_GROUP_LEN, g + cfg->sm_group_id);
}

/*
 * At (*consumerGroupSession).consume's entry (s, ...): this goroutine runs a claim from now, of
 * the session's group; its channel is not known yet.
 */
SEC("uprobe")
int kafka_sarama_claim(GO_REGS *ctx)
{
	__u64 now = bpf_ktime_get_ns();
	const struct target_config *cfg;
	struct goroutine_key key;
	struct sarama_scratch *sc;
	struct kafka_consumer *c;

	cfg = probe_context(ctx, &key);
	if (!cfg || !cfg->sarama_group)
		return 0;
	sc = kafka_sarama_scratch_claim();
	if (!sc)
		return 0;
	c = kafka_consumer_of(&key, &sc->consumer);
	if (c) {
		kafka_process_end(&key, c, now);
		c->handle = c->last = c->last_chan = 0;
		c->recv = c->confirmed = 0;
		c->rec.group_len = session_group(cfg, (void *)go_arg(ctx, 1), c->rec.group);
	}
	scratch_unclaim(&sc->busy);
	return 0;
}

/*
 * At (*consumer).ConsumePartition's RETs: (PartitionConsumer, error). On a claim's goroutine,
 * the partition consumer's channel is the claim's.
 */
SEC("uprobe")
int kafka_sarama_partition(GO_REGS *ctx)
{
	const struct target_config *cfg;
	struct goroutine_key key;
	struct kafka_consumer *c;
	void *pc = (void *)go_arg(ctx, 2);
	__u64 ch = 0;

	cfg = probe_context(ctx, &key);
	if (!cfg || !cfg->sarama_group || go_arg(ctx, 3) || !pc)
		return 0;
	c = bpf_map_lookup_elem(&kafka_consumers, &key);
	if (!c || !c->rec.group_len || cfg->sm_pc_messages < 0 ||
	    bpf_probe_read_user(&ch, sizeof(ch), pc + cfg->sm_pc_messages) || !ch)
		return 0;
	c->handle = ch;
	c->confirmed = 1;
	return 0;
}

/* ADDR as C keeps it: an offset from SP when it is in the frame, else the address. */
static __always_inline void keep_at(struct kafka_consumer *c, __u64 sp, __u64 addr)
{
	c->recv_on_stack = addr >= sp && addr - sp < STACK_SPAN_MAX;
	c->recv_at = c->recv_on_stack ? addr - sp : addr;
}

/* Whether one of the first N of the select cases at CAS is a receive from channel CH. */
static __always_inline bool select_has(__u64 cas, __u64 n, __u64 ch)
{
	struct go_scase sc;
	__u32 i;

	for (i = 0; i < SELECT_CASES_MAX; i++) {
		if (i >= n || bpf_probe_read_user(&sc, sizeof(sc), (void *)(cas + i * sizeof(sc))))
			break;
		if (sc.c == ch)
			return true;
	}
	return false;
}

/*
 * At a CALL of a runtime receive in ConsumeClaim (COOKIE_OP says which): one from the claim's
 * channel ends the message processed; where the message will be is noted for after the call.
 * Before the channel is known, every receive is noted, for MarkMessage to tell.
 */
SEC("uprobe")
int kafka_sarama_recv(GO_REGS *ctx)
{
	__u64 now = bpf_ktime_get_ns(), cookie = bpf_get_attach_cookie(ctx);
	__u32 kind = COOKIE_OP(cookie);
	const struct target_config *cfg;
	struct goroutine_key key;
	struct sarama_scratch *sc;
	struct kafka_consumer *c;
	__u64 ch = 0, at;

	cfg = probe_context(ctx, &key);
	if (!cfg || !cfg->sarama_group || !kind || kind >= RECV__COUNT)
		return 0;
	if (kind == RECV_NONBLOCK) {
		at = go_arg(ctx, 1);
		ch = go_arg(ctx, 2);
	} else if (kind == RECV_SELECT) {
		at = go_arg(ctx, 1);
	} else {
		ch = go_arg(ctx, 1);
		at = go_arg(ctx, 2);
	}
	c = bpf_map_lookup_elem(&kafka_consumers, &key);
	if (!c) {
		sc = kafka_sarama_scratch_claim();
		if (!sc)
			return 0;
		c = kafka_consumer_of(&key, &sc->consumer);
		scratch_unclaim(&sc->busy);
		if (!c)
			return 0;
	}
	if (c->confirmed) {
		if (kind == RECV_SELECT ? !select_has(at, go_arg(ctx, 4) + go_arg(ctx, 5), c->handle) :
					  ch != c->handle)
			return 0;
		kafka_process_end(&key, c, now);
	}
	c->recv = kind;
	c->recv_chan = ch;
	keep_at(c, GO_SP(ctx), at);
	return 0;
}

/*
 * The *ConsumerMessage at MSG, received from the claim's channel by goroutine KEY, is processed
 * from NOW: C's record from it, and the goroutine's span.
 */
static __always_inline void sarama_process(GO_REGS *ctx, const struct target_config *cfg,
					   const struct goroutine_key *key, struct kafka_consumer *c,
					   const void *msg, __u64 now, struct sarama_scratch *sc)
{
	struct kafka_header_layout hl = { .indirect = 1 };
	struct kafka_process *e = &c->rec;
	struct kafka_bytes kb = {};
	__s32 partition = -1;
	bool has_tp;

	__builtin_memset(&e->ids, 0, sizeof(e->ids));
	e->tracestate_len = 0;
	hl.key = cfg->sm_header_key;
	hl.value = cfg->sm_header_value;
	hl.size = cfg->sm_header_size;
	has_tp = cfg->propagate && cfg->sm_cm_headers >= 0 &&
		 gospan_kafka_context(&hl, &sc->walk, (__u64)msg + cfg->sm_cm_headers, e);
	kafka_process_ids(ctx, cfg, key, e, has_tp, now);
	e->topic_len = go_read_string(e->topic, MAX_KAFKA_TOPIC_LEN, msg + cfg->sm_cm_topic);
	bpf_probe_read_user(&partition, sizeof(partition), msg + cfg->sm_cm_partition);
	e->partition = partition;
	e->offset = (__s64)go_read_word(msg, cfg->sm_cm_offset);
	bpf_probe_read_user(&kb, sizeof(kb), msg + cfg->sm_cm_key);
	e->has_key = kafka_key(cfg, &kb, e->key, &e->key_len);
	e->addr_len = 0;
	kafka_process_start(key, c);
}

/*
 * Where a runtime receive of ConsumeClaim returns to: the message it received, if any, is the
 * claim's next (its results in the result slots: the first where COOKIE_RESULT_SLOT says, the
 * second in its own), or, before the claim's channel is known, the message MarkMessage may name.
 */
static __always_inline void received(GO_REGS *ctx, struct sarama_scratch *sc)
{
	__u64 now = bpf_ktime_get_ns(), cookie = bpf_get_attach_cookie(ctx);
	__u32 slot = COOKIE_RESULT_SLOT(cookie);
	const struct target_config *cfg;
	struct goroutine_key key;
	struct kafka_consumer *c;
	__u64 first, second, at, ch, msg = 0;
	struct go_scase cs;
	__u32 kind;

	cfg = probe_context(ctx, &key);
	if (!cfg || !cfg->sarama_group)
		return;
	c = bpf_map_lookup_elem(&kafka_consumers, &key);
	if (!c || !c->recv)
		return;
	kind = c->recv;
	c->recv = 0;
	first = go_arg(ctx, slot ? slot : 1);
	second = go_arg(ctx, 2);
	at = c->recv_on_stack ? GO_SP(ctx) + c->recv_at : c->recv_at;
	ch = c->recv_chan;
	if ((kind == RECV_CHAN2 && !(__u8)first) ||
	    (kind == RECV_NONBLOCK && (!(__u8)first || !(__u8)second)))
		return;
	if (kind == RECV_SELECT) {
		/* The case it chose, by its index; -1 for none (a select with a default). */
		if ((__s64)first < 0 || first >= 64 || !(__u8)second ||
		    bpf_probe_read_user(&cs, sizeof(cs), (void *)(at + first * sizeof(cs))))
			return;
		ch = cs.c;
		at = cs.elem;
	}
	if (!at || bpf_probe_read_user(&msg, sizeof(msg), (void *)at) || !msg)
		return;
	if (!c->confirmed) {
		c->last = msg;
		c->last_chan = ch;
		return;
	}
	if (ch == c->handle)
		sarama_process(ctx, cfg, &key, c, (void *)msg, now, sc);
}

SEC("uprobe")
int kafka_sarama_received(GO_REGS *ctx)
{
	struct sarama_scratch *sc = kafka_sarama_scratch_claim();

	if (sc) {
		received(ctx, sc);
		scratch_unclaim(&sc->busy);
	}
	return 0;
}

/*
 * At (*consumerGroupSession).MarkMessage's entry (s, msg, metadata): on a goroutine whose
 * claim's channel is not known (its claim began before gospan attached), the message it
 * received last being marked tells the channel it came from the claim's.
 */
SEC("uprobe")
int kafka_sarama_mark(GO_REGS *ctx)
{
	const struct target_config *cfg;
	struct goroutine_key key;
	struct kafka_consumer *c;

	cfg = probe_context(ctx, &key);
	if (!cfg || !cfg->sarama_group)
		return 0;
	c = bpf_map_lookup_elem(&kafka_consumers, &key);
	if (!c || c->confirmed || !c->last || go_arg(ctx, 2) != c->last || !c->last_chan)
		return 0;
	c->handle = c->last_chan;
	c->confirmed = 1;
	c->rec.group_len = session_group(cfg, (void *)go_arg(ctx, 1), c->rec.group);
	return 0;
}

/* The channel CH of process PID is an AsyncProducer's input. */
static __always_inline void input_is(__u32 pid, __u64 ch)
{
	struct sarama_ptr_key k = { .pid = pid, .ptr = ch };
	__u8 one = 1;

	if (ch && !bpf_map_lookup_elem(&kafka_sarama_inputs, &k))
		bpf_map_update_elem(&kafka_sarama_inputs, &k, &one, BPF_ANY);
}

/* At the CALL of runtime.chanrecv2 in (*asyncProducer).dispatcher: its channel is an input. */
SEC("uprobe")
int kafka_sarama_input(GO_REGS *ctx)
{
	const struct target_config *cfg;
	struct goroutine_key key;

	cfg = probe_context(ctx, &key);
	if (cfg && cfg->sarama_async)
		input_is(key.pid, go_arg(ctx, 1));
	return 0;
}

/*
 * At newAsyncProducer's RETs: (AsyncProducer, error). The producer's input is known before the
 * application can send on it (its dispatcher, a goroutine of its own, may run later).
 */
SEC("uprobe")
int kafka_sarama_made(GO_REGS *ctx)
{
	const struct target_config *cfg;
	struct goroutine_key key;
	void *p = (void *)go_arg(ctx, 2);
	__u64 ch = 0;

	cfg = probe_context(ctx, &key);
	if (!cfg || !cfg->sarama_async || go_arg(ctx, 3) || !p || cfg->sm_ap_input < 0 ||
	    bpf_probe_read_user(&ch, sizeof(ch), p + cfg->sm_ap_input))
		return 0;
	input_is(key.pid, ch);
	return 0;
}

static __always_inline bool is_input(__u32 pid, __u64 ch)
{
	struct sarama_ptr_key k = { .pid = pid, .ptr = ch };

	return ch && bpf_map_lookup_elem(&kafka_sarama_inputs, &k);
}

/*
 * The message MSG of goroutine KEY's, whose record E is, is on its way to an AsyncProducer: its
 * span is kept by the message until sarama is done with it, and the message is marked for the
 * socket-layer writer. FP: this CPU's scratch, held.
 */
static __always_inline void async_sent(const struct target_config *cfg,
				       const struct goroutine_key *key,
				       const struct kafka_produce *e, __u64 msg,
				       struct kafka_fp_input *fp)
{
	struct span_ctx sctx = {}; /* its padding too: it goes to a global function */
	struct sarama_ptr_key mk = { .pid = key->pid, .ptr = msg };

	if (bpf_map_update_elem(&kafka_sarama_async, &mk, e, BPF_ANY)) {
		count_drop(DROP_INFLIGHT_FULL);
		return;
	}
	if (!cfg->propagate)
		return;
	track_process(cfg, key->pid);
	span_ctx_of(&sctx, &e->ids);
	sarama_mark(cfg, key->pid, (void *)msg, &sctx, fp);
}

/*
 * At a CALL of runtime.chansend1 or selectgo in the application (COOKIE_OP says which): a
 * message sent on an AsyncProducer's input begins its PRODUCER span. A select only offers it:
 * its record waits for the select's return (kafka_sarama_offered), which says whether that
 * case was chosen.
 */
static __always_inline void async_send(GO_REGS *ctx, struct sarama_scratch *sc)
{
	__u32 kind = COOKIE_OP(bpf_get_attach_cookie(ctx));
	const struct target_config *cfg;
	struct goroutine_key key;
	struct go_scase cs;
	__u64 elem = 0, msg = 0, cas, n;
	__u32 i = 0;

	cfg = probe_context(ctx, &key);
	if (!cfg || !cfg->sarama_async)
		return;
	if (kind == SEND_CHAN) {
		if (is_input(key.pid, go_arg(ctx, 1)))
			elem = go_arg(ctx, 2);
	} else if (kind == SEND_SELECT) {
		cas = go_arg(ctx, 1);
		n = go_arg(ctx, 4);
		for (i = 0; i < SELECT_CASES_MAX; i++) {
			if (i >= n || bpf_probe_read_user(&cs, sizeof(cs), (void *)(cas + i * sizeof(cs))))
				break;
			if (is_input(key.pid, cs.c)) {
				elem = cs.elem;
				break;
			}
		}
	}
	if (!elem || bpf_probe_read_user(&msg, sizeof(msg), (void *)elem) || !msg)
		return;
	if (kind == SEND_CHAN) {
		sarama_send_begin(ctx, cfg, &key, &sc->send, (void *)msg, 1);
		async_sent(cfg, &key, &sc->send, msg, &sc->fp);
		return;
	}
	sarama_send_begin(ctx, cfg, &key, &sc->offer.rec, (void *)msg, 1);
	sc->offer.msg = msg;
	sc->offer.casei = i;
	if (bpf_map_update_elem(&kafka_sarama_offers, &key, &sc->offer, BPF_ANY))
		count_drop(DROP_INFLIGHT_FULL);
}

SEC("uprobe")
int kafka_sarama_send(GO_REGS *ctx)
{
	struct sarama_scratch *sc = kafka_sarama_scratch_claim();

	if (sc) {
		async_send(ctx, sc);
		scratch_unclaim(&sc->busy);
	}
	return 0;
}

/*
 * Where a select of the application's returns (the case it chose in the first result slot, or
 * where COOKIE_RESULT_SLOT says): a message it offered to an AsyncProducer is on its way if
 * that case is the one chosen; otherwise it was not sent, and has no span.
 */
static __always_inline void offered(GO_REGS *ctx, struct sarama_scratch *sc)
{
	__u32 slot = COOKIE_RESULT_SLOT(bpf_get_attach_cookie(ctx));
	const struct target_config *cfg;
	struct goroutine_key key;
	struct sarama_offer *o;

	cfg = probe_context(ctx, &key);
	if (!cfg || !cfg->sarama_async)
		return;
	o = bpf_map_lookup_elem(&kafka_sarama_offers, &key);
	if (!o)
		return;
	if (go_arg(ctx, slot ? slot : 1) == o->casei)
		async_sent(cfg, &key, &o->rec, o->msg, &sc->fp);
	bpf_map_delete_elem(&kafka_sarama_offers, &key);
}

SEC("uprobe")
int kafka_sarama_offered(GO_REGS *ctx)
{
	struct sarama_scratch *sc = kafka_sarama_scratch_claim();

	if (sc) {
		offered(ctx, sc);
		scratch_unclaim(&sc->busy);
	}
	return 0;
}

/* What an end tells each message of its batch: when, the error (none: 0), where to read. */
struct sarama_done {
	__u64 now;
	__u64 err_itab;
	__u64 err_fn;
	__s64 partition_at;
	__s64 offset_at;
	__u32 pid;
	__u32 _pad;
};

/*
 * The message MSG of process D->pid is done: its span, if it has one, goes out with D's error,
 * or with the partition and offset the broker gave it. A global function: the verifier checks
 * it once, not for each message of a batch.
 */
__noinline int gospan_sarama_done(const struct sarama_done *d, __u64 msg)
{
	struct sarama_ptr_key k = {};
	struct kafka_produce *e;
	__s32 partition = -1;

	if (!d || !msg)
		return 0;
	k.pid = d->pid;
	k.ptr = msg;
	e = bpf_map_lookup_elem(&kafka_sarama_async, &k);
	if (!e)
		return 0;
	e->end_ns = d->now;
	e->err_itab = d->err_itab;
	e->err_fn = d->err_fn;
	if (!d->err_itab && d->partition_at >= 0 && d->offset_at >= 0 &&
	    !bpf_probe_read_user(&partition, sizeof(partition), (void *)(msg + d->partition_at))) {
		e->partition = partition;
		e->offset = (__s64)go_read_word((void *)msg, d->offset_at);
	}
	if (bpf_ringbuf_output(&events, e, sizeof(*e), submit_flags()))
		count_drop(DROP_RINGBUF_FULL);
	bpf_map_delete_elem(&kafka_sarama_async, &k);
	return 1;
}

/*
 * At the entries of (*asyncProducer).returnSuccesses(batch), returnErrors(batch, err) and
 * returnError(msg, err) (COOKIE_OP says which): sarama is done with those messages.
 */
SEC("uprobe")
int kafka_sarama_end(GO_REGS *ctx)
{
	__u32 kind = COOKIE_OP(bpf_get_attach_cookie(ctx));
	const struct target_config *cfg;
	struct goroutine_key key;
	struct sarama_done d = {};
	__u64 batch, n, msg, i;

	d.now = bpf_ktime_get_ns();
	cfg = probe_context(ctx, &key);
	if (!cfg || !cfg->sarama_async)
		return 0;
	d.pid = key.pid;
	d.partition_at = cfg->sm_msg_partition;
	d.offset_at = cfg->sm_msg_offset;
	if (kind == SARAMA_END_ERROR) {
		d.err_itab = go_arg(ctx, 3);
		d.err_fn = go_itab_fn0(d.err_itab);
		gospan_sarama_done(&d, go_arg(ctx, 2));
		return 0;
	}
	if (kind == SARAMA_END_ERRORS) {
		d.err_itab = go_arg(ctx, 5);
		d.err_fn = go_itab_fn0(d.err_itab);
	}
	batch = go_arg(ctx, 2);
	n = go_arg(ctx, 3);
	for (i = 0; i < SARAMA_BATCH_MAX; i++) {
		if (i >= n || bpf_probe_read_user(&msg, sizeof(msg), (void *)(batch + i * sizeof(msg))))
			break;
		gospan_sarama_done(&d, msg);
	}
	if (n > SARAMA_BATCH_MAX && n < (1ULL << 32))
		count_drops(DROP_KAFKA_BATCH, n - SARAMA_BATCH_MAX);
	return 0;
}
