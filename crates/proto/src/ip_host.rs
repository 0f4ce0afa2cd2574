//! A tiny IP endpoint above an IPoIB interface ([`crate::ipoib::Interface`]), for demos and tests:
//! it answers ICMP and ICMPv6 echo requests addressed to it, sends pings and records their replies
//! with round-trip times, records the UDP datagrams it receives (unicast to it, or to an IP
//! multicast group it joined), and sends UDP. It is no IP stack: no fragmentation, no options, no
//! routing. The caller hands it the packets the interface delivers ([`IpHost::handle_packet`]) and
//! sends what [`IpHost::poll_packet`] returns.
//!
//! Packets are built and checked with the wire crate's helpers (`Ipv4Repr`, `Ipv6Repr`,
//! `Icmpv4Repr`, `Icmpv6Repr`, `UdpRepr`): RFC 792 (ICMP echo), RFC 4443 §4.1-4.2 (ICMPv6 echo),
//! RFC 768 (UDP; the checksum is always sent, RFC 8200 §8.1 makes it mandatory over IPv6).
//!
//! Invariants: pure (time is a parameter, no IO); bad packets are counted, never panic; pings are
//! matched by (peer, identifier, sequence); everything is kept in insertion order or `BTreeMap`s.

use crate::time::Instant;
use ipoib_wire::ipoib::{
    Icmpv4Repr, Icmpv4Type, Icmpv6Repr, Icmpv6Type, IpPayload, IpProtocol, Ipv4Datagram,
    Ipv4Packet, Ipv4Repr, Ipv6Datagram, Ipv6Packet, Ipv6Repr, UdpRepr, UDP_HEADER_LEN,
};
use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::time::Duration;

/// Bytes of ICMP echo data, as `ping` sends by default (56).
pub const PING_DATA_LEN: usize = 56;
/// Hop limit / TTL of unicast packets (Linux default 64).
pub const UNICAST_HOPS: u8 = 64;
/// Hop limit / TTL of multicast packets (Linux default 1: the link only).
pub const MULTICAST_HOPS: u8 = 1;

/// One ping sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ping {
    /// Source address.
    pub src: IpAddr,
    /// Destination address.
    pub dst: IpAddr,
    /// Echo identifier.
    pub ident: u16,
    /// Echo sequence number.
    pub seq: u16,
    /// When the request was handed to the interface.
    pub sent_at: Instant,
    /// When the matching reply arrived.
    pub reply_at: Option<Instant>,
}

impl Ping {
    /// The round-trip time, once answered.
    pub fn rtt(&self) -> Option<Duration> {
        self.reply_at.map(|r| r - self.sent_at)
    }
}

/// A UDP datagram received.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UdpReceived {
    /// When it arrived.
    pub at: Instant,
    /// Source address and port.
    pub src: (IpAddr, u16),
    /// Destination address (ours or a group's) and port.
    pub dst: (IpAddr, u16),
    /// The payload.
    pub payload: Vec<u8>,
}

/// Path MTU messages kept by [`IpHost::too_big_mtus`].
pub const MTUS_KEEP: usize = 1024;

/// Counters of the IP endpoint.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct IpCounters {
    /// Echo requests answered.
    pub echo_answered: u64,
    /// Echo replies matched to a ping.
    pub echo_replies: u64,
    /// Echo replies that matched no ping (or a ping already answered).
    pub unmatched_replies: u64,
    /// UDP datagrams recorded.
    pub udp_received: u64,
    /// Packets that do not parse or whose checksum is wrong.
    pub bad: u64,
    /// Well-formed packets for nobody here (another address, a group not joined, other protocols).
    pub ignored: u64,
    /// ICMP "fragmentation needed" and ICMPv6 "packet too big" received (RFC 1191, RFC 8201).
    pub too_big: u64,
}

/// Why a packet could not be sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum IpError {
    /// No address of the destination's family to send from (IPv4 not configured, or the IPv6
    /// link-local address is still tentative).
    #[error("no source address of that family")]
    NoSourceAddress,
    /// The payload does not fit one IP packet.
    #[error("payload too long")]
    TooLong,
}

