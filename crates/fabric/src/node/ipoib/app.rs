//! [`IpoibApp`]: the HCA side of one IPoIB interface (Linux `ipoib_ib.c`, `ipoib_verbs.c`), as an
//! [`App`] on a [`Host`], with the tiny IP endpoint ([`IpHost`]) above it.
//!
//! The interface agent ([`Interface`]) is one of the host's management agents, so it receives the
//! SA's responses by transaction ID and the SA's Reports (registered with
//! [`Host::serve_method`]`(SubnAdm, Report, ..)`). The application owns the rest:
//!
//! - one CQ and one UD QP on the host's management port ([`Host::mgmt_port`]: port 1, or a
//!   multi-port HCA's first port the SM reaches), created at install; the QP goes to Init at once (P_Key index
//!   of the interface's P_Key, receives posted), and to RTR and RTS when the interface names the
//!   broadcast group's Q_Key ([`InterfaceEvent::SetQkey`], draft-ietf-ipoib-ip-over-infiniband-06
//!   §9.1.2 b). A later change of Q_Key or P_Key index takes the QP through Reset and back, as
//!   Linux `ipoib_ib_dev_stop`/`ipoib_ib_dev_open` do on a P_Key change;
//! - [`RECV_DEPTH`] receive buffers of [`RECV_BUF`] bytes stay posted (Linux `ipoib_recvq_size`,
//!   `IPOIB_UD_BUF_SIZE`: 40 GRH bytes + the largest IB MTU, i.e. 40 + 4 + the largest IPoIB MTU),
//!   or as many as [`IpoibApp::install_with_depth`] names (Linux module parameter
//!   `recv_queue_size`, [`MIN_RECV_DEPTH`]..=[`MAX_RECV_DEPTH`]);
//! - `Attach`/`Detach` become `attach_mcast`/`detach_mcast` (IBA 1 §10.5.2);
//! - every [`UdTransmit`] becomes one UD SEND (address handle with DLID, SL and GRH; remote QPN;
//!   Q_Key); the static rate is not modelled by the emulated HCA;
//! - every receive completion becomes [`Interface::handle_datagram`]: the GRH from the completion,
//!   the P_Key from the completion's P_Key index, the Q_Key the QP's own (the HCA accepted only
//!   that one, IBA 1 §10.2.4);
//! - port changes become [`Interface::handle_port`].
//!
//! Invariants: the application never panics on what arrives (verbs errors are counted in
//! [`AdapterCounters`]); it drains the interface completely on every poll, so nothing waits for a
//! later event; logs and resolution records are bounded.

use super::external::OsSide;
use super::frames::{self, FrameStats, Kind, Resolution, ResolutionKind};
use super::stack::{CpuCounters, HostCpu, StackCost, Work};
use crate::hw::hca::{CqId, Hca, ModifyQp, Port, QpInit};
use crate::hw::mgmt::PortState;
use crate::hw::verbs::{
    AddressHandle, Completion, GlobalRoute, QpState, QpType, Qpn, RecvWr, SendOp, SendWr, UdDest,
    WcOpcode, WcStatus,
};
use crate::node::host::{AgentId, Agents, App, AppId, Host, HostCtx};
use crate::Instant;
use ipoib_proto::ip_host::{IpError, IpHost};
use ipoib_proto::ipoib::{
    Interface, InterfaceConfig, InterfaceEvent, LogLevel, PortInfo, RecvGrh, UdReceived, UdTransmit,
};
use ipoib_proto::rng::Rng;
use ipoib_wire::mad::{Method, MgmtClass};
use ipoib_wire::Gid;
use ipoib_wire::{PKey, QKey};
use std::any::Any;
use std::collections::{BTreeSet, VecDeque};
use std::net::IpAddr;

