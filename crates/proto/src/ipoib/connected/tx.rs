//! Connected mode's transmit side: a unicast frame to a connected-mode peer goes on the
//! connection we send on, waits for one being set up (a REQ to the peer's service ID, RFC 4755
//! §3.2, §3.5), or goes over UD (a failed peer, a full queue, §7); too large for its way, it is
//! answered with ICMP.

use super::*;

impl Interface {
    /// A unicast frame for a connected-mode peer whose path is known.
    pub(in crate::ipoib) fn cm_transmit(
        &mut self,
        now: Instant,
        path: (crate::ipoib::path::PathInfo, PathRecordRepr),
        hw: HwAddr,
        frame: Vec<u8>,
    ) {
        let Some(cfg) = self.cm_cfg() else {
            return self.ud_transmit(path.0, hw, frame);
        };
        let k = key(&hw);
        if !self.cm.peers.contains_key(&k) {
            if !self.cm.make_room(now, cfg.max_peers) {
                return self.ud_transmit(path.0, hw, frame);
            }
            self.cm.add_peer(k, hw, cfg.spelling);
        }
        let Some(p) = self.cm.peers.get_mut(&k) else {
            return;
        };
        p.hw = hw;
        p.path = Some(path);
        if let Some(conn) = self.sending_conn(&k) {
            return self.conn_send(now, conn, frame);
        }
        let Some(p) = self.cm.peers.get_mut(&k) else {
            return;
        };
        if p.retry_at.is_some_and(|t| now < t) {
            return self.ud_transmit(path.0, hw, frame);
        }
        p.retry_at = None;
        if p.queue.len() >= cfg.queue_len {
            // A connection slow to come up (a peer whose CM does not answer makes us retry the
            // REQ for a minute) does not stop traffic: what fits UD goes that way meanwhile
            // (RFC 4755 §7), the rest is dropped.
            if frame.len().saturating_sub(4) <= self.ud_mtu() as usize {
                return self.push_ud(path.0, hw.gid, hw.qpn, frame);
            }
            return self.drop1(DropReason::ConnQueueFull);
        }
        p.queue.push_back(frame);
        // A connection §3.3 made us accept is coming up: the queue waits for it (another REQ
        // would be rejected, or make a second connection).
        if p.tx.is_none() && p.shared.is_none() && !p.starting {
            self.start_connect(now, k);
        }
    }

    /// The connection we send to `k` on, if one is up: ours while we have one (an attempt
    /// included), else the one §3.3 made us accept. Not the peer's while ours may still come
    /// up: a peer that accepts ours too does not apply §3.3 (Linux), and such a peer receives
    /// only on the connections it accepted (docs/DEPLOYED.md "Linux IPoIB").
    pub(super) fn sending_conn(&self, k: &PeerKey) -> Option<ConnId> {
        let p = self.cm.peers.get(k)?;
        let up = |c: &ConnId| {
            self.cm
                .conns
                .get(c)
                .is_some_and(|c| c.state == ConnState::Up)
        };
        match p.tx {
            Some(c) => Some(c).filter(up),
            None => p.shared.filter(up),
        }
    }

    pub(super) fn conn_send(&mut self, now: Instant, conn: ConnId, frame: Vec<u8>) {
        let Some(c) = self.cm.conns.get(&conn) else {
            return;
        };
        let mtu = self.conn_mtu(c);
        if frame.len().saturating_sub(4) > mtu as usize {
            return self.answer_too_big(&frame, mtu);
        }
        if let Some(c) = self.cm.conns.get_mut(&conn) {
            c.last_used = now;
            c.tx_packets += 1;
        }
        self.cm.out.push_back(ConnTransmit { conn, data: frame });
    }

    /// A frame over UD on a known path; one too large for the UD MTU is answered with ICMP.
    pub(super) fn ud_transmit(
        &mut self,
        info: crate::ipoib::path::PathInfo,
        hw: HwAddr,
        frame: Vec<u8>,
    ) {
        let ud_mtu = self.ud_mtu();
        if frame.len().saturating_sub(4) > ud_mtu as usize {
            return self.answer_too_big(&frame, ud_mtu);
        }
        self.push_ud(info, hw.gid, hw.qpn, frame);
    }

    /// Drops a frame too large for the way it must go and hands the IP layer the ICMP error that
    /// says so (docs/DEPLOYED.md "Linux IPoIB": `ipoib_cm_skb_too_long`).
    pub(in crate::ipoib) fn answer_too_big(&mut self, frame: &[u8], mtu: u32) {
        self.drop1(DropReason::TooBigForPath);
        self.reply_too_big(frame, mtu);
    }

