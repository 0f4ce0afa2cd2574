//! MCMemberRecord: joins, leaves and queries (IBA 1 §15.2.5.17; OpenSM
//! `osm_sa_mcmember_record.c`, `osm_multicast.c`). The checks run in OpenSM's order, so that a
//! request with several faults gets the status OpenSM gives:
//!
//! Set (join): component mask lacks MGID|PortGID|JoinState -> ERR_REQ_INSUFFICIENT_COMPONENTS
//! (1B18); invalid MTU or rate code given with its selector -> ERR_REQ_INVALID; PortGID with
//! another subnet prefix -> ERR_REQ_INVALID_GID; PortGID not a known port -> ERR_REQ_INVALID;
//! proxy join by a port sharing no P_Key with it -> ERR_REQ_INVALID; P_Key given and invalid ->
//! ERR_REQ_INVALID; no such group and JoinState with neither FullMember nor SendOnlyFullMember ->
//! ERR_REQ_INVALID (1B10: OpenSM 3.3.23 "Join State != FullMember | SendOnlyFullMember"); no
//! such group and the create components (Q_Key, TClass, P_Key, FlowLabel, SL) missing ->
//! ERR_REQ_INSUFFICIENT_COMPONENTS (1B11); no unique MGID left -> ERR_NO_RESOURCES (1B23);
//! invalid requested MGID, or an IPoIB group without its broadcast group or disagreeing with it ->
//! ERR_REQ_INVALID (1B22/1B1B/1B1C); parameters not realizable by the port -> ERR_REQ_INVALID
//! (1B26); no MLID left -> ERR_NO_RESOURCES (1B19); joining an existing group with other
//! Q_Key/P_Key/TClass/SL/FlowLabel/HopLimit -> ERR_REQ_INVALID (1B1A); MTU/rate selectors not
//! met, port too slow or small, or JoinState 0 -> ERR_REQ_INVALID (1B12); port not in the group's
//! partition -> ERR_REQ_INVALID (1B14); changing another port's membership without ProxyJoin ->
//! ERR_REQ_INVALID (1B13).
//!
//! Delete (leave): component mask -> ERR_REQ_INSUFFICIENT_COMPONENTS (1B20); other prefix ->
//! ERR_REQ_INVALID_GID; no such group, port not a member, JoinState bits not all held, or
//! another requester without ProxyJoin -> ERR_REQ_INVALID (1B25).
//!
//! Membership: JoinStates of repeated joins are united. FullMember and SendOnlyFullMember (IBA 1.3
//! JoinState bit 3) both count as "full" ([`FULL_LIKE`]): either creates a group, a group's first
//! full member sends trap 66, and losing its last one sends trap 67, drops the remaining members
//! and deletes the group unless it was pre-created from partitions.conf (OpenSM `osm_mgrp_cleanup`,
//! `well_known`; measured against OpenSM 3.3.23 by `crates/runtime/tests/opensm_diff.rs`).
//!
//! Response records (measured, docs/OPENSM-NOTES.md): a join answers with the request's record
//! carrying the group's Q_Key, MLID, TClass, P_Key, SL/FlowLabel/HopLimit, MTU, rate and
//! PacketLifeTime, the port's accumulated JoinState and the *group's* Scope (OpenSM keeps the
//! group's scope with each member; the request's Scope field is ignored). A leave answers with
//! the request's record echoed, Scope again the group's, and the JoinState the port keeps (0 when
//! the port is removed: OpenSM `osm_mgrp_remove_port` removes it unless what is left holds a full
//! bit or the group keeps other full members).

