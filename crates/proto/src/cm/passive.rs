//! The passive side (IBA 1 §12.9, "passive" state diagram): REQ in (duplicates, stale
//! connections, listeners), our user's accept or reject, the MRA a slow user needs, and the RTU.

use super::msg::{self, iba_time};
use super::state::{Conn, Role, State};
use super::{check_qp, Cm, CmError, CmEvent, CmMessage, ConnId, QpProgram};
use crate::mad_agent::MadAddr;
use crate::time::Instant;
use ipoib_wire::cm::TransportServiceType;
use ipoib_wire::cm::{attr, CmPath, RejReason, ReqRepr, RespondedTo, RtuRepr};
use std::time::Duration;

/// The primary path of a REQ seen from the receiver: local and remote swapped.
fn reversed(p: &CmPath) -> CmPath {
    CmPath {
        local_port_lid: p.remote_port_lid,
        remote_port_lid: p.local_port_lid,
        local_port_gid: p.remote_port_gid,
        remote_port_gid: p.local_port_gid,
        ..*p
    }
}

impl Cm {
    /// A REJ that answers a REQ we keep no record of (no listener, bad parameters, stale
    /// connection): Local Communication ID 0, the REQ's TID (Linux `cm_issue_rej`).
    fn reject_req_statelessly(
        &mut self,
        from: MadAddr,
        tid: u64,
        req: &ReqRepr,
        reason: RejReason,
    ) {
        let mut rej = msg::blank_rej();
        rej.remote_comm_id = req.local_comm_id;
        rej.message_rejected = RespondedTo::Req;
        rej.reason = reason;
        self.send(from, msg::cm_mad(tid, &CmMessage::Rej(rej)));
    }

    /// A REQ (IBA 1 §12.6 Table 106).
    pub(super) fn on_req(&mut self, now: Instant, from: MadAddr, tid: u64, req: ReqRepr) {
        // A duplicate: same sender CA and communication ID as a connection we hold. Answer as
        // the state says (IBA 1 §12.9): the MRA or REP again, or a stale-connection REJ once the
        // connection is in TimeWait (the REJ we sent, if we rejected it). Linux
        // (`cm_dup_req_handler`) has the TimeWait branch too, but removes a connection from its
        // lookup once in TimeWait, so there such a REQ is mostly taken as a new one.
        let dup = self
            .by_remote_id(req.local_ca_guid, req.local_comm_id)
            .filter_map(|id| self.conns.get(&id))
            .find(|c| c.role == Role::Passive);
        if let Some(c) = dup {
            let id = c.local_id;
            Self::count(&mut self.duplicates, "REQ");
            match c.state {
                State::MraReqSent | State::RepSent | State::MraRepRcvd => {
                    let wait = (c.state == State::MraReqSent).then(|| self.mra_give_up(c));
                    if let Some(mad) = c.last.as_deref().copied() {
                        let to = c.peer;
                        self.send(to, mad);
                    }
                    if let Some(w) = wait {
                        self.arm(id, Some(now + w));
                    }
                }
                State::TimeWait => {
                    let last_is_rej = c
                        .last
                        .as_deref()
                        .and_then(|m| msg::check_header(&m[..]).ok())
                        .is_some_and(|h| h.attribute_id == attr::REJ);
                    match c.last.as_deref().copied() {
                        Some(mad) if last_is_rej => {
                            let to = c.peer;
                            self.send(to, mad);
                        }
                        _ => self.reject_req_statelessly(from, tid, &req, RejReason::StaleConn),
                    }
                }
                _ => {}
            }
            return;
        }
        // IBA 1 §12.9.8.3.1: the REQ names a QP that a live connection of ours already reaches:
        // that connection is stale. Reject the REQ and release the old connection.
        if let Some(old) = self.stale_holder(0, req.local_qpn, req.local_ca_guid) {
            self.reject_req_statelessly(from, tid, &req, RejReason::StaleConn);
            self.release_stale(now, old);
            return;
        }
        let Some(listen) = self.find_listener(req.service_id) else {
            // IBA 1 §12.6 Table 108 reason 8; docs/DEPLOYED.md "Linux rdma_cm".
            return self.reject_req_statelessly(from, tid, &req, RejReason::InvalidServiceId);
        };
        let from_ca = self.per_ca.get(&req.local_ca_guid).copied().unwrap_or(0);
        if self.conns.len() >= self.cfg.max_conns || from_ca >= self.cfg.max_conns_per_ca {
            Self::count(&mut self.dropped, "REQ beyond the connection limit (REJ 3)");
            return self.reject_req_statelessly(from, tid, &req, RejReason::NoResources);
        }
        if !matches!(
            req.transport_service_type,
            TransportServiceType::Rc | TransportServiceType::Uc
        ) {
            return self.reject_req_statelessly(from, tid, &req, RejReason::InvalidTransportType);
        }
        if !req.path_packet_payload_mtu.is_valid() {
            return self.reject_req_statelessly(from, tid, &req, RejReason::InvalidMtu);
        }
        let id = self.alloc_comm_id();
        let conn = Conn {
            role: Role::Passive,
            state: State::ReqRcvd,
            local_id: id,
            remote_id: req.local_comm_id,
            remote_ca_guid: req.local_ca_guid,
            peer: from,
            tid,
            service_id: req.service_id,
            listen: Some(listen),
            transport: req.transport_service_type,
            local_qpn: 0,
            remote_qpn: req.local_qpn,
            local_psn: 0,
            remote_psn: req.starting_psn,
            path: reversed(&req.primary_path),
            pkey: req.partition_key,
            mtu: req.path_packet_payload_mtu,
            retry_count: req.retry_count,
            rnr_retry_count: req.rnr_retry_count,
            // Our reads are bounded by what the active side serves, and the reverse.
            max_rd_atomic: req.responder_resources,
            max_dest_rd_atomic: req.initiator_depth,
            // The REQ's local ACK timeout is 2 × PacketLifeTime plus the CA's ACK delay; Linux
            // `cm_format_paths_from_req` reads the packet lifetime back as that value minus one.
            packet_life: req.primary_path.local_ack_timeout.saturating_sub(1),
            peer_response: req.local_cm_response_timeout,
            max_retries: req.max_cm_retries,
            retries_left: req.max_cm_retries,
            last: None,
            deadline: None,
            req: Some(Box::new(req)),
            reported_up: false,
            rtu_private_data: Vec::new(),
            rej_private_data: Vec::new(),
        };
        self.conns.insert(id, conn);
        self.index(id);
        self.arm(
            id,
            Some(now + Self::mra_delay(req.remote_cm_response_timeout)),
        );
        self.events.push_back(CmEvent::ConnectRequest {
            conn: ConnId(id),
            listen,
            req,
            from,
        });
    }

