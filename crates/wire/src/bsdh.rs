//! SDP's Base Sockets Direct Header (BSDH, IBTA Annex A4), 16 bytes at the start of every RC SEND of
//! an iWarp-emulated connection whose FlowC is 0 ("iWarp mapping", FlowC: "Transport owns flow
//! control and may embed a 16 byte headers in RC Send (just like SDP does, and uses zero in that
//! field)"). The Hello and HelloReply ([`crate::private_data::iwarp`]) start with the same 16 bytes.
//!
//! ```text
//!  0 MID(8) | flags(8) | bufs(16)
//!  4 len(32)        total message length, this header included
//!  8 mseq(32)       sequence number of this message
//! 12 mseq_ack(32)   mseq of the last message received from the peer
//! ```
//!
//! Field meanings (docs/DEPLOYED.md "SDP (the data structures the iWarp mapping reuses)"): `bufs` is
//! the number of receive buffers the sender has posted when it sends the message, and the receiver's
//! send credits are `bufs - (its last mseq - mseq_ack)`. This module only lays the bytes out; the
//! iWarp-emulation stream (`ipoib-proto`'s `iwarp`) applies those rules.

use crate::describe::{Describe, Describer, Value};
use crate::types::{be16, be32, put16, put32};
use crate::Result;

mod field {
    use core::ops::Range;
    pub const MID: usize = 0;
    pub const FLAGS: usize = 1;
    pub const BUFS: Range<usize> = 2..4;
    pub const LEN: Range<usize> = 4..8;
    pub const MSEQ: Range<usize> = 8..12;
    pub const MSEQ_ACK: Range<usize> = 12..16;
}

/// Length of a BSDH.
pub const BSDH_LEN: usize = 16;

fixed_view! {
    /// A view of a BSDH at the start of an RC SEND's payload.
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    pub struct Bsdh;
    /// `Err(Truncated)` when shorter than 16 bytes; the payload may follow.
    fn check_len(min = BSDH_LEN);
}

impl<T: AsRef<[u8]>> Bsdh<T> {
    /// MID (message identifier).
    pub fn mid(&self) -> u8 {
        self.buffer.as_ref()[field::MID]
    }
    /// flags.
    pub fn flags(&self) -> u8 {
        self.buffer.as_ref()[field::FLAGS]
    }
    /// bufs: receive buffers the sender has posted.
    pub fn bufs(&self) -> u16 {
        be16(self.buffer.as_ref(), field::BUFS.start)
    }
    /// len: the message's length, this header included.
    pub fn length(&self) -> u32 {
        be32(self.buffer.as_ref(), field::LEN.start)
    }
    /// mseq: this message's sequence number.
    pub fn mseq(&self) -> u32 {
        be32(self.buffer.as_ref(), field::MSEQ.start)
    }
    /// mseq_ack: the mseq of the last message the sender received.
    pub fn mseq_ack(&self) -> u32 {
        be32(self.buffer.as_ref(), field::MSEQ_ACK.start)
    }
    /// The bytes after the header.
    pub fn payload(&self) -> &[u8] {
        &self.buffer.as_ref()[BSDH_LEN..]
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Bsdh<T> {
    /// Sets MID.
    pub fn set_mid(&mut self, v: u8) {
        self.buffer.as_mut()[field::MID] = v;
    }
    /// Sets flags.
    pub fn set_flags(&mut self, v: u8) {
        self.buffer.as_mut()[field::FLAGS] = v;
    }
    /// Sets bufs.
    pub fn set_bufs(&mut self, v: u16) {
        put16(self.buffer.as_mut(), field::BUFS.start, v);
    }
    /// Sets len.
    pub fn set_length(&mut self, v: u32) {
        put32(self.buffer.as_mut(), field::LEN.start, v);
    }
    /// Sets mseq.
    pub fn set_mseq(&mut self, v: u32) {
        put32(self.buffer.as_mut(), field::MSEQ.start, v);
    }
    /// Sets mseq_ack.
    pub fn set_mseq_ack(&mut self, v: u32) {
        put32(self.buffer.as_mut(), field::MSEQ_ACK.start, v);
    }
}

/// A BSDH. Every value is representable: the rules on them (MID zero, len equal to the message
/// length, in-order mseq) belong to the stream that reads it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct BsdhRepr {
    /// MID.
    pub mid: u8,
    /// flags.
    pub flags: u8,
    /// bufs.
    pub bufs: u16,
    /// len.
    pub len: u32,
    /// mseq.
    pub mseq: u32,
    /// mseq_ack.
    pub mseq_ack: u32,
}

impl BsdhRepr {
    /// Reads the first 16 bytes of `data`; `Err(Truncated)` when shorter.
    pub fn parse(data: &[u8]) -> Result<Self> {
        let p = Bsdh::new_checked(data)?;
        Ok(BsdhRepr {
            mid: p.mid(),
            flags: p.flags(),
            bufs: p.bufs(),
            len: p.length(),
            mseq: p.mseq(),
            mseq_ack: p.mseq_ack(),
        })
    }

