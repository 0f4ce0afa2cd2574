//! The transport's queue of SMPs, in chunks of a fixed number.
//!
//! The bring-up queues each of its waves at once (the Configure wave's 84,366 SubnSets at
//! 10,000 hosts, 14 MB; the Arm and Activate waves a PortInfo per port each), and the last one
//! drains at the window's pace while the hosts already Active join. One `VecDeque` grown to the
//! largest wave held that room to the end of the run: one allocation, mapped apart by the
//! allocator at that size, that nothing else could reuse. In chunks, each chunk is freed once
//! drained, and the joins' allocations of the same moments reuse its memory
//! (docs/benchmarks/subnet-rounds.md, "The run's memory again").

use std::collections::VecDeque;

/// Elements a chunk holds: small enough for the allocator's heap (64 SMPs: 10.5 KiB), large
/// enough that a chunk's allocation and free are rare.
const CHUNK: usize = 64;

/// A first-in first-out queue in chunks of [`CHUNK`] elements, each freed once drained.
#[derive(Debug, Clone)]
pub(super) struct ChunkedQueue<T> {
    /// The chunk being drained: taken from the front of `rest` when it runs out (its
    /// allocation is freed then).
    front: std::vec::IntoIter<T>,
    /// The chunks after it, in order; the last one is being filled.
    rest: VecDeque<Vec<T>>,
    len: usize,
}

impl<T> ChunkedQueue<T> {
    pub(super) fn new() -> ChunkedQueue<T> {
        ChunkedQueue {
            front: Vec::new().into_iter(),
            rest: VecDeque::new(),
            len: 0,
        }
    }

    pub(super) fn len(&self) -> usize {
        self.len
    }

    pub(super) fn is_empty(&self) -> bool {
        self.len == 0
    }

    #[inline]
    pub(super) fn push_back(&mut self, x: T) {
        self.len += 1;
        if let Some(c) = self.rest.back_mut().filter(|c| c.len() < CHUNK) {
            c.push(x);
            return;
        }
        let mut c = Vec::with_capacity(CHUNK);
        c.push(x);
        self.rest.push_back(c);
    }

    #[inline]
    pub(super) fn pop_front(&mut self) -> Option<T> {
        let x = match self.front.next() {
            Some(x) => x,
            None => {
                self.front = self.rest.pop_front()?.into_iter();
                self.front.next()?
            }
        };
        self.len -= 1;
        Some(x)
    }

    /// Chunks allocated.
    #[cfg(test)]
    fn chunks(&self) -> usize {
        self.rest.len() + usize::from(self.front.len() > 0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// Any pushes and pops give what one `VecDeque` gives, and the queue holds no more
        /// chunks than its elements need plus one partly drained at the front.
        #[test]
        fn is_a_fifo_that_frees_drained_chunks(
            ops in proptest::collection::vec(any::<Option<u16>>(), 0..600)
        ) {
            let mut q = ChunkedQueue::new();
            let mut model = VecDeque::new();
            for op in ops {
                match op {
                    Some(x) => {
                        q.push_back(x);
                        model.push_back(x);
                    }
                    None => prop_assert_eq!(q.pop_front(), model.pop_front()),
                }
                prop_assert_eq!(q.len(), model.len());
                prop_assert_eq!(q.is_empty(), model.is_empty());
                prop_assert!(q.chunks() <= model.len().div_ceil(CHUNK) + 1);
            }
            while let Some(x) = model.pop_front() {
                prop_assert_eq!(q.pop_front(), Some(x));
            }
            prop_assert_eq!(q.pop_front(), None);
        }
    }
}
