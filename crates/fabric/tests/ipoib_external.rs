//! IPoIB with the IP layer outside (`IpoibApp::install_external`, what a TUN device gives Linux):
//! packets from one host's stack come out of another's byte for byte, after ARP and ND on the IB
//! side (draft-ietf-ipoib-ip-over-infiniband-06 §9.2, §9.3); IGMP and MLD reports from the stack
//! join and leave IB multicast groups (§11; the snooping is this project's design); a packet too
//! big for the link comes back to the stack as ICMP (RFC 1191 §4, docs/DEPLOYED.md "Linux
//! IPoIB"); garbage from the stack is counted; the queue to the stack is bounded.

use ipoib_fabric::hw::topology::Topology;
use ipoib_fabric::node::ipoib::{ResolutionKind, TO_OS_LIMIT};
use ipoib_fabric::node::subnet::{IpoibOptions, Subnet};
use ipoib_fabric::testing::*;
use ipoib_proto::ipoib::{ConnectedConfig, InterfaceConfig};
use ipoib_wire::ipoib::mcast::{ipv4_mgid, ipv6_mgid, Scope};
use ipoib_wire::ipoib::{
    Icmpv4Type, Icmpv4Unreachable, Icmpv6Repr, Icmpv6Type, IpPayload, IpProtocol, Ipv4Datagram,
    Ipv4Packet, Ipv6Datagram, Ipv6Repr, MldPacket, UdpRepr,
};
use ipoib_wire::PKey;
use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};
use std::cell::RefCell;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::time::Duration;

fn a4(i: usize) -> Ipv4Addr {
    Ipv4Addr::new(10, 0, 0, i as u8 + 1)
}

fn a6(i: usize) -> Ipv6Addr {
    Ipv6Addr::new(0xfd00, 0, 0, 0, 0, 0, 0, i as u16 + 1)
}

/// `n` hosts on one switch, each with its IP layer outside (10.0.0.(i+1)/24, fd00::(i+1)/64),
/// carrier up and every IPv6 address past DAD.
fn net(n: usize, seed: u64, configure: Option<fn(usize, &mut InterfaceConfig)>) -> Subnet {
    let mut o = options(Topology::single_switch(n).unwrap(), seed);
    let mut ip = IpoibOptions::external();
    ip.configure = configure;
    o.ipoib = Some(ip);
    let mut net = up(o, false);
    let deadline = net.sim().now() + Duration::from_secs(5);
    assert!(
        net.run_until_ipv6_all_ready(deadline),
        "IPv6 addresses ready"
    );
    net
}

fn ipv6(src: Ipv6Addr, dst: Ipv6Addr, hop_limit: u8, payload: IpPayload<'_>) -> Vec<u8> {
    let d = Ipv6Datagram {
        header: Ipv6Repr {
            traffic_class: 0,
            flow_label: 0x12345,
            payload_len: 0,
            next_header: match payload {
                IpPayload::Udp(_) => IpProtocol::Udp,
                _ => IpProtocol::Icmpv6,
            },
            hop_limit,
            src_addr: src,
            dst_addr: dst,
        },
        payload,
    };
    let mut b = vec![0u8; d.buffer_len()];
    d.emit(&mut b).unwrap();
    b
}

fn echo6(src: Ipv6Addr, dst: Ipv6Addr) -> Vec<u8> {
    let icmp = Icmpv6Repr {
        msg_type: Icmpv6Type::EchoRequest,
        code: 0,
        rest: 0x0042_0001,
        body: b"abcdefgh",
    };
    ipv6(src, dst, 64, IpPayload::Icmpv6(icmp))
}