use super::{Req, SaServer};
use crate::partitions::PrecreatedGroup;
use crate::sa::SaEvent;
use crate::subnet::CaPort;
use crate::time::Instant;
use core::cmp::Ordering;
use ipoib_wire::ib::lid::LID_MULTICAST_FIRST;
use ipoib_wire::ipoib::mcast::{broadcast_of, ipoib_signature, mgid_scope, IpVersion, Scope};
use ipoib_wire::mad::{Method, NoticeRepr, SaStatus};
use ipoib_wire::sa::{mcr_mask as m, JoinState, McMemberRecordRepr, Mtu, SaAttribute, Selector};
use ipoib_wire::{Gid, PKey};
use std::collections::{BTreeMap, BTreeSet};

/// One member port.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Member {
    pub join_state: JoinState,
    /// The join came from another port (IBA 1 o15-0.1.2 ProxyJoin).
    pub proxy: bool,
}

#[derive(Debug, Clone)]
pub(super) struct Group {
    /// The group's record (selectors "exactly"); PortGID/JoinState are the creator's.
    pub rec: McMemberRecordRepr,
    pub members: BTreeMap<Gid, Member>,
    pub well_known: bool,
    /// Members with the FullMember bit (OpenSM `mgrp->full_members`).
    pub full: usize,
}

/// A group as the SM and tests see it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct McastGroupInfo {
    /// The group's MCMemberRecord (MGID, MLID, Q_Key, P_Key, MTU, rate, SL ...).
    pub record: McMemberRecordRepr,
    /// Members in PortGID order.
    pub members: Vec<(Gid, JoinState)>,
    /// Pre-created from partitions.conf (never deleted).
    pub well_known: bool,
}

/// The MLIDs in use, with the lowest free one at or above [`LID_MULTICAST_FIRST`] (where OpenSM
/// starts, `IB_LID_MCAST_START_HO`) kept at hand: every MLID in `LID_MULTICAST_FIRST..low` is in
/// use and `low` is not, so the next allocation does not scan the groups already made (a subnet
/// of N hosts makes about N solicited-node groups, RFC 4291 §2.7.1).
#[derive(Debug)]
pub(super) struct MlidPool {
    used: BTreeSet<u16>,
    low: u32,
}

impl Default for MlidPool {
    fn default() -> MlidPool {
        MlidPool {
            used: BTreeSet::new(),
            low: u32::from(LID_MULTICAST_FIRST),
        }
    }
}

impl MlidPool {
    pub fn contains(&self, mlid: u16) -> bool {
        self.used.contains(&mlid)
    }

    pub fn insert(&mut self, mlid: u16) {
        self.used.insert(mlid);
        while u16::try_from(self.low).is_ok_and(|l| self.used.contains(&l)) {
            self.low += 1;
        }
    }

    pub fn remove(&mut self, mlid: u16) {
        if self.used.remove(&mlid) && mlid >= LID_MULTICAST_FIRST {
            self.low = self.low.min(u32::from(mlid));
        }
    }

    /// The lowest free MLID in `LID_MULTICAST_FIRST..=max`.
    pub fn lowest_free(&self, max: u16) -> Option<u16> {
        u16::try_from(self.low).ok().filter(|&l| l <= max)
    }
}

#[derive(Debug, Default)]
pub(super) struct Groups {
    pub by_mgid: BTreeMap<Gid, Group>,
    pub mlids: MlidPool,
    /// OpenSM `build_new_mgid`'s `uniq_count`.
    pub mgid_counter: u32,
}

impl Groups {
    pub fn membership(&self, mgid: &Gid) -> Option<SaEvent> {
        let g = self.by_mgid.get(mgid)?;
        Some(SaEvent::McastGroup {
            mgid: *mgid,
            mlid: g.rec.mlid,
            members: g.members.iter().map(|(k, v)| (*k, v.join_state)).collect(),
        })
    }

    pub fn infos(&self) -> Vec<McastGroupInfo> {
        self.by_mgid
            .values()
            .map(|g| McastGroupInfo {
                record: g.rec,
                members: g.members.iter().map(|(k, v)| (*k, v.join_state)).collect(),
                well_known: g.well_known,
            })
            .collect()
    }

