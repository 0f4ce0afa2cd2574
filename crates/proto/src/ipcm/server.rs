//! The connection server (Annex A11 "RDMA IP CM Service Connection Server"): listeners on
//! (protocol, address, port), the checks on every REQ for them (Annex A11 §A11.4, §A11.6,
//! §A11.7) and the consumer's answer.

use super::iwarp::{IwarpListen, Space};
use super::{Conn, IpCm, IpCmCommand, IpCmError, IpCmEvent, IpConnId, IpListenId, Listener};
use super::{Phase, Service};
use crate::cm::{ConnId, ListenId};
use crate::time::Instant;
use ipoib_wire::cm::{RejReason, ReqRepr};
use ipoib_wire::private_data::ip_cm::REJ_REASON_CONSUMER_REJECT;
use ipoib_wire::private_data::service_id::ip_cm_protocol_port;
use ipoib_wire::private_data::{
    verify_req_private_data, IpCmAriCode, IpCmReject, IpPair, RejectionLayer,
};
use std::net::{IpAddr, SocketAddr};

/// The most private data a REP carries (IBA 1 §12.6 Table 110).
pub(super) const REP_PRIVATE_DATA_LEN: usize = 196;
/// The most private data a REJ carries (IBA 1 §12.6 Table 108).
const REJ_PRIVATE_DATA_LEN: usize = 148;

/// True when a listener bound to `bound` takes a REQ for `dst`: `::` takes both families,
/// `0.0.0.0` IPv4 only, any other address itself only (Linux `cma_match_private_data`, with
/// `afonly` 1 for AF_INET and `net.ipv6.bindv6only` 0 for AF_INET6; docs/DEPLOYED.md).
pub(super) fn takes(bound: IpAddr, dst: IpAddr) -> bool {
    match bound {
        IpAddr::V6(a) if a.is_unspecified() => true,
        IpAddr::V4(a) if a.is_unspecified() => dst.is_ipv4(),
        a => a == dst,
    }
}

impl IpCm {
    /// Listens for connections to `addr` (ours, or `0.0.0.0` / `::` for any) on `port` (0: an
    /// ephemeral one, see [`IpCm::listen_addr`]) of IP `protocol`. The first listener of a
    /// (protocol, port) asks the host to listen on its Annex A11 service ID (CA11-6).
    pub fn listen(
        &mut self,
        protocol: u8,
        addr: IpAddr,
        port: u16,
    ) -> Result<IpListenId, IpCmError> {
        self.bind(protocol, addr, port, None)
    }

    /// A listener of `protocol`, or of iWarp emulation when `iwarp` is given (its port space).
    pub(super) fn bind(
        &mut self,
        protocol: u8,
        addr: IpAddr,
        port: u16,
        iwarp: Option<IwarpListen>,
    ) -> Result<IpListenId, IpCmError> {
        let space = match &iwarp {
            Some(i) => Space::Iwarp(i.sid),
            None => Space::Ip(protocol),
        };
        if !addr.is_unspecified() && !self.cfg.local_addrs.contains(&addr) {
            return Err(IpCmError::AddressNotAvailable);
        }
        let port = if port == 0 {
            self.ephemeral_port(space)?
        } else {
            port
        };
        let clash = self.listeners.values().any(|l| {
            l.space() == space && l.port == port && (takes(l.addr, addr) || takes(addr, l.addr))
        });
        let ours = self
            .conns
            .values()
            .any(|c| c.active && c.space() == space && c.local.port() == port);
        if clash || ours {
            return Err(IpCmError::AddressInUse);
        }
        let id = IpListenId(self.next_listen);
        self.next_listen = self.next_listen.wrapping_add(1).max(1);
        self.listeners.insert(
            id,
            Listener {
                protocol,
                addr,
                port,
                iwarp,
            },
        );
        let service_id = space.service_id(port);
        if let std::collections::btree_map::Entry::Vacant(e) = self.services.entry(service_id) {
            e.insert(Service { cm: None });
            self.commands.push_back(IpCmCommand::CmListen {
                service_id,
                mask: u64::MAX,
            });
        }
        Ok(id)
    }

