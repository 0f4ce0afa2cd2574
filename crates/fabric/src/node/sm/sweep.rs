//! The subnet manager over SMPs: a [`MadAgent`] on QP0 of the SM's port that discovers the
//! subnet and programs it with directed-route SubnGet/SubnSet SMPs only, in the order of OpenSM's
//! state manager (`osm_state_mgr.c`, IBA 1 §14.4 "subnet management"):
//!
//! 1. Discovery ([`super::discover`]): NodeInfo, NodeDescription, SwitchInfo (switches) and
//!    PortInfo, breadth first from the SM's port over switches, with the directed route to every
//!    node and CA port.
//!    While the SM is Discovering or Master (IBA 1 §14.4), a complete discovery is followed by
//!    SubnGet(SMInfo) of every other SM found (phase Elect, [`super::election`], `smi`): if one
//!    is master or wins, the SM goes Standby (phase Standby: nothing programmed, the master's
//!    SMInfo polled; when it is gone a new sweep starts, Discovering again); a master hands over
//!    to a greater SM, or waits for a lesser Master's handover; else it is Master and goes on.
//! 2. The brain ([`SubnetManager`]) runs on the discovered [`crate::hw::topology::Topology`]
//!    (LIDs, min-hop LFTs, P_Keys from the partitions, multicast roots); its node handles are
//!    indices into that discovered topology (`NodeId(i)`), never simulator nodes.
//! 3. Configure (OpenSM `osm_lid_mgr.c`, `osm_pkey_mgr.c`, `osm_ucast_mgr.c`): per switch,
//!    PortInfo of port 0 (LID, LMC, MasterSMLID, MasterSMSL, GidPrefix), the P_KeyTable block of
//!    every cabled port, and the LinearForwardingTable blocks up to the top; per CA port, PortInfo
//!    (LID, LMC, MasterSMLID, MasterSMSL, GidPrefix, NeighborMTU) and its P_KeyTable blocks.
//!    PortState is "no state change" in all of them (IBA 1 §14.2.5.6).
//! 4. Arm: SwitchInfo (LinearFDBTop: the last LID routed; a block written above the top leaves
//!    it there, IBA 1 §14.2.5.4, so either order serves), where the top discovery read differs
//!    (OpenSM `ucast_mgr_set_fwd_top`), and every configured port's PortInfo with PortState
//!    Armed (IBA 1 §7.2: Init to Armed); a switch's external ports get their NeighborMTU in
//!    this one, as OpenSM's link manager sets them (`osm_link_mgr.c`).
//! 5. Activate: every port's PortInfo with PortState Active (Armed to Active). OpenSM arms all
//!    ports before it activates any, so a port sees Active only when the whole subnet is routed.
//! 6. Afterwards, multicast: [`SmpSm::set_mft`] changes the MFT entries of a group; the changed
//!    MulticastForwardingTable blocks (32 MLIDs × 16 ports each, IBA 1 §14.2.5.12) are set from
//!    the SM's copy of every switch's table.
//!
//! Each wave is one batch: the next starts when every SMP of the current one is answered or has
//! failed (GetResp status other than success, or no response after the transport's retries,
//! [`super::smp::SmpRequester`]). An SMP that timed out is submitted again, up to
//! [`SmpSettings::rounds`] times; what still fails, or cannot be submitted again, is counted
//! ([`SweepStats`]) and leaves its wave. At most
//! [`SmpSettings::window`] SMPs are outstanding. Time is a parameter; nothing here reads a clock.
//!
//! Sweeps again (OpenSM's heavy sweep): on a trap 128 from a switch (a link went up or down, IBA 1
//! §14.2.5.1; answered with TrapRepress), every [`SmpSettings::sweep_interval`], and soon after a
//! sweep whose discovery did not complete. A sweep rediscovers the whole subnet; if its discovery
//! failed somewhere the subnet is left as it is (a partial view would route around what it
//! missed). Otherwise the brain runs again and only what differs is set: PortInfo whose LID, LMC,
//! MasterSMLID, MasterSMSL or GidPrefix differs from what the port answered; LinearFDBTop where
//! the switch's SwitchInfo answered another (another SM or a tool may have moved it) or the LFT
//! changed length; P_KeyTable and LFT blocks that differ from what the SM last set there (its
//! copy, by GUID; in a new master's first sweep all of them, the tops, and every MFT block of its
//! copy, since another master may have set them meanwhile, as OpenSM does
//! `coming_out_of_standby`); Armed for ports in Init, Active for ports Armed. The brain is
//! deterministic and numbers nodes in GUID order, and the SM keeps a port-GUID-to-LID table of
//! every port it gave a LID ([`SmpSm::guid2lid`], OpenSM's guid2lid): a known port keeps its LID
//! in every later sweep, also when the walk's order changed or the port was gone for a while; new
//! ports get LIDs free of the table.
//!
//! Invariants: the brain exists from the end of the first complete discovery on and changes only
//! at the end of a complete one ([`SmpSm::generation`] counts them); the MFT copy, by switch
//! node GUID, holds exactly what the SM last set on the switches the last discovery found;
//! within a sweep, phases only move forward.

