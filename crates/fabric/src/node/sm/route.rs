//! Routing computations: switch-to-switch hop distances (a breadth-first walk from every switch),
//! min-hop LFTs with equal-cost spreading, and the candidate roots and spanning trees of multicast
//! groups. See the parent module's docs for the rules.

use crate::hw::switch::LFT_DROP;
use crate::hw::topology::{NodeKind, Topology};
use std::collections::VecDeque;

/// Unreachable.
pub(super) const INF: u16 = u16::MAX;

/// A switch's place in a multicast spanning tree: its parent switch, its own port towards the
/// parent, and the parent's port towards it.
pub(super) type TreeLink = Option<(usize, u8, u8)>;

#[derive(Debug, Clone)]
pub(super) struct Routing {
    /// LFT per switch (index = LID).
    pub lfts: Vec<Vec<u8>>,
    /// Multicast root candidates (switch indices, ascending).
    pub roots: Vec<usize>,
    /// Spanning tree of each root candidate: per switch, its link to its parent.
    pub trees: Vec<Vec<TreeLink>>,
}

impl Routing {
    pub(super) fn compute(
        topo: &Topology,
        switches: &[usize],
        sw_index: &[Option<usize>],
        lids: &[Vec<u16>],
        nlids: usize,
    ) -> Routing {
        let w = switches.len();
        // Per switch: (own port, neighbour switch, neighbour's port), in port order; and the CA
        // ports cabled to it, (LID, own port).
        let mut adj = vec![Vec::new(); w];
        let mut attached = vec![Vec::new(); w];
        for (s, &node) in switches.iter().enumerate() {
            if lids[node][0] == 0 {
                continue; // not reached by the SM: unconfigured, it forwards nothing
            }
            for p in 1..=topo.nodes()[node].ports {
                let Some((peer, _)) = topo.peer(node, p) else {
                    continue;
                };
                match topo.nodes()[peer.node].kind {
                    NodeKind::Switch => {
                        if let Some(n) = sw_index[peer.node].filter(|_| lids[peer.node][0] != 0) {
                            adj[s].push((p, n, peer.port));
                        }
                    }
                    NodeKind::Ca => {
                        let lid = lids[peer.node][usize::from(peer.port)];
                        if lid != 0 {
                            attached[s].push((lid, p));
                        }
                    }
                }
            }
        }
        // Hop distances, dist[t * w + s], and the LFT entries of every destination at t: one
        // breadth-first walk from each t. When the walk takes switch s (at d hops), every
        // switch at d - 1 hops has its distance already (the walk takes them level by level),
        // so s's ports towards t (to a neighbour at d - 1 hops, in port order) are read in the
        // same look at s's links that finds its unseen neighbours: no second walk over them.
        let mut dist = vec![INF; w * w];
        let mut lfts = vec![vec![LFT_DROP; nlids]; w];
        // The candidate ports of one (switch, destination switch) pair: at most one per port
        // number (a switch has at most 255), so a fixed array; a `Vec` checked its capacity
        // at each of the w x (cabled ports) pushes.
        let mut cand = [0u8; 256];
        let mut dests: Vec<(usize, u8)> = Vec::new();
        let mut queue = VecDeque::with_capacity(w);
        for t in 0..w {
            let own = lids[switches[t]][0];
            // Not reached by the SM: no destination at t (its distances are still walked).
            dests.clear();
            if own != 0 {
                dests.extend(
                    attached[t]
                        .iter()
                        .map(|&(lid, port)| (usize::from(lid), port))
                        .chain(std::iter::once((usize::from(own), 0))),
                );
            }
            let hops = &mut dist[t * w..(t + 1) * w];
            hops[t] = 0;
            queue.clear();
            queue.push_back(t);
            while let Some(s) = queue.pop_front() {
                let d = hops[s];
                if s == t {
                    for &(_, n, _) in &adj[s] {
                        if hops[n] == INF {
                            hops[n] = 1;
                            queue.push_back(n);
                        }
                    }
                    for &(lid, port) in &dests {
                        lfts[s][lid] = port;
                    }
                    continue;
                }
                let mut ncand = 0;
                for &(p, n, _) in &adj[s] {
                    let h = hops[n];
                    if h == INF {
                        hops[n] = d + 1;
                        queue.push_back(n);
                    } else if h == d - 1 {
                        cand[ncand & 0xff] = p;
                        ncand += 1;
                    }
                }
                if ncand == 0 || dests.is_empty() {
                    continue;
                }
                let cand = &cand[..ncand.min(cand.len())];
                // Destination i leaves on candidate (t + i) mod |cand|, counted without a
                // division per entry.
                let lft = &mut lfts[s];
                let mut k = t % cand.len();
                for &(lid, _) in &dests {
                    lft[lid] = cand[k];
                    k += 1;
                    if k == cand.len() {
                        k = 0;
                    }
                }
            }
        }
        // Multicast roots: least total distance to the switches that have CAs.
        let hosting: Vec<usize> = (0..w).filter(|&s| !attached[s].is_empty()).collect();
        let cost = |c: usize| -> u64 {
            hosting
                .iter()
                .map(|&h| match dist[c * w + h] {
                    INF => 1 << 32,
                    d => u64::from(d),
                })
                .sum()
        };
        let costs: Vec<u64> = (0..w).map(cost).collect();
        let best = costs.iter().copied().min();
        let roots: Vec<usize> = if hosting.is_empty() {
            Vec::new()
        } else {
            (0..w).filter(|&c| Some(costs[c]) == best).collect()
        };
        let trees = roots
            .iter()
            .map(|&r| {
                let mut parent = vec![None; w];
                bfs(&adj, r, |s, _, via| parent[s] = via);
                parent
            })
            .collect();
        Routing { lfts, roots, trees }
    }
}

