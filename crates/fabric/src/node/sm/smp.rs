//! The SM's SMP transport: directed-route SubnGet/SubnSet requests with a bounded number
//! outstanding, matched to their GetResp by TransactionID (IBA 1 §13.4.6.2), resent on timeout a
//! bounded number of times, as OpenSM's VL15 dispatcher and transaction manager do
//! (`osm_vl15intf.c`: at most `max_wire_smps` SMPs on the wire; `osm_vendor_ibumad.c`:
//! `transaction_timeout`, `transaction_retries`).
//!
//! Sans-IO: [`SmpRequester::submit`] queues a request with a caller's tag, the owner sends what
//! [`SmpRequester::poll_transmit`] gives (QP0 to the permissive LID, IBA 1 §14.2.2), feeds every
//! SMP response to [`SmpRequester::handle_response`], calls [`SmpRequester::handle_timeout`] at
//! [`SmpRequester::poll_timeout`], and takes the outcomes from [`SmpRequester::poll_result`].
//! Time is a parameter.
//!
//! Invariants: at most `window` requests are outstanding; every submitted request gives exactly
//! one result (its response, or [`SmpFailure::Timeout`] after its retries); timeouts are checked
//! in send order (all requests share one timeout, so the oldest expires first).

use chunked::ChunkedQueue;
use ipoib_proto::mad_agent::{MadAddr, MadOut};
use ipoib_proto::time::Instant;
use ipoib_wire::ib::lid::LID_PERMISSIVE;
use ipoib_wire::mad::attr::smp as attr;
use ipoib_wire::mad::{MadHeaderRepr, MadStatus, Method, MgmtClass, BASE_VERSION};
use ipoib_wire::smp::{
    DirectedRoute, SmpAttribute, SmpMad, SmpMadRepr, SmpRoute, SMP_CLASS_VERSION, SMP_DATA_LEN,
    SMP_PATH_LEN,
};
use queued::QueuedMad;
use std::collections::VecDeque;
use std::time::Duration;

mod chunked;
mod queued;

/// Settings of the transport.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SmpSettings {
    /// Requests outstanding at most (OpenSM `max_wire_smps`, default 4; ours is larger: the
    /// simulator's round trips are short and the fabrics big).
    pub window: usize,
    /// Time to wait for a response before resending (OpenSM `transaction_timeout`).
    pub timeout: Duration,
    /// Resends before giving up (OpenSM `transaction_retries`, default 3).
    pub retries: u32,
    /// How often the sweep submits an SMP that gave up on timeout (each time with the
    /// transport's retries), before counting it failed (at least 1).
    pub rounds: u32,
    /// A sweep every this long after the last one ended (OpenSM `sweep_interval`, 10 s by
    /// default; `None`: only on traps and after incomplete sweeps).
    pub sweep_interval: Option<Duration>,
}

impl Default for SmpSettings {
    fn default() -> Self {
        SmpSettings {
            window: 256,
            timeout: Duration::from_millis(10),
            retries: 3,
            rounds: 4,
            sweep_interval: None,
        }
    }
}

/// Why a request has no good response.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SmpFailure {
    /// No response after every retry.
    Timeout,
    /// The GetResp's status was not success (IBA 1 §13.4.7), D bit removed.
    Status(MadStatus),
}

/// Counters of the transport.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SmpCounters {
    /// SMPs sent (resends included).
    pub sent: u64,
    /// Resends.
    pub resent: u64,
    /// Good responses.
    pub answered: u64,
    /// Requests that failed (timeout or status).
    pub failed: u64,
    /// Responses matching no outstanding request (late or duplicate).
    pub unmatched: u64,
}

#[derive(Debug, Clone)]
struct Outstanding<T> {
    tag: T,
    deadline: Instant,
    tries: u32,
}

