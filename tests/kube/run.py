#!/usr/bin/env python3
"""gospan's DaemonSet on a real single-node Kubernetes cluster, with the example Collector's
k8s_attributes processor: what `make kube-test` runs. Optional, not part of `make test` or CI:
building Kubernetes takes about 17 minutes the first time. Needs root, Go, a Docker engine (to
build the images), and Debian's containerd, runc and containernetworking-plugins.

    python3 tests/kube/run.py          build (or reuse) the binaries, bring the cluster up, test,
                                       tear everything down (also on failure and Ctrl-C)
    python3 tests/kube/run.py build    only build the binaries into the cache

What it does:

1. binaries: kube-apiserver, kube-controller-manager, kube-scheduler, kubelet and kubectl of
   Kubernetes KUBE_VERSION, built from the Go module proxy through the wrapper module in k8s/
   (k8s.io/kubernetes's staging modules replaced by their published releases), and etcd
   ETCD_VERSION (etcd/), kept in <cache>/kube-<version>/, where <cache> is $GOSPAN_KUBE_CACHE,
   else $XDG_CACHE_HOME/gospan, else ~/.cache/gospan; build.log there says how long it took;
2. the cluster, in a temporary work directory ($GOSPAN_KUBE_WORKDIR names another parent): a
   CA and a certificate per component (openssl), etcd, the API server (Node and RBAC
   authorization), the controller manager (a service account per controller), the scheduler,
   a containerd of its own (CRI plugin, runc, the bridge CNI plugin), and the kubelet (cgroupfs
   driver) registering this machine as node NODE_NAME at its address;
3. images: gospan's from the repository's Dockerfile, the example frontend's
   (examples/frontend/Dockerfile) and the sandbox's pause image (pause/), built with Docker (base
   images made locally when missing: tests/e2e/compose.py) and imported into that containerd;
4. the Collector tests/e2e/collector.py builds, run on the node with the configuration of
   examples/kubernetes/otel-collector.yaml's ConfigMap, its processor reaching the API server
   through a kubeconfig (`auth_type: kubeConfig`) holding a token of the manifest's own
   ServiceAccount (so the manifest's ClusterRole is what the API server enforces), its
   exporters replaced by a file exporter;
5. a frontend Deployment, then examples/kubernetes/gospan-daemonset.yaml as shipped, but for
   its image and its OTEL_EXPORTER_OTLP_ENDPOINT (the Collector on the node), once no process
   outside the pod runs the DaemonSet's target path (gospan traces the file of the first process
   it finds at that path: another test's container with its own /app/frontend would be it);
   it waits up to $GOSPAN_KUBE_WAIT_OTHERS seconds (900) for them to end;
6. requests to the frontend pod; its spans must reach the Collector's output with
   k8s.pod.uid and container.id (gospan's) and k8s.pod.name, k8s.namespace.name,
   k8s.deployment.name, k8s.container.name and k8s.node.name (the processor's) all the pod's;
7. teardown: the workloads deleted, every process stopped, containerd's containers and images,
   mounts, network namespaces, the bridge, the kubelet's cgroups and iptables chains removed,
   the sysctls the kubelet sets put back, the Docker images built here removed, and the work
   directory deleted ($GOSPAN_KUBE_KEEP=1 keeps the work directory, logs included).

Every failure says which step failed and why, with the end of the log concerned.
"""

import argparse
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
sys.path.insert(0, str(REPO / "tests" / "e2e"))

from collector import collector_binary, spans_of_json  # noqa: E402
# A step failed (the message says which and why): the compose demo's error, so that making a
# base image (need) fails the test as any other step does.
from compose import Engine, Unavailable as Failed, need, run as compose_run  # noqa: E402
from matrix import cache_dir  # noqa: E402

KUBE_VERSION = "v1.34.4"
ETCD_VERSION = "v3.6.16"
KUBE_COMMANDS = ("kube-apiserver", "kube-controller-manager", "kube-scheduler", "kubelet",
                 "kubectl")
NODE_NAME = "gospan-kube-test"
IMAGE_PREFIX = "gospan-kube-test"
GOSPAN_IMAGE = f"{IMAGE_PREFIX}/gospan:0.1.0"
FRONTEND_IMAGE = f"{IMAGE_PREFIX}/frontend:0.1.0"
PAUSE_IMAGE = f"{IMAGE_PREFIX}/pause:1"
POD_CIDR = "10.244.0.0/24"
SERVICE_CIDR = "10.96.0.0/16"
BRIDGE = "gospankube0"
DAEMONSET = REPO / "examples" / "kubernetes" / "gospan-daemonset.yaml"
COLLECTOR_MANIFEST = REPO / "examples" / "kubernetes" / "otel-collector.yaml"
# The sysctls the kubelet sets when it starts (protectKernelDefaults is off): put back after it.
KUBELET_SYSCTLS = ("vm.overcommit_memory", "vm.panic_on_oom", "kernel.panic",
                   "kernel.panic_on_oops", "kernel.keys.root_maxkeys",
                   "kernel.keys.root_maxbytes")
# Paths outside the work directory that the kubelet and containerd's CRI plugin make at fixed
# places; removed at the end when they were not there before.
FIXED_PATHS = ("/var/lib/kubelet", "/var/lib/cni", "/var/run/netns", "/var/log/containers",
               "/var/log/pods")


class Interrupted(BaseException):
    """SIGTERM or SIGHUP: stop, and tear down like Ctrl-C does."""


def say(msg):
    print(f"kube-test: {msg}", flush=True)


def tail(path, n=3000):
    try:
        return Path(path).read_text(errors="replace")[-n:]
    except OSError:
        return "(no log)"


def run(argv, what, timeout=600, check=True, **kw):
    """ARGV's completed process (output captured); raises Failed naming WHAT when it fails."""
    return compose_run(argv, what, timeout=timeout, check=check, **kw)


def wait_until(what, cond, timeout, log=None, interval=1.0):
    deadline = time.monotonic() + timeout
    while True:
        try:
            if cond():
                return
        except Failed:
            pass
        if time.monotonic() > deadline:
            raise Failed(f"{what}: not so within {timeout:.0f} s" +
                         (f"; the end of {log}:\n{tail(log)}" if log else ""))
        time.sleep(interval)


# ---- 1. the binaries ---------------------------------------------------------------------------

def kube_home():
    return cache_dir("GOSPAN_KUBE_CACHE") / f"kube-{KUBE_VERSION}"


