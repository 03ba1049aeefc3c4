"""The db part: what gospan adds per data store call (bench/dbload: database/sql + lib/pq, pgx,
go-redis) against a PostgreSQL and a Redis of its own."""

import re
import sys
import time
from pathlib import Path

from .runner import (CPU_OTHER, CPU_SERVICE, OUT, PIN, REPO, ROUNDS, SECONDS, WARMUP, Proc,
                     bpf_figures, bpf_runs, bpf_stats_on, cpu_seconds, ensure_bpf_stats,
                     finish_load, fmt, free_ports, gospan_summary, gospan_warnings, log,
                     machine_busy_seconds, median, own_cpu_seconds, pinned, prog_names, run,
                     start_gospan, stdin_run, steps_text, threads_cpu_seconds, threads_wait_seconds)

# The Go programs the part runs, built into build/bench: {name: source directory}.
GO_PROGRAMS = {"dbload": "bench/dbload"}
# The db part: bench/dbload, the traced process itself, making data store calls from 1 and 16
# goroutines against a PostgreSQL and a Redis of the part's own; one kind of call per process.
DBLOAD = OUT / "dbload"
DB_KINDS = ["sql", "pgx", "redis"]
DB_KIND_NAMES = {"sql": "database/sql + lib/pq", "pgx": "pgx v5, native API (pgxpool)",
                 "redis": "go-redis v9"}
# Where gospan puts a kind's end when none of its hits is single-stepped (docs/datastores.md).
DB_EMULATED_ENDS = {"sql": "gospan puts the end in database/sql's callers",
                    "pgx": "gospan puts the end inside Query, right after the pgconn call that "
                           "sends the query",
                    "redis": "gospan probes the end of go-redis's processor off its RETs"}
DB_CALLS = {"sql": '`db.QueryContext(ctx, "SELECT id, name FROM items WHERE id = 42")`, the '
                   'row read with `Scan`',
            "pgx": '`pool.Query(ctx, "SELECT id, name FROM items WHERE id = 42")`, the row read '
                   'with `Scan`',
            "redis": '`rdb.Get(ctx, "dbload:key")`, a 32-byte value'}
DB_CONFIGS = ["untraced", "gospan"]
DB_CONCURRENCY = [1, 16]
# Calls per second in all at each concurrency (0: as fast as they go). On a 2-CPU machine the data
# stores share a CPU with gospan and the receiver: 16 goroutines unpaced keep PostgreSQL's
# backends on it busy all the time, gospan waits for it for most of each second and its ring
# buffer overflows, which measures the machine, not gospan. Paced, the CPU per call still is.
DB_RATE = {1: 0, 16: 8000}
DB_POOL = max(DB_CONCURRENCY)  # connections dbload opens at start, before anyone traces it
DB_SPAN = {"sql": "SELECT items", "pgx": "SELECT items", "redis": "GET"}
# The part of gospan's attach line for each kind: "+ SQL (database/sql; single-stepped hits: 0
# a query)", "+ pgx (v5.12.0, offsets from DWARF; single-stepped hits: 1 a query)", "+ Redis
# (go-redis v9.23.0, ...; single-stepped hits: 0 a command, 1 a pipeline)".
DB_ATTACH = {"sql": "SQL", "pgx": "pgx", "redis": "Redis"}
DB_CHECK_CALLS = 200  # calls whose spans gospan's console exporter prints, per kind
DB_CHECK_CONCURRENCY = 8
# gospan's batch timer in this part: each run's spans are waited for at its end, so that a run's
# export is counted in its own gospan CPU and the next run starts with nothing queued. At these
# call rates batches fill (512 spans) well before the timer.
DB_SCHEDULE_DELAY_MS = 500


class Datastores:
    """A PostgreSQL and a Redis of the part's own, on loopback in temporary directories, started
    and stopped by the end-to-end tests' own session fixtures (tests/e2e/datastores.py, the
    generator functions under pytest's decorator, called here without pytest): PostgreSQL as the
    `postgres` user under root, trust authentication, database `gospan`; Redis persisting
    nothing. With pinning, both go to CPU_OTHER, away from dbload, with gospan and the receiver
    (as the other parts put the tracer with the load generator)."""

    def __init__(self):
        sys.path.insert(0, str(REPO / "tests" / "e2e"))
        import datastores as ds
        self._gens = []
        self.pg = self._start(ds.postgres_server)
        try:
            self.redis = self._start(ds.redis_server)
            info = self.redis.command("INFO", "server")
            self.redis_pid = int(re.search(r"^process_id:(\d+)", info, re.M).group(1))
            self.redis_version = re.search(r"^redis_version:(\S+)", info, re.M).group(1)
            if PIN:
                for pid in self.pg_pids() + [self.redis_pid]:
                    # -a: every thread; backends forked later inherit the postmaster's CPUs.
                    run(["taskset", "-a", "-p", "-c", CPU_OTHER, pid])
        except BaseException:
            self.stop()
            raise

    def _start(self, fixture):
        import pytest
        gen = getattr(fixture, "__wrapped__", fixture)(lambda: free_ports(1)[0])
        try:
            server = next(gen)
        except pytest.skip.Exception as e:
            raise RuntimeError(f"cannot start it: {e.msg}") from None
        self._gens.append(gen)
        return server

    def pg_pids(self):
        """The postmaster (from its postmaster.pid) and its children: the backends, one per
        connection, and the background processes."""
        pm = int((self.pg.dir / "data" / "postmaster.pid").read_text().split()[0])
        pids = [pm]
        for stat in Path("/proc").glob("[0-9]*/stat"):
            try:
                if int(stat.read_text().rsplit(")", 1)[1].split()[1]) == pm:
                    pids.append(int(stat.parent.name))
            except (OSError, ValueError, IndexError):
                pass  # a process that ended meanwhile
        return pids

    def cpu_seconds(self):
        """utime+stime of the PostgreSQL processes and Redis: what the calls cost the servers."""
        total = 0.0
        for pid in self.pg_pids() + [self.redis_pid]:
            try:
                total += cpu_seconds(pid)
            except (OSError, IndexError):
                pass
        return total

    def stop(self):
        # Each fixture's finally: pg_ctl stop (or a kill), the temporary directory removed.
        for gen in reversed(self._gens):
            gen.close()
        self._gens = []


