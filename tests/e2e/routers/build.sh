#!/usr/bin/env bash
# Builds one router test service against the framework release asked for with one Go
# toolchain, so a test can trace any release's code. The framework's main package and
# internal/service are copied to a scratch directory and given a go.mod of their own (go 1.17
# and the one framework, nothing else; `go mod tidy` adds the rest and raises the go directive
# where the release needs it); the committed go.mod is left alone. The steps are
# ../mixbuild.sh's, as for dbmix and grpcmix.
#
#   build.sh OUT_FILE GOTOOLCHAIN FRAMEWORK [VERSION] [-- go build flags...]
#
#   OUT_FILE     the binary to write (its directory is created if missing)
#   GOTOOLCHAIN  local, go1.X.Y (fetched through the module proxy) or the path of a go command
#   FRAMEWORK    gin, echo (Echo v4), echo5, chi (chi v5), mux (gorilla/mux) or httprouter
#   VERSION      the framework release, v1.7.0 for instance; the committed go.mod's unless given
#
# Prints nothing on success; on failure names the step, shows the go command's output on stderr
# and exits 1.
set -euo pipefail

usage() {
	echo "usage: $0 OUT_FILE GOTOOLCHAIN gin|echo|echo5|chi|mux|httprouter [VERSION] [-- go build flags...]" >&2
	exit 2
}
[ $# -ge 3 ] || usage
out=$1 toolchain=$2 fw=$3
shift 3
case $fw in
gin) module=github.com/gin-gonic/gin ;;
echo) module=github.com/labstack/echo/v4 ;;
echo5) module=github.com/labstack/echo/v5 ;;
chi) module=github.com/go-chi/chi/v5 ;;
mux) module=github.com/gorilla/mux ;;
httprouter) module=github.com/julienschmidt/httprouter ;;
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

mix_begin routers "$toolchain" "$fw $version"
mix_module "$here"
mkdir -p "$work/src/$fw" "$work/src/internal/service"
cp "$here/$fw/main.go" "$work/src/$fw/"
cp "$here/internal/service/service.go" "$work/src/internal/service/"
cd "$work/src"
mix_require "$module@$version"
mix_tidy
mix_step "go build" "$go" build "$@" -o "$out" "./$fw"
