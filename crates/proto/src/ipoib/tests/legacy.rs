//! The legacy IPv6 profile of draft-kashyap-ipoib-ipv6-01, selectable per interface, off by default.

use super::*;
use ipoib_wire::ib::BthRepr;
use ipoib_wire::ipoib::addr::{guid_from_link_local, link_local_from_guid};
use ipoib_wire::ipoib::legacy::{LegacyCapabilities, LegacyLlaRepr, LEGACY_ALL_HOSTS_MGID};
use ipoib_wire::ipoib::{NdMessage, NdOptionRepr, NdProfile, NdRepr};
use ipoib_wire::QKey;

// draft-kashyap-ipoib-ipv6-01 §5.1 (ND option: type, length 3, LID, flags, QPN, Q_Key, GUID) and
// §4.1 (FF1y:3333:: mapping, all-hosts FF12:3333::1); ping over link-local between legacy hosts.
#[test]
fn legacy_profile_option_and_mapping() {
    let mut net = Net::with(2, |_, c| {
        c.legacy_ipv6 = true;
        c.ipv4 = None;
    });
    net.up();
    assert!(net.host(2).attached.contains(&LEGACY_ALL_HOSTS_MGID));
    assert_eq!(
        LEGACY_ALL_HOSTS_MGID.to_ipv6().to_string(),
        "ff12:3333::1",
        "draft-kashyap-ipoib-ipv6-01 §4.1"
    );
    let (a2, a3) = (link_local_from_guid(guid(2)), link_local_from_guid(guid(3)));
    net.send(2, &ping6(a2, a3, true, 1));
    net.run_for(Duration::from_secs(1));
    assert!(net.host(2).delivered.iter().any(|p| is_echo(p, false, 1)));

    let (t, opts) = net
        .sent_by(2)
        .into_iter()
        .find_map(|s| {
            let p = Ipv6Packet::new_checked(&s.t.data[..]).ok()?;
            let ip = Ipv6Repr::parse(&p).ok()?;
            let nd = NdRepr::parse(ip.src_addr, ip.dst_addr, p.payload()).ok()?;
            matches!(nd.message, NdMessage::NeighborSolicit { target } if target == a3 && !ip.src_addr.is_unspecified())
                .then(|| (s.t.clone(), nd.options.to_vec()))
        })
        .expect("NS");
    assert_eq!(
        t.grh.map(|g| g.gid.to_ipv6().to_string()),
        Some("ff12:3333::1:ff00:3".into())
    );
    let mut want = vec![1u8, 3, 0x00, 0x02, 0x00];
    want.extend_from_slice(&qpn(2).to_be_bytes()[1..]);
    want.extend_from_slice(&0x0b1bu32.to_be_bytes());
    want.extend_from_slice(&guid(2).0.to_be_bytes());
    want.extend_from_slice(&[0; 4]);
    assert_eq!(opts, want);
}

// The legacy profile is off by default: the §9.3 option and the 0x601B mapping.
#[test]
fn legacy_profile_off_by_default() {
    assert!(!InterfaceConfig::new(guid(2), qpn(2)).legacy_ipv6);
    let mut net = Net::new(1);
    net.up();
    assert!(!net.host(2).attached.contains(&LEGACY_ALL_HOSTS_MGID));
    assert!(net
        .host(2)
        .attached
        .iter()
        .any(|m| m.to_ipv6().to_string() == "ff12:601b:ffff::1"));
}