def start_dbload(kind, stores):
    """A fresh bench/dbload of KIND on the service's CPU, runs read from its stdin, once it made
    its table or key and opened its DB_POOL connections ("dbload: ready")."""
    argv = [DBLOAD, "-kind", kind, "-pg", stores.pg.dsn, "-redis", stores.redis.addr,
            "-pool", DB_POOL, "-stdin"]
    load = Proc(pinned(CPU_SERVICE, argv), stdin=True)
    try:
        load.wait_line(r"dbload: ready", timeout=60)
    except RuntimeError:
        load.stop()
        raise
    return load


def dbload_run(load, concurrency, seconds=None, calls=None, rate=0):
    """One run of LOAD (a dbload reading its runs from stdin): CONCURRENCY goroutines for SECONDS
    or CALLS calls in all, paced to RATE calls per second (0: unpaced); its JSON line, with
    "requests" for the calls it made (those in flight at the end are waited for and counted)."""
    line = f"-concurrency {concurrency} " + (f"-calls {calls}" if calls
                                             else f"-duration {seconds}s")
    if rate:
        line += f" -rate {rate}"
    res = stdin_run(load, line, (seconds or 10) + 60)
    res["requests"] = res["calls"]
    return res


def db_steps(attached, kind):
    """(single-stepped hits a call, the attach line's words on KIND) from gospan's attach line;
    the hits are None when the line says there is no probe (or says nothing of KIND)."""
    m = re.search(rf" \+ {DB_ATTACH[kind]} \(([^)]*?single-stepped hits: (\S+|no probe for) a "
                  r"(?:query|command)(?:, [^)]*)?)\)", attached or "")
    if not m:
        return None, None
    return (int(m.group(2)) if m.group(2).isdigit() else None), m.group(1)


def db_expected_label(kind, stores):
    """The console exporter's label of KIND's span: kind, name, and the server's address as the
    client was configured with it (lib/pq's Config, pgx's config, go-redis's options): dbload's
    DSN or address, so a span naming any other server fails the check."""
    label = f"CLIENT {DB_SPAN[kind]}"
    if kind in ("sql", "pgx"):
        label += f" -> {stores.pg.host}:{stores.pg.port}"
    elif kind == "redis":
        label += f" -> {stores.redis.addr}"
    return label


def console_labels(text):
    """{label: count} of the span lines of gospan's console exporter in TEXT: kind, name, HTTP
    status, ERROR and its type, a CLIENT span's peer, as the tree line shows them."""
    labels = {}
    for m in re.finditer(r"^\s+((?:SERVER|CLIENT|INTERNAL|PRODUCER|CONSUMER|UNSPECIFIED) .*?)"
                         r"(?: \.+)? +-?[\d.]+ ms \|", text, re.M):
        labels[m.group(1)] = labels.get(m.group(1), 0) + 1
    return labels


def db_span_check(kind, stores, receiver):
    """What gospan makes of DB_CHECK_CALLS calls of KIND, read from its console exporter: one
    span labelled as db_expected_label() per call is right; anything else is counted by label."""
    load = start_dbload(kind, stores)
    g = None
    try:
        g = start_gospan(load.pid, receiver, {"OTEL_TRACES_EXPORTER": "console"})
        w = dbload_run(load, DB_CHECK_CONCURRENCY, calls=DB_CHECK_CALLS)
    finally:
        if g:
            g.stop()  # the console exporter prints what it holds at exit
        finish_load(load)
    steps, words = db_steps(g.attached, kind)
    return {"calls": w["requests"], "errors": w["errors"], "first_error": w.get("first_error"),
            "want": db_expected_label(kind, stores), "spans": console_labels(g.text()),
            "summary": gospan_summary(g), "attached": g.attached, "steps": steps,
            "attach_words": words, "warnings": gospan_warnings(g)}


