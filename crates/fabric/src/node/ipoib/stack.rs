//! The host's processor as the IP stack uses it: a cost in simulated time for every IP packet the
//! built-in IP endpoint sends or receives through the interface ([`StackCost`], set with
//! [`super::IpoibApp::set_stack_cost`]).
//!
//! Without it (the default, [`StackCost::FREE`]) an emulated host spends no time on a packet: a
//! datagram is on the wire the moment the endpoint sends it, and the link alone limits
//! throughput. On a real host the IP stack and the driver spend time on every packet (an
//! interrupt or poll, a buffer, a work request, the stack's traversal); that per-packet cost is
//! why IPoIB's connected mode, with one 65,520-byte packet where datagram mode needs 32, moves
//! more data (RFC 4755 §1). With a cost set, the host models one processor that handles its
//! packets one after another, in the order they reach it:
//! - Sending: a packet the endpoint sends is handed to the interface when the processor has
//!   spent [`StackCost::of`] its length on it, after the packets it had to handle before. Sends
//!   are not bounded here: the endpoint's user bounds what it sends (the demo's bulk transfer
//!   keeps a window in flight, as a socket's send buffer would).
//! - Receiving: a packet the interface delivers reaches the endpoint the same way. At most
//!   [`RX_BACKLOG`] received packets wait for the processor; more are dropped and counted
//!   ([`CpuCounters::rx_backlog_drops`]), as Linux drops beyond its `netdev_max_backlog`
//!   (docs/DEPLOYED.md "Linux IPoIB", queues around the stack).
//!
//! The model covers the built-in endpoint only: with the host's own IP stack above the interface
//! (`external.rs`) the real stack spends real time, and no cost is added.
//!
//! Invariants: with [`StackCost::FREE`] nothing is queued and nothing changes; packets leave the
//! processor in the order they reached it, each exactly once; the receive queue is bounded.

use ipoib_proto::time::Instant;
use std::collections::VecDeque;
use std::time::Duration;

/// The most received packets waiting for the processor: Linux's default `netdev_max_backlog`, the
/// bound the host's own stack has too ([`super::TO_OS_LIMIT`]).
pub const RX_BACKLOG: usize = super::TO_OS_LIMIT;

/// What one IP packet costs the host's processor, sent or received.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct StackCost {
    /// Time per packet, whatever its length.
    pub per_packet: Duration,
    /// Time per byte of the IP packet, in picoseconds (a copy at 2 GB/s is 500 ps a byte).
    pub per_byte_ps: u64,
}

impl StackCost {
    /// No cost: the host is infinitely fast (the default).
    pub const FREE: StackCost = StackCost {
        per_packet: Duration::ZERO,
        per_byte_ps: 0,
    };

    /// A fixed cost per packet.
    pub const fn per_packet(d: Duration) -> StackCost {
        StackCost {
            per_packet: d,
            per_byte_ps: 0,
        }
    }

    /// True when packets cost nothing.
    pub fn is_free(&self) -> bool {
        self.per_packet.is_zero() && self.per_byte_ps == 0
    }

    /// The time a packet of `len` bytes takes (rounded down to the nanosecond).
    pub fn of(&self, len: usize) -> Duration {
        let bytes = (len as u64).saturating_mul(self.per_byte_ps) / 1000;
        self.per_packet.saturating_add(Duration::from_nanos(bytes))
    }
}

/// Counters of the processor model.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CpuCounters {
    /// Packets sent through the processor.
    pub tx_packets: u64,
    /// Packets received through the processor.
    pub rx_packets: u64,
    /// Received packets dropped because [`RX_BACKLOG`] were already waiting.
    pub rx_backlog_drops: u64,
    /// Simulated time the processor was given: the cost of every packet it took, including those
    /// still waiting.
    pub busy: Duration,
}

/// One packet in the processor's hands.
#[derive(Debug)]
pub(super) enum Work {
    /// To the interface.
    Send(Vec<u8>),
    /// To the endpoint.
    Receive(Vec<u8>),
}

/// The processor: packets with the time the processor is done with each.
#[derive(Debug, Default)]
pub(super) struct HostCpu {
    cost: StackCost,
    /// When the processor is done with everything it has.
    busy_until: Instant,
    queue: VecDeque<(Instant, Work)>,
    rx_waiting: usize,
    counters: CpuCounters,
}

impl HostCpu {
    pub(super) fn cost(&self) -> StackCost {
        self.cost
    }