/// Receive buffers kept posted (Linux `ipoib_recvq_size` default, `IPOIB_RX_RING_SIZE`).
pub const RECV_DEPTH: usize = 256;
/// The fewest receive buffers an interface keeps posted (Linux `IPOIB_MIN_QUEUE_SIZE`, the
/// smallest `recv_queue_size` it accepts).
pub const MIN_RECV_DEPTH: usize = 2;
/// The most (Linux `IPOIB_MAX_QUEUE_SIZE`).
pub const MAX_RECV_DEPTH: usize = 8192;
/// Bytes of one receive buffer: the 40-byte GRH area and the largest IB MTU (4096), i.e. 40 + the
/// 4-byte encapsulation header + the largest IPoIB MTU (Linux `IPOIB_UD_BUF_SIZE`).
pub const RECV_BUF: u32 = 40 + 4096;
/// Log lines kept.
pub const LOG_KEEP: usize = 256;
/// Resolutions kept.
pub const RESOLUTIONS_KEEP: usize = 4096;

/// Where an installed interface lives on its host.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IpoibHandle {
    /// The [`Interface`] agent.
    pub agent: AgentId,
    /// The [`IpoibApp`].
    pub app: AppId,
}

/// Errors of the adapter (each counted; none stops it).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct AdapterCounters {
    /// Datagrams the interface produced while the QP could not send (not in RTS).
    pub tx_not_ready: u64,
    /// `post_send` refused or a send completed in error.
    pub send_errors: u64,
    /// Receive completions in error.
    pub recv_errors: u64,
    /// `modify_qp`, `post_recv`, `attach_mcast` or `detach_mcast` refused.
    pub verbs_errors: u64,
    /// Datagrams received while the interface agent was missing (never, once installed).
    pub no_interface: u64,
}

enum Command {
    Join(IpAddr),
    Leave(IpAddr),
}

/// The adapter. See the module docs.
pub struct IpoibApp {
    agent: AgentId,
    /// The HCA port the interface runs on.
    port: u8,
    qpn: Qpn,
    cq: CqId,
    /// The interface's P_Key (for the P_Key index).
    pkey: PKey,
    /// Q_Key the interface asked for.
    qkey: Option<QKey>,
    /// P_Key index the QP should use.
    pkey_index: u16,
    /// Receive buffers kept posted.
    recv_depth: usize,
    next_wr: u64,
    attached: BTreeSet<(Gid, u16)>,
    ip: IpHost,
    commands: VecDeque<Command>,
    carrier: bool,
    carrier_log: Vec<(Instant, bool)>,
    log: VecDeque<(Instant, LogLevel, String)>,
    resolutions: Vec<Resolution>,
    tx: FrameStats,
    rx: FrameStats,
    counters: AdapterCounters,
    /// Connected mode (RFC 4755), when the interface has it (boxed: most interfaces have not,
    /// and an empty `Option` of it inline took its whole size in every one).
    cm: Option<Box<super::connected::CmSide>>,
    /// The host's IP stack, when it is the IP layer instead of [`IpHost`] (`external.rs`).
    pub(super) os: Option<Box<OsSide>>,
    /// The processor `ip`'s packets pass through (`stack.rs`).
    cpu: HostCpu,
    /// The port's ClientReregister count last seen ([`Port::client_reregisters`]).
    reregisters: u64,
}

impl std::fmt::Debug for IpoibApp {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("IpoibApp")
            .field("qpn", &self.qpn)
            .field("carrier", &self.carrier)
            .field("attached", &self.attached.len())
            .field("external", &self.os.is_some())
            .finish()
    }
}

impl IpoibApp {
    /// Installs an IPoIB interface on `host`'s management port ([`Host::mgmt_port`], whose QP1
    /// carries the interface's SA traffic): creates the CQ and the UD QP, builds the [`Interface`]
    /// from `cfg` (its `port_guid` and `qpn` are replaced by the port's GUID and the new QP's
    /// number), registers it as a management agent that also receives SA Reports, and adds the
    /// application. `rng` seeds the interface's SA transaction IDs.
    pub fn install(
        host: &mut Host,
        cfg: InterfaceConfig,
        rng: Rng,
    ) -> Result<IpoibHandle, crate::hw::hca::VerbsError> {
        IpoibApp::install_with_depth(host, cfg, rng, RECV_DEPTH)
    }

