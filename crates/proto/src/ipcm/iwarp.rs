//! iWarp emulation behind the rdma_cm-shaped API ("Mapping of iWarp/TCP connections to
//! InfiniBand", v0.30, cited as "iWarp mapping"): the listener and the connect on the iWarp service
//! IDs, the Hello checks of the server, the HelloReply checks of the client, and the port spaces
//! that keep iWarp and Annex A11 apart. The design is in the module docs of [`super`], section
//! "iWarp emulation".

use super::server::{takes, REP_PRIVATE_DATA_LEN};
use super::{Conn, IpCm, IpCmCommand, IpCmError, IpCmEvent, IpConnId, IpListenId, Listener, Phase};
#[cfg(doc)]
use crate::cm::CmEvent;
use crate::cm::ConnId;
use crate::iwarp::{ClientConfig, HandshakeError, IwarpStream, StreamConfig, MAJOR_VERSION};
use crate::time::Instant;
use ipoib_wire::cm::{RejReason, ReqRepr, TransportServiceType};
use ipoib_wire::private_data::ip_cm::{REJ_REASON_CONSUMER_REJECT, REQ_PRIVATE_DATA_LEN};
use ipoib_wire::private_data::iwarp::{HELLO_LEN, HELLO_REPLY_LEN};
use ipoib_wire::private_data::service_id::{
    ip_cm_service_id, iwarp_service_id, rdma_cm_service_id,
};
use ipoib_wire::private_data::{
    classify_with_data, unicast_source, v4_padding, FlowControl, Hello, HelloReplyRepr, HelloRepr,
    IpCmAriCode, IpCmReject, IpCmServerPolicy, IpPair, IwarpMid, RdmaPortSpace, ServiceKind,
    SuggestedValue, V4Padding,
};
use std::net::{IpAddr, Ipv4Addr, SocketAddr};

/// TCP's IP protocol number: iWarp emulates TCP connections (iWarp mapping §II).
const TCP: u8 = 6;
/// The most consumer bytes after the Hello in a REQ (92 - 64).
pub const IWARP_MAX_REQ_CONSUMER_LEN: usize = REQ_PRIVATE_DATA_LEN - HELLO_LEN;
/// The most consumer bytes after the HelloReply in a REP (196 - 24).
pub const IWARP_MAX_REP_CONSUMER_LEN: usize = REP_PRIVATE_DATA_LEN - HELLO_REPLY_LEN;
/// The most private data a REJ carries (IBA 1 §12.6 Table 108).
const REJ_PRIVATE_DATA_LEN: usize = 148;

impl Listener {
    /// The port space the listener holds its port in.
    pub(crate) fn space(&self) -> Space {
        match &self.iwarp {
            Some(i) => Space::Iwarp(i.sid),
            None => Space::Ip(self.protocol),
        }
    }
}

/// A port space: its own ports and its own service IDs, as rdma_cm's port spaces.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Space {
    /// Annex A11 with this IP protocol (CA11-6).
    Ip(u8),
    /// iWarp emulation on one of its service-ID formats (iWarp mapping, IB Service IDs).
    Iwarp(IwarpServiceId),
}

impl Space {
    /// The service ID of `port` in this space.
    pub(crate) fn service_id(self, port: u16) -> u64 {
        match self {
            Space::Ip(protocol) => ip_cm_service_id(protocol, port),
            Space::Iwarp(sid) => sid.service_id(port),
        }
    }
}

impl Conn {
    /// The port space of the connection (its local port's, when active).
    pub(crate) fn space(&self) -> Space {
        match &self.iwarp {
            Some(i) => Space::Iwarp(i.sid),
            None => Space::Ip(self.protocol),
        }
    }
}

/// The service IDs an iWarp-emulated connection uses (iWarp mapping, "IB Service ID's used").
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum IwarpServiceId {
    /// `IBTA_IWARP_PREFIX` + TCP port: `0x0000000000020000 + port`.
    Iwarp,
    /// SDP's service IDs, `0x0000000000010000 + port` ("Optionally it is possible to use SDP's
    /// Service ID format, and distinguish between SDP and raw iWarp emulation based on the FlowC
    /// field"): only FlowC 1 is iWarp there, FlowC 0 is SDP.
    Sdp,
}