    /// Hands the IP layer the ICMP error for a dropped `frame` that was larger than `mtu`.
    pub(in crate::ipoib) fn reply_too_big(&mut self, frame: &[u8], mtu: u32) {
        if let Some(reply) = frame.get(4..).and_then(|p| too_big_reply(p, mtu)) {
            self.counters.delivered += 1;
            self.events.push_back(InterfaceEvent::Deliver(reply.into()));
        }
    }

    /// Hands the IP layer the ICMP error for a dropped `frame` whose next hop did not resolve.
    pub(in crate::ipoib) fn reply_unreachable(&mut self, frame: &[u8]) {
        if let Some(reply) = frame.get(4..).and_then(unreachable_reply) {
            self.counters.delivered += 1;
            self.events.push_back(InterfaceEvent::Deliver(reply.into()));
        }
    }

    pub(super) fn start_connect(&mut self, now: Instant, k: PeerKey) {
        let Some(p) = self.cm.peers.get_mut(&k) else {
            return;
        };
        let Some((_, record)) = p.path else {
            return;
        };
        let hw = p.hw;
        let spelling = p.spelling;
        let Some(transport) = self.transport_with(&hw) else {
            return;
        };
        let service_id = match spelling {
            IpoibCmSidForm::Linux => ipoib_cm_service_id(hw.qpn),
            IpoibCmSidForm::Rfc => ipoib_cm_service_id_rfc(hw.qpn),
        };
        let pd = self.cm_private_data();
        let mut params = ConnectParams::over_path(&record, 0, service_id, 0, 0);
        params.transport = transport;
        params.pkey = self.cfg.pkey.full();
        params.private_data = pd.clone();
        params.rtu_private_data = pd;
        if let Some(p) = self.cm.peers.get_mut(&k) {
            p.starting = true;
        }
        self.log(
            LogLevel::Info,
            format_args!("connecting to {hw} (service ID {service_id:#018x})"),
        );
        let _ = now;
        self.cm
            .commands
            .push_back(CmCommand::Connect { peer: hw, params });
    }

    pub(super) fn connect_started(&mut self, now: Instant, peer: HwAddr, conn: Option<ConnId>) {
        let k = key(&peer);
        let transport = self
            .transport_with(&peer)
            .unwrap_or(TransportServiceType::Rc);
        let Some(p) = self.cm.peers.get_mut(&k) else {
            if let Some(c) = conn {
                self.cm
                    .commands
                    .push_back(CmCommand::Disconnect { conn: c });
            }
            return;
        };
        p.starting = false;
        let Some(conn) = conn else {
            return self.peer_failed(now, k);
        };
        p.tx = Some(conn);
        let service_id = match p.spelling {
            IpoibCmSidForm::Linux => ipoib_cm_service_id(peer.qpn),
            IpoibCmSidForm::Rfc => ipoib_cm_service_id_rfc(peer.qpn),
        };
        self.cm.conns.insert(
            conn,
            Conn {
                peer: k,
                active: true,
                state: ConnState::Connecting,
                transport,
                service_id,
                remote_receive_mtu: 0,
                qpns: None,
                last_used: now,
                tx_packets: 0,
                rx_packets: 0,
            },
        );
    }

    /// The peer could not be connected: its queue goes over UD and it is not tried again for a
    /// while.
    pub(super) fn peer_failed(&mut self, now: Instant, k: PeerKey) {
        let Some(cfg) = self.cm_cfg() else {
            return;
        };
        let Some(p) = self.cm.peers.get_mut(&k) else {
            return;
        };
        p.retry_at = Some(now.saturating_add(cfg.retry_after));
        p.tried_other = false;
        if let Some(conn) = self.sending_conn(&k) {
            let frames: Vec<Vec<u8>> = self
                .cm
                .peers
                .get_mut(&k)
                .map(|p| p.queue.drain(..).collect())
                .unwrap_or_default();
            for f in frames {
                self.conn_send(now, conn, f);
            }
            return;
        }
        self.flush_queue_ud(now, k);
    }
}

/// ARP, RARP and ND frames: address resolution, which stays on UD (RFC 4755 §7).
pub(super) fn is_resolution(frame: &[u8]) -> bool {
    match frame.get(..2) {
        Some([0x08, 0x06]) | Some([0x80, 0x35]) => true,
        Some([0x86, 0xdd]) => {
            // IPv6 with next header ICMPv6 (58) and an ND type (133..=137, RFC 4861 §4).
            frame.get(4 + 6) == Some(&58)
                && frame
                    .get(4 + 40)
                    .is_some_and(|&t| ipoib_wire::ipoib::Icmpv6Type::from(t).is_nd())
        }
        _ => false,
    }
}
