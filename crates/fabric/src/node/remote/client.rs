//! The host side: [`HostLink`], the attach protocol as a sans-IO agent, and [`RemoteHost`], one
//! host (its HCA and software in a simulator of its own, cabled to an [`Uplink`]) driven by it.
//!
//! [`HostLink`]:
//! - sends AttachRequest (with the node GUID of its last identity as hint, none at first) every
//!   [`HostLinkConfig::retry`] until an AttachAccept comes;
//! - once attached, sends a Keepalive every [`HostLinkConfig::keepalive`]; any datagram of its
//!   session shows the fabric alive. Nothing heard for [`HostLinkConfig::dead_after`], or the
//!   reject UnknownSession (the fabric restarted), and the fabric is lost: it attaches again;
//! - [`HostLink::detach`] sends Detach and stops.
//!
//! [`RemoteHost`] builds the host when the first identity comes (HCA with the fabric's GUIDs, the
//! management agents on the port the fabric names, then the caller's [`InstallFn`]); on a loss it
//! takes the cable between HCA and uplink down (the port goes Down, so IPoIB loses carrier); on a
//! new accept with the same identity the fabric replays every port's configuration, whose first
//! PortConfig for the host's port that is not Down brings the cable up again (the port then
//! becomes Active and the interfaces join again), while one that is Down (the slot's link still
//! down at the fabric: IBA 1 §5.6.2.1, a port whose partner is disabled gets no link) leaves it
//! down. An accept with another identity builds a new host. A PortConfig with PortState Down for
//! the host's port (its link down at the fabric: the slot's port or the switch's end Disabled)
//! takes the cable down too, and the next one with another state brings it up before it is
//! written (`HostSim::configure`).
//!
//! Invariants: datagrams of another session are counted and dropped; every queue is bounded.

use super::uplink::{Uplink, UPLINK_PORT};
use super::{config_from_wire, Outgoing};
use crate::hw::hca::Hca;
use crate::hw::link::{LinkId, LinkParams};
use crate::hw::mgmt::{PortConfig, PortState};
use crate::hw::rc::{engine_factory_with, Config as RcConfig};
use crate::hw::sim::{NodeId, PortRef, Simulator, Tx};
use crate::node::host::Host;
use ipoib_proto::rng::Rng;
use ipoib_proto::time::Instant;
use ipoib_wire::udp_fabric::{AttachAccept, DatagramRepr, MessageRepr, RejectReason};
use ipoib_wire::Guid;
use std::collections::VecDeque;
use std::time::Duration;

/// Datagrams or events waiting, at most.
const QUEUE_LIMIT: usize = 16_384;

/// Timers of a [`HostLink`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HostLinkConfig {
    /// Between AttachRequests while unattached.
    pub retry: Duration,
    /// Between Keepalives while attached.
    pub keepalive: Duration,
    /// Nothing heard for this long: the fabric is lost.
    pub dead_after: Duration,
}

impl Default for HostLinkConfig {
    /// Retry every 500 ms, keepalive every second, lost after 3 s.
    fn default() -> HostLinkConfig {
        HostLinkConfig {
            retry: Duration::from_millis(500),
            keepalive: Duration::from_secs(1),
            dead_after: Duration::from_secs(3),
        }
    }
}

/// What a [`HostLink`] reports.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HostLinkEvent {
    /// The fabric gave an identity (first attach or reattach).
    Attached(AttachAccept),
    /// The SM's configuration of the port.
    Config(PortConfig),
    /// A SubnSet(PortInfo) with ClientReregister 1 on this port (IBA 1 §14.4.11).
    ClientReregister(u8),
    /// A packet for the HCA.
    Packet(Vec<u8>),
    /// The fabric stopped answering (or forgot the session); attaching again.
    Lost,
    /// The fabric refused the attach (retrying).
    Rejected(RejectReason),
}