impl IwarpServiceId {
    /// The service ID of a listener on TCP `port`.
    pub fn service_id(self, port: u16) -> u64 {
        match self {
            IwarpServiceId::Iwarp => iwarp_service_id(port),
            IwarpServiceId::Sdp => rdma_cm_service_id(RdmaPortSpace::Sdp, port),
        }
    }

    /// The format of `service_id`, if it is one of the two.
    fn of(service_id: u64) -> IwarpServiceId {
        if service_id >> 16 == 1 {
            IwarpServiceId::Sdp
        } else {
            IwarpServiceId::Iwarp
        }
    }
}

/// What the client asks for in its Hello.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IwarpConnect {
    /// Our receive buffers (LocalRcvSz, `bufs`) and send queue.
    pub stream: StreamConfig,
    /// FlowC: 0 the transport owns flow control (SDP's BSDH and credits), 1 the ULP.
    pub flow_control: FlowControl,
    /// DesRemRcvSz: the receive size we would like the server's buffers to have; 0 leaves it to
    /// the server.
    pub desired_remote_recv_size: u32,
    /// The service IDs to connect on ([`IwarpServiceId::Sdp`] needs FlowC 1).
    pub service_id: IwarpServiceId,
}

impl IwarpConnect {
    /// [`StreamConfig::new`], asking the server for buffers of our own size, on the iWarp
    /// service ID.
    pub fn new(flow_control: FlowControl) -> IwarpConnect {
        let stream = StreamConfig::new();
        IwarpConnect {
            stream,
            flow_control,
            desired_remote_recv_size: stream.recv_size,
            service_id: IwarpServiceId::Iwarp,
        }
    }
}

/// An iWarp listener's settings.
#[derive(Debug, Clone, Copy)]
pub(crate) struct IwarpListen {
    pub sid: IwarpServiceId,
    pub stream: StreamConfig,
}

/// The iWarp part of a connection record.
#[derive(Debug)]
pub(crate) struct IwarpConn {
    pub sid: IwarpServiceId,
    /// The stream (client: from the connect; server: from the Hello), until the host takes it.
    pub stream: Option<IwarpStream>,
    /// Client: the Hello for the REQ.
    pub hello: Option<HelloRepr>,
    /// Server: the HelloReply for the REP.
    pub reply: Option<HelloReplyRepr>,
    /// Established: the stream may be taken.
    pub up: bool,
}

impl IwarpConn {
    fn new(sid: IwarpServiceId) -> IwarpConn {
        IwarpConn {
            sid,
            stream: None,
            hello: None,
            reply: None,
            up: false,
        }
    }

    /// The REQ's private data: the Hello, then the consumer's bytes (the CM pads to 92).
    pub(crate) fn req_private_data(&self, consumer: &[u8]) -> Option<Vec<u8>> {
        let hello = self.hello?;
        let mut v = vec![0u8; HELLO_LEN];
        hello.emit(&mut v).ok()?;
        v.extend_from_slice(consumer);
        (v.len() <= REQ_PRIVATE_DATA_LEN).then_some(v)
    }
}

/// Why a server refuses a REQ for an iWarp listener.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Refusal {
    /// Not an RC REQ (iWarp mapping §II: "open an InfiniBand RC connection").
    NotRc(TransportServiceType),
    /// Shorter than a Hello, or MID not 0.
    NotHello,
    /// MajVer other than ours.
    MajorVersion(u8),
    /// IPVer not one we take.
    IpVersion(u8),
    /// An IPv4 source address badly padded.
    SourceAddress,
    /// An IPv4 destination address badly padded.
    DestinationAddress,
    /// A source that is not a unicast address (`unicast_source`, as the Annex A11 server).
    NotUnicastSource(IpAddr),
    /// The destination is not ours, or no listener of the port takes it.
    UnknownAddress(IpAddr),
    /// [`IwarpStream::server`] refused (FlowC, LocalRcvSz, our settings in that mode).
    Handshake(HandshakeError),
}

