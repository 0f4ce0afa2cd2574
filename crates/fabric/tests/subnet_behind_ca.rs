//! Ports reachable only through a channel adapter: a CA does not forward directed-route SMPs
//! (IBA 1 §14.2.2; it answers PortInfo for the port the SMP came in on, §14.2.5.6), so the SM
//! reaches a CA port only over switches, on a path that ends at that port. Ports and switches
//! behind another CA get no LID and stay down, and a host runs on its first port the SM reaches.

use ipoib_fabric::hw::mgmt::PortState;
use ipoib_fabric::hw::topology::{End, Topology};
use ipoib_fabric::node::subnet::{JoinProblem, Subnet};
use ipoib_fabric::testing::nets::{B2B, B2B_SM, ISO};
use ipoib_fabric::testing::{all_pairs, options, ping_pairs, rtt, seed, up, v4, SeedGuard};
use ipoib_fabric::Instant;
use std::time::Duration;

fn port(net: &Subnet, i: usize, port: u8) -> ipoib_fabric::hw::hca::Port {
    net.host_device(i).hca().port(port).expect("port").clone()
}

#[test]
fn port_behind_a_ca_gets_no_lid_and_the_host_runs_on_its_reached_port() {
    let seed = seed(3);
    let _g = SeedGuard(seed);
    let topo = Topology::parse_net(ISO).unwrap();
    let mut net = up(options(topo, seed), false);
    assert_eq!(net.host_count(), 2);
    let h2 = 1;
    assert_eq!(
        net.host(h2).port,
        2,
        "H2 runs on port 2, the one the SM reaches"
    );
    assert_eq!(net.ipoib_app(h2).map(|a| a.port()), Some(2));
    let (p1, p2) = (port(&net, h2, 1), port(&net, h2, 2));
    assert_eq!((p2.state, p2.lid), (PortState::Active, 3));
    assert_eq!(p1.lid, 0, "H2 port 1 is behind H2 itself");
    assert_ne!(p1.state, PortState::Active);
    // Topology nodes: S1 0, S2 1, H1 2, H2 3.
    assert_eq!(
        net.behind_ca(),
        &[End { node: 1, port: 0 }, End { node: 3, port: 1 }]
    );
    let sm = net.plan();
    assert_eq!(sm.lid(1, 0), None, "S2");
    assert_eq!(sm.hops_from_sm(1), None);
    assert_eq!(sm.max_lid(), 3, "H1, S1, H2 port 2");
    assert!(net.join_problems(h2).is_empty());
    for s in ping_pairs(&mut net, &all_pairs(2), v4, Duration::from_secs(2)) {
        assert!(rtt(&net, s).is_some(), "{} -> {} unanswered", s.0, s.1);
    }
}

#[test]
fn ca_cabled_back_to_back_to_another_host_gets_no_lid() {
    let seed = seed(3);
    let _g = SeedGuard(seed);
    let topo = Topology::parse_net(B2B).unwrap();
    let mut net = Subnet::build(options(topo, seed)).unwrap();
    assert!(!net.run_until_joined(Instant::ZERO + Duration::from_secs(5)));
    assert_eq!(net.host_count(), 3);
    let (h2, h3) = (1, 2);
    assert_eq!(net.host(h2).port, 2);
    assert!(net.is_joined(h2) && net.join_problems(h2).is_empty());
    for (i, p) in [(h2, 1), (h3, 1)] {
        let p = port(&net, i, p);
        assert_eq!(p.lid, 0, "host {i} port {}", p.num);
        assert_ne!(p.state, PortState::Active, "host {i} port {}", p.num);
    }
    // Topology nodes: S1 0, H1 1, H2 2, H3 3.
    assert_eq!(
        net.behind_ca(),
        &[End { node: 2, port: 1 }, End { node: 3, port: 1 }]
    );
    assert_eq!(net.join_problems(h3), vec![JoinProblem::BehindCa]);
    assert_eq!(net.plan().max_lid(), 3);
}

#[test]
fn ca_cabled_back_to_back_to_the_sm_is_reached() {
    let seed = seed(3);
    let _g = SeedGuard(seed);
    let topo = Topology::parse_net(B2B_SM).unwrap();
    let net = up(options(topo, seed), false);
    assert_eq!((net.lid(0), net.lid(1)), (1, 2));
    assert!(net.behind_ca().is_empty());
    assert_eq!(net.plan().hops_from_sm(1), Some(1));
}