    /// How long after our MRA we keep a REQ the peer no longer resends: two of its waits (our
    /// Service Timeout plus the round trip).
    fn mra_give_up(&self, c: &Conn) -> Duration {
        (iba_time(self.cfg.mra_service_timeout) + iba_time(c.packet_life) * 2) * 2
    }

    /// Our user has not answered the REQ in time: send an MRA for it (IBA 1 §12.6 Table 107) so
    /// the active side waits our Service Timeout instead of resending.
    pub(super) fn send_mra(&mut self, now: Instant, id: u32) {
        let Some(c) = self.conns.get_mut(&id) else {
            return;
        };
        c.state = State::MraReqSent;
        let mut mra = msg::blank_mra();
        mra.local_comm_id = id;
        mra.remote_comm_id = c.remote_id;
        mra.message_mraed = RespondedTo::Req;
        mra.service_timeout = self.cfg.mra_service_timeout & 0x1f;
        let c = c.clone();
        let give_up = self.mra_give_up(&c);
        self.send_on(id, CmMessage::Mra(mra), true);
        self.arm(id, Some(now + give_up));
    }

    /// Accepts a [`CmEvent::ConnectRequest`] with our QP `qpn` (in Init): sends the REP (IBA 1
    /// §12.6 Table 110) and returns what to program into the QP now (RTR, then RTS: Linux allows
    /// RTS before the REP leaves). Our starting PSN comes from the seeded generator.
    pub fn accept(
        &mut self,
        now: Instant,
        conn: ConnId,
        qpn: u32,
        private_data: &[u8],
    ) -> Result<QpProgram, CmError> {
        let c = self.conns.get(&conn.0).ok_or(CmError::Unknown)?;
        if !matches!(c.state, State::ReqRcvd | State::MraReqSent) {
            return Err(CmError::WrongState(c.state));
        }
        check_qp(qpn, 0)?;
        if self.qpn_in_use(qpn) {
            return Err(CmError::QpInUse(qpn));
        }
        let mut rep = msg::blank_rep();
        msg::fill(&mut rep.private_data, private_data).map_err(CmError::PrivateDataTooLong)?;
        let psn = self.rng.next_u24();
        let ca_guid = self.cfg.ca_guid;
        let ack_delay = self.cfg.ca_ack_delay;
        self.unindex(conn.0);
        let Some(c) = self.conns.get_mut(&conn.0) else {
            return Err(CmError::Unknown);
        };
        c.local_qpn = qpn;
        c.local_psn = psn;
        rep.local_comm_id = c.local_id;
        rep.remote_comm_id = c.remote_id;
        rep.local_qpn = qpn;
        rep.starting_psn = psn;
        rep.responder_resources = c.max_dest_rd_atomic;
        rep.initiator_depth = c.max_rd_atomic;
        // IBA 1 §12.6 Table 110: 1 = failover not supported (we take no alternate path).
        rep.failover_accepted = u8::from(c.req.as_ref().is_some_and(|r| r.has_alternate_path()));
        rep.rnr_retry_count = c.rnr_retry_count;
        rep.target_ack_delay = ack_delay;
        rep.local_ca_guid = ca_guid;
        c.state = State::RepSent;
        c.retries_left = c.max_retries;
        c.req = None;
        let wait = c.answer_wait();
        let qp = c.qp_program();
        self.index(conn.0);
        self.send_on(conn.0, CmMessage::Rep(rep), true);
        self.arm(conn.0, Some(now + wait));
        Ok(qp)
    }

