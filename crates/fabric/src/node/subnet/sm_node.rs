//! The subnet manager as an application on its host, beside the [`SmpSm`] agent on QP0 and the
//! [`SaServer`] agent the host serves class SubnAdm with ([`SmApp::over_smps`]):
//! - it starts the agent once the SM's port has its link; the agent discovers and programs the
//!   subnet by SMPs (`crate::node::sm::sweep`). Once its discovery ends the application takes a
//!   copy of the brain ([`SubnetManager`]) it ran, gives the SA the subnet model
//!   ([`SubnetManager::subnet_model`], before any port is set Active) and sends MFT changes
//!   through the agent as MulticastForwardingTable SubnSets. After each later sweep that ran the
//!   brain again (a new [`SmpSm::generation`]) it takes the new brain and computes every group's
//!   tree again (a link of a tree may be gone).
//! - By SMPs, the SM's port answers SubnGet(SMInfo) with the agent's election state
//!   ([`SmpSm::sm_info`], `crate::node::sm::election`), put into the HCA at every poll; while the
//!   agent is Standby it has no brain and the SA no model.
//! - It follows the SA's multicast events ([`SaEvent`]): for every group whose membership changed
//!   it computes the multicast tree over the members' LIDs ([`SubnetManager::multicast_tree`];
//!   every JoinState counts, send-only members need the tree to send) and writes only the MFT
//!   entries that changed ([`mft_changes`]); a deleted group's entries are cleared.
//! - Changes are coalesced on both edges of a window of [`SmApp::delay`]: a change that comes
//!   outside a window is written at once (leading edge) and opens a window; changes inside the
//!   window are drained together at its end (trailing edge, which opens no window: the next
//!   change after it is again a leading edge). So a lone join (a SendOnlyNonMember join of a sender, a new member)
//!   gets its MFT entries right away, while a group that 10,000 ports join in a burst is still
//!   recomputed only about once per `delay`, not 10,000 times. Groups of at most [`SMALL_GROUP`]
//!   members (a solicited-node group and its senders, a small application group) are recomputed
//!   at once even inside a window: only big groups wait. OpenSM queues the group for its
//!   state manager, which reprograms the MFTs soon after (`osm_sa_mcmember_record.c` ->
//!   `osm_sm_mcgrp_join`, `osm_mcast_mgr.c`).
//! - Together with the SA's processing time ([`SA_PROCESSING_DELAY`], which the subnet gives its
//!   SA) a lone join's MFT SubnSets (sent at once) reach the switches before the join response
//!   leaves the SA, so the first datagram a new
//!   sender or member exchanges after its join is forwarded. In a burst a member may still get
//!   its response before the trailing-edge write, as on a real fabric.
//!
//! Invariants: the MFT entries written for a group are always those of the last tree computed for
//! it (`trees`), so the next change writes exactly the difference; group order is MLID order.

use crate::hw::hca::Hca;
use crate::hw::mgmt::{Config, PortState};
use crate::hw::verbs::Completion;
use crate::node::host::{AgentId, Agents, App, HostCtx};
use crate::node::sm::{mft_changes, MftCopyBlock, SmpSm, SubnetManager};
use ipoib_proto::sa::{SaEvent, SaServer};
use ipoib_proto::time::Instant;
use ipoib_wire::ib::lid::LID_MULTICAST_FIRST;
use ipoib_wire::smp::{MftBlockRepr, MFT_BLOCK_MLIDS};
use ipoib_wire::{Gid, Guid};
use std::any::Any;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::Duration;

/// Default coalescing delay for multicast tree updates.
pub const MCAST_DELAY: Duration = Duration::from_micros(100);

/// Groups of at most this many members are recomputed at once even inside a coalescing window
/// (their tree costs about what the SA spends on the join); bigger ones wait for its end.
pub const SMALL_GROUP: usize = 64;

/// The SA processing time the subnet gives its [`SaServer`]
/// (`SaServerConfig::processing_delay`): a response leaves the SA this long after its request
/// came in. It must exceed the SM's leading-edge tree write (done in the same host step as the
/// join) and its SubnSet's way to the switches, so that the MFT entries of a lone join are in the
/// switches before the joiner can send: without it a SendOnlyNonMember sender's first datagram
/// met a leaf switch with no MFT entry and was dropped. Real SAs take time too (OpenSM on ibsim:
/// about 10 µs per join, pipelined; docs/benchmarks/subnet.md).
pub const SA_PROCESSING_DELAY: Duration = Duration::from_micros(5);

