//! VLArbitrationTableRecord (IBA 1 §15.2.5.9), 72 bytes: one block of the VLArbitrationTable
//! (§14.2.5.9) of one port:
//!
//! ```text
//! 0  LID(16) | OutputPortNum(8) | BlockNum(8)
//! 4  Reserved(32)
//! 8  VLArbitrationTable block (64 bytes, IBA 1 §14.2.5.9)
//! ```
//!
//! BlockNum is the VLArbitrationTable's AttributeModifier block: 1 and 2 the low-priority
//! entries 0-31 and 32-63, 3 and 4 the high-priority ones. Layout checked against OpenSM
//! `ib_vl_arb_table_record_t` and wireshark's `parse_VLArbitrationTableRecord`.

use crate::describe::{Describe, Describer, Value};
use crate::smp::VlArbTableRepr;
use crate::types::{be16, put16};
use crate::{Error, Result};

mod field {
    pub const LID: usize = 0;
    pub const PORT: usize = 2;
    pub const BLOCK: usize = 3;
    pub const RESERVED: usize = 4;
    pub const TABLE: usize = 8;
    pub const LEN: usize = 72;
}

/// ComponentMask bits of VLArbitrationTableRecord (IBA 1 §15.2.5.9; OpenSM `IB_VLA_COMPMASK_*`).
pub mod vlar_mask {
    /// LID.
    pub const LID: u64 = 1 << 0;
    /// OutputPortNum.
    pub const OUT_PORT: u64 = 1 << 1;
    /// BlockNum.
    pub const BLOCK: u64 = 1 << 2;
}

/// A VLArbitrationTableRecord, every field.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct VlArbRecordRepr {
    /// LID of the port (of switch port 0 for a switch).
    pub lid: u16,
    /// The port whose table this is.
    pub port: u8,
    /// Block, 1 to 4.
    pub block: u8,
    /// The block's 32 entries.
    pub table: VlArbTableRepr,
}

impl VlArbRecordRepr {
    /// Reads the 72 bytes at the start of `data` (reserved ignored).
    pub fn parse(data: &[u8]) -> Result<VlArbRecordRepr> {
        if data.len() < field::LEN {
            return Err(Error::Truncated);
        }
        Ok(VlArbRecordRepr {
            lid: be16(data, field::LID),
            port: data[field::PORT],
            block: data[field::BLOCK],
            table: VlArbTableRepr::parse(&data[field::TABLE..field::LEN])?,
        })
    }

    /// 72 bytes.
    pub const fn buffer_len(&self) -> usize {
        field::LEN
    }

    /// Writes the 72 bytes (reserved zeroed). Panics if `buf` is shorter.
    pub fn emit(&self, buf: &mut [u8]) {
        let buf = &mut buf[..field::LEN];
        put16(buf, field::LID, self.lid);
        buf[field::PORT] = self.port;
        buf[field::BLOCK] = self.block;
        buf[field::RESERVED..field::TABLE].fill(0);
        self.table.emit(&mut buf[field::TABLE..]);
    }
}

impl Describe for VlArbRecordRepr {
    fn describe(&self, d: &mut dyn Describer) {
        d.field("lid", Value::Uint(self.lid.into()));
        d.field("port", Value::Uint(self.port.into()));
        d.field("block", Value::Uint(self.block.into()));
        self.table.describe_as("vl_arbitration_table", d);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::describe::Collect;
    use crate::smp::VlArbEntry;
    use proptest::prelude::*;

    // IBA 1 §15.2.5.9: LID 0, OutputPortNum 2, BlockNum 3, reserved 4..8, the block 8..72
    // (each entry Reserved(4) VL(4) | Weight(8)).
    #[test]
    fn parse_and_emit() {
        let mut b = [0u8; 72];
        b[..4].copy_from_slice(&[0x00, 0x04, 0x01, 0x03]);
        b[8..12].copy_from_slice(&[0x01, 0x20, 0x02, 0x40]);
        b[70..].copy_from_slice(&[0x0f, 0xff]);
        let r = VlArbRecordRepr::parse(&b).unwrap();
        assert_eq!((r.lid, r.port, r.block), (4, 1, 3));
        assert_eq!(
            r.table.entries[1],
            VlArbEntry {
                vl: 2,
                weight: 0x40
            }
        );
        assert_eq!(
            r.table.entries[31],
            VlArbEntry {
                vl: 15,
                weight: 255
            }
        );
        let mut out = [0xeeu8; 72];
        r.emit(&mut out);
        assert_eq!(out, b);
        assert_eq!(VlArbRecordRepr::parse(&b[..71]), Err(Error::Truncated));
        assert_eq!(
            (vlar_mask::LID, vlar_mask::OUT_PORT, vlar_mask::BLOCK),
            (1, 2, 4)
        );
        let mut c = Collect::default();
        r.describe(&mut c);
        assert_eq!(c.get("block"), Some("3"));
    }

    proptest! {
        #[test]
        fn round_trip(data in proptest::collection::vec(any::<u8>(), 72)) {
            let r = VlArbRecordRepr::parse(&data).unwrap();
            let mut out = [0u8; 72];
            r.emit(&mut out);
            prop_assert_eq!(VlArbRecordRepr::parse(&out).unwrap(), r);
            prop_assert_eq!(&out[..4], &data[..4]);
        }
    }
}
