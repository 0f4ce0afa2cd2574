use super::*;
use crate::describe::Collect;
use crate::ipoib::hwaddr::HwAddrFlags;
use crate::ipoib::legacy::LegacyCapabilities;
use crate::keys::QKey;
use crate::types::{Gid, Guid};
use proptest::prelude::*;

fn src() -> Ipv6Addr {
    "fe80::202:c903:0:1".parse().unwrap()
}
fn dst() -> Ipv6Addr {
    "ff02::1:ff00:2".parse().unwrap()
}
fn lla() -> HwAddr {
    HwAddr::new(
        HwAddrFlags::RC,
        0x48,
        Gid::new(Gid::DEFAULT_SUBNET_PREFIX, 0x0002_c903_0000_0001),
    )
}

// draft-ietf-ipoib-ip-over-infiniband-06 §9.3: a neighbour solicitation for fe80::202:c903:0:2 with a
// source link-layer address option of type 1, length 3: two zero bytes then the 20-byte address of
// §9.1.1 (Linux layout). Checksum computed independently for fe80::202:c903:0:1 > ff02::1:ff00:2.
static NS: [u8; 48] = [
    0x87, 0x00, 0x9e, 0xaa, 0x00, 0x00, 0x00, 0x00, 0xfe, 0x80, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x02, 0x02, 0xc9, 0x03, 0x00, 0x00, 0x00, 0x02, 0x01, 0x03, 0x00, 0x00, 0x80, 0x00, 0x00, 0x48,
    0xfe, 0x80, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x02, 0xc9, 0x03, 0x00, 0x00, 0x00, 0x01,
];

fn ns() -> NdRepr<'static> {
    NdRepr {
        message: NdMessage::NeighborSolicit {
            target: "fe80::202:c903:0:2".parse().unwrap(),
        },
        options: &NS[24..],
        profile: NdProfile::Rfc4391,
    }
}

#[test]
fn option_deconstruct() {
    let o = NdOption::new_checked(&NS[24..]).unwrap();
    assert_eq!(o.option_type(), NdOptionType::SourceLinkLayerAddr);
    assert_eq!(o.length(), 3);
    assert_eq!(o.total_len(), LLA_OPTION_LEN);
    assert_eq!(&o.data()[..2], &[0, 0]);
}

#[test]
fn option_construct() {
    let mut b = [0xffu8; 24];
    let mut o = NdOption::new_unchecked(&mut b[..]);
    o.set_type_and_length(NdOptionType::SourceLinkLayerAddr, 3);
    o.data_mut()[..2].fill(0);
    lla().emit(&mut o.data_mut()[2..]).unwrap();
    assert_eq!(b, NS[24..]);
}

// draft-ietf-ipoib-ip-over-infiniband-06 §9.3: type 1/2, length 3, the §9.1.1 address.
#[test]
fn lla_option_parse_emit() {
    let r = NdOptionRepr::parse(&NdOption::new_unchecked(&NS[24..])).unwrap();
    assert_eq!(r, NdOptionRepr::SourceLinkLayerAddr(lla()));
    let mut b = [0u8; 24];
    r.emit(&mut b).unwrap();
    assert_eq!(b, NS[24..]);
    let t = NdOptionRepr::TargetLinkLayerAddr(lla());
    t.emit(&mut b).unwrap();
    assert_eq!(b[..2], [2, 3]);
    assert_eq!(
        NdOptionRepr::parse(&NdOption::new_unchecked(&b[..])).unwrap(),
        t
    );
}

// draft-ietf-ipoib-ip-over-infiniband-06 §9.3: a link-layer option whose length is not 3 (e.g. an
// Ethernet-sized one) is not an IPoIB address.
#[test]
fn lla_option_wrong_length() {
    let b = [1u8, 1, 0, 0x11, 0x22, 0x33, 0x44, 0x55];
    assert_eq!(
        NdOptionRepr::parse(&NdOption::new_unchecked(&b[..])),
        Err(Error::Malformed)
    );
}

