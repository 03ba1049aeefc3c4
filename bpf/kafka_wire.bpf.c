// SPDX-License-Identifier: GPL-2.0
/*
 * Kafka trace context at the socket layer: a traceparent header added to each record of a
 * produce request whose message a producer's probe marked (bpf/kafka.bpf.c), without writing
 * into the service's memory. An object of its own, loaded once a traced process has a Kafka
 * producer; the socket-layer writer's sk_msg program (wire.bpf.c) hands it the messages that
 * begin like a produce request.
 *
 * A produce request (v3 to v13) is read whole from the one message it must be in: its header, its
 * topics, their partitions, each partition's record batch (magic 2) and its records. A record
 * whose key and value fingerprint (kafka_mark.bpf.h) has a mark, and that carries no traceparent
 * of its own, gets one more header at its end: "traceparent" and its 55 bytes, 68 bytes in all.
 * Then its length (whose varint may take a byte more: a record under 64 bytes), its header
 * count, its batch's length, the partition's records size and the request's size are made
 * right, and the batch's CRC-32C (over its bytes from its attributes on) computed again. What
 * cannot be done exactly is left as it was, and counted: a compressed batch (its records are not
 * readable without decompressing), a request not whole in one write, a record whose header count
 * would grow a byte or its length more than one, more records than one request is rewritten
 * for. (A flexible request's records size, an unsigned varint, may grow: the bytes go in.)
 */
#include <stdbool.h>
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

#include "events.h"
#include "kafka_mark.bpf.h"
#include "scratch.bpf.h"
#include "trace_context.bpf.h"
#include "wire_maps.bpf.h"

char LICENSE[] SEC("license") = "GPL";

#define KW_API_PRODUCE 0
#define KW_VERSION_MIN 3
#define KW_VERSION_MAX 13
#define KW_FLEXIBLE 9	   /* from this version on: compact strings and arrays, tagged fields */
#define KW_TOPIC_IDS 13	   /* ... and topics named by id */
#define KW_SIZE_MAX (1 << 20) /* requests bigger are left as they are */
#define KW_EDITS_MAX 64	   /* records given context in one request */
#define KW_BATCHES_MAX 16  /* partitions' batches in one request */
#define KW_STEPS_MAX 4096  /* walk steps: topics, partitions and records */
#define KW_HEADERS_MAX 8   /* a record's headers searched for its own traceparent */
#define KW_CRC_CHUNK 256   /* bytes a CRC step reads */
/* The header added: key length 11 (varint 0x16), "traceparent", value length 55 (0x6e), value. */
#define KW_HEADER_LEN (1 + 11 + 1 + TRACEPARENT_LEN)
/* A record batch's header: where its fields are, and its size. */
#define RB_LENGTH 8
#define RB_MAGIC 16
#define RB_CRC 17
#define RB_ATTRIBUTES 21
#define RB_RECORDS 57
#define RB_HEADER 61

enum kw_stage {
	KW_TOPIC = 0, /* a topic's name (or id) and its partition count are next */
	KW_PARTITION, /* a partition's index and records */
	KW_RECORD,    /* a record of the partition's batch */
	KW_DONE,
};

/* A record that gets context: where it and its fields are, and what they hold. */
struct kw_edit {
	__u32 rec;	 /* its length varint */
	__u32 len_size;	 /* ... that many bytes */
	__u32 len;	 /* the length it says */
	__u32 count_off; /* its header count varint (one byte) */
	__u32 count;
	__u32 end; /* where the header goes */
	__u32 batch;
	__u32 grow; /* 1: the length's varint takes a byte more (a record under 64 bytes) */
	struct span_ctx ctx;
};

/* A partition's batch that has records getting context. */
struct kw_batch {
	__u32 off;	     /* its first byte (baseOffset) */
	__u32 end;	     /* one past its last */
	__u32 size_off;	     /* the partition's records size */
	__u32 size_len;	     /* ... 4 (int32), or its uvarint's bytes */
	__u32 size;	     /* ... and the size it says (the uvarint's value less one) */
	__u32 inserted;	     /* bytes added */
};

