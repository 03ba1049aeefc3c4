"""Outgoing trace context at the socket layer: what gospan's sk_msg writer adds to the bytes a
traced process sends, and what it must never touch.

tests/e2e/wiremix is one Go process that makes every kind of TCP call a service makes, through
shared keep-alive transports: plain HTTP/1.1 GET, POST with a Content-Length body and with a
chunked body (both made of text that looks like request lines), a request whose headers are
larger than the transport's 4 KiB write buffer, a request that carries its own traceparent,
HTTP/1.1 and HTTP/2 over TLS, cleartext HTTP/2 (prior knowledge), and two pipelined
HTTP-looking messages over a TCP protocol that is not HTTP. Its servers, in another process,
say exactly what arrived (method, path, protocol, body length and SHA-256, framing, header
sizes, every Traceparent value), and the client checks each answer byte for byte. Its
connections are opened before gospan attaches (a warm pool), and more during the test.

Also here: killing gospan with SIGKILL in the middle of a load leaves the service working and
nothing of gospan's attached.
"""

import json
import re
import subprocess
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from conftest import (CI, REPO, OtlpReceiver, Service, _clean_env, trace_context_counters)

from test_distributed import (BACKEND_SRC, FRONTEND_SRC, NO_PROPAGATION, TRACEPARENT_RE,
                              build_example, get, unique)

WIREMIX_SRC = REPO / "tests" / "e2e" / "wiremix"
SPAN_KIND_SERVER, SPAN_KIND_CLIENT = 2, 3
# The calls that carry gospan's context, and their paths.
HTTP1_CALLS = {"get": "/get", "post-length": "/post", "post-chunked": "/chunked",
               "big-headers": "/big"}
HTTPS_CALLS = ("tls-http1", "tls-http2")
UNTOUCHED = ("tls-http1", "tls-http2", "h2c")  # nothing may be added
OWN_TRACEPARENT = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
ROUNDS = 6
CONCURRENT_ROUNDS = 6
SPAN_TIMEOUT = 20.0

pytestmark = pytest.mark.skipif(NO_PROPAGATION is not None and not CI,
                                reason=f"{NO_PROPAGATION}")


@pytest.fixture(scope="module")
def wiremix_bin(build_dir, go_version, bpf_ready):
    return build_example(WIREMIX_SRC, build_dir, go_version)


class Servers:
    """wiremix -servers: the plain, TLS, h2c and raw echo servers, untraced."""

    def __init__(self, binary):
        self.proc = subprocess.Popen([str(binary), "-servers"], stdin=subprocess.DEVNULL,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     env=_clean_env(), text=True)
        line = self.proc.stdout.readline()
        if not line:
            raise AssertionError(f"wiremix -servers did not start: {self.proc.stderr.read()}")
        self.addrs = json.loads(line)

    def stop(self):
        self.proc.kill()
        self.proc.wait(10)


def run_round(client):
    sent = get(client.base_url, "/run")
    assert sent.status == 200 and isinstance(sent.body, list), sent
    return sent


