//! The classic pcap global header (24 bytes) and record header (16 bytes). Their fields are in the
//! byte order of the machine that wrote the file, which the magic number reveals; this crate writes
//! little-endian and reads both.
//!
//! ```text
//! global: magic(4) version_major(2) version_minor(2) thiszone(4) sigfigs(4) snaplen(4) linktype(4)
//! record: ts_sec(4) ts_usec_or_nsec(4) incl_len(4) orig_len(4)
//! ```

use super::LinkType;
use crate::describe::{Describe, Describer, Value};
use crate::{Error, Result};

/// Magic of a file with microsecond timestamps.
pub const MAGIC_MICRO: u32 = 0xa1b2_c3d4;
/// Magic of a file with nanosecond timestamps.
pub const MAGIC_NANO: u32 = 0xa1b2_3c4d;
/// Length of the global header.
pub const GLOBAL_HEADER_LEN: usize = 24;
/// Length of a record header.
pub const RECORD_HEADER_LEN: usize = 16;

/// Byte order of a pcap file's header fields.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ByteOrder {
    /// Little-endian (what this crate writes).
    Little,
    /// Big-endian.
    Big,
}

impl ByteOrder {
    fn u16(self, b: &[u8], off: usize) -> u16 {
        let a = [b[off], b[off + 1]];
        match self {
            ByteOrder::Little => u16::from_le_bytes(a),
            ByteOrder::Big => u16::from_be_bytes(a),
        }
    }
    fn u32(self, b: &[u8], off: usize) -> u32 {
        let a = [b[off], b[off + 1], b[off + 2], b[off + 3]];
        match self {
            ByteOrder::Little => u32::from_le_bytes(a),
            ByteOrder::Big => u32::from_be_bytes(a),
        }
    }
    fn put16(self, b: &mut [u8], off: usize, v: u16) {
        let a = match self {
            ByteOrder::Little => v.to_le_bytes(),
            ByteOrder::Big => v.to_be_bytes(),
        };
        b[off..off + 2].copy_from_slice(&a);
    }
    fn put32(self, b: &mut [u8], off: usize, v: u32) {
        let a = match self {
            ByteOrder::Little => v.to_le_bytes(),
            ByteOrder::Big => v.to_be_bytes(),
        };
        b[off..off + 4].copy_from_slice(&a);
    }
}

/// Timestamp resolution, chosen by the magic number.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TsResolution {
    /// Microseconds (magic 0xa1b2c3d4).
    Micro,
    /// Nanoseconds (magic 0xa1b23c4d).
    Nano,
}

impl TsResolution {
    /// The magic number.
    pub fn magic(self) -> u32 {
        match self {
            TsResolution::Micro => MAGIC_MICRO,
            TsResolution::Nano => MAGIC_NANO,
        }
    }
    /// Splits nanoseconds since the epoch into (seconds, fraction in this resolution). Seconds wrap
    /// at 2^32 (year 2106), as the format's 32-bit field does.
    pub fn split(self, ts_ns: u64) -> (u32, u32) {
        let sec = (ts_ns / 1_000_000_000) as u32;
        let ns = (ts_ns % 1_000_000_000) as u32;
        match self {
            TsResolution::Micro => (sec, ns / 1000),
            TsResolution::Nano => (sec, ns),
        }
    }
    /// Joins (seconds, fraction) into nanoseconds. A fraction out of range is taken as is.
    pub fn join(self, sec: u32, frac: u32) -> u64 {
        let f = match self {
            TsResolution::Micro => u64::from(frac) * 1000,
            TsResolution::Nano => u64::from(frac),
        };
        u64::from(sec) * 1_000_000_000 + f
    }
}

mod gfield {
    pub const MAGIC: usize = 0;
    pub const VERSION_MAJOR: usize = 4;
    pub const VERSION_MINOR: usize = 6;
    pub const THISZONE: usize = 8;
    pub const SIGFIGS: usize = 12;
    pub const SNAPLEN: usize = 16;
    pub const LINKTYPE: usize = 20;
}

fixed_view! {
    /// A view of a pcap global header. The byte order comes from the magic number; an unknown magic
    /// reads as little-endian (check [`GlobalHeader::format`]).
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    pub struct GlobalHeader;
    /// `Err(Truncated)` below 24 bytes.
    fn check_len(min = GLOBAL_HEADER_LEN);
}

