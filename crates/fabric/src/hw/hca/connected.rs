//! The hook for reliable and unreliable connected QPs (RC/UC): the HCA keeps the link and network
//! layers (LRH, GRH, P_Key, CRCs, port state) and hands the transport part of each packet to a
//! [`ConnectedEngine`], such as the standalone state machine of `crate::hw::rc`. Whoever builds the
//! HCA installs one with [`super::Hca::with_engine`] or [`super::Hca::set_engine_factory`] (the
//! subnet installs [`crate::hw::rc::engine_factory`]); an HCA without one refuses RC/UC QPs.
//!
//! Division of work:
//! - receive: the HCA checks CRCs, DLID, port state, QP state (RTR or later), that the opcode's
//!   transport is the QP's, the GRH against the QP's path (`grh_from_path`, IBA 1 §9.6.1.5)
//!   and the P_Key against the QP's P_Key index (IBA 1 §10.9.3); then
//!   [`ConnectedEngine::handle_packet`] gets BTH, extended headers and payload (plus SLID/SL/GRH for
//!   its own source checks).
//! - transmit: [`ConnectedEngine::poll_transmit`] gives BTH (opcode, DestQP, PSN, flags),
//!   extended headers and payload; the HCA sets the BTH P_Key from the QP's P_Key index, adds
//!   the LRH (DLID/SL/path bits of the QP's path, VL 0) and the GRH when the path has one, and
//!   computes the CRCs.
//! - completions: [`ConnectedEngine::poll_completion`]; receive opcodes go to the receive CQ,
//!   the others to the send CQ.
//! - memory: [`ConnectedEngine::handle_packet`] borrows the HCA's registered regions
//!   ([`super::RdmaMemory`], module `mr`): RDMA WRITE and READ requests are checked against them
//!   and executed there, RDMA READ responses land there.

use super::error::VerbsError;
use super::mr::RdmaMemory;
use super::port::Port;
use crate::hw::verbs::{
    AddressHandle, Completion, ConnectedAttr, QpState, QpType, Qpn, RecvWr, SendWr,
};
use ipoib_proto::time::Instant;
use ipoib_wire::ib::{BthRepr, ExtHeaders, GrhRepr};

/// The transport part of an RC/UC packet (BTH onwards, without ICRC).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TransportPacket {
    /// BTH (the HCA overwrites the P_Key when sending).
    pub bth: BthRepr,
    /// Extended transport headers (RETH, AETH, ImmDt, ...).
    pub ext: ExtHeaders,
    /// Payload without pad.
    pub payload: Vec<u8>,
}

/// True when a packet with `grh` (or none) received on `port` comes from a connected QP's
/// `path`, as far as the GRH tells (IBA 1 §9.6.1.5): a GRH exactly when the path has one, its
/// SGID the path's DGID and its DGID the port GID the path's SGID index names. Linux qib's
/// `qib_ruc_check_hdr` (`drivers/infiniband/hw/qib/qib_ruc.c`) and hfi1's `hfi1_ruc_check_hdr`
/// discard the packet otherwise; the SLID is the engine's to check ([`PacketSource`]).
pub(super) fn grh_from_path(path: &AddressHandle, grh: Option<&GrhRepr>, port: &Port) -> bool {
    match (&path.grh, grh) {
        (None, None) => true,
        (Some(g), Some(h)) => h.sgid == g.dgid && port.gid(g.sgid_index) == Some(h.dgid),
        _ => false,
    }
}

/// Where an incoming packet came from (for the engine's checks, IBA 1 §9.6.1.2).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PacketSource {
    /// LRH SLID.
    pub slid: u16,
    /// LRH SL.
    pub sl: u8,
    /// GRH, when present.
    pub grh: Option<GrhRepr>,
}

