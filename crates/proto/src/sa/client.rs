//! The SA client of a host (the role of Linux `sa_query.c` over `mad.c`/`mad_rmpp.c`): sends
//! requests, matches responses by TransactionID, retries on timeout with backoff, reassembles
//! multi-MAD GetTableResp transfers (acknowledging each segment), and answers SA Reports with
//! ReportResp.
//!
//! TransactionIDs: the upper 32 bits are drawn once from the seeded generator (Linux puts the MAD
//! agent's `hi_tid` there), bit 63 clear ([`crate::mad_agent::UMAD_TID_BIT`]: a host's external
//! MAD users have it set), the lower 32 bits count from a random start, so TIDs are unique for
//! 2^32 requests and fixed by the seed. A retry resends the same TID (Linux `ib_mad` retries do).
//!
//! Timeouts: Linux callers choose them (IPoIB path queries 1000 ms, multicast joins 3000 ms, 3
//! retries); the default here is 1 s, doubling per retry up to 8 s, 3 retries. The server's
//! ClassPortInfo RespTimeValue (4.096 µs × 2^18 ≈ 1.07 s with OpenSM's defaults) is of the same
//! order.
//!
//! Invariants: each [`RequestId`] produces exactly one `Response` event (success, status error,
//! timeout or RMPP failure) unless cancelled; a response whose TID matches no pending request is
//! dropped and counted.

use super::rmpp::{ack_for, end_for, window_last, RecvAction, RmppReceiver};
use crate::mad_agent::{MadAddr, MadAgent, MadIn, MadOut};
use crate::rng::Rng;
use crate::time::Instant;
use ipoib_wire::mad::{
    MadHeaderRepr, MadStatus, Method, MgmtClass, NoticeRepr, RmppRepr, RmppStatus, RmppType,
    MAD_LEN,
};
use ipoib_wire::sa::{SaAttribute, SaHeaderRepr, SaMadRepr, SaRecords};
use ipoib_wire::QKey;
use std::collections::{BTreeMap, VecDeque};
use std::time::Duration;

/// Timeouts and retries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SaClientConfig {
    /// Time to wait for the first answer.
    pub timeout: Duration,
    /// Resends after the first send.
    pub retries: u8,
    /// Factor applied to the timeout after each resend.
    pub backoff: u32,
    /// Largest timeout.
    pub max_timeout: Duration,
}

impl Default for SaClientConfig {
    fn default() -> Self {
        SaClientConfig {
            timeout: Duration::from_millis(1000),
            retries: 3,
            backoff: 2,
            max_timeout: Duration::from_secs(8),
        }
    }
}

/// Names a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct RequestId(pub u64);

/// Why a request failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum SaClientError {
    /// No answer after every retry.
    #[error("SA request timed out")]
    Timeout,
    /// The SA answered with a non-zero status (the response MAD's header is in `header`).
    #[error("SA status {:#06x} ({})", .0 .0, .0.name(MgmtClass::SubnAdm))]
    Status(MadStatus),
    /// A multi-MAD transfer was stopped, aborted or malformed.
    #[error("RMPP transfer failed")]
    Rmpp,
    /// The request given was not a 256-byte SA MAD.
    #[error("not an SA MAD")]
    Malformed,
}

/// A successful answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SaResponse {
    /// Common header of the (first) response MAD.
    pub header: MadHeaderRepr,
    /// SA header of the (first) response MAD.
    pub sa: SaHeaderRepr,
    /// The attribute of a single-MAD response (GetResp, DeleteResp).
    pub attribute: Option<SaAttribute>,
    /// The records of a GetTableResp, however many MADs carried them.
    pub records: Vec<SaAttribute>,
    /// Who answered.
    pub from: MadAddr,
}

/// What the client reports.
// Responses dominate; boxing them would cost an allocation per request for nothing.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SaClientEvent {
    /// The outcome of a request.
    Response {
        /// Which request.
        id: RequestId,
        /// Its outcome.
        result: Result<SaResponse, SaClientError>,
    },
    /// The SA sent a Report (a trap it forwards, e.g. 66/67); a ReportResp was already sent.
    Report {
        /// The notice.
        notice: NoticeRepr,
        /// From where.
        from: MadAddr,
    },
}

/// A request waiting for its answer. The MAD and the RMPP state are boxed so that the table of
/// pending requests stays small (a B-tree node has room for eleven entries however few are used,
/// and most clients have one or two requests out).
#[derive(Debug)]
struct Pending {
    id: RequestId,
    to: MadAddr,
    mad: Box<[u8; MAD_LEN]>,
    deadline: Instant,
    timeout: Duration,
    retries_left: u8,
    rmpp: Option<Box<RmppReceiver>>,
}

