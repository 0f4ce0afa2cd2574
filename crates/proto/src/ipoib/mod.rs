//! The IPoIB interface over UD (draft-ietf-ipoib-ip-over-infiniband-06, which became RFC 4391), as a
//! protocol agent with no IO: IP packets come in from above through [`Interface::send_ip`] and go
//! up as [`InterfaceEvent::Deliver`]; below, the agent talks to an HCA through values: UD datagrams
//! to send ([`Interface::poll_transmit`] → [`UdTransmit`]), UD receive completions
//! ([`Interface::handle_datagram`] ← [`UdReceived`]), and SA MADs on QP1 (the agent is a
//! [`MadAgent`]; it embeds a [`crate::sa::SaClient`]). The same agent runs in the simulator and
//! behind a TUN device.
//!
//! The HCA side must: create one UD QP and report its QPN in [`InterfaceConfig::qpn`]; set the QP's
//! Q_Key on [`InterfaceEvent::SetQkey`] (the broadcast group's, §9.1.2 b); attach and detach the QP
//! on [`InterfaceEvent::Attach`]/[`InterfaceEvent::Detach`]; report port changes through
//! [`Interface::handle_port`]; route SA Reports (traps) and responses to this agent.
//!
//! Layout (neqo's connection split): `state` (bring-up, port events, SA answers, traps), `mcast`
//! (joins, leaves and the §11 send rules, router mode §12), `traps` (the trap 66/67 subscription,
//! held only while needed, §11, §12 C), `tx` (the transmit path: neighbour →
//! path → datagram), `ipv4` (ARP, §9.2), `ipv6` (ND, DAD, autoconfiguration, §8, §9.3),
//! `neighbour` and `path` (the caches), `timer` (constants and backoff).
//!
//! Invariants: nothing reaches IP unless the link is up and the frame carried the partition's P_Key
//! and the broadcast group's Q_Key (§9.1 d, e; §9.1.2 b); no packet from the network panics the agent
//! (bad input is dropped and counted in [`Counters`]); every queue and table is bounded; output
//! depends only on the inputs and the seed (all maps are `BTreeMap`s).

mod connected;
mod ip_buf;
mod ipv4;
mod ipv6;
mod mcast;
pub mod neighbour;
pub mod path;
mod rx;
pub mod snoop;
mod state;
pub mod timer;
mod too_big;
mod traps;
mod tx;

#[cfg(test)]
mod tests;

use crate::mad_agent::{GrhAddr, MadAgent, MadIn, MadOut};
use crate::rng::Rng;
use crate::sa::{RequestId, SaClient, SaClientConfig};
use crate::time::Instant;
use ipoib_wire::ipoib::{HwAddr, HwAddrFlags, Scope};
use ipoib_wire::sa::McMemberRecordRepr;
use ipoib_wire::{Gid, Guid, Mtu, Rate};
use ipoib_wire::{PKey, QKey};
use std::collections::{BTreeMap, VecDeque};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

pub use connected::{
    CmCommand, ConnState, ConnTransmit, ConnectedConfig, ConnectionInfo, Mode, PeerRules,
};
pub use ip_buf::IpBuf;
pub use ipv6::{AddrState, Ipv6Address};
pub use mcast::GroupInfo;
pub use neighbour::{NeighbourInfo, NeighbourState};
pub use path::PathInfo;
pub use tx::ip_frame;

/// IPv4 configuration (draft-ietf-ipoib-ip-over-infiniband-06 §7: DHCP counts as manual
/// configuration; this is that configuration).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ipv4Config {
    /// The interface's address.
    pub addr: Ipv4Addr,
    /// Prefix length of the on-link subnet.
    pub prefix_len: u8,
    /// Next hop for destinations outside the subnet.
    pub gateway: Option<Ipv4Addr>,
}

