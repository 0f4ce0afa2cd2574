//! The HCA side of IPoIB connected mode (RFC 4755; Linux `ipoib_cm.c`): what the interface's
//! [`CmCommand`]s become on the host's CM agent and HCA, and how the connections' completions and
//! the CM's events reach the interface.
//!
//! - the host's CM agent ([`Cm`], server of the CM class) is shared: [`install`] adds one when the
//!   host has none, listens on the interface's service IDs ([`Interface::cm_service_ids`]) and
//!   takes only the events of those listeners and of this interface's connections, the requests
//!   it rejected included, up to their `TimeWaitExit` ([`Cm::poll_event_where`]);
//! - `Connect`: an RC or UC QP on the interface's CQ, Init with the partition's P_Key index and
//!   [`CONN_RECV_DEPTH`] receives of the receive MTU posted, a random starting PSN, the REQ; on
//!   `Established` RTR and RTS with what the CM negotiated (`node::cm::connected_attr`);
//! - `Accept`: the same QP, accepted, RTR and RTS before the REP leaves; the first message
//!   received establishes a connection whose RTU is late (IBA 1 §12.9);
//! - `Reject`, `Disconnect` go to the agent (a connection not yet established is rejected
//!   instead, with the interface's private data, RFC 4755 §3.2); `Rejected`, `TimedOut` and `Disconnected` move the QP to Error, `TimeWaitExit`
//!   destroys it (IBA 1 §12.9.8: not reused before);
//! - a SIDR_REQ for the interface's service IDs is answered with status 1, "service ID not
//!   supported" (IBA 1 §12.6 Table 120): the service offers connections only;
//! - every [`ipoib_proto::ipoib::ConnTransmit`] is one signaled SEND; a send completing in error
//!   (not flushed) is [`Interface::conn_send_failed`].
//!
//! Invariants: never panics on what arrives; a refused verbs call or CM command is counted in
//! [`ConnCounters`] and reported to the interface as a failure, so no packet waits for an answer
//! that will not come.

use crate::hw::hca::{CqId, Hca, ModifyQp};
use crate::hw::verbs::{Completion, Qpn, RecvWr, SendWr, WcOpcode, WcStatus};
use crate::node::cm::{connected_attr, new_qp, CmAppConfig};
use crate::node::host::{AgentId, Agents, Host};
use crate::Instant;
use ipoib_proto::cm::{Cm, CmError, CmEvent, ConnId, ListenId, QpProgram, SidrId, State};
use ipoib_proto::ipoib::{CmCommand, Interface};
use ipoib_proto::rng::Rng;
use ipoib_wire::cm::{RejReason, SidrStatus};
use ipoib_wire::QKey;
use std::collections::{BTreeMap, BTreeSet};

/// Receives kept posted on each connection's QP (Linux shares one SRQ of `ipoib_recvq_size`,
/// 256, between its connections; without an SRQ each QP keeps its own).
pub const CONN_RECV_DEPTH: u32 = 256;

/// Connected-mode errors of the adapter (each counted; none stops it).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ConnCounters {
    /// QPs that could not be made or moved for a connect or an accept.
    pub qp_errors: u64,
    /// CM commands the agent refused.
    pub cm_errors: u64,
    /// Sends refused by the HCA or completed in error.
    pub send_errors: u64,
    /// Sends flushed without going out, their QP in Error (after a send that failed before them,
    /// or the connection's release): packets lost like a failed send's.
    pub sends_flushed: u64,
    /// Receive completions in error (not flushes).
    pub recv_errors: u64,
}

#[derive(Debug)]
struct ConnQp {
    qpn: Qpn,
    active: bool,
    up: bool,
}

/// The connected-mode half of an [`super::IpoibApp`].
#[derive(Debug)]
pub(super) struct CmSide {
    cm: AgentId,
    listens: BTreeSet<ListenId>,
    conns: BTreeMap<ConnId, ConnQp>,
    by_qpn: BTreeMap<Qpn, ConnId>,
    /// Requests rejected for the interface (no QP of ours): their events, up to TimeWaitExit,
    /// are still this interface's to take, or they would stay in the shared agent for good.
    rejected: BTreeSet<ConnId>,
    qp_cfg: CmAppConfig,
    rng: Rng,
    next_wr: u64,
    pub counters: ConnCounters,
}

