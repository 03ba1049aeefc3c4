"""The frameworks part: GET /users/42 through net/http's mux, gin and Fiber v2, untraced, with the
floor and with gospan."""

import re
import time
from pathlib import Path

from .overhead import NAMES, measure_config
from .runner import (CONNS, OUT, PATH, PIN, REPO, ROUNDS, SECONDS, WARMUP, added_over_untraced,
                     clean_env, fmt, go_env, log, median, run, source_state, start_floor,
                     start_gospan, start_service, steps_text, wrk_medians)

# The Go programs the part runs, built into build/bench: {name: source directory}.
GO_PROGRAMS = {"httpserver": "examples/httpserver"}
# The frameworks part: PATH (a route /users/{id}, or /users/:id) on net/http's mux (the example
# service) and on the router test services of gin and Fiber v2, built with their build.sh at the
# release their go.mod pins; untraced, the floor and gospan. ATTACH is what gospan's attach line
# names when it traces the service's server and router, FLOOR what bench/floor's names when its
# empty programs sit at those sites: without it the row says the service is not traced.
FRAMEWORKS = {
    "nethttp": {"name": "net/http", "service": "examples/httpserver", "module": None,
                "attach": "HTTP server", "floor": "ServeHTTP"},
    "gin": {"name": "gin", "service": "tests/e2e/routers/gin", "module": "github.com/gin-gonic/gin",
            "build": "tests/e2e/routers/build.sh", "attach": "gin routes", "floor": "gin routes"},
    "fiber2": {"name": "Fiber", "service": "tests/e2e/fasthttp/fiber2",
               "module": "github.com/gofiber/fiber/v2", "build": "tests/e2e/fasthttp/build.sh",
               "attach": "fasthttp server", "floor": "fasthttp server"},
}
FRAMEWORK_CONFIGS = ["untraced", "floor", "gospan"]


def build_frameworks(bins):
    """{framework: binary} of the frameworks part's services, and {framework: the release of its
    module the binary links}."""
    out, versions = {}, {}
    for fw, f in FRAMEWORKS.items():
        if not f.get("build"):
            out[fw] = bins["httpserver"]
            continue
        out[fw] = OUT / fw
        run([REPO / f["build"], out[fw], "local", fw], env=clean_env())
        m = re.search(rf"^\s*dep\s+{re.escape(f['module'])}\s+(\S+)",
                      run(["go", "version", "-m", out[fw]], env=go_env()), re.M)
        versions[fw] = m.group(1) if m else None
    return out, versions


def tracer_line(start, marker):
    """(attach line, None) of the tracer START() starts, stopped at once, when that line names
    MARKER; else (None, why not): its attach line, or what it said when it failed to attach."""
    try:
        t = start()
    except RuntimeError as e:
        said = [x for x in str(e).splitlines()[1:] if x.strip()]
        return None, said[-1] if said else str(e).splitlines()[0]
    t.stop()
    if marker not in t.attached:
        return None, f"`{t.attached}`"
    return t.attached, None


def framework_tracers(fw, binary, receiver):
    """{"gospan": (attach line, why not), "floor": ...} on framework FW's service: whether each
    tracer probes its server where gospan does (FRAMEWORKS' markers)."""
    f = FRAMEWORKS[fw]
    svc = start_service(binary)
    try:
        return {"gospan": tracer_line(lambda: start_gospan(svc.pid, receiver), f["attach"]),
                "floor": tracer_line(lambda: start_floor(svc.pid, "--sites", "gospan"),
                                     f["floor"])}
    finally:
        svc.stop()


