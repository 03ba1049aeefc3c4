#!/usr/bin/env bash
# Runs one fasthttp test program and checks with curl that every route answers as README.md
# says, without gospan: a check of the program itself, for any release and Go it was built
# with. BACKEND_URL is a throwaway python3 http.server.
#
#   smoke.sh BINARY PROGRAM        PROGRAM: fasthttp, fiber2 or fiber3
#
# Prints one line per request and exits 1 when any answered otherwise.
set -uo pipefail

[ $# -eq 2 ] || { echo "usage: $0 BINARY fasthttp|fiber2|fiber3" >&2; exit 2; }
bin=$1 prog=$2
# The route each program reports (X-Route, and the body of /users and /orders): fasthttp's
# own handler names its patterns {name}; Fiber's c.Route().Path after the chain, which for a
# 404 or 405 is the last middleware route that matched ("/" of app.Use, "/orders" of the group).
case $prog in
fasthttp)
	users=/users/{id} items=/orders/{oid}/items/{iid} fail=/fail/{code} call=/call/{id}
	hostcall=/hostcall/{id} none= group404= ;;
fiber2 | fiber3)
	users=/users/:id items=/orders/:oid/items/:iid fail=/fail/:code call=/call/:id
	hostcall=/hostcall/:id none=/ group404=/orders ;;
*) echo "smoke.sh: unknown program '$prog'" >&2; exit 2 ;;
esac
inbody=
[ "$prog" = fasthttp ] || inbody=1

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

# start BINARY ARGS...: runs it, sets addr from its "listening on" line
start() {
	"$@" -addr 127.0.0.1:0 >"$work/out" 2>"$work/err" &
	pids+=($!)
	addr=
	for _ in $(seq 100); do
		addr=$(sed -n 's/^listening on //p' "$work/out")
		[ -n "$addr" ] && break
		sleep 0.1
	done
	[ -n "$addr" ] || { echo "smoke.sh: '$bin' printed no address" >&2; cat "$work/err" >&2; exit 1; }
}

failed=0
# check METHOD PATH WANT_STATUS [WANT_BODY_SUBSTRING [WANT_HEADER_LINE...]]; status 000: no
# answer. A header line "X-Route: " wants the header absent or empty.
check() {
	local method=$1 path=$2 want=$3 body=${4:-} got h ok=1 why=
	shift 3
	[ $# -gt 0 ] && shift
	: >"$work/body"
	: >"$work/hdr"
	got=$(curl -s -X "$method" -o "$work/body" -D "$work/hdr" -w '%{http_code}' \
		--max-time 15 "http://$addr$path")
	[ "$got" = "$want" ] || ok=0
	[ -z "$body" ] || grep -qF -- "$body" "$work/body" || { ok=0; why+=", body with '$body'"; }
	for h in "$@"; do
		if [ "$h" = "X-Route: " ]; then
			tr -d '\r' <"$work/hdr" | grep -qiE '^X-Route: .' && { ok=0; why+=", no X-Route"; }
		else
			tr -d '\r' <"$work/hdr" | grep -qixF -- "$h" || { ok=0; why+=", header '$h'"; }
		fi
	done
	if [ $ok = 1 ]; then
		printf 'ok   %-6s %-20s %s %s\n' "$method" "$path" "$got" "$(head -c 80 "$work/body" | head -1)"
	else
		printf 'FAIL %-6s %-20s %s (want %s%s): %s\n' "$method" "$path" "$got" "$want" "$why" \
			"$(head -c 200 "$work/body")"
		failed=1
	fi
}

for _ in $(seq 50); do
	curl -s -o /dev/null "http://127.0.0.1:$bport/x" && break
	sleep 0.1
done
BACKEND_URL=http://127.0.0.1:$bport start "$bin"

check GET /users/42 200 "user 42${inbody:+ route $users}" "X-Route: $users"
check GET /orders/7/items/9 200 "order 7 item 9${inbody:+ route $items}" \
	"X-Route: $items" "X-Group: orders"
check POST /fail/503 503 "fail 503" "X-Route: $fail"
check POST /fail/418 418 "fail 418" "X-Route: $fail"
check POST /fail/abc 400 "fail 400" "X-Route: $fail"
# fasthttp.Server recovers no panic (the process would die): fasthttp/ recovers in its
# handler, Fiber's recover middleware answers 500.
check GET /panic 500 "/panic was requested" "X-Route: /panic"
check GET /call/5 200 "call 5: backend 200" "X-Route: $call"
check GET /hostcall/5 200 "hostcall 5: backend 200" "X-Route: $hostcall"
check GET /nope 404 "" "X-Route: $none"
check GET /fail/503 405 "" "Allow: POST" "X-Route: $none"
check GET /orders/7 404 "" "X-Route: $group404"
check HEAD /users/44 200 "" "X-Route: $users"
check GET /users/43 200 "user 43"    # still serving after the panic

kill "${pids[1]}"
wait "${pids[1]}"
status=$?
if [ $status != 0 ]; then
	echo "FAIL exit status $status after SIGTERM"
	failed=1
fi
# Without a backend, /call and /hostcall answer 502.
start "$bin" -backend http://127.0.0.1:1
check GET /call/6 502 "call 6:"
check GET /hostcall/6 502 "hostcall 6:"
exit $failed
