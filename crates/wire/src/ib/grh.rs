//! Global Route Header (IBA 1 §8.3), 40 bytes, laid out like an IPv6 header:
//! `IPVer(4) TClass(8) FlowLabel(20) | PayLen(16) NxtHdr(8) HopLmt(8) | SGID(128) | DGID(128)`.

use crate::describe::{Describe, Describer, Value};
use crate::types::{be16, be32, put16, put32, Gid};
use crate::Result;

mod field {
    use core::ops::Range;
    pub const VER_TC_FLOW: Range<usize> = 0..4;
    pub const PAY_LEN: usize = 4;
    pub const NXT_HDR: usize = 6;
    pub const HOP_LMT: usize = 7;
    pub const SGID: Range<usize> = 8..24;
    pub const DGID: Range<usize> = 24..40;
}

fixed_view! {
    /// A view of a Global Route Header.
    #[derive(Debug, Clone, PartialEq, Eq)]
    pub struct Grh;
    /// `Err(Truncated)` when the buffer is shorter than the header.
    fn check_len(min = 40);
    /// The header length in bytes.
    pub const LEN;
}

impl<T: AsRef<[u8]>> Grh<T> {
    fn word0(&self) -> u32 {
        be32(self.buffer.as_ref(), field::VER_TC_FLOW.start)
    }
    /// IP Version, 6 (IBA 1 §8.3).
    pub fn ipver(&self) -> u8 {
        (self.word0() >> 28) as u8
    }
    /// Traffic Class.
    pub fn tclass(&self) -> u8 {
        (self.word0() >> 20) as u8
    }
    /// Flow Label, 20 bits.
    pub fn flow_label(&self) -> u32 {
        self.word0() & 0x000f_ffff
    }
    /// Payload length: bytes after the GRH through the ICRC (IBA 1 §8.3).
    pub fn paylen(&self) -> u16 {
        be16(self.buffer.as_ref(), field::PAY_LEN)
    }
    /// Next Header, 0x1B when a BTH follows.
    pub fn nxthdr(&self) -> u8 {
        self.buffer.as_ref()[field::NXT_HDR]
    }
    /// Hop Limit.
    pub fn hoplmt(&self) -> u8 {
        self.buffer.as_ref()[field::HOP_LMT]
    }
    /// Source GID.
    pub fn sgid(&self) -> Gid {
        Gid::from_bytes(&self.buffer.as_ref()[field::SGID])
    }
    /// Destination GID.
    pub fn dgid(&self) -> Gid {
        Gid::from_bytes(&self.buffer.as_ref()[field::DGID])
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Grh<T> {
    fn set_word0(&mut self, w: u32) {
        put32(self.buffer.as_mut(), field::VER_TC_FLOW.start, w);
    }
    /// Sets IPVer.
    pub fn set_ipver(&mut self, v: u8) {
        let w = self.word0();
        self.set_word0((w & 0x0fff_ffff) | ((v as u32 & 0xf) << 28));
    }
    /// Sets TClass.
    pub fn set_tclass(&mut self, v: u8) {
        let w = self.word0();
        self.set_word0((w & 0xf00f_ffff) | ((v as u32) << 20));
    }
    /// Sets the Flow Label (low 20 bits of `v`).
    pub fn set_flow_label(&mut self, v: u32) {
        let w = self.word0();
        self.set_word0((w & 0xfff0_0000) | (v & 0x000f_ffff));
    }
    /// Sets PayLen.
    pub fn set_paylen(&mut self, v: u16) {
        put16(self.buffer.as_mut(), field::PAY_LEN, v);
    }
    /// Sets NxtHdr.
    pub fn set_nxthdr(&mut self, v: u8) {
        self.buffer.as_mut()[field::NXT_HDR] = v;
    }
    /// Sets HopLmt.
    pub fn set_hoplmt(&mut self, v: u8) {
        self.buffer.as_mut()[field::HOP_LMT] = v;
    }
    /// Sets the source GID.
    pub fn set_sgid(&mut self, g: Gid) {
        self.buffer.as_mut()[field::SGID].copy_from_slice(g.as_bytes());
    }
    /// Sets the destination GID.
    pub fn set_dgid(&mut self, g: Gid) {
        self.buffer.as_mut()[field::DGID].copy_from_slice(g.as_bytes());
    }
}

/// A parsed Global Route Header.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct GrhRepr {
    /// IP Version; [`GrhRepr::IP_VERSION`] on a conforming packet (kept as read so that a capture
    /// with another value still decodes).
    pub ipver: u8,
    /// Traffic Class.
    pub tclass: u8,
    /// Flow Label (20 bits).
    pub flow_label: u32,
    /// Bytes after the GRH through the ICRC. The packet builder computes it.
    pub paylen: u16,
    /// Next Header; [`GrhRepr::NXT_HDR_IBA`] when a BTH follows.
    pub nxthdr: u8,
    /// Hop Limit.
    pub hoplmt: u8,
    /// Source GID.
    pub sgid: Gid,
    /// Destination GID.
    pub dgid: Gid,
}

impl GrhRepr {
    /// The header length.
    pub const LEN: usize = 40;
    /// IPVer of a GRH (IBA 1 §8.3: the GRH is an IPv6 header; draft-kashyap-ipoib-ipv6-01
    /// Appendix B.2: "The version is always set to 6").
    pub const IP_VERSION: u8 = 6;
    /// NxtHdr meaning "an IBA transport header (BTH) follows" (IBA 1 §8.3; draft-kashyap-ipoib-ipv6-01
    /// Appendix B.2: "The next header field is always the BTH").
    pub const NXT_HDR_IBA: u8 = 0x1b;

