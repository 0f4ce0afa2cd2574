#!/usr/bin/env bash
# The Linux IP stack run over a link between two network namespaces, for docs/benchmarks/ip.md ("IP
# baselines for the lab" and "IP over our link against the relay"): our emulated IPoIB (`ipoib
# lab` and `ipoib attach`, the IP stack over TUN devices) next to the baselines it is compared
# with, all measured in the same run.
#
#   scripts/bench-ip.sh            (as root; needs ip, iperf3, ping, ss, python3)
#   BENCH_LINKS="relay udp-relay udp" scripts/bench-ip.sh   (only those links; the default is
#                                  "veth relay lab udp udp-relay")
#   BENCH_IPOIB=/path/to/ipoib scripts/bench-ip.sh   (the `ipoib` binary measured instead of this
#                                  tree's release build: old and new binaries alternately)
#   BENCH_UDP_ARGS="--busy-poll-us 300" scripts/bench-ip.sh   (more arguments for `ipoib fabric`
#                                  and `ipoib attach` on the udp links)
#   BENCH_LAB_ARGS="--rt-priority 1" scripts/bench-ip.sh   (more arguments for `ipoib lab`:
#                                  this one puts its emulation thread under SCHED_FIFO, so that no
#                                  round trip waits for the scheduler; on a loaded machine it
#                                  costs datagram mode throughput, docs/benchmarks/lab-connected.md)
#
# For each MTU of 2044 (IPoIB datagram mode, RFC 4391 §3) and 65520 (the connected-mode maximum,
# RFC 4755 §3.3, and the ceiling of a TUN-based link) and each link:
# - veth: a veth pair, one end in each namespace (the kernel's own path, no user space);
# - relay: two TUN devices, one in each namespace, and crates/runtime/examples/tun_relay.rs in the
#   root namespace copying packets between them (the bare user-space path);
# it makes the namespaces ipb-a and ipb-b, gives 10.250.0.1/24 (ipb-a) and 10.250.0.2/24 (ipb-b)
# to the two ends, and measures from ipb-a to ipb-b one iperf3 TCP stream for 3 s (receiver's
# rate) and `ping -c 20 -i 0.05` (average and minimum round trip). Each case gets fresh
# namespaces.
#
# Then our link, measured the same way from host h1 to host h2 (10.0.0.2) of a 2-host `ipoib lab`
# (release build; namespaces ipoib-h1 and ipoib-h2): lab-dgram in datagram mode (MTU 2044) and
# lab-conn in connected mode (MTU 65520); and the subnet across processes: `ipoib fabric` on a
# loopback UDP port with two `ipoib attach` processes, their TUN devices in ipb-a and ipb-b
# (udp-dgram, udp-conn); and udp-relay: crates/runtime/examples/udp_relay.rs, the same three
# processes and loopback UDP sockets with nothing emulated (two TUN ends cutting each packet into
# 4 KiB datagrams, a middle hop forwarding them), the floor of the fabric/attach architecture. It
# prints a table, the ratios relay/veth, each of ours against the relay
# at the same MTU, and connected against datagram mode. A lab already running is not touched:
# the script refuses to start.
#
# The namespaces, the relay, the lab and the fabric and attach processes are removed on every exit
# path (trap on EXIT, INT, TERM), and leftovers of a killed earlier run are removed at the start.
# Every wait is bounded, every command that talks to the network runs under `timeout`. Not run by
# scripts/test.sh or CI.
set -euo pipefail
cd "$(dirname "$0")/.."

NS_A=ipb-a
NS_B=ipb-b
ADDR_A=10.250.0.1
ADDR_B=10.250.0.2
MTUS="2044 65520"
LINKS=" ${BENCH_LINKS:-veth relay lab udp udp-relay} "
# want LINK: LINK is to be measured.
want() { [[ $LINKS == *" $1 "* ]]; }
LAB_STATE=/run/ipoib/lab/lab.json

[ "$(id -u)" = 0 ] || { echo "bench-ip.sh: needs root (network namespaces)" >&2; exit 2; }
for t in ip iperf3 ping ss python3 timeout; do
    command -v "$t" >/dev/null || { echo "bench-ip.sh: $t is missing" >&2; exit 2; }
done

