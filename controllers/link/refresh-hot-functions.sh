#!/usr/bin/env bash
# Rewrites hot-functions.txt: the functions of the shipped operator that a real run over
# a synchronized fleet executes, most instructions first (by powers of two; below), which
# controllers/build.rs places together at the start of the binary's code. Run it after a
# dependency or toolchain change, which renames the functions of the build it was made
# from (tests/PERFORMANCE.md, "Hot functions first").
#
#   cargo build --release -p controllers --no-default-features
#   cargo bench -p e2e --bench sync -- --serve --real-only --no-envtest --pairs 10000
#   controllers/link/refresh-hot-functions.sh KUBECONFIG   # the path --serve prints last
#   controllers/link/refresh-hot-functions.sh --check      # is the list this build's?
#
# Two runs under valgrind's callgrind, which counts every function executed:
#   1. a cold start (the restart checkpoints deleted): every pair reconciled and its
#      hooks run, then a label changed on a few Machines and MachineSets, which the sync
#      writes through to their mirrors, then a stop, which saves the checkpoints;
#   2. a restart from those checkpoints until 3 s after it is quiet.
# Needs valgrind, kubectl, curl, nm and awk. Takes about 4 minutes at 10 000 pairs.
set -euo pipefail
export LC_ALL=C

here=$(cd "$(dirname "$0")" && pwd)
binary=${BINARY:-$here/../../target/release/controllers}
[ -x "$binary" ] || { echo "$0: no binary at $binary: build it first (cargo build --release -p controllers --no-default-features) or set BINARY" >&2; exit 1; }

# `--check`: how many of the listed functions the binary has; fails under 90 %, the sign
# of a list made from another build (a dependency or the toolchain changed since).
if [[ ${1:-} == --check ]]; then
    listed=$(wc -l < "$here/hot-functions.txt")
    found=$(nm --defined-only "$binary" | awk '{ print $3 }' | sort -u \
        | comm -12 - <(sort -u "$here/hot-functions.txt") | wc -l)
    echo "$found of $listed listed functions are in $binary"
    (( found * 10 >= listed * 9 )) || { echo "$0: the list is stale: refresh it (see the top of this script)" >&2; exit 1; }
    exit 0
fi

kubeconfig=${1:?"usage: $0 KUBECONFIG (the served fleet's, printed last by --serve) | --check"}
port=${METRICS_PORT:-18080}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

kc() { kubectl --kubeconfig "$kubeconfig" "$@"; }

# Sum of the sync controllers' reconciles, from the operator's metrics.
reconciles() {
    curl -s "127.0.0.1:$port/metrics" | awk '/^sync_reconcile_total/ { s += $2 } END { print s + 0 }'
}

# Waits until at least $1 reconciles are counted and none came for $2 seconds.
wait_quiet() {
    local last=-1 still=0
    while (( still < $2 )); do
        sleep 1
        local now; now=$(reconciles)
        if [[ $now == "$last" && $now -ge $1 ]]; then still=$((still + 1)); else still=0; fi
        last=$now
    done
}

# Starts the operator under callgrind (output $1), waits for its metrics.
start() {
    valgrind --tool=callgrind --demangle=no --dump-instr=no --callgrind-out-file="$1" \
        "$binary" --kubeconfig "$kubeconfig" --leader-elect=false \
        --machine-api-migration-gate enabled --metrics-bind-address "127.0.0.1:$port" \
        --health-probe-bind-address 0 > "$1.log" 2>&1 &
    pid=$!
    until curl -s "127.0.0.1:$port/metrics" > /dev/null; do sleep 1; done
}

stop() { kill -TERM "$pid"; wait "$pid" || true; }

pairs=$(( $(kc get machines.machine.openshift.io -A --no-headers | wc -l) \
    + $(kc get machinesets.machine.openshift.io -A --no-headers | wc -l) ))
echo "fleet: $pairs pairs"

echo "1. cold start"
kc delete configmap -n openshift-cluster-api machine-sync-checkpoint machine-set-sync-checkpoint \
    --ignore-not-found > /dev/null
start "$work/cold.out"
wait_quiet "$pairs" 3
stamp=$(date +%s)
for kind in machines machinesets; do
    for name in $(kc get "$kind.machine.openshift.io" -n openshift-machine-api -o name | head -3); do
        kc label -n openshift-machine-api "$name" --overwrite "hot-functions-refresh=$stamp" > /dev/null
    done
done
wait_quiet "$pairs" 3
stop

echo "2. restart from the checkpoints"
start "$work/restart.out"
wait_quiet "$pairs" 3
callgrind_control -d "$pid" > /dev/null
sleep 1
stop

# Self instructions per function over both runs (a `calls=` line's next cost line is the
# call's inclusive cost, not the caller's own), kept to the binary's code symbols, hottest
# first by powers of two of that count and by name within each: two runs count a little
# differently, and an order by the exact count would move a third of the list each time.
nm --defined-only "$binary" | awk '$2 ~ /^[tTwW]$/ { print $3 }' | sort -u > "$work/symbols"
awk '
    FNR == 1 { delete names; current = ""; skip = 0 }
    /^c?fn=\(/ {
        id = $1; sub(/^c?fn=/, "", id)
        name = $0; sub(/^c?fn=\([0-9]+\) ?/, "", name)
        if (name != "") names[id] = name
        if ($0 ~ /^fn=/) current = names[id]
        next
    }
    /^calls=/ { skip = 1; next }
    /^[0-9+*-]/ { if (!skip && current != "") cost[current] += $2; skip = 0; next }
    END { for (name in cost) print cost[name], name }
' "$work"/cold.out* "$work"/restart.out* \
    | sort -k2,2 | awk '{ c[$2] += $1 } END { for (n in c) print c[n], n }' \
    | sort -k2,2 | join -1 2 -2 1 -o 1.1,1.2 - "$work/symbols" \
    | awk '{ band = 0; for (c = $1; c >= 2; c /= 2) band++; print band, $2 }' \
    | sort -k1,1nr -k2,2 | awk '{ print $2 }' > "$here/hot-functions.txt"
echo "hot-functions.txt: $(wc -l < "$here/hot-functions.txt") functions"
