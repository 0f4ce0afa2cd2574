use super::*;
use crate::describe::Collect;
use crate::ipoib::ip::{IpProtocol, Ipv4Repr};
use proptest::prelude::*;
use std::net::Ipv4Addr;

// RFC 792 echo request, id 1 seq 1, 4 data bytes "abcd".
static ECHO4: [u8; 12] = [
    8, 0, 0x33, 0x37, 0x00, 0x01, 0x00, 0x01, b'a', b'b', b'c', b'd',
];

#[test]
fn v4_deconstruct_parse_emit() {
    let p = IcmpPacket::new_checked(&ECHO4[..]).unwrap();
    assert_eq!(p.msg_type(), 8);
    assert_eq!(p.echo_ident(), 1);
    assert_eq!(p.echo_seq(), 1);
    assert!(p.verify_checksum_v4());
    let r = Icmpv4Repr::parse(&ECHO4).unwrap();
    assert_eq!(r, Icmpv4Repr::echo(true, 1, 1, b"abcd"));
    assert_eq!(r.to_string(), "ICMP echo request id 1 seq 1");
    let mut b = [0u8; 12];
    r.emit(&mut b).unwrap();
    assert_eq!(b, ECHO4);
    let mut bad = ECHO4;
    bad[9] = b'x';
    assert_eq!(Icmpv4Repr::parse(&bad), Err(Error::Checksum));
    let mut c = Collect::default();
    r.describe(&mut c);
    assert_eq!(c.get("type"), Some("echo request (0x8)"));
    assert_eq!(c.get("seq"), Some("1"));
}

#[test]
fn v6_echo() {
    let src: Ipv6Addr = "fe80::1".parse().unwrap();
    let dst: Ipv6Addr = "fe80::2".parse().unwrap();
    let r = Icmpv6Repr {
        msg_type: Icmpv6Type::EchoRequest,
        code: 0,
        rest: 0x0007_0003,
        body: b"hi",
    };
    let mut b = [0u8; 10];
    r.emit(src, dst, &mut b).unwrap();
    assert_eq!(b[..2], [128, 0]);
    assert_eq!(Icmpv6Repr::parse(src, dst, &b).unwrap(), r);
    let other: Ipv6Addr = "fe80::3".parse().unwrap();
    assert_eq!(Icmpv6Repr::parse(src, other, &b), Err(Error::Checksum));
    assert_eq!(r.to_string(), "ICMPv6 echo request id 7 seq 3");
}

// RFC 4861 §4: types 133-137 are ND, and only those.
#[test]
fn nd_types() {
    for t in 0..=255u8 {
        assert_eq!(Icmpv6Type::from(t).is_nd(), (133..=137).contains(&t), "{t}");
    }
}

// RFC 1191 §4: destination unreachable, fragmentation needed (type 3 code 4), unused 0, next-hop
// MTU 2044, quoting the IPv4 header of a 4028-byte UDP datagram 10.0.0.1 > 10.0.0.2 (id 0x1c46,
// DF, TTL 64, header checksum 0xfae8) and its first 8 data bytes (RFC 792): the UDP header, ports
// 1234 > 5678, length 4008, checksum 0. Checksums computed outside this code.
static FRAG_NEEDED: [u8; 36] = [
    0x03, 0x04, 0xca, 0x57, 0x00, 0x00, 0x07, 0xfc, 0x45, 0x00, 0x0f, 0xbc, 0x1c, 0x46, 0x40, 0x00,
    0x40, 0x11, 0xfa, 0xe8, 0x0a, 0x00, 0x00, 0x01, 0x0a, 0x00, 0x00, 0x02, 0x04, 0xd2, 0x16, 0x2e,
    0x0f, 0xa8, 0x00, 0x00,
];

/// The invoking datagram of [`FRAG_NEEDED`], whole: header, UDP header, then 4000 data bytes.
fn big_udp_v4() -> Vec<u8> {
    let mut b = FRAG_NEEDED[8..].to_vec();
    b.extend((0..4000).map(|i| i as u8));
    assert_eq!(b.len(), 4028);
    b
}

