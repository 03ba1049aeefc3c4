"""Distributed traces across two traced processes: examples/frontend serves requests and calls
examples/backend with net/http's client; one gospan per process exports to the same OTLP receiver.

What gospan must make of it:

- a request to the frontend is one trace: frontend SERVER -> frontend CLIENT (one per call) ->
  backend SERVER, with exact parent ids and nested times, also when the call runs on a goroutine
  the handler started;
- the CLIENT span is named by the method and carries url.full (query values redacted),
  server.address, server.port, http.response.status_code, network.protocol.version; it is ERROR for
  a 4xx/5xx answer and for a transport error (then error.type and no status code);
- an incoming W3C traceparent is joined (same trace id, the caller's span as parent, tracestate
  kept); outgoing calls carry a traceparent naming the CLIENT span, which the backend echoes back;
- calls made outside any request (the frontend's -background job) are roots of their own traces.

The traceparent goes out through gospan's socket-layer writer (sockops + sk_msg, attached to the
traced processes' cgroup v2), which works on kernels in lockdown too, where nothing may write
into a process's memory. Where it cannot work (a host with no cgroup v2 hierarchy) gospan still
makes CLIENT spans and the backend's requests start traces of their own: the tests then check
that instead of the cross-process link. With CI=true that fallback is a failure: CI's machines
have cgroup v2, and the link must be seen there.

The sampled flag of an incoming traceparent is honoured as the OpenTelemetry specification's
default sampler does it: ParentBased(root=AlwaysOn) records a span only when its parent is
sampled, so a request arriving with flags 00 produces no span in either process (the trace
context still travels on, unsampled). Spans that are exported carry flags 01 when they say
anything about it (OTLP Span.flags, bits 0-7: W3C trace flags; 0 means "not said").

Everything here is judged on what the official opentelemetry-proto decoder made of gospan's exports.
"""

import http.client
import json
import platform
import re
import shutil
import subprocess
import threading
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import pytest

from conftest import (REPO, STATUS_ERROR, STATUS_UNSET, Gospan, OtlpReceiver, Service,
                      _clean_env, _go_env, CI, stop_cleanly, trace_context_unavailable)

FRONTEND_SRC = REPO / "examples" / "frontend"
BACKEND_SRC = REPO / "examples" / "backend"

SPAN_KIND_SERVER, SPAN_KIND_CLIENT = 2, 3  # trace.proto: Span.SpanKind
CROSS_PROCESS_SLACK_NS = 1_000_000  # the same host clock, converted by two gospans
WINDOW_SLACK_NS = 1_000_000  # spans against the test's wall clock (as test_http_server.py)
HTTP_TIMEOUT = 15.0
SPAN_TIMEOUT = 15.0  # batches go out every 200 ms; this is only an upper bound
SETTLE = 1.0  # after the expected spans arrived, how long extra ones get to show up
CONCURRENCY = 64  # goroutines calling through the frontend's one keep-alive Transport
SPAN_FLAGS_TRACE_FLAGS_MASK = 0xFF  # trace.proto: SpanFlags
SPAN_FLAGS_CONTEXT_HAS_IS_REMOTE = 0x100
SPAN_FLAGS_CONTEXT_IS_REMOTE = 0x200

TRACEPARENT_RE = re.compile(r"^00-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$")
# What gospan prints when it cannot write traceparent into outgoing requests.
NO_CONTEXT_WARNING = re.compile(r"outgoing trace context is off")


# Where gospan cannot send trace context (no cgroup v2), tests of outgoing trace context check what
# it must do instead: touch no request, and keep making spans. They are not skipped: the fallback
# is behaviour users rely on there; test_trace_context_goes_out_in_ci keeps CI on the real path.
NO_PROPAGATION = trace_context_unavailable()


# ---- the two services ---------------------------------------------------------------------------


def build_example(src, build_dir, go_version):
    """Builds the Go program in SRC into BUILD/e2e/<name> (go build is incremental)."""
    out = build_dir / "e2e" / src.name
    out.parent.mkdir(parents=True, exist_ok=True)
    res = subprocess.run(["go", "build", "-o", str(out), "."], cwd=src, capture_output=True,
                         text=True, timeout=300, env=_go_env())
    if res.returncode != 0:
        pytest.fail(f"cannot build '{src}' with {go_version}:\n{res.stderr}")
    return out


@pytest.fixture(scope="session")
def frontend_bin(build_dir, go_version, bpf_ready):
    return build_example(FRONTEND_SRC, build_dir, go_version)


@pytest.fixture(scope="session")
def backend_bin(build_dir, go_version, bpf_ready):
    return build_example(BACKEND_SRC, build_dir, go_version)


class GoService(Service):
    """One of the example services, on a free loopback port, with extra command-line ARGS;
    PREFIX: a command that execs it."""

    def __init__(self, binary, args=(), prefix=()):
        super().__init__(binary, env=_clean_env(), args=args, prefix=prefix)


@dataclass
class Traced:
    """A backend, a frontend calling it, and one gospan on each, exporting to RECEIVER."""

    backend: GoService
    frontend: GoService
    receiver: OtlpReceiver
    gospans: dict  # service name -> Gospan
    propagates: bool  # outgoing requests can carry traceparent here (a cgroup v2 is mounted)

    def stderr(self):
        return "\n".join(f"--- gospan on {name} (stderr) ---\n{g.stderr}"
                         for name, g in self.gospans.items())


