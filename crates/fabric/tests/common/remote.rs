//! A deterministic stand-in for UDP between a fabric process and host processes: one
//! [`FabricServer`] and several [`RemoteHost`]s exchanging datagrams through in-memory queues with
//! a fixed latency, all on one virtual clock that jumps from one due item to the next.
#![allow(dead_code)]

use ipoib_fabric::hw::topology::Topology;
use ipoib_fabric::node::host::Host;
use ipoib_fabric::node::ipoib::{IpoibApp, IpoibHandle};
use ipoib_fabric::node::remote::{FabricOptions, FabricServer, HostLinkConfig, RemoteHost};
use ipoib_fabric::node::subnet::SubnetOptions;
use ipoib_fabric::Instant;
use ipoib_proto::ipoib::{ConnectedConfig, InterfaceConfig, Ipv4Config};
use ipoib_wire::udp_fabric::{DatagramRepr, MessageRepr, PortStateCode};
use ipoib_wire::Guid;
use std::cell::Cell;
use std::net::Ipv4Addr;
use std::rc::Rc;
use std::time::Duration;

/// Rewrites a datagram a host sends (the hostile hosts of the tests); `None` sends it unchanged.
pub type Tamper = Box<dyn FnMut(&[u8]) -> Option<Vec<u8>>>;

/// Decides whether a datagram the fabric sends host `peer` is lost on the way (a lossy path).
pub type Loss = Box<dyn FnMut(u8, &[u8]) -> bool>;

/// One host and what the harness knows of it.
pub struct Peer {
    pub host: RemoteHost,
    pub ipoib: Rc<Cell<Option<IpoibHandle>>>,
    /// False: the host is frozen (its datagrams and timers are not run, what comes for it is lost).
    pub alive: bool,
    pub tamper: Option<Tamper>,
}

pub struct Net {
    pub fabric: FabricServer<u8>,
    pub opts: FabricOptions,
    pub peers: Vec<Peer>,
    /// Datagrams in flight: (due, to fabric?, peer, bytes).
    wire: Vec<(Instant, bool, u8, Vec<u8>)>,
    pub latency: Duration,
    pub now: Instant,
    /// The PortConfig messages the fabric sent, in order: (peer, port, PortState).
    pub configs: Vec<(u8, u8, PortStateCode)>,
    /// The fabric and the hosts take their datagrams as `ipoib fabric` and `ipoib attach` do
    /// ([`FabricServer::queue_datagram`], [`RemoteHost::queue_datagram`], then one run at the
    /// step's time) rather than one run per datagram.
    pub queued: bool,
    /// Every datagram the fabric took: (time, from host, bytes).
    pub to_fabric: Vec<(Instant, u8, Vec<u8>)>,
    /// Loses datagrams from the fabric to the hosts (none when `None`).
    pub loss: Option<Loss>,
    /// Loses datagrams from the hosts to the fabric (none when `None`).
    pub loss_to_fabric: Option<Loss>,
    /// Fabric restarts so far.
    restarts: u64,
}

/// Host `i`'s address: 10.0.0.(i + 2) (10.0.0.1 would be the SM's CA).
pub fn addr(i: usize) -> Ipv4Addr {
    Ipv4Addr::new(10, 0, 0, i as u8 + 2)
}

pub fn link_cfg() -> HostLinkConfig {
    HostLinkConfig {
        retry: Duration::from_millis(100),
        keepalive: Duration::from_millis(200),
        dead_after: Duration::from_millis(700),
    }
}

pub fn fabric_opts(hosts: usize, seed: u64) -> FabricOptions {
    let mut o = FabricOptions::new(SubnetOptions::new(
        Topology::single_switch(hosts + 1).unwrap(),
        seed,
    ));
    o.timeout = Duration::from_millis(600);
    o
}

pub fn make_host(i: usize, now: Instant, seed: u64) -> Peer {
    make_host_with(i, now, seed, false)
}

