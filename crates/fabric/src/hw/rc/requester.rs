//! The requester half (IBA 1 §9.7.4, §9.7.5.1): cuts work requests into path-MTU packets, keeps a
//! bounded window of unacknowledged PSNs, completes work requests when they are acknowledged, and
//! retransmits go-back-N from the oldest unacknowledged PSN (timeout), the NAKed PSN (sequence
//! error), or the RNR-NAKed PSN once the RNR timer ran out.
//!
//! Invariants: `sq` holds the work requests not yet completed, oldest first; those with a
//! `first_psn` have been sent at least in part and their PSN ranges are contiguous from `una`
//! (rounded down to its work request) to `next_psn`; the cursor (`cursor`, `cursor_pkt`) names the
//! next packet to send and never points before `una`.

use super::psn::{self, add, diff, prev};
use super::ConnectedQp;
use crate::hw::hca::RdmaMemory;
use crate::hw::verbs::{ConnectedAttr, QpType, SendOp, SendWr, WcStatus};
use ipoib_proto::time::Instant;
use ipoib_wire::ib::{
    AethRepr, BthRepr, ExtHeaders, ImmDtRepr, NakCode, Opcode, Operation, Position, RethRepr,
    Syndrome,
};
use ipoib_wire::PKey;
use std::collections::VecDeque;
use std::time::Duration;

/// A send work request in flight.
#[derive(Debug)]
pub(super) struct Wqe {
    pub(super) wr: SendWr,
    /// Message length (for RDMA READ: the bytes to read).
    len: usize,
    /// PSNs it uses: its packets, or for RDMA READ its response packets (IBA 1 §9.7.1.1).
    npsn: u32,
    /// PSN of its first packet, once sent.
    first_psn: Option<u32>,
    /// RDMA READ: response packets received in order, and their bytes.
    read_pkts: u32,
    read_data: Vec<u8>,
}

impl Wqe {
    fn is_read(&self) -> bool {
        matches!(self.wr.op, SendOp::RdmaRead { .. })
    }
    fn contains(&self, p: u32) -> bool {
        self.first_psn
            .map(|f| {
                let d = diff(p, f);
                d >= 0 && (d as u32) < self.npsn
            })
            .unwrap_or(false)
    }
}

/// Requester state.
#[derive(Debug)]
pub(super) struct Requester {
    pub(super) sq: VecDeque<Wqe>,
    /// Sequence number of `sq[0]` (work requests are numbered as posted).
    head_seq: u64,
    /// Work request and packet index of the next packet to send.
    cursor: u64,
    cursor_pkt: u32,
    /// Oldest unacknowledged PSN.
    una: u32,
    /// PSN of the next new packet.
    pub(super) next_psn: u32,
    retry_left: u8,
    rnr_left: u8,
    ack_timeout: Option<Duration>,
    /// Local ACK timer (IBA 1 §9.7.6.1.3).
    ack_deadline: Option<Instant>,
    /// RNR wait: sending resumes at this instant, from the RNR-NAKed PSN (IBA 1 §9.7.5.2.8).
    rnr_deadline: Option<(Instant, u32)>,
    /// The PSN last rewound to by a sequence NAK or implied NAK, to ignore duplicate NAKs.
    last_rewind: Option<u32>,
    retry_count: u8,
    rnr_retry: u8,
}

impl Requester {
    pub(super) fn new(attr: &ConnectedAttr) -> Requester {
        let sq_psn = attr.sq_psn & psn::PSN_MASK;
        Requester {
            sq: VecDeque::new(),
            head_seq: 0,
            cursor: 0,
            cursor_pkt: 0,
            una: sq_psn,
            next_psn: sq_psn,
            retry_left: attr.retry_count.min(7),
            rnr_left: attr.rnr_retry.min(7),
            ack_timeout: attr.ack_timeout(),
            ack_deadline: None,
            rnr_deadline: None,
            last_rewind: None,
            retry_count: attr.retry_count.min(7),
            rnr_retry: attr.rnr_retry.min(7),
        }
    }

    pub(super) fn push(&mut self, wr: SendWr, len: usize, mtu: usize) {
        let npsn = psn::packets(len, mtu);
        self.sq.push_back(Wqe {
            wr,
            len,
            npsn,
            first_psn: None,
            read_pkts: 0,
            read_data: Vec::new(),
        });
    }

