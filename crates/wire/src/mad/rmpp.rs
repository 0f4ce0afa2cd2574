//! The RMPP header (IBA 1 §13.6.2, Figure 171 in 1.3), 12 bytes right after the common MAD header
//! in RMPP classes (SA among them):
//!
//! ```text
//! 0  RMPPVersion | RMPPType | RRespTime(5) + RMPPFlags(3) | RMPPStatus
//! 4  Data1(32): SegmentNumber (DATA, ACK)
//! 8  Data2(32): PayloadLength (DATA) / NewWindowLast (ACK)
//! ```
//!
//! A view here is built on the MAD's data area (offset 24 of the MAD), so its offsets start at 0.

use super::RMPP_HEADER_LEN;
use crate::describe::{Describe, Describer, Value};
use crate::types::{be32, put32};
use crate::Result;

mod field {
    pub const VERSION: usize = 0;
    pub const TYPE: usize = 1;
    pub const RESP_TIME_FLAGS: usize = 2;
    pub const STATUS: usize = 3;
    pub const DATA1: usize = 4;
    pub const DATA2: usize = 8;
}

code_enum! {
    /// RMPPType (IBA 1 §13.6.2.1). Zero when the MAD does not use RMPP.
    pub enum RmppType(u8) {
        /// Not an RMPP packet (RMPPFlags.Active clear).
        None = 0 => "None",
        /// DATA.
        Data = 1 => "DATA",
        /// ACK.
        Ack = 2 => "ACK",
        /// STOP.
        Stop = 3 => "STOP",
        /// ABORT.
        Abort = 4 => "ABORT",
        /// A value this crate has no name for, kept as received.
        Unknown(_) => "Unknown",
    }
}

code_enum! {
    /// RMPPStatus (IBA 1 §13.6.2.1 Table 173 in 1.3).
    pub enum RmppStatus(u8) {
        /// Normal.
        Normal = 0 => "Normal",
        /// Resources exhausted (STOP).
        ResourcesExhausted = 1 => "ResourcesExhausted",
        /// Total time too long (ABORT).
        TotalTimeTooLong = 118 => "TotalTimeTooLong",
        /// Inconsistent Last and PayloadLength.
        InconsistentLastAndPayloadLength = 119 => "InconsistentLastAndPayloadLength",
        /// Inconsistent First and SegmentNumber.
        InconsistentFirstAndSegmentNumber = 120 => "InconsistentFirstAndSegmentNumber",
        /// Bad RMPPType.
        BadRmppType = 121 => "BadRMPPType",
        /// NewWindowLast too small.
        NewWindowLastTooSmall = 122 => "NewWindowLastTooSmall",
        /// SegmentNumber too big.
        SegmentNumberTooBig = 123 => "SegmentNumberTooBig",
        /// Illegal status.
        IllegalStatus = 124 => "IllegalStatus",
        /// Unsupported version.
        UnsupportedVersion = 125 => "UnsupportedVersion",
        /// Too many retries.
        TooManyRetries = 126 => "TooManyRetries",
        /// Unspecified error.
        Unspecified = 127 => "Unspecified",
        /// A value this crate has no name for, kept as received.
        Unknown(_) => "Unknown",
    }
}

/// RMPPFlags, the low 3 bits of byte 2 (IBA 1 §13.6.2.1).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct RmppFlags(pub u8);

impl RmppFlags {
    /// Active: this MAD is part of an RMPP transfer.
    pub const ACTIVE: u8 = 0x01;
    /// First segment.
    pub const FIRST: u8 = 0x02;
    /// Last segment.
    pub const LAST: u8 = 0x04;
    /// All three flags: a transfer in one segment.
    pub const SINGLE: RmppFlags = RmppFlags(0x07);

    /// Active bit.
    pub fn active(self) -> bool {
        self.0 & Self::ACTIVE != 0
    }
    /// First bit.
    pub fn first(self) -> bool {
        self.0 & Self::FIRST != 0
    }
    /// Last bit.
    pub fn last(self) -> bool {
        self.0 & Self::LAST != 0
    }
}

fixed_view! {
    /// A zero-copy view of the RMPP header; the buffer starts at the RMPP header (MAD offset 24).
    #[derive(Debug, Clone)]
    pub struct Rmpp;
    /// `Err(Truncated)` if shorter than 12 bytes.
    fn check_len(min = RMPP_HEADER_LEN);
}

