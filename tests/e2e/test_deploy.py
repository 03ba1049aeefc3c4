"""The deployment files (Dockerfile, .dockerignore, docker-compose.yml, examples/*/Dockerfile,
examples/kubernetes/), checked without a container engine or a cluster; test_compose.py runs
them on a real Docker engine.

- docker-compose.yml is loaded by compose-go, the loader behind `docker compose config`
  (deploycheck/), and validated against the Compose Specification's JSON schema that ships in
  that module, with jsonschema;
- every Dockerfile is parsed: build contexts, COPY sources (present, not excluded by
  .dockerignore), COPY --from stages, ports, the --exe paths against where the images install
  the binaries, the service names, the gospan services' privileges;
- every example Dockerfile's build stage is replayed on this machine (Debian 12, like the
  images): the files its COPY lines bring, then its RUN lines, in a scratch directory; the
  binaries must come out static, not PIE, with symbols and DWARF, which gospan's --exe and its
  offsets rely on (a real build would not fail on it). gospan's own image is built and run for
  real by test_compose.py, which shows its packages right by running it;
- the Kubernetes manifests are decoded strictly into the API types (deploycheck/), then checked;
  the example Collector's configuration (examples/kubernetes/otel-collector.yaml) is validated
  by a real Collector of the release its image is (collector.py builds it), and its
  k8s_attributes processor's pod association is checked against the attribute names gospan puts
  on the resource (exporter/model/semconv.h).
"""

import base64
import glob
import json
import os
import re
import shlex
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

import jsonschema
import pytest
import yaml

from conftest import BUILD, REPO

COMPOSE_FILE = REPO / "docker-compose.yml"
KUBE_FILE = REPO / "examples" / "kubernetes" / "gospan-daemonset.yaml"
COLLECTOR_KUBE_FILE = REPO / "examples" / "kubernetes" / "otel-collector.yaml"
SEMCONV_H = REPO / "exporter" / "model" / "semconv.h"
DEPLOYCHECK_SRC = Path(__file__).resolve().parent / "deploycheck"
WORK = BUILD / "deploy"

APPS = ("frontend", "backend", "inventory", "consumer", "loadgen")
# gospan service -> the compose service whose executable it traces.
TRACERS = {"gospan-frontend": "frontend", "gospan-backend": "backend",
           "gospan-inventory": "inventory", "gospan-consumer": "consumer"}
# The backend's data stores, official images, and the port each listens on in its container.
DATASTORES = {"postgres": 5432, "redis": 6379}
# The Kafka broker the backend publishes its orders to and the consumer reads them from.
KAFKA_PORT = 9092
SERVICES = {"jaeger", *DATASTORES, "kafka", *APPS, *TRACERS}
# Services from a published image, not built here: the image each must be, pinned.
IMAGES = {"jaeger": r"jaegertracing/jaeger:\d+\.\d+\.\d+", "postgres": r"postgres:\d+-alpine",
          "redis": r"redis:\d+-alpine", "kafka": r"apache/kafka:\d+\.\d+\.\d+"}

# What gospan needs in a container, each one shown needed by test_gospan_capabilities where the
# kernel lets a test show it, and explained in docker-compose.yml.
GOSPAN_CAPS = {"SYS_ADMIN", "SYS_PTRACE", "DAC_READ_SEARCH"}
# Docker's default capability set, before cap_drop and cap_add.
DOCKER_DEFAULT_CAPS = {"CHOWN", "DAC_OVERRIDE", "FSETID", "FOWNER", "MKNOD", "NET_RAW", "SETGID",
                       "SETUID", "SETFCAP", "SETPCAP", "NET_BIND_SERVICE", "SYS_CHROOT", "KILL",
                       "AUDIT_WRITE"}
DEBIAN_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
GOLANG_IMAGE_PATH = "/go/bin:/usr/local/go/bin:" + DEBIAN_PATH
JAEGER_OTLP_HTTP_PORT = 4318


@pytest.fixture(scope="session", autouse=True)
def _e2e_prerequisites():
    """Overrides conftest's: only the tests that ask for bpf_ready need root and BPF."""


# ---- helpers: processes, Go ------------------------------------------------------------------


def _clean_env(extra=None, go=False):
    """A small environment like a build container's: no OTEL_*, no make or compiler settings."""
    keep = {"HOME", "LANG", "TMPDIR", "HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY", "http_proxy",
            "https_proxy", "no_proxy", "SSL_CERT_FILE", "SSL_CERT_DIR"}
    if go:
        keep |= {"GOPATH", "GOCACHE", "GOMODCACHE", "GOPROXY", "GOSUMDB", "GONOSUMDB",
                 "GOPRIVATE", "GONOPROXY", "GOINSECURE"}
    env = {k: v for k, v in os.environ.items() if k in keep}
    env["PATH"] = os.environ.get("PATH", DEBIAN_PATH)
    if go:
        env["GOTOOLCHAIN"] = "local"  # as the golang images set it
    env.update(extra or {})
    return env


def _run(argv, what, cwd=None, env=None, timeout=600):
    try:
        res = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True,
                             timeout=timeout)
    except FileNotFoundError:
        pytest.fail(f"{what}: '{argv[0]}' is not installed")
    except subprocess.TimeoutExpired:
        pytest.fail(f"{what}: '{shlex.join(map(str, argv))}' took more than {timeout} s")
    if res.returncode != 0:
        pytest.fail(f"{what}: '{shlex.join(map(str, argv))}' exited with {res.returncode}\n"
                    f"{res.stdout[-3000:]}\n{res.stderr[-3000:]}")
    return res.stdout


@pytest.fixture(scope="session")
def deploycheck_bin():
    out = WORK / "deploycheck"
    out.parent.mkdir(parents=True, exist_ok=True)
    _run(["go", "build", "-o", str(out), "."], "building tests/e2e/deploycheck",
         cwd=DEPLOYCHECK_SRC, env=_clean_env({"CGO_ENABLED": "0"}, go=True), timeout=900)
    return out


@pytest.fixture(scope="session")
def compose(deploycheck_bin):
    """docker-compose.yml as compose-go loads and normalizes it."""
    return json.loads(_run([str(deploycheck_bin), "compose", str(COMPOSE_FILE)],
                           "loading docker-compose.yml with compose-go"))


