"""The docker-compose demo on a real Docker engine: what `make compose-demo` runs and
test_compose.py tests.

docker-compose.yml is used as a user runs it (`docker compose up`); what this machine lacks is
provided first, and only what was missing:

- the engine: Debian's docker.io (`make deps` installs it); when no engine answers, dockerd is
  started here (its log in the work directory) and stopped at the end;
- the compose tool: Docker Compose v2 (`docker compose`). Debian 12 packages only Compose v1
  (docker-compose 1.29), which does not read this file (`name:`, `cgroup:`), so `make deps`
  builds v2 from its Go module (COMPOSE_VERSION, through the Go module proxy, about 2 minutes,
  cached) and installs it as the CLI plugin /usr/local/lib/docker/cli-plugins/docker-compose
  (~/.docker/cli-plugins/ when not run as root);
- the images: no container registry can be reached here, so every image the compose file and
  the Dockerfiles it builds name (debian:bookworm, debian:bookworm-slim, golang:1.26-bookworm,
  jaegertracing/jaeger, postgres, redis, apache/kafka) that the engine does not have is made
  locally and tagged with that name, so that the file under test is the user's own: Debian from
  Debian's packages (debootstrap, minbase; the tarball cached), the others from
  tests/e2e/standins/ on it (the Go toolchain the machine has, the Jaeger binary jaeger.py
  builds, Debian's PostgreSQL and Redis, the Kafka jars kafka.py fetches on Debian's Java 17).
  A user with a registry pulls the real images instead.

Run as a program:

    python3 tests/e2e/compose.py tool      install Compose v2 where `docker compose` is missing
    python3 tests/e2e/compose.py demo      the whole demo: engine, images, `docker compose up
                                           --build`, load, the joined-trace check read back from
                                           Jaeger in its container, `docker compose down`, and
                                           every container, network and image it made removed
                                           (GOSPAN_COMPOSE_KEEP=1 leaves it all running)
"""

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from collector import Unavailable as CollectorUnavailable, module_source  # noqa: E402
from jaeger import QueryAPI, jaeger_binary, process_tags, service_of  # noqa: E402
from kafka import Unavailable as KafkaUnavailable, java_command, kafka_libs  # noqa: E402
from matrix import cache_dir  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
COMPOSE_FILE = REPO / "docker-compose.yml"
STANDINS = Path(__file__).resolve().parent / "standins"
COMPOSE_MODULE = "github.com/docker/compose/v2"
COMPOSE_VERSION = "v2.40.3"
# Where the docker CLI looks for plugins: system-wide for root, else the user's own.
PLUGIN = (Path("/usr/local/lib/docker/cli-plugins") if os.geteuid() == 0 else
          Path.home() / ".docker" / "cli-plugins") / "docker-compose"
DEBIAN_SUITE = "bookworm"
DEBIAN_MIRROR = "http://deb.debian.org/debian"
CA_BUNDLE = "/etc/ssl/certs/ca-certificates.crt"
JAEGER_QUERY = "http://127.0.0.1:16686"
TRACED = ("frontend", "backend", "inventory", "consumer")
# The consumer's fetches wait at most this long (its -poll, examples/consumer): the one waiting
# when its gospan attached hands its order over unseen, those after are seen. Requests made this
# long after every gospan attached are traced through Kafka whole.
CONSUMER_POLL = 1.0


class Unavailable(Exception):
    """What the demo needs cannot be had on this machine; the message says what and why."""


def say(msg):
    print(f"compose-demo: {msg}", flush=True)


def run(argv, what, timeout=900, check=True, quiet=True, **kw):
    """ARGV's completed process; raises Unavailable naming WHAT when it fails and CHECK."""
    argv = [str(a) for a in argv]
    try:
        res = subprocess.run(argv, capture_output=quiet, text=True, timeout=timeout, **kw)
    except (OSError, subprocess.TimeoutExpired) as e:
        raise Unavailable(f"{what}: {e}") from e
    if check and res.returncode != 0:
        tail = ((res.stderr or "") + (res.stdout or "")).strip()[-3000:] if quiet else ""
        raise Unavailable(f"{what}: '{' '.join(argv)}' exited with status "
                          f"{res.returncode}{': ' + tail if tail else ''}")
    return res


# ---- the engine and the compose tool ------------------------------------------------------------

def engine_answers():
    return shutil.which("docker") is not None and \
        subprocess.run(["docker", "info"], capture_output=True, timeout=30).returncode == 0


