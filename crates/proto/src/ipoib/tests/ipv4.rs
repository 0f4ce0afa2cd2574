//! IPv4 over IPoIB: ARP (draft-ietf-ipoib-ip-over-infiniband-06 §9.2, §10, §9.1.1), unicast
//! replies, the neighbour cache and its queue, paths (§9.1.2), ping both ways, GRH or not (§6).

use super::*;
use ipoib_wire::ipoib::arp::HTYPE_INFINIBAND;
use ipoib_wire::ipoib::{ArpOperation, ArpPacket, ArpRepr, HwAddrFlags};

fn arps(net: &Net, lid: u16) -> Vec<(UdTransmit, ArpRepr)> {
    net.sent_by(lid)
        .into_iter()
        .filter(|s| ethertype(&s.t) == 0x0806)
        .filter_map(|s| {
            let a = ArpRepr::parse(&ArpPacket::new_unchecked(&s.t.data[4..])).ok()?;
            Some((s.t.clone(), a))
        })
        .collect()
}

// draft-ietf-ipoib-ip-over-infiniband-06 §9.2, §10: ARP with hardware type 32 and 20-byte
// addresses, requests over the broadcast group (§5), replies unicast to the requester's QPN
// (§9.1.1 b); then a PathRecord per new destination GID (§9.1.2 a) and ICMP echo both ways.
#[test]
fn arp_resolution_and_ping_both_ways() {
    let mut net = Net::new(3);
    net.up();
    net.send(2, &ping4(v4(2), v4(3), true, 1));
    net.run_for(Duration::from_secs(1));
    assert!(net.host(3).delivered.iter().any(|p| is_echo(p, true, 1)));
    assert!(net.host(2).delivered.iter().any(|p| is_echo(p, false, 1)));
    // Host 4 only saw the broadcast request.
    assert!(!net.host(4).delivered.iter().any(|p| is_echo(p, true, 1)));

    let req = arps(&net, 2)
        .into_iter()
        .find(|(_, a)| a.operation == ArpOperation::Request && a.target_ip == v4(3))
        .expect("ARP request");
    assert_eq!(req.0.dlid, 0xc000);
    assert_eq!(req.0.remote_qpn, 0xff_ffff);
    assert_eq!(req.0.grh.map(|g| g.gid), Some(BCAST));
    let raw = &req.0.data[4..];
    assert_eq!(u16::from_be_bytes([raw[0], raw[1]]), HTYPE_INFINIBAND);
    assert_eq!(raw[4], 20, "hardware address length");
    assert_eq!(req.1.sender_hw, net.iface(2).hw_addr());
    let rep = arps(&net, 3)
        .into_iter()
        .find(|(_, a)| a.operation == ArpOperation::Reply)
        .expect("ARP reply");
    assert_eq!(rep.0.dlid, 2);
    assert_eq!(rep.0.remote_qpn, qpn(2));
    assert!(rep.0.grh.is_none(), "no GRH inside one subnet");
    assert_eq!(rep.1.target_hw, net.iface(2).hw_addr());

    // Reverse direction: host 3 learned host 2 from the request; no ARP needed.
    let n = arps(&net, 3).len();
    net.send(3, &ping4(v4(3), v4(2), true, 2));
    net.run_for(Duration::from_secs(1));
    assert!(net.host(3).delivered.iter().any(|p| is_echo(p, false, 2)));
    assert_eq!(arps(&net, 3).len(), n);

    // One PathRecord query per destination GID, cached afterwards.
    let pr = |net: &Net, lid| net.path_queries(lid);
    assert_eq!(pr(&net, 2), 1);
    net.send(2, &ping4(v4(2), v4(3), true, 3));
    net.run_for(Duration::from_secs(1));
    assert!(net.host(2).delivered.iter().any(|p| is_echo(p, false, 3)));
    assert_eq!(pr(&net, 2), 1);
    let path = net.iface(2).paths()[0].1;
    assert_eq!(
        (path.dlid, path.mtu, path.rate),
        (3, Mtu::Mtu2048, Rate::Gbps40)
    );
    // §9.1 g, §9.1.2 e: the unicast datagrams carry the path's rate to the HCA (static rate).
    let unicast: Vec<_> = net
        .sent_by(2)
        .into_iter()
        .filter(|s| s.t.dlid == 3)
        .collect();
    assert!(!unicast.is_empty());
    assert!(
        unicast.iter().all(|s| s.t.rate == Rate::Gbps40),
        "rate not the path's"
    );
}

