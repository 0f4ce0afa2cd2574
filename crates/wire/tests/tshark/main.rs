//! The sample packets (`ipoib_wire::samples::all`) read back by an independent implementation,
//! tshark (Debian's 4.0), from an ERF capture written by `ipoib_wire::pcap::PcapWriter`.
//!
//! `tshark_reads_every_sample_as_meant` compares, packet by packet and field by field, what
//! tshark shows with what this crate meant (the LRH, GRH, BTH and extended headers, the ICRC and
//! VCRC positions, the IPoIB frame down to ARP/IP/ICMP/UDP/ND, the SMP with its NodeInfo or
//! PortInfo, NodeDescription, SMInfo, P_KeyTable, SLtoVLMappingTable, VLArbitrationTable or trap
//! 128 Notice, the PerfMgt PortCounters and PortCountersExtended, the SA MAD with its record, the CM message with its Annex A11 header), plus literal
//! values from the specs that do not depend on this crate's parsers. `tshark_finds_nothing_malformed` asks tshark for malformed packets and
//! expert errors. Both skip, with a message, only when tshark is not installed.
//!
//! Known tshark 4.0 quirks, not compared (each read in wireshark's `packet-infiniband.c`):
//! - CM REQ primary/alternate flow label and packet rate come from other bits than IBA 1
//!   Table 106 (and Linux `ibta_vol1_c12.h`, which this crate follows) place them;
//! - the ICRC and VCRC are shown as the wire bytes read big-endian (they are sent least
//!   significant byte first), so the expected value is byte-swapped, not skipped;
//! - an SA ClassPortInfo is dissected as a PortInfo; a PathRecord's bytes 0-7 (ServiceID) are
//!   shown as reserved; a Notice's IssuerGID is not shown; only the first record of a
//!   GetTableResp is dissected;
//! - MCMemberRecord MADs have no ICRC/VCRC shown (`parse_RID` advances the offset past MGID and
//!   PortGID, then `parse_SUBA_Attribute` adds the whole 200 bytes: the offset ends beyond the MAD);
//! - PortInfo is dissected up to LinkRoundTripLatency (no CapabilityMask2, LinkSpeedExt fields or
//!   MulticastPKeyTrapSuppressionEnabled), GidPrefix is named `portinfo.guid`, and a directed-route
//!   SMP's `smpdirected.d` does not show the D bit (the bit is compared inside `smpstatus`);
//! - PerfMgt PortCounters and PortCountersExtended MADs have no ICRC/VCRC shown, and
//!   PortCounters has no PortXmitWait;
//! - only CM REQ, REP, RTU, REJ, DREQ and DREP bodies are dissected (MRA, LAP, APR and SIDR show
//!   their MAD header only);
//! - each RC SEND packet's payload goes to the EtherType heuristic on its own (`parse_PAYLOAD`,
//!   no reassembly), so the first packet of a multi-packet IPoIB-CM frame shows an IPv4 datagram
//!   longer than the packet: an expert error for that one frame, which is allowed below.

mod capture;
mod expect;

use capture::{Dissection, TempCapture, Tshark};
use expect::Want;
use ipoib_wire::samples::{self, Sample};
use std::collections::BTreeSet;

fn tshark_or_skip(test: &str) -> Option<Tshark> {
    let t = Tshark::find();
    if t.is_none() {
        eprintln!("skipping {test}: tshark is not installed (Debian package `tshark`)");
    }
    t
}

