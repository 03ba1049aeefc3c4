"""`make demo` keeps working: examples/demo.sh is run as a user would, with a short load, and what
it prints is checked. Four services are traced, one gospan each: the frontend calls the backend
over HTTP and looks items up in the inventory over gRPC; the backend reads each item from a Redis
cache, on a miss from PostgreSQL, both started by the demo, and publishes an order per item read
to the Kafka topic orders (a broker the demo starts); the consumer processes each order, asking
the inventory for the item's stock over gRPC. With Jaeger the demo must show the frontend's
traces read back from Jaeger as trees, the backend's and the inventory's spans in those same
traces under the CLIENT span that called them (where no context can go out, in traces of their
own, saying why), the backend's data store calls as CLIENT spans under its SERVER spans, each
order through Kafka in the same trace (the backend's PRODUCER span under its SERVER span, the
consumer's CONSUMER span under that, the consumer's stock check under that and the inventory's
SERVER span under the check), every gospan's summary with every span exported, a last word
saying every request is one trace across the four services with every hop, the orders and the
data store calls counted, then the RED metrics
each gospan printed at exit (OTEL_METRICS_EXPORTER=console): a table per service whose rows count
exactly the calls made, route by route, errors included (the frontend's requests are the ones
loadgen sent), columns aligned, and each gospan's spans exported; and leave nothing running,
PostgreSQL's and Kafka's files removed. Without Jaeger (GOSPAN_DEMO_JAEGER=0) the gospans print
the spans, and the traces are matched by id. On a terminal it keeps everything running with the
load going until Ctrl-C, which must stop it all the same way, show the tables of the whole run,
and exit 0. Where PostgreSQL, Redis or Java is missing the demo says what, and how to get it,
before it starts anything; and `jaeger.py show`, which the demo's check relies on, fails when
the backend's data store spans are missing or out of place, and does not count a trace joined
when a message in it was not processed in it, every parent link exact.
"""

import json
import os
import pty
import re
import select
import socket
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, urlparse

import pytest

from conftest import BUILD, REPO
from jaeger import SHOW_DATASTORES_WRONG, jaeger_bin  # noqa: F401 (fixture)
from test_distributed import NO_PROPAGATION

DEMO = REPO / "examples" / "demo.sh"
JAEGER_PY = REPO / "tests" / "e2e" / "jaeger.py"
REQUESTS = 8  # two rounds of /direct, /spawn, /both, /backend-fail
BACKEND_CALLS = 10  # /both calls the backend twice, the others once
LOOKUPS = 6  # /direct, /spawn and /both look their item up in the inventory, /backend-fail not
RUN_TIMEOUT = 300  # building the five Go programs the first time included
OPS = ("GET /direct/{id}", "GET /spawn/{id}", "GET /both/{id}", "GET /backend-fail")
LOOKING_UP = OPS[:3]
RPC = "inventory.v1.Inventory/GetItem"  # examples/inventory/inventorypb/inventory.proto
SERVICES = ("frontend", "backend", "inventory", "consumer")
FRONTEND_SPANS = REQUESTS + BACKEND_CALLS + LOOKUPS  # a SERVER span each, a CLIENT span per call
ITEM_REQUESTS = 6  # the requests to /direct, /spawn and /both: the backend reads their items
ITEM_READS = 8  # each /work/{id} call reads its item: /both's two calls, no read for /fail
MISSES = 3  # the first read of items 1, 2 and 3: the cache keeps them longer than the demo runs
DB_CALLS = ITEM_READS + 2 * MISSES  # a Redis GET per read, a SELECT and a SET per miss
ORDERS = ITEM_READS  # each /work/{id} call publishes an order to Kafka
ORDERING = ITEM_REQUESTS  # the requests whose traces go through Kafka
# A SERVER span per call, a CLIENT span per data call, a PRODUCER span per order.
BACKEND_SPANS = BACKEND_CALLS + DB_CALLS + ORDERS
INVENTORY_SPANS = LOOKUPS + ORDERS  # the frontend's lookups, the consumer's stock checks
CONSUMER_SPANS = 2 * ORDERS  # a CONSUMER span per order, a CLIENT span (its stock check) under it
TOPIC = "orders"
DATASTORE_VERDICT = (
    "demo: the backend read each item from the Redis cache, and on a miss from PostgreSQL, then\n"
    "demo:   filled the cache: one CLIENT span per call, the child of the backend's SERVER span:\n"
    f"demo:   backend SERVER -> backend CLIENT (redis GET): {ITEM_READS} calls, one per item "
    f"read\n"
    f"demo:   backend SERVER -> backend CLIENT (postgresql SELECT items): {MISSES} calls, one per "
    f"miss\n"
    f"demo:   backend SERVER -> backend CLIENT (redis SET): {MISSES} calls, one per miss\n")
KAFKA_VERDICT = (
    "demo: every order went through Kafka in the trace of the request that made it, read back\n"
    f"demo:   from Jaeger, every parent link exact ({ORDERS} orders, of the {ORDERING} requests "
    f"that read an item):\n"
    "demo:   frontend SERVER -> frontend CLIENT (HTTP GET) -> backend SERVER\n"
    f"demo:     -> backend PRODUCER (send {TOPIC}) -> consumer CONSUMER (process {TOPIC}): "
    f"{ORDERS} messages, in {ORDERING} traces\n"
    f"demo:     -> consumer CLIENT (gRPC {RPC}) -> inventory SERVER: {ORDERS} calls, in "
    f"{ORDERING} traces\n"
    "demo:   gospan put each PRODUCER span's traceparent into its record at the socket layer (a\n"
    "demo:   record header, the batch's CRC made right); the CONSUMER span continues it\n")


def demo_env(**extra):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "GOSPAN_DEMO_"))}
    env.update(GOSPAN_BUILD=str(BUILD), GOSPAN_DEMO_REQUESTS=str(REQUESTS),
               GOSPAN_DEMO_INTERVAL="50ms", GOSPAN_DEMO_KEEP="0")
    env.update(extra)
    return env


