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
- sarama's AsyncProducer (kafkamix sends each message on Input() in a select with the
  request's end, and awaits its result on Successes()/Errors()): one PRODUCER span a message,
  "send <topic>", a child of the SERVER span of the request whose goroutine sent it, ending
  where sarama is done with the message (its partition and offset then known), the record
  given its traceparent, the consumer's span its child; a topic that does not exist: status
  ERROR and error.type;
- nothing dropped.
"""

import json
import os
import time

import pytest

from kafka import SARAMA_VERSION
from conftest import STATUS_ERROR, STATUS_UNSET, traced_get, wait_until
from test_kafka import (CONSUME_TIMEOUT, SPAN_KIND_CLIENT, SPAN_KIND_CONSUMER,
                        SPAN_KIND_PRODUCER, SPAN_KIND_SERVER, Traced, build, check_common,
                        consumed, downstream, one_trace, produce_path, rejoin, traceparent_of)

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
    same; --verbose names the handler and its receives (names from Go's function table, which
    gospan no longer holds by then)."""
    binary = build(flags=("-trimpath", "-buildmode=pie", "-ldflags=-s -w"))
    topic = topics["pie"]
    t = Traced(binary, kafka_broker, [topic], start_gospan, otlp_receiver, downstream,
               client="sarama", gospan_args=("--verbose",))
    try:
        assert f"Kafka consumer (sarama {SARAMA_VERSION}, offsets from table" in t.attached, \
            t.attached
        rejoin(t.svc)
        server, producer, consumers, sent, read = one_trace(t, topic, 2, client="sarama")
        for c, m in zip(consumers, sent):
            check_consumer(c, topic, t.group, m["offset"])
        assert "  main.saramaHandler.ConsumeClaim: entry" in t.gospan.stderr, t.gospan.stderr
        assert "  sarama consumer group handlers' receives: " in t.gospan.stderr
    finally:
        t.stop()


def async_trace(t, topic, n):
    """POSTs an async produce of N messages on TOPIC through sarama's AsyncProducer under a trace
    of its own and waits for them to be processed: the trace is SERVER -> a PRODUCER span a
    message -> its record's CONSUMER span -> its GET. Returns (producers, consumers, sent,
    read), by offset."""
    before = len(consumed(t.svc))
    trace_id, parent, req = traced_get(t.svc.port, produce_path(topic, n=n, mode="async",
                                                                client="sarama"),
                                       method="POST")
    sent = sorted(json.loads(req.got_body)["messages"], key=lambda m: m["offset"])
    assert wait_until(lambda: len(consumed(t.svc)) >= before + n, CONSUME_TIMEOUT)
    read = sorted(consumed(t.svc)[before:], key=lambda m: m["offset"])
    got = t.spans(lambda s: s.trace_id == trace_id, 1 + 3 * n)
    server, producers, consumers, clients = (
        [s for s in got if s.kind == k] for k in
        (SPAN_KIND_SERVER, SPAN_KIND_PRODUCER, SPAN_KIND_CONSUMER, SPAN_KIND_CLIENT))
    assert [len(server), len(producers), len(consumers), len(clients)] == [1, n, n, n], \
        [(s.name, s.kind) for s in got]
    server = server[0]
    assert server.parent_span_id == parent
    by_offset = lambda s: s.attrs.get("messaging.kafka.offset", -1)  # noqa: E731
    producers.sort(key=by_offset)
    consumers.sort(key=by_offset)
    for p, c, m, r in zip(producers, consumers, sent, read):
        check_common(p, topic, "send")
        assert p.parent_span_id == server.span_id
        assert server.start_ns <= p.start_ns <= p.end_ns <= server.end_ns
        assert p.status_code == STATUS_UNSET, p
        assert p.attrs["messaging.kafka.offset"] == m["offset"], (p.attrs, m)
        assert p.attrs["messaging.destination.partition.id"] == "0", p.attrs
        assert "messaging.batch.message_count" not in p.attrs, p.attrs
        assert c.parent_span_id == p.span_id, (c.attrs, p.attrs)
        assert bytes.fromhex(r["value"]) == m["value"].encode(), (m, r)
        assert r["headers"] == [{"name": "traceparent",
                                 "value": traceparent_of(p).encode().hex()}], r
    return producers, consumers, sent, read


