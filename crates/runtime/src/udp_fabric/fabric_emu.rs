//! [`FabricEmu`]: the fabric agent ([`FabricServer`]) as the real-time driver's emulation and
//! a [`DatagramPeer`] of the UDP endpoint, as `ipoib fabric` runs it ([`super::FabricProcess`]).

use super::{DatagramPeer, IoCounters};
use crate::realtime::Emulation;
use ipoib_fabric::node::remote::{FabricServer, Outgoing};
use ipoib_fabric::Instant;
use std::cell::Cell;
use std::net::SocketAddr;
use std::rc::Rc;

/// The fabric agent as the driver's emulation.
#[derive(Debug)]
pub struct FabricEmu {
    pub(super) server: FabricServer<SocketAddr>,
    pub(super) io: IoCounters,
    /// The ibsim server's counters, when the process serves ibsim's clients
    /// ([`super::FabricProcess::serve_ibsim`]).
    pub(super) ibsim: Option<Rc<Cell<crate::ibsim_server::ServerCounters>>>,
}

impl FabricEmu {
    /// `server` as the driver's emulation, without a socket: what [`super::FabricProcess::bind`] runs
    /// on its driver (a caller that carries the datagrams itself, `examples/udppath.rs`, drives
    /// it through [`Emulation`] and [`DatagramPeer`]).
    pub fn new(server: FabricServer<SocketAddr>) -> FabricEmu {
        FabricEmu {
            server,
            io: IoCounters::default(),
            ibsim: None,
        }
    }

    /// The agent, mutably (capture, faults).
    pub fn server_mut(&mut self) -> &mut FabricServer<SocketAddr> {
        &mut self.server
    }

    /// The agent.
    pub fn server(&self) -> &FabricServer<SocketAddr> {
        &self.server
    }
}

impl Emulation for FabricEmu {
    fn now(&self) -> Instant {
        self.server.sim().now()
    }
    fn next_event_at(&self) -> Option<Instant> {
        self.server.poll_timeout()
    }
    fn run_until(&mut self, t: Instant) {
        self.server.handle_timeout(t);
    }
}

impl DatagramPeer for FabricEmu {
    fn on_datagram(&mut self, from: SocketAddr, data: &[u8]) {
        // What the slots queue for their hosts is moved into datagrams by the turn's run
        // (`Emulation::run_until`), once for all the turn's datagrams.
        let now = self.server.sim().now();
        self.server.queue_datagram(now, from, data);
    }
    fn next_datagram(&mut self) -> Option<(Option<SocketAddr>, Outgoing)> {
        self.server.poll_transmit_parts().map(|(a, d)| (Some(a), d))
    }
    fn io_counters(&mut self) -> &mut IoCounters {
        &mut self.io
    }
    fn recycle(&mut self, body: Vec<u8>) {
        self.server.recycle(body);
    }
}
