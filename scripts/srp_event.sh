#!/bin/sh
# srp_event.sh — the target shape of the field demonstration's SRP event
# (Emerald AI, Phoenix, 3 May 2025), derived from the site's measured
# total power (derived/Fig2_SRP_exp_total_power_W.csv of the demonstration
# data, one row a minute), as a small schedule for a time-compressed
# replay:
#
#   sh scripts/srp_event.sh DATA_DIR [BUCKET_MIN [SPEEDUP]] > schedule.csv
#
# DATA_DIR holds emerald-demo/ (the shared data folder).  The baseline is
# the mean power of the first hour, before the event.  The minutes are cut
# into buckets of BUCKET_MIN (default 20); a bucket's level is the largest
# power measured in it over the baseline, rounded up to 0.005: the site was
# at or under it throughout.  The event is the run of buckets under 0.95 of
# the baseline.  Output: offset_s,duration_s,fraction (offsets from the
# event's start, divided by SPEEDUP, default 400), one row a bucket, then a
# comment line with the baseline and the event's real start and length.
# Nothing of the data is copied: the schedule is computed at each run.
set -eu
dir=${1:?usage: srp_event.sh DATA_DIR [BUCKET_MIN [SPEEDUP]]}
bucket=${2:-20}
speedup=${3:-400}
f="$dir/emerald-demo/derived/Fig2_SRP_exp_total_power_W.csv"
[ -r "$f" ] || { echo "srp_event.sh: $f: not readable" >&2; exit 2; }
awk -F, -v bucket="$bucket" -v speedup="$speedup" '
    { sub(/\r$/, "") }
    NR == 1 { if ($2 != "total_W") { print "srp_event.sh: unexpected header: " $0 > "/dev/stderr"; exit 2 } next }
    NR > 1 {
        m = NR - 2; p = $2 + 0
        if (m < 60) { base += p; nbase++ }
        k = int(m / bucket)
        if (!(k in mx) || p > mx[k]) mx[k] = p
        if (k == 0 && m == 0) t0 = $1
        last = k
    }
    END {
        if (nbase < 60 || last < 4) { print "srp_event.sh: too few rows" > "/dev/stderr"; exit 2 }
        B = base / nbase
        first = -1
        for (k = 0; k <= last; k++) if (mx[k] / B < 0.95) { if (first < 0) first = k; end = k }
        if (first < 0) { print "srp_event.sh: no event in the data" > "/dev/stderr"; exit 2 }
        print "offset_s,duration_s,fraction"
        d = bucket * 60 / speedup
        for (k = first; k <= end; k++) {
            lv = mx[k] / B
            lv = int(lv * 200 + 0.999999) / 200
            printf "%g,%g,%.3f\n", (k - first) * d, d, lv
        }
        printf "# baseline %.0f W; event from minute %d for %d minutes of the data starting %s; x1/%g\n",
               B, first * bucket, (end - first + 1) * bucket, t0, speedup
    }' "$f"
