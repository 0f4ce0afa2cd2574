//! [`HostLink`]: the host's side of the attach protocol (docs/UDP-FABRIC.md) as a sans-IO agent.
//!
//! - sends AttachRequest (with the node GUID of its last identity as hint, none at first) every
//!   [`HostLinkConfig::retry`] until an AttachAccept comes; an AttachChallenge meanwhile gives
//!   the cookie the requests carry from then on, and the next request goes at once (the fabric
//!   attaches only a request with a cookie it minted for the sender's address, module
//!   `cookie`); a challenge outside an attach is counted as stale and ignored. The cookie is
//!   dropped when the fabric is lost;
//! - draws a nonce per attach (at the start and at each loss of the fabric) that its requests
//!   carry, and takes a challenge, accept or reject only with that nonce: an off-path sender
//!   forging the fabric's address does not know it (counted `bad_nonce`, ignored);
//! - a reject of another version of the protocol (a fabric of another build) is reported
//!   ([`HostLinkEvent::OtherVersion`]), and the requests go on;
//! - once attached, sends a Keepalive every [`HostLinkConfig::keepalive`]; any datagram of its
//!   session shows the fabric alive. Nothing heard for [`HostLinkConfig::dead_after`], or the
//!   reject UnknownSession (the fabric restarted), and the fabric is lost: it attaches again;
//! - takes the fabric's configuration of its ports: PortConfig and ClientReregister as they come
//!   (a fabric of an earlier build sends only those), or, once the fabric sends them sequenced
//!   (SeqPortConfig, SeqClientReregister), each exactly once and in order: the next number is
//!   taken, one taken already is a duplicate (counted, not taken again), one beyond the next
//!   waits for the fabric to send the missing ones again (counted), and each is acknowledged
//!   with the latest number taken (ControlAck). A ControlAck of 0 right after each accept, and
//!   again with the keepalives 1, 2, 4, 8, ... of the session until a sequenced message comes,
//!   tells the fabric that this host takes them (docs/UDP-FABRIC.md "Reliable configuration");
//!   given its lost session again (the fabric still held it), it goes on with that session's
//!   numbers and acknowledges what it took there instead of 0;
//! - [`HostLink::detach`] sends Detach and stops.
//!
//! Invariants: datagrams of another session are counted and dropped; once a sequenced message
//! came in a session, an unsequenced configuration of that session is older than it and is
//! dropped (counted as stale); every queue is bounded.

use super::cookie::Nonces;
use super::reliable::next_seq;
use super::{config_from_wire, Outgoing};
use crate::hw::mgmt::PortConfig;
use ipoib_proto::time::Instant;
use ipoib_wire::udp_fabric::{
    foreign_reject, AttachAccept, DatagramRepr, MessageRepr, RejectReason,
};
use ipoib_wire::Guid;
use std::collections::VecDeque;
use std::time::Duration;

/// Datagrams or events waiting, at most.
pub(super) const QUEUE_LIMIT: usize = 16_384;

/// Timers of a [`HostLink`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HostLinkConfig {
    /// Between AttachRequests while unattached.
    pub retry: Duration,
    /// Between Keepalives while attached.
    pub keepalive: Duration,
    /// Nothing heard for this long: the fabric is lost.
    pub dead_after: Duration,
}

impl Default for HostLinkConfig {
    /// Retry every 500 ms, keepalive every second, lost after 3 s.
    fn default() -> HostLinkConfig {
        HostLinkConfig {
            retry: Duration::from_millis(500),
            keepalive: Duration::from_secs(1),
            dead_after: Duration::from_secs(3),
        }
    }
}

/// What a [`HostLink`] reports.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HostLinkEvent {
    /// The fabric gave an identity (first attach or reattach).
    Attached(AttachAccept),
    /// The SM's configuration of the port.
    Config(PortConfig),
    /// A SubnSet(PortInfo) with ClientReregister 1 on this port (IBA 1 §14.4.11).
    ClientReregister(u8),
    /// A packet for the HCA.
    Packet(Vec<u8>),
    /// The fabric stopped answering (or forgot the session); attaching again.
    Lost,
    /// The fabric refused the attach (retrying).
    Rejected(RejectReason),
    /// A fabric of this other version of the protocol refused the attach as "bad version"
    /// (retrying; this build's is `ipoib_wire::udp_fabric::VERSION`).
    OtherVersion(u8),
}

