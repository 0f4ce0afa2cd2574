//! The connection record and its states (IBA 1 §12.9, the communication establishment and release
//! state diagrams; names as Linux `enum ib_cm_state` spells them).

use super::{ConnId, ListenId, QpProgram};
use crate::mad_agent::MadAddr;
use crate::time::Instant;
use ipoib_wire::cm::{CmPath, ReqRepr, TransportServiceType};
use ipoib_wire::PKey;
use ipoib_wire::{Guid, Mtu};
use std::time::Duration;

/// Where a connection stands (IBA 1 §12.9).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum State {
    /// Active: REQ sent, waiting for REP, REJ or MRA.
    ReqSent,
    /// Active: the peer acknowledged our REQ with an MRA; waiting longer.
    MraReqRcvd,
    /// Passive: REQ reported to our user, no answer yet.
    ReqRcvd,
    /// Passive: our user is slow, we sent an MRA for the REQ.
    MraReqSent,
    /// Passive: REP sent, waiting for RTU.
    RepSent,
    /// Passive: the peer acknowledged our REP with an MRA; waiting longer.
    MraRepRcvd,
    /// Both: connected.
    Established,
    /// Both: DREQ sent, waiting for DREP.
    DreqSent,
    /// Both: the connection is over; the communication ID and the QP wait out stale packets before
    /// reuse (IBA 1 §12.9.8).
    TimeWait,
}

/// Which end of the connection we are.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Role {
    /// We sent the REQ.
    Active,
    /// We received it.
    Passive,
}

/// One connection (or attempt) and everything needed to answer its messages, duplicates included.
#[derive(Debug, Clone)]
pub(super) struct Conn {
    pub role: Role,
    pub state: State,
    pub local_id: u32,
    /// The peer's communication ID (0 until its REP reaches the active side).
    pub remote_id: u32,
    pub remote_ca_guid: Guid,
    /// The peer's QP1.
    pub peer: MadAddr,
    /// TID of the REQ, REP, RTU, MRA and REJ of this connection (IBA 1 §13.4.6.2).
    pub tid: u64,
    pub service_id: u64,
    pub listen: Option<ListenId>,
    pub transport: TransportServiceType,
    /// Our QP (0 until a passive user accepts).
    pub local_qpn: u32,
    pub remote_qpn: u32,
    /// The starting PSN our REQ or REP carried: the first PSN we expect to receive (Linux
    /// `ib_send_cm_req`/`ib_send_cm_rep` set `rq_psn` from it).
    pub local_psn: u32,
    /// The starting PSN the peer's REQ or REP carried: the first PSN we send (Linux
    /// `cm_req_handler`/`cm_rep_handler` set `sq_psn` from it).
    pub remote_psn: u32,
    /// Our view of the path.
    pub path: CmPath,
    pub pkey: PKey,
    pub mtu: Mtu,
    pub retry_count: u8,
    pub rnr_retry_count: u8,
    pub max_rd_atomic: u8,
    pub max_dest_rd_atomic: u8,
    /// PacketLifeTime exponent of the path.
    pub packet_life: u8,
    /// How long the peer's CM may take to answer (IBA time exponent).
    pub peer_response: u8,
    /// Max CM Retries for what we send on this connection.
    pub max_retries: u8,
    /// Retries left for the message awaiting an answer.
    pub retries_left: u8,
    /// The last message we sent that may have to go again (REQ, REP, MRA, RTU, DREQ, REJ, DREP).
    pub last: Option<Box<[u8; super::msg::MAD_LEN]>>,
    /// When this connection's one timer fires (every state but Established has one).
    pub deadline: Option<Instant>,
    /// The REQ, kept by the passive side until its user answers.
    pub req: Option<Box<ReqRepr>>,
    /// True once our user has been told Established (so a release reports Disconnected).
    pub reported_up: bool,
    /// Active side: the private data of our RTU.
    pub rtu_private_data: Vec<u8>,
    /// The private data of the REJs the agent sends on its own for this connection (timeouts,
    /// stale connection): what its user set with [`super::Cm::set_rej_private_data`].
    pub rej_private_data: Vec<u8>,
}

impl Conn {
    /// The handle the user knows this connection by.
    pub fn id(&self) -> ConnId {
        ConnId(self.local_id)
    }

    /// The QP attributes as negotiated so far.
    pub fn qp_program(&self) -> QpProgram {
        QpProgram {
            transport: self.transport,
            local_qpn: self.local_qpn,
            remote_qpn: self.remote_qpn,
            path: self.path,
            pkey: self.pkey,
            mtu: self.mtu,
            rq_psn: self.local_psn,
            sq_psn: self.remote_psn,
            retry_count: self.retry_count,
            rnr_retry_count: self.rnr_retry_count,
            max_rd_atomic: self.max_rd_atomic,
            max_dest_rd_atomic: self.max_dest_rd_atomic,
        }
    }

    /// How long to wait for the peer's answer to one send (IBA 1 §12.7: the remote CM response
    /// time plus the packet's round trip, 2 × PacketLifeTime). Linux waits the same for a REQ
    /// (`ib_send_cm_req`) but only the response time for a REP (`ib_send_cm_rep`); we keep the
    /// round trip for both, so we resend a REP later than Linux does (docs/DEPLOYED.md).
    pub fn answer_wait(&self) -> Duration {
        super::msg::iba_time(self.peer_response) + super::msg::iba_time(self.packet_life) * 2
    }

    /// How long TimeWait lasts: the QP's local ACK timeout, at least two packet lifetimes, so that
    /// no packet of this connection is still in flight when the QP and the ID are reused (IBA 1
    /// §12.9.8; Linux `cm_enter_timewait` waits the ACK timeout, docs/DEPLOYED.md "Linux ib_cm").
    pub fn time_wait(&self) -> Duration {
        let ack = super::msg::iba_time(self.path.local_ack_timeout);
        ack.max(super::msg::iba_time(self.packet_life) * 2)
    }

    /// True while the connection holds the peer's QP for stale-connection checks (IBA 1
    /// §12.9.8.3.1): from the REQ (passive) or REP (active) until TimeWait.
    pub fn holds_remote_qp(&self) -> bool {
        self.remote_qpn != 0 && self.state != State::TimeWait
    }
}
