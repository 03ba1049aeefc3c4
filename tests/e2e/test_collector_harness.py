"""The Collector harness (collector.py) itself, before any gospan test relies on it for metrics:
what goes into a real Collector comes back out of its file exporter decoded by
opentelemetry-proto, unchanged.

- OTLP metrics: an ExportMetricsServiceRequest built here with opentelemetry-proto (a counter and
  a histogram with an exemplar) is posted to the Collector's /v1/metrics; the points it wrote
  are the points sent. A trace posted beside it still arrives through the traces pipeline.
- Prometheus: the Collector's prometheus receiver scrapes a small HTTP server here that serves a
  hand-written text exposition (target_info, a counter that grows with every scrape, a
  histogram); the decoded points carry the served values, buckets and labels.

No gospan runs here; the tests take about 10 s once the Collector is built (Prometheus's
discovery hands the receiver its target 5 s after start, so the first scrape comes then).
"""

import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from collector import SCRAPE_JOB, collector_bin, start_collector  # noqa: F401 - fixtures
from conftest import wait_until

WAIT = 20.0
CUMULATIVE = 2  # AggregationTemporality, as numbered in opentelemetry/proto/metrics/v1


def _post(url, body):
    import urllib.request
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    req = urllib.request.Request(url, data=body, method="POST",
                                 headers={"Content-Type": "application/x-protobuf"})
    with opener.open(req, timeout=5.0) as resp:
        return resp.status


def test_otlp_metrics_come_back_decoded(start_collector):
    pb = pytest.importorskip("opentelemetry.proto.collector.metrics.v1.metrics_service_pb2")
    from opentelemetry.proto.collector.trace.v1 import trace_service_pb2
    from opentelemetry.proto.common.v1 import common_pb2

    def kv(k, v):
        return (common_pb2.KeyValue(key=k, value=common_pb2.AnyValue(int_value=v))
                if isinstance(v, int) else
                common_pb2.KeyValue(key=k, value=common_pb2.AnyValue(string_value=v)))

    c = start_collector()
    t0 = time.time_ns() - 10**9
    t1 = time.time_ns()
    trace_id, span_id = bytes(range(1, 17)), bytes(range(1, 9))
    req = pb.ExportMetricsServiceRequest()
    rm = req.resource_metrics.add()
    rm.resource.attributes.extend([kv("service.name", "harness"), kv("process.pid", 4242)])
    sm = rm.scope_metrics.add()
    sm.scope.name, sm.scope.version = "gospan", "0.0.0-test"
    m = sm.metrics.add(name="requests", unit="{request}")
    m.sum.is_monotonic = True
    m.sum.aggregation_temporality = CUMULATIVE
    m.sum.data_points.add(start_time_unix_nano=t0, time_unix_nano=t1, as_int=390,
                          attributes=[kv("http.request.method", "GET")])
    h = sm.metrics.add(name="http.server.request.duration", unit="s")
    h.histogram.aggregation_temporality = CUMULATIVE
    hp = h.histogram.data_points.add(
        start_time_unix_nano=t0, time_unix_nano=t1, count=6, sum=0.75,
        explicit_bounds=[0.005, 0.1, 0.5], bucket_counts=[1, 2, 0, 3],
        attributes=[kv("http.route", "/users/{id}"), kv("http.response.status_code", 200)])
    hp.exemplars.add(time_unix_nano=t1, as_double=0.25, trace_id=trace_id, span_id=span_id)
    assert _post(c.otlp_metrics_url, req.SerializeToString()) == 200

    treq = trace_service_pb2.ExportTraceServiceRequest()
    span = treq.resource_spans.add().scope_spans.add().spans.add(
        name="GET /users/{id}", trace_id=trace_id, span_id=span_id, kind=2,
        start_time_unix_nano=t0, end_time_unix_nano=t1)
    assert _post(c.otlp_url, treq.SerializeToString()) == 200

    points = c.wait_for_points(lambda got: len(got) >= 2, WAIT)
    assert len(points) == 2, f"{points}\n{c.log()}"
    assert len(c.metrics_requests()) == 1
    [rm_back] = c.resource_metrics()
    assert rm_back.scope_metrics[0].scope.name == "gospan"
    counter, hist = points
    assert (counter.name, counter.unit, counter.kind) == ("requests", "{request}", "sum")
    assert counter.metric.sum.is_monotonic
    assert counter.metric.sum.aggregation_temporality == CUMULATIVE
    assert counter.value == 390 and counter.point.WhichOneof("value") == "as_int"
    assert counter.attrs == {"http.request.method": "GET"}
    assert counter.resource == {"service.name": "harness", "process.pid": 4242}
    assert (counter.point.start_time_unix_nano, counter.point.time_unix_nano) == (t0, t1)
    assert (hist.name, hist.unit, hist.kind) == ("http.server.request.duration", "s", "histogram")
    assert hist.attrs == {"http.route": "/users/{id}", "http.response.status_code": 200}
    assert list(hist.point.explicit_bounds) == [0.005, 0.1, 0.5]
    assert list(hist.point.bucket_counts) == [1, 2, 0, 3]
    assert (hist.point.count, hist.point.sum) == (6, 0.75)
    [ex] = hist.point.exemplars
    assert (ex.trace_id, ex.span_id, ex.as_double) == (trace_id, span_id, 0.25)
    assert c.metric_points("requests") == [counter]

    spans = c.wait_for_spans(1, WAIT)
    assert [(s.name, s.trace_id, s.span_id) for s in spans] == [
        (span.name, trace_id, span_id)], c.log()


