"""OTEL_TRACES_SAMPLER and OTEL_SDK_DISABLED: the decision is made where ids are chosen (BPF), so
what a request's caller is told and what is exported agree."""

import subprocess
import urllib.request

from conftest import _clean_env

CALLER_TRACE = "4bf92f3577b34da6a3ce929d0e0e4736"
CALLER_SPAN = "00f067aa0ba902b7"


def traced_requests(start_service, start_gospan, receiver, env, n=40, traceparent=None):
    svc = start_service()
    before = len(receiver.snapshot())
    g = start_gospan(svc.pid, receiver, env=env)
    g.wait_attached()
    for i in range(n):
        req = urllib.request.Request(f"{svc.base_url}/users/s{i}")
        if traceparent:
            req.add_header("traceparent", traceparent)
        with urllib.request.urlopen(req, timeout=10) as r:
            r.read()
    assert g.stop() == 0, g.stderr
    spans = [s for s in receiver.snapshot()[before:] if s.resource.get("process.pid") == svc.pid]
    return spans, g


def test_always_off_exports_nothing_and_counts_it(start_service, start_gospan, otlp_receiver):
    spans, g = traced_requests(start_service, start_gospan, otlp_receiver,
                               {"OTEL_TRACES_SAMPLER": "always_off"})
    assert spans == []
    assert "not sampled 40" in g.summary_line(), g.summary_line()


def test_ratio_keeps_about_that_share(start_service, start_gospan, otlp_receiver):
    spans, g = traced_requests(start_service, start_gospan, otlp_receiver,
                               {"OTEL_TRACES_SAMPLER": "traceidratio",
                                "OTEL_TRACES_SAMPLER_ARG": "0.5"}, n=200)
    # 200 independent trace ids at 0.5: outside 60..140 has probability below 1e-8.
    assert 60 <= len(spans) <= 140, (len(spans), g.summary_line())
    for s in spans:  # kept exactly when the id is below the bound, as the spec's sampler does
        assert int.from_bytes(s.trace_id[8:], "big") >> 1 < 2 ** 62


def test_parent_based_follows_the_caller(start_service, start_gospan, otlp_receiver):
    # The caller sampled: parentbased_always_off (roots off) still records the request.
    spans, _ = traced_requests(start_service, start_gospan, otlp_receiver,
                               {"OTEL_TRACES_SAMPLER": "parentbased_always_off"}, n=5,
                               traceparent=f"00-{CALLER_TRACE}-{CALLER_SPAN}-01")
    assert len(spans) == 5 and all(s.trace_id.hex() == CALLER_TRACE for s in spans)
    # The caller did not sample: always_on (not parent-based) records it anyway.
    spans, _ = traced_requests(start_service, start_gospan, otlp_receiver,
                               {"OTEL_TRACES_SAMPLER": "always_on"}, n=5,
                               traceparent=f"00-{CALLER_TRACE}-{CALLER_SPAN}-00")
    assert len(spans) == 5


def test_sdk_disabled_traces_nothing(gospan_bin, start_service):
    svc = start_service()
    res = subprocess.run([str(gospan_bin), "--pid", str(svc.pid)],
                         env={**_clean_env(), "OTEL_SDK_DISABLED": "true"},
                         capture_output=True, text=True, timeout=30)
    assert res.returncode == 0, res.stderr
    assert "OTEL_SDK_DISABLED is true: not tracing" in res.stderr
    assert "gospan: attached" not in res.stderr


def test_bad_sampler_settings_are_refused(gospan_bin, start_service):
    svc = start_service()
    for env, want in [({"OTEL_TRACES_SAMPLER": "jaeger_remote"}, "OTEL_TRACES_SAMPLER 'jaeger_remote'"),
                      ({"OTEL_TRACES_SAMPLER_ARG": "1.5"}, "OTEL_TRACES_SAMPLER_ARG '1.5'")]:
        res = subprocess.run([str(gospan_bin), "--pid", str(svc.pid)],
                             env={**_clean_env(), **env}, capture_output=True, text=True,
                             timeout=30)
        assert res.returncode != 0 and want in res.stderr, res.stderr
