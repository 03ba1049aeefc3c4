"""The overhead part: the example service under wrk in every configuration (untraced, empty probes
at three sets of sites, gospan, gospan --cpu-time, gospan with a function span, the OpenTelemetry
Go SDK and Automatic Instrumentation), rounds alternating them; the BPF cost model; the plot."""

import json
import re
import shutil
import subprocess
from pathlib import Path

from .runner import (CONNS, CPU_OTHER, CPU_SERVICE, CPU_WRK, OUT, PATH, PIN, REPO, ROUNDS, SECONDS,
                     WARMUP, WRK_HEADERS, Proc, added_over_untraced, clean_env, ensure_bpf_stats,
                     floor_programs, fmt, gospan_summary, log, min_to_max, pinned, start_floor,
                     start_gospan, start_service, steps_text, wrk, wrk_measured, wrk_medians)

# The Go programs the part runs, built into build/bench: {name: source directory}.
GO_PROGRAMS = {"httpserver": "examples/httpserver", "otelsdk": "bench/otelsdk"}
CONFIGS = ["untraced", "floor_peers", "floor_old", "floor", "gospan", "cputime", "functions",
           "sdk", "otelauto"]
# The "functions" configuration: gospan with one function span per request, the JSON writer the
# benchmarked route calls (GOSPAN_FUNCTIONS_FILE): main.writeUser calls it last, in tail position,
# and the route's handler calls main.writeUser.
FUNCTION_SPAN = "main.writeJSON"
# The empty-probe configurations and the sites bench/floor puts them at (--sites): the first
# instruction and every RET (what other uprobe tracers probe), gospan's entry sites with every
# RET (gospan before its end sites), gospan's own sites.
FLOOR_SITES = {"floor_peers": "first-rets", "floor_old": "push-rets", "floor": "gospan"}
# The configurations where a tracer process (gospan, the floor, the auto instrumentation) has
# programs attached.
PROBED = ("floor_peers", "floor_old", "floor", "gospan", "cputime", "functions", "otelauto")
GOSPANS = ("gospan", "cputime", "functions")
# OpenTelemetry Go Automatic Instrumentation's CLI: bench/otelauto/build builds and caches it.
OTELAUTO_BUILD = REPO / "bench" / "otelauto" / "build"
READS_PER_RUN = 8  # ops_read_words in bench/floor/ops.bpf.c


def build_otelauto():
    """(binary, version, None) of the auto instrumentation's CLI, built and cached by
    bench/otelauto/build, or (None, None, why) when it cannot be had."""
    log("building OpenTelemetry Go Automatic Instrumentation (bench/otelauto/build; about 2 "
        "minutes the first time, then cached)")
    try:
        # os.environ, not clean_env(): GOSPAN_CACHE says where the cache is.
        res = subprocess.run([OTELAUTO_BUILD], capture_output=True, text=True, timeout=1800)
    except (OSError, subprocess.TimeoutExpired) as e:
        return None, None, f"{OTELAUTO_BUILD.relative_to(REPO)} failed: {e}"
    if res.returncode != 0:
        lines = res.stderr.strip().splitlines()
        # From its last message (the one saying what failed; its progress lines come before).
        said = [i for i, x in enumerate(lines) if x.startswith("otelauto/build: ")]
        why = lines[said[-1]:][:15] if said else lines[-15:]
        return None, None, "\n".join(why) or f"exit status {res.returncode}"
    binary = Path(res.stdout.strip().splitlines()[-1])
    m = re.search(r"otel-auto-([^/]+)$", str(binary.parent))
    return binary, m.group(1) if m else "?", None


def otelauto_needs_securityfs():
    return not Path("/sys/kernel/security/lockdown").exists() and bool(shutil.which("unshare"))


def start_otelauto(binary, pid, receiver, pin=True):
    """OpenTelemetry Go Automatic Instrumentation's CLI on PID, exporting over OTLP/HTTP to
    RECEIVER, once it said its probes are loaded.

    It decides whether it may write into the target's memory (bpf_probe_write_user, for trace
    context in outgoing requests) from /sys/kernel/security/lockdown, and takes a missing file
    for no lockdown: where securityfs is not mounted, on a kernel in lockdown, it then fails to
    load its HTTP client probe. So there it runs in a mount namespace of its own with securityfs
    mounted, where it reads the kernel's real mode; the machine's mounts stay as they are."""
    argv = [binary, "-target-pid", str(pid)]
    if otelauto_needs_securityfs():
        # unshare and sh exec in turn: the pid is the instrumentation's own.
        argv = ["unshare", "-m", "sh", "-c",
                'mount -t securityfs securityfs /sys/kernel/security && exec "$0" "$@"', *argv]
    env = clean_env(OTEL_EXPORTER_OTLP_ENDPOINT=receiver.endpoint,
                    OTEL_SERVICE_NAME="httpserver")
    a = Proc(pinned(CPU_OTHER, argv) if pin else argv, env=env)
    try:
        a.attached = a.wait_line(r'"msg":"(instrumentation loaded successfully[^"]*)"',
                                 timeout=120).group(1)
    except RuntimeError:
        a.stop()
        raise
    return a


def otelauto_notes(a):
    """What a stopped auto instrumentation said of its own limits: its errors and warnings (JSON
    log lines), and whether it found context propagation unsupported."""
    notes = []
    for line in a.text().splitlines():
        if "doesn't support context propagation" in line:
            notes.append("context propagation off: the kernel does not allow "
                         "bpf_probe_write_user (lockdown)")
        m = re.search(r'"level":"(ERROR|WARN)".*?"msg":"([^"]*)"(?:.*?"error":"([^"]*)")?', line)
        if m:
            notes.append(f"{m.group(1).lower()}: {m.group(2)}"
                         + (f" ({m.group(3)})" if m.group(3) else ""))
    return sorted(set(notes))


