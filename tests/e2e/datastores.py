"""Real datastores for the end-to-end tests, and the dbmix builds that call them.

- postgres_server: a PostgreSQL of its own (the newest under /usr/lib/postgresql/*/bin) in a
  temporary directory, superuser `gospan`, trust authentication on loopback, database `gospan`.
  As root it runs as the `postgres` user (PostgreSQL refuses root). Yields a PostgresServer:
  .dsn, .host, .port, .query(sql).
- redis_server: a redis-server of its own on loopback, persisting nothing. Yields a RedisServer:
  .addr, .host, .port, .command(*args).
- mariadb_server: a MariaDB (Debian's mariadbd, standing in for MySQL) in a temporary directory,
  on loopback and a unix socket there, nothing synced; user `gospan` with a password, allowed
  from 127.0.0.1, database `gospan`; the general query log on, to a file. As root it runs as
  the `mysql` user. Yields a MariadbServer: .host, .port, .user, .password, .database, .dsn
  (go-sql-driver/mysql's form), .query(sql), .general_log().

All are session fixtures (conftest.py exports them), stopped and removed after the session
whatever happened. Where the server is not installed they skip naming the Debian package
(`make deps` installs them); conftest.py turns that skip into a failure under CI=true.

- build_dbmix(): tests/e2e/dbmix built with tests/e2e/dbmix/build.sh for a set of drivers, one
  Go toolchain and go build flags, cached in <cache>/dbmix-<hash of dbmix>/<go>-<drivers>/, where
  <cache> is $GOSPAN_DBMIX_CACHE, else $XDG_CACHE_HOME/gospan, else ~/.cache/gospan (as the
  grpcmix builds are, grpc_matrix.py): a build is made once per machine whatever the checkout.
"""

import fcntl
import hashlib
import json
import os
import pwd
import re
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

import matrix
from procs import end_process
from matrix import go_version

REPO = Path(__file__).resolve().parents[2]
DBMIX = REPO / "tests" / "e2e" / "dbmix"
DBMIX_BUILD_SH = DBMIX / "build.sh"
DEBIAN_GO = "/usr/lib/go-1.19/bin/go"
BUILD_TIMEOUT = 1800

# The driver releases the tests build with, the newest when dbmix was written (as its committed
# go.mod has them); they need Go 1.26. build.sh's own default for lib/pq is v1.10.9, the last
# that builds with Go 1.17, and for modernc.org/sqlite v1.62.0.
PQ_VERSION = "v1.12.3"
PGX_VERSION = "v5.12.0"
REDIS_VERSION = "v9.23.0"
# github.com/go-sql-driver/mysql's newest release (go list -m -versions, 2026-11-28).
MYSQL_VERSION = "v1.10.1"
# build_dbmix()'s arguments for dbmix with every driver at those releases: the one build
# test_datastores.py and test_mysql.py share. WITH_ORMS adds gorm and sqlx (test_orms.py,
# test_dbmix_service.py): a build of its own, because gorm changes what the Go linker keeps of
# go-redis (see test_orms.test_redis_beside_gorm), and the other tests are about the drivers.
EVERY_DRIVER = dict(pq=PQ_VERSION, pgx=PGX_VERSION, redis=REDIS_VERSION, sqlite=True,
                    mysql=MYSQL_VERSION)
WITH_ORMS = dict(EVERY_DRIVER, orm=True)

# Times conftest's GOSPAN_TEST_SLOWDOWN (read here: conftest imports this module): initdb took
# over 120 s in the arm64 virtual machine with a loaded host.
SLOWDOWN = float(os.environ.get("GOSPAN_TEST_SLOWDOWN") or 1.0)
START_TIMEOUT = 60.0 * SLOWDOWN
STOP_TIMEOUT = 30.0


# ---- dbmix builds ----------------------------------------------------------------------------


class BuildError(RuntimeError):
    pass


def source_hash():
    """What the builds depend on in this tree: dbmix's Go files, go.mod and build.sh, and the
    script build.sh runs."""
    return matrix.source_hash(DBMIX, REPO / "tests" / "e2e" / "mixbuild.sh")


def _build_env():
    env = {k: v for k, v in os.environ.items() if k not in ("GOROOT", "GOFLAGS")}
    env.update(GOTOOLCHAIN="local", GOFLAGS="-mod=mod")
    return env


