"""What gospan must never let out: credentials that pass through the traced service, and the
ones it is given for its own exports.

- Server spans: requests carry Authorization, Proxy-Authorization, Cookie, X-Api-Key and
  X-Auth-Token headers, query strings with tokens, a Referer with user info, a body, a request
  line in absolute form with user info, and get a Set-Cookie back; every secret is a random
  string of its own, and none may appear anywhere in an exported span or its resource.
- Client spans: examples/frontend calls examples/backend with user info in the URL (which
  net/http turns into an Authorization header), secrets in the query and in X-Api-Key and Cookie
  headers. url.full carries neither the user info nor the query values ("REDACTED"); no span of
  either process carries any of the secrets. (Redaction of query values in general is checked by
  test_distributed.py.)
- gospan's own output: OTEL_EXPORTER_OTLP_HEADERS and OTEL_EXPORTER_OTLP_TRACES_HEADERS hold API
  keys; exports fail in every way (nothing listening, 401, 500, a collector that echoes the
  request's headers back in its error or in a partial success), at the most talkative settings
  (--verbose, OTEL_LOG_LEVEL=debug), and gospan is stopped, or killed with SIGABRT or SIGSEGV.
  No secret may appear on its stdout or stderr, over its whole life.

Spans are judged as the official opentelemetry-proto decoder sees them: every string value,
nested ones too, and the span's encoded bytes as well, so a secret hidden in a field this file
does not know about is still found.
"""

import base64
import json
import os
import resource
import secrets
import signal
import subprocess
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from conftest import OtlpReceiver, attributes, call, perform, wait_until
from test_distributed import (backend_bin, check_backend_server, check_client,  # noqa: F401
                              collect, frontend_bin, get, start_traced, unique)

SPAN_TIMEOUT = 15.0
HTTP_TIMEOUT = 15.0
SETTLE = 0.5
MESSAGE_TIMEOUT = 15.0  # until gospan has said an export failed
REPORT_AT_MOST = 25


def secret(what):
    """A secret nobody could mistake for anything else: WHAT, then 24 random hex digits."""
    return f"{what}-{secrets.token_hex(12)}"


def basic(user, password):
    return base64.b64encode(f"{user}:{password}".encode()).decode()


# ---- finding secrets --------------------------------------------------------------------------


def strings(value, where):
    """(where, text) for every string in an attribute value, nested lists and maps included."""
    if isinstance(value, str):
        yield where, value
    elif isinstance(value, bytes):
        yield where, value.decode("latin-1")
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from strings(v, f"{where}[{i}]")
    elif isinstance(value, dict):
        for k, v in value.items():
            yield f"{where}{{key}}", k
            yield from strings(v, f"{where}.{k}")


def span_strings(s):
    """(where, text) for every string a span shows: name, status, trace state, attributes,
    events, links, scope, resource."""
    p = s.proto
    yield "name", s.name
    yield "status.message", s.status_message
    yield "trace_state", p.trace_state
    yield "scope", f"{s.scope_name} {s.scope_version}"
    for k, v in s.attrs.items():
        yield "attribute key", k
        yield from strings(v, k)
    for k, v in s.resource.items():
        yield "resource attribute key", k
        yield from strings(v, f"resource {k}")
    for i, e in enumerate(p.events):
        yield f"event[{i}].name", e.name
        yield from strings(attributes(e.attributes), f"event[{i}]")
    for i, link in enumerate(p.links):
        yield f"link[{i}].trace_state", link.trace_state
        yield from strings(attributes(link.attributes), f"link[{i}]")


def leaks(spans, forbidden):
    """Where any of FORBIDDEN ({name: text}) shows in SPANS: their strings, then their encoded
    bytes (whatever field a string sits in)."""
    found = []
    for s in spans:
        raw = s.proto.SerializeToString()
        for where, text in span_strings(s):
            found += [f"span {s.name!r} {where}: {name} in {text!r}"
                      for name, f in forbidden.items() if f in text]
        found += [f"span {s.name!r}: {name} in its encoded bytes"
                  for name, f in forbidden.items() if f.encode() in raw]
    return found


