//! The ARI (Additional Rejection Information) of a CM REJ "Consumer Reject" (reason 28) sent by an
//! RDMA IP CM service (Annex A11 §A11.7, Tables 3-5). It goes into the 72-byte ARI field of the
//! REJ, with the REJ's "Reject Info Length" set to [`IpCmReject::buffer_len`].
//!
//! ```text
//! byte 0     Rejection Layer        0x00 RDMA IP CM Service, 0x01 RDMA-aware ULP (Table 3)
//! byte 1     IP CM service layer ARI code (Table 5)
//! byte 2     Suggested Value Length (0 = none)
//! byte 3     alignment filler (reserved)
//! bytes 4-71 Suggested Value
//! ```

use crate::describe::{Describe, Describer, Value};
use crate::{Error, Result};

/// Length of the ARI field of a CM REJ.
pub const ARI_FIELD_LEN: usize = 72;
/// Bytes before the suggested value.
pub const ARI_HEADER_LEN: usize = 4;
/// Room for the suggested value (Table 4 bytes 4-71).
pub const MAX_SUGGESTED_LEN: usize = ARI_FIELD_LEN - ARI_HEADER_LEN;

mod field {
    pub const LAYER: usize = 0;
    pub const CODE: usize = 1;
    pub const SUGGESTED_LEN: usize = 2;
    pub const FILLER: usize = 3;
    pub const SUGGESTED: usize = 4;
}

code_enum! {
    /// Who rejected (Annex A11 Table 3, byte 0 of the ARI).
    pub enum RejectionLayer(u8) {
        /// 0x00: the RDMA IP CM service provider.
        IpCmService = 0 => "RdmaIpCmService",
        /// 0x01: the RDMA-aware ULP; bytes 1-71 are the ULP's.
        RdmaAwareUlp = 1 => "RdmaAwareUlp",
        /// Any other value.
        Unknown(_) => "Unknown",
    }
}

impl RejectionLayer {
    /// The layer of a REJ ARI (its first byte), `None` for an empty ARI.
    pub fn of(ari: &[u8]) -> Option<RejectionLayer> {
        ari.first().map(|&b| b.into())
    }
}

code_enum! {
    /// The RDMA IP CM service layer ARI code (Annex A11 Table 5, byte 1 of the ARI, CA11-10).
    pub enum IpCmAriCode(u8) {
        /// 0x00 Unspecified (also for security or other reasons; no suggested value).
        Unspecified = 0 => "Unspecified",
        /// 0x01 Major Version not supported.
        MajorVersion = 1 => "MajorVersion",
        /// 0x02 Minor Version not supported.
        MinorVersion = 2 => "MinorVersion",
        /// 0x03 IP version not supported.
        Ipv = 3 => "IPV",
        /// 0x04 Source IP Address inconsistent with the IP version.
        SourceIpAddress = 4 => "SourceIpAddress",
        /// 0x05 Destination IP Address inconsistent with the IP version.
        DestinationIpAddress = 5 => "DestinationIpAddress",
        /// 0x06 Destination IP Address does not match the server's.
        UnknownIpAddress = 6 => "UnknownIpAddress",
        /// Any other value.
        Unknown(_) => "Unknown",
    }
}

/// A suggested value of up to 68 bytes (Annex A11 Table 4 bytes 4-71, oA11-2), stored inline.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct SuggestedValue {
    len: u8,
    bytes: [u8; MAX_SUGGESTED_LEN],
}

impl SuggestedValue {
    /// No suggested value (length 0).
    pub const NONE: SuggestedValue = SuggestedValue {
        len: 0,
        bytes: [0; MAX_SUGGESTED_LEN],
    };

    /// A suggested value; `Err(Malformed)` above 68 bytes.
    pub fn new(v: &[u8]) -> Result<Self> {
        if v.len() > MAX_SUGGESTED_LEN {
            return Err(Error::Malformed);
        }
        let mut s = SuggestedValue::NONE;
        s.bytes[..v.len()].copy_from_slice(v);
        s.len = v.len() as u8;
        Ok(s)
    }

    /// A one-byte suggestion (a version number or an IP version).
    pub const fn byte(b: u8) -> Self {
        let mut s = SuggestedValue::NONE;
        s.bytes[0] = b;
        s.len = 1;
        s
    }

    /// The value.
    pub fn as_bytes(&self) -> &[u8] {
        &self.bytes[..usize::from(self.len).min(MAX_SUGGESTED_LEN)]
    }

    /// True when there is none.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

impl core::fmt::Debug for SuggestedValue {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "SuggestedValue({:02x?})", self.as_bytes())
    }
}

impl Default for SuggestedValue {
    fn default() -> Self {
        SuggestedValue::NONE
    }
}

