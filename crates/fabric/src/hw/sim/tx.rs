//! What a device sends during one call, and the spare allocations the simulator keeps
//! ([`Tx`]).

use crate::hw::frame::Frame;
use crate::hw::ids::NodeId;
use crate::hw::mgmt::Config;
use std::time::Duration;

/// Buffers of consumed packets [`Tx`] keeps for the next packets built, at most.
pub const SPARE_BUFFERS: usize = 256;

/// Large buffers ([`LARGE_SPARE`]) [`Tx`] keeps, at most (4 MiB of connected-mode messages).
pub const LARGE_SPARES: usize = 64;

/// A smaller buffer (an acknowledgement's, a MAD's) is kept apart, for small packets only
/// ([`Tx::spare_small`]): a data packet built in one would grow it, and a small packet built in
/// a large one would leave it short for the next data packet (which zeroes the rest first).
pub const SMALL_SPARE: usize = 1 << 10;

/// Small buffers (under [`SMALL_SPARE`]) [`Tx`] keeps, at most.
pub const SMALL_SPARES: usize = 64;

/// A buffer of at least this capacity (a connected-mode message's, up to 65,524 bytes, not a
/// packet's) is kept apart, for [`Tx::spare_large`].
pub const LARGE_SPARE: usize = 16 << 10;

/// Time from a SubnSet(PortInfo) PortPhysicalState ([`Tx::set_port_enabled`]) to its link going
/// down or training up again: the SMP's answer leaves before, and training takes milliseconds.
pub const PORT_STATE_DELAY: Duration = Duration::from_millis(1);

/// Packets a device sends (and configuration it writes) during one call; and, since the
/// simulator keeps one `Tx` for all its devices, the allocations of packets a receiver consumed
/// ([`Tx::recycle`]), for another device to build its packets in ([`Tx::spare`]): in a stream
/// one host builds the data packets and another consumes them, so a device's own spare alone
/// would leave an allocation and a free per packet.
#[derive(Debug, Default)]
pub struct Tx {
    pub(super) out: Vec<(u8, Frame)>,
    pub(super) config: Vec<(NodeId, Config)>,
    pub(super) ports: Vec<(u8, bool)>,
    pub(super) spares: Vec<Vec<u8>>,
    pub(super) large: Vec<Vec<u8>>,
    pub(super) small: Vec<Vec<u8>>,
}

impl Tx {
    /// An allocation to build a packet in (a consumed packet's, its bytes stale; or a new, empty
    /// one).
    pub fn spare(&mut self) -> Vec<u8> {
        self.spares.pop().unwrap_or_default()
    }
    /// An allocation to build a small packet in (an acknowledgement's: a consumed small
    /// packet's, its bytes stale; or a new, empty one).
    pub fn spare_small(&mut self) -> Vec<u8> {
        self.small.pop().unwrap_or_default()
    }
    /// A large buffer kept by [`Tx::recycle`] (its bytes stale) if one has at least `capacity`
    /// (one that has less is dropped), for a message from outside the emulation (a packet the
    /// OS sent, read into it).
    pub fn spare_large(&mut self, capacity: usize) -> Option<Vec<u8>> {
        self.large.pop().filter(|b| b.capacity() >= capacity)
    }
    /// Keeps `buf` (a consumed packet's allocation, or a completed message's) for [`Tx::spare`]
    /// or, from [`LARGE_SPARE`] bytes on, [`Tx::spare_large`], or, under [`SMALL_SPARE`] bytes,
    /// [`Tx::spare_small`]; up to [`SPARE_BUFFERS`], [`LARGE_SPARES`] and [`SMALL_SPARES`].
    pub fn recycle(&mut self, buf: Vec<u8>) {
        let (keep, max) = if buf.capacity() >= LARGE_SPARE {
            (&mut self.large, LARGE_SPARES)
        } else if buf.capacity() >= SMALL_SPARE {
            (&mut self.spares, SPARE_BUFFERS)
        } else {
            (&mut self.small, SMALL_SPARES)
        };
        if buf.capacity() > 0 && keep.len() < max {
            keep.push(buf);
        }
    }
    /// Sends `packet` (LRH..VCRC) out of `port`; receivers check its CRCs.
    pub fn send(&mut self, port: u8, packet: Vec<u8>) {
        self.out.push((port, Frame::new(packet)));
    }
    /// Sends `frame` out of `port`, with its "CRCs known good" mark ([`Frame`]).
    pub fn send_frame(&mut self, port: u8, frame: Frame) {
        self.out.push((port, frame));
    }
    /// Writes `config` into device `to` (the subnet manager's privilege; see [`crate::hw::mgmt`]).
    pub fn configure(&mut self, to: NodeId, config: Config) {
        self.config.push((to, config));
    }
    /// Disables (`enabled` false: PortPhysicalState Disabled) or enables (Polling: the link
    /// trains again once the other end is enabled and the cable there) the link of the sending
    /// device's `port`, as a SubnSet(PortInfo) PortPhysicalState asks (IBA 1 §14.2.5.6,
    /// §5.6.2.1), [`PORT_STATE_DELAY`] later.
    pub fn set_port_enabled(&mut self, port: u8, enabled: bool) {
        self.ports.push((port, enabled));
    }
    /// Takes the port requests out (for devices driven outside a simulator).
    pub fn drain_port_requests(&mut self) -> std::vec::Drain<'_, (u8, bool)> {
        self.ports.drain(..)
    }
    /// Takes the configuration writes out (for devices driven outside a simulator).
    pub fn drain_config(&mut self) -> std::vec::Drain<'_, (NodeId, Config)> {
        self.config.drain(..)
    }
    /// Packets sent so far.
    pub fn len(&self) -> usize {
        self.out.len()
    }
    /// True when nothing was sent.
    pub fn is_empty(&self) -> bool {
        self.out.is_empty()
    }
    /// Takes the packets out (for devices driven outside a simulator, e.g. in unit tests).
    pub fn drain(&mut self) -> impl Iterator<Item = (u8, Vec<u8>)> + '_ {
        self.out.drain(..).map(|(port, f)| (port, f.into_vec()))
    }
    /// Takes the packets out with their marks ([`Frame`]).
    pub fn drain_frames(&mut self) -> std::vec::Drain<'_, (u8, Frame)> {
        self.out.drain(..)
    }
}
