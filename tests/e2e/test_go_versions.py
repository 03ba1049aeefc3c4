"""Every Go release and build flavour the offset tables cover, traced for real: a service built
with one toolchain per minor release (and both ends of a minor where an offset moved inside it),
each plain, stripped and PIE, plus the other build flavours on the newest release; a few requests;
the spans checked. This is what proves a table range and a binary-reading path on a live binary.

One of the requests makes the service call an untraced echo server with net/http's client: the
echo server must receive exactly one traceparent, in the trace of the service's SERVER span for
that request, naming the service's CLIENT span for the call. gospan adds it at the socket layer,
finding the writing goroutine from the thread's TLS (runtime.tlsg) and g.goid, so this proves
both on every release and flavour.

Toolchains come from the Go module proxy (golang.org/toolchain), cached in the module cache.
Services built with Go 1.22 and later use examples/httpserver (method and wildcard patterns,
so http.route is checked); older ones use tests/e2e/legacyserver.

When the whole matrix ran, COMPATIBILITY.md at the top of the repository is rewritten from the
results: it is produced by this test, never edited by hand.
"""

import json
import os
import platform
import re
import subprocess
import threading
import time
import urllib.parse
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from conftest import (CI, REPO, SLOWDOWN, STATUS_ERROR, STATUS_UNSET, Service, _clean_env,
                      kernel_probe_hits, out_of_line_page, trace_context_counters,
                      trace_context_unavailable)

# Debian's golang-1.19 package (1.19.8) is not in the tables, which list 1.19.0 and 1.19.13: its
# stripped build is traced through the "nearest release at or below" rule.
DEBIAN_GO = {"1.19.8": Path("/usr/lib/go-1.19/bin/go")}
VERSIONS = [
    "1.17.13", "1.18.10", "1.19.8", "1.19.13", "1.20.14", "1.21.13", "1.22.12", "1.23.12", "1.24.13",
    "1.25.14", "1.26.0", "1.26.11", "1.27.4",
]
NEWEST = VERSIONS[-1]

# name -> (extra environment, go build flags, what it means)
FLAVOURS = {
    "plain": ({}, [], "go build"),
    "stripped": ({}, ["-ldflags=-s -w"], "-ldflags='-s -w': no symbol table, no DWARF"),
    "pie": ({}, ["-buildmode=pie"], "-buildmode=pie: loaded at a random address"),
    "cgo": ({"CGO_ENABLED": "1"}, ["-ldflags=-linkmode=external"],
            "cgo, linked by the system linker"),
    "static": ({"CGO_ENABLED": "1"}, ["-ldflags=-linkmode=external -extldflags=-static"],
               "cgo, statically linked by the system linker"),
    "trimpath": ({}, ["-trimpath"], "-trimpath"),
    # Built as plain; gospan places its probes as on a kernel without PUSH emulation (Linux
    # before 6.9): the entries go on the stack checks' conditional jumps, which run twice when a
    # stack grows.
    "no-push": ({}, [], "go build; gospan run with GOSPAN_UPROBE_EMULATION= (placed as for a "
                "kernel that emulates neither PUSH nor long NOPs)"),
    "amd64v3": ({"GOAMD64": "v3"}, [], "GOAMD64=v3 (newer instruction encodings)"),
}
EVERY_VERSION = ["plain", "stripped", "pie"]
NEWEST_ONLY = ["cgo", "static", "trimpath", "amd64v3", "no-push"]
# What gospan's environment adds for a flavour.
GOSPAN_ENV = {"no-push": {"GOSPAN_UPROBE_EMULATION": ""}}
CASES = [(v, f) for v in VERSIONS for f in EVERY_VERSION] + [(NEWEST, f) for f in NEWEST_ONLY]

LEGACY_SRC = REPO / "tests" / "e2e" / "legacyserver"
# net/http's HTTP/2 server (over TLS), a wrapper in net/http up to Go 1.26 and the package
# net/http/internal/http2 from 1.27: each release stripped (the tables' offsets), the newest
# plain too (DWARF).
H2_SRC = REPO / "tests" / "e2e" / "h2server"
H2_CASES = [(v, "stripped") for v in VERSIONS] + [(NEWEST, "plain")]
# The HTTP/2 requests, each (X-Status asked, X-Panic asked): None writes no status (net/http
# sends 200); "recovered" panics inside the handler, which recovers and answers 500; "through"
# panics out of it, and net/http's HTTP/2 server resets the stream.
H2_REQUESTS = [(None, None), (201, None), (404, None), (503, None), (None, "recovered"),
               (None, "through")] * 2
