"""kafka-go and sarama across releases, Go toolchains and build flavours, traced for real through a
real broker: kafkamix with one client alone, built for one cell (kafka_matrix.py, cached),
producing on request and consuming a topic of its own in a group (kafka-go: ReadMessage;
sarama: a ConsumerGroup; a GET of a local URL for each message) on the session's broker
(kafka_broker), one gospan on it, and its traces checked as the OTLP receiver decoded them:

- the attach line names the client's release, and says where the offsets came from (DWARF in
  plain and PIE builds, the table row of the release in stripped ones) and which Go built it:
  "Kafka producer + Kafka consumer (kafka-go vX.Y.Z, offsets from DWARF|table vA.B.C; ...)",
  "Kafka producer + Kafka consumer (sarama vX.Y.Z, ...)" (kafka_matrix.Client.read_attach);
- one message first, to warm the consumer up: a read waiting since before the attach hands its
  message over unseen (test_kafka.py);
- kafka-go: then POST /kafkago/produce under a traceparent of its own: its trace is exactly
  SERVER (a child of the caller's span) -> PRODUCER "send <topic>" (inside it) -> CONSUMER
  "process <topic>" -> the consumer's CLIENT GET (inside it), with messaging.destination.name
  the topic, and messaging.kafka.offset, partition and consumer group those the produce
  answered and kafkamix was given (check_kafkago);
- sarama: then POST /sarama/produce of one message (SendMessage), of two (SendMessages) and
  of two through the AsyncProducer, each under a traceparent of its own: each trace holds one
  SERVER span and one PRODUCER "send <topic>" inside it, SendMessage's with the partition and
  offset it returned, SendMessages's with the batch count, or the AsyncProducer's one a
  message, each with its partition and offset (check_sarama), and a CONSUMER "process <topic>" span for each record,
  its child, with the consumer's GET inside it (check_sarama_consumer); the group is made to
  join again (kafkamix's SIGUSR1) once gospan has attached, so that its claims begin in view;
- each record the consumer read back holds the value sent and exactly one header, the
  traceparent naming its PRODUCER span (put there at the socket layer);
- at exit nothing is dropped or left in flight, and every record was given trace context.

By default (make test, CI) this runs each client's slice (kafka_matrix.Client.slice_cells: the
first release of every layout of its offset table, stripped, and the newest release the table
names, plain, stripped and PIE); with GOSPAN_COMPAT=1 every cell of its full_cells() (and the
slice), and then rewrites the section of COMPATIBILITY.md of each client whose cells all ran
(`-k sarama` runs sarama's alone). Every run writes its results, cell by cell, to
$GOSPAN_BUILD/e2e/kafka-versions-full.json (kafka-go) and sarama-versions-full.json
(GOSPAN_COMPAT=1), or -slice.json.
"""

import json
import secrets
from collections import namedtuple

import pytest

import kafka_matrix
import matrix
from conftest import BUILD, STATUS_UNSET, Service, _clean_env, traced_get, wait_until
from test_kafka import (CONSUME_TIMEOUT, SPAN_KIND_CLIENT, SPAN_KIND_CONSUMER, SPAN_KIND_PRODUCER,
                        SPAN_KIND_SERVER, consumed, kafka_counters, produce_path, rejoin,
                        traceparent_of)
# downstream: the module fixture of the URL the consumer GETs for each message
from test_kafka import downstream  # noqa: F401 (a fixture)
from test_router_versions import traces

# Two builds at a time: most of a build is its serial steps (go mod tidy, the link).
BUILD_JOBS = 2
# Cells traced at once, each its own kafkamix, topic, group, gospan and traces, so they do not
# mix; the broker is shared.
RUN_JOBS = 2
TESTED = (kafka_matrix.KAFKAGO, kafka_matrix.SARAMA)

CASES = [c for client in TESTED for c in matrix.cases(client.full_cells, client.slice_cells)]

# client id -> its cells' records (cell -> {"result", "toolchain", "source", "steps", "why"});
# the full matrix's kept apart from the slice's.
RESULTS = {client.ID: client.results(BUILD) for client in TESTED}

# One traced produce: the caller's span id, what /produce answered, what the consumer read.
Produce = namedtuple("Produce", "trace_id parent sent read mode")