impl Ipv4Config {
    /// True if `a` is inside the subnet.
    pub fn on_link(&self, a: Ipv4Addr) -> bool {
        let m = self.mask();
        u32::from(a) & m == u32::from(self.addr) & m
    }
    fn mask(&self) -> u32 {
        u32::MAX
            .checked_shl(32 - u32::from(self.prefix_len.min(32)))
            .unwrap_or(0)
    }
    /// The subnet-directed broadcast address.
    pub fn broadcast(&self) -> Ipv4Addr {
        Ipv4Addr::from(u32::from(self.addr) | !self.mask())
    }
}

/// What the interface is configured with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InterfaceConfig {
    /// The port GUID: the GID's interface ID and the IPv6 interface identifier (§8).
    pub port_guid: Guid,
    /// The UD QP's number, the QPN of the link-layer address (§9.1.1 b).
    pub qpn: u32,
    /// The partition of the link (§5, §9.1.2 c: a configuration parameter); the full-membership bit
    /// is set wherever it is used in an MGID (§4.1).
    pub pkey: PKey,
    /// Scope bits of the broadcast GID and of every MGID (§4, §4.1: link-local RECOMMENDED).
    pub scope: Scope,
    /// When the broadcast group does not exist at `scope`, try wider scopes (§4.1: "searching for
    /// a broadcast-GID of ever greater scope by first starting with the local-scope").
    pub scope_search: bool,
    /// IPv4, if enabled.
    pub ipv4: Option<Ipv4Config>,
    /// IPv6 enabled (link-local address from the GUID, ND, autoconfiguration).
    pub ipv6: bool,
    /// IPv6 addresses configured by hand (each goes through DAD).
    pub ipv6_static: Vec<(Ipv6Addr, u8)>,
    /// The legacy draft-kashyap-ipoib-ipv6-01 profile for IPv6: its ND option and FF1y:3333:: mapping.
    pub legacy_ipv6: bool,
    /// Flags octet of the link-layer address (RFC 4755 §3.1; zero without connected mode).
    pub flags: HwAddrFlags,
    /// Multicast router: emulate promiscuous multicast (§12).
    pub router: bool,
    /// A manually configured MTU smaller than the link's (§7).
    pub mtu: Option<u32>,
    /// Send a GRH on unicast even when the path does not need one (§6: optional within a subnet).
    pub unicast_grh: bool,
    /// Packets queued per unresolved neighbour or path (docs/DEPLOYED.md: 3, Linux's
    /// `IPOIB_MAX_PATH_REC_QUEUE`).
    pub queue_len: usize,
    /// Packets queued per multicast group while its join is pending (Linux's
    /// `IPOIB_MAX_MCAST_QUEUE`, 64: docs/IPOIB-JOINS.md).
    pub mcast_queue_len: usize,
    /// Packets queued in all multicast groups together (flood protection: a stack sending to ever
    /// new groups keeps at most this many frames, with `max_mcast_groups`).
    pub max_mcast_queued: usize,
    /// Bound of the neighbour table (flood protection).
    pub max_neighbours: usize,
    /// Bound of the path table.
    pub max_paths: usize,
    /// Bound of the multicast table for groups the interface only sends to (§11 SendOnlyNonMember
    /// joins, e.g. the solicited-node groups ND sends to), and of its cache of groups the SA said
    /// do not exist: flood protection, as `max_neighbours`. The groups the interface or the IP
    /// layer are members of are not counted against it.
    pub max_mcast_groups: usize,
    /// SA request timeouts and retries; not of PathRecord queries, which are sent once and
    /// fail after `PATH_QUERY_TIMEOUT` (1 s, `timer.rs`), as Linux's.
    pub sa: SaClientConfig,
    /// Announce the IPv4 address with a gratuitous ARP each time the link comes up, as Linux does
    /// with `net.ipv4.conf.<dev>.arp_notify` set, which its default leaves off (docs/DEPLOYED.md
    /// "Linux IPoIB"). On by default here: peers update the entry of a host whose LID moved from
    /// it. Each announcement reaches every member of the broadcast group, so N hosts coming up
    /// send N broadcasts to N hosts.
    pub arp_notify: bool,
    /// Announce each ready IPv6 address with unsolicited Neighbor Advertisements (RFC 4861 §7.2.6:
    /// all-nodes, Override set, Solicited clear, at most MAX_NEIGHBOR_ADVERTISEMENT 3, RetransTimer
    /// apart) when the link comes up and when DAD passes, the IPv6 counterpart of
    /// [`InterfaceConfig::arp_notify`]; Linux does so with `net.ipv6.conf.<dev>.ndisc_notify` set,
    /// default off (docs/DEPLOYED.md "Linux IPoIB"). On by default here: the QPN, part of the
    /// link-layer address, changes when a host restarts.
    pub ndisc_notify: bool,
    /// Connected mode (RFC 4755): `None` for a datagram-only interface. Its flags replace
    /// [`InterfaceConfig::flags`].
    pub connected: Option<ConnectedConfig>,
    /// The least severe [`InterfaceEvent::Log`] the interface emits: `Info` emits every message,
    /// `Warn` only what the specification says to log (§7, §13, §14). Messages below it are not
    /// even formatted.
    pub log_level: LogLevel,
}