def url_problems(s):
    """url.full and url.query, where a span has them: no user info, every query value REDACTED."""
    wrong = []
    full, query = s.attrs.get("url.full"), s.attrs.get("url.query")
    if full is not None:
        authority = full.split("://", 1)[-1].split("/", 1)[0]
        if "@" in authority:
            wrong.append(f"url.full {full!r} has user info")
        if "?" in full:
            query = full.split("?", 1)[1] if query is None else query
    if query is not None:
        for pair in query.split("&"):
            if "=" in pair and pair.split("=", 1)[1] != "REDACTED":
                wrong.append(f"query value {pair!r} of span {s.name!r} is not REDACTED")
    for k in s.attrs:
        if k.startswith(("http.request.header.", "http.response.header.")):
            wrong.append(f"span {s.name!r} exports header attribute {k!r}")
    return wrong


# ---- a: server spans --------------------------------------------------------------------------


@dataclass
class Sent:
    method: str
    target: str
    path: str
    route: str | None
    status: int
    headers: dict
    body: bytes | None = None
    got_status: int | None = None  # filled in by conftest.perform()
    error: str | None = None


@dataclass
class ServerRun:
    sent: list
    spans: list
    forbidden: dict
    stderr: str


@pytest.fixture(scope="module")
def server_run(start_service, start_gospan, otlp_proto):
    rx = OtlpReceiver()
    try:
        svc = start_service()
        g = start_gospan(svc.pid, rx)
        g.wait_attached()
        s = {k: secret(k) for k in ("bearer", "cookie", "apikey", "authtoken", "proxypw",
                                    "referrerpw", "token", "user", "body", "session",
                                    "linepw")}
        forbidden = dict(s)
        forbidden["proxy basic"] = basic("proxyuser", s["proxypw"])
        headers = {
            "Authorization": f"Bearer {s['bearer']}",
            "Proxy-Authorization": f"Basic {forbidden['proxy basic']}",
            "Cookie": f"session={s['cookie']}; theme=dark",
            "X-Api-Key": s["apikey"],
            "X-Auth-Token": s["authtoken"],
            "Referer": f"http://referrer:{s['referrerpw']}@example.com/from?token={s['token']}",
            "Connection": "close",
        }
        query = f"token={s['token']}&user={s['user']}"
        n = unique("r")
        sent = [
            Sent("GET", f"/users/{n}?{query}", f"/users/{n}", "/users/{id}", 200, headers),
            Sent("POST", f"/users?{query}", "/users", "/users", 201,
                 dict(headers, **{"Content-Type": "application/json"}),
                 body=json.dumps({"password": s["body"]}).encode()),
            Sent("GET", f"/items/{n}?api_key={s['token']}&{query}", f"/items/{n}",
                 "/items/{path...}", 200, headers),
            Sent("OPTIONS", f"/echo/{n}?{query}", f"/echo/{n}", "/echo/", 200, headers),
            Sent("GET", f"/missing/{n}?{query}", f"/missing/{n}", None, 404, headers),
            Sent("GET", f"/status/503?{query}&n={n}", "/status/503", "/status/{code}", 503,
                 headers),
            Sent("GET", f"/login?session={s['session']}", "/login", "/login", 200, headers),
            # Absolute form, as a proxy is sent requests: user info on the request line. (Not
            # in Host: net/http refuses that header with 400 before any handler runs.)
            Sent("GET", f"http://lineuser:{s['linepw']}@127.0.0.1:{svc.port}/users/line-{n}"
                        f"?{query}", f"/users/line-{n}", "/users/{id}", 200,
                 dict(headers, Host=f"127.0.0.1:{svc.port}")),
        ]
        for r in sent:
            perform(r, svc.port, None, r.method, r.target, r.body, r.headers, HTTP_TIMEOUT)
        rx.wait_for_spans(len(sent), SPAN_TIMEOUT)
        time.sleep(SETTLE)
        g.stop()
        return ServerRun(sent, rx.snapshot(), forbidden, g.stderr + g.stdout)
    finally:
        rx.close()