use super::discover::{Ask, Discovered, Discovery};
use super::election::{Election, ElectionSettings, SmInfoAsk};
use super::smp::{dr_get, dr_set, SmpFailure, SmpRequester, SmpSettings};
use super::{SmError, SmOptions, SubnetManager};
use crate::hw::mgmt::Config;
use crate::hw::sim::NodeId;
use crate::node::subnet::partition_specs;
use ipoib_proto::mad_agent::{MadAgent, MadIn, MadOut};
use ipoib_proto::partitions::PartitionConfig;
use ipoib_proto::subnet::NodeFacts;
use ipoib_proto::time::Instant;
use ipoib_wire::mad::attr::smp as attr;
use ipoib_wire::mad::{MadHeaderRepr, Method};
use ipoib_wire::smp::cap_mask::IS_CLIENT_REREGISTRATION_SUPPORTED as CLIENT_REREG;
use ipoib_wire::smp::{
    LftBlockRepr, PortInfoRepr, PortState, SmInfoRepr, SmpAttribute, SwitchInfoRepr,
    LFT_BLOCK_LIDS, MFT_BLOCK_MLIDS,
};
use ipoib_wire::{Guid, PKey};
use sets::Sets;
use std::collections::btree_map::Entry;
use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::sync::Arc;

/// A block of the SM's MFT copy: (switch node GUID, block, position) and its PortMasks.
pub type MftCopyBlock<'a> = ((Guid, u16, u8), &'a [u16; MFT_BLOCK_MLIDS]);

mod lids;
mod mft;
mod sets;
mod smi;
#[cfg(test)]
mod tests;
mod trap;

/// PortInfo:SubnetTimeOut written to every port: 4.096 µs × 2^18, about 1 s, the largest time
/// a packet may take to cross the subnet (IBA 1 §14.2.5.6); OpenSM's default `subnet_timeout 18`
/// (docs/OPENSM-NOTES.md "Our SM against OpenSM").
pub const SUBNET_TIMEOUT: u8 = 18;

/// SwitchInfo:LifeTimeValue written to every switch: 4.096 µs × 2^18, the time a packet may live
/// in a switch (IBA 1 §14.2.5.4, §18.2.5.4); OpenSM's default `packet_life_time 0x12`.
pub const LIFE_TIME_VALUE: u8 = 18;

/// Where the sweep is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum SweepPhase {
    /// Discovering the subnet.
    Discover,
    /// Setting LIDs, P_Keys, forwarding tables.
    Configure,
    /// Setting every port Armed.
    Arm,
    /// Setting every port Active.
    Activate,
    /// The subnet is up; multicast changes as they come.
    Done,
    /// The brain refused the discovered subnet (or the SM's own node did not answer).
    Failed,
    /// Discovery done, asking the other SMs' SMInfo ([`super::election`]).
    Elect,
    /// Another SM is master: nothing is programmed, the master is polled
    /// ([`super::election`]).
    Standby,
}

/// Counters of the sweep.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SweepStats {
    /// Nodes discovered.
    pub nodes: u64,
    /// Discovery SMPs that failed.
    pub discovery_failures: u64,
    /// SubnSet SMPs of the bring-up (configure, arm, activate).
    pub sets: u64,
    /// SubnSet SMPs that failed (status, timeout, or a resubmission the transport refused).
    pub set_failures: u64,
    /// MFT block SubnSets after bring-up.
    pub mft_sets: u64,
    /// Traps received (IBA 1 §14.2.5.1).
    pub traps: u64,
    /// Sweeps started (the first included).
    pub sweeps: u64,
    /// Sweeps whose discovery did not complete: the subnet was left as it was.
    pub incomplete_sweeps: u64,
    /// SMPs submitted again after they timed out.
    pub resubmitted: u64,
    /// When the last sweep ended.
    pub done_at: Option<Instant>,
}

