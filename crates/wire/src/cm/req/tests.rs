use super::*;
use crate::cm::testutil::{body, describe};
use crate::cm::BODY_LEN;
use crate::sa::{Mtu, Rate};
use crate::types::Gid;

const GID_A: [u8; 16] = [
    0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0x00, 0x02, 0xc9, 0x03, 0x00, 0x00, 0x12, 0x34,
];
const GID_B: [u8; 16] = [
    0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0x00, 0x02, 0xc9, 0x03, 0x00, 0x00, 0x56, 0x78,
];

/// A REQ as Linux IPoIB-CM sends it (docs/DEPLOYED.md "Linux IPoIB"; RFC 4755 §3.2 private data):
/// service ID 0x1000000000000000 | UD QPN 0x48, RC, responder resources 4, both CM response
/// timeouts 20, retry count 0, RNR retry 0, max CM retries 15, SRQ, path MTU 2048, private data
/// {UD QPN 0x48, receive MTU 65524}.
fn ipoib_cm_bytes() -> [u8; BODY_LEN] {
    body(&[
        (0, &[0x1a, 0x2b, 0x3c, 0x4d]),       // local comm ID
        (8, &[0x10, 0, 0, 0, 0, 0, 0, 0x48]), // service ID
        (16, &[0x00, 0x02, 0xc9, 0x03, 0x00, 0x00, 0x12, 0x34]), // local CA GUID
        (32, &[0x00, 0x00, 0x49, 0x04]),      // local QPN | responder resources
        (40, &[0, 0, 0, 0xa0]), // remote EECN | remote CM resp. timeout 20, RC, no flow control
        (44, &[0, 0, 0, 0xa0]), // starting PSN 0 | local CM resp. timeout 20, retry count 0
        (48, &[0xff, 0xff, 0x40, 0xf8]), // P_Key | MTU 2048, RNR retry 0 | max CM retries 15, SRQ
        (52, &[0x00, 0x01, 0x00, 0x02]), // primary local / remote LID
        (56, &GID_A),
        (72, &GID_B),
        (88, &[0, 0, 0, 0x03]),    // flow label 0, packet rate 3
        (92, &[0, 0, 0x08, 0x90]), // TClass, hop limit, SL 0 subnet local, local ACK timeout 18
        (140, &[0, 0, 0, 0x48, 0, 0, 0xff, 0xf4]), // private data
    ])
}

fn ipoib_cm_repr() -> ReqRepr {
    let mut private_data = [0u8; PRIVATE_DATA_LEN];
    private_data[..8].copy_from_slice(&[0, 0, 0, 0x48, 0, 0, 0xff, 0xf4]);
    ReqRepr {
        local_comm_id: 0x1a2b_3c4d,
        vendor_id: 0,
        service_id: 0x1000_0000_0000_0048,
        local_ca_guid: Guid(0x0002_c903_0000_1234),
        local_qkey: QKey(0),
        local_qpn: 0x49,
        responder_resources: 4,
        local_eecn: 0,
        initiator_depth: 0,
        remote_eecn: 0,
        remote_cm_response_timeout: 20,
        transport_service_type: TransportServiceType::Rc,
        end_to_end_flow_control: false,
        starting_psn: 0,
        local_cm_response_timeout: 20,
        retry_count: 0,
        partition_key: PKey(0xffff),
        path_packet_payload_mtu: Mtu::Mtu2048,
        rdc_exists: false,
        rnr_retry_count: 0,
        max_cm_retries: 15,
        srq: true,
        extended_transport_type: 0,
        primary_path: CmPath {
            local_port_lid: 1,
            remote_port_lid: 2,
            local_port_gid: Gid(GID_A),
            remote_port_gid: Gid(GID_B),
            flow_label: 0,
            packet_rate: Rate::Gbps10,
            traffic_class: 0,
            hop_limit: 0,
            sl: 0,
            subnet_local: true,
            local_ack_timeout: 18,
        },
        alternate_path: CmPath::default(),
        sap_supported: false,
        private_data,
    }
}