def messaging_problems(span, op, topic):
    """What is wrong with the messaging attributes and status of SPAN, of operation OP (send,
    process) on TOPIC."""
    a = span.attrs
    got = {k: a.get(k) for k in ("messaging.system", "messaging.operation.name",
                                  "messaging.destination.name")}
    want = {"messaging.system": "kafka", "messaging.operation.name": op,
            "messaging.destination.name": topic}
    problems = []
    if span.name != f"{op} {topic}" or got != want:
        problems.append(f"{span.name!r}: {got}, want {want}")
    if span.status_code != STATUS_UNSET:
        problems.append(f"{span.name!r}: status {span.status_code} {span.status_message!r}")
    return problems


def record_problems(p, producer):
    """What is wrong with the records the consumer read of produce P: each must hold the value
    sent, at the offset sent, and exactly one header, the traceparent naming its PRODUCER span
    (PRODUCER, or PRODUCER[offset] for a span a message)."""
    sent = sorted(p.sent, key=lambda m: m["offset"])
    read = sorted(p.read, key=lambda m: m["offset"])
    if [(bytes.fromhex(r["value"]), r["offset"]) for r in read] != \
            [(m["value"].encode(), m["offset"]) for m in sent]:
        return [f"the consumer read {read}, {sent} was sent"]
    problems = []
    for r in read:
        tp = traceparent_of(producer[r["offset"]] if isinstance(producer, dict) else producer)
        if r["headers"] != [{"name": "traceparent", "value": tp.encode().hex()}]:
            problems.append(f"the record's headers are {r['headers']}, want only the "
                            f"traceparent {tp}")
    return problems


def by_kind(spans, *kinds):
    """SPANS of each of KINDS, in that order."""
    return [[s for s in spans if s.kind == k] for k in kinds]


def server_and_producer_problems(server, producer, parent, topic):
    """What is wrong with a produce's SERVER span (a child of PARENT) and its PRODUCER span (a
    child of SERVER, inside it, sending on TOPIC)."""
    problems = []
    for span, want in ((server, parent), (producer, server.span_id)):
        if span.parent_span_id != want:
            problems.append(f"{span.name!r}: parent {span.parent_span_id.hex()}, want "
                            f"{want.hex()}")
    if not server.start_ns <= producer.start_ns <= producer.end_ns <= server.end_ns:
        problems.append(f"{producer.name!r} is not inside {server.name!r}")
    return problems + messaging_problems(producer, "send", topic)


def check_kafkago(spans, p, topic, group):
    """What is wrong with the trace of kafka-go produce P (SPANS), if anything: a list of
    lines."""
    kinds = by_kind(spans, SPAN_KIND_SERVER, SPAN_KIND_PRODUCER, SPAN_KIND_CONSUMER,
                    SPAN_KIND_CLIENT)
    if len(spans) != 4 or any(len(v) != 1 for v in kinds):
        return [f"the trace holds {[(s.name, s.kind) for s in spans]}, want SERVER, PRODUCER, "
                f"CONSUMER and CLIENT"]
    server, producer, consumer, client = (k[0] for k in kinds)
    problems = server_and_producer_problems(server, producer, p.parent, topic)
    for span, want in ((consumer, producer.span_id), (client, consumer.span_id)):
        if span.parent_span_id != want:
            problems.append(f"{span.name!r}: parent {span.parent_span_id.hex()}, want "
                            f"{want.hex()}")
    if not consumer.start_ns <= client.start_ns <= client.end_ns <= consumer.end_ns:
        problems.append(f"{client.name!r} is not inside {consumer.name!r}")
    problems += messaging_problems(consumer, "process", topic)
    a = consumer.attrs
    got = {k: a.get(k) for k in ("messaging.kafka.offset", "messaging.destination.partition.id",
                                  "messaging.consumer.group.name")}
    want = {"messaging.kafka.offset": p.sent[0]["offset"],
            "messaging.destination.partition.id": str(p.sent[0]["partition"]),
            "messaging.consumer.group.name": group}
    if got != want:
        problems.append(f"{consumer.name!r}: {got}, want {want}")
    return problems + record_problems(p, producer)


