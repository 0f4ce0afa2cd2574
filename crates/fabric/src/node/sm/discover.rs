//! Subnet discovery by directed-route SMPs (IBA 1 §14.2.2, §14.2.5; OpenSM `osm_node_info_rcv.c`,
//! `osm_port_info_rcv.c`): what the SM knows of the fabric is only what the SMAs answered.
//!
//! Breadth first from the SM's port, as OpenSM's sweep does:
//! 1. SubnGet(NodeInfo) over the empty path (HopCount 0: the SM's own node) names the SM's node
//!    and port (LocalPortNum); then SubnGet(NodeInfo) out of that port.
//! 2. Each NodeInfo answer names a node by its NodeGUID and the port the SMP came in by. A node
//!    seen for the first time gets SubnGet(NodeDescription); a switch also SubnGet(SwitchInfo)
//!    (its LinearFDBTop as it is now, which the sweep sets again where it differs from the top
//!    its LFT needs, as OpenSM's `osm_sw_info_rcv.c` and `ucast_mgr_set_fwd_top` do) and
//!    SubnGet(PortInfo) of every port 0..=NumPorts; a CA port SubnGet(PortInfo) (its link's width
//!    and speed). The link from the asking port to that port is recorded.
//! 3. A switch port whose PortInfo says LinkUp and that is not yet known to be cabled gets
//!    SubnGet(NodeInfo) over the switch's path plus that port, unless the path would exceed
//!    [`super::MAX_DR_HOPS`] hops. Channel adapters are leaves: no SMP is sent through them (only
//!    switches forward directed routes, §14.2.2), so what lies behind a CA is not discovered.
//!
//! The result is a [`Topology`] with the nodes in NodeGUID order (as OpenSM's node and switch
//! tables, `cl_qmap`s keyed by GUID, iterate), every link seen from either end once, and the
//! directed route to every node (switches) and CA port. Requests that fail (timeout after retries,
//! a bad status) leave their branch undiscovered and are counted.

use super::MAX_DR_HOPS;
use crate::hw::sma::MTU_CAP;
use crate::hw::topology::{End, NodeKind, Topology};
use ipoib_proto::subnet::link_width_speed;
use ipoib_wire::mad::attr::smp as attr;
use ipoib_wire::smp::{
    cap_mask, NodeInfoRepr, NodeType, PortInfoRepr, PortPhysState, SmpAttribute, SwitchInfoRepr,
};
use ipoib_wire::{Guid, Rate};
use std::collections::HashMap;

/// What a discovery request asks, for matching its answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Ask {
    /// NodeInfo over `path`, out of `from` (node GUID, port) unless it is the SM's own node.
    NodeInfo {
        /// The directed route.
        path: Vec<u8>,
        /// The asking switch or SM node and its port.
        from: Option<(Guid, u8)>,
    },
    /// NodeDescription of node `guid` over `path`.
    NodeDescription {
        /// The directed route.
        path: Vec<u8>,
        /// The node.
        guid: Guid,
    },
    /// SwitchInfo of switch `guid` over `path`.
    SwitchInfo {
        /// The directed route.
        path: Vec<u8>,
        /// The switch.
        guid: Guid,
    },
    /// PortInfo of port `port` of node `guid` over `path`.
    PortInfo {
        /// The directed route.
        path: Vec<u8>,
        /// The node.
        guid: Guid,
        /// The port (the AttributeModifier; a CA answers for the port the SMP came in by).
        port: u8,
    },
}

impl Ask {
    /// The directed route of the request.
    pub fn path(&self) -> &[u8] {
        match self {
            Ask::NodeInfo { path, .. }
            | Ask::NodeDescription { path, .. }
            | Ask::SwitchInfo { path, .. }
            | Ask::PortInfo { path, .. } => path,
        }
    }

    /// (AttributeID, AttributeModifier) of the SubnGet.
    pub fn attribute(&self) -> (u16, u32) {
        match self {
            Ask::NodeInfo { .. } => (attr::NODE_INFO, 0),
            Ask::NodeDescription { .. } => (attr::NODE_DESCRIPTION, 0),
            Ask::SwitchInfo { .. } => (attr::SWITCH_INFO, 0),
            Ask::PortInfo { port, .. } => (attr::PORT_INFO, u32::from(*port)),
        }
    }
}

