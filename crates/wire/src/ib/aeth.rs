//! ACK Extended Transport Header (IBA 1 §9.3, with its syndrome table), 4 bytes:
//! `Syndrome(8) | MSN(24)`.

use crate::describe::{Describe, Describer, Value};
use crate::types::{be24, put24};
use crate::Result;

code_enum! {
    /// NAK codes, syndrome bits 4-0 when bits 6-5 are 11 (IBA 1 §9.3 AETH).
    pub enum NakCode(u8 & 0x1f) {
        /// 0: PSN sequence error.
        PsnSequenceError = 0 => "PSN Sequence Error",
        /// 1: invalid request.
        InvalidRequest = 1 => "Invalid Request",
        /// 2: remote access error.
        RemoteAccessError = 2 => "Remote Access Error",
        /// 3: remote operational error.
        RemoteOperationalError = 3 => "Remote Operational Error",
        /// 4: invalid RD request.
        InvalidRdRequest = 4 => "Invalid RD Request",
        /// 5-31: reserved.
        Unknown(_) => "Reserved",
    }
}

/// The AETH syndrome (IBA 1 §9.3 AETH): bit 7 reserved, bits 6-5 the kind, bits 4-0 its argument.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Syndrome {
    /// 00: ACK with an end-to-end credit count (31 = invalid credit count, no flow control).
    Ack {
        /// Credit count, 5 bits.
        credit_count: u8,
    },
    /// 01: receiver-not-ready NAK with the minimum RNR NAK timer code.
    RnrNak {
        /// Timer code, 5 bits (see [`Syndrome::rnr_timer_us`]).
        timer: u8,
    },
    /// 11: NAK with a code.
    Nak(NakCode),
    /// Bit 7 set or kind 10: reserved; the whole byte is kept.
    Reserved(u8),
}

/// RNR NAK timer codes in microseconds (IBA 1 RNR timer table, as Linux `IB_RNR_TIMER_*` names it).
const RNR_TIMER_US: [u32; 32] = [
    655_360, 10, 20, 30, 40, 60, 80, 120, 160, 240, 320, 480, 640, 960, 1280, 1920, 2560, 3840,
    5120, 7680, 10_240, 15_360, 20_480, 30_720, 40_960, 61_440, 81_920, 122_880, 163_840, 245_760,
    327_680, 491_520,
];

impl From<u8> for Syndrome {
    fn from(v: u8) -> Syndrome {
        if v & 0x80 != 0 {
            return Syndrome::Reserved(v);
        }
        match (v >> 5) & 3 {
            0 => Syndrome::Ack {
                credit_count: v & 0x1f,
            },
            1 => Syndrome::RnrNak { timer: v & 0x1f },
            3 => Syndrome::Nak(NakCode::from(v)),
            _ => Syndrome::Reserved(v),
        }
    }
}

impl From<Syndrome> for u8 {
    fn from(s: Syndrome) -> u8 {
        match s {
            Syndrome::Ack { credit_count } => credit_count & 0x1f,
            Syndrome::RnrNak { timer } => 0x20 | (timer & 0x1f),
            Syndrome::Nak(c) => 0x60 | u8::from(c),
            Syndrome::Reserved(v) => v,
        }
    }
}

impl Syndrome {
    /// The credit count that means "no end-to-end flow control" (IBA 1 §9.3, AETH).
    pub const INVALID_CREDIT_COUNT: u8 = 0x1f;

    /// "ACK", "RNR NAK", "NAK" or "Reserved".
    pub fn name(self) -> &'static str {
        match self {
            Syndrome::Ack { .. } => "ACK",
            Syndrome::RnrNak { .. } => "RNR NAK",
            Syndrome::Nak(_) => "NAK",
            Syndrome::Reserved(_) => "Reserved",
        }
    }

    /// For an RNR NAK, the timer in microseconds.
    pub fn rnr_timer_us(self) -> Option<u32> {
        match self {
            Syndrome::RnrNak { timer } => Some(RNR_TIMER_US[(timer & 0x1f) as usize]),
            _ => None,
        }
    }
}

fixed_view! {
    /// A view of an AETH.
    #[derive(Debug, Clone, PartialEq, Eq)]
    pub struct Aeth;
    /// `Err(Truncated)` when the buffer is shorter than the header.
    fn check_len(min = 4);
    /// The header length in bytes.
    pub const LEN;
}

impl<T: AsRef<[u8]>> Aeth<T> {
    /// The raw syndrome byte.
    pub fn syndrome_raw(&self) -> u8 {
        self.buffer.as_ref()[0]
    }
    /// The decoded syndrome.
    pub fn syndrome(&self) -> Syndrome {
        Syndrome::from(self.syndrome_raw())
    }
    /// Message sequence number.
    pub fn msn(&self) -> u32 {
        be24(self.buffer.as_ref(), 1)
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Aeth<T> {
    /// Sets the syndrome.
    pub fn set_syndrome(&mut self, s: Syndrome) {
        self.buffer.as_mut()[0] = u8::from(s);
    }
    /// Sets the MSN (low 24 bits).
    pub fn set_msn(&mut self, v: u32) {
        put24(self.buffer.as_mut(), 1, v);
    }
}

/// A parsed AETH.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct AethRepr {
    /// Syndrome.
    pub syndrome: Syndrome,
    /// Message sequence number (24 bits).
    pub msn: u32,
}

impl AethRepr {
    /// The header length.
    pub const LEN: usize = 4;

