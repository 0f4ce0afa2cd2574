//! The RDMA IP CM service (IBTA Annex A11) as a protocol agent with no IO: connections named by
//! IP addresses and ports, set up over the Communication Manager, shaped like Linux's rdma_cm
//! (`rdma_listen`, `rdma_connect`, `rdma_accept`, `rdma_reject`, `rdma_disconnect` and its
//! events).
//!
//! The agent owns no CM, no QP and no neighbour table. Like IPoIB connected mode
//! ([`crate::ipoib::Interface::poll_cm_command`]) it says what to do through values, and its host
//! carries them out on the host's CM agent ([`crate::cm::Cm`]), HCA and IPoIB interface.
//!
//! # The host's contract
//!
//! The host drains [`IpCm::poll_command`] after every call into the agent and carries out each
//! [`IpCmCommand`], reporting back as the command says:
//!
//! | command | the host does | and reports |
//! |---|---|---|
//! | [`IpCmCommand::Resolve`] `{ip}` | looks the IP address up in the IPoIB neighbour table (ARP or ND if it must) | [`IpCm::handle_resolved`]`(ip, Some(gid))`, or `None` when it cannot |
//! | [`IpCmCommand::PathQuery`] `{dgid}` | finds a PathRecord from its port's GID to `dgid` (the IPoIB path cache or an SA query) | [`IpCm::handle_path`]`(dgid, Some(record))`, or `None` |
//! | [`IpCmCommand::CmListen`] `{service_id, mask}` | [`crate::cm::Cm::listen`] | [`IpCm::cm_listening`] with the CM's listener (or `None`), before it hands the CM any MAD |
//! | [`IpCmCommand::CmUnlisten`] | [`crate::cm::Cm::unlisten`] | nothing |
//! | [`IpCmCommand::CmConnect`] `{conn, params}` | makes an RC (or UC) QP, moves it to Init, fills `params.qpn`, [`crate::cm::Cm::connect`] | [`IpCm::cm_connect_started`] with the CM connection (or `None`) |
//! | [`IpCmCommand::CmAccept`] | makes a QP, [`crate::cm::Cm::accept`], programs RTR and RTS (and calls [`crate::cm::Cm::notify_established`] if a packet arrives before the RTU) | on failure: rejects with reason 1 (no QP) and calls [`IpCm::cm_accept_failed`] |
//! | [`IpCmCommand::CmReject`] | [`crate::cm::Cm::reject`] with the reason, ARI and private data given | nothing |
//! | [`IpCmCommand::CmDisconnect`] | [`crate::cm::Cm::disconnect`] with no private data | nothing |
//!
//! The host hands the agent every CM event [`IpCm::owns`] claims, through
//! [`IpCm::handle_cm_event`], after its own QP work for that event (Established: RTR/RTS on the
//! active side; Rejected, TimedOut, Disconnected: the QP to Error; TimeWaitExit: the QP may be
//! destroyed; SidrRequest: [`crate::cm::Cm::sidr_reply`] with status 1, the service having no UD
//! QP to give). Several users share one host's CM with [`crate::cm::Cm::poll_event_where`]:
//! `cm.poll_event_where(|e| ipcm.owns(e))`. The host calls [`IpCm::handle_timeout`] when
//! [`IpCm::poll_timeout`] is due (address and route resolution give up then), and tells the agent
//! its IP addresses ([`IpCmConfig::local_addrs`], [`IpCm::set_local_addrs`]) as they change. The
//! host may stop working on a question at the resolution timeout after it was asked: a question
//! that connections with later deadlines still wait on is asked again when its asker gives up.
//!
//! A host's loop, in outline (the tests' `Host::run` is a complete one):
//!
//! ```text
//! loop {
//!     while let Some(c) = ipcm.poll_command() { carry out c; report back }
//!     while let Some(e) = cm.poll_event_where(|e| ipcm.owns(e)) {
//!         QP work for e; ipcm.handle_cm_event(now, &e)
//!     }
//!     while let Some(e) = ipcm.poll_event() { hand e to the consumer }
//!     send what cm.poll_transmit gives; sleep until the earliest of cm.poll_timeout(),
//!     ipcm.poll_timeout() and the next MAD
//! }
//! ```
//!
//! Path records come through a command rather than an embedded [`crate::sa::SaClient`]: the
//! host's IPoIB interface already keeps a path cache keyed by destination GID and knows where
//! the SA is (the SM's LID changes with the subnet), so a connection to a neighbour usually needs
//! no SA query at all, and the agent stays free of MADs. A host without a path cache answers with
//! its own SA query (Linux rdma_cm asks the SA itself in `rdma_resolve_route`).
//!
//! # What goes on the wire
//!
//! - A REQ's service ID is `0x0000000001 ‖ protocol ‖ destination port` (Annex A11 CA11-6,
//!   §A11.5) and its private data the 36-byte Table 1 header (MajV 0, MinV 0, IPV, Res 0, source
//!   port, source and destination address, IPv4 after 12 zero bytes) followed by the consumer's
//!   up to 56 bytes (CA11-1, CA11-5); Linux's `cma_format_hdr` writes the same bytes.
//! - A server checks every REQ for one of its listeners with
//!   [`ipoib_wire::private_data::verify_req_private_data`] (versions first, CA11-11) against its
//!   local addresses before its consumer hears of it (CA11-7); a refusal is REJ "Consumer Reject"
//!   (28) with the Table 4 ARI (layer 0x00, Table 5 code in byte 1, suggested value; oA11-1,
//!   CA11-9, CA11-10, oA11-2). A REQ whose destination no listener is bound to gets code 0x06,
//!   one whose source is not a unicast address code 0x00 (Unspecified, "for security or any
//!   other reason", §A11.7; Linux refuses those IPv4 sources too, docs/DEPLOYED.md).
//! - A consumer's own [`IpCm::reject`] is REJ 28 with ARI layer 0x01 (RDMA-aware ULP, Table 3)
//!   and the consumer's private data. Linux's `rdma_reject` sends no ARI at all
//!   (docs/DEPLOYED.md "Linux rdma_cm").
//! - A host with no listener on the service ID answers REJ 8 "Invalid Service ID" (CA11-8): the
//!   CM agent does that on its own for every REQ no listener matches.
//! - A client decodes a REJ's ARI ([`RejectAri`]); an ARI of layer 0x00 and code 0x00 says
//!   nothing about the server (§A11.6), [`RejectAri::shows_service`] is false for it.
//!
//! # Ports
//!
//! Each (protocol, port) is one port space, as in rdma_cm where TCP and UDP ports are separate.
//! A connection made with no source port, or a listener on port 0, takes one from
//! [`IpCmConfig::ephemeral_ports`] (32768-60999, Linux's default `net.ipv4.ip_local_port_range`),
//! the way Linux `cma_alloc_any_port` does: a random start in the range, then upwards with wrap,
//! skipping ports in use and the port handed out last. A port stays in use until its connection's
//! TimeWait is over.
//!
//! Listeners bound to `0.0.0.0` take IPv4 REQs only and those bound to `::` take both families,
//! as Linux rdma_cm does by default (`afonly` 1 for AF_INET, `net.ipv6.bindv6only` 0 for
//! AF_INET6; `cma_match_private_data`). Two listeners on one port may not both match an address.
//!
//! # iWarp emulation (iWarp mapping)
//!
//! The service also makes iWarp-emulated connections ("Mapping of iWarp/TCP connections to
//! InfiniBand", v0.30, cited as "iWarp mapping"): RC connections named by IP addresses and TCP
//! ports (§II) whose REQ carries the Hello and whose REP the HelloReply instead of the Annex A11
//! header, and whose data path is a [`crate::iwarp::IwarpStream`]. The calls and events are the
//! same as for Annex A11 except for these:
//!
//! - [`IpCm::listen_iwarp`]`(addr, port, stream, service_id)` listens on
//!   [`IwarpServiceId::Iwarp`], `IBTA_IWARP_PREFIX` + TCP port (`0x0000000000020000 + port`), or
//!   on [`IwarpServiceId::Sdp`], SDP's service IDs (`0x0000000000010000 + port`), where FlowC 1
//!   tells raw iWarp from SDP ("Optionally it is possible to use SDP's Service ID format"). Each
//!   [`IwarpServiceId`] is a port space of its own, as rdma_cm's port spaces are: an iWarp and an
//!   Annex A11 listener on TCP port 3260 do not clash, their service IDs differ.
//! - [`IpCm::connect_iwarp`]`(now, dst, src_port, &`[`IwarpConnect`]`, private_data)`: the Hello
//!   has our address and port, the destination, FlowC, our receive size and depth; up to 28
//!   consumer bytes follow it in the REQ. Always RC, whatever [`IpCmConfig::transport`] says.
//! - [`IpCmEvent::ConnectRequest`] has protocol 6, the Hello's addresses and Local Port, its
//!   MinVer and the REQ's bytes after the Hello; [`IpCm::accept`] puts the HelloReply before the
//!   consumer's (at most 172) bytes; the client's [`IpCmEvent::Established`] carries the REP's
//!   bytes after the HelloReply.
//! - The stream: [`IpCm::iwarp_stream_mut`] while the connection is being made,
//!   [`IpCm::take_iwarp_stream`] once it is established (the host then owns and pumps it).
//!
//! The host's part grows by one step: the Hello and HelloReply advertise receive buffers (`bufs`)
//! that must be posted before the CM message leaves. On [`IpCmCommand::CmConnect`], after making
//! the QP and before [`crate::cm::Cm::connect`], the host posts
//! `iwarp_stream_mut(conn).poll_recv_buffers()` buffers of `recv_size()` bytes; on
//! [`IpCmCommand::CmAccept`] the same for [`IpCm::conn_of`]`(cm)` before
//! [`crate::cm::Cm::accept`]. After Established it moves the stream's SENDs to the QP
//! (`poll_send`), receive completions to `handle_message`, and posts what `poll_recv_buffers` asks
//! for (the stream's module docs).
//!
//! The server checks a Hello before its consumer hears of it, in the order Annex A11 CA11-11 sets
//! for its header (versions first): an RC REQ; a Hello (64 bytes, MID 0); MajVer
//! ([`crate::iwarp::MAJOR_VERSION`]); IPVer (as [`IpCmConfig::policy`] allows); IPv4 padding (as
//! CA11-5); a unicast source (as the Annex A11 server); the destination ours and taken by a
//! listener of the port (as Table 5 code 0x06); then
//! [`crate::iwarp::IwarpStream::server`] (FlowC, LocalRcvSz, our settings in that mode). A refusal
//! is REJ 28 "Consumer Reject". The iWarp mapping defines no REJ contents, so the ARI takes Annex
//! A11's Table 4 form, layer 0x00 (the same service refusing the same fields): MajorVersion
//! suggesting ours, IPV suggesting one we take, Source or Destination IP Address, 0x06; and
//! Unspecified for a source that is not unicast and for what only the Hello has. The REJ's
//! private data gives the reason in ASCII (`iWarp Hello refused: FlowC 5 is reserved`), and
//! [`IpCm::counters`] counts it.
//!
//! A REQ on an iWarp service ID that belongs to another service, told by
//! [`ipoib_wire::private_data::classify_with_data`] (Linux rdma_cm's IPOIB port space shares
//! `0x00000000_0002pppp` and sends its A11-shaped header there; on SDP's service IDs a FlowC 0
//! Hello is SDP's), gets REJ 8 "Invalid Service ID": we run neither, and that is what the CM
//! answers for a service ID nobody listens on (CA11-8 in the A11 range). An Annex A11 REQ for a TCP
//! port with only an iWarp listener, or the reverse, finds no CM listener for its service ID:
//! REJ 8 from the CM. A Hello sent on an A11 service ID is read as Table 1 (CA11-7) and refused
//! by the A11 checks (its reserved byte 1 reads as IPV 0).
//!
//! The client checks the HelloReply with [`crate::iwarp::IwarpStream::on_reply`] (MajVer,
//! ActRcvSz). Our CM answers a REP with the RTU by itself, so a bad HelloReply cannot be refused
//! with a REJ as Linux rdma_cm's `cma_rep_recv` does: the client releases the connection with a
//! DREQ, its consumer hears [`IpCmEvent::ConnectError`], and the reason is counted.
//!
//! Layout: this file (settings, connection records, CM event routing, ports, timers), `event`
//! (commands, events, the REJ ARI as a client reads it), `client` (connect, address and route
//! resolution, the REQ), `server` (listeners, REQ checks, accept and reject), `iwarp` (iWarp
//! emulation: its listener, connect, Hello and HelloReply checks, port spaces), `tests/`.
//!
//! Invariants: a connection record leaves the tables at its TimeWait exit, or at once when it
//! failed before the CM knew it; every connection waiting for the host's resolution has a
//! deadline; maps are `BTreeMap`s; network input never panics (a REQ's private data only goes
//! through the wire crate's checks).