@pytest.fixture(scope="session")
def compose_raw():
    return yaml.safe_load(COMPOSE_FILE.read_text())


def _decode_kube(deploycheck_bin, path):
    return json.loads(_run([str(deploycheck_bin), "kube", str(path)],
                           f"decoding the Kubernetes manifest '{path.name}'"))


@pytest.fixture(scope="session")
def kube_objects(deploycheck_bin):
    return _decode_kube(deploycheck_bin, KUBE_FILE)


@pytest.fixture(scope="session")
def collector_kube_objects(deploycheck_bin):
    return _decode_kube(deploycheck_bin, COLLECTOR_KUBE_FILE)


# ---- Dockerfiles ------------------------------------------------------------------------------


@dataclass
class Instruction:
    cmd: str
    value: str
    lineno: int

    @property
    def json_form(self):
        return self.value.lstrip().startswith("[")

    def words(self):
        return json.loads(self.value) if self.json_form else shlex.split(self.value)

    def copy_parts(self):
        """(flags, sources, destination) of a COPY or ADD."""
        words = self.words()
        flags = {}
        while not self.json_form and words and words[0].startswith("--"):
            key, _, val = words.pop(0)[2:].partition("=")
            flags[key] = val or True
        assert len(words) >= 2, f"line {self.lineno}: {self.cmd} needs a source and a destination"
        return flags, words[:-1], words[-1]


@dataclass
class Stage:
    index: int
    base: str
    name: str
    body: list = field(default_factory=list)

    def all(self, cmd):
        return [i for i in self.body if i.cmd == cmd]

    def last(self, cmd):
        found = self.all(cmd)
        return found[-1] if found else None


@dataclass
class Dockerfile:
    path: Path
    context: Path
    stages: list

    def stage(self, ref):
        for s in self.stages:
            if s.name == ref or str(s.index) == ref:
                return s
        return None

    @property
    def final(self):
        return self.stages[-1]


def parse_dockerfile(path, context):
    stages, logical, start = [], "", 0
    for n, raw in enumerate(Path(path).read_text().splitlines(), 1):
        stripped = raw.strip()
        if not stripped or stripped.startswith("#"):
            continue  # comments and blank lines, also inside a continued instruction
        if not logical:
            start = n
        if stripped.endswith("\\"):
            logical += stripped[:-1] + " "
            continue
        logical += stripped
        cmd, _, value = logical.partition(" ")
        ins = Instruction(cmd.upper(), value.strip(), start)
        logical = ""
        if ins.cmd == "FROM":
            words = ins.value.split()
            name = words[2] if len(words) == 3 and words[1].lower() == "as" else None
            stages.append(Stage(len(stages), words[0], name))
        else:
            assert stages, f"{path}:{ins.lineno}: {ins.cmd} before any FROM"
            stages[-1].body.append(ins)
    assert not logical, f"{path}: ends inside a continued line"
    assert stages, f"{path}: no FROM"
    return Dockerfile(Path(path), Path(context), stages)


def dockerfile_env(ins):
    words = shlex.split(ins.value)
    if len(words) >= 2 and "=" not in words[0]:
        return {words[0]: " ".join(words[1:])}  # the old `ENV KEY value` form
    return dict(w.split("=", 1) for w in words)


class DockerIgnore:
    """The .dockerignore of a build context, matched as Docker does: a path is excluded when the
    last pattern matching it or one of its parent directories is not a `!` exception."""

    def __init__(self, context):
        self.patterns = []
        f = Path(context) / ".dockerignore"
        if not f.exists():
            return
        for line in f.read_text().splitlines():
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            exception = line.startswith("!")
            pat = os.path.normpath(line[1:] if exception else line).lstrip("/")
            self.patterns.append((re.compile(self._regex(pat)), exception))

    @staticmethod
    def _regex(pat):
        out, i = "", 0
        while i < len(pat):
            if pat.startswith("**/", i):
                out, i = out + "(?:.*/)?", i + 3
            elif pat.startswith("**", i):
                out, i = out + ".*", i + 2
            elif pat[i] == "*":
                out, i = out + "[^/]*", i + 1
            elif pat[i] == "?":
                out, i = out + "[^/]", i + 1
            else:
                out, i = out + re.escape(pat[i]), i + 1
        return out

    def excluded(self, rel):
        parts = Path(rel).parts
        candidates = ["/".join(parts[:k]) for k in range(1, len(parts) + 1)]
        result = False
        for rx, exception in self.patterns:
            if any(rx.fullmatch(c) for c in candidates):
                result = not exception
        return result


def copy_sources(df, ins):
    """The context paths a COPY without --from takes: (path, context-relative) pairs of every
    file it brings. Fails when a source matches nothing or only excluded files."""
    _, sources, _ = ins.copy_parts()
    ignore = DockerIgnore(df.context)
    picked = []
    for src in sources:
        matches = sorted(glob.glob(str(df.context / src)))
        where = f"{df.path.relative_to(REPO)}:{ins.lineno}"
        assert matches, f"{where}: COPY source '{src}' is not in the context '{df.context}'"
        files = []
        for m in map(Path, matches):
            rel = m.relative_to(df.context)
            if m.is_dir():
                for sub in sorted(m.rglob("*")):
                    r = sub.relative_to(df.context)
                    if sub.is_file() and not ignore.excluded(r):
                        files.append((sub, r, m))
            elif not ignore.excluded(rel):
                files.append((m, rel, None))
        assert files, f"{where}: COPY source '{src}' is excluded by .dockerignore (or empty)"
        picked.extend(files)
    return picked


# Image -> (Dockerfile, build context), relative to the repository, as docker-compose.yml builds
# them. The frontend's and the consumer's context is examples/: their go.mod replaces the
# inventory's module with ../inventory, whose generated gRPC client they build with.
DOCKERFILES = {
    "gospan": ("Dockerfile", "."),
    "frontend": ("examples/frontend/Dockerfile", "examples"),
    "backend": ("examples/backend/Dockerfile", "examples/backend"),
    "inventory": ("examples/inventory/Dockerfile", "examples/inventory"),
    "consumer": ("examples/consumer/Dockerfile", "examples"),
    "loadgen": ("examples/loadgen/Dockerfile", "examples/loadgen"),
}


@pytest.fixture(scope="session")
def dockerfiles():
    return {name: parse_dockerfile(REPO / f, REPO / c) for name, (f, c) in DOCKERFILES.items()}


