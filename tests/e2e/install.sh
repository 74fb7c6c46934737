#!/bin/sh
# make install with PREFIX and DESTDIR puts pflex, libpflex.a, the headers
# and the docs where it says; the installed pflex runs, a program built
# against the installed header and library alone reads a sweep, so does
# examples/plan_cut.c, and make uninstall removes it all.  The kit too:
# libpflex.so with its soname exporting only pflex_ names, pflex.pc that
# links examples/plan_cut.c against the shared library, a man page per
# command (man -l), bash completion, the systemd units with PREFIX's paths
# and the example configuration, which the installed pflex reads, and the
# field demonstration's days, which it finds.
command -v make > /dev/null || { echo "no make here"; exit 77; }
B=${PFLEX_BUILD:-$(pwd)/build}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
make --no-print-directory -s install BUILD="$B" PREFIX=/opt/pflex DESTDIR="$T/stage" > "$T/log" 2>&1 \
    || { cat "$T/log"; fail "make install"; }
R="$T/stage/opt/pflex"
for f in bin/pflex lib/libpflex.a include/pflex/io/sweep.h include/pflex/flex/pfi.h \
         share/doc/pflex/README.md share/doc/pflex/contract.md share/doc/pflex/install.md \
         lib/pkgconfig/pflex.pc share/bash-completion/completions/pflex \
         share/man/man1/pflex.1 share/man/man1/pflex-controller.1 share/man/man1/pflex-agent.1 \
         lib/systemd/system/pflex-agent.service lib/systemd/system/pflex-controller.service \
         share/doc/pflex/examples/agent.conf share/doc/pflex/examples/controller.conf \
         share/doc/pflex/examples/prometheus.yml share/doc/pflex/examples/pflex.json; do
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
# the shared library: soname, links, only the public API exported
so=$(cd "$R/lib" && ls libpflex.so.*.*.* 2>/dev/null)
[ -n "$so" ] && [ -f "$R/lib/$so" ] || fail "no libpflex.so.X.Y.Z"
[ "$(readlink "$R/lib/libpflex.so.0")" = "$so" ] || fail "libpflex.so.0 -> $(readlink "$R/lib/libpflex.so.0")"
[ "$(readlink "$R/lib/libpflex.so")" = libpflex.so.0 ] || fail "libpflex.so -> $(readlink "$R/lib/libpflex.so")"
readelf -d "$R/lib/$so" | grep -q 'SONAME.*\[libpflex\.so\.0\]' || fail "soname: $(readelf -d "$R/lib/$so" | grep SONAME)"
nm -D --defined-only "$R/lib/$so" | awk '{ print $NF }' > "$T/exports"
[ "$(wc -l < "$T/exports")" -gt 100 ] || fail "libpflex.so exports $(wc -l < "$T/exports") symbols"
notpub=$(grep -v '^pflex_' "$T/exports" | head -5)
[ -z "$notpub" ] || fail "libpflex.so exports names outside the API: $notpub"
# internal ones (src/lib/util/clock.h, sdnotify.h) stay hidden
grep -qx 'pflex_mono_s\|pflex_sd_notify' "$T/exports" && fail "libpflex.so exports internal symbols"
# pkg-config: plan_cut against the shared library, run, as in the tree
if [ -z "$SAN" ]; then
    PKG_CONFIG_PATH="$R/lib/pkgconfig" pkg-config --cflags --libs pflex > "$T/pc" \
        || fail "pkg-config pflex: $(cat "$T/pc")"
    # the staged tree stands where PREFIX will be: pkg-config's prefix moved there
    sed "s|^prefix=.*|prefix=$R|; s|^libdir=.*|libdir=$R/lib|" "$R/lib/pkgconfig/pflex.pc" > "$T/pflex.pc"
    cc examples/plan_cut.c $(PKG_CONFIG_PATH="$T" pkg-config --cflags --libs pflex) -o "$T/plan_cut_so" \
        2> "$T/cc.log" || { cat "$T/cc.log"; fail "plan_cut does not link with pkg-config --libs pflex"; }
    readelf -d "$T/plan_cut_so" | grep -q 'NEEDED.*libpflex\.so\.0' || fail "plan_cut is not linked to libpflex.so.0"
    LD_LIBRARY_PATH="$R/lib" "$T/plan_cut_so" examples/plan_cut.csv 0.2 0.8 | cmp -s - "$T/plan" \
        || fail "plan_cut on libpflex.so plans otherwise than on libpflex.a"
