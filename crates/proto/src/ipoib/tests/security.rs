//! Partition and Q_Key isolation (draft-ietf-ipoib-ip-over-infiniband-06 §3, §9.1 d, e, §9.1.2 b),
//! the controlled Q_Key (§4.1 item 2, §14), bad frames.

use super::*;
use ipoib_wire::ipoib::{ArpOperation, ArpPacket, ArpRepr};
use ipoib_wire::QKey;

fn frame_from(net: &Net, s: &Sent) -> UdReceived {
    UdReceived {
        src_qpn: qpn(s.from),
        slid: s.from,
        sl: s.t.sl,
        grh: None,
        pkey: net
            .hosts
            .iter()
            .find(|h| h.lid == s.from)
            .map(|h| h.iface.config().pkey)
            .unwrap_or(PKey(0)),
        qkey: s.t.qkey,
        data: s.t.data.clone(),
    }
}

// draft-ietf-ipoib-ip-over-infiniband-06 §3, §9.1 d, e: UD peers talk only inside one partition and
// with the right Q_Key. A host of another partition (its own broadcast group, P_Key 0x8001) and a
// frame with a wrong Q_Key never reach IP, even through a lax HCA that passes them up.
#[test]
fn other_partition_and_wrong_qkey_never_reach_ip() {
    let parts = default_and_p1();
    let mk = |lid: u16, pkey: u16| (lid, host_config(lid, pkey));
    let mut net = Net::custom(
        vec![mk(2, 0xffff), mk(3, 0xffff), mk(5, 0x8001)],
        parts,
        &[(5, vec![0x8001])],
    );
    net.up();
    assert!(net.iface(5).carrier());
    let b5 = net.iface(5).link_params().unwrap().record;
    assert_eq!(b5.mgid.to_ipv6().to_string(), "ff12:401b:8001::ffff:ffff");
    assert_ne!(b5.mlid, 0xc000);
    // Host 5 cannot reach host 2: ARP goes to its own broadcast group only.
    net.send(5, &ping4(v4(5), v4(2), true, 1));
    net.run_for(Duration::from_secs(5));
    assert!(!net.host(2).delivered.iter().any(|p| is_echo(p, true, 1)));
    assert_eq!(
        net.iface(5)
            .counters()
            .dropped(DropReason::ResolutionFailed),
        1
    );

    // A lax HCA hands host 2 host 5's frames anyway: dropped on the P_Key, nothing learned.
    let g5: Vec<UdReceived> = net
        .sent_by(5)
        .into_iter()
        .filter(|s| ethertype(&s.t) == 0x0806)
        .map(|s| frame_from(&net, s))
        .collect();
    assert!(!g5.is_empty());
    for f in g5 {
        let now = net.now;
        net.iface(2).handle_datagram(now, f);
    }
    net.settle();
    assert!(net.iface(2).counters().dropped(DropReason::PkeyMismatch) >= 1);
    assert!(!net
        .iface(2)
        .neighbours()
        .iter()
        .any(|n| n.ip == IpAddr::V4(v4(5))));

    // A frame from a partition member with another Q_Key.
    net.send(3, &ping4(v4(3), v4(2), true, 2));
    net.run_for(Duration::from_secs(1));
    let echo = net
        .sent_by(3)
        .into_iter()
        .rev()
        .find(|s| s.t.dlid == 2 && ethertype(&s.t) == 0x0800)
        .map(|s| frame_from(&net, s))
        .expect("unicast echo");
    let delivered = net.host(2).delivered.len();
    let now = net.now;
    let mut bad = echo.clone();
    bad.qkey = QKey(0x1234);
    net.iface(2).handle_datagram(now, bad);
    let mut bad = echo.clone();
    bad.pkey = PKey(0x8001);
    net.iface(2).handle_datagram(now, bad);
    net.settle();
    assert_eq!(net.host(2).delivered.len(), delivered);
    assert_eq!(net.iface(2).counters().dropped(DropReason::QkeyMismatch), 1);
    // The same frame with the right keys is delivered (the checks are what dropped it).
    net.iface(2).handle_datagram(now, echo);
    net.settle();
    assert_eq!(net.host(2).delivered.len(), delivered + 1);
}

