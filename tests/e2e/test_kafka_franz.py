"""Kafka PRODUCER and CONSUMER spans from twmb/franz-go's kgo, on kafkamix (tests/e2e/kafkamix)
against the session's real Apache Kafka broker (kafka.py), decoded by the official OTLP package.

What gospan must make of it:

- one PRODUCER span a (*Client).ProduceSync call, "send <topic>", a child of the SERVER span of
  the HTTP request whose goroutine made it, inside its window, with the attributes kafka-go's
  sends have (messaging.batch.message_count for more than one record; for one, the partition
  and offset the broker gave it);
- one PRODUCER span a (*Client).Produce call (asynchronous), from the call to the moment kgo
  finishes the record and calls its promise, a child of the SERVER span;
- with kgo.ProducerBatchCompression(kgo.NoCompression()), a traceparent header naming the
  PRODUCER span in each record, added at the socket layer, so that the CONSUMER span is its
  child; with franz-go's default compression (snappy) the batch is counted "compressed batch"
  and goes byte for byte as the client made it;
- one CONSUMER span a record processed, "process <topic>": through Fetches.EachRecord (the
  callback's call), and through a RecordIter's Next (until the goroutine's next Next, or its
  next poll), with the partition, offset, consumer group and broker; the downstream GET made
  while processing is its child;
- a send to a topic that does not exist, or with no broker there: status ERROR and error.type;
- the same from a stripped PIE build, whose offsets come from offsets/franz_offsets.json;
- nothing dropped.

test_release runs franz-go's release matrix (kafka_matrix.FRANZ): its CI slice by default, with
GOSPAN_COMPAT=1 every cell, which then rewrites franz-go's section of COMPATIBILITY.md (`make
compat`; `-k test_release` runs the matrix alone).
"""

import http.client
import json
import platform
import secrets
import shutil
import time

import pytest

from conftest import (BUILD, STATUS_ERROR, STATUS_UNSET, Service, _clean_env, traced_get,
                      wait_until)
from kafka import FRANZ_VERSION, BuildError, build_kafkamix
import kafka_matrix
import matrix
import test_kafka as tk

SPAN_KIND_SERVER, SPAN_KIND_CLIENT, SPAN_KIND_PRODUCER, SPAN_KIND_CONSUMER = 2, 3, 4, 5
downstream = tk.downstream


def build(flags=()):
    """kafkamix with franz-go alone, built with FLAGS (cached)."""
    if shutil.which("go") is None:
        pytest.skip("Go is not installed; it is needed to build kafkamix")
    try:
        return build_kafkamix(franz=FRANZ_VERSION, flags=flags)
    except BuildError as e:
        pytest.fail(str(e))


@pytest.fixture(scope="module")
def topics(kafka_broker):
    kinds = ("one", "batch", "async", "snappy", "iter", "cells")
    names = [f"gospan-fz-{secrets.token_hex(3)}-{n}" for n in kinds]
    kafka_broker.create_topics(*names, partitions=1)
    return dict(zip(kinds, names))


@pytest.fixture(scope="module")
def traced(kafka_broker, topics, start_gospan, otlp_receiver, downstream):
    t = tk.Traced(build(), kafka_broker,
                  [topics["one"], topics["batch"], topics["async"], topics["snappy"]],
                  start_gospan, otlp_receiver, downstream, client="franz")
    yield t
    t.stop()


