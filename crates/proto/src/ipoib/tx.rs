//! The transmit path: an IP packet from above → next hop → neighbour (ARP/ND) → path (PathRecord)
//! → UD datagram, or → multicast group (§11 rules, `mcast.rs`). References are to
//! draft-ietf-ipoib-ip-over-infiniband-06.
//!
//! Every datagram starts with the 4-byte encapsulation header whose type names the protocol (§6:
//! SHALL indicate the protocol per table 1), goes to the QPN of the neighbour's link-layer address
//! (§9.1.1 b: all IP traffic to the interface MUST go to that QPN) with the broadcast group's Q_Key
//! (§9.1.2 b); in the legacy profile a unicast IPv6 datagram goes with the Q_Key its neighbour
//! named in its ND option (draft-kashyap-ipoib-ipv6-01 §5.1.3, `push_ud`).

use super::mcast::McFrame;
use super::neighbour::Lookup;
use super::path::{path_query, PathInfo, PathLookup, QueuedFrame};
use super::{DropReason, Interface, Link, LogLevel, Pending, UdTransmit};
use crate::mad_agent::GrhAddr;
use crate::sa::{RequestId, SaClientError, SaResponse};
use crate::time::Instant;
use ipoib_wire::ipoib::encap::HEADER_LEN as ENCAP_HEADER_LEN;
use ipoib_wire::ipoib::{EncapHeader, EncapRepr, EtherType, HwAddr, Ipv4Packet, Ipv6Packet};
use ipoib_wire::sa::{SaAttribute, SaMadRepr};
use ipoib_wire::{Gid, QKey};
use std::net::{IpAddr, Ipv4Addr};

/// The encapsulation header (§6, figure 3: type, reserved zero) followed by `payload`.
pub(super) fn encap(t: EtherType, payload: &[u8]) -> Vec<u8> {
    let mut v = ip_frame(payload);
    encap_in_place(t, &mut v);
    v
}

/// Writes the encapsulation header of type `t` over the first [`ENCAP_HEADER_LEN`] bytes of
/// `frame` (which [`Interface::send_ip_frame`] callers leave free for it).
fn encap_in_place(t: EtherType, frame: &mut [u8]) {
    if let Some(h) = frame.get_mut(..ENCAP_HEADER_LEN) {
        EncapRepr::new(t).emit(&mut EncapHeader::new_unchecked(h));
    }
}

/// An IP packet in a buffer that starts with [`ENCAP_HEADER_LEN`] free bytes, as
/// [`Interface::send_ip_frame`] takes it: one copy of `packet`.
pub fn ip_frame(packet: &[u8]) -> Vec<u8> {
    let mut v = Vec::with_capacity(ENCAP_HEADER_LEN + packet.len());
    v.extend_from_slice(&[0; ENCAP_HEADER_LEN]);
    v.extend_from_slice(packet);
    v
}

impl Interface {
    /// An IP packet (IPv4 or IPv6, told by its version) from the IP layer. It is sent, queued
    /// behind address resolution, or dropped and counted; never an error to the caller (IP is a
    /// datagram service).
    pub fn send_ip(&mut self, now: Instant, packet: &[u8]) {
        self.send_ip_frame(now, ip_frame(packet));
    }

    /// [`Interface::send_ip`] for a packet that comes in a buffer of its own after
    /// [`ENCAP_HEADER_LEN`] free bytes ([`ip_frame`]): the encapsulation header (§6) is written
    /// there, and the buffer is the frame that goes out, with no copy of the packet.
    pub fn send_ip_frame(&mut self, now: Instant, frame: Vec<u8>) {
        self.transmit_ip(now, frame);
        self.settle_deadline();
    }

    fn transmit_ip(&mut self, now: Instant, frame: Vec<u8>) {
        if self.link != Link::Up {
            return self.drop1(DropReason::NotUp);
        }
        match frame.get(ENCAP_HEADER_LEN).map(|b| b >> 4) {
            Some(4) => self.send_ipv4(now, frame),
            Some(6) => self.send_ipv6(now, frame),
            _ => self.drop1(DropReason::Malformed),
        }
    }

