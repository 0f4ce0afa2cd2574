//! Benchmark: the round trip of one directed-route SMP through an ibsim server, ibsim itself or
//! ours (`ipoib ibsim-server`), without OpenSM: what the fabric's server adds per MAD to an SM's
//! sweep (docs/benchmarks/subnet.md, "A per-MAD probe").
//!
//! ```sh
//! IBSIM_SOCKNAME=S cargo run --release -p ipoib-runtime --example smp_probe -- \
//!     [--hosts N] [--count C] [--window W]... [--hops H] [--json]
//! ```
//!
//! Attaches one ibsim client to `h0` of the running server's two-level fat tree of N hosts (the
//! shape of `Topology::fat_tree(N)` and of scripts/bench-sim.sh's net file: h0 on leaf0's port
//! 1, leaf `l`'s spine ports after its host ports, spine `s`'s port `l + 1` to leaf `l`), then
//! for each W sends C SubnGet SMPs by directed route (IBA 1 §14.2.2; DrSLID and DrDLID
//! permissive, as OpenSM sends them before LIDs are assigned) with W outstanding, as OpenSM's
//! `max_wire_smps` (default 4) keeps its sweep's SMPs. The targets turn in a fixed order through
//! NodeInfo and PortInfo of leaf0 (1 hop), a spine (2), a far leaf (3) and a far host (4), or
//! only those `--hops H` away. It prints, per W, the median, 90th and 99th percentile round
//! trip (send to matching answer, TransactionID's low 48 bits, `IbsimClient`) and the SMPs
//! answered per second. Bounded: an answer missing for 2 s ends the run with status 2. Not run by
//! the test suite (benchmark only).

use std::collections::BTreeMap;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use ipoib_runtime::ibsim::msg::MAD_LEN;
use ipoib_runtime::ibsim::IbsimClient;
use ipoib_wire::mad::attr::smp::{NODE_INFO, PORT_INFO};

/// How long an answer may be missing before the run gives up.
const ANSWER_TIMEOUT: Duration = Duration::from_secs(2);
/// TIDs are `TID_BASE + index` in the low 48 bits (the server owns the top 16).
const TID_BASE: u64 = 0x50_0000_0000;

/// Round trip of directed-route SMPs through a running ibsim server (`IBSIM_SOCKNAME`).
#[derive(clap::Parser)]
struct Args {
    /// Hosts of the server's fat tree (at least 64: a far leaf and host).
    #[arg(long, default_value_t = 1000, value_parser = clap::value_parser!(u64).range(64..))]
    hosts: u64,
    /// SMPs sent per window.
    #[arg(long, default_value_t = 20_000, value_parser = clap::value_parser!(u64).range(1..))]
    count: u64,
    /// SMPs outstanding (repeat for several runs; default 1 and 4).
    #[arg(long = "window", value_parser = clap::value_parser!(u64).range(1..))]
    windows: Vec<u64>,
    /// Only targets this many hops away.
    #[arg(long, value_parser = clap::value_parser!(u8).range(1..=4))]
    hops: Option<u8>,
    /// One JSON line per window.
    #[arg(long)]
    json: bool,
}

/// The directed routes from h0 (its port 1) to leaf0, spine `s`, leaf `l` and a host of leaf `l`
/// in the fat tree of `n` hosts (scripts/bench-sim.sh `netfile`).
fn targets(n: usize, hops: Option<u8>) -> Vec<(Vec<u8>, u16, u32)> {
    let mut down = 18;
    while n.div_ceil(down) > 2 * down {
        down += 1;
    }
    let leaves = n.div_ceil(down);
    let (s, l) = (down / 2, leaves - 1);
    let spine_port = (down + 1 + s) as u8;
    let host_port = ((n - 1 - l * down) % down + 1) as u8;
    let routes = [
        vec![1],
        vec![1, spine_port],
        vec![1, spine_port, (l + 1) as u8],
        vec![1, spine_port, (l + 1) as u8, host_port],
    ];
    let mut out = Vec::new();
    for r in routes {
        if hops.is_some_and(|h| usize::from(h) != r.len()) {
            continue;
        }
        // NodeInfo; PortInfo of the port the SMP came in by (modifier 0) and of port 1.
        out.push((r.clone(), NODE_INFO, 0));
        out.push((r.clone(), PORT_INFO, 0));
        out.push((r, PORT_INFO, 1));
    }
    out
}

