#!/usr/bin/env bash
# What `make demo` runs: the docker-compose demo's topology as plain processes on 127.0.0.1.
# Jaeger (OTLP/HTTP in, HTTP query API out), examples/backend, examples/frontend calling it, one
# gospan attached to each service and exporting to Jaeger, and examples/loadgen sending a fixed
# number of requests to the frontend. The traces are then read back from Jaeger's query API and
# printed as trees. On a terminal everything keeps running afterwards, loadgen included, until
# Ctrl-C; otherwise (or with GOSPAN_DEMO_KEEP=0) everything is stopped and the script exits.
# Every process started here is stopped on any exit: loadgen first, then the gospans with
# SIGTERM (they flush what is pending and print a summary, shown here), the services, Jaeger.
#
# Jaeger v2 comes from tests/e2e/jaeger.py: built from source through the Go module proxy the
# first time (about 6 minutes) and cached. Such a build has no web UI, hence the trees printed
# here. Where Jaeger cannot be had (no Python, the build fails, GOSPAN_DEMO_JAEGER=0) the gospans
# print their spans instead (OTEL_TRACES_EXPORTER=console) and everything else runs the same.
# The OTEL_* variables of the caller's environment are not used: the demo sets its own.
#
#   GOSPAN_BUILD              absolute build directory holding gospan (default: <repo>/build)
#   GOSPAN_DEMO_REQUESTS      requests sent before the traces are shown (default 20)
#   GOSPAN_DEMO_INTERVAL      time between two requests, a Go duration (default 200ms)
#   GOSPAN_DEMO_JAEGER        0: no Jaeger, spans printed by the gospans
#   GOSPAN_DEMO_KEEP          0: stop after showing the traces, also on a terminal
#   GOSPAN_JAEGER_BIN         a ready Jaeger v2 binary, e.g. a release binary (which has the UI)
#   GOSPAN_ATTACH_TIMEOUT     seconds to wait for each 'gospan: attached' (default 30)
#   GOSPAN_DEMO_SPAN_TIMEOUT  seconds to wait for the spans to arrive (default 30)
#   GO, PYTHON                the Go and Python commands (default go, python3)
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/.." && pwd)
build=${GOSPAN_BUILD:-$repo/build}
gospan=$build/gospan
go=${GO:-go}
python=${PYTHON:-python3}
jaeger_py=$repo/tests/e2e/jaeger.py
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
for v in $(compgen -e); do
	case $v in OTEL_*) unset "$v" ;; esac
done

work=$(mktemp -d /tmp/gospan-demo.XXXXXX)
jaeger_pid= backend_pid= frontend_pid= gospan_fe_pid= gospan_be_pid= load_pid=

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

# The gospans' exit statuses, once stopped.
gospan_fe_rc= gospan_be_rc=