def trace_of(traced, topic, n, mode="sync", producers=1, **kw):
    """POSTs a produce of N records on TOPIC (MODE) under a trace of its own and waits until they
    are processed: (server, producers, consumers by offset, what was sent, what was read), the
    spans checked to be one trace: caller -> SERVER -> PRODUCERS -> each CONSUMER -> its GET,
    each CONSUMER the child of the PRODUCER that sent its record."""
    before = len(tk.consumed(traced.svc))
    path = tk.produce_path(topic, n=n, mode=mode, client="franz", compression="none", **kw)
    trace_id, parent, req = traced_get(traced.svc.port, path, method="POST")
    sent = json.loads(req.got_body)["messages"]
    assert len(sent) == n
    ok = wait_until(lambda: len(tk.consumed(traced.svc)) >= before + n, tk.CONSUME_TIMEOUT)
    assert ok, "the consumer did not read what was sent"
    read = tk.consumed(traced.svc)[before:]
    got = traced.spans(lambda s: s.trace_id == trace_id, 1 + producers + 2 * n)
    time.sleep(0.5)  # anything more than expected would come now
    got = [s for s in traced.receiver.snapshot() if s.trace_id == trace_id]
    by_kind = {k: [s for s in got if s.kind == k] for k in
               (SPAN_KIND_SERVER, SPAN_KIND_PRODUCER, SPAN_KIND_CONSUMER, SPAN_KIND_CLIENT)}
    assert [len(by_kind[k]) for k in (SPAN_KIND_SERVER, SPAN_KIND_PRODUCER, SPAN_KIND_CONSUMER,
                                      SPAN_KIND_CLIENT)] == [1, producers, n, n], \
        [(s.name, s.kind) for s in got]
    server = by_kind[SPAN_KIND_SERVER][0]
    assert server.parent_span_id == parent
    ids = set()
    for p in by_kind[SPAN_KIND_PRODUCER]:
        assert p.parent_span_id == server.span_id
        assert server.start_ns <= p.start_ns <= p.end_ns <= server.end_ns
        tk.check_common(p, topic, "send")
        assert p.status_code == STATUS_UNSET
        ids.add(p.span_id)
    consumers = sorted(by_kind[SPAN_KIND_CONSUMER],
                       key=lambda s: s.attrs["messaging.kafka.offset"])
    for c in consumers:
        tk.check_common(c, topic, "process")
        assert c.parent_span_id in ids, (c.attrs, ids)
        child = [s for s in by_kind[SPAN_KIND_CLIENT] if s.parent_span_id == c.span_id]
        assert len(child) == 1, [(s.name, s.parent_span_id) for s in by_kind[SPAN_KIND_CLIENT]]
        assert c.start_ns <= child[0].start_ns <= child[0].end_ns <= c.end_ns
    assert [c.attrs["messaging.kafka.offset"] for c in consumers] == \
        sorted(m["offset"] for m in sent)
    return (server, by_kind[SPAN_KIND_PRODUCER], consumers,
            sorted(sent, key=lambda m: m["offset"]), read)


def test_no_single_stepped_hit(traced):
    """amd64: a ProduceSync and a record cost no single-stepped probe hit: ProduceSync ends
    after the application's CALLs of it (its results still in their registers there), and a
    record is handed over at Next's last CALL (prepareNext), its *Record on Next's stack."""
    if platform.machine() != "x86_64":
        pytest.skip("the emulated ends are placed on amd64; arm64 keeps the RETs")
    assert (f"(franz-go {FRANZ_VERSION}, offsets from DWARF; single-stepped hits: 0 a sync "
            f"send, 0 a record)") in traced.attached, traced.attached


def test_sync_send_one_trace(traced, topics, kafka_broker):
    """ProduceSync of one record, uncompressed: SERVER -> PRODUCER (with the record's partition
    and offset) -> CONSUMER (through EachRecord) -> its GET; the record carries the producer's
    traceparent and nothing else changed."""
    assert "Kafka producer + Kafka consumer (franz-go " + FRANZ_VERSION in traced.attached, \
        traced.attached
    server, producers, consumers, sent, read = trace_of(traced, topics["one"], 1)
    p, c = producers[0], consumers[0]
    tk.check_broker(p, kafka_broker)
    assert "messaging.batch.message_count" not in p.attrs, p.attrs
    assert p.attrs["messaging.destination.partition.id"] == "0", p.attrs
    assert p.attrs["messaging.kafka.offset"] == sent[0]["offset"], p.attrs
    tk.check_broker(c, kafka_broker)
    assert c.attrs["messaging.destination.partition.id"] == "0", c.attrs
    assert c.attrs["messaging.consumer.group.name"] == traced.group, c.attrs
    assert bytes.fromhex(read[0]["value"]) == sent[0]["value"].encode()
    assert read[0]["headers"] == [{"name": "traceparent",
                                   "value": tk.traceparent_of(p).encode().hex()}], read


