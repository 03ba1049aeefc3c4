"""A real Apache Kafka broker for the end-to-end tests: Kafka in KRaft mode, one process that is
both broker and controller, on loopback ports, its storage and log in a temporary directory.

The broker is the Maven Central artifact org.apache.kafka:kafka_2.13 at KAFKA_VERSION with its
runtime dependencies, fetched once by Maven (a generated pom, `mvn dependency:copy-dependencies`)
and kept in

    <cache>/kafka-<version>/libs/, where <cache> is $GOSPAN_KAFKA_CACHE, else
    $XDG_CACHE_HOME/gospan, else ~/.cache/gospan

(fetched into a partial directory renamed into place once complete, so a fetch cut short never
looks done; `make deps` fetches it). A cold fetch into an empty ~/.m2 took 13 s on the 2-CPU
machine this was written on (43 MB of jars); once cached, nothing is fetched. It runs on Java 17
or later (the `java` on PATH, or $GOSPAN_KAFKA_JAVA); Debian's openjdk-17-jre-headless and maven
are in `make deps`. On two cores another build was loading, a start took 6 to 7.5 s (the first,
formatting the storage, the longest) and a restart on the same data 4 to 5 s; a stop under 1 s.

Kafka logs through slf4j 1.7 and log4j2; the pom adds log4j's slf4j 1.x binding (the artifact
does not bring one, and slf4j alone would drop every line), and a log4j2 configuration sends it
all to broker.log in the broker's directory, nothing to the console.

- kafka_broker: the session's broker (conftest.py exports the fixture), stopped after the
  session. It skips where Java or Maven is missing or the fetch cannot be made; conftest.py
  turns that skip into a failure under CI=true.
- KafkaBroker: .bootstrap ("127.0.0.1:PORT"), .host, .port, .log_path, .start_seconds (how long
  the last start took), stop(), start() again on the same ports and data, alive(),
  create_topics(), metadata(), log_tail().

The broker is asked whether it is up, and topics are made, through the Kafka protocol spoken
here with struct (ApiVersions, Metadata, CreateTopics), so no JVM tool starts per topic.

- build_kafkamix(): tests/e2e/kafkamix built with its build.sh for a set of clients (kafka-go,
  sarama, franz-go releases), one Go toolchain and go build flags, cached in
  <cache>/kafkamix-<hash of kafkamix>/<go>-<clients>/ as the dbmix builds are (datastores.py).

Run as a program, for trying tests/e2e/kafkamix by hand, and as the demo's way to a broker
(examples/demo.sh):

    python3 tests/e2e/kafka.py path       prints the broker's libs dir; status 1 when it is not
                                          fetched yet
    python3 tests/e2e/kafka.py fetch      fetches the broker when missing, prints its libs dir
    python3 tests/e2e/kafka.py serve [--topic NAME[:PARTITIONS]]...
                                          runs a broker on free loopback ports until SIGTERM;
                                          prints "ready bootstrap=HOST:PORT log=PATH" once up
"""

import argparse
import base64
import fcntl
import hashlib
import json
import os
import re
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

import pytest

import matrix
from matrix import cache_dir
from procs import Stop, end_process, free_ports, raise_stop

REPO = Path(__file__).resolve().parents[2]
KAFKAMIX = REPO / "tests" / "e2e" / "kafkamix"
BUILD_TIMEOUT = 1800
# The client releases the tests build kafkamix with, the newest when it was written (as its
# committed go.mod has them); sarama's and franz-go's need Go 1.26, kafka-go's Go 1.23.
KAFKAGO_VERSION = "v0.4.51"
SARAMA_VERSION = "v1.61.1"
FRANZ_VERSION = "v1.22.3"
EVERY_CLIENT = dict(kafkago=KAFKAGO_VERSION, sarama=SARAMA_VERSION, franz=FRANZ_VERSION)

