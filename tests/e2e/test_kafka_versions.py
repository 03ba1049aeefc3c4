"""kafka-go across releases, Go toolchains and build flavours, traced for real through a real
broker: kafkamix with kafka-go alone, built for one cell (kafka_matrix.py, cached), producing on
request and consuming a topic of its own (a group's ReadMessage, a GET of a local URL for each
message) on the session's broker (kafka_broker), one gospan on it, and one trace through Kafka
checked as the OTLP receiver decoded it:

- the attach line says "Kafka producer + Kafka consumer (kafka-go vX.Y.Z, offsets from
  DWARF|table vA.B.C; ...)" for the release built, the offsets from DWARF in plain and PIE
  builds and from the table row of the release in stripped ones, and the Go that built it;
- one message first, to warm the consumer up: a read waiting since before the attach hands its
  message over unseen (test_kafka.py);
- then POST /kafkago/produce under a traceparent of its own: its trace is exactly SERVER (a
  child of the caller's span) -> PRODUCER "send <topic>" (inside it) -> CONSUMER "process
  <topic>" -> the consumer's CLIENT GET (inside it), with messaging.destination.name the
  topic, and messaging.kafka.offset, partition and consumer group those the produce answered
  and kafkamix was given;
- the record the consumer read back holds the value sent and exactly one header, the
  traceparent naming the PRODUCER span (put there at the socket layer);
- at exit nothing is dropped or left in flight, and both records were given trace context.

By default (make test, CI) this runs kafka_matrix.slice_cells(): the first release of every
layout of the offset table, stripped, and the newest release, plain, stripped and PIE; with
GOSPAN_COMPAT=1 every cell of kafka_matrix.full_cells() (and the slice), and then rewrites the
kafka-go section of COMPATIBILITY.md. Every run writes its results, cell by cell, to
$GOSPAN_BUILD/e2e/kafka-versions-full.json (GOSPAN_COMPAT=1) or kafka-versions-slice.json.
"""

import json
import re
import secrets

import pytest

import kafka_matrix
import matrix
from conftest import BUILD, STATUS_UNSET, Service, _clean_env, traced_get, wait_until
from test_kafka import (CONSUME_TIMEOUT, SPAN_KIND_CLIENT, SPAN_KIND_CONSUMER, SPAN_KIND_PRODUCER,
                        SPAN_KIND_SERVER, consumed, kafka_counters, produce_path, traceparent_of)
# downstream: the module fixture of the URL the consumer GETs for each message
from test_kafka import downstream  # noqa: F401 (a fixture)
from test_router_versions import traces

# Two builds at a time: most of a build is its serial steps (go mod tidy, the link).
BUILD_JOBS = 2
# Cells traced at once, each its own kafkamix, topic, group, gospan and traces, so they do not
# mix; the broker is shared.
RUN_JOBS = 2
KAFKA_PART = re.compile(
    r" \+ Kafka producer \+ Kafka consumer \(kafka-go (v[0-9.]+), offsets from "
    r"(DWARF|table v[0-9.]+); single-stepped hits: (\d+|no probe for) a send, "
    r"(\d+|no probe for) a message\)")

CASES = matrix.cases(kafka_matrix.full_cells, kafka_matrix.slice_cells)

# cell -> {"result", "toolchain", "source", "steps", "why"}; the full matrix's kept apart from
# the slice's.
RESULTS = matrix.Results("kafka-versions", kafka_matrix.FIELDS, BUILD, why_width=400)


def steps_of(text):
    return None if text == "no probe for" else int(text)


