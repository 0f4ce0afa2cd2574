//! [`FabricServer`]: the fabric process's agent (quinn-proto's shape: `handle_datagram`,
//! `handle_timeout`, `poll_transmit`, `poll_timeout`). It owns a simulator holding the switches,
//! the SM's host (SM and SA) and one [`Remote`] slot per other CA of the topology, and the
//! sessions of the hosts attached to slots, keyed by the peer address `A` (the runtime's socket
//! address; any ordered value in tests).
//!
//! - AttachRequest without a cookie minted for its address in this time bucket or the last
//!   ([`super::cookie`]): answered with an AttachChallenge carrying one, and nothing else done or
//!   kept ([`ServerCounters::no_cookie`], [`ServerCounters::bad_cookie`]); so an off-path sender
//!   with a forged source address neither holds a slot nor touches the session of the host
//!   whose address it forges.
//! - AttachRequest with a valid cookie: the peer's existing session is answered again (its
//!   accept was lost), under a new id when the session is sequenced and the request has no hint
//!   (a new host process at the address, docs/UDP-FABRIC.md "Reliable configuration");
//!   otherwise the free slot whose node GUID is the hint, else the first free slot in topology
//!   order, gets a new session (a random non-zero id), its cable comes up, and the accept is
//!   followed by the port's configuration as the slot's SMA holds it ([`Remote::attach`]); the
//!   cable's coming up is a trap 128 from the switch (IBA 1 §14.2.5.1), on which the SM sweeps
//!   again and configures the port by SMPs, keeping the LID it gave the port before (its
//!   guid2lid, [`SmpSm::guid2lid`]). No free slot: reject. The challenge, the accept and the
//!   reject echo the request's nonce, which the host checks (module `link`).
//! - Every other message must come from a peer with a session and carry its id; else it is
//!   counted and dropped (a Keepalive is answered with the reject `UnknownSession`, so that a host
//!   whose fabric restarted attaches again at once).
//! - Keepalive -> KeepaliveAck; Packet -> [`Remote::from_network`] (the identity checks);
//!   Detach -> the session ends; ControlAck -> the session's configuration is sequenced and
//!   acknowledged ([`ControlSender`], docs/UDP-FABRIC.md "Reliable configuration"): what the
//!   slot queues for the host (PortConfig, ClientReregister) waits until acknowledged, sent again
//!   with a bounded backoff ([`ServerCounters::control_resent`]).
//! - A session silent for [`FabricOptions::timeout`] ends ([`ServerCounters::timed_out`]).
//!   A session's end takes the slot's cable down (`Simulator::schedule_link_state`), so the switch
//!   no longer sends to the slot and traps to the SM, which sweeps again without the port; it
//!   drops what waited for the host, and has the SA drop the port's multicast memberships
//!   (`SaServer::drop_port`), whose trees the SM then prunes.
//!
//! - With [`SmMode::None`] in the subnet's options there is no SM or SA of ours: the SM's CA is
//!   a host with no software whose port an external SM reaches (OpenSM under `ibsim-run`,
//!   through the ibsim server on that host, [`FabricServer::sm_host`]); it discovers the switches
//!   and the slots' SMAs by SMPs and configures them as our SM would, and the slots carry what
//!   it sets to their hosts all the same (docs/UDP-FABRIC.md "An external SM").
//!
//! Invariants: the simulator never runs past the `now` it was given; datagrams leave in the order
//! the slots queued them (slot order within one call); the transmit queue is bounded.

use super::cookie::Cookies;
pub use super::options::{FabricOptions, ServerCounters};
use super::reliable::{Control, ControlSender, Send};
use super::slot::{Remote, ToHost};
use super::{config_to_wire, Outgoing};
use crate::hw::capture::Capture;
use crate::hw::hca::Hca;
use crate::hw::link::LinkId;
use crate::hw::rc::engine_factory;
use crate::hw::sim::{NodeId, PortRef, Simulator};
use crate::hw::topology::{build, Built, Topology};
use crate::node::host::{AgentId, AppId, Host, MGMT_PORT};
use crate::node::sm::{Reach, SmpSm};
use crate::node::subnet::{
    cable_mtu_cap, install_sm, switch_port0_up, switch_ports_train, HostHandle, SmApp, SmMode,
    SubnetError,
};
use ipoib_proto::partitions::PartitionConfig;
use ipoib_proto::rng::Rng;
use ipoib_proto::sa::SaServer;
use ipoib_proto::time::Instant;
use ipoib_wire::udp_fabric::{
    version_reject, AttachAccept, DatagramRepr, MessageRepr, MessageType, RejectReason, HEADER_LEN,
    REJECT_LEN,
};
use ipoib_wire::{Error as WireError, Guid};
use std::collections::{BTreeMap, VecDeque};
use std::fmt::Debug;
use std::hash::Hash;
use std::time::Duration;

