#!/usr/bin/env bash
# Builds grpcmix's server and client against one grpc-go release with one Go toolchain, so a
# test can trace the gRPC code of any release. The module is copied to a scratch directory and
# given a go.mod of its own there: the oldest go directive grpcmix allows (1.17, what grpc-go
# v1.50 needs) and no requirement but grpc-go at VERSION; `go mod tidy` adds the rest and
# raises the go directive where that release needs it. The committed go.mod is left alone.
#
#   build.sh VERSION GOTOOLCHAIN OUT_DIR [go build flags...]
#
#   VERSION      a grpc-go release, e.g. v1.50.1
#   GOTOOLCHAIN  as the go command takes it: local, or go1.X.Y (fetched through the module
#                proxy); or the path of a go command, e.g. /usr/lib/go-1.19/bin/go
#   OUT_DIR      where OUT_DIR/server and OUT_DIR/client go (created if missing)
#
# Prints nothing on success. On failure, says which step failed and shows the go command's
# output, on stderr, and exits 1.
set -euo pipefail

usage() {
	echo "usage: $0 VERSION GOTOOLCHAIN OUT_DIR [go build flags...]" >&2
	exit 2
}
[ $# -ge 3 ] || usage
version=$1 toolchain=$2 out=$3
shift 3
case $version in v[0-9]*) ;; *) usage ;; esac

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
mkdir -p "$out"
out=$(cd "$out" && pwd)

go=go
if [[ $toolchain == */* ]]; then
	go=$toolchain
	toolchain=local
fi
# Set here, not taken from the caller or `go env -w`: -buildvcs (in many GOFLAGS) is unknown
# to Go 1.17, a GOROOT from the caller would pin the wrong standard library when the go command
# switches toolchains, and GOTOOLCHAIN means nothing to releases before Go 1.21.
unset GOROOT
export GOTOOLCHAIN=$toolchain GOFLAGS=-mod=mod CGO_ENABLED=${CGO_ENABLED:-0}

work=$(mktemp -d "${TMPDIR:-/tmp}/grpcmix-build.XXXXXX")
trap 'rm -rf "$work"' EXIT
log=$work/log

# What an earlier step said that a later failure may be explained by.
earlier=

# Runs a go command quietly; on failure shows its output and stops.
step() {
	local what=$1
	shift
	if ! "$@" >"$log" 2>&1; then
		echo "build.sh: $what failed (grpc-go $version, GOTOOLCHAIN=$toolchain, $go):" >&2
		cat "$log" >&2
		[ -z "$earlier" ] || printf 'build.sh: earlier, %s\n' "$earlier" >&2
		exit 1
	fi
}

module=$(sed -n 's/^module[[:space:]]*//p' "$here/go.mod")
mkdir "$work/src"
cp -R "$here/server" "$here/client" "$work/src/"
printf 'module %s\n\ngo 1.17\n' "$module" >"$work/src/go.mod"
cd "$work/src"
step "go mod edit -require=google.golang.org/grpc@$version" \
	"$go" mod edit -require="google.golang.org/grpc@$version"
# Go before 1.21 fails `go mod tidy` when a dependency's test imports a standard package that
# release lacks: from grpc-go v1.63 on (whose go.mod still says go 1.19), golang.org/x/sys's
# tests import "slices". The build compiles none of those tests, so tidy again with -e (which
# reports the error and still writes go.mod and go.sum) and let the build decide.
if ! "$go" mod tidy >"$log" 2>&1; then
	earlier="go mod tidy failed, and was run again with -e: $(cat "$log")"
	step "go mod tidy -e" "$go" mod tidy -e
fi
for prog in server client; do
	step "go build of $prog" "$go" build "$@" -o "$out/$prog" "./$prog"
done