/// One discovered port.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SeenPort {
    /// Port GUID (NodeInfo:PortGUID; a switch's ports share port 0's).
    pub guid: Guid,
    /// The directed route that ends at this port (CAs; a switch's is the node's).
    pub path: Option<Vec<u8>>,
    /// The port at the other end of its cable: (node GUID, port).
    pub peer: Option<(Guid, u8)>,
    /// The link rate its PortInfo reports (LinkWidthActive × LinkSpeedActive).
    pub rate: Option<Rate>,
    /// Its PortInfo as answered.
    pub info: Option<PortInfoRepr>,
}

/// One discovered node.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SeenNode {
    /// NodeInfo:NodeGUID.
    pub guid: Guid,
    /// NodeInfo:NodeType is Switch.
    pub switch: bool,
    /// NodeInfo:NumPorts.
    pub nports: u8,
    /// NodeDescription (empty until answered).
    pub desc: String,
    /// NodeInfo as first answered.
    pub info: NodeInfoRepr,
    /// The directed route to the node (the first that reached it).
    pub path: Vec<u8>,
    /// Ports 0..=NumPorts.
    pub ports: Vec<SeenPort>,
    /// Its SwitchInfo as answered (switches).
    pub switch_info: Option<SwitchInfoRepr>,
}

/// The discovery state. See the module docs.
#[derive(Debug, Clone, Default)]
pub struct Discovery {
    /// In the order discovered; [`Discovery::result`] puts them in GUID order.
    nodes: Vec<SeenNode>,
    /// Node GUID to its place in `nodes`: a lookup per answer (and two per cable in the
    /// result), where an ordered map by GUID cost about 300 instructions each at 10,000 hosts
    /// (docs/benchmarks/subnet-rounds.md, "The SM's own work"). Never iterated.
    index: HashMap<Guid, usize>,
    /// The SM's node and port, once its own NodeInfo answered.
    sm: Option<(Guid, u8)>,
    asks: Vec<Ask>,
    /// Requests that failed.
    pub failures: u64,
}

/// The discovered subnet as the brain takes it.
#[derive(Debug, Clone)]
pub struct Discovered {
    /// Nodes in GUID order, links as seen.
    pub topology: Topology,
    /// The SM's port.
    pub sm_port: End,
    /// Per topology node, the directed route to it (a CA: to its first discovered port).
    pub node_paths: Vec<Vec<u8>>,
    /// Per topology node, per port: the directed route that ends at that port (CA ports).
    pub port_paths: Vec<Vec<Option<Vec<u8>>>>,
    /// Per topology node, per port: its PortInfo as answered.
    pub port_infos: Vec<Vec<Option<PortInfoRepr>>>,
    /// Per topology node: its NodeInfo as answered.
    pub node_infos: Vec<NodeInfoRepr>,
    /// Per topology node: its SwitchInfo as answered (`None`: a CA, or the Get failed).
    pub switch_infos: Vec<Option<SwitchInfoRepr>>,
    /// Other SMs: every CA port but the SM's own whose PortInfo:CapabilityMask has IsSM
    /// (IBA 1 §14.4, `super::election`), its directed route and port GUID, in GUID order.
    pub sm_ports: Vec<(Vec<u8>, Guid)>,
}

impl Discovery {
    /// A discovery whose first request is the SM node's own NodeInfo.
    pub fn new() -> Discovery {
        Discovery {
            asks: vec![Ask::NodeInfo {
                path: Vec::new(),
                from: None,
            }],
            ..Discovery::default()
        }
    }

    /// The requests to send now (taken).
    pub fn take_asks(&mut self) -> Vec<Ask> {
        std::mem::take(&mut self.asks)
    }

    /// Nodes discovered so far.
    pub fn node_count(&self) -> usize {
        self.nodes.len()
    }

    /// The answer to `ask` (`None`: it failed).
    pub fn answer(&mut self, ask: Ask, attribute: Option<&SmpAttribute>) {
        match (ask, attribute) {
            (Ask::NodeInfo { path, from }, Some(SmpAttribute::NodeInfo(n))) => {
                self.node_info(path, from, n)
            }
            (Ask::NodeDescription { guid, .. }, Some(SmpAttribute::NodeDescription(d))) => {
                if let Some(n) = self.node_mut(guid) {
                    n.desc = d.text().to_string();
                }
            }
            (Ask::SwitchInfo { guid, .. }, Some(SmpAttribute::SwitchInfo(s))) => {
                if let Some(n) = self.node_mut(guid).filter(|n| n.switch) {
                    n.switch_info = Some(*s);
                }
            }
            (Ask::PortInfo { path, guid, port }, Some(SmpAttribute::PortInfo(p))) => {
                self.port_info(path, guid, port, p)
            }
            _ => self.failures += 1,
        }
    }