    /// True when the cursor names a work request (one to send, or to send again): only then
    /// may `next_request` send (or fail a local read) rather than return false at once.
    pub(super) fn has_unsent(&self) -> bool {
        self.cursor
            .checked_sub(self.head_seq)
            .and_then(|i| self.sq.get(i as usize))
            .is_some()
    }

    pub(super) fn clear(&mut self) {
        self.head_seq += self.sq.len() as u64;
        self.sq.clear();
        self.cursor = self.head_seq;
        self.cursor_pkt = 0;
        self.ack_deadline = None;
        self.rnr_deadline = None;
    }

    pub(super) fn poll_timeout(&self) -> Option<Instant> {
        match self.rnr_deadline {
            Some((t, _)) => Some(t),
            None => self.ack_deadline,
        }
    }

    pub(super) fn in_flight(&self) -> u32 {
        diff(self.next_psn, self.una).max(0) as u32
    }

    /// Points the cursor at the packet with PSN `p` (or at the first unsent request).
    fn seek(&mut self, p: u32) {
        let p = if diff(p, self.una) < 0 { self.una } else { p };
        for (i, w) in self.sq.iter().enumerate() {
            match w.first_psn {
                None => {
                    self.cursor = self.head_seq + i as u64;
                    self.cursor_pkt = 0;
                    return;
                }
                Some(f) if w.contains(p) => {
                    self.cursor = self.head_seq + i as u64;
                    self.cursor_pkt = diff(p, f) as u32;
                    return;
                }
                Some(_) => {}
            }
        }
        self.cursor = self.head_seq + self.sq.len() as u64;
        self.cursor_pkt = 0;
    }

    /// PSN of the packet at the cursor.
    fn cursor_psn(&self) -> u32 {
        let idx = (self.cursor - self.head_seq) as usize;
        match self.sq.get(idx).and_then(|w| w.first_psn) {
            Some(f) => add(f, self.cursor_pkt),
            None => self.next_psn,
        }
    }

    fn progress(&mut self, now: Instant) {
        self.retry_left = self.retry_count;
        self.rnr_left = self.rnr_retry;
        self.last_rewind = None;
        self.ack_deadline = match (self.in_flight(), self.ack_timeout) {
            (0, _) | (_, None) => None,
            (_, Some(t)) => Some(now + t),
        };
        if diff(self.cursor_psn(), self.una) < 0 {
            let una = self.una;
            self.seek(una);
        }
    }
}

/// Outcome of acknowledging up to a PSN.
enum AckOutcome {
    Done,
    /// An RDMA READ before the acknowledged PSN has not got all its responses: re-request from here.
    ImpliedNak(u32),
}

