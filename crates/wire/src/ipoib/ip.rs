//! Small, allocation-free IPv4 (RFC 791) and IPv6 (RFC 8200) header views: what `ipoib decode` shows and
//! what the IPoIB interface needs to build ICMP errors and ND messages. Options and extension headers
//! are exposed as bytes, not interpreted.

use super::checksum;
use crate::describe::{Describe, Describer, Value};
use crate::types::{be16, be32, put16, put32};
use crate::{Error, Result};
use std::net::{Ipv4Addr, Ipv6Addr};

code_enum! {
    /// An IP protocol / next-header number (IANA). Unknown values are kept.
    pub enum IpProtocol(u8) {
        /// 0: IPv6 hop-by-hop options.
        HopByHop = 0 => "IPv6 hop-by-hop",
        /// 1.
        Icmp = 1 => "ICMP",
        /// 2.
        Igmp = 2 => "IGMP",
        /// 6.
        Tcp = 6 => "TCP",
        /// 17.
        Udp = 17 => "UDP",
        /// 58.
        Icmpv6 = 58 => "ICMPv6",
        /// 59: no next header.
        NoNextHeader = 59 => "no next header",
        /// Any other value.
        Unknown(_) => "Unknown",
    }
}

mod v4 {
    pub const VER_IHL: usize = 0;
    pub const TOS: usize = 1;
    pub const LEN: usize = 2;
    pub const IDENT: usize = 4;
    pub const FLG_OFF: usize = 6;
    pub const TTL: usize = 8;
    pub const PROTOCOL: usize = 9;
    pub const CHECKSUM: usize = 10;
    pub const SRC: usize = 12;
    pub const DST: usize = 16;
    pub const MIN_LEN: usize = 20;
}

/// Minimum IPv4 header length.
pub const IPV4_HEADER_LEN: usize = v4::MIN_LEN;