def measure(bins, receiver):
    t_start = time.monotonic()
    load0 = Path("/proc/loadavg").read_text().split()[:3]
    fbins, versions = build_frameworks(bins)
    configs, not_traced, attached = {}, {}, {}
    for fw in FRAMEWORKS:
        tr = framework_tracers(fw, fbins[fw], receiver)
        configs[fw] = ["untraced"] + [c for c in ("floor", "gospan") if tr[c][0]]
        not_traced[fw] = {c: tr[c][1] for c in ("floor", "gospan") if not tr[c][0]}
        attached[fw] = {c: tr[c][0] for c in ("floor", "gospan") if tr[c][0]}
        for c, why in not_traced[fw].items():
            log(f"  {FRAMEWORKS[fw]['name']}: no {c} rows, not traced yet: {why}")
    pairs = [(fw, c) for c in FRAMEWORK_CONFIGS for fw in FRAMEWORKS if c in configs[fw]]
    log(f"frameworks: {ROUNDS} rounds x {len(pairs)} services and configurations x connections "
        f"{CONNS}, {SECONDS} s each, GET {PATH}")
    runs = {fw: {c: {n: [] for n in CONNS} for c in configs[fw]} for fw in FRAMEWORKS}
    lives = {fw: {c: [] for c in configs[fw]} for fw in FRAMEWORKS}
    for rnd in range(ROUNDS):
        k = rnd % len(pairs)
        for fw, cfg in pairs[k:] + pairs[:k]:
            res, life, _ = measure_config(cfg, bins, receiver, fbins[fw])
            for n in CONNS:
                runs[fw][cfg][n].append(res[n])
            lives[fw][cfg].append(life)
            log(f"  round {rnd + 1} {fw:7s} {cfg:8s} " + "  ".join(
                f"c{n}: {res[n]['rps']:6.0f}/s cpu {res[n]['service_cpu_us']:5.1f}"
                f"+{res[n]['tracer_cpu_us']:4.1f} us"
                + (f" bpf {res[n]['bpf_hits_per_req']:.2f}/req" if "bpf_hits_per_req" in res[n]
                   else "")
                for n in CONNS)
                + (f"  spans {life['received']}/{life['requests']}" if "received" in life else ""))
    out = {"rounds": ROUNDS, "seconds": SECONDS, "path": PATH, "pinned": PIN,
           "built_from": source_state(), "versions": versions, "configs": configs,
           "not_traced": not_traced, "attached": attached, "runs": runs, "lifetimes": lives,
           "loadavg": [load0, Path("/proc/loadavg").read_text().split()[:3]],
           "part_seconds": time.monotonic() - t_start}
    summarize_frameworks(out)
    for fw in FRAMEWORKS:
        for n in CONNS:
            a = out["added"][fw]
            if "gospan" not in a:
                continue
            log(f"  {FRAMEWORKS[fw]['name']}, {n} conn: added service CPU per request gospan "
                f"{a['gospan'][n]['service_cpu_us']:+.2f} us, floor "
                + (f"{a['floor'][n]['service_cpu_us']:+.2f} us" if "floor" in a else "n/a"))
    log(f"  frameworks part: {out['part_seconds']:.0f} s")
    return out


def summarize_frameworks(fr):
    """Medians, added CPU over each service untraced (of the medians, and the median of each
    round's own difference), gospan against the floor and the spans, from FR's runs."""
    fr["median"], fr["added"], fr["spans"] = {}, {}, {}
    for fw, runs in fr["runs"].items():
        med = fr["median"][fw] = wrk_medians(runs)
        added = fr["added"][fw] = added_over_untraced(med)
        for cfg, by_conns in added.items():
            for n, a in by_conns.items():
                # Each round ran every configuration close in time: other work on the machine
                # weighs less on the difference within a round.
                a["service_cpu_us_paired"] = median(
                    [x["service_cpu_us"] - u["service_cpu_us"]
                     for x, u in zip(runs[cfg][n], runs["untraced"][n])])
        lives = fr["lifetimes"][fw].get("gospan") or []
        if lives:
            sp = {k: sum(x.get(k, 0) for x in lives)
                  for k in ("requests", "received", "captured", "exported", "dropped")}
            sp["per_request"] = sp["received"] / sp["requests"] if sp["requests"] else None
            fr["spans"][fw] = sp
    return fr


