"""gospan against the backends it is meant for, and against backends that misbehave.

- A real OpenTelemetry Collector (built by collector.py) receives the example service's spans and
  writes them with its file exporter; the OTLP JSON it writes is checked span by span.
- The request shape Mackerel's OTLP endpoint expects, configured the way the README says.
- Fault injection with a receiver this module controls: backend down, 503 with Retry-After, 400,
  a garbage 200 body, a backend that never answers.
"""

import re
import secrets
import signal
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from collector import collector, collector_bin  # noqa: F401 - fixtures
from conftest import (SPAN_KIND_SERVER, STATUS_ERROR, STATUS_UNSET, OtlpReceiver, call, counter,
                      decode_request, wait_until)

SPAN_WAIT = 20.0  # how long spans may take to arrive where they are expected


# ---- (a) the OpenTelemetry Collector ----------------------------------------------------------


COLLECTOR_REQUESTS = [
    # method, path, body, status, route
    ("GET", "/users/u42", None, 200, "/users/{id}"),
    ("POST", "/users", b'{"name":"ada"}', 201, "/users"),
    ("GET", "/status/503", None, 503, "/status/{code}"),
    ("GET", "/missing/nothing-here", None, 404, None),
]


@pytest.mark.parametrize("protocol", ["http/protobuf", "http/json"])
def test_collector_writes_the_spans_gospan_sent(protocol, collector, start_service, start_gospan):
    """Both OTLP/HTTP encodings, decoded by the Collector itself."""
    svc = start_service()
    before = len(collector.spans())
    g = start_gospan(svc.pid, env={
        "OTEL_EXPORTER_OTLP_ENDPOINT": collector.otlp_endpoint,
        "OTEL_EXPORTER_OTLP_PROTOCOL": protocol,
        "OTEL_RESOURCE_ATTRIBUTES": "deployment.environment.name=e2e-collector",
    })
    g.wait_attached()
    for method, path, body, status, _ in COLLECTOR_REQUESTS:
        assert call(svc, method, path, body) == status, (method, path)
    spans = collector.wait_for_spans(before + len(COLLECTOR_REQUESTS), SPAN_WAIT)
    spans = [s for s in spans[before:] if s.resource.get("process.pid") == svc.pid]
    g.stop_cleanly()
    assert "failed" not in g.stderr, g.stderr
    assert len(spans) == len(COLLECTOR_REQUESTS), (
        f"the Collector wrote {len(spans)} spans for {len(COLLECTOR_REQUESTS)} requests\n"
        f"{collector.log()}")
    by_path = {s.attrs.get("url.path"): s for s in spans}
    for method, path, body, status, route in COLLECTOR_REQUESTS:
        s = by_path.get(path)
        assert s is not None, f"no span with url.path={path!r}: {[s.attrs for s in spans]}"
        assert s.name == (f"{method} {route}" if route else method), s.name
        assert s.kind == SPAN_KIND_SERVER, s.kind
        assert s.attrs.get("http.request.method") == method, s.attrs
        assert s.attrs.get("http.response.status_code") == status, s.attrs
        assert s.attrs.get("http.route") == route, s.attrs
        assert s.attrs.get("server.port") == svc.port, s.attrs
        assert s.attrs.get("url.scheme") == "http", s.attrs
        if body is not None:
            assert s.attrs.get("http.request.body.size") == len(body), s.attrs
        assert s.status_code == (STATUS_ERROR if status >= 500 else STATUS_UNSET), s.status_code
        assert len(s.trace_id) == 16 and any(s.trace_id), s.trace_id
        assert len(s.span_id) == 8 and any(s.span_id), s.span_id
        assert not s.parent_span_id, s.parent_span_id
        assert 0 < s.start_ns <= s.end_ns, (s.start_ns, s.end_ns)
        assert s.scope_name == "gospan", s.scope_name
        res = s.resource
        assert res.get("service.name") == "httpserver", res
        assert res.get("process.pid") == svc.pid, res
        assert res.get("telemetry.sdk.name") == "gospan", res
        assert res.get("deployment.environment.name") == "e2e-collector", res
    assert by_path["/status/503"].attrs.get("error.type") == "503"


# ---- (b) the request Mackerel's OTLP endpoint gets ----------------------------------------------


