//! `ipoib decode` run as a program: captures built with the wire crate, decoded as text and as JSON
//! lines, with malformed packets, bad CRCs, hex on standard input and unreadable inputs.

use ipoib_wire::cm::{attr as cm_attr, CmMessage, MGMT_CLASS_CM};
use ipoib_wire::ib::{BthRepr, DethRepr, LrhRepr, Opcode};
use ipoib_wire::ipoib::{
    broadcast_mgid, ArpOperation, ArpRepr, EtherType, HwAddr, HwAddrFlags, IpoibFrame,
    IpoibPayload, Scope,
};
use ipoib_wire::mad::{MadHeaderRepr, MadStatus, Method, MgmtClass, MAD_HEADER_LEN, MAD_LEN};
use ipoib_wire::packet::PacketRepr;
use ipoib_wire::pcap::{LinkType, PcapWriter};
use ipoib_wire::private_data::{IpCmReqRepr, IpPair, IpoibCmPrivateDataRepr};
use ipoib_wire::sa::{
    mcr_mask, service_name, sr_mask, JoinState, McMemberRecordRepr, Mtu, SaAttribute, SaMadRepr,
    ServiceRecordRepr,
};
use ipoib_wire::PKey;
use ipoib_wire::{crc, Gid, QKey};
use serde_json::Value as Json;
use std::collections::BTreeSet;
use std::io::Write;
use std::net::Ipv4Addr;
use std::path::Path;
use std::process::{Command, Output, Stdio};

const PKEY: u16 = 0xffff;
const A_LID: u16 = 0x0002;
const B_LID: u16 = 0x0003;
const A_GUID: u64 = 0x0002_c903_0000_0001;
const A_QPN: u32 = 0x48;
const IPOIB_CM_SID: u64 = 0x1000_0000_0000_0049;
const A11_SID: u64 = 0x0000_0000_0106_1389; // TCP port 5001

fn lrh(dlid: u16, slid: u16) -> LrhRepr {
    LrhRepr::local(0, 0, dlid, slid)
}

fn ud(dlid: u16, slid: u16, dest_qp: u32, qkey: u32, src_qp: u32, payload: &[u8]) -> Vec<u8> {
    let p = PacketRepr::ud_send_only(
        lrh(dlid, slid),
        None,
        BthRepr::new(Opcode::UD_SEND_ONLY, PKey(PKEY), dest_qp, 7),
        DethRepr {
            qkey: QKey(qkey),
            src_qp,
        },
        payload,
    );
    let mut b = vec![0u8; p.buffer_len()];
    p.emit(&mut b).unwrap();
    b
}

fn a_gid() -> Gid {
    Gid::new(Gid::DEFAULT_SUBNET_PREFIX, A_GUID)
}

/// 1: an IPoIB ARP request from A (broadcast, QP 0xFFFFFF, Q_Key 0x0B1B).
fn arp_request() -> Vec<u8> {
    let arp = ArpRepr {
        operation: ArpOperation::Request,
        sender_hw: HwAddr::new(HwAddrFlags::RC, A_QPN, a_gid()),
        sender_ip: Ipv4Addr::new(10, 0, 0, 1),
        target_hw: HwAddr::new(HwAddrFlags::NONE, 0, Gid::ZERO),
        target_ip: Ipv4Addr::new(10, 0, 0, 2),
    };
    let f = IpoibFrame::new(IpoibPayload::Arp(arp), EtherType::Arp);
    let mut b = vec![0u8; f.buffer_len()];
    f.emit(&mut b).unwrap();
    ud(0xc000, A_LID, 0x00ff_ffff, 0x0b1b, A_QPN, &b)
}

/// 2: SubnAdmSet(MCMemberRecord) joining the IPv4 broadcast group.
fn sa_join() -> Vec<u8> {
    let rec = McMemberRecordRepr {
        mgid: broadcast_mgid(PKey(PKEY), Scope::LinkLocal),
        port_gid: a_gid(),
        qkey: QKey(0x0b1b),
        mtu: Mtu::Mtu2048,
        pkey: PKey(PKEY),
        join_state: JoinState(1),
        ..McMemberRecordRepr::default()
    };
    let mad = SaMadRepr::mcmember_join(0x1234, rec, mcr_mask::JOIN);
    ud(0x0001, A_LID, 1, QKey::GSI.0, 1, &mad.to_bytes())
}

