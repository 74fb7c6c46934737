#!/bin/sh
# pflex agent --backend sim on loopback: leases that expire, auth, range
# checks, bad requests, slow clients, rate limits, a GPU failing mid-run,
# two agents on one node, signals and a restart after SIGKILL, /metrics
# through promtool, job throughput that follows the caps.
set -u
# Bounded: the whole test runs under timeout(1), its agents as its children.
[ -n "${PFLEX_TEST_BOUNDED:-}" ] || PFLEX_TEST_BOUNDED=1 exec timeout 240 sh "$0" "$@"
tmp=$(mktemp -d)
trap 'stop_agents; rm -rf "$tmp"' EXIT
trap 'exit 1' TERM INT
. "$(dirname "$0")/lib/agent.sh"
state="$tmp/run"
sim="--backend sim --gpus 8 --state-dir $state --token-file $tmp/token --interval 0.1 --throughput-window 0.5"

start_agent "$tmp/a.log" $sim || fail "the agent did not start"
grep -q "listening on 127.0.0.1:0 (port $port, HTTP)" "$tmp/a.log" || fail "the port is not logged"

# /metrics: dcgm-exporter names and labels, promtool-clean.
curl -s -m 10 "http://127.0.0.1:$port/metrics" >"$tmp/m" || fail "GET /metrics"
grep -q '^DCGM_FI_DEV_POWER_USAGE{gpu="0",UUID="SIM-GPU-0",device="nvidia0",modelName="NVIDIA H200-SXM-141GB (simulated)",Hostname="' "$tmp/m" \
    || fail "no DCGM_FI_DEV_POWER_USAGE with dcgm-exporter's labels"
for m in DCGM_FI_DEV_POWER_MGMT_LIMIT DCGM_FI_DEV_ENFORCED_POWER_LIMIT DCGM_FI_DEV_SM_CLOCK \
         DCGM_FI_DEV_GPU_UTIL DCGM_FI_PROF_DRAM_ACTIVE pflex_lease_active pflex_gpu_limit_min_watts \
         pflex_gpu_errors_total; do
    grep -q "^$m{" "$tmp/m" || fail "/metrics lacks $m"
done
grep -q "^# TYPE pflex_job_throughput gauge" "$tmp/m" || fail "/metrics lacks pflex_job_throughput"
promtool_ok "$tmp/m" || fail "promtool check metrics rejects /metrics"
stop_agents
start_agent "$tmp/a.log" $sim --label-style prometheus || fail "the agent did not restart"
curl -s -m 10 "http://127.0.0.1:$port/metrics" >"$tmp/m2"
promtool check metrics <"$tmp/m2" || fail "promtool finds problems with --label-style prometheus"

# Auth: missing or wrong token: 401, nothing changed.
cap='{"caps": [{"gpu": 0, "cap_w": 450}], "lease_s": 60}'
expect 401 PUT /v1/caps "$cap"
expect 401 PUT /v1/caps "$cap" wrong-token-0123456789abcdef
expect 401 PUT /v1/caps "$cap" "${TOKEN}x"
expect 401 DELETE /v1/caps
[ "$(metric DCGM_FI_DEV_POWER_MGMT_LIMIT 0)" = 700 ] || fail "a refused request changed GPU 0"
[ "$(metric pflex_auth_failures_total)" = 4 ] || fail "auth failures not counted"
# RFC 7235: the scheme is case-insensitive, "bearer" is "Bearer".
code=$(curl -s -m 10 -o "$tmp/body" -w '%{http_code}' -X PUT -H "Authorization: bearer $TOKEN" \
    --data-binary '{"caps": [{"gpu": 5, "cap_w": 455}], "lease_s": 60}' "http://127.0.0.1:$port/v1/caps")
[ "$code" = 200 ] || fail "'Authorization: bearer TOKEN' (lower case): HTTP $code: $(cat "$tmp/body")"
[ "$(metric DCGM_FI_DEV_POWER_MGMT_LIMIT 5)" = 455 ] || fail "the lower-case bearer's cap is not set"
expect 200 DELETE '/v1/caps?gpu=5' "" "$TOKEN"

