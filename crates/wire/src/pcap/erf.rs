//! The 16-byte ERF record header (Endace ERF; as wireshark's wiretap `erf.c` and epan
//! `packet-erf.c` read it):
//!
//! ```text
//! 0  ts      64-bit little-endian fixed point: seconds in the upper 32 bits, binary fraction below
//! 8  type    bit 7 = an extension header follows; bits 6:0 the record type (21 = InfiniBand)
//! 9  flags   bits 1:0 capture interface, 2 varying record length, 3 truncated, 4 RX error,
//!            5 DS error, 7:6 reserved
//! 10 rlen    big-endian: record length including this header
//! 12 lctr    big-endian: loss counter (or colour, by type)
//! 14 wlen    big-endian: length of the packet on the wire
//! ```
//!
//! Type 21 records carry the raw InfiniBand packet, LRH to VCRC, right after the header.

use crate::describe::{Describe, Describer, Value};
use crate::types::{be16, put16};
use crate::Result;

/// Length of the ERF header.
pub const ERF_HEADER_LEN: usize = 16;

mod field {
    pub const TS: usize = 0;
    pub const TYPE: usize = 8;
    pub const FLAGS: usize = 9;
    pub const RLEN: usize = 10;
    pub const LCTR: usize = 12;
    pub const WLEN: usize = 14;
}

/// ERF flag: varying record length.
pub const FLAG_VLEN: u8 = 0x04;
/// ERF flag: truncated record.
pub const FLAG_TRUNC: u8 = 0x08;
/// ERF flag: receive error.
pub const FLAG_RXE: u8 = 0x10;
/// ERF flag: DS error.
pub const FLAG_DSE: u8 = 0x20;

code_enum! {
    /// ERF record type (7 bits).
    pub enum ErfType(u8 & 0x7f) {
        /// 21: an InfiniBand packet, LRH to VCRC.
        Infiniband = 21 => "INFINIBAND",
        /// 25: an InfiniBand link packet.
        InfinibandLink = 25 => "INFINIBAND_LINK",
        /// 48: padding, no packet.
        Pad = 48 => "PAD",
        /// Anything else.
        Unknown(_) => "Unknown",
    }
}

/// ERF timestamp of `ts_ns` nanoseconds since the epoch: seconds in the upper 32 bits, the rest as
/// a binary fraction of a second (rounded to nearest, so [`erf_ts_to_ns`] gives `ts_ns` back).
pub fn erf_ts_from_ns(ts_ns: u64) -> u64 {
    let sec = ts_ns / 1_000_000_000;
    let ns = ts_ns % 1_000_000_000;
    let frac = ((u128::from(ns) << 32) + 500_000_000) / 1_000_000_000;
    (sec << 32) + frac as u64
}

/// Nanoseconds since the epoch of an ERF timestamp (rounded to nearest).
pub fn erf_ts_to_ns(ts: u64) -> u64 {
    let sec = ts >> 32;
    let frac = ts & 0xffff_ffff;
    let ns = ((u128::from(frac) * 1_000_000_000) + (1u128 << 31)) >> 32;
    sec.wrapping_mul(1_000_000_000).wrapping_add(ns as u64)
}

fixed_view! {
    /// A view of an ERF header.
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    pub struct ErfHeader;
    /// `Err(Truncated)` below 16 bytes.
    fn check_len(min = ERF_HEADER_LEN);
}

