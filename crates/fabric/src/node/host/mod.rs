//! A host on the fabric: an [`Hca`] plus the software above it, as one simulator [`Device`].
//!
//! - Management agents ([`MadAgent`]) on QP1 of one port, the host's management port (port 1
//!   unless [`Host::with_mgmt_port`] names another; on a multi-port HCA the subnet puts it on the
//!   first port the SM reaches), as the kernel MAD layer does it: the host keeps receive buffers posted on
//!   QP1, routes every incoming request (R bit clear, IBA 1
//!   §13.4.5) to the agent registered for its class and method ([`Host::serve_method`], as a
//!   Linux MAD agent registers a method mask), else to the server of its management class
//!   ([`Host::serve_class`]), and every response to
//!   the agent that sent the request with that transaction ID (IBA 1 §13.4.6.2). A request nobody
//!   serves (and no umad agent takes, [`Host::umad_take_unclaimed`]) is answered as Linux
//!   `ib_mad.c` (`generate_unmatched_resp`) answers it: Get and Set
//!   get a GetResp with status 0x000C "method/attribute unsupported"; other methods are dropped
//!   (counted). What agents queue goes out as QP1 datagrams to `to.lid`/`to.qpn`/`to.qkey`, with a
//!   GRH when `to.grh` is set, and the P_Key index of `to.pkey` in the management port's table.
//! - Applications ([`App`]) owning QPs and CQs; completions of the CQs routed to an application
//!   are handed to it.
//!
//! Everything the host does in reaction to an event (a packet, a timer, a configuration write)
//! happens in that same event: the host "pumps" agents, applications and the HCA until nothing
//! moves (bounded), then packets leave through the simulator's [`Tx`].
//!
//! Invariants: routing tables are `BTreeMap`s (the TID map, only looked up, is hashed);
//! agents and applications are polled in registration order; so the same inputs give the same
//! packets.

mod app;
mod umad;

#[cfg(test)]
mod tests;

pub use app::{AgentId, Agents, AnyAgent, App, AppId, HostCtx};
pub use umad::{
    is_smp_class, method_mask, Registration, RmppMode, UmadAgent, UmadCounters, UmadError,
    RMPP_WINDOW, UMAD_HIGHS, UMAD_QUEUE_DEPTH,
};

use crate::hw::hca::{CqId, Hca};
use crate::hw::mgmt::Config;
use crate::hw::sim::{Device, Frame, Tx};
use crate::hw::verbs::{
    AddressHandle, Completion, GlobalRoute, RecvWr, SendOp, SendWr, UdDest, WcOpcode, WcStatus,
};
use ipoib_proto::mad_agent::{GrhAddr, MadAddr, MadAgent, MadIn, MadOut};
use ipoib_proto::time::Instant;
use ipoib_wire::mad::{MadHeaderRepr, MadStatus, Method, MgmtClass};
use ipoib_wire::{PKey, QKey};
use std::any::Any;
use std::collections::{BTreeMap, HashMap, VecDeque};

/// The port the management agents use unless [`Host::with_mgmt_port`] names another.
pub const MGMT_PORT: u8 = 1;
/// Receive buffers kept posted on QP1 (256-byte MAD + 40-byte GRH area each).
pub const GSI_RECV_DEPTH: usize = 32;
/// Transaction IDs remembered for response routing, per agent (each agent's oldest forgotten
/// first, so that one agent's requests never push out another's).
pub const TID_MEMORY: usize = 4096;
/// Rounds of one pump before it gives up (an application that always has work).
const MAX_ROUNDS: usize = 64;

/// The TID map's hash: a TID (a `u64` chosen by the requester) multiplied by a key drawn once
/// per host from the standard library's random keys, the 128-bit product folded (as foldhash
/// does). A few instructions where SipHash took about a hundred per insert, lookup and rehash
/// (a map forgetting one TID for each new one is rehashed in place now and then). The random
/// key hides the buckets from a client choosing its TIDs, though a keyed multiply-fold is a
/// weaker guard than SipHash (not a pseudo-random function); what a client could still force,
/// colliding TIDs, costs lookup time only: each agent's entries are bounded ([`TID_MEMORY`]).
#[derive(Debug, Clone, Copy)]
struct TidHash(u64, u64);