impl ConnectedQp {
    /// The next request packet, if the window, the RNR wait and the read limit allow one. A SEND
    /// or RDMA WRITE whose bytes lie in a registered region ([`SendWr::local`]) reads them from
    /// `mem` now; the whole source is checked at every packet, as READ responses check their
    /// destination, and one that is not (or no longer) a registered range completes the request
    /// with a local protection error and moves the QP to the error state (IBA 1 §10.6.3.1,
    /// §10.3.1): no packet leaves. `frame` gets the packet, its payload borrowed from the work
    /// request or `mem` (no copy here); returns whether a packet was framed.
    pub(super) fn next_request(
        &mut self,
        now: Instant,
        mem: &dyn RdmaMemory,
        frame: &mut dyn FnMut(&BthRepr, &ExtHeaders, &[u8]),
    ) -> bool {
        if self.state != crate::hw::verbs::QpState::Rts || self.req.rnr_deadline.is_some() {
            return false;
        }
        let mtu = self.mtu;
        let transport = self.transport();
        let rc = self.qp_type == QpType::Rc;
        let dest = self.qpn_dest();
        let window = self.config.max_outstanding;
        let max_rd = u32::from(self.attr.max_rd_atomic.max(1));
        let r = &mut self.req;
        let idx = (r.cursor - r.head_seq) as usize;
        let Some(w) = r.sq.get(idx) else {
            return false;
        };
        let first = w.first_psn.unwrap_or(r.next_psn);
        let k = r.cursor_pkt;
        let p = add(first, k);
        let retransmit = diff(p, r.next_psn) < 0;
        if rc && !retransmit {
            let inflight = diff(r.next_psn, r.una).max(0) as u32;
            let need = if w.is_read() { w.npsn } else { 1 };
            let reads_before = if w.is_read() {
                r.sq.iter().take(idx).filter(|w| w.is_read()).count() as u32
            } else {
                0
            };
            if inflight > 0 && (inflight + need > window || reads_before >= max_rd) {
                return false;
            }
            // IBA 1 §9.7.1.1: never 2^23 PSNs outstanding. A read that large waits until nothing
            // else is in flight, and one of exactly 2^23 packets cannot be sent at all.
            if inflight + need >= psn::PSN_HALF && (inflight > 0 || need >= psn::PSN_HALF) {
                return false;
            }
        }
        let w = &mut r.sq[idx];
        w.first_psn = Some(first);
        let mut bth = BthRepr::new(Opcode(0), PKey(0), dest, p);
        let mut ext = ExtHeaders::default();
        // The payload: a range of the request's bytes, in `mem` (a registered region) or in the
        // work request itself.
        let mut payload = 0..0;
        let mut from_mem: Option<&[u8]> = None;
        let last_of_wqe;
        if let SendOp::RdmaRead {
            remote_addr,
            rkey,
            len,
            ..
        } = w.wr.op
        {
            // IBA 1 §9.7.5.1.6: a re-issued READ asks only for the responses still missing.
            let off = u64::from(k) * mtu as u64;
            bth.opcode = Opcode::new(transport, Operation::RdmaReadRequest);
            ext.reth = Some(RethRepr {
                va: remote_addr.wrapping_add(off),
                rkey,
                dma_len: (u64::from(len).saturating_sub(off)) as u32,
            });
            if !retransmit || diff(add(first, w.npsn), r.next_psn) > 0 {
                r.next_psn = add(first, w.npsn);
            }
            last_of_wqe = true;
        } else {
            let n = w.npsn;
            let pos = match (k == 0, k + 1 == n) {
                (true, true) => Position::Only,
                (true, false) => Position::First,
                (false, true) => Position::Last,
                (false, false) => Position::Middle,
            };
            let start = k as usize * mtu;
            let end = (start + mtu).min(w.len);
            if let Some(sge) = w.wr.local {
                let Some(bytes) = mem.local_read(sge.buf.lkey, sge.buf.addr, sge.len.into()) else {
                    self.enter_error(Some(WcStatus::LocProtErr));
                    return false;
                };
                from_mem = Some(bytes);
            }
            payload = start..end;
            let (op, imm) = request_operation(&w.wr.op, pos);
            bth.opcode = Opcode::new(transport, op);
            if let Some(data) = imm {
                ext.immdt = Some(ImmDtRepr { data });
            }
            if matches!(pos, Position::First | Position::Only) {
                if let SendOp::RdmaWrite { remote_addr, rkey }
                | SendOp::RdmaWriteWithImm {
                    remote_addr, rkey, ..
                } = w.wr.op
                {
                    ext.reth = Some(RethRepr {
                        va: remote_addr,
                        rkey,
                        dma_len: w.len as u32,
                    });
                }
            }
            last_of_wqe = matches!(pos, Position::Last | Position::Only);
            bth.se = last_of_wqe && w.wr.solicited;
            if !retransmit {
                r.next_psn = add(p, 1);
            }
            // IBA 1 §9.7.4.1.5: ask for an ACK at the end of each message and often enough
            // within a long one that the window keeps moving.
            let quarter = (window / 4).max(1);
            bth.ack_req = rc && (last_of_wqe || k % quarter == quarter - 1);
        }
        if last_of_wqe {
            r.cursor += 1;
            r.cursor_pkt = 0;
        } else {
            r.cursor_pkt += 1;
        }
        if retransmit {
            self.counters.retransmissions += 1;
        }
        if rc {
            if self.req.ack_deadline.is_none() {
                self.req.ack_deadline = self.req.ack_timeout.map(|t| now + t);
            }
            if self.req.in_flight() >= window {
                bth.ack_req = true;
            }
        }
        let source = match from_mem {
            Some(bytes) => bytes,
            None => self.req.sq.get(idx).map_or(&[][..], |w| &w.wr.data[..]),
        };
        frame(&bth, &ext, source.get(payload).unwrap_or_default());
        if !rc && last_of_wqe {
            // UC: a send is complete once its last packet left (IBA 1 §9.8.3).
            self.complete_head(WcStatus::Success);
            self.req.una = self.req.next_psn;
        }
        true
    }

