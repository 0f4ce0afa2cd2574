//! An external MAD user attached to a host's management port, what Linux's `umad` device gives a
//! program (`/dev/infiniband/umadN`, `ib_user_mad.c`): a [`UmadAgent`] the host dispatches to
//! like its own agents, fed and drained from outside the simulation (the runtime's ibsim server
//! serves one per connected program).
//!
//! - Sending ([`Host::umad_send`]): the MAD leaves from the port's QP0 when its class is
//!   SubnLid or SubnDirectedRoute (IBA 1 §13.5.1: SMPs use QP0 only, on VL15 as the HCA builds
//!   them) and from QP1 otherwise, with LRH, BTH and DETH built by the HCA model exactly as for
//!   the host's own agents; a request's TID is remembered so that its response comes back to
//!   this agent (IBA 1 §13.4.6.2). As Linux's `ib_umad_write` does, a request leaves with an
//!   agent's number in the TID's high 32 bits over the user's low 32 bits, so that two users, or
//!   a user and one of the host's own agents (which choose their TIDs' high halves themselves,
//!   as Linux's kernel agents put their `hi_tid` there, always with bit 63 clear, while every
//!   user's number has it set: [`UMAD_TID_BIT`]), never send the same TID and each response
//!   reaches its requester; the response is handed over with the high bits the user
//!   sent (ibsim's clients route by them, docs/IBSIM.md; docs/DEPLOYED.md "Linux MAD layer:
//!   TransactionIDs").
//! - One agent stands for as many Linux agents as its user sends high halves (at most
//!   [`UMAD_HIGHS`]): each high half the user sends gets its own number
//!   ([`UmadAgent::wire_high`], from the host's count, none an attached user holds), as each Linux
//!   agent its own `hi_tid`. Under the ibsim server one agent serves a whole client, whose
//!   libumad2sim agents each put their number in bits 32..47 (docs/IBSIM.md): two requests of
//!   two of them with the same low 32 bits leave with different TIDs and each response goes
//!   back with its own request's high bits, to its own agent, as ibsim keeps them apart. (A
//!   Linux user that varies the high bits of one agent's requests gets one TID for both; here
//!   they are kept apart too.)
//! - Receiving ([`UmadAgent::recv`]): responses to this agent's requests, and requests of a
//!   class, class version and method it registered ([`Host::umad_register`], the
//!   `ib_user_mad_reg_req` semantics: one agent per (class, method), a registration that
//!   collides with another agent's is refused whole). One agent of a host may also take the
//!   QP1 requests no agent serves, of any class and version ([`Host::umad_take_unclaimed`]):
//!   what ibsim hands its port's SM client (docs/IBSIM.md "ibsim (server side)"), whose
//!   libumad2sim keeps its registrations to itself, so that a vendor-class server there
//!   (`ibping -S`, class 0x32) gets its requests; otherwise they are answered as unmatched.
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
use ipoib_proto::mad_agent::{MadAddr, MadAgent, MadIn, MadOut, UMAD_TID_BIT};
use ipoib_proto::sa::rmpp::ack_for;
use ipoib_proto::time::Instant;
use ipoib_wire::mad::{
    Mad, MadHeaderRepr, Method, MgmtClass, RmppRepr, RmppType, MAD_HEADER_LEN, MAD_LEN,
};
use std::collections::VecDeque;

/// Where a MAD's TransactionID starts (IBA 1 §13.4.3: bytes 8-15 of the common header).
const TID_OFFSET: usize = 8;

/// The most MADs each queue of a [`UmadAgent`] holds.
pub const UMAD_QUEUE_DEPTH: usize = 1024;

/// True for the classes that travel on QP0 (IBA 1 §13.5.1).
pub fn is_smp_class(class: MgmtClass) -> bool {
    matches!(class, MgmtClass::SubnLid | MgmtClass::SubnDirectedRoute)
}