def gospan_env(cfg):
    """The environment that makes gospan the configuration CFG."""
    if cfg == "cputime":
        return {"GOSPAN_CPU_TIME": "1"}
    if cfg == "functions":
        path = OUT / "functions.json"
        path.write_text(json.dumps({"functions": [{"symbol": FUNCTION_SPAN}]}))
        return {"GOSPAN_FUNCTIONS_FILE": str(path)}
    return None


def start_tracer(cfg, pid, bins, receiver):
    """The tracer process of configuration CFG attached to PID: the floor, a gospan, the auto
    instrumentation; None for those without one (untraced, the SDK)."""
    if cfg in FLOOR_SITES:
        return start_floor(pid, "--sites", FLOOR_SITES[cfg])
    if cfg in GOSPANS:
        return start_gospan(pid, receiver, gospan_env(cfg))
    if cfg == "otelauto":
        return start_otelauto(bins["otelauto"], pid, receiver)
    return None


def measure_config(cfg, bins, receiver, binary=None):
    """One round of one configuration: a fresh service (BINARY; by default the example service,
    or the SDK's for "sdk"), the tracer (if any), then wrk_measured()."""
    binary = binary or (bins["otelsdk"] if cfg == "sdk" else bins["httpserver"])
    svc = start_service(binary, receiver if cfg == "sdk" else None,
                        {"OTEL_SERVICE_NAME": "otelsdk"} if cfg == "sdk" else None)
    tracer, life = None, {}
    spans_before = receiver.spans()
    try:
        tracer = start_tracer(cfg, svc.pid, bins, receiver)
        results, total = wrk_measured(svc, tracer, receiver)
    finally:
        if tracer:
            tracer.stop()
            if cfg in GOSPANS:
                life.update(gospan_summary(tracer))
            elif cfg == "otelauto":
                life["notes"] = otelauto_notes(tracer)
        svc.stop()  # the SDK flushes its queue at shutdown
    if cfg in GOSPANS + ("sdk", "otelauto"):
        life["requests"] = total
        life["received"] = receiver.wait_for(spans_before + total) - spans_before
    return results, life, tracer.attached if tracer else None


def part_costs(bins):
    """The BPF cost model: ops programs next to an empty one on ServeHTTP's uprobes."""
    svc = start_service(bins["httpserver"])
    try:
        ensure_bpf_stats()
        f = start_floor(svc.pid, "--ops")
        w = wrk(svc.addr, 1, max(2, SECONDS))
        f.stop()
    finally:
        svc.stop()
    progs = floor_programs(f)
    per_run = {k: t / c for k, (c, t) in progs.items() if c}
    empty = per_run.get("ops_empty")
    if empty is None or len(per_run) < 5:
        return {"error": f"no counts from bench/floor --ops:\n{f.text()[-1000:]}"}
    full = re.search(r"ring buffer full (\d+)", f.text())
    out = {"requests": w["requests"], "ns_per_run": per_run,
           "empty_ns": empty,
           "read_word_ns": (per_run["ops_read_words"] - empty) / READS_PER_RUN,
           "map_update_ns": per_run["ops_map_update"] - empty,
           "map_delete_ns": per_run["ops_map_delete"] - empty,
           "ringbuf_ns": per_run["ops_ringbuf"] - empty,
           "ringbuf_full": int(full.group(1)) if full else None}
    log(f"  BPF cost model: empty program {empty:.0f} ns, user read of a word "
        f"{out['read_word_ns']:.0f} ns, LRU hash update {out['map_update_ns']:.0f} ns, delete "
        f"{out['map_delete_ns']:.0f} ns, ring-buffer record {out['ringbuf_ns']:.0f} ns")
    return out


def measure(bins, receiver):
    configs = list(CONFIGS)
    # The auto instrumentation is built here, and left out (the report says why) when it
    # cannot be built or run: the other configurations are measured all the same.
    otelauto = {}
    if "otelauto" in configs:
        binary, version, why = build_otelauto()
        otelauto = {"version": version, "binary": str(binary) if binary else None,
                    "securityfs_namespace": otelauto_needs_securityfs()}
        if binary:
            bins = dict(bins, otelauto=binary)
        else:
            otelauto["missing"] = f"it could not be built: {why}"
            configs.remove("otelauto")
            log(f"  otelauto left out, {otelauto['missing']}")
    log(f"overhead: {ROUNDS} rounds x {len(configs)} configurations x connections {CONNS}, "
        f"{SECONDS} s each; " + (f"service on CPU {CPU_SERVICE}, wrk on CPU {CPU_WRK}, tracer "
                                 f"and receiver on CPU {CPU_OTHER}" if PIN else "nothing pinned"))
    runs = {c: {n: [] for n in CONNS} for c in configs}
    lives = {c: [] for c in configs}
    attached = {}
    for rnd in range(ROUNDS):
        order = configs[rnd % len(configs):] + configs[:rnd % len(configs)]
        for cfg in order:
            if cfg not in configs:
                continue  # the auto instrumentation, given up on earlier in this round
            try:
                res, life, att = measure_config(cfg, bins, receiver)
            except RuntimeError as e:
                if cfg != "otelauto":
                    raise
                otelauto["missing"] = f"it failed in round {rnd + 1}: {e}"
                configs.remove(cfg)
                del runs[cfg], lives[cfg]
                log(f"  otelauto left out, {otelauto['missing']}")
                continue
            for n in CONNS:
                runs[cfg][n].append(res[n])
            lives[cfg].append(life)
            if att:
                attached[cfg] = att
            log(f"  round {rnd + 1} {cfg:8s} " + "  ".join(
                f"c{n}: {res[n]['rps']:6.0f}/s p50 {res[n]['p50_us']:5.0f} us "
                f"cpu {res[n]['service_cpu_us']:5.1f}+{res[n]['tracer_cpu_us']:4.1f} us"
                for n in CONNS) + (f"  spans {life['received']}/{life['requests']}"
                                   f"{' dropped ' + str(life['dropped']) if life.get('dropped') else ''}"
                                   if life else ""))

    med = wrk_medians(runs)
    added, ratio = added_over_untraced(med), {}
    for n in CONNS:
        ratio[n] = {}
        for f in FLOOR_SITES:
            fl = added[f][n]["service_cpu_us"] if f in added else 0
            key = {"floor": "", "floor_old": "old_", "floor_peers": "peers_"}[f]
            ratio[n][key + "service"] = \
                added["gospan"][n]["service_cpu_us"] / fl if fl > 0 else None
            ratio[n][key + "total"] = added["gospan"][n]["total_cpu_us"] / fl if fl > 0 else None
    return {"rounds": ROUNDS, "seconds": SECONDS, "path": PATH, "pinned": PIN, "runs": runs,
            "configs": configs, "lifetimes": lives, "median": med, "added": added,
            "gospan_over_floor": ratio, "cpu_time": cpu_time_cost(med), "attached": attached,
            "function_span": function_span_cost(med) if "functions" in med else None,
            "otelauto": otelauto, "costs": part_costs(bins)}