/// A group's MFT entries by switch node GUID (a [`crate::node::sm::MftWrites`] whose node
/// handles are translated with the brain that computed it).
pub type GuidMftWrites = Vec<(Guid, Config)>;

/// Counters of the SM application.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SmStats {
    /// SA events handled.
    pub sa_events: u64,
    /// Multicast trees computed.
    pub trees: u64,
    /// MFT entries written after bring-up.
    pub mft_writes: u64,
    /// Members the SM could not map to a LID (unknown port GUIDs).
    pub unknown_members: u64,
}

/// The SM application. See the module docs.
#[derive(Debug)]
pub struct SmApp {
    /// The brain, from the end of the agent's first discovery on.
    sm: Option<Arc<SubnetManager>>,
    /// The SMP agent.
    smp: AgentId,
    /// The SM's port (the agent starts once its link is up).
    port: u8,
    sa: AgentId,
    delay: Duration,
    /// End of the current coalescing window, when changes wait for it.
    flush_at: Option<Instant>,
    /// When the last leading-edge recomputation happened: the start of the current window.
    window_start: Option<Instant>,
    lid_of_guid: BTreeMap<u64, u16>,
    /// Last tree written per MLID, by switch node GUID: a later sweep may number the nodes
    /// otherwise (`crate::node::sm::discover`), a GUID stays.
    trees: BTreeMap<u16, GuidMftWrites>,
    /// Member LIDs of every group, to compute the trees again on a new brain.
    members: BTreeMap<u16, Vec<u16>>,
    /// The brain generation taken from the SMP agent.
    generation: u64,
    /// Groups changed since the last flush: the member LIDs, or `None` when deleted.
    pending: BTreeMap<u16, Option<Vec<u16>>>,
    stats: SmStats,
}

impl SmApp {
    /// The SM application over the [`SmpSm`] agent `smp` of the same host, on the SM's `port`,
    /// whose SA is the host's agent `sa`, coalescing multicast changes for `delay` (zero: at the
    /// next poll); module docs.
    pub fn over_smps(smp: AgentId, port: u8, sa: AgentId, delay: Duration) -> SmApp {
        SmApp {
            sm: None,
            smp,
            port,
            sa,
            delay,
            flush_at: None,
            window_start: None,
            lid_of_guid: BTreeMap::new(),
            trees: BTreeMap::new(),
            members: BTreeMap::new(),
            generation: 0,
            pending: BTreeMap::new(),
            stats: SmStats::default(),
        }
    }

    /// The SM's computed state (`None` until the first discovery ended).
    pub fn manager(&self) -> Option<&SubnetManager> {
        self.sm.as_deref()
    }

    /// The SMP agent.
    pub fn smp_agent(&self) -> AgentId {
        self.smp
    }

    /// The SA agent.
    pub fn sa_agent(&self) -> AgentId {
        self.sa
    }

    /// The coalescing delay.
    pub fn delay(&self) -> Duration {
        self.delay
    }

    /// Counters.
    pub fn stats(&self) -> SmStats {
        self.stats
    }

    /// The MFT entries last written for `mlid` (switch node GUID, entry).
    pub fn tree(&self, mlid: u16) -> Option<&GuidMftWrites> {
        self.trees.get(&mlid)
    }

    /// True when no multicast change waits to be handed to the agent (its SubnSets may still be
    /// on their way: [`SmpSm::is_idle`]).
    pub fn is_settled(&self) -> bool {
        self.flush_at.is_none() && self.pending.is_empty()
    }

    fn member_lids(&mut self, members: &[(Gid, ipoib_wire::sa::JoinState)]) -> Vec<u16> {
        let (lids, unknown) = member_lids(&self.lid_of_guid, members);
        self.stats.unknown_members += unknown;
        lids
    }

