"""Function spans (--functions) and on-CPU time (--cpu-time) on examples/functions, judged as the
official OTLP decoder sees them: which spans exist, their names, kinds and parent links (SERVER ->
function -> nested function, recursion to its exact depth, goroutines started by a handler),
recorded arguments with their values and types, traces started by a background loop, the
messages about inlined and missing functions, on-CPU against wall time (a spinning function is on
a CPU for its whole span, a sleeping one hardly at all), and probe hits per call.
"""

import http.client
import json
import platform
import os
import re
import subprocess
import time
import urllib.request
from collections import Counter

import pytest

from procs import process_schedstat
from conftest import (REPO, SLOWDOWN, Gospan, Service, _clean_env, _go_env, counter,
                      drop_reasons, kernel_probe_hits, wait_until)

SRC = REPO / "examples" / "functions"
SPAN_KIND_INTERNAL = 1
SPAN_KIND_SERVER = 2
MAX_SPAN_DEPTH = 8  # bpf/include/events.h

CONFIG = {
    "functions": [
        {"symbol": "main.process", "args": ["user", "n", "ok", "level"]},
        {"symbol": "main.validate", "args": ["n"]},
        {"symbol": "main.fib", "args": ["n"]},
        {"symbol": "main.spin", "args": ["ms"]},
        {"symbol": "main.sleepFor", "args": ["ms"]},
        {"symbol": "main.handleOrder",
         "args": ["o.ID", "o.Customer.Name", "o.Customer.Tier", "o.Express"]},
        {"symbol": "main.tick", "args": ["i"]},
        {"symbol": "main.double"},
        {"symbol": "main.proces"},
        {"pattern": "main.(\\*Store).Get", "args": ["key", "s.name", "s.cfg.Limit",
                                                    "s.cfg.Ratio"]},
    ]
}

# Without DWARF: arguments by position and declared type. process(user string, n int, ok bool,
# ratio float64, level int8): ratio takes a float register, so level is in the 5th integer one.
CONFIG_STRIPPED = {
    "functions": [
        {"symbol": "main.process",
         "args": [{"name": "user", "position": 1, "type": "string"},
                  {"name": "n", "position": 2, "type": "int"},
                  {"name": "ok", "position": 3, "type": "bool"},
                  {"name": "level", "position": 5, "type": "int8"}],
         "params": ["string", "int", "bool", "float64", "int8"]},
        {"symbol": "main.fib", "args": [{"name": "n", "position": 1, "type": "int"}]},
        {"symbol": "main.double"},
    ]
}


def fib_calls(n):
    return 1 if n < 2 else 1 + fib_calls(n - 1) + fib_calls(n - 2)


def fib_calls_within(n, level, max_level):
    """fib calls made by fib(n) at stack position LEVEL whose position stays below MAX_LEVEL."""
    if level >= max_level:
        return 0
    if n < 2:
        return 1
    return (1 + fib_calls_within(n - 1, level + 1, max_level)
            + fib_calls_within(n - 2, level + 1, max_level))


def build(build_dir, name, flags=()):
    out = build_dir / "e2e" / name
    out.parent.mkdir(parents=True, exist_ok=True)
    res = subprocess.run(["go", "build", *flags, "-o", str(out), "."], cwd=SRC,
                         capture_output=True, text=True, timeout=300, env=_go_env())
    if res.returncode != 0:
        pytest.fail(f"cannot build '{SRC}':\n{res.stderr}")
    return out


@pytest.fixture(scope="module")
def fn_bin(build_dir, go_version):
    return build(build_dir, "functions")


@pytest.fixture(scope="module")
def fn_stripped_bin(build_dir, go_version):
    return build(build_dir, "functions-stripped", ["-ldflags=-s -w"])


def write_config(tmp_path, cfg):
    path = tmp_path / "functions.json"
    path.write_text(json.dumps(cfg))
    # gospan refuses a file others can write (docs/configuration.md): not left to the umask.
    path.chmod(0o644)
    return path


def get(svc, target):
    """GET TARGET on a connection of its own; returns the body."""
    req = urllib.request.Request(svc.base_url + target, headers={"Connection": "close"})
    with urllib.request.urlopen(req, timeout=30) as r:
        return r.read().decode()


