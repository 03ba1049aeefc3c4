"""The kafka part: what gospan adds per Kafka message sent and consumed (bench/kafkaload: kafka-go,
franz-go, sarama) through a broker of its own."""

import os
import re
import shutil
import sys
import tempfile
import time
from pathlib import Path

from .runner import (CPU_OTHER, CPU_SERVICE, OUT, PIN, REPO, ROUNDS, SECONDS, WARMUP, OtherLoad,
                     Proc, bpf_figures, bpf_runs, bpf_stats_on, cpu_seconds, ensure_bpf_stats,
                     finish_load, fmt, free_ports, gospan_summary, gospan_warnings, log, median,
                     pinned, prog_names, run, start_gospan, stdin_run, steps_text,
                     threads_cpu_seconds)

# The Go programs the part runs, built into build/bench: {name: source directory}.
GO_PROGRAMS = {"kafkaload": "bench/kafkaload"}
# The kafka part: bench/kafkaload, the traced process itself, producing messages one call each
# and then consuming them, through a broker of the part's own (tests/e2e/kafka.py); one client
# per process, a topic of one partition per process.
KAFKALOAD = OUT / "kafkaload"
KAFKA_CLIENTS = (os.environ.get("BENCH_KAFKA_CLIENTS") or "kafkago,franz,sarama").split(",")
KAFKA_CLIENT_NAMES = {"kafkago": "segmentio/kafka-go", "franz": "twmb/franz-go",
                      "sarama": "IBM/sarama"}
# 16 in flight, sarama's AsyncProducer sends about 12,000 messages a second here: a run of this
# many a second of the others' length keeps its consumption (and the CONSUMER spans gospan
# exports at once) near the other sends', within gospan's export queue.
KAFKA_ASYNC16_PER_SECOND = 1000
KAFKA_CALLS = {
    "kafkago": {"produce": "`(*kafka.Writer).WriteMessages(ctx, msg)` of one message (`BatchSize: "
                           "1`, `RequiredAcks: kafka.RequireAll`)",
                "consume": "`(*kafka.Reader).ReadMessage(ctx)` on a partition reader (no group)"},
    "franz": {"produce": "`(*kgo.Client).ProduceSync(ctx, record)` of one record "
                         "(`kgo.ProducerBatchCompression(kgo.NoCompression())`, "
                         "`kgo.ProducerLinger(0)`)",
              "consume": "`(*kgo.Client).PollFetches(ctx)`, then `Fetches.EachRecord` (a "
                         "client consuming the partition, no group)"},
    "sarama": {"produce": "`SyncProducer.SendMessage(msg)` of one message "
                          "(`RequiredAcks: sarama.WaitForAll`)",
               "async": "an `AsyncProducer` made for the run (after gospan attached) sent one "
                        "message at a time on its `Input()` channel (`p.Input() <- msg`), each "
                        "one's result awaited on `Successes()` (`Return.Successes = true`) "
                        "before the next",
               "async16": f"the same with 16 messages in flight (one `select` sends on "
                          f"`Input()` or takes a result from `Successes()`), "
                          f"{KAFKA_ASYNC16_PER_SECOND} messages a second of the other sends' "
                          "length",
               "consume": "a `ConsumerGroup` (the process's own group) whose handler's "
                          "`ConsumeClaim` ranges over `claim.Messages()` and calls "
                          "`sess.MarkMessage(m, \"\")` for each"},
}
# The span kind of each operation at the receiver, and its name in the report.
KAFKA_KIND = {"produce": "producer", "async": "producer", "async16": "producer",
              "consume": "consumer"}
KAFKA_OP_NAMES = {"produce": "send", "async": "async send, 1 in flight",
                  "async16": "async send, 16 in flight", "consume": "consume"}
# kafkaload's line for a run of each operation: SECONDS of sends, or MESSAGES consumed.
KAFKA_LINES = {"produce": "produce -duration {seconds}s",
               "async": "async -duration {seconds}s -inflight 1",
               "async16": "async -messages {async16} -inflight 16",
               "consume": "consume -messages {messages}"}
KAFKA_CONFIGS = ["untraced", "gospan"]
KAFKA_SIZE = 128  # bytes of each message's value (its key is "key-N", N from 0 to 15)
KAFKA_SCHEDULE_DELAY_MS = 500  # as the db part's: each run's spans are waited for at its end