# A cap outside the range: 400 naming the range, nothing changed.
expect 400 PUT /v1/caps '{"caps": [{"gpu": 1, "cap_w": 450}, {"gpu": 0, "cap_w": 800}], "lease_s": 60}' "$TOKEN"
grep -q 'GPU 0: cap 800 W is outside the allowed range 200-700 W' "$tmp/body" || fail "range not named: $(cat "$tmp/body")"
expect 400 PUT /v1/caps '{"caps": [{"gpu": 0, "cap_w": 150}], "lease_s": 60}' "$TOKEN"
[ "$(metric DCGM_FI_DEV_POWER_MGMT_LIMIT 1)" = 700 ] || fail "a refused request changed GPU 1"
# Without a lease, or beyond the longest: refused too.
expect 400 PUT /v1/caps '{"caps": [{"gpu": 0, "cap_w": 450}]}' "$TOKEN"
expect 400 PUT /v1/caps '{"caps": [{"gpu": 0, "cap_w": 450}], "lease_s": 1e9}' "$TOKEN"
expect 400 PUT /v1/caps '{"caps": [{"gpu": 9, "cap_w": 450}], "lease_s": 5}' "$TOKEN"

# Malformed JSON, oversized body, unknown paths: 4xx, and the agent serves on.
expect 400 PUT /v1/caps '{"caps": [' "$TOKEN"
grep -q 'body:1:' "$tmp/body" || fail "malformed JSON: no position in $(cat "$tmp/body")"
expect 400 PUT /v1/caps '[1, 2]' "$TOKEN"
head -c 200000 /dev/zero | tr '\0' ' ' >"$tmp/big"
code=$(curl -s -m 10 -o "$tmp/body" -w '%{http_code}' -X PUT -H "Authorization: Bearer $TOKEN" \
    --data-binary @"$tmp/big" "http://127.0.0.1:$port/v1/caps")
[ "$code" = 413 ] || fail "oversized body: HTTP $code, expected 413"
expect 404 GET /v1/nothing
expect 405 POST /metrics '{}' "$TOKEN"
expect 200 GET /v1/status

# A slow client (headers, then silence) is cut off after --client-timeout
# and others are served meanwhile.
stop_agents
start_agent "$tmp/a.log" $sim --client-timeout 4 || fail "the agent did not restart"
command -v bash >/dev/null || fail "bash (for a raw TCP client) is missing"
timeout 12 bash -c 'exec 3<>/dev/tcp/127.0.0.1/$0
    printf "PUT /v1/caps HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{" >&3
    cat <&3' "$port" >"$tmp/slow.out" 2>&1 &
slow=$!
sleep 0.2
t0=$(date +%s%N)
expect 200 GET /v1/status
t1=$(date +%s%N)
# (held up, it would wait for the 4 s timeout)
[ $(( (t1 - t0) / 1000000 )) -lt 2500 ] || fail "a slow client held up others ($(( (t1 - t0) / 1000000 )) ms)"
# The stalled connection is closed after the timeout, long before the
# client would have given up.
t0=$(date +%s)
wait $slow 2>/dev/null
t1=$(date +%s)
[ $((t1 - t0)) -lt 9 ] || fail "the stalled connection was not closed ($((t1 - t0)) s)"
expect 200 GET /v1/status

# A lease expires: the GPU returns to its original limit.
expect 200 PUT /v1/caps '{"caps": [{"gpu": 0, "cap_w": 450}, {"gpu": "SIM-GPU-3", "cap_w": 300, "lease_s": 30}], "lease_s": 1}' "$TOKEN"
grep -q '"enforced_w": 450.0' "$tmp/body" || fail "the answer lacks the enforced limit: $(cat "$tmp/body")"
[ "$(metric DCGM_FI_DEV_POWER_MGMT_LIMIT 0)" = 450 ] || fail "GPU 0 not at 450 W"
[ "$(metric DCGM_FI_DEV_ENFORCED_POWER_LIMIT 3)" = 300 ] || fail "GPU 3 not at 300 W"
[ "$(metric pflex_lease_active 0)" = 1 ] || fail "no lease on GPU 0"
wait_metric DCGM_FI_DEV_POWER_MGMT_LIMIT 0 700 5
[ "$(metric pflex_lease_expired_total 0)" = 1 ] || fail "the expiry is not counted"
[ "$(metric DCGM_FI_DEV_POWER_MGMT_LIMIT 3)" = 300 ] || fail "GPU 3's longer lease ended early"
grep -q 'GPU 0: back to its original 700 W (the 1 s lease on 450 W expired)' "$tmp/a.log" || fail "expiry not logged"
# DELETE restores now.
expect 200 DELETE /v1/caps "" "$TOKEN"
[ "$(metric DCGM_FI_DEV_POWER_MGMT_LIMIT 3)" = 700 ] || fail "DELETE did not restore GPU 3"

