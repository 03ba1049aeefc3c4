"""Delivery guarantees of gospan's exporter, against receivers this module controls (loopback only).

- TLS: a throw-away CA and a server certificate for 127.0.0.1 made with the openssl command line;
  an HTTPS OTLP receiver. The CA given with OTEL_EXPORTER_OTLP_CERTIFICATE is trusted; without
  it the export is refused by verification; a missing CA file stops gospan before it starts.
- An outage in the middle of a run, four times longer than OTEL_BSP_EXPORT_TIMEOUT: every span
  made before, during and after it is delivered exactly once, the failed batch kept queued.
- A backend that never answers: the bounded queue (OTEL_BSP_MAX_QUEUE_SIZE) drops spans rather
  than growing or slowing the service, and the summary accounts for every captured span.
"""

import http.client
import re
import shutil
import signal
import socket
import ssl
import subprocess
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from conftest import _clean_env, call, counter, drop_reasons, decode_request, wait_until

OUTAGE_S = 8.0  # four times OTEL_BSP_EXPORT_TIMEOUT in the outage test
SPAN_WAIT = 20.0


# ---- a receiver this module controls ------------------------------------------------------------


class Receiver:
    """An OTLP/HTTP (or, with SSL_CTX, HTTPS) endpoint on 127.0.0.1:PORT.

    HANG: never answer. Otherwise every well-formed POST /v1/traces is answered 200 and its spans
    kept. close() stops listening AND cuts every open connection, so the port refuses connections
    afterwards; a request whose body was read but not yet answered when close() ran is neither
    recorded nor answered, so 'delivered' means 'answered 200'."""

    def __init__(self, port=0, ssl_ctx=None, hang=False):
        from opentelemetry.proto.collector.trace.v1 import trace_service_pb2

        self._pb = trace_service_pb2
        self.hang = hang
        self.spans = []
        self.posts = 0
        self.errors = []  # handshake and decoding failures
        self._lock = threading.Condition()
        self._closed = False
        self._release = threading.Event()
        self._conns = set()
        rx = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, fmt, *args):
                pass

            def setup(self):
                with rx._lock:
                    rx._conns.add(self.request)
                super().setup()

            def finish(self):
                try:
                    super().finish()
                finally:
                    with rx._lock:
                        rx._conns.discard(self.request)

            def do_POST(self):
                rx._handle(self)

        class Server(ThreadingHTTPServer):
            daemon_threads = True

            def handle_error(self, request, client_address):
                import sys
                with rx._lock:
                    rx.errors.append(repr(sys.exc_info()[1]))
                    rx._lock.notify_all()

        self._server = Server(("127.0.0.1", port), Handler, bind_and_activate=False)
        self._server.server_bind()
        self._server.server_activate()
        if ssl_ctx is not None:
            # The handshake happens in the handler's thread, at the first read.
            self._server.socket = ssl_ctx.wrap_socket(self._server.socket, server_side=True,
                                                      do_handshake_on_connect=False)
        self.port = self._server.server_address[1]
        scheme = "https" if ssl_ctx is not None else "http"
        self.endpoint = f"{scheme}://127.0.0.1:{self.port}"
        self.url = f"{self.endpoint}/v1/traces"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()

    def _decode(self, headers, body):
        return decode_request(self._pb, headers.get("content-encoding", "identity"), body)

    def _handle(self, h):
        length = int(h.headers.get("Content-Length") or 0)
        body = h.rfile.read(length) if length else b""
        headers = {k.lower(): v for k, v in h.headers.items()}
        with self._lock:
            self.posts += 1
            self._lock.notify_all()
        if self.hang:
            self._release.wait(120.0)
            h.close_connection = True
            return
        try:
            spans = self._decode(headers, body)
        except Exception as e:  # noqa: BLE001 - the exporter's fault; recorded and refused
            with self._lock:
                self.errors.append(f"cannot decode: {e!r}")
            h.send_error(400)
            return
        with self._lock:
            if self._closed:
                h.close_connection = True
                return
            self.spans.extend(spans)
            reply = self._pb.ExportTraceServiceResponse().SerializeToString()
            h.send_response(200)
            h.send_header("Content-Type", "application/x-protobuf")
            h.send_header("Content-Length", str(len(reply)))
            h.end_headers()
            h.wfile.write(reply)
            h.wfile.flush()
            self._lock.notify_all()

    def snapshot(self):
        with self._lock:
            return list(self.spans)

    def paths(self):
        return [s.attrs.get("url.path") for s in self.snapshot()]

    def wait_for_spans(self, n, timeout):
        deadline = time.monotonic() + timeout
        with self._lock:
            while len(self.spans) < n:
                left = deadline - time.monotonic()
                if left <= 0:
                    break
                self._lock.wait(left)
            return len(self.spans)

    def wait_posts(self, n, timeout):
        deadline = time.monotonic() + timeout
        with self._lock:
            while self.posts < n:
                left = deadline - time.monotonic()
                if left <= 0:
                    break
                self._lock.wait(left)
            return self.posts

    def close(self):
        if self._closed:
            return
        with self._lock:
            self._closed = True
            conns = list(self._conns)
        self._release.set()
        self._server.shutdown()
        self._server.server_close()
        for c in conns:
            try:
                c.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass


@pytest.fixture
def receivers(otlp_proto):
    made = []

    def make(**kw):
        rx = Receiver(**kw)
        made.append(rx)
        return rx

    yield make
    for rx in made:
        rx.close()


# ---- 1. TLS -------------------------------------------------------------------------------------


def _openssl(*args, cwd):
    res = subprocess.run(["openssl", *args], cwd=cwd, capture_output=True, text=True, timeout=60)
    assert res.returncode == 0, f"openssl {' '.join(args)} failed:\n{res.stderr}"


@pytest.fixture(scope="module")
def pki(tmp_path_factory):
    """A throw-away CA (ca.pem) and a certificate it signed for IP 127.0.0.1 (server.pem/.key)."""
    if shutil.which("openssl") is None:
        pytest.skip("the openssl command line tool is needed to make test certificates")
    d = tmp_path_factory.mktemp("pki")
    ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
    _openssl("req", "-x509", *ec, "-keyout", "ca.key", "-out", "ca.pem", "-days", "2",
             "-subj", "/CN=gospan e2e test CA",
             "-addext", "basicConstraints=critical,CA:TRUE",
             "-addext", "keyUsage=critical,keyCertSign,cRLSign", cwd=d)
    _openssl("req", "-new", *ec, "-keyout", "server.key", "-out", "server.csr",
             "-subj", "/CN=127.0.0.1", cwd=d)
    (d / "server.ext").write_text("basicConstraints=CA:FALSE\n"
                                  "keyUsage=critical,digitalSignature,keyEncipherment\n"
                                  "extendedKeyUsage=serverAuth\n"
                                  "subjectAltName=IP:127.0.0.1\n")
    _openssl("x509", "-req", "-in", "server.csr", "-CA", "ca.pem", "-CAkey", "ca.key",
             "-CAcreateserial", "-out", "server.pem", "-days", "2", "-extfile", "server.ext",
             cwd=d)
    # gospan refuses a CA file others can write (docs/configuration.md): not left to the umask.
    (d / "ca.pem").chmod(0o644)
    return d


@pytest.fixture
def tls_receiver(pki, receivers):
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(pki / "server.pem", pki / "server.key")
    return receivers(ssl_ctx=ctx)


def test_pki_is_sound(pki, tls_receiver):
    """The certificates themselves verify with Python's own TLS client: a failure below is
    gospan's."""
    ctx = ssl.create_default_context(cafile=str(pki / "ca.pem"))
    c = http.client.HTTPSConnection("127.0.0.1", tls_receiver.port, context=ctx, timeout=10)
    try:
        c.request("POST", "/v1/traces", body=b"",
                  headers={"Content-Type": "application/x-protobuf"})
        assert c.getresponse().status == 200
    finally:
        c.close()


