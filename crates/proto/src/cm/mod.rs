//! The Communication Manager (IBA 1 chapter 12) as a protocol agent with no IO: connection
//! establishment, release and service-ID resolution over CM MADs (management class 0x07) on QP1.
//!
//! The agent is a [`MadAgent`]: CM MADs in through `handle_mad(now, ..)`, MADs out through
//! `poll_transmit`, timers through `poll_timeout`/`handle_timeout`, and what its user must know
//! through [`Cm::poll_event`]. Its user (IPoIB connected mode, a test, the IP CM service) drives it
//! with commands: [`Cm::listen`], [`Cm::connect`], [`Cm::accept`], [`Cm::reject`],
//! [`Cm::disconnect`], [`Cm::sidr_request`] and [`Cm::sidr_reply`]. The agent owns no queue pair:
//! it says what to program as a [`QpProgram`] value (QPNs, PSNs, path, MTU, retry counts, RNR
//! retry, ACK timeout, RDMA read depths) and when (the events below), and the host moves its QP
//! (on the emulated subnet, fabric's `node/cm.rs` does).
//!
//! QP states the host sets, in the order of IBA 1 §12.9 (the "communication establishment" state
//! diagrams) and Linux `ib_cm_init_qp_attr`:
//! - active side: Init when it calls [`Cm::connect`]; RTR then RTS on [`CmEvent::Established`]
//!   (the RTU leaves after the event, so handle events before transmitting);
//! - passive side: Init, RTR and RTS with the [`QpProgram`] that [`Cm::accept`] returns (before the
//!   REP leaves); [`CmEvent::Established`] says the peer confirmed (RTU, or
//!   [`Cm::notify_established`] on the first packet received);
//! - both: Error on [`CmEvent::Disconnected`], [`CmEvent::Rejected`] or [`CmEvent::TimedOut`];
//!   Reset (and reuse) only on [`CmEvent::TimeWaitExit`] (IBA 1 §12.9.8 TimeWait).
//!
//! Layout (neqo's connection split): `state` (the connection record and its states), `msg` (MAD
//! building, IBA time values), `path` (a REQ's path from a PathRecord), `active` (connect, REP, MRA and REJ received), `passive` (REQ
//! received, accept, reject, RTU, the MRA a slow consumer needs), `release` (DREQ, DREP, TimeWait,
//! LAP/APR answered as unsupported), `sidr` (SIDR_REQ/SIDR_REP), `timer` (retransmission, MRA and
//! TimeWait deadlines).
//!
//! Invariants:
//! - local communication IDs start at a random value from the seeded [`Rng`] and are never handed
//!   out again while a connection holds them, TimeWait included, so a late message of an old
//!   connection never reaches a new one (IBA 1 §12.9.8);
//! - a QPN given to [`Cm::connect`] or [`Cm::accept`] is refused while a connection, TimeWait
//!   included, still uses it;
//! - every connection record has a deadline in every state but Established, so once its user stops
//!   and every timer has run, the tables are empty (the random-input test checks it);
//! - bad input never panics: a MAD that is not a well-formed CM MAD is dropped and counted in
//!   [`Cm::dropped`]; a REQ nobody can take is answered with the REJ IBA 1 §12.6 calls for;
//! - output depends only on inputs and the seed (all maps are `BTreeMap`s).

mod active;
mod msg;
mod passive;
mod path;
mod release;
mod sidr;
mod state;
mod timer;

#[cfg(test)]
mod tests;

use crate::mad_agent::{MadAddr, MadAgent, MadIn, MadOut};
use crate::rng::Rng;
use crate::time::Instant;
use ipoib_wire::cm::{CmMessage, CmPath, RejReason, ReqRepr, SidrRepRepr, SidrReqRepr};
use ipoib_wire::cm::{SidrStatus, TransportServiceType};
use ipoib_wire::mad::{MadHeaderRepr, Method};
use ipoib_wire::{Guid, Mtu, PKey};
use std::collections::{BTreeMap, BTreeSet, VecDeque};

