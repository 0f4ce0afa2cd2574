//! The RDMA IP CM service on a host (IBTA Annex A11): [`IpCmApp`] runs the sans-IO agent
//! [`ipoib_proto::ipcm::IpCm`] next to the host's IPoIB interface, carries out its commands on the
//! host's CM agent, HCA and interface as the `ipoib_proto::ipcm` module docs ask, owns the RC QPs
//! of its connections, and gives a consumer an rdma_cm-shaped API: listen, connect, accept,
//! reject, disconnect; SEND, receives, RDMA WRITE and READ against registered memory; the events
//! and completions it saw.
//!
//! - Resolve and PathQuery: [`Interface::resolve`] and [`Interface::path_to`] start ARP/ND and the
//!   PathRecord query a packet would (draft-ietf-ipoib-ip-over-infiniband-06 §9.2, §9.1.2 a) and
//!   answer `None` until done; the application keeps each question pending and asks again on
//!   every poll until the answer comes or the service's own deadline has passed (then the
//!   service reports [`IpCmEvent::AddressError`] or [`IpCmEvent::RouteError`], Annex A11
//!   §A11.3). A question asked for the first time may make the interface send (an ARP request),
//!   so the host gets another round ([`HostCtx::poll_again`]).
//! - The CM agent is the host's server of the CM class, shared with IPoIB connected mode and
//!   others ([`install`] adds one when the host has none); the application takes only the events
//!   the service owns ([`IpCm::owns`]) and those of its own QPs ([`Cm::poll_event_where`]).
//! - QPs (the model is IPoIB connected mode's host side, `node/ipoib/connected.rs`): `CmConnect`
//!   makes an RC QP on the application's CQ in Init with [`IpCmAppConfig::recv_depth`] receives
//!   posted and sends the REQ; `Established` programs RTR and RTS on the active side
//!   ([`crate::node::cm::connected_attr`]); `CmAccept` makes the QP, accepts and programs RTR and
//!   RTS before the REP leaves, and a first message received before the RTU establishes the
//!   connection (IBA 1 §12.9); `Rejected`, `TimedOut` and `Disconnected` move the QP to Error;
//!   `TimeWaitExit` destroys it (IBA 1 §12.9.8: never before). A QP the CM never took is destroyed
//!   at once, and an accept the host cannot carry out is rejected with reason 1 "no QP".
//! - The consumer ([`IpCmApp::listen`], [`IpCmApp::connect`], ...; the verbs through [`send`],
//!   [`post_recv`], [`rdma_write`], [`rdma_read`] on the host) reads what happened from
//!   [`IpCmApp::events`] and [`IpCmApp::completions`], bounded logs it may drain with
//!   [`IpCmApp::take_events`] and [`IpCmApp::take_completions`]. Requests are accepted at once
//!   when [`AcceptPolicy::Auto`] says so, else the consumer answers each
//!   [`IpCmEvent::ConnectRequest`].
//! - iWarp emulation (the `ipoib_proto::ipcm` module docs, "iWarp emulation"): the QP of an
//!   iWarp connection gets only its stream's receive buffers, posted before the REQ or REP
//!   leaves, and the application pumps the stream after Established; the consumer uses
//!   [`IpCmApp::iwarp_listen`], [`IpCmApp::iwarp_connect`], [`IpCmApp::stream_send`] and
//!   [`IpCmApp::stream_recv`] (`ipcm/iwarp.rs`).
//!
//! Invariants: every QP made is destroyed by the TimeWait exit of its CM connection, or at once
//! when the CM never took it ([`IpCmCounters::qps_created`] - [`IpCmCounters::qps_destroyed`] is
//! the QPs alive); never panics on what arrives; logs are bounded; maps are `BTreeMap`s.

use crate::hw::hca::{CqId, Hca, ModifyQp, VerbsError};
use crate::hw::verbs::{
    Completion, LocalBuf, LocalSge, MrHandle, Qpn, RecvWr, SendOp, SendWr, WcOpcode, WcStatus,
};
use crate::node::cm::{connected_attr, new_qp, CmAppConfig};
use crate::node::host::{AgentId, App, AppId, Host, HostCtx};
use crate::node::ipoib::{IpoibApp, IpoibHandle};
use crate::Instant;
use ipoib_proto::cm::{Cm, CmEvent, ConnId, QpProgram};
use ipoib_proto::ipcm::{
    IpCm, IpCmCommand, IpCmConfig, IpCmError, IpCmEvent, IpConnId, IpListenId,
};
use ipoib_proto::ipoib::{AddrState, Interface};
use ipoib_proto::rng::Rng;
use ipoib_wire::cm::RejReason;
use ipoib_wire::Gid;
use std::any::Any;
use std::collections::{BTreeMap, VecDeque};
use std::net::{IpAddr, SocketAddr};