#[derive(Debug, Clone)]
enum Tag {
    /// A discovery request, and how often it was submitted.
    Discover(Ask, u32),
    /// A SubnSet of the bring-up or a multicast change (its AttributeID), and how often it was
    /// submitted. Resubmitted from the transport's copy ([`SmpRequester::resubmit`]).
    Set(u16, u32),
    /// SubnGet/SubnSet(SMInfo) of another SM over its route ([`smi`]).
    SmInfo(Vec<u8>, SmInfoAsk),
}

/// A port the bring-up configured: its node, directed route and PortInfo (sent again with each
/// new state).
#[derive(Debug, Clone)]
struct Configured {
    path: Vec<u8>,
    port: u8,
    info: PortInfoRepr,
    /// The state the port answered in discovery, or was set to by this sweep.
    state: PortState,
}

/// The SM agent. See the module docs.
#[derive(Debug)]
pub struct SmpSm {
    /// The SM's port has its link: the sweep may start.
    started: bool,
    settings: SmpSettings,
    smp: SmpRequester<Tag>,
    /// TrapRepress and SMInfo answers, and traps 144, to send (no response expected).
    represses: VecDeque<MadOut>,
    /// Traps 144 sent ([`smi`]).
    traps_sent: u64,
    /// The SM's port while Standby, or Master awaiting another master's HANDOVER: (LID, the
    /// polled master's LID, CapabilityMask), for traps 144.
    own_port: Option<(u16, u16, u32)>,
    /// When the next sweep starts (after the current one ends).
    resweep_at: Option<Instant>,
    /// Complete discoveries so far (the brain's generation).
    generation: u64,
    /// Discovery SMPs of the current sweep that failed for good.
    sweep_failures: u64,
    /// What the SM last set, by node GUID: P_Key tables per port, LFTs.
    shadow_pkeys: BTreeMap<(Guid, u8), Vec<PKey>>,
    shadow_lft: BTreeMap<Guid, Vec<u8>>,
    /// Port GUID to LID of every port the SM ever gave a LID (OpenSM's guid2lid).
    guid2lid: BTreeMap<Guid, u16>,
    /// The CA ports (node GUID, port) the last configured sweep found: one not among them is new
    /// and gets ClientReregister (OpenSM `is_new`, docs/OPENSM-LIMITS.md).
    last_ports: BTreeSet<(Guid, u8)>,
    phase: SweepPhase,
    opts: SmOptions,
    partitions: PartitionConfig,
    discovery: Discovery,
    /// Sets of the current wave not yet answered.
    wave: usize,
    /// Switch node GUID to its directed route and NumPorts in the current discovery.
    switches: BTreeMap<Guid, (Vec<u8>, u8)>,
    configured: Vec<Configured>,
    /// SwitchInfo of each switch (path, LinearFDBTop), set in the Arm wave.
    tops: Vec<(Vec<u8>, u16)>,
    /// Shared with the SM application, which reads it (the SA's model, the groups' trees):
    /// never changed once made, so one copy serves both.
    brain: Option<Arc<SubnetManager>>,
    error: Option<SmError>,
    /// The SM's copy of the MFTs: (switch node GUID, block, position) -> PortMasks; by GUID,
    /// as a re-sweep may number the nodes differently.
    mft: BTreeMap<(Guid, u16, u8), [u16; MFT_BLOCK_MLIDS]>,
    mft_dirty: BTreeSet<(Guid, u16, u8)>,
    stats: SweepStats,
    election: Election,
    /// The discovery's result while the other SMs' SMInfo is asked.
    elect: Option<Discovered>,
}

