//! NodeInfo (IBA 1 §14.2.5.3), 40 bytes of the 64-byte SMP data, read-only (SubnGet):
//!
//! ```text
//! 0  BaseVersion | ClassVersion | NodeType | NumPorts
//! 4  SystemImageGUID(64)
//! 12 NodeGUID(64)
//! 20 PortGUID(64)
//! 28 PartitionCap(16)        | DeviceID(16)
//! 32 Revision(32)
//! 36 LocalPortNum(8)         | VendorID(24)
//! ```
//!
//! Layout checked against OpenSM `ib_node_info_t` and wireshark's `parse_NodeInfo`.

use crate::describe::{Describe, Describer, Value};
use crate::types::{be16, be24, be32, put16, put24, put32, Guid};
use crate::Result;

mod field {
    pub const BASE_VERSION: usize = 0;
    pub const CLASS_VERSION: usize = 1;
    pub const NODE_TYPE: usize = 2;
    pub const NUM_PORTS: usize = 3;
    pub const SYSTEM_IMAGE_GUID: usize = 4;
    pub const NODE_GUID: usize = 12;
    pub const PORT_GUID: usize = 20;
    pub const PARTITION_CAP: usize = 28;
    pub const DEVICE_ID: usize = 30;
    pub const REVISION: usize = 32;
    pub const LOCAL_PORT_NUM: usize = 36;
    pub const VENDOR_ID: usize = 37;
    pub const LEN: usize = 40;
}

code_enum! {
    /// NodeType (IBA 1 §14.2.5.3). Unknown values are kept.
    pub enum NodeType(u8) {
        /// Channel adapter.
        ChannelAdapter = 1 => "Channel Adapter",
        /// Switch.
        Switch = 2 => "Switch",
        /// Router.
        Router = 3 => "Router",
        /// A value this crate has no name for, kept as received.
        Unknown(_) => "Unknown",
    }
}

fixed_view! {
    /// A zero-copy view of a NodeInfo attribute.
    #[derive(Debug, Clone)]
    pub struct NodeInfo;
    /// `Err(Truncated)` if shorter than 40 bytes.
    fn check_len(min = field::LEN);
    /// Size of the attribute (the rest of the SMP data is reserved).
    pub const LEN;
    fn b;
}

