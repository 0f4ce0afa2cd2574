#!/usr/bin/env bash
# `ipoib rping` and connection setup by IP address through the RDMA IP CM service (Annex A11) on
# the emulated subnet, for docs/benchmarks/connected.md:
#
#   scripts/bench-rping.sh [RUNS] [SIZE] [CONNECTIONS] [HOSTS]   (defaults: 3, 1073741824, 1000, 10)
#
# Each run (release build):
# - `ipoib rping --size SIZE --json --memcpy`: two hosts on one switch, capture off; the client
#   RDMA WRITEs SIZE bytes into the server's registered region and READs them back into a second
#   region, both compared byte for byte; wall and simulated time of each direction, beside a plain
#   memcpy of SIZE bytes into mapped pages timed in the same process (the anchor);
# - crates/runtime/examples/ipcm_setup.rs: CONNECTIONS connections between random pairs of HOSTS
#   hosts, started at once, each through ARP, a PathRecord and REQ/REP/RTU: wall time until all
#   are up on both sides.
# Prints each run's figures, then the best run whole: the rping run with the highest ratio to its
# own memcpy anchor, and the setup run with the lowest wall time (figures of one run each, never
# the best of each figure picked from different runs).
set -euo pipefail
cd "$(dirname "$0")/.."

runs=${1:-3}
size=${2:-1073741824}
conns=${3:-1000}
hosts=${4:-10}

echo "== build (release)"
cargo build --release -q -p ipoib-cli
cargo build --release -q -p ipoib-runtime --example ipcm_setup
target=$(cargo metadata --format-version 1 --no-deps 2>/dev/null |
    sed -n 's/.*"target_directory":"\([^"]*\)".*/\1/p')
target=${target:-target}

out=$(mktemp)
trap 'rm -f "$out"' EXIT
for r in $(seq 1 "$runs"); do
    echo "== run $r"
    json=$("$target/release/ipoib" rping --size "$size" --json --memcpy)
    python3 - "$json" <<'PY' | tee /dev/stderr | sed "s/^/$r /" >>"$out"
import json, sys
j = json.loads(sys.argv[1])
assert j["verified"], j
for k in ("write", "read"):
    p = j[k]
    print(f"rping_{k}_wall_gbps {p['wall_gbps']}")
    print(f"rping_{k}_sim_gbps {p['sim_gbps']}")
    print(f"rping_{k}_wall_s {p['wall_ns'] / 1e9:.4f}")
both = (j["write"]["wall_ns"] + j["read"]["wall_ns"]) / 1e9
print(f"rping_bytes {j['size']}")
print(f"rping_write_read_wall_gbps {2 * j['size'] / both / 1e9:.3f}")
print(f"memcpy_wall_gbps {j['memcpy']['wall_gbps']}")
print(f"rping_over_memcpy {2 * j['size'] / both / 1e9 / j['memcpy']['wall_gbps']:.3f}")
print(f"rping_process_wall_s {j['wall_ns'] / 1e9:.3f}")
PY
    "$target/release/examples/ipcm_setup" "$conns" "$hosts" | tee /dev/stderr | sed "s/^/$r /" >>"$out"
done
echo "== best run of $runs (each figure from that run)"
awk '
    { v[$1, $2] = $3; runs[$1] = 1 }
    $2 == "rping_over_memcpy" && (r == "" || $3 + 0 > v[r, $2] + 0) { r = $1 }
    $2 == "setup_wall_s" && (q == "" || $3 + 0 < v[q, $2] + 0) { q = $1 }
    END {
        for (k in v) {
            split(k, p, SUBSEP)
            if ((p[2] !~ /^setup_/ && p[1] == r) || (p[2] ~ /^setup_/ && p[1] == q))
                printf "%s %s (run %s)\n", p[2], v[k], p[1]
        }
    }' "$out" | sort
