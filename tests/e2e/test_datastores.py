"""Data store CLIENT spans: database/sql (lib/pq, pgx's stdlib driver, modernc SQLite), pgx's own
API and go-redis, on dbmix (tests/e2e/dbmix) against a real PostgreSQL and Redis that the session
starts (datastores.py) and a SQLite file.

Every request carries a traceparent of its own, so the spans of one request are exactly those of
one trace: dbmix's SERVER span, a child of the caller's id, and the data store spans under it.

What gospan must make of each call:

- one CLIENT span, a child of the SERVER span of the request whose goroutine made it (or started
  the goroutine that did), inside that span's window;
- db.system.name from the driver (postgresql for pq and pgx, sqlite), or redis;
- db.query.text with every literal replaced by '?' (never a secret: a password literal is looked
  for in every attribute of every span), db.operation.name, db.collection.name where the query
  names one table, the span named "{operation} {collection}";
- server.address/port where the client knows them: pgx's config, go-redis's options, and for
  database/sql the driver connection's own configuration (pq, pgx's stdlib driver; SQLite has no
  server), never anything else of its DSN;
- on failure status ERROR, error.type and db.response.status_code the database's code where it
  has one (PostgreSQL's SQLSTATE, a Redis error's prefix), else the error's Go type; a Redis
  GET of a missing key is no failure.
"""

import concurrent.futures
import contextlib
import platform

import pytest

from conftest import (SLOWDOWN, STATUS_ERROR, STATUS_UNSET, Service, _clean_env, call,
                      kernel_probe_hits, out_of_line_page, traced_get, wait_until)
from datastores import EVERY_DRIVER, built_dbmix

SPAN_KIND_SERVER, SPAN_KIND_CLIENT = 2, 3
SPAN_TIMEOUT = 15.0 * SLOWDOWN  # an export retried on a slow machine comes seconds later
SQL_DRIVERS = ["pq", "pgx", "sqlite"]
SYSTEM = {"pq": "postgresql", "pgx": "postgresql", "sqlite": "sqlite"}
PASSWORD = "hunter2-SECRET-pw"


@pytest.fixture(scope="module")
def dbmix_bin():
    return built_dbmix(EVERY_DRIVER)


def start_dbmix(binary, pg, redis, tmp, mysql=None, setup=()):
    """dbmix on the session's servers (and MYSQL's, a MariadbServer, when given), its tables made
    and filled (before any gospan), and each path of SETUP called."""
    args = ["-pg", pg.dsn, "-redis", redis.addr, "-sqlite", str(tmp / "db.sqlite")]
    if mysql is not None:
        args += ["-mysql", mysql.dsn]
    svc = Service(binary, env=_clean_env(), args=args)
    paths = [f"/sql/setup?driver={d}" for d in SQL_DRIVERS + (["mysql"] if mysql else [])]
    for path in paths + list(setup):
        status = call(svc, "GET", path)
        if status != 200:
            svc.stop()
            raise AssertionError(f"dbmix {path}: {status}")
    return svc


class Traced:
    """dbmix with a gospan on it, exporting to RECEIVER."""

    def __init__(self, svc, gospan, receiver):
        self.svc, self.gospan, self.receiver = svc, gospan, receiver

    def request(self, path, status=200):
        """GET PATH under a trace of its own; returns (trace id, the caller's span id, req)."""
        return traced_get(self.svc.port, path, status)

    def trace(self, path, n, status=200):
        """The SERVER span of one GET PATH and its N data store spans, checked for parentage."""
        trace_id, parent, req = self.request(path, status)

        def mine():
            return [s for s in self.receiver.snapshot() if s.trace_id == trace_id]
        ok = wait_until(lambda: len(mine()) >= n + 1, SPAN_TIMEOUT)
        got = mine()
        assert ok, (f"{path}: {len(got)} spans of {n + 1} arrived: "
                    f"{[(s.name, s.kind) for s in got]}\n{self.gospan.stderr}")
        # Nothing more is coming: a span too many would have come with the others.
        wait_until(lambda: False, 0.3)
        got = mine()
        servers = [s for s in got if s.kind == SPAN_KIND_SERVER]
        clients = [s for s in got if s.kind == SPAN_KIND_CLIENT]
        assert len(servers) == 1 and len(clients) == n and len(got) == n + 1, \
            (path, [(s.name, s.kind, s.attrs) for s in got])
        server = servers[0]
        assert server.parent_span_id == parent
        for c in clients:
            assert c.parent_span_id == server.span_id, (c.name, c.attrs)
            assert server.start_ns <= c.start_ns <= c.end_ns <= server.end_ns, c.name
        return server, sorted(clients, key=lambda s: s.start_ns)


