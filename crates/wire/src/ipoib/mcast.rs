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

fn head(signature: u16, pkey: PKey, scope: Scope) -> [u8; 16] {
    let mut g = [0u8; 16];
    g[0] = 0xff;
    g[1] = (FLAGS_TRANSIENT << 4) | u8::from(scope);
    g[2..4].copy_from_slice(&signature.to_be_bytes());
    // draft-ietf-ipoib-ip-over-infiniband-06 §4.1 item 1: the P_Key, full-membership bit set.
    g[4..6].copy_from_slice(&pkey.full().0.to_be_bytes());
    g
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
    g[12..16].copy_from_slice(&[0xff; 4]);
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
        if g[0] != 0xff || g[1] >> 4 != FLAGS_TRANSIENT {
            return Err(Error::Unsupported);
        }
        let version = match u16::from_be_bytes([g[2], g[3]]) {
            IPV4_SIGNATURE => IpVersion::V4,
            IPV6_SIGNATURE => IpVersion::V6,
            _ => return Err(Error::Unsupported),
        };
        let mut low = [0u8; 16];
        low[6..16].copy_from_slice(&g[6..16]);
        let group_id = u128::from_be_bytes(low);
        let m = IpoibMgid {
            version,
            scope: Scope::from(g[1]),
            pkey: PKey(u16::from_be_bytes([g[4], g[5]])),
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
        g[4..6].copy_from_slice(&self.pkey.0.to_be_bytes());
        g[6..16].copy_from_slice(&self.group_id.to_be_bytes()[6..16]);
        Gid(g)
    }

    /// True for the broadcast GID of figure 2 (IPv4 signature, group ID `00..0 FFFFFFFF`).
    pub fn is_broadcast(&self) -> bool {
        self.version == IpVersion::V4 && self.group_id == 0xffff_ffff
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
    }
}