    /// OpenSM `get_new_mlid`: the requested MLID if valid and free, else the lowest free one.
    fn new_mlid(&self, requested: u16, max: u16) -> Option<u16> {
        if requested >= LID_MULTICAST_FIRST && requested <= max && !self.mlids.contains(requested) {
            return Some(requested);
        }
        self.mlids.lowest_free(max)
    }
}

/// JoinState bits that make a port a "full" member for group lifetime: FullMember and
/// SendOnlyFullMember (OpenSM 3.3.23 creates a group on a SendOnlyFullMember join and deletes it
/// when that member leaves; `opensm_diff` steps 77-81).
pub(super) const FULL_LIKE: u8 = 0x1 | 0x8;

pub(super) fn is_full(js: u8) -> bool {
    js & FULL_LIKE != 0
}

fn exactly(mut r: McMemberRecordRepr) -> McMemberRecordRepr {
    r.mtu_selector = Selector::Exactly;
    r.rate_selector = Selector::Exactly;
    r.packet_life_time_selector = Selector::Exactly;
    r
}

/// The port's table has the partition of `pkey`, whatever the membership.
fn has_pkey(port: &CaPort, pkey: PKey) -> bool {
    port.pkeys.iter().any(|k| k.same_partition(pkey))
}

/// Two ports share a P_Key unless every common one is limited at both ends (OpenSM
/// `osm_physp_share_pkey` without `allow_both_pkeys`): some pair of entries matches.
pub(super) fn share_pkey(a: &CaPort, b: &CaPort) -> bool {
    a.pkeys
        .iter()
        .any(|&ka| b.pkeys.iter().any(|&kb| ka.matches(kb)))
}

/// OpenSM `validate_more_comp_fields`: the MTU and rate selectors against the group's values.
/// Only the selector bit is looked at, as OpenSM does.
fn selectors_ok(g: &McMemberRecordRepr, r: &McMemberRecordRepr, mask: u64) -> bool {
    if mask & m::MTU_SELECTOR != 0 {
        let (want, have) = (r.mtu, g.mtu);
        let ok = match r.mtu_selector {
            Selector::GreaterThan => have > want,
            Selector::LessThan => have < want,
            Selector::Exactly => have == want,
            Selector::LargestAvailable => true,
        };
        if !ok {
            return false;
        }
    }
    if mask & m::RATE_SELECTOR != 0 {
        let c = g.rate.cmp_speed(r.rate);
        let ok = match r.rate_selector {
            Selector::GreaterThan => c == Ordering::Greater,
            Selector::LessThan => c == Ordering::Less,
            Selector::Exactly => c == Ordering::Equal,
            Selector::LargestAvailable => true,
        };
        if !ok {
            return false;
        }
    }
    true
}

/// OpenSM `validate_other_comp_fields`.
fn other_fields_ok(g: &McMemberRecordRepr, r: &McMemberRecordRepr, mask: u64) -> bool {
    if mask & m::Q_KEY != 0 && r.qkey != g.qkey {
        return false;
    }
    // The request's P_Key is valid here (`join` refuses base 0 first), so this is the matching
    // rule: same partition, not both limited.
    if mask & m::P_KEY != 0 && !r.pkey.matches(g.pkey) {
        return false;
    }
    if mask & m::TCLASS != 0 && r.tclass != g.tclass {
        return false;
    }
    if mask & m::SL != 0 && r.sl != g.sl {
        return false;
    }
    if mask & m::FLOW_LABEL != 0 && r.flow_label != g.flow_label {
        return false;
    }
    if mask & m::HOP_LIMIT != 0 && r.hop_limit != g.hop_limit {
        return false;
    }
    true
}

