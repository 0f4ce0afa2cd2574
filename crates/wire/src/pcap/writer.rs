//! Appending a capture: global header once, then one record per packet.

use super::erf::{ErfHeaderRepr, ERF_HEADER_LEN};
use super::header::{
    ByteOrder, GlobalHeaderRepr, RecordHeaderRepr, TsResolution, GLOBAL_HEADER_LEN,
    RECORD_HEADER_LEN,
};
use super::LinkType;
use std::io::{self, Write};

/// Writes a pcap capture of InfiniBand packets to `W` (little-endian, version 2.4).
///
/// For [`LinkType::Erf`] each packet becomes an ERF type 21 record: ERF header with the
/// nanosecond timestamp as ERF fixed point, interface 0, rlen = 16 + captured bytes (no padding),
/// wlen = packet length. The pcap record header carries the same time.
#[derive(Debug)]
pub struct PcapWriter<W: Write> {
    out: W,
    header: GlobalHeaderRepr,
}

impl<W: Write> PcapWriter<W> {
    /// Snap length of [`Self::new`]: the largest ERF record (rlen is 16 bits).
    pub const DEFAULT_SNAPLEN: u32 = 65535;

    /// Starts a capture with nanosecond timestamps and snap length 65535; writes the global header.
    pub fn new(out: W, link_type: LinkType) -> io::Result<Self> {
        Self::with_options(out, link_type, TsResolution::Nano, Self::DEFAULT_SNAPLEN)
    }

    /// Starts a capture with the given resolution and snap length; writes the global header.
    /// `InvalidInput` for a link type other than 197 and 247, or a snap length below the headers.
    pub fn with_options(
        mut out: W,
        link_type: LinkType,
        resolution: TsResolution,
        snaplen: u32,
    ) -> io::Result<Self> {
        let min = match link_type {
            LinkType::Erf => ERF_HEADER_LEN as u32,
            LinkType::Infiniband => 0,
            LinkType::Unknown(_) => {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidInput,
                    "pcap writer: link type must be 197 (ERF) or 247 (INFINIBAND)",
                ))
            }
        };
        if snaplen <= min {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "pcap writer: snap length too small",
            ));
        }
        let header = GlobalHeaderRepr::new(link_type, resolution, snaplen);
        let mut b = [0u8; GLOBAL_HEADER_LEN];
        header
            .emit(&mut b)
            .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))?;
        out.write_all(&b)?;
        Ok(PcapWriter { out, header })
    }

    /// The global header written.
    pub fn header(&self) -> &GlobalHeaderRepr {
        &self.header
    }

    /// Appends one packet (LRH to VCRC) seen at `ts_ns` nanoseconds since the epoch. A packet
    /// longer than the snap length is cut, keeping its original length in the headers.
    pub fn write_packet(&mut self, ts_ns: u64, packet: &[u8]) -> io::Result<()> {
        let snap = self.header.snaplen as usize;
        let (sec, frac) = self.header.resolution.split(ts_ns);
        match self.header.link_type {
            LinkType::Erf => {
                let room = snap.min(usize::from(u16::MAX)) - ERF_HEADER_LEN;
                let captured = packet.len().min(room);
                let wire = packet.len().min(usize::from(u16::MAX)) as u16;
                let erf = ErfHeaderRepr::infiniband(ts_ns, captured as u16, wire);
                let incl = (ERF_HEADER_LEN + captured) as u32;
                let orig = (ERF_HEADER_LEN + packet.len()) as u32;
                self.record(sec, frac, incl, orig)?;
                let mut b = [0u8; ERF_HEADER_LEN];
                erf.emit(&mut b)
                    .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))?;
                self.out.write_all(&b)?;
                self.out.write_all(&packet[..captured])
            }
            _ => {
                let captured = packet.len().min(snap);
                self.record(sec, frac, captured as u32, packet.len() as u32)?;
                self.out.write_all(&packet[..captured])
            }
        }
    }

    fn record(&mut self, sec: u32, frac: u32, incl_len: u32, orig_len: u32) -> io::Result<()> {
        let r = RecordHeaderRepr {
            ts_sec: sec,
            ts_frac: frac,
            incl_len,
            orig_len,
        };
        let mut b = [0u8; RECORD_HEADER_LEN];
        r.emit(&mut b, ByteOrder::Little)
            .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))?;
        self.out.write_all(&b)
    }

    /// The output.
    pub fn get_ref(&self) -> &W {
        &self.out
    }

    /// The output, mutably (e.g. to take what a `Vec` output holds so far and write it out).
    pub fn get_mut(&mut self) -> &mut W {
        &mut self.out
    }

    /// Flushes and returns the output.
    pub fn into_inner(mut self) -> io::Result<W> {
        self.out.flush()?;
        Ok(self.out)
    }
}
