//! InformInfo subscriptions and Notice reports (IBA 1 §13.4.8.3, §13.4.11; OpenSM
//! `osm_sa_informinfo.c`, `osm_inform.c`).
//!
//! Set(InformInfo): another method -> METHOD_ATTR_UNSUPPORTED; Subscribe above 1, a security trap
//! (256-259) without an SM_Key, or unsubscribing what was never subscribed -> ERR_REQ_INVALID
//! (OpenSM 430A, 430B, 4307); a subscription whose trap source the requester may not reach
//! (IBA 1 o13-14.1.1: a GID of no port or of a port sharing no P_Key with the requester, a LID
//! range past the LIDs given out or holding such a port) -> ERR_REQ_INVALID, Subscribe 0 (OpenSM
//! 4305, `__validate_ports_access_rights`); a new subscription past [`MAX_INFORMS`] -> ERR_NO_RESOURCES,
//! Subscribe 0 (OpenSM 4306, when its allocation fails). The report address is the Set's source
//! address (OpenSM copies the MAD address, C13-32.1.2), its QP replacing the InformInfo QPN as
//! OpenSM does.
//!
//! Reports: a generic notice matches a subscription when IsGeneric agrees and TrapNumber, Type and
//! ProducerType are equal or "all" (0xFFFF, 0xFFFF, 0xFFFFFF), and the issuer is the subscribed
//! GID or inside the LID range (OpenSM `match_notice_to_inf_rec`). Each is sent as
//! SubnAdmReport(Notice) and resent every `report_timeout` until a ReportResp with its TID comes
//! back, at most `report_tries` sends.

use super::mcast::share_pkey;
use super::{Req, SaServer};
use crate::mad_agent::{MadAddr, MadOut};
use crate::time::Instant;
use ipoib_wire::mad::{
    MadHeaderRepr, MadStatus, Method, MgmtClass, NoticeRepr, RmppRepr, SaStatus, BASE_VERSION,
    MAD_LEN, SA_CLASS_VERSION,
};
use ipoib_wire::sa::{InformInfoRepr, SaAttribute, SaHeaderRepr, SaMadRepr};
use ipoib_wire::{Gid, QKey};
use std::collections::{BTreeMap, BTreeSet};

/// Subscriptions kept at most. OpenSM keeps as many as memory holds and answers a Set it cannot
/// allocate ERR_NO_RESOURCES with Subscribe 0 (osm_sa_informinfo.c "ERR 4306"); this SA answers
/// so past this count (docs/OPENSM-LIMITS.md).
pub const MAX_INFORMS: usize = 4096;

/// Byte of the Subscribe field inside the MAD (SA data at 56, InformInfo byte 23).
const SUBSCRIBE_BYTE: usize = 56 + 23;

#[derive(Debug, Clone)]
pub(super) struct Subscription {
    pub to: MadAddr,
    pub info: InformInfoRepr,
}

#[derive(Debug, Clone)]
pub(super) struct PendingReport {
    to: MadAddr,
    mad: [u8; MAD_LEN],
    deadline: Instant,
    sends: u8,
}

/// Subscriptions and the Reports waiting for their ReportResp. `deadlines` indexes `pending` by
/// resend time, so that the next deadline and the due Reports cost O(log n) however many Reports
/// are outstanding (a subnet where N ports subscribe and N groups appear has N² of them).
#[derive(Debug, Default)]
pub(super) struct Informs {
    pub subs: Vec<Subscription>,
    pending: BTreeMap<u64, PendingReport>,
    deadlines: BTreeSet<(Instant, u64)>,
    pub next_tid: u64,
}

impl Informs {
    pub fn next_deadline(&self) -> Option<Instant> {
        self.deadlines.first().map(|(t, _)| *t)
    }

    fn insert(&mut self, tid: u64, p: PendingReport) {
        self.deadlines.insert((p.deadline, tid));
        if let Some(old) = self.pending.insert(tid, p) {
            self.deadlines.remove(&(old.deadline, tid));
        }
    }

    fn remove(&mut self, tid: u64) -> Option<PendingReport> {
        let p = self.pending.remove(&tid)?;
        self.deadlines.remove(&(p.deadline, tid));
        Some(p)
    }