/// OpenSM `validate_requested_mgid` (IBA 1 o15-0.1.5).
fn requested_mgid_ok(mgid: &Gid) -> bool {
    let g = mgid.0;
    if g[0] != 0xff {
        return false;
    }
    if ipoib_signature(mgid).is_some() {
        return true;
    }
    if g[1] & 0xe0 != 0 {
        return false;
    }
    // The signature OpenSM gives the MGIDs it assigns (`build_new_mgid`): not to be requested at
    // link-local scope.
    let sa_assigned = u16::from_be_bytes([g[2], g[3]]) == 0xa01b;
    !(sa_assigned && mgid_scope(mgid) == Scope::LinkLocal)
}

/// OpenSM `mgrp_request_is_realizable`: the group's MTU and rate from the request's selectors and
/// the creating port's capabilities (without both the selector and the value, the port's own).
fn realizable(r: &mut McMemberRecordRepr, mask: u64, port: &CaPort) -> bool {
    let given = |sel: u64, val: u64, s: Selector| {
        mask & sel != 0 && mask & val != 0 && s != Selector::LargestAvailable
    };
    let mtu = if !given(m::MTU_SELECTOR, m::MTU, r.mtu_selector) {
        port.mtu
    } else {
        let want = r.mtu;
        match r.mtu_selector {
            Selector::GreaterThan if want >= port.mtu => return false,
            Selector::GreaterThan => port.mtu,
            Selector::LessThan if want > port.mtu => port.mtu,
            // The next smaller code (OpenSM subtracts 1 from the code; from 0 it wraps to an
            // undefined code, refused below).
            Selector::LessThan => Mtu::from(u8::from(want).wrapping_sub(1)),
            _ => want,
        }
    };
    if !mtu.is_valid() {
        return false;
    }
    let rate = if !given(m::RATE_SELECTOR, m::RATE, r.rate_selector) {
        port.rate
    } else {
        let want = r.rate;
        match r.rate_selector {
            Selector::GreaterThan if want.cmp_speed(port.rate) != Ordering::Less => return false,
            Selector::GreaterThan => port.rate,
            Selector::LessThan if want.cmp_speed(port.rate) == Ordering::Greater => port.rate,
            Selector::LessThan => match want.slower() {
                Some(slower) => slower,
                None => return false,
            },
            _ => want,
        }
    };
    if !rate.is_valid() {
        return false;
    }
    r.mtu = mtu;
    r.rate = rate;
    true
}

impl SaServer {
    /// Creates a group from partitions.conf (OpenSM `osm_prtn_add_mcgroup`).
    pub(super) fn precreate(&mut self, g: &PrecreatedGroup) {
        if self.mc.by_mgid.contains_key(&g.mgid) {
            return;
        }
        let Some(mlid) = self.mc.new_mlid(0, self.cfg().max_mlid) else {
            return;
        };
        let rec = McMemberRecordRepr {
            mgid: g.mgid,
            qkey: g.qkey,
            mlid,
            mtu: g.mtu,
            tclass: g.tclass,
            pkey: g.pkey,
            rate: g.rate,
            packet_life_time: self.cfg().subnet_timeout,
            sl: g.sl,
            flow_label: g.flow_label,
            hop_limit: if g.scope == 2 { 0 } else { 0xff },
            scope: g.scope,
            join_state: JoinState::FULL_MEMBER,
            ..McMemberRecordRepr::default()
        };
        self.mc.mlids.insert(mlid);
        self.mc.by_mgid.insert(
            g.mgid,
            Group {
                rec: exactly(rec),
                members: BTreeMap::new(),
                well_known: true,
                full: 0,
            },
        );
        self.push_event(SaEvent::GroupCreated { mgid: g.mgid, mlid });
    }