    fn node_mut(&mut self, guid: Guid) -> Option<&mut SeenNode> {
        let &i = self.index.get(&guid)?;
        self.nodes.get_mut(i)
    }

    fn node_info(&mut self, path: Vec<u8>, from: Option<(Guid, u8)>, n: &NodeInfoRepr) {
        let guid = n.node_guid;
        let here = n.local_port_num;
        let switch = n.node_type == NodeType::Switch;
        let fresh = !self.index.contains_key(&guid);
        if fresh {
            self.index.insert(guid, self.nodes.len());
            self.nodes.push(SeenNode {
                guid,
                switch,
                nports: n.num_ports,
                desc: String::new(),
                info: *n,
                path: path.clone(),
                ports: vec![SeenPort::default(); usize::from(n.num_ports) + 1],
                switch_info: None,
            });
            self.asks.push(Ask::NodeDescription {
                path: path.clone(),
                guid,
            });
            if switch {
                self.asks.push(Ask::SwitchInfo {
                    path: path.clone(),
                    guid,
                });
                for p in 0..=n.num_ports {
                    self.asks.push(Ask::PortInfo {
                        path: path.clone(),
                        guid,
                        port: p,
                    });
                }
            }
        }
        let Some(node) = self.index.get(&guid).and_then(|&i| self.nodes.get_mut(i)) else {
            return;
        };
        if let Some(port) = node.ports.get_mut(usize::from(here)) {
            port.guid = n.port_guid;
            if !switch && port.path.is_none() {
                port.path = Some(path.clone());
                self.asks.push(Ask::PortInfo {
                    path: path.clone(),
                    guid,
                    port: here,
                });
            }
            if let Some(f) = from {
                port.peer = Some(f);
            }
        }
        match from {
            Some(f) => {
                if let Some(p) = self
                    .node_mut(f.0)
                    .and_then(|a| a.ports.get_mut(usize::from(f.1)))
                {
                    p.peer = Some((guid, here));
                }
            }
            None => {
                // The SM's own node: its port is the one the empty path names; explore its cable.
                self.sm = Some((guid, here));
                self.asks.push(Ask::NodeInfo {
                    path: vec![here],
                    from: Some((guid, here)),
                });
            }
        }
    }

    fn port_info(&mut self, path: Vec<u8>, guid: Guid, port: u8, p: &PortInfoRepr) {
        let Some(node) = self.node_mut(guid) else {
            return;
        };
        let rate = rate_of(
            p.link_width_active,
            p.link_speed_active,
            p.link_speed_ext_active,
        );
        let Some(seen) = node.ports.get_mut(usize::from(port)) else {
            return;
        };
        seen.rate = rate;
        seen.info = Some(*p);
        let up = p.port_phys_state == PortPhysState::LinkUp;
        // Walk on through a switch's cabled ports not known yet, within the hop limit.
        if node.switch
            && port != 0
            && up
            && seen.peer.is_none()
            && path.len() < MAX_DR_HOPS as usize
        {
            let mut next = path;
            next.push(port);
            self.asks.push(Ask::NodeInfo {
                path: next,
                from: Some((guid, port)),
            });
        }
    }

