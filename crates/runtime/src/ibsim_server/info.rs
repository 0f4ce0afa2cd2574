//! What the server answers to the control messages that describe the attached port: the payloads
//! of `SIM_CTL_GET_NODEINFO`, `GET_PORTINFO`, `GET_VENDOR`, `GET_PKEYS`, `GET_PORT`, `GET_GID`
//! and `GET_GUID`, built from our fabric's HCA (linux-rdma/ibsim `ibsim/ibsim.c`, the
//! `sim_ctl_get_*` functions; docs/DEPLOYED.md "ibsim").
//!
//! umad2sim writes its fake sysfs from these (`umad2sim/umad2sim.c` `dev_sysfs_create`): the node
//! type, node and system image GUIDs from NodeInfo; the port directory from PortInfo's
//! LocalPortNum, its LID, SM LID, SM SL, LMC, state, physical state, rate and capability mask; the
//! GID from PortInfo's GidPrefix and NodeInfo's NodeGUID plus LocalPortNum; the P_Keys from
//! `GET_PKEYS`. libibumad then reads them as the kernel's.

use ipoib_fabric::hw::hca::{Hca, Port, PKEY_TABLE_SIZE};
use ipoib_fabric::PortState as HwState;
use ipoib_wire::sa::Rate;
use ipoib_wire::smp::{NodeInfoRepr, NodeType, PortInfoRepr, PortPhysState, PortState};

/// PortInfo CapabilityMask bit IsSM (IBA 1 §14.2.5.6 Table 146).
pub const CAP_IS_SM: u32 = 1 << 1;
/// PortInfo CapabilityMask bit IsExtendedSpeedsSupported.
const CAP_EXT_SPEEDS: u32 = 1 << 14;
/// The vendor ID our HCAs report (none assigned: 0).
pub const VENDOR_ID: u32 = 0;
/// The device ID our HCAs report.
pub const DEVICE_ID: u16 = 0;

/// NodeInfo of `hca` as read through `port` (IBA 1 §14.2.5.3): a CA whose PortGUID and
/// LocalPortNum are the attached port's.
pub fn node_info(hca: &Hca, port: u8) -> [u8; 64] {
    let port_guid = hca.port(port).map_or(hca.node_guid(), |p| p.guid);
    let repr = NodeInfoRepr {
        base_version: 1,
        class_version: 1,
        node_type: NodeType::ChannelAdapter,
        num_ports: hca.port_count(),
        system_image_guid: hca.node_guid(),
        node_guid: hca.node_guid(),
        port_guid,
        partition_cap: PKEY_TABLE_SIZE,
        device_id: DEVICE_ID,
        revision: 0,
        local_port_num: port,
        vendor_id: VENDOR_ID,
    };
    let mut b = [0u8; 64];
    repr.emit(&mut b);
    b
}

/// (LinkWidthActive, LinkSpeedActive, LinkSpeedExtActive) of `rate` (IBA 1 §14.2.5.6: width 1X=1,
/// 4X=2, 8X=4, 12X=8; speed SDR=1, DDR=2, QDR=4; extended FDR=1, EDR=2).
fn width_speed(rate: Rate) -> (u8, u8, u8) {
    match rate {
        Rate::Gbps2_5 => (1, 1, 0),
        Rate::Gbps5 => (1, 2, 0),
        Rate::Gbps10 => (2, 1, 0),
        Rate::Gbps20 => (2, 2, 0),
        Rate::Gbps30 => (8, 1, 0),
        Rate::Gbps40 => (2, 4, 0),
        Rate::Gbps60 => (8, 2, 0),
        Rate::Gbps80 => (4, 4, 0),
        Rate::Gbps120 => (8, 4, 0),
        Rate::Gbps14 => (1, 4, 1),
        Rate::Gbps56 => (2, 4, 1),
        Rate::Gbps112 => (4, 4, 1),
        Rate::Gbps168 => (8, 4, 1),
        Rate::Gbps25 => (1, 4, 2),
        Rate::Gbps100 => (2, 4, 2),
        _ => (2, 1, 0),
    }
}

