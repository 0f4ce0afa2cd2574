//! The subnet manager's brain: given a [`Topology`] and the CA port the SM runs on, it assigns
//! LIDs, computes min-hop unicast routes for every switch, multicast trees, and the port
//! configuration (LID, SM LID, subnet prefix, MTU, rate, P_Keys, state Active), as values. It has
//! no simulator access: [`SubnetManager::bring_up`] returns the [`Config`] values per node,
//! [`SubnetManager::multicast_tree`] the MFT entries of one group, and
//! [`SubnetManager::subnet_model`] the configured subnet for the SA. Its node handles
//! ([`NodeId`]) are whatever the integrator gives: indices into the discovered topology for the
//! SM by SMPs, simulator nodes for the plan a [`crate::node::subnet::Subnet`] keeps to check the
//! subnet against ([`crate::node::subnet::Subnet::plan`]). Nothing writes these values into the
//! devices but the SM's SubnSets.
//!
//! The SM by SMPs ([`sweep::SmpSm`], a QP0 agent with no access to the simulator) feeds the brain
//! what it discovered and programs the devices with SubnSet SMPs, in OpenSM's order: discovery
//! ([`discover`]), LIDs, P_Keys and LFTs, all ports Armed, all ports Active, then MFTs as groups
//! change, and sweeps again on trap 128 ([`sweep`] module docs); [`smp`] is its transport (a
//! bounded window, retries). Before it programs anything it takes part in the master election by
//! SMInfo with the other SMs its discovery found ([`election`], IBA 1 §14.4): as Standby it
//! programs nothing and polls the master; as master it hands over to a greater SM
//! (SubnSet(SMInfo) HANDOVER).
//!
//! What it does, after OpenSM (`osm_lid_mgr.c`, `osm_ucast_mgr.c` minhop, `osm_mcast_mgr.c`):
//! - LIDs: a breadth-first walk from the SM's node, neighbours in port order. The SM's port gets
//!   LID 1; each CA port the SM reaches gets its own LID, each switch one LID (port 0); LMC 0.
//!   Given a port-GUID-to-LID table ([`SubnetManager::with_lids`], OpenSM's guid2lid,
//!   `osm_lid_mgr.c`), every port in it keeps its LID whatever the walk's order, and the walk
//!   gives the other ports the lowest LIDs nobody in the table holds (a port absent now keeps its
//!   LID reserved for its return); [`SubnetManager::port_lids`] is the table after the run.
//!   The SMP agent puts into that table, beside the ports it gave LIDs, every port that has a LID
//!   no other holds (`sweep`, OpenSM `lid_mgr_get_port_lid`): a new master keeps the LIDs the
//!   subnet already has.
//!   The SM discovers and configures the subnet with directed-route SMPs, which only switches
//!   forward (IBA 1 §14.2.2; a CA answers for the port the SMP came in on, §14.2.5.6): a CA port
//!   is reached only over a path that ends at it ([`Reach`]), so ports and switches behind a CA
//!   get no LID and stay down ([`SubnetManager::behind_ca`]), as with OpenSM. Nor do nodes more
//!   than [`MAX_DR_HOPS`] hops from the SM's port: a directed route has at most 63 hops (OpenSM:
//!   "ERR 0F08: DR path with hop count 64 couldn't be extended"); [`SubnetManager::unreached`]
//!   lists them.
//! - Unicast (IBA 1 §18.2.4.1 LFTs; OpenSM minhop): for every switch and destination LID, the
//!   output port is one of the ports on a minimal-hop path. Equal-cost choices rotate over the
//!   candidate ports, starting at an offset given by the destination switch, so that the
//!   destinations behind one switch spread evenly over the uplinks (a fat tree balances like
//!   OpenSM's minhop, which counts routes per port; this is the O(1) deterministic form).
//! - Multicast: one spanning tree per group, rooted at a switch of minimal total distance to the
//!   switches that have CAs (a spine in a fat tree; the MLID picks among equal roots, spreading
//!   groups over spines), pruned to the members' switches. Loop-free by construction.
//! - P_Keys: from a list of partitions ([`PartitionSpec`]); without one, the default partition
//!   0x7FFF with every port a full member (P_Key 0xFFFF), as OpenSM does without partitions.conf.
//!   The SM's own port is a full member of every partition, so that limited members can reach the
//!   SA (IBA 1 §10.9: two limited members cannot talk). A port's table holds at most
//!   [`crate::hw::hca::PKEY_TABLE_SIZE`] P_Keys; the partitions beyond are left out, as OpenSM
//!   leaves them ([`SubnetManager::pkeys_left_out`]).
//!
//! Invariants: deterministic (everything follows node, port and partition order; no hash maps);
//! LIDs computed once at construction, the routing (LFTs, multicast roots and trees) once at its
//! first use, from inputs that never change afterwards; no panics on any topology.