@contextlib.contextmanager
def traced_service(svc, start_gospan, receiver, attached=(" + SQL (database/sql",)):
    """gospan on dbmix SVC (which is stopped at the end, whatever happened), exporting to
    RECEIVER: a Traced. Its attach line must name each of ATTACHED, and when it stops, every call
    must have been a span: nothing dropped, nothing left in flight."""
    try:
        g = start_gospan(svc.pid, receiver)
        line = g.wait_attached()
        for want in attached:
            assert want in line, line
        yield Traced(svc, g, receiver)
        assert g.stop() == 0, g.stderr
        summary = g.summary_line()
        assert summary and " dropped 0;" in summary and " in flight 0," in summary, summary
    finally:
        svc.stop()


@pytest.fixture(scope="module")
def traced(dbmix_bin, postgres_server, redis_server, start_gospan, otlp_receiver,
           tmp_path_factory):
    svc = start_dbmix(dbmix_bin, postgres_server, redis_server, tmp_path_factory.mktemp("dbmix"))
    with traced_service(svc, start_gospan, otlp_receiver,
                        (" + SQL (database/sql", " + pgx (", " + Redis (")) as t:
        yield t


def check_db_span(span, system, name, text, op, coll=None):
    a = span.attrs
    assert span.name == name, (span.name, a)
    assert a["db.system.name"] == system, a
    assert a["db.operation.name"] == op, a
    assert a.get("db.query.text") == text, a
    assert a.get("db.collection.name") == coll, a


def check_server(span, driver, pg):
    """server.address and server.port of a database/sql span: PostgreSQL's as the DSN gave them
    (pq and pgx's stdlib driver read them from their connection's configuration); none for
    SQLite, a file with no server."""
    if driver == "sqlite":
        assert "server.address" not in span.attrs and "server.port" not in span.attrs, span.attrs
    else:
        assert span.attrs.get("server.address") == pg.host, (span.name, span.attrs)
        assert span.attrs.get("server.port") == pg.port, (span.name, span.attrs)


@pytest.mark.parametrize("driver", SQL_DRIVERS)
def test_select_with_literals_is_sanitized(traced, postgres_server, driver):
    _, (span,) = traced.trace(f"/sql/select?driver={driver}", 1)
    check_db_span(span, SYSTEM[driver], "SELECT items",
                  "SELECT id, name FROM items WHERE id = ? AND name = ?", "SELECT", "items")
    assert span.status_code == STATUS_UNSET
    check_server(span, driver, postgres_server)


@pytest.mark.parametrize("driver", SQL_DRIVERS)
def test_insert_update_delete(traced, driver):
    for path, op in (("insert", "INSERT"), ("update", "UPDATE"), ("delete", "DELETE")):
        _, (span,) = traced.trace(f"/sql/{path}?driver={driver}", 1)
        assert span.name == f"{op} items", span.attrs
        assert span.attrs["db.operation.name"] == op
        assert span.attrs["db.collection.name"] == "items"
        text = span.attrs["db.query.text"]
        assert text.startswith(op) and not any(ch.isdigit() for ch in text), text


@pytest.mark.parametrize("driver", SQL_DRIVERS)
def test_prepared_statement_reused_100_times(traced, postgres_server, driver):
    _, spans = traced.trace(f"/sql/prepared?driver={driver}&n=100", 100)
    placeholder = "?" if driver == "sqlite" else "$1"
    for s in spans:
        check_db_span(s, SYSTEM[driver], "SELECT items",
                      f"SELECT name FROM items WHERE id = {placeholder}", "SELECT", "items")
        check_server(s, driver, postgres_server)
    # one after the other, on the one goroutine
    for a, b in zip(spans, spans[1:]):
        assert a.end_ns <= b.start_ns


@pytest.mark.parametrize("driver", SQL_DRIVERS)
def test_transaction(traced, postgres_server, driver):
    _, (begin, insert, count, commit) = traced.trace(f"/sql/tx?driver={driver}", 4)
    # the transaction's own calls too: they go to the connection its begin took
    for span in (begin, insert, count, commit):
        check_server(span, driver, postgres_server)
    for span, op in ((begin, "BEGIN"), (commit, "COMMIT")):
        # what the driver sends for them is its own: no text
        assert span.name == op and span.attrs["db.operation.name"] == op, span.attrs
        assert span.attrs["db.system.name"] == SYSTEM[driver] and "db.query.text" not in span.attrs
        assert span.status_code == STATUS_UNSET
    assert insert.name == "INSERT items" and insert.attrs["db.operation.name"] == "INSERT"
    assert count.name == "SELECT items"
    assert count.attrs["db.query.text"] == "SELECT count(*) FROM items"