class Traced:
    """The example service with gospan attached; spans are read from the receiver."""

    def __init__(self, binary, gospan, receiver, cfg_path, extra_args=(), tick="0"):
        self.svc = Service(binary, env=_clean_env(), args=("-tick", tick))
        self.gospan = gospan(self.svc.pid, receiver,
                             args=("--functions", str(cfg_path), *extra_args))
        self.attached = self.gospan.wait_attached()
        self.rx = receiver

    def stop(self):
        """Stops gospan (it must exit 0 with no sanitizer report), then the service."""
        try:
            self.gospan.stop_cleanly()
        finally:
            self.svc.stop()


def spans_of_trace(spans, trace_id):
    return [s for s in spans if s.trace_id == trace_id]


def wait_trace(rx, pred, count, timeout=20.0):
    """Waits for the trace whose root satisfies PRED to hold COUNT spans; returns its spans."""
    deadline = time.monotonic() + timeout
    while True:
        spans = rx.snapshot()
        roots = [s for s in spans if pred(s)]
        for root in roots:
            tr = spans_of_trace(spans, root.trace_id)
            if len(tr) >= count:
                return root, tr
        if time.monotonic() > deadline:
            got = {r.name: len(spans_of_trace(spans, r.trace_id)) for r in roots}
            raise AssertionError(f"no trace with {count} spans: roots found {got}")
        time.sleep(0.1)


def children(spans, parent):
    return [s for s in spans if s.parent_span_id == parent.span_id]


@pytest.fixture(scope="module")
def traced(fn_bin, start_gospan, otlp_receiver, tmp_path_factory):
    cfg = write_config(tmp_path_factory.mktemp("fn"), CONFIG)
    t = Traced(fn_bin, start_gospan, otlp_receiver, cfg, extra_args=("--cpu-time",),
               tick="100ms")
    yield t
    t.stop()


def test_attach_line_counts_functions(traced):
    # process, validate, fib, spin, sleepFor, handleOrder, tick, (*Store).Get: 8 functions.
    assert "+ 8 functions (single-stepped hits: " in traced.attached, traced.attached
    # arm64's entry probes are its functions' first instructions, single-stepped (arm64.md).
    switch = 2 if platform.machine() == "aarch64" else 0
    assert f"+ on-CPU time (single-stepped hits: {switch} a goroutine switch)" in traced.attached, \
        traced.attached


def test_inlined_and_missing_functions_are_named(traced):
    err = traced.gospan.stderr
    assert re.search(r"function 'main\.double' cannot be traced in '[^']+': the compiler "
                     r"inlined it", err), err
    m = re.search(r"function 'main\.proces' not found in '[^']+'; closest: (.*)", err)
    assert m, err
    assert m.group(1).startswith("'main.process'"), m.group(1)


def test_nested_and_recursive_spans_under_server(traced):
    get(traced.svc, "/process?user=alice&n=4&ok=true")
    # SERVER, process, validate, 9 fib calls, (*Store).Get
    server, tr = wait_trace(traced.rx, lambda s: s.name == "GET /process", 1 + 1 + 1 + 9 + 1)
    assert server.kind == SPAN_KIND_SERVER
    (proc,) = children(tr, server)
    assert proc.name == "main.process" and proc.kind == SPAN_KIND_INTERNAL
    assert proc.attrs["code.function.name"] == "main.process"
    assert proc.attrs["gospan.arg.user"] == "alice"
    assert proc.attrs["gospan.arg.n"] == 4 and isinstance(proc.attrs["gospan.arg.n"], int)
    assert proc.attrs["gospan.arg.ok"] is True
    assert proc.attrs["gospan.arg.level"] == -3  # int8, sign-extended
    kids = Counter(s.name for s in children(tr, proc))
    assert kids == {"main.validate": 1, "main.fib": 1, "main.(*Store).Get": 1}, kids
    for s in tr:
        assert server.start_ns <= s.start_ns <= s.end_ns <= server.end_ns, s.name

    # Recursion: every fib(n >= 2) has exactly the children fib(n-1) and fib(n-2).
    fibs = [s for s in tr if s.name == "main.fib"]
    assert len(fibs) == fib_calls(4)
    (top,) = [s for s in fibs if s.parent_span_id == proc.span_id]
    assert top.attrs["gospan.arg.n"] == 4

    def depth(s):
        d = 0
        while s.parent_span_id != proc.span_id:
            s = next(p for p in tr if p.span_id == s.parent_span_id)
            d += 1
        return d

    for f in fibs:
        n = f.attrs["gospan.arg.n"]
        got = sorted(c.attrs["gospan.arg.n"] for c in children(tr, f))
        assert got == ([] if n < 2 else [n - 2, n - 1]), (n, got)
    # fib(4) -> fib(3) -> fib(2) -> fib(1): the deepest calls are 3 below the top one.
    assert max(depth(f) for f in fibs) == 3

    (get_span,) = [s for s in tr if s.name == "main.(*Store).Get"]
    assert get_span.attrs["gospan.arg.key"] == "alice"
    assert get_span.attrs["gospan.arg.s.name"] == "main-store"
    assert get_span.attrs["gospan.arg.s.cfg.Limit"] == 42
    assert get_span.attrs["gospan.arg.s.cfg.Ratio"] == pytest.approx(0.5)
    (val,) = [s for s in tr if s.name == "main.validate"]
    assert val.attrs["gospan.arg.n"] == 4


