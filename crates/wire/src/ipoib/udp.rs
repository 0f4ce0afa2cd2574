//! UDP (RFC 768), 8 bytes of header before the data: `SrcPort(16) | DstPort(16) | Length(16) |
//! Checksum(16)`. Length counts the header and the data. The checksum covers a pseudo-header of the
//! IP layer (IPv4: RFC 768, RFC 793 §3.1; IPv6: RFC 8200 §8.1), the header and the data; a computed
//! checksum of zero is sent as all ones, and over IPv4 a received zero means "not computed"
//! (RFC 768). Over IPv6 the checksum is mandatory (RFC 8200 §8.1), so a zero there does not verify.

use super::checksum;
use crate::describe::{Describe, Describer, Value};
use crate::types::{be16, put16};
use crate::{Error, Result};
use std::net::IpAddr;

mod field {
    pub const SRC_PORT: usize = 0;
    pub const DST_PORT: usize = 2;
    pub const LENGTH: usize = 4;
    pub const CHECKSUM: usize = 6;
    pub const PAYLOAD: usize = 8;
}

/// Length of the UDP header.
pub const UDP_HEADER_LEN: usize = field::PAYLOAD;

/// The IP protocol / next-header number of UDP (IANA).
const PROTOCOL: u8 = 17;

/// The accumulator of the pseudo-header for a UDP datagram of `len` bytes from `src` to `dst`;
/// `Err(Malformed)` when the two addresses are not of one family.
fn pseudo_header(src: IpAddr, dst: IpAddr, len: usize) -> Result<u32> {
    match (src, dst) {
        (IpAddr::V4(s), IpAddr::V4(d)) => Ok(checksum::pseudo_header_v4(
            s,
            d,
            PROTOCOL,
            u16::try_from(len).map_err(|_| Error::Malformed)?,
        )),
        (IpAddr::V6(s), IpAddr::V6(d)) => Ok(checksum::pseudo_header_v6(
            s,
            d,
            PROTOCOL,
            u32::try_from(len).map_err(|_| Error::Malformed)?,
        )),
        _ => Err(Error::Malformed),
    }
}

/// The checksum field for a one's-complement sum: RFC 768 sends a computed zero as all ones, since
/// zero means "no checksum".
fn finish(sum: u32) -> u16 {
    match checksum::finish(sum) {
        0 => 0xffff,
        c => c,
    }
}

/// A read/write view of a UDP datagram.
#[derive(Debug, Clone)]
pub struct UdpPacket<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> UdpPacket<T> {
    /// Wraps a buffer without checking it; getters may then panic.
    pub const fn new_unchecked(buffer: T) -> UdpPacket<T> {
        UdpPacket { buffer }
    }

    /// Wraps a buffer after [`UdpPacket::check_len`].
    pub fn new_checked(buffer: T) -> Result<UdpPacket<T>> {
        let p = Self::new_unchecked(buffer);
        p.check_len()?;
        Ok(p)
    }

    /// `Err(Truncated)` if the buffer is shorter than the 8-byte header or than the Length field;
    /// `Err(Malformed)` if the Length field is below 8. Bytes past Length are left alone.
    pub fn check_len(&self) -> Result<()> {
        let b = self.buffer.as_ref();
        if b.len() < field::PAYLOAD {
            return Err(Error::Truncated);
        }
        let len = usize::from(self.len());
        if len < field::PAYLOAD {
            return Err(Error::Malformed);
        }
        if b.len() < len {
            return Err(Error::Truncated);
        }
        Ok(())
    }

    /// The wrapped buffer.
    pub fn into_inner(self) -> T {
        self.buffer
    }

    /// Source port.
    pub fn src_port(&self) -> u16 {
        be16(self.buffer.as_ref(), field::SRC_PORT)
    }

    /// Destination port.
    pub fn dst_port(&self) -> u16 {
        be16(self.buffer.as_ref(), field::DST_PORT)
    }

    /// Length of header and data, as the Length field says.
    pub fn len(&self) -> u16 {
        be16(self.buffer.as_ref(), field::LENGTH)
    }