/// The requests outstanding, by TransactionID. TIDs are given in sequence, so the one of slot
/// `i` is `base + i` and a lookup is an index; answered slots are `None`, and those at the front
/// are dropped. (An ordered map moved its 300-byte entries within its nodes on every insert and
/// remove: docs/benchmarks/subnet.md.) The MADs, needed only to be sent again, are kept in a
/// ring of their own beside the slots, so that an answer moves its small entry out, not the
/// 256 bytes of its MAD.
#[derive(Debug, Clone)]
struct Outstandings<T> {
    base: u64,
    slots: VecDeque<Option<Outstanding<T>>>,
    /// The MAD of each slot (answered ones too, until they leave the front).
    mads: VecDeque<[u8; 256]>,
    len: usize,
}

impl<T> Outstandings<T> {
    fn new(first_tid: u64) -> Outstandings<T> {
        Outstandings {
            base: first_tid,
            slots: VecDeque::new(),
            mads: VecDeque::new(),
            len: 0,
        }
    }

    fn len(&self) -> usize {
        self.len
    }

    fn is_empty(&self) -> bool {
        self.len == 0
    }

    fn index(&self, tid: u64) -> Option<usize> {
        usize::try_from(tid.wrapping_sub(self.base))
            .ok()
            .filter(|&i| i < self.slots.len())
    }

    fn get(&self, tid: u64) -> Option<&Outstanding<T>> {
        self.slots.get(self.index(tid)?)?.as_ref()
    }

    fn get_mut(&mut self, tid: u64) -> Option<&mut Outstanding<T>> {
        let i = self.index(tid)?;
        self.slots.get_mut(i)?.as_mut()
    }

    /// Adds the request of `tid`, the TID after the last one added.
    fn push(&mut self, tid: u64, o: Outstanding<T>, mad: [u8; 256]) {
        if self.slots.is_empty() {
            self.base = tid;
        }
        debug_assert_eq!(tid, self.base.wrapping_add(self.slots.len() as u64));
        self.slots.push_back(Some(o));
        self.mads.push_back(mad);
        self.len += 1;
    }

    /// The MAD of the outstanding request of `tid`.
    fn mad(&self, tid: u64) -> Option<&[u8; 256]> {
        let i = self.index(tid)?;
        self.slots.get(i)?.as_ref()?;
        self.mads.get(i)
    }

    fn remove(&mut self, tid: u64) -> Option<Outstanding<T>> {
        let i = self.index(tid)?;
        let o = self.slots.get_mut(i)?.take()?;
        self.len -= 1;
        while matches!(self.slots.front(), Some(None)) {
            self.slots.pop_front();
            self.mads.pop_front();
            self.base = self.base.wrapping_add(1);
        }
        Some(o)
    }
}

/// The transport. See the module docs.
#[derive(Debug, Clone)]
pub struct SmpRequester<T> {
    settings: SmpSettings,
    next_tid: u64,
    /// Requests not yet sent, in chunks freed as they drain (module `chunked`).
    queue: ChunkedQueue<(T, QueuedMad)>,
    outstanding: Outstandings<T>,
    /// (deadline, TID) in send order; entries of answered requests are skipped.
    deadlines: VecDeque<(Instant, u64)>,
    /// Resends due, sent before new requests.
    resend: VecDeque<u64>,
    results: VecDeque<(T, Result<SmpAttribute, SmpFailure>)>,
    /// The MADs of the timeout results not yet taken, in their order.
    timed_out: VecDeque<[u8; 256]>,
    /// The MAD of the result taken last, if it timed out ([`SmpRequester::resubmit`]).
    last_timed_out: Option<[u8; 256]>,
    counters: SmpCounters,
}

