//! ARP and RARP over IPoIB (draft-ietf-ipoib-ip-over-infiniband-06 §9.2; RFC 826 layout): hardware
//! type 32 (§10, IANA), protocol 0x0800, hardware address length 20 (§9.2), protocol length 4, and
//! 20-byte link-layer addresses as in §9.1.1. The packet is 8 + 2 × (20 + 4) = 56 bytes.

use super::hwaddr::{HwAddr, HWADDR_LEN};
use crate::describe::{Describe, Describer, Value};
use crate::types::{be16, put16};
use crate::{Error, Result};
use std::net::Ipv4Addr;

mod field {
    use core::ops::Range;
    pub const HTYPE: Range<usize> = 0..2;
    pub const PTYPE: Range<usize> = 2..4;
    pub const HLEN: usize = 4;
    pub const PLEN: usize = 5;
    pub const OPER: Range<usize> = 6..8;
    pub const SHA: Range<usize> = 8..28;
    pub const SPA: Range<usize> = 28..32;
    pub const THA: Range<usize> = 32..52;
    pub const TPA: Range<usize> = 52..56;
}

/// Length of an IPoIB ARP packet.
pub const ARP_LEN: usize = field::TPA.end;
/// ARP hardware type of InfiniBand (draft-ietf-ipoib-ip-over-infiniband-06 §9.2 and §10: 32).
pub const HTYPE_INFINIBAND: u16 = 32;
/// ARP protocol type of IPv4.
pub const PTYPE_IPV4: u16 = 0x0800;

code_enum! {
    /// The ARP operation (RFC 826, RFC 903 for RARP). Unknown values are kept.
    pub enum ArpOperation(u16) {
        /// 1.
        Request = 1 => "request",
        /// 2.
        Reply = 2 => "reply",
        /// 3 (RARP).
        RarpRequest = 3 => "reverse request",
        /// 4 (RARP).
        RarpReply = 4 => "reverse reply",
        /// Any other value.
        Unknown(_) => "Unknown",
    }
}

fixed_view! {
    /// A read/write view of an ARP packet with IPoIB addresses.
    #[derive(Debug, Clone)]
    pub struct ArpPacket;
    /// `Err(Truncated)` below 56 bytes (the address getters assume the IPoIB lengths, whatever
    /// `hlen`/`plen` say; [`ArpRepr::parse`] checks those).
    fn check_len(min = ARP_LEN);
}

impl<T: AsRef<[u8]>> ArpPacket<T> {
    /// Hardware type.
    pub fn htype(&self) -> u16 {
        be16(self.buffer.as_ref(), field::HTYPE.start)
    }
    /// Protocol type.
    pub fn ptype(&self) -> u16 {
        be16(self.buffer.as_ref(), field::PTYPE.start)
    }
    /// Hardware address length.
    pub fn hlen(&self) -> u8 {
        self.buffer.as_ref()[field::HLEN]
    }
    /// Protocol address length.
    pub fn plen(&self) -> u8 {
        self.buffer.as_ref()[field::PLEN]
    }
    /// Operation.
    pub fn operation(&self) -> ArpOperation {
        ArpOperation::from(be16(self.buffer.as_ref(), field::OPER.start))
    }
    /// Sender hardware address, raw.
    pub fn sender_hw_bytes(&self) -> &[u8] {
        &self.buffer.as_ref()[field::SHA]
    }
    /// Sender protocol address.
    pub fn sender_ip(&self) -> Ipv4Addr {
        ip_at(self.buffer.as_ref(), field::SPA.start)
    }
    /// Target hardware address, raw.
    pub fn target_hw_bytes(&self) -> &[u8] {
        &self.buffer.as_ref()[field::THA]
    }
    /// Target protocol address.
    pub fn target_ip(&self) -> Ipv4Addr {
        ip_at(self.buffer.as_ref(), field::TPA.start)
    }
}

