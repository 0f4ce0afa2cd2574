//! Subnets whose hosts run IPoIB: with [`SubnetOptions::ipoib`](super::SubnetOptions::ipoib) set,
//! every host gets an [`IpoibApp`] with its [`Interface`] (draft-ietf-ipoib-ip-over-infiniband-06)
//! on its host port (port 1, or a multi-port HCA's first cabled port: one interface per host,
//! where Linux would also make `ib1` for a second port), and the stand-in [`super::JoinApp`] joins nothing (the interface makes the broadcast
//! join itself, §5). Host `i` gets IPv4 address `network + i + 1` (so `10.0.0.1`, `10.0.0.2`, ...
//! past 254 hosts: `10.0.1.0`, ...; the default prefix /8 keeps every host on-link) and, with IPv6
//! on, its link-local address from the port GUID (§8).
//!
//! Invariants: the interfaces' random streams are forked from the simulator's with a stream of
//! their own per host, so adding IPoIB does not change any other device's choices; every accessor
//! here returns `None` (or false) on a subnet built without IPoIB.

use super::Subnet;
use crate::node::host::Host;
use crate::node::ipoib::{IpoibApp, IpoibHandle};
use crate::Instant;
use ipoib_proto::ipoib::{Interface, InterfaceConfig, Ipv4Config};
use ipoib_wire::Guid;
use std::net::Ipv4Addr;
use std::time::Duration;

/// RNG stream base of the interfaces (host index added).
const RNG_STREAM: u64 = 0x1b00_0000_0000_0000;

/// How the hosts' IPoIB interfaces are configured.
#[derive(Debug, Clone, Copy)]
pub struct IpoibOptions {
    /// IPv4 network and prefix length: host `i` gets `network + i + 1` ([`host_ipv4`]); `None`
    /// for no IPv4.
    pub ipv4: Option<(Ipv4Addr, u8)>,
    /// IPv6 (link-local address from the GUID, ND).
    pub ipv6: bool,
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
            configure: None,
        }
    }
}

/// Host `i`'s IPv4 address in `network`: `network + i + 1`.
pub fn host_ipv4(network: Ipv4Addr, i: usize) -> Ipv4Addr {
    Ipv4Addr::from(u32::from(network).wrapping_add(i as u32).wrapping_add(1))
}

impl Subnet {
    /// Installs the interfaces (from [`Subnet::build`]).
    pub(super) fn install_ipoib(&mut self, o: IpoibOptions, sa: ipoib_proto::sa::SaClientConfig) {
        for i in 0..self.hosts.len() {
            let mut cfg = InterfaceConfig::new(Guid(0), 0);
            cfg.sa = sa;
            cfg.ipv6 = o.ipv6;
            cfg.ipv4 = o.ipv4.map(|(net, prefix_len)| Ipv4Config {
                addr: host_ipv4(net, i),
                prefix_len,
                gateway: None,
            });
            if let Some(f) = o.configure {
                f(i, &mut cfg);
            }
            let rng = self.sim.fork_rng(RNG_STREAM + i as u64);
            let h = self
                .sim
                .with_node::<Host, _>(self.hosts[i].node, |h, _, _| {
                    IpoibApp::install(h, cfg, rng).ok()
                })
                .flatten();
            if let Some(h) = h {
                self.ipoib.push(h);
            }
        }
        if self.ipoib.len() != self.hosts.len() {
            // The host port exists on every host by construction; an install cannot fail. Keep
            // the accessors consistent anyway.
            self.ipoib.clear();
        }
    }

    /// True when the hosts run IPoIB.
    pub fn has_ipoib(&self) -> bool {
        !self.ipoib.is_empty()
    }

    /// Where host `i`'s interface lives.
    pub fn ipoib_handle(&self, i: usize) -> Option<IpoibHandle> {
        self.ipoib.get(i).copied()
    }

    /// Host `i`'s IPoIB interface agent.
    pub fn interface(&self, i: usize) -> Option<&Interface> {
        let h = self.ipoib.get(i)?;
        self.host_device(i).agent::<Interface>(h.agent)
    }

    /// Host `i`'s IPoIB adapter (and its IP endpoint).
    pub fn ipoib_app(&self, i: usize) -> Option<&IpoibApp> {
        let h = self.ipoib.get(i)?;
        self.host_device(i).app::<IpoibApp>(h.app)
    }

    /// Runs `f` on host `i`'s adapter now (e.g. a ping or a group join), then lets the host act
    /// at once, so a packet `f` queued leaves at the current virtual time.
    pub fn with_ipoib<R>(
        &mut self,
        i: usize,
        f: impl FnOnce(&mut IpoibApp, Instant) -> R,
    ) -> Option<R> {
        let h = *self.ipoib.get(i)?;
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
        let h = *self.ipoib.get(i)?;
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
        (0..self.ipoib.len())
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
            (0..n.ipoib.len()).all(|i| n.ipoib_app(i).is_some_and(|a| !a.ip().ipv6().is_empty()))
        })
    }
}