@pytest.mark.parametrize("driver", SQL_DRIVERS)
def test_failing_query(traced, driver):
    _, (span,) = traced.trace(f"/sql/error?driver={driver}", 1, status=500)
    assert span.status_code == STATUS_ERROR
    assert span.attrs["db.query.text"] == "SELEC ?"
    if driver == "sqlite":
        assert span.attrs["error.type"] == "*sqlite.Error", span.attrs
    else:
        assert span.attrs["error.type"] == "42601", span.attrs
        assert span.attrs["db.response.status_code"] == "42601"
    # messages may quote values: only with --db-query-text=raw
    assert span.status_message == ""


@pytest.mark.parametrize("driver", ["pq", "pgx"])
def test_query_cancelled_by_its_context(traced, driver):
    _, (span,) = traced.trace(f"/sql/cancel?driver={driver}", 1, status=500)
    assert span.status_code == STATUS_ERROR
    assert span.attrs["db.query.text"] == "SELECT pg_sleep(?)"
    assert span.attrs["error.type"], span.attrs
    # the 100 ms deadline ended it, not the 5 s sleep. The deadline is set just before the call
    # begins: on a slow machine (a TCG virtual machine, loaded) the span began 12 ms after it.
    assert 50e6 <= span.end_ns - span.start_ns < 3e9, span.end_ns - span.start_ns


@pytest.mark.parametrize("driver", SQL_DRIVERS)
def test_password_literal_never_leaves(traced, driver):
    _, (span,) = traced.trace(f"/sql/password?driver={driver}", 1)
    assert span.attrs["db.query.text"] == "UPDATE users SET password = ? WHERE name = ?"
    for s in traced.receiver.snapshot():
        blob = repr((s.name, s.attrs, s.status_message, s.resource))
        assert "hunter2" not in blob and "SECRET" not in blob, blob


@pytest.mark.parametrize("driver", SQL_DRIVERS)
def test_goroutine_started_by_the_handler(traced, driver):
    _, (span,) = traced.trace(f"/sql/goroutine?driver={driver}", 1)
    assert span.name == "SELECT" and span.attrs["db.query.text"] == "SELECT ?"


def test_pgx_native_calls(traced, postgres_server):
    for path, name, text in (
            ("/pgx/query", "SELECT items", "SELECT id, name FROM items WHERE id = ? AND name = ?"),
            ("/pgx/queryrow", "SELECT items", "SELECT name FROM items WHERE id = $1"),
            ("/pgx/exec", "UPDATE items", "UPDATE items SET price = ? WHERE id = ?")):
        _, (span,) = traced.trace(path, 1)
        assert span.name == name, (path, span.attrs)
        assert span.attrs["db.system.name"] == "postgresql"
        assert span.attrs["db.query.text"] == text, span.attrs
        assert span.attrs["server.address"] == postgres_server.host
        assert span.attrs["server.port"] == postgres_server.port


def test_pgx_batch(traced, postgres_server):
    _, (span,) = traced.trace("/pgx/batch", 1)
    assert span.name == "BATCH", span.attrs
    assert span.attrs["db.operation.name"] == "BATCH"
    assert span.attrs["db.operation.batch.size"] == 3
    assert span.attrs["server.port"] == postgres_server.port


def test_pgx_error(traced):
    _, (span,) = traced.trace("/pgx/error", 1, status=500)
    assert span.status_code == STATUS_ERROR
    assert span.attrs["error.type"] == "42601", span.attrs


@pytest.mark.skipif(platform.machine() != "x86_64",
                    reason="arm64 single-steps the entries and simulates the RETs (docs/arm64.md)")