def measure_db(kind, cfg, stores, receiver):
    """One round of one configuration of KIND: a fresh dbload, gospan on it (if the
    configuration is gospan), a warm-up, then a run per concurrency with the CPU of every
    process read around it. With gospan, each run's spans are waited for at its end: gospan's
    CPU is counted until the receiver has them all, and the spans a run brought are its own."""
    load = start_dbload(kind, stores)
    tracer, names, results = None, {}, {}
    life = {"requests": 0, "errors": 0, "received": 0}
    try:
        if cfg == "gospan":
            tracer = start_gospan(load.pid, receiver,
                                  {"OTEL_BSP_SCHEDULE_DELAY": str(DB_SCHEDULE_DELAY_MS)})
            names = prog_names()
        spans0 = receiver.spans()
        w = dbload_run(load, max(DB_CONCURRENCY), seconds=WARMUP,
                       rate=DB_RATE[max(DB_CONCURRENCY)])
        life["requests"] += w["requests"]
        life["errors"] += w["errors"]
        if w.get("first_error"):
            life.setdefault("first_error", w["first_error"])
        if tracer:
            life["received"] += receiver.wait_for(spans0 + w["requests"]) - spans0
        for conc in DB_CONCURRENCY:
            ensure_bpf_stats()
            tpid = tracer.pid if tracer else None
            spans0 = receiver.spans()
            s0, r0, d0 = cpu_seconds(load.pid), cpu_seconds(receiver.proc.pid), stores.cpu_seconds()
            t0 = threads_cpu_seconds(tpid) if tpid else 0.0
            q0 = threads_wait_seconds(tpid) if tpid else 0.0
            rq0 = threads_wait_seconds(receiver.proc.pid)
            b0 = bpf_runs(tpid)
            m0, o0, c0 = machine_busy_seconds(), own_cpu_seconds(), time.monotonic()
            w = dbload_run(load, conc, seconds=SECONDS, rate=DB_RATE[conc])
            m1, o1, c1 = machine_busy_seconds(), own_cpu_seconds(), time.monotonic()
            s1, d1 = cpu_seconds(load.pid), stores.cpu_seconds()
            tm = threads_cpu_seconds(tpid) if tpid else 0.0
            qm = threads_wait_seconds(tpid) if tpid else 0.0
            rqm = threads_wait_seconds(receiver.proc.pid)
            rm = cpu_seconds(receiver.proc.pid)
            b1 = bpf_runs(tpid)
            stats_kept = bpf_stats_on()
            n = max(w["requests"], 1)
            r = {k: w[k] for k in ("requests", "errors", "rows", "rps", "p50_us", "p90_us",
                                   "p99_us", "p999_us")}
            if tracer:
                # The run's spans, and gospan's CPU until they are all at the receiver.
                r["received"] = receiver.wait_for(spans0 + w["requests"]) - spans0
                r["spans_per_call"] = r["received"] / n
                life["received"] += r["received"]
            t1 = threads_cpu_seconds(tpid) if tpid else 0.0
            r1 = cpu_seconds(receiver.proc.pid)
            life["requests"] += w["requests"]
            life["errors"] += w["errors"]
            if w.get("first_error"):
                life.setdefault("first_error", w["first_error"])
            r["load_cpu_us"] = (s1 - s0) * 1e6 / n
            r["tracer_cpu_us"] = (t1 - t0) * 1e6 / n
            r["receiver_cpu_us"] = (r1 - r0) * 1e6 / n
            r["server_cpu_us"] = (d1 - d0) * 1e6 / n
            # Everything else the machine did meanwhile (other people's work), in CPUs: dbload,
            # the data stores, the tracer, the receiver and this script are ours.
            ours = (s1 - s0) + (d1 - d0) + (tm - t0) + (rm - r0) + (o1 - o0)
            r["other_load_cpus"] = max(m1 - m0 - ours, 0.0) / (c1 - c0)
            if tracer:
                # A starved reader is what fills the ring buffer and the export queue.
                r["tracer_wait_ms_per_s"] = (qm - q0) * 1e3 / (c1 - c0)
                r["receiver_wait_ms_per_s"] = (rqm - rq0) * 1e3 / (c1 - c0)
            if tracer and stats_kept:
                r.update(bpf_figures(b0, b1, names, n, "call"))
            results[conc] = r
    finally:
        if tracer:
            tracer.stop()
        finish_load(load)
    if tracer:
        life.update(gospan_summary(tracer))
        life["warnings"] = gospan_warnings(tracer)
    else:
        del life["received"]
    return results, life, tracer.attached if tracer else None


