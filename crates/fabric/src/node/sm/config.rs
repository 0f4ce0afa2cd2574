//! What the SM writes and publishes: the bring-up configuration (PortInfo/P_KeyTable per port,
//! LFTs), multicast forwarding entries per group, and the [`SubnetModel`] for the SA.

use super::route::TreeLink;
use super::{Membership, MftWrites, PartitionMembers, PartitionSpec, SubnetManager};
use crate::hw::hca::PKEY_TABLE_SIZE;
use crate::hw::mgmt::{Config, PortConfig, PortState};
use crate::hw::topology::{End, NodeKind};
use ipoib_proto::subnet::{CaPort, NodeFacts, Peer, SubnetModel, SwitchNode, SwitchPort};
use ipoib_wire::ib::lid::{is_multicast_lid, LID_MULTICAST_FIRST};
use ipoib_wire::{Mtu, PKey, Rate};
use std::collections::BTreeMap;

impl SubnetManager {
    fn partitions(&self) -> std::borrow::Cow<'_, [PartitionSpec]> {
        if self.opts.partitions.is_empty() {
            std::borrow::Cow::Owned(vec![PartitionSpec::default_partition()])
        } else {
            std::borrow::Cow::Borrowed(&self.opts.partitions)
        }
    }

    /// The P_Key table of a CA port: one entry per partition it belongs to, in partition order,
    /// with bit 15 set for full membership (IBA 1 §10.9), at most [`PKEY_TABLE_SIZE`] entries
    /// (the HCA's PartitionCap, IBA 1 §14.2.5.5 NodeInfo). The SM's port is a full member of all.
    /// Partitions beyond the table's size are left out, as OpenSM does ("ERR 0512: Failed to set
    /// PKey 0x... because Pkey table is full", docs/OPENSM-NOTES.md); [`Self::pkeys_left_out`]
    /// names them.
    pub fn pkey_table(&self, port: End) -> Vec<PKey> {
        let mut t = self.member_pkeys(port);
        t.truncate(usize::from(PKEY_TABLE_SIZE));
        t
    }

    /// The P_Keys of the partitions `port` belongs to that its P_Key table has no room for
    /// (empty when all fit).
    pub fn pkeys_left_out(&self, port: End) -> Vec<PKey> {
        let all = self.member_pkeys(port);
        all.get(usize::from(PKEY_TABLE_SIZE)..)
            .map_or_else(Vec::new, <[PKey]>::to_vec)
    }

    /// Every P_Key of the partitions `port` belongs to, table or not.
    fn member_pkeys(&self, port: End) -> Vec<PKey> {
        let Some(node) = self.topo.nodes().get(port.node) else {
            return Vec::new();
        };
        let guid = node.port_guid(port.port);
        let is_sm = port == self.sm_port;
        self.partitions()
            .iter()
            .filter_map(|p| {
                let m = match &p.members {
                    PartitionMembers::All(m) => Some(*m),
                    PartitionMembers::Ports(v) => {
                        v.iter().find(|(g, _)| *g == guid).map(|&(_, m)| m)
                    }
                };
                let m = if is_sm { Some(Membership::Full) } else { m }?;
                Some(m.pkey(p.pkey))
            })
            .collect()
    }

    /// The P_Key table of switch `n`'s management port 0: the default P_Key, full, then the
    /// partitions the file makes it a member of (`ALL`, `ALL_SWITCHES`, its GUID; OpenSM does
    /// the same, docs/OPENSM-NOTES.md "Diags on a fat tree"), at most the switch's
    /// PartitionEnforcementCap entries.
    pub fn switch_port0_pkeys(&self, n: usize) -> Vec<PKey> {
        let guid = self.topo.nodes().get(n).map(|node| node.port_guid(0));
        let mut t: Vec<PKey> = self
            .partitions()
            .iter()
            .filter_map(|p| {
                if p.pkey.same_partition(PKey::DEFAULT) {
                    return Some(PKey::DEFAULT);
                }
                let (_, m) = p.switches.iter().find(|(g, _)| Some(*g) == guid)?;
                Some(m.pkey(p.pkey))
            })
            .collect();
        if !t.contains(&PKey::DEFAULT) {
            t.insert(0, PKey::DEFAULT);
        }
        t.truncate(usize::from(crate::hw::switch::PARTITION_ENFORCEMENT_CAP));
        t
    }

    /// The P_Key table of a switch port cabled to another switch: every partition, full, so
    /// that every partition's packets cross the link where the switch enforces partitions; at
    /// most the switch's PartitionEnforcementCap entries (IBA 1 §14.2.5.4: what a port holds).
    fn switch_link_pkeys(&self) -> Vec<PKey> {
        let mut t: Vec<PKey> = self.partitions().iter().map(|p| p.pkey.full()).collect();
        t.truncate(usize::from(crate::hw::switch::PARTITION_ENFORCEMENT_CAP));
        t
    }

    /// MTU and rate of the cable on a port (the options' defaults where the cable sets none).
    fn link_props(&self, e: End) -> (Mtu, Rate) {
        match self.topo.peer(e.node, e.port) {
            Some((_, l)) => {
                let l = &self.topo.links()[l];
                (
                    l.mtu.unwrap_or(self.opts.mtu),
                    l.rate.unwrap_or(self.opts.rate),
                )
            }
            None => (self.opts.mtu, self.opts.rate),
        }
    }

    fn port_config(&self, port: u8, lid: u16, mtu: Mtu, rate: Rate, pkeys: Vec<PKey>) -> Config {
        Config::Port(PortConfig {
            port,
            lid,
            lmc: 0,
            sm_lid: self.sm_lid(),
            sm_sl: self.opts.sm_sl,
            subnet_prefix: self.opts.subnet_prefix,
            state: PortState::Active,
            mtu,
            rate,
            pkeys,
        })
    }

    /// The planned state of every device, as values: first the switches (port 0 with the
    /// switch's LID, every cabled port with its MTU, rate and P_Keys, then the LFT), then every CA
    /// port with a LID (LID, SM LID, subnet prefix, MTU, rate, P_Key table, state Active). The SM
    /// by SMPs turns them into SubnSets (`sweep.rs`); a subnet's plan checks devices against
    /// them. Nodes the SM could not reach get nothing.
    pub fn bring_up(&self) -> Vec<(crate::hw::sim::NodeId, Config)> {
        let mut out = Vec::new();
        let all_full = self.switch_link_pkeys();
        for (s, &n) in self.switches.iter().enumerate() {
            let lid = self.lids[n][0];
            if lid == 0 {
                continue;
            }
            let id = self.nodes[n];
            let port0 = self.switch_port0_pkeys(n);
            out.push((
                id,
                self.port_config(0, lid, self.opts.mtu, self.opts.rate, port0),
            ));
            for p in 1..=self.topo.nodes()[n].ports {
                let Some((peer, _)) = self.topo.peer(n, p) else {
                    continue;
                };
                let (mtu, rate) = self.link_props(End { node: n, port: p });
                let mut pkeys = match self.topo.nodes()[peer.node].kind {
                    NodeKind::Ca => self.pkey_table(peer),
                    NodeKind::Switch => all_full.clone(),
                };
                // A switch port holds PartitionEnforcementCap entries (IBA 1 §14.2.5.4); our
                // switches refuse a P_KeyTable block past them.
                pkeys.truncate(usize::from(crate::hw::switch::PARTITION_ENFORCEMENT_CAP));
                out.push((id, self.port_config(p, lid, mtu, rate, pkeys)));
            }
            out.push((id, Config::Lft(self.route().lfts[s].clone())));
        }
        for (lid, e) in self.ca_ports() {
            let (mtu, rate) = self.link_props(e);
            let pkeys = self.pkey_table(e);
            out.push((
                self.nodes[e.node],
                self.port_config(e.port, lid, mtu, rate, pkeys),
            ));
        }
        out
    }

    /// The MFT entries that make `mlid` reach exactly the CA ports with LIDs `members`: a tree
    /// through the switches (see the module docs), one entry per switch in the tree with the
    /// ports of its tree links and of its member CAs, in switch order. Unknown LIDs, switch LIDs
    /// and members not behind a switch are ignored; an MLID outside 0xC000..=0xFFFE (IBA 1 §4.1)
    /// gives nothing. To change a group, send the new entries and an empty entry
    /// (`ports: vec![]`) to every switch of the old result that is not in the new one
    /// ([`mft_changes`]).
    pub fn multicast_tree(&self, mlid: u16, members: &[u16]) -> MftWrites {
        if !is_multicast_lid(mlid) || self.route().roots.is_empty() {
            return Vec::new();
        }
        let r = usize::from(mlid - LID_MULTICAST_FIRST) % self.route().roots.len();
        let tree: &[TreeLink] = &self.route().trees[r];
        let root = self.route().roots[r];
        // Per switch index, the ports of its entry once it is in the tree.
        let mut ports: Vec<Option<Vec<u8>>> = vec![None; self.switches.len()];
        for &lid in members {
            let Some(e) = self.owner(lid) else { continue };
            if self.sw_index[e.node].is_some() {
                continue;
            }
            let Some((peer, _)) = self.topo.peer(e.node, e.port) else {
                continue;
            };
            let Some(mut s) = self.sw_index[peer.node] else {
                continue;
            };
            if s != root && tree[s].is_none() {
                continue; // not connected to the root
            }
            let fresh = ports[s].is_none();
            ports[s].get_or_insert_with(Vec::new).push(peer.port);
            if !fresh {
                continue;
            }
            // Walk up to the root or to a switch already in the tree.
            while let Some((parent, up, down)) = tree[s] {
                ports[s].get_or_insert_with(Vec::new).push(up);
                let joined = ports[parent].is_some();
                ports[parent].get_or_insert_with(Vec::new).push(down);
                if joined {
                    break;
                }
                s = parent;
            }
        }
        // Prune the top: a root with a single tree link and no member is not needed (all members
        // behind one leaf use that leaf alone).
        let mut top = root;
        while let Some(entry) = &ports[top] {
            let [only] = entry[..] else { break };
            let child = (0..ports.len()).find(|&c| {
                c != top
                    && ports[c].is_some()
                    && matches!(tree[c], Some((p, _, down)) if p == top && down == only)
            });
            let Some(c) = child else { break }; // `only` is a member port
            ports[top] = None;
            if let (Some(e), Some((_, up, _))) = (ports[c].as_mut(), tree[c]) {
                e.retain(|&p| p != up);
            }
            top = c;
        }
        ports
            .into_iter()
            .enumerate()
            .filter_map(|(s, p)| {
                let mut p = p?;
                p.sort_unstable();
                p.dedup();
                Some((self.nodes[self.switches[s]], Config::Mft { mlid, ports: p }))
            })
            .collect()
    }

    /// Node `n`'s NodeInfo facts: as read, else our devices'.
    fn facts_of(&self, n: usize) -> NodeFacts {
        let node = &self.topo.nodes()[n];
        self.facts
            .get(n)
            .copied()
            .flatten()
            .unwrap_or_else(|| node_facts(node.guid, node.ports))
    }

    /// The subnet as configured, for the SA: every CA port (cabled or not; LID 0 when the SM gave
    /// it none) in node and port order, every switch with its ports and LFT.
    pub fn subnet_model(&self) -> SubnetModel {
        let nodes = self.topo.nodes();
        let mut ca_index: BTreeMap<End, usize> = BTreeMap::new();
        for n in self.topo.cas() {
            for p in 1..=nodes[n].ports {
                let i = ca_index.len();
                ca_index.insert(End { node: n, port: p }, i);
            }
        }
        let peer_of = |e: End| -> Peer {
            match self.topo.peer(e.node, e.port) {
                None => Peer::None,
                Some((p, _)) => match self.sw_index[p.node] {
                    Some(s) => Peer::Switch(s, p.port),
                    None => ca_index.get(&p).map_or(Peer::None, |&i| Peer::Ca(i)),
                },
            }
        };
        let ports = ca_index
            .keys()
            .map(|&e| {
                let node = &nodes[e.node];
                let lid = self.lid(e.node, e.port).unwrap_or(0);
                let (mtu, rate) = self.link_props(e);
                CaPort {
                    node_guid: node.guid,
                    port_guid: node.port_guid(e.port),
                    port_num: e.port,
                    lid,
                    lmc: 0,
                    mtu,
                    rate,
                    pkeys: if lid != 0 {
                        self.pkey_table(e)
                    } else {
                        Vec::new()
                    },
                    active: lid != 0,
                    peer: peer_of(e),
                    name: node.desc.clone(),
                    node: self.facts_of(e.node),
                }
            })
            .collect();
        let switches = self
            .switches
            .iter()
            .enumerate()
            .map(|(s, &n)| {
                let node = &nodes[n];
                let ports = (0..=node.ports)
                    .map(|p| {
                        let e = End { node: n, port: p };
                        let (mtu, rate) = self.link_props(e);
                        SwitchPort {
                            mtu,
                            rate,
                            peer: if p == 0 { Peer::None } else { peer_of(e) },
                        }
                    })
                    .collect();
                SwitchNode {
                    guid: node.guid,
                    lid: self.lids[n][0],
                    ports,
                    lft: self.route().lfts[s].clone(),
                    name: node.desc.clone(),
                    node: self.facts_of(n),
                }
            })
            .collect();
        SubnetModel {
            subnet_prefix: self.opts.subnet_prefix,
            sm_lid: self.sm_lid(),
            ports,
            port_infos: self.port_infos.clone(),
            switches,
            switch_link_pkeys: self.switch_link_pkeys(),
            switch_port0_pkeys: self
                .switches
                .iter()
                .map(|&n| (self.topo.nodes()[n].guid, self.switch_port0_pkeys(n)))
                .collect(),
            sms: Vec::new(),
            // Our SM writes no SLtoVLMappingTable or VLArbitrationTable (no QoS): the SA gives
            // them zeroed, which is what the SMAs hold (fabric test
            // `subnet_smp::qos_table_records_are_what_the_smas_hold`).
            sl2vl: Default::default(),
            vlarb: Default::default(),
            switch_infos: self.switch_infos.clone(),
            // The MFT blocks are the SMP agent's copy, given to the SA by `SmApp` (the brain
            // computes trees but holds no MFT).
            mfts: Default::default(),
        }
    }
}