relay_pid=
urelay_pids= # udp_relay: the two ends, then the hop
lab_pid=
udp_pids= # the attach processes, then the fabric
work=$(mktemp -d)
# The lab's and the attach processes' state and control sockets: a run directory of this run's
# own, so that an `ipoib lab down` of someone else's on the machine does not end our lab.
export IPOIB_RUN_DIR=$work/run

# stop_lab: ends the lab this script started (SIGTERM, SIGKILL after 10 s), then removes what
# is left of it. Returns the lab's exit status.
stop_lab() {
    local rc=0
    kill -TERM "$lab_pid" 2>/dev/null || true
    for _ in $(seq 1 100); do kill -0 "$lab_pid" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$lab_pid" 2>/dev/null || true
    wait "$lab_pid" || rc=$?
    lab_pid=
    "$ipoib_bin" lab down >/dev/null || rc=1
    return "$rc"
}

# stop_udp: SIGTERM to the attach processes, then the fabric (SIGKILL after 10 s each); returns
# the first non-zero exit status.
stop_udp() {
    local rc=0 p r
    for p in $udp_pids; do
        kill -TERM "$p" 2>/dev/null || true
        for _ in $(seq 1 100); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
        kill -KILL "$p" 2>/dev/null || true
        r=0
        wait "$p" || r=$?
        [ "$rc" != 0 ] || rc=$r
    done
    udp_pids=
    return "$rc"
}

# stop_urelay: ends the udp_relay processes (SIGTERM ends them).
stop_urelay() {
    local p
    for p in $urelay_pids; do
        kill -TERM "$p" 2>/dev/null || true
        wait "$p" 2>/dev/null || true
    done
    urelay_pids=
}

cleanup() {
    if [ -n "$urelay_pids" ]; then
        stop_urelay
    fi
    if [ -n "$lab_pid" ]; then
        stop_lab || true
    fi
    if [ -n "$udp_pids" ]; then
        stop_udp || true
    fi
    if [ -n "$relay_pid" ]; then
        kill -TERM "$relay_pid" 2>/dev/null || true
        for _ in $(seq 1 50); do kill -0 "$relay_pid" 2>/dev/null || break; sleep 0.1; done
        kill -KILL "$relay_pid" 2>/dev/null || true
        wait "$relay_pid" 2>/dev/null || true
        relay_pid=
    fi
    # Deleting a namespace does not end the processes in it (an iperf3 server, a ping): end them.
    for ns in "$NS_A" "$NS_B"; do
        if ip netns list | grep -qw "$ns"; then
            for p in $(ip netns pids "$ns" 2>/dev/null); do kill -KILL "$p" 2>/dev/null || true; done
            ip netns del "$ns" 2>/dev/null || true
        fi
    done
    # A veth end or relay device left in the root namespace by an interrupted setup.
    for dev in ipb-va ipb-vb ipb-ta ipb-tb ipb-ra ipb-rb; do ip link del "$dev" 2>/dev/null || true; done
}
trap 'cleanup; rm -rf "$work"' EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
# Long commands run through `fg_wait` (background + wait) so that a signal runs the trap at once
# instead of after the command: `timeout` puts its child in a process group of its own, which a
# Ctrl-C on the terminal does not reach.
fg_wait() {
    "$@" &
    wait $!
}

! want lab || [ ! -e "$LAB_STATE" ] || {
    echo "bench-ip.sh: a lab runs ($LAB_STATE; its namespaces are the ones ours would take)" >&2
    exit 2
}
cleanup # leftovers of a killed earlier run
load_start=$(cut -d" " -f1-3 /proc/loadavg)

echo "== build (release)" >&2
cargo build --release -q -p ipoib-runtime --example tun_relay --example udp_relay
cargo build --release -q -p ipoib-cli --bin ipoib
target=$(cargo metadata --format-version 1 --no-deps 2>/dev/null |
    sed -n 's/.*"target_directory":"\([^"]*\)".*/\1/p')
relay_bin=${target:-target}/release/examples/tun_relay
urelay_bin=${target:-target}/release/examples/udp_relay
ipoib_bin=${BENCH_IPOIB:-${target:-target}/release/ipoib}