class Engine:
    """The Docker engine: the running one, else a dockerd started here and stopped by stop()."""

    def __init__(self, workdir):
        self.proc = None
        self.log = Path(workdir) / "dockerd.log"

    def start(self, timeout=60.0):
        if engine_answers():
            return self
        if shutil.which("dockerd") is None:
            raise Unavailable("no Docker engine runs and dockerd is not installed (Debian's "
                              "docker.io: `make deps` installs it)")
        if os.geteuid() != 0:
            raise Unavailable("no Docker engine runs, and starting dockerd needs root")
        say(f"no Docker engine answers: starting dockerd (log: {self.log})")
        with open(self.log, "ab") as log:
            self.proc = subprocess.Popen(["dockerd"], stdout=log, stderr=subprocess.STDOUT,
                                         stdin=subprocess.DEVNULL, start_new_session=True)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise Unavailable(f"dockerd exited with status {self.proc.returncode}: "
                                  f"{self.log.read_text(errors='replace')[-2000:]}")
            if engine_answers():
                return self
            time.sleep(0.5)
        self.stop()
        raise Unavailable(f"dockerd did not answer within {timeout:.0f} s: "
                          f"{self.log.read_text(errors='replace')[-2000:]}")

    def stop(self):
        """Stops the dockerd started here (none otherwise), waiting for it to exit."""
        if self.proc is None or self.proc.poll() is not None:
            return
        self.proc.terminate()
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        say("stopped the dockerd started for the demo")


def compose_answers():
    return subprocess.run(["docker", "compose", "version"], capture_output=True,
                          timeout=30).returncode == 0


def install_compose():
    """Docker Compose v2 as the docker CLI's plugin, built from its Go module when `docker
    compose` is missing. Its go.mod has exclude directives, which `go install pkg@version`
    refuses, so the module is downloaded and built as the main module; the binary is cached."""
    if compose_answers():
        return
    home = cache_dir("GOSPAN_COMPOSE_CACHE") / f"compose-{COMPOSE_VERSION}"
    binary = home / "docker-compose"
    if not os.access(binary, os.X_OK):
        say(f"building Docker Compose {COMPOSE_VERSION} from {COMPOSE_MODULE} through the Go "
            f"module proxy (about 2 minutes, once)")
        try:
            src = module_source(COMPOSE_MODULE, COMPOSE_VERSION, home / "src", "Docker Compose")
        except CollectorUnavailable as e:
            raise Unavailable(str(e)) from e
        tmp = home / "docker-compose.partial"
        run(["go", "build", "-trimpath", "-o", str(tmp), "-ldflags",
             f"-s -w -X {COMPOSE_MODULE}/internal.Version={COMPOSE_VERSION}", "./cmd"],
            "cannot build Docker Compose", timeout=1800, cwd=src,
            env={**os.environ, "CGO_ENABLED": "0"})
        os.replace(tmp, binary)
        shutil.rmtree(src, ignore_errors=True)
    PLUGIN.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy2(binary, PLUGIN)
    if not compose_answers():
        raise Unavailable(f"'docker compose version' fails with {PLUGIN} installed")
    say(f"installed Docker Compose {COMPOSE_VERSION} as {PLUGIN}")


# ---- the images ---------------------------------------------------------------------------------

def compose_config():
    res = run(["docker", "compose", "-f", str(COMPOSE_FILE), "config", "--format", "json"],
              "cannot read docker-compose.yml")
    return json.loads(res.stdout)


def base_images(config):
    """Every image the compose file runs or its Dockerfiles build FROM, by name, but the
    Dockerfiles' own stages."""
    names = set()
    for svc in config["services"].values():
        build = svc.get("build")
        if not build:
            names.add(svc["image"])
            continue
        dockerfile = Path(build["context"]) / build.get("dockerfile", "Dockerfile")
        stages = set()
        for line in dockerfile.read_text().splitlines():
            m = re.match(r"\s*FROM\s+(?:--platform=\S+\s+)?(\S+)(?:\s+AS\s+(\S+))?", line, re.I)
            if m:
                if m.group(1) not in stages:
                    names.add(m.group(1))
                if m.group(2):
                    stages.add(m.group(2))
    return names


def image_exists(name):
    return subprocess.run(["docker", "image", "inspect", name], capture_output=True,
                          timeout=60).returncode == 0


