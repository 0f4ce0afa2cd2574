//! GUIDInfoRecord (IBA 1 §15.2.5.18), 72 bytes: one block of eight GUIDs a port answers to (its
//! port GUID first, then alias GUIDs), indexed by the port's LID:
//!
//! ```text
//! 0  LID(16) | BlockNum(8) | Reserved(8)
//! 4  Reserved(32)
//! 8  GUIDInfo block (8 × 64 bits, IBA 1 §14.2.5.5)
//! ```
//!
//! Layout checked against OpenSM `ib_guidinfo_record_t` and the answers of OpenSM 3.3.23
//! (crates/runtime/tests/opensm_diff.rs).

use crate::describe::{Describe, Describer, Value};
use crate::types::{be16, put16, Guid};
use crate::{Error, Result};

mod field {
    pub const LID: usize = 0;
    pub const BLOCK: usize = 2;
    pub const RESERVED: usize = 3;
    pub const GUIDS: usize = 8;
    pub const LEN: usize = 72;
}

/// GUIDs in one GUIDInfo block (IBA 1 §14.2.5.5).
pub const GUID_BLOCK_ENTRIES: usize = 8;

/// ComponentMask bits of GUIDInfoRecord (IBA 1 §15.2.5.18; OpenSM `IB_GIR_COMPMASK_*`).
pub mod gir_mask {
    /// LID.
    pub const LID: u64 = 1 << 0;
    /// BlockNum.
    pub const BLOCK: u64 = 1 << 1;
    /// GUID `n` of the block (0..8): `GUID0 << n`.
    pub const GUID0: u64 = 1 << 4;
}

/// A GUIDInfoRecord, every field.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GuidInfoRecordRepr {
    /// LID of the port (switch port 0's for a switch).
    pub lid: u16,
    /// BlockNum: GUIDs `8 × block ..= 8 × block + 7` of the port.
    pub block: u8,
    /// The block's GUIDs (0 where the port has none).
    pub guids: [Guid; GUID_BLOCK_ENTRIES],
}

impl GuidInfoRecordRepr {
    /// Reads the 72 bytes at the start of `data` (the reserved fields are ignored).
    pub fn parse(data: &[u8]) -> Result<GuidInfoRecordRepr> {
        if data.len() < field::LEN {
            return Err(Error::Truncated);
        }
        let mut guids = [Guid(0); GUID_BLOCK_ENTRIES];
        for (i, g) in guids.iter_mut().enumerate() {
            *g = Guid::from_bytes(&data[field::GUIDS + 8 * i..]);
        }
        Ok(GuidInfoRecordRepr {
            lid: be16(data, field::LID),
            block: data[field::BLOCK],
            guids,
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
        buf[field::BLOCK] = self.block;
        buf[field::RESERVED..field::GUIDS].fill(0);
        for (i, g) in self.guids.iter().enumerate() {
            buf[field::GUIDS + 8 * i..field::GUIDS + 8 * i + 8].copy_from_slice(&g.to_bytes());
        }
    }
}

impl Describe for GuidInfoRecordRepr {
    fn describe(&self, d: &mut dyn Describer) {
        d.field("lid", Value::Uint(self.lid.into()));
        d.field("block", Value::Uint(self.block.into()));
        const NAMES: [&str; GUID_BLOCK_ENTRIES] = [
            "guid0", "guid1", "guid2", "guid3", "guid4", "guid5", "guid6", "guid7",
        ];
        for (name, g) in NAMES.iter().zip(&self.guids) {
            d.field(name, Value::Guid(*g));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::describe::Collect;
    use proptest::prelude::*;

    // IBA 1 §15.2.5.18: LID 0, BlockNum 2, reserved 3..8, GUIDs from 8; the record OpenSM 3.3.23
    // answers for ibsim's Hca1 (LID 1, port GUID 0x100001, one block).
    #[test]
    fn parse_and_emit() {
        let mut b = [0u8; 72];
        b[0..2].copy_from_slice(&[0x00, 0x01]);
        b[8..16].copy_from_slice(&[0, 0, 0, 0, 0, 0x10, 0x00, 0x01]);
        let mut guids = [Guid(0); 8];
        guids[0] = Guid(0x100001);
        let r = GuidInfoRecordRepr {
            lid: 1,
            block: 0,
            guids,
        };
        assert_eq!(GuidInfoRecordRepr::parse(&b).unwrap(), r);
        let mut out = [0xeeu8; 72];
        r.emit(&mut out);
        assert_eq!(out, b);
        assert_eq!(GuidInfoRecordRepr::parse(&b[..71]), Err(Error::Truncated));
        assert_eq!(
            (gir_mask::LID, gir_mask::BLOCK, gir_mask::GUID0),
            (1, 2, 16)
        );
        let mut c = Collect::default();
        r.describe(&mut c);
        assert_eq!(c.fields.len(), 10);
        assert_eq!(c.get("guid0"), Some("0x0000000000100001"));
    }

    proptest! {
        #[test]
        fn round_trip(data in proptest::collection::vec(any::<u8>(), 72)) {
            let r = GuidInfoRecordRepr::parse(&data).unwrap();
            let mut out = [0u8; 72];
            r.emit(&mut out);
            prop_assert_eq!(GuidInfoRecordRepr::parse(&out).unwrap(), r);
            prop_assert_eq!(&out[8..], &data[8..]);
        }
    }
}