struct kw_scratch {
	__u64 busy;
	__u32 off, size, version, stage;
	__u32 topics, parts, recs;
	__u32 part_end; /* where the current partition's records end */
	__u32 nedits, nbatches, batch;
	__u32 pid;
	__u32 bad;    /* the request cannot be read: nothing is changed */
	__u32 crc;
	__u32 crc_off, crc_end;
	__u32 shift;	 /* bytes added before the batch being finished */
	__u32 fin, fin_begun; /* the batch being finished, and whether its CRC is begun */
	__u32 skipped_compressed, skipped_room, already_set;
	__u32 table_ready;
	__u32 table[256];
	__u8 chunk[KW_CRC_CHUNK];
	struct kafka_fp_input fp;
	struct kafka_mark_key mk;
	char header[KW_HEADER_LEN + 8];
	struct kw_edit edits[KW_EDITS_MAX];
	struct kw_batch batches[KW_BATCHES_MAX];
};

_Static_assert(__builtin_offsetof(struct kw_scratch, busy) == 0, "scratch_take(): busy first");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct kw_scratch);
} kw_scratch SEC(".maps");

/* A varint's bytes, copied out of the message: this CPU's (the scratch's claim covers it). */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u8[16]);
} kw_varbytes SEC(".maps");

static __always_inline __u8 *kw_varbuf(void)
{
	__u32 zero = 0;

	return bpf_map_lookup_elem(&kw_varbytes, &zero);
}

/* What a bpf_loop() step is handed. */
struct kw_loop {
	struct sk_msg_md *msg;
	struct kw_scratch *sc;
};

static __always_inline int kw_pull(struct sk_msg_md *msg, __u32 start, __u32 len)
{
	return bpf_msg_pull_data(msg, start, start + len, 0);
}

/* Up to 8 bytes at OFF, big-endian (N of them); -1 when they are not there. */
static __always_inline __s64 kw_be(struct sk_msg_md *msg, __u32 off, __u32 n, __u32 size)
{
	__u8 *d, *e;
	__u64 v = 0;
	__u32 i;

	if (off + n > size || kw_pull(msg, off, n))
		return -1;
	d = msg->data;
	e = msg->data_end;
	for (i = 0; i < 8; i++) {
		if (i >= n)
			break;
		if (d + i + 1 > e)
			return -1;
		v = v << 8 | d[i];
	}
	return (__s64)v;
}

/* Writes the N (at most 8) bytes of SRC at OFF; false when they are not there. */
static __always_inline bool kw_put(struct sk_msg_md *msg, __u32 off, const __u8 *src, __u32 n)
{
	__u8 *d, *e;
	__u32 i;

	if (kw_pull(msg, off, n))
		return false;
	d = msg->data;
	e = msg->data_end;
	for (i = 0; i < 8; i++) {
		if (i >= n)
			break;
		if (d + i + 1 > e)
			return false;
		d[i] = src[i];
	}
	return true;
}

/* Writes V's low N bytes big-endian at OFF; false when they are not there. */
static __always_inline bool kw_put_be(struct sk_msg_md *msg, __u32 off, __u32 n, __u64 v)
{
	__u8 b[8];
	__u32 i;

	if (n > 8)
		return false;
	for (i = 0; i < 8; i++) {
		if (i >= n)
			break;
		b[i] = (__u8)(v >> (8 * (n - 1 - i)));
	}
	return kw_put(msg, off, b, n);
}

/*
 * Up to N (at most 16) bytes of the message from OFF copied into DST, N cut to what is before
 * SIZE: the bytes copied, 0 when none could be.
 */
static __always_inline __u32 kw_take(struct sk_msg_md *msg, __u32 off, __u32 size, __u8 *dst,
				     __u32 n)
{
	__u8 *d, *e;

	if (off >= size)
		return 0;
	if (n > size - off)
		n = size - off;
	if (kw_pull(msg, off, n))
		return 0;
	d = msg->data;
	e = msg->data_end;
	/* 1 to 16, as the verifier can see. */
	n = ((n - 1) & 15) + 1;
	asm volatile("" : "+r"(n));
	if (n > 16 || (void *)d + n > (void *)e || bpf_probe_read_kernel(dst, n, d))
		return 0;
	return n;
}

/* A varint decoded: its value, and the bytes it took. */
struct kw_num {
	__s64 v;
	__u32 n;
	__u32 _pad;
};

/*
 * The varint at OFF (a Kafka varint, zigzag, when ZIGZAG; else an unsigned varint) into OUT: its
 * value and its bytes (at most 10); 0 when it is not whole before SIZE. Decoded without a branch
 * a byte: a varint's every length would otherwise be a path of its own for the verifier, and a
 * record's seven varints in a row ten to the seventh.
 *
 * A global function (not inlined, not static): the verifier checks it once, where inlined it was
 * checked again at each of the thirty places that decode one and on every path to them, most of
 * kafka_produce's 727k instructions. It pulls data: the caller holds no packet pointer across it.
 */
