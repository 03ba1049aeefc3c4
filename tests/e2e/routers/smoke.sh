#!/usr/bin/env bash
# Runs one router test service and checks with curl that every route answers as README.md says,
# without gospan: a check of the service itself, for any framework release and Go it was built
# with. BACKEND_URL is a throwaway python3 http.server.
#
#   smoke.sh BINARY FRAMEWORK        FRAMEWORK: gin, echo, echo5, chi or mux
#
# Prints one line per request and exits 1 when any answered otherwise.
set -uo pipefail

[ $# -eq 2 ] || { echo "usage: $0 BINARY gin|echo|echo5|chi|mux" >&2; exit 2; }
bin=$1 fw=$2
case $fw in
gin | echo | echo5) users=/users/:id items=/orders/:oid/items/:iid ;;
chi | mux) users=/users/{id} items=/orders/{oid}/items/{iid} ;;
*) echo "smoke.sh: unknown framework '$fw'" >&2; exit 2 ;;
esac

work=$(mktemp -d)
pids=()
cleanup() {
	local p
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
	wait 2>/dev/null
	rm -rf "$work"
}
trap cleanup EXIT

mkdir "$work/www" && echo backend >"$work/www/x"
bport=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
python3 -m http.server -b 127.0.0.1 -d "$work/www" "$bport" >/dev/null 2>&1 &
pids+=($!)

BACKEND_URL=http://127.0.0.1:$bport "$bin" -addr 127.0.0.1:0 >"$work/out" 2>"$work/err" &
pids+=($!)
addr=
for _ in $(seq 100); do
	addr=$(sed -n 's/^listening on //p' "$work/out")
	[ -n "$addr" ] && break
	sleep 0.1
done
[ -n "$addr" ] || { echo "smoke.sh: '$bin' printed no address" >&2; cat "$work/err" >&2; exit 1; }
for _ in $(seq 50); do
	curl -s -o /dev/null "http://127.0.0.1:$bport/x" && break
	sleep 0.1
done

failed=0
# check METHOD PATH WANT_STATUS [WANT_BODY_SUBSTRING [WANT_HEADER_LINE]]; status 000: no answer
check() {
	local method=$1 path=$2 want=$3 body=${4:-} header=${5:-} got
	: >"$work/body"
	: >"$work/hdr"
	got=$(curl -s -X "$method" -o "$work/body" -D "$work/hdr" -w '%{http_code}' \
		--max-time 15 "http://$addr$path")
	local ok=1
	[ "$got" = "$want" ] || ok=0
	[ -z "$body" ] || grep -qF -- "$body" "$work/body" || ok=0
	[ -z "$header" ] || tr -d '\r' <"$work/hdr" | grep -qixF -- "$header" || ok=0
	if [ $ok = 1 ]; then
		printf 'ok   %-6s %-22s %s %s\n' "$method" "$path" "$got" "$(head -c 80 "$work/body" | head -1)"
	else
		printf 'FAIL %-6s %-22s %s (want %s%s%s): %s\n' "$method" "$path" "$got" "$want" \
			"${body:+, body with '$body'}" "${header:+, header '$header'}" \
			"$(head -c 200 "$work/body")"
		failed=1
	fi
}

# /panic: the recovery middleware answers 500. gorilla/mux has none; chi v5.0.0 to v5.0.2's
# Recoverer panics itself printing the stack of a Go 1.17 or later panic (the "panic({...})"
# line), before it writes the 500 (fixed by v5.0.7): net/http then closes the connection.
panicked=500
[ "$fw" = mux ] && panicked=000
if [ "$fw" = chi ] && go version -m "$bin" 2>/dev/null |
	grep -qE 'dep[[:space:]]+github.com/go-chi/chi/v5[[:space:]]+v5\.0\.[0-6][[:space:]]'; then
	panicked=000
fi

check GET /users/42 200 "user 42 route $users"
check GET /orders/7/items/9 200 "order 7 item 9 route $items" "X-Group: orders"
check POST /fail/503 503 "fail 503"
check POST /fail/418 418 "fail 418"
check POST /fail/abc 400 "fail 400"
check GET /panic "$panicked"
check GET /panic-raw/1 000
check GET /call/5 200 "call 5: backend 200"
check GET /nope 404
check GET /fail/503 405
check GET /users/43 200 "user 43"    # still serving after the panics

kill "${pids[1]}"
wait "${pids[1]}"
status=$?
if [ $status != 0 ]; then
	echo "FAIL exit status $status after SIGTERM"
	failed=1
fi
# Without a backend, /call answers 502.
"$bin" -addr 127.0.0.1:0 -backend http://127.0.0.1:1 >"$work/out" 2>"$work/err" &
pids+=($!)
addr=
for _ in $(seq 100); do
	addr=$(sed -n 's/^listening on //p' "$work/out")
	[ -n "$addr" ] && break
	sleep 0.1
done
check GET /call/6 502 "call 6:"
exit $failed
