//! SwitchInfoRecord (IBA 1 §15.2.5.5), 24 bytes: the SwitchInfo of one switch and the LID of its
//! port 0:
//!
//! ```text
//! 0  LID(16) | Reserved(16)
//! 4  SwitchInfo (20 bytes, IBA 1 §14.2.5.4)
//! ```
//!
//! Layout checked against OpenSM `ib_switch_info_record_t` and wireshark's
//! `parse_SwitchInfoRecord`.

use crate::describe::{Describe, Describer, Value};
use crate::smp::SwitchInfoRepr;
use crate::types::{be16, put16};
use crate::{Error, Result};

mod field {
    pub const LID: usize = 0;
    pub const RESERVED: usize = 2;
    pub const SWITCH_INFO: usize = 4;
    pub const LEN: usize = 24;
}

/// ComponentMask bits of SwitchInfoRecord (IBA 1 §15.2.5.5; OpenSM `IB_SWIR_COMPMASK_*`).
pub mod swir_mask {
    /// LID.
    pub const LID: u64 = 1 << 0;
    /// Reserved.
    pub const RESERVED: u64 = 1 << 1;
}

/// A SwitchInfoRecord, every field.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SwitchInfoRecordRepr {
    /// Base LID of the switch's port 0.
    pub lid: u16,
    /// The switch's SwitchInfo.
    pub switch_info: SwitchInfoRepr,
}

impl SwitchInfoRecordRepr {
    /// Reads the 24 bytes at the start of `data` (reserved fields ignored).
    pub fn parse(data: &[u8]) -> Result<SwitchInfoRecordRepr> {
        if data.len() < field::LEN {
            return Err(Error::Truncated);
        }
        Ok(SwitchInfoRecordRepr {
            lid: be16(data, field::LID),
            switch_info: SwitchInfoRepr::parse(&data[field::SWITCH_INFO..field::LEN])?,
        })
    }

    /// 24 bytes.
    pub const fn buffer_len(&self) -> usize {
        field::LEN
    }

    /// Writes the 24 bytes (reserved zeroed). Panics if `buf` is shorter.
    pub fn emit(&self, buf: &mut [u8]) {
        let buf = &mut buf[..field::LEN];
        put16(buf, field::LID, self.lid);
        buf[field::RESERVED..field::SWITCH_INFO].fill(0);
        buf[field::SWITCH_INFO..].fill(0);
        self.switch_info.emit(&mut buf[field::SWITCH_INFO..]);
    }
}

impl Describe for SwitchInfoRecordRepr {
    fn describe(&self, d: &mut dyn Describer) {
        d.field("lid", Value::Uint(self.lid.into()));
        self.switch_info.describe(d);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::describe::Collect;
    use proptest::prelude::*;

    // IBA 1 §15.2.5.5: LID 0, reserved 2..4, SwitchInfo 4..24 (LinearFDBCap at 4, LinearFDBTop
    // at 10, DefaultPort at 12, LIDsPerPort at 16, the capability flags at 20, MulticastFDBTop
    // at 22).
    #[test]
    fn parse_and_emit() {
        let mut b = [0u8; 24];
        b[..2].copy_from_slice(&[0x00, 0x05]);
        b[4..8].copy_from_slice(&[0xc0, 0x00, 0x00, 0x00]);
        b[8..12].copy_from_slice(&[0x04, 0x00, 0x00, 0x0a]);
        b[12..16].copy_from_slice(&[0x02, 0x00, 0xff, 0x84]);
        b[16..20].copy_from_slice(&[0x00, 0x00, 0x00, 0x20]);
        b[20..24].copy_from_slice(&[0x80, 0x00, 0xc0, 0x03]);
        let r = SwitchInfoRecordRepr::parse(&b).unwrap();
        let si = r.switch_info;
        assert_eq!(r.lid, 5);
        assert_eq!((si.linear_fdb_cap, si.linear_fdb_top), (0xc000, 10));
        assert_eq!((si.multicast_fdb_cap, si.default_port), (0x400, 2));
        assert_eq!(si.default_multicast_not_primary_port, 0xff);
        assert_eq!((si.life_time_value, si.port_state_change), (16, true));
        assert_eq!(
            (si.partition_enforcement_cap, si.multicast_fdb_top),
            (32, 0xc003)
        );
        assert!(si.inbound_enforcement_cap && !si.enhanced_port_zero);
        let mut out = [0xeeu8; 24];
        r.emit(&mut out);
        assert_eq!(out, b);
        assert_eq!(SwitchInfoRecordRepr::parse(&b[..23]), Err(Error::Truncated));
        assert_eq!((swir_mask::LID, swir_mask::RESERVED), (1, 2));
        let mut c = Collect::default();
        r.describe(&mut c);
        assert_eq!(c.get("lid"), Some("5"));
    }

    proptest! {
        #[test]
        fn round_trip(data in proptest::collection::vec(any::<u8>(), 24)) {
            let r = SwitchInfoRecordRepr::parse(&data).unwrap();
            let mut out = [0u8; 24];
            r.emit(&mut out);
            prop_assert_eq!(SwitchInfoRecordRepr::parse(&out).unwrap(), r);
            prop_assert_eq!(&out[..2], &data[..2]);
            prop_assert_eq!(&out[2..4], &[0u8, 0]);
            prop_assert_eq!(&out[4..20], &data[4..20]);
            prop_assert_eq!(&out[22..], &data[22..]);
        }
    }
}
