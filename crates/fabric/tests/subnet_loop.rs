//! Forwarding loops: switches whose tables send a packet round a cycle (hand-written LFTs, or
//! two masters of different SM_Keys that ignore each other and program the subnet each its own
//! way, docs/OPENSM-NOTES.md). A switch discards a packet already forwarded by
//! `SWITCH_HOP_LIMIT` switches (the switch lifetime limit, IBA 1 §18.2.5.4;
//! `ipoib_fabric::hw::switch`), counted as `SwitchDropReason::Lifetime` and in the output port's
//! PortXmitDiscards (IBA 1 §16.1.3.5): the simulation stays bounded, and the rest of the fabric
//! works.

mod common;

use common::topos::chain;
use ipoib_fabric::hw::mgmt::Config;
use ipoib_fabric::hw::sim::Device;
use ipoib_fabric::hw::switch::{Switch, SwitchDropReason};
use ipoib_fabric::node::subnet::Subnet;
use ipoib_fabric::testing::*;
use std::time::Duration;

/// Switch `k` of the chain (sw0, sw1, sw2: topology nodes 3, 4, 5).
fn switch(net: &Subnet, k: usize) -> &Switch {
    net.switches().nth(k).expect("a switch").1
}

/// Lifetime drops over every switch.
fn lifetime_drops(net: &Subnet) -> u64 {
    net.switches()
        .map(|(_, s)| s.stats().dropped(SwitchDropReason::Lifetime))
        .sum()
}

/// PortXmitDiscards over every port of every switch.
fn xmit_discards(net: &Subnet) -> u64 {
    net.switches()
        .map(|(_, s)| {
            (1..=s.nports())
                .filter_map(|p| s.port_traffic(p))
                .map(|t| t.xmit_discards)
                .sum::<u64>()
        })
        .sum()
}

// Hand-written LFTs: sw1 sends host 1's LID back to sw0, which sends it to sw1 again. Host 0's
// pings to host 1 go round sw0 - sw1 until the switch that would forward one the 129th time
// discards it; pings between host 0 and host 2 are answered all along; the events the loop costs
// are bounded (one packet is forwarded at most SWITCH_HOP_LIMIT times).
#[test]
fn a_hand_written_loop_ends_at_the_hop_limit() {
    let mut net = Subnet::build(options(chain(), seed(3))).unwrap();
    assert!(net.run_until_joined(at(5)), "every host has carrier");
    // The IPoIB paths to every host are resolved, so that the pings after the loop need no
    // SA query (the SA answers a path, not the loop).
    for s in ping_pairs(&mut net, &all_pairs(3), v4, Duration::from_secs(2)) {
        assert!(rtt(&net, s).is_some(), "{} -> {} before the loop", s.0, s.1);
    }
    let lid1 = net.lid(1);
    let sw1 = net.built().nodes[net.switches().nth(1).unwrap().0];
    let mut lft = switch(&net, 1).lft().to_vec();
    assert_eq!(lft[usize::from(lid1)], 2, "sw1 sends host 1's LID to sw2");
    lft[usize::from(lid1)] = 1; // back to sw0
    net.sim_mut()
        .with_node::<Switch, _>(sw1, |sw, now, tx| sw.configure(now, Config::Lft(lft), tx))
        .unwrap();
    let t = net.sim().now() + Duration::from_millis(1);
    net.sim_mut().run_until(t);
    assert_eq!(switch(&net, 1).lft()[usize::from(lid1)], 1);
    let before = net.sim().stats().events;
    let pings = ping_pairs(
        &mut net,
        &[(0, 1), (0, 2), (2, 0)],
        v4,
        Duration::from_secs(2),
    );
    let events = net.sim().stats().events - before;
    assert_eq!(rtt(&net, pings[0]), None, "0 -> 1 goes round the loop");
    assert!(rtt(&net, pings[1]).is_some() && rtt(&net, pings[2]).is_some());
    let drops = lifetime_drops(&net);
    assert!(drops >= 1, "the looping echo request was discarded");
    assert_eq!(
        xmit_discards(&net),
        drops,
        "and counted in PortXmitDiscards"
    );
    // Only sw0 and sw1 are on the loop: the discard is at one of them.
    assert_eq!(
        switch(&net, 2).stats().dropped(SwitchDropReason::Lifetime),
        0
    );
    // 2 s of a quiet subnet with a few pings is some thousands of events; a packet going round
    // unbounded would be millions (one hop every few hundred nanoseconds).
    assert!(events < 100_000, "{events} events in 2 s");
    // Undo the loop: host 1 is reachable again.
    let mut lft = switch(&net, 1).lft().to_vec();
    lft[usize::from(lid1)] = 2;
    net.sim_mut()
        .with_node::<Switch, _>(sw1, |sw, now, tx| sw.configure(now, Config::Lft(lft), tx))
        .unwrap();
    let s = ping_pairs(&mut net, &[(0, 1)], v4, Duration::from_secs(2));
    assert!(rtt(&net, s[0]).is_some(), "0 -> 1 after the loop is undone");
}

