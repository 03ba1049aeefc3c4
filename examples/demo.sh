#!/usr/bin/env bash
# What `make demo` runs: the docker-compose demo's topology as plain processes on 127.0.0.1.
# Jaeger (OTLP/HTTP in, HTTP query API out), examples/backend (HTTP), examples/inventory (gRPC),
# examples/frontend calling the backend over HTTP and looking items up in the inventory over gRPC,
# one gospan attached to each of the three services and exporting to Jaeger, and examples/loadgen
# sending a fixed number of requests to the frontend. The traces are then read back from Jaeger's
# query API, printed as trees, and each request is checked to be one trace across the services
# it reached, every parent link exact. On a terminal everything keeps running afterwards, loadgen
# included, until Ctrl-C; otherwise (or with GOSPAN_DEMO_KEEP=0) everything is stopped and the
# script exits.
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
# The traced services, in the order their gospans sum up; each one's pid, its gospan's pid and,
# once stopped, its gospan's exit status.
traced=(frontend backend inventory)
declare -A service_pid=() gospan_pid=() gospan_rc=()
jaeger_pid= load_pid=

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
			grep '^gospan: summary' "$work/gospan-$svc.err" | indent
		else
			say "gospan on $svc exited with status $rc without a summary; its messages:"
			indent <"$work/gospan-$svc.err"
		fi
	done
}