/// A CM MAD carrying `m`.
fn cm_mad(m: &CmMessage) -> Vec<u8> {
    let mut mad = [0u8; MAD_LEN];
    MadHeaderRepr {
        base_version: 1,
        mgmt_class: MgmtClass::from(MGMT_CLASS_CM),
        class_version: 2,
        method: Method::Send,
        status: MadStatus::SUCCESS,
        class_specific: 0,
        transaction_id: 0x77,
        attribute_id: m.attribute_id(),
        attribute_modifier: 0,
    }
    .emit(&mut mad);
    m.emit(&mut mad[MAD_HEADER_LEN..]).unwrap();
    ud(B_LID, A_LID, 1, QKey::GSI.0, 1, &mad)
}

/// A REQ for `service_id` with `private_data` (the rest zero).
fn req(comm_id: u32, service_id: u64, private_data: &[u8]) -> Vec<u8> {
    let CmMessage::Req(mut r) = CmMessage::parse(cm_attr::REQ, &[0u8; 232]).unwrap() else {
        unreachable!()
    };
    r.local_comm_id = comm_id;
    r.service_id = service_id;
    r.local_ca_guid = ipoib_wire::Guid(A_GUID);
    r.local_qpn = 0x99;
    r.partition_key = PKey(PKEY);
    r.private_data[..private_data.len()].copy_from_slice(private_data);
    cm_mad(&CmMessage::Req(r))
}

/// 3: an IPoIB-CM REQ (RFC 4755) from A's UD QPN 0x48 to the interface with UD QPN 0x49.
fn ipoib_cm_req() -> Vec<u8> {
    let mut pd = [0u8; 8];
    IpoibCmPrivateDataRepr::linux(A_QPN).emit(&mut pd).unwrap();
    req(0x1111, IPOIB_CM_SID, &pd)
}

/// 5: an Annex A11 REQ to TCP port 5001 from 10.0.0.1:40000 to 10.0.0.2.
fn a11_req() -> Vec<u8> {
    let h = IpCmReqRepr {
        major_version: 0,
        minor_version: 0,
        source_port: 40000,
        addrs: IpPair::V4 {
            src: Ipv4Addr::new(10, 0, 0, 1),
            dst: Ipv4Addr::new(10, 0, 0, 2),
        },
        consumer_private_data: &[],
    };
    let mut pd = [0u8; 36];
    h.emit(&mut pd).unwrap();
    req(0x2222, A11_SID, &pd)
}

/// 4: a packet whose LRH PktLen does not match its length (one word cut off).
fn truncated() -> Vec<u8> {
    let mut p = arp_request();
    p.truncate(p.len() - 4);
    p
}

/// 6: the ARP request with its ICRC corrupted and the VCRC recomputed over the bad ICRC.
fn bad_icrc() -> Vec<u8> {
    let mut p = arp_request();
    let n = p.len();
    p[n - 6] ^= 0xff;
    let v = crc::vcrc(&p[..n - 2]);
    p[n - 2..].copy_from_slice(&v.to_le_bytes());
    p
}

/// An Ethernet ARP request (hardware type 1) sent over IPoIB: the IB packet is fine, its ARP is not
/// (draft-ietf-ipoib-ip-over-infiniband-06 §9.2 wants hardware type 32).
fn ethernet_arp() -> Vec<u8> {
    let mut b = vec![0x08, 0x06, 0, 0, 0x00, 0x01, 0x08, 0x00, 6, 4, 0x00, 0x01];
    b.extend_from_slice(&[0u8; 48]); // as long as an IPoIB ARP, to get past the length check
    ud(0xc000, A_LID, 0x00ff_ffff, 0x0b1b, A_QPN, &b)
}

fn packets() -> Vec<Vec<u8>> {
    vec![
        arp_request(),
        sa_join(),
        ipoib_cm_req(),
        truncated(),
        a11_req(),
        bad_icrc(),
    ]
}