    /// A response packet (ACK, NAK, RDMA READ response) arrived (IBA 1 §9.7.5.1).
    pub(super) fn handle_response(
        &mut self,
        now: Instant,
        bth: &BthRepr,
        ext: &ExtHeaders,
        payload: &[u8],
        mem: &mut dyn RdmaMemory,
    ) {
        if self.state != crate::hw::verbs::QpState::Rts
            && self.state != crate::hw::verbs::QpState::Sqd
        {
            self.counters.drop_state += 1;
            return;
        }
        let p = bth.psn;
        let op = bth.opcode.operation();
        let is_read_resp = !matches!(op, Operation::Acknowledge | Operation::AtomicAcknowledge);
        let aeth = ext.aeth;
        let needs_aeth = !matches!(op, Operation::RdmaReadResponseMiddle);
        if needs_aeth && aeth.is_none() {
            self.counters.drop_malformed += 1;
            return;
        }
        // A response must name a PSN in [una - 1, next_psn - 1]; anything else is stale.
        let (d_una, d_next) = (diff(p, self.req.una), diff(p, self.req.next_psn));
        if d_una < -1 || d_next >= 0 {
            self.counters.stale_responses += 1;
            return;
        }
        if is_read_resp {
            self.handle_read_response(now, p, bth.opcode, payload, mem);
            return;
        }
        let Some(AethRepr { syndrome, .. }) = aeth else {
            return;
        };
        match syndrome {
            Syndrome::Ack { .. } => {
                let before = self.req.una;
                self.ack_through(now, p);
                if self.req.una == before {
                    self.counters.stale_responses += 1;
                }
            }
            Syndrome::Nak(NakCode::PsnSequenceError) => {
                // IBA 1 §9.7.5.1.3: the NAK names the PSN the responder expects; everything before
                // it is acknowledged, and the requester resends from it.
                let before = self.req.una;
                if !self.ack_through(now, prev(p)) || self.state != crate::hw::verbs::QpState::Rts {
                    return;
                }
                if self.req.last_rewind == Some(p) || diff(p, self.req.una) != 0 {
                    self.counters.stale_responses += 1;
                    return;
                }
                self.counters.seq_naks_received += 1;
                if self.req.una == before {
                    // No progress: the retry counter pays for this retry (IBA 1 §9.7.5.1.3).
                    if self.req.retry_left == 0 {
                        self.enter_error(Some(WcStatus::RetryExcErr));
                        return;
                    }
                    self.req.retry_left -= 1;
                }
                self.req.last_rewind = Some(p);
                self.req.seek(p);
            }
            Syndrome::RnrNak { timer } => {
                if !self.ack_through(now, prev(p)) || self.state != crate::hw::verbs::QpState::Rts {
                    return;
                }
                if diff(p, self.req.una) != 0 || self.req.rnr_deadline.map(|(_, q)| q) == Some(p) {
                    self.counters.stale_responses += 1;
                    return;
                }
                self.counters.rnr_naks_received += 1;
                // IBA 1 §9.7.5.2.8: rnr_retry 7 retries forever.
                if self.req.rnr_retry != 7 {
                    if self.req.rnr_left == 0 {
                        self.enter_error(Some(WcStatus::RnrRetryExcErr));
                        return;
                    }
                    self.req.rnr_left -= 1;
                }
                let wait = Syndrome::RnrNak { timer }
                    .rnr_timer_us()
                    .map(|us| Duration::from_micros(u64::from(us)))
                    .unwrap_or_default();
                self.req.rnr_deadline = Some((now + wait, p));
                self.req.ack_deadline = None;
                self.req.seek(p);
            }
            Syndrome::Nak(code) => {
                if !self.ack_through(now, prev(p)) || self.state != crate::hw::verbs::QpState::Rts {
                    return;
                }
                self.counters.fatal_naks_received += 1;
                // IBA 1 §9.7.5.1.4 and Table 44: the failing request completes in error, the QP
                // goes to the error state.
                let status = match code {
                    NakCode::InvalidRequest => WcStatus::RemInvReqErr,
                    NakCode::RemoteAccessError => WcStatus::RemAccessErr,
                    NakCode::RemoteOperationalError => WcStatus::RemOpErr,
                    _ => WcStatus::BadRespErr,
                };
                self.enter_error(Some(status));
            }
            Syndrome::Reserved(_) => self.counters.drop_malformed += 1,
        }
    }

