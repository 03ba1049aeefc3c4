"""fasthttp, Fiber v2 and Fiber v3: SERVER spans, routes and CLIENT spans without net/http.

The services of tests/e2e/fasthttp (a plain fasthttp.Server, Fiber v2, Fiber v3; the releases
their go.mod pins and the installed Go, plain and as a stripped PIE, plus the oldest releases
SITES.md covers: fasthttp v1.40.0 built with go1.21.13, where writeResponse is inlined, and
Fiber v2.40.0, which calls ReleaseCtx itself) are traced by gospan. Each gets every request of
REQUESTS under a trace of the test's own, then, from what the official OTLP decoder read:

- every request is exactly one SERVER span with exactly net/http's attributes (method, path,
  scheme, server, peer and client address, protocol version, status, error.type on 5xx, and the
  route for Fiber), named "METHOD ROUTE" for Fiber ("GET /users/:id") and "METHOD" otherwise or
  when no route matched (404, 405: Fiber's last matched route is then a middleware's);
- 5xx, Fiber's recovered panic included, is ERROR, and nothing else;
- its parent is the span of the traceparent it came with;
- /call (fasthttp.Client) and /hostcall (fasthttp.HostClient) make one CLIENT span each, a child
  of their SERVER span, with the CLIENT attributes of net/http's, and the backend got a
  traceparent naming that CLIENT span;
- the attach line says what is traced and that no probe is single-stepped.

And a Fiber release older than the offset tables, stripped: spans as for plain fasthttp, no
route, and one warning naming the framework and its release.
"""

import subprocess
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from conftest import Service, _clean_env, traced_get, wait_until

SERVICES = Path(__file__).resolve().parent / "fasthttp"
SPAN_SERVER, SPAN_CLIENT = 2, 3
STATUS_ERROR = 2
SPAN_WAIT = 20.0

# (method, target, status, Fiber's route or None when none matched)
REQUESTS = [
    ("GET", "/users/42?x=1&token=s3cr3t", 200, "/users/:id"),
    ("GET", "/orders/7/items/9", 200, "/orders/:oid/items/:iid"),
    ("POST", "/fail/503", 503, "/fail/:code"),
    ("POST", "/fail/418", 418, "/fail/:code"),
    ("GET", "/panic", 500, "/panic"),
    ("GET", "/call/5", 200, "/call/:id"),
    ("GET", "/hostcall/6", 200, "/hostcall/:id"),
    ("GET", "/a%20b", 404, None),
    ("GET", "/fail/503", 405, None),
    ("GET", "/orders/7", 404, None),
    ("HEAD", "/users/1", 200, "/users/:id"),
]

# (id, program, release (None: the go.mod's), Go toolchain, stripped PIE)
BUILDS = [
    ("fasthttp", "fasthttp", None, "local", False),
    ("fasthttp-stripped-pie", "fasthttp", None, "local", True),
    ("fasthttp-v1.40.0-go1.21", "fasthttp", "v1.40.0", "go1.21.13", False),
    ("fiber2", "fiber2", None, "local", False),
    ("fiber2-stripped-pie", "fiber2", None, "local", True),
    ("fiber2-v2.40.0", "fiber2", "v2.40.0", "local", False),
    ("fiber3", "fiber3", None, "local", False),
    ("fiber3-stripped-pie", "fiber3", None, "local", True),
]


class TraceparentRecorder(BaseHTTPRequestHandler):
    """The backend's handler: answers 200 "ok" and notes each request's traceparent."""

    protocol_version = "HTTP/1.1"

    def log_message(self, fmt, *args):
        pass

    def do_GET(self):
        self.server.seen.append(self.headers.get("traceparent"))
        self.send_response(200)
        self.send_header("Content-Length", "2")
        self.end_headers()
        self.wfile.write(b"ok")


@pytest.fixture(scope="module")
def backend():
    server = ThreadingHTTPServer(("127.0.0.1", 0), TraceparentRecorder)
    server.seen = []
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield server
    server.shutdown()
    server.server_close()


def build(build_dir, name, prog, release, toolchain, stripped_pie):
    out = build_dir / "e2e" / "fasthttp" / name
    args = ["bash", str(SERVICES / "build.sh"), str(out), toolchain, prog]
    if release:
        args.append(release)
    if stripped_pie:
        args += ["--", "-ldflags=-s -w", "-buildmode=pie"]
    res = subprocess.run(args, capture_output=True, text=True, timeout=900)
    if res.returncode != 0:
        pytest.fail(f"cannot build {name}:\n{res.stderr}")
    return out


def server_attrs(method, target, status, route, port, peer_port):
    """Exactly the attributes net/http's SERVER span of this request would have."""
    want = {
        "http.request.method": method,
        "url.path": target.split("?")[0].replace("%20", " "),
        "url.scheme": "http",
        "server.address": "127.0.0.1",
        "server.port": port,
        "network.peer.address": "127.0.0.1",
        "network.peer.port": peer_port,
        "client.address": "127.0.0.1",
        "network.protocol.version": "1.1",
        "http.response.status_code": status,
    }
    if status >= 500:
        want["error.type"] = str(status)
    if route:
        want["http.route"] = route
    return want