#[derive(Debug, Clone, Copy)]
struct Session<A> {
    id: u64,
    peer: A,
    last_heard: Instant,
}

#[derive(Debug)]
struct Slot<A> {
    node: NodeId,
    topo_node: usize,
    node_guid: Guid,
    link: Option<LinkId>,
    session: Option<Session<A>>,
    /// The session's configuration for its host, sequenced once the host says so.
    control: ControlSender,
}

/// The fabric process's agent. See the module docs.
#[derive(Debug)]
pub struct FabricServer<A> {
    sim: Simulator,
    topology: Topology,
    built: Built,
    sm_node: NodeId,
    sm_host: HostHandle,
    sa: Option<AgentId>,
    sm_app: Option<AppId>,
    partitions: PartitionConfig,
    slots: Vec<Slot<A>>,
    sessions: BTreeMap<A, usize>,
    out: VecDeque<(A, Outgoing)>,
    out_limit: usize,
    timeout: Duration,
    rng: Rng,
    cookies: Cookies,
    counters: ServerCounters,
}

/// Stream of the simulator's generator the session ids are drawn from.
const SESSION_STREAM: u64 = 0x5e55_1000;
/// Stream of the session ids' generator the cookie secret is drawn from, when not given.
const COOKIE_STREAM: u64 = 0xc00c_1e00;

