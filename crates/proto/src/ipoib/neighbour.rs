//! The neighbour cache shared by ARP (IPv4) and Neighbor Discovery (IPv6): IP address → IPoIB
//! link-layer address (draft-ietf-ipoib-ip-over-infiniband-06 §9.1.1), with the reachability states of
//! RFC 4861 §7.3.2 as Linux runs them for ARP too (INCOMPLETE, REACHABLE, STALE, PROBE; DELAY is
//! folded into PROBE).
//!
//! Invariants:
//! - at most `max_entries` entries (flood protection, draft-ietf-ipoib-ip-over-infiniband-06 §14 and
//!   a bounded table against floods): a new entry evicts the least recently used STALE entry
//!   with nothing queued, and is refused when there is none;
//! - at most `queue_max` packets wait on an unresolved entry (docs/DEPLOYED.md: Linux queues 3);
//!   more are dropped and counted by the caller;
//! - an entry has a link-layer address in every state but INCOMPLETE;
//! - iteration order is the `BTreeMap`'s (address order), never a hash order.

use super::timer::{GC_STALE_TIME, MAX_SOLICIT, REACHABLE_TIME, RETRANS_TIMER};
use crate::time::Instant;
use ipoib_wire::ipoib::HwAddr;
use ipoib_wire::QKey;
use std::collections::{BTreeMap, VecDeque};
use std::net::IpAddr;

/// Reachability of a neighbour (RFC 4861 §7.3.2).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NeighbourState {
    /// Resolution in progress: `probes` multicast solicitations sent, the next due at `next`.
    Incomplete {
        /// Solicitations sent so far.
        probes: u8,
        /// When the next one (or the failure) is due.
        next: Instant,
    },
    /// Confirmed recently; becomes stale at `until`.
    Reachable {
        /// End of the reachable period.
        until: Instant,
    },
    /// Address known, reachability unconfirmed; removed when unused until `gc`.
    Stale {
        /// When an unused stale entry is forgotten.
        gc: Instant,
    },
    /// Traffic was sent on a stale entry: unicast probes until confirmed or given up.
    Probe {
        /// Unicast probes sent so far.
        probes: u8,
        /// When the next one (or the failure) is due.
        next: Instant,
    },
}

/// One neighbour.
#[derive(Debug, Clone)]
pub struct Neighbour {
    /// Its link-layer address, once known.
    pub hw: Option<HwAddr>,
    /// The Q_Key it said it intends to use, heard with `hw` (a legacy-profile ND option,
    /// draft-kashyap-ipoib-ipv6-01 §5.1.3); `None`: the broadcast group's (§9.1.2 b).
    pub qkey: Option<QKey>,
    /// Reachability.
    pub state: NeighbourState,
    /// IP packets waiting for resolution.
    pub queue: VecDeque<Vec<u8>>,
    /// Last time a packet was sent to it or it was confirmed (for eviction order).
    pub used: Instant,
}

/// A public snapshot of one entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NeighbourInfo {
    /// The IP address.
    pub ip: IpAddr,
    /// Its link-layer address, if resolved.
    pub hw: Option<HwAddr>,
    /// Its state.
    pub state: NeighbourState,
}

/// What to do with a packet for a neighbour.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lookup {
    /// Send it to this address.
    Send(HwAddr),
    /// Send it, and start probing (the entry was stale): send a unicast solicitation too.
    SendAndProbe(HwAddr),
    /// Unresolved: queue the packet ([`Neighbours::enqueue`]); `solicit` says a first multicast
    /// solicitation must go out now.
    Resolve {
        /// A new resolution started.
        solicit: bool,
    },
    /// Dropped: no room for a new entry.
    TableFull,
}

/// How a learned address was heard.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Learn {
    /// An answer to our solicitation (ARP reply to us, solicited NA): REACHABLE.
    Confirmed,
    /// A solicitation or unsolicited message addressed to us: create if missing, else update; STALE
    /// when the address is new or changed (RFC 4861 §7.2.3, RFC 826 "merge" plus the target rule).
    Create,
    /// Heard in passing (gratuitous ARP, unsolicited NA, ARP not for us): update only an existing
    /// entry (RFC 826: merge only if the pair is already in the table).
    UpdateOnly,
}

