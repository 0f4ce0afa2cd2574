//! A whole IPoIB UD payload (the bytes after the DETH, draft-ietf-ipoib-ip-over-infiniband-06 §6
//! figure 4): the 4-byte encapsulation header and the datagram it announces, classified one level down
//! (ARP fields; IP header fields and the ICMP/ND message or UDP datagram) for `ipoib decode` and for
//! the interface.
//!
//! Parsing is lenient below the encapsulation header: a datagram that does not parse is kept as
//! [`IpoibPayload::Invalid`] with the error, so a decoder can still show the header and the bytes.

use super::arp::{ArpPacket, ArpRepr};
use super::encap::{EncapHeader, EncapRepr, EtherType, HEADER_LEN};
use super::icmp::{Icmpv4Repr, Icmpv6Repr};
use super::ip::{
    IpProtocol, Ipv4Packet, Ipv4Repr, Ipv6Packet, Ipv6Repr, IPV4_HEADER_LEN, IPV6_HEADER_LEN,
};
use super::nd::NdProfile;
use super::udp::UdpRepr;
use crate::describe::{Describe, Describer, Value};
use crate::{Error, Result};
use core::fmt;
use std::net::IpAddr;

/// What an IP datagram carries, as far as this crate interprets it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IpPayload<'a> {
    /// An ICMPv4 message (checksum verified).
    Icmpv4(Icmpv4Repr<'a>),
    /// An ICMPv6 message (checksum verified; ND messages are taken apart by `describe`).
    Icmpv6(Icmpv6Repr<'a>),
    /// A UDP datagram (RFC 768; checksum verified, Length equal to the IP payload length).
    Udp(UdpRepr<'a>),
    /// Any other protocol, a fragment, or an IPv6 extension header: the bytes.
    Raw(&'a [u8]),
    /// An ICMP message or UDP datagram that did not parse, and why.
    Invalid {
        /// Why it did not parse.
        error: Error,
        /// The bytes.
        data: &'a [u8],
    },
}

impl<'a> IpPayload<'a> {
    fn bytes_len(&self) -> usize {
        match self {
            IpPayload::Icmpv4(r) => r.buffer_len(),
            IpPayload::Icmpv6(r) => r.buffer_len(),
            IpPayload::Udp(r) => r.buffer_len(),
            IpPayload::Raw(d) | IpPayload::Invalid { data: d, .. } => d.len(),
        }
    }

    /// Parses a UDP datagram that is the whole IP payload `body`: a Length field other than the
    /// payload length makes it `Invalid` (`Malformed`), so that a parsed datagram emits the bytes
    /// it was parsed from.
    fn udp(src: IpAddr, dst: IpAddr, body: &'a [u8]) -> IpPayload<'a> {
        let invalid = |error| IpPayload::Invalid { error, data: body };
        match UdpRepr::parse(src, dst, body) {
            Ok(r) if r.buffer_len() == body.len() => IpPayload::Udp(r),
            Ok(_) => invalid(Error::Malformed),
            Err(error) => invalid(error),
        }
    }

    /// Writes the payload of a datagram from `src` to `dst` (whose addresses the ICMPv6 and UDP
    /// checksums cover).
    fn emit(&self, src: IpAddr, dst: IpAddr, buf: &mut [u8]) -> Result<()> {
        match (self, src, dst) {
            (IpPayload::Icmpv4(r), _, _) => r.emit(buf),
            (IpPayload::Icmpv6(r), IpAddr::V6(s), IpAddr::V6(d)) => r.emit(s, d, buf),
            (IpPayload::Icmpv6(_), _, _) => Err(Error::Unsupported),
            (IpPayload::Udp(r), _, _) => r.emit(src, dst, buf),
            (IpPayload::Raw(d) | IpPayload::Invalid { data: d, .. }, _, _) => {
                buf.get_mut(..d.len())
                    .ok_or(Error::Truncated)?
                    .copy_from_slice(d);
                Ok(())
            }
        }
    }

    /// `icmp_group` names the group of an invalid ICMP message (`icmp` or `icmpv6`), `protocol`
    /// tells it from an invalid UDP datagram (group `udp`): its `error` stays inside that group,
    /// since a top-level `error` is how `ipoib decode` marks a malformed packet. `src` and `dst`
    /// are the datagram's addresses, which the UDP checksum covers; `profile` reads the
    /// link-layer address options of an ND message.
    fn describe(
        &self,
        icmp_group: &str,
        protocol: IpProtocol,
        (src, dst): (IpAddr, IpAddr),
        profile: NdProfile,
        d: &mut dyn Describer,
    ) {
        match self {
            IpPayload::Icmpv4(r) => r.describe_as("icmp", d),
            IpPayload::Icmpv6(r) => {
                d.enter("icmpv6");
                r.describe_with(profile, d);
                d.leave();
            }
            IpPayload::Udp(r) => {
                d.enter("udp");
                r.describe_between(src, dst, d);
                d.leave();
            }
            IpPayload::Raw(b) => d.field("data", Value::Bytes(b)),
            IpPayload::Invalid { error, data } => {
                let group = match protocol {
                    IpProtocol::Udp => "udp",
                    _ => icmp_group,
                };
                describe_invalid(group, *error, data, d)
            }
        }
    }
}

/// An invalid datagram or message as a group `name` holding `error` and `data`.
fn describe_invalid(name: &str, error: Error, data: &[u8], d: &mut dyn Describer) {
    d.enter(name);
    d.field("error", Value::Str(error_name(error)));
    d.field("data", Value::Bytes(data));
    d.leave();
}

fn error_name(e: Error) -> &'static str {
    match e {
        Error::Truncated => "truncated",
        Error::Malformed => "malformed",
        Error::Checksum => "checksum mismatch",
        Error::Unsupported => "unsupported",
    }
}

/// A parsed IPv4 datagram.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ipv4Datagram<'a> {
    /// The header (checksum verified).
    pub header: Ipv4Repr,
    /// Header options (a multiple of 4 bytes, at most 40).
    pub options: &'a [u8],
    /// The payload.
    pub payload: IpPayload<'a>,
}

impl<'a> Ipv4Datagram<'a> {
    /// Parses an IPv4 datagram; bytes past the total length (link padding) are ignored. ICMP and
    /// UDP are interpreted only in unfragmented datagrams.
    pub fn parse(data: &'a [u8]) -> Result<Ipv4Datagram<'a>> {
        let p = Ipv4Packet::new_checked(data)?;
        let header = Ipv4Repr::parse(&p)?;
        let hl = p.header_len() as usize;
        let tl = p.total_len() as usize;
        let options = &data[IPV4_HEADER_LEN..hl];
        let body = &data[hl..tl];
        let whole = !header.more_frags && header.frag_offset == 0;
        let payload = match header.protocol {
            IpProtocol::Icmp if whole => match Icmpv4Repr::parse(body) {
                Ok(r) => IpPayload::Icmpv4(r),
                Err(error) => IpPayload::Invalid { error, data: body },
            },
            IpProtocol::Udp if whole => {
                IpPayload::udp(header.src_addr.into(), header.dst_addr.into(), body)
            }
            _ => IpPayload::Raw(body),
        };
        Ok(Ipv4Datagram {
            header,
            options,
            payload,
        })
    }

    /// Header, options and payload length.
    pub fn buffer_len(&self) -> usize {
        IPV4_HEADER_LEN + self.options.len() + self.payload.bytes_len()
    }

    /// Writes the datagram (header, ICMP and UDP checksums computed). `Err(Malformed)` if the options
    /// are not a multiple of 4 bytes or longer than 40, or the datagram longer than 65535 bytes.
    pub fn emit(&self, buf: &mut [u8]) -> Result<()> {
        let n = self.buffer_len();
        if self.options.len() & 3 != 0 || self.options.len() > 40 || n > u16::MAX as usize {
            return Err(Error::Malformed);
        }
        let b = buf.get_mut(..n).ok_or(Error::Truncated)?;
        let hl = IPV4_HEADER_LEN + self.options.len();
        let mut h = self.header;
        h.payload_len = (n - hl) as u16;
        let mut p = Ipv4Packet::new_unchecked(&mut b[..]);
        h.emit(&mut p);
        p.set_version_and_header_len(4, hl as u8);
        p.set_total_len(n as u16);
        b[IPV4_HEADER_LEN..hl].copy_from_slice(self.options);
        Ipv4Packet::new_unchecked(&mut b[..hl]).fill_checksum();
        self.payload.emit(
            self.header.src_addr.into(),
            self.header.dst_addr.into(),
            &mut b[hl..],
        )
    }
}

impl Describe for Ipv4Datagram<'_> {
    fn describe(&self, d: &mut dyn Describer) {
        d.enter("ip");
        d.field("version", Value::Uint(4));
        d.field(
            "hdr_len",
            Value::Uint((IPV4_HEADER_LEN + self.options.len()) as u64),
        );
        self.header.describe_fields(self.buffer_len(), d);
        d.field("checksum", Value::Hex(self.header_checksum() as u64, 4));
        d.field("src", Value::Ipv4(self.header.src_addr));
        d.field("dst", Value::Ipv4(self.header.dst_addr));
        if !self.options.is_empty() {
            d.field("options", Value::Bytes(self.options));
        }
        d.leave();
        let addrs = (self.header.src_addr.into(), self.header.dst_addr.into());
        self.payload
            .describe("icmp", self.header.protocol, addrs, NdProfile::Rfc4391, d);
    }
}

impl Ipv4Datagram<'_> {
    /// The header checksum (recomputed; equal to the received one, which parse verified).
    pub fn header_checksum(&self) -> u16 {
        let mut b = [0u8; 60];
        let hl = IPV4_HEADER_LEN + self.options.len().min(40);
        let mut h = self.header;
        h.payload_len = self.payload.bytes_len() as u16;
        h.emit(&mut Ipv4Packet::new_unchecked(&mut b[..]));
        let mut p = Ipv4Packet::new_unchecked(&mut b[..hl]);
        p.set_version_and_header_len(4, hl as u8);
        p.set_total_len((hl + self.payload.bytes_len()) as u16);
        b[IPV4_HEADER_LEN..hl].copy_from_slice(&self.options[..hl - IPV4_HEADER_LEN]);
        let mut p = Ipv4Packet::new_unchecked(&mut b[..hl]);
        p.fill_checksum();
        p.checksum()
    }
}

/// A parsed IPv6 datagram.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ipv6Datagram<'a> {
    /// The header.
    pub header: Ipv6Repr,
    /// The payload (extension headers are not walked: anything but ICMPv6 or UDP right after the
    /// header is `Raw`).
    pub payload: IpPayload<'a>,
}

