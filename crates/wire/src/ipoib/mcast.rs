//! Mapping IP multicast groups to InfiniBand multicast GIDs and back
//! (draft-ietf-ipoib-ip-over-infiniband-06 §4, figures 1 and 2).
//!
//! ```text
//! |   8    |  4 |  4 |     16 bits     | 16 bits |      80 bits      |
//! |11111111|0001|scop|<IPoIB signature>|< P_Key >|      group ID     |
//! ```
//!
//! The scope nibble is a parameter of the link, not of the IP group: every MGID of an IPoIB subnet uses
//! the scope of its broadcast GID (§4), which is how Linux maps groups too (it copies the scope from the
//! broadcast address). The P_Key is always written with the full-membership bit set (§4.1 item 1).

use crate::describe::{Describe, Describer, Value};
use crate::keys::PKey;
use crate::types::Gid;
use crate::{Error, Result};
use std::net::{Ipv4Addr, Ipv6Addr};

/// The IPoIB signature of IPv4 MGIDs (draft-ietf-ipoib-ip-over-infiniband-06 §4: MUST be 0x401B).
pub const IPV4_SIGNATURE: u16 = 0x401b;
/// The IPoIB signature of IPv6 MGIDs (draft-ietf-ipoib-ip-over-infiniband-06 §4: MUST be 0x601B).
pub const IPV6_SIGNATURE: u16 = 0x601b;
/// The flags nibble of every IPoIB MGID: T = 1, a transient group
/// (draft-ietf-ipoib-ip-over-infiniband-06 §4: MUST set T-flag to 1).
pub const FLAGS_TRANSIENT: u8 = 0x1;

code_enum! {
    /// The scope nibble of a multicast GID (the IPv6 `scop` values, RFC 3513 §2.7). Other values are kept.
    #[derive(PartialOrd, Ord, Default)]
    pub enum Scope(u8 & 0x0f) {
        /// 0x2: confined to one IB subnet; the RECOMMENDED default (draft-ietf-ipoib-ip-over-infiniband-06
        /// §4.1 item 4).
        #[default]
        LinkLocal = 0x2 => "link-local",
        /// 0x5.
        SiteLocal = 0x5 => "site-local",
        /// 0x8.
        OrgLocal = 0x8 => "organization-local",
        /// 0xE.
        Global = 0xe => "global",
        /// Any other nibble value (only the low 4 bits are used).
        Other(_) => "Other",
    }
}

/// The IP version an IPoIB MGID is for, told by its signature.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum IpVersion {
    /// Signature 0x401B.
    V4,
    /// Signature 0x601B.
    V6,
}

/// The group ID of the broadcast GID: `00..0 FFFFFFFF` in the low 80 bits
/// (draft-ietf-ipoib-ip-over-infiniband-06 §4, figure 2).
const BROADCAST_GROUP_ID: u128 = 0xffff_ffff;

fn head(signature: u16, pkey: PKey, scope: Scope) -> [u8; 16] {
    let mut g = [0u8; 16];
    g[0] = 0xff;
    g[1] = (FLAGS_TRANSIENT << 4) | u8::from(scope);
    g[2..4].copy_from_slice(&signature.to_be_bytes());
    // draft-ietf-ipoib-ip-over-infiniband-06 §4.1 item 1: the P_Key, full-membership bit set.
    pkey_field_write(&mut g, pkey.full());
    g
}

/// Bytes 4-5 of `g` as they are, the P_Key field of figure 1.
fn pkey_field(g: &[u8; 16]) -> PKey {
    PKey(u16::from_be_bytes([g[4], g[5]]))
}

fn pkey_field_write(g: &mut [u8; 16], pkey: PKey) {
    g[4..6].copy_from_slice(&pkey.0.to_be_bytes());
}

/// The low 80 bits of `g`, the group ID field of figure 1.
fn group_id(g: &[u8; 16]) -> u128 {
    let mut low = [0u8; 16];
    low[6..16].copy_from_slice(&g[6..16]);
    u128::from_be_bytes(low)
}