/// The SA client agent.
#[derive(Debug)]
pub struct SaClient {
    cfg: SaClientConfig,
    tid_hi: u64,
    tid_lo: u32,
    next_id: u64,
    pending: BTreeMap<u64, Pending>,
    /// Recently completed multi-MAD transfers (TID, last segment), to re-acknowledge a resent
    /// last segment whose ACK was lost.
    done: VecDeque<(u64, u32)>,
    out: VecDeque<MadOut>,
    events: VecDeque<SaClientEvent>,
    /// MADs dropped, by reason.
    pub dropped: BTreeMap<&'static str, u64>,
}

impl SaClient {
    /// A client drawing its TIDs from `rng`.
    pub fn new(cfg: SaClientConfig, mut rng: Rng) -> SaClient {
        SaClient {
            cfg,
            tid_hi: crate::mad_agent::agent_tid_high(&mut rng),
            tid_lo: rng.next_u32(),
            next_id: 1,
            pending: BTreeMap::new(),
            done: VecDeque::new(),
            out: VecDeque::new(),
            events: VecDeque::new(),
            dropped: BTreeMap::new(),
        }
    }

    fn drop_mad(&mut self, reason: &'static str) {
        *self.dropped.entry(reason).or_insert(0) += 1;
    }

    /// Sends `mad` (its TransactionID replaced) to `dest`.
    pub fn request(&mut self, now: Instant, mad: SaMadRepr, dest: MadAddr) -> RequestId {
        let (timeout, retries) = (self.cfg.timeout, self.cfg.retries);
        self.request_with(now, mad, dest, timeout, retries)
    }

    /// As [`SaClient::request`], sent once: no resend, a `Timeout` after `timeout`. Linux's
    /// callers give the whole time a query may take (`sa_query.c` `send_mad` posts the MAD once
    /// with the caller's `timeout_ms`; IPoIB's PathRecord query 1000 ms, `ipoib_main.c`
    /// `path_rec_start`), and ask again, maybe of another SA, when they need to.
    pub fn request_once(
        &mut self,
        now: Instant,
        mad: SaMadRepr,
        dest: MadAddr,
        timeout: Duration,
    ) -> RequestId {
        self.request_with(now, mad, dest, timeout, 0)
    }

    fn request_with(
        &mut self,
        now: Instant,
        mut mad: SaMadRepr,
        dest: MadAddr,
        timeout: Duration,
        retries: u8,
    ) -> RequestId {
        let tid = self.tid_hi | u64::from(self.tid_lo);
        self.tid_lo = self.tid_lo.wrapping_add(1);
        mad.header.transaction_id = tid;
        let bytes = mad.to_bytes();
        let id = RequestId(self.next_id);
        self.next_id += 1;
        let to = MadAddr {
            qkey: QKey::GSI,
            ..dest
        };
        self.pending.insert(
            tid,
            Pending {
                id,
                to,
                mad: Box::new(bytes),
                deadline: now + timeout,
                timeout,
                retries_left: retries,
                rmpp: None,
            },
        );
        self.out.push_back(MadOut {
            to,
            mad: bytes.to_vec(),
        });
        id
    }

    /// Sends a request given as bytes (a whole SA MAD).
    pub fn request_bytes(
        &mut self,
        now: Instant,
        mad: &[u8],
        dest: MadAddr,
    ) -> Result<RequestId, SaClientError> {
        let m = SaMadRepr::parse(mad).map_err(|_| SaClientError::Malformed)?;
        Ok(self.request(now, m, dest))
    }

    /// Forgets a request; no event will come for it.
    pub fn cancel(&mut self, id: RequestId) {
        self.pending.retain(|_, p| p.id != id);
    }

    /// The TransactionID a pending request was sent with.
    pub fn transaction_id(&self, id: RequestId) -> Option<u64> {
        self.pending
            .iter()
            .find(|(_, p)| p.id == id)
            .map(|(t, _)| *t)
    }

    /// Requests still waiting.
    pub fn pending(&self) -> usize {
        self.pending.len()
    }

    /// The next event.
    pub fn poll_event(&mut self) -> Option<SaClientEvent> {
        self.events.pop_front()
    }

    /// True when the outcome of `id` waits among the events.
    pub fn has_response(&self, id: RequestId) -> bool {
        self.response_position(id).is_some()
    }