def go_build(module_dir, out, packages, ldflags, what):
    env = {**os.environ, "CGO_ENABLED": "0", "GOFLAGS": "-mod=readonly -buildvcs=false",
           "GOTOOLCHAIN": os.environ.get("GOTOOLCHAIN", "auto")}
    t0 = time.monotonic()
    # providerless: without the cloud providers, as the release's own builds.
    run(["nice", "-n", "19", "go", "build", "-trimpath", "-tags", "providerless", "-ldflags",
         ldflags, "-o", out, *packages], f"cannot build {what} (through the Go module proxy)",
        timeout=3600, cwd=module_dir, env=env)
    return time.monotonic() - t0


def build_binaries(home):
    """The Kubernetes and etcd binaries in HOME, built where missing."""
    missing = [c for c in (*KUBE_COMMANDS, "etcd") if not os.access(home / c, os.X_OK)]
    if not missing:
        return home
    home.mkdir(parents=True, exist_ok=True)
    log = []
    if any(c in missing for c in KUBE_COMMANDS):
        say(f"building Kubernetes {KUBE_VERSION} ({', '.join(KUBE_COMMANDS)}) from the Go "
            f"module proxy: about 17 minutes the first time")
        v = "k8s.io/component-base/version"
        major, minor = KUBE_VERSION[1:].split(".")[:2]
        ld = (f"-s -w -X {v}.gitVersion={KUBE_VERSION} -X {v}.gitMajor={major} "
              f"-X {v}.gitMinor={minor} -X {v}.gitTreeState=clean "
              f"-X {v}.gitCommit=0000000000000000000000000000000000000000 "
              f"-X {v}.buildDate=1970-01-01T00:00:00Z")
        tmp = home / "partial"
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.mkdir()
        secs = go_build(HERE / "k8s", f"{tmp}/",
                        [f"k8s.io/kubernetes/cmd/{c}" for c in KUBE_COMMANDS], ld,
                        f"Kubernetes {KUBE_VERSION}")
        for c in KUBE_COMMANDS:
            os.replace(tmp / c, home / c)
        tmp.rmdir()
        log.append(f"built Kubernetes {KUBE_VERSION} ({' '.join(KUBE_COMMANDS)}) in {secs:.0f} s")
    if "etcd" in missing:
        say(f"building etcd {ETCD_VERSION} from the Go module proxy")
        secs = go_build(HERE / "etcd", home / "etcd.partial", ["go.etcd.io/etcd/server/v3"],
                        "-s -w", f"etcd {ETCD_VERSION}")
        os.replace(home / "etcd.partial", home / "etcd")
        log.append(f"built etcd {ETCD_VERSION} in {secs:.0f} s")
    with open(home / "build.log", "a") as f:
        f.write("".join(line + "\n" for line in log))
    for line in log:
        say(line)
    return home


def version_of(binary):
    return run([binary, "--version"], f"{binary} --version").stdout.strip()


# ---- 2. the cluster ----------------------------------------------------------------------------

def node_ip():
    """This machine's address on its default route: the node's InternalIP."""
    if os.environ.get("GOSPAN_KUBE_NODE_IP"):
        return os.environ["GOSPAN_KUBE_NODE_IP"]
    out = run(["ip", "-4", "route", "get", "192.0.2.254"], "no IPv4 route").stdout
    m = re.search(r"\bsrc (\S+)", out)
    if not m:
        raise Failed(f"cannot tell this machine's address from 'ip route get': {out}")
    return m.group(1)


def free_port(ip):
    with socket.socket() as s:
        s.bind((ip, 0))
        return s.getsockname()[1]


def gen_certs(pki, ip):
    """A CA, the service-account key pair and a certificate per component."""
    pki.mkdir(parents=True)

    def ssl(*args):
        run(["openssl", *args], f"openssl {args[0]}", cwd=pki)

    ssl("genrsa", "-out", "ca.key", "2048")
    ssl("req", "-x509", "-new", "-key", "ca.key", "-subj", "/CN=gospan-kube-test-ca",
        "-days", "2", "-out", "ca.crt")
    ssl("genrsa", "-out", "sa.key", "2048")
    ssl("rsa", "-in", "sa.key", "-pubout", "-out", "sa.pub")
    client = "keyUsage=digitalSignature,keyEncipherment\nextendedKeyUsage=clientAuth\n"
    server = "keyUsage=digitalSignature,keyEncipherment\nextendedKeyUsage=serverAuth\n"
    certs = {
        "apiserver": ("/CN=kube-apiserver", server + "subjectAltName=DNS:localhost,"
                      "DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,"
                      f"DNS:kubernetes.default.svc.cluster.local,IP:127.0.0.1,IP:10.96.0.1,"
                      f"IP:{ip}\n"),
        "kubelet-server": (f"/CN={NODE_NAME}", server +
                           f"subjectAltName=DNS:{NODE_NAME},IP:127.0.0.1,IP:{ip}\n"),
        "admin": ("/O=system:masters/CN=gospan-kube-test-admin", client),
        "apiserver-kubelet-client": ("/O=system:masters/CN=kube-apiserver-kubelet-client",
                                     client),
        "controller-manager": ("/CN=system:kube-controller-manager", client),
        "scheduler": ("/CN=system:kube-scheduler", client),
        "kubelet": (f"/O=system:nodes/CN=system:node:{NODE_NAME}", client),
    }
    for name, (subject, ext) in certs.items():
        (pki / f"{name}.ext").write_text("basicConstraints=CA:FALSE\n" + ext)
        ssl("genrsa", "-out", f"{name}.key", "2048")
        ssl("req", "-new", "-key", f"{name}.key", "-subj", subject, "-out", f"{name}.csr")
        ssl("x509", "-req", "-in", f"{name}.csr", "-CA", "ca.crt", "-CAkey", "ca.key",
            "-CAcreateserial", "-days", "2", "-extfile", f"{name}.ext", "-out", f"{name}.crt")


def kubeconfig(path, ca, user):
    """A kubeconfig for the API server on loopback; USER: client-certificate/key or token."""
    path.write_text(yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config",
        "clusters": [{"name": "kube-test", "cluster": {"certificate-authority": str(ca),
                                                       "server": "https://127.0.0.1:6443"}}],
        "users": [{"name": "user", "user": user}],
        "contexts": [{"name": "kube-test", "context": {"cluster": "kube-test", "user": "user"}}],
        "current-context": "kube-test"}))
    return path