def test_pointer_paths(traced):
    get(traced.svc, "/order?id=9&name=bob%20%C3%A9&tier=3")
    server, tr = wait_trace(traced.rx, lambda s: s.name == "GET /order", 2)
    (o,) = children(tr, server)
    assert o.name == "main.handleOrder"
    assert o.attrs["gospan.arg.o.ID"] == 9
    assert o.attrs["gospan.arg.o.Customer.Name"] == "bob \u00e9"
    assert o.attrs["gospan.arg.o.Customer.Tier"] == 3
    assert o.attrs["gospan.arg.o.Express"] is True


def test_goroutines_started_by_a_handler_nest_under_it(traced):
    get(traced.svc, "/fanout?g=6")
    expect = 1 + sum(1 + 1 + fib_calls(4 + i % 3) for i in range(6))
    server, tr = wait_trace(traced.rx, lambda s: s.name == "GET /fanout", expect)
    procs = children(tr, server)
    assert len(procs) == 6 and {p.name for p in procs} == {"main.process"}
    by_user = {p.attrs["gospan.arg.user"]: p for p in procs}
    assert set(by_user) == {f"g{i}" for i in range(6)}
    for i in range(6):
        p = by_user[f"g{i}"]
        assert p.attrs["gospan.arg.level"] == i
        assert p.attrs["gospan.arg.n"] == 4 + i % 3
        # Each goroutine's calls stay in its own subtree.
        sub, frontier = [], [p]
        while frontier:
            nxt = [c for f in frontier for c in children(tr, f)]
            sub += nxt
            frontier = nxt
        assert Counter(s.name for s in sub) == {"main.validate": 1,
                                                "main.fib": fib_calls(4 + i % 3)}


def test_background_loop_starts_its_own_traces(traced):
    root, tr = wait_trace(traced.rx, lambda s: s.name == "main.tick", 1 + 1 + fib_calls(3))
    assert root.parent_span_id == b""
    assert root.kind == SPAN_KIND_INTERNAL
    assert isinstance(root.attrs["gospan.arg.i"], int) and root.attrs["gospan.arg.i"] >= 0
    assert Counter(s.name for s in children(tr, root)) == {"main.(*Store).Get": 1,
                                                           "main.fib": 1}


def test_cpu_time_spin_against_sleep(traced):
    run0, wait0 = process_schedstat(traced.svc.pid)
    get(traced.svc, "/spin?ms=300")
    run1, wait1 = process_schedstat(traced.svc.pid)
    used, waited = run1 - run0, wait1 - wait0
    get(traced.svc, "/sleep?ms=300")
    _, spin_tr = wait_trace(traced.rx, lambda s: s.name == "GET /spin", 2)
    _, sleep_tr = wait_trace(traced.rx, lambda s: s.name == "GET /sleep", 2)
    (spin,) = [s for s in spin_tr if s.name == "main.spin"]
    (sleep,) = [s for s in sleep_tr if s.name == "main.sleepFor"]
    for s in (spin, sleep):
        assert s.attrs["gospan.arg.ms"] == 300
        assert s.end_ns - s.start_ns >= 300_000_000
    spin_wall, spin_cpu = spin.end_ns - spin.start_ns, spin.attrs["gospan.cpu_time_ns"]
    sleep_wall, sleep_cpu = sleep.end_ns - sleep.start_ns, sleep.attrs["gospan.cpu_time_ns"]
    # A spinning goroutine is on a CPU all its span but while the kernel runs other work on a
    # busy machine, and while Go's scheduler takes it off and puts it back each time sysmon
    # preempts it (every 10 ms; under emulation, arm64 in TCG, its probes' traps there took a
    # fifth of the span): at most what the service's threads used meanwhile (its ticker loop
    # uses some too), at least most of its span less the time they all waited for a CPU. A
    # sleeping one runs microseconds.
    assert 0.6 * (spin_wall - waited) <= spin_cpu <= min(1.05 * used, spin_wall), (
        f"spin: {spin_cpu} ns on a CPU in a span of {spin_wall} ns; meanwhile the service's "
        f"threads ran {used} ns and waited {waited} ns for a CPU")
    assert sleep_cpu < 0.05 * sleep_wall, (sleep_cpu, sleep_wall)
    # Server spans carry it too, and contain their function's.
    for tr, f in ((spin_tr, spin), (sleep_tr, sleep)):
        (srv,) = [s for s in tr if s.kind == SPAN_KIND_SERVER]
        assert f.attrs["gospan.cpu_time_ns"] <= srv.attrs["gospan.cpu_time_ns"]
        assert srv.attrs["gospan.cpu_time_ns"] <= srv.end_ns - srv.start_ns