/// Counters of a [`HostLink`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct HostLinkCounters {
    /// Datagrams received.
    pub datagrams: u64,
    /// Datagrams that did not parse, or a configuration with an unknown port state.
    pub malformed: u64,
    /// Datagrams of another session or not expected in the current state.
    pub stale: u64,
    /// Attach requests sent.
    pub attach_requests: u64,
    /// Keepalives sent.
    pub keepalives: u64,
    /// Times the fabric was lost.
    pub lost: u64,
    /// Packets not sent: not attached.
    pub unattached: u64,
    /// Datagrams or events dropped: queue full.
    pub queue_full: u64,
    /// PortConfig messages of the session taken (each a change of the port as the slot's SMA
    /// holds it, docs/UDP-FABRIC.md "PortConfig carries what the SMA set").
    pub port_configs: u64,
    /// ClientReregister messages of the session taken (each a SubnSet(PortInfo) with
    /// ClientReregister 1 at the slot's SMA, IBA 1 §14.4.11).
    pub client_reregisters: u64,
}

#[derive(Debug, Clone)]
enum State {
    Attaching {
        next: Instant,
    },
    Attached {
        session: u64,
        last_heard: Instant,
        next_keepalive: Instant,
    },
    Detached,
}

/// The attach protocol. See the module docs.
#[derive(Debug)]
pub struct HostLink {
    cfg: HostLinkConfig,
    state: State,
    hint: Guid,
    seq: u32,
    out: VecDeque<Outgoing>,
    events: VecDeque<HostLinkEvent>,
    counters: HostLinkCounters,
}

impl HostLink {
    /// Starts attaching at `now`.
    pub fn new(now: Instant, cfg: HostLinkConfig) -> HostLink {
        HostLink {
            cfg,
            state: State::Attaching { next: now },
            hint: Guid(0),
            seq: 0,
            out: VecDeque::new(),
            events: VecDeque::new(),
            counters: HostLinkCounters::default(),
        }
    }

    /// Counters.
    pub fn counters(&self) -> HostLinkCounters {
        self.counters
    }

    /// True while attached.
    pub fn is_attached(&self) -> bool {
        matches!(self.state, State::Attached { .. })
    }

    /// The session, while attached.
    pub fn session(&self) -> Option<u64> {
        match self.state {
            State::Attached { session, .. } => Some(session),
            _ => None,
        }
    }

    /// The next datagram for the fabric.
    pub fn poll_transmit(&mut self) -> Option<Vec<u8>> {
        self.out.pop_front().map(|o| o.to_vec())
    }

    /// The next datagram for the fabric, in its two parts (a packet's own buffer as the body:
    /// [`Outgoing`]).
    pub fn poll_transmit_parts(&mut self) -> Option<Outgoing> {
        self.out.pop_front()
    }

    /// The next event.
    pub fn poll_event(&mut self) -> Option<HostLinkEvent> {
        self.events.pop_front()
    }

    /// When [`HostLink::handle_timeout`] is next due.
    pub fn poll_timeout(&self) -> Option<Instant> {
        match self.state {
            State::Attaching { next } => Some(next),
            State::Attached {
                last_heard,
                next_keepalive,
                ..
            } => Some(next_keepalive.min(last_heard + self.cfg.dead_after)),
            State::Detached => None,
        }
    }

    /// Sends what is due at `now` (early or repeated calls are harmless).
    pub fn handle_timeout(&mut self, now: Instant) {
        match self.state {
            State::Attaching { next } if now >= next => {
                self.counters.attach_requests += 1;
                self.send(0, MessageRepr::AttachRequest { hint: self.hint });
                self.state = State::Attaching {
                    next: now + self.cfg.retry,
                };
            }
            State::Attached {
                session,
                last_heard,
                next_keepalive,
            } => {
                if now >= last_heard + self.cfg.dead_after {
                    self.lose(now);
                } else if now >= next_keepalive {
                    self.counters.keepalives += 1;
                    self.seq = self.seq.wrapping_add(1);
                    self.send(session, MessageRepr::Keepalive { seq: self.seq });
                    self.state = State::Attached {
                        session,
                        last_heard,
                        next_keepalive: now + self.cfg.keepalive,
                    };
                }
            }
            _ => {}
        }
    }

    /// One datagram from the fabric.
    pub fn handle_datagram(&mut self, now: Instant, data: &[u8]) {
        self.handle_datagram_in(now, data, Vec::new());
    }