pub use msg::iba_time;
pub use path::{ack_timeout, cm_path};
pub use state::State;
use state::{Conn, Role};
use timer::TimerKey;

/// Names a connection: its local communication ID.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ConnId(pub u32);

/// Names a listener.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ListenId(pub u32);

/// Names a SIDR exchange (one we sent, or one we received and must answer).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct SidrId(pub u32);

/// The agent's own settings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CmConfig {
    /// This CA's GUID (REQ and REP Local CA GUID; the ARI of a timeout REJ, IBA 1 §12.6 Table 108).
    pub ca_guid: Guid,
    /// How fast this CM answers, as an IBA time exponent (4.096 µs × 2^n): sent as the REQ's
    /// Local CM Response Timeout and as ClassPortInfo RespTimeValue. Linux sends 20
    /// (docs/DEPLOYED.md "Linux IPoIB").
    pub response_timeout: u8,
    /// Max CM Retries we put in our REQs (4 bits; Linux IPoIB sends 15).
    pub max_cm_retries: u8,
    /// The Service Timeout of the MRA we send when our user is slow to accept (IBA 1 §12.6
    /// Table 107).
    pub mra_service_timeout: u8,
    /// Connection records held at once (TimeWait included); a REQ beyond is answered with REJ 3
    /// "no resources" (IBA 1 §12.6 Table 108) and leaves no record. A REQ's sender chooses how
    /// long its record lives (its timeouts reach about 2.4 h), so the table needs a bound.
    pub max_conns: usize,
    /// Connection records held for one remote CA (its GUID), so one peer cannot take them all.
    pub max_conns_per_ca: usize,
    /// SIDR_REQs held at once while their listener's user answers (IBA 1 §12.6 Table 119); one
    /// beyond is dropped and counted, and its requester resends after its wait (IBA 1 §12.7).
    /// Each is kept twice our CM response time, so a flood would otherwise grow the table with
    /// its rate.
    pub max_sidr_requests: usize,
    /// SIDR_REQs held at once from one requester port (its LID), so one port cannot take them all.
    pub max_sidr_requests_per_port: usize,
    /// This CA's ACK delay (IBA time exponent): sent as the REP's Target ACK Delay (IBA 1 §12.6
    /// Table 110), from which the active side computes its QP's ACK timeout (Linux
    /// `cm_rep_handler`, docs/DEPLOYED.md "Linux ib_cm"). The emulated HCAs acknowledge at once: 0.
    pub ca_ack_delay: u8,
}

impl CmConfig {
    /// Linux's values (docs/DEPLOYED.md "Linux IPoIB": CM response timeouts 20, max CM retries 15).
    pub fn new(ca_guid: Guid) -> CmConfig {
        CmConfig {
            ca_guid,
            response_timeout: 20,
            max_cm_retries: 15,
            mra_service_timeout: 20,
            max_conns: 65_536,
            max_conns_per_ca: 4_096,
            max_sidr_requests: 4_096,
            max_sidr_requests_per_port: 256,
            ca_ack_delay: 0,
        }
    }
}

