"""The Kafka harness itself, without gospan: the broker kafka.py runs and kafkamix's three
clients must do what their READMEs say, or a Kafka tracing test failing could be their fault.

- The broker answers on its bootstrap port, lists itself, and logs to its file, not the console.
- Each client (kafka-go, sarama, franz-go) makes a topic through its admin API (the broker's
  own Metadata shows its partitions; making it again fails), and produces sync and async, one
  message and a batch in one call, keyed and not, with headers (a traceparent, UTF-8, an empty
  value) and a big value: every answer names each message's topic, partition and offset, and
  the offsets of a one-partition topic follow the calls' order with no gap; a keyed batch on a
  three-partition topic lands in one partition, its offsets consecutive.
- A kafkamix consumer per consumer path (kafka-go ReadMessage and FetchMessage, sarama's
  ConsumerGroup, franz-go PollFetches, per record and per poll, and PollRecords) reads every
  message back exactly once, key, value and headers byte-identical to what was sent, and calls
  the downstream URL once per message it processed (once per poll with -batch) with its topic,
  partition and offset.
- A produce to a topic that does not exist fails within 5 s, for each client and mode.
- With the broker stopped every client's produce fails within 15 s; started again on the same
  ports and data, every client produces again, the offsets going on from where they were.

No BPF and no root needed. One broker for the session (kafka_broker); about 31 s with the broker
fetched and kafkamix built, its start and restart (6 and 5 s) and franz-go's 5 s delivery
timeout with the broker stopped the largest parts.
"""

import http.client
import json
import re
import secrets
import shutil
import threading
import time
import urllib.parse
from concurrent.futures import ThreadPoolExecutor
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from conftest import Service, _clean_env, wait_until
from kafka import (EVERY_CLIENT, START_TIMEOUT, BuildError, api_versions, build_kafkamix,
                   metadata)

CLIENTS = ["kafkago", "sarama", "franz"]
# (client, extra flags) of each consumer path.
CONSUMERS = [("kafkago", ()), ("kafkago", ("-fetch",)), ("sarama", ()), ("franz", ()),
             ("franz", ("-batch",)), ("franz", ("-records",))]
UNKNOWN_TOPIC = re.compile(r"(?i)unknown.topic|does not exist")
ALREADY_EXISTS = re.compile(r"(?i)already exists")
VALUE = re.compile(r"^m-(\d+)-[0-9a-f]{16}")
UNKNOWN_TOPIC_BOUND = 5.0
BROKER_AWAY_BOUND = 15.0
CONSUME_TIMEOUT = 45.0
KAFKAGO_METADATA_TTL = 1.0
BIG = 200_000
# Each client's produce calls on the one-partition topic, in order: (mode, n, key, size). "offer"
# is sarama's select beside an always-ready case (the rest through its SyncProducer); the other
# clients take it as async.
CALLS = [("sync", 1, "k1", None), ("sync", 4, "k4", None), ("async", 1, "a1", None),
         ("async", 4, None, None), ("sync", 1, "big", BIG), ("offer", 6, "o6", None)]
HEADERS = [("traceparent", "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"),
           ("x-utf8", "é\u00a0ü"), ("x-empty", "")]


@pytest.fixture(scope="session", autouse=True)
def _e2e_prerequisites():
    """Overrides conftest's: no gospan runs here, so neither root nor BPF is needed."""


@pytest.fixture(scope="module")
def kafkamix_bin():
    if shutil.which("go") is None:
        pytest.skip("Go is not installed; it is needed to build kafkamix")
    try:
        return build_kafkamix(**EVERY_CLIENT)
    except BuildError as e:
        pytest.fail(str(e))


def request(svc, method, path, timeout=60.0):
    """(status, body without its final newline, seconds) of one request on its own
    connection."""
    c = http.client.HTTPConnection(svc.host, svc.port, timeout=timeout)
    t0 = time.monotonic()
    try:
        c.request(method, path, headers={"Connection": "close"})
        resp = c.getresponse()
        body = resp.read().decode().removesuffix("\n")
        return resp.status, body, time.monotonic() - t0
    finally:
        c.close()


def produce(svc, client, topic, mode="sync", n=1, key=None, size=None, headers=()):
    q = [("topic", topic), ("mode", mode), ("n", n)]
    if key is not None:
        q.append(("key", key))
    if size:
        q.append(("size", size))
    q += [("header", f"{k}:{v}") for k, v in headers]
    return request(svc, "POST", f"/{client}/produce?{urllib.parse.urlencode(q)}")


def ok_json(status, body, what):
    assert status == 200, f"{what}: {status} {body}"
    return json.loads(body)


