#!/usr/bin/env bash
# IPoIB connected mode (RFC 4755) on the emulated subnet, for docs/benchmarks/connected.md:
#
#   scripts/bench-connected.sh [RUNS] [BULK_BYTES] [HOSTS]   (defaults: 3, 134217728, 100)
#
# Runs crates/runtime/examples/connected.rs RUNS times (release build) and prints each run's figures
# and the best of each: bulk throughput host to host across one switch with capture off, 65,520-byte
# IP packets in connected mode and 2,044-byte ones in datagram mode, in wall time and in simulated
# time, beside a memcpy of the same bytes measured in the same run; and the wall time to connect
# every ordered pair of HOSTS hosts (HOSTS × (HOSTS − 1) connections).
set -euo pipefail
cd "$(dirname "$0")/.."

runs=${1:-3}
bulk=${2:-134217728}
hosts=${3:-100}

echo "== build (release)"
cargo build --release -q -p ipoib-runtime --example connected
target=$(cargo metadata --format-version 1 --no-deps 2>/dev/null |
    sed -n 's/.*"target_directory":"\([^"]*\)".*/\1/p')
bin="${target:-target}/release/examples/connected"

out=$(mktemp)
trap 'rm -f "$out"' EXIT
for r in $(seq 1 "$runs"); do
    echo "== run $r"
    "$bin" "$bulk" "$hosts" 2>/dev/null | tee -a "$out"
done
echo "== best of $runs"
awk '
    / / { k = $1; v = $2 + 0
          if (k ~ /_s$/) { if (!(k in best) || v < best[k]) best[k] = v }
          else if (!(k in best) || v > best[k]) best[k] = v }
    END { for (k in best) printf "%s %s\n", k, best[k] }' "$out" | sort