/// An IGMPv3 report (RFC 3376 §4.2) with one record of `record_type` and no sources, as Linux
/// sends it: to 224.0.0.22, TTL 1, TOS 0xc0, Router Alert (RFC 2113).
fn igmp_v3(src: Ipv4Addr, record_type: u8, group: Ipv4Addr) -> Vec<u8> {
    let mut igmp = vec![0x22, 0, 0, 0, 0, 0, 0, 1, record_type, 0, 0, 0];
    igmp.extend_from_slice(&group.octets());
    let c = ipoib_wire::ipoib::checksum::internet(&igmp);
    igmp[2..4].copy_from_slice(&c.to_be_bytes());
    let mut b = vec![0u8; 24];
    b[0] = 0x46;
    b[1] = 0xc0;
    b[2..4].copy_from_slice(&((24 + igmp.len()) as u16).to_be_bytes());
    b[6] = 0x40;
    b[8] = 1;
    b[9] = 2;
    b[12..16].copy_from_slice(&src.octets());
    b[16..20].copy_from_slice(&Ipv4Addr::new(224, 0, 0, 22).octets());
    b[20..24].copy_from_slice(&[0x94, 0x04, 0, 0]);
    b.extend_from_slice(&igmp);
    Ipv4Packet::new_unchecked(&mut b[..]).fill_checksum();
    b
}

/// An MLDv2 report (RFC 3810 §5.2) with one record per `(type, group)` and no sources, as Linux
/// sends it: to ff02::16, hop limit 1, hop-by-hop header with Router Alert (RFC 2711).
fn mld_v2(src: Ipv6Addr, records: &[(u8, Ipv6Addr)]) -> Vec<u8> {
    let dst: Ipv6Addr = "ff02::16".parse().unwrap();
    let mut mld = vec![143, 0, 0, 0, 0, 0, 0, records.len() as u8];
    for (t, g) in records {
        mld.extend_from_slice(&[*t, 0, 0, 0]);
        mld.extend_from_slice(&g.octets());
    }
    MldPacket::new_unchecked(&mut mld[..]).fill_checksum(src, dst);
    let mut b = vec![0u8; 48];
    b[0] = 0x60;
    b[4..6].copy_from_slice(&((8 + mld.len()) as u16).to_be_bytes());
    b[7] = 1;
    b[8..24].copy_from_slice(&src.octets());
    b[24..40].copy_from_slice(&dst.octets());
    b[40..48].copy_from_slice(&[58, 0, 5, 2, 0, 0, 1, 0]);
    b.extend_from_slice(&mld);
    b
}

// §9.2, §9.3: the interface resolves the stack's next hop with ARP and ND on the IB side and
// carries the IP packet unchanged; the third host sees neither.
#[test]
fn unicast_crosses_byte_identical_after_arp_and_nd() {
    let seed = seed(101);
    let _g = SeedGuard(seed);
    let mut net = net(3, seed, None);
    let p4 = udp4(a4(0), a4(1), 64, b"hello over IPoIB");
    from_os(&mut net, 0, &p4);
    let p6 = echo6(a6(0), a6(1));
    from_os(&mut net, 0, &p6);
    run_for(&mut net, Duration::from_millis(200));
    let got = to_os(&mut net, 1);
    assert!(got.contains(&p4), "IPv4 UDP unchanged: {got:?}");
    assert!(got.contains(&p6), "ICMPv6 echo request unchanged: {got:?}");
    let third = to_os(&mut net, 2);
    assert!(!third.contains(&p4) && !third.contains(&p6), "{third:?}");
    let r = app(&net, 0).resolutions();
    assert!(r
        .iter()
        .any(|r| r.kind == ResolutionKind::Arp && r.ip == IpAddr::V4(a4(1))));
    assert!(r
        .iter()
        .any(|r| r.kind == ResolutionKind::Nd && r.ip == IpAddr::V6(a6(1))));
    let c = app(&net, 0).os_counters();
    assert_eq!((c.from_os, c.malformed), (2, 0));
    assert!(app(&net, 1).os_counters().to_os >= 2);
    assert!(app(&net, 0).is_external());
}