/// Counters of a [`HostLink`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct HostLinkCounters {
    /// Datagrams received.
    pub datagrams: u64,
    /// Datagrams that did not parse, or a configuration with an unknown port state.
    pub malformed: u64,
    /// Datagrams of another session or not expected in the current state.
    pub stale: u64,
    /// Attach requests sent.
    pub attach_requests: u64,
    /// AttachChallenges taken while attaching (their cookie kept for the requests).
    pub challenges: u64,
    /// Rejects "bad version" in another version's header (a fabric of another build).
    pub bad_version: u64,
    /// AttachChallenges, AttachAccepts and AttachRejects while attaching without this attach's
    /// nonce (forged, or late answers to an attach before the last loss): ignored.
    pub bad_nonce: u64,
    /// Keepalives sent.
    pub keepalives: u64,
    /// Times the fabric was lost.
    pub lost: u64,
    /// Packets not sent: not attached.
    pub unattached: u64,
    /// Datagrams or events dropped: queue full.
    pub queue_full: u64,
    /// PortConfig messages of the session taken (the port as the slot's SMA holds it,
    /// docs/UDP-FABRIC.md "PortConfig carries what the SMA set": each change, and the whole
    /// configuration again after every accept, so equal ones may follow each other).
    pub port_configs: u64,
    /// ClientReregister messages of the session taken (each a SubnSet(PortInfo) with
    /// ClientReregister 1 at the slot's SMA, IBA 1 §14.4.11).
    pub client_reregisters: u64,
    /// Sequenced messages that came again after they were taken (the fabric resent one whose
    /// acknowledgement it had not yet, or never, received): acknowledged again, not taken.
    pub duplicates: u64,
    /// Sequenced messages that came before one with a lower number (lost or late on the way):
    /// dropped, for the fabric to send again in order.
    pub out_of_order: u64,
    /// ControlAcks sent (with the number taken; the first of a session also says that this host
    /// takes sequenced messages): queued for the fabric, not one the full queue dropped.
    pub control_acks: u64,
}

/// What a host knows of the sequenced configuration of its session (docs/UDP-FABRIC.md
/// "Reliable configuration").
#[derive(Debug, Clone, Copy, Default)]
struct Sequenced {
    /// The latest sequence number taken (0: none).
    taken: u32,
    /// A sequenced message came: the fabric knows this host takes them.
    seen: bool,
    /// Keepalives sent in the session (the ControlAck 0 goes with the 1st, 2nd, 4th, 8th, ...
    /// until a sequenced message comes).
    keepalives: u32,
}

#[derive(Debug, Clone)]
enum State {
    Attaching {
        next: Instant,
        /// The latest challenge's cookie (0: none yet).
        cookie: u64,
        /// This attach's nonce, which every answer must carry.
        nonce: u64,
    },
    Attached {
        session: u64,
        last_heard: Instant,
        next_keepalive: Instant,
        sequenced: Sequenced,
    },
    Detached,
}

/// The attach protocol. See the module docs.
#[derive(Debug)]
pub struct HostLink {
    cfg: HostLinkConfig,
    state: State,
    hint: Guid,
    /// The session lost last and what was taken in it: a fabric that still holds the session
    /// gives it again, its numbering going on.
    last: Option<(u64, Sequenced)>,
    seq: u32,
    nonces: Nonces,
    out: VecDeque<Outgoing>,
    events: VecDeque<HostLinkEvent>,
    counters: HostLinkCounters,
}

impl HostLink {
    /// Starts attaching at `now`; its attach nonces are keyed with `nonce_key` (a secret: whoever
    /// knows it can answer this host's requests without seeing them).
    pub fn new(now: Instant, cfg: HostLinkConfig, nonce_key: [u64; 2]) -> HostLink {
        let mut nonces = Nonces::new(nonce_key);
        HostLink {
            cfg,
            state: State::Attaching {
                next: now,
                cookie: 0,
                nonce: nonces.draw(),
            },
            nonces,
            hint: Guid(0),
            last: None,
            seq: 0,
            out: VecDeque::new(),
            events: VecDeque::new(),
            counters: HostLinkCounters::default(),
        }
    }

