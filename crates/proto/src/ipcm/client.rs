//! The connection client (Annex A11 "RDMA IP CM Service Connection Client"): a connection named
//! by addresses goes through address resolution (IP to GID through the host's IPoIB neighbour
//! table), route resolution (a PathRecord) and the CM's REQ, whose service ID and private data
//! carry the socket 5-tuple (Annex A11 §A11.4, §A11.5).

use super::iwarp::{IwarpConn, Space};
use super::{Conn, IpCm, IpCmCommand, IpCmError, IpCmEvent, IpConnId, Phase};
use crate::cm::{ConnId, ConnectParams};
use crate::time::Instant;
use ipoib_wire::cm::TransportServiceType;
use ipoib_wire::private_data::ip_cm::{MAJOR_VERSION, MAX_CONSUMER_LEN, MINOR_VERSION};
use ipoib_wire::private_data::{IpCmReqRepr, IpPair};
use ipoib_wire::sa::PathRecordRepr;
use ipoib_wire::Gid;
use std::net::{IpAddr, SocketAddr};

/// The REQ private data of a connection from `src` to `dst`: the Annex A11 Table 1 header
/// (MajV 0, MinV 0, IPV 4 or 6, Res 0, the source port, the source and destination addresses,
/// IPv4 in the low 32 bits after 12 zero bytes) and then the consumer's bytes (Annex A11 CA11-1,
/// CA11-5). `None` when the families differ or `consumer` is longer than 56 bytes. The CM pads
/// the REQ's 92-byte field with zeros, as Linux's `cma_format_hdr` into a zeroed buffer does.
pub fn req_private_data(src: SocketAddr, dst: IpAddr, consumer: &[u8]) -> Option<Vec<u8>> {
    let addrs = match (src.ip(), dst) {
        (IpAddr::V4(s), IpAddr::V4(d)) => IpPair::V4 { src: s, dst: d },
        (IpAddr::V6(s), IpAddr::V6(d)) => IpPair::V6 { src: s, dst: d },
        _ => return None,
    };
    if consumer.len() > MAX_CONSUMER_LEN {
        return None;
    }
    let repr = IpCmReqRepr {
        major_version: MAJOR_VERSION,
        minor_version: MINOR_VERSION,
        source_port: src.port(),
        addrs,
        consumer_private_data: consumer,
    };
    let mut v = vec![0u8; repr.buffer_len()];
    repr.emit(&mut v).ok()?;
    Some(v)
}

/// True for an IPv6 link-local address (fe80::/10).
fn link_local(ip: &IpAddr) -> bool {
    matches!(ip, IpAddr::V6(a) if a.segments()[0] & 0xffc0 == 0xfe80)
}

impl IpCm {
    /// Connects to `dst` for IP `protocol` (6 TCP, 17 UDP, 132 SCTP, ...) from `src_port`
    /// (`None` or `Some(0)`: an ephemeral port) with up to 56 bytes of consumer private data
    /// (Annex A11 Table 1 bytes 36-91). The source address is ours of the destination's family,
    /// link-local for a link-local destination (Linux picks the route's source address). The host
    /// is asked to resolve the address ([`IpCmCommand::Resolve`]); the consumer hears
    /// [`IpCmEvent::Established`] or why not.
    pub fn connect(
        &mut self,
        now: Instant,
        protocol: u8,
        dst: SocketAddr,
        src_port: Option<u16>,
        private_data: &[u8],
    ) -> Result<IpConnId, IpCmError> {
        if private_data.len() > MAX_CONSUMER_LEN {
            return Err(IpCmError::PrivateDataTooLong(private_data.len()));
        }
        self.open(now, protocol, dst, src_port, private_data, None)
    }

    /// A new connection record, resolving its address; `iwarp` is the iWarp-emulation part (its
    /// stream is made once the source address is known), whose port space it takes.
    pub(super) fn open(
        &mut self,
        now: Instant,
        protocol: u8,
        dst: SocketAddr,
        src_port: Option<u16>,
        private_data: &[u8],
        iwarp: Option<Box<IwarpConn>>,
    ) -> Result<IpConnId, IpCmError> {
        if dst.ip().is_unspecified() || dst.ip().is_multicast() {
            return Err(IpCmError::Invalid("destination must be a unicast address"));
        }
        if dst.port() == 0 {
            return Err(IpCmError::Invalid("destination port 0"));
        }
        let src_ip = self.source_for(dst.ip())?;
        let space = match &iwarp {
            Some(i) => Space::Iwarp(i.sid),
            None => Space::Ip(protocol),
        };
        let port = match src_port {
            None | Some(0) => self.ephemeral_port(space)?,
            Some(p) if self.port_in_use(space, p) => return Err(IpCmError::AddressInUse),
            Some(p) => p,
        };
        let id = self.alloc_conn_id();
        let waiting = self
            .conns
            .values()
            .any(|c| c.phase == Phase::Resolving && c.remote.ip() == dst.ip());
        self.conns.insert(
            id,
            Conn {
                active: true,
                protocol,
                local: SocketAddr::new(src_ip, port),
                remote: dst,
                phase: Phase::Resolving,
                cm: None,
                private_data: private_data.to_vec(),
                deadline: None,
                iwarp,
            },
        );
        self.set_deadline(id, Some(now + self.cfg.resolve_timeout));
        // One question per address at a time: the answer serves every connection waiting on it.
        if !waiting {
            self.commands
                .push_back(IpCmCommand::Resolve { ip: dst.ip() });
        }
        Ok(id)
    }