fn write_pcap(path: &Path, link: LinkType, packets: &[Vec<u8>]) {
    let mut w = PcapWriter::new(Vec::new(), link).unwrap();
    for (i, p) in packets.iter().enumerate() {
        w.write_packet(1_700_000_000_000_000_000 + i as u64 * 1000, p)
            .unwrap();
    }
    std::fs::write(path, w.into_inner().unwrap()).unwrap();
}

fn ipoib(args: &[&str], stdin: Option<&str>) -> Output {
    let mut c = Command::new(env!("CARGO_BIN_EXE_ipoib"));
    c.args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = c.spawn().unwrap();
    let mut input = child.stdin.take().unwrap();
    input.write_all(stdin.unwrap_or("").as_bytes()).unwrap();
    drop(input);
    child.wait_with_output().unwrap()
}

fn text(b: &[u8]) -> String {
    String::from_utf8(b.to_vec()).unwrap()
}

fn capture(link: LinkType) -> (tempfile::TempDir, String) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("capture.pcap");
    write_pcap(&path, link, &packets());
    let p = path.to_str().unwrap().to_string();
    (dir, p)
}

/// Checks that no object in the JSON text `s` has the same key twice (serde_json would silently
/// keep the last one). A small scanner: strings are read with their escapes, and a string is a key
/// when it comes first in an object or right after a comma in one.
fn assert_unique_keys(s: &str) {
    // (is_object, keys seen, next string is a key)
    let mut stack: Vec<(bool, BTreeSet<String>, bool)> = Vec::new();
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        match c {
            '{' => stack.push((true, BTreeSet::new(), true)),
            '[' => stack.push((false, BTreeSet::new(), false)),
            '}' | ']' => {
                stack.pop().expect("balanced");
            }
            ',' => {
                if let Some((true, _, expect_key)) = stack.last_mut() {
                    *expect_key = true;
                }
            }
            '"' => {
                let mut k = String::new();
                loop {
                    match chars.next().expect("closed string") {
                        '"' => break,
                        '\\' => {
                            k.push('\\');
                            k.push(chars.next().expect("escape"));
                        }
                        c => k.push(c),
                    }
                }
                if let Some((true, keys, expect_key)) = stack.last_mut() {
                    if *expect_key {
                        assert!(keys.insert(k.clone()), "duplicate key {k:?} in {s}");
                        *expect_key = false;
                    }
                }
            }
            _ => {}
        }
    }
    assert!(stack.is_empty(), "unbalanced JSON: {s}");
}

/// The JSON lines of `out`, each checked to be one valid object with unique keys.
fn json_lines(out: &[u8]) -> Vec<Json> {
    text(out)
        .lines()
        .map(|l| {
            assert_unique_keys(l);
            let v: Json = serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}"));
            assert!(v.is_object(), "{l}");
            v
        })
        .collect()
}

/// The value at a dotted path (`"lrh.dlid"`).
fn at<'a>(v: &'a Json, path: &str) -> &'a Json {
    path.split('.').fold(v, |v, k| &v[k])
}