    /// Counters.
    pub fn counters(&self) -> HostLinkCounters {
        self.counters
    }

    /// True while attached.
    pub fn is_attached(&self) -> bool {
        matches!(self.state, State::Attached { .. })
    }

    /// The session, while attached.
    pub fn session(&self) -> Option<u64> {
        match self.state {
            State::Attached { session, .. } => Some(session),
            _ => None,
        }
    }

    /// The current attach's nonce, while attaching.
    pub fn nonce(&self) -> Option<u64> {
        match self.state {
            State::Attaching { nonce, .. } => Some(nonce),
            _ => None,
        }
    }

    /// The next datagram for the fabric.
    pub fn poll_transmit(&mut self) -> Option<Vec<u8>> {
        self.out.pop_front().map(|o| o.to_vec())
    }

    /// The next datagram for the fabric, in its two parts (a packet's own buffer as the body:
    /// [`Outgoing`]).
    pub fn poll_transmit_parts(&mut self) -> Option<Outgoing> {
        self.out.pop_front()
    }

    /// The next event.
    pub fn poll_event(&mut self) -> Option<HostLinkEvent> {
        self.events.pop_front()
    }

    /// When [`HostLink::handle_timeout`] is next due.
    pub fn poll_timeout(&self) -> Option<Instant> {
        match self.state {
            State::Attaching { next, .. } => Some(next),
            State::Attached {
                last_heard,
                next_keepalive,
                ..
            } => Some(next_keepalive.min(last_heard + self.cfg.dead_after)),
            State::Detached => None,
        }
    }

    /// Sends what is due at `now` (early or repeated calls are harmless).
    pub fn handle_timeout(&mut self, now: Instant) {
        match self.state {
            State::Attaching {
                next,
                cookie,
                nonce,
            } if now >= next => self.request(now, cookie, nonce),
            State::Attached {
                session,
                last_heard,
                next_keepalive,
                mut sequenced,
            } => {
                if now >= last_heard + self.cfg.dead_after {
                    self.lose(now);
                } else if now >= next_keepalive {
                    self.counters.keepalives += 1;
                    self.seq = self.seq.wrapping_add(1);
                    self.send(session, MessageRepr::Keepalive { seq: self.seq });
                    sequenced.keepalives = sequenced.keepalives.saturating_add(1);
                    // The first ControlAck (with the accept) may have been lost; an earlier
                    // fabric counts each as unexpected, so they thin out: 1st, 2nd, 4th, ...
                    if !sequenced.seen && sequenced.keepalives.is_power_of_two() {
                        self.ack(session, 0);
                    }
                    self.state = State::Attached {
                        session,
                        last_heard,
                        next_keepalive: now + self.cfg.keepalive,
                        sequenced,
                    };
                }
            }
            _ => {}
        }
    }

    /// One datagram from the fabric.
    pub fn handle_datagram(&mut self, now: Instant, data: &[u8]) {
        self.handle_datagram_in(now, data, Vec::new());
    }