// draft-kashyap-ipoib-ipv6-01 §7: no protocol header, the IPv6 datagram follows the DETH (told by
// its first nibble), and "The GRH header will always be used" (destination GID: the local prefix ‖
// the GUID of the option). IPv4 and ARP, outside the legacy draft, keep the 4-byte header. Fails
// on the old code, which sent every IPv6 datagram of the profile with the 4-byte header of
// draft-ietf-ipoib-ip-over-infiniband-06 §6 and a unicast one without a GRH.
#[test]
fn legacy_profile_frames_ipv6_bare_with_a_grh() {
    let mut net = Net::with(2, |_, c| c.legacy_ipv6 = true);
    net.up();
    let (a2, a3) = (link_local_from_guid(guid(2)), link_local_from_guid(guid(3)));
    net.send(2, &ping6(a2, a3, true, 7));
    net.send(2, &ping4(v4(2), v4(3), true, 8));
    net.run_for(Duration::from_secs(1));
    assert!(net.host(2).delivered.iter().any(|p| is_echo(p, false, 7)));
    assert!(net.host(2).delivered.iter().any(|p| is_echo(p, false, 8)));
    let sent: Vec<UdTransmit> = net.wire.iter().map(|s| s.t.clone()).collect();
    let v6: Vec<&UdTransmit> = sent.iter().filter(|t| t.data[0] >> 4 == 6).collect();
    assert!(
        v6.iter().any(|t| t.remote_qpn == qpn(3)) && v6.iter().any(|t| t.remote_qpn == qpn(2)),
        "IPv6 both ways, bare"
    );
    assert!(
        !sent.iter().any(|t| t.data[..2] == [0x86, 0xdd]),
        "no IPv6 datagram with the 4-byte header"
    );
    for t in &v6 {
        let dst = Ipv6Packet::new_checked(&t.data[..]).unwrap().dst_addr();
        let g = t.grh.expect("every legacy IPv6 datagram has a GRH");
        if t.remote_qpn != BthRepr::MULTICAST_QPN {
            assert!(!dst.is_multicast());
            let want = guid_from_link_local(dst).expect("link-local destination");
            assert_eq!(g.gid, Gid::new(Gid::DEFAULT_SUBNET_PREFIX, want.0));
        }
    }
    assert!(
        sent.iter().any(|t| t.data[..4] == [0x08, 0x06, 0, 0]),
        "ARP keeps its header"
    );
    assert!(
        sent.iter().any(|t| t.data[..4] == [0x08, 0x00, 0, 0]),
        "IPv4 keeps its header"
    );
}

/// A neighbour solicitation from host `lid`'s link-local address for host `to`'s, to its
/// solicited-node group, whose legacy source option (draft-kashyap-ipoib-ipv6-01 §5.1) names
/// host `lid`'s LID, QPN and GUID and the Q_Key `qkey`.
fn legacy_ns(lid: u16, to: u16, qkey: QKey) -> Vec<u8> {
    let (src, target) = (
        link_local_from_guid(guid(lid)),
        link_local_from_guid(guid(to)),
    );
    let dst = super::super::ipv6::solicited_node(target);
    let o = NdOptionRepr::LegacyLinkLayerAddr(LegacyLlaRepr {
        target: false,
        lid,
        flags: LegacyCapabilities(0),
        qpn: qpn(lid),
        qkey,
        guid: guid(lid),
    });
    let mut opts = vec![0u8; o.buffer_len()];
    o.emit(&mut opts).unwrap();
    let nd = NdRepr {
        message: NdMessage::NeighborSolicit { target },
        options: &opts,
        profile: NdProfile::Legacy,
    };
    let mut m = vec![0u8; nd.buffer_len()];
    nd.emit(src, dst, &mut m).unwrap();
    ip6(src, dst, IpProtocol::Icmpv6, 255, &m)
}