def test_sync_batch(traced, topics):
    """ProduceSync of three records, one of them big: one PRODUCER span with the count, each
    record given its context, three CONSUMER spans its children."""
    server, producers, consumers, sent, read = trace_of(traced, topics["batch"], 3, size=3000,
                                                        key="k")
    p = producers[0]
    assert p.attrs["messaging.batch.message_count"] == 3, p.attrs
    assert "messaging.kafka.offset" not in p.attrs, p.attrs
    for m, r in zip(sent, read):
        assert bytes.fromhex(r["value"]) == m["value"].encode(), (m, r)
        assert r["headers"] == [{"name": "traceparent",
                                 "value": tk.traceparent_of(p).encode().hex()}], r


def test_async_sends(traced, topics):
    """Three Produce calls with promises: three PRODUCER spans, each from its call to its
    promise, each record's CONSUMER span the child of its own."""
    server, producers, consumers, sent, read = trace_of(traced, topics["async"], 3,
                                                        mode="async", producers=3)
    by_offset = {p.attrs["messaging.kafka.offset"]: p for p in producers}
    assert sorted(by_offset) == [m["offset"] for m in sent], [p.attrs for p in producers]
    for c, r in zip(consumers, read):
        p = by_offset[c.attrs["messaging.kafka.offset"]]
        assert c.parent_span_id == p.span_id
        assert "messaging.batch.message_count" not in p.attrs, p.attrs
        assert r["headers"] == [{"name": "traceparent",
                                 "value": tk.traceparent_of(p).encode().hex()}], r


def test_default_compression_goes_as_sent(traced, topics):
    """franz-go's default, snappy: the socket layer leaves the batch alone (counted at the
    end, test_summary_counts_compressed), the consumer reads what was sent, in a trace of its
    own; the PRODUCER span is there all the same. franz-go sends a batch uncompressed when
    snappy does not make it smaller (kafkamix's random values alone): a long key repeated in
    each record makes it compress."""
    start = time.time_ns()
    sent, read = traced.send_and_consume(topics["snappy"], n=3, key="k" * 120, client="franz")
    for m, r in zip(sorted(sent, key=lambda m: m["offset"]), read):
        assert bytes.fromhex(r["value"]) == m["value"].encode(), (m, r)
        assert r["headers"] == [], r
    got = traced.spans(lambda s: s.kind == SPAN_KIND_CONSUMER and s.start_ns >= start and
                       s.attrs.get("messaging.destination.name") == topics["snappy"], 3)
    assert all(s.parent_span_id == b"" for s in got), got
    traced.spans(lambda s: s.kind == SPAN_KIND_PRODUCER and s.start_ns >= start and
                 s.attrs.get("messaging.destination.name") == topics["snappy"], 1)


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_send_to_a_missing_topic_fails(traced, mode):
    """A topic that does not exist: the send's span says so (franz-go gives up after 2
    answers that it is unknown)."""
    topic = f"gospan-missing-{secrets.token_hex(3)}"
    start = time.time_ns()
    status, body = traced.post(tk.produce_path(topic, mode=mode, client="franz"))
    assert status == 500, body
    got = traced.spans(lambda s: s.kind == SPAN_KIND_PRODUCER and s.start_ns >= start and
                       s.attrs.get("messaging.destination.name") == topic, 1)
    assert got[0].status_code == STATUS_ERROR, got[0]
    assert got[0].attrs.get("error.type"), got[0].attrs


def test_no_broker_fails(free_port, start_gospan, otlp_receiver):
    """A client whose only broker is not there (gone, or never up): ProduceSync and Produce
    fail after kafkamix's 5 s RecordDeliveryTimeout, and their spans say so."""
    port = free_port()
    svc = Service(build(), env=_clean_env(), args=["-brokers", f"127.0.0.1:{port}"])
    try:
        gospan = start_gospan(svc.pid, otlp_receiver)
        attached = gospan.wait_attached()
        assert "Kafka producer" in attached, attached
        topic = f"gospan-nobroker-{secrets.token_hex(3)}"
        c = http.client.HTTPConnection(svc.host, svc.port, timeout=30)
        for mode in ("sync", "async"):
            c.request("POST", tk.produce_path(topic, mode=mode, client="franz"), body=b"")
            r = c.getresponse()
            body = r.read()
            assert r.status == 500, body
        c.close()
        ok = wait_until(lambda: len([s for s in otlp_receiver.snapshot()
                                     if s.attrs.get("messaging.destination.name") == topic]) >= 2,
                        tk.SPAN_TIMEOUT)
        got = [s for s in otlp_receiver.snapshot()
               if s.attrs.get("messaging.destination.name") == topic]
        assert ok, got
        for s in got:
            assert s.kind == SPAN_KIND_PRODUCER, s
            assert s.status_code == STATUS_ERROR, s
            assert s.attrs.get("error.type"), s.attrs
            assert s.attrs.get("server.port") == port, s.attrs
            assert "messaging.kafka.offset" not in s.attrs, s.attrs
        assert gospan.stop() == 0, gospan.stderr
        assert " dropped 0;" in gospan.summary_line(), gospan.summary_line()
    finally:
        svc.stop()