    /// [`HostLink::handle_datagram`], a Packet message's packet copied into `buf` (a spent
    /// packet's allocation, its bytes stale) rather than a new one; `buf` is dropped otherwise.
    pub fn handle_datagram_in(&mut self, now: Instant, data: &[u8], mut buf: Vec<u8>) {
        self.counters.datagrams += 1;
        let Ok(d) = DatagramRepr::parse(data) else {
            match (&self.state, foreign_reject(data)) {
                (State::Attaching { .. }, Some((v, RejectReason::BadVersion))) => {
                    self.counters.bad_version += 1;
                    self.event(HostLinkEvent::OtherVersion(v));
                }
                _ => self.counters.malformed += 1,
            }
            return;
        };
        match (&mut self.state, d.message) {
            // Not this attach's answer: forged (the sender did not see the request) or late.
            (
                &mut State::Attaching { nonce, .. },
                MessageRepr::AttachChallenge { nonce: n, .. }
                | MessageRepr::AttachAccept { nonce: n, .. }
                | MessageRepr::AttachReject { nonce: n, .. },
            ) if n != nonce => {
                if n == 0 {
                    // A reject answering no request (UnknownSession to an earlier Keepalive).
                    self.counters.stale += 1;
                } else {
                    self.counters.bad_nonce += 1;
                }
            }
            (
                &mut State::Attaching {
                    cookie: held,
                    nonce,
                    ..
                },
                MessageRepr::AttachChallenge { cookie, .. },
            ) => {
                self.counters.challenges += 1;
                // A repeated challenge (to a retry sent before the first came) is answered
                // already; the timer sends the next request.
                if held != cookie {
                    self.request(now, cookie, nonce);
                }
            }
            (State::Attaching { .. }, MessageRepr::AttachAccept { accept: a, .. }) => {
                self.hint = a.node_guid;
                // The session lost last, given again (the fabric still held it: it heard this
                // host while this host heard nothing): its numbers go on, and the fabric resends
                // what was not acknowledged. Any other starts from none taken.
                let sequenced = match self.last.take() {
                    Some((id, s)) if id == d.session => Sequenced { keepalives: 0, ..s },
                    _ => Sequenced::default(),
                };
                self.state = State::Attached {
                    session: d.session,
                    last_heard: now,
                    next_keepalive: now + self.cfg.keepalive,
                    sequenced,
                };
                self.event(HostLinkEvent::Attached(a));
                // This host takes sequenced configuration (docs/UDP-FABRIC.md "Reliable
                // configuration"); up to here, in a session given again.
                self.ack(d.session, sequenced.taken);
            }
            (State::Attaching { .. }, MessageRepr::AttachReject { reason, .. }) => {
                self.event(HostLinkEvent::Rejected(reason));
            }
            (State::Attached { session, .. }, MessageRepr::AttachReject { reason, .. })
                if *session == d.session && reason == RejectReason::UnknownSession =>
            {
                self.lose(now);
            }
            (
                State::Attached {
                    session,
                    last_heard,
                    sequenced,
                    ..
                },
                m,
            ) if *session == d.session => {
                *last_heard = now;
                let (session, seen) = (*session, sequenced.seen);
                match m {
                    MessageRepr::Packet(p) => {
                        buf.clear();
                        buf.extend_from_slice(p);
                        self.event(HostLinkEvent::Packet(buf));
                    }
                    // Sent before the fabric knew this host takes sequenced messages: older than
                    // any sequenced one, which the fabric sends from then on.
                    MessageRepr::PortConfig(_) | MessageRepr::ClientReregister { .. } if seen => {
                        self.counters.stale += 1
                    }
                    MessageRepr::PortConfig(c) => self.take_config(&c),
                    MessageRepr::ClientReregister { port } => self.take_reregister(port),
                    MessageRepr::SeqPortConfig { seq, config } => {
                        let next = self.take_sequenced(session, seq);
                        if next {
                            self.take_config(&config);
                        }
                    }
                    MessageRepr::SeqClientReregister { seq, port } => {
                        let next = self.take_sequenced(session, seq);
                        if next {
                            self.take_reregister(port);
                        }
                    }
                    // Keepalive answers and a repeated accept only show the fabric alive.
                    _ => {}
                }
            }
            _ => self.counters.stale += 1,
        }
    }

    /// Sends `packet` (LRH..VCRC) to the fabric; counted and dropped while unattached.
    pub fn send_packet(&mut self, packet: &[u8]) {
        match self.state {
            State::Attached { session, .. } => {
                self.send(session, MessageRepr::Packet(packet));
            }
            _ => self.counters.unattached += 1,
        }
    }

    /// [`HostLink::send_packet`] of a packet whose buffer becomes the datagram's body (not
    /// copied: [`Outgoing`]).
    pub fn send_packet_buf(&mut self, packet: Vec<u8>) {
        match self.state {
            State::Attached { session, .. } => {
                self.push(Outgoing::packet(session, packet));
            }
            _ => self.counters.unattached += 1,
        }
    }

    /// Leaves the fabric (Detach) and stops.
    pub fn detach(&mut self) {
        if let State::Attached { session, .. } = self.state {
            self.send(session, MessageRepr::Detach);
        }
        self.state = State::Detached;
    }

