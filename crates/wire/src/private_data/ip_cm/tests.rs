use super::*;
use crate::describe::Collect;
use crate::private_data::IpPair;
use proptest::prelude::*;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// What Linux rdma_cm sends for 192.168.0.1:40000 -> 192.168.0.2, no consumer data:
/// `cma_hdr { cma_version 0x00, ip_version 0x40, port, ip4 { pad[3] = 0, addr } }`.
fn linux_v4_bytes() -> [u8; 36] {
    let mut b = [0u8; 36];
    b[0] = 0x00;
    b[1] = 0x40;
    b[2..4].copy_from_slice(&40000u16.to_be_bytes());
    b[16..20].copy_from_slice(&[192, 168, 0, 1]);
    b[32..36].copy_from_slice(&[192, 168, 0, 2]);
    b
}

fn v4_repr<'a>(consumer: &'a [u8]) -> IpCmReqRepr<'a> {
    IpCmReqRepr {
        major_version: 0,
        minor_version: 0,
        source_port: 40000,
        addrs: IpPair::V4 {
            src: Ipv4Addr::new(192, 168, 0, 1),
            dst: Ipv4Addr::new(192, 168, 0, 2),
        },
        consumer_private_data: consumer,
    }
}

#[test]
fn deconstruct() {
    // Annex A11 CA11-1 (Table 1), CA11-5.
    let b = linux_v4_bytes();
    let p = IpCmReq::new_checked(&b[..]).unwrap();
    assert_eq!(p.major_version(), 0);
    assert_eq!(p.minor_version(), 0);
    assert_eq!(p.ip_version(), 4);
    assert_eq!(p.reserved(), 0);
    assert_eq!(p.source_port(), 40000);
    assert_eq!(p.source_ip_field()[12..], [192, 168, 0, 1]);
    assert_eq!(p.destination_ip_field()[12..], [192, 168, 0, 2]);
    assert!(p.consumer_private_data().is_empty());
}

#[test]
fn construct() {
    let mut b = [0xffu8; 36];
    let mut p = IpCmReq::new_unchecked(&mut b[..]);
    p.set_version(0, 0);
    p.set_ip_version(4, 0);
    p.set_source_port(40000);
    p.source_ip_field_mut().fill(0);
    p.source_ip_field_mut()[12..].copy_from_slice(&[192, 168, 0, 1]);
    p.destination_ip_field_mut().fill(0);
    p.destination_ip_field_mut()[12..].copy_from_slice(&[192, 168, 0, 2]);
    assert_eq!(b, linux_v4_bytes());
}

#[test]
fn parse_and_emit_v4() {
    // Annex A11 CA11-1, CA11-5: IPv4 in bits 31-0, bits 127-32 zero.
    let mut b = [0u8; 92];
    b[..36].copy_from_slice(&linux_v4_bytes());
    b[36..40].copy_from_slice(b"iser");
    let r = IpCmReqRepr::parse(&b).unwrap();
    assert_eq!(r.addrs, v4_repr(&[]).addrs);
    assert_eq!(r.consumer_private_data.len(), MAX_CONSUMER_LEN);
    assert_eq!(&r.consumer_private_data[..4], b"iser");
    let mut out = [0xaau8; 92];
    r.emit(&mut out).unwrap();
    assert_eq!(out, b);
    // Annex A11 §A11.4.4: Res ignored on receive, zero on transmit.
    let mut b2 = b;
    b2[1] = 0x4f;
    assert_eq!(IpCmReqRepr::parse(&b2), Ok(r));
    let mut exact = [0u8; 36];
    v4_repr(&[]).emit(&mut exact).unwrap();
    assert_eq!(exact, linux_v4_bytes());
}

#[test]
fn parse_v6_and_mapped() {
    let src: Ipv6Addr = "fe80::1".parse().unwrap();
    let dst: Ipv6Addr = "fe80::2".parse().unwrap();
    let r = IpCmReqRepr {
        major_version: 0,
        minor_version: 0,
        source_port: 1,
        addrs: IpPair::V6 { src, dst },
        consumer_private_data: &[],
    };
    let mut b = [0u8; 36];
    r.emit(&mut b).unwrap();
    assert_eq!(b[1], 0x60);
    assert_eq!(b[4..20], src.octets());
    assert_eq!(IpCmReqRepr::parse(&b), Ok(r));
    // An IPv4-mapped IPv4 field is read too (docs/DEPLOYED.md: Linux uses zeros).
    let mut m = linux_v4_bytes();
    m[14] = 0xff;
    m[15] = 0xff;
    assert_eq!(IpCmReqRepr::parse(&m).unwrap().addrs, v4_repr(&[]).addrs);
}