    /// [`HostLink::handle_datagram`], a Packet message's packet copied into `buf` (a spent
    /// packet's allocation, its bytes stale) rather than a new one; `buf` is dropped otherwise.
    pub fn handle_datagram_in(&mut self, now: Instant, data: &[u8], mut buf: Vec<u8>) {
        self.counters.datagrams += 1;
        let Ok(d) = DatagramRepr::parse(data) else {
            self.counters.malformed += 1;
            return;
        };
        match (&mut self.state, d.message) {
            (State::Attaching { .. }, MessageRepr::AttachAccept(a)) => {
                self.hint = a.node_guid;
                self.state = State::Attached {
                    session: d.session,
                    last_heard: now,
                    next_keepalive: now + self.cfg.keepalive,
                };
                self.event(HostLinkEvent::Attached(a));
            }
            (State::Attaching { .. }, MessageRepr::AttachReject { reason }) => {
                self.event(HostLinkEvent::Rejected(reason));
            }
            (State::Attached { session, .. }, MessageRepr::AttachReject { reason })
                if *session == d.session && reason == RejectReason::UnknownSession =>
            {
                self.lose(now);
            }
            (
                State::Attached {
                    session,
                    last_heard,
                    ..
                },
                m,
            ) if *session == d.session => {
                *last_heard = now;
                match m {
                    MessageRepr::Packet(p) => {
                        buf.clear();
                        buf.extend_from_slice(p);
                        self.event(HostLinkEvent::Packet(buf));
                    }
                    MessageRepr::PortConfig(c) => match config_from_wire(&c) {
                        Some(c) => {
                            self.counters.port_configs += 1;
                            self.event(HostLinkEvent::Config(c))
                        }
                        None => self.counters.malformed += 1,
                    },
                    MessageRepr::ClientReregister { port } => {
                        self.counters.client_reregisters += 1;
                        self.event(HostLinkEvent::ClientReregister(port))
                    }
                    // Keepalive answers and a repeated accept only show the fabric alive.
                    _ => {}
                }
            }
            _ => self.counters.stale += 1,
        }
    }

    /// Sends `packet` (LRH..VCRC) to the fabric; counted and dropped while unattached.
    pub fn send_packet(&mut self, packet: &[u8]) {
        match self.state {
            State::Attached { session, .. } => self.send(session, MessageRepr::Packet(packet)),
            _ => self.counters.unattached += 1,
        }
    }

    /// [`HostLink::send_packet`] of a packet whose buffer becomes the datagram's body (not
    /// copied: [`Outgoing`]).
    pub fn send_packet_buf(&mut self, packet: Vec<u8>) {
        match self.state {
            State::Attached { session, .. } => self.push(Outgoing::packet(session, packet)),
            _ => self.counters.unattached += 1,
        }
    }

    /// Leaves the fabric (Detach) and stops.
    pub fn detach(&mut self) {
        if let State::Attached { session, .. } = self.state {
            self.send(session, MessageRepr::Detach);
        }
        self.state = State::Detached;
    }

    fn lose(&mut self, now: Instant) {
        self.counters.lost += 1;
        self.state = State::Attaching { next: now };
        self.event(HostLinkEvent::Lost);
        self.handle_timeout(now);
    }

    fn send(&mut self, session: u64, message: MessageRepr<'_>) {
        if let Some(o) = Outgoing::message(&DatagramRepr { session, message }) {
            self.push(o);
        }
    }

    fn push(&mut self, o: Outgoing) {
        if self.out.len() >= QUEUE_LIMIT {
            self.counters.queue_full += 1;
            return;
        }
        self.out.push_back(o);
    }

    fn event(&mut self, e: HostLinkEvent) {
        if self.events.len() >= QUEUE_LIMIT {
            self.counters.queue_full += 1;
            return;
        }
        self.events.push_back(e);
    }
}

