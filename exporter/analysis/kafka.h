/* SPDX-License-Identifier: MIT */
/*
 * Target analysis for Kafka clients: segmentio/kafka-go's Writer (WriteMessages: a PRODUCER
 * span) and Reader (ReadMessage, FetchMessage: a CONSUMER span per message processed), and
 * IBM/sarama's SyncProducer (SendMessage, SendMessages: PRODUCER spans), and twmb/franz-go's
 * kgo (ProduceSync, Produce: PRODUCER spans; records handed over by a poll's iterator: CONSUMER
 * spans), where bpf/kafka.bpf.c and bpf/kafka_franz.bpf.c probe them, and the offsets they read
 * with (DWARF, else the clients' tables).
 */
#ifndef GOSPAN_KAFKA_H
#define GOSPAN_KAFKA_H

#include <stdbool.h>
#include <stdint.h>

#include "events.h"
#include "analysis/fields.h"
#include "analysis/planner.h"

struct analysis;
struct module_tables;

/* kafka-go in a binary: VERSION[0] 0 when it has none; a site's addr 0 when it is not probed. */
/* Where a kafka-go read hands its Message over, inside the read (kafka_handover.c). */
struct kafka_handover {
	uint64_t at;	 /* link-time address of the probed instruction */
	uint64_t off;	 /* its file offset */
	uint8_t cond;	 /* enum kafka_handover_cond (events.h) */
	int8_t msg_reg;	 /* the x86 register the Message's place is relative to; X86_SP: SP */
	int32_t msg_off;
	int32_t err_off; /* the error's first word at SP + ERR_OFF at the probe; -1: nil */
	int32_t ret_off; /* the read's return address at SP + RET_OFF */
	bool inner;	 /* FetchMessage's, whose return into ReadMessage hands nothing over */
};

/*
 * The probes inside the function SYMBOL, a read returning (Message, error) whose Message is
 * MSG_SIZE bytes, through which every way to a RET that returns a Message passes: into OUT (MAX
 * at most), *N of them. -ENOENT when the code does not have that shape (the read's ends stay
 * where they were), -EOPNOTSUPP on arm64.
 */
int kafka_handover__find(struct analysis *a, const char *symbol, int64_t msg_size,
			 struct kafka_handover *out, size_t max, size_t *n);

