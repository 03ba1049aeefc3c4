"""gospan's spans as a real Jaeger sees them: the frontend -> backend example, one gospan per
process, both exporting OTLP/HTTP to Jaeger v2 (in-memory storage), read back through Jaeger's
HTTP query API. A request to the frontend must be one trace there: two services, three spans
joined by CHILD_OF references, the operation names gospan gives them, and no warning from Jaeger.
The traceparent the backend needs goes out through gospan's socket-layer writer, which works on
kernels in lockdown too; where it cannot work (no cgroup v2), the frontend's two spans are
still one trace, and the backend's is one of its own.

Then the demo's whole topology: a second frontend that also looks the request's item up in the
inventory example over gRPC (-inventory), and a gospan on the inventory. A request is then one
trace across three services: frontend SERVER -> frontend CLIENT (HTTP) -> backend SERVER and
frontend SERVER -> frontend CLIENT (gRPC inventory.v1.Inventory/GetItem) -> inventory SERVER,
with the RPC conventions' tags on both gRPC spans; the traceparent goes out in the call's HEADERS
frame. An unknown item is NOT_FOUND: an error for the caller, not for the inventory.

At the end every gospan is stopped with SIGTERM and must exit 0 with no sanitizer report.
"""

import time
import uuid

import pytest

from jaeger import jaeger, jaeger_bin, parents, service_of, tag  # noqa: F401 (fixtures)
from conftest import REPO, stop_cleanly
from test_distributed import (GoService, backend_bin, build_example,  # noqa: F401 (fixtures)
                              frontend_bin, get, NO_PROPAGATION)

TRACE_TIMEOUT = 20.0  # gospan batches every 200 ms, Jaeger's batch processor every 100 ms
RPC_SERVICE, RPC_METHOD = "inventory.v1.Inventory", "GetItem"  # examples/inventory's proto
RPC = f"{RPC_SERVICE}/{RPC_METHOD}"


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
        stop_cleanly(gospans)
    finally:
        frontend.stop()
        backend.stop()


@pytest.fixture(scope="module")
def inventory_bin(build_dir, go_version, bpf_ready):
    return build_example(REPO / "examples" / "inventory", build_dir, go_version)


@pytest.fixture(scope="module")
def traced_with_inventory(jaeger, traced_to_jaeger, inventory_bin, frontend_bin, start_gospan):
    """The inventory and a frontend that calls it and the backend of traced_to_jaeger, a gospan
    on each: (frontend, backend, inventory, every gospan of the module by service)."""
    _, backend, gospans = traced_to_jaeger
    inventory = GoService(inventory_bin)
    frontend = None
    try:
        frontend = GoService(frontend_bin, ["-backend", backend.base_url,
                                            "-inventory", f"{inventory.host}:{inventory.port}"])
        mine = {}
        for name, svc in (("inventory", inventory), ("frontend -inventory", frontend)):
            mine[name] = start_gospan(
                svc.pid, env={"OTEL_EXPORTER_OTLP_ENDPOINT": jaeger.otlp_endpoint})
        for g in mine.values():
            g.wait_attached()
        yield frontend, backend, inventory, {**gospans, **mine}
        stop_cleanly(mine)
    finally:
        if frontend is not None:
            frontend.stop()
        inventory.stop()


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


def _one(trace, service, kind, protocol):
    """The one span of SERVICE of that kind and protocol ('grpc' or 'http') in TRACE."""
    key = "rpc.system" if protocol == "grpc" else "http.request.method"
    got = [s for s in trace["spans"] if service_of(trace, s) == service and
           tag(s, "span.kind") == kind and tag(s, key) is not None]
    assert len(got) == 1, f"{len(got)} {service} {kind} {protocol} spans:\n{_describe(trace)}"
    return got[0]


def _check_rpc_tags(span, trace, inventory, code):
    assert span["operationName"] == RPC, _describe(trace)
    assert tag(span, "rpc.system") == "grpc", _describe(trace)
    assert (tag(span, "rpc.service"), tag(span, "rpc.method")) == (RPC_SERVICE, RPC_METHOD), (
        _describe(trace))
    assert tag(span, "rpc.grpc.status_code") == code, _describe(trace)
    assert (tag(span, "server.address"), tag(span, "server.port")) == ("127.0.0.1",
                                                                       inventory.port), (
        _describe(trace))