/// A connected-QP transport engine (one per QP).
///
/// What the HCA relies on to poll only the engines that have work (module `sched`): once
/// `poll_transmit` and `poll_completion` have returned `None`, they keep returning `None` until
/// the next call of `modify`, `post_send`, `post_recv`, `handle_packet` or `handle_timeout`
/// (output never appears by the mere passing of time: what a timer releases comes after
/// `handle_timeout`); and `poll_timeout` changes only through those calls and the two polls.
pub trait ConnectedEngine {
    /// The QP moves to `to`; `attr` for RTR/RTS.
    fn modify(
        &mut self,
        now: Instant,
        to: QpState,
        attr: Option<&ConnectedAttr>,
    ) -> Result<(), VerbsError>;
    /// The state the engine is in (it may move itself to Error/SQE).
    fn state(&self) -> QpState;
    /// A send work request.
    fn post_send(&mut self, now: Instant, wr: SendWr) -> Result<(), VerbsError>;
    /// A receive work request.
    fn post_recv(&mut self, wr: RecvWr) -> Result<(), VerbsError>;
    /// A packet for this QP passed the HCA's checks. `mem` is the HCA's registered memory, which
    /// RDMA WRITE and READ requests reach and RDMA READ responses land in ([`super::RdmaMemory`]).
    fn handle_packet(
        &mut self,
        now: Instant,
        from: PacketSource,
        pkt: TransportPacket,
        mem: &mut dyn RdmaMemory,
    );
    /// [`ConnectedEngine::handle_packet`] with the packet borrowed from the receive buffer, as
    /// the HCA calls it: an engine that only reads the payload overrides it to spare the copy
    /// (the default copies the payload into a [`TransportPacket`]).
    fn handle_packet_parts(
        &mut self,
        now: Instant,
        from: PacketSource,
        bth: BthRepr,
        ext: ExtHeaders,
        payload: &[u8],
        mem: &mut dyn RdmaMemory,
    ) {
        let pkt = TransportPacket {
            bth,
            ext,
            payload: payload.to_vec(),
        };
        self.handle_packet(now, from, pkt, mem);
    }
    /// The next packet to send, if any.
    fn poll_transmit(&mut self, now: Instant) -> Option<TransportPacket>;
    /// [`ConnectedEngine::poll_transmit`] as the HCA calls it, lending its registered memory,
    /// from which a SEND or RDMA WRITE naming a region ([`crate::hw::verbs::SendWr::local`])
    /// takes its bytes as each packet is built (only [`super::RdmaMemory::local_read`] is
    /// used). The default ignores `mem`.
    fn poll_transmit_from(
        &mut self,
        now: Instant,
        mem: &dyn RdmaMemory,
    ) -> Option<TransportPacket> {
        let _ = mem;
        self.poll_transmit(now)
    }
    /// [`ConnectedEngine::poll_transmit_from`] without handing over the payload: `frame` gets
    /// the next packet's headers and its payload borrowed from where it lies (the send work
    /// request or the registered memory), so that the HCA builds the packet with the one copy
    /// into it. Returns false when there is nothing to send. The default calls
    /// `poll_transmit_from`.
    fn transmit_with(
        &mut self,
        now: Instant,
        mem: &dyn RdmaMemory,
        frame: &mut dyn FnMut(&BthRepr, &ExtHeaders, &[u8]),
    ) -> bool {
        match self.poll_transmit_from(now, mem) {
            Some(p) => {
                frame(&p.bth, &p.ext, &p.payload);
                true
            }
            None => false,
        }
    }
    /// False only when the engine has nothing to give: `transmit_with` would return false with
    /// no other effect, and `poll_completion` and `take_spent` would give nothing. The HCA
    /// then drains it no more after an input (its timer is still taken). By default true (the
    /// engine is drained after every input).
    fn has_work(&self) -> bool {
        true
    }
    /// The next completion, if any.
    fn poll_completion(&mut self) -> Option<Completion>;
    /// The buffer of a completed send work request, for the HCA to reuse; by default none.
    fn take_spent(&mut self) -> Option<Vec<u8>> {
        None
    }
    /// When `handle_timeout` is next needed.
    fn poll_timeout(&self) -> Option<Instant>;
    /// Timers due (tolerates early or repeated calls).
    fn handle_timeout(&mut self, now: Instant);
}

/// Makes the engine of a new RC/UC QP.
pub type EngineFactory = Box<dyn FnMut(QpType, Qpn) -> Box<dyn ConnectedEngine>>;
