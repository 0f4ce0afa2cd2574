//! IPv6 Neighbour Discovery over IPoIB: the five ND messages (RFC 4861 §4), an allocation-free option
//! iterator, and the options an IPoIB interface needs: source/target link-layer address
//! (draft-ietf-ipoib-ip-over-infiniband-06 §9.3), prefix information and MTU (RFC 4861 §4.6.2, §4.6.4).
//!
//! The IPoIB link-layer address option is 24 bytes (length 3, §9.3): type, length, two zero bytes, then
//! the 20-byte address of §9.1.1. The draft does not say where the two spare bytes go; Linux
//! (`ndisc_addr_option_pad` returns 2 for ARPHRD_INFINIBAND) puts them *before* the address and accepts
//! the option only when its length is exactly 3, and this module does the same.
//!
//! The legacy profile's option (draft-kashyap-ipoib-ipv6-01 §5.1, [`super::legacy`]) has the same
//! types and Length 3, so the option bytes cannot tell the two apart: a message is read under one
//! [`NdProfile`], which the caller knows from the frame (a bare IPv6 datagram in a UD payload is the
//! legacy profile's, draft-kashyap-ipoib-ipv6-01 §7, [`super::legacy::bare_ipv6`]) or from the
//! interface's configuration.

use super::hwaddr::{HwAddr, HWADDR_LEN};
use super::icmp::{Icmpv6Repr, Icmpv6Type};
use super::legacy::{LegacyLlaOption, LegacyLlaRepr, LEGACY_LLA_OPTION_LEN};
use crate::describe::{Describe, Describer, Value};
use crate::types::{be32, put16, put32};
use crate::{Error, Result};
use std::net::Ipv6Addr;

/// Length in bytes of an IPoIB link-layer address option (draft-ietf-ipoib-ip-over-infiniband-06 §9.3:
/// Length 3, in units of 8 bytes).
pub const LLA_OPTION_LEN: usize = 24;
/// Offset of the link-layer address inside the option (after type, length and 2 zero bytes, as Linux).
pub const LLA_OFFSET: usize = 4;

/// Which IPv6 profile's link-layer address option (types 1 and 2, Length 3) an ND message
/// carries; see the module docs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum NdProfile {
    /// The 20-byte IPoIB address after two zero bytes (draft-ietf-ipoib-ip-over-infiniband-06 §9.3):
    /// [`NdOptionRepr::SourceLinkLayerAddr`], [`NdOptionRepr::TargetLinkLayerAddr`].
    #[default]
    Rfc4391,
    /// LID, capability flags, QPN, Q_Key and GUID (draft-kashyap-ipoib-ipv6-01 §5.1):
    /// [`NdOptionRepr::LegacyLinkLayerAddr`].
    Legacy,
}

code_enum! {
    /// ND option type (RFC 4861 §4.6). Unknown values are kept.
    pub enum NdOptionType(u8) {
        /// 1 (draft-ietf-ipoib-ip-over-infiniband-06 §9.3).
        SourceLinkLayerAddr = 1 => "source link-layer address",
        /// 2 (draft-ietf-ipoib-ip-over-infiniband-06 §9.3).
        TargetLinkLayerAddr = 2 => "target link-layer address",
        /// 3.
        PrefixInformation = 3 => "prefix information",
        /// 4.
        RedirectedHeader = 4 => "redirected header",
        /// 5.
        Mtu = 5 => "MTU",
        /// Any other value.
        Unknown(_) => "Unknown",
    }
}

