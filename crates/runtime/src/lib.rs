//! The side of the project that talks to real processes, today only ibsim and OpenSM:
//!
//! - [`control`]: the local control socket of a running lab or attach process (a Unix-domain
//!   stream socket served from the owner's single-threaded event loop), and its client;
//! - [`show`]: the views `ipoib show` prints (neighbours, paths, multicast groups, connections,
//!   counters), filled from an interface and its fabric adapter, as text or JSON;
//! - [`ibsim`]: a client for ibsim's client protocol (attach to a node of a simulated management
//!   plane and exchange MADs with whatever else is attached), and, in [`ibsim::opensm`], a harness
//!   that starts ibsim and the real OpenSM as child processes. The differential test of our SA
//!   against OpenSM (`tests/opensm_diff.rs`) and the benchmark of OpenSM's SA
//!   (`examples/opensm_joins.rs`) are built on them;
//! - [`ibsim_server`]: the server side of the same protocol, so that programs started under
//!   `ibsim-run` (`saquery`, `smpquery`, ...) attach to a host of our own emulated fabric.
//!
//! It blocks on sockets, spawns processes and reads the wall clock (for timeouts); wire, proto and
//! fabric below it do none of these. There is no clock-driven runtime for the protocol agents, no
//! UDP link between processes and no TUN device yet.

pub mod control;
pub mod ibsim;
pub mod ibsim_server;
pub mod netlink;
pub mod realtime;
pub mod show;