/// A directed-route SMP along `path` (the ports to leave by, `InitialPath[1..]`; empty for the
/// requester's own node), IBA 1 §14.2.1.2: DrSLID and DrDLID permissive, HopPointer 0.
pub fn directed(
    method: Method,
    attribute_id: u16,
    modifier: u32,
    path: &[u8],
    attribute: Option<SmpAttribute>,
) -> SmpMadRepr {
    let mut initial_path = [0u8; SMP_PATH_LEN];
    let n = path.len().min(SMP_PATH_LEN - 1);
    initial_path[1..=n].copy_from_slice(&path[..n]);
    SmpMadRepr {
        header: MadHeaderRepr {
            base_version: BASE_VERSION,
            mgmt_class: MgmtClass::SubnDirectedRoute,
            class_version: SMP_CLASS_VERSION,
            method,
            status: MadStatus::SUCCESS,
            class_specific: n as u16,
            transaction_id: 0,
            attribute_id,
            attribute_modifier: modifier,
        },
        mkey: 0,
        route: SmpRoute::Directed(DirectedRoute {
            dr_slid: LID_PERMISSIVE,
            dr_dlid: LID_PERMISSIVE,
            initial_path,
            return_path: [0; SMP_PATH_LEN],
        }),
        attribute: attribute.unwrap_or(SmpAttribute::Raw([0; SMP_DATA_LEN])),
    }
}

/// A directed-route SubnGet of `attribute_id` along `path`.
pub fn dr_get(attribute_id: u16, modifier: u32, path: &[u8]) -> SmpMadRepr {
    directed(Method::Get, attribute_id, modifier, path, None)
}

/// A directed-route SubnSet of `attribute` along `path`.
pub fn dr_set(attribute: SmpAttribute, modifier: u32, path: &[u8]) -> SmpMadRepr {
    let id = attribute.attribute_id().unwrap_or(attr::NOTICE);
    directed(Method::Set, id, modifier, path, Some(attribute))
}

impl<T: Clone> SmpRequester<T> {
    /// A transport with `settings`; TransactionIDs start at `first_tid`.
    pub fn new(settings: SmpSettings, first_tid: u64) -> SmpRequester<T> {
        SmpRequester {
            settings: SmpSettings {
                window: settings.window.max(1),
                ..settings
            },
            next_tid: first_tid,
            queue: ChunkedQueue::new(),
            outstanding: Outstandings::new(first_tid),
            deadlines: VecDeque::new(),
            resend: VecDeque::new(),
            results: VecDeque::new(),
            timed_out: VecDeque::new(),
            last_timed_out: None,
            counters: SmpCounters::default(),
        }
    }

    /// Counters.
    pub fn counters(&self) -> SmpCounters {
        self.counters
    }

    /// True when nothing is queued, outstanding or waiting to be taken.
    pub fn is_idle(&self) -> bool {
        self.queue.is_empty() && self.outstanding.is_empty() && self.results.is_empty()
    }

    /// Requests queued or outstanding.
    pub fn in_flight(&self) -> usize {
        self.queue.len() + self.outstanding.len()
    }

    /// Queues `smp` (its TransactionID is replaced); its outcome comes back with `tag`.
    pub fn submit(&mut self, tag: T, smp: &SmpMadRepr) {
        self.queue.push_back((tag, QueuedMad::from_repr(smp)));
    }

    /// The next SMP to send at `now`: a resend, else a queued request while fewer than `window`
    /// are outstanding.
    pub fn poll_transmit(&mut self, now: Instant) -> Option<MadOut> {
        let deadline = now + self.settings.timeout;
        while let Some(tid) = self.resend.pop_front() {
            if let Some(o) = self.outstanding.get_mut(tid) {
                o.deadline = deadline;
                self.deadlines.push_back((deadline, tid));
                self.counters.sent += 1;
                self.counters.resent += 1;
                return self.outstanding.mad(tid).map(out);
            }
        }
        if self.outstanding.len() >= self.settings.window {
            return None;
        }
        let (tag, queued) = self.queue.pop_front()?;
        let mut mad = queued.bytes();
        let tid = self.next_tid;
        self.next_tid = self.next_tid.wrapping_add(1);
        mad[8..16].copy_from_slice(&tid.to_be_bytes());
        self.outstanding.push(
            tid,
            Outstanding {
                tag,
                deadline,
                tries: 0,
            },
            mad,
        );
        self.deadlines.push_back((deadline, tid));
        self.counters.sent += 1;
        Some(out(&mad))
    }

    /// An SMP response (GetResp) arrived; false when it matches no outstanding request.
    pub fn handle_response(&mut self, mad: &[u8]) -> bool {
        self.handle_response_with(mad, |_| true)
    }

