//! A client for ibsim's client protocol (linux-rdma/ibsim, Debian package ibsim-utils): attach to
//! a node of a simulated InfiniBand management plane and exchange MADs with whatever else is
//! attached, in particular the real OpenSM running under `ibsim-run`. The differential test of our
//! subnet administrator against OpenSM (crates/runtime/tests/opensm_diff.rs) is built on it.
//!
//! [`msg`] holds the byte layouts of ibsim's own messages (`sim_ctl`, `sim_client_info`,
//! `sim_request`); the NodeInfo and PortInfo attributes they carry are read with
//! `ipoib_wire::smp`. [`IbsimClient`] holds the sockets. ibsim carries no data-plane
//! traffic: only whole 256-byte MADs with LIDs and QPs (docs/IBSIM.md "ibsim").
//! [`opensm`] starts ibsim and OpenSM as child processes for the differential test and the
//! benchmark of OpenSM's SA.
//!
//! Invariants: blocking calls are bounded by timeouts; a client disconnects when dropped; nothing
//! here panics on what the server sends.

mod client;
pub mod msg;
pub mod opensm;

pub use client::{Endpoint, IbsimClient, CTL_TIMEOUT};