    fn send_ipv4(&mut self, now: Instant, mut frame: Vec<u8>) {
        let packet = &frame[ENCAP_HEADER_LEN..];
        let Ok(p) = Ipv4Packet::new_checked(packet) else {
            return self.drop1(DropReason::Malformed);
        };
        let dst = p.dst_addr();
        let len = packet.len();
        encap_in_place(EtherType::Ipv4, &mut frame);
        if len > self.mtu() as usize {
            // Linux `ipoib_send`: too long for the link, answered as for a connection.
            self.drop1(DropReason::TooBig);
            return self.reply_too_big(&frame, self.mtu());
        }
        let v4 = self.cfg.ipv4;
        let bcast = dst == Ipv4Addr::BROADCAST || v4.is_some_and(|c| c.broadcast() == dst);
        if (bcast || dst.is_multicast()) && len > self.ud_mtu() as usize {
            // RFC 4755 §2.1: multicast stays on UD, whose MTU is smaller in connected mode. No
            // ICMP answers a broadcast (RFC 1122 §3.2.2), and `too_big_reply` answers no IPv4
            // multicast either.
            if bcast {
                return self.drop1(DropReason::TooBigForPath);
            }
            return self.answer_too_big(&frame, self.ud_mtu());
        }
        if bcast {
            // §4: the limited broadcast address SHALL map to the broadcast GID; §5: the broadcast
            // group serves net- and subnet-directed broadcasts too.
            let b = self.bcast_mgid();
            return self.send_multicast(now, b, frame, None);
        }
        if dst.is_multicast() {
            let Ok(mgid) = self.group_mgid(IpAddr::V4(dst)) else {
                return self.drop1(DropReason::Malformed);
            };
            let fb = self.fallback_for(IpAddr::V4(dst));
            return self.send_multicast(now, mgid, frame, fb);
        }
        let next_hop = match v4 {
            Some(c) if c.on_link(dst) => dst,
            Some(Ipv4Config {
                gateway: Some(g), ..
            }) => g,
            _ => return self.drop1(DropReason::NoRoute),
        };
        self.resolve_and_send(now, IpAddr::V4(next_hop), frame);
    }

    fn send_ipv6(&mut self, now: Instant, mut frame: Vec<u8>) {
        let packet = &frame[ENCAP_HEADER_LEN..];
        let Ok(p) = Ipv6Packet::new_checked(packet) else {
            return self.drop1(DropReason::Malformed);
        };
        if !self.cfg.ipv6 {
            return self.drop1(DropReason::NoRoute);
        }
        let dst = p.dst_addr();
        let len = packet.len();
        encap_in_place(EtherType::Ipv6, &mut frame);
        if len > self.ipv6_mtu() as usize {
            self.drop1(DropReason::TooBig);
            return self.reply_too_big(&frame, self.ipv6_mtu());
        }
        if dst.is_multicast() && len > self.ud_mtu() as usize {
            return self.answer_too_big(&frame, self.ud_mtu());
        }
        if dst.is_multicast() {
            let Ok(mgid) = self.group_mgid(IpAddr::V6(dst)) else {
                return self.drop1(DropReason::Malformed);
            };
            let fb = self.fallback_for(IpAddr::V6(dst));
            return self.send_multicast(now, mgid, frame, fb);
        }
        // Every IPv6 destination is treated as on-link (no routing table here).
        self.resolve_and_send(now, IpAddr::V6(dst), frame);
    }

    /// Neighbour stage: send, or queue (at most `queue_len`) and solicit.
    pub(super) fn resolve_and_send(&mut self, now: Instant, ip: IpAddr, frame: Vec<u8>) {
        match self.neigh.lookup(now, ip) {
            Lookup::Send(hw) => self.send_unicast(now, hw, frame),
            Lookup::SendAndProbe(hw) => {
                self.send_unicast(now, hw, frame);
                self.solicit(now, ip, Some(hw));
            }
            Lookup::Resolve { solicit } => {
                if !self.neigh.enqueue(&ip, frame) {
                    self.drop1(DropReason::NeighbourQueueFull);
                }
                if solicit {
                    self.solicit(now, ip, None);
                }
            }
            Lookup::TableFull => self.drop1(DropReason::NeighbourTableFull),
        }
    }