def summarize_db(db):
    """Medians per kind, configuration and concurrency, and what gospan adds, from DB's runs."""
    keys = ["rps", "p50_us", "p90_us", "p99_us", "p999_us", "load_cpu_us", "tracer_cpu_us",
            "receiver_cpu_us", "server_cpu_us", "bpf_runs_per_call", "bpf_ns_per_run",
            "bpf_us_per_call", "other_load_cpus", "tracer_wait_ms_per_s",
            "receiver_wait_ms_per_s"]
    for kind, k in db["kinds"].items():
        if "runs" not in k:
            continue
        runs, med, added, spans = k["runs"], {}, {}, {}
        for cfg in DB_CONFIGS:
            med[cfg] = {}
            for n in db["concurrency"]:
                m = {x: median([r.get(x) for r in runs[cfg][n]]) for x in keys}
                progs = {}
                for r in runs[cfg][n]:
                    for name, v in (r.get("bpf_programs") or {}).items():
                        progs.setdefault(name, []).append(v)
                m["bpf_programs"] = {name: {x: median([v[x] for v in vs]) for x in vs[0]}
                                     for name, vs in progs.items()}
                med[cfg][n] = m
        for n in db["concurrency"]:
            base, g = med["untraced"][n], med["gospan"][n]
            # The median of the rounds' own differences too: both configurations ran in every
            # round, close in time, so other work on the machine weighs less on it.
            paired = [a["load_cpu_us"] - b["load_cpu_us"]
                      for a, b in zip(runs["gospan"][n], runs["untraced"][n])]
            added[n] = {"load_cpu_us": g["load_cpu_us"] - base["load_cpu_us"],
                        "load_cpu_us_paired": median(paired),
                        "total_cpu_us": g["load_cpu_us"] + g["tracer_cpu_us"] - base["load_cpu_us"],
                        "p50_us": g["p50_us"] - base["p50_us"],
                        "rps_ratio": g["rps"] / base["rps"] if base["rps"] else None}
            calls = sum(r["requests"] for r in runs["gospan"][n])
            got = sum(r.get("received", 0) for r in runs["gospan"][n])
            spans[n] = {"calls": calls, "received": got, "per_call": got / calls if calls else None}
        lives = k["lifetimes"]["gospan"]
        life = {x: sum(v.get(x, 0) for v in lives) for x in ("requests", "received", "captured",
                                                             "exported", "dropped")}
        life["per_call"] = life["received"] / life["requests"] if life["requests"] else None
        k["median"], k["added"], k["spans"], k["spans_life"] = med, added, spans, life
    return db


def db_problems(db):
    """What is wrong with the part's runs; any of it fails the part (and make bench)."""
    bad = []
    if db.get("error"):
        bad.append(db["error"])
    for kind, k in db["kinds"].items():
        if k.get("error"):
            bad.append(f"{kind}: {k['error']}")
            continue
        chk = k["check"]
        want = chk["want"]
        got = chk["spans"].get(want, 0)
        other = {x: v for x, v in chk["spans"].items() if x != want}
        if chk["errors"] or got != chk["calls"] or other:
            bad.append(f"{kind}: span check: {chk['calls']} calls ({chk['errors']} failed"
                       + (f": {chk['first_error']}" if chk.get("first_error") else "")
                       + f"), gospan's console exporter printed {got} '{want}'"
                       + (", and " + ", ".join(f"{v} '{x}'" for x, v in other.items())
                          if other else ""))
        if chk["steps"] is None:
            bad.append(f"{kind}: gospan's attach line says no single-stepped hits for "
                       f"{DB_ATTACH[kind]}: {chk['attached']}")
        for cfg in DB_CONFIGS:
            for rnd, life in enumerate(k["lifetimes"][cfg]):
                if life.get("errors"):
                    bad.append(f"{kind}, round {rnd + 1}, {cfg}: {life['errors']} calls failed "
                               f"({life.get('first_error', '?')})")
                if cfg == "gospan" and (life.get("received") != life["requests"]
                                        or life.get("dropped")):
                    why = f" ({life['reasons']})" if life.get("reasons") else ""
                    bad.append(f"{kind}, round {rnd + 1}, gospan: {life['requests']} calls made, "
                               f"the receiver got {life.get('received')} spans (gospan captured "
                               f"{life.get('captured')}, exported {life.get('exported')}, "
                               f"dropped {life.get('dropped')}{why})")
    return bad


def db_versions():
    """The module versions bench/dbload is built with, from its go.mod."""
    text = (REPO / "bench" / "dbload" / "go.mod").read_text()
    out = {}
    for mod, key in (("github.com/lib/pq", "pq"), ("github.com/jackc/pgx/v5", "pgx"),
                     ("github.com/redis/go-redis/v9", "redis")):
        m = re.search(rf"^\s*{re.escape(mod)} (\S+)", text, re.M)
        out[key] = m.group(1) if m else "?"
    return out