__noinline int gospan_kw_varint(struct sk_msg_md *msg, __u32 off, __u32 size, int zigzag,
				struct kw_num *out)
{
	__u64 u = 0, take = 1, b;
	__u32 got, len = 0, i;
	__u8 *buf = kw_varbuf();

	if (!msg || !out || !buf)
		return 0;
	got = kw_take(msg, off, size, buf, 10);
	if (!got)
		return 0;
	for (i = 0; i < 10; i++) {
		b = buf[i];
		u |= ((b & 0x7f) << (7 * i)) & -take;
		len += (__u32)take;
		take &= b >> 7;
	}
	if (take || len > got)
		return 0;
	out->n = len;
	out->v = zigzag ? (__s64)((u >> 1) ^ -(u & 1)) : (__s64)u;
	return 1;
}

/* gospan_kw_varint()'s value into *V and its bytes into *N; false when it is not whole. */
static __always_inline bool kw_varint(struct sk_msg_md *msg, __u32 off, __u32 size, bool zigzag,
				      __s64 *v, __u32 *n)
{
	struct kw_num r = {}; /* zeroed: before 6.3 a global function takes initialized stack only */

	if (!gospan_kw_varint(msg, off, size, zigzag, &r))
		return false;
	*v = r.v;
	*n = r.n;
	return true;
}

/* 1 when X (below 2^63) is not 0, else 0, without a branch (see kw_varint). */
static __always_inline __u64 kw_nonzero(__u64 x)
{
	return (x | (0 - x)) >> 63;
}

/* The bytes the unsigned varint of U (below 2^35) takes. */
static __always_inline __u32 kw_uvarint_size(__u64 u)
{
	return (__u32)(1 + kw_nonzero(u >> 7) + kw_nonzero(u >> 14) + kw_nonzero(u >> 21) +
		       kw_nonzero(u >> 28));
}

/* The bytes the zigzag varint of V (a length: not negative, below 2^34) takes. */
static __always_inline __u32 kw_varint_size(__s64 v)
{
	return kw_uvarint_size((__u64)((v << 1) ^ (v >> 63)));
}

/* Writes V as a varint of exactly N bytes (ZIGZAG as for kw_varint) at OFF. */
static __always_inline bool kw_put_varint(struct sk_msg_md *msg, __u32 off, __u32 n, bool zigzag,
					  __s64 v)
{
	__u64 z = zigzag ? (__u64)((v << 1) ^ (v >> 63)) : (__u64)v;
	__u8 b[8];
	__u32 i;

	for (i = 0; i < 5; i++) {
		b[i] = (__u8)((z & 0x7f) | (i + 1 < n ? 0x80 : 0));
		z >>= 7;
	}
	return n <= 5 && kw_put(msg, off, b, n);
}

/* Copies up to MAX bytes (16 or 32) of OFF..OFF+LEN into DST. */
static __always_inline void kw_copy(struct sk_msg_md *msg, __u32 off, __s64 len, __u8 *dst,
				    __u32 max)
{
	__u32 n = len > max ? max : (len > 0 ? (__u32)len : 0);

	if (n > 16) {
		kw_take(msg, off, off + n, dst, 16);
		kw_take(msg, off + 16, off + n, dst + 16, n - 16);
	} else if (n) {
		kw_take(msg, off, off + n, dst, n);
	}
}

/* A string (int16 length, or compact: uvarint length + 1) at *OFF skipped; false: malformed. */
static __always_inline bool kw_skip_string(struct sk_msg_md *msg, struct kw_scratch *sc)
{
	__s64 len;
	__u32 n;

	if (sc->version >= KW_FLEXIBLE) {
		if (!kw_varint(msg, sc->off, sc->size, false, &len, &n))
			return false;
		sc->off += n + (len > 0 ? (__u32)(len - 1) : 0);
	} else {
		len = kw_be(msg, sc->off, 2, sc->size);
		if (len < 0)
			return false;
		len = (__s16)len;
		sc->off += 2 + (len > 0 ? (__u32)len : 0);
	}
	return sc->off <= sc->size;
}

