//! [`ControlSender`]: the fabric's side of the reliable configuration of a host
//! (docs/UDP-FABRIC.md "Reliable configuration"), one per session, sans-IO.
//!
//! A PortConfig or ClientReregister for a host that said it takes sequenced messages (a
//! ControlAck, of 0 at first) gets the session's next sequence number (1, 2, ...) and waits,
//! sent, until the host acknowledges it (cumulatively: a ControlAck of n acknowledges every
//! number up to n). What waits is sent again, whole and in order, [`FIRST_RESEND`] after the
//! first of it was sent (nothing waiting before) or after an acknowledgement took some of it,
//! then after twice as long each time, at most [`LAST_RESEND`] apart (a message queued while
//! others wait goes again with their next resend), until acknowledged or the session ends (the
//! host silent for the fabric's timeout, or detached).
//! Before the host said so (a host of an earlier build never does), they go once, unsequenced,
//! as PortConfig and ClientReregister (types 8 and 9).
//!
//! A port's configuration is state: one equal to the latest of that port's still waiting is
//! not numbered again ([`Send::Coalesced`]; the fabric sends every port's configuration after
//! each repeated AttachRequest, which a host cut off from the fabric sends every half second),
//! and once that waiting copy is acknowledged the port's configuration goes once more
//! ([`ControlSender::take_refresh`]): the host may have taken the copy before it lost the fabric,
//! and needs one taken after (its cable comes back with it).
//!
//! Invariants: numbers go out in the order the slot queued the messages; at most
//! [`UNACKED_LIMIT`] wait (beyond, counted and dropped, as every queue here is bounded).

use crate::hw::mgmt::PortConfig;
use ipoib_proto::time::Instant;
use std::collections::VecDeque;
use std::time::Duration;

/// The first resend, this long after a message was sent unacknowledged: well above a round trip
/// between machines on one network, well below the 1 s between keepalives.
pub const FIRST_RESEND: Duration = Duration::from_millis(200);
/// The longest wait between resends (the backoff's bound): below the fabric's shortest timeout
/// (2 s), so a host that answers keepalives gets a resend before it could be dropped.
pub const LAST_RESEND: Duration = Duration::from_millis(1600);
/// Messages waiting for their acknowledgement, at most.
pub const UNACKED_LIMIT: usize = 4096;

/// The number after `n`: numbers wrap from 2^32 - 1 to 1, as 0 is a host's "none taken".
pub fn next_seq(n: u32) -> u32 {
    n.wrapping_add(1).max(1)
}

/// A configuration message for a host: the slot's SMA's port or event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Control {
    /// A port's configuration (PortConfig).
    Config(PortConfig),
    /// A ClientReregister event on a port (IBA 1 §14.4.11).
    ClientReregister(u8),
}

/// What [`ControlSender::send`] says to put on the wire.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Send {
    /// Unsequenced (the host has not said it takes sequenced messages).
    Once(Control),
    /// With this sequence number.
    Sequenced(u32, Control),
    /// Nothing: a port's configuration equal to the latest of that port's waiting for its
    /// acknowledgement (module docs).
    Coalesced,
}

/// One session's sequenced configuration. See the module docs.
#[derive(Debug, Clone, Default)]
pub struct ControlSender {
    /// The host said it takes sequenced messages.
    sequenced: bool,
    /// The last number given (0: none).
    last: u32,
    unacked: VecDeque<(u32, Control)>,
    /// When what waits is sent again.
    resend_at: Option<Instant>,
    /// The wait before the next resend.
    backoff: Duration,
    /// Ports whose ClientReregister went unsequenced in this session (module docs of
    /// [`ControlSender::acked`]).
    unsequenced_reregisters: Vec<u8>,
    /// Ports whose configuration was coalesced into a waiting copy (module docs).
    coalesced: Vec<u8>,
    /// Ports whose waiting copy was acknowledged since: their configuration goes again.
    refresh: Vec<u8>,
}

impl ControlSender {
    /// True once the host said it takes sequenced messages.
    pub fn is_sequenced(&self) -> bool {
        self.sequenced
    }

    /// Messages waiting for their acknowledgement.
    pub fn unacked(&self) -> usize {
        self.unacked.len()
    }

