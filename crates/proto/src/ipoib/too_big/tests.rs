//! Replies parsed back with wire: type, code, MTU, checksums, quoted bytes, header fields; and
//! every packet that must not be answered.

use super::*;
use ipoib_wire::ipoib::{Icmpv4Unreachable, UdpRepr};
use proptest::prelude::*;
use std::net::Ipv6Addr;

const A: Ipv4Addr = Ipv4Addr::new(10, 0, 0, 1);
const B: Ipv4Addr = Ipv4Addr::new(10, 0, 0, 2);

fn a6() -> Ipv6Addr {
    "2001:db8::1".parse().unwrap()
}
fn b6() -> Ipv6Addr {
    "2001:db8::2".parse().unwrap()
}

fn v4_header(src: Ipv4Addr, dst: Ipv4Addr, protocol: IpProtocol) -> Ipv4Repr {
    Ipv4Repr {
        tos: 0,
        ident: 0x1c46,
        dont_frag: true,
        more_frags: false,
        frag_offset: 0,
        ttl: 64,
        protocol,
        src_addr: src,
        dst_addr: dst,
        payload_len: 0,
    }
}

/// An IPv4 datagram with header `h`, `options` and payload `payload`.
fn v4(h: Ipv4Repr, options: &[u8], payload: IpPayload<'_>) -> Vec<u8> {
    let d = Ipv4Datagram {
        header: h,
        options,
        payload,
    };
    let mut b = vec![0u8; d.buffer_len()];
    d.emit(&mut b).unwrap();
    b
}

/// 4028 bytes of UDP, 10.0.0.1:1234 > 10.0.0.2:5678, as the IP stack would hand down in connected
/// mode (interface MTU 65520) for a peer reached over UD.
fn big_udp_v4() -> Vec<u8> {
    let mut b = vec![
        0x45, 0x00, 0x0f, 0xbc, 0x1c, 0x46, 0x40, 0x00, 0x40, 0x11, 0xfa, 0xe8, 10, 0, 0, 1, 10, 0,
        0, 2, 0x04, 0xd2, 0x16, 0x2e, 0x0f, 0xa8, 0x00, 0x00,
    ];
    b.extend((0..4000).map(|i| i as u8));
    b
}

fn icmpv4(t: u8, code: u8) -> Vec<u8> {
    let body = [0x55u8; 3000];
    let m = Icmpv4Repr {
        msg_type: t.into(),
        code,
        rest: 0,
        body: &body,
    };
    v4(v4_header(A, B, IpProtocol::Icmp), &[], IpPayload::Icmpv4(m))
}

/// Parses a reply as an IPv4 datagram (header checksum and ICMP checksum verified by wire).
fn parse_v4(reply: &[u8]) -> (Ipv4Repr, Icmpv4Repr<'_>) {
    let d = Ipv4Datagram::parse(reply).unwrap();
    assert!(d.options.is_empty());
    match d.payload {
        IpPayload::Icmpv4(m) => (d.header, m),
        other => panic!("not ICMP: {other:?}"),
    }
}

// RFC 792, RFC 1191 §4; the header fields of too_big_reply's doc (docs/DEPLOYED.md "Linux IPoIB").
// Expected bytes computed outside this code.
#[test]
fn v4_reply_bytes() {
    let big = big_udp_v4();
    let reply = too_big_reply(&big, 2044).unwrap();
    let mut expected = vec![
        0x45, 0xc0, 0x00, 0x38, 0x00, 0x00, 0x40, 0x00, 0x40, 0x01, 0x26, 0x04, 10, 0, 0, 1, 10, 0,
        0, 1, 0x03, 0x04, 0xca, 0x57, 0x00, 0x00, 0x07, 0xfc,
    ];
    expected.extend_from_slice(&big[..28]);
    assert_eq!(reply, expected);
}

