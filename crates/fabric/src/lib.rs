//! The emulated InfiniBand hardware and subnet: a deterministic discrete-event simulator ([`sim`]),
//! links with latency, bandwidth and faults ([`link`]), capture to pcap ([`capture`]), and the
//! devices that sit on it (HCAs, switches, the subnet manager).
//!
//! Invariants: virtual time only (no clock, no threads); every random choice comes from the
//! simulator's seeded [`ipoib_proto::rng::Rng`]; events at the same instant run in the order they
//! were scheduled. So the same seed gives the same packets, byte for byte.
//!
//! The unit everywhere is one whole InfiniBand packet, LRH through VCRC, as a `Vec<u8>`.

#![forbid(unsafe_code)]

pub mod capture;
pub mod hca;
pub mod host;
pub mod ipoib;
pub mod link;
pub mod mgmt;
pub mod rc;
pub mod sim;
pub mod sm;
pub mod subnet;
pub mod switch;
pub mod topology;
pub mod verbs;

pub use ipoib_proto::time::Instant;
pub use mgmt::{Config, PortConfig, PortState};
pub use sim::{Device, NodeId, PortRef, Simulator, Tx};
