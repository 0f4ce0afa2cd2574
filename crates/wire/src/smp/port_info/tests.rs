use super::*;
use crate::describe::{Collect, Describe};
use crate::Error;
use proptest::prelude::*;

/// An active 4x SDR HCA port: LID 3, master SM LID 1, 4x of 1x/4x, LinkUp, NeighborMTU 2048 and
/// MTUCap 4096, VL0-7, 128 GUIDs, SubnetTimeOut 18, partition enforcement on.
fn hca_bytes() -> [u8; 64] {
    let mut b = [0u8; 64];
    b[8..16].copy_from_slice(&[0xfe, 0x80, 0, 0, 0, 0, 0, 0]); // GidPrefix
    b[16..20].copy_from_slice(&[0x00, 0x03, 0x00, 0x01]); // LID, MasterSMLID
    b[20..24].copy_from_slice(&[0x02, 0x51, 0x08, 0x68]); // CapabilityMask
    b[24..28].copy_from_slice(&[0x00, 0x00, 0x00, 0x0f]); // DiagCode, M_KeyLeasePeriod
    b[28..32].copy_from_slice(&[0x01, 0x03, 0x03, 0x02]); // port 1, widths
    b[32..36].copy_from_slice(&[0x14, 0x52, 0x00, 0x11]); // speeds, states, LMC
    b[36..40].copy_from_slice(&[0x40, 0x40, 0x00, 0x08]); // MTU 2048 SL 0, VLCap 4, VL arb
    b[40..44].copy_from_slice(&[0x08, 0x05, 0xf3, 0x4c]); // MTUCap 4096, stall/HOQ, OpVLs/PE
    b[44..48].copy_from_slice(&[0x00, 0x01, 0x00, 0x02]); // M_Key, P_Key violations
    b[48..52].copy_from_slice(&[0x00, 0x03, 0x80, 0x12]); // Q_Key violations, GUIDCap, timeout
    b[52..56].copy_from_slice(&[0x10, 0x88, 0x00, 0x00]); // RespTimeValue, error thresholds
    b[56..60].copy_from_slice(&[0x00, 0x00, 0x01, 0x23]); // LinkRoundTripLatency
    b[60..64].copy_from_slice(&[0x00, 0x02, 0x00, 0x00]); // CapabilityMask2, speed ext
    b
}

fn hca() -> PortInfoRepr {
    PortInfoRepr {
        gid_prefix: 0xfe80_0000_0000_0000,
        lid: 3,
        master_sm_lid: 1,
        capability_mask: 0x0251_0868,
        mkey_lease_period: 15,
        local_port_num: 1,
        link_width_enabled: 3,
        link_width_supported: 3,
        link_width_active: 2,
        link_speed_supported: 1,
        port_state: PortState::Active,
        port_phys_state: PortPhysState::LinkUp,
        link_down_default_state: 2,
        link_speed_active: 1,
        link_speed_enabled: 1,
        neighbor_mtu: Mtu::Mtu2048,
        vl_cap: 4,
        vl_arbitration_high_cap: 8,
        vl_arbitration_low_cap: 8,
        mtu_cap: Mtu::Mtu4096,
        vl_stall_count: 7,
        hoq_life: 0x13,
        operational_vls: 4,
        partition_enforcement_inbound: true,
        partition_enforcement_outbound: true,
        mkey_violations: 1,
        pkey_violations: 2,
        qkey_violations: 3,
        guid_cap: 128,
        subnet_timeout: 18,
        resp_time_value: 16,
        local_phy_errors: 8,
        overrun_errors: 8,
        link_round_trip_latency: 0x123,
        capability_mask2: 2,
        ..PortInfoRepr::default()
    }
}

