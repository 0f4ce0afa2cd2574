//! An external MAD user attached to a host's management port, what Linux's `umad` device gives a
//! program (`/dev/infiniband/umadN`, `ib_user_mad.c`): a [`UmadAgent`] the host dispatches to
//! like its own agents, fed and drained from outside the simulation (the runtime's ibsim server
//! serves one per connected program).
//!
//! - Sending ([`UmadAgent::send`]): the MAD leaves from the port's QP0 when its class is
//!   SubnLid or SubnDirectedRoute (IBA 1 §13.5.1: SMPs use QP0 only, on VL15 as the HCA builds
//!   them) and from QP1 otherwise, with LRH, BTH and DETH built by the HCA model exactly as for
//!   the host's own agents; a request's TID is remembered so that its response comes back to
//!   this agent (IBA 1 §13.4.6.2). As Linux's `ib_umad_write` does, a request leaves with the
//!   agent's number ([`UmadAgent::hi_tid`], new at each attach) in the TID's high 32 bits over
//!   the user's low 32 bits, so that two users, or a user and one of the host's own agents
//!   (which choose their TIDs' high halves themselves, as Linux's kernel agents put their
//!   `hi_tid` there), never send the same TID and each response reaches its requester; the
//!   response is handed over with the high bits the user sent (ibsim's clients route by them,
//!   docs/IBSIM.md; docs/DEPLOYED.md "Linux MAD layer: TransactionIDs").
//! - Receiving ([`UmadAgent::recv`]): responses to this agent's requests, and requests of a
//!   class, class version and method it registered ([`Host::umad_register`], the
//!   `ib_user_mad_reg_req` semantics: one agent per (class, method), a registration that
//!   collides with another agent's is refused whole).
//! - RMPP ([`RmppMode`]): by default the segments of a response reach the user as they come, to
//!   acknowledge itself; a user that cannot (libumad2sim carries single MADs) gets
//!   [`RmppMode::FirstSegment`]: the agent acknowledges every DATA segment itself (IBA 1 §13.6.3,
//!   as Linux's `mad_rmpp.c` does for a user it reassembles for) and hands the user the first one
//!   only, so that the sender completes its transfer and the user sees one response; and it takes
//!   the ACKs of the user's own RMPP responses, as the sending kernel would.
//! - Both queues are bounded ([`UMAD_QUEUE_DEPTH`]); what does not fit is dropped and counted, as
//!   is a MAD to send that is not a MAD (short, no parsable header). Nothing here panics on bytes.
//!
//! A detached agent ([`Host::umad_detach`]) keeps its slot in the host's agent list (agent ids are
//! indices) and is reused by the next [`Host::umad_attach`]; it receives nothing while detached.

use super::{AgentId, Host};
use crate::hw::hca::special_qpn;
use ipoib_proto::mad_agent::{MadAddr, MadAgent, MadIn, MadOut};
use ipoib_proto::sa::rmpp::ack_for;
use ipoib_proto::time::Instant;
use ipoib_wire::mad::{MadHeaderRepr, Method, MgmtClass, RmppRepr, RmppType, MAD_LEN};
use std::collections::{HashMap, VecDeque};

/// Where a MAD's TransactionID starts (IBA 1 §13.4.3: bytes 8-15 of the common header).
const TID_OFFSET: usize = 8;

/// The most MADs each queue of a [`UmadAgent`] holds.
pub const UMAD_QUEUE_DEPTH: usize = 1024;

/// True for the classes that travel on QP0 (IBA 1 §13.5.1).
pub fn is_smp_class(class: MgmtClass) -> bool {
    matches!(class, MgmtClass::SubnLid | MgmtClass::SubnDirectedRoute)
}

/// The window a [`RmppMode::FirstSegment`] agent grants in its ACKs (Linux's receive window).
pub const RMPP_WINDOW: u32 = 32;

/// What a umad agent does with the segments of an RMPP response (module docs).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum RmppMode {
    /// Every segment to the user, who acknowledges them.
    #[default]
    Pass,
    /// The agent acknowledges every DATA segment; the user gets the first.
    FirstSegment,
}