/// A host; `external_connected`: in connected mode with the IP layer outside (packets in
/// through [`Net::send_from_os`]), as `ipoib attach` runs it.
fn make_host_with(i: usize, now: Instant, seed: u64, external_connected: bool) -> Peer {
    let slot = Rc::new(Cell::new(None));
    let s = slot.clone();
    let install = Box::new(
        move |h: &mut Host, _a: &ipoib_wire::udp_fabric::AttachAccept, rng| {
            let mut cfg = InterfaceConfig::new(Guid(0), 0);
            cfg.ipv6 = false;
            cfg.ipv4 = Some(Ipv4Config {
                addr: addr(i),
                prefix_len: 24,
                gateway: None,
            });
            let app = if external_connected {
                cfg.connected = Some(ConnectedConfig::rc());
                IpoibApp::install_external(h, cfg, rng)
            } else {
                IpoibApp::install(h, cfg, rng)
            };
            s.set(app.ok());
        },
    );
    Peer {
        host: RemoteHost::new(
            now,
            link_cfg(),
            seed + i as u64,
            Some(0x1000),
            None,
            install,
        ),
        ipoib: slot,
        alive: true,
        tamper: None,
    }
}

impl Net {
    pub fn new(hosts: usize, seed: u64) -> Net {
        let opts = fabric_opts(hosts, seed);
        let fabric = FabricServer::build(opts.clone()).unwrap();
        let now = Instant::ZERO;
        Net {
            fabric,
            opts,
            peers: (0..hosts).map(|i| make_host(i, now, seed * 100)).collect(),
            wire: Vec::new(),
            latency: Duration::from_micros(20),
            now,
            configs: Vec::new(),
            queued: false,
            to_fabric: Vec::new(),
            loss: None,
            loss_to_fabric: None,
            restarts: 0,
        }
    }

    /// [`Net::new`] with hosts in connected mode whose IP layer is outside, as `ipoib attach`
    /// runs them.
    pub fn new_external_connected(hosts: usize, seed: u64) -> Net {
        let mut net = Net::new(hosts, seed);
        let now = net.now;
        net.peers = (0..hosts)
            .map(|i| make_host_with(i, now, seed * 100, true))
            .collect();
        net
    }

    /// Datagrams host `i` sent that are still on their way to the fabric.
    pub fn in_flight_from(&self, i: usize) -> usize {
        self.wire
            .iter()
            .filter(|w| w.1 && usize::from(w.2) == i)
            .count()
    }

    /// An IP packet from host `i`'s operating system (external IP layer).
    pub fn send_from_os(&mut self, i: usize, packet: &[u8]) {
        let Some(h) = self.peers[i].ipoib.get() else {
            return;
        };
        let now = self.now;
        self.peers[i].host.with_host(now, |host, now| {
            if let Some(a) = host.app_mut::<IpoibApp>(h.app) {
                a.from_os(now, packet);
            }
        });
    }

    /// The IP packets waiting for host `i`'s operating system.
    pub fn take_to_os(&mut self, i: usize) -> Vec<Vec<u8>> {
        let Some(h) = self.peers[i].ipoib.get() else {
            return Vec::new();
        };
        let now = self.now;
        self.peers[i]
            .host
            .with_host(now, |host, _| {
                host.app_mut::<IpoibApp>(h.app)
                    .map(|a| std::iter::from_fn(|| a.to_os()).collect())
            })
            .flatten()
            .unwrap_or_default()
    }

    /// A new fabric process in place of the old one (what was in flight to it is lost).
    pub fn restart_fabric(&mut self) {
        // Another process: other session ids (`FabricOptions::session_seed`), as the runtime
        // draws a fresh seed for each.
        let mut opts = self.opts.clone();
        self.restarts += 1;
        opts.session_seed = Some(self.restarts);
        self.fabric = FabricServer::build(opts).unwrap();
        self.wire.retain(|w| !w.1);
        // The new fabric's clock starts where the world is.
        self.fabric.handle_timeout(self.now);
    }

    /// Puts what the fabric and the hosts sent on the wire (each [`Net::step`] starts so).
    pub fn collect(&mut self) {
        while let Some((to, d)) = self.fabric.poll_transmit() {
            if let Ok(DatagramRepr {
                message: MessageRepr::PortConfig(c) | MessageRepr::SeqPortConfig { config: c, .. },
                ..
            }) = DatagramRepr::parse(&d)
            {
                self.configs.push((to, c.port, c.state));
            }
            if self.loss.as_mut().is_some_and(|l| l(to, &d)) {
                continue;
            }
            self.wire.push((self.now + self.latency, false, to, d));
        }
        for (i, p) in self.peers.iter_mut().enumerate() {
            if !p.alive {
                continue;
            }
            while let Some(d) = p.host.poll_transmit() {
                let d = match &mut p.tamper {
                    Some(t) => t(&d).unwrap_or(d),
                    None => d,
                };
                if self.loss_to_fabric.as_mut().is_some_and(|l| l(i as u8, &d)) {
                    continue;
                }
                self.wire.push((self.now + self.latency, true, i as u8, d));
            }
        }
    }