/// PSNs an RC requester of a remote host keeps unacknowledged (the engine's default is 128,
/// `crate::hw::rc::Config`). The path between two hosts of a UDP fabric crosses three processes
/// and two sockets each way, a round trip of hundreds of microseconds against a few inside one
/// process; a window of 128 packets of a 4,096-byte MTU (512 KiB) then bounds a connection to
/// about 512 KiB per round trip, below what the processes carry (docs/benchmarks/udp.md,
/// "udppath, second pass"). IBA 1 §9.7.1.1 bounds the window only below 2^23 PSNs; 1,024 packets
/// (4 MiB) stays within the sockets' 8 MiB buffers (docs/DEPLOYED.md "Linux UDP sockets").
pub const REMOTE_RC_WINDOW: u32 = 1024;

/// Installs the host's software (IPoIB interfaces, ...) on a host just built for `identity`,
/// with a generator of its own.
pub type InstallFn = Box<dyn FnMut(&mut Host, &AttachAccept, Rng)>;

struct HostSim {
    sim: Simulator,
    host: NodeId,
    uplink: NodeId,
    cable: LinkId,
    identity: AttachAccept,
    /// The cable between HCA and uplink as last set (its event may not have run yet).
    cable_up: bool,
}

impl HostSim {
    /// Takes the cable between HCA and uplink up or down at `now`, unless it already is.
    fn set_cable(&mut self, now: Instant, up: bool) {
        if self.cable_up != up {
            self.cable_up = up;
            self.sim.schedule_link_state(self.cable, now, up);
        }
    }

    /// The fabric's configuration of port `c.port` (docs/UDP-FABRIC.md, "PortConfig carries
    /// what the SMA set"). For the host's port, PortState Down says the link is down at the
    /// fabric (the slot's port or the switch's end Disabled, IBA 1 §14.2.5.6, §5.6.2.1): the
    /// cable goes down as if pulled (the port Down, LinkDownedCounter, IPoIB loses carrier), as
    /// for a host in the fabric's process; any other state after it says the link trained
    /// again: the cable comes up (Init) before the configuration is written.
    fn configure(&mut self, now: Instant, c: PortConfig) {
        if c.port == self.identity.port {
            self.set_cable(now, c.state != PortState::Down);
        }
        self.sim
            .with_node::<Uplink, _>(self.uplink, |u, _, tx| u.configure_host(c, tx));
    }
}

/// One host attached to a fabric elsewhere. See the module docs.
pub struct RemoteHost {
    link: HostLink,
    host: Option<HostSim>,
    install: InstallFn,
    seed: u64,
    first_qpn: Option<u32>,
    builds: u64,
    status: VecDeque<HostLinkEvent>,
    /// The latest time the host was given.
    now: Instant,
}

impl std::fmt::Debug for RemoteHost {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RemoteHost")
            .field("link", &self.link)
            .field("built", &self.host.is_some())
            .field("builds", &self.builds)
            .finish()
    }
}

impl RemoteHost {
    /// A host that starts attaching at `now`. `seed` seeds its simulator and its software;
    /// `first_qpn` is its HCA's first QPN (the runtime draws one at random, so that a restarted
    /// host does not reuse its previous QPNs); `install` puts its software on it once built.
    pub fn new(
        now: Instant,
        cfg: HostLinkConfig,
        seed: u64,
        first_qpn: Option<u32>,
        install: InstallFn,
    ) -> RemoteHost {
        RemoteHost {
            link: HostLink::new(now, cfg),
            host: None,
            install,
            seed,
            first_qpn,
            builds: 0,
            status: VecDeque::new(),
            now,
        }
    }

    /// The latest time the host was given (its virtual present; it never goes back).
    pub fn now(&self) -> Instant {
        self.now
    }

    /// The protocol agent.
    pub fn link(&self) -> &HostLink {
        &self.link
    }

    /// The host's simulator, once an identity came.
    pub fn sim(&self) -> Option<&Simulator> {
        self.host.as_ref().map(|h| &h.sim)
    }

    /// The host device, once built.
    pub fn host(&self) -> Option<&Host> {
        let h = self.host.as_ref()?;
        h.sim.node::<Host>(h.host)
    }

    /// The host device, mutably, once built: for changes that need no action at once (a packet
    /// queued in an adapter); [`RemoteHost::with_host`] then lets the host act on them.
    pub fn host_mut(&mut self) -> Option<&mut Host> {
        let h = self.host.as_mut()?;
        h.sim.node_mut::<Host>(h.host)
    }