    /// Takes the outcome of `id` out of the events, leaving the others queued in their order.
    pub fn take_response(&mut self, id: RequestId) -> Option<Result<SaResponse, SaClientError>> {
        let pos = self.response_position(id)?;
        match self.events.remove(pos)? {
            SaClientEvent::Response { result, .. } => Some(result),
            SaClientEvent::Report { .. } => None,
        }
    }

    fn response_position(&self, id: RequestId) -> Option<usize> {
        self.events
            .iter()
            .position(|e| matches!(e, SaClientEvent::Response { id: r, .. } if *r == id))
    }

    /// Queues an event. The first makes room for one only (an event is a few hundred bytes, and
    /// most clients hold one at a time: an interface takes each as it comes); the queue then grows
    /// as usual.
    fn push_event(&mut self, e: SaClientEvent) {
        if self.events.capacity() == 0 {
            self.events.reserve_exact(1);
        }
        self.events.push_back(e);
    }

    fn finish(&mut self, tid: u64, result: Result<SaResponse, SaClientError>) {
        if let Some(p) = self.pending.remove(&tid) {
            if self.pending.is_empty() {
                // An emptied B-tree keeps its leaf, room for eleven requests (1.1 KiB): most
                // clients then wait long for their next, so it goes (docs/benchmarks/
                // subnet-rounds.md, "What a host holds").
                self.pending = BTreeMap::new();
            }
            self.push_event(SaClientEvent::Response { id: p.id, result });
        }
    }

    fn reply_to(from: &MadAddr) -> MadAddr {
        MadAddr {
            qkey: QKey::GSI,
            ..*from
        }
    }

    fn on_report(&mut self, from: MadAddr, raw: &[u8]) {
        let Ok(m) = SaMadRepr::parse(raw) else {
            return self.drop_mad("bad Report");
        };
        let SaAttribute::Notice(n) = m.attribute else {
            return self.drop_mad("Report without Notice");
        };
        // IBA 1 §13.4.11: a Report is acknowledged with ReportResp carrying the same TID.
        let resp = m.response(MadStatus::SUCCESS, m.attribute);
        self.out.push_back(MadOut {
            to: Self::reply_to(&from),
            mad: resp.to_bytes().to_vec(),
        });
        self.push_event(SaClientEvent::Report { notice: n, from });
    }

    /// Sends the sender of `raw` the STOP or ABORT that ends its transfer for `status`.
    fn end_transfer(&mut self, from: &MadAddr, raw: &[u8], status: RmppStatus) {
        if let Some(mad) = end_for(raw, status) {
            self.out.push_back(MadOut {
                to: Self::reply_to(from),
                mad: mad.to_vec(),
            });
        }
    }

    fn on_rmpp(&mut self, now: Instant, from: MadAddr, raw: &[u8], h: MadHeaderRepr, r: RmppRepr) {
        let tid = h.transaction_id;
        if !self.pending.contains_key(&tid) {
            if let Some((_, last)) = self.done.iter().find(|(t, _)| *t == tid) {
                if let Some(a) = ack_for(raw, *last, window_last(*last)) {
                    self.out.push_back(MadOut {
                        to: Self::reply_to(&from),
                        mad: a.to_vec(),
                    });
                }
                return;
            }
            return self.drop_mad("RMPP segment for no request");
        }
        // IBA 1 §13.6.3.3, as Linux's MAD layer (`drivers/infiniband/core/mad_rmpp.c`
        // `ib_process_rmpp_recv_wc`): another RMPPVersion is aborted (UnsupportedVersion), an
        // unknown RMPPType too (BadRMPPType); a STOP or ABORT of the sender ends the transfer,
        // answered by an ABORT (IllegalStatus) when its status is not one a STOP (Resources
        // Exhausted) or an ABORT (118-127) carries (`process_rmpp_stop`, `process_rmpp_abort`);
        // an ACK is for a sender, and a client sends no transfer: dropped, as Linux drops an ACK
        // that matches no send.
        let end = match r.rmpp_type {
            _ if r.version != RmppRepr::VERSION => Some(RmppStatus::UnsupportedVersion),
            RmppType::Data => None,
            RmppType::Ack => return self.drop_mad("RMPP ACK to a receiver"),
            RmppType::Stop if r.status != RmppStatus::ResourcesExhausted => {
                Some(RmppStatus::IllegalStatus)
            }
            RmppType::Abort if !(118..=127).contains(&u8::from(r.status)) => {
                Some(RmppStatus::IllegalStatus)
            }
            RmppType::Stop | RmppType::Abort => {
                return self.finish(tid, Err(SaClientError::Rmpp));
            }
            _ => Some(RmppStatus::BadRmppType),
        };
        if let Some(status) = end {
            self.end_transfer(&from, raw, status);
            return self.finish(tid, Err(SaClientError::Rmpp));
        }
        if !h.status.is_success() {
            return self.finish(tid, Err(SaClientError::Status(h.status)));
        }
        let timeout = self.cfg.timeout;
        let Some(p) = self.pending.get_mut(&tid) else {
            return;
        };
        let rx = p.rmpp.get_or_insert_with(Box::default);
        let action = rx.on_data(raw);
        p.deadline = now + timeout;
        match action {
            RecvAction::Ack(a) | RecvAction::Reack(a) => self.out.push_back(MadOut {
                to: Self::reply_to(&from),
                mad: a.to_vec(),
            }),
            RecvAction::Ignore => return self.drop_mad("RMPP segment before the first"),
            RecvAction::Abort(status) => {
                self.end_transfer(&from, raw, status);
                return self.finish(tid, Err(SaClientError::Rmpp));
            }
        }
        let Some(rx) = self.pending.get(&tid).and_then(|p| p.rmpp.as_ref()) else {
            return;
        };
        if !rx.complete {
            return;
        }
        let sa = rx.sa.unwrap_or_default();
        let mut records = Vec::new();
        for r in SaRecords::new(h.attribute_id, sa.attribute_offset, &rx.data) {
            match r {
                Ok(a) => records.push(a),
                Err(_) => return self.finish(tid, Err(SaClientError::Rmpp)),
            }
        }
        self.done.push_back((tid, rx.last));
        if self.done.len() > 32 {
            self.done.pop_front();
        }
        let resp = SaResponse {
            header: h,
            sa,
            attribute: None,
            records,
            from,
        };
        self.finish(tid, Ok(resp));
    }
}