/// What [`Cm::connect`] puts in the REQ (IBA 1 §12.6 Table 106). The path is written from our
/// side: `local_port_*` are ours, `remote_port_*` the peer's.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConnectParams {
    /// The primary path (from a PathRecord). Its `local_ack_timeout` is the QP's ACK timeout.
    pub path: CmPath,
    /// The path's PacketLifeTime (IBA time exponent), for the CM's own timeouts (IBA 1 §12.7).
    pub packet_life_time: u8,
    /// Service ID to connect to.
    pub service_id: u64,
    /// Our QP (RC or UC), already in Init.
    pub qpn: u32,
    /// Our starting send PSN (24 bits).
    pub psn: u32,
    /// RC or UC.
    pub transport: TransportServiceType,
    /// The partition.
    pub pkey: PKey,
    /// Path MTU.
    pub mtu: Mtu,
    /// RDMA reads and atomics we accept at once.
    pub responder_resources: u8,
    /// RDMA reads and atomics we issue at once.
    pub initiator_depth: u8,
    /// Transport retries the peer's QP should make (3 bits).
    pub retry_count: u8,
    /// RNR retries the peer's QP should make (3 bits; 7 = forever).
    pub rnr_retry_count: u8,
    /// How long we give the peer's CM to answer (IBA time exponent; REQ Remote CM Response Timeout).
    pub remote_response_timeout: u8,
    /// Private data (up to 92 bytes; the REQ's field is zero-padded).
    pub private_data: Vec<u8>,
    /// Private data of the RTU that answers the REP (up to 224 bytes; IPoIB connected mode puts
    /// its UD QPN in every establishment message, RFC 4755 §3.2).
    pub rtu_private_data: Vec<u8>,
}

impl ConnectParams {
    /// Linux IPoIB's REQ (docs/DEPLOYED.md "Linux IPoIB": responder resources 4, CM response
    /// timeouts 20, retry count 0, RNR retry 0) for an RC connection over `path`.
    pub fn linux_ipoib(path: CmPath, service_id: u64, qpn: u32, psn: u32) -> ConnectParams {
        ConnectParams {
            path,
            packet_life_time: crate::sa::DEFAULT_SUBNET_TIMEOUT,
            service_id,
            qpn,
            psn,
            transport: TransportServiceType::Rc,
            pkey: PKey::DEFAULT,
            mtu: Mtu::Mtu2048,
            responder_resources: 4,
            initiator_depth: 0,
            retry_count: 0,
            rnr_retry_count: 0,
            remote_response_timeout: 20,
            private_data: Vec::new(),
            rtu_private_data: Vec::new(),
        }
    }
}

/// The attributes a connected QP must be given (Linux `ib_cm_init_qp_attr` for Init, RTR and
/// RTS), as the CM negotiated them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct QpProgram {
    /// RC or UC.
    pub transport: TransportServiceType,
    /// Our QP.
    pub local_qpn: u32,
    /// The peer's QP (RTR: destination QPN).
    pub remote_qpn: u32,
    /// The path seen from our side: `local_port_*` ours, `remote_port_*` the peer's (RTR: address
    /// vector; `local_ack_timeout` is the RTS timeout).
    pub path: CmPath,
    /// The partition (Init).
    pub pkey: PKey,
    /// Path MTU (RTR).
    pub mtu: Mtu,
    /// The first PSN we expect from the peer (RTR): the starting PSN of our own REQ or REP. A
    /// CM message's starting PSN is the one its sender receives first (Linux `ib_send_cm_req`,
    /// `ib_send_cm_rep`; docs/DEPLOYED.md "Linux ib_cm").
    pub rq_psn: u32,
    /// Our first send PSN (RTS): the starting PSN of the peer's REQ or REP (Linux
    /// `cm_req_handler`, `cm_rep_handler`).
    pub sq_psn: u32,
    /// Transport retry count (RTS).
    pub retry_count: u8,
    /// RNR retry count (RTS).
    pub rnr_retry_count: u8,
    /// RDMA reads and atomics outstanding as initiator (RTS).
    pub max_rd_atomic: u8,
    /// RDMA reads and atomics accepted as responder (RTR).
    pub max_dest_rd_atomic: u8,
}

/// Which of our messages went unanswered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unanswered {
    /// Our REQ got no REP, REJ or MRA after every retry.
    Req,
    /// Our REP got no RTU after every retry.
    Rep,
    /// We sent an MRA and the peer never came back.
    Mra,
}