impl TidHash {
    fn new() -> TidHash {
        use std::hash::BuildHasher;
        let r = std::collections::hash_map::RandomState::new();
        TidHash(r.hash_one(0u64), r.hash_one(1u64) | 1)
    }
}

impl Default for TidHash {
    /// [`TidHash::new`]: new random keys.
    fn default() -> TidHash {
        TidHash::new()
    }
}

impl std::hash::BuildHasher for TidHash {
    type Hasher = TidHasher;
    fn build_hasher(&self) -> TidHasher {
        TidHasher {
            keys: (self.0, self.1),
            h: 0,
        }
    }
}

/// [`TidHash`]'s hasher: the keyed fold of the `u64` written (any other bytes fold in 8 at a
/// time, though the map writes none).
struct TidHasher {
    keys: (u64, u64),
    h: u64,
}

impl std::hash::Hasher for TidHasher {
    fn write(&mut self, bytes: &[u8]) {
        for c in bytes.chunks(8) {
            let mut b = [0u8; 8];
            b[..c.len()].copy_from_slice(c);
            self.write_u64(u64::from_le_bytes(b));
        }
    }
    fn write_u64(&mut self, v: u64) {
        let p = u128::from(v ^ self.h ^ self.keys.0) * u128::from(self.keys.1);
        self.h = (p as u64) ^ ((p >> 64) as u64);
    }
    fn finish(&self) -> u64 {
        self.h
    }
}

/// Counters of the host's MAD dispatch, and of the packets it took without a round.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct HostCounters {
    /// Packets the HCA took quietly that took no round of the host's agents and applications
    /// (`Host::receive_frame`; all but the last packet of RC/UC messages).
    pub quiet_packets: u64,
    /// MADs received on QP1 and handed to an agent.
    pub mads_in: u64,
    /// MADs sent on QP1.
    pub mads_out: u64,
    /// Requests nobody serves, answered with status 0x000C.
    pub unmatched_answered: u64,
    /// Requests nobody serves, dropped (not Get/Set).
    pub unmatched_dropped: u64,
    /// Responses whose TID no agent sent.
    pub unknown_tid: u64,
    /// Datagrams on QP1 too short for a MAD header.
    pub bad_mad: u64,
    /// MADs to send whose P_Key is not in the port's table.
    pub no_pkey: u64,
    /// QP1 sends refused or completed in error.
    pub send_errors: u64,
}