def mackerel_env(endpoint, secret):
    """gospan set up as the README's Mackerel section says. The real endpoint,
    https://otlp-vaxila.mackerelio.com, cannot be reached from the test machines (and must not get
    test traffic), so a local receiver stands in for it: only the scheme and host differ."""
    return {
        "OTEL_EXPORTER_OTLP_ENDPOINT": endpoint,
        "OTEL_EXPORTER_OTLP_HEADERS": f"Mackerel-Api-Key={secret},Accept=*/*",
        "OTEL_EXPORTER_OTLP_COMPRESSION": "gzip",
        "OTEL_SERVICE_NAME": "checkout",
        # The most talkative level: the key must not show up even there.
        "OTEL_LOG_LEVEL": "debug",
    }


@dataclass
class MackerelRun:
    secret: str
    requests: list
    spans: list
    errors: list
    gospan: object  # conftest.Gospan, stopped


@pytest.fixture(scope="module")
def mackerel_run(otlp_proto, start_service, start_gospan):
    rx = OtlpReceiver()
    try:
        secret = "mkr-" + secrets.token_hex(20)
        svc = start_service()
        g = start_gospan(svc.pid, env=mackerel_env(rx.endpoint, secret))
        g.wait_attached()
        assert call(svc, "GET", "/users/u7") == 200
        assert call(svc, "GET", "/status/500") == 500
        rx.wait_for_spans(2, SPAN_WAIT)
        g.stop()
        return MackerelRun(secret, list(rx.requests), rx.snapshot(), list(rx.errors), g)
    finally:
        rx.close()


def test_mackerel_request_shape(mackerel_run):
    r = mackerel_run
    r.gospan.assert_ended_cleanly()
    assert r.errors == [], r.errors  # content type, encoding and protobuf all accepted
    assert r.requests, f"no request reached the receiver\n{r.gospan.stderr}"
    for path, headers in r.requests:
        assert path == "/v1/traces", path
        assert headers.get("content-type", "").split(";")[0] == "application/x-protobuf", headers
        assert headers.get("mackerel-api-key") == r.secret, sorted(headers)
        assert headers.get("accept") == "*/*", headers.get("accept")
    assert len(r.spans) == 2, r.spans
    for s in r.spans:
        # What Mackerel APM builds its HTTP views from.
        for key in ("http.route", "http.request.method", "http.response.status_code"):
            assert key in s.attrs, (key, s.attrs)
        assert s.resource.get("service.name") == "checkout", s.resource
    assert {s.attrs["http.route"] for s in r.spans} == {"/users/{id}", "/status/{code}"}


def test_mackerel_api_key_is_never_printed(mackerel_run, gospan_bin):
    r = mackerel_run
    assert r.secret not in r.gospan.stderr
    assert r.secret not in r.gospan.stdout
    # --help shows every setting's current value: the headers' values must not be among them.
    import subprocess

    from conftest import _clean_env
    env = _clean_env()
    env.update(mackerel_env("http://127.0.0.1:9", r.secret))
    out = subprocess.run([str(gospan_bin), "--help"], env=env, capture_output=True, text=True,
                         timeout=30)
    assert r.secret not in out.stdout + out.stderr


def test_mackerel_body_is_gzip_compressed(mackerel_run):
    r = mackerel_run
    assert r.requests and r.spans
    for _, headers in r.requests:
        assert headers.get("content-encoding") == "gzip", headers


# ---- (c) backends that fail -------------------------------------------------------------------


HANG = object()  # a reply that never comes


@dataclass
class Attempt:
    t: float  # time.monotonic() when the body was read
    path: str
    headers: dict
    spans: list  # decoded spans, or [] when the body did not decode
    error: str | None
    reply: object = None


