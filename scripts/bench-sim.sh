#!/usr/bin/env bash
# Subnet bring-up: `ipoib sim` (our SM + SA, every host joins the IPoIB broadcast group over real SA
# MADs) against OpenSM sweeping the same fat tree on ibsim and on our fabric.
#
#   scripts/bench-sim.sh [RUNS] [SIZES...]      (defaults: RUNS=3, sizes 1000 10000)
#
# For each size: builds the release `ipoib`, runs `ipoib sim --hosts N --json` RUNS times and prints
# the best wall time with simulated time, packets, events and peak memory. Then, when ibsim, ibsim-run
# and opensm are installed (Debian packages ibsim-utils, opensm), writes an ibsim net file of the
# same two-level fat tree (same leaf/spine shape as `Topology::fat_tree`, see FatTreeShape) and
# times OpenSM's first sweep of it RUNS times on each of two fabrics, interleaved: ibsim (started
# with limits raised for it, -N/-S/-P/-L) and ours (`ipoib ibsim-server --topology net --sm none
# --no-join`: the same net file, bare HCAs as ibsim's). OpenSM runs on h0 under ibsim-run; the time
# runs from OpenSM's start until its first subnet dump (opensm-subnet.lst) lists every CA link:
# LIDs assigned, LFTs written, ports Active (the end marker for both fabrics, the one this script
# always used, so that the figures compare with earlier ones). It prints each run with the load average, the best
# of each fabric and the ratio ours / ibsim, and compares the two fabrics' last dumps link by link
# (GUIDs, LIDs, ports, width, speed, state).
# Then OpenSM's SA doing the N broadcast joins (crates/runtime/examples/opensm_joins.rs, best of
# RUNS): ibsim takes at most 10 clients, so one client on h1 sends the N FullMember joins, each
# for one HCA's port GID (OpenSM accepts joins for other ports sharing the P_Key), pipelined
# (JOIN_WINDOW outstanding), and times first request -> last response, then polls the leaf
# switches' MFTs until the group reaches every CA port (see docs/benchmarks/subnet.md).
# BENCH_PROBE=1 runs instead, after the build, the per-MAD probe (crates/runtime/examples/smp_probe.rs)
# against each fabric in turn, RUNS times, with no OpenSM: one client on h0 sending directed-route
# SMPs, 1 and 4 outstanding (OpenSM's max_wire_smps); it prints the round trips and the SMPs per
# second, and the fabric server's CPU per MAD (`perf stat` task-clock, when perf is installed).
# PROBE_CPUS="S C" pins the server to CPU S and the probe to CPU C (taskset): "0 0" measures the
# CPU a MAD costs, "0 1" the wake-ups between cores; PROBE_COUNT SMPs per window (default 20000).
# BENCH_STRACE=1 also counts each sweep's system calls of the fabric's server (`strace -c -f`
# attached once it serves) and prints them after the run's line, for the counts only: the tracing
# slows the server, so those runs' times are not comparable with others.
# Environment: BENCH_DIR (scratch directory, default mktemp -d), OPENSM_TIMEOUT (s, default 300,
# per OpenSM run), JOIN_WINDOW (outstanding joins, default 64), BENCH_SKIP_JOINS=1 (no join runs).
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
cargo build --release -q -p ipoib-runtime --example smp_probe
target=$(cargo metadata --format-version 1 --no-deps 2>/dev/null |
    sed -n 's/.*"target_directory":"\([^"]*\)".*/\1/p')
ipoib="${target:-target}/release/ipoib"
joins="${target:-target}/release/examples/opensm_joins"
probe="${target:-target}/release/examples/smp_probe"

field() { sed -n "s/.*\"$1\":\([0-9]*\).*/\1/p"; }

[ "${BENCH_PROBE:-0}" = 1 ] || echo "== ipoib sim (best of $runs)"
for n in "${sizes[@]}"; do
    [ "${BENCH_PROBE:-0}" = 1 ] && break
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

# Makes directory $1 anew with one run directory per fabric (ibsim, ours), each with the net file
# of the fat tree of $2 hosts.
fabric_dirs() {
    rm -rf "$1"; mkdir -p "$1/ibsim" "$1/ours"
    netfile "$2" > "$1/ibsim/net"
    cp "$1/ibsim/net" "$1/ours/net"
}