#[test]
fn message_parse_emit() {
    let r = NdRepr::parse(src(), dst(), &NS).unwrap();
    assert_eq!(r, ns());
    assert_eq!(r.source_lla(), Some(lla()));
    assert_eq!(r.target_lla(), None);
    let mut b = [0u8; 48];
    ns().emit(src(), dst(), &mut b).unwrap();
    assert_eq!(b, NS);
    assert_eq!(
        format!("{}", r.summary()),
        " who-has fe80::202:c903:0:2 from 80:00:00:48:fe:80:00:00:00:00:00:00:00:02:c9:03:00:00:00:01"
    );
    let mut c = Collect::default();
    r.describe(&mut c);
    assert_eq!(c.get("target_address"), Some("fe80::202:c903:0:2"));
    assert_eq!(
        c.get("option_0.type"),
        Some("source link-layer address (0x1)")
    );
    assert_eq!(c.get("option_0.link_addr.qpn"), Some("0x000048"));
}

#[test]
fn message_errors() {
    let mut b = NS;
    b[1] = 1; // code 1
    let m = Icmpv6Repr {
        msg_type: Icmpv6Type::NeighborSolicit,
        code: 1,
        rest: 0,
        body: &b[8..],
    };
    assert_eq!(NdRepr::parse_message(&m), Err(Error::Malformed));
    let m = Icmpv6Repr {
        msg_type: Icmpv6Type::NeighborSolicit,
        code: 0,
        rest: 0,
        body: &NS[8..20],
    };
    assert_eq!(NdRepr::parse_message(&m), Err(Error::Truncated));
    let m = Icmpv6Repr {
        msg_type: Icmpv6Type::EchoRequest,
        code: 0,
        rest: 0,
        body: &[],
    };
    assert_eq!(NdRepr::parse_message(&m), Err(Error::Unsupported));
    // A zero-length option (RFC 4861 §4.6).
    let mut opts = NS[24..].to_vec();
    opts[1] = 0;
    let mut body = NS[8..24].to_vec();
    body.extend_from_slice(&opts);
    let m = Icmpv6Repr {
        msg_type: Icmpv6Type::NeighborSolicit,
        code: 0,
        rest: 0,
        body: &body,
    };
    assert_eq!(NdRepr::parse_message(&m), Err(Error::Malformed));
}

// RFC 4861 §4.2, §4.6.2, §4.6.4 with the draft-ietf-ipoib-ip-over-infiniband-06 §9.3 source option:
// a router advertisement with MTU 2044 (§7) and prefix 2001:db8::/64.
#[test]
fn router_advert_with_mtu_and_prefix() {
    let pi = PrefixInfo {
        prefix_len: 64,
        on_link: true,
        autonomous: true,
        valid_lifetime: 2_592_000,
        preferred_lifetime: 604_800,
        prefix: "2001:db8::".parse().unwrap(),
    };
    let mut opts = [0u8; 8 + 32 + 24];
    NdOptionRepr::Mtu(2044).emit(&mut opts[..8]).unwrap();
    assert_eq!(opts[..8], [5, 1, 0, 0, 0, 0, 0x07, 0xfc]);
    NdOptionRepr::PrefixInformation(pi)
        .emit(&mut opts[8..40])
        .unwrap();
    assert_eq!(opts[8..16], [3, 4, 64, 0xc0, 0x00, 0x27, 0x8d, 0x00]);
    assert_eq!(opts[24..26], [0x20, 0x01]);
    NdOptionRepr::SourceLinkLayerAddr(lla())
        .emit(&mut opts[40..])
        .unwrap();
    let ra = NdRepr {
        message: NdMessage::RouterAdvert {
            cur_hop_limit: 64,
            flags: 0,
            router_lifetime: 1800,
            reachable_time: 0,
            retrans_timer: 0,
        },
        options: &opts,
        profile: NdProfile::Rfc4391,
    };
    let mut b = vec![0u8; ra.buffer_len()];
    ra.emit(src(), dst(), &mut b).unwrap();
    let back = NdRepr::parse(src(), dst(), &b).unwrap();
    assert_eq!(back, ra);
    assert_eq!(back.mtu(), Some(2044));
    assert_eq!(back.source_lla(), Some(lla()));
    let all: Vec<_> = back.options().collect::<Result<_>>().unwrap();
    assert_eq!(all[1], NdOptionRepr::PrefixInformation(pi));
    let mut c = Collect::default();
    back.describe(&mut c);
    assert_eq!(c.get("option_0.mtu"), Some("2044"));
    assert_eq!(c.get("option_1.prefix"), Some("2001:db8::"));
}

