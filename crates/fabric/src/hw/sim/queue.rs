//! The simulator's event queue: events by instant, those of one instant in the order they were
//! scheduled. This is the order of a binary heap keyed on (instant, sequence number), without its
//! cost on big fabrics: a broadcast on N hosts queues some N events at a handful of instants, and
//! a heap of millions of entries pays a cache miss per level on every pop, where this queue pops
//! from the front of one contiguous buffer.

use ipoib_proto::time::Instant;
use std::collections::{BTreeMap, VecDeque};

/// Emptied buffers kept for reuse (fewer allocations when instants come and go).
const SPARE: usize = 64;

#[derive(Debug)]
pub(super) struct Queue<E> {
    by_instant: BTreeMap<Instant, VecDeque<E>>,
    len: usize,
    spare: Vec<VecDeque<E>>,
}

impl<E> Default for Queue<E> {
    fn default() -> Queue<E> {
        Queue {
            by_instant: BTreeMap::new(),
            len: 0,
            spare: Vec::new(),
        }
    }
}

impl<E> Queue<E> {
    /// Queues `event` at `at`, after every event already queued at `at`.
    pub fn push(&mut self, at: Instant, event: E) {
        let spare = &mut self.spare;
        self.by_instant
            .entry(at)
            .or_insert_with(|| spare.pop().unwrap_or_default())
            .push_back(event);
        self.len += 1;
    }

    /// The earliest event (the first one queued among the earliest).
    pub fn pop(&mut self) -> Option<(Instant, E)> {
        let mut first = self.by_instant.first_entry()?;
        let at = *first.key();
        let event = first.get_mut().pop_front();
        if first.get().is_empty() {
            let buf = first.remove();
            if self.spare.len() < SPARE {
                self.spare.push(buf);
            }
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
