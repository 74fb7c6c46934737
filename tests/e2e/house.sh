#!/bin/sh
# The house's rules a reader meets first: no function over 150 lines
# without a one-line reason above it ("/* Long: ..."), in the library,
# the commands, the daemons, the benches and the tools.  A function is
# a line that opens a definition at column 0 through its closing brace
# at column 0 (the project's style).
here=$(cd "$(dirname "$0")" && pwd)
cd "$here/../.." || exit 1
bad=$(for f in $(find src bench tools -name '*.c' | sort); do
    awk -v F="$f" '
        /^[A-Za-z].*\(/ && !/;[ \t]*$/ && !/^(static )?const [a-z_ ]+ [a-z_]+\[/ { name = $0; start = NR; long = (prev ~ /^\/\* Long: /) }
        /^\{$/ && name != "" { open = NR }
        /^\}/ && open { if (NR - open > 150 && !long) printf "%s:%d: %d lines, no /* Long: ... */ reason above: %s\n", F, start, NR - open, substr(name, 1, 60)
                        open = 0; name = "" }
        { if ($0 !~ /^ \*/) prev = $0; else if (prev !~ /^\/\* Long: /) prev = $0 }' "$f"
done)
[ -z "$bad" ] || { echo "FAIL: long functions:"; echo "$bad"; exit 1; }
echo "house: ok"
