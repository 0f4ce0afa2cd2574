//! SLtoVLMappingTableRecord (IBA 1 §15.2.5.4), 16 bytes: the SLtoVLMappingTable (§14.2.5.8) of
//! one port, on a switch of one (input port, output port) pair:
//!
//! ```text
//! 0  LID(16) | InputPortNum(8) | OutputPortNum(8)
//! 4  Reserved(32)
//! 8  SLtoVLMappingTable (8 bytes, IBA 1 §14.2.5.8)
//! ```
//!
//! Layout checked against OpenSM `ib_slvl_table_record_t` and wireshark's
//! `parse_SLtoVLMappingTableRecord`.

use crate::describe::{Describe, Describer, Value};
use crate::smp::SlToVlTableRepr;
use crate::types::{be16, put16};
use crate::{Error, Result};

mod field {
    pub const LID: usize = 0;
    pub const IN_PORT: usize = 2;
    pub const OUT_PORT: usize = 3;
    pub const RESERVED: usize = 4;
    pub const TABLE: usize = 8;
    pub const LEN: usize = 16;
}

/// ComponentMask bits of SLtoVLMappingTableRecord (IBA 1 §15.2.5.4; OpenSM
/// `IB_SLVL_COMPMASK_*`).
pub mod slvlr_mask {
    /// LID.
    pub const LID: u64 = 1 << 0;
    /// InputPortNum.
    pub const IN_PORT: u64 = 1 << 1;
    /// OutputPortNum.
    pub const OUT_PORT: u64 = 1 << 2;
}

/// An SLtoVLMappingTableRecord, every field.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SlToVlRecordRepr {
    /// LID of the port (of switch port 0 for a switch).
    pub lid: u16,
    /// Input port of the table (switches only; 0 on a CA).
    pub in_port: u8,
    /// Output port of the table (switches only; 0 on a CA).
    pub out_port: u8,
    /// The table.
    pub table: SlToVlTableRepr,
}

impl SlToVlRecordRepr {
    /// Reads the 16 bytes at the start of `data` (reserved ignored).
    pub fn parse(data: &[u8]) -> Result<SlToVlRecordRepr> {
        if data.len() < field::LEN {
            return Err(Error::Truncated);
        }
        Ok(SlToVlRecordRepr {
            lid: be16(data, field::LID),
            in_port: data[field::IN_PORT],
            out_port: data[field::OUT_PORT],
            table: SlToVlTableRepr::parse(&data[field::TABLE..field::LEN])?,
        })
    }

    /// 16 bytes.
    pub const fn buffer_len(&self) -> usize {
        field::LEN
    }

    /// Writes the 16 bytes (reserved zeroed). Panics if `buf` is shorter.
    pub fn emit(&self, buf: &mut [u8]) {
        let buf = &mut buf[..field::LEN];
        put16(buf, field::LID, self.lid);
        buf[field::IN_PORT] = self.in_port;
        buf[field::OUT_PORT] = self.out_port;
        buf[field::RESERVED..field::TABLE].fill(0);
        self.table.emit(&mut buf[field::TABLE..]);
    }
}

impl Describe for SlToVlRecordRepr {
    fn describe(&self, d: &mut dyn Describer) {
        d.field("lid", Value::Uint(self.lid.into()));
        d.field("in_port", Value::Uint(self.in_port.into()));
        d.field("out_port", Value::Uint(self.out_port.into()));
        self.table.describe_as("sl_to_vl_mapping_table", d);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::describe::Collect;
    use proptest::prelude::*;

    // IBA 1 §15.2.5.4: LID 0, InputPortNum 2, OutputPortNum 3, reserved 4..8, the table 8..16
    // (SL 0 in the high nibble of byte 8).
    #[test]
    fn parse_and_emit() {
        let mut b = [0u8; 16];
        b[..4].copy_from_slice(&[0x00, 0x02, 0x03, 0x01]);
        b[8..].copy_from_slice(&[0x01, 0x23, 0x45, 0x67, 0x89, 0xab, 0xcd, 0xef]);
        let r = SlToVlRecordRepr::parse(&b).unwrap();
        assert_eq!((r.lid, r.in_port, r.out_port), (2, 3, 1));
        assert_eq!(
            (r.table.vls[0], r.table.vls[1], r.table.vls[15]),
            (0, 1, 15)
        );
        let mut out = [0xeeu8; 16];
        r.emit(&mut out);
        assert_eq!(out, b);
        assert_eq!(SlToVlRecordRepr::parse(&b[..15]), Err(Error::Truncated));
        assert_eq!(
            (slvlr_mask::LID, slvlr_mask::IN_PORT, slvlr_mask::OUT_PORT),
            (1, 2, 4)
        );
        let mut c = Collect::default();
        r.describe(&mut c);
        assert_eq!(c.get("out_port"), Some("1"));
    }

    proptest! {
        #[test]
        fn round_trip(data in proptest::collection::vec(any::<u8>(), 16)) {
            let r = SlToVlRecordRepr::parse(&data).unwrap();
            let mut out = [0u8; 16];
            r.emit(&mut out);
            prop_assert_eq!(SlToVlRecordRepr::parse(&out).unwrap(), r);
            prop_assert_eq!(&out[..4], &data[..4]);
            prop_assert_eq!(&out[8..], &data[8..]);
        }
    }
}
