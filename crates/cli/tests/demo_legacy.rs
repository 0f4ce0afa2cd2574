//! `ipoib demo --ipv6-profile legacy`: every interface runs the IPv6 profile of
//! draft-kashyap-ipoib-ipv6-01 (`InterfaceConfig::legacy_ipv6`). The run succeeds with every
//! IPv6 pair answered; the report names the legacy groups (FF1y:3333::, §4.1) by their IPv6 group
//! and the GID each Neighbor Advertisement's legacy option gives (§5.1, §7); and the capture holds
//! IPv6 over UD as bare datagrams (no 4-byte IPoIB header: the payload's first nibble is 6) that
//! always carry a GRH (LRH LNH = 3), and no IPv6 behind an IPoIB header.

mod common;

use common::{ipoib_output, text};
use ipoib_wire::pcap::CaptureReader;

/// The IPoIB Q_Key of the demo's broadcast group (its DETH tells IPoIB datagrams from MADs).
const IPOIB_QKEY: u32 = 0x0b1b;
/// BTH opcode of a UD SEND Only (IBA 1 §9.2: 0x64).
const UD_SEND_ONLY: u8 = 0x64;

/// An IPoIB UD datagram of the capture: whether it has a GRH (LRH LNH = 3, IBA 1 §7.7.1) and its
/// payload after the DETH.
fn ipoib_ud(pkt: &[u8]) -> Option<(bool, &[u8])> {
    let lnh = pkt.first().map(|_| pkt[1] & 0x3)?;
    let bth = match lnh {
        2 => 8,
        3 => 8 + 40,
        _ => return None,
    };
    if *pkt.get(bth)? != UD_SEND_ONLY {
        return None;
    }
    let deth = pkt.get(bth + 12..bth + 20)?;
    let qkey = u32::from_be_bytes([deth[0], deth[1], deth[2], deth[3]]);
    (qkey == IPOIB_QKEY).then(|| (lnh == 3, &pkt[bth + 20..]))
}

#[test]
fn legacy_profile_pings_over_bare_ipv6_with_a_grh() {
    let dir = tempfile::tempdir().unwrap();
    let o = ipoib_output(
        dir.path(),
        &["demo", "--ipv6-profile", "legacy", "--pcap", "legacy.pcap"],
    );
    let out = text(&o.stdout);
    assert!(o.status.success(), "{out}\n{}", text(&o.stderr));
    for want in [
        "Carrier on 4/4 hosts",
        "IPv4 ping, all 12 pairs: 12 answered",
        "IPv6 ping, all 12 pairs: 12 answered",
        // The GID of the legacy link-layer option: the local prefix and the GUID (§7).
        "h0    fe80::200:0:10:3  0x000048   fe80::10:3  neighbor advert",
        // The legacy all-nodes and solicited-node groups, created by the hosts' joins.
        "ff12:3333::1               ff02::1         ",
        "ff12:3333::1:ff10:3        ff02::1:ff10:3  ",
        "Result: OK",
    ] {
        assert!(out.contains(want), "missing {want:?} in\n{out}");
    }
    let file = std::fs::File::open(dir.path().join("legacy.pcap")).unwrap();
    let pkts = CaptureReader::read_all(file).expect("the capture reads");
    let (mut bare, mut bare_without_grh, mut framed_v6) = (0, 0, 0);
    for p in &pkts {
        let Some((grh, payload)) = ipoib_ud(&p.data) else {
            continue;
        };
        if payload.first().is_some_and(|b| b >> 4 == 6) {
            bare += 1;
            bare_without_grh += usize::from(!grh);
        } else if payload.get(0..2) == Some(&[0x86, 0xdd]) {
            framed_v6 += 1;
        }
    }
    // 12 pairs of echo request and reply, their ND, DAD and MLD: well over 48.
    assert!(bare >= 48, "{bare} bare IPv6 datagrams");
    assert_eq!(bare_without_grh, 0, "bare IPv6 datagrams without a GRH");
    assert_eq!(framed_v6, 0, "IPv6 behind a 4-byte IPoIB header");

    // `ipoib decode` names the bare datagrams as the legacy profile's, not an unknown type (the
    // first two bytes of an IPv6 header read as an encapsulation type 0x6000).
    let o = ipoib_output(dir.path(), &["decode", "legacy.pcap"]);
    let dec = text(&o.stdout);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let legacy: Vec<&str> = dec
        .lines()
        .filter(|l| l.contains(" IPoIB (draft-kashyap-ipoib-ipv6-01, no IPoIB header) IPv6 "))
        .collect();
    assert_eq!(legacy.len(), bare, "every bare datagram decoded as one");
    assert!(legacy
        .iter()
        .any(|l| l
            .ends_with("IPv6 fe80::200:0:10:3 > fe80::200:0:10:1 ICMPv6 echo request id 3 seq 1")));
    assert!(
        !dec.contains("ethertype 0x6"),
        "a bare datagram shown as a type"
    );

    // Their ND options are the legacy profile's (§5.1: LID, flags, QPN, Q_Key, GUID), read as
    // such in the summary and the fields, not as RFC 4391's 20-byte address (which put the
    // Q_Key and GUID into a GID). Fails on the old code, which read every ND option as RFC 4391's.
    assert!(
        dec.contains(
            "ICMPv6 neighbor advertisement fe80::200:0:10:3 is-at lid 0x0003 flags 0x00 \
             qpn 0x000048 qkey 0x00000b1b guid 0x0000000000100003"
        ),
        "h1's advertisement with its legacy option"
    );
    assert!(dec.contains(" from lid 0x0001 flags 0x00 qpn 0x000048 qkey 0x00000b1b guid "));
    let fields =
        "            lid: 0x0003\n            flags: 0x00\n            uc: false\n            \
                  rc: false\n            re: false\n            r6: false\n            \
                  qpn_demux: false\n            qpn: 0x000048\n            \
                  qkey: 0x00000b1b\n            guid: 0x0000000000100003\n";
    assert!(dec.contains(fields), "the legacy option's fields");
    // Every NS and NA but DAD's (from ::, with no option, RFC 4861 §7.2.2).
    let nd = |l: &&&str| l.contains(" neighbor ") && !l.contains(" IPv6 :: > ");
    let nds = legacy.iter().filter(nd).count();
    let read = legacy
        .iter()
        .filter(nd)
        .filter(|l| l.contains(" lid 0x"))
        .count();
    assert!(
        nds > 0 && read == nds,
        "{read} of {nds} ND messages with a legacy option"
    );
    assert!(!dec.contains("link_addr"), "an option read as RFC 4391's");
}
