//! `--seed N` makes a run repeatable. A whole IPoIB conversation on a fat tree (bring-up,
//! DAD, ARP, ND, PathRecords, IPv4 and IPv6 pings, a multicast join and a datagram to it) is
//! captured; the same seed gives byte-identical captures, another seed other transaction IDs.

use ipoib_fabric::hw::topology::Topology;
use ipoib_fabric::testing::*;
use ipoib_wire::pcap::CaptureReader;
use std::net::{IpAddr, Ipv4Addr};
use std::time::Duration;

fn conversation(seed: u64) -> Vec<u8> {
    let n = 20;
    let mut net = up(options(Topology::fat_tree(n).unwrap(), seed), true);
    let pairs: Vec<(usize, usize)> = (0..n).map(|a| (a, (a + 7) % n)).collect();
    ping_pairs(&mut net, &pairs, v4, Duration::from_secs(1));
    ping_pairs(&mut net, &pairs, v6, Duration::from_secs(1));
    let g = IpAddr::V4(Ipv4Addr::new(239, 1, 1, 1));
    for m in [3, 18] {
        net.with_ipoib(m, |a, _| a.join_group(g));
    }
    net.sim_mut().run_for(Duration::from_millis(5));
    net.with_ipoib(4, |a, _| a.ip_mut().send_udp(1, g, 5001, b"x"));
    net.sim_mut().run_for(Duration::from_millis(5));
    assert_eq!(app(&net, 18).ip().udp_received().len(), 1);
    net.sim_mut().take_capture().unwrap().into_bytes()
}

// Same seed, same packets, byte for byte (docs/ARCHITECTURE.md "Rules").
#[test]
fn same_seed_same_capture() {
    let _g = SeedGuard(3);
    let a = conversation(3);
    let b = conversation(3);
    let c = conversation(4);
    let packets = CaptureReader::read_all(&a[..]).unwrap().len();
    assert!(packets > 500, "a real conversation: {packets} packets");
    assert!(a == b, "same seed: byte-identical captures");
    assert!(a != c, "another seed: other bytes");
}