struct kafka_target {
	char version[32];
	char offsets[48]; /* "DWARF", "table v0.4.51" */
	int64_t offs[KAFKAGO_FIELD__COUNT];
	struct probe_site send;	 /* (*Writer).WriteMessages: entry and ends */
	/*
	 * (*Reader).FetchMessage: its entry ends the message the goroutine processed; its ends in
	 * the application (not in ReadMessage, whose own ends hand the message over) start one.
	 */
	struct probe_site fetch;
	struct probe_site read;	  /* (*Reader).ReadMessage: ends */
	/*
	 * Where FetchMessage and ReadMessage hand a Message over inside themselves, in place of
	 * their ends (none: the ends stay). READ_LO, READ_HI: ReadMessage's code.
	 */
	struct kafka_handover handover[KAFKA_HANDOVERS_MAX];
	size_t nhandover;
	uint64_t read_lo, read_hi;
	struct probe_site commit; /* (*Reader).CommitMessages: entry */
	struct probe_site close;  /* (*Reader).Close: entry */
	uint64_t fn_netaddr_network; /* (*networkAddress).Network: tells one in a net.Addr */
	int send_steps, process_steps; /* single-stepped hits a send, a message; -1: not traced */
	/* IBM/sarama: SARAMA_VERSION[0] 0 when the binary has none. */
	char sarama_version[32];
	char sarama_offsets[48];
	int64_t sm_offs[SARAMA_FIELD__COUNT];
	struct probe_site sarama_one;  /* (*syncProducer).SendMessage */
	struct probe_site sarama_many; /* (*syncProducer).SendMessages */
	/*
	 * SendMessage's end without its RETs: the Jcc at SM_SENT_AT (a file offset) that tests the
	 * *ProducerError in register SM_SENT_REG (nil: sent, the message at SP + SM_SENT_MSG_SLOT;
	 * else its Err at SM_SENT_ERR_AT in it). SM_SENT false: the RETs stay.
	 */
	bool sm_sent;
	uint64_t sm_sent_at;
	int sm_sent_reg;
	int32_t sm_sent_msg_slot, sm_sent_err_at;
	int sarama_steps;
	/* sarama's consumer groups (kafka_sarama.c): none when SM_NRECVS is 0. */
	struct probe_site sm_consume;	/* (*consumerGroupSession).consume: entry */
	struct probe_site sm_partition; /* (*consumer).ConsumePartition: RETs */
	struct probe_site sm_mark;	/* (*consumerGroupSession).MarkMessage: entry */
	struct probe_site *sm_handlers; /* the application's ConsumeClaim methods: their RETs */
	size_t sm_nhandlers;
	struct call_pair *sm_recvs; /* the runtime receives they call (tag: enum recv_kind) */
	size_t sm_nrecvs;
	int sarama_process_steps;
	/* sarama's AsyncProducer (kafka_sarama.c): none when SM_NSENDS is 0. */
	struct probe_site sm_made;   /* newAsyncProducer: RETs */
	struct call_pair *sm_inputs; /* (*asyncProducer).dispatcher's receives */
	size_t sm_ninputs;
	struct call_pair *sm_sends; /* the application's channel sends (tag: enum send_kind) */
	size_t sm_nsends;
	struct probe_site sm_successes; /* (*asyncProducer).returnSuccesses: entry */
	struct probe_site sm_errors;	/* (*asyncProducer).returnErrors: entry */
	struct probe_site sm_error;	/* (*asyncProducer).returnError: entry */
	/* twmb/franz-go's kgo: FRANZ_VERSION[0] 0 when the binary has none. */
	char franz_version[32];
	char franz_offsets[48];
	int64_t fz_offs[FRANZ_FIELD__COUNT];
	struct probe_site fz_sync;    /* (*Client).ProduceSync: entry and RETs */
	struct probe_site fz_produce; /* (*Client).produce: entry (Produce is inlined) */
	struct probe_site fz_promise; /* (*Client).finishRecordPromise: entry */
	struct probe_site fz_poll;    /* (*Client).PollRecords: entry */
	struct probe_site fz_poll_fetches; /* (*Client).PollFetches, where not inlined: entry */
	struct probe_site fz_next;	   /* (*FetchesRecordIter).Next: entry and RETs */
	struct probe_site fz_each;	   /* Fetches.EachRecord: RETs */
	/*
	 * Next's last CALLs, where it hands its record over (the record at SP + FZ_NEXT_SLOT),
	 * in place of Next's ends; none: the ends stay.
	 */
	uint64_t fz_next_calls[4];
	size_t fz_nnext_calls;
	int64_t fz_next_slot;
	int franz_send_steps, franz_process_steps;
};

/*
 * Finds kafka-go in the binary of A (its buildinfo), its sites and its offsets (DWARF, else
 * MODULES' table) into K. A side that cannot be probed or read is left out and said once at
 * warning level, naming the release. -ENOMEM is the only failure.
 */
int kafka__find(struct analysis *a, const struct module_tables *modules, struct kafka_target *k);

/*
 * sarama's consumer groups in A, whose sarama offsets K already has: the application's
 * ConsumeClaim methods and the runtime receives they make, and the sarama functions that tell
 * a claim's channel (kafka_sarama.c). Nothing when they cannot be probed (said once); -ENOMEM
 * is the only failure.
 */
int sarama_groups__find(struct analysis *a, struct kafka_target *k);
/* sarama's consumer groups' and AsyncProducer's part of the BPF config C. */
void sarama__configure(const struct kafka_target *k, struct target_config *c);
void sarama_groups__release(struct kafka_target *k);

/*
 * sarama's AsyncProducer in A, whose sarama offsets K already has: the sends of the binary's
 * main module on a channel (an AsyncProducer's Input() among them), the dispatcher's receive
 * that tells an input channel, and where sarama is done with messages (kafka_sarama.c).
 * Nothing when they cannot be probed (said once); -ENOMEM is the only failure.
 */
int sarama_async__find(struct analysis *a, struct kafka_target *k);
void sarama_async__release(struct kafka_target *k);

/* SYMBOL's site of KIND into S; S left out (addr 0) when the binary does not have it. */
int kafka__optional_site(struct analysis *a, const char *symbol, struct probe_site *s,
			 enum site_kind kind);


/* K's part of the BPF config C (whether keys are captured is the caller's: kafka_key). */
void kafka__configure(const struct kafka_target *k, struct target_config *c);

/* Whether anything of K is probed. */
bool kafka__any(const struct kafka_target *k);

void kafka__release(struct kafka_target *k);

#endif