def measure(bins, receiver):
    log(f"db: {len(DB_KINDS)} kinds x {ROUNDS} rounds x {len(DB_CONFIGS)} configurations x "
        f"concurrency {DB_CONCURRENCY}, {SECONDS} s each; bench/dbload -> PostgreSQL, Redis; "
        + (f"dbload on CPU {CPU_SERVICE}, the data stores, gospan and the receiver on CPU "
           f"{CPU_OTHER}" if PIN else "nothing pinned"))
    t_start = time.monotonic()
    load0 = Path("/proc/loadavg").read_text().split()[:3]
    out = {"rounds": ROUNDS, "seconds": SECONDS, "pinned": PIN, "concurrency": DB_CONCURRENCY,
           "pool": DB_POOL, "rate": DB_RATE, "check_calls": DB_CHECK_CALLS, "versions": db_versions(),
           "schedule_delay_ms": DB_SCHEDULE_DELAY_MS, "kinds": {}}
    try:
        stores = Datastores()
    except Exception as e:  # noqa: BLE001 - the report says why, and the part fails
        out["error"] = f"PostgreSQL and Redis (tests/e2e/datastores.py): {e}"
        out["failed"] = db_problems(out)
        log(f"  DB PART FAILED: {out['error']}")
        return out
    try:
        out["servers"] = {"postgresql": stores.pg.dsn, "postgresql_bin": str(stores.pg.bindir),
                          "redis": stores.redis.addr, "redis_version": stores.redis_version}
        for kind in DB_KINDS:
            k = out["kinds"][kind] = {}
            try:
                chk = k["check"] = db_span_check(kind, stores, receiver)
            except RuntimeError as e:
                k["error"] = f"span check: {e}"
                log(f"  {kind}: {k['error']}")
                continue
            log(f"  {kind}: span check: {chk['calls']} calls, gospan printed "
                + (", ".join(f"{v} '{x}'" for x, v in chk["spans"].items()) or "no span")
                + f"; single-stepped hits a call: {chk['steps']}")
            runs = {c: {n: [] for n in DB_CONCURRENCY} for c in DB_CONFIGS}
            lives = {c: [] for c in DB_CONFIGS}
            attached = None
            for rnd in range(ROUNDS):
                j = rnd % len(DB_CONFIGS)
                for cfg in DB_CONFIGS[j:] + DB_CONFIGS[:j]:
                    res, life, att = measure_db(kind, cfg, stores, receiver)
                    for n in DB_CONCURRENCY:
                        runs[cfg][n].append(res[n])
                    lives[cfg].append(life)
                    attached = att or attached
                    log(f"  {kind} round {rnd + 1} {cfg:8s} " + "  ".join(
                        f"c{n}: {res[n]['rps']:6.0f}/s p50 {res[n]['p50_us']:5.0f} us "
                        f"cpu {res[n]['load_cpu_us']:5.1f}+{res[n]['tracer_cpu_us']:4.1f} us"
                        + (f" bpf {res[n]['bpf_runs_per_call']:.2f}/call"
                           if "bpf_runs_per_call" in res[n] else "")
                        + (f" spans {res[n]['spans_per_call']:.3f}/call"
                           if "spans_per_call" in res[n] else "")
                        for n in DB_CONCURRENCY)
                        + (f" dropped {life['dropped']}" if life.get("dropped") else "")
                        + (f"  errors {life['errors']}" if life["errors"] else ""))
            k.update(runs=runs, lifetimes=lives, attached=attached)
    finally:
        stores.stop()
    out["loadavg"] = [load0, Path("/proc/loadavg").read_text().split()[:3]]
    out["part_seconds"] = time.monotonic() - t_start
    summarize_db(out)
    failed = db_problems(out)
    if failed:
        out["failed"] = failed
        for p in failed:
            log(f"  DB PART FAILED: {p}")
    for kind, k in out["kinds"].items():
        for n in DB_CONCURRENCY:
            if "added" in k:
                a, g = k["added"][n], k["median"]["gospan"][n]
                log(f"  {kind}, {n} goroutine{'s' if n > 1 else ''}: gospan adds "
                    f"{a['load_cpu_us']:+.2f} us of dbload CPU per call (paired "
                    f"{fmt(a['load_cpu_us_paired'], '+.2f')}), its process "
                    f"{fmt(g['tracer_cpu_us'], '.2f')} us; BPF "
                    f"{fmt(g['bpf_runs_per_call'], '.2f')} runs, "
                    f"{fmt(g['bpf_us_per_call'], '.2f')} us per call")
    log(f"  db part: {out['part_seconds']:.0f} s")
    return out


def waits(k, n, who):
    """'median (most)' of WHO's ("tracer", "receiver") wait for a CPU in kind K's gospan runs at
    N goroutines, in ms per second."""
    xs = [r.get(f"{who}_wait_ms_per_s") for r in k["runs"]["gospan"][n]]
    xs = [x for x in xs if x is not None]
    return f"{fmt(median(xs), '.0f')} ({fmt(max(xs) if xs else None, '.0f')})"