def start_traced(backend_bin, frontend_bin, start_gospan, receiver, cleanup, frontend_args=(),
                 env=None):
    """Starts the backend, the frontend pointed at it, and a gospan on each; waits for both
    gospans to attach. Everything started is appended to CLEANUP (a list of callables, to be
    called last first by run_cleanup): the gospans are stopped before the services, and must
    end cleanly."""
    backend = GoService(backend_bin)
    cleanup.append(backend.stop)
    frontend = GoService(frontend_bin, ["-backend", backend.base_url, *frontend_args])
    cleanup.append(frontend.stop)
    gospans = {}
    for svc in (backend, frontend):
        gospans[svc.name] = start_gospan(svc.pid, receiver, env=env)
    cleanup.append(lambda: stop_cleanly(gospans))
    for svc in (backend, frontend):
        line = gospans[svc.name].wait_attached()
        assert f"pid {svc.pid}" in line, f"gospan on {svc.name} attached elsewhere: {line!r}"
    return Traced(backend, frontend, receiver, gospans, NO_PROPAGATION is None)


@pytest.fixture(scope="module")
def traced(backend_bin, frontend_bin, start_gospan, otlp_receiver):
    cleanup = []
    try:
        yield start_traced(backend_bin, frontend_bin, start_gospan, otlp_receiver, cleanup)
    finally:
        run_cleanup(cleanup)


def run_cleanup(cleanup):
    """Calls every callable of CLEANUP, last first, all of them even when one fails; then
    raises the first failure."""
    first = None
    for stop in reversed(cleanup):
        try:
            stop()
        except Exception as e:  # noqa: BLE001 - raised again below, after the rest ran
            first = first or e
    if first is not None:
        raise first


# ---- requests -----------------------------------------------------------------------------------


@dataclass
class Sent:
    path: str
    status: int
    body: dict | None
    t0: int  # the test's wall clock around the request, ns
    t1: int

    def calls(self, via=None):
        """The backend calls the frontend reported, optionally only those made VIA."""
        return [c for c in (self.body or {}).get("calls", []) if via is None or c["via"] == via]

    def echoed_traceparent(self, via):
        """The traceparent the backend received on the call made VIA ('' when none)."""
        calls = self.calls(via)
        assert len(calls) == 1, f"the frontend's answer has no single '{via}' call: {self.body}"
        return calls[0]["body"]["traceparent"]


def get(base_url, path, headers=None):
    host, port = base_url.removeprefix("http://").rsplit(":", 1)
    conn = http.client.HTTPConnection(host, int(port), timeout=HTTP_TIMEOUT)
    try:
        t0 = time.time_ns()
        conn.request("GET", path, headers=headers or {})
        resp = conn.getresponse()
        raw = resp.read()
        t1 = time.time_ns()
    finally:
        conn.close()
    try:
        body = json.loads(raw)
    except ValueError:
        body = None
    return Sent(path, resp.status, body, t0, t1)


def unique(tag):
    return f"{tag}-{uuid.uuid4().hex[:12]}"


def random_context():
    return uuid.uuid4().hex, uuid.uuid4().hex[:16]


# ---- finding spans ------------------------------------------------------------------------------


def describe(s):
    kind = {SPAN_KIND_SERVER: "SERVER", SPAN_KIND_CLIENT: "CLIENT"}.get(s.kind, str(s.kind))
    where = s.attrs.get("url.path") or s.attrs.get("url.full")
    return (f"{s.resource.get('service.name')}/{s.resource.get('process.pid')} {kind} {s.name!r} "
            f"{where} trace={s.trace_id.hex()} span={s.span_id.hex()} "
            f"parent={s.parent_span_id.hex() or '-'} status={s.status_code}")


def describe_all(spans, limit=40):
    lines = [describe(s) for s in spans[:limit]]
    if len(spans) > limit:
        lines.append(f"... and {len(spans) - limit} more")
    return "\n".join(lines) or "(no spans)"


def wait_until(receiver, pred, timeout=SPAN_TIMEOUT):
    """Polls the receiver until PRED(spans) is truthy; returns its last value and the spans."""
    deadline = time.monotonic() + timeout
    while True:
        spans = receiver.snapshot()
        got = pred(spans)
        if got or time.monotonic() > deadline:
            return got, spans
        time.sleep(0.05)


def of_pid(spans, pid, kind=None):
    return [s for s in spans if s.resource.get("process.pid") == pid
            and (kind is None or s.kind == kind)]


def server_spans(spans, svc, path):
    return [s for s in of_pid(spans, svc.pid, SPAN_KIND_SERVER) if s.attrs.get("url.path") == path]


def trace_of(spans, trace_id):
    return [s for s in spans if s.trace_id == trace_id]


@dataclass
class Trace:
    """What one request to the frontend produced."""

    fe_server: object
    clients: list  # the frontend's CLIENT spans in the request's trace
    be_servers: list  # the backend's SERVER spans for the calls, wherever their trace is
    spans: list  # everything in the request's trace


