use super::*;
use crate::cm::CmMessage;
use crate::decode::Decoder;
use crate::describe::Collect;
use crate::ib::Opcode;
use crate::ipoib::{IpoibFrame, IpoibPayload};
use crate::mad::{MadHeaderRepr, MAD_HEADER_LEN};
use crate::packet::Packet;
use crate::sa::{SaAttribute, SaMadRepr};

/// The decoder's fields for each sample of `list`, decoded in order by one decoder.
fn decode_all(list: &[Sample]) -> Vec<(Result<(), crate::Error>, Collect)> {
    let mut dec = Decoder::new();
    list.iter()
        .map(|s| {
            let mut c = Collect::default();
            let r = dec.packet(&s.bytes, &mut c);
            (r, c)
        })
        .collect()
}

fn error_fields(c: &Collect) -> Vec<&(String, String)> {
    c.fields
        .iter()
        .filter(|(k, _)| k.rsplit('.').next().is_some_and(|l| l.ends_with("error")))
        .collect()
}

fn sample(name: &str) -> Sample {
    find(name).unwrap_or_else(|| panic!("no sample {name}"))
}

/// The MAD a QP1 sample carries.
fn mad_of(name: &str) -> Vec<u8> {
    let s = sample(name);
    Packet::parse(&s.bytes).unwrap().payload.to_vec()
}

/// IBA 1 §7.7 (PktLen), §8.3 (PayLen), §9.2 (PadCnt), §7.8 (ICRC, VCRC): every sample is a whole,
/// consistent packet with both CRCs good.
#[test]
fn every_sample_parses_with_good_crcs() {
    let list = all();
    assert_eq!(list.len(), 61);
    for s in &list {
        let p = Packet::parse(&s.bytes).unwrap_or_else(|e| panic!("{}: {e:?}", s.name));
        assert!(p.icrc_ok && p.vcrc_ok, "{}: bad CRC", s.name);
        assert!(p.bth.is_some(), "{}: not an IBA packet", s.name);
    }
}

#[test]
fn names_unique_and_bytes_deterministic() {
    let a = all();
    let b = all();
    assert_eq!(a, b);
    assert_eq!(malformed(), malformed());
    let mut names: Vec<_> = a.iter().chain(&malformed()).map(|s| s.name).collect();
    names.sort_unstable();
    let n = names.len();
    names.dedup();
    assert_eq!(n, names.len(), "duplicate sample names");
    assert!(find("ud_arp_request").is_some() && find("bad_vcrc").is_some());
    assert!(find("nonexistent").is_none());
}

/// Every malformed sample is caught: it does not parse, a CRC is bad, or the decoder reports an
/// error (a field named `error` or `*_error`, or an `Err`).
#[test]
fn every_malformed_sample_is_caught() {
    let list = malformed();
    assert_eq!(list.len(), 8);
    let decoded = decode_all(&list);
    for (s, (r, c)) in list.iter().zip(&decoded) {
        let caught = match Packet::parse(&s.bytes) {
            Err(_) => true,
            Ok(p) => !p.crc_ok() || r.is_err() || !error_fields(c).is_empty(),
        };
        assert!(caught, "{} is not caught: {:?}", s.name, c.fields);
    }
    // Each one fails the way its name says.
    let verdict = |name: &str| Packet::parse(&sample(name).bytes).map(|p| (p.icrc_ok, p.vcrc_ok));
    assert_eq!(verdict("truncated"), Err(crate::Error::Truncated));
    assert!(verdict("wrong_pkt_len").is_err());
    assert_eq!(verdict("bad_icrc"), Ok((false, true)));
    assert_eq!(verdict("bad_vcrc"), Ok((true, false)));
    assert_eq!(verdict("pad_count_too_large"), Err(crate::Error::Malformed));
    assert_eq!(verdict("grh_paylen_wrong"), Err(crate::Error::Malformed));
    assert_eq!(verdict("mad_short"), Ok((true, true)));
    assert_eq!(verdict("cm_req_a11_garbage_header"), Ok((true, true)));
    let by_name = |name: &str| &decoded[list.iter().position(|s| s.name == name).unwrap()];
    assert!(by_name("mad_short").0.is_err());
    assert!(by_name("cm_req_a11_garbage_header")
        .1
        .get("ip_cm_error")
        .is_some());
}