make_ns() {
    ip netns add "$NS_A"
    ip netns add "$NS_B"
    ip -n "$NS_A" link set lo up
    ip -n "$NS_B" link set lo up
}

# addr_up NS DEV ADDR MTU
addr_up() {
    ip -n "$1" link set "$2" mtu "$4"
    ip -n "$1" addr add "$3/24" dev "$2"
    ip -n "$1" link set "$2" up
}

setup_veth() {
    make_ns
    ip link add ipb-va type veth peer name ipb-vb
    ip link set ipb-va netns "$NS_A"
    ip link set ipb-vb netns "$NS_B"
    addr_up "$NS_A" ipb-va "$ADDR_A" "$1"
    addr_up "$NS_B" ipb-vb "$ADDR_B" "$1"
}

setup_relay() {
    make_ns
    "$relay_bin" ipb-ta ipb-tb "$1" >"$work/relay.out" 2>"$work/relay.err" &
    relay_pid=$!
    for _ in $(seq 1 100); do
        grep -q ready "$work/relay.out" 2>/dev/null && break
        kill -0 "$relay_pid" 2>/dev/null || break
        sleep 0.05
    done
    grep -q ready "$work/relay.out" || { cat "$work/relay.err" >&2; return 1; }
    ip link set ipb-ta netns "$NS_A"
    ip link set ipb-tb netns "$NS_B"
    addr_up "$NS_A" ipb-ta "$ADDR_A" "$1"
    addr_up "$NS_B" ipb-tb "$ADDR_B" "$1"
}

# setup_urelay MTU: examples/udp_relay.rs, its two ends' TUN devices in the namespaces, the hop
# in the middle, on fixed loopback ports.
URELAY_PORTS=(47990 47991 47992) # hop, end a, end b
setup_urelay() {
    make_ns
    local hop=${URELAY_PORTS[0]} pa=${URELAY_PORTS[1]} pb=${URELAY_PORTS[2]}
    "$urelay_bin" end ipb-ra "$1" "$pa" "$hop" >"$work/urelay-a.out" 2>&1 &
    urelay_pids="$!"
    "$urelay_bin" end ipb-rb "$1" "$pb" "$hop" >"$work/urelay-b.out" 2>&1 &
    urelay_pids="$urelay_pids $!"
    "$urelay_bin" hop "$hop" "$pa" "$pb" >"$work/urelay-hop.out" 2>&1 &
    urelay_pids="$urelay_pids $!"
    local f
    for f in a b hop; do
        for _ in $(seq 1 100); do
            grep -q ready "$work/urelay-$f.out" 2>/dev/null && break
            sleep 0.05
        done
        grep -q ready "$work/urelay-$f.out" || { cat "$work/urelay-$f.out" >&2; return 1; }
    done
    ip link set ipb-ra netns "$NS_A"
    ip link set ipb-rb netns "$NS_B"
    addr_up "$NS_A" ipb-ra "$ADDR_A" "$1"
    addr_up "$NS_B" ipb-rb "$ADDR_B" "$1"
}

# setup_lab MODE: a 2-host lab, up (it printed its hosts) within 60 s.
setup_lab() {
    : >"$work/lab.out" # as in setup_udp
    # shellcheck disable=SC2086 # BENCH_LAB_ARGS: words
    "$ipoib_bin" lab --hosts 2 --mode "$1" ${BENCH_LAB_ARGS:-} >"$work/lab.out" \
        2>"$work/lab.err" &
    lab_pid=$!
    for _ in $(seq 1 600); do
        grep -q '^Run `ipoib lab exec' "$work/lab.out" 2>/dev/null && break
        kill -0 "$lab_pid" 2>/dev/null || break
        sleep 0.1
    done
    grep -q '^Run `ipoib lab exec' "$work/lab.out" || { cat "$work/lab.err" >&2; return 1; }
}

