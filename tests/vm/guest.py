#!/usr/bin/env python3
"""What runs inside a test virtual machine (tests/vm/run.py writes the job that starts it): the
kernel's facts, one gospan attached to examples/httpserver to hear what it says is off and why,
then the end-to-end tests given, with pytest. Everything it finds goes to OUT (the run's
directory, shared with the host): guest.json, gospan.log, junit.xml and pytest.log.

    python3 tests/vm/guest.py OUT [PYTEST ARGS...]
"""

import json
import os
import platform
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
BUILD = Path(os.environ.get("GOSPAN_BUILD") or REPO / "build")

# What gospan's attach and warning lines say about a part it turned off.
OFF = re.compile(r"\b(off|not (available|supported|loaded)|cannot|refus|unsupported|needs?|"
                 r"requires?|lockdown|no probe)\b", re.I)


def read(path):
    try:
        return Path(path).read_text().strip()
    except OSError as e:
        return f"({e.strerror})"


def facts():
    mounts = read("/proc/self/mountinfo").splitlines()
    lockdown = read("/sys/kernel/security/lockdown")
    m = re.search(r"\[(\w+)\]", lockdown)
    return {
        "release": platform.release(),
        "arch": platform.machine(),
        "cmdline": read("/proc/cmdline"),
        "lockdown": m.group(1) if m else lockdown,
        "cgroup": "v2" if any(" - cgroup2 " in line for line in mounts) else "v1",
        "btf": Path("/sys/kernel/btf/vmlinux").exists(),
    }


def wait_line(proc, prefix, timeout):
    """The first line of PROC's stderr starting with PREFIX, and every line read until then."""
    lines, deadline = [], time.monotonic() + timeout
    os.set_blocking(proc.stderr.fileno(), False)
    buf = b""
    while time.monotonic() < deadline:
        chunk = proc.stderr.read()
        if chunk:
            buf += chunk
            *done, buf = buf.split(b"\n")
            for raw in done:
                lines.append(raw.decode("utf-8", "replace"))
                if lines[-1].startswith(prefix):
                    return lines[-1], lines
        elif proc.poll() is not None:
            break
        time.sleep(0.1)
    return None, lines


