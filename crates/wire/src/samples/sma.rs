//! What the subnet management and performance management agents answer (IBA 1 §14.2.5,
//! §16.1.3): the SMInfo of the master SM read by directed route, A's NodeDescription, P_KeyTable,
//! SLtoVLMappingTable and VLArbitrationTable read by LID, a switch's traps 128 and 256, A's
//! trap 257 (Bad P_Key), and A's
//! PortCounters and PortCountersExtended read by a performance manager on QP1.

use super::{emit, gsi, Sample, A, P_KEY, SM};
use crate::ib::lid::LID_PERMISSIVE;
use crate::ib::{BthRepr, DethRepr, LrhRepr, Opcode};
use crate::keys::{PKey, QKey};
use crate::mad::attr::{perf as perf_attr, smp as attr};
use crate::mad::{
    BadKey, BadKeyTrap, BadMKeyTrap, MadHeaderRepr, MadStatus, Method, MgmtClass, NoticeRepr,
    ProducerType, BASE_VERSION, MAD_LEN,
};
use crate::packet::PacketRepr;
use crate::perf::{PortCountersExtRepr, PortCountersRepr, PERF_CLASS_VERSION, PERF_DATA_OFFSET};
use crate::smp::{
    DirectedRoute, NodeDescriptionRepr, PKeyTableRepr, SlToVlTableRepr, SmInfoRepr, SmState,
    SmpAttribute, SmpMadRepr, SmpRoute, VlArbEntry, VlArbTableRepr, SMP_PATH_LEN,
};
use crate::types::Guid;

const TID_BASE: u64 = 0x0000_0004_0000_0000;
/// The switch whose trap 128 is shown, at LID 5.
const SWITCH_LID: u16 = 5;

pub(super) fn samples() -> Vec<Sample> {
    let mut out = vec![Sample::new(
        "smp_dr_sminfo_getresp",
        dr(0x40, &sm_info_resp()),
    )];
    let lid_resp = |tid: u64, id: u16, m: u32, a: SmpAttribute| {
        SmpMadRepr::lid_routed_get(TID_BASE + tid, id, m).get_response(MadStatus::SUCCESS, a)
    };
    let mut sl2vl = SlToVlTableRepr::default();
    for (sl, v) in sl2vl.vls.iter_mut().enumerate() {
        *v = (sl % 4) as u8;
    }
    let mut vlarb = VlArbTableRepr::default();
    for (i, e) in vlarb.entries.iter_mut().take(4).enumerate() {
        *e = VlArbEntry {
            vl: i as u8,
            weight: 0x40,
        };
    }
    let mut pkeys = PKeyTableRepr::default();
    pkeys.pkeys[0] = PKey::DEFAULT;
    pkeys.pkeys[1] = PKey(0x8001);
    for (name, psn, smp) in [
        (
            "smp_nodedesc_getresp",
            0x41,
            lid_resp(
                2,
                attr::NODE_DESCRIPTION,
                0,
                SmpAttribute::NodeDescription(NodeDescriptionRepr::new("host-a HCA-1")),
            ),
        ),
        (
            "smp_pkeytable_getresp",
            0x42,
            lid_resp(3, attr::P_KEY_TABLE, 0, SmpAttribute::PKeyTable(pkeys)),
        ),
        (
            "smp_sl2vl_getresp",
            0x43,
            lid_resp(
                4,
                attr::SL_TO_VL_MAPPING_TABLE,
                0,
                SmpAttribute::SlToVlMappingTable(sl2vl),
            ),
        ),
        (
            "smp_vlarb_getresp",
            0x44,
            lid_resp(
                5,
                attr::VL_ARBITRATION_TABLE,
                1 << 16,
                SmpAttribute::VlArbitrationTable(vlarb),
            ),
        ),
    ] {
        out.push(Sample::new(name, smp_packet(A.lid, SM.lid, psn, &smp)));
    }
    out.push(Sample::new(
        "smp_trap_128",
        smp_packet(SWITCH_LID, SM.lid, 0x45, &trap_128()),
    ));
    out.push(Sample::new(
        "smp_trap_256",
        smp_packet(SWITCH_LID, SM.lid, 0x48, &trap_256()),
    ));
    out.push(Sample::new(
        "smp_trap_257",
        smp_packet(A.lid, SM.lid, 0x49, &trap_257()),
    ));
    let ext = PortCountersExtRepr {
        port_select: 1,
        port_xmit_data: 0x1_0000_0010,
        port_rcv_data: 0x2000,
        port_xmit_pkts: 40,
        port_rcv_pkts: 41,
        port_unicast_xmit_pkts: 30,
        port_unicast_rcv_pkts: 31,
        port_multicast_xmit_pkts: 10,
        port_multicast_rcv_pkts: 10,
        ..PortCountersExtRepr::default()
    };
    let pc = PortCountersRepr::saturating(1, &ext, 0);
    let mut b = perf_mad(6, perf_attr::PORT_COUNTERS);
    pc.emit(&mut b[PERF_DATA_OFFSET..]);
    out.push(Sample::new(
        "perf_portcounters_getresp",
        gsi(&A, &SM, 0x46, &b),
    ));
    let mut b = perf_mad(7, perf_attr::PORT_COUNTERS_EXTENDED);
    ext.emit(&mut b[PERF_DATA_OFFSET..]);
    out.push(Sample::new(
        "perf_portcounters_ext_getresp",
        gsi(&A, &SM, 0x47, &b),
    ));
    out
}

