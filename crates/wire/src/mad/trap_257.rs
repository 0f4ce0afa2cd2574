//! The DataDetails of traps 257 (Bad P_Key) and 258 (Bad Q_Key), IBA 1 §14.2.5.1 Table 131,
//! which a port sends its SM when a packet fails its P_Key check (§10.9.3) or a datagram its
//! Q_Key check (§10.2.4):
//!
//! ```text
//! 0  Reserved(16) | LID1(16)
//! 4  LID2(16)     | Key(32, to 10)
//! 10 SL(4) | Reserved(4) | QP1(24)
//! 14 Reserved(8) | QP2(24)
//! 18 GID1(128)
//! 34 GID2(128)
//! 50 Reserved (4 bytes, to the end of DataDetails)
//! ```
//!
//! LID1/QP1/GID1 are the sender's, LID2/QP2/GID2 the receiver's. Offsets as Linux's
//! `ib_mad_notice_attr` `ntc_257_258` (include/rdma/ib_mad.h) and wireshark's
//! `parse_NoticeDataDetails` read them.

use super::notice::{NoticeRepr, NoticeType, ProducerType};
use crate::describe::{Describe, Describer, Value};
use crate::types::{be16, be24, be32, put16, put24, put32, Gid};

/// Which key a trap 257/258 reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum BadKey {
    /// Trap 257: the packet's P_Key matched no usable entry.
    PKey,
    /// Trap 258: the datagram's Q_Key was not the QP's.
    QKey,
}

impl BadKey {
    /// The trap number.
    pub const fn trap_number(self) -> u16 {
        match self {
            BadKey::PKey => NoticeRepr::TRAP_BAD_P_KEY,
            BadKey::QKey => NoticeRepr::TRAP_BAD_Q_KEY,
        }
    }
}

/// What a trap 257 or 258 reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct BadKeyTrap {
    /// LID1: the packet's SLID.
    pub lid1: u16,
    /// LID2: the packet's DLID.
    pub lid2: u16,
    /// Key: the P_Key (low 16 bits) or Q_Key the packet carried.
    pub key: u32,
    /// SL (4 bits): the packet's service level.
    pub sl: u8,
    /// QP1 (24 bits): the sending QP.
    pub qp1: u32,
    /// QP2 (24 bits): the receiving QP.
    pub qp2: u32,
    /// GID1: the sender's GID, when the packet had a GRH.
    pub gid1: Gid,
    /// GID2: the receiver's GID, when the packet had a GRH.
    pub gid2: Gid,
}

impl BadKeyTrap {
    /// The generic Security notice (trap 257 or 258) from a `producer` at `issuer_lid`.
    pub fn notice(&self, kind: BadKey, producer: ProducerType, issuer_lid: u16) -> NoticeRepr {
        let mut d = [0u8; 54];
        put16(&mut d, 2, self.lid1);
        put16(&mut d, 4, self.lid2);
        put32(&mut d, 6, self.key);
        d[10] = (self.sl & 0x0f) << 4;
        put24(&mut d, 11, self.qp1 & 0x00ff_ffff);
        put24(&mut d, 15, self.qp2 & 0x00ff_ffff);
        d[18..34].copy_from_slice(self.gid1.as_bytes());
        d[34..50].copy_from_slice(self.gid2.as_bytes());
        NoticeRepr {
            is_generic: true,
            notice_type: NoticeType::Security,
            producer_type_or_vendor_id: producer.into(),
            trap_number_or_device_id: kind.trap_number(),
            issuer_lid,
            notice_toggle: false,
            notice_count: 0,
            data_details: d,
            issuer_gid: Gid::new(0, 0),
        }
    }

