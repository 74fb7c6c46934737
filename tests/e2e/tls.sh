#!/bin/sh
# HTTPS on loopback: pflex agent with a self-signed certificate made for
# the test, its API through curl with that certificate as the CA, a write
# with the token, plain HTTP refused on the HTTPS port, bad TLS files
# refused before any GPU is touched (exit 2, the file named); and the
# controller's own API over HTTPS.
set -u
[ -n "${PFLEX_TEST_BOUNDED:-}" ] || PFLEX_TEST_BOUNDED=1 exec timeout 60 sh "$0" "$@"
command -v openssl >/dev/null || { echo "skip: openssl not installed (it makes the test's certificate)"; exit 77; }
tmp=$(mktemp -d)
trap 'stop_agents; rm -rf "$tmp"' EXIT
trap 'exit 1' TERM INT
. "$(dirname "$0")/lib/agent.sh"

# a certificate for 127.0.0.1 and localhost, valid a day; a second one
# whose key does not match the first
mkcert() {
    openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 1 \
        -subj "/CN=localhost" -addext "subjectAltName=IP:127.0.0.1,DNS:localhost" \
        -keyout "$tmp/$1.key" -out "$tmp/$1.crt" 2>"$tmp/openssl.log" || fail "openssl: $(cat "$tmp/openssl.log")"
    chmod 600 "$tmp/$1.key"
}
mkcert a
mkcert b
sim="--backend sim --gpus 2 --state-dir $tmp/run --token-file $tmp/token --interval 0.1"

start_agent "$tmp/a.log" $sim --tls-cert "$tmp/a.crt" --tls-key "$tmp/a.key" || fail "the agent did not start with HTTPS"
grep -q "(port $port, HTTPS)" "$tmp/a.log" || fail "HTTPS is not logged"
s=$(curl -s -m 10 --cacert "$tmp/a.crt" -o "$tmp/body" -w '%{http_code}' "https://127.0.0.1:$port/v1/status")
[ "$s" = 200 ] || fail "GET /v1/status over HTTPS: $s"
jq -e '.gpus | length == 2' "$tmp/body" >/dev/null || fail "status over HTTPS: $(head -c 300 "$tmp/body")"
# the certificate is checked: another CA is refused by the client
curl -s -m 10 --cacert "$tmp/b.crt" -o /dev/null "https://127.0.0.1:$port/v1/status" \
    && fail "curl trusted the agent with the wrong CA"
# a write with the token, over HTTPS
s=$(curl -s -m 10 --cacert "$tmp/a.crt" -o "$tmp/body" -w '%{http_code}' -X PUT \
    -H "Authorization: Bearer $TOKEN" --data-binary '{"caps": [{"gpu": 0, "cap_w": 450}], "lease_s": 30}' \
    "https://127.0.0.1:$port/v1/caps")
[ "$s" = 200 ] || fail "PUT /v1/caps over HTTPS: $s $(cat "$tmp/body")"
jq -e '.applied[0].enforced_w == 450' "$tmp/body" >/dev/null || fail "the cap did not take: $(cat "$tmp/body")"
# the controller caps the HTTPS agent, checking it by --ca-file; without
# it (the system's CAs) the agent is unreachable and nothing changes
"$PFLEX" controller run --agent "https://127.0.0.1:$port" --token-file "$tmp/token" --ca-file "$tmp/a.crt" \
    --target 1000W,confirm=yes --period 0.2 --periods 4 --explore 0 --log "$tmp/c1.log" || fail "the controller over HTTPS: $(tail -3 "$tmp/c1.log")"
curl -s -m 10 --cacert "$tmp/a.crt" "https://127.0.0.1:$port/v1/status" >"$tmp/body"
jq -e '[.gpus[].limit_w] | add <= 1000' "$tmp/body" >/dev/null || fail "the controller's caps over HTTPS: $(jq -c '[.gpus[].limit_w]' "$tmp/body")"
"$PFLEX" controller run --agent "https://127.0.0.1:$port" --token-file "$tmp/token" \
    --target 1000W,confirm=yes --period 0.2 --periods 2 --explore 0 --log "$tmp/c2.log"
grep -q "1 agents down" "$tmp/c2.log" || fail "an agent of an unknown CA was not counted down: $(tail -3 "$tmp/c2.log")"
# plain HTTP on the HTTPS port gets no API answer
s=$(curl -s -m 5 -o /dev/null -w '%{http_code}' "http://127.0.0.1:$port/v1/status")
[ "$s" = 200 ] && fail "plain HTTP answered 200 on the HTTPS port"
kill -0 "$apid" || fail "the agent died of a plain-HTTP client"
stop_agents

# bad TLS files: exit 2, nothing started
rc() { "$PFLEX" agent --listen 127.0.0.1:0 $sim "$@" 2>"$tmp/err.log"; echo $?; }
[ "$(rc --tls-cert "$tmp/a.crt")" = 2 ] || fail "--tls-cert without --tls-key: not exit 2"
[ "$(rc --tls-cert "$tmp/nope.crt" --tls-key "$tmp/a.key")" = 2 ] || fail "a missing certificate: not exit 2"
grep -q "nope.crt" "$tmp/err.log" || fail "the missing file is not named: $(cat "$tmp/err.log")"
[ "$(rc --tls-cert "$tmp/a.key" --tls-key "$tmp/a.key")" = 2 ] || fail "a key as the certificate: not exit 2"
grep -q "no PEM certificate" "$tmp/err.log" || fail "a key as certificate: $(cat "$tmp/err.log")"
[ "$(rc --tls-cert "$tmp/a.crt" --tls-key "$tmp/b.key")" = 2 ] || fail "a key of another certificate: not exit 2"

# the controller's API over HTTPS (its agent over plain HTTP)
start_agent "$tmp/b.log" $sim || fail "the plain agent did not start"
"$PFLEX" controller run --agent "http://127.0.0.1:$port" --token-file "$tmp/token" --period 0.2 \
    --listen 127.0.0.1:0 --port-file "$tmp/c.port" --tls-cert "$tmp/b.crt" --tls-key "$tmp/b.key" \
    --log "$tmp/c.log" &
cpid=$!
agents="$agents $cpid"
i=0
until [ -s "$tmp/c.port" ]; do
    kill -0 $cpid 2>/dev/null || fail "the controller did not start"
    [ $i -lt 500 ] || fail "the controller wrote no port"; sleep 0.01; i=$((i + 1))
done
cport=$(cat "$tmp/c.port")
grep -q "(port $cport, HTTPS)" "$tmp/c.log" || fail "the controller's HTTPS is not logged"
s=$(curl -s -m 10 --cacert "$tmp/b.crt" -o "$tmp/body" -w '%{http_code}' "https://127.0.0.1:$cport/v1/status")
[ "$s" = 200 ] || fail "the controller's GET /v1/status over HTTPS: $s"
stop_agents
"$PFLEX" controller run --agent "http://127.0.0.1:1" --listen 127.0.0.1:0 --tls-cert "$tmp/b.crt" \
    --tls-key "$tmp/nope.key" --periods 1 2>"$tmp/err.log"
[ $? = 2 ] || fail "the controller with a missing key: not exit 2"
grep -q "nope.key" "$tmp/err.log" || fail "the controller does not name the missing key: $(cat "$tmp/err.log")"
echo ok