def section(fr):
    """The frameworks part's section of the report."""
    med, added, configs, spans = fr["median"], fr["added"], fr["configs"], fr["spans"]
    load0, load1 = fr["loadavg"]
    other = median([med[fw][c][n]["other_load_cpus"] for fw in med for c in med[fw]
                    for n in CONNS])
    busy = float(load0[0]) >= 0.7 or (other or 0) >= 0.25

    def name(fw):
        v = fr["versions"].get(fw)
        return f"{FRAMEWORKS[fw]['name']}{' ' + v if v else ''}"

    L = ["## Router frameworks", "",
         f"What gospan adds to a request served through a router framework, beside net/http's "
         f"own mux: `wrk -t1 GET {PATH}` (with the overhead part's header lines) to "
         + ", ".join(f"{name(fw)} (`{FRAMEWORKS[fw]['service']}`, route "
                     f"`{'/users/{id}' if fw == 'nethttp' else '/users/:id'}`)"
                     for fw in FRAMEWORKS)
         + ", the framework services built by their `build.sh` at the release their `go.mod` "
         "pins. Each untraced, with the *floor* (`bench/floor`: empty programs at exactly "
         "gospan's sites, the router's route site included) and with gospan; every service and "
         f"configuration alternated over {fr['rounds']} rounds, a fresh service each time, "
         f"{fr['seconds']} s per run after a {WARMUP} s warm-up; medians. Measured as in the "
         "server overhead part (the same functions): *service* CPU per request includes the "
         "uprobe traps and BPF programs, *tracer* is the gospan (floor) process, *added* is over "
         "the same service untraced (service alone / with the tracer process; in brackets the "
         "median of each round's own difference). The test services pass every request through "
         "a timing middleware (two `time.Now()` calls; it logs only with `-v`) and the "
         "framework's recover middleware, and answer a short text: that is in the untraced "
         "figure as in the traced ones, and the added CPU is their difference, so the services "
         "are measured as the end-to-end tests run them rather than copied into bench/.", ""]
    L += [f"Load average at the part's start {' '.join(load0)}, at its end {' '.join(load1)}; "
          f"median other load during the runs {fmt(other, '.2f')} CPUs. "
          + ("**The part ran on a busy machine**: other work competed for the CPUs; the "
             "configurations alternated within each round, so it weighs on them alike, but "
             "the differences are less certain than on a quiet machine; compare the ratios side "
             "by side rather than the figures with another run's." if busy
             else "The machine was quiet.")
          + f" The part took {fr['part_seconds'] / 60:.1f} min"
          + (f"; gospan and `bench/floor` built from `{fr['built_from']}`"
             + (" (`-dirty`: the tree had uncommitted changes)"
                if fr["built_from"].endswith("-dirty") else "")
             if fr.get("built_from") else "") + ".", ""]
    missing = {"gospan": "**{} is not traced yet**: gospan does not probe its server (it says "
                         "{}), so there is no gospan figure for it.",
               "floor": "**{} has no floor yet**: `bench/floor` does not put empty programs at "
                        "gospan's sites in its server (it says {})."}
    for fw in FRAMEWORKS:
        for c, why in (fr["not_traced"].get(fw) or {}).items():
            L += [missing[c].format(name(fw), why), ""]
    for n in CONNS:
        L += [f"### {'One keep-alive connection' if n == 1 else f'{n} connections'}", "",
              "| service | configuration | requests/s | p50 µs | service CPU µs/req | tracer CPU "
              "µs/req | added CPU µs/req | BPF hits/req | BPF ns/hit | other load |",
              "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
        for fw in FRAMEWORKS:
            for cfg in FRAMEWORK_CONFIGS:
                if cfg not in configs[fw]:
                    L.append(f"| {name(fw)} | {NAMES[cfg]} | "
                             f"{'not traced yet' if cfg == 'gospan' else 'no floor yet'} "
                             "| | | | | | | |")
                    continue
                x, add = med[fw][cfg][n], added[fw].get(cfg, {}).get(n)
                t = cfg != "untraced"
                L.append(f"| {name(fw)} | {NAMES[cfg]} | {fmt(x['rps'], '.0f')} | "
                         f"{fmt(x['p50_us'], '.0f')} | {fmt(x['service_cpu_us'], '.2f')} | "
                         f"{fmt(x['tracer_cpu_us'], '.2f') if t else '-'} | "
                         + (f"{add['service_cpu_us']:.2f} / {add['total_cpu_us']:.2f} "
                            f"({fmt(add['service_cpu_us_paired'], '.2f')})" if add else "-")
                         + f" | {fmt(x['bpf_hits_per_req'], '.2f') if t else '-'} | "
                         f"{fmt(x['bpf_ns_per_hit'], '.0f') if t else '-'} | "
                         f"{fmt(x['other_load_cpus'], '.2f')} |")
        L.append("")
    L += ["### gospan against the floor, per framework", "",
          "Added service CPU per request over each service untraced (medians; in brackets the "
          "median of the rounds' own differences), and gospan's over the floor's: the floor is "
          "what the uprobe traps at gospan's sites cost, the rest is gospan's programs. Beside "
          "it the BPF run time per request (the kernel's counters, not disturbed by other "
          "work on the machine as the CPU times are): the floor's empty programs, gospan's.", "",
          "| service | connections | floor | gospan | gospan − floor | gospan / floor | gospan "
          "with its process | BPF µs/req, floor / gospan |",
          "|---|---:|---:|---:|---:|---:|---:|---:|"]
    for fw in FRAMEWORKS:
        a = added[fw]
        for n in CONNS:
            bpf = " / ".join(fmt(med[fw][c][n]["bpf_us_per_req"], ".2f") if c in med[fw]
                             else "-" for c in ("floor", "gospan"))
            if "gospan" not in a:
                L.append(f"| {name(fw)} | {n} | "
                         + (f"{a['floor'][n]['service_cpu_us']:.2f} µs" if "floor" in a
                            else "no floor yet") + f" | not traced yet | | | | {bpf} |")
                continue
            g, f = a["gospan"][n], a.get("floor", {}).get(n)
            L.append(f"| {name(fw)} | {n} | "
                     + (f"{f['service_cpu_us']:.2f} µs ({fmt(f['service_cpu_us_paired'], '.2f')})"
                        if f else "no floor yet")
                     + f" | {g['service_cpu_us']:.2f} µs "
                     f"({fmt(g['service_cpu_us_paired'], '.2f')}) | "
                     + (f"{g['service_cpu_us'] - f['service_cpu_us']:.2f} µs | "
                        + (f"**{g['service_cpu_us'] / f['service_cpu_us']:.2f} ×**"
                           if f["service_cpu_us"] > 0 else "n/a") if f else "- | -")
                     + f" | {g['total_cpu_us']:.2f} µs | {bpf} |")
    L.append("")
    L += ["### Probe hits per request, by program", "",
          "The kernel's run counters of each tracer's programs over the runs, per request "
          "(medians of the rounds), at one connection / 64; the BPF time per hit at one "
          "connection. `route_seen` is gospan's route program (`bpf/routes.bpf.c`) and "
          "`floor_route` the floor's empty one at the same site: one hit per request, at an "
          "instruction the kernel emulates.", "",
          "| service | tracer | program | hits/req | ns/hit |", "|---|---|---|---:|---:|"]
    for fw in FRAMEWORKS:
        for cfg in ("floor", "gospan"):
            if cfg not in configs[fw]:
                continue
            p1 = med[fw][cfg][1]["bpf_programs"]
            pn = med[fw][cfg][CONNS[-1]]["bpf_programs"]
            for prog in sorted(set(p1) | set(pn)):
                a, b = p1.get(prog) or {}, pn.get(prog) or {}
                L.append(f"| {name(fw)} | {cfg} | `{prog}` | "
                         f"{fmt(a.get('hits_per_req'), '.3f')} / "
                         f"{fmt(b.get('hits_per_req'), '.3f')} | "
                         f"{fmt(a.get('ns_per_hit'), '.0f')} |")
    L.append("")
    if spans:
        L += ["Spans: " + "; ".join(
            f"{name(fw)}, gospan's services answered {sp['requests']} requests, gospan "
            f"captured {sp['captured']}, exported {sp['exported']}, dropped {sp['dropped']}, "
            f"and the receiver got {sp['received']} ({fmt(sp['per_request'], '.3f')} per request)"
            for fw, sp in spans.items()) + ". (wrk does not count requests still in flight "
            "when it stops.)", ""]
    lines = [f"- {name(fw)}, {cfg}: `{line}`" for fw in FRAMEWORKS
             for cfg, line in (fr["attached"].get(fw) or {}).items()]
    if lines:
        L += ["The tracers' attach lines:", ""] + lines + [""]
    return L


def load(fr):
    """FR as results.json holds it, its connection counts made numbers again, summed up."""
    fr["runs"] = {fw: {c: {int(n): v for n, v in d.items()} for c, d in x.items()}
                  for fw, x in fr["runs"].items()}
    summarize_frameworks(fr)


def per_call(fr, results):
    """The cost-per-call rows of the router frameworks traced: gospan over each service
    untraced, a request's server and route together (net/http's own is the overhead part's)."""
    rows = []
    for fw, steps in (("gin", (("net/http", "request served"), ("gin routes", "request"))),
                      ("fiber2", (("fasthttp", "request served"), ("fiber routes", "request")))):
        a = fr["added"].get(fw, {}).get("gospan")
        if not a:
            continue
        rows.append({"family": f"routes: {FRAMEWORKS[fw]['name']} "
                               f"{fr['versions'].get(fw) or ''}".rstrip(),
                     "call": "a request, server and route, 1 / 64 connections",
                     "added": [a[n]["service_cpu_us"] for n in CONNS],
                     "tracer": [fr["median"][fw]["gospan"][n]["tracer_cpu_us"] for n in CONNS],
                     "steps": steps_text((fr["attached"].get(fw) or {}).get("gospan"), *steps),
                     "section": "Router frameworks"})
    return rows