    pub(super) fn mcmember(&mut self, now: Instant, req: &Req<'_>, r: McMemberRecordRepr) {
        let mask = req.mad.sa.component_mask;
        let sel_valid = (mask & m::RATE_SELECTOR == 0 || mask & m::RATE == 0 || r.rate.is_valid())
            && (mask & m::MTU_SELECTOR == 0 || mask & m::MTU == 0 || r.mtu.is_valid());
        match req.mad.header.method {
            Method::Set | Method::Delete => {
                if mask & m::JOIN != m::JOIN {
                    return self.respond_sa_error(req, SaStatus::ReqInsufficientComponents);
                }
                if !sel_valid {
                    return self.respond_sa_error(req, SaStatus::ReqInvalid);
                }
                let result = if req.mad.header.method == Method::Set {
                    self.join(now, req, r)
                } else {
                    self.leave(now, req, r)
                };
                match result {
                    Ok(rec) => self.respond(req, SaAttribute::McMemberRecord(exactly(rec))),
                    Err(s) => self.respond_sa_error(req, s),
                }
            }
            Method::Get | Method::GetTable => {
                if !sel_valid {
                    return self.respond_sa_error(req, SaStatus::ReqInvalid);
                }
                let recs = self.mc_query(req, &r);
                self.respond_records(now, req, recs);
            }
            _ => self.respond_error(
                req.raw,
                &req.from,
                ipoib_wire::mad::MadStatus::METHOD_ATTR_UNSUPPORTED,
            ),
        }
    }

    /// OpenSM `mcmr_rcv_join_mgrp`.
    fn join(
        &mut self,
        now: Instant,
        req: &Req<'_>,
        r: McMemberRecordRepr,
    ) -> Result<McMemberRecordRepr, SaStatus> {
        let mask = req.mad.sa.component_mask;
        if r.port_gid.subnet_prefix() != self.model().subnet_prefix {
            return Err(SaStatus::ReqInvalidGid);
        }
        let pidx = self
            .port_index_by_gid(&r.port_gid)
            .ok_or(SaStatus::ReqInvalid)?;
        let port = self.port(pidx).cloned().ok_or(SaStatus::ReqInvalid)?;
        let requester = self.port(req.port).cloned().ok_or(SaStatus::ReqInvalid)?;
        let proxy = pidx != req.port;
        if proxy && !share_pkey(&port, &requester) {
            return Err(SaStatus::ReqInvalid);
        }
        if mask & m::P_KEY != 0 && !r.pkey.is_valid() {
            return Err(SaStatus::ReqInvalid);
        }
        let join_state = JoinState(r.join_state.0 & 0x0f);
        let existing = self.mc.by_mgid.get(&r.mgid).map(|g| g.rec);
        let (grec, is_new) = match existing {
            Some(g) => {
                if self.cfg().join_validation && !other_fields_ok(&g, &r, mask) {
                    return Err(SaStatus::ReqInvalid);
                }
                (g, false)
            }
            None => {
                // OpenSM ERR 1B10: only a (send-only) full member creates.
                if !is_full(join_state.0) {
                    return Err(SaStatus::ReqInvalid);
                }
                if mask & m::CREATE != m::CREATE {
                    return Err(SaStatus::ReqInsufficientComponents);
                }
                (self.new_group_record(req, r, &port)?, true)
            }
        };
        if !selectors_ok(&grec, &r, mask)
            || port.mtu < grec.mtu
            || port.rate.cmp_speed(grec.rate) == Ordering::Less
            || join_state.is_empty()
        {
            return Err(SaStatus::ReqInvalid);
        }
        if !has_pkey(&port, grec.pkey) {
            return Err(SaStatus::ReqInvalid);
        }
        if !is_new {
            let g = self
                .mc
                .by_mgid
                .get(&grec.mgid)
                .ok_or(SaStatus::ReqInvalid)?;
            if let Some(mem) = g.members.get(&r.port_gid) {
                let ok = if mem.proxy {
                    has_pkey(&requester, grec.pkey)
                } else {
                    !proxy
                };
                if !ok {
                    return Err(SaStatus::ReqInvalid);
                }
            }
        }
        if is_new {
            self.mc.mlids.insert(grec.mlid);
            self.mc.by_mgid.insert(
                grec.mgid,
                Group {
                    rec: grec,
                    members: BTreeMap::new(),
                    well_known: false,
                    full: 0,
                },
            );
            self.push_event(SaEvent::GroupCreated {
                mgid: grec.mgid,
                mlid: grec.mlid,
            });
        }
        let union = {
            let g = self
                .mc
                .by_mgid
                .get_mut(&grec.mgid)
                .ok_or(SaStatus::ReqInvalid)?;
            let mem = g.members.entry(r.port_gid).or_insert(Member {
                join_state: JoinState(0),
                proxy,
            });
            let was_full = is_full(mem.join_state.0);
            mem.join_state = mem.join_state.union(join_state);
            let union = mem.join_state;
            let now_full = is_full(union.0);
            if now_full && !was_full {
                g.full += 1;
            }
            (union, now_full && !was_full && g.full == 1)
        };
        if union.1 {
            self.send_gid_trap(now, NoticeRepr::TRAP_MCAST_GROUP_CREATED, grec.mgid);
        }
        self.mark_dirty(grec.mgid);
        let mut out = r;
        out.mgid = grec.mgid;
        out.qkey = grec.qkey;
        out.mlid = grec.mlid;
        out.tclass = grec.tclass;
        out.pkey = grec.pkey;
        out.sl = grec.sl;
        out.flow_label = grec.flow_label;
        out.hop_limit = grec.hop_limit;
        out.mtu = grec.mtu;
        out.rate = grec.rate;
        out.packet_life_time = grec.packet_life_time;
        // OpenSM keeps the group's scope with the member and answers with it, whatever Scope
        // the request carried (opensm_diff steps 1, 70, 71, 74).
        out.scope = grec.scope;
        out.join_state = union.0;
        Ok(out)
    }

