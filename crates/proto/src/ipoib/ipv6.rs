//! IPv6 over IPoIB: the link-local address from the port GUID (draft-ietf-ipoib-ip-over-infiniband-06
//! §8, §8.1), stateless autoconfiguration from an advertised prefix (RFC 4862 §5.5.3), duplicate
//! address detection (RFC 4862 §5.4), Neighbor Discovery with the IPoIB link-layer address option
//! (§9.3; RFC 4861), and the RA MTU rule of §7 (an MTU above the link MTU is logged and ignored).
//!
//! With the legacy profile (draft-kashyap-ipoib-ipv6-01) the link-layer option is that draft's
//! (§5.1: LID, flags, QPN, Q_Key, GUID), multicast groups map to FF1y:3333:: (§4.1), and IPv6
//! goes over UD with no 4-byte header and always a GRH (§7; `tx.rs` `legacy_unframe`, `rx.rs`).
//!
//! Invariants: an address is used as a source only once DAD passed; the interface is a
//! FullMember of all-nodes and of the solicited-node group of every address it holds
//! (RFC 4861 §7.2.1, RFC 4862 §5.4.2) while the link is up, and DAD starts only once the
//! solicited-node group is joined.

use super::neighbour::Learn;
use super::timer::RETRANS_TIMER;
use super::tx::encap;
use super::{DropReason, Interface, InterfaceEvent, Link, LogLevel};
use crate::time::Instant;
use ipoib_wire::ipoib::addr::iid_from_guid;
use ipoib_wire::ipoib::legacy::{LegacyCapabilities, LegacyLlaRepr};
use ipoib_wire::ipoib::nd::NdOptionIter;
use ipoib_wire::ipoib::{
    EtherType, HwAddr, HwAddrFlags, IpProtocol, Ipv6Packet, Ipv6Repr, NdMessage, NdOptionRepr,
    NdOptionType, NdProfile, NdRepr,
};
use ipoib_wire::Gid;
use ipoib_wire::QKey;
use std::collections::BTreeMap;
use std::net::{IpAddr, Ipv6Addr};

/// DAD state of an address (RFC 4862 §5.4).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AddrState {
    /// Being checked.
    Tentative,
    /// Usable.
    Preferred,
    /// Another node has it; not used.
    Duplicate,
}

/// An IPv6 address of the interface.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ipv6Address {
    /// The address.
    pub addr: Ipv6Addr,
    /// Its prefix length.
    pub prefix_len: u8,
    /// DAD state.
    pub state: AddrState,
}

#[derive(Debug, Default)]
pub(super) struct V6State {
    pub addrs: Vec<Ipv6Address>,
    /// Running DADs and when each ends.
    dad: BTreeMap<Ipv6Addr, Instant>,
    /// Unsolicited Neighbor Advertisements still to send (RFC 4861 §7.2.6): when the next one is
    /// due and how many remain.
    announce: BTreeMap<Ipv6Addr, (Instant, u8)>,
}

impl V6State {
    pub fn add(&mut self, addr: Ipv6Addr, prefix_len: u8) -> bool {
        if self.addrs.iter().any(|a| a.addr == addr) {
            return false;
        }
        self.addrs.push(Ipv6Address {
            addr,
            prefix_len,
            state: AddrState::Tentative,
        });
        true
    }
    fn find(&self, addr: Ipv6Addr) -> Option<AddrState> {
        self.addrs.iter().find(|a| a.addr == addr).map(|a| a.state)
    }
    fn set(&mut self, addr: Ipv6Addr, s: AddrState) {
        for a in self.addrs.iter_mut().filter(|a| a.addr == addr) {
            a.state = s;
        }
    }
    /// Addresses whose DAD was running go back to tentative (the link went down mid-check).
    /// Unsent announcements are dropped too.
    pub fn stop_dad(&mut self) {
        self.dad.clear();
        self.announce.clear();
    }
    #[inline]
    pub fn next_deadline(&self) -> Option<Instant> {
        if self.dad.is_empty() && self.announce.is_empty() {
            return None;
        }
        let dad = self.dad.values().copied().min();
        let na = self.announce.values().map(|(t, _)| *t).min();
        super::timer::earliest(dad, na)
    }
    fn source(&self) -> Option<Ipv6Addr> {
        let ok = |a: &&Ipv6Address| a.state == AddrState::Preferred;
        let ll = |a: &&Ipv6Address| a.addr.segments()[0] & 0xffc0 == 0xfe80;
        self.addrs
            .iter()
            .filter(ok)
            .find(ll)
            .or_else(|| self.addrs.iter().find(ok))
            .map(|a| a.addr)
    }
}

