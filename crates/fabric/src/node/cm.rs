//! The Communication Manager on a host (IBA 1 chapter 12): the sans-IO agent
//! [`ipoib_proto::cm::Cm`] on QP1 of the host's management port, serving the CM class, and
//! [`CmApp`], which owns the RC and UC QPs of its connections and moves them through their states
//! as the agent's events say, in the order the `ipoib_proto::cm` module docs give (IBA 1 §12.9;
//! Linux `ib_cm_init_qp_attr`):
//! - active side: [`connect`] creates the QP, moves it to Init with its receives posted and sends
//!   the REQ; on `Established` (the REP) the QP goes to RTR and RTS with the negotiated
//!   [`QpProgram`] before the RTU leaves the host;
//! - passive side: on `ConnectRequest` the application (when [`CmAppConfig::accept`] is set)
//!   creates the QP, moves it to Init, accepts, and programs RTR and RTS before the REP leaves;
//!   a first packet received before the RTU establishes the connection
//!   ([`ipoib_proto::cm::Cm::notify_established`]);
//! - both: Error on `Disconnected`, `Rejected` or `TimedOut`; the QP is destroyed on
//!   `TimeWaitExit` (IBA 1 §12.9.8: not reused before).
//!
//! A slow consumer ([`set_accept_delay`]) answers REQs late, so the agent sends an MRA
//! for it (IBA 1 §12.6 Table 107). Service ID resolution (IBA 1 §12.11): [`offer_ud`] answers
//! SIDR_REQs for a UD service with its QPN and Q_Key; [`resolve`] asks a peer's CM and the answer
//! is kept in [`CmApp::sidr`].
//!
//! Every CM message is an ordinary MAD on QP1, so the simulator's capture holds them.
//!
//! Invariants: maps are `BTreeMap`s (same inputs, same packets); a refused verbs call or CM
//! command is recorded in [`CmApp::failures`] (and a REQ we cannot take is rejected), never a
//! panic.

use crate::hw::hca::{CqId, Hca, ModifyQp, Port, QpInit, VerbsError};
use crate::hw::verbs::{
    AddressHandle, Completion, ConnectedAttr, QpType, Qpn, RecvWr, SendWr, WcOpcode, WcStatus,
};
use crate::node::host::{AgentId, App, AppId, Host, HostCtx};
use ipoib_proto::cm::SidrId;
use ipoib_proto::cm::{Cm, CmConfig, CmError, CmEvent, ConnId, ConnectParams, ListenId, QpProgram};
use ipoib_proto::mad_agent::MadAddr;
use ipoib_proto::rng::Rng;
use ipoib_proto::time::Instant;
use ipoib_wire::cm::{RejReason, ReqRepr, SidrRepRepr, SidrStatus, TransportServiceType};
use ipoib_wire::mad::MgmtClass;
use ipoib_wire::PKey;
use ipoib_wire::QKey;
use std::any::Any;
use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

/// The CM's agent and application on one host.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CmHandle {
    /// The [`Cm`] agent (server of the CM class).
    pub cm: AgentId,
    /// The [`CmApp`].
    pub app: AppId,
}

/// How the application runs its connections.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CmAppConfig {
    /// The port the QPs use (the host's management port, where the agent is).
    pub port: u8,
    /// Receives kept posted on each QP.
    pub recv_depth: u32,
    /// Bytes each receive holds (the largest message accepted).
    pub recv_capacity: u32,
    /// Accept every REQ a listener matched (else reject it, reason 28 "consumer defined").
    pub accept: bool,
    /// The RNR NAK timer code the QPs advertise (IBA 1 Table 45); Linux `cm_init_qp_rtr_attr`
    /// sets 0.
    pub min_rnr_timer: u8,
}

impl CmAppConfig {
    /// Port `port`, 64 receives of 64 KiB each, accepting, RNR timer code 0.
    pub fn new(port: u8) -> CmAppConfig {
        CmAppConfig {
            port,
            recv_depth: 64,
            recv_capacity: 1 << 16,
            accept: true,
            min_rnr_timer: 0,
        }
    }
}

/// Where a connection's QP stands, as the application moved it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LinkState {
    /// Init (active side: REQ sent) or RTS waiting for the RTU (passive side).
    Connecting,
    /// RTS, the CM says Established.
    Up,
    /// Error: released, rejected or timed out; the CM keeps the QP in TimeWait.
    Down,
    /// TimeWait is over; the QP is destroyed.
    Closed,
}

