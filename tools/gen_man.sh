#!/bin/sh
# gen_man.sh PFLEX NAME VERSION — the man page of pflex (NAME pflex) or of
# one command (NAME pflex-CMD) from its --help, by Debian's help2man.  The
# command's one-line summary (pflex --help's table) is the page's NAME.
set -eu
pflex=$1 name=$2 version=$3
command -v help2man > /dev/null || { echo "gen_man.sh: help2man not installed (scripts/deps.sh)" >&2; exit 1; }
case "$pflex" in /*) ;; *) pflex=$(pwd)/$pflex ;; esac
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
if [ "$name" = pflex ]; then
    summary="power-flexible AI training: measure, predict and plan GPU power caps"
    printf '#!/bin/sh\nexec "%s" "$@"\n' "$pflex" > "$dir/$name"
else
    cmd=${name#pflex-}
    summary=$("$pflex" --help | sed -n "s/^  $cmd  *//p" | head -1)
    [ -n "$summary" ] || { echo "gen_man.sh: pflex has no command '$cmd'" >&2; exit 1; }
    printf '#!/bin/sh\nexec "%s" %s "$@"\n' "$pflex" "$cmd" > "$dir/$name"
fi
chmod +x "$dir/$name"
# help2man reads "usage:" and the option lines; the rest of --help (the
# EXAMPLES, exit codes) stays as the description's text.
help2man --no-info --no-discard-stderr --version-string="$version" --name="$summary" \
    --section=1 --source="pflex $version" --manual="pflex manual" "$dir/$name"
