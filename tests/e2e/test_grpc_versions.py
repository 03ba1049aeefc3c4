"""grpc-go releases, Go toolchains and build flavours, traced for real: tests/e2e/grpcmix's
server and client built against one grpc-go release with one Go toolchain (grpc_matrix.py,
cached), one gospan on each, the scenarios unary_ok, unary_error (14 codes), server_stream,
bidi and with_traceparent run, and every span checked as the OTLP receiver decoded it:

- one CLIENT span per call in the client, one SERVER span per call in the server, named and
  attributed as test_grpc.py requires (rpc.*, status codes, server.address/port, and on the
  SERVER span client.address/port and network.peer.*);
- each CLIENT span a child of the client's HTTP SERVER span for /run, and each SERVER span a
  child of its CLIENT span in the same trace: gospan writes the traceparent into the call's
  HEADERS frame at the socket layer, and the server answers with what it received
  (seen_traceparent), which must name that CLIENT span, exactly once;
- with_traceparent: the caller's own traceparent is left alone (counted as already set) and
  the SERVER span joins its trace, with its tracestate;
- both attach lines say "gRPC server + gRPC client (grpc-go vX, offsets from ...;
  single-stepped hits: 0 an RPC served, 0 an RPC made)", and nothing is dropped.

With kernel.bpf_stats_enabled=1 (set for the module, restored after; the counting is also held
by a bpf(BPF_ENABLE_STATS) fd, so another process turning the sysctl off cannot stop it),
gospan's "probe hits:" line at exit gives each BPF program's runs; those of the gRPC programs
are divided by the number of RPCs.

By default (make test, CI) this runs the slice of grpc_matrix.SLICE: the oldest and newest
release the grpc-go offset table covers and the first release of each layout in between, each
stripped and PIE, the oldest and newest also plain. With GOSPAN_COMPAT=1 (make compat) it runs
every grpc-go minor from v1.50 (latest patch) with the installed Go and with the oldest Go the
release allows, plain, stripped and PIE, plus the slice, and then rewrites the gRPC section of
COMPATIBILITY.md (the Go section is test_go_versions.py's). Every run also writes its
results, cell by cell, to $GOSPAN_BUILD/e2e/grpc-versions-full.json (GOSPAN_COMPAT=1) or
grpc-versions-slice.json (build/e2e/ without GOSPAN_BUILD).
"""

import ctypes
import json
import os
import platform
import re
import time
import urllib.request
from pathlib import Path

import pytest

import grpc_matrix
import matrix
from conftest import (BUILD, CI, STATUS_ERROR, STATUS_UNSET, Service, _clean_env,
                      trace_context_counters, trace_context_unavailable)
from test_grpc import (HAND_PARENT_ID, HAND_TRACE_ID, WINDOW_SLACK_NS, check_client_span,
                       check_server_span, in_window, rpc_name)

BUILD_JOBS = 2 if matrix.COMPAT else 1
SPAN_KIND_SERVER, SPAN_KIND_CLIENT = 2, 3
SCENARIOS = ["unary_ok", "unary_error", "server_stream", "bidi", "with_traceparent"]
UNARY_ERROR_CODES = {2, 3, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}
TRACEPARENT_RE = re.compile(r"^00-([0-9a-f]{32})-([0-9a-f]{16})-01$")
ATTACH_RE = re.compile(
    r"gRPC server \+ gRPC client \(grpc-go (v[0-9.]+), offsets from (DWARF|table v[0-9.]+); "
    r"single-stepped hits: (\d+|no probe for) an RPC served, (\d+|no probe for) an RPC made\)")
NO_PROPAGATION = trace_context_unavailable()


def _tc_id(tc):
    return "debian-go1.19" if tc == grpc_matrix.DEBIAN_GO else tc


CASES = matrix.cases(grpc_matrix.full_cells, grpc_matrix.slice_cells)
IDS = [f"{v}-{_tc_id(tc)}-{f}" for v, tc, f in CASES]