    /// The link-layer address of `ip` if the neighbour table has it; otherwise the resolution a
    /// packet to `ip` would start (ARP §9.2, ND §9.3) starts, and `None` comes back: ask again
    /// later. For users that need the address itself, not a packet sent (the IP CM service
    /// resolves a destination IP to a GID, Annex A11 §A11.3).
    pub fn resolve(&mut self, now: Instant, ip: IpAddr) -> Option<HwAddr> {
        if self.link != Link::Up {
            return None;
        }
        let r = match self.neigh.lookup(now, ip) {
            Lookup::Send(hw) => Some(hw),
            Lookup::SendAndProbe(hw) => {
                self.solicit(now, ip, Some(hw));
                Some(hw)
            }
            Lookup::Resolve { solicit } => {
                if solicit {
                    self.solicit(now, ip, None);
                }
                None
            }
            Lookup::TableFull => None,
        };
        self.settle_deadline();
        r
    }

    /// The PathRecord to `dgid` if the path cache has it; otherwise its query starts (one per GID,
    /// as a packet to it would start it) and `None` comes back: ask again later.
    pub fn path_to(&mut self, now: Instant, dgid: Gid) -> Option<ipoib_wire::sa::PathRecordRepr> {
        if self.link != Link::Up {
            return None;
        }
        let r = match self.paths.lookup(now, dgid) {
            PathLookup::Use(info, refresh) => {
                if refresh {
                    self.start_path_query(now, dgid);
                }
                Some(info.record)
            }
            PathLookup::Wait { start_query } => {
                if start_query {
                    self.start_path_query(now, dgid);
                }
                None
            }
            PathLookup::Failed | PathLookup::TableFull => None,
        };
        self.settle_deadline();
        r
    }

    /// Sends an ARP request or a neighbour solicitation for `ip`: multicast to resolve, unicast
    /// to `probe` to confirm.
    pub(super) fn solicit(&mut self, now: Instant, ip: IpAddr, probe: Option<HwAddr>) {
        match ip {
            IpAddr::V4(a) => self.send_arp_request(now, a, probe),
            IpAddr::V6(a) => self.send_ns(now, a, probe),
        }
    }

    /// Neighbour timers: resend solicitations, drop what failed.
    pub(super) fn neighbour_timeouts(&mut self, now: Instant) {
        for d in self.neigh.handle_timeout(now) {
            match d {
                super::neighbour::Due::Solicit(ip) => self.solicit(now, ip, None),
                super::neighbour::Due::Probe(ip, hw) => self.solicit(now, ip, Some(hw)),
                super::neighbour::Due::Failed(_, frames) => {
                    self.drop_count(DropReason::ResolutionFailed, frames.len());
                    for f in frames {
                        self.reply_unreachable(&f);
                    }
                }
                super::neighbour::Due::Forgotten(_, hw) => {
                    let same = |o: &HwAddr| o.qpn == hw.qpn && o.gid == hw.gid;
                    if !self
                        .neigh
                        .snapshot()
                        .iter()
                        .any(|n| n.hw.as_ref().is_some_and(same))
                    {
                        self.cm_neighbour_gone(now, &hw);
                    }
                }
            }
        }
    }

    /// Path stage: send on a known path, or queue behind its PathRecord query (one per new
    /// destination GID; docs/DEPLOYED.md: at most 3 frames queued).
    pub(super) fn send_unicast(&mut self, now: Instant, hw: HwAddr, frame: Vec<u8>) {
        let gid = hw.gid;
        match self.paths.lookup(now, gid) {
            PathLookup::Use(info, refresh) => {
                self.push_unicast(now, info, hw, frame);
                if refresh {
                    self.start_path_query(now, gid);
                }
            }
            PathLookup::Wait { start_query } => {
                let q = QueuedFrame {
                    qpn: hw.qpn,
                    flags: hw.flags,
                    data: frame,
                };
                if !self.paths.enqueue(&gid, q) {
                    self.drop1(DropReason::PathQueueFull);
                }
                if start_query {
                    self.start_path_query(now, gid);
                }
            }
            PathLookup::Failed => self.drop1(DropReason::PathFailed),
            PathLookup::TableFull => self.drop1(DropReason::PathTableFull),
        }
    }