/// Every field non-zero and distinct, so a misplaced bit shows (IBA 1 §12.6 Table 106).
fn all_fields_bytes() -> [u8; BODY_LEN] {
    let mut b = body(&[
        (0, &[0x01, 0x02, 0x03, 0x04, 0x00, 0x0a, 0x0b, 0x0c]), // comm ID, vendor ID
        (8, &[0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88]), // service ID
        (16, &[0x88, 0x77, 0x66, 0x55, 0x44, 0x33, 0x22, 0x11]), // CA GUID
        (28, &[0xde, 0xad, 0xbe, 0xef]),                        // Q_Key
        (32, &[0xab, 0xcd, 0xef, 0x12, 0x34, 0x56, 0x78, 0x9a]), // QPN|RR, EECN|ID
        (40, &[0xbc, 0xde, 0xf0, 0xab]), // remote EECN | timeout 0x15, UC, flow control
        (44, &[0x12, 0x34, 0x56, 0x77]), // PSN | timeout 0x0e, retry 7
        (48, &[0x80, 0x01, 0x5e, 0x91]), // P_Key | MTU 5, RDC, RNR 6 | max retries 9, ext 1
        (52, &[0x01, 0x02, 0x03, 0x04]),
        (56, &GID_A),
        (72, &GID_B),
        (88, &[0x12, 0x34, 0x50, 0x2a, 0x5c, 0x40, 0xb8, 0x98]),
        (96, &[0x05, 0x06, 0x07, 0x08]),
        (100, &GID_B),
        (116, &GID_A),
        (132, &[0xab, 0xcd, 0xe0, 0x01, 0x02, 0x03, 0x40, 0xfc]), // ..., ACK timeout 0x1f, SAP
    ]);
    for (i, x) in b[140..].iter_mut().enumerate() {
        *x = i as u8 + 1;
    }
    b
}

// IBA 1 §12.6 Table 106: field positions, read through the view.
#[test]
fn deconstruct() {
    let b = ipoib_cm_bytes();
    let m = ReqMsg::new_checked(&b[..]).unwrap();
    assert_eq!(m.local_comm_id(), 0x1a2b_3c4d);
    assert_eq!(m.service_id(), 0x1000_0000_0000_0048);
    assert_eq!(m.local_ca_guid(), Guid(0x0002_c903_0000_1234));
    assert_eq!(m.local_qpn(), 0x49);
    assert_eq!(m.responder_resources(), 4);
    assert_eq!(m.remote_cm_response_timeout(), 20);
    assert_eq!(m.transport_service_type(), 0);
    assert_eq!(m.local_cm_response_timeout(), 20);
    assert_eq!(m.retry_count(), 0);
    assert_eq!(m.partition_key(), 0xffff);
    assert_eq!(m.path_packet_payload_mtu(), 4);
    assert_eq!(m.rnr_retry_count(), 0);
    assert_eq!(m.max_cm_retries(), 15);
    assert!(m.srq());
    assert_eq!(m.primary_local_port_lid(), 1);
    assert_eq!(m.primary_remote_port_gid(), Gid(GID_B));
    assert_eq!(m.primary_packet_rate(), 3);
    assert!(m.primary_subnet_local());
    assert_eq!(m.primary_local_ack_timeout(), 18);
    assert_eq!(m.private_data()[..8], [0, 0, 0, 0x48, 0, 0, 0xff, 0xf4]);

    let b = all_fields_bytes();
    let m = ReqMsg::new_checked(&b[..]).unwrap();
    assert_eq!(m.vendor_id(), 0x0a_0b0c);
    assert_eq!(m.local_qkey(), 0xdead_beef);
    assert_eq!(m.local_eecn(), 0x34_5678);
    assert_eq!(m.initiator_depth(), 0x9a);
    assert_eq!(m.remote_eecn(), 0xbc_def0);
    assert_eq!(m.remote_cm_response_timeout(), 0x15);
    assert_eq!(m.transport_service_type(), 1);
    assert!(m.end_to_end_flow_control());
    assert_eq!(m.starting_psn(), 0x12_3456);
    assert_eq!(m.local_cm_response_timeout(), 0x0e);
    assert_eq!(m.retry_count(), 7);
    assert_eq!(m.path_packet_payload_mtu(), 5);
    assert!(m.rdc_exists());
    assert_eq!(m.rnr_retry_count(), 6);
    assert_eq!(m.max_cm_retries(), 9);
    assert!(!m.srq());
    assert_eq!(m.extended_transport_type(), 1);
    assert_eq!(m.primary_flow_label(), 0x12345);
    assert_eq!(m.primary_packet_rate(), 0x2a);
    assert_eq!(m.primary_traffic_class(), 0x5c);
    assert_eq!(m.primary_hop_limit(), 0x40);
    assert_eq!(m.primary_sl(), 0xb);
    assert_eq!(m.alternate_local_port_lid(), 0x0506);
    assert_eq!(m.alternate_remote_port_lid(), 0x0708);
    assert_eq!(m.alternate_local_port_gid(), Gid(GID_B));
    assert_eq!(m.alternate_remote_port_gid(), Gid(GID_A));
    assert_eq!(m.alternate_flow_label(), 0xabcde);
    assert_eq!(m.alternate_packet_rate(), 0x01);
    assert_eq!(m.alternate_traffic_class(), 0x02);
    assert_eq!(m.alternate_hop_limit(), 0x03);
    assert_eq!(m.alternate_sl(), 0x4);
    assert!(!m.alternate_subnet_local());
    assert_eq!(m.alternate_local_ack_timeout(), 0x1f);
    assert!(m.sap_supported());
    assert_eq!(m.private_data()[91], 92);
}