    /// The identity the host was built for.
    pub fn identity(&self) -> Option<&AttachAccept> {
        self.host.as_ref().map(|h| &h.identity)
    }

    /// The uplink's counters, once built.
    pub fn uplink(&self) -> Option<&Uplink> {
        let h = self.host.as_ref()?;
        h.sim.node::<Uplink>(h.uplink)
    }

    /// Hosts built so far (1 after the first attach; more when the fabric gave another identity).
    pub fn builds(&self) -> u64 {
        self.builds
    }

    /// The next status change (Attached, Lost, Rejected) for the log.
    pub fn poll_status(&mut self) -> Option<HostLinkEvent> {
        self.status.pop_front()
    }

    /// The next datagram for the fabric.
    pub fn poll_transmit(&mut self) -> Option<Vec<u8>> {
        self.link.poll_transmit()
    }

    /// The next datagram for the fabric, in its two parts ([`HostLink::poll_transmit_parts`]).
    pub fn poll_transmit_parts(&mut self) -> Option<Outgoing> {
        self.link.poll_transmit_parts()
    }

    /// When [`RemoteHost::handle_timeout`] is next due.
    pub fn poll_timeout(&self) -> Option<Instant> {
        let sim = self.host.as_ref().and_then(|h| h.sim.next_event_at());
        self.link.poll_timeout().into_iter().chain(sim).min()
    }

    /// Runs the host up to `now` and the protocol's timers.
    pub fn handle_timeout(&mut self, now: Instant) {
        self.advance(now);
        self.link.handle_timeout(now);
        self.process(now);
    }

    /// One datagram from the fabric at `now`.
    pub fn handle_datagram(&mut self, now: Instant, data: &[u8]) {
        self.advance(now);
        let buf = self.spare();
        self.link.handle_datagram_in(now, data, buf);
        self.process(now);
    }

    /// A buffer for a packet from the fabric, or from the OS (a segment of a super-packet the
    /// caller builds for the host): a spent packet's allocation (the HCA's consumed ones and
    /// sent datagrams' bodies, `Tx::spare`, its bytes stale), or an empty `Vec` when none is
    /// kept. The host does not run.
    pub fn spare(&mut self) -> Vec<u8> {
        self.host
            .as_mut()
            .map(|h| h.sim.spare())
            .unwrap_or_default()
    }

    /// One datagram from the fabric at `now`, its packet put on the host's cable without
    /// running the host: the packet waits there, at `now`, for the next run
    /// ([`RemoteHost::handle_timeout`]), which takes every packet a turn brought in one run of
    /// the host's simulator instead of one run per datagram as [`RemoteHost::handle_datagram`]
    /// does. A datagram that is not a packet (an accept, a configuration, a loss) is handled as
    /// by [`RemoteHost::handle_datagram`], at once. `now` before the host's present is taken as
    /// the present, as everywhere here.
    pub fn queue_datagram(&mut self, now: Instant, data: &[u8]) {
        let behind = self.host.as_ref().is_some_and(|h| h.sim.now() < now);
        if behind || now > self.now {
            self.advance(now);
        }
        let now = self.now;
        let buf = self.spare();
        self.link.handle_datagram_in(now, data, buf);
        if self.apply_events(now) {
            self.advance(now);
            self.send_uplink();
        }
    }

    /// Runs `f` on the host device now (a ping, a group join, leaving before a detach), then
    /// lets the host act at once. `None` before the host is built.
    pub fn with_host<R>(
        &mut self,
        now: Instant,
        f: impl FnOnce(&mut Host, Instant) -> R,
    ) -> Option<R> {
        self.advance(now);
        let h = self.host.as_mut()?;
        let r = h.sim.with_node::<Host, _>(h.host, |host, now, tx| {
            let r = f(host, now);
            host.drive(now, tx);
            r
        });
        self.process(now);
        r
    }

    /// Keeps the body of a datagram the caller sent (a packet's own buffer, [`Outgoing`]) for
    /// the host's next packets ([`Simulator::recycle`]): they are built in it, not in a new
    /// allocation.
    pub fn recycle(&mut self, body: Vec<u8>) {
        if let Some(h) = &mut self.host {
            h.sim.recycle(body);
        }
    }

