"""OTEL_METRICS_EXPORTER=prometheus: gospan serves /metrics in the text exposition format 0.0.4,
read here by a real parser, the Prometheus Python client's (prometheus_client.parser). The example
service gets a known number of requests per (method, route, status) with traces sampled at 10 %:
the request-duration histogram counts every one of them, and a real scraper (the OpenTelemetry
Collector's prometheus receiver) reads the same counts, per process, from gospan's endpoint, under the specification's names
(http_server_request_duration_seconds, _bucket{le}, _sum, _count), with target_info for the
service and for gospan, job and instance on every series, and no series twice. The store is
cumulative whatever the temporality preference says (a warning says so), and a port already taken
stops gospan with a message naming the setting and the address.
"""

import http.client
import socket

import pytest

from collector import collector_bin, start_collector  # noqa: F401 - fixtures
from conftest import call, wait_until

parser = pytest.importorskip("prometheus_client.parser",
                             reason="the prometheus-client package is needed (make deps)")

HIST = "http_server_request_duration_seconds"
SLEEP_MS = 300  # /sleep/300: in the bucket (0.25, 0.5], with 200 ms of room for a slow machine
# (method, path, route the histogram names, status, how many): 97 requests.
PLAN = [
    ("GET", "/users/{n}", "/users/{id}", 200, 37),
    ("POST", "/users", "/users", 201, 11),
    ("DELETE", "/users/{n}", "/users/{id}", 204, 5),
    ("GET", "/status/404", "/status/{code}", 404, 13),
    ("GET", "/status/503", "/status/{code}", 503, 7),
    ("GET", "/users/{n}?x=1", "/users/{id}", 200, 20),
    ("GET", f"/sleep/{SLEEP_MS}", "/sleep/{ms}", 200, 4),
]


def fetch(port, method="GET", path="/metrics"):
    """(status, headers, body text) of one request to gospan's endpoint."""
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        c.request(method, path)
        r = c.getresponse()
        return r.status, {k.lower(): v for k, v in r.getheaders()}, r.read().decode()
    finally:
        c.close()


def send_plan(svc, plan):
    """The requests of PLAN to SVC, each on a connection of its own, each answered as planned."""
    for method, path, _, status, n in plan:
        for i in range(n):
            c = http.client.HTTPConnection(svc.host, svc.port, timeout=10)
            try:
                c.request(method, path.replace("{n}", str(i)),
                          body=b"{}" if method == "POST" else None,
                          headers={"Connection": "close"})
                r = c.getresponse()
                r.read()
                assert r.status == status, (method, path, r.status)
            finally:
                c.close()


def families(text):
    """The families of a scrape, by name, failing on a family or a series given twice."""
    fams, series = {}, set()
    for f in parser.text_string_to_metric_families(text):
        assert f.name not in fams, f"family '{f.name}' twice:\n{text}"
        fams[f.name] = f
        for s in f.samples:
            key = (s.name, tuple(sorted(s.labels.items())))
            assert key not in series, f"series {key} twice:\n{text}"
            series.add(key)
    return fams


def histogram(fams, pid):
    """The request-duration histogram's series of process PID: {(method, route, status):
    {'count': n, 'sum': s, 'buckets': {le: n}}}."""
    out = {}
    for s in fams[HIST].samples:
        if not s.labels["instance"].endswith(f":{pid}"):
            continue
        key = (s.labels["http_request_method"], s.labels["http_route"],
               int(s.labels["http_response_status_code"]))
        h = out.setdefault(key, {"buckets": {}})
        if s.name == HIST + "_bucket":
            h["buckets"][s.labels["le"]] = s.value
        else:
            h[s.name[len(HIST) + 1:]] = s.value
        h["labels"] = {k: v for k, v in s.labels.items() if k != "le"}
    return out


