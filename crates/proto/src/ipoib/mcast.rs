//! Multicast groups of the interface: the mapping of IP groups to MGIDs (§4), FullMember joins and
//! leaves for IP memberships, SendOnlyNonMember joins and the send rules of §11, NonMember joins of
//! router promiscuous mode (§12), the cache of group existence and MLIDs, and the retry backoff of
//! every join (docs/IPOIB-JOINS.md: 2 s doubling to 16 s, as Linux). All references are to
//! draft-ietf-ipoib-ip-over-infiniband-06.
//!
//! The broadcast group is a group like the others (an internal FullMember user), so the link's
//! first join, later rejoins and retries all go through here; its answer sets the link parameters
//! (`state.rs`).
//!
//! Invariants: at most one SA request in flight per group; a group is attached (QP attached, HCA
//! side) exactly while the SA granted it FullMember or NonMember; at most `mcast_queue_len` frames
//! wait per group, `max_mcast_queued` in all (`tx.rs` `send_multicast`); no group but the broadcast group is joined before the broadcast group is joined and its
//! parameters are known (every other join copies them, §11), after a light flush too.

use super::timer::{earliest, Backoff, GROUP_ABSENT_HOLD, SEND_ONLY_IDLE};
use super::{DropReason, Interface, InterfaceError, InterfaceEvent, Link, LogLevel, Pending};
use crate::sa::{SaClientError, SaResponse};
use crate::time::Instant;
use ipoib_wire::ib::BthRepr;
use ipoib_wire::ipoib::legacy::legacy_ipv6_mgid;
use ipoib_wire::ipoib::mcast::{ipoib_signature, mgid_scope, with_scope};
use ipoib_wire::ipoib::{broadcast_mgid, ipv4_mgid, ipv6_mgid, IpoibMgid, Scope};
use ipoib_wire::mad::SaStatus;
use ipoib_wire::sa::{mcr_mask, JoinState, McMemberRecordRepr, SaAttribute, SaMadRepr, Selector};
use ipoib_wire::Gid;
use std::collections::{BTreeMap, VecDeque};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// A frame waiting for a group join, with where it goes if the group turns out not to exist.
#[derive(Debug, Clone)]
pub(super) struct McFrame {
    pub data: Vec<u8>,
    /// The all-routers MGID when the IP group's scope is wider than link-local (§11 A).
    pub fallback: Option<Gid>,
}

#[derive(Debug, Default)]
pub(super) struct Group {
    pub mlid: u16,
    /// What the SA granted.
    pub have: JoinState,
    /// IP-level FullMember users (join_group calls).
    pub refs: u32,
    /// The interface's own FullMember use (broadcast group, all-nodes, solicited-node groups).
    pub internal: bool,
    /// NonMember for router promiscuous mode (§12 B).
    pub non: bool,
    /// SendOnlyNonMember for sending (§11 B).
    pub send_only: bool,
    /// The request in flight and the JoinState it asks for.
    pub query: Option<(crate::sa::RequestId, JoinState)>,
    /// When a failed join is tried again.
    pub retry: Option<Instant>,
    pub backoff: Backoff,
    pub queue: VecDeque<McFrame>,
    pub attached: bool,
    /// When the interface last sent to the group (or asked to): a membership held only for
    /// sending is left `SEND_ONLY_IDLE` after it.
    pub used: Instant,
}

impl Group {
    pub(super) fn want(&self) -> JoinState {
        let mut w = JoinState(0);
        if self.refs > 0 || self.internal {
            w = w.union(JoinState::FULL_MEMBER);
        }
        if self.non {
            w = w.union(JoinState::NON_MEMBER);
        }
        if self.send_only && w.is_empty() {
            w = JoinState::SEND_ONLY_NON_MEMBER;
        }
        w
    }
    fn receives(js: JoinState) -> bool {
        js.contains(JoinState::FULL_MEMBER) || js.contains(JoinState::NON_MEMBER)
    }
    /// When a membership held only for sending, granted and idle, is left (Linux leaves a
    /// send-only group with its idle neighbour, `ipoib_check_and_add_mcast_sendonly`).
    fn send_only_expiry(&self) -> Option<Instant> {
        let only_sending = self.send_only && self.refs == 0 && !self.internal && !self.non;
        (only_sending && !self.have.is_empty() && self.query.is_none() && self.queue.is_empty())
            .then(|| self.used + SEND_ONLY_IDLE)
    }
}