mod client;
mod event;
mod iwarp;
mod server;

#[cfg(test)]
mod tests;

pub use client::req_private_data;
pub use event::{IpCmCommand, IpCmEvent, RejectAri};
pub use iwarp::{
    IwarpConnect, IwarpServiceId, IWARP_MAX_REP_CONSUMER_LEN, IWARP_MAX_REQ_CONSUMER_LEN,
};

use iwarp::Space;

use crate::cm::{CmEvent, ConnId, ListenId};
use crate::rng::Rng;
use crate::time::Instant;
use ipoib_wire::cm::{RejReason, TransportServiceType};
use ipoib_wire::private_data::{IpCmServerPolicy, RejectionLayer};
use ipoib_wire::Gid;
use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::net::{IpAddr, SocketAddr};
use std::time::Duration;

/// Names a listener of the IP CM service.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct IpListenId(pub u32);

/// Names a connection of the IP CM service.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct IpConnId(pub u32);

/// The agent's settings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IpCmConfig {
    /// The host's IP addresses: the source of a connection (the first of the destination's
    /// family and scope) and the destinations a server answers for (Annex A11 Table 5 code 0x06).
    pub local_addrs: Vec<IpAddr>,
    /// What the server accepts (versions, IP versions; Annex A11 CA11-2 to CA11-5).
    pub policy: IpCmServerPolicy,
    /// The ephemeral port range, inclusive (Linux `net.ipv4.ip_local_port_range`).
    pub ephemeral_ports: (u16, u16),
    /// How long the host may take to answer a [`IpCmCommand::Resolve`] (rdma_cm's
    /// `rdma_resolve_addr` timeout).
    pub resolve_timeout: Duration,
    /// How long the host may take to answer a [`IpCmCommand::PathQuery`] (rdma_cm's
    /// `rdma_resolve_route` timeout).
    pub route_timeout: Duration,
    /// Our CA's ACK delay (IBA time exponent), for the REQ's Local ACK Timeout.
    pub ca_ack_delay: u8,
    /// RC or UC.
    pub transport: TransportServiceType,
    /// RDMA reads and atomics we accept at once (REQ Responder Resources).
    pub responder_resources: u8,
    /// RDMA reads and atomics we issue at once (REQ Initiator Depth).
    pub initiator_depth: u8,
    /// Transport retries the peer's QP makes (3 bits).
    pub retry_count: u8,
    /// RNR retries the peer's QP makes (3 bits; 7 = forever).
    pub rnr_retry_count: u8,
}