def fib_tail_calls(n):
    """fib calls made last by their caller (fib(n-2) after fib(n-1)): they end with it."""
    return (fib_calls(n) - 1) // 2


def test_probe_hits_per_call_and_stack_bound(fn_bin, start_gospan, otlp_receiver, tmp_path,
                                             bpf_stats):
    """2 probe hits per call (entry + one end), 1 for a call its caller makes last and that
    ends with its caller's (fib's second call of itself); calls deeper than the bound are
    counted, not traced; nothing is left open."""
    cfg = write_config(tmp_path, {"functions": [
        {"symbol": "main.handleOrder", "args": ["o.ID"]},
        {"symbol": "main.process"}, {"symbol": "main.fib"}]})
    t = Traced(fn_bin, start_gospan, otlp_receiver, cfg)
    try:
        for i in range(50):
            get(t.svc, f"/order?id={1000 + i}&name=x")
        get(t.svc, "/process?user=deep&n=12")
        traced_fibs = fib_calls_within(12, 1, MAX_SPAN_DEPTH)
        server, _ = wait_trace(otlp_receiver, lambda s: s.name == "GET /process"
                               and s.resource.get("process.pid") == t.svc.pid,
                               2 + traced_fibs, timeout=30)
    finally:
        t.stop()
    total, per = kernel_probe_hits(t.gospan.stderr)
    calls = 50 + 1 + fib_calls(12)
    if platform.machine() == "aarch64":
        # arm64's entry probe is the function's first instruction, before the stack check,
        # which runs again after the stack grew (docs/arm64.md): a few calls hit it twice.
        assert calls <= per.get("func_entry", 0) <= calls + 32, per
    else:
        assert per.get("func_entry", 0) == calls, per
    if platform.machine() == "aarch64":
        assert per.get("func_return", 0) == calls, per  # the RETs
    else:
        assert per.get("func_return", 0) == calls - fib_tail_calls(12), per
    if platform.machine() == "aarch64":
        # ServeHTTP's entry too re-runs after a stack growth on arm64.
        assert 51 <= per.get("serve_http_entry", 0) <= 51 + 8, per
    else:
        assert per.get("serve_http_entry") == 51, per
    assert per.get("serve_http_return") == 51, per
    assert "cpu_execute" not in per and "cpu_switch" not in per, per  # not without --cpu-time
    # process is frame 0, fib(12) frame 1: fib calls from frame 8 on are not traced.
    summary = t.gospan.summary_line()
    drops = drop_reasons(summary)
    if platform.machine() == "aarch64":
        # A call too deep for a span whose prologue re-ran (arm64, above) is counted once a
        # hit: functions.bpf.c keeps no frame for it to see that the second is the same call.
        assert fib_calls(12) - traced_fibs <= drops.get("call_stack_full", 0) <= \
            fib_calls(12) - traced_fibs + per["func_entry"] - calls, summary
    else:
        assert drops.get("call_stack_full") == fib_calls(12) - traced_fibs, summary
    assert set(drops) == {"call_stack_full"}, summary
    assert counter(summary, "in flight") == 0, summary
    deep = spans_of_trace(otlp_receiver.snapshot(), server.trace_id)
    assert Counter(s.name for s in deep)["main.fib"] == traced_fibs