#[test]
fn parse_errors() {
    let b = linux_v4_bytes();
    assert_eq!(IpCmReqRepr::parse(&b[..35]), Err(Error::Truncated));
    assert_eq!(IpCmReqRepr::parse(&[0u8; 93]), Err(Error::Malformed));
    let mut r = b;
    r[1] = 0x50; // reserved IPV (Annex A11 §A11.4.3)
    assert_eq!(IpCmReqRepr::parse(&r), Err(Error::Unsupported));
    let mut r = b;
    r[4] = 1; // IPv4 with non-zero upper bits
    assert_eq!(IpCmReqRepr::parse(&r), Err(Error::Malformed));
}

#[test]
fn describe_fields() {
    let r = v4_repr(&[1, 2]);
    let mut c = Collect::default();
    r.describe(&mut c);
    let names: Vec<&str> = c.fields.iter().map(|(k, _)| k.as_str()).collect();
    assert_eq!(
        names,
        ["majv", "minv", "ipv", "sport", "sip", "dip", "private"]
    );
    assert_eq!(c.get("dip"), Some("192.168.0.2"));
}

// --- verification (Annex A11 §A11.6) ---

fn verify(b: &[u8]) -> core::result::Result<IpCmReqRepr<'_>, IpCmReject> {
    verify_req_private_data(b, &IpCmServerPolicy::default(), &[])
}

#[test]
fn verify_accepts_linux_header() {
    // Annex A11 CA11-1, CA11-7.
    assert_eq!(verify(&linux_v4_bytes()), Ok(v4_repr(&[])));
    let local = [IpAddr::V4(Ipv4Addr::new(192, 168, 0, 2))];
    assert!(
        verify_req_private_data(&linux_v4_bytes(), &IpCmServerPolicy::default(), &local).is_ok()
    );
}

#[test]
fn verify_major_version() {
    // Annex A11 CA11-2: reject a MajV other than the supported one, suggesting it.
    let mut b = linux_v4_bytes();
    b[0] = 0x10;
    let e = verify(&b).unwrap_err();
    assert_eq!(e.code, IpCmAriCode::MajorVersion);
    assert_eq!(e.suggested.as_bytes(), [0]);
}

#[test]
fn verify_minor_version() {
    // Annex A11 CA11-3.1.1: reject a higher MinV; CA11-3.1.2, CA11-3: accept equal or lower.
    let mut b = linux_v4_bytes();
    b[0] = 0x01;
    assert_eq!(verify(&b).unwrap_err().code, IpCmAriCode::MinorVersion);
    let p = IpCmServerPolicy {
        minor_version: 2,
        ..Default::default()
    };
    assert_eq!(
        verify_req_private_data(&b, &p, &[]).map(|r| r.minor_version),
        Ok(1)
    );
    b[0] = 0x02;
    assert!(verify_req_private_data(&b, &p, &[]).is_ok());
    b[0] = 0x03;
    let e = verify_req_private_data(&b, &p, &[]).unwrap_err();
    assert_eq!(e.code, IpCmAriCode::MinorVersion);
    assert_eq!(e.suggested.as_bytes(), [2]);
}

#[test]
fn verify_versions_first() {
    // Annex A11 CA11-11: versions are verified before anything else, even a short or bad header.
    let mut b = linux_v4_bytes();
    b[0] = 0x10;
    b[1] = 0x90;
    b[4] = 0xff;
    assert_eq!(verify(&b).unwrap_err().code, IpCmAriCode::MajorVersion);
    assert_eq!(verify(&[0x10]).unwrap_err().code, IpCmAriCode::MajorVersion);
    assert_eq!(verify(&[0x01]).unwrap_err().code, IpCmAriCode::MinorVersion);
    assert_eq!(verify(&[]).unwrap_err().code, IpCmAriCode::Unspecified);
    assert_eq!(
        verify(&[0x00, 0x40]).unwrap_err().code,
        IpCmAriCode::Unspecified
    );
}

#[test]
fn verify_ip_version() {
    // Annex A11 CA11-4: reject an IPV the server does not support.
    let mut b = linux_v4_bytes();
    b[1] = 0x70;
    let e = verify(&b).unwrap_err();
    assert_eq!(e.code, IpCmAriCode::Ipv);
    assert_eq!(e.suggested.as_bytes(), [4]);
    let v6only = IpCmServerPolicy {
        ipv4: false,
        ..Default::default()
    };
    let e = verify_req_private_data(&linux_v4_bytes(), &v6only, &[]).unwrap_err();
    assert_eq!(e.code, IpCmAriCode::Ipv);
    assert_eq!(e.suggested.as_bytes(), [6]);
}