impl Refusal {
    /// The Table 4 ARI (Annex A11 §A11.7), layer 0x00.
    fn ari(&self, policy: &IpCmServerPolicy) -> IpCmReject {
        match *self {
            Refusal::MajorVersion(_) | Refusal::Handshake(HandshakeError::Version(_)) => {
                IpCmReject {
                    code: IpCmAriCode::MajorVersion,
                    suggested: SuggestedValue::byte(MAJOR_VERSION),
                }
            }
            Refusal::IpVersion(_) => IpCmReject {
                code: IpCmAriCode::Ipv,
                suggested: match (policy.ipv4, policy.ipv6) {
                    (true, _) => SuggestedValue::byte(4),
                    (false, true) => SuggestedValue::byte(6),
                    _ => SuggestedValue::NONE,
                },
            },
            Refusal::SourceAddress => IpCmReject::new(IpCmAriCode::SourceIpAddress),
            Refusal::DestinationAddress => IpCmReject::new(IpCmAriCode::DestinationIpAddress),
            Refusal::UnknownAddress(_) => IpCmReject::new(IpCmAriCode::UnknownIpAddress),
            Refusal::NotRc(_)
            | Refusal::NotHello
            | Refusal::NotUnicastSource(_)
            | Refusal::Handshake(_) => IpCmReject::new(IpCmAriCode::Unspecified),
        }
    }

    /// The counter's name.
    fn counter(&self) -> &'static str {
        match self {
            Refusal::NotRc(_) => "iwarp: not RC",
            Refusal::NotHello => "iwarp: not a Hello",
            Refusal::MajorVersion(_) => "iwarp: major version",
            Refusal::IpVersion(_) => "iwarp: IP version",
            Refusal::SourceAddress => "iwarp: source address",
            Refusal::DestinationAddress => "iwarp: destination address",
            Refusal::NotUnicastSource(_) => "iwarp: source not unicast",
            Refusal::UnknownAddress(_) => "iwarp: unknown destination",
            Refusal::Handshake(e) => handshake_counter(true, e),
        }
    }

    /// The reason in words, for the REJ's private data.
    fn text(&self) -> String {
        let why = match self {
            Refusal::NotRc(t) => format!("transport {} (iWarp emulation runs on RC)", t.name()),
            Refusal::NotHello => "no Hello in the REQ".to_string(),
            Refusal::MajorVersion(v) => format!("major version {v}, we speak {MAJOR_VERSION}"),
            Refusal::IpVersion(v) => format!("IP version {v} not supported"),
            Refusal::SourceAddress => "IPv4 source address badly padded".to_string(),
            Refusal::DestinationAddress => "IPv4 destination address badly padded".to_string(),
            Refusal::NotUnicastSource(a) => format!("source {a} is not a unicast address"),
            Refusal::UnknownAddress(a) => format!("no listener for {a}"),
            Refusal::Handshake(e) => e.to_string(),
        };
        format!("iWarp Hello refused: {why}")
    }
}

/// A counter name for a refused Hello (`hello`) or HelloReply.
fn handshake_counter(hello: bool, e: &HandshakeError) -> &'static str {
    match (hello, e) {
        (true, HandshakeError::Version(_)) => "iwarp Hello: major version",
        (true, HandshakeError::FlowControl(_)) => "iwarp Hello: FlowC reserved",
        (true, HandshakeError::RecvSize(_)) => "iwarp Hello: receive size",
        (true, _) => "iwarp Hello: our settings",
        (false, HandshakeError::Version(_)) => "iwarp HelloReply: major version",
        (false, HandshakeError::RecvSize(_)) => "iwarp HelloReply: ActRcvSz",
        (false, _) => "iwarp HelloReply: unexpected",
    }
}

/// The Hello checks before the stream's own (the `ipcm` module docs, "iWarp emulation"), on the REQ's private data.
fn check_hello(
    data: &[u8],
    policy: &IpCmServerPolicy,
    local_addrs: &[IpAddr],
) -> Result<HelloRepr, Refusal> {
    let p = Hello::new_checked(data).map_err(|_| Refusal::NotHello)?;
    if p.mid() != IwarpMid::Hello {
        return Err(Refusal::NotHello);
    }
    if p.major_version() != MAJOR_VERSION {
        return Err(Refusal::MajorVersion(p.major_version()));
    }
    let ipv = p.ip_version();
    let supported = match ipv {
        4 => policy.ipv4,
        6 => policy.ipv6,
        _ => false,
    };
    if !supported {
        return Err(Refusal::IpVersion(ipv));
    }
    if ipv == 4 {
        let ok = |f: &[u8]| match v4_padding(f) {
            V4Padding::Zero => true,
            V4Padding::Mapped => policy.accept_mapped_ipv4,
            V4Padding::Invalid => false,
        };
        if !ok(p.source_ip_field()) {
            return Err(Refusal::SourceAddress);
        }
        if !ok(p.destination_ip_field()) {
            return Err(Refusal::DestinationAddress);
        }
    }
    let hello = HelloRepr::parse(data).map_err(|_| Refusal::NotHello)?;
    let (src, dst) = ends(hello.addrs);
    if !unicast_source(src) {
        return Err(Refusal::NotUnicastSource(src));
    }
    if !local_addrs.is_empty() && !local_addrs.contains(&dst) {
        return Err(Refusal::UnknownAddress(dst));
    }
    Ok(hello)
}

