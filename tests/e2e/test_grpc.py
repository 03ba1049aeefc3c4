"""gRPC (google.golang.org/grpc) server and client spans, on real grpc-go services.

tests/e2e/grpcmix has two programs: a gRPC server (grpc.testing.TestService, no net/http server
at all) and a client process that holds one ClientConn to it and makes the calls of a scenario
when asked over HTTP (GET /run?scenario=NAME), answering with what each call got and when. One
gospan on each process exports to one OTLP receiver; every span is judged on what the official
opentelemetry-proto decoder made of the export.

What gospan must make of each RPC:

- a SERVER span in the server, named "grpc.testing.TestService/Method", with rpc.system "grpc",
  rpc.service, rpc.method, rpc.grpc.status_code, server.address/port (the listener),
  client.address/port and network.peer.address/port (the client's socket); status ERROR only
  for the codes the conventions call server errors (UNKNOWN, DEADLINE_EXCEEDED, UNIMPLEMENTED,
  INTERNAL, UNAVAILABLE, DATA_LOSS), with error.type the code's name and the status message;
- a CLIENT span in the client with the same name and rpc.* attributes, server.address/port from
  the dial target, status ERROR for every code but OK; a child of the HTTP SERVER span of the
  /run request whose goroutine made the call (or started the goroutine that did);
- both inside the client's own window around the call; a streaming RPC lasts as long as its
  stream;
- a caller's traceparent in the request metadata is joined: the SERVER span is in its trace,
  its child, with its tracestate.
"""

import json
import platform
import subprocess
import time
import urllib.request
from dataclasses import dataclass

import pytest

from conftest import (REPO, SLOWDOWN, STATUS_ERROR, STATUS_UNSET, Service, _clean_env,
                      _go_env, trace_context_counters)

GRPCMIX = REPO / "tests" / "e2e" / "grpcmix"
SPAN_KIND_SERVER, SPAN_KIND_CLIENT = 2, 3
SERVICE = "grpc.testing.TestService"
WINDOW_SLACK_NS = 1_000_000
SPAN_TIMEOUT = 15.0 * SLOWDOWN  # an export retried on a slow machine comes seconds later
SETTLE = 1.0
# Codes the RPC conventions call errors on the server side (the rest are the caller's problem).
SERVER_ERROR_CODES = {2, 4, 12, 13, 14, 15}
CODE_NAMES = ["OK", "CANCELLED", "UNKNOWN", "INVALID_ARGUMENT", "DEADLINE_EXCEEDED", "NOT_FOUND",
              "ALREADY_EXISTS", "PERMISSION_DENIED", "RESOURCE_EXHAUSTED", "FAILED_PRECONDITION",
              "ABORTED", "OUT_OF_RANGE", "UNIMPLEMENTED", "INTERNAL", "UNAVAILABLE", "DATA_LOSS",
              "UNAUTHENTICATED"]
HAND_TRACE_ID = "0af7651916cd43dd8448eb211c80319c"
HAND_PARENT_ID = "b7ad6b7169203331"


def build_grpcmix(build_dir):
    """Both programs with the committed go.mod (the newest grpc-go) and the installed Go."""
    out = build_dir / "e2e" / "grpcmix"
    out.mkdir(parents=True, exist_ok=True)
    for prog in ("server", "client"):
        res = subprocess.run(["go", "build", "-o", str(out / f"grpcmix-{prog}"), f"./{prog}"],
                             cwd=GRPCMIX, capture_output=True, text=True, timeout=600,
                             env=_go_env())
        if res.returncode != 0:
            pytest.fail(f"cannot build grpcmix {prog}:\n{res.stderr}")
    return out / "grpcmix-server", out / "grpcmix-client"


@pytest.fixture(scope="session")
def grpcmix_bins(build_dir, bpf_ready):
    return build_grpcmix(build_dir)


class GrpcServer(Service):
    pass


