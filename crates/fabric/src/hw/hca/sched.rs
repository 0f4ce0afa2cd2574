//! Which RC/UC engines the HCA has to look at, so that the cost of a packet, a post or a timer
//! does not grow with the number of connected QPs (an IPoIB host in connected mode holds two RC
//! QPs per peer, RFC 4755 §4-5).
//!
//! - `ready`: QPs whose engine took an input (modify, post, packet, timer) that left it with
//!   work (a packet that did not, [`super::ConnectedEngine::has_work`], only moves its timer)
//!   since the HCA last drained it. [`super::ConnectedEngine`] promises that a drained engine has no packet and no
//!   completion to give until its next input, so the other QPs need not be polled.
//! - `timers`: each engine's `poll_timeout`, by time and by QP, re-read after every call that may
//!   change it, so the earliest timer and the due QPs are found without a scan of all QPs. The
//!   index is lazy: a timer that moves later (an RC requester's ACK timer, restarted by every
//!   ACK, IBA 1 §9.7.6.1.3) or goes away leaves the QP's entry where it was, stale, and only a
//!   timer that moves earlier moves it. A stale entry is moved to the QP's timer (or dropped)
//!   once its place is due; until then the earliest timer and the due QPs are read through it.
//!
//! `ready` and `timers` are sorted vectors ([`SortedSet`]), not B-trees: they hold a few entries
//! (the QPs that took an input that left them with work since the last drain; one timer entry
//! per QP with a timer), and nearly every IB packet an HCA sends or receives (not one received
//! that leaves its engine without work) inserts into `ready` and takes out of it again, which
//! in a `BTreeSet` allocates its node each time the set goes from empty to one entry and frees it
//! when it goes back, and looks it up through a range search (`next_ready` was 3 % of the
//! samples of `examples/datapath.rs` in connected mode, 4 % of a lab's under iperf3; the vectors
//! took 6 % off the CPU per packet in process: docs/benchmarks/ip.md "The lab's layout tried").
//!
//! Invariants: each QP with an entry in `timer` has exactly one entry `(at, q)` in `timers`, at
//! or before its timer (`due`, `None`: no timer), and no other QP has one; both hold only QPs
//! the HCA has (entries go with `remove`); `ready` is walked in QPN order, as the HCA's table of
//! QPs is.

use crate::hw::verbs::Qpn;
use ipoib_proto::time::Instant;
use std::collections::BTreeMap;

/// A set as a sorted vector without duplicates: in order like a `BTreeSet`, with no allocation
/// per insert or removal once it has grown (see the module docs).
#[derive(Debug, Clone, PartialEq, Eq)]
struct SortedSet<T>(Vec<T>);

impl<T> Default for SortedSet<T> {
    fn default() -> SortedSet<T> {
        SortedSet(Vec::new())
    }
}

impl<T: Ord + Copy> SortedSet<T> {
    /// Adds `v`; false when it was there already.
    fn insert(&mut self, v: T) -> bool {
        match self.0.binary_search(&v) {
            Ok(_) => false,
            Err(i) => {
                self.0.insert(i, v);
                true
            }
        }
    }

    /// Takes `v` out; false when it was not there.
    fn remove(&mut self, v: &T) -> bool {
        match self.0.binary_search(v) {
            Ok(i) => {
                self.0.remove(i);
                true
            }
            Err(_) => false,
        }
    }

    /// Takes out the lowest element for which `below` is false (the elements for which it is
    /// true come first: `below` is `v <= bound` or the like).
    fn take_first_not(&mut self, below: impl Fn(&T) -> bool) -> Option<T> {
        let i = self.0.partition_point(below);
        (i < self.0.len()).then(|| self.0.remove(i))
    }

    #[cfg(test)]
    fn contains(&self, v: &T) -> bool {
        self.0.binary_search(v).is_ok()
    }

    #[cfg(test)]
    fn len(&self) -> usize {
        self.0.len()
    }

    fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    fn iter(&self) -> std::slice::Iter<'_, T> {
        self.0.iter()
    }
}

/// A QP's engine timer and where `timers` holds it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Timer {
    due: Option<Instant>,
    at: Instant,
}

/// See the module docs.
#[derive(Debug, Default)]
pub(super) struct Schedule {
    ready: SortedSet<Qpn>,
    timer: BTreeMap<Qpn, Timer>,
    timers: SortedSet<(Instant, Qpn)>,
}

impl Schedule {
    /// QP `qpn`'s engine took an input; `timeout` is its `poll_timeout` afterwards.
    pub fn touch(&mut self, qpn: Qpn, timeout: Option<Instant>) {
        self.ready.insert(qpn);
        self.set_timer(qpn, timeout);
    }

    /// Records `timeout` as QP `qpn`'s engine timer (`None`: no timer).
    pub fn set_timer(&mut self, qpn: Qpn, timeout: Option<Instant>) {
        match (self.timer.get_mut(&qpn), timeout) {
            (Some(e), Some(t)) if t < e.at => {
                self.timers.remove(&(e.at, qpn));
                self.timers.insert((t, qpn));
                *e = Timer {
                    due: Some(t),
                    at: t,
                };
            }
            // Later, or gone: the entry stays where it is (module docs).
            (Some(e), t) => e.due = t,
            (None, Some(t)) => {
                self.timer.insert(
                    qpn,
                    Timer {
                        due: Some(t),
                        at: t,
                    },
                );
                self.timers.insert((t, qpn));
            }
            (None, None) => {}
        }
    }

