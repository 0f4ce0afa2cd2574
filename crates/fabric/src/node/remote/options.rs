//! What a [`super::FabricServer`] is built from and what it counts.

use crate::node::subnet::SubnetOptions;
use std::time::Duration;

/// What the fabric is built from.
#[derive(Debug, Clone)]
pub struct FabricOptions {
    /// The subnet (topology, seed, partitions, links, SM and SA settings, capture). Its
    /// `auto_join` and `ipoib` are ignored (the SM's host runs no IPoIB interface); its
    /// `sm_mode` is ours by SMPs, or [`crate::node::subnet::SmMode::None`]: no SM or SA of ours (module docs).
    pub subnet: SubnetOptions,
    /// A host heard from for no longer than this loses its slot.
    pub timeout: Duration,
    /// Items a slot queues for its host, at most.
    pub slot_queue: usize,
    /// Datagrams waiting for the socket, at most.
    pub transmit_queue: usize,
    /// Seed of the session ids; `None`: drawn from the subnet's seed, the same in every run.
    /// A process gives a fresh one (`runtime::udp_fabric::FabricProcess::bind`), so that a
    /// restarted fabric does not give a host the id of the session it lost: a host given its
    /// lost session's id again goes on with that session's numbers (docs/UDP-FABRIC.md
    /// "Reliable configuration").
    pub session_seed: Option<u64>,
    /// The secret of the attach cookies (`remote/cookie.rs`); `None`: drawn from the session
    /// ids' generator. A process gives one from the operating system's random source
    /// (`runtime::udp_fabric::FabricProcess::bind`): whoever can guess it can mint a cookie for
    /// any address.
    pub cookie_key: Option<[u64; 2]>,
}

impl FabricOptions {
    /// Defaults for `subnet`: 3 s timeout, queues of 4,096, and the SM sweeping every 10 s
    /// besides on traps (OpenSM's `sweep_interval`; `subnet.smp.sweep_interval`): a host whose
    /// cable came up before its switch had a LID raised no trap (IBA 1 §14.2.5.1).
    pub fn new(mut subnet: SubnetOptions) -> FabricOptions {
        subnet.smp.sweep_interval = Some(Duration::from_secs(10));
        FabricOptions {
            subnet,
            timeout: Duration::from_secs(3),
            slot_queue: super::DEFAULT_QUEUE_LIMIT,
            transmit_queue: 16_384,
            session_seed: None,
            cookie_key: None,
        }
    }
}

/// Counters of a [`super::FabricServer`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ServerCounters {
    /// Datagrams received.
    pub datagrams: u64,
    /// Datagrams that did not parse (wrong magic, truncated, malformed).
    pub malformed: u64,
    /// Datagrams of another version (answered with a reject in their version, when at least
    /// as long as it).
    pub bad_version: u64,
    /// AttachRequests without a cookie, answered with an AttachChallenge only.
    pub no_cookie: u64,
    /// AttachRequests with a cookie not minted for their address in this or the previous time
    /// bucket (another address's, expired, forged), answered with an AttachChallenge only.
    pub bad_cookie: u64,
    /// Datagrams from a peer without a session, or with another session id.
    pub unknown_session: u64,
    /// Datagrams of a type a host does not send.
    pub unexpected: u64,
    /// Sessions begun.
    pub attached: u64,
    /// Sessions begun on the slot the host asked for by its node GUID (a host that was attached
    /// before, back with its old identity); counted in `attached` too.
    pub reattached: u64,
    /// Attach requests from a peer with a session, answered with its accept again.
    pub accepts_resent: u64,
    /// Attach requests refused: no free slot.
    pub rejected: u64,
    /// Sessions ended by Detach.
    pub detached: u64,
    /// Sessions ended by silence.
    pub timed_out: u64,
    /// Datagrams dropped: the transmit queue was full.
    pub transmit_full: u64,
    /// Multicast memberships the SA dropped for hosts that left.
    pub memberships_dropped: u64,
    /// Sessions whose host said it takes sequenced configuration (its first ControlAck).
    pub sequenced_sessions: u64,
    /// ControlAcks received.
    pub control_acks: u64,
    /// Sequenced PortConfig and ClientReregister messages sent again, unacknowledged.
    pub control_resent: u64,
    /// Sequenced messages dropped: too many waited for their acknowledgement.
    pub control_dropped: u64,
}
