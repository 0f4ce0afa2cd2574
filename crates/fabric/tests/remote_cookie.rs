//! The attach's return-routability cookie (docs/UDP-FABRIC.md "Protocol", "Limits"): the fabric
//! attaches only an AttachRequest carrying a cookie it minted for the sender's address in this
//! time bucket or the last, answers any other with an AttachChallenge alone, and keeps nothing
//! for it. So an off-path sender with a forged source address neither holds a slot nor disturbs
//! the session of the host whose address it forges; a real host attaches through the
//! challenge, over a lossy path too.

#[path = "common/remote.rs"]
mod remote;

use ipoib_fabric::node::remote::{FabricServer, HostLink, HostLinkEvent, COOKIE_BUCKET};
use ipoib_fabric::Instant;
use ipoib_proto::rng::Rng;
use ipoib_wire::udp_fabric::{version_reject, DatagramRepr, MessageRepr, RejectReason};
use ipoib_wire::Guid;
use remote::{addr, Net};
use std::cell::Cell;
use std::rc::Rc;
use std::time::Duration;

const SEC: Duration = Duration::from_secs(1);

fn all_carrier(net: &Net) -> bool {
    (0..net.peers.len()).all(|i| net.carrier(i))
}

/// An AttachRequest with `hint` and `cookie` (nonce 1).
fn request(hint: Guid, cookie: u64) -> Vec<u8> {
    DatagramRepr {
        session: 0,
        message: MessageRepr::AttachRequest {
            hint,
            cookie,
            nonce: 1,
        },
    }
    .to_vec()
    .unwrap()
}

/// What the fabric sends, parsed: (to, message type name).
fn sent(f: &mut FabricServer<u8>) -> Vec<(u8, &'static str)> {
    std::iter::from_fn(|| f.poll_transmit())
        .map(|(to, d)| {
            (
                to,
                DatagramRepr::parse(&d).unwrap().message.msg_type().name(),
            )
        })
        .collect()
}

// Forged requests from an attached host's address (no hint, its own node GUID, another slot's;
// no cookie, a random one, another address's, one expired) and from other addresses naming its
// node GUID: no session begins, and the host's goes on, its keepalives answered. Before the
// cookie, one request without a hint from its address gave its session a new id and the host
// lost carrier and attached again, once per forged request.
#[test]
fn forged_requests_never_touch_an_attached_hosts_session() {
    let mut net = Net::new(2, 41);
    let expired = net.fabric.cookie_for(&1);
    assert!(net.run_until(2 * SEC, all_carrier), "hosts did not come up");
    // Past the expired cookie's two buckets.
    net.run_for(2 * COOKIE_BUCKET);
    let guids: Vec<Guid> = (0..2)
        .map(|i| net.fabric.slot(i).unwrap().node_guid())
        .collect();
    let victim = net.fabric.slot_of(&1).unwrap();
    let session = net.peers[1].host.link().session();
    let (c0, f0) = (net.peers[1].host.link().counters(), net.fabric.counters());
    let mut rng = Rng::new(41);
    let mut forged = 0;
    for round in 0..20 {
        let now = net.now;
        for hint in [
            Guid(0),
            guids[victim],
            guids[1 - victim],
            Guid(rng.next_u64()),
        ] {
            let other = net.fabric.cookie_for(&0);
            for cookie in [0, rng.next_u64() | 1, other, expired] {
                net.fabric.handle_datagram(now, 1, &request(hint, cookie));
                net.fabric
                    .handle_datagram(now, 100 + round, &request(guids[victim], cookie));
                forged += 2;
            }
        }
        net.run_for(SEC / 2);
        assert_eq!(net.peers[1].host.link().session(), session, "round {round}");
    }
    let (c, f) = (net.peers[1].host.link().counters(), net.fabric.counters());
    assert_eq!(
        (c.lost, f.attached, f.accepts_resent),
        (0, f0.attached, 0),
        "{c:?} {f:?}"
    );
    assert!(c.keepalives >= c0.keepalives + 9, "{c:?}");
    assert_eq!(
        f.unknown_session, f0.unknown_session,
        "every keepalive answered: {f:?}"
    );
    assert_eq!(
        f.no_cookie + f.bad_cookie,
        f0.no_cookie + f0.bad_cookie + forged
    );
    // The challenges to its address reached the host, outside an attach: ignored.
    assert_eq!(
        (c.challenges, c.stale - c0.stale),
        (c0.challenges, forged / 2),
        "{c:?}"
    );
    assert_eq!(net.fabric.peers().count(), 2);
    assert!(
        net.carrier(1) && net.ping_and_wait(0, addr(1), SEC),
        "0 -> 1"
    );
}

