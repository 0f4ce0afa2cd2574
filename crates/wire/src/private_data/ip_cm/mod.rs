//! Annex A11 RDMA IP CM service: the IP addressing header at the start of the CM REQ private data
//! (Table 1), the REJ ARI layout (Tables 3-5) and the server's byte-level checks (§A11.6).
//!
//! ```text
//! bytes  | 31-28 | 27-24 | 23-20 | 19-16 | 15-0        |
//! 0-3    | MajV  | MinV  | IPV   | Res   | Source Port |
//! 4-19   | Source IP Address (127-0)                   |
//! 20-35  | Destination IP Address (127-0)              |
//! 36-91  | Consumer Private Data (56 bytes)            |
//! ```
//!
//! Linux rdma_cm's `struct cma_hdr` is the same header (`cma_version` = MajV|MinV = 0x00,
//! `ip_version` in bits 7:4 of byte 1); IPv4 addresses sit in the last 4 bytes of each 16 after 12
//! zero bytes (CA11-5, `cma_ip_addr.ip4`), which is also where wireshark reads them. When reading,
//! an IPv4-mapped (`::ffff:a.b.c.d`) field is accepted as well (see [`super::V4Padding`]);
//! [`verify_req_private_data`] rejects it unless [`IpCmServerPolicy::accept_mapped_ipv4`] is set.

mod rej;
mod verify;

pub use rej::{IpCmAriCode, IpCmReject, RejAri, RejectionLayer, SuggestedValue};
pub use verify::{verify_req_private_data, IpCmServerPolicy};

use super::IpPair;
use crate::describe::{Describe, Describer, Value};
use crate::types::{be16, put16};
use crate::{Error, Result};

mod field {
    use core::ops::Range;
    /// MajV (bits 7:4), MinV (bits 3:0).
    pub const VERSION: usize = 0;
    /// IPV (bits 7:4), Res (bits 3:0).
    pub const IPV_RES: usize = 1;
    /// Source Port.
    pub const SPORT: Range<usize> = 2..4;
    /// Source IP Address.
    pub const SIP: Range<usize> = 4..20;
    /// Destination IP Address.
    pub const DIP: Range<usize> = 20..36;
    /// Consumer Private Data.
    pub const CONSUMER: usize = 36;
}

/// Length of the IP CM header (Annex A11 Table 1 bytes 0-35).
pub const HEADER_LEN: usize = 36;
/// Length of the CM REQ private data field (IBA 1 §12.6.5; Annex A11 Table 1 bytes 0-91).
pub const REQ_PRIVATE_DATA_LEN: usize = 92;
/// Room left for the consumer (Annex A11 Table 1 bytes 36-91).
pub const MAX_CONSUMER_LEN: usize = REQ_PRIVATE_DATA_LEN - HEADER_LEN;
/// The major version this annex defines ("requires MajV to be set to 0", §A11.4.1).
pub const MAJOR_VERSION: u8 = 0;
/// The minor version this annex defines ("requires MinV to be set to 0", §A11.4.2).
pub const MINOR_VERSION: u8 = 0;
/// CM REJ reason "Consumer Reject", used with an A11 ARI (Annex A11 oA11-1).
pub const REJ_REASON_CONSUMER_REJECT: u16 = 28;
/// CM REJ reason "Invalid Service ID", for a server without the IP CM service (Annex A11 CA11-8).
pub const REJ_REASON_INVALID_SERVICE_ID: u16 = 8;