def apt_packages(run_value):
    """Package names of the `apt-get install` in a RUN line."""
    words = shlex.split(run_value)
    pkgs = []
    for i, w in enumerate(words):
        if w == "install" and i > 0 and words[i - 1] == "apt-get":
            for p in words[i + 1:]:
                if p in ("&&", ";", "||"):
                    break
                if not p.startswith("-"):
                    pkgs.append(p)
    return pkgs


@dataclass
class Image:
    """A Dockerfile replayed: the final stage's files under rootfs, and its settings."""
    name: str
    rootfs: Path
    env: dict
    user: tuple
    entrypoint: list
    cmd: list
    expose: set
    installed: dict  # container path -> host file, for every COPY --from
    build_packages: list
    runtime_packages: list


def _to_host(root, container_path):
    return Path(root) / str(container_path).lstrip("/")


def replay(df, workdir):
    """Replays DF's build stages and assembles its final stage's files; see the module doc."""
    shutil.rmtree(workdir, ignore_errors=True)
    roots, build_pkgs = {}, []
    for stage in df.stages[:-1]:
        root = Path(workdir) / f"stage-{stage.index}"
        root.mkdir(parents=True)
        roots[stage.name or str(stage.index)] = roots[str(stage.index)] = root
        golang = stage.base.startswith("golang:")
        env = _clean_env({"PATH": os.environ.get("PATH", "")}, go=golang)
        cwd = Path("/")
        for ins in stage.body:
            if ins.cmd == "WORKDIR":
                cwd = cwd / ins.value
                _to_host(root, cwd).mkdir(parents=True, exist_ok=True)
            elif ins.cmd == "ENV":
                env.update(dockerfile_env(ins))
            elif ins.cmd in ("COPY", "ADD"):
                flags, sources, dest = ins.copy_parts()
                assert "from" not in flags, f"{df.path}:{ins.lineno}: not replayable"
                dest_c = Path(dest) if dest.startswith("/") else cwd / dest
                as_dir = dest.endswith("/") or len(sources) > 1
                for f, rel, srcdir in copy_sources(df, ins):
                    if srcdir is not None:  # a directory's contents go under dest
                        target = _to_host(root, dest_c) / f.relative_to(srcdir)
                    elif as_dir or _to_host(root, dest_c).is_dir():
                        target = _to_host(root, dest_c) / f.name
                    else:
                        target = _to_host(root, dest_c)
                    target.parent.mkdir(parents=True, exist_ok=True)
                    shutil.copy2(f, target)
            elif ins.cmd == "RUN":
                if "apt-get" in ins.value:
                    build_pkgs += apt_packages(ins.value)
                    continue
                _run(["sh", "-c", ins.value], f"{df.path.relative_to(REPO)}:{ins.lineno} RUN",
                     cwd=_to_host(root, cwd), env=env, timeout=1200)
            elif ins.cmd not in ("ARG", "LABEL"):
                pytest.fail(f"{df.path}:{ins.lineno}: {ins.cmd} in a build stage: not replayable")

    rootfs = Path(workdir) / "rootfs"
    rootfs.mkdir()
    final = df.final
    env, user, entrypoint, cmd, expose, installed, runtime_pkgs = {}, (0, 0), [], [], set(), {}, []
    for ins in final.body:
        if ins.cmd in ("COPY", "ADD"):
            flags, sources, dest = ins.copy_parts()
            assert "from" in flags, f"{df.path}:{ins.lineno}: the final stage copies from a stage"
            stage = df.stage(flags["from"])
            assert stage is not None and stage is not final, \
                f"{df.path}:{ins.lineno}: no stage '{flags['from']}' before this one"
            assert len(sources) == 1 and not dest.endswith("/")
            src = _to_host(roots[flags["from"]], sources[0])
            assert src.is_file(), (f"{df.path}:{ins.lineno}: the build stage made no "
                                   f"'{sources[0]}'")
            target = _to_host(rootfs, dest)
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, target)
            installed[dest] = target
        elif ins.cmd == "ENV":
            env.update(dockerfile_env(ins))
        elif ins.cmd == "USER":
            uid, _, gid = ins.value.partition(":")
            assert uid.isdigit() and (not gid or gid.isdigit()), "USER must be numeric"
            user = (int(uid), int(gid or uid))
        elif ins.cmd == "ENTRYPOINT":
            assert ins.json_form, f"{df.path}:{ins.lineno}: ENTRYPOINT in exec (JSON) form"
            entrypoint = ins.words()
        elif ins.cmd == "CMD":
            assert ins.json_form, f"{df.path}:{ins.lineno}: CMD in exec (JSON) form"
            cmd = ins.words()
        elif ins.cmd == "EXPOSE":
            expose |= {int(p.split("/")[0]) for p in ins.value.split()}
        elif ins.cmd == "RUN":
            assert "apt-get" in ins.value, f"{df.path}:{ins.lineno}: only apt-get runs here"
            runtime_pkgs += apt_packages(ins.value)
    return Image(df.path.parent.name, rootfs, env, user, entrypoint, cmd, expose, installed,
                 build_pkgs, runtime_pkgs)


@pytest.fixture(scope="session")
def images(dockerfiles):
    """The example images, replayed (the Go builds are incremental across sessions)."""
    return {name: replay(dockerfiles[name], WORK / "images" / name) for name in APPS}


# ---- compose: loading, schema, files ----------------------------------------------------------


def test_compose_loads_like_docker_compose_config(compose):
    assert set(compose["services"]) == SERVICES
    assert compose["name"] == "gospan-demo"


def test_compose_matches_the_compose_spec_schema(compose_raw, deploycheck_bin):
    info = json.loads(_run(["go", "list", "-m", "-json", "github.com/compose-spec/compose-go/v2"],
                           "finding compose-go", cwd=DEPLOYCHECK_SRC, env=_clean_env(go=True)))
    schema_file = Path(info["Dir"]) / "schema" / "compose-spec.json"
    schema = json.loads(schema_file.read_text())
    validator = jsonschema.validators.validator_for(schema)(schema)
    errors = [f"{'/'.join(map(str, e.absolute_path))}: {e.message}"
              for e in validator.iter_errors(compose_raw)]
    assert not errors, f"against {schema_file}:\n" + "\n".join(errors)
    # The validator is live: a misspelt key is refused.
    broken = json.loads(json.dumps(compose_raw))
    broken["services"]["backend"]["cap-add"] = ["BPF"]
    assert list(validator.iter_errors(broken))