    /// Recomputes the changed groups: all of them, or with `small` only those of at most
    /// [`SMALL_GROUP`] members.
    fn flush(&mut self, ctx: &mut HostCtx<'_>, small: bool) {
        if self.sm.is_none() {
            return; // before the discovery ended: the events wait in the SA
        }
        let Some(sa) = ctx.agents.get_mut::<SaServer>(self.sa) else {
            return;
        };
        let next = |sa: &mut SaServer| {
            if small {
                sa.poll_small_event(SMALL_GROUP)
            } else {
                sa.poll_event()
            }
        };
        while let Some(e) = next(sa) {
            self.stats.sa_events += 1;
            match e {
                SaEvent::GroupCreated { .. } => {}
                SaEvent::McastGroup { mlid, members, .. } => {
                    let lids = self.member_lids(&members);
                    self.members.insert(mlid, lids.clone());
                    self.pending.insert(mlid, Some(lids));
                }
                SaEvent::GroupDeleted { mlid, .. } => {
                    self.members.remove(&mlid);
                    self.pending.insert(mlid, None);
                }
            }
        }
        let Some(sm) = &self.sm else {
            return;
        };
        // The (switch, block) of every MFT entry written, whose blocks the SA gets below.
        let mut written = BTreeSet::new();
        for (mlid, lids) in std::mem::take(&mut self.pending) {
            let new: GuidMftWrites = match lids {
                Some(l) => {
                    self.stats.trees += 1;
                    let tree = sm.multicast_tree(mlid, &l).into_iter();
                    let guid = |n: usize| sm.topology().nodes().get(n).map(|n| n.guid);
                    tree.filter_map(|(n, c)| Some((guid(n.0)?, c))).collect()
                }
                None => Vec::new(),
            };
            let old = self.trees.remove(&mlid).unwrap_or_default();
            for (to, c) in mft_changes(&old, &new) {
                self.stats.mft_writes += 1;
                if let (Config::Mft { mlid, ports }, Some(a)) =
                    (c, ctx.agents.get_mut::<SmpSm>(self.smp))
                {
                    a.set_mft(to, mlid, &ports);
                    if let Some(i) = mlid.checked_sub(LID_MULTICAST_FIRST) {
                        written.insert((to, i / MFT_BLOCK_MLIDS as u16));
                    }
                }
            }
            if !new.is_empty() {
                self.trees.insert(mlid, new);
            }
        }
        // IBA 1 §15.2.5.8: the SA's MulticastForwardingTableRecords follow the blocks the SM
        // writes (OpenSM's SA reads the copy its multicast manager writes).
        let Some(a) = ctx.agents.get::<SmpSm>(self.smp) else {
            return;
        };
        let mut blocks = Vec::new();
        let switches: BTreeSet<Guid> = written.iter().map(|w| w.0).collect();
        let tops: Vec<(Guid, u16)> = switches
            .into_iter()
            .filter_map(|guid| Some((guid, mft_top(a, guid)?)))
            .collect();
        for (guid, block) in written {
            let same = |x: &MftCopyBlock<'_>| x.0 .0 == guid && x.0 .1 == block;
            for ((_, _, position), masks) in a.mft_blocks((guid, block)).take_while(same) {
                let table = MftBlockRepr { port_masks: *masks };
                blocks.push((guid, block, position, table));
            }
        }
        if let Some(sa) = ctx.agents.get_mut::<SaServer>(self.sa) {
            for (guid, block, position, table) in blocks {
                sa.set_mft_block(guid, block, position, table);
            }
            for (guid, top) in tops {
                sa.set_multicast_fdb_top(guid, top);
            }
        }
    }
}

/// The LIDs of `members` by their port GUIDs in `table`, in the members' order, and how many
/// had none. The SA gives a group's members in GID order, so with one subnet prefix their port
/// GUIDs ascend: a group that covers a good part of the table (the broadcast group, recomputed
/// once per coalescing window while 10,000 ports join) is read by one walk along the table, not
/// a lookup per member; a GUID below one already walked past (another prefix) is looked up.
fn member_lids(
    table: &BTreeMap<u64, u16>,
    members: &[(Gid, ipoib_wire::sa::JoinState)],
) -> (Vec<u16>, u64) {
    let mut lids = Vec::with_capacity(members.len());
    let mut unknown = 0;
    let dense = members.len().saturating_mul(4) >= table.len();
    let mut walk = table.iter().peekable();
    // The walk stands at the first GUID not below `walked`.
    let mut walked = None;
    for (gid, _) in members {
        let id = gid.interface_id();
        let lid = if dense && walked.is_none_or(|w| w <= id) {
            walked = Some(id);
            while walk.next_if(|&(&g, _)| g < id).is_some() {}
            walk.peek().filter(|e| *e.0 == id).map(|e| *e.1)
        } else {
            table.get(&id).copied()
        };
        match lid {
            Some(l) => lids.push(l),
            None => unknown += 1,
        }
    }
    (lids, unknown)
}