def overhead_configs(ov):
    """The configurations an overhead part measured, in CONFIGS' order (results written before
    the part recorded them list none)."""
    return ov.get("configs") or [c for c in CONFIGS if c in ov["median"]]


def function_span_cost(med):
    """What one function span adds to gospan's request, from the two configurations side by
    side: the service CPU, and the probe hits the kernel counted."""
    out = {}
    for n in CONNS:
        g, f = med["gospan"][n], med["functions"][n]
        progs = f.get("bpf_programs") or {}
        out[n] = {"service_cpu_us": f["service_cpu_us"] - g["service_cpu_us"],
                  "total_cpu_us": f["total_cpu_us"] - g["total_cpu_us"],
                  "hits_per_req": sum((progs.get(p) or {}).get("hits_per_req") or 0
                                      for p in ("func_entry", "func_return")),
                  "bpf_ns_per_hit": {p: (progs.get(p) or {}).get("ns_per_hit")
                                     for p in ("func_entry", "func_return")}}
    return out


CPU_PROBES = ("cpu_execute", "cpu_schedule")


def cpu_time_cost(med):
    """What --cpu-time adds to gospan, per request and per goroutine switch (a hit of the
    runtime.execute probe and one of runtime.schedule's), from the medians of the two
    configurations run side by side."""
    out = {}
    for n in CONNS:
        g, c = med["gospan"][n], med["cputime"][n]
        progs = c.get("bpf_programs") or {}
        hits = {p: (progs.get(p) or {}).get("hits_per_req") for p in CPU_PROBES}
        switches = hits["cpu_execute"]
        svc = c["service_cpu_us"] - g["service_cpu_us"]
        out[n] = {"switches_per_req": switches,
                  "hits_per_req": sum(h or 0 for h in hits.values()),
                  "bpf_ns_per_hit": {p: (progs.get(p) or {}).get("ns_per_hit")
                                     for p in CPU_PROBES + ("cpu_switch",)},
                  # The tracepoint runs at every context switch of the machine, wrk's too.
                  "sched_switch_runs_per_req": (progs.get("cpu_switch") or {}).get("hits_per_req"),
                  "service_cpu_us": svc,
                  "total_cpu_us": c["total_cpu_us"] - g["total_cpu_us"],
                  "service_cpu_us_per_switch": svc / switches if switches else None,
                  "rps_ratio": c["rps"] / g["rps"] if g["rps"] else None}
    return out
NAMES = {"untraced": "untraced", "floor_peers": "empty probes, first instruction + RETs",
         "floor_old": "empty probes, gospan's entry + RETs (before)",
         "floor": "empty probes at gospan's sites (floor)", "gospan": "gospan",
         "cputime": "gospan --cpu-time", "functions": f"gospan + a function span ({FUNCTION_SPAN})",
         "sdk": "OpenTelemetry Go SDK",
         "otelauto": "OpenTelemetry Go Automatic Instrumentation"}
# Shorter, for the plot's axis, where six long names run into each other.
PLOT_NAMES = {"floor_peers": "1st insn+RETs", "floor_old": "old sites",
              "floor": "empty probes", "cputime": "--cpu-time", "functions": "+function",
              "sdk": "OTel Go SDK",
              "otelauto": "OTel Go auto"}


def plot(results):
    ov = results.get("overhead")
    if not ov or not shutil.which("gnuplot"):
        return None
    med, configs = ov["median"], overhead_configs(ov)
    data = OUT / "overhead.dat"
    with open(data, "w") as f:
        f.write("# config p50_c1 p99_c1 p50_c64 p99_c64 svc_c1 tracer_c1 svc_c64 tracer_c64\n")
        for cfg in configs:
            m1, m64 = med[cfg][1], med[cfg][64]
            f.write(f'"{PLOT_NAMES.get(cfg, NAMES[cfg])}" {m1["p50_us"]} {m1["p99_us"]} {m64["p50_us"]} '
                    f'{m64["p99_us"]} {m1["service_cpu_us"]} {m1["tracer_cpu_us"]} '
                    f'{m64["service_cpu_us"]} {m64["tracer_cpu_us"]}\n')
    png = OUT / "overhead.png"
    script = f"""
set terminal pngcairo size 1400,900 font "sans,10" noenhanced
set output "{png}"
set style data histograms
set style fill solid 0.85 border -1
set boxwidth 0.9
set grid ytics
set key top left
set multiplot layout 2,2 title "wrk -> example service, GET {PATH}: medians of {ov['rounds']} rounds"
set title "latency, 1 keep-alive connection"
set ylabel "microseconds (log scale)"
set logscale y
set style histogram clustered gap 1
set xrange [-0.6:{len(configs) - 0.4}]
plot "{data}" using 2:xtic(1) title "p50", "" using 3 title "p99"
set title "latency, 64 connections"
plot "{data}" using 4:xtic(1) title "p50", "" using 5 title "p99"
set style histogram rowstacked
unset logscale y
set yrange [0:*]
set autoscale x
set title "CPU per request, 1 connection"
set ylabel "CPU microseconds per request"
plot "{data}" using 6:xtic(1) title "service process (uprobes and BPF included)", "" using 7 title "tracer process"
set title "CPU per request, 64 connections"
plot "{data}" using 8:xtic(1) title "service process (uprobes and BPF included)", "" using 9 title "tracer process"
unset multiplot
"""
    (OUT / "overhead.gp").write_text(script)
    res = subprocess.run(["gnuplot", str(OUT / "overhead.gp")], capture_output=True, text=True)
    if res.returncode != 0:
        log(f"gnuplot failed: {res.stderr.strip()}")
        return None
    return png


