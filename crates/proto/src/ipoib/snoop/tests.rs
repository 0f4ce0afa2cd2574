//! One test per snooping rule of the module docs, on packets built as Linux sends them: IGMP with
//! the IPv4 Router Alert option (RFC 2113), MLD behind a hop-by-hop header with Router Alert
//! (RFC 2711).

use super::*;
use ipoib_wire::ipoib::checksum;
use ipoib_wire::ipoib::{GroupRecordRepr, IgmpPacket, MldPacket};
use proptest::prelude::*;

const G1: Ipv4Addr = Ipv4Addr::new(239, 1, 2, 3);
const G2: Ipv4Addr = Ipv4Addr::new(239, 1, 2, 4);
const S1: Ipv4Addr = Ipv4Addr::new(10, 0, 0, 9);
const S2: Ipv4Addr = Ipv4Addr::new(10, 0, 0, 10);
const HOST: Ipv4Addr = Ipv4Addr::new(10, 0, 0, 2);

fn g6(s: &str) -> Ipv6Addr {
    s.parse().unwrap()
}

/// An IPv4 packet from [`HOST`] to `dst`, protocol IGMP, TTL 1, with Router Alert (RFC 2113),
/// carrying `igmp`.
fn ipv4_igmp(dst: Ipv4Addr, igmp: &[u8]) -> Vec<u8> {
    let mut b = vec![0u8; 24 + igmp.len()];
    b[0] = 0x46;
    b[1] = 0xc0;
    b[2..4].copy_from_slice(&((24 + igmp.len()) as u16).to_be_bytes());
    b[6] = 0x40;
    b[8] = 1;
    b[9] = 2;
    b[12..16].copy_from_slice(&HOST.octets());
    b[16..20].copy_from_slice(&dst.octets());
    b[20..24].copy_from_slice(&[0x94, 0x04, 0, 0]);
    b[24..].copy_from_slice(igmp);
    Ipv4Packet::new_unchecked(&mut b[..]).fill_checksum();
    b
}

fn igmp(r: IgmpRepr<'_>) -> Vec<u8> {
    let mut b = vec![0u8; r.buffer_len()];
    r.emit(&mut b).unwrap();
    let dst = match r {
        IgmpRepr::V1Report { group } | IgmpRepr::V2Report { group } => group,
        IgmpRepr::Leave { .. } => Ipv4Addr::new(224, 0, 0, 2),
        _ => Ipv4Addr::new(224, 0, 0, 22),
    };
    ipv4_igmp(dst, &b)
}

/// An IGMPv3 report of `records` (type, group, sources).
fn v3(records: &[(u8, Ipv4Addr, &[Ipv4Addr])]) -> Vec<u8> {
    let mut rb = Vec::new();
    for (t, g, s) in records {
        let src: Vec<u8> = s.iter().flat_map(|a| a.octets()).collect();
        let r = GroupRecordRepr {
            record_type: RecordType::from(*t),
            group: *g,
            sources: &src,
            aux: &[],
        };
        let mut b = vec![0u8; r.buffer_len()];
        r.emit(&mut b).unwrap();
        rb.extend_from_slice(&b);
    }
    let records = GroupRecords::new_checked(&rb, records.len() as u16).unwrap();
    igmp(IgmpRepr::V3Report { records })
}

/// An IPv6 packet from fe80::2 to `dst`, hop limit 1, hop-by-hop header with Router Alert
/// (RFC 2711, value 0: MLD) and PadN, carrying `mld` (its checksum filled in).
fn ipv6_mld(dst: Ipv6Addr, mut mld: Vec<u8>) -> Vec<u8> {
    let src = g6("fe80::2");
    if mld.len() >= 8 {
        MldPacket::new_unchecked(&mut mld[..]).fill_checksum(src, dst);
    }
    let mut b = vec![0u8; 48];
    b[0] = 0x60;
    b[4..6].copy_from_slice(&((8 + mld.len()) as u16).to_be_bytes());
    b[6] = 0;
    b[7] = 1;
    b[8..24].copy_from_slice(&src.octets());
    b[24..40].copy_from_slice(&dst.octets());
    b[40..48].copy_from_slice(&[58, 0, 5, 2, 0, 0, 1, 0]);
    b.extend_from_slice(&mld);
    b
}

fn mld(r: MldRepr<'_>) -> Vec<u8> {
    let mut b = vec![0u8; r.buffer_len()];
    let (src, dst) = (g6("fe80::2"), g6("ff02::16"));
    r.emit(src, dst, &mut b).unwrap();
    ipv6_mld(dst, b)
}

