//! The fabric's configuration of its hosts over a lossy path (docs/UDP-FABRIC.md "Reliable
//! configuration"): PortConfig and ClientReregister are sequenced once a host says it takes them,
//! resent until acknowledged, taken once each; a host of an earlier build (one that never
//! acknowledges) gets them once, unsequenced, as before.

#[path = "common/remote.rs"]
mod remote;

use ipoib_wire::udp_fabric::{DatagramRepr, MessageRepr};
use remote::{addr, Net};
use std::cell::Cell;
use std::collections::BTreeSet;
use std::rc::Rc;
use std::time::Duration;

const SEC: Duration = Duration::from_secs(1);

fn all_carrier(net: &Net) -> bool {
    (0..net.peers.len()).all(|i| net.carrier(i))
}

/// A path that loses every unsequenced PortConfig and ClientReregister and the first copy of
/// each sequenced one (the fabric's resends get through).
fn first_copies_lost() -> remote::Loss {
    let mut seen = BTreeSet::new();
    Box::new(
        move |to, d| match DatagramRepr::parse(d).map(|r| r.message) {
            Ok(MessageRepr::PortConfig(_) | MessageRepr::ClientReregister { .. }) => true,
            Ok(
                MessageRepr::SeqPortConfig { seq, .. }
                | MessageRepr::SeqClientReregister { seq, .. },
            ) => seen.insert((to, seq)),
            _ => false,
        },
    )
}

// Every configuration the fabric sends loses its first copy: the hosts still get their LIDs and
// Active ports from the resends, join the broadcast group and ping each other. (With each sent
// once, as before, no host ever got a LID.)
#[test]
fn hosts_come_up_though_the_first_copy_of_every_configuration_is_lost() {
    let mut net = Net::new(2, 31);
    net.loss = Some(first_copies_lost());
    assert!(
        net.run_until(10 * SEC, all_carrier),
        "hosts did not come up"
    );
    assert!(net.ping_and_wait(0, addr(1), SEC), "0 -> 1");
    assert!(net.ping_and_wait(1, addr(0), SEC), "1 -> 0");
    let f = net.fabric.counters();
    assert_eq!(f.sequenced_sessions, 2, "{f:?}");
    assert!(f.control_resent > 0, "{f:?}");
    assert_eq!(f.control_dropped, 0, "{f:?}");
    assert_eq!(f.unexpected, 0, "{f:?}");
    for i in 0..2 {
        let c = net.peers[i].host.link().counters();
        assert!(c.port_configs >= 1, "host {i}: {c:?}");
        let h = &net.peers[i].host;
        let port = h.identity().unwrap().port;
        let lid = h.host().unwrap().hca().port(port).unwrap().config().lid;
        assert_eq!(
            lid,
            net.fabric.slot(i).unwrap().lid(),
            "host {i}: the SM's LID"
        );
        assert_eq!(c.duplicates, 0, "host {i}: no acknowledgement lost: {c:?}");
        assert_eq!(net.fabric.unacked(i), Some(0), "host {i}: all acknowledged");
    }
}

// A host whose acknowledgements never reach the fabric, as a host of an earlier build that does
// not send them: the fabric sends it each configuration once, unsequenced (types 8 and 9), as
// before, and the host comes up. Its ControlAck 0 goes with the accept, then with keepalives
// 1, 2, 4, 8, ...: an earlier fabric, which counts each as unexpected, gets few of them.
#[test]
fn a_host_that_never_acknowledges_gets_each_configuration_once_as_before() {
    let mut net = Net::new(2, 32);
    for p in &mut net.peers {
        p.tamper = Some(Box::new(|d: &[u8]| {
            let ack = matches!(
                DatagramRepr::parse(d).map(|r| r.message),
                Ok(MessageRepr::ControlAck { .. })
            );
            ack.then(|| vec![0; 4])
        }));
    }
    let sequenced = Rc::new(Cell::new(0));
    let s = sequenced.clone();
    net.loss = Some(Box::new(move |_, d| {
        if matches!(
            DatagramRepr::parse(d).map(|r| r.message),
            Ok(MessageRepr::SeqPortConfig { .. } | MessageRepr::SeqClientReregister { .. })
        ) {
            s.set(s.get() + 1);
        }
        false
    }));
    assert!(net.run_until(2 * SEC, all_carrier), "hosts did not come up");
    net.run_for(6 * SEC);
    assert!(net.ping_and_wait(0, addr(1), SEC), "0 -> 1");
    let f = net.fabric.counters();
    assert_eq!((f.sequenced_sessions, f.control_resent), (0, 0), "{f:?}");
    assert_eq!(sequenced.get(), 0, "nothing sequenced sent");
    let c = net.peers[0].host.link().counters();
    assert!(c.keepalives >= 30, "{c:?}");
    // The accept's, then keepalives 1, 2, 4, 8, 16 (and 32 if reached).
    assert!((6..=7).contains(&c.control_acks), "{c:?}");
    let other = net.peers[1].host.link().counters().control_acks;
    assert_eq!(
        f.malformed,
        c.control_acks + other,
        "each ControlAck garbled"
    );
}