/// What the SMA of switch `guid` answers as SwitchInfo:MulticastFDBTop once the agent's MFT
/// blocks landed: the highest MLID with a port (0 for none; `hw::switch::sma`); `None` when the
/// agent wrote no block there (the SwitchInfo read in the sweep is then the better guess).
fn mft_top(a: &SmpSm, guid: Guid) -> Option<u16> {
    let mut any = false;
    let mut top = 0;
    for ((_, block, _), masks) in a.mft_blocks((guid, 0)).take_while(|b| b.0 .0 == guid) {
        any = true;
        if let Some(i) = masks.iter().rposition(|&m| m != 0) {
            top = top.max(LID_MULTICAST_FIRST + block * MFT_BLOCK_MLIDS as u16 + i as u16);
        }
    }
    any.then_some(top)
}

/// The SMP agent's copy of the MFTs by (switch node GUID, block, position): what the SA's model
/// holds (IBA 1 §15.2.5.8).
fn mfts_of(a: &SmpSm) -> BTreeMap<(Guid, u16, u8), MftBlockRepr> {
    a.mft_blocks((Guid(0), 0))
        .map(|(key, masks)| (key, MftBlockRepr { port_masks: *masks }))
        .collect()
}

/// Port GUID to LID of every CA port with a LID.
fn lids_of_guids(sm: &SubnetManager) -> BTreeMap<u64, u16> {
    sm.ca_ports()
        .filter_map(|(lid, e)| {
            let node = sm.topology().nodes().get(e.node)?;
            Some((node.port_guid(e.port).0, lid))
        })
        .collect()
}