fn mld_v2(records: &[(u8, Ipv6Addr, &[Ipv6Addr])]) -> Vec<u8> {
    let mut rb = Vec::new();
    for (t, g, s) in records {
        let src: Vec<u8> = s.iter().flat_map(|a| a.octets()).collect();
        let r = GroupRecordRepr {
            record_type: RecordType::from(*t),
            group: *g,
            sources: &src,
            aux: &[],
        };
        let mut b = vec![0u8; r.buffer_len()];
        r.emit(&mut b).unwrap();
        rb.extend_from_slice(&b);
    }
    let records = GroupRecords::new_checked(&rb, records.len() as u16).unwrap();
    mld(MldRepr::V2Report { records })
}

fn changes(s: &mut Snooper) -> Vec<SnoopChange> {
    std::iter::from_fn(|| s.poll_change()).collect()
}

fn join4(g: Ipv4Addr) -> SnoopChange {
    SnoopChange::Join(IpAddr::V4(g))
}

fn leave4(g: Ipv4Addr) -> SnoopChange {
    SnoopChange::Leave(IpAddr::V4(g))
}

/// RFC 3376 §7.3.2: an IGMPv2 report counts as an any-source join; its repetitions change nothing.
#[test]
fn v2_report_joins_once() {
    let mut s = Snooper::default();
    let p = igmp(IgmpRepr::V2Report { group: G1 });
    assert!(s.handle_packet(&p));
    assert!(s.handle_packet(&p));
    assert_eq!(changes(&mut s), [join4(G1)]);
    assert_eq!(s.groups().collect::<Vec<_>>(), [IpAddr::V4(G1)]);
    assert_eq!(s.counters().igmp, 2);
    assert_eq!(s.counters().joins, 1);
}

/// RFC 3376 §7.3.2: an IGMPv1 report is an any-source join too.
#[test]
fn v1_report_joins() {
    let mut s = Snooper::default();
    s.handle_packet(&igmp(IgmpRepr::V1Report { group: G1 }));
    assert_eq!(changes(&mut s), [join4(G1)]);
}

/// RFC 2236 §3, RFC 3376 §7.3.2: an IGMPv2 leave ends the membership; a leave of a group not
/// held changes nothing.
#[test]
fn v2_leave_leaves() {
    let mut s = Snooper::default();
    s.handle_packet(&igmp(IgmpRepr::V2Report { group: G1 }));
    s.handle_packet(&igmp(IgmpRepr::Leave { group: G1 }));
    s.handle_packet(&igmp(IgmpRepr::Leave { group: G2 }));
    assert_eq!(changes(&mut s), [join4(G1), leave4(G1)]);
    assert_eq!(s.groups().count(), 0);
}

/// RFC 3376 §4.2.12: CHANGE_TO_EXCLUDE_MODE {} is a join, CHANGE_TO_INCLUDE_MODE {} a leave
/// (what Linux sends for an any-source join and leave).
#[test]
fn v3_change_to_exclude_and_include() {
    let mut s = Snooper::default();
    s.handle_packet(&v3(&[(4, G1, &[])]));
    s.handle_packet(&v3(&[(4, G1, &[])]));
    s.handle_packet(&v3(&[(3, G1, &[])]));
    assert_eq!(changes(&mut s), [join4(G1), leave4(G1)]);
}

/// RFC 3376 §4.2.12: MODE_IS_EXCLUDE with sources still listens (to every other source).
#[test]
fn v3_mode_is_exclude_joins() {
    let mut s = Snooper::default();
    s.handle_packet(&v3(&[(2, G1, &[S1])]));
    assert_eq!(changes(&mut s), [join4(G1)]);
}

/// RFC 3376 §4.2.12: MODE_IS_INCLUDE of sources listens, of no source does not.
#[test]
fn v3_mode_is_include() {
    let mut s = Snooper::default();
    s.handle_packet(&v3(&[(1, G1, &[S1])]));
    s.handle_packet(&v3(&[(1, G1, &[])]));
    assert_eq!(changes(&mut s), [join4(G1), leave4(G1)]);
}

/// RFC 3376 §4.2.12: CHANGE_TO_INCLUDE_MODE of sources is a source-specific join (IB cannot
/// filter by source: a FullMember join); from EXCLUDE mode it keeps listening.
#[test]
fn v3_change_to_include_with_sources() {
    let mut s = Snooper::default();
    s.handle_packet(&v3(&[(3, G1, &[S1])]));
    s.handle_packet(&v3(&[(4, G2, &[])]));
    s.handle_packet(&v3(&[(3, G2, &[S2])]));
    assert_eq!(changes(&mut s), [join4(G1), join4(G2)]);
    assert_eq!(s.groups().count(), 2);
}

/// RFC 3376 §4.2.12: ALLOW_NEW_SOURCES for a group not held starts an INCLUDE list;
/// BLOCK_OLD_SOURCES that empties it is a leave (Linux ends an INCLUDE-mode membership so).
#[test]
fn v3_allow_then_block_all() {
    let mut s = Snooper::default();
    s.handle_packet(&v3(&[(5, G1, &[S1, S2])]));
    s.handle_packet(&v3(&[(6, G1, &[S1])]));
    assert_eq!(changes(&mut s), [join4(G1)]);
    s.handle_packet(&v3(&[(6, G1, &[S2])]));
    assert_eq!(changes(&mut s), [leave4(G1)]);
}