/// A view of one ND option: type, length in units of 8 bytes, data.
#[derive(Debug, Clone)]
pub struct NdOption<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> NdOption<T> {
    /// Wraps a buffer without checking it.
    pub const fn new_unchecked(buffer: T) -> NdOption<T> {
        NdOption { buffer }
    }
    /// Wraps a buffer and runs [`NdOption::check_len`].
    pub fn new_checked(buffer: T) -> Result<NdOption<T>> {
        let o = Self::new_unchecked(buffer);
        o.check_len()?;
        Ok(o)
    }
    /// `Err(Truncated)` below 2 bytes or below the option length; `Err(Malformed)` for length 0
    /// (RFC 4861 §4.6: nodes MUST silently discard an ND packet with a zero-length option).
    pub fn check_len(&self) -> Result<()> {
        let b = self.buffer.as_ref();
        if b.len() < 2 {
            return Err(Error::Truncated);
        }
        if b[1] == 0 {
            return Err(Error::Malformed);
        }
        if b.len() < self.total_len() {
            return Err(Error::Truncated);
        }
        Ok(())
    }
    /// The wrapped buffer.
    pub fn into_inner(self) -> T {
        self.buffer
    }
    /// Option type.
    pub fn option_type(&self) -> NdOptionType {
        NdOptionType::from(self.buffer.as_ref()[0])
    }
    /// Length field (units of 8 bytes).
    pub fn length(&self) -> u8 {
        self.buffer.as_ref()[1]
    }
    /// Length in bytes.
    pub fn total_len(&self) -> usize {
        self.length() as usize * 8
    }
    /// The bytes after type and length.
    pub fn data(&self) -> &[u8] {
        &self.buffer.as_ref()[2..self.total_len()]
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> NdOption<T> {
    /// Sets type and length (units of 8 bytes).
    pub fn set_type_and_length(&mut self, t: NdOptionType, len: u8) {
        let b = self.buffer.as_mut();
        b[0] = t.into();
        b[1] = len;
    }
    /// The bytes after type and length, writable (up to the length field).
    pub fn data_mut(&mut self) -> &mut [u8] {
        let n = self.total_len();
        &mut self.buffer.as_mut()[2..n]
    }
}

/// Iterates over the options of an ND message without allocating. Yields `Err` once and stops on a
/// truncated or zero-length option.
#[derive(Debug, Clone)]
pub struct NdOptionIter<'a> {
    rest: &'a [u8],
}

impl<'a> NdOptionIter<'a> {
    /// Iterates over `options` (the bytes after the message's fixed part).
    pub const fn new(options: &'a [u8]) -> NdOptionIter<'a> {
        NdOptionIter { rest: options }
    }
}

impl<'a> Iterator for NdOptionIter<'a> {
    type Item = Result<NdOption<&'a [u8]>>;
    fn next(&mut self) -> Option<Self::Item> {
        if self.rest.is_empty() {
            return None;
        }
        let o = NdOption::new_unchecked(self.rest);
        if let Err(e) = o.check_len() {
            self.rest = &[];
            return Some(Err(e));
        }
        let n = o.total_len();
        let (this, rest) = self.rest.split_at(n);
        self.rest = rest;
        Some(Ok(NdOption::new_unchecked(this)))
    }
}

/// The prefix information option (RFC 4861 §4.6.2): 32 bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct PrefixInfo {
    /// Prefix length in bits.
    pub prefix_len: u8,
    /// On-link flag (L).
    pub on_link: bool,
    /// Autonomous address-configuration flag (A).
    pub autonomous: bool,
    /// Valid lifetime in seconds (0xffffffff: infinity).
    pub valid_lifetime: u32,
    /// Preferred lifetime in seconds.
    pub preferred_lifetime: u32,
    /// The prefix.
    pub prefix: Ipv6Addr,
}

/// A parsed ND option.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum NdOptionRepr<'a> {
    /// Source link-layer address (draft-ietf-ipoib-ip-over-infiniband-06 §9.3, type 1, length 3).
    SourceLinkLayerAddr(HwAddr),
    /// Target link-layer address (draft-ietf-ipoib-ip-over-infiniband-06 §9.3, type 2, length 3).
    TargetLinkLayerAddr(HwAddr),
    /// Source or target link-layer address of the legacy profile (draft-kashyap-ipoib-ipv6-01
    /// §5.1: type 1 or 2 as `target` says, Length 3), read only under [`NdProfile::Legacy`].
    LegacyLinkLayerAddr(LegacyLlaRepr),
    /// Prefix information (RFC 4861 §4.6.2).
    PrefixInformation(PrefixInfo),
    /// MTU (RFC 4861 §4.6.4). draft-ietf-ipoib-ip-over-infiniband-06 §7: one larger than the link MTU
    /// must be ignored (the interface's job).
    Mtu(u32),
    /// Any other option (redirected header included): its type and the bytes after type and length.
    Other {
        /// The option type.
        option_type: NdOptionType,
        /// The bytes after type and length.
        data: &'a [u8],
    },
}

