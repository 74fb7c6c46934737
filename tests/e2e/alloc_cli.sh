#!/bin/sh
# pflex allocate and pflex evaluate end to end: outputs and their fields,
# the budget kept, infeasible plans (exit 3, still printed), a PFI file
# alone, a jobs file, and bad input (exit 2, file:line, nothing on stdout).
set -u
P=${PFLEX:-build/pflex}
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

cat > "$T/s.csv" <<'CSV'
# two jobs: a is flexible and holds Flex 1; b is not
job,cap_w,power_w,throughput,gpus,tier
a,400,400,100,8,flex1
a,300,300,95,8,flex1
a,200,200,70,8,flex1
b,400,400,100,4,
b,300,300,80,4,
b,200,200,50,4,
CSV

# top-level number of a JSON key (first occurrence)
num() { awk -v k="\"$1\":" '$1 == k { gsub(/,/, "", $2); print $2; exit }' "$2"; }
# awk test: a <= b
le() { awk -v a="$1" -v b="$2" 'BEGIN { exit !(a <= b) }'; }

for cmd in allocate evaluate; do
    "$P" $cmd --help | grep -q "usage: pflex $cmd" || fail "$cmd --help"
done

for pol in equal pfi optimal; do
    "$P" allocate "$T/s.csv" --reduce 0.2 --policy $pol --json > "$T/$pol.json" \
        || fail "$pol exit $?"
    for k in policy baseline_w budget_w power_w throughput feasible gap_bound jobs job gpus \
             baseline_power_w cap_w reduction fraction; do
        grep -q "\"$k\":" "$T/$pol.json" || fail "$pol json lacks $k"
    done
    grep -q "\"policy\": \"$pol\"" "$T/$pol.json" || fail "$pol policy name"
    grep -q '"feasible": true' "$T/$pol.json" || fail "$pol feasible"
    le "$(num power_w "$T/$pol.json")" "$(num budget_w "$T/$pol.json")" || fail "$pol over budget"
    [ "$(num budget_w "$T/$pol.json")" = 3840.0 ] || fail "$pol budget $(num budget_w "$T/$pol.json")"
done
# optimal: a takes the whole cut (x=.3, floor .9 exactly), b keeps its cap
"$P" allocate "$T/s.csv" --reduce 0.2 --csv > "$T/opt.csv" || fail "csv exit"
head -1 "$T/opt.csv" | grep -q '^job,gpus,baseline_power_w,power_w,cap_w,reduction,throughput,fraction' \
    || fail "csv header"
grep -q '^a,8,400,280,280,0.3,90,0.9,' "$T/opt.csv" || fail "optimal a: $(grep ^a, "$T/opt.csv")"
# (b may take a reduction of a few 1e-16 so that rounding never tips the
# plan over the budget; its cap stays 400 W)
awk -F, '$1 == "b" { exit !($5 == 400 && $6 < 1e-12 && $8 > 0.999999999) }' "$T/opt.csv" \
    || fail "optimal b: $(grep ^b, "$T/opt.csv")"
# --budget-w, stdin, table
"$P" allocate --budget-w 4000 < "$T/s.csv" > "$T/table" || fail "stdin exit"
grep -q '^policy optimal' "$T/table" || fail "table footer"

# infeasible: 60% cut, a may shed only .3 and b .5 -> exit 3, JSON still out
"$P" allocate "$T/s.csv" --reduce 0.6 --json > "$T/inf.json" 2> "$T/err"; rc=$?
[ $rc -eq 3 ] || fail "infeasible exit $rc"
grep -q '"feasible": false' "$T/inf.json" || fail "infeasible json"
[ "$(num power_w "$T/inf.json")" = 3040.0 ] || fail "least power $(num power_w "$T/inf.json")"
grep -q infeasible "$T/err" || fail "infeasible message"

# --floor applies to jobs without one: b at .9 cannot shed to .5
"$P" allocate "$T/s.csv" --reduce 0.3 --floor 0.9 --json > /dev/null 2>&1; rc=$?
[ $rc -eq 3 ] || fail "--floor 0.9 exit $rc"

