"""The versions part: probe hits per request and BPF time per hit on each Go release the version
tests cover."""

import http.client
import re
import sys

from .runner import (OUT, QUICK, REPO, bpf_delta, bpf_runs, ensure_bpf_stats, fmt, log, prog_names,
                     start_gospan, start_service)


VERSION_REQUESTS = 1000


def measure(bins, receiver):
    sys.path.insert(0, str(REPO / "tests" / "e2e"))
    try:
        import test_go_versions as tgv  # the release list and build rules of the version tests
    except Exception as e:  # noqa: BLE001 - report it, do not stop the benchmark
        return {"error": f"cannot import tests/e2e/test_go_versions.py: {e}"}
    versions = tgv.VERSIONS
    if QUICK:
        versions = [versions[0], "1.22.12", versions[-1]]
    log(f"versions: {len(versions)} Go releases, {VERSION_REQUESTS} keep-alive requests each")
    out = {}
    for v in versions:
        binary = OUT / "go" / f"server-go{v}"
        binary.parent.mkdir(parents=True, exist_ok=True)
        try:
            if not binary.exists():
                tgv.build(v, "plain", binary)
        except BaseException as e:  # pytest.fail raises a BaseException
            if isinstance(e, KeyboardInterrupt):
                raise
            out[v] = {"error": "not built: " + (str(e).strip().splitlines() or [type(e).__name__])[0]}
            log(f"  go{v}: {out[v]['error']}")
            continue
        svc = start_service(binary)
        g = None
        try:
            g = start_gospan(svc.pid, receiver)
            names = prog_names()
            ensure_bpf_stats()
            b0 = bpf_runs(g.pid)
            host, port = svc.addr.rsplit(":", 1)
            conn = http.client.HTTPConnection(host, int(port), timeout=10)
            for _ in range(VERSION_REQUESTS):
                conn.request("GET", "/users/1")
                conn.getresponse().read()
            conn.close()
            progs = bpf_delta(b0, bpf_runs(g.pid), names)
            hits = sum(c for c, _ in progs.values())
            ns = sum(t for _, t in progs.values())
            out[v] = {"hits_per_request": hits / VERSION_REQUESTS,
                      "bpf_ns_per_hit": ns / hits if hits else None,
                      "bpf_us_per_request": ns / 1e3 / VERSION_REQUESTS,
                      "programs": {k: {"hits_per_req": c / VERSION_REQUESTS, "ns_per_hit": t / c}
                                   for k, (c, t) in progs.items() if c},
                      "probes": re.search(r"\d+ probes \([^)]*\)", g.attached).group(0)}
            log(f"  go{v}: {out[v]['hits_per_request']:.2f} hits/request, "
                f"{out[v]['bpf_ns_per_hit'] or 0:.0f} ns BPF per hit; {out[v]['probes']}")
        except Exception as e:  # noqa: BLE001
            out[v] = {"error": str(e).strip().splitlines()[0]}
            log(f"  go{v}: {out[v]['error']}")
        finally:
            if g:
                g.stop()
            svc.stop()
    return out


def section(vs):
    """The versions part's section of benchmarks.md."""
    L = ["## Probe hits per request, by Go release", ""]
    if "error" in vs:
        L += [f"Not measured: {vs['error']}.", ""]
    else:
        L += ["A service built with each release (the list and build rules of "
              "`tests/e2e/test_go_versions.py`), gospan attached, "
              f"{VERSION_REQUESTS} keep-alive `GET /users/1`; the kernel's counts for "
              "gospan's programs.", "",
              "| Go | probes attached | hits / request | BPF ns / hit | BPF µs / request |",
              "|---|---|---:|---:|---:|"]
        for v, r in vs.items():
            if "error" in r:
                L.append(f"| {v} | {r['error']} | | | |")
            else:
                L.append(f"| {v} | {r['probes']} | {r['hits_per_request']:.2f} | "
                         f"{fmt(r['bpf_ns_per_hit'], '.0f')} | "
                         f"{fmt(r['bpf_us_per_request'], '.2f')} |")
        L.append("")

    return L
