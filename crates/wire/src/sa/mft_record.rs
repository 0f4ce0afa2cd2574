//! MulticastForwardingTableRecord (IBA 1 §15.2.5.8), 72 bytes: one block of the
//! MulticastForwardingTable (§14.2.5.12) of one switch, one position:
//!
//! ```text
//! 0  LID(16) | Position(4) | Reserved(3) | BlockNum(9)
//! 4  Reserved(32)
//! 8  MulticastForwardingTable block (64 bytes: 32 PortMasks, IBA 1 §14.2.5.12)
//! ```
//!
//! BlockNum names MLIDs `0xC000 + 32 × BlockNum ..` and Position the ports `16 × Position ..`
//! of the PortMasks, as in the SMP's AttributeModifier. Layout checked against OpenSM
//! `ib_mft_record_t` (`position_block_num`: position in the top 4 bits, the block in the low 9,
//! `IB_MCAST_BLOCK_ID_MASK_HO`) and wireshark's `parse_MulticastForwardingTableRecord`.

use crate::describe::{Describe, Describer, Value};
use crate::smp::MftBlockRepr;
use crate::types::{be16, put16};
use crate::{Error, Result};

mod field {
    pub const LID: usize = 0;
    pub const POSITION_BLOCK: usize = 2;
    pub const RESERVED: usize = 4;
    pub const TABLE: usize = 8;
    pub const LEN: usize = 72;
}

/// The BlockNum bits of the 16-bit Position/Reserved/BlockNum word.
const BLOCK_MASK: u16 = 0x01ff;

/// ComponentMask bits of MulticastForwardingTableRecord (IBA 1 §15.2.5.8; OpenSM
/// `IB_MFTR_COMPMASK_*`).
pub mod mftr_mask {
    /// LID.
    pub const LID: u64 = 1 << 0;
    /// Position.
    pub const POSITION: u64 = 1 << 1;
    /// The 3 reserved bits after Position.
    pub const RESERVED1: u64 = 1 << 2;
    /// BlockNum.
    pub const BLOCK: u64 = 1 << 3;
    /// The 32 reserved bits.
    pub const RESERVED2: u64 = 1 << 4;
}

/// A MulticastForwardingTableRecord, every field.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MftRecordRepr {
    /// Base LID of the switch's port 0.
    pub lid: u16,
    /// Position, 0 to 15: the block's PortMasks cover ports `16 × position ..= 16 × position + 15`.
    pub position: u8,
    /// BlockNum, 0 to 511: MLIDs `0xC000 + 32 × block ..`.
    pub block: u16,
    /// The block's 32 PortMasks.
    pub table: MftBlockRepr,
}

impl MftRecordRepr {
    /// Reads the 72 bytes at the start of `data` (reserved bits ignored).
    pub fn parse(data: &[u8]) -> Result<MftRecordRepr> {
        if data.len() < field::LEN {
            return Err(Error::Truncated);
        }
        let pb = be16(data, field::POSITION_BLOCK);
        Ok(MftRecordRepr {
            lid: be16(data, field::LID),
            position: (pb >> 12) as u8,
            block: pb & BLOCK_MASK,
            table: MftBlockRepr::parse(&data[field::TABLE..field::LEN])?,
        })
    }

    /// 72 bytes.
    pub const fn buffer_len(&self) -> usize {
        field::LEN
    }

    /// Writes the 72 bytes (reserved zeroed; Position and BlockNum cut to their 4 and 9 bits).
    /// Panics if `buf` is shorter.
    pub fn emit(&self, buf: &mut [u8]) {
        let buf = &mut buf[..field::LEN];
        put16(buf, field::LID, self.lid);
        let pb = u16::from(self.position & 0x0f) << 12 | (self.block & BLOCK_MASK);
        put16(buf, field::POSITION_BLOCK, pb);
        buf[field::RESERVED..field::TABLE].fill(0);
        self.table.emit(&mut buf[field::TABLE..]);
    }
}

impl Describe for MftRecordRepr {
    fn describe(&self, d: &mut dyn Describer) {
        d.field("lid", Value::Uint(self.lid.into()));
        d.field("position", Value::Uint(self.position.into()));
        d.field("block", Value::Uint(self.block.into()));
        self.table.describe(d);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::describe::Collect;
    use proptest::prelude::*;

    // IBA 1 §15.2.5.8: LID 0, Position the top 4 bits of 2..4, BlockNum its low 9 bits, reserved
    // 4..8, the block's 32 PortMasks 8..72.
    #[test]
    fn parse_and_emit() {
        let mut b = [0u8; 72];
        b[..4].copy_from_slice(&[0x00, 0x07, 0x21, 0x05]);
        b[8..10].copy_from_slice(&[0x00, 0x0e]);
        b[70..].copy_from_slice(&[0x80, 0x01]);
        let r = MftRecordRepr::parse(&b).unwrap();
        assert_eq!((r.lid, r.position, r.block), (7, 2, 0x105));
        assert_eq!(r.table.port_masks[0], 0x000e);
        assert_eq!(r.table.port_masks[31], 0x8001);
        let mut out = [0xeeu8; 72];
        r.emit(&mut out);
        assert_eq!(out, b);
        // The 3 reserved bits between Position and BlockNum are not kept.
        let mut res = b;
        res[2] |= 0x0e;
        assert_eq!(MftRecordRepr::parse(&res), Ok(r));
        assert_eq!(MftRecordRepr::parse(&b[..71]), Err(Error::Truncated));
        assert_eq!(
            (
                mftr_mask::LID,
                mftr_mask::POSITION,
                mftr_mask::RESERVED1,
                mftr_mask::BLOCK,
                mftr_mask::RESERVED2
            ),
            (1, 2, 4, 8, 16)
        );
        let mut c = Collect::default();
        r.describe(&mut c);
        assert_eq!(c.get("position"), Some("2"));
        assert_eq!(c.get("block"), Some("261"));
    }

    proptest! {
        #[test]
        fn round_trip(data in proptest::collection::vec(any::<u8>(), 72)) {
            let r = MftRecordRepr::parse(&data).unwrap();
            let mut out = [0u8; 72];
            r.emit(&mut out);
            prop_assert_eq!(MftRecordRepr::parse(&out).unwrap(), r);
            prop_assert_eq!(&out[..2], &data[..2]);
            prop_assert_eq!(out[2], data[2] & 0xf1);
            prop_assert_eq!(out[3], data[3]);
            prop_assert_eq!(&out[4..8], &[0u8; 4]);
            prop_assert_eq!(&out[8..], &data[8..]);
        }
    }
}
