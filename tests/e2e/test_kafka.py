"""Kafka PRODUCER and CONSUMER spans from segmentio/kafka-go, and the trace context the socket
layer adds to the messages sent, on kafkamix (tests/e2e/kafkamix) against the session's real
Apache Kafka broker (kafka.py), decoded by the official OTLP package.

What gospan must make of it:

- one PRODUCER span a (*Writer).WriteMessages call, "send <topic>", a child of the SERVER span
  of the HTTP request whose goroutine made it, inside its window; messaging.system kafka,
  messaging.operation.name/type send, messaging.destination.name, server.address/port of the
  writer's broker, messaging.batch.message_count for a batch of more than one; on failure (a
  topic that does not exist) status ERROR and error.type;
- a traceparent header naming that PRODUCER span in each record it sent, put there at the socket
  layer (the produce request rewritten, its record batch's CRC-32C included, which the broker
  checks), so that the consumer's span is its child: one trace from the request through Kafka;
- one CONSUMER span a message processed, "process <topic>", from the read that handed it over
  to the goroutine's next read (ReadMessage), or its commit (FetchMessage, then
  CommitMessages): with messaging.destination.partition.id, messaging.kafka.offset,
  messaging.consumer.group.name, server.address; the calls made while processing (kafkamix's
  downstream GET) are its children;
- a message whose application set its own traceparent keeps it, byte for byte, and its consumer
  continues that trace; a message too big for its request to be rewritten (not whole in one
  write) goes as sent: what the consumer reads is what was sent, and the summary counts why;
- sarama's SyncProducer (SendMessage, SendMessages) the same, read by kafka-go's consumer;
- messaging.kafka.message.key only with GOSPAN_CAPTURE_MESSAGE_KEY=true;
- the same from a stripped PIE build, whose offsets come from offsets/kafkago_offsets.json;
- nothing dropped.

A read already waiting when gospan attaches hands its message over unseen: each consumer gets
one message before the test's own, whose CONSUMER span is not expected.
"""

import http.client
import json
import os
import platform
import re
import secrets
import shutil
import signal
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from conftest import STATUS_ERROR, STATUS_UNSET, Service, _clean_env, traced_get, wait_until
from kafka import KAFKAGO_VERSION, SARAMA_VERSION, BuildError, build_kafkamix

SPAN_KIND_SERVER, SPAN_KIND_CLIENT, SPAN_KIND_PRODUCER, SPAN_KIND_CONSUMER = 2, 3, 4, 5
SPAN_TIMEOUT = 15.0
CONSUME_TIMEOUT = 30.0
GROUP = "gospan-test"


def build(flags=(), sarama=True):
    """kafkamix with kafka-go and (SARAMA) sarama, built with FLAGS (cached)."""
    if shutil.which("go") is None:
        pytest.skip("Go is not installed; it is needed to build kafkamix")
    try:
        return build_kafkamix(kafkago=KAFKAGO_VERSION, sarama=SARAMA_VERSION if sarama else None,
                              flags=flags)
    except BuildError as e:
        pytest.fail(str(e))


class _Ok(BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args):
        pass


@pytest.fixture(scope="module")
def downstream():
    """What the consumers call while they process a message: a URL answering 200."""
    srv = ThreadingHTTPServer(("127.0.0.1", 0), _Ok)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{srv.server_address[1]}/done"
    srv.shutdown()
    srv.server_close()


def consumer_state(svc):
    """What kafkamix's consumer says of itself (/consumed): messages, errors, sessions."""
    c = http.client.HTTPConnection(svc.host, svc.port, timeout=10)
    try:
        c.request("GET", "/consumed")
        return json.loads(c.getresponse().read())
    finally:
        c.close()


def consumed(svc):
    return consumer_state(svc)["messages"]


def rejoin(svc, timeout=CONSUME_TIMEOUT):
    """Makes kafkamix's sarama consumer group join again (SIGUSR1) and waits until a session
    has begun since: its claims begin now, in view of a gospan attached before."""
    before = consumer_state(svc)["sessions"]
    os.kill(svc.pid, signal.SIGUSR1)
    assert wait_until(lambda: consumer_state(svc)["sessions"] > before, timeout), \
        f"the sarama consumer group did not join again within {timeout:.0f} s"


