//! The discrete-event simulator: virtual time that jumps from one event to the next, a seeded RNG,
//! and a deterministic order (events at the same instant run in the order they were scheduled).
//!
//! Devices (HCAs, switches) implement [`Device`]: they receive packets on numbered ports, may send
//! packets on their ports through a [`Tx`], and ask for a timer through [`Device::poll_timeout`]
//! (quinn-proto's shape: the simulator calls [`Device::handle_timeout`] when it is due, and calling
//! it early or twice must be harmless). Links between ports carry packets with latency, serialisation
//! delay and faults ([`crate::hw::link`]); every packet put on a link can be captured ([`crate::hw::capture`]).
//! A [`DropFilter`] loses chosen packets (say, the first CM REQ) where random faults cannot aim.

use crate::hw::capture::Capture;
pub use crate::hw::frame::Frame;
pub use crate::hw::ids::{NodeId, PortRef};
use crate::hw::link::{Direction, Fault, Link, LinkId, LinkParams, Verdict};
use crate::hw::mgmt::{Config, CONFIG_DELAY};
use ipoib_proto::rng::Rng;
use ipoib_proto::time::Instant;
use queue::Queue;
use std::any::Any;
use std::time::Duration;

mod queue;
mod tx;

pub use tx::{
    Tx, LARGE_SPARE, LARGE_SPARES, PORT_STATE_DELAY, SMALL_SPARE, SMALL_SPARES, SPARE_BUFFERS,
};

/// A device on the fabric.
pub trait Device: Any {
    /// A packet arrived on `port`.
    fn receive(&mut self, now: Instant, port: u8, packet: Vec<u8>, tx: &mut Tx);
    /// A packet arrived on `port`, with its "CRCs known good" mark ([`Frame`]); what the
    /// simulator calls. By default [`Device::receive`] with the bytes: the CRCs are checked.
    fn receive_frame(&mut self, now: Instant, port: u8, frame: Frame, tx: &mut Tx) {
        self.receive(now, port, frame.into_vec(), tx);
    }
    /// The timer returned by `poll_timeout` is due: the simulator calls it only when
    /// `poll_timeout` is at or before `now`; other callers may call it early or twice.
    fn handle_timeout(&mut self, now: Instant, tx: &mut Tx);
    /// When the device next needs `handle_timeout`; `None` for never.
    fn poll_timeout(&self) -> Option<Instant>;
    /// True when the last `receive_frame` moved the device's timer (`poll_timeout`) no earlier,
    /// so that the simulator need not ask for it again (its `refresh_timer`: a timer
    /// event at or before it is queued already, or none is wanted). The default, false, is
    /// always right.
    fn timer_kept(&self) -> bool {
        false
    }
    /// True for a device whose `poll_timeout` is `None` whatever happens (a switch: it adds no
    /// delay and keeps no timer): read once, when the device is added, so that the simulator
    /// does not ask for its timer after each of its events. False by default.
    fn never_times_out(&self) -> bool {
        false
    }
    /// Called when one of the device's ports goes up or down.
    fn link_state(&mut self, _now: Instant, _port: u8, _up: bool, _tx: &mut Tx) {}
    /// The subnet manager wrote configuration into this device ([`crate::hw::mgmt`]).
    fn configure(&mut self, _now: Instant, _config: Config, _tx: &mut Tx) {}
    /// The bytes each of the device's ports may hold queued for its link, or `None` for no
    /// bound (the default). Read when a port is cabled; a packet sent beyond it is discarded
    /// and reported to [`Device::discarded`] ([`crate::hw::link`]).
    fn port_buffer(&self) -> Option<usize> {
        None
    }
    /// A packet the device sent out of `port` was discarded because the port's buffer was full
    /// ([`Device::port_buffer`]).
    fn discarded(&mut self, _port: u8, _frame: &Frame) {}
    /// For downcasting to the concrete device.
    fn as_any(&self) -> &dyn Any;
    /// For downcasting to the concrete device.
    fn as_any_mut(&mut self) -> &mut dyn Any;
}