// Forged requests from 150 addresses, with and without hints and cookies, while one slot is
// free: none holds it, and the real host that comes later attaches to it.
#[test]
fn forged_requests_from_many_addresses_hold_no_slot() {
    let mut net = Net::new(2, 42);
    net.peers[1].alive = false;
    assert!(
        net.run_until(2 * SEC, |n| n.carrier(0)),
        "host 0 did not come up"
    );
    let guid = net.fabric.slot(1).unwrap().node_guid();
    let mut rng = Rng::new(42);
    for _ in 0..4 {
        let now = net.now;
        for from in 50..200u8 {
            let hint = [Guid(0), guid][usize::from(from % 2)];
            let cookie = [0, rng.next_u64()][usize::from(from % 3 == 0)];
            net.fabric
                .handle_datagram(now, from, &request(hint, cookie));
        }
        net.run_for(SEC / 4);
    }
    assert_eq!(
        net.fabric.peers().count(),
        1,
        "no forged sender holds a slot"
    );
    net.peers[1].alive = true;
    assert!(
        net.run_until(2 * SEC, |n| n.carrier(1)),
        "the real host attached"
    );
    assert_eq!(net.fabric.slot_of(&1), Some(1));
    assert!(net.ping_and_wait(0, addr(1), SEC), "0 -> 1");
}

// The cookie is bound to its address and its time: another address's is refused, and so is one
// past the bucket after its own; refused, a request gets the challenge alone, and nothing is
// kept.
#[test]
fn a_cookie_of_another_address_or_an_expired_bucket_is_refused() {
    let mut f: FabricServer<u8> = FabricServer::build(remote::fabric_opts(3, 43)).unwrap();
    let t = Instant::ZERO + COOKIE_BUCKET / 2;
    f.handle_timeout(t);
    let (k5, k7) = (f.cookie_for(&5), f.cookie_for(&7));
    f.handle_datagram(t, 6, &request(Guid(0), k5));
    assert_eq!(sent(&mut f), [(6, "AttachChallenge")], "another address's");
    assert_eq!((f.counters().bad_cookie, f.peers().count()), (1, 0));
    // Minted in the first bucket: taken to the end of the second.
    let late = Instant::ZERO + 2 * COOKIE_BUCKET;
    let last = Instant::from_nanos(late.as_nanos() - 1);
    f.handle_timeout(last);
    f.handle_datagram(last, 5, &request(Guid(0), k5));
    assert_eq!(f.slot_of(&5), Some(0), "taken until its next bucket ends");
    sent(&mut f);
    f.handle_datagram(late, 7, &request(Guid(0), k7));
    assert_eq!(sent(&mut f), [(7, "AttachChallenge")], "expired");
    assert_eq!((f.counters().bad_cookie, f.slot_of(&7)), (2, None));
    // The challenge's cookie is the one to use.
    f.handle_datagram(late, 7, &request(Guid(0), 0));
    let d = std::iter::from_fn(|| f.poll_transmit()).next().unwrap().1;
    let Ok(DatagramRepr {
        message: MessageRepr::AttachChallenge { cookie, .. },
        ..
    }) = DatagramRepr::parse(&d)
    else {
        panic!("{d:?}")
    };
    f.handle_datagram(late, 7, &request(Guid(0), cookie));
    assert_eq!(f.slot_of(&7), Some(1));
    assert_eq!(f.counters().no_cookie, 1);
}