/// What the agent tells its user.
// ConnectRequest carries the whole REQ (the user needs its fields); boxing saves nothing here.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CmEvent {
    /// A REQ for one of our listeners: answer with [`Cm::accept`] or [`Cm::reject`] (an MRA goes
    /// out on our behalf if that takes too long).
    ConnectRequest {
        /// The new connection.
        conn: ConnId,
        /// The listener it matched.
        listen: ListenId,
        /// The REQ, whole (private data included).
        req: ReqRepr,
        /// Where it came from.
        from: MadAddr,
    },
    /// The connection is up: move the QP to RTR and RTS (active side) or keep it there (passive).
    Established {
        /// Which.
        conn: ConnId,
        /// The QP attributes.
        qp: QpProgram,
        /// The REP's (active side) or the RTU's (passive side) private data.
        private_data: Vec<u8>,
    },
    /// The peer rejected (or aborted) the connection; the QP goes to Error.
    Rejected {
        /// Which.
        conn: ConnId,
        /// Reason.
        reason: RejReason,
        /// Additional Rejection Information (Reject Info Length bytes).
        ari: Vec<u8>,
        /// The REJ's private data.
        private_data: Vec<u8>,
    },
    /// Establishment failed for lack of an answer; the QP goes to Error.
    TimedOut {
        /// Which.
        conn: ConnId,
        /// The message that went unanswered.
        unanswered: Unanswered,
    },
    /// The connection was released (by a DREQ either way, or a DREQ that got no DREP after every
    /// retry); the QP goes to Error.
    Disconnected {
        /// Which.
        conn: ConnId,
        /// The peer asked (its DREQ); false when we did.
        by_peer: bool,
        /// The peer's DREQ or DREP private data (empty when none came).
        private_data: Vec<u8>,
    },
    /// TimeWait is over: the QP may be reset and reused, the communication ID is forgotten.
    TimeWaitExit {
        /// Which.
        conn: ConnId,
        /// Our QP of that connection (0 if none was ever given).
        qpn: u32,
    },
    /// A SIDR_REQ for one of our listeners: answer with [`Cm::sidr_reply`].
    SidrRequest {
        /// The exchange.
        id: SidrId,
        /// The listener it matched.
        listen: ListenId,
        /// The request.
        req: SidrReqRepr,
        /// Where it came from.
        from: MadAddr,
    },
    /// The answer to our [`Cm::sidr_request`].
    SidrReply {
        /// The exchange.
        id: SidrId,
        /// The reply (status, QPN, Q_Key, private data).
        rep: SidrRepRepr,
    },
    /// Our SIDR_REQ got no answer after every retry.
    SidrTimedOut {
        /// The exchange.
        id: SidrId,
    },
}

impl CmEvent {
    /// The connection the event is about (`None` for SIDR events).
    pub fn conn(&self) -> Option<ConnId> {
        match self {
            CmEvent::ConnectRequest { conn, .. }
            | CmEvent::Established { conn, .. }
            | CmEvent::Rejected { conn, .. }
            | CmEvent::TimedOut { conn, .. }
            | CmEvent::Disconnected { conn, .. }
            | CmEvent::TimeWaitExit { conn, .. } => Some(*conn),
            CmEvent::SidrRequest { .. }
            | CmEvent::SidrReply { .. }
            | CmEvent::SidrTimedOut { .. } => None,
        }
    }

    /// The listener a request matched (`ConnectRequest` and `SidrRequest` only).
    pub fn listener(&self) -> Option<ListenId> {
        match self {
            CmEvent::ConnectRequest { listen, .. } | CmEvent::SidrRequest { listen, .. } => {
                Some(*listen)
            }
            _ => None,
        }
    }

    /// The SIDR exchange the event is about (`None` for connection events).
    pub fn sidr(&self) -> Option<SidrId> {
        match self {
            CmEvent::SidrRequest { id, .. }
            | CmEvent::SidrReply { id, .. }
            | CmEvent::SidrTimedOut { id } => Some(*id),
            _ => None,
        }
    }
}

