#!/usr/bin/env bash
# `ipoib demo` on big fat trees, with `ipoib sim` on the same subnet beside it, in one run.
#
#   scripts/bench-demo.sh [RUNS] [SIZES...]      (defaults: RUNS=3, sizes 1000 10000 32258)
#
# 32,258 hosts is the largest two-level fat tree `Topology::fat_tree` builds (254 leaves of 127
# hosts; see FatTreeShape). For each size: builds the release `ipoib`, then RUNS times runs
# `ipoib demo --hosts N --topology fat-tree --json` (capture to a scratch file) and
# `ipoib sim --hosts N --json`, alternately, and prints for each command the run with the best
# wall time: wall time, CPU time (user + system, from /usr/bin/time when installed), peak
# resident memory (VmHWM, as both commands report it), simulated time, packets, and the demo's
# verdict (its exit status and failures). The machine's load average is printed first: on a
# shared machine, CPU time is the steadier figure.
# Environment: BENCH_DIR (scratch directory for the captures, default mktemp -d).
set -euo pipefail
cd "$(dirname "$0")/.."

runs=${1:-3}
shift || true
sizes=("$@")
[ ${#sizes[@]} -gt 0 ] || sizes=(1000 10000 32258)
dir=${BENCH_DIR:-$(mktemp -d)}
mkdir -p "$dir"

echo "== build (release)"
cargo build --release -q -p ipoib-cli --bin ipoib
target=$(cargo metadata --format-version 1 --no-deps 2>/dev/null |
    sed -n 's/.*"target_directory":"\([^"]*\)".*/\1/p')
ipoib="${target:-target}/release/ipoib"
timer=""
[ -x /usr/bin/time ] && timer=/usr/bin/time

field() { sed -n "s/.*\"$1\":\([0-9]*\).*/\1/p" | head -1; }

# run LABEL ARGS...: runs `ipoib ARGS`, sets out (stdout), code (exit status), cpu (seconds or n/a)
run() {
    local t="$dir/time.txt"
    set +e
    if [ -n "$timer" ]; then
        out=$("$timer" -o "$t" -f '%U %S' "$ipoib" "$@" 2>/dev/null)
        code=$?
        # GNU time puts "Command exited with non-zero status N" before the figures.
        cpu=$(tail -n 1 "$t" | awk '{printf "%.2f", $1 + $2}')
    else
        out=$("$ipoib" "$@" 2>/dev/null)
        code=$?
        cpu=n/a
    fi
    set -e
}

echo "== load average: $(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || echo n/a); $(nproc) CPUs"
echo "== best of $runs runs each (wall time)"
for n in "${sizes[@]}"; do
    best_demo=""; best_sim=""
    for _ in $(seq 1 "$runs"); do
        run demo --hosts "$n" --topology fat-tree --json --pcap "$dir/demo-$n.pcap"
        wall=$(echo "$out" | field wall_ns)
        if [ -n "$wall" ] && { [ -z "$best_demo" ] || [ "$wall" -lt "$best_demo" ]; }; then
            best_demo=$wall; demo_out=$out; demo_code=$code; demo_cpu=$cpu
        fi
        run sim --hosts "$n" --json
        wall=$(echo "$out" | field wall_ns)
        if [ -n "$wall" ] && { [ -z "$best_sim" ] || [ "$wall" -lt "$best_sim" ]; }; then
            best_sim=$wall; sim_out=$out; sim_code=$code; sim_cpu=$cpu
        fi
    done
    if [ -z "$best_demo" ] || [ -z "$best_sim" ]; then
        echo "$n hosts: a run printed no figures"
        continue
    fi
    failures=$(echo "$demo_out" | sed -n 's/.*"failures":\[\(.*\)\]}$/\1/p')
    printf '%6d hosts  demo: wall %.3f s, CPU %s s, peak %s KiB, simulated %s ns, %s packets (%s not kept), exit %s%s\n' \
        "$n" "$(echo "$best_demo / 1000000000" | bc -l)" "$demo_cpu" \
        "$(echo "$demo_out" | field peak_memory_kib)" "$(echo "$demo_out" | field sim_ns)" \
        "$(echo "$demo_out" | field packets)" "$(echo "$demo_out" | field packets_not_kept)" \
        "$demo_code" "${failures:+, failures: $failures}"
    printf '%6d hosts  sim:  wall %.3f s, CPU %s s, peak %s KiB, simulated %s ns (last join), %s packets, exit %s\n' \
        "$n" "$(echo "$best_sim / 1000000000" | bc -l)" "$sim_cpu" \
        "$(echo "$sim_out" | field peak_memory_kib)" "$(echo "$sim_out" | field sim_last_join_ns)" \
        "$(echo "$sim_out" | field packets)" "$sim_code"
done