@dataclass
class Pair:
    server: Service
    client: Service
    gospans: dict

    def run(self, scenario, timeout=60):
        url = f"{self.client.base_url}/run?scenario={scenario}"
        with urllib.request.urlopen(url, timeout=timeout) as resp:
            assert resp.status == 200, f"{url}: {resp.status}"
            body = json.loads(resp.read())
        return body["calls"] if isinstance(body, dict) else body

    def stderr(self):
        return "\n".join(f"--- gospan on {n} ---\n{g.stderr}" for n, g in self.gospans.items())


def start_pair(bins, start_gospan, receiver, args=(), service_args=(), server_env=None):
    server_bin, client_bin = bins
    server = Service(server_bin, env={**_clean_env(), **(server_env or {})}, args=service_args)
    try:
        client = Service(client_bin, env=_clean_env(),
                         args=("-target", server.base_url.removeprefix("http://"),
                               *service_args))
    except BaseException:
        server.stop()
        raise
    gospans = {}
    for name, svc in (("server", server), ("client", client)):
        gospans[name] = start_gospan(svc.pid, receiver, args=args)
    for name, svc in (("server", server), ("client", client)):
        line = gospans[name].wait_attached()
        assert f"pid {svc.pid}" in line, line
    return Pair(server, client, gospans)


@pytest.fixture(scope="module")
def pair(grpcmix_bins, start_gospan, otlp_receiver):
    p = start_pair(grpcmix_bins, start_gospan, otlp_receiver)
    yield p
    p.client.stop()
    p.server.stop()


def spans_of(receiver, pid, kind=None):
    return [s for s in receiver.snapshot()
            if s.resource.get("process.pid") == pid and (kind is None or s.kind == kind)]


def wait_spans(receiver, pred, n, what, pair):
    deadline = time.monotonic() + SPAN_TIMEOUT
    while time.monotonic() < deadline:
        got = [s for s in receiver.snapshot() if pred(s)]
        if len(got) >= n:
            time.sleep(SETTLE)
            return [s for s in receiver.snapshot() if pred(s)]
        time.sleep(0.1)
    got = [s for s in receiver.snapshot() if pred(s)]
    raise AssertionError(f"{what}: {len(got)} spans of {n} arrived\n{pair.stderr()}")


def in_window(span, call):
    return (call["start_unix_ns"] - WINDOW_SLACK_NS <= span.start_ns <= span.end_ns
            <= call["end_unix_ns"] + WINDOW_SLACK_NS)


def rpc_name(call):
    return call["method"].lstrip("/")


def check_common(span, call, kind):
    name = rpc_name(call)
    service, method = name.rsplit("/", 1)
    assert span.kind == kind
    assert span.name == name
    assert span.attrs.get("rpc.system") == "grpc", span.attrs
    assert span.attrs.get("rpc.service") == service, span.attrs
    assert span.attrs.get("rpc.method") == method, span.attrs
    assert span.attrs.get("rpc.grpc.status_code") == call["code"], (span.attrs, call)


def check_server_span(span, call, server_port):
    check_common(span, call, SPAN_KIND_SERVER)
    code = call["code"]
    if code in SERVER_ERROR_CODES:
        assert span.status_code == STATUS_ERROR, (span, call)
        assert span.attrs.get("error.type") == CODE_NAMES[code]
    else:
        assert span.status_code == STATUS_UNSET, (span, call)
        assert "error.type" not in span.attrs
    assert span.attrs.get("server.address") == "127.0.0.1", span.attrs
    assert span.attrs.get("server.port") == server_port, span.attrs
    assert span.attrs.get("client.address") == "127.0.0.1", span.attrs
    assert span.attrs.get("network.peer.address") == "127.0.0.1", span.attrs
    assert isinstance(span.attrs.get("client.port"), int) and span.attrs["client.port"] > 0
    assert span.attrs.get("network.peer.port") == span.attrs["client.port"]


def check_client_span(span, call, server_port):
    check_common(span, call, SPAN_KIND_CLIENT)
    if call["code"]:
        assert span.status_code == STATUS_ERROR, (span, call)
        assert span.attrs.get("error.type") == CODE_NAMES[call["code"]]
    else:
        assert span.status_code == STATUS_UNSET, (span, call)
    assert span.attrs.get("server.address") == "127.0.0.1", span.attrs
    assert span.attrs.get("server.port") == server_port, span.attrs