impl<'a> Ipv6Datagram<'a> {
    /// Parses an IPv6 datagram; bytes past the payload length are ignored.
    pub fn parse(data: &'a [u8]) -> Result<Ipv6Datagram<'a>> {
        let p = Ipv6Packet::new_checked(data)?;
        let header = Ipv6Repr::parse(&p)?;
        let body = &data[IPV6_HEADER_LEN..IPV6_HEADER_LEN + header.payload_len as usize];
        let payload = match header.next_header {
            IpProtocol::Icmpv6 => match Icmpv6Repr::parse(header.src_addr, header.dst_addr, body) {
                Ok(r) => IpPayload::Icmpv6(r),
                Err(error) => IpPayload::Invalid { error, data: body },
            },
            IpProtocol::Udp => IpPayload::udp(header.src_addr.into(), header.dst_addr.into(), body),
            _ => IpPayload::Raw(body),
        };
        Ok(Ipv6Datagram { header, payload })
    }

    /// Header and payload length.
    pub fn buffer_len(&self) -> usize {
        IPV6_HEADER_LEN + self.payload.bytes_len()
    }

    /// Writes the datagram (payload length and ICMPv6 or UDP checksum computed).
    pub fn emit(&self, buf: &mut [u8]) -> Result<()> {
        let n = self.buffer_len();
        if n - IPV6_HEADER_LEN > u16::MAX as usize {
            return Err(Error::Malformed);
        }
        let b = buf.get_mut(..n).ok_or(Error::Truncated)?;
        let mut h = self.header;
        h.payload_len = (n - IPV6_HEADER_LEN) as u16;
        h.emit(&mut Ipv6Packet::new_unchecked(&mut b[..]));
        self.payload.emit(
            h.src_addr.into(),
            h.dst_addr.into(),
            &mut b[IPV6_HEADER_LEN..],
        )
    }
}

impl Ipv6Datagram<'_> {
    /// [`Describe::describe`] with an ND message's link-layer address options read as `profile`'s
    /// ([`NdProfile`]: a bare datagram in a UD payload is the legacy profile's).
    pub fn describe_with(&self, profile: NdProfile, d: &mut dyn Describer) {
        self.header.describe_as("ipv6", d);
        let addrs = (self.header.src_addr.into(), self.header.dst_addr.into());
        self.payload
            .describe("icmpv6", self.header.next_header, addrs, profile, d);
    }

