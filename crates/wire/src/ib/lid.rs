//! Local identifiers (IBA 1 §4.1): 0x0000 is reserved, 0x0001..=0xBFFF are unicast,
//! 0xC000..=0xFFFE multicast and 0xFFFF is the permissive LID. The one place these ranges are
//! written. The LRH's packet-length helpers are here too, as every LRH user needs both.

pub use super::lrh::{check_pkt_len, pkt_len_for, MAX_PKT_LEN_WORDS};

/// First unicast LID.
pub const LID_UNICAST_FIRST: u16 = 0x0001;
/// Last unicast LID.
pub const LID_UNICAST_LAST: u16 = 0xbfff;
/// First multicast LID.
pub const LID_MULTICAST_FIRST: u16 = 0xc000;
/// Last multicast LID.
pub const LID_MULTICAST_LAST: u16 = 0xfffe;
/// The permissive LID: any port accepts it on subnet management packets (IBA 1 §14.2.2).
pub const LID_PERMISSIVE: u16 = 0xffff;

/// True for a unicast LID, 0x0001..=0xBFFF.
pub const fn is_unicast_lid(lid: u16) -> bool {
    lid >= LID_UNICAST_FIRST && lid <= LID_UNICAST_LAST
}

/// True for a multicast LID, 0xC000..=0xFFFE.
pub const fn is_multicast_lid(lid: u16) -> bool {
    lid >= LID_MULTICAST_FIRST && lid <= LID_MULTICAST_LAST
}

#[cfg(test)]
mod tests {
    use super::*;

    /// IBA 1 §4.1: every LID is exactly one of reserved, unicast, multicast or permissive.
    #[test]
    fn ranges_partition_the_lid_space() {
        for lid in 0..=u16::MAX {
            let kinds = [
                lid == 0,
                is_unicast_lid(lid),
                is_multicast_lid(lid),
                lid == LID_PERMISSIVE,
            ];
            assert_eq!(kinds.iter().filter(|&&k| k).count(), 1, "LID {lid:#x}");
        }
        assert!(is_unicast_lid(0xbfff) && !is_unicast_lid(0xc000));
        assert!(is_multicast_lid(0xc000) && is_multicast_lid(0xfffe));
        assert!(!is_multicast_lid(0xffff));
    }
}