# Jobs: the sim job reports progress; its throughput falls with a cap on
# its GPUs, as the sim model says (pflex sweep --backend sim measures the
# same job independently).
job=llama-8b-pretrain-h200
sleep 1
t_full=$(metric pflex_job_throughput | head -1)
[ -n "$t_full" ] || fail "no job throughput"
expect 200 PUT /v1/caps "{\"caps\": [{\"job\": \"$job\", \"cap_w\": 300}], \"lease_s\": 60}" "$TOKEN"
sleep 1.5
expect 200 PUT /v1/jobs/probe '{"gpus": [0, 1]}' "$TOKEN"
t_cap=$(curl -s "http://127.0.0.1:$port/v1/jobs/$job" | sed 's/.*"throughput": \([0-9.e+]*\).*/\1/')
"$PFLEX" sweep --backend sim --job "$job" --caps 700,300 --seed 1 >"$tmp/sweep.csv" 2>/dev/null \
    || fail "pflex sweep --backend sim failed"
awk -F, -v full="$t_full" -v capd="$t_cap" 'NR > 1 { s[$4] += $6; n[$4]++ }
    END { r = (s[300] / n[300]) / (s[700] / n[700]); m = capd / full
          if (!(m < 0.98) || m < r - 0.08 || m > r + 0.08) { print "agent ratio " m ", sweep ratio " r; exit 1 } }' \
    "$tmp/sweep.csv" || fail "the job's throughput under the cap does not follow the sim model"
# Progress from a job: throughput derived from the reports.
expect 404 POST /v1/jobs/nobody/progress '{"tokens_total": 1}' "$TOKEN"
expect 401 POST /v1/jobs/probe/progress '{"tokens_total": 1000}'
expect 200 POST /v1/jobs/probe/progress '{"tokens_total": 1000}' "$TOKEN"
sleep 0.5
expect 200 POST /v1/jobs/probe/progress '{"tokens": 500}' "$TOKEN"
grep -q '"tokens_total": 1500.0' "$tmp/body" || fail "tokens not added: $(cat "$tmp/body")"
tp=$(sed 's/.*"throughput": \([0-9.e+]*\).*/\1/' "$tmp/body")
awk -v t="$tp" 'BEGIN { exit !(t > 500 && t < 1100) }' || fail "progress throughput $tp, expected about 1000/s"
expect 400 POST /v1/jobs/probe/progress '{"tokens": -5}' "$TOKEN"
expect 400 PUT /v1/jobs/bad '{"gpus": [42]}' "$TOKEN"

# Rate limit: writes beyond --write-rate get 429 with Retry-After.
stop_agents
start_agent "$tmp/a.log" $sim --write-rate 0.2 || fail "the agent did not restart"
n429=0
for i in 1 2 3 4 5 6; do
    [ "$(http DELETE /v1/caps "" "$TOKEN")" = 429 ] && n429=$((n429 + 1))
done
[ $n429 -ge 3 ] || fail "no rate limit: $n429 of 6 quick writes refused"
expect 200 GET /v1/status

# A second agent on the same GPUs: refused, naming the first's pid.
first=$apid
"$PFLEX" agent $sim --listen 127.0.0.1:0 2>"$tmp/second.log" &
second=$!
i=0
while kill -0 $second 2>/dev/null; do
    [ $i -lt 200 ] || { kill -KILL $second; fail "the second agent did not refuse"; }
    sleep 0.05; i=$((i + 1))
done
wait $second
rc=$?
[ $rc -eq 1 ] || fail "the second agent: exit $rc, expected 1"
grep -q "held by another pflex process (pflex agent, pid $first" "$tmp/second.log" || fail "the refusal does not name pid $first"

stop_agents

# SIGPIPE is ignored, SIGTERM restores and exits 0.
start_agent "$tmp/a.log" $sim || fail "the agent did not restart"
expect 200 PUT /v1/caps '{"caps": [{"gpu": 2, "cap_w": 400}], "lease_s": 60}' "$TOKEN"
kill -PIPE $apid
sleep 0.2
expect 200 GET /v1/status
kill -TERM $apid
wait $apid
rc=$?
[ $rc -eq 0 ] || fail "SIGTERM: exit $rc"
grep -q 'GPU 2: back to its original 700 W (the agent stops)' "$tmp/a.log" || fail "SIGTERM: no restore logged"
[ -z "$(ls "$state"/*.state 2>/dev/null)" ] || fail "SIGTERM: a state file is left"

