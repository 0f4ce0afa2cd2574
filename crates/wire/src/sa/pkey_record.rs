//! P_KeyTableRecord (IBA 1 §15.2.5.11), 72 bytes: one block of 32 entries of a port's P_Key table:
//!
//! ```text
//! 0  LID(16) | BlockNum(16)
//! 4  PortNum(8) | Reserved(24)
//! 8  P_KeyTable block (32 × 16 bits, IBA 1 §14.2.5.7)
//! ```
//!
//! Layout checked against OpenSM `ib_pkey_table_record_t` and wireshark's
//! `parse_PKeyTableRecord`.

use crate::describe::{Describe, Describer, Value};
use crate::keys::PKey;
use crate::types::{be16, put16};
use crate::{Error, Result};

mod field {
    pub const LID: usize = 0;
    pub const BLOCK: usize = 2;
    pub const PORT_NUM: usize = 4;
    pub const RESERVED: usize = 5;
    pub const TABLE: usize = 8;
    pub const LEN: usize = 72;
}

/// P_Keys in one block of a P_Key table (IBA 1 §14.2.5.7).
pub const PKEY_BLOCK_ENTRIES: usize = 32;

/// ComponentMask bits of P_KeyTableRecord (IBA 1 §15.2.5.11; OpenSM `IB_PKEY_COMPMASK_*`).
pub mod pkr_mask {
    /// LID.
    pub const LID: u64 = 1 << 0;
    /// BlockNum.
    pub const BLOCK: u64 = 1 << 1;
    /// PortNum.
    pub const PORT_NUM: u64 = 1 << 2;
}

/// A P_KeyTableRecord, every field.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PKeyTableRecordRepr {
    /// LID of the port (switch port 0's for a switch).
    pub lid: u16,
    /// BlockNum: which 32 entries.
    pub block: u16,
    /// PortNum.
    pub port_num: u8,
    /// The block's entries (zero past the table's end).
    pub pkeys: [PKey; PKEY_BLOCK_ENTRIES],
}

impl PKeyTableRecordRepr {
    /// Reads the 72 bytes at the start of `data` (the reserved field is ignored).
    pub fn parse(data: &[u8]) -> Result<PKeyTableRecordRepr> {
        if data.len() < field::LEN {
            return Err(Error::Truncated);
        }
        let mut pkeys = [PKey(0); PKEY_BLOCK_ENTRIES];
        for (i, k) in pkeys.iter_mut().enumerate() {
            *k = PKey(be16(data, field::TABLE + 2 * i));
        }
        Ok(PKeyTableRecordRepr {
            lid: be16(data, field::LID),
            block: be16(data, field::BLOCK),
            port_num: data[field::PORT_NUM],
            pkeys,
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
        buf[field::PORT_NUM] = self.port_num;
        buf[field::RESERVED..field::TABLE].fill(0);
        for (i, k) in self.pkeys.iter().enumerate() {
            put16(buf, field::TABLE + 2 * i, k.0);
        }
    }
}

impl Describe for PKeyTableRecordRepr {
    fn describe(&self, d: &mut dyn Describer) {
        d.field("lid", Value::Uint(self.lid.into()));
        d.field("block", Value::Uint(self.block.into()));
        d.field("port_num", Value::Uint(self.port_num.into()));
        let mut bytes = [0u8; 2 * PKEY_BLOCK_ENTRIES];
        for (i, k) in self.pkeys.iter().enumerate() {
            bytes[2 * i..2 * i + 2].copy_from_slice(&k.0.to_be_bytes());
        }
        d.field("p_keys", Value::Bytes(&bytes));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::describe::Collect;
    use proptest::prelude::*;

    // IBA 1 §15.2.5.11: LID 0, BlockNum 2, PortNum 4, reserved 5..8, entries from 8.
    #[test]
    fn parse_and_emit() {
        let mut b = [0u8; 72];
        b[0..2].copy_from_slice(&[0x00, 0x05]);
        b[2..4].copy_from_slice(&[0x00, 0x01]);
        b[4] = 2;
        b[8..12].copy_from_slice(&[0xff, 0xff, 0x01, 0x23]);
        let mut pkeys = [PKey(0); 32];
        pkeys[0] = PKey(0xffff);
        pkeys[1] = PKey(0x0123);
        let r = PKeyTableRecordRepr {
            lid: 5,
            block: 1,
            port_num: 2,
            pkeys,
        };
        assert_eq!(PKeyTableRecordRepr::parse(&b).unwrap(), r);
        let mut out = [0xeeu8; 72];
        r.emit(&mut out);
        assert_eq!(out, b);
        assert_eq!(PKeyTableRecordRepr::parse(&b[..71]), Err(Error::Truncated));
        assert_eq!(pkr_mask::PORT_NUM, 4);
        let mut c = Collect::default();
        r.describe(&mut c);
        assert_eq!(c.get("p_keys").map(|s| &s[..8]), Some("ffff0123"));
    }

    proptest! {
        #[test]
        fn round_trip(data in proptest::collection::vec(any::<u8>(), 72)) {
            let r = PKeyTableRecordRepr::parse(&data).unwrap();
            let mut out = [0u8; 72];
            r.emit(&mut out);
            prop_assert_eq!(PKeyTableRecordRepr::parse(&out).unwrap(), r);
            prop_assert_eq!(&out[8..], &data[8..]);
        }
    }
}
