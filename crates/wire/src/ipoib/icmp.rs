//! ICMPv4 (RFC 792) and ICMPv6 (RFC 4443) messages: type, code, checksum, the 32-bit rest of header
//! (echo identifier and sequence, MTU, pointer) and the body. Neighbour Discovery bodies are taken apart
//! by [`super::nd`].

use super::checksum;
use crate::describe::{Describe, Describer, Value};
use crate::types::{be16, be32, put16, put32};
use crate::{Error, Result};
use std::net::Ipv6Addr;

mod field {
    pub const TYPE: usize = 0;
    pub const CODE: usize = 1;
    pub const CHECKSUM: usize = 2;
    pub const REST: usize = 4;
    pub const BODY: usize = 8;
}

/// Length of the fixed ICMP header (type, code, checksum, rest of header).
pub const ICMP_HEADER_LEN: usize = field::BODY;

code_enum! {
    /// ICMPv4 message type (RFC 792). Unknown values are kept.
    pub enum Icmpv4Type(u8) {
        /// 0: echo reply.
        EchoReply = 0 => "echo reply",
        /// 3: destination unreachable.
        DestUnreachable = 3 => "destination unreachable",
        /// 5: redirect.
        Redirect = 5 => "redirect",
        /// 8: echo request.
        EchoRequest = 8 => "echo request",
        /// 11: time exceeded.
        TimeExceeded = 11 => "time exceeded",
        /// 12: parameter problem.
        ParamProblem = 12 => "parameter problem",
        /// Any other value.
        Unknown(_) => "Unknown",
    }
}

code_enum! {
    /// ICMPv6 message type (RFC 4443, RFC 4861, RFC 2710, RFC 3810). Unknown values are kept.
    pub enum Icmpv6Type(u8) {
        /// 1: destination unreachable.
        DestUnreachable = 1 => "destination unreachable",
        /// 2: packet too big.
        PacketTooBig = 2 => "packet too big",
        /// 3: time exceeded.
        TimeExceeded = 3 => "time exceeded",
        /// 4: parameter problem.
        ParamProblem = 4 => "parameter problem",
        /// 128: echo request.
        EchoRequest = 128 => "echo request",
        /// 129: echo reply.
        EchoReply = 129 => "echo reply",
        /// 130: multicast listener query.
        MldQuery = 130 => "multicast listener query",
        /// 131: multicast listener report.
        MldReport = 131 => "multicast listener report",
        /// 132: multicast listener done.
        MldDone = 132 => "multicast listener done",
        /// 133: router solicitation.
        RouterSolicit = 133 => "router solicitation",
        /// 134: router advertisement.
        RouterAdvert = 134 => "router advertisement",
        /// 135: neighbor solicitation.
        NeighborSolicit = 135 => "neighbor solicitation",
        /// 136: neighbor advertisement.
        NeighborAdvert = 136 => "neighbor advertisement",
        /// 137: redirect.
        Redirect = 137 => "redirect",
        /// 143: multicast listener report v2.
        MldV2Report = 143 => "multicast listener report v2",
        /// Any other value.
        Unknown(_) => "Unknown",
    }
}

impl Icmpv6Type {
    /// True for the five Neighbor Discovery messages of RFC 4861 §4: router solicitation and
    /// advertisement, neighbor solicitation and advertisement, redirect (types 133-137).
    pub fn is_nd(self) -> bool {
        matches!(
            self,
            Icmpv6Type::RouterSolicit
                | Icmpv6Type::RouterAdvert
                | Icmpv6Type::NeighborSolicit
                | Icmpv6Type::NeighborAdvert
                | Icmpv6Type::Redirect
        )
    }
}

fixed_view! {
    /// A read/write view of an ICMP message (v4 or v6: the first 8 bytes have the same shape).
    #[derive(Debug, Clone)]
    pub struct IcmpPacket;
    /// `Err(Truncated)` below 8 bytes.
    fn check_len(min = field::BODY);
}