# SIGKILL with a cap set: the next start restores from the state file.
start_agent "$tmp/a.log" $sim || fail "the agent did not restart"
expect 200 PUT /v1/caps '{"caps": [{"gpu": 5, "cap_w": 350}], "lease_s": 60}' "$TOKEN"
kill -KILL $apid
wait $apid 2>/dev/null
[ -n "$(ls "$state"/*.state 2>/dev/null)" ] || fail "no state file after SIGKILL"
start_agent "$tmp/a.log" $sim || fail "the agent did not restart after SIGKILL"
grep -q 'GPU 5 (sim-5): pflex agent (pid [0-9]*) ended without restoring the power limit' "$tmp/a.log" \
    || fail "the recovery is not reported"
[ -z "$(ls "$state"/*.state 2>/dev/null)" ] || fail "the state file outlived the recovery"
stop_agents

# A job map from a file; --auth-reads; SIGHUP rereads the token and the map.
printf '{"jobs": {"from-file": [1, "SIM-GPU-2"]}}\n' >"$tmp/jobs.json"
start_agent "$tmp/a.log" $sim --job-map "$tmp/jobs.json" --auth-reads --json || fail "the agent did not start"
expect 401 GET /v1/status
expect 401 GET /metrics
expect 200 GET /v1/jobs/from-file "" "$TOKEN"
grep -q '"gpus": \[1, 2\]' "$tmp/body" || fail "the job map file: $(cat "$tmp/body")"
grep -q '^{"time":"[0-9T:.-]*Z","msg":"sim backend' "$tmp/a.log" || fail "--json logs are not JSON lines"
new=new-token-0123456789abcdefgh
printf '%s\n' "$new" >"$tmp/token"
printf '{"jobs": {"added": [7]}}\n' >"$tmp/jobs.json"
kill -HUP $apid
i=0
until grep -q 'token file and job map reloaded' "$tmp/a.log"; do
    [ $i -lt 100 ] || fail "SIGHUP: no reload"
    sleep 0.05; i=$((i + 1))
done
expect 401 GET /v1/status "" "$TOKEN"
expect 200 GET /v1/jobs/added "" "$new"
# A token file others can read is refused at reload (the old token stays).
printf '%s\n' "$TOKEN" >"$tmp/token"
chmod 644 "$tmp/token"
kill -HUP $apid
i=0
until grep -q 'reload failed.*mode 0644' "$tmp/a.log"; do
    [ $i -lt 100 ] || fail "SIGHUP: a mode-0644 token file was not refused"
    sleep 0.05; i=$((i + 1))
done
expect 200 GET /v1/status "" "$new"
stop_agents
# ... and at start.
"$PFLEX" agent $sim --listen 127.0.0.1:0 2>"$tmp/err.log"
[ $? -eq 2 ] && grep -q 'mode 0644 lets others read it; chmod 600 it' "$tmp/err.log" || fail "a mode-0644 token file at start"
chmod 600 "$tmp/token"

# A GPU that fails mid-run is reported; the others keep working.
start_agent "$tmp/a.log" $sim --sim-fail 3@0.5 || fail "the agent did not start"
wait_metric pflex_gpu_up 3 0 5
[ "$(metric pflex_gpu_up 2)" = 1 ] || fail "GPU 2 reported down too"
expect 200 GET /v1/status
grep -q '"gpu": 3, "uuid": "SIM-GPU-3", "name": "[^"]*", "ok": false, "error": "sim: GPU 3 is lost' "$tmp/body" \
    || fail "status does not report GPU 3's failure"
expect 400 PUT /v1/caps '{"caps": [{"gpu": 3, "cap_w": 400}], "lease_s": 5}' "$TOKEN"
grep -q 'GPU 3 is failing' "$tmp/body" || fail "no failing message: $(cat "$tmp/body")"
expect 200 PUT /v1/caps '{"caps": [{"gpu": 2, "cap_w": 400}], "lease_s": 5}' "$TOKEN"
[ "$(metric DCGM_FI_DEV_POWER_MGMT_LIMIT 2)" = 400 ] || fail "GPU 2 does not take a cap after GPU 3 failed"
kill -TERM $apid; wait $apid
echo ok
