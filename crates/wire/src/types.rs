//! Identifiers shared by every layer: GIDs and GUIDs, plus the big-endian field helpers the views use.

use core::fmt;
use std::net::Ipv6Addr;

/// A 128-bit Global Identifier (IBA 1 §4.1.1): a subnet prefix followed by an interface ID (usually
/// the port GUID). Shown in IPv6 notation, as InfiniBand tools do.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Gid(pub [u8; 16]);

impl Gid {
    /// The all-zero GID.
    pub const ZERO: Gid = Gid([0; 16]);
    /// The default subnet prefix, FE80::/64 (IBA 1 §4.1.3).
    pub const DEFAULT_SUBNET_PREFIX: u64 = 0xfe80_0000_0000_0000;

    /// Builds a GID from a subnet prefix and an interface ID.
    pub const fn new(subnet_prefix: u64, interface_id: u64) -> Gid {
        let p = subnet_prefix.to_be_bytes();
        let i = interface_id.to_be_bytes();
        Gid([
            p[0], p[1], p[2], p[3], p[4], p[5], p[6], p[7], i[0], i[1], i[2], i[3], i[4], i[5],
            i[6], i[7],
        ])
    }

    /// Reads a GID from the first 16 bytes of `data`. Panics if `data` is shorter; views call it only
    /// after `check_len`.
    pub fn from_bytes(data: &[u8]) -> Gid {
        let mut g = [0u8; 16];
        g.copy_from_slice(&data[..16]);
        Gid(g)
    }

    /// The 16 bytes in wire order.
    pub const fn as_bytes(&self) -> &[u8; 16] {
        &self.0
    }

    /// The upper 64 bits.
    pub fn subnet_prefix(&self) -> u64 {
        u64::from_be_bytes(self.0[..8].try_into().unwrap_or([0; 8]))
    }

    /// The lower 64 bits.
    pub fn interface_id(&self) -> u64 {
        u64::from_be_bytes(self.0[8..].try_into().unwrap_or([0; 8]))
    }

    /// True for a multicast GID (first byte 0xFF, IBA 1 §4.1.1).
    pub fn is_multicast(&self) -> bool {
        self.0[0] == 0xff
    }

    /// The same bytes as an IPv6 address (for display and for the IP mappings).
    pub fn to_ipv6(&self) -> Ipv6Addr {
        Ipv6Addr::from(self.0)
    }
}

impl From<Ipv6Addr> for Gid {
    fn from(a: Ipv6Addr) -> Gid {
        Gid(a.octets())
    }
}

impl From<[u8; 16]> for Gid {
    fn from(b: [u8; 16]) -> Gid {
        Gid(b)
    }
}

impl fmt::Display for Gid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.to_ipv6(), f)
    }
}

impl fmt::Debug for Gid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Gid({self})")
    }
}

/// A 64-bit Globally Unique Identifier (node, port or CA GUID, IBA 1 §4.1.1).
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Guid(pub u64);

impl Guid {
    /// Reads a GUID from the first 8 bytes of `data` (big-endian). Panics if shorter.
    pub fn from_bytes(data: &[u8]) -> Guid {
        Guid(be64(data, 0))
    }
    /// The 8 bytes in wire order.
    pub fn to_bytes(self) -> [u8; 8] {
        self.0.to_be_bytes()
    }
}

impl fmt::Display for Guid {
    /// `0x0002c90300001234`, as `ibstat` and OpenSM print GUIDs.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:#018x}", self.0)
    }
}

impl fmt::Debug for Guid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Guid({self})")
    }
}

// Big-endian field helpers. They index directly and so panic on a short buffer: views call them only
// after `check_len`, which is what makes their getters panic-free.

/// Reads a big-endian u16 at `off`.
#[inline]
pub fn be16(b: &[u8], off: usize) -> u16 {
    u16::from_be_bytes([b[off], b[off + 1]])
}
/// Reads a big-endian 24-bit value at `off`.
#[inline]
pub fn be24(b: &[u8], off: usize) -> u32 {
    u32::from_be_bytes([0, b[off], b[off + 1], b[off + 2]])
}
/// Reads a big-endian u32 at `off`.
#[inline]
pub fn be32(b: &[u8], off: usize) -> u32 {
    u32::from_be_bytes([b[off], b[off + 1], b[off + 2], b[off + 3]])
}
/// Reads a big-endian u64 at `off`.
#[inline]
pub fn be64(b: &[u8], off: usize) -> u64 {
    let mut a = [0u8; 8];
    a.copy_from_slice(&b[off..off + 8]);
    u64::from_be_bytes(a)
}
/// Writes a big-endian u16 at `off`.
#[inline]
pub fn put16(b: &mut [u8], off: usize, v: u16) {
    b[off..off + 2].copy_from_slice(&v.to_be_bytes());
}
/// Writes the low 24 bits of `v` big-endian at `off`.
#[inline]
pub fn put24(b: &mut [u8], off: usize, v: u32) {
    b[off..off + 3].copy_from_slice(&v.to_be_bytes()[1..]);
}
/// Writes a big-endian u32 at `off`.
#[inline]
pub fn put32(b: &mut [u8], off: usize, v: u32) {
    b[off..off + 4].copy_from_slice(&v.to_be_bytes());
}
/// Writes a big-endian u64 at `off`.
#[inline]
pub fn put64(b: &mut [u8], off: usize, v: u64) {
    b[off..off + 8].copy_from_slice(&v.to_be_bytes());
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gid_parts_and_display() {
        let g = Gid::new(Gid::DEFAULT_SUBNET_PREFIX, 0x0002_c903_0000_0001);
        assert_eq!(g.subnet_prefix(), 0xfe80_0000_0000_0000);
        assert_eq!(g.interface_id(), 0x0002_c903_0000_0001);
        assert_eq!(g.to_string(), "fe80::2:c903:0:1");
        assert!(!g.is_multicast());
        assert_eq!(
            Guid(0x0002_c903_0000_0001).to_string(),
            "0x0002c90300000001"
        );
    }

    #[test]
    fn be_helpers_round_trip() {
        let mut b = [0u8; 8];
        put24(&mut b, 1, 0x00ab_cdef);
        assert_eq!(b[..4], [0, 0xab, 0xcd, 0xef]);
        assert_eq!(be24(&b, 1), 0xab_cdef);
        put64(&mut b, 0, 0x0102_0304_0506_0708);
        assert_eq!(be64(&b, 0), 0x0102_0304_0506_0708);
        assert_eq!(be32(&b, 4), 0x0506_0708);
        assert_eq!(be16(&b, 6), 0x0708);
    }
}