#[test]
fn iterator_stops_on_error() {
    let b = [5u8, 1, 0, 0, 0, 0, 0x07, 0xfc, 1, 3, 0, 0];
    let v: Vec<_> = NdOptionIter::new(&b).collect();
    assert_eq!(v.len(), 2);
    assert!(v[0].is_ok());
    assert_eq!(v[1].as_ref().err(), Some(&Error::Truncated));
}

/// The legacy option of draft-kashyap-ipoib-ipv6-01 §5.1: target, LID 0x0012, flags RC, QPN
/// 0x000048, Q_Key 0x12345678, GUID 0x0002c90300000001.
fn legacy() -> LegacyLlaRepr {
    LegacyLlaRepr {
        target: true,
        lid: 0x12,
        flags: LegacyCapabilities(LegacyCapabilities::RC),
        qpn: 0x48,
        qkey: QKey(0x1234_5678),
        guid: Guid(0x0002_c903_0000_0001),
    }
}

/// A neighbour advertisement for `src()` to all-nodes carrying `o`, emitted.
fn na_with(o: NdOptionRepr<'_>) -> Vec<u8> {
    let mut opts = vec![0u8; o.buffer_len()];
    o.emit(&mut opts).unwrap();
    let na = NdRepr {
        message: NdMessage::NeighborAdvert {
            flags: 0x20,
            target: src(),
        },
        options: &opts,
        profile: NdProfile::Rfc4391,
    };
    let mut b = vec![0u8; na.buffer_len()];
    na.emit(src(), dst(), &mut b).unwrap();
    b
}

