"""The grpc part: unary gRPC calls (bench/grpcload -> bench/grpcserver), untraced, with gospan and
with otelgrpc and the OpenTelemetry Go SDK."""

import json
import re
import time
from pathlib import Path

from .runner import (CPU_OTHER, CPU_SERVICE, CPU_WRK, OUT, PIN, REPO, ROUNDS, SECONDS, WARMUP,
                     bpf_figures, bpf_runs, bpf_stats_on, cpu_seconds, ensure_bpf_stats, fmt,
                     gospan_summary, log, machine_busy_seconds, median, own_cpu_seconds, pinned,
                     prog_names, run, start_gospan, start_service, steps_text)

# The Go programs the part runs, built into build/bench: {name: source directory}.
GO_PROGRAMS = {"grpcserver": "bench/grpcserver", "grpcload": "bench/grpcload"}
GRPCLOAD = OUT / "grpcload"
# The grpc part: bench/grpcload -> bench/grpcserver, unary calls with a small payload on one
# keep-alive connection, one call in flight and 64 (64 HTTP/2 streams on the one connection).
GRPC_CONFIGS = ["untraced", "gospan", "otelgrpc"]
GRPC_NAMES = {"untraced": "untraced", "gospan": "gospan",
              "otelgrpc": "otelgrpc + OpenTelemetry Go SDK"}
GRPC_STREAMS = [1, 64]
GRPC_CONNS = 1
GRPC_SIZE = 32  # bytes of payload in each request and each response
GRPC_METHOD = "grpc.testing.TestService/UnaryCall"
GRPC_CHECK_CALLS = 200  # calls whose spans gospan's console exporter prints, before the rounds


def grpcload(addr, streams, seconds=None, calls=None):
    """bench/grpcload's unary calls to ADDR: STREAMS calls in flight on GRPC_CONNS connections,
    for SECONDS or CALLS calls; its JSON line, with "requests" for the calls the server answered
    (those in flight at the end are waited for and counted)."""
    argv = [GRPCLOAD, "-addr", addr, "-conns", str(GRPC_CONNS), "-concurrency", str(streams),
            "-size", str(GRPC_SIZE)]
    argv += ["-calls", str(calls)] if calls else ["-duration", f"{seconds}s"]
    out = run(pinned(CPU_WRK, argv), timeout=(seconds or 10) + 60)
    res = json.loads(out.strip().splitlines()[-1])
    res["requests"] = res["calls"]
    return res


def start_grpcserver(bins, receiver, otel):
    """A fresh bench/grpcserver on the service's CPU; with OTEL, otelgrpc and the SDK on,
    exporting to RECEIVER."""
    if otel:
        return start_service(bins["grpcserver"], receiver,
                             {"OTEL_SERVICE_NAME": "grpcserver"}, args=["-otel"])
    return start_service(bins["grpcserver"])


def grpc_span_check(bins, receiver):
    """What gospan makes of GRPC_CHECK_CALLS unary calls, read from its console exporter: one
    SERVER span named GRPC_METHOD per call is right; anything else is counted by kind and name."""
    svc = start_grpcserver(bins, receiver, False)
    g = None
    try:
        g = start_gospan(svc.pid, receiver, {"OTEL_TRACES_EXPORTER": "console"})
        w = grpcload(svc.addr, 8, calls=GRPC_CHECK_CALLS)
    finally:
        if g:
            g.stop()
        svc.stop()
    spans = {}
    for m in re.finditer(r"^\s+(SERVER|CLIENT|INTERNAL|PRODUCER|CONSUMER) (\S+)(.*)$", g.text(),
                         re.M):
        key = f"{m.group(1)} {m.group(2)}" + (" ERROR" if " ERROR" in m.group(3) else "")
        spans[key] = spans.get(key, 0) + 1
    return {"calls": w["requests"], "errors": w["errors"], "spans": spans,
            "summary": gospan_summary(g), "attached": g.attached,
            "warnings": [x for x in g.text().splitlines()
                         if x.startswith("gospan: ") and not re.match(
                             r"gospan: (attached|outgoing trace context|probe hits|summary)", x)]}