// RFC 792, RFC 1191 §4: type 3 code 4, next-hop MTU, IP header + 8 bytes; the reply goes from the
// local address back to it (docs/DEPLOYED.md "Linux IPoIB"); TTL 64; DF, ID 0 (RFC 6864 §4.1).
#[test]
fn v4_reply_fields() {
    let big = big_udp_v4();
    let reply = too_big_reply(&big, 2044).unwrap();
    let (h, m) = parse_v4(&reply);
    assert_eq!((h.src_addr, h.dst_addr), (A, A));
    assert_eq!(h.protocol, IpProtocol::Icmp);
    assert_eq!(h.ttl, 64);
    assert!(h.dont_frag && !h.more_frags);
    assert_eq!((h.ident, h.frag_offset), (0, 0));
    assert_eq!(h.tos, 0xc0);
    assert_eq!(m.msg_type, Icmpv4Type::DestUnreachable);
    assert_eq!(
        Icmpv4Unreachable::from(m.code),
        Icmpv4Unreachable::FragNeeded
    );
    assert_eq!(m.rest, 2044, "16 unused bits, zero, then the MTU");
    assert_eq!(m.next_hop_mtu(), Some(2044));
    assert_eq!(m.body, &big[..28]);
    assert_eq!(reply.len(), 20 + 8 + 28);
}

// RFC 792: the quoted header includes its options; the reply's TOS is precedence 6 plus the
// invoking TOS bits (RFC 1812 §4.3.2.5, Linux), without its ECN bits.
#[test]
fn v4_options_and_tos() {
    let data = [7u8; 3000];
    let mut h = v4_header(A, B, IpProtocol::Udp);
    h.tos = 0xb9; // DSCP 46 (EF), ECN 01
    let pkt = v4(h, &[1, 1, 1, 0], IpPayload::Raw(&data));
    let reply = too_big_reply(&pkt, 2044).unwrap();
    let (rh, m) = parse_v4(&reply);
    assert_eq!(m.body, &pkt[..24 + 8]);
    assert_eq!(rh.tos, 0xc0 | 0x18);
}

// RFC 1191 §4: the next-hop MTU field has 16 bits.
#[test]
fn v4_mtu_saturates() {
    let reply = too_big_reply(&big_udp_v4(), 70_000).unwrap();
    assert_eq!(parse_v4(&reply).1.next_hop_mtu(), Some(u16::MAX));
    let reply = too_big_reply(&big_udp_v4(), 1500).unwrap();
    assert_eq!(parse_v4(&reply).1.next_hop_mtu(), Some(1500));
}

// RFC 1122 §3.2.2: the first fragment is answered; a datagram shorter than header + 8 is quoted
// whole, without link padding; an ICMP query (echo) is answered.
#[test]
fn v4_answered() {
    let data = [9u8; 3000];
    let mut h = v4_header(A, B, IpProtocol::Udp);
    h.more_frags = true;
    h.dont_frag = false;
    let first = v4(h, &[], IpPayload::Raw(&data));
    assert!(too_big_reply(&first, 2044).is_some());
    let mut tiny = v4(
        v4_header(A, B, IpProtocol::Udp),
        &[],
        IpPayload::Raw(&[1, 2, 3]),
    );
    tiny.extend([0xee; 5]);
    let reply = too_big_reply(&tiny, 2044).unwrap();
    assert_eq!(parse_v4(&reply).1.body, &tiny[..23]);
    let echo = icmpv4(Icmpv4Type::EchoRequest.into(), 0);
    assert!(too_big_reply(&echo, 2044).is_some());
    for query in [0u8, 13, 14, 15, 16, 17, 18] {
        assert!(too_big_reply(&icmpv4(query, 0), 2044).is_some(), "{query}");
    }
}

// RFC 1122 §3.2.2: no ICMP error answers an ICMP error (nor, as in Linux, an unknown type).
#[test]
fn v4_no_reply_to_icmp_error() {
    for t in [3u8, 4, 5, 11, 12, 42, 255] {
        assert_eq!(too_big_reply(&icmpv4(t, 4), 2044), None, "{t}");
    }
}

// RFC 1122 §3.2.2: only the first fragment.
#[test]
fn v4_no_reply_to_later_fragment() {
    let data = [9u8; 3000];
    let mut h = v4_header(A, B, IpProtocol::Udp);
    h.dont_frag = false;
    h.frag_offset = 1480;
    assert_eq!(
        too_big_reply(&v4(h, &[], IpPayload::Raw(&data)), 2044),
        None
    );
    h.more_frags = true;
    assert_eq!(
        too_big_reply(&v4(h, &[], IpPayload::Raw(&data)), 2044),
        None
    );
}