mod config;
pub mod discover;
pub mod election;
mod route;
pub mod smp;
pub mod sweep;

pub use config::mft_changes;
pub use election::ElectionSettings;
pub use smp::SmpSettings;
pub use sweep::{MftCopyBlock, SmpSm, SweepPhase, SweepStats, LIFE_TIME_VALUE, SUBNET_TIMEOUT};

#[cfg(test)]
mod tests;

use crate::hw::mgmt::Config;
use crate::hw::sim::NodeId;
use crate::hw::topology::{End, NodeKind, Topology};
use ipoib_proto::partitions::Membership;
use ipoib_wire::ib::lid::LID_UNICAST_LAST;
use ipoib_wire::smp::{PortInfoRepr, SwitchInfoRepr};
use ipoib_wire::{Gid, Guid, Mtu, PKey, Rate};
use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::sync::OnceLock;

/// The most hops a directed route has: a directed-route SMP's InitialPath and ReturnPath hold 64
/// port numbers of which entry 0 is unused (IBA 1 §14.2.2, SMP fields HopPointer/HopCount), so
/// the SM reaches nodes up to 63 cables away from its port and no further. Measured: OpenSM 3.3.23
/// on ibsim configures the far host of a chain of 62 switches (63 hops) but not of 63 switches
/// (docs/OPENSM-NOTES.md "Directed routes").
pub const MAX_DR_HOPS: u32 = 63;

/// Which ports a partition has.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PartitionMembers {
    /// Every CA port (partitions.conf `ALL`), with this membership.
    All(Membership),
    /// The CA ports with these port GUIDs.
    Ports(Vec<(Guid, Membership)>),
}

/// One partition: a P_Key (the low 15 bits count; the membership bit comes from the member).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PartitionSpec {
    /// Partition key.
    pub pkey: PKey,
    /// Members.
    pub members: PartitionMembers,
    /// The switches whose management port 0 the file makes a member (`ALL`, `ALL_SWITCHES`, the
    /// switch's GUID), by switch GUID. Every port 0 is a full member of the default partition
    /// whatever the file says (our SM's rule: a switch's agents answer every port).
    pub switches: Vec<(Guid, Membership)>,
}

impl PartitionSpec {
    /// OpenSM's default partition: 0x7FFF, every port a full member.
    pub fn default_partition() -> PartitionSpec {
        PartitionSpec {
            pkey: PKey::DEFAULT.limited(),
            members: PartitionMembers::All(Membership::Full),
            switches: Vec::new(),
        }
    }
}

/// Subnet-wide settings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SmOptions {
    /// Subnet prefix of every GID (IBA 1 §4.1.1; default FE80::/64).
    pub subnet_prefix: u64,
    /// MTU of links that do not set one (default 4096).
    pub mtu: Mtu,
    /// Rate of links that do not set one (default 40 Gb/s, QDR 4x, matching
    /// [`crate::hw::link::LinkParams::default`]).
    pub rate: Rate,
    /// SL to reach the SM.
    pub sm_sl: u8,
    /// Partitions; empty means the default partition only.
    pub partitions: Vec<PartitionSpec>,
}

