"""The example service traced by gospan under more than a thousand requests: every method, 2xx,
4xx and 5xx, keep-alive and fresh connections, 50 at a time, a slow handler, a panicking one, an
over-long path and a non-ASCII one. The spans are judged as the official OTLP decoder sees them:
exactly one per request, each carrying its own request's facts and lying inside the client's
wall-clock window.

Every request is driven once, in the module fixture `run`; each test checks one property of it.
"""

import http.client
import json
import re
import shutil
import signal
import socket
import subprocess
import threading
import time
import urllib.parse
from collections import defaultdict
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import pytest

from conftest import perform as conftest_perform

CONCURRENCY = 50
CONCURRENT_REQUESTS = 1000
SLACK_NS = 1_000_000  # span times may stray 1 ms outside the client's window (clock conversion)
MAX_PATH = 256  # gospan's bound on url.path, in bytes
HTTP_TIMEOUT = 15.0
REPORT_AT_MOST = 25
SPAN_KIND_SERVER = 2  # opentelemetry/proto/trace/v1/trace.proto: Span.SpanKind
STATUS_ERROR = 2  # Status.StatusCode


@dataclass
class Req:
    n: int
    method: str
    target: str  # what goes on the request line: percent-encoded, maybe with a query
    path: str  # the decoded path: what url.path must hold
    status: int | None  # expected status; None: the handler panics, no response
    route: str | None  # expected http.route; None when the mux matched no pattern
    body: bytes | None = None
    new_conn: bool = False
    min_ms: int = 0  # the handler takes at least this long
    long: bool = False  # the path exceeds gospan's bound
    stem: str = ""  # for a long path: the unique start any truncation keeps
    # filled in by the client
    local_port: int = 0
    t0: int = 0
    t1: int = 0
    got_status: int | None = None
    got_body: bytes = b""
    error: str | None = None

    def describe(self):
        return f"#{self.n} {self.method} {self.target} (expect {self.status or 'panic'})"


def _req(n, method, target, status, route, **kw):
    path = urllib.parse.unquote(urllib.parse.urlsplit(target).path, errors="strict")
    return Req(n, method, target, path, status, route, **kw)


