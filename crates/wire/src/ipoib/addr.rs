//! IPv6 interface identifiers and link-local addresses of IPoIB interfaces
//! (draft-ietf-ipoib-ip-over-infiniband-06 §8, §8.1).
//!
//! The port GUID is an EUI-64 (§8), so the interface identifier is the GUID with the universal/local bit
//! (bit 1 of the first octet, 0x02) inverted, as RFC 3513 appendix A (\[AARCH\]) says and §8 RECOMMENDS.
//! Linux (`addrconf_ifid_infiniband`) instead *sets* that bit, taking the 8 bytes from the GID in the
//! link-layer address; both agree for every manufacturer GUID (U/L bit 0). [`linux_iid_from_guid`] gives
//! the Linux form for interoperability checks.
//!
//! Note the difference from the port's own GID, which is the subnet prefix followed by the GUID *as is*
//! (IBA 1 §4.1.1): `fe80::2:c903:0:1` is the GID of GUID `0x0002c90300000001`, while the IPv6 link-local
//! address of the same port is `fe80::202:c903:0:1`.

use crate::types::Guid;
use std::net::Ipv6Addr;

/// The universal/local bit of an EUI-64 in a 64-bit big-endian value (RFC 3513 appendix A).
pub const UL_BIT: u64 = 0x0200_0000_0000_0000;

/// The link-local prefix fe80::/64 (RFC 3513 §2.5.6).
pub const LINK_LOCAL_PREFIX: u64 = 0xfe80_0000_0000_0000;

/// The modified EUI-64 interface identifier of a port GUID: the U/L bit inverted
/// (draft-ietf-ipoib-ip-over-infiniband-06 §8: RECOMMENDED, per \[AARCH\] appendix A).
pub const fn iid_from_guid(guid: Guid) -> u64 {
    guid.0 ^ UL_BIT
}

/// The GUID an interface identifier was made from by [`iid_from_guid`] (the inversion is its own
/// inverse).
pub const fn guid_from_iid(iid: u64) -> Guid {
    Guid(iid ^ UL_BIT)
}

/// The interface identifier Linux forms: the U/L bit set, not inverted (`eui[0] |= 2`).
pub const fn linux_iid_from_guid(guid: Guid) -> u64 {
    guid.0 | UL_BIT
}

/// An interface identifier from a 16-bit LID (draft-ietf-ipoib-ip-over-infiniband-06 §8 option 2, only
/// for an IPoIB link inside one IB subnet): `0000:00ff:fe00:LLLL`, the RFC 3513 appendix A form for
/// links with short non-global identifiers (U/L bit 0: not globally unique).
pub const fn iid_from_lid(lid: u16) -> u64 {
    0x0000_00ff_fe00_0000 | lid as u64
}

/// An IPv6 address from a /64 prefix and an interface identifier.
pub fn ipv6_from_parts(prefix: u64, iid: u64) -> Ipv6Addr {
    Ipv6Addr::from(((prefix as u128) << 64) | iid as u128)
}

/// The IPv6 link-local address of a port: fe80::/64 + [`iid_from_guid`]
/// (draft-ietf-ipoib-ip-over-infiniband-06 §8.1).
pub fn link_local_from_guid(guid: Guid) -> Ipv6Addr {
    ipv6_from_parts(LINK_LOCAL_PREFIX, iid_from_guid(guid))
}

/// The port GUID behind a link-local address made by [`link_local_from_guid`]; `None` if the address is
/// not in fe80::/64 (the reverse of §8.1).
pub fn guid_from_link_local(a: Ipv6Addr) -> Option<Guid> {
    let v = u128::from(a);
    if (v >> 64) as u64 != LINK_LOCAL_PREFIX {
        return None;
    }
    Some(guid_from_iid(v as u64))
}

/// The interface identifier (low 64 bits) of any IPv6 address.
pub fn iid_of(a: Ipv6Addr) -> u64 {
    u128::from(a) as u64
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    // draft-ietf-ipoib-ip-over-infiniband-06 §8, §8.1: link-local = fe80::/64 + GUID with U/L inverted.
    #[test]
    fn link_local_of_mellanox_guid() {
        let g = Guid(0x0002_c903_0000_0001);
        assert_eq!(iid_from_guid(g), 0x0202_c903_0000_0001);
        assert_eq!(link_local_from_guid(g).to_string(), "fe80::202:c903:0:1");
        assert_eq!(
            guid_from_link_local("fe80::202:c903:0:1".parse().unwrap()),
            Some(g)
        );
        assert_eq!(
            guid_from_link_local("2001:db8::202:c903:0:1".parse().unwrap()),
            None
        );
        assert_eq!(linux_iid_from_guid(g), iid_from_guid(g));
    }

    // draft-ietf-ipoib-ip-over-infiniband-06 §8: the AARCH rule inverts, Linux sets; they differ only
    // for a locally administered GUID.
    #[test]
    fn invert_versus_linux_set() {
        let g = Guid(0x0200_0000_0000_0001);
        assert_eq!(iid_from_guid(g), 0x0000_0000_0000_0001);
        assert_eq!(linux_iid_from_guid(g), 0x0200_0000_0000_0001);
    }

    // draft-ietf-ipoib-ip-over-infiniband-06 §8 option 2: an identifier from the LID.
    #[test]
    fn lid_iid() {
        assert_eq!(
            ipv6_from_parts(LINK_LOCAL_PREFIX, iid_from_lid(0x12)).to_string(),
            "fe80::ff:fe00:12"
        );
        assert_eq!(
            iid_of("fe80::ff:fe00:12".parse().unwrap()),
            iid_from_lid(0x12)
        );
    }

    proptest! {
        #[test]
        fn round_trip(g in any::<u64>()) {
            prop_assert_eq!(guid_from_link_local(link_local_from_guid(Guid(g))), Some(Guid(g)));
            prop_assert_eq!(guid_from_iid(iid_from_guid(Guid(g))), Guid(g));
        }
    }
}