// A host's first request carries no cookie; the challenge's comes back at once, and the second
// request attaches it: one challenge each, one round trip more.
#[test]
fn hosts_attach_through_the_challenge() {
    let mut net = Net::new(2, 44);
    assert!(net.run_until(2 * SEC, all_carrier), "hosts did not come up");
    for i in 0..2 {
        let c = net.peers[i].host.link().counters();
        assert_eq!((c.challenges, c.attach_requests), (1, 2), "host {i}: {c:?}");
    }
    let f = net.fabric.counters();
    assert_eq!((f.no_cookie, f.bad_cookie, f.attached), (2, 0, 2), "{f:?}");
}

// Over a lossy path: host 0's first challenge is lost (its retry brings another), host 1's
// request with the cookie is lost (its retry carries the cookie again): both attach.
#[test]
fn a_host_attaches_when_the_challenge_or_the_second_request_is_lost() {
    let mut net = Net::new(2, 45);
    let challenge_lost = Rc::new(Cell::new(false));
    let l = challenge_lost.clone();
    net.loss = Some(Box::new(move |to, d| {
        let hit = to == 0
            && !l.get()
            && matches!(
                DatagramRepr::parse(d).map(|r| r.message),
                Ok(MessageRepr::AttachChallenge { .. })
            );
        l.set(l.get() || hit);
        hit
    }));
    let request_lost = Rc::new(Cell::new(false));
    let l = request_lost.clone();
    net.loss_to_fabric = Some(Box::new(move |from, d| {
        let hit = from == 1
            && !l.get()
            && matches!(
                DatagramRepr::parse(d).map(|r| r.message),
                Ok(MessageRepr::AttachRequest { cookie, .. }) if cookie != 0
            );
        l.set(l.get() || hit);
        hit
    }));
    assert!(net.run_until(3 * SEC, all_carrier), "hosts did not come up");
    assert!(challenge_lost.get() && request_lost.get());
    let c0 = net.peers[0].host.link().counters();
    let c1 = net.peers[1].host.link().counters();
    assert_eq!((c0.challenges, c0.attach_requests), (1, 3), "{c0:?}");
    assert_eq!((c1.challenges, c1.attach_requests), (1, 3), "{c1:?}");
    assert!(net.ping_and_wait(0, addr(1), SEC), "0 -> 1");
}

/// `message` as the fabric's address would send it, in `session`.
fn from_fabric(session: u64, message: MessageRepr<'_>) -> Vec<u8> {
    DatagramRepr { session, message }.to_vec().unwrap()
}

