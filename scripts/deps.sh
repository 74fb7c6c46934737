#!/bin/sh
# Installs the Debian packages pflex needs to build and test, when missing.
# As root it runs apt-get; otherwise it prints the exact command and stops.
set -e
# libmicrohttpd: the agent's and controller's HTTP servers; libcurl: HTTP clients
# (Prometheus API, agents, OpenADR VTN); SQLite: the controller's state;
# prometheus (promtool), curl and jq: used by the tests against real components
# and to check every JSON field the commands write is documented; openssl makes
# the HTTPS test's certificates; slurmctld, slurmd, slurm-client and munge: a
# real Slurm on loopback for the job map's test; libopenblas-dev: an optimised
# BLAS under GSL's CBLAS interface for the fits (the Makefile falls back to GSL's
# reference CBLAS without it); etcd-server and etcd-client: a real etcd on
# loopback for the standby controller's election and its tests; python3: the
# systemd watchdog's listener in the controller's disk-fault tests; tzdata:
# the zone database `--tz` reads nvidia-smi's local timestamps by;
# libinih-dev: the agent's and controller's INI configuration file (small,
# well kept, the format operators already write); help2man: the man page of
# each command, made from its --help at build time; libglpk-dev: GLPK's MILP
# solver for the levers' planner over an event's horizon.
PKGS="build-essential pkg-config libgsl-dev libopenblas-dev libjansson-dev libcmocka-dev gnuplot-nox clang libclang-rt-14-dev libmicrohttpd-dev libcurl4-openssl-dev libsqlite3-dev prometheus curl jq openssl slurmctld slurmd slurm-client munge etcd-server etcd-client python3 tzdata libinih-dev help2man libglpk-dev"
# `make bench` (scripts/deps.sh bench) also installs the peers it measures
# pflex against: nginx-light (the agent's HTTP), coinor-clp (the planner),
# and python3 (a plain csv loop beside the readers) is already there.
[ "${1:-}" = bench ] && PKGS="$PKGS nginx-light coinor-clp"
missing=""
for p in $PKGS; do
    if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
        missing="$missing $p"
    fi
done
[ -z "$missing" ] && exit 0
if [ "$(id -u)" = 0 ]; then
    echo "deps: installing$missing" >&2
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends $missing >/dev/null
else
    echo "deps: missing Debian packages:$missing" >&2
    echo "deps: run: sudo apt-get update && sudo apt-get install -y --no-install-recommends$missing" >&2
    exit 1
fi