    /// `c` for the host at `now`: how to send it, or `None` when it cannot wait (the limit).
    pub fn send(&mut self, now: Instant, c: Control) -> Option<Send> {
        if !self.sequenced {
            if let Control::ClientReregister(p) = c {
                if !self.unsequenced_reregisters.contains(&p) {
                    self.unsequenced_reregisters.push(p);
                }
            }
            return Some(Send::Once(c));
        }
        if let Control::Config(pc) = &c {
            let waiting = self.unacked.iter().rev().find_map(|(_, w)| match w {
                Control::Config(w) if w.port == pc.port => Some(w),
                _ => None,
            });
            if waiting == Some(pc) {
                if !self.coalesced.contains(&pc.port) {
                    self.coalesced.push(pc.port);
                }
                return Some(Send::Coalesced);
            }
        }
        if self.unacked.len() >= UNACKED_LIMIT {
            return None;
        }
        self.last = next_seq(self.last);
        self.unacked.push_back((self.last, c.clone()));
        if self.resend_at.is_none() {
            self.backoff = FIRST_RESEND;
            self.resend_at = Some(now + self.backoff);
        }
        Some(Send::Sequenced(self.last, c))
    }

    /// The host's ControlAck of `seq` at `now`. The first one makes the session sequenced; the
    /// caller then sends, sequenced, every port's configuration (state: taking it again changes
    /// nothing) and a ClientReregister for each port in the answer: an event sent unsequenced
    /// before may have been lost, and a second registration with the SA only repeats the joins
    /// and subscriptions of the first. Returns those ports, empty after the first call.
    pub fn acked(&mut self, now: Instant, seq: u32) -> Vec<u8> {
        if !self.sequenced {
            self.sequenced = true;
            return std::mem::take(&mut self.unsequenced_reregisters);
        }
        let before = self.unacked.len();
        // Serial number arithmetic: `n` is acknowledged when `seq` is not before it.
        while let Some(&(n, _)) = self.unacked.front() {
            if seq.wrapping_sub(n) < 1 << 31 {
                self.unacked.pop_front();
            } else {
                break;
            }
        }
        // A port whose coalesced copy was acknowledged: its configuration goes again.
        let unacked = &self.unacked;
        let waiting =
            |p: u8| (unacked.iter()).any(|(_, w)| matches!(w, Control::Config(w) if w.port == p));
        let (still, done): (Vec<u8>, Vec<u8>) = self.coalesced.iter().partition(|&&p| waiting(p));
        self.coalesced = still;
        for p in done {
            if !self.refresh.contains(&p) {
                self.refresh.push(p);
            }
        }
        if self.unacked.is_empty() {
            self.resend_at = None;
        } else if self.unacked.len() < before {
            // Progress: the host is there; the rest waits a first resend's time.
            self.backoff = FIRST_RESEND;
            self.resend_at = Some(now + self.backoff);
        }
        Vec::new()
    }

    /// Ports whose configuration the caller sends again now (through [`ControlSender::send`]):
    /// one was coalesced into a waiting copy that the host has acknowledged since (module docs).
    pub fn take_refresh(&mut self) -> Vec<u8> {
        std::mem::take(&mut self.refresh)
    }

    /// When [`ControlSender::resend`] is next due.
    pub fn poll_timeout(&self) -> Option<Instant> {
        self.resend_at
    }