def start_kafka_broker():
    """The part's Apache Kafka broker, as the end-to-end tests start theirs: tests/e2e/kafka.py's
    KafkaBroker (KRaft, one node, the jars from its Maven Central cache, fetched the first time),
    on free loopback ports in a temporary directory. With pinning, on CPU_OTHER with gospan and
    the receiver, away from kafkaload (as the db part places its data stores)."""
    sys.path.insert(0, str(REPO / "tests" / "e2e"))
    import kafka as kafka_e2e
    home = Path(tempfile.mkdtemp(prefix="gospan-bench-kafka."))
    try:
        broker = kafka_e2e.broker_or_unavailable(home, *free_ports(2))
    except (kafka_e2e.Unavailable, AssertionError, OSError) as e:
        shutil.rmtree(home, ignore_errors=True)
        raise RuntimeError(f"cannot start it: {e}") from None
    broker.home, broker.version = home, kafka_e2e.KAFKA_VERSION
    try:
        if PIN:
            # -a: every thread of the JVM; the threads it makes later inherit the CPU.
            run(["taskset", "-a", "-p", "-c", CPU_OTHER, broker.proc.pid])
    except BaseException:
        stop_kafka_broker(broker)
        raise
    return broker


def stop_kafka_broker(broker):
    broker.stop()
    shutil.rmtree(broker.home, ignore_errors=True)


def start_kafkaload(client, broker, topic):
    """A fresh bench/kafkaload of CLIENT on the service's CPU, producing to and consuming from
    TOPIC (made here, one partition), once its producer is made ("kafkaload: ready")."""
    broker.create_topics(topic, partitions=1)
    argv = [KAFKALOAD, "-client", client, "-brokers", broker.bootstrap, "-topic", topic,
            "-size", KAFKA_SIZE]
    load = Proc(pinned(CPU_SERVICE, argv), stdin=True)
    try:
        load.wait_line(r"kafkaload: ready", timeout=60)
    except RuntimeError:
        load.stop()
        raise
    return load


def kafka_step(load, op, seconds, messages, tracer, names, receiver, broker):
    """One run of LOAD: OP "produce" for SECONDS, or "consume" of MESSAGES, with the CPU of every
    process read around it. With gospan, the run's spans of OP's kind are waited for at its end:
    gospan's CPU is counted until the receiver has them all."""
    ensure_bpf_stats()
    tpid = tracer.pid if tracer else None
    kind = KAFKA_KIND[op]
    spans0, kind0 = receiver.spans(), receiver.spans(kind)
    other = OtherLoad(load.pid, broker.proc.pid, receiver.proc.pid, tpid)
    k0 = cpu_seconds(broker.proc.pid)
    t0 = threads_cpu_seconds(tpid) if tpid else 0.0
    b0 = bpf_runs(tpid)
    line = KAFKA_LINES[op].format(seconds=seconds, messages=messages,
                                  async16=seconds * KAFKA_ASYNC16_PER_SECOND)
    w = stdin_run(load, line, (seconds or 10) + 90)
    r = {"other_load_cpus": other.cpus()}
    k1 = cpu_seconds(broker.proc.pid)
    b1 = bpf_runs(tpid)
    stats_kept = bpf_stats_on()
    r.update({k: w[k] for k in ("messages", "errors", "seconds", "rate", "p50_us", "p90_us",
                                "p99_us", "first_error", "group_seconds") if k in w})
    n = max(w["messages"], 1)
    if "group_cpu_us" in w:
        # sarama's group: making it, joining it and leaving it, once a run (kafkaload's CPU
        # per message is its claim's alone).
        r["group_cpu_ms"] = w["group_cpu_us"] / 1e3
    if "producer_cpu_us" in w:
        # An async run's AsyncProducer: made and closed once a run, outside its sends.
        r["producer_cpu_ms"] = w["producer_cpu_us"] / 1e3
        r["producer_seconds"] = w.get("producer_seconds")
    # A span is due for every send, failed or not, and for every message the client handed
    # over (franz-go's EachRecord hands over a poll's every record).
    r["spans_due"] = (w["messages"] + w["errors"] if kind == "producer"
                      else max(w.get("handed_over", 0), w["messages"]))
    if tracer:
        r["spans"] = receiver.wait_for(kind0 + r["spans_due"], kind=kind) - kind0
        r["other_spans"] = receiver.spans() - spans0 - r["spans"]
        r["spans_per_message"] = r["spans"] / n
    t1 = threads_cpu_seconds(tpid) if tpid else 0.0
    r["load_cpu_us"] = w["cpu_us"] / n  # kafkaload's own getrusage over the run
    r["tracer_cpu_us"] = (t1 - t0) * 1e6 / n
    r["broker_cpu_us"] = (k1 - k0) * 1e6 / n
    if tracer and stats_kept:
        r.update(bpf_figures(b0, b1, names, n, "message"))
    return r