# (version, toolchain, flavour) -> {"result", "toolchain", "steps", "hits", "why"}; the full
# matrix's kept apart from the slice's.
RESULTS = matrix.Results("grpc-versions", grpc_matrix.FIELDS, BUILD, why_width=300)


STATS_SYSCTL = Path("/proc/sys/kernel/bpf_stats_enabled")
BPF_SYSCALL = {"x86_64": 321, "aarch64": 280}
BPF_ENABLE_STATS, BPF_STATS_RUN_TIME = 32, 0


def _enable_stats():
    """An fd from bpf(BPF_ENABLE_STATS), or None where the kernel refuses it. While it is open the
    kernel counts program runs whatever another process writes to kernel.bpf_stats_enabled
    (the sysctl and each such fd hold references of their own): a benchmark sharing the machine
    may turn the sysctl off under a cell."""
    nr = BPF_SYSCALL.get(platform.machine())
    if nr is None:
        return None
    libc = ctypes.CDLL(None, use_errno=True)
    attr = (ctypes.c_uint32 * 32)(BPF_STATS_RUN_TIME)
    fd = libc.syscall(ctypes.c_long(nr), ctypes.c_int(BPF_ENABLE_STATS), ctypes.byref(attr),
                      ctypes.c_uint(ctypes.sizeof(attr)))
    return fd if fd >= 0 else None


@pytest.fixture(scope="module")
def bpf_stats(bpf_ready):
    """Has the kernel count BPF program runs while this module runs (the sysctl restored
    afterwards); yields whether the counting is held by an fd of our own."""
    old = STATS_SYSCTL.read_text().strip()
    fd = _enable_stats()
    STATS_SYSCTL.write_text("1")
    yield fd is not None
    STATS_SYSCTL.write_text(old)
    if fd is not None:
        os.close(fd)


def stats_sysctl_on():
    return STATS_SYSCTL.read_text().strip() == "1"


@pytest.fixture(scope="module")
def builds(request, bpf_ready):
    """cell -> future of grpc_matrix.build(cell): every selected cell is built in order in the
    background, so the builds (the slow part) overlap the runs of the cells before. One build at
    a time for the slice; two for the full matrix, where a build's serial steps (tidy, links)
    would otherwise leave a core idle."""
    yield from matrix.in_background(lambda c: grpc_matrix.build(*c),
                                    matrix.selected_cells(request), BUILD_JOBS)


def probe_hits(stderr):
    """{program: runs} from gospan's 'probe hits: N (counted by ...): name=N ...' line, or None
    without one."""
    m = re.search(r"probe hits: \d+ \([^)]*\)(?:: ([^\n]*))?", stderr)
    if not m:
        return None
    return {k: int(v) for k, v in re.findall(r"(\w+)=(\d+)", m.group(1) or "")}


def attach_info(line, version):
    """(where grpc-go's offsets came from, (single-stepped hits an RPC served, made)) from an
    attach LINE, which must say both sides of grpc-go VERSION are traced."""
    m = ATTACH_RE.search(line)
    assert m, f"the attach line does not say the gRPC server and client are traced:\n{line}"
    assert m.group(1) == version, f"grpc-go {m.group(1)} read, {version} built:\n{line}"
    steps = tuple(None if x == "no probe for" else int(x) for x in m.group(3, 4))
    return m.group(2), steps


def run_scenarios(client):
    """Every scenario's calls, as the client reported them, each tagged with its scenario."""
    calls = []
    for sc in SCENARIOS:
        url = f"{client.base_url}/run?scenario={sc}"
        with urllib.request.urlopen(url, timeout=60) as resp:
            assert resp.status == 200, f"{url}: {resp.status}"
            got = json.loads(resp.read())
        assert got, f"scenario {sc} made no calls"
        for c in got:
            assert c["code"] == c["want_code"], f"{sc}: {c}"
            c["scenario"] = sc
        calls += got
    return calls


