//! The emulated host channel adapter: ports configured by the subnet manager, queue pairs,
//! completion queues and multicast attachments behind a verbs-like API, speaking real IB packets
//! (`ipoib_wire::packet`) on the simulator's links.
//!
//! - UD (and QP0/QP1) transport is here (modules `ud`, `rx`): IBA 1 §9.8, §10.2.4-5, §10.5.2,
//!   §10.9.3.
//! - RC/UC run in a pluggable engine ([`connected`]) that whoever builds the HCA installs
//!   ([`Hca::with_engine`]; the subnet installs `crate::hw::rc`'s); the HCA does their link layer.
//!   Without an engine, RC/UC QPs are refused.
//! - Memory registration (module `mr`, IBA 1 §10.6): [`Hca::reg_mr`] / [`Hca::reg_mr_at`] give a
//!   region with an L_Key, an R_Key and access rights ([`crate::hw::verbs::Access`], IBA 1
//!   §10.6.3.1), [`Hca::dereg_mr`] ends it; [`Hca::mr_read`], [`Hca::mr_write`] and
//!   [`Hca::mr_slice_mut`] are the application touching its buffer. The engines of every RC/UC QP
//!   of the HCA check incoming RDMA WRITE and READ requests against these regions (R_Key, range,
//!   remote write or read; otherwise NAK remote access error, IBA 1 §9.7.5.2.5) and land RDMA READ
//!   responses in the region the work request names (otherwise a local protection error). The
//!   registered bytes are bounded ([`DEFAULT_MR_LIMIT`], [`Hca::set_mr_limit`]).
//!
//! Sending: `post_send` queues the work request; the packets go out on the next
//! [`Hca::flush`], which the [`Device`] calls run from `handle_timeout` (and at the end of
//! `receive`). [`Device::poll_timeout`] returns the last `now` the HCA saw while work is queued, so
//! a post made through `Simulator::with_node` leaves at that same virtual instant. A consumer
//! that holds a [`Tx`] (the host device) calls `flush` itself. A flush polls only the RC/UC engines
//! that took an input that left them with work ([`ConnectedEngine::has_work`]) since they were
//! last drained, and engine timers are kept in an index
//! (module `sched`), so the cost of an event does not grow with the number of connected QPs.
//!
//! Multicast loopback: packets are never looped back to the sending port by the fabric (a switch
//! does not send a packet out of its ingress port), and by default the HCA does not loop its own
//! multicast sends back to other QPs of the same port either (Linux IPoIB creates its UD QP with
//! `IB_QP_CREATE_BLOCK_MULTICAST_LOOPBACK` where supported and drops its own datagrams).
//! [`Hca::set_mcast_loopback`] turns local copies to the *other* attached QPs on. Unicast to the
//! port's own LID range is looped back internally (it never reaches the wire).
//!
//! Management: the SMA on QP0 and the PMA on QP1 of every port (module `sma`, IBA 1 chapter 14,
//! §16.1) answer SMPs and PerfMgt MADs before QP0/QP1 consumers see them; their Sets write the
//! same port state [`Device::configure`] writes.
//!
//! Invariants: no panics on packet data; every discarded packet is counted by [`HcaDropReason`];
//! all tables are `BTreeMap`/`Vec`, so the order of packets and completions is deterministic.

pub mod connected;
pub mod error;
mod flush;
mod mr;
pub mod port;
pub mod qp;
mod rx;
mod sched;
mod sma;
pub mod trap;
mod ud;

#[cfg(test)]
pub(crate) mod tests;

pub use connected::{ConnectedEngine, EngineFactory, PacketSource, TransportPacket};
pub use error::{CqId, HcaCounters, HcaDropReason, VerbsError};
pub use mr::{RdmaMemory, DEFAULT_MR_LIMIT};
pub use port::{Port, PKEY_TABLE_SIZE};
pub use qp::{special_qpn, wire_qpn, ModifyQp, QpInit};

