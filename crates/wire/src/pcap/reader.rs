//! Reading a capture as a stream, in constant memory: classic pcap (either byte order, micro- or
//! nanosecond time stamps) and pcapng (sections in either byte order, several interfaces each with
//! its own link type and time resolution, enhanced and simple packet blocks; every other block is
//! skipped). The `pcap-parser` crate frames the records over a buffer of fixed size; this module
//! keeps the state pcapng needs (the interfaces of the current section), turns time stamps into
//! nanoseconds and unwraps ERF records.
//!
//! Memory: the reader holds its read buffer ([`INITIAL_BUFFER`], grown only for a record larger than
//! it, up to [`MAX_RECORD`]) and one packet, the last one handed out, which is borrowed from it and
//! gone at the next call.

use super::erf::{ErfHeader, ErfHeaderRepr, ErfType, ERF_HEADER_LEN};
use super::header::{GlobalHeaderRepr, GLOBAL_HEADER_LEN, MAGIC_MICRO, MAGIC_NANO};
use super::{LinkType, PcapError};
use core::fmt;
use core::ops::Range;
use pcap_parser::traits::{PcapNGPacketBlock, PcapReaderIterator};
use pcap_parser::{Block, LegacyPcapReader, PcapBlockOwned, PcapNGReader};
use std::cell::Cell;
use std::io::{self, Read};
use std::rc::Rc;

/// The block type of a pcapng section header block, the first four bytes of a pcapng file (the
/// same in both byte orders).
pub const PCAPNG_MAGIC: u32 = 0x0a0d_0d0a;

/// The read buffer's size: a few hundred records of IB packets at a time.
pub const INITIAL_BUFFER: usize = 256 * 1024;

/// The largest record (pcap record or pcapng block) the reader holds; the buffer grows up to it for
/// a larger record and the reader stops with [`PcapError::RecordTooLarge`] beyond.
pub const MAX_RECORD: usize = 16 * 1024 * 1024;

/// True when `head` (the first bytes of an input, at least 4) starts like a capture this module
/// reads: a classic pcap magic in either byte order and resolution, or a pcapng section header.
pub fn is_capture(head: &[u8]) -> bool {
    let Some(m) = head.get(..4) else {
        return false;
    };
    let m = u32::from_le_bytes([m[0], m[1], m[2], m[3]]);
    m == PCAPNG_MAGIC
        || [MAGIC_MICRO, MAGIC_NANO]
            .iter()
            .any(|&x| m == x || m.swap_bytes() == x)
}

/// One packet of a capture, borrowed from the reader until its next call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PcapPacket<'a> {
    /// Nanoseconds since the epoch (from the ERF header for link type 197, else the record's time
    /// stamp); `None` for a pcapng simple packet block, which has none.
    pub ts_ns: Option<u64>,
    /// The link type of the packet's interface (of the file, for classic pcap).
    pub link_type: LinkType,
    /// The pcapng interface of the packet, in order of description within its section; 0 for pcap.
    pub interface: u32,
    /// For link types 197 and 247, the IB packet bytes as captured, LRH onwards; for any other
    /// link type (pcapng interfaces only), the record's bytes as they are.
    pub data: &'a [u8],
    /// The packet's length on the wire (`wlen` for ERF, the record's original length otherwise).
    pub orig_len: u32,
    /// The ERF header, for link type 197.
    pub erf: Option<ErfHeaderRepr>,
    /// Byte offset of the record (pcap record header or pcapng block) in the input.
    pub offset: u64,
}

/// A packet copied out of a capture, from [`CaptureReader::read_all`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OwnedPacket {
    /// As [`PcapPacket::ts_ns`].
    pub ts_ns: Option<u64>,
    /// As [`PcapPacket::link_type`].
    pub link_type: LinkType,
    /// As [`PcapPacket::data`].
    pub data: Vec<u8>,
    /// As [`PcapPacket::orig_len`].
    pub orig_len: u32,
}

/// Which format the input is in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CaptureFormat {
    /// Classic pcap, with its global header.
    Pcap(GlobalHeaderRepr),
    /// pcapng.
    PcapNg,
}

/// Why a capture could not be read further: its bytes, or the input under them.
#[derive(Debug)]
pub enum CaptureError {
    /// The bytes are not a capture this module reads, or stop making sense.
    Format(PcapError),
    /// Reading the input failed.
    Io(io::Error),
}

impl fmt::Display for CaptureError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CaptureError::Format(e) => e.fmt(f),
            CaptureError::Io(e) => write!(f, "read error: {e}"),
        }
    }
}

impl std::error::Error for CaptureError {}