def check_cell(calls, spans, client, server, where, gospan_err):
    """Every call: exactly one CLIENT span (child of a /run span), exactly one SERVER span
    (child of that CLIENT span, or of the caller's own context), and nothing else."""
    port = server.port
    cspans = [s for s in spans if s.resource.get("process.pid") == client.pid]
    sspans = [s for s in spans if s.resource.get("process.pid") == server.pid]
    clients = [s for s in cspans if s.kind == SPAN_KIND_CLIENT]
    runs = [s for s in cspans if s.kind == SPAN_KIND_SERVER and s.attrs.get("url.path") == "/run"]
    servers = [s for s in sspans if s.kind == SPAN_KIND_SERVER]
    assert len(runs) == len(SCENARIOS), f"{where}: {len(runs)} /run spans\n{gospan_err}"
    assert len(clients) == len(calls), (f"{where}: {len(clients)} CLIENT spans for "
                                        f"{len(calls)} calls\n{gospan_err}")
    assert len(servers) == len(calls), (f"{where}: {len(servers)} SERVER spans for "
                                        f"{len(calls)} calls\n{gospan_err}")
    assert len(cspans) + len(sspans) == len(runs) + 2 * len(calls), f"{where}: stray spans"
    hand = f"00-{HAND_TRACE_ID}-{HAND_PARENT_ID}-01"
    for c in calls:
        what = f"{where} {c['name']}"

        def match(s):
            return (s.name == rpc_name(c) and s.attrs.get("rpc.grpc.status_code") == c["code"]
                    and in_window(s, c))

        cs = [s for s in clients if match(s)]
        assert len(cs) == 1, f"{what}: {len(cs)} CLIENT spans match {c}\n{gospan_err}"
        cspan = cs[0]
        clients.remove(cspan)
        check_client_span(cspan, c, port)
        run = [r for r in runs if r.span_id == cspan.parent_span_id]
        assert run, f"{what}: the CLIENT span is not a child of a /run SERVER span"
        assert run[0].trace_id == cspan.trace_id
        assert run[0].start_ns <= cspan.start_ns <= cspan.end_ns <= run[0].end_ns + \
            WINDOW_SLACK_NS, f"{what}: the CLIENT span is outside its /run span"

        seen = c["seen_traceparent"]
        if c["scenario"] == "with_traceparent":
            # The caller's own context went out as it was, and only it.
            assert seen == hand, f"{what}: the server received traceparent {seen!r}"
            assert c["seen_tracestate"] == "vendor=value", c
            trace, parent = bytes.fromhex(HAND_TRACE_ID), bytes.fromhex(HAND_PARENT_ID)
        else:
            m = TRACEPARENT_RE.match(seen)
            assert m, f"{what}: the server received traceparent {seen!r}\n{gospan_err}"
            assert m.group(1) == cspan.trace_id.hex() and m.group(2) == cspan.span_id.hex(), (
                f"{what}: the server received {seen}, not the CLIENT span "
                f"{cspan.trace_id.hex()}/{cspan.span_id.hex()}")
            trace, parent = cspan.trace_id, cspan.span_id
        ss = [s for s in servers if match(s) and s.parent_span_id == parent]
        assert len(ss) == 1, (f"{what}: {len(ss)} SERVER spans, children of {parent.hex()}\n"
                              f"{servers}\n{gospan_err}")
        sspan = ss[0]
        servers.remove(sspan)
        assert sspan.trace_id == trace, f"{what}: the SERVER span is in another trace"
        check_server_span(sspan, c, port)
        assert cspan.start_ns <= sspan.start_ns <= sspan.end_ns <= cspan.end_ns + \
            WINDOW_SLACK_NS, f"{what}: the handler ran outside the call {cspan} {sspan}"
        if c["scenario"] == "with_traceparent":
            assert sspan.proto.trace_state == "vendor=value", sspan.proto.trace_state
        if c["code"]:
            assert cspan.status_code == STATUS_ERROR and cspan.status_message == c["message"]
        else:
            assert cspan.status_code == STATUS_UNSET and sspan.status_code == STATUS_UNSET
    assert {c["code"] for c in calls if c["scenario"] == "unary_error"} == UNARY_ERROR_CODES