/* An array's count (int32, or compact: uvarint count + 1) at *OFF; -1: malformed or null. */
static __always_inline __s64 kw_count(struct sk_msg_md *msg, struct kw_scratch *sc)
{
	__s64 v;
	__u32 n;

	if (sc->version >= KW_FLEXIBLE) {
		if (!kw_varint(msg, sc->off, sc->size, false, &v, &n) || v < 1)
			return -1;
		sc->off += n;
		return v - 1;
	}
	v = kw_be(msg, sc->off, 4, sc->size);
	sc->off += 4;
	return (__s32)v;
}

/* Tagged fields (flexible versions) at *OFF skipped: their count, then tag, size and bytes. */
static __always_inline bool kw_skip_tags(struct sk_msg_md *msg, struct kw_scratch *sc)
{
	__s64 count, tag, size;
	__u32 n, i;

	if (sc->version < KW_FLEXIBLE)
		return true;
	if (!kw_varint(msg, sc->off, sc->size, false, &count, &n))
		return false;
	sc->off += n;
	for (i = 0; i < 4; i++) {
		if (i >= count)
			return true;
		if (!kw_varint(msg, sc->off, sc->size, false, &tag, &n))
			return false;
		sc->off += n;
		if (!kw_varint(msg, sc->off, sc->size, false, &size, &n) || size < 0)
			return false;
		sc->off += n + (__u32)size;
	}
	return false;
}

/* A topic: its name (or id), its partition count. */
static __always_inline void kw_topic(struct sk_msg_md *msg, struct kw_scratch *sc)
{
	__s64 parts;

	if (sc->version >= KW_TOPIC_IDS)
		sc->off += 16;
	else if (!kw_skip_string(msg, sc))
		goto bad;
	parts = kw_count(msg, sc);
	if (parts < 0)
		goto bad;
	sc->parts = (__u32)parts;
	sc->stage = KW_PARTITION;
	return;
bad:
	sc->bad = 1;
}

/* The end of a partition (its tagged fields) and, after its topic's last, of the topic. */
static __always_inline void kw_partition_done(struct sk_msg_md *msg, struct kw_scratch *sc)
{
	sc->off = sc->part_end;
	if (!kw_skip_tags(msg, sc)) {
		sc->bad = 1;
		return;
	}
	sc->parts--;
	sc->stage = KW_PARTITION;
	if (sc->parts)
		return;
	if (!kw_skip_tags(msg, sc)) {
		sc->bad = 1;
		return;
	}
	sc->topics--;
	sc->stage = sc->topics ? KW_TOPIC : KW_DONE;
}

/* A partition: its index, its records' size and, when they are one plain batch, that batch. */
static __always_inline void kw_partition(struct sk_msg_md *msg, struct kw_scratch *sc)
{
	__s64 size, blen, attrs;
	struct kw_batch *b;
	__u32 n, size_off;

	if (!sc->parts) {
		sc->topics--;
		sc->stage = sc->topics ? KW_TOPIC : KW_DONE;
		return;
	}
	sc->off += 4; /* index */
	size_off = sc->off;
	if (sc->version >= KW_FLEXIBLE) {
		if (!kw_varint(msg, sc->off, sc->size, false, &size, &n))
			goto bad;
		size -= 1;
	} else {
		size = (__s32)kw_be(msg, sc->off, 4, sc->size);
		n = 4;
	}
	sc->off += n;
	if (size < 0) { /* null records */
		sc->part_end = sc->off;
		kw_partition_done(msg, sc);
		return;
	}
	sc->part_end = sc->off + (__u32)size;
	if (sc->part_end > sc->size)
		goto bad;
	blen = kw_be(msg, sc->off + RB_LENGTH, 4, sc->size);
	attrs = kw_be(msg, sc->off + RB_ATTRIBUTES, 2, sc->size);
	/* One batch of magic 2 filling the records: else they are let be. */
	if (blen < 0 || attrs < 0 || kw_be(msg, sc->off + RB_MAGIC, 1, sc->size) != 2 ||
	    sc->off + RB_LENGTH + 4 + (__u32)blen != sc->part_end) {
		kw_partition_done(msg, sc);
		return;
	}
	sc->recs = (__u32)kw_be(msg, sc->off + RB_RECORDS, 4, sc->size);
	if (attrs & 0x7) {
		sc->skipped_compressed += sc->recs;
		kw_partition_done(msg, sc);
		return;
	}
	if (sc->nbatches >= KW_BATCHES_MAX) {
		sc->skipped_room += sc->recs;
		kw_partition_done(msg, sc);
		return;
	}
	sc->batch = sc->nbatches;
	b = &sc->batches[sc->batch & (KW_BATCHES_MAX - 1)];
	b->off = sc->off;
	b->end = sc->part_end;
	b->size_off = size_off;
	b->size_len = n;
	b->size = (__u32)size;
	b->inserted = 0;
	sc->nbatches++;
	sc->off += RB_HEADER;
	sc->stage = KW_RECORD;
	return;
bad:
	sc->bad = 1;
}