impl IpCmConfig {
    /// The ephemeral range Linux uses by default: `net.ipv4.ip_local_port_range` = 32768 60999.
    pub const LINUX_EPHEMERAL_PORTS: (u16, u16) = (32768, 60999);

    /// A service for a host with `local_addrs`: the annex's versions, IPv4 and IPv6
    /// ([`IpCmServerPolicy::default`]), Linux's ephemeral range, 2 s for each resolution, RC with
    /// one RDMA read each way, 7 retries and RNR retries.
    pub fn new(local_addrs: Vec<IpAddr>) -> IpCmConfig {
        IpCmConfig {
            local_addrs,
            policy: IpCmServerPolicy::default(),
            ephemeral_ports: Self::LINUX_EPHEMERAL_PORTS,
            resolve_timeout: Duration::from_secs(2),
            route_timeout: Duration::from_secs(2),
            ca_ack_delay: 0,
            transport: TransportServiceType::Rc,
            responder_resources: 1,
            initiator_depth: 1,
            retry_count: 7,
            rnr_retry_count: 7,
        }
    }
}

/// Why a call was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum IpCmError {
    /// No such connection or listener.
    #[error("unknown connection or listener")]
    Unknown,
    /// The connection is not where the call applies.
    #[error("not valid now: {0}")]
    WrongState(&'static str),
    /// The port is taken, or another listener on the port matches the same addresses.
    #[error("address in use")]
    AddressInUse,
    /// The address is not one of ours (listen), or we have none of the destination's family
    /// (connect).
    #[error("address not available")]
    AddressNotAvailable,
    /// Every ephemeral port is taken.
    #[error("no free port")]
    NoFreePort,
    /// More private data than the message holds (56 bytes in a REQ, 196 in a REP, 148 in a REJ).
    #[error("private data too long ({0} bytes)")]
    PrivateDataTooLong(usize),
    /// A parameter makes no sense (an unspecified or multicast destination, port 0).
    #[error("invalid parameter: {0}")]
    Invalid(&'static str),
    /// An iWarp-emulation stream cannot work with these settings (iWarp mapping).
    #[error("iWarp stream: {0}")]
    Iwarp(crate::iwarp::HandshakeError),
}

/// Where a connection stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Phase {
    /// Client: waiting for [`IpCm::handle_resolved`].
    Resolving,
    /// Client: waiting for [`IpCm::handle_path`] for this GID.
    Routing(Gid),
    /// Client: [`IpCmCommand::CmConnect`] issued, waiting for [`IpCm::cm_connect_started`];
    /// `true` once the consumer gave up on it.
    Starting(bool),
    /// Client: REQ sent.
    Connecting,
    /// Server: waiting for the consumer's accept or reject.
    Requested,
    /// Server: accepted, waiting for the RTU.
    Accepting,
    /// Up.
    Established,
    /// We sent the DREQ; the CM's Disconnected closes it.
    Releasing,
    /// Over (rejected, released, unreachable); waiting for the CM's TimeWait exit.
    Closing,
}