def test_cpu_time_costs_per_goroutine_switch(fn_bin, start_gospan, otlp_receiver, tmp_path,
                                         bpf_stats):
    cfg = write_config(tmp_path, {"functions": [{"symbol": "main.sleepFor"}]})
    t = Traced(fn_bin, start_gospan, otlp_receiver, cfg, extra_args=("--cpu-time",))
    try:
        for _ in range(20):
            get(t.svc, "/sleep?ms=1")
        wait_trace(otlp_receiver, lambda s: s.name == "GET /sleep"
                   and s.attrs.get("gospan.cpu_time_ns") is not None, 2)
    finally:
        t.stop()
    _, per = kernel_probe_hits(t.gospan.stderr)
    if platform.machine() == "aarch64":
        # The entry probe re-runs after a stack growth on arm64 (above).
        assert 20 <= per["func_entry"] <= 20 + 4, per
    else:
        assert per["func_entry"] == 20, per
    assert per["func_return"] == 20, per
    # Each sleep parks the goroutine and runs it again at least once: a runtime.schedule and a
    # runtime.execute, seen for every goroutine the scheduler switches to and from, and nothing
    # else (no hit for a system call, or for a change of state that leaves it running).
    assert per["cpu_execute"] >= 20 and per["cpu_schedule"] >= 20, per
    assert abs(per["cpu_execute"] - per["cpu_schedule"]) <= 8, per


def test_stripped_binary_by_position(fn_stripped_bin, start_gospan, otlp_receiver, tmp_path):
    cfg = write_config(tmp_path, CONFIG_STRIPPED)
    t = Traced(fn_stripped_bin, start_gospan, otlp_receiver, cfg)
    try:
        assert "+ 2 functions" in t.attached, t.attached
        assert re.search(r"function 'main\.double' cannot be traced in '[^']+': the compiler "
                         r"inlined it", t.gospan.stderr), t.gospan.stderr
        get(t.svc, "/process?user=zoe&n=3&ok=true")
        server, tr = wait_trace(otlp_receiver, lambda s: s.name == "GET /process"
                                and s.resource.get("process.executable.name")
                                == "functions-stripped", 2 + fib_calls(3))
    finally:
        t.stop()
    (proc,) = children(tr, server)
    assert proc.attrs["gospan.arg.user"] == "zoe"
    assert proc.attrs["gospan.arg.n"] == 3
    assert proc.attrs["gospan.arg.ok"] is True
    assert proc.attrs["gospan.arg.level"] == -3
    assert "gospan.cpu_time_ns" not in proc.attrs


def test_bad_functions_file_stops_gospan(fn_bin, gospan_bin, tmp_path):
    cfg = tmp_path / "bad.json"
    cfg.write_text('{"functions": [{"symbol": "main.fib", "argz": ["n"]}]}')
    cfg.chmod(0o644)
    res = subprocess.run([str(gospan_bin), "--pid", str(os.getpid()), "--functions", str(cfg)],
                         capture_output=True, text=True, timeout=60, env=_clean_env())
    assert res.returncode != 0
    assert f"invalid functions file '{cfg}': entry 1: unknown key 'argz'" in res.stderr, \
        res.stderr


def test_functions_file_others_can_write_stops_gospan(fn_bin, gospan_bin, tmp_path):
    """A file any user could rewrite would let them choose what gospan copies out of a service."""
    cfg = write_config(tmp_path, CONFIG)
    cfg.chmod(0o666)
    link = tmp_path / "link.json"
    link.symlink_to(cfg)
    for path in (cfg, link):
        res = subprocess.run([str(gospan_bin), "--pid", str(os.getpid()), "--functions",
                              str(path)], capture_output=True, text=True, timeout=60,
                             env=_clean_env())
        assert res.returncode != 0, res.stderr
        assert f"cannot read functions file '{path}': " in res.stderr, res.stderr
        assert "writable by its group and any user (mode 0666" in res.stderr, res.stderr
        assert "gospan: attached" not in res.stderr, res.stderr


