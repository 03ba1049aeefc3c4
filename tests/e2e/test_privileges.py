"""Least privilege: gospan run as an unprivileged user (nobody) with only the capabilities the
README names, through setpriv (util-linux), traces services that belong to root.

The set depends on the kernel: CAP_BPF, CAP_PERFMON and CAP_SYS_PTRACE were enough for uprobes
until the fix for CVE-2025-38466, which reserves uprobe creation through perf_event_open to
CAP_SYS_ADMIN. So the test checks what must hold everywhere: with the four capabilities gospan
works; with the three it works or says exactly which capability is missing; without one it
cannot do without (CAP_BPF and CAP_PERFMON or CAP_SYS_ADMIN; CAP_SYS_PTRACE for root's service)
it loads nothing and names what is missing in its one line.

Outgoing trace context has needs of its own. The socket-layer writer (a sockhash, a sockops
program on the target's cgroup, an sk_msg program) passes the kernel's CAP_NET_ADMIN check,
which CAP_SYS_ADMIN also passes: the four capabilities carry traceparent out, the three alone
load no writer and say so. Connections the target opened before gospan came are found by
listing /proc/PID/fd (mode 0500): for another user's process that takes CAP_DAC_READ_SEARCH,
without which those connections carry nothing (new ones still do)."""

import re
import shutil
import subprocess
import time
import urllib.request

import pytest

from conftest import Gospan, Service, _clean_env

from test_distributed import (BACKEND_SRC, FRONTEND_SRC, SPAN_KIND_CLIENT, TRACEPARENT_RE,
                              build_example, get, unique)

NOBODY = "65534"
BASE_CAPS = ["bpf", "perfmon", "sys_ptrace"]
DOCUMENTED_CAPS = BASE_CAPS + ["sys_admin"]
# What gospan prints when its socket-layer writer cannot be had.
WRITER_OFF = "outgoing trace context is off"
SPAN_TIMEOUT = 15.0


def _setpriv(caps):
    spec = ",".join(["-all"] + [f"+{c}" for c in caps])
    return ["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups",
            f"--inh-caps={spec}", f"--ambient-caps={spec}", f"--bounding-set={spec}"]


@pytest.fixture(scope="module")
def setpriv():
    if not shutil.which("setpriv"):
        raise AssertionError("setpriv (util-linux) is needed for the least-privilege tests")


def _env(receiver):
    e = _clean_env()
    e["OTEL_BSP_SCHEDULE_DELAY"] = "200"
    e["OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"] = receiver.url
    return e


def _start_as_nobody(caps, gospan_bin, pid, receiver):
    """gospan --pid PID as nobody with CAPS, returned once it attached or exited."""
    g = Gospan(_setpriv(caps) + [str(gospan_bin), "--pid", str(pid)], _env(receiver))
    deadline = time.monotonic() + 30
    while "gospan: attached" not in g.stderr and g.proc.poll() is None:
        if time.monotonic() > deadline:
            g.proc.kill()
            g.proc.wait(10)
            raise AssertionError(f"gospan did not attach within 30 s\n{g.stderr}")
        time.sleep(0.05)
    return g


def _traced_by(caps, gospan_bin, svc, receiver, path):
    g = _start_as_nobody(caps, gospan_bin, svc.pid, receiver)
    try:
        if g.proc.poll() is not None:
            g.stop()
            return False, g
        with urllib.request.urlopen(svc.base_url + path, timeout=10) as r:
            assert r.status == 200
        assert g.stop() == 0, g.stderr
    finally:
        if g.proc.poll() is None:
            g.proc.kill()
            g.proc.wait(10)
    return True, g


def _spans(receiver, path):
    return [s for s in receiver.snapshot() if s.attrs.get("url.path") == path]


def test_capabilities_without_root_are_enough(setpriv, gospan_bin, start_service, otlp_receiver):
    svc = start_service()
    ok, g = _traced_by(BASE_CAPS + ["sys_admin"], gospan_bin, svc, otlp_receiver, "/users/cap-4")
    assert ok, f"gospan as nobody with {BASE_CAPS + ['sys_admin']} failed\n{g.stderr}"
    spans = _spans(otlp_receiver, "/users/cap-4")
    assert len(spans) == 1, g.stderr
    assert spans[0].resource["process.pid"] == svc.pid
    assert WRITER_OFF not in g.stderr, g.stderr
    assert svc.alive()


def test_without_sys_admin_works_or_names_the_capability(setpriv, gospan_bin, start_service,
                                                         otlp_receiver):
    svc = start_service()
    ok, g = _traced_by(BASE_CAPS, gospan_bin, svc, otlp_receiver, "/users/cap-3")
    if ok:
        assert len(_spans(otlp_receiver, "/users/cap-3")) == 1, g.stderr
    else:
        assert g.proc.returncode == 1, g.stderr
        assert "only CAP_SYS_ADMIN create uprobes" in g.stderr, g.stderr
        assert "Traceback" not in g.stderr and "Sanitizer" not in g.stderr
    # Without CAP_SYS_ADMIN (or CAP_NET_ADMIN) no sockhash: the writer is off, and says why.
    off = [line for line in g.stderr.splitlines() if WRITER_OFF in line]
    assert off and "CAP_NET_ADMIN" in off[0], g.stderr
    assert svc.alive()