/// One connection's QP and what went over it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Connection {
    /// Our QP.
    pub qpn: Qpn,
    /// Where it stands.
    pub state: LinkState,
    /// True if we sent the REQ.
    pub active: bool,
    /// The attributes programmed at RTR/RTS (once known).
    pub qp: Option<QpProgram>,
    /// Messages received, in order.
    pub received: Vec<Vec<u8>>,
    /// Sends completed successfully.
    pub sent: u64,
    /// Completions in error.
    pub errors: Vec<WcStatus>,
}

/// Why a command of this module failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum CmHostError {
    /// A verbs call was refused.
    #[error("verbs: {0}")]
    Verbs(#[from] VerbsError),
    /// The CM agent refused the command.
    #[error("CM: {0}")]
    Cm(#[from] CmError),
    /// The connection's P_Key is not in the port's table.
    #[error("P_Key {0:#06x} not in the port's table")]
    NoPkey(PKey),
    /// The host has no CM agent or application with these IDs.
    #[error("no CM installed with these IDs")]
    NotInstalled,
    /// No such connection.
    #[error("unknown connection")]
    UnknownConn,
    /// The connection is not up.
    #[error("connection not established")]
    NotUp,
}

/// A UD service [`offer_ud`] made: what SIDR_REPs for its listener carry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UdOffer {
    /// The service's UD QP.
    pub qpn: Qpn,
    /// Its Q_Key.
    pub qkey: QKey,
}

/// Where a [`resolve`] stands.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SidrOutcome {
    /// The SIDR_REQ is out (resent while Max CM Retries allow); no answer yet.
    Pending {
        /// The CM asked (its QP1 address; a datagram to the service goes to the same port).
        to: MadAddr,
    },
    /// The SIDR_REP (status 0: its QPN and Q_Key are the service's, IBA 1 §12.6 Table 120).
    Answered {
        /// The CM that answered.
        to: MadAddr,
        /// Its reply.
        rep: Box<SidrRepRepr>,
    },
    /// No SIDR_REP after every retry.
    TimedOut,
}

/// The application. See the module docs.
pub struct CmApp {
    cm: AgentId,
    cfg: CmAppConfig,
    cq: CqId,
    conns: BTreeMap<ConnId, Connection>,
    by_qpn: BTreeMap<Qpn, ConnId>,
    /// Listeners made through [`listen`]: their requests are this application's.
    listens: BTreeSet<ListenId>,
    /// Connections whose events are this application's (those in `conns`, and requests it
    /// rejected, until their TimeWait ends).
    claimed: BTreeSet<ConnId>,
    log: Vec<(Instant, CmEvent)>,
    failures: Vec<(Instant, String)>,
    next_wr: u64,
    /// How late the consumer answers REQs ([`set_accept_delay`]).
    accept_delay: Option<Duration>,
    /// REQs the consumer answers later ([`set_accept_delay`]), by when.
    deferred: BTreeMap<(Instant, ConnId), Box<ReqRepr>>,
    /// UD services offered through SIDR, by listener.
    offers: BTreeMap<ListenId, UdOffer>,
    /// Our SIDR_REQs and what came of them.
    sidrs: BTreeMap<SidrId, SidrOutcome>,
}

/// The host's CM agent, the server of the CM class, added (with IDs and PSNs from `rng`) when
/// the host has none: every user on a host (IPoIB connected mode, the IP CM service) shares one,
/// each taking its own events ([`Cm::poll_event_where`]).
pub fn host_cm(host: &mut Host, rng: &Rng) -> AgentId {
    if let Some(id) = host
        .class_server(MgmtClass::ComMgt)
        .filter(|&id| host.agent::<Cm>(id).is_some())
    {
        return id;
    }
    let guid = host.hca().node_guid();
    let id = host.add_agent(Cm::new(CmConfig::new(guid), rng.fork(1)));
    host.serve_class(MgmtClass::ComMgt, id);
    id
}

/// Puts a [`Cm`] agent (server of the CM class) and a [`CmApp`] on `host`; the agent's IDs and
/// PSNs come from `rng`.
pub fn install(host: &mut Host, cfg: CmAppConfig, rng: Rng) -> CmHandle {
    let guid = host.hca().node_guid();
    install_with(host, CmConfig::new(guid), cfg, rng)
}