// Linux behaviour (inetdev/arp on carrier up): a gratuitous ARP to the broadcast group when the
// link comes up; receivers update an existing entry only (RFC 826 merge).
#[test]
fn gratuitous_arp_on_up() {
    let mut net = Net::new(2);
    net.up();
    let g = arps(&net, 2)
        .into_iter()
        .find(|(_, a)| a.sender_ip == v4(2) && a.target_ip == v4(2))
        .expect("gratuitous ARP");
    assert_eq!(g.0.dlid, 0xc000);
    assert!(net.iface(3).neighbours().is_empty());
}

// docs/DEPLOYED.md "Linux IPoIB", `arp_notify`: off, the link comes up without announcing the
// address, and ARP still resolves on demand.
#[test]
fn no_gratuitous_arp_without_arp_notify() {
    let mut net = Net::with(2, |_, c| c.arp_notify = false);
    net.up();
    assert!(arps(&net, 2).is_empty(), "{:?}", arps(&net, 2));
    assert!(net.iface(2).carrier());
    net.send(2, &ping4(v4(2), v4(3), true, 1));
    net.run_for(Duration::from_secs(1));
    assert!(net.host(3).delivered.iter().any(|p| is_echo(p, true, 1)));
    let requests: Vec<ArpRepr> = arps(&net, 2)
        .into_iter()
        .map(|a| a.1)
        .filter(|a| a.operation == ArpOperation::Request)
        .collect();
    assert_eq!(requests.len(), 1, "one request, for the ping: {requests:?}");
    assert_eq!(requests[0].target_ip, v4(3));
}

// docs/DEPLOYED.md "Linux IPoIB": at most 3 packets queued per unresolved neighbour.
#[test]
fn queue_limit_of_three() {
    let mut net = Net::new(2);
    net.up();
    for seq in 1..=5 {
        net.send(2, &ping4(v4(2), v4(3), true, seq));
    }
    net.run_for(Duration::from_secs(1));
    let got: Vec<u16> = (1..=5)
        .filter(|s| net.host(3).delivered.iter().any(|p| is_echo(p, true, *s)))
        .collect();
    assert_eq!(got, vec![1, 2, 3]);
    assert_eq!(
        net.iface(2)
            .counters()
            .dropped(DropReason::NeighbourQueueFull),
        2
    );
}

// ARP resolution gives up after 3 tries (Linux mcast_solicit 3, retrans 1 s) and drops the queue,
// answering each queued packet to its sender with an ICMP host unreachable (RFC 792; Linux
// `arp_error_report`, docs/LINUX-DEVICE.md): from and to the sender's own address, quoting
// the packet's header and first 8 data bytes.
#[test]
fn unanswered_arp_fails() {
    let mut net = Net::new(2);
    net.up();
    let ping = ping4(v4(2), v4(99), true, 1);
    net.send(2, &ping);
    net.run_for(Duration::from_secs(5));
    let answers: Vec<&[u8]> = net
        .host(2)
        .events
        .iter()
        .filter_map(|e| match e {
            InterfaceEvent::Deliver(p) => Some(&p[..]),
            _ => None,
        })
        .filter(|p| p.get(9) == Some(&1))
        .collect();
    assert_eq!(answers.len(), 1, "one ICMP answer");
    let ip = Ipv4Packet::new_checked(answers[0]).unwrap();
    assert_eq!((ip.src_addr(), ip.dst_addr()), (v4(2), v4(2)));
    let icmp = ipoib_wire::ipoib::Icmpv4Repr::parse(ip.payload()).unwrap();
    assert_eq!((icmp.msg_type.into(), icmp.code), (3u8, 1));
    assert_eq!(icmp.body, &ping[..28]);
    let tries = arps(&net, 2)
        .iter()
        .filter(|(_, a)| a.target_ip == v4(99))
        .count();
    assert_eq!(tries, 3);
    assert_eq!(
        net.iface(2)
            .counters()
            .dropped(DropReason::ResolutionFailed),
        1
    );
    assert!(net.iface(2).neighbours().is_empty());
}