def mixed_request(n):
    """Request N of the mixed workload: each kind in turn, most with a path of their own."""
    body = b'{"name":"user %d"}' % n
    kind = n % 14
    if kind == 0:
        return _req(n, "GET", f"/users/u{n}", 200, "/users/{id}")
    if kind == 1:
        return _req(n, "HEAD", f"/users/u{n}", 200, "/users/{id}")
    if kind == 2:
        return _req(n, "POST", "/users", 201, "/users", body=body)
    if kind == 3:
        return _req(n, "PUT", f"/users/u{n}", 200, "/users/{id}", body=body)
    if kind == 4:
        return _req(n, "DELETE", f"/users/u{n}", 204, "/users/{id}")
    if kind == 5:
        return _req(n, "PATCH", f"/users/u{n}", 200, "/users/{id}", body=body)
    if kind == 6:
        return _req(n, "OPTIONS", f"/echo/req-{n}", 200, "/echo/")
    if kind == 7:
        return _req(n, "GET", f"/items/req-{n}/a/b?q={n}", 200, "/items/{path...}")
    if kind == 8:
        return _req(n, "GET", f"/missing/req-{n}", 404, None)  # no pattern: the mux's 404
    if kind == 9:
        return _req(n, "OPTIONS", f"/users/u{n}", 405, None)  # path known, method not: 405
    if kind == 10:
        return _req(n, "GET", "/fail", 500, "/fail")
    if kind == 11:
        code = (201, 418, 503)[(n // 14) % 3]
        return _req(n, "GET", f"/status/{code}", code, "/status/{code}")
    if kind == 12:
        return _req(n, "GET", "/slow?ms=100", 200, "/slow", min_ms=100)
    return _req(n, "POST", f"/echo/req-{n}", 200, "/echo/", body=body)


def special_requests(first):
    """Requests sent one at a time after the mixed workload."""
    reqs = []

    def add(method, target, status, route, **kw):
        n = first + len(reqs)
        reqs.append(_req(n, method, target.format(n=n), status, route, **kw))

    add("GET", "/slow", 200, "/slow", min_ms=100)
    add("GET", "/slow?ms=150", 200, "/slow", min_ms=150)
    add("GET", "/panic", None, "/panic", new_conn=True)
    add("GET", "/panic", None, "/panic", new_conn=True)
    add("GET", "/", 200, "/")  # pattern "GET /{$}": the route is the path itself
    add("GET", "/health", 200, "/health")
    add("HEAD", "/items/req-{n}", 200, "/items/{path...}")
    add("DELETE", "/echo/req-{n}", 200, "/echo/")
    add("POST", "/health", 405, None)
    add("GET", "/status/599", 599, "/status/{code}")
    add("GET", "/status/499", 499, "/status/{code}")
    # "日本" and "café au lait" percent-encoded: url.path holds the decoded UTF-8.
    add("GET", "/items/%E6%97%A5%E6%9C%AC/req-{n}", 200, "/items/{path...}")
    add("GET", "/items/caf%C3%A9%20au%20lait/req-{n}", 200, "/items/{path...}")
    # Longer than the bound, in three-byte characters, with the bound falling inside one.
    k = first + len(reqs)
    prefix = f"/items/req-{k}/"
    while (MAX_PATH - len(prefix.encode())) % 3 == 0:
        prefix += "x"
    long_path = prefix + "日本語" * 40
    assert len(long_path.encode()) > MAX_PATH
    reqs.append(_req(k, "GET", urllib.parse.quote(long_path, safe="/"), 200, "/items/{path...}",
                     long=True, stem=prefix))
    return reqs


def perform(req, port, conn=None):
    """Sends REQ on CONN (keep-alive) or on a connection of its own, recording what happened."""
    headers = {"Content-Type": "application/json"} if req.body is not None else {}
    conftest_perform(req, port, conn, req.method, req.target, req.body, headers, HTTP_TIMEOUT)


@dataclass(repr=False)
class Run:
    port: int
    pid: int
    reqs: list
    spans: list
    before_stop: int  # spans received before gospan was told to stop
    attached_line: str
    returncode: int
    gospan_stderr: str
    receiver_errors: list

    def __repr__(self):  # what pytest shows in assertion messages
        return f"<run: {len(self.reqs)} requests, {len(self.spans)} spans>"


def drive(port):
    """Sends the whole workload to the service on PORT; returns the requests, filled in."""
    reqs = []
    # One keep-alive connection, one request at a time, every kind twice.
    seq = [mixed_request(n) for n in range(28)]
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=HTTP_TIMEOUT)
    for r in seq:
        perform(r, port, conn)
    conn.close()
    reqs += seq

    # 50 at a time, each worker on its own keep-alive connection, every fifth on a fresh one.
    mixed = [mixed_request(n) for n in range(28, 28 + CONCURRENT_REQUESTS)]
    for r in mixed:
        r.new_conn = r.n % 5 == 0
    local, conns, lock = threading.local(), [], threading.Lock()

    def work(r):
        c = getattr(local, "conn", None)
        if c is None:
            c = local.conn = http.client.HTTPConnection("127.0.0.1", port, timeout=HTTP_TIMEOUT)
            with lock:
                conns.append(c)
        perform(r, port, c)

    with ThreadPoolExecutor(CONCURRENCY) as ex:
        list(ex.map(work, mixed))
    for c in conns:
        c.close()
    reqs += mixed

    special = special_requests(28 + CONCURRENT_REQUESTS)
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=HTTP_TIMEOUT)
    for r in special:
        perform(r, port, conn)
    conn.close()
    return reqs + special


