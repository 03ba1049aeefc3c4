# What dbmix/build.sh and grpcmix/build.sh share, sourced by both: building a test program of
# this tree against the module releases asked for with one Go toolchain, in a scratch copy given
# a go.mod of its own (the committed go.mod is left alone). A build script calls, in order:
#
#   mix_begin NAME TOOLCHAIN ABOUT  the go command and environment of TOOLCHAIN (as the go
#                                   command takes GOTOOLCHAIN: local, or go1.X.Y, fetched
#                                   through the module proxy; or the path of a go command, e.g.
#                                   /usr/lib/go-1.19/bin/go), a scratch directory $work (removed
#                                   at exit); ABOUT names the build in a failure's message
#   mix_module DIR                  $work/src with a go.mod of DIR's module path, go 1.17 and no
#                                   requirement; the caller copies its sources in and cd's there
#   mix_require MODULE@VERSION...   each a requirement
#   mix_tidy                        `go mod tidy` adds the rest, raising the go directive where
#                                   a requirement needs it
#   mix_step WHAT COMMAND...        runs a go command ("$go" ...) quietly; on failure says which
#                                   step failed, shows its output on stderr and exits 1

# mix_begin NAME TOOLCHAIN ABOUT
mix_begin() {
	mix_about=$3
	go=go toolchain=$2
	if [[ $toolchain == */* ]]; then
		go=$toolchain
		toolchain=local
	fi
	# Set here, not taken from the caller or `go env -w`: -buildvcs (in many GOFLAGS) is unknown
	# to Go 1.17, a GOROOT from the caller would pin the wrong standard library when the go
	# command switches toolchains, and GOTOOLCHAIN means nothing to releases before Go 1.21.
	unset GOROOT
	export GOTOOLCHAIN=$toolchain GOFLAGS=-mod=mod CGO_ENABLED=${CGO_ENABLED:-0}

	work=$(mktemp -d "${TMPDIR:-/tmp}/$1-build.XXXXXX")
	trap 'rm -rf "$work"' EXIT
	mix_log=$work/log
	# What an earlier step said that a later failure may be explained by.
	mix_earlier=
}

# mix_step WHAT COMMAND...
mix_step() {
	local what=$1
	shift
	if ! "$@" >"$mix_log" 2>&1; then
		echo "build.sh: $what failed ($mix_about; GOTOOLCHAIN=$toolchain, $go):" >&2
		cat "$mix_log" >&2
		[ -z "$mix_earlier" ] || printf 'build.sh: earlier, %s\n' "$mix_earlier" >&2
		exit 1
	fi
}

# mix_module DIR
mix_module() {
	local module
	module=$(sed -n 's/^module[[:space:]]*//p' "$1/go.mod")
	mkdir "$work/src"
	printf 'module %s\n\ngo 1.17\n' "$module" >"$work/src/go.mod"
}

# mix_require MODULE@VERSION...
mix_require() {
	local r
	for r in "$@"; do
		mix_step "go mod edit -require=$r" "$go" mod edit -require="$r"
	done
}

# Go before 1.21 fails `go mod tidy` when a dependency's test imports a standard package that
# release lacks: from grpc-go v1.63 on (whose go.mod still says go 1.19), golang.org/x/sys's tests
# import "slices". The build compiles none of those tests, so tidy again with -e (which reports the
# error and still writes go.mod and go.sum) and let the build decide.
mix_tidy() {
	if ! "$go" mod tidy >"$mix_log" 2>&1; then
		mix_earlier="go mod tidy failed, and was run again with -e: $(cat "$mix_log")"
		mix_step "go mod tidy -e" "$go" mod tidy -e
	fi
}
