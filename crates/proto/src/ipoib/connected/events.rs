//! Connected mode's CM side: the CM's events for this interface's listeners and connections
//! (requests and the §3.3 crossing rule, establishment, rejection with the other service-ID
//! spelling, release), and teardown (link down, neighbour expiry, idle connections; RFC 4755
//! §3.4).

use super::*;

impl Interface {
    pub(super) fn cm_event(&mut self, now: Instant, e: &CmEvent) {
        match e {
            CmEvent::ConnectRequest { conn, req, .. } => self.on_cm_request(now, *conn, req),
            CmEvent::Established {
                conn,
                qp,
                private_data,
            } => self.on_cm_established(now, *conn, qp, private_data),
            CmEvent::Rejected {
                conn,
                reason,
                private_data,
                ..
            } => self.on_cm_failed(now, *conn, Some(*reason), private_data),
            CmEvent::TimedOut { conn, .. } => self.on_cm_failed(now, *conn, None, &[]),
            CmEvent::Disconnected { conn, .. } => {
                let Some(c) = self.cm.conns.get_mut(conn) else {
                    return;
                };
                c.state = ConnState::Closing;
                let k = c.peer;
                self.unlink_conn(*conn);
                // Released before it came up (a DREQ in REP Sent): what waited for it goes over
                // UD, as after a failure (RFC 4755 §7), unless another connection may take it.
                let stranded = self.cm.peers.get(&k).is_some_and(|p| {
                    !p.queue.is_empty() && p.tx.is_none() && p.shared.is_none() && !p.starting
                });
                if stranded {
                    self.flush_queue_ud(now, k);
                }
            }
            CmEvent::TimeWaitExit { conn, .. } => self.forget_conn(now, *conn),
            CmEvent::SidrRequest { .. }
            | CmEvent::SidrReply { .. }
            | CmEvent::SidrTimedOut { .. } => {}
        }
    }

    /// A REQ to one of our service IDs (RFC 4755 §3.2, §3.3).
    pub(super) fn on_cm_request(&mut self, now: Instant, conn: ConnId, req: &ReqRepr) {
        let pd = self.cm_private_data();
        let reject = |s: &mut Interface, reason: RejReason| {
            s.cm.commands.push_back(CmCommand::Reject {
                conn,
                reason,
                private_data: pd.clone(),
            });
        };
        let Some(cfg) = self.cm_cfg() else {
            return reject(self, RejReason::InvalidServiceId);
        };
        let Ok(theirs) = IpoibCmPrivateDataRepr::parse(&req.private_data) else {
            return reject(self, RejReason::ConsumerDefined);
        };
        if theirs.receive_mtu < ConnectedConfig::MIN_PEER_RECEIVE_MTU {
            // RFC 4755 §5: the link must carry IPv6's 1280 octets; this peer is reached over UD.
            self.log(
                LogLevel::Warn,
                format_args!("REQ with receive MTU {}: rejected", theirs.receive_mtu),
            );
            return reject(self, RejReason::ConsumerDefined);
        }
        let for_us =
            ipoib_cm_qpn(req.service_id).is_some_and(|(q, _)| q == self.cfg.qpn & 0xff_ffff);
        if !for_us || self.link != Link::Up {
            return reject(self, RejReason::InvalidServiceId);
        }
        let ours_ok = match req.transport_service_type {
            TransportServiceType::Rc => cfg.rc,
            TransportServiceType::Uc => cfg.uc,
            _ => false,
        };
        if !ours_ok {
            return reject(self, RejReason::InvalidTransportType);
        }
        // RFC 4755 §3.3: the sender's link-layer address from its GID and its UD QPN.
        let flags = HwAddrFlags(match req.transport_service_type {
            TransportServiceType::Uc => HwAddrFlags::UC.0,
            _ => HwAddrFlags::RC.0,
        });
        let hw = HwAddr::new(flags, theirs.ud_qpn, req.primary_path.local_port_gid);
        let k = key(&hw);
        let mut shared = false;
        if cfg.rules == PeerRules::Rfc4755 {
            let outstanding = self.cm.peers.get(&k).is_some_and(|p| {
                p.starting
                    || p.tx.is_some_and(|c| {
                        self.cm
                            .conns
                            .get(&c)
                            .is_some_and(|c| c.state == ConnState::Connecting)
                    })
            });
            if outstanding {
                if !crossing_accepts(&self.hw_addr(), &hw) {
                    self.log(
                        LogLevel::Info,
                        format_args!("REQs crossed with {hw}: rejecting theirs (RFC 4755 §3.3)"),
                    );
                    return reject(self, RejReason::ConsumerDefined);
                }
                shared = true;
            }
        }
        let accepted = self
            .cm
            .conns
            .values()
            .filter(|c| c.peer == k && !c.active && c.state != ConnState::Closing)
            .count();
        if accepted >= ConnectedConfig::MAX_ACCEPTED_PER_PEER {
            self.log(
                LogLevel::Warn,
                format_args!("REQ from {hw}: {accepted} of its connections already, rejected"),
            );
            return reject(self, RejReason::NoResources);
        }
        if !self.cm.peers.contains_key(&k) {
            let same_gid = self.cm.peers.keys().filter(|p| p.1 == k.1).count();
            if same_gid >= ConnectedConfig::MAX_PEERS_PER_GID {
                self.log(
                    LogLevel::Warn,
                    format_args!("REQ from {hw}: {same_gid} peers on its GID already, rejected"),
                );
                return reject(self, RejReason::NoResources);
            }
            if !self.cm.make_room(now, cfg.max_peers) {
                return reject(self, RejReason::NoResources);
            }
            self.cm.add_peer(k, hw, cfg.spelling);
        }
        if shared {
            if let Some(p) = self.cm.peers.get_mut(&k) {
                p.shared = Some(conn);
            }
        }
        self.cm.conns.insert(
            conn,
            Conn {
                peer: k,
                active: false,
                state: ConnState::Connecting,
                transport: req.transport_service_type,
                service_id: req.service_id,
                remote_receive_mtu: theirs.receive_mtu,
                qpns: None,
                last_used: now,
                tx_packets: 0,
                rx_packets: 0,
            },
        );
        self.cm.commands.push_back(CmCommand::Accept {
            conn,
            private_data: pd,
        });
    }

