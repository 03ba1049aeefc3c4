"""RED metrics end to end: gospan's OTLP metrics as a real OpenTelemetry Collector received them
(its otlp receiver, a metrics pipeline, the file exporter), decoded by opentelemetry-proto.

Each test runs its services under a service.name of its own and reads back only that resource's
points. The counts must equal the requests sent whatever the trace sampling kept; the histogram
buckets must agree with known handler durations; exemplars must name spans the Collector got;
cumulative streams must keep their start and grow, delta ones must add up; a restarted gospan
starts new streams; gRPC and data store calls have their histograms; OTLP/JSON and the
cardinality limit behave as configured; a metrics endpoint that fails is counted, and said once.
"""

import json
import re
import secrets
import urllib.request

import pytest

from collector import collector, collector_bin  # noqa: F401 - fixtures
from conftest import Service, _clean_env, call, wait_until
from datastores import EVERY_DRIVER, built_dbmix
from test_datastores import start_dbmix
from test_grpc import grpcmix_bins  # noqa: F401 - a fixture

EXPORT_TIMEOUT = 30.0
DELTA = 1
CUMULATIVE = 2


def gospan_env(collector, service, **extra):
    """A gospan exporting traces and metrics to COLLECTOR under service.name SERVICE."""
    env = {"OTEL_METRICS_EXPORTER": "otlp", "OTEL_EXPORTER_OTLP_ENDPOINT": collector.otlp_endpoint,
           "OTEL_SERVICE_NAME": service, "OTEL_METRIC_EXPORT_INTERVAL": "500"}
    env.update(extra)
    return env


def unique(name):
    return f"{name}-{secrets.token_hex(3)}"


def points_of(collector, service, name=None):
    """Every point the Collector got of SERVICE's resource (of metric NAME, when given)."""
    return [p for p in collector.metric_points(name) if p.resource.get("service.name") == service]


def key(p, *drop):
    """A point's attribute set, hashable, without the attributes DROP names."""
    return frozenset((k, v) for k, v in p.attrs.items() if k not in drop)


def latest(points):
    """{attribute set: the newest point of that set}."""
    out = {}
    for p in sorted(points, key=lambda p: p.point.time_unix_nano):
        out[key(p)] = p
    return out


def wait_for_count(collector, service, name, want, timeout=EXPORT_TIMEOUT):
    """Waits until the newest cumulative points of NAME of SERVICE count WANT calls in all."""
    def total():
        return sum(p.point.count for p in latest(points_of(collector, service, name)).values())
    wait_until(lambda: total() >= want, timeout)
    return total()


def send(svc, path, n, method="GET"):
    """N requests; every status seen."""
    return [call(svc, method, path) for _ in range(n)]


def gospan_line(g, prefix):
    return next((line for line in g.err.lines if line.startswith(prefix)), "")


@pytest.fixture
def traced_server(start_service, start_gospan, collector):  # noqa: F811 - fixture
    """start(service, **env) -> (the example service, its gospan, attached)."""
    def start(service, **env):
        svc = start_service()
        g = start_gospan(svc.pid, env=gospan_env(collector, service, **env))
        g.wait_attached()
        return svc, g
    return start