impl<T: AsRef<[u8]>> NodeInfo<T> {
    /// BaseVersion: the MAD base version the node supports.
    pub fn base_version(&self) -> u8 {
        self.b()[field::BASE_VERSION]
    }
    /// ClassVersion: the SMP class version the node supports.
    pub fn class_version(&self) -> u8 {
        self.b()[field::CLASS_VERSION]
    }
    /// NodeType.
    pub fn node_type(&self) -> NodeType {
        NodeType::from(self.b()[field::NODE_TYPE])
    }
    /// NumPorts: physical ports of the node.
    pub fn num_ports(&self) -> u8 {
        self.b()[field::NUM_PORTS]
    }
    /// SystemImageGUID.
    pub fn system_image_guid(&self) -> Guid {
        Guid::from_bytes(&self.b()[field::SYSTEM_IMAGE_GUID..])
    }
    /// NodeGUID.
    pub fn node_guid(&self) -> Guid {
        Guid::from_bytes(&self.b()[field::NODE_GUID..])
    }
    /// PortGUID of the port the SMP was received on.
    pub fn port_guid(&self) -> Guid {
        Guid::from_bytes(&self.b()[field::PORT_GUID..])
    }
    /// PartitionCap: P_Key table entries of a CA/router port or of switch port 0.
    pub fn partition_cap(&self) -> u16 {
        be16(self.b(), field::PARTITION_CAP)
    }
    /// DeviceID.
    pub fn device_id(&self) -> u16 {
        be16(self.b(), field::DEVICE_ID)
    }
    /// Revision.
    pub fn revision(&self) -> u32 {
        be32(self.b(), field::REVISION)
    }
    /// LocalPortNum: the port the SMP was received on.
    pub fn local_port_num(&self) -> u8 {
        self.b()[field::LOCAL_PORT_NUM]
    }
    /// VendorID (24 bits, an IEEE OUI).
    pub fn vendor_id(&self) -> u32 {
        be24(self.b(), field::VENDOR_ID)
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> NodeInfo<T> {
    fn m(&mut self) -> &mut [u8] {
        self.buffer.as_mut()
    }
    /// Sets BaseVersion.
    pub fn set_base_version(&mut self, v: u8) {
        self.m()[field::BASE_VERSION] = v;
    }
    /// Sets ClassVersion.
    pub fn set_class_version(&mut self, v: u8) {
        self.m()[field::CLASS_VERSION] = v;
    }
    /// Sets NodeType.
    pub fn set_node_type(&mut self, v: NodeType) {
        self.m()[field::NODE_TYPE] = v.into();
    }
    /// Sets NumPorts.
    pub fn set_num_ports(&mut self, v: u8) {
        self.m()[field::NUM_PORTS] = v;
    }
    /// Sets SystemImageGUID.
    pub fn set_system_image_guid(&mut self, v: Guid) {
        self.m()[field::SYSTEM_IMAGE_GUID..field::NODE_GUID].copy_from_slice(&v.to_bytes());
    }
    /// Sets NodeGUID.
    pub fn set_node_guid(&mut self, v: Guid) {
        self.m()[field::NODE_GUID..field::PORT_GUID].copy_from_slice(&v.to_bytes());
    }
    /// Sets PortGUID.
    pub fn set_port_guid(&mut self, v: Guid) {
        self.m()[field::PORT_GUID..field::PARTITION_CAP].copy_from_slice(&v.to_bytes());
    }
    /// Sets PartitionCap.
    pub fn set_partition_cap(&mut self, v: u16) {
        put16(self.m(), field::PARTITION_CAP, v);
    }
    /// Sets DeviceID.
    pub fn set_device_id(&mut self, v: u16) {
        put16(self.m(), field::DEVICE_ID, v);
    }
    /// Sets Revision.
    pub fn set_revision(&mut self, v: u32) {
        put32(self.m(), field::REVISION, v);
    }
    /// Sets LocalPortNum.
    pub fn set_local_port_num(&mut self, v: u8) {
        self.m()[field::LOCAL_PORT_NUM] = v;
    }
    /// Sets VendorID (low 24 bits).
    pub fn set_vendor_id(&mut self, v: u32) {
        put24(self.m(), field::VENDOR_ID, v);
    }
}

/// A NodeInfo, every field (IBA 1 §14.2.5.3).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct NodeInfoRepr {
    /// BaseVersion.
    pub base_version: u8,
    /// ClassVersion.
    pub class_version: u8,
    /// NodeType.
    pub node_type: NodeType,
    /// NumPorts.
    pub num_ports: u8,
    /// SystemImageGUID.
    pub system_image_guid: Guid,
    /// NodeGUID.
    pub node_guid: Guid,
    /// PortGUID.
    pub port_guid: Guid,
    /// PartitionCap.
    pub partition_cap: u16,
    /// DeviceID.
    pub device_id: u16,
    /// Revision.
    pub revision: u32,
    /// LocalPortNum.
    pub local_port_num: u8,
    /// VendorID (24 bits).
    pub vendor_id: u32,
}

impl NodeInfoRepr {
    /// Reads every field from the first 40 bytes of `data`.
    pub fn parse(data: &[u8]) -> Result<NodeInfoRepr> {
        let v = NodeInfo::new_checked(data)?;
        Ok(NodeInfoRepr {
            base_version: v.base_version(),
            class_version: v.class_version(),
            node_type: v.node_type(),
            num_ports: v.num_ports(),
            system_image_guid: v.system_image_guid(),
            node_guid: v.node_guid(),
            port_guid: v.port_guid(),
            partition_cap: v.partition_cap(),
            device_id: v.device_id(),
            revision: v.revision(),
            local_port_num: v.local_port_num(),
            vendor_id: v.vendor_id(),
        })
    }

    /// 40 bytes.
    pub const fn buffer_len(&self) -> usize {
        field::LEN
    }