/// The decoder describes every sample, in capture order, without an error.
#[test]
fn decoder_describes_every_sample() {
    let list = all();
    for (s, (r, c)) in list.iter().zip(decode_all(&list)) {
        assert!(r.is_ok(), "{}: {r:?} {:?}", s.name, c.fields);
        assert!(error_fields(&c).is_empty(), "{}: {:?}", s.name, c.fields);
        assert_eq!(c.get("icrc_ok"), Some("true"), "{}", s.name);
        assert!(c.get("summary").is_some(), "{}", s.name);
    }
}

/// draft-ietf-ipoib-ip-over-infiniband-06 §6 (encapsulation), §9.2 (ARP htype 32, 20-byte
/// addresses), §9.3 (ND link-layer option): the IPoIB samples carry what their names say.
#[test]
fn ipoib_samples_carry_their_payloads() {
    let frame = |name: &str| {
        let s = sample(name);
        let p = Packet::parse(&s.bytes).unwrap();
        (p.grh.is_some(), p.bth.unwrap().dest_qp, p.payload.to_vec())
    };
    for (name, global, multicast) in [
        ("ud_icmp_echo_request", false, false),
        ("ud_grh_icmp_echo_reply", true, false),
        ("ud_arp_request", true, true),
        ("ud_arp_reply", false, false),
        ("ud_nd_neighbor_solicit", true, true),
        ("ud_icmpv6_echo_request", false, false),
    ] {
        let (g, qp, payload) = frame(name);
        assert_eq!(g, global, "{name}");
        // IBA 1 §9.2: multicast DestQP is 0xFFFFFF.
        assert_eq!(qp == 0xff_ffff, multicast, "{name}");
        let f = IpoibFrame::parse(&payload).unwrap();
        assert!(
            !matches!(
                f.payload,
                IpoibPayload::Invalid { .. } | IpoibPayload::Unknown(_)
            ),
            "{name}"
        );
    }
    let (_, _, arp) = frame("ud_arp_request");
    // htype 32, ptype 0x0800, hlen 20, plen 4, request; sender flags 0x80 (RFC 4755 §3.1), QPN 0x48.
    assert_eq!(arp[4..14], [0, 32, 8, 0, 20, 4, 0, 1, 0x80, 0]);
    assert_eq!(arp[14..16], [0, 0x48]);
    let b = sample("ud_mcast_udp").bytes;
    let mc = Packet::parse(&b).unwrap();
    assert_eq!(mc.lrh.dlid, 0xc001);
    assert_eq!(
        mc.grh.unwrap().dgid.to_string(),
        "ff12:401b:ffff::1:203",
        "draft-ietf-ipoib-ip-over-infiniband-06 §4: low 28 bits of 224.1.2.3"
    );
}

/// IBA 1 §15.2.5.17 and docs/DEPLOYED.md: the broadcast join (JOIN mask, FullMember) and its answer
/// (Q_Key 0x0b1b, MTU 4, MLID 0xC000) on QP1 with the GSI Q_Key.
#[test]
fn sa_samples_carry_their_records() {
    let join = SaMadRepr::parse(&mad_of("sa_mcmember_set_join")).unwrap();
    assert_eq!(join.sa.component_mask, crate::sa::mcr_mask::JOIN);
    let SaAttribute::McMemberRecord(r) = join.attribute else {
        panic!("{:?}", join.attribute)
    };
    assert_eq!(r.mgid.to_string(), "ff12:401b:ffff::ffff:ffff");
    assert_eq!(r.join_state, crate::sa::JoinState::FULL_MEMBER);
    let resp = SaMadRepr::parse(&mad_of("sa_mcmember_getresp")).unwrap();
    let SaAttribute::McMemberRecord(r) = resp.attribute else {
        panic!("{:?}", resp.attribute)
    };
    assert_eq!((r.qkey, u8::from(r.mtu), r.mlid), (QKey(0x0b1b), 4, 0xc000));
    assert_eq!(resp.header.transaction_id, join.header.transaction_id);
    let table = SaMadRepr::parse(&mad_of("sa_mcmember_gettableresp")).unwrap();
    assert_eq!(table.records().record_count(), 2);
    let b = sample("sa_path_get").bytes;
    let p = Packet::parse(&b).unwrap();
    assert_eq!(p.ext.deth.unwrap().qkey, QKey::GSI);
    assert_eq!((p.bth.unwrap().dest_qp, p.ext.deth.unwrap().src_qp), (1, 1));
    for (name, trap) in [
        ("sa_notice_report_trap66", 66),
        ("sa_notice_report_trap67", 67),
    ] {
        let m = SaMadRepr::parse(&mad_of(name)).unwrap();
        let SaAttribute::Notice(n) = m.attribute else {
            panic!("{name}")
        };
        assert_eq!(n.trap_number(), Some(trap));
    }
}