use crate::hw::mgmt::Config;
use crate::hw::sim::{Device, Frame, Tx};
use crate::hw::verbs::{Completion, QpState, QpType, Qpn, RecvWr, SendOp, SendWr, WcStatus};
use ipoib_proto::time::Instant;
use ipoib_wire::ib::lid::is_multicast_lid;
use ipoib_wire::{Gid, Guid, QKey};
use qp::{transition_allowed, Qp, QpKind, QpTable};
use sched::Schedule;
use std::any::Any;
use std::collections::VecDeque;

/// First QPN handed out by `create_qp` (then counting up, skipping numbers in use).
pub const FIRST_QPN: Qpn = 0x48;
/// Largest message of any QP (IBA 1 §9.4.1: 2^31 bytes).
pub const MAX_MSG: usize = 1 << 31;

/// Read-only view of a QP's attributes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct QpInfo {
    /// Transport.
    pub qp_type: QpType,
    /// State.
    pub state: QpState,
    /// Port.
    pub port: u8,
    /// P_Key index.
    pub pkey_index: u16,
    /// Q_Key.
    pub qkey: QKey,
    /// Receive WRs posted and not yet consumed.
    pub recv_posted: usize,
    /// Multicast groups attached.
    pub mcast_groups: usize,
}

/// The emulated HCA. See the module docs.
pub struct Hca {
    node_guid: Guid,
    ports: Vec<Port>,
    qps: QpTable,
    /// The completion queues, indexed by [`CqId`] (handed out from 0 and never destroyed): a
    /// host's two or three in one small allocation, not a B-tree leaf.
    cqs: Vec<VecDeque<Completion>>,
    /// Completions in all of `cqs` ([`Hca::completions_waiting`]).
    cq_total: usize,
    special_cqs: Vec<CqId>,
    next_cq: u32,
    next_qpn: Qpn,
    sendq: VecDeque<(Qpn, SendWr)>,
    /// Multicast attachments (MLID, MGID, QP), sorted: a host's few (IPoIB's broadcast group)
    /// in one small allocation, not a B-tree leaf and a set each.
    mcast: Vec<(u16, Gid, Qpn)>,
    mcast_loopback: bool,
    factory: Option<EngineFactory>,
    /// The RC/UC engines to drive and their timers (module `sched`).
    sched: Schedule,
    /// An engine took an input since the last [`Hca::flush`] began, so
    /// [`Device::poll_timeout`] asks for a flush at `last_now`.
    connected_dirty: bool,
    /// The last packet received was taken quietly ([`Hca::took_quietly`]).
    rx_quiet: bool,
    last_now: Instant,
    counters: HcaCounters,
    /// Registered memory regions (module `mr`).
    mrs: mr::MrTable,
    /// What the SMA and PMA answer with (module `sma`).
    node_description: ipoib_wire::smp::NodeDescriptionRepr,
    /// Answers of the SMA and PMA waiting for the next flush: (port, packet, local). A local
    /// one answers a directed-route SMP with HopCount 0 sent from this node's QP0 and goes back
    /// to QP0 without leaving the node (IBA 1 §14.2.2).
    /// Built by `smp_frame_in` (CRCs pending) and `gmp_packet` (CRCs written): known good
    /// ([`Frame`]).
    sma_out: Vec<(u8, Frame, bool)>,
    /// Ports whose configuration a SubnSet changed since [`Hca::take_port_changes`] (module
    /// `sma`).
    sma_changed: Vec<u8>,
    /// Ports a SubnSet(PortInfo) PortPhysicalState just disabled (false) or enabled (true), for
    /// the simulator once the answer is sent ([`Tx::set_port_enabled`], module `sma`).
    port_requests: Vec<(u8, bool)>,
    /// The buffer of the last packet received, for the next packet built: only its allocation
    /// is reused, every byte is written again.
    spare: Option<Vec<u8>>,
    /// Spent UD sends' data allocations, for the next datagrams received (`ud_receive`).
    data_spares: Vec<Vec<u8>>,
}