def section(db):
    """The db part's section of the report."""
    v, conc = db["versions"], db["concurrency"]
    L = ["## Data store clients", ""]
    if db.get("error"):
        L += [f"Not measured: {db['error']}.", ""]
        return L
    srv = db.get("servers") or {}
    pgv = re.search(r"postgresql/(\d+)/", srv.get("postgresql_bin", ""))
    kinds = [k for k in db["kinds"].values() if "median" in k]
    others = [k["median"][c][n]["other_load_cpus"] for k in kinds for c in DB_CONFIGS
              for n in conc]
    other = median(others)
    load0, load1 = db["loadavg"]
    busy = float(load0[0]) >= 0.7 or (other or 0) >= 0.25
    L += ["What gospan adds to each data store call of a Go program. `bench/dbload`, a program "
          "with data store clients and no server (gospan: \"only its data store calls are "
          "traced\"), is itself the traced process: it makes calls one after another from "
          + " and ".join(str(n) for n in conc) + " goroutines, one kind of call per process, "
          f"against a PostgreSQL {pgv.group(1) if pgv else ''} and a Redis "
          f"{srv.get('redis_version', '')} of the part's own on loopback (started as the "
          "end-to-end tests start them, `tests/e2e/datastores.py`). The kinds: "
          + "; ".join(f"*{DB_KIND_NAMES[k]}*: {DB_CALLS[k]}" for k in DB_KINDS) + f" (lib/pq "
          f"{v['pq']}, pgx {v['pgx']}, go-redis {v['redis']}). Before anyone traces it, dbload "
          f"makes its table (100 rows) or key and opens its {db['pool']} pooled connections, so "
          "that no connection is made during a run (a new connection's handshake, go-redis's "
          "HELLO among it, is no part of a call). Two configurations alternated over "
          f"{db['rounds']} rounds, a fresh dbload each time, {db['seconds']} s per run after a "
          f"{WARMUP} s warm-up at {max(conc)} goroutines; medians. "
          + "".join(f"At {n} goroutines the calls are paced to {r} a second in all: unpaced, "
                    "PostgreSQL's backends keep the CPU they share with gospan busy, gospan "
                    "waits for it most of each second and its ring buffer overflows, which "
                    "would measure the machine (a rate changes the CPU a call costs little). "
                    for n, r in (db.get("rate") or {}).items() if r)
          + "*untraced*: dbload alone. "
          "*gospan*: gospan attached to it, exporting to `bench/receiver` "
          f"(`OTEL_BSP_SCHEDULE_DELAY={db['schedule_delay_ms']}`: at each run's end the run's "
          "spans are waited for, and gospan's CPU is counted until the receiver has them all). "
          + (f"dbload runs on CPU {CPU_SERVICE} (so its Go runtime sees one CPU); PostgreSQL, "
             f"Redis, gospan and the receiver on CPU {CPU_OTHER}. " if db["pinned"]
             else "Nothing is pinned. ")
          + "CPU per call is dbload's utime+stime (`/proc/PID/stat`) over the run divided by "
          "the calls it made (those in flight when the time is up are waited for and counted): "
          "it includes the uprobe traps and the BPF programs, which run in the calling thread. "
          "*Added* is gospan's median less untraced's (in brackets the median of each round's "
          "own difference). *gospan process* is gospan's own CPU per call (its threads' "
          "`schedstat`, in ns). BPF figures are the kernel's run counters of gospan's programs "
          "(`kernel.bpf_stats_enabled=1`). *Single-stepped hits* is what gospan's attach line "
          "says a call costs: probes whose instruction the kernel cannot emulate (a RET) trap "
          "twice, once for the breakpoint and once after stepping the instruction out of line. "
          "*Spans per call* is what the receiver got over the calls of the runs. *Other load* "
          "is the CPU time the rest of the machine used meanwhile (`/proc/stat`, less dbload, "
          "the data stores, gospan, the receiver and the driver), in CPUs.", "",
          f"Load average at the part's start {' '.join(load0)}, at its end {' '.join(load1)}; "
          f"median other load during the runs {fmt(other, '.2f')} CPUs. "
          + ("**The part ran on a busy machine**: other work competed for the CPUs, which adds "
             "noise to every figure; the configurations alternated within each round, so it "
             "weighs on them alike, but the differences are less certain than on a quiet "
             "machine." if busy else "The machine was quiet.")
          + f" The part took {db['part_seconds'] / 60:.1f} min.", ""]
    for kind in DB_KINDS:
        k = db["kinds"].get(kind)
        if not k:
            continue
        L += [f"### {DB_KIND_NAMES[kind]}", ""]
        if k.get("error") or "median" not in k:
            L += [f"Not measured: {k.get('error', 'no runs')}.", ""]
            continue
        med, add, sp, chk = k["median"], k["added"], k["spans"], k["check"]
        u, g = med["untraced"], med["gospan"]
        steps = fmt(chk["steps"], "d", "no probe")
        L += [f"{DB_CALLS[kind][0].upper() + DB_CALLS[kind][1:]}. gospan's attach line: "
              f"`{DB_ATTACH[kind]} ({chk['attach_words']})`.", "",
              "| goroutines | calls/s untraced / gospan | p50 µs untraced / gospan | dbload CPU "
              "µs/call untraced | **added CPU µs/call** | gospan process CPU µs/call | BPF "
              "runs/call | BPF µs/call (ns/run) | single-stepped hits/call | spans/call | other "
              "load |",
              "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
        for n in conc:
            a = add[n]
            L.append(f"| {n} | {fmt(u[n]['rps'], '.0f')} / {fmt(g[n]['rps'], '.0f')} | "
                     f"{fmt(u[n]['p50_us'], '.0f')} / {fmt(g[n]['p50_us'], '.0f')} | "
                     f"{fmt(u[n]['load_cpu_us'], '.2f')} | "
                     f"**{fmt(a['load_cpu_us'], '.2f')}** "
                     f"({fmt(a['load_cpu_us_paired'], '.2f')}) | "
                     f"{fmt(g[n]['tracer_cpu_us'], '.2f')} | "
                     f"{fmt(g[n]['bpf_runs_per_call'], '.2f')} | "
                     f"{fmt(g[n]['bpf_us_per_call'], '.2f')} "
                     f"({fmt(g[n]['bpf_ns_per_run'], '.0f')}) | "
                     f"{steps} | {fmt(sp[n]['per_call'], '.3f')} | "
                     f"{fmt(median([u[n]['other_load_cpus'], g[n]['other_load_cpus']]), '.2f')} |")
        L.append("")
        progs = g[conc[0]].get("bpf_programs")
        if progs:
            L += [f"gospan's programs per call, {conc[0]} goroutine: " + ", ".join(
                f"`{x}` {p['runs_per_call']:.2f} runs at {p['ns_per_run']:.0f} ns"
                for x, p in sorted(progs.items())) + ". What a call costs the data store "
                "(its processes' CPU per call, untraced): "
                + ", ".join(f"{fmt(u[n]['server_cpu_us'], '.1f')} µs at {n}" for n in conc)
                + ".", ""]
        life = k["spans_life"]
        kinds_ = ", ".join(f"{c} `{x}`" for x, c in chk["spans"].items()) or "no span"
        L += [f"Spans: the traced dbloads made {life['requests']} calls (warm-ups included); "
              f"gospan captured {life['captured']}, exported {life['exported']}, dropped "
              f"{life['dropped']}, and the receiver got {life['received']}: "
              f"**{fmt(life['per_call'], '.3f')} per call**. Time spent runnable but waiting "
              "for a CPU (`schedstat`), in ms per second of run, median (most): "
              + "; ".join(f"at {n} goroutine{'s' if n > 1 else ''} gospan's threads "
                          f"{waits(k, n, 'tracer')}, the receiver's {waits(k, n, 'receiver')}"
                          for n in conc)
              + (". Spans are dropped when gospan's reader falls behind long enough for its "
                 "ring buffer (2 MiB) to fill, or its exporter, which waits for each answer of "
                 "the receiver, for its export queue (2048 spans) to fill."
                 if life["dropped"] else ".")
              + " Before the rounds, "
              f"{chk['calls']} calls from {DB_CHECK_CONCURRENCY} goroutines ({chk['errors']} "
              "failed) to a dbload traced by gospan with its console exporter "
              f"(`OTEL_TRACES_EXPORTER=console`): it printed {kinds_}.", ""]
    if kinds:
        att = next((k["attached"] for k in kinds if k.get("attached")), None)
        said = []
        for k in kinds:
            for w in k["check"].get("warnings", []) + [
                    w for x in k["lifetimes"].get("gospan", []) for w in x.get("warnings", [])]:
                w = re.sub(r"/proc/\d+/", "/proc/PID/", w)
                if w not in said:
                    said.append(w)
        L += [f"gospan's attach line (the same binary for every kind): `{att}`", ""] if att else []
        if said:
            L += ["What else gospan said, in every run (pids replaced by PID):", "", "```",
                  *said, "```", ""]
    if db.get("failed"):
        L += ["**The part's checks failed** (`make bench` exits 1):", ""] + \
             [f"- {p}" for p in db["failed"]] + [""]
    return L


def findings(db, results):
    """What bounds the db part's figures, from its numbers."""
    f, per_hit = [], None
    n0, n1 = db["concurrency"][0], db["concurrency"][-1]
    for kind in DB_KINDS:
        k = db["kinds"].get(kind) or {}
        if "median" not in k:
            continue
        g, add, steps = k["median"]["gospan"], k["added"], k["check"]["steps"] or 0
        hits, bpf, a = g[n1]["bpf_runs_per_call"], g[n1]["bpf_us_per_call"], add[n1]["load_cpu_us"]
        rest = a - bpf if a is not None and bpf is not None else None
        text = (f"{DB_KIND_NAMES[kind]}: gospan adds {fmt(add[n0]['load_cpu_us'], '.2f')} µs "
                f"of the caller's CPU per call at {n0} goroutine, {fmt(a, '.2f')} µs at {n1}. "
                f"A call is {fmt(hits, '.2f')} probe hits (its entry and its end), "
                + (f"none single-stepped ({DB_EMULATED_ENDS[kind]}, on instructions the "
                   "kernel emulates)" if not steps else
                   f"{steps} of them single-stepped (the end, on the method's RET, which the "
                   "kernel steps out of line: a second trap)")
                + f"; at {n1} goroutines the BPF programs take {fmt(bpf, '.2f')} µs of it")
        if rest is None or rest <= 0:
            text += (", as much as the whole added figure: the traps' own cost is lost in this "
                     "run's noise.")
        elif not steps:
            per_hit = rest / hits if hits else None
            text += (f", and the rest, {rest:.2f} µs, is the traps and what they disturb, "
                     f"{fmt(per_hit, '.2f')} µs a hit.")
        else:
            extra = (rest - hits * per_hit) / steps if per_hit is not None and hits else None
            text += (f", and the rest, {rest:.2f} µs, is the traps"
                     + (f": against database/sql's emulated hits ({per_hit:.2f} µs each), the "
                        f"single-step costs about {extra:.1f} µs more" if extra is not None
                        and extra > 0 else "")
                     + ". That single-stepped end is what sets it apart from database/sql.")
        text += (f" gospan's own process spends {fmt(g[n1]['tracer_cpu_us'], '.2f')} µs per "
                 "call: the record read, the span built "
                 + ("with its query text sanitized (literals to `?`, operation and table "
                    "found), " if kind != "redis" else "with its command's text sanitized, ")
                 + "OTLP encoding and the HTTP export, a cost per span.")
        f.append(text)
    for kind in DB_KINDS:
        k = db["kinds"].get(kind) or {}
        if "median" not in k or not k["spans_life"]["dropped"]:
            continue
        for n in db["concurrency"]:
            rs = k["runs"]["gospan"][n]
            lost = sum(r["requests"] - r.get("received", 0) for r in rs)
            if lost <= 0:
                continue
            others = [r.get("tracer_wait_ms_per_s") for kk in db["kinds"].values()
                      if "runs" in kk for nn in db["concurrency"]
                      for r in kk["runs"]["gospan"][nn] if (kk is not k or nn != n)]
            why = {}
            for life in k["lifetimes"]["gospan"]:
                for m in re.finditer(r"(\w+)=(\d+)", life.get("reasons") or ""):
                    why[m.group(1)] = why.get(m.group(1), 0) + int(m.group(2))
            busy = k["median"]["gospan"][n]
            f.append(f"{DB_KIND_NAMES[kind]} at {n} goroutines: {lost} of "
                     f"{sum(r['requests'] for r in rs)} calls have no span (gospan's summaries "
                     f"over the kind's runs, warm-ups included: {k['spans_life']['dropped']} "
                     f"dropped, {', '.join(f'{x}={v}' for x, v in why.items())}). In those "
                     f"runs gospan's threads waited {waits(k, n, 'tracer')} ms per second for a "
                     f"CPU, median (most), the receiver's {waits(k, n, 'receiver')}, against "
                     f"{fmt(median(others), '.0f')} ms for gospan's in the part's other runs: "
                     "the CPU they share with the data store was full (the data store's CPU per "
                     f"call × calls/s: {fmt(busy['server_cpu_us'] * busy['rps'] / 1e6, '.2f')} "
                     "CPUs). What fell behind: the reader (its ring buffer filled: "
                     "`ringbuf_full`) and the exporter, which sends one batch at a time and waits "
                     "for the receiver's answer (its queue filled: `queue_full`).")
    if f:
        f.append(f"Data store calls, {n0} goroutine against {n1}: at {n0} dbload waits for "
                 "every answer, its CPU idles between calls, and its CPU per call includes the "
                 "Go scheduler's parking, waking and spinning, which move with the calls' timing "
                 f"and which the traps change too; at {n1} it never waits, and that figure is "
                 "the closer one to what the probe hits cost. Where dbload is CPU-bound (16 "
                 "goroutines) the added CPU comes straight off its call rate; a call's latency "
                 "at one goroutine is bound by the loopback round trip and the data store, "
                 "which shares a CPU with gospan and the receiver.")
    return f


def load(db):
    """DB as results.json holds it, its concurrencies made numbers again, summed up."""
    for k in db.get("kinds", {}).values():
        if "runs" in k:
            k["runs"] = {c: {int(n): v for n, v in d.items()} for c, d in k["runs"].items()}
    summarize_db(db)


def per_call(db, results):
    """The cost-per-call rows of the data store clients: gospan over the untraced dbload."""
    rows = []
    steps = {"sql": ("database/sql", "query"), "pgx": ("pgx", "query"),
             "redis": ("go-redis", "command")}
    for kind, k in db["kinds"].items():
        if "added" not in k:
            continue
        rows.append({"family": DB_KIND_NAMES[kind],
                     "call": f"a {steps[kind][1]}, "
                             f"{' / '.join(map(str, db['concurrency']))} goroutines",
                     "added": [k["added"][n]["load_cpu_us"] for n in db["concurrency"]],
                     "tracer": [k["median"]["gospan"][n]["tracer_cpu_us"]
                                for n in db["concurrency"]],
                     "steps": steps_text(k.get("attached"), steps[kind]),
                     "section": "Data store clients"})
    return rows
