//! The encoded MTU, rate and selector fields shared by MCMemberRecord and PathRecord (IBA 1
//! §15.2.5.16 Table 205 and §15.2.5.17 Table 206 in 1.3; PortInfo encodings of §14.2.5.6).
//!
//! [`Mtu`] and [`Rate`] are the one vocabulary every crate uses for these codes (port attributes,
//! subnet model, partitions.conf, SA records, verbs). [`Mtu::bytes`] is the one conversion from an
//! MTU code to bytes; it refuses an undefined code, which is therefore refused where a code enters
//! (a parsed record or configuration), never replaced by a default further in.

use core::cmp::Ordering;

code_enum! {
    /// Encoded path MTU (IBA 1 §14.2.5.6 NeighborMTU encoding; 6 bits in SA records).
    pub enum Mtu(u8) {
        /// 256 bytes.
        Mtu256 = 1 => "256",
        /// 512 bytes.
        Mtu512 = 2 => "512",
        /// 1024 bytes.
        Mtu1024 = 3 => "1024",
        /// 2048 bytes (IPoIB's default broadcast group MTU, OpenSM `mtu=4`).
        Mtu2048 = 4 => "2048",
        /// 4096 bytes.
        Mtu4096 = 5 => "4096",
        /// A value this crate has no name for, kept as received.
        Unknown(_) => "Unknown",
    }
}

impl Mtu {
    /// The MTU in bytes, if the code is defined: the one conversion from code to bytes.
    pub fn bytes(self) -> Option<u32> {
        match self {
            Mtu::Mtu256 => Some(256),
            Mtu::Mtu512 => Some(512),
            Mtu::Mtu1024 => Some(1024),
            Mtu::Mtu2048 => Some(2048),
            Mtu::Mtu4096 => Some(4096),
            Mtu::Unknown(_) => None,
        }
    }

    /// The code of an MTU of exactly `bytes` bytes.
    pub fn from_bytes(bytes: u32) -> Option<Mtu> {
        match bytes {
            256 => Some(Mtu::Mtu256),
            512 => Some(Mtu::Mtu512),
            1024 => Some(Mtu::Mtu1024),
            2048 => Some(Mtu::Mtu2048),
            4096 => Some(Mtu::Mtu4096),
            _ => None,
        }
    }

    /// True for a defined code, 1..=5 (OpenSM `ib_mtu_is_valid`).
    pub fn is_valid(self) -> bool {
        self.bytes().is_some()
    }
}

/// Code 0, undefined, as a zeroed record field reads.
impl Default for Mtu {
    fn default() -> Mtu {
        Mtu::Unknown(0)
    }
}

/// MTUs order by code, which for the defined codes is the order of their sizes (the smallest MTU
/// along a path is the path's, IBA 1 §15.2.5.16).
impl Ord for Mtu {
    fn cmp(&self, other: &Mtu) -> Ordering {
        u8::from(*self).cmp(&u8::from(*other))
    }
}