    /// OpenSM `mcmr_rcv_create_new_mgrp`: the record of a group about to be created.
    fn new_group_record(
        &mut self,
        req: &Req<'_>,
        r: McMemberRecordRepr,
        port: &CaPort,
    ) -> Result<McMemberRecordRepr, SaStatus> {
        let mask = req.mad.sa.component_mask;
        let mut rec = r;
        if r.mgid == Gid::ZERO {
            rec.mgid = self.build_new_mgid(mask, &r).ok_or(SaStatus::NoResources)?;
        } else if self.cfg().ipoib_creation_validation {
            if !requested_mgid_ok(&rec.mgid) {
                return Err(SaStatus::ReqInvalid);
            }
            if let Some(version) = ipoib_signature(&rec.mgid) {
                // The broadcast group of the request's scope and P_Key bits.
                let bcast = broadcast_of(&rec.mgid);
                if version != IpVersion::V4 || bcast != rec.mgid {
                    let bg = self.mc.by_mgid.get(&bcast).ok_or(SaStatus::ReqInvalid)?;
                    if !other_fields_ok(&bg.rec, &r, mask) {
                        return Err(SaStatus::ReqInvalid);
                    }
                }
            }
        }
        if !realizable(&mut rec, mask, port) {
            return Err(SaStatus::ReqInvalid);
        }
        let Some(mlid) = self.mc.new_mlid(r.mlid, self.cfg().max_mlid) else {
            self.stats_mut().no_mlid += 1;
            return Err(SaStatus::NoResources);
        };
        rec.mlid = mlid;
        rec.join_state = JoinState(r.join_state.0 & 0x0f);
        Ok(exactly(rec))
    }

    /// OpenSM `build_new_mgid`: `ff1<scope>:a01b:<subnet prefix>` with a counter in bytes 10..14,
    /// written in host order by OpenSM (`memcpy` of a `uint32_t`); x86's little-endian bytes are
    /// reproduced here. Scope from the request if its component is given, else link-local.
    fn build_new_mgid(&mut self, mask: u64, r: &McMemberRecordRepr) -> Option<Gid> {
        let scope = if mask & m::SCOPE != 0 {
            r.scope & 0x0f
        } else {
            2
        };
        let mut g = [0u8; 16];
        g[0] = 0xff;
        g[1] = 0x10 | scope;
        g[2] = 0xa0;
        g[3] = 0x1b;
        g[4..12].copy_from_slice(&self.model().subnet_prefix.to_be_bytes());
        for _ in 0..1000 {
            g[10..14].copy_from_slice(&self.mc.mgid_counter.to_le_bytes());
            self.mc.mgid_counter = self.mc.mgid_counter.wrapping_add(1);
            if !self.mc.by_mgid.contains_key(&Gid(g)) {
                return Some(Gid(g));
            }
        }
        None
    }