def test_counts_are_every_request_at_10_percent_sampling(traced_server, collector):  # noqa: F811
    service = unique("red")
    svc, g = traced_server(service, OTEL_TRACES_SAMPLER="traceidratio",
                           OTEL_TRACES_SAMPLER_ARG="0.1")
    sent = {("GET", "/users/{id}", 200): 0, ("GET", "/fail", 500): 0,
            ("GET", "/status/{code}", 404): 0, ("POST", "/users", 201): 0,
            ("GET", None, 404): 0, ("GET", "/sleep/{ms}", 200): 0}
    for i in range(240):
        assert call(svc, "GET", f"/users/{i}") == 200
        sent[("GET", "/users/{id}", 200)] += 1
    for path, k, n in (("/fail", ("GET", "/fail", 500), 40),
                       ("/status/404", ("GET", "/status/{code}", 404), 30),
                       ("/no/such/route", ("GET", None, 404), 20)):
        assert set(send(svc, path, n)) == {k[2]}
        sent[k] += n
    statuses = send(svc, "/users", 25, method="POST")
    assert set(statuses) == {201}, statuses
    sent[("POST", "/users", 201)] += 25
    # Known durations: 4 calls of 110 ms, 4 of 300 ms, each well inside its bucket, (0.1, 0.25]
    # and (0.25, 0.5], for a loaded machine's late wake-ups.
    for ms in (110, 300):
        assert set(send(svc, f"/sleep/{ms}", 4)) == {200}
        sent[("GET", "/sleep/{ms}", 200)] += 4
    total = sum(sent.values())
    g.stop_cleanly()

    got = wait_for_count(collector, service, "http.server.request.duration", total)
    assert got == total, f"counted {got} of {total} requests\n{g.stderr}"
    last = latest(points_of(collector, service, "http.server.request.duration"))
    counts = {}
    for p in last.values():
        a = p.attrs
        k = (a["http.request.method"], a.get("http.route"), a["http.response.status_code"])
        counts[k] = counts.get(k, 0) + p.point.count
        assert p.unit == "s" and p.metric.histogram.aggregation_temporality == CUMULATIVE
        assert a["url.scheme"] == "http" and a["network.protocol.version"] == "1.1", a
        # Only the conventions' low-cardinality attributes: never a path, a peer, a query.
        assert not {"url.path", "url.full", "client.address", "server.address"} & set(a), a
        assert ("error.type" in a) == (a["http.response.status_code"] >= 500), a
        if "error.type" in a:
            assert a["error.type"] == "500", a
        assert sum(p.point.bucket_counts) == p.point.count
        assert list(p.point.explicit_bounds) == [0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.25,
                                                 0.5, 0.75, 1, 2.5, 5, 7.5, 10]
    assert counts == sent, f"{counts}\n!=\n{sent}"

    # The sleeps' buckets, sum, min and max.
    (sleep,) = [p for p in last.values() if p.attrs.get("http.route") == "/sleep/{ms}"]
    b = list(sleep.point.bucket_counts)
    assert b[6] == 4 and b[7] == 4 and sum(b) == 8, b
    assert 4 * 0.110 + 4 * 0.300 <= sleep.point.sum < 4 * 0.110 + 4 * 0.300 + 8 * 0.100, \
        sleep.point.sum
    assert 0.110 <= sleep.point.min < 0.25 and 0.300 <= sleep.point.max < 0.5

    # The traces kept about a tenth; the metrics counted everything regardless.
    summary = g.summary_line()
    unsampled = int(re.search(r"not sampled (\d+)", summary).group(1))

    def service_spans():
        return [s for s in collector.spans() if s.resource.get("service.name") == service]
    wait_until(lambda: len(service_spans()) >= total - unsampled, EXPORT_TIMEOUT)
    spans = service_spans()
    assert len(spans) == total - unsampled, (summary, len(spans))
    assert 0 < len(spans) < total / 3, f"{len(spans)} spans of {total} requests at 10 %"

    # Exemplars point at spans the Collector got: same trace and span id, same duration. Each
    # export carries those of its interval (the final one's is empty): all of them are read.
    ids = {(s.trace_id, s.span_id): s for s in spans}
    exemplars = [x for p in points_of(collector, service, "http.server.request.duration")
                 for x in p.point.exemplars]
    assert exemplars, "no exemplar on any bucket"
    for x in exemplars:
        s = ids.get((x.trace_id, x.span_id))
        assert s is not None, f"exemplar {x.trace_id.hex()}/{x.span_id.hex()} names no span"
        assert abs((s.end_ns - s.start_ns) / 1e9 - x.as_double) < 1e-6
        assert s.end_ns == x.time_unix_nano

    # gospan's own health: spans exported as its summary says, none lost.
    health = points_of(collector, "gospan", "otel.sdk.exporter.span.exported")
    ok = [p for p in health if "error.type" not in p.attrs and p.resource.get("process.pid") ==
          g.proc.pid]
    exported = int(re.search(r"exported (\d+)", summary).group(1))
    assert ok and max(p.value for p in ok) == exported, (exported, [p.value for p in ok])
    metrics_line = gospan_line(g, "gospan: metrics:")
    assert f"calls measured {total}," in metrics_line and "failed 0 (0 points)" in metrics_line, \
        metrics_line


