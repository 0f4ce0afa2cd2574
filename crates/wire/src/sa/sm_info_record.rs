//! SMInfoRecord (IBA 1 §15.2.5.10), 28 bytes: the SMInfo of one SM of the subnet and the LID of
//! its port:
//!
//! ```text
//! 0  LID(16) | Reserved(16)
//! 4  SMInfo (24 bytes, IBA 1 §14.2.5.13)
//! ```
//!
//! Layout checked against OpenSM `ib_sminfo_record_t` and wireshark's `parse_SMInfoRecord`.

use crate::describe::{Describe, Describer, Value};
use crate::smp::SmInfoRepr;
use crate::types::{be16, put16};
use crate::{Error, Result};

mod field {
    pub const LID: usize = 0;
    pub const RESERVED: usize = 2;
    pub const SM_INFO: usize = 4;
    /// SMInfo's bytes after Priority/SMState (reserved, §14.2.5.13).
    pub const SM_INFO_RESERVED: usize = 4 + 21;
    pub const LEN: usize = 28;
}

/// ComponentMask bits of SMInfoRecord (IBA 1 §15.2.5.10; OpenSM `IB_SMIR_COMPMASK_*`).
pub mod smir_mask {
    /// LID.
    pub const LID: u64 = 1 << 0;
    /// Reserved.
    pub const RESERVED: u64 = 1 << 1;
    /// SMInfo:GUID.
    pub const GUID: u64 = 1 << 2;
    /// SMInfo:SM_Key.
    pub const SM_KEY: u64 = 1 << 3;
    /// SMInfo:ActCount.
    pub const ACT_COUNT: u64 = 1 << 4;
    /// SMInfo:Priority.
    pub const PRIORITY: u64 = 1 << 5;
    /// SMInfo:SMState.
    pub const SM_STATE: u64 = 1 << 6;
}

/// An SMInfoRecord, every field.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SmInfoRecordRepr {
    /// Base LID of the SM's port.
    pub lid: u16,
    /// The SM's SMInfo.
    pub sm_info: SmInfoRepr,
}

impl SmInfoRecordRepr {
    /// Reads the 28 bytes at the start of `data` (reserved fields ignored).
    pub fn parse(data: &[u8]) -> Result<SmInfoRecordRepr> {
        if data.len() < field::LEN {
            return Err(Error::Truncated);
        }
        Ok(SmInfoRecordRepr {
            lid: be16(data, field::LID),
            sm_info: SmInfoRepr::parse(&data[field::SM_INFO..])?,
        })
    }

    /// 28 bytes.
    pub const fn buffer_len(&self) -> usize {
        field::LEN
    }

    /// Writes the 28 bytes (reserved zeroed). Panics if `buf` is shorter.
    pub fn emit(&self, buf: &mut [u8]) {
        let buf = &mut buf[..field::LEN];
        put16(buf, field::LID, self.lid);
        put16(buf, field::RESERVED, 0);
        self.sm_info.emit(&mut buf[field::SM_INFO..]);
        buf[field::SM_INFO_RESERVED..].fill(0);
    }
}

impl Describe for SmInfoRecordRepr {
    fn describe(&self, d: &mut dyn Describer) {
        d.field("lid", Value::Uint(self.lid.into()));
        self.sm_info.describe_as("sm_info", d);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::describe::Collect;
    use crate::smp::SmState;
    use crate::types::Guid;
    use proptest::prelude::*;

    // IBA 1 §15.2.5.10: LID 0, reserved 2..4, SMInfo from 4 (GUID 4, SM_Key 12, ActCount 20,
    // Priority/SMState 24, reserved 25..28).
    #[test]
    fn parse_and_emit() {
        let mut b = [0u8; 28];
        b[0..2].copy_from_slice(&[0x00, 0x01]);
        b[4..12].copy_from_slice(&0x0002_c903_0000_0001u64.to_be_bytes());
        b[12..20].copy_from_slice(&1u64.to_be_bytes());
        b[20..24].copy_from_slice(&[0, 0, 0x01, 0x2c]);
        b[24] = 0x53;
        let r = SmInfoRecordRepr {
            lid: 1,
            sm_info: SmInfoRepr {
                guid: Guid(0x0002_c903_0000_0001),
                sm_key: 1,
                act_count: 300,
                priority: 5,
                sm_state: SmState::Master,
            },
        };
        assert_eq!(SmInfoRecordRepr::parse(&b).unwrap(), r);
        let mut out = [0xeeu8; 28];
        r.emit(&mut out);
        assert_eq!(out, b);
        assert_eq!(SmInfoRecordRepr::parse(&b[..27]), Err(Error::Truncated));
        assert_eq!(smir_mask::SM_STATE, 0x40);
        let mut c = Collect::default();
        r.describe(&mut c);
        assert_eq!(c.get("sm_info.act_count"), Some("300"));
    }

    proptest! {
        #[test]
        fn round_trip(data in proptest::collection::vec(any::<u8>(), 28)) {
            let r = SmInfoRecordRepr::parse(&data).unwrap();
            let mut out = [0u8; 28];
            r.emit(&mut out);
            prop_assert_eq!(SmInfoRecordRepr::parse(&out).unwrap(), r);
            prop_assert_eq!(&out[..2], &data[..2]);
            prop_assert_eq!(&out[4..25], &data[4..25]);
        }
    }
}
