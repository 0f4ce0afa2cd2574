//! Multicast membership of a host IP stack that sits above the interface and does not tell it
//! which groups it listens to (a TUN device: Linux's stack keeps the device's `mc_list` to itself).
//! Linux IPoIB joins and leaves the IB groups of the device's `mc_list`
//! (`ipoib_set_mcast_list`, `ipoib_mcast_restart_task`; docs/DEPLOYED.md "Linux IPoIB"); here the
//! same list is rebuilt from the IGMP (RFC 1112, RFC 2236, RFC 3376) and MLD (RFC 2710, RFC 3810)
//! messages the stack sends, which announce every change of it. This snooping is this project's
//! design, not a requirement of any specification.
//!
//! The [`Snooper`] models the stack's per-interface state of each group (RFC 3376 §3.2,
//! RFC 3810 §4.2): a filter mode and, in INCLUDE mode, a source list. The stack listens to a group
//! while the mode is EXCLUDE or the INCLUDE list is not empty; IB multicast cannot filter by
//! source, so listening to any source of a group is a FullMember join of its MGID. The rules, per
//! message (the record types of RFC 3376 §4.2.12 and RFC 3810 §5.2.12 alike):
//!
//! - IGMPv1/v2 report, MLDv1 report: EXCLUDE {} (RFC 3376 §7.3.2, RFC 3810 §8.3.2: an older
//!   report counts as an any-source join);
//! - IGMPv2 leave, MLDv1 done: INCLUDE {} (RFC 3376 §7.3.2, RFC 3810 §8.3.2);
//! - MODE_IS_INCLUDE(S), CHANGE_TO_INCLUDE_MODE(S): INCLUDE S (S empty: not listening);
//! - MODE_IS_EXCLUDE(S), CHANGE_TO_EXCLUDE_MODE(S): EXCLUDE (listening whatever S is);
//! - ALLOW_NEW_SOURCES(S): INCLUDE adds S; EXCLUDE stays; unknown group: INCLUDE S;
//! - BLOCK_OLD_SOURCES(S): INCLUDE removes S (empty: not listening; Linux reports an
//!   INCLUDE-mode group's end this way); EXCLUDE stays; unknown group: nothing;
//! - a record of unknown type is ignored (RFC 3376 §4.2.12, RFC 3810 §5.2.12);
//! - queries are ignored (the stack is no multicast router here);
//! - never tracked: IPv4 all-hosts 224.0.0.1 (RFC 3376 §5: never reported) and, for IPv6, the
//!   link-scope all-nodes address and scopes 0 and 1 (RFC 3810 §6: no MLD message is ever sent
//!   for them); the interface holds all-hosts and all-nodes itself. Solicited-node groups are
//!   tracked: the interface counts the stack's use apart from its own (`mcast.rs`), so a stack
//!   leaving one never makes the interface leave a group it needs for ND.
//!
//! A change of listening gives one [`SnoopChange`]; repeated reports (the stack sends each state
//! change Robustness Variable times, RFC 3376 §5.1) give none.
//!
//! Invariants: pure (no IO, no clock); no input panics it; at most `max_groups` groups and
//! [`MAX_SOURCES`] sources per group are held (a source list that would grow past it is marked
//! saturated and only an INCLUDE of a short list, or a leave, empties it again); maps are
//! `BTreeMap`s, so the changes depend only on the packets.

use super::too_big::{upper_layer, Upper};
use ipoib_wire::ipoib::{
    GroupRecords, IgmpRepr, IpProtocol, Ipv4Packet, Ipv6Packet, MldRepr, RecordType,
};
use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// Sources held per group in INCLUDE mode (Linux's `mld_max_msf` default, the larger of its two
/// per-socket source-filter limits; docs/DEPLOYED.md "Linux IPoIB").
pub const MAX_SOURCES: usize = 64;

/// Groups held by default.
pub const MAX_GROUPS: usize = 1024;

/// A change of the stack's listening.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SnoopChange {
    /// The stack now listens to the group: join it (FullMember).
    Join(IpAddr),
    /// The stack no longer listens to the group: leave it.
    Leave(IpAddr),
}