EXAMPLE_SRC = REPO / "examples" / "httpserver"
CALLER_TRACE = "4bf92f3577b34da6a3ce929d0e0e4736"
CALLER_SPAN = "00f067aa0ba902b7"
SPAN_KIND_SERVER, SPAN_KIND_CLIENT = 2, 3  # trace.proto: Span.SpanKind
TRACEPARENT_RE = re.compile(r"^00-([0-9a-f]{32})-([0-9a-f]{16})-01$")
# The programs an outgoing call runs: roundTrip's entry and RET, and the request marker at
# Request.write's calls to Header.writeSubset.
CLIENT_PROGRAMS = ("client_entry", "client_success", "client_return", "mark_request")
# Where gospan cannot send trace context (no cgroup v2 hierarchy), the call must go out untouched
# instead; with CI=true that is a failure, as in test_distributed.py.
NO_PROPAGATION = trace_context_unavailable()
RESULTS = {}  # (version, flavour) -> "verified" or the failure
HITS = {}  # (version, flavour) -> (probe hits per server request, {client program: hits})
# (version, flavour) -> (single-stepped hits a request served, a call made), from the attach line
STEPS = {}


def single_steps(attached):
    """The attach line's single-stepped hits per request served and per call made (None: no
    probe for it)."""
    m = re.search(r"single-stepped hits: (\d+|no probe for) a request served, (\d+|no probe for) "
                  r"a call made", attached)
    assert m, attached
    return tuple(None if x == "no probe for" else int(x) for x in m.groups())


def parse(v):
    return tuple(int(x) for x in v.split("."))


ARM64 = platform.machine() == "aarch64"
# arm64 single-steps each entry probe (on the function's first instruction, an LDR; the kernel
# simulates only branches there, docs/arm64.md) and simulates the RETs: one single-stepped hit a
# request served, one a call made. amd64 emulates all of them.
EXPECTED_STEPS = (1, 1) if ARM64 else (0, 0)
# An HTTP/2 request served: the same entry; its end at the HTTP/2 server's handlerDone CALL on
# amd64 (emulated), at ServeHTTP's RETs on arm64 (simulated).
EXPECTED_H2_STEPS = 1 if ARM64 else 0
# The newest release before the register ABI on each architecture (Go 1.17 brought it to amd64,
# 1.18 to arm64), and the minor that brought it; this machine's.
BEFORE_REGABI = {"amd64": ("1.16.15", 17), "arm64": ("1.17.13", 18)}
REFUSED, REGABI = BEFORE_REGABI["arm64" if ARM64 else "amd64"]


def prebuilt(out):
    """Whether OUT was built before this run by tests/vm/run.py, for a virtual machine of
    another architecture, which has no Go toolchain (GOSPAN_VM_PREBUILT lists what it built)."""
    listed = os.environ.get("GOSPAN_VM_PREBUILT")
    return bool(listed) and os.access(out, os.X_OK) and \
        str(out) in Path(listed).read_text().splitlines()


def _go_env(version=None, extra=None):
    env = dict(os.environ)
    # -buildvcs only exists from Go 1.18 on; 1.17 refuses to start with it in GOFLAGS.
    flags = "-mod=mod" if version and parse(version) < (1, 18, 0) else "-mod=mod -buildvcs=false"
    env.update(GOTOOLCHAIN="local", CGO_ENABLED="0", GOFLAGS=flags)
    env.update(extra or {})
    env.pop("GOROOT", None)
    return env


def toolchain(version):
    """The go command of release VERSION. The go command fetches it through the module proxy
    (GOTOOLCHAIN) and caches it in the module cache; unlike `go mod download` of the toolchain
    module, this also makes it executable. Debian's release comes from its package (make deps)."""
    if version in DEBIAN_GO:
        if not os.access(DEBIAN_GO[version], os.X_OK):
            pytest.fail(f"'{DEBIAN_GO[version]}' is missing: install golang-1.19 (make deps)")
        return DEBIAN_GO[version]
    env = _go_env(version)
    env["GOTOOLCHAIN"] = f"go{version}"
    res = subprocess.run(["go", "env", "GOROOT"], capture_output=True, text=True, timeout=600,
                         env=env, cwd="/")
    if res.returncode != 0:
        pytest.fail(f"cannot get Go {version} through the module proxy:\n{res.stderr}")
    go = Path(res.stdout.strip()) / "bin" / "go"
    if not os.access(go, os.X_OK):
        pytest.fail(f"'{go}' is not executable")
    return go