def test_server_span_inside_a_function_span(fn_bin, start_gospan, otlp_receiver, tmp_path):
    """A request served while a function span is open on its goroutine nests under it, and the
    function span is the goroutine's current span again once the request is done."""
    cfg = write_config(tmp_path, {"functions": [
        {"symbol": "net/http.(*conn).serve"}, {"symbol": "main.handleOrder", "args": ["o.ID"]}]})
    t = Traced(fn_bin, start_gospan, otlp_receiver, cfg)
    try:
        get(t.svc, "/order?id=77&name=n")
        conn, tr = wait_trace(otlp_receiver, lambda s: s.name == "http.(*conn).serve"
                              and s.resource.get("process.pid") == t.svc.pid, 3)
    finally:
        t.stop()
    assert conn.parent_span_id == b"" and conn.kind == SPAN_KIND_INTERNAL
    assert conn.attrs["code.function.name"] == "net/http.(*conn).serve"
    (server,) = children(tr, conn)
    assert server.kind == SPAN_KIND_SERVER and server.name == "GET /order"
    (order,) = children(tr, server)
    assert order.attrs["gospan.arg.o.ID"] == 77
    assert conn.start_ns <= server.start_ns <= server.end_ns <= conn.end_ns


def step_spans(spans):
    return [s for s in spans if s.attrs.get("code.function.name") == "main.step"]


def test_binary_without_net_http(build_dir, gospan_bin, otlp_receiver, tmp_path, go_version):
    """A program that serves no HTTP: refused without --functions, traced with it."""
    out = build_dir / "e2e" / "fn-nohttp"
    res = subprocess.run(["go", "build", "-o", str(out), "."], cwd=SRC / "nohttp",
                         capture_output=True, text=True, timeout=300, env=_go_env())
    assert res.returncode == 0, res.stderr
    proc = subprocess.Popen([str(out)], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                            stdin=subprocess.DEVNULL, env=_clean_env())
    try:
        assert proc.stdout.readline().strip() == b"ready"
        env = {**_clean_env(), "OTEL_BSP_SCHEDULE_DELAY": "200",
               "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": otlp_receiver.url}
        plain = subprocess.run([str(gospan_bin), "--pid", str(proc.pid)], env=env,
                               capture_output=True, text=True, timeout=60)
        assert plain.returncode == 1, plain.stderr
        assert "serves neither HTTP with net/http nor gRPC: nothing to trace" in plain.stderr
        cfg = write_config(tmp_path, {"functions": [{"symbol": "main.step",
                                                     "args": ["i", "label"]},
                                                    {"symbol": "main.inner"}]})
        g = Gospan([str(gospan_bin), "--pid", str(proc.pid), "--functions", str(cfg)], env)
        # Attaching takes seconds of BPF verification on a loaded machine: the calls are
        # counted from the attach on (a step every 20 ms).
        g.wait_attached()
        wait_until(lambda: len(step_spans(otlp_receiver.snapshot())) >= 20, 30)
        g.stop_cleanly()
        err = g.stderr
        assert "only its functions are traced" in err, err
    finally:
        proc.terminate()
        proc.wait(10)
    spans = otlp_receiver.snapshot()
    steps = step_spans(spans)
    inners = [s for s in spans if s.attrs.get("code.function.name") == "main.inner"]
    assert len(steps) >= 20, err
    by_id = {s.span_id: s for s in steps}
    assert all(s.kind == SPAN_KIND_INTERNAL and not s.parent_span_id for s in steps)
    assert all(s.attrs.get("gospan.arg.label") == "job" for s in steps), steps[0].attrs
    assert len({s.attrs.get("gospan.arg.i") for s in steps}) == len(steps)
    # Every inner call's step was exported, but the one a step still in flight when gospan
    # stopped made (its inner call had ended; the step, in flight, makes no span).
    orphans = [s for s in inners if s.parent_span_id and s.parent_span_id not in by_id]
    assert inners and len(orphans) <= 1, orphans
    assert all(o.start_ns > max(s.start_ns for s in steps) for o in orphans), orphans


TAIL_CONFIG = {"functions": [
    {"symbol": "main.render", "args": ["n"]}, {"symbol": "main.countdown", "args": ["n"]},
    {"symbol": "main.fib", "args": ["n"]}, {"symbol": "main.writeLast", "args": ["n"]}]}


def check_fib_tree(tr, top, n):
    """TOP is fib(N); its subtree is fib's exact call tree, each call inside its parent."""
    assert top.attrs["gospan.arg.n"] == n
    got = sorted(c.attrs["gospan.arg.n"] for c in children(tr, top))
    assert got == ([] if n < 2 else [n - 2, n - 1]), (n, got)
    for c in children(tr, top):
        assert top.start_ns <= c.start_ns <= c.end_ns <= top.end_ns, (n, c.attrs)
        check_fib_tree(tr, c, c.attrs["gospan.arg.n"])