/// The most high halves of its user's TIDs one [`UmadAgent`] keeps apart (module docs), the
/// least recently sent forgotten first: libumad2sim numbers a device's agents below 32
/// (`umad2sim.c` `agents[32]`), so a client of the ibsim server sends at most 32.
pub const UMAD_HIGHS: usize = 64;

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
    /// Another agent already takes the unclaimed requests ([`Host::umad_take_unclaimed`]).
    #[error("another agent already takes the unclaimed requests")]
    UnclaimedTaken,
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
    /// Responses to a request whose high half the agent has forgotten since (more than
    /// [`UMAD_HIGHS`] others sent after it): dropped, since the user's high bits are unknown.
    pub forgotten_high: u64,
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
    /// Takes QP1 requests no agent serves ([`Host::umad_take_unclaimed`]).
    unclaimed: bool,
    /// (the user's high 32 bits, their number on the wire: Linux's `hi_tid`), the most recently
    /// sent last; at most [`UMAD_HIGHS`]. A few at most in practice (one per libumad2sim agent of
    /// a client), so a scan finds them.
    highs: Vec<(u32, u32)>,
}

impl UmadAgent {
    /// An attached agent with no registration (it receives responses only).
    pub fn new() -> UmadAgent {
        UmadAgent {
            attached: true,
            ..UmadAgent::default()
        }
    }

    /// Queues `mad` for `to` (QP0 or QP1 by its class, module docs), copied into `buf`'s
    /// allocation (its bytes replaced). `mad` shorter than 256 bytes is refused; a longer one is
    /// cut to 256 (QP0/QP1 carry 256-byte MADs). A request whose high half has no number yet
    /// gets `fresh` ([`Host::umad_send_with`] gives one no agent holds).
    fn send_with(
        &mut self,
        to: MadAddr,
        mad: &[u8],
        mut buf: Vec<u8>,
        fresh: u32,
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
        self.stamp_tid(&mut buf, fresh);
        self.tx.push_back(MadOut { to, mad: buf });
        Ok(())
    }

    /// The number of the user's high half in the high 32 bits of a request's TID, over the
    /// user's low 32 bits (Linux `ib_umad_write`; a response, TrapRepress included, as
    /// `ib_response_mad` counts it, keeps the TID it answers). An RMPP ACK of a response's
    /// segment has the R bit flipped (Linux `format_ack`, as `ipoib_proto::sa::rmpp::ack_for`
    /// builds it), a request method: it goes with its high half's number, the transfer's TID on
    /// the wire.
    fn stamp_tid(&mut self, mad: &mut [u8], fresh: u32) {
        let Some(user) = request_high(mad) else {
            return;
        };
        let wire = self.number(user, fresh);
        mad[TID_OFFSET..TID_OFFSET + 4].copy_from_slice(&wire.to_be_bytes());
    }

    /// The wire number of the user's high half `user`, `fresh` the first time; the least
    /// recently sent is forgotten beyond [`UMAD_HIGHS`].
    fn number(&mut self, user: u32, fresh: u32) -> u32 {
        let last = self.highs.len().wrapping_sub(1);
        match self.highs.iter().rposition(|&(u, _)| u == user) {
            Some(i) if i == last => self.highs[i].1,
            Some(i) => {
                let e = self.highs.remove(i);
                self.highs.push(e);
                e.1
            }
            None => {
                if self.highs.len() >= UMAD_HIGHS {
                    self.highs.remove(0);
                }
                self.highs.push((user, fresh));
                fresh
            }
        }
    }

    /// A response to one of this agent's requests with the high 32 bits of the TID the user sent
    /// (what ibsim's clients route by: docs/IBSIM.md); false for one whose high half is
    /// forgotten (the user's high bits are unknown: it is dropped). `h` is `mad`'s header, as
    /// the caller parsed it (not parsed again).
    fn unstamp_tid(&self, h: &MadHeaderRepr, mad: &mut [u8]) -> bool {
        if !h.method.answers_request() {
            return true;
        }
        let wire = (h.transaction_id >> 32) as u32;
        match self.highs.iter().find(|&&(_, w)| w == wire) {
            Some(&(user, _)) => {
                mad[TID_OFFSET..TID_OFFSET + 4].copy_from_slice(&user.to_be_bytes());
                true
            }
            None => false,
        }
    }