def build(version, flavour, out, src=None):
    if prebuilt(out):
        return
    env, flags, _ = FLAVOURS[flavour]
    src = src or (EXAMPLE_SRC if parse(version) >= (1, 22, 0) else LEGACY_SRC)
    res = subprocess.run([str(toolchain(version)), "build", *flags, "-o", str(out), "."],
                         cwd=src, capture_output=True, text=True, timeout=600,
                         env=_go_env(version, env))
    assert res.returncode == 0, f"go{version} {flavour} build failed:\n{res.stderr}"


class EchoServer:
    """An untraced HTTP/1.1 server on loopback answering every GET with the Traceparent header
    values it received, as JSON; it keeps them too, so what came back through the traced
    service can be checked against what arrived here."""

    def __init__(self):
        self.received = []
        echo = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, fmt, *args):
                pass

            def do_GET(self):
                got = self.headers.get_all("traceparent") or []
                echo.received.append(got)
                body = json.dumps({"traceparent": got}).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self.port = self._server.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}/echo"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()

    def close(self):
        self._server.shutdown()
        self._server.server_close()


@pytest.fixture(scope="module")
def echo_server():
    srv = EchoServer()
    yield srv
    srv.close()


def check_call(spans, version, echo, answer, calls, gospan_err):
    """The /call request: one SERVER span, one CLIENT span under it, and the echo server got
    one request (CALLS: the traceparent values of each) carrying exactly one traceparent, the
    CLIENT span's, in the SERVER span's trace (none where gospan cannot send any)."""
    where = f"go{version} /call"
    assert len(calls) == 1, f"{where}: the echo server got {len(calls)} requests"
    received = calls[0]
    clients = [s for s in spans if s.kind == SPAN_KIND_CLIENT]
    assert len(clients) == 1, f"{where}: {len(clients)} CLIENT spans\n{gospan_err}"
    client = clients[0]
    server = [s for s in spans if s.kind == SPAN_KIND_SERVER and s.attrs["url.path"] == "/call"]
    assert len(server) == 1, f"{where}: {len(server)} SERVER spans"
    server = server[0]

    assert client.name == "GET", client.name
    assert client.attrs["url.full"] == echo.url, client.attrs
    assert client.attrs["server.port"] == echo.port, client.attrs
    assert client.attrs["http.response.status_code"] == 200, client.attrs
    assert client.trace_id == server.trace_id, f"{where}: CLIENT span in another trace"
    assert client.parent_span_id == server.span_id, f"{where}: CLIENT span not under SERVER"
    assert server.trace_id.hex() != CALLER_TRACE  # no traceparent came in: its own trace

    assert answer == {"traceparent": received}, f"{where}: answered {answer}, echo got {received}"
    if NO_PROPAGATION:
        assert received == [], f"{where}: traceparent {received} sent, but {NO_PROPAGATION}"
        return
    assert len(received) == 1, (f"{where}: the echo server received {len(received)} "
                                f"traceparent headers {received}\n{gospan_err}")
    m = TRACEPARENT_RE.match(received[0])
    assert m, f"{where}: malformed traceparent {received[0]!r}"
    assert m.group(1) == server.trace_id.hex(), (
        f"{where}: traceparent {received[0]} is not in the SERVER span's trace "
        f"{server.trace_id.hex()}")
    assert m.group(2) == client.span_id.hex(), (
        f"{where}: traceparent {received[0]} does not name the CLIENT span "
        f"{client.span_id.hex()}")


def probe_hits(stderr):
    """(all probe hits, {program: hits} of the programs an outgoing call runs) from gospan's
    stderr."""
    m = re.search(r"probe hits: (\d+)[^\n]*", stderr)
    assert m, f"gospan printed no probe hit count:\n{stderr}"
    per = {k: int(v) for k, v in re.findall(r"(\w+)=(\d+)", m.group(0))}
    return int(m.group(1)), {p: per.get(p, 0) for p in CLIENT_PROGRAMS}