def produce_path(topic, n=1, key=None, headers=(), mode="sync", size=None, client="kafkago",
                 compression=None):
    path = f"/{client}/produce?topic={topic}&n={n}&mode={mode}"
    if compression:
        path += f"&compression={compression}"
    if size:
        path += f"&size={size}"
    if key:
        path += f"&key={key}"
    for name, value in headers:
        path += f"&header={name}:{value}"
    return path


class Traced:
    """kafkamix consuming TOPICS with CLIENT (with FLAGS) with a gospan on it, exporting to
    RECEIVER; with CONSUMING_BEFORE, gospan comes once the consumer has read a message. The
    warm-up messages are sent by CLIENT, with WARM_UP's produce_path() arguments. GOSPAN_ARGS:
    gospan's own."""

    def __init__(self, binary, broker, topics, start_gospan, receiver, downstream, flags=(),
                 env=None, client="kafkago", consuming_before=False, warm_up=None,
                 gospan_args=()):
        self.receiver, self.topics = receiver, topics
        self.summary = None
        self.group = f"{GROUP}-{secrets.token_hex(4)}"
        self.svc = Service(binary, env=_clean_env(), args=[
            "-brokers", broker.bootstrap, "-consume", ",".join(topics), "-client", client,
            "-group", self.group, "-downstream", downstream, *flags])
        warm_up = dict(warm_up or {}, client=client)
        try:
            for topic in topics if consuming_before else ():
                self.send_and_consume(topic, **warm_up)
        except BaseException:
            self.svc.stop()
            raise
        self.gospan = start_gospan(self.svc.pid, receiver, env, gospan_args)
        self.attached = self.gospan.wait_attached()
        # The read waiting since before the attach: its message is handed over unseen.
        for topic in topics:
            self.send_and_consume(topic, **warm_up)

    def send_and_consume(self, topic, **kw):
        """Produces on TOPIC and waits until the consumer has processed what was sent; returns
        (what /produce answered, the messages the consumer read)."""
        before = len(consumed(self.svc))
        status, body = self.post(produce_path(topic, **kw))
        assert status == 200, body
        sent = json.loads(body)["messages"]
        ok = wait_until(lambda: len(consumed(self.svc)) >= before + len(sent), CONSUME_TIMEOUT)
        assert ok, f"the consumer read {len(consumed(self.svc)) - before} of {len(sent)}"
        return sent, consumed(self.svc)[before:]

    def post(self, path):
        c = http.client.HTTPConnection(self.svc.host, self.svc.port, timeout=30)
        try:
            c.request("POST", path, body=b"")
            r = c.getresponse()
            return r.status, r.read().decode()
        finally:
            c.close()

    def spans(self, pred, n, timeout=SPAN_TIMEOUT):
        ok = wait_until(lambda: len([s for s in self.receiver.snapshot() if pred(s)]) >= n,
                        timeout)
        got = [s for s in self.receiver.snapshot() if pred(s)]
        assert ok, (f"{len(got)} of {n} spans arrived: {[(s.name, s.kind) for s in got]}\n"
                    f"{self.gospan.stderr}")
        return got

    def stop(self):
        """Stops gospan, then kafkamix; returns gospan's summary line, checked: every record
        was a span."""
        if self.summary is not None:
            return self.summary
        try:
            assert self.gospan.stop() == 0, self.gospan.stderr
            self.summary = self.gospan.summary_line()
            assert self.summary and " dropped 0;" in self.summary, self.summary
            return self.summary
        finally:
            self.svc.stop()


@pytest.fixture(scope="module")
def topics(kafka_broker):
    kinds = ("one", "batch", "fetch", "pie", "sarama", "poll-fetch", "poll-read", "partition")
    names = [f"gospan-{secrets.token_hex(3)}-{n}" for n in kinds]
    kafka_broker.create_topics(*names, partitions=1)
    # kafka-go answers topic metadata from a cache kept a second (kafkamix's MetadataTTL).
    time.sleep(1)
    return dict(zip(kinds, names))


@pytest.fixture(scope="module")
def traced(kafka_broker, topics, start_gospan, otlp_receiver, downstream):
    t = Traced(build(), kafka_broker, [topics["one"], topics["batch"], topics["sarama"]],
               start_gospan, otlp_receiver, downstream)
    yield t
    t.stop()


def check_common(s, topic, operation):
    a = s.attrs
    assert s.name == f"{operation} {topic}", s.name
    assert a["messaging.system"] == "kafka", a
    assert a["messaging.operation.name"] == operation, a
    assert a["messaging.operation.type"] == operation, a
    assert a["messaging.destination.name"] == topic, a
    assert "messaging.kafka.message.key" not in a, a


