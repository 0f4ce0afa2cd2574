use super::*;
use crate::describe::Collect;
use crate::ipoib::arp::ArpOperation;
use crate::ipoib::hwaddr::{HwAddr, HwAddrFlags};
use crate::ipoib::icmp::Icmpv6Type;
use crate::ipoib::nd::{NdMessage, NdOptionRepr, NdRepr};
use crate::ipoib::udp::UdpRepr;
use crate::types::Gid;
use proptest::prelude::*;
use std::net::{Ipv4Addr, Ipv6Addr};

// draft-ietf-ipoib-ip-over-infiniband-06 §6: type 0x0800, reserved 0, then an IPv4 ICMP echo request
// 10.0.0.1 > 10.0.0.2 id 1 seq 1 with data "abcd" (checksums computed independently).
static PING: [u8; 36] = [
    0x08, 0x00, 0x00, 0x00, // encapsulation header
    0x45, 0x00, 0x00, 0x20, 0x1c, 0x46, 0x40, 0x00, 0x40, 0x01, 0x0a, 0x95, 0x0a, 0x00, 0x00, 0x01,
    0x0a, 0x00, 0x00, 0x02, // IPv4
    8, 0, 0x33, 0x37, 0x00, 0x01, 0x00, 0x01, b'a', b'b', b'c', b'd', // ICMP
];

fn ping() -> IpoibFrame<'static> {
    IpoibFrame::new(
        IpoibPayload::Ipv4(Ipv4Datagram {
            header: Ipv4Repr {
                tos: 0,
                ident: 0x1c46,
                dont_frag: true,
                more_frags: false,
                frag_offset: 0,
                ttl: 64,
                protocol: IpProtocol::Icmp,
                src_addr: Ipv4Addr::new(10, 0, 0, 1),
                dst_addr: Ipv4Addr::new(10, 0, 0, 2),
                payload_len: 12,
            },
            options: &[],
            payload: IpPayload::Icmpv4(Icmpv4Repr::echo(true, 1, 1, b"abcd")),
        }),
        EtherType::Ipv4,
    )
}

#[test]
fn ipv4_ping_parse_emit_summary() {
    let f = IpoibFrame::parse(&PING).unwrap();
    assert_eq!(f, ping());
    assert_eq!(
        f.summary(),
        "IPv4 10.0.0.1 > 10.0.0.2 ICMP echo request id 1 seq 1"
    );
    let mut b = [0u8; 36];
    ping().emit(&mut b).unwrap();
    assert_eq!(b, PING);
    let mut c = Collect::default();
    f.describe(&mut c);
    assert_eq!(c.get("ipoib.type"), Some("IPv4 (0x800)"));
    assert_eq!(c.get("ip.checksum"), Some("0x0a95"));
    assert_eq!(c.get("ip.len"), Some("32"));
    assert_eq!(c.get("ip.src"), Some("10.0.0.1"));
    assert_eq!(c.get("icmp.type"), Some("echo request (0x8)"));
    assert_eq!(c.get("icmp.ident"), Some("1"));
}

// Link padding after the IPv4 total length is ignored.
#[test]
fn ipv4_trailing_bytes_ignored() {
    let mut b = PING.to_vec();
    b.extend_from_slice(&[0; 10]);
    assert_eq!(IpoibFrame::parse(&b).unwrap(), ping());
}

#[test]
fn bad_ip_checksum_is_invalid_not_error() {
    let mut b = PING;
    b[14] ^= 0xff;
    let f = IpoibFrame::parse(&b).unwrap();
    assert!(matches!(
        f.payload,
        IpoibPayload::Invalid {
            error: Error::Checksum,
            ..
        }
    ));
    assert_eq!(f.summary(), "IPv4 checksum mismatch (32 bytes)");
    let mut b = PING;
    b[35] ^= 0xff;
    let f = IpoibFrame::parse(&b).unwrap();
    assert!(matches!(
        f.payload,
        IpoibPayload::Ipv4(Ipv4Datagram {
            payload: IpPayload::Invalid { .. },
            ..
        })
    ));
    assert_eq!(IpoibFrame::parse(&PING[..3]), Err(Error::Truncated));
}