impl Default for SmOptions {
    fn default() -> Self {
        SmOptions {
            subnet_prefix: Gid::DEFAULT_SUBNET_PREFIX,
            mtu: Mtu::Mtu4096,
            rate: Rate::Gbps40,
            sm_sl: 0,
            partitions: Vec::new(),
        }
    }
}

/// The SM cannot manage this subnet.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SmError {
    /// `nodes` does not have one simulator node per topology node.
    #[error("{given} simulator nodes for a topology of {topology} nodes")]
    NodeCount {
        /// Topology nodes.
        topology: usize,
        /// Simulator nodes given.
        given: usize,
    },
    /// The SM port is not a cabled CA port.
    #[error("node {} port {} is not a cabled CA port", .0.node, .0.port)]
    BadSmPort(End),
    /// More endpoints than unicast LIDs.
    #[error("{0} endpoints need more than 49151 LIDs")]
    TooManyLids(usize),
}

/// The subnet manager's computed state. See the module docs.
#[derive(Debug, Clone)]
pub struct SubnetManager {
    topo: Topology,
    nodes: Vec<NodeId>,
    sm_port: End,
    opts: SmOptions,
    /// Per topology node, per port number: the LID (switches: index 0 only). 0 = none.
    lids: Vec<Vec<u16>>,
    /// Per topology node: hops of the shortest directed route from the SM's port to any of its
    /// ports (`None`: no directed route, [`Reach`]). Nodes beyond [`MAX_DR_HOPS`] have no LID.
    hops: Vec<Option<u32>>,
    /// Cabled CA ports and switches (port 0) joined to the SM's node by cables, but only through
    /// a CA: no directed route reaches them, so they have no LID.
    behind_ca: Vec<End>,
    /// Owner of each LID (index = LID): a CA port, or a switch with port 0.
    owners: Vec<Option<End>>,
    /// Topology node index of each switch.
    switches: Vec<usize>,
    /// Switch index of each topology node.
    sw_index: Vec<Option<usize>>,
    /// The routing state: LFTs, multicast roots and their trees; computed at its first use
    /// ([`SubnetManager::route`]) from the fields above, which never change afterwards. A plan
    /// that only answers for LIDs and P_Keys (`ipoib sim`'s, whose SM computes its own) never
    /// pays for it: 2.9 % of a 10,000-host bring-up's instructions (docs/benchmarks/subnet.md).
    route: OnceLock<route::Routing>,
    /// Per topology node: the NodeInfo facts the SA's NodeRecords give, once read by SMPs
    /// ([`SubnetManager::set_node_facts`]); `None`: our devices' (`config::node_facts`).
    facts: Vec<Option<ipoib_proto::subnet::NodeFacts>>,
    /// PortInfo of the ports as the SM read and then set them, by (node GUID, port)
    /// ([`SubnetManager::set_port_infos`]); empty: our devices' (`SubnetModel::port_infos`).
    port_infos: BTreeMap<(Guid, u8), PortInfoRepr>,
    /// SwitchInfo of the switches as the SM read and then set them, by node GUID
    /// ([`SubnetManager::set_switch_infos`]); empty: no SwitchInfoRecords.
    switch_infos: BTreeMap<Guid, SwitchInfoRepr>,
}

impl SubnetManager {
    /// Computes LIDs for `topo` (routes and multicast roots at their first use), whose nodes
    /// live in the simulator as `nodes` (same order, e.g. [`crate::hw::topology::Built::nodes`]),
    /// with the SM on `sm_port`.
    pub fn new(
        topo: Topology,
        nodes: Vec<NodeId>,
        sm_port: End,
        opts: SmOptions,
    ) -> Result<SubnetManager, SmError> {
        SubnetManager::with_lids(topo, nodes, sm_port, opts, &BTreeMap::new())
    }