# setup_udp MODE: `ipoib fabric` on a loopback UDP port and an `ipoib attach` for each namespace,
# both with carrier within 30 s.
setup_udp() {
    make_ns
    # Emptied here, not only by the redirection, which the background child opens after the loop
    # below may already have read the previous run's address.
    : >"$work/fabric.err"
    # shellcheck disable=SC2086 # BENCH_UDP_ARGS: words
    "$ipoib_bin" fabric --listen udp:127.0.0.1:0 --hosts 3 ${BENCH_UDP_ARGS:-} 2>"$work/fabric.err" &
    local fabric=$! addr=
    for _ in $(seq 1 300); do
        addr=$(sed -n 's/.*listening on \(udp:[0-9.]*:[0-9]*\).*/\1/p' "$work/fabric.err")
        [ -n "$addr" ] && break
        kill -0 "$fabric" 2>/dev/null || break
        sleep 0.1
    done
    [ -n "$addr" ] || { kill "$fabric"; cat "$work/fabric.err" >&2; return 1; }
    local side ns a pids=
    for side in a b; do
        ns=ipb-$side a=$ADDR_A
        [ "$side" = b ] && a=$ADDR_B
        # `ipoib show --netns ipb-a --dev ipb-ua` reads one (IPOIB_RUN_DIR as above).
        : >"$work/attach-$side.err"
        # shellcheck disable=SC2086 # BENCH_UDP_ARGS: words
        "$ipoib_bin" attach --fabric "$addr" --dev "ipb-u$side" --netns "$ns" --ip "$a/24" \
            --mode "$1" ${BENCH_UDP_ARGS:-} 2>"$work/attach-$side.err" &
        pids="$pids $!"
    done
    udp_pids="$pids $fabric"
    for side in a b; do
        for _ in $(seq 1 300); do
            grep -qs "carrier up" "$work/attach-$side.err" && break
            sleep 0.1
        done
        grep -q "carrier up" "$work/attach-$side.err" ||
            { cat "$work/attach-$side.err" >&2; return 1; }
    done
}

teardown() {
    if [ -n "$urelay_pids" ]; then
        stop_urelay
    fi
    if [ -n "$udp_pids" ]; then
        local rc=0
        stop_udp || rc=$?
        sed 's/^/  /' "$work/fabric.err" >&2
        [ "$rc" = 0 ] || { echo "bench-ip.sh: ipoib attach or fabric exited with $rc" >&2; return 1; }
    fi
    if [ -n "$lab_pid" ]; then
        local rc=0
        stop_lab || rc=$?
        sed 's/^/  /' "$work/lab.err" >&2
        [ "$rc" = 0 ] || { echo "bench-ip.sh: ipoib lab exited with $rc" >&2; return 1; }
    fi
    if [ -n "$relay_pid" ]; then
        kill -TERM "$relay_pid"
        local rc=0
        wait "$relay_pid" || rc=$?
        relay_pid=
        sed 's/^/  /' "$work/relay.err" >&2
        [ "$rc" = 0 ] || { echo "bench-ip.sh: tun_relay exited with $rc" >&2; return 1; }
    fi
    cleanup
}

# measure LABEL MTU [CLIENT_NS SERVER_NS SERVER_ADDR]: prints "LABEL MTU GBIT_S PING_AVG_MS
# PING_MIN_MS"
# (default: from ipb-a to ipb-b)
measure() {
    local ns_a=${3:-$NS_A} ns_b=${4:-$NS_B} addr_b=${5:-$ADDR_B}
    ip netns exec "$ns_b" timeout 30 iperf3 -s -1 -B "$addr_b" >"$work/server.out" 2>&1 &
    local server=$!
    for _ in $(seq 1 100); do
        ip netns exec "$ns_b" ss -ltn | grep -q "$addr_b:5201" && break
        sleep 0.05
    done
    local rc=0
    fg_wait ip netns exec "$ns_a" timeout 20 iperf3 -c "$addr_b" -t 3 -P 1 -J >"$work/client.json" ||
        rc=$?
    kill "$server" 2>/dev/null || true
    wait "$server" || true
    local gbps
    gbps=$(python3 - "$work/client.json" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
if "error" in j or "sum_received" not in j["end"]:
    sys.exit(j.get("error", "no result"))
print(f"{j['end']['sum_received']['bits_per_second'] / 1e9:.2f}")
PY
) || rc=1
    [ "$rc" = 0 ] || { echo "bench-ip.sh: iperf3 over $1 failed ($rc)" >&2; return 1; }
    local avg min
    fg_wait ip netns exec "$ns_a" timeout 20 ping -q -c 20 -i 0.05 "$addr_b" >"$work/ping.out" || true
    avg=$(sed -n 's|^rtt [^=]*= [^/]*/\([^/]*\)/.*|\1|p' "$work/ping.out")
    min=$(sed -n 's|^rtt [^=]*= \([^/]*\)/.*|\1|p' "$work/ping.out")
    [ -n "$avg" ] || { echo "bench-ip.sh: no ping answer over $1" >&2; return 1; }
    echo "$1 $2 $gbps $avg $min"
}