/// Breadth-first walk over switches from `root`, neighbours in port order; calls `visit(switch,
/// hops, link to parent)` once per reached switch.
fn bfs(adj: &[Vec<(u8, usize, u8)>], root: usize, mut visit: impl FnMut(usize, u16, TreeLink)) {
    let mut hops = vec![INF; adj.len()];
    let mut queue = VecDeque::from([root]);
    hops[root] = 0;
    visit(root, 0, None);
    while let Some(s) = queue.pop_front() {
        for &(p, n, np) in &adj[s] {
            if hops[n] == INF {
                hops[n] = hops[s] + 1;
                visit(n, hops[n], Some((s, np, p)));
                queue.push_back(n);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{bfs, Routing, INF};
    use crate::hw::switch::LFT_DROP;
    use crate::hw::topology::{End, NodeKind, Topology};
    use ipoib_wire::Guid;
    use proptest::prelude::*;

    /// The LFTs as computed before the walk and the candidates were merged: every distance
    /// first, then, per destination switch t and switch s, the candidates read by a second
    /// look at s's links.
    fn lfts_two_passes(
        adj: &[Vec<(u8, usize, u8)>],
        attached: &[Vec<(u16, u8)>],
        own: &[u16],
        nlids: usize,
    ) -> Vec<Vec<u8>> {
        let w = adj.len();
        let mut dist = vec![INF; w * w];
        for t in 0..w {
            bfs(adj, t, |s, d, _| dist[t * w + s] = d);
        }
        let mut lfts = vec![vec![LFT_DROP; nlids]; w];
        for t in 0..w {
            if own[t] == 0 {
                continue;
            }
            let dests: Vec<(usize, u8)> = attached[t]
                .iter()
                .map(|&(lid, port)| (usize::from(lid), port))
                .chain(std::iter::once((usize::from(own[t]), 0)))
                .collect();
            let from_t = &dist[t * w..(t + 1) * w];
            for (s, lft) in lfts.iter_mut().enumerate() {
                if s == t {
                    for &(lid, port) in &dests {
                        lft[lid] = port;
                    }
                    continue;
                }
                let d = from_t[s];
                if d == INF {
                    continue;
                }
                let cand: Vec<u8> = adj[s]
                    .iter()
                    .filter(|&&(_, n, _)| from_t[n] == d - 1)
                    .map(|&(p, _, _)| p)
                    .collect();
                if cand.is_empty() {
                    continue;
                }
                for (i, &(lid, _)) in dests.iter().enumerate() {
                    lft[lid] = cand[(t + i) % cand.len()];
                }
            }
        }
        lfts
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(200))]
        // Random subnets (switches cabled at random, parallel cables and switches left out
        // included, CAs on random switches, some switches without a LID): the one-walk LFTs
        // are exactly those of the two-pass computation.
        #[test]
        fn one_walk_gives_the_lfts_of_two_passes(
            switches in 1usize..9,
            cables in prop::collection::vec((0usize..9, 0usize..9), 0..24),
            cas in prop::collection::vec(0usize..9, 0..12),
            unlit in prop::collection::vec(0usize..9, 0..3),
        ) {
            let mut topo = Topology::new();
            let ports = 16u8;
            for i in 0..switches {
                topo.add_node(NodeKind::Switch, format!("s{i}"), Guid(0x100 + i as u64), ports);
            }
            // The next free port of each switch; parallel cables between two switches too.
            let mut next = vec![1u8; switches];
            for &(a, b) in &cables {
                if a < switches && b < switches && a != b && next[a] <= ports && next[b] <= ports {
                    let (ea, eb) = (End { node: a, port: next[a] }, End { node: b, port: next[b] });
                    let cabled = topo.connect(ea, eb, None, None);
                    prop_assert!(cabled.is_ok());
                    next[a] += 1;
                    next[b] += 1;
                }
            }
            let mut ca_ports = Vec::new();
            for (i, &s) in cas.iter().enumerate() {
                if s < switches && next[s] <= ports {
                    let ca = topo.add_node(NodeKind::Ca, format!("h{i}"), Guid(0x900 + i as u64), 1);
                    let e = End { node: s, port: next[s] };
                    let cabled = topo.connect(End { node: ca, port: 1 }, e, None, None);
                    prop_assert!(cabled.is_ok());
                    next[s] += 1;
                    ca_ports.push(ca);
                }
            }
            // LIDs: switches 1.., CAs after; the unlit switches none.
            let mut lids: Vec<Vec<u16>> =
                topo.nodes().iter().map(|n| vec![0; usize::from(n.ports) + 1]).collect();
            let mut lid = 1u16;
            for (s, l) in lids.iter_mut().take(switches).enumerate() {
                if !unlit.contains(&s) {
                    l[0] = lid;
                    lid += 1;
                }
            }
            for &ca in &ca_ports {
                lids[ca][1] = lid;
                lid += 1;
            }
            let nlids = usize::from(lid);
            let sw: Vec<usize> = topo.switches().collect();
            let mut sw_index = vec![None; topo.nodes().len()];
            for (i, &n) in sw.iter().enumerate() {
                sw_index[n] = Some(i);
            }
            let r = Routing::compute(&topo, &sw, &sw_index, &lids, nlids);
            // The reference's inputs, built as `compute` builds them.
            let mut adj = vec![Vec::new(); sw.len()];
            let mut attached = vec![Vec::new(); sw.len()];
            for (s, &node) in sw.iter().enumerate() {
                if lids[node][0] == 0 {
                    continue;
                }
                for p in 1..=topo.nodes()[node].ports {
                    let Some((peer, _)) = topo.peer(node, p) else { continue };
                    match topo.nodes()[peer.node].kind {
                        NodeKind::Switch => {
                            if let Some(n) = sw_index[peer.node].filter(|_| lids[peer.node][0] != 0) {
                                adj[s].push((p, n, peer.port));
                            }
                        }
                        NodeKind::Ca => attached[s].push((lids[peer.node][usize::from(peer.port)], p)),
                    }
                }
            }
            let own: Vec<u16> = sw.iter().map(|&n| lids[n][0]).collect();
            prop_assert_eq!(r.lfts, lfts_two_passes(&adj, &attached, &own, nlids));
        }
    }
}
