//! The agent's timers: one deadline per connection record (every state but Established has one)
//! and one per SIDR exchange, indexed by time so that `poll_timeout` is the first entry.
//!
//! What a deadline means depends on the state (IBA 1 §12.7, §12.9):
//! - REQ Sent, REP Sent, DREQ Sent (and the MRA-received variants): resend the last message while
//!   Max CM Retries allow, then give up (REJ with reason Timeout for REQ and REP; TimeWait);
//! - REQ Rcvd: our user is slow, send an MRA (IBA 1 §12.6 Table 107);
//! - MRA(REQ) Sent: the peer stopped retrying; give up;
//! - TimeWait: forget the record; its ID and QP may be reused.
//!
//! `handle_timeout` only acts on deadlines at or before `now`, so early and repeated calls do
//! nothing.

use super::msg::{self, iba_time};
use super::state::State;
use super::{Cm, CmEvent, CmMessage, Unanswered};
use crate::time::Instant;
use ipoib_wire::cm::{RejReason, RespondedTo};
use std::time::Duration;

/// What a deadline belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(super) enum TimerKey {
    /// A connection record, by local communication ID.
    Conn(u32),
    /// A SIDR exchange.
    Sidr(u32),
}

impl Cm {
    /// Sets (or clears) the deadline of connection `id`.
    pub(super) fn arm(&mut self, id: u32, at: Option<Instant>) {
        let Some(c) = self.conns.get_mut(&id) else {
            return;
        };
        if let Some(old) = c.deadline.take() {
            self.timers.remove(&(old, TimerKey::Conn(id)));
        }
        c.deadline = at;
        if let Some(t) = at {
            self.timers.insert((t, TimerKey::Conn(id)));
        }
    }

    /// Moves connection `id` to TimeWait (IBA 1 §12.9.8): its ID and QP stay taken until the
    /// deadline, and duplicates of its last messages are still answered.
    pub(super) fn enter_time_wait(&mut self, now: Instant, id: u32) {
        self.unindex(id);
        let Some(c) = self.conns.get_mut(&id) else {
            return;
        };
        c.state = State::TimeWait;
        c.req = None;
        let at = now + c.time_wait();
        // No longer a holder of the peer's QP (IBA 1 §12.9.8.3.1).
        self.index(id);
        self.arm(id, Some(at));
    }

    /// Forgets connection `id` (its TimeWait is over).
    fn remove_conn(&mut self, id: u32) {
        self.arm(id, None);
        self.unindex(id);
        if let Some(c) = self.conns.remove(&id) {
            self.events.push_back(CmEvent::TimeWaitExit {
                conn: c.id(),
                qpn: c.local_qpn,
            });
        }
    }

    /// Sends a REJ with reason Timeout for connection `id` (IBA 1 §12.6 Table 108: the ARI of a
    /// Timeout REJ is the sender's CA GUID; Linux `cm_acquire_rejected_id` finds the connection by
    /// it, since the peer may not know our communication ID yet). `private_data` is the
    /// consumer's when it withdraws its REQ ([`Cm::reject`]); longer than a REJ holds, it is cut.
    pub(super) fn send_timeout_rej(&mut self, id: u32, rejected: RespondedTo, private_data: &[u8]) {
        let Some(c) = self.conns.get(&id) else {
            return;
        };
        let mut rej = msg::blank_rej();
        // The consumer's own data when it withdraws; else what it set for the agent's REJs.
        let data = if private_data.is_empty() {
            &c.rej_private_data[..]
        } else {
            private_data
        };
        let n = data.len().min(rej.private_data.len());
        rej.private_data[..n].copy_from_slice(&data[..n]);
        rej.local_comm_id = c.local_id;
        rej.remote_comm_id = c.remote_id;
        rej.message_rejected = rejected;
        rej.reason = RejReason::Timeout;
        rej.set_ari(&self.cfg.ca_guid.0.to_be_bytes());
        self.send_on(id, CmMessage::Rej(rej), true);
    }

    /// Runs every timer due at `now`.
    pub(super) fn run_timers(&mut self, now: Instant) {
        let due: Vec<TimerKey> = self
            .timers
            .iter()
            .take_while(|(t, _)| *t <= now)
            .map(|(_, k)| *k)
            .collect();
        for k in due {
            match k {
                TimerKey::Conn(id) => self.conn_timer(now, id),
                TimerKey::Sidr(id) => self.sidr_timer(now, id),
            }
        }
    }

    fn conn_timer(&mut self, now: Instant, id: u32) {
        let Some(c) = self.conns.get(&id) else {
            return;
        };
        if !matches!(c.deadline, Some(t) if t <= now) {
            return;
        }
        match c.state {
            State::ReqSent
            | State::MraReqRcvd
            | State::RepSent
            | State::MraRepRcvd
            | State::DreqSent => self.retransmit(now, id),
            State::ReqRcvd => self.send_mra(now, id),
            State::MraReqSent => {
                // The active side stopped resending its REQ: it gave up (or vanished).
                self.events.push_back(CmEvent::TimedOut {
                    conn: c.id(),
                    unanswered: Unanswered::Mra,
                });
                self.send_timeout_rej(id, RespondedTo::Req, &[]);
                self.enter_time_wait(now, id);
            }
            State::TimeWait => self.remove_conn(id),
            State::Established => self.arm(id, None),
        }
    }

    /// Resends the last message of connection `id`, or gives up when its retries are spent
    /// (IBA 1 §12.7: at most Max CM Retries resends, each after the CM response time plus
    /// 2 × PacketLifeTime).
    fn retransmit(&mut self, now: Instant, id: u32) {
        let Some(c) = self.conns.get_mut(&id) else {
            return;
        };
        let state = c.state;
        if c.retries_left > 0 {
            c.retries_left -= 1;
            // An MRA's longer wait covered one try; back to the normal wait for the next.
            c.state = match state {
                State::MraReqRcvd => State::ReqSent,
                State::MraRepRcvd => State::RepSent,
                s => s,
            };
            let wait = c.answer_wait();
            if let Some(mad) = c.last.as_deref().copied() {
                let to = c.peer;
                self.send(to, mad);
            }
            self.arm(id, Some(now + wait));
            return;
        }
        let conn = c.id();
        match state {
            State::ReqSent | State::MraReqRcvd => {
                self.events.push_back(CmEvent::TimedOut {
                    conn,
                    unanswered: Unanswered::Req,
                });
                self.send_timeout_rej(id, RespondedTo::Req, &[]);
            }
            State::RepSent | State::MraRepRcvd => {
                self.events.push_back(CmEvent::TimedOut {
                    conn,
                    unanswered: Unanswered::Rep,
                });
                self.send_timeout_rej(id, RespondedTo::Rep, &[]);
            }
            _ => {
                // DREQ Sent: no DREP after every retry; the connection is gone all the same
                // (Linux `cm_process_send_error` enters TimeWait).
                self.events.push_back(CmEvent::Disconnected {
                    conn,
                    by_peer: false,
                    private_data: Vec::new(),
                });
            }
        }
        self.enter_time_wait(now, id);
    }

    /// How long the passive side waits before it sends an MRA: half the time the active side
    /// gives it (the REQ's Remote CM Response Timeout), so the MRA arrives before the REQ is
    /// resent.
    pub(super) fn mra_delay(peer_gives_us: u8) -> Duration {
        iba_time(peer_gives_us) / 2
    }
}