def test_tls_with_the_ca_delivers(pki, tls_receiver, start_service, start_gospan):
    svc = start_service()
    g = start_gospan(svc.pid, env={
        "OTEL_EXPORTER_OTLP_ENDPOINT": tls_receiver.endpoint,
        "OTEL_EXPORTER_OTLP_CERTIFICATE": str(pki / "ca.pem"),
    })
    g.wait_attached()
    paths = [f"/users/tls-{i}" for i in range(3)]
    for p in paths:
        assert call(svc, "GET", p) == 200
    tls_receiver.wait_for_spans(len(paths), SPAN_WAIT)
    assert g.stop() == 0, g.stderr
    assert sorted(tls_receiver.paths()) == sorted(paths), (
        f"{tls_receiver.paths()} arrived over TLS\nreceiver errors: {tls_receiver.errors}\n"
        f"{g.stderr}")
    assert "failed" not in g.stderr, g.stderr
    line = g.summary_line()
    assert line and counter(line, "exported") == len(paths), line
    assert counter(line, "export failures") == 0, line


def test_tls_without_the_ca_is_refused(tls_receiver, start_service, start_gospan):
    svc = start_service()
    g = start_gospan(svc.pid, env={
        "OTEL_EXPORTER_OTLP_ENDPOINT": tls_receiver.endpoint,
        "OTEL_EXPORTER_OTLP_TIMEOUT": "2000",
    })
    g.wait_attached()
    assert call(svc, "GET", "/users/untrusted") == 200
    assert wait_until(lambda: re.search(r"export to .* failed", g.stderr), SPAN_WAIT), (
        f"no export failure logged for an untrusted server certificate\n{g.stderr}")
    # Let the retries run out within OTEL_EXPORTER_OTLP_TIMEOUT=2000.
    assert wait_until(lambda: re.search(r"export to .* failed(?!.*retrying in)", g.stderr),
                      10.0), g.stderr
    assert g.stop() == 0, g.stderr
    assert tls_receiver.snapshot() == [], "spans reached a server gospan must not trust"
    assert tls_receiver.posts == 0, "a request was sent to a server gospan must not trust"
    failures = [ln for ln in g.err.lines if re.search(r"export to .* failed", ln)]
    assert any(re.search(r"certificate|SSL|TLS|verif", ln, re.I) for ln in failures), (
        f"the export failure does not name a certificate/TLS problem:\n" + "\n".join(failures))
    line = g.summary_line()
    assert line, g.stderr
    assert counter(line, "export failures") >= 1, line
    assert counter(line, "exported") == 0, line
    assert drop_reasons(line).get("export_failed") == 1, line


def test_missing_ca_file_stops_gospan_before_it_starts(tmp_path, gospan_bin, start_service):
    svc = start_service()
    missing = tmp_path / "no-such-dir" / "ca.pem"
    env = _clean_env()
    env.update(OTEL_EXPORTER_OTLP_ENDPOINT="https://127.0.0.1:9",
               OTEL_EXPORTER_OTLP_CERTIFICATE=str(missing))
    res = subprocess.run([str(gospan_bin), "--pid", str(svc.pid)], env=env, capture_output=True,
                         text=True, timeout=30, stdin=subprocess.DEVNULL)
    out = res.stdout + res.stderr
    assert res.returncode != 0, out
    assert "gospan: attached" not in out, out
    assert "OTEL_EXPORTER_OTLP_CERTIFICATE" in out, out
    assert str(missing) in out, out
    assert svc.alive()


# ---- 2. an outage in the middle of a run --------------------------------------------------------