def measure_kafka(client, cfg, broker, receiver, topic):
    """One round of one configuration of CLIENT: a fresh kafkaload on a new topic, gospan on it
    (if the configuration is gospan), a warm-up (WARMUP s of sends, then their consumption),
    then SECONDS of sends and the consumption of what they sent, each measured."""
    load = start_kafkaload(client, broker, topic)
    tracer, names, results = None, {}, {}
    life = {"messages": 0, "errors": 0, "spans_due": 0, "spans": 0, "other_spans": 0}
    try:
        if cfg == "gospan":
            tracer = start_gospan(load.pid, receiver,
                                  {"OTEL_BSP_SCHEDULE_DELAY": str(KAFKA_SCHEDULE_DELAY_MS)})
            names = prog_names()
        for seconds in (WARMUP, SECONDS):
            sent = 0  # what the sends of this pass sent, for its consumption
            for op in KAFKA_CALLS[client]:
                r = kafka_step(load, op, seconds, sent, tracer, names, receiver, broker)
                sent += r["messages"] if KAFKA_KIND[op] == "producer" else 0
                for k in life:
                    life[k] += r.get(k, 0)
                if r.get("first_error"):
                    life.setdefault("first_error", r["first_error"])
                if seconds == SECONDS:
                    results[op] = r
    finally:
        if tracer:
            tracer.stop()
        finish_load(load)
    life["rebalances"] = sum(1 for x in load.lines if "kafkaload: the group rebalanced" in x)
    if tracer:
        life.update(gospan_summary(tracer))
        life["warnings"] = gospan_warnings(tracer)
    return results, life, tracer.attached if tracer else None
KAFKA_KEYS = ["rate", "p50_us", "p90_us", "p99_us", "load_cpu_us", "tracer_cpu_us",
              "broker_cpu_us", "bpf_runs_per_message", "bpf_ns_per_run", "bpf_us_per_message",
              "spans_per_message", "other_load_cpus", "group_cpu_ms", "group_seconds",
              "producer_cpu_ms", "producer_seconds"]


def summarize_kafka(ka):
    """Medians per client, configuration and operation, and what gospan adds, from KA's runs."""
    for client, c in ka["clients"].items():
        if "runs" not in c:
            continue
        # The operations the runs have (a results.json of an earlier kafkaload may lack some).
        runs = c["runs"]
        ops = [op for op in KAFKA_CALLS[client] if op in runs["untraced"]] + \
            [op for op in runs["untraced"] if op not in KAFKA_CALLS[client]]
        med = {cfg: {op: {k: median([r.get(k) for r in runs[cfg][op]]) for k in KAFKA_KEYS}
                     for op in ops} for cfg in KAFKA_CONFIGS}
        added, spans = {}, {}
        for op in ops:
            base, g = med["untraced"][op], med["gospan"][op]
            # The median of the rounds' own differences too: both configurations ran in every
            # round, close in time, so other work on the machine weighs less on it.
            paired = [a["load_cpu_us"] - b["load_cpu_us"]
                      for a, b in zip(runs["gospan"][op], runs["untraced"][op])]
            added[op] = {"load_cpu_us": g["load_cpu_us"] - base["load_cpu_us"],
                         "load_cpu_us_paired": median(paired),
                         "total_cpu_us": g["load_cpu_us"] + g["tracer_cpu_us"]
                         - base["load_cpu_us"],
                         "rate_ratio": g["rate"] / base["rate"] if base["rate"] else None}
            rs = runs["gospan"][op]
            spans[op] = {k: sum(r.get(k, 0) for r in rs)
                         for k in ("messages", "spans_due", "spans", "other_spans")}
        c["median"], c["added"], c["spans"] = med, added, spans
    return ka