/// The NodeInfo facts of our HCAs (IBA 1 §14.2.5.3), as the ibsim server answers GET_NODEINFO
/// (crates/runtime/src/ibsim_server/info.rs): the system image GUID is the node GUID, the
/// P_Key table holds [`PKEY_TABLE_SIZE`] entries, no vendor, device or revision assigned (0), and
/// a port answers to its port GUID alone (GUIDCap 1: no alias GUIDs). Switches are described the
/// same way.
fn node_facts(guid: ipoib_wire::Guid, ports: u8) -> NodeFacts {
    NodeFacts {
        num_ports: ports,
        system_image_guid: guid,
        partition_cap: PKEY_TABLE_SIZE,
        guid_cap: 1,
        ..NodeFacts::default()
    }
}

/// The writes that turn a group's MFT entries from `old` into `new` (both results of
/// [`SubnetManager::multicast_tree`] for the same MLID, their switches named the same way: node
/// handles of one brain, or node GUIDs): entries that changed, and empty entries for switches
/// that left the tree.
pub fn mft_changes<K: Copy + PartialEq>(
    old: &[(K, Config)],
    new: &[(K, Config)],
) -> Vec<(K, Config)> {
    let mut out: Vec<(K, Config)> = new.iter().filter(|n| !old.contains(n)).cloned().collect();
    for (id, c) in old {
        if let Config::Mft { mlid, .. } = c {
            if !new.iter().any(|(n, _)| n == id) {
                out.push((
                    *id,
                    Config::Mft {
                        mlid: *mlid,
                        ports: Vec::new(),
                    },
                ));
            }
        }
    }
    out
}
