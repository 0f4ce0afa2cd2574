//! What the server answers to the control messages that describe the attached port: the payloads
//! of `SIM_CTL_GET_NODEINFO`, `GET_PORTINFO`, `GET_VENDOR`, `GET_PKEYS`, `GET_PORT`, `GET_GID`
//! and `GET_GUID`, built from our fabric's HCA (linux-rdma/ibsim `ibsim/ibsim.c`, the
//! `sim_ctl_get_*` functions; docs/IBSIM.md "ibsim").
//!
//! umad2sim writes its fake sysfs from these (`umad2sim/umad2sim.c` `dev_sysfs_create`): the node
//! type, node and system image GUIDs from NodeInfo; the port directory from PortInfo's
//! LocalPortNum, its LID, SM LID, SM SL, LMC, state, physical state, rate and capability mask; the
//! GID from PortInfo's GidPrefix and NodeInfo's NodeGUID plus LocalPortNum; the P_Keys from
//! `GET_PKEYS`. libibumad then reads them as the kernel's.

use ipoib_fabric::hw::hca::{Hca, Port, PKEY_TABLE_SIZE};
use ipoib_fabric::PortState as HwState;
use ipoib_wire::smp::{NodeInfoRepr, NodeType, PortState};

/// PortInfo CapabilityMask bit IsSM (IBA 1 §14.2.5.6 Table 146).
pub const CAP_IS_SM: u32 = 1 << 1;
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

/// PortInfo of port `num` of `hca` (IBA 1 §14.2.5.6): what the HCA's SMA answers a
/// SubnGet(PortInfo) with ([`Hca::port_info`], the one source the SM and the SA read too), with
/// `capability_mask` added (IsSM when an SM runs behind this client); `None` for no such port.
pub fn port_info(hca: &Hca, num: u8, capability_mask: u32) -> Option<[u8; 64]> {
    let mut repr = hca.port_info(num)?;
    repr.capability_mask |= capability_mask;
    let mut b = [0u8; 64];
    repr.emit(&mut b);
    Some(b)
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
    use ipoib_wire::smp::PortInfoRepr;
    use ipoib_wire::Guid;

    /// GET_PORTINFO answers the SMA's PortInfo of the port, IsSM added for an SM's client; no
    /// answer for a port the HCA does not have.
    #[test]
    fn port_info_is_the_smas() {
        let hca = Hca::new(Guid(0x1000), 2);
        assert!(port_info(&hca, 3, 0).is_none());
        let sma = hca.port_info(2).unwrap();
        assert_eq!(sma.capability_mask & CAP_IS_SM, 0);
        let r = PortInfoRepr::parse(&port_info(&hca, 2, CAP_IS_SM).unwrap()).unwrap();
        assert_eq!(r.capability_mask, sma.capability_mask | CAP_IS_SM);
        assert_eq!(r.local_port_num, 2);
        assert_eq!(r.guid_cap, 1);
        assert_eq!(
            PortInfoRepr::parse(&port_info(&hca, 2, 0).unwrap()).unwrap(),
            sma
        );
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