// IBA 1 §14.2.5.6: LID at 16, MasterSMLID at 18, PortState the low nibble of byte 32,
// NeighborMTU the high nibble of byte 36, MTUCap the low nibble of byte 41.
#[test]
fn deconstruct() {
    let b = hca_bytes();
    let v = PortInfo::new_checked(&b[..]).unwrap();
    assert_eq!(v.mkey(), 0);
    assert_eq!(v.gid_prefix(), 0xfe80_0000_0000_0000);
    assert_eq!((v.lid(), v.master_sm_lid()), (3, 1));
    assert_eq!(v.capability_mask(), 0x0251_0868);
    assert_eq!(v.capability_mask() & cap_mask::IS_SM, 0);
    assert_ne!(
        v.capability_mask() & cap_mask::IS_CLIENT_REREGISTRATION_SUPPORTED,
        0
    );
    assert_eq!((v.diag_code(), v.mkey_lease_period()), (0, 15));
    assert_eq!(v.local_port_num(), 1);
    assert_eq!(
        (
            v.link_width_enabled(),
            v.link_width_supported(),
            v.link_width_active()
        ),
        (3, 3, 2)
    );
    assert_eq!(v.link_speed_supported(), 1);
    assert_eq!(v.port_state(), PortState::Active);
    assert_eq!(v.port_phys_state(), PortPhysState::LinkUp);
    assert_eq!(v.link_down_default_state(), 2);
    assert_eq!((v.mkey_protect_bits(), v.lmc()), (0, 0));
    assert_eq!((v.link_speed_active(), v.link_speed_enabled()), (1, 1));
    assert_eq!((v.neighbor_mtu(), v.master_sm_sl()), (Mtu::Mtu2048, 0));
    assert_eq!((v.vl_cap(), v.init_type()), (4, 0));
    assert_eq!(
        (
            v.vl_high_limit(),
            v.vl_arbitration_high_cap(),
            v.vl_arbitration_low_cap()
        ),
        (0, 8, 8)
    );
    assert_eq!((v.init_type_reply(), v.mtu_cap()), (0, Mtu::Mtu4096));
    assert_eq!((v.vl_stall_count(), v.hoq_life()), (7, 0x13));
    assert_eq!(v.operational_vls(), 4);
    assert!(v.partition_enforcement_inbound() && v.partition_enforcement_outbound());
    assert!(!v.filter_raw_inbound() && !v.filter_raw_outbound());
    assert_eq!(
        (
            v.mkey_violations(),
            v.pkey_violations(),
            v.qkey_violations()
        ),
        (1, 2, 3)
    );
    assert_eq!(v.guid_cap(), 128);
    assert!(!v.client_reregister() && !v.multicast_pkey_trap_suppression_enabled());
    assert_eq!((v.subnet_timeout(), v.resp_time_value()), (18, 16));
    assert_eq!((v.local_phy_errors(), v.overrun_errors()), (8, 8));
    assert_eq!(v.max_credit_hint(), 0);
    assert_eq!(v.link_round_trip_latency(), 0x123);
    assert_eq!(v.capability_mask2(), 2);
    assert_eq!(
        (
            v.link_speed_ext_active(),
            v.link_speed_ext_supported(),
            v.link_speed_ext_enabled()
        ),
        (0, 0, 0)
    );
}

// IBA 1 §14.2.5.6
#[test]
fn construct() {
    let mut b = [0xffu8; 64];
    let mut v = PortInfo::new_unchecked(&mut b[..]);
    v.set_mkey(0);
    v.set_gid_prefix(0xfe80_0000_0000_0000);
    v.set_lid(3);
    v.set_master_sm_lid(1);
    v.set_capability_mask(0x0251_0868);
    v.set_diag_code(0);
    v.set_mkey_lease_period(15);
    v.set_local_port_num(1);
    v.set_link_width(3, 3, 2);
    v.set_speed_supported_and_state(1, PortState::Active);
    v.set_phys_state(PortPhysState::LinkUp, 2);
    v.set_protect_bits_and_lmc(0, 0);
    v.set_speed_active_enabled(1, 1);
    v.set_neighbor_mtu_and_sm_sl(Mtu::Mtu2048, 0);
    v.set_vl_cap_and_init_type(4, 0);
    v.set_vl_arbitration(0, 8, 8);
    v.set_init_type_reply_and_mtu_cap(0, Mtu::Mtu4096);
    v.set_stall_count_and_hoq_life(7, 0x13);
    v.set_operational_vls_and_enforcement(4, [true, true, false, false]);
    v.set_violations(1, 2, 3);
    v.set_guid_cap(128);
    v.set_reregister_and_subnet_timeout(false, false, 18);
    v.set_resp_time_value(16);
    v.set_error_thresholds(8, 8);
    v.set_max_credit_hint(0);
    v.set_link_round_trip_latency(0x123);
    v.set_capability_mask2(2);
    v.set_link_speed_ext(0, 0, 0);
    assert_eq!(b, hca_bytes());
}