/// A read/write view of an IPv4 packet.
#[derive(Debug, Clone)]
pub struct Ipv4Packet<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> Ipv4Packet<T> {
    /// Wraps a buffer without checking it.
    pub const fn new_unchecked(buffer: T) -> Ipv4Packet<T> {
        Ipv4Packet { buffer }
    }
    /// Wraps a buffer and runs [`Ipv4Packet::check_len`].
    pub fn new_checked(buffer: T) -> Result<Ipv4Packet<T>> {
        let p = Self::new_unchecked(buffer);
        p.check_len()?;
        Ok(p)
    }
    /// `Err(Truncated)` if the buffer is shorter than 20 bytes, than the IHL or than the total length;
    /// `Err(Malformed)` if the IHL is below 5 or the total length below the header length.
    pub fn check_len(&self) -> Result<()> {
        let b = self.buffer.as_ref();
        if b.len() < v4::MIN_LEN {
            return Err(Error::Truncated);
        }
        let hl = self.header_len() as usize;
        let tl = self.total_len() as usize;
        if hl < v4::MIN_LEN || tl < hl {
            return Err(Error::Malformed);
        }
        if b.len() < hl || b.len() < tl {
            return Err(Error::Truncated);
        }
        Ok(())
    }
    /// The wrapped buffer.
    pub fn into_inner(self) -> T {
        self.buffer
    }
    /// Version (4).
    pub fn version(&self) -> u8 {
        self.buffer.as_ref()[v4::VER_IHL] >> 4
    }
    /// Header length in bytes (IHL × 4).
    pub fn header_len(&self) -> u8 {
        (self.buffer.as_ref()[v4::VER_IHL] & 0x0f) * 4
    }
    /// Type of service octet (DSCP << 2 | ECN).
    pub fn tos(&self) -> u8 {
        self.buffer.as_ref()[v4::TOS]
    }
    /// Total length.
    pub fn total_len(&self) -> u16 {
        be16(self.buffer.as_ref(), v4::LEN)
    }
    /// Identification.
    pub fn ident(&self) -> u16 {
        be16(self.buffer.as_ref(), v4::IDENT)
    }
    /// The reserved flag bit.
    pub fn reserved_flag(&self) -> bool {
        be16(self.buffer.as_ref(), v4::FLG_OFF) & 0x8000 != 0
    }
    /// Don't fragment.
    pub fn dont_frag(&self) -> bool {
        be16(self.buffer.as_ref(), v4::FLG_OFF) & 0x4000 != 0
    }
    /// More fragments.
    pub fn more_frags(&self) -> bool {
        be16(self.buffer.as_ref(), v4::FLG_OFF) & 0x2000 != 0
    }
    /// Fragment offset in bytes.
    pub fn frag_offset(&self) -> u16 {
        (be16(self.buffer.as_ref(), v4::FLG_OFF) & 0x1fff) * 8
    }
    /// Time to live.
    pub fn ttl(&self) -> u8 {
        self.buffer.as_ref()[v4::TTL]
    }
    /// Protocol.
    pub fn protocol(&self) -> IpProtocol {
        IpProtocol::from(self.buffer.as_ref()[v4::PROTOCOL])
    }
    /// Header checksum as received.
    pub fn checksum(&self) -> u16 {
        be16(self.buffer.as_ref(), v4::CHECKSUM)
    }
    /// Source address.
    pub fn src_addr(&self) -> Ipv4Addr {
        Ipv4Addr::from(be32(self.buffer.as_ref(), v4::SRC))
    }
    /// Destination address.
    pub fn dst_addr(&self) -> Ipv4Addr {
        Ipv4Addr::from(be32(self.buffer.as_ref(), v4::DST))
    }
    /// True if the header checksum is correct (requires `check_len`).
    pub fn verify_checksum(&self) -> bool {
        checksum::internet(&self.buffer.as_ref()[..self.header_len() as usize]) == 0
    }
    /// The options (bytes 20 to the IHL).
    pub fn options(&self) -> &[u8] {
        &self.buffer.as_ref()[v4::MIN_LEN..self.header_len() as usize]
    }
    /// The payload, up to the total length (link padding excluded).
    pub fn payload(&self) -> &[u8] {
        &self.buffer.as_ref()[self.header_len() as usize..self.total_len() as usize]
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Ipv4Packet<T> {
    /// Sets version and header length (bytes, a multiple of 4).
    pub fn set_version_and_header_len(&mut self, version: u8, header_len: u8) {
        self.buffer.as_mut()[v4::VER_IHL] = (version << 4) | ((header_len / 4) & 0x0f);
    }
    /// Sets the TOS octet.
    pub fn set_tos(&mut self, v: u8) {
        self.buffer.as_mut()[v4::TOS] = v;
    }
    /// Sets the total length.
    pub fn set_total_len(&mut self, v: u16) {
        put16(self.buffer.as_mut(), v4::LEN, v);
    }
    /// Sets the identification.
    pub fn set_ident(&mut self, v: u16) {
        put16(self.buffer.as_mut(), v4::IDENT, v);
    }
    /// Sets the flags and the fragment offset (bytes, a multiple of 8).
    pub fn set_flags_and_frag_offset(&mut self, rsv: bool, df: bool, mf: bool, offset: u16) {
        let v =
            (rsv as u16) << 15 | (df as u16) << 14 | (mf as u16) << 13 | ((offset / 8) & 0x1fff);
        put16(self.buffer.as_mut(), v4::FLG_OFF, v);
    }
    /// Sets the TTL.
    pub fn set_ttl(&mut self, v: u8) {
        self.buffer.as_mut()[v4::TTL] = v;
    }
    /// Sets the protocol.
    pub fn set_protocol(&mut self, p: IpProtocol) {
        self.buffer.as_mut()[v4::PROTOCOL] = p.into();
    }
    /// Sets the checksum field.
    pub fn set_checksum(&mut self, v: u16) {
        put16(self.buffer.as_mut(), v4::CHECKSUM, v);
    }
    /// Sets the source address.
    pub fn set_src_addr(&mut self, a: Ipv4Addr) {
        put32(self.buffer.as_mut(), v4::SRC, a.into());
    }
    /// Sets the destination address.
    pub fn set_dst_addr(&mut self, a: Ipv4Addr) {
        put32(self.buffer.as_mut(), v4::DST, a.into());
    }
    /// Computes and writes the header checksum (over the header length).
    pub fn fill_checksum(&mut self) {
        self.set_checksum(0);
        let hl = self.header_len() as usize;
        let c = checksum::internet(&self.buffer.as_ref()[..hl]);
        self.set_checksum(c);
    }
    /// The payload, writable (from the header length to the end of the buffer).
    pub fn payload_mut(&mut self) -> &mut [u8] {
        let hl = self.header_len() as usize;
        &mut self.buffer.as_mut()[hl..]
    }
}

/// A validated IPv4 header. Options are not represented: [`Ipv4Repr::parse`] accepts them (the view's
/// `options()` shows them) and [`Ipv4Repr::emit`] writes a 20-byte header.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Ipv4Repr {
    /// DSCP << 2 | ECN.
    pub tos: u8,
    /// Identification.
    pub ident: u16,
    /// Don't fragment.
    pub dont_frag: bool,
    /// More fragments.
    pub more_frags: bool,
    /// Fragment offset in bytes (a multiple of 8).
    pub frag_offset: u16,
    /// Time to live.
    pub ttl: u8,
    /// Protocol.
    pub protocol: IpProtocol,
    /// Source address.
    pub src_addr: Ipv4Addr,
    /// Destination address.
    pub dst_addr: Ipv4Addr,
    /// Payload length (total length minus the header length).
    pub payload_len: u16,
}

impl Ipv4Repr {
    /// Parses and validates: version 4 (`Err(Unsupported)` otherwise), lengths (`check_len`), header
    /// checksum (`Err(Checksum)`), reserved flag clear (`Err(Malformed)`).
    pub fn parse<T: AsRef<[u8]>>(p: &Ipv4Packet<T>) -> Result<Ipv4Repr> {
        p.check_len()?;
        if p.version() != 4 {
            return Err(Error::Unsupported);
        }
        if !p.verify_checksum() {
            return Err(Error::Checksum);
        }
        if p.reserved_flag() {
            return Err(Error::Malformed);
        }
        Ok(Ipv4Repr {
            tos: p.tos(),
            ident: p.ident(),
            dont_frag: p.dont_frag(),
            more_frags: p.more_frags(),
            frag_offset: p.frag_offset(),
            ttl: p.ttl(),
            protocol: p.protocol(),
            src_addr: p.src_addr(),
            dst_addr: p.dst_addr(),
            payload_len: p.total_len() - p.header_len() as u16,
        })
    }