// draft-kashyap-ipoib-ipv6-01 §5.1: the legacy option has the type (2) and Length (3) of
// draft-ietf-ipoib-ip-over-infiniband-06 §9.3's, so only the profile tells how to read it: as the
// legacy profile's, its LID, flags, QPN, Q_Key and GUID; as RFC 4391's, 20 bytes of a misplaced
// address. Fails on the old code, which had no profile and read every such option as §9.3's.
#[test]
fn legacy_option_is_read_by_the_profile() {
    let o = NdOptionRepr::LegacyLinkLayerAddr(legacy());
    assert_eq!(o.option_type(), NdOptionType::TargetLinkLayerAddr);
    assert_eq!(o.buffer_len(), 24);
    let b = na_with(o);
    // type 2, Length 3, LID, flags, QPN, Q_Key, GUID, 4 zero bytes (crates/wire/src/ipoib/legacy.rs).
    assert_eq!(
        b[24..],
        [
            2, 3, 0x00, 0x12, 0x40, 0x00, 0x00, 0x48, 0x12, 0x34, 0x56, 0x78, 0x00, 0x02, 0xc9,
            0x03, 0x00, 0x00, 0x00, 0x01, 0, 0, 0, 0
        ]
    );

    let l = NdRepr::parse_as(src(), dst(), &b, NdProfile::Legacy).unwrap();
    assert_eq!(l.profile, NdProfile::Legacy);
    assert_eq!(l.legacy_lla(true), Some(legacy()));
    assert_eq!((l.legacy_lla(false), l.target_lla()), (None, None));
    assert_eq!(
        l.summary().to_string(),
        " fe80::202:c903:0:1 is-at lid 0x0012 flags 0x40 qpn 0x000048 qkey 0x12345678 guid 0x0002c90300000001"
    );
    let mut c = Collect::default();
    l.describe(&mut c);
    for (k, v) in [
        ("option_0.type", "target link-layer address (0x2)"),
        ("option_0.length", "3"),
        ("option_0.lid", "0x0012"),
        ("option_0.rc", "true"),
        ("option_0.qpn", "0x000048"),
        ("option_0.qkey", "0x12345678"),
        ("option_0.guid", "0x0002c90300000001"),
    ] {
        assert_eq!(c.get(k), Some(v), "{k}");
    }
    assert_eq!(c.get("option_0.link_addr.qpn"), None);

    // The same bytes as draft-ietf-ipoib-ip-over-infiniband-06 §9.3 reads them: flags 0x40 and
    // QPN 0x000048 sit where that option has them, the rest is not a GID of this port.
    let r = NdRepr::parse(src(), dst(), &b).unwrap();
    assert_eq!(r.legacy_lla(true), None);
    let a = r.target_lla().unwrap();
    assert_eq!(a.qpn, 0x48);
    assert_ne!(a.gid, legacy().dgid(Gid::DEFAULT_SUBNET_PREFIX));
    let mut c = Collect::default();
    r.describe(&mut c);
    assert_eq!(c.get("option_0.link_addr.qpn"), Some("0x000048"));
    assert_eq!(c.get("option_0.qkey"), None);

    // An RFC 4391 option read as the legacy profile's is taken apart the legacy way: the profile
    // is the caller's to know, not guessed from the bytes.
    let b = na_with(NdOptionRepr::TargetLinkLayerAddr(lla()));
    let l = NdRepr::parse_as(src(), dst(), &b, NdProfile::Legacy).unwrap();
    assert_eq!(l.target_lla(), None);
    assert_eq!(l.legacy_lla(true).map(|r| r.lid), Some(0));
}

// draft-kashyap-ipoib-ipv6-01 §5.1: Length 3; any other length of a type 1 or 2 option is
// malformed under the legacy profile too, and so is the message that carries it, as under
// draft-ietf-ipoib-ip-over-infiniband-06 §9.3 (`NdRepr::parse_message_as`).
#[test]
fn legacy_option_wrong_length() {
    let b = [1u8, 1, 0, 0x11, 0x22, 0x33, 0x44, 0x55];
    assert_eq!(
        NdOptionRepr::parse_as(&NdOption::new_unchecked(&b[..]), NdProfile::Legacy),
        Err(Error::Malformed)
    );
    // Other options are read alike under both profiles.
    let mtu = [5u8, 1, 0, 0, 0, 0, 0x07, 0xfc];
    assert_eq!(
        NdOptionRepr::parse_as(&NdOption::new_unchecked(&mtu[..]), NdProfile::Legacy),
        Ok(NdOptionRepr::Mtu(2044))
    );
    let mut m = NS;
    m[24 + 1] = 2;
    let body = [&m[8..], &[0u8; 8]].concat();
    let msg = Icmpv6Repr {
        msg_type: Icmpv6Type::NeighborSolicit,
        code: 0,
        rest: 0,
        body: &body,
    };
    assert_eq!(
        NdRepr::parse_message_as(&msg, NdProfile::Legacy),
        Err(Error::Malformed)
    );
}