/// IBA 1 §14.2.1, §14.2.5.3, §14.2.5.6: the SMP samples travel on VL15 to QP0 and the decoder
/// names their attributes field by field.
#[test]
fn smp_samples_carry_their_attributes() {
    let list = all();
    let decoded = decode_all(&list);
    let get = |name: &str| &decoded[list.iter().position(|s| s.name == name).unwrap()].1;
    for name in [
        "smp_nodeinfo_get",
        "smp_nodeinfo_getresp",
        "smp_portinfo_getresp",
        "smp_dr_nodeinfo_getresp",
    ] {
        let b = sample(name).bytes;
        let p = Packet::parse(&b).unwrap();
        assert_eq!(p.lrh.vl, 15, "{name}");
        assert_eq!(p.bth.unwrap().dest_qp, 0, "{name}");
    }
    let c = get("smp_nodeinfo_get");
    assert_eq!(c.get("mad.attribute_id"), Some("NodeInfo (0x11)"));
    assert_eq!(c.get("smp_data.bytes").map(str::len), Some(128));
    let c = get("smp_nodeinfo_getresp");
    assert_eq!(c.get("node_info.node_type"), Some("Channel Adapter (0x1)"));
    assert_eq!(c.get("node_info.node_guid"), Some("0x0002c90300000002"));
    assert_eq!(
        c.get("summary"),
        Some("0x0002 > 0x0001 UD Send Only qp 0x0 MAD SubnLid GetResp NodeInfo Channel Adapter guid 0x0002c90300000002")
    );
    let c = get("smp_portinfo_getresp");
    assert_eq!(c.get("port_info.lid"), Some("0x0002"));
    assert_eq!(c.get("port_info.master_sm_lid"), Some("0x0001"));
    assert_eq!(c.get("port_info.port_state"), Some("Active (0x4)"));
    assert_eq!(c.get("port_info.neighbor_mtu"), Some("2048 (0x4)"));
    assert!(c
        .get("summary")
        .unwrap()
        .ends_with("PortInfo lid 0x0002 Active"));
    let c = get("smp_dr_nodeinfo_getresp");
    assert_eq!(c.get("smp.direction"), Some("true"));
    assert_eq!(c.get("smp.hop_count"), Some("1"));
    assert_eq!(c.get("mad.status"), Some("Success (0x8000)"));
    assert_eq!(c.get("node_info.node_type"), Some("Switch (0x2)"));
    assert!(!c.get("summary").unwrap().contains("status"));
}

fn cm_of(name: &str) -> CmMessage {
    let mad = mad_of(name);
    let h = MadHeaderRepr::parse_bytes(&mad).unwrap();
    CmMessage::parse(h.attribute_id, &mad[MAD_HEADER_LEN..]).unwrap()
}

/// RFC 4755 §3.3 and docs/DEPLOYED.md (Linux IPoIB-CM REQ); Annex A11 CA11-1, CA11-5, CA11-9,
/// CA11-10: the CM samples carry the parameters and private data their names say.
#[test]
fn cm_samples_carry_their_parameters() {
    let CmMessage::Req(r) = cm_of("cm_req_ipoib_cm") else {
        panic!()
    };
    assert_eq!(r.service_id, 0x1000_0000_0000_0049);
    assert_eq!(r.private_data[..8], [0, 0, 0, 0x48, 0, 0, 0xff, 0xf4]);
    assert_eq!(
        (
            r.responder_resources,
            r.remote_cm_response_timeout,
            r.local_cm_response_timeout,
            r.retry_count,
            r.rnr_retry_count,
            r.max_cm_retries
        ),
        (4, 20, 20, 0, 0, 15)
    );
    let CmMessage::Req(r) = cm_of("cm_req_a11_iser_ipv4") else {
        panic!()
    };
    assert_eq!(r.service_id, 0x0000_0000_0106_0cbc);
    // Version 0, IPV 4, sport 40000, 12 zero bytes then 10.0.0.1, then 10.0.0.2.
    assert_eq!(r.private_data[..4], [0, 0x40, 0x9c, 0x40]);
    assert_eq!(r.private_data[16..20], [10, 0, 0, 1]);
    assert_eq!(r.private_data[32..36], [10, 0, 0, 2]);
    let CmMessage::Rej(j) = cm_of("cm_rej_a11_ari") else {
        panic!()
    };
    assert_eq!(u16::from(j.reason), 28);
    assert_eq!(j.ari(), [0x00, 0x03, 0x01, 0x00, 0x04]);
    let CmMessage::Rej(j) = cm_of("cm_rej_invalid_service_id") else {
        panic!()
    };
    assert_eq!(u16::from(j.reason), 8);
    assert!(matches!(cm_of("cm_sidr_rep"), CmMessage::SidrRep(_)));
    assert!(matches!(cm_of("cm_req_iwarp_hello"), CmMessage::Req(r) if r.private_data[0] == 0));
}