    /// OpenSM `mcmr_rcv_leave_mgrp` and `osm_mgrp_remove_port`.
    fn leave(
        &mut self,
        now: Instant,
        req: &Req<'_>,
        r: McMemberRecordRepr,
    ) -> Result<McMemberRecordRepr, SaStatus> {
        if r.port_gid.subnet_prefix() != self.model().subnet_prefix {
            return Err(SaStatus::ReqInvalidGid);
        }
        let requester = self.port(req.port).cloned().ok_or(SaStatus::ReqInvalid)?;
        let requester_gid = self.model().gid(&requester);
        let g = self.mc.by_mgid.get(&r.mgid).ok_or(SaStatus::ReqInvalid)?;
        let mem = *g.members.get(&r.port_gid).ok_or(SaStatus::ReqInvalid)?;
        let req_js = r.join_state.0 & 0x0f;
        let held = mem.join_state.0 & 0x0f;
        if req_js & held == 0 || (req_js | held) != held {
            return Err(SaStatus::ReqInvalid);
        }
        let ok = if mem.proxy {
            has_pkey(&requester, g.rec.pkey)
        } else {
            requester_gid == r.port_gid
        };
        if !ok {
            return Err(SaStatus::ReqInvalid);
        }
        let (kept, scope) = self
            .remove_join_state(now, r.mgid, r.port_gid, held, req_js)
            .ok_or(SaStatus::ReqInvalid)?;
        // The request echoed with the group's scope and what the port keeps (OpenSM
        // mcmr_rcv_leave_mgrp; opensm_diff steps 38, 41, 48, 49, 75).
        let mut out = r;
        out.scope = scope;
        out.join_state = kept;
        Ok(out)
    }

