// SPDX-License-Identifier: GPL-2.0
/*
 * Kafka capture through twmb/franz-go's kgo (exporter/analysis/kafka.c places the probes).
 *
 * Producer: (*Client).ProduceSync(ctx, rs...) is one PRODUCER span, from its entry to its RETs,
 * whose results say each record's error. (*Client).Produce is inlined into its callers; what
 * they call is (*Client).produce(ctx, r, promise, block), where an asynchronous send begins: its
 * span ends where kgo finishes the record, (*Client).finishRecordPromise(pr, err, ...), whose
 * first act that takes time is calling the record's promise. ProduceSync calls produce once per
 * record, in order: those calls are its own, not sends of their own.
 *
 * Consumer: a record is processed from the moment (*FetchesRecordIter).Next hands it over until
 * the goroutine's next Next, the return of Fetches.EachRecord (whose loop is Next and the
 * callback) or its next poll: the CONSUMER span, the goroutine's span meanwhile.
 *
 * Each record sent is marked for the socket-layer writer (kafka_mark.bpf.h) as kafka-go's are.
 * Linked with the other uprobe families into one object (probe.bpf.h).
 */
#include "probe.bpf.h"
#include "kafka_context.bpf.h"

/* Records of one ProduceSync marked for the socket-layer writer; the rest go without context. */
#define FRANZ_MARKS_MAX 32
/* ProduceSync results looked through for an error. */
#define FRANZ_RESULTS_MAX 32
/* A ProduceResult: the *Record and the error. */
#define FRANZ_RESULT_SIZE 24

/*
 * A ProduceSync in flight, by goroutine: its record, and its records (RS, N) with the index of
 * the next one its own call of produce is for.
 */
struct franz_sync {
	struct kafka_produce rec;
	__u64 rs;
	__u32 n;
	__u32 next;
};

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 16384);
	__type(key, struct goroutine_key);
	__type(value, struct franz_sync);
} kafka_franz_syncs SEC(".maps");

/* An asynchronous send, by process and *Record, until kgo finishes the record. */
struct franz_record_key {
	__u32 pid;
	__u32 _pad;
	__u64 record;
};

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 65536);
	__type(key, struct franz_record_key);
	__type(value, struct kafka_produce);
} kafka_franz_async SEC(".maps");

/* One CPU's scratch, claimed for a program's whole run. */
struct franz_scratch {
	__u64 busy;
	union {
		struct franz_sync sync;
		struct kafka_consumer consumer;
	};
	struct kafka_header_walk walk;
	struct kafka_fp_input fp;
};

UPROBE_SCRATCH(kafka_franz_scratch, struct franz_scratch)

/* The client CL's first seed broker ("host:port" as the application gave it) into ADDR. */
static __always_inline __u32 franz_seed(const struct target_config *cfg, const void *cl,
					char *addr)
{
	struct go_string seeds;

	if (!cl || cfg->fz_client_seeds < 0 ||
	    bpf_probe_read_user(&seeds, sizeof(seeds), cl + cfg->fz_client_seeds) || !seeds.ptr ||
	    seeds.len <= 0)
		return 0;
	return go_read_string(addr, MAX_KAFKA_ADDR_LEN, seeds.ptr);
}

/*
 * Marks the record R for the socket-layer writer, which puts IDS' context into its header as
 * the produce request carrying it passes (bpf/kafka_wire.bpf.c). SC held.
 */
static __always_inline void franz_mark(const struct target_config *cfg, __u32 pid, const void *r,
				       const struct span_ctx *ctx, struct franz_scratch *sc)
{
	struct kafka_bytes b;

	kafka_fp_clear(&sc->fp);
	if (bpf_probe_read_user(&b, sizeof(b), r + cfg->fz_rec_key))
		return;
	kafka_fp_part(sc->fp.key, KAFKA_FP_KEY, &b, &sc->fp.key_len);
	if (bpf_probe_read_user(&b, sizeof(b), r + cfg->fz_rec_value))
		return;
	kafka_fp_part(sc->fp.value, KAFKA_FP_VALUE, &b, &sc->fp.value_len);
	gospan_kafka_mark(&sc->fp, pid, ctx);
}

