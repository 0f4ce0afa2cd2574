#!/usr/bin/env bash
# Decode throughput: `ipoib decode --json` against tshark on the same capture.
#
#   scripts/bench-decode.sh [N] [RUNS] [SET]    (defaults: N=200000 packets, RUNS=3, SET=mixed)
#
# Builds the release `ipoib` binary and the `make_pcap` example, writes a capture of N packets as
# ERF type 21 records (pcap link type 197) from SET repeated:
#   mixed   - traffic-like (crates/wire/benches/common): UD IPoIB ICMP small and 2048-byte MTU with
#             and without GRH, ARP broadcast, SA PathRecord query, RC ACK, connected-mode RC SEND;
#   samples - ipoib_wire::samples::all(): one packet of every kind, mostly SA and CM MADs;
# then times, best of RUNS:
#   - ipoib decode --json FILE > /dev/null          (every field of every layer, as JSON lines)
#   - tshark -r FILE -T fields -e ... > /dev/null   (a set of LRH/GRH/BTH/DETH/CRC/IP/ICMP/ARP fields)
# and prints packets/s of each and the ratio. Uses hyperfine when installed, `date +%s.%N` otherwise.
# Works without tshark (says it is missing and times ipoib alone).
# Environment: BENCH_DIR (scratch directory, default a fresh mktemp -d), TSHARK (default tshark).
set -euo pipefail
cd "$(dirname "$0")/.."

n=${1:-200000}
runs=${2:-3}
set=${3:-mixed}
tshark=${TSHARK:-tshark}
dir=${BENCH_DIR:-$(mktemp -d)}
mkdir -p "$dir"
pcap="$dir/decode-bench-$set-$n.pcap"

echo "== build (release)"
cargo build --release -q -p ipoib-cli --bin ipoib
cargo build --release -q -p ipoib-wire --example make_pcap
target=$(cargo metadata --format-version 1 --no-deps 2>/dev/null |
    sed -n 's/.*"target_directory":"\([^"]*\)".*/\1/p')
target=${target:-target}
ipoib="$target/release/ipoib"
make_pcap="$target/release/examples/make_pcap"

echo "== capture"
"$make_pcap" "$n" "$pcap" "$set"
echo "$(du -h "$pcap" | cut -f1) $pcap"

# Check first that both tools read the whole capture.
lines=$("$ipoib" decode --json "$pcap" | wc -l)
[ "$lines" = "$n" ] || { echo "ipoib decode printed $lines objects for $n packets" >&2; exit 1; }

fields=(
    -e frame.number
    -e infiniband.lrh.vl -e infiniband.lrh.lnh -e infiniband.lrh.dlid -e infiniband.lrh.pktlen
    -e infiniband.lrh.slid
    -e infiniband.grh.sgid -e infiniband.grh.dgid -e infiniband.grh.hoplmt
    -e infiniband.bth.opcode -e infiniband.bth.p_key -e infiniband.bth.destqp -e infiniband.bth.psn
    -e infiniband.deth.q_key -e infiniband.deth.srcqp
    -e infiniband.invariant.crc -e infiniband.variant.crc
    -e ip.src -e ip.dst -e ip.proto -e icmp.type -e icmp.seq -e arp.opcode
    -e infiniband.mad.method -e infiniband.mad.attributeid -e infiniband.mad.transactionid
)
have_tshark=0
if command -v "$tshark" >/dev/null 2>&1; then
    have_tshark=1
    tlines=$("$tshark" -r "$pcap" -T fields "${fields[@]}" 2>/dev/null | wc -l)
    [ "$tlines" = "$n" ] || { echo "tshark printed $tlines lines for $n packets" >&2; exit 1; }
else
    echo "tshark: missing ($tshark not found); timing ipoib decode alone"
fi

ipoib_cmd="$ipoib decode --json $pcap"
tshark_cmd="$tshark -r $pcap -T fields ${fields[*]}"

# calc EXPR: floating-point arithmetic without bc.
calc() { awk "BEGIN { printf \"%.12g\\n\", $1 }"; }

# best_of CMD: smallest wall time in seconds over $runs runs, output to /dev/null.
best_of() {
    local best="" t0 t1 t
    for _ in $(seq "$runs"); do
        t0=$(date +%s.%N)
        bash -c "$1" >/dev/null 2>&1
        t1=$(date +%s.%N)
        t=$(calc "$t1 - $t0")
        if [ -z "$best" ] || [ "$(calc "$t < $best")" = 1 ]; then best=$t; fi
    done
    echo "$best"
}

# hyperfine_min CMD: minimum time from hyperfine's JSON export.
hyperfine_min() {
    local json="$dir/hyperfine.json"
    hyperfine -N --style none --warmup 1 --runs "$runs" --export-json "$json" "$1" >/dev/null 2>&1
    sed -n 's/.*"min": *\([0-9.e-]*\).*/\1/p' "$json" | head -1
}

time_cmd() {
    if command -v hyperfine >/dev/null 2>&1; then hyperfine_min "$1"; else best_of "$1"; fi
}

if command -v hyperfine >/dev/null 2>&1; then timer=hyperfine; else timer="date +%s.%N, best of $runs"; fi
echo "== timing ($timer; load: $(cut -d' ' -f1-3 /proc/loadavg))"
t_ipoib=$(time_cmd "$ipoib_cmd")
rate_ipoib=$(calc "$n / $t_ipoib")
printf 'ipoib decode --json : %8.3f s  %12.0f packets/s\n' "$t_ipoib" "$rate_ipoib"
if [ "$have_tshark" = 1 ]; then
    t_tshark=$(time_cmd "$tshark_cmd")
    rate_tshark=$(calc "$n / $t_tshark")
    printf 'tshark -T fields    : %8.3f s  %12.0f packets/s  (%s)\n' "$t_tshark" "$rate_tshark" \
        "$("$tshark" --version 2>/dev/null | head -1)"
    printf 'ratio ipoib/tshark  : %8.1fx (aim: >= 100x)\n' "$(calc "$rate_ipoib / $rate_tshark")"
else
    echo "tshark -T fields    : missing"
fi
[ -n "${BENCH_DIR:-}" ] || rm -rf "$dir"