impl Hca {
    /// An HCA with `nports` ports whose port GUIDs are `node_guid + port number`.
    pub fn new(node_guid: Guid, nports: u8) -> Hca {
        let guids = (1..=nports)
            .map(|p| Guid(node_guid.0.wrapping_add(u64::from(p))))
            .collect();
        Hca::with_port_guids(node_guid, guids)
    }

    /// An HCA with one port per GUID given (port 1 first). Ports start Down with LID 0 and the
    /// P_Key table `[0xFFFF]`; QP0 and QP1 of every port exist in RTS from the start (as the
    /// kernel MAD layer leaves them), both completing into the port's special CQ; QP1 is
    /// privileged with Q_Key 0x80010000 (IBA 1 §13.5.1).
    pub fn with_port_guids(node_guid: Guid, port_guids: Vec<Guid>) -> Hca {
        let mut hca = Hca {
            node_guid,
            // Exactly the ports given: a `Port` is 520 bytes, and a `Vec` grown by a push
            // reserves four (docs/benchmarks/subnet-rounds.md, "What a host holds").
            ports: Vec::with_capacity(port_guids.len()),
            // QP0 and QP1 of every port and one QP of a consumer (a host's IPoIB QP): a `Qp`
            // is 152 bytes, and the fourth slot a push reserves stayed empty on every host.
            qps: QpTable::with_capacity(2 * port_guids.len() + 1),
            cqs: Vec::new(),
            cq_total: 0,
            special_cqs: Vec::new(),
            next_cq: 0,
            next_qpn: FIRST_QPN,
            sendq: VecDeque::new(),
            mcast: Vec::new(),
            mcast_loopback: false,
            factory: None,
            sched: Schedule::default(),
            connected_dirty: false,
            rx_quiet: false,
            last_now: Instant::ZERO,
            counters: HcaCounters::default(),
            mrs: mr::MrTable::default(),
            node_description: ipoib_wire::smp::NodeDescriptionRepr::new("ipoib-fabric HCA"),
            sma_out: Vec::new(),
            sma_changed: Vec::new(),
            port_requests: Vec::new(),
            spare: None,
            data_spares: Vec::new(),
        };
        for (i, g) in port_guids.into_iter().enumerate() {
            let num = (i + 1) as u8;
            hca.ports.push(Port::new(num, g));
            let cq = hca.create_cq();
            hca.special_cqs.push(cq);
            for n in 0..2u8 {
                let init = QpInit {
                    qp_type: QpType::Ud,
                    port: num,
                    send_cq: cq,
                    recv_cq: cq,
                    privileged: true,
                    sq_sig_all: false,
                };
                let h = special_qpn(num, u32::from(n));
                let mut q = Qp::new(h, &init, Some(n), QpKind::Ud);
                q.state = QpState::Rts;
                q.qkey = if n == 1 { QKey::GSI } else { QKey(0) };
                hca.qps.insert(h, q);
            }
        }
        hca
    }

    /// Hands out QPNs from `qpn` on instead of [`FIRST_QPN`] (taken into 2..=0xFFFFFE): a host
    /// that restarts with another first QPN does not reuse the numbers its peers may still hold
    /// for its previous life (the runtime draws it at random; the simulator keeps [`FIRST_QPN`]).
    pub fn with_first_qpn(mut self, qpn: Qpn) -> Hca {
        self.next_qpn = qpn.clamp(2, 0x00ff_fffe);
        self
    }

    /// Node GUID.
    pub fn node_guid(&self) -> Guid {
        self.node_guid
    }

    /// Number of ports.
    pub fn port_count(&self) -> u8 {
        self.ports.len() as u8
    }