/*
 * E's span begun on goroutine KEY for a send of COUNT records through the client CL, the first
 * of them R: ids, topic, key, broker.
 */
static __always_inline void franz_send_begin(GO_REGS *ctx, const struct target_config *cfg,
					     const struct goroutine_key *key,
					     struct kafka_produce *e, const void *cl,
					     const void *r, __u32 count)
{
	struct kafka_bytes kb;

	fill_header(&e->hdr, EVENT_KAFKA_PRODUCE, key, bpf_ktime_get_ns());
	child_span(ctx, cfg, key, &e->ids);
	e->cookie = (__u32)bpf_get_attach_cookie(ctx);
	e->count = count;
	e->end_ns = 0;
	e->partition = e->offset = -1;
	e->err_itab = e->err_fn = 0;
	e->topic_len = go_read_string(e->topic, MAX_KAFKA_TOPIC_LEN, r + cfg->fz_rec_topic);
	bpf_probe_read_user(&kb, sizeof(kb), r + cfg->fz_rec_key);
	e->has_key = kafka_key(cfg, &kb, e->key, &e->key_len);
	/* A plain string: addr_fn 0 tells user space there is no net.Addr to check. */
	e->addr_fn = 0;
	e->addr_len = franz_seed(cfg, cl, e->addr);
}

/* Where the record R went, when it was written: its partition and offset into E. */
static __always_inline void franz_placed(const struct target_config *cfg, const void *r,
					 struct kafka_produce *e)
{
	__s32 partition;
	__s64 offset;

	if (!r || bpf_probe_read_user(&partition, sizeof(partition), r + cfg->fz_rec_partition) ||
	    bpf_probe_read_user(&offset, sizeof(offset), r + cfg->fz_rec_offset))
		return;
	e->partition = partition;
	e->offset = offset;
}

/* At ProduceSync's entry (cl, ctx, rs...): the send's record, kept for its RETs. */
static __always_inline void sync_start(GO_REGS *ctx, struct franz_scratch *sc)
{
	struct franz_sync *s = &sc->sync;
	const struct target_config *cfg;
	struct goroutine_key key;
	struct span_ctx sctx = {}; /* its padding too: it goes to a global function */
	void *const *rs;
	void *r = NULL;
	__s64 n, i;

	cfg = probe_context(ctx, &key);
	if (!cfg || !cfg->franz)
		return;
	rs = (void *const *)go_arg(ctx, 4);
	n = (__s64)go_arg(ctx, 5);
	if (n <= 0 || !rs || bpf_probe_read_user(&r, sizeof(r), rs) || !r)
		return;
	s->n = n > 0xffffffffLL ? 0xffffffffU : (__u32)n;
	franz_send_begin(ctx, cfg, &key, &s->rec, (void *)go_arg(ctx, 1), r, s->n);
	s->rs = (__u64)rs;
	s->next = 0;
	if (bpf_map_update_elem(&kafka_franz_syncs, &key, s, BPF_ANY)) {
		count_drop(DROP_INFLIGHT_FULL);
		return;
	}
	if (!cfg->propagate)
		return;
	track_process(cfg, key.pid);
	span_ctx_of(&sctx, &s->rec.ids);
	for (i = 0; i < FRANZ_MARKS_MAX; i++) {
		if (i >= n || bpf_probe_read_user(&r, sizeof(r), rs + i) || !r)
			break;
		franz_mark(cfg, key.pid, r, &sctx, sc);
	}
}

SEC("uprobe")
int kafka_franz_sync_entry(GO_REGS *ctx)
{
	struct franz_scratch *sc = kafka_franz_scratch_claim();

	if (sc) {
		sync_start(ctx, sc);
		scratch_unclaim(&sc->busy);
	}
	return 0;
}

/*
 * After ProduceSync's CALLs (or at its RETs): its ProduceResults (ptr, len) in the first
 * result slots. The span's
 * error is the first record's that has one; one record's partition and offset are said.
 */