impl PartialOrd for Mtu {
    fn partial_cmp(&self, other: &Mtu) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

code_enum! {
    /// Encoded static rate (IBA 1 §15.2.5.16 Table 205 in 1.3, extended by IBA 1.2.1/1.3; Linux
    /// `enum ib_rate`). 6 bits in SA records.
    pub enum Rate(u8) {
        /// 2.5 Gb/s (1X SDR).
        Gbps2_5 = 2 => "2.5 Gb/s",
        /// 10 Gb/s (4X SDR).
        Gbps10 = 3 => "10 Gb/s",
        /// 30 Gb/s (12X SDR).
        Gbps30 = 4 => "30 Gb/s",
        /// 5 Gb/s (1X DDR).
        Gbps5 = 5 => "5 Gb/s",
        /// 20 Gb/s (4X DDR).
        Gbps20 = 6 => "20 Gb/s",
        /// 40 Gb/s (4X QDR).
        Gbps40 = 7 => "40 Gb/s",
        /// 60 Gb/s (12X DDR).
        Gbps60 = 8 => "60 Gb/s",
        /// 80 Gb/s (8X QDR).
        Gbps80 = 9 => "80 Gb/s",
        /// 120 Gb/s (12X QDR).
        Gbps120 = 10 => "120 Gb/s",
        /// 14 Gb/s (1X FDR).
        Gbps14 = 11 => "14 Gb/s",
        /// 56 Gb/s (4X FDR).
        Gbps56 = 12 => "56 Gb/s",
        /// 112 Gb/s (8X FDR).
        Gbps112 = 13 => "112 Gb/s",
        /// 168 Gb/s (12X FDR).
        Gbps168 = 14 => "168 Gb/s",
        /// 25 Gb/s (1X EDR).
        Gbps25 = 15 => "25 Gb/s",
        /// 100 Gb/s (4X EDR).
        Gbps100 = 16 => "100 Gb/s",
        /// 200 Gb/s (8X EDR).
        Gbps200 = 17 => "200 Gb/s",
        /// 300 Gb/s (12X EDR).
        Gbps300 = 18 => "300 Gb/s",
        /// 28 Gb/s.
        Gbps28 = 19 => "28 Gb/s",
        /// 50 Gb/s.
        Gbps50 = 20 => "50 Gb/s",
        /// 400 Gb/s.
        Gbps400 = 21 => "400 Gb/s",
        /// 600 Gb/s.
        Gbps600 = 22 => "600 Gb/s",
        /// A value this crate has no name for, kept as received.
        Unknown(_) => "Unknown",
    }
}

/// Code 0, undefined, as a zeroed record field reads.
impl Default for Rate {
    fn default() -> Rate {
        Rate::Unknown(0)
    }
}

impl Rate {
    /// The rate in Mb/s, if the code is defined.
    pub fn mbps(self) -> Option<u32> {
        Some(match self {
            Rate::Gbps2_5 => 2_500,
            Rate::Gbps10 => 10_000,
            Rate::Gbps30 => 30_000,
            Rate::Gbps5 => 5_000,
            Rate::Gbps20 => 20_000,
            Rate::Gbps40 => 40_000,
            Rate::Gbps60 => 60_000,
            Rate::Gbps80 => 80_000,
            Rate::Gbps120 => 120_000,
            Rate::Gbps14 => 14_000,
            Rate::Gbps56 => 56_000,
            Rate::Gbps112 => 112_000,
            Rate::Gbps168 => 168_000,
            Rate::Gbps25 => 25_000,
            Rate::Gbps100 => 100_000,
            Rate::Gbps200 => 200_000,
            Rate::Gbps300 => 300_000,
            Rate::Gbps28 => 28_000,
            Rate::Gbps50 => 50_000,
            Rate::Gbps400 => 400_000,
            Rate::Gbps600 => 600_000,
            Rate::Unknown(_) => return None,
        })
    }

    /// The rate in Gb/s, if the code is defined.
    pub fn gbps(self) -> Option<f64> {
        self.mbps().map(|m| f64::from(m) / 1000.0)
    }

    /// The code of a rate of exactly `mbps` Mb/s.
    pub fn from_mbps(mbps: u32) -> Option<Rate> {
        (2u8..=22).map(Rate::from).find(|r| r.mbps() == Some(mbps))
    }

    /// True for a defined code, 2..=22 (OpenSM `ib_rate_is_valid`).
    pub fn is_valid(self) -> bool {
        self.mbps().is_some()
    }

    /// Compares two rates by speed; undefined codes sort below every defined one (OpenSM
    /// `ib_path_compare_rates`). The codes themselves are not in speed order (Table 205 added
    /// faster links over time), so rates are never compared by code.
    pub fn cmp_speed(self, other: Rate) -> Ordering {
        self.mbps().cmp(&other.mbps())
    }

    /// The next slower defined rate (OpenSM `ib_path_rate_get_prev`); `None` for the slowest
    /// rate and for an undefined code.
    pub fn slower(self) -> Option<Rate> {
        let mbps = self.mbps()?;
        (2u8..=22)
            .map(Rate::from)
            .filter(|r| r.mbps().is_some_and(|m| m < mbps))
            .max_by(|a, b| a.cmp_speed(*b))
    }

    /// The code of a rate of `gbps` Gb/s (2.5, 10, 40 ...), matched to the nearest Mb/s.
    pub fn from_gbps(gbps: f64) -> Option<Rate> {
        if !(0.0..=1.0e6).contains(&gbps) {
            return None;
        }
        Rate::from_mbps((gbps * 1000.0).round() as u32)
    }
}

/// A 2-bit selector qualifying an MTU, rate or packet lifetime (IBA 1 §15.2.5.16, §15.2.5.17;
/// docs/DEPLOYED.md: OpenSM reads 0 greater than, 1 less than, 2 exactly, 3 largest available).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Selector {
    /// Greater than the given value.
    #[default]
    GreaterThan,
    /// Less than the given value.
    LessThan,
    /// Exactly the given value.
    Exactly,
    /// The largest available (the value is ignored).
    LargestAvailable,
}