    /// The TIDs whose deadline is `now` or earlier, oldest first.
    fn due(&self, now: Instant) -> Vec<u64> {
        self.deadlines
            .iter()
            .take_while(|(t, _)| *t <= now)
            .map(|(_, tid)| *tid)
            .collect()
    }
}

/// What [`SaServer::report_access`] allows for one subscriber.
enum Access {
    Send,
    Skip,
    Remove,
}

fn same_subscription(a: &Subscription, b: &Subscription) -> bool {
    let (x, y) = (&a.info, &b.info);
    a.to.lid == b.to.lid
        && x.qpn == y.qpn
        && x.gid == y.gid
        && x.lid_range_begin == y.lid_range_begin
        && x.lid_range_end == y.lid_range_end
        && x.is_generic == y.is_generic
        && x.notice_type == y.notice_type
        && x.trap_number_or_device_id == y.trap_number_or_device_id
        && x.producer_type_or_vendor_id == y.producer_type_or_vendor_id
}

fn matches(info: &InformInfoRepr, n: &NoticeRepr) -> bool {
    if info.is_generic != n.is_generic {
        return false;
    }
    let all16 = InformInfoRepr::ALL_16;
    if info.trap_number_or_device_id != all16
        && info.trap_number_or_device_id != n.trap_number_or_device_id
    {
        return false;
    }
    if info.notice_type != all16 && info.notice_type != u16::from(u8::from(n.notice_type)) {
        return false;
    }
    if info.producer_type_or_vendor_id != InformInfoRepr::ALL_24
        && info.producer_type_or_vendor_id != n.producer_type_or_vendor_id
    {
        return false;
    }
    if info.gid != Gid::ZERO {
        return info.gid == n.issuer_gid;
    }
    info.lid_range_begin == all16
        || (n.issuer_lid >= info.lid_range_begin
            && n.issuer_lid <= info.lid_range_end.max(info.lid_range_begin))
}

impl SaServer {
    pub(super) fn inform_info(&mut self, req: &Req<'_>, r: InformInfoRepr) {
        if req.mad.header.method != Method::Set {
            return self.respond_error(req.raw, &req.from, MadStatus::METHOD_ATTR_UNSUPPORTED);
        }
        if req.raw.get(SUBSCRIBE_BYTE).copied().unwrap_or(0) > 1 {
            return self.respond_sa_error(req, SaStatus::ReqInvalid);
        }
        if req.mad.sa.sm_key == 0
            && r.is_generic
            && (256..=259).contains(&r.trap_number_or_device_id)
        {
            return self.respond_sa_error(req, SaStatus::ReqInvalid);
        }
        if r.subscribe && !self.access_ok(req, &r) {
            // OpenSM "ERR 4305": ERR_REQ_INVALID, Subscribe 0 in the answer (o13-13.1.1).
            let mut raw = [0u8; MAD_LEN];
            raw.copy_from_slice(&req.raw[..MAD_LEN]);
            raw[SUBSCRIBE_BYTE] = 0;
            return self.respond_error(&raw, &req.from, MadStatus::sa(SaStatus::ReqInvalid));
        }
        let mut info = r;
        if r.subscribe {
            info.qpn = req.from.qpn;
        }
        let sub = Subscription {
            to: MadAddr {
                qkey: QKey::GSI,
                ..req.from
            },
            info,
        };
        let found = self
            .informs
            .subs
            .iter()
            .position(|s| same_subscription(s, &sub));
        match (r.subscribe, found) {
            (true, Some(i)) => self.informs.subs[i] = sub,
            (true, None) if self.informs.subs.len() >= MAX_INFORMS => {
                // OpenSM "ERR 4306": NO_RESOURCES, Subscribe 0 in the answer (o13-13.1.1).
                let mut raw = [0u8; MAD_LEN];
                raw.copy_from_slice(&req.raw[..MAD_LEN]);
                raw[SUBSCRIBE_BYTE] = 0;
                let status = MadStatus::sa(SaStatus::NoResources);
                self.stats_mut().informs_refused += 1;
                return self.respond_error(&raw, &req.from, status);
            }
            (true, None) => self.informs.subs.push(sub),
            (false, Some(i)) => {
                self.informs.subs.remove(i);
            }
            (false, None) => return self.respond_sa_error(req, SaStatus::ReqInvalid),
        }
        self.respond(req, SaAttribute::InformInfo(r));
    }