// RFC 1122 §3.2.2: not to a broadcast or multicast destination, not from a source that is not a
// single host.
#[test]
fn v4_no_reply_by_address() {
    let data = [9u8; 3000];
    let send = |src: Ipv4Addr, dst: Ipv4Addr| {
        too_big_reply(
            &v4(
                v4_header(src, dst, IpProtocol::Udp),
                &[],
                IpPayload::Raw(&data),
            ),
            2044,
        )
    };
    assert!(send(A, B).is_some());
    for dst in [Ipv4Addr::BROADCAST, Ipv4Addr::new(224, 0, 0, 251)] {
        assert_eq!(send(A, dst), None, "{dst}");
    }
    for src in [
        Ipv4Addr::UNSPECIFIED,
        Ipv4Addr::BROADCAST,
        Ipv4Addr::new(224, 0, 0, 1),
        Ipv4Addr::new(239, 1, 2, 3),
        Ipv4Addr::new(127, 0, 0, 1),
        Ipv4Addr::new(240, 0, 0, 1),
    ] {
        assert_eq!(send(src, B), None, "{src}");
    }
}

// Malformed IPv4: no reply, no panic.
#[test]
fn v4_malformed() {
    let big = big_udp_v4();
    assert_eq!(too_big_reply(&[], 2044), None);
    assert_eq!(too_big_reply(&big[..19], 2044), None);
    assert_eq!(
        too_big_reply(&big[..4027], 2044),
        None,
        "shorter than total length"
    );
    let mut bad = big.clone();
    bad[11] ^= 1;
    assert_eq!(too_big_reply(&bad, 2044), None, "header checksum");
    let mut bad = big.clone();
    bad[0] = 0x44;
    assert_eq!(too_big_reply(&bad, 2044), None, "IHL 4");
    let mut bad = big.clone();
    bad[0] = 0x55;
    assert_eq!(too_big_reply(&bad, 2044), None, "version 5");
    let mut bad = v4(
        v4_header(A, B, IpProtocol::Udp),
        &[],
        IpPayload::Raw(&[0; 100]),
    );
    bad[6] |= 0x80;
    Ipv4Packet::new_unchecked(&mut bad[..]).fill_checksum();
    assert_eq!(too_big_reply(&bad, 2044), None, "reserved flag");
    let empty_icmp = v4(v4_header(A, B, IpProtocol::Icmp), &[], IpPayload::Raw(&[]));
    assert_eq!(
        too_big_reply(&empty_icmp, 2044),
        None,
        "ICMP without a type"
    );
}

fn v6_header(src: Ipv6Addr, dst: Ipv6Addr, next: IpProtocol) -> Ipv6Repr {
    Ipv6Repr {
        traffic_class: 0xb8,
        flow_label: 0x12345,
        payload_len: 0,
        next_header: next,
        hop_limit: 64,
        src_addr: src,
        dst_addr: dst,
    }
}

fn v6(h: Ipv6Repr, payload: IpPayload<'_>) -> Vec<u8> {
    let d = Ipv6Datagram { header: h, payload };
    let mut b = vec![0u8; d.buffer_len()];
    d.emit(&mut b).unwrap();
    b
}

/// 4048 bytes: a UDP datagram 2001:db8::1 > 2001:db8::2 with 4000 data bytes.
fn big_udp_v6() -> Vec<u8> {
    let data: Vec<u8> = (0..4000).map(|i| (i % 251) as u8).collect();
    let udp = UdpRepr {
        src_port: 1234,
        dst_port: 5678,
        has_checksum: true,
        payload: &data,
    };
    v6(v6_header(a6(), b6(), IpProtocol::Udp), IpPayload::Udp(udp))
}