def check_broker(s, broker):
    assert s.attrs.get("server.address") == broker.host, s.attrs
    assert s.attrs.get("server.port") == broker.port, s.attrs


def traceparent_of(span):
    return f"00-{span.trace_id.hex()}-{span.span_id.hex()}-01"


def kafka_counters(line):
    """The Kafka trace-context counters of gospan's summary LINE, by name."""
    m = re.search(r"Kafka records given trace context (\d+) \(not given: already set (\d+), "
                  r"compressed batch (\d+), no room (\d+); produce requests not rewritten, not "
                  r"whole in one write (\d+)\)", line or "")
    assert m, f"no Kafka trace-context counters in {line!r}"
    return dict(zip(("given", "already_set", "compressed", "no_room", "not_whole"),
                    map(int, m.groups())))


def one_trace(traced, topic, n, **kw):
    """POSTs a produce of N messages on TOPIC under a trace of its own and waits for them to be
    processed: (server, producer, consumers by offset, what was sent, what was read), the spans
    checked to be one trace: caller -> SERVER -> PRODUCER -> each CONSUMER -> its GET."""
    before = len(consumed(traced.svc))
    trace_id, parent, req = traced_get(traced.svc.port, produce_path(topic, n=n, **kw),
                                       method="POST")
    sent = json.loads(req.got_body)["messages"]
    assert len(sent) == n
    ok = wait_until(lambda: len(consumed(traced.svc)) >= before + n, CONSUME_TIMEOUT)
    assert ok, "the consumer did not read what was sent"
    read = consumed(traced.svc)[before:]
    got = traced.spans(lambda s: s.trace_id == trace_id, 2 + 2 * n)
    by_kind = {k: [s for s in got if s.kind == k] for k in
               (SPAN_KIND_SERVER, SPAN_KIND_PRODUCER, SPAN_KIND_CONSUMER, SPAN_KIND_CLIENT)}
    assert [len(by_kind[k]) for k in (SPAN_KIND_SERVER, SPAN_KIND_PRODUCER, SPAN_KIND_CONSUMER,
                                      SPAN_KIND_CLIENT)] == [1, 1, n, n], \
        [(s.name, s.kind) for s in got]
    server, producer = by_kind[SPAN_KIND_SERVER][0], by_kind[SPAN_KIND_PRODUCER][0]
    assert server.parent_span_id == parent
    assert producer.parent_span_id == server.span_id
    assert server.start_ns <= producer.start_ns <= producer.end_ns <= server.end_ns
    consumers = sorted(by_kind[SPAN_KIND_CONSUMER], key=lambda s: s.attrs["messaging.kafka.offset"])
    for c in consumers:
        assert c.parent_span_id == producer.span_id, (c.attrs, producer.span_id)
        child = [s for s in by_kind[SPAN_KIND_CLIENT] if s.parent_span_id == c.span_id]
        assert len(child) == 1, [(s.name, s.parent_span_id) for s in by_kind[SPAN_KIND_CLIENT]]
        assert c.start_ns <= child[0].start_ns <= child[0].end_ns <= c.end_ns
    assert [c.attrs["messaging.kafka.offset"] for c in consumers] == \
        sorted(m["offset"] for m in sent)
    return server, producer, consumers, sorted(sent, key=lambda m: m["offset"]), read


def test_one_trace_through_the_broker(traced, topics, kafka_broker):
    """A request that sends one message, which the consumer processes: one trace, SERVER ->
    PRODUCER send -> CONSUMER process -> its downstream GET; the record carries the producer's
    traceparent and nothing else changed."""
    server, producer, consumers, sent, read = one_trace(traced, topics["one"], 1)
    check_common(producer, topics["one"], "send")
    check_broker(producer, kafka_broker)
    assert "messaging.batch.message_count" not in producer.attrs, producer.attrs
    assert producer.status_code == STATUS_UNSET
    c = consumers[0]
    check_common(c, topics["one"], "process")
    check_broker(c, kafka_broker)
    assert c.attrs["messaging.destination.partition.id"] == "0", c.attrs
    assert c.attrs["messaging.consumer.group.name"] == traced.group, c.attrs
    assert len(read) == 1 and bytes.fromhex(read[0]["value"]) == sent[0]["value"].encode()
    assert read[0]["key"] is None, read
    assert read[0]["headers"] == [{"name": "traceparent",
                                   "value": traceparent_of(producer).encode().hex()}], read