def test_server_requests_were_answered(server_run):
    bad = [f"{r.method} {r.target}: got {r.got_status} {r.error or ''}, expected {r.status}"
           for r in server_run.sent if r.got_status != r.status]
    assert not bad, "\n".join(bad)


def test_server_spans_are_the_requests(server_run):
    """One span per request, with its path and route: the secrets went through what was
    traced, so their absence below means something."""
    spans = server_run.spans
    assert len(spans) == len(server_run.sent), [s.attrs.get("url.path") for s in spans]
    for r in server_run.sent:
        mine = [s for s in spans if s.attrs.get("url.path") == r.path
                and s.attrs.get("http.request.method") == r.method]
        assert len(mine) == 1, f"{r.method} {r.target}: {len(mine)} spans"
        assert mine[0].attrs.get("http.route") == r.route, mine[0].attrs
        assert mine[0].attrs.get("http.response.status_code") == r.status, mine[0].attrs


def test_server_spans_hold_no_secret(server_run):
    found = leaks(server_run.spans, server_run.forbidden)
    assert not found, "secrets in exported server spans:\n" + "\n".join(found[:REPORT_AT_MOST])


def test_server_spans_have_no_user_info_nor_query_values(server_run):
    wrong = [w for s in server_run.spans for w in url_problems(s)]
    assert not wrong, "\n".join(wrong)
    for s in server_run.spans:
        # The Host header is the one header value the conventions make server.address of;
        # the absolute-form request line's user info must not have crept into it.
        assert s.attrs.get("server.address") == "127.0.0.1", s.attrs


# ---- b: client spans --------------------------------------------------------------------------


@dataclass
class ClientRun:
    t: object
    n: str
    sent: object
    trace: object
    spans: list
    forbidden: dict
    output: str


@pytest.fixture(scope="module")
def client_run(backend_bin, frontend_bin, start_gospan, otlp_proto):
    rx = OtlpReceiver()
    cleanup = [rx.close]
    try:
        t = start_traced(backend_bin, frontend_bin, start_gospan, rx, cleanup)
        s = {k: secret(k) for k in ("user", "password", "token", "apikey", "cookie", "bearer")}
        forbidden = dict(s, **{"basic credentials": basic(s["user"], s["password"])})
        n = unique("cred")
        sent = get(t.frontend.base_url,
                   f"/credentials/{n}?user={s['user']}&password={s['password']}"
                   f"&token={s['token']}",
                   {"X-Api-Key": s["apikey"], "Cookie": f"session={s['cookie']}",
                    "Authorization": f"Bearer {s['bearer']}"})
        tr = collect(t, f"/credentials/{n}", 1, [f"/work/{n}"])
        for g in t.gospans.values():
            assert g.stop() == 0, g.stderr
        output = "\n".join(g.stderr + g.stdout for g in t.gospans.values())
        return ClientRun(t, n, sent, tr, rx.snapshot(), forbidden, output)
    finally:
        for stop in reversed(cleanup):
            stop()


def test_frontend_called_with_credentials(client_run):
    r = client_run
    assert r.sent.status == 200, r.sent
    calls = r.sent.calls("credentials")
    assert len(calls) == 1 and calls[0]["status"] == 200, r.sent.body
    # The call really had user info and secret query values: the frontend reports its URL.
    f = r.forbidden
    assert f"{f['user']}:{f['password']}@" in calls[0]["url"], calls[0]["url"]
    assert f"token={f['token']}" in calls[0]["url"], calls[0]["url"]


def test_client_url_full_has_no_user_info_and_redacted_query(client_run):
    r = client_run
    url = f"{r.t.backend.base_url}/work/{r.n}?token=REDACTED&user=REDACTED"
    check_client(r.trace.clients[0], url)
    check_backend_server(r.t, r.trace.be_servers[0], r.n)