fn ip_at(b: &[u8], off: usize) -> Ipv4Addr {
    Ipv4Addr::new(b[off], b[off + 1], b[off + 2], b[off + 3])
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> ArpPacket<T> {
    /// Sets the hardware type.
    pub fn set_htype(&mut self, v: u16) {
        put16(self.buffer.as_mut(), field::HTYPE.start, v);
    }
    /// Sets the protocol type.
    pub fn set_ptype(&mut self, v: u16) {
        put16(self.buffer.as_mut(), field::PTYPE.start, v);
    }
    /// Sets the hardware address length.
    pub fn set_hlen(&mut self, v: u8) {
        self.buffer.as_mut()[field::HLEN] = v;
    }
    /// Sets the protocol address length.
    pub fn set_plen(&mut self, v: u8) {
        self.buffer.as_mut()[field::PLEN] = v;
    }
    /// Sets the operation.
    pub fn set_operation(&mut self, o: ArpOperation) {
        put16(self.buffer.as_mut(), field::OPER.start, o.into());
    }
    /// Sets the sender hardware address.
    pub fn set_sender_hw(&mut self, a: &HwAddr) {
        self.buffer.as_mut()[field::SHA].copy_from_slice(&a.to_bytes());
    }
    /// Sets the sender protocol address.
    pub fn set_sender_ip(&mut self, a: Ipv4Addr) {
        self.buffer.as_mut()[field::SPA].copy_from_slice(&a.octets());
    }
    /// Sets the target hardware address.
    pub fn set_target_hw(&mut self, a: &HwAddr) {
        self.buffer.as_mut()[field::THA].copy_from_slice(&a.to_bytes());
    }
    /// Sets the target protocol address.
    pub fn set_target_ip(&mut self, a: Ipv4Addr) {
        self.buffer.as_mut()[field::TPA].copy_from_slice(&a.octets());
    }
}

/// A validated IPoIB ARP/RARP packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ArpRepr {
    /// The operation (unknown values kept).
    pub operation: ArpOperation,
    /// Sender hardware address.
    pub sender_hw: HwAddr,
    /// Sender protocol address.
    pub sender_ip: Ipv4Addr,
    /// Target hardware address (ignored in a request; Linux sends zeros).
    pub target_hw: HwAddr,
    /// Target protocol address.
    pub target_ip: Ipv4Addr,
}

impl ArpRepr {
    /// Parses an IPoIB ARP packet. `Err(Truncated)` below 56 bytes; `Err(Unsupported)` if the hardware
    /// type is not 32 or the protocol not IPv4 (draft-ietf-ipoib-ip-over-infiniband-06 §9.2);
    /// `Err(Malformed)` if the hardware length is not 20 (§9.2) or the protocol length not 4. Bytes after
    /// the 56 are ignored. Unknown operations are kept.
    pub fn parse<T: AsRef<[u8]>>(p: &ArpPacket<T>) -> Result<ArpRepr> {
        p.check_len()?;
        if p.htype() != HTYPE_INFINIBAND || p.ptype() != PTYPE_IPV4 {
            return Err(Error::Unsupported);
        }
        if p.hlen() as usize != HWADDR_LEN || p.plen() != 4 {
            return Err(Error::Malformed);
        }
        Ok(ArpRepr {
            operation: p.operation(),
            sender_hw: HwAddr::parse(p.sender_hw_bytes())?,
            sender_ip: p.sender_ip(),
            target_hw: HwAddr::parse(p.target_hw_bytes())?,
            target_ip: p.target_ip(),
        })
    }

    /// Always 56.
    pub const fn buffer_len(&self) -> usize {
        ARP_LEN
    }

    /// Writes the packet with hardware type 32, protocol 0x0800, lengths 20 and 4
    /// (draft-ietf-ipoib-ip-over-infiniband-06 §9.2) into the first 56 bytes of `p`.
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, p: &mut ArpPacket<T>) {
        p.set_htype(HTYPE_INFINIBAND);
        p.set_ptype(PTYPE_IPV4);
        p.set_hlen(HWADDR_LEN as u8);
        p.set_plen(4);
        p.set_operation(self.operation);
        p.set_sender_hw(&self.sender_hw);
        p.set_sender_ip(self.sender_ip);
        p.set_target_hw(&self.target_hw);
        p.set_target_ip(self.target_ip);
    }
}

