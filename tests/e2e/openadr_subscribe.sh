#!/bin/sh
# OpenADR 3 subscriptions, end to end on loopback: `pflex vtn` and `pflex
# controller run` (a simulated agent, the API over HTTPS).  The controller
# subscribes with a callback to its API; an event created, changed or
# withdrawn on the VTN is in force at the controller within 0.5 s though
# it polls only every minute.  Hostile callbacks (no or a wrong token,
# malformed, oversized, replayed, stale) are refused (4xx), logged, and
# change nothing.  With the subscription broken (the VTN restarted, its
# subscriptions lost) and polling every 5 s, an event is in force within
# one poll, and the controller subscribes again; a callback of the version
# that poll brought is a duplicate (200, nothing done), sent again a
# replay (409).  Prints the latencies:
# from the SIGHUP that makes the VTN reread its events to the
# controller's log line of the callback applied (in force), or for a poll
# to the poll's start (the target's start: the poll's "now"), and, apart,
# when the test's own GET /v1/status first showed it (that adds the test's
# polling, slow on a loaded machine, and is only bounded loosely).
set -u
[ -n "${PFLEX_TEST_BOUNDED:-}" ] || PFLEX_TEST_BOUNDED=1 exec timeout 100 sh "$0" "$@"
command -v openssl >/dev/null || { echo "skip: openssl not installed (it makes the API's certificate)"; exit 77; }
command -v jq >/dev/null || { echo "skip: jq not installed"; exit 77; }
command -v curl >/dev/null || { echo "skip: curl not installed"; exit 77; }
here=$(cd "$(dirname "$0")" && pwd)
PFLEX=${PFLEX:-$here/../../build/pflex}
tmp=$(mktemp -d)
trap 'stop_agents; [ -n "${PFLEX_E2E_KEEP:-}" ] && cp -r "$tmp" "$PFLEX_E2E_KEEP"; rm -rf "$tmp"' EXIT
trap 'exit 1' TERM INT
. "$here/lib/agent.sh"

openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 1 -subj "/CN=localhost" \
    -addext "subjectAltName=IP:127.0.0.1,DNS:localhost" -keyout "$tmp/c.key" -out "$tmp/c.crt" \
    2>"$tmp/openssl.out" || fail "openssl: $(cat "$tmp/openssl.out")"
chmod 600 "$tmp/c.key"
printf 'vtn-secret-0123456789abcdef\n' >"$tmp/vtn.secret"
CBTOKEN=callback-token-0123456789abcdef
printf '%s\n' "$CBTOKEN" >"$tmp/cb.token"
chmod 600 "$tmp/vtn.secret" "$tmp/cb.token"