#[test]
fn verify_addresses() {
    // Annex A11 CA11-5 with Table 5 codes 0x04, 0x05, 0x06.
    let mut b = linux_v4_bytes();
    b[5] = 1;
    assert_eq!(verify(&b).unwrap_err().code, IpCmAriCode::SourceIpAddress);
    let mut b = linux_v4_bytes();
    b[20] = 1;
    assert_eq!(
        verify(&b).unwrap_err().code,
        IpCmAriCode::DestinationIpAddress
    );
    let mut mapped = linux_v4_bytes();
    mapped[14] = 0xff;
    mapped[15] = 0xff;
    assert_eq!(
        verify(&mapped).unwrap_err().code,
        IpCmAriCode::SourceIpAddress
    );
    let lenient = IpCmServerPolicy {
        accept_mapped_ipv4: true,
        ..Default::default()
    };
    assert!(verify_req_private_data(&mapped, &lenient, &[]).is_ok());
    let other = [IpAddr::V4(Ipv4Addr::new(10, 0, 0, 1))];
    let e = verify_req_private_data(&linux_v4_bytes(), &IpCmServerPolicy::default(), &other)
        .unwrap_err();
    assert_eq!(e, IpCmReject::new(IpCmAriCode::UnknownIpAddress));
}

#[test]
fn verify_source_must_be_unicast() {
    // Annex A11 §A11.7: a refusal for "any other reason" is Unspecified. A source no interface can
    // have (Linux `validate_ipv4_net_dev` refuses these IPv4 sources too) is refused so, after the
    // version and format checks and before the destination's.
    for src in [
        [0, 0, 0, 0],
        [127, 0, 0, 1],
        [224, 0, 0, 1],
        [255, 255, 255, 255],
    ] {
        let mut b = linux_v4_bytes();
        b[16..20].copy_from_slice(&src);
        assert_eq!(verify(&b), Err(IpCmReject::new(IpCmAriCode::Unspecified)));
        b[0] = 0x10;
        assert_eq!(verify(&b).unwrap_err().code, IpCmAriCode::MajorVersion);
    }
    let ours = [IpAddr::V6(Ipv6Addr::new(0xfd00, 0, 0, 0, 0, 0, 0, 2))];
    for src in [
        Ipv6Addr::UNSPECIFIED,
        Ipv6Addr::LOCALHOST,
        "ff02::1".parse().unwrap(),
    ] {
        let mut b = [0u8; 36];
        b[1] = 0x60;
        b[4..20].copy_from_slice(&src.octets());
        b[20..36].copy_from_slice(&Ipv6Addr::new(0xfd00, 0, 0, 0, 0, 0, 0, 2).octets());
        let e = verify_req_private_data(&b, &IpCmServerPolicy::default(), &ours);
        assert_eq!(e, Err(IpCmReject::new(IpCmAriCode::Unspecified)), "{src}");
        b[4..20].copy_from_slice(&Ipv6Addr::new(0xfd00, 0, 0, 0, 0, 0, 0, 1).octets());
        assert!(verify_req_private_data(&b, &IpCmServerPolicy::default(), &ours).is_ok());
    }
}

// --- REJ ARI (Annex A11 §A11.7) ---

#[test]
fn ari_emit_and_parse() {
    // Annex A11 CA11-9, CA11-10, oA11-1, oA11-2: [layer 0, code, len, filler, value...].
    let rej = IpCmReject {
        code: IpCmAriCode::MajorVersion,
        suggested: SuggestedValue::byte(0),
    };
    let mut ari = [0xeeu8; rej::ARI_FIELD_LEN];
    rej.emit(&mut ari).unwrap();
    assert_eq!(rej.buffer_len(), 5);
    assert_eq!(ari[..5], [0x00, 0x01, 0x01, 0x00, 0x00]);
    assert_eq!(IpCmReject::parse(&ari[..5]), Ok(rej));
    let v = RejAri::new_checked(&ari[..5]).unwrap();
    assert_eq!(v.rejection_layer(), RejectionLayer::IpCmService);
    assert_eq!(v.code(), IpCmAriCode::MajorVersion);
    assert_eq!(v.suggested_len(), 1);
    assert_eq!(v.filler(), 0);
    assert_eq!(v.suggested_value(), [0]);

    // Unspecified: no suggested value.
    let mut ari = [0u8; 4];
    IpCmReject::new(IpCmAriCode::Unspecified)
        .emit(&mut ari)
        .unwrap();
    assert_eq!(ari, [0, 0, 0, 0]);
}

