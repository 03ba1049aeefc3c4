#!/usr/bin/env bash
# What `make demo` runs: the docker-compose demo's topology as plain processes on 127.0.0.1.
# Jaeger (OTLP/HTTP in, HTTP query API out), a PostgreSQL, a Redis and a Kafka broker of the
# demo's own (in temporary directories, PostgreSQL run as the user postgres), examples/backend
# (HTTP) reading its items from PostgreSQL through the Redis cache and publishing an order event
# per item read to the Kafka topic orders, examples/inventory (gRPC), examples/consumer
# processing the orders (it asks the inventory for each one's stock over gRPC),
# examples/frontend calling the backend over HTTP and looking items up in the inventory over
# gRPC, one gospan attached to each of the four services and exporting to Jaeger, and
# examples/loadgen sending a fixed number of requests to the frontend. The traces are then read
# back from Jaeger's query API, printed as trees, and each request is checked to be one trace
# across the services it reached, every parent link exact, through Kafka too (the backend's
# PRODUCER span the parent of the consumer's CONSUMER span, the consumer's inventory call under
# that), with the backend's data store calls (Redis GET, on a miss PostgreSQL SELECT and Redis
# SET) under its SERVER spans. The gospans also count every call into
# RED metrics (OTEL_METRICS_EXPORTER=console: Jaeger takes no metrics) and print a table per
# service every 10 s and at exit; the demo ends with each service's table at exit, whose request
# counts are checked against what loadgen sent. On a terminal everything keeps running
# afterwards, loadgen included, until Ctrl-C; otherwise (or with GOSPAN_DEMO_KEEP=0) everything is
# stopped and the script exits.
# Every process started here is stopped on any exit: loadgen first, then the gospans with
# SIGTERM (they flush what is pending and print a summary and their metrics, shown here), the
# services, the data stores and the Kafka broker (their files removed), Jaeger.
#
# Jaeger v2 comes from tests/e2e/jaeger.py: built from source through the Go module proxy the
# first time (about 6 minutes) and cached. Such a build has no web UI, hence the trees printed
# here. Where Jaeger cannot be had (no Python, the build fails, GOSPAN_DEMO_JAEGER=0) the gospans
# print their spans instead (OTEL_TRACES_EXPORTER=console) and everything else runs the same.
# The OTEL_* variables of the caller's environment are not used: the demo sets its own.
#
# PostgreSQL and Redis are Debian's postgresql and redis-server packages (`make deps` installs
# them); where they are missing the demo says so and stops, unless GOSPAN_DEMO_DATASTORES=0, which
# runs the backend without data stores.
#
# The Kafka broker is Apache Kafka from tests/e2e/kafka.py (KRaft, one node, on loopback ports):
# its jars fetched from Maven Central by Maven the first time (about 15 s) and cached, run on Java
# 17 or later (Debian's openjdk-17-jre-headless and maven: `make deps`); it starts in about 7 s,
# while Jaeger and the data stores start. Where Python or Java is missing the demo says so and
# stops, unless GOSPAN_DEMO_KAFKA=0, which runs the backend without Kafka and no consumer.
#
#   GOSPAN_BUILD              absolute build directory holding gospan (default: <repo>/build)
#   GOSPAN_DEMO_REQUESTS      requests sent before the traces are shown (default 20)
#   GOSPAN_DEMO_INTERVAL      time between two requests, a Go duration (default 200ms)
#   GOSPAN_DEMO_JAEGER        0: no Jaeger, spans printed by the gospans
#   GOSPAN_DEMO_KEEP          0: stop after showing the traces, also on a terminal
#   GOSPAN_DEMO_DATASTORES    0: no PostgreSQL nor Redis, the backend reads no item
#   GOSPAN_DEMO_KAFKA         0: no Kafka broker nor consumer, the backend publishes no order
#   GOSPAN_JAEGER_BIN         a ready Jaeger v2 binary, e.g. a release binary (which has the UI)
#   GOSPAN_ATTACH_TIMEOUT     seconds to wait for each 'gospan: attached' (default 30)
#   GOSPAN_DEMO_SPAN_TIMEOUT  seconds to wait for the spans to arrive (default 30)
#   GO, PYTHON                the Go and Python commands (default go, python3)
#   PG_BINDIR                 PostgreSQL's programs (default the newest /usr/lib/postgresql/*/bin)
#   REDIS_SERVER              the Redis server command (default redis-server)
#   GOSPAN_KAFKA_JAVA         the java to run Kafka with (default: java on PATH)
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/.." && pwd)
build=${GOSPAN_BUILD:-$repo/build}
gospan=$build/gospan
go=${GO:-go}
python=${PYTHON:-python3}
jaeger_py=$repo/tests/e2e/jaeger.py
kafka_py=$repo/tests/e2e/kafka.py
requests=${GOSPAN_DEMO_REQUESTS:-20}
interval=${GOSPAN_DEMO_INTERVAL:-200ms}
attach_timeout=${GOSPAN_ATTACH_TIMEOUT:-30}
span_timeout=${GOSPAN_DEMO_SPAN_TIMEOUT:-30}
keep=0
if [ -t 1 ] && [ "${GOSPAN_DEMO_KEEP:-1}" != 0 ]; then
	keep=1
fi

say() { printf 'demo: %s\n' "$*"; }
die() { printf 'demo: %s\n' "$*" >&2; exit 1; }
indent() { sed '/./s/^/    /'; }

if [ "$(id -u)" -ne 0 ]; then
	die "gospan loads BPF programs and attaches uprobes, which needs root: run 'sudo make demo'"
fi
[ -x "$gospan" ] || die "'$gospan' is not built: run 'make' first"
command -v "$go" >/dev/null || die "Go ('$go') is needed to build the example services"
command -v setsid >/dev/null || die "setsid (util-linux) is needed to run the services apart"
case $requests in
'' | *[!0-9]* | 0) die "GOSPAN_DEMO_REQUESTS='$requests' is not a positive number" ;;
esac