/// The solicited-node multicast address of `a`: ff02::1:ffXX:XXXX (RFC 4291 §2.7.1).
pub(super) fn solicited_node(a: Ipv6Addr) -> Ipv6Addr {
    let o = a.octets();
    Ipv6Addr::new(
        0xff02,
        0,
        0,
        0,
        0,
        1,
        0xff00 | u16::from(o[13]),
        u16::from_be_bytes([o[14], o[15]]),
    )
}

const ALL_NODES: Ipv6Addr = Ipv6Addr::new(0xff02, 0, 0, 0, 0, 0, 0, 1);
/// NA flags (RFC 4861 §4.4).
const NA_SOLICITED: u8 = 0x40;
const NA_OVERRIDE: u8 = 0x20;
/// RFC 4861 §10 MAX_NEIGHBOR_ADVERTISEMENT: unsolicited advertisements per change.
const MAX_NEIGHBOR_ADVERTISEMENT: u8 = 3;

impl Interface {
    /// Adds an IPv6 address; it becomes usable once DAD passes ([`InterfaceEvent::AddressReady`]).
    pub fn add_ipv6_address(&mut self, now: Instant, addr: Ipv6Addr, prefix_len: u8) {
        if self.cfg.ipv6 && self.v6.add(addr, prefix_len) {
            self.sync_groups(now);
        }
    }

    /// The interface's own FullMember groups: IPv4 all-hosts 224.0.0.1 when IPv4 is on (the Linux
    /// stack joins it on every interface, RFC 1112 §4), IPv6 all-nodes and the solicited-node group
    /// of every address (RFC 4861 §7.2.1, RFC 4862 §5.4.2). Groups no longer needed are left.
    pub(super) fn sync_groups(&mut self, now: Instant) {
        if self.link != Link::Up {
            return;
        }
        let mut want: Vec<IpAddr> = Vec::new();
        if self.cfg.ipv4.is_some() {
            want.push(IpAddr::V4(std::net::Ipv4Addr::new(224, 0, 0, 1)));
        }
        if self.cfg.ipv6 {
            want.push(IpAddr::V6(ALL_NODES));
            for a in &self.v6.addrs {
                if a.state != AddrState::Duplicate {
                    want.push(IpAddr::V6(solicited_node(a.addr)));
                }
            }
        }
        let want: Vec<Gid> = want
            .into_iter()
            .filter_map(|g| self.group_mgid(g).ok())
            .collect();
        let bcast = self.bcast_mgid();
        let stale: Vec<Gid> = self
            .mc
            .map
            .iter()
            .filter(|(m, g)| g.internal && **m != bcast && !want.contains(m))
            .map(|(m, _)| *m)
            .collect();
        for m in stale {
            self.mc_set_internal(now, m, false);
        }
        for m in want {
            if !self.mc.map.get(&m).is_some_and(|g| g.internal) {
                self.mc_set_internal(now, m, true);
            }
        }
        self.dad_check(now);
    }

    /// Starts DAD for every tentative address whose solicited-node group is joined (RFC 4862
    /// §5.4.2: join it before sending the NS).
    pub(super) fn dad_check(&mut self, now: Instant) {
        if !self.cfg.ipv6 || self.link != Link::Up {
            return;
        }
        let ready: Vec<Ipv6Addr> = self
            .v6
            .addrs
            .iter()
            .filter(|a| a.state == AddrState::Tentative && !self.v6.dad.contains_key(&a.addr))
            .map(|a| a.addr)
            .filter(|a| {
                self.group_mgid(IpAddr::V6(solicited_node(*a)))
                    .ok()
                    .and_then(|m| self.mc.map.get(&m))
                    .is_some_and(|g| g.have.contains(ipoib_wire::sa::JoinState::FULL_MEMBER))
            })
            .collect();
        for a in ready {
            // RFC 4862 §5.4.2: NS from the unspecified address, to the solicited-node group, no
            // source link-layer option; DupAddrDetectTransmits 1, RetransTimer 1 s.
            self.v6.dad.insert(a, now + RETRANS_TIMER);
            let ns = NdMessage::NeighborSolicit { target: a };
            self.send_nd(
                now,
                Ipv6Addr::UNSPECIFIED,
                solicited_node(a),
                ns,
                Vec::new(),
                None,
            );
        }
    }

