//! The receive path: a UD receive completion → checks → ARP, ND, or an IP packet for the IP layer.
//! References are to draft-ietf-ipoib-ip-over-infiniband-06.
//!
//! Checks, in order, each dropping with its own counted reason: link up; the P_Key of the
//! partition (§9.1 e: UD peers communicate only inside one partition); the broadcast group's Q_Key
//! (§9.1 d, §9.1.2 b); not our own multicast looped back (Linux `ipoib_ib_handle_rx_wc`: same
//! source QPN and LID); a 4-byte encapsulation header (§6) naming IPv4, IPv6 or ARP. The HCA
//! already enforces the P_Key and Q_Key; the agent checks what it is told again, so a frame from
//! another partition or with a wrong Q_Key never reaches IP even with a lax HCA. Frames with and
//! without a GRH are handled alike (§6: MUST handle both).

use super::{DropReason, Interface, InterfaceEvent, IpBuf, Link, UdReceived};
use crate::time::Instant;
use ipoib_wire::ipoib::encap::HEADER_LEN as ENCAP_HEADER_LEN;
use ipoib_wire::ipoib::{
    ArpPacket, ArpRepr, EncapHeader, EtherType, Icmpv6Type, IpProtocol, Ipv4Packet, Ipv6Packet,
};

impl Interface {
    /// A UD receive completion for the interface's QP (the data is the encapsulation header and
    /// the datagram, the GRH already taken off).
    pub fn handle_datagram(&mut self, now: Instant, d: UdReceived) {
        self.receive(now, d);
        self.settle_deadline();
    }

    fn receive(&mut self, now: Instant, d: UdReceived) {
        self.counters.rx_frames += 1;
        let Some(p) = self.params.filter(|_| self.link == Link::Up) else {
            return self.drop1(DropReason::NotUp);
        };
        if !d.pkey.same_partition(self.cfg.pkey) {
            return self.drop1(DropReason::PkeyMismatch);
        }
        if d.qkey != p.record.qkey {
            return self.drop1(DropReason::QkeyMismatch);
        }
        let lid = self.port.map(|p| p.lid).unwrap_or(0);
        if d.src_qpn == self.cfg.qpn && d.slid == lid {
            return self.drop1(DropReason::Loopback);
        }
        // draft-kashyap-ipoib-ipv6-01 §7: in the legacy profile an IPv6 datagram follows the DETH
        // with no protocol header, told by its first nibble (§7 b). A 4-byte header starts with an
        // EtherType (0x08.., 0x80.., 0x86..), never with nibble 6. IPv6 behind that header is
        // accepted too: §7 neither requires nor forbids it (it names such a header as its option
        // a, not defined), a choice recorded in docs/conformance/ipoib-ud.md "Legacy profile".
        if self.cfg.legacy_ipv6 && d.data.first().is_some_and(|b| b >> 4 == 6) {
            return self.receive_ipv6(now, d.data, 0, Some(d.slid));
        }
        self.receive_encapsulated(now, d.data, Some(d.slid));
    }

    /// An encapsulated frame that passed the checks of its transport: from a UD datagram (with
    /// its source LID) or from a connection (RFC 4755 §7: every unicast is accepted on any mode;
    /// address resolution belongs on UD, so ARP and ND from a connection are dropped).
    pub(super) fn receive_encapsulated(&mut self, now: Instant, data: Vec<u8>, slid: Option<u16>) {
        let Ok(h) = EncapHeader::new_checked(&data[..]) else {
            return self.drop1(DropReason::Malformed);
        };
        let body = h.payload();
        match h.ethertype() {
            EtherType::Arp => match (ArpRepr::parse(&ArpPacket::new_unchecked(body)), slid) {
                (Ok(a), Some(slid)) => self.on_arp(now, a, slid),
                (Ok(_), None) => self.drop1(DropReason::Unsupported),
                (Err(_), _) => self.drop1(DropReason::Malformed),
            },
            EtherType::Ipv4 => {
                if Ipv4Packet::new_checked(body).is_err() {
                    return self.drop1(DropReason::Malformed);
                }
                self.deliver(IpBuf::new(data, ENCAP_HEADER_LEN));
            }
            EtherType::Ipv6 => self.receive_ipv6(now, data, ENCAP_HEADER_LEN, slid),
            _ => self.drop1(DropReason::Unsupported),
        }
    }

    /// An IPv6 datagram that starts at byte `start` of `data` (after the 4-byte header, or at 0 in
    /// the legacy profile's bare frames): ND for the interface, anything else for the IP layer.
    fn receive_ipv6(&mut self, now: Instant, data: Vec<u8>, start: usize, slid: Option<u16>) {
        let body = &data[start..];
        let Ok(ip) = Ipv6Packet::new_checked(body) else {
            return self.drop1(DropReason::Malformed);
        };
        // RFC 4861 §4: the ICMPv6 type, the first byte of the message, says ND.
        let is_nd = ip.next_header() == IpProtocol::Icmpv6
            && ip
                .payload()
                .first()
                .is_some_and(|&t| Icmpv6Type::from(t).is_nd());
        if is_nd {
            match slid {
                Some(slid) if self.cfg.ipv6 => self.on_nd(now, body, slid),
                Some(_) => {}
                None => self.drop1(DropReason::Unsupported),
            }
            return;
        }
        self.deliver(IpBuf::new(data, start));
    }

    /// A neighbour at `gid` was just heard from `slid`. A cached path inside the subnet that names
    /// another LID is stale (the peer's LID changed): forget it so that the answer waits for a
    /// fresh PathRecord instead of going to the old LID. Linux waits for the SM's reregistration
    /// instead; this is a local robustness choice.
    pub(super) fn note_source(&mut self, gid: ipoib_wire::Gid, slid: u16) {
        if let Some(p) = self.paths.get(&gid) {
            if !p.needs_grh() && p.dlid != slid {
                self.paths.forget(&gid);
            }
        }
    }

    fn deliver(&mut self, packet: IpBuf) {
        self.counters.delivered += 1;
        self.events.push_back(InterfaceEvent::Deliver(packet));
    }
}
