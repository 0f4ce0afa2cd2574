//! IPoIB over UD on the emulated subnet: port events (docs/DEPLOYED.md "Linux IPoIB" flush
//! levels, draft-ietf-ipoib-ip-over-infiniband-06 §5). A host's cable goes down and up (the SM's
//! sweep activates the port again), and the SM moves a host to another LID; in both cases the
//! interface drops carrier, flushes, joins the broadcast group again, and pings between every pair
//! work again promptly: peers learn the new LID from the host's gratuitous ARP instead of waiting
//! for their neighbour entries to age.

use ipoib_fabric::hw::sim::PortRef;
use ipoib_fabric::hw::topology::Topology;
use ipoib_fabric::testing::*;
use std::time::Duration;

fn all_answered(net: &ipoib_fabric::node::subnet::Subnet, sent: &[Sent], within: Duration) {
    for &s in sent {
        let r = rtt(net, s).unwrap_or_else(|| panic!("{} -> {} unanswered", s.0, s.1));
        assert!(r < within, "{} -> {}: {r:?}", s.0, s.1);
    }
}

// Linux `ipoib_event` → normal flush on port down/up: carrier down, paths and neighbours flushed,
// broadcast join again (§5), gratuitous ARP at carrier up (RFC 5227 §3 announcement).
#[test]
fn link_down_and_up_then_pings_recover() {
    let seed = seed(51);
    let _g = SeedGuard(seed);
    let n = 5;
    let mut net = up(options(Topology::single_switch(n).unwrap(), seed), false);
    let sent = ping_pairs(&mut net, &all_pairs(n), v4, Duration::from_secs(1));
    all_answered(&net, &sent, Duration::from_millis(5));
    let victim = 2;
    let node = net.host(victim).node;
    let link = net.sim().link_of(PortRef { node, port: 1 }).unwrap();
    let t = net.sim().now();
    net.sim_mut()
        .schedule_link_state(link, t + Duration::from_micros(10), false);
    net.sim_mut().run_for(Duration::from_millis(1));
    assert!(!app(&net, victim).carrier(), "carrier lost with the port");
    assert!(
        net.interface(victim).unwrap().neighbours().is_empty(),
        "neighbours flushed"
    );
    assert!(
        net.interface(victim).unwrap().paths().is_empty(),
        "paths flushed"
    );
    let t = net.sim().now();
    net.sim_mut()
        .schedule_link_state(link, t + Duration::from_micros(10), true);
    match net.smp_sm().map(|a| a.stats().traps) {
        // Our SM by SMPs: the switch's trap 128 makes it sweep, and the sweep activates the
        // port again (IBA 1 §14.2.5.1, OpenSM's heavy sweep).
        Some(traps) => {
            assert!(net.run_until_joined(net.sim().now() + Duration::from_secs(5)));
            assert!(net.smp_sm().unwrap().stats().traps > traps, "trap 128");
        }
        None => {
            net.sim_mut().run_for(Duration::from_millis(1));
            assert!(
                !app(&net, victim).carrier(),
                "port Init: no carrier before the SM activates it"
            );
            assert!(net.sweep_port(victim));
            assert!(net.run_until_joined(net.sim().now() + Duration::from_secs(5)));
        }
    }
    let log: Vec<bool> = app(&net, victim)
        .carrier_log()
        .iter()
        .map(|c| c.1)
        .collect();
    assert_eq!(log, vec![true, false, true]);
    let pairs: Vec<(usize, usize)> = all_pairs(n)
        .into_iter()
        .filter(|&(a, b)| a == victim || b == victim)
        .collect();
    let sent = ping_pairs(&mut net, &pairs, v4, Duration::from_secs(1));
    all_answered(&net, &sent, Duration::from_millis(5));
}

// Linux `ipoib_event` → normal flush on a LID change; peers learn the new LID when they hear the
// host again (its gratuitous ARP), re-asking the SA for the path (proto `rx.rs` `note_source`).
#[test]
fn lid_moved_by_the_sm_then_pings_recover() {
    let seed = seed(52);
    let _g = SeedGuard(seed);
    let n = 20;
    let mut net = up(options(Topology::fat_tree(n).unwrap(), seed), false);
    let sent = ping_pairs(&mut net, &all_pairs(n), v4, Duration::from_secs(1));
    all_answered(&net, &sent, Duration::from_millis(5));
    let moved = 19;
    let old = net.lid(moved);
    net.move_lid(moved, 0x300).unwrap();
    assert!(
        net.move_lid(moved, net.lid(3)).is_err(),
        "a LID in use is refused"
    );
    net.sim_mut().run_for(Duration::from_micros(50));
    assert_eq!(net.lid(moved), 0x300);
    assert!(net.run_until_joined(net.sim().now() + Duration::from_secs(5)));
    net.sim_mut().run_for(Duration::from_millis(1));
    let log: Vec<bool> = app(&net, moved).carrier_log().iter().map(|c| c.1).collect();
    assert_eq!(log, vec![true, false, true], "normal flush and rejoin");
    let pairs: Vec<(usize, usize)> = all_pairs(n)
        .into_iter()
        .filter(|&(a, b)| a == moved || b == moved)
        .collect();
    let sent = ping_pairs(&mut net, &pairs, v4, Duration::from_secs(1));
    all_answered(&net, &sent, Duration::from_millis(5));
    for a in (0..n).filter(|&a| a != moved) {
        let p = net
            .interface(a)
            .unwrap()
            .paths()
            .into_iter()
            .find(|(g, _)| *g == net.gid(moved))
            .expect("path to the moved host");
        assert_eq!(
            p.1.dlid, 0x300,
            "host {a}: new LID from the SA (old {old:#x})"
        );
    }
}

// IBA 1 §7.2: after a cable comes back both its ports are in Init; `Subnet::sweep_port` makes
// the switch's port Active as well as the host's (as OpenSM's sweep does), before our SM's own
// sweep (triggered by the switch's trap 128) has had time to.
#[test]
fn sweep_port_activates_the_switch_port_too() {
    use ipoib_fabric::hw::mgmt::PortState;
    use ipoib_fabric::hw::switch::Switch;
    let seed = seed(52);
    let _g = SeedGuard(seed);
    let mut net = up(options(Topology::single_switch(3).unwrap(), seed), false);
    let node = net.host(1).node;
    let link = net.sim().link_of(PortRef { node, port: 1 }).unwrap();
    let sw = *net
        .sim()
        .link(link)
        .ends
        .iter()
        .find(|e| e.node != node)
        .unwrap();
    let state = |net: &ipoib_fabric::node::subnet::Subnet| {
        net.sim()
            .node::<Switch>(sw.node)
            .unwrap()
            .port_state(sw.port)
    };
    let t = net.sim().now();
    net.sim_mut().schedule_link_state(link, t, false);
    net.sim_mut().run_for(Duration::from_micros(1));
    net.sim_mut()
        .schedule_link_state(link, t + Duration::from_micros(2), true);
    net.sim_mut().run_for(Duration::from_micros(2));
    assert_eq!(state(&net), Some(PortState::Init));
    assert!(net.sweep_port(1));
    net.sim_mut().run_for(Duration::from_micros(2));
    assert_eq!(state(&net), Some(PortState::Active));
}