def run_and_collect(pair, receiver, scenario, expect_server=True):
    """Runs SCENARIO; returns [(call, client_span, server_span or None)], each matched by method,
    code and the client's window. The /run SERVER span is checked to be every CLIENT's parent."""
    calls = pair.run(scenario)
    assert calls, f"scenario {scenario} made no calls"
    cpid, spid = pair.client.pid, pair.server.pid
    n = len(calls)
    wait_spans(receiver, lambda s: s.resource.get("process.pid") == cpid and
               s.kind == SPAN_KIND_CLIENT and any(in_window(s, c) for c in calls), n,
               f"CLIENT spans of {scenario}", pair)
    if expect_server:
        wait_spans(receiver, lambda s: s.resource.get("process.pid") == spid and
                   s.kind == SPAN_KIND_SERVER and any(in_window(s, c) for c in calls), n,
                   f"SERVER spans of {scenario}", pair)
    clients = [s for s in spans_of(receiver, cpid, SPAN_KIND_CLIENT)
               if any(in_window(s, c) for c in calls)]
    servers = [s for s in spans_of(receiver, spid, SPAN_KIND_SERVER)
               if any(in_window(s, c) for c in calls)]
    runs = [s for s in spans_of(receiver, cpid, SPAN_KIND_SERVER)
            if s.attrs.get("url.path") == "/run"]
    out = []
    for c in calls:
        def match(s):
            return (s.name == rpc_name(c) and s.attrs.get("rpc.grpc.status_code") == c["code"]
                    and in_window(s, c))
        cs = [s for s in clients if match(s)]
        seen = c.get("seen_traceparent", "")
        if seen and not seen.startswith(f"00-{HAND_TRACE_ID}-"):
            # The context the server received names the CLIENT span that carried it.
            cs = [s for s in cs if f"00-{s.trace_id.hex()}-{s.span_id.hex()}-01" == seen]
        assert cs, f"no CLIENT span for {c}\n{clients}\n{pair.stderr()}"
        client_span = cs[0]
        clients.remove(client_span)
        parent = [r for r in runs if r.span_id == client_span.parent_span_id]
        assert parent, f"the CLIENT span of {c} is not a child of a /run SERVER span"
        assert parent[0].trace_id == client_span.trace_id
        server_span = None
        if expect_server:
            # The call carried its CLIENT span's context (or the one its caller set by hand,
            # which gospan leaves alone): the handler's span is that span's child.
            parent = client_span.span_id
            if seen.startswith(f"00-{HAND_TRACE_ID}-"):
                parent = bytes.fromhex(HAND_PARENT_ID)
            ss = [s for s in servers if match(s) and s.parent_span_id == parent]
            assert ss, (f"no SERVER span, child of {client_span.span_id.hex()}, for {c}\n"
                        f"{servers}\n{pair.stderr()}")
            server_span = ss[0]
            if parent == client_span.span_id:
                assert server_span.trace_id == client_span.trace_id
            servers.remove(server_span)
        out.append((c, client_span, server_span))
    assert not clients, f"CLIENT spans nobody made: {clients}"
    if expect_server:
        assert not servers, f"SERVER spans nobody made: {servers}"
    return out


def server_port(pair):
    return int(pair.server.base_url.rsplit(":", 1)[1])


@pytest.mark.parametrize("scenario", ["unary_ok", "empty", "unary_error", "server_stream",
                                      "client_stream", "bidi", "panic", "concurrent"])
def test_rpc_spans(pair, otlp_receiver, scenario):
    port = server_port(pair)
    got = run_and_collect(pair, otlp_receiver, scenario)
    for call, client_span, server_span in got:
        check_client_span(client_span, call, port)
        check_server_span(server_span, call, port)
        # The handler ran inside the call, as the client saw it.
        assert client_span.start_ns <= server_span.start_ns <= server_span.end_ns \
            <= client_span.end_ns + WINDOW_SLACK_NS, (client_span, server_span)
    if scenario == "unary_error":
        assert {c["code"] for c, _, _ in got} == {5, 3, 13, 14, 7, 16, 6, 8, 9, 10, 11, 12, 15,
                                                   2}
        for call, client_span, server_span in got:
            assert client_span.status_message == call["message"], (client_span, call)
            if call["code"] in SERVER_ERROR_CODES:
                assert server_span.status_message == call["message"]
    if scenario == "panic":
        (call, client_span, server_span), = got
        assert call["code"] == 13 and server_span.status_code == STATUS_ERROR
    if scenario == "concurrent":
        assert len(got) == 64
        assert len({s.span_id for _, s, _ in got}) == 64
        assert len({s.span_id for _, _, s in got}) == 64


