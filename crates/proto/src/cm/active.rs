//! The active side (IBA 1 §12.9, "active" state diagram): REQ out, then REP (answered with RTU),
//! MRA (wait longer) or REJ. REJ and MRA handling serves both sides.

use super::msg::{self, iba_time};
use super::state::{Conn, Role, State};
use super::{check_qp, Cm, CmError, CmEvent, CmMessage, ConnId, ConnectParams};
use crate::mad_agent::{GrhAddr, MadAddr};
use crate::time::Instant;
use ipoib_wire::cm::{MraRepr, RejReason, RejRepr, RepRepr, RespondedTo, TransportServiceType};
use ipoib_wire::ib::lid::is_unicast_lid;
use ipoib_wire::{Guid, QKey};

impl Cm {
    /// Sends a REQ (IBA 1 §12.6 Table 106) and returns the new connection. Our QP should be in
    /// Init; [`CmEvent::Established`] brings the peer's QPN and PSN for RTR and RTS.
    pub fn connect(&mut self, now: Instant, p: ConnectParams) -> Result<ConnId, CmError> {
        check_qp(p.qpn, p.psn)?;
        if !matches!(
            p.transport,
            TransportServiceType::Rc | TransportServiceType::Uc
        ) {
            return Err(CmError::Invalid("transport must be RC or UC"));
        }
        if !p.mtu.is_valid() {
            return Err(CmError::Invalid("undefined MTU code"));
        }
        // IBA 1 §10.9.3: a P_Key with partition number 0 matches nothing.
        if !p.pkey.is_valid() {
            return Err(CmError::Invalid("invalid P_Key"));
        }
        // IBA 1 §4.1: a connection's path ends at unicast LIDs.
        if !is_unicast_lid(p.path.remote_port_lid) || !is_unicast_lid(p.path.local_port_lid) {
            return Err(CmError::Invalid("path LIDs must be unicast"));
        }
        if self.qpn_in_use(p.qpn) {
            return Err(CmError::QpInUse(p.qpn));
        }
        let mut req = msg::blank_req();
        msg::fill(&mut req.private_data, &p.private_data).map_err(CmError::PrivateDataTooLong)?;
        if p.rtu_private_data.len() > msg::blank_rtu().private_data.len() {
            return Err(CmError::PrivateDataTooLong(p.rtu_private_data.len()));
        }
        let id = self.alloc_comm_id();
        req.local_comm_id = id;
        req.service_id = p.service_id;
        req.local_ca_guid = self.cfg.ca_guid;
        req.local_qpn = p.qpn;
        req.responder_resources = p.responder_resources;
        req.initiator_depth = p.initiator_depth;
        req.remote_cm_response_timeout = p.remote_response_timeout & 0x1f;
        req.transport_service_type = p.transport;
        req.starting_psn = p.psn;
        req.local_cm_response_timeout = self.cfg.response_timeout & 0x1f;
        req.retry_count = p.retry_count & 7;
        req.partition_key = p.pkey;
        req.path_packet_payload_mtu = p.mtu;
        req.rnr_retry_count = p.rnr_retry_count & 7;
        req.max_cm_retries = self.cfg.max_cm_retries & 0xf;
        req.primary_path = p.path;
        let path = p.path;
        let peer = MadAddr {
            lid: path.remote_port_lid,
            qpn: 1,
            qkey: QKey::GSI,
            sl: path.sl,
            pkey: p.pkey,
            grh: (!path.subnet_local).then_some(GrhAddr {
                gid: path.remote_port_gid,
                flow_label: path.flow_label,
                hop_limit: path.hop_limit,
                tclass: path.traffic_class,
            }),
        };
        let max_retries = self.cfg.max_cm_retries & 0xf;
        let conn = Conn {
            role: Role::Active,
            state: State::ReqSent,
            local_id: id,
            remote_id: 0,
            remote_ca_guid: Guid(0),
            peer,
            tid: self.new_tid(id),
            service_id: p.service_id,
            listen: None,
            transport: p.transport,
            local_qpn: p.qpn,
            remote_qpn: 0,
            local_psn: p.psn,
            remote_psn: 0,
            path,
            pkey: p.pkey,
            mtu: p.mtu,
            retry_count: req.retry_count,
            rnr_retry_count: 0,
            max_rd_atomic: p.initiator_depth,
            max_dest_rd_atomic: p.responder_resources,
            packet_life: p.packet_life_time,
            peer_response: req.remote_cm_response_timeout,
            max_retries,
            retries_left: max_retries,
            last: None,
            deadline: None,
            req: None,
            reported_up: false,
            rtu_private_data: p.rtu_private_data,
            rej_private_data: Vec::new(),
        };
        let wait = conn.answer_wait();
        self.conns.insert(id, conn);
        self.index(id);
        self.send_on(id, CmMessage::Req(req), true);
        self.arm(id, Some(now + wait));
        Ok(ConnId(id))
    }