#[derive(Debug)]
pub(crate) struct Conn {
    pub active: bool,
    pub protocol: u8,
    pub local: SocketAddr,
    pub remote: SocketAddr,
    pub phase: Phase,
    pub cm: Option<ConnId>,
    /// The consumer's REQ private data (client, until the REQ is built).
    pub private_data: Vec<u8>,
    pub deadline: Option<Instant>,
    /// An iWarp-emulated connection's handshake and stream (`None`: Annex A11).
    pub iwarp: Option<Box<iwarp::IwarpConn>>,
}

#[derive(Debug, Clone, Copy)]
pub(crate) struct Listener {
    pub protocol: u8,
    pub addr: IpAddr,
    pub port: u16,
    /// An iWarp-emulation listener's stream settings and service IDs (`None`: Annex A11).
    pub iwarp: Option<iwarp::IwarpListen>,
}

/// A CM listener shared by the IP CM listeners of one (protocol, port).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Service {
    /// The CM's listener once the host reported it.
    pub cm: Option<ListenId>,
}

/// Counters by reason: REQs refused by ARI code, answers from the host that matched nothing.
pub type Counters = BTreeMap<&'static str, u64>;

/// The RDMA IP CM service of one host.
#[derive(Debug)]
pub struct IpCm {
    cfg: IpCmConfig,
    rng: Rng,
    next_conn: u32,
    next_listen: u32,
    /// The ephemeral port handed out last, not handed out again at once (Linux
    /// `cma_alloc_any_port`'s `last_used_port`).
    last_port: u16,
    listeners: BTreeMap<IpListenId, Listener>,
    /// CM listeners by service ID.
    services: BTreeMap<u64, Service>,
    conns: BTreeMap<IpConnId, Conn>,
    /// Our CM connections; `None` for a REQ we refused before its consumer heard of it.
    by_cm: BTreeMap<ConnId, Option<IpConnId>>,
    deadlines: BTreeSet<(Instant, IpConnId)>,
    commands: VecDeque<IpCmCommand>,
    events: VecDeque<IpCmEvent>,
    /// What happened that is worth counting, by reason.
    pub counters: Counters,
}