    /// Reads the header from a view.
    pub fn parse<T: AsRef<[u8]>>(v: &Aeth<T>) -> Result<AethRepr> {
        v.check_len()?;
        Ok(AethRepr {
            syndrome: v.syndrome(),
            msn: v.msn(),
        })
    }
    /// Reads the header from the start of `data`.
    pub fn parse_bytes(data: &[u8]) -> Result<AethRepr> {
        Self::parse(&Aeth::new_checked(data)?)
    }
    /// The header length.
    pub const fn buffer_len(&self) -> usize {
        Self::LEN
    }
    /// Writes the header into a view of at least [`AethRepr::LEN`] bytes.
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, v: &mut Aeth<T>) {
        v.set_syndrome(self.syndrome);
        v.set_msn(self.msn);
    }
    /// Writes the header at the start of `buf`.
    pub fn emit_bytes(&self, buf: &mut [u8]) {
        self.emit(&mut Aeth::new_unchecked(buf));
    }
}

impl Describe for AethRepr {
    fn describe(&self, d: &mut dyn Describer) {
        let raw = u8::from(self.syndrome) as u64;
        d.field("syndrome", Value::Named(raw, self.syndrome.name()));
        match self.syndrome {
            Syndrome::Ack { credit_count } => {
                d.field("credit_count", Value::Uint(credit_count as u64))
            }
            Syndrome::RnrNak { timer } => d.field("timer", Value::Uint(timer as u64)),
            Syndrome::Nak(c) => d.field("error_code", Value::Named(u8::from(c) as u64, c.name())),
            Syndrome::Reserved(_) => {}
        }
        d.field("msn", Value::Uint(self.msn as u64));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::describe::Collect;
    use crate::Error;
    use proptest::prelude::*;

    /// IBA 1 §9.3 AETH: syndrome encodings.
    #[test]
    fn syndrome_decoding() {
        assert_eq!(Syndrome::from(0x1f), Syndrome::Ack { credit_count: 31 });
        assert_eq!(Syndrome::from(0x2e), Syndrome::RnrNak { timer: 14 });
        assert_eq!(Syndrome::from(0x2e).rnr_timer_us(), Some(1280));
        assert_eq!(Syndrome::from(0x20).rnr_timer_us(), Some(655_360));
        assert_eq!(
            Syndrome::from(0x60),
            Syndrome::Nak(NakCode::PsnSequenceError)
        );
        assert_eq!(Syndrome::from(0x61), Syndrome::Nak(NakCode::InvalidRequest));
        assert_eq!(
            Syndrome::from(0x62),
            Syndrome::Nak(NakCode::RemoteAccessError)
        );
        assert_eq!(
            Syndrome::from(0x63),
            Syndrome::Nak(NakCode::RemoteOperationalError)
        );
        assert_eq!(
            Syndrome::from(0x64),
            Syndrome::Nak(NakCode::InvalidRdRequest)
        );
        assert_eq!(Syndrome::from(0x65), Syndrome::Nak(NakCode::Unknown(5)));
        assert_eq!(Syndrome::from(0x40), Syndrome::Reserved(0x40));
        assert_eq!(Syndrome::from(0x80), Syndrome::Reserved(0x80));
        for v in 0..=255u8 {
            assert_eq!(u8::from(Syndrome::from(v)), v);
        }
    }

    // NAK remote access error, MSN 0x000102.
    static BYTES: [u8; 4] = [0x62, 0x00, 0x01, 0x02];

    #[test]
    fn fixed_bytes() {
        let v = Aeth::new_checked(&BYTES[..]).unwrap();
        assert_eq!(v.syndrome(), Syndrome::Nak(NakCode::RemoteAccessError));
        assert_eq!(v.msn(), 0x102);
        let r = AethRepr {
            syndrome: Syndrome::Nak(NakCode::RemoteAccessError),
            msn: 0x102,
        };
        assert_eq!(AethRepr::parse_bytes(&BYTES).unwrap(), r);
        let mut b = [0u8; 4];
        let mut v = Aeth::new_unchecked(&mut b[..]);
        v.set_syndrome(r.syndrome);
        v.set_msn(0x102);
        assert_eq!(b, BYTES);
        let mut b = [0u8; 4];
        r.emit_bytes(&mut b);
        assert_eq!(b, BYTES);
        assert_eq!(AethRepr::parse_bytes(&BYTES[..3]), Err(Error::Truncated));
        let mut c = Collect::default();
        r.describe_as("aeth", &mut c);
        assert_eq!(c.get("aeth.syndrome"), Some("NAK (0x62)"));
        assert_eq!(c.get("aeth.error_code"), Some("Remote Access Error (0x2)"));
        assert_eq!(c.get("aeth.msn"), Some("258"));
    }

    proptest! {
        #[test]
        fn round_trip(s: u8, msn in 0..0x100_0000u32) {
            let r = AethRepr { syndrome: Syndrome::from(s), msn };
            let mut b = [0u8; 4];
            r.emit_bytes(&mut b);
            prop_assert_eq!(AethRepr::parse_bytes(&b).unwrap(), r);
        }

        #[test]
        fn parse_never_panics(data in proptest::collection::vec(any::<u8>(), 0..300)) {
            let _ = AethRepr::parse_bytes(&data);
        }
    }
}