    /// Port `num` (1-based).
    pub fn port(&self, num: u8) -> Option<&Port> {
        self.ports.get(usize::from(num).checked_sub(1)?)
    }

    pub(crate) fn port_mut(&mut self, num: u8) -> Option<&mut Port> {
        self.ports.get_mut(usize::from(num).checked_sub(1)?)
    }

    /// Sets port `num`'s MTUCap (its cable's MTU, as `Switch::set_port_mtu_cap`). False for a
    /// port the HCA does not have or an undefined MTU code.
    pub fn set_port_mtu_cap(&mut self, num: u8, mtu: ipoib_wire::Mtu) -> bool {
        match self.port_mut(num) {
            Some(p) if mtu.is_valid() => {
                p.mtu_cap = mtu;
                true
            }
            _ => false,
        }
    }

    /// Counters of packets and drops.
    pub fn counters(&self) -> &HcaCounters {
        &self.counters
    }

    /// Loop multicast sends back to the other QPs of the sending port attached to the group
    /// (default off; see the module docs).
    pub fn set_mcast_loopback(&mut self, on: bool) {
        self.mcast_loopback = on;
    }

    /// Installs the maker of RC/UC engines ([`connected`]).
    pub fn set_engine_factory(&mut self, f: EngineFactory) {
        self.factory = Some(f);
    }

    /// This HCA with `f` making its RC/UC engines ([`Hca::set_engine_factory`]).
    pub fn with_engine(mut self, f: EngineFactory) -> Hca {
        self.set_engine_factory(f);
        self
    }

    /// The CQ that QP0 and QP1 of `port` complete into.
    pub fn special_cq(&self, port: u8) -> Option<CqId> {
        self.special_cqs
            .get(usize::from(port).checked_sub(1)?)
            .copied()
    }

    /// Handle of QP1 of `port` (see [`special_qpn`]).
    pub fn gsi_qp(port: u8) -> Qpn {
        special_qpn(port, 1)
    }

    /// A new completion queue (unbounded: the emulation has no CQ overrun).
    pub fn create_cq(&mut self) -> CqId {
        let id = CqId(self.next_cq);
        self.next_cq += 1;
        self.cqs.push(VecDeque::new());
        id
    }

    /// Up to `max` completions, oldest first.
    pub fn poll_cq(&mut self, cq: CqId, max: usize) -> Vec<Completion> {
        match cq_mut(&mut self.cqs, cq) {
            // An empty queue (a host polls its CQs after every event) allocates and drains nothing.
            Some(q) if q.is_empty() => Vec::new(),
            Some(q) => {
                let n = q.len().min(max);
                self.cq_total -= n;
                q.drain(..n).collect()
            }
            None => Vec::new(),
        }
    }

    /// The oldest completion of `cq`, if any: [`Hca::poll_cq`] one at a time, without a vector.
    pub fn poll_one(&mut self, cq: CqId) -> Option<Completion> {
        let c = cq_mut(&mut self.cqs, cq)?.pop_front()?;
        self.cq_total -= 1;
        Some(c)
    }

    /// Completions waiting in all CQs together: when 0, every CQ is empty, and a host's round
    /// skips its look at each ([`Hca::cq_len`], [`Hca::poll_cq`]).
    pub fn completions_waiting(&self) -> usize {
        self.cq_total
    }

    /// Completions waiting in `cq`.
    pub fn cq_len(&self, cq: CqId) -> usize {
        usize::try_from(cq.0)
            .ok()
            .and_then(|i| self.cqs.get(i))
            .map_or(0, VecDeque::len)
    }

