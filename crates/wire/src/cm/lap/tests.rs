use super::*;
use crate::cm::testutil::{body, describe};
use crate::cm::BODY_LEN;
use crate::sa::Rate;
use crate::types::Gid;

const GID_A: [u8; 16] = [
    0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0x00, 0x02, 0xc9, 0x03, 0x00, 0x00, 0x9a, 0xbc,
];
const GID_B: [u8; 16] = [
    0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0x00, 0x02, 0xc9, 0x03, 0x00, 0x00, 0xde, 0xf0,
];

fn lap_bytes() -> [u8; BODY_LEN] {
    body(&[
        (0, &[0x1a, 0x2b, 0x3c, 0x4d, 0x0a, 0x0b, 0x0c, 0x0d]),
        (12, &[0x00, 0x00, 0x53, 0xa0]), // remote QPN | remote CM response timeout 20
        (20, &[0x00, 0x05, 0x00, 0x06]),
        (24, &GID_A),
        (40, &GID_B),
        // flow label 0xabcde, TClass 0x12 | hop limit 0x40, rate 0x2a, SL 3 subnet local, ACK 17
        (56, &[0xab, 0xcd, 0xe0, 0x12, 0x40, 0x2a, 0x38, 0x88]),
        (64, &[0x5a]),
    ])
}

fn lap_repr() -> LapRepr {
    let mut private_data = [0u8; LAP_PRIVATE_DATA_LEN];
    private_data[0] = 0x5a;
    LapRepr {
        local_comm_id: 0x1a2b_3c4d,
        remote_comm_id: 0x0a0b_0c0d,
        remote_qpn_eecn: 0x53,
        remote_cm_response_timeout: 20,
        alternate_path: CmPath {
            local_port_lid: 5,
            remote_port_lid: 6,
            local_port_gid: Gid(GID_A),
            remote_port_gid: Gid(GID_B),
            flow_label: 0xabcde,
            packet_rate: Rate::from(0x2a),
            traffic_class: 0x12,
            hop_limit: 0x40,
            sl: 3,
            subnet_local: true,
            local_ack_timeout: 17,
        },
        private_data,
    }
}

// IBA 1 §12.6 Table 115: unlike REQ, the LAP puts the traffic class in the flow-label word and the
// packet rate after the hop limit.
#[test]
fn lap_deconstruct() {
    let b = lap_bytes();
    let m = LapMsg::new_checked(&b[..]).unwrap();
    assert_eq!(m.local_comm_id(), 0x1a2b_3c4d);
    assert_eq!(m.remote_comm_id(), 0x0a0b_0c0d);
    assert_eq!(m.remote_qpn_eecn(), 0x53);
    assert_eq!(m.remote_cm_response_timeout(), 20);
    assert_eq!(m.alternate_local_port_lid(), 5);
    assert_eq!(m.alternate_remote_port_lid(), 6);
    assert_eq!(m.alternate_local_port_gid(), Gid(GID_A));
    assert_eq!(m.alternate_remote_port_gid(), Gid(GID_B));
    assert_eq!(m.alternate_flow_label(), 0xabcde);
    assert_eq!(m.alternate_traffic_class(), 0x12);
    assert_eq!(m.alternate_hop_limit(), 0x40);
    assert_eq!(m.alternate_packet_rate(), 0x2a);
    assert_eq!(m.alternate_sl(), 3);
    assert!(m.alternate_subnet_local());
    assert_eq!(m.alternate_local_ack_timeout(), 17);
    assert_eq!(m.private_data()[0], 0x5a);
}

#[test]
fn lap_construct() {
    let mut b = [0u8; BODY_LEN];
    let mut m = LapMsg::new_unchecked(&mut b[..]);
    m.set_local_comm_id(0x1a2b_3c4d);
    m.set_remote_comm_id(0x0a0b_0c0d);
    m.set_remote_qpn_eecn(0x53);
    m.set_remote_cm_response_timeout(20);
    m.set_alternate_local_port_lid(5);
    m.set_alternate_remote_port_lid(6);
    m.set_alternate_local_port_gid(Gid(GID_A));
    m.set_alternate_remote_port_gid(Gid(GID_B));
    m.set_alternate_flow_label(0xabcde);
    m.set_alternate_traffic_class(0x12);
    m.set_alternate_hop_limit(0x40);
    m.set_alternate_packet_rate(0x2a);
    m.set_alternate_sl(3);
    m.set_alternate_subnet_local(true);
    m.set_alternate_local_ack_timeout(17);
    m.set_private_data(&[0x5a]);
    assert_eq!(b, lap_bytes());
}

