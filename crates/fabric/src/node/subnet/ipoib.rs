//! The hosts' IPoIB interfaces: an [`IpoibApp`] running an [`Interface`]
//! (draft-ietf-ipoib-ip-over-infiniband-06) on the host's port (port 1, or a multi-port HCA's
//! first port the SM reaches: the interfaces of a host are on that port, where Linux would also make `ib1`
//! for a second port). The interface makes the broadcast join (§5), so a subnet's hosts come up
//! through the same join code whether they run IP or not.
//!
//! - By default ([`SubnetOptions::auto_join`](super::SubnetOptions::auto_join)) every host gets
//!   one *link* per IPoIB partition its port belongs to (the partitions with a broadcast group,
//!   [`super::broadcast_groups`], whose P_Key the SM puts in the port's table), as an
//!   administrator creates one interface per partition (Linux child interfaces `ib0.8001`). A
//!   link has no address family on (no IPv4, no IPv6) and is no multicast router, so all it does
//!   is the FullMember join of its broadcast group when the port becomes Active, retried with the
//!   interface's backoff (`ipoib_proto::ipoib::timer`), and it answers nothing: no ARP, no ND, no
//!   other group joins, no trap subscription (§11 senders and §12 routers subscribe; a link is
//!   neither), so no Report comes for it (a host's own SA client takes them, `super::Subnet`
//!   `sa_client`), and a link keeps
//!   only the fewest receive buffers Linux allows posted ([`MIN_RECV_DEPTH`]): it delivers
//!   nothing up. It logs warnings only (`InterfaceConfig::log_level`): a subnet of 10,000 hosts
//!   would otherwise format 10,000 "carrier up" lines nobody reads. A host's first link is given
//!   the host's random stream (the interface forks stream 1 of it for its SA transaction IDs),
//!   further links stream `LINK_STREAM + k` of it.
//! - With [`SubnetOptions::ipoib`](super::SubnetOptions::ipoib) set, every host gets one
//!   interface with IP instead, on the P_Key its configuration names. Host `i` gets IPv4 address
//!   `network + i + 1` (so `10.0.0.1`, `10.0.0.2`, ... past 254 hosts: `10.0.1.0`, ...; the
//!   default prefix /8 keeps every host on-link) and, with IPv6 on, its link-local address from
//!   the port GUID (§8), and with [`IpoibOptions::ipv6_network`] also `network + i + 1`. With
//!   [`IpoibOptions::external_ip`] the IP layer above each interface is the OS
//!   ([`IpoibApp::install_external`]). These interfaces receive the SA's Reports (they subscribe to traps as
//!   senders).
//!
//! Invariants: the random streams of interfaces with IP are forked from the simulator's with a
//! stream of their own per host, so adding IPoIB does not change any other device's choices; a
//! host's links are installed in the order of [`super::broadcast_groups`]; the accessors that
//! name one interface of a host name its first.

use super::{HostHandle, Subnet};
use crate::hw::sim::Simulator;
use crate::hw::topology::End;
use crate::node::host::Host;
use crate::node::ipoib::{IpoibApp, IpoibHandle, MIN_RECV_DEPTH};
use crate::node::sm::SubnetManager;
use crate::Instant;
use ipoib_proto::ipoib::{Interface, InterfaceConfig, Ipv4Config, LogLevel};
use ipoib_proto::sa::SaClientConfig;
use ipoib_wire::ipoib::{broadcast_mgid, IpoibMgid, Scope};
use ipoib_wire::sa::McMemberRecordRepr;
use ipoib_wire::{Gid, Guid, PKey};
use std::net::{Ipv4Addr, Ipv6Addr};
use std::time::Duration;

/// RNG stream base of the interfaces with IP (host index added).
const RNG_STREAM: u64 = 0x1b00_0000_0000_0000;
/// RNG stream base (of the host's generator) of a host's links after its first (link index
/// added).
const LINK_STREAM: u64 = 0x1b00;

/// The broadcast join of one of a host's IPoIB interfaces (§5), as the interface holds it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BroadcastJoin {
    /// The broadcast MGID (the interface's P_Key with the full-member bit, its scope).
    pub mgid: Gid,
    /// The broadcast group's record as the SA returned it (the link's parameters), once joined.
    pub record: Option<McMemberRecordRepr>,
    /// When the join completed (carrier came up), while the link is up.
    pub at: Option<Instant>,
}

