"""What every part of make bench shares: where things are and the run's knobs, child processes
and their output, CPU accounting (/proc/PID/stat, schedstat, the machine's other load), the BPF
run counters (kernel.bpf_stats_enabled), wrk, the OTLP receiver, gospan and the floor started on a
process, medians, and the formatting the page's sections share."""

import json
import os
import platform
import re
import resource
import shutil
import signal
import socket
import statistics
import subprocess
import threading
import time
import urllib.request
from pathlib import Path


REPO = Path(__file__).resolve().parents[2]
BUILD = Path(os.environ.get("GOSPAN_BUILD", REPO / "build")).resolve()
OUT = BUILD / "bench"
GOSPAN = BUILD / "gospan"
FLOOR = OUT / "floor"
QUICK = os.environ.get("BENCH_QUICK") == "1"
ROUNDS = int(os.environ.get("BENCH_ROUNDS", 2 if QUICK else 5))
SECONDS = int(os.environ.get("BENCH_SECONDS", 3 if QUICK else 6))
WARMUP = 1
CONNS = [1, 64]
PIN = os.environ.get("BENCH_PIN", "1") != "0" and os.cpu_count() >= 2
PERF = os.environ.get("BENCH_PERF", "1") != "0" and shutil.which("perf") is not None
PATH = "/users/42"  # a routed JSON handler: mux pattern match, JSON encoding
# What a client such as curl sends besides Host: wrk alone sends no header line but Host, which
# leaves http.Request.Header empty, and a tracer that looks for traceparent in it less to do.
WRK_HEADERS = ["User-Agent: wrk/4.1", "Accept: */*"]
# The service on CPU 0, wrk on CPU 1; the tracer and the OTLP receiver on CPU 2 when there is
# one, else with wrk (then a tracer's bursts of work also delay wrk, which shows in its p99).
CPU_SERVICE = "0"
CPU_WRK = "1"
CPU_OTHER = "2" if (os.cpu_count() or 1) >= 3 else "1"
CLK_TCK = os.sysconf("SC_CLK_TCK")
STATS_SYSCTL = Path("/proc/sys/kernel/bpf_stats_enabled")


def log(msg):
    print(f"bench: {msg}", flush=True)


def pinned(cpu, argv):
    # taskset execs the program: the child's pid is the program's own.
    return ["taskset", "-c", cpu, *argv] if PIN else list(argv)


def clean_env(**extra):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "GOSPAN_"))}
    env.update(extra)
    return env


class Proc:
    """A child process whose stdout and stderr lines are collected by threads."""

    def __init__(self, argv, env=None, cwd=None, stdin=False):
        self.argv = [str(a) for a in argv]
        # STDIN: a pipe to write to (bench/dbload -stdin reads its runs from it), else nothing.
        self.p = subprocess.Popen(self.argv, env=env or clean_env(), cwd=cwd,
                                  stdin=subprocess.PIPE if stdin else subprocess.DEVNULL,
                                  stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, text=True, errors="replace")
        self.lines = []
        self.cond = threading.Condition()
        self.threads = [threading.Thread(target=self._read, args=(s,), daemon=True)
                        for s in (self.p.stdout, self.p.stderr)]
        for t in self.threads:
            t.start()

    def _read(self, stream):
        for line in stream:
            with self.cond:
                self.lines.append(line.rstrip("\n"))
                self.cond.notify_all()

    @property
    def pid(self):
        return self.p.pid

    def _find(self, rx):
        for line in self.lines:
            m = rx.search(line)
            if m:
                return m
        return None

    def wait_line(self, pattern, timeout=30.0):
        """The match of the first line matching PATTERN; raises when the process exits or the
        time runs out first."""
        rx = re.compile(pattern)
        deadline = time.monotonic() + timeout
        with self.cond:
            while True:
                m = self._find(rx)
                if m:
                    return m
                if self.p.poll() is not None:
                    self.cond.wait(0.3)  # the readers may still hold the last lines
                    m = self._find(rx)
                    if m:
                        return m
                    raise RuntimeError(f"'{' '.join(self.argv)}' exited with status "
                                       f"{self.p.returncode}:\n" + "\n".join(self.lines[-20:]))
                left = deadline - time.monotonic()
                if left <= 0:
                    raise RuntimeError(f"'{' '.join(self.argv)}' printed no '{pattern}' within "
                                       f"{timeout:.0f} s:\n" + "\n".join(self.lines[-20:]))
                self.cond.wait(min(left, 0.2))

    def stop(self, sig=signal.SIGTERM, timeout=30.0):
        if self.p.stdin and not self.p.stdin.closed:
            try:
                self.p.stdin.close()
            except BrokenPipeError:
                pass
        if self.p.poll() is None:
            self.p.send_signal(sig)
            try:
                self.p.wait(timeout)
            except subprocess.TimeoutExpired:
                self.p.kill()
                self.p.wait(10)
        for t in self.threads:
            t.join(5)
        return self.p.returncode

    def text(self):
        with self.cond:
            return "\n".join(self.lines)