stop_gospans() {
	local pids=() svc pid rc
	alive "$gospan_fe_pid" && pids+=("$gospan_fe_pid")
	alive "$gospan_be_pid" && pids+=("$gospan_be_pid")
	if [ ${#pids[@]} -gt 0 ]; then
		say "stopping the gospans (SIGTERM: they detach, export what is pending and sum up)"
		stop_pids 30 "${pids[@]}"
	fi
	for svc in frontend backend; do
		if [ $svc = frontend ]; then pid=$gospan_fe_pid; else pid=$gospan_be_pid; fi
		[ -n "$pid" ] || continue
		rc=0
		wait "$pid" 2>/dev/null || rc=$?
		if [ $svc = frontend ]; then
			gospan_fe_rc=$rc gospan_fe_pid=
		else
			gospan_be_rc=$rc gospan_be_pid=
		fi
		if grep -q '^gospan: summary' "$work/gospan-$svc.err" 2>/dev/null; then
			say "gospan on $svc, exit status $rc:"
			grep '^gospan: summary' "$work/gospan-$svc.err" | indent
		else
			say "gospan on $svc exited with status $rc without a summary; its messages:"
			indent <"$work/gospan-$svc.err"
		fi
	done
}

stop_all() {
	if alive "$load_pid"; then
		stop_pids 5 "$load_pid"
	fi
	load_pid=
	stop_gospans
	local pids=()
	alive "$frontend_pid" && pids+=("$frontend_pid")
	alive "$backend_pid" && pids+=("$backend_pid")
	[ ${#pids[@]} -eq 0 ] || stop_pids 10 "${pids[@]}"
	frontend_pid= backend_pid=
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
	rm -rf "$work"
	exit "$rc"
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

# ---- build ------------------------------------------------------------------------------------

mkdir -p "$build/examples"
say "building examples/backend, frontend and loadgen ($("$go" env GOVERSION)) into $build/examples/"
for prog in backend frontend loadgen; do
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
start_service backend
backend_pid=$started
backend_url=http://$(sed -n 's/^listening on //p' "$work/backend.out" | head -n 1)
say "backend: pid $backend_pid, $backend_url (OTEL_SERVICE_NAME=backend)"
start_service frontend -backend "$backend_url"
frontend_pid=$started
frontend_url=http://$(sed -n 's/^listening on //p' "$work/frontend.out" | head -n 1)
say "frontend: pid $frontend_pid, $frontend_url, calls the backend (OTEL_SERVICE_NAME=frontend)"

# ---- the gospans --------------------------------------------------------------------------------

gospan_env=(OTEL_BSP_SCHEDULE_DELAY=200)
if [ -n "$otlp" ]; then
	gospan_env+=(OTEL_EXPORTER_OTLP_ENDPOINT="$otlp")
	say "attaching one gospan to each service, exporting to Jaeger at $otlp/v1/traces"
else
	gospan_env+=(OTEL_TRACES_EXPORTER=console)
	say "attaching one gospan to each service, printing spans (OTEL_TRACES_EXPORTER=console)"
fi
start gospan-backend env "${gospan_env[@]}" "$gospan" --pid "$backend_pid"
gospan_be_pid=$started
start gospan-frontend env "${gospan_env[@]}" "$gospan" --pid "$frontend_pid"
gospan_fe_pid=$started
for svc in backend frontend; do
	if [ $svc = frontend ]; then pid=$gospan_fe_pid; else pid=$gospan_be_pid; fi
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

# gospan adds traceparent to the frontend's calls at the socket layer; where it cannot (no
# cgroup v2 hierarchy on this host), it says so when it attaches.
no_propagation=
if grep -q 'outgoing trace context is off' "$work/gospan-frontend.err"; then
	no_propagation=1
fi

# ---- the load -----------------------------------------------------------------------------------

urls=$frontend_url/direct/1,$frontend_url/spawn/2,$frontend_url/both/3,$frontend_url/backend-fail
calls=(1 1 2 1) # backend calls each of those makes
backend_calls=0
for ((i = 0; i < requests; i++)); do backend_calls=$((backend_calls + calls[i % 4])); done
say "loadgen: $requests requests to the frontend, one every $interval, in turn to"
say "  /direct/1, /spawn/2, /both/3 and /backend-fail"
t0=$SECONDS
"$build/examples/loadgen" -url "$urls" -interval "$interval" -count "$requests" | indent ||
	die "loadgen failed"

# ---- the traces ---------------------------------------------------------------------------------

both=
if [ -n "$query" ]; then
	# Each request: a SERVER span in the frontend, a CLIENT span per backend call and the
	# backend's SERVER span for it.
	say "waiting for the spans to reach Jaeger (at most $span_timeout s)"
	if ! "$python" "$jaeger_py" wait --query "$query" --timeout "$span_timeout" \
		--spans frontend=$((requests + backend_calls)) --spans backend=$backend_calls | indent; then
		say "not every span arrived in time; showing what Jaeger has"
	fi
	say "the traces, as Jaeger's query API gives them ($query/api/traces?service=frontend):"
	"$python" "$jaeger_py" show --query "$query" --service frontend --service backend \
		>"$work/show.out" || die "cannot read the traces from Jaeger"
	indent <"$work/show.out"
	both=$(sed -n 's/.*; \([0-9]*\) with spans of frontend and backend$/\1/p' "$work/show.out")
	joined=$(sed -n 's/^joined traces: \([0-9]*\) of .*/\1/p' "$work/show.out")
else
	# The console prints each trace when its root span arrives. The frontend has a trace per
	# request; the backend its part of each of those (a trace per call if no context went out).
	say "waiting for the gospans to print the spans (at most $span_timeout s)"
	trace_ids() {
		{ grep -Eo 'trace[= ][0-9a-f]{32}' "$1" 2>/dev/null || true; } | cut -c7- | sort -u
	}
	be_want=$requests
	[ -z "$no_propagation" ] || be_want=$backend_calls
	for ((i = 0; i < span_timeout * 10; i++)); do
		fe=$(trace_ids "$work/gospan-frontend.out" | wc -l)
		be=$(trace_ids "$work/gospan-backend.out" | wc -l)
		[ "$fe" -ge "$requests" ] && [ "$be" -ge "$be_want" ] && break
		sleep 0.1
	done
	if [ "$fe" -lt "$requests" ] || [ "$be" -lt "$be_want" ]; then
		say "not every trace was printed in time (frontend $fe of $requests, backend $be of $be_want)"
	fi
	sleep 0.5 # anything of the last batch still being written
	for svc in frontend backend; do
		say "spans of $svc, as its gospan printed them:"
		indent <"$work/gospan-$svc.out"
	done
	trace_ids "$work/gospan-frontend.out" >"$work/frontend.traces"
	trace_ids "$work/gospan-backend.out" >"$work/backend.traces"
	both=$(comm -12 "$work/frontend.traces" "$work/backend.traces" | wc -l)
	fe=$(wc -l <"$work/frontend.traces")
	be=$(wc -l <"$work/backend.traces")
	say "traces printed: $fe with spans of frontend, $be with spans of backend;" \
		"$both with spans of both"
fi
say "requests sent and traces read in $((SECONDS - t0)) s"

# What the traces show: the demo's last word, after the services' summaries.
say_verdict() {
	if [ -n "$no_propagation" ]; then
		say "the backend's spans start their own trace: gospan could not send trace context from"
		say "  the frontend (it said why when it attached, above), so the backend never learns the"
		say "  trace it is part of"
	elif [ -n "$query" ] && [ -n "$joined" ] && [ "$joined" -eq "$requests" ]; then
		say "all $requests frontend requests are one trace across both services, read back from"
		say "  Jaeger: frontend SERVER -> frontend CLIENT -> backend SERVER, every parent link exact;"
		say "  gospan put each CLIENT span's traceparent on the wire at the socket layer"
	elif [ -n "$query" ]; then
		say "only ${joined:-0} of $requests frontend requests are one trace across both services in"
		say "  Jaeger, though gospan sends trace context: see its messages and the traces above"
	elif [ -n "$both" ] && [ "$both" -eq "$requests" ]; then
		say "all $requests frontend requests are one trace across both services: gospan put each"
		say "  CLIENT span's traceparent on the wire at the socket layer, and the backend joined it"
	else
		say "only ${both:-0} of $requests frontend requests are one trace across both services,"
		say "  though gospan sends trace context: see its messages above"
	fi
}

# ---- keep running, or stop ----------------------------------------------------------------------

if [ "$keep" = 1 ]; then
	say_verdict
	# Its summaries go to the terminal: they show the load is still on.
	setsid "$build/examples/loadgen" -url "$urls" -interval "$interval" -summary 50 </dev/null &
	load_pid=$!
	say "everything keeps running; loadgen sends a request every $interval and sums up every 50"
	if [ -n "$query" ]; then
		say "Jaeger's query API: $query/api/services, $query/api/traces?service=frontend&limit=20"
		say "the latest traces again:"
		say "  $python $jaeger_py show --query $query --service frontend --service backend"
		if [ "$ui" = yes ]; then
			say "Jaeger's UI: $query/"
		else
			say "no Jaeger UI: a Jaeger built from its Go module has no UI assets ($query/ is a"
			say "  placeholder page); for the UI, run this with GOSPAN_JAEGER_BIN=<a Jaeger v2 release"
			say "  binary>, or run the docker-compose demo"
		fi
	else
		say "the spans: tail -f $work/gospan-frontend.out $work/gospan-backend.out"
	fi
	say "Ctrl-C to stop"
	trap 'exit 0' INT
	while alive "$load_pid"; do
		wait "$load_pid" 2>/dev/null || true
	done
	die "loadgen stopped on its own"
fi

stop_all
[ "$gospan_fe_rc" = 0 ] || die "gospan on frontend exited with status $gospan_fe_rc"
[ "$gospan_be_rc" = 0 ] || die "gospan on backend exited with status $gospan_be_rc"
say_verdict
if [ -n "$query" ]; then
	say "done; Jaeger was stopped with the rest (on a terminal it keeps running until Ctrl-C)"
else
	say "done"
fi
