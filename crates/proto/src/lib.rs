//! Protocol agents with no IO, no threads and no clock: SA client and server, CM, the IPoIB interface,
//! the IP CM service and iWarp emulation, and a tiny IP endpoint above the interface ([`ip_host`]). Time comes in as a parameter ([`time::Instant`]),
//! randomness from a seeded generator ([`rng::Rng`]); same seed, same packets.
//!
//! Agents follow quinn-proto's shape: inputs through `handle_*(now, ..)`, outputs from
//! `poll_transmit()`, `poll_timeout()` and `poll_event()`.

#![forbid(unsafe_code)]

pub mod cm;
pub mod ip_host;
pub mod ipcm;
pub mod ipoib;
pub mod iwarp;
pub mod mad_agent;
pub mod partitions;
pub mod rng;
pub mod sa;
pub mod subnet;
pub mod time;

#[cfg(test)]
mod testing;