/// A public view of one group.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GroupInfo {
    /// MGID.
    pub mgid: Gid,
    /// MLID (0 until joined).
    pub mlid: u16,
    /// JoinState granted by the SA.
    pub join_state: JoinState,
    /// The UD QP is attached.
    pub attached: bool,
}

#[derive(Debug, Default)]
pub(super) struct Groups {
    /// The groups; boxed so that the table stays small (a B-tree node has room for eleven entries
    /// however few are used, and most interfaces hold one to a few groups).
    pub map: BTreeMap<Gid, Box<Group>>,
    /// MGIDs the SA said do not exist, until when that is believed (§11: cache group existence).
    pub absent: BTreeMap<Gid, Instant>,
    /// Absent groups that trap 66 announced, until when their absent entry would have lasted: the
    /// sender keeps the trap subscription while it holds a send-only membership of one (or before
    /// it sends again), so that trap 67 sends its packets back to all routers (`traps`, §11).
    pub watched: BTreeMap<Gid, Instant>,
}

impl Groups {
    pub fn snapshot(&self) -> Vec<GroupInfo> {
        self.map
            .iter()
            .map(|(m, g)| GroupInfo {
                mgid: *m,
                mlid: g.mlid,
                join_state: g.have,
                attached: g.attached,
            })
            .collect()
    }
    #[inline]
    pub fn next_deadline(&self) -> Option<Instant> {
        // Asked after every event of the interface's host: the caches are usually empty, so they
        // are looked at only when they hold something.
        let mut next = self
            .map
            .values()
            .filter_map(|g| earliest(g.retry, g.send_only_expiry()))
            .min();
        if !self.absent.is_empty() {
            next = earliest(next, self.absent.values().copied().min());
        }
        if !self.watched.is_empty() {
            let w = self
                .watched
                .values()
                .copied()
                .filter(|t| *t != Instant::NEVER);
            next = earliest(next, w.min());
        }
        next
    }
}

/// The IPv4 all-routers group (RFC 1112 / IGMP2; §4's example group ID 2).
const ALL_ROUTERS_V4: Ipv4Addr = Ipv4Addr::new(224, 0, 0, 2);
/// The IPv6 link-local all-routers group (RFC 3513 §2.7.1).
const ALL_ROUTERS_V6: Ipv6Addr = Ipv6Addr::new(0xff02, 0, 0, 0, 0, 0, 0, 2);

impl Interface {
    /// The broadcast GID of the link: P_Key with the full-member bit, the configured scope (§4
    /// figure 2, §4.1 item 1).
    pub(super) fn bcast_mgid(&self) -> Gid {
        broadcast_mgid(self.cfg.pkey, self.scope)
    }

    /// The MGID of an IP multicast group (§4; the legacy profile maps IPv6 as
    /// draft-kashyap-ipoib-ipv6-01 §4.1).
    pub(super) fn group_mgid(&self, group: IpAddr) -> Result<Gid, InterfaceError> {
        match group {
            IpAddr::V4(a) if a.is_multicast() || a == Ipv4Addr::BROADCAST => {
                Ok(ipv4_mgid(a, self.cfg.pkey, self.scope))
            }
            IpAddr::V6(a) if a.is_multicast() => {
                if !self.cfg.ipv6 {
                    return Err(InterfaceError::FamilyDisabled);
                }
                if self.cfg.legacy_ipv6 {
                    legacy_ipv6_mgid(a).ok_or(InterfaceError::NotMulticast)
                } else {
                    Ok(ipv6_mgid(a, self.cfg.pkey, self.scope))
                }
            }
            _ => Err(InterfaceError::NotMulticast),
        }
    }