/// Why a command was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum CmError {
    /// No such connection, listener or SIDR exchange.
    #[error("unknown connection or exchange")]
    Unknown,
    /// The connection is not in a state where this command applies.
    #[error("command not valid in state {0:?}")]
    WrongState(State),
    /// More private data than the message holds.
    #[error("private data too long ({0} bytes)")]
    PrivateDataTooLong(usize),
    /// Another listener already covers part of this service ID range.
    #[error("service ID range overlaps an existing listener")]
    ServiceIdInUse,
    /// The QP still belongs to a connection (TimeWait included, IBA 1 §12.9.8).
    #[error("QP {0:#x} still in use by a connection")]
    QpInUse(u32),
    /// A parameter is outside its field (QPN or PSN over 24 bits, MTU code, transport type).
    #[error("invalid parameter: {0}")]
    Invalid(&'static str),
}

/// A connection as [`Cm::info`] shows it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ConnInfo {
    /// Its state.
    pub state: State,
    /// True if we sent the REQ.
    pub active: bool,
    /// The service ID of its REQ.
    pub service_id: u64,
    /// The listener that took it (passive side).
    pub listen: Option<ListenId>,
    /// The peer's communication ID (0 until known).
    pub remote_comm_id: u32,
    /// The peer's QP1 address.
    pub peer: MadAddr,
    /// The QP attributes negotiated so far.
    pub qp: QpProgram,
}

#[derive(Debug, Clone, Copy)]
struct Listener {
    service_id: u64,
    mask: u64,
}

/// Message counters by reason: what was dropped, and duplicates answered.
pub type Counters = BTreeMap<&'static str, u64>;

/// The Communication Manager of one port.
#[derive(Debug)]
pub struct Cm {
    cfg: CmConfig,
    rng: Rng,
    tid_hi: u64,
    next_comm_id: u32,
    next_listen: u32,
    next_sidr: u32,
    listeners: BTreeMap<ListenId, Listener>,
    conns: BTreeMap<u32, Conn>,
    /// Indexes of `conns` for what a peer's message names (kept by [`Cm::index`] and
    /// [`Cm::unindex`]), so that a REQ costs no scan of every record (Linux keeps the same
    /// lookups as trees: `cm_insert_remote_id`, `cm_insert_remote_qpn`): (remote CA GUID, remote
    /// communication ID, local ID) of records whose remote ID is known ...
    remote_ids: BTreeSet<(Guid, u32, u32)>,
    /// ... (remote CA GUID, remote QPN, local ID) of records holding the peer's QP
    /// ([`Conn::holds_remote_qp`]) ...
    remote_qps: BTreeSet<(Guid, u32, u32)>,
    /// ... the number of records per remote CA GUID ...
    per_ca: BTreeMap<Guid, usize>,
    /// ... and our QPs the records hold (IBA 1 §12.9.8: not reused before TimeWait is over).
    local_qpns: BTreeSet<u32>,
    sidr: BTreeMap<u32, sidr::Sidr>,
    timers: BTreeSet<(Instant, TimerKey)>,
    out: VecDeque<MadOut>,
    events: VecDeque<CmEvent>,
    /// MADs dropped, by reason.
    pub dropped: Counters,
    /// Duplicates received and answered (or ignored as the state says), by message.
    pub duplicates: Counters,
}

impl Cm {
    /// An agent drawing communication IDs, TIDs and PSNs from `rng`.
    pub fn new(cfg: CmConfig, mut rng: Rng) -> Cm {
        let tid_hi = crate::mad_agent::agent_tid_high(&mut rng);
        let next_comm_id = rng.next_u32();
        let next_sidr = rng.next_u32();
        Cm {
            cfg,
            rng,
            tid_hi,
            next_comm_id,
            next_listen: 1,
            next_sidr,
            listeners: BTreeMap::new(),
            conns: BTreeMap::new(),
            remote_ids: BTreeSet::new(),
            remote_qps: BTreeSet::new(),
            per_ca: BTreeMap::new(),
            local_qpns: BTreeSet::new(),
            sidr: BTreeMap::new(),
            timers: BTreeSet::new(),
            out: VecDeque::new(),
            events: VecDeque::new(),
            dropped: Counters::new(),
            duplicates: Counters::new(),
        }
    }

