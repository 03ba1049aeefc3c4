"""The client part: what outgoing trace context costs per call (wrk -> examples/frontend ->
examples/backend), and what the Traceparent line costs the backend alone."""

import http.client
import json
import re
import time
from pathlib import Path

from .runner import (CONNS, CPU_OTHER, CPU_SERVICE, CPU_WRK, PIN, ROUNDS, SECONDS, WARMUP,
                     bpf_delta, bpf_runs, bpf_stats_on, ensure_bpf_stats, fmt, gospan_summary, log,
                     machine_busy_seconds, median, own_cpu_seconds, prog_names, start_gospan,
                     start_service, steps_text, threads_cpu_seconds, wrk)

# The Go programs the part runs, built into build/bench: {name: source directory}.
GO_PROGRAMS = {"frontend": "examples/frontend", "backend": "examples/backend"}
# The client part: wrk -> examples/frontend -> examples/backend, one call per request.
CLIENT_CONFIGS = ["untraced", "noprop", "prop"]
CLIENT_NAMES = {"untraced": "untraced", "noprop": "gospan, OTEL_PROPAGATORS=none",
                "prop": "gospan, trace context out (default)"}
CLIENT_PATH = "/direct/42"  # one keep-alive call to the backend's /work/42 per request
# The socket-layer writer's programs (bpf/wire.bpf.c) and the request marker (bpf/http.bpf.c).
SK_MSG, SOCKOPS, MARKER = "write_trace_context", "track_client_sockets", "mark_request"
# The backend alone: the header lines of the frontend's calls, without and with trace context.
CALL_HEADERS = ["User-Agent: Go-http-client/1.1", "Accept-Encoding: gzip"]
TRACEPARENT = "Traceparent: 00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
HEADER_SECONDS = max(2, SECONDS // 2)
# The client part's backend: beside the tracer, away from the frontend it measures.
CPU_BACKEND = CPU_OTHER


def traceparent_seen(addr):
    """The traceparent the backend got for one call through the frontend at ADDR ("" for none):
    the backend answers with it, and the frontend passes the backend's answer on."""
    host, port = addr.rsplit(":", 1)
    conn = http.client.HTTPConnection(host, int(port), timeout=10)
    try:
        conn.request("GET", CLIENT_PATH)
        body = json.loads(conn.getresponse().read())
    finally:
        conn.close()
    return ((body.get("calls") or [{}])[0].get("body") or {}).get("traceparent", "")


def propagation_counts(g):
    """{sent, not_sent: {reason: n}} from a stopped gospan's summary line."""
    m = re.search(r"trace context sent (\d+) \(not sent: ([^)]*)\)", g.text())
    if not m:
        raise RuntimeError(f"gospan's summary says nothing of trace context:\n{g.text()[-2000:]}")
    return {"sent": int(m.group(1)),
            "not_sent": {k: int(v) for k, v in (x.rsplit(" ", 1) for x in m.group(2).split(", "))}}


def check_propagation(cfg, life):
    """What is wrong with a run's trace context; any of it fails the part."""
    bad = []
    calls, tp, sent = life["calls"], life.get("traceparent"), life.get("sent")
    if life["non2xx"]:
        bad.append(f"{life['non2xx']} answers of the frontend were not 2xx: calls to the "
                   "backend failed")
    if cfg == "prop":
        if not re.search(r"outgoing trace context: traceparent is added", life.get("wire", "")):
            bad.append(f"gospan did not turn the socket-layer writer on: '{life.get('wire')}'")
        if not re.fullmatch(r"00-[0-9a-f]{32}-[0-9a-f]{16}-0[01]", tp or ""):
            bad.append(f"the backend got no traceparent (it answered '{tp}')")
        # Every call wrk counted went out with one; calls in flight when wrk stopped may have too.
        if sent is None or not 0.99 * calls <= sent <= calls + life["wrk_conns"]:
            bad.append(f"gospan sent trace context {sent} times for {calls} calls (not sent: "
                       f"{life.get('not_sent')})")
    else:
        if tp:
            bad.append(f"the backend got traceparent '{tp}' with propagation off")
        if sent:
            bad.append(f"gospan sent trace context {sent} times with OTEL_PROPAGATORS=none")
    return bad


def measure_client(cfg, bins, receiver):
    """One round of one configuration: a fresh backend and frontend, one gospan on both (unless
    untraced), a warm-up, one call whose traceparent the backend echoes, then a wrk run per
    connection count with the CPU of every process read around it."""
    be = start_service(bins["backend"], cpu=CPU_BACKEND)
    fe = g = None
    names, results = {}, {}
    life = {"calls": 0, "wrk_conns": 0, "non2xx": 0}

    def count(w, conns):
        life["calls"] += w["requests"]
        life["wrk_conns"] += conns
        life["non2xx"] += w["non2xx"]

    try:
        fe = start_service(bins["frontend"], args=["-backend", "http://" + be.addr])
        if cfg != "untraced":
            g = start_gospan([fe.pid, be.pid], receiver,
                             {"OTEL_PROPAGATORS": "none"} if cfg == "noprop" else None)
            life["wire"] = g.wait_line(r"gospan: .*outgoing trace context.*").group(0)
            # The frontend's: its server and client single-stepped hits a call (page.py).
            life["attached"] = g.wait_line(rf"gospan: attached: pid {fe.pid}\b.*").group(0)
            names = prog_names()
        count(wrk(fe.addr, 64, WARMUP, CLIENT_PATH), 64)
        life["traceparent"] = traceparent_seen(fe.addr)
        life["calls"] += 1
        for conns in CONNS:
            ensure_bpf_stats()
            procs = {"frontend": fe.pid, "backend": be.pid, "receiver": receiver.proc.pid}
            if g:
                procs["tracer"] = g.pid
            c0 = {k: threads_cpu_seconds(p) for k, p in procs.items()}
            m0, o0, t0 = machine_busy_seconds(), own_cpu_seconds(), time.monotonic()
            b0 = bpf_runs(g and g.pid)
            w = wrk(fe.addr, conns, SECONDS, CLIENT_PATH)
            b1 = bpf_runs(g and g.pid)
            c1 = {k: threads_cpu_seconds(p) for k, p in procs.items()}
            m1, o1, t1 = machine_busy_seconds(), own_cpu_seconds(), time.monotonic()
            count(w, conns)
            n = max(w["requests"], 1)
            r = dict(w, tracer_cpu_us=0.0)
            for k in procs:
                r[f"{k}_cpu_us"] = (c1[k] - c0[k]) * 1e6 / n
            # Everything else the machine did meanwhile: other people's work, in CPUs.
            ours = sum(c1[k] - c0[k] for k in procs) + o1 - o0
            r["other_load_cpus"] = max(m1 - m0 - ours, 0.0) / (t1 - t0)
            if g and bpf_stats_on():
                progs = bpf_delta(b0, b1, names)
                r["bpf_us_per_call"] = sum(t for _, t in progs.values()) / 1e3 / n
                r["bpf_programs"] = {k: {"runs_per_call": c / n, "ns_per_run": t / c}
                                     for k, (c, t) in progs.items() if c}
            results[conns] = r
    finally:
        if g:
            g.stop()
        if fe:
            fe.stop()
        be.stop()
    if g:
        life.update(gospan_summary(g))
        life.update(propagation_counts(g))
    life["problems"] = check_propagation(cfg, life)
    return results, life


def backend_header_cost(bins, receiver):
    """The backend alone under wrk at 64 connections, on the frontend's CPU, its requests
    without and with a Traceparent line in turn: once untraced (what Go's parsing of one more
    header costs), once with gospan attached, trace context on (its entry program then also
    reads and parses the line). In the chain the backend waits for the frontend, and its CPU
    per call moves with the frontend's pace, which propagation changes; here wrk sets it."""
    out = {}
    for cfg in ("untraced", "prop"):
        be = start_service(bins["backend"])
        g = None
        runs = {"without": [], "with": []}
        try:
            if cfg == "prop":
                g = start_gospan(be.pid, receiver)
            wrk(be.addr, 64, WARMUP, "/work/42", CALL_HEADERS)
            for rnd in range(ROUNDS):
                for tp in (False, True) if rnd % 2 == 0 else (True, False):
                    c0 = threads_cpu_seconds(be.pid)
                    w = wrk(be.addr, 64, HEADER_SECONDS, "/work/42",
                            CALL_HEADERS + ([TRACEPARENT] if tp else []))
                    c1 = threads_cpu_seconds(be.pid)
                    runs["with" if tp else "without"].append(
                        dict(w, backend_cpu_us=(c1 - c0) * 1e6 / max(w["requests"], 1)))
        finally:
            if g:
                g.stop()
            be.stop()
        out[cfg] = x = summarize_header_runs(runs)
        log(f"  backend alone, {cfg}, 64 connections: {x['without']['backend_cpu_us']:.2f} us/call "
            f"without a traceparent, {x['with']['backend_cpu_us']:.2f} with it "
            f"({x['delta_us']:+.2f}, paired {fmt(x['delta_us_paired'], '+.2f')})")
    return out


def summarize_header_runs(runs):
    """Medians of the backend-alone runs without and with the line, and their difference."""
    x = {"runs": runs}
    for k in ("without", "with"):
        x[k] = {m: median([r[m] for r in runs[k]]) for m in ("rps", "backend_cpu_us")}
    x["delta_us"] = x["with"]["backend_cpu_us"] - x["without"]["backend_cpu_us"]
    d = [a["backend_cpu_us"] - b["backend_cpu_us"] for a, b in zip(runs["with"], runs["without"])]
    x["delta_us_paired"] = median(d)
    x["delta_us_range"] = [min(d), max(d)] if d else None
    return x


def measure(bins, receiver):
    log(f"client: {ROUNDS} rounds x {len(CLIENT_CONFIGS)} configurations x connections {CONNS}, "
        f"{SECONDS} s each; wrk -> frontend GET {CLIENT_PATH} -> backend; "
        + (f"frontend on CPU {CPU_SERVICE}, backend on CPU {CPU_BACKEND}, wrk on CPU {CPU_WRK}, "
           f"gospan and receiver on CPU {CPU_OTHER}" if PIN else "nothing pinned"))
    t_start = time.monotonic()
    load0 = Path("/proc/loadavg").read_text().split()[:3]
    runs = {c: {n: [] for n in CONNS} for c in CLIENT_CONFIGS}
    lives = {c: [] for c in CLIENT_CONFIGS}
    failed = []
    for rnd in range(ROUNDS):
        k = rnd % len(CLIENT_CONFIGS)
        for cfg in CLIENT_CONFIGS[k:] + CLIENT_CONFIGS[:k]:
            res, life = measure_client(cfg, bins, receiver)
            for n in CONNS:
                runs[cfg][n].append(res[n])
            lives[cfg].append(life)
            log(f"  round {rnd + 1} {cfg:8s} " + "  ".join(
                f"c{n}: {res[n]['rps']:6.0f}/s cpu {res[n]['frontend_cpu_us']:5.1f}+"
                f"{res[n]['backend_cpu_us']:4.1f}+{res[n]['tracer_cpu_us']:4.1f} us"
                for n in CONNS) + (f"  sent {life['sent']}/{life['calls']}" if "sent" in life
                                   else ""))
            for p in life["problems"]:
                failed.append(f"round {rnd + 1}, {CLIENT_NAMES[cfg]}: {p}")
                log(f"  CLIENT PART FAILED: round {rnd + 1}, {cfg}: {p}")

    keys = ["rps", "p50_us", "p99_us", "frontend_cpu_us", "backend_cpu_us", "tracer_cpu_us",
            "receiver_cpu_us", "bpf_us_per_call", "other_load_cpus"]
    med = {}
    for cfg in CLIENT_CONFIGS:
        med[cfg] = {}
        for n in CONNS:
            m = {k: median([r.get(k) for r in runs[cfg][n]]) for k in keys}
            progs = {}
            for r in runs[cfg][n]:
                for name, v in (r.get("bpf_programs") or {}).items():
                    progs.setdefault(name, []).append(v)
            m["bpf_programs"] = {name: {k: median([v[k] for v in vs]) for k in vs[0]}
                                 for name, vs in progs.items()}
            med[cfg][n] = m
    added = {cfg: {} for cfg in CLIENT_CONFIGS[1:]}
    for cfg in CLIENT_CONFIGS[1:]:
        for n in CONNS:
            base, m = med["untraced"][n], med[cfg][n]
            added[cfg][n] = {k: m[k] - base[k] for k in ("frontend_cpu_us", "backend_cpu_us")}
            added[cfg][n]["total_cpu_us"] = (added[cfg][n]["frontend_cpu_us"]
                                            + added[cfg][n]["backend_cpu_us"] + m["tracer_cpu_us"])
    out = {"rounds": ROUNDS, "seconds": SECONDS, "path": CLIENT_PATH, "pinned": PIN,
           "runs": runs, "lifetimes": lives, "median": med, "added": added,
           "propagation": client_propagation_cost(runs, med),
           "backend_alone": backend_header_cost(bins, receiver), "header_seconds": HEADER_SECONDS,
           "loadavg": [load0, Path("/proc/loadavg").read_text().split()[:3]],
           "part_seconds": time.monotonic() - t_start}
    if failed:
        out["failed"] = failed
    for n in CONNS:
        p = out["propagation"][n]
        log(f"  propagation on - off, {n} connection{'s' if n > 1 else ''}: frontend "
            f"{p['frontend_cpu_us']:+.2f} us/call (paired "
            f"{fmt(p['frontend_cpu_us_paired'], '+.2f')}), backend {p['backend_cpu_us']:+.2f} us, "
            f"BPF {fmt(p['bpf_us_per_call'], '+.2f')} us; "
            f"{SK_MSG} {fmt(p['sk_msg_ns_per_run'], '.0f')} ns/run")
    return out


def client_propagation_cost(runs, med):
    """Propagation on minus off per call, for each connection count: the difference of the
    medians, and the median of the rounds' own differences (both ran in every round)."""
    out = {}
    for n in CONNS:
        on, off = med["prop"][n], med["noprop"][n]
        x = {}
        for k in ("frontend_cpu_us", "backend_cpu_us", "tracer_cpu_us", "rps", "p50_us"):
            x[k] = on[k] - off[k]
            d = [a[k] - b[k] for a, b in zip(runs["prop"][n], runs["noprop"][n])
                 if a.get(k) is not None and b.get(k) is not None]
            x[k + "_paired"] = median(d)
            x[k + "_paired_range"] = [min(d), max(d)] if d else None
        x["bpf_us_per_call"] = (on["bpf_us_per_call"] - off["bpf_us_per_call"]
                                if on["bpf_us_per_call"] is not None
                                and off["bpf_us_per_call"] is not None else None)
        # Each program's time per call, on and off (a program off is one that is not loaded).
        x["bpf_ns_per_call"] = {}
        for name in sorted(set(on["bpf_programs"]) | set(off["bpf_programs"])):
            a, b = on["bpf_programs"].get(name), off["bpf_programs"].get(name)
            x["bpf_ns_per_call"][name] = [b and b["runs_per_call"] * b["ns_per_run"],
                                          a and a["runs_per_call"] * a["ns_per_run"]]
        for key, name in (("sk_msg", SK_MSG), ("marker", MARKER), ("sockops", SOCKOPS)):
            p = on["bpf_programs"].get(name) or {}
            x[f"{key}_runs_per_call"] = p.get("runs_per_call")
            x[f"{key}_ns_per_run"] = p.get("ns_per_run")
        out[n] = x
    return out


def section(cl):
    """The client part's section of the report."""
    med, added, prop = cl["median"], cl["added"], cl["propagation"]
    L = ["## Outgoing trace context", "",
         f"What adding `Traceparent` to outgoing calls costs. `wrk -t1 GET {cl['path']}` to "
         "`examples/frontend`, whose handler makes one keep-alive net/http call to "
         "`examples/backend`'s `/work/42` per request; the three configurations alternated over "
         f"{cl['rounds']} rounds, {cl['seconds']} s per run after a {WARMUP} s warm-up, a fresh "
         "frontend and backend each time; medians. One gospan traces both processes "
         "(`--pid FRONTEND --pid BACKEND`), exporting to `bench/receiver`. *Off*: "
         "`OTEL_PROPAGATORS=none` (no request marker, no sockops or sk_msg program; client spans "
         "are still made). *On*: the default, the request marker (`mark_request`) plus the "
         "socket-layer writer (`track_client_sockets` on the cgroup, `write_trace_context` on "
         "the sockhash). "
         + (f"The frontend runs on CPU {CPU_SERVICE}, the backend, wrk, gospan and the receiver "
            f"on CPU {CPU_WRK}. " if cl["pinned"] and CPU_OTHER == CPU_WRK else
            f"The frontend runs on CPU {CPU_SERVICE}, wrk on CPU {CPU_WRK}, the backend, gospan "
            f"and the receiver on CPU {CPU_OTHER}. " if cl["pinned"] else "Nothing is pinned. ")
         + "CPU per call is each process's on-CPU time (`/proc/PID/task/*/schedstat`) over the "
         "run divided by the calls (one per request wrk completed); the uprobe traps, the "
         "sk_msg program (in the sending thread's `sendmsg`) and the BPF programs are in the "
         "traced processes' figures. *Added* is over untraced: frontend / backend / both plus "
         "gospan's own process. Each run is checked: the backend must echo a traceparent for a "
         "call with propagation on and none with it off, and gospan's summary must count "
         "trace context sent for every call (on) or none (off).", ""]
    if cl.get("failed"):
        L += ["**The check failed** (these figures are not to be trusted):", ""] + \
            [f"- {p}" for p in cl["failed"]] + [""]
    L += ["| connections | configuration | calls/s | p50 µs | frontend CPU µs/call | "
          "backend CPU µs/call | gospan CPU µs/call | BPF µs/call | added µs/call "
          "(frontend / backend / all) |",
          "|---:|---|---:|---:|---:|---:|---:|---:|---:|"]
    for n in CONNS:
        for cfg in CLIENT_CONFIGS:
            x, a = med[cfg][n], added.get(cfg, {}).get(n)
            L.append(f"| {n} | {CLIENT_NAMES[cfg]} | {fmt(x['rps'], '.0f')} | "
                     f"{fmt(x['p50_us'], '.0f')} | {fmt(x['frontend_cpu_us'], '.2f')} | "
                     f"{fmt(x['backend_cpu_us'], '.2f')} | "
                     + (f"{fmt(x['tracer_cpu_us'], '.2f')} | {fmt(x['bpf_us_per_call'], '.2f')} | "
                        f"{a['frontend_cpu_us']:.2f} / {a['backend_cpu_us']:.2f} / "
                        f"{a['total_cpu_us']:.2f} |" if a else "- | - | - |"))
        p = prop[n]
        L.append(f"| {n} | **on − off** | {p['rps']:+.0f} | {p['p50_us']:+.0f} | "
                 f"**{fmt(p['frontend_cpu_us_paired'], '+.2f')}** ({p['frontend_cpu_us']:+.2f}) | "
                 f"**{fmt(p['backend_cpu_us_paired'], '+.2f')}** ({p['backend_cpu_us']:+.2f}) | "
                 f"{p['tracer_cpu_us']:+.2f} | {fmt(p['bpf_us_per_call'], '+.2f')} | |")
    L += ["", "*on − off*: calls/s, p50, gospan and BPF: the difference of the medians; CPU of "
          "the frontend and the backend: the median of each round's own difference (on and off "
          "run less than a minute apart), in brackets the difference of the medians.", ""]
    names = sorted({k for n in CONNS for k in prop[n]["bpf_ns_per_call"]})
    if names:
        L += ["gospan's programs per call, from the kernel's run counters "
              "(`kernel.bpf_stats_enabled=1`; one gospan for both processes, so the server "
              "programs count the frontend's and the backend's requests together):", "",
              "| program | " + " | ".join(f"{n} conn.: runs/call on | ns/run on | ns/call off → on"
                                         for n in CONNS) + " |",
              "|---|" + "---:|---:|---:|" * len(CONNS)]
        for name in names:
            row = [f"`{name}`"]
            for n in CONNS:
                p = med["prop"][n]["bpf_programs"].get(name) or {}
                off, on = prop[n]["bpf_ns_per_call"].get(name, [None, None])
                row += [fmt(p.get("runs_per_call"), ".2f", "-"),
                        fmt(p.get("ns_per_run"), ".0f", "-"),
                        f"{fmt(off, '.0f', '-')} → {fmt(on, '.0f', '-')}"]
            L.append("| " + " | ".join(row) + " |")
        L.append("")
    ba = cl.get("backend_alone")
    if ba:
        L += [f"The backend alone: `examples/backend` on CPU {CPU_SERVICE} under "
              f"`wrk -c64 GET /work/42` (wrk sets its pace, not the frontend) with the header "
              f"lines of the frontend's calls "
              f"({', '.join(h.split(':')[0] for h in CALL_HEADERS)}), its requests without and "
              f"with a `Traceparent` line in turn, {cl.get('header_seconds', HEADER_SECONDS)} s "
              f"per run, {cl['rounds']} "
              "rounds; untraced (Go's parsing of the line), then with gospan attached, trace "
              "context on (its entry program also reads and parses it). Medians; in brackets "
              "the median of each round's own difference.", "",
              "| backend | calls/s without / with | CPU µs/call without | with | with − without |",
              "|---|---:|---:|---:|---:|"]
        for cfg, x in ba.items():
            L.append(f"| {CLIENT_NAMES[cfg] if cfg == 'untraced' else 'gospan, trace context on'}"
                     f" | {x['without']['rps']:.0f} / {x['with']['rps']:.0f} | "
                     f"{x['without']['backend_cpu_us']:.2f} | {x['with']['backend_cpu_us']:.2f} | "
                     f"**{x['delta_us']:+.2f}** ({fmt(x['delta_us_paired'], '+.2f')}) |")
        L.append("")
    on = cl["lifetimes"]["prop"]
    sent = sum(x.get("sent", 0) for x in on)
    calls = sum(x["calls"] for x in on)
    ns = {}
    for x in on:
        for k, v in (x.get("not_sent") or {}).items():
            ns[k] = ns.get(k, 0) + v
    off_sent = sum(x.get("sent", 0) for x in cl["lifetimes"]["noprop"])
    load = [median([r.get("other_load_cpus") for c in CLIENT_CONFIGS for r in cl["runs"][c][n]])
            for n in CONNS]
    L += [f"Trace context sent with propagation on: {sent} times for {calls} calls (wrk does not "
          "count the calls in flight when it stops); not sent: "
          + (", ".join(f"{k} {v}" for k, v in ns.items() if v) or "none")
          + f". With it off: {off_sent}. Other work on the machine during the runs (all CPU "
          "time but that of the processes measured and wrk), median: "
          + ", ".join(f"{fmt(x, '.2f')} CPUs at {n} conn." for x, n in zip(load, CONNS))
          + f"; load average {' '.join(cl['loadavg'][0])} at the start of the part, "
          f"{' '.join(cl['loadavg'][1])} at its end. The part took "
          f"{cl['part_seconds']:.0f} s.", ""]
    return L


def findings(cl, results):
    """The client part's findings, from its figures."""
    p1, p64 = cl["propagation"][1], cl["propagation"][64]

    def outside(p):
        return None if p["bpf_us_per_call"] is None or p["frontend_cpu_us_paired"] is None \
            else p["frontend_cpu_us_paired"] - p["bpf_us_per_call"]
    return [
        f"Outgoing trace context costs the calling process "
        f"{fmt(p1['frontend_cpu_us_paired'], '.1f')} µs of CPU per call at one connection and "
        f"{fmt(p64['frontend_cpu_us_paired'], '.1f')} µs at 64: the medians of each round's own "
        f"on − off difference, which ranged over {spread(p1.get('frontend_cpu_us_paired_range'))}"
        f" and {spread(p64.get('frontend_cpu_us_paired_range'))} µs (the difference of the "
        f"medians: {p1['frontend_cpu_us']:.1f} and {p64['frontend_cpu_us']:.1f} µs). gospan's "
        "BPF programs' own time accounts for "
        f"{fmt(p1['bpf_us_per_call'], '.1f')} and {fmt(p64['bpf_us_per_call'], '.1f')} µs of "
        f"that (both processes' programs): the sk_msg program `{SK_MSG}` runs "
        f"{fmt(p64['sk_msg_runs_per_call'], '.2f')} times per call at "
        f"{fmt(p1['sk_msg_ns_per_run'], '.0f')} / {fmt(p64['sk_msg_ns_per_run'], '.0f')} ns "
        f"(1 / 64 connections), the marker `{MARKER}` "
        f"{fmt(p64['marker_runs_per_call'], '.2f')} times at "
        f"{fmt(p64['marker_ns_per_run'], '.0f')} ns (at the first `Header.writeSubset` call "
        "of `(*Request).write`, a CALL the kernel emulates), and the sockops program "
        f"{fmt(p64['sockops_runs_per_call'], '.3f')} times per call (connection events only, of "
        "every process in the cgroup). The rest, "
        f"{fmt(outside(p1), '.1f')} and {fmt(outside(p64), '.1f')} µs, is outside the "
        "programs: the marker's uprobe trap (an emulated CALL, about 0.7 µs here) and the "
        "kernel's sk_msg path, which a socket in a sockhash takes for every message it sends "
        "(the message is copied into the sk_msg's pages; the inserted bytes get one of their "
        "own); the two were not measured apart.",
        client_backend_finding(cl)]


def spread(r):
    """A range of per-round differences, "a to b"."""
    return "n/a" if not r else f"{r[0]:.1f} to {r[1]:.1f}"


def client_backend_finding(cl):
    p1, p64 = cl["propagation"][1], cl["propagation"][64]
    u1, u64 = cl["median"]["untraced"][1], cl["median"]["untraced"][64]
    ba = cl.get("backend_alone") or {}
    bu, bg = ba.get("untraced"), ba.get("prop")
    return (
        f"In the chain the backend's CPU per call rises by {p1['backend_cpu_us']:.1f} µs at one "
        f"connection and {p64['backend_cpu_us']:.1f} µs at 64 with propagation on, but that is "
        "not what the header costs it: the backend waits for the frontend (it idles part of "
        "the time even at 64 connections), and its CPU per call follows the frontend's pace, "
        "parking and waking included (untraced, the same calls cost it "
        f"{u1['backend_cpu_us']:.1f} µs at one connection and {u64['backend_cpu_us']:.1f} µs at "
        "64)."
        + (f" Driven by wrk alone, the `Traceparent` line costs it {bu['delta_us']:+.2f} µs per "
           f"call untraced (Go's parsing of one more header; rounds "
           f"{spread(bu.get('delta_us_range'))} µs) and {bg['delta_us']:+.2f} µs with gospan "
           f"attached (its entry program also reads and parses the line; rounds "
           f"{spread(bg.get('delta_us_range'))} µs)"
           + (": within the noise of the runs here, far below what the chain shows."
              if all(x.get("delta_us_range") and x["delta_us_range"][0] <= 0
                     <= x["delta_us_range"][1] for x in (bu, bg)) else ".")
           if bu and bg else ""))


def load(cl):
    """CL as results.json holds it, its connection counts made numbers again, summed up."""
    for k in ("runs", "median", "added"):
        cl[k] = {c: {int(n): v for n, v in d.items()} for c, d in cl[k].items()}
    cl["propagation"] = client_propagation_cost(cl["runs"], cl["median"])
    for cfg, x in (cl.get("backend_alone") or {}).items():
        cl["backend_alone"][cfg] = summarize_header_runs(x["runs"])


def per_call(cl, results):
    """The cost-per-call rows of the HTTP client: the frontend's request and its call with trace
    context out, over the frontend untraced; and trace context alone, on minus off."""
    add, med, prop = cl["added"]["prop"], cl["median"]["prop"], cl["propagation"]
    att = next((x["attached"] for x in cl["lifetimes"]["prop"] if x.get("attached")), None)
    return [{"family": "HTTP client (net/http), trace context out",
             "call": "a request to the frontend and its call, 1 / 64 connections",
             "added": [add[n]["frontend_cpu_us"] for n in CONNS],
             "tracer": [med[n]["tracer_cpu_us"] for n in CONNS],
             "steps": steps_text(att, ("net/http", "request served"), ("net/http", "call made")),
             "section": "Outgoing trace context"},
            {"family": "trace context out (on − off)", "call": "a call, 1 / 64 connections",
             "added": [prop[n]["frontend_cpu_us_paired"] for n in CONNS],
             "tracer": [prop[n]["tracer_cpu_us_paired"] for n in CONNS],
             "steps": "-", "section": "Outgoing trace context"}]