def test_request_is_one_trace_across_three_services(jaeger, traced_with_inventory):
    """With -inventory: one trace of five spans, frontend SERVER -> frontend CLIENT (HTTP) ->
    backend SERVER and frontend SERVER -> frontend CLIENT (gRPC) -> inventory SERVER, every link
    exact. Where no trace context can go out, the inventory's span is a trace of its own."""
    frontend, backend, inventory, gospans = traced_with_inventory
    # Item 5 is in stock; this test alone asks for it, so the path finds its trace.
    sent = get(frontend.base_url, "/direct/5")
    assert sent.status == 200 and sent.body["inventory"]["code"] == "OK", sent
    if NO_PROPAGATION:
        fe = wait_for_trace(jaeger, "frontend", {"url.path": "/direct/5"}, 3, gospans)
        assert {service_of(fe, s) for s in fe["spans"]} == {"frontend"}, _describe(fe)
        _check_rpc_tags(_one(fe, "frontend", "client", "grpc"), fe, inventory, 0)
        inv = wait_for_trace(jaeger, "inventory", {"rpc.method": RPC_METHOD}, 1, gospans)
        assert inv["traceID"] != fe["traceID"], (_describe(fe), _describe(inv))
        assert [parents(s) for s in inv["spans"]] == [[]], _describe(inv)
        return
    trace = wait_for_trace(jaeger, "frontend", {"url.path": "/direct/5"}, 5, gospans)
    assert len(trace["spans"]) == 5, (f"Jaeger's trace {trace['traceID']} has "
                                      f"{len(trace['spans'])} spans, expected 5:\n"
                                      f"{_describe(trace)}\n{_stderr(gospans, jaeger)}")
    assert {p["serviceName"] for p in trace["processes"].values()} == {
        "frontend", "backend", "inventory"}, trace["processes"]
    assert not trace.get("warnings"), f"Jaeger warns: {trace['warnings']}\n{_describe(trace)}"

    root = _one(trace, "frontend", "server", "http")
    call = _one(trace, "frontend", "client", "http")
    work = _one(trace, "backend", "server", "http")
    lookup = _one(trace, "frontend", "client", "grpc")
    served = _one(trace, "inventory", "server", "grpc")

    assert root["operationName"] == "GET /direct/{id}" and parents(root) == [], _describe(trace)
    assert parents(call) == [("CHILD_OF", root["spanID"])], _describe(trace)
    assert parents(work) == [("CHILD_OF", call["spanID"])], _describe(trace)
    # The gRPC hop.
    assert parents(lookup) == [("CHILD_OF", root["spanID"])], _describe(trace)
    assert parents(served) == [("CHILD_OF", lookup["spanID"])], (
        f"the inventory's SERVER span is not the child of the frontend's gRPC CLIENT span:\n"
        f"{_describe(trace)}\n{_stderr(gospans, jaeger)}")
    for span in (lookup, served):
        _check_rpc_tags(span, trace, inventory, 0)
        assert tag(span, "error") is None and tag(span, "otel.status_code") is None, (
            _describe(trace))
    assert tag(lookup, "network.protocol.name") == "http", _describe(trace)
    assert tag(served, "client.address") == "127.0.0.1", _describe(trace)
    # The lookup came first, on the handler's goroutine, and ended before the backend call.
    assert lookup["startTime"] + lookup["duration"] <= call["startTime"], _describe(trace)
    # What the backend received names the HTTP CLIENT span Jaeger shows.
    tp = sent.body["calls"][0]["body"]["traceparent"]
    assert tp == f"00-{trace['traceID']}-{call['spanID']}-01", (tp, _describe(trace))


def test_unknown_item_is_an_error_for_the_caller_only(jaeger, traced_with_inventory):
    """NOT_FOUND: the frontend's gRPC CLIENT span is an error with the code's name and message;
    the inventory's SERVER span carries the code but is no error (NOT_FOUND is the caller's
    problem, as the RPC conventions have it); the frontend answers 404, no error either."""
    frontend, backend, inventory, gospans = traced_with_inventory
    n = f"jn-{uuid.uuid4().hex[:12]}"
    sent = get(frontend.base_url, f"/direct/{n}")
    assert sent.status == 404 and sent.body["inventory"]["code"] == "NotFound", sent
    want = 3 if NO_PROPAGATION else 5
    trace = wait_for_trace(jaeger, "frontend", {"url.path": f"/direct/{n}"}, want, gospans)
    root = _one(trace, "frontend", "server", "http")
    assert tag(root, "http.response.status_code") == 404, _describe(trace)
    assert tag(root, "error") is None, _describe(trace)
    lookup = _one(trace, "frontend", "client", "grpc")
    _check_rpc_tags(lookup, trace, inventory, 5)
    assert tag(lookup, "error") is True and tag(lookup, "otel.status_code") == "ERROR", (
        _describe(trace))
    assert tag(lookup, "error.type") == "NOT_FOUND", _describe(trace)
    assert tag(lookup, "otel.status_description") == f"inventory: no item '{n}'", (
        _describe(trace))
    if NO_PROPAGATION:
        return
    served = _one(trace, "inventory", "server", "grpc")
    assert parents(served) == [("CHILD_OF", lookup["spanID"])], _describe(trace)
    _check_rpc_tags(served, trace, inventory, 5)
    assert tag(served, "error") is None and tag(served, "error.type") is None, _describe(trace)