# What gospan says, as its only line, when it lacks a capability it cannot do without.
MISSING_RE = re.compile(r"gospan: cannot trace process (\d+): missing (CAP_[A-Z_]+(?:(?:, | and )"
                        r"CAP_[A-Z_]+)*) \(.+\); run gospan as root, or grant them: "
                        r"sudo setcap (\S+)=ep '[^']+' \(in a systemd unit: "
                        r"AmbientCapabilities=([A-Z_ ]+)\)")


@pytest.mark.parametrize("caps, missing", [
    ([], {"CAP_BPF", "CAP_PERFMON", "CAP_SYS_PTRACE"}),
    (["bpf", "perfmon"], {"CAP_SYS_PTRACE"}),
    (["sys_admin"], {"CAP_SYS_PTRACE"}),
    (["perfmon", "sys_ptrace"], {"CAP_BPF"}),
])
def test_missing_capabilities_are_named_in_one_line(setpriv, gospan_bin, start_service,
                                                    otlp_receiver, caps, missing):
    """Without a capability it cannot trace without, gospan loads nothing and says, in its one
    and only line, which capabilities are missing and how to grant them: no libbpf line first
    (libbpf's own messages are for OTEL_LOG_LEVEL=debug). Granted what the line lists, it
    traces (or, on a kernel that reserves uprobes to CAP_SYS_ADMIN, says that)."""
    svc = start_service()
    res = subprocess.run(_setpriv(caps) + [str(gospan_bin), "--pid", str(svc.pid)],
                         env=_env(otlp_receiver), stdin=subprocess.DEVNULL,
                         capture_output=True, text=True, timeout=60)
    lines = res.stderr.splitlines()
    assert res.returncode == 1, res.stderr
    assert len(lines) == 1, f"want one line, got {len(lines)}:\n{res.stderr}"
    m = MISSING_RE.fullmatch(lines[0])
    assert m, lines[0]
    assert int(m.group(1)) == svc.pid, lines[0]
    assert set(re.split(r", | and ", m.group(2))) == missing, lines[0]
    granted = m.group(4).split()
    assert m.group(3).split(",") == [c.lower() for c in granted], lines[0]
    assert missing <= set(granted), lines[0]

    ok, g = _traced_by([c.lower().removeprefix("cap_") for c in granted], gospan_bin, svc,
                       otlp_receiver, "/users/cap-granted")
    assert "missing" not in g.stderr, g.stderr
    if ok:
        assert len(_spans(otlp_receiver, "/users/cap-granted")) >= 1, g.stderr
    else:
        assert g.proc.returncode == 1, g.stderr
        assert "only CAP_SYS_ADMIN create uprobes" in g.stderr, g.stderr
    assert svc.alive()


# ---- outgoing trace context ---------------------------------------------------------------------


@pytest.fixture(scope="module")
def pair_bins(build_dir, go_version, bpf_ready):
    return (build_example(FRONTEND_SRC, build_dir, go_version),
            build_example(BACKEND_SRC, build_dir, go_version))


@pytest.fixture
def pair(pair_bins):
    """A backend and a frontend calling it, both root's, stopped after the test."""
    frontend_bin, backend_bin = pair_bins
    backend = Service(backend_bin, env=_clean_env())
    frontend = None
    try:
        frontend = Service(frontend_bin, env=_clean_env(), args=["-backend", backend.base_url])
        yield frontend, backend
    finally:
        if frontend:
            frontend.stop()
        backend.stop()


def _calls_as_nobody(caps, gospan_bin, frontend, receiver, n=1):
    """Attaches gospan as nobody with CAPS to FRONTEND, makes N calls through it to the
    backend, stops gospan. Returns (gospan, [(id, traceparent the backend saw)]), or
    (gospan, None) when gospan did not attach."""
    g = _start_as_nobody(caps, gospan_bin, frontend.pid, receiver)
    try:
        if g.proc.poll() is not None:
            g.stop()
            return g, None
        seen = []
        for _ in range(n):
            i = unique("cap")
            sent = get(frontend.base_url, f"/direct/{i}")
            assert sent.status == 200, sent
            seen.append((i, sent.echoed_traceparent("direct")))
        assert g.stop() == 0, g.stderr
    finally:
        if g.proc.poll() is None:
            g.proc.kill()
            g.proc.wait(10)
    return g, seen