CONTAINERD_CONFIG = """\
# A containerd of its own for the test (not Docker's): everything under the work directory.
version = 2
root = "{w}/containerd/root"
state = "{w}/containerd/state"
oom_score = 0

[grpc]
  address = "{w}/run/containerd.sock"

[ttrpc]
  address = "{w}/run/containerd-ttrpc.sock"

[metrics]
  address = ""

[plugins]
  [plugins."io.containerd.internal.v1.opt"]
    path = "{w}/containerd/opt"
  [plugins."io.containerd.grpc.v1.cri"]
    sandbox_image = "docker.io/{pause}"
    stream_server_address = "127.0.0.1"
    stream_server_port = "0"
    disable_apparmor = true
    netns_mounts_under_state_dir = true
    # Where root lacks CAP_SYS_RESOURCE, runc cannot lower oom_score_adj below 0 (the kubelet
    # asks -998 for sandboxes): clamp it at containerd's own.
    restrict_oom_score_adj = true
    enable_selinux = false
    [plugins."io.containerd.grpc.v1.cri".containerd]
      snapshotter = "overlayfs"
      default_runtime_name = "runc"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
        runtime_type = "io.containerd.runc.v2"
        [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
          SystemdCgroup = false
          Root = "{w}/run/runc"
    [plugins."io.containerd.grpc.v1.cri".cni]
      bin_dir = "{cni_bin}"
      conf_dir = "{w}/cni/net.d"
      max_conf_num = 1
"""


def cni_config(w):
    return {
        "cniVersion": "1.0.0", "name": "gospan-kube-test",
        "plugins": [{
            "type": "bridge", "bridge": BRIDGE, "isGateway": True, "ipMasq": False,
            "ipam": {"type": "host-local", "ranges": [[{"subnet": POD_CIDR}]],
                     "dataDir": f"{w}/cni/ipam",
                     # The pods reach the node's address (the Collector) through the gateway.
                     "routes": [{"dst": "0.0.0.0/0"}]}}]}


def kubelet_config(w, ip):
    return {
        "apiVersion": "kubelet.config.k8s.io/v1beta1", "kind": "KubeletConfiguration",
        "address": ip, "port": 10250, "healthzBindAddress": "127.0.0.1", "readOnlyPort": 0,
        "containerRuntimeEndpoint": f"unix://{w}/run/containerd.sock",
        # cgroupfs: this machine has no systemd as init. cgroup v1 hierarchies are accepted.
        "cgroupDriver": "cgroupfs", "failCgroupV1": False, "failSwapOn": False,
        "tlsCertFile": f"{w}/pki/kubelet-server.crt",
        "tlsPrivateKeyFile": f"{w}/pki/kubelet-server.key",
        "authentication": {"anonymous": {"enabled": False}, "webhook": {"enabled": False},
                           "x509": {"clientCAFile": f"{w}/pki/ca.crt"}},
        "authorization": {"mode": "AlwaysAllow"},
        "podLogsDir": f"{w}/kubelet/pod-logs", "resolvConf": "/etc/resolv.conf",
        # Keep eviction and image garbage collection from firing on a well-filled disk.
        "evictionHard": {"memory.available": "200Mi", "nodefs.available": "1%",
                         "imagefs.available": "1%", "nodefs.inodesFree": "1%"},
        "imageGCHighThresholdPercent": 99, "imageGCLowThresholdPercent": 98,
        "registerNode": True, "maxPods": 20}


def cni_bin_dir():
    for d in ("/usr/lib/cni", "/opt/cni/bin"):
        if os.access(f"{d}/bridge", os.X_OK) and os.access(f"{d}/host-local", os.X_OK):
            return d
    raise Failed("no CNI plugins (bridge, host-local) in /usr/lib/cni or /opt/cni/bin: "
                 "install Debian's containernetworking-plugins")


