#!/bin/sh
# make install with PREFIX and DESTDIR puts pflex, libpflex.a, the headers,
# the docs and the field demonstration's days where it says; the installed
# pflex runs and finds its days, a program built against the installed
# header and library alone reads a sweep, so does
# examples/plan_cut.c, and make uninstall removes it all.
command -v make > /dev/null || { echo "no make here"; exit 77; }
B=${PFLEX_BUILD:-$(pwd)/build}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
make --no-print-directory -s install BUILD="$B" PREFIX=/opt/pflex DESTDIR="$T/stage" > "$T/log" 2>&1 \
    || { cat "$T/log"; fail "make install"; }
R="$T/stage/opt/pflex"
for f in bin/pflex lib/libpflex.a include/pflex/io/sweep.h include/pflex/flex/pfi.h \
         share/doc/pflex/README.md share/doc/pflex/contract.md; do
    [ -f "$R/$f" ] || fail "make install did not write $f"
done
"$R/bin/pflex" --version | grep -q '^pflex ' || fail "the installed pflex does not run"
"$R/bin/pflex" pfi tests/data/sweep_basic.csv > /dev/null || fail "the installed pflex pfi"
# the installed pflex finds the field demonstration's days under its prefix
[ -f "$R/share/pflex/field-demo/days.csv" ] || fail "make install did not write share/pflex/field-demo"
"$R/bin/pflex" simulate --day nope 2>&1 | grep -q -- "--day: srp, aps or caiso, not 'nope'" \
    || fail "the installed pflex does not read its days: $("$R/bin/pflex" simulate --day nope 2>&1)"
cat > "$T/use.c" <<'C'
#include <stdio.h>
#include <string.h>
#include <pflex/io/sweep.h>
int main(void)
{
    const char *csv = "job,cap_w,power_w,throughput\na,700,600,100\na,500,450,90\n";
    pflex_sweep_t *sw;
    pflex_error_t err;
    if (pflex_sweep_read_mem(csv, strlen(csv), "m", NULL, &sw, &err) < 0)
        return 1;
    printf("%zu %zu\n", sw->njobs, sw->jobs[0].npoints);
    pflex_sweep_destroy(sw);
    return 0;
}
C
SAN=""
nm "$R/lib/libpflex.a" 2>/dev/null | grep -q __asan_init && SAN="-fsanitize=address,undefined"
if command -v pkg-config > /dev/null && cc $SAN -I"$R/include" "$T/use.c" "$R/lib/libpflex.a" \
        $(pkg-config --libs gsl jansson libmicrohttpd libcurl sqlite3 2>/dev/null) -ldl -lm -lpthread \
        -o "$T/use" 2> "$T/cc.log"; then
    [ "$("$T/use")" = "1 2" ] || fail "a program on the installed library: $("$T/use")"
else
    cat "$T/cc.log"
    fail "a program does not build against the installed header and library"
fi
# the example program builds against the installed tree alone, and plans as
# the one built in the tree does
if cc $SAN -I"$R/include" examples/plan_cut.c "$R/lib/libpflex.a" \
        $(pkg-config --libs gsl jansson libmicrohttpd libcurl sqlite3 2>/dev/null) -ldl -lm -lpthread \
        -o "$T/plan_cut" 2> "$T/cc.log"; then
    "$T/plan_cut" examples/plan_cut.csv 0.2 0.8 > "$T/plan" || fail "the installed example: exit $?"
    grep -q '^total power_w ' "$T/plan" || fail "the installed example: $(cat "$T/plan")"
    if [ -x "$B/examples/plan_cut" ]; then
        "$B/examples/plan_cut" examples/plan_cut.csv 0.2 0.8 | cmp -s - "$T/plan" \
            || fail "the example on the installed library plans otherwise than in the tree"
    fi
else
    cat "$T/cc.log"
    fail "examples/plan_cut.c does not build against the installed headers and library"
fi
make --no-print-directory -s uninstall BUILD="$B" PREFIX=/opt/pflex DESTDIR="$T/stage" > /dev/null \
    || fail "make uninstall"
[ -z "$(find "$T/stage" -type f)" ] || fail "make uninstall left: $(find "$T/stage" -type f)"
echo "install: ok"
