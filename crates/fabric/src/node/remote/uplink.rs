//! [`Uplink`]: the host side's end of the cable to a fabric in another process. In the host's
//! simulator it is cabled to the HCA port the fabric gave the host; what the HCA sends waits in a
//! bounded queue for the network ([`Uplink::poll_to_network`]), what the network brings is sent to
//! the HCA ([`Uplink::from_network`]), and the SM's configuration of the port, which reaches the
//! host as a message (docs/UDP-FABRIC.md), is written into the HCA as the SM would write it
//! ([`Uplink::configure_host`], `Tx::configure`).

use crate::hw::mgmt::{Config, PortConfig};
use crate::hw::sim::{Device, NodeId, Tx};
use ipoib_proto::time::Instant;
use std::any::Any;
use std::collections::VecDeque;

/// The uplink's one port.
pub const UPLINK_PORT: u8 = 1;

/// Counters of an [`Uplink`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct UplinkCounters {
    /// Packets from the HCA queued for the network.
    pub to_network: u64,
    /// Packets from the HCA dropped: the queue was full.
    pub queue_full: u64,
    /// Packets from the network sent to the HCA.
    pub from_network: u64,
    /// Port configurations written into the HCA.
    pub configs: u64,
}

/// See the module docs.
#[derive(Debug)]
pub struct Uplink {
    hca: NodeId,
    queue: VecDeque<Vec<u8>>,
    limit: usize,
    counters: UplinkCounters,
}

impl Uplink {
    /// The uplink of the HCA (or host) device `hca`, queueing at most `limit` packets.
    pub fn new(hca: NodeId, limit: usize) -> Uplink {
        Uplink {
            hca,
            queue: VecDeque::new(),
            limit,
            counters: UplinkCounters::default(),
        }
    }

    /// Counters.
    pub fn counters(&self) -> UplinkCounters {
        self.counters
    }

    /// A packet from the fabric: onto the cable to the HCA.
    pub fn from_network(&mut self, packet: Vec<u8>, tx: &mut Tx) {
        self.counters.from_network += 1;
        tx.send(UPLINK_PORT, packet);
    }

    /// The SM's configuration of the host's port: written into the HCA.
    pub fn configure_host(&mut self, config: PortConfig, tx: &mut Tx) {
        self.counters.configs += 1;
        tx.configure(self.hca, Config::Port(config));
    }

    /// The fabric's SMA took a SubnSet(PortInfo) with ClientReregister 1 on `port` (IBA 1
    /// §14.4.11): the host's HCA raises the event, after the configurations before it.
    pub fn client_reregister_host(&mut self, port: u8, tx: &mut Tx) {
        tx.configure(self.hca, Config::ClientReregister(port));
    }

    /// The next packet for the network, oldest first.
    pub fn poll_to_network(&mut self) -> Option<Vec<u8>> {
        self.queue.pop_front()
    }
}

impl Device for Uplink {
    fn receive(&mut self, _now: Instant, _port: u8, packet: Vec<u8>, _tx: &mut Tx) {
        if self.queue.len() >= self.limit {
            self.counters.queue_full += 1;
            return;
        }
        self.counters.to_network += 1;
        self.queue.push_back(packet);
    }

    fn handle_timeout(&mut self, _now: Instant, _tx: &mut Tx) {}

    fn poll_timeout(&self) -> Option<Instant> {
        None
    }

    fn as_any(&self) -> &dyn Any {
        self
    }

    fn as_any_mut(&mut self) -> &mut dyn Any {
        self
    }
}