impl IpCm {
    /// An agent drawing ports and PSNs from `rng`.
    pub fn new(cfg: IpCmConfig, rng: Rng) -> IpCm {
        IpCm {
            cfg,
            rng,
            next_conn: 1,
            next_listen: 1,
            last_port: 0,
            listeners: BTreeMap::new(),
            services: BTreeMap::new(),
            conns: BTreeMap::new(),
            by_cm: BTreeMap::new(),
            deadlines: BTreeSet::new(),
            commands: VecDeque::new(),
            events: VecDeque::new(),
            counters: Counters::new(),
        }
    }

    /// The settings.
    pub fn config(&self) -> &IpCmConfig {
        &self.cfg
    }

    /// The host's addresses changed.
    pub fn set_local_addrs(&mut self, addrs: Vec<IpAddr>) {
        self.cfg.local_addrs = addrs;
    }

    /// The next command for the host.
    pub fn poll_command(&mut self) -> Option<IpCmCommand> {
        self.commands.pop_front()
    }

    /// The next event for the consumer.
    pub fn poll_event(&mut self) -> Option<IpCmEvent> {
        self.events.pop_front()
    }

    /// When [`IpCm::handle_timeout`] is next needed.
    pub fn poll_timeout(&self) -> Option<Instant> {
        self.deadlines.iter().next().map(|(t, _)| *t)
    }