def test_scraped_counts_equal_requests_sent(start_service, start_gospan, otlp_receiver,
                                            free_port):
    svc = start_service()
    port = free_port()
    g = start_gospan(svc.pid, otlp_receiver, env={
        "OTEL_METRICS_EXPORTER": "prometheus",
        "OTEL_EXPORTER_PROMETHEUS_HOST": "127.0.0.1",
        "OTEL_EXPORTER_PROMETHEUS_PORT": str(port),
        "OTEL_TRACES_SAMPLER": "traceidratio",
        "OTEL_TRACES_SAMPLER_ARG": "0.1",
        "OTEL_EXPORTER_OTLP_METRICS_TEMPORALITY_PREFERENCE": "delta",
    })
    g.wait_attached()
    assert f"gospan: metrics: served for Prometheus at http://127.0.0.1:{port}/metrics" in g.stderr
    assert ("OTEL_EXPORTER_OTLP_METRICS_TEMPORALITY_PREFERENCE=delta is not used with "
            "OTEL_METRICS_EXPORTER=prometheus") in g.stderr
    scrapes = 0

    def send(plan):
        send_plan(svc, plan)

    def expected(rounds):
        want = {}
        for method, _, route, status, n in PLAN:
            want[(method, route, status)] = want.get((method, route, status), 0) + n * rounds
        return want

    def scrape():
        nonlocal scrapes
        status, headers, text = fetch(port)
        scrapes += 1
        assert status == 200, text
        assert headers["content-type"] == "text/plain; version=0.0.4; charset=utf-8"
        return text

    def counts_reach(want):
        def check():
            h = histogram(families(scrape()), svc.pid)
            return {k: v.get("count") for k, v in h.items()} == want
        return check

    send(PLAN)
    # Calls are measured as the ring buffer is read: wait until all of them are.
    assert wait_until(counts_reach(expected(1)), 15, step=0.2), scrape()
    text = scrape()
    fams = families(text)
    assert fams[HIST].type == "histogram"
    assert fams[HIST].documentation == "Duration of HTTP server requests."
    hist = histogram(fams, svc.pid)
    assert {k: v["count"] for k, v in hist.items()} == expected(1), text
    for key, h in hist.items():
        les = list(h["buckets"])
        assert les == ["0.005", "0.01", "0.025", "0.05", "0.075", "0.1", "0.25", "0.5", "0.75",
                       "1", "2.5", "5", "7.5", "10", "+Inf"], (key, les)
        values = [h["buckets"][le] for le in les]
        assert values == sorted(values), (key, values)  # cumulative
        assert h["buckets"]["+Inf"] == h["count"], key
        assert 0 < h["sum"] < h["count"] * 10, key
        labels = h["labels"]
        assert labels["job"] == "httpserver", labels
        assert labels["otel_scope_name"] == "gospan", labels
        assert "url_path" not in labels and "http_target" not in labels, labels
        assert ("error_type" in labels) == (key[2] >= 500), labels
    sleep = hist[("GET", "/sleep/{ms}", 200)]
    assert sleep["buckets"]["0.25"] == 0 and sleep["buckets"]["0.5"] == 4, sleep
    assert 4 * SLEEP_MS / 1000 <= sleep["sum"] < 4 * 0.5, sleep

    # target_info: one for the service, one for gospan itself, under the series' job and instance.
    infos = {s.labels["job"]: s for s in fams["target_info"].samples}
    assert set(infos) == {"httpserver", "gospan"}, infos
    svc_info = infos["httpserver"].labels
    assert svc_info["process_pid"] == str(svc.pid)
    assert svc_info["instance"] == hist[("GET", "/users/{id}", 200)]["labels"]["instance"]
    assert svc_info["process_executable_name"] == "httpserver"
    assert svc_info["telemetry_sdk_name"] == "gospan"
    assert "service_name" not in svc_info  # in job already
    assert infos["httpserver"].value == 1
    assert infos["gospan"].labels["instance"] != svc_info["instance"]
    # gospan's own health, counters with _total.
    assert fams["otel_sdk_processor_span_processed"].type == "counter"
    assert any(s.name == "otel_sdk_processor_span_processed_total"
               for s in fams["otel_sdk_processor_span_processed"].samples)
    assert fams["gospan_span_dropped"].type == "counter"
    assert fams["otel_sdk_processor_span_queue_capacity"].type == "gauge"

    # Cumulative across scrapes, whatever the preference said: the same requests again double.
    send(PLAN)
    assert wait_until(counts_reach(expected(2)), 15, step=0.2), scrape()

    # Counted before sampling: the traces kept about a tenth of the requests.
    total = 2 * sum(n for *_, n in PLAN)
    wait_until(lambda: otlp_receiver.snapshot(), 2)
    spans = [s for s in otlp_receiver.snapshot() if s.resource.get("process.pid") == svc.pid]
    assert len(spans) < total / 2, (len(spans), total)

    g.stop_cleanly()
    line = next(ln for ln in g.err.lines if ln.startswith("gospan: metrics: calls measured"))
    assert f"scrapes served {scrapes} (bad requests 0, timed out 0, failed 0)" in line, line