impl SmpSm {
    /// An SM with subnet-wide `opts` (its partitions are replaced by those of `partitions`,
    /// resolved on the discovered subnet) and transport `settings`.
    pub fn new(opts: SmOptions, partitions: PartitionConfig, settings: SmpSettings) -> SmpSm {
        SmpSm {
            started: false,
            settings,
            smp: SmpRequester::new(settings, 0x534d_0000_0000_0000),
            represses: VecDeque::new(),
            traps_sent: 0,
            own_port: None,
            resweep_at: None,
            generation: 0,
            sweep_failures: 0,
            shadow_pkeys: BTreeMap::new(),
            shadow_lft: BTreeMap::new(),
            guid2lid: BTreeMap::new(),
            last_ports: BTreeSet::new(),
            phase: SweepPhase::Discover,
            opts,
            partitions,
            discovery: Discovery::new(),
            wave: 0,
            switches: BTreeMap::new(),
            configured: Vec::new(),
            tops: Vec::new(),
            brain: None,
            error: None,
            mft: BTreeMap::new(),
            mft_dirty: BTreeSet::new(),
            stats: SweepStats::default(),
            election: Election::new(ElectionSettings::default()),
            elect: None,
        }
    }

    /// The same SM with election `settings` (priority, polling; [`super::election`]).
    pub fn with_election(mut self, settings: ElectionSettings) -> SmpSm {
        self.election = Election::new(settings);
        self
    }

    /// The election state ([`super::election`]).
    pub fn election(&self) -> &Election {
        &self.election
    }

    /// What the SM's port answers SubnGet(SMInfo) with: `guid` (the port's GUID), the election
    /// state and ActCount (SMPs sent, as OpenSM's `qp0_mads_sent`).
    pub fn sm_info(&self, guid: Guid) -> SmInfoRepr {
        self.election.sm_info(guid, self.smp.counters().sent)
    }

    /// Starts the sweep: the SM's port has its link (PortPhysicalState LinkUp, IBA 1 §7.2), as
    /// OpenSM waits for its port before it sweeps. Nothing is sent before.
    pub fn start(&mut self) {
        if !self.started {
            self.started = true;
            self.stats.sweeps = 1;
        }
    }

    /// Complete discoveries so far: the brain changes only when this does.
    pub fn generation(&self) -> u64 {
        self.generation
    }

    /// Asks for a sweep at `at` (or sooner if one is due sooner).
    pub fn sweep_at(&mut self, at: Instant) {
        self.resweep_at = Some(self.resweep_at.map_or(at, |t| t.min(at)));
    }

    /// True once [`SmpSm::start`] was called.
    pub fn is_started(&self) -> bool {
        self.started
    }

    /// Where the sweep is.
    pub fn phase(&self) -> SweepPhase {
        self.phase
    }

    /// Counters.
    pub fn stats(&self) -> SweepStats {
        self.stats
    }

    /// Counters of the SMP transport.
    pub fn smp_counters(&self) -> super::smp::SmpCounters {
        self.smp.counters()
    }

    /// Why the brain refused the discovered subnet, if it did.
    pub fn error(&self) -> Option<&SmError> {
        self.error.as_ref()
    }

    /// The brain, from the end of discovery on.
    pub fn manager(&self) -> Option<&SubnetManager> {
        self.brain.as_deref()
    }

    /// [`SmpSm::manager`], shared: the brain is never changed once made (a new discovery makes
    /// a new one), so a reader keeps this instead of a copy.
    pub fn shared_manager(&self) -> Option<Arc<SubnetManager>> {
        self.brain.clone()
    }

    /// Port GUID to LID of every port (a switch by its node GUID) the SM ever gave a LID: a port
    /// keeps its LID over sweeps, also when it was gone for a while (OpenSM's guid2lid).
    pub fn guid2lid(&self) -> &BTreeMap<Guid, u16> {
        &self.guid2lid
    }

    /// True when the bring-up is over and no SMP is queued, outstanding or waiting to be sent.
    pub fn is_idle(&self) -> bool {
        matches!(
            self.phase,
            SweepPhase::Done | SweepPhase::Failed | SweepPhase::Standby
        ) && self.smp.is_idle()
            && self.mft_dirty.is_empty()
            && self.represses.is_empty()
    }

    fn set(&mut self, attribute: SmpAttribute, modifier: u32, path: &[u8]) {
        let sets = Sets {
            smp: &mut self.smp,
            wave: &mut self.wave,
            stats: &mut self.stats,
        };
        sets.set(attribute, modifier, path);
    }

    /// Starts a new sweep: discovery from scratch.
    fn resweep(&mut self) {
        self.resweep_at = None;
        self.stats.sweeps += 1;
        self.sweep_failures = 0;
        self.discovery = Discovery::new();
        self.configured.clear();
        self.tops.clear();
        self.phase = SweepPhase::Discover;
    }