impl<'a> NdOptionRepr<'a> {
    /// Parses one option. A link-layer address option whose length is not 3 is `Err(Malformed)`
    /// (draft-ietf-ipoib-ip-over-infiniband-06 §9.3; Linux ignores it), as is a prefix information option
    /// whose length is not 4 or an MTU option whose length is not 1 (RFC 4861 §4.6.2, §4.6.4).
    pub fn parse(o: &NdOption<&'a [u8]>) -> Result<NdOptionRepr<'a>> {
        Self::parse_as(o, NdProfile::Rfc4391)
    }

    /// Parses one option as `profile` reads it: under [`NdProfile::Legacy`] a source or target
    /// link-layer address option is draft-kashyap-ipoib-ipv6-01 §5.1's (Length other than 3:
    /// `Err(Malformed)`, as [`LegacyLlaRepr::parse`]); every other option as [`NdOptionRepr::parse`].
    pub fn parse_as(o: &NdOption<&'a [u8]>, profile: NdProfile) -> Result<NdOptionRepr<'a>> {
        o.check_len()?;
        let lla = matches!(
            o.option_type(),
            NdOptionType::SourceLinkLayerAddr | NdOptionType::TargetLinkLayerAddr
        );
        if profile == NdProfile::Legacy && lla {
            if o.length() != 3 {
                return Err(Error::Malformed);
            }
            let v = LegacyLlaOption::new_checked(&o.buffer[..o.total_len()])?;
            return LegacyLlaRepr::parse(&v).map(NdOptionRepr::LegacyLinkLayerAddr);
        }
        let data: &'a [u8] = &o.buffer[2..o.total_len()];
        let t = o.option_type();
        match t {
            NdOptionType::SourceLinkLayerAddr | NdOptionType::TargetLinkLayerAddr => {
                if o.length() != 3 {
                    return Err(Error::Malformed);
                }
                let a = HwAddr::parse(&data[LLA_OFFSET - 2..])?;
                Ok(if t == NdOptionType::SourceLinkLayerAddr {
                    NdOptionRepr::SourceLinkLayerAddr(a)
                } else {
                    NdOptionRepr::TargetLinkLayerAddr(a)
                })
            }
            NdOptionType::PrefixInformation => {
                if o.length() != 4 {
                    return Err(Error::Malformed);
                }
                let mut p = [0u8; 16];
                p.copy_from_slice(&data[14..30]);
                Ok(NdOptionRepr::PrefixInformation(PrefixInfo {
                    prefix_len: data[0],
                    on_link: data[1] & 0x80 != 0,
                    autonomous: data[1] & 0x40 != 0,
                    valid_lifetime: be32(data, 2),
                    preferred_lifetime: be32(data, 6),
                    prefix: Ipv6Addr::from(p),
                }))
            }
            NdOptionType::Mtu => {
                if o.length() != 1 {
                    return Err(Error::Malformed);
                }
                Ok(NdOptionRepr::Mtu(be32(data, 2)))
            }
            _ => Ok(NdOptionRepr::Other {
                option_type: t,
                data,
            }),
        }
    }

    /// The option's type.
    pub fn option_type(&self) -> NdOptionType {
        match self {
            NdOptionRepr::SourceLinkLayerAddr(_) => NdOptionType::SourceLinkLayerAddr,
            NdOptionRepr::TargetLinkLayerAddr(_) => NdOptionType::TargetLinkLayerAddr,
            NdOptionRepr::LegacyLinkLayerAddr(r) if r.target => NdOptionType::TargetLinkLayerAddr,
            NdOptionRepr::LegacyLinkLayerAddr(_) => NdOptionType::SourceLinkLayerAddr,
            NdOptionRepr::PrefixInformation(_) => NdOptionType::PrefixInformation,
            NdOptionRepr::Mtu(_) => NdOptionType::Mtu,
            NdOptionRepr::Other { option_type, .. } => *option_type,
        }
    }

    /// Length in bytes once emitted (`Other` is padded up to a multiple of 8).
    pub fn buffer_len(&self) -> usize {
        match self {
            NdOptionRepr::SourceLinkLayerAddr(_) | NdOptionRepr::TargetLinkLayerAddr(_) => {
                LLA_OPTION_LEN
            }
            NdOptionRepr::LegacyLinkLayerAddr(_) => LEGACY_LLA_OPTION_LEN,
            NdOptionRepr::PrefixInformation(_) => 32,
            NdOptionRepr::Mtu(_) => 8,
            NdOptionRepr::Other { data, .. } => (data.len() + 2).div_ceil(8) * 8,
        }
    }

    /// Writes the option (reserved and padding bytes zero) into the first `buffer_len()` bytes of
    /// `buf`. `Err(Truncated)` if `buf` is shorter; `Err(Malformed)` if an `Other` option would be
    /// longer than 255 × 8 bytes.
    pub fn emit(&self, buf: &mut [u8]) -> Result<()> {
        let n = self.buffer_len();
        if n > 255 * 8 {
            return Err(Error::Malformed);
        }
        let b = buf.get_mut(..n).ok_or(Error::Truncated)?;
        b.fill(0);
        b[0] = self.option_type().into();
        b[1] = (n / 8) as u8;
        match self {
            NdOptionRepr::SourceLinkLayerAddr(a) | NdOptionRepr::TargetLinkLayerAddr(a) => {
                a.emit(&mut b[LLA_OFFSET..LLA_OFFSET + HWADDR_LEN])?;
            }
            NdOptionRepr::LegacyLinkLayerAddr(r) => r.emit(&mut LegacyLlaOption::new_unchecked(b)),
            NdOptionRepr::PrefixInformation(p) => {
                b[2] = p.prefix_len;
                b[3] = (p.on_link as u8) << 7 | (p.autonomous as u8) << 6;
                put32(b, 4, p.valid_lifetime);
                put32(b, 8, p.preferred_lifetime);
                b[16..32].copy_from_slice(&p.prefix.octets());
            }
            NdOptionRepr::Mtu(m) => put32(b, 4, *m),
            NdOptionRepr::Other { data, .. } => b[2..2 + data.len()].copy_from_slice(data),
        }
        Ok(())
    }
}

impl Describe for NdOptionRepr<'_> {
    fn describe(&self, d: &mut dyn Describer) {
        if let NdOptionRepr::LegacyLinkLayerAddr(r) = self {
            // Type, length and the link information of draft-kashyap-ipoib-ipv6-01 §5.1.
            return r.describe(d);
        }
        let t = self.option_type();
        d.field("type", Value::Named(u8::from(t) as u64, t.name()));
        d.field("length", Value::Uint((self.buffer_len() / 8) as u64));
        match self {
            NdOptionRepr::SourceLinkLayerAddr(a) | NdOptionRepr::TargetLinkLayerAddr(a) => {
                a.describe_as("link_addr", d)
            }
            NdOptionRepr::PrefixInformation(p) => {
                d.field("prefix_len", Value::Uint(p.prefix_len as u64));
                d.field("flag_l", Value::Bool(p.on_link));
                d.field("flag_a", Value::Bool(p.autonomous));
                d.field("valid_lifetime", Value::Uint(p.valid_lifetime as u64));
                d.field(
                    "preferred_lifetime",
                    Value::Uint(p.preferred_lifetime as u64),
                );
                d.field("prefix", Value::Ipv6(p.prefix));
            }
            NdOptionRepr::Mtu(m) => d.field("mtu", Value::Uint(*m as u64)),
            NdOptionRepr::Other { data, .. } => d.field("data", Value::Bytes(data)),
            NdOptionRepr::LegacyLinkLayerAddr(_) => {}
        }
    }
}

/// The fixed part of an ND message (RFC 4861 §4.1-4.5).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum NdMessage {
    /// Router solicitation (133).
    RouterSolicit,
    /// Router advertisement (134).
    RouterAdvert {
        /// Cur Hop Limit.
        cur_hop_limit: u8,
        /// The flags octet (M 0x80, O 0x40, others kept).
        flags: u8,
        /// Router lifetime in seconds.
        router_lifetime: u16,
        /// Reachable time in milliseconds.
        reachable_time: u32,
        /// Retransmission timer in milliseconds.
        retrans_timer: u32,
    },
    /// Neighbour solicitation (135).
    NeighborSolicit {
        /// Target address.
        target: Ipv6Addr,
    },
    /// Neighbour advertisement (136).
    NeighborAdvert {
        /// The flags octet (R 0x80, S 0x40, O 0x20, others kept).
        flags: u8,
        /// Target address.
        target: Ipv6Addr,
    },
    /// Redirect (137).
    Redirect {
        /// Target (better first hop).
        target: Ipv6Addr,
        /// Destination being redirected.
        destination: Ipv6Addr,
    },
}