    fn take_config(&mut self, c: &ipoib_wire::udp_fabric::PortConfigRepr) {
        match config_from_wire(c) {
            Some(c) => {
                self.counters.port_configs += 1;
                self.event(HostLinkEvent::Config(c))
            }
            None => self.counters.malformed += 1,
        }
    }

    fn take_reregister(&mut self, port: u8) {
        self.counters.client_reregisters += 1;
        self.event(HostLinkEvent::ClientReregister(port))
    }

    /// Sequenced message `seq` of `session` came: true when it is the next to take (the caller
    /// takes it). A duplicate or one beyond the next is counted and not taken. Each is
    /// acknowledged with the latest number taken, so that a lost acknowledgement is made good by
    /// the fabric's next resend.
    fn take_sequenced(&mut self, session: u64, seq: u32) -> bool {
        let State::Attached { sequenced, .. } = &mut self.state else {
            return false;
        };
        sequenced.seen = true;
        // Serial number arithmetic: ahead when less than 2^31 beyond (numbers wrap).
        let mut next = seq == next_seq(sequenced.taken);
        let ahead = seq.wrapping_sub(sequenced.taken);
        if next && self.events.len() >= QUEUE_LIMIT {
            // No room for its event: not taken, so not acknowledged; the fabric sends it again.
            self.counters.queue_full += 1;
            next = false;
        } else if next {
            sequenced.taken = seq;
        } else if ahead == 0 || ahead > 1 << 31 {
            self.counters.duplicates += 1;
        } else {
            self.counters.out_of_order += 1;
        }
        let taken = sequenced.taken;
        self.ack(session, taken);
        next
    }

    /// A ControlAck of `seq`, counted when it goes into the transmit queue (one the full queue
    /// drops is counted in `queue_full` only).
    fn ack(&mut self, session: u64, seq: u32) {
        if self.send(session, MessageRepr::ControlAck { seq }) {
            self.counters.control_acks += 1;
        }
    }

    /// Sends an AttachRequest with `cookie` and `nonce` at `now`; the next goes after the retry
    /// interval.
    fn request(&mut self, now: Instant, cookie: u64, nonce: u64) {
        self.counters.attach_requests += 1;
        let hint = self.hint;
        self.send(
            0,
            MessageRepr::AttachRequest {
                hint,
                cookie,
                nonce,
            },
        );
        self.state = State::Attaching {
            next: now + self.cfg.retry,
            cookie,
            nonce,
        };
    }

    fn lose(&mut self, now: Instant) {
        if let State::Attached {
            session, sequenced, ..
        } = self.state
        {
            self.last = Some((session, sequenced));
        }
        self.counters.lost += 1;
        // A new attach: a new nonce, so that no answer to the requests before counts.
        self.state = State::Attaching {
            next: now,
            cookie: 0,
            nonce: self.nonces.draw(),
        };
        self.event(HostLinkEvent::Lost);
        self.handle_timeout(now);
    }

    /// Queues `message` for the fabric; whether it went into the queue.
    fn send(&mut self, session: u64, message: MessageRepr<'_>) -> bool {
        Outgoing::message(&DatagramRepr { session, message }).is_some_and(|o| self.push(o))
    }

    fn push(&mut self, o: Outgoing) -> bool {
        if self.out.len() >= QUEUE_LIMIT {
            self.counters.queue_full += 1;
            return false;
        }
        self.out.push_back(o);
        true
    }

    fn event(&mut self, e: HostLinkEvent) {
        if self.events.len() >= QUEUE_LIMIT {
            self.counters.queue_full += 1;
            return;
        }
        self.events.push_back(e);
    }
}

#[cfg(test)]
mod tests {
    use super::{HostLink, HostLinkConfig, HostLinkEvent};
    use ipoib_proto::rng::Rng;
    use ipoib_proto::time::Instant;
    use ipoib_wire::udp_fabric::{AttachAccept, DatagramRepr, MessageRepr};
    use ipoib_wire::Guid;

    /// `message` in session 7's datagram.
    fn d(message: MessageRepr<'_>) -> Vec<u8> {
        DatagramRepr {
            session: 7,
            message,
        }
        .to_vec()
        .unwrap()
    }

