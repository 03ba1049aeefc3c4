"""docker-compose.yml on a real Docker engine, as a user runs it (compose.py): the images built
from the repository's Dockerfiles, the demo brought up with `docker compose up`, gospan in its
own containers tracing the services in theirs.

- gospan's image run as the compose file runs it, one capability taken away at a time: each
  is shown needed where the kernel lets a test show it;
- every frontend request one trace across the frontend, backend, inventory and consumer
  containers, every parent link exact, through the Kafka container too (the backend's PRODUCER
  span the parent of the consumer's CONSUMER span, the consumer's stock check under that), read
  back from Jaeger in its container;
- every span's resource names its container (`container.id`, checked against `docker
  inspect`), its service (the container's own OTEL_SERVICE_NAME) and the host (host.name, not
  gospan's container);
- a service restarted in its container, and one in a new container started after gospan, traced
  again by the gospan already running.

Where no Docker engine can be had (not installed, no root) every test skips and says why; with
CI=true that is a failure (conftest.py), since CI installs and starts the engine. Everything the
module made (containers, networks, images, the build cache, a dockerd it started) goes at the
end.
"""

import json
import os
import re
import socket
import time
import urllib.request
import uuid

import pytest
import yaml

import compose
from jaeger import QueryAPI, _hops, process_tags, service_of, tag

PROJECT = "gospan-e2e"
# The capabilities docker-compose.yml gives gospan, each taken away in turn where that shows.
CAPABILITY_CASES = {
    # name: (capabilities taken away, attaches, service.name from the service's environment)
    "as in compose": (set(), True, True),
    "without SYS_PTRACE": ({"SYS_PTRACE"}, False, None),
    "without DAC_READ_SEARCH": ({"DAC_READ_SEARCH"}, True, False),
}


def _skip_without_engine():
    if os.geteuid() != 0:
        pytest.skip("the compose demo needs root: it starts the Docker engine and gospan's "
                    "containers load BPF programs")
    for tool in ("docker", "dockerd"):
        if not compose.shutil.which(tool):
            pytest.skip(f"no Docker engine: '{tool}' is not installed (Debian's docker.io; "
                        f"`make deps` installs it)")


@pytest.fixture(scope="module")
def built(tmp_path_factory, bpf_ready):
    """The engine (started here if none runs), the compose tool, the images the compose file
    names (stand-ins made where missing) and the services' images built; all of it taken down
    at the end."""
    _skip_without_engine()
    d = compose.Demo(tmp_path_factory.mktemp("compose"), project=PROJECT)
    try:
        try:
            d.prepare()
        except compose.Unavailable as e:
            pytest.skip(f"no Docker engine or compose tool here: {e}")
        d.compose("build", timeout=1800)
        yield d
    finally:
        d.down()


def _image(d, service):
    return f"{PROJECT}-{service}"


def _docker(*args, check=True, timeout=120):
    return compose.run(["docker", *args], f"docker {args[0]}", check=check, timeout=timeout)


def _host_port(container, port):
    """The loopback port Docker published CONTAINER's TCP PORT on."""
    info = json.loads(_docker("inspect", container).stdout)[0]
    return info["NetworkSettings"]["Ports"][f"{port}/tcp"][0]["HostPort"]


def _wait_attached(container, timeout):
    """gospan's messages in CONTAINER once it says it attached, or after TIMEOUT seconds."""
    deadline = time.monotonic() + timeout
    logs = ""
    while time.monotonic() < deadline and "gospan: attached" not in logs:
        time.sleep(0.5)
        logs = _docker("logs", container).stderr
    return logs


def _gospan_run_args(d, caps):
    """`docker run` arguments for gospan as docker-compose.yml runs it, with CAPS."""
    svc = compose.compose_config()["services"]["gospan-frontend"]
    args = ["--pid", "host", "--uts", "host", "--cgroupns", "host", "--read-only",
            "--cap-drop", "ALL", *[a for c in sorted(caps) for a in ("--cap-add", c)]]
    for opt in svc.get("security_opt", []):
        args += ["--security-opt", opt]
    assert svc["read_only"] and svc["pid"] == "host" and svc["cap_drop"] == ["ALL"]
    return args