// §11 and the snooping of RFC 3376 §4.2.12: an IGMPv3 CHANGE_TO_EXCLUDE {} makes the interface
// a FullMember of the group, so the group's datagrams reach that host and no other;
// CHANGE_TO_INCLUDE {} leaves, and they stop.
#[test]
fn igmp_join_receives_and_leave_stops() {
    let seed = seed(102);
    let _g = SeedGuard(seed);
    let mut net = net(3, seed, None);
    let group = Ipv4Addr::new(239, 1, 2, 3);
    let mgid = ipv4_mgid(group, PKey(0xffff), Scope::LinkLocal);
    from_os(&mut net, 1, &igmp_v3(a4(1), 4, group));
    assert!(run_until_attached(&mut net, &[1], mgid), "joined");
    assert_eq!(app(&net, 1).os_groups(), [IpAddr::V4(group)]);
    let snoop = app(&net, 1).os_counters().snoop;
    assert_eq!((snoop.igmp, snoop.joins), (1, 1));
    to_os(&mut net, 1);
    to_os(&mut net, 2);
    let m = udp4(a4(0), group, 1, b"to the group");
    from_os(&mut net, 0, &m);
    run_for(&mut net, Duration::from_millis(200));
    assert_eq!(
        to_os(&mut net, 1),
        std::slice::from_ref(&m),
        "the member receives it"
    );
    assert!(!to_os(&mut net, 2).contains(&m), "the other host does not");
    from_os(&mut net, 1, &igmp_v3(a4(1), 3, group));
    let deadline = net.sim().now() + Duration::from_secs(2);
    assert!(net.run_until_with(deadline, |n| {
        !app(n, 1).attached().iter().any(|(g, _)| *g == mgid)
    }));
    assert!(app(&net, 1).os_groups().is_empty());
    assert_eq!(app(&net, 1).os_counters().snoop.leaves, 1);
    from_os(&mut net, 0, &m);
    run_for(&mut net, Duration::from_millis(200));
    assert!(!to_os(&mut net, 1).contains(&m), "left: no more");
}

// §11 and RFC 3810 §5.2.12: the same with MLDv2 for an IPv6 group.
#[test]
fn mld_join_receives_and_leave_stops() {
    let seed = seed(103);
    let _g = SeedGuard(seed);
    let mut net = net(3, seed, None);
    let group: Ipv6Addr = "ff12::1234".parse().unwrap();
    let mgid = ipv6_mgid(group, PKey(0xffff), Scope::LinkLocal);
    let ll1 = net.interface(1).unwrap().ipv6_addresses()[0].addr;
    from_os(&mut net, 1, &mld_v2(ll1, &[(4, group)]));
    assert!(run_until_attached(&mut net, &[1], mgid), "joined");
    assert_eq!(app(&net, 1).os_groups(), [IpAddr::V6(group)]);
    to_os(&mut net, 1);
    to_os(&mut net, 2);
    let udp = UdpRepr::new(40000, 5001, b"to the v6 group");
    let m = ipv6(a6(0), group, 1, IpPayload::Udp(udp));
    from_os(&mut net, 0, &m);
    run_for(&mut net, Duration::from_millis(200));
    assert_eq!(
        to_os(&mut net, 1),
        std::slice::from_ref(&m),
        "the member receives it"
    );
    assert!(!to_os(&mut net, 2).contains(&m), "the other host does not");
    from_os(&mut net, 1, &mld_v2(ll1, &[(3, group)]));
    let deadline = net.sim().now() + Duration::from_secs(2);
    assert!(net.run_until_with(deadline, |n| {
        !app(n, 1).attached().iter().any(|(g, _)| *g == mgid)
    }));
    from_os(&mut net, 0, &m);
    run_for(&mut net, Duration::from_millis(200));
    assert!(!to_os(&mut net, 1).contains(&m), "left: no more");
}