mod iwarp;

pub use iwarp::{IwarpFailure, SEND_WINDOW};

/// Events and completions kept unless [`IpCmAppConfig::log_keep`] says otherwise.
pub const LOG_KEEP: usize = 4096;
/// Work request IDs from this bit up are the application's own (the receives it posts and
/// reposts); a consumer's should stay below.
pub const OWN_WR_ID: u64 = 1 << 63;

/// How the service answers connection requests.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AcceptPolicy {
    /// Accept every request at once with this REP private data (up to 196 bytes).
    Auto(Vec<u8>),
    /// The consumer answers each [`IpCmEvent::ConnectRequest`] with [`IpCmApp::accept`] or
    /// [`IpCmApp::reject`].
    Consumer,
}

/// The application's settings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IpCmAppConfig {
    /// The service's settings; its `local_addrs` are replaced by the interface's addresses
    /// (IPv4, and IPv6 once past DAD), and kept in step with them.
    pub service: IpCmConfig,
    /// How requests are answered.
    pub accept: AcceptPolicy,
    /// Receives posted on each new QP.
    pub recv_depth: u32,
    /// Bytes each of those receives holds.
    pub recv_capacity: u32,
    /// Post a new receive for each one consumed.
    pub repost: bool,
    /// The RNR NAK timer code the QPs advertise (IBA 1 Table 45).
    pub min_rnr_timer: u8,
    /// Events and completions kept.
    pub log_keep: usize,
}

impl Default for IpCmAppConfig {
    /// The service's defaults ([`IpCmConfig::new`]), auto-accept with no private data, 16
    /// receives of 64 KiB reposted, RNR timer code 0, [`LOG_KEEP`].
    fn default() -> IpCmAppConfig {
        IpCmAppConfig {
            service: IpCmConfig::new(Vec::new()),
            accept: AcceptPolicy::Auto(Vec::new()),
            recv_depth: 16,
            recv_capacity: 1 << 16,
            repost: true,
            min_rnr_timer: 0,
            log_keep: LOG_KEEP,
        }
    }
}

/// Where an installed service lives on its host.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IpCmHandle {
    /// The [`IpCmApp`].
    pub app: AppId,
    /// The host's [`Cm`] agent it uses.
    pub cm: AgentId,
}

/// Why a call of this module failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum IpCmAppError {
    /// No [`IpCmApp`] (or IPoIB interface) with this handle on the host.
    #[error("not installed")]
    NotInstalled,
    /// The connection has no QP (unknown, not started, or over).
    #[error("the connection has no QP")]
    NoQp,
    /// The connection is not established.
    #[error("connection not established")]
    NotUp,
    /// The service refused the call.
    #[error("IP CM: {0}")]
    Service(#[from] IpCmError),
    /// The HCA refused the work request.
    #[error("verbs: {0}")]
    Verbs(#[from] VerbsError),
    /// The connection has no iWarp stream (not iWarp, or its stream is gone).
    #[error("no iWarp stream")]
    NoStream,
    /// The iWarp stream did not take the bytes.
    #[error("iWarp stream: {0}")]
    Send(ipoib_proto::iwarp::SendError),
    /// The iWarp stream's connection was released.
    #[error("iWarp stream failed: {0}")]
    Iwarp(IwarpFailure),
}

/// What the application counts.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct IpCmCounters {
    /// QPs made.
    pub qps_created: u64,
    /// QPs destroyed (after their TimeWait, or at once when the CM never took them).
    pub qps_destroyed: u64,
    /// QPs that could not be made or programmed.
    pub qp_errors: u64,
    /// CM commands the agent refused.
    pub cm_errors: u64,
    /// Automatic accepts the service refused.
    pub accept_errors: u64,
    /// Receives that could not be reposted.
    pub recv_errors: u64,
    /// Flushed work requests (a QP in Error), not logged.
    pub flushed: u64,
    /// Events that fell out of the bounded log.
    pub events_dropped: u64,
    /// Completions that fell out of the bounded log.
    pub completions_dropped: u64,
    /// iWarp connections released because their stream failed ([`IwarpFailure`]).
    pub iwarp_failures: u64,
}

/// One QP of a connection.
#[derive(Debug, Clone, Copy)]
struct QpRec {
    qpn: Qpn,
    /// The service's connection (`None` once it forgot it).
    ip: Option<IpConnId>,
    active: bool,
    up: bool,
}

