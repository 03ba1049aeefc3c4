"""Route templates from router frameworks: gin, echo (v4 and v5), chi, gorilla/mux and
httprouter.

Each framework's service of tests/e2e/routers (the releases its go.mod pins, the installed Go)
is traced by gospan, plain and as a stripped PIE (no symbols, no DWARF: the offsets come from
the tables, the probe addresses from the load bias). Requests go through a route, a route of a
group or mounted sub-router, a handler answering 503 and 418, a panic the framework's recovery
middleware turns into a 500, a panic nothing recovers, an outgoing call, an unknown path (404),
a known path with the wrong method (405) and paths under a group or mount that match nothing.
Then, from what the official OTLP decoder read:

- every request is exactly one SERVER span named "METHOD TEMPLATE" with http.route the
  framework's own template (its syntax: /users/:id or /users/{id}, group and mount prefixes
  included), except where a panic no middleware recovers cut the request short in gin, echo v4
  and chi (they are read where the framework gives its context back); a request no route matched has no http.route and is named by its method alone,
  whatever the framework itself would report for it (echo names the 405's route, chi and echo
  a group's or mount's prefix: see routers/README.md);
- the status code is the one the client got; 5xx and panics are ERROR;
- a request that came with a traceparent continues that trace under the caller's span;
- the outgoing call is a CLIENT span, child of its request's SERVER span, and the backend got
  a traceparent naming that CLIENT span.
"""

import http.client
import secrets
import subprocess
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from conftest import Service, _clean_env, perform, wait_until

ROUTERS = Path(__file__).resolve().parent / "routers"
FRAMEWORKS = ["gin", "echo", "echo5", "chi", "mux", "httprouter"]
SPAN_SERVER, SPAN_CLIENT = 2, 3
STATUS_ERROR = 2
SPAN_WAIT = 20.0


def colon(path):
    """'/users/{id}' in gin's and echo's syntax: '/users/:id'."""
    return path.replace("{", ":").replace("}", "")


# (method, target, status the client gets (None: the connection closes), route in chi's
# syntax, or None when no route matched)
REQUESTS = [
    ("GET", "/users/42", 200, "/users/{id}"),
    ("GET", "/orders/7/items/9", 200, "/orders/{oid}/items/{iid}"),
    ("POST", "/fail/503", 503, "/fail/{code}"),
    ("POST", "/fail/418", 418, "/fail/{code}"),
    ("GET", "/panic", 500, "/panic"),
    ("GET", "/panic-raw/1", None, "/panic-raw/{id}"),
    ("GET", "/call/5", 200, "/call/{id}"),
    ("GET", "/nope", 404, None),
    ("GET", "/fail/503", 405, None),
    ("GET", "/orders/7", 404, None),
    ("GET", "/orders/7/nothing", 404, None),
]


def expected(fw, method, route, status):
    """The route gospan must report for FW, or None."""
    if route is None:
        return None
    # gin, echo v4 and chi give their request context back to its pool after the handler, where
    # gospan reads the template: a panic nothing recovers never gets there (README.md, Routers).
    if status is None and fw in ("gin", "echo", "chi"):
        return None
    return colon(route) if fw in ("gin", "echo", "echo5", "httprouter") else route


class Backend:
    """An HTTP server on loopback that answers 200 and keeps the traceparent of each request."""

    def __init__(self):
        self.traceparents = []
        self._lock = threading.Lock()
        backend = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, fmt, *args):
                pass

            def do_GET(self):
                with backend._lock:
                    backend.traceparents.append(self.headers.get("traceparent"))
                self.send_response(200)
                self.send_header("Content-Length", "2")
                self.end_headers()
                self.wfile.write(b"ok")

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"
        threading.Thread(target=self._server.serve_forever, daemon=True).start()

    def close(self):
        self._server.shutdown()
        self._server.server_close()


def build(build_dir, fw, flavour):
    """FW's service built by routers/build.sh with the installed Go: 'plain', or 'stripped-pie'
    (-s -w, -buildmode=pie)."""
    out = build_dir / "e2e" / "routers" / f"{fw}-{flavour}"
    flags = [] if flavour == "plain" else ["--", "-ldflags=-s -w", "-buildmode=pie"]
    res = subprocess.run(["bash", str(ROUTERS / "build.sh"), str(out), "local", fw, *flags],
                         capture_output=True, text=True, timeout=600)
    if res.returncode != 0:
        pytest.fail(f"cannot build the {fw} service ({flavour}):\n{res.stderr}")
    return out


@pytest.fixture(scope="module")
def backend():
    b = Backend()
    yield b
    b.close()