def test_endpoint_answers_only_metrics(start_service, start_gospan, free_port):
    svc = start_service()
    port = free_port()
    g = start_gospan(svc.pid, env={"OTEL_METRICS_EXPORTER": "prometheus",
                                   "OTEL_EXPORTER_PROMETHEUS_HOST": "127.0.0.1",
                                   "OTEL_EXPORTER_PROMETHEUS_PORT": str(port),
                                   "OTEL_TRACES_EXPORTER": "none"})
    g.wait_attached()
    scrapes = 0

    def measured():
        nonlocal scrapes
        scrapes += 1
        return f"{HIST}_count{{" in fetch(port)[2]
    assert call(svc, "GET", "/users/1") == 200
    assert wait_until(measured, 15, step=0.2)
    assert fetch(port, path="/")[0] == 404
    status, headers, _ = fetch(port, method="POST")
    assert status == 405 and headers["allow"] == "GET, HEAD"
    status, headers, body = fetch(port, method="HEAD")
    assert status == 200 and body == "" and int(headers["content-length"]) > 0
    # A client that says nothing does not hold the next scrape.
    with socket.create_connection(("127.0.0.1", port), timeout=10) as silent:
        silent.sendall(b"GET /metr")
        status, _, text = fetch(port)
        scrapes += 1
        assert status == 200 and "target_info{" in text
    g.stop_cleanly()
    line = next(ln for ln in g.err.lines if ln.startswith("gospan: metrics: calls measured"))
    assert f"scrapes served {scrapes} (bad requests 2, timed out 0, failed 0)" in line, line


def test_port_taken_stops_gospan(start_service, start_gospan, free_port):
    svc = start_service()
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        g = start_gospan(svc.pid, env={"OTEL_METRICS_EXPORTER": "prometheus",
                                       "OTEL_EXPORTER_PROMETHEUS_HOST": "127.0.0.1",
                                       "OTEL_EXPORTER_PROMETHEUS_PORT": str(port)})
        assert g.proc.wait(30) != 0
        g.stop()
    assert (f"gospan: cannot serve metrics for Prometheus on 127.0.0.1:{port} "
            f"(OTEL_EXPORTER_PROMETHEUS_HOST=127.0.0.1, OTEL_EXPORTER_PROMETHEUS_PORT={port}): "
            "Address already in use") in g.stderr, g.stderr
    assert "gospan: attached" not in g.stderr


def test_a_real_scraper_reads_every_request(start_service, start_gospan, start_collector,
                                            free_port):
    """The OpenTelemetry Collector's prometheus receiver scrapes gospan every second (honouring
    its job and instance labels): what it forwards, decoded by opentelemetry-proto, has the
    service as a resource of its own (service.name from job, service.instance.id from
    instance, target_info's labels as attributes) with the histogram's per-bucket counts equal
    to the requests sent, and gospan as another with its health counters."""
    svc = start_service()
    port = free_port()
    c = start_collector(scrape=f"127.0.0.1:{port}")
    g = start_gospan(svc.pid, env={
        "OTEL_METRICS_EXPORTER": "prometheus", "OTEL_TRACES_EXPORTER": "none",
        "OTEL_EXPORTER_PROMETHEUS_HOST": "127.0.0.1",
        "OTEL_EXPORTER_PROMETHEUS_PORT": str(port)})
    g.wait_attached()
    # The sleeps' durations are test_scraped_counts_equal_requests_sent's.
    plan = [x for x in PLAN if not x[1].startswith("/sleep")]
    send_plan(svc, plan)
    want = {}
    for method, _, route, status, n in plan:
        want[(method, route, status)] = want.get((method, route, status), 0) + n
    instance = None

    def counts():
        got = {}
        newest = {}
        for p in c.metric_points(HIST):
            if p.resource.get("service.name") != "httpserver":
                continue
            a = p.attrs
            key = (a["http_request_method"], a["http_route"], int(a["http_response_status_code"]))
            if p.point.time_unix_nano >= newest.get(key, (0,))[0]:
                newest[key] = (p.point.time_unix_nano, p)
        for key, (_, p) in newest.items():
            got[key] = p.point.count
        return got, newest
    # The first scrape comes about 5 s after the Collector starts (Prometheus's discovery tick).
    assert wait_until(lambda: counts()[0] == want, 30, step=0.5), (counts()[0], want, c.log())
    got, newest = counts()
    for _, p in newest.values():
        instance = p.resource.get("service.instance.id")
        assert instance and instance.endswith(f":{svc.pid}"), p.resource
        assert p.resource.get("process_pid") == str(svc.pid), p.resource
        assert list(p.point.explicit_bounds) == [0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.25,
                                                 0.5, 0.75, 1, 2.5, 5, 7.5, 10]
        assert sum(p.point.bucket_counts) == p.point.count
    # Traces are off here, so of gospan's health only what it loses: nothing.
    health = [p for p in c.metric_points("gospan_span_dropped_total")
              if p.resource.get("service.name") == "gospan"]
    assert all(p.value == 0 for p in health), [(p.attrs, p.value) for p in health]
    assert health, sorted({p.name for p in c.metric_points()})
    up = [p for p in c.metric_points("up") if p.value == 1]
    assert up, "the scrape never succeeded"
    g.stop_cleanly()
    assert "duplicate sample" not in c.log() and "Failed to scrape" not in c.log(), c.log()