    /// 16.
    pub const fn buffer_len(&self) -> usize {
        BSDH_LEN
    }

    /// Writes the 16 bytes into the start of `buf`; `Err(Truncated)` when shorter.
    pub fn emit(&self, buf: &mut [u8]) -> Result<()> {
        let mut p = Bsdh::new_checked(buf)?;
        p.set_mid(self.mid);
        p.set_flags(self.flags);
        p.set_bufs(self.bufs);
        p.set_length(self.len);
        p.set_mseq(self.mseq);
        p.set_mseq_ack(self.mseq_ack);
        Ok(())
    }
}

impl Describe for BsdhRepr {
    fn describe(&self, d: &mut dyn Describer) {
        d.field("mid", Value::Uint(self.mid.into()));
        d.field("flags", Value::Hex(self.flags.into(), 2));
        d.field("bufs", Value::Uint(self.bufs.into()));
        d.field("len", Value::Uint(self.len.into()));
        d.field("mseq", Value::Uint(self.mseq.into()));
        d.field("mseq_ack", Value::Uint(self.mseq_ack.into()));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::describe::Collect;
    use crate::Error;
    use proptest::prelude::*;

    // A data message: MID 0, flags 0, bufs 7, len 21 (5 payload bytes), mseq 3, mseq_ack 2.
    const BYTES: [u8; 21] = [
        0x00, 0x00, 0x00, 0x07, 0x00, 0x00, 0x00, 0x15, 0x00, 0x00, 0x00, 0x03, 0x00, 0x00, 0x00,
        0x02, b'h', b'e', b'l', b'l', b'o',
    ];

    fn repr() -> BsdhRepr {
        BsdhRepr {
            mid: 0,
            flags: 0,
            bufs: 7,
            len: 21,
            mseq: 3,
            mseq_ack: 2,
        }
    }

    #[test]
    fn deconstruct() {
        let p = Bsdh::new_checked(&BYTES[..]).unwrap();
        assert_eq!(p.mid(), 0);
        assert_eq!(p.flags(), 0);
        assert_eq!(p.bufs(), 7);
        assert_eq!(p.length(), 21);
        assert_eq!(p.mseq(), 3);
        assert_eq!(p.mseq_ack(), 2);
        assert_eq!(p.payload(), b"hello");
    }

    #[test]
    fn construct() {
        let mut b = [0xffu8; 21];
        b[16..].copy_from_slice(b"hello");
        let mut p = Bsdh::new_unchecked(&mut b[..]);
        p.set_mid(0);
        p.set_flags(0);
        p.set_bufs(7);
        p.set_length(21);
        p.set_mseq(3);
        p.set_mseq_ack(2);
        assert_eq!(b, BYTES);
    }

    #[test]
    fn parse_emit() {
        assert_eq!(BsdhRepr::parse(&BYTES), Ok(repr()));
        let mut out = [0xaau8; 16];
        repr().emit(&mut out).unwrap();
        assert_eq!(out[..], BYTES[..16]);
        assert_eq!(BsdhRepr::parse(&BYTES[..15]), Err(Error::Truncated));
        assert_eq!(repr().emit(&mut [0u8; 15]), Err(Error::Truncated));
    }

    #[test]
    fn describe() {
        let mut c = Collect::default();
        repr().describe(&mut c);
        assert_eq!(c.get("bufs"), Some("7"));
        assert_eq!(c.get("mseq_ack"), Some("2"));
        assert_eq!(c.fields.len(), 6);
    }

    proptest! {
        #[test]
        fn round_trip(mid in any::<u8>(), flags in any::<u8>(), bufs in any::<u16>(),
            len in any::<u32>(), mseq in any::<u32>(), mseq_ack in any::<u32>()) {
            let r = BsdhRepr { mid, flags, bufs, len, mseq, mseq_ack };
            let mut b = [0u8; BSDH_LEN];
            r.emit(&mut b).unwrap();
            prop_assert_eq!(BsdhRepr::parse(&b), Ok(r));
        }

        #[test]
        fn parse_never_panics(data in proptest::collection::vec(any::<u8>(), 0..40)) {
            let _ = BsdhRepr::parse(&data);
        }
    }
}