// docs/UDP-FABRIC.md "Limits": while a host attaches, answers sent from the fabric's address
// without its attach's nonce (an off-path sender's, which did not see the request) are
// ignored and counted: a forged accept does not attach it (before the nonce it built a host
// with the forged identity), a forged challenge does not make it send a request, a forged
// reject is not reported; a reject without a nonce (to a Keepalive) is stale. The host then
// attaches to the real fabric.
#[test]
fn forged_answers_without_the_attachs_nonce_are_ignored() {
    let mut net = Net::new(2, 47);
    let hold = Rc::new(Cell::new(true));
    let h = hold.clone();
    net.loss = Some(Box::new(move |to, _| to == 1 && h.get()));
    assert!(net.run_until(2 * SEC, |n| n.carrier(0)), "host 0 came up");
    net.run_for(SEC / 2);
    let host = &net.peers[1].host;
    let nonce = host.link().nonce().expect("host 1 is attaching");
    let sent = net.to_fabric.iter().filter(|(_, from, _)| *from == 1);
    for (_, _, d) in sent {
        let m = DatagramRepr::parse(d).unwrap().message;
        assert!(
            matches!(m, MessageRepr::AttachRequest { nonce: n, .. } if n == nonce),
            "{m:?}"
        );
    }
    let c0 = host.link().counters();
    let mut rng = Rng::new(47);
    let forged = Guid(0xbad0);
    for _ in 0..5 {
        let wrong = rng.next_u64() | 1;
        assert_ne!(wrong, nonce);
        let accept = ipoib_wire::udp_fabric::AttachAccept {
            slot: 1,
            port: 1,
            timeout_ms: 3000,
            node_guid: forged,
            port_guids: vec![Guid(0xbad1)],
        };
        let now = net.now;
        let host = &mut net.peers[1].host;
        for d in [
            from_fabric(
                rng.next_u64(),
                MessageRepr::AttachAccept {
                    nonce: wrong,
                    accept,
                },
            ),
            from_fabric(
                0,
                MessageRepr::AttachChallenge {
                    cookie: rng.next_u64() | 1,
                    nonce: wrong,
                },
            ),
            from_fabric(
                0,
                MessageRepr::AttachReject {
                    reason: RejectReason::NoFreeSlot,
                    nonce: wrong,
                },
            ),
            from_fabric(
                0,
                MessageRepr::AttachReject {
                    reason: RejectReason::UnknownSession,
                    nonce: 0,
                },
            ),
        ] {
            host.handle_datagram(now, &d);
        }
        assert!(host.poll_transmit().is_none(), "no request at once");
        net.run_for(SEC / 10);
    }
    let host = &mut net.peers[1].host;
    let c = host.link().counters();
    assert!(!host.link().is_attached() && host.builds() == 0, "{c:?}");
    assert_eq!(host.poll_status(), None, "nothing reported");
    assert_eq!(
        (c.bad_nonce, c.stale - c0.stale, c.challenges),
        (15, 5, c0.challenges),
        "{c:?}"
    );
    hold.set(false);
    assert!(net.run_until(2 * SEC, |n| n.carrier(1)), "host 1 came up");
    let slot = net.fabric.slot_of(&1).unwrap();
    let identity = net.peers[1].host.identity().unwrap().node_guid;
    assert_eq!(identity, net.fabric.slot(slot).unwrap().node_guid());
    assert!(net.ping_and_wait(0, addr(1), SEC), "0 -> 1");
}

// The fabric's challenge, accept and reject echo the request's nonce, and a host takes each
// with its attach's nonce: two hosts for one slot, one attached through the challenge, the
// other rejected; a third attaches by an accept carrying its nonce, whoever sent it. A new
// attach draws a new nonce (the host's seed fixes them).
#[test]
fn answers_echo_the_requests_nonce_and_are_taken_with_it() {
    let mut f: FabricServer<u8> = FabricServer::build(remote::fabric_opts(1, 48)).unwrap();
    let t = Instant::ZERO;
    let mut hosts = [1u64, 2].map(|k| HostLink::new(t, remote::link_cfg(), [k, k]));
    let mut nonces = Vec::new();
    for (i, link) in hosts.iter_mut().enumerate() {
        let nonce = link.nonce().unwrap();
        nonces.push(nonce);
        link.handle_timeout(t);
        let mut answers = 0;
        // Host 0: request, challenge, request with the cookie, accept; host 1: rejected.
        for _ in 0..2 {
            let req = link.poll_transmit().unwrap();
            f.handle_datagram(t, i as u8, &req);
            let (to, d) = std::iter::from_fn(|| f.poll_transmit()).next().unwrap();
            assert_eq!(to, i as u8);
            let echoed = match DatagramRepr::parse(&d).unwrap().message {
                MessageRepr::AttachChallenge { nonce, .. }
                | MessageRepr::AttachAccept { nonce, .. }
                | MessageRepr::AttachReject { nonce, .. } => nonce,
                m => panic!("{m:?}"),
            };
            assert_eq!(echoed, nonce, "host {i}");
            link.handle_datagram(t, &d);
            answers += 1;
            std::iter::from_fn(|| f.poll_transmit()).count();
        }
        assert_eq!(answers, 2);
    }
    assert!(hosts[0].is_attached() && f.slot_of(&0) == Some(0));
    let events: Vec<_> = std::iter::from_fn(|| hosts[1].poll_event()).collect();
    assert_eq!(events, [HostLinkEvent::Rejected(RejectReason::NoFreeSlot)]);
    assert_ne!(nonces[0], nonces[1], "keys differ");
    assert_eq!(hosts[1].counters().bad_nonce, 0);
    // The right nonce is all an accept needs.
    let mut link = HostLink::new(t, remote::link_cfg(), [1, 1]);
    assert_eq!(link.nonce(), Some(nonces[0]), "the same key draws the same");
    let accept = ipoib_wire::udp_fabric::AttachAccept {
        slot: 1,
        port: 1,
        timeout_ms: 3000,
        node_guid: Guid(0x10),
        port_guids: vec![Guid(0x11)],
    };
    let m = MessageRepr::AttachAccept {
        nonce: nonces[0],
        accept,
    };
    link.handle_datagram(t, &from_fabric(7, m.clone()));
    assert_eq!(link.session(), Some(7));
    // Lost: the next attach has a new nonce, and the old one's accept is refused.
    let lost = t + remote::link_cfg().dead_after;
    link.handle_timeout(lost);
    assert!(link.nonce().is_some_and(|n| n != nonces[0]));
    link.handle_datagram(lost, &from_fabric(7, m));
    assert!(!link.is_attached());
    assert_eq!(link.counters().bad_nonce, 1);
}

