//! Partition and queue keys: the P_Key's membership bit and matching rule (IBA 1 §10.9), the
//! Q_Key's controlled bit (IBA 1 §10.2.4) and the well-known values of both. This is the one place
//! these rules are written; the HCA, the switch, the SA and the IPoIB interface all use it.
//!
//! Every header `Repr`, record and model structure holds its keys as these types; the plain
//! `u16`/`u32` only appears in the byte views (`Bth::pkey`, `Deth::qkey`, ...), where bytes are
//! read and written: `bth.pkey.matches(entry)`.

use crate::describe::Value;
use core::fmt;

/// The conversions and formats a key type shares: from and into its raw integer and `u64`, into
/// a decode value of `$digits` hex digits (as `ipoib decode` prints it), `Display` as `0x` and
/// `$digits` hex digits (`0xffff`, `0x80010000`, as the tools print keys), `LowerHex` of the raw
/// value, and `Debug` as `PKey(0xffff)`.
macro_rules! key_impls {
    ($t:ident, $raw:ty, $digits:literal) => {
        impl From<$raw> for $t {
            fn from(v: $raw) -> $t {
                $t(v)
            }
        }

        impl From<$t> for $raw {
            fn from(k: $t) -> $raw {
                k.0
            }
        }

        impl From<$t> for u64 {
            fn from(k: $t) -> u64 {
                k.0.into()
            }
        }

        impl From<$t> for Value<'_> {
            fn from(k: $t) -> Self {
                Value::Hex(k.0.into(), $digits)
            }
        }

        impl fmt::Display for $t {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                write!(f, "{:#0w$x}", self.0, w = $digits + 2)
            }
        }

        impl fmt::LowerHex for $t {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                fmt::LowerHex::fmt(&self.0, f)
            }
        }

        impl fmt::Debug for $t {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                write!(f, "{}({self})", stringify!($t))
            }
        }
    };
}

/// A 16-bit partition key (IBA 1 §10.9.1): bit 15 is the membership type (1 = full member,
/// 0 = limited member), bits 0..=14 the partition number, here called the base.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct PKey(pub u16);

impl PKey {
    /// The membership bit: set for a full member (IBA 1 §10.9.1).
    pub const FULL_MEMBER_BIT: u16 = 0x8000;
    /// The partition-number bits.
    pub const BASE_MASK: u16 = 0x7fff;
    /// The default P_Key, 0xFFFF: full member of the default partition (IBA 1 §10.9.1.2). Its base,
    /// 0x7FFF, is the default partition's number (opensm(8): "The default partition has P_Key
    /// value 0x7fff").
    pub const DEFAULT: PKey = PKey(0xffff);

    /// The partition number: the low 15 bits.
    pub const fn base(self) -> u16 {
        self.0 & Self::BASE_MASK
    }

    /// True for a full member (bit 15 set).
    pub const fn is_full(self) -> bool {
        self.0 & Self::FULL_MEMBER_BIT != 0
    }

    /// False for the invalid P_Keys 0x0000 and 0x8000 (base 0), which match nothing
    /// (IBA 1 §10.9.3).
    pub const fn is_valid(self) -> bool {
        self.base() != 0
    }

    /// The same partition, full member.
    pub const fn full(self) -> PKey {
        PKey(self.0 | Self::FULL_MEMBER_BIT)
    }

    /// The same partition, limited member.
    pub const fn limited(self) -> PKey {
        PKey(self.0 & Self::BASE_MASK)
    }

    /// True when both keys name the same partition, whatever their membership.
    pub const fn same_partition(self, other: PKey) -> bool {
        self.base() == other.base()
    }

    /// The P_Key matching rule (IBA 1 §10.9.3): the bases are equal and valid, and at least one
    /// of the two keys is a full member (two limited members may not talk). Symmetric.
    pub const fn matches(self, other: PKey) -> bool {
        self.is_valid() && self.same_partition(other) && (self.is_full() || other.is_full())
    }
}

key_impls!(PKey, u16, 4);

/// A 32-bit queue key (IBA 1 §10.2.4). A Q_Key with the high bit set is controlled: only a
/// privileged QP may send it, and in a send work request it means "use the QP's own Q_Key".
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct QKey(pub u32);