def test_mid_run_outage_loses_and_duplicates_nothing(receivers, start_service, start_gospan):
    rx = receivers()
    port = rx.port
    svc = start_service()
    g = start_gospan(svc.pid, rx, env={
        "OTEL_BSP_MAX_QUEUE_SIZE": "2048",
        "OTEL_BSP_SCHEDULE_DELAY": "200",
        "OTEL_EXPORTER_OTLP_TIMEOUT": "1000",
        # Far shorter than the outage: the batch must outlive its export call, kept queued.
        "OTEL_BSP_EXPORT_TIMEOUT": "2000",
    })
    g.wait_attached()
    before = [f"/users/before-{i}" for i in range(10)]
    for p in before:
        assert call(svc, "GET", p) == 200
    rx.wait_for_spans(len(before), SPAN_WAIT)
    assert sorted(rx.paths()) == sorted(before), (rx.paths(), g.stderr)

    rx.close()
    t_down = time.monotonic()
    during = [f"/users/during-{i}" for i in range(50)]
    for p in during:
        assert call(svc, "GET", p) == 200
        time.sleep(0.05)
    time.sleep(max(0.0, OUTAGE_S - (time.monotonic() - t_down)))
    assert re.search(r"export to .* failed", g.stderr), (
        f"no export failed while the receiver was down\n{g.stderr}")
    assert re.search(r"spans kept queued", g.stderr), (
        f"no batch outlived its export timeout during the outage\n{g.stderr}")
    rx2 = receivers(port=port)

    after = [f"/users/after-{i}" for i in range(10)]
    for p in after:
        assert call(svc, "GET", p) == 200
    want = set(during + after)
    wait_until(lambda: want <= set(rx2.paths()), SPAN_WAIT)
    time.sleep(1.0)  # room for a duplicate to show up
    assert g.stop() == 0, g.stderr

    got = rx.paths() + rx2.paths()
    dupes = sorted({p for p in got if got.count(p) > 1})
    missing = sorted(set(before + during + after) - set(got))
    assert not missing, f"{len(missing)} spans never delivered: {missing}\n{g.stderr}"
    assert not dupes, f"spans delivered more than once: {dupes}"
    assert len(got) == len(before) + len(during) + len(after), got
    line = g.summary_line()
    assert line, g.stderr
    assert counter(line, "retries") > 0, line
    assert counter(line, "dropped") == 0, line
    assert counter(line, "exported") == len(got), line


# ---- 3. the bounded queue -----------------------------------------------------------------------


def _rss_kib(pid):
    for ln in Path(f"/proc/{pid}/status").read_text().splitlines():
        if ln.startswith("VmRSS:"):
            return int(ln.split()[1])
    return 0


def test_bounded_queue_drops_instead_of_growing_or_blocking(receivers, start_service,
                                                            start_gospan):
    rx = receivers(hang=True)
    svc = start_service()
    g = start_gospan(svc.pid, rx, env={
        "OTEL_BSP_MAX_QUEUE_SIZE": "64",
        "OTEL_BSP_MAX_EXPORT_BATCH_SIZE": "16",
        "OTEL_EXPORTER_OTLP_TIMEOUT": "2000",
    })
    g.wait_attached()
    rss = [_rss_kib(g.proc.pid)]
    sampling = threading.Event()

    def sample():
        while not sampling.wait(0.05):
            try:
                rss.append(_rss_kib(g.proc.pid))
            except OSError:
                return

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    n = 500
    slowest = 0.0
    t0 = time.monotonic()
    try:
        for i in range(n):
            t = time.monotonic()
            assert call(svc, "GET", f"/users/q-{i}") == 200
            slowest = max(slowest, time.monotonic() - t)
        took = time.monotonic() - t0
        assert rx.wait_posts(1, SPAN_WAIT), f"no export reached the hanging receiver\n{g.stderr}"
        time.sleep(1.0)
    finally:
        sampling.set()
        sampler.join(5)
    assert svc.alive()
    assert slowest < 1.0, f"a request took {slowest:.2f} s while the backend hung"
    assert took < 60.0, f"{n} requests took {took:.1f} s while the backend hung"
    # What the hang adds to gospan's memory once attached: the queue is bounded, so little. (Not
    # the RSS itself: an ASan build's quarantine keeps what the attach's analysis freed, 60 MiB
    # and more, where a plain build's peak is under 30 MiB.)
    peak = max(rss)
    assert peak - rss[0] < 8 * 1024, (
        f"gospan's RSS went from {rss[0]} to {peak} KiB with OTEL_BSP_MAX_QUEUE_SIZE=64")

    t = time.monotonic()
    assert g.stop(signal.SIGTERM, timeout=20.0) == 0, g.stderr
    assert time.monotonic() - t < 10.0, g.stderr
    line = g.summary_line()
    assert line, g.stderr
    captured = counter(line, "spans captured")
    exported = counter(line, "exported")
    dropped = counter(line, "dropped")
    reasons = drop_reasons(line)
    assert rx.snapshot() == [] and exported == 0, line
    assert captured == n, line
    assert reasons.get("queue_full", 0) > 0, line
    assert sum(reasons.values()) == dropped, line
    assert captured == exported + dropped, line