@pytest.mark.parametrize("cell", CASES, ids=IDS)
def test_grpc_version_is_traced(cell, builds, start_gospan, otlp_receiver, bpf_stats):
    version, toolchain, flavour = cell
    if NO_PROPAGATION:
        # Every check here follows the context the call carried; test_grpc.py covers the rest.
        assert not CI, NO_PROPAGATION
        pytest.skip(NO_PROPAGATION)
    with RESULTS.record(cell) as rec:
        server_bin, client_bin, built_with = builds[cell].result()
        rec["toolchain"] = built_with
        where = f"grpc-go {version} {built_with} {flavour}"
        STATS_SYSCTL.write_text("1")
        server = Service(server_bin, env=_clean_env())
        client = None
        gospans = {}
        try:
            client = Service(client_bin, env=_clean_env(),
                             args=("-target", f"{server.host}:{server.port}"))
            before = len(otlp_receiver.snapshot())
            for name, svc in (("server", server), ("client", client)):
                gospans[name] = start_gospan(svc.pid, otlp_receiver)
            lines = {n: g.wait_attached() for n, g in gospans.items()}
            calls = run_scenarios(client)
            # The /run span ends as ServeHTTP returns, just after its answer is sent.
            time.sleep(0.3)
            # Counted throughout: by our fd, else by the sysctl if nobody turned it off.
            counted = bpf_stats or stats_sysctl_on()
            # gospan prints the hits at exit only if the sysctl says 1.
            STATS_SYSCTL.write_text("1")
            for g in gospans.values():
                assert g.stop() == 0, g.stderr
            stats_after = stats_sysctl_on()
        finally:
            if client:
                client.stop()
            server.stop()
        err = "\n".join(f"--- gospan on {n} ---\n{g.stderr}" for n, g in gospans.items())
        sources = {}
        for n, line in lines.items():
            assert f"{built_with.split()[0]}," in line, line
            sources[n], rec.setdefault("steps", {})[n] = attach_info(line, version)
        assert sources["server"] == sources["client"], sources
        if flavour in ("stripped", "stripped-pie"):
            assert sources["server"].startswith("table"), f"{where}: {lines}"
        spans = otlp_receiver.snapshot()[before:]
        check_cell(calls, spans, client, server, where, err)

        for n, g in gospans.items():
            summary = g.summary_line() or ""
            dropped = re.search(r"dropped (\d+)", summary)
            assert dropped and dropped.group(1) == "0", f"{where} {n}: {summary}"
            sent = trace_context_counters(summary)
            ncalls = len(calls) if n == "client" else 0
            nhand = sum(c["scenario"] == "with_traceparent" for c in calls) if ncalls else 0
            want = {"sent": ncalls - nhand, "already_set": nhand, "no_room": 0, "not_http1": 0,
                    "https": 0, "untracked": 0, "h2_not_whole": 0,
                    "scratch_busy": 0}
            assert sent == want, f"{where} {n}: trace-context counters {sent}, expected {want}"
        hits = {n: probe_hits(g.stderr) for n, g in gospans.items()}
        if counted and not all(hits.values()):
            # Only another process turning the sysctl off as gospan exited explains it.
            assert not stats_after, f"{where}: no probe hits line\n{err}"
            rec["hits_missing"] = "kernel.bpf_stats_enabled turned off by another process"
        elif counted:
            rec["hits"] = {n: {p: k / len(calls) for p, k in h.items() if p.startswith("grpc")}
                           for n, h in hits.items()}
            rec["other_hits"] = {n: {p: k for p, k in h.items() if not p.startswith("grpc")}
                                 for n, h in hits.items()}
        rec["rpcs"] = len(calls)
        steps = rec["steps"]
        assert steps["server"][0] == 0 and steps["client"][1] == 0, (
            f"{where}: single-stepped probes on an RPC's path: {lines}")
        rec["result"] = f"verified ({sources['server']})"


@pytest.fixture(scope="module", autouse=True)
def _write_compatibility():
    yield from matrix.write_compatibility(grpc_matrix, RESULTS, CASES, "grpcmix-*")
