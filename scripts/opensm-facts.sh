#!/usr/bin/env bash
# Reproduces the OpenSM facts of docs/OPENSM-NOTES.md ("partitions.conf", "P_Key tables",
# "Directed routes"): runs OpenSM 3.3 on ibsim (Debian packages opensm, ibsim-utils,
# infiniband-diags) for each case and prints what OpenSM logged and what the SA and the ports hold.
#
#   scripts/opensm-facts.sh            # every case
#   scripts/opensm-facts.sh empty mtu  # some of them
#
# Cases: empty comment mtu mtu6 rate rate23 sideways duppkey dupname pkeys100 chain62 chain63.
# Each takes about 8 s. Everything lives in a temporary directory, removed at the end; the ibsim
# and OpenSM processes this script started are killed on every exit path.
set -euo pipefail

for tool in ibsim ibsim-run opensm saquery smpquery; do
    command -v "$tool" >/dev/null || { echo "missing $tool" >&2; exit 2; }
done

work=$(mktemp -d)
pids=()
cleanup() {
    for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
    wait 2>/dev/null || true
    rm -rf "$work"
}
trap cleanup EXIT INT TERM

# One switch, two single-port HCAs (ibsim's GUIDs: Hca1 port 0x100001, Hca2 port 0x100003).
small_net() {
    printf 'Switch\t8 "Switch1"\n[1]\t"Hca1"[1]\n[4]\t"Hca2"[1]\n\n'
    printf 'Hca\t1 "Hca1"\n[1]\t"Switch1"[1]\n\nHca\t1 "Hca2"\n[1]\t"Switch1"[4]\n'
}

# N switches in a line, H0 on the first, H1 on the last.
chain_net() {
    local n=$1 i
    for ((i = 0; i < n; i++)); do
        echo "Switch 4 \"S$i\""
        if ((i == 0)); then echo '[1] "H0"[1]'; fi
        if ((i == n - 1)); then echo '[1] "H1"[1]'; fi
        if ((i > 0)); then echo "[2] \"S$((i - 1))\"[3]"; fi
        if ((i < n - 1)); then echo "[3] \"S$((i + 1))\"[2]"; fi
        echo
    done
    printf 'Hca 1 "H0"\n[1] "S0"[1]\n\nHca 1 "H1"\n[1] "S%d"[1]\n' $((n - 1))
}

# run NAME NET SM_NODE PROBE_NODE [PARTITIONS_TEXT]
run() {
    local name=$1 net=$2 sm=$3 probe=$4 parts=${5-}
    local dir=$work/$name
    mkdir -p "$dir"
    printf '%s' "$net" >"$dir/net"
    local args=(-F /dev/null -f "$dir/opensm.log" -D 0xff --dump_files_dir "$dir")
    if [[ -n $parts || $# -ge 5 ]]; then
        printf '%s' "$parts" >"$dir/partitions.conf"
        args+=(-P "$dir/partitions.conf")
    fi
    export IBSIM_SOCKNAME="facts$$$name"
    (cd "$dir" && exec ibsim -s -n net) >"$dir/ibsim.out" 2>&1 &
    local ib=$!
    pids+=("$ib")
    sleep 1
    SIM_HOST=$sm OSM_CACHE_DIR=$dir OSM_TMP_DIR=$dir ibsim-run opensm "${args[@]}" \
        >"$dir/opensm.out" 2>&1 &
    local osm=$!
    pids+=("$osm")
    sleep 7
    echo "=== $name"
    grep -E 'PARSE|ERR |in error|Duplicated|Calculated' "$dir/opensm.log" |
        sed 's/^.* -> //' | sort | uniq -c | sed 's/^ *//' | head -12 || true
    SIM_HOST=$probe ibsim-run saquery -g 2>/dev/null | grep -E 'MGID|Mtu|Rate' || true
    SIM_HOST=$probe ibsim-run smpquery -D pkeys 0 1 2>/dev/null | head -3 || true
    SIM_HOST=$probe ibsim-run smpquery -D portinfo 0 1 2>/dev/null | grep -E '^(Lid|SMLid|LinkState)' || true
    kill "$osm" 2>/dev/null || true
    sleep 0.5
    kill "$ib" 2>/dev/null || true
    wait "$osm" "$ib" 2>/dev/null || true
}

case_run() {
    local sw
    sw=$(small_net)
    case $1 in
    empty) run empty "$sw" Hca1 Hca2 "" ;;
    comment) run comment "$sw" Hca1 Hca2 $'# only a comment\n\n' ;;
    mtu) run mtu "$sw" Hca1 Hca2 $'Default=0x7fff, ipoib, mtu=99 : ALL=full ;\n' ;;
    mtu6) run mtu6 "$sw" Hca1 Hca2 $'Default=0x7fff, ipoib, mtu=6 : ALL=full ;\n' ;;
    rate) run rate "$sw" Hca1 Hca2 $'Default=0x7fff, ipoib, rate=77, sl=99, scope=99 : ALL=full ;\n' ;;
    rate23) run rate23 "$sw" Hca1 Hca2 $'Default=0x7fff, ipoib, rate=23 : ALL=full ;\n' ;;
    sideways) run sideways "$sw" Hca1 Hca2 $'Default=0x7fff, ipoib : ALL=sideways ;\n' ;;
    duppkey) run duppkey "$sw" Hca1 Hca2 \
        $'Default=0x7fff, ipoib : ALL=full ;\nA=0x10, ipoib : ALL=full ;\nB=0x10 : ALL=full ;\n' ;;
    dupname) run dupname "$sw" Hca1 Hca2 \
        $'Default=0x7fff, ipoib : ALL=full ;\nA=0x10, ipoib : ALL=full ;\nA=0x20, ipoib : ALL=full ;\n' ;;
    pkeys100)
        local p i
        p=$'Default=0x7fff, ipoib : ALL=full ;\n'
        for ((i = 1; i <= 100; i++)); do p+=$(printf 'P%d=0x%x : ALL=full ;\n' "$i" "$i")$'\n'; done
        run pkeys100 "$sw" Hca1 Hca2 "$p"
        ;;
    chain62) run chain62 "$(chain_net 62)" H0 H1 ;;
    chain63) run chain63 "$(chain_net 63)" H0 H1 ;;
    *) echo "unknown case $1" >&2; exit 2 ;;
    esac
}

cases=("$@")
if ((${#cases[@]} == 0)); then
    cases=(empty comment mtu mtu6 rate rate23 sideways duppkey dupname pkeys100 chain62 chain63)
fi
for c in "${cases[@]}"; do case_run "$c"; done