    /// 20 (no options).
    pub const fn buffer_len(&self) -> usize {
        v4::MIN_LEN
    }

    /// Writes a 20-byte header with a correct checksum into the start of `p` (at least 20 bytes).
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, p: &mut Ipv4Packet<T>) {
        p.set_version_and_header_len(4, v4::MIN_LEN as u8);
        p.set_tos(self.tos);
        p.set_total_len(self.payload_len.saturating_add(v4::MIN_LEN as u16));
        p.set_ident(self.ident);
        p.set_flags_and_frag_offset(false, self.dont_frag, self.more_frags, self.frag_offset);
        p.set_ttl(self.ttl);
        p.set_protocol(self.protocol);
        p.set_src_addr(self.src_addr);
        p.set_dst_addr(self.dst_addr);
        p.fill_checksum();
    }

    /// Lists the fields including the header length, options and checksum taken from the packet.
    pub fn describe_packet<T: AsRef<[u8]>>(&self, p: &Ipv4Packet<T>, d: &mut dyn Describer) {
        d.field("version", Value::Uint(4));
        d.field("hdr_len", Value::Uint(p.header_len() as u64));
        self.describe_fields(p.total_len() as usize, d);
        d.field("checksum", Value::Hex(p.checksum() as u64, 4));
        d.field("src", Value::Ipv4(self.src_addr));
        d.field("dst", Value::Ipv4(self.dst_addr));
        if p.header_len() as usize > v4::MIN_LEN {
            d.field("options", Value::Bytes(p.options()));
        }
    }