class Cluster:
    """The single-node cluster in work directory W, and everything teardown() undoes."""

    def __init__(self, w, bins, ip):
        self.w, self.bins, self.ip = w, bins, ip
        self.procs = {}  # name -> Popen, in start order
        self.logs = w / "logs"
        self.run_dir = w / "run"
        self.admin = w / "admin.kubeconfig"
        self.sysctls = {}
        self.iptables_before = {}
        self.fixed_before = {p: os.path.lexists(p) for p in FIXED_PATHS}
        self.docker_images_before = None
        self.docker_tags = []
        self.built_ids = []  # every image id this run's builds printed (" ---> <id>")
        self.made_standins = []

    # -- processes --

    def start(self, name, argv, env=None):
        log = open(self.logs / f"{name}.log", "ab")
        p = subprocess.Popen([str(a) for a in argv], stdout=log, stderr=subprocess.STDOUT,
                             stdin=subprocess.DEVNULL, start_new_session=True, env=env)
        log.close()
        self.procs[name] = p
        say(f"started {name} (pid {p.pid}, log {self.logs / name}.log)")
        return p

    def alive(self, name):
        p = self.procs.get(name)
        if p is None or p.poll() is not None:
            raise Failed(f"{name} exited with status {p.returncode if p else '?'}; the end of "
                         f"its log:\n{tail(self.logs / f'{name}.log')}")
        return True

    def stop(self, name, timeout=30):
        p = self.procs.pop(name, None)
        if p is None or p.poll() is not None:
            return
        p.terminate()
        try:
            p.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()
        say(f"stopped {name}")

    def kubectl(self, *args, what=None, timeout=300, check=True, kubeconfig=None):
        return run([self.bins / "kubectl", f"--kubeconfig={kubeconfig or self.admin}", *args],
                   what or f"kubectl {' '.join(args)}", timeout=timeout, check=check)

    def ctr(self, *args, check=True, timeout=300):
        return run(["ctr", "--address", self.run_dir / "containerd.sock", "-n", "k8s.io", *args],
                   f"ctr {' '.join(map(str, args))}", timeout=timeout, check=check)

    # -- bringing it up --

    def save_host_state(self):
        for k in KUBELET_SYSCTLS:
            self.sysctls[k] = run(["sysctl", "-n", k], f"sysctl {k}").stdout.strip()
        for ipt in ("iptables", "ip6tables"):
            if shutil.which(ipt):
                self.iptables_before[ipt] = run([f"{ipt}-save"], f"{ipt}-save").stdout
        self.docker_images_before = set(run(["docker", "images", "-aq", "--no-trunc"],
                                            "docker images").stdout.split())

    def up(self):
        w, b, ip = self.w, self.bins, self.ip
        for d in ("logs", "run", "run/runc", "cni/net.d", "containerd/root", "containerd/state",
                  "kubelet"):
            (w / d).mkdir(parents=True, exist_ok=True)
        gen_certs(w / "pki", ip)
        pki = w / "pki"
        for n in ("admin", "controller-manager", "scheduler", "kubelet"):
            kubeconfig(w / f"{n}.kubeconfig", pki / "ca.crt",
                       {"client-certificate": str(pki / f"{n}.crt"),
                        "client-key": str(pki / f"{n}.key")})

        t0 = time.monotonic()
        self.start("etcd", [b / "etcd", "--name", "kube-test", "--data-dir", w / "etcd",
                            "--unsafe-no-fsync", "--listen-client-urls", "http://127.0.0.1:2379",
                            "--advertise-client-urls", "http://127.0.0.1:2379",
                            "--listen-peer-urls", "http://127.0.0.1:2380",
                            "--initial-advertise-peer-urls", "http://127.0.0.1:2380",
                            "--initial-cluster", "kube-test=http://127.0.0.1:2380",
                            "--listen-metrics-urls", ""])
        wait_until("etcd answers on 127.0.0.1:2379",
                   lambda: self.alive("etcd") and run(["curl", "-sf",
                                                       "http://127.0.0.1:2379/health"],
                                                      "etcd health").returncode == 0,
                   60, self.logs / "etcd.log")

        self.start("kube-apiserver", [
            b / "kube-apiserver", "--etcd-servers=http://127.0.0.1:2379",
            "--bind-address=127.0.0.1", f"--advertise-address={ip}", "--secure-port=6443",
            f"--tls-cert-file={pki}/apiserver.crt", f"--tls-private-key-file={pki}/apiserver.key",
            f"--client-ca-file={pki}/ca.crt",
            f"--kubelet-client-certificate={pki}/apiserver-kubelet-client.crt",
            f"--kubelet-client-key={pki}/apiserver-kubelet-client.key",
            f"--kubelet-certificate-authority={pki}/ca.crt",
            "--kubelet-preferred-address-types=InternalIP",
            f"--service-account-key-file={pki}/sa.pub",
            f"--service-account-signing-key-file={pki}/sa.key",
            "--service-account-issuer=https://kubernetes.default.svc.cluster.local",
            f"--service-cluster-ip-range={SERVICE_CIDR}",
            "--authorization-mode=Node,RBAC", "--allow-privileged=true", "--profiling=false"])
        wait_until("the API server is ready (/readyz)",
                   lambda: self.alive("kube-apiserver") and
                   self.kubectl("get", "--raw", "/readyz", check=False,
                                timeout=10).returncode == 0,
                   120, self.logs / "kube-apiserver.log")

        cm = w / "controller-manager.kubeconfig"
        self.start("kube-controller-manager", [
            b / "kube-controller-manager", f"--kubeconfig={cm}",
            f"--authentication-kubeconfig={cm}", f"--authorization-kubeconfig={cm}",
            "--bind-address=127.0.0.1", "--leader-elect=false",
            f"--service-account-private-key-file={pki}/sa.key", f"--root-ca-file={pki}/ca.crt",
            "--use-service-account-credentials=true", "--profiling=false"])
        sc = w / "scheduler.kubeconfig"
        self.start("kube-scheduler", [
            b / "kube-scheduler", f"--kubeconfig={sc}", f"--authentication-kubeconfig={sc}",
            f"--authorization-kubeconfig={sc}", "--bind-address=127.0.0.1",
            "--leader-elect=false", "--profiling=false"])

        (w / "containerd.toml").write_text(CONTAINERD_CONFIG.format(
            w=w, pause=PAUSE_IMAGE, cni_bin=cni_bin_dir()))
        (w / "cni" / "net.d" / "10-gospan-kube-test.conflist").write_text(
            json.dumps(cni_config(w), indent=2))
        self.start("containerd", ["containerd", "--config", w / "containerd.toml"])
        wait_until("containerd answers on its socket",
                   lambda: self.alive("containerd") and
                   self.ctr("version", check=False, timeout=10).returncode == 0,
                   60, self.logs / "containerd.log")
        say(f"control plane and containerd up in {time.monotonic() - t0:.0f} s")

    def import_images(self, tars):
        for tar in tars:
            self.ctr("images", "import", tar, timeout=600)
        have = self.ctr("images", "ls", "-q").stdout.split()
        for name in (PAUSE_IMAGE, GOSPAN_IMAGE, FRONTEND_IMAGE):
            if f"docker.io/{name}" not in have:
                raise Failed(f"containerd has no image docker.io/{name} after the import: {have}")

    def start_kubelet(self):
        w = self.w
        (w / "kubelet.yaml").write_text(yaml.safe_dump(kubelet_config(w, self.ip)))
        t0 = time.monotonic()
        self.start("kubelet", [self.bins / "kubelet", f"--config={w}/kubelet.yaml",
                               f"--kubeconfig={w}/kubelet.kubeconfig", f"--root-dir={w}/kubelet",
                               f"--hostname-override={NODE_NAME}", f"--node-ip={self.ip}",
                               "--v=2"])

        def ready():
            self.alive("kubelet")
            out = self.kubectl("get", "node", NODE_NAME, "-o",
                               "jsonpath={.status.conditions[?(@.type==\"Ready\")].status}",
                               check=False, timeout=10).stdout
            return out.strip() == "True"

        wait_until(f"node {NODE_NAME} is Ready", ready, 120, self.logs / "kubelet.log")
        self.restore_sysctls()
        say(f"node {NODE_NAME} Ready ({time.monotonic() - t0:.0f} s after the kubelet started)")

    # -- teardown --

    def restore_sysctls(self):
        for k, v in self.sysctls.items():
            run(["sysctl", "-q", "-w", f"{k}={v}"], f"sysctl {k}", check=False)

    def teardown(self):
        """Undoes everything, whatever state the run got to; reports what it could not."""
        problems = []

        def step(what, fn):
            try:
                fn()
            except (Failed, OSError, subprocess.SubprocessError) as e:
                problems.append(f"{what}: {e}")

        if "kube-apiserver" in self.procs and self.procs["kube-apiserver"].poll() is None:
            def delete_workloads():
                for ns in ("default", "gospan", "observability"):
                    self.kubectl("delete", "deployments,daemonsets", "--all", "-n", ns,
                                 "--wait=true", "--timeout=90s", check=False, timeout=120)
                if "kubelet" in self.procs:
                    wait_until("every pod is gone", lambda: not self.kubectl(
                        "get", "pods", "-A", "-o", "name", check=False, timeout=10).stdout.strip(),
                        120)
                say("deleted the workloads; every pod is gone")
            step("deleting the workloads", delete_workloads)
        step("stopping the Collector", lambda: self.stop("otelcol"))
        step("stopping the kubelet", lambda: self.stop("kubelet"))
        if "containerd" in self.procs and self.procs["containerd"].poll() is None:
            def ctr_cleanup():
                for t in self.ctr("tasks", "ls", "-q", check=False).stdout.split():
                    self.ctr("tasks", "kill", "-s", "KILL", t, check=False)
                    time.sleep(1)
                    self.ctr("tasks", "delete", t, check=False)
                for c in self.ctr("containers", "ls", "-q", check=False).stdout.split():
                    self.ctr("containers", "delete", c, check=False)
                for i in self.ctr("images", "ls", "-q", check=False).stdout.split():
                    self.ctr("images", "rm", i, check=False)
            step("removing containerd's containers and images", ctr_cleanup)
        for name in reversed(list(self.procs)):
            step(f"stopping {name}", lambda n=name: self.stop(n))
        step("stopping leftover shims", self.kill_shims)
        step("unmounting", self.unmount)
        step("removing network namespaces", self.remove_netns)
        run(["ip", "link", "del", BRIDGE], "ip link del", check=False)
        step("removing the kubelet's cgroups", self.remove_cgroups)
        step("putting the sysctls back", self.restore_sysctls)
        step("removing the kubelet's iptables chains", self.remove_iptables)
        for p, existed in self.fixed_before.items():
            if not existed and os.path.lexists(p):
                step(f"removing {p}", lambda p=p: shutil.rmtree(p) if os.path.isdir(p)
                     and not os.path.islink(p) else os.unlink(p))
        step("removing the Docker images built here", self.remove_docker_images)
        return problems

    def kill_shims(self):
        for pid in os.listdir("/proc"):
            if not pid.isdigit():
                continue
            try:
                cmd = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
            except OSError:
                continue
            if cmd and cmd[0].endswith(b"containerd-shim-runc-v2") and \
                    str(self.run_dir).encode() in b" ".join(cmd):
                os.kill(int(pid), signal.SIGKILL)
                say(f"killed leftover shim {pid}")

    def unmount(self):
        mounts = []
        for line in Path("/proc/self/mountinfo").read_text().splitlines():
            mp = line.split()[4].replace("\\040", " ")
            if mp.startswith(f"{self.w}/"):
                mounts.append(mp)
        for mp in sorted(set(mounts), reverse=True):
            run(["umount", "-l", mp], f"umount {mp}", check=False)

    def remove_netns(self):
        d = Path("/var/run/netns")
        if not self.fixed_before["/var/run/netns"] and d.is_dir():
            for n in d.glob("cni-*"):
                run(["umount", n], "umount netns", check=False)
                n.unlink()

    def remove_cgroups(self):
        left = []
        for h in Path("/sys/fs/cgroup").iterdir():
            top = h / "kubepods"
            if not top.is_dir():
                continue
            for d, _, _ in sorted(os.walk(top), key=lambda t: -t[0].count("/")):
                try:
                    os.rmdir(d)
                except OSError:
                    pass
            if top.exists():
                left.append(str(top))
        if left:
            raise Failed(f"cgroups left: {left}")

    def remove_iptables(self):
        """The kubelet's KUBE-* chains (and the jumps to them), when there were none before."""
        for ipt, before in self.iptables_before.items():
            if "KUBE-" in before:
                continue
            for table in ("filter", "nat", "mangle"):
                rules = run([ipt, "-t", table, "-S"], f"{ipt} -S", check=False).stdout
                for rule in rules.splitlines():
                    m = re.match(r"-A (\S+) (.*-j KUBE-\S+.*)$", rule)
                    if m and not m.group(1).startswith("KUBE-"):
                        run([ipt, "-t", table, "-D", m.group(1), *m.group(2).split()],
                            f"{ipt} -D", check=False)
                for rule in rules.splitlines():
                    m = re.match(r"-N (KUBE-\S+)$", rule)
                    if m:
                        run([ipt, "-t", table, "-F", m.group(1)], f"{ipt} -F", check=False)
                        run([ipt, "-t", table, "-X", m.group(1)], f"{ipt} -X", check=False)
            after = run([f"{ipt}-save"], f"{ipt}-save").stdout
            if "KUBE-" in after:
                raise Failed(f"{ipt}: KUBE-* rules left")

    def remove_docker_images(self):
        """The images tagged here, and the untagged images of this run's build steps (the legacy
        builder keeps one per step) that the engine did not have before. Nothing else: other
        users' images and build caches stay, also those made while this ran."""
        for tag in self.docker_tags + self.made_standins:
            run(["docker", "rmi", tag], f"docker rmi {tag}", check=False)
        if self.docker_images_before is None:
            return
        left = []
        for short in reversed(self.built_ids):
            full = run(["docker", "image", "inspect", "-f", "{{.Id}} {{len .RepoTags}}", short],
                       "docker image inspect", check=False).stdout.split()
            if len(full) != 2 or full[0] in self.docker_images_before or full[1] != "0":
                continue
            if run(["docker", "rmi", short], "docker rmi", check=False).returncode != 0:
                left.append(short)
        if left:
            raise Failed(f"build-step images of this run left: {left}")