/// Finds or adds the host's CM agent and listens on `iface`'s service IDs.
pub(super) fn install(host: &mut Host, iface: &Interface, port: u8, rng: Rng) -> Option<CmSide> {
    let cfg = iface.config().connected?;
    let cm = crate::node::cm::host_cm(host, &rng);
    let mut listens = BTreeSet::new();
    if let Some(agent) = host.agent_mut::<Cm>(cm) {
        for sid in iface.cm_service_ids() {
            if let Ok(l) = agent.listen(sid, u64::MAX) {
                listens.insert(l);
            }
        }
    }
    Some(CmSide {
        cm,
        listens,
        conns: BTreeMap::new(),
        by_qpn: BTreeMap::new(),
        rejected: BTreeSet::new(),
        qp_cfg: CmAppConfig {
            port,
            recv_depth: CONN_RECV_DEPTH,
            recv_capacity: cfg.receive_mtu,
            accept: true,
            min_rnr_timer: 0,
        },
        rng: rng.fork(2),
        next_wr: 1 << 48,
        counters: ConnCounters::default(),
    })
}

impl CmSide {
    /// True if `qpn` is one of this interface's connection QPs.
    pub fn owns_qp(&self, qpn: Qpn) -> bool {
        self.by_qpn.contains_key(&qpn)
    }

