//! SMPs on QP0 (IBA 1 §14.2): the SM reads A's NodeInfo and PortInfo by LID, and a switch's
//! NodeInfo by directed route. SMPs travel on VL15, the management lane, with the default P_Key;
//! QP0 checks no Q_Key, so the DETH carries 0.

use super::{emit, Node, Sample, A, P_KEY, SM};
use crate::ib::lid::LID_PERMISSIVE;
use crate::ib::{BthRepr, DethRepr, LrhRepr, Opcode};
use crate::keys::QKey;
use crate::mad::attr::smp as attr;
use crate::mad::{MadStatus, MgmtClass};
use crate::packet::PacketRepr;
use crate::sa::Mtu;
use crate::smp::{
    cap_mask, DirectedRoute, NodeInfoRepr, NodeType, PortInfoRepr, PortPhysState, PortState,
    SmpAttribute, SmpMadRepr, SmpRoute, SMP_PATH_LEN,
};
use crate::types::Guid;

/// TransactionIDs of the SM's SMPs.
const TID_BASE: u64 = 0x0000_0003_0000_0000;
/// The switch the directed-route sample reaches: one hop from the SM, out of the SM's port 1.
const SWITCH_GUID: u64 = 0x0002_c903_00aa_0000;

pub(super) fn samples() -> Vec<Sample> {
    let ni_get = SmpMadRepr::lid_routed_get(TID_BASE + 1, attr::NODE_INFO, 0);
    let pi_get = SmpMadRepr::lid_routed_get(TID_BASE + 2, attr::PORT_INFO, 1);
    let mut dr_resp = dr_node_info_get().get_response(
        MadStatus::SUCCESS,
        SmpAttribute::NodeInfo(switch_node_info()),
    );
    // On the way out the switch wrote the port it was reached by into ReturnPath[1].
    if let SmpRoute::Directed(r) = &mut dr_resp.route {
        r.return_path[1] = 1;
    }
    vec![
        Sample::new("smp_nodeinfo_get", qp0(&SM, A.lid, 0x10, &ni_get)),
        Sample::new(
            "smp_nodeinfo_getresp",
            qp0(
                &A,
                SM.lid,
                0x20,
                &ni_get.get_response(MadStatus::SUCCESS, SmpAttribute::NodeInfo(a_node_info())),
            ),
        ),
        Sample::new(
            "smp_portinfo_getresp",
            qp0(
                &A,
                SM.lid,
                0x21,
                &pi_get.get_response(MadStatus::SUCCESS, SmpAttribute::PortInfo(a_port_info())),
            ),
        ),
        Sample::new("smp_dr_nodeinfo_getresp", dr(0x30, &dr_resp)),
    ]
}

/// An SMP from `src`'s QP0 to `dlid`'s QP0 on VL15.
fn qp0(src: &Node, dlid: u16, psn: u32, smp: &SmpMadRepr) -> Vec<u8> {
    smp_packet(src.lid, dlid, psn, smp)
}

/// A directed-route SMP: both LRH LIDs permissive (IBA 1 §14.2.2, DrSLID and DrDLID permissive).
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

/// A's NodeInfo: a one-port CA whose node, system image and port GUIDs are its port GUID (as
/// ibsim reports a CA), Mellanox's OUI.
fn a_node_info() -> NodeInfoRepr {
    NodeInfoRepr {
        base_version: 1,
        class_version: 1,
        node_type: NodeType::ChannelAdapter,
        num_ports: 1,
        system_image_guid: Guid(A.guid),
        node_guid: Guid(A.guid),
        port_guid: Guid(A.guid),
        partition_cap: 128,
        device_id: 0x1003,
        revision: 1,
        local_port_num: 1,
        vendor_id: 0x0002c9,
    }
}

/// A's port 1 after the SM's sweep: LID 2, the SM at LID 1, Active, 4x SDR, NeighborMTU 2048
/// of MTUCap 4096, SubnetTimeOut 18.
fn a_port_info() -> PortInfoRepr {
    PortInfoRepr {
        gid_prefix: crate::types::Gid::DEFAULT_SUBNET_PREFIX,
        lid: A.lid,
        master_sm_lid: SM.lid,
        capability_mask: cap_mask::IS_TRAP_SUPPORTED
            | cap_mask::IS_AUTOMATIC_MIGRATION_SUPPORTED
            | cap_mask::IS_SL_MAPPING_SUPPORTED
            | cap_mask::IS_SYSTEM_IMAGE_GUID_SUPPORTED
            | cap_mask::IS_COMMUNICATION_MANAGEMENT_SUPPORTED
            | cap_mask::IS_CLIENT_REREGISTRATION_SUPPORTED,
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
        hoq_life: 0x13,
        operational_vls: 4,
        partition_enforcement_inbound: true,
        partition_enforcement_outbound: true,
        guid_cap: 128,
        subnet_timeout: 18,
        resp_time_value: 16,
        local_phy_errors: 8,
        overrun_errors: 8,
        ..PortInfoRepr::default()
    }
}

/// The SM's first directed-route SubnGet(NodeInfo) of its sweep: one hop out of port 1.
fn dr_node_info_get() -> SmpMadRepr {
    let mut initial_path = [0u8; SMP_PATH_LEN];
    initial_path[1] = 1;
    let mut smp = SmpMadRepr::lid_routed_get(TID_BASE + 3, attr::NODE_INFO, 0);
    smp.header.mgmt_class = MgmtClass::SubnDirectedRoute;
    // HopPointer 1 (at the switch), HopCount 1.
    smp.header.class_specific = 0x0101;
    smp.route = SmpRoute::Directed(DirectedRoute {
        dr_slid: LID_PERMISSIVE,
        dr_dlid: LID_PERMISSIVE,
        initial_path,
        return_path: [0; SMP_PATH_LEN],
    });
    smp
}

/// The switch's NodeInfo: 8 ports, answered on port 1.
fn switch_node_info() -> NodeInfoRepr {
    NodeInfoRepr {
        node_type: NodeType::Switch,
        num_ports: 8,
        system_image_guid: Guid(SWITCH_GUID),
        node_guid: Guid(SWITCH_GUID),
        port_guid: Guid(SWITCH_GUID),
        partition_cap: 8,
        device_id: 0xb924,
        ..a_node_info()
    }
}
