//! The legacy profile of draft-kashyap-ipoib-ipv6-01 (2001), superseded by
//! draft-ietf-ipoib-ip-over-infiniband-06 and kept as a selectable profile: its ND link-layer address
//! option (§5.1) and its IPv6 multicast mapping FFxy::/112 → FF1y:3333::/96 (§4.1). That draft defines
//! no encapsulation header (§7: the IPv6 datagram follows the DETH directly).
//!
//! Option layout (§5.1: type 1 or 2, Length 3, then "Link Information": 16-bit LID, 8-bit capability
//! flags, 24-bit QPN, 32-bit Q_Key, 64-bit GUID). The link information is 18 bytes, so with type and
//! length it fills 20 of the 24 bytes that Length 3 gives; the draft does not place the remaining 4, and
//! this module puts them at the end as zero padding, as RFC 2461 §4.6.1 pads link-layer addresses:
//!
//! ```text
//! | type | len=3 |     LID      | flags |      QPN (24)      |
//! |            Q_Key (32)             |      GUID (64) ...
//! ...  GUID        |           padding (4, zero)           |
//! ```

use crate::describe::{Describe, Describer, Value};
use crate::keys::QKey;
use crate::types::{be16, be24, be32, be64, put16, put24, put32, put64, Gid, Guid};
use crate::{Error, Result};
use std::net::Ipv6Addr;

mod field {
    pub const TYPE: usize = 0;
    pub const LENGTH: usize = 1;
    pub const LID: usize = 2;
    pub const FLAGS: usize = 4;
    pub const QPN: usize = 5;
    pub const QKEY: usize = 8;
    pub const GUID: usize = 12;
    pub const PAD: usize = 20;
    pub const END: usize = 24;
}

/// Length of the legacy option (draft-kashyap-ipoib-ipv6-01 §5.1: Length 3).
pub const LEGACY_LLA_OPTION_LEN: usize = field::END;

/// Capability flags of the legacy option (draft-kashyap-ipoib-ipv6-01 §5.1.2: "only the first 5 bits
/// are defined": UC, RC, RE, R6, then the QPN flag; the first bit is the most significant). Every bit is
/// kept.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct LegacyCapabilities(pub u8);

impl LegacyCapabilities {
    /// Unreliable connected.
    pub const UC: u8 = 0x80;
    /// Reliable connected.
    pub const RC: u8 = 0x40;
    /// Raw Ethertype.
    pub const RE: u8 = 0x20;
    /// Raw IPv6.
    pub const R6: u8 = 0x10;
    /// Services demultiplexed by QPN (§5.1.2 "QPN flag").
    pub const QPN: u8 = 0x08;
    /// The undefined bits.
    pub const RESERVED_MASK: u8 = 0x07;

    /// True if every bit of `mask` is set.
    pub fn has(self, mask: u8) -> bool {
        self.0 & mask == mask
    }
}

fixed_view! {
    /// A view of a legacy link-layer address option.
    #[derive(Debug, Clone)]
    pub struct LegacyLlaOption;
    /// `Err(Truncated)` below 24 bytes.
    fn check_len(min = field::END);
}

