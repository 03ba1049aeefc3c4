"""The per-CPU scratch is claimed, not assumed free (issue 18).

Since Linux 6.0 a uprobe's BPF program runs with migration disabled, not preemption: on a
preemptible kernel it can be preempted and another task's program run on the same CPU with the
same per-CPU scratch. gospan's programs claim the scratch's busy word before they write there and
give it back on every way out; one that finds it taken makes no record and counts scratch_busy.

The preemption itself cannot be forced from a test (a kernel booted preempt=none, as CI's and
this one are, never preempts a BPF program, and lockdown keeps debugfs's sched/preempt switch
shut), so this test plays the preempted program: it sets the busy word of every CPU's scratch in a
real gospan's map, as a program holding it would, and sees the probes make no span and count
each; then it gives the word back and sees spans again, and that the probes gave back every
claim they took (the word is 0 on every CPU after requests of every kind).
"""
import json
import re
import subprocess
import urllib.request
from pathlib import Path

import pytest

from conftest import SPAN_KIND_SERVER, drop_reasons, wait_until


def _bpftool(*args):
    out = subprocess.run(["bpftool", "-j", *args], check=True, capture_output=True, text=True)
    return json.loads(out.stdout or "null")


def _map_id(gospan_pid, name):
    """The id of the map NAME of the gospan of GOSPAN_PID, among those its descriptors hold."""
    for info in Path(f"/proc/{gospan_pid}/fdinfo").iterdir():
        try:
            m = re.search(r"^map_id:\s*(\d+)", info.read_text(), re.M)
        except OSError:
            continue
        if m and _bpftool("map", "show", "id", m.group(1)).get("name") == name:
            return int(m.group(1))
    return None


def _busy_words(map_id):
    """The busy word (the value's first 8 bytes) of each CPU's scratch."""
    entry = _bpftool("map", "lookup", "id", str(map_id), "key", "0", "0", "0", "0")
    return [int.from_bytes(bytes(int(b, 16) for b in v["value"][:8]), "little")
            for v in entry["values"]]


def _set_busy(map_id, word):
    """Sets the busy word of every CPU's scratch to WORD, the rest of the value zeroed."""
    size = _bpftool("map", "show", "id", str(map_id))["bytes_value"]
    value = word.to_bytes(8, "little") + bytes(size - 8)
    subprocess.run(["bpftool", "map", "update", "id", str(map_id), "key", "0", "0", "0", "0",
                    "value", *[str(b) for b in value]], check=True)


def _get(url):
    with urllib.request.urlopen(url, timeout=10) as r:
        return r.status


def _server_spans(receiver):
    return [s for s in receiver.snapshot() if s.kind == SPAN_KIND_SERVER]


def test_a_held_scratch_is_not_used_and_is_counted(start_service, start_gospan, otlp_receiver):
    if subprocess.run(["bpftool", "version"], capture_output=True).returncode:
        pytest.skip("bpftool is needed to hold the scratch of a running gospan")
    svc = start_service()
    gospan = start_gospan(svc.pid, otlp_receiver)
    gospan.wait_attached()
    map_id = _map_id(gospan.proc.pid, "scratch")
    assert map_id is not None, "no scratch map of this gospan"

    # Requests of every kind give their claim back: with and without a caller's traceparent.
    assert _get(f"{svc.base_url}/users/1") == 200
    req = urllib.request.Request(f"{svc.base_url}/users/2", headers={
        "traceparent": "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"})
    with urllib.request.urlopen(req, timeout=10) as r:
        assert r.status == 200
    assert wait_until(lambda: len(_server_spans(otlp_receiver)) == 2, 10.0), \
        [s.name for s in otlp_receiver.snapshot()]
    assert set(_busy_words(map_id)) == {0}

    # A program preempted while it holds the scratch, on every CPU: nothing is made in it.
    _set_busy(map_id, 1)
    for i in range(3):
        assert _get(f"{svc.base_url}/users/{10 + i}") == 200
    # Given back: spans again, and every claim taken since was given back too.
    _set_busy(map_id, 0)
    assert _get(f"{svc.base_url}/users/20") == 200
    assert wait_until(lambda: len(_server_spans(otlp_receiver)) == 3, 10.0)
    assert set(_busy_words(map_id)) == {0}
    gospan.stop_cleanly()
    paths = sorted(s.attrs.get("url.path") for s in _server_spans(otlp_receiver))
    assert paths == ["/users/1", "/users/2", "/users/20"], paths
    reasons = drop_reasons(gospan.summary_line())
    assert reasons.get("scratch_busy") == 3, gospan.summary_line()
