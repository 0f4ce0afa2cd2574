//! Forwarding loops: switches whose tables send a packet round a cycle (hand-written LFTs, or
//! two masters of different SM_Keys that ignore each other and program the subnet each its own
//! way, docs/OPENSM-NOTES.md). A switch discards a packet already forwarded by
//! `SWITCH_HOP_LIMIT` switches (the switch lifetime limit, IBA 1 §18.2.5.4;
//! `ipoib_fabric::hw::switch`), counted as `SwitchDropReason::Lifetime` and in the output port's
//! PortXmitDiscards (IBA 1 §16.1.3.5): the simulation stays bounded, and the rest of the fabric
//! works. A multicast loop whose copies multiply is bounded by the switch ports' buffers instead
//! (`SWITCH_PORT_BUFFER`, `SwitchDropReason::BufferFull`).

mod common;

use common::topos::{chain, ring};
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

/// PortRcvSwitchRelayErrors over every port of every switch.
fn relay_errors(net: &Subnet) -> u64 {
    net.switches()
        .map(|(_, s)| {
            (1..=s.nports())
                .filter_map(|p| s.port_traffic(p))
                .map(|t| t.rcv_switch_relay_errors)
                .sum::<u64>()
        })
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

/// Sets entry `lid` of switch `k`'s LFT to `port`, and lets the write settle.
fn route(net: &mut Subnet, k: usize, lid: u16, port: u8) {
    let node = net.built().nodes[net.switches().nth(k).unwrap().0];
    let mut lft = switch(net, k).lft().to_vec();
    lft[usize::from(lid)] = port;
    net.sim_mut()
        .with_node::<Switch, _>(node, |sw, now, tx| sw.configure(now, Config::Lft(lft), tx))
        .unwrap();
    let t = net.sim().now() + Duration::from_millis(1);
    net.sim_mut().run_until(t);
}

/// Brings `net` up and resolves the IPoIB paths between every pair of its `n` hosts, so that the
/// pings after a hand-written loop need no SA query (the SA answers a path, not the loop).
fn up_and_resolved(net: &mut Subnet, n: usize) {
    assert!(net.run_until_joined(at(5)), "every host has carrier");
    for s in ping_pairs(net, &all_pairs(n), v4, Duration::from_secs(2)) {
        assert!(rtt(net, s).is_some(), "{} -> {} before the loop", s.0, s.1);
    }
}

// Hand-written LFTs round a ring of three switches: sw2 sends host 1's LID to sw1, sw1 to sw0,
// and sw0 to sw2, each out of another port than the packet came in by. Host 0's pings to host 1
// go round until the switch that would forward one the 129th time discards it; pings between
// host 0 and host 2 are answered all along; the events the loop costs are bounded (one packet
// is forwarded at most SWITCH_HOP_LIMIT times).
#[test]
fn a_hand_written_loop_ends_at_the_hop_limit() {
    let mut net = Subnet::build(options(ring(), seed(3))).unwrap();
    up_and_resolved(&mut net, 3);
    let lid1 = net.lid(1);
    assert_eq!(
        switch(&net, 0).lft()[usize::from(lid1)],
        3,
        "sw0 - sw2 direct"
    );
    let was = [1, 2].map(|k| switch(&net, k).lft()[usize::from(lid1)]);
    route(&mut net, 2, lid1, 1); // sw2 to sw1
    route(&mut net, 1, lid1, 1); // sw1 to sw0
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
    assert_eq!(
        relay_errors(&net),
        0,
        "no switch sent one back where it came from"
    );
    // 2 s of a quiet subnet with a few pings is some thousands of events; a packet going round
    // unbounded would be millions (one hop every few hundred nanoseconds).
    assert!(events < 100_000, "{events} events in 2 s");
    // Undo the loop: host 1 is reachable again.
    route(&mut net, 1, lid1, was[0]);
    route(&mut net, 2, lid1, was[1]);
    let s = ping_pairs(&mut net, &[(0, 1)], v4, Duration::from_secs(2));
    assert!(rtt(&net, s[0]).is_some(), "0 -> 1 after the loop is undone");
}

// A loop of two switches joined by one cable cannot go round: sw1 sending host 1's LID back to sw0 sends it out of
// the port it came in by, which the relay refuses (IBA 1 §16.1.3.5 PortRcvSwitchRelayErrors,
// looping: the output port the input port). Host 0's pings to host 1 end at sw1, each counted
// once in its port 1's PortRcvSwitchRelayErrors; none is forwarded again, none reaches the hop
// limit; pings between host 0 and host 2 are answered.
#[test]
fn a_route_back_out_of_the_arrival_port_is_a_relay_error() {
    let mut net = Subnet::build(options(chain(), seed(3))).unwrap();
    up_and_resolved(&mut net, 3);
    let lid1 = net.lid(1);
    assert_eq!(
        switch(&net, 1).lft()[usize::from(lid1)],
        2,
        "sw1 sends host 1's LID to sw2"
    );
    route(&mut net, 1, lid1, 1); // back to sw0
    let pings = ping_pairs(
        &mut net,
        &[(0, 1), (0, 2), (2, 0)],
        v4,
        Duration::from_secs(2),
    );
    assert_eq!(rtt(&net, pings[0]), None, "0 -> 1 ends at sw1");
    assert!(rtt(&net, pings[1]).is_some() && rtt(&net, pings[2]).is_some());
    let looping = switch(&net, 1).stats().dropped(SwitchDropReason::Looping);
    assert!(looping >= 1, "the echo request was discarded at sw1");
    let t = switch(&net, 1).port_traffic(1).unwrap();
    assert_eq!(t.rcv_switch_relay_errors, looping);
    assert_eq!(t.counters(1).port_rcv_switch_relay_errors, looping as u16);
    assert_eq!(relay_errors(&net), looping, "on sw1's port 1 only");
    assert_eq!((lifetime_drops(&net), xmit_discards(&net)), (0, 0));
    route(&mut net, 1, lid1, 2);
    let s = ping_pairs(&mut net, &[(0, 1)], v4, Duration::from_secs(2));
    assert!(
        rtt(&net, s[0]).is_some(),
        "0 -> 1 after the route is undone"
    );
}

// Two switches joined by two cables make a loop that goes round: sw1 sending host 1's LID back
// to sw0 by the cable the packet did not come in by is no route back out of the arrival port
// (IBA 1 §16.1.3.5 looping is the output port the input port, not the output switch the input
// switch), and sw0 forwards it again by the first cable. Host 0's pings to host 1 end at the hop
// limit, as round a ring of three, and no switch counts a relay error.
#[test]
fn a_loop_of_two_switches_over_two_cables_ends_at_the_hop_limit() {
    use common::topos::hosts_and_switches;
    use ipoib_fabric::hw::topology::{End, Topology};
    let mut t = Topology::new();
    let (h, s) = hosts_and_switches(&mut t, 2, 2);
    let e = |node, port| End { node, port };
    t.connect(e(h[0], 1), e(s[0], 1), None, None).unwrap();
    t.connect(e(h[1], 1), e(s[1], 1), None, None).unwrap();
    for p in 2..=3 {
        t.connect(e(s[0], p), e(s[1], p), None, None).unwrap();
    }
    let mut net = Subnet::build(options(t, seed(3))).unwrap();
    up_and_resolved(&mut net, 2);
    let lid1 = net.lid(1);
    let there = switch(&net, 0).lft()[usize::from(lid1)];
    assert!(there == 2 || there == 3, "sw0 sends host 1's LID to sw1");
    let was = switch(&net, 1).lft()[usize::from(lid1)];
    route(&mut net, 1, lid1, 5 - there); // back to sw0 by the other cable
    let before = net.sim().stats().events;
    let pings = ping_pairs(&mut net, &[(0, 1)], v4, Duration::from_secs(2));
    let events = net.sim().stats().events - before;
    assert_eq!(rtt(&net, pings[0]), None, "0 -> 1 goes round the loop");
    let drops = lifetime_drops(&net);
    assert!(drops >= 1, "the looping echo request was discarded");
    assert_eq!(xmit_discards(&net), drops);
    assert_eq!(relay_errors(&net), 0, "no packet was sent back its way");
    assert!(events < 100_000, "{events} events in 2 s");
    route(&mut net, 1, lid1, was);
    let s = ping_pairs(&mut net, &[(0, 1)], v4, Duration::from_secs(2));
    assert!(rtt(&net, s[0]).is_some(), "0 -> 1 after the loop is undone");
}

// docs/OPENSM-NOTES.md "SM_Key": two SMs of different SM_Keys ignore each other's SMInfo and
// both master the subnet, each assigning LIDs and programming the switches its own way: hosts 0
// and 1 end with one LID, and the tables send packets round loops. Before the hop limit, 70 ms of
// this made 2 million events and the capture grew without end; now the looping packets are
// discarded (on this chain, by the switch that would send one back where it came from: a relay
// error, IBA 1 §16.1.3.5) and the subnet goes quiet (no host joins: neither master's SA is
// reachable by all).
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
    // A chain has no cycle: each loop is two switches sending a packet back and forth, which
    // the second ends by refusing to send it back out of the port it came in by.
    let looping: u64 = net
        .switches()
        .map(|(_, s)| s.stats().dropped(SwitchDropReason::Looping))
        .sum();
    assert!(looping > 0, "packets were sent back where they came from");
    assert!(relay_errors(&net) >= looping);
    assert_eq!(xmit_discards(&net), lifetime_drops(&net));
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

// A multicast loop whose copies multiply: two switches cabled three times, every port of both
// (the three cables and a host each) in one MFT entry, one packet. Each copy arriving on a cable
// leaves by the two others, so the copies double at each hop and the hop limit, which bounds the
// hops of one packet, never comes (2^128 copies first). Each switch port's buffer bounds it
// (`SWITCH_PORT_BUFFER`, the simulator's stand-in for credits and the lifetime limits of IBA 1
// §18.2.5.4): the excess is discarded and counted (`BufferFull`, PortXmitDiscards, IBA 1
// §16.1.3.5), no link direction has more than a buffer queued, and once the entry is removed the
// loop's packets are gone within a buffer's time. Without the buffers nothing is discarded, the
// queues grow by a link's time per simulated time (10 ms of loop: 10 to 20 ms queued on every
// direction, some 280,000 packets in memory) and the copies still arrive for 10 ms after the
// entry is removed. The events per simulated time are bounded by the links' rates with or
// without the buffers (a direction delivers at most one packet per serialisation time): that
// bound is checked too, but it is the queues that grew without end.
#[test]
fn a_multiplying_multicast_loop_is_bounded_by_the_switch_port_buffers() {
    use common::topos::hosts_and_switches;
    use ipoib_fabric::hw::switch::SWITCH_PORT_BUFFER;
    use ipoib_fabric::hw::topology::{End, Topology};
    const MLID: u16 = 0xc1f0; // in no group
    const PAYLOAD: usize = 1024;
    let mut t = Topology::new();
    let (h, s) = hosts_and_switches(&mut t, 2, 2);
    let e = |node, port| End { node, port };
    t.connect(e(h[0], 1), e(s[0], 1), None, None).unwrap();
    t.connect(e(h[1], 1), e(s[1], 1), None, None).unwrap();
    for p in 2..=4 {
        t.connect(e(s[0], p), e(s[1], p), None, None).unwrap();
    }
    let mut opts = options(t, seed(5));
    opts.capture = false; // hundreds of thousands of copies
    let mut net = Subnet::build(opts).unwrap();
    assert!(net.run_until_joined(at(5)), "every host has carrier");
    let sws: Vec<_> = net.switches().map(|(i, _)| net.built().nodes[i]).collect();
    let window = Duration::from_millis(10);
    // The subnet's own events in a window, for the bound below.
    let before = net.sim().stats().events;
    let t = net.sim().now() + window;
    net.sim_mut().run_until(t);
    let quiet = net.sim().stats().events - before;

    for &sw in &sws {
        let ports = vec![1, 2, 3, 4];
        net.sim_mut()
            .with_node::<Switch, _>(sw, |sw, now, tx| {
                sw.configure(now, Config::Mft { mlid: MLID, ports }, tx)
            })
            .unwrap();
    }
    let packet =
        ipoib_fabric::testing::ud_packet(net.lid(0), MLID, PAYLOAD, ipoib_wire::PKey::DEFAULT);
    let len = packet.len();
    let before = net.sim().stats().events;
    // As if host 0 sent it: it arrives on sw0's port 1.
    net.sim_mut()
        .with_node::<Switch, _>(sws[0], |sw, now, tx| sw.receive(now, 1, packet, tx))
        .unwrap();
    let t = net.sim().now() + window;
    net.sim_mut().run_until(t);
    let events = net.sim().stats().events - before;

    // Each link direction delivers at most one copy per serialisation time; the six directions
    // of the cables and the two toward the hosts carry copies, and the subnet its own events.
    let links = net.sim().links();
    let per_dir: u64 = links
        .iter()
        .map(|l| 2 * (window.as_nanos() / l.params.serialisation(len).as_nanos()) as u64 + 2)
        .sum();
    assert!(
        events <= per_dir + 2 * quiet,
        "{events} events in {window:?}: more than {per_dir} copies and {quiet} of the subnet's own"
    );
    // No direction holds more than a buffer (and the packet that found it just below full).
    let now = net.sim().now();
    for l in links {
        let limit = l.params.serialisation(SWITCH_PORT_BUFFER + len);
        for d in &l.dirs {
            let queued = d.busy_until.saturating_duration_since(now);
            assert!(queued <= limit, "{queued:?} queued on {:?}", l.ends);
        }
    }
    // The copies beyond the buffers were discarded and counted.
    let full: u64 = net
        .switches()
        .map(|(_, s)| s.stats().dropped(SwitchDropReason::BufferFull))
        .sum();
    let on_links: u64 = links
        .iter()
        .flat_map(|l| &l.dirs)
        .map(|d| d.stats.discarded_full)
        .sum();
    assert!(full > 1000, "{full} copies discarded");
    assert_eq!(on_links, full, "each discard is one the links counted");
    assert_eq!(xmit_discards(&net), full + lifetime_drops(&net));

    // Remove the entry: what is queued drains within a buffer's time, and then no copy moves.
    for &sw in &sws {
        net.sim_mut()
            .with_node::<Switch, _>(sw, |sw, now, tx| {
                sw.configure(
                    now,
                    Config::Mft {
                        mlid: MLID,
                        ports: vec![],
                    },
                    tx,
                )
            })
            .unwrap();
    }
    let delivered = |net: &Subnet| -> u64 {
        net.sim()
            .links()
            .iter()
            .flat_map(|l| &l.dirs)
            .map(|d| d.stats.delivered)
            .sum()
    };
    let t = net.sim().now() + Duration::from_millis(1);
    net.sim_mut().run_until(t);
    let (d0, e0) = (delivered(&net), net.sim().stats().events);
    let t = net.sim().now() + window;
    net.sim_mut().run_until(t);
    let moved = delivered(&net) - d0;
    let events = net.sim().stats().events - e0;
    assert!(
        moved <= quiet + 100 && events <= quiet + 100,
        "{moved} packets and {events} events after the loop is undone ({quiet} when quiet)"
    );
}
