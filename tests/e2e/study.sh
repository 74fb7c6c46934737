#!/bin/sh
# pflex study end to end on a subset of the fleet: the four files, pfi.csv
# agreeing with `pflex pfi` on sweeps.csv and readable by `pflex allocate
# --pfi`, the documented summary.json keys, charts when gnuplot is there and
# a note when it is not, same seed same bytes, bad usage exit 2.
set -u
P=${PFLEX:-build/pflex}
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

"$P" study --help | grep -q 'usage: pflex study' || fail "--help"
"$P" study --out "$T/a" --jobs 20 > "$T/table" 2> "$T/err" || fail "study exit: $(cat "$T/err")"
for f in sweeps.csv pfi.csv summary.json report.html; do
    [ -s "$T/a/$f" ] || fail "no $f"
done
grep -q 'ratio PFI' "$T/table" || fail "no summary table"
grep -q '^the grid day (SRP, 3 May 2025)' "$T/table" || fail "no grid day line"
grep -q 'id="grid-day"' "$T/a/report.html" || fail "no grid day section in the report"
grep -q '^  all ' "$T/table" || fail "table has no 'all' row"

# pfi.csv: the issue's columns, a row per group, and each group's ratio PFI
# recomputed here from sweeps.csv (SPEC section 2: mean of x/L over the
# capped points, x < 0.01 and L < 0.005 dropped).
head -1 "$T/a/pfi.csv" | grep -q '^group,set,model,arch,task,gpus,gpu,seq_len,batch,ep,compile,checkpointing,pfi,pfi_grid4,' \
    || fail "pfi.csv header"
rows=$(($(wc -l < "$T/a/pfi.csv") - 1))
[ "$rows" -ge 20 ] || fail "pfi.csv has $rows rows, want at least 20"
grep -q 'H200-SXM-141GB' "$T/a/pfi.csv" || fail "pfi.csv lacks the gpu column"
if command -v python3 > /dev/null 2>&1; then
    python3 - "$T/a/sweeps.csv" "$T/a/pfi.csv" <<'EOF2' || fail "pfi.csv ratio PFI differs from sweeps.csv"
import csv, sys
pts = {}
for r in csv.DictReader(l for l in open(sys.argv[1]) if not l.startswith('#')):
    pts.setdefault(r['job'], {}).setdefault(float(r['cap_w']), []).append(
        (float(r['power_w']), float(r['throughput'])))
for g in csv.DictReader(open(sys.argv[2])):
    caps = {c: (sum(p for p, _ in v) / len(v), sum(t for _, t in v) / len(v))
            for c, v in pts[g['job']].items()}
    p0, t0 = caps[max(caps)]
    ks = [(1 - p / p0) / (1 - t / t0) for c, (p, t) in caps.items()
          if c != max(caps) and 1 - p / p0 >= 0.01 and 1 - t / t0 >= 0.005]
    want = sum(ks) / len(ks)
    assert abs(float(g['pfi']) - want) < 1e-6 * max(1, abs(want)), (g['job'], g['pfi'], want)
EOF2
fi
"$P" allocate --pfi "$T/a/pfi.csv" --reduce 0.2 --json > "$T/plan.json" 2> "$T/err" \
    || fail "allocate --pfi pfi.csv: $(cat "$T/err")"

# summary.json: every documented top-level and headline key.
if command -v python3 > /dev/null 2>&1; then
    python3 - "$T/a/summary.json" <<'EOF' || fail "summary.json keys"
import json, sys
d = json.load(open(sys.argv[1]))
for k in ["tool", "seed", "range", "repeats", "caps_w", "population", "counts", "pfi",
          "h100_vs_h200", "correlation", "calibration", "allocation", "files", "runtime_s"]:
    assert k in d, k
assert list(d)[-1] == "runtime_s"
for k in ["runs", "main", "validation", "h100_matched", "with_pfi", "without_pfi"]:
    assert isinstance(d["counts"][k], int), k
assert d["counts"]["runs"] >= 20
assert d["counts"]["h100_matched"] >= 1 and d["h100_vs_h200"]["pairs"] >= 1
p = d["pfi"]
for k in ["all", "by_arch", "by_task", "by_gpus", "by_family", "by_split"]:
    assert k in p, k
for k in ["n", "mean", "sd", "min", "q1", "median", "q3", "max"]:
    assert k in p["all"], k
assert set(p["by_arch"]) == {"dense", "moe"}
assert {"pretrain", "finetune_lora"} <= set(p["by_task"])
assert set(p["by_gpus"]) == {"1", "2", "4", "8", "16", "32"}
for k in ["pairs", "h200", "h100", "difference", "h100_more_flexible", "pearson"]:
    assert k in d["h100_vs_h200"], k
assert "pearson" in d["correlation"]["dram_active"]
assert d["calibration"]["status"] in ("done", "skipped")
assert d["allocation"]["status"] in ("done", "skipped")
# the grid day: pflex simulate's SRP day, or why it is left out
g = d["grid_day"]
if d["calibration"]["status"] == "done":
    assert g["day"] == "srp", g
    assert g["policies"]["oracle"]["lost_vs_oracle_pct_of_site"] == 0
    assert g["policies"]["oracle"]["gap_recovered"] in (1, None)
    for name, pol in g["policies"].items():
        assert pol["periods_above"] == 0, name
        assert "cpu_s" not in pol, name