def kafka_problems(ka):
    """What is wrong with the part's runs; any of it fails the part (and make bench)."""
    bad = [ka["error"]] if ka.get("error") else []
    for client, c in ka["clients"].items():
        if c.get("error"):
            bad.append(f"{client}: {c['error']}")
            continue
        for cfg in KAFKA_CONFIGS:
            for rnd, life in enumerate(c["lifetimes"][cfg]):
                where = f"{client}, round {rnd + 1}, {cfg}"
                if life["errors"]:
                    bad.append(f"{where}: {life['errors']} sends or consumptions failed "
                               f"({life.get('first_error', '?')})")
                if cfg != "gospan":
                    continue
                if life["spans"] != life["spans_due"] or life["other_spans"] or life["dropped"]:
                    why = f" ({life['reasons']})" if life.get("reasons") else ""
                    bad.append(f"{where}: {life['spans_due']} PRODUCER and CONSUMER spans due "
                               f"(one a send, one a message handed over), the receiver got "
                               f"{life['spans']} of those kinds and {life['other_spans']} of "
                               f"others (gospan captured {life['captured']}, exported "
                               f"{life['exported']}, dropped {life['dropped']}{why})")
    return bad


def kafka_versions():
    """The module versions bench/kafkaload is built with, from its go.mod."""
    text = (REPO / "bench" / "kafkaload" / "go.mod").read_text()
    out = {}
    for mod, key in (("github.com/segmentio/kafka-go", "kafkago"),
                     ("github.com/twmb/franz-go", "franz"), ("github.com/IBM/sarama", "sarama")):
        m = re.search(rf"^\s*{re.escape(mod)} (\S+)", text, re.M)
        out[key] = m.group(1) if m else "?"
    return out


def measure(bins, receiver):
    log(f"kafka: {len(KAFKA_CLIENTS)} clients x {ROUNDS} rounds x {len(KAFKA_CONFIGS)} "
        f"configurations, {SECONDS} s of sends each, then their consumption; bench/kafkaload -> "
        "Apache Kafka; "
        + (f"kafkaload on CPU {CPU_SERVICE}, the broker, gospan and the receiver on CPU "
           f"{CPU_OTHER}" if PIN else "nothing pinned"))
    t_start = time.monotonic()
    load0 = Path("/proc/loadavg").read_text().split()[:3]
    out = {"rounds": ROUNDS, "seconds": SECONDS, "pinned": PIN, "size": KAFKA_SIZE,
           "versions": kafka_versions(), "schedule_delay_ms": KAFKA_SCHEDULE_DELAY_MS,
           "clients": {}}
    try:
        broker = start_kafka_broker()
    except Exception as e:  # noqa: BLE001 - the report says why, and the part fails
        out["error"] = f"the Kafka broker (tests/e2e/kafka.py): {e}"
        out["failed"] = kafka_problems(out)
        log(f"  KAFKA PART FAILED: {out['error']}")
        return out
    try:
        out["broker"] = {"version": broker.version, "bootstrap": broker.bootstrap,
                         "start_seconds": broker.start_seconds}
        for client in KAFKA_CLIENTS:
            c = out["clients"][client] = {}
            ops = list(KAFKA_CALLS[client])
            runs = {cfg: {op: [] for op in ops} for cfg in KAFKA_CONFIGS}
            lives = {cfg: [] for cfg in KAFKA_CONFIGS}
            attached = None
            try:
                for rnd in range(ROUNDS):
                    j = rnd % len(KAFKA_CONFIGS)
                    for cfg in KAFKA_CONFIGS[j:] + KAFKA_CONFIGS[:j]:
                        res, life, att = measure_kafka(client, cfg, broker, receiver,
                                                       f"bench-{client}-{rnd + 1}-{cfg}")
                        for op in ops:
                            runs[cfg][op].append(res[op])
                        lives[cfg].append(life)
                        attached = att or attached
                        log(f"  {client} round {rnd + 1} {cfg:8s} " + "  ".join(
                            f"{op}: {res[op]['rate']:6.0f}/s cpu {res[op]['load_cpu_us']:6.1f}"
                            f"+{res[op]['tracer_cpu_us']:4.1f} us"
                            + (f" spans {res[op]['spans']}/{res[op]['spans_due']}"
                               if "spans" in res[op] else "")
                            for op in ops)
                            + (f" dropped {life['dropped']}" if life.get("dropped") else "")
                            + (f"  errors {life['errors']}" if life["errors"] else ""))
            except RuntimeError as e:
                c["error"] = str(e)
                log(f"  {client}: {e}")
                continue
            c.update(runs=runs, lifetimes=lives, attached=attached)
    finally:
        stop_kafka_broker(broker)
    out["loadavg"] = [load0, Path("/proc/loadavg").read_text().split()[:3]]
    out["part_seconds"] = time.monotonic() - t_start
    summarize_kafka(out)
    failed = kafka_problems(out)
    if failed:
        out["failed"] = failed
        for p in failed:
            log(f"  KAFKA PART FAILED: {p}")
    for client, c in out["clients"].items():
        for op, a in (c.get("added") or {}).items():
            m = c["median"]
            log(f"  {client} {op}: kafkaload CPU per message untraced "
                f"{fmt(m['untraced'][op]['load_cpu_us'], '.2f')} us, gospan "
                f"{fmt(m['gospan'][op]['load_cpu_us'], '.2f')} us: added "
                f"{a['load_cpu_us']:+.2f} us (paired {fmt(a['load_cpu_us_paired'], '+.2f')}), "
                f"gospan's process {fmt(m['gospan'][op]['tracer_cpu_us'], '.2f')} us; spans "
                f"{c['spans'][op]['spans']}/{c['spans'][op]['spans_due']}"
                + (f"; the group, once a run: {fmt(m['untraced'][op]['group_cpu_ms'], '.1f')} / "
                   f"{fmt(m['gospan'][op]['group_cpu_ms'], '.1f')} ms"
                   if m["untraced"][op].get("group_cpu_ms") is not None else ""))
    log(f"  kafka part: {out['part_seconds']:.0f} s")
    return out