def _client_span(receiver, i):
    """The frontend's CLIENT span of the backend call for ID I."""
    want = f"/work/{i}?"
    deadline = time.monotonic() + SPAN_TIMEOUT
    while time.monotonic() < deadline:
        got = [s for s in receiver.snapshot()
               if s.kind == SPAN_KIND_CLIENT and want in s.attrs.get("url.full", "")]
        if got:
            assert len(got) == 1, got
            return got[0]
        time.sleep(0.1)
    raise AssertionError(f"no CLIENT span for {want}")


def _assert_carried(receiver, seen, stderr):
    for i, tp in seen:
        m = TRACEPARENT_RE.match(tp)
        assert m, f"the backend saw traceparent {tp!r} for {i}\n{stderr}"
        c = _client_span(receiver, i)
        assert (m.group(1), m.group(2)) == (c.trace_id.hex(), c.span_id.hex()), (
            f"the backend saw {tp}, the CLIENT span is {c.trace_id.hex()}/{c.span_id.hex()}")


def _counter(summary, name):
    m = re.search(rf"\b{name} (\d+)", summary or "")
    assert m, f"no '{name}' in the summary: {summary!r}"
    return int(m.group(1))


def test_documented_capabilities_carry_trace_context(setpriv, gospan_bin, pair, otlp_receiver):
    """With the four capabilities, a connection the frontend opens after gospan attached carries
    a traceparent naming the frontend's CLIENT span."""
    frontend, _ = pair
    g, seen = _calls_as_nobody(DOCUMENTED_CAPS, gospan_bin, frontend, otlp_receiver)
    assert seen is not None, f"gospan as nobody with {DOCUMENTED_CAPS} failed\n{g.stderr}"
    assert "traceparent is added to HTTP/1 requests" in g.stderr, g.stderr
    assert WRITER_OFF not in g.stderr, g.stderr
    _assert_carried(otlp_receiver, seen, g.stderr)
    assert _counter(g.summary_line(), "trace context sent") == 1, g.summary_line()
    assert frontend.alive()


def test_open_connections_of_another_user_need_dac_read_search(setpriv, gospan_bin, pair_bins,
                                                               otlp_receiver):
    """A keep-alive connection the frontend opened before gospan came is found in /proc/PID/fd,
    which only root's processes may list: with CAP_DAC_READ_SEARCH it carries trace context;
    without it, it carries none, gospan says so, and the summary counts it as not tracked."""
    frontend_bin, backend_bin = pair_bins
    for caps, carried in ((DOCUMENTED_CAPS + ["dac_read_search"], True),
                          (DOCUMENTED_CAPS, False)):
        backend = Service(backend_bin, env=_clean_env())
        frontend = Service(frontend_bin, env=_clean_env(), args=["-backend", backend.base_url])
        try:
            warm = get(frontend.base_url, f"/direct/{unique('warm')}")
            assert warm.status == 200 and warm.echoed_traceparent("direct") == "", warm
            g, seen = _calls_as_nobody(caps, gospan_bin, frontend, otlp_receiver, n=2)
            assert seen is not None, f"gospan as nobody with {caps} failed\n{g.stderr}"
            summary = g.summary_line()
            if carried:
                tracked = rf"process {frontend.pid}: 1 open client connection is tracked"
                assert re.search(tracked, g.stderr), g.stderr
                _assert_carried(otlp_receiver, seen, g.stderr)
                assert _counter(summary, "trace context sent") == 2, summary
            else:
                assert [tp for _, tp in seen] == ["", ""], (seen, g.stderr)
                assert re.search(rf"process {frontend.pid}: cannot list its open files in "
                                 rf"'/proc/{frontend.pid}/fd': Permission denied \(another "
                                 r"user's process: gospan needs CAP_DAC_READ_SEARCH\)",
                                 g.stderr), g.stderr
                assert _counter(summary, "trace context sent") == 0, summary
                # Counted when the connection's next request is marked: 1 of the 2.
                assert _counter(summary, "socket not tracked") == 1, summary
                for i, _ in seen:
                    _client_span(otlp_receiver, i)  # the spans are made all the same
            assert frontend.alive()
        finally:
            frontend.stop()
            backend.stop()


def test_net_admin_stands_in_for_sys_admin_for_the_writer(setpriv, gospan_bin, pair,
                                                          otlp_receiver):
    """CAP_NET_ADMIN is what the socket-layer writer asks for when CAP_SYS_ADMIN is missing: with
    it the writer loads. Where the three capabilities create uprobes (kernels without the
    CVE-2025-38466 fix), calls then carry trace context; elsewhere the uprobes are refused."""
    frontend, _ = pair
    caps = BASE_CAPS + ["net_admin"]
    g, seen = _calls_as_nobody(caps, gospan_bin, frontend, otlp_receiver)
    assert WRITER_OFF not in g.stderr, g.stderr
    if seen is None:
        assert g.proc.returncode == 1, g.stderr
        assert "only CAP_SYS_ADMIN create uprobes" in g.stderr, g.stderr
    else:
        _assert_carried(otlp_receiver, seen, g.stderr)
    assert frontend.alive()