    /// Where a packet for `group` goes when the group has no member here: the all-routers group if
    /// the IP scope is wider than link-local (§11 A), else nowhere.
    pub(super) fn fallback_for(&self, group: IpAddr) -> Option<Gid> {
        let wide = match group {
            // 224.0.0.0/24 is the link-local block (RFC 5771); 255.255.255.255 never leaves.
            IpAddr::V4(a) => a.is_multicast() && a.octets()[..3] != [224, 0, 0],
            IpAddr::V6(a) => (a.octets()[1] & 0x0f) > 2,
        };
        let ar = match group {
            IpAddr::V4(_) => IpAddr::V4(ALL_ROUTERS_V4),
            IpAddr::V6(_) => IpAddr::V6(ALL_ROUTERS_V6),
        };
        if wide {
            self.group_mgid(ar).ok()
        } else {
            None
        }
    }

    /// One more FullMember user of `mgid` (§11: an IP join is a FullMember join of its MGID).
    pub(super) fn mc_add_full(&mut self, now: Instant, mgid: Gid) {
        self.mc.map.entry(mgid).or_default().refs += 1;
        self.mc.absent.remove(&mgid);
        self.mc_kick(now);
    }

    /// One FullMember user fewer; the last one leaves (§11: SHOULD make a FullMember leave).
    pub(super) fn mc_drop_full(&mut self, now: Instant, mgid: Gid) {
        if let Some(g) = self.mc.map.get_mut(&mgid) {
            g.refs = g.refs.saturating_sub(1);
            self.mc_settle(now, mgid);
        }
    }

    /// Sets or clears the interface's own FullMember use of `mgid`.
    pub(super) fn mc_set_internal(&mut self, now: Instant, mgid: Gid, on: bool) {
        match (self.mc.map.get_mut(&mgid), on) {
            (Some(g), _) => g.internal = on,
            (None, true) => {
                self.mc.map.entry(mgid).or_default().internal = true;
            }
            (None, false) => return,
        }
        if on {
            self.mc.absent.remove(&mgid);
            self.mc_kick(now);
        } else {
            self.mc_settle(now, mgid);
        }
    }

    /// NonMember membership for router promiscuous mode (§12 B).
    pub(super) fn mc_add_non(&mut self, now: Instant, mgid: Gid) {
        if mgid == self.bcast_mgid() {
            return;
        }
        self.mc.map.entry(mgid).or_default().non = true;
        self.mc_kick(now);
    }

    /// True if `mgid` is an IPoIB MGID of this link's partition (§12 B: a signature of IPv4 or IPv6).
    pub(super) fn is_our_ipoib_mgid(&self, mgid: &Gid) -> bool {
        IpoibMgid::parse(mgid)
            .map(|m| m.pkey.same_partition(self.cfg.pkey) && !m.is_broadcast())
            .unwrap_or(false)
    }

    /// Leaves what is held but no longer wanted, detaches what no longer receives, forgets a group
    /// nobody uses.
    fn mc_settle(&mut self, now: Instant, mgid: Gid) {
        let Some(g) = self.mc.map.get_mut(&mgid) else {
            return;
        };
        let want = g.want();
        // A send-only membership is given up only with every other use (Linux leaves a send-only
        // group when its neighbour is freed, `ipoib_mcast_remove_list`).
        let mut leavable = JoinState::FULL_MEMBER.0 | JoinState::NON_MEMBER.0;
        if want.is_empty() {
            leavable |= JoinState::SEND_ONLY_NON_MEMBER.0;
        }
        let extra = JoinState(g.have.0 & !want.0 & leavable);
        let mut leave = None;
        if !extra.is_empty() && g.query.is_none() {
            g.have = g.have.without(extra);
            leave = Some(extra);
        }
        let detach = g.attached && !Group::receives(g.have);
        if detach {
            g.attached = false;
        }
        let mlid = g.mlid;
        let forget = want.is_empty() && g.query.is_none() && g.have.is_empty();
        let lost = if forget { g.queue.len() } else { 0 };
        if detach {
            self.events.push_back(InterfaceEvent::Detach { mgid, mlid });
        }
        if let Some(js) = leave {
            self.send_leave(now, mgid, js);
        }
        if forget {
            self.mc.map.remove(&mgid);
            self.drop_count(DropReason::NoMcastGroup, lost);
        }
        self.mc_kick(now);
    }