    /// [`SmpRequester::handle_response`], the attribute decoded only where `decode` says the
    /// request's tag needs it: the others' results hold it [`SmpAttribute::Raw`] (an SM reads
    /// nothing of its SubnSet's GetResp but the status). What matches is the same either way:
    /// a response whose attribute would not decode is left unmatched, as
    /// [`SmpMadRepr::parse`] refuses it. A result is the attribute alone: its header was
    /// read here, and nobody reads a response's route.
    pub fn handle_response_with(&mut self, mad: &[u8], decode: impl Fn(&T) -> bool) -> bool {
        // What `SmpMadRepr::parse` checks: 256 bytes, an SMP class; then the attribute.
        let (Ok(m), Ok(h)) = (SmpMad::new_checked(mad), MadHeaderRepr::parse_bytes(mad)) else {
            return false;
        };
        if !matches!(
            h.mgmt_class,
            MgmtClass::SubnLid | MgmtClass::SubnDirectedRoute
        ) || h.method != Method::GetResp
        {
            return false;
        }
        let Some(o) = self.outstanding.get(h.transaction_id) else {
            self.counters.unmatched += 1;
            return false;
        };
        let attribute = if decode(&o.tag) {
            SmpAttribute::parse(h.attribute_id, m.smp_data())
        } else {
            SmpAttribute::raw(m.smp_data())
        };
        let Ok(attribute) = attribute else {
            return false;
        };
        let Some(o) = self.outstanding.remove(h.transaction_id) else {
            return false;
        };
        let status = h.status.without_direction(h.mgmt_class);
        let result = if status == MadStatus::SUCCESS {
            self.counters.answered += 1;
            Ok(attribute)
        } else {
            self.counters.failed += 1;
            Err(SmpFailure::Status(status))
        };
        self.results.push_back((o.tag, result));
        self.drop_answered_deadlines();
        true
    }

    fn drop_answered_deadlines(&mut self) {
        while let Some(&(at, tid)) = self.deadlines.front() {
            match self.outstanding.get(tid) {
                Some(o) if o.deadline == at => break,
                _ => {
                    self.deadlines.pop_front();
                }
            }
        }
    }

    /// When [`SmpRequester::handle_timeout`] is next needed.
    pub fn poll_timeout(&self) -> Option<Instant> {
        self.deadlines.front().map(|&(t, _)| t)
    }

    /// Requests whose deadline passed are resent, or fail once their retries are spent.
    pub fn handle_timeout(&mut self, now: Instant) {
        while let Some(&(at, tid)) = self.deadlines.front() {
            if at > now {
                break;
            }
            self.deadlines.pop_front();
            let Some(o) = self.outstanding.get_mut(tid) else {
                continue;
            };
            if o.deadline != at {
                continue; // resent since: a later entry holds its deadline
            }
            if o.tries < self.settings.retries {
                o.tries += 1;
                self.resend.push_back(tid);
            } else {
                let mad = self.outstanding.mad(tid).copied();
                if let (Some(o), Some(mad)) = (self.outstanding.remove(tid), mad) {
                    self.counters.failed += 1;
                    self.results.push_back((o.tag, Err(SmpFailure::Timeout)));
                    self.timed_out.push_back(mad);
                }
            }
        }
        self.drop_answered_deadlines();
    }

    /// The next outcome, in the order they came: the response's attribute, or why there is none.
    pub fn poll_result(&mut self) -> Option<(T, Result<SmpAttribute, SmpFailure>)> {
        let r = self.results.pop_front();
        self.last_timed_out = match &r {
            Some((_, Err(SmpFailure::Timeout))) => self.timed_out.pop_front(),
            _ => None,
        };
        r
    }

    /// Queues again, with `tag`, the request of the result [`SmpRequester::poll_result`] gave
    /// last, if that one timed out (its MAD as first submitted; it gets a new TransactionID):
    /// false otherwise. The caller keeps no copy of the SMP to resubmit it.
    pub fn resubmit(&mut self, tag: T) -> bool {
        let Some(mad) = self.last_timed_out.take() else {
            return false;
        };
        self.queue.push_back((tag, QueuedMad::new(&mad)));
        true
    }

