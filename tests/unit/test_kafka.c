// SPDX-License-Identifier: MIT
/*
 * Unit tests for capture/kafka.c: what kafka-go's (and sarama's, franz-go's) send and process
 * records become. The records
 * are built here as bpf/kafka.bpf.c fills them (runtime addresses, the load bias taken off),
 * against a target whose Error methods and networkAddress method are set by hand.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "analysis/target.h"
#include "capture/kafka.h"
#include "events.h"
#include "model/semconv.h"
#include "model/span.h"

#define BIAS 0x10000
#define NETADDR_NETWORK 0x401000 /* kafka-go.(*networkAddress).Network */
#define KAFKA_ERROR 0x402000	 /* kafka-go.Error.Error */
#define MULTI_NETWORK 0x403000	 /* another net.Addr's Network */

static struct db_method errors[] = { { KAFKA_ERROR, "kafka.Error" } };

static struct target *make_target(void)
{
	struct target *t = calloc(1, sizeof(*t));

	assert_non_null(t);
	t->db.errors = errors;
	t->db.nerrors = 1;
	t->kafka.fn_netaddr_network = NETADDR_NETWORK;
	return t;
}

static uint32_t set(char *dst, size_t cap, const char *s)
{
	size_t n = strlen(s);

	memcpy(dst, s, n < cap ? n : cap);
	return (uint32_t)n;
}

static const char *str(const struct span *s, const char *key)
{
	const struct attr *a = span__get(s, key);

	return a && a->type == ATTR_STRING ? a->s : NULL;
}

static int64_t num(const struct span *s, const char *key)
{
	const struct attr *a = span__get(s, key);

	assert_non_null(a);
	assert_int_equal(a->type, ATTR_INT);
	return a->i;
}

static void test_kafka__send(void **state)
{
	struct target *t = make_target();
	struct kafka_produce *e = calloc(1, sizeof(*e));
	struct span *s = span__alloc();

	(void)state;
	assert_non_null(e);
	assert_non_null(s);
	e->hdr.type = EVENT_KAFKA_PRODUCE;
	e->count = 1;
	e->partition = e->offset = -1; /* kafka-go's: not known */
	e->topic_len = set(e->topic, sizeof(e->topic), "orders");
	e->addr_fn = NETADDR_NETWORK + BIAS;
	e->addr_len = set(e->addr, sizeof(e->addr), "broker-1:9092");
	e->has_key = 1; /* not captured: no key attribute */
	kafka__fill_send(s, e, t, BIAS);
	assert_string_equal(s->name, "send orders");
	assert_string_equal(str(s, SC_MESSAGING_SYSTEM), "kafka");
	assert_string_equal(str(s, SC_MESSAGING_OPERATION_NAME), "send");
	assert_string_equal(str(s, SC_MESSAGING_OPERATION_TYPE), "send");
	assert_string_equal(str(s, SC_MESSAGING_DESTINATION_NAME), "orders");
	assert_string_equal(str(s, SC_SERVER_ADDRESS), "broker-1");
	assert_int_equal(num(s, SC_SERVER_PORT), 9092);
	assert_null(span__get(s, SC_MESSAGING_BATCH_MESSAGE_COUNT));
	assert_null(span__get(s, SC_MESSAGING_KAFKA_MESSAGE_KEY));
	assert_null(span__get(s, SC_MESSAGING_DESTINATION_PARTITION_ID));
	assert_null(span__get(s, SC_MESSAGING_KAFKA_OFFSET));
	assert_null(span__get(s, SC_ERROR_TYPE));
	assert_int_equal(s->status, SPAN_STATUS_UNSET);
	span__free(s);

	/* sarama's SendMessage says where the message went. */
	s = span__alloc();
	assert_non_null(s);
	e->partition = 0;
	e->offset = 17;
	kafka__fill_send(s, e, t, BIAS);
	assert_string_equal(str(s, SC_MESSAGING_DESTINATION_PARTITION_ID), "0");
	assert_int_equal(num(s, SC_MESSAGING_KAFKA_OFFSET), 17);
	span__free(s);
	e->partition = e->offset = -1;

	/* A batch, a captured key, an Addr of another type, an error of a known type. */
	s = span__alloc();
	assert_non_null(s);
	e->count = 5;
	e->key_len = set(e->key, sizeof(e->key), "user-7");
	e->addr_fn = MULTI_NETWORK + BIAS;
	e->err_itab = 0x7000;
	e->err_fn = KAFKA_ERROR + BIAS;
	kafka__fill_send(s, e, t, BIAS);
	assert_int_equal(num(s, SC_MESSAGING_BATCH_MESSAGE_COUNT), 5);
	assert_string_equal(str(s, SC_MESSAGING_KAFKA_MESSAGE_KEY), "user-7");
	assert_null(span__get(s, SC_SERVER_ADDRESS));
	assert_int_equal(s->status, SPAN_STATUS_ERROR);
	assert_string_equal(str(s, SC_ERROR_TYPE), "kafka.Error");
	span__free(s);

	/* An error whose type is not known. */
	s = span__alloc();
	assert_non_null(s);
	e->err_fn = 0;
	kafka__fill_send(s, e, t, BIAS);
	assert_string_equal(str(s, SC_ERROR_TYPE), "_OTHER");
	span__free(s);

	/* franz-go's seed broker: a plain string, no net.Addr method to check. */
	s = span__alloc();
	assert_non_null(s);
	e->err_itab = e->err_fn = 0;
	e->addr_fn = 0;
	e->addr_len = set(e->addr, sizeof(e->addr), "127.0.0.1:39092");
	kafka__fill_send(s, e, t, BIAS);
	assert_string_equal(str(s, SC_SERVER_ADDRESS), "127.0.0.1");
	assert_int_equal(num(s, SC_SERVER_PORT), 39092);
	span__free(s);

	/* kafka-go's Addr that is no networkAddress, whatever string it held: no server. */
	s = span__alloc();
	assert_non_null(s);
	e->addr_fn = MULTI_NETWORK + BIAS;
	kafka__fill_send(s, e, t, BIAS);
	assert_null(span__get(s, SC_SERVER_ADDRESS));
	span__free(s);
	free(e);
	free(t);
}