// draft-ietf-ipoib-ip-over-infiniband-06 §4.1 item 2, §14: a controlled Q_Key (high bit) set by
// the administrator on the broadcast group; §9.1.2 b: the interface uses the group's Q_Key for all
// its traffic and tells the HCA to set it on the QP. §4.1 item 4: the broadcast group's SL is used
// for all multicast, with its TClass in the GRH.
#[test]
fn controlled_qkey_from_the_group() {
    let parts = crate::partitions::parse(
        "Default=0x7fff, ipoib, Q_Key=0x80010001, TClass=0x20 : ALL=full ;",
    )
    .expect("partitions");
    let hosts = (2..4)
        .map(|lid| {
            let mut c = InterfaceConfig::new(guid(lid), qpn(lid));
            c.ipv4 = Some(Ipv4Config {
                addr: v4(lid),
                prefix_len: 24,
                gateway: None,
            });
            (lid, c)
        })
        .collect();
    let mut net = Net::custom(hosts, parts, &[]);
    net.up();
    assert_eq!(net.host(2).qkey, QKey(0x8001_0001));
    net.send(2, &ping4(v4(2), v4(3), true, 1));
    net.run_for(Duration::from_secs(1));
    assert!(net.host(2).delivered.iter().any(|p| is_echo(p, false, 1)));
    assert!(net.wire.iter().all(|s| s.t.qkey == QKey(0x8001_0001)));
    let mc: Vec<&Sent> = net.wire.iter().filter(|s| s.t.dlid >= 0xc000).collect();
    assert!(!mc.is_empty());
    let rec = net.hosts[0].iface.link_params().unwrap().record;
    assert_eq!(rec.tclass, 0x20);
    assert!(mc.iter().all(|s| s.t.sl == rec.sl
        && s.t.grh.is_some_and(|g| g.tclass == rec.tclass
            && g.flow_label == rec.flow_label
            && g.hop_limit == rec.hop_limit)));
    // IPv6 groups created by the hosts copied it (§11).
    assert!(net
        .sa
        .groups()
        .iter()
        .all(|g| g.record.qkey == QKey(0x8001_0001)));
}

// Bad input never panics and is counted: truncated headers, RARP, garbage ARP, a short IPv4 packet.
#[test]
fn bad_frames_are_counted() {
    let mut net = Net::new(1);
    net.up();
    let mk = |data: Vec<u8>| UdReceived {
        src_qpn: 0x99,
        slid: 9,
        sl: 0,
        grh: None,
        pkey: PKey(0xffff),
        qkey: QKey(0x0b1b),
        data,
    };
    let arp = ArpRepr {
        operation: ArpOperation::Request,
        sender_hw: HwAddr::default(),
        sender_ip: v4(9),
        target_hw: HwAddr::default(),
        target_ip: v4(2),
    };
    let mut rarp = vec![0x80, 0x35, 0, 0];
    let mut body = vec![0u8; arp.buffer_len()];
    arp.emit(&mut ArpPacket::new_unchecked(&mut body[..]));
    rarp.extend_from_slice(&body);
    let frames = vec![
        vec![],
        vec![0x08],
        vec![0x08, 0x00, 0, 0, 0x45],
        vec![0x08, 0x06, 0, 0, 0, 32, 8, 0, 6, 4],
        vec![0x86, 0xdd, 0, 0, 0x60, 0, 0],
        rarp,
    ];
    for f in frames {
        let now = net.now;
        net.iface(2).handle_datagram(now, mk(f));
    }
    net.settle();
    let c = net.iface(2).counters().clone();
    assert_eq!(c.dropped(DropReason::Malformed), 5);
    assert_eq!(c.dropped(DropReason::Unsupported), 1);
    assert!(net.host(2).delivered.is_empty());
    // From the IP side too.
    net.send(2, &[]);
    net.send(2, &[0x45, 0]);
    net.send(2, &[0x10; 30]);
    assert_eq!(net.iface(2).counters().dropped(DropReason::Malformed), 8);
}