def run_demo(env):
    """Runs the demo with stdout a pipe (not a terminal); its exit status and output."""
    res = subprocess.run([str(DEMO)], env=env, stdin=subprocess.DEVNULL, capture_output=True,
                         text=True, timeout=RUN_TIMEOUT)
    return res.returncode, res.stdout + res.stderr


def pids_started(out):
    """The pids the demo says it started: the services, the gospans, the data stores, the Kafka
    broker's wrapper and Jaeger's."""
    return [int(p) for p in re.findall(r"^demo: [\w ]+: pid (\d+)", out, re.M)]


def assert_all_stopped(out):
    pids = pids_started(out)
    # Four services, four gospans, PostgreSQL, Redis and Kafka's wrapper (and Jaeger's).
    assert len(pids) >= 11, out
    for pid in pids:
        assert not os.path.exists(f"/proc/{pid}"), f"pid {pid} still runs after the demo\n{out}"


def datastores(out):
    """The Redis and PostgreSQL addresses the demo says it started, (redis, postgresql)."""
    pg = re.search(r"^demo: PostgreSQL: pid \d+, (127\.0\.0\.1:\d+), postgres \(PostgreSQL\) .*, "
                   r"run as postgres in (/tmp/gospan-demo-pg\.\w+)$", out, re.M)
    assert pg, out
    m = re.search(r"^demo: Redis: pid \d+, (127\.0\.0\.1:\d+), Redis server v=\S+, persisting "
                  r"nothing$", out, re.M)
    assert m, out
    assert "demo:   reads items from PostgreSQL through the Redis cache" in out, out
    return m.group(1), pg.group(1)


def assert_datastores_gone(out):
    m = re.search(r"run as postgres in (/tmp/gospan-demo-pg\.\w+)$", out, re.M)
    assert m and not os.path.exists(m.group(1)), f"PostgreSQL's files are left\n{out}"


def kafka(out):
    """The Kafka broker's address the demo says it started; the consumer's start checked."""
    m = re.search(r"^demo: Kafka: pid \d+, (127\.0\.0\.1:\d+), Apache Kafka \d+\.\d+\.\d+ "
                  rf"\(KRaft, one node, tests/e2e/kafka\.py\), the topic '{TOPIC}' made, one "
                  r"partition$", out, re.M)
    assert m, out
    assert f"demo:   publishes an order event per item read to the topic '{TOPIC}'" in out, out
    assert re.search(rf"^demo: consumer: pid \d+, '{TOPIC}' at {re.escape(m.group(1))} as the "
                     r"group 'order-processor', asks the inventory for each order's stock "
                     r"\(OTEL_SERVICE_NAME=consumer\)$", out, re.M), out
    return m.group(1)


def assert_summaries(out):
    for svc, n in (("frontend", FRONTEND_SPANS), ("backend", BACKEND_SPANS),
                   ("inventory", INVENTORY_SPANS), ("consumer", CONSUMER_SPANS)):
        m = re.search(rf"^demo: gospan on {svc}, exit status 0:\n\s+(gospan: summary: .*)$", out,
                      re.M)
        assert m, f"no summary of the gospan on {svc}:\n{out}"
        assert f"spans captured {n}, exported {n}, dropped 0;" in m.group(1), out


def tree_of(lines, op):
    """The lines of the tree `jaeger.py show` printed for frontend's OP, as (depth, text) pairs,
    the root first at depth 0."""
    i = next((i for i, line in enumerate(lines)
              if re.match(rf"\s+frontend  server  {re.escape(op)}\s", line)), None)
    assert i is not None, f"no trace of frontend's '{op}' shown"
    assert lines[i - 1].lstrip().startswith("trace "), lines[i - 1]
    base = len(lines[i]) - len(lines[i].lstrip())
    tree = []
    for line in lines[i:]:
        depth, rest = divmod(len(line) - len(line.lstrip()) - base, 2)
        if tree and (depth <= 0 or rest):  # the next trace, or whatever follows the last one
            break
        tree.append((depth, line.strip()))
    return tree


def under(tree, i):
    """The indexes in TREE of the spans right under TREE[i] (the next depth down, until the
    depth comes back to TREE[i]'s or above)."""
    depth, found = tree[i][0], []
    for j in range(i + 1, len(tree)):
        if tree[j][0] <= depth:
            break
        if tree[j][0] == depth + 1:
            found.append(j)
    return found


def children(tree, i):
    """The texts of the spans right under TREE[i]."""
    return [tree[j][1] for j in under(tree, i)]


def check_order(tree, i, broker, inventory_addr):
    """TREE[i], a backend PRODUCER span, sent an order that went through Kafka as it must: the
    consumer's CONSUMER span right under it, the consumer's stock check (a gRPC CLIENT span)
    under that, and the inventory's SERVER span of the check under the check."""
    assert re.fullmatch(rf"backend  producer  send {TOPIC}\s+-\s+[\d.]+ ms  kafka "
                        rf"{re.escape(broker)}", tree[i][1]), tree[i]
    (c,) = under(tree, i)
    assert re.fullmatch(rf"consumer  consumer  process {TOPIC}\s+-\s+[\d.]+ ms  kafka "
                        rf"{re.escape(broker)} partition 0 offset \d+", tree[c][1]), tree[c]
    (call,) = under(tree, c)
    assert re.fullmatch(rf"consumer  client  {RPC}\s+OK\s+[\d.]+ ms  "
                        rf"{re.escape(inventory_addr)}", tree[call][1]), tree[call]
    (served,) = under(tree, call)
    assert re.match(rf"inventory  server  {RPC}\s+OK\s", tree[served][1]), tree[served]
    assert not under(tree, served), tree


def data_calls(texts, stores):
    """The names of the backend data store CLIENT spans among TEXTS, each line checked: no
    status, the system, and the server's address (STORES: datastores())."""
    redis_addr, pg_addr = stores
    names = []
    for text in texts:
        m = re.fullmatch(r"backend  client  (GET|SET|SELECT items)\s+-\s+[\d.]+ ms  (.*)", text)
        assert m, text
        where = f"postgresql {pg_addr}" if m.group(1) == "SELECT items" else f"redis {redis_addr}"
        assert m.group(2) == where, text
        names.append(m.group(1))
    return names