impl<T: AsRef<[u8]>> LegacyLlaOption<T> {
    /// Option type (1 source, 2 target).
    pub fn option_type(&self) -> u8 {
        self.buffer.as_ref()[field::TYPE]
    }
    /// Length field (3).
    pub fn length(&self) -> u8 {
        self.buffer.as_ref()[field::LENGTH]
    }
    /// LID (§5.1.1).
    pub fn lid(&self) -> u16 {
        be16(self.buffer.as_ref(), field::LID)
    }
    /// Capability flags (§5.1.2).
    pub fn flags(&self) -> LegacyCapabilities {
        LegacyCapabilities(self.buffer.as_ref()[field::FLAGS])
    }
    /// Default QPN (§5.1.3).
    pub fn qpn(&self) -> u32 {
        be24(self.buffer.as_ref(), field::QPN)
    }
    /// Q_Key (§5.1.3).
    pub fn qkey(&self) -> u32 {
        be32(self.buffer.as_ref(), field::QKEY)
    }
    /// Port GUID (§5.1.4).
    pub fn guid(&self) -> Guid {
        Guid(be64(self.buffer.as_ref(), field::GUID))
    }
    /// The 4 padding bytes.
    pub fn padding(&self) -> &[u8] {
        &self.buffer.as_ref()[field::PAD..field::END]
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> LegacyLlaOption<T> {
    /// Sets type and length.
    pub fn set_type_and_length(&mut self, t: u8, len: u8) {
        let b = self.buffer.as_mut();
        b[field::TYPE] = t;
        b[field::LENGTH] = len;
    }
    /// Sets the LID.
    pub fn set_lid(&mut self, v: u16) {
        put16(self.buffer.as_mut(), field::LID, v);
    }
    /// Sets the flags.
    pub fn set_flags(&mut self, f: LegacyCapabilities) {
        self.buffer.as_mut()[field::FLAGS] = f.0;
    }
    /// Sets the QPN.
    pub fn set_qpn(&mut self, v: u32) {
        put24(self.buffer.as_mut(), field::QPN, v);
    }
    /// Sets the Q_Key.
    pub fn set_qkey(&mut self, v: u32) {
        put32(self.buffer.as_mut(), field::QKEY, v);
    }
    /// Sets the GUID.
    pub fn set_guid(&mut self, g: Guid) {
        put64(self.buffer.as_mut(), field::GUID, g.0);
    }
    /// Zeroes the padding.
    pub fn clear_padding(&mut self) {
        self.buffer.as_mut()[field::PAD..field::END].fill(0);
    }
}

/// The link information of a legacy option (draft-kashyap-ipoib-ipv6-01 §5.1).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct LegacyLlaRepr {
    /// True for a target option (type 2), false for a source option (type 1).
    pub target: bool,
    /// LID of the port (§5.1.1).
    pub lid: u16,
    /// Capability flags (§5.1.2).
    pub flags: LegacyCapabilities,
    /// Default QPN (§5.1.3).
    pub qpn: u32,
    /// Q_Key the endpoint intends to use (§5.1.3).
    pub qkey: QKey,
    /// Port EUI-64 (§5.1.4).
    pub guid: Guid,
}

impl LegacyLlaRepr {
    /// Parses: `Err(Unsupported)` for a type other than 1 or 2, `Err(Malformed)` for a length other
    /// than 3 (§5.1). Padding is ignored.
    pub fn parse<T: AsRef<[u8]>>(o: &LegacyLlaOption<T>) -> Result<LegacyLlaRepr> {
        o.check_len()?;
        let target = match o.option_type() {
            1 => false,
            2 => true,
            _ => return Err(Error::Unsupported),
        };
        if o.length() != 3 {
            return Err(Error::Malformed);
        }
        Ok(LegacyLlaRepr {
            target,
            lid: o.lid(),
            flags: o.flags(),
            qpn: o.qpn(),
            qkey: QKey(o.qkey()),
            guid: o.guid(),
        })
    }

    /// 24.
    pub const fn buffer_len(&self) -> usize {
        field::END
    }

    /// Writes the 24-byte option into the start of `o`.
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, o: &mut LegacyLlaOption<T>) {
        o.set_type_and_length(if self.target { 2 } else { 1 }, 3);
        o.set_lid(self.lid);
        o.set_flags(self.flags);
        o.set_qpn(self.qpn);
        o.set_qkey(self.qkey.0);
        o.set_guid(self.guid);
        o.clear_padding();
    }

    /// The destination GID of this neighbour: the local subnet prefix followed by its GUID
    /// (draft-kashyap-ipoib-ipv6-01 §7).
    pub fn dgid(&self, subnet_prefix: u64) -> Gid {
        Gid::new(subnet_prefix, self.guid.0)
    }
}

impl Describe for LegacyLlaRepr {
    fn describe(&self, d: &mut dyn Describer) {
        let (t, n) = if self.target {
            (2, "target link-layer address")
        } else {
            (1, "source link-layer address")
        };
        d.field("type", Value::Named(t, n));
        d.field("length", Value::Uint(3));
        d.field("lid", Value::Hex(self.lid as u64, 4));
        d.field("flags", Value::Hex(self.flags.0 as u64, 2));
        d.field("uc", Value::Bool(self.flags.has(LegacyCapabilities::UC)));
        d.field("rc", Value::Bool(self.flags.has(LegacyCapabilities::RC)));
        d.field("re", Value::Bool(self.flags.has(LegacyCapabilities::RE)));
        d.field("r6", Value::Bool(self.flags.has(LegacyCapabilities::R6)));
        d.field(
            "qpn_demux",
            Value::Bool(self.flags.has(LegacyCapabilities::QPN)),
        );
        d.field("qpn", Value::Hex(self.qpn as u64, 6));
        d.field("qkey", self.qkey.into());
        d.field("guid", Value::Guid(self.guid));
    }
}