fn fake_arp(op: ArpOperation, sender: Ipv4Addr, hw: HwAddr, target: Ipv4Addr) -> UdReceived {
    let a = ArpRepr {
        operation: op,
        sender_hw: hw,
        sender_ip: sender,
        target_hw: HwAddr::default(),
        target_ip: target,
    };
    let mut b = vec![0u8; 4 + a.buffer_len()];
    b[0..2].copy_from_slice(&0x0806u16.to_be_bytes());
    a.emit(&mut ArpPacket::new_unchecked(&mut b[4..]));
    UdReceived {
        src_qpn: hw.qpn,
        slid: 50,
        sl: 0,
        grh: None,
        pkey: PKey(0xffff),
        qkey: QKey(0x0b1b),
        data: b,
    }
}

// draft-ietf-ipoib-ip-over-infiniband-06 §14 (a multicast network lets anyone claim an identity):
// the neighbour table is bounded against floods, legitimate entries survive, traffic still flows.
#[test]
fn neighbour_table_bounded_against_flood() {
    let mut net = Net::with(2, |_, c| c.max_neighbours = 8);
    net.up();
    net.send(2, &ping4(v4(2), v4(3), true, 1));
    net.run_for(Duration::from_secs(1));
    for i in 0..200u16 {
        let hw = HwAddr::new(
            HwAddrFlags::NONE,
            0x100 + u32::from(i),
            Gid::new(Gid::DEFAULT_SUBNET_PREFIX, 0xdead_0000 + u64::from(i)),
        );
        let src = Ipv4Addr::new(10, 0, 1 + (i / 250) as u8, (i % 250) as u8 + 1);
        let d = fake_arp(ArpOperation::Request, src, hw, v4(2));
        let now = net.now;
        net.iface(2).handle_datagram(now, d);
        assert!(net.iface(2).neighbours().len() <= 8);
    }
    net.run_for(Duration::from_secs(3));
    assert!(net.iface(2).neighbours().len() <= 8);
    assert!(net
        .iface(2)
        .neighbours()
        .iter()
        .any(|n| n.ip == IpAddr::V4(v4(3))));
    assert!(net.iface(2).paths().len() <= 1024);
    net.send(2, &ping4(v4(2), v4(3), true, 2));
    net.run_for(Duration::from_secs(1));
    assert!(net.host(2).delivered.iter().any(|p| is_echo(p, false, 2)));
}

// draft-ietf-ipoib-ip-over-infiniband-06 §14: an ARP reply that changes a known
// neighbour's address is logged.
#[test]
fn arp_reply_changing_address_is_logged() {
    let mut net = Net::new(2);
    net.up();
    net.send(2, &ping4(v4(2), v4(3), true, 1));
    net.run_for(Duration::from_secs(1));
    let other = HwAddr::new(
        HwAddrFlags::NONE,
        0x999,
        Gid::new(Gid::DEFAULT_SUBNET_PREFIX, 0xbad),
    );
    let now = net.now;
    net.iface(2)
        .handle_datagram(now, fake_arp(ArpOperation::Reply, v4(3), other, v4(2)));
    net.settle();
    let logs = net.host(2).logs();
    assert!(
        logs.iter()
            .any(|l| l.contains("10.0.0.3 changed link-layer address")),
        "{logs:?}"
    );
}