def collect(t, path, nclients, backend_paths):
    """Waits for the spans of the frontend request PATH: its SERVER span, NCLIENTS CLIENT spans
    in its trace, and a backend SERVER span for each of BACKEND_PATHS; lets SETTLE pass for
    extra ones, then checks the counts. With propagation the backend spans are in the trace;
    without, each is the root of a trace of its own."""
    def root_of(spans):
        got = server_spans(spans, t.frontend, path)
        return got[0] if got else None

    root, spans = wait_until(t.receiver, root_of)
    assert root is not None, (
        f"no frontend SERVER span with url.path {path!r} within {SPAN_TIMEOUT:.0f} s; "
        f"received:\n{describe_all(spans)}\n{t.stderr()}")

    def backs(spans):
        return [s for p in sorted(set(backend_paths)) for s in server_spans(spans, t.backend, p)]

    def complete(spans):
        return (len(of_pid(trace_of(spans, root.trace_id), t.frontend.pid)) >= 1 + nclients
                and len(backs(spans)) >= len(backend_paths))

    wait_until(t.receiver, complete)
    time.sleep(SETTLE)
    spans = t.receiver.snapshot()
    mine = trace_of(spans, root.trace_id)
    fe = of_pid(mine, t.frontend.pid)
    why = f"\nreceived:\n{describe_all(spans)}\n{t.stderr()}"
    assert len(server_spans(spans, t.frontend, path)) == 1, f"{path}: not one SERVER span{why}"
    clients = [s for s in fe if s.kind == SPAN_KIND_CLIENT]
    assert len(fe) == 1 + nclients and len(clients) == nclients, (
        f"trace {root.trace_id.hex()} of {path} has {len(fe)} frontend spans ({len(clients)} "
        f"CLIENT), expected its SERVER span and {nclients} CLIENT:\n{describe_all(mine)}{why}")
    be = backs(spans)
    assert len(be) == len(backend_paths), (
        f"{path}: {len(be)} backend SERVER spans for {backend_paths}, expected "
        f"{len(backend_paths)}{why}")
    if t.propagates:
        strays = [s for s in be if s.trace_id != root.trace_id]
        assert not strays, f"{path}: backend spans outside the request's trace:\n" \
                           f"{describe_all(strays)}{why}"
        assert len(mine) == 1 + nclients + len(backend_paths), (
            f"trace {root.trace_id.hex()} of {path} has {len(mine)} spans, expected "
            f"{1 + nclients + len(backend_paths)}:\n{describe_all(mine)}{why}")
    else:
        assert len(mine) == 1 + nclients, f"{path}: {describe_all(mine)}{why}"
        for s in be:
            assert not s.parent_span_id and not trace_of(spans, s.trace_id)[1:], (
                f"{path}: without propagation ({NO_PROPAGATION}) a backend span must be alone "
                f"in a trace of its own:\n{describe(s)}{why}")
    return Trace(root, clients, be, mine)


def work_url(t, n, via):
    # The frontend calls /work/N?direct=yes (or spawn=yes); query values are replaced by
    # "REDACTED" in url.full, as they may carry secrets.
    return f"{t.backend.base_url}/work/{n}?{via}=REDACTED"


# ---- checks -------------------------------------------------------------------------------------


def check_client(c, url, status=200):
    """A CLIENT span of the frontend for GET URL answered with STATUS (None: transport error).
    Every mismatch is reported at once."""
    a = c.attrs
    want = {"http.request.method": "GET", "url.full": url, "server.address": "127.0.0.1",
            "server.port": int(url.split(":")[2].split("/")[0])}
    if status is not None:
        want.update({"http.response.status_code": status, "network.protocol.version": "1.1"})
    wrong = [f"{k}={a.get(k)!r}, expected {v!r}" for k, v in want.items() if a.get(k) != v]
    if status is None and "http.response.status_code" in a:
        wrong.append("http.response.status_code is set though no response came")
    if status is not None and status < 400:
        if c.status_code != STATUS_UNSET:
            wrong.append(f"status {c.status_code} ({c.status_message!r}), expected UNSET")
        if "error.type" in a:
            wrong.append(f"error.type={a['error.type']!r} on a successful call")
    else:
        if c.status_code != STATUS_ERROR:
            wrong.append(f"status {c.status_code}, expected ERROR")
        if not a.get("error.type"):
            wrong.append("no error.type on a failed call")
    if c.kind != SPAN_KIND_CLIENT or c.name != "GET":
        wrong.append(f"kind {c.kind} name {c.name!r}, expected CLIENT 'GET'")
    if c.resource.get("service.name") != "frontend" or c.scope_name != "gospan":
        wrong.append(f"service.name {c.resource.get('service.name')!r} scope {c.scope_name!r}")
    assert not wrong, (f"CLIENT span for {url}: " + "; ".join(wrong)
                       + f"\n  {describe(c)}\n  attributes: {a}")


def check_backend_server(t, s, n):
    assert s.name == "GET /work/{id}", describe(s)
    assert s.attrs.get("url.path") == f"/work/{n}", s.attrs
    assert s.attrs.get("http.route") == "/work/{id}", s.attrs
    assert s.attrs.get("http.response.status_code") == 200, s.attrs
    assert s.attrs.get("server.port") == t.backend.port, s.attrs
    assert s.resource.get("service.name") == "backend", s.resource
    assert s.status_code == STATUS_UNSET, describe(s)


def check_nested(inner, outer, slack, what):
    assert outer.start_ns - slack <= inner.start_ns <= inner.end_ns <= outer.end_ns + slack, (
        f"{what}: [{inner.start_ns}, {inner.end_ns}] is not within "
        f"[{outer.start_ns}, {outer.end_ns}] (slack {slack} ns)\n"
        f"  inner: {describe(inner)}\n  outer: {describe(outer)}")