/// The host device. See the module docs.
pub struct Host {
    hca: Hca,
    /// The port whose QP1 the agents use.
    mgmt_port: u8,
    agents: Agents,
    servers: BTreeMap<u8, AgentId>,
    /// (class, method) registrations; they take precedence over `servers`.
    method_servers: BTreeMap<(u8, u8), AgentId>,
    /// The umad agent that takes QP1 requests no other agent serves (module `umad`,
    /// [`Host::umad_take_unclaimed`]), before they are answered as unmatched.
    unclaimed: Option<AgentId>,
    /// Response routing (IBA 1 §13.4.6.2): the agent of each remembered TID. Looked up, never
    /// iterated (so its order reaches nothing); hashed, since a sweep's SMPs each insert one and
    /// forget the oldest.
    tids: HashMap<u64, AgentId, TidHash>,
    /// Each agent's remembered TIDs, oldest first (index = agent), at most [`TID_MEMORY`]: an
    /// agent that sends many requests (a umad client's flood) forgets its own oldest, not the
    /// SM's or the SA client's pending ones, as Linux's `ib_mad` keeps each agent's sends apart.
    tid_order: Vec<VecDeque<u64>>,
    apps: Vec<Box<dyn App>>,
    cq_routes: BTreeMap<CqId, AppId>,
    gsi_cq: CqId,
    next_wr: u64,
    dirty: bool,
    /// The last [`Host::drive`] ended with a round that moved nothing (or the host settled),
    /// not at [`MAX_ROUNDS`]: another round then, the host untouched, would move nothing.
    drained: bool,
    /// Off: every packet takes a round, as before quiet packets were told apart
    /// ([`Host::set_quiet_rounds`]).
    quiet_rounds: bool,
    /// The last [`Host::receive_frame`] took its packet without a round
    /// ([`Hca::took_quietly`]): the host's timer did not move ([`Device::timer_kept`]).
    kept_timer: bool,
    last_now: Instant,
    counters: HostCounters,
    /// Configuration writes applications made, sent with the next packets.
    config: Vec<(crate::hw::sim::NodeId, Config)>,
    /// Receive buffers are posted on QP0 (once a umad user attached, module `umad`).
    smi_posted: bool,
    /// The host's count of the numbers given to umad users' high halves: the last given, less
    /// bit 31, which every number sets (module `umad`).
    umad_hi_tid: u32,
}

impl Host {
    /// A host around `hca`; posts the QP1 receive buffers of port 1 ([`MGMT_PORT`]).
    pub fn new(hca: Hca) -> Host {
        Host::with_mgmt_port(hca, MGMT_PORT)
    }

    /// A host around `hca` whose management agents use QP1 of `port` (its receive buffers are
    /// posted there). A port the HCA does not have leaves the agents deaf and mute (every send
    /// counted in [`HostCounters::no_pkey`]).
    pub fn with_mgmt_port(hca: Hca, port: u8) -> Host {
        let gsi_cq = hca.special_cq(port).unwrap_or(CqId(u32::MAX));
        let mut h = Host {
            hca,
            mgmt_port: port,
            agents: Agents::default(),
            servers: BTreeMap::new(),
            method_servers: BTreeMap::new(),
            unclaimed: None,
            tids: HashMap::with_hasher(TidHash::new()),
            tid_order: Vec::new(),
            apps: Vec::new(),
            cq_routes: BTreeMap::new(),
            gsi_cq,
            next_wr: 0,
            dirty: false,
            drained: false,
            quiet_rounds: true,
            kept_timer: false,
            last_now: Instant::ZERO,
            counters: HostCounters::default(),
            config: Vec::new(),
            smi_posted: false,
            umad_hi_tid: 0,
        };
        for _ in 0..GSI_RECV_DEPTH {
            h.post_gsi_recv();
        }
        h
    }

    /// The HCA.
    pub fn hca(&self) -> &Hca {
        &self.hca
    }

    /// The port whose QP1 the management agents use.
    pub fn mgmt_port(&self) -> u8 {
        self.mgmt_port
    }

    /// The HCA, mutably (the host runs its agents and applications on its next event).
    pub fn hca_mut(&mut self) -> &mut Hca {
        self.dirty = true;
        &mut self.hca
    }

    /// Whether a packet the HCA takes quietly (all but a message's last, [`Hca::took_quietly`])
    /// may skip the host's round (on by default). Off, every packet takes one: what the host
    /// sends is the same either way, which tests compare.
    pub fn set_quiet_rounds(&mut self, on: bool) {
        self.quiet_rounds = on;
    }

    /// Counters of MAD dispatch.
    pub fn counters(&self) -> &HostCounters {
        &self.counters
    }

    /// Adds a management agent (it receives nothing until it serves a class or sends a request).
    pub fn add_agent<A: MadAgent + Any>(&mut self, agent: A) -> AgentId {
        self.agents.list.push(Box::new(agent));
        self.dirty = true;
        AgentId(self.agents.list.len() - 1)
    }

