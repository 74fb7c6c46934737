#!/bin/sh
# The docs are reference a user reads in minutes: every page but the
# measurements page under 400 lines; no internal issue numbers in the
# docs or the code (a reader cannot open the tracker they point at);
# every relative link to a doc names a file that exists.
set -u
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
cd "$root" || exit 1
fail() { echo "FAIL: $*"; exit 1; }
for f in README.md docs/*.md; do
    [ "$f" = docs/measurements.md ] && continue
    n=$(wc -l < "$f")
    [ "$n" -lt 400 ] || fail "$f: $n lines (a reference page is under 400; figures go to docs/measurements.md)"
done
# "issue 13", "issues 8 and 9"; other projects' issues are cited by their repository
hits=$(grep -rnE '(^|[^/A-Za-z-])[Ii]ssues? #?[0-9]+' README.md docs src include tests bench scripts fuzz tools Makefile 2>/dev/null \
       | grep -vE '(nccl|TransformerEngine|pith-train|[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+)[ ,]+issue' | grep -v 'docs_shape.sh')
[ -z "$hits" ] || fail "internal issue numbers: $hits"
for f in README.md docs/*.md; do
    d=$(dirname "$f")
    for l in $(grep -oE '\]\([a-z0-9_./-]+\.md(#[a-z0-9-]*)?\)' "$f" | sed 's/^](//; s/)$//; s/#.*//'); do
        [ -f "$d/$l" ] || fail "$f links to $l, which does not exist"
    done
done
echo "docs_shape: ok"