    /// [`IpoibApp::install`] keeping `recv_depth` receive buffers posted instead of
    /// [`RECV_DEPTH`] (clamped to [`MIN_RECV_DEPTH`]..=[`MAX_RECV_DEPTH`]), as Linux's
    /// `recv_queue_size` module parameter sets it.
    pub fn install_with_depth(
        host: &mut Host,
        cfg: InterfaceConfig,
        rng: Rng,
        recv_depth: usize,
    ) -> Result<IpoibHandle, crate::hw::hca::VerbsError> {
        IpoibApp::install_inner(host, cfg, rng, recv_depth, None)
    }

    /// The installation itself; `os` set makes the IP layer the host's stack
    /// ([`IpoibApp::install_external`]).
    pub(super) fn install_inner(
        host: &mut Host,
        mut cfg: InterfaceConfig,
        rng: Rng,
        recv_depth: usize,
        os: Option<Box<OsSide>>,
    ) -> Result<IpoibHandle, crate::hw::hca::VerbsError> {
        let port = host.mgmt_port();
        let hca = host.hca_mut();
        let guid = hca
            .port(port)
            .ok_or(crate::hw::hca::VerbsError::NoSuchPort(port))?
            .guid;
        let cq = hca.create_cq();
        let qpn = hca.create_qp(QpInit {
            qp_type: QpType::Ud,
            port,
            send_cq: cq,
            recv_cq: cq,
            // A kernel ULP: it may send with a controlled Q_Key (§14, IBA 1 §10.2.4).
            privileged: true,
            sq_sig_all: false,
        })?;
        cfg.port_guid = guid;
        cfg.qpn = qpn;
        let v4 = cfg.ipv4.map(|c| c.addr);
        let pkey = cfg.pkey;
        let cm_rng = rng.fork(0x434d);
        let iface = Interface::new(cfg, rng);
        let mut app = IpoibApp {
            agent: AgentId(usize::MAX),
            port,
            qpn,
            cq,
            pkey,
            qkey: None,
            pkey_index: 0,
            recv_depth: recv_depth.clamp(MIN_RECV_DEPTH, MAX_RECV_DEPTH),
            next_wr: 0,
            attached: BTreeSet::new(),
            ip: IpHost::new(guid.0 as u16, v4),
            commands: VecDeque::new(),
            carrier: false,
            carrier_log: Vec::new(),
            log: VecDeque::new(),
            resolutions: Vec::new(),
            tx: FrameStats::default(),
            rx: FrameStats::default(),
            counters: AdapterCounters::default(),
            cm: None,
            os,
            cpu: HostCpu::default(),
            reregisters: 0,
        };
        app.pkey_index = hca
            .port(port)
            .and_then(|p| p.find_pkey_index(pkey))
            .unwrap_or(0);
        app.setup_qp(hca);
        app.cm = super::connected::install(host, &iface, port, cm_rng).map(Box::new);
        let agent = host.add_agent(iface);
        host.serve_method(MgmtClass::SubnAdm, Method::Report, agent);
        app.agent = agent;
        let id = host.add_app(app);
        host.route_cq(cq, id);
        Ok(IpoibHandle { agent, app: id })
    }

    /// The interface's agent.
    pub fn agent(&self) -> AgentId {
        self.agent
    }

    /// The HCA port the interface runs on.
    pub fn port(&self) -> u8 {
        self.port
    }

    /// The UD QP.
    pub fn qpn(&self) -> Qpn {
        self.qpn
    }

    /// The CQ of the QP.
    pub fn cq(&self) -> CqId {
        self.cq
    }

    /// The IP endpoint.
    pub fn ip(&self) -> &IpHost {
        &self.ip
    }

    /// The IP endpoint, to send from it (the host pumps what it queued on its next event; reach
    /// the application through [`Host::app_mut`], which arranges that event).
    pub fn ip_mut(&mut self) -> &mut IpHost {
        &mut self.ip
    }

    /// Sends an echo request (see [`IpHost::ping`]).
    pub fn ping(&mut self, now: Instant, dst: IpAddr) -> Result<usize, IpError> {
        self.ip.ping(now, dst)
    }