    /// Creates a QP in the Reset state. QPNs are handed out by a counter from [`FIRST_QPN`], so
    /// they are the same in every run. RC/UC need an engine factory.
    pub fn create_qp(&mut self, init: QpInit) -> Result<Qpn, VerbsError> {
        self.port(init.port)
            .ok_or(VerbsError::NoSuchPort(init.port))?;
        for cq in [init.send_cq, init.recv_cq] {
            if usize::try_from(cq.0).map_or(true, |i| i >= self.cqs.len()) {
                return Err(VerbsError::UnknownCq(cq));
            }
        }
        let qpn = self.alloc_qpn()?;
        let kind = match init.qp_type {
            QpType::Ud => QpKind::Ud,
            QpType::Rc | QpType::Uc => {
                let f = self.factory.as_mut().ok_or(VerbsError::Unsupported(
                    "RC/UC without a connected-QP engine",
                ))?;
                let e = f(init.qp_type, qpn);
                self.sched.touch(qpn, e.poll_timeout());
                QpKind::Connected(e)
            }
        };
        self.qps.insert(qpn, Qp::new(qpn, &init, None, kind));
        Ok(qpn)
    }

    fn alloc_qpn(&mut self) -> Result<Qpn, VerbsError> {
        for _ in 0..0x00ff_fffd {
            let q = self.next_qpn;
            self.next_qpn = if q >= 0x00ff_fffe { 2 } else { q + 1 };
            if !self.qps.contains_key(&q) {
                return Ok(q);
            }
        }
        Err(VerbsError::NoQpnLeft)
    }

    /// Destroys a QP: its queued work and multicast attachments go without completions.
    /// QP0/QP1 cannot be destroyed.
    pub fn destroy_qp(&mut self, qpn: Qpn) -> Result<(), VerbsError> {
        let qp = self.qps.get(&qpn).ok_or(VerbsError::UnknownQp(qpn))?;
        if qp.special.is_some() {
            return Err(VerbsError::Unsupported("destroying QP0/QP1"));
        }
        self.qps.remove(&qpn);
        self.sched.remove(qpn);
        self.sendq.retain(|(q, _)| *q != qpn);
        self.mcast.retain(|&(_, _, q)| q != qpn);
        Ok(())
    }

    /// QPs of `qp_type` the HCA holds, QP0 and QP1 among the UD ones (what a test counts to find
    /// a QP that was never destroyed).
    pub fn qp_count(&self, qp_type: QpType) -> usize {
        self.qps.values().filter(|q| q.qp_type == qp_type).count()
    }

    /// Attributes of a QP.
    pub fn qp_info(&self, qpn: Qpn) -> Option<QpInfo> {
        let q = self.qps.get(&qpn)?;
        let state = self.qp_state(qpn)?;
        Some(QpInfo {
            qp_type: q.qp_type,
            state,
            port: q.port,
            pkey_index: q.pkey_index,
            qkey: q.qkey,
            recv_posted: q.recv.len(),
            mcast_groups: self.mcast.iter().filter(|&&(_, _, q)| q == qpn).count(),
        })
    }

    /// The state of a QP ([`QpInfo::state`] without the rest: a data path's check, which
    /// [`Hca::qp_info`]'s count of multicast groups would cost a walk over the groups).
    pub fn qp_state(&self, qpn: Qpn) -> Option<QpState> {
        let q = self.qps.get(&qpn)?;
        Some(match &q.kind {
            QpKind::Connected(e) => e.state(),
            QpKind::Ud => q.state,
        })
    }

    /// The Q_Key of a QP ([`QpInfo::qkey`]; see [`Hca::qp_state`]).
    pub fn qp_qkey(&self, qpn: Qpn) -> Option<QKey> {
        self.qps.get(&qpn).map(|q| q.qkey)
    }

    /// Receive buffers posted to a QP and not yet used ([`QpInfo::recv_posted`]; see
    /// [`Hca::qp_state`]).
    pub fn qp_recv_posted(&self, qpn: Qpn) -> Option<usize> {
        self.qps.get(&qpn).map(|q| q.recv.len())
    }