    /// Lists the fields from `dscp` to `proto` (those between the header length and the checksum), with
    /// `total_len` as the `len` field.
    pub fn describe_fields(&self, total_len: usize, d: &mut dyn Describer) {
        d.field("dscp", Value::Uint((self.tos >> 2) as u64));
        d.field("ecn", Value::Uint((self.tos & 3) as u64));
        d.field("len", Value::Uint(total_len as u64));
        d.field("id", Value::Hex(self.ident as u64, 4));
        d.field("flags_df", Value::Bool(self.dont_frag));
        d.field("flags_mf", Value::Bool(self.more_frags));
        d.field("frag_offset", Value::Uint(self.frag_offset as u64));
        d.field("ttl", Value::Uint(self.ttl as u64));
        d.field(
            "proto",
            Value::Named(u8::from(self.protocol) as u64, self.protocol.name()),
        );
    }
}

impl Describe for Ipv4Repr {
    /// The fields of the 20-byte header [`Ipv4Repr::emit`] writes (checksum omitted: it is computed).
    fn describe(&self, d: &mut dyn Describer) {
        d.field("version", Value::Uint(4));
        d.field("hdr_len", Value::Uint(v4::MIN_LEN as u64));
        self.describe_fields(self.payload_len as usize + v4::MIN_LEN, d);
        d.field("src", Value::Ipv4(self.src_addr));
        d.field("dst", Value::Ipv4(self.dst_addr));
    }
}

mod v6 {
    pub const VER_TC_FLOW: usize = 0;
    pub const LENGTH: usize = 4;
    pub const NXT_HDR: usize = 6;
    pub const HOP_LIMIT: usize = 7;
    pub const SRC: usize = 8;
    pub const DST: usize = 24;
    pub const PAYLOAD: usize = 40;
}

/// IPv6 header length.
pub const IPV6_HEADER_LEN: usize = v6::PAYLOAD;

/// A read/write view of an IPv6 packet.
#[derive(Debug, Clone)]
pub struct Ipv6Packet<T: AsRef<[u8]>> {
    buffer: T,
}

fn ipv6_at(b: &[u8], off: usize) -> Ipv6Addr {
    let mut a = [0u8; 16];
    a.copy_from_slice(&b[off..off + 16]);
    Ipv6Addr::from(a)
}