    /// Queues a result for which no MAD is kept: [`SmpRequester::resubmit`] then refuses it, as
    /// a transport that lost its copy would. Only for the tests of the sweep's answer to that.
    #[cfg(test)]
    pub(crate) fn push_result_without_copy(&mut self, tag: T, r: Result<SmpAttribute, SmpFailure>) {
        self.results.push_back((tag, r));
    }
}

/// An SMP from QP0 to the permissive LID: a directed route leaves by its path whatever the DLID
/// (IBA 1 §14.2.2).
fn out(mad: &[u8; 256]) -> MadOut {
    MadOut {
        to: MadAddr {
            qpn: 0,
            ..MadAddr::gsi(LID_PERMISSIVE)
        },
        mad: mad.to_vec(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ipoib_wire::smp::PortInfoRepr;

    fn response(req: &MadOut, status: MadStatus) -> Vec<u8> {
        let r = SmpMadRepr::parse(&req.mad).unwrap();
        r.get_response(status, r.attribute).to_bytes().to_vec()
    }

    // The window bounds what is outstanding; a response frees a slot.
    #[test]
    fn window_bounds_outstanding() {
        let s = SmpSettings {
            window: 2,
            ..SmpSettings::default()
        };
        let mut t = SmpRequester::new(s, 100);
        for i in 0..3 {
            t.submit(i, &dr_get(attr::NODE_INFO, 0, &[1]));
        }
        let now = Instant::ZERO;
        let a = t.poll_transmit(now).unwrap();
        let _b = t.poll_transmit(now).unwrap();
        assert!(t.poll_transmit(now).is_none(), "window of 2");
        assert!(t.handle_response(&response(&a, MadStatus::SUCCESS)));
        assert!(t.poll_transmit(now).is_some());
        let (tag, r) = t.poll_result().unwrap();
        assert_eq!(tag, 0);
        assert!(r.is_ok());
        assert_eq!(
            SmpMadRepr::parse(&a.mad).unwrap().header.transaction_id,
            100
        );
        assert!(
            !t.handle_response(&response(&a, MadStatus::SUCCESS)),
            "late"
        );
        assert_eq!(t.counters().unmatched, 1);
    }

    // Responses in any order match their requests by TID; a TID answered twice, one never
    // given and one before the first are unmatched, and the window frees as they come.
    #[test]
    fn responses_out_of_order_match_by_tid() {
        let s = SmpSettings {
            window: 3,
            ..SmpSettings::default()
        };
        let mut t = SmpRequester::new(s, 7);
        for i in 0..5 {
            t.submit(i, &dr_get(attr::NODE_INFO, 0, &[1]));
        }
        let now = Instant::ZERO;
        let sent: Vec<MadOut> = (0..3).map(|_| t.poll_transmit(now).unwrap()).collect();
        assert!(t.poll_transmit(now).is_none());
        // The last, then the middle: the first still holds its slot.
        assert!(t.handle_response(&response(&sent[2], MadStatus::SUCCESS)));
        assert!(t.handle_response(&response(&sent[1], MadStatus::SUCCESS)));
        assert!(!t.handle_response(&response(&sent[1], MadStatus::SUCCESS)));
        let d = t.poll_transmit(now).unwrap();
        let _e = t.poll_transmit(now).unwrap();
        assert!(
            t.poll_transmit(now).is_none(),
            "window of 3: TIDs 7, 10, 11"
        );
        let mut stray = SmpMadRepr::parse(&d.mad).unwrap();
        for tid in [6, 12, u64::MAX] {
            stray.header.transaction_id = tid;
            assert!(!t.handle_response(&response(
                &MadOut {
                    to: d.to,
                    mad: stray.to_bytes().to_vec(),
                },
                MadStatus::SUCCESS
            )));
        }
        assert!(t.handle_response(&response(&sent[0], MadStatus::SUCCESS)));
        assert!(t.handle_response(&response(&d, MadStatus::SUCCESS)));
        let tid = |m: &MadOut| SmpMadRepr::parse(&m.mad).unwrap().header.transaction_id;
        assert_eq!(
            [tid(&sent[0]), tid(&sent[1]), tid(&sent[2]), tid(&d)],
            [7, 8, 9, 10]
        );
        let tags: Vec<_> = std::iter::from_fn(|| t.poll_result())
            .map(|(tag, r)| {
                assert!(r.is_ok());
                tag
            })
            .collect();
        assert_eq!(tags, [2, 1, 0, 3]);
        assert_eq!(t.counters().unmatched, 4);
        assert_eq!(t.in_flight(), 1);
    }

    // The MADs kept for resends stay with their requests while answered ones leave the front
    // and others stay behind them: each resend is its own request's MAD, same TID.
    #[test]
    fn resends_after_answers_out_of_order_are_their_own_mads() {
        let s = SmpSettings {
            window: 8,
            timeout: Duration::from_millis(1),
            ..SmpSettings::default()
        };
        let mut t = SmpRequester::new(s, 40);
        for i in 0..5u32 {
            t.submit(i, &dr_get(attr::PORT_INFO, i, &[1, 2]));
        }
        let now = Instant::ZERO;
        let sent: Vec<MadOut> = (0..5).map(|_| t.poll_transmit(now).unwrap()).collect();
        // The first two and the fourth answered: the front drains by two, a gap at the fourth.
        for i in [1, 0, 3] {
            assert!(t.handle_response(&response(&sent[i], MadStatus::SUCCESS)));
        }
        let now = t.poll_timeout().unwrap();
        t.handle_timeout(now);
        let again: Vec<MadOut> = std::iter::from_fn(|| t.poll_transmit(now)).collect();
        assert_eq!(again.len(), 2);
        assert_eq!(again[0].mad, sent[2].mad);
        assert_eq!(again[1].mad, sent[4].mad);
        // A request submitted now comes after them, with the next TID.
        t.submit(9, &dr_get(attr::NODE_INFO, 0, &[]));
        let next = t.poll_transmit(now).unwrap();
        assert_eq!(
            SmpMadRepr::parse(&next.mad).unwrap().header.transaction_id,
            45
        );
        assert!(t.handle_response(&response(&next, MadStatus::SUCCESS)));
        assert!(t.handle_response(&response(&again[1], MadStatus::SUCCESS)));
        assert!(t.handle_response(&response(&again[0], MadStatus::SUCCESS)));
        assert_eq!(t.in_flight(), 0);
        let tags: Vec<u32> = std::iter::from_fn(|| t.poll_result())
            .map(|(tag, r)| {
                assert!(r.is_ok());
                tag
            })
            .collect();
        assert_eq!(tags, [1, 0, 3, 9, 4, 2]);
        assert!(t.is_idle());
    }

    // A request that timed out for good is queued again from the transport's copy: the same
    // MAD with the next TID; only right after its timeout result was taken.
    #[test]
    fn resubmit_after_timeout_is_the_same_mad() {
        let s = SmpSettings {
            window: 4,
            timeout: Duration::from_millis(1),
            retries: 0,
            ..SmpSettings::default()
        };
        let mut t = SmpRequester::new(s, 20);
        let info = PortInfoRepr {
            lid: 9,
            ..PortInfoRepr::default()
        };
        t.submit("a", &dr_set(SmpAttribute::PortInfo(info), 3, &[1, 4]));
        t.submit("b", &dr_get(attr::NODE_INFO, 0, &[2]));
        let now = Instant::ZERO;
        let a = t.poll_transmit(now).unwrap();
        let b = t.poll_transmit(now).unwrap();
        assert!(t.handle_response(&response(&b, MadStatus::SUCCESS)));
        assert!(!t.resubmit("x"), "nothing taken yet");
        let now = t.poll_timeout().unwrap();
        t.handle_timeout(now);
        assert_eq!(t.poll_result().unwrap().0, "b");
        assert!(!t.resubmit("x"), "b was answered");
        assert_eq!(t.poll_result(), Some(("a", Err(SmpFailure::Timeout))));
        assert!(t.resubmit("a2"));
        assert!(!t.resubmit("a3"), "once");
        let again = t.poll_transmit(now).unwrap();
        let tid = |m: &MadOut| SmpMadRepr::parse(&m.mad).unwrap().header.transaction_id;
        assert_eq!((tid(&a), tid(&again)), (20, 22));
        assert_eq!(again.mad[..8], a.mad[..8]);
        assert_eq!(again.mad[16..], a.mad[16..]);
        assert!(t.handle_response(&response(&again, MadStatus::SUCCESS)));
        assert_eq!(t.poll_result().unwrap().0, "a2");
        assert!(t.is_idle());
    }

    // The attribute of a response is decoded only for the tags that ask for it; matching,
    // counters and results are as `handle_response`'s.
    #[test]
    fn responses_decoded_only_where_asked() {
        let mut t = SmpRequester::new(SmpSettings::default(), 1);
        let info = PortInfoRepr {
            lid: 7,
            ..PortInfoRepr::default()
        };
        t.submit("set", &dr_set(SmpAttribute::PortInfo(info), 1, &[1]));
        t.submit("get", &dr_get(attr::PORT_INFO, 1, &[1]));
        let now = Instant::ZERO;
        let set = t.poll_transmit(now).unwrap();
        let get = t.poll_transmit(now).unwrap();
        let decode = |tag: &&str| *tag == "get";
        for m in [&get, &set] {
            let r = SmpMadRepr::parse(&m.mad).unwrap();
            let resp = r.get_response(MadStatus::SUCCESS, SmpAttribute::PortInfo(info));
            assert!(t.handle_response_with(&resp.to_bytes(), decode));
            assert!(!t.handle_response_with(&resp.to_bytes(), decode), "once");
        }
        let (tag, r) = t.poll_result().unwrap();
        assert_eq!(tag, "get");
        assert_eq!(r, Ok(SmpAttribute::PortInfo(info)));
        let (tag, r) = t.poll_result().unwrap();
        assert_eq!(tag, "set");
        let mut raw = [0u8; SMP_DATA_LEN];
        SmpAttribute::PortInfo(info).emit(&mut raw);
        assert_eq!(r, Ok(SmpAttribute::Raw(raw)));
        assert_eq!(t.counters().answered, 2);
        assert_eq!(t.counters().unmatched, 2);
        assert!(t.is_idle());
    }

    // A request is resent on timeout `retries` times, then fails; a bad status fails at once.
    #[test]
    fn retries_then_timeout_and_status() {
        let s = SmpSettings {
            window: 4,
            timeout: Duration::from_millis(1),
            retries: 2,
            ..SmpSettings::default()
        };
        let mut t = SmpRequester::new(s, 1);
        t.submit("a", &dr_get(attr::PORT_INFO, 0, &[]));
        let mut now = Instant::ZERO;
        let first = t.poll_transmit(now).unwrap();
        for _ in 0..2 {
            now = t.poll_timeout().unwrap();
            t.handle_timeout(now);
            let again = t.poll_transmit(now).unwrap();
            assert_eq!(again.mad, first.mad, "the same SMP, same TID");
        }
        now = t.poll_timeout().unwrap();
        t.handle_timeout(now);
        assert!(t.poll_transmit(now).is_none());
        assert_eq!(t.poll_result(), Some(("a", Err(SmpFailure::Timeout))));
        assert_eq!(t.counters().resent, 2);
        assert!(t.is_idle());

        t.submit("b", &dr_get(attr::PORT_INFO, 0, &[]));
        let req = t.poll_transmit(now).unwrap();
        t.handle_response(&response(&req, MadStatus::INVALID_ATTR_VALUE));
        assert_eq!(
            t.poll_result(),
            Some(("b", Err(SmpFailure::Status(MadStatus::INVALID_ATTR_VALUE))))
        );
    }
}
