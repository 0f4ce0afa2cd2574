//! The simulator's event queue: events by instant, those of one instant in the order they were
//! scheduled, that is the order of the key (instant, sequence number).
//!
//! Binary heaps of small keys (instant, sequence number, slot) over a slab of events, with no
//! allocation once they have grown; the events stay put in their slots (freed slots are reused,
//! most recent first, so the hot ones stay in the cache). Two heaps share the sequence numbers: one
//! for the events due soon (packets on the wire, configuration), one for timers
//! ([`Queue::push_timer`]). A device's timer is queued each time its `poll_timeout` moves
//! earlier than all its queued ones, and when the earliest of those fires and finds it moved
//! later (`Simulator::refresh_timer`); the ones queued before stay until their instant: up to a
//! timeout ahead (before a timer moving later stopped being queued again, the SM of a
//! 10,000-host bring-up left up to 136,000 of them). In one heap they made every packet's pop
//! sift through all of them; apart, a packet's pop sifts through the few hundred packets in
//! flight.
//! Timers queued in order (the SM's: its SMP timeouts, each 10 ms after a send, only grow) go to
//! the back of a list, not into a heap, and leave it from the front; only those out of order go
//! to the timers' heap. Events due soon likewise: those queued in order (most packets: each arrives after
//! the one sent before it) wait in a list with their keys, no slot and no heap; those earlier
//! than that list's last wait in a second such list if they come after its last (the SM's
//! SMPs queued behind its busy link make one run far ahead, the packets crossing idle links
//! another, which alone sent four in five packets of a bring-up to the heap), and only the others
//! go to the heap. [`Queue::pop`] takes the smallest key of the five fronts, so the order is
//! that of one heap. (An ordered map of per-instant buffers, before these heaps, paid a B-tree insert and
//! remove for nearly every event: docs/benchmarks/subnet.md.)

use ipoib_proto::time::Instant;
use std::cmp::Ordering;
use std::collections::{BinaryHeap, VecDeque};

/// A queued event's key; the heap's top is the smallest (instant, sequence number).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Key {
    at: Instant,
    seq: u64,
    slot: usize,
}

impl Ord for Key {
    fn cmp(&self, other: &Key) -> Ordering {
        // Reversed: `BinaryHeap` is a max-heap. Sequence numbers are unique, so the slot never
        // decides.
        (other.at, other.seq).cmp(&(self.at, self.seq))
    }
}

impl PartialOrd for Key {
    fn partial_cmp(&self, other: &Key) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

/// The four places an event waits in ([`Queue`]'s fields).
#[derive(Debug, Clone, Copy)]
enum Front {
    SoonList,
    SoonRun,
    SoonHeap,
    TimerList,
    TimerHeap,
}

#[derive(Debug)]
pub(super) struct Queue<E> {
    /// Events queued in order, each at or after the instant of the one queued before it, kept
    /// with their keys (no slot, no heap): most packets on a fabric's links, whose arrival
    /// instants grow with the time they were sent.
    soon_in_order: VecDeque<(Key, E)>,
    /// A second run of events queued in order, for those earlier than the back of
    /// `soon_in_order` and not earlier than its own: the SMPs queued behind the SM's busy link
    /// make one run far ahead, the packets crossing idle links another.
    soon_run: VecDeque<(Key, E)>,
    /// The other events due soon.
    soon: BinaryHeap<Key>,
    /// Timers queued in order: the keys increase from front to back.
    timers_in_order: VecDeque<Key>,
    /// The other timers.
    timers: BinaryHeap<Key>,
    /// The events, by slot; `None` for a free slot (listed in `free`).
    slots: Vec<Option<E>>,
    free: Vec<usize>,
    next_seq: u64,
}

impl<E> Default for Queue<E> {
    fn default() -> Queue<E> {
        Queue {
            soon_in_order: VecDeque::new(),
            soon_run: VecDeque::new(),
            soon: BinaryHeap::new(),
            timers_in_order: VecDeque::new(),
            timers: BinaryHeap::new(),
            slots: Vec::new(),
            free: Vec::new(),
            next_seq: 0,
        }
    }
}

impl<E> Queue<E> {
    fn key(&mut self, at: Instant, event: E) -> Key {
        let slot = match self.free.pop() {
            Some(s) => {
                self.slots[s] = Some(event);
                s
            }
            None => {
                self.slots.push(Some(event));
                self.slots.len() - 1
            }
        };
        let seq = self.next_seq;
        self.next_seq += 1;
        Key { at, seq, slot }
    }