def gospan_debug(out, pid, timeout):
    """gospan once more on PID with OTEL_LOG_LEVEL=debug, where it did not attach or the kernel
    refused a part: libbpf's lines say which step the kernel refused. Stopped once attached.
    The lines naming a failure, all in gospan-debug.log."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    env.update(OTEL_TRACES_EXPORTER="console", OTEL_METRICS_EXPORTER="none",
               OTEL_LOG_LEVEL="debug")
    g = subprocess.Popen([str(BUILD / "gospan"), "--pid", str(pid)], env=env,
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    attached, lines = wait_line(g, "gospan: attached", timeout)
    if g.poll() is None:
        g.send_signal(signal.SIGTERM if attached else signal.SIGKILL)
    try:
        g.wait(timeout)
    except subprocess.TimeoutExpired:
        g.kill()
        g.wait()
        lines.append("(did not exit after SIGTERM)")
    os.set_blocking(g.stderr.fileno(), True)
    lines += [x.decode("utf-8", "replace") for x in g.stderr.read().splitlines()]
    if not attached and g.returncode == -signal.SIGKILL:
        lines.append(f"(timed out after {timeout} s)")
    text = "\n".join(lines) + "\n"
    (out / "gospan-debug.log").write_text(text)
    return [x for x in text.splitlines()
            if re.search(r"fail|refus|not supported|unknown|invalid|error", x, re.I)
            and "BEGIN PROG LOAD LOG" not in x][:12]


def probe_gospan(out, timeout):
    """gospan on examples/httpserver (built by the host): attach, one request, SIGTERM. What it
    printed, whether it attached, how it ended and how long each step took."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    env.update(OTEL_TRACES_EXPORTER="console", OTEL_METRICS_EXPORTER="none")
    svc = subprocess.Popen([str(BUILD / "e2e" / "httpserver"), "-addr", "127.0.0.1:0"],
                           stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    line = svc.stdout.readline().decode()
    addr = line.split()[-1] if line.startswith("listening on ") else None
    result = {"service": line.strip()}
    t0 = time.monotonic()
    g = subprocess.Popen([str(BUILD / "gospan"), "--pid", str(svc.pid)], env=env,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    attached, lines = wait_line(g, "gospan: attached", timeout)
    result["attach_seconds"] = round(time.monotonic() - t0, 1)
    result["attached"] = attached
    if attached and addr:
        get = f"import urllib.request as u; u.urlopen('http://{addr}/')"
        subprocess.run([sys.executable, "-c", get], timeout=60, capture_output=True)
        time.sleep(1)
    if g.poll() is None:
        g.send_signal(signal.SIGTERM)
    try:
        g.wait(timeout)
    except subprocess.TimeoutExpired:
        g.kill()
        g.wait()
        result["hung"] = f"did not exit within {timeout} s of SIGTERM"
    os.set_blocking(g.stderr.fileno(), True)
    lines += [x.decode("utf-8", "replace") for x in g.stderr.read().splitlines()]
    result["exit"] = g.returncode
    result["stderr"] = lines
    result["stdout_lines"] = len(g.stdout.read().splitlines())
    result["off"] = [x for x in lines if x.startswith("gospan") and OFF.search(x)
                     and not x.startswith("gospan: summary")]
    if not attached or any("refused" in x for x in result["off"]):
        result["debug"] = gospan_debug(out, svc.pid, timeout)
    svc.kill()
    svc.wait()
    (out / "gospan.log").write_text("\n".join(lines) + "\n")
    return result


# The BPF objects of the parts gospan says the kernel refused, when it attached all the same.
REFUSED_PARTS = {"socket-layer": ("wire.bpf.o", "kafka_wire.bpf.o")}


def refused_objects(gospan):
    """The objects to load with bpftool: every one where gospan did not attach, else those of
    the parts it said the kernel refused."""
    every = sorted((BUILD / "bpf").glob("*.bpf.o"))
    if not gospan["attached"]:
        return every
    names = {n for part, objs in REFUSED_PARTS.items() for n in objs
             if any("refused" in x and part in x for x in gospan["off"])}
    return [o for o in every if o.name in names]


def verifier_reasons(out, objects, timeout=300):
    """Why the kernel refuses each of OBJECTS it refuses, from the verifier's log as bpftool
    loads them (gospan cuts a libbpf message at 1 kB, which leaves the reason out):
    {object: {"program": name, "reason": the verifier's last words, "at": the instruction}}."""
    found = {}
    for obj in objects:
        pin = Path("/sys/fs/bpf") / f"vm-{obj.stem.split('.')[0]}"
        pin.mkdir(exist_ok=True)
        try:
            res = subprocess.run(["bpftool", "-d", "prog", "loadall", str(obj), str(pin)],
                                 capture_output=True, text=True, timeout=timeout)
        except subprocess.TimeoutExpired:
            # Under TCG, bpftool's debug output of a large object's verification can take
            # longer than the boot has (http.bpf.o on arm64: over 10 minutes).
            found[obj.name] = {"program": None, "at": "",
                               "reason": f"(bpftool did not finish within {timeout} s)"}
            continue
        finally:
            subprocess.run(["rm", "-rf", str(pin)])
        text = res.stdout + res.stderr
        (out / f"verifier-{obj.stem.split('.')[0]}.log").write_text(text)
        if res.returncode == 0:
            continue
        m = re.search(r"prog '(\w+)': BPF program load failed.*?-- BEGIN PROG LOAD LOG --\n"
                      r"(.*?)-- END PROG LOAD LOG --", text, re.S)
        if not m:
            found[obj.name] = {"program": None, "at": "", "reason": text.strip()[-300:]}
            continue
        # The verdict: the lines before the statistics ("verification time", "processed").
        lines = [x for x in m.group(2).splitlines()
                 if x and not x.startswith(("verification time", "processed ", "stack depth",
                                            "from ", "; "))]
        source = [x[2:].strip() for x in m.group(2).splitlines() if x.startswith("; ")]
        found[obj.name] = {"program": m.group(1), "at": lines[-2] if len(lines) > 1 else "",
                           "reason": lines[-1] if lines else "",
                           "source": source[-1] if source else ""}
    return found


def main():
    out = Path(sys.argv[1])
    pytest_args = sys.argv[2:]
    report = {"facts": facts(), "times": {}}
    print(f"vm-guest: {report['facts']}", flush=True)
    t0 = time.monotonic()
    report["gospan"] = probe_gospan(out, timeout=120)
    report["times"]["probe"] = round(time.monotonic() - t0, 1)
    print(f"vm-guest: gospan {'attached' if report['gospan']['attached'] else 'did not attach'}"
          f" in {report['gospan']['attach_seconds']} s, exit {report['gospan']['exit']}",
          flush=True)
    for line in report["gospan"]["stderr"]:
        print(f"vm-guest: | {line}", flush=True)
    (out / "guest.json").write_text(json.dumps(report, indent=1) + "\n")
    if not report["gospan"]["attached"] or any("refused" in x for x in report["gospan"]["off"]):
        t0 = time.monotonic()
        report["verifier"] = verifier_reasons(out, refused_objects(report["gospan"]))
        report["times"]["verifier"] = round(time.monotonic() - t0, 1)
        for name, why in report["verifier"].items():
            print(f"vm-guest: the kernel refuses {name}: {why}", flush=True)
        (out / "guest.json").write_text(json.dumps(report, indent=1) + "\n")
    if pytest_args:
        t0 = time.monotonic()
        with open(out / "pytest.log", "w") as log:
            res = subprocess.run([sys.executable, "-m", "pytest", "-ra", "--durations=15",
                                  "-p", "no:cacheprovider",
                                  f"--junitxml={out / 'junit.xml'}", *pytest_args],
                                 cwd=REPO, stdout=log, stderr=subprocess.STDOUT)
        report["pytest_exit"] = res.returncode
        report["times"]["pytest"] = round(time.monotonic() - t0, 1)
        (out / "guest.json").write_text(json.dumps(report, indent=1) + "\n")
    print(f"vm-guest: done {report['times']}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