impl NdMessage {
    /// The ICMPv6 type.
    pub fn msg_type(&self) -> Icmpv6Type {
        match self {
            NdMessage::RouterSolicit => Icmpv6Type::RouterSolicit,
            NdMessage::RouterAdvert { .. } => Icmpv6Type::RouterAdvert,
            NdMessage::NeighborSolicit { .. } => Icmpv6Type::NeighborSolicit,
            NdMessage::NeighborAdvert { .. } => Icmpv6Type::NeighborAdvert,
            NdMessage::Redirect { .. } => Icmpv6Type::Redirect,
        }
    }

    /// Length of the fixed part including the 4-byte ICMPv6 header.
    pub fn fixed_len(&self) -> usize {
        fixed_len(self.msg_type()).unwrap_or(8)
    }
}

fn fixed_len(t: Icmpv6Type) -> Option<usize> {
    match t {
        Icmpv6Type::RouterSolicit => Some(8),
        Icmpv6Type::RouterAdvert => Some(16),
        Icmpv6Type::NeighborSolicit | Icmpv6Type::NeighborAdvert => Some(24),
        Icmpv6Type::Redirect => Some(40),
        _ => None,
    }
}

fn addr_at(b: &[u8], off: usize) -> Ipv6Addr {
    let mut a = [0u8; 16];
    a.copy_from_slice(&b[off..off + 16]);
    Ipv6Addr::from(a)
}