@pytest.mark.parametrize("made", ["after", "before"])
def test_async_producer(made, kafka_broker, topics, start_gospan, otlp_receiver, downstream):
    """Messages sent through sarama's AsyncProducer, one and three a request, and one to a topic
    that does not exist: a PRODUCER span a message, each its record's consumer's parent. The
    producer made after gospan attached (kafkamix makes it on its first async produce), or
    before: its input is then told by its dispatcher's next receive, after the first message
    gospan sees (Traced's warm-up, sent unseen)."""
    topic = f"gospan-sarama-{os.urandom(3).hex()}-async-{made}"
    kafka_broker.create_topics(topic, partitions=1)
    t = Traced(build(), kafka_broker, [topic], start_gospan, otlp_receiver, downstream,
               client="sarama", consuming_before=made == "before",
               warm_up=dict(mode="async") if made == "before" else None)
    try:
        rejoin(t.svc)
        if made == "after":
            # made by this produce: its first message has its span too
            t.send_and_consume(topic, client="sarama", mode="async")
            t.spans(lambda s: s.kind == SPAN_KIND_PRODUCER and
                    s.attrs.get("messaging.destination.name") == topic, 1)
        async_trace(t, topic, 1)
        async_trace(t, topic, 3)
        missing = f"gospan-missing-{os.urandom(3).hex()}"
        start = time.time_ns()
        status, body = t.post(produce_path(missing, mode="async", client="sarama"))
        assert status == 500, body
        got = t.spans(lambda s: s.kind == SPAN_KIND_PRODUCER and s.start_ns >= start and
                      s.attrs.get("messaging.destination.name") == missing, 1)
        assert got[0].status_code == STATUS_ERROR, got[0]
        assert got[0].attrs.get("error.type"), got[0].attrs
    finally:
        t.stop()


def test_async_offer_not_taken_has_no_span(kafka_broker, start_gospan, otlp_receiver, downstream):
    """A select that offers each of 20 messages to the AsyncProducer's input beside a case that
    is always ready, and so sends about half of them; kafkamix then sends the others through its
    SyncProducer, the same *ProducerMessage values. A PRODUCER span for each message the select
    sent, none for those it did not: the one SendMessages span covers them (an offer not taken
    must leave nothing that a later send of its message would end)."""
    topic = f"gospan-sarama-{os.urandom(3).hex()}-offer"
    kafka_broker.create_topics(topic, partitions=1)
    t = Traced(build(), kafka_broker, [topic], start_gospan, otlp_receiver, downstream,
               client="sarama")
    try:
        before = len(consumed(t.svc))
        trace_id, parent, req = traced_get(t.svc.port, produce_path(topic, n=20, mode="offer",
                                                                    client="sarama"),
                                           method="POST")
        sent = json.loads(req.got_body)["messages"]
        via = {w: sorted(m["offset"] for m in sent if m["via"] == w) for w in ("async", "sync")}
        assert wait_until(lambda: len(consumed(t.svc)) >= before + len(sent), CONSUME_TIMEOUT)
        want = len(via["async"]) + (1 if via["sync"] else 0)
        t.spans(lambda s: s.trace_id == trace_id and s.kind == SPAN_KIND_PRODUCER, want)
        wait_until(lambda: False, 1.0)  # a stray span's time to show
        producers = [s for s in t.receiver.snapshot()
                     if s.trace_id == trace_id and s.kind == SPAN_KIND_PRODUCER]
        one_each = sorted(s.attrs["messaging.kafka.offset"] for s in producers
                          if "messaging.batch.message_count" not in s.attrs)
        batch = [s for s in producers if "messaging.batch.message_count" in s.attrs]
        if len(via["sync"]) == 1:
            via["async"] = sorted(via["async"] + via["sync"])
        assert one_each == via["async"], (via, [(s.name, s.attrs) for s in producers])
        assert [s.attrs["messaging.batch.message_count"] for s in batch] == \
            ([len(via["sync"])] if len(via["sync"]) > 1 else []), [s.attrs for s in batch]
    finally:
        t.stop()
