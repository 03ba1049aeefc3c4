"""Handlers that are hard on a tracer: ones that grow their goroutine's stack to tens of megabytes
while their span is open, and ones that block for seconds while other requests come and go.

`GET /deep/{n}` recurses n levels, each frame keeping an array alive, so the goroutine's stack
grows through runtime.morestack again and again, each time copied whole to a new place; the
answer is 0+1+...+n, which proves the recursion ran. `GET /sleep/{ms}` sleeps; `GET /block/{ms}`
parks on a channel that a timer's goroutine closes. Every request has a path of its own, so a
span pairs with its request by url.path alone, and a second span for one request cannot hide.

morestack re-runs the prologue of the function whose stack check failed, and with it any uprobe
at the function's entry: should that be serverHandler.ServeHTTP's, gospan's entry probe fires
twice for one request. A deep handler does not cause that itself (its own frames fail the
check, ServeHTTP's ran long before, and the connection's goroutine always has room at it); a
preemption request pending at ServeHTTP's stack check does, which no handler can arrange, so
these requests make it possible but not certain (with kernel.bpf_stats_enabled=1, gospan's summary counts serve_http_entry runs:
more runs than requests means it happened). What they do make certain is that every span lives
through its goroutine's stack being copied over and over, at depths from one frame to 200000.

Everything is driven once, in the module fixture `run`; each test checks one property of it.
"""

import http.client
import signal
import statistics
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import pytest

from conftest import SPAN_KIND_SERVER, STATUS_UNSET
from conftest import perform as conftest_perform
from procs import process_schedstat

SLACK_NS = 1_000_000  # span times may stray 1 ms outside the client's window (clock conversion)
HTTP_TIMEOUT = 15.0
SPAN_TIMEOUT = 20.0
SETTLE = 1.0  # after the expected spans arrived, how long a duplicate gets to show up
REPORT_AT_MOST = 25
WORKERS = 8
MAX_CONCURRENT_DEPTH = 100_000  # 8 such stacks at once: about 256 MB
BLOCKS = (("sleep", 2000), ("block", 2500), ("sleep", 3000), ("block", 2000))
FAST_WHILE_BLOCKED = 120  # fast requests sent while the blocking ones wait
FAST_MAX_NS = 500_000_000  # a fast request's span must not absorb a blocked one's time


@dataclass
class Req:
    n: int
    path: str
    route: str
    body: str  # the answer expected, exactly
    new_conn: bool = False
    min_ms: int = 0  # the handler blocks at least this long
    phase: str = ""
    # filled in by the client
    local_port: int = 0
    t0: int = 0
    t1: int = 0
    status: int | None = None
    got_body: str = ""
    error: str | None = None

    def describe(self):
        return f"#{self.n} GET {self.path} ({self.phase})"


class Requests:
    """Hands out requests with paths of their own: depths and durations are made unique by
    adding the request's number, which changes nothing that matters."""

    def __init__(self):
        self.all = []
        self._lock = threading.Lock()

    def _add(self, make, phase, **kw):
        with self._lock:
            r = make(len(self.all))
            r.phase = phase
            for k, v in kw.items():
                setattr(r, k, v)
            self.all.append(r)
            return r

    def deep(self, depth, phase, **kw):
        def make(n):
            d = depth + n
            return Req(n, f"/deep/{d}", "/deep/{n}", f"depth {d} sum {d * (d + 1) // 2}\n")

        return self._add(make, phase, **kw)

    def blocking(self, how, ms, phase, **kw):
        def make(n):
            d = ms + n
            word = "slept" if how == "sleep" else "blocked"
            return Req(n, f"/{how}/{d}", f"/{how}/{{ms}}", f"{word} {d} ms\n", min_ms=d)

        return self._add(make, phase, **kw)

    def fast(self, phase, **kw):
        def make(n):
            return Req(n, f"/items/fast-{n}", "/items/{path...}", f"item fast-{n}\n")

        return self._add(make, phase, **kw)


def perform(req, port, conn=None):
    """Sends REQ on CONN (keep-alive) or on a connection of its own, recording what happened."""
    conftest_perform(req, port, conn, "GET", req.path, timeout=HTTP_TIMEOUT)
    req.status = getattr(req, "got_status", None)
    body = getattr(req, "got_body", None)
    req.got_body = body.decode("utf-8", "replace") if isinstance(body, bytes) else body