    /// The configuration.
    pub fn config(&self) -> &CmConfig {
        &self.cfg
    }

    /// The next event.
    pub fn poll_event(&mut self) -> Option<CmEvent> {
        self.events.pop_front()
    }

    /// Sets the private data of the REJs the agent sends on its own for `conn` (after a timeout,
    /// for a stale connection): IPoIB connected mode puts its UD QPN in every REJ (RFC 4755
    /// §3.2). At most 148 bytes (a REJ's field, IBA 1 §12.6 Table 108).
    pub fn set_rej_private_data(&mut self, conn: ConnId, data: &[u8]) -> Result<(), CmError> {
        if data.len() > msg::blank_rej().private_data.len() {
            return Err(CmError::PrivateDataTooLong(data.len()));
        }
        let c = self.conns.get_mut(&conn.0).ok_or(CmError::Unknown)?;
        c.rej_private_data = data.to_vec();
        Ok(())
    }

    /// The next event `mine` accepts, for a host where several users share the agent (each
    /// takes the events of its own listeners, connections and SIDR exchanges, in order; the
    /// others stay queued for their users).
    pub fn poll_event_where(&mut self, mut mine: impl FnMut(&CmEvent) -> bool) -> Option<CmEvent> {
        let at = self.events.iter().position(&mut mine)?;
        self.events.remove(at)
    }

    /// Listens for REQs and SIDR_REQs whose service ID matches `service_id` under `mask`
    /// (`req & mask == service_id & mask`; `u64::MAX` matches one ID exactly). Overlapping
    /// ranges are refused, so every request has at most one listener (Linux `cm_insert_listen`).
    pub fn listen(&mut self, service_id: u64, mask: u64) -> Result<ListenId, CmError> {
        let overlaps = self.listeners.values().any(|l| {
            let m = l.mask & mask;
            l.service_id & m == service_id & m
        });
        if overlaps {
            return Err(CmError::ServiceIdInUse);
        }
        let id = ListenId(self.next_listen);
        self.next_listen += 1;
        self.listeners.insert(
            id,
            Listener {
                service_id: service_id & mask,
                mask,
            },
        );
        Ok(id)
    }

    /// Stops listening; connections already made are not affected.
    pub fn unlisten(&mut self, id: ListenId) -> Result<(), CmError> {
        self.listeners
            .remove(&id)
            .map(|_| ())
            .ok_or(CmError::Unknown)
    }

    fn find_listener(&self, service_id: u64) -> Option<ListenId> {
        self.listeners
            .iter()
            .find(|(_, l)| service_id & l.mask == l.service_id)
            .map(|(id, _)| *id)
    }

    /// The state of a connection, while the agent still has it.
    pub fn state(&self, conn: ConnId) -> Option<State> {
        self.conns.get(&conn.0).map(|c| c.state)
    }

    /// What the agent knows of a connection (for displays: peers, QPNs, service ID, MTU, state).
    pub fn info(&self, conn: ConnId) -> Option<ConnInfo> {
        let c = self.conns.get(&conn.0)?;
        Some(ConnInfo {
            state: c.state,
            active: c.role.is_active(),
            service_id: c.service_id,
            listen: c.listen,
            remote_comm_id: c.remote_id,
            peer: c.peer,
            qp: c.qp_program(),
        })
    }

