//! The subscription to the multicast group traps 66 (created) and 67 (deleted), held only while
//! the interface needs it.
//!
//! draft-ietf-ipoib-ip-over-infiniband-06 §11: "Senders MUST subscribe to the multicast group
//! create and delete traps in order to monitor the status of specific IB multicast groups. E.g.,
//! multicast packets directed to the all-router multicast group due to a lack of listener on the
//! local subnet must be forwarded to the right multicast group if the group is created later."
//! §12 C: a router in promiscuous mode subscribes to every group creation.
//!
//! Our reading: a "sender" in the sense of §11 is an interface with an unresolved send to a group
//! that does not exist — it holds an entry in its cache of absent groups (its SendOnlyNonMember
//! join was refused, so its packets went to all routers or were dropped, and further packets are
//! answered from the cache). Only such an interface has a group status to monitor: a sender to a
//! group that exists is a SendOnlyNonMember of it and sends to its MLID. Subscribing every
//! interface at bring-up, as a literal reading would, makes the SA send N Reports to N subscribers
//! whenever N hosts create their groups (IPv6 solicited-node groups), each Report acknowledged:
//! N² work on a subnet where nobody needs it. So the interface subscribes while:
//! - it holds at least one "group absent" entry (the all-routers fallback or a cached drop), or
//! - it holds a SendOnlyNonMember membership of a group it learned of from trap 66 after it had
//!   been absent ("watched"; trap 67 sends the next packets back to all routers, §11's example
//!   in the other direction), or a watched group it has not sent to again yet, until the absent
//!   entry would have expired, or
//! - it is a router in promiscuous mode (§12 C).
//!
//! It unsubscribes (InformInfo Subscribe = 0, IBA 1 §13.4.8.3) when none of these holds any more
//! (absent entries expire after `GROUP_ABSENT_HOLD` or are resolved by trap 66 or an own join).
//!
//! A group created between the refused join and the SA's answer to the subscription is missed;
//! its absent entry then expires after `GROUP_ABSENT_HOLD` and the next packet tries the group
//! again (the same as a lost Report).
//!
//! After the link was down (a heavy flush: the port went down, or its P_Key or LID changed) the SA
//! may or may not hold the subscription: the SM and SA may have restarted or been replaced while
//! the port was down, and a port that was down gets no ClientReregister for it from an SM that
//! does not know it as new (IBA 1 §14.4.11). So once the link is up again the interface
//! subscribes afresh if it needs the traps (Subscribe is idempotent: an SA that kept the
//! subscription updates it in place, OpenSM `osm_sa_informinfo.c` "Update the old instance",
//! `sa::server::inform` likewise), and unsubscribes if it does not; that unsubscription failing
//! (ERR_REQ_INVALID, OpenSM "ERR 4307": the SA holds nothing) is expected and not warned of.
//!
//! A light flush (ClientReregister or a new SM, IBA 1 §14.4.11) is handled the same way, the link
//! staying up: the SA is presumed to have lost a settled subscription (that is what the request to
//! register again says), but may hold one whose Set was in flight. The requests of the change in
//! flight are forgotten first (cancelled, dropped from the interface's requests), so their late
//! answers match no request and only the new change's answers count; then the interface
//! subscribes if it needs the traps, and unsubscribes if not only when a change was in flight (or
//! the state was already unknown after a link down).
//!
//! Invariants: at most one subscription change (the Set for both traps) in flight, and only its
//! requests are in `requests`; `on` is what the SA holds once no change is in flight, unless
//! `unknown` (a link down while the SA held or may have held one, or a flush while a change was in flight); nothing is sent while the
//! link is not up.

use super::{Interface, Link, LogLevel, Pending};
use crate::time::Instant;
use ipoib_wire::mad::{InformInfoRepr, Method, NoticeRepr};
use ipoib_wire::sa::{SaAttribute, SaMadRepr};
use std::time::Duration;

/// How long after a refused subscription it is tried again.
const SUBSCRIBE_RETRY: Duration = Duration::from_secs(1);

/// The state of the interface's subscription to traps 66 and 67.
#[derive(Debug, Default)]
pub(super) struct TrapSub {
    /// Subscribed (or asked to be): what the SA holds once `inflight` is 0.
    pub on: bool,
    /// Answers still awaited for the last change (one per trap).
    pub inflight: u8,
    /// A change in flight failed.
    pub failed: bool,
    /// No new subscription before this (after a refused one).
    pub retry: Option<Instant>,
    /// The SA may hold a subscription `on` does not show (the link went down meanwhile): the
    /// next change is sent whatever `on` says.
    pub unknown: bool,
    /// The change in flight undoes a subscription the SA may not hold: its failure is expected.
    pub undo_unknown: bool,
}

impl TrapSub {
    #[inline]
    pub fn next_deadline(&self) -> Option<Instant> {
        self.retry
    }
}

