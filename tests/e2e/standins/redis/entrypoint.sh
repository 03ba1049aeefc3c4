#!/bin/sh
# The redis stand-in's entry point (see its Dockerfile).
set -eu
if [ "${1:-}" = redis-server ]; then
	shift
	exec redis-server "$@" --protected-mode no
fi
exec "$@"