    /// A GRH for an IBA packet from `sgid` to `dgid` with the given hop limit; traffic class and flow
    /// label zero, PayLen left for the packet builder.
    pub fn new(sgid: Gid, dgid: Gid, hoplmt: u8) -> GrhRepr {
        // draft-kashyap-ipoib-ipv6-01 Appendix B.2: version 6, next header BTH.
        GrhRepr {
            ipver: Self::IP_VERSION,
            tclass: 0,
            flow_label: 0,
            paylen: 0,
            nxthdr: Self::NXT_HDR_IBA,
            hoplmt,
            sgid,
            dgid,
        }
    }

    /// Reads the header from a view.
    pub fn parse<T: AsRef<[u8]>>(v: &Grh<T>) -> Result<GrhRepr> {
        v.check_len()?;
        Ok(GrhRepr {
            ipver: v.ipver(),
            tclass: v.tclass(),
            flow_label: v.flow_label(),
            paylen: v.paylen(),
            nxthdr: v.nxthdr(),
            hoplmt: v.hoplmt(),
            sgid: v.sgid(),
            dgid: v.dgid(),
        })
    }

    /// Reads the header from the start of `data`.
    pub fn parse_bytes(data: &[u8]) -> Result<GrhRepr> {
        Self::parse(&Grh::new_checked(data)?)
    }

    /// The header length.
    pub const fn buffer_len(&self) -> usize {
        Self::LEN
    }

    /// Writes the header. The view must hold at least [`GrhRepr::LEN`] bytes.
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, v: &mut Grh<T>) {
        v.set_word0(
            ((self.ipver as u32 & 0xf) << 28)
                | ((self.tclass as u32) << 20)
                | (self.flow_label & 0x000f_ffff),
        );
        v.set_paylen(self.paylen);
        v.set_nxthdr(self.nxthdr);
        v.set_hoplmt(self.hoplmt);
        v.set_sgid(self.sgid);
        v.set_dgid(self.dgid);
    }
}

