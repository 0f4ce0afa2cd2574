//! Test support, for this crate's unit tests (`cfg(test)`) and, with the `testing` feature, for its
//! integration tests in `tests/`: seeded runs that print their seed when they fail and replay the
//! one `IPOIB_SEED` names, UD verbs shortcuts on a subnet's hosts ([`verbs`]), and a subnet whose
//! hosts run IPoIB ([`ipoib`]), net files several crates' tests share ([`nets`]), and two hosts
//! running the Communication Manager with what their capture shows of it ([`cm`]), and a subnet
//! whose hosts run the RDMA IP CM service ([`ipcm`]).
//!
//! A failing scenario prints `failing seed: 42 (replay with IPOIB_SEED=42)`; run it again with
//! `IPOIB_SEED=42 cargo test -p ipoib-fabric --test subnet_mcast` to get the same packets.

pub mod cm;
pub mod ipcm;
pub mod ipoib;
pub mod nets;
pub mod verbs;

pub use ipoib::{
    all_pairs, app, from_os, options, ping_pairs, rtt, run_for, run_until_attached, to_os, udp4,
    up, v4, v6, Sent,
};
pub use verbs::{received, send_ud, ud_qp};

use crate::Instant;
use std::time::Duration;

/// The environment variable that replays one seed.
pub const SEED_VAR: &str = "IPOIB_SEED";

/// The seed a scenario runs with: `default`, or the value of `IPOIB_SEED` when set, so that a seed
/// a failing run printed can be replayed.
pub fn seed(default: u64) -> u64 {
    replayed().unwrap_or(default)
}

/// The seeds a scenario runs over: `defaults`, or only the value of `IPOIB_SEED` when set.
pub fn seeds(defaults: impl IntoIterator<Item = u64>) -> Vec<u64> {
    match replayed() {
        Some(s) => vec![s],
        None => defaults.into_iter().collect(),
    }
}

fn replayed() -> Option<u64> {
    std::env::var(SEED_VAR).ok().and_then(|s| s.parse().ok())
}

/// Prints the seed when the test panics (replay it with `IPOIB_SEED`, see [`seed`]). Hold it for
/// as long as the seed runs: `let _g = SeedGuard(seed);`.
#[derive(Debug)]
pub struct SeedGuard(pub u64);

impl Drop for SeedGuard {
    fn drop(&mut self) {
        if std::thread::panicking() {
            eprintln!(
                "failing seed: {} (replay with {SEED_VAR}={})",
                self.0, self.0
            );
        }
    }
}

/// Simulated time `secs` seconds after zero.
pub fn at(secs: u64) -> Instant {
    Instant::ZERO + Duration::from_secs(secs)
}

/// A UD SEND Only packet (LRH..VCRC) from `slid` to `dlid` with `len` payload bytes of 0xa5 and
/// P_Key `pkey`: to QP 2, or to the multicast QPN when `dlid` is a multicast LID; Q_Key 0x0b1b,
/// source QP 2.
pub fn ud_packet(slid: u16, dlid: u16, len: usize, pkey: ipoib_wire::PKey) -> Vec<u8> {
    use ipoib_wire::ib::lid::LID_MULTICAST_FIRST;
    use ipoib_wire::ib::{BthRepr, DethRepr, LrhRepr, Opcode};
    use ipoib_wire::packet::PacketRepr;
    let payload = vec![0xa5; len];
    let lrh = LrhRepr::local(0, 0, dlid, slid);
    let qpn = if dlid >= LID_MULTICAST_FIRST {
        BthRepr::MULTICAST_QPN
    } else {
        2
    };
    let repr = PacketRepr::ud_send_only(
        lrh,
        None,
        BthRepr::new(Opcode::UD_SEND_ONLY, pkey, qpn, 0),
        DethRepr {
            qkey: ipoib_wire::QKey(0x0b1b),
            src_qp: 2,
        },
        &payload,
    );
    let mut buf = vec![0; repr.buffer_len()];
    repr.emit(&mut buf).expect("emit");
    buf
}