#[derive(Debug)]
enum Event {
    /// A packet arrives at the end of `link` opposite to `from` (the side, 0 or 1, of the end
    /// that sent it: `Link::ends`, `Link::dirs`).
    Deliver {
        link: LinkId,
        from: u8,
        packet: Frame,
    },
    Timer {
        node: NodeId,
    },
    LinkState {
        link: LinkId,
        up: bool,
    },
    /// End `side` of `link` disabled or enabled its port ([`Tx::set_port_enabled`]).
    PortEnable {
        link: LinkId,
        side: usize,
        enabled: bool,
    },
    /// Boxed: the other events, packets mostly, are moved in and out of the queue, and are
    /// half the size of a configuration.
    Configure {
        to: NodeId,
        config: Box<Config>,
    },
}

/// Decides, for each packet put on a link, whether it is lost: given the link, the sending port
/// and the packet (LRH..VCRC), true drops it. It runs before the link's fault chain; a packet it
/// drops counts in its direction's `dropped` and is captured all the same, as a `Drop` fault's
/// is (it was put on the link). Tests use it for targeted losses ("the first DREQ").
pub type DropFilter = Box<dyn FnMut(LinkId, PortRef, &[u8]) -> bool>;

/// Totals over the whole run.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SimStats {
    /// Events processed.
    pub events: u64,
    /// Packets put on links.
    pub packets: u64,
    /// Bytes put on links.
    pub bytes: u64,
    /// Packets sent out of a port with no cable.
    pub unconnected: u64,
}

struct NodeSlot {
    device: Box<dyn Device>,
    /// Link of each port (index = port number).
    links: Vec<Option<(LinkId, usize)>>,
    /// The instants of the timer events the queue holds for this node, latest first: each one
    /// was queued earlier than all those before it ([`Simulator::refresh_timer`]), and the
    /// queue gives them back in time order, so the last is the next to fire.
    timers: Vec<Instant>,
    /// [`Device::never_times_out`], read when the node was added.
    timerless: bool,
}

/// The simulator. See the module docs.
pub struct Simulator {
    now: Instant,
    queue: Queue<Event>,
    nodes: Vec<NodeSlot>,
    links: Vec<Link>,
    rng: Rng,
    seed: u64,
    capture: Option<Capture>,
    drop_filter: Option<DropFilter>,
    stats: SimStats,
    tx: Tx,
}

impl std::fmt::Debug for Simulator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Simulator")
            .field("now", &self.now)
            .field("seed", &self.seed)
            .field("nodes", &self.nodes.len())
            .field("links", &self.links.len())
            .field("queued", &self.queue.len())
            .field("drop_filter", &self.drop_filter.is_some())
            .finish()
    }
}

impl Simulator {
    /// An empty fabric at time zero whose random choices all follow from `seed`.
    pub fn new(seed: u64) -> Simulator {
        Simulator {
            now: Instant::ZERO,
            queue: Queue::default(),
            nodes: Vec::new(),
            links: Vec::new(),
            rng: Rng::new(seed),
            seed,
            capture: None,
            drop_filter: None,
            stats: SimStats::default(),
            tx: Tx::default(),
        }
    }

    /// The seed this simulator was made with (print it when a test fails, to replay it).
    pub fn seed(&self) -> u64 {
        self.seed
    }

    /// Current virtual time.
    pub fn now(&self) -> Instant {
        self.now
    }

    /// Totals so far.
    pub fn stats(&self) -> SimStats {
        self.stats
    }

    /// A generator for a device, derived from the simulator's seed and `stream`.
    pub fn fork_rng(&self, stream: u64) -> Rng {
        self.rng.fork(stream)
    }

    /// Makes room for `nodes` more devices and `links` more cables, so that a large fabric's
    /// tables are allocated once at their size rather than doubled along the way (at 10,000
    /// hosts the cables' table alone is 6 MiB; docs/benchmarks/subnet-rounds.md, "What a host
    /// holds"). Changes nothing else.
    pub fn reserve(&mut self, nodes: usize, links: usize) {
        self.nodes.reserve_exact(nodes);
        self.links.reserve_exact(links);
    }