def test_build_contexts_and_dockerfiles_exist(compose):
    for name, svc in compose["services"].items():
        if "build" not in svc:
            assert name in IMAGES, f"{name}: neither build nor one of the published images"
            assert re.fullmatch(IMAGES[name], svc["image"]), \
                f"{name}: image '{svc['image']}', expected one like {IMAGES[name]}"
            continue
        ctx = Path(svc["build"]["context"])
        assert ctx.is_dir(), f"{name}: build context '{ctx}' is missing"
        df = ctx / svc["build"].get("dockerfile", "Dockerfile")
        assert df.is_file(), f"{name}: '{df}' is missing"
        # The Dockerfiles and contexts the other tests parse and replay are compose's own.
        want_df, want_ctx = DOCKERFILES["gospan" if name in TRACERS else name]
        assert ctx == REPO / want_ctx, f"{name}: built from '{ctx}', expected '{REPO / want_ctx}'"
        assert df.resolve() == (REPO / want_df).resolve(), \
            f"{name}: built with '{df}', expected '{REPO / want_df}'"


@pytest.mark.parametrize("name", DOCKERFILES)
def test_copy_sources_exist_and_are_not_ignored(dockerfiles, name):
    df = dockerfiles[name]
    copies = [i for s in df.stages for i in s.body if i.cmd in ("COPY", "ADD")]
    assert copies
    for ins in copies:
        flags, _, _ = ins.copy_parts()
        if "from" in flags:
            stage = df.stage(flags["from"])
            assert stage is not None, f"{name}:{ins.lineno}: no stage '{flags['from']}'"
        else:
            copy_sources(df, ins)


def test_dockerignore_keeps_out_what_it_should():
    ignore = DockerIgnore(REPO)
    for kept in ("Makefile", "bpf/http.bpf.c", "exporter/main.c", "offsets/go_offsets.json",
                 "proto/opentelemetry/proto/trace/v1/trace.proto"):
        assert not ignore.excluded(kept), kept
    for gone in ("build/gospan", ".git/HEAD", "tests/e2e/conftest.py",
                 "exporter/__pycache__/x.pyc"):
        assert ignore.excluded(gone), gone


# ---- compose: how the pieces fit --------------------------------------------------------------


def _flag(argv, name):
    assert argv.count(name) == 1, f"'{name}' once in {argv}"
    return argv[argv.index(name) + 1]


def _port_of_addr(addr):
    host, _, port = addr.rpartition(":")
    return host, int(port)


def test_apps_listen_where_the_others_call(compose, dockerfiles, images):
    s = compose["services"]
    ports = {}
    for name in ("frontend", "backend", "inventory"):
        host, port = _port_of_addr(_flag(s[name]["command"], "-addr"))
        assert host == "0.0.0.0", f"{name} must listen on every interface of its container"
        ports[name] = port
        img = images[name]
        assert img.expose == {port}, f"{name}: EXPOSE {img.expose}, listens on {port}"
        assert _port_of_addr(_flag(img.cmd, "-addr")) == ("0.0.0.0", port), \
            f"{name}: the image's CMD and compose disagree"
        check = " ".join(s[name]["healthcheck"]["test"])
        assert f"/dev/tcp/127.0.0.1/{port}" in check, f"{name}: healthcheck '{check}'"
        if name != "inventory":  # gRPC only: its healthcheck can only connect
            assert "GET /health" in check, f"{name}: healthcheck '{check}'"
    assert _flag(s["frontend"]["command"], "-backend") == f"http://backend:{ports['backend']}"
    assert _flag(images["frontend"].cmd, "-backend") == f"http://backend:{ports['backend']}"
    # gRPC target: HOST:PORT, no scheme.
    assert _flag(s["frontend"]["command"], "-inventory") == f"inventory:{ports['inventory']}"
    if "-inventory" in images["frontend"].cmd:
        assert _flag(images["frontend"].cmd, "-inventory") == f"inventory:{ports['inventory']}"
    for name in ("frontend", "inventory"):
        published = {p["target"]: int(p["published"]) for p in s[name]["ports"]}
        assert published == {ports[name]: ports[name]}, f"{name}: published {published}"
    assert "ports" not in s["backend"], "the backend is reached through the frontend only"
    jaeger = {p["target"] for p in s["jaeger"]["ports"]}
    assert jaeger == {16686, JAEGER_OTLP_HTTP_PORT}


def test_backend_reaches_its_data_stores(compose):
    """The backend's -pg and -redis name the postgres and redis services at the ports they listen
    on, as the user and database postgres is set up with, the password in the environment (lib/pq
    reads PGPASSWORD), not on the command line; the backend waits for both to be healthy, and
    neither is published."""
    s = compose["services"]
    pg_env = s["postgres"]["environment"]
    argv = s["backend"]["command"]
    m = re.fullmatch(r"postgres://([^@:/]+)@([^:/]+):(\d+)/([^?]+)\?sslmode=disable",
                     _flag(argv, "-pg"))
    assert m, f"-pg '{_flag(argv, '-pg')}': no password in it, sslmode=disable"
    user, host, port, db = m.groups()
    assert (user, host, int(port), db) == (pg_env["POSTGRES_USER"], "postgres",
                                           DATASTORES["postgres"], pg_env["POSTGRES_DB"])
    assert s["backend"]["environment"]["PGPASSWORD"] == pg_env["POSTGRES_PASSWORD"]
    assert _flag(argv, "-redis") == f"redis:{DATASTORES['redis']}"
    for name, port in DATASTORES.items():
        assert s["backend"]["depends_on"][name]["condition"] == "service_healthy"
        assert "ports" not in s[name], f"{name} is the backend's alone: nothing published"
        check = s[name]["healthcheck"]["test"]
        assert _flag(check, "-h") == "127.0.0.1" and _flag(check, "-p") == str(port), check
    check = s["postgres"]["healthcheck"]["test"]
    assert check[1] == "pg_isready", check
    assert (_flag(check, "-U"), _flag(check, "-d")) == (pg_env["POSTGRES_USER"],
                                                        pg_env["POSTGRES_DB"]), check
    assert s["redis"]["healthcheck"]["test"][1:3] == ["redis-cli", "-h"]
    assert s["redis"]["healthcheck"]["test"][-1] == "ping"
    # The image's entrypoint passes flags on to redis-server: a cache, nothing saved.
    assert s["redis"]["command"] == ["redis-server", "--save", "", "--appendonly", "no"]