/// The service and its QPs. See the module docs.
pub struct IpCmApp {
    ipcm: IpCm,
    cm: AgentId,
    iface: AgentId,
    cq: CqId,
    qp_cfg: CmAppConfig,
    cfg: IpCmAppConfig,
    /// The addresses last given to the service.
    addrs: Vec<IpAddr>,
    /// Resolve questions asked and not answered, with when to stop asking.
    resolving: BTreeMap<IpAddr, Instant>,
    /// PathQuery questions likewise.
    routing: BTreeMap<Gid, Instant>,
    qps: BTreeMap<ConnId, QpRec>,
    by_qpn: BTreeMap<Qpn, ConnId>,
    /// Requests handed to the consumer: CM connection to the service's.
    requests: BTreeMap<ConnId, IpConnId>,
    events: VecDeque<(Instant, IpCmEvent)>,
    completions: VecDeque<(Instant, Option<IpConnId>, Completion)>,
    next_wr: u64,
    counters: IpCmCounters,
    /// The iWarp connections' QPs and streams.
    iw: iwarp::Streams,
}

impl std::fmt::Debug for IpCmApp {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("IpCmApp")
            .field("connections", &self.ipcm.connections())
            .field("qps", &self.qps.len())
            .finish()
    }
}

/// Installs the service on `host` beside the IPoIB interface `iface` (its port, its neighbour
/// and path caches): the host's CM agent (one is added when the host has none), a CQ routed to
/// the new application. `rng` seeds the service's ports and PSNs.
pub fn install(
    host: &mut Host,
    iface: IpoibHandle,
    cfg: IpCmAppConfig,
    rng: Rng,
) -> Result<IpCmHandle, IpCmAppError> {
    let port = host
        .app::<IpoibApp>(iface.app)
        .ok_or(IpCmAppError::NotInstalled)?
        .port();
    let addrs = host
        .agent::<Interface>(iface.agent)
        .map(local_addrs)
        .ok_or(IpCmAppError::NotInstalled)?;
    let cm = crate::node::cm::host_cm(host, &rng);
    let cq = host.hca_mut().create_cq();
    let mut service = cfg.service.clone();
    service.local_addrs = addrs.clone();
    let app = IpCmApp {
        ipcm: IpCm::new(service, rng.fork(2)),
        cm,
        iface: iface.agent,
        cq,
        qp_cfg: CmAppConfig {
            port,
            recv_depth: cfg.recv_depth,
            recv_capacity: cfg.recv_capacity,
            accept: true,
            min_rnr_timer: cfg.min_rnr_timer,
        },
        cfg,
        addrs,
        resolving: BTreeMap::new(),
        routing: BTreeMap::new(),
        qps: BTreeMap::new(),
        by_qpn: BTreeMap::new(),
        requests: BTreeMap::new(),
        events: VecDeque::new(),
        completions: VecDeque::new(),
        next_wr: OWN_WR_ID,
        counters: IpCmCounters::default(),
        iw: iwarp::Streams::default(),
    };
    let id = host.add_app(app);
    host.route_cq(cq, id);
    Ok(IpCmHandle { app: id, cm })
}

/// The interface's addresses the service may use: its IPv4 address, its IPv6 addresses past DAD.
fn local_addrs(iface: &Interface) -> Vec<IpAddr> {
    let v4 = iface.config().ipv4.map(|c| IpAddr::V4(c.addr));
    let v6 = iface
        .ipv6_addresses()
        .into_iter()
        .filter(|a| a.state == AddrState::Preferred)
        .map(|a| IpAddr::V6(a.addr));
    v4.into_iter().chain(v6).collect()
}

/// Pushes onto a bounded log, counting what falls out.
fn push_bounded<T>(log: &mut VecDeque<T>, keep: usize, item: T, dropped: &mut u64) {
    if keep == 0 {
        *dropped += 1;
        return;
    }
    while log.len() >= keep {
        log.pop_front();
        *dropped += 1;
    }
    log.push_back(item);
}

/// RTR then RTS with `p` (Linux `ib_cm_init_qp_attr` order).
fn program(hca: &mut Hca, cfg: &CmAppConfig, p: &QpProgram) -> Result<(), VerbsError> {
    let port = hca.port(cfg.port).ok_or(VerbsError::NoSuchPort(cfg.port))?;
    let attr = connected_attr(p, port, cfg.min_rnr_timer)
        .map_err(|_| VerbsError::InvalidArgument("P_Key not in the port's table"))?;
    hca.modify_qp(p.local_qpn, ModifyQp::Rtr(Some(attr)))?;
    hca.modify_qp(p.local_qpn, ModifyQp::Rts(Some(attr)))
}

impl IpCmApp {
    /// The service (its connections, listeners, counters).
    pub fn service(&self) -> &IpCm {
        &self.ipcm
    }