impl core::fmt::Display for LegacyLlaRepr {
    /// `lid 0x0003 flags 0x00 qpn 0x000048 qkey 0x00000b1b guid 0x0000000000100003`: the link
    /// information in wire order, for one-line summaries.
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(
            f,
            "lid {:#06x} flags {:#04x} qpn {:#08x} qkey {:#010x} guid {}",
            self.lid, self.flags.0, self.qpn, self.qkey.0, self.guid
        )
    }
}

/// The legacy signature in octets 3 and 4 of the MGID (draft-kashyap-ipoib-ipv6-01 §4.1 iii: MUST be
/// 0x3333).
pub const LEGACY_SIGNATURE: u16 = 0x3333;

/// Maps an IPv6 multicast group to its legacy MGID (draft-kashyap-ipoib-ipv6-01 §4.1): the scope is
/// copied (i), the transient flag set (ii), octets 3-4 are 0x3333 (iii), and the low 96 bits of the
/// group follow: FFxy::<112 bits> → FF1y:3333::<96 bits>. The draft keeps 96 of the 112 group bits;
/// the 16 bits after the scope are dropped. `None` if `group` is not multicast.
pub fn legacy_ipv6_mgid(group: Ipv6Addr) -> Option<Gid> {
    let o = group.octets();
    if o[0] != 0xff {
        return None;
    }
    let mut g = [0u8; 16];
    g[0] = 0xff;
    g[1] = 0x10 | (o[1] & 0x0f);
    g[2..4].copy_from_slice(&LEGACY_SIGNATURE.to_be_bytes());
    g[4..16].copy_from_slice(&o[4..16]);
    Some(Gid(g))
}

/// The reverse of [`legacy_ipv6_mgid`]: the scope nibble and an IPv6 group with flags 0 (the
/// original flags are lost; well-known groups have flags 0) and octets 2-3 zero (lost too, zero in
/// every well-known group). `None` if `mgid` is not a legacy IPoIB MGID (transient flag and 0x3333).
pub fn legacy_ipv6_group(mgid: &Gid) -> Option<Ipv6Addr> {
    let g = mgid.as_bytes();
    if g[0] != 0xff || g[1] >> 4 != 1 || u16::from_be_bytes([g[2], g[3]]) != LEGACY_SIGNATURE {
        return None;
    }
    let mut o = [0u8; 16];
    o[0] = 0xff;
    o[1] = g[1] & 0x0f;
    o[4..16].copy_from_slice(&g[4..16]);
    Some(Ipv6Addr::from(o))
}

/// The all-hosts group of the legacy profile, FF12:3333::1 (draft-kashyap-ipoib-ipv6-01 §5.1.5-5.1.7:
/// its MTU, P_Key and SL are the subnet's). §6 writes it FF02:3333::1, which lacks the transient flag
/// that §4.1 ii requires; this crate follows §4.1.
pub const LEGACY_ALL_HOSTS_MGID: Gid =
    Gid([0xff, 0x12, 0x33, 0x33, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1]);