def test_backend_and_consumer_reach_kafka(compose, images):
    """The backend's and the consumer's -kafka name the kafka service at the port it listens on
    and tells its clients (its advertised listener), the consumer's -inventory the inventory
    service, as the consumer image's CMD does; both wait for the broker to be healthy. The broker
    is one KRaft node, broker and controller, its own only voter, its internal topics one replica
    each (one node), and it is not published."""
    s = compose["services"]
    kafka = s["kafka"]
    env = kafka["environment"]
    inventory_port = _port_of_addr(_flag(s["inventory"]["command"], "-addr"))[1]
    for name in ("backend", "consumer"):
        assert _flag(s[name]["command"], "-kafka") == f"kafka:{KAFKA_PORT}", name
        assert s[name]["depends_on"]["kafka"]["condition"] == "service_healthy", name
    assert _flag(s["consumer"]["command"], "-inventory") == f"inventory:{inventory_port}"
    assert s["consumer"]["depends_on"]["inventory"]["condition"] == "service_healthy"
    assert images["consumer"].cmd == s["consumer"]["command"], \
        "the consumer image's CMD and compose disagree"
    assert images["consumer"].expose == set() and "ports" not in s["consumer"], \
        "the consumer serves nothing"
    listeners = dict(re.fullmatch(r"(\w+)://:(\d+)", v).groups()
                     for v in env["KAFKA_LISTENERS"].split(","))
    assert listeners == {"PLAINTEXT": str(KAFKA_PORT), "CONTROLLER": "9093"}, listeners
    assert env["KAFKA_ADVERTISED_LISTENERS"] == f"PLAINTEXT://kafka:{KAFKA_PORT}"
    assert env["KAFKA_CONTROLLER_LISTENER_NAMES"] == "CONTROLLER"
    assert set(env["KAFKA_LISTENER_SECURITY_PROTOCOL_MAP"].split(",")) == \
        {"CONTROLLER:PLAINTEXT", "PLAINTEXT:PLAINTEXT"}
    assert env["KAFKA_PROCESS_ROLES"] == "broker,controller"
    assert env["KAFKA_CONTROLLER_QUORUM_VOTERS"] == \
        f"{env['KAFKA_NODE_ID']}@localhost:{listeners['CONTROLLER']}"
    # A cluster id is 16 bytes, base64url without padding (what kafka-storage.sh random-uuid
    # prints).
    assert len(base64.urlsafe_b64decode(env["CLUSTER_ID"] + "==")) == 16, env["CLUSTER_ID"]
    for key in ("KAFKA_OFFSETS_TOPIC_REPLICATION_FACTOR",
                "KAFKA_TRANSACTION_STATE_LOG_REPLICATION_FACTOR",
                "KAFKA_TRANSACTION_STATE_LOG_MIN_ISR",
                "KAFKA_SHARE_COORDINATOR_STATE_TOPIC_REPLICATION_FACTOR",
                "KAFKA_SHARE_COORDINATOR_STATE_TOPIC_MIN_ISR"):
        assert str(env[key]) == "1", key
    assert "ports" not in kafka, "the broker is the backend's and the consumer's alone"
    check = " ".join(kafka["healthcheck"]["test"])
    assert f"/dev/tcp/127.0.0.1/{KAFKA_PORT}" in check, check


def test_loadgen_covers_the_frontend_routes_that_call_the_backend(compose):
    # The frontend's routes as its README's table lists them: chi assembles some from a mount
    # and a sub-router's own pattern, so its source holds no whole pattern to read.
    doc = (REPO / "examples" / "frontend" / "README.md").read_text()
    patterns = re.findall(r"^\| `GET (/[^`?]*)", doc, re.M)
    assert patterns
    port = _port_of_addr(_flag(compose["services"]["frontend"]["command"], "-addr"))[1]
    argv = compose["services"]["loadgen"]["command"]
    urls = [argv[i + 1] for i, a in enumerate(argv) if a == "-url"]
    paths = []
    for u in urls:
        m = re.fullmatch(rf"http://frontend:{port}(/\S*)", u)
        assert m, f"loadgen URL '{u}' is not the frontend's"
        paths.append(m.group(1))

    def route(path):
        for p in patterns:
            if re.fullmatch(re.sub(r"\\\{[^}]+\\\}", "[^/]+", re.escape(p)), path):
                return p
        return None

    assert {route(p) for p in paths} == {"/direct/{id}", "/spawn/{id}", "/both/{id}",
                                         "/backend-fail"}
    dep = compose["services"]["loadgen"]["depends_on"]["frontend"]
    assert dep["condition"] == "service_healthy"


def docker_caps(service):
    drop = {c.upper().removeprefix("CAP_") for c in service.get("cap_drop") or []}
    add = {c.upper().removeprefix("CAP_") for c in service.get("cap_add") or []}
    base = set() if "ALL" in drop else DOCKER_DEFAULT_CAPS - drop
    return base | add


def test_gospan_services(compose, dockerfiles, images):
    s = compose["services"]
    gospan_df = dockerfiles["gospan"]
    entry = gospan_df.final.last("ENTRYPOINT").words()
    copies = [i.copy_parts()[2] for i in gospan_df.final.all("COPY")]
    assert entry == ["/usr/local/bin/gospan"] and entry[0] in copies
    for name, target in TRACERS.items():
        svc = s[name]
        assert svc["pid"] == "host", f"{name}: needs the machine's PID namespace"
        assert docker_caps(svc) == GOSPAN_CAPS, f"{name}: capabilities {docker_caps(svc)}"
        assert not svc.get("privileged"), f"{name}: privileged is not needed"
        assert not svc.get("volumes"), f"{name}: no host mount is needed"
        exe = _flag(svc["command"], "--exe")
        assert exe in images[target].installed, \
            f"{name}: --exe {exe}, but the {target} image installs {list(images[target].installed)}"
        assert images[target].entrypoint == [exe], f"{target} does not run {exe}"
        assert svc["environment"]["OTEL_EXPORTER_OTLP_ENDPOINT"] == \
            f"http://jaeger:{JAEGER_OTLP_HTTP_PORT}"
        # Jaeger takes no metrics: the default, otlp, would send them there and fail.
        assert svc["environment"].get("OTEL_METRICS_EXPORTER") in ("console", "none"), name
        assert svc["depends_on"]["jaeger"]["condition"] == "service_healthy"
        assert target in svc["depends_on"]
        # The export at exit may take OTEL_BSP_EXPORT_TIMEOUT (30 s): Docker must wait longer.
        grace = svc["stop_grace_period"]
        assert grace.endswith("s") and int(grace[:-1]) > 30
        assert svc["restart"] == "unless-stopped"


