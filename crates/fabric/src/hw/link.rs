//! Links: a full-duplex cable between two ports with a latency, a bandwidth (each packet occupies the
//! sender's side for its serialisation time), and a chain of faults per direction.
//!
//! The packets waiting for the sender's side are its output queue, which the simulator bounds
//! only for a sender with a finite port buffer (a switch, [`crate::hw::sim::Device::port_buffer`]):
//! a packet that finds more than the buffer's worth of data queued before it (its
//! [`Direction::queue_limit`] in time at the link's rate) is discarded, not queued
//! ([`DirStats::discarded_full`]). Real InfiniBand is lossless there: credit flow control holds
//! the packet in the previous hop and a switch discards only what stayed too long (IBA 1
//! §18.2.5.4); the simulator models no credits and drops where hardware would back-pressure, so
//! that a multicast loop whose copies multiply stays bounded. A link of infinite rate
//! (`bits_per_second` 0) queues nothing and so discards nothing.

use crate::hw::ids::PortRef;
use ipoib_proto::rng::Rng;
use std::time::Duration;

/// Identifies a link inside one simulator.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct LinkId(pub usize);

/// Physical parameters of a link.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LinkParams {
    /// Propagation delay plus switching latency.
    pub latency: Duration,
    /// Data rate in bits per second (serialisation delay = bits / rate). 0 means infinite.
    pub bits_per_second: u64,
}

impl Default for LinkParams {
    /// 4X QDR-like: 100 ns, 32 Gb/s of data.
    fn default() -> Self {
        LinkParams {
            latency: Duration::from_nanos(100),
            bits_per_second: 32_000_000_000,
        }
    }
}

impl LinkParams {
    /// Time a packet of `len` bytes occupies the link.
    pub fn serialisation(&self, len: usize) -> Duration {
        Duration::from_nanos(self.serialisation_nanos(len))
    }

    /// [`LinkParams::serialisation`] in nanoseconds (at most `u64::MAX`), for the simulator's
    /// arithmetic on `Instant`s, which are nanoseconds too.
    pub fn serialisation_nanos(&self, len: usize) -> u64 {
        if self.bits_per_second == 0 {
            return 0;
        }
        // In 64 bits when the product fits (any packet: up to 2 GB), the same quotient.
        match (len as u64).checked_mul(8 * 1_000_000_000) {
            Some(bits) => bits.div_ceil(self.bits_per_second),
            None => {
                let ns =
                    (len as u128 * 8 * 1_000_000_000).div_ceil(u128::from(self.bits_per_second));
                u64::try_from(ns).unwrap_or(u64::MAX)
            }
        }
    }
}

/// One fault piece; a direction of a link applies its pieces in order to every packet.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Fault {
    /// Drop the packet with this probability (0.0..=1.0).
    Drop(f64),
    /// Deliver an extra copy with this probability.
    Duplicate(f64),
    /// With this probability, hold the packet back by `delay` so that later packets overtake it.
    Reorder {
        /// Probability.
        p: f64,
        /// Extra delay of a reordered packet.
        delay: Duration,
    },
    /// Add a uniformly random extra delay in `0..=max` to every packet.
    Jitter(Duration),
    /// With this probability flip one random bit of the packet (the receiver's CRC checks must
    /// catch it).
    Corrupt(f64),
}

/// What the fault chain decided for one packet.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Verdict {
    /// Copies to deliver (0 = dropped), each with its extra delay and whether it was corrupted.
    pub copies: Vec<(Duration, bool)>,
}

/// Counters of one direction of a link.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct DirStats {
    /// Packets offered by the sender.
    pub sent: u64,
    /// Bytes offered by the sender.
    pub bytes: u64,
    /// Packets dropped by a `Drop` fault.
    pub dropped: u64,
    /// Packets lost because the link was down.
    pub dropped_down: u64,
    /// Packets discarded because the sender's port buffer was full (see the module docs).
    pub discarded_full: u64,
    /// Extra copies made by `Duplicate`.
    pub duplicated: u64,
    /// Packets delayed by `Reorder`.
    pub reordered: u64,
    /// Packets corrupted by `Corrupt`.
    pub corrupted: u64,
    /// Packets handed to the receiving port.
    pub delivered: u64,
}

/// One direction of a link.
#[derive(Debug, Clone, Default)]
pub struct Direction {
    /// Fault pieces, applied in order.
    pub faults: Vec<Fault>,
    /// When the sender's side is free again.
    pub busy_until: ipoib_proto::time::Instant,
    /// The longest wait a packet may find before its turn (the sender's port buffer at the
    /// link's rate); `None` for no bound. See the module docs.
    pub queue_limit: Option<Duration>,
    /// Counters.
    pub stats: DirStats,
}