/// IBA 1 §9.2: the RC samples' opcodes, extended headers and PSN sequence.
#[test]
fn rc_samples_have_their_opcodes() {
    let bth = |name: &str| Packet::parse(&sample(name).bytes).unwrap().bth.unwrap();
    assert_eq!(bth("rc_send_first_ipoib_cm").opcode, Opcode(0x00));
    assert_eq!(bth("rc_send_middle").opcode, Opcode(0x01));
    assert_eq!(bth("rc_send_last").opcode, Opcode(0x02));
    assert_eq!(
        bth("rc_send_last").psn,
        bth("rc_send_first_ipoib_cm").psn + 2
    );
    assert_eq!(bth("rc_send_only_ipoib_cm").opcode, Opcode::RC_SEND_ONLY);
    assert_eq!(bth("rc_rdma_write_only").opcode, Opcode(0x0a));
    assert_eq!(bth("rc_rdma_read_request").opcode, Opcode(0x0c));
    assert_eq!(bth("uc_send_only_ipoib_cm").opcode, Opcode::UC_SEND_ONLY);
    let b = sample("rc_rnr_nak").bytes;
    let p = Packet::parse(&b).unwrap();
    assert!(matches!(
        p.ext.aeth.unwrap().syndrome,
        crate::ib::Syndrome::RnrNak { timer: 14 }
    ));
    let b = sample("rc_rdma_write_only").bytes;
    let p = Packet::parse(&b).unwrap();
    assert_eq!(p.ext.reth.unwrap().dma_len as usize, p.payload.len());
}

/// Annex A11 §A11.6 (as Linux rdma_cm also sends it in a SIDR_REQ): the decoder reads the IP CM
/// header at the start of the 216 bytes of SIDR_REQ private data.
#[test]
fn decoder_reads_a11_header_of_sidr_req() {
    let list = all();
    let decoded = decode_all(&list);
    let at = list.iter().position(|s| s.name == "cm_sidr_req").unwrap();
    let c = &decoded[at].1;
    assert_eq!(c.get("ip_cm.sip"), Some("10.0.0.1"));
    assert_eq!(c.get("ip_cm.dip"), Some("10.0.0.2"));
    assert_eq!(c.get("ip_cm.sport"), Some("40002"));
}

/// RFC 4755 §4: the first packet of a multi-packet IPoIB-CM message carries a truncated
/// datagram; the decoder shows the encapsulation header and the start without an error.
#[test]
fn decoder_shows_first_packet_of_a_message() {
    let s = sample("rc_send_first_ipoib_cm");
    let mut c = Collect::default();
    Decoder::new().packet(&s.bytes, &mut c).unwrap();
    assert_eq!(c.get("ipoib.type"), Some("IPv4 (0x800)"));
    assert!(c
        .get("message_start")
        .is_some_and(|v| v.starts_with("4500097c")));
    assert!(c
        .get("summary")
        .unwrap()
        .ends_with("(first packet of a message)"));
    // A SEND Only with a truncated datagram is still an error.
    let only = {
        let p = Packet::parse(&s.bytes).unwrap();
        let mut r = p.repr();
        r.bth = Some(crate::ib::BthRepr {
            opcode: Opcode::RC_SEND_ONLY,
            ..p.bth.unwrap()
        });
        let mut b = vec![0u8; r.buffer_len()];
        r.emit(&mut b).unwrap();
        b
    };
    let mut c = Collect::default();
    assert!(Decoder::new().packet(&only, &mut c).is_ok());
    assert_eq!(c.get("error"), Some("truncated"));
}