/// What the snooper saw.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SnoopCounters {
    /// IGMP messages read.
    pub igmp: u64,
    /// MLD messages read.
    pub mld: u64,
    /// IGMP or MLD messages that do not parse (bad checksum, truncated records).
    pub malformed: u64,
    /// Queries, records of unknown type, records for groups never tracked (all-hosts, all-nodes,
    /// scopes 0 and 1) or for addresses that are not multicast.
    pub ignored: u64,
    /// Joins made ([`SnoopChange::Join`]).
    pub joins: u64,
    /// Leaves made ([`SnoopChange::Leave`]).
    pub leaves: u64,
    /// Joins refused because `max_groups` groups were held.
    pub table_full: u64,
}

/// The stack's state of one group it listens to.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
struct Filter {
    exclude: bool,
    /// INCLUDE mode's sources.
    sources: BTreeSet<IpAddr>,
    /// The INCLUDE list outgrew [`MAX_SOURCES`]: it is not known to be empty.
    saturated: bool,
}

impl Filter {
    fn listening(&self) -> bool {
        self.exclude || self.saturated || !self.sources.is_empty()
    }
    fn include(&mut self, s: &[IpAddr]) {
        self.exclude = false;
        self.sources.clear();
        self.saturated = false;
        self.add(s);
    }
    fn add(&mut self, s: &[IpAddr]) {
        for &a in s {
            if self.sources.len() >= MAX_SOURCES && !self.sources.contains(&a) {
                self.saturated = true;
                return;
            }
            self.sources.insert(a);
        }
    }
}

/// The snooper. See the module docs.
#[derive(Debug, Clone)]
pub struct Snooper {
    groups: BTreeMap<IpAddr, Filter>,
    max_groups: usize,
    changes: VecDeque<SnoopChange>,
    counters: SnoopCounters,
}

impl Default for Snooper {
    fn default() -> Snooper {
        Snooper::new(MAX_GROUPS)
    }
}

impl Snooper {
    /// A snooper that holds at most `max_groups` groups.
    pub fn new(max_groups: usize) -> Snooper {
        Snooper {
            groups: BTreeMap::new(),
            max_groups,
            changes: VecDeque::new(),
            counters: SnoopCounters::default(),
        }
    }

    /// Reads one IP packet the stack sent; true if it was IGMP or MLD (whether or not it
    /// parsed). Other packets, and packets that are not IP, are left alone.
    pub fn handle_packet(&mut self, packet: &[u8]) -> bool {
        match packet.first().map(|b| b >> 4) {
            Some(4) => self.handle_v4(packet),
            Some(6) => self.handle_v6(packet),
            _ => false,
        }
    }

    /// The next change, in the order the messages asked for them.
    pub fn poll_change(&mut self) -> Option<SnoopChange> {
        self.changes.pop_front()
    }