/// PortInfo of `p` (IBA 1 §14.2.5.6) with `capability_mask` (IsSM when an SM runs behind it).
pub fn port_info(p: &Port, capability_mask: u32) -> [u8; 64] {
    let (width, speed, ext) = width_speed(p.rate);
    let mut cap = capability_mask;
    if ext != 0 {
        cap |= CAP_EXT_SPEEDS;
    }
    let repr = PortInfoRepr {
        gid_prefix: p.subnet_prefix,
        lid: p.lid,
        master_sm_lid: p.sm_lid,
        capability_mask: cap,
        local_port_num: p.num,
        link_width_enabled: width,
        link_width_supported: width,
        link_width_active: width,
        link_speed_supported: speed,
        port_state: match p.state {
            HwState::Down => PortState::Down,
            HwState::Init => PortState::Init,
            HwState::Armed => PortState::Armed,
            HwState::Active => PortState::Active,
        },
        port_phys_state: if p.phys_up {
            PortPhysState::LinkUp
        } else {
            PortPhysState::Polling
        },
        lmc: p.lmc,
        link_speed_active: speed,
        link_speed_enabled: speed,
        neighbor_mtu: p.mtu,
        master_sm_sl: p.sm_sl,
        vl_cap: 1,
        mtu_cap: p.mtu,
        operational_vls: 1,
        link_speed_ext_active: ext,
        link_speed_ext_supported: ext,
        link_speed_ext_enabled: ext,
        ..PortInfoRepr::default()
    };
    let mut b = [0u8; 64];
    repr.emit(&mut b);
    b
}

/// `struct sim_vendor` (native byte order, as the C struct on this host): vendor_id,
/// vendor_part_id, hw_ver as `u32`, 4 bytes of padding, fw_ver as `u64` (ibsim answers 1).
pub fn vendor() -> [u8; 64] {
    let mut b = [0u8; 64];
    b[0..4].copy_from_slice(&VENDOR_ID.to_ne_bytes());
    b[4..8].copy_from_slice(&u32::from(DEVICE_ID).to_ne_bytes());
    b[8..12].copy_from_slice(&0u32.to_ne_bytes());
    b[16..24].copy_from_slice(&1u64.to_ne_bytes());
    b
}

/// The first 32 entries of the P_Key table, each big-endian (ibsim keeps the table as the
/// PKeyTable attribute carries it; umad2sim prints `ntohs` of each), zeros past the end.
pub fn pkeys(p: &Port) -> [u8; 64] {
    let mut b = [0u8; 64];
    for (i, k) in p.pkeys.iter().take(32).enumerate() {
        b[2 * i..2 * i + 2].copy_from_slice(&k.0.to_be_bytes());
    }
    b
}

/// `struct sim_port` (native order): the LID as `u16`, the port state (IBA 1 Table 146 codes).
pub fn sim_port(p: &Port) -> [u8; 64] {
    let mut b = [0u8; 64];
    b[0..2].copy_from_slice(&p.lid.to_ne_bytes());
    b[2] = u8::from(match p.state {
        HwState::Down => PortState::Down,
        HwState::Init => PortState::Init,
        HwState::Armed => PortState::Armed,
        HwState::Active => PortState::Active,
    });
    b
}

/// The port GID in network order (ibsim answers the GID prefix and the node GUID in host order;
/// we answer the port's real GID; umad2sim does not ask).
pub fn gid(p: &Port) -> [u8; 64] {
    let mut b = [0u8; 64];
    b[..16].copy_from_slice(&p.port_gid().0);
    b
}

/// The node GUID in host order, as ibsim `memcpy`s its `uint64_t`.
pub fn guid(hca: &Hca) -> [u8; 64] {
    let mut b = [0u8; 64];
    b[..8].copy_from_slice(&hca.node_guid().0.to_ne_bytes());
    b
}

#[cfg(test)]
mod tests {
    use super::*;
    use ipoib_wire::Guid;

    /// IBA 1 §14.2.5.6: the PortInfo fields umad2sim reads land where libibmad's fields are.
    #[test]
    fn port_info_fields() {
        let mut p = Port::new(2, Guid(0x1002));
        p.lid = 7;
        p.sm_lid = 1;
        p.lmc = 0;
        p.state = HwState::Active;
        p.phys_up = true;
        let b = port_info(&p, CAP_IS_SM);
        let r = PortInfoRepr::parse(&b).unwrap();
        assert_eq!((r.lid, r.master_sm_lid, r.local_port_num), (7, 1, 2));
        assert_eq!(r.port_state, PortState::Active);
        assert_eq!(r.port_phys_state, PortPhysState::LinkUp);
        assert_eq!(r.capability_mask & CAP_IS_SM, CAP_IS_SM);
        // LID at byte 16, master SM LID at 18 (docs/DEPLOYED.md "ibsim").
        assert_eq!(&b[16..20], &[0, 7, 0, 1]);
    }

    #[test]
    fn node_info_and_pkeys() {
        let hca = Hca::new(Guid(0x10_0000), 2);
        let r = NodeInfoRepr::parse(&node_info(&hca, 2)).unwrap();
        assert_eq!(r.node_type, NodeType::ChannelAdapter);
        assert_eq!((r.num_ports, r.local_port_num), (2, 2));
        assert_eq!(r.node_guid, Guid(0x10_0000));
        assert_eq!(r.port_guid, hca.port(2).unwrap().guid);
        let p = hca.port(1).unwrap();
        let k = pkeys(p);
        assert_eq!(&k[0..2], &p.pkeys[0].0.to_be_bytes());
    }
}