/// The IP version told by the signature field, bytes 2-3 of `mgid` (0x401B IPv4, 0x601B IPv6;
/// draft-ietf-ipoib-ip-over-infiniband-06 §4); `None` for any other value. Only the signature is
/// looked at, not the multicast prefix nor the flags: [`IpoibMgid::parse`] checks the whole form.
pub fn ipoib_signature(mgid: &Gid) -> Option<IpVersion> {
    let g = mgid.as_bytes();
    match u16::from_be_bytes([g[2], g[3]]) {
        IPV4_SIGNATURE => Some(IpVersion::V4),
        IPV6_SIGNATURE => Some(IpVersion::V6),
        _ => None,
    }
}

/// The P_Key field, bytes 4-5, of a GID that carries an IPoIB signature ([`ipoib_signature`]),
/// as written (full-membership bit included or not; draft-ietf-ipoib-ip-over-infiniband-06 §4);
/// `None` without the signature.
pub fn mgid_pkey(mgid: &Gid) -> Option<PKey> {
    ipoib_signature(mgid).map(|_| pkey_field(mgid.as_bytes()))
}

/// `mgid` with its P_Key field, bytes 4-5, set to `pkey` as given (no full-membership bit added;
/// draft-ietf-ipoib-ip-over-infiniband-06 §4). The other bytes are kept.
pub fn with_pkey(mgid: Gid, pkey: PKey) -> Gid {
    let mut g = mgid;
    pkey_field_write(&mut g.0, pkey);
    g
}

/// The scope nibble of a multicast GID, the low 4 bits of byte 1 (draft-ietf-ipoib-ip-over-infiniband-06
/// §4, figure 1; IBA 1 §4.1.1).
pub fn mgid_scope(mgid: &Gid) -> Scope {
    Scope::from(mgid.as_bytes()[1])
}

/// `mgid` with its scope nibble, the low 4 bits of byte 1, set to `scope`; the flags nibble and every
/// other byte are kept (draft-ietf-ipoib-ip-over-infiniband-06 §4, figure 1).
pub fn with_scope(mgid: Gid, scope: Scope) -> Gid {
    let mut g = mgid;
    g.0[1] = (g.0[1] & 0xf0) | u8::from(scope);
    g
}

/// True for a GID of the broadcast GID's form `FFxx:401B:xxxx::FFFF:FFFF`
/// (draft-ietf-ipoib-ip-over-infiniband-06 §4, figure 2): multicast, IPv4 signature, group ID
/// `00..0 FFFFFFFF`, whatever the flags, scope and P_Key fields. Unlike [`IpoibMgid::parse`] it does
/// not require the T flag.
pub fn has_broadcast_form(mgid: &Gid) -> bool {
    mgid.is_multicast()
        && ipoib_signature(mgid) == Some(IpVersion::V4)
        && group_id(mgid.as_bytes()) == BROADCAST_GROUP_ID
}

/// The broadcast GID `FF1S:401B:PPPP::FFFF:FFFF` with the scope nibble and P_Key field of `mgid`, the
/// P_Key copied as written (no full-membership bit added, unlike [`broadcast_mgid`]): the broadcast
/// group an IPoIB MGID of that link belongs under (draft-ietf-ipoib-ip-over-infiniband-06 §4).
pub fn broadcast_of(mgid: &Gid) -> Gid {
    let g = mgid.as_bytes();
    with_pkey(broadcast_mgid(PKey(0), mgid_scope(mgid)), pkey_field(g))
}

/// The MGID of an IPv4 multicast group: `FF1S:401B:PPPP::` + the low 28 bits of the group, the rest
/// zero (draft-ietf-ipoib-ip-over-infiniband-06 §4). The limited broadcast address 255.255.255.255 SHALL
/// map to the broadcast GID (§4), which this function returns for it. Any other address is mapped by its
/// low 28 bits whether or not it is a class D address; callers check that.
pub fn ipv4_mgid(group: Ipv4Addr, pkey: PKey, scope: Scope) -> Gid {
    if group == Ipv4Addr::BROADCAST {
        return broadcast_mgid(pkey, scope);
    }
    let mut g = head(IPV4_SIGNATURE, pkey, scope);
    g[12..16].copy_from_slice(&(u32::from(group) & 0x0fff_ffff).to_be_bytes());
    Gid(g)
}