impl<T: AsRef<[u8]>> IcmpPacket<T> {
    /// Raw message type.
    pub fn msg_type(&self) -> u8 {
        self.buffer.as_ref()[field::TYPE]
    }
    /// Code.
    pub fn code(&self) -> u8 {
        self.buffer.as_ref()[field::CODE]
    }
    /// Checksum as received.
    pub fn checksum(&self) -> u16 {
        be16(self.buffer.as_ref(), field::CHECKSUM)
    }
    /// The 32-bit rest of header.
    pub fn rest(&self) -> u32 {
        be32(self.buffer.as_ref(), field::REST)
    }
    /// Echo identifier (high half of the rest of header).
    pub fn echo_ident(&self) -> u16 {
        be16(self.buffer.as_ref(), field::REST)
    }
    /// Echo sequence number (low half of the rest of header).
    pub fn echo_seq(&self) -> u16 {
        be16(self.buffer.as_ref(), field::REST + 2)
    }
    /// The body after the 8-byte header.
    pub fn body(&self) -> &[u8] {
        &self.buffer.as_ref()[field::BODY..]
    }
    /// True if the ICMPv4 checksum over the whole message is correct.
    pub fn verify_checksum_v4(&self) -> bool {
        checksum::internet(self.buffer.as_ref()) == 0
    }
    /// True if the ICMPv6 checksum (with the pseudo-header) is correct.
    pub fn verify_checksum_v6(&self, src: Ipv6Addr, dst: Ipv6Addr) -> bool {
        checksum::icmpv6(src, dst, self.buffer.as_ref()) == 0
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> IcmpPacket<T> {
    /// Sets the type.
    pub fn set_msg_type(&mut self, v: u8) {
        self.buffer.as_mut()[field::TYPE] = v;
    }
    /// Sets the code.
    pub fn set_code(&mut self, v: u8) {
        self.buffer.as_mut()[field::CODE] = v;
    }
    /// Sets the checksum field.
    pub fn set_checksum(&mut self, v: u16) {
        put16(self.buffer.as_mut(), field::CHECKSUM, v);
    }
    /// Sets the rest of header.
    pub fn set_rest(&mut self, v: u32) {
        put32(self.buffer.as_mut(), field::REST, v);
    }
    /// The body, writable.
    pub fn body_mut(&mut self) -> &mut [u8] {
        &mut self.buffer.as_mut()[field::BODY..]
    }
    /// Computes and writes the ICMPv4 checksum over the whole buffer.
    pub fn fill_checksum_v4(&mut self) {
        self.set_checksum(0);
        let c = checksum::internet(self.buffer.as_ref());
        self.set_checksum(c);
    }
    /// Computes and writes the ICMPv6 checksum over the whole buffer (RFC 4443 §2.3).
    pub fn fill_checksum_v6(&mut self, src: Ipv6Addr, dst: Ipv6Addr) {
        self.set_checksum(0);
        let c = checksum::icmpv6(src, dst, self.buffer.as_ref());
        self.set_checksum(c);
    }
}

/// An ICMPv4 message with its body borrowed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Icmpv4Repr<'a> {
    /// Message type.
    pub msg_type: Icmpv4Type,
    /// Code.
    pub code: u8,
    /// Rest of header (identifier << 16 | sequence for echo messages).
    pub rest: u32,
    /// The body.
    pub body: &'a [u8],
}

impl<'a> Icmpv4Repr<'a> {
    /// An echo request or reply.
    pub fn echo(request: bool, ident: u16, seq: u16, data: &'a [u8]) -> Icmpv4Repr<'a> {
        let msg_type = if request {
            Icmpv4Type::EchoRequest
        } else {
            Icmpv4Type::EchoReply
        };
        Icmpv4Repr {
            msg_type,
            code: 0,
            rest: (ident as u32) << 16 | seq as u32,
            body: data,
        }
    }

    /// Parses a whole message; `Err(Checksum)` if the checksum is wrong.
    pub fn parse(data: &'a [u8]) -> Result<Icmpv4Repr<'a>> {
        let p = IcmpPacket::new_checked(data)?;
        if !p.verify_checksum_v4() {
            return Err(Error::Checksum);
        }
        Ok(Icmpv4Repr {
            msg_type: Icmpv4Type::from(p.msg_type()),
            code: p.code(),
            rest: p.rest(),
            body: &data[field::BODY..],
        })
    }

    /// 8 + body length.
    pub fn buffer_len(&self) -> usize {
        field::BODY + self.body.len()
    }

    /// Writes the message with its checksum into the first `buffer_len()` bytes of `buf`.
    pub fn emit(&self, buf: &mut [u8]) -> Result<()> {
        let n = self.buffer_len();
        let b = buf.get_mut(..n).ok_or(Error::Truncated)?;
        let mut p = IcmpPacket::new_unchecked(b);
        p.set_msg_type(self.msg_type.into());
        p.set_code(self.code);
        p.set_rest(self.rest);
        p.body_mut().copy_from_slice(self.body);
        p.fill_checksum_v4();
        Ok(())
    }

    /// Echo identifier and sequence number, for echo messages.
    pub fn echo_ident_seq(&self) -> Option<(u16, u16)> {
        match self.msg_type {
            Icmpv4Type::EchoRequest | Icmpv4Type::EchoReply => {
                Some(((self.rest >> 16) as u16, self.rest as u16))
            }
            _ => None,
        }
    }
}

impl Describe for Icmpv4Repr<'_> {
    fn describe(&self, d: &mut dyn Describer) {
        d.field(
            "type",
            Value::Named(u8::from(self.msg_type) as u64, self.msg_type.name()),
        );
        d.field("code", Value::Uint(self.code as u64));
        match self.echo_ident_seq() {
            Some((id, seq)) => {
                d.field("ident", Value::Uint(id as u64));
                d.field("seq", Value::Uint(seq as u64));
            }
            None => d.field("rest_of_header", Value::Hex(self.rest as u64, 8)),
        }
        d.field("data_len", Value::Uint(self.body.len() as u64));
    }
}

impl core::fmt::Display for Icmpv4Repr<'_> {
    /// `ICMP echo request id 1 seq 1`.
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "ICMP {}", self.msg_type.name())?;
        match self.echo_ident_seq() {
            Some((id, seq)) => write!(f, " id {id} seq {seq}"),
            None => write!(f, " code {}", self.code),
        }
    }
}