// IBA 1 §14.2.5.6
#[test]
fn parse_and_emit() {
    assert_eq!(PortInfoRepr::parse(&hca_bytes()).unwrap(), hca());
    let mut out = [0xffu8; 64];
    hca().emit(&mut out);
    assert_eq!(out, hca_bytes());
    assert_eq!(PortInfoRepr::parse(&[0u8; 63]), Err(Error::Truncated));
    // Unknown MTU codes and states survive.
    let mut b = hca_bytes();
    b[32] = 0x17;
    b[36] = 0x70;
    let r = PortInfoRepr::parse(&b).unwrap();
    assert_eq!(
        (r.port_state, r.neighbor_mtu),
        (PortState::Unknown(7), Mtu::Unknown(7))
    );
    let mut out = [0u8; 64];
    r.emit(&mut out);
    assert_eq!(out, b);
}

// IBA 1 §14.2.5.6: the one-bit flags and the fields packed with them.
#[test]
fn packed_fields() {
    let r = PortInfoRepr {
        mkey_protect_bits: 3,
        lmc: 7,
        filter_raw_inbound: true,
        filter_raw_outbound: true,
        client_reregister: true,
        multicast_pkey_trap_suppression_enabled: true,
        subnet_timeout: 0x1f,
        link_speed_ext_active: 0xa,
        link_speed_ext_supported: 0x5,
        link_speed_ext_enabled: 0x1f,
        ..hca()
    };
    let mut b = [0u8; 64];
    r.emit(&mut b);
    assert_eq!(b[34], 0xc7, "M_KeyProtectBits 3, reserved 0, LMC 7");
    assert_eq!(b[43], 0x4f);
    assert_eq!(
        b[51], 0xdf,
        "ClientReregister, trap suppression, reserved 0, 31"
    );
    assert_eq!(b[62..64], [0xa5, 0x1f]);
    assert_eq!(PortInfoRepr::parse(&b).unwrap(), r);
}

// Reserved bits are ignored on parse and zero on emit.
#[test]
fn reserved_bits_zeroed() {
    let mut b = hca_bytes();
    b[34] |= 0x38;
    b[51] |= 0x20;
    b[52] |= 0xe0;
    b[56] = 0xff;
    b[63] |= 0xe0;
    let r = PortInfoRepr::parse(&b).unwrap();
    assert_eq!(r, hca());
    let mut out = [0u8; 64];
    r.emit(&mut out);
    assert_eq!(out, hca_bytes());
}

// IBA 1 §14.2.5.6: LID at 16, MasterSMLID at 18, PortState low nibble of byte 32; the bytes
// ibsim answers `SIM_CTL_GET_PORTINFO` with.
#[test]
fn ibsim_answer_fields() {
    let mut b = [0u8; 64];
    b[8..16].copy_from_slice(&0xfe80_0000_0000_0000u64.to_be_bytes());
    b[16..18].copy_from_slice(&3u16.to_be_bytes());
    b[18..20].copy_from_slice(&1u16.to_be_bytes());
    b[28] = 1;
    b[32] = 0x24;
    b[36] = 0x50;
    b[41] = 0x05;
    let p = PortInfoRepr::parse(&b).unwrap();
    assert_eq!(p.gid_prefix, 0xfe80_0000_0000_0000);
    assert_eq!(
        (p.lid, p.master_sm_lid, p.port_state),
        (3, 1, PortState::Active)
    );
    assert_eq!(
        (p.neighbor_mtu, p.mtu_cap, p.local_port_num),
        (Mtu::Mtu4096, Mtu::Mtu4096, 1)
    );
    assert!(p.is_up());
    b[32] = 0x22;
    assert!(!PortInfoRepr::parse(&b).unwrap().is_up());
    assert_eq!(PortInfoRepr::parse(&b[..63]), Err(Error::Truncated));
}

