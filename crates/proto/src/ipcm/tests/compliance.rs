//! One test per compliance statement of Annex A11 (§A11.8), named after it, each over IPv4 and
//! IPv6 where the statement covers both; and the prose statements of §A11.6 and §A11.7 the
//! client and server act on. Every REQ here goes from A's IP CM service through A's CM, over the
//! wire, into B's CM and B's IP CM service; REQs our client would never send are made by
//! changing the private data A's host hands to its CM.

use super::*;
use ipoib_wire::cm::RespondedTo;
use ipoib_wire::private_data::service_id::ip_cm_service_id;

/// B's REJ with reason 28, its ARI as the wire shows it (Reject Info Length bytes).
fn consumer_reject_ari(w: &World) -> Vec<u8> {
    let r = w.rej_from_b();
    assert_eq!(r.reason, RejReason::ConsumerDefined, "REJ reason 28");
    assert_eq!(r.message_rejected, RespondedTo::Req);
    r.ari().to_vec()
}

/// A heard Rejected with reason 28 and an A11 ARI of `code` suggesting `suggested`; B's
/// consumer heard nothing; everything is cleaned up afterwards.
fn refused_with(mut w: World, code: IpCmAriCode, suggested: &[u8]) -> World {
    let (reason, ari, _) = rejected(&w.a.events);
    assert_eq!(reason, RejReason::ConsumerDefined);
    assert_eq!(ari.layer(), Some(RejectionLayer::IpCmService));
    assert_eq!(ari.code(), Some(code), "{ari:?}");
    let RejectAri::IpCm { suggested: s, .. } = &ari else {
        panic!("{ari:?}")
    };
    assert_eq!(s.as_bytes(), suggested);
    assert!(
        !w.b.events
            .iter()
            .any(|e| matches!(e, IpCmEvent::ConnectRequest { .. })),
        "B's consumer never hears of a refused REQ"
    );
    assert_eq!(w.b.ipcm.counters.get(code.name()), Some(&1));
    w.finish();
    w
}

/// The private data of the only REQ.
fn req_pd(w: &World) -> [u8; 92] {
    let r = w.reqs();
    assert_eq!(r.len(), 1, "one REQ");
    r[0].private_data
}

// Annex A11 CA11-1: the REQ private data follows Table 1: MajV|MinV, IPV|Res, Source Port,
// Source IP Address, Destination IP Address, then the consumer's bytes.
#[test]
fn ca11_1_req_private_data_follows_table_1() {
    for v6 in [false, true] {
        let mut w = World::new(1);
        w.listen_b(TCP, b_ip(v6), PORT);
        let conn = w.connect_a(TCP, SocketAddr::new(b_ip(v6), PORT), b"consumer");
        w.drive(Duration::from_secs(5));
        let (local, _) = w.a.ipcm.addrs(conn).unwrap();
        let pd = req_pd(&w);
        assert_eq!(pd[0], 0x00, "MajV 0, MinV 0");
        assert_eq!(pd[1], if v6 { 0x60 } else { 0x40 }, "IPV, Res 0");
        assert_eq!(u16::from_be_bytes([pd[2], pd[3]]), local.port());
        let field = |ip: IpAddr| match ip {
            IpAddr::V4(a) => {
                let mut f = [0u8; 16];
                f[12..].copy_from_slice(&a.octets());
                f
            }
            IpAddr::V6(a) => a.octets(),
        };
        assert_eq!(pd[4..20], field(a_ip(v6)), "Source IP Address");
        assert_eq!(pd[20..36], field(b_ip(v6)), "Destination IP Address");
        assert_eq!(&pd[36..44], b"consumer", "Consumer Private Data at byte 36");
        assert!(pd[44..].iter().all(|&b| b == 0));
        // B read the same fields back.
        let (src, dst, data) = find(&w.b.events, |e| match e {
            IpCmEvent::ConnectRequest {
                src,
                dst,
                private_data,
                ..
            } => Some((*src, *dst, private_data.clone())),
            _ => None,
        })
        .unwrap();
        assert_eq!(src, local);
        assert_eq!(dst, SocketAddr::new(b_ip(v6), PORT));
        assert_eq!(data.len(), 56);
        assert_eq!(&data[..8], b"consumer");
        assert!(find(&w.a.events, |e| match e {
            IpCmEvent::Established { private_data, .. } => Some(private_data.clone()),
            _ => None,
        })
        .is_some_and(|p| p.starts_with(b"welcome")));
        w.a.ipcm.disconnect(conn).unwrap();
        w.finish();
    }
}