    /// Listens on `port` (0: an ephemeral one) of IP `protocol` at `addr` (ours, or `0.0.0.0` /
    /// `::` for any), as `rdma_bind_addr` and `rdma_listen` do.
    pub fn listen(
        &mut self,
        protocol: u8,
        addr: IpAddr,
        port: u16,
    ) -> Result<IpListenId, IpCmAppError> {
        Ok(self.ipcm.listen(protocol, addr, port)?)
    }

    /// Stops a listener.
    pub fn unlisten(&mut self, listen: IpListenId) -> Result<(), IpCmAppError> {
        Ok(self.ipcm.unlisten(listen)?)
    }

    /// The address and port a listener is bound to.
    pub fn listen_addr(&self, listen: IpListenId) -> Option<SocketAddr> {
        self.ipcm.listen_addr(listen)
    }

    /// Connects to `dst` for IP `protocol` from `src_port` (`None`: an ephemeral one) with up to
    /// 56 bytes of private data (`rdma_resolve_addr`, `rdma_resolve_route` and `rdma_connect` in
    /// one call). [`IpCmEvent::Established`] or the reason it failed follows.
    pub fn connect(
        &mut self,
        now: Instant,
        protocol: u8,
        dst: SocketAddr,
        src_port: Option<u16>,
        private_data: &[u8],
    ) -> Result<IpConnId, IpCmAppError> {
        Ok(self
            .ipcm
            .connect(now, protocol, dst, src_port, private_data)?)
    }

    /// Accepts a request with up to 196 bytes of REP private data.
    pub fn accept(&mut self, conn: IpConnId, private_data: &[u8]) -> Result<(), IpCmAppError> {
        Ok(self.ipcm.accept(conn, private_data)?)
    }

    /// Rejects a request (REJ 28, ARI layer 0x01) with up to 148 bytes of private data.
    pub fn reject(&mut self, conn: IpConnId, private_data: &[u8]) -> Result<(), IpCmAppError> {
        Ok(self.ipcm.reject(conn, private_data)?)
    }

    /// Releases a connection (DREQ when up; see [`IpCm::disconnect`]).
    pub fn disconnect(&mut self, conn: IpConnId) -> Result<(), IpCmAppError> {
        Ok(self.ipcm.disconnect(conn)?)
    }

    /// How requests are answered from now on.
    pub fn set_accept(&mut self, policy: AcceptPolicy) {
        self.cfg.accept = policy;
    }