def check_sarama(spans, p, topic, group):
    """What is wrong with the trace of sarama produce P (SPANS), if anything: one SERVER span
    and one PRODUCER span, SendMessage's (one message) with its partition and offset,
    SendMessages's with the batch count, or with the AsyncProducer one PRODUCER span a message,
    each with its partition and offset; then the consumer's side (check_sarama_consumer)."""
    server, producers = by_kind(spans, SPAN_KIND_SERVER, SPAN_KIND_PRODUCER)
    one_each = p.mode == "async"
    if len(server) != 1 or len(producers) != (len(p.sent) if one_each else 1):
        return [f"the trace holds {[(s.name, s.kind) for s in spans]}, want one SERVER span "
                f"and {'one PRODUCER span a message' if one_each else 'one PRODUCER span'}"]
    server = server[0]
    problems = []
    by_offset = {}
    for producer in producers:
        problems += server_and_producer_problems(server, producer, p.parent, topic)
        offset = producer.attrs.get("messaging.kafka.offset")
        by_offset[offset] = producer
    if len(p.sent) == 1 or one_each:
        want = {m["offset"]: {"messaging.batch.message_count": None,
                              "messaging.destination.partition.id": str(m["partition"])}
                for m in p.sent}
        got = {o: {k: s.attrs.get(k) for k in ("messaging.batch.message_count",
                                                "messaging.destination.partition.id")}
               for o, s in by_offset.items()}
    else:
        want = {None: {"messaging.batch.message_count": len(p.sent)}}
        got = {o: {"messaging.batch.message_count": s.attrs.get(
            "messaging.batch.message_count")} for o, s in by_offset.items()}
    if got != want:
        problems.append(f"the PRODUCER spans by offset: {got}, want {want}")
        return problems
    if not one_each:
        by_offset = {m["offset"]: producers[0] for m in p.sent}
    rest = [s for s in spans if s is not server and s not in producers]
    return problems + check_sarama_consumer(rest, by_offset, p, topic, group)


def check_sarama_consumer(spans, producers, p, topic, group):
    """What is wrong with the consumer's side of sarama produce P: SPANS are its trace's spans
    but the SERVER and the PRODUCER spans (PRODUCERS, by the offset of each record), the
    consumer kafkamix's ConsumerGroup in GROUP on TOPIC: a CONSUMER span `process <topic>` for
    each record, a child of its PRODUCER span, with its offset, partition and GROUP, and the
    consumer's GET inside it; the records the consumer read, each holding exactly one header,
    the traceparent naming its PRODUCER span."""
    consumers, clients = by_kind(spans, SPAN_KIND_CONSUMER, SPAN_KIND_CLIENT)
    if len(consumers) != len(p.sent) or len(clients) != len(p.sent):
        return [f"the consumer's side of the trace holds {[(s.name, s.kind) for s in spans]}, "
                f"want a CONSUMER span and its CLIENT GET for each of {len(p.sent)} records"]
    problems = []
    consumers.sort(key=lambda s: s.attrs.get("messaging.kafka.offset", -1))
    for consumer, m in zip(consumers, sorted(p.sent, key=lambda m: m["offset"])):
        problems += messaging_problems(consumer, "process", topic)
        if consumer.parent_span_id != producers[m["offset"]].span_id:
            problems.append(f"{consumer.name!r}: parent {consumer.parent_span_id.hex()}, want "
                            f"{producers[m['offset']].span_id.hex()}")
        client = [c for c in clients if c.parent_span_id == consumer.span_id]
        if len(client) != 1 or not (consumer.start_ns <= client[0].start_ns <=
                                    client[0].end_ns <= consumer.end_ns):
            problems.append(f"{consumer.name!r}: not one CLIENT GET inside it: {client}")
        got = {k: consumer.attrs.get(k) for k in (
            "messaging.kafka.offset", "messaging.destination.partition.id",
            "messaging.consumer.group.name")}
        want = {"messaging.kafka.offset": m["offset"],
                "messaging.destination.partition.id": str(m["partition"]),
                "messaging.consumer.group.name": group}
        if got != want:
            problems.append(f"{consumer.name!r}: {got}, want {want}")
    return problems + record_problems(p, producers)


