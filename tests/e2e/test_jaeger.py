"""gospan's spans as a real Jaeger sees them: the frontend -> backend example, one gospan per
process, both exporting OTLP/HTTP to Jaeger v2 (in-memory storage), read back through Jaeger's
HTTP query API. A request to the frontend must be one trace there: two services, three spans
joined by CHILD_OF references, the operation names gospan gives them, and no warning from Jaeger.
The traceparent the backend needs goes out through gospan's socket-layer writer, which works on
kernels in lockdown too; where it cannot work (no cgroup v2), the frontend's two spans are
still one trace, and the backend's is one of its own.
"""

import time
import uuid

import pytest

from jaeger import jaeger, jaeger_bin, parents, service_of, tag  # noqa: F401 (fixtures)
from test_distributed import (GoService, backend_bin, frontend_bin, get,  # noqa: F401 (fixtures)
                              NO_PROPAGATION)

TRACE_TIMEOUT = 20.0  # gospan batches every 200 ms, Jaeger's batch processor every 100 ms


@pytest.fixture(scope="module")
def traced_to_jaeger(jaeger, backend_bin, frontend_bin, start_gospan):
    backend = GoService(backend_bin)
    frontend = GoService(frontend_bin, ["-backend", backend.base_url])
    gospans = {}
    try:
        for svc in (backend, frontend):
            gospans[svc.name] = start_gospan(
                svc.pid, env={"OTEL_EXPORTER_OTLP_ENDPOINT": jaeger.otlp_endpoint})
        for g in gospans.values():
            g.wait_attached()
        yield frontend, backend, gospans
    finally:
        frontend.stop()
        backend.stop()


def _stderr(gospans, jaeger):
    return "\n".join([f"--- gospan on {n} (stderr) ---\n{g.stderr}" for n, g in gospans.items()]
                     + [jaeger.output()])


def wait_for_trace(jaeger, service, tags, nspans, gospans):
    """Polls Jaeger until a trace of SERVICE with a span tagged TAGS has NSPANS spans (or the
    time is up); returns the last trace found, or fails when none was."""
    deadline = time.monotonic() + TRACE_TIMEOUT
    found = None
    while time.monotonic() < deadline:
        traces = jaeger.find_traces(service, tags)
        if traces:
            # The search result may be a partial view: read the whole trace by its id.
            found = jaeger.trace(traces[0]["traceID"]) or traces[0]
            if len(found["spans"]) >= nspans:
                time.sleep(0.5)  # anything extra arriving late is counted too
                return jaeger.trace(found["traceID"])
        time.sleep(0.2)
    assert found is not None, (f"Jaeger has no trace of service '{service}' with {tags} after "
                               f"{TRACE_TIMEOUT:.0f} s; its services: {jaeger.services()}\n"
                               f"{_stderr(gospans, jaeger)}")
    return found


def _describe(trace):
    return "\n".join(f"  {service_of(trace, s)} {s['operationName']!r} span={s['spanID']} "
                     f"refs={parents(s)} kind={tag(s, 'span.kind')} "
                     f"path={tag(s, 'url.path') or tag(s, 'url.full')}"
                     for s in trace["spans"])


def test_server_spans_of_both_services_reach_jaeger(jaeger, traced_to_jaeger):
    """Each process's SERVER span arrives under its own service name and operation."""
    frontend, backend, gospans = traced_to_jaeger
    n = f"j-{uuid.uuid4().hex[:12]}"
    assert get(frontend.base_url, f"/direct/{n}").status == 200
    fe = wait_for_trace(jaeger, "frontend", {"url.path": f"/direct/{n}"}, 1, gospans)
    be = wait_for_trace(jaeger, "backend", {"url.path": f"/work/{n}"}, 1, gospans)
    assert {"frontend", "backend"} <= set(jaeger.services()), jaeger.services()
    root = [s for s in fe["spans"] if tag(s, "url.path") == f"/direct/{n}"]
    assert len(root) == 1 and root[0]["operationName"] == "GET /direct/{id}", _describe(fe)
    assert tag(root[0], "span.kind") == "server", _describe(fe)
    work = [s for s in be["spans"] if tag(s, "url.path") == f"/work/{n}"]
    assert len(work) == 1 and work[0]["operationName"] == "GET /work/{id}", _describe(be)
    assert service_of(be, work[0]) == "backend"