// Annex A11 CA11-2: a MajV the server does not support is rejected (Table 5 code 0x01).
#[test]
fn ca11_2_major_version_mismatch_rejected_with_ari_0x01() {
    for v6 in [false, true] {
        let w = mangled(2, v6, |pd| pd[0] = 0x10);
        assert_eq!(consumer_reject_ari(&w), [0x00, 0x01, 0x01, 0x00, 0x00]);
        refused_with(w, IpCmAriCode::MajorVersion, &[0]);
    }
}

// Annex A11 CA11-3: minor versions are downward compatible: a server of minor version 1
// takes a minor-0 client's REQ, and the connection runs at minor 0.
#[test]
fn ca11_3_minor_version_downward_compatible() {
    for v6 in [false, true] {
        let mut w = World::new(3);
        w.b.ipcm.cfg.policy.minor_version = 1;
        w.listen_b(TCP, b_ip(v6), PORT);
        let conn = w.connect_a(TCP, SocketAddr::new(b_ip(v6), PORT), b"");
        w.drive(Duration::from_secs(5));
        assert_eq!(req_pd(&w)[0], 0x00, "our client speaks minor 0");
        let minor = find(&w.b.events, |e| match e {
            IpCmEvent::ConnectRequest { minor_version, .. } => Some(*minor_version),
            _ => None,
        });
        assert_eq!(minor, Some(0), "the connection runs at the client's minor");
        assert!(w
            .a
            .events
            .iter()
            .any(|e| matches!(e, IpCmEvent::Established { conn: c, .. } if *c == conn)));
        assert!(w.rejs().is_empty());
        w.a.ipcm.disconnect(conn).unwrap();
        w.finish();
    }
}

// Annex A11 CA11-3.1.1: a MinV above the server's is rejected (Table 5 code 0x02), suggesting
// the server's.
#[test]
fn ca11_3_1_1_higher_minor_version_rejected_with_ari_0x02() {
    for v6 in [false, true] {
        let w = mangled(4, v6, |pd| pd[0] = 0x01);
        assert_eq!(consumer_reject_ari(&w), [0x00, 0x02, 0x01, 0x00, 0x00]);
        refused_with(w, IpCmAriCode::MinorVersion, &[0]);
    }
}

// Annex A11 CA11-3.1.2: for its major version a server takes every minor version up to its
// own; the next one up is refused.
#[test]
fn ca11_3_1_2_equal_and_lower_minor_versions_accepted() {
    for v6 in [false, true] {
        for minor in 0u8..=3 {
            let mut w = World::new(5);
            w.b.ipcm.cfg.policy.minor_version = 2;
            w.listen_b(TCP, b_ip(v6), PORT);
            w.a.mangle = Some(Box::new(move |pd| pd[0] = minor));
            w.connect_a(TCP, SocketAddr::new(b_ip(v6), PORT), b"");
            w.drive(Duration::from_secs(5));
            if minor <= 2 {
                let got = find(&w.b.events, |e| match e {
                    IpCmEvent::ConnectRequest { minor_version, .. } => Some(*minor_version),
                    _ => None,
                });
                assert_eq!(got, Some(minor));
                assert!(w.rejs().is_empty(), "minor {minor} accepted");
            } else {
                refused_with(w, IpCmAriCode::MinorVersion, &[2]);
            }
        }
    }
}