stop_all() {
	local pids=() svc
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
say "building examples/backend, inventory, frontend and loadgen ($("$go" env GOVERSION)) into" \
	"$build/examples/"
for prog in backend inventory frontend loadgen; do
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
# Prints the address NAME, just started, said it listens on.
listening_on() { sed -n 's/^listening on //p' "$work/$1.out" | head -n 1; }
start_service backend
service_pid[backend]=$started
backend_url=http://$(listening_on backend)
say "backend: pid $started, $backend_url, HTTP (OTEL_SERVICE_NAME=backend)"
start_service inventory
service_pid[inventory]=$started
inventory_addr=$(listening_on inventory)
say "inventory: pid $started, $inventory_addr, gRPC in cleartext (OTEL_SERVICE_NAME=inventory)"
start_service frontend -backend "$backend_url" -inventory "$inventory_addr"
service_pid[frontend]=$started
frontend_url=http://$(listening_on frontend)
say "frontend: pid $started, $frontend_url, calls the backend and looks items up in the inventory" \
	"(OTEL_SERVICE_NAME=frontend)"

# ---- the gospans --------------------------------------------------------------------------------

gospan_env=(OTEL_BSP_SCHEDULE_DELAY=200)
if [ -n "$otlp" ]; then
	gospan_env+=(OTEL_EXPORTER_OTLP_ENDPOINT="$otlp")
	say "attaching one gospan to each service, exporting to Jaeger at $otlp/v1/traces"
else
	gospan_env+=(OTEL_TRACES_EXPORTER=console)
	say "attaching one gospan to each service, printing spans (OTEL_TRACES_EXPORTER=console)"
fi
# The callees first, so that they are traced before the frontend calls them.
for svc in backend inventory frontend; do
	start "gospan-$svc" env "${gospan_env[@]}" "$gospan" --pid "${service_pid[$svc]}"
	gospan_pid[$svc]=$started
done
for svc in backend inventory frontend; do
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

# ---- the load -----------------------------------------------------------------------------------

urls=$frontend_url/direct/1,$frontend_url/spawn/2,$frontend_url/both/3,$frontend_url/backend-fail
# What each of those makes: backend calls (HTTP) and inventory lookups (gRPC; items 1 to 3 are
# in stock, /backend-fail looks none up).
calls=(1 1 2 1)
looks=(1 1 1 0)
backend_calls=0 lookups=0
for ((i = 0; i < requests; i++)); do
	backend_calls=$((backend_calls + calls[i % 4]))
	lookups=$((lookups + looks[i % 4]))
done
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
	if ! "$python" "$jaeger_py" wait --query "$query" --timeout "$span_timeout" \
		--spans frontend=$((requests + backend_calls + lookups)) --spans backend=$backend_calls \
		--spans inventory=$lookups | indent; then
		say "not every span arrived in time; showing what Jaeger has"
	fi
	say "the traces, as Jaeger's query API gives them ($query/api/traces?service=frontend):"
	"$python" "$jaeger_py" show --query "$query" --service frontend --service backend \
		--service inventory >"$work/show.out" || die "cannot read the traces from Jaeger"
	indent <"$work/show.out"
	joined=$(sed -n 's/^joined traces: \([0-9]*\) of .*/\1/p' "$work/show.out")
	# "hop frontend -> SERVICE, PROTOCOL NAME: N calls, in M of the joined traces": NAME, N, M.
	hop() {
		sed -n "s/^hop frontend -> $1, $2 \([^:]*\): \([0-9]*\) calls, in \([0-9]*\) of .*/\1 \2 \3/p" \
			"$work/show.out" | head -n 1
	}
	read -r http_name http_calls http_traces <<<"$(hop backend HTTP)" || true
	read -r grpc_name grpc_calls grpc_traces <<<"$(hop inventory gRPC)" || true
else
	# The console prints each trace when its root span arrives. The frontend has a trace per
	# request; the backend and the inventory their parts of each of those (a trace per call if
	# no context went out).
	say "waiting for the gospans to print the spans (at most $span_timeout s)"
	trace_ids() {
		{ grep -Eo 'trace[= ][0-9a-f]{32}' "$1" 2>/dev/null || true; } | cut -c7- | sort -u
	}
	declare -A want=([frontend]=$requests [backend]=$requests [inventory]=$lookups)
	declare -A got=([frontend]=0 [backend]=0 [inventory]=0)
	[ -z "$no_propagation" ] || want[backend]=$backend_calls
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
			"${want[inventory]})"
	fi
	sleep 0.5 # anything of the last batch still being written
	for svc in "${traced[@]}"; do
		say "spans of $svc, as its gospan printed them:"
		indent <"$work/gospan-$svc.out"
		trace_ids "$work/gospan-$svc.out" >"$work/$svc.traces"
		got[$svc]=$(wc -l <"$work/$svc.traces")
	done
	# Traces with spans of the frontend and of the backend, of the frontend and of the inventory.
	with_be=$(comm -12 "$work/frontend.traces" "$work/backend.traces" | wc -l)
	with_inv=$(comm -12 "$work/frontend.traces" "$work/inventory.traces" | wc -l)
	say "traces printed: ${got[frontend]} with spans of frontend, ${got[backend]} with spans of" \
		"backend, ${got[inventory]} with spans of inventory; $with_be with spans of frontend" \
		"and backend, $with_inv with spans of frontend and inventory"
fi
say "requests sent and traces read in $((SECONDS - t0)) s"

# What the traces show: the demo's last word, after the services' summaries.
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
		say "all $requests frontend requests are one trace across the three services, read back"
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
		[ "$with_inv" -eq "$lookups" ]; then
		say "all $requests frontend requests are one trace across the three services: gospan put"
		say "  each CLIENT span's traceparent on the wire at the socket layer (a header of the"
		say "  HTTP/1 request, a field of the gRPC call's HEADERS frame); the backend joined the"
		say "  trace of all $requests, the inventory those of the $lookups with a lookup$none"
	else
		say "only $with_be of $requests frontend requests have the backend's spans in their trace"
		say "  and $with_inv of $lookups the inventory's, though gospan sends trace context: see"
		say "  its messages above"
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
		say "  $python $jaeger_py show --query $query --service frontend --service backend" \
			"--service inventory"
		if [ "$ui" = yes ]; then
			say "Jaeger's UI: $query/"
		else
			say "no Jaeger UI: a Jaeger built from its Go module has no UI assets ($query/ is a"
			say "  placeholder page); for the UI, run this with GOSPAN_JAEGER_BIN=<a Jaeger v2 release"
			say "  binary>, or run the docker-compose demo"
		fi
	else
		say "the spans: tail -f $work/gospan-frontend.out $work/gospan-backend.out" \
			"$work/gospan-inventory.out"
	fi
	say "Ctrl-C to stop"
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
if [ -n "$query" ]; then
	say "done; Jaeger was stopped with the rest (on a terminal it keeps running until Ctrl-C)"
else
	say "done"
fi
