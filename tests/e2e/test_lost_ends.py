"""A call whose end never reaches gospan: its goroutine's entry leaves the BPF `goroutines` map
mid-request, as an LRU eviction would take it, here by bpftool on this gospan's own map.

ServeHTTP's end then finds no entry: BPF counts it (end_without_entry) and sends nothing. The
call gospan holds open is lost, not long (BPF no longer holds it), so once it has been in flight
past --max-pending-age it is dropped and counted (end_lost), and no span is made up for it. Before
both were counted, the call stayed in flight until gospan stopped, and nothing said why.
"""
import json
import re
import subprocess
import threading
import time
import urllib.request
from pathlib import Path

import pytest

from conftest import drop_reasons, wait_until


def _bpftool(*args):
    out = subprocess.run(["bpftool", "-j", *args], check=True, capture_output=True, text=True)
    return json.loads(out.stdout or "null")


def _goroutines_map_id(gospan_pid):
    """The id of the `goroutines` map of the gospan of GOSPAN_PID (other gospans may run): of
    the maps its file descriptors hold, as /proc/PID/fdinfo says."""
    fds = Path(f"/proc/{gospan_pid}/fdinfo")
    for info in fds.iterdir():
        try:
            m = re.search(r"^map_id:\s*(\d+)", info.read_text(), re.M)
        except OSError:
            continue
        if m and _bpftool("map", "show", "id", m.group(1)).get("name") == "goroutines":
            return int(m.group(1))
    return None


def _evict_all(map_id):
    """Deletes every entry of map MAP_ID, as the LRU map would evict them; how many it held."""
    entries = _bpftool("map", "dump", "id", str(map_id)) or []
    for e in entries:
        key = e["key"] if isinstance(e["key"], list) else e["key"].split()
        subprocess.run(["bpftool", "map", "delete", "id", str(map_id), "key", "hex", *[
            k[2:] if k.startswith("0x") else k for k in key]], check=True)
    return len(entries)


def test_an_evicted_call_is_counted_and_ended_as_lost(start_service, start_gospan, otlp_receiver):
    if subprocess.run(["bpftool", "version"], capture_output=True).returncode:
        pytest.skip("bpftool is needed to take an entry out of the goroutines map")
    svc = start_service()
    gospan = start_gospan(svc.pid, otlp_receiver, args=("--max-pending-age", "1"))
    gospan.wait_attached()
    map_id = _goroutines_map_id(gospan.proc.pid)
    assert map_id is not None, "no goroutines map of this gospan in 'bpftool map show'"

    got = {}

    def slow():
        with urllib.request.urlopen(f"{svc.base_url}/sleep/1500", timeout=10) as r:
            got["status"] = r.status

    t = threading.Thread(target=slow)
    t.start()
    # The call is in flight once its goroutine's entry is in the map.
    assert wait_until(lambda: _bpftool("map", "dump", "id", str(map_id)), 1.0)
    assert _evict_all(map_id) >= 1
    t.join()
    assert got.get("status") == 200
    # Past the bound (1 s) and a tick of gospan's (records__tick, every 0.5 s).
    time.sleep(2.0)
    gospan.stop_cleanly()
    summary = gospan.summary_line()
    reasons = drop_reasons(summary)
    assert reasons.get("end_without_entry") == 1, summary
    assert reasons.get("end_lost") == 1, summary
    assert "in_flight_at_exit" not in reasons, summary
    # Nothing was made up for it: no span of /sleep reached the receiver.
    names = [s.name for s in otlp_receiver.snapshot()]
    assert not any("sleep" in n for n in names), names
