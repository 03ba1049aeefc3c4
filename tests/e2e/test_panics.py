"""Requests whose handler panics, and the export queue.

A call whose handler panicked may still return (a recover() inside the handler) or not (net/http
recovers it above ServeHTTP and closes the connection); gospan knows which only when the call's
end comes or a grace period (5 s) passes. Issue 15: the span waited that long before it was
queued, so a burst that filled the export queue meanwhile took its place and it was dropped. Now
it holds its place from the panic on.

- test_panicked_span_survives_a_burst_that_fills_the_queue: the example service's /panic, then a
  burst of requests four times the queue (OTEL_BSP_MAX_QUEUE_SIZE=32) while the receiver answers
  503, until the grace has passed; then the receiver takes everything. The panicked span must be
  among what is delivered, and the summary must count every span the burst lost as queue_full.
- test_panic_recovered_in_the_handler_is_an_ordinary_span: a service built here with a handler
  that recovers its own panic and answers 500, and one that does not: the first is an ordinary
  500 span (not a panic), the second a panic span, each exactly once.
"""

import http.client
import re
import signal
import subprocess
import time

import pytest

from conftest import Service, _clean_env, _go_env, counter, drop_reasons, wait_until
from test_backends import FaultReceiver

STATUS_ERROR = 2  # opentelemetry/proto/trace/v1/trace.proto: Status.StatusCode
QUEUE = 32
BURST = 4 * QUEUE
GRACE_S = 5.0  # exporter/main.c: PANIC_GRACE_NS
TICK_S = 0.5  # exporter/main.c: TICK_NS, how often held calls are looked at
SPAN_WAIT = 20.0


class GatedReceiver(FaultReceiver):
    """test_backends.py's FaultReceiver behind a gate: while it is shut every POST is answered 503
    with Retry-After: 1 (a transient failure: gospan keeps the batch and tries again a second
    later); once open, the official answer, and the spans count as delivered."""

    def __init__(self):
        self.open = False
        FaultReceiver.__init__(self, reply=self._gate)

    def _gate(self, n):
        return self.ok() if self.open else (503, {"Retry-After": "1"}, b"")

    def set_open(self):
        with self._cond:
            self.open = True

    @property
    def refused(self):
        with self._cond:
            return sum(1 for a in self.attempts if a.reply[0] == 503)

    @property
    def errors(self):
        with self._cond:
            return [a.error for a in self.attempts if a.error]

    @property
    def spans(self):
        return self.delivered()

    def snapshot(self):
        return self.delivered()

    def wait(self, pred, timeout):
        """Waits until PRED(self) holds; whether it did within TIMEOUT seconds."""
        return wait_until(lambda: pred(self), timeout)


@pytest.fixture
def gated_receiver():
    pytest.importorskip("opentelemetry.proto.collector.trace.v1.trace_service_pb2",
                        reason="the opentelemetry-proto package is needed (make deps)")
    rx = GatedReceiver()
    yield rx
    rx.close()


def get(port, path, conn=None):
    """GET PATH on CONN (keep-alive) or a connection of its own; the status, or None when the
    connection broke (a handler that panicked: net/http closes it unanswered)."""
    c = conn or http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        c.request("GET", path)
        resp = c.getresponse()
        resp.read()
        return resp.status
    except (OSError, http.client.HTTPException):
        c.close()
        return None
    finally:
        if conn is None:
            c.close()


def summary_of(g):
    line = g.summary_line()
    assert line, g.stderr
    return line