    pub(super) fn dad_timeouts(&mut self, now: Instant) {
        let done: Vec<Ipv6Addr> = self
            .v6
            .dad
            .iter()
            .filter(|(_, t)| **t <= now)
            .map(|(a, _)| *a)
            .collect();
        for a in done {
            self.v6.dad.remove(&a);
            self.v6.set(a, AddrState::Preferred);
            self.events.push_back(InterfaceEvent::AddressReady(a));
            self.na_announce_start(now, a);
        }
    }

    /// Carrier up: announce every address that is already usable (RFC 4861 §7.2.6: the
    /// link-layer address may have changed; addresses still in DAD are announced when it passes).
    pub(super) fn ndisc_notify(&mut self, now: Instant) {
        let ready: Vec<Ipv6Addr> = self
            .v6
            .addrs
            .iter()
            .filter(|a| a.state == AddrState::Preferred)
            .map(|a| a.addr)
            .collect();
        for a in ready {
            self.na_announce_start(now, a);
        }
    }

    /// Starts the unsolicited advertisements of `a` ([`super::InterfaceConfig::ndisc_notify`]).
    fn na_announce_start(&mut self, now: Instant, a: Ipv6Addr) {
        if !self.cfg.ndisc_notify || !self.cfg.ipv6 || self.link != Link::Up {
            return;
        }
        self.v6
            .announce
            .insert(a, (now, MAX_NEIGHBOR_ADVERTISEMENT));
        self.na_announce_due(now);
    }

    /// Sends the unsolicited advertisements that are due: RFC 4861 §7.2.6, to all-nodes, Override
    /// set (the receiver replaces its cached address, §7.2.5), Solicited clear, with the target
    /// link-layer address option, RetransTimer apart.
    pub(super) fn na_announce_due(&mut self, now: Instant) {
        let due: Vec<Ipv6Addr> = self
            .v6
            .announce
            .iter()
            .filter(|(_, (t, _))| *t <= now)
            .map(|(a, _)| *a)
            .collect();
        for a in due {
            let Some((_, left)) = self.v6.announce.remove(&a) else {
                continue;
            };
            if self.v6.find(a) != Some(AddrState::Preferred) {
                continue;
            }
            if left > 1 {
                self.v6.announce.insert(a, (now + RETRANS_TIMER, left - 1));
            }
            let o = self.lla_option(true);
            let na = NdMessage::NeighborAdvert {
                flags: NA_OVERRIDE,
                target: a,
            };
            self.send_nd(now, a, ALL_NODES, na, o, None);
        }
    }

    fn dad_failed(&mut self, now: Instant, a: Ipv6Addr) {
        self.v6.dad.remove(&a);
        self.v6.set(a, AddrState::Duplicate);
        self.log(
            LogLevel::Warn,
            format_args!("duplicate address detected: {a} is used by another node"),
        );
        self.events.push_back(InterfaceEvent::DadFailed(a));
        self.sync_groups(now);
    }

    /// The link-layer address option of §9.3 (type 1 source, 2 target; Length 3), or the legacy
    /// draft-kashyap-ipoib-ipv6-01 §5.1 option.
    fn lla_option(&self, target: bool) -> Vec<u8> {
        let o = if self.cfg.legacy_ipv6 {
            // §5.1.3: the Q_Key this end intends to use is its QP's, the broadcast group's.
            NdOptionRepr::LegacyLinkLayerAddr(LegacyLlaRepr {
                target,
                lid: self.port.map(|p| p.lid).unwrap_or(0),
                flags: LegacyCapabilities(0),
                qpn: self.cfg.qpn,
                qkey: self.params.map(|p| p.record.qkey).unwrap_or(QKey(0)),
                guid: self.cfg.port_guid,
            })
        } else if target {
            NdOptionRepr::TargetLinkLayerAddr(self.hw_addr())
        } else {
            NdOptionRepr::SourceLinkLayerAddr(self.hw_addr())
        };
        let mut b = vec![0u8; o.buffer_len()];
        // Both options are 24 bytes, which always fit.
        let _ = o.emit(&mut b);
        b
    }