fi
# a man page per command; man reads the installed one
for c in $("$R/bin/pflex" --help | awk '/^commands:/ { on = 1; next } on && /^$/ { exit } on { print $1 }'); do
    [ -s "$R/share/man/man1/pflex-$c.1" ] || fail "no man page for pflex $c"
done
if command -v man > /dev/null; then
    MANPATH="$R/share/man" man pflex-controller 2>/dev/null | grep -q -- '--agent' \
        || fail "man pflex-controller (MANPATH) does not show --agent"
    man -l "$R/share/man/man1/pflex-agent.1" 2>/dev/null | grep -q -- '--token-file' \
        || fail "man -l pflex-agent.1 does not show --token-file"
fi
# bash completion: the commands, and options out of the option tables
if command -v bash > /dev/null; then
    cat > "$T/comp.sh" <<'SH'
. "$1"
COMP_WORDS=(pflex contr); COMP_CWORD=1; _pflex; echo "${COMPREPLY[*]}"
COMP_WORDS=(pflex controller run --print-c); COMP_CWORD=3; _pflex; echo "${COMPREPLY[*]}"
COMP_WORDS=(pflex agent --max-le); COMP_CWORD=2; _pflex 2>/dev/null; echo "${COMPREPLY[*]}"
SH
    bash "$T/comp.sh" "$R/share/bash-completion/completions/pflex" > "$T/comp" 2>&1
    [ "$(sed -n 1p "$T/comp")" = controller ] && [ "$(sed -n 2p "$T/comp")" = --print-config ] \
        && [ "$(sed -n 3p "$T/comp")" = --max-lease= ] || fail "bash completion: $(cat "$T/comp")"
fi
# the units: PREFIX's binary, /etc's configuration for /opt's, no @...@ left
for u in pflex-agent pflex-controller; do
    f="$R/lib/systemd/system/$u.service"
    grep -q '@[A-Z]*@' "$f" && fail "$u.service: unsubstituted: $(grep '@[A-Z]*@' "$f" | head -1)"
    grep -q "^ExecStart=/opt/pflex/bin/pflex .*--config /opt/pflex/etc/pflex/" "$f" \
        || fail "$u.service: ExecStart: $(grep ExecStart "$f")"
    if command -v systemd-analyze > /dev/null; then
        systemd-analyze verify --man=no "$f" 2>&1 | grep -i 'unknown\|invalid\|syntax' && fail "$u.service does not verify"
    fi
done
# the example configuration is what the installed pflex reads
E="$R/share/doc/pflex/examples"
"$R/bin/pflex" agent --config "$E/agent.conf" --backend sim --print-config > "$T/acfg" \
    || fail "the installed agent refuses the example agent.conf"
grep -q '^listen = ' "$T/acfg" || fail "agent --print-config: $(cat "$T/acfg")"
"$R/bin/pflex" controller run --config "$E/controller.conf" --print-config > "$T/ccfg" \
    || fail "the installed controller refuses the example controller.conf"
[ "$(grep -c '^agent = ' "$T/ccfg")" = 2 ] || fail "controller --print-config: $(cat "$T/ccfg")"
make --no-print-directory -s uninstall BUILD="$B" PREFIX=/opt/pflex DESTDIR="$T/stage" > /dev/null \
    || fail "make uninstall"
[ -z "$(find "$T/stage" -type f -o -type l)" ] || fail "make uninstall left: $(find "$T/stage" -type f -o -type l)"
echo "install: ok"
