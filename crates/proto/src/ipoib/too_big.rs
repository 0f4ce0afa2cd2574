//! The answer to a unicast IP packet larger than the MTU of the way it must go: in connected mode
//! the interface MTU may exceed the UD one (RFC 4755 §5; Linux's is 65520), but a packet to a peer
//! reached over UD (RFC 4755 §7) may carry only the UD MTU (2044 on a 2048-byte IB MTU,
//! draft-ietf-ipoib-ip-over-infiniband-06 §7). Linux's IPoIB drops such a packet and answers the
//! local sender with an ICMP "fragmentation needed" (IPv4, RFC 792, RFC 1191 §4) or ICMPv6
//! "packet too big" (RFC 4443 §3.2) carrying the smaller MTU, so that path MTU discovery shrinks
//! the next packets (docs/DEPLOYED.md "Linux IPoIB"). [`too_big_reply`] builds that answer; the
//! transmit path decides when to use it and drops the packet.
//!
//! Invariants: the reply goes up to the local IP stack and never onto the fabric; it is a pure
//! function of its input (no clock, no randomness: same packet, same bytes); no input panics it,
//! and no input is answered that RFC 1122 §3.2.2 or RFC 4443 §2.4 (e) forbids answering.

use ipoib_wire::ipoib::ip::IPV6_HEADER_LEN;
use ipoib_wire::ipoib::{
    Icmpv4Repr, Icmpv4Type, Icmpv6Repr, Icmpv6Type, IpPayload, IpProtocol, Ipv4Datagram,
    Ipv4Packet, Ipv4Repr, Ipv6Datagram, Ipv6Packet, Ipv6Repr,
};
use std::net::Ipv4Addr;

/// TTL and hop limit of the reply: Linux's defaults for both families, `IPDEFTTL` and
/// `IPV6_DEFAULT_HOPLIMIT` (docs/DEPLOYED.md "Linux IPoIB"). 255 is for Neighbor Discovery only
/// (RFC 4861 §6.1.1, §7.1.1), which this is not.
const REPLY_HOPS: u8 = 64;

/// IPv4 precedence 6, internetwork control, in the TOS octet: ICMP errors SHOULD carry it
/// (RFC 1812 §4.3.2.5), and Linux sets it (`IPTOS_PREC_INTERNETCONTROL`).
const PREC_INTERNETCONTROL: u8 = 0xc0;

/// The four RFC 1349 TOS bits Linux copies from the invoking datagram into an ICMP error
/// (`RT_TOS`, mask `IPTOS_TOS_MASK`); its precedence and ECN bits are not copied.
const TOS_MASK: u8 = 0x1e;