/// The endpoint. See the module docs.
#[derive(Debug, Clone)]
pub struct IpHost {
    ident: u16,
    v4: Option<Ipv4Addr>,
    /// Usable IPv6 addresses (those that passed DAD), link-local first.
    v6: Vec<Ipv6Addr>,
    next_seq: BTreeMap<IpAddr, u16>,
    ip_ident: u16,
    pings: Vec<Ping>,
    /// (peer, ident, seq) → index in `pings`.
    outstanding: BTreeMap<(IpAddr, u16, u16), usize>,
    groups: BTreeSet<IpAddr>,
    udp: Vec<UdpReceived>,
    out: VecDeque<Vec<u8>>,
    counters: IpCounters,
    /// Path MTUs learned from ICMP (at most [`MTUS_KEEP`]).
    mtus: Vec<(Instant, u32)>,
}

impl IpHost {
    /// An endpoint whose pings carry echo identifier `ident`, with IPv4 address `v4`.
    pub fn new(ident: u16, v4: Option<Ipv4Addr>) -> IpHost {
        IpHost {
            ident,
            v4,
            v6: Vec::new(),
            next_seq: BTreeMap::new(),
            ip_ident: 0,
            pings: Vec::new(),
            outstanding: BTreeMap::new(),
            groups: BTreeSet::new(),
            udp: Vec::new(),
            out: VecDeque::new(),
            counters: IpCounters::default(),
            mtus: Vec::new(),
        }
    }

    /// The IPv4 address.
    pub fn ipv4(&self) -> Option<Ipv4Addr> {
        self.v4
    }

    /// The usable IPv6 addresses.
    pub fn ipv6(&self) -> &[Ipv6Addr] {
        &self.v6
    }

    /// An IPv6 address passed DAD and may be used.
    pub fn address_ready(&mut self, a: Ipv6Addr) {
        if !self.v6.contains(&a) {
            self.v6.push(a);
            // Link-local first: it is the source for link-local destinations.
            self.v6.sort_by_key(|x| !is_link_local(x));
        }
    }

    /// True if `a` is one of our unicast addresses.
    pub fn is_local(&self, a: IpAddr) -> bool {
        match a {
            IpAddr::V4(a) => self.v4 == Some(a),
            IpAddr::V6(a) => self.v6.contains(&a),
        }
    }

    /// Every ping sent, oldest first.
    pub fn pings(&self) -> &[Ping] {
        &self.pings
    }

    /// UDP datagrams received, oldest first.
    pub fn udp_received(&self) -> &[UdpReceived] {
        &self.udp
    }

    /// Hands over the UDP datagrams received so far and forgets them, so that a long transfer
    /// does not keep every payload ([`IpCounters::udp_received`] keeps counting).
    pub fn take_udp_received(&mut self) -> Vec<UdpReceived> {
        std::mem::take(&mut self.udp)
    }

    /// IP multicast groups this endpoint listens to.
    pub fn groups(&self) -> &BTreeSet<IpAddr> {
        &self.groups
    }

    /// Counters.
    pub fn counters(&self) -> IpCounters {
        self.counters
    }

    /// Listens to UDP sent to `group` (the interface's join is the caller's business).
    pub fn listen(&mut self, group: IpAddr) {
        self.groups.insert(group);
    }

    /// Stops listening to `group`.
    pub fn unlisten(&mut self, group: IpAddr) {
        self.groups.remove(&group);
    }

    /// The next packet to hand to the interface.
    pub fn poll_packet(&mut self) -> Option<Vec<u8>> {
        self.out.pop_front()
    }

    /// True when [`IpHost::poll_packet`] has a packet.
    pub fn has_packet(&self) -> bool {
        !self.out.is_empty()
    }

    fn source_for(&self, dst: IpAddr) -> Result<IpAddr, IpError> {
        match dst {
            IpAddr::V4(_) => self.v4.map(IpAddr::V4),
            IpAddr::V6(d) => {
                let want_ll = is_link_local(&d) || d.segments()[0] & 0xff00 == 0xff00;
                self.v6
                    .iter()
                    .find(|a| is_link_local(a) == want_ll)
                    .or(self.v6.first())
                    .map(|a| IpAddr::V6(*a))
            }
        }
        .ok_or(IpError::NoSourceAddress)
    }

