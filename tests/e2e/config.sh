#!/bin/sh
# The daemons' configuration file (docs/install.md): keys are the long
# options; flags override them; --print-config prints what is in force and
# reads back the same; a bad key, value, section or line is refused with
# its file and line, exit 2; the agent serves what the file says, and on
# SIGHUP the agent and the controller log the keys whose change waits for
# a restart, and go on.
set -u
[ -n "${PFLEX_TEST_BOUNDED:-}" ] || PFLEX_TEST_BOUNDED=1 exec timeout 60 sh "$0" "$@"
here=$(cd "$(dirname "$0")" && pwd)
PFLEX=${PFLEX:-$here/../../build/pflex}
T=$(mktemp -d)
apid=
trap '[ -n "$apid" ] && kill "$apid" 2>/dev/null; rm -rf "$T"' EXIT
fail() { echo "FAIL: $*"; [ -f "$T/agent.log" ] && tail -5 "$T/agent.log"; exit 1; }

cat > "$T/a.conf" <<'C'
# a shared file: each daemon reads its own section
[agent]
backend = sim
gpus = 2
max-lease = 600      ; an inline comment
json = false
auth-reads = yes
[controller]
agent = http://gpu-node-01:9410
        http://gpu-node-02:9410
period = 5
C
"$PFLEX" agent --config "$T/a.conf" --print-config > "$T/p1" 2> "$T/err" || fail "print-config: $(cat "$T/err")"
grep -q '^gpus = 2$' "$T/p1" && grep -q '^max-lease = 600$' "$T/p1" && grep -q '^auth-reads = true$' "$T/p1" \
    && grep -q '^#json =' "$T/p1" || fail "agent --print-config: $(cat "$T/p1")"
# flags override the file's keys
"$PFLEX" agent --config "$T/a.conf" --gpus 4 --max-lease=60 --print-config > "$T/p2" || fail "with flags"
grep -q '^gpus = 4$' "$T/p2" && grep -q '^max-lease = 60$' "$T/p2" && [ "$(grep -c '^gpus = ' "$T/p2")" = 1 ] \
    || fail "flags do not override: $(grep -v '^#' "$T/p2")"
# what --print-config prints reads back the same
"$PFLEX" agent --config "$T/p2" --print-config > "$T/p3" || fail "--print-config's output does not read back"
cmp -s "$T/p2" "$T/p3" || fail "--print-config's output reads back otherwise"
# the controller's section: a continued value is one more agent
"$PFLEX" controller run --config "$T/a.conf" --print-config > "$T/c1" || fail "controller print-config"
[ "$(grep -c '^agent = http://gpu-node-0[12]:9410$' "$T/c1")" = 2 ] || fail "controller agents: $(cat "$T/c1")"
"$PFLEX" controller run --config "$T/a.conf" --agent http://other:9410 --print-config > "$T/c2" || fail "controller --agent"
[ "$(grep '^agent = ' "$T/c2")" = "agent = http://other:9410" ] || fail "--agent does not replace the file's: $(cat "$T/c2")"

