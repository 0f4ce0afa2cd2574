//! Byte formats of InfiniBand and of IP over InfiniBand, and nothing else: no IO, no clock, and no
//! allocation on the hot path.
//!
//! Every format follows the smoltcp pattern (docs/ARCHITECTURE.md):
//! - a zero-copy view `Foo<T: AsRef<[u8]>>` with `new_unchecked`, `new_checked`, `check_len`, getters,
//!   and setters when `T: AsMut<[u8]>`; once `check_len` has passed no getter panics;
//! - a validated representation `FooRepr` with `parse`, `buffer_len` and `emit`; `emit` never panics on
//!   a buffer of `buffer_len()` bytes, and unknown code points survive a parse/emit round trip;
//! - a [`describe::Describe`] impl that lists every field by name, used by `ipoib decode`.
//!
//! Multi-byte fields are big-endian (network order) as InfiniBand sends them, except the ICRC and VCRC,
//! which go on the wire least significant byte first (IBA 1 §7.8).

#![forbid(unsafe_code)]
#![deny(missing_debug_implementations)]

// The `fixed_view!` and `code_enum!` macros; first, so that every module below can use them.
#[macro_use]
mod view;
#[macro_use]
mod code_enum;

pub mod describe;
mod error;
pub mod keys;
pub mod types;

// InfiniBand transport.
pub mod crc;
pub mod ib;
pub mod packet;

// Management datagrams.
pub mod mad;
pub mod perf;
pub mod sa;
pub mod smp;

// Communication Manager.
pub mod cm;

// IPoIB, IP and neighbour discovery.
pub mod ipoib;

// Private data of connections: IPoIB-CM, Annex A11, iWarp emulation.
pub mod private_data;

// The header of RC SENDs on an iWarp-emulated connection (SDP's BSDH).
pub mod bsdh;

// Capture files.
pub mod pcap;

// The datagrams between a host and the fabric in another process (`ipoib fabric`, `ipoib attach`).
pub mod udp_fabric;

// Layer-by-layer decoding of whole packets (used by `ipoib decode`), and its text/JSON renderers.
pub mod decode;
pub mod render;

// Sample packets of every kind, for tests, benchmarks and demos.
pub mod samples;

pub use error::{Error, Result};
pub use keys::{PKey, QKey};
pub use sa::{Mtu, Rate};
pub use types::{Gid, Guid};