    /// Address or route resolutions the host did not answer in time fail (tolerates early and
    /// repeated calls). A question another connection still waits on is asked again
    /// (`IpCm::ask_again`).
    pub fn handle_timeout(&mut self, now: Instant) {
        let mut given_up = Vec::new();
        while let Some(&(t, id)) = self.deadlines.iter().next() {
            if t > now {
                break;
            }
            self.deadlines.remove(&(t, id));
            let q = self.question_of(id);
            let Some(c) = self.conns.get_mut(&id) else {
                continue;
            };
            c.deadline = None;
            match c.phase {
                Phase::Resolving => self.fail_early(id, IpCmEvent::AddressError { conn: id }),
                Phase::Routing(_) => self.fail_early(id, IpCmEvent::RouteError { conn: id }),
                _ => {}
            }
            if let Some(q) = q.filter(|q| !given_up.contains(q)) {
                given_up.push(q);
            }
        }
        for q in given_up {
            self.ask_again(q);
        }
    }

    /// The question connection `id` waits on: [`IpCmCommand::Resolve`] or
    /// [`IpCmCommand::PathQuery`].
    fn question_of(&self, id: IpConnId) -> Option<IpCmCommand> {
        let c = self.conns.get(&id)?;
        match c.phase {
            Phase::Resolving => Some(IpCmCommand::Resolve { ip: c.remote.ip() }),
            Phase::Routing(dgid) => Some(IpCmCommand::PathQuery { dgid }),
            _ => None,
        }
    }

    /// Asks `q` again when a connection still waits on it. Connections share a question (one
    /// per address, one per GID), and a host may keep a question only as long as the connection
    /// that made it may wait (fabric `node/ipcm/` stops asking its interface at that
    /// connection's deadline); when that connection gives up, those that joined later, whose
    /// deadlines are later, would otherwise wait for an answer nobody looks for any more.
    fn ask_again(&mut self, q: IpCmCommand) {
        let waiting = self.conns.values().any(|c| match (&q, c.phase) {
            (IpCmCommand::Resolve { ip }, Phase::Resolving) => c.remote.ip() == *ip,
            (IpCmCommand::PathQuery { dgid }, Phase::Routing(g)) => g == *dgid,
            _ => false,
        });
        if waiting {
            self.commands.push_back(q);
        }
    }

    /// True for the CM events the host must hand to this agent: REQs and SIDR_REQs for its CM
    /// listeners (a SIDR_REQ the host answers with status 1: the service offers connections
    /// only, IBA 1 §12.6 Table 120) and everything about its CM connections.
    pub fn owns(&self, e: &CmEvent) -> bool {
        match e {
            CmEvent::ConnectRequest { listen, .. } | CmEvent::SidrRequest { listen, .. } => {
                self.services.values().any(|s| s.cm == Some(*listen))
            }
            _ => e.conn().is_some_and(|c| self.by_cm.contains_key(&c)),
        }
    }