impl<A: Ord + Copy + Debug + Hash> FabricServer<A> {
    /// Builds the fabric (nothing runs until the first call with a time): our SM by SMPs on the
    /// first CA port, every other cabled CA a slot whose host port's cable is down until a host
    /// attaches (module docs).
    pub fn build(opts: FabricOptions) -> Result<FabricServer<A>, SubnetError> {
        let so = opts.subnet;
        let topo = so.topology;
        let sm_port = topo.first_ca_port().ok_or(SubnetError::NoHost)?;
        let reach = Reach::new(&topo, sm_port);
        let mut host_port: Vec<Option<u8>> = vec![None; topo.nodes().len()];
        for e in topo.host_ports() {
            host_port[e.node] = Some(reach.first_configured_port(&topo, e.node).unwrap_or(e.port));
        }
        let partitions = so
            .partitions
            .unwrap_or_else(PartitionConfig::default_config);
        let mut sim = Simulator::new(so.seed);
        if so.capture {
            sim.set_capture(Capture::new());
        }
        let slot_queue = opts.slot_queue;
        let default_rate = so.sm.rate;
        let built = build(&topo, &mut sim, so.link, |i, node, _rng| {
            let guids: Vec<Guid> = (1..=node.ports).map(|p| node.port_guid(p)).collect();
            let port = host_port[i].unwrap_or(MGMT_PORT);
            let mut hca = Hca::with_port_guids(node.guid, guids);
            // As `Subnet::build` does: the node description the SMA answers with (IBA 1
            // §14.2.5.2), no link on a port with no cable, the rate the cable trains to, its MTU as MTUCap.
            hca.set_node_description(&node.desc);
            for p in 1..=node.ports {
                let peer = topo.peer(i, p);
                if let Some(port) = hca.port_mut(p) {
                    match peer {
                        None => port.set_phys(false),
                        Some((_, l)) => {
                            port.rate = topo.links()[l].rate.unwrap_or(default_rate);
                            port.mtu_cap = cable_mtu_cap(&topo.links()[l]);
                        }
                    }
                }
            }
            if i == sm_port.node {
                Box::new(Host::with_mgmt_port(
                    hca.with_engine(engine_factory()),
                    port,
                ))
            } else {
                Box::new(Remote::with_sma(hca, port).with_queue_limit(slot_queue))
            }
        });
        switch_ports_train(&topo, &built, &mut sim, default_rate);
        let mut slots = Vec::new();
        let mut slot_links = Vec::new();
        for e in topo.host_ports() {
            if e.node == sm_port.node {
                continue;
            }
            let node = built.nodes[e.node];
            let port = host_port[e.node].unwrap_or(e.port);
            let link = sim.link_of(PortRef { node, port });
            slot_links.extend(link);
            slots.push(Slot {
                node,
                topo_node: e.node,
                node_guid: topo.nodes()[e.node].guid,
                link,
                session: None,
                control: ControlSender::default(),
            });
        }
        // IBA 1 §7.2: every cable trains at time zero (Init), but a slot's host port: no host yet,
        // the cable is down until one attaches. Switch port 0 is up with its switch.
        for &l in &built.links {
            sim.schedule_link_state(l, Instant::ZERO, !slot_links.contains(&l));
        }
        switch_port0_up(&topo, &built, &mut sim);
        let sa_server = SaServer::new(
            so.sa,
            ipoib_proto::subnet::SubnetModel::default(),
            partitions.clone(),
            sim.fork_rng(u64::MAX),
        );
        let sm_node = built.nodes[sm_port.node];
        let sm_host = HostHandle {
            node: sm_node,
            topo_node: sm_port.node,
            port: host_port[sm_port.node].unwrap_or(sm_port.port),
        };
        let (sa, sm_app) = if so.sm_mode == SmMode::None {
            (None, None)
        } else {
            let mut sm_opts = so.sm;
            sm_opts.partitions = Vec::new();
            let agent = SmpSm::new(sm_opts, partitions.clone(), so.smp).with_guid2lid(so.guid2lid);
            let sm_port_guid = topo.nodes()[sm_port.node].port_guid(sm_port.port);
            let (sa, app) = install_sm(
                &mut sim,
                sm_node,
                sm_port.port,
                sm_port_guid,
                sa_server,
                agent,
                so.mcast_delay,
            )?;
            (Some(sa), Some(app))
        };
        let rng = match opts.session_seed {
            Some(seed) => Rng::new(seed).fork(SESSION_STREAM),
            None => sim.fork_rng(SESSION_STREAM),
        };
        let key = opts.cookie_key.unwrap_or_else(|| {
            let mut r = rng.fork(COOKIE_STREAM);
            [r.next_u64(), r.next_u64()]
        });
        Ok(FabricServer {
            sim,
            topology: topo,
            built,
            sm_node,
            sm_host,
            sa,
            sm_app,
            partitions,
            slots,
            sessions: BTreeMap::new(),
            out: VecDeque::new(),
            out_limit: opts.transmit_queue,
            timeout: opts.timeout,
            rng,
            cookies: Cookies::new(key),
            counters: ServerCounters::default(),
        })
    }

    /// The simulator (statistics, links, capture).
    pub fn sim(&self) -> &Simulator {
        &self.sim
    }

    /// The simulator, mutably (capture, faults).
    pub fn sim_mut(&mut self) -> &mut Simulator {
        &mut self.sim
    }

    /// The topology.
    pub fn topology(&self) -> &Topology {
        &self.topology
    }

    /// Simulator nodes and links of the topology's.
    pub fn built(&self) -> &Built {
        &self.built
    }

    /// The partitions in force.
    pub fn partitions(&self) -> &PartitionConfig {
        &self.partitions
    }

    /// The SA (none with [`SmMode::None`]).
    pub fn sa(&self) -> Option<&SaServer> {
        self.sim
            .node::<Host>(self.sm_node)?
            .agent::<SaServer>(self.sa?)
    }

    /// The SM application (its multicast counters; none with [`SmMode::None`]).
    pub fn sm_app(&self) -> Option<&SmApp> {
        self.sim
            .node::<Host>(self.sm_node)?
            .app::<SmApp>(self.sm_app?)
    }

    /// The SM's SMP agent (none with [`SmMode::None`]).
    pub fn smp_sm(&self) -> Option<&SmpSm> {
        let host = self.sim.node::<Host>(self.sm_node)?;
        host.agent::<SmpSm>(host.app::<SmApp>(self.sm_app?)?.smp_agent())
    }

