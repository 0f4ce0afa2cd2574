//! Instantiating a [`Topology`] in a [`Simulator`]: switches become [`Switch`] devices, channel
//! adapters whatever the caller's closure makes (the HCA lives in another module; this one does
//! not depend on it), and every cable a simulator link.

use super::{NodeKind, TopoLink, TopoNode, Topology};
use crate::hw::link::{LinkId, LinkParams};
use crate::hw::sim::{Device, NodeId, PortRef, Simulator};
use crate::hw::switch::Switch;
use ipoib_proto::rng::Rng;
use ipoib_wire::Rate;

/// What [`build`] made.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Built {
    /// The simulator node of each topology node (same index).
    pub nodes: Vec<NodeId>,
    /// The simulator link of each topology link (same index).
    pub links: Vec<LinkId>,
}

/// Link parameters for a cable: `base`, with the data rate of the cable's rate when it has one
/// (taken as the signalling rate).
pub fn link_params(link: &TopoLink, base: LinkParams) -> LinkParams {
    match link.rate.and_then(Rate::mbps) {
        Some(mbps) => LinkParams {
            bits_per_second: u64::from(mbps) * 1_000_000,
            ..base
        },
        None => base,
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
    sim.reserve(topo.nodes().len(), topo.links().len());
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
