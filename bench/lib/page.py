"""docs/benchmarks.md from the results of make bench: the header (when, on what machine, from which
commit; which run each part came from when runs were merged), the targets, what each protocol
family costs a call, each part's section and what bounds the figures; and where the page may go.

Each part module (bench/lib/<part>.py) gives its section (section), and where it has them its
rows of the targets table (targets), of the cost per call (per_call) and its findings
(findings); load() makes its results what measure() returned once they were read back from JSON.
"""

import json
import re
import shutil

from . import (attach, bpfprofile, client, db, exporter, frameworks, grpc, kafka, metrics, overhead,
               versions)
from .runner import OUT, REPO, fmt, log

# The parts in the order make bench runs them (BENCH_PARTS' default).
PARTS = ["overhead", "bpfprofile", "frameworks", "client", "grpc", "db", "kafka", "versions",
         "exporter", "metrics", "attach"]
# The parts' modules in the order of their sections on the page.
MODULES = {m.__name__.rsplit(".", 1)[1]: m for m in (
    overhead, bpfprofile, frameworks, client, grpc, db, kafka, versions, metrics, exporter,
    attach)}


def stamp(m, quick):
    """What says where a part was measured: the run's date, commit and machine (machine()'s M)."""
    return {"date": m["date"], "commit": m.get("commit"), "quick": quick,
            "machine": f"{m['cpu']}, {m['cpus']} CPUs, Linux {m['kernel']}",
            "loadavg_at_start": m["loadavg_at_start"]}


def provenance(results):
    """{part: stamp()} of the parts in RESULTS: as recorded, or, for results written before
    parts were stamped, the run's own or, for the parts its last merge measured, the merge's."""
    prov = results.get("provenance") or {}
    own = stamp(results["machine"], results["quick"])
    mm = results.get("merged")
    again = stamp(mm["machine"], results["quick"]) if mm else own
    return {p: prov.get(p) or (again if mm and p in mm["parts"] else own)
            for p in PARTS if results.get(p)}


def whole(results):
    """Whether RESULTS are one full-length run of every part: only those replace the project's
    page unless BENCH_DOCS says otherwise."""
    return (not results["quick"] and not results.get("merged")
            and all(results.get(p) for p in PARTS))


def header(results):
    """The page's title and the paragraph saying when, where and from what it was measured."""
    m = results["machine"]
    L = ["# Benchmarks", "",
         "Written by `make bench` (`bench/run`; `bench/README.md` says what each part does and "
         "how). Do not edit by hand.", "",
         f"Machine: {m['cpu']}, {m['cpus']} CPUs, {m['memory_gb']} GB, Linux {m['kernel']} "
         f"{m['arch']}{' (' + m['virtualization'] + ')' if m['virtualization'] else ''}; "
         f"{m['go']}; {m['wrk']}. Run {m['date']} in {results['seconds'] / 60:.0f} min"
         f"{', gospan and bench/ at commit ' + m['commit'] if m.get('commit') else ''}; load "
         f"average at the start {' '.join(m['loadavg_at_start'])}"
         f"{'; BENCH_QUICK=1 (short runs, fewer rounds)' if results['quick'] else ''}.", ""]
    missing = [p for p in PARTS if not results.get(p)]
    if missing:
        L += [f"Not on this page (`BENCH_PARTS`): {', '.join(missing)}.", ""]
    prov = provenance(results)
    if len({repr(sorted(s.items())) for s in prov.values()}) > 1:
        L += ["**This page merges runs** (`BENCH_MERGE=1`): each part's figures are to be "
              "compared with those of its own run, not across runs. Where each part was "
              "measured:", "",
              "| part | run | commit | machine | load average at the start | |",
              "|---|---|---|---|---|---|"]
        for p, s in prov.items():
            L.append(f"| {p} | {s['date']} | {s['commit'] or 'not recorded'} | {s['machine']} | "
                     f"{' '.join(s['loadavg_at_start'])} | "
                     f"{'BENCH_QUICK=1' if s['quick'] else ''} |")
        L.append("")
    return L


def anchor(title):
    """The link target of a heading TITLE, as GitHub makes it."""
    return re.sub(r"[^\w\- ]", "", title.lower()).replace(" ", "-")