/// Parses a reply as an IPv6 datagram (ICMPv6 checksum verified by wire).
fn parse_v6(reply: &[u8]) -> (Ipv6Repr, Icmpv6Repr<'_>) {
    let d = Ipv6Datagram::parse(reply).unwrap();
    match d.payload {
        IpPayload::Icmpv6(m) => (d.header, m),
        other => panic!("not ICMPv6: {other:?}"),
    }
}

// RFC 4443 §3.2 (type 2, code 0, MTU) and §2.4 (c) (at most 1280 bytes); the header fields of
// too_big_reply's doc (docs/DEPLOYED.md "Linux IPoIB").
#[test]
fn v6_reply_fields() {
    let big = big_udp_v6();
    let reply = too_big_reply(&big, 2044).unwrap();
    assert_eq!(reply.len(), 1280);
    let (h, m) = parse_v6(&reply);
    assert_eq!((h.src_addr, h.dst_addr), (a6(), a6()));
    assert_eq!(h.next_header, IpProtocol::Icmpv6);
    assert_eq!(h.hop_limit, 64);
    assert_eq!((h.traffic_class, h.flow_label), (0, 0));
    assert_eq!(usize::from(h.payload_len), 1240);
    assert_eq!(m.msg_type, Icmpv6Type::PacketTooBig);
    assert_eq!(m.code, 0);
    assert_eq!(m.mtu(), Some(2044));
    assert_eq!(m.body, &big[..1232]);
    // The checksum covers the pseudo-header: another address fails it.
    assert!(Icmpv6Repr::parse(a6(), b6(), &reply[40..]).is_err());
    assert!(Icmpv6Repr::parse(a6(), a6(), &reply[40..]).is_ok());
}

// RFC 4443 §2.4 (c): a short packet is quoted whole, without bytes past its payload length;
// §2.4 (e.3): packet too big answers a multicast destination; echo is informational.
#[test]
fn v6_answered() {
    let mut short = v6(
        v6_header(a6(), b6(), IpProtocol::Udp),
        IpPayload::Raw(&[1; 60]),
    );
    short.extend([0xee; 4]);
    let reply = too_big_reply(&short, 1280).unwrap();
    assert_eq!(parse_v6(&reply).1.body, &short[..100]);
    let data = [3u8; 3000];
    let mcast = v6(
        v6_header(a6(), "ff0e::1".parse().unwrap(), IpProtocol::Udp),
        IpPayload::Raw(&data),
    );
    assert!(too_big_reply(&mcast, 2044).is_some());
    for t in [Icmpv6Type::EchoRequest, Icmpv6Type::EchoReply] {
        assert!(too_big_reply(&icmpv6(t, &[]), 2044).is_some(), "{t:?}");
    }
}

/// An IPv6 packet whose next header is `first`, carrying the extension headers `ext` (raw bytes,
/// the last one naming ICMPv6 as its next header) and then an ICMPv6 message of type `t`.
fn icmpv6_behind(first: IpProtocol, ext: &[u8], t: Icmpv6Type) -> Vec<u8> {
    let mut payload = ext.to_vec();
    let body = [0x66u8; 3000];
    let m = Icmpv6Repr {
        msg_type: t,
        code: 0,
        rest: 0,
        body: &body,
    };
    let at = payload.len();
    payload.resize(at + m.buffer_len(), 0);
    m.emit(a6(), b6(), &mut payload[at..]).unwrap();
    v6(v6_header(a6(), b6(), first), IpPayload::Raw(&payload))
}

fn icmpv6(t: Icmpv6Type, ext: &[u8]) -> Vec<u8> {
    icmpv6_behind(IpProtocol::Icmpv6, ext, t)
}

