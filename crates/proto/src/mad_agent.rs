//! What management agents (SA client and server, CM) exchange with the HCA below them: whole MADs
//! with the UD address they came from or go to. The HCA (simulated, remote or real) turns a
//! [`MadOut`] into a QP1 (or QP0) datagram and a received datagram into a [`MadIn`]; agents never see
//! packets or queue pairs.

use ipoib_wire::PKey;
use ipoib_wire::{Gid, QKey};

/// The global routing part of an address (present when the datagram has, or needs, a GRH).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct GrhAddr {
    /// The remote port's GID (source GID on receive, destination GID on send).
    pub gid: Gid,
    /// Flow label.
    pub flow_label: u32,
    /// Hop limit.
    pub hop_limit: u8,
    /// Traffic class.
    pub tclass: u8,
}

/// The UD address of a MAD's peer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct MadAddr {
    /// The remote LID (SLID on receive, DLID on send).
    pub lid: u16,
    /// The remote QP (usually 1; 0 for SMPs).
    pub qpn: u32,
    /// Q_Key to send with (QP1: [`QKey::GSI`]).
    pub qkey: QKey,
    /// Service level.
    pub sl: u8,
    /// P_Key the datagram carried or is to carry.
    pub pkey: PKey,
    /// Global route, when there is one.
    pub grh: Option<GrhAddr>,
}

impl MadAddr {
    /// QP1 of the port with `lid`, default P_Key, SL 0, no GRH.
    pub fn gsi(lid: u16) -> MadAddr {
        MadAddr {
            lid,
            qpn: 1,
            qkey: QKey::GSI,
            sl: 0,
            pkey: PKey(0xffff),
            grh: None,
        }
    }
}

/// A MAD received.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MadIn {
    /// Who sent it.
    pub from: MadAddr,
    /// The MAD (256 bytes for QP0/QP1).
    pub mad: Vec<u8>,
}

/// A MAD to send.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MadOut {
    /// Where to.
    pub to: MadAddr,
    /// The MAD (256 bytes for QP0/QP1).
    pub mad: Vec<u8>,
}

/// A management agent on QP1 (SA client, SA server, later CM), driven quinn-proto style. The host
/// hands it every MAD meant for it and sends what it queues. Requests reach the agent registered as
/// the server of their management class; responses reach the agent that sent the request with that
/// transaction ID.
pub trait MadAgent {
    /// A MAD arrived for this agent.
    fn handle_mad(&mut self, now: crate::time::Instant, mad: MadIn);
    /// The next MAD to send, if any.
    fn poll_transmit(&mut self, now: crate::time::Instant) -> Option<MadOut>;
    /// When `handle_timeout` is next needed.
    fn poll_timeout(&self) -> Option<crate::time::Instant>;
    /// Timers due (tolerates early or repeated calls).
    fn handle_timeout(&mut self, now: crate::time::Instant);
}