    /// OpenSM `mcmr_query_mgrp` / `mcmr_by_comp_mask`.
    fn mc_query(&self, req: &Req<'_>, r: &McMemberRecordRepr) -> Vec<SaAttribute> {
        let mask = req.mad.sa.component_mask;
        let trusted = req.mad.sa.sm_key != 0;
        let Some(requester) = self.port(req.port) else {
            return Vec::new();
        };
        let mut out = Vec::new();
        for g in self.mc.by_mgid.values() {
            let gr = &g.rec;
            if (mask & m::MGID != 0 && r.mgid != gr.mgid)
                || (mask & m::MLID != 0 && r.mlid != gr.mlid)
                || !has_pkey(requester, gr.pkey)
                || (mask & m::Q_KEY != 0 && r.qkey != gr.qkey)
                || (mask & m::P_KEY != 0 && r.pkey != gr.pkey)
                || (mask & m::TCLASS != 0 && r.tclass != gr.tclass)
                || (mask & m::SL != 0 && r.sl != gr.sl)
                || (mask & m::FLOW_LABEL != 0 && r.flow_label != gr.flow_label)
                || (mask & m::HOP_LIMIT != 0 && r.hop_limit != gr.hop_limit)
                || (mask & m::PROXY_JOIN != 0 && r.proxy_join != gr.proxy_join)
                || !selectors_ok(gr, r, mask)
            {
                continue;
            }
            let mut state_mask = 0u8;
            if mask & m::SCOPE != 0 {
                state_mask |= 0xf0;
            }
            if mask & m::JOIN_STATE != 0 {
                state_mask |= 0x0f;
            }
            let want = (r.scope << 4) | (r.join_state.0 & 0x0f);
            let record = |port_gid: Gid, js: JoinState, proxy: bool| {
                let mut x = *gr;
                x.port_gid = port_gid;
                x.join_state = js;
                x.proxy_join = proxy;
                if !trusted {
                    x.port_gid = Gid::ZERO;
                    x.join_state = JoinState(0);
                    x.proxy_join = false;
                }
                SaAttribute::McMemberRecord(x)
            };
            if mask & m::PORT_GID != 0 {
                let Some(mem) = g.members.get(&r.port_gid) else {
                    continue;
                };
                let have = (gr.scope << 4) | mem.join_state.0;
                if state_mask & want == state_mask & have {
                    out.push(record(r.port_gid, mem.join_state, mem.proxy));
                }
            } else if trusted {
                for (pg, mem) in &g.members {
                    let have = (gr.scope << 4) | mem.join_state.0;
                    if state_mask & want == state_mask & have {
                        out.push(record(*pg, mem.join_state, mem.proxy));
                    }
                }
            } else {
                let have = (gr.scope << 4) | gr.join_state.0;
                if state_mask & want == state_mask & have {
                    out.push(record(gr.port_gid, gr.join_state, gr.proxy_join));
                }
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::{Groups, MlidPool};
    use ipoib_wire::ib::lid::LID_MULTICAST_FIRST;

    // OpenSM get_new_mlid: the requested MLID when valid and free, else the lowest free one;
    // with the cursor, holes left by deleted groups are found again and a full range is None.
    #[test]
    fn lowest_free_mlid_with_holes_and_a_full_range() {
        let mut g = Groups::default();
        let max = LID_MULTICAST_FIRST + 9;
        for i in 0..10 {
            let l = g.new_mlid(0, max).unwrap();
            assert_eq!(l, LID_MULTICAST_FIRST + i);
            g.mlids.insert(l);
        }
        assert_eq!(g.new_mlid(0, max), None, "range full");
        g.mlids.remove(LID_MULTICAST_FIRST + 7);
        g.mlids.remove(LID_MULTICAST_FIRST + 3);
        assert_eq!(g.new_mlid(0, max), Some(LID_MULTICAST_FIRST + 3));
        assert_eq!(
            g.new_mlid(LID_MULTICAST_FIRST + 7, max),
            Some(LID_MULTICAST_FIRST + 7)
        );
        g.mlids.insert(LID_MULTICAST_FIRST + 3);
        assert_eq!(g.new_mlid(0, max), Some(LID_MULTICAST_FIRST + 7));
        // Taken out of order (a requested MLID), then the gap below it filled.
        g.mlids.insert(LID_MULTICAST_FIRST + 7);
        assert_eq!(g.new_mlid(0, max), None);
        assert_eq!(
            g.new_mlid(LID_MULTICAST_FIRST + 5, max),
            None,
            "requested but in use"
        );
        // MLIDs below the multicast range (never allocated here) do not move the cursor.
        let mut p = MlidPool::default();
        p.insert(5);
        p.remove(5);
        assert_eq!(p.lowest_free(0xffff), Some(LID_MULTICAST_FIRST));
        p.insert(LID_MULTICAST_FIRST + 1);
        assert_eq!(p.lowest_free(0xffff), Some(LID_MULTICAST_FIRST));
        p.insert(LID_MULTICAST_FIRST);
        assert_eq!(p.lowest_free(0xffff), Some(LID_MULTICAST_FIRST + 2));
        assert_eq!(p.lowest_free(LID_MULTICAST_FIRST + 1), None);
        // The top of the MLID space.
        let mut p = MlidPool::default();
        for l in LID_MULTICAST_FIRST..=0xffff {
            p.insert(l);
        }
        assert_eq!(p.lowest_free(0xffff), None);
        p.remove(0xffff);
        assert_eq!(p.lowest_free(0xffff), Some(0xffff));
    }
}
