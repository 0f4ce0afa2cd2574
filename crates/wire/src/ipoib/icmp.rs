//! ICMPv4 (RFC 792) and ICMPv6 (RFC 4443) messages: type, code, checksum, the 32-bit rest of header
//! (echo identifier and sequence, MTU, pointer) and the body. Neighbour Discovery bodies are taken apart
//! by [`super::nd`].
//!
//! Two error messages have builders, the ones an IPoIB interface answers a packet too large for its
//! path with (docs/DEPLOYED.md "Linux IPoIB"): ICMPv4 destination unreachable, fragmentation needed
//! ([`Icmpv4Repr::frag_needed`], RFC 792, RFC 1191 §4) and ICMPv6 packet too big
//! ([`Icmpv6Repr::packet_too_big`], RFC 4443 §3.2).

use super::checksum;
use super::ip::{Ipv4Packet, IPV4_HEADER_LEN, IPV6_HEADER_LEN};
use super::nd::{NdProfile, NdRepr};
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

/// Bytes of the invoking datagram's data an ICMPv4 error message quotes after its IP header
/// (RFC 792; RFC 1122 §3.2.2: at least these, more allowed).
pub const ICMPV4_QUOTED_DATA_LEN: usize = 8;

/// The IPv6 minimum link MTU (RFC 8200 §5), which no ICMPv6 error message may exceed (RFC 4443
/// §2.4 (c)).
pub const IPV6_MIN_MTU: usize = 1280;

/// The most of an invoking packet a packet too big message can quote: 1280 - 40 - 8 = 1232 bytes
/// (RFC 4443 §2.4 (c), §3.2).
pub const ICMPV6_MAX_QUOTED_LEN: usize = IPV6_MIN_MTU - IPV6_HEADER_LEN - ICMP_HEADER_LEN;

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

impl Icmpv4Type {
    /// True unless the type is one of the query messages of RFC 792 and RFC 950 (echo 0/8,
    /// timestamp 13/14, information 15/16, address mask 17/18): the error messages of RFC 1122
    /// §3.2.2 (destination unreachable, source quench, redirect, time exceeded, parameter problem)
    /// and every other type. An unknown type may be an error, and no error may answer one (RFC 1122
    /// §3.2.2), so it counts as one, as in Linux (docs/DEPLOYED.md "Linux IPoIB").
    pub fn is_error(self) -> bool {
        !matches!(u8::from(self), 0 | 8 | 13..=18)
    }
}