/// [`install`] with the agent's own settings (response timeout, Max CM Retries, MRA Service
/// Timeout); `cm.ca_guid` should be the host's node GUID.
pub fn install_with(host: &mut Host, cm: CmConfig, cfg: CmAppConfig, rng: Rng) -> CmHandle {
    let cm = host.add_agent(Cm::new(cm, rng));
    host.serve_class(MgmtClass::ComMgt, cm);
    let cq = host.hca_mut().create_cq();
    let app = host.add_app(CmApp {
        cm,
        cfg,
        cq,
        conns: BTreeMap::new(),
        by_qpn: BTreeMap::new(),
        listens: BTreeSet::new(),
        claimed: BTreeSet::new(),
        log: Vec::new(),
        failures: Vec::new(),
        next_wr: 0,
        accept_delay: None,
        deferred: BTreeMap::new(),
        offers: BTreeMap::new(),
        sidrs: BTreeMap::new(),
    });
    host.route_cq(cq, app);
    CmHandle { cm, app }
}

/// Active side: creates an RC or UC QP (as `params.transport` says), moves it to Init with its
/// receives posted, and sends the REQ with that QP (`params.qpn` is replaced; `params.psn` is
/// kept). Returns the connection.
pub fn connect(
    host: &mut Host,
    now: Instant,
    h: CmHandle,
    mut params: ConnectParams,
) -> Result<ConnId, CmHostError> {
    let (cfg, cq, mut next_wr) = {
        let app = host.app::<CmApp>(h.app).ok_or(CmHostError::NotInstalled)?;
        (app.cfg, app.cq, app.next_wr)
    };
    if host.agent::<Cm>(h.cm).is_none() {
        return Err(CmHostError::NotInstalled);
    }
    let qpn = new_qp(
        host.hca_mut(),
        &cfg,
        cq,
        params.transport,
        params.pkey,
        &mut next_wr,
    )?;
    params.qpn = qpn;
    let conn = host.agent_mut::<Cm>(h.cm).map(|cm| cm.connect(now, params));
    let conn = match conn {
        Some(Ok(c)) => c,
        None => {
            let _ = host.hca_mut().destroy_qp(qpn);
            return Err(CmHostError::NotInstalled);
        }
        Some(Err(e)) => {
            let _ = host.hca_mut().destroy_qp(qpn);
            return Err(e.into());
        }
    };
    let app = host
        .app_mut::<CmApp>(h.app)
        .ok_or(CmHostError::NotInstalled)?;
    app.next_wr = next_wr;
    app.adopt(conn, qpn, true);
    Ok(conn)
}

/// Listens for REQs whose service ID matches `service_id` under `mask` (see
/// [`Cm::listen`]); the application answers them as [`CmAppConfig::accept`] says. The CM agent
/// may serve other users on the host: each takes only the events of its own listeners and
/// connections ([`Cm::poll_event_where`]).
pub fn listen(
    host: &mut Host,
    h: CmHandle,
    service_id: u64,
    mask: u64,
) -> Result<ListenId, CmHostError> {
    let id = host
        .agent_mut::<Cm>(h.cm)
        .ok_or(CmHostError::NotInstalled)?
        .listen(service_id, mask)?;
    host.app_mut::<CmApp>(h.app)
        .ok_or(CmHostError::NotInstalled)?
        .listens
        .insert(id);
    Ok(id)
}

/// Makes the application a slow consumer: it answers each REQ (as [`CmAppConfig::accept`]
/// says) `delay` after it came (`None`: at once, the default). When that is longer than the
/// agent's MRA delay (half the time the peer gives us), the agent sends an MRA for the REQ
/// meanwhile (IBA 1 §12.6 Table 107) and the peer waits instead of resending. REQs already
/// waiting keep their time.
pub fn set_accept_delay(
    host: &mut Host,
    h: CmHandle,
    delay: Option<Duration>,
) -> Result<(), CmHostError> {
    host.app_mut::<CmApp>(h.app)
        .ok_or(CmHostError::NotInstalled)?
        .accept_delay = delay;
    Ok(())
}