// RFC 792, RFC 1191 §4.
#[test]
fn frag_needed_deconstruct() {
    let p = IcmpPacket::new_checked(&FRAG_NEEDED[..]).unwrap();
    assert_eq!(p.msg_type(), 3);
    assert_eq!(p.code(), 4);
    assert_eq!(p.checksum(), 0xca57);
    assert_eq!(p.rest() >> 16, 0, "unused");
    assert_eq!(p.next_hop_mtu(), 2044);
    assert!(p.verify_checksum_v4());
    assert_eq!(p.body(), &FRAG_NEEDED[8..]);
}

// RFC 792, RFC 1191 §4.
#[test]
fn frag_needed_construct() {
    let mut b = [0xffu8; 36];
    let mut p = IcmpPacket::new_unchecked(&mut b[..]);
    p.set_msg_type(Icmpv4Type::DestUnreachable.into());
    p.set_code(Icmpv4Unreachable::FragNeeded.into());
    p.set_next_hop_mtu(2044);
    p.body_mut().copy_from_slice(&FRAG_NEEDED[8..]);
    p.fill_checksum_v4();
    assert_eq!(b, FRAG_NEEDED);
}

// RFC 792: the IP header and the first 8 bytes of the invoking datagram's data; RFC 1191 §4.
#[test]
fn frag_needed_parse_emit() {
    let big = big_udp_v4();
    let built = Icmpv4Repr::frag_needed(2044, &big).unwrap();
    assert_eq!(built.body, &big[..28]);
    let parsed = Icmpv4Repr::parse(&FRAG_NEEDED).unwrap();
    assert_eq!(parsed, built);
    assert_eq!(parsed.next_hop_mtu(), Some(2044));
    assert_eq!(parsed.echo_ident_seq(), None);
    let mut b = [0u8; 36];
    built.emit(&mut b).unwrap();
    assert_eq!(b, FRAG_NEEDED);
    let mut bad = FRAG_NEEDED;
    bad[7] ^= 1;
    assert_eq!(Icmpv4Repr::parse(&bad), Err(Error::Checksum));
}

// RFC 792: header options are part of the quoted header; a datagram shorter than header + 8 is
// quoted whole, without the link padding past its total length.
#[test]
fn frag_needed_quote_bounds() {
    let mut with_opts = vec![0x46, 0, 0, 40];
    with_opts.resize(40, 0xaa);
    let r = Icmpv4Repr::frag_needed(1500, &with_opts).unwrap();
    assert_eq!(r.body.len(), 24 + 8);
    let mut short = FRAG_NEEDED[8..32].to_vec();
    short[2..4].copy_from_slice(&24u16.to_be_bytes());
    short.extend([0u8; 10]); // padding past the total length
    let r = Icmpv4Repr::frag_needed(1500, &short).unwrap();
    assert_eq!(r.body, &short[..24]);
    // The datagram may be cut short as long as its header is there.
    let big = big_udp_v4();
    let r = Icmpv4Repr::frag_needed(1500, &big[..22]).unwrap();
    assert_eq!(r.body.len(), 22);
}

#[test]
fn frag_needed_rejects_non_ipv4() {
    let big = big_udp_v4();
    assert_eq!(
        Icmpv4Repr::frag_needed(1500, &big[..19]),
        Err(Error::Truncated)
    );
    let mut v6 = big.clone();
    v6[0] = 0x65;
    assert_eq!(Icmpv4Repr::frag_needed(1500, &v6), Err(Error::Unsupported));
    let mut ihl4 = big.clone();
    ihl4[0] = 0x44;
    assert_eq!(Icmpv4Repr::frag_needed(1500, &ihl4), Err(Error::Malformed));
    let mut tl = big.clone();
    tl[2..4].copy_from_slice(&19u16.to_be_bytes());
    assert_eq!(Icmpv4Repr::frag_needed(1500, &tl), Err(Error::Malformed));
    let mut ihl15 = big[..40].to_vec();
    ihl15[0] = 0x4f;
    assert_eq!(Icmpv4Repr::frag_needed(1500, &ihl15), Err(Error::Truncated));
}