/// (source, destination) of a pair.
fn ends(addrs: IpPair) -> (IpAddr, IpAddr) {
    match addrs {
        IpPair::V4 { src, dst } => (src.into(), dst.into()),
        IpPair::V6 { src, dst } => (src.into(), dst.into()),
    }
}

/// The pair of two addresses of one family.
fn pair(src: IpAddr, dst: IpAddr) -> Option<IpPair> {
    match (src, dst) {
        (IpAddr::V4(src), IpAddr::V4(dst)) => Some(IpPair::V4 { src, dst }),
        (IpAddr::V6(src), IpAddr::V6(dst)) => Some(IpPair::V6 { src, dst }),
        _ => None,
    }
}

impl IpCm {
    /// Listens for iWarp-emulated connections to `addr` (ours, or `0.0.0.0` / `::`) on TCP
    /// `port` (0: an ephemeral one), on the service IDs of `service_id` (iWarp mapping, "IB Service
    /// ID's used"); each accepted connection's stream gets `stream`'s buffers. `Err(Iwarp)` when
    /// `stream` cannot carry a byte in either mode.
    pub fn listen_iwarp(
        &mut self,
        addr: IpAddr,
        port: u16,
        stream: StreamConfig,
        service_id: IwarpServiceId,
    ) -> Result<IpListenId, IpCmError> {
        // The laxest mode's limits (FlowC 1); FlowC 0's are checked per Hello.
        if stream.recv_size == 0 {
            return Err(IpCmError::Iwarp(HandshakeError::RecvSize(0)));
        }
        if stream.recv_depth == 0 {
            return Err(IpCmError::Iwarp(HandshakeError::RecvDepth(0)));
        }
        if stream.send_buffer == 0 {
            return Err(IpCmError::Iwarp(HandshakeError::SendBuffer));
        }
        let iwarp = IwarpListen {
            sid: service_id,
            stream,
        };
        self.bind(TCP, addr, port, Some(iwarp))
    }

    /// Connects an iWarp-emulated connection to `dst` (a TCP port) from `src_port` (`None` or
    /// `Some(0)`: ephemeral): the REQ carries the service ID of `cfg.service_id` and the Hello `cfg` describes
    /// (iWarp mapping Figure 1), then up to 28 bytes of `private_data`. The stream is
    /// [`IpCm::iwarp_stream_mut`]'s from now on; the consumer hears [`IpCmEvent::Established`] once
    /// the REP's HelloReply passed [`IwarpStream::on_reply`].
    pub fn connect_iwarp(
        &mut self,
        now: Instant,
        dst: SocketAddr,
        src_port: Option<u16>,
        cfg: &IwarpConnect,
        private_data: &[u8],
    ) -> Result<IpConnId, IpCmError> {
        if private_data.len() > IWARP_MAX_REQ_CONSUMER_LEN {
            return Err(IpCmError::PrivateDataTooLong(private_data.len()));
        }
        if cfg.service_id == IwarpServiceId::Sdp && cfg.flow_control != FlowControl::Ulp {
            return Err(IpCmError::Invalid(
                "on SDP's service IDs only FlowC 1 is iWarp emulation",
            ));
        }
        let client = |addrs, local_port| ClientConfig {
            stream: cfg.stream,
            flow_control: cfg.flow_control,
            addrs,
            local_port,
            desired_remote_recv_size: cfg.desired_remote_recv_size,
        };
        // The settings, checked before anything starts (the addresses do not matter to them).
        let probe = IpPair::V4 {
            src: Ipv4Addr::UNSPECIFIED,
            dst: Ipv4Addr::UNSPECIFIED,
        };
        IwarpStream::client(&client(probe, 0)).map_err(IpCmError::Iwarp)?;
        let conn = Box::new(IwarpConn::new(cfg.service_id));
        let id = self.open(now, TCP, dst, src_port, private_data, Some(conn))?;
        let Some(c) = self.conns.get_mut(&id) else {
            return Err(IpCmError::Unknown);
        };
        let made = pair(c.local.ip(), dst.ip())
            .ok_or(IpCmError::AddressNotAvailable)
            .and_then(|addrs| {
                IwarpStream::client(&client(addrs, c.local.port())).map_err(IpCmError::Iwarp)
            });
        match (made, c.iwarp.as_mut()) {
            (Ok((stream, hello)), Some(i)) => {
                i.stream = Some(stream);
                i.hello = Some(hello);
                Ok(id)
            }
            (Err(e), _) => {
                // Not reached: the settings passed above and the source is of dst's family.
                self.forget(id);
                Err(e)
            }
            (Ok(_), None) => Err(IpCmError::Unknown),
        }
    }