// docs/OPENSM-NOTES.md "SM_Key": two SMs of different SM_Keys ignore each other's SMInfo and
// both master the subnet, each assigning LIDs and programming the switches its own way: hosts 0
// and 1 end with one LID, and the tables send packets round loops. Before the hop limit, 70 ms of
// this made 2 million events and the capture grew without end; now the looping packets are
// discarded and the subnet goes quiet (no host joins: neither master's SA is reachable by all).
#[test]
fn two_masters_of_different_keys_make_loops_that_end() {
    use ipoib_fabric::node::sm::ElectionSettings;
    let mut net = Subnet::build(options(chain(), seed(11))).unwrap();
    let other = ElectionSettings {
        sm_key: 2,
        ..ElectionSettings::default()
    };
    net.add_sm(1, other).unwrap();
    let t = net.sim().now() + Duration::from_secs(2);
    net.sim_mut().run_until(t);
    assert_eq!(net.lid(0), net.lid(1), "a duplicate LID");
    let drops = lifetime_drops(&net);
    assert!(drops > 0, "packets went round a loop");
    assert_eq!(xmit_discards(&net), drops);
    let (events, captured) = (net.sim().stats().events, net.sim().stats().packets);
    assert!(events < 20_000, "{events} events in 2 s");
    // Pings (to LIDs the SA may not know) add no loop without end either.
    let _ = ping_pairs(&mut net, &all_pairs(3), v4, Duration::from_secs(2));
    let t = net.sim().now() + Duration::from_secs(10);
    net.sim_mut().run_until(t);
    let more = net.sim().stats().events - events;
    assert!(more < 20_000, "{more} events in the next 12 s");
    let more_packets = net.sim().stats().packets - captured;
    assert!(more_packets < 20_000, "{more_packets} packets on the links");
}

// The same two masters on a fat tree of 32 hosts, a topology with cycles: every looping packet
// ends at the hop limit, and 10 s of the fight stay some tens of thousands of events. (A
// multicast loop whose copies multiply at each switch would not be bounded by the hop limit
// alone, docs/CONFORMANCE.md; this seed's tables make none.)
#[test]
fn two_masters_on_a_fat_tree_stay_bounded() {
    use ipoib_fabric::hw::topology::Topology;
    use ipoib_fabric::node::sm::ElectionSettings;
    let mut net = Subnet::build(options(Topology::fat_tree(32).unwrap(), seed(11))).unwrap();
    let other = ElectionSettings {
        sm_key: 2,
        ..ElectionSettings::default()
    };
    net.add_sm(31, other).unwrap();
    let t = net.sim().now() + Duration::from_secs(10);
    net.sim_mut().run_until(t);
    let drops = lifetime_drops(&net);
    assert!(drops > 0, "packets went round loops");
    assert_eq!(xmit_discards(&net), drops);
    let events = net.sim().stats().events;
    assert!(events < 200_000, "{events} events in 10 s");
}