def debian_rootfs():
    """A tarball of a minimal Debian (debootstrap --variant=minbase), cached."""
    tar = cache_dir("GOSPAN_IMAGE_CACHE") / f"debian-{DEBIAN_SUITE}-minbase.tar"
    if tar.exists():
        return tar
    if shutil.which("debootstrap") is None:
        raise Unavailable("debootstrap is not installed (`make deps` installs it): it makes the "
                          "Debian base image")
    tar.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="gospan-debian-") as root:
        say(f"making a Debian {DEBIAN_SUITE} root file system from Debian's packages "
            f"(debootstrap, about a minute, once)")
        run(["debootstrap", "--variant=minbase", DEBIAN_SUITE, root, DEBIAN_MIRROR],
            "debootstrap failed", timeout=900)
        # What the official image leaves out too: the package lists and caches.
        for d in ("var/lib/apt/lists", "var/cache/apt/archives"):
            for p in Path(root, d).glob("*"):
                if p.is_file():
                    p.unlink()
        tmp = tar.with_suffix(".partial")
        run(["tar", "-C", root, "--numeric-owner", "-cf", str(tmp), "."], "cannot pack Debian")
        os.replace(tmp, tar)
    return tar


def _go_root(want):
    """The GOROOT of a Go toolchain of release WANT ("1.26"): the machine's own if it is one,
    else the newest patch release the go command takes from the module proxy."""
    res = run(["go", "env", "GOVERSION", "GOROOT"], "cannot ask Go its version")
    version, root = res.stdout.split()
    if version.startswith(f"go{want}.") or version == f"go{want}":
        return root
    res = run(["go", "env", "GOROOT"], f"cannot get Go {want}",
              env={**os.environ, "GOTOOLCHAIN": f"go{want}.0+auto", "GOFLAGS": ""}, timeout=600)
    return res.stdout.strip()


def make_standin(name, made):
    """Builds the local stand-in for image NAME and tags it NAME; adds it to MADE."""
    repo, _, tag = name.partition(":")
    if repo == "debian":
        run(["docker", "import", "--change", 'CMD ["bash"]', str(debian_rootfs()), name],
            f"cannot import Debian as {name}")
    elif repo == "golang":
        m = re.match(r"(\d+\.\d+)", tag)
        if not m:
            raise Unavailable(f"cannot tell the Go release of {name}")
        need(f"debian:{DEBIAN_SUITE}", made)
        goroot = _go_root(m.group(1))
        with tempfile.TemporaryDirectory(prefix="gospan-golang-image-") as ctx:
            # Hard links where the toolchain is on the same file system, else a copy.
            run(["cp", "-a", "--link", goroot + "/.", f"{ctx}/go"],
                "cannot link the Go toolchain", check=False)
            if not Path(ctx, "go", "bin", "go").exists():
                shutil.rmtree(Path(ctx, "go"), ignore_errors=True)
                shutil.copytree(goroot, Path(ctx, "go"), symlinks=True)
            shutil.copy2(CA_BUNDLE, Path(ctx, "ca-certificates.crt"))
            run(["docker", "build", "-q", "-t", name, "-f",
                 str(STANDINS / "golang" / "Dockerfile"), ctx], f"cannot build {name}")
    elif repo == "jaegertracing/jaeger":
        need(f"debian:{DEBIAN_SUITE}-slim", made)
        with tempfile.TemporaryDirectory(prefix="gospan-jaeger-image-") as ctx:
            shutil.copy2(jaeger_binary(), Path(ctx) / "jaeger")
            run(["docker", "build", "-q", "-t", name, "-f",
                 str(STANDINS / "jaeger" / "Dockerfile"), ctx], f"cannot build {name}")
    elif repo in ("postgres", "redis"):
        need(f"debian:{DEBIAN_SUITE}-slim", made)
        run(["docker", "build", "-q", "-t", name, str(STANDINS / repo)], f"cannot build {name}")
    elif repo == "apache/kafka":
        if not re.fullmatch(r"\d+\.\d+\.\d+", tag):
            raise Unavailable(f"cannot tell the Kafka release of {name}")
        need(f"debian:{DEBIAN_SUITE}-slim", made)
        try:
            libs = kafka_libs(tag)
            java_home = Path(os.path.realpath(java_command())).parent.parent
        except KafkaUnavailable as e:
            raise Unavailable(f"cannot make {name}: {e}") from e
        with tempfile.TemporaryDirectory(prefix="gospan-kafka-image-") as ctx:
            shutil.copytree(libs, Path(ctx, "libs"), ignore=shutil.ignore_patterns("*.json"))
            # The Java the tests run the broker with, its links into /etc followed: installing
            # Debian's in the image took apt two minutes of every CI run.
            shutil.copytree(java_home, Path(ctx, "java"), symlinks=False,
                            ignore_dangling_symlinks=True)
            for f in ("run", "log4j2.properties"):
                shutil.copy2(STANDINS / "kafka" / f, Path(ctx, f))
            run(["docker", "build", "-q", "-t", name, "-f",
                 str(STANDINS / "kafka" / "Dockerfile"), ctx], f"cannot build {name}",
                timeout=1800)
    else:
        raise Unavailable(f"the engine has no image '{name}', none can be pulled here, and "
                          f"tests/e2e/compose.py knows no stand-in for it")
    made.append(name)
    say(f"made the stand-in image {name}")


