#!/usr/bin/env bash
# Builds kafkamix with the Kafka clients asked for, at the versions asked for, with one Go
# toolchain, so a test can trace the code of any client release. The sources are copied to a
# scratch directory (main.go and the files of the clients asked for: `go mod tidy` looks at every
# file whatever its build tags, and would otherwise pull in every client) and given a go.mod of
# their own there: go 1.17 and no requirement but the clients; `go mod tidy` adds the rest and
# raises the go directive where a client needs it. The committed go.mod is left alone. The steps
# are ../mixbuild.sh's, as for dbmix and grpcmix.
#
#   build.sh OUT_FILE GOTOOLCHAIN [--kafkago VERSION] [--sarama VERSION] [--franz VERSION]
#            [-- go build flags...]
#
#   OUT_FILE     the binary to write (its directory is created if missing)
#   GOTOOLCHAIN  as the go command takes it: local, or go1.X.Y (fetched through the module
#                proxy); or the path of a go command, e.g. /usr/lib/go-1.19/bin/go
#   --kafkago    github.com/segmentio/kafka-go at VERSION, built with the kafkago tag
#   --sarama     github.com/IBM/sarama at VERSION (github.com/Shopify/sarama for releases before
#                v1.41.0, sarama.go's import rewritten to it), built with the sarama tag
#   --franz      github.com/twmb/franz-go at VERSION, built with the franz tag
#
# At least one client. Prints nothing on success. On failure, says which step failed and shows
# the go command's output, on stderr, and exits 1.
set -euo pipefail

usage() {
	echo "usage: $0 OUT_FILE GOTOOLCHAIN [--kafkago VERSION] [--sarama VERSION]" \
		"[--franz VERSION] [-- go build flags...]" >&2
	exit 2
}
[ $# -ge 2 ] || usage
out=$1 toolchain=$2
shift 2

isversion() { [[ ${1:-} == v[0-9]* ]]; }

kafkago= sarama= franz=
while [ $# -gt 0 ]; do
	case $1 in
	--kafkago | --sarama | --franz)
		isversion "${2:-}" || usage
		printf -v "${1#--}" %s "$2"
		shift 2
		;;
	--)
		shift
		break
		;;
	*) usage ;;
	esac
done
[ -n "$kafkago$sarama$franz" ] || usage

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=../mixbuild.sh
. "$here/../mixbuild.sh"
mkdir -p "$(dirname "$out")"
out=$(cd "$(dirname "$out")" && pwd)/$(basename "$out")

# Whether release $1 comes before v1.41.0, sarama's first under github.com/IBM/sarama.
sarama_before_ibm() {
	[ "$(printf '%s\n%s\n' "${1#v}" 1.41.0 | sort -V | head -n1)" != 1.41.0 ]
}

clients=
files=(main.go)
requires=()
tags=()
if [ -n "$kafkago" ]; then
	files+=(kafkago.go) requires+=("github.com/segmentio/kafka-go@$kafkago") tags+=(kafkago)
	clients+="kafka-go $kafkago, "
fi
sarama_module=github.com/IBM/sarama
if [ -n "$sarama" ]; then
	if sarama_before_ibm "$sarama"; then
		sarama_module=github.com/Shopify/sarama
	fi
	files+=(sarama.go) requires+=("$sarama_module@$sarama") tags+=(sarama)
	clients+="sarama $sarama, "
fi
if [ -n "$franz" ]; then
	files+=(franz.go) requires+=("github.com/twmb/franz-go@$franz") tags+=(franz)
	clients+="franz-go $franz, "
fi

mix_begin kafkamix "$toolchain" "${clients%, }"
mix_module "$here"
for f in "${files[@]}"; do
	cp "$here/$f" "$work/src/"
done
cd "$work/src"
if [ "$sarama_module" != github.com/IBM/sarama ]; then
	sed -i "s|\"github.com/IBM/sarama\"|\"$sarama_module\"|" sarama.go
fi
mix_require "${requires[@]}"
mix_tidy
joined=$(IFS=,; echo "${tags[*]}")
mix_step "go build" "$go" build "-tags=$joined" "$@" -o "$out" .