impl From<PcapError> for CaptureError {
    fn from(e: PcapError) -> Self {
        CaptureError::Format(e)
    }
}

/// The time base of a pcapng interface.
#[derive(Debug, Clone, Copy)]
struct Interface {
    link_type: LinkType,
    snaplen: u32,
    /// Time stamp units per second (`if_tsresol`, default 10^6).
    units_per_s: u64,
    /// Seconds added to every time stamp (`if_tsoffset`).
    offset_s: i64,
}

/// Fills every read as far as the input allows (so a short read means the end of the input, which
/// `pcap-parser` relies on), and keeps the input's error for the message.
/// An error after some bytes is held back until those bytes have been read.
struct Fill<R> {
    inner: R,
    error: Rc<Cell<Option<io::Error>>>,
    deferred: Option<io::Error>,
}

impl<R> Fill<R> {
    fn new(inner: R, error: &Rc<Cell<Option<io::Error>>>) -> Self {
        Fill {
            inner,
            error: error.clone(),
            deferred: None,
        }
    }

    fn fail(&mut self, e: io::Error) -> io::Error {
        let kind = e.kind();
        self.error.set(Some(e));
        kind.into()
    }
}

impl<R: Read> Read for Fill<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if let Some(e) = self.deferred.take() {
            return Err(self.fail(e));
        }
        let mut n = 0;
        while n < buf.len() {
            match self.inner.read(&mut buf[n..]) {
                Ok(0) => break,
                Ok(k) => n += k,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) if n > 0 => {
                    self.deferred = Some(e);
                    break;
                }
                Err(e) => return Err(self.fail(e)),
            }
        }
        Ok(n)
    }
}

type Source<R> = Fill<io::Chain<io::Cursor<Vec<u8>>, R>>;

enum Inner<R: Read> {
    Pcap(LegacyPcapReader<Source<R>>),
    PcapNg(PcapNGReader<Source<R>>),
}

/// Reads the InfiniBand packets of a pcap or pcapng capture from any [`Read`], one at a time; see
/// the module docs. After the first error the reader ends.
pub struct CaptureReader<R: Read> {
    inner: Inner<R>,
    format: CaptureFormat,
    /// The interfaces of the current pcapng section, in order of description.
    interfaces: Vec<Interface>,
    io_error: Rc<Cell<Option<io::Error>>>,
    capacity: usize,
    /// Bytes of the record handed out last, consumed at the next call (the packet borrows them).
    pending: usize,
    failed: bool,
}

impl<R: Read> fmt::Debug for CaptureReader<R> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CaptureReader")
            .field("format", &self.format)
            .field("interfaces", &self.interfaces)
            .field("capacity", &self.capacity)
            .field("failed", &self.failed)
            .finish_non_exhaustive()
    }
}

impl<R: Read> CaptureReader<R> {
    /// Reads the start of `input` and checks it: a pcapng section header block, or a classic pcap
    /// global header with version 2.x and link type 197 or 247.
    pub fn new(input: R) -> Result<Self, CaptureError> {
        let io_error = Rc::new(Cell::new(None));
        let mut input = Fill::new(input, &io_error);
        let io_err = |e: io::Error, cell: &Rc<Cell<Option<io::Error>>>| {
            CaptureError::Io(cell.take().unwrap_or(e))
        };
        let mut head = [0u8; GLOBAL_HEADER_LEN];
        let got = input
            .read(&mut head[..4])
            .map_err(|e| io_err(e, &io_error))?;
        if let Some(e) = input.deferred.take() {
            return Err(CaptureError::Io(e));
        }
        if got < 4 {
            return Err(PcapError::TruncatedHeader.into());
        }
        let magic = u32::from_le_bytes([head[0], head[1], head[2], head[3]]);
        if magic == PCAPNG_MAGIC {
            let src = Fill::new(
                io::Cursor::new(head[..4].to_vec()).chain(input.inner),
                &io_error,
            );
            let r = PcapNGReader::new(INITIAL_BUFFER, src).map_err(|e| match e {
                pcap_parser::PcapError::ReadError => io_err(io::ErrorKind::Other.into(), &io_error),
                pcap_parser::PcapError::Incomplete(_) => PcapError::TruncatedHeader.into(),
                _ => PcapError::BadBlock { offset: 0 }.into(),
            })?;
            return Ok(Self::with(
                Inner::PcapNg(r),
                CaptureFormat::PcapNg,
                io_error,
            ));
        }
        if !is_capture(&head) {
            return Err(PcapError::BadMagic(magic.swap_bytes()).into());
        }
        let got = input
            .read(&mut head[4..])
            .map_err(|e| io_err(e, &io_error))?;
        if let Some(e) = input.deferred.take() {
            return Err(CaptureError::Io(e));
        }
        let header = GlobalHeaderRepr::parse(&head[..4 + got])
            .map_err(|_| CaptureError::Format(PcapError::TruncatedHeader))?;
        if header.version_major != 2 {
            return Err(
                PcapError::UnsupportedVersion(header.version_major, header.version_minor).into(),
            );
        }
        if let LinkType::Unknown(l) = header.link_type {
            return Err(PcapError::UnsupportedLinkType(l).into());
        }
        let src = Fill::new(io::Cursor::new(head.to_vec()).chain(input.inner), &io_error);
        let r = LegacyPcapReader::new(INITIAL_BUFFER, src).map_err(|e| match e {
            pcap_parser::PcapError::ReadError => io_err(io::ErrorKind::Other.into(), &io_error),
            _ => PcapError::TruncatedHeader.into(),
        })?;
        Ok(Self::with(
            Inner::Pcap(r),
            CaptureFormat::Pcap(header),
            io_error,
        ))
    }