def check_spans(spans, version, svc, modern, gospan_err):
    servers = [s for s in spans if s.kind == SPAN_KIND_SERVER]
    assert len(servers) == 5, f"go{version}: {len(servers)} SERVER spans\n{gospan_err}"
    assert len(spans) == 6, f"go{version}: {len(spans)} spans\n{gospan_err}"
    by_path = {s.attrs["url.path"]: s for s in servers}

    user = by_path["/users/1"]
    assert user.trace_id.hex() == CALLER_TRACE, f"go{version}: traceparent not joined"
    assert user.parent_span_id.hex() == CALLER_SPAN
    assert user.proto.trace_state == "vendor=opaque"
    assert by_path["/fail"].trace_id.hex() != CALLER_TRACE  # no traceparent: its own trace
    assert user.attrs["http.request.method"] == "GET"
    assert user.attrs["http.response.status_code"] == 200
    assert user.attrs["network.protocol.version"] == "1.1"
    assert user.attrs["server.port"] == svc.port
    assert user.resource["process.runtime.version"] == f"go{version}"
    if modern:
        assert user.attrs["http.route"] == "/users/{id}"
        assert user.name == "GET /users/{id}"
    else:
        assert "http.route" not in user.attrs
        assert user.name == "GET"
    assert user.status_code == STATUS_UNSET

    post = by_path["/users" if modern else "/users/"]
    assert post.attrs["http.request.method"] == "POST"
    assert post.attrs["http.response.status_code"] == 201
    assert post.attrs["http.request.body.size"] == 5

    fail = by_path["/fail"]
    assert fail.attrs["http.response.status_code"] == 500
    assert fail.status_code == STATUS_ERROR

    slow = by_path["/slow"]
    assert slow.attrs["http.response.status_code"] == 200
    assert slow.end_ns - slow.start_ns >= 30_000_000


@pytest.fixture(scope="module")
def bpf_stats(bpf_ready):
    """Has the kernel count BPF program runs while this module runs (restored afterwards)."""
    path = Path("/proc/sys/kernel/bpf_stats_enabled")
    old = path.read_text().strip()
    path.write_text("1")
    yield
    path.write_text(old)


def curl_http2(url, status, panic=None):
    """One GET over HTTP/2 with TLS (no certificate check): (status, protocol version); (0, "0")
    for a stream the server reset (a handler that panicked)."""
    flags = ["-H", f"X-Status: {status}"] if status else []
    if panic:
        flags += ["-H", f"X-Panic: {panic}"]
    res = subprocess.run(["curl", "-sS", "-k", "--http2", "-o", "/dev/null", "-w",
                          "%{http_code} %{http_version}", *flags, url],
                         capture_output=True, text=True, timeout=30)
    assert res.returncode == 0 or panic == "through", res.stderr
    code, version = res.stdout.split()
    return int(code), version