/// The MGID of an IPv6 multicast group: `FF1S:601B:PPPP:` + the low 80 bits of the group
/// (draft-ietf-ipoib-ip-over-infiniband-06 §4).
pub fn ipv6_mgid(group: Ipv6Addr, pkey: PKey, scope: Scope) -> Gid {
    let mut g = head(IPV6_SIGNATURE, pkey, scope);
    g[6..16].copy_from_slice(&group.octets()[6..16]);
    Gid(g)
}

/// The broadcast GID `FF1S:401B:PPPP::FFFF:FFFF` (draft-ietf-ipoib-ip-over-infiniband-06 §4, figure 2),
/// with the full-membership bit set in the P_Key (§4.1 item 1).
pub fn broadcast_mgid(pkey: PKey, scope: Scope) -> Gid {
    let mut g = head(IPV4_SIGNATURE, pkey, scope);
    g[6..16].copy_from_slice(&BROADCAST_GROUP_ID.to_be_bytes()[6..16]);
    Gid(g)
}

/// An IPoIB multicast GID taken apart (the reverse of [`ipv4_mgid`] and [`ipv6_mgid`]).
///
/// Only part of the IP group survives the mapping: 28 bits for IPv4 and 80 bits for IPv6 (§4). For IPv4
/// the missing top 4 bits are always `1110` in a class D address, so [`IpoibMgid::ipv4_group`] restores the
/// group exactly; for IPv6 the top 48 bits (flags, scope and, for unicast-prefix-based groups, part of
/// the prefix) are lost, and [`IpoibMgid::ipv6_group_low80`] gives only what the MGID holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct IpoibMgid {
    /// Told by the signature.
    pub version: IpVersion,
    /// The scope nibble.
    pub scope: Scope,
    /// The P_Key field as written (full-membership bit included).
    pub pkey: PKey,
    /// The low 80 bits of the MGID (the group ID field of figure 1).
    pub group_id: u128,
}

impl IpoibMgid {
    /// Takes an MGID apart. `Err(Unsupported)` if it is not an IPoIB MGID: not multicast, flags nibble
    /// other than T = 1 (§4: MUST set T-flag to 1), or a signature other than 0x401B / 0x601B (§4). For
    /// IPv4 the bits above the 28-bit group must be zero (§4: "the rest of the bits are filled with 0")
    /// except in the broadcast GID, else `Err(Malformed)`.
    pub fn parse(mgid: &Gid) -> Result<IpoibMgid> {
        let g = mgid.as_bytes();
        if !mgid.is_multicast() || g[1] >> 4 != FLAGS_TRANSIENT {
            return Err(Error::Unsupported);
        }
        let version = ipoib_signature(mgid).ok_or(Error::Unsupported)?;
        let group_id = group_id(g);
        let m = IpoibMgid {
            version,
            scope: mgid_scope(mgid),
            pkey: pkey_field(g),
            group_id,
        };
        if version == IpVersion::V4 && !m.is_broadcast() && group_id > 0x0fff_ffff {
            return Err(Error::Malformed);
        }
        Ok(m)
    }

    /// Builds the MGID back (the P_Key is written as stored, full-membership bit included or not).
    pub fn to_gid(&self) -> Gid {
        let sig = match self.version {
            IpVersion::V4 => IPV4_SIGNATURE,
            IpVersion::V6 => IPV6_SIGNATURE,
        };
        let mut g = head(sig, PKey(0), self.scope);
        pkey_field_write(&mut g, self.pkey);
        g[6..16].copy_from_slice(&self.group_id.to_be_bytes()[6..16]);
        Gid(g)
    }