/// A PerfMgt GetResp with the data zero (IBA 1 §16.1.1).
fn perf_mad(tid: u64, attribute_id: u16) -> [u8; MAD_LEN] {
    let mut b = [0u8; MAD_LEN];
    MadHeaderRepr {
        base_version: BASE_VERSION,
        mgmt_class: MgmtClass::Perf,
        class_version: PERF_CLASS_VERSION,
        method: Method::GetResp,
        status: MadStatus::SUCCESS,
        class_specific: 0,
        transaction_id: TID_BASE + tid,
        attribute_id,
        attribute_modifier: 0,
    }
    .emit(&mut b);
    b
}

/// The standby SM's answer to the master's directed-route SubnGet(SMInfo) one hop away: the
/// master asked with SM_Key 0, so SM_Key reads 0 (IBA 1 §14.4.1).
fn sm_info_resp() -> SmpMadRepr {
    let mut initial_path = [0u8; SMP_PATH_LEN];
    initial_path[1] = 1;
    let mut return_path = [0u8; SMP_PATH_LEN];
    return_path[1] = 3;
    let mut get = SmpMadRepr::lid_routed_get(TID_BASE + 1, attr::SM_INFO, 0);
    get.header.mgmt_class = MgmtClass::SubnDirectedRoute;
    get.header.class_specific = 0x0201; // HopPointer 2 (past the end), HopCount 1
    get.route = SmpRoute::Directed(DirectedRoute {
        dr_slid: LID_PERMISSIVE,
        dr_dlid: LID_PERMISSIVE,
        initial_path,
        return_path,
    });
    get.get_response(
        MadStatus::SUCCESS,
        SmpAttribute::SmInfo(SmInfoRepr {
            guid: Guid(A.guid),
            sm_key: 0,
            act_count: 0x123,
            priority: 2,
            sm_state: SmState::Standby,
        }),
    )
}

/// A switch's Trap(Notice) 128 to the SM (IBA 1 §14.2.5.1, §14.3.11).
fn trap_128() -> SmpMadRepr {
    let mut t = SmpMadRepr::lid_routed_get(TID_BASE + 8, attr::NOTICE, 0);
    t.header.method = Method::Trap;
    t.attribute = SmpAttribute::Notice(NoticeRepr::link_state_trap(SWITCH_LID));
    t
}

/// A switch's Trap(Notice 256): a directed-route SubnSet(PortInfo) one hop away came with the
/// wrong M_Key (IBA 1 §14.2.4, §14.2.5.1).
fn trap_256() -> SmpMadRepr {
    let mut t = SmpMadRepr::lid_routed_get(TID_BASE + 9, attr::NOTICE, 0);
    t.header.method = Method::Trap;
    let mut details = BadMKeyTrap {
        lid: SWITCH_LID,
        dr_slid: LID_PERMISSIVE,
        method: u8::from(Method::Set),
        attribute_id: attr::PORT_INFO,
        attribute_modifier: 3,
        mkey: 0x0bad,
        dr_notice: true,
        dr_hop_count: 1,
        ..BadMKeyTrap::default()
    };
    details.dr_return_path[1] = 4;
    t.attribute = SmpAttribute::Notice(details.notice(ProducerType::Switch, SWITCH_LID));
    t
}

/// Trap 257 from A: a datagram from QP 0x48 at LID 9 to A's QP 0x51 with P_Key 0x8002, which A's
/// table does not hold (IBA 1 §14.2.5.1 Table 131; no GRH, so no GIDs).
fn trap_257() -> SmpMadRepr {
    let mut t = SmpMadRepr::lid_routed_get(TID_BASE + 10, attr::NOTICE, 0);
    t.header.method = Method::Trap;
    let details = BadKeyTrap {
        lid1: 9,
        lid2: A.lid,
        key: 0x8002,
        sl: 0,
        qp1: 0x48,
        qp2: 0x51,
        ..BadKeyTrap::default()
    };
    t.attribute = SmpAttribute::Notice(details.notice(BadKey::PKey, ProducerType::Ca, A.lid));
    t
}

fn dr(psn: u32, smp: &SmpMadRepr) -> Vec<u8> {
    smp_packet(LID_PERMISSIVE, LID_PERMISSIVE, psn, smp)
}

fn smp_packet(slid: u16, dlid: u16, psn: u32, smp: &SmpMadRepr) -> Vec<u8> {
    let lrh = LrhRepr::local(15, 0, dlid, slid);
    let bth = BthRepr::new(Opcode::UD_SEND_ONLY, P_KEY, 0, psn);
    let deth = DethRepr {
        qkey: QKey(0),
        src_qp: 0,
    };
    emit(&PacketRepr::ud_send_only(
        lrh,
        None,
        bth,
        deth,
        &smp.to_bytes(),
    ))
}