    /// [`SubnetManager::new`], keeping the LIDs of `known` (port GUID to LID; a switch's key is
    /// its node GUID, the port GUID of its port 0): see the module docs.
    pub fn with_lids(
        topo: Topology,
        nodes: Vec<NodeId>,
        sm_port: End,
        opts: SmOptions,
        known: &BTreeMap<Guid, u16>,
    ) -> Result<SubnetManager, SmError> {
        if nodes.len() != topo.nodes().len() {
            return Err(SmError::NodeCount {
                topology: topo.nodes().len(),
                given: nodes.len(),
            });
        }
        let sm_ok = topo
            .nodes()
            .get(sm_port.node)
            .is_some_and(|n| n.kind == NodeKind::Ca)
            && topo.peer(sm_port.node, sm_port.port).is_some();
        if !sm_ok {
            return Err(SmError::BadSmPort(sm_port));
        }
        let (lids, owners, hops, behind_ca) = assign_lids(&topo, sm_port, known)?;
        let switches: Vec<usize> = topo.switches().collect();
        let mut sw_index = vec![None; topo.nodes().len()];
        for (i, &n) in switches.iter().enumerate() {
            sw_index[n] = Some(i);
        }
        Ok(SubnetManager {
            topo,
            nodes,
            sm_port,
            opts,
            lids,
            hops,
            behind_ca,
            owners,
            switches,
            sw_index,
            route: OnceLock::new(),
            facts: Vec::new(),
            port_infos: BTreeMap::new(),
            switch_infos: BTreeMap::new(),
        })
    }

    /// The routing state, computed at the first call ([`Routing::compute`]).
    fn route(&self) -> &route::Routing {
        self.route.get_or_init(|| {
            route::Routing::compute(
                &self.topo,
                &self.switches,
                &self.sw_index,
                &self.lids,
                self.owners.len(),
            )
        })
    }

    /// The NodeInfo facts of every topology node as the SM read them (IBA 1 §15.2.5.2: a
    /// NodeRecord holds the node's NodeInfo).
    pub fn set_node_facts(&mut self, facts: Vec<Option<ipoib_proto::subnet::NodeFacts>>) {
        self.facts = facts;
    }

    /// The PortInfo of the ports as the SM read them by SMPs and then set them (IBA 1
    /// §15.2.5.3: a PortInfoRecord holds the port's PortInfo), by (node GUID, port).
    pub fn set_port_infos(&mut self, infos: BTreeMap<(Guid, u8), PortInfoRepr>) {
        self.port_infos = infos;
    }

    /// The SwitchInfo of the switches as the SM read them by SMPs and then set them (IBA 1
    /// §15.2.5.5: a SwitchInfoRecord holds the switch's SwitchInfo), by node GUID.
    pub fn set_switch_infos(&mut self, infos: BTreeMap<Guid, SwitchInfoRepr>) {
        self.switch_infos = infos;
    }

    /// The topology.
    pub fn topology(&self) -> &Topology {
        &self.topo
    }

    /// The settings.
    pub fn options(&self) -> &SmOptions {
        &self.opts
    }

    /// The SM's port.
    pub fn sm_port(&self) -> End {
        self.sm_port
    }

    /// The SM's LID (1).
    pub fn sm_lid(&self) -> u16 {
        self.lid(self.sm_port.node, self.sm_port.port).unwrap_or(0)
    }

    /// The simulator node of a topology node.
    pub fn node_id(&self, node: usize) -> Option<NodeId> {
        self.nodes.get(node).copied()
    }

    /// The LID of a CA port, or of a switch (any `port`; switches have one LID, on port 0).
    pub fn lid(&self, node: usize, port: u8) -> Option<u16> {
        let ports = self.lids.get(node)?;
        let lid = if self.sw_index.get(node).copied().flatten().is_some() {
            ports.first()
        } else {
            ports.get(usize::from(port))
        };
        lid.copied().filter(|&l| l != 0)
    }

    /// Hops of the shortest directed route from the SM's port to a port of topology node `node`
    /// (over switches only, [`Reach`]); `None` when no directed route reaches it.
    pub fn hops_from_sm(&self, node: usize) -> Option<u32> {
        self.hops.get(node).copied().flatten()
    }