def build_dbmix(out, toolchain="local", pgx=None, redis=None, pq=None, sqlite=False, mysql=None,
                orm=False, flags=()):
    """dbmix with lib/pq (at PQ, else build.sh's default), and pgx, go-redis, go-sql-driver/mysql
    at the versions given, modernc.org/sqlite when SQLITE is true (a version string picks the
    release), and gorm and sqlx (build.sh's releases of them) when ORM is true,
    built by TOOLCHAIN (as build.sh takes it) with go build FLAGS. Built once into the cache;
    the binary is then copied to OUT, whose path is returned (the cached binary's path when OUT
    is None). Raises BuildError with build.sh's output when the build fails."""
    try:
        label = go_version(toolchain) + ("-debian" if "/" in toolchain else "")
        # A build for another architecture (GOARCH, as tests/vm/run.py builds for the arm64
        # guest) is another binary.
        if os.environ.get("GOARCH"):
            label += f"-{os.environ['GOARCH']}"
    except (OSError, RuntimeError, subprocess.TimeoutExpired) as e:
        raise BuildError(f"dbmix: {e}") from None
    drivers = [f"pq-{pq or 'default'}"]
    args = [] if pq is None else ["--pq", pq]
    if pgx:
        drivers.append(f"pgx-{pgx}")
        args += ["--pgx", pgx]
    if redis:
        drivers.append(f"redis-{redis}")
        args += ["--redis", redis]
    if sqlite:
        drivers.append(f"sqlite-{sqlite if isinstance(sqlite, str) else 'default'}")
        args += ["--sqlite"] + ([sqlite] if isinstance(sqlite, str) else [])
    if mysql:
        drivers.append(f"mysql-{mysql}")
        args += ["--mysql", mysql]
    if orm:
        drivers.append("orm")
        args.append("--orm")
    key = "-".join([label, *drivers])
    if flags:
        key += "-" + hashlib.sha256("\0".join(flags).encode()).hexdigest()[:8]
    home = matrix.build_home("GOSPAN_DBMIX_CACHE", "dbmix", source_hash())
    dest = home / key
    binary = dest / "dbmix"

    if not (dest / "built.json").exists():
        with open(home / f".{key}.lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            if not (dest / "built.json").exists():
                tmp = home / f".{key}.partial"
                shutil.rmtree(tmp, ignore_errors=True)
                t0 = time.monotonic()
                cmd = [str(DBMIX_BUILD_SH), str(tmp / "dbmix"), toolchain, *args,
                       "--", *flags]
                res = subprocess.run(cmd, capture_output=True, text=True,
                                     timeout=BUILD_TIMEOUT, env=_build_env())
                if res.returncode != 0:
                    shutil.rmtree(tmp, ignore_errors=True)
                    raise BuildError(f"dbmix ({', '.join(drivers)}) with {toolchain} did not "
                                     f"build: {' '.join(cmd)}\n{res.stderr[-6000:]}")
                (tmp / "built.json").write_text(json.dumps({
                    "toolchain": label, "drivers": drivers, "flags": list(flags),
                    "seconds": round(time.monotonic() - t0, 1)}) + "\n")
                shutil.rmtree(dest, ignore_errors=True)
                os.replace(tmp, dest)
    if out is None:
        return binary
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    part = out.with_name(f".{out.name}.partial")
    shutil.copy2(binary, part)
    os.replace(part, out)
    return out


def built_dbmix(drivers):
    """The cached dbmix with DRIVERS (build_dbmix's keywords, e.g. EVERY_DRIVER), for a test's
    fixture: the test fails with build.sh's output when it does not build."""
    try:
        return build_dbmix(None, **drivers)
    except BuildError as e:
        pytest.fail(str(e))


# ---- processes -------------------------------------------------------------------------------


def _tail(path, n=60):
    try:
        return "\n".join(Path(path).read_text(errors="replace").splitlines()[-n:])
    except OSError as e:
        return f"(cannot read '{path}': {e})"


# ---- PostgreSQL ------------------------------------------------------------------------------


def postgres_bindir():
    """The newest /usr/lib/postgresql/N/bin holding initdb, pg_ctl and postgres, or None."""
    found = []
    for d in Path("/usr/lib/postgresql").glob("*/bin"):
        if d.parent.name.isdigit() and all(os.access(d / p, os.X_OK)
                                           for p in ("initdb", "pg_ctl", "postgres")):
            found.append((int(d.parent.name), d))
    return max(found)[1] if found else None


@dataclass
class PostgresServer:
    host: str
    port: int
    dir: Path
    bindir: Path
    user: str = "gospan"
    database: str = "gospan"

    @property
    def dsn(self):
        return (f"postgres://{self.user}@{self.host}:{self.port}/{self.database}"
                "?sslmode=disable")

    def query(self, sql, database=None):
        """SQL's result through psql, unaligned: one line per row, columns split by '|'.
        Raises AssertionError with psql's error when it fails."""
        cmd = [str(self.bindir / "psql"), "-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1",
               "-h", self.host, "-p", str(self.port), "-U", self.user,
               "-d", database or self.database, "-c", sql]
        try:
            res = subprocess.run(cmd, capture_output=True, text=True, timeout=60,
                                 env=dict(os.environ, PGCONNECT_TIMEOUT="10"))
        except subprocess.TimeoutExpired:
            raise AssertionError(f"psql -c {sql!r} did not finish within 60 s") from None
        if res.returncode != 0:
            raise AssertionError(f"psql -c {sql!r} failed: {res.stderr.strip()}")
        return res.stdout.rstrip("\n")

    def ready(self):
        """None once the server accepts connections, else what pg_isready said."""
        res = subprocess.run([str(self.bindir / "pg_isready"), "-h", self.host,
                              "-p", str(self.port), "-t", "2"],
                             capture_output=True, text=True, timeout=30)
        return None if res.returncode == 0 else (res.stdout + res.stderr).strip()


@pytest.fixture(scope="session")
def postgres_server(free_port):
    bindir = postgres_bindir()
    if bindir is None:
        pytest.skip("PostgreSQL is not installed (no /usr/lib/postgresql/*/bin with initdb, "
                    "pg_ctl and postgres): make deps installs Debian's postgresql package")
    as_postgres = []
    if os.geteuid() == 0:
        # PostgreSQL refuses to run as root: as root, run it as the user Debian's package makes.
        try:
            pw = pwd.getpwnam("postgres")
        except KeyError:
            pytest.skip("running as root, and there is no 'postgres' user for PostgreSQL to run "
                        "as (Debian's postgresql package makes it: make deps)")
        if not shutil.which("runuser"):
            pytest.skip("running as root, and runuser is missing to run PostgreSQL as "
                        "'postgres' (Debian's util-linux package: make deps)")
        as_postgres = ["runuser", "-u", "postgres", "--"]

    tmp = Path(tempfile.mkdtemp(prefix="gospan-postgres-"))
    data, sock, log = tmp / "data", tmp / "sock", tmp / "postgres.log"
    sock.mkdir()
    if as_postgres:
        for p in (tmp, sock):
            os.chown(p, pw.pw_uid, pw.pw_gid)
    server = PostgresServer("127.0.0.1", free_port(), tmp, bindir)
    proc = None
    try:
        with open(log, "ab") as logf:
            res = subprocess.run([*as_postgres, str(bindir / "initdb"), "-D", str(data),
                                  "-U", server.user, "--auth=trust", "-E", "UTF8",
                                  "--no-locale", "--no-sync", "--no-instructions"],
                                 stdin=subprocess.DEVNULL, stdout=logf,
                                 stderr=subprocess.STDOUT, timeout=120 * SLOWDOWN)
            if res.returncode != 0:
                raise AssertionError(f"initdb failed (status {res.returncode}); {log}:\n"
                                     f"{_tail(log)}")
            # A throwaway cluster: nothing is worth an fsync.
            proc = subprocess.Popen([*as_postgres, str(bindir / "postgres"), "-D", str(data),
                                     "-h", server.host, "-p", str(server.port), "-k", str(sock),
                                     "-c", "fsync=off", "-c", "synchronous_commit=off",
                                     "-c", "full_page_writes=off"],
                                    stdin=subprocess.DEVNULL, stdout=logf,
                                    stderr=subprocess.STDOUT, start_new_session=True)
        _wait_postgres(server, proc, log)
        yield server
    finally:
        if proc is not None:
            _stop_postgres(server, proc, as_postgres, data)
        shutil.rmtree(tmp, ignore_errors=True)


def _wait_postgres(server, proc, log):
    """Waits until the server accepts connections, then creates the database: a real statement."""
    deadline = time.monotonic() + START_TIMEOUT
    while True:
        if proc.poll() is not None:
            raise AssertionError(f"postgres exited with status {proc.returncode} at start; "
                                 f"{log}:\n{_tail(log)}")
        why = server.ready()
        if why is None:
            break
        if time.monotonic() > deadline:
            raise AssertionError(f"postgres did not accept connections on {server.host}:"
                                 f"{server.port} within {START_TIMEOUT:.0f} s ({why}); "
                                 f"{log}:\n{_tail(log)}")
        time.sleep(0.1)
    try:
        server.query(f"CREATE DATABASE {server.database}", database="postgres")
    except AssertionError as e:
        raise AssertionError(f"{e}; {log}:\n{_tail(log)}") from None


def _stop_postgres(server, proc, as_postgres, data):
    if proc.poll() is None:
        subprocess.run([*as_postgres, str(server.bindir / "pg_ctl"), "stop", "-D", str(data),
                        "-m", "fast", "-w", "-t", str(int(STOP_TIMEOUT))],
                       stdin=subprocess.DEVNULL, capture_output=True, timeout=STOP_TIMEOUT + 10)
    try:
        proc.wait(10)
    except subprocess.TimeoutExpired:
        # pg_ctl did not stop it: kill the postmaster's whole session (it was started in one of
        # its own), then runuser.
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        proc.wait(10)


# ---- Redis -----------------------------------------------------------------------------------


def _resp(*args):
    out = f"*{len(args)}\r\n".encode()
    for a in args:
        a = str(a).encode()
        out += b"$%d\r\n%s\r\n" % (len(a), a)
    return out


def _read_reply(f):
    """One RESP2 reply: str for simple strings and bulk strings, int, None for a nil, a
    RedisError for an error; arrays as lists."""
    line = f.readline()
    if not line.endswith(b"\r\n"):
        raise ConnectionError(f"redis closed the connection or answered {line!r}")
    kind, rest = line[:1], line[1:-2].decode()
    if kind == b"+":
        return rest
    if kind == b"-":
        return RedisError(rest)
    if kind == b":":
        return int(rest)
    if kind == b"$":
        n = int(rest)
        return None if n < 0 else f.read(n + 2)[:-2].decode()
    if kind == b"*":
        n = int(rest)
        return None if n < 0 else [_read_reply(f) for _ in range(n)]
    raise ConnectionError(f"unexpected reply from redis: {line!r}")


class RedisError(Exception):
    pass


@dataclass
class RedisServer:
    host: str
    port: int
    dir: Path

    @property
    def addr(self):
        return f"{self.host}:{self.port}"

    def command(self, *args, timeout=10.0):
        """One command on a connection of its own; its reply (see _read_reply)."""
        with socket.create_connection((self.host, self.port), timeout=timeout) as s:
            s.sendall(_resp(*args))
            with s.makefile("rb") as f:
                return _read_reply(f)


@pytest.fixture(scope="session")
def redis_server(free_port):
    binary = shutil.which("redis-server")
    if binary is None:
        pytest.skip("redis-server is not installed: make deps installs Debian's redis-server "
                    "package")
    tmp = Path(tempfile.mkdtemp(prefix="gospan-redis-"))
    log = tmp / "redis.log"
    server = RedisServer("127.0.0.1", free_port(), tmp)
    proc = None
    try:
        with open(log, "ab") as logf:
            proc = subprocess.Popen([binary, "--port", str(server.port), "--bind", server.host,
                                     "--save", "", "--appendonly", "no", "--dir", str(tmp),
                                     "--daemonize", "no"],
                                    stdin=subprocess.DEVNULL, stdout=logf,
                                    stderr=subprocess.STDOUT, start_new_session=True)
        deadline = time.monotonic() + START_TIMEOUT
        while True:
            if proc.poll() is not None:
                raise AssertionError(f"redis-server exited with status {proc.returncode} at "
                                     f"start; {log}:\n{_tail(log)}")
            try:
                got = server.command("PING", timeout=1.0)
            except OSError as e:
                got = e
            if got == "PONG":
                break
            if time.monotonic() > deadline:
                raise AssertionError(f"redis-server did not answer PING on {server.addr} within "
                                     f"{START_TIMEOUT:.0f} s (last: {got!r}); {log}:\n"
                                     f"{_tail(log)}")
            time.sleep(0.05)
        yield server
    finally:
        if proc is not None:
            end_process(proc, timeout=STOP_TIMEOUT)
        shutil.rmtree(tmp, ignore_errors=True)



# ---- MariaDB (for MySQL) ---------------------------------------------------------------------

# One entry of the general query log: "YYMMDD HH:MM:SS\t" (only on the first entry of a second)
# or "\t\t", then the connection id right-aligned in 7, the command ("Query", "Prepare",
# "Execute", "Connect", "Close stmt", ...), a tab and its argument, which runs on over the lines
# that follow when the statement holds newlines.
_GENERAL_LOG_ENTRY = re.compile(
    r"^(?:\d{6} [ \d]\d:\d\d:\d\d\t|\t\t)\s*(\d+) ([A-Za-z][A-Za-z ]*)\t(.*)$")


@dataclass(frozen=True)
class LoggedCommand:
    conn: int  # the server's connection id
    command: str  # "Query", "Prepare", "Execute", ...
    text: str  # the statement as the server received it (Execute: with its values in it)


@dataclass
class MariadbServer:
    host: str
    port: int
    dir: Path
    socket: Path
    password: str
    user: str = "gospan"
    database: str = "gospan"

    @property
    def dsn(self):
        """go-sql-driver/mysql's data source name."""
        return f"{self.user}:{self.password}@tcp({self.host}:{self.port})/{self.database}"

    @property
    def general_log_file(self):
        return self.dir / "general.log"

    def _client(self, sql, database, root=False, timeout=60):
        if root:
            # root has no password and is reached on the socket only (mariadb-install-db's
            # default for it, with --auth-root-authentication-method=normal)
            cmd = ["mariadb", "--no-defaults", "--protocol=socket", "-S", str(self.socket),
                   "-u", "root"]
            env = dict(os.environ)
        else:
            cmd = ["mariadb", "--no-defaults", "--protocol=tcp", "-h", self.host,
                   "-P", str(self.port), "-u", self.user]
            env = dict(os.environ, MYSQL_PWD=self.password)
        # --comments: sent as written (the client strips them by default); --raw: values
        # unescaped; --batch: tab-separated rows
        cmd += ["--batch", "--raw", "--skip-column-names", "--comments",
                "--connect-timeout=10", "-e", sql]
        if database:
            cmd.append(database)
        try:
            res = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env)
        except subprocess.TimeoutExpired:
            raise AssertionError(f"mariadb -e {sql!r} did not finish within {timeout} s") from None
        if res.returncode != 0:
            raise AssertionError(f"mariadb -e {sql!r} failed: {res.stderr.strip()}")
        return res.stdout

    def fresh_database(self, name):
        """Database NAME, empty (dropped first if there), which the fixture's user may use:
        made as root, the one account that may."""
        self._client(f"DROP DATABASE IF EXISTS {name}; CREATE DATABASE {name}; "
                     f"GRANT ALL ON {name}.* TO '{self.user}'@'{self.host}'", None, root=True)

    def query(self, sql, database=None):
        """SQL's result through the mariadb client as user gospan: one line per row, columns
        split by '|' (NULL as NULL), as PostgresServer.query. Raises AssertionError with the
        client's error when it fails."""
        out = self._client(sql, database or self.database)
        return "\n".join(line.replace("\t", "|") for line in out.rstrip("\n").split("\n")) \
            if out.strip("\n") else ""

    def general_log(self, commands=("Query", "Prepare", "Execute")):
        """What the server received since it started, from its general query log, in order:
        LoggedCommand entries of COMMANDS (all of them when None). A prepared statement shows
        as Prepare (its text) and Execute (its text with the values in it)."""
        try:
            text = self.general_log_file.read_text(errors="replace")
        except OSError as e:
            raise AssertionError(f"cannot read the general log '{self.general_log_file}': {e}")
        entries, cur = [], None
        if text.endswith("\n"):
            text = text[:-1]  # the last entry's end, not part of its statement
        # the file's first three lines are the server's banner and the column heads
        for line in text.split("\n")[3:]:
            m = _GENERAL_LOG_ENTRY.match(line)
            if m:
                cur = [int(m.group(1)), m.group(2), m.group(3)]
                entries.append(cur)
            elif cur is not None:
                cur[2] += "\n" + line
        got = [LoggedCommand(*e) for e in entries]
        return [e for e in got if commands is None or e.command in commands]