    /// Adds a device with `ports` ports (numbered 0..=ports) and returns its id.
    pub fn add_node(&mut self, device: Box<dyn Device>, ports: u8) -> NodeId {
        let id = NodeId(self.nodes.len());
        let timerless = device.never_times_out();
        self.nodes.push(NodeSlot {
            timerless,
            device,
            links: vec![None; usize::from(ports) + 1],
            timers: Vec::new(),
        });
        self.refresh_timer(id);
        id
    }

    /// Number of devices.
    pub fn node_count(&self) -> usize {
        self.nodes.len()
    }

    /// The device `id` as its concrete type.
    pub fn node<T: Device>(&self, id: NodeId) -> Option<&T> {
        self.nodes.get(id.0)?.device.as_any().downcast_ref()
    }

    /// The device `id` as its concrete type, mutably. After changing it (e.g. posting work), call
    /// [`Simulator::kick`] so that its new timer and packets are taken into account.
    pub fn node_mut<T: Device>(&mut self, id: NodeId) -> Option<&mut T> {
        self.nodes.get_mut(id.0)?.device.as_any_mut().downcast_mut()
    }

    /// Runs `f` on device `id` with a [`Tx`], sends what it sent and refreshes its timer. This is how
    /// code outside the fabric (tests, the CLI) makes a device do something now.
    pub fn with_node<T: Device, R>(
        &mut self,
        id: NodeId,
        f: impl FnOnce(&mut T, Instant, &mut Tx) -> R,
    ) -> Option<R> {
        let now = self.now;
        let r = {
            let dev = self
                .nodes
                .get_mut(id.0)?
                .device
                .as_any_mut()
                .downcast_mut::<T>()?;
            f(dev, now, &mut self.tx)
        };
        self.flush(id);
        self.refresh_timer(id);
        Some(r)
    }

    /// A spent packet's allocation ([`Tx::spare`]: its bytes stale, or a new, empty one), for
    /// a packet that comes from outside (a UDP fabric's datagram) to be copied into.
    pub fn spare(&mut self) -> Vec<u8> {
        self.tx.spare()
    }

    /// Keeps `buf`, the allocation of a packet that left the simulator and is done with (a UDP
    /// fabric's datagram, sent), for the next packets built ([`Tx::recycle`]).
    pub fn recycle(&mut self, buf: Vec<u8>) {
        self.tx.recycle(buf);
    }

    /// Re-reads device `id`'s timer (after it was changed through [`Simulator::node_mut`]).
    pub fn kick(&mut self, id: NodeId) {
        self.refresh_timer(id);
    }

    /// Cables `a` to `b`. Panics if either port does not exist or is already cabled: topologies are
    /// built by code, and a wrong one is a bug, not input.
    pub fn connect(&mut self, a: PortRef, b: PortRef, params: LinkParams) -> LinkId {
        let id = LinkId(self.links.len());
        for (side, end) in [a, b].into_iter().enumerate() {
            let slot = self.nodes[end.node.0]
                .links
                .get_mut(usize::from(end.port))
                .unwrap_or_else(|| panic!("{end:?}: no such port"));
            assert!(slot.is_none(), "{end:?} is already cabled");
            *slot = Some((id, side));
        }
        let mut dirs: [Direction; 2] = Default::default();
        for (dir, end) in dirs.iter_mut().zip([a, b]) {
            dir.queue_limit = self.nodes[end.node.0]
                .device
                .port_buffer()
                .map(|bytes| params.serialisation(bytes));
        }
        self.links.push(Link {
            ends: [a, b],
            params,
            dirs,
            up: true,
            plugged: true,
            disabled: [false; 2],
            latency_nanos: u64::try_from(params.latency.as_nanos()).unwrap_or(u64::MAX),
        });
        id
    }

    /// The link a port is cabled to.
    pub fn link_of(&self, p: PortRef) -> Option<LinkId> {
        self.nodes
            .get(p.node.0)?
            .links
            .get(usize::from(p.port))?
            .map(|(l, _)| l)
    }

    /// A link.
    pub fn link(&self, id: LinkId) -> &Link {
        &self.links[id.0]
    }

    /// All links.
    pub fn links(&self) -> &[Link] {
        &self.links
    }

