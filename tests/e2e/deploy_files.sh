#!/bin/sh
# One port per daemon, the same everywhere: the agent's default listen
# address (pflex agent --help), deploy/agent.conf, deploy/controller.conf's
# agents and listen address, deploy/prometheus.yml's targets, the systemd
# units, the port table of docs/install.md and every pflex URL in the docs
# and help texts.  Neither port may be dcgm-exporter's 9400, node_exporter's
# 9100 or Prometheus' 9090.  The units name configuration files that
# deploy/ holds.  Fails on the first disagreement, saying where.
set -u
cd "$(dirname "$0")/../.."
PFLEX=${PFLEX:-build/pflex}
fail() { echo "FAIL: $*"; exit 1; }
port_of() { sed -n "s/^$1 *= *[^ ]*:\([0-9][0-9]*\) *\$/\1/p" "$2" | head -1; }

A=$("$PFLEX" agent --help | sed -n 's/.*--listen ADDR:PORT.*(default [0-9.]*:\([0-9]*\).*/\1/p')
[ -n "$A" ] || fail "pflex agent --help states no default port for --listen"
[ "$(port_of listen deploy/agent.conf)" = "$A" ] \
    || fail "deploy/agent.conf: listen port $(port_of listen deploy/agent.conf), the agent's default $A"
C=$(port_of listen deploy/controller.conf)
[ -n "$C" ] || fail "deploy/controller.conf: no listen = HOST:PORT"
for p in "$A" "$C"; do
    case $p in 9400|9100|9090) fail "port $p is dcgm-exporter's, node_exporter's or Prometheus' own" ;; esac
done
[ "$A" != "$C" ] || fail "the agent and the controller both on $A"

# the controller's agents
n=0
for url in $(sed -n 's/^agent *= *//p' deploy/controller.conf); do
    n=$((n + 1))
    case $url in *:"$A"|*:"$A"/) ;; *) fail "deploy/controller.conf: agent $url not on port $A" ;; esac
done
[ $n -gt 0 ] || fail "deploy/controller.conf names no agent"

# Prometheus: every pflex-agent target on A, every pflex-controller one on C
awk -v A="$A" -v C="$C" '
    /job_name:/ { job = $NF }
    /^ *- [^ ]+:[0-9]+ *$/ {
        n = split($2, hp, ":"); p = hp[n]
        want = job == "pflex-agent" ? A : job == "pflex-controller" ? C : ""
        if (want == "") { print "deploy/prometheus.yml:" NR ": a target of job " job; bad = 1 }
        else if (p != want) { print "deploy/prometheus.yml:" NR ": " $2 " in job " job ", want port " want; bad = 1 }
        seen[job]++
    }
    END { if (!seen["pflex-agent"] || !seen["pflex-controller"]) { print "deploy/prometheus.yml: a job without targets"; bad = 1 }
          exit bad }' deploy/prometheus.yml || fail "deploy/prometheus.yml disagrees"

# the units read the configuration files deploy/ holds, and name no other port
for u in deploy/systemd/*.service; do
    for f in $(grep -o '@SYSCONFDIR@/pflex/[a-z]*\.conf' "$u" | sed 's|.*/||' | sort -u); do
        [ -f "deploy/$f" ] || fail "$u reads $f, which deploy/ does not hold"
    done
    grep -n ':[0-9]\{4,5\}\b' "$u" | grep -v ":$A\b\|:$C\b" | head -1 | grep . && fail "$u: a port that is not $A or $C"
done
grep -q 'agent.conf' deploy/systemd/pflex-agent.service || fail "pflex-agent.service does not read agent.conf"
grep -q 'controller.conf' deploy/systemd/pflex-controller.service \
    || fail "pflex-controller.service does not read controller.conf"

# docs/install.md's port table, stated once
grep -Eq "^\| *(pflex )?agent *\| *$A *\|" docs/install.md || fail "docs/install.md: no '| agent | $A |' row"
grep -Eq "^\| *(pflex )?controller *\| *$C *\|" docs/install.md || fail "docs/install.md: no '| controller | $C |' row"

# every pflex URL or listen address in the docs, deploy/ and the help texts:
# 94xx is the agent's or the controller's (dcgm-exporter's 9400 only where
# the line speaks of it); every --agent / agent = URL on A
files="README.md docs/*.md deploy/*.conf deploy/*.yml deploy/systemd/* src/cli/agent.c src/controller/cmd.c"
bad=$(grep -n ':94[0-9][0-9]\b' $files | grep -vi dcgm | grep -v ":$A\b" | grep -v ":$C\b" | head -3)
[ -z "$bad" ] || fail "a port that is neither the agent's ($A) nor the controller's ($C):
$bad"
bad=$(grep -no -- '--agent[= ]*https\{0,1\}://[^ "\\]*' $files | grep -v ":$A\b" | head -3)
[ -z "$bad" ] || fail "an agent URL not on port $A:
$bad"
echo "deploy files: agent $A, controller $C, everywhere"