    /// True for the broadcast GID of figure 2 (IPv4 signature, group ID `00..0 FFFFFFFF`).
    pub fn is_broadcast(&self) -> bool {
        self.version == IpVersion::V4 && self.group_id == BROADCAST_GROUP_ID
    }

    /// The IPv4 group of an IPv4 MGID: 255.255.255.255 for the broadcast GID, otherwise `1110` followed
    /// by the 28 mapped bits (every class D address starts with `1110`, so the group is exact). `None`
    /// for an IPv6 MGID.
    pub fn ipv4_group(&self) -> Option<Ipv4Addr> {
        match self.version {
            IpVersion::V6 => None,
            IpVersion::V4 if self.is_broadcast() => Some(Ipv4Addr::BROADCAST),
            IpVersion::V4 => Some(Ipv4Addr::from(
                0xe000_0000 | (self.group_id as u32 & 0x0fff_ffff),
            )),
        }
    }

    /// The low 80 bits of the IPv6 group, in the low 80 bits of the result; `None` for IPv4. The top 48
    /// bits of the group are not in the MGID.
    pub fn ipv6_group_low80(&self) -> Option<u128> {
        match self.version {
            IpVersion::V6 => Some(self.group_id),
            IpVersion::V4 => None,
        }
    }

    /// True if `group` maps to this MGID's group ID (IPv6 groups only compare their low 80 bits).
    pub fn matches_ipv6(&self, group: Ipv6Addr) -> bool {
        self.version == IpVersion::V6 && self.group_id == u128::from(group) & ((1u128 << 80) - 1)
    }
}