// RFC 3810 §6: no listening is tracked for all-nodes; the solicited-node group of the
// interface's own address is counted apart from the interface's own use (`mcast.rs`), so the
// stack leaving it keeps the group the interface needs for ND.
#[test]
fn snooping_keeps_the_interfaces_own_groups() {
    let seed = seed(104);
    let _g = SeedGuard(seed);
    let mut net = net(2, seed, None);
    let sn: Ipv6Addr = "ff02::1:ff00:2".parse().unwrap();
    let all_nodes: Ipv6Addr = "ff02::1".parse().unwrap();
    let sn_mgid = ipv6_mgid(sn, PKey(0xffff), Scope::LinkLocal);
    let groups_before = net.interface(1).unwrap().groups();
    assert!(groups_before
        .iter()
        .any(|g| g.mgid == sn_mgid && g.attached));
    let ll1 = net.interface(1).unwrap().ipv6_addresses()[0].addr;
    from_os(&mut net, 1, &mld_v2(ll1, &[(4, sn), (4, all_nodes)]));
    run_for(&mut net, Duration::from_millis(100));
    let snoop = app(&net, 1).os_counters().snoop;
    assert_eq!((snoop.joins, snoop.ignored), (1, 1));
    assert_eq!(net.interface(1).unwrap().groups(), groups_before);
    from_os(&mut net, 1, &mld_v2(ll1, &[(3, sn), (3, all_nodes)]));
    run_for(&mut net, Duration::from_millis(100));
    assert_eq!(app(&net, 1).os_counters().snoop.leaves, 1);
    assert_eq!(net.interface(1).unwrap().groups(), groups_before);
    // ND still works: host 0 reaches fd00::2.
    let p6 = echo6(a6(0), a6(1));
    from_os(&mut net, 0, &p6);
    run_for(&mut net, Duration::from_millis(200));
    assert!(to_os(&mut net, 1).contains(&p6));
}

// §7 (datagram-mode MTU 2044 on a 2048-byte IB MTU), RFC 1191 §4, docs/DEPLOYED.md "Linux
// IPoIB": a 60,000-byte IPv4 packet is answered with fragmentation needed, MTU 2044, into the
// sender's own stack, from its own address.
#[test]
fn too_big_in_datagram_mode_answers_the_stack() {
    let seed = seed(105);
    let _g = SeedGuard(seed);
    let mut net = net(3, seed, None);
    let big = udp4(a4(0), a4(1), 64, &vec![0x5a; 60_000 - 28]);
    assert_eq!(big.len(), 60_000);
    from_os(&mut net, 0, &big);
    run_for(&mut net, Duration::from_millis(100));
    let back = to_os(&mut net, 0);
    assert_eq!(back.len(), 1, "{back:?}");
    let d = Ipv4Datagram::parse(&back[0]).unwrap();
    assert_eq!(d.header.src_addr, a4(0));
    assert_eq!(d.header.dst_addr, a4(0));
    let IpPayload::Icmpv4(icmp) = d.payload else {
        panic!("{d:?}")
    };
    assert_eq!(icmp.msg_type, Icmpv4Type::DestUnreachable);
    assert_eq!(icmp.code, u8::from(Icmpv4Unreachable::FragNeeded));
    assert_eq!(icmp.next_hop_mtu(), Some(2044));
    assert!(!to_os(&mut net, 1).contains(&big));
}

/// Two hosts in connected mode (RC) whose first packet, host 0 to host 1, has crossed (the
/// connection is up).
fn connected_pair(seed: u64) -> Subnet {
    let mut net = net(
        2,
        seed,
        Some(|_, c| c.connected = Some(ConnectedConfig::rc())),
    );
    let small = udp4(a4(0), a4(1), 64, b"first");
    from_os(&mut net, 0, &small);
    run_for(&mut net, Duration::from_millis(200));
    assert!(to_os(&mut net, 1).contains(&small));
    net
}

// RFC 4755 §5.1: in connected mode the link MTU is 65520, so the same packet crosses whole.
#[test]
fn connected_mode_carries_60000_bytes_whole() {
    let seed = seed(106);
    let _g = SeedGuard(seed);
    let mut net = connected_pair(seed);
    let big = udp4(a4(0), a4(1), 64, &vec![0xa5; 60_000 - 28]);
    from_os(&mut net, 0, &big);
    run_for(&mut net, Duration::from_millis(200));
    assert_eq!(to_os(&mut net, 1), [big], "one 60,000-byte packet, whole");
    assert!(to_os(&mut net, 0).is_empty(), "no ICMP");
}