// RFC 4443 §2.4 (e.1), (e.2): no reply to an ICMPv6 error or redirect, even behind extension
// headers (RFC 8200 §4).
#[test]
fn v6_no_reply_to_icmp_error() {
    for t in [1u8, 2, 3, 4, 100, 127, 137] {
        let t = Icmpv6Type::from(t);
        assert_eq!(too_big_reply(&icmpv6(t, &[]), 2044), None, "{t:?}");
    }
    // Hop-by-hop (8 bytes) then destination options (16 bytes), then ICMPv6 destination unreachable.
    let mut ext = vec![60, 0, 1, 4, 0, 0, 0, 0];
    ext.extend([58, 1, 1, 12, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]);
    let behind = icmpv6_behind(IpProtocol::HopByHop, &ext, Icmpv6Type::DestUnreachable);
    assert_eq!(too_big_reply(&behind, 2044), None);
    let echo = icmpv6_behind(IpProtocol::HopByHop, &ext, Icmpv6Type::EchoRequest);
    assert!(too_big_reply(&echo, 2044).is_some());
    // A first fragment (offset 0, M set) of an ICMPv6 error; then AH (RFC 4302 §2.2, length 4:
    // 24 bytes) before one.
    let frag = [58, 0, 0, 1, 0, 0, 0, 7];
    let first = icmpv6_behind(IpProtocol::from(44), &frag, Icmpv6Type::TimeExceeded);
    assert_eq!(too_big_reply(&first, 2044), None);
    let mut ah = vec![58, 4];
    ah.resize(24, 0);
    let auth = icmpv6_behind(IpProtocol::from(51), &ah, Icmpv6Type::ParamProblem);
    assert_eq!(too_big_reply(&auth, 2044), None);
}

// RFC 8200 §4.5: a later fragment does not show its upper layer; it is answered (RFC 4443 §2.4
// forbids nothing it can see), as Linux does.
#[test]
fn v6_later_fragment_is_answered() {
    let frag = [58, 0, 0x05, 0xc9, 0, 0, 0, 7]; // offset 185 × 8, M set
    let later = icmpv6_behind(IpProtocol::from(44), &frag, Icmpv6Type::DestUnreachable);
    assert!(too_big_reply(&later, 2044).is_some());
}

// RFC 4443 §2.4 (e.6): the source must identify a single node.
#[test]
fn v6_no_reply_by_source() {
    let data = [3u8; 3000];
    for src in [Ipv6Addr::UNSPECIFIED, "ff02::1".parse().unwrap()] {
        let p = v6(v6_header(src, b6(), IpProtocol::Udp), IpPayload::Raw(&data));
        assert_eq!(too_big_reply(&p, 2044), None, "{src}");
    }
}

// Malformed IPv6: no reply, no panic.
#[test]
fn v6_malformed() {
    let big = big_udp_v6();
    assert_eq!(too_big_reply(&big[..39], 2044), None);
    assert_eq!(
        too_big_reply(&big[..4047], 2044),
        None,
        "shorter than payload length"
    );
    // An extension header longer than the payload.
    let over = v6(
        v6_header(a6(), b6(), IpProtocol::HopByHop),
        IpPayload::Raw(&[58, 3, 0, 0, 0, 0, 0, 0]),
    );
    assert_eq!(too_big_reply(&over, 2044), None);
    // An extension header cut before its length byte, and ICMPv6 without its type byte.
    let cut = v6(
        v6_header(a6(), b6(), IpProtocol::HopByHop),
        IpPayload::Raw(&[58]),
    );
    assert_eq!(too_big_reply(&cut, 2044), None);
    let no_type = v6(
        v6_header(a6(), b6(), IpProtocol::HopByHop),
        IpPayload::Raw(&[58, 0, 0, 0, 0, 0, 0, 0]),
    );
    assert_eq!(too_big_reply(&no_type, 2044), None);
    for nibble in [0u8, 5, 7, 15] {
        let mut bad = big.clone();
        bad[0] = nibble << 4;
        assert_eq!(too_big_reply(&bad, 2044), None, "version {nibble}");
    }
}