impl<T: AsRef<[u8]>> Rmpp<T> {
    /// RMPPVersion (1 when active).
    pub fn version(&self) -> u8 {
        self.buffer.as_ref()[field::VERSION]
    }
    /// RMPPType.
    pub fn rmpp_type(&self) -> RmppType {
        RmppType::from(self.buffer.as_ref()[field::TYPE])
    }
    /// RRespTime, the upper 5 bits of byte 2.
    pub fn resp_time(&self) -> u8 {
        self.buffer.as_ref()[field::RESP_TIME_FLAGS] >> 3
    }
    /// RMPPFlags, the lower 3 bits of byte 2.
    pub fn flags(&self) -> RmppFlags {
        RmppFlags(self.buffer.as_ref()[field::RESP_TIME_FLAGS] & 0x07)
    }
    /// RMPPStatus.
    pub fn status(&self) -> RmppStatus {
        RmppStatus::from(self.buffer.as_ref()[field::STATUS])
    }
    /// Data1: SegmentNumber in DATA and ACK.
    pub fn data1(&self) -> u32 {
        be32(self.buffer.as_ref(), field::DATA1)
    }
    /// Data2: PayloadLength in DATA, NewWindowLast in ACK.
    pub fn data2(&self) -> u32 {
        be32(self.buffer.as_ref(), field::DATA2)
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Rmpp<T> {
    /// Sets RMPPVersion.
    pub fn set_version(&mut self, v: u8) {
        self.buffer.as_mut()[field::VERSION] = v;
    }
    /// Sets RMPPType.
    pub fn set_rmpp_type(&mut self, v: RmppType) {
        self.buffer.as_mut()[field::TYPE] = v.into();
    }
    /// Sets RRespTime (5 bits) and RMPPFlags (3 bits) together.
    pub fn set_resp_time_flags(&mut self, resp_time: u8, flags: RmppFlags) {
        self.buffer.as_mut()[field::RESP_TIME_FLAGS] = (resp_time << 3) | (flags.0 & 0x07);
    }
    /// Sets RMPPStatus.
    pub fn set_status(&mut self, v: RmppStatus) {
        self.buffer.as_mut()[field::STATUS] = v.into();
    }
    /// Sets Data1.
    pub fn set_data1(&mut self, v: u32) {
        put32(self.buffer.as_mut(), field::DATA1, v);
    }
    /// Sets Data2.
    pub fn set_data2(&mut self, v: u32) {
        put32(self.buffer.as_mut(), field::DATA2, v);
    }
}

/// The RMPP header (IBA 1 §13.6.2).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RmppRepr {
    /// RMPPVersion.
    pub version: u8,
    /// RMPPType.
    pub rmpp_type: RmppType,
    /// RRespTime (5 bits).
    pub resp_time: u8,
    /// RMPPFlags (3 bits).
    pub flags: RmppFlags,
    /// RMPPStatus.
    pub status: RmppStatus,
    /// Data1 (SegmentNumber).
    pub data1: u32,
    /// Data2 (PayloadLength or NewWindowLast).
    pub data2: u32,
}

impl RmppRepr {
    /// The all-zero header of a MAD that does not use RMPP (requests, single-MAD responses).
    pub const NONE: RmppRepr = RmppRepr {
        version: 0,
        rmpp_type: RmppType::None,
        resp_time: 0,
        flags: RmppFlags(0),
        status: RmppStatus::Normal,
        data1: 0,
        data2: 0,
    };
    /// RMPPVersion of IBA 1 (§13.6.2.1).
    pub const VERSION: u8 = 1;

    /// A DATA segment that is both first and last (segment 1): a whole RMPP transfer in one MAD.
    /// `payload_length` counts the class header (20 bytes for SA) plus the data, as Linux's
    /// `mad_rmpp.c` computes it (IBA 1 §13.6.2.3).
    pub fn single_segment(payload_length: u32) -> RmppRepr {
        RmppRepr {
            version: Self::VERSION,
            rmpp_type: RmppType::Data,
            resp_time: 0,
            flags: RmppFlags::SINGLE,
            status: RmppStatus::Normal,
            data1: 1,
            data2: payload_length,
        }
    }

    /// True if RMPPFlags.Active is set.
    pub fn is_active(&self) -> bool {
        self.flags.active()
    }
    /// SegmentNumber (Data1) of DATA and ACK.
    pub fn segment_number(&self) -> u32 {
        self.data1
    }
    /// PayloadLength (Data2) of a DATA segment.
    pub fn payload_length(&self) -> u32 {
        self.data2
    }
    /// NewWindowLast (Data2) of an ACK.
    pub fn new_window_last(&self) -> u32 {
        self.data2
    }

    /// Reads the header from a checked view.
    pub fn parse<T: AsRef<[u8]>>(r: &Rmpp<T>) -> Result<RmppRepr> {
        r.check_len()?;
        Ok(RmppRepr {
            version: r.version(),
            rmpp_type: r.rmpp_type(),
            resp_time: r.resp_time(),
            flags: r.flags(),
            status: r.status(),
            data1: r.data1(),
            data2: r.data2(),
        })
    }

    /// Reads the header from the first 12 bytes of `data`.
    pub fn parse_bytes(data: &[u8]) -> Result<RmppRepr> {
        RmppRepr::parse(&Rmpp::new_checked(data)?)
    }

