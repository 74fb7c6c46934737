#!/bin/sh
# The controller's targets survive kill -9 at every step of a target's
# life: the real binary with --db is killed (SIGKILL, nothing flushed on
# the way out) right after each change and restarted on the same database;
# the targets it then holds (GET /v1/status: "targets", "target") are
# exactly those in force before:
#   put        an API target, killed as soon as the PUT is answered
#   in force   the same, after a few periods
#   withdrawn  DELETE /v1/target, killed as soon as it is answered (the
#              withdrawn target used to come back)
#   expired    an API target of 3 s, killed after its end
#   VTN-updated an OpenADR event changed at the VTN (SIGHUP), killed once
#              followed, restarted with the VTN stopped: the new version
#              alone, not the old one beside it
# One sim agent on loopback, `pflex vtn`.  Bounded: 90 s.
set -u
[ -n "${PFLEX_TEST_BOUNDED:-}" ] || PFLEX_TEST_BOUNDED=1 exec timeout 90 sh "$0" "$@"
tmp=$(mktemp -d)
trap 'stop_agents; rm -rf "$tmp"' EXIT
trap 'exit 1' TERM INT
. "$(dirname "$0")/lib/agent.sh"
command -v jq >/dev/null || { echo "skip: jq not installed"; exit 77; }

start_agent "$tmp/a.log" --backend sim --gpus 8 --token-file "$tmp/token" --interval 0.1 \
    --sim-job llama-8b-pretrain-h200 --hostname node-r --state-dir "$tmp/sa" || fail "agent"
aport=$port
printf 'vtn-secret-0123456789abcdef\n' >"$tmp/vtn.secret"
chmod 600 "$tmp/vtn.secret"
event() {  # event KW: one event in force, now for an hour
    printf '[{"id":"shed","programID":"p","intervalPeriod":{"start":"0001-01-01T00:00:00Z","duration":"PT1H"},"intervals":[{"id":0,"payloads":[{"type":"IMPORT_CAPACITY_LIMIT","values":[%s]}]}]}]\n' "$1"
}
event 4.5 >"$tmp/events.json"
"$PFLEX" vtn --events "$tmp/events.json" --client-id site-r --secret-file "$tmp/vtn.secret" \
    --port-file "$tmp/vtn.port" 2>"$tmp/vtn.log" &
vpid=$!
agents="$agents $vpid"
i=0
until [ -s "$tmp/vtn.port" ]; do [ $i -lt 200 ] || fail "pflex vtn did not start"; sleep 0.05; i=$((i + 1)); done
vport=$(cat "$tmp/vtn.port")

# start [VTN]: the controller on the database, with the VTN or without
cpid=""
start() {
    rm -f "$tmp/cport"
    if [ "${1:-}" = novtn ]; then vtn=""; else
        vtn="--vtn http://127.0.0.1:$vport --vtn-client-id site-r --vtn-secret-file $tmp/vtn.secret"; fi
    # shellcheck disable=SC2086
    "$PFLEX" controller run --agent "http://127.0.0.1:$aport" --token-file "$tmp/token" \
        --api-token-file "$tmp/token" --listen 127.0.0.1:0 --port-file "$tmp/cport" --period 0.3 --lease 2 \
        --db "$tmp/ctl.db" $vtn --log "$tmp/ctl.log" &
    cpid=$!
    agents="$agents $cpid"
    i=0
    until [ -s "$tmp/cport" ]; do [ $i -lt 200 ] || fail "the controller did not start"; sleep 0.05; i=$((i + 1)); done
    port=$(cat "$tmp/cport")
}
crash() { kill -KILL "$cpid"; wait "$cpid" 2>/dev/null; }
# targets: the targets the controller holds now, one line each, sorted
targets() {
    expect 200 GET /v1/status
    jq -r '.targets[] | "\(.source) \(.id) \(.value)"' "$tmp/body" | sort
}
# until_targets WANT: wait (5 s at most) until the targets are WANT
until_targets() {
    i=0
    while [ "$(targets)" != "$1" ]; do
        [ $i -lt 50 ] || fail "targets: '$(targets | tr '\n' ';')', expected '$(printf '%s' "$1" | tr '\n' ';')'"
        sleep 0.1; i=$((i + 1))
    done
}
# restart_expect WANT [novtn]: kill -9, restart, the targets at once are WANT
restart_expect() {
    crash
    start "${2:-}"
    got=$(targets)
    [ "$got" = "$1" ] || fail "$step: after kill -9 and a restart the targets are '$(echo "$got" | tr '\n' ';')', expected '$(printf '%s' "$1" | tr '\n' ';')'"
    echo "$step: resumed as it was"
}

start
vtn_t="openadr shed/0 4500"
until_targets "$vtn_t"

step=put
expect 200 PUT /v1/target '{"target": "5000W", "id": "op-1", "confirm": true}' "$TOKEN"
restart_expect "$(printf 'api op-1 5000\n%s' "$vtn_t")"

step="in force"
sleep 1
expect 200 GET /v1/status
jq -e '.target.id == "op-1" and .limit_w == 5000' "$tmp/body" >/dev/null \
    || fail "the API's target (priority 0, over the event's none) is not in force: $(jq -c .target "$tmp/body")"
restart_expect "$(printf 'api op-1 5000\n%s' "$vtn_t")"

step=withdrawn
expect 200 DELETE /v1/target "" "$TOKEN"
restart_expect "$vtn_t"

step=expired
expect 200 PUT /v1/target '{"target": "5100W,for=2s", "id": "op-2", "confirm": true}' "$TOKEN"
until_targets "$(printf 'api op-2 5100\n%s' "$vtn_t")"
sleep 2.5
restart_expect "$vtn_t"

step=VTN-updated
event 4.2 >"$tmp/events.json"
kill -HUP $vpid
until_targets "openadr shed/0 4200"
kill -TERM $vpid; wait $vpid
restart_expect "openadr shed/0 4200" novtn
expect 200 GET /v1/status
jq -e '.target.id == "shed/0" and .target.value == 4200' "$tmp/body" >/dev/null \
    || fail "the updated event is not in force after the restart: $(jq -c .target "$tmp/body")"
grep -q "resumed 1 targets" "$tmp/ctl.log" || fail "the last restart did not say what it resumed"
kill -TERM "$cpid"; wait "$cpid" || fail "controller exit $?"
echo "ok: kill -9 at put, in force, withdrawn, expired and VTN-updated: each restart resumed the targets in force"
