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

pub use ipoib::{all_pairs, app, options, ping_pairs, rtt, run_until_attached, up, v4, v6, Sent};
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