    /// The SM's CA, the one CA of the topology that runs in this process: our SM and SA, or,
    /// with [`SmMode::None`], nothing but its HCA, for an external SM to use (through the ibsim
    /// server, `ipoib fabric --ibsim`).
    pub fn sm_host(&self) -> HostHandle {
        self.sm_host
    }

    /// Runs `f` on the SM's CA's device now, then lets it act at once, as
    /// [`crate::node::subnet::Subnet::with_host`] does for a subnet's host.
    pub fn with_sm_host<R>(&mut self, f: impl FnOnce(&mut Host, Instant) -> R) -> Option<R> {
        self.sim
            .with_node::<Host, _>(self.sm_node, |host, now, tx| {
                let r = f(host, now);
                host.drive(now, tx);
                r
            })
    }

    /// Counters.
    pub fn counters(&self) -> ServerCounters {
        self.counters
    }

    /// Number of slots (CAs other than the SM's with a cabled port).
    pub fn slot_count(&self) -> usize {
        self.slots.len()
    }

    /// Slot `i`'s device.
    pub fn slot(&self, i: usize) -> Option<&Remote> {
        self.sim.node::<Remote>(self.slots.get(i)?.node)
    }

    /// Slot `i`'s topology node index.
    pub fn slot_topo_node(&self, i: usize) -> Option<usize> {
        self.slots.get(i).map(|s| s.topo_node)
    }

    /// Sequenced configuration messages slot `i`'s host has not yet acknowledged.
    pub fn unacked(&self, i: usize) -> Option<usize> {
        self.slots.get(i).map(|s| s.control.unacked())
    }

    /// The cookie an AttachChallenge to `peer` carries at the fabric's present (a test's or a
    /// tool's request in a host's place without the round trip).
    pub fn cookie_for(&self, peer: &A) -> u64 {
        self.cookies.mint(peer, self.sim.now())
    }

    /// The slot `peer` holds, if any.
    pub fn slot_of(&self, peer: &A) -> Option<usize> {
        self.sessions.get(peer).copied()
    }