    /// The address and port a listener is bound to.
    pub fn listen_addr(&self, listen: IpListenId) -> Option<SocketAddr> {
        self.listeners
            .get(&listen)
            .map(|l| SocketAddr::new(l.addr, l.port))
    }

    /// Stops a listener; the last one of its (protocol, port) stops the CM listener. Requests
    /// already delivered stay to be answered.
    pub fn unlisten(&mut self, listen: IpListenId) -> Result<(), IpCmError> {
        let l = self.listeners.remove(&listen).ok_or(IpCmError::Unknown)?;
        let service_id = l.space().service_id(l.port);
        let shared = self
            .listeners
            .values()
            .any(|o| o.space() == l.space() && o.port == l.port);
        if !shared {
            if let Some(Service { cm: Some(cm) }) = self.services.remove(&service_id) {
                self.commands
                    .push_back(IpCmCommand::CmUnlisten { listen: cm });
            }
        }
        Ok(())
    }

    /// The host's answer to [`IpCmCommand::CmListen`]: the CM's listener, or `None` when the CM
    /// refused (the listeners of that service ID report [`IpCmEvent::ListenError`] and go).
    pub fn cm_listening(&mut self, service_id: u64, cm: Option<ListenId>) {
        let Some(s) = self.services.get_mut(&service_id) else {
            // Every listener went before the host answered.
            if let Some(cm) = cm {
                self.commands
                    .push_back(IpCmCommand::CmUnlisten { listen: cm });
            }
            return;
        };
        if cm.is_some() {
            s.cm = cm;
            return;
        }
        self.services.remove(&service_id);
        let gone: Vec<IpListenId> = self
            .listeners
            .iter()
            .filter(|(_, l)| l.space().service_id(l.port) == service_id)
            .map(|(id, _)| *id)
            .collect();
        for listen in gone {
            self.listeners.remove(&listen);
            self.events.push_back(IpCmEvent::ListenError { listen });
        }
    }

    /// A REQ for one of our CM listeners. Its private data is read as Annex A11 Table 1, since
    /// its service ID is in the A11 range (CA11-7), and checked before the consumer hears of it,
    /// versions first (CA11-11). A refusal is REJ 28 with the A11 ARI (oA11-1); a destination
    /// that no listener of the port is bound to is Table 5 code 0x06. REQs on the iWarp service
    /// IDs go to iWarp emulation first (`iwarp.rs`).
    pub(super) fn on_request(&mut self, now: Instant, cm: ConnId, listen: ListenId, req: &ReqRepr) {
        let _ = listen;
        if self.on_other_request(now, cm, req) {
            return;
        }
        let Some((protocol, port)) = ip_cm_protocol_port(req.service_id) else {
            // Our CM listeners are all in the A11 range; a host that routed another here.
            return self.refuse(cm, IpCmReject::new(IpCmAriCode::Unspecified));
        };
        let repr = match verify_req_private_data(
            &req.private_data,
            &self.cfg.policy,
            &self.cfg.local_addrs,
        ) {
            Ok(r) => r,
            Err(r) => return self.refuse(cm, r),
        };
        let (src, dst): (IpAddr, IpAddr) = match repr.addrs {
            IpPair::V4 { src, dst } => (src.into(), dst.into()),
            IpPair::V6 { src, dst } => (src.into(), dst.into()),
        };
        let listener = self
            .listeners
            .iter()
            .find(|(_, l)| l.space() == Space::Ip(protocol) && l.port == port && takes(l.addr, dst))
            .map(|(id, _)| *id);
        let Some(listen) = listener else {
            return self.refuse(cm, IpCmReject::new(IpCmAriCode::UnknownIpAddress));
        };
        let id = self.alloc_conn_id();
        let src = SocketAddr::new(src, repr.source_port);
        let dst = SocketAddr::new(dst, port);
        self.conns.insert(
            id,
            Conn {
                active: false,
                protocol,
                local: dst,
                remote: src,
                phase: Phase::Requested,
                cm: Some(cm),
                private_data: Vec::new(),
                deadline: None,
                iwarp: None,
            },
        );
        self.by_cm.insert(cm, Some(id));
        self.events.push_back(IpCmEvent::ConnectRequest {
            conn: id,
            listen,
            protocol,
            src,
            dst,
            minor_version: repr.minor_version,
            private_data: repr.consumer_private_data.to_vec(),
        });
    }