// Annex A11 CA11-4: an IPV the server does not support is rejected (Table 5 code 0x03),
// suggesting one it does; reserved IPV values are never supported.
#[test]
fn ca11_4_unsupported_ip_version_rejected_with_ari_0x03() {
    // A server without IPv6 refuses an IPv6 REQ, suggesting 4; one without IPv4 an IPv4 REQ,
    // suggesting 6.
    for v6 in [false, true] {
        let mut w = World::new(6);
        if v6 {
            w.b.ipcm.cfg.policy.ipv6 = false;
        } else {
            w.b.ipcm.cfg.policy.ipv4 = false;
        }
        let any: IpAddr = Ipv6Addr::UNSPECIFIED.into();
        w.listen_b(TCP, any, PORT);
        w.connect_a(TCP, SocketAddr::new(b_ip(v6), PORT), b"");
        w.drive(Duration::from_secs(5));
        let suggest = if v6 { 4 } else { 6 };
        assert_eq!(consumer_reject_ari(&w), [0x00, 0x03, 0x01, 0x00, suggest]);
        refused_with(w, IpCmAriCode::Ipv, &[suggest]);
    }
    // A reserved IPV (5) in an otherwise good REQ of either family.
    for v6 in [false, true] {
        let w = mangled(7, v6, |pd| pd[1] = 0x50);
        refused_with(w, IpCmAriCode::Ipv, &[4]);
    }
}

// Annex A11 CA11-5: IPv4 addresses are carried in bits 31-0 of their fields with bits 127-32
// zero; a server refuses other padding (codes 0x04 and 0x05). IPv6 addresses fill all 128 bits.
#[test]
fn ca11_5_ipv4_addresses_in_low_32_bits_upper_bits_zero() {
    // What our client sends.
    let mut w = World::new(8);
    w.listen_b(TCP, b_ip(false), PORT);
    w.connect_a(TCP, SocketAddr::new(b_ip(false), PORT), b"");
    w.drive(Duration::from_secs(5));
    let pd = req_pd(&w);
    assert_eq!(pd[4..16], [0; 12], "Source IP Address(127-32) zero");
    assert_eq!(pd[16..20], A_V4.octets());
    assert_eq!(pd[20..32], [0; 12], "Destination IP Address(127-32) zero");
    assert_eq!(pd[32..36], B_V4.octets());
    // What the server refuses: a bit set above bit 31, or the ::ffff: mapped form.
    let w = mangled(9, false, |pd| pd[4] = 1);
    refused_with(w, IpCmAriCode::SourceIpAddress, &[]);
    let w = mangled(10, false, |pd| pd[20] = 0x80);
    refused_with(w, IpCmAriCode::DestinationIpAddress, &[]);
    let w = mangled(11, false, |pd| pd[14..16].copy_from_slice(&[0xff, 0xff]));
    refused_with(w, IpCmAriCode::SourceIpAddress, &[]);
    // IPv6: the whole field is the address, upper bits and all.
    let mut w = World::new(12);
    w.listen_b(TCP, b_ip(true), PORT);
    w.connect_a(TCP, SocketAddr::new(b_ip(true), PORT), b"");
    w.drive(Duration::from_secs(5));
    let pd = req_pd(&w);
    assert_eq!(pd[4..20], A_V6.octets());
    assert_eq!(pd[20..36], B_V6.octets());
    assert!(w.rejs().is_empty(), "accepted");
}

// Annex A11 CA11-6: the service ID is 0x0000000001 ‖ protocol ‖ destination port (Table 2): the
// annex's two examples, iSER over TCP port 3260 and NFSv4 over SCTP port 2049.
#[test]
fn ca11_6_service_id_from_protocol_and_port() {
    for v6 in [false, true] {
        for (protocol, port, sid) in [
            (TCP, 3260, 0x0000_0000_0106_0cbc_u64),
            (SCTP, 2049, 0x0000_0000_0184_0801),
        ] {
            let mut w = World::new(13);
            w.listen_b(protocol, b_ip(v6), port);
            assert!(w.b.commands.contains(&IpCmCommand::CmListen {
                service_id: sid,
                mask: u64::MAX
            }));
            let conn = w.connect_a(protocol, SocketAddr::new(b_ip(v6), port), b"");
            w.drive(Duration::from_secs(5));
            assert_eq!(w.reqs()[0].service_id, sid);
            assert_eq!(ip_cm_service_id(protocol, port), sid);
            let proto = find(&w.b.events, |e| match e {
                IpCmEvent::ConnectRequest { protocol, dst, .. } => Some((*protocol, dst.port())),
                _ => None,
            });
            assert_eq!(proto, Some((protocol, port)));
            w.a.ipcm.disconnect(conn).unwrap();
            w.finish();
        }
    }
}