    /// Moves a QP through its state diagram (IBA 1 §10.3.1). QP0/QP1 only accept RTS (to recover
    /// from SQE) and Error.
    pub fn modify_qp(&mut self, qpn: Qpn, m: ModifyQp) -> Result<(), VerbsError> {
        let now = self.last_now;
        let nports = self.ports.len();
        let qp = self.qps.get_mut(&qpn).ok_or(VerbsError::UnknownQp(qpn))?;
        let from = match &qp.kind {
            QpKind::Connected(e) => e.state(),
            QpKind::Ud => qp.state,
        };
        let to = m.target();
        if !transition_allowed(from, to)
            || (qp.special.is_some() && !matches!(to, QpState::Rts | QpState::Err))
        {
            return Err(VerbsError::InvalidTransition { from, to });
        }
        if let ModifyQp::Init {
            port, pkey_index, ..
        } = m
        {
            if port == 0 || usize::from(port) > nports {
                return Err(VerbsError::NoSuchPort(port));
            }
            if pkey_index >= port::PKEY_TABLE_SIZE {
                return Err(VerbsError::BadPkeyIndex(pkey_index));
            }
        }
        let attr = match m {
            ModifyQp::Rtr(a) | ModifyQp::Rts(a) => a,
            _ => None,
        };
        if let QpKind::Connected(e) = &mut qp.kind {
            if matches!(to, QpState::Rtr) && attr.is_none() {
                return Err(VerbsError::InvalidArgument("RC/UC RTR needs ConnectedAttr"));
            }
            let r = e.modify(now, to, attr.as_ref());
            self.sched.touch(qpn, e.poll_timeout());
            r?;
            self.connected_dirty = true;
        }
        match m {
            ModifyQp::Init {
                port,
                pkey_index,
                qkey,
            } => {
                qp.port = port;
                qp.pkey_index = pkey_index;
                qp.qkey = qkey;
            }
            ModifyQp::Rtr(Some(a)) | ModifyQp::Rts(Some(a)) => {
                qp.pkey_index = a.pkey_index;
                qp.connected = Some(a);
            }
            _ => {}
        }
        qp.state = to;
        match to {
            QpState::Reset => {
                qp.recv.clear();
                qp.next_psn = 0;
                self.sendq.retain(|(q, _)| *q != qpn);
            }
            QpState::Err => self.flush_qp(qpn),
            _ => {}
        }
        Ok(())
    }

    /// Completes every outstanding WR of `qpn` with WrFlushErr (IBA 1 §10.3.1 Error state).
    fn flush_qp(&mut self, qpn: Qpn) {
        let mut sends = Vec::new();
        self.sendq.retain(|(q, wr)| {
            if *q == qpn {
                sends.push(wr.wr_id);
            }
            *q != qpn
        });
        let Some(qp) = self.qps.get_mut(&qpn) else {
            return;
        };
        let (scq, rcq) = (qp.send_cq, qp.recv_cq);
        let recvs: Vec<u64> = qp.recv.drain(..).map(|r| r.wr_id).collect();
        for id in sends {
            let c = ud::send_completion(id, WcStatus::WrFlushErr, qpn, 0);
            self.push_completion(scq, c);
        }
        for id in recvs {
            let mut c = ud::send_completion(id, WcStatus::WrFlushErr, qpn, 0);
            c.opcode = crate::hw::verbs::WcOpcode::Recv;
            self.push_completion(rcq, c);
        }
    }

    pub(crate) fn push_completion(&mut self, cq: CqId, c: Completion) {
        push_into(&mut self.cqs, &mut self.cq_total, cq, c);
    }