def test_calls_made_last(fn_bin, start_gospan, otlp_receiver, tmp_path, bpf_stats):
    """Calls their caller makes last (only its epilogue follows): render under respond, which
    returns at once, ends in respond's callers; countdown's calls of itself, fib's second call
    of itself, and render under countdown end with their traced caller's call. No end of theirs
    is single-stepped, each span ends after its own work and before its caller's next, nesting
    and recursion stay exact, and a panic through them ends no span and leaves none open. A
    handler's own last call (writeLast) keeps its single-stepped end, and gospan says why."""
    cfg = write_config(tmp_path, TAIL_CONFIG)
    t = Traced(fn_bin, start_gospan, otlp_receiver, cfg, extra_args=("--verbose",))
    pid = t.svc.pid
    try:
        get(t.svc, "/tail?n=4&ms=30&pause=80")
        get(t.svc, "/countdown?n=3&ms=20&pause=80")
        get(t.svc, "/tailpanic?n=4&ms=30")
        get(t.svc, "/last?n=3")
        mine = lambda name: lambda s: s.name == name and s.resource.get("process.pid") == pid
        _, tail = wait_trace(otlp_receiver, mine("GET /tail"), 2 + fib_calls(4))
        _, down = wait_trace(otlp_receiver, mine("GET /countdown"), 6 + fib_calls(3))
        _, panicked = wait_trace(otlp_receiver, mine("GET /tailpanic"), 2 + fib_calls(4))
        _, last = wait_trace(otlp_receiver, mine("GET /last"), 2 + fib_calls(3))
    finally:
        t.stop()
    err = t.gospan.stderr
    arm = platform.machine() == "aarch64"  # its ends are the RETs, which arm64 simulates
    for name in ("render", "countdown") if not arm else ():
        assert re.search(rf"main\.{name}: entry emulated at file offset 0x[0-9a-f]+; \d+ ends? "
                         rf"\((\d+) emulated, 0 single-stepped\)", err), err
    if not arm:
        assert re.search(r"function 'main\.writeLast' in '[^']+': its end after its call in "
                         r"'main\.routes\.func\d+' is single-stepped: its caller returns at "
                         r"once after it and is called indirectly", err), err
        assert re.search(r"main\.writeLast: entry emulated at file offset 0x[0-9a-f]+; 1 end "
                         r"\(0 emulated, 1 single-stepped\)", err), err
        # fib's calls from tick (not traced here, called by the background loop) keep one too.
        assert "+ 4 functions (single-stepped hits: 1 a call of main.fib, and of 1 more)" \
            in t.attached, t.attached

    # /tail: render slept 30 ms and called fib(4); the handler paused 80 ms after it.
    (server,) = [s for s in tail if s.kind == SPAN_KIND_SERVER]
    (render,) = children(tail, server)
    assert render.name == "main.render" and render.attrs["gospan.arg.n"] == 4
    assert render.end_ns - render.start_ns >= 30_000_000
    assert render.end_ns <= server.end_ns - 70_000_000, (render.end_ns, server.end_ns)
    (top,) = children(tail, render)
    check_fib_tree(tail, top, 4)
    assert top.end_ns <= render.end_ns

    # /countdown: countdown(3) -> (2) -> (1) -> (0) -> render(3) -> fib(3): all return at
    # once from render on, so all end together, before the handler's 80 ms pause.
    (server,) = [s for s in down if s.kind == SPAN_KIND_SERVER]
    chain, node = [], server
    for n in (3, 2, 1, 0):
        (node,) = children(down, node)
        assert node.name == "main.countdown" and node.attrs["gospan.arg.n"] == n
        chain.append(node)
    (render,) = children(down, chain[-1])
    assert render.name == "main.render" and render.attrs["gospan.arg.n"] == 3
    assert render.end_ns - render.start_ns >= 20_000_000
    (top,) = children(down, render)
    check_fib_tree(down, top, 3)
    ends = [s.end_ns for s in chain] + [render.end_ns]
    for outer, inner in zip(chain, chain[1:] + [render]):
        assert outer.start_ns <= inner.start_ns <= inner.end_ns <= outer.end_ns
    assert max(ends) - min(ends) < 5_000_000, ends
    assert chain[0].end_ns <= server.end_ns - 70_000_000

    # /tailpanic: the render that panicked made no span; the next one, at the same depth on
    # the same goroutine 20 ms later, is whole: its own start, its own children.
    (server,) = [s for s in panicked if s.kind == SPAN_KIND_SERVER]
    (render,) = children(panicked, server)
    assert render.attrs["gospan.arg.n"] == 4
    assert render.start_ns >= server.start_ns + 20_000_000
    assert 30_000_000 <= render.end_ns - render.start_ns
    assert render.end_ns <= server.end_ns
    check_fib_tree(panicked, children(panicked, render)[0], 4)

    # /last: the single-stepped end is right too.
    (server,) = [s for s in last if s.kind == SPAN_KIND_SERVER]
    (wl,) = children(last, server)
    assert wl.name == "main.writeLast" and wl.attrs["gospan.arg.n"] == 3
    check_fib_tree(last, children(last, wl)[0], 3)

    summary = t.gospan.summary_line()
    assert drop_reasons(summary).get("no_return") == 1, summary  # the render that panicked
    assert counter(summary, "in flight") == 0, summary
    _, per = kernel_probe_hits(err)
    entries = (1 + fib_calls(4)) + (4 + 1 + fib_calls(3)) + (2 + fib_calls(4)) \
        + (1 + fib_calls(3))
    assert per.get("func_recover") == 1, per
    if arm:
        # The entry is the first instruction, which runs again when the stack grows; every
        # call but the one that panicked leaves through a RET.
        assert entries <= per.get("func_entry") <= entries + 8, per
        assert per.get("func_return") == entries - 1, per
        return
    assert per.get("func_entry") == entries, per
    # One end each, except: countdown's 3 calls of itself and render under countdown end
    # with countdown's; fib's calls made last end with their caller's; the render that
    # panicked never ended.
    tails = 3 + 1 + 2 * fib_tail_calls(4) + 2 * fib_tail_calls(3)
    assert per.get("func_return") == entries - tails - 1, per