    /// Joins the IP multicast group `group` (the interface's FullMember join, §11) and records
    /// the UDP datagrams sent to it.
    pub fn join_group(&mut self, group: IpAddr) {
        self.ip.listen(group);
        self.commands.push_back(Command::Join(group));
    }

    /// Leaves `group`.
    pub fn leave_group(&mut self, group: IpAddr) {
        self.ip.unlisten(group);
        self.commands.push_back(Command::Leave(group));
    }

    /// True while the interface has carrier (the broadcast group is joined, §5).
    pub fn carrier(&self) -> bool {
        self.carrier
    }

    /// Every carrier change: (when, up).
    pub fn carrier_log(&self) -> &[(Instant, bool)] {
        &self.carrier_log
    }

    /// When carrier last came up, if it is up.
    pub fn carrier_up_at(&self) -> Option<Instant> {
        self.carrier_log
            .last()
            .filter(|(_, up)| *up && self.carrier)
            .map(|(t, _)| *t)
    }

    /// The interface's log lines (the last [`LOG_KEEP`]).
    pub fn log(&self) -> impl DoubleEndedIterator<Item = &(Instant, LogLevel, String)> {
        self.log.iter()
    }

    /// Address resolutions learned (ARP replies and solicited NAs received), oldest first.
    pub fn resolutions(&self) -> &[Resolution] {
        &self.resolutions
    }

    /// Datagrams sent.
    pub fn tx_stats(&self) -> FrameStats {
        self.tx
    }

    /// Datagrams received.
    pub fn rx_stats(&self) -> FrameStats {
        self.rx
    }

    /// Adapter errors.
    pub fn counters(&self) -> AdapterCounters {
        self.counters
    }

    /// Makes every IP packet of the built-in endpoint cost the host's processor `cost`
    /// (`stack.rs`; [`StackCost::FREE`], the default, for none). Packets already in the
    /// processor's hands keep the times they were given.
    pub fn set_stack_cost(&mut self, cost: StackCost) {
        self.cpu.set_cost(cost);
    }

    /// What an IP packet of the built-in endpoint costs the host ([`IpoibApp::set_stack_cost`]).
    pub fn stack_cost(&self) -> StackCost {
        self.cpu.cost()
    }

    /// The processor model's counters (`stack.rs`).
    pub fn cpu_counters(&self) -> CpuCounters {
        self.cpu.counters()
    }

    /// Connected-mode adapter errors (`None` without connected mode).
    pub fn conn_counters(&self) -> Option<super::ConnCounters> {
        self.cm.as_ref().map(|c| c.counters)
    }

    /// The connections' QPs: (connection, QPN, established).
    pub fn conn_qps(&self) -> Vec<(ipoib_proto::cm::ConnId, Qpn, bool)> {
        self.cm
            .as_ref()
            .map(|c| c.qps().collect())
            .unwrap_or_default()
    }

    /// Multicast groups the QP is attached to: (MGID, MLID).
    pub fn attached(&self) -> &BTreeSet<(Gid, u16)> {
        &self.attached
    }

    fn verbs<T>(&mut self, r: Result<T, crate::hw::hca::VerbsError>) -> Option<T> {
        match r {
            Ok(v) => Some(v),
            Err(_) => {
                self.counters.verbs_errors += 1;
                None
            }
        }
    }