/// Reads a number as tshark prints it: decimal, or hexadecimal with `0x`.
fn number(s: &str) -> Option<u64> {
    match s.strip_prefix("0x") {
        Some(h) => u64::from_str_radix(h, 16).ok(),
        None => s.parse().ok(),
    }
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// Compares one field; the error says what was wanted and what tshark showed.
fn check(d: &Dissection, field: &str, want: &Want) -> Result<(), String> {
    let got = d.get(field);
    let ok = match want {
        Want::Absent => got.is_empty(),
        Want::Num(n) => got.len() == 1 && number(&got[0]) == Some(*n),
        Want::Nums(ns) => {
            got.len() == ns.len() && got.iter().zip(ns).all(|(g, n)| number(g) == Some(*n))
        }
        Want::Text(t) => got.len() == 1 && &got[0] == t,
        Want::Bytes(b) => got.len() == 1 && got[0] == hex(b),
    };
    if ok {
        Ok(())
    } else {
        Err(format!("{field}: want {want:?}, tshark shows {got:?}"))
    }
}

/// Literal values from the specifications and docs/DEPLOYED.md for chosen samples, independent of
/// this crate's parsers.
fn spot_checks() -> Vec<(&'static str, &'static str, Want)> {
    use Want::{Num, Text};
    let t = |s: &str| Text(s.to_string());
    vec![
        // draft-ietf-ipoib-ip-over-infiniband-06 §6, §9.2: IPoIB ARP, hardware type 32, 20 bytes.
        ("ud_arp_request", "infiniband.rwh.etype", Num(0x0806)),
        ("ud_arp_request", "arp.hw.type", Num(32)),
        ("ud_arp_request", "arp.hw.size", Num(20)),
        (
            "ud_arp_request",
            "infiniband.grh.dgid",
            t("ff12:401b:ffff::ffff:ffff"),
        ),
        ("ud_arp_request", "infiniband.bth.destqp", Num(0xff_ffff)),
        ("ud_arp_reply", "arp.opcode", Num(2)),
        // §4: 224.1.2.3 maps to ff12:401b:ffff::1:203; IBA 1 §7.11: multicast LIDs from 0xC000.
        (
            "ud_mcast_udp",
            "infiniband.grh.dgid",
            t("ff12:401b:ffff::1:203"),
        ),
        ("ud_mcast_udp", "infiniband.lrh.dlid", Num(0xc001)),
        ("ud_mcast_udp", "ip.dst", t("224.1.2.3")),
        ("ud_icmp_echo_request", "icmp.type", Num(8)),
        ("ud_grh_icmp_echo_reply", "icmp.type", Num(0)),
        // §9.3: the link-layer address option is type 1/2, length 3 (24 bytes).
        ("ud_nd_neighbor_solicit", "icmpv6.opt.type", Num(1)),
        ("ud_nd_neighbor_solicit", "icmpv6.opt.length", Num(3)),
        ("ud_nd_neighbor_advert", "icmpv6.opt.type", Num(2)),
        ("ud_nd_router_advert", "icmpv6.opt.mtu", Num(2044)),
        ("ud_icmpv6_echo_request", "icmpv6.type", Num(128)),
        // IBA 1 §13.5.1: GSI Q_Key; §15.2.5.17 and docs/DEPLOYED.md: the broadcast join and group.
        (
            "sa_mcmember_set_join",
            "infiniband.deth.q_key",
            Num(0x8001_0000),
        ),
        ("sa_mcmember_set_join", "infiniband.mad.method", Num(0x02)),
        (
            "sa_mcmember_set_join",
            "infiniband.mad.attributeid",
            Num(0x38),
        ),
        (
            "sa_mcmember_set_join",
            "infiniband.sa.componentmask",
            Num(0x1_0003),
        ),
        (
            "sa_mcmember_set_join",
            "infiniband.mcmemberrecord.joinstate",
            Num(1),
        ),
        ("sa_mcmember_getresp", "infiniband.mad.method", Num(0x81)),
        (
            "sa_mcmember_getresp",
            "infiniband.mcmemberrecord.q_key",
            Num(0x0b1b),
        ),
        (
            "sa_mcmember_getresp",
            "infiniband.mcmemberrecord.mtu",
            Num(4),
        ),
        (
            "sa_mcmember_getresp",
            "infiniband.mcmemberrecord.mlid",
            Num(0xc000),
        ),
        (
            "sa_mcmember_set_sendonly",
            "infiniband.mcmemberrecord.joinstate",
            Num(4),
        ),
        ("sa_mcmember_delete", "infiniband.mad.method", Num(0x15)),
        (
            "sa_mcmember_gettableresp",
            "infiniband.mad.method",
            Num(0x92),
        ),
        ("sa_path_getresp", "infiniband.pathrecord.dlid", Num(3)),
        (
            "sa_informinfo_set",
            "infiniband.informinfo.trapnumberdeviceid",
            Num(66),
        ),
        (
            "sa_informinfo_set",
            "infiniband.informinfo.subscribe",
            Num(1),
        ),
        (
            "sa_notice_report_trap66",
            "infiniband.mad.method",
            Num(0x06),
        ),
        (
            "sa_notice_report_trap66",
            "infiniband.notice.trapnumberdeviceid",
            Num(66),
        ),
        (
            "sa_notice_report_trap67",
            "infiniband.notice.trapnumberdeviceid",
            Num(67),
        ),
        (
            "sa_classportinfo_get",
            "infiniband.mad.attributeid",
            Num(0x01),
        ),
        // IBA 1 §14.2.1: SMPs on VL15, QP0, class 0x01 LID routed and 0x81 directed route;
        // §14.2.5.3 NodeInfo (type 1 CA, 2 switch), §14.2.5.6 PortInfo (state 4 Active).
        ("smp_nodeinfo_get", "infiniband.lrh.vl", Num(15)),
        ("smp_nodeinfo_get", "infiniband.bth.destqp", Num(0)),
        ("smp_nodeinfo_get", "infiniband.mad.mgmtclass", Num(0x01)),
        ("smp_nodeinfo_get", "infiniband.mad.attributeid", Num(0x11)),
        (
            "smp_nodeinfo_getresp",
            "infiniband.nodeinfo.nodetype",
            Num(1),
        ),
        (
            "smp_portinfo_getresp",
            "infiniband.mad.attributeid",
            Num(0x15),
        ),
        ("smp_portinfo_getresp", "infiniband.portinfo.lid", Num(2)),
        (
            "smp_portinfo_getresp",
            "infiniband.portinfo.mastersmlid",
            Num(1),
        ),
        (
            "smp_portinfo_getresp",
            "infiniband.portinfo.portstate",
            Num(4),
        ),
        (
            "smp_dr_nodeinfo_getresp",
            "infiniband.mad.mgmtclass",
            Num(0x81),
        ),
        (
            "smp_dr_nodeinfo_getresp",
            "infiniband.smpdirected.hopcount",
            Num(1),
        ),
        (
            "smp_dr_nodeinfo_getresp",
            "infiniband.nodeinfo.nodetype",
            Num(2),
        ),
        // docs/DEPLOYED.md "Linux IPoIB"; RFC 4755 §3.3 private data {UD QPN, 65524}.
        (
            "cm_req_ipoib_cm",
            "infiniband.cm.req.serviceid",
            Num(0x1000_0000_0000_0049),
        ),
        ("cm_req_ipoib_cm", "infiniband.cm.req.responderres", Num(4)),
        (
            "cm_req_ipoib_cm",
            "infiniband.cm.req.remoteresptout",
            Num(20),
        ),
        (
            "cm_req_ipoib_cm",
            "infiniband.cm.req.localresptout",
            Num(20),
        ),
        ("cm_req_ipoib_cm", "infiniband.cm.req.retrcount", Num(0)),
        ("cm_req_ipoib_cm", "infiniband.cm.req.rnrretrcount", Num(0)),
        ("cm_req_ipoib_cm", "infiniband.cm.req.maxcmretr", Num(15)),
        (
            "cm_rep_ipoib_cm",
            "infiniband.cm.rep.remotecommid",
            Num(0x1a2b_3c4d),
        ),
        (
            "cm_rej_invalid_service_id",
            "infiniband.cm.rej.reason",
            Num(8),
        ),
        // Annex A11: service ID 0x0000000001 | protocol | port; header CA11-1, CA11-5.
        (
            "cm_req_a11_iser_ipv4",
            "infiniband.cm.req.serviceid",
            Num(0x0106_0cbc),
        ),
        (
            "cm_req_a11_iser_ipv4",
            "infiniband.cm.req.serviceid.dport",
            Num(3260),
        ),
        (
            "cm_req_a11_iser_ipv4",
            "infiniband.cm.req.ip_cm.ipv",
            Num(4),
        ),
        (
            "cm_req_a11_iser_ipv4",
            "infiniband.cm.req.ip_cm.sport",
            Num(40000),
        ),
        (
            "cm_req_a11_iser_ipv4",
            "infiniband.cm.req.ip_cm.sip4",
            t("10.0.0.1"),
        ),
        (
            "cm_req_a11_iser_ipv4",
            "infiniband.cm.req.ip_cm.dip4",
            t("10.0.0.2"),
        ),
        ("cm_req_a11_ipv6", "infiniband.cm.req.ip_cm.ipv", Num(6)),
        (
            "cm_req_a11_ipv6",
            "infiniband.cm.req.ip_cm.sip6",
            t("2001:db8::1"),
        ),
        // CA11-9, CA11-10: layer 0, code 3 (IPV), suggested value length 1, value 4.
        ("cm_rej_a11_ari", "infiniband.cm.rej.reason", Num(28)),
        ("cm_rej_a11_ari", "infiniband.cm.rej.rejinfolen", Num(5)),
        (
            "cm_req_iwarp_hello",
            "infiniband.cm.req.serviceid",
            Num(0x2_0cbc),
        ),
        // IBA 1 §9.2 opcodes, §9.3 AETH.
        ("rc_send_first_ipoib_cm", "infiniband.bth.opcode", Num(0x00)),
        ("rc_send_middle", "infiniband.bth.opcode", Num(0x01)),
        ("rc_send_last", "infiniband.bth.opcode", Num(0x02)),
        ("rc_send_only_ipoib_cm", "infiniband.bth.opcode", Num(0x04)),
        ("rc_ack", "infiniband.aeth.syndrome", Num(0x1f)),
        ("rc_rdma_write_only", "infiniband.bth.opcode", Num(0x0a)),
        ("rc_rdma_write_only", "infiniband.reth.dmalen", Num(64)),
        ("rc_rdma_read_request", "infiniband.bth.opcode", Num(0x0c)),
        ("rc_rnr_nak", "infiniband.aeth.syndrome", Num(0x2e)),
        ("uc_send_only_ipoib_cm", "infiniband.bth.opcode", Num(0x24)),
    ]
}

#[test]
fn tshark_reads_every_sample_as_meant() {
    let Some(tshark) = tshark_or_skip("tshark_reads_every_sample_as_meant") else {
        return;
    };
    let samples = samples::all();
    let expected: Vec<_> = samples.iter().map(|s| expect::expect(&s.bytes)).collect();
    let spots = spot_checks();
    let fields: Vec<&str> = expected
        .iter()
        .flat_map(|e| e.fields.iter().map(|(f, _)| *f))
        .chain(spots.iter().map(|(_, f, _)| *f))
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    let capture = TempCapture::write("fields", &samples);
    let shown = tshark.fields(capture.path(), &fields);
    assert_eq!(shown.len(), samples.len(), "one line per packet");

    let mut failures = Vec::new();
    let mut checked = 0;
    for ((s, e), d) in samples.iter().zip(&expected).zip(&shown) {
        for (field, want) in &e.fields {
            checked += 1;
            if let Err(msg) = check(d, field, want) {
                failures.push(format!("{}: {msg}", s.name));
            }
        }
    }
    for (name, field, want) in &spots {
        let at = index_of(&samples, name);
        checked += 1;
        if let Err(msg) = check(&shown[at], field, want) {
            failures.push(format!("{name} (spot check): {msg}"));
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {checked} checks failed:\n{}",
        failures.len(),
        failures.join("\n")
    );
    eprintln!(
        "tshark agreed on {checked} fields of {} samples",
        samples.len()
    );
}

fn index_of(samples: &[Sample], name: &str) -> usize {
    samples
        .iter()
        .position(|s| s.name == name)
        .unwrap_or_else(|| panic!("no sample {name}"))
}

#[test]
fn tshark_finds_nothing_malformed() {
    let Some(tshark) = tshark_or_skip("tshark_finds_nothing_malformed") else {
        return;
    };
    let samples = samples::all();
    let capture = TempCapture::write("malformed", &samples);
    let flagged = tshark.matching(
        capture.path(),
        "_ws.malformed || _ws.expert.severity == error",
    );
    // The one allowed exception (see the module docs): the first packet of a multi-packet
    // IPoIB-CM frame, which tshark does not reassemble, holds the start of a longer IPv4
    // datagram, so tshark reports the IPv4 length (an error) and the ICMP checksum over the part
    // it has (a warning). Nothing else may be flagged on that frame.
    let first = index_of(&samples, "rc_send_first_ipoib_cm") + 1;
    let allowed = |m: &str| {
        m.starts_with("IPv4 total length exceeds packet length") || m.starts_with("Bad checksum")
    };
    let unexpected: Vec<String> = flagged
        .iter()
        .filter(|(frame, msgs)| *frame != first || !msgs.split('|').all(allowed))
        .map(|(frame, msgs)| format!("{} (frame {frame}): {msgs}", samples[frame - 1].name))
        .collect();
    assert!(
        unexpected.is_empty(),
        "tshark flags:\n{}",
        unexpected.join("\n")
    );
}