impl InterfaceConfig {
    /// Defaults: default partition 0xFFFF, link-local scope, IPv6 on, IPv4 off, 3 queued packets,
    /// every log message.
    pub fn new(port_guid: Guid, qpn: u32) -> InterfaceConfig {
        InterfaceConfig {
            port_guid,
            qpn,
            pkey: PKey(0xffff),
            scope: Scope::LinkLocal,
            scope_search: false,
            ipv4: None,
            ipv6: true,
            ipv6_static: Vec::new(),
            legacy_ipv6: false,
            flags: HwAddrFlags::NONE,
            router: false,
            mtu: None,
            unicast_grh: false,
            queue_len: 3,
            mcast_queue_len: 64,
            max_mcast_queued: 3072,
            max_neighbours: 1024,
            max_paths: 1024,
            max_mcast_groups: 1024,
            sa: SaClientConfig::default(),
            arp_notify: true,
            ndisc_notify: true,
            connected: None,
            log_level: LogLevel::Info,
        }
    }
}

/// What the HCA knows about the port (PortInfo and the P_Key table, as the SM wrote them).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct PortInfo {
    /// Base LID (0: none yet).
    pub lid: u16,
    /// Master SM's LID (where SA requests go).
    pub sm_lid: u16,
    /// Master SM's SL.
    pub sm_sl: u8,
    /// GID subnet prefix.
    pub subnet_prefix: u64,
    /// Port Active.
    pub active: bool,
    /// Index of the interface's P_Key in the port's table (`None`: not a member of the partition).
    pub pkey_index: Option<u16>,
    /// Active MTU.
    pub mtu: Mtu,
}

/// The GRH of a received datagram.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RecvGrh {
    /// Source GID.
    pub sgid: Gid,
    /// Destination GID (the MGID for multicast).
    pub dgid: Gid,
    /// Traffic class.
    pub tclass: u8,
    /// Flow label.
    pub flow_label: u32,
    /// Hop limit.
    pub hop_limit: u8,
}

/// A UD receive completion.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UdReceived {
    /// Source QP.
    pub src_qpn: u32,
    /// Source LID.
    pub slid: u16,
    /// SL.
    pub sl: u8,
    /// The GRH, when the packet had one (§6: handled either way).
    pub grh: Option<RecvGrh>,
    /// The P_Key the packet carried.
    pub pkey: PKey,
    /// The Q_Key the packet carried (DETH).
    pub qkey: QKey,
    /// The 4-byte encapsulation header and the datagram.
    pub data: Vec<u8>,
}

/// A UD datagram to send.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UdTransmit {
    /// Destination LID (an MLID for multicast).
    pub dlid: u16,
    /// Service level.
    pub sl: u8,
    /// The GRH: always for multicast, for unicast when the path needs it (§6).
    pub grh: Option<GrhAddr>,
    /// Destination QP (0xFFFFFF for multicast).
    pub remote_qpn: u32,
    /// Q_Key (the broadcast group's, §9.1.2 b).
    pub qkey: QKey,
    /// Static rate of the path or group (§9.1 g).
    pub rate: Rate,
    /// The 4-byte encapsulation header and the datagram (§6).
    pub data: Vec<u8>,
}