    /// Posts a send. UD: the QP must be in RTS (SQD: queued until RTS), the WR a SEND or SEND
    /// with immediate with a destination. Errors found when the packet is built (too long for
    /// the MTU, controlled Q_Key, multicast without GRH) come back as error completions.
    pub fn post_send(&mut self, qpn: Qpn, wr: SendWr) -> Result<(), VerbsError> {
        let now = self.last_now;
        let qp = self.qps.get_mut(&qpn).ok_or(VerbsError::UnknownQp(qpn))?;
        if wr.data_len() > MAX_MSG {
            return Err(VerbsError::MessageTooLong {
                len: wr.data_len(),
                max: MAX_MSG,
            });
        }
        if let QpKind::Connected(e) = &mut qp.kind {
            let r = e.post_send(now, wr);
            self.sched.touch(qpn, e.poll_timeout());
            r?;
            self.connected_dirty = true;
            return Ok(());
        }
        if !matches!(qp.state, QpState::Rts | QpState::Sqd) {
            return Err(VerbsError::WrongState {
                qpn,
                state: qp.state,
            });
        }
        if wr.ud.is_none() {
            return Err(VerbsError::InvalidArgument("UD send without destination"));
        }
        if wr.local.is_some() {
            return Err(VerbsError::Unsupported(
                "UD sends carry their bytes in the work request",
            ));
        }
        if !matches!(wr.op, SendOp::Send | SendOp::SendWithImm(_)) {
            return Err(VerbsError::Unsupported(
                "UD supports SEND only (IBA 1 §9.8)",
            ));
        }
        if self.sendq.capacity() == 0 {
            // A host's first send: room for one, as a host of `ipoib sim` has one MAD at a time
            // in flight here (a `VecDeque` grown by a push reserves four, 656 bytes); a second
            // grows it as before.
            self.sendq.reserve_exact(1);
        }
        self.sendq.push_back((qpn, wr));
        Ok(())
    }

    /// Posts a receive buffer (any state but Reset, IBA 1 §10.8.3).
    pub fn post_recv(&mut self, qpn: Qpn, wr: RecvWr) -> Result<(), VerbsError> {
        let qp = self.qps.get_mut(&qpn).ok_or(VerbsError::UnknownQp(qpn))?;
        qp.check_post_recv()?;
        if let QpKind::Connected(e) = &mut qp.kind {
            let r = e.post_recv(wr);
            self.sched.touch(qpn, e.poll_timeout());
            r?;
            self.connected_dirty = true;
            return Ok(());
        }
        qp.recv.push_back(wr);
        Ok(())
    }

    /// Attaches a UD QP to a multicast group of its port (IBA 1 §10.5.2; ibv_attach_mcast).
    /// Attaching twice is harmless.
    pub fn attach_mcast(&mut self, qpn: Qpn, mgid: Gid, mlid: u16) -> Result<(), VerbsError> {
        self.check_mcast(qpn, mgid, mlid)?;
        if let Err(i) = self.mcast.binary_search(&(mlid, mgid, qpn)) {
            self.mcast.insert(i, (mlid, mgid, qpn));
        }
        Ok(())
    }

    /// Detaches a QP from a multicast group.
    pub fn detach_mcast(&mut self, qpn: Qpn, mgid: Gid, mlid: u16) -> Result<(), VerbsError> {
        self.check_mcast(qpn, mgid, mlid)?;
        let Ok(i) = self.mcast.binary_search(&(mlid, mgid, qpn)) else {
            return Err(VerbsError::InvalidArgument("QP not attached to this group"));
        };
        self.mcast.remove(i);
        Ok(())
    }

    fn check_mcast(&self, qpn: Qpn, mgid: Gid, mlid: u16) -> Result<(), VerbsError> {
        let qp = self.qps.get(&qpn).ok_or(VerbsError::UnknownQp(qpn))?;
        if qp.qp_type != QpType::Ud || qp.special.is_some() {
            return Err(VerbsError::InvalidArgument(
                "only UD QPs other than QP0/QP1 attach to multicast groups",
            ));
        }
        if !mgid.is_multicast() || !is_multicast_lid(mlid) {
            return Err(VerbsError::InvalidArgument("not a multicast GID/LID"));
        }
        Ok(())
    }
}