@pytest.mark.parametrize("flavour", ["plain", "stripped-pie"])
@pytest.mark.parametrize("fw", FRAMEWORKS)
def test_routes(fw, flavour, build_dir, backend, otlp_receiver, start_gospan):
    binary = build(build_dir, fw, flavour)
    env = _clean_env()
    env["BACKEND_URL"] = backend.url
    svc = Service(binary, env=env)
    try:
        g = start_gospan(svc.pid, otlp_receiver)
        line = g.wait_attached()
        assert "routes" in line, line
        before = len(otlp_receiver.snapshot())
        sent = []
        for method, target, status, route in REQUESTS:
            if fw == "mux" and target == "/panic":
                status = None  # gorilla/mux has no recovery middleware (routers/README.md)
            tid, parent = secrets.token_hex(16), secrets.token_hex(8)

            class Req:
                error = None
            req = Req()
            body = b"" if method == "POST" else None
            perform(req, svc.port, method=method, target=target, body=body,
                    headers={"traceparent": f"00-{tid}-{parent}-01"})
            if status is None:
                assert req.error is not None, f"{fw}: {target} answered {req.got_status}"
            else:
                assert req.error is None and req.got_status == status, (
                    f"{fw} {flavour}: {method} {target}: {req.error or req.got_status}")
            sent.append((method, target, status, route, bytes.fromhex(tid),
                         bytes.fromhex(parent)))
        # One SERVER span a request, and the CLIENT span of /call.
        assert wait_until(lambda: len(otlp_receiver.snapshot()) - before >= len(sent) + 1,
                          SPAN_WAIT), (
            f"{fw}: {len(otlp_receiver.snapshot()) - before} spans, want {len(sent) + 1}\n"
            f"{g.stderr}")
        g.stop_cleanly()
    finally:
        svc.stop()
    spans = otlp_receiver.snapshot()[before:]
    by_trace = {}
    for s in spans:
        by_trace.setdefault(s.trace_id, []).append(s)
    problems = []
    for method, target, status, route, tid, parent in sent:
        got = by_trace.get(tid, [])
        servers = [s for s in got if s.kind == SPAN_SERVER]
        if len(servers) != 1:
            problems.append(f"{method} {target}: {len(servers)} SERVER spans")
            continue
        s = servers[0]
        want = expected(fw, method, route, status)
        name = f"{method} {want}" if want else method
        if s.name != name or s.attrs.get("http.route") != want:
            problems.append(f"{method} {target}: name {s.name!r} route "
                            f"{s.attrs.get('http.route')!r}, want {name!r} {want!r}")
        if s.parent_span_id != parent:
            problems.append(f"{method} {target}: parent {s.parent_span_id.hex()}, want "
                            f"{parent.hex()}")
        if status is not None and s.attrs.get("http.response.status_code") != status:
            problems.append(f"{method} {target}: status "
                            f"{s.attrs.get('http.response.status_code')}, want {status}")
        error = status is None or status >= 500
        if (s.status_code == STATUS_ERROR) != error:
            problems.append(f"{method} {target}: status code {s.status_code}")
        if target.startswith("/call/"):
            clients = [c for c in got if c.kind == SPAN_CLIENT]
            if len(clients) != 1 or clients[0].parent_span_id != s.span_id:
                problems.append(f"{target}: CLIENT spans {clients}, want one child of "
                                f"{s.span_id.hex()}")
            elif not any(tp and tp.split("-")[1] == tid.hex() and
                         tp.split("-")[2] == clients[0].span_id.hex()
                         for tp in backend.traceparents):
                problems.append(f"{target}: the backend got {backend.traceparents}, none "
                                f"naming CLIENT span {clients[0].span_id.hex()}")
    assert not problems, f"{fw} {flavour}:\n" + "\n".join(problems)


def test_release_without_table_keeps_its_spans(build_dir, otlp_receiver, start_gospan):
    """gin v1.6.3, older than the offset table, stripped (no DWARF): its requests are SERVER
    spans as before, without a route, and gospan says once which framework and release it
    cannot read routes of."""
    out = build_dir / "e2e" / "routers" / "gin-v1.6.3-stripped"
    res = subprocess.run(["bash", str(ROUTERS / "build.sh"), str(out), "local", "gin", "v1.6.3",
                          "--", "-ldflags=-s -w"], capture_output=True, text=True, timeout=600)
    if res.returncode != 0:
        pytest.fail(f"cannot build gin v1.6.3:\n{res.stderr}")
    svc = Service(out, env=_clean_env())
    try:
        g = start_gospan(svc.pid, otlp_receiver)
        line = g.wait_attached()
        assert "routes" not in line, line
        before = len(otlp_receiver.snapshot())

        class Req:
            error = None
        req = Req()
        perform(req, svc.port, target="/users/42")
        assert req.error is None and req.got_status == 200, req.error or req.got_status
        assert wait_until(lambda: len(otlp_receiver.snapshot()) > before, SPAN_WAIT), g.stderr
        g.stop_cleanly()
    finally:
        svc.stop()
    s = otlp_receiver.snapshot()[before]
    assert s.name == "GET" and "http.route" not in s.attrs, (s.name, s.attrs)
    warnings = [ln for ln in g.stderr.splitlines() if "gin v1.6.3" in ln and "no route" in ln]
    assert len(warnings) == 1, g.stderr