    /// Sends an echo request to `dst` (next sequence number for that peer, from 1); returns the
    /// ping's index in [`IpHost::pings`].
    pub fn ping(&mut self, now: Instant, dst: IpAddr) -> Result<usize, IpError> {
        let src = self.source_for(dst)?;
        let seq = self.next_seq.entry(dst).or_insert(0);
        *seq = seq.wrapping_add(1);
        let seq = *seq;
        let data = ping_data();
        let pkt = match (src, dst) {
            (IpAddr::V4(s), IpAddr::V4(d)) => {
                self.ip_ident = self.ip_ident.wrapping_add(1);
                icmpv4_echo(s, d, true, self.ident, seq, &data, self.ip_ident)
            }
            (IpAddr::V6(s), IpAddr::V6(d)) => icmpv6_echo(s, d, true, self.ident, seq, &data),
            _ => return Err(IpError::NoSourceAddress),
        };
        self.out.push_back(pkt);
        let i = self.pings.len();
        self.pings.push(Ping {
            src,
            dst,
            ident: self.ident,
            seq,
            sent_at: now,
            reply_at: None,
        });
        self.outstanding.insert((dst, self.ident, seq), i);
        Ok(i)
    }

    /// Sends a UDP datagram from port `src_port` to `dst`:`dst_port`.
    pub fn send_udp(
        &mut self,
        src_port: u16,
        dst: IpAddr,
        dst_port: u16,
        payload: &[u8],
    ) -> Result<(), IpError> {
        let src = self.source_for(dst)?;
        // IPv4's Total Length counts its 20-byte header (RFC 791); IPv6's Payload Length does not
        // count its 40 (RFC 8200 §3).
        let header = if dst.is_ipv4() { 20 } else { 0 };
        if payload.len() + UDP_HEADER_LEN + header > usize::from(u16::MAX) {
            return Err(IpError::TooLong);
        }
        let hops = if dst.is_multicast() {
            MULTICAST_HOPS
        } else {
            UNICAST_HOPS
        };
        self.ip_ident = self.ip_ident.wrapping_add(1);
        let pkt = udp_packet(src, src_port, dst, dst_port, payload, hops, self.ip_ident)
            .ok_or(IpError::NoSourceAddress)?;
        self.out.push_back(pkt);
        Ok(())
    }

    /// An IP packet the interface delivered.
    pub fn handle_packet(&mut self, now: Instant, p: &[u8]) {
        match p.first().map(|b| b >> 4) {
            Some(4) => self.handle_v4(now, p),
            Some(6) => self.handle_v6(now, p),
            _ => self.counters.bad += 1,
        }
    }

    fn handle_v4(&mut self, now: Instant, p: &[u8]) {
        let Ok(d) = Ipv4Datagram::parse(p) else {
            self.counters.bad += 1;
            return;
        };
        let (src, dst) = (d.header.src_addr, d.header.dst_addr);
        match d.payload {
            IpPayload::Icmpv4(i) if i.msg_type == Icmpv4Type::EchoRequest => {
                if self.v4 != Some(dst) {
                    self.counters.ignored += 1;
                    return;
                }
                let Some((id, seq)) = i.echo_ident_seq() else {
                    return;
                };
                self.ip_ident = self.ip_ident.wrapping_add(1);
                let r = icmpv4_echo(dst, src, false, id, seq, i.body, self.ip_ident);
                self.out.push_back(r);
                self.counters.echo_answered += 1;
            }
            IpPayload::Icmpv4(i) if i.msg_type == Icmpv4Type::EchoReply => {
                self.on_reply(now, IpAddr::V4(src), i.echo_ident_seq())
            }
            IpPayload::Icmpv4(i) if i.next_hop_mtu().is_some() => {
                self.on_too_big(now, u32::from(i.next_hop_mtu().unwrap_or(0)))
            }
            IpPayload::Udp(u) => self.on_udp(now, IpAddr::V4(src), IpAddr::V4(dst), &u),
            // A fragment: no reassembly here, so its UDP checksum cannot be verified.
            IpPayload::Raw(_) if d.header.protocol == IpProtocol::Udp => self.counters.bad += 1,
            IpPayload::Invalid { .. } => self.counters.bad += 1,
            _ => self.counters.ignored += 1,
        }
    }