@pytest.fixture(scope="module")
def producer(kafkamix_bin, kafka_broker):
    svc = Service(kafkamix_bin, env=_clean_env(), args=("-brokers", kafka_broker.bootstrap))
    yield svc
    assert svc.stop() == 0, f"kafkamix exited badly:\n{svc.err.text}"


@pytest.fixture(scope="module")
def topics(kafka_broker):
    """(one-partition topic, three-partition topic), made through the broker's protocol."""
    tag = secrets.token_hex(3)
    one, three = f"harness-{tag}", f"harness-keyed-{tag}"
    kafka_broker.create_topics(one, f"{three}:3")
    # kafka-go's writer knows topics from its transport's metadata cache, refreshed at a random
    # moment within MetadataTTL (1 s in kafkamix): until then it says a new topic is unknown.
    time.sleep(KAFKAGO_METADATA_TTL)
    return one, three


@pytest.fixture(scope="module")
def sent(producer, topics):
    """Every produce call made, in order: dicts with client, topic, mode, key, n, the answer's
    status and body, and the messages it named. Each client makes CALLS on the one-partition
    topic and a keyed batch of 6 on the three-partition one."""
    one, three = topics
    calls = []
    for client in CLIENTS:
        for mode, n, key, size in CALLS:
            status, body, secs = produce(producer, client, one, mode, n, key, size, HEADERS)
            calls.append(dict(client=client, topic=one, mode=mode, n=n, key=key, size=size,
                              status=status, body=body, seconds=secs))
        status, body, secs = produce(producer, client, three, "sync", 6, f"keyed-{client}",
                                     headers=HEADERS)
        calls.append(dict(client=client, topic=three, mode="sync", n=6, key=f"keyed-{client}",
                          size=None, status=status, body=body, seconds=secs))
    for c in calls:
        c["messages"] = json.loads(c["body"])["messages"] if c["status"] == 200 else None
    return calls


def sent_messages(sent):
    """Every message the calls of SENT produced, a call's in the order the broker took them
    (sarama's offer sends some through its AsyncProducer first, the rest after); fails the test
    if a call failed."""
    bad = [c for c in sent if c["status"] != 200]
    assert not bad, f"produce calls failed: {bad}"
    return [m for c in sent for m in sorted(c["messages"], key=lambda m: m["offset"])]


# ---- the broker ---------------------------------------------------------------------------------


def test_broker_answers(kafka_broker):
    versions = api_versions(kafka_broker.addr)
    assert {0, 1, 3, 18, 19} <= set(versions), versions
    brokers, _ = metadata(kafka_broker.addr, [])
    assert brokers == [(1, "127.0.0.1", kafka_broker.port)]
    assert kafka_broker.start_seconds < START_TIMEOUT
    log = kafka_broker.log_path.read_text(errors="replace")
    assert "Kafka Server started" in log
    # Everything went to broker.log: the console has at most the storage tool's lines.
    console = kafka_broker.console_path.read_text(errors="replace")
    assert not re.search(r"\] (INFO|WARN|DEBUG) ", console), console[-2000:]
    print(f"broker {kafka_broker.bootstrap} started in {kafka_broker.start_seconds:.1f} s")


# ---- topics -------------------------------------------------------------------------------------


@pytest.mark.parametrize("client", CLIENTS)
def test_topic_made_by_client(producer, kafka_broker, client):
    name = f"made-by-{client}-{secrets.token_hex(3)}"
    status, body, _ = request(producer, "POST", f"/{client}/topics?name={name}&partitions=3")
    assert (status, body) == (200, f"created {name} (3 partitions)")
    # The broker answers CreateTopics once its controller made the topic; its own metadata
    # follows a moment later.
    assert wait_until(lambda: metadata(kafka_broker.addr, [name])[1][name] ==
                      (0, {0: 1, 1: 1, 2: 1}), 10.0), metadata(kafka_broker.addr, [name])
    # The client that made it produces to it at once (kafka-go refreshes its metadata cache
    # after CreateTopics).
    got = ok_json(*produce(producer, client, name, n=3, key="k")[:2], f"produce to {name}")
    assert [m["topic"] for m in got["messages"]] == [name] * 3
    status, body, _ = request(producer, "POST", f"/{client}/topics?name={name}&partitions=3")
    assert status == 500 and ALREADY_EXISTS.search(body), (status, body)
    status, body, _ = request(producer, "POST", f"/{client}/topics?partitions=3")
    assert (status, body) == (400, "topics: name= is missing")
    status, body, _ = request(producer, "GET", f"/{client}/topics?name={name}")
    assert status == 405, (status, body)


def test_client_not_built_in_is_404(producer):
    status, _, _ = request(producer, "POST", "/confluent/produce?topic=x")
    assert status == 404


# ---- producing ----------------------------------------------------------------------------------