// Regression (found by the `decode` fuzz target): an invalid datagram or ICMP message is described
// inside the group it would have been, never as a top-level `error`, which `ipoib decode` keeps for
// malformed IB packets.
#[test]
fn invalid_payload_error_stays_in_its_group() {
    let top_level = |c: &Collect| c.fields.iter().any(|(k, _)| k == "error" || k == "data");
    // A bad IPv4 header checksum: the datagram is invalid.
    let mut b = PING;
    b[14] ^= 0xff;
    let mut c = Collect::default();
    IpoibFrame::parse(&b).unwrap().describe(&mut c);
    assert!(!top_level(&c), "{:?}", c.fields);
    assert_eq!(c.get("ip.error"), Some("checksum mismatch"));
    assert_eq!(c.get("ip.data").map(str::len), Some(64));
    // A bad ICMP checksum: the IPv4 header is shown, the ICMP message is invalid.
    let mut b = PING;
    b[35] ^= 0xff;
    let mut c = Collect::default();
    IpoibFrame::parse(&b).unwrap().describe(&mut c);
    assert!(!top_level(&c), "{:?}", c.fields);
    assert_eq!(c.get("ip.src"), Some("10.0.0.1"));
    assert_eq!(c.get("icmp.error"), Some("checksum mismatch"));
    // A truncated ARP packet.
    let arp = [0x08, 0x06, 0, 0, 0x00, 0x20, 0x08, 0x00];
    let mut c = Collect::default();
    IpoibFrame::parse(&arp).unwrap().describe(&mut c);
    assert!(!top_level(&c), "{:?}", c.fields);
    assert_eq!(c.get("arp.error"), Some("truncated"));
}

// draft-ietf-ipoib-ip-over-infiniband-06 §6 (type 0x0806) and §9.2 (ARP, htype 32, hlen 20).
#[test]
fn arp_frame() {
    let arp = ArpRepr {
        operation: ArpOperation::Reply,
        sender_hw: HwAddr::new(
            HwAddrFlags::NONE,
            0x49,
            Gid::new(Gid::DEFAULT_SUBNET_PREFIX, 2),
        ),
        sender_ip: Ipv4Addr::new(10, 0, 0, 2),
        target_hw: HwAddr::new(
            HwAddrFlags::RC,
            0x48,
            Gid::new(Gid::DEFAULT_SUBNET_PREFIX, 1),
        ),
        target_ip: Ipv4Addr::new(10, 0, 0, 1),
    };
    let f = IpoibFrame::new(IpoibPayload::Arp(arp), EtherType::Arp);
    let mut b = vec![0u8; f.buffer_len()];
    assert_eq!(b.len(), 60);
    f.emit(&mut b).unwrap();
    assert_eq!(
        b[..12],
        [0x08, 0x06, 0, 0, 0x00, 0x20, 0x08, 0x00, 20, 4, 0x00, 0x02]
    );
    assert_eq!(IpoibFrame::parse(&b).unwrap(), f);
    assert_eq!(
        f.summary(),
        "ARP reply 10.0.0.2 is-at 00:00:00:49:fe:80:00:00:00:00:00:00:00:00:00:00:00:00:00:02"
    );
    let mut c = Collect::default();
    f.describe(&mut c);
    assert_eq!(c.get("arp.opcode"), Some("reply (0x2)"));
    assert_eq!(c.get("arp.dst_hw.rc"), Some("true"));
    // An Ethernet-sized ARP inside IPoIB is malformed (§9.2: hardware length 20).
    b[8] = 6;
    assert!(matches!(
        IpoibFrame::parse(&b).unwrap().payload,
        IpoibPayload::Invalid {
            error: Error::Malformed,
            ..
        }
    ));
}