/*
 * Whether the record's headers, COUNT of them from OFF before END, include a traceparent: 1.
 * Undecided (too many to look at): 1, and nothing is added. A global function: checked once,
 * not again on every path through a record.
 */
__noinline int gospan_kw_has_traceparent(struct sk_msg_md *msg, __u32 off, __u32 end, __s64 count)
{
	char tp[12] = "traceparent";
	__s64 klen, vlen;
	__u32 i, j, n;
	__u8 diff, *buf;

	if (!msg || count > KW_HEADERS_MAX)
		return 1;
	for (i = 0; i < KW_HEADERS_MAX; i++) {
		if (i >= count)
			return 0;
		if (!kw_varint(msg, off, end, true, &klen, &n) || klen < 0)
			return 1;
		off += n;
		if (klen == 11) {
			/* Compared without a branch a byte, as kw_varint decodes. */
			buf = kw_varbuf();
			if (!buf || kw_take(msg, off, end, buf, 11) != 11)
				return 1;
			diff = 0;
			for (j = 0; j < 11; j++)
				diff |= buf[j] ^ (__u8)tp[j];
			if (!diff)
				return 1;
		}
		off += (__u32)klen;
		if (!kw_varint(msg, off, end, true, &vlen, &n))
			return 1;
		off += n + (vlen > 0 ? (__u32)vlen : 0);
	}
	return 1;
}

/* A record: when its message was marked, and it can take the header, an edit. */
static __always_inline void kw_record(struct sk_msg_md *msg, struct kw_scratch *sc)
{
	__s64 len, v, klen, vlen, count;
	__u32 n, len_size, rec = sc->off, end, off, grow;
	struct span_ctx *ctx;
	struct kw_edit *ed;

	if (!sc->recs) {
		kw_partition_done(msg, sc);
		return;
	}
	sc->recs--;
	if (!kw_varint(msg, rec, sc->part_end, true, &len, &len_size) || len < 0)
		goto bad;
	end = rec + len_size + (__u32)len;
	if (end > sc->part_end)
		goto bad;
	sc->off = end;
	off = rec + len_size + 1; /* attributes */
	if (!kw_varint(msg, off, end, true, &v, &n)) /* timestamp delta */
		goto bad;
	off += n;
	if (!kw_varint(msg, off, end, true, &v, &n)) /* offset delta */
		goto bad;
	off += n;
	if (!kw_varint(msg, off, end, true, &klen, &n))
		goto bad;
	off += n;
	kafka_fp_clear(&sc->fp);
	sc->fp.key_len = (__s32)klen;
	kw_copy(msg, off, klen, sc->fp.key, KAFKA_FP_KEY);
	off += klen > 0 ? (__u32)klen : 0;
	if (!kw_varint(msg, off, end, true, &vlen, &n))
		goto bad;
	off += n;
	sc->fp.value_len = (__s32)vlen;
	kw_copy(msg, off, vlen, sc->fp.value, KAFKA_FP_VALUE);
	off += vlen > 0 ? (__u32)vlen : 0;
	sc->mk.pid = sc->pid;
	sc->mk.fingerprint = kafka_fingerprint(&sc->fp);
	ctx = bpf_map_lookup_elem(&kafka_marks, &sc->mk);
	if (!ctx)
		return;
	if (!kw_varint(msg, off, end, true, &count, &n) || count < 0)
		goto bad;
	if (gospan_kw_has_traceparent(msg, off + n, end, count)) {
		sc->already_set++;
		bpf_map_delete_elem(&kafka_marks, &sc->mk);
		return;
	}
	grow = kw_varint_size(len + KW_HEADER_LEN) - len_size;
	if (n != 1 || count + 1 > 63 || grow > 1 || sc->nedits >= KW_EDITS_MAX) {
		sc->skipped_room++;
		return;
	}
	ed = &sc->edits[sc->nedits & (KW_EDITS_MAX - 1)];
	ed->rec = rec;
	ed->len_size = len_size;
	ed->len = (__u32)len;
	ed->count_off = off;
	ed->count = (__u32)count;
	ed->end = end;
	ed->batch = sc->batch;
	ed->grow = grow;
	ed->ctx = *ctx;
	sc->nedits++;
	/* What its batch will take, for kw_room(). */
	sc->batches[sc->batch & (KW_BATCHES_MAX - 1)].inserted += KW_HEADER_LEN + grow;
	bpf_map_delete_elem(&kafka_marks, &sc->mk);
	return;
bad:
	sc->bad = 1;
}