    /// The events seen, oldest first (the last [`IpCmAppConfig::log_keep`]).
    pub fn events(&self) -> impl Iterator<Item = &(Instant, IpCmEvent)> + '_ {
        self.events.iter()
    }

    /// Takes the events seen.
    pub fn take_events(&mut self) -> Vec<(Instant, IpCmEvent)> {
        self.events.drain(..).collect()
    }

    /// The completions seen on the connections' QPs (flushes left out), oldest first, with the
    /// connection each belongs to.
    pub fn completions(
        &self,
    ) -> impl Iterator<Item = &(Instant, Option<IpConnId>, Completion)> + '_ {
        self.completions.iter()
    }

    /// Takes the completions seen.
    pub fn take_completions(&mut self) -> Vec<(Instant, Option<IpConnId>, Completion)> {
        self.completions.drain(..).collect()
    }

    /// The QP of a connection while it has one.
    pub fn qpn(&self, conn: IpConnId) -> Option<Qpn> {
        let cm = self.ipcm.cm_conn(conn)?;
        self.qps.get(&cm).map(|q| q.qpn)
    }

    /// True while a connection is established (its QP in RTS).
    pub fn is_up(&self, conn: IpConnId) -> bool {
        self.ipcm
            .cm_conn(conn)
            .and_then(|cm| self.qps.get(&cm))
            .is_some_and(|q| q.up)
    }

    /// QPs alive.
    pub fn qp_count(&self) -> usize {
        self.qps.len()
    }

    /// What the application counted.
    pub fn counters(&self) -> IpCmCounters {
        self.counters
    }

    /// The QP of an established connection.
    fn up_qpn(&self, conn: IpConnId) -> Result<Qpn, IpCmAppError> {
        let cm = self.ipcm.cm_conn(conn).ok_or(IpCmAppError::NoQp)?;
        let q = self.qps.get(&cm).ok_or(IpCmAppError::NoQp)?;
        if !q.up {
            return Err(IpCmAppError::NotUp);
        }
        Ok(q.qpn)
    }

    fn log_event(&mut self, now: Instant, e: IpCmEvent) {
        let keep = self.cfg.log_keep;
        push_bounded(
            &mut self.events,
            keep,
            (now, e),
            &mut self.counters.events_dropped,
        );
    }

    /// Keeps the service's addresses in step with the interface's.
    fn refresh_addrs(&mut self, iface: &Interface) {
        let now = local_addrs(iface);
        if now != self.addrs {
            self.ipcm.set_local_addrs(now.clone());
            self.addrs = now;
        }
    }

    /// Asks the interface again about every question still pending; answers go to the service.
    fn ask_pending(&mut self, now: Instant, iface: &mut Interface) {
        self.resolving.retain(|_, until| *until > now);
        self.routing.retain(|_, until| *until > now);
        let ips: Vec<IpAddr> = self.resolving.keys().copied().collect();
        for ip in ips {
            if let Some(hw) = iface.resolve(now, ip) {
                self.resolving.remove(&ip);
                self.ipcm.handle_resolved(now, ip, Some(hw.gid));
            }
        }
        let gids: Vec<Gid> = self.routing.keys().copied().collect();
        for gid in gids {
            if let Some(pr) = iface.path_to(now, gid) {
                self.routing.remove(&gid);
                self.ipcm.handle_path(now, gid, Some(pr));
            }
        }
    }

    fn execute(&mut self, now: Instant, c: IpCmCommand, ctx: &mut HostCtx<'_>) {
        match c {
            IpCmCommand::Resolve { ip } => {
                let until = now + self.ipcm.config().resolve_timeout;
                self.resolving.insert(ip, until);
                if let Some(iface) = ctx.agents.get_mut::<Interface>(self.iface) {
                    match iface.resolve(now, ip) {
                        Some(hw) => {
                            self.resolving.remove(&ip);
                            self.ipcm.handle_resolved(now, ip, Some(hw.gid));
                        }
                        // The interface may have queued an ARP request or a solicitation.
                        None => ctx.poll_again(),
                    }
                }
            }
            IpCmCommand::PathQuery { dgid } => {
                let until = now + self.ipcm.config().route_timeout;
                self.routing.insert(dgid, until);
                if let Some(iface) = ctx.agents.get_mut::<Interface>(self.iface) {
                    match iface.path_to(now, dgid) {
                        Some(pr) => {
                            self.routing.remove(&dgid);
                            self.ipcm.handle_path(now, dgid, Some(pr));
                        }
                        None => ctx.poll_again(),
                    }
                }
            }
            IpCmCommand::CmListen { service_id, mask } => {
                let l = ctx
                    .agents
                    .get_mut::<Cm>(self.cm)
                    .and_then(|cm| cm.listen(service_id, mask).ok());
                self.ipcm.cm_listening(service_id, l);
            }
            IpCmCommand::CmUnlisten { listen } => {
                let r = ctx
                    .agents
                    .get_mut::<Cm>(self.cm)
                    .map(|cm| cm.unlisten(listen));
                if !matches!(r, Some(Ok(()))) {
                    self.counters.cm_errors += 1;
                }
            }
            IpCmCommand::CmConnect { conn, mut params } => {
                let started = self.start(now, conn, &mut params, ctx);
                self.ipcm.cm_connect_started(now, conn, started);
            }
            IpCmCommand::CmAccept { conn, private_data } => {
                if !self.take_request(now, conn, &private_data, ctx) {
                    if let Some(cm) = ctx.agents.get_mut::<Cm>(self.cm) {
                        if cm
                            .reject(now, conn, RejReason::NoQp, &[], &private_data)
                            .is_err()
                        {
                            self.counters.cm_errors += 1;
                        }
                    }
                    self.ipcm.cm_accept_failed(now, conn);
                }
            }
            IpCmCommand::CmReject {
                conn,
                reason,
                ari,
                private_data,
            } => {
                self.requests.remove(&conn);
                let r = ctx
                    .agents
                    .get_mut::<Cm>(self.cm)
                    .map(|cm| cm.reject(now, conn, reason, &ari, &private_data));
                if !matches!(r, Some(Ok(()))) {
                    self.counters.cm_errors += 1;
                }
            }
            IpCmCommand::CmDisconnect { conn } => {
                let r = ctx
                    .agents
                    .get_mut::<Cm>(self.cm)
                    .map(|cm| cm.disconnect(now, conn, &[]));
                if !matches!(r, Some(Ok(()))) {
                    self.counters.cm_errors += 1;
                }
            }
        }
    }

    /// A QP in Init with its receives posted, counted.
    fn make_qp(
        &mut self,
        hca: &mut Hca,
        transport: ipoib_wire::cm::TransportServiceType,
        pkey: ipoib_wire::PKey,
    ) -> Option<Qpn> {
        match new_qp(
            hca,
            &self.qp_cfg,
            self.cq,
            transport,
            pkey,
            &mut self.next_wr,
        ) {
            Ok(q) => {
                self.counters.qps_created += 1;
                Some(q)
            }
            Err(_) => {
                self.counters.qp_errors += 1;
                None
            }
        }
    }

    fn destroy_qp(&mut self, hca: &mut Hca, qpn: Qpn) {
        self.iw.qp_gone(qpn);
        if hca.destroy_qp(qpn).is_ok() {
            self.counters.qps_destroyed += 1;
        } else {
            self.counters.qp_errors += 1;
        }
    }

    fn adopt(&mut self, cm: ConnId, qpn: Qpn, ip: Option<IpConnId>, active: bool) {
        self.by_qpn.insert(qpn, cm);
        self.qps.insert(
            cm,
            QpRec {
                qpn,
                ip,
                active,
                up: false,
            },
        );
    }

    /// `CmConnect`: the QP, then the REQ. The CM connection, or `None` when either failed.
    fn start(
        &mut self,
        now: Instant,
        conn: IpConnId,
        params: &mut ipoib_proto::cm::ConnectParams,
        ctx: &mut HostCtx<'_>,
    ) -> Option<ConnId> {
        let qpn = match self.iwarp_conn(Some(conn), None) {
            Some(c) => self.make_iwarp_qp(ctx.hca, c, params.transport, params.pkey)?,
            None => self.make_qp(ctx.hca, params.transport, params.pkey)?,
        };
        params.qpn = qpn;
        let r = ctx
            .agents
            .get_mut::<Cm>(self.cm)
            .map(|cm| cm.connect(now, params.clone()));
        match r {
            Some(Ok(cm)) => {
                self.adopt(cm, qpn, Some(conn), true);
                Some(cm)
            }
            _ => {
                self.counters.cm_errors += 1;
                self.destroy_qp(ctx.hca, qpn);
                None
            }
        }
    }

    /// `CmAccept`: the QP, the REP, RTR and RTS. False when the request could not be taken (the
    /// caller rejects it).
    fn take_request(
        &mut self,
        now: Instant,
        conn: ConnId,
        private_data: &[u8],
        ctx: &mut HostCtx<'_>,
    ) -> bool {
        let ip = self.requests.remove(&conn);
        let Some(info) = ctx.agents.get::<Cm>(self.cm).and_then(|cm| cm.info(conn)) else {
            self.counters.cm_errors += 1;
            return false;
        };
        let qpn = match self.iwarp_conn(None, Some(conn)) {
            Some(c) => self.make_iwarp_qp(ctx.hca, c, info.qp.transport, info.qp.pkey),
            None => self.make_qp(ctx.hca, info.qp.transport, info.qp.pkey),
        };
        let Some(qpn) = qpn else {
            return false;
        };
        let accepted = ctx
            .agents
            .get_mut::<Cm>(self.cm)
            .map(|cm| cm.accept(now, conn, qpn, private_data));
        let qp = match accepted {
            Some(Ok(qp)) => qp,
            _ => {
                self.counters.cm_errors += 1;
                self.destroy_qp(ctx.hca, qpn);
                return false;
            }
        };
        // The CM has the QP now: it goes at the connection's TimeWait exit.
        self.adopt(conn, qpn, ip, false);
        if program(ctx.hca, &self.qp_cfg, &qp).is_err() {
            // The REP is queued; the REJ that follows tells the peer the QP never came up.
            self.counters.qp_errors += 1;
            let _ = ctx.hca.modify_qp(qpn, ModifyQp::Error);
            return false;
        }
        true
    }

    /// The QP work for a CM event of ours (before the service hears of it).
    fn on_cm_event(&mut self, now: Instant, e: &CmEvent, ctx: &mut HostCtx<'_>) {
        let _ = now;
        match e {
            CmEvent::Established { conn, qp, .. } => {
                let Some(rec) = self.qps.get_mut(conn) else {
                    return;
                };
                rec.up = true;
                let active = rec.active;
                if active && program(ctx.hca, &self.qp_cfg, qp).is_err() {
                    self.counters.qp_errors += 1;
                    if let Some(rec) = self.qps.get_mut(conn) {
                        rec.up = false;
                    }
                    let _ = ctx.hca.modify_qp(qp.local_qpn, ModifyQp::Error);
                    if let Some(cm) = ctx.agents.get_mut::<Cm>(self.cm) {
                        let _ = cm.disconnect(now, *conn, &[]);
                    }
                }
            }
            CmEvent::Rejected { conn, .. }
            | CmEvent::TimedOut { conn, .. }
            | CmEvent::Disconnected { conn, .. } => {
                self.requests.remove(conn);
                if let Some(rec) = self.qps.get_mut(conn) {
                    rec.up = false;
                    let _ = ctx.hca.modify_qp(rec.qpn, ModifyQp::Error);
                }
            }
            CmEvent::TimeWaitExit { conn, .. } => {
                self.requests.remove(conn);
                if let Some(rec) = self.qps.remove(conn) {
                    self.by_qpn.remove(&rec.qpn);
                    self.destroy_qp(ctx.hca, rec.qpn);
                }
            }
            CmEvent::ConnectRequest { .. }
            | CmEvent::SidrRequest { .. }
            | CmEvent::SidrReply { .. }
            | CmEvent::SidrTimedOut { .. } => {}
        }
    }

    /// An event of the service for the consumer: logged, and a request answered at once under
    /// [`AcceptPolicy::Auto`].
    fn on_service_event(&mut self, now: Instant, e: IpCmEvent) {
        match &e {
            IpCmEvent::ConnectRequest { conn, .. } => {
                if let Some(cm) = self.ipcm.cm_conn(*conn) {
                    self.requests.insert(cm, *conn);
                }
                if let AcceptPolicy::Auto(pd) = &self.cfg.accept {
                    if self.ipcm.accept(*conn, pd).is_err() {
                        self.counters.accept_errors += 1;
                    }
                }
            }
            IpCmEvent::Established { conn, .. } => {
                // A passive connection learns its QP's service connection here at the latest.
                if let Some(rec) = self
                    .ipcm
                    .cm_conn(*conn)
                    .and_then(|cm| self.qps.get_mut(&cm))
                {
                    rec.ip = Some(*conn);
                }
                self.iwarp_established(*conn);
            }
            _ => {}
        }
        self.log_event(now, e);
    }

    /// One round of commands, CM events and service events; true if anything moved.
    fn round(&mut self, now: Instant, ctx: &mut HostCtx<'_>) -> bool {
        let mut moved = false;
        while let Some(c) = self.ipcm.poll_command() {
            moved = true;
            self.execute(now, c, ctx);
        }
        loop {
            let (ipcm, qps) = (&self.ipcm, &self.qps);
            let mine = |e: &CmEvent| ipcm.owns(e) || e.conn().is_some_and(|c| qps.contains_key(&c));
            let Some(e) = ctx
                .agents
                .get_mut::<Cm>(self.cm)
                .and_then(|cm| cm.poll_event_where(mine))
            else {
                break;
            };
            moved = true;
            let owned = self.ipcm.owns(&e);
            self.on_cm_event(now, &e, ctx);
            if owned {
                self.ipcm.handle_cm_event(now, &e);
            }
        }
        while let Some(e) = self.ipcm.poll_event() {
            moved = true;
            self.on_service_event(now, e);
        }
        moved
    }
}

