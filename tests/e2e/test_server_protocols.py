"""SERVER spans over every protocol net/http serves: HTTP/1.1 in the clear and over TLS, HTTP/2
over TLS, and cleartext HTTP/2 (Go 1.24's Server.Protocols). Each reaches ServeHTTP by another
caller ((*conn).serve, or the HTTP/2 server through initALPNRequest or
unencryptedHTTP2Request), and gospan ends each request where its caller gets control back
(exporter/analysis/sites.c): every caller must have its end, or those requests would never end.

The servers are tests/e2e/wiremix's (-servers), which echo what arrived and answer with the
status an X-Status header asks for; curl makes the requests, with the protocol forced. The status
is read from net/http's HTTP/1 writer (*response) and from its HTTP/2 writer's state.

HTTP/2 requests end in the HTTP/2 server's own goroutine, at the CALL of its writer's handlerDone
(serve_http2_done), HTTP/1 ones in (*conn).serve (serve_http_return): no request single-steps a
probe, which the kernel's counts of each program's runs and its out-of-line page show.
"""

import re
import shutil
import subprocess
import time

import pytest

from conftest import OtlpReceiver, kernel_probe_hits, out_of_line_page
from test_wire import WIREMIX_SRC, Servers
from test_distributed import build_example

SPAN_KIND_SERVER = 2
PER_PROTOCOL = 8
SPAN_TIMEOUT = 20.0
# The statuses asked for, request after request (None: the handler writes none, net/http sends
# 200); each protocol gets every one.
STATUSES = (None, 201, 404, 503)
SPAN_STATUS_ERROR = 2
# curl's flags, the server it goes to, and the protocol version the span must say.
PROTOCOLS = {
    "http1": (["--http1.1"], "plain", "1.1"),
    "tls-http1": (["--http1.1", "-k"], "tls", "1.1"),
    "tls-http2": (["--http2", "-k"], "tls", "2"),
    "h2c": (["--http2-prior-knowledge"], "h2c", "2"),
}


@pytest.fixture(scope="module")
def wiremix_bin(build_dir, go_version, bpf_ready):
    return build_example(WIREMIX_SRC, build_dir, go_version)


def curl(flags, url, body, status=None):
    """One POST with curl; (HTTP status, protocol version, start, end) in monotonic ns."""
    if status is not None:
        flags = [*flags, "-H", f"X-Status: {status}"]
    t0 = time.monotonic_ns()
    res = subprocess.run(["curl", "-sS", "-o", "/dev/null", "-w", "%{http_code} %{http_version}",
                          "--data-binary", body, *flags, url],
                         capture_output=True, text=True, timeout=30)
    t1 = time.monotonic_ns()
    assert res.returncode == 0, res.stderr
    code, version = res.stdout.split()
    return int(code), version, t0, t1


def test_every_protocol_ends_its_server_spans(wiremix_bin, start_gospan, bpf_stats):
    pytest.importorskip("opentelemetry.proto.collector.trace.v1.trace_service_pb2")
    assert shutil.which("curl"), "curl is needed (make deps installs it)"
    servers = Servers(wiremix_bin)
    rx = OtlpReceiver()
    try:
        g = start_gospan(servers.proc.pid, rx)
        attached = g.wait_attached()
        # No request served single-steps a probe, HTTP/1 or HTTP/2.
        assert "0 a request served" in attached, attached
        assert "(single-stepped hits: 0 an HTTP/2 request)" in attached, attached
        made = {}
        for name, (flags, server, version) in PROTOCOLS.items():
            for i in range(PER_PROTOCOL):
                path = f"/{name}/{i}"
                status = STATUSES[i % len(STATUSES)]
                code, got, t0, t1 = curl(flags, servers.addrs[server] + path, f"body {name} {i}",
                                         status)
                assert code == (status or 200), f"{name}: HTTP {code}"
                assert got == version, f"{name}: curl spoke HTTP/{got}"
                made[path] = (version, code, t0, t1)

        deadline = time.monotonic() + SPAN_TIMEOUT
        while time.monotonic() < deadline:
            spans = [s for s in rx.snapshot() if s.kind == SPAN_KIND_SERVER]
            if len(spans) >= len(made):
                break
            time.sleep(0.1)
        time.sleep(0.5)
        xol = out_of_line_page(servers.proc.pid)
        assert g.stop() == 0, g.stderr
    finally:
        servers.stop()
    _, per = kernel_probe_hits(g.stderr)
    http2 = sum(PER_PROTOCOL for _, _, version in PROTOCOLS.values() if version == "2")
    assert per.get("serve_http2_done") == http2, per
    assert per.get("serve_http_return") == len(PROTOCOLS) * PER_PROTOCOL - http2, per
    assert not xol, f"a probe was single-stepped: {attached}"

    spans = {s.attrs.get("url.path"): s for s in rx.snapshot() if s.kind == SPAN_KIND_SERVER}
    missing = sorted(set(made) - set(spans))
    assert not missing, f"no SERVER span for {missing}\n{g.stderr}"
    assert len([s for s in rx.snapshot() if s.kind == SPAN_KIND_SERVER]) == len(made)
    boot = time.time_ns() - time.monotonic_ns()
    for path, (version, code, t0, t1) in made.items():
        s = spans[path]
        assert s.name.startswith("POST"), (path, s.name)
        assert s.attrs["network.protocol.version"] == version, (path, s.attrs)
        assert s.attrs.get("http.response.status_code") == code, (path, s.attrs)
        # A SERVER span is an error for a 5xx only (the HTTP conventions).
        assert (s.status_code == SPAN_STATUS_ERROR) == (code >= 500), (path, s.status_code)
        if code >= 500:
            assert s.attrs.get("error.type") == str(code), (path, s.attrs)
        # Inside the client's window: an end found in the wrong place would fall outside it,
        # or come with another request's.
        slack = 5_000_000  # the two clocks are read at slightly different moments
        assert t0 - slack <= s.start_ns - boot, (path, "starts before it was sent")
        assert s.end_ns - boot <= t1 + slack, (path, "ends after the answer")
        assert s.start_ns < s.end_ns, path
    dropped = re.search(r"dropped (\d+)", g.summary_line() or "")
    assert dropped and dropped.group(1) == "0", g.summary_line()
