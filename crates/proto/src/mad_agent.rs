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

/// Bit 63 of a TransactionID: set in every request of a host's external MAD users (the host
/// gives each high half a user sends a number with it set, `ipoib_fabric::node::host` module
/// `umad`), clear in every TID a host's own agent originates (SA client, CM: [`agent_tid_high`];
/// the SM counts up from `0x534d << 48`; the SA server's Reports from a 32-bit start). Linux
/// draws the `hi_tid` of kernel and user agents alike from one counter (`ib_mad.c`
/// `ib_mad_client_id`); ours draw their own, so the two spaces are kept apart instead: a host
/// never sends one TID for a user's request and for its own agent's.
pub const UMAD_TID_BIT: u64 = 1 << 63;

/// The high 32 bits of a host's own agent's TIDs, drawn from `rng` with bit 63 of the TID
/// ([`UMAD_TID_BIT`]) clear, in place.
pub fn agent_tid_high(rng: &mut crate::rng::Rng) -> u64 {
    (u64::from(rng.next_u32()) << 32) & !UMAD_TID_BIT
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cm::{Cm, CmConfig};
    use crate::rng::Rng;
    use crate::sa::{SaClient, SaClientConfig};
    use crate::time::Instant;
    use ipoib_wire::mad::Mad;
    use ipoib_wire::sa::SaMadRepr;
    use ipoib_wire::Guid;

    fn tid(m: &MadOut) -> u64 {
        Mad::new_unchecked(&m.mad[..]).transaction_id()
    }

    /// [`UMAD_TID_BIT`]: whatever the seed, the TIDs the SA client and the CM originate keep
    /// bit 63 clear, the space of a host's external MAD users. Before, their high halves were
    /// any 32 bits: for about half the seeds bit 63 was set, and a user's number could be the
    /// same high half.
    #[test]
    fn own_agents_keep_bit_63_of_their_tids_clear() {
        let (mut sa_set, mut cm_set) = (0, 0);
        for seed in 0..64 {
            let now = Instant::ZERO;
            let mut sa = SaClient::new(SaClientConfig::default(), Rng::new(seed));
            sa.request(now, SaMadRepr::class_port_info_get(0), MadAddr::gsi(1));
            let m = sa.poll_transmit(now).expect("the request");
            sa_set += usize::from(tid(&m) & UMAD_TID_BIT != 0);
            let mut cm = Cm::new(CmConfig::new(Guid(2)), Rng::new(seed));
            cm.sidr_request(now, MadAddr::gsi(1), 0x1000, 14, &[])
                .unwrap();
            let m = cm.poll_transmit(now).expect("the SIDR_REQ");
            cm_set += usize::from(tid(&m) & UMAD_TID_BIT != 0);
        }
        assert_eq!((sa_set, cm_set), (0, 0));
    }
}