    /// How received ND options are read: the link-layer address option of the interface's
    /// profile (the bytes cannot tell the two apart, `ipoib_wire::ipoib::nd` module docs). A
    /// legacy interface reads the legacy option in every ND message, bare or behind the 4-byte
    /// header (`rx.rs` `receive`).
    fn nd_profile(&self) -> NdProfile {
        if self.cfg.legacy_ipv6 {
            NdProfile::Legacy
        } else {
            NdProfile::Rfc4391
        }
    }

    /// The link-layer address in a received option of type 1 (source) or 2 (target), and the
    /// Q_Key a legacy option names beside it (draft-kashyap-ipoib-ipv6-01 §5.1.3: the Q_Key the
    /// endpoint intends to use; `None` for a §9.3 option, whose peer uses the broadcast group's,
    /// §9.1.2 b).
    fn nd_lla(&self, nd: &NdRepr<'_>, target: bool) -> Option<(HwAddr, Option<QKey>)> {
        if let Some(r) = nd.legacy_lla(target) {
            // draft-kashyap-ipoib-ipv6-01 §7: the destination GID is the local prefix ‖ GUID.
            let prefix = self.gid().subnet_prefix();
            let hw = HwAddr::new(HwAddrFlags::NONE, r.qpn, r.dgid(prefix));
            return Some((hw, Some(r.qkey)));
        }
        let a = if target {
            nd.target_lla()
        } else {
            nd.source_lla()
        }?;
        // §9.1.1 a: reserved flag bits ignored on receive.
        Some((HwAddr::new(a.flags.sanitized(), a.qpn, a.gid), None))
    }

    /// Builds and sends an ND message (hop limit 255, RFC 4861 §7.1): to `hw` when given, else to
    /// the multicast group of a multicast `dst`, or through the neighbour table to a unicast one
    /// (resolved first if unknown).
    fn send_nd(
        &mut self,
        now: Instant,
        src: Ipv6Addr,
        dst: Ipv6Addr,
        message: NdMessage,
        options: Vec<u8>,
        hw: Option<HwAddr>,
    ) {
        let nd = NdRepr {
            message,
            options: &options,
            profile: NdProfile::Rfc4391,
        };
        let n = nd.buffer_len();
        let mut pkt = vec![0u8; 40 + n];
        Ipv6Repr {
            traffic_class: 0,
            flow_label: 0,
            payload_len: n as u16,
            next_header: IpProtocol::Icmpv6,
            hop_limit: 255,
            src_addr: src,
            dst_addr: dst,
        }
        .emit(&mut Ipv6Packet::new_unchecked(&mut pkt[..]));
        if nd.emit(src, dst, &mut pkt[40..]).is_err() {
            return self.drop1(DropReason::Malformed);
        }
        let f = encap(EtherType::Ipv6, &pkt);
        match hw {
            Some(hw) => self.send_unicast(now, hw, f),
            None if !dst.is_multicast() => self.resolve_and_send(now, IpAddr::V6(dst), f),
            None => match self.group_mgid(IpAddr::V6(dst)) {
                Ok(m) => self.send_multicast(now, m, f, None),
                Err(_) => self.drop1(DropReason::Malformed),
            },
        }
    }

    /// A neighbour solicitation for `target`: to its solicited-node group, or unicast to `probe`.
    pub(super) fn send_ns(&mut self, now: Instant, target: Ipv6Addr, probe: Option<HwAddr>) {
        let Some(src) = self.v6.source() else {
            return self.drop1(DropReason::NoRoute);
        };
        let dst = if probe.is_some() {
            target
        } else {
            solicited_node(target)
        };
        let o = self.lla_option(false);
        self.send_nd(
            now,
            src,
            dst,
            NdMessage::NeighborSolicit { target },
            o,
            probe,
        );
    }