def test_no_single_stepped_hit(traced):
    """amd64: a send and a message cost no single-stepped probe hit: WriteMessages ends after its
    CALLs, and ReadMessage (with FetchMessage inside it) hands its message over on emulated
    instructions of its own, where the caller (go1.26) copies the Message before any."""
    if platform.machine() != "x86_64":
        pytest.skip("the reads' own probes are placed on amd64; arm64 keeps their ends")
    assert (f"(kafka-go {KAFKAGO_VERSION}, offsets from DWARF; single-stepped hits: 0 a send, "
            f"0 a message)") in traced.attached, traced.attached


def test_batch_send_and_each_message_processed(traced, topics):
    """Three messages in one WriteMessages, one of them big: one PRODUCER span with the count,
    each record given its context, three CONSUMER spans its children."""
    server, producer, consumers, sent, read = one_trace(traced, topics["batch"], 3, size=3000)
    assert producer.attrs["messaging.batch.message_count"] == 3
    check_common(producer, topics["batch"], "send")
    for m, r in zip(sent, read):
        assert bytes.fromhex(r["value"]) == m["value"].encode(), (m, r)
        assert r["headers"] == [{"name": "traceparent",
                                 "value": traceparent_of(producer).encode().hex()}], r


def test_async_writer(traced, topics):
    """kafka-go's Writer with Async: WriteMessages queues two messages and returns at once; its
    PRODUCER span covers that call, and each record, written later by the Writer's own
    goroutine, still carries its traceparent: the CONSUMER spans are its children."""
    server, producer, consumers, sent, read = one_trace(traced, topics["batch"], 2, mode="async")
    check_common(producer, topics["batch"], "send")
    assert producer.attrs["messaging.batch.message_count"] == 2, producer.attrs
    for m, r in zip(sent, read):
        assert bytes.fromhex(r["value"]) == m["value"].encode(), (m, r)
        assert r["headers"] == [{"name": "traceparent",
                                 "value": traceparent_of(producer).encode().hex()}], r


def test_sarama_sync_producer(traced, topics):
    """sarama's SyncProducer, SendMessage then SendMessages of two, read by kafka-go's consumer:
    each call a PRODUCER span (SendMessage's with the partition and offset it returned), each
    message's CONSUMER span its child."""
    assert "Kafka producer + Kafka consumer (sarama " + SARAMA_VERSION in traced.attached, \
        traced.attached
    server, producer, consumers, sent, read = one_trace(traced, topics["sarama"], 1,
                                                        client="sarama")
    check_common(producer, topics["sarama"], "send")
    assert producer.attrs["messaging.destination.partition.id"] == "0", producer.attrs
    assert producer.attrs["messaging.kafka.offset"] == sent[0]["offset"], producer.attrs
    assert read[0]["headers"] == [{"name": "traceparent",
                                   "value": traceparent_of(producer).encode().hex()}], read
    server, producer, consumers, sent, read = one_trace(traced, topics["sarama"], 2,
                                                        client="sarama", key="k")
    assert producer.attrs["messaging.batch.message_count"] == 2, producer.attrs
    assert "messaging.kafka.offset" not in producer.attrs, producer.attrs
    for m, r in zip(sent, read):
        assert bytes.fromhex(r["value"]) == m["value"].encode(), (m, r)


def test_applications_own_traceparent_is_kept(traced, topics):
    """A message whose application put a traceparent in it: left as it was, and its consumer
    continues that trace, not the producer's."""
    trace_id, parent = secrets.token_hex(16), secrets.token_hex(8)
    tp = f"00-{trace_id}-{parent}-01"
    sent, read = traced.send_and_consume(topics["one"], headers=[("traceparent", tp)])
    got = traced.spans(lambda s: s.trace_id == bytes.fromhex(trace_id), 2)
    consumer = [s for s in got if s.kind == SPAN_KIND_CONSUMER]
    assert len(consumer) == 1, [(s.name, s.kind) for s in got]
    consumer = consumer[0]
    assert consumer.parent_span_id == bytes.fromhex(parent)
    assert consumer.attrs["messaging.kafka.offset"] == sent[0]["offset"]
    client = [s for s in got if s.kind == SPAN_KIND_CLIENT]
    assert len(client) == 1 and client[0].parent_span_id == consumer.span_id
    assert read[0]["headers"] == [{"name": "traceparent", "value": tp.encode().hex()}], read