    /// Sends every join that is due: wanted bits not held, nothing in flight, no retry pending. Only
    /// the broadcast group is joined before it is joined and its parameters are known: after a
    /// light flush (ClientReregister, SM change) the others wait for the broadcast group's new
    /// answer, whose parameters they copy (§11), as Linux defers every other join until the
    /// broadcast group is attached (`ipoib_mcast_join_task`).
    pub(super) fn mc_kick(&mut self, now: Instant) {
        if self.link == Link::Down {
            return;
        }
        let bcast = self.bcast_mgid();
        let have_params =
            self.params.is_some() && self.mc.map.get(&bcast).is_some_and(|g| !g.have.is_empty());
        let due: Vec<(Gid, JoinState)> = self
            .mc
            .map
            .iter()
            .filter(|(m, g)| {
                g.query.is_none() && g.retry.is_none_or_past(now) && (have_params || **m == bcast)
            })
            .filter_map(|(m, g)| {
                let w = g.want();
                let missing = JoinState(w.0 & !g.have.0);
                (!missing.is_empty()).then_some((*m, missing))
            })
            .collect();
        for (mgid, js) in due {
            self.send_join(now, mgid, js);
        }
        self.traps_sync(now);
    }

    /// SubnAdmSet(MCMemberRecord), field for field what Linux `ipoib_mcast_join` sends
    /// (docs/IPOIB-JOINS.md). Every join carries MGID, PortGID, JoinState and the interface's P_Key
    /// with the full-member bit (§4.1 item 1: the broadcast GID's P_Key). The broadcast group is
    /// joined with those four components only: it must pre-exist, and without Q_Key, TClass,
    /// FlowLabel and SL no SA creates it (§5: creation is administrative). Every other group adds the
    /// broadcast group's Q_Key, MTU, TClass, rate, SL, FlowLabel and HopLimit so that a FullMember
    /// join can create it (§11: MUST use the broadcast group's P_Key, Q_Key, SL, MTU and HopLimit,
    /// SHOULD use the rest).
    fn send_join(&mut self, now: Instant, mgid: Gid, js: JoinState) {
        let mut rec = McMemberRecordRepr {
            mgid,
            port_gid: self.gid(),
            join_state: js,
            pkey: self.cfg.pkey.full(),
            ..Default::default()
        };
        let mut mask = mcr_mask::JOIN | mcr_mask::P_KEY;
        if let (Some(p), false) = (self.params, mgid == self.bcast_mgid()) {
            let b = p.record;
            rec.qkey = b.qkey;
            rec.mtu_selector = Selector::Exactly;
            rec.mtu = b.mtu;
            rec.tclass = b.tclass;
            rec.rate_selector = Selector::Exactly;
            rec.rate = b.rate;
            rec.sl = b.sl;
            rec.flow_label = b.flow_label;
            rec.hop_limit = b.hop_limit;
            mask |= mcr_mask::CREATE
                | mcr_mask::MTU_SELECTOR
                | mcr_mask::MTU
                | mcr_mask::RATE_SELECTOR
                | mcr_mask::RATE
                | mcr_mask::HOP_LIMIT;
        }
        let mad = SaMadRepr::mcmember_join(0, rec, mask);
        let id = self.sa.request(now, mad, self.sa_dest());
        self.requests.insert(id, Pending::Join(mgid, js));
        if let Some(g) = self.mc.map.get_mut(&mgid) {
            g.query = Some((id, js));
        }
    }

    /// SubnAdmDelete(MCMemberRecord) for the bits given up (§11).
    pub(super) fn send_leave(&mut self, now: Instant, mgid: Gid, js: JoinState) {
        self.send_leave_try(now, mgid, js, super::timer::LEAVE_RETRIES);
    }

    pub(super) fn send_leave_try(&mut self, now: Instant, mgid: Gid, js: JoinState, left: u8) {
        let rec = McMemberRecordRepr {
            mgid,
            port_gid: self.gid(),
            join_state: js,
            ..Default::default()
        };
        let mad = SaMadRepr::mcmember_leave(0, rec, mcr_mask::JOIN);
        let id = self.sa.request(now, mad, self.sa_dest());
        self.requests.insert(id, Pending::Leave(mgid, js, left));
    }