SEC("uprobe")
int kafka_franz_sync_end(GO_REGS *ctx)
{
	__u64 now = bpf_ktime_get_ns();
	const struct target_config *cfg;
	struct goroutine_key key;
	struct franz_sync *s;
	struct {
		__u64 record, itab;
	} res;
	__u32 slot = COOKIE_RESULT_SLOT(bpf_get_attach_cookie(ctx));
	__u64 results, i;
	__s64 n;

	cfg = probe_context(ctx, &key);
	if (!cfg)
		return 0;
	s = bpf_map_lookup_elem(&kafka_franz_syncs, &key);
	if (!s)
		return 0;
	s->rec.end_ns = now;
	/* At a RET or after the CALL: the slice's pointer where the caller moved it, its length kept. */
	results = go_arg(ctx, slot ? slot : 1);
	n = (__s64)go_arg(ctx, 2);
	for (i = 0; i < FRANZ_RESULTS_MAX && results; i++) {
		if ((__s64)i >= n || bpf_probe_read_user(&res, sizeof(res),
							 (void *)(results + i * FRANZ_RESULT_SIZE)))
			break;
		if (res.itab) {
			s->rec.err_itab = res.itab;
			s->rec.err_fn = go_itab_fn0(res.itab);
			break;
		}
		if (!i && s->rec.count == 1)
			franz_placed(cfg, (void *)res.record, &s->rec);
	}
	if (s->rec.err_itab)
		s->rec.partition = s->rec.offset = -1;
	if (bpf_ringbuf_output(&events, &s->rec, sizeof(s->rec), submit_flags()))
		count_drop(DROP_RINGBUF_FULL);
	bpf_map_delete_elem(&kafka_franz_syncs, &key);
	return 0;
}

/*
 * At produce's entry (cl, ctx, r, promise, block): ProduceSync's own call for its next record,
 * or an asynchronous send of R (Produce, TryProduce), whose span waits for the record's promise.
 */
static __always_inline void produce_start(GO_REGS *ctx, struct franz_scratch *sc)
{
	struct kafka_produce *e = &sc->sync.rec;
	struct franz_record_key rk = {};
	const struct target_config *cfg;
	struct goroutine_key key;
	struct franz_sync *s;
	struct span_ctx sctx = {}; /* its padding too: it goes to a global function */
	__u64 want = 0;
	void *r, *at;

	cfg = probe_context(ctx, &key);
	if (!cfg || !cfg->franz)
		return;
	r = (void *)go_arg(ctx, 4);
	if (!r)
		return;
	s = bpf_map_lookup_elem(&kafka_franz_syncs, &key);
	if (s) {
		at = (void *)(s->rs + (__u64)s->next * sizeof(want));
		if (s->next < s->n && !bpf_probe_read_user(&want, sizeof(want), at) &&
		    want == (__u64)r) {
			s->next++;
			return;
		}
		/* Not its record: a ProduceSync whose RET never came (a panic) left it behind. */
		bpf_map_delete_elem(&kafka_franz_syncs, &key);
	}
	franz_send_begin(ctx, cfg, &key, e, (void *)go_arg(ctx, 1), r, 1);
	rk.pid = key.pid;
	rk.record = (__u64)r;
	if (bpf_map_update_elem(&kafka_franz_async, &rk, e, BPF_ANY)) {
		count_drop(DROP_INFLIGHT_FULL);
		return;
	}
	if (!cfg->propagate)
		return;
	track_process(cfg, key.pid);
	span_ctx_of(&sctx, &e->ids);
	franz_mark(cfg, key.pid, r, &sctx, sc);
}

SEC("uprobe")
int kafka_franz_produce_entry(GO_REGS *ctx)
{
	struct franz_scratch *sc = kafka_franz_scratch_claim();

	if (sc) {
		produce_start(ctx, sc);
		scratch_unclaim(&sc->busy);
	}
	return 0;
}

/*
 * At finishRecordPromise's entry (cl, pr promisedRec{ctx, promise, *Record}, err, ...): the
 * record is done, its promise about to be called; an asynchronous send's span ends.
 */