@pytest.mark.parametrize("scenario,code", [("deadline", 4), ("cancel", 1)])
def test_calls_that_end_early(pair, otlp_receiver, scenario, code):
    """The client ends the call (deadline, cancellation) while the handler sleeps: its span ends
    then, with the code it got; the server's span ends when the handler has returned."""
    calls = pair.run(scenario)
    (call,) = calls
    assert call["code"] == code, call
    cpid, spid = pair.client.pid, pair.server.pid
    (client_span,) = wait_spans(
        otlp_receiver, lambda s: s.resource.get("process.pid") == cpid and
        s.kind == SPAN_KIND_CLIENT and in_window(s, call), 1, scenario, pair)
    check_client_span(client_span, call, server_port(pair))
    servers = wait_spans(
        otlp_receiver, lambda s: s.resource.get("process.pid") == spid and
        s.kind == SPAN_KIND_SERVER and s.name == rpc_name(call) and
        s.start_ns >= call["start_unix_ns"] - WINDOW_SLACK_NS and
        s.start_ns <= call["end_unix_ns"], 1, scenario, pair)
    (server_span,) = servers
    assert server_span.attrs.get("rpc.system") == "grpc"
    # The handler saw the cancellation and returned its context's error, a status of its own.
    assert server_span.attrs.get("rpc.grpc.status_code") in (1, 4), server_span.attrs
    assert server_span.start_ns >= client_span.start_ns
    # The call's context went out in its HEADERS frame before the client gave up.
    assert server_span.trace_id == client_span.trace_id
    assert server_span.parent_span_id == client_span.span_id


def test_each_connection_names_its_own_client(grpcmix_bins, start_gospan, otlp_receiver):
    """gospan reads a server connection's endpoints on its first RPC and keeps them by the
    transport's address, which Go gives to a later connection once the first is collected (the
    server runs with GOGC=1 so that comes soon): each of 32 calls, each on a connection of its
    own made after the one before was closed, has a SERVER span naming that connection's port."""
    p = start_pair(grpcmix_bins, start_gospan, otlp_receiver, server_env={"GOGC": "1"})
    try:
        got = run_and_collect(p, otlp_receiver, "reconnect")
        port = server_port(p)
        ports = []
        for call, client_span, server_span in got:
            assert call["code"] == 0 and call["local_port"] > 0, call
            check_client_span(client_span, call, port)
            check_server_span(server_span, call, port)
            assert server_span.attrs.get("client.port") == call["local_port"], \
                (call, server_span.attrs)
            ports.append(call["local_port"])
        assert len(set(ports)) == len(ports), f"connections shared a port: {ports}"
    finally:
        p.client.stop()
        p.server.stop()


def test_incoming_traceparent_is_joined(pair, otlp_receiver):
    (call, client_span, server_span), = run_and_collect(pair, otlp_receiver, "with_traceparent")
    assert call["seen_traceparent"].startswith(f"00-{HAND_TRACE_ID}-"), call
    assert server_span.trace_id.hex() == HAND_TRACE_ID, server_span
    assert server_span.parent_span_id.hex() == HAND_PARENT_ID
    assert server_span.proto.trace_state == "vendor=value"


