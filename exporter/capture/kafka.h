/* SPDX-License-Identifier: MIT */
/*
 * Kafka's spans from kafka-go's records (bpf/kafka.bpf.c): a PRODUCER span a send, a CONSUMER
 * span a message processed, with the messaging semantic conventions' attributes.
 */
#ifndef GOSPAN_CAPTURE_KAFKA_H
#define GOSPAN_CAPTURE_KAFKA_H

#include <stdint.h>

struct kafka_process;
struct kafka_produce;
struct span;
struct target;

/*
 * A send's name and attributes from its record E, of target T (BIAS: its process's load bias,
 * for the error's type and the broker's address type).
 */
void kafka__fill_send(struct span *s, const struct kafka_produce *e, const struct target *t,
		      uint64_t bias);

/* A processed message's name and attributes from its record E. */
void kafka__fill_process(struct span *s, const struct kafka_process *e);

#endif