    /// An RDMA READ response packet with PSN `p` (IBA 1 §9.7.5.1.6). Its data lands in the WR's
    /// local region at its place in the message. The whole destination is checked at every packet:
    /// one that is not (or no longer) a registered range with local write access completes the
    /// READ with a local protection error and moves the QP to the error state (IBA 1 §10.6.3.1,
    /// §10.3.1), and the packet's bytes go nowhere.
    fn handle_read_response(
        &mut self,
        now: Instant,
        p: u32,
        opcode: Opcode,
        payload: &[u8],
        mem: &mut dyn RdmaMemory,
    ) {
        let mtu = self.mtu;
        let Some(i) = self.req.sq.iter().position(|w| w.contains(p)) else {
            self.counters.stale_responses += 1;
            return;
        };
        let w = &self.req.sq[i];
        if !w.is_read() {
            self.counters.drop_malformed += 1;
            return;
        }
        let (Some(first), k, n, len) = (w.first_psn, w.read_pkts, w.npsn, w.len) else {
            return;
        };
        let expected = add(first, k);
        let d = diff(p, expected);
        if d < 0 {
            self.counters.stale_responses += 1;
            return;
        }
        if d > 0 {
            // A response went missing: re-request from the first missing one.
            self.implied_nak(expected);
            return;
        }
        // A re-issued READ starts a new response sequence at the first missing packet, so FIRST
        // or ONLY may appear at any point; LAST or ONLY must end the data (IBA 1 §9.7.5.1.6).
        let end = k + 1 == n;
        let pos_ok = match opcode.position() {
            Some(Position::First) => !end,
            Some(Position::Middle) => k > 0 && !end,
            Some(Position::Last) => k > 0 && end,
            Some(Position::Only) => end,
            None => false,
        };
        let want_len = if end { len - k as usize * mtu } else { mtu };
        if !pos_ok || payload.len() != want_len {
            self.counters.drop_malformed += 1;
            return;
        }
        // The response acknowledges every earlier request (IBA 1 §9.7.5.1.2).
        if !self.ack_through(now, prev(first)) {
            return;
        }
        let Some(w) = self
            .req
            .sq
            .front_mut()
            .filter(|w| w.first_psn == Some(first))
        else {
            return;
        };
        if let SendOp::RdmaRead {
            local: Some(dst), ..
        } = w.wr.op
        {
            let at = k as usize * mtu;
            let landed = mem
                .local_write(dst.lkey, dst.addr, len as u64)
                .and_then(|buf| buf.get_mut(at..at + payload.len()))
                .map(|buf| buf.copy_from_slice(payload));
            if landed.is_none() {
                self.enter_error(Some(WcStatus::LocProtErr));
                return;
            }
        } else {
            w.read_data.extend_from_slice(payload);
        }
        let Some(w) = self.req.sq.front_mut() else {
            return;
        };
        w.read_pkts += 1;
        self.req.una = add(p, 1);
        if w.read_pkts == w.npsn {
            let data = std::mem::take(&mut w.read_data);
            self.complete_head_with(WcStatus::Success, data);
        }
        self.req.progress(now);
    }

    fn implied_nak(&mut self, p: u32) {
        if self.req.last_rewind == Some(p) {
            return;
        }
        self.counters.implied_naks += 1;
        self.req.last_rewind = Some(p);
        self.req.seek(p);
    }