    /// IBA 1 o13-14.1.1 (OpenSM `osm_sa_informinfo.c` `__validate_ports_access_rights`): a
    /// subscription naming its trap source by GID needs that port to exist (by its GUID) and to
    /// share a P_Key with the requester; one naming a LID range (LIDRangeBegin other than 0xFFFF,
    /// all; LIDRangeEnd 0 for the begin alone) needs every LID of it within the LIDs given out
    /// and every port holding one to share a P_Key with the requester.
    fn access_ok(&self, req: &Req<'_>, r: &InformInfoRepr) -> bool {
        let Some(requester) = self.port(req.port) else {
            return false;
        };
        let shares = |i: usize| self.endport(i).is_some_and(|p| share_pkey(p, requester));
        if r.gid != Gid::ZERO {
            return self
                .endport_index_by_guid(r.gid.interface_id())
                .is_some_and(shares);
        }
        let begin = r.lid_range_begin;
        if begin == InformInfoRepr::ALL_16 {
            return true;
        }
        let end = if r.lid_range_end == 0 {
            begin
        } else {
            r.lid_range_end
        };
        // OpenSM's LID table holds every LID given out, up to the highest.
        let top = (0..self.endport_count())
            .filter_map(|i| self.endport(i))
            .filter(|p| p.lid != 0)
            .map(|p| u32::from(p.lid) + (1u32 << p.lmc.min(16)) - 1)
            .max()
            .unwrap_or(0);
        (u32::from(begin)..=u32::from(end)).all(|lid| {
            lid <= top
                && u16::try_from(lid)
                    .ok()
                    .and_then(|l| self.endport_index_by_lid(l))
                    .is_none_or(shares)
        })
    }

    /// Whether a report of trap `trap` naming `gid` may go to subscriber `s` (IBA 1 o13-17.1.1;
    /// OpenSM `osm_inform.c` `is_access_permitted`): its port must be one of the subnet's; for
    /// traps 66/67 it must hold the group's P_Key; for the others it must share a P_Key with the
    /// port the trap names, and a subscription by LID range that does not is removed (o13-17.1.2).
    fn report_access(&self, s: &Subscription, trap: u16, gid: Gid) -> Access {
        let Some(dest) = self
            .endport_index_by_lid(s.to.lid)
            .and_then(|i| self.endport(i))
        else {
            return Access::Skip;
        };
        let ok = if trap == NoticeRepr::TRAP_MCAST_GROUP_CREATED
            || trap == NoticeRepr::TRAP_MCAST_GROUP_DELETED
        {
            self.mc
                .by_mgid
                .get(&gid)
                .is_some_and(|g| dest.pkeys.iter().any(|k| k.base() == g.rec.pkey.base()))
        } else {
            let shared = self
                .endport_index_by_guid(gid.interface_id())
                .and_then(|i| self.endport(i))
                .is_some_and(|src| share_pkey(src, dest));
            if !shared && s.info.lid_range_begin != InformInfoRepr::ALL_16 {
                return Access::Remove;
            }
            shared
        };
        if ok {
            Access::Send
        } else {
            Access::Skip
        }
    }