#[test]
fn lap_parse_emit_describe() {
    let b = lap_bytes();
    assert_eq!(
        LapRepr::parse(&LapMsg::new_unchecked(&b[..])),
        Ok(lap_repr())
    );
    let mut out = [0xffu8; BODY_LEN];
    lap_repr().emit(&mut LapMsg::new_unchecked(&mut out[..]));
    assert_eq!(out, b);
    let c = describe(&lap_repr());
    assert_eq!(c.get("alternate_path.traffic_class"), Some("18"));
    assert_eq!(c.get("alternate_path.flow_label"), Some("0xabcde"));
    let names: Vec<&str> = c.fields.iter().map(|(k, _)| k.as_str()).collect();
    // LAP wire order: traffic class, hop limit, packet rate.
    assert_eq!(
        names[9..12],
        [
            "alternate_path.traffic_class",
            "alternate_path.hop_limit",
            "alternate_path.packet_rate"
        ]
    );
    assert_eq!(names.len(), 4 + 11 + 1);
}

fn apr_bytes() -> [u8; BODY_LEN] {
    body(&[
        (0, &[0x0a, 0x0b, 0x0c, 0x0d, 0x1a, 0x2b, 0x3c, 0x4d]),
        (8, &[0x03, 0x08]), // info length 3, status 8 (invalid GID)
        (12, &[0xfe, 0x80, 0x00]),
        (84, &[0x42]),
    ])
}

fn apr_repr() -> AprRepr {
    let mut additional_information = [0u8; APR_INFO_LEN];
    additional_information[..3].copy_from_slice(&[0xfe, 0x80, 0x00]);
    let mut private_data = [0u8; APR_PRIVATE_DATA_LEN];
    private_data[0] = 0x42;
    AprRepr {
        local_comm_id: 0x0a0b_0c0d,
        remote_comm_id: 0x1a2b_3c4d,
        additional_information_length: 3,
        ap_status: ApStatus::InvalidGid,
        additional_information,
        private_data,
    }
}

// IBA 1 §12.6 Table 116: Additional Information Length at byte 8, AP Status at byte 9,
// Additional Information at byte 12 (72 bytes), private data at byte 84 (148 bytes).
#[test]
fn apr_deconstruct_construct() {
    let b = apr_bytes();
    let m = AprMsg::new_checked(&b[..]).unwrap();
    assert_eq!(m.local_comm_id(), 0x0a0b_0c0d);
    assert_eq!(m.remote_comm_id(), 0x1a2b_3c4d);
    assert_eq!(m.additional_information_length(), 3);
    assert_eq!(m.ap_status(), 8);
    assert_eq!(m.additional_information()[..3], [0xfe, 0x80, 0x00]);
    assert_eq!(m.private_data()[0], 0x42);

    let mut out = [0u8; BODY_LEN];
    let mut m = AprMsg::new_unchecked(&mut out[..]);
    m.set_local_comm_id(0x0a0b_0c0d);
    m.set_remote_comm_id(0x1a2b_3c4d);
    m.set_additional_information_length(3);
    m.set_ap_status(8);
    m.set_additional_information(&[0xfe, 0x80, 0x00]);
    m.set_private_data(&[0x42]);
    assert_eq!(out, b);
}

#[test]
fn apr_parse_emit_describe() {
    let b = apr_bytes();
    let r = AprRepr::parse(&AprMsg::new_unchecked(&b[..])).unwrap();
    assert_eq!(r, apr_repr());
    assert_eq!(r.info(), [0xfe, 0x80, 0x00]);
    let mut out = [0xffu8; BODY_LEN];
    r.emit(&mut AprMsg::new_unchecked(&mut out[..]));
    assert_eq!(out, b);
    let c = describe(&r);
    assert_eq!(c.get("ap_status"), Some("invalid GID (0x8)"));
    assert_eq!(c.fields.len(), 6);
}

// ib_cm.h enum ib_cm_apr_status: 0..=13.
#[test]
fn ap_status_codes() {
    for v in 0..=255u8 {
        assert_eq!(u8::from(ApStatus::from(v)), v);
    }
    assert_eq!(ApStatus::from(0), ApStatus::Success);
    assert_eq!(ApStatus::from(13), ApStatus::InvalidSl);
    assert_eq!(ApStatus::from(14), ApStatus::Unknown(14));
    assert_eq!(ApStatus::Unknown(99).name(), "unknown");
}

mod lap {
    cm_props!(LapRepr, LapMsg);
}
mod apr {
    cm_props!(AprRepr, AprMsg);
}