/// A view of a REJ ARI (Annex A11 Tables 3 and 4).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RejAri<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> RejAri<T> {
    /// Wraps a buffer without checking it.
    pub const fn new_unchecked(buffer: T) -> Self {
        RejAri { buffer }
    }

    /// Wraps a buffer after [`Self::check_len`].
    pub fn new_checked(buffer: T) -> Result<Self> {
        let p = Self::new_unchecked(buffer);
        p.check_len()?;
        Ok(p)
    }

    /// `Err(Truncated)` below the 4-byte IP CM ARI header or when the suggested value runs past the
    /// buffer; `Err(Malformed)` above 72 bytes or for a suggested length above 68.
    pub fn check_len(&self) -> Result<()> {
        let b = self.buffer.as_ref();
        if b.len() > ARI_FIELD_LEN {
            return Err(Error::Malformed);
        }
        if b.len() < ARI_HEADER_LEN {
            return Err(Error::Truncated);
        }
        let n = usize::from(b[field::SUGGESTED_LEN]);
        if n > MAX_SUGGESTED_LEN {
            return Err(Error::Malformed);
        }
        if ARI_HEADER_LEN + n > b.len() {
            return Err(Error::Truncated);
        }
        Ok(())
    }

    /// The buffer.
    pub fn into_inner(self) -> T {
        self.buffer
    }

    /// Rejection Layer (Table 3).
    pub fn rejection_layer(&self) -> RejectionLayer {
        self.buffer.as_ref()[field::LAYER].into()
    }
    /// IP CM service layer ARI code (Table 5, CA11-10: byte 1).
    pub fn code(&self) -> IpCmAriCode {
        self.buffer.as_ref()[field::CODE].into()
    }
    /// Suggested Value Length.
    pub fn suggested_len(&self) -> u8 {
        self.buffer.as_ref()[field::SUGGESTED_LEN]
    }
    /// The alignment filler (reserved).
    pub fn filler(&self) -> u8 {
        self.buffer.as_ref()[field::FILLER]
    }
    /// Suggested Value (oA11-2).
    pub fn suggested_value(&self) -> &[u8] {
        let n = usize::from(self.suggested_len());
        &self.buffer.as_ref()[field::SUGGESTED..field::SUGGESTED + n]
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> RejAri<T> {
    /// Sets the Rejection Layer.
    pub fn set_rejection_layer(&mut self, v: RejectionLayer) {
        self.buffer.as_mut()[field::LAYER] = v.into();
    }
    /// Sets the ARI code.
    pub fn set_code(&mut self, v: IpCmAriCode) {
        self.buffer.as_mut()[field::CODE] = v.into();
    }
    /// Sets the Suggested Value Length.
    pub fn set_suggested_len(&mut self, v: u8) {
        self.buffer.as_mut()[field::SUGGESTED_LEN] = v;
    }
    /// Sets the filler.
    pub fn set_filler(&mut self, v: u8) {
        self.buffer.as_mut()[field::FILLER] = v;
    }
    /// The suggested value bytes (as long as the current length says), mutable.
    pub fn suggested_value_mut(&mut self) -> &mut [u8] {
        let n = usize::from(self.suggested_len());
        &mut self.buffer.as_mut()[field::SUGGESTED..field::SUGGESTED + n]
    }
}

/// A rejection by the RDMA IP CM service: what [`super::verify_req_private_data`] returns and what
/// goes, as the ARI, into a CM REJ with reason [`super::REJ_REASON_CONSUMER_REJECT`] (oA11-1).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct IpCmReject {
    /// Table 5 code (CA11-10).
    pub code: IpCmAriCode,
    /// Suggested value for the rejected field (oA11-2); empty for Unspecified.
    pub suggested: SuggestedValue,
}

impl IpCmReject {
    /// A rejection without a suggested value.
    pub const fn new(code: IpCmAriCode) -> Self {
        IpCmReject {
            code,
            suggested: SuggestedValue::NONE,
        }
    }

    /// Parses an ARI whose Rejection Layer is the IP CM service (0x00); `Err(Unsupported)` for
    /// another layer (a ULP's ARI is the ULP's to read).
    pub fn parse(ari: &[u8]) -> Result<Self> {
        let p = RejAri::new_checked(ari)?;
        if p.rejection_layer() != RejectionLayer::IpCmService {
            return Err(Error::Unsupported);
        }
        Ok(IpCmReject {
            code: p.code(),
            suggested: SuggestedValue::new(p.suggested_value())?,
        })
    }

    /// 4 + the suggested value length: the REJ's Reject Info Length (at most 72).
    pub fn buffer_len(&self) -> usize {
        ARI_HEADER_LEN + self.suggested.as_bytes().len()
    }

    /// Writes the ARI into the start of `buf` (the REJ's 72-byte ARI field, or exactly
    /// [`Self::buffer_len`] bytes). Layer 0x00 (CA11-9), code at byte 1 (CA11-10), filler zero.
    pub fn emit(&self, buf: &mut [u8]) -> Result<()> {
        let n = self.buffer_len();
        if buf.len() < n {
            return Err(Error::Truncated);
        }
        let v = self.suggested.as_bytes();
        let mut p = RejAri::new_unchecked(&mut buf[..n]);
        p.set_rejection_layer(RejectionLayer::IpCmService);
        p.set_code(self.code);
        p.set_suggested_len(v.len() as u8);
        p.set_filler(0);
        p.suggested_value_mut().copy_from_slice(v);
        Ok(())
    }
}

impl Describe for IpCmReject {
    fn describe(&self, d: &mut dyn Describer) {
        let layer = RejectionLayer::IpCmService;
        d.field(
            "rejection_layer",
            Value::Named(u8::from(layer).into(), layer.name()),
        );
        d.field(
            "ari_code",
            Value::Named(u8::from(self.code).into(), self.code.name()),
        );
        d.field(
            "suggested_len",
            Value::Uint(self.suggested.as_bytes().len() as u64),
        );
        d.field("suggested_value", Value::Bytes(self.suggested.as_bytes()));
    }
}