@pytest.mark.parametrize("client", CLIENTS)
def test_produce_answers(sent, topics, client):
    one, three = topics
    mine = [c for c in sent if c["client"] == client]
    assert [c["status"] for c in mine] == [200] * len(mine), \
        [(c["topic"], c["mode"], c["n"], c["status"], c["body"][:300]) for c in mine]
    for c in mine:
        msgs = c["messages"]
        assert len(msgs) == c["n"], c
        for i, m in enumerate(msgs):
            assert m["topic"] == c["topic"] and m["key"] == c["key"], (c, m)
            v = VALUE.match(m["value"])
            assert v and int(v.group(1)) == i, m
            assert len(m["value"]) == (c["size"] or len(v.group(0))), (c["size"], len(m["value"]))
            assert isinstance(m["partition"], int) and isinstance(m["offset"], int), m
            # sarama's offer says which way each message went; no other answer has "via"
            assert m.get("via") in (("async", "sync") if client == "sarama" and
                                    c["mode"] == "offer" else (None,)), (c["mode"], m)
        if c["topic"] == three:
            # One key: one partition, the batch's offsets consecutive in the order given.
            assert len({m["partition"] for m in msgs}) == 1, msgs
            offs = [m["offset"] for m in msgs]
            assert offs == list(range(offs[0], offs[0] + len(offs))), offs
        else:
            assert {m["partition"] for m in msgs} == {0}, msgs


def test_offsets_follow_the_calls(sent, topics):
    """On the one-partition topic every message of every client has the next offset, in the
    order the calls were made (each call answered before the next was made)."""
    one, _ = topics
    msgs = [m for m in sent_messages(sent) if m["topic"] == one]
    assert [m["offset"] for m in msgs] == list(range(len(msgs)))
    assert len({m["value"] for m in sent_messages(sent)}) == len(sent_messages(sent))


def test_produce_timing(sent):
    """Sync calls are not held back by batching delays (kafka-go's default waits 1 s)."""
    slow = [(c["client"], c["mode"], c["n"], round(c["seconds"], 2)) for c in sent
            if c["seconds"] > 2.0]
    assert not slow, f"produce calls slower than 2 s: {slow}"


@pytest.mark.parametrize("mode", ["sync", "async"])
@pytest.mark.parametrize("client", CLIENTS)
def test_unknown_topic_fails_quickly(producer, client, mode):
    status, body, secs = produce(producer, client, f"missing-{secrets.token_hex(4)}", mode, 2)
    assert status == 500 and UNKNOWN_TOPIC.search(body), (status, body)
    assert secs < UNKNOWN_TOPIC_BOUND, f"{client} {mode}: failed after {secs:.1f} s: {body}"


def test_bad_requests(producer):
    for path, want in [("/franz/produce?n=1", "produce: topic= is missing"),
                       ("/franz/produce?topic=t&n=0", 'produce: n="0" is not a number from 1 '
                                                      'to 10000'),
                       ("/franz/produce?topic=t&mode=later", 'produce: mode="later" is '
                                                             'not sync, async or offer'),
                       ("/franz/produce?topic=t&header=novalue",
                        'produce: header="novalue" is not NAME:VALUE'),
                       ("/franz/produce?topic=t&size=5", "produce: size=5 is shorter than")]:
        status, body, _ = request(producer, "POST", path)
        assert status == 400 and body.startswith(want), (path, status, body)
    assert request(producer, "GET", "/franz/produce?topic=t")[0] == 405
    assert request(producer, "GET", "/health")[:2] == (200, "ok")
    assert request(producer, "GET", "/consumed")[:2] == (
        400, "consumed: no consumer runs (no -consume)")


# ---- consuming ----------------------------------------------------------------------------------


class Downstream:
    """Records the query of every GET it is sent."""

    def __init__(self):
        self.queries = []
        self._lock = threading.Lock()
        rec = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, fmt, *args):
                pass

            def do_GET(self):
                q = urllib.parse.parse_qs(urllib.parse.urlsplit(self.path).query)
                with rec._lock:
                    rec.queries.append({k: v[0] for k, v in q.items()})
                self.send_response(204)
                self.end_headers()

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}/processed"
        threading.Thread(target=self._server.serve_forever, daemon=True).start()

    def snapshot(self):
        with self._lock:
            return list(self.queries)

    def close(self):
        self._server.shutdown()
        self._server.server_close()


@pytest.fixture
def downstream():
    d = Downstream()
    yield d
    d.close()


def consumed(svc):
    status, body, _ = request(svc, "GET", "/consumed")
    return ok_json(status, body, "GET /consumed")


@pytest.mark.parametrize("client,flags", CONSUMERS,
                         ids=[c + "".join(f) for c, f in CONSUMERS])