def measure_grpc(cfg, bins, receiver):
    """One round of one configuration: a fresh grpcserver, gospan (if the configuration is
    gospan), a warm-up, then a grpcload run per number of streams with the CPU of every process
    read around it."""
    svc = start_grpcserver(bins, receiver, cfg == "otelgrpc")
    tracer, names, results = None, {}, {}
    life = {"requests": 0, "errors": 0}
    spans_before = receiver.spans()
    try:
        if cfg == "gospan":
            tracer = start_gospan(svc.pid, receiver)
            names = prog_names()
        w = grpcload(svc.addr, max(GRPC_STREAMS), seconds=WARMUP)
        life["requests"] += w["requests"]
        life["errors"] += w["errors"]
        for streams in GRPC_STREAMS:
            ensure_bpf_stats()
            tpid = tracer.pid if tracer else None
            s0, r0 = cpu_seconds(svc.pid), cpu_seconds(receiver.proc.pid)
            t0 = cpu_seconds(tpid) if tpid else 0.0
            b0 = bpf_runs(tpid)
            m0, o0, c0 = machine_busy_seconds(), own_cpu_seconds(), time.monotonic()
            w = grpcload(svc.addr, streams, seconds=SECONDS)
            m1, o1, c1 = machine_busy_seconds(), own_cpu_seconds(), time.monotonic()
            s1, r1 = cpu_seconds(svc.pid), cpu_seconds(receiver.proc.pid)
            t1 = cpu_seconds(tpid) if tpid else 0.0
            b1 = bpf_runs(tpid)
            stats_kept = bpf_stats_on()
            n = max(w["requests"], 1)
            life["requests"] += w["requests"]
            life["errors"] += w["errors"]
            if w.get("first_error"):
                life.setdefault("first_error", w["first_error"])
            r = {k: w[k] for k in ("requests", "errors", "rps", "p50_us", "p90_us", "p99_us",
                                   "p999_us")}
            r["service_cpu_us"] = (s1 - s0) * 1e6 / n
            r["tracer_cpu_us"] = (t1 - t0) * 1e6 / n
            r["receiver_cpu_us"] = (r1 - r0) * 1e6 / n
            # Everything else the machine did meanwhile (other people's work), in CPUs: the
            # service, the tracer, the receiver, this script and grpcload are ours.
            ours = (s1 - s0) + (t1 - t0) + (r1 - r0) + (o1 - o0)
            r["other_load_cpus"] = max(m1 - m0 - ours, 0.0) / (c1 - c0)
            if tracer and stats_kept:
                r.update(bpf_figures(b0, b1, names, n, "rpc"))
            results[streams] = r
    finally:
        if tracer:
            tracer.stop()
        svc.stop()  # the SDK flushes its queue at shutdown
    if tracer:
        life.update(gospan_summary(tracer))
        life["warnings"] = [x for x in tracer.text().splitlines() if x.startswith("gospan: ")
                            and re.search(r"\b(cannot|error|failed|lost|warning)\b", x)]
    if cfg != "untraced":
        life["received"] = receiver.wait_for(spans_before + life["requests"]) - spans_before
    return results, life, tracer.attached if tracer else None