    /// Another live connection holding the peer QP `qpn` of CA `guid` (IBA 1 §12.9.8.3.1).
    pub(super) fn stale_holder(&self, except: u32, qpn: u32, guid: Guid) -> Option<u32> {
        self.remote_qps
            .range((guid, qpn, 0)..=(guid, qpn, u32::MAX))
            .map(|k| k.2)
            .find(|&id| id != except)
    }

    /// A REP (IBA 1 §12.6 Table 110): in REQ Sent it establishes the connection and is answered
    /// with an RTU; a duplicate in Established gets the RTU again (Linux `cm_dup_rep_handler`).
    pub(super) fn on_rep(&mut self, now: Instant, _from: MadAddr, rep: RepRepr) {
        let id = rep.remote_comm_id;
        let Some(c) = self.conns.get(&id) else {
            return self.drop_mad("REP for unknown ID");
        };
        if !c.role.is_active() {
            return self.drop_mad("REP to a passive connection");
        }
        match c.state {
            State::ReqSent | State::MraReqRcvd => {}
            State::Established if c.remote_id == rep.local_comm_id => {
                Self::count(&mut self.duplicates, "REP");
                if let Some(mad) = c.last.as_deref().copied() {
                    let to = c.peer;
                    self.send(to, mad);
                }
                return;
            }
            _ if c.remote_id == rep.local_comm_id => {
                return Self::count(&mut self.duplicates, "REP");
            }
            _ => return self.drop_mad("REP in wrong state"),
        }
        // IBA 1 §12.9.8.3.1: a REP naming a remote QP that another connection still holds means
        // that connection is stale: reject the REP and release the old connection.
        if let Some(old) = self.stale_holder(id, rep.local_qpn, rep.local_ca_guid) {
            self.unindex(id);
            if let Some(c) = self.conns.get_mut(&id) {
                c.remote_id = rep.local_comm_id;
            }
            self.index(id);
            self.reject_stale(now, id, RespondedTo::Rep);
            self.release_stale(now, old);
            return;
        }
        self.unindex(id);
        let Some(c) = self.conns.get_mut(&id) else {
            return;
        };
        c.remote_id = rep.local_comm_id;
        c.remote_ca_guid = rep.local_ca_guid;
        c.remote_qpn = rep.local_qpn;
        c.remote_psn = rep.starting_psn;
        c.rnr_retry_count = rep.rnr_retry_count;
        // The REP's resources are the peer's view: its responder resources bound our initiator
        // depth and its initiator depth our responder resources (Linux `cm_rep_handler`).
        c.max_rd_atomic = c.max_rd_atomic.min(rep.responder_resources);
        c.max_dest_rd_atomic = c.max_dest_rd_atomic.min(rep.initiator_depth);
        // The QP's ACK timeout: two packet lifetimes plus the target's ACK delay, which only the
        // REP tells (IBA 1 §9.7.6.1.3, §12.6 Table 110; Linux `cm_rep_handler`), not the CA ACK
        // delay of ours that the REQ's Local ACK Timeout holds for the passive side.
        c.path.local_ack_timeout = super::path::ack_timeout(c.packet_life, rep.target_ack_delay);
        c.state = State::Established;
        c.reported_up = true;
        let qp = c.qp_program();
        let remote_id = c.remote_id;
        let rtu_data = c.rtu_private_data.clone();
        self.index(id);
        self.arm(id, None);
        self.events.push_back(CmEvent::Established {
            conn: ConnId(id),
            qp,
            private_data: rep.private_data.to_vec(),
        });
        let mut rtu = msg::blank_rtu();
        rtu.local_comm_id = id;
        rtu.remote_comm_id = remote_id;
        // Checked to fit when the connection was made.
        let _ = msg::fill(&mut rtu.private_data, &rtu_data);
        self.send_on(id, CmMessage::Rtu(rtu), true);
    }

