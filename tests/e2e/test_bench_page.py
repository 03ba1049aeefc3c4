"""make bench's page (bench/lib/page.py): the single-stepped hits a call it reads from gospan's real
attach line for the cost-per-call table, and where a run that is not one full-length run of every
part writes its page (never over docs/benchmarks.md unasked), saying which parts it lacks and,
when runs were merged, which run each part came from."""

import json
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "bench"))

from lib.runner import attach_steps, steps_text  # noqa: E402


def test_attach_line_gives_the_http_server_steps(start_service, start_gospan):
    svc = start_service()
    g = start_gospan(svc.pid)
    line = g.wait_attached()
    g.stop()
    g.assert_ended_cleanly()
    served = attach_steps(line).get("net/http", {}).get("request served")
    # gospan's entry and end sites on net/http's server are emulated (issue 31's floor).
    assert served == 0, line
    assert steps_text(line, ("net/http", "request served")) == "0"
    assert steps_text(line, ("grpc-go", "RPC served")) == "n/a"  # no gRPC in the example


def _machine(date, commit):
    return {"cpu": "Test CPU", "cpus": 2, "kernel": "6.1.0", "arch": "x86_64", "memory_gb": 1.0,
            "virtualization": None, "go": "go version go1.26.8", "wrk": "wrk 4.1.0",
            "loadavg_at_start": ["0.10", "0.20", "0.30"], "date": date, "commit": commit}


VERSIONS = {"1.22.12": {"hits_per_request": 2.0, "bpf_ns_per_hit": 900.0,
                        "bpf_us_per_request": 1.8, "programs": {},
                        "probes": "12 probes (10 emulated, 2 single-stepped)"}}
METRICS = {"rounds": 1, "feed_rate": 100000, "feed": {"off": [], "on": []}, "conns": 64,
           "served": {"off": [{"tracer_cpu_us": 1.0, "service_cpu_us": 20.0}],
                      "on": [{"tracer_cpu_us": 1.25, "service_cpu_us": 20.0}]},
           "metric_points_received": 12, "tracer_cpu_us_added": 0.25,
           "tracer_cpu_us_added_rounds": [0.25], "service_cpu_us_added": 0.0,
           "service_cpu_us_added_rounds": [0.0]}


def _report(build, results):
    """bench/run --report on RESULTS as BUILD/bench/results.json, BENCH_DOCS unset: the page."""
    (build / "bench").mkdir(parents=True)
    (build / "bench" / "results.json").write_text(json.dumps(results))
    env = {k: v for k, v in os.environ.items() if not k.startswith("BENCH_")}
    env["GOSPAN_BUILD"] = str(build)
    docs = REPO / "docs" / "benchmarks.md"
    before = docs.stat().st_mtime_ns if docs.exists() else None
    res = subprocess.run([sys.executable, str(REPO / "bench" / "run"), "--report"], env=env,
                         capture_output=True, text=True, timeout=60)
    assert res.returncode == 0, res.stdout + res.stderr
    assert (docs.stat().st_mtime_ns if docs.exists() else None) == before, \
        "a run of some parts replaced docs/benchmarks.md"
    assert "not docs/" in res.stdout, res.stdout
    return (build / "bench" / "benchmarks.md").read_text()


def test_a_run_of_some_parts_writes_its_page_beside_its_results(tmp_path):
    page = _report(tmp_path, {"quick": False, "seconds": 120, "versions": VERSIONS,
                              "metrics": METRICS,
                              "machine": _machine("2026-12-01 10:00 UTC", "1234abc")})
    assert "Run 2026-12-01 10:00 UTC in 2 min, gospan and bench/ at commit 1234abc" in page
    assert "Not on this page (`BENCH_PARTS`): overhead, bpfprofile, frameworks, client, grpc, db, " \
           "kafka, exporter, attach" in page
    assert "| RED metrics | a request, 64 connections | +0.00 | 0.25 | 0 (no probe) |" in page
    assert "merges runs" not in page


def test_a_merged_page_names_each_parts_run(tmp_path):
    old, new = _machine("2026-12-01 10:00 UTC", "1234abc"), _machine("2026-12-02 11:00 UTC",
                                                                     "5678def")
    stamp = {"quick": False, "machine": "Test CPU, 2 CPUs, Linux 6.1.0",
             "loadavg_at_start": ["0.10", "0.20", "0.30"]}
    page = _report(tmp_path, {
        "quick": False, "seconds": 120, "machine": old, "versions": VERSIONS, "metrics": METRICS,
        "merged": {"parts": ["metrics"], "machine": new, "seconds_before": 60},
        "provenance": {"versions": {**stamp, "date": old["date"], "commit": "1234abc"},
                       "metrics": {**stamp, "date": new["date"], "commit": "5678def"}}})
    assert "**This page merges runs**" in page
    assert "| versions | 2026-12-01 10:00 UTC | 1234abc |" in page
    assert "| metrics | 2026-12-02 11:00 UTC | 5678def |" in page