def test_request_not_rewritten_is_sent_as_it_was(traced, topics):
    """A message of 200 kB: its produce request is written in several writes, which the socket
    layer does not rewrite; the consumer reads exactly what was sent, in a trace of its own."""
    start = time.time_ns()
    sent, read = traced.send_and_consume(topics["one"], size=200_000)
    assert bytes.fromhex(read[0]["value"]) == sent[0]["value"].encode()
    assert read[0]["headers"] == [], read[0]["headers"]
    got = traced.spans(lambda s: s.kind == SPAN_KIND_CONSUMER and s.start_ns >= start and
                       s.attrs.get("messaging.kafka.offset") == sent[0]["offset"], 1)
    assert got[0].parent_span_id == b"", got[0]


def test_send_to_a_missing_topic_fails(traced):
    """A topic that does not exist: the send's span says so."""
    topic = f"gospan-missing-{secrets.token_hex(3)}"
    start = time.time_ns()
    status, body = traced.post(produce_path(topic))
    assert status == 500, body
    got = traced.spans(lambda s: s.kind == SPAN_KIND_PRODUCER and s.start_ns >= start and
                       s.attrs.get("messaging.destination.name") == topic, 1)
    assert got[0].status_code == STATUS_ERROR, got[0]
    assert got[0].attrs.get("error.type"), got[0].attrs


def test_sarama_send_to_a_missing_topic_fails(traced):
    """sarama's SendMessage to a topic that does not exist: its end (the Jcc testing the
    *ProducerError, on amd64) takes the error's Err: status ERROR, error.type, and no partition
    or offset."""
    if platform.machine() == "x86_64":
        assert f"(sarama {SARAMA_VERSION}, offsets from DWARF; single-stepped hits: 0 a send" \
            in traced.attached, traced.attached
    topic = f"gospan-missing-{secrets.token_hex(3)}"
    start = time.time_ns()
    status, body = traced.post(produce_path(topic, client="sarama"))
    assert status == 500, body
    got = traced.spans(lambda s: s.kind == SPAN_KIND_PRODUCER and s.start_ns >= start and
                       s.attrs.get("messaging.destination.name") == topic, 1)
    assert got[0].status_code == STATUS_ERROR, got[0]
    assert got[0].attrs.get("error.type"), got[0].attrs
    assert "messaging.kafka.offset" not in got[0].attrs, got[0].attrs
    assert "messaging.destination.partition.id" not in got[0].attrs, got[0].attrs


def test_summary_counts_what_went_without_context(traced):
    """Last in the module (its gospan stops here): every record given context or counted."""
    summary = traced.stop()
    k = kafka_counters(summary)
    # one + three in the batch; the warm-up messages, marked too.
    assert k["given"] >= 4, k
    assert k["already_set"] >= 1, k
    assert k["not_whole"] >= 1, k
    assert k["compressed"] == 0 and k["no_room"] == 0, k


def test_fetch_then_commit_ends_the_message(kafka_broker, topics, start_gospan, otlp_receiver,
                                            downstream):
    """FetchMessage, then CommitMessages after processing: the CONSUMER span ends at the
    commit, its downstream GET inside it; and the key is captured when allowed."""
    env = dict(_clean_env(), GOSPAN_CAPTURE_MESSAGE_KEY="true")
    t = Traced(build(), kafka_broker, [topics["fetch"]], start_gospan, otlp_receiver,
               downstream, flags=("-fetch",), env=env)
    try:
        sent, read = t.send_and_consume(topics["fetch"], key="user-7")
        offset = sent[0]["offset"]
        got = t.spans(lambda s: s.kind == SPAN_KIND_CONSUMER and
                      s.attrs.get("messaging.destination.name") == topics["fetch"] and
                      s.attrs.get("messaging.kafka.offset") == offset, 1)
        c = got[0]
        assert c.attrs["messaging.kafka.message.key"] == "user-7", c.attrs
        child = t.spans(lambda s: s.parent_span_id == c.span_id, 1)[0]
        assert c.start_ns <= child.start_ns <= child.end_ns <= c.end_ns
        producer = [s for s in t.receiver.snapshot() if s.span_id == c.parent_span_id]
        assert len(producer) == 1 and producer[0].kind == SPAN_KIND_PRODUCER, producer
        assert producer[0].attrs["messaging.kafka.message.key"] == "user-7"
        assert bytes.fromhex(read[0]["key"]) == b"user-7", read
    finally:
        t.stop()