def test_summary_counts_compressed(traced):
    """Last of the module's gospan: every record given context or counted; the snappy batches
    counted as compressed."""
    summary = traced.stop()
    k = tk.kafka_counters(summary)
    assert k["given"] >= 7, k
    assert k["compressed"] >= 1, k
    assert k["no_room"] == 0 and k["not_whole"] == 0, k


def test_iterator_and_stripped_pie(kafka_broker, topics, start_gospan, otlp_receiver,
                                   downstream):
    """kafkamix built stripped and PIE, its consumer taking records from a RecordIter's Next:
    the offsets come from the table, the trace is the same."""
    binary = build(flags=("-trimpath", "-buildmode=pie", "-ldflags=-s -w"))
    t = tk.Traced(binary, kafka_broker, [topics["iter"]], start_gospan, otlp_receiver,
                  downstream, flags=("-iter",), client="franz")
    try:
        assert "Kafka producer + Kafka consumer (franz-go" in t.attached, t.attached
        assert "offsets from table" in t.attached, t.attached
        server, producers, consumers, sent, read = trace_of(t, topics["iter"], 2)
        assert consumers[0].attrs["messaging.consumer.group.name"] == t.group
    finally:
        t.stop()


FRANZ = kafka_matrix.FRANZ
CELLS = matrix.cases(FRANZ.full_cells, FRANZ.slice_cells)
# cell -> what test_release recorded of it ({"result", "toolchain", "source", "steps", "why"}),
# saved to $GOSPAN_BUILD/e2e/franz-versions-full.json (GOSPAN_COMPAT=1) or -slice.json.
RESULTS = FRANZ.results(BUILD)


@pytest.mark.parametrize("cell", CELLS, ids=kafka_matrix.cell_id)
def test_release(cell, kafka_broker, topics, start_gospan, otlp_receiver, downstream):
    """The first release of every layout of franz-go's offset table, stripped (GOSPAN_COMPAT=1:
    every release, plain, stripped and PIE): the attach line names the release and where the
    offsets came from, and one produce is one trace through the broker, its record carrying
    the PRODUCER span's traceparent."""
    _, release, _, flavour = cell
    with RESULTS.record(cell) as rec:
        binary, built = kafka_matrix.build(cell)
        rec.update(toolchain=built["toolchain"])
        topic = f"{topics['cells']}-{release}-{flavour}"
        kafka_broker.create_topics(topic, partitions=1)
        t = tk.Traced(binary, kafka_broker, [topic], start_gospan, otlp_receiver, downstream,
                      client="franz")
        try:
            source, steps = FRANZ.read_attach(cell, t.attached, built)
            rec.update(source=source, steps=steps)
            server, producers, consumers, sent, read = trace_of(t, topic, 1)
            assert consumers[0].attrs["messaging.consumer.group.name"] == t.group
            assert bytes.fromhex(read[0]["value"]) == sent[0]["value"].encode(), (sent, read)
            assert read[0]["headers"] == [{"name": "traceparent", "value": tk.traceparent_of(
                producers[0]).encode().hex()}], read
        finally:
            t.stop()
        rec["result"] = f"verified ({source})"


@pytest.fixture(scope="module", autouse=True)
def _write_compatibility():
    """franz-go's section of COMPATIBILITY.md, when a GOSPAN_COMPAT=1 run ran every cell."""
    yield from matrix.write_compatibility(FRANZ, RESULTS, CELLS, "kafkamix-*")