    fn handle_v6(&mut self, now: Instant, p: &[u8]) {
        let Ok(d) = Ipv6Datagram::parse(p) else {
            self.counters.bad += 1;
            return;
        };
        let (src, dst) = (d.header.src_addr, d.header.dst_addr);
        match d.payload {
            IpPayload::Icmpv6(i) if i.msg_type == Icmpv6Type::EchoRequest => {
                if !self.v6.contains(&dst) {
                    self.counters.ignored += 1;
                    return;
                }
                let Some((id, seq)) = i.echo_ident_seq() else {
                    return;
                };
                self.out
                    .push_back(icmpv6_echo(dst, src, false, id, seq, i.body));
                self.counters.echo_answered += 1;
            }
            IpPayload::Icmpv6(i) if i.msg_type == Icmpv6Type::EchoReply => {
                self.on_reply(now, IpAddr::V6(src), i.echo_ident_seq())
            }
            IpPayload::Icmpv6(i) if i.mtu().is_some() => self.on_too_big(now, i.mtu().unwrap_or(0)),
            IpPayload::Udp(u) => self.on_udp(now, IpAddr::V6(src), IpAddr::V6(dst), &u),
            IpPayload::Invalid { .. } => self.counters.bad += 1,
            _ => self.counters.ignored += 1,
        }
    }

    /// A path MTU message: the MTU is recorded (a host with a path MTU cache would lower it;
    /// this one only keeps what it was told).
    fn on_too_big(&mut self, now: Instant, mtu: u32) {
        self.counters.too_big += 1;
        if self.mtus.len() < MTUS_KEEP {
            self.mtus.push((now, mtu));
        }
    }

    /// Path MTUs learned from ICMP, oldest first (at most a bounded number).
    pub fn too_big_mtus(&self) -> &[(Instant, u32)] {
        &self.mtus
    }

    fn on_reply(&mut self, now: Instant, from: IpAddr, id_seq: Option<(u16, u16)>) {
        let Some((id, seq)) = id_seq else {
            return;
        };
        match self.outstanding.remove(&(from, id, seq)) {
            Some(i) => {
                if let Some(p) = self.pings.get_mut(i) {
                    p.reply_at = Some(now);
                }
                self.counters.echo_replies += 1;
            }
            None => self.counters.unmatched_replies += 1,
        }
    }

    /// A UDP datagram whose checksum and length the wire parser verified (RFC 768).
    fn on_udp(&mut self, now: Instant, src: IpAddr, dst: IpAddr, u: &UdpRepr<'_>) {
        if !(self.is_local(dst) || self.groups.contains(&dst)) {
            self.counters.ignored += 1;
            return;
        }
        self.counters.udp_received += 1;
        self.udp.push(UdpReceived {
            at: now,
            src: (src, u.src_port),
            dst: (dst, u.dst_port),
            payload: u.payload.to_vec(),
        });
    }
}

fn is_link_local(a: &Ipv6Addr) -> bool {
    a.segments()[0] & 0xffc0 == 0xfe80
}

/// The echo data: a fixed pattern, so that the same seed gives the same bytes.
fn ping_data() -> Vec<u8> {
    (0..PING_DATA_LEN).map(|i| (0x10 + i) as u8).collect()
}

/// An IPv4 ICMP echo request or reply (RFC 792) with header identification `ip_ident`.
pub fn icmpv4_echo(
    src: Ipv4Addr,
    dst: Ipv4Addr,
    request: bool,
    ident: u16,
    seq: u16,
    data: &[u8],
    ip_ident: u16,
) -> Vec<u8> {
    let icmp = Icmpv4Repr::echo(request, ident, seq, data);
    let mut b = vec![0u8; 20 + icmp.buffer_len()];
    Ipv4Repr {
        tos: 0,
        ident: ip_ident,
        dont_frag: true,
        more_frags: false,
        frag_offset: 0,
        ttl: UNICAST_HOPS,
        protocol: IpProtocol::Icmp,
        src_addr: src,
        dst_addr: dst,
        payload_len: icmp.buffer_len() as u16,
    }
    .emit(&mut Ipv4Packet::new_unchecked(&mut b[..]));
    // The buffer is exactly header + message long: emit cannot fail.
    let _ = icmp.emit(&mut b[20..]);
    b
}