results="$work/results"
: >"$results"
for mtu in $MTUS; do
    if want veth; then
        echo "== veth, MTU $mtu" >&2
        setup_veth "$mtu"
        measure veth "$mtu" | tee -a "$results"
        teardown
    fi
    if want relay; then
        echo "== relay, MTU $mtu" >&2
        setup_relay "$mtu"
        measure relay "$mtu" | tee -a "$results"
        teardown
    fi
    if want udp-relay; then
        echo "== udp-relay (three processes over loopback UDP, nothing emulated), MTU $mtu" >&2
        setup_urelay "$mtu"
        measure udp-relay "$mtu" | tee -a "$results"
        teardown
    fi
done
for mode in datagram connected; do
    case $mode in
    datagram) label=lab-dgram mtu=2044 ;;
    connected) label=lab-conn mtu=65520 ;;
    esac
    if want lab; then
        echo "== ipoib lab, $mode mode ${BENCH_LAB_ARGS:-}" >&2
        setup_lab "$mode"
        measure "$label" "$mtu" ipoib-h1 ipoib-h2 10.0.0.2 | tee -a "$results"
        teardown
    fi
    if want udp; then
        echo "== ipoib fabric and two ipoib attach over loopback UDP, $mode mode" >&2
        setup_udp "$mode"
        measure "udp-${label#lab-}" "$mtu" | tee -a "$results"
        teardown
    fi
done

echo "== load average (1, 5, 15 min): $load_start at the start, $(cut -d' ' -f1-3 /proc/loadavg) at the end; $(nproc) cores"
python3 - "$results" <<'PY'
import sys
rows = {}
for line in open(sys.argv[1]):
    link, mtu, gbps, avg, low = line.split()
    rows[(link, int(mtu))] = (float(gbps), float(avg), float(low))
order = ["veth", "relay", "udp-relay"]
print(f"{'link':<9} {'MTU':>6} {'TCP Gbit/s':>11} {'ping avg ms':>12} {'ping min ms':>12}")
for (link, mtu), (g, a, m) in sorted(
    rows.items(), key=lambda kv: (kv[0][1], order.index(kv[0][0]) if kv[0][0] in order else 9)
):
    print(f"{link:<9} {mtu:>6} {g:>11.2f} {a:>12.3f} {m:>12.3f}")
print()
# Each link against a peer measured in this run: the relay against veth, ours against the relay
# at the same MTU (aims: the lab's TCP >= 0.8, over UDP >= 0.5, ping <= 2), connected against
# datagram mode (aim >= 4).
# The minimum round trip is the steadier figure on a loaded machine (the average follows the
# scheduler).
print(f"{'ratio':<22} {'MTU':>6} {'TCP':>6} {'ping avg':>9} {'ping min':>9}")
# The UDP path also against udp-relay, the floor of its architecture.
for (link, mtu), (g, a, m) in sorted(rows.items(), key=lambda kv: kv[0][1]):
    peers = ["veth"] if link == "relay" else [] if link == "veth" else ["relay"]
    if link.startswith("udp-") and link != "udp-relay":
        peers.append("udp-relay")
    for peer in peers:
        if (peer, mtu) in rows:
            gp, ap, mp = rows[(peer, mtu)]
            print(f"{link + '/' + peer:<22} {mtu:>6} {g / gp:>6.2f} {a / ap:>9.2f} {m / mp:>9.2f}")
for kind in ["lab", "udp"]:
    conn, dgram = (f"{kind}-conn", 65520), (f"{kind}-dgram", 2044)
    if conn in rows and dgram in rows:
        print(f"{conn[0] + '/' + dgram[0]:<22} {'':>6} {rows[conn][0] / rows[dgram][0]:>6.2f}")
PY