/// Severity of a [`InterfaceEvent::Log`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum LogLevel {
    /// Informational.
    Info,
    /// Something the spec says to log (§7, §13, §14).
    Warn,
}

/// What the interface tells the layers around it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum InterfaceEvent {
    /// An IP packet for the IP layer (in the buffer it was received in, [`IpBuf`]).
    Deliver(IpBuf),
    /// The link is usable: the broadcast group was joined (§5).
    CarrierUp,
    /// The link is not usable.
    CarrierDown,
    /// The UD QP must use this Q_Key (the broadcast group's, §9.1.2 b).
    SetQkey(QKey),
    /// Attach the UD QP to this group.
    Attach {
        /// MGID.
        mgid: Gid,
        /// MLID.
        mlid: u16,
    },
    /// Detach the UD QP from this group.
    Detach {
        /// MGID.
        mgid: Gid,
        /// MLID.
        mlid: u16,
    },
    /// An IPv6 address passed duplicate address detection and is usable.
    AddressReady(Ipv6Addr),
    /// Duplicate address detection found another node with this address; it is not used.
    DadFailed(Ipv6Addr),
    /// The IPv6 MTU changed (RA MTU option, §7).
    Ipv6Mtu(u32),
    /// A message for the system log.
    Log(LogLevel, String),
}

/// Why a packet or frame was dropped.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum DropReason {
    /// The link is down.
    NotUp,
    /// A frame with another partition's P_Key (§9.1 e).
    PkeyMismatch,
    /// A frame with another Q_Key (§9.1 d, §9.1.2 b).
    QkeyMismatch,
    /// Our own multicast frame looped back.
    Loopback,
    /// A frame or packet that does not parse.
    Malformed,
    /// An encapsulation type other than IPv4, IPv6 or ARP (RARP included).
    Unsupported,
    /// Larger than the MTU.
    TooBig,
    /// No route: outside the IPv4 subnet without a gateway, or no address to send from.
    NoRoute,
    /// The neighbour's queue was full.
    NeighbourQueueFull,
    /// The neighbour table was full.
    NeighbourTableFull,
    /// Address resolution failed.
    ResolutionFailed,
    /// The path's queue was full.
    PathQueueFull,
    /// The path table was full.
    PathTableFull,
    /// The PathRecord query failed.
    PathFailed,
    /// The multicast group's queue was full.
    McastQueueFull,
    /// A send-only group would pass `InterfaceConfig::max_mcast_groups`.
    McastTableFull,
    /// No such multicast group and no all-routers group to fall back on (§11).
    NoMcastGroup,
    /// Lost when the tables were flushed (port event).
    Flushed,
    /// Larger than the MTU of the way it had to go (a connection's, or UD's in connected mode);
    /// answered with ICMP (RFC 4755 connected mode, docs/DEPLOYED.md "Linux IPoIB").
    TooBigForPath,
    /// The queue of a peer whose connection is coming up was full.
    ConnQueueFull,
}

/// Counters.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Counters {
    /// Datagrams handed to the HCA.
    pub tx_frames: u64,
    /// Datagrams received.
    pub rx_frames: u64,
    /// IP packets delivered up.
    pub delivered: u64,
    /// Drops by reason.
    pub drops: BTreeMap<DropReason, u64>,
}

impl Counters {
    /// Drops for `r`.
    pub fn dropped(&self, r: DropReason) -> u64 {
        self.drops.get(&r).copied().unwrap_or(0)
    }
}

/// A command that cannot be carried out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum InterfaceError {
    /// The address is not an IP multicast address.
    #[error("not a multicast address")]
    NotMulticast,
    /// The address family is not enabled on the interface.
    #[error("address family not enabled")]
    FamilyDisabled,
    /// Connected mode was asked of an interface configured without it.
    #[error("the interface has no connected-mode settings")]
    NotConnectedCapable,
}