    /// Sends the SM's trap `trap` (64-67) naming `gid` (IBA 1 §14.2.5.1: DataDetails carries the
    /// GID, the issuer is the SM; OpenSM `mgrp_send_notice` for 66/67) to every subscriber it matches ([`matches`]) and may reach
    /// ([`SaServer::report_access`]); a subscription by LID range to a source it may no longer
    /// reach goes (IBA 1 o13-17.1.2).
    pub(super) fn send_gid_trap(&mut self, now: Instant, trap: u16, gid: Gid) {
        let sm_lid = self.model().sm_lid;
        let notice = NoticeRepr::gid_trap(trap, gid, sm_lid, self.sm_gid());
        let verdicts: Vec<(usize, Access)> = (self.informs.subs.iter().enumerate())
            .filter(|(_, s)| matches(&s.info, &notice))
            .map(|(i, s)| (i, self.report_access(s, trap, gid)))
            .collect();
        let targets: Vec<MadAddr> = (verdicts.iter())
            .filter(|(_, a)| matches!(a, Access::Send))
            .map(|&(i, _)| self.informs.subs[i].to)
            .collect();
        self.stats_mut().reports_refused += (verdicts.len() - targets.len()) as u64;
        for (i, a) in verdicts.iter().rev() {
            if matches!(a, Access::Remove) {
                self.informs.subs.remove(*i);
            }
        }
        for to in targets {
            let tid = self.informs.next_tid;
            self.informs.next_tid = self.informs.next_tid.wrapping_add(1);
            let mad = SaMadRepr {
                header: MadHeaderRepr {
                    base_version: BASE_VERSION,
                    mgmt_class: MgmtClass::SubnAdm,
                    class_version: SA_CLASS_VERSION,
                    method: Method::Report,
                    status: MadStatus::SUCCESS,
                    class_specific: 0,
                    transaction_id: tid,
                    attribute_id: ipoib_wire::mad::attr::sa::NOTICE,
                    attribute_modifier: 0,
                },
                rmpp: RmppRepr::NONE,
                sa: SaHeaderRepr::default(),
                attribute: SaAttribute::Notice(notice),
            }
            .to_bytes();
            let deadline = now + self.cfg().report_timeout;
            self.informs.insert(
                tid,
                PendingReport {
                    to,
                    mad,
                    deadline,
                    sends: 1,
                },
            );
            self.stats_mut().reports_sent += 1;
            self.push_out(MadOut {
                to,
                mad: mad.to_vec(),
            });
        }
    }

    pub(super) fn report_resp(&mut self, tid: u64) {
        if self.informs.remove(tid).is_none() {
            *self
                .stats_mut()
                .dropped
                .entry("ReportResp for unknown report")
                .or_insert(0) += 1;
        }
    }

    pub(super) fn report_timeouts(&mut self, now: Instant) {
        let due = self.informs.due(now);
        let (timeout, tries) = (self.cfg().report_timeout, self.cfg().report_tries);
        for tid in due {
            let Some(mut p) = self.informs.remove(tid) else {
                continue;
            };
            if p.sends >= tries {
                self.stats_mut().reports_lost += 1;
                continue;
            }
            p.sends += 1;
            p.deadline = now + timeout;
            let m = MadOut {
                to: p.to,
                mad: p.mad.to_vec(),
            };
            self.informs.insert(tid, p);
            self.stats_mut().reports_sent += 1;
            self.push_out(m);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn report(deadline: Instant) -> PendingReport {
        PendingReport {
            to: MadAddr::gsi(2),
            mad: [0; MAD_LEN],
            deadline,
            sends: 1,
        }
    }

    // Regression (the IPoIB demo on 160+ hosts spent 90% of its time here): the next deadline and
    // the due Reports come from the deadline index, which follows every insert, resend and
    // ReportResp. OpenSM osm_inform.c semantics are unchanged (tests::mcast
    // reports_are_retransmitted_until_acknowledged).
    #[test]
    fn deadline_index_follows_pending_reports() {
        let t = |ms: u64| Instant::ZERO + Duration::from_millis(ms);
        let mut i = Informs::default();
        assert_eq!(i.next_deadline(), None);
        for tid in 0..1000u64 {
            i.insert(tid, report(t(1000 - tid)));
        }
        assert_eq!(i.next_deadline(), Some(t(1)));
        assert_eq!(i.due(t(3)), vec![999, 998, 997]);
        assert!(i.remove(999).is_some(), "acknowledged");
        assert!(i.remove(999).is_none());
        assert_eq!(i.next_deadline(), Some(t(2)));
        // A resend moves the Report to its new deadline.
        let mut p = i.remove(998).unwrap();
        p.deadline = t(5000);
        i.insert(998, p);
        assert_eq!(i.due(t(3)), vec![997]);
        assert_eq!(i.deadlines.len(), i.pending.len());
        for tid in 0..1000 {
            i.remove(tid);
        }
        assert_eq!(i.next_deadline(), None);
        assert!(i.deadlines.is_empty());
    }
}