    /// A CM event [`IpCm::owns`] claimed.
    pub fn handle_cm_event(&mut self, now: Instant, e: &CmEvent) {
        match e {
            CmEvent::ConnectRequest {
                conn, listen, req, ..
            } => self.on_request(now, *conn, *listen, req),
            CmEvent::Established {
                conn, private_data, ..
            } => {
                let Some(id) = self.ours(*conn) else {
                    return;
                };
                let up = self.conns.get(&id).map(|c| c.phase);
                if !matches!(up, Some(Phase::Connecting | Phase::Accepting)) {
                    return;
                }
                // iWarp emulation: the client checks the REP's HelloReply first.
                let Some(private_data) = self.iwarp_established(id, *conn, private_data) else {
                    return;
                };
                if let Some(c) = self.conns.get_mut(&id) {
                    c.phase = Phase::Established;
                    self.events.push_back(IpCmEvent::Established {
                        conn: id,
                        private_data,
                    });
                }
            }
            CmEvent::Rejected {
                conn,
                reason,
                ari,
                private_data,
            } => {
                if let Some(id) = self.close(*conn) {
                    self.events.push_back(IpCmEvent::Rejected {
                        conn: id,
                        reason: *reason,
                        ari: RejectAri::decode(*reason, ari),
                        private_data: private_data.clone(),
                    });
                }
            }
            CmEvent::TimedOut { conn, .. } => {
                if let Some(id) = self.close(*conn) {
                    self.events.push_back(IpCmEvent::Unreachable { conn: id });
                }
            }
            CmEvent::Disconnected {
                conn,
                by_peer,
                private_data,
            } => {
                if let Some(id) = self.close(*conn) {
                    self.events.push_back(IpCmEvent::Disconnected {
                        conn: id,
                        by_peer: *by_peer,
                        private_data: private_data.clone(),
                    });
                }
            }
            CmEvent::TimeWaitExit { conn, .. } => {
                if let Some(Some(id)) = self.by_cm.remove(conn) {
                    self.forget(id);
                }
            }
            CmEvent::SidrRequest { .. }
            | CmEvent::SidrReply { .. }
            | CmEvent::SidrTimedOut { .. } => {}
        }
    }

    /// Releases a connection: a DREQ when it is up (both sides then hear
    /// [`IpCmEvent::Disconnected`], as with rdma_cm), a withdrawal (a REJ) while it is being set
    /// up, a reject for a request the consumer has not answered, or nothing more than forgetting
    /// it while its address or route is being resolved. Only the DREQ brings an event.
    pub fn disconnect(&mut self, conn: IpConnId) -> Result<(), IpCmError> {
        let c = self.conns.get_mut(&conn).ok_or(IpCmError::Unknown)?;
        match (c.phase, c.cm) {
            (Phase::Resolving | Phase::Routing(_), _) => {
                let q = self.question_of(conn);
                self.forget(conn);
                if let Some(q) = q {
                    self.ask_again(q);
                }
                Ok(())
            }
            (Phase::Starting(_), _) => {
                c.phase = Phase::Starting(true);
                Ok(())
            }
            (Phase::Requested, Some(cm)) => {
                c.phase = Phase::Closing;
                self.commands.push_back(IpCmCommand::CmReject {
                    conn: cm,
                    reason: RejReason::ConsumerDefined,
                    ari: vec![RejectionLayer::RdmaAwareUlp.into()],
                    private_data: Vec::new(),
                });
                Ok(())
            }
            (Phase::Established, Some(cm)) => {
                // The CM reports Disconnected when the DREP comes (or its retries run out).
                c.phase = Phase::Releasing;
                self.commands
                    .push_back(IpCmCommand::CmDisconnect { conn: cm });
                Ok(())
            }
            (Phase::Connecting | Phase::Accepting, Some(cm)) => {
                // Before establishment the CM withdraws with a REJ and reports nothing.
                c.phase = Phase::Closing;
                self.commands
                    .push_back(IpCmCommand::CmDisconnect { conn: cm });
                Ok(())
            }
            _ => Err(IpCmError::WrongState("already closing")),
        }
    }