/// The IPv4 packet or IPv6 packet (told by the version nibble) to hand up to the local IP stack
/// in answer to `packet`, a packet it sent that is larger than `mtu`, the MTU of the way the
/// packet must go (the caller has compared them; this function does not); `None` if no answer may
/// be sent. The caller drops `packet` either way.
///
/// IPv4: destination unreachable, fragmentation needed (type 3 code 4, RFC 792) with the next-hop
/// MTU (RFC 1191 §4; `mtu` above 65535 is written as 65535, the largest IPv4 datagram), quoting
/// the IP header and the first 8 data bytes (RFC 792). It is answered whether or not DF is set:
/// this layer cannot fragment, and Linux answers both. IPv6: packet too big (type 2 code 0,
/// RFC 4443 §3.2) with `mtu`, quoting as much of the packet as keeps the reply within 1280 bytes
/// (§2.4 (c)).
///
/// The reply's header:
/// - source: the address the packet came from, which is the local interface address, as in Linux,
///   whose `icmp_send` leaves the source to the route back to the sender: a route to a local
///   address, whose preferred source is that address (docs/DEPLOYED.md "Linux IPoIB"). A host stack
///   behind a TUN device drops such an IPv4 packet as a martian unless `accept_local` is set on
///   the device (measured, same section);
/// - destination: the packet's source;
/// - TTL / hop limit 64 ([`REPLY_HOPS`]);
/// - IPv4: TOS precedence 6 plus the packet's TOS bits (as Linux); DF set and identification 0:
///   an atomic datagram (RFC 6864 §4.1: its ID may be any value), which is also what Linux writes
///   for an atomic datagram from an unconnected socket. Linux's ICMP socket sends with DF clear
///   and a hashed ID; DF set lets this reply be deterministic without reusing the ID of a
///   fragmentable datagram (RFC 6864 §4.1). It never crosses a link, so DF changes nothing else;
/// - IPv6: traffic class 0 (Linux's ICMPv6 socket) and flow label 0 (unlabeled, RFC 6437 §2).
///
/// `None` (RFC 1122 §3.2.2 for IPv4, RFC 4443 §2.4 (e) for IPv6) for:
/// - an ICMP error message, or an ICMPv4 type that is not a known query (as Linux, see
///   [`Icmpv4Type::is_error`]); an ICMPv6 error (types 0-127) or redirect (e.1, e.2), found past
///   the IPv6 extension headers;
/// - an IPv4 fragment other than the first;
/// - an IPv4 datagram to a multicast address or to 255.255.255.255 (a subnet-directed broadcast
///   cannot be told here: the caller must not ask for one). IPv6 answers a multicast destination:
///   packet too big is the exception of §2.4 (e.3);
/// - a source that does not identify a single host: IPv4 0.0.0.0, loopback, multicast, class E
///   (with 255.255.255.255); IPv6 unspecified or multicast (e.6);
/// - a malformed packet: empty, a version other than 4 or 6, shorter than its header or its
///   length fields, a bad IPv4 header checksum, the IPv4 reserved flag set, an IPv6 extension
///   header running past the payload, an ICMP message without its type byte.
pub(super) fn too_big_reply(packet: &[u8], mtu: u32) -> Option<Vec<u8>> {
    match packet.first()? >> 4 {
        4 => reply_v4(packet, Error::TooBig(mtu)),
        6 => reply_v6(packet, Error::TooBig(mtu)),
        _ => None,
    }
}

/// The answer to a unicast IP packet of the local stack that waited for its next hop's link-layer
/// address when the resolution failed (ARP, ND): Linux drops each packet queued on the
/// neighbour and answers it (`neigh_invalidate` calls the family's `error_report`), with an
/// ICMP destination unreachable, host unreachable (IPv4, `arp_error_report`; RFC 792) or an
/// ICMPv6 destination unreachable, address unreachable (`ndisc_error_report`; RFC 4443 §3.1;
/// RFC 4861 §7.2.2 MUST send it for each packet queued awaiting resolution), so that `ping` says "Destination Host Unreachable" and a
/// TCP connect fails at once with `EHOSTUNREACH` instead of timing out (docs/LINUX-DEVICE.md).
/// Same header, quoting and exceptions as [`too_big_reply`], but IPv6 answers no multicast
/// destination either (RFC 4443 §2.4 (e.3) excepts only packet too big).
pub(super) fn unreachable_reply(packet: &[u8]) -> Option<Vec<u8>> {
    match packet.first()? >> 4 {
        4 => reply_v4(packet, Error::Unreachable),
        6 => reply_v6(packet, Error::Unreachable),
        _ => None,
    }
}

/// Which ICMP error is built.
#[derive(Debug, Clone, Copy)]
enum Error {
    /// Fragmentation needed / packet too big, with the MTU.
    TooBig(u32),
    /// Host unreachable / address unreachable.
    Unreachable,
}

fn reply_v4(packet: &[u8], error: Error) -> Option<Vec<u8>> {
    let p = Ipv4Packet::new_checked(packet).ok()?;
    let h = Ipv4Repr::parse(&p).ok()?;
    if h.frag_offset != 0
        || h.dst_addr.is_multicast()
        || h.dst_addr.is_broadcast()
        || !single_host_v4(h.src_addr)
    {
        return None;
    }
    if h.protocol == IpProtocol::Icmp && Icmpv4Type::from(*p.payload().first()?).is_error() {
        return None;
    }
    let whole = &packet[..usize::from(p.total_len())];
    let icmp = match error {
        Error::TooBig(mtu) => {
            Icmpv4Repr::frag_needed(u16::try_from(mtu).unwrap_or(u16::MAX), whole).ok()?
        }
        Error::Unreachable => Icmpv4Repr::host_unreachable(whole).ok()?,
    };
    let reply = Ipv4Datagram {
        header: Ipv4Repr {
            tos: PREC_INTERNETCONTROL | (h.tos & TOS_MASK),
            ident: 0,
            dont_frag: true,
            more_frags: false,
            frag_offset: 0,
            ttl: REPLY_HOPS,
            protocol: IpProtocol::Icmp,
            src_addr: h.src_addr,
            dst_addr: h.src_addr,
            // Written by `emit`.
            payload_len: 0,
        },
        options: &[],
        payload: IpPayload::Icmpv4(icmp),
    };
    let mut b = vec![0u8; reply.buffer_len()];
    reply.emit(&mut b).ok()?;
    Some(b)
}

