//! NodeRecord (IBA 1 §15.2.5.2), 108 bytes (112 with table padding): a node's NodeInfo and
//! NodeDescription, indexed by the LID of one of its ports:
//!
//! ```text
//! 0  LID(16) | Reserved(16)
//! 4  NodeInfo (40 bytes, IBA 1 §14.2.5.3)
//! 44 NodeDescription (64 bytes, IBA 1 §14.2.5.2)
//! ```
//!
//! Layout checked against OpenSM `ib_node_record_t` and wireshark's `parse_NodeRecord`.

use crate::describe::{Describe, Describer, Value};
use crate::smp::NodeInfoRepr;
use crate::types::{be16, put16};
use crate::{Error, Result};

mod field {
    pub const LID: usize = 0;
    pub const RESERVED: usize = 2;
    pub const NODE_INFO: usize = 4;
    pub const NODE_DESCRIPTION: usize = 44;
    pub const LEN: usize = 108;
}

/// Size of NodeDescription (IBA 1 §14.2.5.2).
pub const NODE_DESCRIPTION_LEN: usize = 64;

/// ComponentMask bits of NodeRecord (IBA 1 §15.2.5.2; OpenSM `IB_NR_COMPMASK_*`): one per field,
/// NodeInfo's fields in order.
pub mod nr_mask {
    /// LID.
    pub const LID: u64 = 1 << 0;
    /// The reserved 16 bits after the LID.
    pub const RESERVED: u64 = 1 << 1;
    /// NodeInfo.BaseVersion.
    pub const BASE_VERSION: u64 = 1 << 2;
    /// NodeInfo.ClassVersion.
    pub const CLASS_VERSION: u64 = 1 << 3;
    /// NodeInfo.NodeType.
    pub const NODE_TYPE: u64 = 1 << 4;
    /// NodeInfo.NumPorts.
    pub const NUM_PORTS: u64 = 1 << 5;
    /// NodeInfo.SystemImageGUID.
    pub const SYSTEM_IMAGE_GUID: u64 = 1 << 6;
    /// NodeInfo.NodeGUID.
    pub const NODE_GUID: u64 = 1 << 7;
    /// NodeInfo.PortGUID.
    pub const PORT_GUID: u64 = 1 << 8;
    /// NodeInfo.PartitionCap.
    pub const PARTITION_CAP: u64 = 1 << 9;
    /// NodeInfo.DeviceID.
    pub const DEVICE_ID: u64 = 1 << 10;
    /// NodeInfo.Revision.
    pub const REVISION: u64 = 1 << 11;
    /// NodeInfo.LocalPortNum.
    pub const LOCAL_PORT_NUM: u64 = 1 << 12;
    /// NodeInfo.VendorID.
    pub const VENDOR_ID: u64 = 1 << 13;
    /// NodeDescription.
    pub const NODE_DESCRIPTION: u64 = 1 << 14;
}

/// A NodeRecord, every field.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NodeRecordRepr {
    /// LID: the base LID of the port the record is for.
    pub lid: u16,
    /// NodeInfo, PortGUID and LocalPortNum being the port's.
    pub node_info: NodeInfoRepr,
    /// NodeDescription: UTF-8 text, NUL-padded.
    pub node_description: [u8; 64],
}

impl NodeRecordRepr {
    /// Reads the 108 bytes at the start of `data` (the reserved field is ignored).
    pub fn parse(data: &[u8]) -> Result<NodeRecordRepr> {
        if data.len() < field::LEN {
            return Err(Error::Truncated);
        }
        let mut node_description = [0u8; NODE_DESCRIPTION_LEN];
        node_description.copy_from_slice(&data[field::NODE_DESCRIPTION..field::LEN]);
        Ok(NodeRecordRepr {
            lid: be16(data, field::LID),
            node_info: NodeInfoRepr::parse(&data[field::NODE_INFO..field::NODE_DESCRIPTION])?,
            node_description,
        })
    }

    /// 108 bytes.
    pub const fn buffer_len(&self) -> usize {
        field::LEN
    }

    /// Writes the 108 bytes (reserved zeroed). Panics if `buf` is shorter.
    pub fn emit(&self, buf: &mut [u8]) {
        let buf = &mut buf[..field::LEN];
        put16(buf, field::LID, self.lid);
        put16(buf, field::RESERVED, 0);
        self.node_info
            .emit(&mut buf[field::NODE_INFO..field::NODE_DESCRIPTION]);
        buf[field::NODE_DESCRIPTION..].copy_from_slice(&self.node_description);
    }

    /// NodeDescription as text: up to the first NUL, invalid UTF-8 replaced.
    pub fn description(&self) -> String {
        let end = self
            .node_description
            .iter()
            .position(|&b| b == 0)
            .unwrap_or(NODE_DESCRIPTION_LEN);
        String::from_utf8_lossy(&self.node_description[..end]).into_owned()
    }
}