def check_attach(cell, line, built):
    """What the attach LINE says of CELL's build BUILT: where the offsets came from ("DWARF",
    "table v0.4.39") and the single-stepped hits of a send and of a message."""
    _, release, _, flavour = cell
    where = kafka_matrix.cell_id(cell)
    assert f", {built['toolchain']}, " in line, f"{where}: not {built['toolchain']}:\n{line}"
    parts = KAFKA_PART.findall(line)
    assert len(parts) == 1, f"{where}: no Kafka producer and consumer in the attach line:\n{line}"
    version, source, send, message = parts[0]
    assert version == release, f"{where}: kafka-go {version} read, {release} built:\n{line}"
    want = ("table v" + matrix.table_row_version(kafka_matrix.TABLE, release)
            if flavour == "stripped" else "DWARF")
    assert source == want, f"{where}: offsets from {source}, not {want}:\n{line}"
    return source, [steps_of(send), steps_of(message)]


def check_trace(spans, parent, topic, group, sent, read):
    """What is wrong with the trace of the produce (SPANS), if anything: a list of lines. PARENT
    is the caller's span id, SENT what /produce answered, READ what the consumer read."""
    kinds = {k: [s for s in spans if s.kind == k] for k in
             (SPAN_KIND_SERVER, SPAN_KIND_PRODUCER, SPAN_KIND_CONSUMER, SPAN_KIND_CLIENT)}
    if len(spans) != 4 or any(len(v) != 1 for v in kinds.values()):
        return [f"the trace holds {[(s.name, s.kind) for s in spans]}, want SERVER, PRODUCER, "
                f"CONSUMER and CLIENT"]
    server, producer, consumer, client = (kinds[k][0] for k in (
        SPAN_KIND_SERVER, SPAN_KIND_PRODUCER, SPAN_KIND_CONSUMER, SPAN_KIND_CLIENT))
    problems = []
    for span, want in ((server, parent), (producer, server.span_id),
                       (consumer, producer.span_id), (client, consumer.span_id)):
        if span.parent_span_id != want:
            problems.append(f"{span.name!r}: parent {span.parent_span_id.hex()}, want "
                            f"{want.hex()}")
    for outer, inner in ((server, producer), (consumer, client)):
        if not outer.start_ns <= inner.start_ns <= inner.end_ns <= outer.end_ns:
            problems.append(f"{inner.name!r} is not inside {outer.name!r}")
    for span, op in ((producer, "send"), (consumer, "process")):
        a = span.attrs
        got = {k: a.get(k) for k in ("messaging.system", "messaging.operation.name",
                                      "messaging.destination.name")}
        want = {"messaging.system": "kafka", "messaging.operation.name": op,
                "messaging.destination.name": topic}
        if span.name != f"{op} {topic}" or got != want:
            problems.append(f"{span.name!r}: {got}, want {want}")
        if span.status_code != STATUS_UNSET:
            problems.append(f"{span.name!r}: status {span.status_code} {span.status_message!r}")
    a = consumer.attrs
    got = {k: a.get(k) for k in ("messaging.kafka.offset", "messaging.destination.partition.id",
                                  "messaging.consumer.group.name")}
    want = {"messaging.kafka.offset": sent["offset"],
            "messaging.destination.partition.id": str(sent["partition"]),
            "messaging.consumer.group.name": group}
    if got != want:
        problems.append(f"{consumer.name!r}: {got}, want {want}")
    if len(read) != 1 or bytes.fromhex(read[0]["value"]) != sent["value"].encode() \
            or read[0]["offset"] != sent["offset"]:
        problems.append(f"the consumer read {read}, {sent} was sent")
    elif read[0]["headers"] != [{"name": "traceparent",
                                 "value": traceparent_of(producer).encode().hex()}]:
        problems.append(f"the record's headers are {read[0]['headers']}, want only the "
                        f"traceparent {traceparent_of(producer)}")
    return problems


def post(svc, path, where):
    """POSTs PATH to SVC, which must answer 200; returns the messages its answer names."""
    _, _, req = traced_get(svc.port, path, where=f"{where}: POST ", method="POST")
    return json.loads(req.got_body)["messages"]