// A bulk transfer on a connection leaves nothing queued behind it: the RC requester's ACK
// timeout, pushed later by every acknowledgement (IBA 1 §9.7.6.1.3), used to leave one superseded
// timer event per acknowledgement queued for a whole timeout (2.1 s here), and `ipoib lab`'s
// real-time driver woke for each (docs/benchmarks/lab-connected.md, "After a bulk transfer").
// Over the timeout after the transfer the simulator runs about as many events as over the same
// time before it.
#[test]
fn a_bulk_transfer_leaves_no_trail_of_timer_events() {
    let seed = seed(111);
    let _g = SeedGuard(seed);
    let mut net = connected_pair(seed);
    let window = Duration::from_millis(2_500);
    let events = |net: &Subnet| net.sim().stats().events;
    let e0 = events(&net);
    run_for(&mut net, window);
    let before = events(&net) - e0;
    // 400 packets of 60,000 bytes, 16 at a time as the lab's TUN reads hand them over.
    let big = udp4(a4(0), a4(1), 64, &vec![0xa5; 60_000 - 28]);
    let mut got = 0;
    for _ in 0..25 {
        for _ in 0..16 {
            from_os(&mut net, 0, &big);
        }
        run_for(&mut net, Duration::from_micros(500));
        got += to_os(&mut net, 1).len();
    }
    run_for(&mut net, Duration::from_millis(100));
    got += to_os(&mut net, 1).len();
    assert_eq!(got, 400, "all delivered");
    let e1 = events(&net);
    run_for(&mut net, window);
    let after = events(&net) - e1;
    assert!(
        after <= before + 10,
        "{after} events after the transfer, {before} in as long before it"
    );
}

// Garbage from the stack never panics; what is not IPv4 or IPv6 is counted and dropped.
#[test]
fn garbage_from_the_stack_is_counted() {
    let seed = seed(107);
    let _g = SeedGuard(seed);
    let net = RefCell::new(net(2, seed, None));
    let sent = RefCell::new(0u64);
    let mut runner = TestRunner::new(Config {
        cases: 256,
        ..Config::default()
    });
    let bytes = (
        proptest::collection::vec(any::<u8>(), 0..200),
        prop_oneof![Just(None), Just(Some(0x45u8)), Just(Some(0x60u8))],
    );
    runner
        .run(&bytes, |(mut b, first)| {
            if let (Some(f), Some(x)) = (first, b.first_mut()) {
                *x = f;
            }
            let mut n = net.borrow_mut();
            from_os(&mut n, 0, &b);
            *sent.borrow_mut() += 1;
            Ok(())
        })
        .unwrap();
    let mut net = net.into_inner();
    run_for(&mut net, Duration::from_millis(100));
    let c = app(&net, 0).os_counters();
    assert_eq!(
        c.from_os + c.malformed + c.from_os_dropped,
        sent.into_inner()
    );
    assert!(c.malformed > 0, "{c:?}");
    assert!(to_os(&mut net, 1).len() <= TO_OS_LIMIT);
    // The interface still works.
    let p4 = udp4(a4(0), a4(1), 64, b"still fine");
    from_os(&mut net, 0, &p4);
    run_for(&mut net, Duration::from_millis(200));
    assert!(to_os(&mut net, 1).contains(&p4));
}