def summarize_grpc(gr):
    """Medians, added CPU over untraced and the gospan/otelgrpc ratios, from GR's runs."""
    runs, configs = gr["runs"], gr["configs"]
    keys = ["rps", "p50_us", "p90_us", "p99_us", "p999_us", "service_cpu_us", "tracer_cpu_us",
            "receiver_cpu_us", "bpf_runs_per_rpc", "bpf_ns_per_run", "bpf_us_per_rpc",
            "other_load_cpus"]
    med = {}
    for cfg in configs:
        med[cfg] = {}
        for n in GRPC_STREAMS:
            m = {k: median([r.get(k) for r in runs[cfg][n]]) for k in keys}
            progs = {}
            for r in runs[cfg][n]:
                for name, v in (r.get("bpf_programs") or {}).items():
                    progs.setdefault(name, []).append(v)
            m["bpf_programs"] = {name: {k: median([v[k] for v in vs]) for k in vs[0]}
                                 for name, vs in progs.items()}
            med[cfg][n] = m
    added, ratio = {}, {}
    for cfg in configs[1:]:
        added[cfg] = {}
        for n in GRPC_STREAMS:
            base, m = med["untraced"][n], med[cfg][n]
            # The median of the rounds' own differences too: every configuration ran in every
            # round, close in time, so other work on the machine weighs less on it.
            paired = [a["service_cpu_us"] - b["service_cpu_us"]
                      for a, b in zip(runs[cfg][n], runs["untraced"][n])]
            added[cfg][n] = {"service_cpu_us": m["service_cpu_us"] - base["service_cpu_us"],
                             "total_cpu_us": m["service_cpu_us"] + m["tracer_cpu_us"]
                             - base["service_cpu_us"],
                             "service_cpu_us_paired": median(paired),
                             "p50_us": m["p50_us"] - base["p50_us"],
                             "p99_us": m["p99_us"] - base["p99_us"]}
    if "gospan" in added and "otelgrpc" in added:
        for n in GRPC_STREAMS:
            g, o = added["gospan"][n], added["otelgrpc"][n]
            ratio[n] = {k: g[k] / o[k] if o[k] and o[k] > 0 else None
                        for k in ("service_cpu_us", "total_cpu_us", "service_cpu_us_paired")}
    gr["median"], gr["added"], gr["gospan_over_otelgrpc"] = med, added, ratio
    spans = {}
    for cfg in configs[1:]:
        lives = gr["lifetimes"][cfg]
        s = {k: sum(x.get(k, 0) for x in lives) for k in ("requests", "received", "captured",
                                                           "exported", "dropped")}
        s["per_rpc"] = s["received"] / s["requests"] if s["requests"] else None
        spans[cfg] = s
    gr["spans"] = spans
    return gr


def grpc_problems(gr):
    """What is wrong with the part's runs; any of it fails the part (and make bench)."""
    bad = []
    chk = gr.get("check") or {}
    want = f"SERVER {GRPC_METHOD}"
    if chk:
        got = chk["spans"].get(want, 0)
        other = {k: v for k, v in chk["spans"].items() if k != want}
        if chk["errors"] or got != chk["calls"] or other:
            bad.append(f"span check: {chk['calls']} calls ({chk['errors']} failed), gospan's "
                       f"console exporter printed {got} '{want}' spans"
                       + (", and " + ", ".join(f"{v} '{k}'" for k, v in other.items())
                          if other else ""))
    for cfg in gr["configs"]:
        for rnd, life in enumerate(gr["lifetimes"][cfg]):
            if life.get("errors"):
                bad.append(f"round {rnd + 1}, {GRPC_NAMES[cfg]}: {life['errors']} calls failed "
                           f"({life.get('first_error', '?')})")
            if cfg == "gospan" and life.get("received") != life["requests"]:
                why = f" ({life['reasons']})" if life.get("reasons") else ""
                bad.append(f"round {rnd + 1}, gospan: {life['requests']} RPCs served, the "
                           f"receiver got {life.get('received')} spans (gospan captured "
                           f"{life.get('captured')}, exported {life.get('exported')}, dropped "
                           f"{life.get('dropped')}{why})")
    return bad


