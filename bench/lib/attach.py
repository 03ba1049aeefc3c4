"""The attach part: time from starting gospan to its attach line on the example service and on a
100 MB+ Go binary (Jaeger), and the BPF object's load and verification."""

import re
import statistics
import sys
import time
from pathlib import Path

from .runner import (FLOOR, GOSPAN, OUT, QUICK, REPO, Proc, clean_env, free_ports, log, mb, run,
                     start_service, status_kb)

# The Go programs the part runs, built into build/bench: {name: source directory}.
GO_PROGRAMS = {"httpserver": "examples/httpserver"}
ATTACH_RUNS = 3 if QUICK else 7


def attach_once(pid, receiver, acc):
    t0 = time.monotonic()
    g = Proc([GOSPAN, "--pid", str(pid)],
             env=clean_env(OTEL_EXPORTER_OTLP_ENDPOINT=receiver.endpoint))
    acc["attached"] = g.wait_line(r"gospan: attached: .*", timeout=60).group(0)
    acc.setdefault("runs_s", []).append(time.monotonic() - t0)
    acc["peak_rss_kb"] = max(acc.get("peak_rss_kb", 0), status_kb(g.pid, "VmHWM") or 0)
    g.stop()
    acc["median_s"] = statistics.median(acc["runs_s"])


def verifier_runs(runs):
    """Loads of every program of gospan's BPF object by bench/floor --verifier: what a target
    with every family would cost gospan's start (a target loads only its families' groups,
    exporter/capture/probes.c). Median load time, and the verifier's statistics per program from
    the last load."""
    loads, progs = [], {}
    for _ in range(runs):
        out = run([FLOOR, "--verifier"])
        loads.append(int(re.search(r"load_us (\d+)", out).group(1)) / 1e6)
        for m in re.finditer(r"program (\S+) insns (-?\d+) time_us (-?\d+)", out):
            p = progs.setdefault(m.group(1), {"insns": int(m.group(2)), "times_s": []})
            p["times_s"].append(int(m.group(3)) / 1e6)
    for p in progs.values():
        p["time_s"] = statistics.median(p["times_s"])
    return {"runs_s": loads, "median_s": statistics.median(loads), "programs": progs}


def measure(bins, receiver):
    ver = verifier_runs(ATTACH_RUNS)
    top = max(ver["programs"].items(), key=lambda kv: kv[1]["time_s"])
    log(f"attach: loading gospan's BPF programs: median {ver['median_s'] * 1000:.0f} ms; "
        f"{top[0]}: {top[1]['insns']} instructions processed by the verifier in "
        f"{top[1]['time_s'] * 1000:.0f} ms")
    sys.path.insert(0, str(REPO / "tests" / "e2e"))
    try:
        import jaeger as jaeger_mod  # where the tests keep their Jaeger build
    except Exception as e:  # noqa: BLE001
        return {"error": f"cannot import tests/e2e/jaeger.py: {e}"}
    small = {"size_bytes": bins["httpserver"].stat().st_size}
    out = {"small": small, "verifier": ver}
    path, ready = jaeger_mod.cached_binary()
    if not ready:
        out["error"] = (f"no Jaeger binary at '{path}': build it once with "
                        f"'python3 tests/e2e/jaeger.py build' (about 6 minutes)")
        log(f"  {out['error']}")
    svc = start_service(bins["httpserver"], pin=False)
    j = None
    try:
        if ready:
            workdir = OUT / "jaeger"
            workdir.mkdir(parents=True, exist_ok=True)
            j = jaeger_mod.Jaeger(path, workdir, *free_ports(3))
            out["big"] = {"binary": str(path), "size_bytes": path.stat().st_size}
        # Alternated, so that a change in the machine's load hits both alike.
        for _ in range(ATTACH_RUNS):
            attach_once(svc.pid, receiver, small)
            if j:
                attach_once(j.proc.pid, receiver, out["big"])
    finally:
        if j:
            j.stop()
        svc.stop()
    log(f"  example service ({small['size_bytes'] / 1e6:.0f} MB): median "
        f"{small['median_s'] * 1000:.0f} ms")
    if not j:
        return out
    big = out["big"]
    log(f"  Jaeger ({big['size_bytes'] / 1e6:.0f} MB): median {big['median_s'] * 1000:.0f} ms "
        f"({', '.join(f'{t * 1000:.0f}' for t in big['runs_s'])} ms)")
    return out


