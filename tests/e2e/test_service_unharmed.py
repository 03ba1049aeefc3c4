"""gospan coming and going must never be felt by the traced service: while a steady load runs,
gospan attaches and is stopped with SIGTERM, then attaches again (exporting to a port nobody
listens on) and is killed with SIGKILL. Every request must be answered correctly throughout, and
the service must still be alive and serving at the end.
"""

import http.client
import signal
import threading
import time
from dataclasses import dataclass

import pytest

from conftest import SLOWDOWN

WORKERS = 4
RATE = 1000  # requests per second, all workers together: the load is steady, not a flood
MAX_REQUESTS = 60000  # bounds the load even if a phase never ends
# Bounds it in time too, far above what the phases take: on a slow machine (a TCG virtual
# machine with Linux 6.1, where each attach takes about 10 s) 120 s ended the load mid-test.
LOAD_DEADLINE = 600.0 * SLOWDOWN
PHASE_TIMEOUT = 30.0 * SLOWDOWN
HTTP_TIMEOUT = 10.0


def requests(n):
    """How many requests a phase waits for: N, or N / SLOWDOWN on a slower machine (a TCG
    guest serves a few hundred a second under the probes, and the phases were most of its
    boot), never under 100."""
    return max(100, round(n / SLOWDOWN))


@dataclass
class Done:
    t0: int
    t1: int
    path: str


class Load:
    """WORKERS threads sending checked requests at RATE until stopped, each on a keep-alive
    connection with every tenth request on a fresh one."""

    def __init__(self, port):
        self.port = port
        self.done = []
        self.failures = []
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._deadline = time.monotonic() + LOAD_DEADLINE
        self._threads = [threading.Thread(target=self._work, args=(w,), daemon=True)
                         for w in range(WORKERS)]

    def start(self):
        for t in self._threads:
            t.start()

    def stop(self):
        self._stop.set()
        for t in self._threads:
            t.join(HTTP_TIMEOUT + 5)
        assert not any(t.is_alive() for t in self._threads), "load workers did not stop"

    @property
    def count(self):
        with self._lock:
            return len(self.done) + len(self.failures)

    def wait_count(self, n, what):
        deadline = time.monotonic() + PHASE_TIMEOUT
        while self.count < n:
            if time.monotonic() > deadline or self._stop.is_set():
                ended = not any(t.is_alive() for t in self._threads)
                pytest.fail(f"the load reached {self.count} requests, not {n}, {what}"
                            + (" (the load had ended: its deadline or MAX_REQUESTS)"
                               if ended else ""))
            time.sleep(0.01)

    def _request(self, w, i):
        """Request I of worker W: (method, path, body, expected status, expected body)."""
        k = f"w{w}-{i}"
        kind = i % 5
        if kind == 0:
            return "GET", f"/users/{k}", None, 200, b'{"id":"%s","name":"user %s"}\n' % (
                k.encode(), k.encode())
        if kind == 1:
            return "GET", f"/items/load/{k}", None, 200, b"item load/%s\n" % k.encode()
        if kind == 2:
            return "POST", "/users", b"{}", 201, b'{"bytes":2,"created":true}\n'
        if kind == 3:
            return "HEAD", f"/users/{k}", None, 200, b""
        return "GET", "/health", None, 200, b"ok\n"

    def _work(self, w):
        conn = None
        i = 0
        interval = WORKERS / RATE
        next_at = time.monotonic()
        while not self._stop.is_set() and time.monotonic() < self._deadline:
            next_at += interval
            pause = next_at - time.monotonic()
            if pause > 0:
                time.sleep(pause)
            with self._lock:
                if len(self.done) + len(self.failures) >= MAX_REQUESTS:
                    return
            method, path, body, want_status, want_body = self._request(w, i)
            fresh = i % 10 == 0
            i += 1
            if conn is None or fresh:
                if conn is not None:
                    conn.close()
                conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=HTTP_TIMEOUT)
            t0 = time.time_ns()
            try:
                conn.request(method, path, body=body)
                resp = conn.getresponse()
                got = resp.read()
                t1 = time.time_ns()
                ok = resp.status == want_status and got == want_body
                why = f"{resp.status} {got[:100]!r}"
            except (OSError, http.client.HTTPException) as e:
                t1 = time.time_ns()
                ok, why = False, repr(e)
                conn.close()
                conn = None
            with self._lock:
                if ok:
                    self.done.append(Done(t0, t1, path))
                else:
                    self.failures.append(f"{method} {path}: {why} [{t0}, {t1}]")
        if conn is not None:
            conn.close()