    /// What waits, in order, when its resend is due at `now` (empty otherwise); the next resend
    /// waits twice as long, at most [`LAST_RESEND`].
    pub fn resend(&mut self, now: Instant) -> Vec<(u32, Control)> {
        match self.resend_at {
            Some(t) if now >= t => {
                self.backoff = (self.backoff * 2).min(LAST_RESEND);
                self.resend_at = Some(now + self.backoff);
                self.unacked.iter().cloned().collect()
            }
            _ => Vec::new(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(ms: u64) -> Instant {
        Instant::ZERO + Duration::from_millis(ms)
    }

    // docs/UDP-FABRIC.md "Reliable configuration": unsequenced until the host's first
    // ControlAck; then numbered from 1, resent whole with a doubling wait bounded at
    // LAST_RESEND until acknowledged, a cumulative acknowledgement taking every number up to it.
    #[test]
    fn numbered_after_the_first_ack_resent_with_a_bounded_backoff_until_acked() {
        let mut s = ControlSender::default();
        let r = Control::ClientReregister(1);
        assert_eq!(s.send(t(0), r.clone()), Some(Send::Once(r.clone())));
        assert_eq!(s.poll_timeout(), None);
        assert_eq!(
            s.acked(t(1), 0),
            vec![1],
            "the event sent once, to send again"
        );
        assert!(s.is_sequenced());
        assert_eq!(s.send(t(1), r.clone()), Some(Send::Sequenced(1, r.clone())));
        assert_eq!(s.send(t(2), r.clone()), Some(Send::Sequenced(2, r.clone())));
        assert_eq!(s.poll_timeout(), Some(t(201)));
        assert!(s.resend(t(200)).is_empty(), "not yet");
        let mut waits = Vec::new();
        let mut now = t(201);
        for _ in 0..6 {
            assert_eq!(s.resend(now).len(), 2);
            let next = s.poll_timeout().unwrap();
            waits.push((next - now).as_millis());
            now = next;
        }
        assert_eq!(waits, [400, 800, 1600, 1600, 1600, 1600]);
        assert_eq!(s.acked(now, 0), Vec::<u8>::new(), "nothing taken yet");
        assert_eq!(s.unacked(), 2);
        s.acked(now, 1);
        assert_eq!(s.unacked(), 1);
        assert_eq!(s.poll_timeout(), Some(now + FIRST_RESEND), "progress");
        assert_eq!(s.resend(now + FIRST_RESEND), vec![(2, r.clone())]);
        s.acked(now, 2);
        assert_eq!((s.unacked(), s.poll_timeout()), (0, None));
        // A late acknowledgement of an older number changes nothing.
        s.acked(now, 1);
        assert_eq!(s.send(now, r.clone()), Some(Send::Sequenced(3, r)));
    }

    // Numbers wrap past 2^32 - 1 to 1 (0 is the host's "none taken").
    #[test]
    fn numbers_wrap_and_skip_zero() {
        let mut s = ControlSender::default();
        s.acked(t(0), 0);
        s.last = u32::MAX - 1;
        let c = Control::ClientReregister(1);
        let seqs: Vec<_> = (0..3)
            .map(|_| match s.send(t(0), c.clone()) {
                Some(Send::Sequenced(n, _)) => n,
                x => panic!("{x:?}"),
            })
            .collect();
        assert_eq!(seqs, [u32::MAX, 1, 2]);
        s.acked(t(0), 1);
        assert_eq!(s.unacked(), 1);
    }

    /// Port `port`'s configuration with LID `lid`.
    fn config(port: u8, lid: u16) -> Control {
        let mut c = crate::hw::hca::tests::port_config(lid, vec![0xffff]);
        c.port = port;
        Control::Config(c)
    }

    // A host cut off from the fabric (its datagrams get through, the fabric's do not) sends an
    // AttachRequest every half second, each answered with its ports' configuration: numbered
    // anew each time, they waited without end (about 4,096 after half an hour of one port, all
    // resent every 1.6 s, then every later change dropped). A configuration equal to the port's
    // latest waiting is not numbered again; once that copy is acknowledged the port's
    // configuration goes once more, for a host that took the copy before it lost the fabric.
    #[test]
    fn a_configuration_equal_to_one_waiting_is_not_numbered_again() {
        let mut s = ControlSender::default();
        s.acked(t(0), 0);
        let (a, b) = (config(1, 5), config(1, 6));
        assert_eq!(s.send(t(0), a.clone()), Some(Send::Sequenced(1, a.clone())));
        for ms in 1..1_000 {
            assert_eq!(s.send(t(ms), a.clone()), Some(Send::Coalesced));
        }
        assert_eq!(s.unacked(), 1);
        assert_eq!(
            s.send(t(1_000), config(2, 5)),
            Some(Send::Sequenced(2, config(2, 5)))
        );
        assert!(s.take_refresh().is_empty(), "nothing acknowledged yet");
        s.acked(t(1_001), 1);
        assert_eq!(s.take_refresh(), [1], "the waiting copy acknowledged");
        assert!(s.take_refresh().is_empty(), "once");
        assert_eq!(
            s.send(t(1_002), a.clone()),
            Some(Send::Sequenced(3, a.clone()))
        );
        // A change is numbered; the older state after it is a change again.
        assert_eq!(s.send(t(1_003), b.clone()), Some(Send::Sequenced(4, b)));
        assert_eq!(s.send(t(1_004), a.clone()), Some(Send::Sequenced(5, a)));
        s.acked(t(1_005), 5);
        assert!(s.take_refresh().is_empty(), "nothing was coalesced since");
    }

    // docs/UDP-FABRIC.md "Reliable configuration": a message queued while others wait has no
    // wait of its own; it goes again with their next resend, however far the backoff has gone.
    #[test]
    fn a_message_queued_while_others_wait_goes_with_their_next_resend() {
        let mut s = ControlSender::default();
        s.acked(t(0), 0);
        let r = Control::ClientReregister(1);
        s.send(t(0), r.clone());
        for at in [200, 600, 1_400] {
            assert_eq!(s.resend(t(at)).len(), 1);
        }
        assert_eq!(s.poll_timeout(), Some(t(3_000)));
        s.send(t(1_500), r.clone());
        assert_eq!(
            s.poll_timeout(),
            Some(t(3_000)),
            "no sooner for the new one"
        );
        assert!(s.resend(t(1_700)).is_empty());
        assert_eq!(s.resend(t(3_000)), vec![(1, r.clone()), (2, r)]);
    }
}