@pytest.fixture(scope="module")
def run(start_service, start_gospan, otlp_receiver):
    svc = start_service()
    g = start_gospan(svc.pid, otlp_receiver, env={"OTEL_BSP_MAX_QUEUE_SIZE": "8192"})
    attached = g.wait_attached()
    reqs = drive(svc.port)
    # Panicked requests are finished by gospan after a grace period, so only wait for the rest;
    # they must arrive on the batch schedule, not only at shutdown.
    answered = sum(1 for r in reqs if r.status is not None)
    before_stop = otlp_receiver.wait_for_spans(answered, 20.0)
    rc = g.stop(signal.SIGTERM)
    return Run(port=svc.port, pid=svc.pid, reqs=reqs, spans=otlp_receiver.snapshot(),
               before_stop=before_stop, attached_line=attached, returncode=rc,
               gospan_stderr=g.stderr, receiver_errors=list(otlp_receiver.errors))


def fail_with(problems, what):
    if problems:
        shown = "\n".join(problems[:REPORT_AT_MOST])
        more = f"\n... and {len(problems) - REPORT_AT_MOST} more" if len(
            problems) > REPORT_AT_MOST else ""
        pytest.fail(f"{len(problems)} {what}:\n{shown}{more}")


def span_str(s):
    return (f"span '{s.name}' {s.attrs.get('http.request.method')} "
            f"{s.attrs.get('url.path')!r} status={s.attrs.get('http.response.status_code')} "
            f"peer={s.attrs.get('network.peer.port')} [{s.start_ns}, {s.end_ns}]")


def in_window(s, r, slack=SLACK_NS):
    return r.t0 - slack <= s.start_ns and s.end_ns <= r.t1 + slack


@pytest.fixture(scope="module")
def matched(run):
    return match(run)


def match(run):
    """Pairs spans with requests by url.path; a path shared by several requests is settled by
    the client's time window (exact, then with the slack), then the client port, then the
    method. Returns (pairs, problems)."""
    by_path = defaultdict(list)
    for r in run.reqs:
        by_path[r.path].append(r)
    long_reqs = [r for r in run.reqs if r.long]
    taken = {}
    pairs, problems = [], []
    for s in run.spans:
        path = s.attrs.get("url.path")
        cands = by_path.get(path, [])
        if not cands and isinstance(path, str) and path:
            # Cut paths pair by their unique start; how they were cut is judged separately.
            cands = [r for r in long_reqs if path.startswith(r.stem)]
        if len(cands) > 1:
            for narrow in (lambda r: in_window(s, r, 0),
                           lambda r: in_window(s, r),
                           lambda r: r.local_port == s.attrs.get("network.peer.port"),
                           lambda r: r.method == s.attrs.get("http.request.method"),
                           lambda r: r.n not in taken):
                # A test that leaves nobody is skipped: the checks below report that field.
                kept = [r for r in cands if narrow(r)]
                if len(cands) > 1 and kept:
                    cands = kept
        if len(cands) != 1:
            problems.append(f"{span_str(s)}: matches {len(cands)} requests" + "".join(
                f"\n    {r.describe()} [{r.t0}, {r.t1}] port {r.local_port}" for r in cands))
            continue
        r = cands[0]
        if r.n in taken:
            problems.append(f"{span_str(s)}: a second span for {r.describe()}")
            continue
        taken[r.n] = s
        pairs.append((r, s))
    for r in run.reqs:
        if r.n not in taken:
            problems.append(f"no span for {r.describe()} [{r.t0}, {r.t1}] port {r.local_port}")
    return pairs, problems


# ---- the run itself -----------------------------------------------------------------------


def test_service_answered_every_request_as_expected(run):
    assert len(run.reqs) >= 1000, len(run.reqs)
    problems = []
    for r in run.reqs:
        if r.status is None:
            if r.error is None:
                problems.append(f"{r.describe()}: got {r.got_status}, expected a broken "
                                f"connection from the panicking handler")
        elif r.error is not None or r.got_status != r.status:
            problems.append(f"{r.describe()}: got {r.got_status} {r.error or ''}")
    fail_with(problems, "requests were not answered as the example service answers them")


def test_gospan_attached_and_exited_cleanly(run):
    assert re.search(rf"\bpid {run.pid}\b", run.attached_line), run.attached_line
    assert run.returncode == 0, run.gospan_stderr
    summary = [ln for ln in run.gospan_stderr.splitlines() if ln.startswith("gospan: summary")]
    assert summary, f"no 'gospan: summary' line:\n{run.gospan_stderr}"
    m = re.search(r"dropped (\d+)", summary[0])
    assert m is None or m.group(1) == "0", summary[0]


