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
        // Hop distances, dist[t * w + s].
        let mut dist = vec![INF; w * w];
        for t in 0..w {
            bfs(&adj, t, |s, d, _| dist[t * w + s] = d);
        }
        let mut lfts = vec![vec![LFT_DROP; nlids]; w];
        let mut cand = Vec::new();
        for t in 0..w {
            let own = lids[switches[t]][0];
            if own == 0 {
                continue; // not reached by the SM
            }
            let dests: Vec<(usize, u8)> = attached[t]
                .iter()
                .map(|&(lid, port)| (usize::from(lid), port))
                .chain(std::iter::once((usize::from(own), 0)))
                .collect();
            // Hops from t to every switch (the walk from t).
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
                cand.clear();
                cand.extend(
                    adj[s]
                        .iter()
                        .filter(|&&(_, n, _)| from_t[n] == d - 1)
                        .map(|&(p, _, _)| p),
                );
                if cand.is_empty() {
                    continue;
                }
                // Destination i leaves on candidate (t + i) mod |cand|, counted without a
                // division per entry.
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