# ---- 3. images ---------------------------------------------------------------------------------

def build_images(cluster, out):
    """gospan's, the frontend's and the pause image, built with Docker, saved to OUT/*.tar."""
    for base in ("debian:bookworm", "debian:bookworm-slim", "golang:1.26-bookworm"):
        need(base, cluster.made_standins)
    with tempfile.TemporaryDirectory(prefix="gospan-kube-pause-") as ctx:
        run(["go", "build", "-trimpath", "-ldflags", "-s -w", "-o", f"{ctx}/pause", "."],
            "cannot build the pause program", cwd=HERE / "pause",
            env={**os.environ, "CGO_ENABLED": "0"})
        shutil.copy2(HERE / "pause" / "Dockerfile", ctx)
        specs = [(PAUSE_IMAGE, f"{ctx}/Dockerfile", ctx),
                 (GOSPAN_IMAGE, REPO / "Dockerfile", REPO),
                 (FRONTEND_IMAGE, REPO / "examples" / "frontend" / "Dockerfile",
                  REPO / "examples")]
        tars = []
        for tag, dockerfile, context in specs:
            t0 = time.monotonic()
            cluster.docker_tags.append(tag)
            # The legacy builder, so that --cpu-shares reaches the RUN steps.
            res = run(["nice", "-n", "10", "docker", "build", "--cpu-shares", "256",
                       "--force-rm", "-t", tag, "-f", dockerfile, context],
                      f"cannot build the image {tag}", timeout=3600, check=False,
                      env={**os.environ, "DOCKER_BUILDKIT": "0"})
            cluster.built_ids += re.findall(r"^ ---> ([0-9a-f]{12})$", res.stdout, re.M)
            if res.returncode != 0:
                raise Failed(f"cannot build the image {tag} from {dockerfile}: "
                             f"{(res.stdout + res.stderr)[-3000:]}")
            tar = out / (tag.replace("/", "_").replace(":", "_") + ".tar")
            run(["docker", "save", "-o", tar, tag], f"docker save {tag}")
            tars.append(tar)
            say(f"built {tag} in {time.monotonic() - t0:.0f} s")
    return tars


