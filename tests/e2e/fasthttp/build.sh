#!/usr/bin/env bash
# Builds one fasthttp test program against the release asked for with one Go toolchain, so a
# test can trace any release's code. The program's main package and internal/service are copied
# to a scratch directory and given a go.mod of their own (go 1.17 and the one module, nothing
# else; `go mod tidy` adds the rest and raises the go directive where the release needs it);
# the committed go.mod is left alone. The steps are ../mixbuild.sh's, as for routers, dbmix
# and grpcmix.
#
#   build.sh OUT_FILE GOTOOLCHAIN PROGRAM [VERSION] [-- go build flags...]
#
#   OUT_FILE     the binary to write (its directory is created if missing)
#   GOTOOLCHAIN  local, go1.X.Y (fetched through the module proxy) or the path of a go command
#   PROGRAM      fasthttp (a plain fasthttp.Server), fiber2 (Fiber v2) or fiber3 (Fiber v3)
#   VERSION      the release of fasthttp for `fasthttp`, of Fiber for the others (v1.40.0,
#                v2.40.0 for instance); the committed go.mod's unless given
#
# A Fiber program gets the fasthttp release that Fiber release requires (the oldest it allows),
# unless FASTHTTP_VERSION names another.
#
# Prints nothing on success; on failure names the step, shows the go command's output on stderr
# and exits 1.
set -euo pipefail

usage() {
	echo "usage: $0 OUT_FILE GOTOOLCHAIN fasthttp|fiber2|fiber3 [VERSION] [-- go build flags...]" >&2
	exit 2
}
[ $# -ge 3 ] || usage
out=$1 toolchain=$2 prog=$3
shift 3
case $prog in
fasthttp) module=github.com/valyala/fasthttp ;;
fiber2) module=github.com/gofiber/fiber/v2 ;;
fiber3) module=github.com/gofiber/fiber/v3 ;;
*) usage ;;
esac
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
version=$(sed -n "s#^[[:space:]]*$module \(v[^ ]*\).*#\1#p" "$here/go.mod")
if [[ ${1:-} == v[0-9]* ]]; then
	version=$1
	shift
fi
if [ "${1:-}" = -- ]; then
	shift
elif [ $# -gt 0 ]; then
	usage
fi

# shellcheck source=../mixbuild.sh
. "$here/../mixbuild.sh"
mkdir -p "$(dirname "$out")"
out=$(cd "$(dirname "$out")" && pwd)/$(basename "$out")

mix_begin fasthttp "$toolchain" "$prog $version${FASTHTTP_VERSION:+ fasthttp $FASTHTTP_VERSION}"
mix_module "$here"
mkdir -p "$work/src/$prog" "$work/src/internal/service"
cp "$here/$prog/main.go" "$work/src/$prog/"
cp "$here/internal/service/service.go" "$work/src/internal/service/"
cd "$work/src"
mix_require "$module@$version"
[ "$prog" = fasthttp ] || [ -z "${FASTHTTP_VERSION:-}" ] ||
	mix_require "github.com/valyala/fasthttp@$FASTHTTP_VERSION"
mix_tidy
mix_step "go build" "$go" build "$@" -o "$out" "./$prog"