/// Every host's IPoIB interfaces in one array: host `i`'s are `handles[start[i]..start[i + 1]]`
/// (the join checks between slices of simulated time look at every waiting host).
#[derive(Debug, Default)]
pub(super) struct Interfaces {
    handles: Vec<IpoibHandle>,
    start: Vec<usize>,
}

impl Interfaces {
    /// Appends the next host's interfaces.
    fn push_host(&mut self, handles: impl IntoIterator<Item = IpoibHandle>) {
        if self.start.is_empty() {
            self.start.push(0);
        }
        self.handles.extend(handles);
        self.start.push(self.handles.len());
    }

    /// Host `i`'s interfaces (none for an unknown host).
    pub(super) fn of(&self, i: usize) -> &[IpoibHandle] {
        match (self.start.get(i), self.start.get(i + 1)) {
            (Some(&a), Some(&b)) => self.handles.get(a..b).unwrap_or_default(),
            _ => &[],
        }
    }
}

/// Installs the links of every host (see the module docs): for each host, an interface on each
/// of `groups` (P_Key with the full-member bit, broadcast MGID) whose partition is in the P_Key
/// table `sm` gives the host's port.
pub(super) fn install_links(
    sim: &mut Simulator,
    hosts: &[HostHandle],
    sm: &SubnetManager,
    groups: &[(PKey, Gid)],
    sa: SaClientConfig,
) -> Interfaces {
    // The groups the interfaces can join under their very MGID (§4 figure 2), with their scope.
    let groups: Vec<(PKey, Scope)> = groups
        .iter()
        .filter_map(|&(k, m)| {
            let scope = IpoibMgid::parse(&m).ok()?.scope;
            (broadcast_mgid(k, scope) == m).then_some((k, scope))
        })
        .collect();
    let mut out = Interfaces::default();
    for h in hosts {
        let table = sm.pkey_table(End {
            node: h.topo_node,
            port: h.port,
        });
        let mut mine = groups
            .iter()
            .filter(|&&(k, _)| table.iter().any(|&p| p.same_partition(k)))
            .peekable();
        if mine.peek().is_none() {
            out.push_host(None);
            continue;
        }
        let rng = sim.fork_rng(h.topo_node as u64);
        let links = sim
            .with_node::<Host, _>(h.node, |host, _, _| {
                let mut links = Vec::new();
                for (k, &(pkey, scope)) in mine.enumerate() {
                    let mut cfg = InterfaceConfig::new(Guid(0), 0);
                    cfg.pkey = pkey;
                    cfg.scope = scope;
                    cfg.ipv4 = None;
                    cfg.ipv6 = false;
                    cfg.sa = sa;
                    cfg.log_level = LogLevel::Warn;
                    let r = if k == 0 {
                        rng.clone()
                    } else {
                        rng.fork(LINK_STREAM + k as u64)
                    };
                    // The host port exists on every host by construction: this cannot fail.
                    if let Ok(l) = IpoibApp::install_with_depth(host, cfg, r, MIN_RECV_DEPTH) {
                        links.push(l);
                    }
                }
                links
            })
            .unwrap_or_default();
        out.push_host(links);
    }
    out
}

/// How the hosts' IPoIB interfaces are configured.
#[derive(Debug, Clone, Copy)]
pub struct IpoibOptions {
    /// IPv4 network and prefix length: host `i` gets `network + i + 1` ([`host_ipv4`]); `None`
    /// for no IPv4.
    pub ipv4: Option<(Ipv4Addr, u8)>,
    /// IPv6 (link-local address from the GUID, ND).
    pub ipv6: bool,
    /// A global IPv6 network and prefix length: host `i` also gets `network + i + 1`
    /// ([`host_ipv6`]) as a static address (it goes through DAD); `None` for the link-local
    /// address only. Ignored without `ipv6`.
    pub ipv6_network: Option<(Ipv6Addr, u8)>,
    /// The IP layer of every host is the OS ([`IpoibApp::install_external`]: packets come
    /// through [`IpoibApp::from_os`] and go out through [`IpoibApp::to_os`]) instead of the
    /// built-in endpoint.
    pub external_ip: bool,
    /// Every interface uses the legacy IPv6 profile of draft-kashyap-ipoib-ipv6-01
    /// ([`InterfaceConfig::legacy_ipv6`]: its ND link-layer option, the FF1y:3333:: multicast
    /// mapping, IPv6 over UD with no IPoIB header and always a GRH) instead of RFC 4391/RFC 4755.
    /// Set before `configure`, which may still change it per host.
    pub legacy_ipv6: bool,
    /// Adjusts host `i`'s configuration before the interface is made (P_Key, scope, router mode,
    /// ...); `port_guid` and `qpn` are set afterwards from the HCA.
    pub configure: Option<fn(usize, &mut InterfaceConfig)>,
}