proptest! {
    // Never panics; every reply is a well-formed IPv4 or IPv6 packet with a correct ICMP message
    // (checksums verified by wire) that quotes the start of the input.
    #[test]
    fn replies_parse(data in proptest::collection::vec(any::<u8>(), 0..200), mtu in any::<u32>(),
                     v6 in any::<bool>()) {
        let mut data = data;
        if let Some(b) = data.first_mut() {
            *b = (*b & 0x0f) | if v6 { 0x60 } else { 0x40 };
        }
        // Most IPv4 headers then have a good length and checksum, so that replies are made.
        let hl = usize::from(data.first().map_or(0, |b| b & 0x0f)) * 4;
        if !v6 && hl >= 20 && data.len() >= hl {
            let n = data.len() as u16;
            data[2..4].copy_from_slice(&n.to_be_bytes());
            data[6] &= 0x7f;
            Ipv4Packet::new_unchecked(&mut data[..]).fill_checksum();
        }
        if let Some(reply) = too_big_reply(&data, mtu) {
            if v6 {
                let (_, m) = parse_v6(&reply);
                prop_assert_eq!(m.mtu(), Some(mtu));
                prop_assert!(data.starts_with(m.body));
            } else {
                let (_, m) = parse_v4(&reply);
                prop_assert!(m.next_hop_mtu().is_some());
                prop_assert!(data.starts_with(m.body));
            }
        }
    }

    // RFC 792, RFC 4443 §3.2: any well-formed UDP packet from a unicast source gets a reply that
    // carries the MTU and goes back to that source.
    #[test]
    fn udp_always_answered(len in 0usize..3000, mtu in 1280u32..65536, src in any::<[u8; 4]>(),
                           s6 in any::<u128>()) {
        let data = vec![0xa5u8; len];
        let src4 = Ipv4Addr::from(src);
        let p4 = v4(v4_header(src4, B, IpProtocol::Udp), &[], IpPayload::Raw(&data));
        match too_big_reply(&p4, mtu) {
            Some(r) => {
                let (h, m) = parse_v4(&r);
                prop_assert_eq!(h.dst_addr, src4);
                prop_assert_eq!(m.next_hop_mtu(), Some(mtu.min(65535) as u16));
            }
            None => prop_assert!(!single_host_v4(src4)),
        }
        let src6 = Ipv6Addr::from(s6);
        let p6 = v6(v6_header(src6, b6(), IpProtocol::Udp), IpPayload::Raw(&data));
        match too_big_reply(&p6, mtu) {
            Some(r) => {
                let (h, m) = parse_v6(&r);
                prop_assert_eq!(h.dst_addr, src6);
                prop_assert_eq!(m.mtu(), Some(mtu));
            }
            None => prop_assert!(src6.is_unspecified() || src6.is_multicast()),
        }
    }
}

// RFC 792, RFC 4861 §7.2.2, RFC 4443 §3.1: a packet whose next hop did not resolve is answered with
// host unreachable (IPv4 type 3 code 1) or address unreachable (IPv6 type 1 code 3), from and to
// the sender's own address (Linux `arp_error_report`, `ndisc_error_report`,
// docs/LINUX-DEVICE.md), quoting as the too-big replies; no answer to an ICMP error, nor (§2.4
// (e.3)) to an IPv6 multicast destination, which packet too big alone answers.
#[test]
fn unreachable_replies() {
    let big = big_udp_v4();
    let reply = unreachable_reply(&big).unwrap();
    let (h, m) = parse_v4(&reply);
    assert_eq!((h.src_addr, h.dst_addr, h.ttl), (A, A, 64));
    assert_eq!(m.msg_type, Icmpv4Type::DestUnreachable);
    assert_eq!(
        Icmpv4Unreachable::from(m.code),
        Icmpv4Unreachable::HostUnreachable
    );
    assert_eq!((m.rest, m.body), (0, &big[..28]));
    assert_eq!(unreachable_reply(&icmpv4(3, 1)), None);

    let big6 = big_udp_v6();
    let reply = unreachable_reply(&big6).unwrap();
    let (h, m) = parse_v6(&reply);
    assert_eq!((h.src_addr, h.dst_addr, h.hop_limit), (a6(), a6(), 64));
    assert_eq!(
        (m.msg_type, m.code, m.rest),
        (Icmpv6Type::DestUnreachable, 3, 0)
    );
    assert_eq!(m.body, &big6[..1232]);
    let group: Ipv6Addr = "ff02::1".parse().unwrap();
    let to_group = v6(
        v6_header(a6(), group, IpProtocol::Udp),
        IpPayload::Raw(&[0; 64]),
    );
    assert!(too_big_reply(&to_group, 1280).is_some());
    assert_eq!(unreachable_reply(&to_group), None);
}