def test_client_and_server_spans_hold_no_secret(client_run):
    r = client_run
    assert len(r.spans) >= 3, r.spans
    found = leaks(r.spans, r.forbidden)
    assert not found, "secrets in exported spans:\n" + "\n".join(found[:REPORT_AT_MOST])
    wrong = [w for s in r.spans for w in url_problems(s)]
    assert not wrong, "\n".join(wrong)


def test_traced_credentials_never_reach_gospans_output(client_run):
    r = client_run
    shown = [name for name, f in r.forbidden.items() if f in r.output]
    assert not shown, f"gospan printed {shown}:\n{r.output}"


# ---- c: gospan's own export credentials -------------------------------------------------------


class Collector:
    """A collector that refuses: it answers every export with STATUS and a body of its own, or
    the request's headers (ECHO); with PARTIAL, 200 and a partial success whose message is the
    request's headers. It keeps the headers of every request."""

    def __init__(self, status=401, echo=False, partial=False):
        from opentelemetry.proto.collector.trace.v1 import trace_service_pb2 as pb

        self.headers = []
        lock = threading.Lock()
        outer = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, fmt, *args):
                pass

            def do_POST(self):
                self.rfile.read(int(self.headers.get("Content-Length") or 0))
                seen = "".join(f"{k}: {v}\n" for k, v in self.headers.items())
                with lock:
                    outer.headers.append({k.lower(): v for k, v in self.headers.items()})
                code, ctype = status, "text/plain"
                if partial:
                    code, ctype = 200, "application/x-protobuf"
                    body = pb.ExportTraceServiceResponse(
                        partial_success=pb.ExportTracePartialSuccess(
                            rejected_spans=1, error_message=seen)).SerializeToString()
                else:
                    body = (seen if echo else f"refused with {status}\n").encode()
                self.send_response(code)
                self.send_header("Content-Type", ctype)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}/v1/traces"
        threading.Thread(target=self._server.serve_forever, daemon=True).start()

    def close(self):
        self._server.shutdown()
        self._server.server_close()


@dataclass
class Case:
    name: str
    collector: dict | None  # Collector's arguments; None: nothing listens
    said: str  # what gospan's stderr shows once an export has failed
    sig: int = signal.SIGTERM
    # filled in by the run
    gospan: object = None
    svc: object = None
    rx: object = None
    returncode: int | None = None
    said_it: bool = False
    service_ok: bool = False
    output: str = field(default="", repr=False)


CASES = [
    Case("nothing-listens", None, "failed: "),
    Case("401", {"status": 401}, "HTTP 401"),
    Case("500", {"status": 500}, "HTTP 500"),
    Case("401-echoing-headers", {"status": 401, "echo": True}, "HTTP 401"),
    Case("partial-success-echoing-headers", {"partial": True}, "rejected 1 of"),
    Case("sigabrt", None, "failed: ", signal.SIGABRT),
    Case("sigsegv", {"status": 401, "echo": True}, "HTTP 401", signal.SIGSEGV),
]


@dataclass
class ExportRun:
    cases: dict
    forbidden: dict