/// Offers a UD service: SIDR_REQs whose service ID matches `service_id` under `mask` are answered
/// with status 0, `qpn` and `qkey` (IBA 1 §12.11, §12.6 Table 120). The QP is the caller's (a UD
/// QP in RTS with that Q_Key). A REQ for the service is rejected (reason 8, invalid service ID:
/// it offers no connections).
pub fn offer_ud(
    host: &mut Host,
    h: CmHandle,
    service_id: u64,
    mask: u64,
    qpn: Qpn,
    qkey: QKey,
) -> Result<ListenId, CmHostError> {
    let id = listen(host, h, service_id, mask)?;
    host.app_mut::<CmApp>(h.app)
        .ok_or(CmHostError::NotInstalled)?
        .offers
        .insert(id, UdOffer { qpn, qkey });
    Ok(id)
}

/// Asks the CM at `to` (a port's QP1) which UD QP serves `service_id` (a SIDR_REQ, IBA 1
/// §12.11; resent until answered or Max CM Retries are spent, each try waiting our response
/// time plus two lifetimes of `packet_life_time`). The outcome is in [`CmApp::sidr`].
pub fn resolve(
    host: &mut Host,
    now: Instant,
    h: CmHandle,
    to: MadAddr,
    service_id: u64,
    packet_life_time: u8,
) -> Result<SidrId, CmHostError> {
    if host.app::<CmApp>(h.app).is_none() {
        return Err(CmHostError::NotInstalled);
    }
    let id = host
        .agent_mut::<Cm>(h.cm)
        .ok_or(CmHostError::NotInstalled)?
        .sidr_request(now, to, service_id, packet_life_time, &[])?;
    host.app_mut::<CmApp>(h.app)
        .ok_or(CmHostError::NotInstalled)?
        .sidrs
        .insert(id, SidrOutcome::Pending { to });
    Ok(id)
}

/// Posts `data` as one SEND on an established connection.
pub fn send(host: &mut Host, h: CmHandle, conn: ConnId, data: Vec<u8>) -> Result<(), CmHostError> {
    let app = host
        .app_mut::<CmApp>(h.app)
        .ok_or(CmHostError::NotInstalled)?;
    let c = app.conns.get(&conn).ok_or(CmHostError::UnknownConn)?;
    if c.state != LinkState::Up {
        return Err(CmHostError::NotUp);
    }
    let qpn = c.qpn;
    app.next_wr += 1;
    let wr = SendWr::send(app.next_wr, data);
    host.hca_mut().post_send(qpn, wr)?;
    Ok(())
}

/// Releases a connection: the agent sends the DREQ; the QP goes to Error on `Disconnected`.
pub fn disconnect(
    host: &mut Host,
    now: Instant,
    h: CmHandle,
    conn: ConnId,
) -> Result<(), CmHostError> {
    let cm = host
        .agent_mut::<Cm>(h.cm)
        .ok_or(CmHostError::NotInstalled)?;
    cm.disconnect(now, conn, &[])?;
    Ok(())
}

/// Creates a QP of `transport` on the configured port, moves it to Init with the P_Key index of
/// `pkey` and posts its receives.
pub(crate) fn new_qp(
    hca: &mut Hca,
    cfg: &CmAppConfig,
    cq: CqId,
    transport: TransportServiceType,
    pkey: PKey,
    next_wr: &mut u64,
) -> Result<Qpn, CmHostError> {
    let qp_type = match transport {
        TransportServiceType::Uc => QpType::Uc,
        _ => QpType::Rc,
    };
    let pkey_index = hca
        .port(cfg.port)
        .and_then(|p| p.find_pkey_index(pkey))
        .ok_or(CmHostError::NoPkey(pkey))?;
    let qpn = hca.create_qp(QpInit {
        qp_type,
        port: cfg.port,
        send_cq: cq,
        recv_cq: cq,
        privileged: false,
        sq_sig_all: true,
    })?;
    let init = ModifyQp::Init {
        port: cfg.port,
        pkey_index,
        qkey: QKey(0),
    };
    let posted = hca.modify_qp(qpn, init).and_then(|()| {
        (0..cfg.recv_depth).try_for_each(|_| {
            *next_wr += 1;
            let wr = RecvWr {
                wr_id: *next_wr,
                capacity: cfg.recv_capacity,
            };
            hca.post_recv(qpn, wr)
        })
    });
    if let Err(e) = posted {
        let _ = hca.destroy_qp(qpn);
        return Err(e.into());
    }
    Ok(qpn)
}