else:
    assert g["day"] is None and g["note"], g
if d["allocation"]["status"] == "done":
    c = d["allocation"]["cuts"][0]
    for k in ["cut", "budget_w", "equal", "pfi", "optimal", "gap_recovered", "recovered_per_job",
              "progress"]:
        assert k in c, k
    assert c["equal"]["throughput"] <= c["optimal"]["throughput"] * (1 + 1e-9)
EOF
else
    for k in '"counts"' '"pfi"' '"by_arch"' '"h100_vs_h200"' '"calibration"' '"runtime_s"'; do
        grep -q "$k" "$T/a/summary.json" || fail "summary.json lacks $k"
    done
fi

# Charts when gnuplot exists; a note, and success, when it does not.
if command -v gnuplot > /dev/null 2>&1; then
    grep -q '<svg' "$T/a/report.html" || fail "report.html has no svg chart"
    grep -q 'Chart not drawn' "$T/a/report.html" && fail "a chart failed to draw"
fi
grep -q '<h2 id="brief">What this says</h2>' "$T/a/report.html" || fail "report.html: no 'What this says'"
# each number of the H100 transfer sentence its own (it printed "R² 6")
if grep -q 'groups: R² ' "$T/a/report.html"; then
    grep -q '(the study: R² 0.56)' "$T/a/report.html" || fail "report.html: the study's R² is wrong"
fi
grep -q '<script' "$T/a/report.html" && fail "report.html runs scripts"
grep -qE '(src|href)="https?:' "$T/a/report.html" && fail "report.html loads external assets"
"$P" study --out "$T/b" --jobs 20 --gnuplot "$T/no-such-gnuplot" > /dev/null 2> "$T/err" \
    || fail "study without gnuplot failed"
grep -q 'Chart not drawn' "$T/b/report.html" || fail "no note where charts would be"
grep -q '<svg' "$T/b/report.html" && fail "charts without gnuplot?"

# Same seed, same bytes (summary.json apart from runtime_s); threads do not matter.
cmp -s "$T/a/sweeps.csv" "$T/b/sweeps.csv" || fail "sweeps.csv differs between runs"
cmp -s "$T/a/pfi.csv" "$T/b/pfi.csv" || fail "pfi.csv differs between runs"
"$P" study --out "$T/c" --jobs 20 --threads 1 --no-charts > /dev/null 2>&1 || fail "--threads 1"
cmp -s "$T/a/sweeps.csv" "$T/c/sweeps.csv" || fail "sweeps.csv depends on threads"
grep -v '"runtime_s"' "$T/a/summary.json" > "$T/x"
grep -v '"runtime_s"' "$T/c/summary.json" > "$T/y"
cmp -s "$T/x" "$T/y" || fail "summary.json differs beyond runtime_s"
"$P" study --out "$T/d" --jobs 20 --seed 7 --no-charts > /dev/null 2>&1 || fail "--seed 7"
cmp -s "$T/a/sweeps.csv" "$T/d/sweeps.csv" && fail "another seed gave the same sweeps"

# --samples: the 5-s per-GPU trace; the sweep's power is the study's
# aggregate of it (mean of the top 10 % of training-phase samples, gpu_util
# >= 50 %, of the job's mean over its GPUs), recomputed here.
"$P" study --out "$T/s" --jobs 3 --no-charts --samples "$T/s/samples.csv" > /dev/null 2>&1 \
    || fail "--samples"
if command -v python3 > /dev/null 2>&1; then
    python3 - "$T/s/samples.csv" "$T/s/sweeps.csv" <<'EOF2' || fail "samples.csv does not aggregate to sweeps.csv"
import csv, math, sys
by = {}
for r in csv.DictReader(l for l in open(sys.argv[1]) if not l.startswith('#')):
    k = (r['job'], float(r['cap_w']), r['run'], r['t_s'])
    by.setdefault(k, []).append((float(r['power_w']), float(r['gpu_util']), r['phase']))
runs = {}
for (job, cap, run, t), v in by.items():
    util = sum(u for _, u, _ in v) / len(v)
    if util >= 50:
        runs.setdefault((job, cap), []).append(sum(p for p, _, _ in v) / len(v))
    assert len({ph for _, _, ph in v}) == 1
for r in csv.DictReader(l for l in open(sys.argv[2]) if not l.startswith('#')):
    v = sorted(runs[(r['job'], float(r['cap_w']))], reverse=True)
    k = math.ceil(0.10 * len(v))
    want = sum(v[:k]) / k
    assert abs(want - float(r['power_w'])) < 1e-3 * want, (r['job'], r['cap_w'], want, r['power_w'])
EOF2
fi

# --json prints the summary; bad usage exits 2 with nothing on stdout.
"$P" study --out "$T/e" --jobs 5 --no-charts --json > "$T/json" || fail "--json exit"
grep -q '"pfi"' "$T/json" || fail "--json prints no summary"
for args in "--caps foo" "--caps 900:800:50" "--repeats 0" "--repeats 2.5" "--jobs x" "--seed -1" "--bogus" "extra"; do
    # shellcheck disable=SC2086
    "$P" study --out "$T/f" $args > "$T/out" 2> "$T/err"; rc=$?
    [ $rc -eq 2 ] || fail "study $args: exit $rc, want 2"
    [ -s "$T/out" ] && fail "study $args: wrote to stdout"
done
exit 0