def test_cumulative_streams_keep_their_start_and_a_restart_begins_anew(
        start_service, start_gospan, collector):  # noqa: F811
    service = unique("cumulative")
    svc = start_service()
    env = gospan_env(collector, service, OTEL_METRIC_EXPORT_INTERVAL="300")
    g = start_gospan(svc.pid, env=env)
    g.wait_attached()
    name = "http.server.request.duration"
    send(svc, "/users/1", 20)
    wait_for_count(collector, service, name, 20)
    send(svc, "/users/2", 20)
    g.stop_cleanly()
    assert wait_for_count(collector, service, name, 40) == 40
    first = [p for p in points_of(collector, service, name)]
    assert len(first) >= 2, "one export only: the interval did not pass"
    starts = {p.point.start_time_unix_nano for p in first}
    assert len(starts) == 1, f"a cumulative stream changed its start: {starts}"
    counts = [p.point.count for p in sorted(first, key=lambda p: p.point.time_unix_nano)]
    assert counts == sorted(counts) and counts[-1] == 40, counts
    end_of_first = max(p.point.time_unix_nano for p in first)

    g2 = start_gospan(svc.pid, env=env)
    g2.wait_attached()
    send(svc, "/users/3", 10)
    g2.stop_cleanly()
    ok = wait_until(lambda: any(p.point.start_time_unix_nano > end_of_first
                                for p in points_of(collector, service, name)), EXPORT_TIMEOUT)
    assert ok, "the restarted gospan's points never came"
    second = [p for p in points_of(collector, service, name)
              if p.point.start_time_unix_nano > end_of_first]
    assert max(p.point.count for p in second) == 10, [p.point.count for p in second]
    assert len({p.point.start_time_unix_nano for p in second}) == 1


def test_delta_points_add_up_to_the_requests(start_service, start_gospan, collector):  # noqa: F811
    service = unique("delta")
    svc = start_service()
    g = start_gospan(svc.pid, env=gospan_env(
        collector, service, OTEL_METRIC_EXPORT_INTERVAL="300",
        OTEL_EXPORTER_OTLP_METRICS_TEMPORALITY_PREFERENCE="delta"))
    g.wait_attached()
    name = "http.server.request.duration"
    for burst in range(3):
        send(svc, "/users/7", 15)
        want = 15 * (burst + 1)
        wait_until(lambda: sum(p.point.count for p in points_of(collector, service, name))
                   >= want, EXPORT_TIMEOUT)
    g.stop_cleanly()
    pts = sorted(points_of(collector, service, name), key=lambda p: p.point.time_unix_nano)
    assert sum(p.point.count for p in pts) == 45, [p.point.count for p in pts]
    assert len(pts) >= 3, "fewer exports than bursts"
    assert all(p.metric.histogram.aggregation_temporality == DELTA for p in pts)
    # Intervals follow one another without overlapping, and a delta holds only what it says.
    for a, b in zip(pts, pts[1:]):
        assert a.point.time_unix_nano <= b.point.start_time_unix_nano < b.point.time_unix_nano
    for p in pts:
        assert sum(p.point.bucket_counts) == p.point.count > 0
    # gospan's own counters are deltas too under this preference.
    sums = [p for p in points_of(collector, "gospan", "otel.sdk.processor.span.processed")
            if p.resource.get("process.pid") == g.proc.pid]
    assert sums and all(p.metric.sum.aggregation_temporality == DELTA and
                        p.metric.sum.is_monotonic for p in sums)

    # A restarted gospan: its deltas begin after the last one's, and hold only its calls.
    end_of_first = pts[-1].point.time_unix_nano
    g2 = start_gospan(svc.pid, env=gospan_env(
        collector, service, OTEL_METRIC_EXPORT_INTERVAL="300",
        OTEL_EXPORTER_OTLP_METRICS_TEMPORALITY_PREFERENCE="delta"))
    g2.wait_attached()
    send(svc, "/users/8", 6)
    g2.stop_cleanly()

    def later():
        return [p for p in points_of(collector, service, name)
                if p.point.start_time_unix_nano > end_of_first]
    wait_until(lambda: sum(p.point.count for p in later()) >= 6, EXPORT_TIMEOUT)
    assert sum(p.point.count for p in later()) == 6, [p.point.count for p in later()]