impl<T: AsRef<[u8]>> Ipv6Packet<T> {
    /// Wraps a buffer without checking it.
    pub const fn new_unchecked(buffer: T) -> Ipv6Packet<T> {
        Ipv6Packet { buffer }
    }
    /// Wraps a buffer and runs [`Ipv6Packet::check_len`].
    pub fn new_checked(buffer: T) -> Result<Ipv6Packet<T>> {
        let p = Self::new_unchecked(buffer);
        p.check_len()?;
        Ok(p)
    }
    /// `Err(Truncated)` if the buffer is shorter than 40 bytes plus the payload length.
    pub fn check_len(&self) -> Result<()> {
        let b = self.buffer.as_ref();
        if b.len() < v6::PAYLOAD || b.len() < v6::PAYLOAD + self.payload_len() as usize {
            return Err(Error::Truncated);
        }
        Ok(())
    }
    /// The wrapped buffer.
    pub fn into_inner(self) -> T {
        self.buffer
    }
    /// Version (6).
    pub fn version(&self) -> u8 {
        self.buffer.as_ref()[v6::VER_TC_FLOW] >> 4
    }
    /// Traffic class.
    pub fn traffic_class(&self) -> u8 {
        (be32(self.buffer.as_ref(), v6::VER_TC_FLOW) >> 20) as u8
    }
    /// Flow label (20 bits).
    pub fn flow_label(&self) -> u32 {
        be32(self.buffer.as_ref(), v6::VER_TC_FLOW) & 0x000f_ffff
    }
    /// Payload length.
    pub fn payload_len(&self) -> u16 {
        be16(self.buffer.as_ref(), v6::LENGTH)
    }
    /// Next header.
    pub fn next_header(&self) -> IpProtocol {
        IpProtocol::from(self.buffer.as_ref()[v6::NXT_HDR])
    }
    /// Hop limit.
    pub fn hop_limit(&self) -> u8 {
        self.buffer.as_ref()[v6::HOP_LIMIT]
    }
    /// Source address.
    pub fn src_addr(&self) -> Ipv6Addr {
        ipv6_at(self.buffer.as_ref(), v6::SRC)
    }
    /// Destination address.
    pub fn dst_addr(&self) -> Ipv6Addr {
        ipv6_at(self.buffer.as_ref(), v6::DST)
    }
    /// The payload, up to the payload length.
    pub fn payload(&self) -> &[u8] {
        &self.buffer.as_ref()[v6::PAYLOAD..v6::PAYLOAD + self.payload_len() as usize]
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Ipv6Packet<T> {
    /// Sets version, traffic class and flow label.
    pub fn set_version_tc_flow(&mut self, version: u8, tc: u8, flow: u32) {
        let v = (version as u32) << 28 | (tc as u32) << 20 | (flow & 0x000f_ffff);
        put32(self.buffer.as_mut(), v6::VER_TC_FLOW, v);
    }
    /// Sets the payload length.
    pub fn set_payload_len(&mut self, v: u16) {
        put16(self.buffer.as_mut(), v6::LENGTH, v);
    }
    /// Sets the next header.
    pub fn set_next_header(&mut self, p: IpProtocol) {
        self.buffer.as_mut()[v6::NXT_HDR] = p.into();
    }
    /// Sets the hop limit.
    pub fn set_hop_limit(&mut self, v: u8) {
        self.buffer.as_mut()[v6::HOP_LIMIT] = v;
    }
    /// Sets the source address.
    pub fn set_src_addr(&mut self, a: Ipv6Addr) {
        self.buffer.as_mut()[v6::SRC..v6::SRC + 16].copy_from_slice(&a.octets());
    }
    /// Sets the destination address.
    pub fn set_dst_addr(&mut self, a: Ipv6Addr) {
        self.buffer.as_mut()[v6::DST..v6::DST + 16].copy_from_slice(&a.octets());
    }
    /// The payload, writable (from byte 40 to the end of the buffer).
    pub fn payload_mut(&mut self) -> &mut [u8] {
        &mut self.buffer.as_mut()[v6::PAYLOAD..]
    }
}

/// A validated IPv6 header.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Ipv6Repr {
    /// Traffic class.
    pub traffic_class: u8,
    /// Flow label (20 bits).
    pub flow_label: u32,
    /// Payload length.
    pub payload_len: u16,
    /// Next header.
    pub next_header: IpProtocol,
    /// Hop limit.
    pub hop_limit: u8,
    /// Source address.
    pub src_addr: Ipv6Addr,
    /// Destination address.
    pub dst_addr: Ipv6Addr,
}

impl Ipv6Repr {
    /// Parses: `Err(Truncated)` per `check_len`, `Err(Unsupported)` if the version is not 6.
    pub fn parse<T: AsRef<[u8]>>(p: &Ipv6Packet<T>) -> Result<Ipv6Repr> {
        p.check_len()?;
        if p.version() != 6 {
            return Err(Error::Unsupported);
        }
        Ok(Ipv6Repr {
            traffic_class: p.traffic_class(),
            flow_label: p.flow_label(),
            payload_len: p.payload_len(),
            next_header: p.next_header(),
            hop_limit: p.hop_limit(),
            src_addr: p.src_addr(),
            dst_addr: p.dst_addr(),
        })
    }

    /// 40.
    pub const fn buffer_len(&self) -> usize {
        v6::PAYLOAD
    }

    /// Writes the 40-byte header into the start of `p`.
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, p: &mut Ipv6Packet<T>) {
        p.set_version_tc_flow(6, self.traffic_class, self.flow_label);
        p.set_payload_len(self.payload_len);
        p.set_next_header(self.next_header);
        p.set_hop_limit(self.hop_limit);
        p.set_src_addr(self.src_addr);
        p.set_dst_addr(self.dst_addr);
    }
}