    /// The fabric's accept of session 7: slot 1, port 1.
    fn accept() -> AttachAccept {
        AttachAccept {
            slot: 1,
            port: 1,
            timeout_ms: 3000,
            node_guid: Guid(0x10),
            port_guids: vec![Guid(0x11)],
        }
    }

    /// A link attaching from time zero, its nonces keyed from `seed`.
    fn link(seed: u64) -> HostLink {
        let mut r = Rng::new(seed);
        let key = [r.next_u64(), r.next_u64()];
        HostLink::new(Instant::ZERO, HostLinkConfig::default(), key)
    }

    /// The fabric's accept of session 7 to `link`'s current attach.
    fn accepted(link: &HostLink) -> Vec<u8> {
        d(MessageRepr::AttachAccept {
            nonce: link.nonce().unwrap(),
            accept: accept(),
        })
    }

    /// The numbers of the ControlAcks the host sent since last asked.
    fn acks(link: &mut HostLink) -> Vec<u32> {
        std::iter::from_fn(|| link.poll_transmit())
            .filter_map(|v| match DatagramRepr::parse(&v).unwrap().message {
                MessageRepr::ControlAck { seq } => Some(seq),
                _ => None,
            })
            .collect()
    }

    // docs/UDP-FABRIC.md "Protocol": a challenge while attaching is answered at once with a
    // request carrying its cookie, which the retries carry on; the same cookie again sends
    // nothing more; one while attached is stale. The cookie goes with the fabric.
    #[test]
    fn a_challenge_is_answered_at_once_and_only_while_attaching() {
        let mut link = link(1);
        let cookies = |link: &mut HostLink| -> Vec<u64> {
            std::iter::from_fn(|| link.poll_transmit())
                .filter_map(|v| match DatagramRepr::parse(&v).unwrap().message {
                    MessageRepr::AttachRequest { cookie, .. } => Some(cookie),
                    _ => None,
                })
                .collect()
        };
        link.handle_timeout(Instant::ZERO);
        assert_eq!(cookies(&mut link), [0]);
        // As the fabric sends it: session 0.
        let nonce = link.nonce().unwrap();
        let challenge = |cookie| {
            DatagramRepr {
                session: 0,
                message: MessageRepr::AttachChallenge { cookie, nonce },
            }
            .to_vec()
            .unwrap()
        };
        let t = Instant::ZERO + std::time::Duration::from_millis(1);
        link.handle_datagram(t, &challenge(5));
        link.handle_datagram(t, &challenge(5));
        assert_eq!(cookies(&mut link), [5], "at once, once");
        link.handle_timeout(t + HostLinkConfig::default().retry);
        assert_eq!(cookies(&mut link), [5], "the retry carries it");
        link.handle_datagram(t, &challenge(6));
        assert_eq!(cookies(&mut link), [6], "a new cookie at once");
        assert_eq!(link.counters().challenges, 3);
        link.handle_datagram(t, &accepted(&link));
        link.handle_datagram(t, &challenge(7));
        assert_eq!(cookies(&mut link), [], "attached: ignored");
        assert_eq!((link.counters().challenges, link.counters().stale), (3, 1));
        // Lost: the next request has none, and a new nonce, which the old one's answers lack.
        let lost = t + HostLinkConfig::default().dead_after;
        link.handle_timeout(lost);
        assert_eq!(cookies(&mut link), [0]);
        assert!(link.nonce().is_some_and(|n| n != nonce));
        link.handle_datagram(lost, &challenge(8));
        assert_eq!(cookies(&mut link), [], "the last attach's nonce");
        assert_eq!(
            (link.counters().challenges, link.counters().bad_nonce),
            (3, 1)
        );
    }

    // A packet from the fabric is copied into the buffer the caller gives (a spent packet's
    // allocation), not into a new one.
    #[test]
    fn a_packet_from_the_fabric_is_copied_into_the_buffer_given() {
        let mut link = link(2);
        link.handle_datagram(Instant::ZERO, &accepted(&link));
        assert!(matches!(
            link.poll_event(),
            Some(HostLinkEvent::Attached(_))
        ));
        let packet = [0x5au8; 100];
        let buf = vec![0xee; 4200];
        let at = buf.as_ptr();
        link.handle_datagram_in(Instant::ZERO, &d(MessageRepr::Packet(&packet)), buf);
        match link.poll_event() {
            Some(HostLinkEvent::Packet(p)) => {
                assert_eq!(p, packet);
                assert_eq!(p.as_ptr(), at, "copied into the buffer given");
            }
            e => panic!("{e:?}"),
        }
    }

