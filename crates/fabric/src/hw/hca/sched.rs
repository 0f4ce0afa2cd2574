//! Which RC/UC engines the HCA has to look at, so that the cost of a packet, a post or a timer
//! does not grow with the number of connected QPs (an IPoIB host in connected mode holds two RC
//! QPs per peer, RFC 4755 §4-5).
//!
//! - `ready`: QPs whose engine took an input (modify, post, packet, timer) since the HCA last
//!   drained it. [`super::ConnectedEngine`] promises that a drained engine has no packet and no
//!   completion to give until its next input, so the other QPs need not be polled.
//! - `timers`: each engine's `poll_timeout`, by time and by QP, re-read after every call that may
//!   change it, so the earliest timer and the due QPs are found without a scan.
//!
//! Invariants: `timer[q] == t` exactly when `(t, q)` is in `timers`; both hold only QPs the HCA
//! has (entries go with `remove`); `ready` is walked in QPN order, as the HCA's table of QPs is.

use crate::hw::verbs::Qpn;
use ipoib_proto::time::Instant;
use std::collections::{BTreeMap, BTreeSet};
use std::ops::Bound;

/// See the module docs.
#[derive(Debug, Default)]
pub(super) struct Schedule {
    ready: BTreeSet<Qpn>,
    timer: BTreeMap<Qpn, Instant>,
    timers: BTreeSet<(Instant, Qpn)>,
}

impl Schedule {
    /// QP `qpn`'s engine took an input; `timeout` is its `poll_timeout` afterwards.
    pub fn touch(&mut self, qpn: Qpn, timeout: Option<Instant>) {
        self.ready.insert(qpn);
        self.set_timer(qpn, timeout);
    }

    /// Records `timeout` as QP `qpn`'s engine timer (`None`: no timer).
    pub fn set_timer(&mut self, qpn: Qpn, timeout: Option<Instant>) {
        let old = match timeout {
            Some(t) => self.timer.insert(qpn, t),
            None => self.timer.remove(&qpn),
        };
        if old == timeout {
            return;
        }
        if let Some(o) = old {
            self.timers.remove(&(o, qpn));
        }
        if let Some(t) = timeout {
            self.timers.insert((t, qpn));
        }
    }

    /// QP `qpn` is gone.
    pub fn remove(&mut self, qpn: Qpn) {
        self.ready.remove(&qpn);
        self.set_timer(qpn, None);
    }

    /// True when some engine waits to be drained.
    pub fn has_ready(&self) -> bool {
        !self.ready.is_empty()
    }

    /// Takes the lowest ready QP above `after` (from the lowest when `None`). A QP made ready
    /// while a walk is past it stays for the next walk.
    pub fn next_ready(&mut self, after: Option<Qpn>) -> Option<Qpn> {
        let lower = after.map_or(Bound::Unbounded, Bound::Excluded);
        let q = *self.ready.range((lower, Bound::Unbounded)).next()?;
        self.ready.remove(&q);
        Some(q)
    }

    /// The earliest engine timer.
    pub fn next_timer(&self) -> Option<Instant> {
        self.timers.first().map(|(t, _)| *t)
    }

    /// The QPs whose timer is at or before `now`, in QPN order.
    pub fn due(&self, now: Instant) -> Vec<Qpn> {
        let mut v: Vec<Qpn> = self
            .timers
            .iter()
            .take_while(|(t, _)| *t <= now)
            .map(|(_, q)| *q)
            .collect();
        v.sort_unstable();
        v
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn at(us: u64) -> Instant {
        Instant::ZERO + Duration::from_micros(us)
    }

    #[test]
    fn ready_qps_come_out_in_qpn_order_once() {
        let mut s = Schedule::default();
        for q in [0x50, 0x48, 0x4c] {
            s.touch(q, None);
        }
        s.touch(0x48, None);
        assert_eq!(s.next_ready(None), Some(0x48));
        // Made ready behind the walk: left for the next one; ahead of it: taken in this one.
        s.touch(0x48, None);
        s.touch(0x4e, None);
        assert_eq!(s.next_ready(Some(0x48)), Some(0x4c));
        assert_eq!(s.next_ready(Some(0x4c)), Some(0x4e));
        assert_eq!(s.next_ready(Some(0x4e)), Some(0x50));
        assert_eq!(s.next_ready(Some(0x50)), None);
        assert!(s.has_ready());
        assert_eq!(s.next_ready(None), Some(0x48));
        assert!(!s.has_ready());
    }

    #[test]
    fn timers_follow_the_latest_value_per_qp() {
        let mut s = Schedule::default();
        s.set_timer(0x50, Some(at(30)));
        s.set_timer(0x48, Some(at(20)));
        s.set_timer(0x4c, Some(at(10)));
        assert_eq!(s.next_timer(), Some(at(10)));
        s.set_timer(0x4c, Some(at(40)));
        assert_eq!(s.next_timer(), Some(at(20)));
        assert_eq!(s.due(at(30)), vec![0x48, 0x50]);
        assert_eq!(s.due(at(19)), Vec::<Qpn>::new());
        s.set_timer(0x48, None);
        s.remove(0x50);
        assert_eq!(s.due(at(100)), vec![0x4c]);
        s.remove(0x4c);
        assert_eq!(s.next_timer(), None);
        assert!(s.timer.is_empty() && s.timers.is_empty());
    }
}