def test_gospan_image_has_what_gospan_links_and_opens(built):
    """The runtime stage's packages bring every library gospan links against (ldd in the
    image); capstone, which gospan opens itself while it reads a target, is shown there by the
    attaches below."""
    img = _image(built, "gospan-frontend")
    out = _docker("run", "--rm", "--entrypoint", "ldd", img, "/usr/local/bin/gospan").stdout
    assert "=>" in out and "not found" not in out, out
    res = _docker("run", "--rm", img, "--version")
    assert res.stdout.startswith("gospan "), res.stdout + res.stderr


@pytest.mark.parametrize("case", CAPABILITY_CASES)
def test_gospan_capabilities(built, case):
    """gospan's image with the privileges docker-compose.yml gives it, one taken away where that
    shows: without SYS_PTRACE it cannot see which process runs /app/frontend (the service runs
    as another user), without DAC_READ_SEARCH it cannot read the service's OTEL_SERVICE_NAME
    and names it after its executable."""
    removed, attaches, env_name = CAPABILITY_CASES[case]
    caps = set(compose.compose_config()["services"]["gospan-frontend"]["cap_add"]) - removed
    tag_ = uuid.uuid4().hex[:8]
    app, tracer = f"gospan-e2e-app-{tag_}", f"gospan-e2e-tracer-{tag_}"
    name = f"svc-{tag_}"
    try:
        # The frontend image on its own, its backend nowhere: /health answers all the same.
        _docker("run", "-d", "--name", app, "-e", f"OTEL_SERVICE_NAME={name}", "-p",
                "127.0.0.1::8080", _image(built, "frontend"), "-addr", "0.0.0.0:8080",
                "-backend", "http://127.0.0.1:9")
        port = _host_port(app, 8080)
        _docker("run", "-d", "--name", tracer, *_gospan_run_args(built, caps),
                "-e", "OTEL_TRACES_EXPORTER=console", "-e", "OTEL_BSP_SCHEDULE_DELAY=200",
                _image(built, "gospan-frontend"), "--exe", "/app/frontend")
        logs = _wait_attached(tracer, 30 if attaches else 8)
        if not attaches:
            assert "gospan: attached" not in logs, f"attached without {removed}:\n{logs}"
            assert "waiting for a process running '/app/frontend'" in logs, logs
            return
        assert "gospan: attached" in logs, logs
        # Another gospan (the compose demo's) may trace this frontend too: not running yet.
        _wait_http(f"http://127.0.0.1:{port}/health")
        time.sleep(1.0)
        _docker("stop", "-t", "40", tracer, timeout=60)
        res = _docker("logs", tracer)
        assert json.loads(_docker("inspect", tracer).stdout)[0]["State"]["ExitCode"] == 0, \
            res.stderr
        traces = [line for line in res.stdout.splitlines() if line.startswith("trace ")]
        assert traces, res.stdout + res.stderr
        assert all(line.split()[2] == (name if env_name else "frontend") for line in traces), \
            res.stdout
    finally:
        _docker("rm", "-f", app, tracer, check=False)


# ---- the DaemonSet's pod spec on the engine ---------------------------------------------------

KUBE_FILE = compose.REPO / "examples" / "kubernetes" / "gospan-daemonset.yaml"
NODE_NAME = "gospan-e2e-node"


def _daemonset_run_args(kube, exe, endpoint):
    """`docker run` arguments that give gospan's container what the DaemonSet's pod gives it on
    a node: the node's PID namespace, a cgroup namespace of its own (what container runtimes give
    a pod on cgroup v2 nodes; a pod spec cannot ask for the host's), the securityContext's user,
    capabilities and read-only root, its hostPath volumes, its environment with the downward
    API's spec.nodeName and $(VAR) references expanded, and the target EXE and ENDPOINT in
    place of the cluster's."""
    ds = next(o for o in kube if o and o["kind"] == "DaemonSet")
    pod = ds["spec"]["template"]["spec"]
    (c,) = pod["containers"]
    sc = c["securityContext"]
    args = ["--cgroupns", "private", "--user", str(sc["runAsUser"])]
    if pod.get("hostPID"):
        args += ["--pid", "host"]
    if sc.get("readOnlyRootFilesystem"):
        args.append("--read-only")
    assert sc.get("privileged") is False
    args += [a for cap in sc["capabilities"]["drop"] for a in ("--cap-drop", cap)]
    args += [a for cap in sc["capabilities"]["add"] for a in ("--cap-add", cap)]
    assert pod["securityContext"]["seccompProfile"]["type"] == "RuntimeDefault"  # Docker's
    volumes = {v["name"]: v for v in pod.get("volumes") or []}
    for m in c.get("volumeMounts") or []:
        host = volumes[m["name"]]["hostPath"]["path"]
        args += ["-v", f"{host}:{m['mountPath']}{':ro' if m.get('readOnly') else ''}"]
    env = {}
    for e in c["env"]:
        if "valueFrom" in e:
            assert e["valueFrom"]["fieldRef"]["fieldPath"] == "spec.nodeName"
            env[e["name"]] = NODE_NAME
        else:
            env[e["name"]] = re.sub(r"\$\(([A-Z_]+)\)", lambda m: env[m.group(1)], e["value"])
    env["OTEL_GO_AUTO_TARGET_EXE"] = exe
    env["OTEL_EXPORTER_OTLP_ENDPOINT"] = endpoint
    env["OTEL_BSP_SCHEDULE_DELAY"] = "200"
    for k, v in env.items():
        args += ["-e", f"{k}={v}"]
    return args