    /// A received ND message (the whole IPv6 packet).
    pub(super) fn on_nd(&mut self, now: Instant, packet: &[u8], slid: u16) {
        let Ok(p) = Ipv6Packet::new_checked(packet) else {
            return self.drop1(DropReason::Malformed);
        };
        let Ok(ip) = Ipv6Repr::parse(&p) else {
            return self.drop1(DropReason::Malformed);
        };
        // RFC 4861 §6.1, §7.1: hop limit 255, valid checksum, code 0, known option lengths.
        if ip.hop_limit != 255 {
            return self.drop1(DropReason::Malformed);
        }
        let Ok(nd) = NdRepr::parse_as(ip.src_addr, ip.dst_addr, p.payload(), self.nd_profile())
        else {
            return self.drop1(DropReason::Malformed);
        };
        // RFC 4861 §7.1.1: an NS from the unspecified address goes to a solicited-node group and
        // carries no source link-layer address option; §7.1.2: an NA to a multicast address has
        // the Solicited flag clear. Anything else is silently discarded.
        let valid = match nd.message {
            NdMessage::NeighborSolicit { .. } if ip.src_addr.is_unspecified() => {
                solicited_node(ip.dst_addr) == ip.dst_addr
                    && !NdOptionIter::new(nd.options)
                        .filter_map(Result::ok)
                        .any(|o| o.option_type() == NdOptionType::SourceLinkLayerAddr)
            }
            NdMessage::NeighborAdvert { flags, .. } => {
                !(ip.dst_addr.is_multicast() && flags & NA_SOLICITED != 0)
            }
            _ => true,
        };
        if !valid {
            return self.drop1(DropReason::Malformed);
        }
        let heard = match nd.message {
            NdMessage::NeighborAdvert { .. } => self.nd_lla(&nd, true),
            _ => self.nd_lla(&nd, false),
        }
        .map(|(hw, _)| hw);
        // A link-layer address names a port: a multicast GID there is refused as ARP refuses it
        // (`ipv4.rs`), not cached as a neighbour (a PathRecord query for an MGID would follow).
        if heard.is_some_and(|hw| hw.gid.is_multicast()) {
            return self.drop1(DropReason::Malformed);
        }
        if let Some(hw) = heard {
            self.note_source(hw.gid, slid);
        }
        match nd.message {
            NdMessage::NeighborSolicit { target } => self.on_ns(now, ip.src_addr, target, &nd),
            NdMessage::NeighborAdvert { flags, target } => self.on_na(now, flags, target, &nd),
            NdMessage::RouterAdvert { .. } => self.on_ra(now, ip.src_addr, &nd),
            NdMessage::RouterSolicit | NdMessage::Redirect { .. } => {}
        }
    }

    fn on_ns(&mut self, now: Instant, src: Ipv6Addr, target: Ipv6Addr, nd: &NdRepr<'_>) {
        let Some(state) = self.v6.find(target) else {
            return;
        };
        match state {
            // RFC 4862 §5.4.3: an NS for a tentative address from the unspecified address is another
            // node's DAD for it: ours fails too.
            AddrState::Tentative if src.is_unspecified() => self.dad_failed(now, target),
            AddrState::Tentative | AddrState::Duplicate => {}
            AddrState::Preferred if src.is_unspecified() => {
                // RFC 4861 §7.2.4: answer a DAD probe to all-nodes, S clear.
                let o = self.lla_option(true);
                let na = NdMessage::NeighborAdvert {
                    flags: NA_OVERRIDE,
                    target,
                };
                self.send_nd(now, target, ALL_NODES, na, o, None);
            }
            AddrState::Preferred => {
                let hw = match self.nd_lla(nd, false) {
                    Some((hw, qkey)) => {
                        let ip = IpAddr::V6(src);
                        let l = self.neigh.learn_with_qkey(now, ip, hw, qkey, Learn::Create);
                        self.after_learn(now, IpAddr::V6(src), hw, l);
                        Some(hw)
                    }
                    // RFC 4861 §7.2.4: without the option the source is resolved (our own
                    // solicitation) and the advertisement waits for it, as any packet does.
                    None => self.neigh.get(&IpAddr::V6(src)).and_then(|n| n.hw),
                };
                let o = self.lla_option(true);
                let na = NdMessage::NeighborAdvert {
                    flags: NA_SOLICITED | NA_OVERRIDE,
                    target,
                };
                self.send_nd(now, target, src, na, o, hw);
            }
        }
    }