    /// QP `qpn`'s engine timer as last recorded ([`Schedule::set_timer`]).
    pub fn timer_of(&self, qpn: Qpn) -> Option<Instant> {
        self.timer.get(&qpn).and_then(|e| e.due)
    }

    /// QP `qpn` is gone.
    pub fn remove(&mut self, qpn: Qpn) {
        self.ready.remove(&qpn);
        if let Some(e) = self.timer.remove(&qpn) {
            self.timers.remove(&(e.at, qpn));
        }
    }

    /// True when some engine waits to be drained.
    pub fn has_ready(&self) -> bool {
        !self.ready.is_empty()
    }

    /// Takes the lowest ready QP above `after` (from the lowest when `None`). A QP made ready
    /// while a walk is past it stays for the next walk.
    pub fn next_ready(&mut self, after: Option<Qpn>) -> Option<Qpn> {
        self.ready
            .take_first_not(|&q| after.is_some_and(|a| q <= a))
    }

    /// The earliest engine timer. Entries are walked from the earliest place while a place may
    /// still come before the earliest timer seen: only stale entries are passed over.
    pub fn next_timer(&self) -> Option<Instant> {
        let mut best: Option<Instant> = None;
        for &(at, q) in self.timers.iter() {
            if best.is_some_and(|b| at >= b) {
                break;
            }
            if let Some(d) = self.timer.get(&q).and_then(|e| e.due) {
                best = Some(best.map_or(d, |b| b.min(d)));
            }
        }
        best
    }

    /// The QPs whose timer is at or before `now`, in QPN order. Stale entries whose place is
    /// due are moved to their QP's timer (or dropped) on the way.
    pub fn due(&mut self, now: Instant) -> Vec<Qpn> {
        let mut v = Vec::new();
        let mut stale = Vec::new();
        for &(at, q) in self.timers.iter().take_while(|(at, _)| *at <= now) {
            let due = self.timer.get(&q).and_then(|e| e.due);
            if due.is_some_and(|d| d <= now) {
                v.push(q);
            }
            if due != Some(at) {
                stale.push((at, q, due));
            }
        }
        for (at, q, due) in stale {
            self.timers.remove(&(at, q));
            match due {
                Some(d) => {
                    self.timers.insert((d, q));
                    self.timer.insert(q, Timer { due, at: d });
                }
                None => {
                    self.timer.remove(&q);
                }
            }
        }
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

    // The sorted vector behaves as an ordered set: no duplicates, in order, the first element
    // past a bound taken out.
    #[test]
    fn sorted_set_is_an_ordered_set() {
        let mut s = SortedSet::default();
        assert!(s.insert(5u32) && s.insert(1) && s.insert(9));
        assert!(!s.insert(5));
        assert_eq!(s.iter().copied().collect::<Vec<_>>(), vec![1, 5, 9]);
        assert_eq!(s.take_first_not(|&v| v <= 1), Some(5));
        assert_eq!(s.take_first_not(|&v| v <= 9), None);
        assert!(s.remove(&9) && !s.remove(&9));
        assert_eq!((s.len(), s.contains(&1)), (1, true));
        assert_eq!(s.take_first_not(|_| false), Some(1));
        assert!(s.is_empty());
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

    #[test]
    fn a_later_timer_leaves_its_entry_until_the_entry_is_due() {
        let mut s = Schedule::default();
        s.set_timer(0x48, Some(at(10)));
        s.set_timer(0x4c, Some(at(25)));
        // 0x48's timer moves later: its entry stays at 10, the earliest timer is 0x4c's.
        s.set_timer(0x48, Some(at(30)));
        assert!(s.timers.contains(&(at(10), 0x48)));
        assert_eq!(s.next_timer(), Some(at(25)));
        s.set_timer(0x48, Some(at(20)));
        assert_eq!(s.next_timer(), Some(at(20)));
        // At 15 nothing is due; the stale entry moves to 0x48's timer.
        assert_eq!(s.due(at(15)), Vec::<Qpn>::new());
        assert!(s.timers.contains(&(at(20), 0x48)) && !s.timers.contains(&(at(10), 0x48)));
        assert_eq!(s.due(at(25)), vec![0x48, 0x4c]);
        // Earlier than its entry: the entry moves at once.
        s.set_timer(0x4c, Some(at(5)));
        assert_eq!(s.next_timer(), Some(at(5)));
        assert_eq!(s.timers.len(), 2);
        // Gone: the entry is dropped when its place is due, and meanwhile counts for nothing.
        s.set_timer(0x4c, None);
        assert_eq!(s.next_timer(), Some(at(20)));
        assert_eq!(s.due(at(6)), Vec::<Qpn>::new());
        assert_eq!(s.timers.len(), 1);
        assert_eq!(s.timer.len(), 1);
        s.set_timer(0x48, None);
        assert_eq!(s.next_timer(), None);
        assert_eq!(s.due(at(100)), Vec::<Qpn>::new());
        assert!(s.timer.is_empty() && s.timers.is_empty());
    }
}