def test_daemonset_pod_spec_on_the_engine(built):
    """The DaemonSet's gospan container as its pod runs it, twice (frontend and backend), and
    the services in containers whose cgroups are where the kubelet puts a pod's (cgroupfs
    driver: /kubepods/<class>/pod<UID>/<container>): every request one trace across the two
    "pods", outgoing trace context written from gospan's own cgroup namespace, and every span's
    resource with the pod's k8s.pod.uid, its container.id, the node's name as k8s.node.name
    and host.name, keys the Collector's k8sattributes processor can match."""
    kube = list(yaml.safe_load_all(KUBE_FILE.read_text()))
    tag_ = uuid.uuid4().hex[:8]
    net = f"gospan-e2e-net-{tag_}"
    uids = {"frontend": str(uuid.uuid4()), "backend": str(uuid.uuid4())}
    names = {svc: f"gospan-e2e-{svc}-{tag_}" for svc in ("jaeger", "frontend", "backend")}
    tracers = {svc: f"gospan-e2e-ds-{svc}-{tag_}" for svc in ("frontend", "backend")}
    try:
        _docker("network", "create", net)
        _docker("run", "-d", "--name", names["jaeger"], "--network", net, "--network-alias",
                "jaeger", "-p", "127.0.0.1::16686",
                compose.compose_config()["services"]["jaeger"]["image"])
        query = f"http://127.0.0.1:{_host_port(names['jaeger'], 16686)}"
        pods = {}
        for svc, cmd in (("backend", ["-addr", "0.0.0.0:8081"]),
                         ("frontend", ["-addr", "0.0.0.0:8080", "-backend",
                                       "http://backend:8081"])):
            klass = "burstable" if svc == "frontend" else "besteffort"
            _docker("run", "-d", "--name", names[svc], "--network", net, "--network-alias", svc,
                    "--cgroup-parent", f"/kubepods/{klass}/pod{uids[svc]}",
                    *(["-p", "127.0.0.1::8080"] if svc == "frontend" else []),
                    _image(built, svc), *cmd)
            pods[svc] = json.loads(_docker("inspect", names[svc]).stdout)[0]["Id"]
        port = _host_port(names["frontend"], 8080)
        _wait_http(f"{query}/api/services")
        for svc in ("backend", "frontend"):
            _docker("run", "-d", "--name", tracers[svc], "--network", net,
                    *_daemonset_run_args(kube, f"/app/{svc}", "http://jaeger:4318"),
                    _image(built, "gospan-frontend"))
        for svc in ("backend", "frontend"):
            logs = _wait_attached(tracers[svc], 30)
            assert "gospan: attached" in logs, logs
            assert "trace context is off" not in logs and "carry no trace context" not in logs, \
                logs
        since = time.time()
        for _ in range(5):
            _wait_http(f"http://127.0.0.1:{port}/direct/1")
        traces, good = _joined_since(since, 5, query)
        assert len(traces) == 5 and len(good) == 5, [_hops(t, "frontend") for t in traces]
        for t in good:
            for s in t["spans"]:
                svc = service_of(t, s)
                tags = process_tags(t, s)
                assert (tags.get("k8s.pod.uid"), tags.get("container.id"),
                        tags.get("k8s.node.name"), tags.get("host.name")) == \
                    (uids[svc], pods[svc], NODE_NAME, NODE_NAME), (svc, tags)
    finally:
        _docker("rm", "-f", *tracers.values(), *names.values(), check=False)
        _docker("network", "rm", net, check=False)


def _wait_http(url, timeout=20.0):
    deadline = time.monotonic() + timeout
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    while True:
        try:
            with opener.open(url, timeout=5) as resp:
                return resp.read()
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.3)