def report_otelauto(ov):
    """What the auto instrumentation did in the overhead part, or why it is not there."""
    oa = ov.get("otelauto")
    if oa is None:
        return []  # results of a run from before it was a configuration
    name = f"OpenTelemetry Go Automatic Instrumentation {oa.get('version') or ''}".rstrip()
    if "otelauto" not in ov["median"]:
        why = (oa.get("missing") or "not measured").splitlines()
        return [f"**{name} is not in the tables**: {why[0].rstrip('.:')}.", ""] + (
            ["```", *why[1:], "```", ""] if why[1:] else [])
    lives = ov["lifetimes"]["otelauto"]
    req = sum(x.get("requests", 0) for x in lives)
    got = sum(x.get("received", 0) for x in lives)
    notes = sorted({n for x in lives for n in x.get("notes", [])})
    add = ov["added"]
    ratios = "; ".join(
        f"{'one connection' if n == 1 else f'{n} connections'}: "
        f"+{add['otelauto'][n]['service_cpu_us']:.2f} µs of service CPU per request "
        f"(+{add['otelauto'][n]['total_cpu_us']:.2f} with its own process) against gospan's "
        f"+{add['gospan'][n]['service_cpu_us']:.2f} (+{add['gospan'][n]['total_cpu_us']:.2f})"
        for n in CONNS)
    return [f"{name}: {ratios}. Its services answered {req} requests "
            f"and the receiver got {got} spans"
            + (" (one SERVER span per request: all of them)" if req and got >= req else
               f" ({got / req:.0%} of them)" if req else "")
            + ". What it said of itself"
            + (": " + "; ".join(notes) if notes else ": nothing beyond its start-up lines")
            + "."
            + (" securityfs is not mounted here: it ran in a mount namespace of its own with "
               "securityfs mounted, so that it saw the kernel's lockdown and loaded its probes "
               "without `bpf_probe_write_user` (it takes a missing "
               "`/sys/kernel/security/lockdown` for no lockdown, and then fails to load its "
               "HTTP client probe)." if oa.get("securityfs_namespace") else ""), ""]


def report_rounds(ov):
    """gospan against the SDK and the auto instrumentation in each round: the medians above
    hide how far the rounds spread, and a claim of less CPU must hold in each of them."""
    has_auto = "otelauto" in ov["runs"]
    L = ["### Round by round: gospan, the SDK" + (" and the auto instrumentation" if has_auto
                                                  else ""), "",
         "The medians above come from these rounds. CPU per request of each round: the service's "
         "plus, for gospan and the auto instrumentation, their own process's (the SDK runs in "
         "the service); the configurations of a round ran within minutes of each other, in "
         "the round's order.", "",
         "| connections | round | untraced | gospan (service + gospan) | SDK | "
         + ("auto instrumentation (service + its process) | " if has_auto else "")
         + "SDK − gospan |" + (" auto − gospan |" if has_auto else ""),
         "|---:|---:|---:|---:|---:|" + ("---:|" if has_auto else "") + "---:|"
         + ("---:|" if has_auto else "")]
    for n in CONNS:
        u, g, sd = round_cpu(ov, "untraced", n), round_cpu(ov, "gospan", n), round_cpu(ov, "sdk", n)
        au = round_cpu(ov, "otelauto", n) if has_auto else []
        for i in range(len(g)):
            row = (f"| {n} | {i + 1} | {fmt(u[i] if i < len(u) else None, '.1f')} | {g[i]:.1f} | "
                   f"{fmt(sd[i] if i < len(sd) else None, '.1f')} | ")
            if has_auto:
                row += f"{fmt(au[i] if i < len(au) else None, '.1f')} | "
            row += f"{fmt(sd[i] - g[i] if i < len(sd) else None, '+.1f')} |"
            if has_auto:
                row += f" {fmt(au[i] - g[i] if i < len(au) else None, '+.1f')} |"
            L.append(row)
    L += ["", "Over the rounds (lowest to highest), CPU µs/request: " + "; ".join(
        f"{n} connection{'s' if n > 1 else ''}: gospan {min_to_max(round_cpu(ov, 'gospan', n))}, "
        f"SDK {min_to_max(round_cpu(ov, 'sdk', n))}"
        + (f", auto instrumentation {min_to_max(round_cpu(ov, 'otelauto', n))}" if has_auto
           else "")
        for n in CONNS) + ".", ""]
    return L


def round_cpu(ov, cfg, n):
    """CPU per request of each round of CFG at N connections, in round order: the service's
    plus the tracer process's (the SDK and untraced have none)."""
    if cfg not in ov["runs"]:
        return []
    return [r["service_cpu_us"] + (r.get("tracer_cpu_us") or 0) for r in ov["runs"][cfg][n]]