    /// Rejects the REQ or REP of connection `id` as stale (REJ reason 10, IBA 1 §12.9.8.3.1) and
    /// puts it in TimeWait; its user hears [`CmEvent::Rejected`].
    pub(super) fn reject_stale(&mut self, now: Instant, id: u32, rejected: RespondedTo) {
        let Some(c) = self.conns.get(&id) else {
            return;
        };
        let mut rej = msg::blank_rej();
        let n = c.rej_private_data.len().min(rej.private_data.len());
        rej.private_data[..n].copy_from_slice(&c.rej_private_data[..n]);
        rej.local_comm_id = id;
        rej.remote_comm_id = c.remote_id;
        rej.message_rejected = rejected;
        rej.reason = RejReason::StaleConn;
        self.send_on(id, CmMessage::Rej(rej), true);
        self.events.push_back(CmEvent::Rejected {
            conn: ConnId(id),
            reason: RejReason::StaleConn,
            ari: Vec::new(),
            private_data: Vec::new(),
        });
        self.enter_time_wait(now, id);
    }

    /// An MRA (IBA 1 §12.6 Table 107): the peer got our REQ or REP and needs more time; wait its
    /// Service Timeout plus the round trip before resending (Linux `cm_mra_handler`).
    pub(super) fn on_mra(&mut self, now: Instant, mra: MraRepr) {
        let id = mra.remote_comm_id;
        let Some(c) = self.conns.get_mut(&id) else {
            return self.drop_mad("MRA for unknown ID");
        };
        if c.remote_id != 0 && c.remote_id != mra.local_comm_id {
            return self.drop_mad("MRA from another connection");
        }
        let next = match (c.state, mra.message_mraed) {
            (State::ReqSent, RespondedTo::Req) => State::MraReqRcvd,
            (State::RepSent, RespondedTo::Rep) => State::MraRepRcvd,
            (State::MraReqRcvd, RespondedTo::Req) | (State::MraRepRcvd, RespondedTo::Rep) => {
                return Self::count(&mut self.duplicates, "MRA");
            }
            _ => return self.drop_mad("MRA in wrong state"),
        };
        c.state = next;
        let wait = iba_time(mra.service_timeout) + iba_time(c.packet_life) * 2;
        self.arm(id, Some(now + wait));
    }

    /// The connection a REJ is for: by our ID in its Remote Communication ID, or, for a Timeout
    /// REJ from a peer that never learnt our ID, by the CA GUID in its ARI and its Local
    /// Communication ID (IBA 1 §12.6 Table 108; Linux `cm_acquire_rejected_id`).
    fn rejected_conn(&self, rej: &RejRepr) -> Option<u32> {
        if let Some(c) = self.conns.get(&rej.remote_comm_id) {
            let known = c.remote_id != 0;
            if !known || c.remote_id == rej.local_comm_id {
                return Some(c.local_id);
            }
        }
        if rej.reason == RejReason::Timeout {
            let ari = rej.ari();
            let guid = Guid(u64::from_be_bytes(ari.get(..8)?.try_into().ok()?));
            return self.by_remote_id(guid, rej.local_comm_id).next();
        }
        None
    }

    /// A REJ (IBA 1 §12.6 Table 108): the connection is over whatever state it was in; it waits
    /// out TimeWait so that its ID is not reused while the peer may still send to it.
    pub(super) fn on_rej(&mut self, now: Instant, rej: RejRepr) {
        let Some(id) = self.rejected_conn(&rej) else {
            return self.drop_mad("REJ for unknown ID");
        };
        let Some(c) = self.conns.get(&id) else {
            return;
        };
        if c.state == State::TimeWait {
            return Self::count(&mut self.duplicates, "REJ");
        }
        self.events.push_back(CmEvent::Rejected {
            conn: ConnId(id),
            reason: rej.reason,
            ari: rej.ari().to_vec(),
            private_data: rej.private_data.to_vec(),
        });
        self.enter_time_wait(now, id);
    }
}