# evaluate
"$P" evaluate "$T/s.csv" --reduce 0.2 --json > "$T/ev.json" || fail "evaluate exit"
for k in reduce budget_w policies equal pfi optimal throughput power_w sla_violations \
         gap_recovered per_job_recovered; do
    grep -q "\"$k\":" "$T/ev.json" || fail "evaluate json lacks $k"
done
"$P" evaluate "$T/s.csv" --reduce 0.2 | grep -q 'gap recovered' || fail "evaluate table"

# PFI file alone, and beside the sweep
# (as `pflex pfi --csv` writes it: the study's ratio PFI of each job)
cat > "$T/pfi.csv" <<'CSV'
job,gpus,power_w,throughput,pfi,metric,grid,range,floor,gpu,cap_w,points_used,points_dropped,shed_flex1,shed_flex2,shed_flex3
a,8,400,100,3.333333333,ratio,200/300/400,,0.9,,400,2,0,0.3,0.42,0.5
b,4,400,100,1.125,ratio,200/300/400,,,,400,2,0,0.0625,0.3125,0.5
CSV
"$P" allocate --pfi "$T/pfi.csv" --reduce 0.2 --json > "$T/p.json" || fail "pfi-only exit"
grep -q '"policy": "pfi-weighted"' "$T/p.json" || fail "pfi-only default policy"
"$P" allocate --pfi "$T/pfi.csv" --reduce 0.2 --policy optimal > /dev/null 2>&1
[ $? -eq 2 ] || fail "optimal without curves must exit 2"
"$P" evaluate "$T/s.csv" --pfi "$T/pfi.csv" --reduce 0.2 > /dev/null || fail "evaluate --pfi"

# jobs file: two jobs on curve a, one on b
printf 'job,curve,gpus,tier\nx,a,16,flex2\ny,a,8,\nz,b,2,flex3\n' > "$T/jobs.csv"
"$P" allocate "$T/s.csv" --jobs "$T/jobs.csv" --reduce 0.25 --csv > "$T/j.csv" || fail "jobs exit"
[ "$(wc -l < "$T/j.csv")" -eq 4 ] || fail "jobs rows"
grep -q '^x,16,' "$T/j.csv" || fail "jobs x"

bad() { # name, expected message part, args...
    name=$1; msg=$2; shift 2
    "$P" "$@" > "$T/out" 2> "$T/err"; rc=$?
    [ $rc -eq 2 ] || fail "$name: exit $rc, want 2"
    [ -s "$T/out" ] && fail "$name: wrote to stdout"
    grep -qF -- "$msg" "$T/err" || fail "$name: stderr '$(cat "$T/err")' lacks '$msg'"
}
printf 'job,cap_w,power_w,throughput\nj,400,390,1\nj,300,oops,1\n' > "$T/bad.csv"
bad badnum "bad.csv:3: column 'power_w'" allocate "$T/bad.csv" --reduce 0.1
bad badnum-ev "bad.csv:3: column 'power_w'" evaluate "$T/bad.csv" --reduce 0.1
printf 'job,gpus,power_w,throughput,pfi\na,1,300,1,x\n' > "$T/badpfi.csv"
bad badpfi "badpfi.csv:2: column 'pfi'" allocate --pfi "$T/badpfi.csv" --reduce 0.1
printf 'job,curve,gpus\nx,nope,4\n' > "$T/badjobs.csv"
bad badjobs "badjobs.csv:2: column 'curve': 'nope'" allocate "$T/s.csv" --jobs "$T/badjobs.csv" --reduce 0.1
printf 'job,curve,gpus\nx,a,0\n' > "$T/badgpus.csv"
bad badgpus "badgpus.csv:2: column 'gpus'" allocate "$T/s.csv" --jobs "$T/badgpus.csv" --reduce 0.1
bad nobudget "exactly one of" allocate "$T/s.csv"
bad both "exactly one of" allocate "$T/s.csv" --reduce 0.1 --budget-w 10
bad reduce "--reduce" allocate "$T/s.csv" --reduce 1.5
bad policy "--policy" allocate "$T/s.csv" --reduce 0.1 --policy best
bad objective "--objective" allocate "$T/s.csv" --reduce 0.1 --objective speed
bad missing "nonexistent.csv" allocate "$T/nonexistent.csv" --reduce 0.1
printf 'job,gpus,power_w,throughput,pfi\na,8,400,100,0.7\n' > "$T/onlya.csv"
bad nopfirow "onlya.csv: no row for job 'b'" evaluate "$T/s.csv" --pfi "$T/onlya.csv" --reduce 0.1
# a jobs file names each job once
printf 'job,curve,gpus\nx,a,8\ny,b,4\nz,a,2\ny,a,1\nx,b,1\n' > "$T/dupjobs.csv"
bad dupjobs "dupjobs.csv:5: job 'y' already on line 3" allocate "$T/s.csv" --jobs "$T/dupjobs.csv" --reduce 0.1
bad dupjobs-eval "dupjobs.csv:5: job 'y' already on line 3" evaluate "$T/s.csv" --jobs "$T/dupjobs.csv" --reduce 0.1