/// An ND message: its fixed part and its options, borrowed (iterate with [`NdRepr::options`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct NdRepr<'a> {
    /// The fixed part.
    pub message: NdMessage,
    /// The option bytes.
    pub options: &'a [u8],
    /// How the link-layer address options are read (not written: [`NdRepr::emit`] copies the
    /// option bytes).
    pub profile: NdProfile,
}

impl<'a> NdRepr<'a> {
    /// Parses a whole ICMPv6 message, checking its checksum with `src` and `dst`, with the
    /// link-layer address options of draft-ietf-ipoib-ip-over-infiniband-06 §9.3.
    pub fn parse(src: Ipv6Addr, dst: Ipv6Addr, icmp: &'a [u8]) -> Result<NdRepr<'a>> {
        Self::parse_as(src, dst, icmp, NdProfile::Rfc4391)
    }

    /// [`NdRepr::parse`] with the link-layer address options of `profile`.
    pub fn parse_as(
        src: Ipv6Addr,
        dst: Ipv6Addr,
        icmp: &'a [u8],
        profile: NdProfile,
    ) -> Result<NdRepr<'a>> {
        Self::parse_message_as(&Icmpv6Repr::parse(src, dst, icmp)?, profile)
    }

    /// [`NdRepr::parse_message_as`] with the link-layer address options of
    /// draft-ietf-ipoib-ip-over-infiniband-06 §9.3.
    pub fn parse_message(m: &Icmpv6Repr<'a>) -> Result<NdRepr<'a>> {
        Self::parse_message_as(m, NdProfile::Rfc4391)
    }

    /// Takes apart an ICMPv6 message already parsed, reading its link-layer address options as
    /// `profile`'s. `Err(Unsupported)` for a non-ND type; `Err(Malformed)` for a code other than 0
    /// (RFC 4861 §6.1.1, §7.1.1: silently discard) or a bad option (zero length, wrong length of a
    /// known option); `Err(Truncated)` for a short message.
    pub fn parse_message_as(m: &Icmpv6Repr<'a>, profile: NdProfile) -> Result<NdRepr<'a>> {
        let fixed = fixed_len(m.msg_type).ok_or(Error::Unsupported)?;
        if m.code != 0 {
            return Err(Error::Malformed);
        }
        // `body` starts at byte 8 of the message.
        let body = m.body;
        if body.len() + 8 < fixed {
            return Err(Error::Truncated);
        }
        let rest = m.rest.to_be_bytes();
        let message = match m.msg_type {
            Icmpv6Type::RouterSolicit => NdMessage::RouterSolicit,
            Icmpv6Type::RouterAdvert => NdMessage::RouterAdvert {
                cur_hop_limit: rest[0],
                flags: rest[1],
                router_lifetime: u16::from_be_bytes([rest[2], rest[3]]),
                reachable_time: be32(body, 0),
                retrans_timer: be32(body, 4),
            },
            Icmpv6Type::NeighborSolicit => NdMessage::NeighborSolicit {
                target: addr_at(body, 0),
            },
            Icmpv6Type::NeighborAdvert => NdMessage::NeighborAdvert {
                flags: rest[0],
                target: addr_at(body, 0),
            },
            _ => NdMessage::Redirect {
                target: addr_at(body, 0),
                destination: addr_at(body, 16),
            },
        };
        let options = &body[fixed - 8..];
        for o in NdOptionIter::new(options) {
            NdOptionRepr::parse_as(&o?, profile)?;
        }
        Ok(NdRepr {
            message,
            options,
            profile,
        })
    }

    /// The options, parsed one by one as the message's profile reads them.
    pub fn options(&self) -> impl Iterator<Item = Result<NdOptionRepr<'a>>> + 'a {
        let profile = self.profile;
        NdOptionIter::new(self.options)
            .map(move |o| o.and_then(|o| NdOptionRepr::parse_as(&o, profile)))
    }

    /// The first source link-layer address option (draft-ietf-ipoib-ip-over-infiniband-06 §9.3).
    pub fn source_lla(&self) -> Option<HwAddr> {
        self.options().find_map(|o| match o {
            Ok(NdOptionRepr::SourceLinkLayerAddr(a)) => Some(a),
            _ => None,
        })
    }

    /// The first target link-layer address option (draft-ietf-ipoib-ip-over-infiniband-06 §9.3).
    pub fn target_lla(&self) -> Option<HwAddr> {
        self.options().find_map(|o| match o {
            Ok(NdOptionRepr::TargetLinkLayerAddr(a)) => Some(a),
            _ => None,
        })
    }

    /// The first legacy link-layer address option of type 2 (`target`) or 1
    /// (draft-kashyap-ipoib-ipv6-01 §5.1); `None` unless the message was read as
    /// [`NdProfile::Legacy`].
    pub fn legacy_lla(&self, target: bool) -> Option<LegacyLlaRepr> {
        self.options().find_map(|o| match o {
            Ok(NdOptionRepr::LegacyLinkLayerAddr(r)) if r.target == target => Some(r),
            _ => None,
        })
    }

    /// The MTU option's value, if any.
    pub fn mtu(&self) -> Option<u32> {
        self.options().find_map(|o| match o {
            Ok(NdOptionRepr::Mtu(m)) => Some(m),
            _ => None,
        })
    }

    /// Length of the whole ICMPv6 message.
    pub fn buffer_len(&self) -> usize {
        self.message.fixed_len() + self.options.len()
    }

    /// Writes the whole ICMPv6 message (code 0, reserved fields zero, options copied) with its
    /// checksum for `src` → `dst` into the first `buffer_len()` bytes of `buf`.
    pub fn emit(&self, src: Ipv6Addr, dst: Ipv6Addr, buf: &mut [u8]) -> Result<()> {
        let n = self.buffer_len();
        let b = buf.get_mut(..n).ok_or(Error::Truncated)?;
        b.fill(0);
        b[0] = self.message.msg_type().into();
        match self.message {
            NdMessage::RouterSolicit => {}
            NdMessage::RouterAdvert {
                cur_hop_limit,
                flags,
                router_lifetime,
                reachable_time,
                retrans_timer,
            } => {
                b[4] = cur_hop_limit;
                b[5] = flags;
                put16(b, 6, router_lifetime);
                put32(b, 8, reachable_time);
                put32(b, 12, retrans_timer);
            }
            NdMessage::NeighborSolicit { target } => b[8..24].copy_from_slice(&target.octets()),
            NdMessage::NeighborAdvert { flags, target } => {
                b[4] = flags;
                b[8..24].copy_from_slice(&target.octets());
            }
            NdMessage::Redirect {
                target,
                destination,
            } => {
                b[8..24].copy_from_slice(&target.octets());
                b[24..40].copy_from_slice(&destination.octets());
            }
        }
        let f = self.message.fixed_len();
        b[f..].copy_from_slice(self.options);
        let c = super::checksum::icmpv6(src, dst, b);
        put16(b, 2, c);
        Ok(())
    }

    /// A one-line summary for `ipoib decode` (` who-has fe80::2`, ` fe80::2 is-at <lla>`).
    pub fn summary(&self) -> NdSummary<'_, 'a> {
        NdSummary(self)
    }
}

/// The text of [`NdRepr::summary`].
#[derive(Debug)]
pub struct NdSummary<'r, 'a>(&'r NdRepr<'a>);

impl core::fmt::Display for NdSummary<'_, '_> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self.0.message {
            NdMessage::NeighborSolicit { target } => write!(f, " who-has {target}")?,
            NdMessage::NeighborAdvert { target, .. } => write!(f, " {target}")?,
            NdMessage::Redirect {
                target,
                destination,
            } => write!(f, " {destination} via {target}")?,
            NdMessage::RouterAdvert {
                router_lifetime, ..
            } => write!(f, " lifetime {router_lifetime}s")?,
            NdMessage::RouterSolicit => {}
        }
        if let Some(a) = self.0.target_lla() {
            write!(f, " is-at {a}")?;
        } else if let Some(r) = self.0.legacy_lla(true) {
            write!(f, " is-at {r}")?;
        } else if let Some(a) = self.0.source_lla() {
            write!(f, " from {a}")?;
        } else if let Some(r) = self.0.legacy_lla(false) {
            write!(f, " from {r}")?;
        }
        Ok(())
    }
}