    /// Brings the QP to the state the interface needs: Init with the P_Key index and receives
    /// posted; RTR and RTS once the Q_Key is known. A QP past Init whose P_Key index or Q_Key
    /// must change goes through Reset first.
    fn setup_qp(&mut self, hca: &mut Hca) {
        let Some(info) = hca.qp_info(self.qpn) else {
            self.counters.verbs_errors += 1;
            return;
        };
        let want_qkey = self.qkey.unwrap_or(QKey(0));
        let mut state = info.state;
        let stale = info.pkey_index != self.pkey_index || info.qkey != want_qkey;
        if stale && !matches!(state, QpState::Reset | QpState::Init) {
            if self
                .verbs(hca.modify_qp(self.qpn, ModifyQp::Reset))
                .is_none()
            {
                return;
            }
            state = QpState::Reset;
        }
        if state == QpState::Reset || (state == QpState::Init && stale) {
            let init = ModifyQp::Init {
                port: self.port,
                pkey_index: self.pkey_index,
                qkey: want_qkey,
            };
            if self.verbs(hca.modify_qp(self.qpn, init)).is_none() {
                return;
            }
            state = QpState::Init;
        }
        self.post_receives(hca);
        if state == QpState::Init && self.qkey.is_some() {
            for m in [ModifyQp::Rtr(None), ModifyQp::Rts(None)] {
                if self.verbs(hca.modify_qp(self.qpn, m)).is_none() {
                    return;
                }
            }
        }
    }

    fn post_receives(&mut self, hca: &mut Hca) {
        let posted = hca.qp_recv_posted(self.qpn).unwrap_or(0);
        for _ in posted..self.recv_depth {
            self.next_wr += 1;
            let wr = RecvWr {
                wr_id: self.next_wr,
                capacity: RECV_BUF,
            };
            if self.verbs(hca.post_recv(self.qpn, wr)).is_none() {
                return;
            }
        }
    }

    fn port_info(&self, p: &Port) -> PortInfo {
        PortInfo {
            lid: p.lid,
            sm_lid: p.sm_lid,
            sm_sl: p.sm_sl,
            subnet_prefix: p.subnet_prefix,
            active: p.state == PortState::Active,
            pkey_index: p.find_pkey_index(self.pkey),
            mtu: p.mtu,
        }
    }

    fn post(&mut self, hca: &mut Hca, t: UdTransmit) {
        let ready = hca.qp_state(self.qpn) == Some(QpState::Rts);
        // Sent datagrams are only counted by kind: the link-layer address of an NA is not read.
        let kind = frames::classify(&t.data, None);
        if !ready {
            self.counters.tx_not_ready += 1;
            return;
        }
        self.tx
            .count(kind, t.remote_qpn == ipoib_wire::ib::BthRepr::MULTICAST_QPN);
        self.next_wr += 1;
        let wr = SendWr {
            wr_id: self.next_wr,
            op: SendOp::Send,
            data: t.data,
            local: None,
            ud: Some(UdDest {
                ah: AddressHandle {
                    dlid: t.dlid,
                    sl: t.sl,
                    src_path_bits: 0,
                    grh: t.grh.map(|g| GlobalRoute {
                        dgid: g.gid,
                        sgid_index: 0,
                        flow_label: g.flow_label,
                        hop_limit: g.hop_limit,
                        tclass: g.tclass,
                    }),
                    port: self.port,
                },
                remote_qpn: t.remote_qpn,
                remote_qkey: t.qkey,
                pkey_index: None,
            }),
            signaled: false,
            solicited: false,
        };
        if hca.post_send(self.qpn, wr).is_err() {
            self.counters.send_errors += 1;
        }
    }

    fn on_event(&mut self, now: Instant, e: InterfaceEvent, hca: &mut Hca) {
        match e {
            InterfaceEvent::Deliver(p) => match self.os.as_mut() {
                Some(os) => os.deliver(p),
                None if self.cpu.bypass() => self.ip.handle_packet(now, &p),
                None => {
                    self.cpu.take(now, Work::Receive(p.into_vec()));
                }
            },
            InterfaceEvent::CarrierUp | InterfaceEvent::CarrierDown => {
                let up = matches!(e, InterfaceEvent::CarrierUp);
                self.carrier = up;
                self.carrier_log.push((now, up));
            }
            InterfaceEvent::SetQkey(q) => {
                self.qkey = Some(q);
                self.setup_qp(hca);
            }
            InterfaceEvent::Attach { mgid, mlid } => {
                if self.verbs(hca.attach_mcast(self.qpn, mgid, mlid)).is_some() {
                    self.attached.insert((mgid, mlid));
                }
            }
            InterfaceEvent::Detach { mgid, mlid } => {
                if self.attached.remove(&(mgid, mlid)) {
                    let r = hca.detach_mcast(self.qpn, mgid, mlid);
                    self.verbs(r);
                }
            }
            InterfaceEvent::AddressReady(a) => match self.os.as_mut() {
                Some(os) => os.address_ready(a),
                None => self.ip.address_ready(a),
            },
            InterfaceEvent::DadFailed(a) => {
                if let Some(os) = self.os.as_mut() {
                    os.dad_failed(a);
                }
                self.push_log(now, LogLevel::Warn, format!("DAD failed for {a}"))
            }
            InterfaceEvent::Ipv6Mtu(m) => {
                self.push_log(now, LogLevel::Info, format!("IPv6 MTU {m}"))
            }
            InterfaceEvent::Log(l, m) => self.push_log(now, l, m),
        }
    }