def check_sampled_flags(s):
    """OTLP Span.flags: 0 says nothing; otherwise its trace flags must say 'sampled'."""
    flags = s.proto.flags
    if flags:
        assert flags & SPAN_FLAGS_TRACE_FLAGS_MASK == 0x01, f"flags {flags:#x}: {describe(s)}"


def check_root(sent, tr, path, route):
    s = tr.fe_server
    assert s.parent_span_id == b"", f"a request without traceparent has a parent: {describe(s)}"
    assert s.name == f"GET {route}", describe(s)
    assert s.attrs.get("url.path") == path, s.attrs
    assert s.attrs.get("http.response.status_code") == sent.status, s.attrs
    assert s.resource.get("service.name") == "frontend", s.resource
    assert sent.t0 - WINDOW_SLACK_NS <= s.start_ns <= s.end_ns <= sent.t1 + WINDOW_SLACK_NS, (
        f"the frontend SERVER span [{s.start_ns}, {s.end_ns}] is outside the request's window "
        f"[{sent.t0}, {sent.t1}]")


def check_call(t, sent, tr, client, be_server, n, via):
    """One backend call of a traced request: ids, names, attributes, times, echoed context."""
    assert client.trace_id == tr.fe_server.trace_id
    assert client.parent_span_id == tr.fe_server.span_id, (
        f"the CLIENT span's parent is not the frontend SERVER span (call made {via}):\n"
        f"  server: {describe(tr.fe_server)}\n  client: {describe(client)}")
    check_client(client, work_url(t, n, via))
    check_backend_server(t, be_server, n)
    check_nested(client, tr.fe_server, 0, "CLIENT within the frontend SERVER span (same process)")
    check_nested(be_server, client, CROSS_PROCESS_SLACK_NS,
                 "backend SERVER within the frontend CLIENT span (across processes)")
    for s in (tr.fe_server, client, be_server):
        check_sampled_flags(s)
    tp = sent.echoed_traceparent(via)
    if not t.propagates:
        assert tp == "", f"the backend received traceparent {tp!r} though none can be written"
        return
    assert be_server.trace_id == tr.fe_server.trace_id
    assert be_server.parent_span_id == client.span_id, (
        f"the backend SERVER span's parent is not the frontend CLIENT span:\n"
        f"  client:  {describe(client)}\n  backend: {describe(be_server)}")
    want = f"00-{tr.fe_server.trace_id.hex()}-{client.span_id.hex()}-01"
    assert tp == want, (f"the backend received traceparent {tp!r}, expected {want!r} "
                        f"(trace id, the CLIENT span's id, sampled)")


def single_call(t, sent, path, route, n, via):
    tr = collect(t, path, 1, [f"/work/{n}"])
    check_root(sent, tr, path, route)
    check_call(t, sent, tr, tr.clients[0], tr.be_servers[0], n, via)
    return tr


# ---- the tests ----------------------------------------------------------------------------------


def test_direct_call_is_one_trace_of_three_spans(traced):
    n = unique("direct")
    sent = get(traced.frontend.base_url, f"/direct/{n}")
    assert sent.status == 200, sent
    single_call(traced, sent, f"/direct/{n}", "/direct/{id}", n, "direct")


def test_call_from_spawned_goroutine_is_child_of_the_request(traced):
    n = unique("spawn")
    sent = get(traced.frontend.base_url, f"/spawn/{n}")
    assert sent.status == 200, sent
    single_call(traced, sent, f"/spawn/{n}", "/spawn/{id}", n, "spawn")


def test_direct_and_spawned_calls_are_two_children(traced):
    n = unique("both")
    sent = get(traced.frontend.base_url, f"/both/{n}")
    assert sent.status == 200, sent
    tr = collect(traced, f"/both/{n}", 2, [f"/work/{n}", f"/work/{n}"])
    check_root(sent, tr, f"/both/{n}", "/both/{id}")
    assert tr.clients[0].span_id != tr.clients[1].span_id
    for via in ("direct", "spawn"):
        url = work_url(traced, n, via)
        client = [c for c in tr.clients if c.attrs.get("url.full") == url]
        assert len(client) == 1, f"no single CLIENT span for {url}:\n{describe_all(tr.spans)}"
        if traced.propagates:
            child = [s for s in tr.be_servers if s.parent_span_id == client[0].span_id]
        else:
            # Nothing links them: take a backend span that lies within the call.
            child = [s for s in tr.be_servers
                     if client[0].start_ns - CROSS_PROCESS_SLACK_NS <= s.start_ns
                     and s.end_ns <= client[0].end_ns + CROSS_PROCESS_SLACK_NS][:1]
        assert len(child) == 1, (f"no single backend SERVER span for the {via} CLIENT span:\n"
                                 f"{describe_all(tr.spans + tr.be_servers)}")
        check_call(traced, sent, tr, client[0], child[0], n, via)