// Protocol versions: the fabric answers a request of version 1 (no cookie; 20 bytes) with a
// reject "bad version" in version 1's header, which a host of that build reads as its own
// reject; a host of this version given that reject reports the fabric's version.
#[test]
fn the_other_version_is_told_and_reported() {
    let mut f: FabricServer<u8> = FabricServer::build(remote::fabric_opts(1, 46)).unwrap();
    let mut v1 = [0u8; 20];
    v1[..4].copy_from_slice(&[0x49, 0x42, 1, 1]);
    f.handle_datagram(Instant::ZERO, 3, &v1);
    let out: Vec<_> = std::iter::from_fn(|| f.poll_transmit()).collect();
    assert_eq!(out, [(3, version_reject(1).to_vec())]);
    assert_eq!(out[0].1[12], u8::from(RejectReason::BadVersion));
    let mut link = HostLink::new(Instant::ZERO, remote::link_cfg(), [1, 2]);
    link.handle_timeout(Instant::ZERO);
    link.handle_datagram(Instant::ZERO, &version_reject(1));
    assert_eq!(link.poll_event(), Some(HostLinkEvent::OtherVersion(1)));
    assert_eq!(link.counters().bad_version, 1);
}

// Only another version's AttachRequest is answered: a reject, or any other message, of a
// version not ours gets nothing, so that two fabrics (or a fabric and an echo service), one
// datagram forged between them, do not answer each other without end.
#[test]
fn another_versions_reject_or_other_message_is_not_answered() {
    let mut a: FabricServer<u8> = FabricServer::build(remote::fabric_opts(1, 46)).unwrap();
    let mut b: FabricServer<u8> = FabricServer::build(remote::fabric_opts(1, 47)).unwrap();
    for (version, msg_type) in [(9u8, 3u8), (1, 3), (9, 5), (1, 7)] {
        let mut d = [0u8; 20];
        d[..4].copy_from_slice(&[0x49, 0x42, version, msg_type]);
        a.handle_datagram(Instant::ZERO, 3, &d);
        assert_eq!(a.poll_transmit(), None, "version {version} type {msg_type}");
    }
    // A forged request of version 9 "from b" starts one answer, which b does not answer.
    let mut d = [0u8; 20];
    d[..4].copy_from_slice(&[0x49, 0x42, 9, 1]);
    a.handle_datagram(Instant::ZERO, 2, &d);
    let (to, answer) = a.poll_transmit().expect("a request is answered");
    assert_eq!((to, answer.clone()), (2, version_reject(9).to_vec()));
    b.handle_datagram(Instant::ZERO, 1, &answer);
    assert_eq!(b.poll_transmit(), None);
    assert_eq!((a.counters().bad_version, b.counters().bad_version), (5, 1));
}