KAFKA_VERSION = os.environ.get("GOSPAN_KAFKA_VERSION", "4.4.0")
SCALA_VERSION = "2.13"
# log4j's slf4j 1.x binding and the log4j it binds to, at one release: the version
# kafka_2.13 4.4.0 itself depends on for log4j-api and log4j-core.
LOG4J_VERSION = "2.25.5"
DEPENDENCY_PLUGIN = "org.apache.maven.plugins:maven-dependency-plugin:3.8.1"
FETCH_TIMEOUT = 900
START_TIMEOUT = 90.0
STOP_TIMEOUT = 30.0
REQUEST_TIMEOUT = 5.0
TOPIC_TIMEOUT = 30.0
# A small heap, and the JIT's quick tier only: the broker starts in 6 s instead of 9 on two
# loaded cores (restarts in 4 instead of 7), and a test's few thousand messages need no more.
JAVA_OPTS = ["-Xmx512m", "-Xms256m", "-XX:TieredStopAtLevel=1", "-Djava.awt.headless=true"]
NODE_ID = 1

POM = """\
<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>gospan.test</groupId>
  <artifactId>kafka-broker</artifactId>
  <version>1</version>
  <packaging>pom</packaging>
  <description>Apache Kafka {version} and its run-time dependencies (gospan tests)</description>
  <dependencies>
    <dependency>
      <groupId>org.apache.kafka</groupId>
      <artifactId>kafka_{scala}</artifactId>
      <version>{version}</version>
    </dependency>
    <dependency>
      <groupId>org.apache.logging.log4j</groupId>
      <artifactId>log4j-slf4j-impl</artifactId>
      <version>{log4j}</version>
    </dependency>
    <dependency>
      <groupId>org.apache.logging.log4j</groupId>
      <artifactId>log4j-core</artifactId>
      <version>{log4j}</version>
    </dependency>
  </dependencies>
</project>
"""

LOG4J2 = """\
status = warn
appender.file.type = File
appender.file.name = file
appender.file.fileName = {log}
appender.file.layout.type = PatternLayout
appender.file.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = info
rootLogger.appenderRef.file.ref = file
"""

# One node, both roles; every internal topic one replica and one partition (the defaults, 50
# partitions for consumer offsets, make the first consumer group wait seconds for them).
SERVER_PROPERTIES = """\
process.roles=broker,controller
node.id={node}
controller.quorum.bootstrap.servers=127.0.0.1:{controller_port}
listeners=PLAINTEXT://127.0.0.1:{port},CONTROLLER://127.0.0.1:{controller_port}
advertised.listeners=PLAINTEXT://127.0.0.1:{port}
controller.listener.names=CONTROLLER
inter.broker.listener.name=PLAINTEXT
listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT
log.dirs={data}
num.partitions={partitions}
auto.create.topics.enable=false
offsets.topic.replication.factor=1
offsets.topic.num.partitions=1
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
transaction.state.log.num.partitions=1
share.coordinator.state.topic.replication.factor=1
share.coordinator.state.topic.min.isr=1
share.coordinator.state.topic.num.partitions=1
group.initial.rebalance.delay.ms=0
num.network.threads=2
num.io.threads=2
"""


class Unavailable(Exception):
    """The broker cannot be had here (no Java or Maven, nothing fetched): the tests skip."""


# ---- fetching the broker, cached --------------------------------------------------------------


def cached_libs(version=KAFKA_VERSION):
    """(the libs directory of VERSION in the cache, whether it is there); nothing is fetched."""
    libs = cache_dir("GOSPAN_KAFKA_CACHE") / f"kafka-{version}" / "libs"
    return libs, (libs / "fetched.json").exists()