@pytest.mark.parametrize("version,flavour", H2_CASES, ids=[f"{v}-{f}" for v, f in H2_CASES])
def test_go_version_http2_server(version, flavour, build_dir, start_gospan, otlp_receiver,
                                 bpf_ready, bpf_stats):
    """net/http's HTTP/2 server: a SERVER span a request, ended, with its status code (read
    from the HTTP/2 writer's state), on every release; on amd64 without a single-stepped probe
    hit (the end is the CALL of the writer's handlerDone in the server's runHandler closure).
    A handler that panics out of ServeHTTP never reaches that CALL: its span is gopanic's."""
    out = build_dir / "e2e" / f"h2server-go{version}-{flavour}"
    out.parent.mkdir(parents=True, exist_ok=True)
    build(version, flavour, out, H2_SRC)
    svc = Service(out, env=_clean_env())
    made = {}
    try:
        before = len(otlp_receiver.snapshot())
        g = start_gospan(svc.pid, otlp_receiver)
        attached = g.wait_attached()
        assert f"go{version}" in attached, attached
        assert f"(single-stepped hits: {EXPECTED_H2_STEPS} an HTTP/2 request)" in attached, \
            attached
        for i, (status, panic) in enumerate(H2_REQUESTS):
            path = f"/h2/{i}"
            code, proto = curl_http2(f"https://127.0.0.1:{svc.port}{path}", status, panic)
            want = (0, "0") if panic == "through" else \
                (500 if panic else status or 200, "2")
            assert (code, proto) == want, f"{path}: HTTP/{proto} {code}"
            made[path] = (None if panic == "through" else want[0])
        deadline = time.monotonic() + 20 * SLOWDOWN
        while time.monotonic() < deadline:
            spans = {s.attrs.get("url.path"): s for s in otlp_receiver.snapshot()[before:]
                     if s.resource.get("process.pid") == svc.pid}
            if {p for p, c in made.items() if c} <= set(spans):
                break
            time.sleep(0.1)
        xol = out_of_line_page(svc.pid)
        # The panicked calls' spans go out at the latest as gospan stops.
        assert g.stop() == 0, g.stderr
        spans = {s.attrs.get("url.path"): s for s in otlp_receiver.snapshot()[before:]
                 if s.resource.get("process.pid") == svc.pid}
    finally:
        svc.stop()
    missing = sorted(set(made) - set(spans))
    assert not missing, f"go{version}-{flavour}: no SERVER span for {missing}\n{g.stderr}"
    for path, code in made.items():
        s = spans[path]
        assert s.attrs.get("network.protocol.version") == "2", (path, s.attrs)
        assert s.attrs.get("http.response.status_code") == code, (path, s.attrs)
        if code is None:
            assert s.attrs.get("error.type") == "panic", (path, s.attrs)
        assert (s.status_code == STATUS_ERROR) == (code is None or code >= 500), \
            (path, s.status_code)
    line = g.summary_line() or ""
    dropped = re.search(r"dropped (\d+)", line)
    assert dropped and dropped.group(1) == "0", f"go{version}: {line}"
    through = sum(1 for _, panic in H2_REQUESTS if panic == "through")
    assert re.search(rf"panics {through}\b", line), f"go{version}: {line}"
    if ARM64:
        return
    # Each request that returned ended at the handlerDone CALL, and none at a single-stepped
    # probe: the kernel never mapped its page for them.
    _, per = kernel_probe_hits(g.stderr)
    assert per.get("serve_http2_done") == len(H2_REQUESTS) - through, per
    assert per.get("serve_http_return", 0) == 0, per
    assert not xol, f"go{version}-{flavour}: a probe was single-stepped ({attached})"


@pytest.mark.parametrize("version,flavour", CASES, ids=[f"{v}-{f}" for v, f in CASES])
def test_go_version_is_traced(version, flavour, build_dir, start_gospan, otlp_receiver,
                              echo_server, bpf_ready, bpf_stats):
    RESULTS[(version, flavour)] = "failed"
    assert not (CI and NO_PROPAGATION), NO_PROPAGATION
    modern = parse(version) >= (1, 22, 0)
    out = build_dir / "e2e" / f"server-go{version}-{flavour}"
    out.parent.mkdir(parents=True, exist_ok=True)
    build(version, flavour, out)

    svc = Service(out, env=_clean_env())
    try:
        before = len(otlp_receiver.snapshot())
        g = start_gospan(svc.pid, otlp_receiver, env=GOSPAN_ENV.get(flavour))
        attached = g.wait_attached()
        assert f"go{version}" in attached, attached

        slow = "/slow?ms=30" if modern else "/slow"
        call = "/call?" + urllib.parse.urlencode({"to": echo_server.url})
        requests = [("GET", "/users/1", None, 200),
                    ("POST", "/users" if modern else "/users/", b"hello", 201),
                    ("GET", "/fail", None, 500), ("GET", slow, None, 200),
                    ("GET", call, None, 200)]
        echoed = len(echo_server.received)
        answer = None
        for method, path, body, want in requests:
            req = urllib.request.Request(svc.base_url + path, data=body, method=method)
            if path == "/users/1":
                # Read from the Header map inside the entry probe: buckets up to Go 1.23,
                # Swiss tables from 1.24. Other headers around it make the map non-trivial.
                for i in range(12):
                    req.add_header(f"X-Filler-{i}", "x" * i)
                req.add_header("traceparent", f"00-{CALLER_TRACE}-{CALLER_SPAN}-01")
                req.add_header("tracestate", "vendor=opaque")
            try:
                with urllib.request.urlopen(req, timeout=10) as r:
                    got = r.status
                    data = r.read()
                if path == call:
                    answer = json.loads(data)
            except urllib.error.HTTPError as e:
                got = e.code
            assert got == want, f"{method} {path}: {got}"
        # No probe on these requests' paths was single-stepped: the kernel, which maps a page
        # into the process for the first one, never had to.
        xol = out_of_line_page(svc.pid)
        assert g.stop() == 0, g.stderr
    finally:
        svc.stop()
    STEPS[(version, flavour)] = single_steps(attached)
    assert STEPS[(version, flavour)] == EXPECTED_STEPS, f"go{version}-{flavour}: {attached}"
    if EXPECTED_STEPS == (0, 0):
        assert not xol, f"go{version}-{flavour}: a probe was single-stepped ({attached})"
    else:
        assert xol, f"go{version}-{flavour}: no out-of-line page, yet {attached}"

    spans = [s for s in otlp_receiver.snapshot()[before:]
             if s.resource.get("process.pid") == svc.pid]
    check_spans(spans, version, svc, modern, g.stderr)
    check_call(spans, version, echo_server, answer, echo_server.received[echoed:], g.stderr)
    sent = trace_context_counters(g.summary_line())
    want = {"sent": 0 if NO_PROPAGATION else 1, "already_set": 0, "no_room": 0, "not_http1": 0,
            "https": 0, "untracked": 0, "h2_not_whole": 0,
            "scratch_busy": 0}
    assert sent == want, f"go{version}: trace-context counters {sent}, expected {want}"
    # Nothing lost: a probe that fired twice for one call (a prologue re-run on stack growth)
    # would show here as a span dropped for want of its end.
    dropped = re.search(r"dropped (\d+)", g.summary_line() or "")
    assert dropped and dropped.group(1) == "0", f"go{version}: {g.summary_line()}"
    source = "DWARF" if "offsets from DWARF" in g.stderr else "table"
    note = ", no trace context out" if NO_PROPAGATION else ""
    RESULTS[(version, flavour)] = f"verified ({source}{note})"
    hits, client_hits = probe_hits(g.stderr)
    HITS[(version, flavour)] = ((hits - sum(client_hits.values())) / len(requests), client_hits)


