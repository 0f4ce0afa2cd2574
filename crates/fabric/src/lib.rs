//! The emulated InfiniBand hardware and subnet, in two halves:
//!
//! - [`hw`], the emulated hardware: a deterministic discrete-event simulator ([`hw::sim`]), links with
//!   latency, bandwidth and faults ([`hw::link`]), capture to pcap ([`hw::capture`]), HCAs, switches,
//!   the RC/UC engine, verbs, the management interface, the subnet and performance management
//!   agents of every switch and HCA port ([`hw::sma`]) and topologies;
//! - [`node`], the host software that runs on that hardware: hosts, the subnet manager, IPoIB
//!   interfaces and the assembled [`node::subnet::Subnet`].
//!
//! Dependencies run one way: `node` uses `hw`, `hw` never uses `node`.
//!
//! Invariants: virtual time only (no clock, no threads); every random choice comes from the
//! simulator's seeded [`ipoib_proto::rng::Rng`]; events at the same instant run in the order they
//! were scheduled. So the same seed gives the same packets, byte for byte.
//!
//! The unit everywhere is one whole InfiniBand packet, LRH through VCRC, as a `Vec<u8>`.

#![forbid(unsafe_code)]

pub mod hw;
pub mod node;

#[cfg(any(test, feature = "testing"))]
pub mod testing;

pub use hw::mgmt::{Config, PortConfig, PortState};
pub use hw::sim::{Device, NodeId, PortRef, Simulator, Tx};
pub use ipoib_proto::time::Instant;