    fn start_path_query(&mut self, now: Instant, gid: Gid) {
        let tclass = self.params.map(|p| p.record.tclass).unwrap_or(0);
        let (rec, mask) = path_query(self.gid(), gid, self.cfg.pkey.full(), tclass);
        // Asked once, as Linux asks (`PATH_QUERY_TIMEOUT`): a query the SA does not answer (an
        // SM that went Standby, or a new master in its first sweep, ignores SA MADs) fails after
        // a second, and the next packet asks again, of the SA the port names then.
        let dest = self.sa_dest();
        let mad = SaMadRepr::path_get(0, rec, mask);
        let id = self
            .sa
            .request_once(now, mad, dest, super::timer::PATH_QUERY_TIMEOUT);
        self.paths.set_query(&gid, id);
        self.requests.insert(id, Pending::Path(gid));
    }

    pub(super) fn on_path_result(
        &mut self,
        now: Instant,
        gid: Gid,
        id: RequestId,
        result: Result<SaResponse, SaClientError>,
    ) {
        let info = match &result {
            Ok(r) => match (&r.attribute, r.records.first()) {
                (Some(SaAttribute::PathRecord(p)), _)
                | (None, Some(SaAttribute::PathRecord(p))) => Some(PathInfo::from_record(p)),
                _ => None,
            },
            Err(_) => None,
        };
        if let Err(e) = &result {
            self.log(
                LogLevel::Warn,
                format_args!("path record for {} failed: {e}", gid.to_ipv6()),
            );
        }
        // An SA that answered "no path" is not asked again at once; one that did not answer
        // may have been an SM that is no longer master (docs/IPOIB-JOINS.md).
        let hold = !matches!(result, Err(SaClientError::Timeout));
        let Some((res, frames)) = self.paths.complete(now, &gid, id, info, hold) else {
            return;
        };
        match res {
            Some(info) => {
                for f in frames {
                    self.push_unicast(now, info, HwAddr::new(f.flags, f.qpn, gid), f.data);
                }
            }
            None => self.drop_count(DropReason::PathFailed, frames.len()),
        }
    }

    /// A unicast frame on `info`'s path to `hw`: over a connection in connected mode (RFC 4755),
    /// else as a UD datagram, one too large for UD answered with ICMP.
    fn push_unicast(&mut self, now: Instant, info: PathInfo, hw: HwAddr, data: Vec<u8>) {
        if self.goes_connected(&hw, &data) {
            let record = info.record;
            return self.cm_transmit(now, (info, record), hw, data);
        }
        let ud = self.ud_mtu() as usize;
        if data.len().saturating_sub(4) > ud {
            return self.answer_too_big(&data, ud as u32);
        }
        self.push_ud(info, hw.gid, hw.qpn, data);
    }

    /// A unicast datagram on `info`'s path: GRH when the path needs it or configured (§6), and
    /// always for a legacy-profile IPv6 datagram (draft-kashyap-ipoib-ipv6-01 §7: "The GRH header
    /// will always be used"; the destination GID is the local prefix ‖ the GUID of the option).
    /// The Q_Key is the broadcast group's (§9.1.2 b), or for a legacy-profile IPv6 datagram the
    /// one its neighbour named (`legacy_peer_qkey`).
    pub(super) fn push_ud(&mut self, info: PathInfo, dgid: Gid, qpn: u32, mut data: Vec<u8>) {
        let Some(p) = self.params else {
            return self.drop1(DropReason::NotUp);
        };
        let legacy = self.legacy_unframe(&mut data);
        let qkey = legacy
            .then(|| self.legacy_peer_qkey(&data, dgid, qpn))
            .flatten()
            .unwrap_or(p.record.qkey);
        let grh = (info.needs_grh() || self.cfg.unicast_grh || legacy).then_some(GrhAddr {
            gid: dgid,
            flow_label: info.flow_label,
            hop_limit: info.hop_limit,
            tclass: info.tclass,
        });
        self.out.push_back(UdTransmit {
            dlid: info.dlid,
            sl: info.sl,
            grh,
            remote_qpn: qpn & 0x00ff_ffff,
            qkey,
            rate: info.rate,
            data,
        });
    }