    fn on_na(&mut self, now: Instant, flags: u8, target: Ipv6Addr, nd: &NdRepr<'_>) {
        match self.v6.find(target) {
            Some(AddrState::Tentative) => return self.dad_failed(now, target),
            Some(_) => {
                return self.log(
                    LogLevel::Warn,
                    format_args!("another node advertises our address {target}"),
                )
            }
            None => {}
        }
        let Some((hw, qkey)) = self.nd_lla(nd, true) else {
            return;
        };
        let ip = IpAddr::V6(target);
        let known = self.neigh.get(&ip).and_then(|n| n.hw);
        if flags & NA_OVERRIDE == 0 && known.is_some_and(|k| k != hw) {
            // RFC 4861 §7.2.5: without Override an advertisement does not replace a known address.
            return self.neigh.weaken(now, &ip);
        }
        let how = if flags & NA_SOLICITED != 0 {
            Learn::Confirmed
        } else {
            Learn::UpdateOnly
        };
        let l = self
            .neigh
            .learn_with_qkey(now, IpAddr::V6(target), hw, qkey, how);
        self.after_learn(now, IpAddr::V6(target), hw, l);
    }

    fn after_learn(&mut self, now: Instant, ip: IpAddr, hw: HwAddr, l: super::neighbour::Learned) {
        if let Some(old) = l.changed_from {
            self.log(
                LogLevel::Warn,
                format_args!("ND: neighbour {ip} changed link-layer address from {old} to {hw}"),
            );
        }
        if l.refused {
            self.drop1(DropReason::NeighbourTableFull);
        }
        for f in l.release {
            self.send_unicast(now, hw, f);
        }
    }

    fn on_ra(&mut self, now: Instant, src: Ipv6Addr, nd: &NdRepr<'_>) {
        // RFC 4861 §6.1.2: a router advertisement comes from a link-local address.
        if src.segments()[0] & 0xffc0 != 0xfe80 {
            return self.drop1(DropReason::Malformed);
        }
        if let Some((hw, qkey)) = self.nd_lla(nd, false) {
            let l = self
                .neigh
                .learn_with_qkey(now, IpAddr::V6(src), hw, qkey, Learn::Create);
            self.after_learn(now, IpAddr::V6(src), hw, l);
        }
        let mut new = Vec::new();
        for o in nd.options().filter_map(Result::ok) {
            match o {
                NdOptionRepr::PrefixInformation(p)
                    if p.autonomous
                        && p.prefix_len == 64
                        && p.valid_lifetime > 0
                        && p.prefix.segments()[0] & 0xffc0 != 0xfe80 =>
                {
                    // RFC 4862 §5.5.3: prefix ‖ interface identifier (§8: from the GUID).
                    let prefix = (u128::from(p.prefix) >> 64) << 64;
                    let iid = u128::from(iid_from_guid(self.cfg.port_guid));
                    new.push(Ipv6Addr::from(prefix | iid));
                }
                NdOptionRepr::Mtu(m) => {
                    let link = self.cfg.mtu.unwrap_or(u32::MAX).min(self.mtu());
                    if m > link {
                        // §7: logged, otherwise ignored.
                        self.log(
                            LogLevel::Warn,
                            format_args!("RA from {src}: MTU option {m} larger than the link MTU {link}, ignored"),
                        );
                    } else if m >= 1280 && m != self.ipv6_mtu() {
                        self.ipv6_mtu = m;
                        self.events.push_back(InterfaceEvent::Ipv6Mtu(m));
                    }
                }
                _ => {}
            }
        }
        for a in new {
            if self.v6.find(a).is_none() {
                self.log(
                    LogLevel::Info,
                    format_args!("autoconfigured {a}/64 from {src}"),
                );
                self.add_ipv6_address(now, a, 64);
            }
        }
    }
}