# ---- 4.-5. the Collector and the workloads -----------------------------------------------------

def collector_config(ip, port, output):
    """examples/kubernetes/otel-collector.yaml's Collector configuration, run on the node: the
    receiver on IP:PORT (the node's address, which the pods reach), the processor through $KUBECONFIG, a file exporter writing to OUTPUT."""
    docs = [d for d in yaml.safe_load_all(COLLECTOR_MANIFEST.read_text()) if d]
    cm = next(d for d in docs if d["kind"] == "ConfigMap")
    cfg = yaml.safe_load(cm["data"]["config.yaml"])
    cfg["receivers"]["otlp"]["protocols"]["http"]["endpoint"] = f"{ip}:{port}"
    cfg["processors"]["k8s_attributes"]["auth_type"] = "kubeConfig"
    cfg["exporters"] = {"file": {"path": str(output), "flush_interval": "100ms"},
                        "debug": cfg["exporters"].get("debug", {"verbosity": "basic"})}
    cfg["service"]["pipelines"]["traces"]["exporters"] = ["file", "debug"]
    cfg["service"]["telemetry"] = {"metrics": {"level": "none"}}
    return docs, cfg


def start_collector(cluster, port):
    """The Collector on the node, its k8s_attributes processor authenticated as the manifest's
    ServiceAccount (the manifest's Namespace, ServiceAccount, ClusterRole and binding applied)."""
    w = cluster.w
    output = w / "collector" / "traces.jsonl"
    output.parent.mkdir()
    docs, cfg = collector_config(cluster.ip, port, output)
    rbac = [d for d in docs if d["kind"] in ("Namespace", "ServiceAccount", "ClusterRole",
                                             "ClusterRoleBinding")]
    (w / "collector" / "rbac.yaml").write_text(yaml.safe_dump_all(rbac))
    cluster.kubectl("apply", "-f", w / "collector" / "rbac.yaml",
                    what="applying otel-collector.yaml's Namespace, ServiceAccount and RBAC")
    sa = next(d for d in rbac if d["kind"] == "ServiceAccount")["metadata"]
    token = cluster.kubectl("-n", sa["namespace"], "create", "token", sa["name"],
                            "--duration=2h", what="a token for the Collector's ServiceAccount"
                            ).stdout.strip()
    kc = kubeconfig(w / "collector" / "kubeconfig", w / "pki" / "ca.crt", {"token": token})
    (w / "collector" / "config.yaml").write_text(yaml.safe_dump(cfg))
    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    env["KUBECONFIG"] = str(kc)
    cluster.start("otelcol", [collector_binary(), "--config",
                              f"file:{w}/collector/config.yaml"], env=env)

    def listening():
        cluster.alive("otelcol")
        with socket.socket() as s:
            s.settimeout(1)
            return s.connect_ex((cluster.ip, port)) == 0

    wait_until(f"the Collector listens on {cluster.ip}:{port}", listening, 60,
               cluster.logs / "otelcol.log")
    return output


def daemonset(endpoint):
    """examples/kubernetes/gospan-daemonset.yaml as shipped, but for its image and endpoint."""
    docs = [d for d in yaml.safe_load_all(DAEMONSET.read_text()) if d]
    ds = next(d for d in docs if d["kind"] == "DaemonSet")
    (c,) = ds["spec"]["template"]["spec"]["containers"]
    c["image"] = GOSPAN_IMAGE  # imagePullPolicy IfNotPresent: found in containerd, not pulled
    env = next(e for e in c["env"] if e["name"] == "OTEL_EXPORTER_OTLP_ENDPOINT")
    env["value"] = endpoint
    return docs, ds


FRONTEND = {
    "apiVersion": "apps/v1", "kind": "Deployment",
    "metadata": {"name": "frontend", "namespace": "default"},
    "spec": {
        "replicas": 1,
        "selector": {"matchLabels": {"app": "frontend"}},
        "template": {
            "metadata": {"labels": {"app": "frontend"}},
            "spec": {
                "enableServiceLinks": False,
                "containers": [{
                    "name": "frontend", "image": FRONTEND_IMAGE,
                    "imagePullPolicy": "Never",
                    # No backend runs: only /health is requested.
                    "args": ["-addr", "0.0.0.0:8080", "-backend", "http://127.0.0.1:1"],
                    "ports": [{"containerPort": 8080}]}]}}}}


def target_path(ds):
    (c,) = ds["spec"]["template"]["spec"]["containers"]
    return next(e["value"] for e in c["env"] if e["name"] == "OTEL_GO_AUTO_TARGET_EXE")


def processes_running(path):
    """{pid: its /proc/PID/cgroup} of every process whose executable is PATH (as its own mount
    namespace names it: /proc/PID/exe)."""
    found = {}
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            if os.readlink(f"/proc/{pid}/exe") == path:
                found[int(pid)] = Path(f"/proc/{pid}/cgroup").read_text()
        except OSError:
            pass
    return found