    /// 12 bytes.
    pub const fn buffer_len(&self) -> usize {
        RMPP_HEADER_LEN
    }

    /// Writes the header into the first 12 bytes of `buf` (RRespTime and flags masked to their
    /// widths). Panics if `buf` is shorter.
    pub fn emit(&self, buf: &mut [u8]) {
        let mut r = Rmpp::new_unchecked(&mut buf[..RMPP_HEADER_LEN]);
        r.set_version(self.version);
        r.set_rmpp_type(self.rmpp_type);
        r.set_resp_time_flags(self.resp_time & 0x1f, self.flags);
        r.set_status(self.status);
        r.set_data1(self.data1);
        r.set_data2(self.data2);
    }
}

impl Describe for RmppRepr {
    fn describe(&self, d: &mut dyn Describer) {
        d.field("version", Value::Uint(self.version.into()));
        d.field(
            "type",
            Value::Named(u8::from(self.rmpp_type).into(), self.rmpp_type.name()),
        );
        d.field("resp_time", Value::Uint(self.resp_time.into()));
        d.field("flags", Value::Hex(self.flags.0.into(), 1));
        d.field("active", Value::Bool(self.flags.active()));
        d.field("first", Value::Bool(self.flags.first()));
        d.field("last", Value::Bool(self.flags.last()));
        d.field(
            "status",
            Value::Named(u8::from(self.status).into(), self.status.name()),
        );
        match self.rmpp_type {
            RmppType::Data => {
                d.field("segment_number", Value::Uint(self.data1.into()));
                d.field("payload_length", Value::Uint(self.data2.into()));
            }
            RmppType::Ack => {
                d.field("segment_number", Value::Uint(self.data1.into()));
                d.field("new_window_last", Value::Uint(self.data2.into()));
            }
            _ => {
                d.field("data1", Value::Hex(self.data1.into(), 8));
                d.field("data2", Value::Hex(self.data2.into(), 8));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mad::strategy::arb_rmpp;
    use crate::Error;
    use proptest::prelude::*;

    /// DATA, first and last, segment 1, payload 20 + 56 bytes, RRespTime 18 (IBA 1 §13.6.2).
    const BYTES: [u8; 12] = [
        0x01, 0x01, 0x97, 0x00, // version, type, (18 << 3) | 7, status
        0x00, 0x00, 0x00, 0x01, // segment number
        0x00, 0x00, 0x00, 0x4c, // payload length 76
    ];

    fn repr() -> RmppRepr {
        RmppRepr {
            resp_time: 18,
            ..RmppRepr::single_segment(76)
        }
    }

    // IBA 1 §13.6.2
    #[test]
    fn deconstruct() {
        let r = Rmpp::new_checked(&BYTES[..]).unwrap();
        assert_eq!(r.version(), 1);
        assert_eq!(r.rmpp_type(), RmppType::Data);
        assert_eq!(r.resp_time(), 18);
        assert!(r.flags().active() && r.flags().first() && r.flags().last());
        assert_eq!(r.status(), RmppStatus::Normal);
        assert_eq!(r.data1(), 1);
        assert_eq!(r.data2(), 76);
    }

    // IBA 1 §13.6.2
    #[test]
    fn construct() {
        let mut b = [0u8; 12];
        let mut r = Rmpp::new_unchecked(&mut b[..]);
        r.set_version(1);
        r.set_rmpp_type(RmppType::Data);
        r.set_resp_time_flags(18, RmppFlags::SINGLE);
        r.set_status(RmppStatus::Normal);
        r.set_data1(1);
        r.set_data2(76);
        assert_eq!(b, BYTES);
    }

    // IBA 1 §13.6.2
    #[test]
    fn parse_and_emit() {
        let r = RmppRepr::parse_bytes(&BYTES).unwrap();
        assert_eq!(r, repr());
        assert_eq!(r.segment_number(), 1);
        assert_eq!(r.payload_length(), 76);
        let mut out = [0u8; 12];
        r.emit(&mut out);
        assert_eq!(out, BYTES);
        assert_eq!(RmppRepr::parse_bytes(&[0u8; 12]).unwrap(), RmppRepr::NONE);
        assert!(!RmppRepr::NONE.is_active());
        assert_eq!(RmppRepr::parse_bytes(&[0u8; 11]), Err(Error::Truncated));
    }

    proptest! {
        #[test]
        fn emit_parse_identity(r in arb_rmpp()) {
            let mut b = [0u8; 12];
            r.emit(&mut b);
            prop_assert_eq!(RmppRepr::parse_bytes(&b).unwrap(), r);
        }

        #[test]
        fn parse_never_panics(data in proptest::collection::vec(any::<u8>(), 0..300)) {
            let _ = RmppRepr::parse_bytes(&data);
        }
    }
}