/// The parameters of the broadcast group, which every other group and all traffic copy (§5, §11).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BroadcastParams {
    /// The broadcast group's record as the SA returned it.
    pub record: McMemberRecordRepr,
    /// Link MTU: the group's MTU minus the 4-byte header (§7), or smaller if configured.
    pub mtu: u32,
}

/// State of the link.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Link {
    /// Port down, no LID or P_Key missing.
    Down,
    /// Joining the broadcast group (its request or retry lives in the group table).
    Joining,
    /// Joined: carrier up.
    Up,
}

/// An SA request the interface is waiting for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Pending {
    Join(Gid, ipoib_wire::sa::JoinState),
    /// A leave of the group's JoinState, with how many more times it is sent if it fails.
    Leave(Gid, ipoib_wire::sa::JoinState, u8),
    Path(Gid),
    Inform(u16),
    GroupTable,
}

/// The IPoIB interface agent.
#[derive(Debug)]
pub struct Interface {
    cfg: InterfaceConfig,
    sa: SaClient,
    port: Option<PortInfo>,
    link: Link,
    /// The scope in use (the configured one, or wider after a search).
    scope: Scope,
    /// Backoff between rounds of the scope search.
    scope_backoff: timer::Backoff,
    params: Option<BroadcastParams>,
    ipv6_mtu: u32,
    neigh: neighbour::Neighbours,
    paths: path::Paths,
    mc: mcast::Groups,
    /// The subscription to traps 66/67 (`traps`).
    traps: traps::TrapSub,
    v6: ipv6::V6State,
    requests: BTreeMap<RequestId, Pending>,
    /// Connected mode's peers and connections (`connected`).
    cm: connected::Connected,
    out: VecDeque<UdTransmit>,
    events: VecDeque<InterfaceEvent>,
    counters: Counters,
    /// What [`Interface::poll_timeout`] answers, settled after every change of state.
    deadline: Option<Instant>,
}

impl Interface {
    /// A new interface, down until [`Interface::handle_port`] reports an active port. `rng` seeds
    /// the SA client's transaction IDs.
    pub fn new(mut cfg: InterfaceConfig, rng: Rng) -> Interface {
        if let Some(c) = cfg.connected.as_mut() {
            c.receive_mtu = c.receive_mtu.clamp(
                ConnectedConfig::MIN_RECEIVE_MTU,
                ConnectedConfig::MAX_RECEIVE_MTU,
            );
            cfg.flags = c.flags();
        }
        let sa = SaClient::new(cfg.sa, rng.fork(1));
        let mut v6 = ipv6::V6State::default();
        if cfg.ipv6 {
            v6.add(
                ipoib_wire::ipoib::addr::link_local_from_guid(cfg.port_guid),
                64,
            );
            for (a, l) in &cfg.ipv6_static {
                v6.add(*a, *l);
            }
        }
        Interface {
            neigh: neighbour::Neighbours::new(cfg.max_neighbours, cfg.queue_len),
            paths: path::Paths::new(cfg.max_paths, cfg.queue_len),
            mc: mcast::Groups::default(),
            traps: traps::TrapSub::default(),
            scope: cfg.scope,
            scope_backoff: timer::Backoff::default(),
            cfg,
            sa,
            port: None,
            link: Link::Down,
            params: None,
            ipv6_mtu: 0,
            v6,
            requests: BTreeMap::new(),
            cm: connected::Connected::default(),
            out: VecDeque::new(),
            events: VecDeque::new(),
            counters: Counters::default(),
            deadline: None,
        }
    }

    /// The configuration.
    pub fn config(&self) -> &InterfaceConfig {
        &self.cfg
    }

    /// The port's GID (subnet prefix ‖ port GUID; §9.1.1 c RECOMMENDED).
    pub fn gid(&self) -> Gid {
        let prefix = self
            .port
            .map(|p| p.subnet_prefix)
            .unwrap_or(Gid::DEFAULT_SUBNET_PREFIX);
        Gid::new(prefix, self.cfg.port_guid.0)
    }