    /// The Q_Key for a bare IPv6 datagram `packet` of the legacy profile going to QPN `qpn` at
    /// `dgid`: the one its neighbour named with that address in its ND option
    /// (draft-kashyap-ipoib-ipv6-01 §5.1.3: "the corresponding Q_Key the endpoints intend to use";
    /// §2.2 counts the Q_Key among what a sender must know of its peer), kept in the neighbour
    /// entry (`neighbour.rs`). The neighbour is the datagram's destination, since every IPv6
    /// destination is on-link (`send_ipv6`). `None` (the broadcast group's Q_Key) when there is no
    /// such entry, when it has another address now, or when the Q_Key named is controlled: this
    /// QP may not send one, and in a send request the controlled bit asks for the QP's own Q_Key
    /// (IBA 1 §10.2.4), which is the broadcast group's.
    fn legacy_peer_qkey(&self, packet: &[u8], dgid: Gid, qpn: u32) -> Option<QKey> {
        let dst = Ipv6Packet::new_checked(packet).ok()?.dst_addr();
        self.neigh
            .qkey(&IpAddr::V6(dst), qpn, dgid)
            .filter(|q| !q.is_controlled())
    }

    /// draft-kashyap-ipoib-ipv6-01 §7: in the legacy profile an IPv6 datagram goes over UD with
    /// no protocol header ("no additional header is defined in the payload"), so the 4-byte header
    /// of draft-ietf-ipoib-ip-over-infiniband-06 §6 is taken off a UD frame of type IPv6 just
    /// before it is sent. True if it was. IPv4 and ARP keep theirs (the legacy draft is IPv6 only).
    pub(super) fn legacy_unframe(&self, data: &mut Vec<u8>) -> bool {
        let v6: u16 = EtherType::Ipv6.into();
        if !self.cfg.legacy_ipv6 || data.get(..2) != Some(&v6.to_be_bytes()[..]) {
            return false;
        }
        data.drain(..ENCAP_HEADER_LEN);
        true
    }
}

impl Interface {
    /// Sends a frame to `mgid` by the rules of §11: member (any join state) → send; join in
    /// progress → wait; known absent → all routers if wide scope, else drop; unknown → join
    /// SendOnlyNonMember (which tells whether the group exists) and send once joined. While a join
    /// is pending at most `InterfaceConfig::mcast_queue_len` frames wait in the group (Linux's
    /// `IPOIB_MAX_MCAST_QUEUE`, docs/IPOIB-JOINS.md) and `max_mcast_queued` in all groups.
    pub(super) fn send_multicast(
        &mut self,
        now: Instant,
        mgid: Gid,
        data: Vec<u8>,
        fallback: Option<Gid>,
    ) {
        if let Some(g) = self.mc.map.get_mut(&mgid) {
            g.used = now;
            if !g.have.is_empty() {
                let mlid = g.mlid;
                self.push_mcast(mgid, mlid, data);
                return;
            }
            if g.query.is_some() || g.retry.is_some() || !g.want().is_empty() {
                let room = g.queue.len() < self.cfg.mcast_queue_len && self.mc_room();
                match self.mc.map.get_mut(&mgid) {
                    Some(g) if room => g.queue.push_back(McFrame { data, fallback }),
                    _ => self.drop1(DropReason::McastQueueFull),
                }
                self.mc_kick(now);
                return;
            }
        }
        if self.mc.absent.get(&mgid).is_some_and(|t| *t > now) {
            return self.mc_fallback(now, McFrame { data, fallback });
        }
        if !self.mc.map.contains_key(&mgid) && self.send_only_groups() >= self.cfg.max_mcast_groups
        {
            // Flood protection (`InterfaceConfig::max_mcast_groups`): a stack sending to ever new
            // groups (ND for a sweep of unknown addresses) does not grow the table or the SA's
            // work without bound.
            return self.drop1(DropReason::McastTableFull);
        }
        if !self.mc_room() {
            // The next frame to the group tries again.
            return self.drop1(DropReason::McastQueueFull);
        }
        let g = self.mc.map.entry(mgid).or_default();
        g.send_only = true;
        g.used = now;
        g.queue.push_back(McFrame { data, fallback });
        self.mc_kick(now);
    }

    /// Whether all multicast groups together hold fewer than `max_mcast_queued` frames.
    fn mc_room(&self) -> bool {
        let queued: usize = self.mc.map.values().map(|g| g.queue.len()).sum();
        queued < self.cfg.max_mcast_queued
    }
}

use super::Ipv4Config;
