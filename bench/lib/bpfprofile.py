"""The bpfprofile part: where serve_http_entry's time goes, from a gospan whose entry program
times its own stages (GOSPAN_BPF_PROFILE)."""

import json
import os

from .runner import (OUT, SECONDS, WARMUP, bpf_delta, bpf_maps_of, bpf_runs, ensure_bpf_stats, fmt,
                     log, prog_names, run, start_gospan, start_service, wrk)

# The Go programs the part runs, built into build/bench: {name: source directory}.
GO_PROGRAMS = {"httpserver": "examples/httpserver"}
# gospan built with GOSPAN_BPF_PROFILE (the Makefile's bench target): its entry program times
# its own stages. PROF_STAGES are bpf/http.bpf.c's enum prof_stage, in order.
PROFILED = OUT / "profiled" / "gospan"
PROF_STAGES = [
    ("calibrate", "a mark's own cost (subtracted from the others)"),
    ("context", "target config, goroutine id: the first read of the service's memory"),
    ("state", "the goroutine's map entry (one lookup), per-CPU scratch"),
    ("reserve", "ring-buffer reservation, record header"),
    ("snapshot", "http.Request's head, in one read"),
    ("strings", "method, protocol, host, peer address: a read each"),
    ("path", "the URL's path: two reads"),
    ("traceparent", "the Header map walk: map header, then a group or bucket"),
    ("ids", "span and trace ids, sampling"),
    ("store", "the goroutine's entry written in place"),
    ("submit", "ring-buffer submit"),
]


def measure(bins, receiver):
    """Where serve_http_entry's time goes: the profiled gospan on the example service under wrk,
    one keep-alive connection; each stage's time per request, less what a mark itself costs."""
    if not os.access(PROFILED, os.X_OK):
        return {"error": f"'{PROFILED}' is missing: run 'make bench'"}
    log(f"bpfprofile: serve_http_entry's stages, {SECONDS} s of one connection")
    svc = start_service(bins["httpserver"])
    g = None
    try:
        g = start_gospan(svc.pid, receiver, binary=PROFILED)
        names = prog_names()
        wrk(svc.addr, 1, WARMUP)
        ensure_bpf_stats()
        maps = bpf_maps_of(g.pid)
        if "prof" not in maps:
            return {"error": f"the profiled gospan has no 'prof' map (maps: {sorted(maps)})"}

        def stages():
            dump = json.loads(run(["bpftool", "map", "dump", "id", str(maps["prof"]), "-j"]))
            out = [0] * len(PROF_STAGES)
            for e in dump:
                f = e.get("formatted") or {}
                k = f.get("key")
                if isinstance(k, int) and k < len(out):
                    out[k] = sum(v.get("value", 0) for v in f.get("values", []))
            return out

        s0, b0 = stages(), bpf_runs(g.pid)
        w = wrk(svc.addr, 1, SECONDS)
        s1, b1 = stages(), bpf_runs(g.pid)
    finally:
        if g:
            g.stop()
        svc.stop()
    n = max(w["requests"], 1)
    per = [(b - a) / n for a, b in zip(s0, s1)]
    progs = bpf_delta(b0, b1, names)
    runs, ns = progs.get("serve_http_entry", (0, 0))
    mark = per[0]
    out = {"requests": w["requests"], "mark_ns": mark,
           "stages": {name: max(per[i] - mark, 0.0) for i, (name, _) in
                      enumerate(PROF_STAGES) if i},
           "entry_ns_per_hit": ns / runs if runs else None,
           "marks": len(PROF_STAGES)}
    log("  " + ", ".join(f"{k} {v:.0f} ns" for k, v in out["stages"].items())
        + f"; a mark costs {mark:.0f} ns")
    return out


def section(bp):
    """The bpfprofile part's section of benchmarks.md."""
    L = ["### Where the entry program's time goes", ""]
    if "error" in bp:
        L += [f"Not measured: {bp['error']}.", ""]
    else:
        total = sum(bp["stages"].values())
        L += ["`bench/run`'s bpfprofile part: gospan built with `GOSPAN_BPF_PROFILE` "
              "(`bpf/http.bpf.c`), whose `serve_http_entry` adds the time between marks to "
              f"a per-CPU slot per stage; one keep-alive connection, {bp['requests']} "
              f"requests. Each figure is per request, less a mark's own cost "
              f"({bp['mark_ns']:.0f} ns); the stages add up to {total:.0f} ns, and the "
              f"kernel's run time for the profiled program was "
              f"{fmt(bp['entry_ns_per_hit'], '.0f')} ns per hit with its "
              f"{bp['marks']} marks. (Marks, because `bpftool prog profile` counts cycles "
              "through hardware performance counters, which this VM does not have.)", "",
              "| stage | ns per request | what it does |", "|---|---:|---|"]
        what = dict(PROF_STAGES)
        for k, v in bp["stages"].items():
            L.append(f"| {k} | {v:.0f} | {what.get(k, '')} |")
        L.append("")

    return L
