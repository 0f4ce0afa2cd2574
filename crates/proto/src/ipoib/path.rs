//! The path cache: destination GID → what the SA's PathRecord says about reaching it (DLID, SL,
//! rate, MTU, and the GRH fields when the path leaves the subnet). draft-ietf-ipoib-ip-over-infiniband-06
//! §9.1.2 a (the LID from the SA, "one such method"), §9.1 g and §9.1.2 e (the path rate "must" be
//! determined by IB methods: the PathRecord rate), docs/DEPLOYED.md "Linux IPoIB" (path records
//! keyed by
//! DGID, at most 3 packets queued per unresolved path).
//!
//! Invariants: one query at a time per GID; at most `queue_max` ARP frames and `queue_max` IP
//! packets wait per path; at most
//! `max_entries` paths (an entry with a query in flight or frames queued is never evicted); an
//! invalidated path (a light flush: ClientReregister or an SM change) keeps being used while it
//! is asked again. Linux's `ipoib_mark_paths_invalid` makes its packets wait for the new answer
//! instead (docs/IPOIB-JOINS.md "Unicast through a light flush").

use crate::sa::RequestId;
use crate::time::Instant;
use ipoib_wire::sa::{pr_mask, PathRecordRepr};
use ipoib_wire::PKey;
use ipoib_wire::{Gid, Mtu, Rate};
use std::collections::{BTreeMap, VecDeque};

/// What a path record gives the transmit path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PathInfo {
    /// Destination LID.
    pub dlid: u16,
    /// Service level.
    pub sl: u8,
    /// Static rate (PathRecord Rate).
    pub rate: Rate,
    /// Path MTU.
    pub mtu: Mtu,
    /// HopLimit; above 0 the path needs a GRH (Linux `ib_init_ah_attr_from_path`).
    pub hop_limit: u8,
    /// Traffic class for the GRH.
    pub tclass: u8,
    /// Flow label for the GRH.
    pub flow_label: u32,
    /// The whole record (a connected-mode REQ is built from it, RFC 4755 §3.2).
    pub record: PathRecordRepr,
}

impl PathInfo {
    /// From a PathRecord answer.
    pub fn from_record(r: &PathRecordRepr) -> PathInfo {
        PathInfo {
            dlid: r.dlid,
            sl: r.sl,
            rate: r.rate,
            mtu: r.mtu,
            hop_limit: r.hop_limit,
            tclass: r.tclass,
            flow_label: r.flow_label,
            record: *r,
        }
    }

    /// True when packets on this path carry a GRH: the SA gave a hop limit, i.e. the path crosses a
    /// router (draft-ietf-ipoib-ip-over-infiniband-06 §6: GRH required between subnets, optional
    /// within one; Linux `ib_init_ah_attr_from_path`: `hop_limit > 0`).
    pub fn needs_grh(&self) -> bool {
        self.hop_limit > 0
    }
}

/// A frame waiting for its path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QueuedFrame {
    /// Destination QPN.
    pub qpn: u32,
    /// The destination's link-layer flags (RFC 4755 §3.1: whether it takes connections).
    pub flags: ipoib_wire::ipoib::HwAddrFlags,
    /// Encapsulation header + datagram.
    pub data: Vec<u8>,
}

impl QueuedFrame {
    /// True for ARP and RARP (encapsulation types 0x0806, 0x8035; draft-06 §6 table 1).
    fn is_arp(&self) -> bool {
        matches!(self.data.get(..2), Some([0x08, 0x06]) | Some([0x80, 0x35]))
    }
}

#[derive(Debug)]
struct Path {
    info: Option<PathInfo>,
    valid: bool,
    query: Option<RequestId>,
    failed_until: Option<Instant>,
    queue: VecDeque<QueuedFrame>,
    used: Instant,
}

/// The answer of [`Paths::lookup`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PathLookup {
    /// Send with this path; `refresh` asks the caller to start a query (invalidated path).
    Use(PathInfo, bool),
    /// Queue the frame ([`Paths::enqueue`]); `start_query` asks the caller to start the query.
    Wait {
        /// No query is in flight: start one.
        start_query: bool,
    },
    /// The last query failed recently: drop.
    Failed,
    /// No room for another path: drop.
    TableFull,
}

/// The cache.
#[derive(Debug)]
pub struct Paths {
    map: BTreeMap<Gid, Path>,
    /// [`Paths::next_deadline`] as last computed; `None` after any change that may move it.
    cached: Option<Option<Instant>>,
    max_entries: usize,
    queue_max: usize,
}

impl Paths {
    /// An empty cache.
    pub fn new(max_entries: usize, queue_max: usize) -> Paths {
        Paths {
            map: BTreeMap::new(),
            cached: None,
            max_entries: max_entries.max(1),
            queue_max,
        }
    }

    /// Number of cached paths.
    pub fn len(&self) -> usize {
        self.map.len()
    }