MISS, HIT = ["GET", "SELECT items", "SET"], ["GET"]


def check_traces(out, inventory_addr, stores, broker):
    """The trees `jaeger.py show` printed, against what REQUESTS requests must give."""
    lines = out.splitlines()
    assert "the fullest trace of each frontend operation, the most spans and the latest of " \
           "those" in out, out
    for op in OPS:
        tree = tree_of(lines, op)
        # The calls, each indented under the request that made it, the lookup first.
        calls = [text for depth, text in tree if depth == 1]
        want = [f"frontend  client  {RPC}"] if op in LOOKING_UP else []
        want += ["frontend  client  GET"] * (2 if op == "GET /both/{id}" else 1)
        assert [c[:len(w)] for c, w in zip(calls, want)] == want and len(calls) == len(want), \
            f"{op}: {tree}\n{out}"
        if op in LOOKING_UP:
            rpc = next(text for depth, text in tree if depth == 1 and RPC in text)
            assert re.fullmatch(rf"frontend  client  {RPC}\s+OK\s+[\d.]+ ms  "
                                rf"{re.escape(inventory_addr)}", rpc), f"{op}: {rpc}\n{out}"
        if NO_PROPAGATION:
            assert all(depth < 2 for depth, _ in tree), f"{op}: {tree}\n{out}"
            continue
        # Under each call, the SERVER span of the service it reached.
        for (d, text), (d_next, text_next) in zip(tree, tree[1:] + [(0, "")]):
            if d != 1:
                continue
            assert d_next == 2, f"{op}: nothing under '{text}'\n{out}"
            if RPC in text:
                assert re.match(rf"inventory  server  {RPC}\s+OK\s", text_next), out
            else:
                assert re.match(r"backend  server  GET /(work/\{id\}|fail)\s", text_next), out
        # Under each backend SERVER span, its data store calls: the fullest trace of an item
        # route is the one whose reads missed the cache (/both: one of its two calls, the other
        # waits for it and hits). After them, the order it published, through Kafka.
        reads = []
        for i in (i for i, (d, text) in enumerate(tree)
                  if d == 2 and text.startswith("backend  server  ")):
            kids = under(tree, i)
            sends = [j for j in kids if tree[j][1].startswith("backend  producer  ")]
            reads.append(data_calls([tree[j][1] for j in kids if j not in sends], stores))
            if op == "GET /backend-fail":
                assert not sends, f"{op}: {tree}\n{out}"
                continue
            assert sends == kids[-1:], f"{op}: {tree}\n{out}"
            check_order(tree, sends[0], broker, inventory_addr)
        if op == "GET /backend-fail":
            assert reads == [[]], f"{op}: {tree}\n{out}"
        elif op == "GET /both/{id}":
            assert sorted(reads) == [HIT, MISS], f"{op}: {tree}\n{out}"
        else:
            assert reads == [MISS], f"{op}: {tree}\n{out}"
    assert re.search(r"frontend  server  GET /backend-fail\s+502 ERROR", out), out
    assert re.search(r"frontend  client  GET\s+500 ERROR\s.*/fail$", out, re.M), out
    m = re.search(r"traces in Jaeger: (\d+) with spans of frontend, (\d+) with spans of backend, "
                  r"(\d+) with spans of inventory, (\d+) with spans of consumer; (\d+) with spans "
                  r"of frontend and backend, (\d+) with spans of frontend and inventory, (\d+) "
                  r"with spans of frontend and consumer$", out, re.M)
    assert m, out
    fe, be, inv, con, fe_be, fe_inv, fe_con = map(int, m.groups())
    assert fe == REQUESTS, out
    # Where each backend call is a trace of its own, /both's two are two traces.
    get_traces = ITEM_READS if NO_PROPAGATION else ITEM_REQUESTS
    assert (f"    db backend -> redis GET: {ITEM_READS} calls, in {get_traces} traces\n"
            f"    db backend -> postgresql SELECT items: {MISSES} calls, in {MISSES} traces\n"
            f"    db backend -> redis SET: {MISSES} calls, in {MISSES} traces\n") in out, out
    assert "not under a SERVER or CONSUMER span" not in out, out
    tail = out[out.rindex("gospan: summary"):]
    assert DATASTORE_VERDICT in tail, out
    if NO_PROPAGATION:
        # Each order a trace of its own at the consumer, its stock check one at the inventory.
        assert (be, inv, con, fe_be, fe_inv, fe_con) == \
            (BACKEND_CALLS, LOOKUPS + ORDERS, ORDERS, 0, 0, 0), out
        assert "demo: the backend's and the inventory's spans start their own traces: gospan " \
               "could not" in out, out
        assert re.search(r"^\s+backend  server  GET /work/\{id\}\s+200 ", out, re.M), out
        assert re.search(r"^\s+backend  server  GET /fail\s+500 ERROR", out, re.M), out
        assert re.search(rf"^\s+inventory  server  {RPC}\s+OK ", out, re.M), out
        assert f"joined traces: 0 of {REQUESTS} frontend traces" in out, out
        # The backend's own traces: the fullest of GET /work/{id} missed the cache.
        m = re.search(r"^\s+backend  server  GET /work/\{id\}\s+200 .*\n((?:\s+backend  client  "
                      r".*\n)+)", out, re.M)
        assert m and data_calls([t.strip() for t in m.group(1).splitlines()], stores) == \
            MISS, out
        return
    # The consumer's stock checks are in the traces of the frontend's lookups.
    assert (be, inv, con, fe_be, fe_inv, fe_con) == \
        (REQUESTS, LOOKUPS, ORDERING, REQUESTS, LOOKUPS, ORDERING), out
    assert f"joined traces: {REQUESTS} of {REQUESTS} frontend traces are one trace" in out, out
    assert "every PRODUCER span the parent of the CONSUMER spans that processed its message" in \
        out, out
    # Each hop across, counted in the joined traces alone.
    assert (f"hop frontend -> backend, HTTP GET: {BACKEND_CALLS} calls, in {REQUESTS} of the "
            f"joined traces\n"
            f"    hop frontend -> inventory, gRPC {RPC}: {LOOKUPS} calls, in {LOOKUPS} of the "
            f"joined traces\n"
            f"    hop backend -> consumer, Kafka {TOPIC}: {ORDERS} messages, in {ORDERING} of the "
            f"joined traces\n"
            f"    hop consumer -> inventory, gRPC {RPC}: {ORDERS} calls, in {ORDERING} of the "
            f"joined traces\n") in out, out
    # The demo's last word, after the gospans' summaries.
    assert (f"demo: all {REQUESTS} frontend requests are one trace across the four services, "
            f"read back\ndemo:   from Jaeger (the {REQUESTS - LOOKUPS} to /backend-fail across "
            f"two: they look no item up), every parent link exact:\n"
            f"demo:   frontend SERVER -> frontend CLIENT (HTTP GET) -> backend SERVER: "
            f"{BACKEND_CALLS} calls, in {REQUESTS} traces\n"
            f"demo:   frontend SERVER -> frontend CLIENT (gRPC {RPC}) -> inventory SERVER: "
            f"{LOOKUPS} calls, in {LOOKUPS} traces\n"
            f"demo:   gospan put each CLIENT span's traceparent on the wire at the socket layer: "
            f"a header\ndemo:   of the HTTP/1 request, a field of the gRPC call's HEADERS frame\n"
            + DATASTORE_VERDICT + KAFKA_VERDICT) in tail, out