def sequence(reqs, port):
    """REQS one after the other on one keep-alive connection (new_conn ones on their own)."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=HTTP_TIMEOUT)
    try:
        for r in reqs:
            perform(r, port, conn)
    finally:
        conn.close()


DEPTHS = (1, 10, 100, 1000, 10_000, 50_000, 100_000, 200_000)


def drive(port):
    q = Requests()

    # One keep-alive connection, depth rising then falling: the stack grows by copying and
    # stays grown for the requests after.
    sequence([q.deep(d, "keep-alive") for d in DEPTHS + DEPTHS[::-1]], port)

    # Each depth on a fresh connection, a goroutine of its own that starts with a small stack.
    for d in DEPTHS:
        perform(q.deep(d, "fresh"), port)

    # Blocking requests on connections of their own, each between two fast ones on the same
    # connection; meanwhile deep and fast requests from eight workers, every third on a fresh
    # connection.
    started = threading.Barrier(len(BLOCKS) + 1)

    def blocker(how, ms):
        rs = [q.fast("around-block"), q.blocking(how, ms, "blocking"), q.fast("around-block")]
        started.wait(HTTP_TIMEOUT)
        sequence(rs, port)

    threads = [threading.Thread(target=blocker, args=b) for b in BLOCKS]
    for t in threads:
        t.start()
    started.wait(HTTP_TIMEOUT)
    local = threading.local()

    def work(i):
        c = getattr(local, "conn", None)
        if c is None:
            c = local.conn = http.client.HTTPConnection("127.0.0.1", port, timeout=HTTP_TIMEOUT)
        if i % 2:
            r = q.fast("while-blocked", new_conn=i % 3 == 0)
        else:
            depth = DEPTHS[(i // 2) % len(DEPTHS)]
            r = q.deep(min(depth, MAX_CONCURRENT_DEPTH), "concurrent", new_conn=i % 3 == 0)
        perform(r, port, c)

    with ThreadPoolExecutor(WORKERS) as ex:
        list(ex.map(work, range(2 * FAST_WHILE_BLOCKED)))
    for t in threads:
        t.join(HTTP_TIMEOUT)
    return q.all


@dataclass(repr=False)
class Run:
    pid: int
    reqs: list
    spans: list
    gospan: object  # conftest.Gospan, stopped
    gospan_stderr: str
    receiver_errors: list

    def __repr__(self):  # what pytest shows in assertion messages
        return f"<run: {len(self.reqs)} requests, {len(self.spans)} spans>"


@pytest.fixture(scope="module")
def run(start_service, start_gospan, otlp_receiver):
    svc = start_service()
    g = start_gospan(svc.pid, otlp_receiver, env={"OTEL_BSP_MAX_QUEUE_SIZE": "8192"})
    g.wait_attached()
    reqs = drive(svc.port)
    otlp_receiver.wait_for_spans(len(reqs), SPAN_TIMEOUT)
    time.sleep(SETTLE)
    g.stop(signal.SIGTERM)  # a duplicate still in gospan's queue is flushed now
    return Run(pid=svc.pid, reqs=reqs, spans=otlp_receiver.snapshot(), gospan=g,
               gospan_stderr=g.stderr, receiver_errors=list(otlp_receiver.errors))


def fail_with(problems, what):
    if problems:
        shown = "\n".join(problems[:REPORT_AT_MOST])
        more = (f"\n... and {len(problems) - REPORT_AT_MOST} more"
                if len(problems) > REPORT_AT_MOST else "")
        pytest.fail(f"{len(problems)} {what}:\n{shown}{more}")


def span_str(s):
    return (f"span {s.name!r} {s.attrs.get('url.path')!r} "
            f"status={s.attrs.get('http.response.status_code')} "
            f"peer={s.attrs.get('network.peer.port')} [{s.start_ns}, {s.end_ns}] "
            f"({(s.end_ns - s.start_ns) / 1e6:.3f} ms) id={s.span_id.hex()}")


def pair(reqs, spans):
    """{request number: [its spans]} by url.path (unique per request), and the spans that pair
    with no request."""
    by_path = {r.path: r for r in reqs}
    got = {r.n: [] for r in reqs}
    strays = []
    for s in spans:
        r = by_path.get(s.attrs.get("url.path"))
        if r is None:
            strays.append(s)
        else:
            got[r.n].append(s)
    return got, strays


@pytest.fixture(scope="module")
def paired(run):
    got, strays = pair(run.reqs, run.spans)
    return {r.n: got[r.n][0] for r in run.reqs if len(got[r.n]) == 1}, got, strays


def pairs_of(run, paired, phase=None):
    one, _, _ = paired
    return [(r, one[r.n]) for r in run.reqs if r.n in one and (phase is None or r.phase == phase)]


# ---- the run --------------------------------------------------------------------------------


def test_every_request_was_answered_correctly(run):
    phases = {r.phase for r in run.reqs}
    assert phases == {"keep-alive", "fresh", "around-block", "blocking", "while-blocked",
                      "concurrent"}, phases
    assert max(int(r.path.rsplit("/", 1)[1]) for r in run.reqs if r.route == "/deep/{n}") >= 200_000
    bad = [f"{r.describe()}: status {r.status} {r.error or ''} body {r.got_body!r}, expected "
           f"{r.body!r}" for r in run.reqs if r.status != 200 or r.got_body != r.body]
    fail_with(bad, "requests were not answered as the service answers them")


def test_gospan_exited_cleanly_and_dropped_nothing(run):
    run.gospan.assert_ended_cleanly()
    summary = [ln for ln in run.gospan_stderr.splitlines() if ln.startswith("gospan: summary")]
    assert summary, f"no 'gospan: summary' line:\n{run.gospan_stderr}"
    assert "dropped 0" in summary[0], summary[0]
    assert run.receiver_errors == [], run.receiver_errors


def test_exactly_one_span_per_request(run, paired):
    _, got, strays = paired
    problems = [f"stray {span_str(s)}: no request has this path" for s in strays]
    for r in run.reqs:
        spans = got[r.n]
        if len(spans) != 1:
            problems.append(f"{r.describe()} [{r.t0}, {r.t1}] port {r.local_port}: "
                            f"{len(spans)} spans" + "".join(f"\n    {span_str(s)}"
                                                             for s in spans))
    fail_with(problems, "requests do not have exactly one span")
    assert len(run.spans) == len(run.reqs)
    assert len({s.span_id for s in run.spans}) == len(run.spans), "span ids repeat"
    assert len({s.trace_id for s in run.spans}) == len(run.spans), "trace ids repeat"


def test_span_attributes_match_their_request(run, paired):
    pairs = pairs_of(run, paired)
    assert len(pairs) == len(run.reqs), "not every request has one span (see the pairing test)"
    problems = []
    for r, s in pairs:
        want = {"http.request.method": "GET", "url.path": r.path, "http.route": r.route,
                "http.response.status_code": 200, "network.peer.port": r.local_port,
                "network.protocol.version": "1.1"}
        wrong = [f"{k}={s.attrs.get(k)!r}, expected {v!r}" for k, v in want.items()
                 if s.attrs.get(k) != v]
        if s.name != f"GET {r.route}":
            wrong.append(f"name {s.name!r}")
        if s.kind != SPAN_KIND_SERVER or s.status_code != STATUS_UNSET or s.parent_span_id:
            wrong.append(f"kind {s.kind} status {s.status_code} parent "
                         f"{s.parent_span_id.hex() or '-'}")
        if s.resource.get("process.pid") != run.pid:
            wrong.append(f"process.pid={s.resource.get('process.pid')}")
        if wrong:
            problems.append(f"{r.describe()}: " + "; ".join(wrong))
    fail_with(problems, "spans differ from their request")


def test_span_times_lie_inside_the_client_window(run, paired):
    problems = []
    for r, s in pairs_of(run, paired):
        if not (r.t0 - SLACK_NS <= s.start_ns <= s.end_ns <= r.t1 + SLACK_NS):
            problems.append(f"{r.describe()}: {span_str(s)} is not within the client's "
                            f"[{r.t0}, {r.t1}]")
    fail_with(problems, "spans lie outside their request's wall-clock window")


# ---- deep stacks ------------------------------------------------------------------------------


@pytest.mark.parametrize("phase", ["keep-alive", "fresh", "concurrent"])
def test_deep_requests_each_have_their_span(run, paired, phase):
    one, _, _ = paired
    deep = [r for r in run.reqs if r.phase == phase]
    assert len(deep) >= len(DEPTHS)
    fail_with([r.describe() for r in deep if r.n not in one],
              f"{phase} deep requests have no single span")


# ---- blocking handlers ------------------------------------------------------------------------


def test_blocked_spans_last_as_long_as_the_block(run, paired):
    blocked = pairs_of(run, paired, "blocking")
    assert len(blocked) == len(BLOCKS), "not every blocking request has one span"
    short = [f"{r.describe()}: {span_str(s)}" for r, s in blocked
             if s.end_ns - s.start_ns < r.min_ms * 1_000_000]
    fail_with(short, "spans are shorter than their handler blocked")
    assert {s.attrs["http.route"] for _, s in blocked} == {"/sleep/{ms}", "/block/{ms}"}


def test_blocking_requests_overlapped_the_fast_ones(run):
    """Otherwise the next test proves nothing."""
    blocked = [r for r in run.reqs if r.phase == "blocking"]
    start, end = max(r.t0 for r in blocked), min(r.t1 for r in blocked)
    during = [r for r in run.reqs if r.phase in ("while-blocked", "concurrent")
              and start <= r.t0 and r.t1 <= end]
    assert len(during) >= FAST_WHILE_BLOCKED, (
        f"only {len(during)} requests ran while all {len(blocked)} blocking ones were waiting")


def test_fast_requests_are_unaffected_by_blocked_ones(run, paired):
    fast = pairs_of(run, paired, "while-blocked") + pairs_of(run, paired, "around-block")
    assert len(fast) == FAST_WHILE_BLOCKED + 2 * len(BLOCKS)
    slow = [f"{r.describe()}: {span_str(s)}" for r, s in fast
            if s.end_ns - s.start_ns > FAST_MAX_NS]
    fail_with(slow, "fast requests have spans as long as a blocked request's")


# ---- on-CPU time (--cpu-time) -----------------------------------------------------------------


@dataclass(repr=False)
class CpuRun:
    reqs: list
    spans: dict  # request number -> its span
    used: dict  # deep request number -> the service's threads' (run, wait) ns over it
    stderr: str



@pytest.fixture(scope="module")
def cpu_run(start_service, start_gospan, otlp_receiver):
    """A service of its own traced with --cpu-time: deep requests on fresh connections, one at a
    time, so each runs alone on a CPU from start to end; then blocking ones."""
    svc = start_service()
    g = start_gospan(svc.pid, otlp_receiver, args=["--cpu-time"])
    g.wait_attached()
    q = Requests()
    used = {}
    for _ in range(5):
        run0, wait0 = process_schedstat(svc.pid)
        r = q.deep(200_000, "cpu")
        perform(r, svc.port)
        run1, wait1 = process_schedstat(svc.pid)
        used[r.n] = (run1 - run0, wait1 - wait0)
    for how in ("sleep", "block"):
        perform(q.blocking(how, 500, "cpu-blocking"), svc.port)
    mine = {r.path for r in q.all}

    def arrived():
        return len([s for s in otlp_receiver.snapshot() if s.attrs.get("url.path") in mine])

    assert wait_until_count(arrived, len(q.all)), g.stderr
    g.stop_cleanly()
    got, _ = pair(q.all, otlp_receiver.snapshot())
    assert all(len(got[r.n]) == 1 for r in q.all), got
    bad = [r.describe() for r in q.all if r.status != 200 or r.got_body != r.body]
    assert not bad, bad
    return CpuRun(q.all, {n: s[0] for n, s in got.items()}, used, g.stderr)


def wait_until_count(count, n, timeout=SPAN_TIMEOUT):
    deadline = time.monotonic() + timeout
    while count() < n:
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def cpu_ns(s):
    v = s.attrs.get("gospan.cpu_time_ns")
    assert isinstance(v, int) and v >= 0, f"gospan.cpu_time_ns={v!r}: {span_str(s)}"
    return v


def test_cpu_time_of_blocked_handlers_is_small(cpu_run):
    blocked = [(r, cpu_run.spans[r.n]) for r in cpu_run.reqs if r.phase == "cpu-blocking"]
    assert len(blocked) == 2
    for r, s in blocked:
        dur = s.end_ns - s.start_ns
        assert dur >= r.min_ms * 1_000_000, span_str(s)
        assert cpu_ns(s) < dur // 10, (
            f"{r.describe()}: on CPU {cpu_ns(s) / 1e6:.3f} ms of {dur / 1e6:.3f} ms, though it "
            f"was parked nearly all the time")


def test_cpu_time_of_deep_handlers_counts_stack_growth(cpu_run):
    """A deep request alone on a fresh connection is on a CPU from start to end but while the
    kernel runs other work: computing, or copying its stack as it grows (runtime.copystack, run
    by the goroutine's own thread). Its on-CPU time must lie between its span less the time the
    service's threads waited for a CPU (the kernel's count: on a busy machine the kernel runs
    other tasks in between, which is not the goroutine's CPU time) and what the service's threads
    used over the request (the garbage collector's workers scan its deep stack on other threads
    meanwhile). Measured with the stack-growth bug: 20 to 70 % of the span; with on-CPU time that
    counted a preempted thread's waits, up to 3.5 times the CPU the service used, on a machine
    busy with other work."""
    deep = [(r, cpu_run.spans[r.n]) for r in cpu_run.reqs if r.phase == "cpu"]
    assert len(deep) == 5

    def within(r, s):
        used, waited = cpu_run.used[r.n]
        return 0.8 * (s.end_ns - s.start_ns - waited) <= cpu_ns(s) <= 1.05 * used

    shown = "; ".join(
        f"{cpu_ns(s) / 1e6:.1f} ms in a span of {(s.end_ns - s.start_ns) / 1e6:.1f} ms, the "
        f"service's threads ran {cpu_run.used[r.n][0] / 1e6:.1f} ms and waited "
        f"{cpu_run.used[r.n][1] / 1e6:.1f} ms" for r, s in deep)
    assert sum(within(r, s) for r, s in deep) >= 4, (
        f"deep requests alone in the service, gospan.cpu_time_ns: {shown}")