    fn with(inner: Inner<R>, format: CaptureFormat, io_error: Rc<Cell<Option<io::Error>>>) -> Self {
        CaptureReader {
            inner,
            format,
            interfaces: Vec::new(),
            io_error,
            capacity: INITIAL_BUFFER,
            pending: 0,
            failed: false,
        }
    }

    /// The input's format (and, for classic pcap, its global header).
    pub fn format(&self) -> CaptureFormat {
        self.format
    }

    /// The read buffer's size now: [`INITIAL_BUFFER`] unless a record needed more.
    pub fn buffer_capacity(&self) -> usize {
        self.capacity
    }

    /// Reads every packet into memory: for tests and small captures.
    pub fn read_all(input: R) -> Result<Vec<OwnedPacket>, CaptureError> {
        let mut r = CaptureReader::new(input)?;
        let mut out = Vec::new();
        while let Some(p) = r.next_packet() {
            let p = p?;
            out.push(OwnedPacket {
                ts_ns: p.ts_ns,
                link_type: p.link_type,
                data: p.data.to_vec(),
                orig_len: p.orig_len,
            });
        }
        Ok(out)
    }

    /// The next packet: `None` at the end of the input, `Some(Err)` once when the input cannot be
    /// read further (the reader then ends).
    pub fn next_packet(&mut self) -> Option<Result<PcapPacket<'_>, CaptureError>> {
        if self.failed {
            return None;
        }
        match self.locate() {
            Ok(Some((r, Unwrapped { range, erf }))) => Some(Ok(PcapPacket {
                ts_ns: erf.map(|e| e.ts_ns()).or(r.ts_ns),
                link_type: r.link_type,
                interface: r.interface,
                data: &self.parser_data()[r.start + range.start..r.start + range.end],
                orig_len: erf.map_or(r.orig_len, |e| e.wlen.into()),
                erf,
                offset: r.offset,
            })),
            Ok(None) => None,
            Err(e) => {
                self.failed = true;
                Some(Err(e))
            }
        }
    }

    /// The next packet record and where its IB packet lies in the record.
    fn locate(&mut self) -> Result<Option<(Record, Unwrapped)>, CaptureError> {
        loop {
            let Some(r) = self.advance()? else {
                return Ok(None);
            };
            let body = &self.parser_data()[r.start..r.start + r.len];
            // `None` is an ERF padding record: on to the next.
            if let Some(u) = unwrap_record(r.link_type, body, r.offset)? {
                return Ok(Some((r, u)));
            }
        }
    }

    fn parser(&mut self) -> &mut dyn PcapReaderIterator {
        match &mut self.inner {
            Inner::Pcap(r) => r,
            Inner::PcapNg(r) => r,
        }
    }

    fn parser_data(&self) -> &[u8] {
        match &self.inner {
            Inner::Pcap(r) => r.data(),
            Inner::PcapNg(r) => r.data(),
        }
    }

    /// Consumes the record handed out last and moves to the next packet record, which then starts
    /// the parser's buffer (it stays there until the next call).
    fn advance(&mut self) -> Result<Option<Record>, CaptureError> {
        let pending = std::mem::take(&mut self.pending);
        self.parser().consume(pending);
        loop {
            let offset = self.parser().consumed() as u64;
            let base = self.parser_data().as_ptr() as usize;
            let header = match self.format {
                CaptureFormat::Pcap(h) => Some(h),
                CaptureFormat::PcapNg => None,
            };
            let interfaces = &mut self.interfaces;
            let parser: &mut dyn PcapReaderIterator = match &mut self.inner {
                Inner::Pcap(r) => r,
                Inner::PcapNg(r) => r,
            };
            use pcap_parser::PcapError as E;
            let next = match parser.next() {
                Ok((size, block)) => {
                    Next::Block(size, interpret(block, header, interfaces, base, offset))
                }
                Err(E::Eof) => Next::End,
                Err(E::Incomplete(_)) => Next::Incomplete,
                Err(E::BufferTooSmall) => Next::TooSmall,
                Err(E::UnexpectedEof) => Next::Truncated,
                Err(E::ReadError) => Next::ReadError,
                Err(_) => Next::Bad,
            };
            match next {
                Next::Block(size, step) => match step? {
                    Step::Skip => {
                        self.parser().consume(size);
                    }
                    Step::Packet(mut r) => {
                        self.pending = size;
                        r.offset = offset;
                        return Ok(Some(r));
                    }
                },
                Next::End => return Ok(None),
                // More bytes needed: read them, into a bigger buffer if this one is full.
                Next::Incomplete if self.parser_data().len() >= self.capacity => {
                    self.grow(offset)?
                }
                Next::Incomplete => self.refill()?,
                Next::TooSmall => self.grow(offset)?,
                Next::Truncated => return Err(PcapError::TruncatedRecord { offset }.into()),
                Next::ReadError => return Err(self.io_failure()),
                Next::Bad => return Err(PcapError::BadBlock { offset }.into()),
            }
        }
    }

    fn refill(&mut self) -> Result<(), CaptureError> {
        let failed = self.parser().refill().is_err();
        if failed {
            return Err(self.io_failure());
        }
        Ok(())
    }

    /// Doubles the buffer for a record larger than it, up to [`MAX_RECORD`].
    fn grow(&mut self, offset: u64) -> Result<(), CaptureError> {
        let new = self.capacity.saturating_mul(2);
        if new > MAX_RECORD {
            return Err(PcapError::RecordTooLarge { offset }.into());
        }
        self.parser().grow(new);
        self.capacity = new;
        self.refill()
    }

    fn io_failure(&self) -> CaptureError {
        let e = self.io_error.take();
        CaptureError::Io(e.unwrap_or_else(|| io::ErrorKind::Other.into()))
    }
}