    /// The answer to a join.
    pub(super) fn on_join_result(
        &mut self,
        now: Instant,
        mgid: Gid,
        js: JoinState,
        result: Result<SaResponse, SaClientError>,
    ) {
        let rec = match &result {
            Ok(r) => match r.attribute {
                Some(SaAttribute::McMemberRecord(m)) => Ok(m),
                _ => Err(SaClientError::Malformed),
            },
            Err(e) => Err(*e),
        };
        let bcast = mgid == self.bcast_mgid();
        // §5: the broadcast group's MTU becomes the link's. An answer whose MTU code is undefined
        // cannot give one: it is refused here, where the record enters, like a record missing.
        let rec = match rec {
            Ok(m) if bcast => m
                .mtu
                .bytes()
                .map(|b| (m, Some(b)))
                .ok_or(SaClientError::Malformed),
            Ok(m) => Ok((m, None)),
            Err(e) => Err(e),
        };
        let Some(g) = self.mc.map.get_mut(&mgid) else {
            return;
        };
        g.query = None;
        match rec {
            Ok((rec, group_mtu)) => {
                g.have = g.have.union(js);
                g.mlid = rec.mlid;
                g.backoff.reset();
                g.retry = None;
                let attach = !g.attached && Group::receives(g.have);
                g.attached |= attach;
                let frames: Vec<McFrame> = g.queue.drain(..).collect();
                if let Some(group_mtu) = group_mtu {
                    self.on_broadcast_joined(now, rec, group_mtu);
                }
                if attach {
                    self.events.push_back(InterfaceEvent::Attach {
                        mgid,
                        mlid: rec.mlid,
                    });
                }
                if bcast && self.link != Link::Up {
                    self.link_up(now);
                }
                for f in frames {
                    self.push_mcast(mgid, rec.mlid, f.data);
                }
                self.mc_settle(now, mgid);
                self.dad_check(now);
            }
            Err(e) => {
                if bcast && self.cfg.scope_search && matches!(e, SaClientError::Status(_)) {
                    return self.next_broadcast_scope(now, mgid);
                }
                // §13: log every failed IB multicast operation.
                self.log(
                    LogLevel::Warn,
                    format_args!(
                        "multicast join {} (join state {:#x}) failed: {e}",
                        mgid.to_ipv6(),
                        js.0
                    ),
                );
                let Some(g) = self.mc.map.get_mut(&mgid) else {
                    return;
                };
                if js == JoinState::SEND_ONLY_NON_MEMBER {
                    // §11: the group does not exist (or cannot be joined now): remember it, and send
                    // what waited to all routers if its scope allows, else drop.
                    let absent = matches!(e, SaClientError::Status(s) if s.sa_status() == SaStatus::ReqInvalid);
                    let hold = if absent {
                        GROUP_ABSENT_HOLD
                    } else {
                        g.backoff.step()
                    };
                    g.send_only = false;
                    let frames: Vec<McFrame> = g.queue.drain(..).collect();
                    self.remember_absent(mgid, now + hold);
                    self.mc_settle(now, mgid);
                    for f in frames {
                        self.mc_fallback(now, f);
                    }
                } else {
                    let delay = g.backoff.step();
                    g.retry = Some(now + delay);
                    let lost = g.queue.len();
                    g.queue.clear();
                    self.drop_count(DropReason::NoMcastGroup, lost);
                }
            }
        }
    }

    /// §4.1: the broadcast group is not at this scope: try the next wider one (2, 5, 8, 0xE), and
    /// after the widest start again from the configured scope after a backoff.
    fn next_broadcast_scope(&mut self, now: Instant, old: Gid) {
        const ORDER: [u8; 4] = [0x2, 0x5, 0x8, 0xe];
        let cur = u8::from(self.scope);
        let next = ORDER.iter().copied().find(|s| *s > cur);
        let retry = match next {
            Some(s) => {
                self.scope = Scope::from(s);
                None
            }
            None => {
                self.scope = self.cfg.scope;
                Some(now + self.scope_backoff.step())
            }
        };
        self.log(
            LogLevel::Info,
            format_args!(
                "no broadcast group {}: trying scope {:#x}",
                old.to_ipv6(),
                u8::from(self.scope)
            ),
        );
        // The old broadcast group moves too, with the frames that wait for it.
        self.rescope_groups(now);
        let b = self.bcast_mgid();
        let g = self.mc.map.entry(b).or_default();
        g.internal = true;
        g.retry = retry;
        self.mc_kick(now);
    }

