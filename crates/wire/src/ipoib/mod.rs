//! IPoIB encapsulation, link-layer addresses, ARP, ND options, multicast GID mapping, and the small IP,
//! ICMP and UDP views an IPoIB interface and `ipoib decode` need.
//!
//! Sources: draft-ietf-ipoib-ip-over-infiniband-06 (IPoIB over UD, later RFC 4391), RFC 4755 §3.1 (flags
//! of the link-layer address), draft-kashyap-ipoib-ipv6-01 (the legacy IPv6 profile, [`legacy`]), and
//! the Linux behaviour recorded in docs/DEPLOYED.md where the text leaves a choice (broadcast
//! address, ND option padding, interface identifier).
//!
//! - [`encap`]: the 4-byte encapsulation header (§6).
//! - [`hwaddr`]: the 20-byte link-layer address (§9.1.1, RFC 4755 §3.1), its text form, the broadcast
//!   address.
//! - [`arp`]: ARP/RARP with hardware type 32 (§9.2).
//! - [`nd`]: ND messages and options, including the 24-byte link-layer address option (§9.3),
//!   or the legacy profile's in its place ([`NdProfile`]).
//! - [`addr`]: IPv6 interface identifiers and link-local addresses (§8).
//! - [`mcast`]: IPv4/IPv6 group ↔ MGID mapping and the broadcast GID (§4).
//! - [`legacy`]: draft-kashyap-ipoib-ipv6-01's ND option and FF1y:3333:: mapping.
//! - [`ip`], [`icmp`], [`udp`], [`checksum`]: IPv4/IPv6 headers, ICMP, UDP, the Internet checksum.
//! - [`igmp`], [`mld`], [`group_record`]: IGMPv1/v2/v3 and MLDv1/v2 messages, which an interface
//!   whose IP layer is the host's stack reads to follow its multicast memberships.
//! - [`frame`]: a whole UD payload, [`IpoibFrame`], with a one-line summary.
//!
//! Nothing here allocates while parsing or emitting.

pub mod addr;
pub mod arp;
pub mod checksum;
pub mod encap;
pub mod frame;
pub mod group_record;
pub mod hwaddr;
pub mod icmp;
pub mod igmp;
pub mod ip;
pub mod legacy;
pub mod mcast;
pub mod mld;
pub mod nd;
pub mod udp;

pub use arp::{ArpOperation, ArpPacket, ArpRepr};
pub use encap::{EncapHeader, EncapRepr, EtherType};
pub use frame::{IpPayload, IpoibFrame, IpoibPayload, Ipv4Datagram, Ipv6Datagram};
pub use group_record::{GroupRecordRepr, GroupRecords, RecordType};
pub use hwaddr::{HwAddr, HwAddrFlags, HwAddrView, HWADDR_LEN};
pub use icmp::{IcmpPacket, Icmpv4Repr, Icmpv4Type, Icmpv4Unreachable, Icmpv6Repr, Icmpv6Type};
pub use igmp::{IgmpPacket, IgmpRepr, IgmpType};
pub use ip::{IpProtocol, Ipv4Packet, Ipv4Repr, Ipv6Packet, Ipv6Repr};
pub use mcast::{broadcast_mgid, ipv4_mgid, ipv6_mgid, IpVersion, IpoibMgid, Scope};
pub use mld::{MldPacket, MldRepr};
pub use nd::{
    NdMessage, NdOption, NdOptionIter, NdOptionRepr, NdOptionType, NdProfile, NdRepr, PrefixInfo,
};
pub use udp::{UdpPacket, UdpRepr, UDP_HEADER_LEN};

/// The MTU every IPoIB implementation must support: a 2048-byte IPoIB-link MTU minus the 4-byte
/// encapsulation header (draft-ietf-ipoib-ip-over-infiniband-06 §7).
pub const DEFAULT_MTU: usize = 2044;

/// The Linux connected-mode MTU (docs/DEPLOYED.md: 64 KiB - 16).
pub const LINUX_CM_MTU: usize = 65520;