    /// The kind and details of a generic trap 257 or 258 (`None` for any other notice).
    pub fn from_notice(n: &NoticeRepr) -> Option<(BadKey, BadKeyTrap)> {
        let kind = match n.trap_number()? {
            NoticeRepr::TRAP_BAD_P_KEY => BadKey::PKey,
            NoticeRepr::TRAP_BAD_Q_KEY => BadKey::QKey,
            _ => return None,
        };
        let d = &n.data_details;
        Some((
            kind,
            BadKeyTrap {
                lid1: be16(d, 2),
                lid2: be16(d, 4),
                key: be32(d, 6),
                sl: d[10] >> 4,
                qp1: be24(d, 11),
                qp2: be24(d, 15),
                gid1: Gid::from_bytes(&d[18..34]),
                gid2: Gid::from_bytes(&d[34..50]),
            },
        ))
    }
}

impl Describe for BadKeyTrap {
    fn describe(&self, d: &mut dyn Describer) {
        d.field("lid1", Value::Hex(self.lid1.into(), 4));
        d.field("lid2", Value::Hex(self.lid2.into(), 4));
        d.field("key", Value::Hex(self.key.into(), 8));
        d.field("sl", Value::Uint(self.sl.into()));
        d.field("qp1", Value::Hex(self.qp1.into(), 6));
        d.field("qp2", Value::Hex(self.qp2.into(), 6));
        d.field("gid1", Value::Gid(self.gid1));
        d.field("gid2", Value::Gid(self.gid2));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::describe::Collect;
    use proptest::prelude::*;

    // IBA 1 §14.2.5.1 Table 131: traps 257/258 field offsets in DataDetails.
    #[test]
    fn layout() {
        let t = BadKeyTrap {
            lid1: 5,
            lid2: 7,
            key: 0x8001,
            sl: 3,
            qp1: 0x48,
            qp2: 0x12_3456,
            gid1: Gid::new(0xfe80_0000_0000_0000, 1),
            gid2: Gid::new(0xfe80_0000_0000_0000, 2),
        };
        let n = t.notice(BadKey::PKey, ProducerType::Ca, 7);
        let mut b = [0u8; 80];
        n.emit(&mut b);
        // Generic Security (0x82), producer CA (1), trap 257, issuer LID 7.
        assert_eq!(&b[..8], &[0x82, 0, 0, 1, 1, 1, 0, 7]);
        let d = &b[10..64];
        assert_eq!(&d[..10], &[0, 0, 0, 5, 0, 7, 0, 0, 0x80, 0x01]);
        assert_eq!(&d[10..18], &[0x30, 0, 0, 0x48, 0, 0x12, 0x34, 0x56]);
        assert_eq!((d[18], d[33], d[34], d[49]), (0xfe, 1, 0xfe, 2));
        assert_eq!(&d[50..], &[0; 4]);
        let back = NoticeRepr::parse(&b).unwrap();
        assert_eq!(BadKeyTrap::from_notice(&back), Some((BadKey::PKey, t)));
        let q = t.notice(BadKey::QKey, ProducerType::Ca, 7);
        assert_eq!(q.trap_number(), Some(258));
        assert_eq!(BadKeyTrap::from_notice(&q), Some((BadKey::QKey, t)));
        assert_eq!(
            BadKeyTrap::from_notice(&NoticeRepr::link_state_trap(5)),
            None
        );
        let mut c = Collect::default();
        t.describe(&mut c);
        assert_eq!(c.get("key"), Some("0x00008001"));
        assert_eq!(c.get("qp2"), Some("0x123456"));
    }

    proptest! {
        #[test]
        fn round_trip(
            lid1: u16, lid2: u16, key: u32, sl in 0u8..16, qp1 in 0u32..1 << 24,
            qp2 in 0u32..1 << 24, g1: [u8; 16], g2: [u8; 16], q: bool,
        ) {
            let t = BadKeyTrap { lid1, lid2, key, sl, qp1, qp2, gid1: Gid(g1), gid2: Gid(g2) };
            let kind = if q { BadKey::QKey } else { BadKey::PKey };
            let n = t.notice(kind, ProducerType::Ca, lid2);
            let mut b = [0u8; 80];
            n.emit(&mut b);
            let back = NoticeRepr::parse(&b).unwrap();
            prop_assert_eq!(BadKeyTrap::from_notice(&back), Some((kind, t)));
        }
    }
}
