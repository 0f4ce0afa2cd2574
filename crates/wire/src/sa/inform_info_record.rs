//! InformInfoRecord (IBA 1 §15.2.5.12), 64 bytes: one subscription a port made with
//! Set(InformInfo) (§13.4.8.3), as the SA keeps it:
//!
//! ```text
//! 0  SubscriberGID(128)
//! 16 Enum(16) | Reserved(48)
//! 24 InformInfo (36 bytes, IBA 1 §13.4.8.3)
//! 60 Padding(32)
//! ```
//!
//! Layout checked against OpenSM `ib_inform_info_record_t` and wireshark's
//! `parse_InformInfoRecord`.

use crate::describe::{Describe, Describer, Value};
use crate::mad::InformInfoRepr;
use crate::types::{be16, put16, Gid};
use crate::{Error, Result};

mod field {
    pub const SUBSCRIBER_GID: usize = 0;
    pub const ENUM: usize = 16;
    pub const RESERVED: usize = 18;
    pub const INFORM_INFO: usize = 24;
    pub const PADDING: usize = 60;
    pub const LEN: usize = 64;
}

/// ComponentMask bits of InformInfoRecord (IBA 1 §15.2.5.12; OpenSM `IB_IIR_COMPMASK_*`; the
/// InformInfo's fields follow from bit 3, which OpenSM does not select on).
pub mod iir_mask {
    /// SubscriberGID.
    pub const SUBSCRIBER_GID: u64 = 1 << 0;
    /// Enum.
    pub const ENUM: u64 = 1 << 1;
}

/// An InformInfoRecord, every field.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct InformInfoRecordRepr {
    /// GID of the port that subscribed.
    pub subscriber_gid: Gid,
    /// Enum: tells apart subscriptions of one subscriber (OpenSM always gives 0).
    pub subscriber_enum: u16,
    /// The subscription.
    pub inform_info: InformInfoRepr,
}

impl InformInfoRecordRepr {
    /// Reads the 64 bytes at the start of `data` (reserved and padding ignored).
    pub fn parse(data: &[u8]) -> Result<InformInfoRecordRepr> {
        if data.len() < field::LEN {
            return Err(Error::Truncated);
        }
        Ok(InformInfoRecordRepr {
            subscriber_gid: Gid::from_bytes(&data[field::SUBSCRIBER_GID..]),
            subscriber_enum: be16(data, field::ENUM),
            inform_info: InformInfoRepr::parse(&data[field::INFORM_INFO..field::PADDING])?,
        })
    }

    /// 64 bytes.
    pub const fn buffer_len(&self) -> usize {
        field::LEN
    }

    /// Writes the 64 bytes (reserved and padding zeroed). Panics if `buf` is shorter.
    pub fn emit(&self, buf: &mut [u8]) {
        let buf = &mut buf[..field::LEN];
        buf[field::SUBSCRIBER_GID..field::ENUM].copy_from_slice(self.subscriber_gid.as_bytes());
        put16(buf, field::ENUM, self.subscriber_enum);
        buf[field::RESERVED..field::INFORM_INFO].fill(0);
        self.inform_info
            .emit(&mut buf[field::INFORM_INFO..field::PADDING]);
        buf[field::PADDING..].fill(0);
    }
}

impl Describe for InformInfoRecordRepr {
    fn describe(&self, d: &mut dyn Describer) {
        d.field("subscriber_gid", Value::Gid(self.subscriber_gid));
        d.field("enum", Value::Uint(self.subscriber_enum.into()));
        self.inform_info.describe_as("inform_info", d);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::describe::Collect;
    use proptest::prelude::*;

    // IBA 1 §15.2.5.12: SubscriberGID 0, Enum 16, reserved 18..24, InformInfo 24..60 (its
    // LIDRangeBegin at 24 + 16, TrapNumber at 24 + 26), padding 60..64.
    #[test]
    fn parse_and_emit() {
        let gid = Gid::new(Gid::DEFAULT_SUBNET_PREFIX, 0x0002_c903_0000_0003);
        let info = InformInfoRepr::generic(true, 64, 1);
        let mut b = [0u8; 64];
        b[..16].copy_from_slice(gid.as_bytes());
        b[16..18].copy_from_slice(&[0, 2]);
        info.emit(&mut b[24..60]);
        assert_eq!(&b[40..42], &[0xff, 0xff]);
        assert_eq!(&b[50..52], &[0x00, 0x40]);
        let r = InformInfoRecordRepr {
            subscriber_gid: gid,
            subscriber_enum: 2,
            inform_info: info,
        };
        assert_eq!(InformInfoRecordRepr::parse(&b).unwrap(), r);
        let mut out = [0xeeu8; 64];
        r.emit(&mut out);
        assert_eq!(out, b);
        assert_eq!(InformInfoRecordRepr::parse(&b[..63]), Err(Error::Truncated));
        assert_eq!(iir_mask::ENUM, 2);
        let mut c = Collect::default();
        r.describe(&mut c);
        assert_eq!(c.get("inform_info.trap_number"), Some("0x0040"));
    }

    proptest! {
        #[test]
        fn round_trip(data in proptest::collection::vec(any::<u8>(), 64)) {
            let r = InformInfoRecordRepr::parse(&data).unwrap();
            let mut out = [0u8; 64];
            r.emit(&mut out);
            prop_assert_eq!(InformInfoRecordRepr::parse(&out).unwrap(), r);
            prop_assert_eq!(&out[..18], &data[..18]);
        }
    }
}