def test_go_before_register_abi_is_refused(build_dir, gospan_bin, bpf_ready):
    """Go 1.16 on amd64, 1.17 on arm64, passed arguments on the stack: gospan must say so and
    stop, not guess."""
    out = build_dir / "e2e" / f"server-go{REFUSED}"
    if not prebuilt(out):
        res = subprocess.run([str(toolchain(REFUSED)), "build", "-o", str(out), "."],
                             cwd=LEGACY_SRC, capture_output=True, text=True, timeout=600,
                             env=_go_env(REFUSED))
        assert res.returncode == 0, res.stderr
    svc = Service(out, env=_clean_env())
    try:
        res = subprocess.run([str(gospan_bin), "--pid", str(svc.pid)], env=_clean_env(),
                             capture_output=True, text=True, timeout=60)
        assert svc.alive()
    finally:
        svc.stop()
    assert res.returncode != 0
    assert f"go{REFUSED}; gospan needs Go 1.{REGABI} or later" in res.stderr, res.stderr
    assert "gospan: attached" not in res.stderr


@pytest.fixture(scope="module", autouse=True)
def _write_compatibility():
    yield
    if len(RESULTS) != len(CASES):
        return  # a partial run (-k) must not rewrite the record of the full one
    lines = [
        "# Compatibility",
        "",
        "Produced by `tests/e2e/test_go_versions.py` (part of `make test`): each cell is a real",
        "service built with that Go release and flavour, traced by gospan, with its spans checked",
        "(status codes, route on Go 1.22+, body size, duration, an incoming traceparent joined).",
        "Every cell also checks outgoing trace context: the service makes one HTTP/1.1 call with",
        "net/http's client to an untraced server, which must receive exactly one traceparent, in",
        "the trace of the service's SERVER span and naming its CLIENT span for that call (gospan",
        "adds it at the socket layer, finding the writing goroutine through the thread's TLS and",
        "g.goid). \"verified (table)\" means the struct offsets came from",
        "`offsets/go_offsets.json`, \"verified (DWARF)\" from the binary.",
        "Do not edit by hand: run `make test` (or `pytest tests/e2e/test_go_versions.py`).",
        "",
        f"Run on {platform.system()} {platform.release()} {platform.machine()}.",
        "",
        "The probe hits columns are counted by the kernel (kernel.bpf_stats_enabled) on the",
        "plain build: per server request (ServeHTTP's entry and its end in net/http's conn.serve;",
        "an incoming traceparent is read inside the entry probe, at no extra hit), and for the",
        "one outgoing call, by program: roundTrip's entry (client_entry), its end when the call",
        "succeeds (client_success, on the conditional jump that tests the inner round trip's",
        "error), and the marker that leaves the request's context for the socket layer at",
        "Request.write's call to Header.writeSubset (mark_request). The sk_msg program that",
        "writes the header is not a probe and is not counted.",
        "",
        "*Single-stepped hits* are the probes of a request served and of a call made that the",
        "kernel runs out of line (two traps each, where an emulated instruction costs one), as",
        "gospan's attach line counts them, in every flavour of the release (plain / stripped /",
        "pie); each cell also checked that the service never got the page the kernel maps into a",
        "process for its first single-stepped probe. On Go 1.17-1.20 the entry probes sit on the",
        "stack check's conditional jump, which runs twice when the stack grows: client_entry",
        "shows 2 hits for the call that grew it, both emulated.",
        "",
        "| Go | " + " | ".join(EVERY_VERSION) + " | single-stepped hits / request, / call"
        " | probe hits / server request | / outgoing call |",
        "|---|" + "---|" * (len(EVERY_VERSION) + 3),
    ]
    for v in VERSIONS:
        hits = HITS.get((v, "plain"))
        cells = [RESULTS[(v, f)] for f in EVERY_VERSION]
        steps = [STEPS.get((v, f)) for f in EVERY_VERSION]
        cells.append(" / ".join("-" if x is None else f"{x[0]}, {x[1]}" for x in steps))
        if hits:
            per, by_prog = hits
            cells += [f"{per:g}", f"{sum(by_prog.values())} ("
                      + ", ".join(f"{p} {n}" for p, n in by_prog.items()) + ")"]
        else:
            cells += ["-", "-"]
        lines.append(f"| {v}{' (Debian)' if v in DEBIAN_GO else ''} | " + " | ".join(cells) + " |")
    lines += ["", f"Other build flavours, on Go {NEWEST}:", "",
              "| flavour | how it is built | result | single-stepped hits / request, / call |",
              "|---|---|---|---|"]
    for f in NEWEST_ONLY:
        st = STEPS.get((NEWEST, f))
        lines.append(f"| {f} | {FLAVOURS[f][2]} | {RESULTS[(NEWEST, f)]} | "
                     + ("-" if st is None else f"{st[0]}, {st[1]}") + " |")
    lines += [
        "",
        "## arm64",
        "",
        "Run by `make vm-test`, not here: its `6.12-arm64-go` boot (Debian 13's 6.12 arm64 kernel",
        "in qemu, gospan cross-built with `make CROSS=arm64`) runs this test's cells of a slice of",
        "the releases (`GO_ARM64` in `tests/vm/run.py`), plain, stripped and PIE, built with",
        "`GOARCH=arm64`, and checks that Go 1.17 is refused (arm64's register ABI came with Go",
        "1.18). Each cell is checked as here, but with one single-stepped hit a request served and",
        "one a call made: on arm64 the entry probes sit on the function's first instruction, which",
        "the kernel single-steps (`docs/arm64.md`). The results are in the kernel section below.",
        "`make` also compiles the BPF programs for arm64, and the unit tests check the binary",
        "readers on `GOARCH=arm64` builds (`tests/unit/test_disasm.c`, `test_pclntab.c`,",
        "`test_dwarf.c`).",
        "",
        "## Not traced",
        "",
        "Go before 1.17 (arguments on the stack; refused with a message), binaries without",
        "`net/http` (nothing to trace), and Go releases newer than the tables whose binaries carry",
        "no DWARF (refused with a message saying to regenerate the tables).",
        "",
    ]
    # This test owns the page up to the first section another test writes (between its
    # "<!-- BEGIN " and "<!-- END " markers: the grpc-go one of test_grpc_versions.py), kept.
    page = REPO / "COMPATIBILITY.md"
    old = page.read_text() if page.exists() else ""
    kept = old[old.index("<!-- BEGIN "):] if "<!-- BEGIN " in old else ""
    page.write_text("\n".join(lines) + ("\n" + kept if kept else ""))
