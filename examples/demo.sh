#!/usr/bin/env bash
# What `make demo` runs: builds the example service, starts it on a free loopback port, attaches
# gospan to it, sends a dozen requests with curl, stops gospan with SIGTERM (which flushes) and
# shows what it printed. Spans go to the console unless OTEL_EXPORTER_OTLP_ENDPOINT names a
# collector. Every process started here is stopped on any exit.
#
#   GOSPAN_BUILD           absolute build directory holding gospan (default: the repository's build/)
#   GOSPAN_ATTACH_TIMEOUT  seconds to wait for 'gospan: attached' (default 30)
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
build=${GOSPAN_BUILD:-$here/../build}
gospan=$build/gospan
attach_timeout=${GOSPAN_ATTACH_TIMEOUT:-30}

say() { printf 'demo: %s\n' "$*"; }
die() { printf 'demo: %s\n' "$*" >&2; exit 1; }

if [ "$(id -u)" -ne 0 ]; then
	die "gospan loads BPF programs and attaches uprobes, which needs root: run 'sudo make demo'"
fi
[ -x "$gospan" ] || die "'$gospan' is not built: run 'make' first"
command -v go >/dev/null || die "Go is needed to build the example service"
command -v curl >/dev/null || die "curl is needed to send the requests"

work=$(mktemp -d /tmp/gospan-demo.XXXXXX)
svc_pid=
gospan_pid=

cleanup() {
	local rc=$?
	trap - EXIT INT TERM
	for pid in $gospan_pid $svc_pid; do
		if kill -0 "$pid" 2>/dev/null; then
			kill -TERM "$pid" 2>/dev/null || true
			for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
			kill -KILL "$pid" 2>/dev/null || true
		fi
		wait "$pid" 2>/dev/null || true
	done
	rm -rf "$work"
	exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# Waits up to $3 seconds for a line starting with $2 in file $1, while process $4 lives.
wait_for_line() {
	local file=$1 prefix=$2 secs=$3 pid=$4 i
	for ((i = 0; i < secs * 10; i++)); do
		grep -q "^$prefix" "$file" 2>/dev/null && return 0
		kill -0 "$pid" 2>/dev/null || return 1
		sleep 0.1
	done
	return 1
}

mkdir -p "$build/examples"
say "building examples/httpserver with $(go env GOVERSION)"
(cd "$here/httpserver" && GOTOOLCHAIN=local CGO_ENABLED=0 GOFLAGS=-buildvcs=false go build -o "$build/examples/httpserver" .)

# Port 0: the kernel picks a free port and the service prints the one it got.
"$build/examples/httpserver" -addr 127.0.0.1:0 >"$work/service.out" 2>"$work/service.err" &
svc_pid=$!
if ! wait_for_line "$work/service.out" "listening on " 10 "$svc_pid"; then
	cat "$work/service.err" >&2
	die "the example service did not start listening within 10 s"
fi
addr=$(sed -n 's/^listening on //p' "$work/service.out" | head -n 1)
base=http://$addr
say "example service: pid $svc_pid, $base"

export OTEL_BSP_SCHEDULE_DELAY=${OTEL_BSP_SCHEDULE_DELAY:-200}
if [ -n "${OTEL_EXPORTER_OTLP_ENDPOINT:-}" ]; then
	say "spans go to $OTEL_EXPORTER_OTLP_ENDPOINT/v1/traces"
else
	export OTEL_TRACES_EXPORTER=console
	say "spans are printed (OTEL_TRACES_EXPORTER=console; set OTEL_EXPORTER_OTLP_ENDPOINT to send them to a collector)"
fi
"$gospan" --pid "$svc_pid" >"$work/gospan.out" 2>"$work/gospan.err" &
gospan_pid=$!
if ! wait_for_line "$work/gospan.err" "gospan: attached" "$attach_timeout" "$gospan_pid"; then
	cat "$work/gospan.err" >&2
	if kill -0 "$gospan_pid" 2>/dev/null; then
		die "gospan did not attach within $attach_timeout s"
	fi
	wait "$gospan_pid" && rc=0 || rc=$?
	gospan_pid=
	die "gospan exited with status $rc before attaching"
fi
grep '^gospan: attached' "$work/gospan.err"

say "sending requests"
request() {
	local method=$1 path=$2 how=(-X "$1") code
	shift 2
	# curl -X HEAD would wait for a body that never comes; --head knows there is none.
	[ "$method" = HEAD ] && how=(--head)
	if code=$(curl -sS -o /dev/null "${how[@]}" -w '%{http_code}' "$@" "$base$path" 2>/dev/null); then
		printf '  %s  %s %s\n' "$code" "$method" "$path"
	else
		# /panic: net/http recovers the handler's panic and closes the connection unanswered.
		printf '  ---  %s %s: no response (curl exit status %d)\n' "$method" "$path" "$?"
	fi
}
request GET /users/42
request GET /users/7
request POST /users -H 'Content-Type: application/json' -d '{"name":"ada"}'
request PUT /users/42 -H 'Content-Type: application/json' -d '{"name":"grace"}'
request PATCH /users/42 -H 'Content-Type: application/json' -d '{"name":"hopper"}'
request DELETE /users/42
request HEAD /users/7
request GET /items/books/sicp
request GET '/slow?ms=150'
request GET /fail
request GET /no/such/page
request GET /panic
request GET /health

# Let a batch go out on its schedule, then stop gospan: SIGTERM detaches and flushes the rest.
sleep 1
say "stopping gospan (SIGTERM)"
kill -TERM "$gospan_pid"
rc=0
for _ in $(seq 150); do kill -0 "$gospan_pid" 2>/dev/null || break; sleep 0.1; done
if kill -0 "$gospan_pid" 2>/dev/null; then
	die "gospan did not exit within 15 s of SIGTERM"
fi
wait "$gospan_pid" || rc=$?
gospan_pid=

if [ -s "$work/gospan.out" ]; then
	say "spans:"
	cat "$work/gospan.out"
fi
say "gospan's messages:"
cat "$work/gospan.err"
[ "$rc" -eq 0 ] || die "gospan exited with status $rc"
say "done"
