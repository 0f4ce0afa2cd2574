//! Capture files: the classic pcap byte format carrying InfiniBand packets (LRH to VCRC), either
//! inside ERF records (link type 197, ERF type 21) or bare (link type 247).
//!
//! This module only formats bytes: [`PcapWriter`] appends to any `std::io::Write` (a `Vec<u8>` in
//! practice) and [`PcapReader`] walks a `&[u8]` without copying. Opening files is the CLI's job.
//!
//! Which link type to use: tshark (Debian's 4.0) dissects ERF type 21 records down to the IB
//! headers, MADs and IPoIB payloads, but has no dissector for link type 247, so [`LinkType::Erf`] is
//! the one to write for inspection; 247 is supported for tools that use it.
//!
//! ERF as wireshark reads it from pcap (wiretap `pcap-common.c`, `erf.c`; epan `packet-erf.c`):
//! the pcap record data is the 16-byte ERF header, any extension headers (8 bytes each, chained by
//! bit 7 of the type byte), then the payload, which for type 21 goes to the InfiniBand dissector
//! *as is*: wiretap does not trim it to `wlen`. Native ERF from DAG cards pads records to 8 bytes;
//! padding here would reach the dissector as trailing packet bytes, so the writer does not pad
//! (rlen = 16 + captured length) and the reader trims any padding it finds by `wlen`.

mod erf;
mod header;
mod reader;
mod writer;

pub use erf::{erf_ts_from_ns, erf_ts_to_ns, ErfHeader, ErfHeaderRepr, ErfType, ERF_HEADER_LEN};
pub use header::{
    ByteOrder, GlobalHeader, GlobalHeaderRepr, RecordHeader, RecordHeaderRepr, TsResolution,
    GLOBAL_HEADER_LEN, MAGIC_MICRO, MAGIC_NANO, RECORD_HEADER_LEN,
};
pub use reader::{PcapPacket, PcapReader};
pub use writer::PcapWriter;

use core::fmt;

/// The link type of a pcap file (tcpdump.org LINKTYPE_* values).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum LinkType {
    /// 197, LINKTYPE_ERF: each record is an ERF record; type 21 carries an IB packet.
    Erf,
    /// 247, LINKTYPE_INFINIBAND: each record is a raw IB packet, LRH to VCRC.
    Infiniband,
    /// Anything else.
    Unknown(u32),
}

impl From<u32> for LinkType {
    fn from(v: u32) -> Self {
        match v {
            197 => LinkType::Erf,
            247 => LinkType::Infiniband,
            x => LinkType::Unknown(x),
        }
    }
}

impl From<LinkType> for u32 {
    fn from(v: LinkType) -> u32 {
        match v {
            LinkType::Erf => 197,
            LinkType::Infiniband => 247,
            LinkType::Unknown(x) => x,
        }
    }
}

impl LinkType {
    /// The LINKTYPE_ name.
    pub fn name(&self) -> &'static str {
        match self {
            LinkType::Erf => "ERF",
            LinkType::Infiniband => "INFINIBAND",
            LinkType::Unknown(_) => "Unknown",
        }
    }
}

/// Why a capture could not be read. `offset` is the byte offset of the record concerned.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum PcapError {
    /// Shorter than the 24-byte global header.
    TruncatedHeader,
    /// Not a pcap magic number in either byte order (pcapng and others are not read).
    BadMagic(u32),
    /// A major version other than 2.
    UnsupportedVersion(u16, u16),
    /// A link type other than 197 and 247.
    UnsupportedLinkType(u32),
    /// A record header or its data runs past the end of the file.
    TruncatedRecord {
        /// Offset of the record header.
        offset: usize,
    },
    /// An ERF record shorter than its header(s), or whose rlen is smaller than its headers.
    BadErfRecord {
        /// Offset of the record header.
        offset: usize,
    },
    /// An ERF record of a type other than InfiniBand (21) or padding (48).
    UnsupportedErfType {
        /// Offset of the record header.
        offset: usize,
        /// The ERF type (7 bits).
        erf_type: u8,
    },
}

impl fmt::Display for PcapError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            PcapError::TruncatedHeader => write!(f, "not a pcap file: shorter than 24 bytes"),
            PcapError::BadMagic(m) => write!(f, "not a classic pcap file: magic {m:#010x}"),
            PcapError::UnsupportedVersion(a, b) => write!(f, "unsupported pcap version {a}.{b}"),
            PcapError::UnsupportedLinkType(l) => {
                write!(
                    f,
                    "unsupported link type {l} (expected 197 ERF or 247 INFINIBAND)"
                )
            }
            PcapError::TruncatedRecord { offset } => {
                write!(f, "record at byte {offset} runs past the end of the file")
            }
            PcapError::BadErfRecord { offset } => {
                write!(f, "ERF record at byte {offset} is shorter than its header")
            }
            PcapError::UnsupportedErfType { offset, erf_type } => write!(
                f,
                "ERF record at byte {offset} has type {erf_type}, not 21 (InfiniBand)"
            ),
        }
    }
}

impl std::error::Error for PcapError {}

impl From<PcapError> for crate::Error {
    fn from(e: PcapError) -> crate::Error {
        match e {
            PcapError::TruncatedHeader | PcapError::TruncatedRecord { .. } => {
                crate::Error::Truncated
            }
            PcapError::BadMagic(_) | PcapError::BadErfRecord { .. } => crate::Error::Malformed,
            PcapError::UnsupportedVersion(..)
            | PcapError::UnsupportedLinkType(_)
            | PcapError::UnsupportedErfType { .. } => crate::Error::Unsupported,
        }
    }
}

#[cfg(test)]
mod tests;