// Annex A11 CA11-7: a REQ whose service ID is in the A11 range has its private data read as
// Table 1: the server takes the client's port and addresses from the header bytes (here a
// source port the client's host rewrote), and the consumer's bytes from byte 36 on.
#[test]
fn ca11_7_a11_range_req_read_as_table_1() {
    for v6 in [false, true] {
        let w = mangled(14, v6, |pd| {
            pd[2..4].copy_from_slice(&0x1234u16.to_be_bytes());
            pd.resize(92, 0);
            pd[91] = 0x5a;
        });
        let (src, data) = find(&w.b.events, |e| match e {
            IpCmEvent::ConnectRequest {
                src, private_data, ..
            } => Some((*src, private_data.clone())),
            _ => None,
        })
        .unwrap();
        assert_eq!(
            src,
            SocketAddr::new(a_ip(v6), 0x1234),
            "Source Port from bytes 2-3"
        );
        assert_eq!(&data[..5], b"hello", "Consumer Private Data from byte 36");
        assert_eq!(data[55], 0x5a, "to byte 91");
    }
}

// Annex A11 CA11-8: a server without the service (no listener on the service ID) answers REJ
// "Invalid Service ID" (reason 8). The CM agent does so itself, keeping no record; the client
// reports the reason and an empty ARI.
#[test]
fn ca11_8_no_service_rejected_with_reason_8() {
    for v6 in [false, true] {
        // No listener at all, then a listener on another port.
        for other_port in [None, Some(PORT + 1)] {
            let mut w = World::new(15);
            if let Some(p) = other_port {
                w.listen_b(TCP, b_ip(v6), p);
            }
            w.connect_a(TCP, SocketAddr::new(b_ip(v6), PORT), b"");
            w.settle_now();
            let r = w.rej_from_b();
            assert_eq!(r.reason, RejReason::InvalidServiceId);
            assert_eq!(r.reject_info_length, 0);
            assert_eq!(w.b.cm.connections(), 0, "no record kept");
            let (reason, ari, _) = rejected(&w.a.events);
            assert_eq!(
                (reason, ari),
                (RejReason::InvalidServiceId, RejectAri::Empty)
            );
            assert!(w.b.events.is_empty());
            w.finish();
        }
    }
}

// Annex A11 oA11-1: a server that supports the service but refuses the Table 1 parameters
// answers REJ "Consumer Reject" (28) with the §A11.7 ARI, for the REQ (message rejected 0).
#[test]
fn oa11_1_refused_parameters_rejected_with_reason_28_and_ari() {
    for v6 in [false, true] {
        // A destination address the server does not have.
        let mut w = World::new(16);
        let other: IpAddr = if v6 {
            Ipv6Addr::new(0xfd00, 0, 0, 0, 0, 0, 0, 0x99).into()
        } else {
            Ipv4Addr::new(10, 0, 0, 99).into()
        };
        w.a.neighbours.insert(other, gid(B_LID));
        let any: IpAddr = Ipv6Addr::UNSPECIFIED.into();
        w.listen_b(TCP, any, PORT);
        w.connect_a(TCP, SocketAddr::new(other, PORT), b"");
        w.drive(Duration::from_secs(5));
        let ari = consumer_reject_ari(&w);
        assert_eq!(w.rej_from_b().reject_info_length, 4);
        assert_eq!(ari, [0x00, 0x06, 0x00, 0x00]);
        refused_with(w, IpCmAriCode::UnknownIpAddress, &[]);
    }
}