#[test]
fn describe_every_field() {
    let mut c = Collect::default();
    hca().describe(&mut c);
    assert_eq!(c.fields.len(), 51);
    assert_eq!(c.get("lid"), Some("0x0003"));
    assert_eq!(c.get("master_sm_lid"), Some("0x0001"));
    assert_eq!(c.get("port_state"), Some("Active (0x4)"));
    assert_eq!(c.get("port_phys_state"), Some("LinkUp (0x5)"));
    assert_eq!(c.get("neighbor_mtu"), Some("2048 (0x4)"));
    assert_eq!(c.get("mtu_cap"), Some("4096 (0x5)"));
    assert_eq!(c.get("capability_mask"), Some("0x02510868"));
    assert_eq!(c.get("subnet_timeout"), Some("18"));
}

pub(crate) fn arb_port_info() -> impl Strategy<Value = PortInfoRepr> {
    (
        (
            any::<u64>(),
            any::<u64>(),
            any::<u16>(),
            any::<u16>(),
            any::<u32>(),
            any::<u16>(),
            any::<u16>(),
        ),
        (any::<[u8; 4]>(), any::<[u8; 8]>(), any::<[u8; 8]>()),
        (any::<[u16; 3]>(), any::<[bool; 6]>(), any::<[u8; 4]>()),
        (any::<u16>(), 0u32..1 << 24, any::<u16>(), any::<[u8; 3]>()),
    )
        .prop_map(|(a, b, c, d)| {
            let (mkey, gid_prefix, lid, master_sm_lid, capability_mask, diag, lease) = a;
            let ([port, wen, wsup, wact], n1, n2) = (b.0, b.1, b.2);
            let (viol, flags, misc) = c;
            let (max_credit_hint, link_round_trip_latency, capability_mask2, ext) = d;
            PortInfoRepr {
                mkey,
                gid_prefix,
                lid,
                master_sm_lid,
                capability_mask,
                diag_code: diag,
                mkey_lease_period: lease,
                local_port_num: port,
                link_width_enabled: wen,
                link_width_supported: wsup,
                link_width_active: wact,
                link_speed_supported: n1[0] & 0xf,
                port_state: (n1[1] & 0xf).into(),
                port_phys_state: (n1[2] & 0xf).into(),
                link_down_default_state: n1[3] & 0xf,
                mkey_protect_bits: n1[4] & 3,
                lmc: n1[5] & 7,
                link_speed_active: n1[6] & 0xf,
                link_speed_enabled: n1[7] & 0xf,
                neighbor_mtu: (n2[0] & 0xf).into(),
                master_sm_sl: n2[1] & 0xf,
                vl_cap: n2[2] & 0xf,
                init_type: n2[3] & 0xf,
                vl_high_limit: misc[0],
                vl_arbitration_high_cap: misc[1],
                vl_arbitration_low_cap: misc[2],
                init_type_reply: n2[4] & 0xf,
                mtu_cap: (n2[5] & 0xf).into(),
                vl_stall_count: n2[6] & 7,
                hoq_life: n2[7] & 0x1f,
                operational_vls: misc[3] & 0xf,
                partition_enforcement_inbound: flags[0],
                partition_enforcement_outbound: flags[1],
                filter_raw_inbound: flags[2],
                filter_raw_outbound: flags[3],
                mkey_violations: viol[0],
                pkey_violations: viol[1],
                qkey_violations: viol[2],
                guid_cap: misc[0] ^ misc[1],
                client_reregister: flags[4],
                multicast_pkey_trap_suppression_enabled: flags[5],
                subnet_timeout: misc[1] & 0x1f,
                resp_time_value: misc[2] & 0x1f,
                local_phy_errors: misc[3] >> 4,
                overrun_errors: misc[0] & 0xf,
                max_credit_hint,
                link_round_trip_latency,
                capability_mask2,
                link_speed_ext_active: ext[0] & 0xf,
                link_speed_ext_supported: ext[1] & 0xf,
                link_speed_ext_enabled: ext[2] & 0x1f,
            }
        })
}

proptest! {
    #[test]
    fn round_trip(r in arb_port_info()) {
        let mut b = [0u8; 64];
        r.emit(&mut b);
        prop_assert_eq!(PortInfoRepr::parse(&b).unwrap(), r);
    }

    #[test]
    fn parse_never_panics(data in proptest::collection::vec(any::<u8>(), 0..300)) {
        if let Ok(r) = PortInfoRepr::parse(&data) {
            r.describe(&mut Collect::default());
            let mut b = [0u8; 64];
            r.emit(&mut b);
        }
    }
}