// draft-ietf-ipoib-ip-over-infiniband-06 §6: the GRH is optional for unicast inside a subnet and a
// receiver MUST handle frames with or without it.
#[test]
fn unicast_with_and_without_grh() {
    let mut net = Net::with(2, |lid, c| c.unicast_grh = lid == 2);
    net.up();
    net.send(2, &ping4(v4(2), v4(3), true, 1));
    net.run_for(Duration::from_secs(1));
    assert!(net.host(2).delivered.iter().any(|p| is_echo(p, false, 1)));
    let from2: Vec<&Sent> = net
        .sent_by(2)
        .into_iter()
        .filter(|s| s.t.dlid < 0xc000)
        .collect();
    let from3: Vec<&Sent> = net
        .sent_by(3)
        .into_iter()
        .filter(|s| s.t.dlid < 0xc000)
        .collect();
    assert!(!from2.is_empty() && from2.iter().all(|s| s.t.grh.is_some()));
    assert!(!from3.is_empty() && from3.iter().all(|s| s.t.grh.is_none()));
}

// Same seed, same packets: two runs of one scenario put the same bytes on the wire and in the MADs.
#[test]
fn deterministic_given_the_seed() {
    let run = || {
        let mut net = Net::new(3);
        net.up();
        net.send(2, &ping4(v4(2), v4(4), true, 1));
        net.send(3, &udp4(v4(3), "239.1.2.3".parse().unwrap(), b"m"));
        net.run_for(Duration::from_secs(2));
        let wire: Vec<(u16, Vec<u8>, u16)> = net
            .wire
            .iter()
            .map(|s| (s.from, s.t.data.clone(), s.t.dlid))
            .collect();
        let mads: Vec<Vec<u8>> = net.log.iter().map(|(_, _, m)| m.mad.clone()).collect();
        (wire, mads)
    };
    let (a, b) = (run(), run());
    assert!(!a.0.is_empty() && !a.1.is_empty());
    assert_eq!(a, b);
}

// draft-ietf-ipoib-ip-over-infiniband-06 §9.2, §9.1.2 a: `resolve` and `path_to` start the ARP and
// the PathRecord query a packet would, without a packet, and answer once they are done.
#[test]
fn resolve_and_path_to_without_a_packet() {
    let mut net = Net::new(2);
    net.up();
    let now = net.now;
    assert_eq!(
        net.iface(2).resolve(now, IpAddr::V4(v4(3))),
        None,
        "not yet"
    );
    net.run_for(Duration::from_secs(1));
    let now = net.now;
    let hw = net
        .iface(2)
        .resolve(now, IpAddr::V4(v4(3)))
        .expect("resolved");
    assert_eq!(hw, net.iface(3).hw_addr());
    assert_eq!(net.iface(2).path_to(now, hw.gid), None, "query started");
    net.run_for(Duration::from_secs(1));
    let now = net.now;
    let pr = net.iface(2).path_to(now, hw.gid).expect("path");
    assert_eq!((pr.dgid, pr.dlid), (hw.gid, 3));
    assert!(
        net.host(3).delivered.is_empty(),
        "no packet was sent to resolve"
    );
}

// Interface::has_output: true while a datagram waits for poll_transmit (or an event for
// poll_event), without taking it.
#[test]
fn has_output_is_what_the_polls_give() {
    let mut net = Net::new(3);
    net.up();
    net.send(2, &ping4(v4(2), v4(3), true, 1));
    net.run_for(Duration::from_secs(1));
    assert!(!net.iface(2).has_output(), "the harness took everything");
    net.send(2, &ping4(v4(2), v4(3), true, 2));
    assert!(net.iface(2).has_output());
    assert!(net.iface(2).has_output(), "asking does not take it");
    let now = net.now;
    assert!(
        net.iface(2).poll_transmit(now).is_some(),
        "the echo request"
    );
    assert!(!net.iface(2).has_output());
}