def test_client_span_is_child_of_server_span(jaeger, traced_to_jaeger):
    """Within the frontend: its SERVER span and the CLIENT span of the call it made."""
    frontend, backend, gospans = traced_to_jaeger
    n = f"jc-{uuid.uuid4().hex[:12]}"
    assert get(frontend.base_url, f"/direct/{n}").status == 200
    trace = wait_for_trace(jaeger, "frontend", {"url.path": f"/direct/{n}"}, 2, gospans)
    fe = [s for s in trace["spans"] if service_of(trace, s) == "frontend"]
    assert len(fe) == 2, f"expected 2 frontend spans in the trace:\n{_describe(trace)}"
    kinds = {tag(s, "span.kind"): s for s in fe}
    assert set(kinds) == {"server", "client"}, _describe(trace)
    root, client = kinds["server"], kinds["client"]
    assert root["operationName"] == "GET /direct/{id}" and parents(root) == [], _describe(trace)
    assert client["operationName"] == "GET", _describe(trace)
    assert parents(client) == [("CHILD_OF", root["spanID"])], _describe(trace)
    assert tag(client, "url.full") == f"{backend.base_url}/work/{n}?direct=REDACTED", (
        _describe(trace))
    assert tag(client, "http.response.status_code") == 200, _describe(trace)
    assert not trace.get("warnings"), f"Jaeger warns: {trace['warnings']}\n{_describe(trace)}"


def test_request_is_one_trace_across_two_services(jaeger, traced_to_jaeger):
    """One trace, frontend SERVER -> frontend CLIENT -> backend SERVER. Where no trace context
    can go out, Jaeger holds two traces, and neither names the other."""
    frontend, backend, gospans = traced_to_jaeger
    n = f"jt-{uuid.uuid4().hex[:12]}"
    sent = get(frontend.base_url, f"/direct/{n}")
    assert sent.status == 200, sent
    if NO_PROPAGATION:
        fe = wait_for_trace(jaeger, "frontend", {"url.path": f"/direct/{n}"}, 2, gospans)
        be = wait_for_trace(jaeger, "backend", {"url.path": f"/work/{n}"}, 1, gospans)
        assert fe["traceID"] != be["traceID"], (_describe(fe), _describe(be))
        assert [parents(s) for s in be["spans"]] == [[]], _describe(be)
        assert sent.body["calls"][0]["body"]["traceparent"] == "", sent.body
        return
    trace = wait_for_trace(jaeger, "frontend", {"url.path": f"/direct/{n}"}, 3, gospans)
    spans = trace["spans"]
    assert len(spans) == 3, (f"Jaeger's trace {trace['traceID']} has {len(spans)} spans, "
                             f"expected 3:\n{_describe(trace)}\n{_stderr(gospans, jaeger)}")
    assert {p["serviceName"] for p in trace["processes"].values()} == {"frontend", "backend"}, (
        trace["processes"])
    assert all(s["traceID"] == trace["traceID"] for s in spans)
    assert not trace.get("warnings"), f"Jaeger warns: {trace['warnings']}\n{_describe(trace)}"

    by_kind = {(service_of(trace, s), tag(s, "span.kind")): s for s in spans}
    assert set(by_kind) == {("frontend", "server"), ("frontend", "client"),
                            ("backend", "server")}, _describe(trace)
    root = by_kind["frontend", "server"]
    client = by_kind["frontend", "client"]
    work = by_kind["backend", "server"]

    assert root["operationName"] == "GET /direct/{id}", _describe(trace)
    assert parents(root) == [], f"the frontend SERVER span has references:\n{_describe(trace)}"
    assert client["operationName"] == "GET", _describe(trace)
    assert parents(client) == [("CHILD_OF", root["spanID"])], _describe(trace)
    assert tag(client, "url.full") == f"{backend.base_url}/work/{n}?direct=REDACTED", (
        _describe(trace))
    assert tag(client, "http.response.status_code") == 200, _describe(trace)
    assert work["operationName"] == "GET /work/{id}", _describe(trace)
    assert parents(work) == [("CHILD_OF", client["spanID"])], _describe(trace)
    assert tag(work, "url.path") == f"/work/{n}", _describe(trace)

    # What the backend received names the CLIENT span Jaeger shows.
    tp = sent.body["calls"][0]["body"]["traceparent"]
    assert tp == f"00-{trace['traceID']}-{client['spanID']}-01", (tp, _describe(trace))