    /// Connections with a QP: (connection, QPN, established).
    pub fn qps(&self) -> impl Iterator<Item = (ConnId, Qpn, bool)> + '_ {
        self.conns.iter().map(|(id, c)| (*id, c.qpn, c.up))
    }

    /// Moves CM events and commands between the agent, the HCA and the interface until neither
    /// has more. Returns true if anything moved.
    pub fn pump(
        &mut self,
        now: Instant,
        iface_id: AgentId,
        cq: CqId,
        hca: &mut Hca,
        agents: &mut Agents,
    ) -> bool {
        let mut moved = false;
        loop {
            let mut round = false;
            while let Some(e) = self.next_event(agents) {
                round = true;
                if let CmEvent::SidrRequest { id, .. } = e {
                    self.refuse_sidr(id, agents);
                    continue;
                }
                self.on_event(now, &e, hca);
                if let Some(i) = agents.get_mut::<Interface>(iface_id) {
                    i.handle_cm_event(now, &e);
                }
            }
            while let Some(c) = agents
                .get_mut::<Interface>(iface_id)
                .and_then(Interface::poll_cm_command)
            {
                round = true;
                self.on_command(now, c, iface_id, cq, hca, agents);
            }
            while let Some(t) = agents
                .get_mut::<Interface>(iface_id)
                .and_then(Interface::poll_conn_transmit)
            {
                round = true;
                self.send(now, t.conn, t.data, iface_id, hca, agents);
            }
            if !round {
                return moved;
            }
            moved = true;
        }
    }

    /// A SIDR_REQ for one of the interface's service IDs: an IPoIB-CM service offers
    /// connections only (RFC 4755 §3.5), so it is answered with status 1, "service ID not
    /// supported" (IBA 1 §12.11, §12.6 Table 120), as `node::cm::CmApp` answers one for a
    /// listener without a UD service; unanswered, the requester would resend it until its Max CM
    /// Retries were spent.
    fn refuse_sidr(&mut self, id: SidrId, agents: &mut Agents) {
        let r = agents
            .get_mut::<Cm>(self.cm)
            .map(|cm| cm.sidr_reply(id, SidrStatus::Unsupported, 0, QKey(0), &[]));
        if !matches!(r, Some(Ok(()))) {
            self.counters.cm_errors += 1;
        }
    }

    fn next_event(&self, agents: &mut Agents) -> Option<CmEvent> {
        let (listens, conns, rejected) = (&self.listens, &self.conns, &self.rejected);
        let mine = |e: &CmEvent| match (e.listener(), e.conn()) {
            (Some(l), _) => listens.contains(&l),
            (None, Some(c)) => conns.contains_key(&c) || rejected.contains(&c),
            (None, None) => false,
        };
        agents.get_mut::<Cm>(self.cm)?.poll_event_where(mine)
    }

    fn on_event(&mut self, _now: Instant, e: &CmEvent, hca: &mut Hca) {
        match e {
            CmEvent::Established { conn, qp, .. } => {
                let Some(c) = self.conns.get_mut(conn) else {
                    return;
                };
                c.up = true;
                if c.active && program(hca, &self.qp_cfg, qp).is_err() {
                    self.counters.qp_errors += 1;
                    let _ = hca.modify_qp(qp.local_qpn, ModifyQp::Error);
                }
            }
            CmEvent::Rejected { conn, .. }
            | CmEvent::TimedOut { conn, .. }
            | CmEvent::Disconnected { conn, .. } => {
                if let Some(c) = self.conns.get_mut(conn) {
                    c.up = false;
                    let _ = hca.modify_qp(c.qpn, ModifyQp::Error);
                }
            }
            CmEvent::TimeWaitExit { conn, .. } => {
                self.rejected.remove(conn);
                if let Some(c) = self.conns.remove(conn) {
                    self.by_qpn.remove(&c.qpn);
                    let _ = hca.destroy_qp(c.qpn);
                }
            }
            // Requests are the interface's to answer (through commands).
            _ => {}
        }
    }

    fn on_command(
        &mut self,
        now: Instant,
        c: CmCommand,
        iface_id: AgentId,
        cq: CqId,
        hca: &mut Hca,
        agents: &mut Agents,
    ) {
        match c {
            CmCommand::Connect { peer, mut params } => {
                let conn = self.connect(now, &mut params, cq, hca, agents);
                if let Some(i) = agents.get_mut::<Interface>(iface_id) {
                    i.cm_connect_started(now, peer, conn);
                }
            }
            CmCommand::Accept { conn, private_data } => {
                if !self.accept(now, conn, &private_data, cq, hca, agents) {
                    if let Some(cm) = agents.get_mut::<Cm>(self.cm) {
                        let _ = cm.reject(now, conn, RejReason::NoQp, &[], &private_data);
                    }
                    self.claim_unanswered(conn, agents);
                    if let Some(i) = agents.get_mut::<Interface>(iface_id) {
                        i.cm_accept_failed(now, conn);
                    }
                }
            }
            CmCommand::Reject {
                conn,
                reason,
                private_data,
            } => {
                let r = agents
                    .get_mut::<Cm>(self.cm)
                    .map(|cm| cm.reject(now, conn, reason, &[], &private_data));
                if !matches!(r, Some(Ok(()))) {
                    self.counters.cm_errors += 1;
                }
                self.claim_unanswered(conn, agents);
            }
            CmCommand::Disconnect { conn } => {
                let pd = agents
                    .get::<Interface>(iface_id)
                    .map(Interface::cm_private_data)
                    .unwrap_or_default();
                let Some(cm) = agents.get_mut::<Cm>(self.cm) else {
                    return;
                };
                let r = match cm.state(conn) {
                    Some(State::Established) => cm.disconnect(now, conn, &[]),
                    // Not established yet: a REJ ends it (IBA 1 §12.9.5), with our UD QPN and
                    // receive MTU like every REJ of ours (RFC 4755 §3.2).
                    Some(
                        State::ReqSent | State::MraReqRcvd | State::RepSent | State::MraRepRcvd,
                    ) => cm.reject(now, conn, RejReason::ConsumerDefined, &[], &pd),
                    Some(_) => Ok(()),
                    None => Err(CmError::Unknown),
                };
                if r.is_err() {
                    self.counters.cm_errors += 1;
                }
            }
        }
    }

    /// Takes the events of request `conn`, which the interface answered without a QP of ours,
    /// while the agent holds its record: its REJ is on its way, or a REJ or a timeout ended it
    /// before the answer came (the agent then refused the answer). Either way its events up to
    /// `TimeWaitExit` are this interface's, or they would stay in the shared agent for good.
    fn claim_unanswered(&mut self, conn: ConnId, agents: &mut Agents) {
        let held = agents
            .get::<Cm>(self.cm)
            .is_some_and(|cm| cm.state(conn).is_some());
        if held && !self.conns.contains_key(&conn) {
            self.rejected.insert(conn);
        }
    }

    fn connect(
        &mut self,
        now: Instant,
        params: &mut ipoib_proto::cm::ConnectParams,
        cq: CqId,
        hca: &mut Hca,
        agents: &mut Agents,
    ) -> Option<ConnId> {
        let Ok(qpn) = new_qp(
            hca,
            &self.qp_cfg,
            cq,
            params.transport,
            params.pkey,
            &mut self.next_wr,
        ) else {
            self.counters.qp_errors += 1;
            return None;
        };
        params.qpn = qpn;
        params.psn = self.rng.next_u24();
        match agents
            .get_mut::<Cm>(self.cm)
            .map(|cm| cm.connect(now, params.clone()))
        {
            Some(Ok(conn)) => {
                // RFC 4755 §3.2: the UD QPN in every REJ, the agent's own ones too.
                if let Some(cm) = agents.get_mut::<Cm>(self.cm) {
                    let _ = cm.set_rej_private_data(conn, &params.private_data);
                }
                self.adopt(conn, qpn, true);
                Some(conn)
            }
            _ => {
                self.counters.cm_errors += 1;
                let _ = hca.destroy_qp(qpn);
                None
            }
        }
    }

    fn accept(
        &mut self,
        now: Instant,
        conn: ConnId,
        private_data: &[u8],
        cq: CqId,
        hca: &mut Hca,
        agents: &mut Agents,
    ) -> bool {
        let Some(cm) = agents.get_mut::<Cm>(self.cm) else {
            return false;
        };
        let Some(info) = cm.info(conn) else {
            self.counters.cm_errors += 1;
            return false;
        };
        let Ok(qpn) = new_qp(
            hca,
            &self.qp_cfg,
            cq,
            info.qp.transport,
            info.qp.pkey,
            &mut self.next_wr,
        ) else {
            self.counters.qp_errors += 1;
            return false;
        };
        let qp = match cm.accept(now, conn, qpn, private_data) {
            Ok(qp) => {
                let _ = cm.set_rej_private_data(conn, private_data);
                qp
            }
            Err(_) => {
                self.counters.cm_errors += 1;
                let _ = hca.destroy_qp(qpn);
                return false;
            }
        };
        self.adopt(conn, qpn, false);
        if program(hca, &self.qp_cfg, &qp).is_err() {
            // The REP is queued; the REJ that follows tells the peer the QP never came up.
            self.counters.qp_errors += 1;
            let _ = hca.modify_qp(qpn, ModifyQp::Error);
            return false;
        }
        true
    }

    fn adopt(&mut self, conn: ConnId, qpn: Qpn, active: bool) {
        self.by_qpn.insert(qpn, conn);
        self.conns.insert(
            conn,
            ConnQp {
                qpn,
                active,
                up: false,
            },
        );
    }

    fn send(
        &mut self,
        now: Instant,
        conn: ConnId,
        data: Vec<u8>,
        iface_id: AgentId,
        hca: &mut Hca,
        agents: &mut Agents,
    ) {
        let qpn = match self.conns.get(&conn) {
            Some(c) if c.up => c.qpn,
            _ => {
                self.counters.send_errors += 1;
                if let Some(i) = agents.get_mut::<Interface>(iface_id) {
                    i.conn_send_failed(now, conn);
                }
                return;
            }
        };
        self.next_wr += 1;
        let wr = SendWr::send(self.next_wr, data);
        if hca.post_send(qpn, wr).is_err() {
            self.counters.send_errors += 1;
            if let Some(i) = agents.get_mut::<Interface>(iface_id) {
                i.conn_send_failed(now, conn);
            }
        }
    }

    /// A completion on one of the connection QPs.
    pub fn on_completion(
        &mut self,
        now: Instant,
        c: Completion,
        iface_id: AgentId,
        hca: &mut Hca,
        agents: &mut Agents,
    ) {
        let Some(&conn) = self.by_qpn.get(&c.qpn) else {
            return;
        };
        let recv = matches!(c.opcode, WcOpcode::Recv | WcOpcode::RecvRdmaWithImm);
        if c.status != WcStatus::Success {
            if c.status == WcStatus::WrFlushErr {
                // Flushed receives are buffers, not packets; a flushed send is a lost packet.
                if !recv {
                    self.counters.sends_flushed += 1;
                }
                return;
            }
            if recv {
                self.counters.recv_errors += 1;
            } else {
                self.counters.send_errors += 1;
                if let Some(i) = agents.get_mut::<Interface>(iface_id) {
                    i.conn_send_failed(now, conn);
                }
            }
            return;
        }
        if !recv {
            return;
        }
        self.next_wr += 1;
        let wr = RecvWr {
            wr_id: self.next_wr,
            capacity: self.qp_cfg.recv_capacity,
        };
        if hca.post_recv(c.qpn, wr).is_err() {
            self.counters.recv_errors += 1;
        }
        let first = self.conns.get(&conn).is_some_and(|q| !q.active && !q.up);
        if first {
            // IBA 1 §12.9: the first message on the passive QP establishes the connection when
            // the RTU is late or lost.
            if let Some(cm) = agents.get_mut::<Cm>(self.cm) {
                let _ = cm.notify_established(conn);
            }
        }
        if let Some(i) = agents.get_mut::<Interface>(iface_id) {
            i.handle_conn_received(now, conn, c.data);
        }
    }
}

/// RTR then RTS with `p`.
fn program(hca: &mut Hca, cfg: &CmAppConfig, p: &QpProgram) -> Result<(), ()> {
    let port = hca.port(cfg.port).ok_or(())?;
    let attr = connected_attr(p, port, cfg.min_rnr_timer).map_err(|_| ())?;
    hca.modify_qp(p.local_qpn, ModifyQp::Rtr(Some(attr)))
        .map_err(|_| ())?;
    hca.modify_qp(p.local_qpn, ModifyQp::Rts(Some(attr)))
        .map_err(|_| ())
}