def need(name, made):
    if not image_exists(name):
        make_standin(name, made)


# ---- the demo -----------------------------------------------------------------------------------

class Demo:
    """docker-compose.yml brought up under project PROJECT (the file's own name by default),
    and everything made for it taken down again by down()."""

    def __init__(self, workdir, project="gospan-demo"):
        self.workdir = Path(workdir)
        self.project = project
        self.engine = Engine(workdir)
        self.made_images = []  # stand-ins made here, removed by down()
        self.up_called = False

    def compose(self, *args, timeout=900, check=True, quiet=True):
        return run(["docker", "compose", "-f", str(COMPOSE_FILE), "-p", self.project, *args],
                   f"docker compose {' '.join(args)}", timeout=timeout, check=check, quiet=quiet)

    def prepare(self):
        self.engine.start()
        install_compose()
        for name in sorted(base_images(compose_config())):
            need(name, self.made_images)

    def up(self):
        self.up_called = True
        t0 = time.monotonic()
        say("docker compose up --build --wait (images built from the repository's Dockerfiles)")
        self.compose("up", "--build", "--detach", "--wait", "--wait-timeout", "300",
                     timeout=1800)
        say(f"every service is up ({time.monotonic() - t0:.0f} s)")

    def logs(self, service):
        return self.compose("logs", "--no-color", "--no-log-prefix", service, check=False).stdout

    def wait_traced(self):
        """Waits until every gospan has attached and the consumer's fetch that was waiting then
        has ended; returns that time (UNIX seconds): the requests made after it are traced
        whole, through Kafka too."""
        for svc in TRACED:
            self.wait_attached(f"gospan-{svc}")
        time.sleep(CONSUMER_POLL + 0.5)
        return time.time()

    def wait_attached(self, service, timeout=60.0):
        """Waits for 'gospan: attached' in SERVICE's log; returns its lines."""
        deadline = time.monotonic() + timeout
        while True:
            out = self.logs(service)
            if "gospan: attached" in out:
                return out
            if time.monotonic() > deadline:
                raise Unavailable(f"{service} did not report 'gospan: attached' within "
                                  f"{timeout:.0f} s; its log:\n{out[-3000:]}")
            time.sleep(0.5)

    def container_id(self, service):
        res = self.compose("ps", "-q", service)
        ids = res.stdout.split()
        if len(ids) != 1:
            raise Unavailable(f"{service}: {len(ids)} containers, not one")
        return run(["docker", "inspect", "-f", "{{.Id}}", ids[0]], "docker inspect").stdout.strip()

    def down(self):
        """Takes down the project's containers and networks, removes the images made for it
        (the services' builds, by the project label compose puts on them, and the stand-ins
        made here), and stops the engine if it was started here. The build cache goes only
        with an engine started here: a running engine's cache is its user's."""
        try:
            if self.up_called:
                self.compose("down", "--volumes", "--remove-orphans", "--timeout", "40",
                             timeout=300, check=False)
            if engine_answers():
                res = run(["docker", "image", "ls", "-aq", "--filter",
                           f"label=com.docker.compose.project={self.project}"],
                          "cannot list images", check=False)
                built = sorted(set(res.stdout.split()))
                if built:
                    run(["docker", "image", "rm", "-f", *built], "cannot remove images",
                        check=False)
                for name in reversed(self.made_images):
                    run(["docker", "image", "rm", name], "cannot remove image", check=False)
                if self.engine.proc is not None:
                    run(["docker", "builder", "prune", "-af"], "cannot prune the build cache",
                        check=False)
                say(f"removed {len(built)} images built for the demo and "
                    f"{len(self.made_images)} stand-ins")
        finally:
            self.engine.stop()