/// One registration: requests of `class` with `version` and a method in `methods` (bit `m` for
/// method `m`, 0..=127; the R bit is not a method) reach the agent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Registration {
    /// Management class.
    pub class: MgmtClass,
    /// Class version.
    pub version: u8,
    /// Method mask.
    pub methods: u128,
}

impl Registration {
    /// The methods of the mask, in order.
    pub fn method_list(&self) -> impl Iterator<Item = u8> + '_ {
        (0u8..128).filter(|m| self.methods & (1u128 << m) != 0)
    }

    fn accepts(&self, h: &MadHeaderRepr) -> bool {
        let m = u8::from(h.method) & 0x7f;
        self.class == h.mgmt_class
            && self.version == h.class_version
            && self.methods & (1 << m) != 0
    }
}

/// Why a umad operation was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum UmadError {
    /// The bytes are not a MAD (shorter than 256 bytes, or a header that does not parse).
    #[error("not a MAD")]
    NotAMad,
    /// The send queue is full.
    #[error("send queue full")]
    Full,
    /// No attached umad agent with that id on this host.
    #[error("no such umad agent")]
    NoAgent,
    /// Another agent already receives these requests (class, method).
    #[error("class {class:#04x} method {method:#04x} already registered by another agent")]
    InUse {
        /// Class.
        class: u8,
        /// Method.
        method: u8,
    },
}

/// Counters of one [`UmadAgent`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct UmadCounters {
    /// MADs accepted for sending.
    pub sent: u64,
    /// MADs queued for the user.
    pub received: u64,
    /// MADs refused for sending because they were not MADs.
    pub not_a_mad: u64,
    /// MADs refused for sending because the send queue was full.
    pub send_full: u64,
    /// MADs for the user dropped because the receive queue was full.
    pub recv_full: u64,
    /// Requests handed to the agent that no registration accepts (wrong class version), or that
    /// arrived while detached: dropped.
    pub unwanted: u64,
    /// RMPP DATA segments acknowledged by the agent ([`RmppMode::FirstSegment`]).
    pub rmpp_acked: u64,
    /// RMPP DATA segments after the first, acknowledged and not handed to the user.
    pub rmpp_later: u64,
    /// RMPP ACKs, STOPs and ABORTs of this user's transfers, taken by the agent and not handed
    /// to the user ([`RmppMode::FirstSegment`]: the sender's side of the kernel's RMPP layer).
    pub rmpp_acks_taken: u64,
}

/// The agent of one external MAD user. See the module docs.
#[derive(Debug, Default)]
pub struct UmadAgent {
    attached: bool,
    registrations: Vec<Registration>,
    rx: VecDeque<MadIn>,
    tx: VecDeque<MadOut>,
    counters: UmadCounters,
    rmpp: RmppMode,
    /// The high 32 bits of this agent's requests on the wire (Linux's `hi_tid`), given by
    /// [`Host::umad_attach`] (never 0 there).
    hi_tid: u32,
    /// The user's own high 32 bits of each request's TID, by its low 32 bits, given back in the
    /// response; at most [`super::TID_MEMORY`], the oldest forgotten first (`user_hi_order`).
    /// Hashed by the host's keyed TID hash (a look-up, an insert and a removal per MAD, which
    /// a B-tree of 4,096 took 1,000 instructions for; the order reaches no output).
    user_hi: HashMap<u64, u32, super::TidHash>,
    user_hi_order: VecDeque<u32>,
}

impl UmadAgent {
    /// An attached agent with no registration (it receives responses only).
    pub fn new() -> UmadAgent {
        UmadAgent {
            attached: true,
            ..UmadAgent::default()
        }
    }

    /// Queues `mad` for `to` (QP0 or QP1 by its class, module docs). `mad` shorter than 256
    /// bytes is refused; a longer one is cut to 256 (QP0/QP1 carry 256-byte MADs).
    pub fn send(&mut self, to: MadAddr, mad: &[u8]) -> Result<(), UmadError> {
        self.send_with(to, mad, Vec::new())
    }