METRICS_INTRO = ("demo: the RED metrics of every call, sampled or not, as each gospan printed them "
                 "at exit\n")
HEAD = re.compile(r"KIND +OPERATION +REQUESTS +RATE/S +ERRORS +ERROR% +P50 ms +P90 ms +P99 ms")
# A row: the kind, the operation (single spaces inside), then the numbers, two spaces or more
# apart. ERRORS and ERROR% are '-' in the overflow row only, which the demo cannot reach.
ROW = re.compile(r"(\w+ \w+) +(\S+(?: \S+)*?)  +(\d+)  +(\d+\.\d\d)  +(\d+)  +(\d+\.\d%)  +"
                 r"(\d+\.\d{3})  +(\d+\.\d{3})  +(\d+\.\d{3})")


def metrics_tables(out):
    """The tables the demo shows last, as the gospans printed them at exit: ({service: (pid,
    seconds, {(kind, operation): (requests, rate, errors)})}, {gospan pid: (exported, lost)}).
    Each row checked on the way: aligned under its heading, its error share and percentiles
    consistent."""
    assert out.count(METRICS_INTRO) == 1, out
    lines = out[out.index(METRICS_INTRO):].splitlines()[2:]
    tables, spans, head, rows = {}, {}, None, None
    for line in lines:
        if not line:
            continue  # between tables
        if not line.startswith("    "):
            break  # the demo's next word
        text = line[4:]
        m = re.fullmatch(r"metrics of (\w+) \(pid (\d+)\) at exit, totals over (\d+\.\d) s:(.*)",
                         text)
        if m and m[1] == "gospan":
            sp = re.fullmatch(r" spans exported (\d+), lost (\d+)", m[4])
            assert sp, line
            spans[int(m[2])] = (int(sp[1]), int(sp[2]))
        elif m:
            assert not m[4] and m[1] not in tables, line
            rows = {}
            tables[m[1]] = (int(m[2]), float(m[3]), rows)
            head = None
        elif text and head is None:
            assert HEAD.fullmatch(text.strip()), line
            head = text
        elif text:
            r = ROW.fullmatch(text.strip())
            assert r, f"not a row: '{line}'\n{out}"
            # Right-aligned numbers: every row ends where the heading does.
            assert len(text) == len(head) and text.startswith("  "), f"{line}\n{out}"
            n, errors = int(r[3]), int(r[5])
            assert r[6] == f"{100 * errors / n:.1f}%", line
            p50, p90, p99 = float(r[7]), float(r[8]), float(r[9])
            assert 0 < p50 <= p90 <= p99, line
            assert (r[1], r[2]) not in rows, line
            rows[(r[1], r[2])] = (n, float(r[4]), errors)
    return tables, spans