    /// REJ 28 "Consumer Reject" with the Table 4 ARI of `r`: layer 0x00, the Table 5 code in
    /// byte 1, the suggested value's length and the value (oA11-1, CA11-9, CA11-10, oA11-2).
    fn refuse(&mut self, cm: ConnId, r: IpCmReject) {
        let mut ari = vec![0u8; r.buffer_len()];
        // The buffer is buffer_len() bytes.
        let _ = r.emit(&mut ari);
        self.count(r.code.name());
        self.by_cm.insert(cm, None);
        self.commands.push_back(IpCmCommand::CmReject {
            conn: cm,
            reason: RejReason::from(REJ_REASON_CONSUMER_REJECT),
            ari,
            private_data: Vec::new(),
        });
    }

    /// Accepts a [`IpCmEvent::ConnectRequest`] with up to 196 bytes of REP private data; the
    /// consumer hears [`IpCmEvent::Established`] when the client's RTU comes.
    pub fn accept(&mut self, conn: IpConnId, private_data: &[u8]) -> Result<(), IpCmError> {
        // iWarp emulation: the HelloReply, then the consumer's bytes.
        let private_data = self.rep_private_data(conn, private_data)?;
        if private_data.len() > REP_PRIVATE_DATA_LEN {
            return Err(IpCmError::PrivateDataTooLong(private_data.len()));
        }
        let c = self.conns.get_mut(&conn).ok_or(IpCmError::Unknown)?;
        let (Phase::Requested, Some(cm)) = (c.phase, c.cm) else {
            return Err(IpCmError::WrongState("not a request waiting for an answer"));
        };
        c.phase = Phase::Accepting;
        self.commands.push_back(IpCmCommand::CmAccept {
            conn: cm,
            private_data,
        });
        Ok(())
    }

    /// Rejects a [`IpCmEvent::ConnectRequest`]: REJ 28 "Consumer Reject" whose ARI names the
    /// RDMA-aware ULP as the rejecting layer (Annex A11 §A11.7 Table 3, layer 0x01), with up to
    /// 148 bytes of the consumer's private data.
    pub fn reject(&mut self, conn: IpConnId, private_data: &[u8]) -> Result<(), IpCmError> {
        if private_data.len() > REJ_PRIVATE_DATA_LEN {
            return Err(IpCmError::PrivateDataTooLong(private_data.len()));
        }
        let c = self.conns.get_mut(&conn).ok_or(IpCmError::Unknown)?;
        let (Phase::Requested, Some(cm)) = (c.phase, c.cm) else {
            return Err(IpCmError::WrongState("not a request waiting for an answer"));
        };
        c.phase = Phase::Closing;
        self.commands.push_back(IpCmCommand::CmReject {
            conn: cm,
            reason: RejReason::from(REJ_REASON_CONSUMER_REJECT),
            ari: vec![RejectionLayer::RdmaAwareUlp.into()],
            private_data: private_data.to_vec(),
        });
        Ok(())
    }

    /// The host could not take an accepted request (no QP); it rejected it. The consumer hears
    /// [`IpCmEvent::ConnectError`].
    pub fn cm_accept_failed(&mut self, now: Instant, cm: ConnId) {
        let _ = now;
        if let Some(id) = self.close(cm) {
            self.events.push_back(IpCmEvent::ConnectError { conn: id });
        }
    }
}