code_enum! {
    /// ICMPv4 destination unreachable code (RFC 792 codes 0-5, RFC 1122 §3.2.2.1 codes 6-12,
    /// RFC 1812 §5.2.7.1 codes 13-15). Unknown values are kept.
    pub enum Icmpv4Unreachable(u8) {
        /// 0.
        NetUnreachable = 0 => "net unreachable",
        /// 1.
        HostUnreachable = 1 => "host unreachable",
        /// 2.
        ProtoUnreachable = 2 => "protocol unreachable",
        /// 3.
        PortUnreachable = 3 => "port unreachable",
        /// 4: fragmentation needed and DF set; the next-hop MTU is in the rest of header (RFC 1191 §4).
        FragNeeded = 4 => "fragmentation needed",
        /// 5.
        SourceRouteFailed = 5 => "source route failed",
        /// 6.
        NetUnknown = 6 => "destination network unknown",
        /// 7.
        HostUnknown = 7 => "destination host unknown",
        /// 8.
        SourceIsolated = 8 => "source host isolated",
        /// 9.
        NetProhibited = 9 => "network administratively prohibited",
        /// 10.
        HostProhibited = 10 => "host administratively prohibited",
        /// 11.
        NetUnreachableTos = 11 => "network unreachable for type of service",
        /// 12.
        HostUnreachableTos = 12 => "host unreachable for type of service",
        /// 13.
        Prohibited = 13 => "communication administratively prohibited",
        /// 14.
        PrecedenceViolation = 14 => "host precedence violation",
        /// 15.
        PrecedenceCutoff = 15 => "precedence cutoff in effect",
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
    /// True for an error message: types 0-127 (RFC 4443 §2.1); 128-255 are informational.
    pub fn is_error(self) -> bool {
        u8::from(self) < 128
    }

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
    /// Next-hop MTU of an ICMPv4 fragmentation-needed message: the low half of the rest of header,
    /// after 16 unused bits (RFC 1191 §4).
    pub fn next_hop_mtu(&self) -> u16 {
        be16(self.buffer.as_ref(), field::REST + 2)
    }
    /// MTU of an ICMPv6 packet too big message: the whole rest of header (RFC 4443 §3.2).
    pub fn mtu(&self) -> u32 {
        be32(self.buffer.as_ref(), field::REST)
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
    /// Sets the rest of header of an ICMPv4 fragmentation-needed message: 16 unused bits, zero,
    /// then the next-hop MTU (RFC 1191 §4).
    pub fn set_next_hop_mtu(&mut self, mtu: u16) {
        self.set_rest(u32::from(mtu));
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

    /// Destination unreachable, code 4, fragmentation needed and DF set (RFC 792), carrying the
    /// next-hop MTU (RFC 1191 §4: 16 unused bits, zero, then the MTU) and quoting the invoking
    /// datagram's IP header, options included, and the first 8 bytes of its data (RFC 792), or the
    /// whole datagram if it is shorter. Bytes past its total length (link padding) are not quoted.
    ///
    /// `invoking` must begin with an IPv4 header: `Err(Unsupported)` if the version is not 4,
    /// `Err(Malformed)` if the IHL is below 5 or the total length below the header length,
    /// `Err(Truncated)` if the buffer is shorter than the header. The datagram itself may be cut
    /// short: only the quoted bytes are needed. The header checksum is not checked.
    pub fn frag_needed(next_hop_mtu: u16, invoking: &'a [u8]) -> Result<Icmpv4Repr<'a>> {
        Ok(Icmpv4Repr {
            msg_type: Icmpv4Type::DestUnreachable,
            code: Icmpv4Unreachable::FragNeeded.into(),
            rest: u32::from(next_hop_mtu),
            body: quote_v4(invoking)?,
        })
    }

    /// Destination unreachable, code 1, host unreachable (RFC 792), 32 unused bits (zero),
    /// quoting the invoking datagram as [`frag_needed`](Icmpv4Repr::frag_needed) does, with its
    /// errors.
    pub fn host_unreachable(invoking: &'a [u8]) -> Result<Icmpv4Repr<'a>> {
        Ok(Icmpv4Repr {
            msg_type: Icmpv4Type::DestUnreachable,
            code: Icmpv4Unreachable::HostUnreachable.into(),
            rest: 0,
            body: quote_v4(invoking)?,
        })
    }

    /// The next-hop MTU of a fragmentation-needed message (RFC 1191 §4; 0 from a router older
    /// than RFC 1191), `None` for any other message.
    pub fn next_hop_mtu(&self) -> Option<u16> {
        let frag_needed = self.msg_type == Icmpv4Type::DestUnreachable
            && Icmpv4Unreachable::from(self.code) == Icmpv4Unreachable::FragNeeded;
        frag_needed.then_some(self.rest as u16)
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

/// What an ICMPv4 error quotes of `invoking` (RFC 792): the IP header and the first 8 data bytes,
/// never past the total length or the end of the buffer.
fn quote_v4(invoking: &[u8]) -> Result<&[u8]> {
    if invoking.len() < IPV4_HEADER_LEN {
        return Err(Error::Truncated);
    }
    let p = Ipv4Packet::new_unchecked(invoking);
    if p.version() != 4 {
        return Err(Error::Unsupported);
    }
    let hl = p.header_len() as usize;
    let tl = p.total_len() as usize;
    if hl < IPV4_HEADER_LEN || tl < hl {
        return Err(Error::Malformed);
    }
    if invoking.len() < hl {
        return Err(Error::Truncated);
    }
    let end = (hl + ICMPV4_QUOTED_DATA_LEN).min(tl).min(invoking.len());
    Ok(&invoking[..end])
}

impl Describe for Icmpv4Repr<'_> {
    fn describe(&self, d: &mut dyn Describer) {
        d.field(
            "type",
            Value::Named(u8::from(self.msg_type) as u64, self.msg_type.name()),
        );
        if self.msg_type == Icmpv4Type::DestUnreachable {
            let c = Icmpv4Unreachable::from(self.code);
            d.field("code", Value::Named(self.code as u64, c.name()));
        } else {
            d.field("code", Value::Uint(self.code as u64));
        }
        match (self.echo_ident_seq(), self.next_hop_mtu()) {
            (Some((id, seq)), _) => {
                d.field("ident", Value::Uint(id as u64));
                d.field("seq", Value::Uint(seq as u64));
            }
            (None, Some(mtu)) => {
                d.field("unused", Value::Hex((self.rest >> 16) as u64, 4));
                d.field("mtu", Value::Uint(mtu as u64));
            }
            (None, None) => d.field("rest_of_header", Value::Hex(self.rest as u64, 8)),
        }
        d.field("data_len", Value::Uint(self.body.len() as u64));
    }
}

impl core::fmt::Display for Icmpv4Repr<'_> {
    /// `ICMP echo request id 1 seq 1`,
    /// `ICMP destination unreachable fragmentation needed mtu 2044`.
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "ICMP {}", self.msg_type.name())?;
        if let Some((id, seq)) = self.echo_ident_seq() {
            return write!(f, " id {id} seq {seq}");
        }
        match (self.msg_type, Icmpv4Unreachable::from(self.code)) {
            (Icmpv4Type::DestUnreachable, c) if !matches!(c, Icmpv4Unreachable::Unknown(_)) => {
                write!(f, " {}", c.name())?;
                match self.next_hop_mtu() {
                    Some(mtu) => write!(f, " mtu {mtu}"),
                    None => Ok(()),
                }
            }
            _ => write!(f, " code {}", self.code),
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
    /// Packet too big (RFC 4443 §3.2): type 2, code 0, the MTU of the next-hop link, and as much of
    /// the invoking packet (`invoking`, from its IPv6 header to the end of its payload) as fits
    /// without the ICMPv6 packet exceeding the minimum IPv6 MTU (§2.4 (c)): at most its first
    /// [`ICMPV6_MAX_QUOTED_LEN`] (1232) bytes.
    pub fn packet_too_big(mtu: u32, invoking: &'a [u8]) -> Icmpv6Repr<'a> {
        Icmpv6Repr {
            msg_type: Icmpv6Type::PacketTooBig,
            code: 0,
            rest: mtu,
            body: &invoking[..invoking.len().min(ICMPV6_MAX_QUOTED_LEN)],
        }
    }

    /// Destination unreachable, code 3, address unreachable (RFC 4443 §3.1: e.g. the link-layer
    /// address of the destination could not be resolved, RFC 4861 §7.2.2), 32 unused bits (zero),
    /// quoting `invoking` as [`packet_too_big`](Icmpv6Repr::packet_too_big) does.
    pub fn address_unreachable(invoking: &'a [u8]) -> Icmpv6Repr<'a> {
        Icmpv6Repr {
            msg_type: Icmpv6Type::DestUnreachable,
            code: 3,
            rest: 0,
            body: &invoking[..invoking.len().min(ICMPV6_MAX_QUOTED_LEN)],
        }
    }

    /// The MTU of a packet too big message (RFC 4443 §3.2), `None` for any other message.
    pub fn mtu(&self) -> Option<u32> {
        (self.msg_type == Icmpv6Type::PacketTooBig).then_some(self.rest)
    }

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

impl Icmpv6Repr<'_> {
    /// [`Describe::describe`] with an ND message's link-layer address options read as `profile`'s
    /// (the option bytes cannot tell the profiles apart, [`NdProfile`]).
    pub fn describe_with(&self, profile: NdProfile, d: &mut dyn Describer) {
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
                if let Ok(nd) = NdRepr::parse_message_as(self, profile) {
                    nd.describe(d);
                    return;
                }
                d.field("rest_of_header", Value::Hex(self.rest as u64, 8));
            }
            _ => d.field("rest_of_header", Value::Hex(self.rest as u64, 8)),
        }
        d.field("data_len", Value::Uint(self.body.len() as u64));
    }

    /// The one-line summary of `Display` with an ND message's link-layer address options read as
    /// `profile`'s.
    pub fn summary_with(&self, profile: NdProfile) -> Icmpv6Summary<'_> {
        Icmpv6Summary(self, profile)
    }
}

impl Describe for Icmpv6Repr<'_> {
    fn describe(&self, d: &mut dyn Describer) {
        self.describe_with(NdProfile::Rfc4391, d);
    }
}

impl core::fmt::Display for Icmpv6Repr<'_> {
    /// `ICMPv6 echo request id 1 seq 1`, `ICMPv6 neighbor solicitation who-has fe80::2`.
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "{}", self.summary_with(NdProfile::Rfc4391))
    }
}

/// The text of [`Icmpv6Repr::summary_with`].
#[derive(Debug)]
pub struct Icmpv6Summary<'r>(&'r Icmpv6Repr<'r>, NdProfile);

impl core::fmt::Display for Icmpv6Summary<'_> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        let Icmpv6Summary(m, profile) = self;
        write!(f, "ICMPv6 {}", m.msg_type.name())?;
        if let Some((id, seq)) = m.echo_ident_seq() {
            return write!(f, " id {id} seq {seq}");
        }
        if m.is_nd() {
            if let Ok(nd) = NdRepr::parse_message_as(m, *profile) {
                return write!(f, "{}", nd.summary());
            }
        }
        match m.msg_type {
            Icmpv6Type::PacketTooBig => write!(f, " mtu {}", m.rest),
            _ => write!(f, " code {}", m.code),
        }
    }
}

#[cfg(test)]
mod tests;