def wait_consumed(svc, n, where):
    """The messages SVC's consumer has processed, once there are N."""
    assert wait_until(lambda: len(consumed(svc)) >= n, CONSUME_TIMEOUT), (
        f"{where}: the consumer read {len(consumed(svc))} messages of {n} within "
        f"{CONSUME_TIMEOUT:.0f} s")
    return consumed(svc)


def run_cell(cell, build, broker, topic, start_gospan, receiver, downstream):
    """Runs CELL on TOPIC once its build is done; raises what failed."""
    where = kafka_matrix.cell_id(cell)
    with RESULTS.record(cell) as rec:
        binary, built = build.result()
        rec.update(toolchain=built["toolchain"])
        group = f"gospan-{where}-{secrets.token_hex(3)}"
        svc = Service(binary, env=_clean_env(), args=(
            "-brokers", broker.bootstrap, "-consume", topic, "-client", "kafkago",
            "-group", group, "-downstream", downstream))
        try:
            g = start_gospan(svc.pid, receiver)
            line = g.wait_attached()
            source, steps = check_attach(cell, line, built)
            rec.update(source=source, steps=steps)
            # the warm-up: the read waiting since before the attach takes this message
            post(svc, produce_path(topic), where)
            before = len(wait_consumed(svc, 1, where))
            tid, parent, req = traced_get(svc.port, produce_path(topic), where=f"{where}: POST ",
                                          method="POST")
            sent = json.loads(req.got_body)["messages"]
            read = wait_consumed(svc, before + 1, where)[before:]
            spans = traces(receiver, [(tid, 4)], g, where)[tid]
            g.stop_cleanly()
        finally:
            svc.stop()
        problems = check_trace(spans, parent, topic, group, sent[0], read)
        assert not problems, f"{where}: " + "; ".join(problems)
        summary = g.summary_line() or ""
        assert " dropped 0;" in summary and " in flight 0," in summary, f"{where}: {summary}"
        k = kafka_counters(summary)
        assert k["given"] >= 2 and not any(v for n, v in k.items() if n != "given"), (
            f"{where}: two records sent, {k}")
        rec["result"] = f"verified ({source})"


@pytest.fixture(scope="module")
def topics(request, kafka_broker):
    """cell -> its topic (one partition), every selected cell's made at once."""
    cells = matrix.selected_cells(request)
    tag = secrets.token_hex(3)
    names = {c: f"gospan-{tag}-{kafka_matrix.cell_id(c)}" for c in cells}
    if names:
        kafka_broker.create_topics(*names.values(), partitions=1)
    return names


@pytest.fixture(scope="module")
def runs(request, bpf_ready, kafka_broker, topics, start_gospan, otlp_receiver, downstream):
    """cell -> future of run_cell(cell): every selected cell built (kafka_matrix.build) and run
    in order in the background, the builds ahead of the runs."""
    yield from matrix.built_and_run(
        kafka_matrix.build,
        lambda c, built: run_cell(c, built, kafka_broker, topics[c], start_gospan,
                                  otlp_receiver, downstream),
        matrix.selected_cells(request), BUILD_JOBS, RUN_JOBS)


def marked(cell):
    """CELL as a parameter: a strict xfail where kafka_matrix.FINDINGS says why it fails (its
    record, and the page, still say FAILED; a cell that passes again fails the test, so the
    finding goes once gospan is fixed)."""
    why = kafka_matrix.finding(cell)
    if not why:
        return cell
    return pytest.param(cell, marks=pytest.mark.xfail(
        reason=f"{why.split(' (')[0]} (kafka_matrix.FINDINGS)", strict=True))


@pytest.mark.parametrize("cell", [marked(c) for c in CASES],
                         ids=[kafka_matrix.cell_id(c) for c in CASES])
def test_kafka_version_is_traced(cell, runs):
    runs[cell].result()


@pytest.fixture(scope="module", autouse=True)
def _write_compatibility():
    yield from matrix.write_compatibility(kafka_matrix, RESULTS, CASES, "kafkamix-*")