# the jobs file and the PFI CSV: a misspelt column is a warning naming the
# column meant, a column given twice an error
printf 'job,curve,gpus,flor\nx,a,8,0.9\n' > "$T/jflor.csv"
"$P" allocate "$T/s.csv" --jobs "$T/jflor.csv" --reduce 0.1 > "$T/out" 2> "$T/err" || fail "jobs flor: exit $?"
grep -qF "pflex allocate: warning: $T/jflor.csv:1: column 'flor' is not a jobs-file column and is ignored: did you mean 'floor'?" "$T/err" \
    || fail "jobs flor: $(cat "$T/err")"
[ -s "$T/out" ] || fail "jobs flor: no plan"
printf 'job,gpus,power_w,throughput,pfi,wieght\na,8,400,100,1.5,2\nb,4,400,100,1.2,1\n' > "$T/pwt.csv"
"$P" evaluate "$T/s.csv" --pfi "$T/pwt.csv" --reduce 0.1 > "$T/out" 2> "$T/err" || fail "pfi wieght: exit $?"
[ "$(grep -c "warning: $T/pwt.csv:1: column 'wieght' is not a PFI CSV column and is ignored: did you mean 'weight'?" "$T/err")" -eq 1 ] \
    || fail "pfi wieght (once): $(cat "$T/err")"
printf 'job,curve,gpus,floor,floor\nx,a,8,0.9,0.5\n' > "$T/j2.csv"
bad jobs-twice "j2.csv:1: column 'floor' appears twice in the header (fields 4 and 5)" allocate "$T/s.csv" --jobs "$T/j2.csv" --reduce 0.1
printf 'job,gpus,power_w,throughput,pfi,gpus\na,8,400,100,1.5,4\n' > "$T/p2.csv"
bad pfi-twice "p2.csv:1: column 'gpus' appears twice in the header (fields 2 and 6)" allocate --pfi "$T/p2.csv" --reduce 0.1
# pfi --csv, read back, warns of nothing
"$P" pfi --csv --all-metrics "$T/s.csv" > "$T/pall.csv" || fail "pfi --csv --all-metrics"
"$P" allocate "$T/s.csv" --pfi "$T/pall.csv" --reduce 0.1 > /dev/null 2> "$T/err" || fail "pfi csv back: exit $?"
[ -s "$T/err" ] && fail "pfi csv back: $(cat "$T/err")"

# a misspelt sweep column: the warning pflex pfi gives, from allocate and
# evaluate too (once each), with or without a jobs file; the plan is made
sed '2s/tier$/flor/' "$T/s.csv" > "$T/flor.csv"
"$P" pfi "$T/flor.csv" > /dev/null 2> "$T/pfi.err" || fail "pfi flor"
grep -q "did you mean 'floor'?" "$T/pfi.err" || fail "pfi flor: $(cat "$T/pfi.err")"
printf 'job,curve,gpus\nx,a,8\n' > "$T/onejob.csv"
for args in "allocate" "evaluate" "allocate --jobs $T/onejob.csv" "evaluate --jobs $T/onejob.csv"; do
    cmd=${args%% *}
    "$P" $args "$T/flor.csv" --reduce 0.1 > "$T/out" 2> "$T/err" || fail "$args flor: exit $?"
    [ -s "$T/out" ] || fail "$args flor: no plan"
    sed "s/^pflex pfi: /pflex $cmd: /" "$T/pfi.err" | cmp -s - "$T/err" \
        || fail "$args flor: stderr '$(cat "$T/err")', want pfi's '$(cat "$T/pfi.err")'"
done
echo ok