    /// §4: every MGID of the link MUST use the broadcast GID's scope. After the scope search moved
    /// the broadcast GID, the groups mapped at the old scope (IP joins made before the link came
    /// up, and after a light flush the interface's own groups and IP joins) move to the new one:
    /// what the SA granted at the old scope is left and detached, the request in flight forgotten,
    /// the uses and waiting frames kept under the new MGID, to be joined once the broadcast group
    /// answers. Router-mode memberships (§12 B: the SA's groups as they are) and legacy-profile
    /// MGIDs (their scope is the IP group's, draft-kashyap-ipoib-ipv6-01 §4.1 i) stay.
    fn rescope_groups(&mut self, now: Instant) {
        let scope = self.scope;
        let moved: Vec<Gid> = self
            .mc
            .map
            .iter()
            .filter(|(m, g)| ipoib_signature(m).is_some() && mgid_scope(m) != scope && !g.non)
            .map(|(m, _)| *m)
            .collect();
        for old in moved {
            let Some(mut g) = self.mc.map.remove(&old) else {
                continue;
            };
            if g.attached {
                self.events.push_back(InterfaceEvent::Detach {
                    mgid: old,
                    mlid: g.mlid,
                });
            }
            if !g.have.is_empty() {
                self.send_leave(now, old, g.have);
            }
            if let Some((id, _)) = g.query.take() {
                self.sa.cancel(id);
                self.requests.remove(&id);
            }
            let n = self.mc.map.entry(with_scope(old, scope)).or_default();
            n.refs += g.refs;
            n.internal |= g.internal;
            n.send_only |= g.send_only;
            n.used = n.used.max(g.used);
            n.queue.append(&mut g.queue);
        }
    }

    pub(super) fn mc_fallback(&mut self, now: Instant, f: McFrame) {
        match f.fallback {
            Some(ar) => self.send_multicast(now, ar, f.data, None),
            None => self.drop1(DropReason::NoMcastGroup),
        }
    }

    /// A multicast datagram: MLID, the broadcast group's SL, a GRH with the MGID and the group's
    /// TClass/FlowLabel/HopLimit (§4.1 item 4: required for multicast), QPN 0xFFFFFF, the link Q_Key;
    /// a legacy-profile IPv6 datagram without the 4-byte header (draft-kashyap-ipoib-ipv6-01 §7).
    pub(super) fn push_mcast(&mut self, mgid: Gid, mlid: u16, mut data: Vec<u8>) {
        let Some(p) = self.params else {
            return self.drop1(DropReason::NotUp);
        };
        self.legacy_unframe(&mut data);
        let b = p.record;
        self.out.push_back(super::UdTransmit {
            dlid: mlid,
            sl: b.sl,
            grh: Some(crate::mad_agent::GrhAddr {
                gid: mgid,
                flow_label: b.flow_label,
                hop_limit: b.hop_limit,
                tclass: b.tclass,
            }),
            remote_qpn: BthRepr::MULTICAST_QPN,
            qkey: b.qkey,
            rate: b.rate,
            data,
        });
    }

    /// Groups held only for sending (no member use of ours).
    pub(super) fn send_only_groups(&self) -> usize {
        self.mc
            .map
            .values()
            .filter(|g| g.refs == 0 && !g.internal && !g.non)
            .count()
    }

    /// Caches that `mgid` does not exist until `until`; a full cache (`max_mcast_groups`) forgets
    /// the entry that expires first.
    fn remember_absent(&mut self, mgid: Gid, until: Instant) {
        if !self.mc.absent.contains_key(&mgid) && self.mc.absent.len() >= self.cfg.max_mcast_groups
        {
            let first = self
                .mc
                .absent
                .iter()
                .min_by_key(|(_, t)| **t)
                .map(|(m, _)| *m);
            if let Some(m) = first {
                self.mc.absent.remove(&m);
            }
        }
        self.mc.absent.insert(mgid, until);
    }

