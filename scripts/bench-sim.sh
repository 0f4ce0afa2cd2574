#!/usr/bin/env bash
# Subnet bring-up: `ipoib sim` (our SM + SA, every host joins the IPoIB broadcast group over real SA
# MADs) against OpenSM sweeping the same fat tree on ibsim.
#
#   scripts/bench-sim.sh [RUNS] [SIZES...]      (defaults: RUNS=3, sizes 1000 10000)
#
# For each size: builds the release `ipoib`, runs `ipoib sim --hosts N --json` RUNS times and prints
# the best wall time with simulated time, packets, events and peak memory. Then, when ibsim, ibsim-run
# and opensm are installed (Debian packages ibsim-utils, opensm), writes an ibsim net file of the
# same two-level fat tree (same leaf/spine shape as `Topology::fat_tree`, see FatTreeShape), starts
# ibsim with limits raised for it (-N/-S/-P/-L), starts OpenSM on h0 under ibsim-run, and times
# from OpenSM's start until its first subnet dump (opensm-subnet.lst) lists every CA link: LIDs
# assigned, LFTs written, ports Active. OpenSM on ibsim prints no "SUBNET UP" here (ibsim answers
# some SMPs in ways OpenSM counts as initialization errors), so the dump is the end marker.
# Then OpenSM's SA doing the N broadcast joins (crates/runtime/examples/opensm_joins.rs, best of
# RUNS): ibsim takes at most 10 clients, so one client on h1 sends the N FullMember joins, each
# for one HCA's port GID (OpenSM accepts joins for other ports sharing the P_Key), pipelined
# (JOIN_WINDOW outstanding), and times first request -> last response, then polls the leaf
# switches' MFTs until the group reaches every CA port (see docs/BENCHMARKS.md).
# Environment: BENCH_DIR (scratch directory, default mktemp -d), OPENSM_TIMEOUT (s, default 300,
# per OpenSM run), JOIN_WINDOW (outstanding joins, default 64).
set -euo pipefail
cd "$(dirname "$0")/.."