def measure(bins, receiver):
    log(f"grpc: {ROUNDS} rounds x {len(GRPC_CONFIGS)} configurations x streams {GRPC_STREAMS} on "
        f"{GRPC_CONNS} connection, {SECONDS} s each; grpcload -> grpcserver {GRPC_METHOD}, "
        f"{GRPC_SIZE}-byte payloads; "
        + (f"service on CPU {CPU_SERVICE}, grpcload on CPU {CPU_WRK}, gospan and receiver on CPU "
           f"{CPU_OTHER}" if PIN else "nothing pinned"))
    t_start = time.monotonic()
    load0 = Path("/proc/loadavg").read_text().split()[:3]
    check = grpc_span_check(bins, receiver)
    log(f"  span check: {check['calls']} calls, gospan printed "
        + (", ".join(f"{v} {k}" for k, v in check["spans"].items()) or "no span"))
    configs = list(GRPC_CONFIGS)
    runs = {c: {n: [] for n in GRPC_STREAMS} for c in configs}
    lives = {c: [] for c in configs}
    attached = None
    for rnd in range(ROUNDS):
        k = rnd % len(configs)
        for cfg in configs[k:] + configs[:k]:
            res, life, att = measure_grpc(cfg, bins, receiver)
            for n in GRPC_STREAMS:
                runs[cfg][n].append(res[n])
            lives[cfg].append(life)
            attached = att or attached
            log(f"  round {rnd + 1} {cfg:8s} " + "  ".join(
                f"s{n}: {res[n]['rps']:6.0f}/s p50 {res[n]['p50_us']:5.0f} us "
                f"cpu {res[n]['service_cpu_us']:5.1f}+{res[n]['tracer_cpu_us']:4.1f} us"
                + (f" bpf {res[n]['bpf_runs_per_rpc']:.2f}/rpc" if "bpf_runs_per_rpc" in res[n]
                   else "")
                for n in GRPC_STREAMS)
                + (f"  spans {life['received']}/{life['requests']}" if "received" in life else "")
                + (f" dropped {life['dropped']}" if life.get("dropped") else "")
                + (f"  errors {life['errors']}" if life["errors"] else ""))
    out = {"rounds": ROUNDS, "seconds": SECONDS, "pinned": PIN, "streams": GRPC_STREAMS,
           "conns": GRPC_CONNS, "size": GRPC_SIZE, "method": GRPC_METHOD, "configs": configs,
           "runs": runs, "lifetimes": lives, "attached": attached, "check": check,
           "versions": grpc_versions(),
           "loadavg": [load0, Path("/proc/loadavg").read_text().split()[:3]],
           "part_seconds": time.monotonic() - t_start}
    summarize_grpc(out)
    failed = grpc_problems(out)
    if failed:
        out["failed"] = failed
        for p in failed:
            log(f"  GRPC PART FAILED: {p}")
    for n in GRPC_STREAMS:
        a, r = out["added"], out["gospan_over_otelgrpc"].get(n) or {}
        log(f"  {n} stream{'s' if n > 1 else ''}: added service CPU per RPC gospan "
            f"{a['gospan'][n]['service_cpu_us']:+.2f} us (+{a['gospan'][n]['total_cpu_us']:.2f} "
            f"with its process), otelgrpc+SDK {a['otelgrpc'][n]['service_cpu_us']:+.2f} us; "
            f"gospan/otelgrpc {fmt(r.get('service_cpu_us'), '.2f')} "
            f"({fmt(r.get('total_cpu_us'), '.2f')} with gospan's process)")
    log(f"  grpc part: {out['part_seconds']:.0f} s")
    return out


def grpc_versions():
    """The module versions bench/grpcserver is built with, from its go.mod."""
    text = (REPO / "bench" / "grpcserver" / "go.mod").read_text()
    out = {}
    for mod, key in (("google.golang.org/grpc", "grpc"),
                     ("go.opentelemetry.io/contrib/instrumentation/google.golang.org/grpc/otelgrpc",
                      "otelgrpc"),
                     ("go.opentelemetry.io/otel/sdk", "sdk")):
        m = re.search(rf"^\s*{re.escape(mod)} (\S+)", text, re.M)
        out[key] = m.group(1) if m else "?"
    return out