def test_pgx_calls_are_never_single_stepped(dbmix_bin, postgres_server, redis_server,
                                            start_gospan, otlp_receiver, tmp_path, bpf_stats):
    """pgx's ends are inside its methods, right after the inner call that does the work, where
    the kernel emulates the instruction: the attach line says no hit of a query is
    single-stepped, and the kernel agrees. After a query, a row, an exec, a batch, a failing
    exec and a query through pgx's database/sql driver, each a span, the process has no page for
    single-stepped probes, and every pgx call that began ran exactly one end program."""
    svc = start_dbmix(dbmix_bin, postgres_server, redis_server, tmp_path)
    try:
        g = start_gospan(svc.pid, otlp_receiver)
        line = g.wait_attached()
        assert "; single-stepped hits: 0 a query) + Redis (" in line, line
        t = Traced(svc, g, otlp_receiver)
        for path, status in (("/pgx/query", 200), ("/pgx/queryrow", 200), ("/pgx/exec", 200),
                             ("/pgx/batch", 200), ("/pgx/error", 500),
                             ("/sql/select?driver=pgx", 200)):
            _, (span,) = t.trace(path, 1, status)
            assert (span.status_code == STATUS_ERROR) == (status == 500), (path, span.attrs)
        stepped = out_of_line_page(svc.pid)
        assert g.stop() == 0, g.stderr
    finally:
        svc.stop()
    assert not stepped, f"a probe was single-stepped: {line}"
    _, per = kernel_probe_hits(g.stderr)
    began = per.get("db_pgx_entry", 0) + per.get("db_pgx_batch_entry", 0)
    ended = per.get("db_pgx_end", 0) + per.get("db_pgx_success", 0)
    # 6 calls, and any pgx makes of its own (none is known): one end each
    assert began >= 6 and ended == began, per


@pytest.mark.skipif(platform.machine() != "x86_64",
                    reason="arm64 single-steps the entries and simulates the RETs (docs/arm64.md)")
def test_redis_commands_are_never_single_stepped(dbmix_bin, postgres_server, redis_server,
                                                 start_gospan, otlp_receiver, tmp_path,
                                                 bpf_stats):
    """A go-redis command ends where its retry loop is over, on an instruction the kernel
    emulates, whether it succeeds, finds no value or fails: the attach line says no hit of a
    command is single-stepped, and after those commands the process has no page for
    single-stepped probes (the connection is made before gospan attaches: a new one's set-up
    sends a pipeline, whose ends are RETs). Then a command that times out, one whose retries
    run out (a RET kept) and a pipeline: each one span, right, and every command and pipeline
    that began (the connections' own set-up included) ran exactly one end program."""
    svc = start_dbmix(dbmix_bin, postgres_server, redis_server, tmp_path, setup=["/redis/set"])
    try:
        g = start_gospan(svc.pid, otlp_receiver)
        line = g.wait_attached()
        # The service makes pipelines: the line says what one costs, its processor's RET.
        assert "single-stepped hits: 0 a command, 1 a pipeline)" in line, line
        t = Traced(svc, g, otlp_receiver)
        for _ in range(3):
            _, (span,) = t.trace("/redis/set", 1)
            assert span.name == "SET" and span.status_code == STATUS_UNSET, span.attrs
            _, (span,) = t.trace("/redis/get", 1)
            assert span.name == "GET" and span.status_code == STATUS_UNSET, span.attrs
            _, (span,) = t.trace("/redis/missing", 1)
            assert span.name == "GET" and span.status_code == STATUS_UNSET, span.attrs
            _, (setup, span) = t.trace("/redis/error", 2, status=500)
            assert setup.name == "SET" and setup.status_code == STATUS_UNSET, setup.attrs
            assert span.name == "INCR" and span.status_code == STATUS_ERROR, span.attrs
            assert span.attrs["error.type"] == "ERR", span.attrs
        stepped = out_of_line_page(svc.pid)
        _, (span,) = t.trace("/redis/timeout", 1, status=500)
        assert span.name == "BLPOP" and span.status_code == STATUS_ERROR, span.attrs
        # The span ends when the command gave up, not a second later
        assert 0.09e9 <= span.end_ns - span.start_ns < 0.9e9, span
        _, (span,) = t.trace("/redis/retries", 1, status=500)
        assert span.name == "GET" and span.status_code == STATUS_ERROR, span.attrs
        assert span.attrs["server.port"] == 1, span.attrs
        _, (span,) = t.trace("/redis/pipeline", 1)
        assert span.name == "PIPELINE" and span.status_code == STATUS_UNSET, span.attrs
        _, (span,) = t.trace("/redis/set", 1)
        assert span.name == "SET" and span.status_code == STATUS_UNSET, span.attrs
        assert g.stop() == 0, g.stderr
    finally:
        svc.stop()
    assert not stepped, f"a probe was single-stepped: {line}"
    _, per = kernel_probe_hits(g.stderr)
    began = per.get("db_redis_entry", 0) + per.get("db_redis_pipeline_entry", 0)
    ended = per.get("db_redis_cmd_end", 0) + per.get("db_redis_end", 0)
    # 16 commands and a pipeline, and the connections' set-up: one end each
    assert began >= 17 and ended == began, per