#[test]
fn scanner_finds_duplicate_keys() {
    assert_unique_keys(r#"{"a":{"a":1,"b":"a"},"b":[{"a":1},{"a":2}],"c":"\"a\""}"#);
    let dup = std::panic::catch_unwind(|| assert_unique_keys(r#"{"a":1,"x":{"b":"c"},"a":2}"#));
    assert!(dup.is_err());
}

// Text mode: a heading per packet, every layer as a group, both CRC verdicts, the malformed packet
// with its reason and the packets after it decoded; exit status 1 (main.rs: some packet malformed).
#[test]
fn text_shows_layers_and_crc_verdicts() {
    let (_dir, path) = capture(LinkType::Erf);
    let o = ipoib(&["decode", &path], None);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o.stderr));
    assert!(text(&o.stderr).contains("1 malformed packet"));
    let out = text(&o.stdout);
    let blocks: Vec<&str> = out.split("\n\n").filter(|b| !b.trim().is_empty()).collect();
    assert_eq!(blocks.len(), 6, "{out}");
    for (i, b) in blocks.iter().enumerate() {
        assert!(
            b.starts_with(&format!(
                "Packet {} at 1700000000.{:09} s: ",
                i + 1,
                i * 1000
            )),
            "{b}"
        );
    }
    let has = |b: &str, lines: &[&str]| {
        for l in lines {
            assert!(b.lines().any(|x| x.trim() == *l), "no line {l:?} in\n{b}");
        }
    };
    has(
        blocks[0],
        &[
            "lrh",
            "bth",
            "deth",
            "ipoib",
            "arp",
            "src_hw",
            "dlid: 0xc000",
            "icrc_ok: true",
            "vcrc_ok: true",
        ],
    );
    assert!(blocks[0]
        .lines()
        .next()
        .unwrap()
        .contains("ARP request who-has 10.0.0.2 tell 10.0.0.1"));
    has(
        blocks[1],
        &[
            "mad",
            "rmpp",
            "sa",
            "mc_member_record",
            "mgid: ff12:401b:ffff::ffff:ffff",
        ],
    );
    has(
        blocks[2],
        &[
            "cm",
            "primary_path",
            "service",
            "kind: ipoib_cm",
            "ipoib_cm",
            "ud_qpn: 0x000048",
        ],
    );
    has(blocks[3], &["lrh"]);
    assert!(blocks[3]
        .lines()
        .next()
        .unwrap()
        .contains("malformed: truncated packet"));
    assert!(blocks[3].contains("error: truncated packet: LRH PktLen 23 means 94 bytes"));
    assert!(!blocks[3].contains("bth"));
    has(
        blocks[4],
        &[
            "service",
            "kind: ip_cm",
            "ip_cm",
            "sip: 10.0.0.1",
            "dip: 10.0.0.2",
        ],
    );
    has(blocks[5], &["icrc_ok: false", "vcrc_ok: true"]);
    // Long byte strings (the 92 bytes of REQ private data) are cut into rows of 32 bytes.
    has(
        blocks[2],
        &[
            "private_data: 92 bytes",
            "000000480000fff4000000000000000000000000000000000000000000000000",
        ],
    );
    for l in out.lines().skip(1).filter(|l| !l.starts_with("Packet ")) {
        assert!(l.len() <= 100, "line too long for a person: {l}");
    }
    assert!(blocks[5].lines().next().unwrap().ends_with("[bad CRC]"));
    assert!(!blocks[5].contains("error"));
}

// JSON mode: exactly one object per packet, unique keys, numbers as numbers, identifiers as hex
// strings, named code points with a `_name` sibling.
#[test]
fn json_one_object_per_packet() {
    let (_dir, path) = capture(LinkType::Erf);
    let o = ipoib(&["decode", "--json", &path], None);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o.stderr));
    let v = json_lines(&o.stdout);
    assert_eq!(v.len(), 6);
    for (i, p) in v.iter().enumerate() {
        assert_eq!(p["packet"], i as u64 + 1);
        assert_eq!(p["ts_ns"], 1_700_000_000_000_000_000u64 + i as u64 * 1000);
        assert!(p["summary"].is_string());
        if i != 3 {
            assert!(
                p["icrc_ok"].is_boolean() && p["vcrc_ok"].is_boolean(),
                "{p}"
            );
            assert!(p.get("error").is_none(), "{p}");
        }
    }
    // 1: IPoIB ARP on UD (draft-ietf-ipoib-ip-over-infiniband-06 §9.2: hardware type 32).
    let p = &v[0];
    assert_eq!(p["len"], 94);
    assert_eq!(at(p, "lrh.dlid"), "0xc000");
    assert_eq!(at(p, "lrh.slid"), "0x0002");
    assert_eq!(at(p, "lrh.lnh"), 2);
    assert_eq!(at(p, "bth.opcode"), 0x64);
    assert_eq!(at(p, "bth.opcode_name"), "UD Send Only");
    assert_eq!(at(p, "bth.destqp"), "0xffffff");
    assert_eq!(at(p, "deth.q_key"), "0x00000b1b");
    assert_eq!(at(p, "deth.srcqp"), "0x000048");
    assert_eq!(at(p, "ipoib.type"), 0x0806);
    assert_eq!(at(p, "arp.hw_type"), 32);
    assert_eq!(at(p, "arp.hw_size"), 20);
    assert_eq!(at(p, "arp.opcode_name"), "request");
    assert_eq!(at(p, "arp.src_hw.qpn"), "0x000048");
    assert_eq!(at(p, "arp.src_hw.rc"), true);
    assert_eq!(at(p, "arp.src_hw.gid"), "fe80::2:c903:0:1");
    assert_eq!(at(p, "arp.src_proto_ipv4"), "10.0.0.1");
    assert_eq!(at(p, "arp.dst_proto_ipv4"), "10.0.0.2");
    assert_eq!(p["icrc_ok"], true);
    assert_eq!(p["vcrc_ok"], true);
    // 2: SubnAdmSet(MCMemberRecord) to QP1 with the GSI Q_Key.
    let p = &v[1];
    assert_eq!(at(p, "bth.destqp"), "0x000001");
    assert_eq!(at(p, "deth.q_key"), "0x80010000");
    assert_eq!(at(p, "mad.mgmt_class"), 3);
    assert_eq!(at(p, "mad.method_name"), "Set");
    assert_eq!(at(p, "mad.attribute_id"), 0x38);
    assert_eq!(at(p, "mad.transaction_id"), "0x0000000000001234");
    assert_eq!(at(p, "mc_member_record.mgid"), "ff12:401b:ffff::ffff:ffff");
    assert_eq!(at(p, "mc_member_record.port_gid"), "fe80::2:c903:0:1");
    assert_eq!(at(p, "mc_member_record.q_key"), "0x00000b1b");
    assert_eq!(at(p, "mc_member_record.mtu_name"), "2048");
    assert_eq!(p["icrc_ok"], true);
    // 3: CM REQ for IPoIB-CM (RFC 4755 §3.5 service ID, §6 private data).
    let p = &v[2];
    assert_eq!(at(p, "mad.mgmt_class"), 7);
    assert_eq!(at(p, "cm.message_type_name"), "REQ");
    assert_eq!(at(p, "cm.local_comm_id"), "0x00001111");
    assert_eq!(at(p, "cm.service_id"), "0x1000000000000049");
    assert_eq!(at(p, "service.kind"), "ipoib_cm");
    assert_eq!(at(p, "service.qpn"), "0x000049");
    assert_eq!(at(p, "ipoib_cm.ud_qpn"), "0x000048");
    assert_eq!(at(p, "ipoib_cm.receive_mtu"), 65524);
    // 4: malformed, with its own error and nothing past the LRH.
    let p = &v[3];
    assert_eq!(at(p, "lrh.pktlen"), 23);
    assert!(
        p["error"]
            .as_str()
            .unwrap()
            .contains("LRH PktLen 23 means 94 bytes"),
        "{p}"
    );
    assert!(p.get("bth").is_none() && p.get("icrc_ok").is_none());
    // 5: CM REQ for the Annex A11 IP CM service (CA11-6 service ID, Table 1 private data).
    let p = &v[4];
    assert_eq!(at(p, "cm.service_id"), "0x0000000001061389");
    assert_eq!(at(p, "service.kind"), "ip_cm");
    assert_eq!(at(p, "service.protocol"), 6);
    assert_eq!(at(p, "service.dport"), 5001);
    assert_eq!(at(p, "ip_cm.majv"), 0);
    assert_eq!(at(p, "ip_cm.ipv"), 4);
    assert_eq!(at(p, "ip_cm.sport"), 40000);
    assert_eq!(at(p, "ip_cm.sip"), "10.0.0.1");
    assert_eq!(at(p, "ip_cm.dip"), "10.0.0.2");
    // 6: a corrupted ICRC is a verdict, not an error.
    let p = &v[5];
    assert_eq!(p["icrc_ok"], false);
    assert_eq!(p["vcrc_ok"], true);
    assert_eq!(at(p, "arp.hw_type"), 32);
}