    /// Sets the fault pieces of the direction of `link` that carries packets sent by `from`, or of
    /// both directions when `from` is `None`.
    pub fn set_faults(&mut self, link: LinkId, from: Option<PortRef>, faults: Vec<Fault>) {
        let l = &mut self.links[link.0];
        for side in 0..2 {
            if from.is_none() || from == Some(l.ends[side]) {
                l.dirs[side].faults = faults.clone();
            }
        }
    }

    /// Sets (or, with `None`, removes) the filter that drops chosen packets on every link (see
    /// [`DropFilter`]).
    pub fn set_drop_filter(&mut self, filter: Option<DropFilter>) {
        self.drop_filter = filter;
    }

    /// Takes `link` down or brings it up at time `at` (both ends are told).
    pub fn schedule_link_state(&mut self, link: LinkId, at: Instant, up: bool) {
        self.schedule(at, Event::LinkState { link, up });
    }

    /// Records every packet put on any link from now on.
    pub fn set_capture(&mut self, capture: Capture) {
        self.capture = Some(capture);
    }

    /// The capture, if any (e.g. to write out what it holds so far, [`Capture::take_bytes`]).
    pub fn capture_mut(&mut self) -> Option<&mut Capture> {
        self.capture.as_mut()
    }

    /// Stops capturing and returns the capture.
    pub fn take_capture(&mut self) -> Option<Capture> {
        self.capture.take()
    }

    fn schedule(&mut self, at: Instant, event: Event) {
        self.queue.push(at.max(self.now), event);
    }

    /// Queues a timer event for device `id` when its timer (`poll_timeout`) is earlier than
    /// every timer event already queued for it. One queued at or before the timer serves: when
    /// it fires early it finds nothing due and queues the timer's instant then (`step_due`). So
    /// a timer moved later at every packet, as an RC requester's ACK timeout is at every
    /// acknowledgement (IBA 1 §9.7.6.1.3), and brought back to it after each short timer of
    /// the device, costs one event per timeout period, not one per packet that stays queued
    /// for a whole timeout: a real-time driver woke for each of those, thousands of times a
    /// second after a bulk transfer (docs/benchmarks/lab-connected.md, "After a bulk
    /// transfer").
    fn refresh_timer(&mut self, id: NodeId) {
        let slot = &mut self.nodes[id.0];
        if slot.timerless {
            return;
        }
        // A timer already in the past is due now.
        let Some(want) = slot.device.poll_timeout().map(|t| t.max(self.now)) else {
            return;
        };
        if slot.timers.last().is_some_and(|&next| next <= want) {
            return;
        }
        slot.timers.push(want);
        self.queue.push_timer(want, Event::Timer { node: id });
    }

    /// Puts what `from` sent (into `self.tx`) onto its links, and schedules the configuration
    /// it wrote. Inlined (after every event; often nothing was sent), the work apart.
    #[inline]
    fn flush(&mut self, from: NodeId) {
        if !self.tx.out.is_empty() {
            self.send_out(from);
        }
        if !self.tx.config.is_empty() {
            self.send_config();
        }
        if !self.tx.ports.is_empty() {
            self.send_port_requests(from);
        }
    }

    /// The port requests of [`Simulator::flush`]; one for a port with no cable changes nothing.
    #[inline(never)]
    fn send_port_requests(&mut self, from: NodeId) {
        let at = self.now + PORT_STATE_DELAY;
        for (port, enabled) in std::mem::take(&mut self.tx.ports) {
            if let Some(Some((link, side))) = self.nodes[from.0].links.get(usize::from(port)) {
                let (link, side) = (*link, *side);
                self.schedule(
                    at,
                    Event::PortEnable {
                        link,
                        side,
                        enabled,
                    },
                );
            }
        }
    }

    /// The packets of [`Simulator::flush`]. The simulator's one [`Tx`] stays in place: devices
    /// get it by a borrow of its field, and only its list of packets is taken out while they
    /// are sent (and put back empty, its allocation kept).
    #[inline(never)]
    fn send_out(&mut self, from: NodeId) {
        let mut out = std::mem::take(&mut self.tx.out);
        for (port, packet) in out.drain(..) {
            self.transmit(PortRef { node: from, port }, packet);
        }
        self.tx.out = out;
    }