impl Interface {
    /// Whether the interface needs traps 66/67 now (see the module docs for the reading of §11).
    fn traps_needed(&mut self, now: Instant) -> bool {
        if self.cfg.router {
            return true;
        }
        self.mc.absent.retain(|_, t| *t > now);
        let map = &self.mc.map;
        self.mc.watched.retain(|m, t| {
            if *t != Instant::NEVER && *t > now {
                return true;
            }
            // Past the hold: kept (with no deadline) while its send-only membership is held.
            let held = map
                .get(m)
                .is_some_and(|g| g.send_only || !g.have.is_empty());
            *t = Instant::NEVER;
            held
        });
        !self.mc.absent.is_empty() || !self.mc.watched.is_empty()
    }

    /// Subscribes or unsubscribes when the need changed and no change is in flight.
    pub(super) fn traps_sync(&mut self, now: Instant) {
        if self.link != Link::Up || self.traps.inflight > 0 {
            return;
        }
        if self.traps.retry.is_some_and(|t| t <= now) {
            self.traps.retry = None;
        }
        let need = self.traps_needed(now);
        let undo_unknown = self.traps.unknown && !need;
        if !undo_unknown && (need == self.traps.on || (need && self.traps.retry.is_some())) {
            return;
        }
        self.traps.on = need;
        self.traps.unknown = false;
        self.traps.undo_unknown = undo_unknown;
        self.traps.failed = false;
        self.traps.inflight = 2;
        for trap in [
            NoticeRepr::TRAP_MCAST_GROUP_CREATED,
            NoticeRepr::TRAP_MCAST_GROUP_DELETED,
        ] {
            // A wildcard subscription (any GID) also serves §12 C.
            let mad = SaMadRepr::request(
                Method::Set,
                0,
                0,
                SaAttribute::InformInfo(InformInfoRepr::generic(need, trap, 1)),
            );
            let id = self.sa.request(now, mad, self.sa_dest());
            self.requests.insert(id, Pending::Inform(trap));
        }
        let what = if need {
            "subscribing to"
        } else {
            "unsubscribing from"
        };
        self.log(LogLevel::Info, format_args!("{what} traps 66/67"));
    }

    /// The SA answered one half of a subscription change.
    pub(super) fn on_inform_result(&mut self, now: Instant, trap: u16, ok: Result<(), String>) {
        self.traps.inflight = self.traps.inflight.saturating_sub(1);
        if let Err(e) = ok {
            let (level, what) = if self.traps.on {
                (LogLevel::Warn, "subscription to")
            } else if self.traps.undo_unknown {
                // The SA held nothing (it restarted while the link was down, or before a
                // ClientReregister): nothing to undo.
                (LogLevel::Info, "unsubscription (after a flush) from")
            } else {
                (LogLevel::Warn, "unsubscription from")
            };
            self.log(level, format_args!("{what} trap {trap} failed: {e}"));
            self.traps.failed = true;
        }
        if self.traps.inflight > 0 {
            return;
        }
        if self.traps.failed && self.traps.on {
            // Not subscribed (at least not to both): ask again later.
            self.traps.on = false;
            self.traps.retry = Some(now + SUBSCRIBE_RETRY);
        }
        // A failed unsubscription (e.g. the SA no longer knew it): nothing more to undo.
        self.traps.failed = false;
        self.traps.undo_unknown = false;
        self.traps_sync(now);
    }

    /// The SA changed or asks for registration again (light flush, IBA 1 §14.4.11). Whatever
    /// change was in flight belongs to the previous round: its requests are forgotten, so a late
    /// answer matches none and counts for nothing. A settled subscription is presumed gone (the
    /// interface subscribes again if it needs the traps); if a change was in flight the SA may
    /// hold a subscription or none, so the next change is sent whatever `on` says, as after a
    /// link down (module docs): the state converges to what the interface needs now.
    pub(super) fn traps_renew(&mut self, now: Instant) {
        let sa = &mut self.sa;
        self.requests.retain(|id, p| {
            let stale = matches!(p, Pending::Inform(_));
            if stale {
                sa.cancel(*id);
            }
            !stale
        });
        // A settled subscription is presumed lost: that is what the request to register again
        // says (a new SA, or one that dropped the port). Only a change in flight, or a state
        // already unknown since a link down, may have left one at the SA that `on` does not
        // show; undoing a settled one here would make every restarted OpenSM log "ERR 4307" for
        // each host that no longer needs the traps.
        let unknown = self.traps.inflight > 0 || self.traps.unknown;
        self.traps = super::traps::TrapSub {
            unknown,
            ..Default::default()
        };
        self.traps_sync(now);
    }

    /// The link went down and its requests were cancelled: the SA may still hold a subscription,
    /// or may have lost it (restarted meanwhile): once the link is up again the interface
    /// subscribes afresh if it needs the traps, else undoes what the SA may hold (module docs).
    pub(super) fn traps_link_down(&mut self) {
        let unknown = self.traps.on || self.traps.inflight > 0 || self.traps.unknown;
        self.traps = super::traps::TrapSub {
            unknown,
            ..Default::default()
        };
    }

    /// Subscribed to traps 66 and 67, and the SA has acknowledged it (no change in flight).
    pub fn traps_subscribed(&self) -> bool {
        self.traps.on && self.traps.inflight == 0
    }
}