/// An ICMPv6 message with its body borrowed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Icmpv6Repr<'a> {
    /// Message type.
    pub msg_type: Icmpv6Type,
    /// Code.
    pub code: u8,
    /// Rest of header (identifier << 16 | sequence for echo; MTU for packet too big; pointer for
    /// parameter problem; reserved or ND fields otherwise).
    pub rest: u32,
    /// The body after the 8-byte header.
    pub body: &'a [u8],
}

impl<'a> Icmpv6Repr<'a> {
    /// Parses a whole message and checks its checksum against the pseudo-header of `src` and `dst`
    /// (RFC 4443 §2.3); `Err(Checksum)` if wrong.
    pub fn parse(src: Ipv6Addr, dst: Ipv6Addr, data: &'a [u8]) -> Result<Icmpv6Repr<'a>> {
        let p = IcmpPacket::new_checked(data)?;
        if !p.verify_checksum_v6(src, dst) {
            return Err(Error::Checksum);
        }
        Ok(Icmpv6Repr {
            msg_type: Icmpv6Type::from(p.msg_type()),
            code: p.code(),
            rest: p.rest(),
            body: &data[field::BODY..],
        })
    }

    /// 8 + body length.
    pub fn buffer_len(&self) -> usize {
        field::BODY + self.body.len()
    }

    /// Writes the message and its checksum for `src` → `dst` into the first `buffer_len()` bytes.
    pub fn emit(&self, src: Ipv6Addr, dst: Ipv6Addr, buf: &mut [u8]) -> Result<()> {
        let n = self.buffer_len();
        let b = buf.get_mut(..n).ok_or(Error::Truncated)?;
        let mut p = IcmpPacket::new_unchecked(b);
        p.set_msg_type(self.msg_type.into());
        p.set_code(self.code);
        p.set_rest(self.rest);
        p.body_mut().copy_from_slice(self.body);
        p.fill_checksum_v6(src, dst);
        Ok(())
    }

    /// Echo identifier and sequence number, for echo messages.
    pub fn echo_ident_seq(&self) -> Option<(u16, u16)> {
        match self.msg_type {
            Icmpv6Type::EchoRequest | Icmpv6Type::EchoReply => {
                Some(((self.rest >> 16) as u16, self.rest as u16))
            }
            _ => None,
        }
    }

    /// True for the five ND messages of RFC 4861 (types 133-137, [`Icmpv6Type::is_nd`]).
    pub fn is_nd(&self) -> bool {
        self.msg_type.is_nd()
    }
}

impl Describe for Icmpv6Repr<'_> {
    fn describe(&self, d: &mut dyn Describer) {
        d.field(
            "type",
            Value::Named(u8::from(self.msg_type) as u64, self.msg_type.name()),
        );
        d.field("code", Value::Uint(self.code as u64));
        match (self.echo_ident_seq(), self.msg_type) {
            (Some((id, seq)), _) => {
                d.field("echo_identifier", Value::Uint(id as u64));
                d.field("echo_sequence_number", Value::Uint(seq as u64));
            }
            (None, Icmpv6Type::PacketTooBig) => d.field("mtu", Value::Uint(self.rest as u64)),
            (None, Icmpv6Type::ParamProblem) => d.field("pointer", Value::Uint(self.rest as u64)),
            _ if self.is_nd() => {
                if let Ok(nd) = super::nd::NdRepr::parse_message(self) {
                    nd.describe(d);
                    return;
                }
                d.field("rest_of_header", Value::Hex(self.rest as u64, 8));
            }
            _ => d.field("rest_of_header", Value::Hex(self.rest as u64, 8)),
        }
        d.field("data_len", Value::Uint(self.body.len() as u64));
    }
}