#[test]
fn frag_needed_describe_and_display() {
    let r = Icmpv4Repr::parse(&FRAG_NEEDED).unwrap();
    assert_eq!(
        r.to_string(),
        "ICMP destination unreachable fragmentation needed mtu 2044"
    );
    let mut c = Collect::default();
    r.describe(&mut c);
    assert_eq!(c.get("type"), Some("destination unreachable (0x3)"));
    assert_eq!(c.get("code"), Some("fragmentation needed (0x4)"));
    assert_eq!(c.get("unused"), Some("0x0000"));
    assert_eq!(c.get("mtu"), Some("2044"));
    assert_eq!(c.get("rest_of_header"), None);
    assert_eq!(c.get("data_len"), Some("28"));
    // Another unreachable code has a name but no MTU; an unknown one shows its number.
    let port = Icmpv4Repr {
        code: 3,
        rest: 0,
        ..r
    };
    assert_eq!(port.next_hop_mtu(), None);
    assert_eq!(
        port.to_string(),
        "ICMP destination unreachable port unreachable"
    );
    let odd = Icmpv4Repr { code: 99, ..r };
    assert_eq!(odd.to_string(), "ICMP destination unreachable code 99");
    let mut c = Collect::default();
    odd.describe(&mut c);
    assert_eq!(c.get("code"), Some("Unknown (0x63)"));
    assert_eq!(c.get("rest_of_header"), Some("0x000007fc"));
    // Code 4 of another type is not an MTU.
    let redirect = Icmpv4Repr {
        msg_type: Icmpv4Type::Redirect,
        ..r
    };
    assert_eq!(redirect.next_hop_mtu(), None);
}

// RFC 1122 §3.2.2: error messages; queries of RFC 792 and RFC 950 are not.
#[test]
fn v4_error_types() {
    for t in 0..=255u8 {
        let query = matches!(t, 0 | 8 | 13..=18);
        assert_eq!(Icmpv4Type::from(t).is_error(), !query, "{t}");
    }
    assert!(Icmpv4Type::DestUnreachable.is_error());
    assert!(!Icmpv4Type::EchoRequest.is_error());
}

// RFC 4443 §3.2: packet too big, type 2 code 0, MTU 2044, from 2001:db8::fe to 2001:db8::1,
// quoting a whole 48-byte invoking packet: the IPv6 header of a UDP datagram 2001:db8::1 >
// 2001:db8::2 (payload length 4008, hop limit 64) and its UDP header. Checksum computed outside
// this code.
static TOO_BIG: [u8; 56] = [
    0x02, 0x00, 0xe6, 0x4c, 0x00, 0x00, 0x07, 0xfc, 0x60, 0x00, 0x00, 0x00, 0x0f, 0xa8, 0x11, 0x40,
    0x20, 0x01, 0x0d, 0xb8, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01,
    0x20, 0x01, 0x0d, 0xb8, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x02,
    0x04, 0xd2, 0x16, 0x2e, 0x0f, 0xa8, 0xab, 0xcd,
];

fn too_big_addrs() -> (Ipv6Addr, Ipv6Addr) {
    (
        "2001:db8::fe".parse().unwrap(),
        "2001:db8::1".parse().unwrap(),
    )
}

// RFC 4443 §3.2.
#[test]
fn too_big_deconstruct_construct() {
    let (src, dst) = too_big_addrs();
    let p = IcmpPacket::new_checked(&TOO_BIG[..]).unwrap();
    assert_eq!(p.msg_type(), 2);
    assert_eq!(p.code(), 0);
    assert_eq!(p.checksum(), 0xe64c);
    assert_eq!(p.mtu(), 2044);
    assert!(p.verify_checksum_v6(src, dst));
    assert!(!p.verify_checksum_v6(src, "2001:db8::2".parse().unwrap()));
    let mut b = [0u8; 56];
    let mut q = IcmpPacket::new_unchecked(&mut b[..]);
    q.set_msg_type(Icmpv6Type::PacketTooBig.into());
    q.set_code(0);
    q.set_rest(2044);
    q.body_mut().copy_from_slice(&TOO_BIG[8..]);
    q.fill_checksum_v6(src, dst);
    assert_eq!(b, TOO_BIG);
}