def test_calls_whose_spans_the_full_queue_dropped_are_counted(traced_server,  # noqa: F811
                                                               collector):  # noqa: F811
    """Traces to an endpoint nobody answers, behind a queue of 4 spans: nearly every span is
    dropped (queue_full), and the metrics, sent to the Collector, still count every call."""
    service = unique("queuefull")
    svc, g = traced_server(service, OTEL_EXPORTER_OTLP_TRACES_ENDPOINT="http://127.0.0.1:9/v1/traces",
                           OTEL_BSP_MAX_QUEUE_SIZE="4", OTEL_BSP_MAX_EXPORT_BATCH_SIZE="4",
                           OTEL_BSP_EXPORT_TIMEOUT="500", OTEL_EXPORTER_OTLP_TRACES_TIMEOUT="200")
    send(svc, "/users/3", 60)
    g.stop_cleanly()
    assert wait_for_count(collector, service, "http.server.request.duration", 60) == 60
    summary = g.summary_line()
    m = re.search(r"queue_full=(\d+)", summary)
    assert m and int(m.group(1)) >= 50, summary


def test_grpc_and_data_store_histograms(start_gospan, collector, grpcmix_bins,  # noqa: F811
                                        postgres_server, redis_server, tmp_path):
    grpc_server, grpc_client = grpcmix_bins
    service = unique("rpcdb")
    server = Service(grpc_server, env=_clean_env())
    client = Service(grpc_client, env=_clean_env(),
                     args=("-target", server.base_url.removeprefix("http://")))
    db = start_dbmix(built_dbmix(EVERY_DRIVER), postgres_server, redis_server, tmp_path)
    gospans = []
    try:
        for svc in (server, client, db):
            g = start_gospan(svc.pid, env=gospan_env(collector, service))
            g.wait_attached()
            gospans.append(g)
        with urllib.request.urlopen(f"{client.base_url}/run?scenario=unary_ok",
                                    timeout=30) as r:
            body = json.loads(r.read())
        calls = body["calls"] if isinstance(body, dict) else body
        for path in ("/sql/select?driver=pq", "/sql/select?driver=pgx", "/redis/get"):
            for _ in range(5):
                assert call(db, "GET", path) == 200, path
        for g in gospans:
            g.stop_cleanly()
    finally:
        for svc in (client, server, db):
            svc.stop()

    def count(name, pred=lambda p: True):
        return sum(p.point.count for p in latest(points_of(collector, service, name)).values()
                   if pred(p))
    for name in ("rpc.server.duration", "rpc.client.duration"):
        wait_until(lambda: count(name) >= len(calls), EXPORT_TIMEOUT)
        pts = latest(points_of(collector, service, name)).values()
        assert count(name) == len(calls), (name, count(name), len(calls))
        for p in pts:
            assert p.unit == "ms" and p.attrs["rpc.system"] == "grpc", p.attrs
            assert p.attrs["rpc.service"] and p.attrs["rpc.method"], p.attrs
            assert "rpc.grpc.status_code" in p.attrs
        if name == "rpc.client.duration":
            assert all(p.attrs["server.port"] == server.port for p in pts)
    name = "db.client.operation.duration"
    wait_until(lambda: count(name, lambda p: p.attrs["db.system.name"] == "redis") >= 5,
               EXPORT_TIMEOUT)
    pts = latest(points_of(collector, service, name)).values()
    redis_get = [p for p in pts if p.attrs["db.system.name"] == "redis"
                 and p.attrs.get("db.operation.name") == "GET"]
    assert sum(p.point.count for p in redis_get) == 5, [p.attrs for p in pts]
    selects = [p for p in pts if p.attrs["db.system.name"] == "postgresql"
               and p.attrs.get("db.operation.name") == "SELECT"]
    assert sum(p.point.count for p in selects) == 10, [p.attrs for p in pts]
    assert all(p.attrs.get("db.collection.name") == "items" for p in selects)
    assert not any("db.query.text" in p.attrs for p in pts)
    assert list(redis_get[0].point.explicit_bounds) == [0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1,
                                                        5, 10]
    # The data store calls were made under the /sql and /redis SERVER spans: server metrics too.
    assert count("http.server.request.duration",
                 lambda p: p.resource.get("process.pid") == db.pid) == 15