    /// One step: delivers what is due next or runs the next timer. False when nothing is left
    /// before `deadline`.
    pub fn step(&mut self, deadline: Instant) -> bool {
        self.collect();
        let mut next = self.wire.iter().map(|w| w.0).min();
        let timers = std::iter::once(self.fabric.poll_timeout()).chain(
            self.peers
                .iter()
                .filter(|p| p.alive)
                .map(|p| p.host.poll_timeout()),
        );
        for t in timers.flatten() {
            next = Some(next.map_or(t, |n: Instant| n.min(t)));
        }
        let Some(t) = next.filter(|&t| t <= deadline) else {
            self.now = self.now.max(deadline);
            return false;
        };
        self.now = self.now.max(t);
        let now = self.now;
        let (due, rest): (Vec<_>, Vec<_>) = std::mem::take(&mut self.wire)
            .into_iter()
            .partition(|w| w.0 <= now);
        self.wire = rest;
        let mut got = vec![false; self.peers.len()];
        let mut fabric_got = false;
        for (_, to_fabric, peer, d) in due {
            if to_fabric && self.queued {
                self.fabric.queue_datagram(now, peer, &d);
                self.to_fabric.push((now, peer, d));
                fabric_got = true;
            } else if to_fabric {
                self.fabric.handle_datagram(now, peer, &d);
                self.to_fabric.push((now, peer, d));
            } else if let Some(p) = self.peers.get_mut(usize::from(peer)) {
                if p.alive && self.queued {
                    p.host.queue_datagram(now, &d);
                    got[usize::from(peer)] = true;
                } else if p.alive {
                    p.host.handle_datagram(now, &d);
                }
            }
        }
        if fabric_got {
            self.fabric.handle_timeout(now);
        }
        for (p, _) in self.peers.iter_mut().zip(got).filter(|(_, g)| *g) {
            p.host.handle_timeout(now);
        }
        if self.fabric.poll_timeout().is_some_and(|t| t <= now) {
            self.fabric.handle_timeout(now);
        }
        for p in self.peers.iter_mut().filter(|p| p.alive) {
            if p.host.poll_timeout().is_some_and(|t| t <= now) {
                p.host.handle_timeout(now);
            }
        }
        true
    }

    /// Runs until `done` or `d` of virtual time passed; true when `done` held.
    pub fn run_until(&mut self, d: Duration, mut done: impl FnMut(&Net) -> bool) -> bool {
        let deadline = self.now + d;
        loop {
            if done(self) {
                return true;
            }
            if !self.step(deadline) {
                return done(self);
            }
        }
    }

    pub fn run_for(&mut self, d: Duration) {
        let deadline = self.now + d;
        while self.step(deadline) {}
    }

    /// Host `i`'s IPoIB adapter.
    pub fn app(&self, i: usize) -> Option<&IpoibApp> {
        let h = self.peers[i].ipoib.get()?;
        self.peers[i].host.host()?.app::<IpoibApp>(h.app)
    }

    /// True once host `i`'s interface has carrier (joined the broadcast group).
    pub fn carrier(&self, i: usize) -> bool {
        self.app(i).is_some_and(IpoibApp::carrier)
    }

    /// Pings `dst` from host `i`; the ping's index.
    pub fn ping(&mut self, i: usize, dst: Ipv4Addr) -> Option<usize> {
        let h = self.peers[i].ipoib.get()?;
        let now = self.now;
        self.peers[i]
            .host
            .with_host(now, |host, now| {
                host.app_mut::<IpoibApp>(h.app)
                    .and_then(|a| a.ping(now, dst.into()).ok())
            })
            .flatten()
    }

    /// True when host `i`'s ping `k` was answered.
    pub fn answered(&self, i: usize, k: usize) -> bool {
        self.app(i)
            .and_then(|a| a.ip().pings().get(k).map(|p| p.reply_at.is_some()))
            .unwrap_or(false)
    }

    /// Pings `dst` from `i` and runs until the answer (or `within`).
    pub fn ping_and_wait(&mut self, i: usize, dst: Ipv4Addr, within: Duration) -> bool {
        let Some(k) = self.ping(i, dst) else {
            return false;
        };
        self.run_until(within, |n| n.answered(i, k))
    }
}