def kafka_libs(version=KAFKA_VERSION):
    """The directory of VERSION's jars, fetched by Maven when missing; raises Unavailable."""
    libs, ready = cached_libs(version)
    if ready:
        return libs
    mvn = shutil.which("mvn")
    if mvn is None:
        raise Unavailable("Maven (mvn) is not installed; it fetches the Kafka broker from Maven "
                          "Central (Debian's maven package: make deps)")
    home = libs.parent
    home.mkdir(parents=True, exist_ok=True)
    with open(home / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if (libs / "fetched.json").exists():
            return libs
        tmp = home / ".libs.partial"
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.mkdir()
        pom = home / "pom.xml"
        pom.write_text(POM.format(version=version, scala=SCALA_VERSION, log4j=LOG4J_VERSION))
        t0 = time.monotonic()
        cmd = [mvn, "-B", "-q", "-f", str(pom), f"{DEPENDENCY_PLUGIN}:copy-dependencies",
               f"-DoutputDirectory={tmp}", "-DincludeScope=runtime"]
        try:
            res = subprocess.run(cmd, capture_output=True, text=True, timeout=FETCH_TIMEOUT,
                                 stdin=subprocess.DEVNULL)
        except subprocess.TimeoutExpired:
            shutil.rmtree(tmp, ignore_errors=True)
            raise Unavailable(f"fetching Kafka {version} with Maven did not finish within "
                              f"{FETCH_TIMEOUT} s") from None
        jars = sorted(p.name for p in tmp.glob("*.jar"))
        if res.returncode != 0 or f"kafka_{SCALA_VERSION}-{version}.jar" not in jars:
            shutil.rmtree(tmp, ignore_errors=True)
            raise Unavailable(f"cannot fetch Kafka {version} (org.apache.kafka:kafka_"
                              f"{SCALA_VERSION}) with Maven: {' '.join(cmd)}\n"
                              f"{(res.stdout + res.stderr)[-3000:]}")
        (tmp / "fetched.json").write_text(json.dumps({
            "kafka": version, "scala": SCALA_VERSION, "log4j": LOG4J_VERSION,
            "seconds": round(time.monotonic() - t0, 1), "jars": jars}, indent=1) + "\n")
        shutil.rmtree(libs, ignore_errors=True)
        os.replace(tmp, libs)
    return libs


def java_command():
    """The java to run the broker with: $GOSPAN_KAFKA_JAVA, else the one on PATH; raises
    Unavailable when there is none or it is older than 17 (Kafka 4's broker needs 17)."""
    java = os.environ.get("GOSPAN_KAFKA_JAVA") or shutil.which("java")
    if not java:
        raise Unavailable("Java is not installed; the Kafka broker needs Java 17 or later "
                          "(Debian's openjdk-17-jre-headless: make deps)")
    try:
        res = subprocess.run([java, "-version"], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired) as e:
        raise Unavailable(f"cannot run '{java} -version': {e}") from None
    m = re.search(r'version "(\d+)(?:\.(\d+))?', res.stderr + res.stdout)
    if not m:
        raise Unavailable(f"cannot tell which Java '{java}' is: {res.stderr.strip()}")
    major = int(m.group(1)) if m.group(1) != "1" else int(m.group(2) or 0)
    if major < 17:
        raise Unavailable(f"'{java}' is Java {major}; the Kafka broker needs 17 or later "
                          "(Debian's openjdk-17-jre-headless: make deps)")
    return java


# ---- kafkamix builds ---------------------------------------------------------------------------


class BuildError(RuntimeError):
    pass


def kafkamix_source_hash():
    """What kafkamix builds depend on in this tree: its Go files, go.mod and build.sh, and the
    script build.sh runs."""
    return matrix.source_hash(KAFKAMIX, REPO / "tests" / "e2e" / "mixbuild.sh")


def build_kafkamix(out=None, toolchain="local", kafkago=None, sarama=None, franz=None,
                   flags=()):
    """kafkamix with kafka-go, sarama and franz-go at the releases given (at least one),
    built by TOOLCHAIN (as build.sh takes it) with go build FLAGS. Built once into
    <cache>/kafkamix-<hash of kafkamix>/<go>-<clients>[-<flags hash>]/ (<cache> as for the
    broker, under $GOSPAN_KAFKAMIX_CACHE when set); the binary is then copied to OUT, whose
    path is returned (the cached binary's path when OUT is None). Raises BuildError with
    build.sh's output when the build fails."""
    try:
        label = matrix.go_version(toolchain) + ("-debian" if "/" in toolchain else "")
    except (OSError, RuntimeError, subprocess.TimeoutExpired) as e:
        raise BuildError(f"kafkamix: {e}") from None
    clients, args = [], []
    for name, version in (("kafkago", kafkago), ("sarama", sarama), ("franz", franz)):
        if version:
            clients.append(f"{name}-{version}")
            args += [f"--{name}", version]
    if not clients:
        raise BuildError("kafkamix: no client asked for")
    key = "-".join([label, *clients])
    if flags:
        key += "-" + hashlib.sha256("\0".join(flags).encode()).hexdigest()[:8]
    home = matrix.build_home("GOSPAN_KAFKAMIX_CACHE", "kafkamix", kafkamix_source_hash())

    def make(tmp):
        t0 = time.monotonic()
        cmd = [str(KAFKAMIX / "build.sh"), str(tmp / "kafkamix"), toolchain, *args, "--",
               *flags]
        res = subprocess.run(cmd, capture_output=True, text=True, timeout=BUILD_TIMEOUT,
                             env=matrix.go_env())
        if res.returncode != 0:
            raise BuildError(f"kafkamix ({', '.join(clients)}) with {toolchain} did not "
                             f"build: {' '.join(cmd)}\n{res.stderr[-6000:]}")
        return {"toolchain": label, "clients": clients, "flags": list(flags),
                "seconds": round(time.monotonic() - t0, 1)}

    dest, _, _ = matrix.cached_build(home, key, make)
    binary = dest / "kafkamix"
    if out is None:
        return binary
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    part = out.with_name(f".{out.name}.partial")
    shutil.copy2(binary, part)
    os.replace(part, out)
    return out


# ---- the Kafka protocol, what the harness needs of it -----------------------------------------

API_METADATA, API_VERSIONS, API_CREATE_TOPICS = 3, 18, 19
# The request versions spoken here: the newest of each without the flexible encoding.
METADATA_VERSION = 4
CREATE_TOPICS_VERSION = 4
# Errors named in messages; any other is shown by its number.
ERRORS = {0: "NONE", 3: "UNKNOWN_TOPIC_OR_PARTITION", 5: "LEADER_NOT_AVAILABLE",
          7: "REQUEST_TIMED_OUT", 35: "UNSUPPORTED_VERSION", 36: "TOPIC_ALREADY_EXISTS",
          37: "INVALID_PARTITIONS", 41: "NOT_CONTROLLER"}


class KafkaError(Exception):
    """The broker answered a request with an error code."""

    def __init__(self, code, what):
        super().__init__(f"{what}: error {code} ({ERRORS.get(code, 'see the Kafka protocol')})")
        self.code = code


def _string(s):
    if s is None:
        return struct.pack(">h", -1)
    b = s.encode()
    return struct.pack(">h", len(b)) + b


def _array(items):
    if items is None:
        return struct.pack(">i", -1)
    return struct.pack(">i", len(items)) + b"".join(items)


class _Reader:
    def __init__(self, data):
        self.data, self.pos = data, 0

    def take(self, fmt):
        v = struct.unpack_from(fmt, self.data, self.pos)
        self.pos += struct.calcsize(fmt)
        return v[0] if len(v) == 1 else v

    def string(self):
        n = self.take(">h")
        if n < 0:
            return None
        s = self.data[self.pos:self.pos + n].decode()
        self.pos += n
        return s

    def array(self, read):
        n = self.take(">i")
        return [] if n < 0 else [read() for _ in range(n)]


def _recv_exactly(sock, n):
    buf = bytearray()
    while len(buf) < n:
        chunk = sock.recv(n - len(buf))
        if not chunk:
            raise ConnectionError("the broker closed the connection")
        buf += chunk
    return bytes(buf)


def kafka_request(addr, api_key, version, body, timeout=REQUEST_TIMEOUT):
    """Sends one request (header v1: key, version, correlation id, client id) to ADDR
    ((host, port)) on a connection of its own; returns the response body after the
    correlation id. Raises OSError (ConnectionError) when the broker does not answer."""
    correlation = int.from_bytes(os.urandom(3), "big")
    msg = struct.pack(">hhi", api_key, version, correlation) + _string("gospan-e2e") + body
    with socket.create_connection(addr, timeout=timeout) as s:
        s.settimeout(timeout)
        s.sendall(struct.pack(">i", len(msg)) + msg)
        size = struct.unpack(">i", _recv_exactly(s, 4))[0]
        data = _recv_exactly(s, size)
    got = struct.unpack_from(">i", data)[0]
    if got != correlation:
        raise ConnectionError(f"answer to correlation id {got}, not {correlation}")
    return data[4:]


def api_versions(addr):
    """{api key: (lowest, highest) version} the broker at ADDR speaks (ApiVersions v0)."""
    r = _Reader(kafka_request(addr, API_VERSIONS, 0, b""))
    code = r.take(">h")
    if code:
        raise KafkaError(code, "ApiVersions")
    return {k: (lo, hi) for k, lo, hi in r.array(lambda: r.take(">hhh"))}


def metadata(addr, topics=None):
    """(brokers, topics) from a Metadata v4 request for TOPICS (None: every topic), never
    creating one: brokers [(node id, host, port)], topics {name: (error code, {partition:
    leader id})}."""
    body = _array(None if topics is None else [_string(t) for t in topics]) + b"\x00"
    r = _Reader(kafka_request(addr, API_METADATA, METADATA_VERSION, body))
    r.take(">i")  # throttle time

    def broker():
        node = r.take(">i")
        host = r.string()
        port = r.take(">i")
        r.string()  # rack
        return node, host, port

    def partition():
        r.take(">h")  # the partition's error
        index, leader = r.take(">ii")
        r.array(lambda: r.take(">i"))  # replicas
        r.array(lambda: r.take(">i"))  # in-sync replicas
        return index, leader

    def topic():
        code = r.take(">h")
        name = r.string()
        r.take(">?")  # internal
        return name, (code, dict(r.array(partition)))

    brokers = r.array(broker)
    r.string()  # cluster id
    r.take(">i")  # controller id
    return brokers, dict(r.array(topic))


def create_topics_request(addr, topics, timeout_ms=10000):
    """CreateTopics v4 for TOPICS ({name: partitions}), one replica each; returns {name: (error
    code, error message)}."""
    def one(name, partitions):
        return (_string(name) + struct.pack(">ih", partitions, 1) + _array([]) + _array([]))

    body = (_array([one(n, p) for n, p in topics.items()]) + struct.pack(">i", timeout_ms)
            + b"\x00")
    r = _Reader(kafka_request(addr, API_CREATE_TOPICS, CREATE_TOPICS_VERSION, body,
                              timeout=timeout_ms / 1000 + REQUEST_TIMEOUT))
    r.take(">i")  # throttle time

    def result():
        name = r.string()
        code = r.take(">h")
        return name, (code, r.string())

    return dict(r.array(result))


# ---- the broker -------------------------------------------------------------------------------


def _tail(path, n=60):
    try:
        return "\n".join(Path(path).read_text(errors="replace").splitlines()[-n:])
    except OSError as e:
        return f"(cannot read '{path}': {e})"


def _cluster_id():
    """A random cluster id as Kafka writes them: 16 bytes, URL-safe base64 without padding (one
    in 64 begins with "-": pass it as --cluster-id=ID, not as an argument of its own)."""
    return base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")


class KafkaBroker:
    """Kafka in KRaft mode in DIR: broker on PORT, controller on CONTROLLER_PORT (127.0.0.1),
    topics made with PARTITIONS partitions unless told otherwise. The storage is formatted on
    the first start; start() after stop() runs the same node on the same ports and data."""

    def __init__(self, libs, java, dir, port, controller_port, partitions=1):
        self.libs, self.java, self.dir = Path(libs), java, Path(dir)
        self.host, self.port, self.controller_port = "127.0.0.1", port, controller_port
        self.partitions = partitions
        self.data = self.dir / "data"
        self.log_path = self.dir / "broker.log"
        self.console_path = self.dir / "console.log"
        self.config = self.dir / "server.properties"
        self.start_seconds = None
        self.proc = None
        self._console = None
        self.dir.mkdir(parents=True, exist_ok=True)
        (self.dir / "log4j2.properties").write_text(LOG4J2.format(log=self.log_path))
        self.config.write_text(SERVER_PROPERTIES.format(
            node=NODE_ID, port=port, controller_port=controller_port, data=self.data,
            partitions=partitions))

    @property
    def bootstrap(self):
        return f"{self.host}:{self.port}"

    @property
    def addr(self):
        return (self.host, self.port)

    def _java(self, main, *args):
        return [self.java, *JAVA_OPTS,
                f"-Dlog4j2.configurationFile={self.dir / 'log4j2.properties'}",
                "-cp", str(self.libs / "*"), main, *args]

    def _format(self):
        """Formats the storage once: one voter, this node (--standalone)."""
        if (self.data / "meta.properties").exists():
            return
        with open(self.console_path, "ab") as out:
            res = subprocess.run(self._java("kafka.tools.StorageTool", "format",
                                            "--config", str(self.config),
                                            "--cluster-id=" + _cluster_id(), "--standalone"),
                                 stdin=subprocess.DEVNULL, stdout=out,
                                 stderr=subprocess.STDOUT, timeout=120)
        if res.returncode != 0:
            raise AssertionError(f"formatting Kafka's storage in '{self.data}' failed (status "
                                 f"{res.returncode}); {self.console_path}:\n"
                                 f"{_tail(self.console_path)}\n{self.log_path}:\n"
                                 f"{_tail(self.log_path)}")

    def start(self, timeout=START_TIMEOUT):
        """Starts the broker (formatting its storage the first time) and waits until it answers
        Metadata naming itself; raises AssertionError with the log's tail when it does not
        within TIMEOUT seconds."""
        assert not self.alive(), f"the Kafka broker on {self.bootstrap} is already running"
        t0 = time.monotonic()
        self._format()
        self._console = open(self.console_path, "ab")
        self.proc = subprocess.Popen(self._java("kafka.Kafka", str(self.config)),
                                     stdin=subprocess.DEVNULL, stdout=self._console,
                                     stderr=subprocess.STDOUT, start_new_session=True)
        deadline = t0 + timeout
        while True:
            why = self._ready()
            if why is None:
                break
            if self.proc.poll() is not None:
                self._close_console()
                raise AssertionError(f"the Kafka broker exited with status "
                                     f"{self.proc.returncode} at start; {self.log_path}:\n"
                                     f"{_tail(self.log_path)}\n{self.console_path}:\n"
                                     f"{_tail(self.console_path, 20)}")
            if time.monotonic() > deadline:
                self.stop()
                raise AssertionError(f"the Kafka broker did not answer on {self.bootstrap} "
                                     f"within {timeout:.0f} s ({why}); {self.log_path}:\n"
                                     f"{_tail(self.log_path)}")
            time.sleep(0.2)
        self.start_seconds = time.monotonic() - t0
        return self

    def _ready(self):
        """None once the broker speaks the versions used here and lists itself in Metadata (it
        is then registered and unfenced), else why not."""
        try:
            versions = api_versions(self.addr)
            for key, want, name in ((API_METADATA, METADATA_VERSION, "Metadata"),
                                    (API_CREATE_TOPICS, CREATE_TOPICS_VERSION, "CreateTopics")):
                lo, hi = versions.get(key, (1, 0))
                if not lo <= want <= hi:
                    raise AssertionError(f"the Kafka broker on {self.bootstrap} does not speak "
                                         f"{name} v{want} (it takes v{lo} to v{hi})")
            brokers, _ = metadata(self.addr, [])
        except (OSError, KafkaError, struct.error) as e:
            return f"{type(e).__name__}: {e}"
        if (NODE_ID, self.host, self.port) not in brokers:
            return f"Metadata lists brokers {brokers}"
        return None

    def alive(self):
        return self.proc is not None and self.proc.poll() is None

    def stop(self):
        """Stops the broker (SIGTERM: a controlled shutdown), killing it after STOP_TIMEOUT;
        the data stays for the next start(). Returns the exit status."""
        if self.proc is None:
            return None
        end_process(self.proc, timeout=STOP_TIMEOUT)
        self._close_console()
        return self.proc.returncode

    def _close_console(self):
        if self._console is not None:
            self._console.close()
            self._console = None

    def metadata(self, topics=None):
        return metadata(self.addr, topics)

    def create_topics(self, *names, partitions=None, timeout=TOPIC_TIMEOUT):
        """Creates topics NAMES (PARTITIONS each, the broker's num.partitions unless given; a
        name "T:P" gives T P partitions) and waits until each partition has a leader. A topic
        already there is an error. Returns {name: partitions}."""
        want = {}
        for n in names:
            name, _, p = n.partition(":")
            want[name] = int(p) if p else (partitions or self.partitions)
        got = create_topics_request(self.addr, want)
        bad = {n: r for n, r in got.items() if r[0] != 0}
        if bad or set(got) != set(want):
            raise AssertionError(f"CreateTopics {want} on {self.bootstrap}: {got}")
        deadline = time.monotonic() + timeout
        while True:
            _, topics = self.metadata(list(want))
            pending = [n for n, p in want.items()
                       if topics.get(n, (-1, {}))[0] != 0 or len(topics[n][1]) != p
                       or any(leader < 0 for leader in topics[n][1].values())]
            if not pending:
                return want
            if time.monotonic() > deadline:
                raise AssertionError(f"topics {pending} have no leader for every partition "
                                     f"{timeout:.0f} s after CreateTopics: {topics}")
            time.sleep(0.05)

    def log_tail(self, n=60):
        return _tail(self.log_path, n)


def broker_or_unavailable(dir, port, controller_port, partitions=1):
    """A started KafkaBroker, the broker fetched first when missing; raises Unavailable."""
    java = java_command()
    return KafkaBroker(kafka_libs(), java, dir, port, controller_port, partitions).start()


@pytest.fixture(scope="session")
def kafka_broker(free_port, tmp_path_factory):
    """The session's Kafka broker (one partition per topic unless a test asks for more); its
    directory (log, data) is under the session's pytest temporary directory, the data removed
    after the session."""
    try:
        java = java_command()
        libs = kafka_libs()
    except Unavailable as e:
        pytest.skip(str(e))
    broker = KafkaBroker(libs, java, tmp_path_factory.mktemp("kafka"), free_port(),
                         free_port())
    try:
        broker.start()
        yield broker
    finally:
        broker.stop()
        shutil.rmtree(broker.data, ignore_errors=True)


# ---- the command line -------------------------------------------------------------------------




def _cmd_path(args):
    libs, ready = cached_libs()
    print(libs)
    return 0 if ready else 1


def _cmd_fetch(args):
    try:
        print(kafka_libs())
    except Unavailable as e:
        print(f"kafka.py: {e}", file=sys.stderr)
        return 1
    return 0


def _cmd_serve(args):
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, raise_stop)
    broker = None
    with tempfile.TemporaryDirectory(prefix="gospan-kafka.") as tmp:
        try:
            broker = broker_or_unavailable(args.workdir or tmp, *free_ports(2),
                                           partitions=args.partitions)
            if args.topic:
                broker.create_topics(*args.topic)
            print(f"ready bootstrap={broker.bootstrap} log={broker.log_path}", flush=True)
            while broker.alive():
                time.sleep(0.2)
            print(f"kafka.py: the broker exited with status {broker.proc.returncode}",
                  file=sys.stderr)
            return 1
        except Stop:
            return 0
        except (Unavailable, AssertionError, OSError) as e:
            print(f"kafka.py: {e}", file=sys.stderr)
            return 1
        finally:
            if broker is not None:
                broker.stop()


def main(argv=None):
    p = argparse.ArgumentParser(prog="kafka.py", description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    sub.add_parser("path", help="print where the broker is; status 1 when it is not fetched")
    sub.add_parser("fetch", help="fetch the broker when missing, print where it is")
    s = sub.add_parser("serve", help="run a broker on free loopback ports until SIGTERM")
    s.add_argument("--topic", action="append", default=[], help="NAME[:PARTITIONS] to create")
    s.add_argument("--partitions", type=int, default=1, help="num.partitions (default 1)")
    s.add_argument("--workdir", help="the broker's directory (default: a temporary one)")
    args = p.parse_args(argv)
    return {"path": _cmd_path, "fetch": _cmd_fetch, "serve": _cmd_serve}[args.cmd](args)


if __name__ == "__main__":
    sys.exit(main())