def cost_table(results):
    """What each protocol family costs a call, from the parts' figures: the traced process's
    added CPU, gospan's own process's, and the single-stepped hits a call gospan's attach line
    gives (a single-stepped hit costs a second trap)."""
    rows = []
    for part, mod in MODULES.items():
        if results.get(part) and hasattr(mod, "per_call"):
            rows += mod.per_call(results[part], results)
    if not rows:
        return []
    L = ["## Cost per call, by protocol family", "",
         "From the sections below, each family measured in its own part: what gospan adds to "
         "the traced process's CPU per call (over the same process untraced, or, for a "
         "feature, over gospan without it; difference of the medians), one call at a time and "
         "many in flight, gospan's own process's CPU per call (exporting included), and the "
         "single-stepped hits a call as gospan's attach line gives them (each costs a second "
         "trap, several µs; an emulated hit does not).", "",
         "| family | a call | added CPU in the traced process, µs (one / many) | gospan's "
         "process, µs (one / many) | single-stepped hits a call | section |",
         "|---|---|---:|---:|---:|---|"]
    for r in rows:
        L.append(f"| {r['family']} | {r['call']} | "
                 f"{' / '.join(fmt(x, '+.2f') for x in r['added'])} | "
                 f"{' / '.join(fmt(x, '.2f') for x in r['tracer'])} | {r['steps']} | "
                 f"[{r['section']}](#{anchor(r['section'])}) |")
    L.append("")
    return L


def report(results):
    """benchmarks.md."""
    L = header(results)
    L += ["## Targets", "", "| target | measured | |", "|---|---|---|"]
    for name, measured, ok in results["targets"]:
        L.append(f"| {name} | {measured} | "
                 f"{'not measured' if ok is None else 'met' if ok else '**missed**'} |")
    L.append("")
    L += cost_table(results)
    for part, mod in MODULES.items():
        if results.get(part):
            L += mod.section(results[part])
    if results.get("findings"):
        L += ["## What bounds the figures", ""] + [f"- {f}" for f in results["findings"]] + [""]
    return "\n".join(L)


def targets(results):
    t = []
    for part, mod in MODULES.items():
        if results.get(part) and hasattr(mod, "targets"):
            t += mod.targets(results[part], results)
    return t


def findings(results):
    """What the measurements say bounds each figure, computed from this run's numbers."""
    f = []
    for part, mod in MODULES.items():
        if results.get(part) and hasattr(mod, "findings"):
            f += mod.findings(results[part], results)
    return f


def load_results():
    """build/bench/results.json as the run left it (JSON made the connection counts strings)."""
    results = json.loads((OUT / "results.json").read_text())
    for part, mod in MODULES.items():
        if results.get(part) and hasattr(mod, "load"):
            mod.load(results[part])
    return results


def write_outputs(results, docs=None):
    """results.json, the plot, and benchmarks.md with benchmarks.png in DOCS: by default docs/
    for a whole run (whole()), else build/bench, so that a run of a few parts, a quick one or a
    merged one never replaces the project's page unasked."""
    results["targets"] = targets(results)
    results["findings"] = findings(results)
    png = overhead.plot(results)
    (OUT / "results.json").write_text(json.dumps(results, indent=1, default=str) + "\n")
    if docs is None:
        docs = REPO / "docs" if whole(results) else OUT
        if not whole(results):
            log("not one full-length run of every part (BENCH_PARTS, BENCH_QUICK or BENCH_MERGE): "
                f"the page goes to {docs}, not docs/ (BENCH_DOCS=docs puts it there)")
    docs.mkdir(parents=True, exist_ok=True)
    (docs / "benchmarks.md").write_text(report(results))
    if png:
        shutil.copyfile(png, docs / "benchmarks.png")
    log(f"wrote {OUT / 'results.json'}, {docs / 'benchmarks.md'}"
        + (f", {docs / 'benchmarks.png'}" if png else ""))
    for name, measured, ok in results["targets"]:
        log(f"  {'----' if ok is None else 'met ' if ok else 'MISS'} {name}: {measured}")