    /// The link-layer address (§9.1.1): flags, UD QPN, port GID.
    pub fn hw_addr(&self) -> HwAddr {
        HwAddr::new(self.cfg.flags.sanitized(), self.cfg.qpn, self.gid())
    }

    /// True once the broadcast group is joined (§5).
    pub fn carrier(&self) -> bool {
        self.link == Link::Up
    }

    /// The link MTU: in datagram mode the broadcast group MTU − 4 (§7), in connected mode the
    /// receive MTU − 4 (RFC 4755 §5.1; 65520 by default, Linux's), unless configured smaller;
    /// 0 while down.
    pub fn mtu(&self) -> u32 {
        match (self.params, self.cfg.connected) {
            (None, _) => 0,
            (Some(_), Some(c)) if c.mode == Mode::Connected => {
                let m = c.receive_mtu - ipoib_wire::private_data::ipoib_cm::ENCAP_LEN;
                self.cfg.mtu.map_or(m, |x| x.min(m))
            }
            (Some(p), _) => p.mtu,
        }
    }

    /// The MTU of UD datagrams (broadcast group MTU − 4, §7, or configured smaller); 0 while
    /// down. Multicast always and unicast to peers without connections use it.
    pub fn ud_mtu(&self) -> u32 {
        self.params.map(|p| p.mtu).unwrap_or(0)
    }

    /// The IPv6 MTU (the link MTU unless an RA lowered it).
    pub fn ipv6_mtu(&self) -> u32 {
        if self.ipv6_mtu == 0 {
            self.mtu()
        } else {
            self.ipv6_mtu.min(self.mtu())
        }
    }

    /// The broadcast group's parameters, once joined.
    pub fn link_params(&self) -> Option<BroadcastParams> {
        self.params
    }

    /// Multicast groups the SA said do not exist, cached (§11; at most
    /// `InterfaceConfig::max_mcast_groups`).
    pub fn absent_groups(&self) -> usize {
        self.mc.absent.len()
    }

    /// The IPv6 addresses and their DAD state.
    pub fn ipv6_addresses(&self) -> Vec<Ipv6Address> {
        self.v6.addrs.clone()
    }

    /// The neighbour cache.
    pub fn neighbours(&self) -> Vec<NeighbourInfo> {
        self.neigh.snapshot()
    }

    /// The path cache.
    pub fn paths(&self) -> Vec<(Gid, PathInfo)> {
        self.paths.snapshot()
    }

    /// The scope of the broadcast GID and every MGID in use.
    pub fn scope(&self) -> Scope {
        self.scope
    }

    /// The multicast groups and their memberships.
    pub fn groups(&self) -> Vec<GroupInfo> {
        self.mc.snapshot()
    }

    /// Counters.
    pub fn counters(&self) -> &Counters {
        &self.counters
    }

    /// The next datagram to send.
    pub fn poll_transmit(&mut self, _now: Instant) -> Option<UdTransmit> {
        let t = self.out.pop_front()?;
        self.counters.tx_frames += 1;
        Some(t)
    }

    /// The next event.
    pub fn poll_event(&mut self) -> Option<InterfaceEvent> {
        self.events.pop_front()
    }

    /// True when [`Interface::poll_transmit`] or [`Interface::poll_event`] has something (what
    /// the adapter above looks at before it polls, without taking the interface mutably).
    pub fn has_output(&self) -> bool {
        !self.out.is_empty() || !self.events.is_empty()
    }

    /// The next MAD for QP1 (the [`MadAgent`] side, under a name that does not clash with
    /// [`Interface::poll_transmit`]).
    pub fn poll_mad(&mut self, now: Instant) -> Option<MadOut> {
        self.sa.poll_transmit(now)
    }