// A host that hears nothing from the fabric for its `dead_after` while the fabric still hears
// it attaches again and is given its session again (a repeated request gets the same accept,
// docs/UDP-FABRIC.md "Protocol"): the numbering goes on where it was, the host takes what the
// fabric sends after the accept, and nothing is left waiting.
#[test]
fn a_host_given_its_session_again_goes_on_with_its_numbers() {
    let mut net = Net::new(2, 33);
    assert!(net.run_until(2 * SEC, all_carrier), "hosts did not come up");
    let deaf = Rc::new(Cell::new(true));
    let d = deaf.clone();
    net.loss = Some(Box::new(move |to, _| to == 1 && d.get()));
    assert!(
        net.run_until(2 * SEC, |n| !n.peers[1].host.link().is_attached()),
        "the host noticed"
    );
    let taken = net.peers[1].host.link().counters().port_configs;
    deaf.set(false);
    assert!(
        net.run_until(2 * SEC, |n| n.peers[1].host.link().is_attached()),
        "attached again"
    );
    assert!(
        net.fabric.counters().accepts_resent >= 1,
        "the same session"
    );
    assert_eq!(net.fabric.counters().timed_out, 0);
    net.run_for(2 * SEC);
    assert_eq!(net.fabric.unacked(1), Some(0), "nothing left waiting");
    let c = net.peers[1].host.link().counters();
    assert!(
        c.port_configs > taken,
        "the configuration after the accept: {c:?}"
    );
    assert!(net.carrier(1), "up again");
    assert!(net.ping_and_wait(0, addr(1), SEC), "0 -> 1");
}

// A host process that ends and is started again at once from the same address (the same UDP
// port) while the fabric still holds the old one's session: its request carries no hint, so
// the fabric gives it a session of its own (docs/UDP-FABRIC.md "Reliable configuration").
// Given the old one's, numbered where the old process left it, the new process dropped every
// number as early and never got its configuration.
#[test]
fn a_new_host_process_at_the_same_address_gets_its_configuration() {
    let mut net = Net::new(2, 34);
    assert!(net.run_until(2 * SEC, all_carrier), "hosts did not come up");
    let old = net.peers[1].host.link().session();
    let f0 = net.fabric.counters();
    let now = net.now;
    net.peers[1] = remote::make_host(1, now, 9_999);
    let up = net.run_until(5 * SEC, |n| n.carrier(1));
    let c = net.peers[1].host.link().counters();
    let f = net.fabric.counters();
    assert!(up, "the new process never came up: {c:?} {f:?}");
    assert_ne!(
        net.peers[1].host.link().session(),
        old,
        "a session of its own"
    );
    assert_eq!(c.out_of_order, 0, "{c:?}");
    assert_eq!(c.challenges, 1, "after the cookie's round trip: {c:?}");
    assert_eq!(f.timed_out, 0, "the slot kept: {f:?}");
    // A session begun (`attached`), not an accept sent again for a lost one.
    assert_eq!(
        (f.attached, f.accepts_resent),
        (f0.attached + 1, f0.accepts_resent),
        "{f:?}"
    );
    assert!(net.ping_and_wait(0, addr(1), SEC), "0 -> 1");
}

// The other way to a request without a hint in a sequenced session: the process's own first
// request, late (sent again before its accept came, which came late). It carries no cookie, so
// the fabric answers it with a challenge alone, which the attached host ignores (counted as
// stale): its session goes on (docs/UDP-FABRIC.md "Protocol"). Before the cookie, the fabric gave
// the session a new id and the host, answered UnknownSession on its next keepalive, attached
// again.
#[test]
fn a_late_first_request_of_a_live_host_costs_it_nothing() {
    let mut net = Net::new(2, 35);
    assert!(net.run_until(2 * SEC, all_carrier), "hosts did not come up");
    let session = net.peers[1].host.link().session();
    let stale = net.peers[1].host.link().counters().stale;
    let now = net.now;
    net.fabric.handle_datagram(now, 1, &request(0));
    net.run_for(2 * SEC);
    let c = net.peers[1].host.link().counters();
    assert_eq!((c.lost, net.peers[1].host.link().session()), (0, session));
    assert_eq!(c.stale, stale + 1, "the challenge ignored: {c:?}");
    assert!(net.carrier(1), "still up");
    assert!(net.ping_and_wait(0, addr(1), SEC), "0 -> 1");
}