// IBA 1 §12.6 Table 106: the setters write the same bytes.
#[test]
fn construct() {
    let mut b = [0xa5u8; BODY_LEN];
    let mut m = ReqMsg::new_unchecked(&mut b[..]);
    m.clear();
    m.set_local_comm_id(0x1a2b_3c4d);
    m.set_service_id(0x1000_0000_0000_0048);
    m.set_local_ca_guid(Guid(0x0002_c903_0000_1234));
    m.set_local_qpn(0x49);
    m.set_responder_resources(4);
    m.set_remote_cm_response_timeout(20);
    m.set_transport_service_type(0);
    m.set_local_cm_response_timeout(20);
    m.set_partition_key(0xffff);
    m.set_path_packet_payload_mtu(4);
    m.set_max_cm_retries(15);
    m.set_srq(true);
    m.set_primary_local_port_lid(1);
    m.set_primary_remote_port_lid(2);
    m.set_primary_local_port_gid(Gid(GID_A));
    m.set_primary_remote_port_gid(Gid(GID_B));
    m.set_primary_packet_rate(3);
    m.set_primary_subnet_local(true);
    m.set_primary_local_ack_timeout(18);
    m.set_private_data(&[0, 0, 0, 0x48, 0, 0, 0xff, 0xf4]);
    assert_eq!(b, ipoib_cm_bytes());
}

#[test]
fn parse() {
    let b = ipoib_cm_bytes();
    let r = ReqRepr::parse(&ReqMsg::new_unchecked(&b[..])).unwrap();
    assert_eq!(r, ipoib_cm_repr());
    assert!(!r.has_alternate_path());
    let b = all_fields_bytes();
    let r = ReqRepr::parse(&ReqMsg::new_unchecked(&b[..])).unwrap();
    assert_eq!(r.transport_service_type, TransportServiceType::Uc);
    assert!(r.has_alternate_path());
    assert_eq!(r.alternate_path.local_ack_timeout, 0x1f);
}

#[test]
fn emit() {
    let mut b = [0x5au8; BODY_LEN];
    let r = ipoib_cm_repr();
    assert_eq!(r.buffer_len(), BODY_LEN);
    r.emit(&mut ReqMsg::new_unchecked(&mut b[..]));
    assert_eq!(b, ipoib_cm_bytes());

    let all = all_fields_bytes();
    let r = ReqRepr::parse(&ReqMsg::new_unchecked(&all[..])).unwrap();
    r.emit(&mut ReqMsg::new_unchecked(&mut b[..]));
    assert_eq!(b, all);
}

#[test]
fn describe_lists_fields() {
    let c = describe(&ipoib_cm_repr());
    assert_eq!(c.get("service_id"), Some("0x1000000000000048"));
    assert_eq!(c.get("transport_service_type"), Some("RC (0x0)"));
    assert_eq!(c.get("path_packet_payload_mtu"), Some("2048 (0x4)"));
    assert_eq!(
        c.get("primary_path.local_port_gid"),
        Some("fe80::2:c903:0:1234")
    );
    assert_eq!(c.get("primary_path.local_ack_timeout"), Some("18"));
    assert_eq!(c.get("alternate_path.local_port_lid"), Some("0x0000"));
    let pd = c.get("private_data").unwrap();
    assert_eq!(pd.len(), 2 * PRIVATE_DATA_LEN);
    assert!(pd.starts_with("00000048 0000fff4".replace(' ', "").as_str()));
    let names: Vec<&str> = c.fields.iter().map(|(k, _)| k.as_str()).collect();
    assert_eq!(names.len(), 23 + 2 * 11 + 2);
}

cm_props!(ReqRepr, ReqMsg);