# The backend's data stores: what they need, said all at once before anything starts.
datastores=1
[ "${GOSPAN_DEMO_DATASTORES:-1}" != 0 ] || datastores=
pg_bindir= redis_server=
if [ -n "$datastores" ]; then
	pg_bindir=${PG_BINDIR:-$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)}
	redis_server=${REDIS_SERVER:-redis-server}
	missing=()
	for p in initdb postgres pg_isready; do
		if [ -z "$pg_bindir" ] || [ ! -x "$pg_bindir/$p" ]; then
			m="PostgreSQL: no initdb, postgres, pg_isready in"
			missing+=("$m ${pg_bindir:-/usr/lib/postgresql/*/bin} (Debian package postgresql)")
			break
		fi
	done
	# PostgreSQL refuses to run as root: it runs as the user Debian's package makes.
	id -u postgres >/dev/null 2>&1 ||
		missing+=("the user postgres, for PostgreSQL to run as (Debian package postgresql)")
	command -v setpriv >/dev/null ||
		missing+=("setpriv, to run PostgreSQL as postgres (Debian package util-linux)")
	command -v "$redis_server" >/dev/null ||
		missing+=("Redis: no '$redis_server' (Debian package redis-server)")
	if [ ${#missing[@]} -gt 0 ]; then
		say "the backend's data stores cannot run here; missing:"
		for m in "${missing[@]}"; do say "  $m"; done
		die "'make deps' installs them (apt-get install postgresql redis-server); or run with" \
			"GOSPAN_DEMO_DATASTORES=0 for a backend without data stores"
	fi
fi

# The Kafka broker and the consumer: what they need, said all at once too.
kafka=1
[ "${GOSPAN_DEMO_KAFKA:-1}" != 0 ] || kafka=
java=${GOSPAN_KAFKA_JAVA:-java}
if [ -n "$kafka" ]; then
	missing=()
	if ! command -v "$python" >/dev/null; then
		missing+=("Python ('$python'), which runs the broker (tests/e2e/kafka.py)")
	elif ! "$python" "$kafka_py" path >/dev/null 2>&1 && ! command -v mvn >/dev/null; then
		missing+=("Maven (mvn), which fetches the broker from Maven Central the first time" \
			"(Debian package maven)")
	fi
	command -v "$java" >/dev/null ||
		missing+=("Java 17 or later: no '$java' (Debian package openjdk-17-jre-headless)")
	if [ ${#missing[@]} -gt 0 ]; then
		say "the Kafka broker cannot run here; missing:"
		for m in "${missing[@]}"; do say "  $m"; done
		die "'make deps' installs them (apt-get install openjdk-17-jre-headless maven); or" \
			"run with GOSPAN_DEMO_KAFKA=0 for a backend that publishes no order"
	fi
fi
for v in $(compgen -e); do
	case $v in OTEL_*) unset "$v" ;; esac
done

work=$(mktemp -d /tmp/gospan-demo.XXXXXX)
# PostgreSQL's files, apart: $work is root's alone, and PostgreSQL runs as postgres.
pg_dir=
# The traced services, in the order their gospans sum up; each one's pid, its gospan's pid and,
# once stopped, its gospan's exit status.
traced=(frontend backend inventory)
[ -z "$kafka" ] || traced+=(consumer)
services=three
[ -z "$kafka" ] || services=four
declare -A service_pid=() gospan_pid=() gospan_rc=()
jaeger_pid= load_pid= postgres_pid= redis_pid= kafka_pid=

# Starts a program in its own session, output in $work/NAME.out and .err, and sets $started.
# Its own session: a Ctrl-C on the terminal reaches this script alone, which then stops
# everything in an order that lets the gospans deliver their last spans.
started=
start() {
	local name=$1
	shift
	setsid "$@" </dev/null >"$work/$name.out" 2>"$work/$name.err" &
	started=$!
}

alive() { [ -n "$1" ] && kill -0 "$1" 2>/dev/null; }

# Sends SIGTERM to every pid given, waits up to SECS seconds for them all, then SIGKILLs the rest.
stop_pids() {
	local secs=$1 pid i left
	shift
	for pid in "$@"; do kill -TERM "$pid" 2>/dev/null || true; done
	for ((i = 0; i < secs * 10; i++)); do
		left=0
		for pid in "$@"; do alive "$pid" && left=1; done
		[ "$left" = 0 ] && break
		sleep 0.1
	done
	for pid in "$@"; do
		if alive "$pid"; then
			say "pid $pid did not exit within $secs s of SIGTERM: killed"
			kill -KILL "$pid" 2>/dev/null || true
		fi
	done
}

stop_gospans() {
	local pids=() svc pid rc
	for svc in "${traced[@]}"; do
		if alive "${gospan_pid[$svc]:-}"; then pids+=("${gospan_pid[$svc]}"); fi
	done
	if [ ${#pids[@]} -gt 0 ]; then
		say "stopping the gospans (SIGTERM: they detach, export what is pending and sum up)"
		stop_pids 30 "${pids[@]}"
	fi
	for svc in "${traced[@]}"; do
		pid=${gospan_pid[$svc]:-}
		[ -n "$pid" ] || continue
		rc=0
		wait "$pid" 2>/dev/null || rc=$?
		gospan_rc[$svc]=$rc
		gospan_pid[$svc]=
		if grep -q '^gospan: summary' "$work/gospan-$svc.err" 2>/dev/null; then
			say "gospan on $svc, exit status $rc:"
			grep -E '^gospan: (summary|metrics):' "$work/gospan-$svc.err" | indent
		else
			say "gospan on $svc exited with status $rc without a summary; its messages:"
			indent <"$work/gospan-$svc.err"
		fi
	done
}

stop_all() {
	local pids=() svc pid
	if alive "$load_pid"; then
		stop_pids 5 "$load_pid"
	fi
	load_pid=
	stop_gospans
	for svc in "${traced[@]}"; do
		if alive "${service_pid[$svc]:-}"; then pids+=("${service_pid[$svc]}"); fi
		service_pid[$svc]=
	done
	[ ${#pids[@]} -eq 0 ] || stop_pids 10 "${pids[@]}"
	# The backend is gone: PostgreSQL's smart shutdown (SIGTERM) has no client to wait for. The
	# broker's wrapper (kafka.py) stops it (a controlled shutdown, killed after 30 s) and removes
	# its files.
	pids=()
	for pid in "$postgres_pid" "$redis_pid" "$kafka_pid"; do
		if alive "$pid"; then pids+=("$pid"); fi
	done
	[ ${#pids[@]} -eq 0 ] || stop_pids 40 "${pids[@]}"
	postgres_pid= redis_pid= kafka_pid=
	if alive "$jaeger_pid"; then
		stop_pids 20 "$jaeger_pid"
	fi
	jaeger_pid=
}

cleanup() {
	local rc=$?
	trap - EXIT
	set +e # stop everything, whatever fails on the way
	# A second Ctrl-C must not cut the stop short: every wait in it is bounded.
	trap '' INT TERM
	stop_all
	# After Ctrl-C on a terminal, or a failure: the tables of whatever ran.
	[ -n "$metrics_said" ] || say_metrics
	rm -rf "$work"
	[ -z "$pg_dir" ] || rm -rf "$pg_dir"
	exit "$rc"
}
# The calls of KIND (http server, rpc server, db client...) in the table SVC's gospan printed at
# exit: the REQUESTS column (columns are two spaces or more apart, a name has single spaces).
counted() {
	sed -n '/^metrics of .* at exit, totals over /,$p' "$work/gospan-$1.out" 2>/dev/null |
		awk -F '  +' -v kind="$2" '$2 == kind { n += $4 } END { print n + 0 }'
}

# The RED metrics each gospan printed at exit: its last lines, from the first table "at exit"
# on (its spans, when it prints them, come before). With CHECK, what they counted against what
# loadgen sent; fails when they differ.
metrics_said=
say_metrics() {
	local svc any= fe be inv dbc con
	metrics_said=1
	for svc in "${traced[@]}"; do
		if grep -q '^metrics of .* at exit, totals over ' "$work/gospan-$svc.out" 2>/dev/null
		then
			any=1
		fi
	done
	[ -n "$any" ] || return 0
	say "the RED metrics of every call, sampled or not, as each gospan printed them at exit"
	say "  (OTEL_METRICS_EXPORTER=console; a table every 10 s before that, for the last 10 s):"
	for svc in "${traced[@]}"; do
		sed -n '/^metrics of .* at exit, totals over /,$p' "$work/gospan-$svc.out" \
			2>/dev/null | indent
	done
	[ "${1:-}" = check ] || return 0
	fe=$(counted frontend "http server") be=$(counted backend "http server")
	dbc=$(counted backend "db client") inv=$(counted inventory "rpc server")
	con=$(counted consumer "rpc client")
	if [ "$fe" -eq "$requests" ] && [ "$be" -eq "$backend_calls" ] &&
		[ "$dbc" -eq "$db_calls" ] && [ "$inv" -eq $((lookups + orders)) ] &&
		[ "$con" -eq "$orders" ]; then
		say "the tables count every call: the frontend's $fe requests are the $requests loadgen"
		say "  sent; the backend served its $be calls and made $dbc data store calls, the"
		if [ -n "$kafka" ]; then
			say "  inventory served its $inv lookups ($lookups of the frontend's, $orders of the"
			say "  consumer's: a stock check per order; gospan counts no messages in these tables)"
		else
			say "  inventory served its $inv lookups"
		fi
		return 0
	fi
	say "the tables do not count every call: frontend $fe of the $requests requests sent, backend" \
		"$be of $backend_calls calls, its data store calls $dbc of $db_calls, inventory $inv" \
		"of $((lookups + orders)) lookups${kafka:+, consumer $con of $orders stock checks}"
	return 1
}

trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# Waits up to SECS seconds for a line matching the regular expression RE in FILE while PID lives.
wait_for_line() {
	local file=$1 re=$2 secs=$3 pid=$4 i
	for ((i = 0; i < secs * 10; i++)); do
		grep -Eq "$re" "$file" 2>/dev/null && return 0
		alive "$pid" || { grep -Eq "$re" "$file" 2>/dev/null; return; }
		sleep 0.1
	done
	return 1
}

# ---- Kafka --------------------------------------------------------------------------------------

# Started first: the broker takes the longest to come up (7 s or more on two busy cores), and
# does so while the services are built and Jaeger and the data stores start. The topic orders is
# made as soon as it is up.
topic=orders
kafka_bootstrap=
if [ -n "$kafka" ]; then
	if ! "$python" "$kafka_py" path >/dev/null 2>&1; then
		say "fetching Apache Kafka from Maven Central (tests/e2e/kafka.py; once, about 15 s; the" \
			"jars are cached in $(dirname "$("$python" "$kafka_py" path)"))"
	fi
	"$python" "$kafka_py" fetch >/dev/null 2>"$work/kafka-fetch.err" || {
		indent <"$work/kafka-fetch.err" | tail -n 20
		die "cannot fetch the Kafka broker (above); GOSPAN_DEMO_KAFKA=0 runs without it"
	}
	start kafka env GOSPAN_KAFKA_JAVA="$(command -v "$java")" "$python" "$kafka_py" serve \
		--topic "$topic:1" --workdir "$work/kafka"
	kafka_pid=$started
fi

# ---- build ------------------------------------------------------------------------------------

mkdir -p "$build/examples"
progs=(backend inventory frontend loadgen) names="backend, inventory, frontend and loadgen"
[ -z "$kafka" ] || progs+=(consumer) names="backend, inventory, consumer, frontend and loadgen"
say "building examples/$names ($("$go" env GOVERSION)) into $build/examples/"
for prog in "${progs[@]}"; do
	(cd "$here/$prog" && GOTOOLCHAIN=local CGO_ENABLED=0 GOFLAGS=-buildvcs=false \
		"$go" build -o "$build/examples/$prog" .) || die "cannot build examples/$prog"
done

# ---- Jaeger -------------------------------------------------------------------------------------

jaeger_bin= otlp= query= ui=no
no_jaeger() {
	say "$1"
	say "  so the gospans print their spans instead (OTEL_TRACES_EXPORTER=console);"
	say "  the services, the gospans and the load run the same"
}
if [ "${GOSPAN_DEMO_JAEGER:-1}" = 0 ]; then
	no_jaeger "GOSPAN_DEMO_JAEGER=0: no Jaeger"
elif ! command -v "$python" >/dev/null; then
	no_jaeger "no Jaeger: Python ('$python') is needed to build, run and read it (tests/e2e/jaeger.py)"
else
	if path=$("$python" "$jaeger_py" path 2>"$work/jaeger-build.err"); then
		jaeger_bin=$path
	elif [ -n "${GOSPAN_JAEGER_BIN:-}" ]; then
		no_jaeger "no Jaeger: GOSPAN_JAEGER_BIN='$GOSPAN_JAEGER_BIN' is not an executable"
	else
		version=$(basename "$(dirname "$path")")
		say "building Jaeger ${version#jaeger-} from source through the Go module proxy:"
		say "  this happens once and takes about 6 minutes on 2 CPUs; the binary is cached in"
		say "  $(dirname "$path") for later runs (GOSPAN_DEMO_JAEGER=0 skips Jaeger)"
		t0=$SECONDS
		if jaeger_bin=$("$python" "$jaeger_py" build 2>"$work/jaeger-build.err"); then
			say "Jaeger built in $((SECONDS - t0)) s"
		else
			jaeger_bin=
			indent <"$work/jaeger-build.err" | tail -n 20
			no_jaeger "no Jaeger: it could not be built (above)"
		fi
	fi
fi
if [ -n "$jaeger_bin" ]; then
	say "starting Jaeger ($jaeger_bin) on loopback ports"
	start jaeger "$python" "$jaeger_py" serve --binary "$jaeger_bin" --workdir "$work"
	jaeger_pid=$started
	if wait_for_line "$work/jaeger.out" '^ready ' 90 "$jaeger_pid"; then
		ready=$(grep -m1 '^ready ' "$work/jaeger.out")
		otlp=$(sed -n 's/.* otlp=\([^ ]*\).*/\1/p' <<<"$ready")
		query=$(sed -n 's/.* query=\([^ ]*\).*/\1/p' <<<"$ready")
		ui=$(sed -n 's/.* ui=\([^ ]*\).*/\1/p' <<<"$ready")
		say "Jaeger: pid $jaeger_pid, OTLP/HTTP receiver $otlp, query API $query"
	else
		indent <"$work/jaeger.err" | tail -n 20
		alive "$jaeger_pid" && stop_pids 10 "$jaeger_pid"
		jaeger_pid=
		no_jaeger "no Jaeger: it did not start (above)"
	fi
fi

# ---- the data stores ----------------------------------------------------------------------------

# Sets $port to a loopback TCP port nothing listens on, below Linux's ephemeral range (where an
# outgoing connection could hold it), and not one picked before.
picked=" "
port=
pick_port() {
	local i
	for ((i = 0; i < 200; i++)); do
		port=$((20000 + RANDOM % 12000))
		case $picked in *" $port "*) continue ;; esac
		if ! (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
			picked+="$port "
			return 0
		fi
	done
	die "found no free loopback port"
}

# Whether Redis answers PING on PORT.
redis_pong() {
	(
		exec 3<>"/dev/tcp/127.0.0.1/$1" || exit 1
		printf 'PING\r\n' >&3
		IFS= read -r -t 2 reply <&3 || exit 1
		[ "${reply%$'\r'}" = "+PONG" ]
	) 2>/dev/null
}

pg_dsn= redis_addr=
if [ -n "$datastores" ]; then
	pg_dir=$(mktemp -d /tmp/gospan-demo-pg.XXXXXX)
	chown postgres: "$pg_dir"
	as_postgres=(setpriv --reuid=postgres --regid=postgres --init-groups)
	# A throwaway cluster: superuser gospan, trust on loopback, nothing worth an fsync.
	if ! "${as_postgres[@]}" "$pg_bindir/initdb" -D "$pg_dir/data" -U gospan --auth=trust \
		-E UTF8 --no-locale --no-sync --no-instructions </dev/null >"$work/initdb.out" 2>&1; then
		indent <"$work/initdb.out" | tail -n 20
		die "PostgreSQL's initdb failed (above)"
	fi
	pick_port
	# setpriv execs: the pid started is the postmaster's.
	start postgres "${as_postgres[@]}" "$pg_bindir/postgres" -D "$pg_dir/data" -h 127.0.0.1 \
		-p "$port" -k "$pg_dir" -c fsync=off -c synchronous_commit=off -c full_page_writes=off
	postgres_pid=$started
	pg_port=$port
	pg_dsn="postgres://gospan@127.0.0.1:$pg_port/postgres?sslmode=disable"
	for ((i = 0; i < 300; i++)); do
		"$pg_bindir/pg_isready" -q -h 127.0.0.1 -p "$port" -t 1 && break
		alive "$postgres_pid" || break
		sleep 0.1
	done
	if ! "$pg_bindir/pg_isready" -q -h 127.0.0.1 -p "$port" -t 1; then
		indent <"$work/postgres.err" | tail -n 20
		die "PostgreSQL did not accept connections on 127.0.0.1:$port within 30 s (above)"
	fi
	say "PostgreSQL: pid $postgres_pid, 127.0.0.1:$port, $("$pg_bindir/postgres" --version)," \
		"run as postgres in $pg_dir"
	pick_port
	start redis "$redis_server" --port "$port" --bind 127.0.0.1 --save '' --appendonly no \
		--dir "$work" --daemonize no
	redis_pid=$started
	redis_addr=127.0.0.1:$port
	for ((i = 0; i < 300; i++)); do
		redis_pong "$port" && break
		alive "$redis_pid" || break
		sleep 0.1
	done
	if ! redis_pong "$port"; then
		indent <"$work/redis.out" | tail -n 20
		die "Redis did not answer PING on $redis_addr within 30 s (above)"
	fi
	say "Redis: pid $redis_pid, $redis_addr, $("$redis_server" --version | cut -d' ' -f1-3)," \
		"persisting nothing"
else
	say "GOSPAN_DEMO_DATASTORES=0: no PostgreSQL nor Redis, the backend reads no item"
fi

if [ -n "$kafka" ]; then
	# kafka.py gives up on a broker that does not answer within 90 s of its start, and says why
	# once it has stopped it (30 s at most): this waits for that.
	if ! wait_for_line "$work/kafka.out" '^ready ' 150 "$kafka_pid"; then
		indent <"$work/kafka.err" | tail -n 20
		die "the Kafka broker did not come up (above)"
	fi
	kafka_bootstrap=$(sed -n 's/^ready bootstrap=\([^ ]*\).*/\1/p' "$work/kafka.out" | head -n 1)
	say "Kafka: pid $kafka_pid, $kafka_bootstrap, Apache Kafka" \
		"$(basename "$(dirname "$("$python" "$kafka_py" path)")" | sed 's/^kafka-//') (KRaft, one" \
		"node, tests/e2e/kafka.py), the topic '$topic' made, one partition"
else
	say "GOSPAN_DEMO_KAFKA=0: no Kafka broker nor consumer, the backend publishes no order"
fi

# ---- the services -------------------------------------------------------------------------------

# Port 0: the kernel picks a free port and the service prints the one it got.
start_service() {
	local name=$1
	shift
	start "$name" env OTEL_SERVICE_NAME="$name" "$build/examples/$name" -addr 127.0.0.1:0 "$@"
	if ! wait_for_line "$work/$name.out" '^listening on ' 15 "$started"; then
		indent <"$work/$name.err"
		die "$name did not start listening within 15 s"
	fi
}
# Prints the address NAME, just started, said it listens on.
listening_on() { sed -n 's/^listening on //p' "$work/$1.out" | head -n 1; }
backend_args=()
[ -z "$datastores" ] || backend_args+=(-pg "$pg_dsn" -redis "$redis_addr")
[ -z "$kafka" ] || backend_args+=(-kafka "$kafka_bootstrap" -kafka-topic "$topic")
start_service backend "${backend_args[@]}"
service_pid[backend]=$started
backend_url=http://$(listening_on backend)
say "backend: pid $started, $backend_url, HTTP (OTEL_SERVICE_NAME=backend)"
if [ -n "$datastores" ]; then
	say "  reads items from PostgreSQL through the Redis cache: GET, and on a miss SELECT and SET"
fi
if [ -n "$kafka" ]; then
	say "  publishes an order event per item read to the topic '$topic' (kafka-go's Writer)"
fi
start_service inventory
service_pid[inventory]=$started
inventory_addr=$(listening_on inventory)
say "inventory: pid $started, $inventory_addr, gRPC in cleartext (OTEL_SERVICE_NAME=inventory)"
# A fetch waits at most this long, so that from then on after its gospan attached, every order
# is seen (examples/consumer/README.md).
consumer_poll=1
if [ -n "$kafka" ]; then
	start consumer env OTEL_SERVICE_NAME=consumer "$build/examples/consumer" \
		-kafka "$kafka_bootstrap" -topic "$topic" -inventory "$inventory_addr" \
		-poll "${consumer_poll}s"
	service_pid[consumer]=$started
	if ! wait_for_line "$work/consumer.out" '^consuming ' 40 "$started"; then
		indent <"$work/consumer.err"
		die "the consumer did not start within 40 s"
	fi
	say "consumer: pid $started, $(sed -n 's/^consuming //p' "$work/consumer.out" | head -n 1)," \
		"asks the inventory for each order's stock (OTEL_SERVICE_NAME=consumer)"
fi
start_service frontend -backend "$backend_url" -inventory "$inventory_addr"
service_pid[frontend]=$started
frontend_url=http://$(listening_on frontend)
say "frontend: pid $started, $frontend_url, calls the backend and looks items up in the inventory" \
	"(OTEL_SERVICE_NAME=frontend)"

# ---- the gospans --------------------------------------------------------------------------------

# Metrics on the console whatever the traces do (Jaeger takes no metrics): a table per service
# every 10 s, for `tail -f` on a terminal, and the totals at exit, which the demo shows last.
gospan_env=(OTEL_BSP_SCHEDULE_DELAY=200 OTEL_METRICS_EXPORTER=console
	OTEL_METRIC_EXPORT_INTERVAL=10000)
if [ -n "$otlp" ]; then
	gospan_env+=(OTEL_EXPORTER_OTLP_ENDPOINT="$otlp")
	say "attaching one gospan to each service, exporting to Jaeger at $otlp/v1/traces"
else
	gospan_env+=(OTEL_TRACES_EXPORTER=console)
	say "attaching one gospan to each service, printing spans (OTEL_TRACES_EXPORTER=console)"
fi
# The callees first, so that they are traced before the frontend calls them.
attach_order=(backend inventory)
[ -z "$kafka" ] || attach_order+=(consumer)
attach_order+=(frontend)
for svc in "${attach_order[@]}"; do
	start "gospan-$svc" env "${gospan_env[@]}" "$gospan" --pid "${service_pid[$svc]}"
	gospan_pid[$svc]=$started
done
for svc in "${attach_order[@]}"; do
	pid=${gospan_pid[$svc]}
	if ! wait_for_line "$work/gospan-$svc.err" '^gospan: attached' "$attach_timeout" "$pid"; then
		if alive "$pid"; then
			indent <"$work/gospan-$svc.err"
			die "gospan on $svc did not attach within $attach_timeout s"
		fi
		die "gospan on $svc exited before attaching; its messages follow"
	fi
	say "gospan on $svc: pid $pid"
	indent <"$work/gospan-$svc.err"
done

# gospan adds traceparent to the frontend's calls at the socket layer (a header of each HTTP/1
# request, a field of each cleartext gRPC call's HEADERS frame); where it cannot (no cgroup v2
# hierarchy on this host), it says so when it attaches.
no_propagation=
if grep -q 'outgoing trace context is off' "$work/gospan-frontend.err"; then
	no_propagation=1
fi
# The consumer's fetch that was waiting when its gospan attached would hand its order over
# unseen: the load starts once that fetch has ended (-poll) and another begun.
if [ -n "$kafka" ]; then
	say "waiting ${consumer_poll} s for the consumer's fetch that was waiting when its gospan" \
		"attached to end (its order would go unseen)"
	sleep "$consumer_poll.2"
fi

# ---- the load -----------------------------------------------------------------------------------

urls=$frontend_url/direct/1,$frontend_url/spawn/2,$frontend_url/both/3,$frontend_url/backend-fail
# What each of those makes: backend calls (HTTP) and inventory lookups (gRPC; items 1 to 3 are
# in stock, /backend-fail looks none up).
calls=(1 1 2 1)
looks=(1 1 1 0)
reads=(1 1 2 0)
backend_calls=0 lookups=0 item_reads=0 reading=0
for ((i = 0; i < requests; i++)); do
	backend_calls=$((backend_calls + calls[i % 4]))
	lookups=$((lookups + looks[i % 4]))
	item_reads=$((item_reads + reads[i % 4]))
	[ "${reads[i % 4]}" = 0 ] || reading=$((reading + 1))
done
# With Kafka each /work call is an order: a message to the consumer, which asks the inventory
# for the item's stock. The requests that read an item are the traces that go through Kafka.
orders=0 ordering=0
if [ -n "$kafka" ]; then
	orders=$item_reads ordering=$reading
fi
# The backend's data store calls: each /work call reads its item, a Redis GET; the first read of
# items 1, 2 and 3 misses and reads PostgreSQL (SELECT) and fills the cache (SET). The backend
# reads an item once at a time, so /both's two calls miss once between them.
misses=0 db_calls=0
if [ -n "$datastores" ]; then
	misses=$((requests < 3 ? requests : 3))
	db_calls=$((item_reads + 2 * misses))
fi
say "loadgen: $requests requests to the frontend, one every $interval, in turn to"
say "  /direct/1, /spawn/2, /both/3 and /backend-fail"
t0=$SECONDS
"$build/examples/loadgen" -url "$urls" -interval "$interval" -count "$requests" | indent ||
	die "loadgen failed"

# ---- the traces ---------------------------------------------------------------------------------

if [ -n "$query" ]; then
	# Each request: a SERVER span in the frontend, a CLIENT span per backend call and per lookup,
	# the backend's SERVER span for each call and the inventory's for each lookup.
	say "waiting for the spans to reach Jaeger (at most $span_timeout s)"
	# With the data stores, the backend's CLIENT span of each data store call too. With Kafka,
	# per order the backend's PRODUCER span, the consumer's CONSUMER span and its CLIENT span
	# (the stock check), and the inventory's SERVER span of that check.
	want_spans=(--spans frontend=$((requests + backend_calls + lookups))
		--spans backend=$((backend_calls + db_calls + orders))
		--spans inventory=$((lookups + orders)))
	[ -z "$kafka" ] || want_spans+=(--spans consumer=$((2 * orders)))
	if ! "$python" "$jaeger_py" wait --query "$query" --timeout "$span_timeout" \
		"${want_spans[@]}" | indent; then
		say "not every span arrived in time; showing what Jaeger has"
	fi
	say "the traces, as Jaeger's query API gives them ($query/api/traces?service=frontend):"
	want_db=()
	[ -z "$datastores" ] || want_db=(--datastores backend)
	shown=()
	for svc in "${traced[@]}"; do shown+=(--service "$svc"); done
	rc=0
	"$python" "$jaeger_py" show --query "$query" "${shown[@]}" "${want_db[@]}" \
		>"$work/show.out" || rc=$?
	case $rc in
	0 | 3) indent <"$work/show.out" ;;
	*) die "cannot read the traces from Jaeger" ;;
	esac
	# show's status 3: a data store call of the backend missing, or not under its SERVER span.
	[ "$rc" = 0 ] || die "the backend's data store calls are not in its traces as they should" \
		"be: each one a CLIENT span, the child of the backend's SERVER span (above)"
	joined=$(sed -n 's/^joined traces: \([0-9]*\) of .*/\1/p' "$work/show.out")
	# "hop CALLER -> CALLEE, PROTOCOL NAME: N calls (or messages), in M of the joined traces":
	# NAME, N, M.
	hop() {
		sed -n "s/^hop $1 -> $2, $3 \([^:]*\): \([0-9]*\) [a-z]*, in \([0-9]*\) of .*/\1 \2 \3/p" \
			"$work/show.out" | head -n 1
	}
	read -r http_name http_calls http_traces <<<"$(hop frontend backend HTTP)" || true
	read -r grpc_name grpc_calls grpc_traces <<<"$(hop frontend inventory gRPC)" || true
	read -r topic_name sent sent_traces <<<"$(hop backend consumer Kafka)" || true
	read -r check_name checks check_traces <<<"$(hop consumer inventory gRPC)" || true
	# "db backend -> SYSTEM NAME: N calls, in M traces": N.
	db() {
		sed -n "s/^db backend -> $1: \([0-9]*\) calls, in [0-9]* traces$/\1/p" "$work/show.out" |
			head -n 1
	}
	db_get=$(db "redis GET") db_select=$(db "postgresql SELECT items") db_set=$(db "redis SET")
else
	# The console prints each trace when its root span arrives. The frontend has a trace per
	# request; the backend and the inventory their parts of each of those (a trace per call if
	# no context went out).
	say "waiting for the gospans to print the spans (at most $span_timeout s)"
	trace_ids() {
		{ grep -Eo 'trace[= ][0-9a-f]{32}' "$1" 2>/dev/null || true; } | cut -c7- | sort -u
	}
	# The consumer's spans are in the traces of the requests that made an order (and its stock
	# checks in those the inventory has already).
	declare -A want=([frontend]=$requests [backend]=$requests [inventory]=$lookups
		[consumer]=$ordering)
	declare -A got=([frontend]=0 [backend]=0 [inventory]=0 [consumer]=0)
	if [ -n "$no_propagation" ]; then
		want[backend]=$backend_calls want[inventory]=$((lookups + orders)) want[consumer]=$orders
	fi
	short=1
	for ((i = 0; i < span_timeout * 10; i++)); do
		short=
		for svc in "${traced[@]}"; do
			got[$svc]=$(trace_ids "$work/gospan-$svc.out" | wc -l)
			[ "${got[$svc]}" -ge "${want[$svc]}" ] || short=1
		done
		[ -z "$short" ] && break
		sleep 0.1
	done
	if [ -n "$short" ]; then
		say "not every trace was printed in time (frontend ${got[frontend]} of ${want[frontend]}," \
			"backend ${got[backend]} of ${want[backend]}, inventory ${got[inventory]} of" \
			"${want[inventory]}${kafka:+, consumer ${got[consumer]} of ${want[consumer]}})"
	fi
	sleep 0.5 # anything of the last batch still being written
	for svc in "${traced[@]}"; do
		say "spans of $svc, as its gospan printed them:"
		# The traces alone: the metrics tables on the same output are shown at the end.
		awk '/^metrics of / { table = 1 } !table { print } /^$/ { table = 0 }' \
			"$work/gospan-$svc.out" | indent
		trace_ids "$work/gospan-$svc.out" >"$work/$svc.traces"
		got[$svc]=$(wc -l <"$work/$svc.traces")
	done
	# Traces with spans of the frontend and of the backend, of the frontend and of the inventory
	# (and of the frontend and of the consumer).
	with_be=$(comm -12 "$work/frontend.traces" "$work/backend.traces" | wc -l)
	with_inv=$(comm -12 "$work/frontend.traces" "$work/inventory.traces" | wc -l)
	with_con=0
	if [ -n "$kafka" ]; then
		with_con=$(comm -12 "$work/frontend.traces" "$work/consumer.traces" | wc -l)
		say "traces printed: ${got[frontend]} with spans of frontend, ${got[backend]} with" \
			"spans of backend, ${got[inventory]} with spans of inventory, ${got[consumer]} with" \
			"spans of consumer; $with_be with spans of frontend and backend, $with_inv with" \
			"spans of frontend and inventory, $with_con with spans of frontend and consumer"
	else
		say "traces printed: ${got[frontend]} with spans of frontend, ${got[backend]} with" \
			"spans of backend, ${got[inventory]} with spans of inventory; $with_be with spans of" \
			"frontend and backend, $with_inv with spans of frontend and inventory"
	fi
	if [ -n "$datastores" ]; then
		# The backend's data store calls as its gospan printed them: CLIENT lines (with no HTTP
		# status: the backend makes no HTTP call) under a SERVER line of the same trace.
		db_printed() {
			awk -v pat="^ *CLIENT $1" '
				/^trace / { server = -1; next }
				{ match($0, /^ */); indent = RLENGTH }
				/^ *SERVER / { server = indent; next }
				$0 ~ pat && server >= 0 && indent > server { n++ }
				END { print n + 0 }' "$work/gospan-backend.out"
		}
		db_get=$(db_printed "GET -> ") db_select=$(db_printed "SELECT items ")
		db_set=$(db_printed "SET -> ")
		say "data store calls printed under the backend's SERVER spans: redis GET $db_get," \
			"postgresql SELECT items $db_select, redis SET $db_set"
	fi
	if [ -n "$kafka" ]; then
		# How many lines the gospan on SERVICE printed that match PATTERN under a line that
		# matches UNDER (indented less, in the same trace): printed_under SERVICE PATTERN UNDER.
		printed_under() {
			awk -v pat="^ *$2" -v under="^ *$3" '
				/^trace / { top = -1; next }
				{ match($0, /^ */); indent = RLENGTH }
				$0 ~ under { top = indent; next }
				$0 ~ pat && top >= 0 && indent > top { n++ }
				END { print n + 0 }' "$work/gospan-$1.out"
		}
		sent=$(printed_under backend "PRODUCER send $topic " "SERVER ")
		checks=$(printed_under consumer "CLIENT inventory" "CONSUMER process $topic ")
		processed=$(grep -Ec "^ *CONSUMER process $topic " "$work/gospan-consumer.out")
		say "orders printed: backend PRODUCER send $topic under its SERVER spans $sent," \
			"consumer CONSUMER process $topic $processed, its stock checks (CLIENT) under" \
			"those $checks"
	fi
fi
say "requests sent and traces read in $((SECONDS - t0)) s"

# What the traces show: the demo's last word, after the services' summaries.
# The backend's data store calls, as Jaeger has them (or its gospan printed them).
say_datastores() {
	[ -n "$datastores" ] || return 0
	if [ "${db_get:-0}" -eq "$item_reads" ] && [ "${db_select:-0}" -eq "$misses" ] &&
		[ "${db_set:-0}" -eq "$misses" ]; then
		say "the backend read each item from the Redis cache, and on a miss from PostgreSQL, then"
		say "  filled the cache: one CLIENT span per call, the child of the backend's SERVER span:"
		say "  backend SERVER -> backend CLIENT (redis GET): $db_get calls, one per item read"
		say "  backend SERVER -> backend CLIENT (postgresql SELECT items): $db_select calls, one" \
			"per miss"
		say "  backend SERVER -> backend CLIENT (redis SET): $db_set calls, one per miss"
	else
		say "the backend's data store calls are not all there: redis GET ${db_get:-0} of" \
			"$item_reads, postgresql SELECT items ${db_select:-0} of $misses, redis SET" \
			"${db_set:-0} of $misses; see gospan's messages above"
	fi
}

# The orders through Kafka, as Jaeger has them (or the gospans printed them).
say_kafka() {
	[ -n "$kafka" ] && [ -z "$no_propagation" ] || return 0
	if [ -n "$query" ] && [ "${joined:-0}" -eq "$requests" ] &&
		[ "${sent:-0}" -eq "$orders" ] && [ "${sent_traces:-0}" -eq "$ordering" ] &&
		[ "${checks:-0}" -eq "$orders" ] && [ "${check_traces:-0}" -eq "$ordering" ]; then
		say "every order went through Kafka in the trace of the request that made it, read back"
		say "  from Jaeger, every parent link exact ($orders orders, of the $ordering requests that" \
			"read an item):"
		say "  frontend SERVER -> frontend CLIENT (HTTP $http_name) -> backend SERVER"
		say "    -> backend PRODUCER (send $topic_name) -> consumer CONSUMER (process" \
			"$topic_name): $sent messages, in $sent_traces traces"
		say "    -> consumer CLIENT (gRPC $check_name) -> inventory SERVER: $checks calls, in" \
			"$check_traces traces"
		say "  gospan put each PRODUCER span's traceparent into its record at the socket layer (a"
		say "  record header, the batch's CRC made right); the CONSUMER span continues it"
	elif [ -n "$query" ]; then
		say "not every order went through Kafka in its request's trace: the backend's PRODUCER"
		say "  spans with the consumer's CONSUMER span under them ${sent:-0} of $orders (in" \
			"${sent_traces:-0} of $ordering traces), the consumer's stock checks under those" \
			"${checks:-0} of $orders; the traces above say why ('not joined')"
	elif [ "${sent:-0}" -eq "$orders" ] && [ "${processed:-0}" -eq "$orders" ] &&
		[ "${checks:-0}" -eq "$orders" ]; then
		say "every order went through Kafka in the trace of the request that made it: the"
		say "  backend's $sent PRODUCER spans (send $topic) under its SERVER spans, the consumer's"
		say "  $processed CONSUMER spans (process $topic) in the same traces, its $checks stock" \
			"checks under them"
	else
		say "not every order is in the traces the gospans printed: backend PRODUCER send $topic" \
			"${sent:-0} of $orders, consumer CONSUMER process $topic ${processed:-0} of $orders," \
			"its stock checks ${checks:-0} of $orders"
	fi
}

say_verdict() {
	# /backend-fail looks no item up: its traces have no inventory span.
	local two= none=
	if [ "$lookups" -lt "$requests" ]; then
		two="(the $((requests - lookups)) to /backend-fail across two: they look no item up), "
		none=" (all but /backend-fail)"
	fi
	if [ -n "$no_propagation" ]; then
		say "the backend's and the inventory's spans start their own traces: gospan could not"
		say "  send trace context from the frontend (it said why when it attached, above), so"
		say "  neither learns the trace it is part of"
	elif [ -n "$query" ] && [ "${joined:-0}" -eq "$requests" ] &&
		[ "${http_calls:-0}" -eq "$backend_calls" ] && [ "${http_traces:-0}" -eq "$requests" ] &&
		[ "${grpc_calls:-0}" -eq "$lookups" ] && [ "${grpc_traces:-0}" -eq "$lookups" ]; then
		say "all $requests frontend requests are one trace across the $services services, read back"
		say "  from Jaeger ${two}every parent link exact:"
		say "  frontend SERVER -> frontend CLIENT (HTTP $http_name) -> backend SERVER:" \
			"$http_calls calls, in $http_traces traces"
		say "  frontend SERVER -> frontend CLIENT (gRPC $grpc_name) -> inventory SERVER:" \
			"$grpc_calls calls, in $grpc_traces traces"
		say "  gospan put each CLIENT span's traceparent on the wire at the socket layer: a header"
		say "  of the HTTP/1 request, a field of the gRPC call's HEADERS frame"
	elif [ -n "$query" ]; then
		say "only ${joined:-0} of $requests frontend requests are one trace across the services"
		say "  they call in Jaeger (the backend over HTTP in ${http_traces:-0} of $requests, the"
		say "  inventory over gRPC in ${grpc_traces:-0} of $lookups), though gospan sends trace"
		say "  context: the traces above say why ('not joined'); see also gospan's messages"
	elif [ "${got[frontend]}" -eq "$requests" ] && [ "${got[backend]}" -eq "$requests" ] &&
		[ "$with_be" -eq "$requests" ] && [ "${got[inventory]}" -eq "$lookups" ] &&
		[ "$with_inv" -eq "$lookups" ] && [ "${got[consumer]}" -eq "$ordering" ] &&
		[ "$with_con" -eq "$ordering" ]; then
		say "all $requests frontend requests are one trace across the $services services: gospan put"
		say "  each CLIENT span's traceparent on the wire at the socket layer (a header of the"
		say "  HTTP/1 request, a field of the gRPC call's HEADERS frame); the backend joined the"
		say "  trace of all $requests, the inventory those of the $lookups with a lookup$none"
		if [ -n "$kafka" ]; then
			say "  and the consumer those of the $ordering that made an order: gospan put each"
			say "  PRODUCER span's traceparent into its Kafka record at the socket layer too"
		fi
	else
		say "only $with_be of $requests frontend requests have the backend's spans in their trace"
		say "  and $with_inv of $lookups the inventory's, though gospan sends trace context: see"
		say "  its messages above"
	fi
	say_datastores
	say_kafka
}

# ---- keep running, or stop ----------------------------------------------------------------------

if [ "$keep" = 1 ]; then
	say_verdict
	# Its summaries go to the terminal: they show the load is still on.
	setsid "$build/examples/loadgen" -url "$urls" -interval "$interval" -summary 50 </dev/null &
	load_pid=$!
	say "everything keeps running; loadgen sends a request every $interval and sums up every 50"
	outs=$(printf "$work/gospan-%s.out " "${traced[@]}")
	outs=${outs% }
	if [ -n "$query" ]; then
		say "Jaeger's query API: $query/api/services, $query/api/traces?service=frontend&limit=20"
		say "the traces again (the fullest of each operation):"
		say "  $python $jaeger_py show --query $query ${shown[*]}"
		if [ "$ui" = yes ]; then
			say "Jaeger's UI: $query/"
		else
			say "no Jaeger UI: a Jaeger built from its Go module has no UI assets ($query/ is a"
			say "  placeholder page); for the UI, run this with GOSPAN_JAEGER_BIN=<a Jaeger v2 release"
			say "  binary>, or run the docker-compose demo"
		fi
		say "the metrics, a table per service every 10 s: tail -f $outs"
	else
		say "the spans, and a metrics table per service every 10 s: tail -f $outs"
	fi
	if [ -n "$datastores" ]; then
		say "the backend's data: $pg_bindir/psql -h 127.0.0.1 -p $pg_port -U gospan postgres;"
		say "  redis-cli -p ${redis_addr##*:} (keys item:ID, kept 30 s: then a read misses again)"
	fi
	if [ -n "$kafka" ]; then
		say "the orders as the consumer processed them: tail -f $work/consumer.err; Kafka at" \
			"$kafka_bootstrap, the topic '$topic'"
	fi
	say "Ctrl-C to stop (the gospans then print each service's metrics since the start)"
	trap 'exit 0' INT
	while alive "$load_pid"; do
		wait "$load_pid" 2>/dev/null || true
	done
	die "loadgen stopped on its own"
fi

stop_all
for svc in "${traced[@]}"; do
	[ "${gospan_rc[$svc]:-}" = 0 ] || die "gospan on $svc exited with status ${gospan_rc[$svc]:-}"
done
say_verdict
say_metrics check || die "the gospans' metrics miss calls (above)"
if [ -n "$query" ]; then
	say "done; Jaeger was stopped with the rest (on a terminal it keeps running until Ctrl-C)"
else
	say "done"
fi