impl Default for IpoibOptions {
    /// IPv4 in 10.0.0.0/8, IPv6 on, the default partition.
    fn default() -> IpoibOptions {
        IpoibOptions {
            ipv4: Some((Ipv4Addr::new(10, 0, 0, 0), 8)),
            ipv6: true,
            ipv6_network: None,
            external_ip: false,
            legacy_ipv6: false,
            configure: None,
        }
    }
}

impl IpoibOptions {
    /// Every host's IP layer is the OS ([`IpoibOptions::external_ip`]), host `i` (from 0) with
    /// `10.0.0.(i+1)/24` and `fd00::(i+1)/64` besides its link-local address.
    pub fn external() -> IpoibOptions {
        IpoibOptions {
            ipv4: Some((Ipv4Addr::new(10, 0, 0, 0), 24)),
            ipv6: true,
            ipv6_network: Some((Ipv6Addr::new(0xfd00, 0, 0, 0, 0, 0, 0, 0), 64)),
            external_ip: true,
            legacy_ipv6: false,
            configure: None,
        }
    }
}

/// Host `i`'s IPv4 address in `network`: `network + i + 1`.
pub fn host_ipv4(network: Ipv4Addr, i: usize) -> Ipv4Addr {
    Ipv4Addr::from(u32::from(network).wrapping_add(i as u32).wrapping_add(1))
}

/// Host `i`'s IPv6 address in `network`: `network + i + 1`.
pub fn host_ipv6(network: Ipv6Addr, i: usize) -> Ipv6Addr {
    Ipv6Addr::from(u128::from(network).wrapping_add(i as u128).wrapping_add(1))
}

impl Subnet {
    /// Installs the interfaces with IP (from [`Subnet::build`], on a subnet without links).
    pub(super) fn install_ipoib(&mut self, o: IpoibOptions, sa: SaClientConfig) {
        let mut all = Interfaces::default();
        for i in 0..self.hosts.len() {
            let mut cfg = InterfaceConfig::new(Guid(0), 0);
            cfg.sa = sa;
            cfg.ipv6 = o.ipv6;
            cfg.ipv4 = o.ipv4.map(|(net, prefix_len)| Ipv4Config {
                addr: host_ipv4(net, i),
                prefix_len,
                gateway: None,
            });
            if let (true, Some((net, len))) = (o.ipv6, o.ipv6_network) {
                cfg.ipv6_static.push((host_ipv6(net, i), len));
            }
            cfg.legacy_ipv6 = o.legacy_ipv6;
            if let Some(f) = o.configure {
                f(i, &mut cfg);
            }
            let rng = self.sim.fork_rng(RNG_STREAM + i as u64);
            let h = self
                .sim
                .with_node::<Host, _>(self.hosts[i].node, |h, _, _| {
                    if o.external_ip {
                        IpoibApp::install_external(h, cfg, rng).ok()
                    } else {
                        IpoibApp::install(h, cfg, rng).ok()
                    }
                })
                .flatten();
            // The host port exists on every host by construction: the install cannot fail.
            all.push_host(h);
        }
        self.ipoib = all;
        self.ip = true;
    }

    /// True when some host runs an IPoIB interface.
    pub fn has_ipoib(&self) -> bool {
        !self.ipoib.handles.is_empty()
    }

    /// Where host `i`'s (first) interface lives.
    pub fn ipoib_handle(&self, i: usize) -> Option<IpoibHandle> {
        self.ipoib.of(i).first().copied()
    }

    /// Host `i`'s (first) IPoIB interface agent.
    pub fn interface(&self, i: usize) -> Option<&Interface> {
        let h = self.ipoib_handle(i)?;
        self.host_device(i).agent::<Interface>(h.agent)
    }

    /// Host `i`'s (first) IPoIB adapter (and its IP endpoint).
    pub fn ipoib_app(&self, i: usize) -> Option<&IpoibApp> {
        let h = self.ipoib_handle(i)?;
        self.host_device(i).app::<IpoibApp>(h.app)
    }