// Link type 247 (bare IB packets) decodes to the same JSON as ERF records (link type 197).
#[test]
fn link_type_247_decodes_like_erf() {
    let (_d1, erf) = capture(LinkType::Erf);
    let (_d2, ib) = capture(LinkType::Infiniband);
    let a = ipoib(&["decode", "--json", &erf], None);
    let b = ipoib(&["decode", "--json", &ib], None);
    assert_eq!(b.status.code(), Some(1));
    assert_eq!(text(&a.stdout), text(&b.stdout));
    assert_eq!(json_lines(&b.stdout).len(), 6);
}

/// The ARP request with its VCRC corrupted.
fn bad_vcrc() -> Vec<u8> {
    let mut p = arp_request();
    let n = p.len();
    p[n - 1] ^= 0x01;
    p
}

/// Standard error's last line: the summary.
fn summary(o: &Output) -> String {
    let e = text(&o.stderr);
    e.lines().last().unwrap_or("").to_string()
}

// An IPoIB payload that does not parse is not a malformed IB packet: exit status 0 when every
// packet decoded with good CRCs, the payload's error inside its group (`arp.error`), never as the
// top-level `error`, and the summary line alone on standard error.
#[test]
fn clean_capture_exits_zero() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("ok.pcap");
    write_pcap(
        &path,
        LinkType::Erf,
        &[arp_request(), sa_join(), ethernet_arp()],
    );
    let o = ipoib(&["decode", "--json", path.to_str().unwrap()], None);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    assert_eq!(
        text(&o.stderr),
        "ipoib decode: 3 packets (197 ERF: 3): 0 malformed packets, 0 bad ICRC, 0 bad VCRC\n"
    );
    let v = json_lines(&o.stdout);
    assert_eq!(v.len(), 3);
    for p in &v {
        assert!(p.get("error").is_none(), "{p}");
    }
    assert_eq!(at(&v[2], "ipoib.type"), 0x0806);
    assert_eq!(at(&v[2], "arp.error"), "unsupported");
    assert_eq!(v[2]["icrc_ok"], true);
}