def otelauto_targets(ov):
    """gospan's added CPU against the auto instrumentation's, like for like (each traced
    process's added CPU, then with the tracer's own process); a row saying why when it is not
    there."""
    oa = ov.get("otelauto")
    if oa is None:
        return []  # results of a run from before it was a configuration
    name = "less added CPU than OpenTelemetry Go Automatic Instrumentation"
    if "otelauto" not in ov["median"]:
        return [(name, f"not measured: {(oa.get('missing') or '?').splitlines()[0]}", None)]
    t, a = [], ov["added"]
    for n in CONNS:
        g, o = a["gospan"][n], a["otelauto"][n]
        ratio = o["service_cpu_us"] / g["service_cpu_us"] if g["service_cpu_us"] > 0 else None
        # Each round's own figures, over that round's untraced service: the claim must hold
        # in every round, not only in the medians.
        base = round_cpu(ov, "untraced", n)
        gr = [x - b for x, b in zip(round_cpu(ov, "gospan", n), base)]
        orr = [x - b for x, b in zip(round_cpu(ov, "otelauto", n), base)]
        lower = sum(x < y for x, y in zip(gr, orr))
        t.append((f"{name} ({'1 connection' if n == 1 else f'{n} connections'})",
                  f"gospan +{g['service_cpu_us']:.2f} µs/request in the service "
                  f"(+{g['total_cpu_us']:.2f} µs with its process), auto instrumentation "
                  f"+{o['service_cpu_us']:.2f} µs (+{o['total_cpu_us']:.2f} µs): "
                  f"{fmt(ratio, '.1f')} × gospan's; round by round, over each round's "
                  f"untraced service, with the processes: gospan {min_to_max(gr, '+.1f')} µs, "
                  f"auto instrumentation {min_to_max(orr, '+.1f')} µs, gospan's lower in "
                  f"{lower} of {len(gr)} rounds",
                  g["total_cpu_us"] < o["total_cpu_us"] and lower == len(gr)))
    return t


