"""The metrics part: what the RED metrics cost gospan's process, the metrics off and on side by
side (bench/feed and the example service under wrk)."""

import os

from .exporter import FEED, FEED_SECONDS, feed_run
from .runner import (CONNS, QUICK, SECONDS, fmt, log, median, start_gospan, start_service,
                     wrk_measured)

# The Go programs the part runs, built into build/bench: {name: source directory}.
GO_PROGRAMS = {"httpserver": "examples/httpserver", "spanpump": "bench/spanpump"}
# The metrics part: gospan's process fed at one rate by bench/feed, and the example service under
# wrk, each with the metrics off and on (exported every second, far more often than the 60 s
# default, so each run pays for several exports), rounds alternating the order.
METRICS_ROUNDS = 2 if QUICK else 5
METRICS_FEED_RATE = 100000
METRICS_ENV = {"off": {"OTEL_METRICS_EXPORTER": "none"},
               "on": {"OTEL_METRICS_EXPORTER": "otlp", "OTEL_METRIC_EXPORT_INTERVAL": "1000"}}


def measure(bins, receiver):
    """What the RED metrics cost: gospan's CPU per span fed at one rate, and the service's and
    gospan's CPU per request under wrk, the metrics off and on side by side in each round."""
    log(f"metrics: {METRICS_ROUNDS} rounds, off and on: bench/feed at {METRICS_FEED_RATE} "
        f"spans/s for {FEED_SECONDS} s, then wrk at {CONNS[-1]} connections for {SECONDS} s")
    feed = {"off": [], "on": []}
    served = {"off": [], "on": []}
    points0 = receiver.stats().get("metric_points", 0)
    for rnd in range(METRICS_ROUNDS):
        order = ("off", "on") if rnd % 2 == 0 else ("on", "off")
        for cfg in order:
            if os.cpu_count() >= 2 and os.access(FEED, os.X_OK):
                r = feed_run(bins, METRICS_FEED_RATE, False, METRICS_ENV[cfg])
                feed[cfg].append(r)
            svc = start_service(bins["httpserver"])
            g = None
            try:
                g = start_gospan(svc.pid, receiver, METRICS_ENV[cfg])
                res, _ = wrk_measured(svc, g, receiver)
            finally:
                if g:
                    g.stop()
                svc.stop()
            w = res[CONNS[-1]]
            served[cfg].append(w)
            log(f"  round {rnd + 1} metrics {cfg:3s}: feed "
                + (f"{feed[cfg][-1]['cpu_us_per_span']:.3f} us CPU/span" if feed[cfg] else "n/a")
                + f"; wrk {w['rps']:.0f}/s, service {w['service_cpu_us']:.2f} us, gospan "
                f"{w['tracer_cpu_us']:.2f} us per request")
    out = {"rounds": METRICS_ROUNDS, "feed_rate": METRICS_FEED_RATE, "feed": feed,
           "served": served, "conns": CONNS[-1],
           "metric_points_received": receiver.stats().get("metric_points", 0) - points0}
    pair = lambda xs, k: [x[k] for x in xs]  # noqa: E731
    if feed["on"] and feed["off"]:
        on, off = pair(feed["on"], "cpu_us_per_span"), pair(feed["off"], "cpu_us_per_span")
        out["feed_added_us"] = median(on) - median(off)
        out["feed_added_rounds"] = [a - b for a, b in zip(on, off)]
        out["feed_off_us"], out["feed_on_us"] = median(off), median(on)
    for k in ("service_cpu_us", "tracer_cpu_us"):
        on, off = pair(served["on"], k), pair(served["off"], k)
        out[k + "_added"] = median(on) - median(off)
        out[k + "_added_rounds"] = [a - b for a, b in zip(on, off)]
    log(f"  metrics add {fmt(out.get('feed_added_us'), '.3f')} us of gospan CPU per span (feed), "
        f"{out['tracer_cpu_us_added']:.3f} us of gospan and {out['service_cpu_us_added']:.3f} us "
        f"of service CPU per request (wrk); {out['metric_points_received']} metric points "
        "received")
    return out


def section(me):
    """The metrics part's section of benchmarks.md."""
    L = ["## What the RED metrics cost", "",
         "gospan measures every finished call into its histograms in its own process, on the "
         "thread that reads the ring buffer; nothing of it runs in the service (no probe, no BPF "
         "program changes). The same runs with `OTEL_METRICS_EXPORTER=none` and with the "
         "metrics on (OTLP, `OTEL_METRIC_EXPORT_INTERVAL=1000`: an export every second, where "
         "the default is a minute), alternating which goes first, "
         f"{me['rounds']} rounds:", "",
         "| | metrics off | metrics on | added (median) | added, each round |", "|---|---:|---:|---:|---|"]
    if me.get("feed_added_us") is not None:
        L.append(f"| gospan's CPU per span, bench/feed at {me['feed_rate']} spans/s | "
                 f"{me['feed_off_us']:.3f} µs | {me['feed_on_us']:.3f} µs | "
                 f"{me['feed_added_us']:+.3f} µs | "
                 + ", ".join(f"{x:+.3f}" for x in me["feed_added_rounds"]) + " |")
    for k, what in (("tracer_cpu_us", "gospan's CPU per request"),
                    ("service_cpu_us", "the service's CPU per request")):
        off = median([x[k] for x in me["served"]["off"]])
        on = median([x[k] for x in me["served"]["on"]])
        L.append(f"| {what}, wrk at {me['conns']} connections | {off:.2f} µs | {on:.2f} µs | "
                 f"{me[k + '_added']:+.2f} µs | "
                 + ", ".join(f"{x:+.2f}" for x in me[k + "_added_rounds"]) + " |")
    L += ["", "The wrk rows are the target's: CPU per request in gospan's process and in the "
          "service, the metrics off and on; the service's figure moves only by noise, since "
          "nothing in it changed. The feed drives gospan's user-space half alone (no uprobe "
          "traps) at a fixed rate: per span, the same cost without the service, but a 5 s run's "
          "CPU varies by a few tenths of a microsecond from round to round (see each round), "
          "as much as what is measured. Measuring a call in the store takes about 0.11 µs on "
          "its own (a loop over one span, not part of this page). "
          f"The receiver took {me['metric_points_received']} metric points over the part.", ""]
    return L


def targets(me, results):
    """The metrics part's row of the targets table."""
    t = []
    # Per request in gospan's process, as the target says: the wrk runs. The feed's figure,
    # per span with gospan's half alone, is beside it.
    added = me["tracer_cpu_us_added"]
    t.append(("RED metrics: at most +0.3 µs CPU per request in gospan's process, nothing "
              "added in the service",
              f"{added:+.2f} µs per request in gospan (wrk at {me['conns']} connections, "
              f"median of {me['rounds']} rounds; rounds "
              f"{min(me['tracer_cpu_us_added_rounds']):+.2f} to "
              f"{max(me['tracer_cpu_us_added_rounds']):+.2f}), "
              f"{fmt(me.get('feed_added_us'), '+.2f')} µs per span under bench/feed; service "
              f"{me['service_cpu_us_added']:+.2f} µs per request (noise: no probe or BPF "
              "program changes)",
              added <= 0.3))
    return t


def per_call(me, results):
    """The cost-per-call row of the RED metrics: on over off, per request under wrk."""
    return [{"family": "RED metrics", "call": f"a request, {me['conns']} connections",
             "added": [me["service_cpu_us_added"]], "tracer": [me["tracer_cpu_us_added"]],
             "steps": "0 (no probe)", "section": "What the RED metrics cost"}]