    /// The end of a sweep at `now`: the next one is due soon after an incomplete discovery, else
    /// after the interval.
    fn sweep_done(&mut self, now: Instant, phase: SweepPhase) {
        self.phase = phase;
        self.stats.done_at = Some(now);
        let next = if self.sweep_failures > 0 {
            Some(now + self.settings.timeout)
        } else {
            self.settings.sweep_interval.map(|d| now + d)
        };
        if let Some(t) = next {
            self.sweep_at(t);
        }
    }

    /// Takes the transport's results and moves the sweep on.
    fn step(&mut self, now: Instant) {
        if !self.started {
            return;
        }
        let rounds = self.settings.rounds.max(1);
        while let Some((tag, r)) = self.smp.poll_result() {
            let again = matches!(r, Err(SmpFailure::Timeout));
            match tag {
                Tag::Discover(ask, n) if again && n < rounds => {
                    self.stats.resubmitted += 1;
                    let (id, modifier) = ask.attribute();
                    let smp = dr_get(id, modifier, ask.path());
                    self.smp.submit(Tag::Discover(ask, n + 1), &smp);
                }
                Tag::Discover(ask, _) => {
                    if r.is_err() {
                        self.stats.discovery_failures += 1;
                        self.sweep_failures += 1;
                    }
                    self.discovery.answer(ask, r.as_ref().ok());
                }
                // A Set the transport cannot queue again (it kept no copy of its MAD) is over:
                // it falls to the arm below, failed, and leaves its wave, which would otherwise
                // wait for it forever.
                Tag::Set(id, n)
                    if again && n < rounds && self.smp.resubmit(Tag::Set(id, n + 1)) =>
                {
                    self.stats.resubmitted += 1;
                }
                Tag::SmInfo(path, ask) => self.sm_info_result(now, path, ask, r),
                Tag::Set(id, _) => {
                    if id != attr::MULTICAST_FORWARDING_TABLE {
                        self.wave = self.wave.saturating_sub(1);
                    }
                    if r.is_err() {
                        self.stats.set_failures += 1;
                    }
                }
            }
        }
        loop {
            let before = self.phase;
            match self.phase {
                SweepPhase::Discover => {
                    for ask in self.discovery.take_asks() {
                        let (id, modifier) = ask.attribute();
                        let smp = dr_get(id, modifier, ask.path());
                        self.smp.submit(Tag::Discover(ask, 1), &smp);
                    }
                    if self.smp.in_flight() == 0 {
                        self.stats.nodes = self.discovery.node_count() as u64;
                        if self.sweep_failures > 0 && self.generation > 0 {
                            // A partial view would route around what it missed: leave it, sweep
                            // again.
                            self.stats.incomplete_sweeps += 1;
                            self.sweep_done(now, SweepPhase::Done);
                        } else {
                            self.elect(now);
                        }
                    }
                }
                SweepPhase::Elect if self.smp.in_flight() == 0 => self.decided(now),
                SweepPhase::Standby => self.poll_master(now),
                SweepPhase::Configure if self.wave == 0 => self.state_wave(PortState::Armed),
                SweepPhase::Arm if self.wave == 0 => self.state_wave(PortState::Active),
                SweepPhase::Activate if self.wave == 0 => self.sweep_done(now, SweepPhase::Done),
                SweepPhase::Done | SweepPhase::Failed => {
                    self.poll_master(now);
                    for key in std::mem::take(&mut self.mft_dirty) {
                        self.send_mft_block(key);
                    }
                    if self.resweep_at.is_some_and(|t| t <= now) && self.smp.is_idle() {
                        self.resweep();
                    }
                }
                _ => {}
            }
            if self.phase == before {
                break;
            }
        }
    }