    /// The configuration writes of [`Simulator::flush`].
    #[inline(never)]
    fn send_config(&mut self) {
        let at = self.now + CONFIG_DELAY;
        for (to, config) in std::mem::take(&mut self.tx.config) {
            self.schedule(
                at,
                Event::Configure {
                    to,
                    config: Box::new(config),
                },
            );
        }
    }

    /// Sets `link` up when its cable is there and neither end disabled it, and tells both ends:
    /// always after a cable event of a link no end disabled (`tell_always`), else when it changed.
    fn link_changed(&mut self, link: LinkId, tell_always: bool) {
        let l = &mut self.links[link.0];
        let up = l.plugged && l.disabled == [false; 2];
        if up == l.up && !tell_always {
            return;
        }
        l.up = up;
        let ends = l.ends;
        for e in ends {
            self.nodes[e.node.0]
                .device
                .link_state(self.now, e.port, up, &mut self.tx);
            self.flush(e.node);
            self.refresh_timer(e.node);
        }
    }

    fn transmit(&mut self, from: PortRef, mut packet: Frame) {
        let Some(Some((lid, side))) = self.nodes[from.node.0]
            .links
            .get(usize::from(from.port))
            .copied()
        else {
            self.stats.unconnected += 1;
            return;
        };
        let now = self.now;
        let link = &mut self.links[lid.0];
        let dir = &mut link.dirs[side];
        dir.stats.sent += 1;
        dir.stats.bytes += packet.len() as u64;
        if !link.up {
            dir.stats.dropped_down += 1;
            return;
        }
        let start = dir.busy_until.max(now);
        // In nanoseconds, as `Instant`s are (the same comparisons and sums as with `Duration`s,
        // saturating as `Instant + Duration` does).
        let waits = start.as_nanos() - now.as_nanos();
        if dir
            .queue_limit
            .is_some_and(|limit| u128::from(waits) > limit.as_nanos())
        {
            dir.stats.discarded_full += 1;
            self.nodes[from.node.0].device.discarded(from.port, &packet);
            return;
        }
        let done = Instant::from_nanos(
            start
                .as_nanos()
                .saturating_add(link.params.serialisation_nanos(packet.len())),
        );
        dir.busy_until = done;
        // `done + latency`, in nanoseconds as `Instant + Duration` saturates.
        let arrive = Instant::from_nanos(done.as_nanos().saturating_add(link.latency_nanos));
        // The side the packet leaves by, for its arrival (`Event::Deliver`).
        let from_side = side as u8;
        // No filter, capture or fault (every run but a test's or a capture's): queued as it is;
        // `arrive` is at or after `now` (`start` is), so no `schedule`.
        if self.drop_filter.is_none() && self.capture.is_none() && dir.faults.is_empty() {
            self.stats.packets += 1;
            self.stats.bytes += packet.len() as u64;
            self.queue.push(
                arrive,
                Event::Deliver {
                    link: lid,
                    from: from_side,
                    packet,
                },
            );
            return;
        }
        if self.drop_filter.is_some() || self.capture.is_some() {
            // They see the bytes: pending CRCs are written first ([`Frame`]).
            packet.seal();
        }
        let filtered = self
            .drop_filter
            .as_mut()
            .is_some_and(|f| f(lid, from, &packet));
        // `None`: one copy, on time, intact: `apply` with no fault, without its allocation.
        let verdict = if filtered {
            dir.stats.dropped += 1;
            Some(Verdict::default())
        } else if dir.faults.is_empty() {
            None
        } else {
            // A fault may change the bytes: the CRCs are checked again ([`Frame`]).
            Some(dir.apply(&mut self.rng, packet.bytes_mut()))
        };
        self.stats.packets += 1;
        self.stats.bytes += packet.len() as u64;
        if let Some(c) = &mut self.capture {
            c.record(start, &packet);
        }
        let Some(verdict) = verdict else {
            self.schedule(
                arrive,
                Event::Deliver {
                    link: lid,
                    from: from_side,
                    packet,
                },
            );
            return;
        };
        let n = verdict.copies.len();
        for (i, (extra, _)) in verdict.copies.into_iter().enumerate() {
            let p = if i + 1 == n {
                std::mem::take(&mut packet)
            } else {
                packet.clone()
            };
            self.schedule(
                arrive + extra,
                Event::Deliver {
                    link: lid,
                    from: from_side,
                    packet: p,
                },
            );
        }
    }