@pytest.fixture(scope="module")
def demo(built):
    """docker-compose.yml up, every gospan attached, loadgen's requests for a while and then
    stopped; (the Demo, the time every gospan had attached)."""
    built.up()
    since = built.wait_traced()
    time.sleep(8)
    built.compose("stop", "loadgen")
    time.sleep(3)
    return built, since


def _traces(service, since, query=compose.JAEGER_QUERY):
    """SERVICE's traces that started after SINCE, but those of the health checks, from the
    Jaeger whose query API is QUERY."""
    api = QueryAPI(query)
    out = []
    for t in api.find_traces(service, limit=1000):
        root = min(t["spans"], key=lambda s: s["startTime"])
        if root["startTime"] >= since * 1e6 and tag(root, "url.path") != "/health":
            out.append(t)
    return out


def test_every_request_is_one_trace_across_containers(demo):
    d, since = demo
    rc, out = compose.jaeger_show(since, d.workdir / "show.out")
    n, of = compose.joined(out)
    assert rc == 0 and of >= 20 and n == of, out
    for hop in ("hop frontend -> backend, HTTP", "hop frontend -> inventory, gRPC",
                "hop backend -> consumer, Kafka orders", "hop consumer -> inventory, gRPC"):
        assert hop in out, out
    assert "db backend -> redis GET" in out, out


def test_data_store_calls_in_containers(demo):
    """A cache miss: the backend's Redis GET, PostgreSQL SELECT and Redis SET, each a CLIENT
    span under its SERVER span, naming the data store's container by its service name."""
    d, _ = demo
    d.compose("exec", "-T", "redis", "redis-cli", "FLUSHALL")
    since = time.time()
    _requests(1)
    traces, good = _joined_since(since, 1)
    assert len(good) == 1, [_hops(t, "frontend") for t in traces]
    spans = good[0]["spans"]
    by_id = {s["spanID"]: s for s in spans}
    calls = []
    for s in sorted(spans, key=lambda s: s["startTime"]):
        if service_of(good[0], s) == "backend" and tag(s, "db.system.name"):
            (ref,) = [r["spanID"] for r in s["references"]]
            assert tag(by_id[ref], "span.kind") == "server"
            calls.append((tag(s, "db.system.name"), s["operationName"],
                          tag(s, "server.address")))
    assert calls == [("redis", "GET", "redis"), ("postgresql", "SELECT items", "postgres"),
                     ("redis", "SET", "redis")], calls


def test_orders_go_through_kafka_in_containers(demo):
    """An order: the backend's PRODUCER span under its SERVER span, naming the broker's container
    by its service name, the consumer's CONSUMER span its child (the traceparent the backend's
    gospan put into the record, through the broker's container), and under that the consumer's
    gRPC call to the inventory, which the inventory's SERVER span continues."""
    since = time.time()
    _requests(1)
    traces, good = _joined_since(since, 1)
    assert len(good) == 1, [_hops(t, "frontend") for t in traces]
    t = good[0]
    by_id = {s["spanID"]: s for s in t["spans"]}

    def parent(s):
        (ref,) = [r["spanID"] for r in s["references"]]
        return by_id[ref]

    (send,) = [s for s in t["spans"] if tag(s, "span.kind") == "producer"]
    (process,) = [s for s in t["spans"] if tag(s, "span.kind") == "consumer"]
    (check,) = [s for s in t["spans"] if service_of(t, s) == "consumer" and
                tag(s, "span.kind") == "client"]
    served = [s for s in t["spans"] if s.get("references") and parent(s) is check]
    assert (service_of(t, send), send["operationName"], tag(send, "server.address"),
            tag(parent(send), "span.kind")) == ("backend", "send orders", "kafka", "server")
    assert (service_of(t, process), process["operationName"], parent(process) is send,
            tag(process, "messaging.consumer.group.name")) == \
        ("consumer", "process orders", True, "order-processor")
    assert parent(check) is process and check["operationName"] == \
        "inventory.v1.Inventory/GetItem", check
    assert [(service_of(t, s), tag(s, "span.kind")) for s in served] == \
        [("inventory", "server")], t