// draft-ietf-ipoib-ip-over-infiniband-06 §6 (type 0x86DD) and §9.3 (ND option): a neighbour
// advertisement with a target link-layer address option.
#[test]
fn ipv6_neighbor_advert_frame() {
    let src: Ipv6Addr = "fe80::202:c903:0:2".parse().unwrap();
    let dst: Ipv6Addr = "fe80::202:c903:0:1".parse().unwrap();
    let lla = HwAddr::new(
        HwAddrFlags::RC,
        0x49,
        Gid::new(Gid::DEFAULT_SUBNET_PREFIX, 0x0002_c903_0000_0002),
    );
    let mut opt = [0u8; 24];
    NdOptionRepr::TargetLinkLayerAddr(lla)
        .emit(&mut opt)
        .unwrap();
    let na = NdRepr {
        message: NdMessage::NeighborAdvert {
            flags: 0x60,
            target: src,
        },
        options: &opt,
        profile: NdProfile::Rfc4391,
    };
    let mut icmp = [0u8; 48];
    na.emit(src, dst, &mut icmp).unwrap();
    let f = IpoibFrame::new(
        IpoibPayload::Ipv6(Ipv6Datagram {
            header: Ipv6Repr {
                traffic_class: 0,
                flow_label: 0,
                payload_len: 48,
                next_header: IpProtocol::Icmpv6,
                hop_limit: 255,
                src_addr: src,
                dst_addr: dst,
            },
            payload: IpPayload::Icmpv6(Icmpv6Repr::parse(src, dst, &icmp).unwrap()),
        }),
        EtherType::Ipv6,
    );
    let mut b = vec![0u8; f.buffer_len()];
    f.emit(&mut b).unwrap();
    assert_eq!(b[..4], [0x86, 0xdd, 0, 0]);
    let back = IpoibFrame::parse(&b).unwrap();
    assert_eq!(back, f);
    match back.payload {
        IpoibPayload::Ipv6(Ipv6Datagram {
            payload: IpPayload::Icmpv6(m),
            ..
        }) => {
            assert_eq!(m.msg_type, Icmpv6Type::NeighborAdvert);
            assert_eq!(NdRepr::parse_message(&m).unwrap().target_lla(), Some(lla));
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(
        back.summary(),
        "IPv6 fe80::202:c903:0:2 > fe80::202:c903:0:1 ICMPv6 neighbor advertisement fe80::202:c903:0:2 \
         is-at 80:00:00:49:fe:80:00:00:00:00:00:00:00:02:c9:03:00:00:00:02"
    );
    let mut c = Collect::default();
    back.describe(&mut c);
    assert_eq!(c.get("ipv6.hlim"), Some("255"));
    assert_eq!(c.get("icmpv6.flag_s"), Some("true"));
    assert_eq!(c.get("icmpv6.option_0.link_addr.qpn"), Some("0x000049"));
}

#[test]
fn unknown_ethertype_kept() {
    let b = [0x88, 0xb5, 0, 0, 1, 2, 3];
    let f = IpoibFrame::parse(&b).unwrap();
    assert_eq!(f.payload, IpoibPayload::Unknown(&[1, 2, 3]));
    assert_eq!(f.summary(), "ethertype 0x88b5, 3 bytes");
    let mut o = [0u8; 7];
    f.emit(&mut o).unwrap();
    assert_eq!(o, b);
}

#[test]
fn ipv4_with_options_round_trip() {
    let mut d = match ping().payload {
        IpoibPayload::Ipv4(d) => d,
        _ => unreachable!(),
    };
    d.options = &[1, 1, 1, 0]; // NOP, NOP, NOP, EOL
    let f = IpoibFrame::new(IpoibPayload::Ipv4(d), EtherType::Ipv4);
    let mut b = vec![0u8; f.buffer_len()];
    f.emit(&mut b).unwrap();
    assert_eq!(b[4], 0x46);
    let back = IpoibFrame::parse(&b).unwrap();
    assert_eq!(back, f);
    let mut c = Collect::default();
    back.describe(&mut c);
    assert_eq!(c.get("ip.hdr_len"), Some("24"));
    assert_eq!(
        c.get("ip.checksum"),
        Some(format!("{:#06x}", u16::from_be_bytes([b[14], b[15]])).as_str())
    );
}

/// An IPv4 UDP datagram 10.0.0.1:40001 > 10.0.0.2:5001 carrying `data`.
fn udp4(data: &[u8]) -> IpoibFrame<'_> {
    let mut d = match ping().payload {
        IpoibPayload::Ipv4(d) => d,
        _ => unreachable!(),
    };
    d.header.protocol = IpProtocol::Udp;
    d.header.payload_len = 8 + data.len() as u16;
    d.payload = IpPayload::Udp(UdpRepr::new(40001, 5001, data));
    IpoibFrame::new(IpoibPayload::Ipv4(d), EtherType::Ipv4)
}

// RFC 768 in IPv4 and IPv6 (RFC 8200 §8.1): ports and length described and summarised, the
// checksum computed on emit and verified on parse.
#[test]
fn udp_frames() {
    let f = udp4(b"hello");
    let mut b = vec![0u8; f.buffer_len()];
    f.emit(&mut b).unwrap();
    let back = IpoibFrame::parse(&b).unwrap();
    assert_eq!(back, f);
    assert_eq!(
        back.summary(),
        "IPv4 10.0.0.1 > 10.0.0.2 UDP 40001 > 5001 length 13"
    );
    let mut c = Collect::default();
    back.describe(&mut c);
    assert_eq!(c.get("ip.proto"), Some("UDP (0x11)"));
    assert_eq!(c.get("udp.src_port"), Some("40001"));
    assert_eq!(c.get("udp.dst_port"), Some("5001"));
    assert_eq!(c.get("udp.length"), Some("13"));
    assert_eq!(
        c.get("udp.checksum"),
        Some(format!("{:#06x}", u16::from_be_bytes([b[30], b[31]])).as_str())
    );
    assert_eq!(c.get("udp.data"), Some("68656c6c6f"));
    // A bad UDP checksum: the IPv4 header is shown, the datagram is invalid in group `udp`.
    let mut bad = b.clone();
    let n = bad.len() - 1;
    bad[n] ^= 1;
    let mut c = Collect::default();
    let f = IpoibFrame::parse(&bad).unwrap();
    f.describe(&mut c);
    assert_eq!(c.get("udp.error"), Some("checksum mismatch"));
    assert_eq!(
        f.summary(),
        "IPv4 10.0.0.1 > 10.0.0.2 UDP (checksum mismatch)"
    );
    // A valid datagram with a byte after it inside the IP payload (Length shorter than the
    // payload): malformed, not silently cut.
    let f = udp4(b"hell");
    let mut short = vec![0u8; f.buffer_len()];
    f.emit(&mut short).unwrap();
    short.push(b'o');
    short[4 + 3] += 1; // IPv4 total length
    Ipv4Packet::new_unchecked(&mut short[4..24]).fill_checksum();
    let f = IpoibFrame::parse(&short).unwrap();
    assert!(matches!(
        f.payload,
        IpoibPayload::Ipv4(Ipv4Datagram {
            payload: IpPayload::Invalid {
                error: Error::Malformed,
                ..
            },
            ..
        })
    ));
    // A fragment is not interpreted.
    let mut frag = b.clone();
    frag[4 + 6] |= 0x20;
    Ipv4Packet::new_unchecked(&mut frag[4..24]).fill_checksum();
    let f = IpoibFrame::parse(&frag).unwrap();
    assert!(matches!(
        f.payload,
        IpoibPayload::Ipv4(Ipv4Datagram {
            payload: IpPayload::Raw(_),
            ..
        })
    ));
    // IPv6: the checksum covers the IPv6 pseudo-header.
    let f = IpoibFrame::new(
        IpoibPayload::Ipv6(Ipv6Datagram {
            header: Ipv6Repr {
                traffic_class: 0,
                flow_label: 0,
                payload_len: 0,
                next_header: IpProtocol::Udp,
                hop_limit: 1,
                src_addr: "fe80::1".parse().unwrap(),
                dst_addr: "ff02::1".parse().unwrap(),
            },
            payload: IpPayload::Udp(UdpRepr::new(7, 9, b"x")),
        }),
        EtherType::Ipv6,
    );
    let mut b = vec![0u8; f.buffer_len()];
    f.emit(&mut b).unwrap();
    let back = IpoibFrame::parse(&b).unwrap();
    assert!(matches!(
        back.payload,
        IpoibPayload::Ipv6(Ipv6Datagram {
            payload: IpPayload::Udp(UdpRepr {
                src_port: 7,
                dst_port: 9,
                ..
            }),
            ..
        })
    ));
    assert_eq!(back.summary(), "IPv6 fe80::1 > ff02::1 UDP 7 > 9 length 9");
    let other: Ipv6Addr = "fe80::2".parse().unwrap();
    b[4 + 8..4 + 24].copy_from_slice(&other.octets());
    let f = IpoibFrame::parse(&b).unwrap();
    let mut c = Collect::default();
    f.describe(&mut c);
    assert_eq!(c.get("udp.error"), Some("checksum mismatch"));
}

proptest! {
    #[test]
    fn round_trip_udp(data in proptest::collection::vec(any::<u8>(), 0..64)) {
        let f = udp4(&data);
        let mut b = vec![0u8; f.buffer_len()];
        f.emit(&mut b).unwrap();
        prop_assert_eq!(IpoibFrame::parse(&b).unwrap(), f);
    }

    #[test]
    fn round_trip_ipv4(ident in any::<u16>(), ttl in any::<u8>(), id in any::<u16>(), seq in any::<u16>(),
                       data in proptest::collection::vec(any::<u8>(), 0..64)) {
        let mut d = match ping().payload { IpoibPayload::Ipv4(d) => d, _ => unreachable!() };
        d.header.ident = ident;
        d.header.ttl = ttl;
        d.header.payload_len = 8 + data.len() as u16;
        d.payload = IpPayload::Icmpv4(Icmpv4Repr::echo(false, id, seq, &data));
        let f = IpoibFrame::new(IpoibPayload::Ipv4(d), EtherType::Ipv4);
        let mut b = vec![0u8; f.buffer_len()];
        f.emit(&mut b).unwrap();
        prop_assert_eq!(IpoibFrame::parse(&b).unwrap(), f);
    }

    #[test]
    fn round_trip_raw(t in any::<u16>(), data in proptest::collection::vec(any::<u8>(), 0..64)) {
        let f = IpoibFrame { header: EncapRepr::new(EtherType::Unknown(t)), payload: IpoibPayload::Unknown(&data) };
        prop_assume!(matches!(EtherType::from(t), EtherType::Unknown(_)));
        let mut b = vec![0u8; f.buffer_len()];
        f.emit(&mut b).unwrap();
        prop_assert_eq!(IpoibFrame::parse(&b).unwrap(), f);
    }

    #[test]
    fn parse_never_panics(t in prop_oneof![Just(0x0800u16), Just(0x0806), Just(0x8035), Just(0x86dd), any::<u16>()],
                          data in proptest::collection::vec(any::<u8>(), 0..300)) {
        let mut b = t.to_be_bytes().to_vec();
        b.extend_from_slice(&[0, 0]);
        b.extend_from_slice(&data);
        if let Ok(f) = IpoibFrame::parse(&b) {
            let _ = f.summary();
            f.describe(&mut Collect::default());
            let mut o = vec![0u8; f.buffer_len()];
            let _ = f.emit(&mut o);
        }
        let _ = IpoibFrame::parse(&data);
    }

    #[test]
    fn parse_never_panics_on_ipv4_icmp(data in proptest::collection::vec(any::<u8>(), 0..100)) {
        // A valid IPv4 header over arbitrary ICMP bytes reaches the ICMP parser.
        let mut b = PING[..24].to_vec();
        b.extend_from_slice(&data);
        let tl = (20 + data.len()) as u16;
        b[6..8].copy_from_slice(&tl.to_be_bytes());
        Ipv4Packet::new_unchecked(&mut b[4..24]).fill_checksum();
        let f = IpoibFrame::parse(&b).unwrap();
        let _ = f.summary();
        f.describe(&mut Collect::default());
    }
}

// draft-ietf-ipoib-ip-over-infiniband-06 §6 table 1 (RARP 0x8035) with the §9.2 layout, RFC 903
// operation 3.
#[test]
fn rarp_frame() {
    let me = HwAddr::new(
        HwAddrFlags::NONE,
        0x48,
        Gid::new(Gid::DEFAULT_SUBNET_PREFIX, 1),
    );
    let rarp = ArpRepr {
        operation: ArpOperation::RarpRequest,
        sender_hw: me,
        sender_ip: Ipv4Addr::UNSPECIFIED,
        target_hw: me,
        target_ip: Ipv4Addr::UNSPECIFIED,
    };
    let f = IpoibFrame::new(IpoibPayload::Rarp(rarp), EtherType::Rarp);
    let mut b = vec![0u8; f.buffer_len()];
    f.emit(&mut b).unwrap();
    assert_eq!(b[..4], [0x80, 0x35, 0, 0]);
    assert_eq!(b[10..12], [0, 3]);
    assert_eq!(IpoibFrame::parse(&b).unwrap(), f);
    assert!(f
        .summary()
        .starts_with("RARP reverse request who-is 00:00:00:48:fe:80"));
    let mut c = Collect::default();
    f.describe(&mut c);
    assert_eq!(c.get("rarp.opcode"), Some("reverse request (0x3)"));
}