# events FILE: the events given as "ID:KW" words, each in force now for 10 min
events() {
    printf '[' >"$tmp/events.json.tmp"
    sep=
    for e in "$@"; do
        printf '%s{"id":"%s","programID":"p1","intervalPeriod":{"start":"0001-01-01T00:00:00Z","duration":"PT10M"},"intervals":[{"id":0,"payloads":[{"type":"IMPORT_CAPACITY_LIMIT","values":[%s]}]}]}' \
            "$sep" "${e%%:*}" "${e##*:}" >>"$tmp/events.json.tmp"
        sep=,
    done
    printf ']\n' >>"$tmp/events.json.tmp"
    mv "$tmp/events.json.tmp" "$tmp/events.json"
}
ns() { date +%s%N; }
ms_of() { awk -v s="$1" -v t="$2" 'BEGIN { printf "%d", s * 1000 - t / 1000000 }'; }
# took ID: ms from $t0 to the instant the controller took event ID in, by
# the status that showed it first (a later poll takes a "now" event anew)
took() { ms_of "$(jq -r ".targets[] | select(.id == \"$1/0\") | .start" "$tmp/st.json")" "$t0"; }
# logged PATTERN LOG: ms from $t0 to the controller's first log line matching
logged() {
    when=$(grep -m1 "$1" "$2" | cut -c1-23)
    [ -n "$when" ] || fail "no log line '$1'"
    ms_of "$(date -u -d "${when}Z" +%s.%N)" "$t0"
}
start_vtn() {
    rm -f "$tmp/vtn.port"
    "$PFLEX" vtn --events "$tmp/events.json" --client-id site-s --secret-file "$tmp/vtn.secret" \
        --port-file "$tmp/vtn.port" --callback-ca "$tmp/c.crt" "$@" 2>>"$tmp/vtn.log" &
    vpid=$!
    agents="$agents $vpid"
    i=0
    until [ -s "$tmp/vtn.port" ]; do
        kill -0 $vpid 2>/dev/null || fail "pflex vtn did not start"
        [ $i -lt 500 ] || fail "pflex vtn wrote no port"; sleep 0.01; i=$((i + 1))
    done
    vport=$(cat "$tmp/vtn.port")
}
# start_ctl LOG EVERY: a controller polling every EVERY periods of 0.2 s
start_ctl() {
    rm -f "$tmp/c.port"
    "$PFLEX" controller run --agent "http://127.0.0.1:$port" --token-file "$tmp/token" --period 0.2 \
        --explore 0 --listen 127.0.0.1:0 --port-file "$tmp/c.port" --tls-cert "$tmp/c.crt" \
        --tls-key "$tmp/c.key" --vtn "http://127.0.0.1:$vport" --vtn-client-id site-s \
        --vtn-secret-file "$tmp/vtn.secret" --vtn-every "$2" --ven-name site-s \
        --vtn-callback "https://127.0.0.1:0/v1/openadr/notify" --vtn-callback-token-file "$tmp/cb.token" \
        --log "$1" &
    cpid=$!
    agents="$agents $cpid"
    i=0
    until grep -q 'vtn: subscribed' "$1" 2>/dev/null; do
        kill -0 $cpid 2>/dev/null || fail "the controller did not start"
        [ $i -lt 1000 ] || fail "the controller did not subscribe"; sleep 0.01; i=$((i + 1))
    done
    cport=$(cat "$tmp/c.port")
}
status() { curl -s -m 5 --cacert "$tmp/c.crt" "https://127.0.0.1:$cport/v1/status"; }
# until_status JQ LIMIT_S: ms from $t0 until the status answers JQ true
# (that status in $tmp/st.json); fails past LIMIT_S
until_status() {
    while :; do
        status >"$tmp/st.json"
        jq -e "$1" "$tmp/st.json" >/dev/null 2>&1 && break
        [ $(( ($(ns) - t0) / 1000000 )) -lt $(( $2 * 1000 )) ] || fail "not in $2 s: $1 ($(status | jq -c .targets))"
        sleep 0.01
    done
    echo $(( ($(ns) - t0) / 1000000 ))
}
# change WHAT EVENTS...: the VTN's events set and reread; sets $t0
change() { events "$@"; t0=$(ns); kill -HUP $vpid; }
has() { echo "[.targets[] | select(.source == \"openadr\" and .id == \"$1/0\" and .value == $2)] | length == 1"; }
gone() { echo "[.targets[] | select(.id == \"$1/0\")] | length == 0"; }
post() {  # post TOKEN BODY-FILE: the status of a callback
    if [ -n "$1" ]; then
        curl -s -m 5 --cacert "$tmp/c.crt" -o "$tmp/body" -w '%{http_code}' -X POST -H "Authorization: Bearer $1" \
            -H 'Content-Type: application/json' --data-binary "@$2" "https://127.0.0.1:$cport/v1/openadr/notify"
    else
        curl -s -m 5 --cacert "$tmp/c.crt" -o "$tmp/body" -w '%{http_code}' -X POST \
            -H 'Content-Type: application/json' --data-binary "@$2" "https://127.0.0.1:$cport/v1/openadr/notify"
    fi
}

start_agent "$tmp/agent.log" --backend sim --gpus 2 --state-dir "$tmp/run" --token-file "$tmp/token" \
    --interval 0.1 || fail "the agent did not start"
events
start_vtn
# 1. subscribed, polling every minute: created, changed, withdrawn within 0.5 s
start_ctl "$tmp/ctl1.log" 300
sleep 0.5
lat=""
seen=""
set --
for k in 1 2 3 4 5; do
    set -- "$@" "ev-$k:$((40 + k))"
    change "$@"
    obs=$(until_status "$(has "ev-$k" $(( (40 + k) * 1000 )))" 10)
    ms=$(logged "vtn: callback from 127.0.0.1: event ev-$k version .* (POST)" "$tmp/ctl1.log")
    [ "$ms" -le 500 ] || fail "event ev-$k in force after $ms ms through the subscription (over 500)"
    lat="$lat $ms"
    seen="$seen $obs"
done
echo "created, in force after (ms):$lat (the test's status saw it after:$seen)"
change ev-1:30 ev-2:42 ev-3:43 ev-4:44 ev-5:45
obs=$(until_status "$(has ev-1 30000)" 10)
ms=$(logged 'vtn: callback from 127.0.0.1: event ev-1 version .* (PUT)' "$tmp/ctl1.log")
[ "$ms" -le 500 ] || fail "a changed event in force after $ms ms (over 500)"
echo "changed, in force after (ms): $ms (seen after $obs)"
change ev-1:30 ev-2:42 ev-3:43 ev-4:44
obs=$(until_status "$(gone ev-5)" 10)
ms=$(logged 'vtn: callback from 127.0.0.1: event ev-5 version .* (DELETE)' "$tmp/ctl1.log")
[ "$ms" -le 500 ] || fail "a withdrawn event gone after $ms ms (over 500)"
echo "withdrawn, gone after (ms): $ms (seen after $obs)"

# 2. hostile callbacks: refused, logged, nothing changed
sleep 2     # the API's write bucket (5/s, bursts of 10) refilled
before=$(status | jq -c '[.targets[] | select(.source == "openadr") | [.id, .value]]')
vtoken=$(curl -s -m 5 -d grant_type=client_credentials -d client_id=site-s \
    -d client_secret=vtn-secret-0123456789abcdef "http://127.0.0.1:$vport/auth/token" | jq -r .access_token)
curl -s -m 5 -H "Authorization: Bearer $vtoken" "http://127.0.0.1:$vport/events" >"$tmp/served.json"
jq -c '{objectType: "EVENT", operation: "PUT", object: .[0]}' "$tmp/served.json" >"$tmp/replay.json"
jq -e '.object.modificationDateTime | type == "string"' "$tmp/replay.json" >/dev/null \
    || fail "the VTN serves no modificationDateTime: $(cat "$tmp/served.json")"
jq -c '{objectType: "EVENT", operation: "PUT", object: (.[0] | .modificationDateTime = "2000-01-01T00:00:00.000Z")}' \
    "$tmp/served.json" >"$tmp/stale.json"
printf '{"objectType":"EVENT","operation":"POST","object":{"id":' >"$tmp/malformed.json"
printf '{"objectType":"PROGRAM","operation":"POST","object":{"id":"x","modificationDateTime":"2030-01-01T00:00:00Z"}}' \
    >"$tmp/program.json"
printf '{"objectType":"EVENT","operation":"POST","object":{"id":"ev-9","modificationDateTime":"2030-01-01T00:00:00Z","programID":"p1","intervals":"no"}}' \
    >"$tmp/badevent.json"
head -c 70000 /dev/zero | tr '\0' ' ' >"$tmp/big.json"
refused0=$(grep -c 'refused POST /v1/openadr/notify' "$tmp/ctl1.log")
for c in "401 - replay.json" "401 wrong-token-0123456789 replay.json" "400 $CBTOKEN malformed.json" \
         "400 $CBTOKEN program.json" "400 $CBTOKEN badevent.json" "413 $CBTOKEN big.json" \
         "409 $CBTOKEN replay.json" "409 $CBTOKEN stale.json"; do
    set -- $c
    tok=$2; [ "$tok" = - ] && tok=
    s=$(post "$tok" "$tmp/$3")
    [ "$s" = "$1" ] || fail "callback $3 with token '$tok': HTTP $s, not $1 ($(cat "$tmp/body"))"
done
refused=$(( $(grep -c 'refused POST /v1/openadr/notify' "$tmp/ctl1.log") - refused0 ))
[ "$refused" = 8 ] || fail "$refused hostile callbacks logged, not 8"
grep -q 'notify from 127.0.0.1 (HTTP 409): replayed' "$tmp/ctl1.log" || fail "the replay is not logged as one"
grep -q 'notify from 127.0.0.1 (HTTP 401): wrong token' "$tmp/ctl1.log" || fail "the wrong token is not logged"
after=$(status | jq -c '[.targets[] | select(.source == "openadr") | [.id, .value]]')
[ "$before" = "$after" ] || fail "hostile callbacks changed the targets: $before -> $after"
kill -TERM $cpid
wait $cpid 2>/dev/null
grep -q 'vtn: subscription sub-[0-9a-f]* deleted' "$tmp/ctl1.log" || fail "the subscription was not deleted at stop"
echo "hostile callbacks: 8 refused (401 401 400 400 400 413 409 409), targets unchanged"

# 3. the subscription broken, polling every 5 s: within one poll, then
# subscribed again
start_ctl "$tmp/ctl2.log" 25
kill -TERM $vpid
wait $vpid 2>/dev/null
start_vtn --port "$vport"
change ev-1:30 ev-2:42 ev-3:43 ev-4:44 ev-6:46
obs=$(until_status "$(has ev-6 46000)" 12)
ms=$(took ev-6)
[ "$ms" -le 5500 ] || fail "with the subscription broken, taken by a poll begun $ms ms after (over one 5 s poll)"
echo "subscription broken, taken by the poll begun after (ms): $ms (seen after $obs)"
i=0
until grep -q 'subscribing again' "$tmp/ctl2.log" && [ "$(grep -c 'vtn: subscribed' "$tmp/ctl2.log")" -ge 2 ]; do
    [ $i -lt 600 ] || fail "the controller did not subscribe again"; sleep 0.01; i=$((i + 1))
done
change ev-1:30 ev-2:42 ev-3:43 ev-4:44 ev-6:46 ev-7:47
obs=$(until_status "$(has ev-7 47000)" 10)
ms=$(logged 'vtn: callback from 127.0.0.1: event ev-7 version .* (POST)' "$tmp/ctl2.log")
[ "$ms" -le 500 ] || fail "subscribed again, in force after $ms ms (over 500)"
echo "subscribed again, in force after (ms): $ms (seen after $obs)"
# the version of ev-6 a poll brought, sent as a callback: a duplicate
# (200, nothing done); sent again: a replay (409)
vtoken=$(curl -s -m 5 -d grant_type=client_credentials -d client_id=site-s \
    -d client_secret=vtn-secret-0123456789abcdef "http://127.0.0.1:$vport/auth/token" | jq -r .access_token)
curl -s -m 5 -H "Authorization: Bearer $vtoken" "http://127.0.0.1:$vport/events" |
    jq -c '{objectType: "EVENT", operation: "POST", object: (.[] | select(.id == "ev-6"))}' >"$tmp/dup.json"
s=$(post "$CBTOKEN" "$tmp/dup.json")
[ "$s" = 200 ] && grep -q 'a poll brought it' "$tmp/body" || fail "the poll's version by callback: HTTP $s $(cat "$tmp/body")"
s=$(post "$CBTOKEN" "$tmp/dup.json")
[ "$s" = 409 ] || fail "the poll's version by callback, again: HTTP $s, not 409 ($(cat "$tmp/body"))"
echo "a callback of the version a poll brought: 200, nothing done; again: 409"
kill -TERM $vpid
wait $vpid 2>/dev/null
grep -q 'notifications sent' "$tmp/vtn.log" || fail "the VTN's counts are not logged"
echo ok
