#!/bin/sh
# group_headers.sh — group the public headers by layer, mechanically:
#
#     include/pflex/<topic>.h  ->  include/pflex/<layer>/<topic>.h
#
# so that a header's path names the room of src/lib/ that implements it
# (docs/architecture.md, "Headers").  A header's layer is the folder of
# src/lib/ holding <topic>.c or <topic>_*.c, found when the script runs, so
# that headers added since it was written (the study room's) go where their
# sources are; a header with no such source stops the script before it
# changes anything.
#
# It then rewrites every "pflex/<topic>.h" (quoted, angled, or in a path)
# in the tracked sources, tests, benchmarks, fuzz targets, tools, examples,
# headers, docs and README; writes include/pflex/pflex.h, an umbrella header
# that includes them all; and makes `make install` copy the subfolders.
# Run it from a clean checkout, then build and test:
#
#     sh scripts/group_headers.sh && make -j2 && make -j2 test
#
# It uses git mv, so the moves show as renames; nothing is committed.
# --dry-run prints the table (header, layer) and changes nothing.
set -eu
cd "$(dirname "$0")/.."
dry=0
[ "${1:-}" = "--dry-run" ] && dry=1
[ -d include/pflex ] || { echo "group_headers: no include/pflex here" >&2; exit 1; }
if [ $dry -eq 0 ] && [ -n "$(git status --porcelain -- include src tests bench fuzz tools \
        examples docs README.md Makefile)" ]; then
    echo "group_headers: the tree has changes; commit or stash them first" >&2
    exit 1
fi

# The table: topic layer, one a line.
table=$(mktemp)
trap 'rm -f "$table"' EXIT
missing=""
for h in include/pflex/*.h; do
    t=$(basename "$h" .h)
    [ "$t" = pflex ] && continue            # the umbrella, if run twice
    src=$(ls src/lib/*/"$t".c src/lib/*/"$t"_*.c 2>/dev/null | head -1 || true)
    if [ -z "$src" ]; then
        missing="$missing $h"
        continue
    fi
    layer=$(basename "$(dirname "$src")")
    echo "$t $layer" >> "$table"
done
if [ -n "$missing" ]; then
    echo "group_headers: no src/lib/<layer>/<topic>.c for:$missing; place them by hand" >&2
    exit 1
fi
if [ ! -s "$table" ]; then
    echo "group_headers: nothing to move (already grouped?)" >&2
    exit 1
fi
if [ $dry -eq 1 ]; then
    cat "$table"
    exit 0
fi

# 1. The moves.
while read -r t layer; do
    mkdir -p "include/pflex/$layer"
    git mv "include/pflex/$t.h" "include/pflex/$layer/$t.h"
done < "$table"

# 2. Every mention of pflex/<topic>.h, in one sed program: #include lines,
#    the headers' own first lines ("/* pflex/alloc.h — ..."), paths in
#    scripts, help texts and docs.  A mention must not follow a letter,
#    digit, '_' or '/' other than include/'s, so that nothing is rewritten
#    twice.
prog=$(mktemp)
trap 'rm -f "$table" "$prog"' EXIT
while read -r t layer; do
    printf 's#(^|[^A-Za-z0-9_/]|include/)pflex/%s\\.h#\\1pflex/%s/%s.h#g\n' "$t" "$layer" "$t"
done < "$table" > "$prog"
git ls-files -z -- src tests bench fuzz tools examples include docs README.md |
    xargs -0 grep -lE 'pflex/[a-z_0-9]+\.h' 2>/dev/null |
    grep -v '^scripts/group_headers\.sh$' |
    while read -r f; do
        sed -E -i -f "$prog" "$f"
    done

# 3. The umbrella header.
{
    echo "/* pflex/pflex.h — every public header of libpflex, by layer"
    echo " * (docs/architecture.md).  Include the topic's own header where one"
    echo " * is enough; this one is for programs that use many. */"
    echo "#ifndef PFLEX_PFLEX_H"
    echo "#define PFLEX_PFLEX_H"
    echo
    for layer in util io flex sim hw net report study; do
        grep -q " $layer\$" "$table" || continue
        awk -v l="$layer" '$2 == l { print $1 }' "$table" | sort |
            while read -r t; do echo "#include \"pflex/$layer/$t.h\""; done
    done
    # any layer not in the list above, last
    awk '{ print $2 }' "$table" | sort -u | while read -r layer; do
        case " util io flex sim hw net report study " in *" $layer "*) continue ;; esac
        awk -v l="$layer" '$2 == l { print $1 }' "$table" | sort |
            while read -r t; do echo "#include \"pflex/$layer/$t.h\""; done
    done
    echo
    echo "#endif"
} > include/pflex/pflex.h
git add include/pflex/pflex.h

# 4. make install copies the layer folders (and the umbrella at the top).
awk '
/^\tinstall -m 644 include\/pflex\/\*\.h \$\(INCDIR\)\/$/ {
    print
    print "\tfor d in include/pflex/*/; do l=$$(basename $$d); \\"
    print "\t    install -d $(INCDIR)/$$l && install -m 644 $$d*.h $(INCDIR)/$$l/ || exit 1; done"
    done = 1
    next
}
{ print }
END { if (!done) { print "group_headers: the Makefile install rule was not found" > "/dev/stderr"; exit 1 } }
' Makefile > Makefile.grouped
mv Makefile.grouped Makefile

echo "group_headers: moved $(wc -l < "$table") headers into include/pflex/<layer>/; wrote include/pflex/pflex.h"
echo "group_headers: now: make -j2 && make -j2 test, then commit"