@pytest.fixture(scope="module")
def export_run(start_service, start_gospan, free_port, otlp_proto):
    """Every case at once, one service and one gospan each: attach, a few requests, wait for
    gospan to say the export failed, then the case's signal."""
    apikey = secret("apikey")
    forbidden = {"bearer": secret("bearer"), "apikey": apikey,
                 "apikey percent-encoded": apikey.replace("-", "%2D", 1),
                 "tenant": secret("tenant"), "endpoint password": secret("endpoint")}
    env = {
        "OTEL_EXPORTER_OTLP_HEADERS": f"authorization=Bearer {forbidden['bearer']},"
                                      f"x-api-key={forbidden['apikey percent-encoded']}",
        "OTEL_EXPORTER_OTLP_TRACES_HEADERS": f"x-tenant-token={forbidden['tenant']}",
        "OTEL_LOG_LEVEL": "debug",
        "OTEL_EXPORTER_OTLP_TIMEOUT": "1000",
        "OTEL_BSP_EXPORT_TIMEOUT": "1000",
    }
    cases = {c.name: Case(c.name, c.collector, c.said, c.sig) for c in CASES}
    try:
        # No core file: it would hold the secrets, in whatever directory the tests run from.
        core = resource.getrlimit(resource.RLIMIT_CORE)
        resource.setrlimit(resource.RLIMIT_CORE, (0, core[1]))
        try:
            for c in cases.values():
                c.rx = Collector(**c.collector) if c.collector is not None else None
                url = c.rx.url if c.rx else f"http://127.0.0.1:{free_port()}/v1/traces"
                # User info in the endpoint itself: every message about the export names it.
                url = url.replace("http://", f"http://gospan:{forbidden['endpoint password']}@", 1)
                c.svc = start_service()
                c.gospan = start_gospan(
                    c.svc.pid, env=dict(env, OTEL_EXPORTER_OTLP_TRACES_ENDPOINT=url),
                    args=["--verbose"])
        finally:
            resource.setrlimit(resource.RLIMIT_CORE, core)
        for c in cases.values():
            c.gospan.wait_attached()
        for c in cases.values():
            for i in range(3):
                assert call(c.svc, "GET", f"/users/{c.name}-{i}") == 200
        for c in cases.values():
            c.said_it = wait_until(lambda: c.said in c.gospan.stderr, MESSAGE_TIMEOUT)
        for c in cases.values():
            c.returncode = c.gospan.stop(c.sig)
            c.output = f"{c.gospan.stderr}\n{c.gospan.stdout}"
            c.service_ok = c.svc.alive() and call(c.svc, "GET", "/health") == 200
    finally:
        for c in cases.values():
            if c.rx:
                c.rx.close()
    return ExportRun(cases, forbidden)


@pytest.fixture(params=[c.name for c in CASES])
def case(request, export_run):
    return export_run.cases[request.param]


def test_export_failed_as_intended(case, export_run):
    """Otherwise the secrets were never near a message: gospan tried, failed and said so, and a
    collector, where there is one, received the secrets."""
    assert case.said_it, (f"{case.name}: gospan did not say {case.said!r} within "
                          f"{MESSAGE_TIMEOUT:.0f} s:\n{case.output}")
    if case.rx:
        assert case.rx.headers, case.name
        got = case.rx.headers[0]
        f = export_run.forbidden
        assert got.get("authorization") == f"Bearer {f['bearer']}", got
        assert got.get("x-api-key") == f["apikey"], got
        assert got.get("x-tenant-token") == f["tenant"], got


def test_gospan_ended_as_signalled(case):
    if case.sig == signal.SIGTERM:
        assert case.returncode == 0, case.output
        assert "gospan: summary" in case.output, case.output
    else:
        # Killed by the signal, or (built with ASan) reported by the sanitizer and exited.
        assert case.returncode in (-case.sig, 1), f"{case.name}: status {case.returncode}"
    assert case.service_ok, f"{case.name}: the service no longer answers"


def test_export_secrets_never_printed(case, export_run):
    shown = [name for name, f in export_run.forbidden.items() if f in case.output]
    assert not shown, f"{case.name}: gospan printed {shown}:\n{case.output}"


def test_help_hides_endpoint_password(gospan_bin):
    """--help shows every setting's value and where traces go: never an endpoint's password."""
    password = secret("help")
    env = dict(os.environ, OTEL_EXPORTER_OTLP_ENDPOINT=f"https://gospan:{password}@collector:4318",
               OTEL_EXPORTER_OTLP_TRACES_ENDPOINT=f"http://u:{password}@[::1]:4318/v1/traces")
    out = subprocess.run([str(gospan_bin), "--help"], env=env, capture_output=True, text=True,
                         timeout=30)
    text = out.stdout + out.stderr
    assert out.returncode == 0, text
    assert "traces are sent to http://REDACTED@[::1]:4318/v1/traces" in text, text
    assert "https://REDACTED@collector:4318" in text, text
    assert password not in text, text