def frontend_pod(cluster):
    (pod,) = json.loads(cluster.kubectl("get", "pods", "-l", "app=frontend", "-o",
                                        "json").stdout)["items"]
    return pod


def wait_for_other_targets(cluster, path, uid):
    """Waits until no process outside the frontend pod runs PATH. gospan traces every process
    of the file the first process it finds runs; another service with the same path on this
    machine (a Docker container of another test, say) would be that file, and the pod's would
    go untraced."""
    timeout = float(os.environ.get("GOSPAN_KUBE_WAIT_OTHERS", "900"))
    deadline = time.monotonic() + timeout
    said = False
    while True:
        others = {p: cg for p, cg in processes_running(path).items() if f"pod{uid}" not in cg}
        if not others:
            return
        desc = "; ".join(f"pid {p} (cgroup {cg.splitlines()[0] if cg else '?'})"
                         for p, cg in sorted(others.items()))
        if time.monotonic() > deadline:
            raise Failed(f"other processes on this machine run '{path}', the DaemonSet's "
                         f"target, and did not end within {timeout:.0f} s: {desc}. gospan "
                         f"would trace their file instead of the pod's")
        if not said:
            say(f"waiting (up to {timeout:.0f} s, GOSPAN_KUBE_WAIT_OTHERS) for processes "
                f"outside the pod that run '{path}' to end, since gospan traces the file of the "
                f"first it finds: {desc}")
            said = True
        time.sleep(2)


def deploy(cluster, endpoint):
    """The frontend Deployment, then gospan's DaemonSet once no other process runs its target."""
    w = cluster.w
    docs, ds = daemonset(endpoint)
    (w / "frontend.yaml").write_text(yaml.safe_dump(FRONTEND))
    (w / "gospan-daemonset.yaml").write_text(yaml.safe_dump_all(docs))
    t0 = time.monotonic()
    cluster.kubectl("apply", "-f", w / "frontend.yaml", what="applying the frontend Deployment")
    rollout(cluster, "the frontend Deployment", ["deployment/frontend"])
    wait_for_other_targets(cluster, target_path(ds), frontend_pod(cluster)["metadata"]["uid"])
    cluster.kubectl("apply", "-f", w / "gospan-daemonset.yaml",
                    what="applying gospan-daemonset.yaml (the API server refused it)")
    rollout(cluster, "gospan's DaemonSet", ["-n", ds["metadata"]["namespace"],
                                            f"daemonset/{ds['metadata']['name']}"])
    say(f"frontend and gospan's DaemonSet running ({time.monotonic() - t0:.0f} s)")
    return ds


def rollout(cluster, what, args):
    res = cluster.kubectl("rollout", "status", *args, "--timeout=180s", check=False,
                          timeout=200)
    if res.returncode != 0:
        pods = cluster.kubectl("get", "pods", "-A", "-o", "wide", check=False).stdout
        events = cluster.kubectl("get", "events", "-A", check=False).stdout
        raise Failed(f"{what} did not roll out: {res.stdout}{res.stderr}\n{pods}\n"
                     f"{events[-3000:]}\nthe end of the kubelet's log:\n"
                     f"{tail(cluster.logs / 'kubelet.log')}")


def gospan_logs(cluster, ds):
    return cluster.kubectl("-n", ds["metadata"]["namespace"], "logs",
                           f"daemonset/{ds['metadata']['name']}", check=False).stdout


# ---- 6. the check ------------------------------------------------------------------------------

def written_spans(output):
    """Every span the Collector's file exporter wrote to OUTPUT so far (OTLP JSON lines)."""
    got = []
    try:
        text = output.read_text()
    except FileNotFoundError:
        return got
    # The last piece is a line still being written (or empty): the next read has it whole.
    for line in text.split("\n")[:-1]:
        if line.strip():
            got.extend(spans_of_json(json.loads(line)))
    return got


def check_container_id_rule(cluster, port, output, want):
    """The configuration's second association rule, alone: a span whose resource has only the
    pod's container.id (no k8s.pod.uid), sent straight to the Collector, must come out with the
    pod's attributes too."""
    now = time.time_ns()
    name = "kube-test container.id probe"
    body = {"resourceSpans": [{
        "resource": {"attributes": [
            {"key": "service.name", "value": {"stringValue": "kube-test-probe"}},
            {"key": "container.id", "value": {"stringValue": want["container.id"]}}]},
        "scopeSpans": [{"scope": {"name": "kube-test"}, "spans": [{
            "traceId": os.urandom(16).hex(), "spanId": os.urandom(8).hex(), "name": name,
            "kind": 1, "startTimeUnixNano": str(now - 1000000),
            "endTimeUnixNano": str(now)}]}]}]}
    run(["curl", "-sf", "--max-time", "10", "-H", "Content-Type: application/json",
         "--data-binary", json.dumps(body), f"http://{cluster.ip}:{port}/v1/traces"],
        "sending a span with only container.id to the Collector")
    deadline = time.monotonic() + 30
    while True:
        got = [s for s in written_spans(output) if s.name == name]
        if got:
            break
        if time.monotonic() > deadline:
            raise Failed("the span sent with only container.id did not reach the Collector's "
                         f"output within 30 s; its log:\n{tail(cluster.logs / 'otelcol.log')}")
        time.sleep(0.5)
    keys = ("k8s.pod.name", "k8s.namespace.name", "k8s.deployment.name", "k8s.container.name",
            "k8s.node.name")
    diff = {k: got[0].resource.get(k) for k in keys if got[0].resource.get(k) != want[k]}
    if diff:
        raise Failed(f"a span with only the pod's container.id came out of the Collector "
                     f"without the pod's attributes (the container.id rule did not match): "
                     f"{diff}, expected {dict((k, want[k]) for k in keys)}")
    say("a span with only the pod's container.id (no k8s.pod.uid) got the same attributes")