# ---- the prometheus receiver --------------------------------------------------------------------


# Grows by COUNTER_STEP with every scrape, so each scrape is told from the one before.
COUNTER_STEP = 5

EXPOSITION = """\
# HELP target_info Target metadata
# TYPE target_info gauge
target_info{{service_version="1.2.3",deployment_environment_name="harness"}} 1
# HELP demo_requests_total Requests handled.
# TYPE demo_requests_total counter
demo_requests_total{{method="GET",route="/users/{{id}}"}} {get}
demo_requests_total{{method="POST",route="/users"}} 7
# HELP demo_duration_seconds Request duration.
# TYPE demo_duration_seconds histogram
demo_duration_seconds_bucket{{route="/users/{{id}}",le="0.005"}} 10
demo_duration_seconds_bucket{{route="/users/{{id}}",le="0.01"}} 25
demo_duration_seconds_bucket{{route="/users/{{id}}",le="0.1"}} 40
demo_duration_seconds_bucket{{route="/users/{{id}}",le="+Inf"}} 42
demo_duration_seconds_sum{{route="/users/{{id}}"}} 1.5
demo_duration_seconds_count{{route="/users/{{id}}"}} 42
"""


class Exposition:
    """An HTTP server on loopback answering GET /metrics with EXPOSITION; `served` holds the
    GET counter's value of each scrape, `headers` the request headers of the last."""

    def __init__(self):
        self.served, self.headers = [], None
        lock = threading.Lock()
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, fmt, *args):
                pass

            def do_GET(self):
                if self.path != "/metrics":
                    self.send_error(404)
                    return
                with lock:
                    value = COUNTER_STEP * (len(outer.served) + 1)
                    outer.served.append(value)
                    outer.headers = dict(self.headers)
                body = EXPOSITION.format(get=value).encode()
                self.send_response(200)
                self.send_header("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.address = f"127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def exposition():
    e = Exposition()
    yield e
    e.close()


def test_prometheus_receiver_scrapes_and_forwards(exposition, start_collector):
    c = start_collector(scrape=exposition.address)
    assert wait_until(lambda: len(exposition.served) >= 3, WAIT), (
        f"scraped {len(exposition.served)} times\n{c.log()}")
    # Three scrapes made, the points of the first two at least written.
    points = c.wait_for_points(
        lambda got: len({p.point.time_unix_nano for p in got
                         if p.name == "demo_duration_seconds"}) >= 2, WAIT)
    by_name = {}
    for p in points:
        by_name.setdefault(p.name, []).append(p)
    assert "demo_duration_seconds" in by_name, f"{sorted(by_name)}\n{c.log()}"
    # The scraper is the Collector's (named after the distribution), negotiating as Prometheus
    # does: the text format is one it accepts.
    assert exposition.headers.get("User-Agent", "").startswith("otelcol/"), exposition.headers
    assert "text/plain;version=0.0.4" in exposition.headers.get("Accept", ""), exposition.headers

    # The scraped target's resource: job and instance, and target_info's labels.
    resources = {tuple(sorted(p.resource.items())) for p in points}
    assert len(resources) == 1, resources
    res = points[0].resource
    assert res.get("service.name") == SCRAPE_JOB, res
    assert res.get("service.instance.id") == exposition.address, res
    assert res.get("service_version") == "1.2.3", res
    assert res.get("deployment_environment_name") == "harness", res
    assert "target_info" not in by_name

    ups = by_name.get("up") or []
    assert ups and all(p.value == 1.0 for p in ups), ups

    counters = by_name.get("demo_requests_total") or []
    assert counters, sorted(by_name)
    for p in counters:
        assert p.kind == "sum", p
        assert p.metric.sum.is_monotonic and p.metric.sum.aggregation_temporality == CUMULATIVE
    post = [p.value for p in counters if p.attrs == {"method": "POST", "route": "/users"}]
    get = [p.value for p in counters if p.attrs == {"method": "GET", "route": "/users/{id}"}]
    assert post and set(post) == {7.0}, [(p.attrs, p.value) for p in counters]
    # Each scrape's own value, in the order served, the first scrape's too (the last served
    # may not be written yet).
    assert len(get) >= 2, get
    assert get == [float(v) for v in exposition.served[:len(get)]], (get, exposition.served)

    hists = by_name["demo_duration_seconds"]
    assert len(hists) == len(get), (len(hists), len(get))
    for p in hists:
        assert p.kind == "histogram", p
        assert p.metric.histogram.aggregation_temporality == CUMULATIVE
        assert p.attrs == {"route": "/users/{id}"}, p.attrs
        assert list(p.point.explicit_bounds) == [0.005, 0.01, 0.1], p.point
        assert list(p.point.bucket_counts) == [10, 15, 15, 2], p.point
        assert (p.point.count, p.point.sum) == (42, 1.5), p.point
    # One scrape a second: a loaded machine may skip one, never scrape twice as often.
    times = sorted({p.point.time_unix_nano for p in hists})
    gaps = [(b - a) / 1e9 for a, b in zip(times, times[1:])]
    assert all(g > 0.5 for g in gaps), gaps