    fn push_log(&mut self, now: Instant, l: LogLevel, m: String) {
        if self.log.len() == LOG_KEEP {
            self.log.pop_front();
        }
        self.log.push_back((now, l, m));
    }

    fn on_receive(&mut self, now: Instant, c: Completion, ctx: &mut HostCtx<'_>) {
        if c.status != WcStatus::Success {
            // Flushed buffers come back when the QP is reset or in error: not a fault.
            if c.status != WcStatus::WrFlushErr {
                self.counters.recv_errors += 1;
            }
            return;
        }
        let pkey = ctx
            .hca
            .port(self.port)
            .and_then(|p| p.pkey(c.pkey_index))
            .unwrap_or(PKey(0));
        let qkey = ctx.hca.qp_qkey(self.qpn).unwrap_or(QKey(0));
        let d = UdReceived {
            src_qpn: c.src_qp,
            slid: c.slid,
            sl: c.sl,
            grh: c.grh.map(|g| RecvGrh {
                sgid: g.sgid,
                dgid: g.dgid,
                tclass: g.tclass,
                flow_label: g.flow_label,
                hop_limit: g.hoplmt,
            }),
            pkey,
            qkey,
            data: c.data,
        };
        let legacy = ctx
            .agents
            .get::<Interface>(self.agent)
            .filter(|i| i.config().legacy_ipv6)
            .map(|i| i.gid().subnet_prefix());
        let kind = frames::classify(&d.data, legacy);
        let mcast = d.grh.is_some_and(|g| g.dgid.is_multicast());
        self.rx.count(kind, mcast);
        match kind {
            Kind::ArpReply(Some((ip, hw))) => self.resolved(now, ResolutionKind::Arp, ip, hw),
            Kind::Na(Some((ip, hw))) => self.resolved(now, ResolutionKind::Nd, ip, hw),
            _ => {}
        }
        match ctx.agents.get_mut::<Interface>(self.agent) {
            Some(i) => i.handle_datagram(now, d),
            None => self.counters.no_interface += 1,
        }
    }

    fn resolved(
        &mut self,
        at: Instant,
        kind: ResolutionKind,
        ip: IpAddr,
        hw: ipoib_wire::ipoib::HwAddr,
    ) {
        if self.resolutions.len() < RESOLUTIONS_KEEP {
            self.resolutions.push(Resolution { at, kind, ip, hw });
        }
    }
}

impl App for IpoibApp {
    fn on_completion(&mut self, now: Instant, c: Completion, ctx: &mut HostCtx<'_>) {
        if c.qpn != self.qpn {
            if let Some(cm) = self.cm.as_mut().filter(|cm| cm.owns_qp(c.qpn)) {
                cm.on_completion(now, c, self.agent, ctx.hca, ctx.agents);
            }
            return;
        }
        match c.opcode {
            WcOpcode::Recv => {
                self.on_receive(now, c, ctx);
                self.post_receives(ctx.hca);
            }
            _ => {
                if c.status != WcStatus::Success && c.status != WcStatus::WrFlushErr {
                    self.counters.send_errors += 1;
                    // IBA 1 §10.3.1: a UD QP in SQE goes back to RTS for the next sends.
                    if ctx.hca.qp_state(self.qpn) == Some(QpState::Sqe) {
                        let r = ctx.hca.modify_qp(self.qpn, ModifyQp::Rts(None));
                        self.verbs(r);
                    }
                }
            }
        }
    }