def _mariadb_binaries():
    return shutil.which("mariadbd", path=os.environ.get("PATH", "") + ":/usr/sbin:/sbin"), \
        shutil.which("mariadb-install-db"), shutil.which("mariadb")


@pytest.fixture(scope="session")
def mariadb_server(free_port):
    mariadbd, install_db, client = _mariadb_binaries()
    if not (mariadbd and install_db and client):
        pytest.skip("MariaDB is not installed (mariadbd, mariadb-install-db and mariadb are "
                    "needed): make deps installs Debian's mariadb-server and mariadb-client "
                    "packages")
    as_user = []
    owner = None
    if os.geteuid() == 0:
        # mariadbd refuses root unless told --user=root: as root, run it as the user Debian's
        # package makes, else as root.
        try:
            owner = pwd.getpwnam("mysql")
            as_user = ["--user=mysql"]
        except KeyError:
            as_user = ["--user=root"]

    tmp = Path(tempfile.mkdtemp(prefix="gospan-mariadb-"))
    data, log = tmp / "data", tmp / "mariadb.log"
    server = MariadbServer("127.0.0.1", free_port(), tmp, tmp / "sock",
                           password="gospan-db-" + os.urandom(6).hex())
    if owner is not None:
        os.chown(tmp, owner.pw_uid, owner.pw_gid)
    # A throwaway server: no fsync, no doublewrite, a small redo log.
    common = ["--no-defaults", f"--datadir={data}", *as_user, "--innodb-log-file-size=16M",
              "--innodb-flush-log-at-trx-commit=0", "--innodb-doublewrite=0",
              "--innodb-flush-method=nosync", "--sync-binlog=0", "--skip-name-resolve"]
    proc = None
    try:
        with open(log, "ab") as logf:
            res = subprocess.run([install_db, *common, "--skip-test-db",
                                  "--auth-root-authentication-method=normal"],
                                 stdin=subprocess.DEVNULL, stdout=logf,
                                 stderr=subprocess.STDOUT, timeout=120)
            if res.returncode != 0:
                raise AssertionError(f"mariadb-install-db failed (status {res.returncode}); "
                                     f"{log}:\n{_tail(log)}")
            proc = subprocess.Popen([mariadbd, *common, "--bind-address=" + server.host,
                                     f"--port={server.port}", f"--socket={server.socket}",
                                     f"--pid-file={tmp / 'mariadbd.pid'}",
                                     f"--log-error={log}", "--general-log=1",
                                     f"--general-log-file={server.general_log_file}",
                                     "--skip-log-bin", "--character-set-server=utf8mb4"],
                                    stdin=subprocess.DEVNULL, stdout=logf,
                                    stderr=subprocess.STDOUT, start_new_session=True)
        _wait_mariadb(server, proc, log)
        yield server
    finally:
        if proc is not None:
            end_process(proc, timeout=STOP_TIMEOUT)
        shutil.rmtree(tmp, ignore_errors=True)


def _wait_mariadb(server, proc, log):
    """Waits until root can connect on the socket, then makes the database and the user: real
    statements."""
    deadline = time.monotonic() + START_TIMEOUT
    while True:
        if proc.poll() is not None:
            raise AssertionError(f"mariadbd exited with status {proc.returncode} at start; "
                                 f"{log}:\n{_tail(log)}")
        try:
            server._client("SELECT 1", None, root=True, timeout=10)
            break
        except AssertionError as e:
            why = e
        if time.monotonic() > deadline:
            raise AssertionError(f"mariadbd did not accept connections on {server.socket} "
                                 f"within {START_TIMEOUT:.0f} s ({why}); {log}:\n{_tail(log)}")
        time.sleep(0.1)
    try:
        server._client(f"CREATE DATABASE {server.database}; "
                       f"CREATE USER '{server.user}'@'{server.host}' "
                       f"IDENTIFIED BY '{server.password}'; "
                       f"GRANT ALL ON {server.database}.* TO '{server.user}'@'{server.host}'",
                       None, root=True)
        server.query("SELECT 1")
    except AssertionError as e:
        raise AssertionError(f"{e}; {log}:\n{_tail(log)}") from None