@dataclass
class FaultReceiver:
    """An OTLP/HTTP endpoint that answers what REPLY(n) says for the Nth POST (from 0): a tuple
    (status, headers dict, body bytes), or HANG. Records every attempt; spans of attempts answered
    with a 2xx count as delivered."""

    reply: object
    port: int = 0
    attempts: list = field(default_factory=list)

    def __post_init__(self):
        from opentelemetry.proto.collector.trace.v1 import trace_service_pb2

        self._pb = trace_service_pb2
        self._cond = threading.Condition()
        self._release = threading.Event()
        rx = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, fmt, *args):
                pass

            def do_POST(self):
                rx._handle(self)

        self._server = ThreadingHTTPServer(("127.0.0.1", self.port), Handler)
        self._server.daemon_threads = True
        self.port = self._server.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}/v1/traces"
        threading.Thread(target=self._server.serve_forever, daemon=True).start()

    def _decode(self, headers, body):
        return decode_request(self._pb, headers.get("content-encoding", "identity"), body)

    def _handle(self, h):
        length = int(h.headers.get("Content-Length") or 0)
        body = h.rfile.read(length) if length else b""
        headers = {k.lower(): v for k, v in h.headers.items()}
        spans, error = [], None
        try:
            spans = self._decode(headers, body)
        except Exception as e:  # noqa: BLE001 - recorded for the test to judge
            error = repr(e)
        with self._cond:
            n = len(self.attempts)
            reply = self.reply(n)
            self.attempts.append(Attempt(time.monotonic(), h.path, headers, spans, error, reply))
            self._cond.notify_all()
        if reply is HANG:
            self._release.wait(60.0)
            h.close_connection = True
            return
        status, extra, payload = reply
        h.send_response(status)
        extra = {"Content-Type": "application/x-protobuf", **extra}
        for k, v in extra.items():
            h.send_header(k, v)
        h.send_header("Content-Length", str(len(payload)))
        h.end_headers()
        h.wfile.write(payload)

    def ok(self):
        return (200, {}, self._pb.ExportTraceServiceResponse().SerializeToString())

    def wait_attempts(self, n, timeout):
        deadline = time.monotonic() + timeout
        with self._cond:
            while len(self.attempts) < n:
                left = deadline - time.monotonic()
                if left <= 0:
                    break
                self._cond.wait(left)
            return list(self.attempts)

    def delivered(self):
        with self._cond:
            return [s for a in self.attempts if a.reply is not HANG and 200 <= a.reply[0] < 300
                    for s in a.spans]

    def wait_delivered(self, paths, timeout):
        """Waits until a span of every url.path in PATHS was delivered; returns the paths
        missing."""
        want = set(paths)
        wait_until(lambda: want <= {s.attrs.get("url.path") for s in self.delivered()}, timeout)
        return want - {s.attrs.get("url.path") for s in self.delivered()}

    def close(self):
        self._release.set()
        self._server.shutdown()
        self._server.server_close()


@pytest.fixture
def fault_receivers(otlp_proto):
    made = []

    def make(reply, port=0):
        rx = FaultReceiver(reply, port)
        made.append(rx)
        return rx

    yield make
    for rx in made:
        rx.close()


def _ok(rx):
    return lambda n: rx.ok()


def _down_then_up(free_port, fault_receivers, start_service, start_gospan):
    """gospan exports to a port nobody listens on, fails once, then the receiver starts there.
    Returns (gospan, receiver, service)."""
    port = free_port()
    url = f"http://127.0.0.1:{port}/v1/traces"
    svc = start_service()
    g = start_gospan(svc.pid, env={"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": url,
                                   "OTEL_EXPORTER_OTLP_TIMEOUT": "2000"})
    g.wait_attached()
    assert call(svc, "GET", "/users/while-down") == 200
    assert wait_until(lambda: "failed" in g.stderr, SPAN_WAIT), (
        f"gospan logged no failed export while the backend was down\n{g.stderr}")
    holder = {}
    rx = fault_receivers(lambda n: holder["rx"].ok(), port)
    holder["rx"] = rx
    return g, rx, svc


def test_backend_started_after_gospan_gets_later_spans(free_port, fault_receivers,
                                                       start_service, start_gospan):
    g, rx, svc = _down_then_up(free_port, fault_receivers, start_service, start_gospan)
    assert call(svc, "GET", "/users/after-up") == 200
    missing = rx.wait_delivered(["/users/after-up"], SPAN_WAIT)
    g.stop_cleanly()
    assert not missing, f"the span made after the backend came up never arrived\n{g.stderr}"
    assert g.summary_line(), g.stderr


def test_spans_made_while_backend_down_are_delivered_once_it_is_up(free_port, fault_receivers,
                                                                   start_service, start_gospan):
    g, rx, svc = _down_then_up(free_port, fault_receivers, start_service, start_gospan)
    missing = rx.wait_delivered(["/users/while-down"], SPAN_WAIT)
    g.stop_cleanly()
    assert not missing, f"the span made while the backend was down was lost\n{g.stderr}"


def test_503_with_retry_after_is_retried(fault_receivers, start_service, start_gospan):
    holder = {}

    def reply(n):
        if n == 0:
            return (503, {"Retry-After": "1", "Content-Type": "text/plain"}, b"busy, come back")
        return holder["rx"].ok()

    rx = holder["rx"] = fault_receivers(reply)
    svc = start_service()
    g = start_gospan(svc.pid, rx)
    g.wait_attached()
    paths = [f"/users/retry-{i}" for i in range(5)]
    for p in paths:
        assert call(svc, "GET", p) == 200
    missing = rx.wait_delivered(paths, SPAN_WAIT)
    g.stop_cleanly()
    assert not missing, (f"spans refused once with 503 were never delivered: {sorted(missing)}"
                         f"\n{g.stderr}")
    first, second = rx.attempts[0], rx.attempts[1]
    assert second.t - first.t >= 0.9, "the retry did not wait for Retry-After: 1"