impl App for SmApp {
    fn on_completion(&mut self, _now: Instant, _c: Completion, _ctx: &mut HostCtx<'_>) {}

    fn poll(&mut self, now: Instant, ctx: &mut HostCtx<'_>) {
        // One look at the agent (a poll follows every SMP the SM sends): its SMInfo for the
        // port, whether it waits for its start, whether it has a new brain.
        let (info, unstarted, fresh) = match ctx.agents.get::<SmpSm>(self.smp) {
            Some(a) => (
                ctx.hca.port(self.port).map(|p| a.sm_info(p.guid)),
                !a.is_started(),
                a.generation() != self.generation,
            ),
            None => (None, false, false),
        };
        // IBA 1 §14.4.1: the port answers SubnGet(SMInfo) with the SM's live state.
        if let Some(info) = info {
            ctx.hca.set_sm_info(self.port, Some(info));
        }
        // The sweep starts once the SM's port has its link (Init, IBA 1 §7.2). (The agent is
        // taken mutably only then: the host knows it got no work otherwise.)
        let start = unstarted
            && ctx
                .hca
                .port(self.port)
                .is_some_and(|p| p.state != PortState::Down);
        if start {
            if let Some(a) = ctx.agents.get_mut::<SmpSm>(self.smp) {
                a.start();
                ctx.poll_again();
            }
        }
        // The brain the agent ran, after each complete discovery; the SA gets the model in the
        // same host step, before the agent's Active wave can reach any port, and every group's
        // tree is computed again on it (a link may have gone).
        let agent = if fresh {
            ctx.agents.get::<SmpSm>(self.smp)
        } else {
            None
        };
        let brain = agent
            .filter(|a| a.generation() != self.generation)
            .and_then(|a| {
                let info = a.sm_info(a.election().guid());
                Some((a.generation(), a.shared_manager()?, info))
            });
        if let Some((generation, sm, info)) = brain {
            self.generation = generation;
            self.lid_of_guid = lids_of_guids(&sm);
            let mut model = sm.subnet_model();
            model.sms = vec![info];
            if let Some(a) = ctx.agents.get::<SmpSm>(self.smp) {
                model.mfts = mfts_of(a);
                // The MFT blocks the agent set or is about to: the tops the SMAs answer then.
                for node in sm.topology().nodes() {
                    if let (Some(si), Some(top)) = (
                        model.switch_infos.get_mut(&node.guid),
                        mft_top(a, node.guid),
                    ) {
                        si.multicast_fdb_top = top;
                    }
                }
            }
            if let Some(sa) = ctx.agents.get_mut::<SaServer>(self.sa) {
                // A port the sweep no longer found leaves its groups (OpenSM's drop manager);
                // subscribers hear of ports out of and into service (traps 65 and 64).
                sa.new_sweep(now, model);
            }
            if self.sm.is_some() {
                for (&mlid, lids) in &self.members {
                    self.pending.insert(mlid, Some(lids.clone()));
                }
                self.flush_at = Some(now);
            }
            self.sm = Some(sm);
        }
        let waiting = ctx
            .agents
            .get::<SaServer>(self.sa)
            .is_some_and(SaServer::has_events);
        if waiting && self.flush_at.is_none() {
            // Inside the window of the last leading-edge recomputation: at its end; else now,
            // opening a new window.
            self.flush_at = Some(match self.window_start {
                Some(t) if now < t + self.delay => t + self.delay,
                _ => {
                    self.window_start = Some(now);
                    now
                }
            });
        }
        if self.flush_at.is_some_and(|t| t <= now) {
            self.flush_at = None;
            self.flush(ctx, false);
        } else if waiting {
            // Inside a window: small groups cost little, update them now.
            self.flush(ctx, true);
        }
    }

    fn poll_timeout(&self) -> Option<Instant> {
        self.flush_at
    }

    /// Idle when `poll` would change nothing: the port's SMInfo already the agent's (its
    /// ActCount moves with every SMP sent), the agent started (or the port down), no new brain,
    /// no flush due, and no SA event, or events waiting for the end of the window already set
    /// that `poll` would leave: all of big groups, or any before the first brain (`flush`).
    fn is_idle(&self, now: Instant, hca: &Hca, agents: &Agents) -> bool {
        let (Some(a), Some(p)) = (agents.get::<SmpSm>(self.smp), hca.port(self.port)) else {
            return false;
        };
        let sa = agents.get::<SaServer>(self.sa);
        p.sm_info == Some(a.sm_info(p.guid))
            && (a.is_started() || p.state == PortState::Down)
            && a.generation() == self.generation
            && self.flush_at.is_none_or(|t| t > now)
            && (!sa.is_some_and(SaServer::has_events)
                || (self.flush_at.is_some()
                    && (self.sm.is_none()
                        || (self.pending.is_empty()
                            && !sa.is_some_and(|s| s.has_small_events(SMALL_GROUP))))))
    }

    fn as_any(&self) -> &dyn Any {
        self
    }

    fn as_any_mut(&mut self) -> &mut dyn Any {
        self
    }
}

#[cfg(test)]
mod tests {
    use super::member_lids;
    use ipoib_wire::sa::JoinState;
    use ipoib_wire::Gid;
    use proptest::prelude::*;
    use std::collections::BTreeMap;

    proptest! {
        /// The walk along the table finds what a lookup per member finds, in the members'
        /// order: members in GID order over one or two subnet prefixes, some unknown, groups
        /// dense and sparse.
        #[test]
        fn member_lids_walk_is_a_lookup_per_member(
            table in proptest::collection::btree_map(0u64..200, 1u16..0xbfff, 0..120),
            ids in proptest::collection::vec((0u64..2, 0u64..220), 0..200),
        ) {
            let mut members: Vec<(Gid, JoinState)> = ids
                .iter()
                .map(|&(p, id)| (Gid::new(0xfe80_0000_0000_0000 + p, id), JoinState::FULL_MEMBER))
                .collect();
            members.sort_by_key(|m| m.0);
            members.dedup_by_key(|m| m.0);
            let table: BTreeMap<u64, u16> = table;
            let want: Vec<u16> = members
                .iter()
                .filter_map(|(g, _)| table.get(&g.interface_id()).copied())
                .collect();
            let (lids, unknown) = member_lids(&table, &members);
            prop_assert_eq!(unknown as usize, members.len() - want.len());
            prop_assert_eq!(lids, want);
        }
    }
}