/// SubnGet(attr, modifier) by directed route along `path` (IBA 1 §14.2.1.2).
fn dr_get(tid: u64, path: &[u8], attr: u16, modifier: u32) -> [u8; MAD_LEN] {
    let mut b = [0u8; MAD_LEN];
    b[0..4].copy_from_slice(&[1, 0x81, 1, 0x01]); // BaseVersion, SubnDirectedRoute, 1, Get
    b[7] = path.len() as u8; // HopPointer 0, HopCount
    b[8..16].copy_from_slice(&tid.to_be_bytes());
    b[16..18].copy_from_slice(&attr.to_be_bytes());
    b[20..24].copy_from_slice(&modifier.to_be_bytes());
    b[32..36].copy_from_slice(&[0xff; 4]); // DrSLID, DrDLID permissive
    b[129..129 + path.len()].copy_from_slice(path); // InitialPath[1..]
    b
}

struct Run {
    window: usize,
    rtt_ns: Vec<u64>,
    wall: Duration,
    bad_status: usize,
}

fn run(
    c: &IbsimClient,
    targets: &[(Vec<u8>, u16, u32)],
    count: usize,
    window: usize,
) -> Result<Run, String> {
    let mut sent_at: BTreeMap<u64, Instant> = BTreeMap::new();
    let mut rtt_ns = Vec::with_capacity(count);
    let mut next = 0usize;
    let mut bad_status = 0;
    let start = Instant::now();
    while rtt_ns.len() < count {
        while next < count && sent_at.len() < window {
            let (path, attr, m) = &targets[next % targets.len()];
            let tid = TID_BASE + next as u64;
            sent_at.insert(tid, Instant::now());
            c.send_mad(0xffff, 0, &dr_get(tid, path, *attr, *m))
                .map_err(|e| format!("send: {e}"))?;
            next += 1;
        }
        let Some(r) = c.recv(ANSWER_TIMEOUT).map_err(|e| format!("recv: {e}"))? else {
            return Err(format!(
                "no answer within {ANSWER_TIMEOUT:?} ({} answered)",
                rtt_ns.len()
            ));
        };
        let mut t = [0u8; 8];
        t.copy_from_slice(&r.mad[8..16]);
        let tid = u64::from_be_bytes(t) & 0xffff_ffff_ffff;
        let Some(at) = sent_at.remove(&tid) else {
            continue;
        };
        rtt_ns.push(at.elapsed().as_nanos() as u64);
        // Status without the D bit (IBA 1 §14.2.1.2).
        if r.head.status != 0 || u16::from_be_bytes([r.mad[4], r.mad[5]]) & 0x7fff != 0 {
            if bad_status == 0 && std::env::var_os("SMP_PROBE_DEBUG").is_some() {
                eprintln!("status {} mad {:02x?}", r.head.status, &r.mad[..64]);
            }
            bad_status += 1;
        }
    }
    Ok(Run {
        window,
        rtt_ns,
        wall: start.elapsed(),
        bad_status,
    })
}

fn pct(sorted: &[u64], p: usize) -> f64 {
    sorted[(sorted.len() * p / 100).min(sorted.len() - 1)] as f64 / 1000.0
}

fn main() -> ExitCode {
    let mut args = <Args as clap::Parser>::parse();
    if args.windows.is_empty() {
        args.windows = vec![1, 4];
    }
    let c = match IbsimClient::connect(Some("h0"), 0, false) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("smp_probe: cannot attach to h0: {e}");
            return ExitCode::from(2);
        }
    };
    let targets = targets(args.hosts as usize, args.hops);
    // A warm-up (first touches of both sides' buffers and tables), not counted.
    if let Err(e) = run(&c, &targets, 500, 4) {
        eprintln!("smp_probe: warm-up: {e}");
        return ExitCode::from(2);
    }
    for &w in &args.windows {
        let mut r = match run(&c, &targets, args.count as usize, w as usize) {
            Ok(r) => r,
            Err(e) => {
                eprintln!("smp_probe: window {w}: {e}");
                return ExitCode::from(2);
            }
        };
        r.rtt_ns.sort_unstable();
        let per_s = r.rtt_ns.len() as f64 / r.wall.as_secs_f64();
        let (p50, p90, p99) = (pct(&r.rtt_ns, 50), pct(&r.rtt_ns, 90), pct(&r.rtt_ns, 99));
        let hops = args.hops.map_or("1-4".to_string(), |h| h.to_string());
        if args.json {
            println!(
                "{{\"window\":{},\"count\":{},\"hops\":\"{hops}\",\"p50_us\":{p50:.1},\"p90_us\":{p90:.1},\
                 \"p99_us\":{p99:.1},\"per_s\":{per_s:.0},\"bad_status\":{}}}",
                r.window,
                r.rtt_ns.len(),
                r.bad_status
            );
        } else {
            println!(
                "window {}: {} SMPs ({hops} hops), round trip p50 {p50:.1} us p90 {p90:.1} us \
                 p99 {p99:.1} us, {per_s:.0} SMPs/s{}",
                r.window,
                r.rtt_ns.len(),
                if r.bad_status > 0 {
                    format!(", {} with an error status", r.bad_status)
                } else {
                    String::new()
                }
            );
        }
    }
    ExitCode::SUCCESS
}