// RFC 4443 §3.2.
#[test]
fn too_big_parse_emit() {
    let (src, dst) = too_big_addrs();
    let built = Icmpv6Repr::packet_too_big(2044, &TOO_BIG[8..]);
    let parsed = Icmpv6Repr::parse(src, dst, &TOO_BIG).unwrap();
    assert_eq!(parsed, built);
    assert_eq!(parsed.mtu(), Some(2044));
    assert!(parsed.msg_type.is_error());
    let mut b = [0u8; 56];
    built.emit(src, dst, &mut b).unwrap();
    assert_eq!(b, TOO_BIG);
    assert_eq!(parsed.to_string(), "ICMPv6 packet too big mtu 2044");
    let mut c = Collect::default();
    parsed.describe(&mut c);
    assert_eq!(c.get("type"), Some("packet too big (0x2)"));
    assert_eq!(c.get("mtu"), Some("2044"));
    let echo = Icmpv6Repr {
        msg_type: Icmpv6Type::EchoReply,
        ..parsed
    };
    assert_eq!(echo.mtu(), None);
}

// RFC 4443 §2.4 (c): the message, in its IPv6 packet, never exceeds the minimum MTU of 1280.
#[test]
fn too_big_quote_is_capped_at_min_mtu() {
    let invoking: Vec<u8> = (0..4048).map(|i| (i % 251) as u8).collect();
    let r = Icmpv6Repr::packet_too_big(2044, &invoking);
    assert_eq!(r.body, &invoking[..1232]);
    assert_eq!(IPV6_HEADER_LEN + r.buffer_len(), IPV6_MIN_MTU);
    let r = Icmpv6Repr::packet_too_big(2044, &invoking[..1232]);
    assert_eq!(r.body.len(), 1232);
    let r = Icmpv6Repr::packet_too_big(2044, &invoking[..40]);
    assert_eq!(r.body.len(), 40);
}

// RFC 4443 §2.1: types 0-127 are errors.
#[test]
fn v6_error_types() {
    for t in 0..=255u8 {
        assert_eq!(Icmpv6Type::from(t).is_error(), t < 128, "{t}");
    }
}