# refusals: exit 2, the file and the line
bad() {  # bad NAME 'FILE TEXT' 'EXPECTED MESSAGE PART' [COMMAND...]
    name=$1 text=$2 want=$3
    shift 3
    printf '%b' "$text" > "$T/$name.conf"
    if [ $# -eq 0 ]; then set -- agent; fi
    "$PFLEX" "$@" --config "$T/$name.conf" > "$T/out" 2> "$T/err"
    rc=$?
    [ $rc = 2 ] || fail "$name: exit $rc, want 2 ($(cat "$T/err"))"
    [ ! -s "$T/out" ] || fail "$name: printed $(cat "$T/out")"
    grep -qF -- "$want" "$T/err" || fail "$name: want '$want' in: $(cat "$T/err")"
}
bad key '[agent]\nbackend = sim\nbogus = 1\n' "$T/key.conf:3: unknown key 'bogus' in [agent]"
bad value '[agent]\nbackend = sim\n\nmax-lease = soon\n' "$T/value.conf:4: the value above is this line's (--max-lease=soon)"
bad switch '[agent]\njson = maybe\n' "$T/switch.conf:2: 'json' is a switch"
bad empty '[agent]\nlisten =\n' "$T/empty.conf:2: 'listen' needs a value"
bad nosection 'backend = sim\n' "$T/nosection.conf:1: 'backend' outside a section"
bad section '[agnet]\nbackend = sim\n' "$T/section.conf:2: unknown section [agnet]"
bad junk '[agent]\nbackend = sim\nthis is not a key\n' "$T/junk.conf:3: not 'key = value'"
bad long "[agent]\nsim-job = $(head -c 300 /dev/zero | tr '\0' x)\n" "$T/long.conf:2: line longer than 198"
bad semicolon '[agent]\nhostname =;x\n' "$T/semicolon.conf:2: 'hostname': a ';'"
bad ctlvalue '[controller]\nagent = http://a:9410\nperiod = 0\n' "$T/ctlvalue.conf:3:" controller run
"$PFLEX" agent --config "$T/none.conf" 2> "$T/err"; [ $? = 2 ] || fail "a missing file: not exit 2"
grep -q 'none.conf' "$T/err" || fail "a missing file: $(cat "$T/err")"
"$PFLEX" agent --config 2> "$T/err"; [ $? = 2 ] || fail "--config without FILE: not exit 2"

# the agent serves what the file says; SIGHUP logs what waits for a restart
printf 'agent-config-token-0123456789\n' > "$T/token"
chmod 600 "$T/token"
cat > "$T/run.conf" <<C
[agent]
backend = sim
gpus = 2
listen = 127.0.0.1:0
port-file = $T/port
state-dir = $T/state
token-file = $T/token
max-lease = 600
C
"$PFLEX" agent --config "$T/run.conf" 2> "$T/agent.log" &
apid=$!
k=0
until [ -s "$T/port" ]; do [ $k -lt 100 ] || fail "the agent did not start"; sleep 0.1; k=$((k + 1)); done
port=$(cat "$T/port")
curl -s -m 5 "http://127.0.0.1:$port/v1/status" | grep -q '"gpus"' || fail "no /v1/status"
code=$(curl -s -m 5 -o /dev/null -w '%{http_code}' -X PUT -H "Authorization: Bearer $(cat "$T/token")" \
    -d '{"lease_s": 900, "caps": [{"gpu": 0, "cap_w": 500}]}' "http://127.0.0.1:$port/v1/caps")
[ "$code" = 400 ] || fail "a lease over the file's max-lease 600: HTTP $code"
sed -i 's/^max-lease = 600$/max-lease = 60/' "$T/run.conf"
kill -HUP $apid
k=0
until grep -q 'SIGHUP: .*run.conf reread: max-lease changed: in force after a restart' "$T/agent.log"; do
    [ $k -lt 50 ] || fail "SIGHUP: no line about max-lease"; sleep 0.1; k=$((k + 1))
done
printf 'bogus = 1\n' >> "$T/run.conf"
kill -HUP $apid
k=0
until grep -q "SIGHUP: .*run.conf:9: unknown key 'bogus'.*configuration in force is kept" "$T/agent.log"; do
    [ $k -lt 50 ] || fail "SIGHUP with a broken file: not logged"; sleep 0.1; k=$((k + 1))
done
kill -0 $apid 2>/dev/null || fail "the agent died on a SIGHUP with a broken file"
kill -TERM $apid
wait $apid
rc=$?
apid=
[ $rc = 0 ] || fail "the agent exited $rc on SIGTERM"
# the controller too: SIGHUP logs, never stops it
cat > "$T/ctl.conf" <<C
[controller]
agent = http://127.0.0.1:1
period = 0.2
log = $T/ctl.log
C
"$PFLEX" controller run --config "$T/ctl.conf" 2> "$T/ctl.err" &
apid=$!
k=0
until grep -q 'period 2' "$T/ctl.log" 2>/dev/null; do
    [ $k -lt 100 ] || fail "the controller did not run: $(cat "$T/ctl.err")"; sleep 0.1; k=$((k + 1))
done
sed -i 's/^period = 0.2$/period = 0.3/' "$T/ctl.conf"
kill -HUP $apid
k=0
until grep -q 'SIGHUP: .*ctl.conf reread: period changed: in force after a restart' "$T/ctl.log"; do
    [ $k -lt 50 ] || fail "controller SIGHUP: $(tail -3 "$T/ctl.log")"; sleep 0.1; k=$((k + 1))
done
kill -0 $apid 2>/dev/null || fail "the controller stopped on SIGHUP"
kill -TERM $apid
wait $apid
rc=$?
apid=
[ $rc = 0 ] || fail "the controller exited $rc on SIGTERM"
echo "config: ok"