def test_consumer_reads_every_message(kafkamix_bin, kafka_broker, sent, topics, downstream,
                                      client, flags):
    expected = {(m["topic"], m["partition"], m["offset"]): m for m in sent_messages(sent)}
    headers = [{"name": k, "value": v.encode().hex()} for k, v in HEADERS]
    group = f"harness-{client}{''.join(flags)}-{secrets.token_hex(3)}"
    t0 = time.monotonic()
    svc = Service(kafkamix_bin, env=_clean_env(),
                  args=("-brokers", kafka_broker.bootstrap, "-group", group,
                        "-consume", ",".join(topics), "-client", client,
                        "-downstream", downstream.url, *flags))
    try:
        done = wait_until(lambda: len(consumed(svc)["messages"]) >= len(expected),
                          CONSUME_TIMEOUT, 0.2)
        secs = time.monotonic() - t0
        got = consumed(svc)
    finally:
        status = svc.stop()
    assert done, (f"{client}{flags}: {len(got['messages'])} of {len(expected)} messages in "
                  f"{CONSUME_TIMEOUT:.0f} s; errors {got['errors'][:5]}\n{svc.err.text}")
    assert status == 0, f"kafkamix exited with status {status}:\n{svc.err.text}"
    msgs = got["messages"]
    keys = [(m["topic"], m["partition"], m["offset"]) for m in msgs]
    assert len(keys) == len(set(keys)) == len(expected), "a message read twice"
    assert set(keys) == set(expected)
    for m in msgs:
        want = expected[(m["topic"], m["partition"], m["offset"])]
        assert m["client"] == client
        assert m["value"] == want["value"].encode().hex(), (m, want)
        assert m["key"] == (None if want["key"] is None else want["key"].encode().hex()), m
        assert m["headers"] == headers, m
    # Within a partition, messages are processed in offset order.
    for part in {k[:2] for k in keys}:
        offs = [m["offset"] for m in msgs if (m["topic"], m["partition"]) == part]
        assert offs == sorted(offs), (part, offs)

    calls = downstream.snapshot()
    if "-batch" in flags:
        batches = {}
        for m in msgs:
            batches.setdefault(m["batch"], []).append(m)
        assert len(calls) == len(batches) < len(msgs), "no poll gave more than one record"
        for q in calls:
            first = min((b for b in batches.values() if b[0]["topic"] == q["topic"]
                         and b[0]["partition"] == int(q["partition"])
                         and b[0]["offset"] == int(q["offset"])), key=len, default=None)
            assert first is not None, q
            assert int(q.get("count", 1)) == len(first), (q, len(first))
    else:
        assert sorted((q["topic"], int(q["partition"]), int(q["offset"])) for q in calls) == \
            sorted(keys)
        assert {m["downstream"] for m in msgs} == {204}
        assert len({m["batch"] for m in msgs}) == len(msgs)
    print(f"{client}{''.join(flags)}: {len(msgs)} messages consumed {secs:.1f} s after start"
          f", errors {got['errors']}")


# ---- the broker going away and coming back (last: it restarts the session's broker) ------------


def test_broker_stop_and_restart(producer, kafka_broker, topics):
    one, _ = topics
    before = ok_json(*produce(producer, "franz", one)[:2], "produce before the stop")
    last = before["messages"][0]["offset"]

    t0 = time.monotonic()
    kafka_broker.stop()
    stopped = time.monotonic() - t0
    cases = [(c, m) for c in CLIENTS for m in ("sync", "async")]
    with ThreadPoolExecutor(len(cases)) as pool:
        down = dict(zip(cases, pool.map(lambda cm: produce(producer, cm[0], one, cm[1]),
                                        cases)))
    for (client, mode), (status, body, secs) in down.items():
        assert status == 500, f"{client} {mode} with the broker stopped: {status} {body}"
        assert secs < BROKER_AWAY_BOUND, f"{client} {mode}: failed after {secs:.1f} s: {body}"

    kafka_broker.start()
    assert kafka_broker.port == int(kafka_broker.bootstrap.rsplit(":", 1)[1])
    offsets = []
    for client, mode in cases:
        # The clients find the broker again on their own; give each a few tries.
        deadline = time.monotonic() + 30.0
        while True:
            status, body, secs = produce(producer, client, one, mode)
            if status == 200 or time.monotonic() > deadline:
                break
            time.sleep(0.5)
        assert status == 200, f"{client} {mode} after the restart: {status} {body}"
        offsets.append(json.loads(body)["messages"][0]["offset"])
    # The data survived: the topic's offsets go on after the last one written before the stop.
    assert offsets == list(range(last + 1, last + 1 + len(cases))), (last, offsets)
    print(f"stop {stopped:.1f} s, restart {kafka_broker.start_seconds:.1f} s; produce with "
          f"the broker away failed after " + ", ".join(
              f"{c} {m} {r[2]:.1f} s" for (c, m), r in down.items()))