    /// True when a packet may skip the processor: it costs nothing and none waits before it.
    pub(super) fn bypass(&self) -> bool {
        self.cost.is_free() && self.queue.is_empty()
    }

    pub(super) fn set_cost(&mut self, cost: StackCost) {
        self.cost = cost;
    }

    pub(super) fn counters(&self) -> CpuCounters {
        self.counters
    }

    /// Takes `w` at `now`; false (and counted) when it is a received packet beyond the backlog.
    pub(super) fn take(&mut self, now: Instant, w: Work) -> bool {
        let len = match &w {
            Work::Send(p) => p.len(),
            Work::Receive(p) => {
                if self.rx_waiting >= RX_BACKLOG {
                    self.counters.rx_backlog_drops += 1;
                    return false;
                }
                self.rx_waiting += 1;
                p.len()
            }
        };
        let d = self.cost.of(len);
        let start = if self.busy_until > now {
            self.busy_until
        } else {
            now
        };
        self.busy_until = start.saturating_add(d);
        self.counters.busy = self.counters.busy.saturating_add(d);
        self.queue.push_back((self.busy_until, w));
        true
    }

    /// The next packet the processor is done with by `now`.
    pub(super) fn done(&mut self, now: Instant) -> Option<Work> {
        if self.queue.front().is_none_or(|(t, _)| *t > now) {
            return None;
        }
        let (_, w) = self.queue.pop_front()?;
        match &w {
            Work::Send(_) => self.counters.tx_packets += 1,
            Work::Receive(_) => {
                self.rx_waiting -= 1;
                self.counters.rx_packets += 1;
            }
        }
        Some(w)
    }

    /// When the next packet is done, if any waits.
    pub(super) fn next_done(&self) -> Option<Instant> {
        self.queue.front().map(|(t, _)| *t)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(us: u64) -> Instant {
        Instant::from_nanos(us * 1000)
    }

    #[test]
    fn cost_is_fixed_plus_per_byte() {
        let c = StackCost {
            per_packet: Duration::from_micros(2),
            per_byte_ps: 500,
        };
        assert_eq!(c.of(0), Duration::from_micros(2));
        assert_eq!(c.of(2044), Duration::from_nanos(2000 + 1022));
        assert!(StackCost::FREE.is_free());
        assert!(!c.is_free());
    }

    #[test]
    fn packets_are_handled_one_after_another_in_order() {
        let mut cpu = HostCpu::default();
        cpu.set_cost(StackCost::per_packet(Duration::from_micros(3)));
        assert!(cpu.take(at(10), Work::Send(vec![1])));
        assert!(cpu.take(at(10), Work::Receive(vec![2])));
        assert!(cpu.take(at(20), Work::Send(vec![3])));
        assert_eq!(cpu.next_done(), Some(at(13)));
        assert!(cpu.done(at(12)).is_none());
        assert!(matches!(cpu.done(at(13)), Some(Work::Send(p)) if p == [1]));
        // The second waited for the first: done at 16, not 13.
        assert!(cpu.done(at(15)).is_none());
        assert!(matches!(cpu.done(at(16)), Some(Work::Receive(p)) if p == [2]));
        // The third came when the processor was idle: 20 + 3.
        assert_eq!(cpu.next_done(), Some(at(23)));
        assert!(matches!(cpu.done(at(30)), Some(Work::Send(p)) if p == [3]));
        assert!(cpu.done(at(100)).is_none());
        let c = cpu.counters();
        assert_eq!((c.tx_packets, c.rx_packets, c.rx_backlog_drops), (2, 1, 0));
        assert_eq!(c.busy, Duration::from_micros(9));
    }

    #[test]
    fn receive_backlog_is_bounded_and_counted() {
        let mut cpu = HostCpu::default();
        cpu.set_cost(StackCost::per_packet(Duration::from_micros(1)));
        for _ in 0..RX_BACKLOG {
            assert!(cpu.take(at(0), Work::Receive(vec![0])));
        }
        assert!(!cpu.take(at(0), Work::Receive(vec![0])));
        // Sends are not bounded: the endpoint hands over what its user sent, and the user bounds
        // it (the demo keeps a window in flight, as a socket's send buffer would).
        assert!(cpu.take(at(0), Work::Send(vec![0])));
        assert_eq!(cpu.counters().rx_backlog_drops, 1);
        assert!(cpu.done(at(1)).is_some());
        assert!(cpu.take(at(1), Work::Receive(vec![0])));
    }
}
