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
//! - Files: `ipcm/commands.rs` carries out the service's commands and owns the QPs (the host's
//!   [`App`] rounds), `ipcm/rdma.rs` posts the consumer's verbs, `ipcm/iwarp.rs` pumps the iWarp
//!   streams.
//!
//! Invariants: every QP made is destroyed by the TimeWait exit of its CM connection, or at once
//! when the CM never took it ([`IpCmCounters::qps_created`] - [`IpCmCounters::qps_destroyed`] is
//! the QPs alive); never panics on what arrives; logs are bounded; maps are `BTreeMap`s.

use crate::hw::hca::{CqId, VerbsError};
use crate::hw::verbs::{Completion, Qpn};
use crate::node::cm::CmAppConfig;
use crate::node::host::{AgentId, AppId, Host};
#[cfg(doc)]
use crate::node::host::{App, HostCtx};
use crate::node::ipoib::{IpoibApp, IpoibHandle};
use crate::Instant;
#[cfg(doc)]
use ipoib_proto::cm::Cm;
use ipoib_proto::cm::ConnId;
use ipoib_proto::ipcm::{IpCm, IpCmConfig, IpCmError, IpCmEvent, IpConnId, IpListenId};
use ipoib_proto::ipoib::{AddrState, Interface};
use ipoib_proto::rng::Rng;
use ipoib_wire::Gid;
use std::collections::{BTreeMap, VecDeque};
use std::net::{IpAddr, SocketAddr};

mod commands;
mod iwarp;
mod rdma;

pub use iwarp::{IwarpFailure, SEND_WINDOW};
pub use rdma::{post_recv, post_send, rdma_read, rdma_write, send};

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
}