    /// A MAD for this agent (SA responses and Reports).
    pub fn handle_mad(&mut self, now: Instant, mad: MadIn) {
        self.sa.handle_mad(now, mad);
        self.process_sa(now);
        self.settle_deadline();
    }

    /// When [`Interface::handle_timeout`] is next needed.
    pub fn poll_timeout(&self) -> Option<Instant> {
        debug_assert_eq!(
            self.deadline,
            self.next_deadline(),
            "a method that changes the interface's state did not settle its deadline"
        );
        self.deadline
    }

    /// The earliest deadline of the SA client and of every table, the neighbour and path caches
    /// scanned whole (what [`Interface::settle_deadline`] must agree with).
    fn next_deadline(&self) -> Option<Instant> {
        self.earliest_with(self.neigh.next_deadline(), self.paths.next_deadline())
    }

    /// The earliest of `neigh`, `paths` and every other deadline.
    fn earliest_with(&self, neigh: Option<Instant>, paths: Option<Instant>) -> Option<Instant> {
        [
            neigh,
            paths,
            self.mc.next_deadline(),
            self.traps.next_deadline(),
            self.v6.next_deadline(),
            self.cm.next_deadline(),
        ]
        .into_iter()
        .fold(self.sa.poll_timeout(), timer::earliest)
    }

    /// Runs what is due (early or repeated calls are harmless).
    pub fn handle_timeout(&mut self, now: Instant) {
        self.sa.handle_timeout(now);
        self.process_sa(now);
        self.paths.handle_timeout(now);
        self.neighbour_timeouts(now);
        self.mcast_timeouts(now);
        self.dad_timeouts(now);
        self.na_announce_due(now);
        self.traps_sync(now);
        self.cm_timeouts(now);
        self.settle_deadline();
    }

    /// Records [`Interface::poll_timeout`]'s answer after a change of state: every public method
    /// that can move a deadline ends with it (the `poll_*` methods only take output, which moves
    /// none). The host asks for the deadline after every event, and the tables' deadlines are
    /// spread over the interface's memory; one field is cheaper to read.
    fn settle_deadline(&mut self) {
        let (neigh, paths) = (self.neigh.deadline(), self.paths.deadline());
        self.deadline = self.earliest_with(neigh, paths);
    }

    fn drop_count(&mut self, r: DropReason, n: usize) {
        if n > 0 {
            *self.counters.drops.entry(r).or_insert(0) += n as u64;
        }
    }

    fn drop1(&mut self, r: DropReason) {
        self.drop_count(r, 1);
    }

    fn log(&mut self, level: LogLevel, msg: std::fmt::Arguments<'_>) {
        if level >= self.cfg.log_level {
            self.events
                .push_back(InterfaceEvent::Log(level, msg.to_string()));
        }
    }

    /// Joins the IP multicast group `group` (IPv4 class D or IPv6 ff00::/8): a FullMember join of its
    /// MGID, creating the group with the broadcast group's parameters if needed (§11).
    pub fn join_group(&mut self, now: Instant, group: IpAddr) -> Result<(), InterfaceError> {
        let mgid = self.group_mgid(group)?;
        self.mc_add_full(now, mgid);
        self.settle_deadline();
        Ok(())
    }

    /// Leaves `group`: a FullMember leave once no other user of its MGID remains (§11: SHOULD).
    pub fn leave_group(&mut self, now: Instant, group: IpAddr) -> Result<(), InterfaceError> {
        let mgid = self.group_mgid(group)?;
        self.mc_drop_full(now, mgid);
        self.settle_deadline();
        Ok(())
    }
}

impl MadAgent for Interface {
    fn handle_mad(&mut self, now: Instant, mad: MadIn) {
        Interface::handle_mad(self, now, mad);
    }
    fn poll_transmit(&mut self, now: Instant) -> Option<MadOut> {
        self.poll_mad(now)
    }
    fn poll_timeout(&self) -> Option<Instant> {
        Interface::poll_timeout(self)
    }
    fn handle_timeout(&mut self, now: Instant) {
        Interface::handle_timeout(self, now);
    }
}