def test_receiver_decoded_every_export(run):
    assert run.receiver_errors == []
    assert run.spans, "no span reached the receiver"


def test_spans_arrive_on_schedule(run):
    answered = sum(1 for r in run.reqs if r.status is not None)
    assert run.before_stop >= answered, (
        f"only {run.before_stop} of {answered} spans were exported within 20 s "
        f"with OTEL_BSP_SCHEDULE_DELAY=200, before gospan was stopped")


def test_exactly_one_span_per_request(run, matched):
    pairs, problems = matched
    fail_with(problems, "spans and requests do not pair one to one")
    assert len(run.spans) == len(run.reqs) == len(pairs), (len(run.spans), len(run.reqs))


# ---- each span against its own request ------------------------------------------------------


def expected_attrs(r, port):
    want = {
        "http.request.method": r.method,
        "url.scheme": "http",
        "server.address": "127.0.0.1",
        "server.port": port,
        "client.address": "127.0.0.1",
        "network.peer.address": "127.0.0.1",
        "network.peer.port": r.local_port,
        "network.protocol.version": "1.1",
    }
    if not r.long:
        want["url.path"] = r.path
    # Panicking handlers too: the mux has matched the pattern before the handler runs.
    if r.route is not None:
        want["http.route"] = r.route
    if r.status is not None:
        want["http.response.status_code"] = r.status
    return want


def test_span_attributes_match_their_request(run, matched):
    pairs, _ = matched
    assert pairs, "no span pairs with a request"
    problems = []
    for r, s in pairs:
        want = expected_attrs(r, run.port)
        for k, v in want.items():
            if s.attrs.get(k) != v:
                problems.append(f"{r.describe()}: {k}={s.attrs.get(k)!r}, expected {v!r}")
        if r.route is None and "http.route" in s.attrs:
            problems.append(f"{r.describe()}: http.route={s.attrs['http.route']!r} but no "
                            f"pattern matched")
        if r.status is None and "http.response.status_code" in s.attrs:
            problems.append(f"{r.describe()}: the handler panicked before answering, yet "
                            f"http.response.status_code={s.attrs['http.response.status_code']}")
        route = want.get("http.route")
        name = f"{r.method} {route}" if route else r.method
        if s.name != name:
            problems.append(f"{r.describe()}: name {s.name!r}, expected {name!r}")
        if s.kind != SPAN_KIND_SERVER:
            problems.append(f"{r.describe()}: kind {s.kind}, expected SERVER")
        if s.scope_name != "gospan":
            problems.append(f"{r.describe()}: scope {s.scope_name!r}, expected 'gospan'")
        if s.parent_span_id:
            problems.append(f"{r.describe()}: has a parent {s.parent_span_id.hex()} though the "
                            f"request carried no traceparent")
        if not r.long and "gospan.truncated" in s.attrs:
            problems.append(f"{r.describe()}: gospan.truncated={s.attrs['gospan.truncated']!r} "
                            f"though nothing exceeds a bound")
        size = s.attrs.get("http.request.body.size")
        if size is not None and size != len(r.body or b""):
            problems.append(f"{r.describe()}: http.request.body.size={size}, "
                            f"sent {len(r.body or b'')}")
    fail_with(problems, "span attributes differ from their request's")