    /// Runs the brain on the discovery `d` and sends the Configure wave.
    fn configure(&mut self, now: Instant, d: Option<Discovered>) {
        let Some(d) = d else {
            self.sweep_failures += 1;
            self.sweep_done(now, SweepPhase::Failed);
            return;
        };
        // A new master's first sweep asks every CA port's clients to register again.
        let rereg = self.election.take_first_master_sweep();
        if rereg {
            // Another master may have programmed the switches since this SM last did: what it
            // set then is no guide, everything is set again (OpenSM `coming_out_of_standby`,
            // `need_update` in `osm_state_mgr.c`).
            self.shadow_pkeys.clear();
            self.shadow_lft.clear();
            self.mft_dirty.extend(self.mft.keys().copied());
        }
        let known = self.known_lids(&d);
        let nodes = d.topology.nodes();
        let is_switch: Vec<bool> = nodes
            .iter()
            .map(|n| n.kind == crate::hw::topology::NodeKind::Switch)
            .collect();
        let mut opts = self.opts.clone();
        opts.partitions = partition_specs(&self.partitions, &d.topology, d.sm_port);
        let handles = (0..nodes.len()).map(NodeId).collect();
        let node_paths = d.node_paths;
        self.switches = (nodes.iter().zip(&node_paths))
            .filter(|(n, _)| n.kind == crate::hw::topology::NodeKind::Switch)
            .map(|(n, path)| (n.guid, (path.clone(), n.ports)))
            .collect();
        self.forget_absent_mfts();
        // IBA 1 §15.2.5.2: the SA's NodeRecords give NodeInfo as read; GUIDCap is the first
        // port's PortInfo:GUIDCap (switch port 0, a CA's lowest port that answered).
        let facts = d
            .node_infos
            .iter()
            .zip(&d.port_infos)
            .map(|(i, ports)| {
                let guid_cap = ports
                    .iter()
                    .flatten()
                    .map(|p| p.guid_cap)
                    .next()
                    .unwrap_or(1);
                Some(NodeFacts {
                    num_ports: i.num_ports,
                    system_image_guid: i.system_image_guid,
                    partition_cap: i.partition_cap,
                    device_id: i.device_id,
                    revision: i.revision,
                    vendor_id: i.vendor_id,
                    guid_cap: guid_cap.max(1),
                })
            })
            .collect();
        let mut brain = match SubnetManager::with_lids(d.topology, handles, d.sm_port, opts, &known)
        {
            Ok(mut b) => {
                b.set_node_facts(facts);
                b
            }
            Err(e) => {
                self.error = Some(e);
                self.phase = SweepPhase::Failed;
                return;
            }
        };
        self.generation += 1;
        self.guid2lid.extend(brain.port_lids());
        let guids: Vec<Guid> = brain.topology().nodes().iter().map(|n| n.guid).collect();
        // IBA 1 §15.2.5.3: the SA's PortInfoRecords give the PortInfo as read, with what the
        // SM sets below (as OpenSM's SA answers from the PortInfo its sweep stored).
        // Kept by node and port while the ports are walked (a map lookup per port cost more than
        // the rest of the walk at 10,000 hosts), made a map by GUID at the end.
        let mut read = d.port_infos.clone();
        let mut switch_infos = BTreeMap::new();
        let mut ports_now = Vec::new();
        for (NodeId(n), c) in brain.bring_up() {
            let switch = is_switch[n];
            let guid = guids[n];
            match c {
                Config::Port(pc) => {
                    let path = if switch {
                        Some(node_paths[n].clone())
                    } else {
                        d.port_paths[n].get(usize::from(pc.port)).cloned().flatten()
                    };
                    let Some(path) = path else { continue };
                    let info = PortInfoRepr {
                        gid_prefix: pc.subnet_prefix,
                        lid: pc.lid,
                        master_sm_lid: pc.sm_lid,
                        lmc: pc.lmc,
                        master_sm_sl: pc.sm_sl,
                        neighbor_mtu: pc.mtu,
                        local_port_num: pc.port,
                        port_state: PortState::NoStateChange,
                        subnet_timeout: SUBNET_TIMEOUT,
                        ..PortInfoRepr::default()
                    };
                    let seen = d.port_infos[n].get(usize::from(pc.port)).copied().flatten();
                    let state = seen.map_or(PortState::Init, |i| i.port_state);
                    if let Some(Some(r)) = read[n].get_mut(usize::from(pc.port)) {
                        (r.subnet_timeout, r.master_sm_sl) = (SUBNET_TIMEOUT, pc.sm_sl);
                    }
                    if switch && pc.port == 0 {
                        // A switch has one SubnetTimeOut, set through port 0, that all its
                        // ports answer (crates/fabric/src/hw/switch/sma.rs).
                        for r in read[n].iter_mut().take(usize::from(u8::MAX) + 1).flatten() {
                            r.subnet_timeout = SUBNET_TIMEOUT;
                        }
                    }
                    let same = seen.is_some_and(|i| {
                        (i.lid, i.master_sm_lid, i.gid_prefix, i.lmc, i.master_sm_sl)
                            == (pc.lid, pc.sm_lid, pc.subnet_prefix, pc.lmc, pc.sm_sl)
                            && i.subnet_timeout == SUBNET_TIMEOUT
                    });
                    // A switch's external ports get their NeighborMTU with the Armed state, as
                    // OpenSM's link manager sets them (`osm_link_mgr.c`); port 0 and CA ports
                    // get their LID now, as OpenSM's LID manager does (`osm_lid_mgr.c`).
                    // IBA 1 §14.4.11 (OpenSM `osm_lid_mgr.c`): ClientReregister where supported,
                    // in a new master's first sweep and to a port new since the last sweep (its
                    // link was down or it was unreachable: it may have missed an SA change).
                    let new = !switch && !self.last_ports.contains(&(guid, pc.port));
                    if !switch {
                        ports_now.push((guid, pc.port));
                    }
                    let client_reregister = (rereg || new)
                        && !switch
                        && seen.is_some_and(|i| i.capability_mask & CLIENT_REREG != 0);
                    if (!switch || pc.port == 0) && (!same || client_reregister) {
                        let i = PortInfoRepr {
                            client_reregister,
                            ..info
                        };
                        self.set(SmpAttribute::PortInfo(i), u32::from(pc.port), &path);
                    }
                    // One lookup: the table kept unless it changed, then its blocks sent from the
                    // copy (moved in, not cloned: 40,000 tables at 10,000 hosts).
                    let changed = match self.shadow_pkeys.entry((guid, pc.port)) {
                        Entry::Occupied(o) if *o.get() == pc.pkeys => None,
                        Entry::Occupied(mut o) => {
                            o.insert(pc.pkeys);
                            Some(o.into_mut())
                        }
                        Entry::Vacant(v) => Some(v.insert(pc.pkeys)),
                    };
                    if let Some(pkeys) = changed {
                        let sets = Sets {
                            smp: &mut self.smp,
                            wave: &mut self.wave,
                            stats: &mut self.stats,
                        };
                        sets.pkeys(&path, switch, pc.port, pkeys);
                    }
                    self.configured.push(Configured {
                        path,
                        port: pc.port,
                        info,
                        state,
                    });
                }
                Config::Lft(lft) => {
                    let path = node_paths[n].clone();
                    let old = self.shadow_lft.remove(&guid).unwrap_or_default();
                    for (b, chunk) in lft.chunks(LFT_BLOCK_LIDS).enumerate() {
                        let first = b * LFT_BLOCK_LIDS;
                        if old.get(first..first + chunk.len()) == Some(chunk) {
                            continue;
                        }
                        let mut ports = [crate::hw::switch::LFT_DROP; LFT_BLOCK_LIDS];
                        ports[..chunk.len()].copy_from_slice(chunk);
                        let attr = SmpAttribute::LinearForwardingTable(LftBlockRepr { ports });
                        self.set(attr, b as u32, &path);
                    }
                    // IBA 1 §14.2.5.4: DLIDs above LinearFDBTop are discarded. The top is set
                    // where the one read in discovery differs from the last LID routed, as
                    // OpenSM's `ucast_mgr_set_fwd_top` compares with the SwitchInfo its sweep
                    // read: another SM or a tool may have moved it since this SM set it. Also
                    // where it was not read, and where the LFT changed length (a new master's
                    // first sweep: the copy is cleared).
                    let top = lft.len().saturating_sub(1) as u16;
                    let read = d.switch_infos.get(n).copied().flatten();
                    let set = read.map(|s| s.linear_fdb_top) != Some(top) || old.len() != lft.len();
                    if set {
                        self.tops.push((path, top));
                    }
                    // IBA 1 §15.2.5.5: the SA's SwitchInfoRecords give the SwitchInfo as read,
                    // with what `state_wave` sets (OpenSM's copy takes the Set's response; the
                    // SMA's fields after it: `hw::switch::sma`'s `set_switch_info`).
                    if let Some(mut si) = read {
                        if set {
                            si.linear_fdb_top = top;
                            si.life_time_value = LIFE_TIME_VALUE;
                            si.port_state_change = false;
                            si.default_port = 0;
                            si.default_multicast_primary_port = 0;
                            si.default_multicast_not_primary_port = 0;
                        }
                        switch_infos.insert(guid, si);
                    }
                    self.shadow_lft.insert(guid, lft);
                }
                // The brain plans none (only an attached host's uplink writes it).
                Config::Mft { .. } | Config::ClientReregister(_) => {}
            }
        }
        self.last_ports = ports_now.into_iter().collect();
        let read = read.into_iter().enumerate().flat_map(|(n, ports)| {
            let guid = guids[n];
            (ports.into_iter().enumerate())
                .filter_map(move |(p, i)| Some(((guid, u8::try_from(p).ok()?), i?)))
        });
        brain.set_port_infos(read.collect());
        brain.set_switch_infos(switch_infos);
        self.brain = Some(Arc::new(brain));
        self.phase = SweepPhase::Configure;
    }