impl Describe for ArpRepr {
    fn describe(&self, d: &mut dyn Describer) {
        d.field(
            "hw_type",
            Value::Named(HTYPE_INFINIBAND as u64, "InfiniBand"),
        );
        d.field("proto_type", Value::Named(PTYPE_IPV4 as u64, "IPv4"));
        d.field("hw_size", Value::Uint(HWADDR_LEN as u64));
        d.field("proto_size", Value::Uint(4));
        d.field(
            "opcode",
            Value::Named(u16::from(self.operation) as u64, self.operation.name()),
        );
        self.sender_hw.describe_as("src_hw", d);
        d.field("src_proto_ipv4", Value::Ipv4(self.sender_ip));
        self.target_hw.describe_as("dst_hw", d);
        d.field("dst_proto_ipv4", Value::Ipv4(self.target_ip));
    }
}

impl core::fmt::Display for ArpRepr {
    /// One line in the style of tcpdump/tshark: `request who-has 10.0.0.2 tell 10.0.0.1`.
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self.operation {
            ArpOperation::Request => write!(
                f,
                "request who-has {} tell {}",
                self.target_ip, self.sender_ip
            ),
            ArpOperation::Reply => write!(f, "reply {} is-at {}", self.sender_ip, self.sender_hw),
            ArpOperation::RarpRequest => write!(f, "reverse request who-is {}", self.target_hw),
            ArpOperation::RarpReply => {
                write!(f, "reverse reply {} at {}", self.target_hw, self.target_ip)
            }
            ArpOperation::Unknown(v) => {
                write!(f, "operation {v} {} > {}", self.sender_ip, self.target_ip)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::describe::Collect;
    use crate::ipoib::hwaddr::HwAddrFlags;
    use crate::types::Gid;
    use proptest::prelude::*;

    // draft-ietf-ipoib-ip-over-infiniband-06 §9.2: a Linux ARP request for 10.0.0.2 from 10.0.0.1,
    // QPN 0x48, RC flag set, target hardware address zero.
    static REQUEST: [u8; 56] = [
        0x00, 0x20, 0x08, 0x00, 20, 4, 0x00,
        0x01, // htype 32, ptype IPv4, hlen 20, plen 4, request
        0x80, 0x00, 0x00, 0x48, 0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0x00, 0x02, 0xc9, 0x03, 0x00, 0x00,
        0x00, 0x01, // sender hw
        10, 0, 0, 1, // sender ip
        0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, // target hw
        10, 0, 0, 2, // target ip
    ];

    fn request() -> ArpRepr {
        ArpRepr {
            operation: ArpOperation::Request,
            sender_hw: HwAddr::new(
                HwAddrFlags::RC,
                0x48,
                Gid::new(Gid::DEFAULT_SUBNET_PREFIX, 0x0002_c903_0000_0001),
            ),
            sender_ip: Ipv4Addr::new(10, 0, 0, 1),
            target_hw: HwAddr::default(),
            target_ip: Ipv4Addr::new(10, 0, 0, 2),
        }
    }

    #[test]
    fn deconstruct() {
        let p = ArpPacket::new_checked(&REQUEST[..]).unwrap();
        assert_eq!(p.htype(), 32);
        assert_eq!(p.ptype(), 0x0800);
        assert_eq!(p.hlen(), 20);
        assert_eq!(p.plen(), 4);
        assert_eq!(p.operation(), ArpOperation::Request);
        assert_eq!(p.sender_ip(), Ipv4Addr::new(10, 0, 0, 1));
        assert_eq!(p.target_ip(), Ipv4Addr::new(10, 0, 0, 2));
        assert_eq!(p.sender_hw_bytes()[3], 0x48);
    }

    #[test]
    fn construct() {
        let mut buf = [0xffu8; 56];
        let mut p = ArpPacket::new_unchecked(&mut buf[..]);
        p.set_htype(32);
        p.set_ptype(0x0800);
        p.set_hlen(20);
        p.set_plen(4);
        p.set_operation(ArpOperation::Request);
        p.set_sender_hw(&request().sender_hw);
        p.set_sender_ip(Ipv4Addr::new(10, 0, 0, 1));
        p.set_target_hw(&HwAddr::default());
        p.set_target_ip(Ipv4Addr::new(10, 0, 0, 2));
        assert_eq!(buf, REQUEST);
    }

    // draft-ietf-ipoib-ip-over-infiniband-06 §9.2: hardware type 32, hardware address length 20.
    #[test]
    fn parse_emit() {
        assert_eq!(
            ArpRepr::parse(&ArpPacket::new_unchecked(&REQUEST[..])).unwrap(),
            request()
        );
        let mut buf = [0u8; 56];
        request().emit(&mut ArpPacket::new_unchecked(&mut buf[..]));
        assert_eq!(buf, REQUEST);
        assert_eq!(
            request().to_string(),
            "request who-has 10.0.0.2 tell 10.0.0.1"
        );
    }

    // draft-ietf-ipoib-ip-over-infiniband-06 §9.2: a hardware length other than 20 is malformed, another
    // hardware or protocol type is not IPoIB ARP; unknown operations are kept.
    #[test]
    fn rejects_wrong_lengths_keeps_unknown_operation() {
        let mut b = REQUEST;
        b[4] = 6;
        assert_eq!(
            ArpRepr::parse(&ArpPacket::new_unchecked(&b[..])),
            Err(Error::Malformed)
        );
        let mut b = REQUEST;
        b[5] = 16;
        assert_eq!(
            ArpRepr::parse(&ArpPacket::new_unchecked(&b[..])),
            Err(Error::Malformed)
        );
        let mut b = REQUEST;
        b[1] = 1;
        assert_eq!(
            ArpRepr::parse(&ArpPacket::new_unchecked(&b[..])),
            Err(Error::Unsupported)
        );
        let mut b = REQUEST;
        b[7] = 9;
        let r = ArpRepr::parse(&ArpPacket::new_unchecked(&b[..])).unwrap();
        assert_eq!(r.operation, ArpOperation::Unknown(9));
        assert_eq!(
            ArpRepr::parse(&ArpPacket::new_unchecked(&REQUEST[..55])),
            Err(Error::Truncated)
        );
    }

    #[test]
    fn describe() {
        let mut c = Collect::default();
        request().describe(&mut c);
        assert_eq!(c.get("hw_type"), Some("InfiniBand (0x20)"));
        assert_eq!(c.get("opcode"), Some("request (0x1)"));
        assert_eq!(c.get("src_hw.qpn"), Some("0x000048"));
        assert_eq!(c.get("dst_proto_ipv4"), Some("10.0.0.2"));
    }

    proptest! {
        #[test]
        fn round_trip(op in any::<u16>(), sha in any::<[u8; 20]>(), spa in any::<u32>(),
                      tha in any::<[u8; 20]>(), tpa in any::<u32>()) {
            let r = ArpRepr {
                operation: ArpOperation::from(op),
                sender_hw: HwAddr::from_bytes(&sha),
                sender_ip: Ipv4Addr::from(spa),
                target_hw: HwAddr::from_bytes(&tha),
                target_ip: Ipv4Addr::from(tpa),
            };
            let mut buf = [0u8; 56];
            r.emit(&mut ArpPacket::new_unchecked(&mut buf[..]));
            prop_assert_eq!(ArpRepr::parse(&ArpPacket::new_unchecked(&buf[..])).unwrap(), r);
        }

        #[test]
        fn parse_never_panics(data in proptest::collection::vec(any::<u8>(), 0..300)) {
            let _ = ArpRepr::parse(&ArpPacket::new_unchecked(&data[..]));
        }
    }
}