def kafka_costs(c):
    """What the added CPU per message of client C is made of, from its medians: the BPF
    programs' time, by program, and the rest (the uprobe traps and what they disturb)."""
    out = []
    for op, a in c["added"].items():
        g = c["median"]["gospan"][op]
        bpf, added = g["bpf_us_per_message"], a["load_cpu_us"]
        progs = {}
        for r in c["runs"]["gospan"][op]:
            for name, p in (r.get("bpf_programs") or {}).items():
                progs.setdefault(name, []).append(p)
        top = sorted(((median([p["runs_per_message"] for p in ps]),
                       median([p["ns_per_run"] for p in ps]), name) for name, ps in progs.items()),
                     key=lambda x: -x[0] * x[1])
        what = {"produce": "A send", "consume": "A message consumed"}.get(
            op, f"An {KAFKA_OP_NAMES[op]}")
        out.append(f"{what}: "
                   f"{fmt(added, '.1f')} µs added, of which the BPF programs take "
                   f"{fmt(bpf, '.1f')} µs ("
                   + ", ".join(f"`{name}` {runs:.2f} runs at {ns:.0f} ns" for runs, ns, name in top
                               if runs >= 0.05)
                   + ")"
                   + (f" and the rest, {added - bpf:.1f} µs, is the uprobe traps"
                      + (", the kernel's sk_msg path for the request's write (it copies the "
                         "data for the program)" if KAFKA_KIND[op] == "producer" else "")
                      + " and what they disturb"
                      if added is not None and bpf is not None and added > bpf else "")
                   + ".")
    progs = {name for op in c["added"] for r in c["runs"]["gospan"][op]
             for name in r.get("bpf_programs") or {}}
    return " ".join(out) + (" `write_trace_context` is the socket layer's program (sk_msg), "
                            "which puts `traceparent` into each record of the produce request "
                            "as it is written." if "produce" in c["added"] else "") + \
        (" `kafka_sarama_send` is the probe at each CALL of `runtime.chansend1` and "
         "`runtime.selectgo` in kafkaload's own code (its main module), which looks for a send "
         "on an `AsyncProducer`'s input: an async run hits it at each message's send and again "
         "at the `select` that takes its result; `kafka_sarama_input` (the dispatcher's "
         "receive) and `kafka_sarama_end` (the entry of `returnSuccesses`, once a batch) run "
         "for every message of every `AsyncProducer`, the one inside sarama's `SyncProducer` "
         "too: gospan probes them in a binary whose own code sends on channels, as kafkaload "
         "now does for its async runs." if "kafka_sarama_send" in progs else "") + \
        kafka_async_producer(c)