    /// Writes the 40 bytes (VendorID masked to 24 bits). Panics if `buf` is shorter.
    pub fn emit(&self, buf: &mut [u8]) {
        let mut v = NodeInfo::new_unchecked(&mut buf[..field::LEN]);
        v.set_base_version(self.base_version);
        v.set_class_version(self.class_version);
        v.set_node_type(self.node_type);
        v.set_num_ports(self.num_ports);
        v.set_system_image_guid(self.system_image_guid);
        v.set_node_guid(self.node_guid);
        v.set_port_guid(self.port_guid);
        v.set_partition_cap(self.partition_cap);
        v.set_device_id(self.device_id);
        v.set_revision(self.revision);
        v.set_local_port_num(self.local_port_num);
        v.set_vendor_id(self.vendor_id);
    }
}

impl Describe for NodeInfoRepr {
    fn describe(&self, d: &mut dyn Describer) {
        d.field("base_version", Value::Uint(self.base_version.into()));
        d.field("class_version", Value::Uint(self.class_version.into()));
        d.field(
            "node_type",
            Value::Named(u8::from(self.node_type).into(), self.node_type.name()),
        );
        d.field("num_ports", Value::Uint(self.num_ports.into()));
        d.field("system_image_guid", Value::Guid(self.system_image_guid));
        d.field("node_guid", Value::Guid(self.node_guid));
        d.field("port_guid", Value::Guid(self.port_guid));
        d.field("partition_cap", Value::Uint(self.partition_cap.into()));
        d.field("device_id", Value::Hex(self.device_id.into(), 4));
        d.field("revision", Value::Hex(self.revision.into(), 8));
        d.field("local_port_num", Value::Uint(self.local_port_num.into()));
        d.field("vendor_id", Value::Hex(self.vendor_id.into(), 6));
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::describe::Collect;
    use crate::Error;
    use proptest::prelude::*;

    /// A Mellanox ConnectX HCA port 1, as `smpquery nodeinfo` shows one: CA, one port,
    /// system image GUID = node GUID, port GUID = node GUID + 1, 128 P_Keys, device 0x1003,
    /// revision 1, vendor 0x0002c9.
    fn hca_bytes() -> [u8; 40] {
        let mut b = [0u8; 40];
        b[0..4].copy_from_slice(&[1, 1, 1, 1]);
        b[4..12].copy_from_slice(&[0x00, 0x02, 0xc9, 0x03, 0x00, 0x00, 0x12, 0x34]);
        b[12..20].copy_from_slice(&[0x00, 0x02, 0xc9, 0x03, 0x00, 0x00, 0x12, 0x34]);
        b[20..28].copy_from_slice(&[0x00, 0x02, 0xc9, 0x03, 0x00, 0x00, 0x12, 0x35]);
        b[28..32].copy_from_slice(&[0x00, 0x80, 0x10, 0x03]);
        b[32..36].copy_from_slice(&[0x00, 0x00, 0x00, 0x01]);
        b[36..40].copy_from_slice(&[0x01, 0x00, 0x02, 0xc9]);
        b
    }

    fn hca() -> NodeInfoRepr {
        NodeInfoRepr {
            base_version: 1,
            class_version: 1,
            node_type: NodeType::ChannelAdapter,
            num_ports: 1,
            system_image_guid: Guid(0x0002_c903_0000_1234),
            node_guid: Guid(0x0002_c903_0000_1234),
            port_guid: Guid(0x0002_c903_0000_1235),
            partition_cap: 128,
            device_id: 0x1003,
            revision: 1,
            local_port_num: 1,
            vendor_id: 0x0002c9,
        }
    }

    // IBA 1 §14.2.5.3: NodeType at 2, NumPorts at 3, SystemImageGUID at 4, NodeGUID at 12,
    // PortGUID at 20, PartitionCap at 28, LocalPortNum at 36, VendorID at 37.
    #[test]
    fn deconstruct() {
        let b = hca_bytes();
        let v = NodeInfo::new_checked(&b[..]).unwrap();
        assert_eq!((v.base_version(), v.class_version()), (1, 1));
        assert_eq!(v.node_type(), NodeType::ChannelAdapter);
        assert_eq!(v.num_ports(), 1);
        assert_eq!(v.system_image_guid(), Guid(0x0002_c903_0000_1234));
        assert_eq!(v.node_guid(), Guid(0x0002_c903_0000_1234));
        assert_eq!(v.port_guid(), Guid(0x0002_c903_0000_1235));
        assert_eq!(v.partition_cap(), 128);
        assert_eq!(v.device_id(), 0x1003);
        assert_eq!(v.revision(), 1);
        assert_eq!(v.local_port_num(), 1);
        assert_eq!(v.vendor_id(), 0x0002c9);
    }

    // IBA 1 §14.2.5.3
    #[test]
    fn construct() {
        let mut b = [0xffu8; 40];
        let mut v = NodeInfo::new_unchecked(&mut b[..]);
        v.set_base_version(1);
        v.set_class_version(1);
        v.set_node_type(NodeType::ChannelAdapter);
        v.set_num_ports(1);
        v.set_system_image_guid(Guid(0x0002_c903_0000_1234));
        v.set_node_guid(Guid(0x0002_c903_0000_1234));
        v.set_port_guid(Guid(0x0002_c903_0000_1235));
        v.set_partition_cap(128);
        v.set_device_id(0x1003);
        v.set_revision(1);
        v.set_local_port_num(1);
        v.set_vendor_id(0x0002c9);
        assert_eq!(b, hca_bytes());
    }

    // IBA 1 §14.2.5.3
    #[test]
    fn parse_and_emit() {
        assert_eq!(NodeInfoRepr::parse(&hca_bytes()).unwrap(), hca());
        let mut out = [0xffu8; 40];
        hca().emit(&mut out);
        assert_eq!(out, hca_bytes());
        assert_eq!(NodeInfoRepr::parse(&[0u8; 39]), Err(Error::Truncated));
        // The 64-byte SMP data parses too; the reserved rest is not NodeInfo's.
        let mut smp = [0xeeu8; 64];
        smp[..40].copy_from_slice(&hca_bytes());
        assert_eq!(NodeInfoRepr::parse(&smp).unwrap(), hca());
        // Unknown node types survive.
        let mut b = hca_bytes();
        b[2] = 9;
        let r = NodeInfoRepr::parse(&b).unwrap();
        assert_eq!(r.node_type, NodeType::Unknown(9));
        let mut out = [0u8; 40];
        r.emit(&mut out);
        assert_eq!(out, b);
    }

    // IBA 1 §14.2.5.3: NodeType 2, NumPorts 3, SystemImageGUID 4, NodeGUID 12, PortGUID 20; the
    // bytes ibsim answers `SIM_CTL_GET_NODEINFO` with for a CA (its PortGUID is the node GUID).
    #[test]
    fn ibsim_answer_fields() {
        let mut b = [0u8; 64];
        b[2] = 1;
        b[3] = 1;
        b[12..20].copy_from_slice(&0x100002u64.to_be_bytes());
        b[20..28].copy_from_slice(&0x100002u64.to_be_bytes());
        b[36] = 1;
        let n = NodeInfoRepr::parse(&b).unwrap();
        assert_eq!(
            (n.node_type, n.num_ports, n.local_port_num),
            (NodeType::ChannelAdapter, 1, 1)
        );
        assert_eq!((n.node_guid, n.port_guid), (Guid(0x100002), Guid(0x100002)));
        assert_eq!(NodeInfoRepr::parse(&b[..39]), Err(Error::Truncated));
    }

    #[test]
    fn describe_every_field() {
        let mut c = Collect::default();
        hca().describe(&mut c);
        assert_eq!(c.fields.len(), 12);
        assert_eq!(c.get("node_type"), Some("Channel Adapter (0x1)"));
        assert_eq!(c.get("node_guid"), Some("0x0002c90300001234"));
        assert_eq!(c.get("port_guid"), Some("0x0002c90300001235"));
        assert_eq!(c.get("vendor_id"), Some("0x0002c9"));
        assert_eq!(c.get("local_port_num"), Some("1"));
    }

    pub(crate) fn arb_node_info() -> impl Strategy<Value = NodeInfoRepr> {
        (
            (any::<u8>(), any::<u8>(), any::<u8>(), any::<u8>()),
            (any::<u64>(), any::<u64>(), any::<u64>()),
            (any::<u16>(), any::<u16>(), any::<u32>(), any::<u8>()),
            0u32..1 << 24,
        )
            .prop_map(|((bv, cv, nt, np), (sg, ng, pg), (pc, di, rev, lp), vid)| {
                NodeInfoRepr {
                    base_version: bv,
                    class_version: cv,
                    node_type: nt.into(),
                    num_ports: np,
                    system_image_guid: Guid(sg),
                    node_guid: Guid(ng),
                    port_guid: Guid(pg),
                    partition_cap: pc,
                    device_id: di,
                    revision: rev,
                    local_port_num: lp,
                    vendor_id: vid,
                }
            })
    }

    proptest! {
        #[test]
        fn round_trip(r in arb_node_info()) {
            let mut b = [0u8; 40];
            r.emit(&mut b);
            prop_assert_eq!(NodeInfoRepr::parse(&b).unwrap(), r);
        }

        #[test]
        fn parse_never_panics(data in proptest::collection::vec(any::<u8>(), 0..300)) {
            if let Ok(r) = NodeInfoRepr::parse(&data) {
                r.describe(&mut Collect::default());
            }
        }
    }
}