#[test]
fn ari_layers_and_unknown_codes() {
    // Annex A11 Table 3: a ULP's ARI is not the IP CM service's.
    assert_eq!(IpCmReject::parse(&[1, 0, 0, 0]), Err(Error::Unsupported));
    assert_eq!(
        RejectionLayer::of(&[1, 9]),
        Some(RejectionLayer::RdmaAwareUlp)
    );
    assert_eq!(RejectionLayer::of(&[]), None);
    // Unknown Table 5 codes survive a round trip.
    let r = IpCmReject::parse(&[0, 0x42, 0, 0]).unwrap();
    assert_eq!(r.code, IpCmAriCode::Unknown(0x42));
    let mut b = [0u8; 4];
    r.emit(&mut b).unwrap();
    assert_eq!(b, [0, 0x42, 0, 0]);
    for c in 0..=255u8 {
        assert_eq!(u8::from(IpCmAriCode::from(c)), c);
        assert_eq!(u8::from(RejectionLayer::from(c)), c);
    }
    // Lengths: a suggested value longer than the buffer, or than 68 bytes.
    assert_eq!(IpCmReject::parse(&[0, 1, 2, 0, 0]), Err(Error::Truncated));
    assert_eq!(IpCmReject::parse(&[0, 1, 69, 0]), Err(Error::Malformed));
    assert_eq!(IpCmReject::parse(&[0u8; 73]), Err(Error::Malformed));
    assert!(SuggestedValue::new(&[0u8; 69]).is_err());
}

#[test]
fn ari_describe() {
    let mut c = Collect::default();
    IpCmReject::new(IpCmAriCode::UnknownIpAddress).describe(&mut c);
    assert_eq!(c.get("ari_code"), Some("UnknownIpAddress (0x6)"));
    assert_eq!(c.get("rejection_layer"), Some("RdmaIpCmService (0x0)"));
}

fn arb_pair() -> impl Strategy<Value = IpPair> {
    prop_oneof![
        (any::<[u8; 4]>(), any::<[u8; 4]>()).prop_map(|(s, d)| IpPair::V4 {
            src: s.into(),
            dst: d.into()
        }),
        (any::<[u8; 16]>(), any::<[u8; 16]>()).prop_map(|(s, d)| IpPair::V6 {
            src: s.into(),
            dst: d.into()
        }),
    ]
}

proptest! {
    #[test]
    fn req_round_trip(
        major in 0u8..16, minor in 0u8..16, port in any::<u16>(), addrs in arb_pair(),
        consumer in proptest::collection::vec(any::<u8>(), 0..=MAX_CONSUMER_LEN),
    ) {
        let r = IpCmReqRepr { major_version: major, minor_version: minor, source_port: port, addrs,
            consumer_private_data: &consumer };
        let mut b = vec![0u8; r.buffer_len()];
        r.emit(&mut b).unwrap();
        prop_assert_eq!(IpCmReqRepr::parse(&b), Ok(r));
        if major == 0 && minor == 0 {
            prop_assert_eq!(verify(&b), Ok(r));
        }
    }

    #[test]
    fn ari_round_trip(code in any::<u8>(), value in proptest::collection::vec(any::<u8>(), 0..=68)) {
        let r = IpCmReject { code: code.into(), suggested: SuggestedValue::new(&value).unwrap() };
        let mut b = [0u8; 72];
        r.emit(&mut b).unwrap();
        prop_assert_eq!(IpCmReject::parse(&b[..r.buffer_len()]), Ok(r));
        prop_assert_eq!(IpCmReject::parse(&b), Ok(r));
    }

    #[test]
    fn parsers_never_panic(data in proptest::collection::vec(any::<u8>(), 0..300)) {
        let _ = IpCmReqRepr::parse(&data);
        let _ = IpCmReject::parse(&data);
        let _ = verify(&data);
        let _ = verify_req_private_data(&data, &IpCmServerPolicy { ipv4: false, ipv6: false,
            accept_mapped_ipv4: true, ..Default::default() }, &[IpAddr::V4(Ipv4Addr::LOCALHOST)]);
    }
}

#[test]
fn rej_reasons() {
    // Annex A11 oA11-1: Consumer Reject (28) carries the A11 ARI; CA11-8: a server without the
    // service answers Invalid Service ID (8). docs/DEPLOYED.md: Linux uses the same reason codes.
    assert_eq!(REJ_REASON_CONSUMER_REJECT, 28);
    assert_eq!(REJ_REASON_INVALID_SERVICE_ID, 8);
    // Annex A11 CA11-7: a service ID in the A11 range means this private-data format.
    assert!(matches!(
        crate::private_data::classify(0x0000_0000_0106_0cbc),
        crate::private_data::ServiceKind::IpCm {
            protocol: 6,
            port: 3260
        }
    ));
}
