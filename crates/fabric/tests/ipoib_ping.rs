//! IPoIB over UD on the emulated subnet: address resolution and ping between every pair
//! of hosts of a fat tree, IPv4 (ARP, draft-ietf-ipoib-ip-over-infiniband-06 §9.2) and IPv6
//! (link-local addresses §8, Neighbor Discovery with the IPoIB link-layer option §9.3), through
//! the real SA (PathRecords, §9.1 g), switches and HCAs.

use ipoib_fabric::hw::topology::Topology;
use ipoib_fabric::node::ipoib::ResolutionKind;
use ipoib_fabric::testing::*;
use ipoib_proto::ipoib::NeighbourState;
use std::net::IpAddr;
use std::time::Duration;

/// Every host's neighbour entry for every other host's `addr` is resolved to that host's
/// link-layer address (§9.1.1: flags, UD QPN, port GID).
fn assert_neighbours(
    net: &ipoib_fabric::node::subnet::Subnet,
    n: usize,
    addr: fn(&ipoib_fabric::node::subnet::Subnet, usize) -> IpAddr,
) {
    for a in 0..n {
        let table = net.interface(a).unwrap().neighbours();
        for b in (0..n).filter(|&b| b != a) {
            let ip = addr(net, b);
            let e = table
                .iter()
                .find(|e| e.ip == ip)
                .unwrap_or_else(|| panic!("host {a} has no entry for {ip}"));
            assert_eq!(
                e.hw,
                Some(net.interface(b).unwrap().hw_addr()),
                "{a} -> {ip}"
            );
            assert!(
                matches!(e.state, NeighbourState::Reachable { .. }),
                "{a} -> {ip}: {:?}",
                e.state
            );
        }
    }
}

// draft-ietf-ipoib-ip-over-infiniband-06 §9.2 (ARP over the broadcast group, unicast reply to the
// requester's QPN, hardware type 32, 20-byte addresses), §9.1.1 b, §9.1 g (PathRecord per
// destination GID), §2 (IP over UD).
#[test]
fn ipv4_arp_then_ping_all_pairs() {
    let seed = seed(7);
    let _g = SeedGuard(seed);
    let n = 12;
    let mut net = up(options(Topology::fat_tree(n).unwrap(), seed), false);
    let pairs = all_pairs(n);
    let sent = ping_pairs(&mut net, &pairs, v4, Duration::from_secs(2));
    for &s in &sent {
        let r = rtt(&net, s).unwrap_or_else(|| panic!("{} -> {} unanswered", s.0, s.1));
        assert!(r < Duration::from_millis(5), "{r:?}");
    }
    assert_neighbours(&net, n, v4);
    for a in 0..n {
        let app = app(&net, a);
        let tx = app.tx_stats();
        // Gratuitous ARP at carrier up, then one request per peer it had to resolve (a peer that
        // asked first is learned from its request, §9.2 / RFC 826).
        assert!(tx.arp_requests >= 1, "host {a}: {tx:?}");
        assert!(app.ip().counters().echo_answered >= (n - 1) as u64);
        // Each resolution was learned from a reply carrying the peer's 20-byte address.
        for r in app.resolutions() {
            assert_eq!(r.kind, ResolutionKind::Arp);
            let b = (0..n).find(|&b| v4(&net, b) == r.ip).expect("a host");
            assert_eq!(r.hw, net.interface(b).unwrap().hw_addr());
        }
        // One PathRecord per destination GID (§9.1 g; Linux path cache keyed by DGID).
        let paths = net.interface(a).unwrap().paths();
        assert_eq!(paths.len(), n - 1, "host {a}");
        for (gid, p) in paths {
            let b = (0..n).find(|&b| net.gid(b) == gid).expect("a host GID");
            assert_eq!(p.dlid, net.lid(b));
        }
    }
    // Second round: everything resolved, no more ARP or SA traffic, faster.
    let arp_before: u64 = (0..n).map(|a| app(&net, a).tx_stats().arp_requests).sum();
    let sa_before = net.sa().stats().requests;
    let again = ping_pairs(&mut net, &pairs, v4, Duration::from_secs(1));
    for (&s1, &s2) in sent.iter().zip(&again) {
        assert!(
            rtt(&net, s2).unwrap() < rtt(&net, s1).unwrap(),
            "cached: faster"
        );
    }
    let arp_after: u64 = (0..n).map(|a| app(&net, a).tx_stats().arp_requests).sum();
    assert_eq!(arp_after, arp_before);
    assert_eq!(net.sa().stats().requests, sa_before);
}

// draft-ietf-ipoib-ip-over-infiniband-06 §8 (link-local address from the port GUID, DAD), §9.3
// (NS/NA with the IPoIB link-layer address option), §2.
#[test]
fn ipv6_link_local_nd_then_ping_all_pairs() {
    let seed = seed(8);
    let _g = SeedGuard(seed);
    let n = 10;
    let mut net = up(options(Topology::fat_tree(n).unwrap(), seed), true);
    for i in 0..n {
        let guid = net.host_device(i).hca().port(1).unwrap().guid;
        assert_eq!(
            v6(&net, i),
            IpAddr::V6(ipoib_wire::ipoib::addr::link_local_from_guid(guid)),
            "§8"
        );
    }
    let sent = ping_pairs(&mut net, &all_pairs(n), v6, Duration::from_secs(2));
    for &s in &sent {
        assert!(rtt(&net, s).is_some(), "{} -> {} unanswered", s.0, s.1);
    }
    assert_neighbours(&net, n, v6);
    for a in 0..n {
        let app = app(&net, a);
        assert!(app.tx_stats().nd_solicits >= 1, "DAD and resolution NS");
        assert!(app.tx_stats().nd_adverts >= 1);
        assert!(app.tx_stats().arp_requests >= 1, "gratuitous ARP only");
        let nd: Vec<_> = app
            .resolutions()
            .iter()
            .filter(|r| r.kind == ResolutionKind::Nd)
            .collect();
        assert!(!nd.is_empty(), "host {a} resolved by ND");
        for r in nd {
            let b = (0..n).find(|&b| v6(&net, b) == r.ip).expect("a host");
            assert_eq!(r.hw, net.interface(b).unwrap().hw_addr(), "§9.3 option");
        }
    }
}