/// RFC 3376 §4.2.12: in EXCLUDE mode, ALLOW and BLOCK change which sources are excluded, never
/// whether the group is listened to; a BLOCK for a group not held does nothing.
#[test]
fn v3_exclude_mode_ignores_allow_and_block() {
    let mut s = Snooper::default();
    s.handle_packet(&v3(&[(4, G1, &[S1])]));
    s.handle_packet(&v3(&[(6, G1, &[S2])]));
    s.handle_packet(&v3(&[(5, G1, &[S1])]));
    s.handle_packet(&v3(&[(6, G2, &[S1])]));
    assert_eq!(changes(&mut s), [join4(G1)]);
}

/// RFC 3376 §4.2.12: a record of unknown type is ignored; the report's other records count.
#[test]
fn unknown_record_type_ignored() {
    let mut s = Snooper::default();
    s.handle_packet(&v3(&[(9, G1, &[]), (4, G2, &[])]));
    assert_eq!(changes(&mut s), [join4(G2)]);
    assert_eq!(s.counters().ignored, 1);
}

/// RFC 3376 §5 and RFC 3810 §6: all-hosts, all-nodes and scopes 0 and 1 are never tracked (the
/// interface holds all-hosts and all-nodes itself); nor are unicast addresses.
#[test]
fn reserved_groups_ignored() {
    let mut s = Snooper::default();
    s.handle_packet(&igmp(IgmpRepr::V2Report {
        group: Ipv4Addr::new(224, 0, 0, 1),
    }));
    s.handle_packet(&v3(&[(4, Ipv4Addr::new(10, 1, 1, 1), &[])]));
    s.handle_packet(&mld(MldRepr::Report {
        group: g6("ff02::1"),
    }));
    s.handle_packet(&mld_v2(&[
        (4, g6("ff01::5"), &[]),
        (4, g6("ff00::5"), &[]),
        (4, g6("fd00::1"), &[]),
    ]));
    assert_eq!(changes(&mut s), []);
    assert_eq!(s.counters().ignored, 6);
}

/// The solicited-node group of an address is tracked like any other (RFC 3810 §6 reports it):
/// the interface counts this use apart from its own.
#[test]
fn solicited_node_tracked() {
    let mut s = Snooper::default();
    let sn = g6("ff02::1:ff00:2");
    s.handle_packet(&mld_v2(&[(4, sn, &[])]));
    assert_eq!(changes(&mut s), [SnoopChange::Join(IpAddr::V6(sn))]);
}

/// RFC 2710 §3, RFC 3810 §8.3.2: MLDv1 report and done, behind the hop-by-hop header.
#[test]
fn mld_v1_report_and_done() {
    let mut s = Snooper::default();
    let g = g6("ff12::1234");
    assert!(s.handle_packet(&mld(MldRepr::Report { group: g })));
    assert!(s.handle_packet(&mld(MldRepr::Done { group: g })));
    assert_eq!(
        changes(&mut s),
        [
            SnoopChange::Join(IpAddr::V6(g)),
            SnoopChange::Leave(IpAddr::V6(g))
        ]
    );
    assert_eq!(s.counters().mld, 2);
}

/// RFC 3810 §5.2.12: MLDv2 records follow the same rules as IGMPv3's.
#[test]
fn mld_v2_records() {
    let mut s = Snooper::default();
    let (a, b) = (g6("ff12::1234"), g6("ff05::1:3"));
    s.handle_packet(&mld_v2(&[(4, a, &[]), (1, b, &[g6("fd00::9")])]));
    s.handle_packet(&mld_v2(&[(3, a, &[]), (6, b, &[g6("fd00::9")])]));
    assert_eq!(
        changes(&mut s),
        [
            SnoopChange::Join(IpAddr::V6(a)),
            SnoopChange::Join(IpAddr::V6(b)),
            SnoopChange::Leave(IpAddr::V6(a)),
            SnoopChange::Leave(IpAddr::V6(b)),
        ]
    );
}

/// Queries are read and ignored: the stack is no multicast router here.
#[test]
fn queries_ignored() {
    let mut s = Snooper::default();
    let q = IgmpRepr::Query {
        max_resp_code: 100,
        group: Ipv4Addr::UNSPECIFIED,
        v3: &[],
    };
    assert!(s.handle_packet(&igmp(q)));
    let q = MldRepr::Query {
        max_resp_code: 100,
        group: Ipv6Addr::UNSPECIFIED,
        v2: &[],
    };
    assert!(s.handle_packet(&mld(q)));
    assert_eq!(changes(&mut s), []);
    assert_eq!(s.counters().ignored, 2);
}

