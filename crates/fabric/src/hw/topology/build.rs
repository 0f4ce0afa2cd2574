//! Instantiating a [`Topology`] in a [`Simulator`]: switches become [`Switch`] devices, channel
//! adapters whatever the caller's closure makes (the HCA lives in another module; this one does
//! not depend on it), and every cable a simulator link.

use super::{NodeKind, TopoLink, TopoNode, Topology};
use crate::hw::link::{LinkId, LinkParams};
use crate::hw::sim::{Device, NodeId, PortRef, Simulator};
use crate::hw::switch::Switch;
use ipoib_proto::rng::Rng;

/// What [`build`] made.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Built {
    /// The simulator node of each topology node (same index).
    pub nodes: Vec<NodeId>,
    /// The simulator link of each topology link (same index).
    pub links: Vec<LinkId>,
}

/// Link parameters for a cable: `base`, with the data rate of the cable's rate code when it has
/// one (IBA PathRecord rate encoding, taken as the signalling rate).
pub fn link_params(link: &TopoLink, base: LinkParams) -> LinkParams {
    let gbps_tenths: u64 = match link.rate {
        Some(2) => 25,
        Some(3) => 100,
        Some(4) => 300,
        Some(5) => 50,
        Some(6) => 200,
        Some(7) => 400,
        Some(8) => 600,
        Some(9) => 800,
        Some(10) => 1200,
        Some(11) => 140,
        Some(12) => 560,
        Some(13) => 1120,
        Some(14) => 1680,
        Some(15) => 250,
        Some(16) => 1000,
        Some(17) => 2000,
        Some(18) => 3000,
        _ => return base,
    };
    LinkParams {
        bits_per_second: gbps_tenths * 100_000_000,
        ..base
    }
}

/// Adds every node of `topo` to `sim` (switches as [`Switch`], channel adapters made by
/// `make_ca` from their node index and node, with an RNG forked from the simulator's seed with the
/// node index as stream) and cables them with `params` (the rate adjusted per [`link_params`]).
pub fn build(
    topo: &Topology,
    sim: &mut Simulator,
    params: LinkParams,
    mut make_ca: impl FnMut(usize, &TopoNode, Rng) -> Box<dyn Device>,
) -> Built {
    let nodes: Vec<NodeId> = topo
        .nodes()
        .iter()
        .enumerate()
        .map(|(i, n)| {
            let dev: Box<dyn Device> = match n.kind {
                NodeKind::Switch => Box::new(Switch::new(n.guid, n.ports, n.name.clone())),
                NodeKind::Ca => make_ca(i, n, sim.fork_rng(i as u64)),
            };
            sim.add_node(dev, n.ports)
        })
        .collect();
    let links = topo
        .links()
        .iter()
        .map(|l| {
            sim.connect(
                PortRef {
                    node: nodes[l.a.node],
                    port: l.a.port,
                },
                PortRef {
                    node: nodes[l.b.node],
                    port: l.b.port,
                },
                link_params(l, params),
            )
        })
        .collect();
    Built { nodes, links }
}
