//! The simulator's event queue: events by instant, those of one instant in the order they were
//! scheduled. This is the order of a binary heap keyed on (instant, sequence number), without its
//! cost on big fabrics: a broadcast on N hosts queues some N events at a handful of instants, and
//! a heap of millions of entries pays a cache miss per level on every pop, where this queue pops
//! from the front of one contiguous buffer.
//!
//! The ordered map holds a small slot number per instant, not the buffer itself: a subnet
//! brought up by SMPs queues most events at instants of their own, so the map inserts and
//! removes an entry for nearly every event, and moving 4-byte slots inside its nodes is cheaper
//! than moving buffers (docs/benchmarks/subnet.md). Emptied buffers stay in their slots, with their
//! capacity, for the next instant.

use ipoib_proto::time::Instant;
use std::collections::{BTreeMap, VecDeque};

#[derive(Debug)]
pub(super) struct Queue<E> {
    /// Instant -> index into `slots`.
    by_instant: BTreeMap<Instant, u32>,
    /// The events of one instant each; those not in `by_instant` are empty and listed in `free`.
    slots: Vec<VecDeque<E>>,
    free: Vec<u32>,
    len: usize,
}

impl<E> Default for Queue<E> {
    fn default() -> Queue<E> {
        Queue {
            by_instant: BTreeMap::new(),
            slots: Vec::new(),
            free: Vec::new(),
            len: 0,
        }
    }
}

impl<E> Queue<E> {
    /// Queues `event` at `at`, after every event already queued at `at`.
    pub fn push(&mut self, at: Instant, event: E) {
        let (slots, free) = (&mut self.slots, &mut self.free);
        let slot = *self.by_instant.entry(at).or_insert_with(|| {
            free.pop().unwrap_or_else(|| {
                slots.push(VecDeque::new());
                (slots.len() - 1) as u32
            })
        });
        self.slots[slot as usize].push_back(event);
        self.len += 1;
    }

    /// The earliest event (the first one queued among the earliest).
    pub fn pop(&mut self) -> Option<(Instant, E)> {
        let first = self.by_instant.first_entry()?;
        let (at, slot) = (*first.key(), *first.get());
        let buf = &mut self.slots[slot as usize];
        let event = buf.pop_front();
        if buf.is_empty() {
            first.remove();
            self.free.push(slot);
        }
        let event = event?;
        self.len -= 1;
        Some((at, event))
    }

    /// When the earliest event is due.
    pub fn peek_at(&self) -> Option<Instant> {
        self.by_instant.first_key_value().map(|(at, _)| *at)
    }

    /// Events queued.
    pub fn len(&self) -> usize {
        self.len
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
    // (instant, sequence number), the simulator's order before this queue.
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
                    q.push(at, seq);
                    heap.push(Reverse((at, seq)));
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
}
