#!/usr/bin/env bash
# Builds grpcmix's server and client against one grpc-go release with one Go toolchain, so a
# test can trace the gRPC code of any release. The module is copied to a scratch directory and
# given a go.mod of its own there: the oldest go directive grpcmix allows (1.17, what grpc-go
# v1.50 needs) and no requirement but grpc-go at VERSION; `go mod tidy` adds the rest and
# raises the go directive where that release needs it. The committed go.mod is left alone. The
# steps are ../mixbuild.sh's, which dbmix/build.sh takes too.
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
# shellcheck source=../mixbuild.sh
. "$here/../mixbuild.sh"
mkdir -p "$out"
out=$(cd "$out" && pwd)

mix_begin grpcmix "$toolchain" "grpc-go $version"
mix_module "$here"
cp -R "$here/server" "$here/client" "$work/src/"
cd "$work/src"
mix_require "google.golang.org/grpc@$version"
mix_tidy
for prog in server client; do
	mix_step "go build of $prog" "$go" build "$@" -o "$out/$prog" "./$prog"
done