    /// The number on the wire of the user's high half `user` (the high 32 bits of its
    /// requests' TIDs), while the agent keeps it.
    pub fn wire_high(&self, user: u32) -> Option<u32> {
        self.highs
            .iter()
            .find(|&&(u, _)| u == user)
            .map(|&(_, w)| w)
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
        // IBA 1 §13.6.3: the receiver acknowledges each segment, granting its window, the last
        // one's too: a window below the one granted before is an old ACK to a Linux sender,
        // ignored (`mad_rmpp.c` `process_rmpp_ack`; `ipoib_proto::sa::rmpp::window_last`).
        let nwl = seg.saturating_add(RMPP_WINDOW);
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
            && (h.method.answers_request()
                || self.registrations.iter().any(|r| r.accepts(&h))
                || (self.unclaimed && !is_smp_class(h.mgmt_class)));
        if !wanted {
            self.counters.unwanted += 1;
            return;
        }
        // An RMPP ACK answers the segment with the TID on the wire.
        if self.take_rmpp(&h, &m) {
            return;
        }
        let mut m = m;
        if !self.unstamp_tid(&h, &mut m.mad) {
            self.counters.forgotten_high += 1;
            return;
        }
        if self.rx.len() >= UMAD_QUEUE_DEPTH {
            self.counters.recv_full += 1;
            return;
        }
        self.counters.received += 1;
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
    /// responses come back there). The user's high halves get new numbers (as each Linux
    /// registration a new `hi_tid`): a response to the previous user's request names none.
    pub fn umad_attach(&mut self) -> AgentId {
        self.ensure_smi_recv();
        self.dirty = true;
        for (i, a) in self.agents.list.iter_mut().enumerate() {
            if let Some(u) = a.as_any_mut().downcast_mut::<UmadAgent>() {
                if !u.attached {
                    u.reset();
                    return AgentId(i);
                }
            }
        }
        self.add_agent(UmadAgent::new())
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

    /// Withdraws every registration of `agent`, unclaimed requests included (it keeps
    /// receiving responses).
    pub fn umad_unregister(&mut self, agent: AgentId) {
        self.method_servers.retain(|_, a| *a != agent);
        if self.unclaimed == Some(agent) {
            self.unclaimed = None;
        }
        if let Some(u) = self.umad_mut(agent) {
            u.registrations.clear();
            u.unclaimed = false;
        }
    }

    /// Makes `agent` take (`on`) or no longer take the QP1 requests of every class and version
    /// that no registration or server of the host takes, instead of their being answered as
    /// unmatched (module docs): ibsim hands its port's SM client every request to QP0/QP1 it
    /// does not answer itself (`ibsim.c` `find_client`). SMPs stay the SMA's. One agent per
    /// host at a time.
    pub fn umad_take_unclaimed(&mut self, agent: AgentId, on: bool) -> Result<(), UmadError> {
        if self.umad(agent).is_none_or(|u| !u.attached) {
            return Err(UmadError::NoAgent);
        }
        match self.unclaimed {
            Some(a) if a != agent && on => return Err(UmadError::UnclaimedTaken),
            Some(a) if a == agent && !on => self.unclaimed = None,
            None if on => self.unclaimed = Some(agent),
            _ => {}
        }
        if let Some(u) = self.umad_mut(agent) {
            u.unclaimed = on;
        }
        Ok(())
    }

    /// Detaches `agent`: its registrations are withdrawn, its queues emptied, the TIDs of its
    /// requests forgotten (a late response is counted as an unknown TID, not handed to the next
    /// user of the agent), and it is kept for reuse.
    pub fn umad_detach(&mut self, agent: AgentId) {
        self.umad_unregister(agent);
        self.forget_tids(agent);
        if let Some(u) = self.umad_mut(agent) {
            u.reset();
            u.attached = false;
        }
    }

    /// Queues `mad` for sending by `agent` to `to` (QP0 or QP1 by its class, module docs); the
    /// host sends it on its next activity ([`Host::drive`]). `mad` shorter than 256 bytes is
    /// refused; a longer one is cut to 256 (QP0/QP1 carry 256-byte MADs).
    pub fn umad_send(&mut self, agent: AgentId, to: MadAddr, mad: &[u8]) -> Result<(), UmadError> {
        self.umad_send_with(agent, to, mad, Vec::new())
    }

    /// [`Host::umad_send`] with the MAD copied into `buf`'s allocation (its bytes replaced), a
    /// spent MAD's, say, instead of a new one.
    pub fn umad_send_with(
        &mut self,
        agent: AgentId,
        to: MadAddr,
        mad: &[u8],
        buf: Vec<u8>,
    ) -> Result<(), UmadError> {
        self.dirty = true;
        let fresh = match self.umad(agent) {
            Some(u) if u.attached => match request_high(mad) {
                Some(user) if u.wire_high(user).is_none() => self.fresh_umad_number(),
                _ => 0,
            },
            _ => return Err(UmadError::NoAgent),
        };
        match self.umad_mut(agent) {
            Some(u) => u.send_with(to, mad, buf, fresh),
            None => Err(UmadError::NoAgent),
        }
    }

    /// A number for a umad user's new high half: the next of the host's count (1 to 2^31 - 1)
    /// with bit 63 of the TID set ([`UMAD_TID_BIT`]: the host's own agents keep it clear, so
    /// none of theirs is a user's TID), never one an attached umad agent holds (the count wraps
    /// after 2^31 - 1 new halves, which a client cycling its high bits reaches), so two users
    /// never send the same TID and a late response to a forgotten half names no other user's.
    fn fresh_umad_number(&mut self) -> u32 {
        const HIGH_BIT: u32 = (UMAD_TID_BIT >> 32) as u32;
        loop {
            self.umad_hi_tid = match self.umad_hi_tid {
                n if n >= HIGH_BIT - 1 => 1,
                n => n + 1,
            };
            let n = HIGH_BIT | self.umad_hi_tid;
            let held = self.agents.list.iter().any(|a| {
                a.as_any()
                    .downcast_ref::<UmadAgent>()
                    .is_some_and(|u| u.highs.iter().any(|&(_, w)| w == n))
            });
            if !held {
                return n;
            }
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

/// The high 32 bits of a request's TID (IBA 1 §13.4.3: bytes 8-11); None for a response,
/// TrapRepress included as Linux's `ib_response_mad` counts it (it keeps the TID it answers),
/// and for fewer than 24 bytes.
fn request_high(mad: &[u8]) -> Option<u32> {
    let m = header(mad)?;
    let method = m.method();
    if method.answers_request() {
        return None;
    }
    Some((m.transaction_id() >> 32) as u32)
}

/// The common MAD header of `mad` (IBA 1 §13.4.2) as a view on its first 24 bytes, its fields
/// read in place where a caller needs a few (no `MadHeaderRepr` built); `None` for fewer bytes,
/// which `MadHeaderRepr::parse_bytes` refuses too.
pub(super) fn header(mad: &[u8]) -> Option<Mad<&[u8; MAD_HEADER_LEN]>> {
    mad.first_chunk::<MAD_HEADER_LEN>().map(Mad::new_unchecked)
}

/// Method mask of `methods`.
pub fn method_mask(methods: &[Method]) -> u128 {
    methods
        .iter()
        .fold(0u128, |m, &x| m | 1u128 << (u8::from(x) & 0x7f))
}

#[cfg(test)]
mod tests;