    /// Every configured port's PortInfo with `state` (and, when arming, the switches' tops).
    fn state_wave(&mut self, state: PortState) {
        if state == PortState::Armed {
            for (path, top) in std::mem::take(&mut self.tops) {
                // IBA 1 §14.2.5.4: writing 1 to PortStateChange clears it; the changes the
                // sweep has seen are handled.
                let si = SwitchInfoRepr {
                    linear_fdb_top: top,
                    life_time_value: LIFE_TIME_VALUE,
                    port_state_change: true,
                    ..SwitchInfoRepr::default()
                };
                self.set(SmpAttribute::SwitchInfo(si), 0, &path);
            }
        }
        // Init -> Armed, Armed -> Active (IBA 1 §7.2); ports already there are left alone.
        let from = if state == PortState::Armed {
            PortState::Init
        } else {
            PortState::Armed
        };
        let mut ports = std::mem::take(&mut self.configured);
        for c in ports.iter_mut().filter(|c| c.state == from) {
            c.state = state;
            let info = PortInfoRepr {
                port_state: state,
                ..c.info
            };
            self.set(SmpAttribute::PortInfo(info), u32::from(c.port), &c.path);
        }
        // The Activate wave is the last that reads them; the next sweep makes its own.
        if state == PortState::Armed {
            self.configured = ports;
        }
        self.phase = if state == PortState::Armed {
            SweepPhase::Arm
        } else {
            SweepPhase::Activate
        };
    }
}