    /// True if the Length field says there is no data.
    pub fn is_empty(&self) -> bool {
        usize::from(self.len()) <= field::PAYLOAD
    }

    /// Checksum as received.
    pub fn checksum(&self) -> u16 {
        be16(self.buffer.as_ref(), field::CHECKSUM)
    }

    /// The data, up to the Length field (requires `check_len`).
    pub fn payload(&self) -> &[u8] {
        &self.buffer.as_ref()[field::PAYLOAD..usize::from(self.len())]
    }

    /// True if the checksum is correct for `src` → `dst` (requires `check_len`): over IPv4 a zero
    /// checksum (not computed) is accepted (RFC 768); over IPv6, or with addresses of two
    /// families, it is not.
    pub fn verify_checksum(&self, src: IpAddr, dst: IpAddr) -> bool {
        if src.is_ipv4() && self.checksum() == 0 {
            return true;
        }
        let len = usize::from(self.len());
        match pseudo_header(src, dst, len) {
            Ok(acc) => checksum::finish(checksum::sum(acc, &self.buffer.as_ref()[..len])) == 0,
            Err(_) => false,
        }
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> UdpPacket<T> {
    /// Sets the source port.
    pub fn set_src_port(&mut self, v: u16) {
        put16(self.buffer.as_mut(), field::SRC_PORT, v);
    }

    /// Sets the destination port.
    pub fn set_dst_port(&mut self, v: u16) {
        put16(self.buffer.as_mut(), field::DST_PORT, v);
    }

    /// Sets the Length field.
    pub fn set_len(&mut self, v: u16) {
        put16(self.buffer.as_mut(), field::LENGTH, v);
    }

    /// Sets the checksum field.
    pub fn set_checksum(&mut self, v: u16) {
        put16(self.buffer.as_mut(), field::CHECKSUM, v);
    }

    /// The data, up to the Length field, writable.
    pub fn payload_mut(&mut self) -> &mut [u8] {
        let len = usize::from(self.len());
        &mut self.buffer.as_mut()[field::PAYLOAD..len]
    }

    /// Computes and writes the checksum for `src` → `dst` over the Length field's bytes; a zero
    /// result is written as 0xFFFF (RFC 768). `Err(Malformed)` when the addresses are of two
    /// families (nothing written).
    pub fn fill_checksum(&mut self, src: IpAddr, dst: IpAddr) -> Result<()> {
        let len = usize::from(self.len());
        let acc = pseudo_header(src, dst, len)?;
        self.set_checksum(0);
        let c = finish(checksum::sum(acc, &self.buffer.as_ref()[..len]));
        self.set_checksum(c);
        Ok(())
    }
}

/// A UDP datagram with its data borrowed. The checksum is verified by `parse` and computed by
/// `emit`; only whether there is one is a field.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct UdpRepr<'a> {
    /// Source port.
    pub src_port: u16,
    /// Destination port.
    pub dst_port: u16,
    /// False for an IPv4 datagram sent without a checksum (the field zero, RFC 768); over IPv6 a
    /// checksum is mandatory (RFC 8200 §8.1).
    pub has_checksum: bool,
    /// The data.
    pub payload: &'a [u8],
}

impl<'a> UdpRepr<'a> {
    /// A datagram with a checksum, as every sender here makes them.
    pub fn new(src_port: u16, dst_port: u16, payload: &'a [u8]) -> UdpRepr<'a> {
        UdpRepr {
            src_port,
            dst_port,
            has_checksum: true,
            payload,
        }
    }

    /// Parses a datagram sent from `src` to `dst`, up to its Length field (bytes past it are
    /// ignored); `Err(Checksum)` if the checksum does not verify.
    pub fn parse(src: IpAddr, dst: IpAddr, data: &'a [u8]) -> Result<UdpRepr<'a>> {
        let p = UdpPacket::new_checked(data)?;
        if !p.verify_checksum(src, dst) {
            return Err(Error::Checksum);
        }
        Ok(UdpRepr {
            src_port: p.src_port(),
            dst_port: p.dst_port(),
            has_checksum: p.checksum() != 0,
            payload: &data[field::PAYLOAD..usize::from(p.len())],
        })
    }

    /// 8 + data length.
    pub fn buffer_len(&self) -> usize {
        field::PAYLOAD + self.payload.len()
    }

    /// Writes the datagram and its checksum for `src` → `dst` (zero without one) into the first
    /// `buffer_len()` bytes of `buf`. `Err(Truncated)` if `buf` is shorter; `Err(Malformed)` if
    /// the datagram is longer than 65535 bytes, the addresses are of two families, or an IPv6
    /// datagram has no checksum.
    pub fn emit(&self, src: IpAddr, dst: IpAddr, buf: &mut [u8]) -> Result<()> {
        let n = self.buffer_len();
        let len = u16::try_from(n).map_err(|_| Error::Malformed)?;
        let b = buf.get_mut(..n).ok_or(Error::Truncated)?;
        let mut p = UdpPacket::new_unchecked(b);
        p.set_src_port(self.src_port);
        p.set_dst_port(self.dst_port);
        p.set_len(len);
        p.payload_mut().copy_from_slice(self.payload);
        match (self.has_checksum, src, dst) {
            (true, _, _) => p.fill_checksum(src, dst),
            (false, IpAddr::V4(_), IpAddr::V4(_)) => {
                p.set_checksum(0);
                Ok(())
            }
            (false, _, _) => Err(Error::Malformed),
        }
    }

    /// The value `emit` writes in the checksum field for `src` → `dst` (0 without a checksum);
    /// `Err` as `emit`.
    pub fn checksum(&self, src: IpAddr, dst: IpAddr) -> Result<u16> {
        if !self.has_checksum {
            return match (src, dst) {
                (IpAddr::V4(_), IpAddr::V4(_)) => Ok(0),
                _ => Err(Error::Malformed),
            };
        }
        let len = u16::try_from(self.buffer_len()).map_err(|_| Error::Malformed)?;
        let acc = pseudo_header(src, dst, self.buffer_len())?;
        let mut header = [0u8; field::PAYLOAD];
        let mut h = UdpPacket::new_unchecked(&mut header[..]);
        h.set_src_port(self.src_port);
        h.set_dst_port(self.dst_port);
        h.set_len(len);
        Ok(finish(checksum::sum(
            checksum::sum(acc, &header),
            self.payload,
        )))
    }

    /// The fields in wire order, with the checksum `emit` writes for `src` → `dst` (the one
    /// `parse` verified); `ipoib decode` shows a datagram this way.
    pub fn describe_between(&self, src: IpAddr, dst: IpAddr, d: &mut dyn Describer) {
        self.describe_fields(self.checksum(src, dst).ok(), d);
    }

    fn describe_fields(&self, checksum: Option<u16>, d: &mut dyn Describer) {
        d.field("src_port", Value::Uint(self.src_port.into()));
        d.field("dst_port", Value::Uint(self.dst_port.into()));
        d.field("length", Value::Uint(self.buffer_len() as u64));
        match checksum {
            Some(c) => d.field("checksum", Value::Hex(c.into(), 4)),
            None => d.field("has_checksum", Value::Bool(self.has_checksum)),
        }
        d.field("data", Value::Bytes(self.payload));
    }
}

impl Describe for UdpRepr<'_> {
    /// Without the addresses the checksum covers, only whether there is one.
    fn describe(&self, d: &mut dyn Describer) {
        self.describe_fields(None, d);
    }
}

impl core::fmt::Display for UdpRepr<'_> {
    /// `UDP 40001 > 5001 length 40` (the length counts the 8-byte header, as the Length field).
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(
            f,
            "UDP {} > {} length {}",
            self.src_port,
            self.dst_port,
            self.buffer_len()
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::describe::Collect;
    use proptest::prelude::*;
    use std::net::{Ipv4Addr, Ipv6Addr};

    const SRC4: IpAddr = IpAddr::V4(Ipv4Addr::new(10, 0, 0, 1));
    const DST4: IpAddr = IpAddr::V4(Ipv4Addr::new(224, 1, 2, 3));

    // RFC 768: 10.0.0.1:40001 -> 224.1.2.3:5001, data "hi", length 10. The checksum by hand:
    // pseudo-header 0a00+0001+e001+0203+0011+000a = 0xec20; header 9c41+1389+000a = 0xafd4;
    // data 0x6869; total 0x2045d, folded 0x045f, complemented 0xfba0.
    static DGRAM: [u8; 10] = [0x9c, 0x41, 0x13, 0x89, 0x00, 0x0a, 0xfb, 0xa0, b'h', b'i'];

    /// RFC 768: field layout.
    #[test]
    fn deconstruct() {
        let p = UdpPacket::new_checked(&DGRAM[..]).unwrap();
        assert_eq!(p.src_port(), 40001);
        assert_eq!(p.dst_port(), 5001);
        assert_eq!(p.len(), 10);
        assert!(!p.is_empty());
        assert_eq!(p.checksum(), 0xfba0);
        assert_eq!(p.payload(), b"hi");
        assert!(p.verify_checksum(SRC4, DST4));
        assert!(!p.verify_checksum(DST4, IpAddr::V4(Ipv4Addr::new(10, 0, 0, 2))));
    }

    /// RFC 768: the same datagram built field by field.
    #[test]
    fn construct() {
        let mut b = [0xffu8; 10];
        let mut p = UdpPacket::new_unchecked(&mut b[..]);
        p.set_src_port(40001);
        p.set_dst_port(5001);
        p.set_len(10);
        p.payload_mut().copy_from_slice(b"hi");
        p.fill_checksum(SRC4, DST4).unwrap();
        assert_eq!(b, DGRAM);
        let mut p = UdpPacket::new_unchecked(&mut b[..]);
        let v6 = IpAddr::V6(Ipv6Addr::LOCALHOST);
        assert_eq!(p.fill_checksum(SRC4, v6), Err(Error::Malformed));
    }

    /// RFC 768: parse, emit, and the length rules.
    #[test]
    fn parse_and_emit() {
        let r = UdpRepr::parse(SRC4, DST4, &DGRAM).unwrap();
        assert_eq!(r, UdpRepr::new(40001, 5001, b"hi"));
        assert_eq!(r.checksum(SRC4, DST4), Ok(0xfba0));
        let mut b = [0u8; 10];
        r.emit(SRC4, DST4, &mut b).unwrap();
        assert_eq!(b, DGRAM);
        assert_eq!(r.emit(SRC4, DST4, &mut [0u8; 9]), Err(Error::Truncated));
        // Bytes past the Length field are not the datagram's.
        let mut long = DGRAM.to_vec();
        long.push(0xee);
        assert_eq!(UdpRepr::parse(SRC4, DST4, &long).unwrap(), r);
        assert_eq!(
            UdpRepr::parse(SRC4, DST4, &DGRAM[..9]),
            Err(Error::Truncated)
        );
        assert_eq!(
            UdpRepr::parse(SRC4, DST4, &DGRAM[..7]),
            Err(Error::Truncated)
        );
        let mut short_len = DGRAM;
        short_len[5] = 7;
        assert_eq!(
            UdpRepr::parse(SRC4, DST4, &short_len),
            Err(Error::Malformed)
        );
        let mut bad = DGRAM;
        bad[9] ^= 1;
        assert_eq!(UdpRepr::parse(SRC4, DST4, &bad), Err(Error::Checksum));
        assert_eq!(r.to_string(), "UDP 40001 > 5001 length 10");
        let mut c = Collect::default();
        r.describe_between(SRC4, DST4, &mut c);
        assert_eq!(c.get("src_port"), Some("40001"));
        assert_eq!(c.get("dst_port"), Some("5001"));
        assert_eq!(c.get("length"), Some("10"));
        assert_eq!(c.get("checksum"), Some("0xfba0"));
        assert_eq!(c.get("data"), Some("6869"));
        let mut c = Collect::default();
        r.describe(&mut c);
        assert_eq!(c.get("has_checksum"), Some("true"));
    }

    /// RFC 768: a zero checksum over IPv4 means "not computed", and is kept; RFC 8200 §8.1: over
    /// IPv6 it is mandatory, so zero does not verify and cannot be sent.
    #[test]
    fn zero_checksum() {
        let mut b = DGRAM;
        b[6] = 0;
        b[7] = 0;
        let r = UdpRepr::parse(SRC4, DST4, &b).unwrap();
        assert!(!r.has_checksum);
        assert_eq!(r.checksum(SRC4, DST4), Ok(0));
        let mut out = [0xffu8; 10];
        r.emit(SRC4, DST4, &mut out).unwrap();
        assert_eq!(out, b);
        let (s6, d6): (Ipv6Addr, Ipv6Addr) =
            ("fe80::1".parse().unwrap(), "fe80::2".parse().unwrap());
        assert_eq!(
            UdpRepr::parse(s6.into(), d6.into(), &b),
            Err(Error::Checksum)
        );
        assert_eq!(
            r.emit(s6.into(), d6.into(), &mut out),
            Err(Error::Malformed)
        );
        assert_eq!(r.checksum(s6.into(), d6.into()), Err(Error::Malformed));
    }

    /// RFC 768: a sum of zero is sent as all ones, which verifies as well.
    #[test]
    fn computed_zero_is_sent_as_ones() {
        let r = UdpRepr::new(1, 2, &[0, 0]);
        let mut b = [0u8; 10];
        r.emit(SRC4, DST4, &mut b).unwrap();
        // Data equal to the checksum of the zero-data datagram: the sum then folds to 0xFFFF,
        // whose complement is zero.
        let c = be16(&b, 6);
        let payload = c.to_be_bytes();
        let r = UdpRepr {
            payload: &payload,
            ..r
        };
        r.emit(SRC4, DST4, &mut b).unwrap();
        assert_eq!(be16(&b, 6), 0xffff);
        assert_eq!(r.checksum(SRC4, DST4), Ok(0xffff));
        assert_eq!(UdpRepr::parse(SRC4, DST4, &b).unwrap(), r);
    }

    proptest! {
        #[test]
        fn round_trip_v4(sp: u16, dp: u16, s: u32, d: u32, has_checksum: bool,
                         payload in proptest::collection::vec(any::<u8>(), 0..64)) {
            let (src, dst) = (IpAddr::V4(s.into()), IpAddr::V4(d.into()));
            let r = UdpRepr { src_port: sp, dst_port: dp, has_checksum, payload: &payload };
            let mut b = vec![0u8; r.buffer_len()];
            r.emit(src, dst, &mut b).unwrap();
            prop_assert_eq!(be16(&b, 6) != 0, has_checksum);
            prop_assert_eq!(r.checksum(src, dst).unwrap(), be16(&b, 6));
            prop_assert_eq!(UdpRepr::parse(src, dst, &b).unwrap(), r);
        }

        #[test]
        fn round_trip_v6(sp: u16, dp: u16, s: u128,
                         payload in proptest::collection::vec(any::<u8>(), 0..64)) {
            let (src, dst) = (IpAddr::V6(s.into()), IpAddr::V6((!s).into()));
            let r = UdpRepr::new(sp, dp, &payload);
            let mut b = vec![0u8; r.buffer_len()];
            r.emit(src, dst, &mut b).unwrap();
            prop_assert_eq!(r.checksum(src, dst).unwrap(), be16(&b, 6));
            prop_assert_eq!(UdpRepr::parse(src, dst, &b).unwrap(), r);
        }

        #[test]
        fn parse_never_panics(data in proptest::collection::vec(any::<u8>(), 0..300)) {
            for (s, d) in [(SRC4, DST4), (IpAddr::V6(Ipv6Addr::UNSPECIFIED), IpAddr::V6(Ipv6Addr::LOCALHOST)), (SRC4, IpAddr::V6(Ipv6Addr::LOCALHOST))] {
                if let Ok(r) = UdpRepr::parse(s, d, &data) {
                    let _ = r.to_string();
                    r.describe(&mut Collect::default());
                    r.describe_between(s, d, &mut Collect::default());
                }
            }
            if let Ok(p) = UdpPacket::new_checked(&data[..]) {
                let _ = (p.payload(), p.verify_checksum(SRC4, DST4));
            }
        }
    }
}