    /// Processes the next event; false when there is none.
    pub fn step(&mut self) -> bool {
        self.step_due(Instant::NEVER)
    }

    /// [`Simulator::step`] when the next event is due at or before `t`; false (nothing done)
    /// when none is.
    fn step_due(&mut self, t: Instant) -> bool {
        let Some((at, event)) = self.queue.pop_due(t) else {
            return false;
        };
        self.now = self.now.max(at);
        self.stats.events += 1;
        let tx = &mut self.tx;
        let node = match event {
            Event::Deliver { link, from, packet } => {
                let l = &mut self.links[link.0];
                let side = usize::from(from & 1);
                if !l.up {
                    l.dirs[side].stats.dropped_down += 1;
                    return true;
                }
                l.dirs[side].stats.delivered += 1;
                let to = l.ends[side ^ 1];
                let device = &mut self.nodes[to.node.0].device;
                device.receive_frame(self.now, to.port, packet, tx);
                if device.timer_kept() {
                    self.flush(to.node);
                    return true;
                }
                Some(to.node)
            }
            Event::Timer { node } => {
                let slot = &mut self.nodes[node.0];
                // The earliest of the node's timer events: the last queued.
                slot.timers.pop();
                if slot.device.poll_timeout().is_some_and(|t| t <= self.now) {
                    slot.device.handle_timeout(self.now, tx);
                    Some(node)
                } else {
                    // The timer moved later since the event was queued, or was cancelled.
                    self.refresh_timer(node);
                    None
                }
            }
            Event::Configure { to, config } => match self.nodes.get_mut(to.0) {
                Some(slot) => {
                    slot.device.configure(self.now, *config, tx);
                    Some(to)
                }
                None => None,
            },
            Event::LinkState { link, up } => {
                // A cable event tells both ends (at power-on too, where the link already reads
                // up), except on a link an end disabled: it stays down, both ends told so when
                // it went down, and a disabled port sees no cable (IBA 1 §5.6.2.1), so no trap.
                let l = &mut self.links[link.0];
                l.plugged = up;
                let tell = l.disabled == [false; 2];
                self.link_changed(link, tell);
                None
            }
            Event::PortEnable {
                link,
                side,
                enabled,
            } => {
                self.links[link.0].disabled[side] = !enabled;
                self.link_changed(link, false);
                None
            }
        };
        if let Some(n) = node {
            self.flush(n);
            self.refresh_timer(n);
        }
        true
    }

    /// Runs every event up to and including time `t`, then sets the clock to `t`.
    pub fn run_until(&mut self, t: Instant) {
        while self.step_due(t) {}
        self.now = self.now.max(t);
    }

    /// Runs for `d` of virtual time.
    pub fn run_for(&mut self, d: Duration) {
        let t = self.now + d;
        self.run_until(t);
    }

    /// Runs until `done(self)` holds or virtual time passes `deadline`; true when `done` held.
    pub fn run_while_not(
        &mut self,
        deadline: Instant,
        mut done: impl FnMut(&Simulator) -> bool,
    ) -> bool {
        loop {
            if done(self) {
                return true;
            }
            match self.queue.peek_at() {
                Some(at) if at <= deadline => {
                    self.step();
                }
                _ => {
                    self.now = self.now.max(deadline);
                    return done(self);
                }
            }
        }
    }

    /// Runs until no event is left or `max_events` have run; returns the events run.
    pub fn run_until_idle(&mut self, max_events: u64) -> u64 {
        let mut n = 0;
        while n < max_events && self.step() {
            n += 1;
        }
        n
    }

    /// When the next event is due, if any.
    pub fn next_event_at(&self) -> Option<Instant> {
        self.queue.peek_at()
    }
}

#[cfg(test)]
mod tests;