    /// True when no path is cached.
    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }

    /// The resolved path to `gid`, if any.
    pub fn get(&self, gid: &Gid) -> Option<PathInfo> {
        self.map.get(gid).and_then(|p| p.info)
    }

    /// Every resolved path, in GID order.
    pub fn snapshot(&self) -> Vec<(Gid, PathInfo)> {
        self.map
            .iter()
            .filter_map(|(g, p)| p.info.map(|i| (*g, i)))
            .collect()
    }

    /// How to send to `gid` now.
    pub fn lookup(&mut self, now: Instant, gid: Gid) -> PathLookup {
        if let Some(p) = self.map.get_mut(&gid) {
            p.used = now;
            if let Some(info) = p.info {
                // An invalidated path is asked again, but not before a failed refresh's hold ends.
                let held = p.failed_until.is_some_and(|t| t > now);
                return PathLookup::Use(info, !p.valid && p.query.is_none() && !held);
            }
            if p.query.is_some() {
                return PathLookup::Wait { start_query: false };
            }
            self.cached = None;
            return match p.failed_until {
                Some(t) if t > now => PathLookup::Failed,
                _ => PathLookup::Wait { start_query: true },
            };
        }
        self.cached = None;
        if self.map.len() >= self.max_entries {
            let victim = self
                .map
                .iter()
                .filter(|(_, p)| p.query.is_none() && p.queue.is_empty())
                .min_by_key(|(_, p)| p.used)
                .map(|(g, _)| *g);
            match victim {
                Some(g) => {
                    self.map.remove(&g);
                }
                None => return PathLookup::TableFull,
            }
        }
        self.map.insert(
            gid,
            Path {
                info: None,
                valid: false,
                query: None,
                failed_until: None,
                queue: VecDeque::new(),
                used: now,
            },
        );
        PathLookup::Wait { start_query: true }
    }

    /// Queues a frame on `gid`'s path; false (drop) when the queue is full or the path unknown.
    ///
    /// ARP frames and IP packets are bounded separately, `queue_max` each, as Linux keeps them in
    /// two queues (`ipoib_main.c`: `unicast_arp_send` queues ARP/RARP on `path->queue`,
    /// `neigh_add_path` queues IP packets on `neigh->queue`, `IPOIB_MAX_PATH_REC_QUEUE` each): an
    /// ARP reply is never lost because IP packets to the same peer filled the queue while the
    /// PathRecord query is in flight.
    pub fn enqueue(&mut self, gid: &Gid, frame: QueuedFrame) -> bool {
        let arp = frame.is_arp();
        match self.map.get_mut(gid) {
            Some(p) if p.queue.iter().filter(|f| f.is_arp() == arp).count() < self.queue_max => {
                p.queue.push_back(frame);
                true
            }
            _ => false,
        }
    }

    /// Records that `id` is the query in flight for `gid`.
    pub fn set_query(&mut self, gid: &Gid, id: RequestId) {
        self.cached = None;
        if let Some(p) = self.map.get_mut(gid) {
            p.query = Some(id);
        }
    }

    /// A query finished. Returns the GID, the path (when it succeeded) and the frames that waited
    /// (to send on success, to count as dropped on failure). A failure is held for
    /// `PATH_FAILED_HOLD` when `hold` (the SA answered that there is no path), not after a
    /// query that got no answer (`PATH_QUERY_TIMEOUT` has passed already, and the next packet
    /// may find the SA back, or another master's).
    pub fn complete(
        &mut self,
        now: Instant,
        gid: &Gid,
        id: RequestId,
        result: Option<PathInfo>,
        hold: bool,
    ) -> Option<(Option<PathInfo>, Vec<QueuedFrame>)> {
        self.cached = None;
        let p = self.map.get_mut(gid)?;
        if p.query != Some(id) {
            return None;
        }
        p.query = None;
        match result {
            Some(info) => {
                p.info = Some(info);
                p.valid = true;
                p.failed_until = None;
            }
            None => {
                // Keep an invalidated path's old answer (it worked before); forget a new one.
                if p.info.is_none() || p.valid {
                    p.info = None;
                }
                p.failed_until = hold.then(|| now + super::timer::PATH_FAILED_HOLD);
            }
        }
        Some((result, p.queue.drain(..).collect()))
    }

    /// Forgets the path to `gid` unless a query is in flight or frames wait on it.
    pub fn forget(&mut self, gid: &Gid) {
        self.cached = None;
        if self
            .map
            .get(gid)
            .is_some_and(|p| p.query.is_none() && p.queue.is_empty())
        {
            self.map.remove(gid);
        }
    }

    /// Marks every path invalid (a light flush, as Linux `ipoib_mark_paths_invalid`).
    pub fn invalidate(&mut self) {
        self.cached = None;
        for p in self.map.values_mut() {
            p.valid = false;
        }
    }

    /// Forgets every path; returns the number of queued frames lost and the queries to cancel.
    pub fn flush(&mut self) -> (usize, Vec<RequestId>) {
        self.cached = None;
        let lost = self.map.values().map(|p| p.queue.len()).sum();
        let ids = self.map.values().filter_map(|p| p.query).collect();
        self.map.clear();
        (lost, ids)
    }

    /// Failed entries whose hold time is over are forgotten.
    pub fn handle_timeout(&mut self, now: Instant) {
        self.cached = None;
        self.map.retain(|_, p| {
            p.info.is_some() || p.query.is_some() || !matches!(p.failed_until, Some(t) if t <= now)
        });
    }

    /// [`Paths::next_deadline`], computed again only after a change that may move it.
    pub fn deadline(&mut self) -> Option<Instant> {
        if let Some(d) = self.cached {
            return d;
        }
        let d = self.next_deadline();
        self.cached = Some(d);
        d
    }

    /// The next hold expiry.
    #[inline]
    pub fn next_deadline(&self) -> Option<Instant> {
        if self.map.is_empty() {
            return None;
        }
        self.map
            .values()
            .filter(|p| p.info.is_none() && p.query.is_none())
            .filter_map(|p| p.failed_until)
            .min()
    }
}