impl MadAgent for SaClient {
    fn handle_mad(&mut self, now: Instant, m: MadIn) {
        let raw = m.mad.as_slice();
        let Ok(h) = MadHeaderRepr::parse_bytes(raw) else {
            return self.drop_mad("short MAD");
        };
        if raw.len() < MAD_LEN || h.mgmt_class != MgmtClass::SubnAdm {
            return self.drop_mad("not an SA MAD");
        }
        if h.method == Method::Report {
            return self.on_report(m.from, raw);
        }
        if !h.method.is_response() {
            return self.drop_mad("request to a client");
        }
        let rmpp = ipoib_wire::mad::Rmpp::new_unchecked(&raw[24..36]);
        let r = ipoib_wire::mad::RmppRepr::parse(&rmpp).ok();
        if let Some(r) = r.filter(|r| r.is_active()) {
            return self.on_rmpp(now, m.from, raw, h, r);
        }
        if !self.pending.contains_key(&h.transaction_id) {
            return self.drop_mad("response for no request");
        }
        if !h.status.is_success() {
            return self.finish(h.transaction_id, Err(SaClientError::Status(h.status)));
        }
        let Ok(mad) = SaMadRepr::parse(raw) else {
            return self.finish(h.transaction_id, Err(SaClientError::Malformed));
        };
        let (attribute, records) = if mad.is_table() {
            (None, mad.records().filter_map(Result::ok).collect())
        } else {
            (Some(mad.attribute), Vec::new())
        };
        let resp = SaResponse {
            header: h,
            sa: mad.sa,
            attribute,
            records,
            from: m.from,
        };
        self.finish(h.transaction_id, Ok(resp));
    }

    fn poll_transmit(&mut self, _now: Instant) -> Option<MadOut> {
        self.out.pop_front()
    }

    fn poll_timeout(&self) -> Option<Instant> {
        self.pending.values().map(|p| p.deadline).min()
    }

    fn handle_timeout(&mut self, now: Instant) {
        let due: Vec<u64> = self
            .pending
            .iter()
            .filter(|(_, p)| p.deadline <= now)
            .map(|(t, _)| *t)
            .collect();
        for tid in due {
            let Some(p) = self.pending.get_mut(&tid) else {
                continue;
            };
            if p.retries_left == 0 {
                self.finish(tid, Err(SaClientError::Timeout));
                continue;
            }
            p.retries_left -= 1;
            p.rmpp = None;
            p.timeout = (p.timeout * self.cfg.backoff).min(self.cfg.max_timeout);
            p.deadline = now + p.timeout;
            let m = MadOut {
                to: p.to,
                mad: p.mad.to_vec(),
            };
            self.out.push_back(m);
        }
    }
}