/// What [`Neighbours::learn`] did.
#[derive(Debug, Default)]
pub struct Learned {
    /// The previous address when a known neighbour's address changed (to be logged,
    /// draft-ietf-ipoib-ip-over-infiniband-06 §14).
    pub changed_from: Option<HwAddr>,
    /// Packets that were waiting and can go now.
    pub release: Vec<Vec<u8>>,
    /// The entry could not be created (table full).
    pub refused: bool,
}

/// What a due timer asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Due {
    /// Send another multicast solicitation for this address.
    Solicit(IpAddr),
    /// Send a unicast probe to this address at `hw`.
    Probe(IpAddr, HwAddr),
    /// Resolution failed; the packets that were queued, to drop (and answer).
    Failed(IpAddr, Vec<Vec<u8>>),
    /// A resolved entry was forgotten (unused while stale, or its probes failed): the address
    /// it had (RFC 4755 §3.4: its connection may go).
    Forgotten(IpAddr, HwAddr),
}

/// The cache.
#[derive(Debug)]
pub struct Neighbours {
    map: BTreeMap<IpAddr, Neighbour>,
    /// [`Neighbours::next_deadline`] as last computed; `None` when a state may have changed
    /// since (the interface asks after every event, and most events change no state).
    cached: Option<Option<Instant>>,
    max_entries: usize,
    queue_max: usize,
}

impl Neighbours {
    /// An empty cache of at most `max_entries` entries and `queue_max` packets per entry.
    pub fn new(max_entries: usize, queue_max: usize) -> Neighbours {
        Neighbours {
            map: BTreeMap::new(),
            cached: None,
            max_entries: max_entries.max(1),
            queue_max,
        }
    }

    /// Number of entries.
    pub fn len(&self) -> usize {
        self.map.len()
    }

