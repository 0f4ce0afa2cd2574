//! The side of the project that talks to the operating system and to real processes:
//!
//! - [`control`]: the local control socket of a running lab or attach process (a Unix-domain
//!   stream socket served from the owner's single-threaded event loop), and its client;
//! - [`show`]: the views `ipoib show` prints (neighbours, paths, multicast groups, connections,
//!   counters), filled from an interface and its fabric adapter, as text or JSON;
//! - [`realtime`]: the real-time driver, which runs an emulation (a simulator, a whole subnet)
//!   against the wall clock and moves packets between it and files of the OS ([`realtime::Endpoint`]);
//! - [`tun`]: TUN devices as the OS side of an emulated IPoIB interface, and their endpoint;
//!   [`ipoib_port`]: the fabric's interfaces with external IP as the other side of one;
//! - [`netns`]: named network namespaces the way iproute2 makes them; [`netlink`]: the few
//!   rtnetlink requests that configure a device (MTU, addresses, link up);
//! - [`ibsim`]: a client for ibsim's client protocol (attach to a node of a simulated management
//!   plane and exchange MADs with whatever else is attached), and, in [`ibsim::opensm`], a harness
//!   that starts ibsim and the real OpenSM as child processes. The differential test of our SA
//!   against OpenSM (`tests/opensm_diff.rs`) and the benchmark of OpenSM's SA
//!   (`examples/opensm_joins.rs`) are built on them;
//! - [`ibsim_server`]: the server side of the same protocol, so that programs started under
//!   `ibsim-run` (`saquery`, `smpquery`, ...) attach to a host of our own emulated fabric;
//! - [`udp_fabric`]: the emulated subnet across processes over UDP (`ipoib fabric`, `ipoib
//!   attach`; docs/UDP-FABRIC.md).
//!
//! It reads the wall clock, blocks on files, spawns threads and processes, and changes network
//! and mount namespaces (on threads of its own); wire, proto and fabric below it do none of
//! these. Linux only where it touches namespaces, TUN devices and netlink.

#![forbid(unsafe_code)]

pub mod capture_file;
pub mod control;
pub mod gro;
pub mod gso;
pub mod ibsim;
pub mod ibsim_server;
pub mod ipoib_port;
pub mod netlink;
pub mod netns;
pub mod realtime;
pub mod show;
pub mod tun;
pub mod udp_fabric;
