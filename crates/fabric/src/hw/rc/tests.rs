//! Test harness (quinn-proto's `Pair` shape): two engines back to back with an in-test wire per
//! direction that drops, duplicates and reorders packets from a seeded [`Rng`], and a virtual clock
//! that jumps to the next delivery or timer. Packets are encoded to bytes and parsed back with the
//! wire crate on the way (unless `encode` is off), so every packet the engine emits is a valid IB
//! packet.

mod conform;
mod hca;
mod rc;
mod rdma;
mod uc;

use super::{ConnectedQp, MemoryRegion, Outgoing};
use crate::hw::verbs::{AddressHandle, Completion, ConnectedAttr, QpType};
use ipoib_proto::rng::Rng;
use ipoib_proto::time::Instant;
use ipoib_wire::ib::{BthRepr, LrhRepr};
use ipoib_wire::packet::{Packet, PacketRepr};
use ipoib_wire::Mtu;
use ipoib_wire::PKey;
use std::collections::BTreeMap;
use std::time::Duration;

pub(super) const QPN_A: u32 = 0x11;
pub(super) const QPN_B: u32 = 0x22;

/// One direction of the wire.
pub(super) struct Wire {
    rng: Rng,
    /// Probability a packet is lost.
    pub drop: f64,
    /// Probability a packet arrives twice.
    pub dup: f64,
    /// Probability a packet is held back behind later ones.
    pub reorder: f64,
    /// Everything sent is lost (the peer vanished).
    pub down: bool,
    /// PSNs of request packets to lose once each (deterministic faults).
    pub drop_once: Vec<u32>,
    /// Encode to bytes and parse back.
    pub encode: bool,
    latency: Duration,
    queue: BTreeMap<(Instant, u64), Outgoing>,
    seq: u64,
    /// BTHs of every packet put on the wire, in order.
    pub log: Vec<BthRepr>,
    pub keep_log: bool,
}

impl Wire {
    fn new(rng: Rng) -> Wire {
        Wire {
            rng,
            drop: 0.0,
            dup: 0.0,
            reorder: 0.0,
            down: false,
            drop_once: Vec::new(),
            encode: true,
            latency: Duration::from_micros(1),
            queue: BTreeMap::new(),
            seq: 0,
            log: Vec::new(),
            keep_log: true,
        }
    }

    /// Sets drop, duplicate and reorder probabilities.
    pub fn faults(&mut self, drop: f64, dup: f64, reorder: f64) {
        self.drop = drop;
        self.dup = dup;
        self.reorder = reorder;
    }

    fn send(&mut self, now: Instant, pkt: Outgoing) {
        if self.keep_log {
            self.log.push(pkt.bth);
        }
        let pkt = if self.encode { roundtrip(&pkt) } else { pkt };
        if self.down || self.rng.chance(self.drop) {
            return;
        }
        if let Some(i) = self.drop_once.iter().position(|&p| p == pkt.bth.psn) {
            if pkt.bth.opcode.operation() != ipoib_wire::ib::Operation::Acknowledge {
                self.drop_once.remove(i);
                return;
            }
        }
        let mut at = now + self.latency;
        if self.rng.chance(self.reorder) {
            at += self.latency * (1 + self.rng.below(8) as u32);
        }
        if self.rng.chance(self.dup) {
            let later = at + self.latency * self.rng.below(4) as u32;
            self.seq += 1;
            self.queue.insert((later, self.seq), pkt.clone());
        }
        self.seq += 1;
        self.queue.insert((at, self.seq), pkt);
    }

    fn pop_due(&mut self, now: Instant) -> Option<Outgoing> {
        let (&key, _) = self.queue.iter().next()?;
        if key.0 > now {
            return None;
        }
        self.queue.remove(&key)
    }

    fn next_time(&self) -> Option<Instant> {
        self.queue.keys().next().map(|k| k.0)
    }
}