def test_redis_commands(traced, redis_server):
    _, (span,) = traced.trace("/redis/set", 1)
    check_db_span(span, "redis", "SET", "SET ? ?", "SET")
    assert span.attrs["server.address"] == redis_server.host
    assert span.attrs["server.port"] == redis_server.port
    _, (span,) = traced.trace("/redis/get", 1)
    check_db_span(span, "redis", "GET", "GET ?", "GET")
    assert span.status_code == STATUS_UNSET
    _, (span,) = traced.trace("/redis/missing", 1)
    assert span.name == "GET" and span.status_code == STATUS_UNSET, span.attrs


def test_redis_pipeline(traced):
    _, (span,) = traced.trace("/redis/pipeline", 1)
    check_db_span(span, "redis", "PIPELINE", "SET ? ?; INCR ?; GET ?", "PIPELINE")
    assert span.attrs["db.operation.batch.size"] == 3


def test_redis_error(traced):
    _, (setup, span) = traced.trace("/redis/error", 2, status=500)
    assert setup.name == "SET" and setup.status_code == STATUS_UNSET
    assert span.name == "INCR"
    assert span.status_code == STATUS_ERROR
    assert span.attrs["error.type"] == "ERR" and span.attrs["db.response.status_code"] == "ERR"


@pytest.mark.parametrize("driver", ["pq", "pgx"])
def test_64_concurrent_requests(traced, driver):
    with concurrent.futures.ThreadPoolExecutor(64) as pool:
        traces = list(pool.map(lambda _: traced.trace(f"/sql/select?driver={driver}", 1),
                               range(64)))
    ids = {c.span_id for _, (c,) in traces}
    assert len(ids) == 64


def test_raw_setting_keeps_the_text(dbmix_bin, postgres_server, redis_server, start_gospan,
                                    otlp_receiver, tmp_path):
    svc = start_dbmix(dbmix_bin, postgres_server, redis_server, tmp_path)
    try:
        g = start_gospan(svc.pid, otlp_receiver, args=("--db-query-text", "raw"))
        g.wait_attached()
        t = Traced(svc, g, otlp_receiver)
        _, (span,) = t.trace("/sql/password?driver=pq", 1)
        assert span.attrs["db.query.text"] == \
            f"UPDATE users SET password = '{PASSWORD}' WHERE name = 'admin'"
        _, (span,) = t.trace("/sql/error?driver=pq", 1, status=500)
        assert "syntax error" in span.status_message, span.status_message
        assert g.stop() == 0
    finally:
        svc.stop()


def test_none_setting_drops_the_text(dbmix_bin, postgres_server, redis_server, start_gospan,
                                     otlp_receiver, tmp_path):
    svc = start_dbmix(dbmix_bin, postgres_server, redis_server, tmp_path)
    try:
        g = start_gospan(svc.pid, otlp_receiver, env={"GOSPAN_DB_QUERY_TEXT": "none"})
        g.wait_attached()
        t = Traced(svc, g, otlp_receiver)
        _, (span,) = t.trace("/sql/select?driver=pq", 1)
        assert "db.query.text" not in span.attrs and span.name == "SELECT items"
        _, (span,) = t.trace("/redis/set", 1)
        assert "db.query.text" not in span.attrs and span.name == "SET"
        assert g.stop() == 0
    finally:
        svc.stop()


def test_plain_uprobe_links(dbmix_bin, postgres_server, redis_server, start_gospan,
                            otlp_receiver, tmp_path):
    """The same spans with one plain uprobe link per probe (kernels before uprobe_multi links)."""
    svc = start_dbmix(dbmix_bin, postgres_server, redis_server, tmp_path)
    try:
        g = start_gospan(svc.pid, otlp_receiver, env={"GOSPAN_UPROBE_MULTI": "0"})
        g.wait_attached()
        t = Traced(svc, g, otlp_receiver)
        _, (begin, insert, count, commit) = t.trace("/sql/tx?driver=pq", 4)
        assert [s.name for s in (begin, insert, count, commit)] == \
            ["BEGIN", "INSERT items", "SELECT items", "COMMIT"]
        _, (span,) = t.trace("/redis/get", 1)
        assert span.name == "GET"
        assert g.stop() == 0
    finally:
        svc.stop()