def test_service_unharmed_by_attach_detach_and_kill(start_service, start_gospan, otlp_receiver,
                                                      free_port):
    svc = start_service()
    load = Load(svc.port)
    load.start()
    try:
        load.wait_count(requests(200), "before gospan started")

        # SIGTERM: detach, flush, summary, exit 0.
        g1_started = time.time_ns()
        g1 = start_gospan(svc.pid, otlp_receiver)
        g1.wait_attached()
        g1_attached = time.time_ns()
        load.wait_count(load.count + requests(1000), "while the first gospan was attached")
        g1_stopping = time.time_ns()
        rc1 = g1.stop(signal.SIGTERM)
        g1_exited = time.time_ns()
        load.wait_count(load.count + requests(300), "after the first gospan exited")

        # SIGKILL, with exports failing: nothing gets to clean up but the kernel.
        dead = f"http://127.0.0.1:{free_port()}/v1/traces"
        g2 = start_gospan(svc.pid, env={"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": dead})
        g2.wait_attached()
        load.wait_count(load.count + requests(1000), "while the second gospan was attached")
        rc2 = g2.stop(signal.SIGKILL)
        load.wait_count(load.count + requests(500), "after the second gospan was killed")
    finally:
        load.stop()

    assert not load.failures, (f"{len(load.failures)} of {load.count} requests failed:\n"
                               + "\n".join(load.failures[:20]))
    assert load.count >= requests(3000)

    assert svc.alive(), f"the service died:\n{svc.err.text}"
    c = http.client.HTTPConnection("127.0.0.1", svc.port, timeout=HTTP_TIMEOUT)
    c.request("GET", "/users/after")
    resp = c.getresponse()
    assert (resp.status, resp.read()) == (200, b'{"id":"after","name":"user after"}\n')
    c.close()
    bad = [ln for ln in svc.err.lines
           if any(w in ln for w in ("fatal error", "panic", "SIGTRAP", "SIGILL", "SIGSEGV",
                                    "unexpected fault"))]
    assert not bad, "the service complained:\n" + "\n".join(bad[:20])

    assert rc1 == 0, f"gospan exited with {rc1} after SIGTERM:\n{g1.stderr}"
    assert g1.summary_line(), f"gospan printed no 'gospan: summary' line:\n{g1.stderr}"
    assert rc2 == -signal.SIGKILL

    # The first gospan saw every request made wholly while it was attached, and none made
    # wholly outside its lifetime.
    assert otlp_receiver.errors == []
    spans = otlp_receiver.snapshot()
    surely = sum(1 for d in load.done if d.t0 > g1_attached and d.t1 < g1_stopping)
    maybe = sum(1 for d in load.done if d.t1 > g1_started and d.t0 < g1_exited)
    assert surely <= len(spans) <= maybe, (
        f"{len(spans)} spans exported; {surely} requests were made while gospan was attached, "
        f"{maybe} during its lifetime")


CYCLES = 6


def test_service_unharmed_by_repeated_kills_and_restarts(start_service, start_gospan,
                                                         otlp_receiver):
    """Again and again under load: gospan attached, then SIGKILL or SIGTERM in turn, then a
    new one attached at once. Not a request lost or wrong, and every SIGTERM exits cleanly."""
    svc = start_service()
    load = Load(svc.port)
    load.start()
    rcs = []
    try:
        load.wait_count(requests(200), "before gospan started")
        for i in range(CYCLES):
            g = start_gospan(svc.pid, otlp_receiver)
            g.wait_attached()
            load.wait_count(load.count + requests(300), f"while gospan #{i + 1} was attached")
            sig = signal.SIGKILL if i % 2 == 0 else signal.SIGTERM
            rcs.append((sig, g.stop(sig), g.stderr))
        load.wait_count(load.count + requests(300), "after the last gospan")
    finally:
        load.stop()

    assert not load.failures, (f"{len(load.failures)} of {load.count} requests failed:\n"
                               + "\n".join(load.failures[:20]))
    assert svc.alive(), f"the service died:\n{svc.err.text}"
    for sig, rc, err in rcs:
        want = -signal.SIGKILL if sig == signal.SIGKILL else 0
        assert rc == want, f"gospan exited with {rc} after {sig.name}:\n{err}"
    bad = [ln for ln in svc.err.lines
           if any(w in ln for w in ("fatal error", "panic", "SIGTRAP", "SIGILL", "SIGSEGV",
                                    "unexpected fault"))]
    assert not bad, "the service complained:\n" + "\n".join(bad[:20])
    assert otlp_receiver.errors == []