fn arb_message() -> impl Strategy<Value = NdMessage> {
    let a = any::<u128>().prop_map(Ipv6Addr::from);
    prop_oneof![
        Just(NdMessage::RouterSolicit),
        (
            any::<u8>(),
            any::<u8>(),
            any::<u16>(),
            any::<u32>(),
            any::<u32>()
        )
            .prop_map(|(c, f, l, r, t)| {
                NdMessage::RouterAdvert {
                    cur_hop_limit: c,
                    flags: f,
                    router_lifetime: l,
                    reachable_time: r,
                    retrans_timer: t,
                }
            }),
        a.clone()
            .prop_map(|target| NdMessage::NeighborSolicit { target }),
        (any::<u8>(), a.clone())
            .prop_map(|(flags, target)| NdMessage::NeighborAdvert { flags, target }),
        (a.clone(), a).prop_map(|(target, destination)| NdMessage::Redirect {
            target,
            destination
        }),
    ]
}

proptest! {
    #[test]
    fn round_trip(m in arb_message(), qpn in 0u32..0x100_0000, g in any::<[u8; 16]>(), mtu in any::<u32>(),
                  other in proptest::collection::vec(any::<u8>(), 0..30)) {
        let mut opts = vec![0u8; 24 + 8 + 32];
        NdOptionRepr::TargetLinkLayerAddr(HwAddr::new(HwAddrFlags(0), qpn, Gid(g))).emit(&mut opts).unwrap();
        NdOptionRepr::Mtu(mtu).emit(&mut opts[24..]).unwrap();
        let o = NdOptionRepr::Other { option_type: NdOptionType::Unknown(200), data: &other };
        opts.truncate(32 + o.buffer_len());
        o.emit(&mut opts[32..]).unwrap();
        let r = NdRepr { message: m, options: &opts, profile: NdProfile::Rfc4391 };
        let mut b = vec![0u8; r.buffer_len()];
        r.emit(src(), dst(), &mut b).unwrap();
        prop_assert_eq!(NdRepr::parse(src(), dst(), &b).unwrap(), r);
    }

    // draft-kashyap-ipoib-ipv6-01 §5.1: any legacy option, with the other options around it,
    // survives emit and parse under the legacy profile.
    #[test]
    fn legacy_round_trip(m in arb_message(), target in any::<bool>(), lid in any::<u16>(), flags in any::<u8>(),
                         qpn in 0u32..0x100_0000, qkey in any::<u32>(), guid in any::<u64>(), mtu in any::<u32>()) {
        let l = LegacyLlaRepr { target, lid, flags: LegacyCapabilities(flags), qpn, qkey: QKey(qkey), guid: Guid(guid) };
        let mut opts = vec![0u8; 8 + 24];
        NdOptionRepr::Mtu(mtu).emit(&mut opts).unwrap();
        NdOptionRepr::LegacyLinkLayerAddr(l).emit(&mut opts[8..]).unwrap();
        let mut direct = [0u8; 24];
        l.emit(&mut crate::ipoib::legacy::LegacyLlaOption::new_unchecked(&mut direct[..]));
        prop_assert_eq!(&opts[8..], &direct[..]);
        let r = NdRepr { message: m, options: &opts, profile: NdProfile::Legacy };
        let mut b = vec![0u8; r.buffer_len()];
        r.emit(src(), dst(), &mut b).unwrap();
        let back = NdRepr::parse_as(src(), dst(), &b, NdProfile::Legacy).unwrap();
        prop_assert_eq!(back, r);
        prop_assert_eq!(back.legacy_lla(target), Some(l));
        prop_assert_eq!(back.mtu(), Some(mtu));
    }

    #[test]
    fn parse_never_panics(t in 133u8..138, data in proptest::collection::vec(any::<u8>(), 0..300)) {
        let m = Icmpv6Repr { msg_type: t.into(), code: 0, rest: 0, body: &data };
        for profile in [NdProfile::Rfc4391, NdProfile::Legacy] {
            if let Ok(r) = NdRepr::parse_message_as(&m, profile) {
                let _ = format!("{}", r.summary());
                r.describe(&mut Collect::default());
            }
            for o in NdOptionIter::new(&data).flatten() {
                let _ = NdOptionRepr::parse_as(&o, profile);
            }
        }
    }
}