/// False for the IPv4 sources RFC 1122 §3.2.2 names as not defining a single host: zero,
/// loopback, broadcast, multicast, class E (240.0.0.0/4, which holds 255.255.255.255).
fn single_host_v4(a: Ipv4Addr) -> bool {
    !(a.is_unspecified() || a.is_loopback() || a.is_multicast() || a.octets()[0] >= 240)
}

fn reply_v6(packet: &[u8], error: Error) -> Option<Vec<u8>> {
    let p = Ipv6Packet::new_checked(packet).ok()?;
    let h = Ipv6Repr::parse(&p).ok()?;
    if h.src_addr.is_unspecified() || h.src_addr.is_multicast() {
        return None;
    }
    if matches!(error, Error::Unreachable) && h.dst_addr.is_multicast() {
        return None;
    }
    let payload = p.payload();
    if let Upper::Header(IpProtocol::Icmpv6, at) = upper_layer(h.next_header, payload)? {
        let t = Icmpv6Type::from(*payload.get(at)?);
        if t.is_error() || t == Icmpv6Type::Redirect {
            return None;
        }
    }
    let whole = &packet[..IPV6_HEADER_LEN + payload.len()];
    let reply = Ipv6Datagram {
        header: Ipv6Repr {
            traffic_class: 0,
            flow_label: 0,
            // Written by `emit`.
            payload_len: 0,
            next_header: IpProtocol::Icmpv6,
            hop_limit: REPLY_HOPS,
            src_addr: h.src_addr,
            dst_addr: h.src_addr,
        },
        payload: IpPayload::Icmpv6(match error {
            Error::TooBig(mtu) => Icmpv6Repr::packet_too_big(mtu, whole),
            Error::Unreachable => Icmpv6Repr::address_unreachable(whole),
        }),
    };
    let mut b = vec![0u8; reply.buffer_len()];
    reply.emit(&mut b).ok()?;
    Some(b)
}

/// Where an IPv6 packet's upper-layer header is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Upper {
    /// The first header that is not an extension header: its protocol and offset in the payload.
    Header(IpProtocol, usize),
    /// A fragment other than the first, which does not hold the upper-layer header
    /// (RFC 8200 §4.5).
    LaterFragment,
}

/// Walks the extension headers of an IPv6 payload whose first header is `next` (RFC 8200 §4):
/// hop-by-hop options (0), routing (43) and destination options (60), 8 bytes per unit of their
/// length field plus 8 (§4.3, §4.4, §4.6); fragment (44), 8 bytes (§4.5); authentication (51),
/// 4 bytes per unit of its length field plus 8 (RFC 4302 §2.2). `None` if a header runs past the
/// payload.
pub(super) fn upper_layer(next: IpProtocol, payload: &[u8]) -> Option<Upper> {
    let mut next = u8::from(next);
    let mut at = 0usize;
    loop {
        let len = match next {
            0 | 43 | 60 => (usize::from(*payload.get(at + 1)?) + 1) * 8,
            44 => {
                let off = payload.get(at + 2..at + 4)?;
                if u16::from_be_bytes([off[0], off[1]]) >> 3 != 0 {
                    return Some(Upper::LaterFragment);
                }
                8
            }
            51 => (usize::from(*payload.get(at + 1)?) + 2) * 4,
            _ => return Some(Upper::Header(IpProtocol::from(next), at)),
        };
        if at + len > payload.len() {
            return None;
        }
        next = payload[at];
        at += len;
    }
}

#[cfg(test)]
mod tests;