def check_metrics(out):
    """What each service's table counted at exit: every call, route by route, with its errors,
    at a rate over the time its title says; each gospan's spans, all exported."""
    tables, spans = metrics_tables(out)
    backend = re.search(r"^demo: backend: pid \d+, http://(127\.0\.0\.1:\d+), HTTP", out, re.M)
    assert backend, out
    fails = REQUESTS // 4  # /backend-fail: a 502 of the frontend, after the backend's 500
    want = {
        "frontend": {("http server", op): (REQUESTS // 4, fails if op == "GET /backend-fail" else 0)
                     for op in OPS},
        "backend": {("http server", "GET /work/{id}"): (ITEM_READS, 0),
                    ("http server", "GET /fail"): (fails, fails),
                    ("db client", "redis GET"): (ITEM_READS, 0),
                    ("db client", "postgresql SELECT items"): (MISSES, 0),
                    ("db client", "redis SET"): (MISSES, 0)},
        "inventory": {("rpc server", RPC): (INVENTORY_SPANS, 0)},
        # The tables count calls: the consumer's are its stock checks, one per order.
        "consumer": {("rpc client", RPC): (ORDERS, 0)},
    }
    want["frontend"][("http client", f"GET {backend[1]}")] = (BACKEND_CALLS, fails)
    want["frontend"][("rpc client", RPC)] = (LOOKUPS, 0)
    assert set(tables) == set(SERVICES), out
    for svc in SERVICES:
        pid, secs, rows = tables[svc]
        assert re.search(rf"^demo: {svc}: pid {pid}, ", out, re.M), out
        assert {k: (n, e) for k, (n, _, e) in rows.items()} == want[svc], f"{svc}\n{out}"
        for n, rate, _ in rows.values():
            # Over the time in the title: shown to 0.1 s, the rate to 0.01/s.
            assert n / (secs + 0.05) - 0.005 <= rate <= n / (secs - 0.05) + 0.005, \
                f"{svc}: {n} in {secs} s at {rate}/s\n{out}"
    gospans = {svc: int(m) for svc, m in re.findall(r"^demo: gospan on (\w+): pid (\d+)$", out,
                                                      re.M)}
    assert spans == {gospans["frontend"]: (FRONTEND_SPANS, 0),
                     gospans["backend"]: (BACKEND_SPANS, 0),
                     gospans["inventory"]: (INVENTORY_SPANS, 0),
                     gospans["consumer"]: (CONSUMER_SPANS, 0)}, out
    tail = out[out.index(METRICS_INTRO):]
    assert (f"demo: the tables count every call: the frontend's {REQUESTS} requests are the "
            f"{REQUESTS} loadgen\ndemo:   sent; the backend served its {BACKEND_CALLS} calls and "
            f"made {DB_CALLS} data store calls, the\ndemo:   inventory served its "
            f"{INVENTORY_SPANS} lookups ({LOOKUPS} of the frontend's, {ORDERS} of the\n"
            f"demo:   consumer's: a stock check per order; gospan counts no messages in these "
            f"tables)\n") in tail, out
    return tables


def inventory_addr(out):
    m = re.search(r"^demo: inventory: pid \d+, (127\.0\.0\.1:\d+), gRPC", out, re.M)
    assert m, out
    return m.group(1)


def query_port_closed(out):
    m = re.search(r"query API http://127\.0\.0\.1:(\d+)", out)
    assert m, out
    with socket.socket() as s:
        return s.connect_ex(("127.0.0.1", int(m.group(1)))) != 0


def test_demo_with_jaeger(gospan_bin, jaeger_bin):  # noqa: F811 (fixture)
    rc, out = run_demo(demo_env(GOSPAN_JAEGER_BIN=str(jaeger_bin)))
    assert rc == 0, out
    assert "demo: done" in out, out
    assert re.search(r"^demo: Jaeger: pid \d+, OTLP/HTTP receiver http://127\.0\.0\.1:\d+, "
                     r"query API http://127\.0\.0\.1:\d+$", out, re.M), out
    for svc in SERVICES:
        assert re.search(rf"^\s+gospan: attached: pid \d+, executable '{svc}'", out, re.M), out
    assert (f"loadgen: {REQUESTS} requests: {REQUESTS * 3 // 4} 2xx, 0 4xx, {REQUESTS // 4} 5xx, "
            f"0 without answer") in out, out
    assert (f"spans in Jaeger: frontend {FRONTEND_SPANS} of {FRONTEND_SPANS}, "
            f"backend {BACKEND_SPANS} of {BACKEND_SPANS}, inventory {INVENTORY_SPANS} of "
            f"{INVENTORY_SPANS}, consumer {CONSUMER_SPANS} of {CONSUMER_SPANS}") in out, out
    check_traces(out, inventory_addr(out), datastores(out), kafka(out))
    assert_summaries(out)
    check_metrics(out)
    # The tables are the demo's last word.
    assert out.rstrip().endswith("demo: done; Jaeger was stopped with the rest (on a terminal it "
                                 "keeps running until Ctrl-C)"), out
    assert_all_stopped(out)
    assert_datastores_gone(out)
    assert query_port_closed(out), f"Jaeger still answers after the demo\n{out}"


def test_demo_without_jaeger_prints_spans(gospan_bin):
    rc, out = run_demo(demo_env(GOSPAN_DEMO_JAEGER="0"))
    assert rc == 0, out
    assert "demo: GOSPAN_DEMO_JAEGER=0: no Jaeger" in out, out
    assert "OTEL_TRACES_EXPORTER=console" in out, out
    for svc in SERVICES:
        assert re.search(rf"^\s+gospan: attached: pid \d+, executable '{svc}'", out, re.M), out
    fe, rest = out.split("demo: spans of frontend")[1].split("demo: spans of backend")
    be, rest = rest.split("demo: spans of inventory")
    inv, con = rest.split("demo: spans of consumer")
    con = con.split("demo: traces printed: ")[0]
    for op in OPS:
        assert op in fe, out
    assert f"CLIENT {RPC} -> {inventory_addr(out)}" in fe, out
    assert "GET /work/{id}" in be and "GET /fail" in be, out
    redis_addr, pg_addr = datastores(out)
    assert be.count(f"CLIENT GET -> {redis_addr} ") == ITEM_READS, be
    assert be.count(f"CLIENT SELECT items -> {pg_addr} ") == MISSES, be
    assert be.count(f"CLIENT SET -> {redis_addr} ") == MISSES, be
    assert (f"demo: data store calls printed under the backend's SERVER spans: redis GET "
            f"{ITEM_READS}, postgresql SELECT items {MISSES}, redis SET {MISSES}") in out, out
    assert DATASTORE_VERDICT in out[out.rindex("gospan: summary"):], out
    assert f"SERVER {RPC}" in inv, out
    # The orders: a send under each /work/{id} request, processed by the consumer, whose stock
    # check is under its CONSUMER span.
    kafka(out)
    assert be.count(f"PRODUCER send {TOPIC} ") == ORDERS, be
    assert con.count(f"CONSUMER process {TOPIC} ") == ORDERS, con
    assert con.count(f"CLIENT {RPC} -> {inventory_addr(out)} ") == ORDERS, con
    assert (f"demo: orders printed: backend PRODUCER send {TOPIC} under its SERVER spans "
            f"{ORDERS}, consumer CONSUMER process {TOPIC} {ORDERS}, its stock checks (CLIENT) "
            f"under those {ORDERS}") in out, out
    be_traces = BACKEND_CALLS if NO_PROPAGATION else REQUESTS
    inv_traces = LOOKUPS + ORDERS if NO_PROPAGATION else LOOKUPS
    con_traces = ORDERS if NO_PROPAGATION else ORDERING
    fe_be, fe_inv, fe_con = (0, 0, 0) if NO_PROPAGATION else (REQUESTS, LOOKUPS, ORDERING)
    assert (f"demo: traces printed: {REQUESTS} with spans of frontend, {be_traces} with spans of "
            f"backend, {inv_traces} with spans of inventory, {con_traces} with spans of "
            f"consumer; {fe_be} with spans of frontend and backend, {fe_inv} with spans of "
            f"frontend and inventory, {fe_con} with spans of frontend and consumer") in out, out
    if NO_PROPAGATION:
        assert "demo: the backend's and the inventory's spans start their own traces" in out, out
    else:
        # Each order's CONSUMER span continues the trace its record carried. A trace with two
        # orders is printed as one tree or as two, as the console's batches fell (console.c):
        # its traces are counted, not its trees.
        trees = re.findall(r"^\s*trace ([0-9a-f]{32})  consumer .*$", con, re.M)
        remote = re.findall(r"^\s*trace ([0-9a-f]{32})  consumer .*  remote parent [0-9a-f]{16}$",
                            con, re.M)
        assert trees and len(remote) == len(trees), con
        assert len(set(remote)) == ORDERING, con
        tail = out[out.rindex("gospan: summary"):]
        assert (f"demo: all {REQUESTS} frontend requests are one trace across the four "
                f"services: gospan put") in tail, out
        assert (f"the backend joined the\ndemo:   trace of all {REQUESTS}, the inventory those of "
                f"the {LOOKUPS} with a lookup (all but /backend-fail)\n"
                f"demo:   and the consumer those of the {ORDERING} that made an order: gospan put "
                f"each\ndemo:   PRODUCER span's traceparent into its Kafka record at the socket "
                f"layer too\n") in tail, out
        assert (f"demo: every order went through Kafka in the trace of the request that made "
                f"it: the\ndemo:   backend's {ORDERS} PRODUCER spans (send {TOPIC}) under its "
                f"SERVER spans, the consumer's\ndemo:   {ORDERS} CONSUMER spans (process "
                f"{TOPIC}) in the same traces, its {ORDERS} stock checks under them\n") in tail, out
    assert_summaries(out)
    # The spans printed, each gospan's tables on the same output apart from them, at the end.
    listing = out.split("demo: spans of frontend")[1].split("demo: traces printed: ")[0]
    assert "metrics of " not in listing, out
    check_metrics(out)
    assert_all_stopped(out)
    assert_datastores_gone(out)


class Terminal:
    """A program run on a pseudo-terminal of its own, as from a shell: Ctrl-C reaches it."""

    def __init__(self, argv, env):
        self.master, slave = pty.openpty()
        # setsid --ctty: a new session whose controlling terminal is the pty on stdin. SIGINT as
        # a shell leaves it for what it runs in the foreground: a test run started in the
        # background (`cmd &` in a script) ignores it, which bash then cannot trap.
        self.proc = subprocess.Popen(["setsid", "--ctty", "env", "--default-signal=INT", *argv],
                                     env=env, stdin=slave, stdout=slave, stderr=slave,
                                     close_fds=True)
        os.close(slave)
        self.text = ""

    def _read(self, timeout):
        """Adds what arrives within TIMEOUT seconds to self.text; False at the end of output."""
        ready, _, _ = select.select([self.master], [], [], timeout)
        if not ready:
            return True
        try:
            data = os.read(self.master, 65536)
        except OSError:  # EIO: every holder of the terminal has closed it
            return False
        self.text += data.decode("utf-8", "replace").replace("\r\n", "\n")
        return bool(data)

    def read_until(self, pattern, timeout):
        """Reads output until PATTERN (a regular expression) is in it; False when the time is
        up or the output ended first."""
        deadline = time.monotonic() + timeout
        while not re.search(pattern, self.text, re.M):
            left = deadline - time.monotonic()
            if left <= 0 or not self._read(min(left, 0.5)):
                return bool(re.search(pattern, self.text, re.M))
        return True

    def read_to_end(self, timeout):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and self._read(0.2):
            pass

    def ctrl_c(self):
        os.write(self.master, b"\x03")

    def wait(self, timeout):
        """The program's exit status; fails, saying what it printed and what of it still runs
        (with where each process waits in the kernel), when it has not exited within TIMEOUT."""
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            ps = subprocess.run(["ps", "-eo", "pid,ppid,sid,stat,wchan:24,etimes,args"],
                                capture_output=True, text=True).stdout.splitlines()
            ours = {self.proc.pid}
            for _ in range(4):  # its children, theirs, ...: the demo nests no deeper
                ours |= {int(f[0]) for f in (line.split() for line in ps[1:])
                         if int(f[1]) in ours or int(f[2]) in ours}
            left = [ps[0]] + [line for line in ps[1:] if int(line.split()[0]) in ours]
            pytest.fail(f"{self.proc.args} still runs {timeout} s on:\n" + "\n".join(left) +
                        f"\n--- its output ---\n{self.text}")

    def close(self):
        """Stops the program if it still runs: SIGTERM first, which the demo traps to stop what it
        started (its stop is bounded at about 100 s), SIGKILL only after that."""
        if self.proc.poll() is None:
            self.proc.terminate()
            deadline = time.monotonic() + 120
            while self.proc.poll() is None and time.monotonic() < deadline:
                if not self._read(0.2):  # its last lines must not fill the terminal
                    time.sleep(0.1)
            if self.proc.poll() is None:
                self.proc.kill()
        self.proc.wait(10)
        os.close(self.master)


def test_demo_on_a_terminal_runs_until_ctrl_c(gospan_bin, jaeger_bin):  # noqa: F811 (fixture)
    term = Terminal([str(DEMO)], demo_env(GOSPAN_JAEGER_BIN=str(jaeger_bin),
                                          GOSPAN_DEMO_KEEP="1"))
    try:
        assert term.read_until(r"^demo: Ctrl-C to stop", RUN_TIMEOUT), term.text
        assert "demo: everything keeps running" in term.text, term.text
        assert re.search(r"^demo: Jaeger's query API: http://127\.0\.0\.1:\d+/api/services",
                         term.text, re.M), term.text
        assert ("no Jaeger UI" in term.text) or ("Jaeger's UI:" in term.text), term.text
        assert re.search(r"^demo: the backend's data: /usr/lib/postgresql/\d+/bin/psql -h "
                         r"127\.0\.0\.1 -p \d+ -U gospan postgres;$", term.text, re.M), term.text
        orders = re.search(r"^demo: the orders as the consumer processed them: tail -f "
                           r"(/tmp/gospan-demo\.\w+)/consumer\.err; Kafka at "
                           rf"{re.escape(kafka(term.text))}, the topic '{TOPIC}'$", term.text,
                           re.M)
        assert orders, term.text
        # The load goes on: loadgen sums up every 50 requests, one every 50 ms.
        assert term.read_until(r"^loadgen: last 50 requests: ", 30), term.text
        # And so do the orders: most of those 50 requests' orders are processed already.
        log = (Path(orders[1]) / "consumer.err").read_text()
        assert log.count(" in stock") >= ORDERS + 25, log
        assert all(os.path.exists(f"/proc/{pid}") for pid in pids_started(term.text)), term.text
        term.ctrl_c()
        term.read_to_end(90)
        # The output ends when the last holder of the terminal closes it, which may come before
        # the demo itself has exited: on a busy machine its own stop takes some seconds more.
        assert term.wait(60) == 0, term.text
    finally:
        term.close()
    out = term.text
    for svc in SERVICES:
        assert re.search(rf"^demo: gospan on {svc}, exit status 0:\n\s+gospan: summary: spans "
                         rf"captured (\d+), exported \1, dropped 0;", out, re.M), out
    # After Ctrl-C, the tables of the whole run: the first requests and the load after them.
    assert "demo: Ctrl-C to stop (the gospans then print each service's metrics since the start)" \
        in out, out
    tables, _ = metrics_tables(out)
    served = sum(n for (kind, _), (n, _, _) in tables["frontend"][2].items()
                 if kind == "http server")
    assert served >= REQUESTS + 50, out
    assert_all_stopped(out)
    assert_datastores_gone(out)
    # The demo's files, Kafka's among them.
    assert not os.path.exists(orders[1]), out
    assert query_port_closed(out), f"Jaeger still answers after Ctrl-C\n{out}"


def test_demo_says_what_the_data_stores_need(gospan_bin):
    """Without PostgreSQL's programs and redis-server the demo names both, and how to get them,
    and stops before it builds or starts anything."""
    rc, out = run_demo(demo_env(PG_BINDIR="/nonexistent/bin", REDIS_SERVER="no-such-redis"))
    assert rc == 1, out
    assert ("demo: the backend's data stores cannot run here; missing:\n"
            "demo:   PostgreSQL: no initdb, postgres, pg_isready in /nonexistent/bin (Debian "
            "package postgresql)\n"
            "demo:   Redis: no 'no-such-redis' (Debian package redis-server)\n") in out, out
    assert ("demo: 'make deps' installs them (apt-get install postgresql redis-server); or run "
            "with GOSPAN_DEMO_DATASTORES=0 for a backend without data stores") in out, out
    assert "building" not in out and not pids_started(out), out


def test_demo_says_what_kafka_needs(gospan_bin):
    """Without Java the demo says the Kafka broker cannot run, and how to get it, and stops
    before it builds or starts anything."""
    rc, out = run_demo(demo_env(GOSPAN_KAFKA_JAVA="no-such-java"))
    assert rc == 1, out
    assert ("demo: the Kafka broker cannot run here; missing:\n"
            "demo:   Java 17 or later: no 'no-such-java' (Debian package "
            "openjdk-17-jre-headless)\n"
            "demo: 'make deps' installs them (apt-get install openjdk-17-jre-headless maven); or "
            "run with GOSPAN_DEMO_KAFKA=0 for a backend that publishes no order\n") in out, out
    assert "building" not in out and not pids_started(out), out


# ---- jaeger.py show's data store check, against a query API serving made-up traces -------------


def _span(trace_id, span_id, service, kind, name, parent=None, start=0, **tags):
    tags = {"span.kind": kind, **tags}
    return {"traceID": trace_id, "spanID": span_id, "operationName": name, "processID": service,
            "startTime": 1_700_000_000_000_000 + start, "duration": 100,
            "references": [{"refType": "CHILD_OF", "traceID": trace_id, "spanID": parent}]
            if parent else [],
            "tags": [{"key": k, "type": "string", "value": v} for k, v in tags.items()]}


def _trace(n, data_parent):
    """A request of the frontend calling the backend, whose data store call (a Redis GET) is the
    child of DATA_PARENT: 'server' (the backend's SERVER span, as it must be), 'frontend' (the
    frontend's SERVER span), or None for no data store call."""
    tid = f"{n:032x}"
    spans = [_span(tid, "a1", "frontend", "server", "GET /direct/{id}", **{"url.path": "/d"}),
             _span(tid, "a2", "frontend", "client", "GET", "a1", 1, **{"http.request.method":
                                                                         "GET"}),
             _span(tid, "b1", "backend", "server", "GET /work/{id}", "a2", 2,
                   **{"http.request.method": "GET"})]
    if data_parent:
        spans.append(_span(tid, "b2", "backend", "client", "GET",
                           {"server": "b1", "frontend": "a1"}[data_parent], 3,
                           **{"db.system.name": "redis"}))
    return {"traceID": tid, "spans": spans,
            "processes": {svc: {"serviceName": svc} for svc in ("frontend", "backend")}}


def _order_trace(n, broken=None):
    """A request of the frontend whose backend call publishes an order that the consumer
    processes, asking the inventory for the item's stock, every parent link as it must be; or
    with BROKEN: 'unprocessed' (no CONSUMER span under the PRODUCER span), 'consumer parent' (a
    second CONSUMER span, the child of the backend's SERVER span), 'check not served' (the
    consumer's gRPC call without the inventory's SERVER span under it)."""
    tid = f"{n:032x}"
    kafka = {"messaging.system": "kafka", "messaging.destination.name": "orders"}
    grpc = {"rpc.system": "grpc"}
    rpc = "inventory.v1.Inventory/GetItem"
    spans = [_span(tid, "a1", "frontend", "server", "GET /direct/{id}", **{"url.path": "/d"}),
             _span(tid, "a2", "frontend", "client", "GET", "a1", 1, **{"http.request.method":
                                                                         "GET"}),
             _span(tid, "b1", "backend", "server", "GET /work/{id}", "a2", 2,
                   **{"http.request.method": "GET"}),
             _span(tid, "b2", "backend", "producer", "send orders", "b1", 3, **kafka),
             _span(tid, "c1", "consumer", "consumer", "process orders", "b2", 4, **kafka,
                   **{"messaging.destination.partition.id": "0", "messaging.kafka.offset": 7}),
             _span(tid, "c2", "consumer", "client", rpc, "c1", 5, **grpc),
             _span(tid, "i1", "inventory", "server", rpc, "c2", 6, **grpc)]
    if broken == "unprocessed":
        spans = spans[:4]
    elif broken == "check not served":
        spans = spans[:6]
    elif broken == "consumer parent":
        spans.append(_span(tid, "c3", "consumer", "consumer", "process orders", "b1", 7, **kafka))
    return {"traceID": tid, "spans": spans,
            "processes": {svc: {"serviceName": svc}
                          for svc in ("frontend", "backend", "consumer", "inventory")}}


class _QueryAPI(BaseHTTPRequestHandler):
    traces = []

    def do_GET(self):
        url = urlparse(self.path)
        if url.path == "/api/traces":
            svc = parse_qs(url.query)["service"][0]
            data = [t for t in self.traces
                    if any(sp["processID"] == svc for sp in t["spans"])]
        else:
            data = [t for t in self.traces if url.path == f"/api/traces/{t['traceID']}"]
        body = json.dumps({"data": data}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


def show(traces, services=("frontend", "backend"), datastores=("backend",)):
    """`jaeger.py show` as the demo runs it, against a query API holding TRACES."""
    handler = type("Handler", (_QueryAPI,), {"traces": traces})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        res = subprocess.run([sys.executable, str(JAEGER_PY), "show", "--query",
                              f"http://127.0.0.1:{server.server_address[1]}",
                              *[a for svc in services for a in ("--service", svc)],
                              *[a for svc in datastores for a in ("--datastores", svc)]],
                             capture_output=True, text=True, timeout=60)
    finally:
        server.shutdown()
        server.server_close()
    return res.returncode, res.stdout + res.stderr


def test_show_checks_the_backends_data_store_spans():
    rc, out = show([_trace(1, "server"), _trace(2, "server")])
    assert rc == 0, out
    assert "joined traces: 2 of 2 frontend traces" in out, out
    assert "db backend -> redis GET: 2 calls, in 2 traces" in out, out
    assert re.search(r"^        backend  client  GET\s+-\s+0\.100 ms  redis$", out, re.M), out

    # Some requests make no data store call (the backend's /fail): none at all is what fails.
    rc, out = show([_trace(1, None), _trace(2, None)])
    assert rc == SHOW_DATASTORES_WRONG == 3, out
    assert "no data store calls of backend: no backend CLIENT span with db.system.name in 2 " \
           "traces" in out, out

    rc, out = show([_trace(1, "server"), _trace(2, "frontend")])
    assert rc == SHOW_DATASTORES_WRONG, out
    assert "joined traces: 1 of 2 frontend traces" in out, out
    assert (f"not joined: trace {2:032x}: the backend CLIENT span GET (b2) is not the child of "
            f"a backend SERVER or CONSUMER span") in out, out
    assert (f"not under a SERVER or CONSUMER span of backend: trace {2:032x}: the backend CLIENT "
            f"span GET (b2, redis) is not the child of a backend SERVER or CONSUMER span") in out, \
        out


def test_show_follows_orders_through_kafka():
    """A message is a hop as a call is: the PRODUCER span the parent of the CONSUMER span that
    processed it, the consumer's call under that the parent of the SERVER span that served it."""
    services = ("frontend", "backend", "inventory", "consumer")
    rc, out = show([_order_trace(1), _order_trace(2)], services, ())
    assert rc == 0, out
    assert "joined traces: 2 of 2 frontend traces" in out, out
    assert "every PRODUCER span the parent of the CONSUMER spans that processed its message" in \
        out, out
    assert ("hop frontend -> backend, HTTP GET: 2 calls, in 2 of the joined traces\n"
            "hop backend -> consumer, Kafka orders: 2 messages, in 2 of the joined traces\n"
            "hop consumer -> inventory, gRPC inventory.v1.Inventory/GetItem: 2 calls, in 2 of "
            "the joined traces\n") in out, out
    # The tree: the message under its send, the call under the message.
    assert re.search(r"^        backend  producer  send orders\s+-\s+0\.100 ms  kafka\n"
                     r"          consumer  consumer  process orders\s+-\s+0\.100 ms  kafka "
                     r"partition 0 offset 7\n"
                     r"            consumer  client  inventory\.v1\.Inventory/GetItem .*\n"
                     r"              inventory  server  inventory\.v1\.Inventory/GetItem ",
                     out, re.M), out

    for broken, why in (("unprocessed", "the backend PRODUCER span send orders (b2) has no "
                                        "child: no CONSUMER span processed its message"),
                        ("consumer parent", "the consumer CONSUMER span process orders (c3) is "
                                            "not the child of the PRODUCER span that sent its "
                                            "message"),
                        ("check not served", "the consumer CLIENT span "
                                             "inventory.v1.Inventory/GetItem (c2) has 0 children, "
                                             "not the one SERVER span of the service it called")):
        rc, out = show([_order_trace(1), _order_trace(2, broken)], services, ())
        assert rc == 0, out  # no data store check asked for
        assert "joined traces: 1 of 2 frontend traces" in out, (broken, out)
        assert f"not joined: trace {2:032x}: {why}" in out, (broken, out)