def test_services_are_named_by_their_own_environment(compose, images):
    for name in ("frontend", "backend", "inventory", "consumer"):
        assert images[name].env.get("OTEL_SERVICE_NAME") == name
        assert compose["services"][name]["environment"]["OTEL_SERVICE_NAME"] == name
        assert images[name].user[0] != 0, f"{name} runs as root"


def test_every_service_has_a_healthcheck_or_needs_none(compose):
    s = compose["services"]
    for name in ("jaeger", *DATASTORES, "kafka", "frontend", "backend", "inventory"):
        test = s[name]["healthcheck"]["test"]
        assert test[0] == "CMD"
    for name, svc in s.items():
        for dep, how in (svc.get("depends_on") or {}).items():
            if how["condition"] == "service_healthy":
                assert "healthcheck" in s[dep], f"{name} waits for {dep}'s healthcheck: none"


# ---- the example images, their build replayed ------------------------------------------------


@pytest.mark.parametrize("name", APPS)
def test_example_images_replayed(images, name):
    img = images[name]
    assert list(img.installed) == [f"/app/{name}"] and img.entrypoint == [f"/app/{name}"]
    binary = img.installed[f"/app/{name}"]
    header = _run(["readelf", "-h", "-l", "-S", str(binary)], "readelf")
    assert re.search(r"Type:\s+EXEC", header), "not PIE: gospan --exe sends trace context then"
    assert "INTERP" not in header, "static: the image has no Go toolchain nor libc to match"
    if name != "loadgen":
        assert ".debug_info" in header and ".symtab" in header, "symbols and DWARF kept"


# ---- Kubernetes -------------------------------------------------------------------------------

DNS_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")


def test_kube_manifest_decodes_strictly(kube_objects):
    kinds = [o["kind"] for o in kube_objects]
    assert kinds == ["Namespace", "ServiceAccount", "DaemonSet"]
    ns = kube_objects[0]["metadata"]["name"]
    for o in kube_objects:
        name = o["metadata"]["name"]
        assert DNS_LABEL.fullmatch(name) and len(name) <= 63, name
        if o["kind"] != "Namespace":
            assert o["metadata"]["namespace"] == ns


def test_kube_daemonset(kube_objects, images):
    sa = kube_objects[1]
    ds = kube_objects[2]
    spec = ds["spec"]
    labels = spec["template"]["metadata"]["labels"]
    assert spec["selector"]["matchLabels"].items() <= labels.items(), "selector must match"
    pod = spec["template"]["spec"]
    assert pod["hostPID"] is True
    assert pod["serviceAccountName"] == sa["metadata"]["name"]
    assert pod["automountServiceAccountToken"] is False
    assert pod["nodeSelector"]["kubernetes.io/os"] == "linux"
    assert pod["securityContext"]["seccompProfile"]["type"] == "RuntimeDefault"
    assert pod["terminationGracePeriodSeconds"] > 30
    (c,) = pod["containers"]
    sc = c["securityContext"]
    assert sc["privileged"] is False
    caps = sc["capabilities"]
    assert caps["drop"] == ["ALL"] and set(caps["add"]) == GOSPAN_CAPS
    # The API refuses allowPrivilegeEscalation=false together with SYS_ADMIN.
    assert sc.get("allowPrivilegeEscalation") is not False
    volumes = {v["name"] for v in pod.get("volumes") or []}
    assert {m["name"] for m in c.get("volumeMounts") or []} <= volumes
    env = {e["name"]: e for e in c["env"]}
    assert env["OTEL_GO_AUTO_TARGET_EXE"]["value"] in images["frontend"].installed
    assert re.fullmatch(r"http://[a-z0-9.-]+:4318", env["OTEL_EXPORTER_OTLP_ENDPOINT"]["value"])
    for ref in re.findall(r"\$\(([A-Z_]+)\)", env["OTEL_RESOURCE_ATTRIBUTES"]["value"]):
        assert list(env).index(ref) < list(env).index("OTEL_RESOURCE_ATTRIBUTES"), \
            f"$({ref}) is expanded only when defined before"
    res = c["resources"]
    assert res["requests"]["memory"] and res["limits"]["memory"]
    units = {"Mi": 1 << 20, "Gi": 1 << 30}

    def size(q):
        return int(q[:-2]) * units[q[-2:]]

    assert size(res["requests"]["memory"]) <= size(res["limits"]["memory"])


# ---- Kubernetes: the example Collector ----------------------------------------------------------

# Kinds of otel-collector.yaml, in order.
COLLECTOR_KINDS = ["Namespace", "ServiceAccount", "ClusterRole", "ClusterRoleBinding", "ConfigMap",
                   "Deployment", "Service"]
CLUSTER_SCOPED = {"Namespace", "ClusterRole", "ClusterRoleBinding"}
READ_VERBS = {"get", "list", "watch"}
CONFIG_KEY = "config.yaml"


def semconv_names():
    """exporter/model/semconv.h's names: {"SC_K8S_POD_UID": "k8s.pod.uid", ...}."""
    names = dict(re.findall(r'^#define (SC_[A-Z0-9_]+) "([^"]+)"$', SEMCONV_H.read_text(), re.M))
    assert names, f"no SC_ name in {SEMCONV_H}"
    return names


def _one(objects, kind):
    (o,) = [o for o in objects if o["kind"] == kind]
    return o


def _collector_config(objects):
    return yaml.safe_load(_one(objects, "ConfigMap")["data"][CONFIG_KEY])


def _k8s_attributes(config):
    """The k8s_attributes processor's configuration (under its current type name or its old one,
    the one in the pipeline)."""
    (name,) = [p for p in config["service"]["pipelines"]["traces"]["processors"]
               if p.split("/")[0] in ("k8s_attributes", "k8sattributes")]
    return config["processors"][name]