    /// The discovered subnet (nodes in GUID order); `None` until the SM's own node answered.
    pub fn result(&self) -> Option<Discovered> {
        let (sm_guid, sm_port) = self.sm?;
        let mut topo = Topology::new();
        // The nodes in GUID order (as OpenSM's tables iterate), and each one's topology index.
        let mut order: Vec<usize> = (0..self.nodes.len()).collect();
        order.sort_unstable_by_key(|&i| self.nodes[i].guid);
        let mut place = vec![0; self.nodes.len()];
        let mut node_paths = Vec::new();
        let mut port_paths = Vec::new();
        let mut port_infos = Vec::new();
        let mut node_infos = Vec::new();
        let mut switch_infos = Vec::new();
        for &k in &order {
            let n = &self.nodes[k];
            let guid = n.guid;
            let kind = if n.switch {
                NodeKind::Switch
            } else {
                NodeKind::Ca
            };
            let name = if n.desc.is_empty() {
                format!("{guid}")
            } else {
                n.desc.clone()
            };
            place[k] = topo.add_node(kind, name, guid, n.nports);
            let first_port = n.ports.iter().find_map(|p| p.path.clone());
            node_paths.push(if n.switch {
                n.path.clone()
            } else {
                first_port.unwrap_or_else(|| n.path.clone())
            });
            port_paths.push(n.ports.iter().map(|p| p.path.clone()).collect());
            port_infos.push(n.ports.iter().map(|p| p.info).collect());
            node_infos.push(n.info);
            switch_infos.push(n.switch_info);
        }
        for &k in &order {
            let n = &self.nodes[k];
            let guid = n.guid;
            for (p, seen) in n.ports.iter().enumerate().skip(1) {
                let Some((pg, pp)) = seen.peer else { continue };
                // Each cable once: from its end with the lower (GUID, port).
                if (guid, p as u8) > (pg, pp) {
                    continue;
                }
                let Some(&j) = self.index.get(&pg) else {
                    continue;
                };
                let (a, b, peer) = (place[k], place[j], &self.nodes[j]);
                // A CA's rate is what its port trained to; a switch's says nothing of the cable.
                let rate = [(n, p as u8), (peer, pp)]
                    .iter()
                    .filter(|(n, _)| !n.switch)
                    .find_map(|(n, p)| n.ports.get(usize::from(*p)).and_then(|s| s.rate));
                // IBA 1 §14.2.5.6: the link runs the smaller MTUCap of its ends (OpenSM
                // `osm_port.c` `osm_physp_calc_link_mtu`, the NeighborMTU its link manager
                // sets); left to the SM's default when neither is below this fabric's largest.
                let cap = |n: &SeenNode, p: u8| {
                    n.ports
                        .get(usize::from(p))
                        .and_then(|s| s.info)
                        .map(|i| i.mtu_cap)
                        .filter(|m| m.is_valid())
                };
                let mtu = [cap(n, p as u8), cap(peer, pp)]
                    .into_iter()
                    .flatten()
                    .min_by_key(|m| m.bytes())
                    .filter(|m| m.bytes() < MTU_CAP.bytes());
                let _ = topo.connect(
                    End {
                        node: a,
                        port: p as u8,
                    },
                    End { node: b, port: pp },
                    mtu,
                    rate,
                );
            }
        }
        let sm_node = place[*self.index.get(&sm_guid)?];
        let sm_ports = order
            .iter()
            .map(|&k| &self.nodes[k])
            .filter(|n| !n.switch)
            .flat_map(|n| n.ports.iter().enumerate().map(move |(p, s)| (n.guid, p, s)))
            .filter(|&(g, p, _)| (g, p) != (sm_guid, usize::from(sm_port)))
            .filter_map(|(_, _, s)| {
                let is_sm = s.info?.capability_mask & cap_mask::IS_SM != 0;
                Some((s.path.clone()?, s.guid)).filter(|_| is_sm)
            })
            .collect();
        Some(Discovered {
            topology: topo,
            sm_port: End {
                node: sm_node,
                port: sm_port,
            },
            node_paths,
            port_paths,
            port_infos,
            node_infos,
            switch_infos,
            sm_ports,
        })
    }
}

/// The rate of a link whose PortInfo says `width`, `speed`, `ext` (the inverse of
/// [`link_width_speed`]); `None` for a combination no rate has.
fn rate_of(width: u8, speed: u8, ext: u8) -> Option<Rate> {
    (0u8..64)
        .map(Rate::from)
        .filter(|r| r.is_valid())
        .find(|&r| link_width_speed(r) == (width, speed, ext))
}

#[cfg(test)]
mod tests {
    use super::*;
    use ipoib_wire::smp::NodeDescriptionRepr;

    fn ni(guid: u64, switch: bool, nports: u8, local: u8) -> SmpAttribute {
        SmpAttribute::NodeInfo(NodeInfoRepr {
            base_version: 1,
            class_version: 1,
            node_type: if switch {
                NodeType::Switch
            } else {
                NodeType::ChannelAdapter
            },
            num_ports: nports,
            system_image_guid: Guid(guid),
            node_guid: Guid(guid),
            port_guid: Guid(if switch {
                guid
            } else {
                guid + u64::from(local)
            }),
            partition_cap: 1,
            device_id: 0,
            revision: 0,
            local_port_num: local,
            vendor_id: 0,
        })
    }

    fn pi(up: bool) -> SmpAttribute {
        SmpAttribute::PortInfo(PortInfoRepr {
            port_phys_state: if up {
                PortPhysState::LinkUp
            } else {
                PortPhysState::Polling
            },
            link_width_active: 2,
            link_speed_active: 4,
            ..PortInfoRepr::default()
        })
    }