/// A wrong IGMP, ICMPv6 or IPv4 header checksum: counted, nothing learned.
#[test]
fn bad_checksums_learn_nothing() {
    let mut s = Snooper::default();
    let mut p = igmp(IgmpRepr::V2Report { group: G1 });
    let n = p.len();
    p[n - 1] ^= 1;
    assert!(s.handle_packet(&p));
    let mut p = igmp(IgmpRepr::V2Report { group: G1 });
    p[10] ^= 1;
    assert!(s.handle_packet(&p));
    let mut p = mld(MldRepr::Report {
        group: g6("ff12::1"),
    });
    let n = p.len();
    p[n - 1] ^= 1;
    assert!(s.handle_packet(&p));
    assert_eq!(changes(&mut s), []);
    assert_eq!(s.counters().malformed, 3);
}

/// Other packets are not IGMP or MLD: left alone, not counted.
#[test]
fn other_packets_left_alone() {
    let mut s = Snooper::default();
    let mut udp = igmp(IgmpRepr::V2Report { group: G1 });
    udp[9] = 17;
    Ipv4Packet::new_unchecked(&mut udp[..]).fill_checksum();
    assert!(!s.handle_packet(&udp));
    let mut echo = vec![128u8, 0, 0, 0, 0, 1, 0, 1];
    let c = checksum::icmpv6(g6("fe80::2"), g6("ff02::16"), &echo);
    echo[2..4].copy_from_slice(&c.to_be_bytes());
    assert!(!s.handle_packet(&ipv6_mld(g6("ff02::16"), echo)));
    assert!(!s.handle_packet(&[]));
    assert!(!s.handle_packet(&[0x45, 0, 0]));
    // A later fragment holds no IGMP header.
    let mut frag = igmp(IgmpRepr::V2Report { group: G1 });
    frag[7] = 1;
    Ipv4Packet::new_unchecked(&mut frag[..]).fill_checksum();
    assert!(!s.handle_packet(&frag));
    assert_eq!(s.counters(), SnoopCounters::default());
}

/// At most `max_groups` groups: a further join is refused and counted; a leave makes room.
#[test]
fn table_bound() {
    let mut s = Snooper::new(1);
    s.handle_packet(&v3(&[(4, G1, &[]), (4, G2, &[])]));
    assert_eq!(changes(&mut s), [join4(G1)]);
    assert_eq!(s.counters().table_full, 1);
    s.handle_packet(&v3(&[(3, G1, &[]), (4, G2, &[])]));
    assert_eq!(changes(&mut s), [leave4(G1), join4(G2)]);
}

/// A source list past [`MAX_SOURCES`] saturates: blocking what was held does not end the
/// membership; an INCLUDE of no source does.
#[test]
fn source_bound() {
    let mut s = Snooper::default();
    let many: Vec<Ipv4Addr> = (0..=MAX_SOURCES as u32)
        .map(|i| Ipv4Addr::from(0x0a01_0000 + i))
        .collect();
    s.handle_packet(&v3(&[(5, G1, &many)]));
    s.handle_packet(&v3(&[(6, G1, &many)]));
    assert_eq!(changes(&mut s), [join4(G1)]);
    s.handle_packet(&v3(&[(3, G1, &[])]));
    assert_eq!(changes(&mut s), [leave4(G1)]);
}

/// The stack's interface went away: every group is left.
#[test]
fn forget_all_leaves_everything() {
    let mut s = Snooper::default();
    s.handle_packet(&v3(&[(4, G1, &[]), (4, G2, &[])]));
    changes(&mut s);
    s.forget_all();
    assert_eq!(changes(&mut s), [leave4(G1), leave4(G2)]);
    assert_eq!(s.groups().count(), 0);
}

proptest! {
    /// No bytes panic the snooper, bare or behind an IGMP or MLD header.
    #[test]
    fn never_panics(data in proptest::collection::vec(any::<u8>(), 0..300), t in 0usize..5) {
        let mut s = Snooper::new(4);
        s.handle_packet(&data);
        let mut ig = data.clone();
        if ig.len() >= 8 {
            ig[0] = [0x11, 0x12, 0x16, 0x17, 0x22][t];
            IgmpPacket::new_unchecked(&mut ig[..]).fill_checksum();
        }
        s.handle_packet(&ipv4_igmp(Ipv4Addr::new(224, 0, 0, 22), &ig));
        let mut m = data.clone();
        if m.len() >= 8 {
            m[0] = [130, 131, 132, 143, 143][t];
        }
        s.handle_packet(&ipv6_mld(g6("ff02::16"), m));
        while s.poll_change().is_some() {}
        prop_assert!(s.groups().count() <= 4);
    }
}