# Starts fabric $1 (ibsim, or ours: `ipoib ibsim-server --sm none --no-join`) on the net file in
# directory $2 for N=$3 hosts, serving on socket name $4, under the command prefix $5 (none, or a
# taskset), and returns once it serves; the caller's `srv` is its process.
serve() {
    local fab=$1 run=$2 n=$3 sock=$4 pin=${5:-} end
    if [ "$fab" = ibsim ]; then
        (cd "$run" && exec env IBSIM_SOCKNAME="$sock" $pin ibsim -s -N $((n + 1000)) -S 1024 \
            -P $((n * 4 + 40000)) -L 49152 -n net > fabric.out 2>&1) &
        srv=$!
        sleep 2
    else
        (cd "$run" && exec $pin "$ipoib" ibsim-server --topology net --sm none --no-join \
            --sockname "$sock" > fabric.out 2> fabric.err) &
        srv=$!
        end=$(( $(date +%s) + osm_timeout ))
        while ! grep -qx ready "$run/fabric.out" 2>/dev/null && kill -0 "$srv" 2>/dev/null &&
            [ "$(date +%s)" -lt "$end" ]; do sleep 0.05; done
    fi
}

# One OpenSM sweep of the fat tree in $2/net on fabric $1 (ibsim, or ours: `ipoib ibsim-server
# --sm none --no-join`, bare HCAs that join nothing, as ibsim's), in directory $2 for N=$3 hosts:
# OpenSM starts on h0 under ibsim-run once the fabric serves; the time runs from OpenSM's start
# to its first subnet dump listing every CA link (the same end marker for both fabrics). Prints
# "SECONDS ACTIVE RSS" (SECONDS "-" when no complete sweep came within OPENSM_TIMEOUT).
sweep() {
    local fab=$1 run=$2 n=$3 sock="ipoibbench$$$1$3" srv osm t0 t1 end secs=- active=0 rss
    find "$run" -mindepth 1 ! -name net -delete
    : > "$run/opensm.conf"
    serve "$fab" "$run" "$n" "$sock"
    local st=""
    if [ "${BENCH_STRACE:-0}" = 1 ]; then
        strace -c -f -p "$srv" -o "$run/strace" 2>/dev/null & st=$!
        sleep 0.5
    fi
    t0=$(date +%s.%N)
    (cd "$run" && exec env IBSIM_SOCKNAME="$sock" SIM_HOST=h0 OSM_CACHE_DIR="$run" OSM_TMP_DIR="$run" \
        ibsim-run "$opensm_bin" -F opensm.conf -f "$run/opensm.log" --dump_files_dir "$run" \
        > "$run/osm.out" 2>&1) &
    osm=$!
    end=$(( $(date +%s) + osm_timeout ))
    while kill -0 "$osm" 2>/dev/null && [ "$(date +%s)" -lt "$end" ]; do
        lst="$run/opensm-subnet.lst"
        if [ -f "$lst" ] && [ "$(grep -c '{ CA' "$lst")" -ge $((2 * n)) ]; then
            t1=$(stat -c %.9Y "$lst")
            secs=$(printf '%.3f' "$(echo "$t1 - $t0" | bc -l)")
            active=$(( $(grep '{ CA' "$lst" | grep -c 'LOG=ACT') / 2 ))
            break
        fi
        sleep 0.05
    done
    rss=$(ps -o rss= -p "$osm" 2>/dev/null | tr -d ' ' || true)
    if [ -n "$st" ]; then kill -INT "$st" 2>/dev/null || true; wait "$st" 2>/dev/null || true; fi
    kill "$osm" "$srv" 2>/dev/null || true
    sleep 1
    kill -9 "$osm" "$srv" 2>/dev/null || true
    wait "$osm" "$srv" 2>/dev/null || true
    echo "$secs $active ${rss:-n/a}"
}

# What OpenSM found, for comparing the two fabrics: every link of its dump with both ends' node
# type, GUIDs, description, LID, port, width, state and speed (not vendor, device and revision,
# which differ on purpose: our HCAs and switches answer as Mellanox parts).
links() { sed -E 's/VenID:[0-9A-F]+ DevID:[0-9A-F]+ Rev:[0-9A-F]+ //g' "$1" | sort; }

# The per-MAD probe (BENCH_PROBE=1): fabric $1 started as for a sweep in directory $2 for N=$3
# hosts, then smp_probe on h0 (header); prints its lines and the server's task-clock per MAD.
probe_run() {
    local fab=$1 run=$2 n=$3 sock="ipoibprobe$$$1$3" srv pin_s="" pin_c="" count=${PROBE_COUNT:-20000}
    if [ -n "${PROBE_CPUS:-}" ]; then
        read -r s c <<< "$PROBE_CPUS"
        pin_s="taskset -c $s"; pin_c="taskset -c $c"
    fi
    find "$run" -mindepth 1 ! -name net -delete
    serve "$fab" "$run" "$n" "$sock" "$pin_s"
    # A first probe, not counted: our server runs the fabric's start-up (every link coming up)
    # in its first turns after "ready", which would otherwise fall in the CPU window below.
    IBSIM_SOCKNAME="$sock" $pin_c "$probe" --hosts "$n" --count 200 --window 1 >/dev/null ||
        echo "warm-up probe failed"
    local perf=""
    if command -v perf >/dev/null; then
        perf stat -e task-clock -o "$run/perf" -p "$srv" & perf=$!
        sleep 0.5
    fi
    IBSIM_SOCKNAME="$sock" $pin_c "$probe" --hosts "$n" --count "$count" --window 1 --window 4 ||
        echo "probe failed"
    if [ -n "$perf" ]; then
        kill -INT "$perf"; wait "$perf" 2>/dev/null || true
        # The probe's warm-up (500) and both windows.
        awk -v m=$((2 * count + 500)) '/task-clock/ { gsub(",", "", $1); printf "server CPU %.2f us per MAD\n", $1 * 1000 / m }' "$run/perf"
    fi
    kill "$srv" 2>/dev/null || true
    wait "$srv" 2>/dev/null || true
}

