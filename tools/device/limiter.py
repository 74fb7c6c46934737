# The H200's power limiter, measured: how far under the enforced limit a power-limited board's mean power sits
# and how it dithers.  Reads the raw telemetry (pflex telemetry --nvml --csv, 0.5 s apart) of the device runs
# (data/h200-device/run*/) and, when present, the shared set's (h200-uncapped/telemetry/); per loop, the
# samples while it ran (the first dropped, none after the loop's last step, as tools/device/measured.py).
# A loop is power-limited when its mean SM clock is under 1900 MHz (the top is 1980; loops between 1900 and
# 1980 run part of the time at the top clock, the limit not binding).
#
# usage: python3 tools/device/limiter.py [DEVICE_DIR [SHARED_TELEMETRY_DIR]]
import glob, os, statistics, sys

TOP_FREE_MHZ = 1900


def fail(where, what):
    print(f"{where}: {what}", file=sys.stderr)
    sys.exit(2)


def last_step(path):
    try:
        return max(float(l.split()[0]) for l in open(path) if l.strip())
    except OSError:
        return None
    except (ValueError, IndexError):
        fail(path, "expected lines of: unix time, cumulative count")


def series(path):
    by = {}
    with open(path) as f:
        for n, line in enumerate(f, 1):
            p = line.rstrip("\n").split(",")
            if n == 1:
                continue
            if len(p) != 7:
                fail(f"{path}:{n}", f"expected 7 fields, got {len(p)}")
            if p[6] in ("", "nan"):
                continue
            try:
                by.setdefault(p[5], []).append((float(p[4]), float(p[6])))
            except ValueError:
                fail(f"{path}:{n}", "time_s or value is not a number")
    until = last_step(path[:-len(".tm.csv")] + ".steps")
    return {k: [v for t, v in sorted(s)[1:] if until is None or t <= until] for k, s in by.items()}


def main():
    dev = sys.argv[1] if len(sys.argv) > 1 else "data/h200-device"
    shared = sys.argv[2] if len(sys.argv) > 2 else "../shared/data/h200-uncapped/telemetry"
    files = sorted(glob.glob(os.path.join(dev, "run*", "*.tm.csv"))) + sorted(glob.glob(os.path.join(shared, "*.tm.csv")))
    if not files:
        fail(dev, "no telemetry (run*/NAME.tm.csv)")
    gaps, sds, csds, peaks = [], [], [], []
    print("loop                         limit W  mean W  under W  under %  sample sd W  max W  SM MHz  clock sd MHz")
    for path in files:
        s = series(path)
        pw, ck, lim = s.get("DCGM_FI_DEV_POWER_USAGE"), s.get("DCGM_FI_DEV_SM_CLOCK"), s.get("DCGM_FI_DEV_ENFORCED_POWER_LIMIT")
        if not pw or not ck or len(pw) < 3 or statistics.mean(ck) >= TOP_FREE_MHZ or statistics.mean(pw) < 300:
            continue
        limit = statistics.median(lim) if lim else 700.0
        m, sd, csd = statistics.mean(pw), statistics.pstdev(pw), statistics.pstdev(ck)
        gaps.append((limit - m) / limit); sds.append(sd); csds.append(csd); peaks.append(limit - max(pw))
        name = os.path.basename(os.path.dirname(path)) + "/" + os.path.basename(path)[:-len(".tm.csv")]
        print("%-28s %7.0f  %6.1f  %7.1f  %7.2f  %11.1f  %5.1f  %6.0f  %12.0f" % (name, limit, m, limit - m, 100 * (limit - m) / limit,
                                                                          sd, max(pw), statistics.mean(ck), csd))
    if not gaps:
        fail(dev, "no power-limited loop (mean SM clock under %d MHz)" % TOP_FREE_MHZ)
    print("%d power-limited loops: mean power under the limit by %.2f %% (median; %.2f-%.2f %%), sample sd %.1f W "
          "(median; %.1f-%.1f), SM clock sd %.0f MHz (median; %.0f-%.0f), highest sample %.1f W under the limit (median)"
          % (len(gaps), 100 * statistics.median(gaps), 100 * min(gaps), 100 * max(gaps), statistics.median(sds), min(sds),
             max(sds), statistics.median(csds), min(csds), max(csds), statistics.median(peaks)))


if __name__ == "__main__":
    main()
