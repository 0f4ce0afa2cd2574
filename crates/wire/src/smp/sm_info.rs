//! SMInfo (IBA 1 §14.2.5.13), what one SM tells another about itself (§14.4.1 SM polling):
//!
//! ```text
//! 0  GUID(64)
//! 8  SM_Key(64)
//! 16 ActCount(32)
//! 20 Priority(4) SMState(4) | Reserved
//! ```
//!
//! Layout checked against OpenSM `ib_sm_info_t` and wireshark's `parse_SMInfo`.

use crate::describe::{Describe, Describer, Value};
use crate::types::{be32, be64, put32, put64, Guid};
use crate::{Error, Result};

mod field {
    pub const GUID: usize = 0;
    pub const SM_KEY: usize = 8;
    pub const ACT_COUNT: usize = 16;
    /// Priority(4) | SMState(4).
    pub const PRIORITY_STATE: usize = 20;
    pub const LEN: usize = 21;
}

code_enum! {
    /// SMInfo:SMState (IBA 1 §14.4.1, Table 152).
    pub enum SmState(u8) {
        /// Not active.
        NotActive = 0 => "NotActive",
        /// Discovering the subnet.
        Discovering = 1 => "Discovering",
        /// Standby.
        Standby = 2 => "Standby",
        /// Master.
        Master = 3 => "Master",
        /// A value this crate does not know.
        Unknown(_) => "Unknown",
    }
}

/// An SMInfo, every field.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct SmInfoRepr {
    /// Port GUID of the SM.
    pub guid: Guid,
    /// SM_Key (0 in a response to a requester that did not give it, §14.4.1).
    pub sm_key: u64,
    /// ActCount: incremented by the master as it works.
    pub act_count: u32,
    /// Priority (4 bits).
    pub priority: u8,
    /// SMState (4 bits).
    pub sm_state: SmState,
}

impl SmInfoRepr {
    /// Reads the first 21 bytes.
    pub fn parse(data: &[u8]) -> Result<SmInfoRepr> {
        let b = data.get(..field::LEN).ok_or(Error::Truncated)?;
        Ok(SmInfoRepr {
            guid: Guid(be64(b, field::GUID)),
            sm_key: be64(b, field::SM_KEY),
            act_count: be32(b, field::ACT_COUNT),
            priority: b[field::PRIORITY_STATE] >> 4,
            sm_state: SmState::from(b[field::PRIORITY_STATE] & 0x0f),
        })
    }

    /// 21 bytes.
    pub const fn buffer_len(&self) -> usize {
        field::LEN
    }

    /// Writes the 21 bytes (Priority and SMState masked to 4 bits). Panics if `buf` is shorter.
    pub fn emit(&self, buf: &mut [u8]) {
        put64(buf, field::GUID, self.guid.0);
        put64(buf, field::SM_KEY, self.sm_key);
        put32(buf, field::ACT_COUNT, self.act_count);
        buf[field::PRIORITY_STATE] = (self.priority & 0x0f) << 4 | (u8::from(self.sm_state) & 0x0f);
    }
}

impl Describe for SmInfoRepr {
    fn describe(&self, d: &mut dyn Describer) {
        d.field("guid", Value::Guid(self.guid));
        d.field("sm_key", Value::Hex(self.sm_key, 16));
        d.field("act_count", Value::Uint(self.act_count.into()));
        d.field("priority", Value::Uint(self.priority.into()));
        d.field(
            "sm_state",
            Value::Named(u8::from(self.sm_state).into(), self.sm_state.name()),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::describe::Collect;
    use proptest::prelude::*;

    // IBA 1 §14.2.5.13: GUID, SM_Key, ActCount, then Priority in the high nibble.
    #[test]
    fn layout() {
        let mut b = [0u8; 21];
        b[..8].copy_from_slice(&[0, 2, 0xc9, 3, 0, 0, 0, 1]);
        b[8..16].copy_from_slice(&[0, 0, 0, 0, 0, 0, 0x12, 0x34]);
        b[16..20].copy_from_slice(&[0, 0, 1, 0]);
        b[20] = 0xf3;
        let r = SmInfoRepr::parse(&b).unwrap();
        assert_eq!(r.guid, Guid(0x0002_c903_0000_0001));
        assert_eq!((r.sm_key, r.act_count), (0x1234, 256));
        assert_eq!((r.priority, r.sm_state), (15, SmState::Master));
        let mut out = [0u8; 21];
        r.emit(&mut out);
        assert_eq!(out, b);
        assert_eq!(SmInfoRepr::parse(&b[..20]), Err(Error::Truncated));
        let mut c = Collect::default();
        r.describe(&mut c);
        assert_eq!(c.get("sm_state"), Some("Master (0x3)"));
    }

    proptest! {
        #[test]
        fn round_trip(guid: u64, key: u64, act: u32, pri in 0u8..16, state in 0u8..16) {
            let r = SmInfoRepr {
                guid: Guid(guid), sm_key: key, act_count: act, priority: pri,
                sm_state: SmState::from(state),
            };
            let mut b = [0u8; 21];
            r.emit(&mut b);
            prop_assert_eq!(SmInfoRepr::parse(&b).unwrap(), r);
        }

        #[test]
        fn parse_never_panics(data in proptest::collection::vec(any::<u8>(), 0..40)) {
            if let Ok(r) = SmInfoRepr::parse(&data) {
                r.describe(&mut Collect::default());
            }
        }
    }
}