    pub(super) fn on_cm_established(
        &mut self,
        now: Instant,
        conn: ConnId,
        qp: &QpProgram,
        pd: &[u8],
    ) {
        let Some(c) = self.cm.conns.get_mut(&conn) else {
            return;
        };
        c.state = ConnState::Up;
        c.last_used = now;
        c.qpns = Some((qp.local_qpn, qp.remote_qpn));
        if self.cm.idle_check.is_none() {
            let idle = self.cm_cfg().map_or(Duration::MAX, |x| x.idle_timeout);
            self.cm.idle_check = Some(now.saturating_add(idle));
        }
        let Some(c) = self.cm.conns.get_mut(&conn) else {
            return;
        };
        if let (true, Some((_, form))) = (c.active, ipoib_cm_qpn(c.service_id)) {
            let (k, max) = (c.peer, self.cm_cfg().map_or(1, |x| x.max_peers));
            self.cm.remember_spelling(now, k, form, max);
        }
        let Some(c) = self.cm.conns.get_mut(&conn) else {
            return;
        };
        if c.active {
            let k = c.peer;
            let refused = match IpoibCmPrivateDataRepr::parse(pd) {
                Ok(r) if r.receive_mtu >= ConnectedConfig::MIN_PEER_RECEIVE_MTU => {
                    c.remote_receive_mtu = r.receive_mtu;
                    None
                }
                // RFC 4755 §5: the link must carry IPv6's 1280 octets; UD does.
                Ok(r) => Some(format!("REP with receive MTU {}", r.receive_mtu)),
                // A REP without our private data: the peer is not IPoIB-CM (RFC 4755 §6).
                Err(_) => Some("REP without IPoIB-CM private data".to_string()),
            };
            if let Some(why) = refused {
                self.log(LogLevel::Warn, format_args!("{why}: releasing"));
                // Released first, so that its queue goes over UD, not on it.
                self.cm_release(now, conn);
                return self.peer_failed(now, k);
            }
        }
        let (k, active) = (c.peer, c.active);
        if let Some(p) = self
            .cm
            .peers
            .get_mut(&k)
            .filter(|p| active && p.shared.is_some())
        {
            // The peer accepted our REQ although it had sent one itself: it does not apply the
            // RFC 4755 §3.3 crossing rule (Linux), and the connection we accepted from it is its
            // own, which it sends on and we must not (docs/DEPLOYED.md "Linux IPoIB").
            p.shared = None;
            let hw = p.hw;
            self.log(
                LogLevel::Info,
                format_args!("{hw} accepted our REQ too: one connection per direction"),
            );
        }
        let mtu = self.cm.conns.get(&conn).map_or(0, |c| self.conn_mtu(c));
        self.log(
            LogLevel::Info,
            format_args!("connection {conn:?} up, MTU {mtu}"),
        );
        if self.sending_conn(&k).is_some() {
            let frames: Vec<Vec<u8>> = self
                .cm
                .peers
                .get_mut(&k)
                .map(|p| p.queue.drain(..).collect())
                .unwrap_or_default();
            for f in frames {
                if let Some(s) = self.sending_conn(&k) {
                    self.conn_send(now, s, f);
                }
            }
        }
    }