    /// The iWarp stream of `conn`, while the agent holds it.
    pub fn iwarp_stream(&self, conn: IpConnId) -> Option<&IwarpStream> {
        self.conns.get(&conn)?.iwarp.as_ref()?.stream.as_ref()
    }

    /// The iWarp stream of `conn`, while the agent holds it: the host posts its first receive
    /// buffers from here before the REQ or REP leaves (the `ipcm` module docs, "iWarp emulation").
    pub fn iwarp_stream_mut(&mut self, conn: IpConnId) -> Option<&mut IwarpStream> {
        self.conns.get_mut(&conn)?.iwarp.as_mut()?.stream.as_mut()
    }

    /// Hands the iWarp stream of an established connection to the host, which pumps it over the
    /// RC QP from then on; `None` before [`IpCmEvent::Established`], for an Annex A11
    /// connection, or once taken.
    pub fn take_iwarp_stream(&mut self, conn: IpConnId) -> Option<IwarpStream> {
        let i = self.conns.get_mut(&conn)?.iwarp.as_mut()?;
        if !i.up {
            return None;
        }
        i.stream.take()
    }

    /// The connection of CM connection `cm`, if it is ours and still open.
    pub fn conn_of(&self, cm: ConnId) -> Option<IpConnId> {
        self.ours(cm)
    }

    /// A REQ the Annex A11 path does not take: iWarp emulation (on its own or SDP's service IDs,
    /// told apart by content with `classify_with_data`), or another service sharing those service
    /// IDs (REJ 8). False for the A11 range and anything else.
    pub(super) fn on_other_request(&mut self, now: Instant, cm: ConnId, req: &ReqRepr) -> bool {
        let _ = now;
        match classify_with_data(req.service_id, &req.private_data) {
            ServiceKind::IwarpEmulation { port } => {
                let sid = IwarpServiceId::of(req.service_id);
                if let Err(r) = self.on_iwarp_request(cm, sid, port, req) {
                    self.refuse_iwarp(cm, r);
                }
                true
            }
            ServiceKind::RdmaCm { .. } => {
                // Linux rdma_cm's IPOIB port space, or SDP: services we do not run.
                self.count("iwarp: another service's REQ");
                self.by_cm.insert(cm, None);
                self.commands.push_back(IpCmCommand::CmReject {
                    conn: cm,
                    reason: RejReason::InvalidServiceId,
                    ari: Vec::new(),
                    private_data: Vec::new(),
                });
                true
            }
            _ => false,
        }
    }

    /// A REQ with a Hello on the service IDs `sid` of TCP `port`: the checks of the `ipcm` module docs,
    /// then the consumer's [`IpCmEvent::ConnectRequest`].
    fn on_iwarp_request(
        &mut self,
        cm: ConnId,
        sid: IwarpServiceId,
        port: u16,
        req: &ReqRepr,
    ) -> Result<(), Refusal> {
        if req.transport_service_type != TransportServiceType::Rc {
            return Err(Refusal::NotRc(req.transport_service_type));
        }
        let hello = check_hello(&req.private_data, &self.cfg.policy, &self.cfg.local_addrs)?;
        let (src, dst) = ends(hello.addrs);
        let (listen, cfg) = self
            .listeners
            .iter()
            .find(|(_, l)| l.space() == Space::Iwarp(sid) && l.port == port && takes(l.addr, dst))
            .and_then(|(id, l)| Some((*id, l.iwarp?.stream)))
            .ok_or(Refusal::UnknownAddress(dst))?;
        let (stream, reply) = IwarpStream::server(&cfg, &hello).map_err(Refusal::Handshake)?;
        let id = self.alloc_conn_id();
        let src = SocketAddr::new(src, hello.local_port);
        let dst = SocketAddr::new(dst, port);
        let mut iwarp = Box::new(IwarpConn::new(sid));
        iwarp.stream = Some(stream);
        iwarp.reply = Some(reply);
        self.conns.insert(
            id,
            Conn {
                active: false,
                protocol: TCP,
                local: dst,
                remote: src,
                phase: Phase::Requested,
                cm: Some(cm),
                private_data: Vec::new(),
                deadline: None,
                iwarp: Some(iwarp),
            },
        );
        self.by_cm.insert(cm, Some(id));
        self.events.push_back(IpCmEvent::ConnectRequest {
            conn: id,
            listen,
            protocol: TCP,
            src,
            dst,
            minor_version: hello.minor_version,
            private_data: req.private_data.get(HELLO_LEN..).unwrap_or(&[]).to_vec(),
        });
        Ok(())
    }