def test_stripped_pie(kafka_broker, topics, start_gospan, otlp_receiver, downstream):
    """kafkamix built stripped and PIE: the offsets come from the table, the trace is the
    same."""
    binary = build(flags=("-trimpath", "-buildmode=pie", "-ldflags=-s -w"), sarama=False)
    t = Traced(binary, kafka_broker, [topics["pie"]], start_gospan, otlp_receiver, downstream)
    try:
        assert "Kafka producer + Kafka consumer (kafka-go" in t.attached, t.attached
        assert "offsets from table" in t.attached, t.attached
        server, producer, consumers, sent, read = one_trace(t, topics["pie"], 2)
        check_broker(producer, kafka_broker)
        assert consumers[0].attrs["messaging.consumer.group.name"] == t.group
    finally:
        t.stop()


def consumer_spans(t, topic, since):
    return [s for s in t.receiver.snapshot() if s.kind == SPAN_KIND_CONSUMER and
            s.attrs.get("messaging.destination.name") == topic and s.start_ns >= since]


@pytest.mark.parametrize("read", ["fetch", "read"])
def test_reads_that_time_out_hand_nothing_over(kafka_broker, topics, start_gospan, otlp_receiver,
                                               downstream, read):
    """Each read bounded by a context that ends first (kafkamix -poll, as examples/consumer
    does): FetchMessage (in a group, committed apart), or ReadMessage (of a partition: with a
    group its commit would share the read's bound, and a commit cut short loses the message),
    returns its context's error, on ways out that do not pass the probes that hand a message
    over, or pass them with the error set. Dozens of reads cancelled around one message:
    exactly one CONSUMER span, the message's, its downstream GET inside it; it ends at the
    commit (FetchMessage) or at the next read (ReadMessage)."""
    topic = topics[f"poll-{read}"]
    flags = ("-poll", "100ms") + (("-fetch",) if read == "fetch" else ("-partition",))
    t = Traced(build(), kafka_broker, [topic], start_gospan, otlp_receiver, downstream,
               flags=flags)
    try:
        start = time.time_ns()

        def timeouts():
            return consumer_state(t.svc)["timeouts"]

        before = timeouts()
        assert wait_until(lambda: timeouts() >= before + 10, CONSUME_TIMEOUT), timeouts()
        sent, read_back = t.send_and_consume(topic)
        after = timeouts()
        assert wait_until(lambda: timeouts() >= after + 10, CONSUME_TIMEOUT), timeouts()
        got = t.spans(lambda s: s.kind == SPAN_KIND_CONSUMER and s.start_ns >= start and
                      s.attrs.get("messaging.destination.name") == topic, 1)
        time.sleep(1)
        got = consumer_spans(t, topic, start)
        assert len(got) == 1, [(s.name, s.attrs) for s in got]
        c = got[0]
        assert c.attrs["messaging.kafka.offset"] == sent[0]["offset"], c.attrs
        assert c.attrs.get("messaging.consumer.group.name") == \
            (t.group if read == "fetch" else None), c.attrs
        child = t.spans(lambda s: s.parent_span_id == c.span_id, 1)[0]
        assert c.start_ns <= child.start_ns <= child.end_ns <= c.end_ns
        # The next read, at most 100 ms after the GET, ends it where no commit does.
        assert c.end_ns - child.end_ns < 2_000_000_000, (c.end_ns - child.end_ns)
        assert not consumer_state(t.svc)["errors"], consumer_state(t.svc)
    finally:
        t.stop()


def test_reader_without_a_group(kafka_broker, topics, start_gospan, otlp_receiver, downstream):
    """A Reader of one partition, without a group: ReadMessage returns without a commit, on its
    own way to its RET. The message's CONSUMER span is the PRODUCER span's child, with the
    partition and offset and no group, and the GET it makes is inside it."""
    topic = topics["partition"]
    t = Traced(build(), kafka_broker, [topic], start_gospan, otlp_receiver, downstream,
               flags=("-partition",))
    try:
        server, producer, consumers, sent, read = one_trace(t, topic, 2)
        for c in consumers:
            check_common(c, topic, "process")
            assert c.attrs["messaging.destination.partition.id"] == "0", c.attrs
            assert "messaging.consumer.group.name" not in c.attrs, c.attrs
    finally:
        t.stop()