// The queue to the stack is bounded (TO_OS_LIMIT, as Linux's receive backlog): a flood that
// nobody drains keeps the first packets and counts the rest.
#[test]
fn queue_to_the_stack_is_bounded() {
    let seed = seed(108);
    let _g = SeedGuard(seed);
    let mut net = net(2, seed, None);
    let first = udp4(a4(0), a4(1), 64, b"resolve");
    from_os(&mut net, 0, &first);
    run_for(&mut net, Duration::from_millis(200));
    assert!(to_os(&mut net, 1).contains(&first));
    let extra = 20;
    let total = TO_OS_LIMIT + extra;
    for k in 0..total {
        let p = udp4(a4(0), a4(1), 64, &(k as u32).to_be_bytes());
        from_os(&mut net, 0, &p);
        if k % 50 == 49 {
            run_for(&mut net, Duration::from_millis(2));
        }
    }
    run_for(&mut net, Duration::from_millis(100));
    let a = app(&net, 1);
    assert_eq!(a.to_os_len(), TO_OS_LIMIT);
    assert_eq!(a.os_counters().to_os_dropped, extra as u64);
    let got = to_os(&mut net, 1);
    let want0 = udp4(a4(0), a4(1), 64, &0u32.to_be_bytes());
    assert_eq!(got[0], want0, "the oldest kept");
    // A smaller bound, set by the runtime.
    net.with_ipoib(1, |a, _| a.set_to_os_limit(4));
    for k in 0..10u32 {
        from_os(&mut net, 0, &udp4(a4(0), a4(1), 64, &k.to_be_bytes()));
    }
    run_for(&mut net, Duration::from_millis(100));
    assert_eq!(app(&net, 1).to_os_len(), 4);
    assert_eq!(app(&net, 1).os_counters().to_os_dropped, extra as u64 + 6);
}

// The stack's packets in frames of their own (`from_os_frame`, which `from_os` uses after its
// one copy): whatever the 4 free bytes in front hold, the interface writes the
// encapsulation header there (draft-ietf-ipoib-ip-over-infiniband-06 §6), and bytes past the IP
// length are cut off; the packet comes out of the other host byte for byte, in datagram and in
// connected mode (RFC 4755), and `to_os_buf` gives the same bytes as `to_os`.
#[test]
fn frames_from_the_stack_cross_byte_identical() {
    for (k, conn) in [(0u64, false), (1, true)] {
        let seed = seed(109 + k);
        let _g = SeedGuard(seed);
        let mut net = if conn {
            net(
                2,
                seed,
                Some(|_, c| c.connected = Some(ConnectedConfig::rc())),
            )
        } else {
            net(2, seed, None)
        };
        let len = if conn { 60_000 } else { 2_000 };
        let frame = |p: &[u8]| {
            let mut f = vec![0xee; 4];
            f.extend_from_slice(p);
            f.extend_from_slice(b"trailer");
            f
        };
        let first = udp4(a4(0), a4(1), 64, b"resolve");
        net.with_ipoib(0, |a, now| a.from_os_frame(now, frame(&first)))
            .expect("host");
        run_for(&mut net, Duration::from_millis(200));
        assert_eq!(to_os(&mut net, 1), [first], "conn {conn}");
        let big = udp4(a4(0), a4(1), 64, &vec![0x3c; len - 28]);
        for _ in 0..3 {
            net.with_ipoib(0, |a, now| a.from_os_frame(now, frame(&big)))
                .expect("host");
        }
        run_for(&mut net, Duration::from_millis(200));
        let got = net
            .with_ipoib(1, |a, _| {
                std::iter::from_fn(|| a.to_os_buf()).collect::<Vec<_>>()
            })
            .expect("host");
        assert_eq!(got.len(), 3, "conn {conn}");
        for g in got {
            assert_eq!(&*g, &big[..], "conn {conn}");
            assert_eq!(g.into_vec(), big, "conn {conn}");
        }
        assert!(to_os(&mut net, 0).is_empty(), "no ICMP");
        assert_eq!(app(&net, 0).os_counters().malformed, 0);
        // A frame too short to hold an IP packet is counted, not sent.
        net.with_ipoib(0, |a, now| a.from_os_frame(now, vec![0; 3]))
            .expect("host");
        assert_eq!(app(&net, 0).os_counters().malformed, 1);
    }
}
