#!/usr/bin/env bash
# Builds dbmix with the database drivers asked for, at the versions asked for, with one Go
# toolchain, so a test can trace the code of any driver release. The sources are copied to a
# scratch directory (only main.go, sql.go, pq.go and the files of the drivers asked for: `go mod
# tidy` looks at every file whatever its build tags, and would otherwise pull in every driver)
# and given a go.mod of their own there: go 1.17 and no requirement but the drivers; `go mod
# tidy` adds the rest and raises the go directive where a driver needs it. The committed go.mod
# is left alone. The steps are ../mixbuild.sh's, which grpcmix/build.sh takes too.
#
#   build.sh OUT_FILE GOTOOLCHAIN [--pq VERSION] [--pgx VERSION] [--redis VERSION]
#            [--sqlite [VERSION]] [--mysql VERSION] [--orm] [-- go build flags...]
#
#   OUT_FILE     the binary to write (its directory is created if missing)
#   GOTOOLCHAIN  as the go command takes it: local, or go1.X.Y (fetched through the module
#                proxy); or the path of a go command, e.g. /usr/lib/go-1.19/bin/go
#   --pq         github.com/lib/pq, always built in; v1.10.9 (builds with Go 1.17) unless given
#   --pgx        github.com/jackc/pgx/v5 at VERSION, built with the pgx tag
#   --redis      github.com/redis/go-redis/v9 at VERSION, built with the redis tag
#   --sqlite     modernc.org/sqlite, built with the sqlite tag, at VERSION when one follows,
#                else at $SQLITE_DEFAULT below
#   --mysql      github.com/go-sql-driver/mysql at VERSION, built with the mysql tag
#   --orm        gorm (gorm.io/gorm with gorm.io/driver/postgres, which brings pgx) and sqlx
#                (github.com/jmoiron/sqlx), at the releases below, built with the orm tag
#
# Without --pgx, --redis, --sqlite, --mysql and --orm it builds the pq-only program (Go 1.17 and later).
# Prints nothing on success. On failure, says which step failed and shows the go command's
# output, on stderr, and exits 1.
set -euo pipefail

PQ_DEFAULT=v1.10.9
# The newest release when this was written; it needs Go 1.26.
SQLITE_DEFAULT=v1.62.0
# --orm's: the newest releases on 2026-11-28 (gorm's need Go 1.18; with pgx v5.12.0, Go 1.25).
GORM_VERSION=v1.31.2
GORM_POSTGRES_VERSION=v1.6.3
SQLX_VERSION=v1.4.0

usage() {
	echo "usage: $0 OUT_FILE GOTOOLCHAIN [--pq VERSION] [--pgx VERSION] [--redis VERSION]" \
		"[--sqlite [VERSION]] [--mysql VERSION] [--orm] [-- go build flags...]" >&2
	exit 2
}
[ $# -ge 2 ] || usage
out=$1 toolchain=$2
shift 2

isversion() { [[ ${1:-} == v[0-9]* ]]; }

pq=$PQ_DEFAULT pgx= redis= sqlite= mysql= orm=
while [ $# -gt 0 ]; do
	case $1 in
	--pq | --pgx | --redis | --mysql)
		isversion "${2:-}" || usage
		printf -v "${1#--}" %s "$2"
		shift 2
		;;
	--sqlite)
		sqlite=$SQLITE_DEFAULT
		shift
		if isversion "${1:-}"; then
			sqlite=$1
			shift
		fi
		;;
	--orm)
		orm=1
		shift
		;;
	--)
		shift
		break
		;;
	*) usage ;;
	esac
done

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=../mixbuild.sh
. "$here/../mixbuild.sh"
mkdir -p "$(dirname "$out")"
out=$(cd "$(dirname "$out")" && pwd)/$(basename "$out")

drivers="pq $pq"
files=(main.go sql.go pq.go)
requires=("github.com/lib/pq@$pq")
tags=()
if [ -n "$pgx" ]; then
	files+=(pgx.go) requires+=("github.com/jackc/pgx/v5@$pgx") tags+=(pgx)
	drivers+=", pgx $pgx"
fi
if [ -n "$redis" ]; then
	files+=(redis.go) requires+=("github.com/redis/go-redis/v9@$redis") tags+=(redis)
	drivers+=", go-redis $redis"
fi
if [ -n "$sqlite" ]; then
	files+=(sqlite.go) requires+=("modernc.org/sqlite@$sqlite") tags+=(sqlite)
	drivers+=", sqlite $sqlite"
fi
if [ -n "$mysql" ]; then
	files+=(mysql.go) requires+=("github.com/go-sql-driver/mysql@$mysql") tags+=(mysql)
	drivers+=", go-sql-driver/mysql $mysql"
fi
if [ -n "$orm" ]; then
	files+=(orm.go) tags+=(orm)
	requires+=("gorm.io/gorm@$GORM_VERSION" "gorm.io/driver/postgres@$GORM_POSTGRES_VERSION"
		"github.com/jmoiron/sqlx@$SQLX_VERSION")
	drivers+=", gorm $GORM_VERSION (postgres $GORM_POSTGRES_VERSION), sqlx $SQLX_VERSION"
fi

mix_begin dbmix "$toolchain" "$drivers"
mix_module "$here"
for f in "${files[@]}"; do
	cp "$here/$f" "$work/src/"
done
cd "$work/src"
mix_require "${requires[@]}"
mix_tidy
tagflag=()
if [ ${#tags[@]} -gt 0 ]; then
	joined=$(IFS=,; echo "${tags[*]}")
	tagflag=("-tags=$joined")
fi
mix_step "go build" "$go" build "${tagflag[@]}" "$@" -o "$out" .