    /// Runs `f` on the host device and its simulator's [`Tx`] at the host's present, without
    /// letting the host act: what `f` queued waits for [`RemoteHost::with_host`] or the next
    /// run (a packet from the OS handed over in its own buffer, a spare buffer taken back).
    /// `None` before the host is built.
    pub fn with_host_tx<R>(
        &mut self,
        f: impl FnOnce(&mut Host, Instant, &mut Tx) -> R,
    ) -> Option<R> {
        let h = self.host.as_mut()?;
        h.sim.with_node::<Host, _>(h.host, f)
    }

    /// Sends Detach (the caller leaves its groups first, through [`RemoteHost::with_host`]).
    pub fn detach(&mut self, now: Instant) {
        self.advance(now);
        self.process(now);
        self.link.detach();
    }

    fn advance(&mut self, now: Instant) {
        self.now = self.now.max(now);
        let now = self.now;
        if let Some(h) = &mut self.host {
            let t = now.max(h.sim.now());
            h.sim.run_until(t);
        }
    }

    /// Applies the protocol's events to the host and sends what the host sent.
    fn process(&mut self, now: Instant) {
        self.apply_events(now);
        self.advance(now);
        self.send_uplink();
    }

    /// Sends what the host's HCA sent the uplink.
    fn send_uplink(&mut self) {
        if let Some(h) = &mut self.host {
            if let Some(u) = h.sim.node_mut::<Uplink>(h.uplink) {
                while let Some(p) = u.poll_to_network() {
                    self.link.send_packet_buf(p);
                }
            }
        }
    }

    /// Applies the protocol's events to the host without running it (a packet goes onto the
    /// cable at the host's present). True when one of them was not a packet.
    fn apply_events(&mut self, now: Instant) -> bool {
        let mut other = false;
        while let Some(e) = self.link.poll_event() {
            other |= !matches!(e, HostLinkEvent::Packet(_));
            match e {
                HostLinkEvent::Attached(a) => {
                    // The same identity: the cable stays as it is until the PortConfig of the
                    // host's port that the fabric sends after the accept (`Remote::attach`) says
                    // whether the slot's link is up.
                    let same = self.host.as_ref().is_some_and(|h| h.identity == a);
                    if !same {
                        self.build(now, &a);
                    }
                    self.status.push_back(HostLinkEvent::Attached(a));
                }
                HostLinkEvent::Config(c) => {
                    if let Some(h) = &mut self.host {
                        h.configure(now, c);
                    }
                }
                HostLinkEvent::ClientReregister(port) => {
                    if let Some(h) = &mut self.host {
                        h.sim.with_node::<Uplink, _>(h.uplink, |u, _, tx| {
                            u.client_reregister_host(port, tx)
                        });
                    }
                }
                HostLinkEvent::Packet(p) => {
                    if let Some(h) = &mut self.host {
                        h.sim
                            .with_node::<Uplink, _>(h.uplink, |u, _, tx| u.from_network(p, tx));
                    }
                }
                HostLinkEvent::Lost => {
                    if let Some(h) = &mut self.host {
                        h.set_cable(now, false);
                    }
                    self.status.push_back(HostLinkEvent::Lost);
                }
                HostLinkEvent::Rejected(r) => self.status.push_back(HostLinkEvent::Rejected(r)),
            }
            if self.status.len() > QUEUE_LIMIT {
                self.status.pop_front();
            }
        }
        other
    }