/* bpf_loop()'s step of the walk: one topic, partition or record; 1 ends the walk. */
static long kw_walk_step(__u32 i, struct kw_loop *l)
{
	struct kw_scratch *sc = l->sc;

	switch (sc->stage) {
	case KW_TOPIC:
		kw_topic(l->msg, sc);
		break;
	case KW_PARTITION:
		kw_partition(l->msg, sc);
		break;
	case KW_RECORD:
		kw_record(l->msg, sc);
		break;
	default:
		return 1;
	}
	return sc->bad || sc->stage == KW_DONE;
}

/* bpf_loop()'s step of the edits, from the last: the header added, the record's lengths. */
static long kw_edit_step(__u32 i, struct kw_loop *l)
{
	struct kw_scratch *sc = l->sc;
	struct sk_msg_md *msg = l->msg;
	struct kw_edit *ed;
	struct kw_batch *b;
	__u8 *d, *e;
	__u32 j;

	if (i >= sc->nedits)
		return 1;
	ed = &sc->edits[(sc->nedits - 1 - i) & (KW_EDITS_MAX - 1)];
	sc->header[0] = 22; /* 11, zigzag */
	__builtin_memcpy(sc->header + 1, "traceparent", 11);
	sc->header[12] = 110; /* 55, zigzag */
	traceparent_value(sc->header + 13, &ed->ctx);
	if (bpf_msg_push_data(msg, ed->end, KW_HEADER_LEN, 0) ||
	    kw_pull(msg, ed->end, KW_HEADER_LEN)) {
		sc->bad = 2;
		return 1;
	}
	d = msg->data;
	e = msg->data_end;
	if (d + KW_HEADER_LEN > e) {
		sc->bad = 2;
		return 1;
	}
	for (j = 0; j < KW_HEADER_LEN; j++)
		d[j] = sc->header[j];
	/* The record's length last: a varint that grows a byte moves what follows it. */
	if (!kw_put_varint(msg, ed->count_off, 1, true, ed->count + 1) ||
	    (ed->grow && bpf_msg_push_data(msg, ed->rec, 1, 0)) ||
	    !kw_put_varint(msg, ed->rec, ed->len_size + (ed->grow ? 1 : 0), true,
			   ed->len + KW_HEADER_LEN)) {
		sc->bad = 2;
		return 1;
	}
	b = &sc->batches[ed->batch & (KW_BATCHES_MAX - 1)];
	b->inserted += KW_HEADER_LEN + (ed->grow ? 1 : 0);
	return 0;
}

/* bpf_loop()'s step of the CRC table (Castagnoli, reflected): entry I. */
static long kw_table_step(__u32 i, struct kw_loop *l)
{
	__u32 c = i, k;

	/* The polynomial XORed in when the low bit is set, without a branch on it. */
	for (k = 0; k < 8; k++)
		c = (c >> 1) ^ (0x82f63b78 & -(c & 1));
	l->sc->table[i & 0xff] = c;
	return 0;
}

/*
 * Batch B, its edits made, with SC->shift bytes added before it: its partition's records size
 * (a flexible request's uvarint may take a byte or two more: they go in, and count in the
 * shift) and its length made right, and its CRC-32C begun.
 */
static __always_inline bool kw_begin_batch(struct sk_msg_md *msg, struct kw_scratch *sc,
					   const struct kw_batch *b)
{
	__u32 len = b->end - b->off - RB_LENGTH - 4 + b->inserted, size_len = b->size_len, off;

	if (size_len == 4) {
		if (!kw_put_be(msg, b->size_off + sc->shift, 4, b->size + b->inserted))
			return false;
	} else {
		size_len = kw_uvarint_size(b->size + b->inserted + 1);
		if (size_len > b->size_len &&
		    bpf_msg_push_data(msg, b->size_off + sc->shift, size_len - b->size_len, 0))
			return false;
		if (!kw_put_varint(msg, b->size_off + sc->shift, size_len, false,
				   b->size + b->inserted + 1))
			return false;
		sc->shift += size_len - b->size_len;
	}
	off = b->off + sc->shift;
	if (!kw_put_be(msg, off + RB_LENGTH, 4, len))
		return false;
	sc->crc = 0xffffffff;
	sc->crc_off = off + RB_ATTRIBUTES;
	sc->crc_end = b->end + sc->shift + b->inserted;
	return true;
}