def test_incoming_traceparent_is_joined(traced):
    trace_id, parent_id = random_context()
    tracestate = "gospan=e2e,congo=t61rcWkgMzE"
    n = unique("joined")
    sent = get(traced.frontend.base_url, f"/direct/{n}",
               {"traceparent": f"00-{trace_id}-{parent_id}-01", "tracestate": tracestate})
    assert sent.status == 200, sent
    tr = collect(traced, f"/direct/{n}", 1, [f"/work/{n}"])
    s = tr.fe_server
    assert s.trace_id.hex() == trace_id, (
        f"the frontend SERVER span did not join trace {trace_id}: {describe(s)}")
    assert s.parent_span_id.hex() == parent_id, (
        f"the frontend SERVER span's parent is not the caller's span {parent_id}: {describe(s)}")
    assert s.proto.trace_state == tracestate, (
        f"the incoming tracestate is not the span's: {s.proto.trace_state!r}")
    flags = s.proto.flags
    if flags & SPAN_FLAGS_CONTEXT_HAS_IS_REMOTE:
        assert flags & SPAN_FLAGS_CONTEXT_IS_REMOTE, f"remote parent not flagged: {flags:#x}"
    check_call(traced, sent, tr, tr.clients[0], tr.be_servers[0], n, "direct")
    # W3C: the tracestate goes on with the trace, unchanged.
    echoed = sent.calls("direct")[0]["body"]["tracestate"]
    assert echoed == (tracestate if traced.propagates else ""), (
        f"the backend received tracestate {echoed!r}")


def test_unsampled_traceparent_exports_nothing(traced):
    """flags 00: the caller did not sample, so no process records a span of that trace. A
    sampled request sent right after it marks the point by which both gospans have exported."""
    trace_id, parent_id = random_context()
    n = unique("unsampled")
    sent = get(traced.frontend.base_url, f"/direct/{n}",
               {"traceparent": f"00-{trace_id}-{parent_id}-00"})
    assert sent.status == 200, sent
    marker = unique("after-unsampled")
    assert get(traced.frontend.base_url, f"/direct/{marker}").status == 200
    collect(traced, f"/direct/{marker}", 1, [f"/work/{marker}"])  # SETTLE included
    spans = traced.receiver.snapshot()
    leaked = [s for s in spans if s.trace_id.hex() == trace_id
              or s.attrs.get("url.path") == f"/direct/{n}"
              or f"/work/{n}?" in (s.attrs.get("url.full") or "")]
    if traced.propagates:
        # The backend was told 'not sampled' too.
        leaked += server_spans(spans, traced.backend, f"/work/{n}")
    assert not leaked, ("spans exported for a request whose traceparent says 'not sampled' "
                        f"(flags 00):\n{describe_all(leaked)}")


def test_unsampled_context_still_travels_on(traced):
    """W3C trace context: a participant that does not record still passes the trace on, with
    the sampled flag clear, so the backend sees the caller's trace id and flags 00. Where
    nothing can be passed on, the backend must see no traceparent at all."""
    trace_id, parent_id = random_context()
    n = unique("unsampled-fwd")
    sent = get(traced.frontend.base_url, f"/direct/{n}",
               {"traceparent": f"00-{trace_id}-{parent_id}-00"})
    assert sent.status == 200, sent
    tp = sent.echoed_traceparent("direct")
    if NO_PROPAGATION:
        assert tp == "", f"{NO_PROPAGATION}, yet the backend received {tp!r}"
        return
    m = TRACEPARENT_RE.match(tp)
    assert m, f"the backend received no valid traceparent: {tp!r}"
    assert m.group(1) == trace_id and m.group(3) == "00", (
        f"the backend received {tp!r}; expected trace {trace_id} with flags 00")


def test_invalid_traceparent_starts_a_new_trace(traced):
    """An all-zero trace id is invalid (W3C): the request is traced as if it had none."""
    n = unique("badparent")
    sent = get(traced.frontend.base_url, f"/direct/{n}",
               {"traceparent": f"00-{'0' * 32}-{uuid.uuid4().hex[:16]}-01"})
    assert sent.status == 200, sent
    tr = single_call(traced, sent, f"/direct/{n}", "/direct/{id}", n, "direct")
    assert tr.fe_server.trace_id != bytes(16), describe(tr.fe_server)


def test_injected_traceparent_names_the_client_span(traced):
    """The backend receives a traceparent naming the frontend's CLIENT span. Where gospan cannot
    send it, it receives none, and the backend's span starts a trace of its own."""
    n = unique("inject")
    sent = get(traced.frontend.base_url, f"/direct/{n}")
    assert sent.status == 200, sent
    tp = sent.echoed_traceparent("direct")
    if NO_PROPAGATION:
        assert tp == "", f"{NO_PROPAGATION}, yet the backend received {tp!r}"
        tr = collect(traced, f"/direct/{n}", 1, [f"/work/{n}"])
        back = server_spans(traced.receiver.snapshot(), traced.backend, f"/work/{n}")
        assert len(back) == 1 and back[0].trace_id != tr.fe_server.trace_id, describe_all(back)
        assert back[0].parent_span_id == b"", describe_all(back)
        return
    m = TRACEPARENT_RE.match(tp)
    assert m, f"the backend received no valid version-00 traceparent: {tp!r} ({sent.body})"
    tr = collect(traced, f"/direct/{n}", 1, [f"/work/{n}"])
    assert m.group(1) == tr.fe_server.trace_id.hex(), (
        f"injected trace id {m.group(1)} is not the trace's {tr.fe_server.trace_id.hex()}")
    assert m.group(2) == tr.clients[0].span_id.hex(), (
        f"injected parent id {m.group(2)} is not the CLIENT span's "
        f"{tr.clients[0].span_id.hex()}")
    assert m.group(3) == "01", f"injected flags {m.group(3)}, expected 01 (sampled)"