def client_problems(target, client, server, backend_port, traceparents):
    """What is wrong with CLIENT span CLIENT of SERVER's request TARGET, if anything."""
    problems = []
    want = {
        "http.request.method": "GET",
        "url.full": f"http://127.0.0.1:{backend_port}/x",
        "server.address": "127.0.0.1",
        "server.port": backend_port,
        "http.response.status_code": 200,
    }
    got = dict(client.attrs)
    # fasthttp before v1.64 does not keep a response's protocol: net/http's span has it.
    if got.pop("network.protocol.version", "1.1") != "1.1" or got != want:
        problems.append(f"{target}: CLIENT attributes {client.attrs}, want {want}")
    if client.name != "GET" or client.status_code == STATUS_ERROR:
        problems.append(f"{target}: CLIENT {client.name!r} status {client.status_code}")
    if client.parent_span_id != server.span_id:
        problems.append(f"{target}: CLIENT parent {client.parent_span_id.hex()}, want "
                        f"{server.span_id.hex()}")
    if not any(tp and tp.split("-")[1] == client.trace_id.hex() and
               tp.split("-")[2] == client.span_id.hex() for tp in traceparents):
        problems.append(f"{target}: the backend got {traceparents}, none naming CLIENT span "
                        f"{client.span_id.hex()}")
    return problems


def check_request(fiber, sent, spans, svc, backend):
    """What is wrong with the spans of one request SENT, if anything."""
    method, target, status, route, tid, parent, req = sent
    route = route if fiber else None
    got = [s for s in spans if s.trace_id == tid]
    servers = [s for s in got if s.kind == SPAN_SERVER]
    if len(servers) != 1:
        return [f"{method} {target}: {len(servers)} SERVER spans of {len(got)}"]
    s = servers[0]
    problems = []
    want = server_attrs(method, target, status, route, svc.port, req.local_port)
    if s.attrs != want:
        problems.append(f"{method} {target}: attributes {s.attrs}, want {want}")
    name = f"{method} {route}" if route else method
    if s.name != name:
        problems.append(f"{method} {target}: name {s.name!r}, want {name!r}")
    if s.parent_span_id != parent:
        problems.append(f"{method} {target}: parent {s.parent_span_id.hex()}, want "
                        f"{parent.hex()}")
    if (s.status_code == STATUS_ERROR) != (status >= 500):
        problems.append(f"{method} {target}: span status {s.status_code}")
    clients = [c for c in got if c.kind == SPAN_CLIENT]
    calls = target.startswith(("/call/", "/hostcall/"))
    if len(clients) != calls:
        problems.append(f"{method} {target}: {len(clients)} CLIENT spans")
    elif calls:
        problems += client_problems(target, clients[0], s, backend.server_address[1],
                                    backend.seen)
    return problems


def send_all(svc):
    """Every request of REQUESTS to SVC under a trace of its own: what check_request needs."""
    sent = []
    for method, target, status, route in REQUESTS:
        tid, parent, req = traced_get(svc.port, target, status, method=method)
        sent.append((method, target, status, route, tid, parent, req))
    return sent


@pytest.mark.parametrize("name,prog,release,toolchain,stripped_pie", BUILDS,
                         ids=[b[0] for b in BUILDS])
def test_fasthttp(name, prog, release, toolchain, stripped_pie, build_dir, backend,
                  otlp_receiver, start_gospan):
    binary = build(build_dir, name, prog, release, toolchain, stripped_pie)
    fiber = prog.startswith("fiber")
    svc = Service(binary, env=_clean_env(), args=("-backend", f"http://127.0.0.1:"
                                                  f"{backend.server_address[1]}"))
    try:
        g = start_gospan(svc.pid, otlp_receiver)
        line = g.wait_attached()
        assert "fasthttp server + fasthttp client (fasthttp v" in line, line
        assert "single-stepped hits: 0 a request served, 0 a call made" in line, line
        assert " 0 single-stepped;" in line, line
        if fiber:
            assert "fiber routes (v" in line and "single-stepped hits: 0 a request)" in line, line
        before = len(otlp_receiver.snapshot())
        sent = send_all(svc)
        want = len(sent) + 2  # and the two CLIENT spans
        assert wait_until(lambda: len(otlp_receiver.snapshot()) - before >= want, SPAN_WAIT), (
            f"{name}: {len(otlp_receiver.snapshot()) - before} spans, want {want}\n{g.stderr}")
        g.stop_cleanly()
    finally:
        svc.stop()
    spans = otlp_receiver.snapshot()[before:]
    assert len(spans) == want, f"{name}: {len(spans)} spans, want {want}"
    problems = []
    for s in sent:
        problems += check_request(fiber, s, spans, svc, backend)
    assert not problems, f"{name}:\n" + "\n".join(problems)


def test_fiber_outside_tables(build_dir, backend, otlp_receiver, start_gospan):
    """Fiber v2.39.0, older than the table, stripped: no route, fasthttp's spans, one warning."""
    binary = build(build_dir, "fiber2-v2.39.0-stripped-pie", "fiber2", "v2.39.0", "local", True)
    svc = Service(binary, env=_clean_env())
    try:
        g = start_gospan(svc.pid, otlp_receiver)
        line = g.wait_attached()
        assert "fasthttp server" in line and "routes" not in line, line
        before = len(otlp_receiver.snapshot())
        tid, parent, req = traced_get(svc.port, "/users/42")
        assert wait_until(lambda: len(otlp_receiver.snapshot()) > before, SPAN_WAIT), g.stderr
        g.stop_cleanly()
    finally:
        svc.stop()
    warnings = [w for w in g.stderr.splitlines() if "fiber v2.39.0" in w]
    assert len(warnings) == 1 and "no route" in warnings[0], g.stderr
    [s] = [s for s in otlp_receiver.snapshot()[before:] if s.trace_id == tid]
    assert s.name == "GET" and "http.route" not in s.attrs, s
    assert s.attrs["http.response.status_code"] == 200 and s.parent_span_id == parent, s