    /// Every connection the agent holds, in communication-ID order.
    pub fn connection_ids(&self) -> impl Iterator<Item = ConnId> + '_ {
        self.conns.keys().map(|k| ConnId(*k))
    }

    /// Connection records held (TimeWait included).
    pub fn connections(&self) -> usize {
        self.conns.len()
    }

    /// SIDR exchanges held (sent and awaiting a reply, or received and awaiting our user).
    pub fn sidr_exchanges(&self) -> usize {
        self.sidr.len()
    }

    /// Timers armed.
    pub fn timers(&self) -> usize {
        self.timers.len()
    }

    /// A fresh local communication ID: never 0, never one a record still holds (IBA 1 §12.9.8:
    /// not reused until TimeWait is over).
    fn alloc_comm_id(&mut self) -> u32 {
        loop {
            let id = self.next_comm_id;
            self.next_comm_id = self.next_comm_id.wrapping_add(1);
            if id != 0 && !self.conns.contains_key(&id) {
                return id;
            }
        }
    }

    /// A TID for a message we start (REQ, DREQ, SIDR_REQ): as Linux `cm_form_tid`, a per-agent
    /// high half (Linux: the MAD agent number; ours: drawn from the seeded RNG, bit 63 clear as
    /// [`crate::mad_agent::UMAD_TID_BIT`] says) above the local communication ID.
    fn new_tid(&self, low: u32) -> u64 {
        self.tid_hi | u64::from(low)
    }

    fn qpn_in_use(&self, qpn: u32) -> bool {
        qpn != 0 && self.local_qpns.contains(&qpn)
    }

    /// Adds record `id` to the indexes, from its fields as they are now. Every change of its
    /// remote ID, remote CA GUID, remote QPN, local QPN or a move to TimeWait happens between
    /// [`Cm::unindex`] and this.
    fn index(&mut self, id: u32) {
        let Some(c) = self.conns.get(&id) else {
            return;
        };
        if c.remote_id != 0 {
            self.remote_ids.insert((c.remote_ca_guid, c.remote_id, id));
        }
        if c.holds_remote_qp() {
            self.remote_qps.insert((c.remote_ca_guid, c.remote_qpn, id));
        }
        *self.per_ca.entry(c.remote_ca_guid).or_insert(0) += 1;
        if c.local_qpn != 0 {
            self.local_qpns.insert(c.local_qpn);
        }
    }

    /// Takes record `id` out of the indexes (before its indexed fields change, or it goes).
    fn unindex(&mut self, id: u32) {
        let Some(c) = self.conns.get(&id) else {
            return;
        };
        self.remote_ids.remove(&(c.remote_ca_guid, c.remote_id, id));
        self.remote_qps
            .remove(&(c.remote_ca_guid, c.remote_qpn, id));
        self.local_qpns.remove(&c.local_qpn);
        let guid = c.remote_ca_guid;
        if let Some(n) = self.per_ca.get_mut(&guid) {
            *n -= 1;
            if *n == 0 {
                self.per_ca.remove(&guid);
            }
        }
    }

    /// The local IDs of the records whose remote side is CA `guid`'s communication ID
    /// `remote_id`, in local-ID order.
    fn by_remote_id(&self, guid: Guid, remote_id: u32) -> impl Iterator<Item = u32> + '_ {
        self.remote_ids
            .range((guid, remote_id, 0)..=(guid, remote_id, u32::MAX))
            .map(|k| k.2)
    }

    fn count(map: &mut Counters, reason: &'static str) {
        *map.entry(reason).or_insert(0) += 1;
    }

    fn drop_mad(&mut self, reason: &'static str) {
        Self::count(&mut self.dropped, reason);
    }

    fn send(&mut self, to: MadAddr, mad: [u8; msg::MAD_LEN]) {
        self.out.push_back(MadOut {
            to: msg::gsi(to),
            mad: mad.to_vec(),
        });
    }

    /// Sends `m` on `conn`'s TID and remembers it as the connection's last message.
    fn send_on(&mut self, local_id: u32, m: CmMessage, remember: bool) {
        let Some(c) = self.conns.get_mut(&local_id) else {
            return;
        };
        let mad = msg::cm_mad(c.tid, &m);
        if remember {
            c.last = Some(Box::new(mad));
        }
        let to = c.peer;
        self.send(to, mad);
    }

    /// Answers a Get(ClassPortInfo) (IBA 1 §13.4.8.1: every class answers it) and refuses any
    /// other request method or attribute with the status IBA 1 §13.4.7 gives.
    fn on_management(&mut self, from: MadAddr, h: MadHeaderRepr) {
        use ipoib_wire::cm::attr;
        use ipoib_wire::mad::MadStatus;
        let (status, cpi) = match (h.method, h.attribute_id) {
            (Method::Get, attr::CLASS_PORT_INFO) => (MadStatus::SUCCESS, true),
            (Method::Get, _) => (MadStatus::METHOD_ATTR_UNSUPPORTED, false),
            _ => (MadStatus::METHOD_UNSUPPORTED, false),
        };
        let mad =
            msg::class_port_info_response(&h, status, cpi.then_some(self.cfg.response_timeout));
        self.send(from, mad);
    }
}