def kafka_async_producer(c):
    """What making and closing the AsyncProducer of client C's async runs costs, once a run."""
    once = [(op, c["median"]["untraced"][op].get("producer_cpu_ms"),
             c["median"]["gospan"][op].get("producer_cpu_ms")) for op in c["added"]
            if c["median"]["untraced"][op].get("producer_cpu_ms") is not None]
    if not once:
        return ""
    return (" Making an async run's `AsyncProducer` and closing it, once a run and outside "
            "its figures per message, took "
            + "; ".join(f"{fmt(u, '.1f')} ms of kafkaload's CPU untraced and {fmt(g, '.1f')} ms "
                        f"with gospan ({KAFKA_OP_NAMES[op]})" for op, u, g in once) + ".")


def kafka_group(c):
    """What client C's consumer group costs once a run, outside its figures per message."""
    med = {cfg: c["median"][cfg].get("consume") or {} for cfg in KAFKA_CONFIGS}
    if med["untraced"].get("group_cpu_ms") is None:
        return None
    u, g = med["untraced"], med["gospan"]
    msgs = median([r["messages"] for cfg in KAFKA_CONFIGS for r in c["runs"][cfg]["consume"]])
    rebalanced = sum(x.get("rebalances", 0) for cfg in KAFKA_CONFIGS
                     for x in c["lifetimes"][cfg])
    return ("The group, once a run and outside the figures per message: making the "
            "`ConsumerGroup`, joining the group, and after the claim committing the offsets, "
            f"leaving the group and closing it took {fmt(u['group_cpu_ms'], '.1f')} ms of "
            f"kafkaload's CPU untraced and {fmt(g['group_cpu_ms'], '.1f')} ms with gospan "
            f"(in {fmt(u['group_seconds'], '.2f')} s and {fmt(g['group_seconds'], '.2f')} s)"
            + (f", or {u['group_cpu_ms'] * 1e3 / msgs:.1f} µs and "
               f"{fmt(g['group_cpu_ms'] * 1e3 / msgs if g['group_cpu_ms'] else None, '.1f')} µs "
               f"a message were it spread over a run's {msgs:.0f} messages" if msgs else "")
            + ". "
            + (f"The group rebalanced during {rebalanced} of the runs (a join then falls "
               "inside the claim)." if rebalanced else
               "The group never rebalanced during a run (one session a run)."))