// Annex A11 CA11-9: the ARI of a refusal follows Table 4: byte 0 the layer (0x00), byte 1 the
// code, byte 2 the suggested value's length, byte 3 the filler, then the value; the REJ's Reject
// Info Length covers exactly that.
#[test]
fn ca11_9_reject_ari_follows_table_4() {
    for v6 in [false, true] {
        let mut w = World::new(17);
        w.b.ipcm.cfg.policy.minor_version = 3;
        let any: IpAddr = Ipv6Addr::UNSPECIFIED.into();
        w.listen_b(TCP, any, PORT);
        w.a.mangle = Some(Box::new(|pd| pd[0] = 0x04));
        w.connect_a(TCP, SocketAddr::new(b_ip(v6), PORT), b"");
        w.drive(Duration::from_secs(5));
        let r = w.rej_from_b();
        assert_eq!(r.reject_info_length, 5);
        assert_eq!(r.ari(), [0x00, 0x02, 0x01, 0x00, 0x03]);
        assert!(r.ari[5..].iter().all(|&b| b == 0), "nothing after the ARI");
        refused_with(w, IpCmAriCode::MinorVersion, &[3]);
    }
}

// Annex A11 CA11-10: the service's ARI code (Table 5) is byte 1 of the ARI: every code the
// server can give, and the client reads each back.
#[test]
fn ca11_10_layer_ari_code_in_byte_1() {
    type Case = (u8, fn(&mut Vec<u8>), IpCmAriCode);
    let cases: [Case; 5] = [
        (1, |pd| pd[0] = 0x20, IpCmAriCode::MajorVersion),
        (2, |pd| pd[0] = 0x0f, IpCmAriCode::MinorVersion),
        (3, |pd| pd[1] = 0xf0, IpCmAriCode::Ipv),
        (4, |pd| pd[5] = 1, IpCmAriCode::SourceIpAddress),
        (5, |pd| pd[21] = 1, IpCmAriCode::DestinationIpAddress),
    ];
    for v6 in [false, true] {
        for (byte, mangle, code) in cases {
            if v6 && byte >= 4 {
                // Codes 0x04 and 0x05 are about IPv4 padding only (CA11-5).
                continue;
            }
            let w = mangled(18, v6, mangle);
            assert_eq!(consumer_reject_ari(&w)[1], byte);
            assert_eq!(rejected(&w.a.events).1.code(), Some(code));
        }
        // 0x06: an address the server does not have.
        let w = mangled(19, v6, |pd| pd[35] ^= 0x40);
        assert_eq!(consumer_reject_ari(&w)[1], 6);
        assert_eq!(
            rejected(&w.a.events).1.code(),
            Some(IpCmAriCode::UnknownIpAddress)
        );
    }
}

// Annex A11 oA11-2: a suggested value follows Table 4: its length in byte 2, the value from
// byte 4; the versions and the IP version come with the server's own, the address codes with
// none.
#[test]
fn oa11_2_suggested_value_length_and_value() {
    for v6 in [false, true] {
        let w = mangled(20, v6, |pd| pd[0] = 0x30);
        let ari = consumer_reject_ari(&w);
        assert_eq!((ari[2], &ari[4..]), (1, &[0u8][..]));
        refused_with(w, IpCmAriCode::MajorVersion, &[0]);
        let w = mangled(21, v6, |pd| pd[1] = 0x70);
        let ari = consumer_reject_ari(&w);
        assert_eq!((ari[2], &ari[4..]), (1, &[4u8][..]));
        refused_with(w, IpCmAriCode::Ipv, &[4]);
        let w = mangled(22, v6, |pd| pd[35] ^= 0x40);
        let ari = consumer_reject_ari(&w);
        assert_eq!((ari[2], ari.len()), (0, 4), "no suggested value");
        refused_with(w, IpCmAriCode::UnknownIpAddress, &[]);
    }
    let w = mangled(23, false, |pd| pd[6] = 9);
    assert_eq!(consumer_reject_ari(&w)[2], 0);
    refused_with(w, IpCmAriCode::SourceIpAddress, &[]);
}