    // IBA 1 §14.2.2: the walk goes out of the SM's port, through a switch's LinkUp ports, and
    // stops at CAs; the result is in GUID order with the cables and directed routes.
    #[test]
    fn walks_a_switch_with_two_cas() {
        let mut d = Discovery::new();
        let sw = 0x200;
        let answer = |a: &Ask| -> Option<SmpAttribute> {
            let path = a.path().to_vec();
            Some(match (a, path.as_slice()) {
                (Ask::NodeInfo { .. }, []) => ni(0x100, false, 1, 1),
                (Ask::NodeInfo { .. }, [1]) => ni(sw, true, 3, 1),
                (Ask::NodeInfo { .. }, [1, 2]) => ni(0x300, false, 2, 2),
                (Ask::NodeInfo { .. }, _) => return None,
                (Ask::NodeDescription { .. }, _) => {
                    SmpAttribute::NodeDescription(NodeDescriptionRepr::new("n"))
                }
                (Ask::SwitchInfo { .. }, _) => SmpAttribute::SwitchInfo(SwitchInfoRepr {
                    linear_fdb_top: 7,
                    ..SwitchInfoRepr::default()
                }),
                // Switch port 3 has no cable.
                (Ask::PortInfo { port, .. }, [1]) => pi(*port != 3),
                (Ask::PortInfo { .. }, _) => pi(true),
            })
        };
        let mut rounds = 0;
        loop {
            let asks = d.take_asks();
            if asks.is_empty() {
                break;
            }
            rounds += 1;
            for a in asks {
                let r = answer(&a);
                d.answer(a, r.as_ref());
            }
        }
        assert!(rounds <= 6, "{rounds}");
        assert_eq!(d.failures, 0);
        let r = d.result().unwrap();
        let t = &r.topology;
        assert_eq!(t.nodes().len(), 3);
        assert_eq!(t.nodes()[1].kind, NodeKind::Switch, "GUID order");
        assert_eq!(r.sm_port, End { node: 0, port: 1 });
        assert_eq!(t.links().len(), 2);
        assert_eq!(t.peer(1, 2).map(|(e, _)| e), Some(End { node: 2, port: 2 }));
        assert_eq!(t.links()[0].rate, Some(Rate::Gbps40));
        assert_eq!(r.port_paths[2][2], Some(vec![1, 2]));
        assert_eq!(r.port_paths[2][1], None, "port 1 of the CA was not reached");
        assert_eq!(r.node_paths[1], vec![1]);
        // The switch's SwitchInfo as read (OpenSM `osm_sw_info_rcv.c`); CAs have none.
        let tops: Vec<_> = r
            .switch_infos
            .iter()
            .map(|s| s.map(|s| s.linear_fdb_top))
            .collect();
        assert_eq!(tops, [None, Some(7), None]);
    }

    proptest::proptest! {
        // No panic on any answers: NodeInfo with any GUID, type, port count and local port,
        // PortInfo with any state, failures anywhere; the result is a topology or nothing.
        #[test]
        fn any_answers_never_panic(
            answers in proptest::collection::vec(
                (0u64..6, proptest::bool::ANY, 0u8..5, 0u8..6, proptest::bool::ANY, 0u8..4), 1..60)
        ) {
            let mut d = Discovery::new();
            let mut it = answers.into_iter().cycle().take(200);
            loop {
                let asks = d.take_asks();
                if asks.is_empty() {
                    break;
                }
                for a in asks {
                    let Some((g, sw, np, local, up, kind)) = it.next() else { break };
                    let attr = match (&a, kind) {
                        (_, 0) => None,
                        (Ask::NodeInfo { .. }, _) => Some(ni(0x100 + g, sw, np, local)),
                        (Ask::PortInfo { .. }, _) => Some(pi(up)),
                        (Ask::SwitchInfo { .. }, _) => {
                            Some(SmpAttribute::SwitchInfo(SwitchInfoRepr::default()))
                        }
                        (Ask::NodeDescription { .. }, _) => {
                            Some(SmpAttribute::NodeDescription(NodeDescriptionRepr::new("x")))
                        }
                    };
                    d.answer(a, attr.as_ref());
                }
            }
            if let Some(r) = d.result() {
                proptest::prop_assert_eq!(r.node_paths.len(), r.topology.nodes().len());
            }
        }
    }
}
