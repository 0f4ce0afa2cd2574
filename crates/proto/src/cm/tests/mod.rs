//! The CM's tests: two agents driven against each other by a [`Pair`] (quinn-proto's harness: a
//! virtual clock that jumps to the next timeout, a filter that can lose MADs, a log of what went
//! over the wire), plus hand-made MADs for what a well-behaved peer never sends.
//!
//! Files: `establish` (REQ/REP/RTU, listeners, IDs, ClassPortInfo, crossing REQs), `loss` (every
//! message lost once, retries spent, random loss), `mra` (slow users and MRAs either way),
//! `reject` (each REJ path, LAP/APR), `release` (DREQ/DREP, TimeWait, stale connections), `sidr`,
//! `props` (random input never panics and never leaks state).

mod establish;
mod loss;
mod mra;
mod props;
mod reject;
mod release;
mod sidr;

use super::*;
use crate::mad_agent::MadAddr;
use ipoib_wire::cm::{attr, CmPath};
use ipoib_wire::mad::MadHeaderRepr;
use ipoib_wire::Gid;
use ipoib_wire::Rate;
use std::time::Duration;

pub(super) const A_LID: u16 = 1;
pub(super) const B_LID: u16 = 2;
pub(super) const A_GUID: Guid = Guid(0x0002_c903_0000_000a);
pub(super) const B_GUID: Guid = Guid(0x0002_c903_0000_000b);
/// The service both sides listen on in most tests (an IPoIB-CM-like ID).
pub(super) const SID: u64 = 0x1000_0000_0000_0048;
pub(super) const A_QPN: u32 = 0x000100;
pub(super) const B_QPN: u32 = 0x000200;

/// Returns true to drop a MAD `(from LID, MAD)`.
pub(super) type Filter = Box<dyn FnMut(u16, &MadOut) -> bool>;

/// The attribute ID of a MAD.
pub(super) fn attr_of(m: &[u8]) -> u16 {
    msg::check_header(m).expect("a CM MAD").attribute_id
}

/// The CM message a MAD carries.
pub(super) fn parse(m: &[u8]) -> CmMessage {
    CmMessage::parse(attr_of(m), &m[24..]).expect("a CM message")
}

/// A config for side `guid` with few retries, so that "every retry spent" stays short.
pub(super) fn config(guid: Guid) -> CmConfig {
    CmConfig {
        max_cm_retries: 3,
        ..CmConfig::new(guid)
    }
}

/// The path from the port with `from` to the port with `to`, as a PathRecord would give it.
pub(super) fn path(from: u16, to: u16) -> CmPath {
    CmPath {
        local_port_lid: from,
        remote_port_lid: to,
        local_port_gid: Gid::new(Gid::DEFAULT_SUBNET_PREFIX, u64::from(from)),
        remote_port_gid: Gid::new(Gid::DEFAULT_SUBNET_PREFIX, u64::from(to)),
        flow_label: 0,
        packet_rate: Rate::Gbps40,
        traffic_class: 0,
        hop_limit: 0,
        sl: 0,
        subnet_local: true,
        local_ack_timeout: 19,
    }
}

/// A's connect parameters towards B: RC, MTU 2048, Linux IPoIB's REQ values, a short packet
/// lifetime (exponent 14, about 67 ms) so retries stay quick in virtual time.
pub(super) fn params(from: u16, to: u16, qpn: u32) -> ConnectParams {
    ConnectParams {
        packet_life_time: 14,
        private_data: vec![0, 0, 0, 0x48, 0, 0, 0xff, 0xf4],
        psn: 0x0000_1234,
        ..ConnectParams::linux_ipoib(path(from, to), SID, qpn, 0)
    }
}

/// Two agents, A on LID 1 and B on LID 2, and the wire between them.
pub(super) struct Pair {
    pub now: Instant,
    pub a: Cm,
    pub b: Cm,
    /// Events of A and B, in order.
    pub ea: Vec<CmEvent>,
    pub eb: Vec<CmEvent>,
    /// QPN A (B) accepts every ConnectRequest with, if any.
    pub auto_a: Option<u32>,
    pub auto_b: Option<u32>,
    /// Returns true to drop a MAD.
    pub filter: Filter,
    /// Every MAD that passed the filter: (time, from LID, MAD).
    pub log: Vec<(Instant, u16, MadOut)>,
    /// Every MAD the filter dropped.
    pub lost: Vec<(Instant, u16, MadOut)>,
}

impl Pair {
    /// A and B seeded from `seed`; B listens on [`SID`] and accepts with [`B_QPN`].
    pub fn new(seed: u64) -> Pair {
        let rng = Rng::new(seed);
        let mut b = Cm::new(config(B_GUID), rng.fork(2));
        b.listen(SID, u64::MAX).unwrap();
        Pair {
            now: Instant::ZERO,
            a: Cm::new(config(A_GUID), rng.fork(1)),
            b,
            ea: Vec::new(),
            eb: Vec::new(),
            auto_a: None,
            auto_b: Some(B_QPN),
            filter: Box::new(|_, _| false),
            log: Vec::new(),
            lost: Vec::new(),
        }
    }

    fn side(&mut self, lid: u16) -> Option<&mut Cm> {
        match lid {
            A_LID => Some(&mut self.a),
            B_LID => Some(&mut self.b),
            _ => None,
        }
    }