def test_relay_is_one_trace_inside_the_server(pair, otlp_receiver):
    """A handler's own gRPC call (the server relays to its downstream, itself here) is a CLIENT
    span, child of the handler's SERVER span, and the downstream's SERVER span is its child:
    /run SERVER -> CLIENT -> SERVER -> CLIENT -> SERVER, one trace, exact parents."""
    (call,) = pair.run("relay")
    assert call["code"] == 0, call
    spid = pair.server.pid
    spans = wait_spans(otlp_receiver, lambda s: s.resource.get("process.pid") == spid and
                       in_window(s, call), 3, "the relay's spans in the server", pair)
    by_kind = {k: [s for s in spans if s.kind == k] for k in (SPAN_KIND_SERVER, SPAN_KIND_CLIENT)}
    assert len(by_kind[SPAN_KIND_SERVER]) == 2 and len(by_kind[SPAN_KIND_CLIENT]) == 1, spans
    (hop,) = by_kind[SPAN_KIND_CLIENT]
    outer = [s for s in by_kind[SPAN_KIND_SERVER] if s.span_id == hop.parent_span_id]
    inner = [s for s in by_kind[SPAN_KIND_SERVER] if s.parent_span_id == hop.span_id]
    assert outer and inner, f"the relay's spans are not chained: {spans}"
    assert outer[0].trace_id == hop.trace_id == inner[0].trace_id
    assert outer[0].start_ns <= hop.start_ns <= inner[0].start_ns <= inner[0].end_ns \
        <= hop.end_ns <= outer[0].end_ns + WINDOW_SLACK_NS
    clients = [s for s in spans_of(otlp_receiver, pair.client.pid, SPAN_KIND_CLIENT)
               if in_window(s, call)]
    assert len(clients) == 1 and outer[0].parent_span_id == clients[0].span_id


def test_grpc_without_net_http_server_is_traced(pair):
    """grpcmix's server links no net/http server at all: gospan traces its gRPC, and says so."""
    line = pair.gospans["server"].err.match
    assert "no HTTP server" in line and "gRPC server" in line, line
    # amd64 emulates every probe here; arm64 single-steps each entry (the function's first
    # instruction, docs/arm64.md): two a served RPC passes, three a made one.
    steps = (2, 3) if platform.machine() == "aarch64" else (0, 0)
    assert f"single-stepped hits: {steps[0]} an RPC served, {steps[1]} an RPC made" in line, line


def test_service_without_grpc_gets_no_grpc_probes(start_service, start_gospan, otlp_receiver):
    """A net/http service that does not use grpc-go: no gRPC probe is placed, none is named."""
    svc = start_service()
    g = start_gospan(svc.pid, otlp_receiver, args=("--verbose",))
    line = g.wait_attached()
    assert "gRPC" not in line, line
    assert g.stop() == 0, g.stderr
    # --verbose lists every probed function: none of grpc-go's.
    assert "google.golang.org/grpc" not in g.stderr, g.stderr
    assert "net/http.serverHandler.ServeHTTP" in g.stderr, g.stderr


def test_grpc_over_tls_gets_spans_and_no_context(grpcmix_bins, start_gospan, otlp_receiver):
    """Over TLS the HEADERS frame is encrypted inside the process, before the socket layer: the
    call gets its spans on both sides, no traceparent is added (the server's span starts a trace
    of its own), and the client's gospan counts the call under https."""
    p = start_pair(grpcmix_bins, start_gospan, otlp_receiver, service_args=("-tls",))
    try:
        (call,) = p.run("unary_ok")
        assert call["code"] == 0 and call["seen_traceparent"] == "", call
        (client_span,) = wait_spans(
            otlp_receiver, lambda s: s.resource.get("process.pid") == p.client.pid and
            s.kind == SPAN_KIND_CLIENT and in_window(s, call), 1, "the TLS call's CLIENT span", p)
        (server_span,) = wait_spans(
            otlp_receiver, lambda s: s.resource.get("process.pid") == p.server.pid and
            s.kind == SPAN_KIND_SERVER and in_window(s, call), 1, "the TLS call's SERVER span", p)
        check_client_span(client_span, call, server_port(p))
        check_server_span(server_span, call, server_port(p))
        assert server_span.trace_id != client_span.trace_id
        assert server_span.parent_span_id == b""
        g = p.gospans["client"]
        assert g.stop() == 0, g.stderr
        counters = trace_context_counters(g.summary_line())
        assert counters["https"] == 1 and counters["sent"] == 0, counters
    finally:
        p.client.stop()
        p.server.stop()