SEC("uprobe")
int kafka_franz_promise(GO_REGS *ctx)
{
	__u64 now = bpf_ktime_get_ns();
	struct franz_record_key rk = {};
	const struct target_config *cfg;
	struct goroutine_key key;
	struct kafka_produce *e;

	cfg = probe_context(ctx, &key);
	if (!cfg)
		return 0;
	rk.pid = key.pid;
	rk.record = go_arg(ctx, 5);
	e = bpf_map_lookup_elem(&kafka_franz_async, &rk);
	if (!e)
		return 0;
	e->end_ns = now;
	e->err_itab = go_arg(ctx, 6);
	e->err_fn = go_itab_fn0(e->err_itab);
	if (!e->err_itab)
		franz_placed(cfg, (void *)rk.record, e);
	if (bpf_ringbuf_output(&events, e, sizeof(*e), submit_flags()))
		count_drop(DROP_RINGBUF_FULL);
	bpf_map_delete_elem(&kafka_franz_async, &rk);
	return 0;
}

/*
 * After Next's CALLs (or at its RETs): the *Record it hands over in the first result register
 * (or the one its caller moved it to: COOKIE_RESULT_SLOT); or at Next's last CALL
 * (FRANZ_AT_NEXT_CALL), at SP + fz_next_slot. Processed from now.
 * A goroutine seen for the first time (its poll began before gospan attached) gets its entry
 * here, without a client to name the group and the broker.
 */
static __always_inline void franz_delivered(GO_REGS *ctx, struct franz_scratch *sc)
{
	__u64 now = bpf_ktime_get_ns(), cookie = bpf_get_attach_cookie(ctx);
	__u32 slot = COOKIE_RESULT_SLOT(cookie);
	const struct target_config *cfg;
	struct goroutine_key key;
	struct kafka_header_layout hl = {};
	struct kafka_consumer *c;
	struct kafka_process *e;
	struct kafka_bytes kb;
	__s32 partition = -1;
	void *r, *cl;
	bool has_tp;

	cfg = probe_context(ctx, &key);
	if (!cfg || !cfg->franz)
		return;
	if (COOKIE_OP(cookie) == FRANZ_AT_NEXT_CALL)
		r = cfg->fz_next_slot >= 0 ? (void *)go_read_word((void *)GO_SP(ctx), cfg->fz_next_slot) :
					     NULL;
	else
		r = (void *)go_arg(ctx, slot ? slot : 1);
	if (!r)
		return;
	c = kafka_consumer_of(&key, &sc->consumer);
	if (!c)
		return;
	kafka_process_end(&key, c, now);
	cl = (void *)c->handle;
	e = &c->rec;
	__builtin_memset(&e->ids, 0, sizeof(e->ids));
	e->tracestate_len = 0;
	hl.key = cfg->fz_header_key;
	hl.value = cfg->fz_header_value;
	hl.size = cfg->fz_header_size;
	has_tp = cfg->propagate &&
		 gospan_kafka_context(&hl, &sc->walk, (__u64)r + cfg->fz_rec_headers, e);
	kafka_process_ids(ctx, cfg, &key, e, has_tp, now);
	e->topic_len = go_read_string(e->topic, MAX_KAFKA_TOPIC_LEN, r + cfg->fz_rec_topic);
	bpf_probe_read_user(&partition, sizeof(partition), r + cfg->fz_rec_partition);
	e->partition = partition;
	e->offset = (__s64)go_read_word(r, cfg->fz_rec_offset);
	bpf_probe_read_user(&kb, sizeof(kb), r + cfg->fz_rec_key);
	e->has_key = kafka_key(cfg, &kb, e->key, &e->key_len);
	e->group_len = cl && cfg->fz_client_group >= 0 ?
			       go_read_string(e->group, MAX_KAFKA_GROUP_LEN,
					      cl + cfg->fz_client_group) :
			       0;
	e->addr_len = franz_seed(cfg, cl, e->addr);

	kafka_process_start(&key, c);
}

SEC("uprobe")
int kafka_franz_delivered(GO_REGS *ctx)
{
	struct franz_scratch *sc = kafka_franz_scratch_claim();

	if (sc) {
		franz_delivered(ctx, sc);
		scratch_unclaim(&sc->busy);
	}
	return 0;
}
