//! A host whose IP stack sends to thousands of unknown on-link addresses (what Linux does for a
//! ping sweep): the interface's tables stay within their bounds (`InterfaceConfig::max_neighbours`,
//! `max_paths`, `queue_len` per entry, `max_mcast_groups` for the solicited-node groups its ND
//! sends to, draft-ietf-ipoib-ip-over-infiniband-06 §9.3, §11), what does not fit is counted by
//! reason, and the other hosts keep resolving and talking to each other meanwhile.

use ipoib_fabric::hw::topology::Topology;
use ipoib_fabric::node::subnet::IpoibOptions;
use ipoib_fabric::testing::*;
use ipoib_proto::ipoib::{DropReason, InterfaceConfig, Ipv4Config};
use std::net::{Ipv4Addr, Ipv6Addr};
use std::time::Duration;

/// Destinations of the flood.
const FLOOD: usize = 10_000;

fn a4(i: usize) -> Ipv4Addr {
    Ipv4Addr::new(10, 0, 0, i as u8 + 1)
}

/// Send-only groups an interface holds at most here: fewer than the neighbour table's entries, so
/// that ND for unknown addresses (one solicited-node group each, RFC 4291 §2.7.1) meets the bound.
const MAX_GROUPS: usize = 64;

/// 10.0.0.0/16 on every host, so that the flood's destinations are on-link.
fn wide(i: usize, c: &mut InterfaceConfig) {
    c.max_mcast_groups = MAX_GROUPS;
    c.ipv4 = Some(Ipv4Config {
        addr: a4(i),
        prefix_len: 16,
        gateway: None,
    });
    c.ipv6_static = vec![(Ipv6Addr::new(0xfd00, 0, 0, 0, 0, 0, 0, i as u16 + 1), 64)];
}

/// A UDP over IPv6 packet (hop limit 64).
fn udp6(src: Ipv6Addr, dst: Ipv6Addr, payload: &[u8]) -> Vec<u8> {
    let mut udp = vec![0u8; 8];
    udp[0..2].copy_from_slice(&40000u16.to_be_bytes());
    udp[2..4].copy_from_slice(&5001u16.to_be_bytes());
    udp[4..6].copy_from_slice(&((8 + payload.len()) as u16).to_be_bytes());
    udp.extend_from_slice(payload);
    let mut sum: u32 = 0;
    let mut add = |b: &[u8]| {
        for c in b.chunks(2) {
            sum += u32::from(u16::from_be_bytes([c[0], *c.get(1).unwrap_or(&0)]));
        }
    };
    add(&src.octets());
    add(&dst.octets());
    add(&(udp.len() as u32).to_be_bytes());
    add(&[0, 0, 0, 17]);
    add(&udp);
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    let c = !(sum as u16);
    udp[6..8].copy_from_slice(&(if c == 0 { 0xffff } else { c }).to_be_bytes());
    let mut b = vec![0u8; 40];
    b[0] = 0x60;
    b[4..6].copy_from_slice(&(udp.len() as u16).to_be_bytes());
    b[6] = 17;
    b[7] = 64;
    b[8..24].copy_from_slice(&src.octets());
    b[24..40].copy_from_slice(&dst.octets());
    b.extend_from_slice(&udp);
    b
}

// §9.3 (ARP and ND on the IB side), §11 (a send-only join per multicast group sent to): host 0
// sends to 10,000 unknown on-link addresses, half IPv4, half IPv6. Its neighbour, path and
// multicast tables stay within their bounds, the drops are counted by reason, and hosts 1 and 2
// still reach each other in both directions during the flood.
#[test]
fn flood_of_unknown_destinations_stays_bounded() {
    let seed = seed(131);
    let _g = SeedGuard(seed);
    let mut o = options(Topology::single_switch(4).unwrap(), seed);
    let mut ip = IpoibOptions::external();
    ip.configure = Some(wide);
    o.ipoib = Some(ip);
    let mut net = up(o, false);
    let deadline = net.sim().now() + Duration::from_secs(5);
    assert!(net.run_until_ipv6_all_ready(deadline));
    let mut cfg = InterfaceConfig::new(ipoib_wire::Guid(0), 0);
    wide(0, &mut cfg);
    let src6 = Ipv6Addr::new(0xfd00, 0, 0, 0, 0, 0, 0, 1);
    let mut answered = 0;
    for k in 0..FLOOD {
        let p = if k % 2 == 0 {
            let dst = Ipv4Addr::new(10, 0, 1 + (k / 250) as u8, (k % 250) as u8 + 1);
            ipoib::udp4(a4(0), dst, 64, b"sweep")
        } else {
            let dst = Ipv6Addr::new(0xfd00, 0, 0, 0, 0, 1, (k >> 16) as u16, k as u16);
            udp6(src6, dst, b"sweep")
        };
        net.with_ipoib(0, |a, now| a.from_os(now, &p)).unwrap();
        if k % 500 == 499 {
            // Hosts 1 and 2 talk in the middle of the flood: each packet gets through.
            let tag = (k as u32).to_be_bytes();
            let p12 = ipoib::udp4(a4(1), a4(2), 64, &tag);
            let p21 = ipoib::udp4(a4(2), a4(1), 64, &tag);
            net.with_ipoib(1, |a, now| a.from_os(now, &p12)).unwrap();
            net.with_ipoib(2, |a, now| a.from_os(now, &p21)).unwrap();
            run_for(&mut net, Duration::from_millis(50));
            let got2 = to_os(&mut net, 2);
            let got1 = to_os(&mut net, 1);
            assert!(got2.contains(&p12), "h2 got h1's packet at {k}");
            assert!(got1.contains(&p21), "h1 got h2's packet at {k}");
            answered += 1;
            let i = net.interface(0).unwrap();
            assert!(i.neighbours().len() <= cfg.max_neighbours);
            assert!(i.paths().len() <= cfg.max_paths);
            assert!(
                i.groups().len() <= cfg.max_mcast_groups + 8,
                "{}",
                i.groups().len()
            );
        }
    }
    assert_eq!(answered, FLOOD / 500);
    // Long enough for every resolution to fail (3 probes a second apart) and the tables to age.
    run_for(&mut net, Duration::from_secs(5));
    let i = net.interface(0).unwrap();
    assert!(i.neighbours().len() <= cfg.max_neighbours);
    assert!(i.groups().len() <= cfg.max_mcast_groups + 8);
    assert!(
        i.absent_groups() <= cfg.max_mcast_groups,
        "{}",
        i.absent_groups()
    );
    assert!(i.absent_groups() > 0);
    let c = i.counters();
    assert!(
        c.dropped(DropReason::NeighbourTableFull) > 0,
        "{:?}",
        c.drops
    );
    assert!(c.dropped(DropReason::McastTableFull) > 0, "{:?}", c.drops);
    let dropped: u64 = c.drops.values().sum();
    assert!(
        dropped >= (FLOOD - cfg.max_neighbours * cfg.queue_len) as u64,
        "{:?}",
        c.drops
    );
    // The hosts the flood did not come from hold no entry for its destinations.
    for h in 1..4 {
        assert!(net.interface(h).unwrap().neighbours().len() <= 4);
    }
    // And the flooding host itself still works.
    let p = ipoib::udp4(a4(0), a4(3), 64, b"after");
    net.with_ipoib(0, |a, now| a.from_os(now, &p)).unwrap();
    run_for(&mut net, Duration::from_millis(100));
    assert!(to_os(&mut net, 3).contains(&p));
}