def jaeger_show(since_s, out):
    """jaeger.py show over the traced services for traces started after SINCE_S (UNIX
    seconds), but the compose file's health checks' (GET /health); (exit status, output)."""
    res = subprocess.run(
        [sys.executable, str(Path(__file__).resolve().parent / "jaeger.py"), "show",
         "--query", JAEGER_QUERY, "--since", f"{since_s:.6f}", "--ignore-path", "/health",
         *[a for s in TRACED for a in ("--service", s)], "--datastores", "backend"],
        capture_output=True, text=True, timeout=300)
    Path(out).write_text(res.stdout + res.stderr)
    return res.returncode, res.stdout + res.stderr


def span_containers(service, since):
    """The container.id values of SERVICE's spans in traces started after SINCE."""
    seen = set()
    for t in QueryAPI(JAEGER_QUERY).find_traces(service, limit=1000):
        if min(s["startTime"] for s in t["spans"]) < since * 1e6:
            continue
        for s in t["spans"]:
            if service_of(t, s) == service:
                seen.add(process_tags(t, s).get("container.id"))
    return seen


def joined(show_out):
    """(joined, of) from show's 'joined traces: N of M' line."""
    m = re.search(r"^joined traces: (\d+) of (\d+) ", show_out, re.M)
    return (int(m.group(1)), int(m.group(2))) if m else (0, 0)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    sub.add_parser("tool")
    d = sub.add_parser("demo")
    d.add_argument("--seconds", type=float, default=15.0,
                   help="how long loadgen runs once every gospan attached (default 15)")
    args = ap.parse_args(argv)
    try:
        if args.cmd == "tool":
            install_compose()
            return 0
        return demo(args.seconds)
    except Unavailable as e:
        print(f"compose-demo: {e}", file=sys.stderr)
        return 1


def demo(seconds):
    if os.geteuid() != 0:
        raise Unavailable("gospan's containers load BPF programs, and starting an engine needs "
                          "root: run 'sudo make compose-demo'")
    keep = os.environ.get("GOSPAN_COMPOSE_KEEP") == "1"
    work = Path(tempfile.mkdtemp(prefix="gospan-compose-demo-"))
    d = Demo(work)
    ok = False
    try:
        d.prepare()
        d.up()
        for svc in TRACED:
            out = d.wait_attached(f"gospan-{svc}")
            say(f"gospan-{svc}: " + next(l for l in out.splitlines() if "gospan: attached" in l))
        since = d.wait_traced()
        say(f"every gospan attached, and the consumer's fetch that waited then has ended; "
            f"loadgen's requests for {seconds:.0f} s")
        time.sleep(seconds)
        d.compose("stop", "loadgen")
        time.sleep(3)  # the last spans: the gospans export every second
        rc, out = jaeger_show(since, work / "show.out")
        print(out, end="")
        n, of = joined(out)
        if rc != 0 or of == 0 or n != of:
            raise Unavailable(f"{n} of {of} frontend traces are one trace across the "
                              f"containers (show's status {rc}); see above")
        for svc in TRACED:
            cid, seen = d.container_id(svc), span_containers(svc, since)
            say(f"{svc}: container {cid[:12]}; its spans' container.id: "
                f"{', '.join(c[:12] if c else 'none' for c in sorted(seen, key=str))}")
            if seen != {cid}:
                raise Unavailable(f"{svc}'s spans do not name its container {cid}")
        kafka = re.search(r"^hop backend -> consumer, Kafka orders: (\d+) messages, in (\d+) of "
                          r"the joined traces$", out, re.M)
        if not kafka:
            raise Unavailable("no order went through Kafka in the joined traces; see above")
        say(f"all {of} frontend requests since every gospan attached are one trace across the "
            f"frontend, backend, inventory and consumer containers, every parent link exact, "
            f"read back from Jaeger in its container; {kafka[1]} orders in {kafka[2]} of them "
            f"went through Kafka, backend PRODUCER -> consumer CONSUMER -> its stock check")
        ok = True
        if keep:
            return 0
        # On SIGTERM each gospan detaches, exports what it holds and sums up: shown here.
        d.compose("stop", *[f"gospan-{svc}" for svc in TRACED], timeout=120)
        for svc in TRACED:
            lines = [line for line in d.logs(f"gospan-{svc}").splitlines()
                     if line.startswith(("gospan: summary:", "gospan: probe hits:"))]
            say(f"gospan-{svc}, stopped: " + ("; ".join(lines) or "no summary printed"))
        return 0
    finally:
        if keep and ok:
            say(f"everything keeps running (GOSPAN_COMPOSE_KEEP=1): Jaeger at {JAEGER_QUERY}; "
                f"'docker compose -p {d.project} down' stops it")
        else:
            d.down()
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