def check(cluster, ds, port, output):
    pod = frontend_pod(cluster)
    want = {
        "k8s.pod.uid": pod["metadata"]["uid"],
        "container.id": pod["status"]["containerStatuses"][0]["containerID"].split("://")[-1],
        "k8s.pod.name": pod["metadata"]["name"],
        "k8s.namespace.name": pod["metadata"]["namespace"],
        "k8s.deployment.name": FRONTEND["metadata"]["name"],
        "k8s.container.name": pod["spec"]["containers"][0]["name"],
        "k8s.node.name": pod["spec"]["nodeName"],
    }
    ip = pod["status"]["podIP"]
    say(f"frontend pod {want['k8s.pod.name']} at {ip}: uid {want['k8s.pod.uid']}, container "
        f"{want['container.id'][:12]}")
    wait_until("gospan attached to the frontend",
               lambda: "gospan: attached" in gospan_logs(cluster, ds), 60)
    attached = next(line for line in gospan_logs(cluster, ds).splitlines()
                    if "gospan: attached" in line)
    say("gospan's log: " + attached[:200])
    pid = int(re.search(r"attached: pid (\d+)", attached).group(1))
    ours = processes_running(target_path(ds))
    if f"pod{want['k8s.pod.uid']}" not in ours.get(pid, ""):
        raise Failed(f"gospan attached to pid {pid}, not to the frontend pod's process (cgroup "
                     f"{ours.get(pid, '?').splitlines()[:1]}): another process on this machine "
                     f"runs '{target_path(ds)}'")

    def spans():
        return [s for s in written_spans(output)
                if s.resource.get("k8s.pod.uid") == want["k8s.pod.uid"]]

    deadline = time.monotonic() + 60
    while not spans():
        if time.monotonic() > deadline:
            raise Failed(f"no span with the frontend pod's k8s.pod.uid reached the Collector's "
                         f"output within 60 s.\ngospan's log:\n{gospan_logs(cluster, ds)[-3000:]}"
                         f"\nthe Collector's log:\n{tail(cluster.logs / 'otelcol.log')}")
        for _ in range(5):
            run(["curl", "-s", "-o", "/dev/null", "--max-time", "5", f"http://{ip}:8080/health"],
                "requesting the frontend", check=False)
        time.sleep(2)
    got = spans()
    bad = []
    for s in got:
        diff = {k: s.resource.get(k) for k, v in want.items() if s.resource.get(k) != v}
        if diff:
            bad.append(f"span '{s.name}': {diff}")
    if bad:
        raise Failed(f"{len(bad)} of the frontend pod's {len(got)} spans lack the pod's "
                     f"attributes {want}:\n" + "\n".join(bad[:5]) +
                     f"\nthe Collector's log:\n{tail(cluster.logs / 'otelcol.log')}")
    say(f"{len(got)} spans of the frontend pod reached the Collector, each with " +
        ", ".join(f"{k}={v}" for k, v in want.items() if k != "container.id") +
        f" and container.id {want['container.id'][:12]}...")
    check_container_id_rule(cluster, port, output, want)


# ---- the run -----------------------------------------------------------------------------------

def preflight():
    if os.geteuid() != 0:
        raise Failed("needs root: the kubelet, containerd and gospan's pod do")
    for tool in ("go", "docker", "containerd", "runc", "ctr", "openssl", "curl", "ip",
                 "iptables"):
        if shutil.which(tool) is None:
            raise Failed(f"'{tool}' is not installed (Debian: golang, docker.io, containerd, "
                         f"runc, openssl, curl, iproute2, iptables)")
    cni_bin_dir()
    for port in (2379, 2380, 6443, 10250):
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                raise Failed(f"port {port} is in use: another cluster or etcd runs here")
    if os.path.exists("/sys/class/net/" + BRIDGE):
        raise Failed(f"the bridge {BRIDGE} exists: another run, or one not torn down")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("what", nargs="?", choices=["test", "build"], default="test")
    what = ap.parse_args().what

    def interrupted(signum, frame):
        raise Interrupted(signal.Signals(signum).name)

    # Ctrl-C too when started with SIGINT ignored (a background job of a non-interactive shell).
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGTERM, interrupted)
    signal.signal(signal.SIGHUP, interrupted)
    t_all = time.monotonic()
    t0 = time.monotonic()
    try:
        bins = build_binaries(kube_home())
        say(f"binaries in {bins} ({time.monotonic() - t0:.0f} s): "
            f"{version_of(bins / 'kube-apiserver')}, "
            f"etcd {version_of(bins / 'etcd').splitlines()[0].split()[-1]}")
    except Failed as e:
        say(f"FAILED: {e}")
        return 1
    if what == "build":
        return 0

    cluster = engine = None
    status = 1
    try:
        preflight()
        ip = node_ip()
        parent = os.environ.get("GOSPAN_KUBE_WORKDIR")
        w = Path(tempfile.mkdtemp(prefix="gospan-kube-", dir=parent)).resolve()
        say(f"work directory {w}, node {NODE_NAME} at {ip}")
        # The images are built with Docker: its engine, started here if none runs.
        engine = Engine(w).start()
        cluster = Cluster(w, bins, ip)
        cluster.save_host_state()
        t0 = time.monotonic()
        (w / "images").mkdir()
        tars = build_images(cluster, w / "images")
        t_images = time.monotonic() - t0
        t0 = time.monotonic()
        cluster.up()
        cluster.import_images(tars)
        cluster.start_kubelet()
        port = free_port(ip)
        output = start_collector(cluster, port)
        ds = deploy(cluster, f"http://{ip}:{port}")
        t_up = time.monotonic() - t0
        t0 = time.monotonic()
        check(cluster, ds, port, output)
        say(f"PASSED (images {t_images:.0f} s, cluster up and workloads running {t_up:.0f} s, "
            f"check {time.monotonic() - t0:.0f} s)")
        status = 0
    except Failed as e:
        say(f"FAILED: {e}")
    except (KeyboardInterrupt, Interrupted) as e:
        say(f"interrupted ({str(e) or 'Ctrl-C'}): tearing down")
        status = 130
    finally:
        # Teardown must not be cut short by a second signal.
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        signal.signal(signal.SIGHUP, signal.SIG_IGN)
        if cluster is not None:
            t0 = time.monotonic()
            problems = cluster.teardown()
            for p in problems:
                say(f"teardown: {p}")
            if problems:
                status = status or 1
            if os.environ.get("GOSPAN_KUBE_KEEP") == "1":
                say(f"kept {cluster.w}")
            else:
                shutil.rmtree(cluster.w, ignore_errors=True)
            say(f"torn down in {time.monotonic() - t0:.0f} s"
                + ("" if not problems else " (with the problems above)"))
        if engine is not None:
            engine.stop()
    say(f"total {time.monotonic() - t_all:.0f} s")
    return status


if __name__ == "__main__":
    sys.exit(main())