// A bad CRC is a verdict, not a malformed packet: each packet is still decoded in full, and the run
// ends with the totals on standard error and exit status 1 (main.rs).
#[test]
fn bad_crcs_exit_one_with_totals() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("crc.pcap");
    write_pcap(
        &path,
        LinkType::Infiniband,
        &[arp_request(), bad_icrc(), bad_vcrc(), sa_join(), bad_icrc()],
    );
    for json in [true, false] {
        let mut args = vec!["decode", path.to_str().unwrap()];
        if json {
            args.insert(1, "--json");
        }
        let o = ipoib(&args, None);
        assert_eq!(o.status.code(), Some(1), "{}", text(&o.stderr));
        assert_eq!(
            text(&o.stderr),
            "ipoib decode: 5 packets (247 INFINIBAND: 5): 0 malformed packets, 2 bad ICRC, \
             1 bad VCRC\n"
        );
        if json {
            let v = json_lines(&o.stdout);
            let verdicts: Vec<_> = v.iter().map(|p| (&p["icrc_ok"], &p["vcrc_ok"])).collect();
            let (t, f) = (&Json::Bool(true), &Json::Bool(false));
            assert_eq!(verdicts, [(t, t), (f, t), (t, f), (t, t), (f, t)]);
            assert_eq!(at(&v[2], "arp.hw_type"), 32);
        }
    }
    // One malformed packet, and the malformed one with a good VCRC counts once.
    let (_d, path) = capture(LinkType::Erf);
    let o = ipoib(&["decode", &path], None);
    assert_eq!(o.status.code(), Some(1));
    assert_eq!(
        summary(&o),
        "ipoib decode: 6 packets (197 ERF: 6): 1 malformed packet, 1 bad ICRC, 0 bad VCRC"
    );
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