def test_trace_context_goes_out_in_ci():
    if CI:
        assert NO_PROPAGATION is None, f"CI must see trace context go out, but: {NO_PROPAGATION}"


# The cgroup2 mount a hybrid host (and this project's CI) has beside its v1 hierarchies.
UNIFIED = "/sys/fs/cgroup/unified"


def cgroup2_super_options(mountpoint):
    """The super options of the cgroup2 mount at MOUNTPOINT in this mount namespace, or None."""
    for line in Path("/proc/self/mountinfo").read_text().splitlines():
        fields, _, tail = line.partition(" - ")
        if fields.split()[4] == mountpoint and tail.startswith("cgroup2 "):
            return tail.split()[2]
    return None


def test_trace_context_goes_out_without_a_cgroup2_mount(backend_bin, frontend_bin, gospan_bin,
                                                        start_gospan, otlp_receiver):
    """gospan in a mount namespace without a cgroup2 mount, as in a Docker container on a cgroup
    v1 or hybrid host, mounts the hierarchy itself (detached, fsopen and fsmount) and still
    sends trace context: the backend receives a traceparent naming the frontend's CLIENT span.
    The hierarchy's flags, which such a mount sets for the whole host, stay as they were."""
    before = cgroup2_super_options(UNIFIED)
    if before is None:
        pytest.skip(f"no cgroup2 mount at {UNIFIED} to take away from gospan (a cgroup v2-only "
                    f"host, where containers get one)")
    cleanup = []
    try:
        backend = GoService(backend_bin)
        cleanup.append(backend.stop)
        frontend = GoService(frontend_bin, ["-backend", backend.base_url])
        cleanup.append(frontend.stop)
        env = _clean_env()
        env["OTEL_BSP_SCHEDULE_DELAY"] = "200"
        env["OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"] = otlp_receiver.url
        # The umount is private to the new namespace; exec leaves gospan as unshare's child.
        fe = Gospan(["unshare", "-m", "--propagation", "private", "sh", "-c",
                     f'umount {UNIFIED} && exec "$0" "$@"', str(gospan_bin),
                     "--pid", str(frontend.pid)], env)
        gospans = {"frontend": fe, "backend": start_gospan(backend.pid, otlp_receiver)}
        cleanup.append(lambda: stop_cleanly(gospans))
        for g in gospans.values():
            g.wait_attached()
        assert "mounted the hierarchy for gospan alone" in fe.stderr, fe.stderr
        assert not NO_CONTEXT_WARNING.search(fe.stderr), fe.stderr
        t = Traced(backend, frontend, otlp_receiver, gospans, True)
        n = unique("nomount")
        sent = get(frontend.base_url, f"/direct/{n}")
        assert sent.status == 200, sent
        tp = sent.echoed_traceparent("direct")
        m = TRACEPARENT_RE.match(tp)
        assert m, f"the backend received no valid traceparent: {tp!r}\n{t.stderr()}"
        tr = collect(t, f"/direct/{n}", 1, [f"/work/{n}"])
        assert m.group(1) == tr.fe_server.trace_id.hex(), describe_all(tr.spans)
        assert m.group(2) == tr.clients[0].span_id.hex(), describe_all(tr.spans)
    finally:
        run_cleanup(cleanup)
    assert cgroup2_super_options(UNIFIED) == before, "gospan's mount changed the hierarchy's flags"


def test_new_process_in_a_new_cgroup_sends_context_from_its_first_call(
        backend_bin, frontend_bin, gospan_bin, start_gospan, otlp_receiver, tmp_path):
    """--exe traces the binary's processes to come. One started under a running gospan in a
    cgroup of its own (a pod replaced, a new container) gets the socket-layer writer on that
    cgroup as it starts, not at gospan's next sync: the very first call of its very first
    request carries traceparent, and the backend's SERVER span is the CLIENT span's child."""
    if NO_PROPAGATION:
        pytest.skip(NO_PROPAGATION)
    if cgroup2_super_options(UNIFIED) is None:
        pytest.skip(f"no cgroup2 mount at {UNIFIED} to make a cgroup in")
    # A copy: no other test's frontend runs this file, so gospan --exe sees only ours.
    exe = tmp_path / "frontend"
    shutil.copy2(frontend_bin, exe)
    # Each frontend in a cgroup of its own, as each pod is: a program on a cgroup also runs in
    # the cgroups below it, so the test runner's (the root, maybe) would do for both.
    pods = [Path(UNIFIED) / f"gospan-e2e-{uuid.uuid4().hex[:12]}" for _ in range(2)]
    cleanup = []

    def start_frontend(cgroup):
        cgroup.mkdir()
        cleanup.append(lambda: cgroup.rmdir() if cgroup.exists() else None)
        svc = GoService(exe, ["-backend", backend.base_url], prefix=[
            "sh", "-c", f'echo $$ > {cgroup}/cgroup.procs && exec "$0" "$@"'])
        cleanup.append(svc.stop)  # before the rmdir: a cgroup with a process cannot go
        return svc

    try:
        backend = GoService(backend_bin)
        cleanup.append(backend.stop)
        env = _clean_env()
        env["OTEL_BSP_SCHEDULE_DELAY"] = "200"
        env["OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"] = otlp_receiver.url
        fe_gospan = Gospan([str(gospan_bin), "--exe", str(exe)], env)
        gospans = {"frontend": fe_gospan, "backend": start_gospan(backend.pid, otlp_receiver)}
        cleanup.append(lambda: stop_cleanly(gospans))
        gospans["backend"].wait_attached()
        # gospan --exe attaches at the binary's first process: the one the new one replaces.
        old = start_frontend(pods[0])
        fe_gospan.wait_attached()
        old.stop()
        frontend = start_frontend(pods[1])
        n = unique("newcg")
        sent = get(frontend.base_url, f"/direct/{n}")
        assert sent.status == 200, sent
        assert (pods[1] / "cgroup.procs").read_text().split() == [str(frontend.pid)]
        t = Traced(backend, frontend, otlp_receiver, gospans, True)
        tp = sent.echoed_traceparent("direct")
        assert TRACEPARENT_RE.match(tp), (
            f"the first call of a process started in a new cgroup went out without "
            f"traceparent (the backend received {tp!r})\n{t.stderr()}")
        tr = collect(t, f"/direct/{n}", 1, [f"/work/{n}"])
        check_call(t, sent, tr, tr.clients[0], tr.be_servers[0], n, "direct")
    finally:
        run_cleanup(cleanup)