impl Describe for IpoibMgid {
    fn describe(&self, d: &mut dyn Describer) {
        let s = u8::from(self.scope);
        d.field("scope", Value::Named(s as u64, self.scope.name()));
        let (sig, name) = match self.version {
            IpVersion::V4 => (IPV4_SIGNATURE, "IPv4"),
            IpVersion::V6 => (IPV6_SIGNATURE, "IPv6"),
        };
        d.field("signature", Value::Named(sig as u64, name));
        d.field("pkey", self.pkey.into());
        match self.ipv4_group() {
            Some(a) => d.field("ipv4_group", Value::Ipv4(a)),
            None => {
                let b = self.group_id.to_be_bytes();
                d.field("group_id", Value::Bytes(&b[6..16]));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::describe::Collect;
    use proptest::prelude::*;

    fn gid(s: &str) -> Gid {
        Gid::from(s.parse::<Ipv6Addr>().unwrap())
    }

    // draft-ietf-ipoib-ip-over-infiniband-06 §4: the all-routers example, P_Key 0x8000, group ID 2.
    #[test]
    fn all_routers_example() {
        let v4 = ipv4_mgid(Ipv4Addr::new(224, 0, 0, 2), PKey(0x8000), Scope::LinkLocal);
        assert_eq!(v4, gid("ff12:401b:8000::2"));
        assert_eq!(v4.to_string(), "ff12:401b:8000::2");
        let v6 = ipv6_mgid("ff02::2".parse().unwrap(), PKey(0x8000), Scope::LinkLocal);
        assert_eq!(v6, gid("ff12:601b:8000::2"));
        let m = IpoibMgid::parse(&v4).unwrap();
        assert_eq!(m.ipv4_group(), Some(Ipv4Addr::new(224, 0, 0, 2)));
        assert_eq!(m.pkey, PKey(0x8000));
        let m = IpoibMgid::parse(&v6).unwrap();
        assert_eq!(m.version, IpVersion::V6);
        assert_eq!(m.ipv6_group_low80(), Some(2));
        assert!(m.matches_ipv6("ff02::2".parse().unwrap()));
    }

    // draft-ietf-ipoib-ip-over-infiniband-06 §4 figure 2: 255.255.255.255 SHALL map to the broadcast GID.
    #[test]
    fn limited_broadcast_maps_to_broadcast_gid() {
        let b = ipv4_mgid(Ipv4Addr::BROADCAST, PKey(0xffff), Scope::LinkLocal);
        assert_eq!(b, gid("ff12:401b:ffff::ffff:ffff"));
        assert_eq!(b, broadcast_mgid(PKey(0x7fff), Scope::LinkLocal));
        let m = IpoibMgid::parse(&b).unwrap();
        assert!(m.is_broadcast());
        assert_eq!(m.ipv4_group(), Some(Ipv4Addr::BROADCAST));
    }

    // draft-ietf-ipoib-ip-over-infiniband-06 §4.1 item 1: the full-membership P_Key MUST be used.
    #[test]
    fn full_member_bit_is_set() {
        assert_eq!(
            broadcast_mgid(PKey(0x7fff), Scope::LinkLocal).as_bytes()[4..6],
            [0xff, 0xff]
        );
        assert_eq!(
            ipv4_mgid(Ipv4Addr::new(224, 0, 0, 1), PKey(0x0001), Scope::Global).as_bytes()[4..6],
            [0x80, 0x01]
        );
    }

    // draft-ietf-ipoib-ip-over-infiniband-06 §4: T-flag 1; MGIDs use the broadcast GID's scope bits.
    #[test]
    fn transient_flag_and_link_scope() {
        let s = Scope::SiteLocal;
        let g = ipv6_mgid("ff02::1:ff00:1234".parse().unwrap(), PKey(0x8001), s);
        assert_eq!(g, gid("ff15:601b:8001:0:0:1:ff00:1234"));
        assert_eq!(g.as_bytes()[1] >> 4, FLAGS_TRANSIENT);
        assert_eq!(IpoibMgid::parse(&g).unwrap().scope, s);
        assert_eq!(Scope::from(0x0e), Scope::Global);
        assert_eq!(u8::from(Scope::Other(0x3)), 3);
    }

    // draft-ietf-ipoib-ip-over-infiniband-06 §4.1 item 4: link-local scope 0x2 is the RECOMMENDED default.
    #[test]
    fn default_scope_is_link_local() {
        assert_eq!(Scope::default(), Scope::LinkLocal);
        assert_eq!(u8::from(Scope::default()), 0x2);
    }

    // draft-ietf-ipoib-ip-over-infiniband-06 §4: only the lower 28 bits of an IPv4 group are mapped.
    #[test]
    fn ipv4_low_28_bits() {
        let g = ipv4_mgid(
            Ipv4Addr::new(239, 255, 255, 250),
            PKey(0xffff),
            Scope::LinkLocal,
        );
        assert_eq!(g, gid("ff12:401b:ffff::fff:fffa"));
        assert_eq!(
            IpoibMgid::parse(&g).unwrap().ipv4_group(),
            Some(Ipv4Addr::new(239, 255, 255, 250))
        );
        // Class D addresses all start with 1110, so no two groups share an MGID; only a non-multicast
        // address with the same low 28 bits would.
        assert_eq!(
            ipv4_mgid(Ipv4Addr::new(224, 1, 2, 3), PKey(0xffff), Scope::LinkLocal),
            ipv4_mgid(Ipv4Addr::new(16, 1, 2, 3), PKey(0xffff), Scope::LinkLocal)
        );
    }

    #[test]
    fn rejects_non_ipoib() {
        assert_eq!(IpoibMgid::parse(&gid("fe80::1")), Err(Error::Unsupported));
        assert_eq!(IpoibMgid::parse(&gid("ff02::1")), Err(Error::Unsupported));
        assert_eq!(
            IpoibMgid::parse(&gid("ff12:3333::1")),
            Err(Error::Unsupported)
        );
        assert_eq!(
            IpoibMgid::parse(&gid("ff12:401b:8000::1:0:0")),
            Err(Error::Malformed)
        );
    }

    // draft-ietf-ipoib-ip-over-infiniband-06 §4, figure 1: the signature sits in bytes 2-3 and is all
    // that `ipoib_signature` reads.
    #[test]
    fn signature_field() {
        let v4 = [
            0xff, 0x12, 0x40, 0x1b, 0x80, 0x01, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2,
        ];
        assert_eq!(ipoib_signature(&Gid(v4)), Some(IpVersion::V4));
        let mut v6 = v4;
        v6[2] = 0x60;
        assert_eq!(ipoib_signature(&Gid(v6)), Some(IpVersion::V6));
        // Prefix and flags are not looked at (IpoibMgid::parse rejects these).
        let mut odd = v4;
        odd[0] = 0x00;
        odd[1] = 0x02;
        assert_eq!(ipoib_signature(&Gid(odd)), Some(IpVersion::V4));
        assert_eq!(IpoibMgid::parse(&Gid(odd)), Err(Error::Unsupported));
        for sig in [[0x40, 0x1c], [0xa0, 0x1b], [0x1b, 0x40], [0, 0]] {
            let mut g = v4;
            g[2..4].copy_from_slice(&sig);
            assert_eq!(ipoib_signature(&Gid(g)), None, "{sig:x?}");
        }
    }

    // draft-ietf-ipoib-ip-over-infiniband-06 §4, figure 1: the P_Key field is bytes 4-5, read and written
    // as it stands (no full-membership bit added).
    #[test]
    fn pkey_field_read_and_write() {
        let g = Gid([
            0xff, 0x12, 0x60, 0x1b, 0x12, 0x34, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1,
        ]);
        assert_eq!(mgid_pkey(&g), Some(PKey(0x1234)));
        let zero = Gid([
            0xff, 0x12, 0x40, 0x1b, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff,
        ]);
        assert_eq!(mgid_pkey(&zero), Some(PKey(0)));
        let w = with_pkey(zero, PKey(0x0002));
        assert_eq!(
            w.0,
            [0xff, 0x12, 0x40, 0x1b, 0x00, 0x02, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff]
        );
        assert_eq!(with_pkey(w, PKey(0xffff)).0[4..6], [0xff, 0xff]);
        // Without an IPoIB signature there is no P_Key field.
        let plain = Gid([
            0xff, 0x12, 0x12, 0x34, 0x80, 0x01, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1,
        ]);
        assert_eq!(mgid_pkey(&plain), None);
    }

    // draft-ietf-ipoib-ip-over-infiniband-06 §4, figure 1: the scope is the low nibble of byte 1, the
    // flags the high one.
    #[test]
    fn scope_nibble_read_and_write() {
        let g = Gid([
            0xff, 0x15, 0x60, 0x1b, 0xff, 0xff, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1,
        ]);
        assert_eq!(mgid_scope(&g), Scope::SiteLocal);
        assert_eq!(
            mgid_scope(&Gid([0xff, 0x3e, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0])),
            Scope::Global
        );
        let w = with_scope(g, Scope::LinkLocal);
        assert_eq!(
            w.0,
            [0xff, 0x12, 0x60, 0x1b, 0xff, 0xff, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1]
        );
        // The flags nibble is kept, and only 4 bits of an odd scope value are written.
        let f = Gid([0xff, 0x32, 0x12, 0x34, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]);
        assert_eq!(with_scope(f, Scope::from(0xf8)).0[1], 0x38);
        assert_eq!(u8::from(mgid_scope(&with_scope(f, Scope::Other(0x3)))), 0x3);
    }

    // draft-ietf-ipoib-ip-over-infiniband-06 §4, figure 2: FFxx:401B:PPPP::FFFF:FFFF, whatever the flags,
    // scope and P_Key.
    #[test]
    fn broadcast_form() {
        let b = [
            0xff, 0x12, 0x40, 0x1b, 0xff, 0xff, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff,
        ];
        assert!(has_broadcast_form(&Gid(b)));
        let mut t0 = b;
        t0[1] = 0x05;
        t0[4..6].copy_from_slice(&[0, 0]);
        assert!(has_broadcast_form(&Gid(t0)));
        assert_eq!(IpoibMgid::parse(&Gid(t0)), Err(Error::Unsupported));
        for (i, v) in [
            (0, 0xfe),
            (2, 0x60),
            (3, 0x1c),
            (6, 1),
            (11, 1),
            (12, 0xfe),
            (15, 0),
        ] {
            let mut g = b;
            g[i] = v;
            assert!(!has_broadcast_form(&Gid(g)), "byte {i} = {v:#x}");
        }
    }

    // draft-ietf-ipoib-ip-over-infiniband-06 §4: the broadcast GID of an MGID's scope and P_Key field.
    #[test]
    fn broadcast_of_copies_scope_and_pkey() {
        let g = Gid([
            0xff, 0x15, 0x60, 0x1b, 0x00, 0x05, 0, 0, 0, 0, 0, 1, 0xff, 0, 0, 1,
        ]);
        assert_eq!(
            broadcast_of(&g).0,
            [0xff, 0x15, 0x40, 0x1b, 0x00, 0x05, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff]
        );
        // The flags nibble of the result is T = 1 whatever the input had.
        let t0 = Gid([
            0xff, 0x02, 0x40, 0x1b, 0xff, 0xff, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1,
        ]);
        assert_eq!(broadcast_of(&t0), gid("ff12:401b:ffff::ffff:ffff"));
    }

    #[test]
    fn describe() {
        let mut c = Collect::default();
        IpoibMgid::parse(&gid("ff12:401b:8000::2"))
            .unwrap()
            .describe(&mut c);
        assert_eq!(c.get("scope"), Some("link-local (0x2)"));
        assert_eq!(c.get("signature"), Some("IPv4 (0x401b)"));
        assert_eq!(c.get("pkey"), Some("0x8000"));
        assert_eq!(c.get("ipv4_group"), Some("224.0.0.2"));
    }

    proptest! {
        #[test]
        fn round_trip(v6 in any::<bool>(), scope in 0u8..16, pkey in any::<u16>(), id in any::<u128>()) {
            let version = if v6 { IpVersion::V6 } else { IpVersion::V4 };
            let group_id = if v6 { id & ((1 << 80) - 1) } else { id & 0x0fff_ffff };
            let m = IpoibMgid { version, scope: Scope::from(scope), pkey: PKey(pkey), group_id };
            prop_assert_eq!(IpoibMgid::parse(&m.to_gid()).unwrap(), m);
        }

        #[test]
        fn ipv6_mapping_round_trip(a in any::<u128>(), pkey in any::<u16>()) {
            let group = Ipv6Addr::from(a);
            let m = IpoibMgid::parse(&ipv6_mgid(group, PKey(pkey), Scope::LinkLocal)).unwrap();
            prop_assert!(m.matches_ipv6(group));
            prop_assert_eq!(m.pkey, PKey(pkey).full());
        }

        #[test]
        fn parse_never_panics(b in any::<[u8; 16]>()) {
            let _ = IpoibMgid::parse(&Gid(b));
        }

        // The accessors agree with IpoibMgid::parse wherever it accepts the GID.
        #[test]
        fn accessors_agree_with_parse(b in any::<[u8; 16]>(), v6 in any::<bool>(), bcast in any::<bool>()) {
            let mut b = b;
            b[0] = 0xff;
            b[1] = 0x10 | (b[1] & 0x0f);
            b[2..4].copy_from_slice(&if v6 { IPV6_SIGNATURE } else { IPV4_SIGNATURE }.to_be_bytes());
            if !v6 {
                b[6..12].fill(0);
                b[12] &= 0x0f;
                if bcast {
                    b[12..16].fill(0xff);
                }
            }
            let g = Gid(b);
            let m = IpoibMgid::parse(&g).unwrap();
            prop_assert_eq!(Some(m.version), ipoib_signature(&g));
            prop_assert_eq!(Some(m.pkey), mgid_pkey(&g));
            prop_assert_eq!(m.scope, mgid_scope(&g));
            prop_assert_eq!(m.is_broadcast(), has_broadcast_form(&g));
            prop_assert_eq!(with_scope(with_pkey(g, m.pkey), m.scope), g);
        }
    }
}
