#!/bin/sh
# Every ```sh block of README.md and docs/*.md runs as written: each in a
# fresh clone of this repository (its committed files: commit before running
# it on changed docs or examples), from its root, with
# the build's pflex on PATH, under `sh -e`, bounded in time; a failing block
# fails the test, named by file and line.  Illustrative blocks (placeholder
# hosts, daemons left running, real GPUs) are fenced ```console and not run.
# A block whose first line is `# needs: root` or `# needs: slurm` is skipped
# when that is missing; one that reads $SHARED_DATA when the data is absent.
# DOCS_RUN_ONLY=FILE[:LINE] runs the blocks of one file (or one block).
set -u
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
PFLEX_BUILD=${PFLEX_BUILD:-$root/build}
[ -x "$PFLEX_BUILD/pflex" ] || { echo "SKIP: $PFLEX_BUILD/pflex not built"; exit 77; }
command -v git >/dev/null 2>&1 || { echo "SKIP: git not installed"; exit 77; }
git -C "$root" rev-parse --git-dir >/dev/null 2>&1 || { echo "SKIP: $root is not a git checkout"; exit 77; }
BLOCK_S=${DOCS_RUN_BLOCK_S:-60}
TOTAL_S=${DOCS_RUN_TOTAL_S:-230}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
start=$(date +%s)

# Blocks: tmp/blocks/N.sh; tmp/index has "FILE LINE BLOCK" (LINE: the fence).
mkdir -p "$tmp/blocks" "$tmp/home"
: > "$tmp/index"
cd "$root" || exit 1
for f in README.md docs/*.md; do
    awk -v f="$f" -v dir="$tmp/blocks" -v base="$(wc -l < "$tmp/index" 2>/dev/null || echo 0)" '
        /^```sh[ \t]*$/ && !inb { inb = 1; start = NR; out = dir "/" (base + (++k)) ".sh"; printf "" > out; next }
        /^```/ && inb { inb = 0; close(out); print f, start, out; next }
        inb { print > out }
        END { if (inb) { print f ":" start ": unclosed ```sh block" > "/dev/stderr"; exit 1 } }
    ' "$f" >> "$tmp/index" || { echo "FAIL: $f: unclosed block"; exit 1; }
done
nblocks=$(wc -l < "$tmp/index")
[ "$nblocks" -gt 0 ] || { echo "FAIL: no \`\`\`sh block found"; exit 1; }

shared=${SHARED_DATA:-}
[ -n "$shared" ] && [ -d "$shared/emerald-demo" ] || shared=""
is_root=no; [ "$(id -u)" = 0 ] && is_root=yes
have_slurm=no; command -v squeue >/dev/null 2>&1 && squeue >/dev/null 2>&1 && have_slurm=yes

ran=0; skipped=0; failed=0
clone=$tmp/clone
while read -r file line block; do
    where="$file:$line"
    case ${DOCS_RUN_ONLY:-} in
        "") ;;
        *:*) [ "$where" = "$DOCS_RUN_ONLY" ] || continue ;;
        *) [ "$file" = "$DOCS_RUN_ONLY" ] || continue ;;
    esac
    if [ $(( $(date +%s) - start )) -gt "$TOTAL_S" ]; then
        echo "FAIL: over ${TOTAL_S}s before $where"; failed=$((failed + 1)); break
    fi
    first=$(head -1 "$block")
    case $first in
        "# needs: root"*) [ $is_root = yes ] || { echo "skip $where: needs root"; skipped=$((skipped + 1)); continue; } ;;
        "# needs: slurm"*) [ $have_slurm = yes ] || { echo "skip $where: needs a running Slurm"; skipped=$((skipped + 1)); continue; } ;;
    esac
    if grep -q 'SHARED_DATA' "$block" && [ -z "$shared" ]; then
        echo "skip $where: needs \$SHARED_DATA/emerald-demo"; skipped=$((skipped + 1)); continue
    fi
    # One clone, put back to its fresh state before each block (faster than
    # a clone a block; the same files).
    if [ -d "$clone" ]; then
        git -C "$clone" reset -q --hard && git -C "$clone" clean -q -fdx \
            || { echo "FAIL: cannot reset the clone"; exit 1; }
    else
        git clone -q "$root" "$clone" || { echo "FAIL: git clone of $root"; exit 1; }
    fi
    t0=$(date +%s)
    # Its own session, so that whatever the block leaves behind is ended.
    rm -f "$tmp/sid"
    ( cd "$clone" && PATH="$PFLEX_BUILD:$PATH" SHARED_DATA="$shared" HOME="$tmp/home" \
        exec setsid sh -c 'echo $$ > "$1"; shift; exec timeout -k 5 "$@"' sh "$tmp/sid" \
        "$BLOCK_S" sh -e "$block" ) < /dev/null > "$tmp/out" 2>&1
    rc=$?
    # A block that starts a daemon stops it: one still running fails it.
    left=""
    if [ -s "$tmp/sid" ]; then
        sid=$(cat "$tmp/sid")
        # (a daemon just sent `kill` gets 3 s to finish its exit)
        if [ $rc -eq 0 ]; then
            for i in 1 2 3 4 5 6; do
                left=$(ps -o pid=,args= -s "$sid" 2>/dev/null | grep -v '<defunct>')
                [ -z "$left" ] && break
                sleep 0.5
            done
        fi
        kill -TERM "-$sid" 2>/dev/null
    fi
    if [ -n "$left" ]; then
        echo "left running by the block: $left" >> "$tmp/out"; rc=253
    fi
    ran=$((ran + 1))
    if [ $rc -ne 0 ]; then
        failed=$((failed + 1))
        case $rc in 124) why="over ${BLOCK_S}s" ;; 253) why="left a process running" ;; *) why="exit $rc" ;; esac
        echo "FAIL $where ($why, $(( $(date +%s) - t0 ))s):"
        sed 's/^/    | /' "$block"
        echo "  output (last 20 lines):"
        tail -20 "$tmp/out" | sed 's/^/    > /'
    else
        echo "ok   $where ($(( $(date +%s) - t0 ))s)"
    fi
done < "$tmp/index"
echo "docs_run: $ran run, $skipped skipped, $failed failed ($(( $(date +%s) - start ))s)"
[ $failed -eq 0 ] || exit 1
exit 0