if [ "${BENCH_PROBE:-0}" = 1 ]; then
    echo "== per-MAD probe: directed-route SMPs from h0, no OpenSM (CPUs server/probe: ${PROBE_CPUS:-any})"
    for n in "${sizes[@]}"; do
        base="$dir/probe-$n"
        fabric_dirs "$base" "$n"
        for r in $(seq 1 "$runs"); do
            for fab in ibsim ours; do
                printf '%6d hosts, run %d, %-5s (load %s):\n' "$n" "$r" "$fab" "$(cut -d' ' -f1 /proc/loadavg)"
                probe_run "$fab" "$base/$fab" "$n" | sed 's/^/    /'
            done
        done
    done
    exit 0
fi

echo "== OpenSM sweep: ibsim against our fabric (ipoib ibsim-server --sm none --no-join), $runs runs each, interleaved"
echo "   first complete sweep: LIDs, LFTs, ports Active; from OpenSM's start to its first dump listing every CA link"
for n in "${sizes[@]}"; do
    base="$dir/opensm-$n"
    fabric_dirs "$base" "$n"
    best_ib=""; best_ours=""; all_ib=""; all_ours=""
    for r in $(seq 1 "$runs"); do
        load=$(cut -d' ' -f1 /proc/loadavg)
        for fab in ibsim ours; do
            read -r secs active rss < <(sweep "$fab" "$base/$fab" "$n")
            printf '%6d hosts, run %d, %-5s: sweep %s s, %d CA links Active, OpenSM RSS %s KiB (load %s)\n' \
                "$n" "$r" "$fab" "$secs" "$active" "$rss" "$load"
            if [ -f "$base/$fab/strace" ]; then
                # strace -c's table: "% seconds usecs/call calls [errors] syscall", then "total".
                printf '        server system calls: %s\n' "$(awk '$1 ~ /^[0-9.]+$/ && NF >= 5 && $NF != "total" {
                    printf "%s%s %s", sep, $NF, $4; sep = ", " } $NF == "total" { printf "; total %s", $4 }' \
                    "$base/$fab/strace")"
            fi
            [ "$secs" != - ] || continue
            if [ "$fab" = ibsim ]; then
                all_ib="$all_ib $secs"
                if [ -z "$best_ib" ] || [ "$(echo "$secs < $best_ib" | bc)" = 1 ]; then best_ib=$secs; fi
            else
                all_ours="$all_ours $secs"
                if [ -z "$best_ours" ] || [ "$(echo "$secs < $best_ours" | bc)" = 1 ]; then best_ours=$secs; fi
            fi
        done
    done
    if [ -f "$base/ibsim/opensm-subnet.lst" ] && [ -f "$base/ours/opensm-subnet.lst" ]; then
        links "$base/ibsim/opensm-subnet.lst" > "$base/ibsim/links"
        links "$base/ours/opensm-subnet.lst" > "$base/ours/links"
        if cmp -s "$base/ibsim/links" "$base/ours/links"; then
            same="the same $(wc -l < "$base/ours/links") link ends (nodes, GUIDs, LIDs, ports, width, speed, state)"
        else
            same="DIFFERENT: $(diff "$base/ibsim/links" "$base/ours/links" | grep -c '^[<>]') lines differ (diff $base/ibsim/links $base/ours/links)"
        fi
        printf '%6d hosts: OpenSM dumps of the last runs: %s\n' "$n" "$same"
    fi
    if [ -n "$best_ib" ] && [ -n "$best_ours" ]; then
        printf '%6d hosts: best of %d: ibsim %s s (runs:%s), ours %s s (runs:%s); ours / ibsim %.2f\n' \
            "$n" "$runs" "$best_ib" "$all_ib" "$best_ours" "$all_ours" "$(echo "$best_ours / $best_ib" | bc -l)"
    fi
done

[ "${BENCH_SKIP_JOINS:-0}" = 1 ] && exit 0
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
