//! [`IpBuf`]: an IP packet the interface delivers, in the buffer it was received in.
//!
//! A received frame is the 4-byte encapsulation header (draft-ietf-ipoib-ip-over-infiniband-06
//! §6) and the IP packet (or, in the legacy profile, a bare IPv6 datagram: draft-kashyap-ipoib-ipv6-01
//! §7). The packet is handed on without copying it out of the frame: the
//! buffer keeps the header in front, and the packet is what follows it.
//!
//! Invariant: `start <= buf.len()`.

use std::ops::Deref;

/// An IP packet in an owned buffer, after `start` bytes that are not part of it. Derefs to the
/// packet's bytes; compares by them.
#[derive(Clone, Default)]
pub struct IpBuf {
    buf: Vec<u8>,
    start: usize,
}

impl IpBuf {
    /// The packet is `buf` from byte `start` on (past its end: empty).
    pub fn new(buf: Vec<u8>, start: usize) -> IpBuf {
        let start = start.min(buf.len());
        IpBuf { buf, start }
    }

    /// The packet's bytes.
    pub fn as_bytes(&self) -> &[u8] {
        &self.buf[self.start..]
    }

    /// The packet in a buffer of its own: the bytes before it are removed (moving the packet
    /// to the front of the buffer when there are any).
    pub fn into_vec(mut self) -> Vec<u8> {
        self.buf.drain(..self.start);
        self.buf
    }

    /// The whole buffer, the bytes before the packet included, as it is: an allocation to
    /// receive the next packets in once this one was consumed (nothing is moved).
    pub fn into_allocation(self) -> Vec<u8> {
        self.buf
    }
}

impl From<Vec<u8>> for IpBuf {
    /// The whole buffer is the packet.
    fn from(buf: Vec<u8>) -> IpBuf {
        IpBuf { buf, start: 0 }
    }
}

impl Deref for IpBuf {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        self.as_bytes()
    }
}

impl AsRef<[u8]> for IpBuf {
    fn as_ref(&self) -> &[u8] {
        self.as_bytes()
    }
}

impl PartialEq for IpBuf {
    fn eq(&self, other: &IpBuf) -> bool {
        self.as_bytes() == other.as_bytes()
    }
}

impl Eq for IpBuf {}

impl std::fmt::Debug for IpBuf {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("IpBuf")
            .field("len", &self.len())
            .field("packet", &self.as_bytes())
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn packet_is_what_follows_start() {
        let b = IpBuf::new(vec![0, 0x86, 0xdd, 0, 0x45, 1, 2], 4);
        assert_eq!(&*b, &[0x45, 1, 2]);
        assert_eq!(b, IpBuf::from(vec![0x45, 1, 2]));
        assert_ne!(b, IpBuf::from(vec![0, 0x86, 0xdd, 0, 0x45, 1, 2]));
        assert_eq!(b.clone().into_vec(), vec![0x45, 1, 2]);
        assert!(IpBuf::new(vec![1, 2], 9).is_empty());
        assert_eq!(IpBuf::from(vec![7, 8]).into_vec(), vec![7, 8]);
        let b = IpBuf::new(vec![0, 0x86, 0xdd, 0, 0x45, 1, 2], 4);
        assert_eq!(b.into_allocation(), vec![0, 0x86, 0xdd, 0, 0x45, 1, 2]);
    }
}
