//! The 4-octet IPoIB encapsulation header that prefixes every IP and ARP datagram carried in a UD
//! (and, by RFC 4755 §4, RC/UC) payload: a 16-bit type (an IANA EtherType) and 16 reserved bits
//! (draft-ietf-ipoib-ip-over-infiniband-06 §6, figure 3).

use crate::describe::{Describe, Describer, Value};
use crate::types::{be16, put16};
use crate::Result;

mod field {
    use core::ops::Range;
    pub const TYPE: Range<usize> = 0..2;
    pub const RESERVED: Range<usize> = 2..4;
    pub const PAYLOAD: usize = 4;
}

/// Length of the encapsulation header (draft-ietf-ipoib-ip-over-infiniband-06 §6).
pub const HEADER_LEN: usize = field::PAYLOAD;

code_enum! {
    /// The encapsulated protocol (draft-ietf-ipoib-ip-over-infiniband-06 §6, table 1: the type field
    /// SHALL indicate the protocol with its IANA EtherType). Other EtherTypes are kept as `Unknown`.
    #[derive(PartialOrd, Ord)]
    pub enum EtherType(u16) {
        /// 0x0800.
        Ipv4 = 0x0800 => "IPv4",
        /// 0x0806.
        Arp = 0x0806 => "ARP",
        /// 0x8035.
        Rarp = 0x8035 => "RARP",
        /// 0x86DD.
        Ipv6 = 0x86dd => "IPv6",
        /// Any other value, kept as received.
        Unknown(_) => "Unknown",
    }
}

fixed_view! {
    /// A read/write view of an encapsulation header followed by its payload.
    #[derive(Debug, Clone)]
    pub struct EncapHeader;
    /// `Err(Truncated)` if the buffer is shorter than the header.
    fn check_len(min = HEADER_LEN);
}

impl<T: AsRef<[u8]>> EncapHeader<T> {
    /// The type field (draft-ietf-ipoib-ip-over-infiniband-06 §6).
    pub fn ethertype(&self) -> EtherType {
        EtherType::from(be16(self.buffer.as_ref(), field::TYPE.start))
    }

    /// The reserved field as received.
    pub fn reserved(&self) -> u16 {
        be16(self.buffer.as_ref(), field::RESERVED.start)
    }

    /// The encapsulated datagram.
    pub fn payload(&self) -> &[u8] {
        &self.buffer.as_ref()[field::PAYLOAD..]
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> EncapHeader<T> {
    /// Sets the type field.
    pub fn set_ethertype(&mut self, t: EtherType) {
        put16(self.buffer.as_mut(), field::TYPE.start, t.into());
    }

    /// Sets the reserved field (zero on send: draft-ietf-ipoib-ip-over-infiniband-06 §6).
    pub fn set_reserved(&mut self, v: u16) {
        put16(self.buffer.as_mut(), field::RESERVED.start, v);
    }

    /// The encapsulated datagram, writable.
    pub fn payload_mut(&mut self) -> &mut [u8] {
        &mut self.buffer.as_mut()[field::PAYLOAD..]
    }
}

/// The encapsulation header as a value.
///
/// The draft's figure 3 labels bits 16-31 "Reserved" without a rule for them; this crate applies the
/// usual reading (as for the link-layer address flags of §9.1.1): zero on send, ignored on receive. The
/// received value is kept in `reserved` so that a parse/emit round trip is exact; [`EncapRepr::new`]
/// sets it to zero.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct EncapRepr {
    /// The encapsulated protocol.
    pub ethertype: EtherType,
    /// The reserved field as received (zero when sending).
    pub reserved: u16,
}

impl EncapRepr {
    /// A header for `ethertype` with the reserved field zero, as sent
    /// (draft-ietf-ipoib-ip-over-infiniband-06 §6).
    pub const fn new(ethertype: EtherType) -> EncapRepr {
        EncapRepr {
            ethertype,
            reserved: 0,
        }
    }

    /// Reads the header; the reserved field is ignored (kept, never rejected).
    pub fn parse<T: AsRef<[u8]>>(h: &EncapHeader<T>) -> Result<EncapRepr> {
        h.check_len()?;
        Ok(EncapRepr {
            ethertype: h.ethertype(),
            reserved: h.reserved(),
        })
    }