    /// Host `i`'s IPoIB adapters, in installation order.
    pub fn ipoib_apps(&self, i: usize) -> impl Iterator<Item = &IpoibApp> + '_ {
        let host = self.host_device(i);
        self.ipoib
            .of(i)
            .iter()
            .filter_map(move |h| host.app::<IpoibApp>(h.app))
    }

    /// The broadcast joins of host `i`'s interfaces, in installation order (empty for a host
    /// with none).
    pub fn broadcast_joins(&self, i: usize) -> Vec<BroadcastJoin> {
        let host = self.host_device(i);
        self.ipoib
            .of(i)
            .iter()
            .filter_map(|h| {
                let iface = host.agent::<Interface>(h.agent)?;
                let app = host.app::<IpoibApp>(h.app)?;
                let up = app.carrier();
                Some(BroadcastJoin {
                    mgid: broadcast_mgid(iface.config().pkey, iface.scope()),
                    record: iface.link_params().filter(|_| up).map(|p| p.record),
                    at: app.carrier_up_at(),
                })
            })
            .collect()
    }

    /// Runs `f` on host `i`'s adapter now (e.g. a ping or a group join), then lets the host act
    /// at once, so a packet `f` queued leaves at the current virtual time.
    pub fn with_ipoib<R>(
        &mut self,
        i: usize,
        f: impl FnOnce(&mut IpoibApp, Instant) -> R,
    ) -> Option<R> {
        let h = self.ipoib_handle(i)?;
        let node = self.hosts.get(i)?.node;
        self.sim
            .with_node::<Host, _>(node, |host, now, tx| {
                let r = host.app_mut::<IpoibApp>(h.app).map(|a| f(a, now));
                host.drive(now, tx);
                r
            })
            .flatten()
    }

    /// Runs `f` on host `i`'s interface agent now, then lets the host act at once.
    pub fn with_interface<R>(
        &mut self,
        i: usize,
        f: impl FnOnce(&mut Interface, Instant) -> R,
    ) -> Option<R> {
        let h = self.ipoib_handle(i)?;
        let node = self.hosts.get(i)?.node;
        self.sim
            .with_node::<Host, _>(node, |host, now, tx| {
                let r = host.agent_mut::<Interface>(h.agent).map(|a| f(a, now));
                host.drive(now, tx);
                r
            })
            .flatten()
    }

    /// Hosts whose interface has carrier.
    pub fn carrier_count(&self) -> usize {
        (0..self.hosts.len())
            .filter(|&i| self.ipoib_app(i).is_some_and(IpoibApp::carrier))
            .count()
    }

    /// Runs until `done(self)` holds or virtual time reaches `deadline`, checking between slices
    /// of simulated time (10 µs, doubling while nothing is decided, up to 10 ms; idle stretches
    /// are skipped). True when `done` held.
    pub fn run_until_with(
        &mut self,
        deadline: Instant,
        mut done: impl FnMut(&Subnet) -> bool,
    ) -> bool {
        let min = Duration::from_micros(10);
        let mut slice = min;
        loop {
            if done(self) {
                return true;
            }
            if self.sim.now() >= deadline {
                return false;
            }
            let next = self.sim.next_event_at().unwrap_or(deadline);
            let until = (next.max(self.sim.now()) + slice).min(deadline);
            self.sim.run_until(until);
            slice = (slice * 2).min(Duration::from_millis(10));
        }
    }

    /// Runs until every host's IPv6 link-local address passed DAD (§8; RFC 4862 §5.4), or
    /// `deadline`. True when all are usable.
    pub fn run_until_ipv6_ready(&mut self, deadline: Instant) -> bool {
        self.run_until_with(deadline, |n| {
            (0..n.hosts.len()).all(|i| {
                n.ipoib_app(i)
                    .is_some_and(|a| !a.ip().ipv6().is_empty() || !a.os_ipv6_ready().is_empty())
            })
        })
    }

    /// Runs until every IPv6 address of every host's interface passed DAD (its static addresses
    /// too, [`IpoibOptions::ipv6_network`]), or `deadline`. True when all are usable.
    pub fn run_until_ipv6_all_ready(&mut self, deadline: Instant) -> bool {
        self.run_until_with(deadline, |n| {
            (0..n.hosts.len()).all(|i| {
                n.interface(i).is_some_and(|f| {
                    f.ipv6_addresses()
                        .iter()
                        .all(|a| a.state == ipoib_proto::ipoib::AddrState::Preferred)
                })
            })
        })
    }
}