/// The RTR/RTS attributes of a negotiated connection on `port` (Linux `ib_cm_init_qp_attr`):
/// the path's DLID, SL and GRH, our LID's path bits, the peer's QPN, both PSNs, the MTU, the
/// P_Key index, retry and RNR retry counts, the path's local ACK timeout and the read depths.
pub fn connected_attr(
    p: &QpProgram,
    port: &Port,
    min_rnr_timer: u8,
) -> Result<ConnectedAttr, CmHostError> {
    let pkey_index = port
        .find_pkey_index(p.pkey)
        .ok_or(CmHostError::NoPkey(p.pkey))?;
    let path = &p.path;
    Ok(ConnectedAttr {
        path: AddressHandle {
            dlid: path.remote_port_lid,
            sl: path.sl,
            src_path_bits: port.path_bits(path.local_port_lid).unwrap_or(0),
            grh: (!path.subnet_local).then_some(crate::hw::verbs::GlobalRoute {
                dgid: path.remote_port_gid,
                sgid_index: 0,
                flow_label: path.flow_label,
                hop_limit: path.hop_limit,
                tclass: path.traffic_class,
            }),
            port: port.num,
        },
        dest_qpn: p.remote_qpn,
        rq_psn: p.rq_psn,
        sq_psn: p.sq_psn,
        path_mtu: p.mtu,
        pkey_index,
        retry_count: p.retry_count,
        rnr_retry: p.rnr_retry_count,
        timeout: path.local_ack_timeout,
        min_rnr_timer,
        max_rd_atomic: p.max_rd_atomic,
        max_dest_rd_atomic: p.max_dest_rd_atomic,
    })
}

impl CmApp {
    /// Every CM event the application handled, with its time.
    pub fn log(&self) -> &[(Instant, CmEvent)] {
        &self.log
    }

    /// Verbs calls and CM commands that failed, with their time.
    pub fn failures(&self) -> &[(Instant, String)] {
        &self.failures
    }

    /// A connection.
    pub fn connection(&self, conn: ConnId) -> Option<&Connection> {
        self.conns.get(&conn)
    }