    /// The groups the stack listens to.
    pub fn groups(&self) -> impl Iterator<Item = IpAddr> + '_ {
        self.groups.keys().copied()
    }

    /// Counters.
    pub fn counters(&self) -> SnoopCounters {
        self.counters
    }

    /// Forgets every group (the stack's interface went away): a leave for each.
    pub fn forget_all(&mut self) {
        for g in std::mem::take(&mut self.groups).into_keys() {
            self.counters.leaves += 1;
            self.changes.push_back(SnoopChange::Leave(g));
        }
    }

    fn handle_v4(&mut self, packet: &[u8]) -> bool {
        let Ok(p) = Ipv4Packet::new_checked(packet) else {
            return false;
        };
        // A later fragment holds no IGMP header.
        if p.protocol() != IpProtocol::Igmp || p.frag_offset() != 0 {
            return false;
        }
        self.counters.igmp += 1;
        if !p.verify_checksum() {
            self.counters.malformed += 1;
            return true;
        }
        match IgmpRepr::parse(p.payload()) {
            Ok(IgmpRepr::V1Report { group } | IgmpRepr::V2Report { group }) => {
                self.apply(IpAddr::V4(group), RecordType::ChangeToExclude, &[])
            }
            Ok(IgmpRepr::Leave { group }) => {
                self.apply(IpAddr::V4(group), RecordType::ChangeToInclude, &[])
            }
            Ok(IgmpRepr::V3Report { records }) => self.records_v4(records),
            Ok(IgmpRepr::Query { .. }) => self.counters.ignored += 1,
            Err(_) => self.counters.malformed += 1,
        }
        true
    }

    fn records_v4(&mut self, records: GroupRecords<'_, Ipv4Addr>) {
        for r in records.iter() {
            let s: Vec<IpAddr> = r.source_addrs().map(IpAddr::V4).collect();
            self.apply(IpAddr::V4(r.group), r.record_type, &s);
        }
    }

    fn handle_v6(&mut self, packet: &[u8]) -> bool {
        let Ok(p) = Ipv6Packet::new_checked(packet) else {
            return false;
        };
        let payload = p.payload();
        let Some(Upper::Header(IpProtocol::Icmpv6, at)) = upper_layer(p.next_header(), payload)
        else {
            return false;
        };
        let Some(&t) = payload.get(at) else {
            return false;
        };
        if !MldRepr::is_mld(t.into()) {
            return false;
        }
        self.counters.mld += 1;
        match MldRepr::parse(p.src_addr(), p.dst_addr(), &payload[at..]) {
            Ok(MldRepr::Report { group }) => {
                self.apply(IpAddr::V6(group), RecordType::ChangeToExclude, &[])
            }
            Ok(MldRepr::Done { group }) => {
                self.apply(IpAddr::V6(group), RecordType::ChangeToInclude, &[])
            }
            Ok(MldRepr::V2Report { records }) => {
                for r in records.iter() {
                    let s: Vec<IpAddr> = r.source_addrs().map(IpAddr::V6).collect();
                    self.apply(IpAddr::V6(r.group), r.record_type, &s);
                }
            }
            Ok(MldRepr::Query { .. }) => self.counters.ignored += 1,
            Err(_) => self.counters.malformed += 1,
        }
        true
    }

    /// One record (or an older message as the record it counts as) for `group`.
    fn apply(&mut self, group: IpAddr, t: RecordType, sources: &[IpAddr]) {
        if !tracked(group) || matches!(t, RecordType::Unknown(_)) {
            self.counters.ignored += 1;
            return;
        }
        let before = self.groups.get(&group).cloned();
        let was = before.as_ref().is_some_and(Filter::listening);
        let mut f = before.unwrap_or_default();
        match t {
            RecordType::ModeIsInclude | RecordType::ChangeToInclude => f.include(sources),
            RecordType::ModeIsExclude | RecordType::ChangeToExclude => {
                f.exclude = true;
                f.sources.clear();
                f.saturated = false;
            }
            RecordType::AllowNewSources if !f.exclude => f.add(sources),
            RecordType::BlockOldSources if !f.exclude => {
                for s in sources {
                    f.sources.remove(s);
                }
            }
            _ => {}
        }
        let now = f.listening();
        if now && !was && self.groups.len() >= self.max_groups {
            self.counters.table_full += 1;
            return;
        }
        if now {
            self.groups.insert(group, f);
        } else {
            self.groups.remove(&group);
        }
        match (was, now) {
            (false, true) => {
                self.counters.joins += 1;
                self.changes.push_back(SnoopChange::Join(group));
            }
            (true, false) => {
                self.counters.leaves += 1;
                self.changes.push_back(SnoopChange::Leave(group));
            }
            _ => {}
        }
    }
}

/// False for what the stack never reports and the snooper never holds: non-multicast
/// addresses, IPv4 all-hosts (RFC 3376 §5), IPv6 link-scope all-nodes and scopes 0 and 1
/// (RFC 3810 §6).
fn tracked(group: IpAddr) -> bool {
    match group {
        IpAddr::V4(a) => a.is_multicast() && a != Ipv4Addr::new(224, 0, 0, 1),
        IpAddr::V6(a) => {
            let scope = a.octets()[1] & 0x0f;
            a.is_multicast() && scope > 1 && a != Ipv6Addr::new(0xff02, 0, 0, 0, 0, 0, 0, 1)
        }
    }
}

#[cfg(test)]
mod tests;