    /// Peers with a session, with their slot, in peer order.
    pub fn peers(&self) -> impl Iterator<Item = (A, usize)> + '_ {
        self.sessions.iter().map(|(a, s)| (*a, *s))
    }

    /// The next datagram to send, and where.
    pub fn poll_transmit(&mut self) -> Option<(A, Vec<u8>)> {
        self.out.pop_front().map(|(a, o)| (a, o.to_vec()))
    }

    /// The next datagram to send, and where, in its two parts (a packet's own buffer as the
    /// body: [`Outgoing`]).
    pub fn poll_transmit_parts(&mut self) -> Option<(A, Outgoing)> {
        self.out.pop_front()
    }

    /// Keeps the body of a datagram the caller sent (a packet's own buffer, [`Outgoing`]) for
    /// the next packets from the hosts ([`Simulator::recycle`]): a host's packet is copied into
    /// it, not into a new allocation.
    pub fn recycle(&mut self, body: Vec<u8>) {
        self.sim.recycle(body);
    }

    /// When [`FabricServer::handle_timeout`] is next due: the simulator's next event, a
    /// session's silence deadline or its next resend.
    pub fn poll_timeout(&self) -> Option<Instant> {
        let deadlines = self
            .slots
            .iter()
            .filter_map(|s| s.session.map(|x| x.last_heard + self.timeout));
        let resends = self
            .slots
            .iter()
            .filter(|s| s.session.is_some())
            .filter_map(|s| s.control.poll_timeout());
        let timers = deadlines.chain(resends);
        self.sim.next_event_at().into_iter().chain(timers).min()
    }

    /// Runs the fabric up to `now` and ends the sessions silent for too long. Early or repeated
    /// calls are harmless.
    pub fn handle_timeout(&mut self, now: Instant) {
        self.advance(now);
        let now = self.sim.now();
        for i in 0..self.slots.len() {
            if let Some(s) = self.slots[i].session {
                if now >= s.last_heard + self.timeout {
                    self.counters.timed_out += 1;
                    self.end_session(i);
                    continue;
                }
                for (seq, c) in self.slots[i].control.resend(now) {
                    self.counters.control_resent += 1;
                    self.reply(s.peer, s.id, control_message(Some(seq), &c));
                }
            }
        }
        self.drain();
    }

    /// One datagram from `from`, at `now`.
    pub fn handle_datagram(&mut self, now: Instant, from: A, data: &[u8]) {
        self.advance(now);
        self.queue_datagram(now, from, data);
        self.drain();
    }

    /// [`FabricServer::handle_datagram`] without moving what the slots queued for their hosts
    /// into datagrams: a caller that takes several datagrams in a row and then runs the fabric
    /// ([`FabricServer::handle_timeout`], which does) moves them once, not once per datagram.
    /// A host's packet is put on the slot's port at the fabric's present, as by
    /// [`FabricServer::handle_datagram`].
    pub fn queue_datagram(&mut self, now: Instant, from: A, data: &[u8]) {
        if now > self.sim.now() {
            self.advance(now);
        }
        self.counters.datagrams += 1;
        match DatagramRepr::parse(data) {
            Ok(d) => self.handle_message(from, d),
            Err(WireError::Unsupported) => {
                // Said in the sender's version, which reads it as its own reject (the header
                // and the reject are laid out alike in every version); only to an AttachRequest
                // (type 1 in every version): an answer to a reject or to any other message in
                // a version not ours could loop between two fabrics, or a fabric and an echo
                // service, without end; and not to a datagram shorter than the answer, which
                // would amplify.
                self.counters.bad_version += 1;
                let request =
                    data.get(3).copied().map(MessageType::from) == Some(MessageType::AttachRequest);
                if request && data.len() >= REJECT_LEN {
                    let v = version_reject(data[2]);
                    let mut header = [0; HEADER_LEN];
                    header.copy_from_slice(&v[..HEADER_LEN]);
                    let body = v[HEADER_LEN..].to_vec();
                    self.push_out(from, Outgoing { header, body });
                }
            }
            Err(_) => self.counters.malformed += 1,
        }
    }

    fn handle_message(&mut self, from: A, d: DatagramRepr<'_>) {
        let now = self.sim.now();
        if let MessageRepr::AttachRequest {
            hint,
            cookie,
            nonce,
        } = d.message
        {
            if self.cookies.check(&from, now, cookie) {
                self.attach(from, hint, nonce);
            } else {
                // Nothing kept: the challenge alone (docs/UDP-FABRIC.md "Protocol").
                if cookie == 0 {
                    self.counters.no_cookie += 1;
                } else {
                    self.counters.bad_cookie += 1;
                }
                let cookie = self.cookies.mint(&from, now);
                self.reply(from, 0, MessageRepr::AttachChallenge { cookie, nonce });
            }
            return;
        }
        let Some(i) = self
            .sessions
            .get(&from)
            .copied()
            .filter(|&i| self.slots[i].session.is_some_and(|s| s.id == d.session))
        else {
            self.counters.unknown_session += 1;
            if matches!(d.message, MessageRepr::Keepalive { .. }) {
                self.reply(
                    from,
                    d.session,
                    MessageRepr::AttachReject {
                        reason: RejectReason::UnknownSession,
                        nonce: 0,
                    },
                );
            }
            return;
        };
        if let Some(s) = &mut self.slots[i].session {
            s.last_heard = now;
        }
        match d.message {
            MessageRepr::Keepalive { seq } => {
                self.reply(from, d.session, MessageRepr::KeepaliveAck { seq });
            }
            MessageRepr::Packet(p) => {
                let node = self.slots[i].node;
                self.sim
                    .with_node::<Remote, _>(node, |r, _, tx| r.from_network(p, tx));
            }
            MessageRepr::Detach => {
                self.counters.detached += 1;
                self.end_session(i);
            }
            MessageRepr::ControlAck { seq } => self.control_ack(i, seq),
            _ => self.counters.unexpected += 1,
        }
    }

    /// A request with a valid cookie; `nonce` is the request's, which the answer echoes.
    fn attach(&mut self, from: A, hint: Guid, nonce: u64) {
        let now = self.sim.now();
        if let Some(&i) = self.sessions.get(&from) {
            // The accept was lost: the same answer again (and the configuration after it).
            // Unless the session is sequenced and the request has no hint: a host sends its
            // last identity's GUID once it was ever accepted, so this is a new host process at
            // the address (restarted on the same port), which took none of the session's
            // numbers and would drop every later one as early for good; it gets a session of
            // its own, numbered from 1 after its ControlAck 0 (docs/UDP-FABRIC.md "Reliable
            // configuration"). The slot, its cable and its port stay as they are.
            let fresh = hint.0 == 0 && self.slots[i].control.is_sequenced();
            let id = if fresh { self.rng.next_u64() | 1 } else { 0 };
            if let Some(s) = &mut self.slots[i].session {
                s.last_heard = now;
                if fresh {
                    s.id = id;
                    self.slots[i].control = ControlSender::default();
                }
            }
            if fresh {
                self.counters.attached += 1;
            } else {
                self.counters.accepts_resent += 1;
            }
            self.accept(i, nonce);
            return;
        }
        let free = |s: &&Slot<A>| s.session.is_none();
        let pick = self
            .slots
            .iter()
            .position(|s| s.session.is_none() && hint.0 != 0 && s.node_guid == hint)
            .or_else(|| self.slots.iter().position(|s| free(&s)));
        let Some(i) = pick else {
            self.counters.rejected += 1;
            self.reply(
                from,
                0,
                MessageRepr::AttachReject {
                    reason: RejectReason::NoFreeSlot,
                    nonce,
                },
            );
            return;
        };
        let id = self.rng.next_u64() | 1;
        self.slots[i].control = ControlSender::default();
        self.slots[i].session = Some(Session {
            id,
            peer: from,
            last_heard: now,
        });
        self.sessions.insert(from, i);
        self.counters.attached += 1;
        if hint.0 != 0 && self.slots[i].node_guid == hint {
            self.counters.reattached += 1;
        }
        if let Some(l) = self.slots[i].link {
            self.sim.schedule_link_state(l, now, true);
            self.sim.run_until(now);
        }
        self.accept(i, nonce);
    }

    /// Sends slot `i`'s accept with `nonce`, then (through [`Remote::attach`]) its
    /// configuration.
    fn accept(&mut self, i: usize, nonce: u64) {
        let Some(s) = self.slots[i].session else {
            return;
        };
        let Some(r) = self.sim.node_mut::<Remote>(self.slots[i].node) else {
            return;
        };
        r.attach();
        let accept = AttachAccept {
            slot: u16::try_from(self.slots[i].topo_node).unwrap_or(u16::MAX),
            port: r.port(),
            timeout_ms: u32::try_from(self.timeout.as_millis()).unwrap_or(u32::MAX),
            node_guid: r.node_guid(),
            port_guids: r.port_guids().to_vec(),
        };
        self.reply(s.peer, s.id, MessageRepr::AttachAccept { nonce, accept });
    }

    fn end_session(&mut self, i: usize) {
        let now = self.sim.now();
        let Some(s) = self.slots[i].session.take() else {
            return;
        };
        self.slots[i].control = ControlSender::default();
        self.sessions.remove(&s.peer);
        let mut gid = None;
        if let Some(r) = self.sim.node_mut::<Remote>(self.slots[i].node) {
            r.detach();
            gid = Some(r.gid());
        }
        // The port is gone: the SA drops its memberships and the SM prunes the trees
        // (`SaServer::drop_port`, as OpenSM's drop manager does for a port its sweep no longer
        // finds).
        if let (Some(gid), Some(sa)) = (gid, self.sa) {
            let dropped = self
                .sim
                .with_node::<Host, _>(self.sm_node, |h, now, tx| {
                    let n = h
                        .agent_mut::<SaServer>(sa)
                        .map_or(0, |s| s.drop_port(now, &gid));
                    h.drive(now, tx);
                    n
                })
                .unwrap_or(0);
            self.counters.memberships_dropped += dropped as u64;
        }
        if let Some(l) = self.slots[i].link {
            self.sim.schedule_link_state(l, now, false);
            self.sim.run_until(now);
        }
    }

    fn reply(&mut self, to: A, session: u64, message: MessageRepr<'_>) {
        let d = DatagramRepr { session, message };
        // Every message this agent builds is one the format carries (a topology node has at
        // most 255 ports and a P_Key table at most PKEY_TABLE_SIZE entries).
        if let Some(o) = Outgoing::message(&d) {
            self.push_out(to, o);
        }
    }

    fn push_out(&mut self, to: A, o: Outgoing) {
        if self.out.len() >= self.out_limit {
            self.counters.transmit_full += 1;
            return;
        }
        self.out.push_back((to, o));
    }

    fn advance(&mut self, now: Instant) {
        let t = now.max(self.sim.now());
        self.sim.run_until(t);
    }

    /// Moves what the slots queued for their hosts into datagrams.
    fn drain(&mut self) {
        for i in 0..self.slots.len() {
            self.drain_slot(i);
        }
    }

    /// Moves what slot `i` queued for its host into datagrams.
    fn drain_slot(&mut self, i: usize) {
        let Some(s) = self.slots[i].session else {
            return;
        };
        while let Some(item) = self
            .sim
            .node_mut::<Remote>(self.slots[i].node)
            .and_then(Remote::poll_to_host)
        {
            match item {
                ToHost::Packet(p) => self.push_out(s.peer, Outgoing::packet(s.id, p)),
                ToHost::Config(c) => self.send_control(i, Control::Config(c)),
                ToHost::ClientReregister(port) => {
                    self.send_control(i, Control::ClientReregister(port))
                }
            }
        }
    }

    /// Sends slot `i`'s host `c`, sequenced once the host said it takes that ([`ControlSender`]).
    fn send_control(&mut self, i: usize, c: Control) {
        let Some(s) = self.slots[i].session else {
            return;
        };
        let now = self.sim.now();
        match self.slots[i].control.send(now, c) {
            Some(Send::Once(c)) => self.reply(s.peer, s.id, control_message(None, &c)),
            Some(Send::Sequenced(seq, c)) => {
                self.reply(s.peer, s.id, control_message(Some(seq), &c))
            }
            Some(Send::Coalesced) => {}
            None => self.counters.control_dropped += 1,
        }
    }

    /// Slot `i`'s host acknowledged `seq`. Its first ControlAck makes the session sequenced:
    /// what the slot queued goes first, then every port's configuration and a ClientReregister
    /// for each port that had one unsequenced, all sequenced ([`ControlSender::acked`]). Any
    /// acknowledgement may call for a port's configuration again ([`ControlSender::take_refresh`]).
    fn control_ack(&mut self, i: usize, seq: u32) {
        self.counters.control_acks += 1;
        let now = self.sim.now();
        let first = !self.slots[i].control.is_sequenced();
        if first {
            self.drain_slot(i);
        }
        let reregisters = self.slots[i].control.acked(now, seq);
        for p in self.slots[i].control.take_refresh() {
            let c = self.sim.node::<Remote>(self.slots[i].node);
            if let Some(c) = c.and_then(|r| r.port_config(p)) {
                self.send_control(i, Control::Config(c));
            }
        }
        if !first {
            return;
        }
        self.counters.sequenced_sessions += 1;
        let configs: Vec<_> = self
            .sim
            .node::<Remote>(self.slots[i].node)
            .map(|r| {
                (1..=r.sma().port_count())
                    .filter_map(|p| r.port_config(p))
                    .collect()
            })
            .unwrap_or_default();
        for c in configs {
            self.send_control(i, Control::Config(c));
        }
        for p in reregisters {
            self.send_control(i, Control::ClientReregister(p));
        }
    }
}

/// The message carrying `c`, sequenced with `seq` or not.
fn control_message(seq: Option<u32>, c: &Control) -> MessageRepr<'static> {
    match (seq, c) {
        (None, Control::Config(c)) => MessageRepr::PortConfig(config_to_wire(c)),
        (None, &Control::ClientReregister(port)) => MessageRepr::ClientReregister { port },
        (Some(seq), Control::Config(c)) => MessageRepr::SeqPortConfig {
            seq,
            config: config_to_wire(c),
        },
        (Some(seq), &Control::ClientReregister(port)) => {
            MessageRepr::SeqClientReregister { seq, port }
        }
    }
}
