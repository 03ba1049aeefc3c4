/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * What sarama's producers share (kafka.bpf.c's SyncProducer, kafka_sarama.bpf.c's
 * AsyncProducer): a send's record from its first ProducerMessage, and a message marked for the
 * socket-layer writer.
 */
#ifndef GOSPAN_SARAMA_BPF_H
#define GOSPAN_SARAMA_BPF_H

#include "kafka_context.bpf.h"

/* A sarama Encoder interface at AT as a []byte's head: a StringEncoder's or ByteEncoder's. */
static __always_inline bool sarama_encoder_bytes(const void *at, struct kafka_bytes *b)
{
	struct go_iface enc;

	b->ptr = NULL;
	b->len = 0;
	if (bpf_probe_read_user(&enc, sizeof(enc), at))
		return false;
	if (!enc.itab || !enc.data)
		return true;
	return !bpf_probe_read_user(b, 16, (void *)enc.data);
}

/*
 * E, a send of COUNT messages whose first is the ProducerMessage M, begun now on goroutine KEY:
 * its record, its span a child of the one the goroutine works for.
 */
static __always_inline void sarama_send_begin(GO_REGS *ctx, const struct target_config *cfg,
					      const struct goroutine_key *key,
					      struct kafka_produce *e, const void *m, __u32 count)
{
	struct kafka_bytes b = {};

	fill_header(&e->hdr, EVENT_KAFKA_PRODUCE, key, bpf_ktime_get_ns());
	child_span(ctx, cfg, key, &e->ids);
	e->cookie = (__u32)bpf_get_attach_cookie(ctx);
	e->count = count;
	e->end_ns = 0;
	e->err_itab = e->err_fn = 0;
	e->partition = e->offset = -1;
	e->addr_fn = 0;
	e->addr_len = 0;
	e->topic_len = go_read_string(e->topic, MAX_KAFKA_TOPIC_LEN, m + cfg->sm_msg_topic);
	if (!sarama_encoder_bytes(m + cfg->sm_msg_key, &b))
		b.ptr = NULL;
	e->has_key = kafka_key(cfg, &b, e->key, &e->key_len);
}

/*
 * Marks the ProducerMessage M for the socket-layer writer as CTX's (zeroed, then filled: it goes
 * to a global function whole), for process PID; FP: this CPU's scratch, held. Whether its key
 * and value could be read (an Encoder of another kind than StringEncoder or ByteEncoder cannot).
 */
static __always_inline bool sarama_mark(const struct target_config *cfg, __u32 pid, const void *m,
					const struct span_ctx *ctx, struct kafka_fp_input *fp)
{
	struct kafka_bytes b;

	if (!m || !sarama_encoder_bytes(m + cfg->sm_msg_key, &b))
		return false;
	kafka_fp_clear(fp);
	kafka_fp_part(fp->key, KAFKA_FP_KEY, &b, &fp->key_len);
	if (!sarama_encoder_bytes(m + cfg->sm_msg_value, &b))
		return false;
	kafka_fp_part(fp->value, KAFKA_FP_VALUE, &b, &fp->value_len);
	gospan_kafka_mark(fp, pid, ctx);
	return true;
}

#endif