def test_mixed_traffic_is_untouched_and_http1_carries_context(wiremix_bin, start_gospan):
    pytest.importorskip("opentelemetry.proto.collector.trace.v1.trace_service_pb2")
    servers = Servers(wiremix_bin)
    rx = OtlpReceiver()
    client = None
    try:
        a = servers.addrs
        client = Service(wiremix_bin, env=_clean_env(),
                         args=["-plain", a["plain"], "-tls", a["tls"], "-h2c", a["h2c"],
                               "-raw", a["raw"]])
        # The pool is warm before gospan comes: these connections were never announced to it.
        warm = run_round(client)
        assert all(r["ok"] for r in warm.body), warm.body
        g = start_gospan(client.pid, rx)
        g.wait_attached()
        assert re.search(r"process \d+: \d+ open client connections? (is|are) tracked",
                         g.stderr), g.stderr

        sent = [run_round(client) for _ in range(ROUNDS)]
        with ThreadPoolExecutor(CONCURRENT_ROUNDS) as pool:
            sent += list(pool.map(lambda _: run_round(client), range(CONCURRENT_ROUNDS)))

        bad = [(s.t0, r) for s in sent for r in s.body if not r["ok"]]
        assert not bad, f"{len(bad)} calls were harmed; the first: {bad[:3]}\n{g.stderr}"

        def enough(spans):
            roots = [s for s in spans if s.kind == SPAN_KIND_SERVER]
            return len(roots) >= len(sent)

        deadline = time.monotonic() + SPAN_TIMEOUT
        while not enough(rx.snapshot()) and time.monotonic() < deadline:
            time.sleep(0.1)
        time.sleep(1.0)
        spans = rx.snapshot()
        clients = {s.span_id.hex(): s for s in spans if s.kind == SPAN_KIND_CLIENT}
        problems = []
        for s in sent:
            trace_ids = set()
            for r in s.body:
                tps = r["traceparent"] or []
                name = r["name"]
                if name in HTTP1_CALLS:
                    m = TRACEPARENT_RE.match(tps[0]) if len(tps) == 1 else None
                    c = clients.get(m.group(2)) if m else None
                    if c is None:
                        problems.append(f"{name}: traceparent {tps} names no CLIENT span")
                        continue
                    if c.attrs.get("url.full") != a["plain"] + HTTP1_CALLS[name]:
                        problems.append(f"{name}: its traceparent names the CLIENT span of "
                                        f"{c.attrs.get('url.full')}")
                    if c.trace_id.hex() != m.group(1) or m.group(3) != "01":
                        problems.append(f"{name}: traceparent {tps[0]} is not its CLIENT span's")
                    trace_ids.add(m.group(1))
                elif name == "own-traceparent":
                    if tps != [OWN_TRACEPARENT]:
                        problems.append(f"{name}: the server saw {tps}, expected only the "
                                        f"request's own {OWN_TRACEPARENT}")
                elif tps:
                    problems.append(f"{name}: the server saw traceparent {tps}: nothing may be "
                                    f"added there")
            if len(trace_ids) != 1:
                problems.append(f"one round's calls are in {len(trace_ids)} traces: {trace_ids}")
        assert not problems, "\n".join(problems[:20])

        assert g.stop() == 0, g.stderr
        c = trace_context_counters(g.summary_line())
        n = len(sent)
        want = {"sent": n * len(HTTP1_CALLS), "already_set": n, "https": n * len(HTTPS_CALLS),
                "no_room": 0, "not_http1": 0, "untracked": 0, "h2_not_whole": 0,
                "scratch_busy": 0}
        assert c == want, f"trace-context counters {c}, expected {want}\n{g.summary_line()}"
        assert client.alive()
    finally:
        if client:
            client.stop()
        servers.stop()
        rx.close()


def bpf_prog_ids(pid):
    """The ids of the BPF programs process PID holds, from /proc/PID/fdinfo."""
    ids = set()
    for fd in Path(f"/proc/{pid}/fdinfo").iterdir():
        try:
            m = re.search(r"^prog_id:\s+(\d+)", fd.read_text(), re.M)
        except OSError:
            continue
        if m:
            ids.add(int(m.group(1)))
    return ids


def live_prog_ids():
    out = subprocess.run(["bpftool", "-j", "prog", "show"], capture_output=True, text=True,
                         check=True, timeout=30).stdout
    return {p["id"]: p.get("name", "") for p in json.loads(out)}


def test_sigkill_mid_load_leaves_the_service_working(build_dir, go_version, bpf_ready,
                                                      start_gospan):
    backend = Service(build_example(BACKEND_SRC, build_dir, go_version), env=_clean_env())
    frontend = Service(build_example(FRONTEND_SRC, build_dir, go_version), env=_clean_env(),
                       args=["-backend", backend.base_url])
    rx = OtlpReceiver()
    stop = threading.Event()
    results = []
    try:
        g = start_gospan(frontend.pid, rx)
        g.wait_attached()
        ours = bpf_prog_ids(g.proc.pid)
        names = live_prog_ids()
        # Older kernels and bpftools keep 15 characters of a program's name.
        wire = {i for i in ours if names.get(i, "")[:15] in ("write_trace_con", "track_client_so")}
        assert len(wire) == 2, f"gospan's socket-layer programs are not loaded: {ours} {names}"

        def load():
            while not stop.is_set():
                results.append(get(frontend.base_url, f"/direct/{unique('kill')}"))

        workers = [threading.Thread(target=load) for _ in range(8)]
        for w in workers:
            w.start()
        time.sleep(2.0)
        before = len(results)
        g.proc.kill()
        g.proc.wait(10)
        time.sleep(2.0)
        stop.set()
        for w in workers:
            w.join(30)
        failed = [r for r in results if r.status != 200]
        assert not failed, f"{len(failed)} of {len(results)} requests failed, e.g. {failed[0]}"
        assert len(results) - before > 50, f"only {len(results) - before} requests after the kill"
        carried = [r for r in results[:before] if r.echoed_traceparent("direct")]
        assert carried, "no request carried trace context before the kill"

        # The kernel frees what only gospan held: the programs, the links, the sockhash.
        deadline = time.monotonic() + 10
        while ours & set(live_prog_ids()) and time.monotonic() < deadline:
            time.sleep(0.2)
        left = {i: n for i, n in live_prog_ids().items() if i in ours}
        assert not left, f"gospan's BPF programs outlived it: {left}"
        after = get(frontend.base_url, f"/direct/{unique('after')}")
        assert after.status == 200 and after.echoed_traceparent("direct") == "", after
    finally:
        stop.set()
        frontend.stop()
        backend.stop()
        rx.close()