    /// Nodes cabled to the subnet but more than [`MAX_DR_HOPS`] hops from the SM's port: the SM
    /// cannot reach them, so they get no LID and no configuration. (node, hops), in node order.
    pub fn unreached(&self) -> Vec<(usize, u32)> {
        self.hops
            .iter()
            .enumerate()
            .filter_map(|(n, h)| h.filter(|&h| h > MAX_DR_HOPS).map(|h| (n, h)))
            .collect()
    }

    /// Cabled CA ports and switches (as port 0) that are cabled to the SM's node only through a
    /// channel adapter, which does not forward SMPs (IBA 1 §14.2.2): the SM does not reach them,
    /// so they get no LID and stay down. In node and port order.
    pub fn behind_ca(&self) -> &[End] {
        &self.behind_ca
    }

    /// Who answers `lid`: a CA port, or a switch (port 0).
    pub fn owner(&self, lid: u16) -> Option<End> {
        self.owners.get(usize::from(lid)).copied().flatten()
    }

    /// Highest LID assigned.
    pub fn max_lid(&self) -> u16 {
        (self.owners.len().max(1) - 1) as u16
    }

    /// The LFT of the switch that is topology node `node`.
    pub fn lft(&self, node: usize) -> Option<&[u8]> {
        let s = self.sw_index.get(node).copied().flatten()?;
        self.route().lfts.get(s).map(|v| v.as_slice())
    }

    /// Port GUID to LID of every port and switch with a LID (a switch by its node GUID): the table
    /// to give the next run ([`SubnetManager::with_lids`]).
    pub fn port_lids(&self) -> BTreeMap<Guid, u16> {
        self.owners
            .iter()
            .enumerate()
            .filter_map(|(lid, o)| {
                let e = (*o)?;
                Some((self.topo.nodes()[e.node].port_guid(e.port), lid as u16))
            })
            .collect()
    }

    /// Every CA port with a LID, in LID order: (LID, port).
    pub fn ca_ports(&self) -> impl Iterator<Item = (u16, End)> + '_ {
        self.owners
            .iter()
            .enumerate()
            .filter_map(|(lid, o)| match o {
                Some(e) if self.sw_index[e.node].is_none() => Some((lid as u16, *e)),
                _ => None,
            })
    }
}

/// Where the SM's directed-route SMPs reach, from its port `sm` (IBA 1 §14.2.2): only switches
/// forward an SMP; a CA port's SMA consumes it, and a CA answers PortInfo for the port the SMP
/// came in on whatever the AttributeModifier (IBA 1 §14.2.5.6). So a switch is reached over
/// switches only, and a CA port only over a path that ends at that port: the SM's own port, the
/// port cabled to it (back to back), or a port cabled to a reached switch. A port or switch
/// reachable only through another CA is not reached.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reach {
    /// Per topology node, per port number: hops of the shortest directed route that ends at that
    /// port (CAs), or at the switch (index 0). `None`: no directed route at all.
    hops: Vec<Vec<Option<u32>>>,
}