    /// Rejects a connection before it is established: a REQ we were given (IBA 1 §12.6 Table 108,
    /// e.g. reason 28 "consumer reject"), or our own attempt (before its REP this is always a
    /// Timeout REJ carrying our CA GUID, the only form the peer can match, and `private_data`).
    /// The connection enters TimeWait, and a duplicate REQ gets the same REJ again.
    pub fn reject(
        &mut self,
        now: Instant,
        conn: ConnId,
        reason: RejReason,
        ari: &[u8],
        private_data: &[u8],
    ) -> Result<(), CmError> {
        let c = self.conns.get(&conn.0).ok_or(CmError::Unknown)?;
        let mut rej = msg::blank_rej();
        msg::fill(&mut rej.private_data, private_data).map_err(CmError::PrivateDataTooLong)?;
        let rejected = match c.state {
            State::ReqRcvd | State::MraReqSent => RespondedTo::Req,
            State::ReqSent | State::MraReqRcvd => {
                // The peer has not told us its communication ID, so a REJ can only reach its
                // record through the Timeout form (our CA GUID in the ARI), which is what Linux
                // `cm_destroy_id` sends when a REQ is withdrawn. The consumer's private data
                // goes with it (RFC 4755 §3.2: IPoIB-CM puts its UD QPN in every REJ).
                self.send_timeout_rej(conn.0, RespondedTo::Other, private_data);
                self.enter_time_wait(now, conn.0);
                return Ok(());
            }
            State::RepSent | State::MraRepRcvd => RespondedTo::Other,
            s => return Err(CmError::WrongState(s)),
        };
        if ari.len() > rej.ari.len() {
            return Err(CmError::Invalid("ARI longer than 72 bytes"));
        }
        rej.set_ari(ari);
        rej.local_comm_id = conn.0;
        rej.remote_comm_id = c.remote_id;
        rej.message_rejected = rejected;
        rej.reason = reason;
        self.send_on(conn.0, CmMessage::Rej(rej), true);
        self.enter_time_wait(now, conn.0);
        Ok(())
    }

    /// An RTU (IBA 1 §12.6 Table 111): the active side is ready; the connection is established.
    pub(super) fn on_rtu(&mut self, _now: Instant, rtu: RtuRepr) {
        let Some(c) = self.conns.get(&rtu.remote_comm_id) else {
            return self.drop_mad("RTU for unknown ID");
        };
        if c.role != Role::Passive || c.remote_id != rtu.local_comm_id {
            return self.drop_mad("RTU from another connection");
        }
        if !matches!(c.state, State::RepSent | State::MraRepRcvd) {
            return Self::count(&mut self.duplicates, "RTU");
        }
        self.establish_passive(rtu.remote_comm_id, rtu.private_data.to_vec());
    }

    fn establish_passive(&mut self, id: u32, private_data: Vec<u8>) {
        let Some(c) = self.conns.get_mut(&id) else {
            return;
        };
        c.state = State::Established;
        c.reported_up = true;
        let qp = c.qp_program();
        self.arm(id, None);
        self.events.push_back(CmEvent::Established {
            conn: ConnId(id),
            qp,
            private_data,
        });
    }

    /// The passive QP received its first packet before the RTU (the RTU was lost): the
    /// connection is established all the same (IBA 1 §12.9: the "communication established"
    /// event; Linux `ib_cm_notify(IB_EVENT_COMM_EST)`).
    pub fn notify_established(&mut self, conn: ConnId) -> Result<(), CmError> {
        let c = self.conns.get(&conn.0).ok_or(CmError::Unknown)?;
        match c.state {
            State::RepSent | State::MraRepRcvd => {
                self.establish_passive(conn.0, Vec::new());
                Ok(())
            }
            s => Err(CmError::WrongState(s)),
        }
    }
}