    /// [`UmadAgent::send`] with the MAD copied into `buf`'s allocation (its bytes replaced), a
    /// spent MAD's, say, instead of a new one.
    pub fn send_with(
        &mut self,
        to: MadAddr,
        mad: &[u8],
        mut buf: Vec<u8>,
    ) -> Result<(), UmadError> {
        // A header parses from any 24 bytes: the length is the whole check.
        let Some(mad) = mad.get(..MAD_LEN) else {
            self.counters.not_a_mad += 1;
            return Err(UmadError::NotAMad);
        };
        if self.tx.len() >= UMAD_QUEUE_DEPTH {
            self.counters.send_full += 1;
            return Err(UmadError::Full);
        }
        self.counters.sent += 1;
        buf.clear();
        buf.extend_from_slice(mad);
        self.stamp_tid(&mut buf);
        self.tx.push_back(MadOut { to, mad: buf });
        Ok(())
    }

    /// The agent's number in the high 32 bits of a request's TID, over the user's low 32 bits
    /// (Linux `ib_umad_write`; a response, TrapRepress included, as `ib_response_mad` counts
    /// it, keeps the TID it answers). The user's high bits are kept to be given back. An RMPP
    /// ACK of a response's segment has the R bit flipped (Linux `format_ack`, as
    /// `ipoib_proto::sa::rmpp::ack_for` builds it), a request method: it goes with the agent's
    /// number, the transfer's TID on the wire.
    fn stamp_tid(&mut self, mad: &mut [u8]) {
        let Ok(h) = MadHeaderRepr::parse_bytes(mad) else {
            return;
        };
        if h.method.is_response() || h.method == Method::TrapRepress {
            return;
        }
        let (hi, lo) = ((h.transaction_id >> 32) as u32, h.transaction_id as u32);
        mad[TID_OFFSET..TID_OFFSET + 4].copy_from_slice(&self.hi_tid.to_be_bytes());
        if self.user_hi.insert(u64::from(lo), hi).is_none() {
            self.user_hi_order.push_back(lo);
            if self.user_hi_order.len() > super::TID_MEMORY {
                if let Some(old) = self.user_hi_order.pop_front() {
                    self.user_hi.remove(&u64::from(old));
                }
            }
        }
    }

    /// A response to one of this agent's requests with the high 32 bits of the TID the user sent
    /// (what ibsim's clients route by: docs/IBSIM.md).
    fn unstamp_tid(&self, mad: &mut [u8]) {
        let Ok(h) = MadHeaderRepr::parse_bytes(mad) else {
            return;
        };
        if !h.method.is_response() || (h.transaction_id >> 32) as u32 != self.hi_tid {
            return;
        }
        if let Some(hi) = self.user_hi.get(&u64::from(h.transaction_id as u32)) {
            mad[TID_OFFSET..TID_OFFSET + 4].copy_from_slice(&hi.to_be_bytes());
        }
    }

    /// The high 32 bits this agent's requests carry on the wire.
    pub fn hi_tid(&self) -> u32 {
        self.hi_tid
    }

    /// The oldest MAD for the user.
    pub fn recv(&mut self) -> Option<MadIn> {
        self.rx.pop_front()
    }

    /// MADs waiting for the user.
    pub fn pending(&self) -> usize {
        self.rx.len()
    }

    /// The registrations, in the order made.
    pub fn registrations(&self) -> &[Registration] {
        &self.registrations
    }

    /// True while attached.
    pub fn is_attached(&self) -> bool {
        self.attached
    }

    /// Counters.
    pub fn counters(&self) -> &UmadCounters {
        &self.counters
    }

    /// How RMPP responses are handled (module docs).
    pub fn set_rmpp(&mut self, mode: RmppMode) {
        self.rmpp = mode;
    }

    fn reset(&mut self) {
        *self = UmadAgent::new();
    }

