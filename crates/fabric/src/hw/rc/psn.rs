//! Packet sequence number arithmetic (IBA 1 §9.7.1): PSNs are 24 bits and wrap; two PSNs compare by
//! their signed distance modulo 2^24, which is meaningful as long as fewer than 2^23 PSNs separate
//! them (the reason an RC requester never has 2^23 or more PSNs outstanding, IBA 1 §9.7.1.1).

/// The 24 bits of a PSN.
pub const PSN_MASK: u32 = 0x00ff_ffff;

/// Half the PSN space: the most PSNs that may be outstanding at once, exclusive (IBA 1 §9.7.1.1).
pub const PSN_HALF: u32 = 1 << 23;

/// `psn + n` modulo 2^24.
pub fn add(psn: u32, n: u32) -> u32 {
    psn.wrapping_add(n) & PSN_MASK
}

/// `psn - 1` modulo 2^24.
pub fn prev(psn: u32) -> u32 {
    psn.wrapping_sub(1) & PSN_MASK
}

/// The signed distance `a - b` modulo 2^24, in `-2^23..2^23`: positive when `a` is later.
pub fn diff(a: u32, b: u32) -> i32 {
    ((a.wrapping_sub(b) << 8) as i32) >> 8
}

/// Packets a message of `len` bytes takes at `mtu` bytes per packet: a zero-byte message still
/// takes one (IBA 1 §9.7.2: SEND Only with an empty payload).
pub fn packets(len: usize, mtu: usize) -> u32 {
    // len is at most 2^31 (checked at post time), so the count fits in u32.
    len.div_ceil(mtu).max(1) as u32
}

#[cfg(test)]
mod tests {
    use super::*;

    /// IBA 1 §9.7.1: PSN arithmetic wraps at 2^24.
    #[test]
    fn wraps_at_2_pow_24() {
        assert_eq!(add(PSN_MASK, 1), 0);
        assert_eq!(add(PSN_MASK - 1, 5), 3);
        assert_eq!(prev(0), PSN_MASK);
        assert_eq!(diff(2, PSN_MASK), 3);
        assert_eq!(diff(PSN_MASK, 2), -3);
        assert_eq!(diff(5, 5), 0);
        assert_eq!(diff(PSN_HALF - 1, 0), (PSN_HALF - 1) as i32);
        assert_eq!(diff(PSN_HALF, 0), -(PSN_HALF as i32));
    }

    #[test]
    fn packet_counts() {
        assert_eq!(packets(0, 256), 1);
        assert_eq!(packets(1, 256), 1);
        assert_eq!(packets(256, 256), 1);
        assert_eq!(packets(257, 256), 2);
        assert_eq!(packets(1 << 31, 256), 1 << 23);
    }
}