    /// Makes `agent` the server of `class`: requests of that class go to it (a later call for
    /// the same class replaces the earlier server).
    pub fn serve_class(&mut self, class: MgmtClass, agent: AgentId) {
        self.servers.insert(u8::from(class), agent);
    }

    /// The server of `class`, if one was named.
    pub fn class_server(&self, class: MgmtClass) -> Option<AgentId> {
        self.servers.get(&u8::from(class)).copied()
    }

    /// Makes `agent` the receiver of requests of `class` with `method`, ahead of the class's
    /// server. This is how an SA client receives the SA's Reports (method 0x06, a request) while
    /// the SA server on the SM's host serves every other SubnAdm request (`ipoib_proto::sa`
    /// module docs; Linux `ib_sa` registers a SubnAdm agent with the Report method in its
    /// `ib_mad_reg_req` method mask, `sa_query.c`).
    pub fn serve_method(&mut self, class: MgmtClass, method: Method, agent: AgentId) {
        self.method_servers
            .insert((u8::from(class), u8::from(method)), agent);
    }

    /// Agent `id` as its concrete type.
    pub fn agent<T: 'static>(&self, id: AgentId) -> Option<&T> {
        self.agents.get(id)
    }

    /// Agent `id` as its concrete type, mutably; the host polls it on its next event.
    pub fn agent_mut<T: 'static>(&mut self, id: AgentId) -> Option<&mut T> {
        self.dirty = true;
        self.agents.get_mut(id)
    }

    /// Adds an application.
    pub fn add_app<A: App>(&mut self, app: A) -> AppId {
        self.apps.push(Box::new(app));
        self.dirty = true;
        AppId(self.apps.len() - 1)
    }

    /// Hands the completions of `cq` to `app`.
    pub fn route_cq(&mut self, cq: CqId, app: AppId) {
        self.cq_routes.insert(cq, app);
    }

    /// Application `id` as its concrete type.
    pub fn app<T: 'static>(&self, id: AppId) -> Option<&T> {
        self.apps.get(id.0)?.as_any().downcast_ref()
    }

    /// Application `id` as its concrete type, mutably; the host polls it on its next event.
    pub fn app_mut<T: 'static>(&mut self, id: AppId) -> Option<&mut T> {
        self.dirty = true;
        self.apps.get_mut(id.0)?.as_any_mut().downcast_mut()
    }

    /// Application `id` mutably without marking the host for a poll: only for taking what the
    /// application already queued for the outside (the IPoIB adapter's packets for the OS,
    /// `IpoibApp::to_os_buf`), which gives neither it nor the host work. Anything else goes
    /// through [`Host::app_mut`].
    pub fn app_output_mut<T: 'static>(&mut self, id: AppId) -> Option<&mut T> {
        self.apps.get_mut(id.0)?.as_any_mut().downcast_mut()
    }

    fn post_gsi_recv(&mut self) {
        self.post_recv_on(1);
    }

    /// Posts one receive buffer on QP0 (`n` = 0) or QP1 of the management port.
    fn post_recv_on(&mut self, n: u32) {
        self.next_wr += 1;
        let wr = RecvWr {
            wr_id: self.next_wr,
            capacity: 256 + 40,
        };
        // QP0 and QP1 exist from the start and are never in Reset: this cannot fail.
        let _ = self
            .hca
            .post_recv(crate::hw::hca::special_qpn(self.mgmt_port, n), wr);
    }

    /// Runs agents, applications and the HCA until nothing moves; sends through `tx`. Call it
    /// after acting on the host from outside (`Simulator::with_node`) to make it act now.
    pub fn drive(&mut self, now: Instant, tx: &mut Tx) {
        self.last_now = self.last_now.max(now);
        self.dirty = false;
        self.drained = false;
        for _ in 0..MAX_ROUNDS {
            let mut progress = false;
            // No agent's timer due and no agent handed work since the agents' last pass.
            let mut agents_rest = false;
            // The SMA configured a port (an external SM's SubnSet): as after a configuration
            // write.
            if self.hca.has_port_changes() {
                for p in self.hca.take_port_changes() {
                    progress = true;
                    self.port_changed(now, p);
                }
            }
            // The completions there now, one by one (handling one queues none on this CQ).
            for _ in 0..self.gsi_waiting() {
                let Some(c) = self.hca.poll_one(self.gsi_cq) else {
                    break;
                };
                progress = true;
                self.on_gsi(now, c);
            }
            progress |= self.run_agents(now);
            // A host without applications (an SM's sweep sees only those) has none to run and
            // nothing for them to hand the agents, who gave out every MAD just now.
            if !self.apps.is_empty() || !self.cq_routes.is_empty() {
                self.agents.touched = false;
                progress |= self.run_apps(now);
                // Applications may have handed agents work (e.g. an SA request): let them send
                // it now. Agents no application took mutably ([`Agents::get_mut`]) and with no
                // timer due would give nothing: the pass above took all they had.
                if self.agents.touched || self.agent_timer_due(now) {
                    progress |= self.run_agents(now);
                } else {
                    agents_rest = true;
                }
            }
            if !self.config.is_empty() {
                for (to, c) in self.config.drain(..) {
                    tx.configure(to, c);
                }
            }
            progress |= self.hca.flush(now, tx) > 0;
            if !progress || self.settled(now, agents_rest) {
                self.drained = true;
                break;
            }
        }
    }

    /// True when another round of [`Host::drive`] at `now` would do nothing, so that it can be
    /// skipped (a host then takes one round per event instead of two): the HCA with nothing to
    /// flush and no port change (`Hca::is_settled`); no completion on QP0/QP1, none on a CQ
    /// routed to an application, and no configuration write waiting; no agent's timer due; every
    /// application idle ([`App::is_idle`], asked after the round: what the agents did last is
    /// in what it looks at). The agents gave out every MAD at the end of this round
    /// (`run_agents`) and nothing reached them since (only completions, timers and applications
    /// do), so their `poll_transmit` would give nothing again.
    pub fn is_settled(&self, now: Instant) -> bool {
        self.settled(now, false)
    }

    /// [`Host::is_settled`], the agents' timers known not due when `agents_rest` (`drive` saw
    /// none due and nothing has reached the agents since).
    fn settled(&self, now: Instant, agents_rest: bool) -> bool {
        self.config.is_empty()
            && self.hca.is_settled()
            && self.gsi_waiting() == 0
            && (self.cq_routes.is_empty() || self.hca.completions_waiting() == 0)
            && (agents_rest || !self.agent_timer_due(now))
            && self
                .apps
                .iter()
                .all(|a| a.is_idle(now, &self.hca, &self.agents))
    }

    /// True when an agent's timer is due at `now`.
    fn agent_timer_due(&self, now: Instant) -> bool {
        self.agents
            .list
            .iter()
            .any(|a| a.poll_timeout().is_some_and(|t| t <= now))
    }

    /// Completions on QP0/QP1's CQ ([`Hca::cq_len`], without its lookup when no CQ holds any).
    fn gsi_waiting(&self) -> usize {
        if self.hca.completions_waiting() == 0 {
            0
        } else {
            self.hca.cq_len(self.gsi_cq)
        }
    }

    fn run_agents(&mut self, now: Instant) -> bool {
        let mut progress = false;
        let mut i = 0;
        while let Some(agent) = self.agents.list.get_mut(i) {
            if agent.poll_timeout().is_some_and(|t| t <= now) {
                agent.handle_timeout(now);
            }
            // Most turns give nothing: asked once without the loop's bookkeeping.
            if let Some(mut m) = agent.poll_transmit(now) {
                progress = true;
                loop {
                    self.send_mad(Some(AgentId(i)), m);
                    match self.agents.list[i].poll_transmit(now) {
                        Some(next) => m = next,
                        None => break,
                    }
                }
            }
            i += 1;
        }
        progress
    }

    fn run_apps(&mut self, now: Instant) -> bool {
        let mut progress = false;
        let mut new_routes = Vec::new();
        // Routes added while the applications run take effect after this pass. (Their CQs are
        // looked at only when a CQ holds a completion.)
        let routes = if self.hca.completions_waiting() == 0 {
            None
        } else {
            Some(&self.cq_routes)
        };
        for (&cq, &app) in routes.into_iter().flatten() {
            // Every CQ is empty (an application's completion may fill one: asked at each).
            if self.hca.completions_waiting() == 0 {
                break;
            }
            for c in self.hca.poll_cq(cq, usize::MAX) {
                progress = true;
                if let Some(a) = self.apps.get_mut(app.0) {
                    let mut ctx = HostCtx {
                        hca: &mut self.hca,
                        agents: &mut self.agents,
                        route_cqs: &mut Vec::new(),
                        config: &mut self.config,
                        again: false,
                    };
                    a.on_completion(now, c, &mut ctx);
                    new_routes.extend(ctx.route_cqs.drain(..).map(|q| (q, app)));
                }
            }
        }
        for (i, a) in self.apps.iter_mut().enumerate() {
            let mut routes = Vec::new();
            let mut ctx = HostCtx {
                hca: &mut self.hca,
                agents: &mut self.agents,
                route_cqs: &mut routes,
                config: &mut self.config,
                again: false,
            };
            a.poll(now, &mut ctx);
            progress |= ctx.again;
            new_routes.extend(routes.into_iter().map(|q| (q, AppId(i))));
        }
        for (q, a) in new_routes {
            self.cq_routes.insert(q, a);
        }
        progress
    }

    /// One QP0 or QP1 completion: a received MAD to route, or a send error.
    fn on_gsi(&mut self, now: Instant, c: Completion) {
        let smi = c.qpn == self.smi_qp();
        if c.opcode != WcOpcode::Recv {
            if c.status != WcStatus::Success {
                self.counters.send_errors += 1;
                // IBA 1 §10.3.1: SQE back to RTS so that later MADs go out.
                let _ = self
                    .hca
                    .modify_qp(c.qpn, crate::hw::hca::ModifyQp::Rts(None));
            }
            return;
        }
        self.post_recv_on(u32::from(!smi));
        if c.status != WcStatus::Success {
            return;
        }
        let Some(h) = umad::header(&c.data) else {
            self.counters.bad_mad += 1;
            return;
        };
        let (class, method, tid) = (h.mgmt_class(), h.method(), h.transaction_id());
        let pkey = self
            .hca
            .port(self.mgmt_port)
            .and_then(|p| p.pkey(c.pkey_index))
            .unwrap_or(PKey::DEFAULT);
        let from = MadAddr {
            lid: c.slid,
            qpn: c.src_qp,
            qkey: QKey::GSI,
            sl: c.sl,
            pkey,
            grh: c.grh.map(|g| GrhAddr {
                gid: g.sgid,
                flow_label: g.flow_label,
                hop_limit: g.hoplmt,
                tclass: g.tclass,
            }),
        };
        let target = if method.answers_request() {
            let t = self.tids.get(&tid).copied();
            if t.is_none() {
                self.counters.unknown_tid += 1;
            }
            t
        } else {
            let class = u8::from(class);
            let t = self
                .method_servers
                .get(&(class, u8::from(method)))
                .or_else(|| self.servers.get(&class))
                .copied()
                .or(if smi { None } else { self.unclaimed });
            if t.is_none() {
                if smi {
                    // SMPs nobody registered for are the SMA's (in the HCA), never answered here.
                    self.counters.unmatched_dropped += 1;
                } else if let Ok(hdr) = MadHeaderRepr::parse_bytes(&c.data) {
                    self.unmatched(&hdr, from, &c.data);
                }
            }
            t
        };
        if let Some(a) = target.and_then(|a| self.agents.list.get_mut(a.0)) {
            self.counters.mads_in += 1;
            a.handle_mad(now, MadIn { from, mad: c.data });
        }
    }

    /// Linux `ib_mad.c` `generate_unmatched_resp`: Get/Set nobody serves are answered with
    /// GetResp and status 0x000C (IBA 1 §13.4.7 Table 112: method/attribute combination not
    /// supported); everything else is dropped.
    fn unmatched(&mut self, hdr: &MadHeaderRepr, from: MadAddr, mad: &[u8]) {
        if !matches!(hdr.method, Method::Get | Method::Set) {
            self.counters.unmatched_dropped += 1;
            return;
        }
        self.counters.unmatched_answered += 1;
        let mut resp = mad.to_vec();
        hdr.response(Method::GetResp, MadStatus::METHOD_ATTR_UNSUPPORTED)
            .emit(&mut resp);
        self.send_mad(
            None,
            MadOut {
                to: from,
                mad: resp,
            },
        );
    }

    /// Remembers that the response to `tid` goes to agent `a`: the latest request with a TID
    /// names its agent; each agent forgets its own oldest TID beyond [`TID_MEMORY`] (one that
    /// another agent has sent since stays that agent's).
    fn remember_tid(&mut self, tid: u64, a: AgentId) {
        if self.tid_order.len() <= a.0 {
            self.tid_order.resize_with(a.0 + 1, VecDeque::new);
        }
        if self.tids.insert(tid, a) == Some(a) {
            return;
        }
        let Some(order) = self.tid_order.get_mut(a.0) else {
            return;
        };
        order.push_back(tid);
        if order.len() > TID_MEMORY {
            if let Some(old) = order.pop_front() {
                if self.tids.get(&old) == Some(&a) {
                    self.tids.remove(&old);
                }
            }
        }
    }

    /// Forgets every TID agent `a` remembers: responses to them are unknown from now on (a
    /// detached umad user's, as Linux drops those of a closed `umad` file's agents).
    fn forget_tids(&mut self, a: AgentId) {
        let Some(order) = self.tid_order.get_mut(a.0) else {
            return;
        };
        for tid in order.drain(..) {
            if self.tids.get(&tid) == Some(&a) {
                self.tids.remove(&tid);
            }
        }
    }

    /// Queues a MAD on QP1, or on QP0 for an SMP (IBA 1 §13.5.1); requests remember their TID
    /// for the response.
    fn send_mad(&mut self, agent: Option<AgentId>, m: MadOut) {
        let hdr = umad::header(&m.mad);
        let smp = hdr.as_ref().is_some_and(|h| is_smp_class(h.mgmt_class()));
        if let (Some(a), Some(hdr)) = (agent, hdr) {
            if !hdr.method().answers_request() {
                self.remember_tid(hdr.transaction_id(), a);
            }
        }
        // QP0 ignores P_Keys (IBA 1 §10.9.3: the HCA sends with the table's first entry).
        let pkey_index = if smp {
            Some(0)
        } else {
            self.hca
                .port(self.mgmt_port)
                .and_then(|p| p.find_pkey_index(m.to.pkey))
        };
        let Some(pkey_index) = pkey_index else {
            self.counters.no_pkey += 1;
            return;
        };
        self.next_wr += 1;
        let wr = SendWr {
            wr_id: self.next_wr,
            op: SendOp::Send,
            data: m.mad,
            local: None,
            ud: Some(UdDest {
                ah: AddressHandle {
                    dlid: m.to.lid,
                    sl: m.to.sl,
                    src_path_bits: 0,
                    grh: m.to.grh.map(|g| GlobalRoute {
                        dgid: g.gid,
                        sgid_index: 0,
                        flow_label: g.flow_label,
                        hop_limit: g.hop_limit,
                        tclass: g.tclass,
                    }),
                    port: self.mgmt_port,
                },
                remote_qpn: m.to.qpn,
                remote_qkey: m.to.qkey,
                pkey_index: Some(pkey_index),
            }),
            signaled: false,
            solicited: false,
        };
        let qp = if smp {
            self.smi_qp()
        } else {
            Hca::gsi_qp(self.mgmt_port)
        };
        match self.hca.post_send(qp, wr) {
            Ok(()) => self.counters.mads_out += 1,
            Err(_) => self.counters.send_errors += 1,
        }
    }

    fn port_changed(&mut self, now: Instant, port: u8) {
        let Some(p) = self.hca.port(port).cloned() else {
            return;
        };
        for (i, a) in self.apps.iter_mut().enumerate() {
            let mut routes = Vec::new();
            let mut ctx = HostCtx {
                hca: &mut self.hca,
                agents: &mut self.agents,
                route_cqs: &mut routes,
                config: &mut self.config,
                again: false,
            };
            a.on_port_change(now, &p, &mut ctx);
            for q in routes {
                self.cq_routes.insert(q, AppId(i));
            }
        }
    }
}