impl Reach {
    /// The directed routes from the SM's port `sm` of `topo`; nothing is reached when `sm` is
    /// not a port of `topo`.
    pub fn new(topo: &Topology, sm: End) -> Reach {
        let nodes = topo.nodes();
        let mut hops: Vec<Vec<Option<u32>>> = nodes
            .iter()
            .map(|n| vec![None; usize::from(n.ports) + 1])
            .collect();
        let is_switch = |n: usize| nodes[n].kind == NodeKind::Switch;
        let Some(slot) = hops
            .get_mut(sm.node)
            .and_then(|v| v.get_mut(usize::from(sm.port)))
        else {
            return Reach { hops };
        };
        *slot = Some(0);
        let mut queue = VecDeque::new();
        if let Some((peer, _)) = topo.peer(sm.node, sm.port) {
            if is_switch(peer.node) {
                hops[peer.node][0] = Some(1);
                queue.push_back(peer.node);
            } else if hops[peer.node][usize::from(peer.port)].is_none() {
                hops[peer.node][usize::from(peer.port)] = Some(1);
            }
        }
        // Breadth first over switches: the first time a switch or CA port is seen is over a
        // shortest directed route.
        while let Some(n) = queue.pop_front() {
            let d = hops[n][0].unwrap_or(0);
            for p in 1..=nodes[n].ports {
                let Some((peer, _)) = topo.peer(n, p) else {
                    continue;
                };
                let at = if is_switch(peer.node) {
                    0
                } else {
                    usize::from(peer.port)
                };
                if hops[peer.node][at].is_none() {
                    hops[peer.node][at] = Some(d + 1);
                    if is_switch(peer.node) {
                        queue.push_back(peer.node);
                    }
                }
            }
        }
        Reach { hops }
    }

    /// Hops of the shortest directed route to CA port `port` of `node`, or to switch `node` (any
    /// `port`); `None` when no directed route ends there.
    pub fn port_hops(&self, node: usize, port: u8) -> Option<u32> {
        let v = self.hops.get(node)?;
        if v.first().copied().flatten().is_some() {
            return v[0];
        }
        v.get(usize::from(port)).copied().flatten()
    }

    /// Hops of the shortest directed route to any port of `node`.
    pub fn node_hops(&self, node: usize) -> Option<u32> {
        self.hops.get(node)?.iter().flatten().copied().min()
    }

    /// True when the SM configures that port: a directed route of at most [`MAX_DR_HOPS`] ends
    /// there.
    pub fn configures(&self, node: usize, port: u8) -> bool {
        self.port_hops(node, port).is_some_and(|h| h <= MAX_DR_HOPS)
    }

    /// The lowest-numbered cabled port of CA `node` the SM configures.
    pub fn first_configured_port(&self, topo: &Topology, node: usize) -> Option<u8> {
        topo.cabled_ports(node).find(|&p| self.configures(node, p))
    }
}

/// What an SM on port `sm` of `topo` cannot reach, without routing the subnet (for an SM that
/// finds the subnet by SMPs, as [`crate::node::remote::FabricServer`]'s does): the nodes more
/// than [`MAX_DR_HOPS`] hops away as [`SubnetManager::unreached`] gives them, and the CA ports
/// and switches (port 0) behind a channel adapter as [`SubnetManager::behind_ca`] does. Both
/// empty when `sm` is no cabled CA port of `topo` or its LIDs run out.
pub fn unreachable(topo: &Topology, sm: End) -> (Vec<(usize, u32)>, Vec<End>) {
    let sm_ok = topo
        .nodes()
        .get(sm.node)
        .is_some_and(|n| n.kind == NodeKind::Ca)
        && topo.peer(sm.node, sm.port).is_some();
    let Some((_, _, hops, behind)) = sm_ok
        .then(|| assign_lids(topo, sm, &BTreeMap::new()).ok())
        .flatten()
    else {
        return (Vec::new(), Vec::new());
    };
    let far = hops
        .iter()
        .enumerate()
        .filter_map(|(n, h)| h.filter(|&h| h > MAX_DR_HOPS).map(|h| (n, h)))
        .collect();
    (far, behind)
}