def test_gospan_says_whether_trace_context_travels(traced):
    said = [n for n, g in traced.gospans.items() if NO_CONTEXT_WARNING.search(g.stderr)]
    if traced.propagates:
        assert not said, f"gospan says outgoing trace context is off:\n{traced.stderr()}"
    else:
        assert "frontend" in said, (
            f"{NO_PROPAGATION}, and the gospan on the frontend (which makes client calls) should "
            f"say so, the one on the backend (which makes none) need not:\n{traced.stderr()}")


def test_concurrent_requests_never_cross_link(traced):
    t = traced
    ns = [unique(f"c{i}") for i in range(CONCURRENCY)]
    start = threading.Barrier(CONCURRENCY)

    def one(n):
        start.wait(HTTP_TIMEOUT)
        return get(t.frontend.base_url, f"/direct/{n}")

    with ThreadPoolExecutor(CONCURRENCY) as pool:
        sent = dict(zip(ns, pool.map(one, ns)))
    bad = [s for s in sent.values() if s.status != 200]
    assert not bad, f"{len(bad)} requests failed, e.g. {bad[0]}"

    def all_there(spans):
        roots = {n: server_spans(spans, t.frontend, f"/direct/{n}") for n in ns}
        backs = {n: server_spans(spans, t.backend, f"/work/{n}") for n in ns}
        ids = {r[0].trace_id for r in roots.values() if r}
        clients = [s for s in of_pid(spans, t.frontend.pid, SPAN_KIND_CLIENT) if s.trace_id in ids]
        done = all(roots.values()) and all(backs.values()) and len(clients) >= len(ns)
        return (roots, backs) if done else None

    got, spans = wait_until(t.receiver, all_there)
    assert got, (f"not every concurrent request's spans arrived within {SPAN_TIMEOUT:.0f} s; "
                 f"received {len(spans)} spans\n{t.stderr()}")
    time.sleep(SETTLE)
    spans = t.receiver.snapshot()
    roots = {n: server_spans(spans, t.frontend, f"/direct/{n}") for n in ns}
    backs = {n: server_spans(spans, t.backend, f"/work/{n}") for n in ns}
    assert len({r[0].trace_id for r in roots.values()}) == len(ns), "requests share trace ids"
    problems = []
    for n in ns:
        if len(roots[n]) != 1 or len(backs[n]) != 1:
            problems.append(f"{n}: {len(roots[n])} frontend and {len(backs[n])} backend SERVER "
                            f"spans")
            continue
        root, be = roots[n][0], backs[n][0]
        mine = trace_of(spans, root.trace_id)
        clients = [s for s in mine if s.kind == SPAN_KIND_CLIENT]
        tp = sent[n].echoed_traceparent("direct")
        ok = (len(clients) == 1 and clients[0].parent_span_id == root.span_id
              and clients[0].attrs.get("url.full") == work_url(t, n, "direct"))
        if t.propagates:
            ok = ok and len(mine) == 3 and be.trace_id == root.trace_id and clients and (
                be.parent_span_id == clients[0].span_id
                and tp == f"00-{root.trace_id.hex()}-{clients[0].span_id.hex()}-01")
        else:
            ok = ok and len(mine) == 2 and not be.parent_span_id and tp == ""
        if not ok:
            problems.append(f"/direct/{n} (the backend saw traceparent {tp!r}):\n"
                            f"{describe_all(mine + [be])}")
    assert not problems, (f"{len(problems)} of {len(ns)} concurrent requests have a wrong "
                          f"trace; the first ones:\n" + "\n".join(problems[:5]))


def test_transport_error_is_an_error_client_span(traced):
    sent = get(traced.frontend.base_url, "/error")
    assert sent.status == 502, sent
    call = sent.calls("error")[0]
    assert call.get("error") and "status" not in call, call
    tr = collect(traced, "/error", 1, [])
    client = tr.clients[0]
    assert client.parent_span_id == tr.fe_server.span_id, describe_all(tr.spans)
    check_client(client, call["url"], status=None)
    check_nested(client, tr.fe_server, 0, "CLIENT within the frontend SERVER span")
    assert tr.fe_server.status_code == STATUS_ERROR, describe(tr.fe_server)  # it answered 502