impl Describe for GrhRepr {
    fn describe(&self, d: &mut dyn Describer) {
        d.field("ipver", Value::Uint(self.ipver as u64));
        d.field("tclass", Value::Hex(self.tclass as u64, 2));
        d.field("flowlabel", Value::Hex(self.flow_label as u64, 5));
        d.field("paylen", Value::Uint(self.paylen as u64));
        let nh = if self.nxthdr == Self::NXT_HDR_IBA {
            "IBA"
        } else {
            "Unknown"
        };
        d.field("nxthdr", Value::Named(self.nxthdr as u64, nh));
        d.field("hoplmt", Value::Uint(self.hoplmt as u64));
        d.field("sgid", Value::Gid(self.sgid));
        d.field("dgid", Value::Gid(self.dgid));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::describe::Collect;
    use crate::Error;
    use proptest::prelude::*;

    // IPVer 6, TClass 0xa5, FlowLabel 0x12345, PayLen 0x0038, NxtHdr 0x1b, HopLmt 0x40,
    // SGID fe80::2:c903:0:1, DGID ff12:401b:ffff::ffff:ffff (IPoIB broadcast MGID).
    static BYTES: [u8; 40] = [
        0x6a, 0x51, 0x23, 0x45, 0x00, 0x38, 0x1b, 0x40, //
        0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0x00, 0x02, 0xc9, 0x03, 0x00, 0x00, 0x00, 0x01, //
        0xff, 0x12, 0x40, 0x1b, 0xff, 0xff, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff,
    ];

    fn repr() -> GrhRepr {
        GrhRepr {
            ipver: 6,
            tclass: 0xa5,
            flow_label: 0x12345,
            paylen: 0x38,
            nxthdr: 0x1b,
            hoplmt: 0x40,
            sgid: Gid::new(0xfe80_0000_0000_0000, 0x0002_c903_0000_0001),
            dgid: Gid::new(0xff12_401b_ffff_0000, 0x0000_0000_ffff_ffff),
        }
    }

    /// IBA 1 §8.3: field layout; draft-kashyap-ipoib-ipv6-01 Appendix B.2: version 6, NxtHdr BTH.
    #[test]
    fn deconstruct() {
        let v = Grh::new_checked(&BYTES[..]).unwrap();
        assert_eq!((v.ipver(), v.tclass(), v.flow_label()), (6, 0xa5, 0x12345));
        let n = GrhRepr::new(Gid::ZERO, Gid::ZERO, 1);
        assert_eq!((n.ipver, n.nxthdr), (6, 0x1b));
        assert_eq!((v.paylen(), v.nxthdr(), v.hoplmt()), (0x38, 0x1b, 0x40));
        assert_eq!(v.sgid(), repr().sgid);
        assert_eq!(v.dgid(), repr().dgid);
    }

    #[test]
    fn construct() {
        let mut b = [0u8; 40];
        let mut v = Grh::new_unchecked(&mut b[..]);
        v.set_ipver(6);
        v.set_tclass(0xa5);
        v.set_flow_label(0x12345);
        v.set_paylen(0x38);
        v.set_nxthdr(0x1b);
        v.set_hoplmt(0x40);
        v.set_sgid(repr().sgid);
        v.set_dgid(repr().dgid);
        assert_eq!(b, BYTES);
    }

    #[test]
    fn parse_and_emit() {
        assert_eq!(GrhRepr::parse_bytes(&BYTES).unwrap(), repr());
        let mut b = [0x55u8; 40];
        repr().emit(&mut Grh::new_unchecked(&mut b[..]));
        assert_eq!(b, BYTES);
        assert_eq!(GrhRepr::parse_bytes(&BYTES[..39]), Err(Error::Truncated));
    }

    #[test]
    fn describe_lists_fields() {
        let mut c = Collect::default();
        repr().describe_as("grh", &mut c);
        assert_eq!(c.get("grh.nxthdr"), Some("IBA (0x1b)"));
        assert_eq!(c.get("grh.dgid"), Some("ff12:401b:ffff::ffff:ffff"));
        assert_eq!(c.fields.len(), 8);
    }

    proptest! {
        #[test]
        fn round_trip(ipver in 0..16u8, tclass: u8, flow in 0..0x10_0000u32, paylen: u16,
                      nxthdr: u8, hoplmt: u8, s: [u8; 16], g: [u8; 16]) {
            let r = GrhRepr { ipver, tclass, flow_label: flow, paylen, nxthdr, hoplmt,
                              sgid: Gid(s), dgid: Gid(g) };
            let mut b = [0u8; 40];
            r.emit(&mut Grh::new_unchecked(&mut b[..]));
            prop_assert_eq!(GrhRepr::parse_bytes(&b).unwrap(), r);
        }

        #[test]
        fn parse_never_panics(data in proptest::collection::vec(any::<u8>(), 0..300)) {
            let _ = GrhRepr::parse_bytes(&data);
        }
    }
}