def section(ov):
    """The overhead part's section of benchmarks.md."""
    L = []
    med, added, configs = ov["median"], ov["added"], overhead_configs(ov)
    L += ["## Server overhead", "",
          f"`examples/httpserver` under `wrk -t1 GET {PATH}` (with "
          f"{' and '.join(h.split(':')[0] for h in WRK_HEADERS)} header lines, as a client such "
          f"as curl sends), {ov['seconds']} s per run after "
          f"a {WARMUP} s warm-up; the {len(configs)} configurations alternated over "
          f"{ov['rounds']} rounds, a fresh service each time; medians. *floor*: "
          "`bench/floor`, empty BPF programs attached at exactly the addresses gospan probes "
          "(found by gospan's own target analysis); the two other empty-probe rows put them "
          "on the same functions where other uprobe tracers do (the first instruction and "
          "every RET: two single-stepped hits per request) and where gospan did before its "
          "end sites (the entry past the stack check, emulated, and every RET, "
          "single-stepped). *gospan --cpu-time*: gospan with on-CPU "
          "time (`GOSPAN_CPU_TIME=1`), which adds probes on `runtime.execute` and `runtime.schedule` and the kernel's `sched_switch` tracepoint. *SDK*: `bench/otelsdk`, the same routes wrapped in otelhttp "
          "with the SDK's batch span processor and OTLP/HTTP exporter. *OpenTelemetry Go "
          "Automatic Instrumentation*: the eBPF-based `go.opentelemetry.io/auto`'s CLI "
          "(`bench/otelauto/build`) attached to the untraced service's pid, at its defaults "
          "(OTLP/HTTP, the SDK's batch span processor). gospan, the SDK and the auto "
          "instrumentation export to the same local receiver (`bench/receiver`, counts and "
          "discards). "
          + (f"The service runs on CPU {CPU_SERVICE}, wrk on CPU {CPU_WRK}, the tracer and the "
             f"receiver on CPU {CPU_OTHER}"
             + (" (with 2 CPUs a tracer's bursts of work, such as gospan reading a poll's "
                "worth of records, also hold up wrk: that shows in the p99 at one "
                "connection, not in the service's CPU). " if CPU_OTHER == CPU_WRK else ". ")
             if ov["pinned"] else "Nothing is pinned. ")
          + "CPU per request is utime+stime (`/proc/PID/stat`) over the run divided by the "
          "requests: *service* is the traced process, which also pays for the uprobe traps "
          "and the BPF programs; *tracer* is the gospan (floor, auto instrumentation) "
          "process. *Added* is over "
          "the untraced service: service alone / service plus tracer process. BPF figures "
          "are the kernel's run counters (`kernel.bpf_stats_enabled=1`) for the tracer's "
          "programs.", ""]
    for n in CONNS:
        L += [f"### {'One keep-alive connection' if n == 1 else f'{n} connections'}", "",
              "| configuration | requests/s | p50 µs | p99 µs | service CPU µs/req | "
              "tracer CPU µs/req | added CPU µs/req | BPF hits/req | BPF ns/hit |",
              "|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
        for cfg in configs:
            x = med[cfg][n]
            add = added.get(cfg, {}).get(n)
            probed = cfg in PROBED
            L.append(
                f"| {NAMES[cfg]} | {fmt(x['rps'], '.0f')} | {fmt(x['p50_us'], '.0f')} | "
                f"{fmt(x['p99_us'], '.0f')} | {fmt(x['service_cpu_us'], '.2f')} | "
                f"{fmt(x['tracer_cpu_us'], '.2f') if probed else '-'} | "
                + (f"{add['service_cpu_us']:.2f} / {add['total_cpu_us']:.2f}" if add else "-")
                + f" | {fmt(x['bpf_hits_per_req'], '.2f') if probed else '-'} | "
                f"{fmt(x['bpf_ns_per_hit'], '.0f') if probed else '-'} |")
        L.append("")
    L += report_rounds(ov)
    gp = med["gospan"][1]["bpf_programs"]
    if gp:
        L += ["gospan's programs, one connection: " + ", ".join(
            f"`{k}` {v['hits_per_req']:.2f} hits/request at {v['ns_per_hit']:.0f} ns"
            for k, v in sorted(gp.items())) + ".", ""]
    ct = ov.get("cpu_time")
    if ct:
        L += ["### What `--cpu-time` costs", "",
              "`--cpu-time` probes `runtime.execute` and `runtime.schedule`, where the Go "
              "scheduler puts a goroutine on a thread and takes it off, both on their emulated "
              "`PUSHQ BP`, and follows the kernel's thread switches with the `sched_switch` "
              "tracepoint (no trap). The probes fire for every goroutine the scheduler runs, "
              "whether or not a traced call is running: the cost is per goroutine switch, and a "
              "request costs as many as the service makes while serving it (the connection's "
              "goroutine parking on its socket and running again, net/http's background "
              "reader). gospan and gospan --cpu-time side by side, from the tables above "
              "(sched_switch runs: the machine's context switches per request, wrk's and "
              "gospan's among them):", "",
              "| connections | goroutine switches per request | BPF ns per hit (execute / "
              "schedule / sched_switch) | sched_switch runs per request | added service CPU "
              "per request | per switch | added CPU incl. gospan's process | × the empty "
              "probes at the first instruction + RETs | throughput vs gospan |",
              "|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
        add = ov["added"]
        for n in CONNS:
            x = ct.get(n) or {}
            ns = x.get("bpf_ns_per_hit") or {}
            peers = (add.get("floor_peers") or {}).get(n, {}).get("service_cpu_us")
            L.append(f"| {n} | {fmt(x.get('switches_per_req'), '.2f')} | "
                     + " / ".join(fmt(ns.get(p), '.0f') for p in CPU_PROBES + ("cpu_switch",))
                     + f" | {fmt(x.get('sched_switch_runs_per_req'), '.2f')} | "
                     f"{fmt(x.get('service_cpu_us'), '.2f')} µs | "
                     f"{fmt(x.get('service_cpu_us_per_switch'), '.2f')} µs | "
                     f"{fmt(x.get('total_cpu_us'), '.2f')} µs | "
                     f"{fmt(x['total_cpu_us'] / peers if peers else None, '.2f')} × | "
                     f"{fmt(x.get('rps_ratio'), '.2f')} × |")
        L += ["", "At one connection the service waits between requests (wrk sends the next "
              "when the last answer is in), and its CPU then includes the Go scheduler's "
              "spinning while it looks for work, which the probes' traps, slowing the parking "
              "and waking, change too: the figure at 64 connections, where the service never "
              "waits, is the cost of a switch.", ""]
    lives = ov["lifetimes"]
    tot = {k: sum(x.get(k, 0) for x in lives["gospan"])
           for k in ("requests", "captured", "exported", "dropped", "received")}
    sdk = {k: sum(x.get(k, 0) for x in lives["sdk"]) for k in ("requests", "received")}
    L += [f"Spans over the section: gospan's services answered {tot['requests']} requests; "
          f"gospan captured {tot['captured']}, exported {tot['exported']}, dropped "
          f"{tot['dropped']}, and the receiver got {tot['received']}. The SDK's services "
          f"answered {sdk['requests']} and the receiver got {sdk['received']} of their spans. "
          "(wrk does not count requests still in flight when it stops.)", ""]
    L += report_otelauto(ov)
    L += ["![latency and CPU per request](benchmarks.png)", ""]
    c = ov.get("costs") or {}
    if "error" not in c and c:
        L += ["### What BPF operations cost here", "",
              "`bench/floor --ops`: on ServeHTTP's uprobes, next to an empty program, programs "
              "doing one kind of operation each (`bench/floor/ops.bpf.c`); their run time "
              "minus the empty one's, one connection:", "",
              "| operation | ns |", "|---|---:|",
              f"| running an empty program (with the kernel's run-time accounting) | "
              f"{c['empty_ns']:.0f} |",
              f"| `bpf_probe_read_user` of one 8-byte word | {c['read_word_ns']:.0f} |",
              f"| LRU hash map update (48-byte value) | {c['map_update_ns']:.0f} |",
              f"| LRU hash map delete | {c['map_delete_ns']:.0f} |",
              f"| ring-buffer reserve + submit of 1 KiB, no wakeup | {c['ringbuf_ns']:.0f} |",
              ""]

    return L


def over_floor(ov, key):
    """(connections, their words, figures, ratio, the words of the figures) of what OV[KEY]
    (cpu_time, function_span) adds per request at each connection count, over what empty probes
    at the first instruction and the RETs add to the untraced service."""
    for n in CONNS:
        x, peers = (ov.get(key) or {}).get(n), (ov["added"].get("floor_peers") or {}).get(n)
        if not x or not peers:
            continue
        ratio = x["total_cpu_us"] / peers["service_cpu_us"]
        hits = f", {x['hits_per_req']:.2f} probe hits" if key == "function_span" else ""
        yield (n, "1 connection" if n == 1 else f"{n} connections", x, ratio,
               f"{x['total_cpu_us']:+.2f} µs per request (service {x['service_cpu_us']:+.2f} "
               f"µs{hits}), empty probes +{peers['service_cpu_us']:.2f} µs: {ratio:.2f} ×")


def targets(ov, results):
    """The overhead part's rows of the targets table."""
    t = []
    for n in CONNS:
        r, a = ov["gospan_over_floor"][n], ov["added"]
        conns = "1 connection" if n == 1 else f"{n} connections"
        if "floor_peers" not in a:
            continue  # a results.json from before the floor had other sites
        t.append((f"added server CPU per request ≤ 0.4 × what empty probes at the first "
                  f"instruction and the RETs add, as other uprobe tracers place them "
                  f"({conns}; stretch 0.3 ×)",
                  f"gospan +{a['gospan'][n]['service_cpu_us']:.2f} µs in the service, "
                  f"empty probes at those sites +{a['floor_peers'][n]['service_cpu_us']:.2f} "
                  f"µs: {fmt(r.get('peers_service'), '.2f')} × (gospan's sites before: "
                  f"+{a['floor_old'][n]['service_cpu_us']:.2f} µs, "
                  f"{fmt(r.get('old_service'), '.2f')} ×; empty probes at gospan's sites now: "
                  f"+{a['floor'][n]['service_cpu_us']:.2f} µs)",
                  r.get("peers_service") is not None and r["peers_service"] <= 0.4))
    for n, conns, x, ratio, got in over_floor(ov, "cpu_time"):
        t.append((f"`--cpu-time` adds ≤ 0.25 × what empty probes at the first instruction and "
                  f"the RETs add ({conns})", got, ratio <= 0.25))
        t.append((f"`--cpu-time` adds under 2 µs per request, service and gospan ({conns})",
                  got, x["total_cpu_us"] < 2))
    for n, conns, x, ratio, got in over_floor(ov, "function_span"):
        t.append((f"a function span called last (`{FUNCTION_SPAN}`, in tail position in its "
                  f"caller) adds ≤ 0.25 × what empty probes at the first instruction and the "
                  f"RETs add ({conns})", got, ratio <= 0.25))
    sdk, g = ov["median"]["sdk"], ov["median"]["gospan"]
    for n in CONNS:
        # The medians, and each round's pair (run within minutes of each other): the
        # claim must hold in every round, not only in the medians.
        gr, sr = round_cpu(ov, "gospan", n), round_cpu(ov, "sdk", n)
        diff = [y - x for x, y in zip(gr, sr)]
        lower = sum(d > 0 for d in diff)
        t.append((f"less than the OpenTelemetry Go SDK ({'1 connection' if n == 1 else f'{n} connections'})",
                  f"gospan {g[n]['total_cpu_us']:.2f} µs/request (service + gospan; rounds "
                  f"{min_to_max(gr)}), SDK {sdk[n]['service_cpu_us']:.2f} µs (rounds "
                  f"{min_to_max(sr)}): gospan's lower in {lower} of {len(diff)} rounds, by "
                  f"{min_to_max(diff)} µs (medians of {len(diff)} rounds, each round's pair "
                  f"in the overhead section)",
                  g[n]["total_cpu_us"] < sdk[n]["service_cpu_us"] and lower == len(diff)))
    t += otelauto_targets(ov)
    drops = sum(x.get("dropped", 0) for x in ov["lifetimes"]["gospan"])
    top = max(ov["median"]["gospan"][n]["rps"] for n in CONNS)
    t.append(("zero drops at every rate the service serves here",
              f"{drops} dropped up to {top:.0f} requests/s", drops == 0))
    return t


def findings(ov, results):
    """What the overhead part's figures say bounds them (the bpfprofile part's stages among
    them)."""
    f = []
    if "error" not in (ov.get("costs") or {"error": 1}):
        c, g1 = ov["costs"], ov["median"]["gospan"][1]
        fl1 = ov["median"]["floor"][1]
        progs = g1["bpf_programs"]
        entry = progs.get("serve_http_entry", {}).get("ns_per_hit")
        ret = progs.get("serve_http_return", {}).get("ns_per_hit")
        gap = ov["added"]["gospan"][1]["service_cpu_us"] - ov["added"]["floor"][1]["service_cpu_us"]
        bpf_gap = (g1["bpf_us_per_req"] or 0) - (fl1["bpf_us_per_req"] or 0)

        fs = ov.get("function_span")
        if fs:
            steps = function_steps((ov.get("attached") or {}).get("functions"))
            f.append("A function span (`--functions`, " + FUNCTION_SPAN + ", called once per "
                     "request by the benchmarked route, last in `main.writeUser`, which the "
                     "route's handler calls: its entry is the emulated PUSH; writeUser's "
                     "epilogue follows the call, which the kernel would single-step, so its end "
                     "is in the handler after writeUser returns, on the emulated jump that tests "
                     "the error, writeUser's frame counted in; " + steps + " single-stepped hits "
                     "a call at attach): "
                     + "; ".join(f"{'one connection' if n == 1 else f'{n} connections'} "
                                 f"{fs[n]['service_cpu_us']:+.2f} µs of service CPU per request "
                                 f"over gospan alone, {fs[n]['hits_per_req']:.2f} probe hits"
                                 for n in CONNS) + ".")
        if "floor_peers" in ov["added"]:
            a = ov["added"]
            for n in CONNS:
                hp = ov["median"]["floor_peers"][n].get("bpf_hits_per_req")
                hf = ov["median"]["floor"][n].get("bpf_hits_per_req")
                stepped = a["floor_peers"][n]["service_cpu_us"] / hp if hp else None
                emulated = a["floor"][n]["service_cpu_us"] / hf if hf else None
                f.append(
                    f"Per probe hit ({'one connection' if n == 1 else f'{n} connections'}), "
                    f"from the empty-probe rows: at the first instruction and the RETs "
                    f"({fmt(hp, '.2f')} hits per request, all single-stepped) "
                    f"{fmt(stepped, '.2f')} µs a hit; at gospan's sites ({fmt(hf, '.2f')} hits, "
                    f"all emulated) {fmt(emulated, '.2f')} µs a hit. A single-step is a second "
                    f"trap (the kernel runs the instruction out of line, then traps again), "
                    f"which a VM makes dear; an emulated instruction is done in the first "
                    f"trap.")
        f.append(
            f"Server overhead: the empty probes add {ov['added']['floor'][1]['service_cpu_us']:.1f} "
            f"µs of service CPU per request (the traps), gospan {gap:.1f} µs more (one "
            f"connection), of which its BPF programs' own run time is {bpf_gap:.1f} µs: "
            f"{fmt(g1['bpf_us_per_req'], '.2f')} µs per request against the empty programs' "
            f"{fmt(fl1['bpf_us_per_req'], '.2f')} µs (entry {fmt(entry, '.0f')} ns, return "
            f"{fmt(ret, '.0f')} ns per hit); the rest is noise or effects outside the programs "
            f"(caches). On this machine one `bpf_probe_read_user` "
            f"costs {c['read_word_ns']:.0f} ns, an LRU map update {c['map_update_ns']:.0f} ns and "
            f"a delete {c['map_delete_ns']:.0f} ns, a ring-buffer record {c['ringbuf_ns']:.0f} ns. "
            f"Per keep-alive request the entry makes one map lookup (the goroutine's entry, "
            f"rewritten in place, no update or delete), one record and ten reads of the "
            f"service's memory (the goroutine id, the request's head in one copy, method, "
            f"protocol, host, peer address, the URL's path in two, the Header map's header and "
            f"group); the return one lookup, one record and three reads (status, route).")
        bp = results.get("bpfprofile") or {}
        if bp.get("stages"):
            st = bp["stages"]
            reads_ns = sum(st.get(k, 0) for k in ("context", "snapshot", "strings", "path",
                                                  "traceparent"))
            f.append(
                f"The entry program's own profile (table above): {reads_ns:.0f} of its "
                f"{sum(st.values()):.0f} ns go to reading the service's memory (the first read, "
                f"the goroutine id, alone {st.get('context', 0):.0f} ns; each later string about "
                f"{st.get('strings', 0) / 4:.0f} ns), the map entry {st.get('state', 0):.0f} ns, "
                f"the record {st.get('reserve', 0) + st.get('submit', 0):.0f} ns, ids "
                f"{st.get('ids', 0):.0f} ns (the profiled run's marks slow it: the figures are "
                f"shares, not costs). Meeting 1.15 × would take gospan's {gap:.1f} µs over the "
                f"floor down to {0.15 * ov['added']['floor'][1]['service_cpu_us']:.1f} µs: the "
                "entry's reads are most of what there is to cut, and each is a field the "
                "semantic conventions ask for. What could still be merged is little: method and "
                "protocol lie in one string, the request line, and could come in one read (the "
                "path cannot: url.path is the decoded path, which the line does not hold); the "
                "peer address could be read once per connection. About two of the ten reads, "
                "some 300 ns, where the target needs three times that.")
    if ov.get("cpu_time"):
        ct = ov["cpu_time"]
        x1, x64 = ct.get(1, {}), ct.get(64, {})
        ns = x1.get("bpf_ns_per_hit") or {}
        f.append(
            f"`--cpu-time`: {fmt(x1.get('switches_per_req'), '.1f')} goroutine switches per "
            f"request at one connection, {fmt(x64.get('switches_per_req'), '.1f')} at 64, each "
            f"a hit of the `runtime.execute` probe and one of `runtime.schedule`'s (BPF "
            f"{fmt(ns.get('cpu_execute'), '.0f')} and {fmt(ns.get('cpu_schedule'), '.0f')} ns "
            f"of them); they add {fmt(x1.get('service_cpu_us'), '.1f')} and "
            f"{fmt(x64.get('service_cpu_us'), '.1f')} µs of service CPU per request, "
            f"{fmt(x1.get('service_cpu_us_per_switch'), '.2f')} and "
            f"{fmt(x64.get('service_cpu_us_per_switch'), '.2f')} µs per switch (the traps "
            "above all: both probes sit on a `PUSHQ BP`, which the kernel emulates, so a hit is "
            "one trap). The figure at 64 connections is the cost; at one, the Go scheduler's "
            "idle spinning between requests moves with it (see its section).")
    f.append(
        "Probe sites: gospan's entry probes sit on the `PUSHQ BP` after Go's stack-bound "
        "check, which the kernel emulates, instead of on the function's first instruction, "
        "which it would single-step out of line (a second trap per hit); its RET probes are "
        "single-stepped, as a RET cannot be emulated. The floor uses the same sites, so the "
        "ratio above compares like with like; moving the entry probe took several "
        "microseconds off every request for both.")
    return f


def load(ov):
    """OV as results.json holds it, its connection counts made numbers again (JSON made them
    strings)."""
    for k in ("runs", "median", "added"):
        ov[k] = {c: {int(n): v for n, v in d.items()} for c, d in ov[k].items()}
    ov["gospan_over_floor"] = {int(n): v for n, v in ov["gospan_over_floor"].items()}
    for k in ("function_span", "cpu_time"):
        if ov.get(k):
            ov[k] = {int(n): v for n, v in ov[k].items()}


def function_steps(line):
    """The single-stepped hits a call of the traced function costs, from gospan's attach LINE
    ("+ 1 function (single-stepped hits: 1 a call of main.writeJSON)"), or "n/a"."""
    m = re.search(r"\+ \d+ functions? \(single-stepped hits: (\d+) a call", line or "")
    return m.group(1) if m else "n/a"


def per_call(ov, results):
    """The cost-per-call rows of what this part measures: the HTTP server (gospan over the
    untraced service), a function span and --cpu-time (each over gospan alone)."""
    add, med, att = ov["added"], ov["median"], ov.get("attached") or {}
    rows = []
    if "gospan" in add:
        rows.append({"family": "HTTP server (net/http)", "call": "a request, 1 / 64 connections",
                     "added": [add["gospan"][n]["service_cpu_us"] for n in CONNS],
                     "tracer": [med["gospan"][n]["tracer_cpu_us"] for n in CONNS],
                     "steps": steps_text(att.get("gospan"), ("net/http", "request served")),
                     "section": "Server overhead"})
    fs = ov.get("function_span")
    if fs:
        rows.append({"family": f"function span (`--functions`, {FUNCTION_SPAN})",
                     "call": "a call, in a request, 1 / 64 connections",
                     "added": [fs[n]["service_cpu_us"] for n in CONNS],
                     "tracer": [fs[n]["total_cpu_us"] - fs[n]["service_cpu_us"] for n in CONNS],
                     "steps": function_steps(att.get("functions")),
                     "section": "Server overhead"})
    ct = ov.get("cpu_time")
    if ct:
        rows.append({"family": "`--cpu-time`", "call": "a request, 1 / 64 connections",
                     "added": [ct[n]["service_cpu_us"] for n in CONNS],
                     "tracer": [ct[n]["total_cpu_us"] - ct[n]["service_cpu_us"] for n in CONNS],
                     "steps": steps_text(att.get("cputime"), ("on-CPU time", "goroutine switch")),
                     "section": "What `--cpu-time` costs"})
    return rows