// Annex A11 CA11-11: the versions are checked first: a REQ wrong in its version and in
// everything after it is refused for the version.
#[test]
fn ca11_11_versions_verified_first() {
    for v6 in [false, true] {
        // Wrong MajV, IPV, source padding and destination.
        let w = mangled(24, v6, |pd| {
            pd[0] = 0x10;
            pd[1] = 0x90;
            pd[4] = 0xff;
            pd[35] ^= 0x40;
        });
        refused_with(w, IpCmAriCode::MajorVersion, &[0]);
        // Wrong MinV, IPV and destination.
        let w = mangled(25, v6, |pd| {
            pd[0] = 0x05;
            pd[1] = 0x90;
            pd[35] ^= 0x40;
        });
        refused_with(w, IpCmAriCode::MinorVersion, &[0]);
    }
}

// Annex A11 §A11.6: a client that gets REJ 28 with the service's ARI code 0x00 learns nothing
// about the server: not that it runs the service, nor that it listens. Here the server is some
// other CM user that rejects that way; our client reports the code and does not count it as
// evidence of the service, while a specific code from our server is.
#[test]
fn a11_6_unspecified_ari_implies_nothing_about_the_server() {
    for v6 in [false, true] {
        let mut w = World::new(26);
        w.b.cm
            .listen(ip_cm_service_id(TCP, PORT), u64::MAX)
            .unwrap();
        w.b.other = Some((RejReason::ConsumerDefined, vec![0, 0, 0, 0], Vec::new()));
        w.connect_a(TCP, SocketAddr::new(b_ip(v6), PORT), b"");
        w.drive(Duration::from_secs(5));
        let (reason, ari, _) = rejected(&w.a.events);
        assert_eq!(reason, RejReason::ConsumerDefined);
        assert_eq!(ari.code(), Some(IpCmAriCode::Unspecified));
        assert!(!ari.shows_service());
        let w = mangled(27, v6, |pd| pd[0] = 0x10);
        assert!(rejected(&w.a.events).1.shows_service());
    }
}

// Annex A11 §A11.7 Table 3: the ARI of a REJ 28 is shared between the service (layer 0x00) and
// the RDMA-aware ULP (layer 0x01). A consumer's own reject names layer 0x01 and carries its
// private data; the client tells it from a refusal by the service.
#[test]
fn a11_7_consumer_reject_names_the_ulp_layer_and_carries_private_data() {
    for v6 in [false, true] {
        let mut w = World::new(28);
        w.b.answer = Answer::Reject(b"not now".to_vec());
        w.listen_b(TCP, b_ip(v6), PORT);
        w.connect_a(TCP, SocketAddr::new(b_ip(v6), PORT), b"");
        w.drive(Duration::from_secs(5));
        let r = w.rej_from_b();
        assert_eq!(r.reason, RejReason::ConsumerDefined);
        assert_eq!(r.ari(), [0x01]);
        assert_eq!(&r.private_data[..7], b"not now");
        let (_, ari, pd) = rejected(&w.a.events);
        assert_eq!(ari, RejectAri::Ulp(Vec::new()));
        assert_eq!(ari.layer(), Some(RejectionLayer::RdmaAwareUlp));
        assert!(!ari.shows_service());
        assert_eq!(&pd[..7], b"not now");
        w.finish();
    }
}

// Annex A11 §A11.7: a server may refuse "for security or any other reason" with code 0x00
// (Unspecified). Ours does so for a source address no interface can have, as Linux refuses such
// IPv4 sources (docs/DEPLOYED.md "Linux rdma_cm"); its consumer never hears of the REQ.
#[test]
fn a11_7_source_that_is_not_unicast_refused_with_unspecified() {
    type Mangler = fn(&mut Vec<u8>);
    let v4: [Mangler; 4] = [
        |pd| pd[16..20].fill(0),
        |pd| pd[16] = 127,
        |pd| pd[16] = 239,
        |pd| pd[16..20].fill(0xff),
    ];
    let v6: [Mangler; 3] = [
        |pd| pd[4..20].fill(0),
        |pd| pd[4] = 0xff,
        |pd| {
            pd[4..20].fill(0);
            pd[19] = 1;
        },
    ];
    let cases = v4
        .iter()
        .map(|m| (false, m))
        .chain(v6.iter().map(|m| (true, m)));
    for (seed, (v6, m)) in (40..).zip(cases) {
        let w = mangled(seed, v6, *m);
        refused_with(w, IpCmAriCode::Unspecified, &[]);
    }
}