impl App for IpCmApp {
    fn on_completion(&mut self, now: Instant, c: &Completion, ctx: &mut HostCtx<'_>) {
        let Some(&cm) = self.by_qpn.get(&c.qpn) else {
            return;
        };
        let Some(rec) = self.qps.get(&cm).copied() else {
            return;
        };
        if c.status == WcStatus::WrFlushErr {
            self.counters.flushed += 1;
            return;
        }
        if self.iw.owns(c.qpn) {
            self.iwarp_completion(now, cm, c, ctx);
            return;
        }
        let recv = matches!(c.opcode, WcOpcode::Recv | WcOpcode::RecvRdmaWithImm);
        if recv && c.status == WcStatus::Success {
            if self.cfg.repost {
                self.next_wr += 1;
                let wr = RecvWr {
                    wr_id: self.next_wr,
                    capacity: self.cfg.recv_capacity,
                };
                if ctx.hca.post_recv(c.qpn, wr).is_err() {
                    self.counters.recv_errors += 1;
                }
            }
            if !rec.active && !rec.up {
                // IBA 1 §12.9: the first message on the passive QP establishes the connection
                // when the RTU is late or lost.
                if let Some(agent) = ctx.agents.get_mut::<Cm>(self.cm) {
                    let _ = agent.notify_established(cm);
                }
            }
        }
        let ip = rec.ip.or_else(|| self.requests.get(&cm).copied());
        let keep = self.cfg.log_keep;
        push_bounded(
            &mut self.completions,
            keep,
            (now, ip, c.clone()),
            &mut self.counters.completions_dropped,
        );
    }