/// What the parser said, owned so that its borrow of the buffer ends before the reader acts.
enum Next {
    Block(usize, Result<Step, PcapError>),
    End,
    Incomplete,
    TooSmall,
    Truncated,
    ReadError,
    Bad,
}

/// What a parsed block means.
enum Step {
    /// Nothing to hand out (a header, an interface, statistics, ...).
    Skip,
    Packet(Record),
}

/// A packet record: its metadata and where its bytes lie in the parser's buffer.
#[derive(Debug, Clone, Copy)]
struct Record {
    offset: u64,
    ts_ns: Option<u64>,
    interface: u32,
    link_type: LinkType,
    start: usize,
    len: usize,
    orig_len: u32,
}

/// Reads one block: records pcapng sections and interfaces, and locates a packet's bytes.
fn interpret(
    block: PcapBlockOwned<'_>,
    header: Option<GlobalHeaderRepr>,
    interfaces: &mut Vec<Interface>,
    base: usize,
    offset: u64,
) -> Result<Step, PcapError> {
    let at = |data: &[u8]| (data.as_ptr() as usize).wrapping_sub(base);
    match block {
        PcapBlockOwned::LegacyHeader(_) => Ok(Step::Skip),
        PcapBlockOwned::Legacy(b) => {
            let h = header.ok_or(PcapError::BadBlock { offset })?;
            Ok(Step::Packet(Record {
                offset,
                ts_ns: Some(h.resolution.join(b.ts_sec, b.ts_usec)),
                interface: 0,
                link_type: h.link_type,
                start: at(b.data),
                len: b.data.len(),
                orig_len: b.origlen,
            }))
        }
        PcapBlockOwned::NG(Block::SectionHeader(shb)) => {
            // draft-ietf-opsawg-pcapng §4.1: a reader refuses a section of a major version it does
            // not know.
            if shb.major_version != 1 {
                return Err(PcapError::UnsupportedVersion(
                    shb.major_version,
                    shb.minor_version,
                ));
            }
            interfaces.clear();
            Ok(Step::Skip)
        }
        PcapBlockOwned::NG(Block::InterfaceDescription(idb)) => {
            let units_per_s =
                units_per_s(idb.if_tsresol).ok_or(PcapError::BadInterface { offset })?;
            interfaces.push(Interface {
                link_type: LinkType::from(idb.linktype.0 as u32),
                snaplen: idb.snaplen,
                units_per_s,
                offset_s: idb.ts_offset(),
            });
            Ok(Step::Skip)
        }
        PcapBlockOwned::NG(Block::EnhancedPacket(epb)) => {
            let i = interfaces
                .get(epb.if_id as usize)
                .ok_or(PcapError::UnknownInterface {
                    offset,
                    interface: epb.if_id,
                })?;
            let ts = (u64::from(epb.ts_high) << 32) | u64::from(epb.ts_low);
            let data = epb.packet_data();
            Ok(Step::Packet(Record {
                offset,
                ts_ns: Some(ts_to_ns(ts, i.units_per_s, i.offset_s)),
                interface: epb.if_id,
                link_type: i.link_type,
                start: at(data),
                len: data.len(),
                orig_len: epb.origlen,
            }))
        }
        PcapBlockOwned::NG(Block::SimplePacket(spb)) => {
            // draft-ietf-opsawg-pcapng §4.4: a simple packet belongs to the section's first
            // interface; its captured length is the original length cut to that interface's snap
            // length.
            let i = interfaces.first().ok_or(PcapError::UnknownInterface {
                offset,
                interface: 0,
            })?;
            let mut data = spb.packet_data();
            if i.snaplen != 0 {
                data = &data[..data.len().min(i.snaplen as usize)];
            }
            Ok(Step::Packet(Record {
                offset,
                ts_ns: None,
                interface: 0,
                link_type: i.link_type,
                start: at(data),
                len: data.len(),
                orig_len: spb.origlen,
            }))
        }
        // Statistics, name resolution, secrets, custom and unknown blocks carry no packet.
        PcapBlockOwned::NG(_) => Ok(Step::Skip),
    }
}