/*
 * CRC continued over the N bytes (1 to KW_CRC_CHUNK) copied into SC's chunk. A global function:
 * its 256 steps are checked once, not again on each path of kw_finish_step() that reaches them.
 */
__noinline __u32 gospan_kw_crc(const struct kw_scratch *sc, __u32 crc, __u32 n)
{
	__u32 j, idx;

	if (!sc)
		return crc;
	for (j = 0; j < KW_CRC_CHUNK; j++) {
		if (j >= n)
			break;
		/*
		 * Masked after the XOR: clang would mask CRC first, and Linux 6.1's verifier does
		 * not bound an XOR of two bounded values, so the index would be unbounded there.
		 */
		idx = crc ^ sc->chunk[j];
		asm volatile("" : "+r"(idx));
		crc = sc->table[idx & 0xff] ^ (crc >> 8);
	}
	return crc;
}

/*
 * bpf_loop()'s step of finishing the batches, in order, all from this one loop (a callback is
 * checked by the verifier once for each place it is called from): a batch's lengths, the next
 * KW_CRC_CHUNK bytes of its CRC-32C, or its CRC written. The bytes are copied out of the message
 * first: a loop over the message's own bytes has the verifier check each iteration's packet
 * bounds apart, past its budget. 1 ends it.
 */
static long kw_finish_step(__u32 i, struct kw_loop *l)
{
	struct kw_scratch *sc = l->sc;
	struct sk_msg_md *msg = l->msg;
	struct kw_batch *b;
	__u32 n;
	__u8 *d, *e;

	if (sc->fin >= sc->nbatches || sc->fin >= KW_BATCHES_MAX)
		return 1;
	b = &sc->batches[sc->fin & (KW_BATCHES_MAX - 1)];
	if (!sc->fin_begun) {
		if (!b->inserted) {
			sc->fin++;
			return 0;
		}
		if (!kw_begin_batch(msg, sc, b))
			goto bad;
		sc->fin_begun = 1;
		return 0;
	}
	if (sc->crc_off >= sc->crc_end) {
		if (!kw_put_be(msg, b->off + sc->shift + RB_CRC, 4, sc->crc ^ 0xffffffff))
			goto bad;
		sc->shift += b->inserted;
		sc->fin++;
		sc->fin_begun = 0;
		return 0;
	}
	n = sc->crc_end - sc->crc_off;
	if (n > KW_CRC_CHUNK)
		n = KW_CRC_CHUNK;
	if (kw_pull(msg, sc->crc_off, n))
		goto bad;
	d = msg->data;
	e = msg->data_end;
	/* 1 to KW_CRC_CHUNK, as the verifier can see. */
	n = ((n - 1) & (KW_CRC_CHUNK - 1)) + 1;
	asm volatile("" : "+r"(n));
	if (n > KW_CRC_CHUNK || (void *)d + n > (void *)e ||
	    bpf_probe_read_kernel(sc->chunk, n, d))
		goto bad;
	sc->crc = gospan_kw_crc(sc, sc->crc, n);
	sc->crc_off += n;
	return 0;
bad:
	sc->bad = 2;
	return 1;
}

/*
 * Whether every batch with edits can take them: a flexible request's records size (an unsigned
 * varint of the size plus one) may grow, but not past the 5 bytes kw_put_varint writes.
 */
static __always_inline bool kw_room(struct kw_scratch *sc)
{
	struct kw_batch *b;
	__u32 i;

	for (i = 0; i < KW_BATCHES_MAX; i++) {
		if (i >= sc->nbatches)
			break;
		b = &sc->batches[i];
		if (b->size_len != 4 && kw_uvarint_size(b->size + 1 + b->inserted) > 5)
			return false;
	}
	return true;
}