    // docs/UDP-FABRIC.md "Reliable configuration": the host takes sequenced messages once and in
    // order, acknowledging each with the latest number taken; an unsequenced configuration that
    // comes after a sequenced one is older and is dropped.
    #[test]
    fn sequenced_messages_are_taken_once_in_order_and_acknowledged() {
        let mut link = link(2);
        link.handle_datagram(Instant::ZERO, &accepted(&link));
        assert_eq!(acks(&mut link), [0], "this host takes sequenced messages");
        let rereg = |seq| d(MessageRepr::SeqClientReregister { seq, port: 1 });
        // 2 before 1: dropped; then 1, 2, and 1 again.
        for seq in [2, 1, 2, 1] {
            link.handle_datagram(Instant::ZERO, &rereg(seq));
        }
        assert_eq!(acks(&mut link), [0, 1, 2, 2]);
        let events: Vec<_> = std::iter::from_fn(|| link.poll_event()).collect();
        assert_eq!(
            events[1..],
            [
                HostLinkEvent::ClientReregister(1),
                HostLinkEvent::ClientReregister(1)
            ]
        );
        let c = link.counters();
        assert_eq!(
            (c.client_reregisters, c.duplicates, c.out_of_order),
            (2, 1, 1)
        );
        link.handle_datagram(Instant::ZERO, &d(MessageRepr::ClientReregister { port: 1 }));
        assert!(link.poll_event().is_none(), "older than the sequenced ones");
        assert_eq!(link.counters().stale, 1);
    }

    // `control_acks` counts the ControlAcks that go into the transmit queue: one its full
    // queue drops is counted in `queue_full` alone.
    #[test]
    fn a_control_ack_the_full_queue_drops_is_not_counted_as_sent() {
        let mut link = link(2);
        link.handle_datagram(Instant::ZERO, &accepted(&link));
        let rereg = d(MessageRepr::SeqClientReregister { seq: 1, port: 1 });
        // Each copy is acknowledged again; nothing is sent meanwhile, so the queue fills.
        let copies = super::QUEUE_LIMIT + 10;
        for _ in 0..copies {
            link.handle_datagram(Instant::ZERO, &rereg);
        }
        let queued = acks(&mut link).len() as u64;
        let c = link.counters();
        assert_eq!(queued, super::QUEUE_LIMIT as u64);
        assert_eq!(c.control_acks, queued, "the acknowledgements that went");
        assert_eq!(c.queue_full, copies as u64 + 1 - queued);
    }

    // A sequenced message that finds the adapter's event queue full is not taken and not
    // acknowledged (its event would be lost with the acknowledgement telling the fabric to stop
    // sending it); the fabric's resend brings it when there is room.
    #[test]
    fn a_sequenced_message_with_no_room_for_its_event_waits_for_the_resend() {
        let mut link = link(2);
        link.handle_datagram(Instant::ZERO, &accepted(&link));
        assert_eq!(acks(&mut link), [0]);
        let packet = d(MessageRepr::Packet(&[0x5a; 64]));
        while link.counters().queue_full == 0 {
            link.handle_datagram(Instant::ZERO, &packet);
        }
        let rereg = d(MessageRepr::SeqClientReregister { seq: 1, port: 1 });
        link.handle_datagram(Instant::ZERO, &rereg);
        assert_eq!(
            acks(&mut link),
            [0],
            "not taken: the previous number acknowledged"
        );
        assert_eq!(link.counters().client_reregisters, 0);
        let drained = std::iter::from_fn(|| link.poll_event()).count();
        assert!(drained > 1000);
        link.handle_datagram(Instant::ZERO, &rereg);
        assert_eq!(acks(&mut link), [1]);
        assert_eq!(link.poll_event(), Some(HostLinkEvent::ClientReregister(1)));
        assert_eq!(link.counters().client_reregisters, 1);
    }
}