    /// Queues `event` at `at`, after every event already queued at `at`.
    #[inline]
    pub fn push(&mut self, at: Instant, event: E) {
        // Sequence numbers increase, so a key at or after the last one's instant is greater:
        // it joins the run whose last instant is the latest not after it (the other run stays
        // free for earlier ones), else the heap.
        let a = self.soon_in_order.back().map(|(k, _)| k.at);
        let b = self.soon_run.back().map(|(k, _)| k.at);
        let fits_a = a.is_none_or(|x| x <= at);
        let fits_b = b.is_none_or(|x| x <= at);
        let run = match (fits_a, fits_b) {
            (true, true) if b > a => &mut self.soon_run,
            (true, _) => &mut self.soon_in_order,
            (false, true) => &mut self.soon_run,
            (false, false) => {
                let key = self.key(at, event);
                self.soon.push(key);
                return;
            }
        };
        let seq = self.next_seq;
        self.next_seq += 1;
        let key = Key {
            at,
            seq,
            slot: usize::MAX,
        };
        run.push_back((key, event));
    }

    /// [`Queue::push`] for a timer: the same order, kept with the timers.
    pub fn push_timer(&mut self, at: Instant, event: E) {
        let key = self.key(at, event);
        // Sequence numbers increase, so a key at or after the last one's instant is greater.
        match self.timers_in_order.back() {
            Some(last) if last.at > at => self.timers.push(key),
            _ => self.timers_in_order.push_back(key),
        }
    }

    /// The earliest event (the first one queued among the earliest).
    #[cfg(test)]
    pub fn pop(&mut self) -> Option<(Instant, E)> {
        self.pop_due(Instant::NEVER)
    }

    /// Which front holds the earliest event, and its key: the earlier of the two soon fronts
    /// against the earlier of the two timer fronts (three comparisons at most; keys are
    /// unique, so there is no tie). Written out, not as a loop over the four: the example
    /// and the lab's driver look once per event ([`Queue::peek_at`]) and the step once more.
    #[inline(always)]
    fn earliest(&self) -> Option<(Front, &Key)> {
        // The greater key is the earlier event (`Key`'s order is reversed).
        fn first<'a>(
            a: Option<(Front, &'a Key)>,
            b: Option<(Front, &'a Key)>,
        ) -> Option<(Front, &'a Key)> {
            match (a, b) {
                (Some(x), Some(y)) => Some(if y.1 > x.1 { y } else { x }),
                (x, None) => x,
                (None, y) => y,
            }
        }
        let soon = first(
            first(
                self.soon_in_order
                    .front()
                    .map(|(k, _)| (Front::SoonList, k)),
                self.soon_run.front().map(|(k, _)| (Front::SoonRun, k)),
            ),
            self.soon.peek().map(|k| (Front::SoonHeap, k)),
        );
        let timer = first(
            self.timers_in_order.front().map(|k| (Front::TimerList, k)),
            self.timers.peek().map(|k| (Front::TimerHeap, k)),
        );
        first(soon, timer)
    }

    /// [`Queue::pop`] when the earliest event is due at or before `t`; else `None` and
    /// nothing taken (one look at the fronts where [`Queue::peek_at`] and `pop` take two).
    #[inline]
    pub fn pop_due(&mut self, t: Instant) -> Option<(Instant, E)> {
        let (which, k) = self.earliest()?;
        if k.at > t {
            return None;
        }
        let key = match which {
            Front::SoonList => return self.soon_in_order.pop_front().map(|(k, e)| (k.at, e)),
            Front::SoonRun => return self.soon_run.pop_front().map(|(k, e)| (k.at, e)),
            Front::SoonHeap => self.soon.pop(),
            Front::TimerList => self.timers_in_order.pop_front(),
            Front::TimerHeap => self.timers.pop(),
        }?;
        let event = self.slots.get_mut(key.slot)?.take()?;
        self.free.push(key.slot);
        Some((key.at, event))
    }

    /// When the earliest event is due.
    #[inline]
    pub fn peek_at(&self) -> Option<Instant> {
        self.earliest().map(|(_, k)| k.at)
    }

    /// Events queued.
    pub fn len(&self) -> usize {
        self.soon_in_order.len()
            + self.soon_run.len()
            + self.soon.len()
            + self.timers_in_order.len()
            + self.timers.len()
    }
}

#[cfg(test)]
mod tests {
    use super::Queue;
    use ipoib_proto::rng::Rng;
    use ipoib_proto::time::Instant;
    use std::cmp::Reverse;
    use std::collections::BinaryHeap;
    use std::time::Duration;