/// IBA 1 §14.2.5, §16.1.3.5, §16.1.4.11: `ipoib decode` names the agents' attributes and shows
/// their fields.
#[test]
fn sma_samples_decode_by_name() {
    let want = [
        (
            "smp_dr_sminfo_getresp",
            "SubnDirectedRoute GetResp SMInfo guid 0x0002c90300000002 Standby",
            "sm_info.act_count",
            "291",
        ),
        (
            "smp_nodedesc_getresp",
            "GetResp NodeDescription \"host-a HCA-1\"",
            "node_description.node_string",
            "host-a HCA-1",
        ),
        (
            "smp_pkeytable_getresp",
            "GetResp P_KeyTable",
            "p_key_table.pkeys",
            "ffff8001",
        ),
        (
            "smp_sl2vl_getresp",
            "GetResp SLtoVLMappingTable",
            "sl_to_vl_mapping_table.vls",
            "00010203",
        ),
        (
            "smp_vlarb_getresp",
            "GetResp VLArbitrationTable",
            "vl_arbitration_table.entries",
            "00400140",
        ),
        (
            "smp_trap_128",
            "SubnLid Trap Notice trap 128 lid 0x0005",
            "notice.lid_addr",
            "0x0005",
        ),
        (
            "smp_trap_256",
            "SubnLid Trap Notice trap 256",
            "notice.m_key",
            "0x0000000000000bad",
        ),
        (
            "smp_trap_257",
            "SubnLid Trap Notice trap 257",
            "notice.key",
            "0x00008002",
        ),
        (
            "perf_portcounters_getresp",
            "Perf GetResp PortCounters port 1",
            "port_counters.port_rcv_pkts",
            "41",
        ),
        (
            "perf_portcounters_ext_getresp",
            "Perf GetResp PortCountersExtended port 1",
            "port_counters_ext.port_xmit_data",
            "4294967312",
        ),
    ];
    for (name, summary, field, value) in want {
        let mut c = Collect::default();
        Decoder::new().packet(&sample(name).bytes, &mut c).unwrap();
        let s = c.get("summary").unwrap();
        assert!(s.ends_with(summary), "{name}: {s}");
        let v = c.get(field).unwrap_or_else(|| panic!("{name}: no {field}"));
        assert!(v.starts_with(value), "{name}: {field} = {v}");
    }
}

/// RC SENDs of consumers other than IPoIB (an Annex A11 connection's; here rping's 16-byte buffer
/// descriptor: address, rkey, length) are shown as bytes, not as IPoIB with type 0x0000 and a
/// nonzero reserved field (RFC 4755 §4 and draft-ietf-ipoib-ip-over-infiniband-06 §6: IPoIB's header
/// has a known type and a zero reserved field); an IPoIB-CM SEND is still read as IPoIB. Before the
/// fix the descriptor decoded as "IPoIB ethertype 0x0000, 12 bytes".
#[test]
fn decoder_shows_other_rc_sends_as_bytes() {
    let s = sample("rc_send_only_ipoib_cm");
    let p = Packet::parse(&s.bytes).unwrap();
    let with = |payload: &[u8]| {
        let mut r = p.repr();
        r.payload = payload;
        let mut b = vec![0u8; r.buffer_len()];
        r.emit(&mut b).unwrap();
        crate::packet::fill_crcs(&mut b).unwrap();
        let mut c = Collect::default();
        Decoder::new().packet(&b, &mut c).unwrap();
        c
    };
    let rping = [0, 0, 0x7f, 0, 0, 0, 0, 0, 0, 0, 1, 1, 0, 1, 0, 0];
    let c = with(&rping);
    assert_eq!(c.get("ipoib.type"), None);
    assert_eq!(c.get("payload"), Some("00007f00000000000000010100010000"));
    assert!(
        c.get("summary")
            .unwrap()
            .ends_with("RC Send Only qp 0x4a 16 bytes"),
        "{:?}",
        c.get("summary")
    );
    // A zero reserved field with a type IPoIB does not carry is not IPoIB either.
    let c = with(&[0x88, 0xb5, 0, 0, 1, 2, 3, 4]);
    assert_eq!(c.get("ipoib.type"), None);
    // The IPoIB-CM sample itself: IPv4 behind a zero reserved field.
    let mut c = Collect::default();
    Decoder::new().packet(&s.bytes, &mut c).unwrap();
    assert_eq!(c.get("ipoib.type"), Some("IPv4 (0x800)"));
}
