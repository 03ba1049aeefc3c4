"""Libraries that write the SQL for a service, over database/sql: gorm (gorm.io/gorm with
gorm.io/driver/postgres, which opens pgx's database/sql driver) and sqlx (github.com/jmoiron/sqlx
over lib/pq), on dbmix's /orm/ routes (tests/e2e/dbmix, tag orm) against the session's
PostgreSQL, traced by a gospan as test_datastores.py traces dbmix (its traced_service and start_dbmix).

gospan knows nothing of either: it traces the database/sql calls they make, so a request must
give one CLIENT span per statement the library sends, no more, each named from the SQL the
library wrote and carrying it as db.query.text. What they send was read from PostgreSQL's
log_statement = all (dbmix's README): gorm wraps Create, Update and Delete in a transaction of
its own (begin, the statement, commit); First is one SELECT with the LIMIT a parameter; sqlx's
Get, Select and NamedExec are one statement each, NamedExec's :names rewritten to $1.. first.
"""

import re

import pytest

from conftest import STATUS_UNSET
from datastores import WITH_ORMS, built_dbmix
from test_datastores import check_db_span, start_dbmix, traced_service

SYSTEM = "postgresql"


@pytest.fixture(scope="module")
def dbmix_bin():
    return built_dbmix(WITH_ORMS)


@pytest.fixture(scope="module")
def traced(dbmix_bin, postgres_server, redis_server, start_gospan, otlp_receiver,
           tmp_path_factory):
    svc = start_dbmix(dbmix_bin, postgres_server, redis_server, tmp_path_factory.mktemp("dbmix"),
                      setup=["/orm/setup"])
    with traced_service(svc, start_gospan, otlp_receiver) as t:
        yield t


def body(req):
    return req.got_body.decode().removesuffix("\n")


def check(spans, want):
    """SPANS (in start order) are WANT's, (name, operation, db.query.text or None), one each."""
    got = [(s.name, s.attrs.get("db.operation.name"), s.attrs.get("db.query.text"))
           for s in spans]
    assert got == want
    for s in spans:
        assert s.attrs["db.system.name"] == SYSTEM, s.attrs
        assert s.status_code == STATUS_UNSET, (s.name, s.attrs)


def transaction(name, op, text):
    return [("BEGIN", "BEGIN", None), (name, op, text), ("COMMIT", "COMMIT", None)]


def test_gorm_create_first_update_delete(traced, postgres_server):
    _, spans = traced.trace("/orm/gorm/create", 3)
    check(spans, transaction(
        "INSERT orm_items", "INSERT",
        'INSERT INTO "orm_items" ("name","price") VALUES ($1,$2) RETURNING "id"'))
    assert spans[1].attrs["db.collection.name"] == "orm_items"
    new = int(postgres_server.query("SELECT max(id) FROM orm_items"))

    _, _, req = traced.request("/orm/gorm/first")
    assert body(req) == f"first: id {new}, gorm-widget 9.99"
    _, (span,) = traced.trace("/orm/gorm/first", 1)
    check([span], [("SELECT orm_items", "SELECT",
                    'SELECT * FROM "orm_items" WHERE name = $1 ORDER BY "orm_items"."id" '
                    'LIMIT $2')])

    _, spans = traced.trace(f"/orm/gorm/update?id={new}", 3)
    check(spans, transaction("UPDATE orm_items", "UPDATE",
                             'UPDATE "orm_items" SET "price"=$1 WHERE "id" = $2'))
    assert postgres_server.query(f"SELECT price FROM orm_items WHERE id = {new}") == "2.50"

    _, spans = traced.trace(f"/orm/gorm/delete?id={new}", 3)
    check(spans, transaction("DELETE orm_items", "DELETE",
                             'DELETE FROM "orm_items" WHERE "orm_items"."id" = $1'))
    assert postgres_server.query(f"SELECT count(*) FROM orm_items WHERE id = {new}") == "0"


def test_sqlx_get_select_namedexec(traced, postgres_server):
    _, (span,) = traced.trace("/orm/sqlx/get", 1)
    check([span], [("SELECT items", "SELECT",
                    "SELECT id, name, price FROM items WHERE id = $1")])
    _, (span,) = traced.trace("/orm/sqlx/select", 1)
    check([span], [("SELECT items", "SELECT",
                    "SELECT id, name, price FROM items WHERE price < $1 ORDER BY id")])
    _, _, req = traced.request("/orm/sqlx/namedexec")
    m = re.fullmatch(r"namedexec: 1 row \(id (\d+)\)", body(req))
    assert m, req.got_body
    _, (span,) = traced.trace("/orm/sqlx/namedexec", 1)
    check([span], [("INSERT items", "INSERT",
                    "INSERT INTO items (id, name, price) VALUES ($1, $2, $3)")])
    assert span.attrs["db.collection.name"] == "items"
    assert postgres_server.query(f"SELECT name FROM items WHERE id = {m.group(1)}") == "named"


def test_redis_beside_gorm(traced, redis_server):
    """go-redis v9.23.0 in a binary that also holds gorm: one SET span for a SET.

    Fails with gospan as of 2026-11-28: there is no SET span, only the PIPELINE of go-redis's
    connection setup (CLIENT SETINFO) when the request dials. gospan probes
    (*baseClient).process where the binary has that symbol, else processStartingAt (v9.23.0
    inlines process into its method value, process-fm, which the hooks call). Without gorm the
    linker drops the out-of-line process and gospan probes processStartingAt: right. With gorm
    (reflection that keeps methods alive) the binary keeps an out-of-line process that the
    command path never calls, gospan probes it, and no command is seen. `go tool nm` on this
    build lists (*baseClient).process, process-fm and processStartingAt-fm; the build without
    gorm lists process-fm and processStartingAt only. A service using gorm and go-redis gets no
    Redis command spans."""
    _, (span,) = traced.trace("/redis/set", 1)
    check_db_span(span, "redis", "SET", "SET ? ?", "SET")
    _, (span,) = traced.trace("/redis/get", 1)
    check_db_span(span, "redis", "GET", "GET ?", "GET")
