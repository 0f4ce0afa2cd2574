//! The Internet checksum (RFC 1071) and the pseudo-headers of ICMPv6, UDP and TCP (RFC 8200 §8.1,
//! RFC 793 §3.1). Sums are kept in a `u32` accumulator and folded at the end.

use std::net::{Ipv4Addr, Ipv6Addr};

/// Adds `data` to a one's-complement accumulator (16-bit big-endian words; an odd last byte is padded
/// with zero, RFC 1071 §4.1).
pub fn sum(mut acc: u32, data: &[u8]) -> u32 {
    let mut chunks = data.chunks_exact(2);
    for c in &mut chunks {
        acc = acc.wrapping_add(u16::from_be_bytes([c[0], c[1]]) as u32);
        // Fold early so the accumulator never overflows whatever the length.
        acc = (acc & 0xffff) + (acc >> 16);
    }
    if let [b] = chunks.remainder() {
        acc = acc.wrapping_add((*b as u32) << 8);
        acc = (acc & 0xffff) + (acc >> 16);
    }
    acc
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

    #[test]
    fn long_input_does_not_overflow() {
        let d = vec![0xffu8; 200_000];
        assert_eq!(internet(&d), 0);
    }
}
