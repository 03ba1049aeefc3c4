#!/bin/sh
# The postgres stand-in's entry point (see its Dockerfile): the first start makes the cluster.
set -eu
: "${POSTGRES_USER:=postgres}" "${POSTGRES_DB:=$POSTGRES_USER}"
if [ "${1:-}" = postgres ] && [ ! -s "$PGDATA/PG_VERSION" ]; then
	if [ -z "${POSTGRES_PASSWORD:-}" ]; then
		echo "postgres stand-in: POSTGRES_PASSWORD is not set" >&2
		exit 1
	fi
	pwfile=$(mktemp)
	printf '%s\n' "$POSTGRES_PASSWORD" >"$pwfile"
	initdb -D "$PGDATA" -U "$POSTGRES_USER" --pwfile="$pwfile" --auth-local=trust \
		--auth-host=scram-sha-256 >/dev/null
	rm -f "$pwfile"
	echo "host all all all scram-sha-256" >>"$PGDATA/pg_hba.conf"
	if [ "$POSTGRES_DB" != postgres ]; then
		pg_ctl -D "$PGDATA" -o "-c listen_addresses=''" -w start >/dev/null
		createdb -U "$POSTGRES_USER" "$POSTGRES_DB"
		pg_ctl -D "$PGDATA" -m fast -w stop >/dev/null
	fi
fi
if [ "${1:-}" = postgres ]; then
	shift
	exec postgres -D "$PGDATA" -c listen_addresses='*' "$@"
fi
exec "$@"
