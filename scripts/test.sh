#!/usr/bin/env bash
# Runs every test of the project. On a fresh Debian machine with Rust it first installs the independent
# peers the tests check us against (tshark, ibsim-utils, opensm, infiniband-diags, iperf3) and the tools
# the end-to-end tests run inside the lab's hosts (ping, ip and ss, python3), when missing and when it can
# (as root, through apt-get). Tests that need a peer which could not be installed say so and skip (cargo
# shows a passing test's words only on failure, so this script names the missing tools before and after
# the tests); everything else must pass.
set -euo pipefail
cd "$(dirname "$0")/.."

need=()
command -v tshark >/dev/null 2>&1 || need+=(tshark)
command -v ibsim >/dev/null 2>&1 || need+=(ibsim-utils)
command -v opensm >/dev/null 2>&1 || need+=(opensm)
command -v saquery >/dev/null 2>&1 || need+=(infiniband-diags)
command -v iperf3 >/dev/null 2>&1 || need+=(iperf3)
command -v ping >/dev/null 2>&1 || need+=(iputils-ping)
{ command -v ip && command -v ss; } >/dev/null 2>&1 || need+=(iproute2)
command -v python3 >/dev/null 2>&1 || need+=(python3)
if [ ${#need[@]} -gt 0 ]; then
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
        echo "== installing test peers: ${need[*]}"
        export DEBIAN_FRONTEND=noninteractive
        # tshark asks whether non-root users may capture; answer no without a prompt.
        echo "wireshark-common wireshark-common/install-setuid boolean false" | debconf-set-selections 2>/dev/null || true
        apt-get update -qq || echo "warning: apt-get update failed"
        apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null ||
            echo "warning: could not install ${need[*]}; tests that need them will skip"
    else
        echo "warning: missing ${need[*]} and not root: tests that need them will skip"
    fi
fi

export CARGO_TERM_COLOR=never
echo "== build"
cargo build --workspace --all-targets --locked 2>&1 | tail -n 3
echo "== fuzz targets (build only)"
cargo build --manifest-path fuzz/Cargo.toml --bins --locked 2>&1 | tail -n 2
echo "== format, lints, docs"
cargo fmt --all -- --check
cargo clippy --workspace --all-targets --locked -q -- -D warnings
RUSTDOCFLAGS="-D warnings" cargo doc --workspace --no-deps --locked -q
missing=()
for t in tshark ibsim opensm saquery iperf3 ping ip ss python3; do
    command -v "$t" >/dev/null 2>&1 || missing+=("$t")
done
[ "$(id -u)" = 0 ] || missing+=("root")
skips() {
    [ ${#missing[@]} -eq 0 ] ||
        echo "warning: without ${missing[*]} the tests that need them pass without running (they skip)"
}
skips
echo "== tests"
# Every test binary runs even after one fails, so that a failure shows all the others.
cargo test --workspace --all-targets --locked --no-fail-fast
skips