impl From<u8> for Selector {
    /// Uses the low 2 bits.
    fn from(v: u8) -> Selector {
        match v & 3 {
            0 => Selector::GreaterThan,
            1 => Selector::LessThan,
            2 => Selector::Exactly,
            _ => Selector::LargestAvailable,
        }
    }
}

impl From<Selector> for u8 {
    fn from(s: Selector) -> u8 {
        match s {
            Selector::GreaterThan => 0,
            Selector::LessThan => 1,
            Selector::Exactly => 2,
            Selector::LargestAvailable => 3,
        }
    }
}

impl Selector {
    /// Name for display.
    pub fn name(self) -> &'static str {
        match self {
            Selector::GreaterThan => "GreaterThan",
            Selector::LessThan => "LessThan",
            Selector::Exactly => "Exactly",
            Selector::LargestAvailable => "LargestAvailable",
        }
    }
}

/// Splits a selector(2) | value(6) byte.
pub(crate) fn split_sel(b: u8) -> (Selector, u8) {
    (Selector::from(b >> 6), b & 0x3f)
}

/// Joins a selector and a 6-bit value.
pub(crate) fn join_sel(s: Selector, v: u8) -> u8 {
    (u8::from(s) << 6) | (v & 0x3f)
}

#[cfg(test)]
mod tests {
    use super::*;

    // IBA 1 §15.2.5.17
    #[test]
    fn mtu_codes() {
        assert_eq!(u8::from(Mtu::Mtu2048), 4);
        assert_eq!(Mtu::from(5).bytes(), Some(4096));
        assert_eq!(Mtu::from_bytes(256), Some(Mtu::Mtu256));
        assert_eq!(Mtu::from_bytes(2044), None);
        assert_eq!(Mtu::from(0).bytes(), None);
    }

    // IBA 1 §15.2.5.16
    #[test]
    fn rate_codes() {
        assert_eq!(Rate::from(2).gbps(), Some(2.5));
        assert_eq!(Rate::from(3), Rate::Gbps10);
        assert_eq!(Rate::from(7).mbps(), Some(40_000));
        assert_eq!(Rate::from_gbps(2.5), Some(Rate::Gbps2_5));
        assert_eq!(Rate::from_gbps(56.0), Some(Rate::Gbps56));
        assert_eq!(Rate::from_mbps(1), None);
        assert_eq!(Rate::from_gbps(f64::NAN), None);
        for v in 0..64u8 {
            assert_eq!(u8::from(Rate::from(v)), v);
        }
    }

    // IBA 1 §15.2.5.16: the order of OpenSM's `ib_path_compare_rates` table, slowest first.
    #[test]
    fn rates_order_by_speed_not_code() {
        const BY_SPEED: [u8; 21] = [
            2, 5, 3, 11, 6, 15, 19, 4, 7, 20, 12, 8, 9, 16, 13, 10, 14, 17, 18, 21, 22,
        ];
        let rank = |c: u8| {
            BY_SPEED
                .iter()
                .position(|&x| x == c)
                .map_or(-1, |r| r as i64)
        };
        for a in 0..64u8 {
            for b in 0..64u8 {
                assert_eq!(
                    Rate::from(a).cmp_speed(Rate::from(b)),
                    rank(a).cmp(&rank(b))
                );
            }
            let prev = usize::try_from(rank(a) - 1)
                .ok()
                .map(|r| Rate::from(BY_SPEED[r]));
            assert_eq!(Rate::from(a).slower(), prev, "code {a}");
            assert_eq!(Rate::from(a).is_valid(), rank(a) >= 0);
        }
        assert!(Mtu::Mtu256 < Mtu::Mtu4096);
        assert!(Mtu::Unknown(0) < Mtu::Mtu256 && Mtu::Mtu4096 < Mtu::Unknown(6));
        assert!(Mtu::Mtu2048.is_valid() && !Mtu::Unknown(0).is_valid());
    }

    // IBA 1 §15.2.5.17
    #[test]
    fn selector_bits() {
        assert_eq!(split_sel(0x84), (Selector::Exactly, 4));
        assert_eq!(join_sel(Selector::Exactly, 4), 0x84);
        assert_eq!(join_sel(Selector::LargestAvailable, 0xff), 0xff);
        for v in 0..4u8 {
            assert_eq!(u8::from(Selector::from(v)), v);
        }
    }
}