// draft-kashyap-ipoib-ipv6-01 §5.1.3: the option's Q_Key is "the corresponding Q_Key the
// endpoints intend to use" (§2.2: a sender must know its peer's Q_Key). A peer that names Q_Key
// 0x1234 gets its unicast IPv6 (the NA answering its NS, then a ping) with 0x1234; multicast keeps
// the group's Q_Key; a controlled Q_Key, which this QP may not send (IBA 1 §10.2.4), leaves the
// group's. Fails on the old code, which sent every datagram with the broadcast group's Q_Key.
#[test]
fn legacy_profile_sends_with_the_qkey_of_the_option() {
    let mut net = Net::with(2, |_, c| {
        c.legacy_ipv6 = true;
        c.ipv4 = None;
    });
    net.up();
    let group = net.host(2).qkey;
    assert_eq!(group, QKey(0x0b1b));
    let (a2, a3) = (link_local_from_guid(guid(2)), link_local_from_guid(guid(3)));
    let to3 = |net: &Net, from: usize| -> Vec<UdTransmit> {
        net.wire[from..]
            .iter()
            .filter(|s| s.from == 2 && s.t.remote_qpn == qpn(3))
            .map(|s| s.t.clone())
            .collect()
    };

    let start = net.wire.len();
    net.send(3, &legacy_ns(3, 2, QKey(0x1234)));
    net.run_for(Duration::from_millis(100));
    let na = to3(&net, start);
    assert_eq!(na.len(), 1, "the NA answering the NS");
    assert_eq!(na[0].qkey, QKey(0x1234));
    assert_eq!(na[0].data[40], 136, "ICMPv6 neighbor advertisement");

    let start = net.wire.len();
    net.send(2, &ping6(a2, a3, true, 5));
    net.run_for(Duration::from_millis(100));
    let sent = to3(&net, start);
    assert!(sent.iter().any(|t| t.data[40] == 128), "the echo request");
    assert!(sent.iter().all(|t| t.qkey == QKey(0x1234)), "{sent:?}");
    assert!(net.wire[start..]
        .iter()
        .filter(|s| s.from == 2 && s.t.remote_qpn == BthRepr::MULTICAST_QPN)
        .all(|s| s.t.qkey == group));

    let start = net.wire.len();
    net.send(3, &legacy_ns(3, 2, QKey::GSI));
    net.run_for(Duration::from_millis(100));
    let na = to3(&net, start);
    assert_eq!(na.len(), 1, "the NA answering the NS");
    assert_eq!(na[0].qkey, group, "controlled: the group's Q_Key");
}

// draft-kashyap-ipoib-ipv6-01 §7 defines no header and lets an implementation tell its protocols
// by their signature; it does not forbid the 4-byte header of draft-ietf-ipoib-ip-over-infiniband-06
// §6 (the draft's own option (a), which it chose not to define). A legacy interface accepts IPv6
// behind it too, and reads the ND in it with the legacy option (docs/conformance/ipoib-ud.md
// "Legacy profile").
#[test]
fn legacy_profile_accepts_ipv6_behind_the_4_byte_header() {
    let mut net = Net::with(2, |_, c| {
        c.legacy_ipv6 = true;
        c.ipv4 = None;
    });
    net.up();
    let (a2, a3) = (link_local_from_guid(guid(2)), link_local_from_guid(guid(3)));
    let framed = |p: &[u8]| [&[0x86, 0xdd, 0, 0][..], p].concat();
    let ns = legacy_ns(3, 2, QKey(0x0b1b));
    let dst = super::super::ipv6::solicited_node(a2);
    let mgid = ipoib_wire::ipoib::legacy::legacy_ipv6_mgid(dst).unwrap();
    let (lid3, sgid) = (net.host(3).port.lid, net.iface(3).gid());
    let rx = |data: Vec<u8>, mcast: bool| UdReceived {
        src_qpn: qpn(3),
        slid: lid3,
        sl: 0,
        grh: Some(RecvGrh {
            sgid,
            dgid: if mcast {
                mgid
            } else {
                Gid::new(Gid::DEFAULT_SUBNET_PREFIX, guid(2).0)
            },
            tclass: 0,
            flow_label: 0,
            hop_limit: 0,
        }),
        pkey: PKey::DEFAULT,
        qkey: QKey(0x0b1b),
        data,
    };
    let now = net.now;
    net.iface(2).handle_datagram(now, rx(framed(&ns), true));
    net.run_for(Duration::from_millis(100));
    let na: Vec<&Sent> = net
        .sent_by(2)
        .into_iter()
        .filter(|s| s.t.remote_qpn == qpn(3))
        .collect();
    assert_eq!(
        na.len(),
        1,
        "the NA answering the framed NS, to the legacy option's QPN"
    );
    assert_eq!(
        na[0].t.data[40], 136,
        "bare, as every IPv6 datagram it sends"
    );

    let now = net.now;
    let delivered = net.host(2).delivered.len();
    net.iface(2)
        .handle_datagram(now, rx(framed(&ping6(a3, a2, false, 9)), false));
    net.settle();
    assert!(net.host(2).delivered[delivered..]
        .iter()
        .any(|p| is_echo(p, false, 9)));
}