def test_collector_manifest_decodes_strictly(collector_kube_objects, deploycheck_bin, tmp_path):
    assert [o["kind"] for o in collector_kube_objects] == COLLECTOR_KINDS
    ns = collector_kube_objects[0]["metadata"]["name"]
    for o in collector_kube_objects:
        name = o["metadata"]["name"]
        assert DNS_LABEL.fullmatch(name) and len(name) <= 63, name
        if o["kind"] in CLUSTER_SCOPED:
            assert "namespace" not in o["metadata"], f"{o['kind']} is cluster-scoped"
        else:
            assert o["metadata"]["namespace"] == ns, o["kind"]
    # The decoding is strict for these kinds too: a misspelt field of the ClusterRole is refused.
    text = COLLECTOR_KUBE_FILE.read_text()
    assert text.count("    verbs: [") == 1
    broken = tmp_path / "otel-collector.yaml"
    broken.write_text(text.replace("    verbs: [", "    verb: ["))
    res = subprocess.run([str(deploycheck_bin), "kube", str(broken)], capture_output=True,
                         text=True)
    assert res.returncode == 1 and 'unknown field "rules[0].verb"' in res.stderr, res.stderr


def test_collector_is_where_gospan_sends(kube_objects, collector_kube_objects):
    """gospan's OTEL_EXPORTER_OTLP_ENDPOINT names the Service, in the Namespace, on the port
    that reaches the Deployment's container, where the Collector's OTLP/HTTP receiver listens,
    for the spans and for the metrics gospan sends there by default."""
    from collector import COLLECTOR_VERSION

    (c,) = _one(kube_objects, "DaemonSet")["spec"]["template"]["spec"]["containers"]
    env = {e["name"]: e.get("value") for e in c["env"]}
    endpoint = env["OTEL_EXPORTER_OTLP_ENDPOINT"]
    assert env.get("OTEL_METRICS_EXPORTER", "otlp") == "otlp"
    assert "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT" not in env
    m = re.fullmatch(r"http://([a-z0-9-]+)\.([a-z0-9-]+)\.svc\.cluster\.local:(\d+)", endpoint)
    assert m, f"gospan's endpoint '{endpoint}' is not a Service's cluster DNS name"
    svc_name, svc_ns, port = m[1], m[2], int(m[3])

    objs = collector_kube_objects
    assert _one(objs, "Namespace")["metadata"]["name"] == svc_ns
    svc = _one(objs, "Service")
    assert (svc["metadata"]["name"], svc["metadata"]["namespace"]) == (svc_name, svc_ns)
    (sp,) = [p for p in svc["spec"]["ports"] if p["port"] == port]
    assert sp.get("protocol", "TCP") == "TCP"

    dep = _one(objs, "Deployment")
    labels = dep["spec"]["template"]["metadata"]["labels"]
    assert dep["spec"]["selector"]["matchLabels"].items() <= labels.items()
    assert svc["spec"]["selector"].items() <= labels.items(), "the Service selects the pods"
    pod = dep["spec"]["template"]["spec"]
    (col,) = pod["containers"]
    target = sp.get("targetPort", port)
    (cp,) = [p for p in col["ports"] if target in (p["containerPort"], p.get("name"))]

    # The receiver listens on that port, on every interface.
    config = _collector_config(objs)
    http = config["receivers"]["otlp"]["protocols"]["http"]
    assert _port_of_addr(http["endpoint"]) == ("0.0.0.0", cp["containerPort"])
    pipelines = config["service"]["pipelines"]
    assert pipelines["traces"]["receivers"] == ["otlp"]
    # The metrics too, with the same pod names: the processor that adds them, before batch.
    assert pipelines["metrics"]["receivers"] == ["otlp"]
    assert pipelines["metrics"]["processors"] == pipelines["traces"]["processors"]
    assert pipelines["metrics"]["exporters"], "a metrics pipeline that exports nowhere"

    # The configuration the container is given is the ConfigMap's.
    (arg,) = [a for a in col["args"] if a.startswith("--config=")]
    (mount,) = [m for m in col["volumeMounts"] if arg[len("--config="):].startswith(m["mountPath"])]
    assert arg == f"--config={mount['mountPath']}/{CONFIG_KEY}"
    (vol,) = [v for v in pod["volumes"] if v["name"] == mount["name"]]
    assert vol["configMap"]["name"] == _one(objs, "ConfigMap")["metadata"]["name"]

    # The image is the contrib distribution (it holds k8s_attributes) of the release the tests
    # validate the configuration with.
    assert col["image"] == f"otel/opentelemetry-collector-contrib:{COLLECTOR_VERSION[1:]}"
    assert pod["serviceAccountName"] == _one(objs, "ServiceAccount")["metadata"]["name"]


# What the k8s_attributes processor (v1.1.0, released with the Collector v0.162.0) reads from the
# API server, by configuration; from its internal/kube/client.go, which starts an informer
# (list and watch) for each. The pod informer always runs. The namespace informer only for
# namespace labels or annotations, or k8s.cluster.uid (the kube-system namespace's uid); the
# ReplicaSet informer only for k8s.deployment.uid or deployment/replicaset labels or annotations
# (k8s.deployment.name is the pod's owning ReplicaSet's name less its pod-template-hash
# suffix); the node informer only for k8s.node.uid or node labels or annotations.
PODS = ("", "pods")
FROM_THE_POD = {"k8s.pod.name", "k8s.pod.uid", "k8s.namespace.name", "k8s.node.name",
                "k8s.deployment.name", "k8s.container.name", "container.id"}
NEEDS = {"k8s.cluster.uid": ("", "namespaces"), "k8s.deployment.uid": ("apps", "replicasets"),
         "k8s.node.uid": ("", "nodes")}


def k8s_attributes_needs(proc):
    """The (API group, resource) pairs the processor configured as PROC reads."""
    extract = proc.get("extract") or {}
    assert not extract.get("labels") and not extract.get("annotations"), \
        "labels and annotations are not modelled here: extend k8s_attributes_needs"
    needs = {PODS}
    for attr in extract["metadata"]:
        assert attr in FROM_THE_POD or attr in NEEDS, \
            f"'{attr}' is not modelled here: extend k8s_attributes_needs"
        if attr in NEEDS:
            needs.add(NEEDS[attr])
    return needs


