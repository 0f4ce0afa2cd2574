//! Timing constants of the interface and the one backoff rule it uses for SA joins.
//!
//! The interface has no timer wheel: every table (neighbours, paths, groups, tentative addresses)
//! keeps its own deadlines, [`super::Interface::poll_timeout`] is their minimum (and the SA client's),
//! and [`super::Interface::handle_timeout`] lets each table act on what is due. Every handler
//! compares deadlines with `now`, so early or repeated calls do nothing.

use crate::time::Instant;
use std::time::Duration;

/// First retry delay of a failed multicast join: 2 s, doubling to 16 s (docs/IPOIB-JOINS.md:
/// Linux `ipoib_multicast.c` starts `mcast->backoff` at 1 and doubles it before it waits, in
/// `__ipoib_mcast_schedule_join_thread`, so its first retry comes 2 s after the failure).
pub const JOIN_BACKOFF_INITIAL: Duration = Duration::from_secs(2);
/// Largest retry delay of a multicast join (Linux `IPOIB_MAX_BACKOFF_SECONDS` 16).
pub const JOIN_BACKOFF_MAX: Duration = Duration::from_secs(16);

/// How many times a failed multicast leave is sent again (Linux `core/multicast.c`: a group's
/// `retries` starts at 3 and `leave_handler` calls `send_leave` again while the answer is an
/// error and retries are left; docs/IPOIB-JOINS.md "Leaves").
pub const LEAVE_RETRIES: u8 = 3;

/// RFC 4861 §10 REACHABLE_TIME (Linux `base_reachable_time` 30 s).
pub const REACHABLE_TIME: Duration = Duration::from_secs(30);
/// RFC 4861 §10 RETRANS_TIMER, also the ARP retransmission interval (Linux `retrans_time` 1 s).
pub const RETRANS_TIMER: Duration = Duration::from_secs(1);
/// RFC 4861 §10 MAX_MULTICAST_SOLICIT / MAX_UNICAST_SOLICIT, Linux `mcast_solicit`/`ucast_solicit` 3.
pub const MAX_SOLICIT: u8 = 3;
/// How long an unused stale neighbour stays (Linux `gc_stale_time` 60 s).
pub const GC_STALE_TIME: Duration = Duration::from_secs(60);
/// How long a PathRecord query waits for its answer, sent once (Linux `ipoib_main.c`
/// `path_rec_start` gives `ib_sa_path_rec_get` 1000 ms, which `sa_query.c` `send_mad` spends on
/// one send: no resend). Unanswered, the path fails, and a later packet asks again at the SA the
/// port names then; a resend of the same request would go where the first went, to an SM that may
/// no longer be master (docs/IPOIB-JOINS.md "Unicast through a light flush").
pub const PATH_QUERY_TIMEOUT: Duration = Duration::from_secs(1);
/// How long a PathRecord query the SA answered with an error (no path) is remembered before
/// the next packet asks again, so that a stream of packets to a GID the SA does not know is not a
/// stream of queries. A query that got no answer is not held: `PATH_QUERY_TIMEOUT` has passed, and
/// Linux's next packet starts a new query at once (`ipoib_start_xmit`: `path->query` is cleared).
pub const PATH_FAILED_HOLD: Duration = Duration::from_secs(1);
/// How long "this multicast group does not exist" is believed without a trap saying otherwise
/// (draft-ietf-ipoib-ip-over-infiniband-06 §11: cache group existence; traps 66/67 keep it fresh).
pub const GROUP_ABSENT_HOLD: Duration = Duration::from_secs(60);

/// How long a send-only multicast membership stays unused before the interface leaves it (Linux
/// `__ipoib_reap_neigh`: a neighbour idle for two GC periods, `2 * arp_tbl.gc_interval` = 60 s, is
/// freed and `ipoib_check_and_add_mcast_sendonly` leaves its send-only group; docs/DEPLOYED.md
/// "Linux IPoIB").
pub const SEND_ONLY_IDLE: Duration = Duration::from_secs(60);

/// The earlier of two deadlines (`None`: no deadline).
pub(super) fn earliest(a: Option<Instant>, b: Option<Instant>) -> Option<Instant> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, None) => a,
        (None, b) => b,
    }
}

/// A retry delay that starts at [`JOIN_BACKOFF_INITIAL`] and doubles up to [`JOIN_BACKOFF_MAX`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Backoff {
    next: Duration,
}

impl Default for Backoff {
    fn default() -> Self {
        Backoff {
            next: JOIN_BACKOFF_INITIAL,
        }
    }
}

impl Backoff {
    /// The delay to wait now; the following one is doubled (capped).
    pub fn step(&mut self) -> Duration {
        let d = self.next;
        self.next = (self.next * 2).min(JOIN_BACKOFF_MAX);
        d
    }

    /// Back to the first delay (after a success).
    pub fn reset(&mut self) {
        self.next = JOIN_BACKOFF_INITIAL;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // docs/IPOIB-JOINS.md (Linux `__ipoib_mcast_schedule_join_thread`): join backoff 2 s
    // doubling to 16 s.
    #[test]
    fn backoff_doubles_to_sixteen_seconds() {
        let mut b = Backoff::default();
        let secs: Vec<u64> = (0..6).map(|_| b.step().as_secs()).collect();
        assert_eq!(secs, [2, 4, 8, 16, 16, 16]);
        b.reset();
        assert_eq!(b.step(), Duration::from_secs(2));
    }
}