/// An ICMPv6 echo request or reply (RFC 4443 §4.1, §4.2).
pub fn icmpv6_echo(
    src: Ipv6Addr,
    dst: Ipv6Addr,
    request: bool,
    ident: u16,
    seq: u16,
    data: &[u8],
) -> Vec<u8> {
    let msg_type = if request {
        Icmpv6Type::EchoRequest
    } else {
        Icmpv6Type::EchoReply
    };
    let icmp = Icmpv6Repr {
        msg_type,
        code: 0,
        rest: u32::from(ident) << 16 | u32::from(seq),
        body: data,
    };
    let mut b = vec![0u8; 40 + icmp.buffer_len()];
    ipv6_header(
        src,
        dst,
        IpProtocol::Icmpv6,
        UNICAST_HOPS,
        icmp.buffer_len(),
        &mut b,
    );
    let _ = icmp.emit(src, dst, &mut b[40..]);
    b
}

fn ipv6_header(src: Ipv6Addr, dst: Ipv6Addr, next: IpProtocol, hops: u8, len: usize, b: &mut [u8]) {
    Ipv6Repr {
        traffic_class: 0,
        flow_label: 0,
        payload_len: len as u16,
        next_header: next,
        hop_limit: hops,
        src_addr: src,
        dst_addr: dst,
    }
    .emit(&mut Ipv6Packet::new_unchecked(b));
}