def section(at):
    """The attach part's section of benchmarks.md."""
    L = ["## Attach time", ""]
    sm = at.get("small")
    if sm:
        L += [f"From starting gospan to its `gospan: attached` line, {len(sm['runs_s'])} "
              f"runs each: the example service ({sm['size_bytes'] / 1e6:.0f} MB) median "
              f"**{sm['median_s'] * 1000:.0f} ms**."]
    big = at.get("big")
    if big:
        L += [f"`{Path(big['binary']).name}` ({big['size_bytes'] / 1e6:.0f} MB, Jaeger v2 as "
              f"`tests/e2e/jaeger.py` builds it), running: median "
              f"**{big['median_s'] * 1000:.0f} ms** "
              f"({', '.join(f'{t * 1000:.0f}' for t in big['runs_s'])} ms); gospan's peak "
              f"RSS while attaching {mb(big['peak_rss_kb']):.1f} MB.", "",
              f"`{big['attached']}`"]
    if at.get("error"):
        L += [f"Large binary not measured: {at['error']}."]
    ver = at.get("verifier")
    if ver:
        L += ["", f"Loading every program of gospan's BPF object (`bench/floor --verifier`; "
              "gospan loads the Go runtime's programs at start and each family's, net/http, "
              "gRPC, data stores, functions, fasthttp, Kafka, when a target first has it): "
              f"median **{ver['median_s'] * 1000:.0f} ms**. "
              "The verifier's statistics (`log_level` 4):", "",
              "| program | instructions processed | verification ms |", "|---|---:|---:|"]
        for name, p in ver["programs"].items():
            L.append(f"| `{name}` | {p['insns']} | {p['time_s'] * 1000:.1f} |")
    L.append("")

    return L


def targets(at, results):
    """The attach part's row of the targets table."""
    t = []
    big = at.get("big")
    t.append(("attach to a 100 MB Go binary < 1 s",
              f"{big['median_s'] * 1000:.0f} ms ({big['size_bytes'] / 1e6:.0f} MB); "
              f"{at['small']['median_s'] * 1000:.0f} ms to the small example service"
              if big else at.get("error", "n/a"),
              big["median_s"] < 1.0 and big["size_bytes"] >= 100e6 if big else None))
    return t


def findings(at, results):
    """What the attach part's figures say bounds them."""
    f = []
    if at.get("big") and at.get("verifier"):
        big, sm, ver = at["big"], at["small"], at["verifier"]
        name, top = max(ver["programs"].items(), key=lambda kv: kv[1]["time_s"])
        f.append(
            f"Attach: {sm['median_s'] * 1000:.0f} ms to the small example service, "
            f"{big['median_s'] * 1000:.0f} ms to the {big['size_bytes'] / 1e6:.0f} MB binary: "
            + (f"the binary's size costs {(big['median_s'] - sm['median_s']) * 1000:.0f} ms. "
               if big["median_s"] > sm["median_s"] else "no cost of the binary's size shows. ")
            + f"Loading "
            f"every BPF program takes {ver['median_s'] * 1000:.0f} ms (a target loads only its "
            "families' programs); the "
            f"verifier spends longest on `{name}` ({top['insns']} instructions processed, of its "
            f"limit of 1,000,000, in {top['time_s'] * 1000:.0f} ms). The header-map walk for "
            "`traceparent` is made of global BPF functions, each verified once rather than once "
            "per path into it.")
    return f
