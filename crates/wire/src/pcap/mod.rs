//! Capture files carrying InfiniBand packets (LRH to VCRC), either inside ERF records (link type
//! 197, ERF type 21) or bare (link type 247).
//!
//! [`PcapWriter`] appends classic pcap (little-endian, nanosecond time stamps) to any
//! `std::io::Write`. [`CaptureReader`] reads from any `std::io::Read`, in constant memory, classic
//! pcap in either byte order and resolution and pcapng (what Wireshark and tshark save by default):
//! sections in either byte order, several interfaces with their own link types, enhanced and simple
//! packet blocks; the record framing is the `pcap-parser` crate's. Opening files is the CLI's job.
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
pub use reader::{
    is_capture, CaptureError, CaptureFormat, CaptureReader, OwnedPacket, PcapPacket,
    INITIAL_BUFFER, MAX_RECORD, PCAPNG_MAGIC,
};
pub use writer::PcapWriter;

use core::fmt;

code_enum! {
    /// The link type of a pcap file (tcpdump.org LINKTYPE_* values).
    pub enum LinkType(u32) {
        /// 197, LINKTYPE_ERF: each record is an ERF record; type 21 carries an IB packet.
        Erf = 197 => "ERF",
        /// 247, LINKTYPE_INFINIBAND: each record is a raw IB packet, LRH to VCRC.
        Infiniband = 247 => "INFINIBAND",
        /// Anything else.
        Unknown(_) => "Unknown",
    }
}

/// Why a capture could not be read. `offset` is the byte offset of the record (pcap record header
/// or pcapng block) concerned.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum PcapError {
    /// Shorter than its file header (24 bytes for pcap, a whole section header block for pcapng).
    TruncatedHeader,
    /// Neither a pcap magic number in either byte order nor a pcapng section header block.
    BadMagic(u32),
    /// A pcap major version other than 2, or a pcapng section major version other than 1.
    UnsupportedVersion(u16, u16),
    /// A classic pcap file of a link type other than 197 and 247.
    UnsupportedLinkType(u32),
    /// A record header or its data runs past the end of the input.
    TruncatedRecord {
        /// Offset of the record.
        offset: u64,
    },
    /// A pcapng block that does not parse (lengths that disagree, options past its end, ...).
    BadBlock {
        /// Offset of the block.
        offset: u64,
    },
    /// A pcapng interface description with an impossible time resolution.
    BadInterface {
        /// Offset of the block.
        offset: u64,
    },
    /// A pcapng packet block naming an interface its section has not described.
    UnknownInterface {
        /// Offset of the block.
        offset: u64,
        /// The interface ID.
        interface: u32,
    },
    /// A record larger than the reader holds ([`MAX_RECORD`]).
    RecordTooLarge {
        /// Offset of the record.
        offset: u64,
    },
    /// An ERF record shorter than its header(s), or whose rlen is smaller than its headers.
    BadErfRecord {
        /// Offset of the record.
        offset: u64,
    },
    /// An ERF record of a type other than InfiniBand (21) or padding (48).
    UnsupportedErfType {
        /// Offset of the record.
        offset: u64,
        /// The ERF type (7 bits).
        erf_type: u8,
    },
}

impl fmt::Display for PcapError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            PcapError::TruncatedHeader => write!(f, "shorter than a capture file header"),
            PcapError::BadMagic(m) => {
                write!(f, "not a pcap or pcapng file: magic {m:#010x}")
            }
            PcapError::UnsupportedVersion(a, b) => write!(f, "unsupported version {a}.{b}"),
            PcapError::UnsupportedLinkType(l) => {
                write!(
                    f,
                    "unsupported link type {l} (expected 197 ERF or 247 INFINIBAND)"
                )
            }
            PcapError::TruncatedRecord { offset } => {
                write!(f, "record at byte {offset} runs past the end of the input")
            }
            PcapError::BadBlock { offset } => {
                write!(f, "block at byte {offset} is not a valid pcapng block")
            }
            PcapError::BadInterface { offset } => write!(
                f,
                "interface description at byte {offset} has an invalid time resolution"
            ),
            PcapError::UnknownInterface { offset, interface } => write!(
                f,
                "packet block at byte {offset} names interface {interface}, not described"
            ),
            PcapError::RecordTooLarge { offset } => write!(
                f,
                "record at byte {offset} is larger than {} MiB",
                MAX_RECORD >> 20
            ),
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
            PcapError::BadMagic(_)
            | PcapError::BadErfRecord { .. }
            | PcapError::BadBlock { .. }
            | PcapError::BadInterface { .. }
            | PcapError::UnknownInterface { .. } => crate::Error::Malformed,
            PcapError::UnsupportedVersion(..)
            | PcapError::UnsupportedLinkType(_)
            | PcapError::UnsupportedErfType { .. }
            | PcapError::RecordTooLarge { .. } => crate::Error::Unsupported,
        }
    }
}

#[cfg(test)]
mod tests;
