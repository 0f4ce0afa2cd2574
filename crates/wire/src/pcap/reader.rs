//! Reading a capture held in memory, without copying: each item borrows the packet bytes.

use super::erf::{ErfHeader, ErfHeaderRepr, ErfType, ERF_HEADER_LEN};
use super::header::{GlobalHeader, GlobalHeaderRepr, RecordHeaderRepr, RECORD_HEADER_LEN};
use super::{LinkType, PcapError};

/// One packet of a capture.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PcapPacket<'a> {
    /// Nanoseconds since the epoch (from the ERF header for link type 197, else the record header).
    pub ts_ns: u64,
    /// The IB packet bytes as captured, LRH onwards.
    pub data: &'a [u8],
    /// The packet's length on the wire (`wlen` for ERF, `orig_len` otherwise).
    pub orig_len: u32,
    /// The ERF header, for link type 197.
    pub erf: Option<ErfHeaderRepr>,
    /// Byte offset of the record in the file.
    pub offset: usize,
}

/// Iterates over the InfiniBand packets of a classic pcap capture with link type 197 (ERF type 21
/// records; padding records are skipped) or 247. Reads both byte orders and both resolutions. After
/// the first error the iterator ends.
#[derive(Debug, Clone)]
pub struct PcapReader<'a> {
    data: &'a [u8],
    header: GlobalHeaderRepr,
    pos: usize,
    failed: bool,
}

impl<'a> PcapReader<'a> {
    /// Checks the global header: magic, version 2.x, link type 197 or 247.
    pub fn new(data: &'a [u8]) -> Result<Self, PcapError> {
        let h = GlobalHeader::new_checked(data).map_err(|_| PcapError::TruncatedHeader)?;
        if h.format().is_none() {
            return Err(PcapError::BadMagic(h.raw_magic().swap_bytes()));
        }
        let header = GlobalHeaderRepr::parse(data).map_err(|_| PcapError::TruncatedHeader)?;
        if header.version_major != 2 {
            return Err(PcapError::UnsupportedVersion(
                header.version_major,
                header.version_minor,
            ));
        }
        if let LinkType::Unknown(l) = header.link_type {
            return Err(PcapError::UnsupportedLinkType(l));
        }
        Ok(PcapReader {
            data,
            header,
            pos: header.buffer_len(),
            failed: false,
        })
    }

    /// The global header.
    pub fn header(&self) -> &GlobalHeaderRepr {
        &self.header
    }

    /// Reads the next record: `None` at the end, `Some(Err)` once on a bad record.
    pub fn next_packet(&mut self) -> Option<Result<PcapPacket<'a>, PcapError>> {
        loop {
            if self.failed || self.pos >= self.data.len() {
                return None;
            }
            match self.record() {
                Ok(Some(p)) => return Some(Ok(p)),
                Ok(None) => continue,
                Err(e) => {
                    self.failed = true;
                    return Some(Err(e));
                }
            }
        }
    }

    /// One record; `Ok(None)` for an ERF padding record.
    fn record(&mut self) -> Result<Option<PcapPacket<'a>>, PcapError> {
        let offset = self.pos;
        let rest = &self.data[offset..];
        let truncated = PcapError::TruncatedRecord { offset };
        let rh = RecordHeaderRepr::parse(rest, self.header.byte_order).map_err(|_| truncated)?;
        let incl = usize::try_from(rh.incl_len).map_err(|_| truncated)?;
        let body = rest
            .get(RECORD_HEADER_LEN..RECORD_HEADER_LEN.saturating_add(incl))
            .ok_or(truncated)?;
        self.pos = offset + RECORD_HEADER_LEN + incl;
        let pcap_ts = self.header.resolution.join(rh.ts_sec, rh.ts_frac);
        if self.header.link_type != LinkType::Erf {
            return Ok(Some(PcapPacket {
                ts_ns: pcap_ts,
                data: body,
                orig_len: rh.orig_len,
                erf: None,
                offset,
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
        // Captured bytes end at rlen (or earlier if the pcap record was cut); padding past wlen
        // is dropped.
        let end = rlen.min(body.len()).min(start + usize::from(erf.wlen));
        Ok(Some(PcapPacket {
            ts_ns: erf.ts_ns(),
            data: &body[start..end],
            orig_len: erf.wlen.into(),
            erf: Some(erf),
            offset,
        }))
    }
}

impl<'a> Iterator for PcapReader<'a> {
    type Item = Result<PcapPacket<'a>, PcapError>;

    fn next(&mut self) -> Option<Self::Item> {
        self.next_packet()
    }
}