/// The units per second of a pcapng `if_tsresol` (draft-ietf-opsawg-pcapng §4.2): 10^-x s, or
/// 2^-x s when bit 7 is set; `None` past what 64 bits hold. (`pcap-parser` 0.17's own
/// `ts_resolution` refuses every binary resolution.)
fn units_per_s(tsresol: u8) -> Option<u64> {
    let x = u32::from(tsresol & 0x7f);
    if tsresol & 0x80 != 0 {
        1u64.checked_shl(x).filter(|_| x < 64)
    } else {
        10u64.checked_pow(x)
    }
}

/// A pcapng time stamp (`units` since the epoch, less `offset_s` seconds) in nanoseconds,
/// saturating at the ends of `u64`.
fn ts_to_ns(units: u64, units_per_s: u64, offset_s: i64) -> u64 {
    let per = u128::from(units_per_s);
    let u = u128::from(units);
    let ns = (u / per) * 1_000_000_000 + (u % per) * 1_000_000_000 / per;
    let ns = ns as i128 + i128::from(offset_s) * 1_000_000_000;
    ns.clamp(0, i128::from(u64::MAX)) as u64
}

/// Where a record's IB packet lies in it, and its ERF header.
struct Unwrapped {
    range: Range<usize>,
    erf: Option<ErfHeaderRepr>,
}

/// Where the IB packet lies inside a record of link type `link`: the whole record for 247 (and,
/// untouched, for link types this module does not interpret), the payload of an ERF type 21 record
/// for 197; `None` for an ERF padding record.
fn unwrap_record(link: LinkType, body: &[u8], offset: u64) -> Result<Option<Unwrapped>, PcapError> {
    if link != LinkType::Erf {
        return Ok(Some(Unwrapped {
            range: 0..body.len(),
            erf: None,
        }));
    }
    let bad = PcapError::BadErfRecord { offset };
    let erf = ErfHeaderRepr::parse(body).map_err(|_| bad)?;
    // Extension headers: 8 bytes each, chained by bit 7 of the previous type byte.
    let mut start = ERF_HEADER_LEN;
    let mut more = erf.extension;
    while more {
        let ext = body.get(start..start + 8).ok_or(bad)?;
        more = ext[0] & 0x80 != 0;
        start += 8;
    }
    let rlen = usize::from(ErfHeader::new_unchecked(body).rlen());
    if rlen < start {
        return Err(bad);
    }
    match erf.erf_type {
        ErfType::Infiniband => {}
        ErfType::Pad => return Ok(None),
        t => {
            return Err(PcapError::UnsupportedErfType {
                offset,
                erf_type: t.into(),
            })
        }
    }
    // Captured bytes end at rlen (or earlier if the record was cut); padding past wlen is dropped.
    let end = rlen.min(body.len()).min(start + usize::from(erf.wlen));
    Ok(Some(Unwrapped {
        range: start..end,
        erf: Some(erf),
    }))
}