    fn poll(&mut self, now: Instant, ctx: &mut HostCtx<'_>) {
        if let Some(iface) = ctx.agents.get_mut::<Interface>(self.iface) {
            self.refresh_addrs(iface);
            if !self.resolving.is_empty() || !self.routing.is_empty() {
                self.ask_pending(now, iface);
            }
        }
        if self.ipcm.poll_timeout().is_some_and(|t| t <= now) {
            self.ipcm.handle_timeout(now);
        }
        // Bounded: every round either moves something or stops.
        for _ in 0..1024 {
            if !self.round(now, ctx) {
                break;
            }
        }
        self.iwarp_pump(now, ctx);
    }

    fn poll_timeout(&self) -> Option<Instant> {
        let pending = self.resolving.values().chain(self.routing.values()).min();
        self.ipcm
            .poll_timeout()
            .into_iter()
            .chain(pending.copied())
            .min()
    }

    fn as_any(&self) -> &dyn Any {
        self
    }

    fn as_any_mut(&mut self) -> &mut dyn Any {
        self
    }
}

/// The application of `h` on `host`, mutably.
fn app_mut(host: &mut Host, h: IpCmHandle) -> Result<&mut IpCmApp, IpCmAppError> {
    host.app_mut::<IpCmApp>(h.app)
        .ok_or(IpCmAppError::NotInstalled)
}