    /// REJ 28 with the Table 4 ARI of `r` and the reason in words (the `ipcm` module docs).
    fn refuse_iwarp(&mut self, cm: ConnId, r: Refusal) {
        let reject = r.ari(&self.cfg.policy);
        let mut ari = vec![0u8; reject.buffer_len()];
        // The buffer is buffer_len() bytes.
        let _ = reject.emit(&mut ari);
        let mut text = r.text().into_bytes();
        text.truncate(REJ_PRIVATE_DATA_LEN);
        self.count(r.counter());
        self.by_cm.insert(cm, None);
        self.commands.push_back(IpCmCommand::CmReject {
            conn: cm,
            reason: RejReason::from(REJ_REASON_CONSUMER_REJECT),
            ari,
            private_data: text,
        });
    }

    /// The REP's private data for [`IpCm::accept`]: for iWarp the HelloReply, then at most 172
    /// bytes of the consumer's; for Annex A11 the consumer's alone.
    pub(super) fn rep_private_data(
        &self,
        conn: IpConnId,
        consumer: &[u8],
    ) -> Result<Vec<u8>, IpCmError> {
        let reply = self
            .conns
            .get(&conn)
            .and_then(|c| c.iwarp.as_ref())
            .and_then(|i| i.reply);
        let Some(reply) = reply else {
            return Ok(consumer.to_vec());
        };
        if consumer.len() > IWARP_MAX_REP_CONSUMER_LEN {
            return Err(IpCmError::PrivateDataTooLong(consumer.len()));
        }
        let mut v = vec![0u8; HELLO_REPLY_LEN];
        // The buffer is HELLO_REPLY_LEN bytes.
        let _ = reply.emit(&mut v);
        v.extend_from_slice(consumer);
        Ok(v)
    }

    /// The CM's [`CmEvent::Established`] for connection `id` (CM connection `cm`) with the REP's
    /// or RTU's `private_data`: what the consumer's event carries, or `None` when the client
    /// refused the HelloReply (it then releases the connection and reports
    /// [`IpCmEvent::ConnectError`]).
    pub(super) fn iwarp_established(
        &mut self,
        id: IpConnId,
        cm: ConnId,
        private_data: &[u8],
    ) -> Option<Vec<u8>> {
        let c = self.conns.get_mut(&id)?;
        let active = c.active;
        let Some(i) = c.iwarp.as_mut() else {
            return Some(private_data.to_vec());
        };
        if !active {
            i.up = true;
            return Some(private_data.to_vec());
        }
        let checked = match (HelloReplyRepr::parse(private_data), i.stream.as_mut()) {
            (Ok(reply), Some(s)) => s.on_reply(&reply).map_err(|e| handshake_counter(false, &e)),
            (Err(_), _) => Err("iwarp: REP without a HelloReply"),
            (Ok(_), None) => Err("iwarp HelloReply: unexpected"),
        };
        match checked {
            Ok(()) => {
                i.up = true;
                Some(private_data.get(HELLO_REPLY_LEN..).unwrap_or(&[]).to_vec())
            }
            Err(why) => {
                i.stream = None;
                c.phase = Phase::Closing;
                self.count(why);
                self.commands
                    .push_back(IpCmCommand::CmDisconnect { conn: cm });
                self.events.push_back(IpCmEvent::ConnectError { conn: id });
                None
            }
        }
    }
}