/// Builds the whole packet (LRH, BTH with P_Key, ext headers, pad, ICRC, VCRC) and parses it back,
/// as the HCAs on both ends would.
fn roundtrip(pkt: &Outgoing) -> Outgoing {
    let lrh = LrhRepr::local(0, 0, 2, 1);
    let mut bth = pkt.bth;
    bth.pkey = PKey(0xffff);
    let repr = PacketRepr {
        lrh,
        grh: None,
        bth: Some(bth),
        ext: pkt.ext,
        payload: &pkt.payload,
    };
    let mut buf = vec![0u8; repr.buffer_len()];
    repr.emit(&mut buf)
        .expect("engine emitted an invalid packet");
    let parsed = Packet::parse(&buf).expect("packet parses");
    assert!(parsed.crc_ok());
    let mut bth = parsed.bth.expect("bth");
    bth.pkey = PKey(0);
    bth.pad_count = 0;
    Outgoing {
        bth,
        ext: parsed.ext,
        payload: parsed.payload.to_vec(),
    }
}

/// Connection attributes for a test QP talking to `dest` (path MTU code `mtu`).
pub(super) fn attr(dest: u32, psn_out: u32, psn_in: u32, mtu: u8) -> ConnectedAttr {
    ConnectedAttr {
        path: AddressHandle {
            dlid: 7,
            sl: 0,
            src_path_bits: 0,
            grh: None,
            port: 1,
        },
        dest_qpn: dest,
        rq_psn: psn_in,
        sq_psn: psn_out,
        path_mtu: Mtu::from(mtu),
        pkey_index: 0,
        retry_count: 7,
        rnr_retry: 7,
        timeout: 8,
        min_rnr_timer: 1,
        max_rd_atomic: 4,
        max_dest_rd_atomic: 4,
    }
}

/// Two engines and the wire between them.
pub(super) struct Pair {
    pub a: ConnectedQp,
    pub b: ConnectedQp,
    pub mem_a: Vec<MemoryRegion>,
    pub mem_b: Vec<MemoryRegion>,
    /// a -> b.
    pub ab: Wire,
    /// b -> a.
    pub ba: Wire,
    pub now: Instant,
    pub comp_a: Vec<Completion>,
    pub comp_b: Vec<Completion>,
    /// Spent buffers stay in the QPs (`ConnectedQp::take_spent`) instead of being dropped.
    pub keep_spent: bool,
}

impl Pair {
    /// A pair of `qp_type` QPs with path MTU code `mtu`, PSNs starting at `psn` both ways.
    pub fn new(qp_type: QpType, seed: u64, mtu: u8, psn: u32) -> Pair {
        Self::with_attrs(qp_type, seed, |_| {}, mtu, psn)
    }

    /// As `new`, with a hook to change both QPs' attributes.
    pub fn with_attrs(
        qp_type: QpType,
        seed: u64,
        tweak: impl Fn(&mut ConnectedAttr),
        mtu: u8,
        psn: u32,
    ) -> Pair {
        let rng = Rng::new(seed);
        let mut aa = attr(QPN_B, psn, psn, mtu);
        let mut ab = attr(QPN_A, psn, psn, mtu);
        tweak(&mut aa);
        tweak(&mut ab);
        Pair {
            a: ConnectedQp::new(qp_type, QPN_A, aa).expect("qp a"),
            b: ConnectedQp::new(qp_type, QPN_B, ab).expect("qp b"),
            mem_a: Vec::new(),
            mem_b: Vec::new(),
            ab: Wire::new(rng.fork(1)),
            ba: Wire::new(rng.fork(2)),
            now: Instant::from_nanos(1_000_000),
            comp_a: Vec::new(),
            comp_b: Vec::new(),
            keep_spent: false,
        }
    }