impl Direction {
    /// Runs the fault chain for one packet of `packet`, corrupting it in place when chosen.
    pub fn apply(&mut self, rng: &mut Rng, packet: &mut [u8]) -> Verdict {
        let mut delay = Duration::ZERO;
        let mut copies = 1usize;
        let mut corrupted = false;
        let mut reorder_copy = None;
        for f in &self.faults {
            match *f {
                Fault::Drop(p) => {
                    if rng.chance(p) {
                        self.stats.dropped += 1;
                        return Verdict::default();
                    }
                }
                Fault::Duplicate(p) => {
                    if rng.chance(p) {
                        copies += 1;
                        self.stats.duplicated += 1;
                    }
                }
                Fault::Reorder { p, delay: d } => {
                    if rng.chance(p) {
                        reorder_copy = Some(d);
                        self.stats.reordered += 1;
                    }
                }
                Fault::Jitter(max) => {
                    let m = u64::try_from(max.as_nanos()).unwrap_or(u64::MAX);
                    if m > 0 {
                        delay += Duration::from_nanos(rng.below(m.saturating_add(1)));
                    }
                }
                Fault::Corrupt(p) => {
                    if !packet.is_empty() && rng.chance(p) {
                        let bit = rng.below(packet.len() as u64 * 8);
                        packet[(bit / 8) as usize] ^= 1 << (bit % 8);
                        corrupted = true;
                        self.stats.corrupted += 1;
                    }
                }
            }
        }
        let mut v = Verdict {
            copies: Vec::with_capacity(copies),
        };
        for i in 0..copies {
            let extra = if i == 0 {
                reorder_copy.unwrap_or_default()
            } else {
                Duration::ZERO
            };
            v.copies.push((delay + extra, corrupted));
        }
        v
    }
}

/// A cable between two ports.
#[derive(Debug, Clone)]
pub struct Link {
    /// The two ends.
    pub ends: [PortRef; 2],
    /// Physical parameters.
    pub params: LinkParams,
    /// `dirs[0]` carries packets sent by `ends[0]`, `dirs[1]` those sent by `ends[1]`.
    pub dirs: [Direction; 2],
    /// False while the link is down: everything sent is lost. Up when `plugged` and neither
    /// end `disabled` it.
    pub up: bool,
    /// The cable is there (a subnet's Unlink takes it out, ReLink puts it back).
    pub plugged: bool,
    /// Ends whose port a SubnSet(PortInfo) PortPhysicalState Disabled switched off (IBA 1
    /// §14.2.5.6), by side (`ends`).
    pub disabled: [bool; 2],
    /// `params.latency` in nanoseconds (at most `u64::MAX`), added to every packet's instant.
    pub(crate) latency_nanos: u64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn serialisation_delay() {
        let p = LinkParams {
            latency: Duration::ZERO,
            bits_per_second: 8_000_000_000,
        };
        assert_eq!(p.serialisation(1000), Duration::from_nanos(1000));
        assert_eq!(p.serialisation_nanos(1001), 1001);
        let slow = LinkParams {
            bits_per_second: 3,
            ..p
        };
        // 8 bits at 3 b/s: 2.67 s, rounded up to the nanosecond; past 64 bits of product, the
        // 128-bit quotient, saturated.
        assert_eq!(slow.serialisation_nanos(1), 2_666_666_667);
        assert_eq!(slow.serialisation(1), Duration::from_nanos(2_666_666_667));
        assert_eq!(slow.serialisation_nanos(usize::MAX), u64::MAX);
        assert_eq!(
            LinkParams {
                bits_per_second: 0,
                ..p
            }
            .serialisation(1000),
            Duration::ZERO
        );
    }

    #[test]
    fn faults_drop_duplicate_corrupt() {
        let mut rng = Rng::new(1);
        let mut d = Direction {
            faults: vec![Fault::Drop(1.0)],
            ..Default::default()
        };
        let mut pkt = vec![0u8; 16];
        assert!(d.apply(&mut rng, &mut pkt).copies.is_empty());
        assert_eq!(d.stats.dropped, 1);

        let mut d = Direction {
            faults: vec![Fault::Duplicate(1.0), Fault::Corrupt(1.0)],
            ..Default::default()
        };
        let v = d.apply(&mut rng, &mut pkt);
        assert_eq!(v.copies.len(), 2);
        assert!(v.copies.iter().all(|c| c.1));
        assert_eq!(
            pkt.iter().map(|b| b.count_ones()).sum::<u32>(),
            1,
            "exactly one bit flipped"
        );
    }
}
