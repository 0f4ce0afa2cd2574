//! Carrying out the IP CM service's commands on the host (the module docs, `ipcm/mod.rs`):
//! Resolve and PathQuery on the IPoIB interface, the CM commands on the host's CM agent, and the
//! RC QPs of the connections, from their creation to their destruction at the TimeWait exit
//! (IBA 1 §12.9.8); the host's rounds ([`App`] for [`IpCmApp`]).

use super::{local_addrs, push_bounded, AcceptPolicy, IpCmApp, QpRec};
use crate::hw::hca::{Hca, ModifyQp, VerbsError};
use crate::hw::verbs::{Completion, Qpn, RecvWr, WcOpcode, WcStatus};
use crate::node::cm::{connected_attr, new_qp, CmAppConfig};
use crate::node::host::{App, HostCtx};
use crate::Instant;
use ipoib_proto::cm::{Cm, CmEvent, ConnId, QpProgram};
use ipoib_proto::ipcm::{IpCmCommand, IpCmEvent, IpConnId};
use ipoib_proto::ipoib::Interface;
use ipoib_wire::cm::{RejReason, SidrStatus};
use ipoib_wire::{Gid, QKey};
use std::any::Any;
use std::net::IpAddr;

/// RTR then RTS with `p` (Linux `ib_cm_init_qp_attr` order).
fn program(hca: &mut Hca, cfg: &CmAppConfig, p: &QpProgram) -> Result<(), VerbsError> {
    let port = hca.port(cfg.port).ok_or(VerbsError::NoSuchPort(cfg.port))?;
    let attr = connected_attr(p, port, cfg.min_rnr_timer)
        .map_err(|_| VerbsError::InvalidArgument("P_Key not in the port's table"))?;
    hca.modify_qp(p.local_qpn, ModifyQp::Rtr(Some(attr)))?;
    hca.modify_qp(p.local_qpn, ModifyQp::Rts(Some(attr)))
}

impl IpCmApp {
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

    pub(super) fn destroy_qp(&mut self, hca: &mut Hca, qpn: Qpn) {
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
            CmEvent::SidrRequest { id, .. } => {
                // IBA 1 §12.11, §12.6 Table 120: the IP CM service offers connections only (no
                // UD service to give), so status 1, "service ID not supported", as
                // `node::cm::CmApp` answers for such a listener.
                let r = ctx
                    .agents
                    .get_mut::<Cm>(self.cm)
                    .map(|cm| cm.sidr_reply(*id, SidrStatus::Unsupported, 0, QKey(0), &[]));
                if !matches!(r, Some(Ok(()))) {
                    self.counters.cm_errors += 1;
                }
            }
            CmEvent::ConnectRequest { .. }
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
    fn on_completion(&mut self, now: Instant, c: Completion, ctx: &mut HostCtx<'_>) {
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
            self.iwarp_completion(now, cm, &c, ctx);
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