impl QKey {
    /// The controlled bit (IBA 1 §10.2.4).
    pub const CONTROLLED_BIT: u32 = 0x8000_0000;
    /// The well-known Q_Key of QP1, the General Services Interface (IBA 1 §13.5.1; Linux
    /// `IB_QP1_QKEY`). Controlled.
    pub const GSI: QKey = QKey(0x8001_0000);
    /// The Q_Key of the IPoIB groups OpenSM creates, the broadcast group among them (OpenSM
    /// `OSM_IPOIB_BROADCAST_MGRP_QKEY`; the interface then uses the group's Q_Key,
    /// draft-ietf-ipoib-ip-over-infiniband-06 §9.1.2 b).
    pub const IPOIB_BROADCAST: QKey = QKey(0x0000_0b1b);

    /// True for a controlled Q_Key (high bit set).
    pub const fn is_controlled(self) -> bool {
        self.0 & Self::CONTROLLED_BIT != 0
    }
}

key_impls!(QKey, u32, 8);

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// IBA 1 §10.9.3: low 15 bits equal, not zero, at least one full member.
    #[test]
    fn pkey_membership_rule() {
        let pkey_matches = |a: u16, b: u16| PKey(a).matches(PKey(b));
        assert!(pkey_matches(0xffff, 0xffff));
        assert!(pkey_matches(0x7fff, 0xffff), "limited to full");
        assert!(pkey_matches(0xffff, 0x7fff), "full to limited");
        assert!(!pkey_matches(0x7fff, 0x7fff), "limited to limited");
        assert!(!pkey_matches(0x8001, 0x8002), "other partition");
        assert!(!pkey_matches(0x8000, 0x8000), "invalid key");
        assert!(!pkey_matches(0x0000, 0xffff), "invalid key");
        assert!(pkey_matches(0x8001, 0x0001));
        assert!(!pkey_matches(0x0001, 0x0001));
    }

    /// IBA 1 §10.9.1: bit 15 is the membership, the rest the partition.
    #[test]
    fn pkey_parts() {
        assert_eq!(PKey::DEFAULT.base(), 0x7fff);
        assert_eq!(PKey(0x7fff).full(), PKey::DEFAULT);
        assert_eq!(PKey::DEFAULT.limited(), PKey(0x7fff));
        assert!(PKey(0x8001).same_partition(PKey(0x0001)));
        assert!(!PKey(0x8000).is_valid() && PKey(0x8000).is_full());
        assert_eq!(PKey(0x8001).to_string(), "0x8001");
        assert_eq!(format!("{:?}", PKey(1)), "PKey(0x0001)");
        // The tools' forms: four and eight hex digits, and the raw values back.
        assert_eq!(PKey(0xffff).to_string(), "0xffff");
        assert_eq!(QKey::GSI.to_string(), "0x80010000");
        assert_eq!(format!("{:?}", QKey(0xb1b)), "QKey(0x00000b1b)");
        assert_eq!((u16::from(PKey(7)), u64::from(QKey(9))), (7, 9));
    }

    /// IBA 1 §10.2.4, §13.5.1.
    #[test]
    fn qkey_controlled_bit() {
        assert!(QKey::GSI.is_controlled());
        assert!(!QKey::IPOIB_BROADCAST.is_controlled());
        assert_eq!(QKey::GSI.to_string(), "0x80010000");
        assert_eq!(u32::from(QKey::IPOIB_BROADCAST), 0x0b1b);
        assert_eq!(
            format!("{:#x} {:x}", QKey::IPOIB_BROADCAST, PKey(0x8001)),
            "0xb1b 8001"
        );
    }

    proptest! {
        /// The rule, spelled out bit by bit, and its symmetry.
        #[test]
        fn matches_is_the_bitwise_rule(a: u16, b: u16) {
            let bitwise = a & 0x7fff != 0 && a & 0x7fff == b & 0x7fff && (a | b) & 0x8000 != 0;
            prop_assert_eq!(PKey(a).matches(PKey(b)), bitwise);
            prop_assert_eq!(PKey(a).matches(PKey(b)), PKey(b).matches(PKey(a)));
        }
    }
}