impl Device for Hca {
    fn receive(&mut self, now: Instant, port: u8, packet: Vec<u8>, tx: &mut Tx) {
        self.receive_frame(now, port, Frame::new(packet), tx);
    }

    fn receive_frame(&mut self, now: Instant, port: u8, packet: Frame, tx: &mut Tx) {
        self.last_now = self.last_now.max(now);
        self.rx_quiet = false;
        if let Some(p) = self.port_mut(port) {
            p.traffic.count_rcv(&packet);
        }
        // A datagram's data is received into a spent allocation (`ud::received_data`, which
        // takes the last): when the HCA keeps none of its own sends' that would hold it (a
        // receiving host's sends are acknowledgements), one of the simulator's spent packets (a
        // delivered packet's buffer given back by its consumer, `Tx::recycle`), not a new one.
        if self
            .data_spares
            .last()
            .is_none_or(|b| b.capacity() < packet.len())
        {
            let b = tx.spare();
            if b.capacity() >= packet.len() {
                if self.data_spares.len() >= ud::DATA_SPARES {
                    if let Some(short) = self.data_spares.pop() {
                        tx.recycle(short);
                    }
                }
                self.data_spares.push(b);
            } else {
                tx.recycle(b);
            }
        }
        self.rx(now, port, &packet, None);
        let buf = packet.into_spare();
        if self.spare.is_none() {
            self.spare = Some(buf);
        } else {
            tx.recycle(buf);
        }
        self.flush(now, tx);
    }

    fn handle_timeout(&mut self, now: Instant, tx: &mut Tx) {
        self.last_now = self.last_now.max(now);
        for q in self.sched.due(now) {
            if let Some(QpKind::Connected(e)) = self.qps.get_mut(&q).map(|q| &mut q.kind) {
                e.handle_timeout(now);
                self.sched.touch(q, e.poll_timeout());
            }
        }
        self.flush(now, tx);
    }

    fn poll_timeout(&self) -> Option<Instant> {
        let work = (!self.sendq.is_empty() || self.connected_dirty).then_some(self.last_now);
        work.into_iter().chain(self.sched.next_timer()).min()
    }

    fn link_state(&mut self, now: Instant, port: u8, up: bool, _tx: &mut Tx) {
        self.last_now = self.last_now.max(now);
        if let Some(p) = self.port_mut(port) {
            p.set_phys(up);
        }
    }

    fn configure(&mut self, now: Instant, config: Config, _tx: &mut Tx) {
        self.last_now = self.last_now.max(now);
        match config {
            Config::Port(pc) => {
                if !self.port_mut(pc.port).is_some_and(|p| p.apply(&pc)) {
                    self.counters.config_ignored += 1;
                }
            }
            // IBA 1 §14.4.11, as the SMA's write with the bit set (`sma::apply_port_info`).
            Config::ClientReregister(port) => match self.port_mut(port) {
                Some(p) => p.client_reregisters += 1,
                None => self.counters.config_ignored += 1,
            },
            Config::Lft(_) | Config::Mft { .. } => self.counters.config_ignored += 1,
        }
    }

    fn as_any(&self) -> &dyn Any {
        self
    }

    fn as_any_mut(&mut self) -> &mut dyn Any {
        self
    }
}

/// Appends `c` to completion queue `cq` (none if the CQ does not exist) and counts it in
/// `total` ([`Hca::completions_waiting`]).
fn push_into(cqs: &mut [VecDeque<Completion>], total: &mut usize, cq: CqId, c: Completion) {
    if let Some(q) = cq_mut(cqs, cq) {
        q.push_back(c);
        *total += 1;
    }
}

/// Completion queue `cq` of `cqs` (none if the CQ does not exist).
fn cq_mut(cqs: &mut [VecDeque<Completion>], cq: CqId) -> Option<&mut VecDeque<Completion>> {
    cqs.get_mut(usize::try_from(cq.0).ok()?)
}
