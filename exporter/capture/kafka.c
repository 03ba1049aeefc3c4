// SPDX-License-Identifier: MIT
/*
 * The Kafka family: the records of kafka-go, sarama and franz-go (bpf/kafka.bpf.c,
 * bpf/kafka_franz.bpf.c) made into PRODUCER spans, one a send
 * ("send orders"), and CONSUMER spans, one a message processed ("process orders"), with the
 * messaging conventions' attributes. Each record tells its span whole.
 */
#include <stdio.h>
#include <string.h>

#include "events.h"
#include "analysis/target.h"
#include "capture/kafka.h"
#include "capture/process.h"
#include "capture/records_family.h"
#include "model/attrs.h"
#include "model/semconv.h"
#include "model/span.h"

/* "OPERATION TOPIC" as the span's name, and the attributes every Kafka span has. */
static void set_common(struct span *s, const char *operation, const char *type,
		       const char *topic, uint32_t topic_len)
{
	char name[16 + MAX_KAFKA_TOPIC_LEN * 3 + 1], t[MAX_KAFKA_TOPIC_LEN * 3 + 1];
	size_t n;

	span__set_str(s, SC_MESSAGING_SYSTEM, "kafka", 5);
	span__set_str(s, SC_MESSAGING_OPERATION_NAME, operation, strlen(operation));
	span__set_str(s, SC_MESSAGING_OPERATION_TYPE, type, strlen(type));
	n = attrs__captured_copy(t, sizeof(t), topic, topic_len, MAX_KAFKA_TOPIC_LEN);
	if (!n) {
		span__set_name(s, operation, strlen(operation));
		return;
	}
	attrs__set_captured(s, SC_MESSAGING_DESTINATION_NAME, topic, topic_len,
			    MAX_KAFKA_TOPIC_LEN);
	n = (size_t)snprintf(name, sizeof(name), "%s %s", operation, t);
	span__set_name(s, name, n < sizeof(name) ? n : sizeof(name) - 1);
}

/* messaging.destination.partition.id, a string; none when PARTITION is negative (unknown). */
static void set_partition(struct span *s, int64_t partition)
{
	char id[24];
	int n;

	if (partition < 0)
		return;
	n = snprintf(id, sizeof(id), "%lld", (long long)partition);
	span__set_str(s, SC_MESSAGING_DESTINATION_PARTITION_ID, id, (size_t)n);
}

/* The message key, where it was captured (GOSPAN_CAPTURE_MESSAGE_KEY). */
static void set_key(struct span *s, const char *key, uint32_t len)
{
	if (len)
		attrs__set_captured(s, SC_MESSAGING_KAFKA_MESSAGE_KEY, key, len, MAX_KAFKA_KEY_LEN);
}

/* The broker a client was given first, "host:port", as server.address and server.port. */
static void set_server(struct span *s, const char *addr, uint32_t len)
{
	char hp[MAX_KAFKA_ADDR_LEN * 3 + 1];

	if (!len || len > MAX_KAFKA_ADDR_LEN)
		return;
	attrs__captured_copy(hp, sizeof(hp), addr, len, MAX_KAFKA_ADDR_LEN);
	attrs__set_host_port(s, hp, SC_SERVER_ADDRESS, SC_SERVER_PORT);
}

void kafka__fill_send(struct span *s, const struct kafka_produce *e, const struct target *t,
		      uint64_t bias)
{
	const char *type;

	set_common(s, "send", "send", e->topic, e->topic_len);
	if (e->count > 1)
		span__set_int(s, SC_MESSAGING_BATCH_MESSAGE_COUNT, e->count);
	set_partition(s, e->partition);
	if (e->offset >= 0)
		span__set_int(s, SC_MESSAGING_KAFKA_OFFSET, e->offset);
	set_key(s, e->key, e->key_len);
	/*
	 * kafka-go's Addr is a net.Addr, its address said only when it is kafka.TCP's own type;
	 * franz-go's seed broker is a plain string (no method: addr_fn 0).
	 */
	if (!e->addr_fn || (t->kafka.fn_netaddr_network &&
			    e->addr_fn - bias == t->kafka.fn_netaddr_network))
		set_server(s, e->addr, e->addr_len);
	if (!e->err_itab)
		return;
	s->status = SPAN_STATUS_ERROR;
	type = e->err_fn ? datastores__error_type(&t->db, e->err_fn - bias) : NULL;
	if (!type)
		type = "_OTHER";
	span__set_str(s, SC_ERROR_TYPE, type, strlen(type));
}

void kafka__fill_process(struct span *s, const struct kafka_process *e)
{
	set_common(s, "process", "process", e->topic, e->topic_len);
	set_partition(s, e->partition);
	span__set_int(s, SC_MESSAGING_KAFKA_OFFSET, e->offset);
	if (e->group_len)
		attrs__set_captured(s, SC_MESSAGING_CONSUMER_GROUP_NAME, e->group, e->group_len,
				    MAX_KAFKA_GROUP_LEN);
	set_key(s, e->key, e->key_len);
	set_server(s, e->addr, e->addr_len);
	if (e->tracestate_len && e->tracestate_len <= MAX_TRACESTATE_LEN)
		s->trace_state = span__strndup(s, e->tracestate, e->tracestate_len);
}

static void on_send(struct records *r, const void *record)
{
	const struct kafka_produce *e = record;
	struct process *proc;
	struct span *s;

	s = records__whole_span(r, &e->hdr, e->cookie, &e->ids, SPAN_KIND_PRODUCER, e->end_ns,
				&proc);
	if (!s)
		return;
	kafka__fill_send(s, e, proc->target, proc->load_bias);
	records__emit(r, s);
}

static void on_process(struct records *r, const void *record)
{
	const struct kafka_process *e = record;
	struct process *proc;
	struct span *s;

	s = records__whole_span(r, &e->hdr, e->cookie, &e->ids, SPAN_KIND_CONSUMER, e->end_ns,
				&proc);
	if (!s)
		return;
	kafka__fill_process(s, e);
	records__emit(r, s);
}

const struct record_handler kafka_records[] = {
	{ EVENT_KAFKA_PRODUCE, sizeof(struct kafka_produce), on_send },
	{ EVENT_KAFKA_PROCESS, sizeof(struct kafka_process), on_process },
	{ 0 },
};