/* The produce request in MSG, whose sender is process PID; SC claimed. Its SK_ verdict. */
static __always_inline int kw_rewrite(struct sk_msg_md *msg, struct kw_scratch *sc, __u32 pid)
{
	struct kw_loop l = { .msg = msg, .sc = sc };
	__u32 i, total;
	__s64 v, topics;

	sc->size = msg->size;
	sc->pid = pid;
	sc->version = (__u32)kw_be(msg, 6, 2, sc->size);
	sc->off = 12; /* size, api key, version, correlation id */
	sc->nedits = sc->nbatches = sc->bad = 0;
	sc->skipped_compressed = sc->skipped_room = sc->already_set = 0;
	sc->stage = KW_TOPIC;
	/* The header's client id (a nullable string, int16 length, in every version). */
	v = kw_be(msg, sc->off, 2, sc->size);
	if (v < 0)
		return SK_PASS;
	sc->off += 2 + ((__s16)v > 0 ? (__u32)(__s16)v : 0);
	if (!kw_skip_tags(msg, sc) || !kw_skip_string(msg, sc)) /* transactional id */
		return SK_PASS;
	sc->off += 2 + 4; /* acks, timeout */
	topics = kw_count(msg, sc);
	if (topics <= 0)
		return SK_PASS;
	sc->topics = (__u32)topics;
	bpf_loop(KW_STEPS_MAX, kw_walk_step, &l, 0);
	if (sc->skipped_compressed)
		count_propagation_n(PROP_KAFKA_COMPRESSED, sc->skipped_compressed);
	if (sc->already_set)
		count_propagation_n(PROP_KAFKA_ALREADY_SET, sc->already_set);
	if (sc->bad || sc->stage != KW_DONE || !sc->nedits) {
		if (sc->skipped_room)
			count_propagation_n(PROP_KAFKA_NO_ROOM, sc->skipped_room);
		return SK_PASS;
	}
	if (!kw_room(sc)) {
		count_propagation_n(PROP_KAFKA_NO_ROOM, sc->skipped_room + sc->nedits);
		return SK_PASS;
	}
	if (!sc->table_ready) {
		bpf_loop(256, kw_table_step, &l, 0);
		sc->table_ready = 1;
	}
	/* The edit steps count again what they add, which the finish steps go by. */
	for (i = 0; i < KW_BATCHES_MAX; i++)
		if (i < sc->nbatches)
			sc->batches[i].inserted = 0;
	bpf_loop(KW_EDITS_MAX, kw_edit_step, &l, 0);
	/*
	 * From here the request is changed: a failure now would send it broken, which the broker
	 * refuses (its CRC or its sizes), so the connection is dropped instead.
	 */
	if (sc->bad)
		return SK_DROP;
	sc->shift = sc->fin = sc->fin_begun = 0;
	bpf_loop(KW_SIZE_MAX / KW_CRC_CHUNK + 3 * KW_BATCHES_MAX, kw_finish_step, &l, 0);
	if (sc->bad || sc->fin < sc->nbatches)
		return SK_DROP;
	total = sc->shift;
	v = kw_be(msg, 0, 4, msg->size);
	if (v < 0 || !kw_put_be(msg, 0, 4, (__u64)v + total))
		return SK_DROP;
	count_propagation_n(PROP_KAFKA_INJECTED, sc->nedits);
	if (sc->skipped_room)
		count_propagation_n(PROP_KAFKA_NO_ROOM, sc->skipped_room);
	return SK_PASS;
}

/*
 * Tail-called by wire.bpf.c's write_trace_context for a traced process's produce request, from
 * an object of its own (bpf/include/kafka_wire.bpf.h).
 */
SEC("sk_msg")
int kafka_produce(struct sk_msg_md *msg)
{
	__u32 pid = bpf_get_current_pid_tgid() >> 32;
	struct kw_scratch *sc;
	__s64 size;
	int verdict;

	size = kw_be(msg, 0, 4, msg->size);
	if (size < 0)
		return SK_PASS;
	/* The whole request in this one message, and not too big to rewrite: else as it is. */
	if ((__u64)size + 4 != msg->size || msg->size > KW_SIZE_MAX) {
		count_propagation(PROP_KAFKA_NOT_WHOLE);
		return SK_PASS;
	}
	sc = scratch_take(&kw_scratch);
	if (!sc) {
		count_propagation(PROP_SCRATCH_BUSY);
		return SK_PASS;
	}
	verdict = kw_rewrite(msg, sc, pid);
	scratch_unclaim(&sc->busy);
	return verdict;
}