    fn source_for(&self, dst: IpAddr) -> Result<IpAddr, IpCmError> {
        let same_family = |a: &&IpAddr| a.is_ipv4() == dst.is_ipv4() && !a.is_unspecified();
        let addrs = &self.cfg.local_addrs;
        addrs
            .iter()
            .filter(same_family)
            .find(|a| link_local(a) == link_local(&dst))
            .or_else(|| addrs.iter().find(same_family))
            .copied()
            .ok_or(IpCmError::AddressNotAvailable)
    }

    /// The host's answer to [`IpCmCommand::Resolve`]: the GID of `ip`, or `None` when it could not
    /// be found (every connection waiting on it reports [`IpCmEvent::AddressError`]).
    pub fn handle_resolved(&mut self, now: Instant, ip: IpAddr, gid: Option<Gid>) {
        let waiting: Vec<IpConnId> = self
            .conns
            .iter()
            .filter(|(_, c)| c.phase == Phase::Resolving && c.remote.ip() == ip)
            .map(|(id, _)| *id)
            .collect();
        if waiting.is_empty() {
            self.count("resolution for no connection");
        }
        for id in waiting {
            let Some(dgid) = gid else {
                self.fail_early(id, IpCmEvent::AddressError { conn: id });
                continue;
            };
            let asked = self.conns.values().any(|c| c.phase == Phase::Routing(dgid));
            if let Some(c) = self.conns.get_mut(&id) {
                c.phase = Phase::Routing(dgid);
            }
            self.set_deadline(id, Some(now + self.cfg.route_timeout));
            if !asked {
                self.commands.push_back(IpCmCommand::PathQuery { dgid });
            }
        }
    }

    /// The host's answer to [`IpCmCommand::PathQuery`]: a PathRecord from our port to `dgid`, or
    /// `None` (every connection waiting on it reports [`IpCmEvent::RouteError`]). Each waiting
    /// connection's REQ goes to the host as [`IpCmCommand::CmConnect`].
    pub fn handle_path(&mut self, now: Instant, dgid: Gid, path: Option<PathRecordRepr>) {
        let _ = now;
        let waiting: Vec<IpConnId> = self
            .conns
            .iter()
            .filter(|(_, c)| c.phase == Phase::Routing(dgid))
            .map(|(id, _)| *id)
            .collect();
        if waiting.is_empty() {
            self.count("path for no connection");
        }
        for id in waiting {
            let Some(pr) = path else {
                self.fail_early(id, IpCmEvent::RouteError { conn: id });
                continue;
            };
            self.set_deadline(id, None);
            match self.req_params(id, &pr) {
                Some(params) => {
                    if let Some(c) = self.conns.get_mut(&id) {
                        c.phase = Phase::Starting(false);
                        c.private_data = Vec::new();
                    }
                    self.commands
                        .push_back(IpCmCommand::CmConnect { conn: id, params });
                }
                None => self.fail_early(id, IpCmEvent::ConnectError { conn: id }),
            }
        }
    }

    /// The REQ of connection `id` over `pr`: service ID from (protocol, destination port)
    /// (Annex A11 CA11-6), private data header then consumer data (CA11-1, CA11-5); for iWarp
    /// emulation the iWarp service ID and the Hello ([`IpCm::connect_iwarp`]).
    fn req_params(&mut self, id: IpConnId, pr: &PathRecordRepr) -> Option<ConnectParams> {
        let c = self.conns.get(&id)?;
        let private_data = match &c.iwarp {
            Some(i) => i.req_private_data(&c.private_data)?,
            None => req_private_data(c.local, c.remote.ip(), &c.private_data)?,
        };
        let service_id = c.space().service_id(c.remote.port());
        let iwarp = c.iwarp.is_some();
        let psn = self.rng.next_u24();
        let cfg = &self.cfg;
        let mut p = ConnectParams::over_path(pr, cfg.ca_ack_delay, service_id, 0, psn);
        // iWarp emulation runs on RC whatever the service's default (iWarp mapping §II).
        p.transport = if iwarp {
            TransportServiceType::Rc
        } else {
            cfg.transport
        };
        p.responder_resources = cfg.responder_resources;
        p.initiator_depth = cfg.initiator_depth;
        p.retry_count = cfg.retry_count & 7;
        p.rnr_retry_count = cfg.rnr_retry_count & 7;
        p.private_data = private_data;
        Some(p)
    }

    /// The host sent the REQ of [`IpCmCommand::CmConnect`] as CM connection `cm`, or could not
    /// (`None`: the consumer hears [`IpCmEvent::ConnectError`]).
    pub fn cm_connect_started(&mut self, now: Instant, conn: IpConnId, cm: Option<ConnId>) {
        let _ = now;
        let phase = self.conns.get(&conn).map(|c| c.phase);
        let Some(Phase::Starting(abandoned)) = phase else {
            // Not waiting for this: withdraw what the host started.
            self.count("connect report for no connection");
            if let Some(cm) = cm {
                self.commands
                    .push_back(IpCmCommand::CmDisconnect { conn: cm });
            }
            return;
        };
        let Some(cm) = cm else {
            if abandoned {
                self.forget(conn);
            } else {
                self.fail_early(conn, IpCmEvent::ConnectError { conn });
            }
            return;
        };
        self.by_cm.insert(cm, Some(conn));
        if let Some(c) = self.conns.get_mut(&conn) {
            c.cm = Some(cm);
            c.phase = if abandoned {
                Phase::Closing
            } else {
                Phase::Connecting
            };
        }
        if abandoned {
            self.commands
                .push_back(IpCmCommand::CmDisconnect { conn: cm });
        }
    }
}