    /// Always 4.
    pub const fn buffer_len(&self) -> usize {
        HEADER_LEN
    }

    /// Writes the header into the first 4 bytes of `h`.
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, h: &mut EncapHeader<T>) {
        h.set_ethertype(self.ethertype);
        h.set_reserved(self.reserved);
    }
}

impl Describe for EncapRepr {
    fn describe(&self, d: &mut dyn Describer) {
        d.field(
            "type",
            Value::Named(u16::from(self.ethertype) as u64, self.ethertype.name()),
        );
        if self.reserved != 0 {
            d.field("reserved", Value::Hex(self.reserved as u64, 4));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::describe::Collect;
    use crate::Error;
    use proptest::prelude::*;

    // draft-ietf-ipoib-ip-over-infiniband-06 §6: type 0x0800, reserved zero, then the IPv4 header.
    static BYTES: [u8; 6] = [0x08, 0x00, 0x00, 0x00, 0x45, 0x00];

    #[test]
    fn deconstruct() {
        let h = EncapHeader::new_checked(&BYTES[..]).unwrap();
        assert_eq!(h.ethertype(), EtherType::Ipv4);
        assert_eq!(h.reserved(), 0);
        assert_eq!(h.payload(), &[0x45, 0x00]);
    }

    #[test]
    fn construct() {
        let mut buf = [0xffu8; 6];
        let mut h = EncapHeader::new_unchecked(&mut buf[..]);
        h.set_ethertype(EtherType::Ipv4);
        h.set_reserved(0);
        h.payload_mut().copy_from_slice(&[0x45, 0x00]);
        assert_eq!(buf, BYTES);
    }

    // draft-ietf-ipoib-ip-over-infiniband-06 §6 table 1: the four type values.
    #[test]
    fn table_1_type_values() {
        for (v, t) in [
            (0x0800, EtherType::Ipv4),
            (0x0806, EtherType::Arp),
            (0x8035, EtherType::Rarp),
            (0x86dd, EtherType::Ipv6),
            (0x88b5, EtherType::Unknown(0x88b5)),
        ] {
            assert_eq!(EtherType::from(v), t);
            assert_eq!(u16::from(t), v);
        }
    }

    #[test]
    fn parse_emit() {
        let r = EncapRepr::parse(&EncapHeader::new_unchecked(&BYTES[..])).unwrap();
        assert_eq!(r, EncapRepr::new(EtherType::Ipv4));
        let mut buf = [0u8; 4];
        r.emit(&mut EncapHeader::new_unchecked(&mut buf[..]));
        assert_eq!(buf, BYTES[..4]);
    }

    // draft-ietf-ipoib-ip-over-infiniband-06 §6: reserved bits are ignored on receive (kept, not rejected).
    #[test]
    fn reserved_ignored_on_receive() {
        let r =
            EncapRepr::parse(&EncapHeader::new_unchecked(&[0x86, 0xdd, 0x12, 0x34][..])).unwrap();
        assert_eq!(r.ethertype, EtherType::Ipv6);
        assert_eq!(r.reserved, 0x1234);
        let mut c = Collect::default();
        r.describe(&mut c);
        assert_eq!(c.get("type"), Some("IPv6 (0x86dd)"));
        assert_eq!(c.get("reserved"), Some("0x1234"));
    }

    #[test]
    fn truncated() {
        assert_eq!(
            EncapHeader::new_checked(&[0x08, 0x00, 0x00][..]).err(),
            Some(Error::Truncated)
        );
    }

    proptest! {
        #[test]
        fn round_trip(t in any::<u16>(), reserved in any::<u16>()) {
            let r = EncapRepr { ethertype: EtherType::from(t), reserved };
            let mut buf = [0u8; 4];
            r.emit(&mut EncapHeader::new_unchecked(&mut buf[..]));
            prop_assert_eq!(EncapRepr::parse(&EncapHeader::new_unchecked(&buf[..])).unwrap(), r);
        }

        #[test]
        fn parse_never_panics(data in proptest::collection::vec(any::<u8>(), 0..300)) {
            let _ = EncapRepr::parse(&EncapHeader::new_unchecked(&data[..]));
        }
    }
}