/// `text` as a NodeDescription: its first 64 bytes, NUL-padded (IBA 1 §14.2.5.2).
pub fn node_description(text: &str) -> [u8; 64] {
    let mut d = [0u8; NODE_DESCRIPTION_LEN];
    let n = text.len().min(NODE_DESCRIPTION_LEN);
    d[..n].copy_from_slice(&text.as_bytes()[..n]);
    d
}

impl Describe for NodeRecordRepr {
    fn describe(&self, d: &mut dyn Describer) {
        d.field("lid", Value::Uint(self.lid.into()));
        self.node_info.describe_as("node_info", d);
        d.field("node_description", Value::Bytes(&self.node_description));
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::describe::Collect;
    use crate::smp::NodeType;
    use crate::types::Guid;
    use proptest::prelude::*;

    /// The NodeRecord of ibsim's "Hca2" port 1 at LID 3 (node GUID 0x100002, port GUID 0x100003).
    pub(crate) fn hca_bytes() -> [u8; 108] {
        let mut b = [0u8; 108];
        b[0..2].copy_from_slice(&[0x00, 0x03]);
        b[4..8].copy_from_slice(&[1, 1, 1, 1]);
        b[8..16].copy_from_slice(&0x100002u64.to_be_bytes());
        b[16..24].copy_from_slice(&0x100002u64.to_be_bytes());
        b[24..32].copy_from_slice(&0x100003u64.to_be_bytes());
        b[32..36].copy_from_slice(&[0x00, 0x40, 0x00, 0x00]);
        b[40..44].copy_from_slice(&[0x01, 0x00, 0x00, 0x00]);
        b[44..48].copy_from_slice(b"Hca2");
        b
    }

    pub(crate) fn hca() -> NodeRecordRepr {
        NodeRecordRepr {
            lid: 3,
            node_info: NodeInfoRepr {
                base_version: 1,
                class_version: 1,
                node_type: NodeType::ChannelAdapter,
                num_ports: 1,
                system_image_guid: Guid(0x100002),
                node_guid: Guid(0x100002),
                port_guid: Guid(0x100003),
                partition_cap: 64,
                device_id: 0,
                revision: 0,
                local_port_num: 1,
                vendor_id: 0,
            },
            node_description: node_description("Hca2"),
        }
    }

    // IBA 1 §15.2.5.2: LID at 0, NodeInfo at 4, NodeDescription at 44, 108 bytes.
    #[test]
    fn parse_and_emit() {
        assert_eq!(NodeRecordRepr::parse(&hca_bytes()).unwrap(), hca());
        let mut out = [0xffu8; 108];
        hca().emit(&mut out);
        assert_eq!(out, hca_bytes());
        assert_eq!(hca().buffer_len(), 108);
        assert_eq!(NodeRecordRepr::parse(&[0u8; 107]), Err(Error::Truncated));
        // The reserved field is read as nothing and written as zero.
        let mut b = hca_bytes();
        b[2] = 0xaa;
        assert_eq!(NodeRecordRepr::parse(&b).unwrap(), hca());
        assert_eq!(hca().description(), "Hca2");
    }

    // IBA 1 §14.2.5.2: 64 bytes, NUL-padded; longer text is cut.
    #[test]
    fn descriptions() {
        let long = "x".repeat(70);
        assert_eq!(node_description(&long), [b'x'; 64]);
        let r = NodeRecordRepr {
            node_description: [b'y'; 64],
            ..hca()
        };
        assert_eq!(r.description(), "y".repeat(64));
    }

    // IBA 1 §15.2.5.2 / OpenSM `IB_NR_COMPMASK_*`.
    #[test]
    fn component_mask_bits() {
        assert_eq!(nr_mask::LID, 1);
        assert_eq!(nr_mask::NODE_GUID, 0x80);
        assert_eq!(nr_mask::PORT_GUID, 0x100);
        assert_eq!(nr_mask::LOCAL_PORT_NUM, 0x1000);
        assert_eq!(nr_mask::NODE_DESCRIPTION, 0x4000);
    }

    #[test]
    fn describe_every_field() {
        let mut c = Collect::default();
        hca().describe(&mut c);
        assert_eq!(c.fields.len(), 14);
        assert_eq!(c.get("lid"), Some("3"));
    }

    pub(crate) fn arb_node_record() -> impl Strategy<Value = NodeRecordRepr> {
        (
            any::<u16>(),
            crate::smp::node_info_tests::arb_node_info(),
            proptest::collection::vec(any::<u8>(), 64),
        )
            .prop_map(|(lid, node_info, d)| {
                let mut node_description = [0u8; 64];
                node_description.copy_from_slice(&d);
                NodeRecordRepr {
                    lid,
                    node_info,
                    node_description,
                }
            })
    }

    proptest! {
        #[test]
        fn round_trip(r in arb_node_record()) {
            let mut b = [0u8; 108];
            r.emit(&mut b);
            prop_assert_eq!(NodeRecordRepr::parse(&b).unwrap(), r);
        }

        #[test]
        fn parse_never_panics(data in proptest::collection::vec(any::<u8>(), 0..300)) {
            if let Ok(r) = NodeRecordRepr::parse(&data) {
                r.describe(&mut Collect::default());
                let _ = r.description();
            }
        }
    }
}