// The same with the request that carried the challenge's cookie, late within the cookie's
// lifetime (10 to 20 s): the fabric takes it as a new process's and gives the session a new id;
// the host is answered UnknownSession on its next keepalive and attaches again, with its hint:
// it comes back, configured.
#[test]
fn a_late_request_with_its_cookie_costs_a_live_host_one_attach_again() {
    let mut net = Net::new(2, 35);
    assert!(net.run_until(2 * SEC, all_carrier), "hosts did not come up");
    let cookie = net.fabric.cookie_for(&1);
    let now = net.now;
    net.fabric.handle_datagram(now, 1, &request(cookie));
    assert!(
        net.run_until(2 * SEC, |n| n.peers[1].host.link().counters().lost == 1),
        "the host was told its session is gone"
    );
    assert!(net.run_until(2 * SEC, |n| n.carrier(1)), "up again");
    net.run_for(SEC);
    assert_eq!(net.fabric.unacked(1), Some(0), "nothing left waiting");
    assert!(net.carrier(1), "still up");
    assert!(net.ping_and_wait(0, addr(1), SEC), "0 -> 1");
}

/// An AttachRequest without a hint, with `cookie`.
fn request(cookie: u64) -> Vec<u8> {
    DatagramRepr {
        session: 0,
        message: MessageRepr::AttachRequest {
            hint: ipoib_wire::Guid(0),
            cookie,
            nonce: 1,
        },
    }
    .to_vec()
    .unwrap()
}

// A host cut off one way (its datagrams reach the fabric, the fabric's are lost) loses the
// fabric and sends AttachRequests with its hint, each answered with the accept and its port's
// configuration. Numbered anew each time, those waited without end (300 after 30 s at this
// harness's 100 ms retry; 4,096 after about half an hour at `ipoib attach`'s 500 ms, all resent
// every 1.6 s, and every change after them dropped). An equal configuration already waiting is
// not numbered again: what waits stays a handful, and the host, reached again, comes back up
// taking a few copies, not hundreds (docs/UDP-FABRIC.md "Reliable configuration"). The path
// spares the fabric's AttachChallenges: a path that loses them too answers the host's requests
// with nothing it hears, so the fabric's session times out
// (`a_host_cut_off_one_way_entirely_loses_its_session_and_comes_back`).
#[test]
fn a_host_cut_off_one_way_does_not_pile_up_configurations() {
    let mut net = Net::new(2, 36);
    assert!(net.run_until(2 * SEC, all_carrier), "hosts did not come up");
    let taken = net.peers[1].host.link().counters().port_configs;
    let deaf = Rc::new(Cell::new(true));
    let d = deaf.clone();
    let challenge = |d: &[u8]| {
        matches!(
            DatagramRepr::parse(d).map(|r| r.message),
            Ok(MessageRepr::AttachChallenge { .. })
        )
    };
    net.loss = Some(Box::new(move |to, dg| to == 1 && d.get() && !challenge(dg)));
    net.run_for(30 * SEC);
    let c = net.peers[1].host.link().counters();
    assert!(c.attach_requests > 200, "{c:?}");
    // The cookie expires within the 30 s (`COOKIE_BUCKET`): the fabric challenges again.
    assert!(c.challenges >= 2, "{c:?}");
    let waiting = net.fabric.unacked(1).unwrap();
    assert!(waiting <= 2, "{waiting} configurations waiting");
    assert_eq!(net.fabric.counters().timed_out, 0, "the session kept");
    deaf.set(false);
    assert!(
        net.run_until(2 * SEC, |n| n.carrier(1)),
        "up again when reached"
    );
    net.run_for(SEC);
    assert_eq!(net.fabric.unacked(1), Some(0), "nothing left waiting");
    let c = net.peers[1].host.link().counters();
    assert!(c.port_configs - taken <= 4, "{c:?}");
    assert!(net.ping_and_wait(0, addr(1), SEC), "0 -> 1");
    assert!(net.ping_and_wait(1, addr(0), SEC), "1 -> 0");
}

// A host cut off one way with nothing of the fabric's reaching it: its requests after the loss
// carry no cookie and are answered with challenges it never hears, which keep nothing at the
// fabric, so the session ends at the fabric's timeout. Reached again, the host attaches through
// the challenge, with its hint: the same slot, and it talks again.
#[test]
fn a_host_cut_off_one_way_entirely_loses_its_session_and_comes_back() {
    let mut net = Net::new(2, 37);
    assert!(net.run_until(2 * SEC, all_carrier), "hosts did not come up");
    let slot = net.fabric.slot_of(&1);
    let deaf = Rc::new(Cell::new(true));
    let d = deaf.clone();
    net.loss = Some(Box::new(move |to, _| to == 1 && d.get()));
    net.run_for(5 * SEC);
    let f = net.fabric.counters();
    assert_eq!((f.timed_out, net.fabric.slot_of(&1)), (1, None), "{f:?}");
    deaf.set(false);
    assert!(net.run_until(2 * SEC, |n| n.carrier(1)), "up again");
    assert_eq!(net.fabric.slot_of(&1), slot, "its slot again");
    assert!(net.ping_and_wait(0, addr(1), SEC), "0 -> 1");
}