impl Describe for Ipv6Repr {
    fn describe(&self, d: &mut dyn Describer) {
        d.field("version", Value::Uint(6));
        d.field("tclass", Value::Hex(self.traffic_class as u64, 2));
        d.field("flow", Value::Hex(self.flow_label as u64, 5));
        d.field("plen", Value::Uint(self.payload_len as u64));
        d.field(
            "nxt",
            Value::Named(u8::from(self.next_header) as u64, self.next_header.name()),
        );
        d.field("hlim", Value::Uint(self.hop_limit as u64));
        d.field("src", Value::Ipv6(self.src_addr));
        d.field("dst", Value::Ipv6(self.dst_addr));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::describe::Collect;
    use proptest::prelude::*;

    // RFC 791 header: 10.0.0.1 > 10.0.0.2, ICMP, id 0x1c46, DF, TTL 64, 84 bytes (a Linux ping).
    pub(crate) static V4: [u8; 20] = [
        0x45, 0x00, 0x00, 0x54, 0x1c, 0x46, 0x40, 0x00, 0x40, 0x01, 0x0a, 0x61, 10, 0, 0, 1, 10, 0,
        0, 2,
    ];

    fn v4_packet() -> Vec<u8> {
        let mut b = V4.to_vec();
        b.resize(84, 0);
        b
    }

    fn v4_repr() -> Ipv4Repr {
        Ipv4Repr {
            tos: 0,
            ident: 0x1c46,
            dont_frag: true,
            more_frags: false,
            frag_offset: 0,
            ttl: 64,
            protocol: IpProtocol::Icmp,
            src_addr: Ipv4Addr::new(10, 0, 0, 1),
            dst_addr: Ipv4Addr::new(10, 0, 0, 2),
            payload_len: 64,
        }
    }

    #[test]
    fn v4_deconstruct() {
        let b = v4_packet();
        let p = Ipv4Packet::new_checked(&b[..]).unwrap();
        assert_eq!(p.version(), 4);
        assert_eq!(p.header_len(), 20);
        assert_eq!(p.total_len(), 84);
        assert_eq!(p.ident(), 0x1c46);
        assert!(p.dont_frag() && !p.more_frags());
        assert_eq!(p.ttl(), 64);
        assert_eq!(p.protocol(), IpProtocol::Icmp);
        assert_eq!(p.checksum(), 0x0a61);
        assert!(p.verify_checksum());
        assert_eq!(p.payload().len(), 64);
    }

    #[test]
    fn v4_construct_parse_emit() {
        let mut b = [0u8; 20];
        let mut p = Ipv4Packet::new_unchecked(&mut b[..]);
        p.set_version_and_header_len(4, 20);
        p.set_tos(0);
        p.set_total_len(84);
        p.set_ident(0x1c46);
        p.set_flags_and_frag_offset(false, true, false, 0);
        p.set_ttl(64);
        p.set_protocol(IpProtocol::Icmp);
        p.set_src_addr(Ipv4Addr::new(10, 0, 0, 1));
        p.set_dst_addr(Ipv4Addr::new(10, 0, 0, 2));
        p.fill_checksum();
        assert_eq!(b, V4);
        let pkt = v4_packet();
        assert_eq!(
            Ipv4Repr::parse(&Ipv4Packet::new_unchecked(&pkt[..])).unwrap(),
            v4_repr()
        );
        let mut e = [0u8; 20];
        v4_repr().emit(&mut Ipv4Packet::new_unchecked(&mut e[..]));
        assert_eq!(e, V4);
    }

    #[test]
    fn v4_errors() {
        let mut b = v4_packet();
        b[11] ^= 1;
        assert_eq!(
            Ipv4Repr::parse(&Ipv4Packet::new_unchecked(&b[..])),
            Err(Error::Checksum)
        );
        assert_eq!(
            Ipv4Packet::new_checked(&v4_packet()[..83]).err(),
            Some(Error::Truncated)
        );
        let mut b = v4_packet();
        b[0] = 0x44;
        assert_eq!(
            Ipv4Packet::new_checked(&b[..]).err(),
            Some(Error::Malformed)
        );
    }

    #[test]
    fn v4_describe() {
        let b = v4_packet();
        let p = Ipv4Packet::new_unchecked(&b[..]);
        let mut c = Collect::default();
        v4_repr().describe_packet(&p, &mut c);
        assert_eq!(c.get("checksum"), Some("0x0a61"));
        assert_eq!(c.get("proto"), Some("ICMP (0x1)"));
        assert_eq!(c.get("flags_df"), Some("true"));
    }

    // RFC 8200 header: fe80::1 > ff02::1:ff00:2, ICMPv6, hop limit 255, 32-byte payload, tc 0xe0,
    // flow 0x12345.
    static V6: [u8; 40] = [
        0x6e, 0x01, 0x23, 0x45, 0x00, 0x20, 58, 255, 0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
        0, 0, 1, 0xff, 0x02, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0xff, 0, 0, 2,
    ];

    fn v6_repr() -> Ipv6Repr {
        Ipv6Repr {
            traffic_class: 0xe0,
            flow_label: 0x12345,
            payload_len: 32,
            next_header: IpProtocol::Icmpv6,
            hop_limit: 255,
            src_addr: "fe80::1".parse().unwrap(),
            dst_addr: "ff02::1:ff00:2".parse().unwrap(),
        }
    }

    #[test]
    fn v6_deconstruct_parse_emit() {
        let mut b = V6.to_vec();
        b.resize(72, 0);
        let p = Ipv6Packet::new_checked(&b[..]).unwrap();
        assert_eq!(p.version(), 6);
        assert_eq!(p.traffic_class(), 0xe0);
        assert_eq!(p.flow_label(), 0x12345);
        assert_eq!(p.payload_len(), 32);
        assert_eq!(p.next_header(), IpProtocol::Icmpv6);
        assert_eq!(p.hop_limit(), 255);
        assert_eq!(Ipv6Repr::parse(&p).unwrap(), v6_repr());
        let mut e = [0u8; 40];
        v6_repr().emit(&mut Ipv6Packet::new_unchecked(&mut e[..]));
        assert_eq!(e, V6);
        assert_eq!(
            Ipv6Packet::new_checked(&b[..71]).err(),
            Some(Error::Truncated)
        );
        let mut c = Collect::default();
        v6_repr().describe(&mut c);
        assert_eq!(c.get("nxt"), Some("ICMPv6 (0x3a)"));
        assert_eq!(c.get("flow"), Some("0x12345"));
    }

    proptest! {
        #[test]
        fn v4_round_trip(tos in any::<u8>(), ident in any::<u16>(), df in any::<bool>(), mf in any::<bool>(),
                         off in 0u16..0x2000, ttl in any::<u8>(), proto in any::<u8>(),
                         src in any::<u32>(), dst in any::<u32>(), len in 0u16..200) {
            let r = Ipv4Repr { tos, ident, dont_frag: df, more_frags: mf, frag_offset: off * 8, ttl,
                protocol: IpProtocol::from(proto), src_addr: src.into(), dst_addr: dst.into(), payload_len: len };
            let mut b = vec![0u8; 20 + len as usize];
            r.emit(&mut Ipv4Packet::new_unchecked(&mut b[..]));
            prop_assert_eq!(Ipv4Repr::parse(&Ipv4Packet::new_unchecked(&b[..])).unwrap(), r);
        }

        #[test]
        fn v6_round_trip(tc in any::<u8>(), flow in 0u32..0x10_0000, nh in any::<u8>(), hl in any::<u8>(),
                         src in any::<u128>(), dst in any::<u128>(), len in 0u16..200) {
            let r = Ipv6Repr { traffic_class: tc, flow_label: flow, payload_len: len,
                next_header: IpProtocol::from(nh), hop_limit: hl, src_addr: src.into(), dst_addr: dst.into() };
            let mut b = vec![0u8; 40 + len as usize];
            r.emit(&mut Ipv6Packet::new_unchecked(&mut b[..]));
            prop_assert_eq!(Ipv6Repr::parse(&Ipv6Packet::new_unchecked(&b[..])).unwrap(), r);
        }

        #[test]
        fn parse_never_panics(data in proptest::collection::vec(any::<u8>(), 0..300)) {
            let p = Ipv4Packet::new_unchecked(&data[..]);
            if Ipv4Repr::parse(&p).is_ok() {
                let _ = (p.options(), p.payload());
            }
            let p = Ipv6Packet::new_unchecked(&data[..]);
            if Ipv6Repr::parse(&p).is_ok() {
                let _ = p.payload();
            }
        }
    }
}