def test_json_protocol_and_the_cardinality_limit(traced_server, collector):  # noqa: F811
    service = unique("cardinality")
    svc, g = traced_server(service, OTEL_EXPORTER_OTLP_METRICS_PROTOCOL="http/json",
                           GOSPAN_METRICS_CARDINALITY_LIMIT="4")
    codes = list(range(200, 210))
    for code in codes:
        assert set(send(svc, f"/status/{code}", 3)) == {code}
    g.stop_cleanly()
    name = "http.server.request.duration"
    assert wait_for_count(collector, service, name, 30) == 30
    last = latest(points_of(collector, service, name))
    overflow = [p for p in last.values() if p.attrs.get("otel.metric.overflow") is True]
    regular = [p for p in last.values() if "otel.metric.overflow" not in p.attrs]
    # The limit counts the overflow set: three sets of the calls' own, the rest in the fourth.
    assert len(regular) == 3 and len(overflow) == 1, [p.attrs for p in last.values()]
    assert overflow[0].attrs == {"otel.metric.overflow": True}
    assert overflow[0].point.count == 30 - 9
    assert "reached its cardinality limit of 4" in g.stderr
    line = gospan_line(g, "gospan: metrics:")
    # gospan's own health metrics are not limited: their sets are few and gospan's own.
    assert "attribute sets 3 (cardinality limit reached by 1 metrics: 21 calls" in line, line


def test_failing_metrics_endpoint_is_counted_and_said_once(start_service, start_gospan):
    svc = start_service()
    g = start_gospan(svc.pid, env={
        "OTEL_METRICS_EXPORTER": "otlp", "OTEL_TRACES_EXPORTER": "none",
        "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT": "http://127.0.0.1:9/v1/metrics",
        "OTEL_METRIC_EXPORT_INTERVAL": "200", "OTEL_METRIC_EXPORT_TIMEOUT": "300"})
    g.wait_attached()
    send(svc, "/users/1", 5)
    # Each failure waits out its backoff (about a second) before the next export tries.
    wait_until(lambda: False, 2.0)
    g.stop_cleanly()
    line = gospan_line(g, "gospan: metrics:")
    m = re.search(r"exports 0 \(0 points\), failed (\d+) \((\d+) points\)", line)
    assert m and int(m.group(1)) >= 2 and int(m.group(2)) > 0, line
    said = [x for x in g.err.lines if "export to 'http://127.0.0.1:9/v1/metrics' failed" in x]
    assert 1 <= len(said) <= 2, "\n".join(said)