    /// Moves packets that are due and collects completions; false when nothing happened. Checks
    /// `ConnectedQp::has_work` on the way: a QP without work sends nothing and has no
    /// completion and no spent buffer (the HCA skips draining it on that word).
    pub fn step(&mut self) -> bool {
        for (qp, name) in [(&mut self.a, "a"), (&mut self.b, "b")] {
            if !qp.has_work() {
                assert!(qp.poll_transmit(self.now).is_none(), "{name} sent, no work");
                assert!(qp.poll_completion().is_none(), "{name} completed, no work");
                assert!(qp.take_spent().is_none(), "{name} spent, no work");
            }
        }
        let mut busy = false;
        while let Some(p) = self.a.poll_transmit(self.now) {
            self.ab.send(self.now, p);
            busy = true;
        }
        while let Some(p) = self.b.poll_transmit(self.now) {
            self.ba.send(self.now, p);
            busy = true;
        }
        // Spent buffers are the HCA's to reuse; here they go (else `has_work` stays true),
        // unless a test looks at them.
        while !self.keep_spent && (self.a.take_spent().is_some() || self.b.take_spent().is_some()) {
        }
        while let Some(p) = self.ab.pop_due(self.now) {
            self.b
                .handle_packet(self.now, &p.bth, &p.ext, &p.payload, &mut self.mem_b);
            busy = true;
        }
        while let Some(p) = self.ba.pop_due(self.now) {
            self.a
                .handle_packet(self.now, &p.bth, &p.ext, &p.payload, &mut self.mem_a);
            busy = true;
        }
        while let Some(c) = self.a.poll_completion() {
            self.comp_a.push(c);
            busy = true;
        }
        while let Some(c) = self.b.poll_completion() {
            self.comp_b.push(c);
            busy = true;
        }
        busy
    }

    /// Jumps the clock to the next delivery or timer and runs the timers; false when there is none.
    pub fn advance(&mut self) -> bool {
        let next = [
            self.ab.next_time(),
            self.ba.next_time(),
            self.a.poll_timeout(),
            self.b.poll_timeout(),
        ]
        .into_iter()
        .flatten()
        .min();
        let Some(t) = next else {
            return false;
        };
        self.now = self.now.max(t);
        self.a.handle_timeout(self.now);
        self.b.handle_timeout(self.now);
        true
    }

    /// Runs until nothing is left to do or `max` steps passed; true when idle.
    pub fn drive_bounded(&mut self, max: usize) -> bool {
        for _ in 0..max {
            if !self.step() && !self.advance() {
                return true;
            }
        }
        false
    }

    /// Runs until idle (panics after a million steps: a livelock).
    pub fn drive(&mut self) {
        assert!(self.drive_bounded(1_000_000), "pair did not go idle");
    }

    /// Runs until `done` holds (checked after every step), at most `max` steps; true when it held.
    pub fn drive_until(&mut self, max: usize, mut done: impl FnMut(&Pair) -> bool) -> bool {
        for _ in 0..max {
            if done(self) {
                return true;
            }
            if !self.step() && !self.advance() {
                return done(self);
            }
        }
        done(self)
    }
}

/// A send work request of `data`.
pub(super) fn send_wr(
    wr_id: u64,
    op: crate::hw::verbs::SendOp,
    data: Vec<u8>,
) -> crate::hw::verbs::SendWr {
    crate::hw::verbs::SendWr {
        wr_id,
        op,
        data,
        local: None,
        ud: None,
        signaled: true,
        solicited: false,
    }
}

/// `len` bytes of a fixed random pool starting at a position chosen by `tag`: cheap to make and to
/// compare, different for every tag.
pub(super) struct Pool(Vec<u8>);

impl Pool {
    pub fn new(max: usize) -> Pool {
        let mut rng = Rng::new(0x9001);
        let mut v = Vec::with_capacity(max + 4096 + 8);
        while v.len() < max + 4096 + 8 {
            v.extend_from_slice(&rng.next_u64().to_le_bytes());
        }
        Pool(v)
    }
    pub fn message(&self, tag: u64, len: usize) -> Vec<u8> {
        let off = (tag.wrapping_mul(2_654_435_761) % 4096) as usize;
        let mut m = self.0[off..off + len].to_vec();
        // The first bytes name the message, so a mix-up cannot go unnoticed.
        let t = (tag as u32).to_le_bytes();
        let n = len.min(4);
        m[..n].copy_from_slice(&t[..n]);
        m
    }
}