    /// `IPv6 fe80::1 > fe80::2 ICMPv6 echo request id 1 seq 1`, as [`IpoibFrame`]'s `Display`
    /// shows the datagram, with an ND message's link-layer address options read as `profile`'s.
    pub fn summary_with(&self, profile: NdProfile) -> Ipv6Summary<'_> {
        Ipv6Summary(self, profile)
    }
}

impl Describe for Ipv6Datagram<'_> {
    fn describe(&self, d: &mut dyn Describer) {
        self.describe_with(NdProfile::Rfc4391, d);
    }
}

/// The text of [`Ipv6Datagram::summary_with`].
#[derive(Debug)]
pub struct Ipv6Summary<'r>(&'r Ipv6Datagram<'r>, NdProfile);

impl fmt::Display for Ipv6Summary<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let Ipv6Summary(p, profile) = self;
        let h = &p.header;
        write!(f, "IPv6 {} > {}", h.src_addr, h.dst_addr)?;
        fmt_ip_payload(&p.payload, h.next_header, *profile, f)
    }
}

/// The datagram inside an IPoIB frame, classified by the encapsulation type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IpoibPayload<'a> {
    /// EtherType 0x0800.
    Ipv4(Ipv4Datagram<'a>),
    /// EtherType 0x86DD.
    Ipv6(Ipv6Datagram<'a>),
    /// EtherType 0x0806.
    Arp(ArpRepr),
    /// EtherType 0x8035.
    Rarp(ArpRepr),
    /// Another EtherType: the bytes.
    Unknown(&'a [u8]),
    /// A known EtherType whose datagram did not parse, and why.
    Invalid {
        /// Why it did not parse.
        error: Error,
        /// The bytes after the encapsulation header.
        data: &'a [u8],
    },
}

/// An IPoIB frame: encapsulation header and classified payload.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IpoibFrame<'a> {
    /// The encapsulation header (draft-ietf-ipoib-ip-over-infiniband-06 §6).
    pub header: EncapRepr,
    /// The datagram.
    pub payload: IpoibPayload<'a>,
}

impl<'a> IpoibFrame<'a> {
    /// Parses a UD payload. `Err(Truncated)` only when the 4-byte header is missing; a datagram that does
    /// not parse becomes [`IpoibPayload::Invalid`]. The type field picks the parser (§6 table 1).
    pub fn parse(data: &'a [u8]) -> Result<IpoibFrame<'a>> {
        let h = EncapHeader::new_checked(data)?;
        let header = EncapRepr::parse(&h)?;
        let body = &data[HEADER_LEN..];
        let invalid = |error| IpoibPayload::Invalid { error, data: body };
        let payload = match header.ethertype {
            EtherType::Ipv4 => Ipv4Datagram::parse(body).map_or_else(invalid, IpoibPayload::Ipv4),
            EtherType::Ipv6 => Ipv6Datagram::parse(body).map_or_else(invalid, IpoibPayload::Ipv6),
            EtherType::Arp => ArpRepr::parse(&ArpPacket::new_unchecked(body))
                .map_or_else(invalid, IpoibPayload::Arp),
            EtherType::Rarp => ArpRepr::parse(&ArpPacket::new_unchecked(body))
                .map_or_else(invalid, IpoibPayload::Rarp),
            EtherType::Unknown(_) => IpoibPayload::Unknown(body),
        };
        Ok(IpoibFrame { header, payload })
    }

    /// A frame with a zero reserved field and the type matching `payload` (draft-ietf-ipoib-ip-over-
    /// infiniband-06 §6: the type SHALL indicate the protocol). `Unknown` and `Invalid` payloads get type
    /// `ethertype`.
    pub fn new(payload: IpoibPayload<'a>, ethertype: EtherType) -> IpoibFrame<'a> {
        let t = match payload {
            IpoibPayload::Ipv4(_) => EtherType::Ipv4,
            IpoibPayload::Ipv6(_) => EtherType::Ipv6,
            IpoibPayload::Arp(_) => EtherType::Arp,
            IpoibPayload::Rarp(_) => EtherType::Rarp,
            IpoibPayload::Unknown(_) | IpoibPayload::Invalid { .. } => ethertype,
        };
        IpoibFrame {
            header: EncapRepr::new(t),
            payload,
        }
    }

    /// Encapsulation header plus datagram.
    pub fn buffer_len(&self) -> usize {
        HEADER_LEN
            + match &self.payload {
                IpoibPayload::Ipv4(p) => p.buffer_len(),
                IpoibPayload::Ipv6(p) => p.buffer_len(),
                IpoibPayload::Arp(a) | IpoibPayload::Rarp(a) => a.buffer_len(),
                IpoibPayload::Unknown(d) | IpoibPayload::Invalid { data: d, .. } => d.len(),
            }
    }

    /// Writes the frame into the first `buffer_len()` bytes of `buf`.
    pub fn emit(&self, buf: &mut [u8]) -> Result<()> {
        let n = self.buffer_len();
        let b = buf.get_mut(..n).ok_or(Error::Truncated)?;
        self.header
            .emit(&mut EncapHeader::new_unchecked(&mut b[..]));
        let body = &mut b[HEADER_LEN..];
        match &self.payload {
            IpoibPayload::Ipv4(p) => p.emit(body),
            IpoibPayload::Ipv6(p) => p.emit(body),
            IpoibPayload::Arp(a) | IpoibPayload::Rarp(a) => {
                a.emit(&mut ArpPacket::new_unchecked(body));
                Ok(())
            }
            IpoibPayload::Unknown(d) | IpoibPayload::Invalid { data: d, .. } => {
                body.copy_from_slice(d);
                Ok(())
            }
        }
    }

    /// A one-line summary (`IPv4 10.0.0.1 > 10.0.0.2 ICMP echo request id 1 seq 1`); the same text
    /// as `Display`.
    pub fn summary(&self) -> String {
        self.to_string()
    }
}

impl Describe for IpoibFrame<'_> {
    /// Lists the `ipoib` group (encapsulation header), then one group per inner header: `arp` / `rarp`,
    /// `ip` or `ipv6` followed by `icmp` / `icmpv6` / `udp`, or `data`. A datagram or message that did
    /// not parse is the group it would have been (`arp`, `ip`, `icmp`, `udp`, ...) holding `error` and
    /// `data`.
    /// Call it directly (not `describe_as`) so that these groups sit beside `lrh`, `bth`, `deth`.
    fn describe(&self, d: &mut dyn Describer) {
        self.header.describe_as("ipoib", d);
        match &self.payload {
            IpoibPayload::Ipv4(p) => p.describe(d),
            IpoibPayload::Ipv6(p) => p.describe(d),
            IpoibPayload::Arp(a) => a.describe_as("arp", d),
            IpoibPayload::Rarp(a) => a.describe_as("rarp", d),
            IpoibPayload::Unknown(b) => d.field("data", Value::Bytes(b)),
            IpoibPayload::Invalid { error, data } => {
                // In the group the datagram would have had: a top-level `error` would tell
                // `ipoib decode --json` readers that the IB packet itself is malformed.
                let group = match self.header.ethertype {
                    EtherType::Ipv4 => "ip",
                    EtherType::Ipv6 => "ipv6",
                    EtherType::Arp => "arp",
                    EtherType::Rarp => "rarp",
                    EtherType::Unknown(_) => "payload",
                };
                describe_invalid(group, *error, data, d);
            }
        }
    }
}

fn fmt_ip_payload(
    p: &IpPayload<'_>,
    proto: IpProtocol,
    profile: NdProfile,
    f: &mut fmt::Formatter<'_>,
) -> fmt::Result {
    match p {
        IpPayload::Icmpv4(r) => write!(f, " {r}"),
        IpPayload::Icmpv6(r) => write!(f, " {}", r.summary_with(profile)),
        IpPayload::Udp(r) => write!(f, " {r}"),
        IpPayload::Raw(b) => write!(f, " {} length {}", proto.name(), b.len()),
        IpPayload::Invalid { error, .. } => write!(f, " {} ({error})", proto.name()),
    }
}

impl fmt::Display for IpoibFrame<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.payload {
            IpoibPayload::Ipv4(p) => {
                let h = &p.header;
                write!(f, "IPv4 {} > {}", h.src_addr, h.dst_addr)?;
                if h.more_frags || h.frag_offset != 0 {
                    write!(f, " fragment offset {}", h.frag_offset)?;
                }
                fmt_ip_payload(&p.payload, h.protocol, NdProfile::Rfc4391, f)
            }
            IpoibPayload::Ipv6(p) => write!(f, "{}", p.summary_with(NdProfile::Rfc4391)),
            IpoibPayload::Arp(a) => write!(f, "ARP {a}"),
            IpoibPayload::Rarp(a) => write!(f, "RARP {a}"),
            IpoibPayload::Unknown(b) => {
                write!(
                    f,
                    "ethertype {:#06x}, {} bytes",
                    u16::from(self.header.ethertype),
                    b.len()
                )
            }
            IpoibPayload::Invalid { error, data } => {
                write!(
                    f,
                    "{} {error} ({} bytes)",
                    self.header.ethertype.name(),
                    data.len()
                )
            }
        }
    }
}

#[cfg(test)]
mod tests;