    /// Collects events, accepting ConnectRequests where an auto-accept QPN is set (one QPN per
    /// connection: the QPN plus the number of connections already accepted).
    fn collect(&mut self) {
        let now = self.now;
        while let Some(e) = self.a.poll_event() {
            if let (CmEvent::ConnectRequest { conn, .. }, Some(q)) = (&e, self.auto_a) {
                let n = self.accepted(true) as u32;
                self.a.accept(now, *conn, q + n, &[0xaa; 8]).unwrap();
            }
            self.ea.push(e);
        }
        while let Some(e) = self.b.poll_event() {
            if let (CmEvent::ConnectRequest { conn, .. }, Some(q)) = (&e, self.auto_b) {
                let n = self.accepted(false) as u32;
                self.b.accept(now, *conn, q + n, &[0xbb; 8]).unwrap();
            }
            self.eb.push(e);
        }
    }

    fn accepted(&self, a: bool) -> usize {
        let ev = if a { &self.ea } else { &self.eb };
        ev.iter()
            .filter(|e| matches!(e, CmEvent::ConnectRequest { .. }))
            .count()
    }

    /// Moves every MAD queued now to its destination, once. True if any was queued.
    pub fn step(&mut self) -> bool {
        self.collect();
        let now = self.now;
        let mut batch = Vec::new();
        while let Some(m) = self.a.poll_transmit(now) {
            batch.push((A_LID, m));
        }
        while let Some(m) = self.b.poll_transmit(now) {
            batch.push((B_LID, m));
        }
        let moved = !batch.is_empty();
        for (from, m) in batch {
            if (self.filter)(from, &m) {
                self.lost.push((now, from, m));
                continue;
            }
            self.log.push((now, from, m.clone()));
            let mi = MadIn {
                from: MadAddr { lid: from, ..m.to },
                mad: m.mad,
            };
            if let Some(cm) = self.side(m.to.lid) {
                cm.handle_mad(now, mi);
            }
        }
        self.collect();
        moved
    }

    /// Delivers `mad` to the side with `to` as if the side with `from` sent it.
    pub fn inject(&mut self, from: u16, to: u16, mad: Vec<u8>) {
        let now = self.now;
        if let Some(cm) = self.side(to) {
            cm.handle_mad(
                now,
                MadIn {
                    from: MadAddr::gsi(from),
                    mad,
                },
            );
        }
        self.collect();
    }

    /// Steps until nothing moves, then jumps to the next timeout and runs it, while that timeout
    /// is within `d` of now. The clock stays at the last timeout run.
    pub fn drive(&mut self, d: Duration) {
        let end = self.now + d;
        for _ in 0..100_000 {
            while self.step() {}
            let next = [self.a.poll_timeout(), self.b.poll_timeout()]
                .into_iter()
                .flatten()
                .min();
            match next {
                Some(t) if t <= end => {
                    self.now = self.now.max(t);
                    let now = self.now;
                    self.a.handle_timeout(now);
                    self.b.handle_timeout(now);
                }
                _ => return,
            }
        }
        panic!("no progress");
    }

    /// Drives until no timer is left (an hour of virtual time at most).
    pub fn settle(&mut self) {
        self.drive(Duration::from_secs(3600));
        assert_eq!(self.a.poll_timeout(), None, "A still has timers");
        assert_eq!(self.b.poll_timeout(), None, "B still has timers");
    }

    /// Names of the CM messages that went over the wire, with their sender ("A:REQ", "B:REP").
    pub fn names(&self) -> Vec<String> {
        self.log
            .iter()
            .map(|(_, from, m)| {
                let side = if *from == A_LID { "A" } else { "B" };
                format!("{side}:{}", attr::name(attr_of(&m.mad)))
            })
            .collect()
    }

    /// The MADs of attribute `id` that went over the wire (time, sender, MAD).
    pub fn sent(&self, id: u16) -> Vec<(Instant, u16, Vec<u8>)> {
        self.log
            .iter()
            .filter(|(_, _, m)| attr_of(&m.mad) == id)
            .map(|(t, f, m)| (*t, *f, m.mad.clone()))
            .collect()
    }

    /// A connects to B with [`params`] and [`A_QPN`].
    pub fn connect(&mut self) -> ConnId {
        let now = self.now;
        self.a.connect(now, params(A_LID, B_LID, A_QPN)).unwrap()
    }

    /// Connects and drives until both sides report Established; returns (A's, B's) IDs.
    pub fn establish(&mut self) -> (ConnId, ConnId) {
        let ca = self.connect();
        self.drive(Duration::from_secs(60));
        let cb = established(&self.eb).expect("B established");
        assert_eq!(established(&self.ea), Some(ca));
        (ca, cb)
    }
}

/// The first connection reported Established in `ev`.
pub(super) fn established(ev: &[CmEvent]) -> Option<ConnId> {
    ev.iter().find_map(|e| match e {
        CmEvent::Established { conn, .. } => Some(*conn),
        _ => None,
    })
}

/// A filter dropping the first `n` MADs of attribute `id`.
pub(super) fn drop_first(id: u16, mut n: usize) -> Filter {
    Box::new(move |_, m| {
        if n > 0 && attr_of(&m.mad) == id {
            n -= 1;
            return true;
        }
        false
    })
}

/// A filter dropping every MAD of attribute `id`.
pub(super) fn drop_all(id: u16) -> Filter {
    Box::new(move |_, m| attr_of(&m.mad) == id)
}

/// The common header of a MAD.
pub(super) fn header(m: &[u8]) -> MadHeaderRepr {
    MadHeaderRepr::parse_bytes(m).unwrap()
}