/// Posts `op` with `data` on an established connection, signaled.
pub fn post_send(
    host: &mut Host,
    h: IpCmHandle,
    conn: IpConnId,
    wr_id: u64,
    op: SendOp,
    data: Vec<u8>,
) -> Result<(), IpCmAppError> {
    let qpn = app_mut(host, h)?.up_qpn(conn)?;
    let wr = SendWr {
        wr_id,
        op,
        data,
        local: None,
        ud: None,
        signaled: true,
        solicited: false,
    };
    host.hca_mut().post_send(qpn, wr)?;
    Ok(())
}

/// Posts `data` as one SEND (`ibv_post_send` with `IBV_WR_SEND`).
pub fn send(
    host: &mut Host,
    h: IpCmHandle,
    conn: IpConnId,
    wr_id: u64,
    data: Vec<u8>,
) -> Result<(), IpCmAppError> {
    post_send(host, h, conn, wr_id, SendOp::Send, data)
}

/// Posts a receive of `capacity` bytes on a connection's QP (established or not).
pub fn post_recv(
    host: &mut Host,
    h: IpCmHandle,
    conn: IpConnId,
    wr_id: u64,
    capacity: u32,
) -> Result<(), IpCmAppError> {
    let qpn = app_mut(host, h)?.qpn(conn).ok_or(IpCmAppError::NoQp)?;
    host.hca_mut().post_recv(qpn, RecvWr { wr_id, capacity })?;
    Ok(())
}

/// RDMA WRITE of `len` bytes at `offset` of our region `local` to `remote_addr` of the peer's
/// region `rkey`. The range is checked now ([`IpCmAppError`] when it is not inside the region);
/// the HCA reads the bytes from the region as it builds each packet ([`SendWr::local`]), so a
/// region deregistered meanwhile completes the request with a local protection error.
#[allow(clippy::too_many_arguments)]
pub fn rdma_write(
    host: &mut Host,
    h: IpCmHandle,
    conn: IpConnId,
    wr_id: u64,
    local: &MrHandle,
    offset: usize,
    len: usize,
    remote_addr: u64,
    rkey: u32,
) -> Result<(), IpCmAppError> {
    let qpn = app_mut(host, h)?.up_qpn(conn)?;
    host.hca().mr_read(local.lkey, offset, len)?;
    let sge = LocalSge {
        buf: LocalBuf {
            lkey: local.lkey,
            addr: local.addr.wrapping_add(offset as u64),
        },
        len: u32::try_from(len).map_err(|_| VerbsError::MessageTooLong {
            len,
            max: u32::MAX as usize,
        })?,
    };
    let wr = SendWr {
        wr_id,
        op: SendOp::RdmaWrite { remote_addr, rkey },
        data: Vec::new(),
        local: Some(sge),
        ud: None,
        signaled: true,
        solicited: false,
    };
    host.hca_mut().post_send(qpn, wr)?;
    Ok(())
}

/// RDMA READ of `len` bytes at `remote_addr` of the peer's region `rkey` into `offset` of our
/// region `local` (which must grant local write, IBA 1 §10.6.3.1).
#[allow(clippy::too_many_arguments)]
pub fn rdma_read(
    host: &mut Host,
    h: IpCmHandle,
    conn: IpConnId,
    wr_id: u64,
    local: &MrHandle,
    offset: usize,
    len: u32,
    remote_addr: u64,
    rkey: u32,
) -> Result<(), IpCmAppError> {
    let local = LocalBuf {
        lkey: local.lkey,
        addr: local.addr.wrapping_add(offset as u64),
    };
    let op = SendOp::RdmaRead {
        remote_addr,
        rkey,
        len,
        local: Some(local),
    };
    post_send(host, h, conn, wr_id, op, Vec::new())
}