    // Determinism: pushes and pops interleaved at random give exactly the order of a heap keyed on
    // (instant, sequence number), computed here apart with the standard heap on whole tuples.
    #[test]
    fn same_order_as_a_heap_on_instant_then_sequence() {
        for seed in 0..20 {
            let mut rng = Rng::new(seed);
            let mut q = Queue::default();
            let mut heap = BinaryHeap::new();
            let mut seq = 0u64;
            let mut now = Instant::ZERO;
            for _ in 0..5_000 {
                if rng.below(3) < 2 {
                    // Few distinct instants, as on a fabric: many events share one.
                    let at = now + Duration::from_nanos(rng.below(4) * 10);
                    seq += 1;
                    // Either heap: the order is the same.
                    if rng.below(2) == 0 {
                        q.push(at, seq);
                    } else {
                        q.push_timer(at, seq);
                    }
                    heap.push(Reverse((at, seq)));
                } else if rng.below(4) == 0 {
                    // Only what is due by `t`: the earliest, or nothing.
                    let t = now + Duration::from_nanos(rng.below(4) * 10);
                    let a = q.pop_due(t);
                    let due = heap.peek().is_some_and(|Reverse((at, _))| *at <= t);
                    let b = if due {
                        heap.pop().map(|Reverse(x)| x)
                    } else {
                        None
                    };
                    assert_eq!(a, b, "seed {seed}");
                } else {
                    let a = q.pop();
                    let b = heap.pop().map(|Reverse(x)| x);
                    assert_eq!(a, b, "seed {seed}");
                    if let Some((t, _)) = a {
                        now = t;
                    }
                }
                assert_eq!(q.len(), heap.len());
                assert_eq!(q.peek_at(), heap.peek().map(|Reverse((t, _))| *t));
            }
            while let Some(b) = heap.pop() {
                assert_eq!(q.pop(), Some(b.0));
            }
            assert_eq!(q.pop(), None);
        }
    }

    // The two runs of a bring-up: the SM's SMPs queued behind its busy link, far ahead, and the
    // packets crossing idle links, near; interleaved, each run in order. Both wait in lists, none
    // in the heap, and they leave in the order of one heap.
    #[test]
    fn a_far_run_and_a_near_run_stay_out_of_the_heap() {
        let at = |n: u64| Instant::ZERO + Duration::from_nanos(n);
        let mut q = Queue::default();
        let mut heap = BinaryHeap::new();
        for i in 0..100u64 {
            for (n, seq) in [(1_000 + 10 * i, 2 * i), (3 * i, 2 * i + 1)] {
                q.push(at(n), seq);
                heap.push(Reverse((at(n), seq)));
            }
        }
        assert!(q.soon.is_empty());
        while let Some(Reverse(x)) = heap.pop() {
            assert_eq!(q.pop(), Some(x));
        }
        assert_eq!(q.pop(), None);
    }
}

#[cfg(test)]
mod proptests {
    use super::Queue;
    use ipoib_proto::time::Instant;
    use proptest::prelude::*;
    use std::cmp::Reverse;
    use std::collections::BinaryHeap;
    use std::time::Duration;

    #[derive(Debug, Clone)]
    enum Op {
        Push(u64),
        PushTimer(u64),
        Pop,
        PopDue(u64),
    }

    fn op() -> impl Strategy<Value = Op> {
        // Few instants (eight, 10 ns apart), so that ties are common, and any of them at any
        // time: earlier than the last popped too (the queue takes any instant).
        prop_oneof![
            3 => (0u64..8).prop_map(Op::Push),
            2 => (0u64..8).prop_map(Op::PushTimer),
            2 => Just(Op::Pop),
            1 => (0u64..8).prop_map(Op::PopDue),
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2_000))]
        // Any interleaving of pushes, timer pushes, pops and due pops gives exactly the order
        // of one standard heap on (instant, sequence number): the head, the lists and the
        // heaps together are one heap.
        #[test]
        fn any_interleaving_gives_the_order_of_one_heap(
            ops in prop::collection::vec(op(), 0..200)
        ) {
            let at = |n: u64| Instant::ZERO + Duration::from_nanos(n * 10);
            let mut q = Queue::default();
            let mut heap = BinaryHeap::new();
            let mut seq = 0u64;
            for o in ops {
                match o {
                    Op::Push(n) => {
                        q.push(at(n), seq);
                        heap.push(Reverse((at(n), seq)));
                        seq += 1;
                    }
                    Op::PushTimer(n) => {
                        q.push_timer(at(n), seq);
                        heap.push(Reverse((at(n), seq)));
                        seq += 1;
                    }
                    Op::Pop => {
                        prop_assert_eq!(q.pop(), heap.pop().map(|Reverse(x)| x));
                    }
                    Op::PopDue(n) => {
                        let due = heap.peek().is_some_and(|Reverse((t, _))| *t <= at(n));
                        let want = if due { heap.pop().map(|Reverse(x)| x) } else { None };
                        prop_assert_eq!(q.pop_due(at(n)), want);
                    }
                }
                prop_assert_eq!(q.len(), heap.len());
                prop_assert_eq!(q.peek_at(), heap.peek().map(|Reverse((t, _))| *t));
            }
            while let Some(Reverse(x)) = heap.pop() {
                prop_assert_eq!(q.pop(), Some(x));
            }
            prop_assert_eq!(q.pop(), None);
        }
    }
}