def test_status_error_only_for_5xx_and_panics(run, matched):
    pairs, _ = matched
    problems = []
    for r, s in pairs:
        failed = r.status is None or r.status >= 500
        if failed != (s.status_code == STATUS_ERROR):
            problems.append(f"{r.describe()}: span status code {s.status_code}")
        if r.status is None and not s.attrs.get("error.type"):
            problems.append(f"{r.describe()}: panicked, but no error.type")
        if r.status is not None and r.status >= 500 and s.attrs.get("error.type") != str(
                r.status):
            problems.append(f"{r.describe()}: error.type={s.attrs.get('error.type')!r}, "
                            f"expected '{r.status}'")
    fail_with(problems, "spans have the wrong status")
    kinds = {(r.status is None, (r.status or 0) // 100) for r, _ in pairs}
    assert {(True, 0), (False, 2), (False, 4), (False, 5)} <= kinds


def test_span_times_lie_inside_the_client_window(run, matched):
    pairs, _ = matched
    problems = []
    for r, s in pairs:
        if not s.start_ns <= s.end_ns:
            problems.append(f"{r.describe()}: ends before it starts ({s.start_ns} > {s.end_ns})")
        if s.start_ns < r.t0 - SLACK_NS:
            problems.append(f"{r.describe()}: starts {(r.t0 - s.start_ns) / 1e6:.3f} ms before "
                            f"the client sent it")
        if s.end_ns > r.t1 + SLACK_NS:
            problems.append(f"{r.describe()}: ends {(s.end_ns - r.t1) / 1e6:.3f} ms after the "
                            f"client had the whole response")
    fail_with(problems, "spans lie outside their request's wall-clock window")


def test_slow_handler_spans_last_as_long_as_it_sleeps(matched):
    pairs, _ = matched
    slow = [(r, s) for r, s in pairs if r.min_ms]
    assert len(slow) >= 70, f"only {len(slow)} spans pair with /slow requests"
    short = [f"{r.describe()}: lasted {(s.end_ns - s.start_ns) / 1e6:.3f} ms"
             for r, s in slow if s.end_ns - s.start_ns < r.min_ms * 1_000_000]
    fail_with(short, "spans of the slow handler are shorter than its sleep")


def test_ids_are_unique_and_well_formed(run):
    bad = [span_str(s) for s in run.spans
           if len(s.trace_id) != 16 or not any(s.trace_id)
           or len(s.span_id) != 8 or not any(s.span_id)]
    fail_with(bad, "spans have malformed ids")
    assert len({s.span_id for s in run.spans}) == len(run.spans), "span ids repeat"
    assert len({s.trace_id for s in run.spans}) == len(run.spans), "trace ids repeat"


def test_concurrent_requests_do_not_leak_into_each_other(matched):
    # Fields of one request showing up in another's span: the method, status and client port
    # must all be the span's own request's, for every request that shared the service's time.
    pairs, _ = matched
    mixed = [(r, s) for r, s in pairs if 28 <= r.n < 28 + CONCURRENT_REQUESTS]
    assert len(mixed) == CONCURRENT_REQUESTS, (
        f"only {len(mixed)} of {CONCURRENT_REQUESTS} concurrent requests have a span")
    crossed = [f"{r.describe()} port {r.local_port}: {span_str(s)}" for r, s in mixed
               if (s.attrs.get("http.request.method"), s.attrs.get("http.response.status_code"),
                   s.attrs.get("network.peer.port")) != (r.method, r.status, r.local_port)]
    fail_with(crossed, "spans carry another request's method, status or client port")


# ---- strings ----------------------------------------------------------------------------------


def test_long_path_is_cut_to_a_valid_utf8_prefix(matched):
    pairs, _ = matched
    longs = [(r, s) for r, s in pairs if r.long]
    assert len(longs) == 1, "no span pairs with the over-long path (see the pairing test)"
    r, s = longs[0]
    got = s.attrs.get("url.path")
    assert isinstance(got, str), f"url.path={got!r}"
    raw = got.encode("utf-8")
    real = r.path.encode("utf-8")
    tail = f"(it ends {raw[-8:]!r}; the real path goes on {real[len(raw) - 8:len(raw) + 4]!r})"
    assert len(raw) <= MAX_PATH, f"url.path is {len(raw)} bytes, more than {MAX_PATH} {tail}"
    assert real.startswith(raw), (f"url.path is not a prefix of the real path {tail}: a cut "
                                  f"must end on a character boundary")
    # The bound falls inside a three-byte character: at most two bytes may be given up.
    assert len(raw) >= MAX_PATH - 2, f"url.path was cut to {len(raw)} bytes"
    assert "url.path" in str(s.attrs.get("gospan.truncated", "")), (
        f"gospan.truncated={s.attrs.get('gospan.truncated')!r} does not name url.path")


def test_percent_encoded_paths_are_decoded(matched):
    pairs, _ = matched
    encoded = [(r, s) for r, s in pairs if "%" in r.target and not r.long]
    assert len(encoded) == 2, "the percent-encoded paths have no spans (see the pairing test)"
    for r, s in encoded:
        assert s.attrs.get("url.path") == r.path, f"{r.describe()}: {s.attrs.get('url.path')!r}"
    assert any("日本" in r.path for r, _ in encoded)


# ---- resource ---------------------------------------------------------------------------------


def test_resource_describes_the_service(run, go_version):
    resources = {tuple(sorted((k, repr(v)) for k, v in s.resource.items())) for s in run.spans}
    assert len(resources) == 1, f"spans of one process carry {len(resources)} resources"
    res = run.spans[0].resource
    assert res.get("process.pid") == run.pid, res
    assert res.get("service.name") == "httpserver", res
    assert res.get("process.executable.name") == "httpserver", res
    assert res.get("telemetry.sdk.name") == "gospan", res
    for key in ("telemetry.sdk.language", "telemetry.sdk.version", "process.runtime.name"):
        assert isinstance(res.get(key), str) and res[key], f"{key}={res.get(key)!r}"
    version = res.get("process.runtime.version")
    assert isinstance(version, str) and go_version.removeprefix("go") in version, (
        f"process.runtime.version={version!r}, the service was built with {go_version}")
    assert res.get("host.name") == socket.gethostname(), res


# ---- what gospan takes from the kernel ----------------------------------------------------------

# The tables of calls in flight of the families httpserver does not have (gRPC, data stores,
# function spans, fasthttp, the Kafka clients): made only when a target needs them. Each is an
# LRU hash, allocated whole when made; all of them together were 150 of 215 MiB.
OTHER_FAMILIES_MAPS = ("rpc_", "db_calls", "span_stacks", "fh_", "kafka_sarama_", "kafka_franz_",
                       "kafka_consumers", "kafka_sends")
# What a net/http service's gospan may lock of the kernel's memory in maps: 63 MiB on 2026-12-07
# (the goroutine and in-flight request tables, the ring buffer).
MAPS_MIB_AT_MOST = 100


def gospan_maps(pid):
    """{name: bytes of locked memory} of the BPF maps the process PID holds, from its
    /proc/PID/fdinfo and bpftool (names are not in fdinfo)."""
    ids = {}
    for info in Path(f"/proc/{pid}/fdinfo").iterdir():
        try:
            text = info.read_text()
        except OSError:
            continue
        m, mem = re.search(r"^map_id:\s*(\d+)", text, re.M), re.search(r"^memlock:\s*(\d+)",
                                                                        text, re.M)
        if m and mem:
            ids[m.group(1)] = int(mem.group(1))
    shown = json.loads(subprocess.run(["bpftool", "-j", "map", "show"], check=True,
                                      capture_output=True, text=True).stdout)
    return {m.get("name", f"id {m['id']}"): ids[str(m["id"])] for m in shown
            if str(m["id"]) in ids}


def test_maps_of_families_the_service_lacks_are_not_made(start_service, start_gospan):
    if shutil.which("bpftool") is None:
        pytest.skip("bpftool is not installed (make deps installs Debian's bpftool package)")
    svc = start_service()
    g = start_gospan(svc.pid)
    g.wait_attached()
    maps = gospan_maps(g.proc.pid)
    assert "goroutines" in maps, f"not gospan's maps: {sorted(maps)}"
    made = sorted(n for n in maps if n.startswith(OTHER_FAMILIES_MAPS))
    assert not made, f"made for a net/http service: {made}"
    total = sum(maps.values()) / 2**20
    assert total <= MAPS_MIB_AT_MOST, (
        f"{total:.1f} MiB locked in {len(maps)} maps: "
        + ", ".join(f"{n} {b / 2**20:.1f}" for n, b in sorted(maps.items(), key=lambda x: -x[1])))
    assert g.stop(signal.SIGTERM) == 0, g.stderr