    /// Retries, cache expiry, and idle send-only memberships left.
    pub(super) fn mcast_timeouts(&mut self, now: Instant) {
        self.mc.absent.retain(|_, t| *t > now);
        let mut idle = Vec::new();
        for (mgid, g) in self.mc.map.iter_mut() {
            if g.retry.is_some_and(|t| t <= now) {
                g.retry = None;
            }
            if g.send_only_expiry().is_some_and(|t| t <= now) {
                g.send_only = false;
                idle.push(*mgid);
            }
        }
        for mgid in idle {
            self.mc_settle(now, mgid);
        }
        self.mc_kick(now);
    }

    /// A trap from the SA (§11: senders subscribe to traps 66 and 67; §12 C: a router joins every
    /// group created later).
    pub(super) fn on_group_trap(&mut self, now: Instant, trap: u16, mgid: Gid) {
        match trap {
            66 => {
                // A listener appeared: the next packet tries the real group instead of all routers.
                if let Some(t) = self.mc.absent.remove(&mgid) {
                    self.mc.watched.insert(mgid, t);
                }
                if self.cfg.router && self.is_our_ipoib_mgid(&mgid) {
                    self.mc_add_non(now, mgid);
                }
            }
            67 => {
                let Some(g) = self.mc.map.get_mut(&mgid) else {
                    return;
                };
                // The SA dropped every remaining member with the group.
                let was_full = g.have.contains(JoinState::FULL_MEMBER);
                g.have = JoinState(0);
                g.send_only = false;
                g.non = false;
                if was_full {
                    // We were told we lost a group we are a full member of: join it again.
                    g.backoff.reset();
                }
                self.mc.absent.insert(mgid, now + GROUP_ABSENT_HOLD);
                self.mc_settle(now, mgid);
            }
            _ => {}
        }
    }

    /// The answer to the router's MCMemberRecord GetTable (§12 A, B).
    pub(super) fn on_group_table(
        &mut self,
        now: Instant,
        result: Result<SaResponse, SaClientError>,
    ) {
        match result {
            Ok(r) => {
                let mgids: Vec<Gid> = r
                    .records
                    .iter()
                    .filter_map(|a| match a {
                        SaAttribute::McMemberRecord(m) => Some(m.mgid),
                        _ => None,
                    })
                    .filter(|m| self.is_our_ipoib_mgid(m))
                    .collect();
                for m in mgids {
                    self.mc_add_non(now, m);
                }
            }
            Err(e) => self.log(
                LogLevel::Warn,
                format_args!("multicast group list failed: {e}"),
            ),
        }
    }

    /// The memberships [`Interface::mc_reset`] forgets without joining them again: groups held
    /// only for sending (no IP member, no own use, no router membership), with what the SA granted.
    pub(super) fn mc_send_only_held(&self) -> Vec<(Gid, JoinState)> {
        self.mc
            .map
            .iter()
            .filter(|(_, g)| g.refs == 0 && !g.internal && !g.non && !g.have.is_empty())
            .map(|(m, g)| (*m, g.have))
            .collect()
    }

    /// Resets every membership (link down, rejoin): detaches, forgets joins in flight and frames
    /// waiting, drops send-only groups, keeps what is wanted so that it is joined again.
    pub(super) fn mc_reset(&mut self) {
        let mut lost = 0;
        let mut ids = Vec::new();
        for (mgid, g) in self.mc.map.iter_mut() {
            if g.attached {
                self.events.push_back(InterfaceEvent::Detach {
                    mgid: *mgid,
                    mlid: g.mlid,
                });
            }
            g.attached = false;
            g.have = JoinState(0);
            g.mlid = 0;
            g.send_only = false;
            if let Some((id, _)) = g.query.take() {
                ids.push(id);
            }
            g.retry = None;
            g.backoff.reset();
            lost += g.queue.len();
            g.queue.clear();
        }
        self.mc.map.retain(|_, g| !g.want().is_empty());
        self.mc.absent.clear();
        self.mc.watched.clear();
        for id in ids {
            self.sa.cancel(id);
            self.requests.remove(&id);
        }
        self.drop_count(DropReason::Flushed, lost);
    }
}

trait PastOrNone {
    fn is_none_or_past(&self, now: Instant) -> bool;
}

impl PastOrNone for Option<Instant> {
    fn is_none_or_past(&self, now: Instant) -> bool {
        !matches!(self, Some(t) if *t > now)
    }
}
