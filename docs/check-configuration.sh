#!/bin/sh
# Lists every setting `gospan --help` prints that docs/configuration.md does not mention, and exits
# 1 when there is one. Run after adding a setting to exporter/core/config.c:
#
#   docs/check-configuration.sh [path/to/gospan]     (default: build/gospan)
set -eu

here=$(cd "$(dirname "$0")" && pwd)
gospan=${1:-$here/../build/gospan}
doc=$here/configuration.md

# Setting lines are indented by two spaces and start with an option or a variable name.
names=$(env -i "$gospan" --help |
	sed -n 's/^  \([-A-Z]\)/\1/p' |
	tr ',' '\n' | sed 's/^ *//; s/ .*//' | grep -E '^(--?[a-z]|[A-Z_]+$)')
missing=0
for n in $names; do
	case $n in
	-?) continue ;; # short forms are listed next to their long option
	esac
	if ! grep -qF -- "\`$n" "$doc"; then
		echo "not in docs/configuration.md: $n"
		missing=1
	fi
done
[ "$missing" = 0 ] && echo "docs/configuration.md mentions every setting of $("$gospan" --version)"
exit "$missing"
