//! The Internet checksum (RFC 1071) and the pseudo-headers of ICMPv6, UDP and TCP (RFC 8200 §8.1,
//! RFC 793 §3.1). Sums are kept in a `u32` accumulator and folded at the end.

use std::net::{Ipv4Addr, Ipv6Addr};

/// Bytes summed into one `u64` before it is folded: 2^14 words of at most 2^32 - 1 cannot overflow.
const BLOCK: usize = 1 << 16;

/// Adds `data` to a one's-complement accumulator (16-bit big-endian words; an odd last byte is padded
/// with zero, RFC 1071 §4.1). The result is at most 0xFFFF and is 0 only when the accumulator and
/// every word are 0, like a sum folded word by word.
///
/// Speed: RFC 1071 §2(B) byte order independence, §2(C) parallel summation and §2(D) deferred
/// carries (the sum may be formed in either byte order, in wider words, with the carries folded
/// back at the end): little-endian 32-bit words are added into a `u64` (a loop the compiler
/// vectorizes), the total is folded to 16 bits and its two bytes swapped, which gives the
/// big-endian sum. About 10x faster than adding 16-bit words one by one (docs/benchmarks/wire.md).
pub fn sum(acc: u32, data: &[u8]) -> u32 {
    let mut total = 0u64;
    for block in data.chunks(BLOCK) {
        let mut words = block.chunks_exact(4);
        let mut s = 0u64;
        for w in &mut words {
            s += u64::from(u32::from_le_bytes([w[0], w[1], w[2], w[3]]));
        }
        // 1 to 3 bytes are left only at the very end: zero padding adds nothing (RFC 1071 §4.1).
        let rest = words.remainder();
        if !rest.is_empty() {
            let mut w = [0u8; 4];
            w[..rest.len()].copy_from_slice(rest);
            s += u64::from(u32::from_le_bytes(w));
        }
        total += s;
        total = (total & 0xffff_ffff) + (total >> 32);
    }
    let le = fold16(total) as u16;
    fold16(u64::from(acc) + u64::from(le.swap_bytes())) as u32
}

/// Folds a sum to 16 bits with end-around carries (a non-zero sum stays non-zero).
fn fold16(mut s: u64) -> u64 {
    while s > 0xffff {
        s = (s & 0xffff) + (s >> 16);
    }
    s
}

/// Folds an accumulator to 16 bits and complements it: the value to write in a checksum field.
pub fn finish(mut acc: u32) -> u16 {
    while acc > 0xffff {
        acc = (acc & 0xffff) + (acc >> 16);
    }
    !(acc as u16)
}

/// The Internet checksum of `data` (RFC 1071). Over data that includes a correct checksum field the
/// result is 0.
pub fn internet(data: &[u8]) -> u16 {
    finish(sum(0, data))
}

/// The accumulator of the IPv6 pseudo-header (RFC 8200 §8.1): source, destination, upper-layer length
/// (32 bits), three zero bytes and the next header.
pub fn pseudo_header_v6(src: Ipv6Addr, dst: Ipv6Addr, next_header: u8, len: u32) -> u32 {
    let mut acc = sum(0, &src.octets());
    acc = sum(acc, &dst.octets());
    acc = sum(acc, &len.to_be_bytes());
    sum(acc, &[0, 0, 0, next_header])
}

/// The accumulator of the IPv4 pseudo-header of UDP/TCP (RFC 793 §3.1): source, destination, zero,
/// protocol, length.
pub fn pseudo_header_v4(src: Ipv4Addr, dst: Ipv4Addr, protocol: u8, len: u16) -> u32 {
    let mut acc = sum(0, &src.octets());
    acc = sum(acc, &dst.octets());
    sum(acc, &[0, protocol, (len >> 8) as u8, len as u8])
}

/// The ICMPv6 checksum of `message` (whose checksum field, bytes 2-3, must be zero or is included as
/// is): pseudo-header with next header 58, then the message (RFC 4443 §2.3).
pub fn icmpv6(src: Ipv6Addr, dst: Ipv6Addr, message: &[u8]) -> u16 {
    finish(sum(
        pseudo_header_v6(src, dst, 58, message.len() as u32),
        message,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    // RFC 1071 §3 example: 00 01 f2 03 f4 f5 f6 f7 sums to ddf2.
    #[test]
    fn rfc1071_example() {
        let d = [0x00, 0x01, 0xf2, 0x03, 0xf4, 0xf5, 0xf6, 0xf7];
        assert_eq!(finish(sum(0, &d)), !0xddf2);
        assert_eq!(internet(&[0x01]), !0x0100);
    }

    #[test]
    fn correct_checksum_sums_to_zero() {
        // An IPv4 header (RFC 791) with checksum 0xb861, from the classic example.
        let h = [
            0x45, 0x00, 0x00, 0x73, 0x00, 0x00, 0x40, 0x00, 0x40, 0x11, 0xb8, 0x61, 0xc0, 0xa8,
            0x00, 0x01, 0xc0, 0xa8, 0x00, 0xc7,
        ];
        assert_eq!(internet(&h), 0);
    }

    /// RFC 1071 §4.1 word by word, as a reference for the wide sum.
    fn sum_reference(mut acc: u32, data: &[u8]) -> u32 {
        let mut chunks = data.chunks_exact(2);
        for c in &mut chunks {
            acc = acc.wrapping_add(u16::from_be_bytes([c[0], c[1]]) as u32);
            acc = (acc & 0xffff) + (acc >> 16);
        }
        if let [b] = chunks.remainder() {
            acc = acc.wrapping_add((*b as u32) << 8);
            acc = (acc & 0xffff) + (acc >> 16);
        }
        acc
    }

    #[test]
    fn wide_sum_matches_word_by_word() {
        // Zero data keeps 0 and 0xffff apart; all ones; every length around the 4-byte words.
        for len in 0..40 {
            for fill in [0x00u8, 0xff, 0x80, 0x01] {
                let d = vec![fill; len];
                for acc in [0u32, 1, 0xffff, 0x1_0000, 0x1_fffe] {
                    assert_eq!(
                        finish(sum(acc, &d)),
                        finish(sum_reference(acc, &d)),
                        "{len} {fill}"
                    );
                }
            }
        }
        // Across the u64 blocks.
        let d: Vec<u8> = (0..3 * BLOCK + 3)
            .map(|i| (i * 7 + i / 251) as u8)
            .collect();
        assert_eq!(finish(sum(5, &d)), finish(sum_reference(5, &d)));
    }

    proptest::proptest! {
        /// RFC 1071: the wide little-endian sum gives the same checksum as the 16-bit one.
        #[test]
        fn wide_sum_is_rfc1071(
            data in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..300),
            acc in 0u32..0x2_0000,
        ) {
            proptest::prop_assert_eq!(finish(sum(acc, &data)), finish(sum_reference(acc, &data)));
            proptest::prop_assert!(sum(acc, &data) <= 0xffff);
        }
    }

    #[test]
    fn long_input_does_not_overflow() {
        let d = vec![0xffu8; 200_000];
        assert_eq!(internet(&d), 0);
    }
}