def test_call_left_open_by_a_caller_begun_before_attach(fn_bin, start_gospan, otlp_receiver,
                                                        tmp_path):
    """render ends with holdThen's call, but holdThen's first call began before gospan attached:
    that call has no frame, so render's end is never seen. The goroutine's next traced call, at
    the same depth, drops render's frame: its spans are whole, parented right, none left open."""
    if platform.machine() == "aarch64":
        pytest.skip("arm64's ends are the RETs: no call ends with its caller's")
    cfg = write_config(tmp_path, {"functions": [{"symbol": "main.holdThen", "args": ["ms"]},
                                                {"symbol": "main.render", "args": ["n"]}]})
    svc = Service(fn_bin, env=_clean_env(), args=("-tick", "0"))
    conn = http.client.HTTPConnection(svc.host, svc.port, timeout=60)
    g = None
    try:
        hold_ms = int(8000 * SLOWDOWN)
        sent = time.monotonic()
        conn.request("GET", f"/hold?ms={hold_ms}")  # keep-alive: one goroutine serves both
        g = start_gospan(svc.pid, otlp_receiver, args=("--functions", str(cfg)))
        g.wait_attached()
        attached = time.monotonic()
        first = conn.getresponse()
        assert first.read().strip() == b"1"
        # Attached while holdThen slept: render's call came after, holdThen's before.
        assert attached - sent < hold_ms / 1000, "gospan attached too late for this test"
        conn.request("GET", "/hold?ms=5")
        second = conn.getresponse()
        assert second.read().strip() == b"1"
        server, tr = wait_trace(otlp_receiver, lambda s: s.name == "GET /hold"
                                and s.resource.get("process.pid") == svc.pid, 3)
    finally:
        conn.close()
        if g is not None:
            g.stop_cleanly()
        svc.stop()
    (hold,) = children(tr, server)
    assert hold.name == "main.holdThen" and hold.attrs["gospan.arg.ms"] == 5
    (render,) = children(tr, hold)
    assert render.attrs["gospan.arg.n"] == 2
    assert hold.start_ns <= render.start_ns <= render.end_ns <= hold.end_ns <= server.end_ns
    spans = otlp_receiver.snapshot()
    renders = [s for s in spans if s.name == "main.render"
               and s.resource.get("process.pid") == svc.pid]
    assert len(renders) == 1, [(s.trace_id.hex(), s.attrs) for s in renders]
    summary = g.summary_line()
    assert drop_reasons(summary).get("no_return") == 1, summary  # the first render
    assert counter(summary, "in flight") == 0, summary