    pub(super) fn on_cm_failed(
        &mut self,
        now: Instant,
        conn: ConnId,
        reason: Option<RejReason>,
        _pd: &[u8],
    ) {
        let Some(c) = self.cm.conns.get_mut(&conn) else {
            return;
        };
        c.state = ConnState::Closing;
        let (k, active) = (c.peer, c.active);
        let shared = self
            .cm
            .peers
            .get(&k)
            .is_some_and(|p| p.shared == Some(conn));
        self.unlink_conn(conn);
        if !active {
            // The connection §3.3 made us accept never came up: what waited for it goes over
            // UD, as after our own failed attempt.
            if shared {
                self.peer_failed(now, k);
            }
            return;
        }
        let rfc = self.cm_cfg().is_some_and(|c| c.rules == PeerRules::Rfc4755);
        let Some(p) = self.cm.peers.get_mut(&k) else {
            return;
        };
        // A peer that reads the service ID the other way rejects with reason 8: try the other
        // spelling once, and keep it for this peer if it works. Linux knows one spelling
        // (docs/DEPLOYED.md "Linux IPoIB": `ipoib_cm_send_req`), so its rules do not.
        if reason == Some(RejReason::InvalidServiceId) && !p.tried_other && rfc {
            p.tried_other = true;
            p.spelling = match p.spelling {
                IpoibCmSidForm::Linux => IpoibCmSidForm::Rfc,
                IpoibCmSidForm::Rfc => IpoibCmSidForm::Linux,
            };
            let hw = p.hw;
            self.log(
                LogLevel::Info,
                format_args!("{hw} rejected the service ID: trying the other spelling"),
            );
            return self.start_connect(now, k);
        }
        let (hw, shared) = (p.hw, p.shared);
        // Lost the §3.3 crossing: the peer's connection, which we accepted, carries our traffic
        // (its queue waits for it to be established, or goes now if it is).
        if shared.is_some() {
            if self.sending_conn(&k).is_some() {
                self.peer_failed(now, k);
                if let Some(p) = self.cm.peers.get_mut(&k) {
                    p.retry_at = None;
                }
            }
            return;
        }
        self.log(
            LogLevel::Info,
            format_args!("connection to {hw} failed ({reason:?}): UD for now"),
        );
        self.peer_failed(now, k);
    }

    /// The connection no longer carries traffic for its peer.
    pub(super) fn unlink_conn(&mut self, conn: ConnId) {
        let Some(c) = self.cm.conns.get(&conn) else {
            return;
        };
        if let Some(p) = self.cm.peers.get_mut(&c.peer) {
            if p.tx == Some(conn) {
                p.tx = None;
            }
            if p.shared == Some(conn) {
                p.shared = None;
            }
        }
    }

