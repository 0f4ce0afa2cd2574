//! LinearForwardingTableRecord (IBA 1 §15.2.5.6), 72 bytes: one 64-LID block of a switch's linear
//! forwarding table, indexed by the switch's LID:
//!
//! ```text
//! 0  LID(16) | BlockNum(16)
//! 4  Reserved(32)
//! 8  LinearForwardingTable block (64 port numbers, IBA 1 §14.2.5.10)
//! ```
//!
//! Layout checked against OpenSM `ib_lft_record_t` (BlockNum in network order, `cl_hton16`) and
//! wireshark's `parse_LinearForwardingTableRecord`.

use crate::describe::{Describe, Describer, Value};
use crate::smp::LFT_BLOCK_LIDS;
use crate::types::{be16, put16};
use crate::{Error, Result};

mod field {
    pub const LID: usize = 0;
    pub const BLOCK: usize = 2;
    pub const RESERVED: usize = 4;
    pub const TABLE: usize = 8;
    pub const LEN: usize = 72;
}

/// ComponentMask bits of LinearForwardingTableRecord (IBA 1 §15.2.5.6; OpenSM
/// `IB_LFTR_COMPMASK_*`).
pub mod lftr_mask {
    /// LID.
    pub const LID: u64 = 1 << 0;
    /// BlockNum.
    pub const BLOCK: u64 = 1 << 1;
}

/// A LinearForwardingTableRecord, every field.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LftRecordRepr {
    /// LID of the switch (its port 0).
    pub lid: u16,
    /// BlockNum: LIDs `64 × block ..= 64 × block + 63`.
    pub block: u16,
    /// The output port of each of the block's LIDs.
    pub ports: [u8; 64],
}

impl LftRecordRepr {
    /// Reads the 72 bytes at the start of `data` (the reserved field is ignored).
    pub fn parse(data: &[u8]) -> Result<LftRecordRepr> {
        if data.len() < field::LEN {
            return Err(Error::Truncated);
        }
        let mut ports = [0u8; LFT_BLOCK_LIDS];
        ports.copy_from_slice(&data[field::TABLE..field::LEN]);
        Ok(LftRecordRepr {
            lid: be16(data, field::LID),
            block: be16(data, field::BLOCK),
            ports,
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
        put16(buf, field::BLOCK, self.block);
        buf[field::RESERVED..field::TABLE].fill(0);
        buf[field::TABLE..].copy_from_slice(&self.ports);
    }
}

impl Describe for LftRecordRepr {
    fn describe(&self, d: &mut dyn Describer) {
        d.field("lid", Value::Uint(self.lid.into()));
        d.field("block", Value::Uint(self.block.into()));
        d.field("ports", Value::Bytes(&self.ports));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::describe::Collect;
    use proptest::prelude::*;

    // IBA 1 §15.2.5.6: LID 0, BlockNum 2, reserved 4..8, 64 ports from 8.
    #[test]
    fn parse_and_emit() {
        let mut b = [0u8; 72];
        b[0..2].copy_from_slice(&[0x00, 0x02]);
        b[2..4].copy_from_slice(&[0x00, 0x01]);
        b[8] = 255;
        b[9] = 3;
        let mut ports = [0u8; 64];
        ports[0] = 255;
        ports[1] = 3;
        let r = LftRecordRepr {
            lid: 2,
            block: 1,
            ports,
        };
        assert_eq!(LftRecordRepr::parse(&b).unwrap(), r);
        let mut out = [0xeeu8; 72];
        r.emit(&mut out);
        assert_eq!(out, b);
        assert_eq!(LftRecordRepr::parse(&b[..71]), Err(Error::Truncated));
        assert_eq!((lftr_mask::LID, lftr_mask::BLOCK), (1, 2));
        let mut c = Collect::default();
        r.describe(&mut c);
        assert_eq!(c.get("block"), Some("1"));
    }

    proptest! {
        #[test]
        fn round_trip(data in proptest::collection::vec(any::<u8>(), 72)) {
            let r = LftRecordRepr::parse(&data).unwrap();
            let mut out = [0u8; 72];
            r.emit(&mut out);
            prop_assert_eq!(LftRecordRepr::parse(&out).unwrap(), r);
            prop_assert_eq!(&out[8..], &data[8..]);
        }
    }
}