    /// Every connection, by communication ID.
    pub fn connections(&self) -> impl Iterator<Item = (ConnId, &Connection)> + '_ {
        self.conns.iter().map(|(k, v)| (*k, v))
    }

    /// What came of a [`resolve`].
    pub fn sidr(&self, id: SidrId) -> Option<&SidrOutcome> {
        self.sidrs.get(&id)
    }

    /// REQs waiting for the slow consumer ([`set_accept_delay`]).
    pub fn deferred(&self) -> usize {
        self.deferred.len()
    }

    fn adopt(&mut self, conn: ConnId, qpn: Qpn, active: bool) {
        self.claimed.insert(conn);
        self.by_qpn.insert(qpn, conn);
        self.conns.insert(
            conn,
            Connection {
                qpn,
                state: LinkState::Connecting,
                active,
                qp: None,
                received: Vec::new(),
                sent: 0,
                errors: Vec::new(),
            },
        );
    }

    fn fail(&mut self, now: Instant, what: String) {
        self.failures.push((now, what));
    }

    /// RTR then RTS with `p`.
    fn program(&mut self, hca: &mut Hca, p: &QpProgram) -> Result<(), CmHostError> {
        let port = hca
            .port(self.cfg.port)
            .ok_or(VerbsError::NoSuchPort(self.cfg.port))?;
        let attr = connected_attr(p, port, self.cfg.min_rnr_timer)?;
        hca.modify_qp(p.local_qpn, ModifyQp::Rtr(Some(attr)))?;
        hca.modify_qp(p.local_qpn, ModifyQp::Rts(Some(attr)))?;
        Ok(())
    }

    fn on_event(&mut self, now: Instant, e: CmEvent, ctx: &mut HostCtx<'_>) {
        self.log.push((now, e.clone()));
        match e {
            CmEvent::ConnectRequest { conn, listen, .. } if self.offers.contains_key(&listen) => {
                self.claimed.insert(conn);
                let Some(cm) = ctx.agents.get_mut::<Cm>(self.cm) else {
                    return;
                };
                if let Err(e) = cm.reject(now, conn, RejReason::InvalidServiceId, &[], &[]) {
                    self.fail(now, format!("reject {conn:?}: {e}"));
                }
            }
            CmEvent::ConnectRequest { conn, req, .. } => match self.accept_delay {
                // The slow consumer answers later (`poll`); the agent sends the MRA meanwhile.
                Some(d) => {
                    self.claimed.insert(conn);
                    self.deferred.insert((now + d, conn), Box::new(req));
                }
                None => self.on_request(now, conn, &req, ctx),
            },
            CmEvent::Established { conn, qp, .. } => {
                let Some(c) = self.conns.get(&conn) else {
                    return;
                };
                if c.active {
                    if let Err(err) = self.program(ctx.hca, &qp) {
                        self.fail(now, format!("RTR/RTS of {conn:?}: {err}"));
                        return self.set_error(now, conn, ctx);
                    }
                }
                if let Some(c) = self.conns.get_mut(&conn) {
                    c.qp = Some(qp);
                    c.state = LinkState::Up;
                }
            }
            CmEvent::Rejected { conn, .. }
            | CmEvent::TimedOut { conn, .. }
            | CmEvent::Disconnected { conn, .. } => {
                // A REQ the consumer had not answered yet is gone with it.
                self.deferred.retain(|(_, c), _| *c != conn);
                self.set_error(now, conn, ctx)
            }
            CmEvent::TimeWaitExit { conn, .. } => {
                self.claimed.remove(&conn);
                let Some(c) = self.conns.get_mut(&conn) else {
                    return;
                };
                c.state = LinkState::Closed;
                let qpn = c.qpn;
                self.by_qpn.remove(&qpn);
                if let Err(err) = ctx.hca.destroy_qp(qpn) {
                    self.fail(now, format!("destroy QP {qpn:#x}: {err}"));
                }
            }
            CmEvent::SidrRequest { id, listen, .. } => {
                // IBA 1 §12.6 Table 120: status 0 with the service's QPN and Q_Key; a listener
                // that offers connections only has no UD service to give (status 1).
                let (status, qpn, qkey) = match self.offers.get(&listen) {
                    Some(o) => (SidrStatus::Success, o.qpn, o.qkey),
                    None => (SidrStatus::Unsupported, 0, QKey(0)),
                };
                let Some(cm) = ctx.agents.get_mut::<Cm>(self.cm) else {
                    return;
                };
                if let Err(e) = cm.sidr_reply(id, status, qpn, qkey, &[]) {
                    self.fail(now, format!("SIDR_REP for {id:?}: {e}"));
                }
            }
            CmEvent::SidrReply { id, rep } => {
                if let Some(o) = self.sidrs.get_mut(&id) {
                    if let SidrOutcome::Pending { to } = *o {
                        *o = SidrOutcome::Answered {
                            to,
                            rep: Box::new(rep),
                        };
                    }
                }
            }
            CmEvent::SidrTimedOut { id } => {
                if let Some(o) = self.sidrs.get_mut(&id) {
                    *o = SidrOutcome::TimedOut;
                }
            }
        }
    }

    /// Answers the deferred REQs that are due, as [`CmAppConfig::accept`] says.
    fn answer_deferred(&mut self, now: Instant, ctx: &mut HostCtx<'_>) {
        while let Some(entry) = self.deferred.first_entry() {
            if entry.key().0 > now {
                return;
            }
            let ((_, conn), req) = entry.remove_entry();
            self.on_request(now, conn, &req, ctx);
        }
    }

    fn set_error(&mut self, now: Instant, conn: ConnId, ctx: &mut HostCtx<'_>) {
        let Some(c) = self.conns.get_mut(&conn) else {
            return;
        };
        c.state = LinkState::Down;
        let qpn = c.qpn;
        if let Err(err) = ctx.hca.modify_qp(qpn, ModifyQp::Error) {
            self.fail(now, format!("QP {qpn:#x} to Error: {err}"));
        }
    }

    /// A REQ for one of our listeners: QP to Init, accept, RTR and RTS before the REP leaves;
    /// a REQ we cannot take is rejected (reason 1 "no QP" when no QP could be made ready).
    fn on_request(
        &mut self,
        now: Instant,
        conn: ConnId,
        req: &ipoib_wire::cm::ReqRepr,
        ctx: &mut HostCtx<'_>,
    ) {
        let Some(cm) = ctx.agents.get_mut::<Cm>(self.cm) else {
            return;
        };
        self.claimed.insert(conn);
        if !self.cfg.accept {
            if let Err(e) = cm.reject(now, conn, RejReason::ConsumerDefined, &[], &[]) {
                self.fail(now, format!("reject {conn:?}: {e}"));
            }
            return;
        }
        let made = new_qp(
            ctx.hca,
            &self.cfg,
            self.cq,
            req.transport_service_type,
            req.partition_key,
            &mut self.next_wr,
        );
        let qpn = match made {
            Ok(q) => q,
            Err(e) => {
                self.fail(now, format!("QP for {conn:?}: {e}"));
                if let Err(e) = cm.reject(now, conn, RejReason::NoQp, &[], &[]) {
                    self.fail(now, format!("reject {conn:?}: {e}"));
                }
                return;
            }
        };
        let qp = match cm.accept(now, conn, qpn, &[]) {
            Ok(qp) => qp,
            Err(e) => {
                self.fail(now, format!("accept {conn:?}: {e}"));
                let _ = ctx.hca.destroy_qp(qpn);
                return;
            }
        };
        self.adopt(conn, qpn, false);
        if let Err(e) = self.program(ctx.hca, &qp) {
            // The REP is queued; the REJ that follows it tells the peer the QP never came up.
            self.fail(now, format!("RTR/RTS of {conn:?}: {e}"));
            if let Some(cm) = ctx.agents.get_mut::<Cm>(self.cm) {
                if let Err(e) = cm.reject(now, conn, RejReason::NoQp, &[], &[]) {
                    self.fail(now, format!("reject {conn:?}: {e}"));
                }
            }
            self.set_error(now, conn, ctx);
            return;
        }
        if let Some(c) = self.conns.get_mut(&conn) {
            c.qp = Some(qp);
        }
    }
}