    /// Completes every request wholly at or before PSN `p`. Returns false when the QP is no longer
    /// usable or an implied NAK rewound the requester.
    fn ack_through(&mut self, now: Instant, p: u32) -> bool {
        if diff(p, prev(self.req.una)) <= 0 {
            return true;
        }
        let before = self.req.una;
        let outcome = loop {
            let Some(w) = self.req.sq.front() else {
                break AckOutcome::Done;
            };
            let Some(first) = w.first_psn else {
                break AckOutcome::Done;
            };
            let last = add(first, w.npsn - 1);
            if diff(last, p) <= 0 {
                if w.is_read() && w.read_pkts < w.npsn {
                    break AckOutcome::ImpliedNak(add(first, w.read_pkts));
                }
                self.complete_head(WcStatus::Success);
                self.req.una = add(last, 1);
            } else {
                if !w.is_read() && diff(p, first) >= 0 {
                    self.req.una = add(p, 1);
                }
                break AckOutcome::Done;
            }
        };
        match outcome {
            AckOutcome::Done => {
                if self.req.una != before {
                    self.req.progress(now);
                }
                true
            }
            AckOutcome::ImpliedNak(q) => {
                let moved = diff(q, self.req.una) > 0;
                self.req.una = q;
                if moved {
                    self.req.progress(now);
                }
                self.implied_nak(q);
                false
            }
        }
    }

    fn complete_head(&mut self, status: WcStatus) {
        self.complete_head_with(status, Vec::new());
    }

    fn complete_head_with(&mut self, status: WcStatus, data: Vec<u8>) {
        let Some(mut w) = self.req.sq.pop_front() else {
            return;
        };
        self.req.head_seq += 1;
        if self.req.cursor < self.req.head_seq {
            self.req.cursor = self.req.head_seq;
            self.req.cursor_pkt = 0;
        }
        if status != WcStatus::Success || self.config.sq_sig_all || w.wr.signaled {
            let c = self.send_completion(&w.wr, status, data);
            self.completions.push_back(c);
        }
        if w.wr.data.capacity() > 0 && self.spent.len() < super::SPENT_KEPT {
            self.spent.push(std::mem::take(&mut w.wr.data));
        }
    }

    /// The local ACK timer or the RNR timer ran out.
    pub(super) fn requester_timeout(&mut self, now: Instant) {
        if let Some((t, p)) = self.req.rnr_deadline {
            if now >= t {
                self.req.rnr_deadline = None;
                self.req.seek(p);
            }
            return;
        }
        let Some(t) = self.req.ack_deadline else {
            return;
        };
        if now < t {
            return;
        }
        self.req.ack_deadline = None;
        if self.req.in_flight() == 0 {
            return;
        }
        // IBA 1 §9.7.6.1.3: each expiry without progress uses one retry; when none is left the
        // request completes with a transport retry counter exceeded error.
        if self.req.retry_left == 0 {
            self.enter_error(Some(WcStatus::RetryExcErr));
            return;
        }
        self.req.retry_left -= 1;
        self.counters.timeouts += 1;
        self.req.last_rewind = None;
        let una = self.req.una;
        self.req.seek(una);
    }
}

/// The operation of packet `pos` of a SEND or RDMA WRITE, and its immediate data (IBA 1 §9.2).
fn request_operation(op: &SendOp, pos: Position) -> (Operation, Option<u32>) {
    use Operation::*;
    match (*op, pos) {
        (SendOp::Send, Position::First) | (SendOp::SendWithImm(_), Position::First) => {
            (SendFirst, None)
        }
        (SendOp::Send, Position::Middle) | (SendOp::SendWithImm(_), Position::Middle) => {
            (SendMiddle, None)
        }
        (SendOp::Send, Position::Last) => (SendLast, None),
        (SendOp::Send, Position::Only) => (SendOnly, None),
        (SendOp::SendWithImm(i), Position::Last) => (SendLastWithImmediate, Some(i)),
        (SendOp::SendWithImm(i), Position::Only) => (SendOnlyWithImmediate, Some(i)),
        (SendOp::RdmaWriteWithImm { imm, .. }, Position::Last) => {
            (RdmaWriteLastWithImmediate, Some(imm))
        }
        (SendOp::RdmaWriteWithImm { imm, .. }, Position::Only) => {
            (RdmaWriteOnlyWithImmediate, Some(imm))
        }
        (_, Position::First) => (RdmaWriteFirst, None),
        (_, Position::Middle) => (RdmaWriteMiddle, None),
        (_, Position::Last) => (RdmaWriteLast, None),
        (_, Position::Only) => (RdmaWriteOnly, None),
    }
}