// IBA 1 §15.2.5.14: a SubnAdmSet(ServiceRecord) is shown under `service_record`, its name up to
// the NUL, the lease in seconds.
#[test]
fn service_record_by_name() {
    let rec = ServiceRecordRepr {
        service_id: 0x1000_0000_0000_0042,
        service_gid: a_gid(),
        service_p_key: 0xffff,
        service_lease: 3600,
        service_name: service_name("printer"),
        ..ServiceRecordRepr::default()
    };
    let mask = sr_mask::SERVICE_ID | sr_mask::SERVICE_GID | sr_mask::SERVICE_NAME;
    let mad = SaMadRepr::request(Method::Set, 7, mask, SaAttribute::ServiceRecord(rec));
    let pkt = ud(0x0001, A_LID, 1, QKey::GSI.0, 1, &mad.to_bytes());
    let o = ipoib(&["decode", "--json", "-"], Some(&hex(&pkt)));
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    let v = json_lines(&o.stdout);
    assert_eq!(at(&v[0], "mad.attribute_id"), 0x31);
    assert_eq!(at(&v[0], "service_record.service_name"), "printer");
    assert_eq!(at(&v[0], "service_record.service_id"), "0x1000000000000042");
    assert_eq!(at(&v[0], "service_record.service_gid"), "fe80::2:c903:0:1");
    assert_eq!(at(&v[0], "service_record.service_lease"), 3600);
}

// `-`: one packet per line of hex; `#` comments, blank lines, spaces, colons and dashes ignored.
#[test]
fn hex_lines_on_stdin() {
    let arp = arp_request();
    let sa = sa_join();
    let spaced: Vec<String> = sa.iter().map(|x| format!("{x:02x}")).collect();
    let input = format!(
        "# two packets from a test\n\n{}  # the ARP request\n   \n{}\n# done\n",
        hex(&arp)
            .as_bytes()
            .chunks(8)
            .map(|c| std::str::from_utf8(c).unwrap())
            .collect::<Vec<_>>()
            .join(":"),
        spaced.join(" "),
    );
    let o = ipoib(&["decode", "--json", "-"], Some(&input));
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    let v = json_lines(&o.stdout);
    assert_eq!(v.len(), 2);
    assert_eq!(v[0]["packet"], 1);
    assert!(v[0].get("ts_ns").is_none());
    assert_eq!(at(&v[0], "arp.hw_type"), 32);
    assert_eq!(
        at(&v[1], "mc_member_record.mgid"),
        "ff12:401b:ffff::ffff:ffff"
    );

    let o = ipoib(&["decode", "-"], Some(&input));
    assert_eq!(o.status.code(), Some(0));
    assert!(text(&o.stdout).starts_with("Packet 1: "));

    // A line that is not hex is that packet's error; the next line is still decoded.
    let input = format!("{}\nzz00\n{}\n", hex(&arp), hex(&sa));
    let o = ipoib(&["decode", "--json", "-"], Some(&input));
    assert_eq!(o.status.code(), Some(1));
    let v = json_lines(&o.stdout);
    assert_eq!(v.len(), 3);
    assert!(
        v[1]["error"]
            .as_str()
            .unwrap()
            .starts_with("line 2: not hex"),
        "{}",
        v[1]
    );
    assert_eq!(at(&v[2], "mad.attribute_id"), 0x38);
}

#[test]
fn unreadable_inputs_exit_two() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("missing.pcap");
    let o = ipoib(&["decode", missing.to_str().unwrap()], None);
    assert_eq!(o.status.code(), Some(2));
    let e = text(&o.stderr);
    assert!(
        e.contains("missing.pcap") && e.contains("No such file"),
        "{e}"
    );
    assert!(o.stdout.is_empty());

    let not_pcap = dir.path().join("notes.txt");
    std::fs::write(&not_pcap, "these are notes, not a capture file\n").unwrap();
    let o = ipoib(&["decode", "--json", not_pcap.to_str().unwrap()], None);
    assert_eq!(o.status.code(), Some(2));
    let e = text(&o.stderr);
    assert!(
        e.contains("notes.txt: not a capture this tool reads"),
        "{e}"
    );
    assert!(o.stdout.is_empty());

    // A capture cut in the middle of a record: the whole packets are printed, then the error.
    let (_d, path) = capture(LinkType::Erf);
    let mut data = std::fs::read(&path).unwrap();
    data.truncate(data.len() - 10);
    let cut = dir.path().join("cut.pcap");
    std::fs::write(&cut, data).unwrap();
    let o = ipoib(&["decode", "--json", cut.to_str().unwrap()], None);
    assert_eq!(o.status.code(), Some(2));
    assert_eq!(json_lines(&o.stdout).len(), 5);
    assert!(
        text(&o.stderr).contains("cut.pcap: stopped"),
        "{}",
        text(&o.stderr)
    );
    // The packets read before the input stopped are counted.
    assert_eq!(
        summary(&o),
        "ipoib decode: 5 packets (197 ERF: 5): 1 malformed packet, 0 bad ICRC, 0 bad VCRC"
    );
}