impl<T: AsRef<[u8]>> GlobalHeader<T> {
    /// The magic number as stored, read little-endian.
    pub fn raw_magic(&self) -> u32 {
        ByteOrder::Little.u32(self.buffer.as_ref(), gfield::MAGIC)
    }
    /// Byte order and resolution, or `None` for an unknown magic.
    pub fn format(&self) -> Option<(ByteOrder, TsResolution)> {
        match self.raw_magic() {
            MAGIC_MICRO => Some((ByteOrder::Little, TsResolution::Micro)),
            MAGIC_NANO => Some((ByteOrder::Little, TsResolution::Nano)),
            m if m.swap_bytes() == MAGIC_MICRO => Some((ByteOrder::Big, TsResolution::Micro)),
            m if m.swap_bytes() == MAGIC_NANO => Some((ByteOrder::Big, TsResolution::Nano)),
            _ => None,
        }
    }
    fn order(&self) -> ByteOrder {
        self.format().map_or(ByteOrder::Little, |f| f.0)
    }
    /// version_major (2).
    pub fn version_major(&self) -> u16 {
        self.order()
            .u16(self.buffer.as_ref(), gfield::VERSION_MAJOR)
    }
    /// version_minor (4).
    pub fn version_minor(&self) -> u16 {
        self.order()
            .u16(self.buffer.as_ref(), gfield::VERSION_MINOR)
    }
    /// thiszone (GMT offset, in practice 0).
    pub fn thiszone(&self) -> i32 {
        self.order().u32(self.buffer.as_ref(), gfield::THISZONE) as i32
    }
    /// sigfigs (in practice 0).
    pub fn sigfigs(&self) -> u32 {
        self.order().u32(self.buffer.as_ref(), gfield::SIGFIGS)
    }
    /// snaplen.
    pub fn snaplen(&self) -> u32 {
        self.order().u32(self.buffer.as_ref(), gfield::SNAPLEN)
    }
    /// Link type.
    pub fn link_type(&self) -> LinkType {
        self.order()
            .u32(self.buffer.as_ref(), gfield::LINKTYPE)
            .into()
    }
}

/// A pcap global header.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct GlobalHeaderRepr {
    /// Byte order of the header fields.
    pub byte_order: ByteOrder,
    /// Timestamp resolution.
    pub resolution: TsResolution,
    /// Major version (2).
    pub version_major: u16,
    /// Minor version (4).
    pub version_minor: u16,
    /// GMT offset in seconds.
    pub thiszone: i32,
    /// Timestamp accuracy.
    pub sigfigs: u32,
    /// Largest record data length.
    pub snaplen: u32,
    /// Link type of every record.
    pub link_type: LinkType,
}

impl GlobalHeaderRepr {
    /// Version 2.4, little-endian, zone 0.
    pub fn new(link_type: LinkType, resolution: TsResolution, snaplen: u32) -> Self {
        GlobalHeaderRepr {
            byte_order: ByteOrder::Little,
            resolution,
            version_major: 2,
            version_minor: 4,
            thiszone: 0,
            sigfigs: 0,
            snaplen,
            link_type,
        }
    }

    /// Parses a global header; `Err(Malformed)` for an unknown magic.
    pub fn parse(data: &[u8]) -> Result<Self> {
        let h = GlobalHeader::new_checked(data)?;
        let (byte_order, resolution) = h.format().ok_or(Error::Malformed)?;
        Ok(GlobalHeaderRepr {
            byte_order,
            resolution,
            version_major: h.version_major(),
            version_minor: h.version_minor(),
            thiszone: h.thiszone(),
            sigfigs: h.sigfigs(),
            snaplen: h.snaplen(),
            link_type: h.link_type(),
        })
    }

    /// 24.
    pub const fn buffer_len(&self) -> usize {
        GLOBAL_HEADER_LEN
    }

    /// Writes the 24 bytes into the start of `buf`.
    pub fn emit(&self, buf: &mut [u8]) -> Result<()> {
        GlobalHeader::new_checked(&*buf)?;
        let o = self.byte_order;
        o.put32(buf, gfield::MAGIC, self.resolution.magic());
        o.put16(buf, gfield::VERSION_MAJOR, self.version_major);
        o.put16(buf, gfield::VERSION_MINOR, self.version_minor);
        o.put32(buf, gfield::THISZONE, self.thiszone as u32);
        o.put32(buf, gfield::SIGFIGS, self.sigfigs);
        o.put32(buf, gfield::SNAPLEN, self.snaplen);
        o.put32(buf, gfield::LINKTYPE, self.link_type.into());
        Ok(())
    }
}

impl Describe for GlobalHeaderRepr {
    fn describe(&self, d: &mut dyn Describer) {
        d.field("magic", Value::Hex(self.resolution.magic().into(), 8));
        d.field(
            "byte_order",
            Value::Str(match self.byte_order {
                ByteOrder::Little => "little",
                ByteOrder::Big => "big",
            }),
        );
        d.field("version_major", Value::Uint(self.version_major.into()));
        d.field("version_minor", Value::Uint(self.version_minor.into()));
        d.field("thiszone", Value::Uint(self.thiszone as u32 as u64));
        d.field("sigfigs", Value::Uint(self.sigfigs.into()));
        d.field("snaplen", Value::Uint(self.snaplen.into()));
        d.field(
            "linktype",
            Value::Named(u32::from(self.link_type).into(), self.link_type.name()),
        );
    }
}