def test_panicked_span_survives_a_burst_that_fills_the_queue(gated_receiver, start_service,
                                                             start_gospan):
    rx = gated_receiver
    svc = start_service()
    g = start_gospan(svc.pid, env={
        "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": rx.url,
        "OTEL_BSP_MAX_QUEUE_SIZE": str(QUEUE),
        "OTEL_BSP_MAX_EXPORT_BATCH_SIZE": "8",
        "OTEL_BSP_SCHEDULE_DELAY": "100",
    })
    g.wait_attached()

    t_panic = time.monotonic()
    assert get(svc.port, "/panic") is None, "the panicking handler answered"
    # The burst fills the queue while the receiver refuses everything; the panicked call is
    # still undecided (it may return) for the whole of it.
    conn = http.client.HTTPConnection("127.0.0.1", svc.port, timeout=10)
    for i in range(BURST):
        assert get(svc.port, f"/users/burst-{i}", conn) == 200
    conn.close()
    assert rx.wait(lambda r: r.refused > 0, SPAN_WAIT), f"no export was tried\n{g.stderr}"
    # Past the grace, and one tick more: the panicked call has been finished by now.
    time.sleep(max(0.0, t_panic + GRACE_S + 3 * TICK_S - time.monotonic()))
    assert time.monotonic() - t_panic < GRACE_S + 10 * TICK_S, "the burst outlasted the grace"

    rx.set_open()

    def has_panic(r):
        return any(s.attrs.get("url.path") == "/panic" for s in r.spans)

    delivered = rx.wait(lambda r: has_panic(r) and len(r.spans) >= QUEUE, SPAN_WAIT)
    assert g.stop(signal.SIGTERM) == 0, g.stderr
    line = summary_of(g)
    spans = rx.snapshot()
    assert not rx.errors, rx.errors
    assert delivered, (f"the panicked request's span never arrived ({len(spans)} spans "
                       f"delivered)\n{line}")
    panic_spans = [s for s in spans if s.attrs.get("url.path") == "/panic"]
    assert len(panic_spans) == 1, panic_spans
    s = panic_spans[0]
    assert s.status_code == STATUS_ERROR and s.attrs.get("error.type") == "panic", s
    assert s.name == "GET /panic", s.name

    # Everything the burst lost is counted, and only as a full queue.
    captured = counter(line, "spans captured")
    reasons = drop_reasons(line)
    assert captured == BURST + 1, line
    assert counter(line, "panics") == 1, line
    assert set(reasons) == {"queue_full"}, line
    assert counter(line, "exported") == len(spans), line
    assert counter(line, "exported") + reasons["queue_full"] == captured, line


# ---- a panic recovered inside the handler -------------------------------------------------------

RECOVERING_SERVER = r'''
package main

import (
	"flag"
	"fmt"
	"net"
	"net/http"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:0", "listen address")
	flag.Parse()
	mux := http.NewServeMux()
	mux.HandleFunc("GET /recovered", func(w http.ResponseWriter, r *http.Request) {
		defer func() {
			if v := recover(); v != nil {
				http.Error(w, fmt.Sprint("recovered: ", v), http.StatusInternalServerError)
			}
		}()
		panic("recovered inside the handler")
	})
	mux.HandleFunc("GET /unrecovered", func(w http.ResponseWriter, r *http.Request) {
		panic("left to net/http")
	})
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		panic(err)
	}
	fmt.Println("listening on", ln.Addr())
	_ = http.Serve(ln, mux)
}
'''


@pytest.fixture(scope="module")
def recovering_bin(tmp_path_factory, go_version):
    src = tmp_path_factory.mktemp("recovering")
    (src / "go.mod").write_text("module recovering\n\ngo 1.22\n")
    (src / "main.go").write_text(RECOVERING_SERVER)
    out = src / "recovering"
    res = subprocess.run(["go", "build", "-o", str(out), "."], cwd=src, capture_output=True,
                         text=True, timeout=300, env=_go_env())
    if res.returncode != 0:
        pytest.fail(f"cannot build the recovering server with {go_version}:\n{res.stderr}")
    return out


def test_panic_recovered_in_the_handler_is_an_ordinary_span(recovering_bin, gated_receiver,
                                                            start_gospan):
    rx = gated_receiver
    rx.set_open()
    svc = Service(recovering_bin, env=_clean_env())
    try:
        g = start_gospan(svc.pid, env={"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": rx.url})
        g.wait_attached()
        assert get(svc.port, "/recovered") == 500
        assert get(svc.port, "/unrecovered") is None
        assert get(svc.port, "/recovered") == 500
        # The recovered ones end as any call does; the other once the grace has passed.
        assert rx.wait(lambda r: len(r.spans) >= 3, GRACE_S + SPAN_WAIT), (
            f"{len(rx.snapshot())} spans delivered\n{g.stderr}")
        time.sleep(1.0)  # room for a duplicate to show up
        assert g.stop(signal.SIGTERM) == 0, g.stderr
    finally:
        svc.stop()
    line = summary_of(g)
    spans = rx.snapshot()
    by_path = {}
    for s in spans:
        by_path.setdefault(s.attrs.get("url.path"), []).append(s)
    assert sorted(len(v) for v in by_path.values()) == [1, 2], by_path
    for s in by_path["/recovered"]:
        assert s.attrs.get("http.response.status_code") == 500, s
        assert s.attrs.get("error.type") == "500", s
    (s,) = by_path["/unrecovered"]
    assert s.attrs.get("error.type") == "panic", s
    assert s.status_code == STATUS_ERROR, s
    assert counter(line, "panics") == 1, line
    assert counter(line, "dropped") == 0, line
    assert re.search(r"http: panic serving", svc.err.text), svc.err.text
