//! IPoIB on the emulated fabric: the adapter that runs the pure IPoIB interface agent
//! ([`ipoib_proto::ipoib::Interface`], draft-ietf-ipoib-ip-over-infiniband-06) on a host's HCA
//! ([`IpoibApp`]), with the pure IP endpoint [`ipoib_proto::ip_host::IpHost`] above it for demos
//! and tests (echo, ping, UDP to and from multicast groups).
//!
//! Install one on a host with [`IpoibApp::install`], or with [`IpoibApp::install_external`] to
//! have the host's own IP stack (a TUN device) above it instead of `IpHost` (module `external`:
//! [`IpoibApp::from_os`], [`IpoibApp::to_os`], IGMP/MLD snooping); a whole subnet whose hosts all run IPoIB comes
//! from [`crate::node::subnet::SubnetOptions::ipoib`].
//!
//! Invariants: the adapter adds no behaviour of its own to the interface (it translates values to
//! verbs and back); it is deterministic and never panics on network input.

mod app;
mod connected;
mod external;
pub mod frames;
mod stack;

pub use app::{
    AdapterCounters, IpoibApp, IpoibHandle, LOG_KEEP, MAX_RECV_DEPTH, MIN_RECV_DEPTH, RECV_BUF,
    RECV_DEPTH, RESOLUTIONS_KEEP,
};
pub use connected::{ConnCounters, CONN_RECV_DEPTH};
pub use external::{OsCounters, FROM_OS_LIMIT, TO_OS_LIMIT};
pub use frames::{FrameStats, Resolution, ResolutionKind};
pub use stack::{CpuCounters, StackCost, RX_BACKLOG};