/// An empty input is refused alike from a file and from standard input (exit status 2, said so):
/// standard input used to pass as hex lines, none of them, and exit 0 with "0 packets".
#[test]
fn empty_inputs_exit_two_alike() {
    for json in [false, true] {
        let args: &[&str] = if json {
            &["decode", "--json", "-"]
        } else {
            &["decode", "-"]
        };
        let o = ipoib(args, Some(""));
        assert_eq!(o.status.code(), Some(2), "{args:?}");
        let e = text(&o.stderr);
        assert!(e.contains("standard input: empty: no capture"), "{e}");
        assert!(o.stdout.is_empty());
    }
    let dir = tempfile::tempdir().unwrap();
    let empty = dir.path().join("empty.pcap");
    std::fs::write(&empty, b"").unwrap();
    let o = ipoib(&["decode", empty.to_str().unwrap()], None);
    assert_eq!(o.status.code(), Some(2));
    let e = text(&o.stderr);
    assert!(e.contains("empty.pcap: empty: not a capture"), "{e}");
    assert!(o.stdout.is_empty());
}

/// Binary input on standard input that is no capture (a capture still gzipped, zeros) is refused
/// as the same bytes in a file are, exit status 2 and one line: it was read as hex lines, each
/// "not hex", and exited 1 after thousands of "Packet N: unreadable input".
#[test]
fn binary_standard_input_that_is_no_capture_is_refused_at_once() {
    let (_d, path) = capture(LinkType::Erf);
    let pcap = std::fs::read(&path).unwrap();
    let mut gz = vec![0x1f, 0x8b, 0x08, 0x00];
    gz.extend(pcap.iter().map(|b| b ^ 0x5a));
    for (input, magic, byte) in [
        (gz, "0x1f8b0800", "0x1f"),
        (vec![0; 4096], "0x00000000", "0x00"),
    ] {
        let mut child = Command::new(env!("CARGO_BIN_EXE_ipoib"))
            .args(["decode", "-"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut w = child.stdin.take().unwrap();
        // Ignored: the program may stop reading (and close the pipe) after the first bytes.
        let _ = w.write_all(&input);
        drop(w);
        let o = child.wait_with_output().unwrap();
        assert_eq!(o.status.code(), Some(2), "{}", text(&o.stderr));
        assert!(o.stdout.is_empty(), "{}", text(&o.stdout));
        assert_eq!(
            text(&o.stderr),
            format!(
                "ipoib decode: standard input: not a capture this tool reads (not a pcap or \
                 pcapng file: magic {magic}), nor hex packets (byte {byte} is no text)\n"
            )
        );
    }
}

// A closed output pipe (`ipoib decode bad.pcap | head -1`) stops the run, but the verdict is that
// of the packets decoded so far: a bad CRC shown before the pipe closed still exits 1, never 0.
// A closed standard error does not panic (exit 101) either.
#[test]
fn closed_pipes_keep_the_verdict() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("crc.pcap");
    let mut packets = vec![bad_icrc()];
    packets.extend((0..2000).map(|_| arp_request()));
    write_pcap(&path, LinkType::Infiniband, &packets);
    for closed_stderr in [false, true] {
        let mut child = Command::new(env!("CARGO_BIN_EXE_ipoib"))
            .args(["decode", path.to_str().unwrap()])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        // Close the read end of standard output (and of standard error) before anything is read.
        drop(child.stdout.take());
        if closed_stderr {
            drop(child.stderr.take());
        }
        let o = child.wait_with_output().unwrap();
        assert_eq!(o.status.code(), Some(1), "{}", text(&o.stderr));
    }
}
