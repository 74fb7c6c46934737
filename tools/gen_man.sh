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
    cmd=
else
    cmd=${name#pflex-}
    summary=$("$pflex" --help | sed -n "s/^  $cmd  *//p" | head -1)
    [ -n "$summary" ] || { echo "gen_man.sh: pflex has no command '$cmd'" >&2; exit 1; }
fi
# help2man wants "Usage:" and "  or:" lines for the SYNOPSIS: the usage
# block of --help (up to its first blank line) rewritten so, each usage's
# wrapped "[...]" lines joined to it; the rest (the options, EXAMPLES, the
# exit codes) stays as it is.
cat > "$dir/usage.awk" <<'AWK'
NR == 1 { u = 1; sub(/^usage:/, "Usage:") }
u && /^$/ { u = 0; if (held != "") print held; held = ""; print; next }
u && NR > 1 && /^ +\[/ { sub(/^ +/, " "); held = held $0; next }
u { if (NR > 1) sub(/^ +pflex /, "  or: pflex "); if (held != "") print held; held = $0; next }
{ print }
END { if (held != "") print held }
AWK
printf '#!/bin/sh\n"%s" %s "$@" | awk -f "%s"\n' "$pflex" "$cmd" "$dir/usage.awk" > "$dir/$name"
chmod +x "$dir/$name"
help2man --no-info --no-discard-stderr --version-string="$version" --name="$summary" \
    --section=1 --source="pflex $version" --manual="pflex manual" "$dir/$name"