def test_attach_line_says_what_a_failed_call_costs(traced):
    # A call that succeeds ends on an emulated branch; one that fails on a RET of roundTrip,
    # which the kernel single-steps: the attach line says both, so neither is a surprise.
    line = traced.gospans["frontend"].wait_attached()
    made = re.search(r"(\d+) a call made", line)
    failed = re.search(r"\+ HTTP client \(single-stepped hits: (\d+) a call that fails\)", line)
    assert made, line
    if platform.machine() == "x86_64":
        assert int(made.group(1)) == 0 and failed and int(failed.group(1)) == 1, line
    else:
        # arm64 simulates a RET: a call that fails costs what one that succeeds costs (the
        # entry, a first instruction, single-stepped), and the line says nothing more.
        assert int(made.group(1)) == 1 and not failed and "+ HTTP client +" in line, line


def test_backend_500_is_an_error_client_span(traced):
    sent = get(traced.frontend.base_url, "/backend-fail")
    assert sent.status == 502, sent
    tr = collect(traced, "/backend-fail", 1, ["/fail"])
    client, be = tr.clients[0], tr.be_servers[0]
    assert client.parent_span_id == tr.fe_server.span_id, describe_all(tr.spans)
    check_client(client, f"{traced.backend.base_url}/fail", status=500)
    # Semantic conventions: with an error status code, error.type is that code as a string.
    assert client.attrs.get("error.type") == "500", client.attrs
    assert be.status_code == STATUS_ERROR and be.attrs.get("http.response.status_code") == 500, (
        describe(be))
    check_nested(be, client, CROSS_PROCESS_SLACK_NS, "backend SERVER within the CLIENT span")
    if traced.propagates:
        assert be.parent_span_id == client.span_id, describe_all(tr.spans)


def test_background_calls_are_roots(backend_bin, frontend_bin, start_gospan):
    """-background: every 200 ms the frontend calls the backend outside any request. Each call
    is a CLIENT span without parent, in a trace of its own, with the backend SERVER as child."""
    pytest.importorskip("opentelemetry.proto.collector.trace.v1.trace_service_pb2")
    rx = OtlpReceiver()
    cleanup = [rx.close]
    try:
        t = start_traced(backend_bin, frontend_bin, start_gospan, rx, cleanup,
                         frontend_args=["-background"])
        # The two gospans attach one after the other: a call made before the backend's had
        # attached has no backend span to link.
        both_attached_ns = time.time_ns()
        url = f"{t.backend.base_url}/work/bg"

        def enough(spans):
            clients = of_pid(spans, t.frontend.pid, SPAN_KIND_CLIENT)
            return clients if len(clients) >= 5 else None

        clients, spans = wait_until(rx, enough)
        assert clients, (f"fewer than 5 background CLIENT spans within {SPAN_TIMEOUT:.0f} s:\n"
                         f"{describe_all(spans)}\n{t.stderr()}")
        time.sleep(SETTLE)
        spans = rx.snapshot()
        clients = of_pid(spans, t.frontend.pid, SPAN_KIND_CLIENT)
        fe_servers = of_pid(spans, t.frontend.pid, SPAN_KIND_SERVER)
        assert not fe_servers, f"frontend SERVER spans without requests:\n{describe_all(spans)}"
        with_parent = [c for c in clients if c.parent_span_id]
        assert not with_parent, f"background calls with a parent:\n{describe_all(with_parent)}"
        assert len({c.trace_id for c in clients}) == len(clients), (
            f"background calls share traces:\n{describe_all(clients)}")
        for c in clients:
            check_client(c, url)
        backs = server_spans(spans, t.backend, "/work/bg")
        if not t.propagates:
            assert all(not b.parent_span_id for b in backs), describe_all(backs)
            return
        # Each call made once both were attached has its backend span as child, where it was
        # exported already (the last one may not be).
        by_parent = {b.parent_span_id: b for b in backs}
        after = [c for c in clients if c.start_ns > both_attached_ns]
        assert len(after) >= 3, f"{len(after)} background calls once attached:\n{describe_all(spans)}"
        linked = [c for c in clients if c.span_id in by_parent]
        assert len([c for c in after if c.span_id in by_parent]) >= len(after) - 1, (
            f"only {len(linked)} of {len(after)} background calls made once both gospans were "
            f"attached have a backend child:\n{describe_all(spans)}")
        for c in linked:
            assert by_parent[c.span_id].trace_id == c.trace_id, describe_all(spans)
            check_nested(by_parent[c.span_id], c, CROSS_PROCESS_SLACK_NS, "backend within CLIENT")
    finally:
        run_cleanup(cleanup)


def test_gospans_exit_cleanly(traced):
    """Last: both gospans flush on SIGTERM, exit 0 with no sanitizer report and dropped
    nothing."""
    stop_cleanly(traced.gospans)
    for name, g in traced.gospans.items():
        line = g.summary_line()
        assert line, f"gospan on {name} printed no summary\n{g.stderr}"
        m = re.search(r"dropped (\d+)", line)
        assert m is None or m.group(1) == "0", f"gospan on {name}: {line}"
    assert not traced.receiver.errors, traced.receiver.errors
    for svc in (traced.frontend, traced.backend):
        assert svc.alive(), f"{svc.name} died:\n{svc.err.text}"
        assert "panic" not in svc.err.text, svc.err.text