    /// The CM connection behind `conn`, once there is one.
    pub fn cm_conn(&self, conn: IpConnId) -> Option<ConnId> {
        self.conns.get(&conn).and_then(|c| c.cm)
    }

    /// Our address and port and the peer's, of a connection.
    pub fn addrs(&self, conn: IpConnId) -> Option<(SocketAddr, SocketAddr)> {
        self.conns.get(&conn).map(|c| (c.local, c.remote))
    }

    /// Connection records held (closing ones included).
    pub fn connections(&self) -> usize {
        self.conns.len()
    }

    /// Listeners.
    pub fn listeners(&self) -> usize {
        self.listeners.len()
    }

    /// The IP CM connection of CM connection `cm`, if it has one still open.
    fn ours(&self, cm: ConnId) -> Option<IpConnId> {
        self.by_cm.get(&cm).copied().flatten()
    }

    /// The CM connection is over: the consumer's connection closes (it waits for TimeWait),
    /// and its ID is returned unless the consumer already gave it up.
    fn close(&mut self, cm: ConnId) -> Option<IpConnId> {
        let id = self.ours(cm)?;
        let c = self.conns.get_mut(&id)?;
        if c.phase == Phase::Closing {
            return None;
        }
        c.phase = Phase::Closing;
        Some(id)
    }

    /// A connection fails before the CM has it: the event, and the record goes.
    fn fail_early(&mut self, id: IpConnId, e: IpCmEvent) {
        self.forget(id);
        self.events.push_back(e);
    }

    fn forget(&mut self, id: IpConnId) {
        if let Some(c) = self.conns.remove(&id) {
            self.set_deadline_of(id, c.deadline, None);
            if let Some(cm) = c.cm {
                self.by_cm.remove(&cm);
            }
        }
    }

    fn set_deadline(&mut self, id: IpConnId, at: Option<Instant>) {
        let old = self.conns.get(&id).and_then(|c| c.deadline);
        self.set_deadline_of(id, old, at);
        if let Some(c) = self.conns.get_mut(&id) {
            c.deadline = at;
        }
    }

    fn set_deadline_of(&mut self, id: IpConnId, old: Option<Instant>, new: Option<Instant>) {
        if let Some(t) = old {
            self.deadlines.remove(&(t, id));
        }
        if let Some(t) = new {
            self.deadlines.insert((t, id));
        }
    }

    fn count(&mut self, what: &'static str) {
        *self.counters.entry(what).or_insert(0) += 1;
    }

    fn alloc_conn_id(&mut self) -> IpConnId {
        loop {
            let id = IpConnId(self.next_conn);
            self.next_conn = self.next_conn.wrapping_add(1).max(1);
            if !self.conns.contains_key(&id) {
                return id;
            }
        }
    }

    /// True while a listener or one of our own connections holds `port` of port space `space`.
    fn port_in_use(&self, space: Space, port: u16) -> bool {
        self.listeners
            .values()
            .any(|l| l.space() == space && l.port == port)
            || self
                .conns
                .values()
                .any(|c| c.active && c.space() == space && c.local.port() == port)
    }

    /// A free port of `space` from the ephemeral range, as Linux `cma_alloc_any_port` picks
    /// one: a random start, then upwards with wrap, never the port handed out last.
    fn ephemeral_port(&mut self, space: Space) -> Result<u16, IpCmError> {
        let (low, high) = self.cfg.ephemeral_ports;
        let (low, high) = (low.max(1), high.max(low.max(1)));
        let span = u32::from(high - low) + 1;
        let mut port = low + self.rng.below(u64::from(span)) as u16;
        for _ in 0..span {
            if port != self.last_port && !self.port_in_use(space, port) {
                self.last_port = port;
                return Ok(port);
            }
            port = if port >= high { low } else { port + 1 };
        }
        Err(IpCmError::NoFreePort)
    }
}