/// LIDs by a breadth-first walk from the SM's node over every cable (see the module docs), given
/// only to the ports and switches a directed route of at most [`MAX_DR_HOPS`] reaches
/// ([`Reach`]), those in `known` keeping their LID; every node's directed-route hop count; and
/// the ports and switches (port 0) cabled to the SM's node but reachable only through a CA.
#[allow(clippy::type_complexity)]
fn assign_lids(
    topo: &Topology,
    sm: End,
    known: &BTreeMap<Guid, u16>,
) -> Result<(Vec<Vec<u16>>, Vec<Option<End>>, Vec<Option<u32>>, Vec<End>), SmError> {
    let nodes = topo.nodes();
    let reach = Reach::new(topo, sm);
    let mut lids: Vec<Vec<u16>> = nodes
        .iter()
        .map(|n| vec![0; usize::from(n.ports) + 1])
        .collect();
    let mut seen = vec![false; nodes.len()];
    let mut behind_ca = Vec::new();
    let mut queue = VecDeque::from([sm.node]);
    seen[sm.node] = true;
    // The walk over every cable fixes the order (breadth first, neighbours in port order);
    // `reach` decides who gets a LID.
    let mut order = Vec::new();
    while let Some(n) = queue.pop_front() {
        let node = &nodes[n];
        match node.kind {
            NodeKind::Switch => {
                if reach.configures(n, 0) {
                    order.push(End { node: n, port: 0 });
                } else if reach.port_hops(n, 0).is_none() {
                    behind_ca.push(End { node: n, port: 0 });
                }
            }
            NodeKind::Ca => {
                let ports = (n == sm.node)
                    .then_some(sm.port)
                    .into_iter()
                    .chain((1..=node.ports).filter(|&p| n != sm.node || p != sm.port));
                for p in ports {
                    if topo.peer(n, p).is_none() {
                        continue;
                    }
                    if reach.configures(n, p) {
                        order.push(End { node: n, port: p });
                    } else if reach.port_hops(n, p).is_none() {
                        behind_ca.push(End { node: n, port: p });
                    }
                }
            }
        }
        for p in 1..=node.ports {
            if let Some((peer, _)) = topo.peer(n, p) {
                if !seen[peer.node] {
                    seen[peer.node] = true;
                    queue.push_back(peer.node);
                }
            }
        }
    }
    // Known ports keep their LIDs (the first in walk order, should two claim one); the others
    // take the lowest LIDs free of the table.
    let unicast = 1..=LID_UNICAST_LAST;
    let reserved: BTreeSet<u16> = known
        .values()
        .copied()
        .filter(|l| unicast.contains(l))
        .collect();
    let mut owners: Vec<Option<End>> = vec![None]; // LID 0 is reserved
    let put = |owners: &mut Vec<Option<End>>, lid: u16, e: End| {
        let i = usize::from(lid);
        if owners.len() <= i {
            owners.resize(i + 1, None);
        }
        owners[i] = Some(e);
    };
    let mut fresh = Vec::new();
    for &e in &order {
        let guid = nodes[e.node].port_guid(e.port);
        match known.get(&guid).copied().filter(|l| unicast.contains(l)) {
            Some(l) if owners.get(usize::from(l)).copied().flatten().is_none() => {
                put(&mut owners, l, e);
                lids[e.node][usize::from(e.port)] = l;
            }
            _ => fresh.push(e),
        }
    }
    // Past the table's LIDs, those of absent ports are taken too rather than fail.
    let (mut next, mut any) = (1u16, 1u16);
    let unowned =
        |l: u16, owners: &Vec<Option<End>>| owners.get(usize::from(l)).copied().flatten().is_none();
    for e in fresh {
        while next <= LID_UNICAST_LAST && (reserved.contains(&next) || !unowned(next, &owners)) {
            next += 1;
        }
        let lid = if next <= LID_UNICAST_LAST {
            next
        } else {
            while any <= LID_UNICAST_LAST && !unowned(any, &owners) {
                any += 1;
            }
            if any > LID_UNICAST_LAST {
                return Err(SmError::TooManyLids(order.len()));
            }
            any
        };
        put(&mut owners, lid, e);
        lids[e.node][usize::from(e.port)] = lid;
    }
    behind_ca.sort_by_key(|e| (e.node, e.port));
    let hops = (0..nodes.len()).map(|n| reach.node_hops(n)).collect();
    Ok((lids, owners, hops, behind_ca))
}

/// The configuration writes of one multicast group, for [`crate::hw::sim::Tx::configure`].
pub type MftWrites = Vec<(NodeId, Config)>;