proptest! {
    #[test]
    fn v4_round_trip(t in any::<u8>(), code in any::<u8>(), rest in any::<u32>(),
                     body in proptest::collection::vec(any::<u8>(), 0..64)) {
        let r = Icmpv4Repr { msg_type: t.into(), code, rest, body: &body };
        let mut b = vec![0u8; r.buffer_len()];
        r.emit(&mut b).unwrap();
        prop_assert_eq!(Icmpv4Repr::parse(&b).unwrap(), r);
    }

    #[test]
    fn v6_round_trip(t in any::<u8>(), code in any::<u8>(), rest in any::<u32>(), s in any::<u128>(),
                     body in proptest::collection::vec(any::<u8>(), 0..64)) {
        let (src, dst) = (Ipv6Addr::from(s), Ipv6Addr::from(!s));
        let r = Icmpv6Repr { msg_type: t.into(), code, rest, body: &body };
        let mut b = vec![0u8; r.buffer_len()];
        r.emit(src, dst, &mut b).unwrap();
        prop_assert_eq!(Icmpv6Repr::parse(src, dst, &b).unwrap(), r);
    }

    #[test]
    fn parse_never_panics(data in proptest::collection::vec(any::<u8>(), 0..300)) {
        if let Ok(r) = Icmpv4Repr::parse(&data) {
            let _ = r.to_string();
            r.describe(&mut Collect::default());
        }
        let a = Ipv6Addr::UNSPECIFIED;
        if let Ok(r) = Icmpv6Repr::parse(a, a, &data) {
            let _ = r.to_string();
            r.describe(&mut Collect::default());
        }
    }

    // RFC 792, RFC 1191 §4: any IPv4 datagram is quoted as header + 8 bytes, and the message
    // round-trips with its MTU.
    #[test]
    fn frag_needed_round_trip(mtu in any::<u16>(), opt_words in 0u8..=10, len in 0u16..64,
                              ttl in any::<u8>(), src in any::<u32>(), dst in any::<u32>()) {
        let hl = 20 + 4 * opt_words as usize;
        let h = Ipv4Repr { tos: 0, ident: 7, dont_frag: true, more_frags: false, frag_offset: 0,
            ttl, protocol: IpProtocol::Udp, src_addr: Ipv4Addr::from(src),
            dst_addr: Ipv4Addr::from(dst), payload_len: 0 };
        let mut d = vec![0x5au8; hl + len as usize];
        h.emit(&mut crate::ipoib::Ipv4Packet::new_unchecked(&mut d[..]));
        d[0] = 0x40 | (hl / 4) as u8;
        d[2..4].copy_from_slice(&((hl + len as usize) as u16).to_be_bytes());
        let r = Icmpv4Repr::frag_needed(mtu, &d).unwrap();
        prop_assert_eq!(r.body, &d[..hl + (len as usize).min(8)]);
        let mut b = vec![0u8; r.buffer_len()];
        r.emit(&mut b).unwrap();
        let p = Icmpv4Repr::parse(&b).unwrap();
        prop_assert_eq!(p, r);
        prop_assert_eq!(p.next_hop_mtu(), Some(mtu));
    }

    // RFC 4443 §3.2, §2.4 (c).
    #[test]
    fn too_big_round_trip(mtu in any::<u32>(), s in any::<u128>(),
                          invoking in proptest::collection::vec(any::<u8>(), 0..1500)) {
        let (src, dst) = (Ipv6Addr::from(s), Ipv6Addr::from(s.rotate_left(7)));
        let r = Icmpv6Repr::packet_too_big(mtu, &invoking);
        prop_assert_eq!(r.body, &invoking[..invoking.len().min(1232)]);
        prop_assert!(IPV6_HEADER_LEN + r.buffer_len() <= IPV6_MIN_MTU);
        let mut b = vec![0u8; r.buffer_len()];
        r.emit(src, dst, &mut b).unwrap();
        let p = Icmpv6Repr::parse(src, dst, &b).unwrap();
        prop_assert_eq!(p, r);
        prop_assert_eq!(p.mtu(), Some(mtu));
    }
}

// RFC 792 (type 3, code 1, 32 unused bits): the IP header and the first
// 8 bytes of the invoking datagram's data, as for fragmentation needed.
#[test]
fn host_unreachable_parse_emit() {
    let big = big_udp_v4();
    let built = Icmpv4Repr::host_unreachable(&big).unwrap();
    assert_eq!(built.msg_type, Icmpv4Type::DestUnreachable);
    assert_eq!(
        Icmpv4Unreachable::from(built.code),
        Icmpv4Unreachable::HostUnreachable
    );
    assert_eq!((built.rest, built.body), (0, &big[..28]));
    assert_eq!(built.next_hop_mtu(), None);
    let mut b = [0u8; 36];
    built.emit(&mut b).unwrap();
    assert_eq!(&b[..2], &[3, 1]);
    assert_eq!(Icmpv4Repr::parse(&b), Ok(built));
    assert!(Icmpv4Repr::host_unreachable(&[0x60; 40]).is_err());
}

// RFC 4443 §3.1: type 1, code 3 (address unreachable), 32 unused bits; §2.4 (c): quoted up to
// the minimum IPv6 MTU.
#[test]
fn address_unreachable_quotes_at_most_1232_bytes() {
    let invoking = [0x60u8; 2000];
    let r = Icmpv6Repr::address_unreachable(&invoking);
    assert_eq!(
        (r.msg_type, r.code, r.rest),
        (Icmpv6Type::DestUnreachable, 3, 0)
    );
    assert_eq!(r.body.len(), 1232);
    assert_eq!(r.mtu(), None);
    assert_eq!(
        Icmpv6Repr::address_unreachable(&invoking[..48]).body.len(),
        48
    );
}