    pub(super) fn forget_conn(&mut self, _now: Instant, conn: ConnId) {
        self.unlink_conn(conn);
        let Some(c) = self.cm.conns.remove(&conn) else {
            return;
        };
        // A peer with nothing left is forgotten, unless it is in its UD-only period or has
        // frames waiting.
        let idle = self.cm.peers.get(&c.peer).is_some_and(|p| {
            p.tx.is_none()
                && p.shared.is_none()
                && !p.starting
                && p.queue.is_empty()
                && p.retry_at.is_none()
        });
        let in_use = self.cm.conns.values().any(|o| o.peer == c.peer);
        if idle && !in_use {
            self.cm.peers.remove(&c.peer);
        }
    }

    /// Sends a DREQ for `conn` (if it got that far) and stops sending on it. Frames that were
    /// waiting for it go over UD unless another connection to the peer takes them.
    pub(super) fn cm_release(&mut self, now: Instant, conn: ConnId) {
        self.unlink_conn(conn);
        let Some(c) = self.cm.conns.get_mut(&conn) else {
            return;
        };
        if c.state != ConnState::Closing {
            c.state = ConnState::Closing;
            self.cm.commands.push_back(CmCommand::Disconnect { conn });
        }
        let k = c.peer;
        let waiting = self
            .cm
            .peers
            .get(&k)
            .is_some_and(|p| !p.queue.is_empty() && p.tx.is_none() && !p.starting);
        if waiting && self.sending_conn(&k).is_none() {
            self.flush_queue_ud(now, k);
        }
    }

    /// The frames waiting for a connection to `k` go over UD (those too big for it are answered
    /// with ICMP).
    pub(super) fn flush_queue_ud(&mut self, _now: Instant, k: PeerKey) {
        let Some(p) = self.cm.peers.get_mut(&k) else {
            return;
        };
        let frames: Vec<Vec<u8>> = p.queue.drain(..).collect();
        let (hw, path) = (p.hw, p.path);
        match path {
            Some((info, _)) => {
                for f in frames {
                    self.ud_transmit(info, hw, f);
                }
            }
            None => self.drop_count(DropReason::PathFailed, frames.len()),
        }
    }

    /// Every connection is released (link down, RFC 4755 §3.4 SHOULD); queued frames are lost.
    pub(in crate::ipoib) fn cm_teardown_all(&mut self, now: Instant) {
        let ids: Vec<ConnId> = self.cm.conns.keys().copied().collect();
        for id in ids {
            self.cm_release(now, id);
        }
        let mut lost = 0;
        for p in self.cm.peers.values_mut() {
            lost += p.queue.len();
            p.queue.clear();
            p.path = None;
        }
        self.drop_count(DropReason::Flushed, lost);
    }

    /// The neighbour at `hw` was forgotten: release the connection we send to it on (RFC 4755
    /// §3.4: MAY when the address resolution entry expires).
    pub(in crate::ipoib) fn cm_neighbour_gone(&mut self, now: Instant, hw: &HwAddr) {
        let k = key(hw);
        let Some(p) = self.cm.peers.get(&k) else {
            return;
        };
        let ids: Vec<ConnId> = [p.tx, p.shared].into_iter().flatten().collect();
        for id in ids {
            self.cm_release(now, id);
        }
    }

    /// Idle connections are released.
    pub(in crate::ipoib) fn cm_timeouts(&mut self, now: Instant) {
        let Some(cfg) = self.cm_cfg() else {
            return;
        };
        if self.cm.idle_check.is_none_or(|t| now < t) {
            return;
        }
        self.cm.idle_check = self
            .cm
            .conns
            .values()
            .filter(|c| {
                c.state == ConnState::Up && c.last_used.saturating_add(cfg.idle_timeout) > now
            })
            .map(|c| c.last_used.saturating_add(cfg.idle_timeout))
            .min();
        let idle: Vec<ConnId> = self
            .cm
            .conns
            .iter()
            .filter(|(_, c)| {
                c.state == ConnState::Up && c.last_used.saturating_add(cfg.idle_timeout) <= now
            })
            .map(|(id, _)| *id)
            .collect();
        for id in idle {
            self.log(
                LogLevel::Info,
                format_args!("connection {id:?} idle: releasing"),
            );
            self.cm_release(now, id);
        }
    }
}
