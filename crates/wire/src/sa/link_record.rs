//! LinkRecord (IBA 1 §15.2.5.13), 8 bytes: one direction of a link between two ports, each end
//! named by the LID of its node (switch port 0's LID for a switch) and its port number:
//!
//! ```text
//! 0  FromLID(16) | FromPort(8) | ToPort(8)
//! 4  ToLID(16)   | Reserved(16)
//! ```
//!
//! Layout checked against OpenSM `ib_link_record_t` and wireshark's `parse_LinkRecord`.

use crate::describe::{Describe, Describer, Value};
use crate::types::{be16, put16};
use crate::{Error, Result};

mod field {
    pub const FROM_LID: usize = 0;
    pub const FROM_PORT: usize = 2;
    pub const TO_PORT: usize = 3;
    pub const TO_LID: usize = 4;
    pub const RESERVED: usize = 6;
    pub const LEN: usize = 8;
}

/// ComponentMask bits of LinkRecord (IBA 1 §15.2.5.13; OpenSM `IB_LR_COMPMASK_*`).
pub mod lr_mask {
    /// FromLID.
    pub const FROM_LID: u64 = 1 << 0;
    /// FromPort.
    pub const FROM_PORT: u64 = 1 << 1;
    /// ToPort.
    pub const TO_PORT: u64 = 1 << 2;
    /// ToLID.
    pub const TO_LID: u64 = 1 << 3;
}

/// A LinkRecord, every field.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct LinkRecordRepr {
    /// FromLID.
    pub from_lid: u16,
    /// FromPort.
    pub from_port: u8,
    /// ToPort.
    pub to_port: u8,
    /// ToLID.
    pub to_lid: u16,
}

impl LinkRecordRepr {
    /// Reads the 8 bytes at the start of `data` (the reserved field is ignored).
    pub fn parse(data: &[u8]) -> Result<LinkRecordRepr> {
        if data.len() < field::LEN {
            return Err(Error::Truncated);
        }
        Ok(LinkRecordRepr {
            from_lid: be16(data, field::FROM_LID),
            from_port: data[field::FROM_PORT],
            to_port: data[field::TO_PORT],
            to_lid: be16(data, field::TO_LID),
        })
    }

    /// 8 bytes.
    pub const fn buffer_len(&self) -> usize {
        field::LEN
    }

    /// Writes the 8 bytes (reserved zeroed). Panics if `buf` is shorter.
    pub fn emit(&self, buf: &mut [u8]) {
        put16(buf, field::FROM_LID, self.from_lid);
        buf[field::FROM_PORT] = self.from_port;
        buf[field::TO_PORT] = self.to_port;
        put16(buf, field::TO_LID, self.to_lid);
        put16(buf, field::RESERVED, 0);
    }
}

impl Describe for LinkRecordRepr {
    fn describe(&self, d: &mut dyn Describer) {
        d.field("from_lid", Value::Uint(self.from_lid.into()));
        d.field("from_port", Value::Uint(self.from_port.into()));
        d.field("to_port", Value::Uint(self.to_port.into()));
        d.field("to_lid", Value::Uint(self.to_lid.into()));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::describe::Collect;
    use proptest::prelude::*;

    // IBA 1 §15.2.5.13: FromLID 0, FromPort 2, ToPort 3, ToLID 4, reserved 6..8.
    #[test]
    fn parse_and_emit() {
        let b = [0x00, 0x02, 0x01, 0x05, 0x00, 0x07, 0x00, 0x00];
        let r = LinkRecordRepr {
            from_lid: 2,
            from_port: 1,
            to_port: 5,
            to_lid: 7,
        };
        assert_eq!(LinkRecordRepr::parse(&b).unwrap(), r);
        let mut out = [0xffu8; 8];
        r.emit(&mut out);
        assert_eq!(out, b);
        assert_eq!(LinkRecordRepr::parse(&b[..7]), Err(Error::Truncated));
        assert_eq!(lr_mask::TO_LID, 8);
        let mut c = Collect::default();
        r.describe(&mut c);
        assert_eq!(c.fields.len(), 4);
        assert_eq!(c.get("to_port"), Some("5"));
    }

    proptest! {
        #[test]
        fn round_trip(a in any::<u16>(), b in any::<u8>(), c in any::<u8>(), d in any::<u16>()) {
            let r = LinkRecordRepr { from_lid: a, from_port: b, to_port: c, to_lid: d };
            let mut out = [0u8; 8];
            r.emit(&mut out);
            prop_assert_eq!(LinkRecordRepr::parse(&out).unwrap(), r);
        }
    }
}
