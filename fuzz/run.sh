#!/bin/sh
# Builds every fuzz/fuzz_*.c as a libFuzzer target (clang, ASan, UBSan) and
# runs each for FUZZ_SECONDS (default 60), starting from the corpus in
# fuzz/corpus/<target>/ plus the test fixtures.  New crashes stop the run
# with the reproducer saved under build-fuzz/ (copy it into fuzz/corpus/ once
# fixed, so that it is replayed for ever).  Without clang's libFuzzer it says
# so and counts as skipped.
set -u
cd "$(dirname "$0")/.."
SECS=${FUZZ_SECONDS:-60}
OUT=build-fuzz
CC=${FUZZ_CC:-clang}
mkdir -p "$OUT"
echo 'int LLVMFuzzerTestOneInput(const unsigned char *d, unsigned long n) { return 0; }' > "$OUT/probe.c"
if ! $CC -fsanitize=fuzzer "$OUT/probe.c" -o "$OUT/probe" 2>/dev/null; then
    echo "fuzz: skipped: $CC with libFuzzer not available (install clang and libclang-rt-14-dev)"
    [ -n "${SUMMARY:-}" ] && echo "0 0 1" >> "$SUMMARY"
    exit 0
fi
COMMON="-std=c11 -D_POSIX_C_SOURCE=200809L -D_DEFAULT_SOURCE -g -O1 -Iinclude -Isrc \
 $(pkg-config --cflags gsl jansson libmicrohttpd libcurl sqlite3) -fno-sanitize-recover=all"
LIBS="$(pkg-config --libs gsl jansson libmicrohttpd libcurl sqlite3 inih) -lglpk -ldl -lm -lpthread"
status=0
# The library is compiled once, instrumented for the fuzzer but without its
# main (fuzzer-no-link), and every target links against it.
mkdir -p "$OUT/lib"
rm -f "$OUT/lib/"*.o
for src in src/lib/*/*.c; do echo "$src"; done |
    xargs -P "${FUZZ_JOBS:-2}" -I{} sh -c '
        o="$0/lib/$(echo "{}" | tr / _ | sed "s/\.c\$/.o/")"
        '"$CC $COMMON"' -fsanitize=fuzzer-no-link,address,undefined -c "{}" -o "$o"' "$OUT" ||
    { echo "fuzz: the library did not build"; [ -n "${SUMMARY:-}" ] && echo "0 1 0" >> "$SUMMARY"; exit 1; }
rm -f "$OUT/libpflex-fuzz.a"
ar rcs "$OUT/libpflex-fuzz.a" "$OUT/lib/"*.o
for src in fuzz/fuzz_*.c; do
    t=$(basename "$src" .c)
    if ! $CC $COMMON -fsanitize=fuzzer,address,undefined "$src" "$OUT/libpflex-fuzz.a" $LIBS \
            -o "$OUT/$t"; then
        echo "fuzz: $t did not build"; status=1
        [ -n "${SUMMARY:-}" ] && echo "0 1 0" >> "$SUMMARY"
        continue
    fi
    mkdir -p "$OUT/corpus-$t"
    [ -d "fuzz/corpus/$t" ] && cp fuzz/corpus/$t/* "$OUT/corpus-$t/" 2>/dev/null
    cp tests/data/* "$OUT/corpus-$t/" 2>/dev/null
    echo "fuzz: $t for ${SECS}s"
    if ! "$OUT/$t" -max_total_time="$SECS" -max_len=8192 -timeout=5 -rss_limit_mb=2048 \
            -artifact_prefix="$OUT/$t-" "$OUT/corpus-$t" > "$OUT/$t.log" 2>&1; then
        echo "fuzz: $t FAILED; see $OUT/$t.log"; tail -30 "$OUT/$t.log"; status=1
        [ -n "${SUMMARY:-}" ] && echo "0 1 0" >> "$SUMMARY"
    else
        grep -E '^#[0-9]+.*DONE' "$OUT/$t.log" | tail -1
        [ -n "${SUMMARY:-}" ] && echo "1 0 0" >> "$SUMMARY"
    fi
done
exit $status