/// The PathRecord query Linux's IPoIB sends (`path_rec_start`): DGID, SGID, NumbPath 1, TClass and
/// P_Key given, SubnAdmGet (IBA 1 §15.2.5.16).
pub fn path_query(sgid: Gid, dgid: Gid, pkey: PKey, tclass: u8) -> (PathRecordRepr, u64) {
    let rec = PathRecordRepr {
        dgid,
        sgid,
        numb_path: 1,
        reversible: true,
        pkey,
        tclass,
        ..Default::default()
    };
    let mask =
        pr_mask::DGID | pr_mask::SGID | pr_mask::NUMB_PATH | pr_mask::TCLASS | pr_mask::P_KEY;
    (rec, mask)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn info(dlid: u16) -> PathInfo {
        PathInfo {
            dlid,
            sl: 0,
            rate: Rate::Gbps40,
            mtu: Mtu::Mtu2048,
            hop_limit: 0,
            tclass: 0,
            flow_label: 0,
            record: PathRecordRepr::default(),
        }
    }

    // docs/DEPLOYED.md "Linux IPoIB": one query per DGID, 3 frames queued, cached afterwards.
    #[test]
    fn query_queue_and_cache() {
        let g = Gid::new(Gid::DEFAULT_SUBNET_PREFIX, 2);
        let mut p = Paths::new(4, 3);
        let now = Instant::ZERO;
        assert_eq!(p.lookup(now, g), PathLookup::Wait { start_query: true });
        p.set_query(&g, RequestId(1));
        for i in 0..4u8 {
            assert_eq!(p.lookup(now, g), PathLookup::Wait { start_query: false });
            let ok = p.enqueue(
                &g,
                QueuedFrame {
                    qpn: 1,
                    flags: ipoib_wire::ipoib::HwAddrFlags::NONE,
                    data: vec![i],
                },
            );
            assert_eq!(ok, i < 3);
        }
        let (res, q) = p
            .complete(now, &g, RequestId(1), Some(info(5)), true)
            .expect("pending");
        assert_eq!(res, Some(info(5)));
        assert_eq!(q.len(), 3);
        assert_eq!(p.lookup(now, g), PathLookup::Use(info(5), false));
        p.invalidate();
        assert_eq!(p.lookup(now, g), PathLookup::Use(info(5), true));
    }

    // Regression (integration on the emulated fabric: all hosts resolving each other at once):
    // IP packets queued for a path must not crowd out an ARP reply to the same peer. Linux keeps
    // them apart (`unicast_arp_send` → `path->queue`, `neigh_add_path` → `neigh->queue`, 3 each).
    #[test]
    fn arp_and_ip_queue_apart() {
        let g = Gid::new(Gid::DEFAULT_SUBNET_PREFIX, 2);
        let mut p = Paths::new(4, 3);
        p.lookup(Instant::ZERO, g);
        let frame = |t: [u8; 2]| QueuedFrame {
            qpn: 1,
            flags: ipoib_wire::ipoib::HwAddrFlags::NONE,
            data: vec![t[0], t[1], 0, 0],
        };
        for _ in 0..3 {
            assert!(p.enqueue(&g, frame([0x08, 0x00])), "IPv4");
        }
        assert!(
            !p.enqueue(&g, frame([0x86, 0xdd])),
            "a fourth IP packet is dropped"
        );
        for _ in 0..3 {
            assert!(p.enqueue(&g, frame([0x08, 0x06])), "ARP still has room");
        }
        assert!(
            !p.enqueue(&g, frame([0x08, 0x06])),
            "a fourth ARP frame is dropped"
        );
    }

    // A failed query is remembered for a while, then asked again.
    #[test]
    fn failure_hold() {
        let g = Gid::new(Gid::DEFAULT_SUBNET_PREFIX, 2);
        let mut p = Paths::new(4, 3);
        let now = Instant::ZERO;
        p.lookup(now, g);
        p.set_query(&g, RequestId(9));
        p.complete(now, &g, RequestId(9), None, true);
        assert_eq!(p.lookup(now, g), PathLookup::Failed);
        let later = now + super::super::timer::PATH_FAILED_HOLD;
        p.handle_timeout(later);
        assert_eq!(p.len(), 0);
        assert_eq!(p.lookup(later, g), PathLookup::Wait { start_query: true });
    }
}