impl MadAgent for SmpSm {
    fn handle_mad(&mut self, now: Instant, m: MadIn) {
        let Ok(h) = MadHeaderRepr::parse_bytes(&m.mad) else {
            return;
        };
        if h.method == Method::Trap {
            self.trap(now, &m);
            return;
        }
        if h.method == Method::TrapRepress {
            // The master's answer to our trap 144, which waits for none (sent once on entering
            // Standby, and again after each answered poll while greater than the master).
            return;
        }
        if self.sm_info_request(now, &h, &m) {
            self.step(now);
            return;
        }
        // A SubnSet's GetResp is read for its status only.
        self.smp
            .handle_response_with(&m.mad, |t| !matches!(t, Tag::Set(..)));
        self.step(now);
    }

    fn poll_transmit(&mut self, now: Instant) -> Option<MadOut> {
        if let Some(m) = self.represses.pop_front() {
            return Some(m);
        }
        self.step(now);
        self.smp.poll_transmit(now)
    }

    fn poll_timeout(&self) -> Option<Instant> {
        // A sweep waits for the current one and for the SMPs in flight (their answers step it).
        let idle =
            matches!(self.phase, SweepPhase::Done | SweepPhase::Failed) && self.smp.is_idle();
        let sweep = self.resweep_at.filter(|_| self.started && idle);
        // Polls go out only between sweeps ([`SmpSm::step`]): one due during a sweep waits for
        // its end, which the sweep's own SMPs bring.
        let polls = matches!(
            self.phase,
            SweepPhase::Standby | SweepPhase::Done | SweepPhase::Failed
        );
        let poll = self.election.poll_timeout().filter(|_| polls);
        let sweep = match (sweep, poll) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        match (self.smp.poll_timeout(), sweep) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    fn handle_timeout(&mut self, now: Instant) {
        self.smp.handle_timeout(now);
        self.step(now);
    }
}
