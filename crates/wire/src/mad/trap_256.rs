//! The DataDetails of trap 256, Bad M_Key (IBA 1 §14.2.5.1 Table 131), which an
//! SMA sends its SM when an SMP fails the M_Key check (§14.2.4):
//!
//! ```text
//! 0  Reserved(16)  | LIDADDR(16)
//! 4  DRSLID(16)    | Method(8) | Reserved(8)
//! 8  AttributeID(16) | AttributeModifier(32, to 14)
//! 14 M_Key(64)
//! 22 Reserved(8)   | DRNotice(1) DRPathTruncated(1) DRHopCount(6)
//! 24 DRNoticeReturnPath (30 bytes, to the end of DataDetails)
//! ```
//!
//! Offsets 22-23 as Linux `qib_mad.h` `ntc_256` (a reserved byte before the flags, filling
//! DataDetails exactly) and wireshark's `parse_NoticeDataDetails` read them; OpenSM's `ntc_256`
//! has no reserved byte there.

use super::notice::{NoticeRepr, NoticeType, ProducerType};
use crate::describe::{Describe, Describer, Value};
use crate::types::{be16, be32, be64, put16, put32, put64, Gid};

/// Bytes of the directed-route return path trap 256 carries.
pub const TRAP_256_PATH_LEN: usize = 30;

/// What a trap 256 reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct BadMKeyTrap {
    /// LIDADDR: the LID of the port that saw the violation.
    pub lid: u16,
    /// DRSLID of the offending SMP (directed route).
    pub dr_slid: u16,
    /// Its Method.
    pub method: u8,
    /// Its AttributeID.
    pub attribute_id: u16,
    /// Its AttributeModifier.
    pub attribute_modifier: u32,
    /// The M_Key it carried.
    pub mkey: u64,
    /// DRNotice: the SMP was directed route.
    pub dr_notice: bool,
    /// DRPathTruncated: the return path did not fit 30 bytes.
    pub dr_path_truncated: bool,
    /// DRHopCount (6 bits).
    pub dr_hop_count: u8,
    /// DRNoticeReturnPath.
    pub dr_return_path: [u8; TRAP_256_PATH_LEN],
}

impl BadMKeyTrap {
    /// The generic Security notice from a `producer` at `issuer_lid` carrying these details.
    pub fn notice(&self, producer: ProducerType, issuer_lid: u16) -> NoticeRepr {
        let mut d = [0u8; 54];
        put16(&mut d, 2, self.lid);
        put16(&mut d, 4, self.dr_slid);
        d[6] = self.method;
        put16(&mut d, 8, self.attribute_id);
        put32(&mut d, 10, self.attribute_modifier);
        put64(&mut d, 14, self.mkey);
        d[23] = u8::from(self.dr_notice) << 7
            | u8::from(self.dr_path_truncated) << 6
            | (self.dr_hop_count & 0x3f);
        d[24..].copy_from_slice(&self.dr_return_path);
        NoticeRepr {
            is_generic: true,
            notice_type: NoticeType::Security,
            producer_type_or_vendor_id: producer.into(),
            trap_number_or_device_id: NoticeRepr::TRAP_BAD_M_KEY,
            issuer_lid,
            notice_toggle: false,
            notice_count: 0,
            data_details: d,
            issuer_gid: Gid::new(0, 0),
        }
    }

    /// The details of a generic trap 256 (`None` for any other notice).
    pub fn from_notice(n: &NoticeRepr) -> Option<BadMKeyTrap> {
        if n.trap_number()? != NoticeRepr::TRAP_BAD_M_KEY {
            return None;
        }
        let d = &n.data_details;
        let mut dr_return_path = [0u8; TRAP_256_PATH_LEN];
        dr_return_path.copy_from_slice(&d[24..]);
        Some(BadMKeyTrap {
            lid: be16(d, 2),
            dr_slid: be16(d, 4),
            method: d[6],
            attribute_id: be16(d, 8),
            attribute_modifier: be32(d, 10),
            mkey: be64(d, 14),
            dr_notice: d[23] & 0x80 != 0,
            dr_path_truncated: d[23] & 0x40 != 0,
            dr_hop_count: d[23] & 0x3f,
            dr_return_path,
        })
    }
}

impl Describe for BadMKeyTrap {
    fn describe(&self, d: &mut dyn Describer) {
        d.field("lid_addr", Value::Hex(self.lid.into(), 4));
        d.field("dr_slid", Value::Hex(self.dr_slid.into(), 4));
        d.field("method", Value::Hex(self.method.into(), 2));
        d.field("attribute_id", Value::Hex(self.attribute_id.into(), 4));
        d.field(
            "attribute_modifier",
            Value::Hex(self.attribute_modifier.into(), 8),
        );
        d.field("m_key", Value::Hex(self.mkey, 16));
        d.field("dr_notice", Value::Bool(self.dr_notice));
        d.field("dr_path_truncated", Value::Bool(self.dr_path_truncated));
        d.field("dr_hop_count", Value::Uint(self.dr_hop_count.into()));
        d.field("dr_return_path", Value::Bytes(&self.dr_return_path));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::describe::Collect;
    use proptest::prelude::*;

    // IBA 1 §14.2.5.1 Table 131: trap 256 field offsets in DataDetails.
    #[test]
    fn layout() {
        let mut t = BadMKeyTrap {
            lid: 5,
            dr_slid: 0xffff,
            method: 2,
            attribute_id: 0x15,
            attribute_modifier: 7,
            mkey: 0x1122_3344_5566_7788,
            dr_notice: true,
            dr_hop_count: 2,
            ..BadMKeyTrap::default()
        };
        t.dr_return_path[1] = 3;
        let n = t.notice(ProducerType::Switch, 5);
        let mut b = [0u8; 80];
        n.emit(&mut b);
        assert_eq!(&b[..8], &[0x82, 0, 0, 2, 1, 0, 0, 5]);
        let d = &b[10..64];
        assert_eq!(&d[..8], &[0, 0, 0, 5, 0xff, 0xff, 2, 0]);
        assert_eq!(&d[8..14], &[0, 0x15, 0, 0, 0, 7]);
        assert_eq!(&d[14..22], &0x1122_3344_5566_7788u64.to_be_bytes());
        assert_eq!((d[22], d[23], d[25]), (0, 0x82, 3));
        let back = NoticeRepr::parse(&b).unwrap();
        assert_eq!(BadMKeyTrap::from_notice(&back), Some(t));
        assert_eq!(
            BadMKeyTrap::from_notice(&NoticeRepr::link_state_trap(5)),
            None
        );
        let mut c = Collect::default();
        t.describe(&mut c);
        assert_eq!(c.get("m_key"), Some("0x1122334455667788"));
    }

    proptest! {
        #[test]
        fn round_trip(lid: u16, slid: u16, m: u8, a: u16, am: u32, k: u64, f: u8, p: [u8; 30]) {
            let t = BadMKeyTrap {
                lid, dr_slid: slid, method: m, attribute_id: a, attribute_modifier: am, mkey: k,
                dr_notice: f & 1 != 0, dr_path_truncated: f & 2 != 0, dr_hop_count: f >> 2,
                dr_return_path: p,
            };
            let n = t.notice(ProducerType::Ca, lid);
            prop_assert_eq!(BadMKeyTrap::from_notice(&n), Some(t));
        }
    }
}
