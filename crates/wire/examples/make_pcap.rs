//! Writes a capture of `N` InfiniBand packets for `scripts/bench-decode.sh`: a set of packets
//! repeated, with the PSN of IBA packets advancing on each pass and both CRCs recomputed, as ERF
//! type 21 records (pcap link type 197, which both `ipoib decode` and tshark read) or bare
//! (link type 247). Sets:
//! - `mixed` (default): the traffic-like mix of `benches/common` (UD IPoIB ICMP, small and full
//!   2048-byte MTU, with and without GRH; ARP broadcast; SA PathRecord query; RC ACK;
//!   connected-mode RC SEND);
//! - `samples`: `ipoib_wire::samples::all()`, one packet of every kind (mostly SA and CM MADs).
//!
//! Usage: `cargo run --release -p ipoib-wire --example make_pcap -- N OUT.pcap [mixed|samples] [erf|ib]`

#[path = "../benches/common/mod.rs"]
mod common;

use ipoib_wire::packet::fill_crcs;
use ipoib_wire::pcap::{LinkType, PcapWriter};
use std::io::{BufWriter, Write};
use std::process::ExitCode;

/// Byte offset of the BTH PSN in a packet, given its LNH; `None` for a raw packet.
fn psn_offset(packet: &[u8]) -> Option<usize> {
    match packet[1] & 3 {
        2 => Some(8 + 9),
        3 => Some(8 + 40 + 9),
        _ => None,
    }
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (n, path) = match (args.first().map(|s| s.parse::<u64>()), args.get(1)) {
        (Some(Ok(n)), Some(p)) => (n, p.clone()),
        _ => {
            eprintln!("usage: make_pcap N OUT.pcap [mixed|samples] [erf|ib]");
            return ExitCode::from(2);
        }
    };
    let mut set = match args.get(2).map(String::as_str) {
        None | Some("mixed") => common::mixed(),
        Some("samples") => ipoib_wire::samples::all()
            .into_iter()
            .map(|s| s.bytes)
            .collect(),
        Some(other) => {
            eprintln!("make_pcap: set {other:?}: expected mixed or samples");
            return ExitCode::from(2);
        }
    };
    let link = match args.get(3).map(String::as_str) {
        None | Some("erf") => LinkType::Erf,
        Some("ib") => LinkType::Infiniband,
        Some(other) => {
            eprintln!("make_pcap: link type {other:?}: expected erf or ib");
            return ExitCode::from(2);
        }
    };
    let file = match std::fs::File::create(&path) {
        Ok(f) => f,
        Err(e) => {
            eprintln!("make_pcap: {path}: {e}");
            return ExitCode::from(2);
        }
    };
    let result = (|| -> std::io::Result<u64> {
        let mut w = PcapWriter::new(BufWriter::with_capacity(1 << 20, file), link)?;
        let mut bytes = 0u64;
        let t0: u64 = 1_700_000_000_000_000_000;
        for i in 0..n {
            let kinds = set.len() as u64;
            let p = &mut set[(i % kinds) as usize];
            // Each pass over the set advances the PSN, so packets differ as in a real capture.
            if let Some(off) = psn_offset(p) {
                let psn = (i / kinds) as u32 & 0x00ff_ffff;
                p[off..off + 3].copy_from_slice(&psn.to_be_bytes()[1..]);
                fill_crcs(p)
                    .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidData, e))?;
            }
            w.write_packet(t0 + i * 1000, p)?;
            bytes += p.len() as u64;
        }
        let mut out = w.into_inner()?;
        out.flush()?;
        Ok(bytes)
    })();
    match result {
        Ok(bytes) => {
            eprintln!("make_pcap: wrote {n} packets ({bytes} packet bytes) to {path}");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("make_pcap: {path}: {e}");
            ExitCode::from(1)
        }
    }
}