    fn poll(&mut self, now: Instant, ctx: &mut HostCtx<'_>) {
        // Nothing to move: the interface agent is not taken mutably, so the host knows no agent
        // got work from this poll (`Agents::get_mut`).
        if self.is_idle(now, ctx.hca, ctx.agents) {
            return;
        }
        // Bounded: every round either moves something or stops.
        for _ in 0..1024 {
            let Some(iface) = ctx.agents.get_mut::<Interface>(self.agent) else {
                return;
            };
            let mut moved = false;
            while let Some(c) = self.commands.pop_front() {
                moved = true;
                let r = match c {
                    Command::Join(g) => iface.join_group(now, g),
                    Command::Leave(g) => iface.leave_group(now, g),
                };
                if let Err(e) = r {
                    self.push_log(now, LogLevel::Warn, format!("group: {e}"));
                }
            }
            while let Some(p) = self.ip.poll_packet() {
                moved = true;
                if self.cpu.bypass() {
                    iface.send_ip(now, &p);
                } else {
                    self.cpu.take(now, Work::Send(p));
                }
            }
            while let Some(w) = self.cpu.done(now) {
                moved = true;
                match w {
                    Work::Send(p) => iface.send_ip(now, &p),
                    Work::Receive(p) => self.ip.handle_packet(now, &p),
                }
            }
            if let Some(os) = self.os.as_mut() {
                for (group, r) in os.pump(now, iface) {
                    moved = true;
                    if let Err(e) = r {
                        self.push_log(now, LogLevel::Warn, format!("group {group}: {e}"));
                    }
                }
            }
            // Events first: an Attach or SetQkey must reach the HCA before datagrams that follow.
            while let Some(e) = iface.poll_event() {
                moved = true;
                self.on_event(now, e, ctx.hca);
            }
            while let Some(t) = iface.poll_transmit(now) {
                moved = true;
                self.post(ctx.hca, t);
            }
            if let Some(cm) = self.cm.as_mut() {
                moved |= cm.pump(now, self.agent, self.cq, ctx.hca, ctx.agents);
            }
            if !moved {
                return;
            }
        }
    }

    fn poll_timeout(&self) -> Option<Instant> {
        self.cpu.next_done()
    }

    /// Idle when `poll` would move nothing: no group command, no IP packet, no processor work
    /// done by `now`, nothing from the interface; an application with connected mode or the
    /// host's own IP stack is never said idle (their pumps are polled every round).
    fn is_idle(&self, now: Instant, _hca: &Hca, agents: &Agents) -> bool {
        self.commands.is_empty()
            && self.cm.is_none()
            && self.os.is_none()
            && !self.ip.has_packet()
            && self.cpu.next_done().is_none_or(|t| t > now)
            && agents
                .get::<Interface>(self.agent)
                .is_none_or(|i| !i.has_output())
    }

    fn on_port_change(&mut self, now: Instant, port: &Port, ctx: &mut HostCtx<'_>) {
        if port.num != self.port {
            return;
        }
        let info = self.port_info(port);
        if let Some(i) = info.pkey_index {
            if i != self.pkey_index {
                self.pkey_index = i;
                self.setup_qp(ctx.hca);
            }
        }
        // IBA 1 §14.4.11: a SubnSet(PortInfo) with ClientReregister asks the clients to
        // register again (Linux IB_EVENT_CLIENT_REREGISTER to IPoIB).
        let rereg = port.client_reregisters != self.reregisters;
        self.reregisters = port.client_reregisters;
        if let Some(iface) = ctx.agents.get_mut::<Interface>(self.agent) {
            iface.handle_port_event(now, info, rereg);
        }
    }

    fn as_any(&self) -> &dyn Any {
        self
    }

    fn as_any_mut(&mut self) -> &mut dyn Any {
        self
    }
}