impl<T: AsRef<[u8]>> ErfHeader<T> {
    /// The raw timestamp (little-endian on the wire).
    pub fn ts(&self) -> u64 {
        let mut a = [0u8; 8];
        a.copy_from_slice(&self.buffer.as_ref()[field::TS..field::TS + 8]);
        u64::from_le_bytes(a)
    }
    /// Record type (bits 6:0).
    pub fn erf_type(&self) -> ErfType {
        self.buffer.as_ref()[field::TYPE].into()
    }
    /// True when an extension header follows (type bit 7).
    pub fn has_extension(&self) -> bool {
        self.buffer.as_ref()[field::TYPE] & 0x80 != 0
    }
    /// The flags byte.
    pub fn flags(&self) -> u8 {
        self.buffer.as_ref()[field::FLAGS]
    }
    /// Capture interface (flags bits 1:0).
    pub fn interface(&self) -> u8 {
        self.flags() & 0x03
    }
    /// Record length including the header.
    pub fn rlen(&self) -> u16 {
        be16(self.buffer.as_ref(), field::RLEN)
    }
    /// Loss counter / colour.
    pub fn lctr(&self) -> u16 {
        be16(self.buffer.as_ref(), field::LCTR)
    }
    /// Wire length.
    pub fn wlen(&self) -> u16 {
        be16(self.buffer.as_ref(), field::WLEN)
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> ErfHeader<T> {
    /// Sets the raw timestamp.
    pub fn set_ts(&mut self, v: u64) {
        self.buffer.as_mut()[field::TS..field::TS + 8].copy_from_slice(&v.to_le_bytes());
    }
    /// Sets the type byte: the 7-bit type and the extension bit.
    pub fn set_erf_type(&mut self, t: ErfType, extension: bool) {
        self.buffer.as_mut()[field::TYPE] = u8::from(t) | if extension { 0x80 } else { 0 };
    }
    /// Sets the flags byte.
    pub fn set_flags(&mut self, v: u8) {
        self.buffer.as_mut()[field::FLAGS] = v;
    }
    /// Sets rlen.
    pub fn set_rlen(&mut self, v: u16) {
        put16(self.buffer.as_mut(), field::RLEN, v);
    }
    /// Sets lctr.
    pub fn set_lctr(&mut self, v: u16) {
        put16(self.buffer.as_mut(), field::LCTR, v);
    }
    /// Sets wlen.
    pub fn set_wlen(&mut self, v: u16) {
        put16(self.buffer.as_mut(), field::WLEN, v);
    }
}

/// An ERF header.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ErfHeaderRepr {
    /// Raw timestamp ([`erf_ts_from_ns`], [`erf_ts_to_ns`]).
    pub ts: u64,
    /// Record type.
    pub erf_type: ErfType,
    /// An extension header follows.
    pub extension: bool,
    /// Flags byte (interface in bits 1:0, see `FLAG_*`).
    pub flags: u8,
    /// Record length including the header.
    pub rlen: u16,
    /// Loss counter.
    pub lctr: u16,
    /// Wire length.
    pub wlen: u16,
}

impl ErfHeaderRepr {
    /// The header of an InfiniBand record holding `captured` bytes of a `wire_len`-byte packet,
    /// unpadded, on interface 0, varying-length flag set (and truncated flag when short).
    pub fn infiniband(ts_ns: u64, captured: u16, wire_len: u16) -> Self {
        let mut flags = FLAG_VLEN;
        if captured < wire_len {
            flags |= FLAG_TRUNC;
        }
        ErfHeaderRepr {
            ts: erf_ts_from_ns(ts_ns),
            erf_type: ErfType::Infiniband,
            extension: false,
            flags,
            rlen: (ERF_HEADER_LEN as u16).saturating_add(captured),
            lctr: 0,
            wlen: wire_len,
        }
    }

    /// Parses the 16-byte header.
    pub fn parse(data: &[u8]) -> Result<Self> {
        let h = ErfHeader::new_checked(data)?;
        Ok(ErfHeaderRepr {
            ts: h.ts(),
            erf_type: h.erf_type(),
            extension: h.has_extension(),
            flags: h.flags(),
            rlen: h.rlen(),
            lctr: h.lctr(),
            wlen: h.wlen(),
        })
    }

    /// 16.
    pub const fn buffer_len(&self) -> usize {
        ERF_HEADER_LEN
    }

    /// Writes the 16 bytes into the start of `buf`.
    pub fn emit(&self, buf: &mut [u8]) -> Result<()> {
        let mut h = ErfHeader::new_checked(buf)?;
        h.set_ts(self.ts);
        h.set_erf_type(self.erf_type, self.extension);
        h.set_flags(self.flags);
        h.set_rlen(self.rlen);
        h.set_lctr(self.lctr);
        h.set_wlen(self.wlen);
        Ok(())
    }

    /// The timestamp in nanoseconds.
    pub fn ts_ns(&self) -> u64 {
        erf_ts_to_ns(self.ts)
    }
}

impl Describe for ErfHeaderRepr {
    fn describe(&self, d: &mut dyn Describer) {
        d.field("ts", Value::Hex(self.ts, 16));
        d.field(
            "type",
            Value::Named(u8::from(self.erf_type).into(), self.erf_type.name()),
        );
        d.field("ext_header", Value::Bool(self.extension));
        d.field("flags", Value::Hex(self.flags.into(), 2));
        d.field("cap", Value::Uint((self.flags & 0x03).into()));
        d.field("vlen", Value::Bool(self.flags & FLAG_VLEN != 0));
        d.field("trunc", Value::Bool(self.flags & FLAG_TRUNC != 0));
        d.field("rxe", Value::Bool(self.flags & FLAG_RXE != 0));
        d.field("dse", Value::Bool(self.flags & FLAG_DSE != 0));
        d.field("rlen", Value::Uint(self.rlen.into()));
        d.field("lctr", Value::Uint(self.lctr.into()));
        d.field("wlen", Value::Uint(self.wlen.into()));
    }
}