impl MadAgent for Cm {
    fn handle_mad(&mut self, now: Instant, m: MadIn) {
        let raw = m.mad.as_slice();
        let h = match msg::check_header(raw) {
            Ok(h) => h,
            Err(reason) => return self.drop_mad(reason),
        };
        if h.method != Method::Send {
            if h.method.is_response() {
                return self.drop_mad("response MAD");
            }
            return self.on_management(m.from, h);
        }
        let body = raw.get(24..).unwrap_or(&[]);
        let Ok(cm) = CmMessage::parse(h.attribute_id, body) else {
            return self.drop_mad("not a CM message");
        };
        let from = m.from;
        let tid = h.transaction_id;
        match cm {
            CmMessage::Req(r) => self.on_req(now, from, tid, r),
            CmMessage::Mra(r) => self.on_mra(now, r),
            CmMessage::Rej(r) => self.on_rej(now, r),
            CmMessage::Rep(r) => self.on_rep(now, from, r),
            CmMessage::Rtu(r) => self.on_rtu(now, r),
            CmMessage::Dreq(r) => self.on_dreq(now, from, tid, r),
            CmMessage::Drep(r) => self.on_drep(now, r),
            CmMessage::Lap(r) => self.on_lap(from, tid, r),
            CmMessage::Apr(_) => self.drop_mad("APR (we send no LAP)"),
            CmMessage::SidrReq(r) => self.on_sidr_req(now, from, tid, r),
            CmMessage::SidrRep(r) => self.on_sidr_rep(r),
        }
    }

    fn poll_transmit(&mut self, _now: Instant) -> Option<MadOut> {
        self.out.pop_front()
    }

    fn poll_timeout(&self) -> Option<Instant> {
        self.timers.iter().next().map(|(t, _)| *t)
    }

    fn handle_timeout(&mut self, now: Instant) {
        self.run_timers(now);
    }
}

/// The starting PSN, QPN and MTU checks [`Cm::connect`] and [`Cm::accept`] share.
fn check_qp(qpn: u32, psn: u32) -> Result<(), CmError> {
    if qpn == 0 || qpn > 0x00ff_ffff {
        return Err(CmError::Invalid("QPN must be 1..2^24"));
    }
    if psn > 0x00ff_ffff {
        return Err(CmError::Invalid("PSN must fit 24 bits"));
    }
    Ok(())
}

/// The status a SIDR_REQ with no listener gets (IBA 1 §12.6 Table 120: "service ID not
/// supported"); Linux `cm_sidr_req_handler` sends `IB_SIDR_UNSUPPORTED`.
const SIDR_NO_LISTENER: SidrStatus = SidrStatus::Unsupported;

impl Role {
    fn is_active(self) -> bool {
        self == Role::Active
    }
}