impl App for CmApp {
    fn on_completion(&mut self, now: Instant, c: Completion, ctx: &mut HostCtx<'_>) {
        let Some(&conn) = self.by_qpn.get(&c.qpn) else {
            return;
        };
        let Some(link) = self.conns.get_mut(&conn) else {
            return;
        };
        if c.status != WcStatus::Success {
            // Flushed work of a QP in Error is the expected end of a connection.
            if c.status != WcStatus::WrFlushErr {
                link.errors.push(c.status);
            }
            return;
        }
        match c.opcode {
            WcOpcode::Recv | WcOpcode::RecvRdmaWithImm => {
                link.received.push(c.data.clone());
                let first_before_rtu = link.state == LinkState::Connecting && !link.active;
                let qpn = link.qpn;
                self.next_wr += 1;
                let wr = RecvWr {
                    wr_id: self.next_wr,
                    capacity: self.cfg.recv_capacity,
                };
                if let Err(e) = ctx.hca.post_recv(qpn, wr) {
                    self.fail(now, format!("repost on QP {qpn:#x}: {e}"));
                }
                if first_before_rtu {
                    // IBA 1 §12.9: the first packet on the passive QP establishes the
                    // connection when the RTU is late or lost.
                    if let Some(cm) = ctx.agents.get_mut::<Cm>(self.cm) {
                        let _ = cm.notify_established(conn);
                    }
                }
            }
            _ => link.sent += 1,
        }
    }

    fn poll(&mut self, now: Instant, ctx: &mut HostCtx<'_>) {
        self.answer_deferred(now, ctx);
        loop {
            let (listens, claimed, sidrs) = (&self.listens, &self.claimed, &self.sidrs);
            let mine = |e: &CmEvent| match (e.listener(), e.conn(), e.sidr()) {
                (Some(l), _, _) => listens.contains(&l),
                (None, Some(c), _) => claimed.contains(&c),
                (None, None, Some(s)) => sidrs.contains_key(&s),
                (None, None, None) => false,
            };
            let Some(e) = ctx
                .agents
                .get_mut::<Cm>(self.cm)
                .and_then(|cm| cm.poll_event_where(mine))
            else {
                return;
            };
            self.on_event(now, e, ctx);
        }
    }

    fn poll_timeout(&self) -> Option<Instant> {
        self.deferred.keys().next().map(|(t, _)| *t)
    }

    fn as_any(&self) -> &dyn Any {
        self
    }

    fn as_any_mut(&mut self) -> &mut dyn Any {
        self
    }
}