def cpu_seconds(pid):
    """utime + stime of process PID (all its threads, living and exited), in seconds."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLK_TCK


def threads_cpu_seconds(pid):
    """On-CPU time of PID's living threads in seconds, to the nanosecond (schedstat): utime and
    stime come in clock ticks, 10 ms, which is 8 % of gospan's CPU in a 5 s run at 10,000
    spans/s. Only for processes whose threads live as long as the measurement (gospan's)."""
    total = 0
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            total += int((task / "schedstat").read_text().split()[0])
        except (FileNotFoundError, ProcessLookupError):
            pass  # a thread that ended between the listing and the read
    return total / 1e9


def threads_wait_seconds(pid):
    """Time PID's living threads spent runnable but waiting for a CPU, in seconds (schedstat's
    second field): how long a busy machine kept them from running."""
    total = 0
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            total += int((task / "schedstat").read_text().split()[1])
        except (FileNotFoundError, ProcessLookupError):
            pass  # a thread that ended between the listing and the read
    return total / 1e9


def status_kb(pid, key):
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(key + ":"):
            return int(line.split()[1])
    return None


def reset_peak_rss(pid):
    """Start PID's peak resident size (VmHWM) over from what is resident now (`clear_refs` 5,
    Linux 4.0 on): VmHWM read later is the peak since this moment, not since the process began.
    False where the kernel refuses it; VmHWM then still covers the whole life."""
    try:
        Path(f"/proc/{pid}/clear_refs").write_text("5")
    except OSError:
        return False
    return True


def memory(pid):
    """Resident memory of PID in kB: all of it, the part that is the BPF ring buffer's mapping,
    the part that is files (the binary and its libraries, shared), private anonymous memory, and
    the proportional set size (PSS: each page divided among the mappings that share it, so the
    ring buffer's pages, mapped twice, count once, and shared libraries' pages in part)."""
    rss = ring = files = anon = pss = 0
    name = ""
    for line in Path(f"/proc/{pid}/smaps").read_text().splitlines():
        if re.match(r"^[0-9a-f]+-[0-9a-f]+ ", line):
            parts = line.split(None, 5)
            name = parts[5] if len(parts) > 5 else ""
        elif line.startswith("Rss:"):
            kb = int(line.split()[1])
            rss += kb
            if name.startswith("anon_inode:bpf"):
                ring += kb
            elif name.startswith("/"):
                files += kb
        elif line.startswith("Anonymous:"):
            anon += int(line.split()[1])
        elif line.startswith("Pss:"):
            pss += int(line.split()[1])
    return {"rss_kb": rss, "ringbuf_kb": ring, "files_kb": files, "anon_kb": anon,
            "pss_kb": pss, "peak_rss_kb": status_kb(pid, "VmHWM")}


def context_switches(pid):
    """Voluntary context switches of all of PID's threads: each is a sleep that ended."""
    total = 0
    for task in Path(f"/proc/{pid}/task").glob("*"):
        try:
            for line in (task / "status").read_text().splitlines():
                if line.startswith("voluntary_ctxt_switches:"):
                    total += int(line.split()[1])
        except OSError:
            pass  # a thread that just exited
    return total


def bpf_runs(pid):
    """{prog_id: (run_cnt, run_time_ns)} of the BPF programs process PID holds, from
    /proc/PID/fdinfo (the kernel counts only while kernel.bpf_stats_enabled is 1)."""
    progs = {}
    if not pid:
        return progs
    for fd in Path(f"/proc/{pid}/fdinfo").glob("*"):
        try:
            text = fd.read_text()
        except OSError:
            continue
        m = re.search(r"prog_id:\s*(\d+)", text)
        cnt = re.search(r"run_cnt:\s*(\d+)", text)
        ns = re.search(r"run_time_ns:\s*(\d+)", text)
        if m and cnt and ns:  # a program (links name a program too, without counters)
            progs[int(m.group(1))] = (int(cnt.group(1)), int(ns.group(1)))
    return progs


def prog_names():
    """{prog_id: name} of every loaded BPF program."""
    try:
        return {p["id"]: p.get("name", "?")
                for p in json.loads(run(["bpftool", "prog", "show", "-j"]))}
    except (RuntimeError, ValueError, OSError):
        return {}


def bpf_delta(before, after, names):
    """{name: [runs, ns]} of what ran between two bpf_runs() readings."""
    out = {}
    for pid, (cnt, ns) in after.items():
        c0, n0 = before.get(pid, (0, 0))
        name = names.get(pid, str(pid))
        acc = out.setdefault(name, [0, 0])
        acc[0] += cnt - c0
        acc[1] += ns - n0
    return out


def bpf_figures(before, after, names, n, per):
    """The BPF figures of a run of N operations (RPCs, calls, messages: PER names them in the
    keys) from two bpf_runs() readings: runs and run time per operation, time per run, and the
    same by program."""
    progs = bpf_delta(before, after, names)
    runs = sum(c for c, _ in progs.values())
    ns = sum(t for _, t in progs.values())
    return {f"bpf_runs_per_{per}": runs / n, "bpf_ns_per_run": ns / runs if runs else None,
            f"bpf_us_per_{per}": ns / 1e3 / n,
            "bpf_programs": {k: {f"runs_per_{per}": c / n, "ns_per_run": t / c}
                             for k, (c, t) in progs.items() if c}}


def set_bpf_stats(on):
    try:
        STATS_SYSCTL.write_text("1" if on else "0")
    except OSError as e:
        log(f"cannot set kernel.bpf_stats_enabled: {e}")


def bpf_stats_on():
    try:
        return STATS_SYSCTL.read_text().strip() == "1"
    except OSError:
        return False


def ensure_bpf_stats():
    """Someone else's test may have turned the counters off meanwhile."""
    if not bpf_stats_on():
        set_bpf_stats(True)


def run(argv, cwd=None, env=None, timeout=900):
    res = subprocess.run([str(a) for a in argv], cwd=cwd, env=env, capture_output=True,
                         text=True, timeout=timeout)
    if res.returncode != 0:
        raise RuntimeError(f"'{' '.join(map(str, argv))}' failed:\n{res.stdout}{res.stderr}")
    return res.stdout


def go_env(**extra):
    env = clean_env(GOTOOLCHAIN="local", CGO_ENABLED="0", GOFLAGS="-mod=mod -buildvcs=false")
    env.update(extra)
    return env


def go_build(src, out):
    run(["go", "build", "-o", out, "."], cwd=src, env=go_env())
    return out


def median(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None


def free_ports(n):
    socks = []
    for _ in range(n):
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        socks.append(s)
    ports = [s.getsockname()[1] for s in socks]
    for s in socks:
        s.close()
    return ports


class Receiver:
    """bench/receiver: OTLP/HTTP in, spans counted and thrown away."""

    def __init__(self, binary, cpu=CPU_OTHER):
        self.proc = Proc(pinned(cpu, [binary, "-addr", "127.0.0.1:0"]))
        self.endpoint = "http://" + self.proc.wait_line(r"listening on (\S+)").group(1)

    def stats(self):
        opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
        with opener.open(self.endpoint + "/stats", timeout=10) as r:
            return json.loads(r.read())

    def spans(self, kind=None):
        """The spans received, or those of KIND ("producer", "consumer", "server", ...)."""
        st = self.stats()
        return st["kinds"][kind] if kind else st["spans"]

    def wait_for(self, want, quiet=1.5, timeout=30.0, kind=None):
        """Waits until the receiver holds WANT spans (of KIND), or got none for QUIET seconds;
        its count."""
        deadline = time.monotonic() + timeout
        last, since = -1, time.monotonic()
        while time.monotonic() < deadline:
            n = self.spans(kind)
            if n >= want:
                return n
            if n != last:
                last, since = n, time.monotonic()
            elif time.monotonic() - since > quiet:
                return n
            time.sleep(0.05)
        return self.spans(kind)


def start_service(binary, receiver=None, extra_env=None, pin=True, args=(), cpu=CPU_SERVICE):
    env = clean_env()
    if receiver:
        env["OTEL_EXPORTER_OTLP_ENDPOINT"] = receiver.endpoint
    env.update(extra_env or {})
    argv = [binary, "-addr", "127.0.0.1:0", *args]
    svc = Proc(pinned(cpu, argv) if pin else argv, env=env)
    svc.addr = svc.wait_line(r"listening on (\S+)").group(1)
    return svc


def start_gospan(pid, receiver, extra_env=None, pin=True, binary=None, cpu=CPU_OTHER):
    """gospan tracing PID (or each of a list of pids), once it said it attached to every one."""
    pids = list(pid) if isinstance(pid, (list, tuple)) else [pid]
    env = clean_env(OTEL_EXPORTER_OTLP_ENDPOINT=receiver.endpoint)
    env.update(extra_env or {})
    argv = [binary or GOSPAN, *[a for p in pids for a in ("--pid", str(p))]]
    g = Proc(pinned(cpu, argv) if pin else argv, env=env)
    for p in pids:
        g.wait_line(rf"gospan: attached: pid {p}\b", timeout=60)
    g.attached = g.wait_line(r"gospan: attached: .*", timeout=60).group(0)
    return g


def stop_and_count(g, res):
    """Stops gospan G and adds its summary to RES, with its CPU (res["cpu_s"]) per exported span."""
    g.stop()
    res.update(gospan_summary(g))
    res["cpu_us_per_span"] = res["cpu_s"] * 1e6 / max(res["exported"], 1)


def gospan_summary(g):
    """{captured, exported, dropped, reasons} from the summary line of a stopped gospan."""
    m = re.search(r"summary: spans captured (\d+), exported (\d+), dropped (\d+)(?: \(([^)]*)\))?",
                  g.text())
    if not m:
        raise RuntimeError(f"gospan printed no summary:\n{g.text()[-3000:]}")
    return {"captured": int(m.group(1)), "exported": int(m.group(2)),
            "dropped": int(m.group(3)), "reasons": m.group(4) or ""}


def start_floor(pid, *args, pin=True):
    argv = [FLOOR, "--pid", str(pid), *args]
    f = Proc(pinned(CPU_OTHER, argv) if pin else argv)
    f.attached = f.wait_line(r"floor: attached: .*", timeout=60).group(0)
    return f


def floor_programs(f):
    """{program: (runs, run_time_ns)} from a stopped floor's output."""
    return {m.group(1): (int(m.group(2)), int(m.group(3)))
            for m in re.finditer(r"floor: program (\S+) runs (\d+) run_time_ns (\d+)", f.text())}


def to_us(text):
    m = re.fullmatch(r"([\d.]+)(us|ms|s)", text)
    return float(m.group(1)) * {"us": 1, "ms": 1e3, "s": 1e6}[m.group(2)] if m else None


def wrk(addr, conns, seconds, path=PATH, headers=WRK_HEADERS):
    argv = pinned(CPU_WRK, ["wrk", "-t1", f"-c{conns}", f"-d{seconds}s", "--latency",
                              *[a for h in headers for a in ("-H", h)],
                              f"http://{addr}{path}"])
    out = run(argv, timeout=seconds + 60)
    res = {"requests": int(re.search(r"(\d+) requests in", out).group(1)),
           "rps": float(re.search(r"Requests/sec:\s*([\d.]+)", out).group(1))}
    for pct in ("50", "99"):
        m = re.search(rf"^\s*{pct}(?:\.0+)?%\s+(\S+)", out, re.M)
        res[f"p{pct}_us"] = to_us(m.group(1)) if m else None
    m = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    res["non2xx"] = int(m.group(1)) if m else 0
    m = re.search(r"Socket errors: (.*)", out)
    res["socket_errors"] = m.group(1).strip() if m else ""
    return res


def wrk_measured(svc, tracer, receiver):
    """A warm-up, then a wrk run of PATH per connection count with the CPU of the service, the
    tracer (None: none) and the receiver, the tracer's BPF run counters and the rest of the
    machine's load read around it: ({conns: figures}, the requests served in all)."""
    names = prog_names() if tracer else {}
    total = wrk(svc.addr, 64, WARMUP)["requests"]
    results = {}
    for conns in CONNS:
        ensure_bpf_stats()
        tpid = tracer.pid if tracer else None
        s0, r0 = cpu_seconds(svc.pid), cpu_seconds(receiver.proc.pid)
        t0 = cpu_seconds(tpid) if tpid else 0.0
        b0 = bpf_runs(tpid)
        load = OtherLoad(svc.pid, tpid, receiver.proc.pid)
        w = wrk(svc.addr, conns, SECONDS)
        other = load.cpus()
        s1, r1 = cpu_seconds(svc.pid), cpu_seconds(receiver.proc.pid)
        t1 = cpu_seconds(tpid) if tpid else 0.0
        b1 = bpf_runs(tpid)
        stats_kept = bpf_stats_on()
        n = max(w["requests"], 1)
        total += w["requests"]
        r = dict(w)
        r["service_cpu_us"] = (s1 - s0) * 1e6 / n
        r["tracer_cpu_us"] = (t1 - t0) * 1e6 / n
        r["receiver_cpu_us"] = (r1 - r0) * 1e6 / n
        r["other_load_cpus"] = other
        if tracer and stats_kept:
            progs = bpf_delta(b0, b1, names)
            hits = sum(c for c, _ in progs.values())
            ns = sum(t for _, t in progs.values())
            r["bpf_hits_per_req"] = hits / n
            r["bpf_ns_per_hit"] = ns / hits if hits else None
            r["bpf_us_per_req"] = ns / 1e3 / n
            r["bpf_programs"] = {k: {"hits_per_req": c / n, "ns_per_hit": t / c}
                                 for k, (c, t) in progs.items() if c}
        results[conns] = r
    return results, total


def wrk_medians(runs):
    """{cfg: {conns: the medians of the rounds' figures, each BPF program's included}} of RUNS,
    {cfg: {conns: [wrk_measured() figures, a round each]}}."""
    keys = ["rps", "p50_us", "p99_us", "service_cpu_us", "tracer_cpu_us", "receiver_cpu_us",
            "bpf_hits_per_req", "bpf_ns_per_hit", "bpf_us_per_req", "other_load_cpus"]
    med = {}
    for cfg, by_conns in runs.items():
        med[cfg] = {}
        for n, rs in by_conns.items():
            m = {k: median([r.get(k) for r in rs]) for k in keys}
            m["total_cpu_us"] = m["service_cpu_us"] + m["tracer_cpu_us"]
            progs = {}
            for r in rs:
                for name, v in (r.get("bpf_programs") or {}).items():
                    progs.setdefault(name, []).append(v)
            m["bpf_programs"] = {name: {k: median([v[k] for v in vs]) for k in vs[0]}
                                 for name, vs in progs.items()}
            med[cfg][n] = m
    return med


def added_over_untraced(med):
    """{cfg: {conns: what CFG's medians add to the untraced service's}}: its service CPU, that
    plus its tracer process's, its p50 latency."""
    added = {}
    for cfg in med:
        if cfg == "untraced":
            continue
        added[cfg] = {}
        for n, m in med[cfg].items():
            base = med["untraced"][n]
            added[cfg][n] = {"service_cpu_us": m["service_cpu_us"] - base["service_cpu_us"],
                             "total_cpu_us": m["total_cpu_us"] - base["service_cpu_us"],
                             "p50_us": m["p50_us"] - base["p50_us"]}
    return added


def source_state():
    """The commit gospan and bench/floor were built from, and whether the tree had changes."""
    try:
        return run(["git", "-C", REPO, "describe", "--always", "--dirty"]).strip()
    except (RuntimeError, OSError):
        return None


def machine_busy_seconds():
    """CPU time all CPUs spent on anything since boot (not idle, iowait or steal), in seconds."""
    f = [int(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:8]]
    user, nice, system, _idle, _iowait, irq, softirq = f
    return (user + nice + system + irq + softirq) / CLK_TCK


def own_cpu_seconds():
    """This script's CPU and that of the children it has waited for (wrk), in seconds."""
    s, c = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return s.ru_utime + s.ru_stime + c.ru_utime + c.ru_stime


class OtherLoad:
    """What the rest of the machine used over a window, in CPUs: all busy CPU time
    (`/proc/stat`) less that of the processes measured, this script and the children it has
    waited for. Other people's work, which a figure taken meanwhile shares the CPUs with."""

    def __init__(self, *pids):
        self.m0, self.o0, self.t0 = machine_busy_seconds(), own_cpu_seconds(), time.monotonic()
        self.c0 = {}
        for pid in pids:
            self.add(pid)

    @staticmethod
    def _cpu(pid):
        try:
            return cpu_seconds(pid)
        except OSError:
            return 0.0  # gone and reaped: its time is in this script's children's now

    def add(self, pid, started_in_window=False):
        """Counts PID as ours: its CPU from now, or all of it when it started in the window."""
        if pid:
            self.c0[pid] = 0.0 if started_in_window else self._cpu(pid)

    def cpus(self):
        m1, o1, t1 = machine_busy_seconds(), own_cpu_seconds(), time.monotonic()
        ours = sum(self._cpu(p) - c for p, c in self.c0.items()) + (o1 - self.o0)
        return max(m1 - self.m0 - ours, 0.0) / max(t1 - self.t0, 1e-9)


def stdin_run(load, line, timeout):
    """Has LOAD (a bench program reading its runs from stdin, one a line: dbload, kafkaload) do
    the run LINE; the JSON line it prints for it, waited for up to TIMEOUT seconds."""
    with load.cond:
        before = sum(1 for x in load.lines if x.startswith("{"))
    try:
        load.p.stdin.write(line + "\n")
        load.p.stdin.flush()
    except BrokenPipeError:
        pass  # it exited: said below, with its last lines
    deadline = time.monotonic() + timeout
    with load.cond:
        while True:
            got = [x for x in load.lines if x.startswith("{")]
            if len(got) > before:
                return json.loads(got[before])
            if load.p.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"'{' '.join(load.argv)}' made no run of '{line}' (status "
                                   f"{load.p.poll()}):\n" + "\n".join(load.lines[-20:]))
            load.cond.wait(0.2)


def finish_load(load):
    """Ends LOAD (dbload, kafkaload) as it ends itself: stdin closed, its clients closed."""
    load.p.stdin.close()
    try:
        load.p.wait(15)
    except subprocess.TimeoutExpired:
        pass
    load.stop()


def gospan_warnings(g):
    """What gospan said besides its usual lines (attach, summary, probe hits)."""
    return [x for x in g.text().splitlines()
            if x.startswith("gospan: ") and not re.match(
                r"gospan: (attached|outgoing trace context|probe hits|summary|target process)", x)]


def bpf_maps_of(pid):
    """{name: id} of the BPF maps process PID holds open (an fd's fdinfo names its map_id)."""
    out = {}
    for fd in Path(f"/proc/{pid}/fdinfo").iterdir():
        try:
            m = re.search(r"^map_id:\s*(\d+)", fd.read_text(), re.M)
        except OSError:
            continue
        if m:
            shown = json.loads(run(["bpftool", "map", "show", "id", m.group(1), "-j"]))
            out[shown.get("name", "?")] = int(m.group(1))
    return out


def machine():
    cpu = "unknown"
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            cpu = line.split(":", 1)[1].strip()
            break
    mem = None
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith("MemTotal:"):
            mem = int(line.split()[1])
    virt = []
    if shutil.which("systemd-detect-virt"):
        for kind, what in (("--vm", "{} guest"), ("--container", "in a {} container")):
            v = subprocess.run(["systemd-detect-virt", kind], capture_output=True,
                               text=True).stdout.strip()
            if v and v != "none":
                virt.append(what.format(v))
    wrk_v = subprocess.run(["wrk", "-v"], capture_output=True, text=True)
    return {
        "cpu": cpu, "cpus": os.cpu_count(), "kernel": platform.release(),
        "arch": platform.machine(), "memory_gb": round(mem / 1024 / 1024, 1) if mem else None,
        "virtualization": ", ".join(virt) or None,
        "go": run(["go", "version"], env=go_env()).strip(),
        "wrk": (wrk_v.stdout + wrk_v.stderr).strip().splitlines()[0],
        "loadavg_at_start": Path("/proc/loadavg").read_text().split()[:3],
        "date": time.strftime("%Y-%m-%d %H:%M %Z"),
        "commit": source_state(),
    }


def fmt(x, spec=".1f", none="n/a"):
    return none if x is None else format(x, spec)


def mb(kb):
    return None if kb is None else kb / 1024


def min_to_max(xs, spec=".1f"):
    """'a to b' over a list of figures (lowest to highest), or the one figure."""
    if not xs:
        return "n/a"
    lo, hi = min(xs), max(xs)
    return f"{lo:{spec}}" if f"{lo:{spec}}" == f"{hi:{spec}}" else f"{lo:{spec}} to {hi:{spec}}"


def attach_steps(line):
    """{library: {what: hits}} of gospan's attach LINE: the single-stepped hits a call it gives
    each family, hits None where gospan has no probe for it. The line's own list (HTTP server
    and client: "request served", "call made") is "net/http"; a family's in parentheses is named
    by the library they begin with ("grpc-go", "database/sql", "go-redis", "kafka-go", "sarama",
    "franz-go", "fasthttp"), or where they begin with its version by the words before them
    ("pgx", "gin routes"), or where nothing comes before the figures ("on-CPU time")."""
    out = {}
    for m in re.finditer(r"([^+;,()]*?) ?\(([^()]*?)single-stepped hits: ([^;)]*)", line or ""):
        before = m.group(1).strip()
        first = (m.group(2).split(None, 1) or [""])[0].rstrip(";,")
        name = ("net/http" if before.endswith("probes")
                else before if not first or re.match(r"v\d", first) else first)
        for item in m.group(3).split(", "):
            x = re.fullmatch(r"(\d+|no probe for) an? (.+)", item.strip())
            if x:
                out.setdefault(name, {})[x.group(2)] = \
                    int(x.group(1)) if x.group(1).isdigit() else None
    return out


def steps_text(line, *keys):
    """The page's figure of the single-stepped hits a call that gospan's attach LINE gives at
    KEYS ((library, what) pairs of attach_steps(), added up): "n/a" where the line (or the
    results) do not have it, "no probe" where gospan has none."""
    steps = attach_steps(line)
    hits = [steps.get(lib, {}).get(what, "n/a") for lib, what in keys]
    if "n/a" in hits or not hits:
        return "n/a"
    if None in hits:
        return "no probe"
    return str(sum(hits))