    /// True when the cache is empty.
    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }

    /// The entry of `ip`.
    pub fn get(&self, ip: &IpAddr) -> Option<&Neighbour> {
        self.map.get(ip)
    }

    /// Every entry, in address order.
    pub fn snapshot(&self) -> Vec<NeighbourInfo> {
        self.map
            .iter()
            .map(|(ip, n)| NeighbourInfo {
                ip: *ip,
                hw: n.hw,
                state: n.state,
            })
            .collect()
    }

    /// Forgets everything (port events, docs/DEPLOYED.md); returns how many queued packets were
    /// lost.
    pub fn flush(&mut self) -> usize {
        self.cached = None;
        let n = self.map.values().map(|e| e.queue.len()).sum();
        self.map.clear();
        n
    }

    /// Makes room for one entry: evicts the least recently used stale entry with an empty queue.
    fn make_room(&mut self) -> bool {
        if self.map.len() < self.max_entries {
            return true;
        }
        let victim = self
            .map
            .iter()
            .filter(|(_, n)| matches!(n.state, NeighbourState::Stale { .. }) && n.queue.is_empty())
            .min_by_key(|(_, n)| n.used)
            .map(|(ip, _)| *ip);
        match victim {
            Some(ip) => {
                self.cached = None;
                self.map.remove(&ip);
                true
            }
            None => false,
        }
    }

    /// A packet is to go to `ip`: how (RFC 4861 §7.2.2, §7.3.3; Linux `neigh_resolve_output`). A
    /// missing entry is created INCOMPLETE.
    pub fn lookup(&mut self, now: Instant, ip: IpAddr) -> Lookup {
        if let Some(n) = self.map.get_mut(&ip) {
            n.used = now;
            return match (n.state, n.hw) {
                (NeighbourState::Incomplete { .. }, _) | (_, None) => {
                    Lookup::Resolve { solicit: false }
                }
                (NeighbourState::Stale { .. }, Some(hw)) => {
                    self.cached = None;
                    n.state = NeighbourState::Probe {
                        probes: 1,
                        next: now + RETRANS_TIMER,
                    };
                    Lookup::SendAndProbe(hw)
                }
                (_, Some(hw)) => Lookup::Send(hw),
            };
        }
        if !self.make_room() {
            return Lookup::TableFull;
        }
        self.cached = None;
        self.map.insert(
            ip,
            Neighbour {
                hw: None,
                qkey: None,
                state: NeighbourState::Incomplete {
                    probes: 1,
                    next: now + RETRANS_TIMER,
                },
                queue: VecDeque::new(),
                used: now,
            },
        );
        Lookup::Resolve { solicit: true }
    }

    /// Queues a packet on an unresolved entry; false (drop) when its queue is full.
    pub fn enqueue(&mut self, ip: &IpAddr, packet: Vec<u8>) -> bool {
        match self.map.get_mut(ip) {
            Some(n) if n.queue.len() < self.queue_max => {
                n.queue.push_back(packet);
                true
            }
            _ => false,
        }
    }

    /// Records that `ip` is at `hw`.
    pub fn learn(&mut self, now: Instant, ip: IpAddr, hw: HwAddr, how: Learn) -> Learned {
        self.learn_with_qkey(now, ip, hw, None, how)
    }

    /// [`Neighbours::learn`], with the Q_Key the neighbour named beside `hw` (or `None`), kept
    /// with the address: whenever the entry takes `hw`, it takes `qkey` too.
    pub fn learn_with_qkey(
        &mut self,
        now: Instant,
        ip: IpAddr,
        hw: HwAddr,
        qkey: Option<QKey>,
        how: Learn,
    ) -> Learned {
        self.cached = None;
        let mut out = Learned::default();
        let reachable = NeighbourState::Reachable {
            until: now + REACHABLE_TIME,
        };
        let stale = NeighbourState::Stale {
            gc: now + GC_STALE_TIME,
        };
        if let Some(n) = self.map.get_mut(&ip) {
            let old = n.hw;
            let changed = old.is_some_and(|o| o != hw);
            if changed {
                out.changed_from = old;
            }
            let was_resolving = matches!(
                n.state,
                NeighbourState::Incomplete { .. } | NeighbourState::Probe { .. }
            );
            n.hw = Some(hw);
            n.qkey = qkey;
            n.state = match how {
                Learn::Confirmed if was_resolving || !changed => reachable,
                Learn::Confirmed => stale,
                Learn::Create | Learn::UpdateOnly if changed || old.is_none() => stale,
                Learn::Create | Learn::UpdateOnly => n.state,
            };
            if !matches!(n.state, NeighbourState::Incomplete { .. }) {
                out.release = n.queue.drain(..).collect();
            }
            return out;
        }
        if how != Learn::Create {
            return out;
        }
        if !self.make_room() {
            out.refused = true;
            return out;
        }
        self.map.insert(
            ip,
            Neighbour {
                hw: Some(hw),
                qkey,
                state: stale,
                queue: VecDeque::new(),
                used: now,
            },
        );
        out
    }

    /// The Q_Key `ip` named with its current address, if that address has QPN `qpn` and GID
    /// `gid`.
    pub fn qkey(&self, ip: &IpAddr, qpn: u32, gid: ipoib_wire::Gid) -> Option<QKey> {
        let n = self.map.get(ip)?;
        n.hw.filter(|h| h.qpn == qpn && h.gid == gid)?;
        n.qkey
    }

    /// An advertisement without Override named another address for `ip` (RFC 4861 §7.2.5): a
    /// REACHABLE entry becomes STALE, its address kept; any other entry is left alone.
    pub fn weaken(&mut self, now: Instant, ip: &IpAddr) {
        if let Some(n) = self.map.get_mut(ip) {
            if matches!(n.state, NeighbourState::Reachable { .. }) {
                self.cached = None;
                n.state = NeighbourState::Stale {
                    gc: now + GC_STALE_TIME,
                };
            }
        }
    }

    /// [`Neighbours::next_deadline`], computed again only after a change of state.
    pub fn deadline(&mut self) -> Option<Instant> {
        if let Some(d) = self.cached {
            return d;
        }
        let d = self.next_deadline();
        self.cached = Some(d);
        d
    }

    /// The earliest deadline of any entry.
    #[inline]
    pub fn next_deadline(&self) -> Option<Instant> {
        if self.map.is_empty() {
            return None;
        }
        self.map
            .values()
            .map(|n| match n.state {
                NeighbourState::Incomplete { next, .. } | NeighbourState::Probe { next, .. } => {
                    next
                }
                NeighbourState::Reachable { until } => until,
                NeighbourState::Stale { gc } => gc,
            })
            .min()
    }

    /// Runs every due deadline: solicitations and probes resent up to [`MAX_SOLICIT`] times, then
    /// failure (the entry and its queue go); reachable entries age to stale; unused stale entries
    /// go (RFC 4861 §7.3.3; Linux `neigh_timer_handler`, `neigh_periodic_work`).
    pub fn handle_timeout(&mut self, now: Instant) -> Vec<Due> {
        self.cached = None;
        let mut out = Vec::new();
        let mut remove = Vec::new();
        for (ip, n) in self.map.iter_mut() {
            match n.state {
                NeighbourState::Incomplete { probes, next } if next <= now => {
                    if probes >= MAX_SOLICIT {
                        out.push(Due::Failed(*ip, std::mem::take(&mut n.queue).into()));
                        remove.push(*ip);
                    } else {
                        n.state = NeighbourState::Incomplete {
                            probes: probes + 1,
                            next: now + RETRANS_TIMER,
                        };
                        out.push(Due::Solicit(*ip));
                    }
                }
                NeighbourState::Probe { probes, next } if next <= now => match n.hw {
                    Some(hw) if probes < MAX_SOLICIT => {
                        n.state = NeighbourState::Probe {
                            probes: probes + 1,
                            next: now + RETRANS_TIMER,
                        };
                        out.push(Due::Probe(*ip, hw));
                    }
                    _ => {
                        out.push(Due::Failed(*ip, std::mem::take(&mut n.queue).into()));
                        if let Some(hw) = n.hw {
                            out.push(Due::Forgotten(*ip, hw));
                        }
                        remove.push(*ip);
                    }
                },
                NeighbourState::Reachable { until } if until <= now => {
                    n.state = NeighbourState::Stale {
                        gc: now + GC_STALE_TIME,
                    };
                }
                NeighbourState::Stale { gc } if gc <= now => {
                    if let Some(hw) = n.hw {
                        out.push(Due::Forgotten(*ip, hw));
                    }
                    remove.push(*ip);
                }
                _ => {}
            }
        }
        for ip in remove {
            self.map.remove(&ip);
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ipoib_wire::ipoib::HwAddrFlags;
    use ipoib_wire::Gid;
    use std::net::Ipv4Addr;
    use std::time::Duration;

    fn ip(n: u8) -> IpAddr {
        IpAddr::V4(Ipv4Addr::new(10, 0, 0, n))
    }
    fn hw(n: u64) -> HwAddr {
        HwAddr::new(
            HwAddrFlags::NONE,
            0x48,
            Gid::new(Gid::DEFAULT_SUBNET_PREFIX, n),
        )
    }

    // docs/DEPLOYED.md "Linux IPoIB": at most 3 packets queued per unresolved neighbour.
    #[test]
    fn three_packets_queue_then_drop() {
        let mut t = Neighbours::new(8, 3);
        let now = Instant::ZERO;
        assert_eq!(t.lookup(now, ip(2)), Lookup::Resolve { solicit: true });
        for i in 1..=4u8 {
            assert_eq!(t.lookup(now, ip(2)), Lookup::Resolve { solicit: false });
            assert_eq!(t.enqueue(&ip(2), vec![i]), i <= 3);
        }
        let l = t.learn(now, ip(2), hw(2), Learn::Confirmed);
        assert_eq!(l.release, vec![vec![1], vec![2], vec![3]]);
        assert_eq!(t.lookup(now, ip(2)), Lookup::Send(hw(2)));
    }

    // RFC 4861 §7.3.3 as Linux runs it: REACHABLE -> STALE -> (send) PROBE -> failure after 3 probes.
    #[test]
    fn aging_and_probe_failure() {
        let mut t = Neighbours::new(8, 3);
        let mut now = Instant::ZERO;
        t.learn(now, ip(2), hw(2), Learn::Create);
        t.lookup(now, ip(2));
        let l = t.learn(now, ip(2), hw(2), Learn::Confirmed);
        assert!(l.changed_from.is_none());
        assert!(matches!(
            t.get(&ip(2)).map(|n| n.state),
            Some(NeighbourState::Reachable { .. })
        ));
        now += REACHABLE_TIME;
        t.handle_timeout(now);
        assert!(matches!(
            t.get(&ip(2)).map(|n| n.state),
            Some(NeighbourState::Stale { .. })
        ));
        assert_eq!(t.lookup(now, ip(2)), Lookup::SendAndProbe(hw(2)));
        let mut dues = Vec::new();
        for _ in 0..4 {
            now += RETRANS_TIMER;
            dues.extend(t.handle_timeout(now));
        }
        assert_eq!(
            dues,
            vec![
                Due::Probe(ip(2), hw(2)),
                Due::Probe(ip(2), hw(2)),
                Due::Failed(ip(2), vec![]),
                Due::Forgotten(ip(2), hw(2))
            ]
        );
        assert!(t.get(&ip(2)).is_none());
    }

    // draft-ietf-ipoib-ip-over-infiniband-06 §14: the table is bounded; stale entries make room,
    // resolving and reachable ones never do.
    #[test]
    fn bounded_table_evicts_stale_only() {
        let mut t = Neighbours::new(3, 3);
        let now = Instant::ZERO;
        t.lookup(now, ip(1));
        t.learn(now, ip(1), hw(1), Learn::Confirmed);
        for i in 10..50 {
            t.learn(
                now + Duration::from_millis(i),
                ip(i as u8),
                hw(i),
                Learn::Create,
            );
            assert!(t.len() <= 3);
        }
        assert!(t.get(&ip(1)).is_some());
        assert!(t.get(&ip(49)).is_some());
        // UpdateOnly never creates.
        t.learn(now, ip(200), hw(200), Learn::UpdateOnly);
        assert!(t.get(&ip(200)).is_none());
        // A full table of resolving entries refuses.
        let mut u = Neighbours::new(2, 3);
        u.lookup(now, ip(1));
        u.lookup(now, ip(2));
        assert_eq!(u.lookup(now, ip(3)), Lookup::TableFull);
        assert!(u.learn(now, ip(3), hw(3), Learn::Create).refused);
    }

    // draft-ietf-ipoib-ip-over-infiniband-06 §14: a changed address is reported for logging.
    #[test]
    fn changed_address_is_reported() {
        let mut t = Neighbours::new(8, 3);
        let now = Instant::ZERO;
        t.learn(now, ip(2), hw(2), Learn::Create);
        let l = t.learn(now, ip(2), hw(3), Learn::UpdateOnly);
        assert_eq!(l.changed_from, Some(hw(2)));
        assert_eq!(t.get(&ip(2)).and_then(|n| n.hw), Some(hw(3)));
    }

    // draft-kashyap-ipoib-ipv6-01 §5.1.3: the Q_Key a neighbour names goes with the address it
    // named it with: replaced when the address is learned again, forgotten when an address comes
    // without one, and given only for that address.
    #[test]
    fn qkey_goes_with_the_address() {
        let mut n = Neighbours::new(8, 3);
        let t = Instant::ZERO;
        let g = |x: u64| Gid::new(Gid::DEFAULT_SUBNET_PREFIX, x);
        n.learn_with_qkey(t, ip(1), hw(1), Some(QKey(0x1234)), Learn::Create);
        assert_eq!(n.qkey(&ip(1), 0x48, g(1)), Some(QKey(0x1234)));
        assert_eq!(n.qkey(&ip(1), 0x49, g(1)), None, "another QPN");
        assert_eq!(n.qkey(&ip(1), 0x48, g(2)), None, "another GID");
        assert_eq!(n.qkey(&ip(2), 0x48, g(1)), None, "another neighbour");
        n.learn_with_qkey(t, ip(1), hw(2), Some(QKey(0x5678)), Learn::Confirmed);
        assert_eq!(n.qkey(&ip(1), 0x48, g(1)), None);
        assert_eq!(n.qkey(&ip(1), 0x48, g(2)), Some(QKey(0x5678)));
        n.learn(t, ip(1), hw(2), Learn::Confirmed);
        assert_eq!(n.qkey(&ip(1), 0x48, g(2)), None);
        assert_eq!(n.get(&ip(1)).map(|e| e.hw), Some(Some(hw(2))));
    }
}