/// Group names for the options of one message, so that JSON keys stay unique.
const OPTION_NAMES: [&str; 8] = [
    "option_0", "option_1", "option_2", "option_3", "option_4", "option_5", "option_6", "option_7",
];

impl Describe for NdRepr<'_> {
    fn describe(&self, d: &mut dyn Describer) {
        match self.message {
            NdMessage::RouterSolicit => {}
            NdMessage::RouterAdvert {
                cur_hop_limit,
                flags,
                router_lifetime,
                reachable_time,
                retrans_timer,
            } => {
                d.field("cur_hop_limit", Value::Uint(cur_hop_limit as u64));
                d.field("flag_m", Value::Bool(flags & 0x80 != 0));
                d.field("flag_o", Value::Bool(flags & 0x40 != 0));
                d.field("router_lifetime", Value::Uint(router_lifetime as u64));
                d.field("reachable_time", Value::Uint(reachable_time as u64));
                d.field("retrans_timer", Value::Uint(retrans_timer as u64));
            }
            NdMessage::NeighborSolicit { target } => d.field("target_address", Value::Ipv6(target)),
            NdMessage::NeighborAdvert { flags, target } => {
                d.field("flag_r", Value::Bool(flags & 0x80 != 0));
                d.field("flag_s", Value::Bool(flags & 0x40 != 0));
                d.field("flag_o", Value::Bool(flags & 0x20 != 0));
                d.field("target_address", Value::Ipv6(target));
            }
            NdMessage::Redirect {
                target,
                destination,
            } => {
                d.field("target_address", Value::Ipv6(target));
                d.field("destination_address", Value::Ipv6(destination));
            }
        }
        for (i, o) in NdOptionIter::new(self.options).enumerate() {
            let name = OPTION_NAMES.get(i).copied().unwrap_or("option_more");
            match o.and_then(|o| NdOptionRepr::parse_as(&o, self.profile)) {
                Ok(r) => r.describe_as(name, d),
                Err(_) => d.field(name, Value::Str("malformed")),
            }
            if i >= OPTION_NAMES.len() {
                break;
            }
        }
    }
}

#[cfg(test)]
mod tests;