    /// [`RmppMode::FirstSegment`]: acknowledges a DATA segment of a response, or takes an ACK,
    /// STOP or ABORT of the user's own transfer; true when the user should not see it (those,
    /// and DATA segments after the first).
    fn take_rmpp(&mut self, h: &MadHeaderRepr, m: &MadIn) -> bool {
        if self.rmpp != RmppMode::FirstSegment || !h.mgmt_class.uses_rmpp() {
            return false;
        }
        let Some(r) = m
            .mad
            .get(24..36)
            .and_then(|b| RmppRepr::parse_bytes(b).ok())
        else {
            return false;
        };
        // IBA 1 §13.6.3: the ACKs (and STOP, ABORT) of a transfer the user sent go to the
        // sender's RMPP layer, not to the user (Linux `mad_rmpp.c`); they carry the request
        // method of the response they acknowledge, so a user registered for it (OpenSM for
        // GetTable) took them for new requests and answered them.
        if r.is_active()
            && matches!(
                r.rmpp_type,
                RmppType::Ack | RmppType::Stop | RmppType::Abort
            )
        {
            self.counters.rmpp_acks_taken += 1;
            return true;
        }
        if !h.method.is_response() || !r.is_active() || r.rmpp_type != RmppType::Data {
            return false;
        }
        let seg = r.segment_number();
        let nwl = if r.flags.last() {
            seg
        } else {
            seg.saturating_add(RMPP_WINDOW)
        };
        // IBA 1 §13.6.3: the receiver acknowledges each segment, granting its window.
        if let Some(ack) = ack_for(&m.mad, seg, nwl) {
            if self.tx.len() < UMAD_QUEUE_DEPTH {
                self.counters.rmpp_acked += 1;
                self.tx.push_back(MadOut {
                    to: m.from,
                    mad: ack.to_vec(),
                });
            } else {
                self.counters.send_full += 1;
            }
        }
        if seg != 1 {
            self.counters.rmpp_later += 1;
            return true;
        }
        false
    }
}

impl MadAgent for UmadAgent {
    fn handle_mad(&mut self, _now: Instant, m: MadIn) {
        let Ok(h) = MadHeaderRepr::parse_bytes(&m.mad) else {
            self.counters.unwanted += 1;
            return;
        };
        let wanted = self.attached
            && (h.method.is_response() || self.registrations.iter().any(|r| r.accepts(&h)));
        if !wanted {
            self.counters.unwanted += 1;
            return;
        }
        // An RMPP ACK answers the segment with the TID on the wire.
        if self.take_rmpp(&h, &m) {
            return;
        }
        if self.rx.len() >= UMAD_QUEUE_DEPTH {
            self.counters.recv_full += 1;
            return;
        }
        self.counters.received += 1;
        let mut m = m;
        self.unstamp_tid(&mut m.mad);
        self.rx.push_back(m);
    }

    fn poll_transmit(&mut self, _now: Instant) -> Option<MadOut> {
        self.tx.pop_front()
    }

    fn poll_timeout(&self) -> Option<Instant> {
        None
    }

    fn handle_timeout(&mut self, _now: Instant) {}
}

impl Host {
    /// Attaches an external MAD user to the management port: a detached [`UmadAgent`] is reused,
    /// else one is added. Receive buffers are posted on the port's QP0 on the first attach (SMP
    /// responses come back there).
    pub fn umad_attach(&mut self) -> AgentId {
        self.ensure_smi_recv();
        self.dirty = true;
        // Each attach a new number, as each Linux registration a new `hi_tid`: a response to the
        // previous user's request names no agent.
        self.umad_hi_tid = self.umad_hi_tid.checked_add(1).unwrap_or(1);
        let hi_tid = self.umad_hi_tid;
        for (i, a) in self.agents.list.iter_mut().enumerate() {
            if let Some(u) = a.as_any_mut().downcast_mut::<UmadAgent>() {
                if !u.attached {
                    u.reset();
                    u.hi_tid = hi_tid;
                    return AgentId(i);
                }
            }
        }
        self.add_agent(UmadAgent {
            hi_tid,
            ..UmadAgent::new()
        })
    }

    /// Registers `agent` for requests of `reg` (all or nothing; see the module docs).
    pub fn umad_register(&mut self, agent: AgentId, reg: Registration) -> Result<(), UmadError> {
        if self.umad(agent).is_none_or(|u| !u.attached) {
            return Err(UmadError::NoAgent);
        }
        let class = u8::from(reg.class);
        for m in reg.method_list() {
            let taken = self
                .method_servers
                .get(&(class, m))
                .is_some_and(|&a| a != agent)
                || self.servers.get(&class).is_some_and(|&a| a != agent);
            if taken {
                return Err(UmadError::InUse { class, method: m });
            }
        }
        for m in reg.method_list() {
            self.method_servers.insert((class, m), agent);
        }
        if let Some(u) = self.umad_mut(agent) {
            u.registrations.push(reg);
        }
        Ok(())
    }