# client id -> (the produces of a cell's run, (messages, key, mode) each; the spans each one's
# trace must have; the check of its trace).
RUNS = {
    "kafkago": (((1, None, "sync"),), lambda p: 4, check_kafkago),
    "sarama": (((1, None, "sync"), (2, "k", "sync"), (2, None, "async")),
               lambda p: 1 + 3 * len(p.sent) if p.mode == "async" else 2 + 2 * len(p.sent),
               check_sarama),
}


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


def produce(svc, path, mode, where):
    """POSTs PATH (a produce in MODE) to SVC under a traceparent of its own and waits until the
    consumer has read what it sent: a Produce."""
    before = len(consumed(svc))
    trace_id, parent, req = traced_get(svc.port, path, where=f"{where}: POST ", method="POST")
    sent = json.loads(req.got_body)["messages"]
    return Produce(trace_id, parent, sent, wait_consumed(svc, before + len(sent), where)[before:],
                   mode)


def run_cell(cell, build, broker, topic, start_gospan, receiver, downstream):
    """Runs CELL on TOPIC once its build is done; raises what failed."""
    client = kafka_matrix.client(cell)
    sends, spans_per_trace, check = RUNS[client.ID]
    where = kafka_matrix.cell_id(cell)
    with RESULTS[client.ID].record(cell) as rec:
        binary, built = build.result()
        rec.update(toolchain=built["toolchain"])
        group = f"gospan-{where}-{secrets.token_hex(3)}"
        svc = Service(binary, env=_clean_env(), args=(
            "-brokers", broker.bootstrap, "-consume", topic, "-client", client.ID,
            "-group", group, "-downstream", downstream))
        try:
            g = start_gospan(svc.pid, receiver)
            source, steps = client.read_attach(cell, g.wait_attached(), built)
            rec.update(source=source, steps=steps)
            if client.ID == "sarama":
                # the group joined again: its claims begin with gospan attached (one begun
                # before would hand its first message or two over unseen)
                rejoin(svc)
            # the warm-up: the read waiting since before the attach takes this message
            post(svc, produce_path(topic, client=client.ID), where)
            wait_consumed(svc, 1, where)
            done = [produce(svc, produce_path(topic, n=n, key=key, mode=mode, client=client.ID),
                            mode, where)
                    for n, key, mode in sends]
            spans = traces(receiver, [(p.trace_id, spans_per_trace(p)) for p in done], g, where)
            g.stop_cleanly()
        finally:
            svc.stop()
        problems = [line for p in done for line in check(spans[p.trace_id], p, topic, group)]
        assert not problems, f"{where}: " + "; ".join(problems)
        summary = g.summary_line() or ""
        assert " dropped 0;" in summary and " in flight 0," in summary, f"{where}: {summary}"
        k = kafka_counters(summary)
        records = 1 + sum(len(p.sent) for p in done)
        assert k["given"] >= records and not any(v for n, v in k.items() if n != "given"), (
            f"{where}: {records} records sent, {k}")
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
    """CELL as a parameter: a strict xfail where its client's FINDINGS say why it fails (its
    record, and the page, still say FAILED; a cell that passes again fails the test, so the
    finding goes once gospan is fixed)."""
    why = kafka_matrix.client(cell).finding(cell)
    if not why:
        return cell
    return pytest.param(cell, marks=pytest.mark.xfail(
        reason=f"{why.split(' (')[0]} (kafka_matrix FINDINGS)", strict=True))


@pytest.mark.parametrize("cell", [marked(c) for c in CASES],
                         ids=[kafka_matrix.cell_id(c) for c in CASES])
def test_kafka_version_is_traced(cell, runs):
    runs[cell].result()


@pytest.fixture(scope="module", autouse=True)
def _write_compatibility():
    """Each client's section of COMPATIBILITY.md, when its cells all ran (matrix's
    write_compatibility, whose time is the module's)."""
    writers = [matrix.write_compatibility(c, RESULTS[c.ID], [x for x in CASES if x[0] == c.ID],
                                          "kafkamix-*") for c in TESTED]
    for w in writers:
        next(w)
    yield
    for w in writers:
        next(w, None)