runs=${1:-3}
shift || true
sizes=("$@")
[ ${#sizes[@]} -gt 0 ] || sizes=(1000 10000)
dir=${BENCH_DIR:-$(mktemp -d)}
mkdir -p "$dir"
osm_timeout=${OPENSM_TIMEOUT:-300}
join_window=${JOIN_WINDOW:-64}

echo "== build (release)"
cargo build --release -q -p ipoib-cli --bin ipoib
cargo build --release -q -p ipoib-runtime --example opensm_joins
target=$(cargo metadata --format-version 1 --no-deps 2>/dev/null |
    sed -n 's/.*"target_directory":"\([^"]*\)".*/\1/p')
ipoib="${target:-target}/release/ipoib"
joins="${target:-target}/release/examples/opensm_joins"

field() { sed -n "s/.*\"$1\":\([0-9]*\).*/\1/p"; }

echo "== ipoib sim (best of $runs)"
for n in "${sizes[@]}"; do
    best=""
    for _ in $(seq 1 "$runs"); do
        out=$("$ipoib" sim --hosts "$n" --json)
        wall=$(echo "$out" | field wall_ns)
        if [ -z "$best" ] || [ "$wall" -lt "$best" ]; then best=$wall; bestout=$out; fi
    done
    joined=$(echo "$bestout" | field joined)
    printf '%6d hosts: joined %d, wall %.3f s, simulated %s ns (last join), %s packets, %s bytes, %s events, peak %s KiB\n' \
        "$n" "$joined" "$(echo "$best / 1000000000" | bc -l)" "$(echo "$bestout" | field sim_last_join_ns)" \
        "$(echo "$bestout" | field packets)" "$(echo "$bestout" | field bytes)" \
        "$(echo "$bestout" | field events)" "$(echo "$bestout" | field peak_memory_kib)"
done

for b in ibsim ibsim-run opensm; do
    if ! command -v "$b" >/dev/null && [ ! -x "/usr/sbin/$b" ]; then
        echo "== OpenSM on ibsim: skipped, $b is not installed (Debian packages ibsim-utils, opensm)"
        exit 0
    fi
done
opensm_bin=$(command -v opensm || echo /usr/sbin/opensm)

# The fat tree of Topology::fat_tree as an ibsim net file.
netfile() {
    awk -v n="$1" 'BEGIN {
        down = 18; while (int((n + down - 1) / down) > 2 * down) down++
        leaves = int((n + down - 1) / down); spines = leaves > 1 ? down : 0; radix = 2 * down
        for (l = 0; l < leaves; l++) {
            printf "Switch\t%d \"leaf%d\"\n", radix, l
            for (p = 0; p < down; p++) { h = l * down + p; if (h < n) printf "[%d]\t\"h%d\"[1]\n", p + 1, h }
            for (s = 0; s < spines; s++) printf "[%d]\t\"spine%d\"[%d]\n", down + s + 1, s, l + 1
            print ""
        }
        for (s = 0; s < spines; s++) {
            printf "Switch\t%d \"spine%d\"\n", radix, s
            for (l = 0; l < leaves; l++) printf "[%d]\t\"leaf%d\"[%d]\n", l + 1, l, down + s + 1
            print ""
        }
        for (h = 0; h < n; h++) printf "Hca\t1 \"h%d\"\n[1]\t\"leaf%d\"[%d]\n\n", h, int(h / down), h % down + 1
    }'
}

echo "== OpenSM on ibsim: first complete sweep (LIDs, LFTs, ports Active; no joins)"
for n in "${sizes[@]}"; do
    run="$dir/opensm-$n"
    rm -rf "$run"; mkdir -p "$run"
    netfile "$n" > "$run/net"
    : > "$run/opensm.conf"
    sock="ipoibbench$$n$n"
    (cd "$run" && exec env IBSIM_SOCKNAME="$sock" ibsim -s -N $((n + 1000)) -S 1024 \
        -P $((n * 4 + 40000)) -L 49152 -n net > ibsim.out 2>&1) &
    ib=$!
    sleep 2
    t0=$(date +%s.%N)
    (cd "$run" && exec env IBSIM_SOCKNAME="$sock" SIM_HOST=h0 OSM_CACHE_DIR="$run" OSM_TMP_DIR="$run" \
        ibsim-run "$opensm_bin" -F opensm.conf -f "$run/opensm.log" --dump_files_dir "$run" \
        > "$run/osm.out" 2>&1) &
    osm=$!
    end=$(( $(date +%s) + osm_timeout ))
    result="no complete sweep within ${osm_timeout} s"
    while kill -0 "$osm" 2>/dev/null && [ "$(date +%s)" -lt "$end" ]; do
        lst="$run/opensm-subnet.lst"
        if [ -f "$lst" ] && [ "$(grep -c '{ CA' "$lst")" -ge $((2 * n)) ]; then
            t1=$(stat -c %.9Y "$lst")
            active=$(( $(grep '{ CA' "$lst" | grep -c 'LOG=ACT') / 2 ))
            result=$(printf 'sweep %.3f s, %d CA links Active' "$(echo "$t1 - $t0" | bc -l)" "$active")
            break
        fi
        sleep 0.05
    done
    rss=$(ps -o rss= -p "$osm" 2>/dev/null | tr -d ' ' || true)
    printf '%6d hosts: %s, OpenSM RSS %s KiB\n' "$n" "$result" "${rss:-n/a}"
    kill "$osm" "$ib" 2>/dev/null || true
    sleep 1
    kill -9 "$osm" "$ib" 2>/dev/null || true
    wait "$osm" "$ib" 2>/dev/null || true
done

echo "== OpenSM on ibsim: N broadcast joins through one ibsim client (best of $runs, window $join_window)"
for n in "${sizes[@]}"; do
    best=""
    for _ in $(seq 1 "$runs"); do
        # The program bounds itself (--timeout) and kills ibsim and OpenSM on every exit path.
        if ! out=$("$joins" --hosts "$n" --window "$join_window" --timeout "$osm_timeout" --json); then
            printf '%6d hosts: gave up: %s\n' "$n" "$out"
            continue
        fi
        t=$(echo "$out" | field first_to_last_ns)
        if [ -z "$best" ] || [ "$t" -lt "$best" ]; then best=$t; bestout=$out; fi
    done
    [ -n "$best" ] || continue
    statuses=$(echo "$bestout" | sed -n 's/.*"statuses":{\([^}]*\)}.*/\1/p')
    printf '%6d hosts: %s of %s joins SUCCESS (%s), first request to last response %.3f s, MFTs done %.3f s (poll resolution %.3f s), round trip p50 %s us p99 %s us, retries %s, OpenSM RSS %s KiB\n' \
        "$n" "$(echo "$bestout" | field success)" "$n" "$statuses" \
        "$(echo "$best / 1000000000" | bc -l)" "$(echo "$(echo "$bestout" | field mfts_ns) / 1000000000" | bc -l)" \
        "$(echo "$(echo "$bestout" | field mft_round_ns) / 1000000000" | bc -l)" \
        "$(echo "$bestout" | field rtt_p50_us)" "$(echo "$bestout" | field rtt_p99_us)" \
        "$(echo "$bestout" | field retries)" "$(echo "$bestout" | field opensm_rss_kib)"
done