@pytest.mark.parametrize("status", [400, 500])
def test_non_retryable_status_is_logged_counted_and_not_retried(status, fault_receivers,
                                                                start_service, start_gospan):
    # The OTLP/HTTP specification retries 429, 502, 503 and 504 only: 500 is final, like 400.
    body = b"gospan-e2e: invalid export request, field 7 unexpected" + b" padding" * 60
    rx = fault_receivers(lambda n: (status, {"Content-Type": "text/plain"}, body))
    svc = start_service()
    g = start_gospan(svc.pid, rx)
    g.wait_attached()
    assert call(svc, "GET", "/users/refused") == 200
    got = rx.wait_attempts(1, SPAN_WAIT)
    assert got, f"no export attempt reached the receiver\n{g.stderr}"
    ids = {s.span_id for s in got[0].spans}
    assert ids and got[0].error is None, got[0]
    # A retry would come within this time (Retry-After absent: the SDKs back off about 1 s).
    time.sleep(3.0)
    g.stop_cleanly()
    same = [a for a in rx.attempts if ids & {s.span_id for s in a.spans}]
    assert len(same) == 1, f"the batch answered {status} was sent {len(same)} times"
    assert f"HTTP {status}" in g.stderr, g.stderr
    assert "gospan-e2e: invalid export request" in g.stderr, g.stderr
    line = g.summary_line()
    assert line, g.stderr
    assert counter(line, "export failures") == 1, line
    assert re.search(r"export_failed=1\b", line), line


def test_garbage_200_body_does_not_crash_gospan(fault_receivers, start_service, start_gospan):
    garbage = [
        (200, {}, b"\xff\xff\xff\xff\x0f not a protobuf \x00\x01" * 10),
        (200, {"Content-Type": "text/html"}, b"<html><body>gateway says hi</body></html>"),
        (200, {"Content-Type": "application/json"}, b'{"partialSuccess": 3'),
    ]
    rx = fault_receivers(lambda n: garbage[n % len(garbage)])
    svc = start_service()
    g = start_gospan(svc.pid, rx)
    g.wait_attached()
    paths = [f"/users/garbage-{i}" for i in range(4)]
    for p in paths:
        assert call(svc, "GET", p) == 200
        time.sleep(0.4)  # more than OTEL_BSP_SCHEDULE_DELAY=200: one export per request
    missing = rx.wait_delivered(paths, SPAN_WAIT)
    assert g.proc.poll() is None, f"gospan exited with {g.proc.returncode}\n{g.stderr}"
    assert svc.alive()
    g.stop_cleanly()
    assert not missing, f"spans missing: {sorted(missing)}\n{g.stderr}"
    assert len(rx.attempts) >= 2, rx.attempts
    assert g.summary_line(), g.stderr


def test_hanging_backend_is_bounded_by_the_timeout(fault_receivers, start_service,
                                                   start_gospan):
    rx = fault_receivers(lambda n: HANG)
    svc = start_service()
    g = start_gospan(svc.pid, rx, env={"OTEL_EXPORTER_OTLP_TIMEOUT": "1000"})
    g.wait_attached()
    assert call(svc, "GET", "/users/hang-1") == 200
    got = rx.wait_attempts(1, SPAN_WAIT)
    assert got, f"no export attempt reached the receiver\n{g.stderr}"
    t1 = got[0].t
    # The next batch must go out once the first has timed out, not when the backend lets go.
    assert call(svc, "GET", "/users/hang-2") == 200
    got = rx.wait_attempts(2, 5.0)
    assert len(got) >= 2, (f"no second export within 5 s of the first though "
                           f"OTEL_EXPORTER_OTLP_TIMEOUT=1000\n{g.stderr}")
    assert got[1].t - t1 < 4.0, got[1].t - t1
    assert svc.alive()
    t0 = time.monotonic()
    g.stop_cleanly(signal.SIGTERM, timeout=10.0)
    took = time.monotonic() - t0
    assert took < 5.0, f"gospan took {took:.1f} s to exit on SIGTERM with a hanging backend"
    line = g.summary_line()
    assert line and counter(line, "export failures") >= 1, line
    assert "failed" in g.stderr, g.stderr