    /// Withdraws every registration of `agent` (it keeps receiving responses).
    pub fn umad_unregister(&mut self, agent: AgentId) {
        self.method_servers.retain(|_, a| *a != agent);
        if let Some(u) = self.umad_mut(agent) {
            u.registrations.clear();
        }
    }

    /// Detaches `agent`: its registrations are withdrawn, its queues emptied, the TIDs of its
    /// requests forgotten (a late response is counted as an unknown TID, not handed to the next
    /// user of the agent), and it is kept for reuse.
    pub fn umad_detach(&mut self, agent: AgentId) {
        self.method_servers.retain(|_, a| *a != agent);
        self.forget_tids(agent);
        if let Some(u) = self.umad_mut(agent) {
            u.reset();
            u.attached = false;
        }
    }

    /// Queues `mad` for sending by `agent` (see [`UmadAgent::send`]); the host sends it on its
    /// next activity ([`Host::drive`]).
    pub fn umad_send(&mut self, agent: AgentId, to: MadAddr, mad: &[u8]) -> Result<(), UmadError> {
        self.umad_send_with(agent, to, mad, Vec::new())
    }

    /// [`Host::umad_send`] with the MAD copied into `buf`'s allocation ([`UmadAgent::send_with`]).
    pub fn umad_send_with(
        &mut self,
        agent: AgentId,
        to: MadAddr,
        mad: &[u8],
        buf: Vec<u8>,
    ) -> Result<(), UmadError> {
        self.dirty = true;
        match self.umad_mut(agent) {
            Some(u) if u.attached => u.send_with(to, mad, buf),
            _ => Err(UmadError::NoAgent),
        }
    }

    /// Takes every MAD waiting for `agent`'s user, oldest first (the host has nothing to do
    /// afterwards, so it is not woken).
    pub fn umad_take(&mut self, agent: AgentId) -> Vec<MadIn> {
        match self.umad_mut(agent) {
            Some(u) => u.rx.drain(..).collect(),
            None => Vec::new(),
        }
    }

    /// Takes the MADs waiting for `agent`'s user one by one, oldest first, as
    /// [`Host::umad_take`] without gathering them.
    pub fn umad_drain(&mut self, agent: AgentId) -> impl Iterator<Item = MadIn> + '_ {
        self.umad_mut(agent)
            .into_iter()
            .flat_map(|u| u.rx.drain(..))
    }

    /// Sets how `agent` handles RMPP responses ([`RmppMode`]).
    pub fn umad_set_rmpp(&mut self, agent: AgentId, mode: RmppMode) {
        if let Some(u) = self.umad_mut(agent) {
            u.set_rmpp(mode);
        }
    }

    /// The umad agent `agent`.
    pub fn umad(&self, agent: AgentId) -> Option<&UmadAgent> {
        self.agents.get(agent)
    }

    fn umad_mut(&mut self, agent: AgentId) -> Option<&mut UmadAgent> {
        self.agents.get_mut(agent)
    }

    /// Opens QP0 of the management port to the host's own agents, as an SM does (receive buffers
    /// posted once): SMP responses and traps then reach the agent that sent the request or
    /// serves the class (IBA 1 §13.5.1).
    pub fn open_smi(&mut self) {
        self.ensure_smi_recv();
    }

    /// Posts the QP0 receive buffers once.
    fn ensure_smi_recv(&mut self) {
        if self.smi_posted {
            return;
        }
        self.smi_posted = true;
        for _ in 0..super::GSI_RECV_DEPTH {
            self.post_recv_on(0);
        }
    }

    /// The handle of QP0 of the management port.
    pub(super) fn smi_qp(&self) -> u32 {
        special_qpn(self.mgmt_port, 0)
    }
}

/// Method mask of `methods`.
pub fn method_mask(methods: &[Method]) -> u128 {
    methods
        .iter()
        .fold(0u128, |m, &x| m | 1u128 << (u8::from(x) & 0x7f))
}

#[cfg(test)]
mod tests;