impl core::fmt::Display for Icmpv6Repr<'_> {
    /// `ICMPv6 echo request id 1 seq 1`, `ICMPv6 neighbor solicitation who-has fe80::2`.
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "ICMPv6 {}", self.msg_type.name())?;
        if let Some((id, seq)) = self.echo_ident_seq() {
            return write!(f, " id {id} seq {seq}");
        }
        if self.is_nd() {
            if let Ok(nd) = super::nd::NdRepr::parse_message(self) {
                return write!(f, "{}", nd.summary());
            }
        }
        match self.msg_type {
            Icmpv6Type::PacketTooBig => write!(f, " mtu {}", self.rest),
            _ => write!(f, " code {}", self.code),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::describe::Collect;
    use proptest::prelude::*;

    // RFC 792 echo request, id 1 seq 1, 4 data bytes "abcd".
    static ECHO4: [u8; 12] = [
        8, 0, 0x33, 0x37, 0x00, 0x01, 0x00, 0x01, b'a', b'b', b'c', b'd',
    ];

    #[test]
    fn v4_deconstruct_parse_emit() {
        let p = IcmpPacket::new_checked(&ECHO4[..]).unwrap();
        assert_eq!(p.msg_type(), 8);
        assert_eq!(p.echo_ident(), 1);
        assert_eq!(p.echo_seq(), 1);
        assert!(p.verify_checksum_v4());
        let r = Icmpv4Repr::parse(&ECHO4).unwrap();
        assert_eq!(r, Icmpv4Repr::echo(true, 1, 1, b"abcd"));
        assert_eq!(r.to_string(), "ICMP echo request id 1 seq 1");
        let mut b = [0u8; 12];
        r.emit(&mut b).unwrap();
        assert_eq!(b, ECHO4);
        let mut bad = ECHO4;
        bad[9] = b'x';
        assert_eq!(Icmpv4Repr::parse(&bad), Err(Error::Checksum));
        let mut c = Collect::default();
        r.describe(&mut c);
        assert_eq!(c.get("type"), Some("echo request (0x8)"));
        assert_eq!(c.get("seq"), Some("1"));
    }

    #[test]
    fn v6_echo() {
        let src: Ipv6Addr = "fe80::1".parse().unwrap();
        let dst: Ipv6Addr = "fe80::2".parse().unwrap();
        let r = Icmpv6Repr {
            msg_type: Icmpv6Type::EchoRequest,
            code: 0,
            rest: 0x0007_0003,
            body: b"hi",
        };
        let mut b = [0u8; 10];
        r.emit(src, dst, &mut b).unwrap();
        assert_eq!(b[..2], [128, 0]);
        assert_eq!(Icmpv6Repr::parse(src, dst, &b).unwrap(), r);
        let other: Ipv6Addr = "fe80::3".parse().unwrap();
        assert_eq!(Icmpv6Repr::parse(src, other, &b), Err(Error::Checksum));
        assert_eq!(r.to_string(), "ICMPv6 echo request id 7 seq 3");
    }

    // RFC 4861 §4: types 133-137 are ND, and only those.
    #[test]
    fn nd_types() {
        for t in 0..=255u8 {
            assert_eq!(Icmpv6Type::from(t).is_nd(), (133..=137).contains(&t), "{t}");
        }
    }

    proptest! {
        #[test]
        fn v4_round_trip(t in any::<u8>(), code in any::<u8>(), rest in any::<u32>(),
                         body in proptest::collection::vec(any::<u8>(), 0..64)) {
            let r = Icmpv4Repr { msg_type: t.into(), code, rest, body: &body };
            let mut b = vec![0u8; r.buffer_len()];
            r.emit(&mut b).unwrap();
            prop_assert_eq!(Icmpv4Repr::parse(&b).unwrap(), r);
        }

        #[test]
        fn v6_round_trip(t in any::<u8>(), code in any::<u8>(), rest in any::<u32>(), s in any::<u128>(),
                         body in proptest::collection::vec(any::<u8>(), 0..64)) {
            let (src, dst) = (Ipv6Addr::from(s), Ipv6Addr::from(!s));
            let r = Icmpv6Repr { msg_type: t.into(), code, rest, body: &body };
            let mut b = vec![0u8; r.buffer_len()];
            r.emit(src, dst, &mut b).unwrap();
            prop_assert_eq!(Icmpv6Repr::parse(src, dst, &b).unwrap(), r);
        }

        #[test]
        fn parse_never_panics(data in proptest::collection::vec(any::<u8>(), 0..300)) {
            if let Ok(r) = Icmpv4Repr::parse(&data) {
                let _ = r.to_string();
                r.describe(&mut Collect::default());
            }
            let a = Ipv6Addr::UNSPECIFIED;
            if let Ok(r) = Icmpv6Repr::parse(a, a, &data) {
                let _ = r.to_string();
                r.describe(&mut Collect::default());
            }
        }
    }
}