impl Device for Host {
    fn receive(&mut self, now: Instant, port: u8, packet: Vec<u8>, tx: &mut Tx) {
        self.hca.receive(now, port, packet, tx);
        self.drive(now, tx);
    }

    /// A packet the HCA took quietly ([`Hca::took_quietly`]: a SEND or RDMA WRITE First or
    /// Middle, IBA 1 §9.7.5.2) takes no round when the host was drained and untouched since:
    /// the round would find what the last one left, which moved nothing. So 15 of the 16
    /// packets of a 65,520-byte connected-mode message (RFC 4755) cost no pass over agents
    /// and applications, nor a look at the timer (docs/benchmarks/lab-connected.md).
    fn receive_frame(&mut self, now: Instant, port: u8, frame: Frame, tx: &mut Tx) {
        self.hca.receive_frame(now, port, frame, tx);
        self.kept_timer =
            self.quiet_rounds && self.drained && !self.dirty && self.hca.took_quietly();
        if self.kept_timer {
            self.last_now = self.last_now.max(now);
            self.counters.quiet_packets += 1;
            return;
        }
        self.drive(now, tx);
    }

    fn timer_kept(&self) -> bool {
        self.kept_timer
    }

    fn handle_timeout(&mut self, now: Instant, tx: &mut Tx) {
        self.hca.handle_timeout(now, tx);
        self.drive(now, tx);
    }