    fn build(&mut self, now: Instant, a: &AttachAccept) {
        self.builds += 1;
        let mut sim = Simulator::new(self.seed.wrapping_add(self.builds));
        sim.run_until(now);
        let mut hca = Hca::with_port_guids(a.node_guid, a.port_guids.clone()).with_engine(
            engine_factory_with(RcConfig {
                max_outstanding: REMOTE_RC_WINDOW,
                ..RcConfig::default()
            }),
        );
        if let Some(q) = self.first_qpn {
            hca = hca.with_first_qpn(rebuilt_first_qpn(q, self.builds));
        }
        let ports = u8::try_from(a.port_guids.len()).unwrap_or(u8::MAX);
        let host = sim.add_node(Box::new(Host::with_mgmt_port(hca, a.port)), ports);
        let uplink = sim.add_node(Box::new(Uplink::new(host, QUEUE_LIMIT)), UPLINK_PORT);
        let cable = sim.connect(
            PortRef {
                node: host,
                port: a.port,
            },
            PortRef {
                node: uplink,
                port: UPLINK_PORT,
            },
            // The cable inside the host costs nothing: the network's latency is the real one.
            LinkParams {
                latency: Duration::ZERO,
                bits_per_second: 0,
            },
        );
        let rng = sim.fork_rng(1);
        let install = &mut self.install;
        sim.with_node::<Host, _>(host, |h, _, _| install(h, a, rng));
        self.host = Some(HostSim {
            sim,
            host,
            uplink,
            cable,
            identity: a.clone(),
            cable_up: true,
        });
    }
}

/// The lowest first QPN a (re)built host's HCA takes: above QP0/QP1 and the small numbers.
const QPN_BASE: u32 = 0x100;
/// The span first QPNs wrap in, leaving room above for the QPs the host creates.
const QPN_SPAN: u32 = 0x00ff_0000;

/// The first QPN of a host's `builds`-th HCA, given the runtime's draw `drawn`: each build moves
/// 0x1000 further, wrapping inside `QPN_BASE..QPN_BASE + QPN_SPAN`, so that no two builds in a
/// row share a first QPN (clamping at the top of the 24-bit range would make them all equal).
fn rebuilt_first_qpn(drawn: u32, builds: u64) -> u32 {
    let offset = u64::from(drawn.wrapping_sub(QPN_BASE) % QPN_SPAN) + builds * 0x1000;
    QPN_BASE + (offset % u64::from(QPN_SPAN)) as u32
}

#[cfg(test)]
mod tests {
    use super::{rebuilt_first_qpn, HostLink, HostLinkConfig, HostLinkEvent};
    use ipoib_proto::time::Instant;
    use ipoib_wire::udp_fabric::{AttachAccept, DatagramRepr, MessageRepr};
    use ipoib_wire::Guid;

    // A packet from the fabric is copied into the buffer the caller gives (a spent packet's
    // allocation), not into a new one.
    #[test]
    fn a_packet_from_the_fabric_is_copied_into_the_buffer_given() {
        let mut link = HostLink::new(Instant::ZERO, HostLinkConfig::default());
        let accept = AttachAccept {
            slot: 1,
            port: 1,
            timeout_ms: 3000,
            node_guid: Guid(0x10),
            port_guids: vec![Guid(0x11)],
        };
        let d = |message| {
            DatagramRepr {
                session: 7,
                message,
            }
            .to_vec()
            .unwrap()
        };
        link.handle_datagram(Instant::ZERO, &d(MessageRepr::AttachAccept(accept)));
        assert!(matches!(
            link.poll_event(),
            Some(HostLinkEvent::Attached(_))
        ));
        let packet = [0x5au8; 100];
        let buf = vec![0xee; 4200];
        let at = buf.as_ptr();
        link.handle_datagram_in(Instant::ZERO, &d(MessageRepr::Packet(&packet)), buf);
        match link.poll_event() {
            Some(HostLinkEvent::Packet(p)) => {
                assert_eq!(p, packet);
                assert_eq!(p.as_ptr(), at, "copied into the buffer given");
            }
            e => panic!("{e:?}"),
        }
    }

    #[test]
    fn rebuilt_hosts_get_new_first_qpns_even_near_the_top() {
        for drawn in [0, 2, 0x100, 0x12_3456, 0x00ff_00ff, 0x00ff_fff0, u32::MAX] {
            let qpns: Vec<u32> = (1..=4).map(|b| rebuilt_first_qpn(drawn, b)).collect();
            for w in qpns.windows(2) {
                assert_ne!(w[0], w[1], "drawn {drawn:#x}: {qpns:x?}");
            }
            for q in &qpns {
                assert!((0x100..0x00ff_0100).contains(q), "drawn {drawn:#x}: {q:#x}");
            }
        }
    }
}