mod rfield {
    pub const TS_SEC: usize = 0;
    pub const TS_FRAC: usize = 4;
    pub const INCL_LEN: usize = 8;
    pub const ORIG_LEN: usize = 12;
}

/// A view of a pcap record header in the file's byte order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RecordHeader<T: AsRef<[u8]>> {
    buffer: T,
    order: ByteOrder,
}

impl<T: AsRef<[u8]>> RecordHeader<T> {
    /// Wraps a buffer without checking it.
    pub const fn new_unchecked(buffer: T, order: ByteOrder) -> Self {
        RecordHeader { buffer, order }
    }
    /// Wraps a buffer after [`Self::check_len`].
    pub fn new_checked(buffer: T, order: ByteOrder) -> Result<Self> {
        let h = Self::new_unchecked(buffer, order);
        h.check_len()?;
        Ok(h)
    }
    /// `Err(Truncated)` below 16 bytes.
    pub fn check_len(&self) -> Result<()> {
        if self.buffer.as_ref().len() < RECORD_HEADER_LEN {
            Err(Error::Truncated)
        } else {
            Ok(())
        }
    }
    /// The buffer.
    pub fn into_inner(self) -> T {
        self.buffer
    }
    /// Seconds.
    pub fn ts_sec(&self) -> u32 {
        self.order.u32(self.buffer.as_ref(), rfield::TS_SEC)
    }
    /// Microseconds or nanoseconds, per the magic.
    pub fn ts_frac(&self) -> u32 {
        self.order.u32(self.buffer.as_ref(), rfield::TS_FRAC)
    }
    /// Bytes of data that follow in the file.
    pub fn incl_len(&self) -> u32 {
        self.order.u32(self.buffer.as_ref(), rfield::INCL_LEN)
    }
    /// Length of the packet as seen.
    pub fn orig_len(&self) -> u32 {
        self.order.u32(self.buffer.as_ref(), rfield::ORIG_LEN)
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> RecordHeader<T> {
    /// Sets seconds.
    pub fn set_ts_sec(&mut self, v: u32) {
        self.order.put32(self.buffer.as_mut(), rfield::TS_SEC, v);
    }
    /// Sets the fraction.
    pub fn set_ts_frac(&mut self, v: u32) {
        self.order.put32(self.buffer.as_mut(), rfield::TS_FRAC, v);
    }
    /// Sets incl_len.
    pub fn set_incl_len(&mut self, v: u32) {
        self.order.put32(self.buffer.as_mut(), rfield::INCL_LEN, v);
    }
    /// Sets orig_len.
    pub fn set_orig_len(&mut self, v: u32) {
        self.order.put32(self.buffer.as_mut(), rfield::ORIG_LEN, v);
    }
}

/// A pcap record header.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct RecordHeaderRepr {
    /// Seconds.
    pub ts_sec: u32,
    /// Microseconds or nanoseconds.
    pub ts_frac: u32,
    /// Captured length.
    pub incl_len: u32,
    /// Original length.
    pub orig_len: u32,
}

impl RecordHeaderRepr {
    /// Parses a record header in byte order `order`.
    pub fn parse(data: &[u8], order: ByteOrder) -> Result<Self> {
        let h = RecordHeader::new_checked(data, order)?;
        Ok(RecordHeaderRepr {
            ts_sec: h.ts_sec(),
            ts_frac: h.ts_frac(),
            incl_len: h.incl_len(),
            orig_len: h.orig_len(),
        })
    }
    /// 16.
    pub const fn buffer_len(&self) -> usize {
        RECORD_HEADER_LEN
    }
    /// Writes the 16 bytes in byte order `order` into the start of `buf`.
    pub fn emit(&self, buf: &mut [u8], order: ByteOrder) -> Result<()> {
        let mut h = RecordHeader::new_checked(buf, order)?;
        h.set_ts_sec(self.ts_sec);
        h.set_ts_frac(self.ts_frac);
        h.set_incl_len(self.incl_len);
        h.set_orig_len(self.orig_len);
        Ok(())
    }
}

impl Describe for RecordHeaderRepr {
    fn describe(&self, d: &mut dyn Describer) {
        d.field("ts_sec", Value::Uint(self.ts_sec.into()));
        d.field("ts_frac", Value::Uint(self.ts_frac.into()));
        d.field("incl_len", Value::Uint(self.incl_len.into()));
        d.field("orig_len", Value::Uint(self.orig_len.into()));
    }
}