    fn poll_timeout(&self) -> Option<Instant> {
        // The earliest of: now when marked changed, the HCA's timer, the agents' and the
        // applications' (plain loops over `Option`s: the simulator asks after every event).
        fn earlier(a: Option<Instant>, b: Option<Instant>) -> Option<Instant> {
            match (a, b) {
                (Some(x), Some(y)) => Some(x.min(y)),
                (x, None) => x,
                (None, y) => y,
            }
        }
        let mut t = earlier(self.dirty.then_some(self.last_now), self.hca.poll_timeout());
        for a in &self.agents.list {
            t = earlier(t, a.poll_timeout());
        }
        for a in &self.apps {
            t = earlier(t, a.poll_timeout());
        }
        t
    }

    fn link_state(&mut self, now: Instant, port: u8, up: bool, tx: &mut Tx) {
        self.hca.link_state(now, port, up, tx);
        self.port_changed(now, port);
        self.drive(now, tx);
    }

    fn configure(&mut self, now: Instant, config: Config, tx: &mut Tx) {
        let port = match &config {
            Config::Port(pc) => Some(pc.port),
            Config::ClientReregister(p) => Some(*p),
            _ => None,
        };
        self.hca.configure(now, config, tx);
        if let Some(p) = port {
            self.port_changed(now, p);
        }
        self.drive(now, tx);
    }

    fn as_any(&self) -> &dyn Any {
        self
    }

    fn as_any_mut(&mut self) -> &mut dyn Any {
        self
    }
}
