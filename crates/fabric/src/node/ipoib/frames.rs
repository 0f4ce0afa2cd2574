//! What crosses the adapter, classified for people: per-direction counts of ARP and ND messages,
//! IPv4 and IPv6 packets, unicast and multicast datagrams, and the address resolutions a host
//! learned (an ARP reply, draft-ietf-ipoib-ip-over-infiniband-06 §9.2; a solicited Neighbor
//! Advertisement with the IPoIB link-layer option, §9.3). Classification reads the 4-byte
//! encapsulation header (§6) and one level below it; anything that does not parse is only counted
//! by type. Nothing here changes what the interface does.

use crate::Instant;
use ipoib_wire::ipoib::{
    ArpOperation, ArpPacket, ArpRepr, EncapHeader, EtherType, HwAddr, HwAddrFlags, Icmpv6Repr,
    Icmpv6Type, IpProtocol, Ipv6Packet, NdMessage, NdProfile, NdRepr,
};
use std::net::IpAddr;

/// Counts of one direction.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct FrameStats {
    /// Datagrams.
    pub frames: u64,
    /// Sent to or received from a multicast group.
    pub multicast: u64,
    /// ARP requests.
    pub arp_requests: u64,
    /// ARP replies.
    pub arp_replies: u64,
    /// Neighbor Solicitations (DAD included).
    pub nd_solicits: u64,
    /// Neighbor Advertisements.
    pub nd_adverts: u64,
    /// IPv4 packets.
    pub ipv4: u64,
    /// IPv6 packets (ND included).
    pub ipv6: u64,
}

/// How an address was resolved.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum ResolutionKind {
    /// ARP reply (§9.2).
    Arp,
    /// Solicited Neighbor Advertisement (§9.3).
    Nd,
}

/// An address resolution a host learned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Resolution {
    /// When the answer arrived.
    pub at: Instant,
    /// ARP or ND.
    pub kind: ResolutionKind,
    /// The IP address resolved.
    pub ip: IpAddr,
    /// Its link-layer address.
    pub hw: HwAddr,
}

/// What one datagram is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    ArpRequest,
    ArpReply(Option<(IpAddr, HwAddr)>),
    Ns,
    Na(Option<(IpAddr, HwAddr)>),
    Ipv4,
    Ipv6,
    Other,
}

/// Classifies an IPoIB payload (encapsulation header and datagram, or a bare IPv6 datagram of the
/// legacy profile, told by its first nibble: draft-kashyap-ipoib-ipv6-01 §7). `legacy` is the
/// local subnet prefix when the interface runs the legacy profile: a Neighbor Advertisement's
/// target link-layer option is then that draft's (§5.1: LID, QPN, Q_Key, GUID; the GID is the
/// local prefix and the GUID, §7), which has the same type and Length 3 as RFC 4391 §9.1.2's and
/// cannot be told from it by its bytes (`NdProfile`; `crates/proto/src/ipoib/ipv6.rs` `nd_lla`
/// reads it so).
pub(crate) fn classify(data: &[u8], legacy: Option<u64>) -> Kind {
    if data.first().is_some_and(|b| b >> 4 == 6) {
        return classify_v6(data, legacy);
    }
    let Ok(h) = EncapHeader::new_checked(data) else {
        return Kind::Other;
    };
    let body = h.payload();
    match h.ethertype() {
        EtherType::Arp => match ArpRepr::parse(&ArpPacket::new_unchecked(body)) {
            Ok(a) if a.operation == ArpOperation::Request => Kind::ArpRequest,
            Ok(a) if a.operation == ArpOperation::Reply => {
                Kind::ArpReply(Some((IpAddr::V4(a.sender_ip), a.sender_hw)))
            }
            _ => Kind::Other,
        },
        EtherType::Ipv4 => Kind::Ipv4,
        EtherType::Ipv6 => classify_v6(body, legacy),
        _ => Kind::Other,
    }
}

fn classify_v6(body: &[u8], legacy: Option<u64>) -> Kind {
    let Ok(ip) = Ipv6Packet::new_checked(body) else {
        return Kind::Other;
    };
    if ip.next_header() != IpProtocol::Icmpv6 {
        return Kind::Ipv6;
    }
    let Ok(m) = Icmpv6Repr::parse(ip.src_addr(), ip.dst_addr(), ip.payload()) else {
        return Kind::Ipv6;
    };
    match m.msg_type {
        Icmpv6Type::NeighborSolicit => Kind::Ns,
        Icmpv6Type::NeighborAdvert => {
            let profile = match legacy {
                Some(_) => NdProfile::Legacy,
                None => NdProfile::Rfc4391,
            };
            let Ok(nd) = NdRepr::parse_message_as(&m, profile) else {
                return Kind::Na(None);
            };
            let NdMessage::NeighborAdvert { flags, target } = nd.message else {
                return Kind::Na(None);
            };
            // RFC 4861 §4.4: S (0x40) marks an answer to a solicitation; unsolicited ones are
            // announcements, not resolutions.
            let hw = match legacy {
                None => nd.target_lla(),
                Some(prefix) => nd
                    .legacy_lla(true)
                    .map(|r| HwAddr::new(HwAddrFlags::NONE, r.qpn, r.dgid(prefix))),
            };
            Kind::Na(
                hw.filter(|_| flags & 0x40 != 0)
                    .map(|h| (IpAddr::V6(target), h)),
            )
        }
        _ => Kind::Ipv6,
    }
}

impl FrameStats {
    /// Counts one datagram of kind `k`.
    pub(crate) fn count(&mut self, k: Kind, multicast: bool) {
        self.frames += 1;
        self.multicast += u64::from(multicast);
        match k {
            Kind::ArpRequest => self.arp_requests += 1,
            Kind::ArpReply(_) => self.arp_replies += 1,
            Kind::Ns => {
                self.nd_solicits += 1;
                self.ipv6 += 1;
            }
            Kind::Na(_) => {
                self.nd_adverts += 1;
                self.ipv6 += 1;
            }
            Kind::Ipv4 => self.ipv4 += 1,
            Kind::Ipv6 => self.ipv6 += 1,
            Kind::Other => {}
        }
    }
}
