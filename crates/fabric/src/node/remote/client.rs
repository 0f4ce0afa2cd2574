//! The host side: [`RemoteHost`], one host (its HCA and software in a simulator of its own,
//! cabled to an [`Uplink`]) driven by [`HostLink`], the attach protocol (module `link`).
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

use super::link::{HostLink, HostLinkConfig, HostLinkEvent, QUEUE_LIMIT};
use super::uplink::{Uplink, UPLINK_PORT};
use super::Outgoing;
use crate::hw::capture::Capture;
use crate::hw::hca::Hca;
use crate::hw::link::{LinkId, LinkParams};
use crate::hw::mgmt::{PortConfig, PortState};
use crate::hw::rc::{engine_factory_with, Config as RcConfig};
use crate::hw::sim::{NodeId, PortRef, Simulator, Tx};
use crate::node::host::Host;
use ipoib_proto::rng::Rng;
use ipoib_proto::time::Instant;
use ipoib_wire::udp_fabric::AttachAccept;
use std::collections::VecDeque;
use std::time::Duration;

/// PSNs an RC requester of a remote host keeps unacknowledged (the engine's default is 128,
/// `crate::hw::rc::Config`). The path between two hosts of a UDP fabric crosses three processes
/// and two sockets each way, a round trip of hundreds of microseconds against a few inside one
/// process; a window of 128 packets of a 4,096-byte MTU (512 KiB) then bounds a connection to
/// about 512 KiB per round trip, below what the processes carry (docs/benchmarks/udp.md,
/// "udppath, second pass"). IBA 1 §9.7.1.1 bounds the window only below 2^23 PSNs; 1,024 packets
/// (4 MiB) stays within the sockets' 8 MiB buffers (docs/DEPLOYED.md "Linux UDP sockets").
pub const REMOTE_RC_WINDOW: u32 = 1024;

/// Stream of the host's seed its attach nonces' key is drawn from, when not given.
const NONCE_STREAM: u64 = 0x006e_6f6e_6365;

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
    /// The capture of [`RemoteHost::set_capture`] while no host is built; a built host's
    /// simulator holds it, and a host built again takes it over.
    capture: Option<Capture>,
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
    /// host does not reuse its previous QPNs); `nonce_key` keys its attach nonces
    /// ([`HostLink::new`]; `None`: drawn from `seed`, the same in every run, as tests want; the
    /// runtime gives one from the operating system's random source); `install` puts its
    /// software on it once built.
    pub fn new(
        now: Instant,
        cfg: HostLinkConfig,
        seed: u64,
        first_qpn: Option<u32>,
        nonce_key: Option<[u64; 2]>,
        install: InstallFn,
    ) -> RemoteHost {
        let key = nonce_key.unwrap_or_else(|| {
            let mut r = Rng::new(seed).fork(NONCE_STREAM);
            [r.next_u64(), r.next_u64()]
        });
        RemoteHost {
            link: HostLink::new(now, cfg, key),
            host: None,
            install,
            seed,
            first_qpn,
            builds: 0,
            status: VecDeque::new(),
            now,
            capture: None,
        }
    }

    /// Records every packet on the host's cable, both ways (what its HCA sends towards the
    /// fabric and what the fabric delivers to it, as a port's capture shows them): the capture
    /// tap of the host's simulator, carried over to the host built after a reattach.
    pub fn set_capture(&mut self, capture: Capture) {
        match &mut self.host {
            Some(h) => h.sim.set_capture(capture),
            None => self.capture = Some(capture),
        }
    }

    /// The capture of [`RemoteHost::set_capture`], to take its bytes as it grows.
    pub fn capture_mut(&mut self) -> Option<&mut Capture> {
        match &mut self.host {
            Some(h) => h.sim.capture_mut(),
            None => self.capture.as_mut(),
        }
    }

    /// Stops the capture and gives it back.
    pub fn take_capture(&mut self) -> Option<Capture> {
        match &mut self.host {
            Some(h) => h.sim.take_capture(),
            None => self.capture.take(),
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

    /// The next status change (Attached, Lost, Rejected, OtherVersion) for the log.
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
                e @ (HostLinkEvent::Rejected(_) | HostLinkEvent::OtherVersion(_)) => {
                    self.status.push_back(e)
                }
            }
            if self.status.len() > QUEUE_LIMIT {
                self.status.pop_front();
            }
        }
        other
    }

    fn build(&mut self, now: Instant, a: &AttachAccept) {
        self.builds += 1;
        let capture = match self.host.take() {
            Some(mut old) => old.sim.take_capture(),
            None => self.capture.take(),
        };
        let mut sim = Simulator::new(self.seed.wrapping_add(self.builds));
        sim.run_until(now);
        if let Some(c) = capture {
            sim.set_capture(c);
        }
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
    use super::rebuilt_first_qpn;

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