/// A view of Annex A11 REQ private data.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IpCmReq<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> IpCmReq<T> {
    /// Wraps a buffer without checking its length.
    pub const fn new_unchecked(buffer: T) -> Self {
        IpCmReq { buffer }
    }

    /// Wraps a buffer after [`Self::check_len`].
    pub fn new_checked(buffer: T) -> Result<Self> {
        let p = Self::new_unchecked(buffer);
        p.check_len()?;
        Ok(p)
    }

    /// `Err(Truncated)` below the 36-byte header, `Err(Malformed)` above the 92-byte REQ field.
    pub fn check_len(&self) -> Result<()> {
        match self.buffer.as_ref().len() {
            n if n < HEADER_LEN => Err(Error::Truncated),
            n if n > REQ_PRIVATE_DATA_LEN => Err(Error::Malformed),
            _ => Ok(()),
        }
    }

    /// The buffer.
    pub fn into_inner(self) -> T {
        self.buffer
    }

    /// MajV (Annex A11 §A11.4.1).
    pub fn major_version(&self) -> u8 {
        self.buffer.as_ref()[field::VERSION] >> 4
    }
    /// MinV (Annex A11 §A11.4.2).
    pub fn minor_version(&self) -> u8 {
        self.buffer.as_ref()[field::VERSION] & 0x0f
    }
    /// IPV: 4 or 6, other values reserved (Annex A11 §A11.4.3).
    pub fn ip_version(&self) -> u8 {
        self.buffer.as_ref()[field::IPV_RES] >> 4
    }
    /// Res: zero on transmit, ignored on receive (Annex A11 §A11.4.4).
    pub fn reserved(&self) -> u8 {
        self.buffer.as_ref()[field::IPV_RES] & 0x0f
    }
    /// Source Port (Annex A11 §A11.4.5).
    pub fn source_port(&self) -> u16 {
        be16(self.buffer.as_ref(), field::SPORT.start)
    }
    /// The 16-byte Source IP Address field (Annex A11 §A11.4.6).
    pub fn source_ip_field(&self) -> &[u8] {
        &self.buffer.as_ref()[field::SIP]
    }
    /// The 16-byte Destination IP Address field (Annex A11 §A11.4.6).
    pub fn destination_ip_field(&self) -> &[u8] {
        &self.buffer.as_ref()[field::DIP]
    }
    /// Consumer Private Data: the bytes after the header (Annex A11 Table 1 bytes 36-91).
    pub fn consumer_private_data(&self) -> &[u8] {
        &self.buffer.as_ref()[field::CONSUMER..]
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> IpCmReq<T> {
    /// Sets MajV and MinV (4 bits each).
    pub fn set_version(&mut self, major: u8, minor: u8) {
        self.buffer.as_mut()[field::VERSION] = (major << 4) | (minor & 0x0f);
    }
    /// Sets IPV and Res (4 bits each).
    pub fn set_ip_version(&mut self, ipv: u8, reserved: u8) {
        self.buffer.as_mut()[field::IPV_RES] = (ipv << 4) | (reserved & 0x0f);
    }
    /// Sets the Source Port.
    pub fn set_source_port(&mut self, v: u16) {
        put16(self.buffer.as_mut(), field::SPORT.start, v);
    }
    /// The Source IP Address field, mutable.
    pub fn source_ip_field_mut(&mut self) -> &mut [u8] {
        &mut self.buffer.as_mut()[field::SIP]
    }
    /// The Destination IP Address field, mutable.
    pub fn destination_ip_field_mut(&mut self) -> &mut [u8] {
        &mut self.buffer.as_mut()[field::DIP]
    }
    /// Both address fields at once (for [`IpPair::write`]).
    fn ip_fields_mut(&mut self) -> (&mut [u8], &mut [u8]) {
        let (s, d) = self.buffer.as_mut()[field::SIP.start..field::DIP.end].split_at_mut(16);
        (s, d)
    }
    /// Consumer Private Data, mutable.
    pub fn consumer_private_data_mut(&mut self) -> &mut [u8] {
        &mut self.buffer.as_mut()[field::CONSUMER..]
    }
}

/// Annex A11 REQ private data (CA11-1).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct IpCmReqRepr<'a> {
    /// MajV; 0 in this annex.
    pub major_version: u8,
    /// MinV; 0 in this annex.
    pub minor_version: u8,
    /// The client's local port (Annex A11 §A11.4.5); the destination port is in the service ID.
    pub source_port: u16,
    /// Source and destination IP address, with the IP version (CA11-5).
    pub addrs: IpPair,
    /// The consumer's bytes after the header, at most [`MAX_CONSUMER_LEN`].
    pub consumer_private_data: &'a [u8],
}

impl<'a> IpCmReqRepr<'a> {
    /// Parses REQ private data (36 to 92 bytes). `Err(Unsupported)` for a reserved IPV,
    /// `Err(Malformed)` for an IPv4 field that is neither zero- nor `::ffff:`-padded. The version
    /// numbers are not checked here: [`verify_req_private_data`] does that as a server must.
    pub fn parse(data: &'a [u8]) -> Result<Self> {
        let p = IpCmReq::new_checked(data)?;
        let addrs = IpPair::read(
            p.ip_version(),
            p.source_ip_field(),
            p.destination_ip_field(),
        )?;
        Ok(IpCmReqRepr {
            major_version: p.major_version(),
            minor_version: p.minor_version(),
            source_port: p.source_port(),
            addrs,
            consumer_private_data: &data[HEADER_LEN..],
        })
    }

    /// 36 + the consumer data length.
    pub fn buffer_len(&self) -> usize {
        HEADER_LEN + self.consumer_private_data.len()
    }

    /// Writes the header and the consumer data into the start of `buf` (at least
    /// [`Self::buffer_len`] bytes; a CM layer passes its 92-byte field, the tail is left as is).
    /// Res is zero (§A11.4.4); IPv4 addresses get 12 zero bytes first (CA11-5).
    pub fn emit(&self, buf: &mut [u8]) -> Result<()> {
        let n = self.buffer_len();
        if buf.len() < n {
            return Err(Error::Truncated);
        }
        let mut p = IpCmReq::new_unchecked(&mut buf[..n]);
        p.set_version(self.major_version, self.minor_version);
        p.set_ip_version(self.addrs.version(), 0);
        p.set_source_port(self.source_port);
        let (s, d) = p.ip_fields_mut();
        self.addrs.write(s, d);
        p.consumer_private_data_mut()
            .copy_from_slice(self.consumer_private_data);
        Ok(())
    }
}

impl Describe for IpCmReqRepr<'_> {
    fn describe(&self, d: &mut dyn Describer) {
        d.field("majv", Value::Uint(self.major_version.into()));
        d.field("minv", Value::Uint(self.minor_version.into()));
        d.field("ipv", Value::Uint(self.addrs.version().into()));
        d.field("sport", Value::Uint(self.source_port.into()));
        self.addrs.describe(d);
        d.field("private", Value::Bytes(self.consumer_private_data));
    }
}

#[cfg(test)]
mod tests;