/// A UDP datagram in IPv4 or IPv6 (RFC 768), checksum filled; `None` when the families differ or
/// the datagram does not fit one IP packet.
pub fn udp_packet(
    src: IpAddr,
    src_port: u16,
    dst: IpAddr,
    dst_port: u16,
    payload: &[u8],
    hops: u8,
    ip_ident: u16,
) -> Option<Vec<u8>> {
    let udp = UdpRepr::new(src_port, dst_port, payload);
    let ulen = udp.buffer_len();
    let (hl, mut b) = match (src, dst) {
        (IpAddr::V4(s), IpAddr::V4(d)) => {
            let mut b = vec![0u8; 20 + ulen];
            Ipv4Repr {
                tos: 0,
                ident: ip_ident,
                dont_frag: false,
                more_frags: false,
                frag_offset: 0,
                ttl: hops,
                protocol: IpProtocol::Udp,
                src_addr: s,
                dst_addr: d,
                payload_len: u16::try_from(ulen).ok()?,
            }
            .emit(&mut Ipv4Packet::new_unchecked(&mut b[..]));
            (20, b)
        }
        (IpAddr::V6(s), IpAddr::V6(d)) => {
            let mut b = vec![0u8; 40 + ulen];
            ipv6_header(s, d, IpProtocol::Udp, hops, ulen, &mut b);
            (40, b)
        }
        _ => return None,
    };
    udp.emit(src, dst, &mut b[hl..]).ok()?;
    Some(b)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(us: u64) -> Instant {
        Instant::ZERO + Duration::from_micros(us)
    }

    // RFC 792 echo: the endpoint answers a request to its address and matches the reply.
    #[test]
    fn ping_answer_and_match_v4() {
        let (a4, b4) = (Ipv4Addr::new(10, 0, 0, 1), Ipv4Addr::new(10, 0, 0, 2));
        let mut a = IpHost::new(7, Some(a4));
        let mut b = IpHost::new(8, Some(b4));
        let i = a.ping(t(0), IpAddr::V4(b4)).unwrap();
        assert!(a.has_packet() && a.has_packet(), "asking does not take it");
        let req = a.poll_packet().unwrap();
        assert!(!a.has_packet());
        b.handle_packet(t(5), &req);
        let rep = b.poll_packet().expect("b answers");
        a.handle_packet(t(9), &rep);
        assert_eq!(a.pings()[i].rtt(), Some(Duration::from_micros(9)));
        assert_eq!(a.pings()[i].seq, 1);
        // A duplicate reply matches nothing.
        a.handle_packet(t(10), &rep);
        assert_eq!(a.counters().unmatched_replies, 1);
        // A request for another address is not answered.
        let mut c = IpHost::new(9, Some(Ipv4Addr::new(10, 0, 0, 3)));
        c.handle_packet(t(5), &req);
        assert!(c.poll_packet().is_none());
        assert_eq!(c.counters().ignored, 1);
    }

    // RFC 4443 §4.1-4.2; the source of a link-local ping is the link-local address.
    #[test]
    fn ping_v6_needs_a_ready_address() {
        let (la, lb): (Ipv6Addr, Ipv6Addr) =
            ("fe80::1".parse().unwrap(), "fe80::2".parse().unwrap());
        let mut a = IpHost::new(1, None);
        assert_eq!(
            a.ping(t(0), IpAddr::V6(lb)),
            Err(IpError::NoSourceAddress),
            "tentative address: no ping"
        );
        a.address_ready(la);
        let mut b = IpHost::new(2, None);
        b.address_ready(lb);
        a.ping(t(0), IpAddr::V6(lb)).unwrap();
        b.handle_packet(t(1), &a.poll_packet().unwrap());
        a.handle_packet(t(2), &b.poll_packet().unwrap());
        assert_eq!(a.pings()[0].src, IpAddr::V6(la));
        assert_eq!(a.pings()[0].rtt(), Some(Duration::from_micros(2)));
    }

    // RFC 768: checksum filled and checked; only joined groups are recorded.
    #[test]
    fn udp_to_group() {
        let g: IpAddr = Ipv4Addr::new(239, 1, 1, 1).into();
        let mut a = IpHost::new(1, Some(Ipv4Addr::new(10, 0, 0, 1)));
        let mut b = IpHost::new(2, Some(Ipv4Addr::new(10, 0, 0, 2)));
        a.send_udp(4000, g, 5000, b"hello").unwrap();
        let p = a.poll_packet().unwrap();
        b.handle_packet(t(1), &p);
        assert!(b.udp_received().is_empty(), "not listening");
        b.listen(g);
        b.handle_packet(t(2), &p);
        assert_eq!(b.udp_received()[0].payload, b"hello");
        assert_eq!(b.udp_received()[0].dst, (g, 5000));
        let mut bad = p.clone();
        let n = bad.len() - 1;
        bad[n] ^= 1;
        b.handle_packet(t(3), &bad);
        assert_eq!(b.counters().bad, 1, "checksum mismatch counted");
        assert_eq!(b.udp_received().len(), 1);
        assert_eq!(b.take_udp_received().len(), 1);
        assert!(b.udp_received().is_empty());
        assert_eq!(b.counters().udp_received, 1, "still counted");
    }

    // RFC 791 §3.1: an IPv4 total length counts the 20-byte header, so 65,507 bytes of UDP
    // payload at most; RFC 8200 §3: the IPv6 payload length does not count the 40-byte header,
    // so 65,527. One byte more is refused, not truncated.
    #[test]
    fn udp_payload_limits_per_family() {
        let (a4, b4) = (Ipv4Addr::new(10, 0, 0, 1), Ipv4Addr::new(10, 0, 0, 2));
        let mut a = IpHost::new(1, Some(a4));
        let mut b = IpHost::new(2, Some(b4));
        let big = vec![0xa5; 65_507];
        a.send_udp(4000, b4.into(), 5000, &big).unwrap();
        let p = a.poll_packet().unwrap();
        assert_eq!(p.len(), 65_535);
        b.handle_packet(t(1), &p);
        assert_eq!(b.udp_received()[0].payload, big);
        let too_big = vec![0; 65_508];
        assert_eq!(
            a.send_udp(4000, b4.into(), 5000, &too_big),
            Err(IpError::TooLong)
        );
        let (la, lb): (Ipv6Addr, Ipv6Addr) =
            ("fe80::1".parse().unwrap(), "fe80::2".parse().unwrap());
        let mut c = IpHost::new(3, None);
        c.address_ready(la);
        let mut d = IpHost::new(4, None);
        d.address_ready(lb);
        let big6 = vec![0x5a; 65_527];
        c.send_udp(4000, lb.into(), 5000, &big6).unwrap();
        let p = c.poll_packet().unwrap();
        assert_eq!(p.len(), 40 + 65_535);
        d.handle_packet(t(1), &p);
        assert_eq!(d.udp_received()[0].payload, big6);
        assert_eq!(
            c.send_udp(4000, lb.into(), 5000, &vec![0; 65_528]),
            Err(IpError::TooLong)
        );
    }
}