def test_spans_name_their_container_service_and_host(demo):
    d, since = demo
    host = socket.gethostname()
    for svc in compose.TRACED:
        cid = d.container_id(svc)
        traces = _traces(svc, since)
        assert traces, f"no {svc} traces"
        seen = set()
        for t in traces:
            for s in t["spans"]:
                if service_of(t, s) != svc:
                    continue
                tags = process_tags(t, s)
                seen.add((tags.get("container.id"), tags.get("host.name"),
                          tags.get("container.runtime.name"), "k8s.pod.uid" in tags))
        assert seen == {(cid, host, "docker", False)}, (svc, cid, seen)


def _requests(n, path="/direct/1"):
    for _ in range(n):
        _wait_http(f"http://127.0.0.1:8080{path}")


def _backend_pids_and_containers(since):
    out = set()
    for t in _traces("backend", since):
        for s in t["spans"]:
            if service_of(t, s) == "backend":
                tags = process_tags(t, s)
                out.add((tags.get("process.pid"), tags.get("container.id")))
    return out


def _joined_since(since, want, query=compose.JAEGER_QUERY):
    """Waits until the Jaeger at QUERY holds WANT frontend traces started after SINCE, each
    joined; (the traces, the joined ones)."""
    api = QueryAPI(query)
    deadline = time.monotonic() + 20
    while True:
        traces = [api.trace(t["traceID"]) for t in _traces("frontend", since, query)]
        good = [t for t in traces if t and _hops(t, "frontend")[0]]
        if len(good) >= want or time.monotonic() > deadline:
            return traces, good
        time.sleep(0.5)


def test_service_restarted_in_its_container_is_traced_again(demo):
    d, _ = demo
    cid = d.container_id("backend")
    before = _backend_pids_and_containers(0)
    d.compose("restart", "backend", timeout=120)
    d.compose("up", "--wait", "--no-deps", "--no-recreate", "backend", timeout=120)
    since = time.time()
    _requests(5)
    traces, good = _joined_since(since, 5)
    assert len(traces) == 5 and len(good) == 5, [_hops(t, "frontend") for t in traces]
    after = _backend_pids_and_containers(since)
    assert len(after) == 1 and next(iter(after))[1] == cid, after
    assert not after & before, (before, after)


def test_service_in_a_new_container_is_traced_by_the_running_gospan(demo):
    d, _ = demo
    old = d.container_id("backend")
    d.compose("up", "--wait", "--no-deps", "--force-recreate", "backend", timeout=120)
    new = d.container_id("backend")
    assert new != old
    since = time.time()
    _requests(5)
    traces, good = _joined_since(since, 5)
    assert len(traces) == 5 and len(good) == 5, [_hops(t, "frontend") for t in traces]
    after = _backend_pids_and_containers(since)
    assert {c for _, c in after} == {new}, after
    logs = d.logs("gospan-backend")
    assert "gospan: attached" in logs


@pytest.mark.parametrize("how", ["restarted in its container", "recreated in a new container"])
def test_caller_started_under_gospan_sends_context_from_its_first_call(demo, how):
    """The frontend, the caller, restarted in its container or recreated in a new one (a new
    cgroup) under the running gospan: its very first requests' calls carry trace context."""
    d, _ = demo
    old = d.container_id("frontend")
    if how.startswith("restarted"):
        d.compose("restart", "frontend", timeout=120)
        d.compose("up", "--wait", "--no-deps", "--no-recreate", "frontend", timeout=120)
    else:
        d.compose("up", "--wait", "--no-deps", "--force-recreate", "frontend", timeout=120)
    new = d.container_id("frontend")
    assert (new == old) == how.startswith("restarted")
    since = time.time()
    _requests(3, "/both/3")
    traces, good = _joined_since(since, 3)
    assert len(traces) == 3 and len(good) == 3, [_hops(t, "frontend") for t in traces]


def test_gospan_container_runs_as_the_compose_file_says(demo):
    d, _ = demo
    for svc in compose.TRACED:
        cid = d.container_id(f"gospan-{svc}")
        info = json.loads(_docker("inspect", cid).stdout)[0]
        host = info["HostConfig"]
        assert host["ReadonlyRootfs"] is True and host["Privileged"] is False
        assert host["PidMode"] == "host" and host["UTSMode"] == "host"
        assert host["CapDrop"] == ["ALL"]
        assert {c.removeprefix("CAP_") for c in host["CapAdd"]} == \
            {"SYS_ADMIN", "SYS_PTRACE", "DAC_READ_SEARCH"}
        assert info["State"]["Running"] and info["RestartCount"] == 0
        logs = d.logs(f"gospan-{svc}")
        assert "outgoing trace context is off" not in logs, logs