def test_collector_rbac_is_what_the_processor_needs(collector_kube_objects):
    objs = collector_kube_objects
    proc = _k8s_attributes(_collector_config(objs))
    needs = k8s_attributes_needs(proc)
    assert needs == {PODS}, needs
    # The model is live: the uid of the deployment would need the ReplicaSets.
    assert ("apps", "replicasets") in k8s_attributes_needs(
        {"extract": {"metadata": ["k8s.pod.name", "k8s.deployment.uid"]}})

    role = _one(objs, "ClusterRole")
    granted = {}
    for rule in role["rules"]:
        assert not rule.get("resourceNames") and not rule.get("nonResourceURLs"), rule
        for group in rule["apiGroups"]:
            for res in rule["resources"]:
                granted.setdefault((group, res), set()).update(rule["verbs"])
    assert set(granted) == needs, f"granted {sorted(granted)}, the processor reads {needs}"
    for what, verbs in granted.items():
        assert verbs == READ_VERBS, f"{what}: {sorted(verbs)}; read only, and all of it"

    binding = _one(objs, "ClusterRoleBinding")
    assert binding["roleRef"] == {"apiGroup": "rbac.authorization.k8s.io",
                                  "kind": "ClusterRole", "name": role["metadata"]["name"]}
    sa = _one(objs, "ServiceAccount")
    assert binding["subjects"] == [{"kind": "ServiceAccount", "name": sa["metadata"]["name"],
                                    "namespace": sa["metadata"]["namespace"]}]
    # The processor authenticates with the pod's service account token (its default).
    assert proc.get("auth_type", "serviceAccount") == "serviceAccount"
    pod = _one(objs, "Deployment")["spec"]["template"]["spec"]
    assert pod.get("automountServiceAccountToken", True) is True


def test_collector_pod_association_is_what_gospan_emits(collector_kube_objects):
    """Pods are looked up by the resource attributes gospan sets, k8s.pod.uid first: the names
    from exporter/model/semconv.h, which exporter/capture/process.c puts on the resource."""
    names = semconv_names()
    emitted = (names["SC_K8S_POD_UID"], names["SC_CONTAINER_ID"])
    process_c = (REPO / "exporter" / "capture" / "process.c").read_text()
    for macro in ("SC_K8S_POD_UID", "SC_CONTAINER_ID"):
        assert re.search(rf"resource__set_str\([^,]+, {macro},", process_c), \
            f"exporter/capture/process.c no longer sets {macro} on the resource"

    proc = _k8s_attributes(_collector_config(collector_kube_objects))
    rules = [[(s["from"], s.get("name")) for s in a["sources"]] for a in proc["pod_association"]]
    assert rules == [[("resource_attribute", emitted[0])], [("resource_attribute", emitted[1])]]
    # What the association gives the rest: the pod's names, and the container's from its id.
    assert {"k8s.pod.name", "k8s.namespace.name", "k8s.deployment.name", "k8s.node.name",
            "k8s.container.name"} <= set(proc["extract"]["metadata"])
    assert not proc.get("passthrough"), "passthrough looks nothing up"
    # The processor indexes the pods' container ids only when a container attribute is
    # extracted (needContainerAttributes in its internal/kube/client.go); without one the
    # container.id rule matches nothing, and the validator does not say so.
    assert CONTAINER_ATTRIBUTES & set(proc["extract"]["metadata"]), \
        "container.id association needs a container attribute in extract.metadata"


# The extract.metadata fields for which the processor v1.1.0 keeps the pods' container ids.
CONTAINER_ATTRIBUTES = {"container.image.name", "k8s.container.name", "container.image.tag",
                        "container.image.tags", "container.image.repo_digests", "container.id",
                        "service.version", "service.instance.id"}


@pytest.fixture(scope="session")
def otelcol_bin():
    """A real Collector of the release the example's image is, with the components its
    configuration names (collector.py); built once, cached."""
    from collector import built, collector_binary
    return built(collector_binary)


def _otelcol_validate(binary, config_text, path):
    path.write_text(config_text)
    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    return subprocess.run([str(binary), "validate", f"--config=file:{path}"], env=env,
                          capture_output=True, text=True, timeout=60)


# Broken copies of the configuration, each with what the Collector must say about it. Not among
# them: a misspelt `from` value ("resource_atribute") or an unknown attribute name in a
# pod_association source, which `otelcol validate` v0.162.0 accepts (the processor checks
# neither; such a rule just never matches): test_collector_pod_association_is_what_gospan_emits
# checks those.
BROKEN_CONFIGS = {
    # A misspelt key in a pod association source.
    "misspelt_key": ("              - from: resource_attribute\n                name: container.id",
                     "              - from: resource_attribute\n                nmae: container.id",
                     "nmae"),
    # A field the processor cannot extract.
    "unknown_metadata": ("            - k8s.pod.name\n", "            - k8s.pod.nickname\n",
                         "k8s.pod.nickname"),
    # A processor type the distribution does not have.
    "unknown_processor": ("      batch: {}\n", "      batchx: {}\n", "batchx"),
}


def test_collector_config_is_accepted_by_the_real_collector(collector_kube_objects, otelcol_bin,
                                                            tmp_path):
    """`otelcol validate` loads the ConfigMap's configuration the way the Collector starts:
    strict decoding of every component's configuration, each one's own checks, and the
    pipelines built (without starting them, so no API server is needed)."""
    text = _one(collector_kube_objects, "ConfigMap")["data"][CONFIG_KEY]
    res = _otelcol_validate(otelcol_bin, text, tmp_path / "config.yaml")
    assert res.returncode == 0, f"the Collector refused the configuration:\n{res.stderr}"
    raw = COLLECTOR_KUBE_FILE.read_text()
    for name, (old, new, said) in BROKEN_CONFIGS.items():
        assert raw.count(old) == 1, f"{name}: '{old}' once in {COLLECTOR_KUBE_FILE.name}"
        broken = yaml.safe_load(raw.replace(old, new).split("\n---\n")[COLLECTOR_KINDS.index(
            "ConfigMap")])["data"][CONFIG_KEY]
        res = _otelcol_validate(otelcol_bin, broken, tmp_path / f"{name}.yaml")
        assert res.returncode != 0 and said in res.stderr, \
            f"{name}: the Collector did not refuse it (status {res.returncode}):\n{res.stderr}"
