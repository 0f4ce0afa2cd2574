//! A packet in flight inside the simulator (LRH through VCRC), with a mark that its CRCs are
//! known good.
//!
//! An emulation shortcut, in the manner of Linux's `CHECKSUM_UNNECESSARY` for packets that never
//! left the machine (loopback, veth): when the emulation itself computed a packet's ICRC and
//! VCRC (IBA 1 §7.8) over exactly these bytes, a receiver's check would compute the same CRCs
//! again and find them equal, so it is skipped. The mark is set only by the code that computed
//! the CRCs ([`Frame::with_crcs`]: an HCA or a switch agent that built the packet, a switch that
//! rewrote a directed-route SMP and its CRCs); any mutable access to the bytes
//! ([`Frame::bytes_mut`]) clears it, and so does a link's fault chain (a `Corrupt` fault flips a
//! bit). Packets from outside (a UDP fabric host, a test's bytes, a parsed capture) come in as
//! [`Frame::new`], unmarked, and are checked in full. Receivers still check everything else
//! (lengths, headers), so what is dropped, counted and answered is the same as with the checks:
//! only the CPU time differs. The bytes themselves, and so captures, are untouched.

use std::ops::Deref;

/// A packet with its "CRCs known good" mark. See the module docs.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Frame {
    bytes: Vec<u8>,
    crcs_good: bool,
}

impl Frame {
    /// A packet whose CRCs nobody vouches for: receivers check them.
    pub fn new(bytes: Vec<u8>) -> Frame {
        Frame {
            bytes,
            crcs_good: false,
        }
    }

    /// A packet whose ICRC (if it has one) and VCRC the caller has just computed over exactly
    /// these bytes (`PacketRepr::emit`, `fill_crcs`, or `update_crcs` on a packet whose CRCs
    /// were good): receivers may skip their CRC checks.
    pub fn with_crcs(bytes: Vec<u8>) -> Frame {
        Frame {
            bytes,
            crcs_good: true,
        }
    }

    /// True when the CRCs are known good (see the module docs).
    pub fn crcs_good(&self) -> bool {
        self.crcs_good
    }

    /// The bytes, to change them: the mark is cleared.
    pub fn bytes_mut(&mut self) -> &mut Vec<u8> {
        self.crcs_good = false;
        &mut self.bytes
    }

    /// The bytes (the mark is lost).
    pub fn into_vec(self) -> Vec<u8> {
        self.bytes
    }
}

impl Deref for Frame {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        &self.bytes
    }
}

impl AsRef<[u8]> for Frame {
    fn as_ref(&self) -> &[u8] {
        &self.bytes
    }
}

impl From<Vec<u8>> for Frame {
    /// [`Frame::new`]: unmarked.
    fn from(bytes: Vec<u8>) -> Frame {
        Frame::new(bytes)
    }
}

#[cfg(test)]
mod tests {
    use super::Frame;

    #[test]
    fn mutable_access_clears_the_mark() {
        let mut f = Frame::with_crcs(vec![1, 2, 3]);
        assert!(f.crcs_good());
        assert!(f.clone().crcs_good(), "a copy has the same bytes");
        assert_eq!(&f[..], &[1, 2, 3]);
        f.bytes_mut()[0] = 9;
        assert!(!f.crcs_good());
        assert!(!Frame::new(vec![1]).crcs_good());
        assert!(!Frame::from(vec![1]).crcs_good());
    }
}