def section(ka):
    """The kafka part's section of the report."""
    L = ["## Kafka clients", ""]
    if ka.get("error"):
        return L + [f"Not measured: {ka['error']}.", ""]
    ks = list(ka["clients"])  # the clients measured (BENCH_KAFKA_CLIENTS)
    v, clients = ka["versions"], [c for c in ka["clients"].values() if "median" in c]
    other = median([c["median"][cfg][op]["other_load_cpus"] for c in clients
                    for cfg in KAFKA_CONFIGS for op in c["median"][cfg]])
    load0, load1 = ka["loadavg"]
    busy = float(load0[0]) >= 0.7 or (other or 0) >= 0.25
    L += ["What gospan adds to each Kafka message a Go program sends and receives. "
          "`bench/kafkaload`, a program with Kafka clients and no server, is itself the traced "
          "process: one client per process, it sends messages one at a time, one call (or, to "
          "sarama's `AsyncProducer`, one channel send) each, one after another "
          f"({ka['size']}-byte values, small keys), then consumes what it sent, through an "
          f"Apache Kafka {(ka.get('broker') or {}).get('version', '')} broker of the part's own "
          "on loopback (KRaft, one node, started as the end-to-end tests start theirs, "
          "`tests/e2e/kafka.py`), a new topic of one partition for each process. The clients: "
          + "; ".join(f"*{KAFKA_CLIENT_NAMES[k]}* {v[k]}: "
                      + "; ".join(d for op, d in KAFKA_CALLS[k].items() if op != "consume")
                      + ", consumed with " + KAFKA_CALLS[k]["consume"] for k in ks)
          + ". A consumer is made for each consumption and closed at its end, so that nothing "
          "fetches in the background while messages are sent (and so that sarama's claim "
          "begins after gospan attached: gospan learns a claim's channel as it begins, and "
          "every message of it is traced); sarama's `AsyncProducer` likewise for each async "
          "run (gospan learns its input channel from `newAsyncProducer`'s return, so every "
          "message sent on it is traced). Two configurations alternated over "
          f"{ka['rounds']} rounds, a fresh kafkaload each time: a {WARMUP} s warm-up (sends, "
          f"then their consumption), then {ka['seconds']} s of sends (each kind of send in "
          "turn) and the consumption of what they sent; medians. *untraced*: kafkaload alone. *gospan*: gospan attached to "
          "it, exporting to `bench/receiver` "
          f"(`OTEL_BSP_SCHEDULE_DELAY={ka['schedule_delay_ms']}`: at each run's end its spans "
          "are waited for, and gospan's CPU is counted until the receiver has them all). "
          + (f"kafkaload runs on CPU {CPU_SERVICE} (so its Go runtime sees one CPU); the "
             f"broker, gospan and the receiver on CPU {CPU_OTHER}. " if ka["pinned"]
             else "Nothing is pinned. ")
          + "CPU per message is kafkaload's own user and system time over the run (getrusage, "
          "to the microsecond) divided by the messages sent, or consumed: it includes the "
          "uprobe traps and the BPF programs, which run in the calling thread. For sarama's "
          "consumer group the run measured is its claim: from the handler's `Setup` (the "
          "group joined, the partition assigned) to `ConsumeClaim`'s return after the run's "
          "last message. Making the group, joining it, committing its offsets and leaving it "
          "are once a run however many messages it has; they are given apart (*group*, "
          "below), not spread over the messages. An async run's is its sends, from the first "
          "send to the last result; making and closing its `AsyncProducer` are given apart "
          "too. *Added* is "
          "gospan's median less untraced's (in brackets the median of each round's own "
          "difference). *gospan process* is gospan's own CPU per message (its threads' "
          "`schedstat`). BPF figures are the kernel's run counters of gospan's programs "
          "(`kernel.bpf_stats_enabled=1`). *Spans per message* is what the receiver got of "
          "the operation's kind (PRODUCER for sends, CONSUMER for consumption) over the "
          "messages. *Broker* is the Kafka broker's CPU per message. *Other load* is the CPU "
          "the rest of the machine used meanwhile (`/proc/stat`, less kafkaload, the broker, "
          "gospan, the receiver and the driver), in CPUs.", "",
          f"Load average at the part's start {' '.join(load0)}, at its end {' '.join(load1)}; "
          f"median other load during the runs {fmt(other, '.2f')} CPUs. "
          + ("**The part ran on a busy machine**: other work competed for the CPUs, which adds "
             "noise to every figure; the configurations alternated within each round, so it "
             "weighs on them alike, but the differences are less certain than on a quiet "
             "machine." if busy else "The machine was quiet.")
          + f" The part took {ka['part_seconds'] / 60:.1f} min.", ""]
    L += ["| client | CPU µs per message sent, untraced | **added by gospan** | gospan "
          "process | CPU µs per message consumed, untraced | **added by gospan** | gospan "
          "process |", "|---|---:|---:|---:|---:|---:|---:|"]
    for k in ks:
        c = ka["clients"].get(k) or {}
        if "median" not in c:
            L.append(f"| {KAFKA_CLIENT_NAMES[k]} | not measured: {c.get('error', 'no runs')} "
                     "| | | | | |")
            continue

        def cells(op):
            if op not in c["added"]:
                return ["-", "-", "-"]
            a, u, g = c["added"][op], c["median"]["untraced"][op], c["median"]["gospan"][op]
            return [fmt(u["load_cpu_us"], ".2f"),
                    f"**{fmt(a['load_cpu_us'], '+.2f')}** "
                    f"({fmt(a['load_cpu_us_paired'], '+.2f')})",
                    fmt(g["tracer_cpu_us"], ".2f")]
        L.append(f"| {KAFKA_CLIENT_NAMES[k]} | "
                 + " | ".join(cells("produce") + cells("consume")) + " |")
        # Sends of other kinds (sarama's AsyncProducer) have a row each, without consumption.
        for op in c["added"]:
            if op != "produce" and KAFKA_KIND.get(op) == "producer":
                L.append(f"| {KAFKA_CLIENT_NAMES[k]}, {KAFKA_OP_NAMES[op]} | "
                         + " | ".join(cells(op) + ["-", "-", "-"]) + " |")
    L.append("")
    for k in ks:
        c = ka["clients"].get(k) or {}
        if "median" not in c:
            continue
        L += [f"### {KAFKA_CLIENT_NAMES[k]} {v[k]}", "",
              "| operation | messages/s untraced / gospan | p50 µs a send untraced / gospan | "
              "kafkaload CPU µs/message untraced / gospan | **added CPU µs/message** | gospan "
              "process CPU µs/message | BPF runs/message | BPF µs/message (ns/run) | "
              "spans/message | broker CPU µs/message | other load |",
              "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
        for op in c["added"]:
            u, g, a = c["median"]["untraced"][op], c["median"]["gospan"][op], c["added"][op]
            L.append(f"| {KAFKA_OP_NAMES.get(op, op)} | {fmt(u['rate'], '.0f')} / "
                     f"{fmt(g['rate'], '.0f')} | "
                     + (f"{fmt(u['p50_us'], '.0f')} / {fmt(g['p50_us'], '.0f')}"
                        if KAFKA_KIND.get(op) == "producer" else "-")
                     + f" | {fmt(u['load_cpu_us'], '.2f')} / {fmt(g['load_cpu_us'], '.2f')} | "
                     f"**{fmt(a['load_cpu_us'], '+.2f')}** "
                     f"({fmt(a['load_cpu_us_paired'], '+.2f')}) | "
                     f"{fmt(g['tracer_cpu_us'], '.2f')} | "
                     f"{fmt(g['bpf_runs_per_message'], '.2f')} | "
                     f"{fmt(g['bpf_us_per_message'], '.2f')} "
                     f"({fmt(g['bpf_ns_per_run'], '.0f')}) | "
                     f"{fmt(g['spans_per_message'], '.3f')} | "
                     f"{fmt(median([u['broker_cpu_us'], g['broker_cpu_us']]), '.1f')} | "
                     f"{fmt(median([u['other_load_cpus'], g['other_load_cpus']]), '.2f')} |")
        L += ["", kafka_costs(c)]
        group = kafka_group(c)
        if group:
            L += ["", group]
        life = {x: sum(v_.get(x, 0) for v_ in c["lifetimes"]["gospan"])
                for x in ("messages", "spans_due", "spans", "other_spans", "captured",
                          "exported", "dropped")}
        sp = c["spans"]
        L += ["", "Spans over the measured runs: "
              + "; ".join(f"{sp[op]['messages']} messages "
                          + ("consumed" if op == "consume" else
                             "sent" if op == "produce" else f"sent ({KAFKA_OP_NAMES[op]})")
                          + ", "
                          f"{sp[op]['spans']} {KAFKA_KIND[op].upper()} spans of "
                          f"{sp[op]['spans_due']} due" for op in sp)
              + f". Over the traced kafkaloads' lives (warm-ups included) gospan captured "
              f"{life['captured']}, exported {life['exported']}, dropped {life['dropped']}; the "
              f"receiver got {life['spans']} PRODUCER and CONSUMER spans of {life['spans_due']} "
              f"due (one a send, one a message handed over) and {life['other_spans']} of other "
              "kinds.", ""]
    att = next((c["attached"] for c in clients if c.get("attached")), None)
    if att:
        L += [f"gospan's attach line (the same binary for every client): `{att}`", ""]
    said = []
    for c in clients:
        for w in (w for x in c["lifetimes"]["gospan"] for w in x.get("warnings", [])):
            w = re.sub(r"/proc/\d+/", "/proc/PID/", re.sub(r"\bprocess \d+", "process PID", w))
            if w not in said:
                said.append(w)
    if said:
        L += ["What else gospan said (pids replaced by PID):", "", "```", *said, "```", ""]
    if ka.get("failed"):
        L += ["**The part's checks failed** (`make bench` exits 1):", ""] + \
             [f"- {p}" for p in ka["failed"]] + [""]
    return L


def load(ka):
    """KA as results.json holds it, summed up."""
    summarize_kafka(ka)


def per_call(ka, results):
    """The cost-per-call rows of the Kafka clients: gospan over the untraced kafkaload, each
    kind of send and the consumption, per message."""
    libs = {"kafkago": ("kafka-go", "send", "message"),
            "franz": ("franz-go", "sync send", "record"), "sarama": ("sarama", "send", "message")}
    rows = []
    for client, c in ka["clients"].items():
        lib, send, message = libs[client]
        for op, a in (c.get("added") or {}).items():
            rows.append({"family": f"Kafka: {KAFKA_CLIENT_NAMES[client]} "
                                   f"{ka['versions'].get(client, '')}".rstrip(),
                         "call": f"a message, {KAFKA_OP_NAMES[op]}",
                         "added": [a["load_cpu_us"]],
                         "tracer": [c["median"]["gospan"][op]["tracer_cpu_us"]],
                         "steps": steps_text(c.get("attached"), (lib, message if op == "consume"
                                                                 else send)),
                         "section": "Kafka clients"})
    return rows