def section(gr):
    """The grpc part's section of the report."""
    med, added, ratio, v = gr["median"], gr["added"], gr["gospan_over_otelgrpc"], gr["versions"]
    streams = gr["streams"]
    load0, load1 = gr["loadavg"]
    other = median([med[c][n]["other_load_cpus"] for c in gr["configs"] for n in streams])
    busy = float(load0[0]) >= 0.7 or (other or 0) >= 0.25

    def inflight(n):
        return "one call in flight" if n == 1 else f"{n} calls in flight ({n} streams)"

    L = ["## gRPC (unary)", "",
         f"What tracing a unary gRPC call costs. `bench/grpcload` calls `bench/grpcserver`'s "
         f"`{gr['method']}` (grpc-go's interop TestService, grpc-go {v['grpc']}) with "
         f"{gr['size']} bytes of payload each way, over one keep-alive connection (one HTTP/2 "
         "connection): " + " and ".join(inflight(n) for n in streams) + " on it. The three "
         f"configurations alternated over {gr['rounds']} rounds, a fresh service each time, "
         f"{gr['seconds']} s per run after a {WARMUP} s warm-up; medians. *untraced*: the "
         "service alone. *gospan*: gospan attached to it, exporting to `bench/receiver`. "
         f"*otelgrpc + OpenTelemetry Go SDK*: the same binary with `-otel`, instrumented by hand: "
         f"otelgrpc {v['otelgrpc']}'s stats handler on the server, the SDK {v['sdk']} with its "
         "batch span processor and OTLP/HTTP protobuf exporter (as `bench/otelsdk`), exporting "
         "to the same receiver; its spans are made and exported inside the service, so all it "
         "costs is in the service's figure. "
         + (f"The service runs on CPU {CPU_SERVICE}, grpcload on CPU {CPU_WRK}, gospan and the "
            f"receiver on CPU {CPU_OTHER}. " if gr["pinned"] else "Nothing is pinned. ")
         + "CPU per RPC is utime+stime (`/proc/PID/stat`) over the run divided by the RPCs "
         "(grpcload waits for the calls in flight when the time is up and counts them): "
         "*service* includes the uprobe traps and BPF programs; *gospan process* is gospan's "
         "own. *Added* is over the untraced service: service alone / service plus gospan's "
         "process. BPF figures are the kernel's run counters of gospan's programs "
         "(`kernel.bpf_stats_enabled=1`). *Other load* is the CPU time the rest of the machine "
         "used during the runs (`/proc/stat`, less the processes measured, grpcload and the "
         "driver), in CPUs.", ""]
    L += [f"Load average at the part's start {' '.join(load0)}, at its end {' '.join(load1)}; "
          f"median other load during the runs {fmt(other, '.2f')} CPUs. "
          + ("**The part ran on a busy machine**: other work competed for the CPUs, which adds "
             "noise (and cache and scheduler effects) to every figure; the configurations "
             "alternated within each round, so it weighs on them alike, but the differences "
             "are less certain than on a quiet machine." if busy else "The machine was quiet.")
          + f" The part took {gr['part_seconds'] / 60:.1f} min.", ""]
    for n in streams:
        L += [f"### {inflight(n)[0].upper() + inflight(n)[1:]}, one connection", "",
              "| configuration | RPCs/s | p50 µs | p90 µs | p99 µs | service CPU µs/RPC | "
              "gospan process CPU µs/RPC | added CPU µs/RPC | BPF runs/RPC | BPF ns/run | "
              "other load |",
              "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
        for cfg in gr["configs"]:
            x, add = med[cfg][n], added.get(cfg, {}).get(n)
            g = cfg == "gospan"
            L.append(f"| {GRPC_NAMES[cfg]} | {fmt(x['rps'], '.0f')} | {fmt(x['p50_us'], '.0f')} | "
                     f"{fmt(x['p90_us'], '.0f')} | {fmt(x['p99_us'], '.0f')} | "
                     f"{fmt(x['service_cpu_us'], '.2f')} | "
                     f"{fmt(x['tracer_cpu_us'], '.2f') if g else '-'} | "
                     + (f"{add['service_cpu_us']:.2f} / {add['total_cpu_us']:.2f}" if add else "-")
                     + f" | {fmt(x['bpf_runs_per_rpc'], '.2f') if g else '-'} | "
                     f"{fmt(x['bpf_ns_per_run'], '.0f') if g else '-'} | "
                     f"{fmt(x['other_load_cpus'], '.2f')} |")
        progs = med.get("gospan", {}).get(n, {}).get("bpf_programs")
        if progs:
            L += ["", "gospan's programs per RPC: " + ", ".join(
                f"`{k}` {p['runs_per_rpc']:.2f} runs at {p['ns_per_run']:.0f} ns"
                for k, p in sorted(progs.items())) + "."]
        L.append("")
    if ratio:
        L += ["### gospan against otelgrpc + SDK", "",
              "Added CPU per RPC, over the untraced service (the difference of the medians; in "
              "brackets the median of each round's own difference, gospan's and otelgrpc's "
              "services against that round's untraced one):", "",
              "| calls in flight | gospan, service | gospan, with its process | otelgrpc + SDK | "
              "gospan / otelgrpc (service) | gospan / otelgrpc (with gospan's process) |",
              "|---:|---:|---:|---:|---:|---:|"]
        for n in streams:
            g, o, r = added["gospan"][n], added["otelgrpc"][n], ratio.get(n) or {}
            L.append(f"| {n} | {g['service_cpu_us']:.2f} µs "
                     f"({fmt(g['service_cpu_us_paired'], '.2f')}) | {g['total_cpu_us']:.2f} µs | "
                     f"{o['service_cpu_us']:.2f} µs ({fmt(o['service_cpu_us_paired'], '.2f')}) | "
                     f"**{fmt(r.get('service_cpu_us'), '.2f')}** "
                     f"({fmt(r.get('service_cpu_us_paired'), '.2f')}) | "
                     f"**{fmt(r.get('total_cpu_us'), '.2f')}** |")
        L.append("")
    sp, chk = gr["spans"], gr.get("check") or {}
    g, o = sp.get("gospan"), sp.get("otelgrpc")
    lines = []
    if g:
        lines.append(f"gospan's services served {g['requests']} RPCs (warm-ups included); gospan "
                     f"captured {g['captured']}, exported {g['exported']}, dropped "
                     f"{g['dropped']}, and the receiver got {g['received']} spans: "
                     f"**{fmt(g['per_rpc'], '.3f')} per RPC**.")
    if o:
        lines.append(f"otelgrpc + SDK's services served {o['requests']} RPCs and the receiver "
                     f"got {o['received']} of their spans: **{fmt(o['per_rpc'], '.3f')} per "
                     "RPC** (the SDK's batch span processor at its defaults drops what does "
                     "not fit its queue of 2048)." if o["per_rpc"] is not None and o["per_rpc"] < 1
                     else f"otelgrpc + SDK's services served {o['requests']} RPCs and the "
                     f"receiver got {o['received']} of their spans: **{fmt(o['per_rpc'], '.3f')} "
                     "per RPC**.")
    if chk:
        kinds = ", ".join(f"{v} `{k}`" for k, v in chk["spans"].items()) or "no span"
        lines.append(f"Before the rounds, {chk['calls']} calls ({chk['errors']} failed) to a "
                     "service traced by gospan with its console exporter "
                     f"(`OTEL_TRACES_EXPORTER=console`): it printed {kinds}.")
    L += ["### Spans", "", " ".join(lines), ""]
    if chk.get("warnings"):
        L += ["What gospan said when it attached to the service (besides its `attached` line):",
              "", "```", *chk["warnings"], "```", ""]
    if gr.get("attached"):
        L += [f"`{gr['attached']}`", ""]
    warn = sorted({w for x in gr["lifetimes"].get("gospan", []) for w in x.get("warnings", [])})
    if warn:
        L += ["gospan's warnings during the rounds:", "", "```", *warn, "```", ""]
    if gr.get("failed"):
        L += ["**The part's checks failed** (`make bench` exits 1):", ""] + \
             [f"- {p}" for p in gr["failed"]] + [""]
    return L


def targets(gr, results):
    """The grpc part's rows of the targets table: the run time of gospan's program at the
    server's stream handler, by the kernel's counters (a per-connection endpoint cache, one map
    entry an RPC)."""
    t = []
    for n in GRPC_STREAMS:
        runs = gr["runs"].get("gospan", {}).get(n) or []
        p = ((gr["median"].get("gospan", {}).get(n) or {}).get("bpf_programs") or {}) \
            .get("grpc_server_entry")
        if not p:
            continue
        t.append((f"gRPC server entry program ≤ 2 µs a run ({n} in flight)",
                  f"{p['ns_per_run']:.0f} ns a run, {p['runs_per_rpc']:.2f} runs an RPC (the "
                  f"kernel's counters, median of {len(runs)} rounds)",
                  p["ns_per_run"] <= 2000))
    return t


def load(gr):
    """GR as results.json holds it, its stream counts made numbers again, summed up."""
    gr["runs"] = {c: {int(n): v for n, v in d.items()} for c, d in gr["runs"].items()}
    summarize_grpc(gr)


def per_call(gr, results):
    """The cost-per-call row of the gRPC server: gospan over the untraced service."""
    a = gr["added"].get("gospan")
    if not a:
        return []
    return [{"family": f"gRPC server (grpc-go {gr['versions']['grpc']})",
             "call": f"a unary RPC, {' / '.join(map(str, GRPC_STREAMS))} in flight",
             "added": [a[n]["service_cpu_us"] for n in GRPC_STREAMS],
             "tracer": [gr["median"]["gospan"][n]["tracer_cpu_us"] for n in GRPC_STREAMS],
             "steps": steps_text(gr.get("attached"), ("grpc-go", "RPC served")),
             "section": "gRPC (unary)"}]
