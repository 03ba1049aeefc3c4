"""CONSUMER spans from IBM/sarama's consumer groups, on kafkamix (tests/e2e/kafkamix, its sarama
consumer: a ConsumerGroup whose handler's ConsumeClaim receives each message from
claim.Messages() and marks it) against the session's real Apache Kafka broker (kafka.py).

What gospan must make of it:

- one CONSUMER span a message processed, "process <topic>", from the receive that handed it
  over to the handler's next receive from the claim (or ConsumeClaim's return), with
  messaging.destination.partition.id, messaging.kafka.offset, messaging.consumer.group.name;
  the calls made while processing (kafkamix's downstream GET) are its children; continuing the
  trace of the traceparent the producer's record carries (one trace: SERVER -> PRODUCER ->
  CONSUMER -> GET), from kafka-go's and sarama's own producers;
- the same for a handler that receives in a select (runtime.selectgo) and one that ranges over
  the channel (runtime.chanrecv2);
- for claims made while gospan watches (the group joined again: kafkamix's SIGUSR1) and for a
  claim begun before gospan attached, which is told by the handler's MarkMessage: there the first
  message gospan sees has no span, every later one has;
- the same from a stripped PIE build, whose offsets come from offsets/sarama_offsets.json;
- nothing dropped.
"""

import os

import pytest

from kafka import SARAMA_VERSION
from test_kafka import (Traced, build, check_common, downstream, one_trace, rejoin,
                        traceparent_of)

__all__ = ["downstream"]  # the fixture, used by the tests here

@pytest.fixture(scope="module")
def topics(kafka_broker):
    kinds = ("range", "select", "early", "pie")
    names = [f"gospan-sarama-{os.urandom(3).hex()}-{n}" for n in kinds]
    kafka_broker.create_topics(*names, partitions=1)
    return dict(zip(kinds, names))


def check_consumer(c, topic, group, offset):
    check_common(c, topic, "process")
    assert c.attrs["messaging.destination.partition.id"] == "0", c.attrs
    assert c.attrs["messaging.kafka.offset"] == offset, c.attrs
    assert c.attrs["messaging.consumer.group.name"] == group, c.attrs


@pytest.mark.parametrize("kind", ["range", "select"])
def test_one_trace_through_a_consumer_group(kind, kafka_broker, topics, start_gospan,
                                            otlp_receiver, downstream):
    """A request that sends one message (kafka-go's producer, then sarama's of two), which the
    group's handler processes: one trace each, SERVER -> PRODUCER -> CONSUMER -> its GET."""
    topic = topics[kind]
    flags = ("-select",) if kind == "select" else ()
    t = Traced(build(), kafka_broker, [topic], start_gospan, otlp_receiver, downstream,
               flags=flags, client="sarama")
    try:
        assert f"Kafka consumer (sarama {SARAMA_VERSION}" in t.attached, t.attached
        rejoin(t.svc)
        server, producer, consumers, sent, read = one_trace(t, topic, 1)
        check_consumer(consumers[0], topic, t.group, sent[0]["offset"])
        assert read[0]["headers"] == [{"name": "traceparent",
                                       "value": traceparent_of(producer).encode().hex()}], read
        server, producer, consumers, sent, read = one_trace(t, topic, 3, client="sarama")
        for c, m in zip(consumers, sent):
            check_consumer(c, topic, t.group, m["offset"])
    finally:
        t.stop()


def test_claim_begun_before_the_attach(kafka_broker, topics, start_gospan, otlp_receiver,
                                       downstream):
    """The claim runs before gospan comes: the first message whose receive gospan sees tells
    its channel, by MarkMessage, and has no span (the handler was waiting as gospan attached:
    Traced's warm-up message is handed over unseen, the next one tells); the next ones are
    traced as usual."""
    topic = topics["early"]
    t = Traced(build(), kafka_broker, [topic], start_gospan, otlp_receiver, downstream,
               client="sarama", consuming_before=True)
    try:
        t.send_and_consume(topic, client="sarama")
        server, producer, consumers, sent, read = one_trace(t, topic, 2)
        for c, m in zip(consumers, sent):
            check_consumer(c, topic, t.group, m["offset"])
    finally:
        t.stop()


def test_stripped_pie(kafka_broker, topics, start_gospan, otlp_receiver, downstream):
    """kafkamix built stripped and PIE: the offsets come from the table, the trace is the
    same."""
    binary = build(flags=("-trimpath", "-buildmode=pie", "-ldflags=-s -w"))
    topic = topics["pie"]
    t = Traced(binary, kafka_broker, [topic], start_gospan, otlp_receiver, downstream,
               client="sarama")
    try:
        assert f"Kafka consumer (sarama {SARAMA_VERSION}, offsets from table" in t.attached, \
            t.attached
        rejoin(t.svc)
        server, producer, consumers, sent, read = one_trace(t, topic, 2, client="sarama")
        for c, m in zip(consumers, sent):
            check_consumer(c, topic, t.group, m["offset"])
    finally:
        t.stop()