static void test_kafka__process(void **state)
{
	struct kafka_process *e = calloc(1, sizeof(*e));
	struct span *s = span__alloc();

	(void)state;
	assert_non_null(e);
	assert_non_null(s);
	e->hdr.type = EVENT_KAFKA_PROCESS;
	e->topic_len = set(e->topic, sizeof(e->topic), "orders");
	e->partition = 2;
	e->offset = 41;
	e->group_len = set(e->group, sizeof(e->group), "billing");
	e->addr_len = set(e->addr, sizeof(e->addr), "[::1]:9093");
	e->tracestate_len = set(e->tracestate, sizeof(e->tracestate), "vendor=x");
	kafka__fill_process(s, e);
	assert_string_equal(s->name, "process orders");
	assert_string_equal(str(s, SC_MESSAGING_OPERATION_NAME), "process");
	assert_string_equal(str(s, SC_MESSAGING_OPERATION_TYPE), "process");
	assert_string_equal(str(s, SC_MESSAGING_DESTINATION_PARTITION_ID), "2");
	assert_int_equal(num(s, SC_MESSAGING_KAFKA_OFFSET), 41);
	assert_string_equal(str(s, SC_MESSAGING_CONSUMER_GROUP_NAME), "billing");
	assert_string_equal(str(s, SC_SERVER_ADDRESS), "::1");
	assert_int_equal(num(s, SC_SERVER_PORT), 9093);
	assert_string_equal(s->trace_state, "vendor=x");
	assert_null(span__get(s, SC_MESSAGING_KAFKA_MESSAGE_KEY));
	span__free(s);
	free(e);
}

/* A topic longer than the capture bound: the name and the attribute keep what was read, marked. */
static void test_kafka__cut_topic(void **state)
{
	struct kafka_process *e = calloc(1, sizeof(*e));
	struct span *s = span__alloc();
	char topic[MAX_KAFKA_TOPIC_LEN + 40];

	(void)state;
	assert_non_null(e);
	assert_non_null(s);
	memset(topic, 't', sizeof(topic) - 1);
	topic[sizeof(topic) - 1] = '\0';
	e->topic_len = set(e->topic, sizeof(e->topic), topic);
	kafka__fill_process(s, e);
	assert_int_equal(strlen(str(s, SC_MESSAGING_DESTINATION_NAME)), MAX_KAFKA_TOPIC_LEN);
	assert_int_equal(strlen(s->name), strlen("process ") + MAX_KAFKA_TOPIC_LEN);
	assert_non_null(strstr(str(s, GOSPAN_TRUNCATED), SC_MESSAGING_DESTINATION_NAME));
	span__free(s);

	/* No topic read: the operation alone names the span. */
	s = span__alloc();
	assert_non_null(s);
	e->topic_len = 0;
	kafka__fill_process(s, e);
	assert_string_equal(s->name, "process");
	assert_null(span__get(s, SC_MESSAGING_DESTINATION_NAME));
	span__free(s);
	free(e);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_kafka__send),
		cmocka_unit_test(test_kafka__process),
		cmocka_unit_test(test_kafka__cut_topic),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
