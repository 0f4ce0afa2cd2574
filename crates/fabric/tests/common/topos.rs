//! Small topologies the SM scenario tests share: hosts and switches with fixed GUIDs, and a chain
//! of three switches.

use ipoib_fabric::hw::topology::{End, NodeKind, Topology};
use ipoib_wire::Guid;

/// `hosts` one-port CAs `h0`.. (GUIDs 0x100 + 2i), then `switches` 4-port switches `sw0`..
/// (GUIDs 0x200 + i), added to `t`: their node indices.
pub fn hosts_and_switches(
    t: &mut Topology,
    hosts: usize,
    switches: usize,
) -> (Vec<usize>, Vec<usize>) {
    let h = (0..hosts)
        .map(|i| t.add_node(NodeKind::Ca, format!("h{i}"), Guid(0x100 + 2 * i as u64), 1))
        .collect();
    let s = (0..switches)
        .map(|i| {
            t.add_node(
                NodeKind::Switch,
                format!("sw{i}"),
                Guid(0x200 + i as u64),
                4,
            )
        })
        .collect();
    (h, s)
}

/// h0 - sw0 - sw1 - sw2 - h1, with h2 on sw1: three switches in a row.
pub fn chain() -> Topology {
    let mut t = Topology::new();
    let (h, s) = hosts_and_switches(&mut t, 3, 3);
    let e = |node, port| End { node, port };
    t.connect(e(h[0], 1), e(s[0], 1), None, None).unwrap();
    t.connect(e(s[0], 2), e(s[1], 1), None, None).unwrap();
    t.connect(e(s[1], 2), e(s[2], 1), None, None).unwrap();
    t.connect(e(s[2], 2), e(h[1], 1), None, None).unwrap();
    t.connect(e(s[1], 3), e(h[2], 1), None, None).unwrap();
    t
}

/// The chain with a cable from sw0's port 3 to sw2's port 3 too: three switches in a ring (sw0,
/// sw1, sw2 are the chain's nodes 3, 4, 5).
pub fn ring() -> Topology {
    let mut t = chain();
    let e = |node, port| End { node, port };
    t.connect(e(3, 3), e(5, 3), None, None).unwrap();
    t
}