/// A UD payload read as the legacy profile's bare IPv6 datagram (draft-kashyap-ipoib-ipv6-01 §7:
/// the datagram follows the DETH with no encapsulation header): the first nibble is 6 and the
/// bytes are exactly one whole IPv6 datagram (40 + Payload Length, RFC 8200 §3). `None`
/// otherwise, and then the payload is an RFC 4391 frame (§6). The two cannot be confused in
/// practice: an RFC 4391 frame starts with its 16-bit type, and the types IPoIB carries (0x0800,
/// 0x86DD, 0x0806, 0x8035) never have 6 as their first nibble; a frame of some other type 0x6xxx
/// would also need its bytes 4-5 (the start of its datagram) to equal its length minus 40, and such
/// a frame is an unknown type to this crate anyway. A datagram with extension headers or a
/// Jumbo Payload (Payload Length 0) is not recognised.
pub fn bare_ipv6(data: &[u8]) -> Option<super::Ipv6Datagram<'_>> {
    const HEADER: usize = 40;
    if data.first()? >> 4 != 6 || data.len() < HEADER {
        return None;
    }
    let payload_len = usize::from(u16::from_be_bytes([data[4], data[5]]));
    if HEADER + payload_len != data.len() {
        return None;
    }
    super::Ipv6Datagram::parse(data).ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::describe::Collect;
    use proptest::prelude::*;

    // draft-kashyap-ipoib-ipv6-01 §5.1: type 1, length 3, LID 0x0012, flags RC|QPN, QPN 0x000048,
    // Q_Key 0x80010000, GUID 0x0002c90300000001, 4 zero padding bytes.
    static OPT: [u8; 24] = [
        1, 3, 0x00, 0x12, 0x48, 0x00, 0x00, 0x48, 0x80, 0x01, 0x00, 0x00, 0x00, 0x02, 0xc9, 0x03,
        0x00, 0x00, 0x00, 0x01, 0, 0, 0, 0,
    ];

    fn repr() -> LegacyLlaRepr {
        LegacyLlaRepr {
            target: false,
            lid: 0x12,
            flags: LegacyCapabilities(LegacyCapabilities::RC | LegacyCapabilities::QPN),
            qpn: 0x48,
            qkey: QKey::GSI,
            guid: Guid(0x0002_c903_0000_0001),
        }
    }

    #[test]
    fn deconstruct() {
        let o = LegacyLlaOption::new_checked(&OPT[..]).unwrap();
        assert_eq!(o.option_type(), 1);
        assert_eq!(o.length(), 3);
        assert_eq!(o.lid(), 0x12);
        assert!(o.flags().has(LegacyCapabilities::RC));
        assert!(!o.flags().has(LegacyCapabilities::UC));
        assert_eq!(o.qpn(), 0x48);
        assert_eq!(o.qkey(), 0x8001_0000);
        assert_eq!(o.guid(), Guid(0x0002_c903_0000_0001));
        assert_eq!(o.padding(), &[0; 4]);
    }

    #[test]
    fn construct() {
        let mut b = [0xffu8; 24];
        let mut o = LegacyLlaOption::new_unchecked(&mut b[..]);
        o.set_type_and_length(1, 3);
        o.set_lid(0x12);
        o.set_flags(repr().flags);
        o.set_qpn(0x48);
        o.set_qkey(0x8001_0000);
        o.set_guid(Guid(0x0002_c903_0000_0001));
        o.clear_padding();
        assert_eq!(b, OPT);
    }

    // draft-kashyap-ipoib-ipv6-01 §5.1: type 1/2, Length 3, LID/flags/QPN/Q_Key/GUID.
    #[test]
    fn parse_emit() {
        assert_eq!(
            LegacyLlaRepr::parse(&LegacyLlaOption::new_unchecked(&OPT[..])).unwrap(),
            repr()
        );
        let mut b = [0u8; 24];
        repr().emit(&mut LegacyLlaOption::new_unchecked(&mut b[..]));
        assert_eq!(b, OPT);
        let mut bad = OPT;
        bad[1] = 2;
        assert_eq!(
            LegacyLlaRepr::parse(&LegacyLlaOption::new_unchecked(&bad[..])),
            Err(Error::Malformed)
        );
        bad[0] = 5;
        assert_eq!(
            LegacyLlaRepr::parse(&LegacyLlaOption::new_unchecked(&bad[..])),
            Err(Error::Unsupported)
        );
        assert_eq!(
            repr().dgid(Gid::DEFAULT_SUBNET_PREFIX).to_string(),
            "fe80::2:c903:0:1"
        );
        let mut c = Collect::default();
        repr().describe(&mut c);
        assert_eq!(c.get("qpn_demux"), Some("true"));
        assert_eq!(c.get("lid"), Some("0x0012"));
    }

    // draft-kashyap-ipoib-ipv6-01 §4.1: FFxy::<112 bits> → FF1y:3333::<96 bits>; the all-hosts example
    // FF02::1 → FF12:3333::1 (§5.1.5, §5.1.6).
    #[test]
    fn multicast_mapping() {
        let m = legacy_ipv6_mgid("ff02::1".parse().unwrap()).unwrap();
        assert_eq!(m, LEGACY_ALL_HOSTS_MGID);
        assert_eq!(m.to_string(), "ff12:3333::1");
        assert_eq!(legacy_ipv6_group(&m), Some("ff02::1".parse().unwrap()));
        // Scope copied (i), transient flag set even for a permanent group (ii), 0x3333 (iii).
        let m = legacy_ipv6_mgid("ff05::1:3".parse().unwrap()).unwrap();
        assert_eq!(m.to_string(), "ff15:3333::1:3");
        let m = legacy_ipv6_mgid("ff32:40:2001:db8::1234".parse().unwrap()).unwrap();
        assert_eq!(m.to_string(), "ff12:3333:2001:db8::1234");
        assert_eq!(legacy_ipv6_mgid("fe80::1".parse().unwrap()), None);
        assert_eq!(
            legacy_ipv6_group(&Gid::from("ff12:401b:8000::1".parse::<Ipv6Addr>().unwrap())),
            None
        );
    }

    proptest! {
        #[test]
        fn round_trip(target in any::<bool>(), lid in any::<u16>(), flags in any::<u8>(), qpn in 0u32..0x100_0000,
                      qkey in any::<u32>(), guid in any::<u64>()) {
            let r = LegacyLlaRepr { target, lid, flags: LegacyCapabilities(flags), qpn, qkey: QKey(qkey), guid: Guid(guid) };
            let mut b = [0u8; 24];
            r.emit(&mut LegacyLlaOption::new_unchecked(&mut b[..]));
            prop_assert_eq!(LegacyLlaRepr::parse(&LegacyLlaOption::new_unchecked(&b[..])).unwrap(), r);
        }

        #[test]
        fn mapping_round_trip(scope in 0u8..16, low in any::<u128>()) {
            // Groups with flags 0 and octets 2-3 zero survive the mapping.
            let g = (0xff00u128 | scope as u128) << 112 | (low & ((1u128 << 96) - 1));
            let a = Ipv6Addr::from(g);
            prop_assert_eq!(legacy_ipv6_group(&legacy_ipv6_mgid(a).unwrap()), Some(a));
        }

        #[test]
        fn parse_never_panics(data in proptest::collection::vec(any::<u8>(), 0..300), g in any::<[u8; 16]>()) {
            let _ = LegacyLlaRepr::parse(&LegacyLlaOption::new_unchecked(&data[..]));
            let _ = legacy_ipv6_group(&Gid(g));
        }
    }

    /// An ICMPv6 echo request fe80::1 > fe80::2 with 4 data bytes, as the legacy profile sends
    /// it over UD: the IPv6 header first (draft-kashyap-ipoib-ipv6-01 §7).
    fn bare_echo() -> Vec<u8> {
        use crate::ipoib::{Icmpv6Repr, Icmpv6Type, IpPayload, IpProtocol, Ipv6Datagram, Ipv6Repr};
        let (src, dst): (Ipv6Addr, Ipv6Addr) =
            ("fe80::1".parse().unwrap(), "fe80::2".parse().unwrap());
        let dg = Ipv6Datagram {
            header: Ipv6Repr {
                traffic_class: 0,
                flow_label: 0,
                payload_len: 12,
                next_header: IpProtocol::Icmpv6,
                hop_limit: 64,
                src_addr: src,
                dst_addr: dst,
            },
            payload: IpPayload::Icmpv6(Icmpv6Repr {
                msg_type: Icmpv6Type::EchoRequest,
                code: 0,
                rest: 0x0001_0001,
                body: b"abcd",
            }),
        };
        let mut b = vec![0u8; dg.buffer_len()];
        dg.emit(&mut b).unwrap();
        b
    }

    #[test]
    fn bare_ipv6_is_a_whole_datagram_with_no_header() {
        let b = bare_echo();
        assert_eq!(b.len(), 52);
        let dg = bare_ipv6(&b).expect("a bare IPv6 datagram");
        assert_eq!(dg.header.src_addr, "fe80::1".parse::<Ipv6Addr>().unwrap());
        assert_eq!(dg.header.payload_len, 12);
        // One byte too many or too few: not one whole datagram.
        let mut long = b.clone();
        long.push(0);
        assert_eq!(bare_ipv6(&long), None);
        assert_eq!(bare_ipv6(&b[..51]), None);
        assert_eq!(bare_ipv6(&b[..39]), None);
        // The same datagram behind an RFC 4391 §6 header (type 0x86DD) is no bare datagram.
        let framed = [&[0x86, 0xdd, 0, 0][..], &b].concat();
        assert_eq!(bare_ipv6(&framed), None);
        // Not version 6.
        let mut v4 = b.clone();
        v4[0] = 0x45;
        assert_eq!(bare_ipv6(&v4), None);
    }

    // draft-kashyap-ipoib-ipv6-01 §5.1, §7: an ND message in a bare datagram carries the legacy
    // option, and the datagram read with the legacy profile names its fields (LID, flags, QPN,
    // Q_Key, GUID) where the default reading shows an RFC 4391 address. Fails on the old code,
    // whose datagrams read every option as draft-ietf-ipoib-ip-over-infiniband-06 §9.3's.
    #[test]
    fn bare_nd_shows_the_legacy_option() {
        use crate::ipoib::{
            Icmpv6Repr, IpPayload, IpProtocol, Ipv6Datagram, Ipv6Repr, NdMessage, NdProfile, NdRepr,
        };
        let (src, dst): (Ipv6Addr, Ipv6Addr) =
            ("fe80::1".parse().unwrap(), "ff02::1".parse().unwrap());
        let mut opt = [0u8; 24];
        LegacyLlaRepr {
            target: true,
            ..repr()
        }
        .emit(&mut LegacyLlaOption::new_unchecked(&mut opt[..]));
        let nd = NdRepr {
            message: NdMessage::NeighborAdvert {
                flags: 0x20,
                target: src,
            },
            options: &opt,
            profile: NdProfile::Legacy,
        };
        let mut icmp = vec![0u8; nd.buffer_len()];
        nd.emit(src, dst, &mut icmp).unwrap();
        let dg = Ipv6Datagram {
            header: Ipv6Repr {
                traffic_class: 0,
                flow_label: 0,
                payload_len: icmp.len() as u16,
                next_header: IpProtocol::Icmpv6,
                hop_limit: 255,
                src_addr: src,
                dst_addr: dst,
            },
            payload: IpPayload::Icmpv6(Icmpv6Repr::parse(src, dst, &icmp).unwrap()),
        };
        let mut b = vec![0u8; dg.buffer_len()];
        dg.emit(&mut b).unwrap();
        let dg = bare_ipv6(&b).expect("a bare IPv6 datagram");

        let mut c = Collect::default();
        dg.describe_with(NdProfile::Legacy, &mut c);
        for (k, v) in [
            ("icmpv6.option_0.type", "target link-layer address (0x2)"),
            ("icmpv6.option_0.lid", "0x0012"),
            ("icmpv6.option_0.qpn_demux", "true"),
            ("icmpv6.option_0.qpn", "0x000048"),
            ("icmpv6.option_0.qkey", "0x80010000"),
            ("icmpv6.option_0.guid", "0x0002c90300000001"),
        ] {
            assert_eq!(c.get(k), Some(v), "{k}");
        }
        assert_eq!(
            dg.summary_with(NdProfile::Legacy).to_string(),
            "IPv6 fe80::1 > ff02::1 ICMPv6 neighbor advertisement fe80::1 is-at lid 0x0012 \
             flags 0x48 qpn 0x000048 qkey 0x80010000 guid 0x0002c90300000001"
        );
        // The default reading (an RFC 4391 frame's): a 20-byte address, no Q_Key.
        let mut c = Collect::default();
        dg.describe(&mut c);
        assert_eq!(c.get("icmpv6.option_0.qkey"), None);
        assert_eq!(c.get("icmpv6.option_0.link_addr.qpn"), Some("0x000048"));
        assert!(dg
            .summary_with(NdProfile::Rfc4391)
            .to_string()
            .contains(" is-at 48:00:00:48:80:01:00:00:"));
    }
}
