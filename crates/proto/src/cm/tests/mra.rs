//! MRA either way (IBA 1 §12.6 Table 107): sent when our user is slow to accept, received to
//! wait the peer's Service Timeout instead of resending.

use super::*;
use ipoib_wire::cm::{RejReason, RespondedTo};

/// When B sends its MRA: half the time A gives it (REQ Remote CM Response Timeout 20).
fn mra_at() -> Instant {
    Instant::ZERO + iba_time(20) / 2
}

// IBA 1 §12.6 Table 107: a slow user gets an MRA sent for it before the REQ would be resent;
// A then waits instead of resending, and the late accept completes the connection.
#[test]
fn slow_accept_sends_mra() {
    let mut p = Pair::new(30);
    p.auto_b = None;
    let ca = p.connect();
    p.drive(iba_time(20));
    assert_eq!(p.names(), ["A:REQ", "B:MRA"]);
    assert_eq!(p.sent(attr::MRA)[0].0, mra_at());
    let CmMessage::Mra(m) = parse(&p.sent(attr::MRA)[0].2) else {
        panic!()
    };
    assert_eq!((m.message_mraed, m.service_timeout), (RespondedTo::Req, 20));
    assert_eq!(p.a.state(ca), Some(State::MraReqRcvd));
    let CmEvent::ConnectRequest { conn: cb, .. } = p.eb[0] else {
        panic!()
    };
    assert_eq!(p.b.state(cb), Some(State::MraReqSent));
    // Past A's normal wait, no REQ was resent.
    p.drive(iba_time(20) / 4);
    assert_eq!(p.sent(attr::REQ).len(), 1);
    p.b.accept(p.now, cb, B_QPN, &[]).unwrap();
    p.drive(Duration::from_secs(10));
    assert_eq!(p.names(), ["A:REQ", "B:MRA", "B:REP", "A:RTU"]);
    assert_eq!(established(&p.ea), Some(ca));
}

// IBA 1 §12.6 Table 107: after an MRA, A resends only when the Service Timeout plus the round
// trip is over; the duplicate REQ gets the MRA again (Linux `cm_dup_req_handler`). When A's
// retries are spent, its Timeout REJ (no Remote Communication ID: A never learnt B's) finds B's
// connection by the CA GUID in the ARI (Linux `cm_acquire_rejected_id`).
#[test]
fn mra_extends_wait_and_duplicate_req_gets_mra_again() {
    let mut p = Pair::new(31);
    p.auto_b = None;
    let ca = p.connect();
    p.drive(Duration::from_secs(600));
    let reqs = p.sent(attr::REQ);
    assert_eq!(reqs.len(), 4, "REQ and three resends");
    assert_eq!(reqs[1].0, mra_at() + iba_time(20) + iba_time(14) * 2);
    assert_eq!(
        p.sent(attr::MRA).len(),
        4,
        "one MRA, then one per duplicate REQ"
    );
    assert_eq!(p.b.duplicates.get("REQ"), Some(&3));
    assert!(p.ea.contains(&CmEvent::TimedOut {
        conn: ca,
        unanswered: Unanswered::Req
    }));
    let CmEvent::ConnectRequest { conn: cb, .. } = p.eb[0] else {
        panic!()
    };
    assert!(p.eb.iter().any(|e| matches!(e,
        CmEvent::Rejected { conn, reason: RejReason::Timeout, .. } if *conn == cb)));
    p.settle();
    assert_eq!((p.a.connections(), p.b.connections()), (0, 0));
}

// After our MRA the peer vanished: the REQ is given up (TimedOut, Mra) instead of kept forever.
#[test]
fn mra_sent_and_peer_gone_gives_up() {
    let mut p = Pair::new(32);
    p.auto_b = None;
    p.connect();
    while p.step() {}
    p.filter = Box::new(|from, _| from == A_LID);
    p.drive(Duration::from_secs(600));
    let CmEvent::ConnectRequest { conn: cb, .. } = p.eb[0] else {
        panic!()
    };
    assert!(p.eb.contains(&CmEvent::TimedOut {
        conn: cb,
        unanswered: Unanswered::Mra
    }));
    p.settle();
    assert_eq!(p.b.connections(), 0);
}

// IBA 1 §12.6 Table 107: an MRA for our REP delays the REP's resend by its Service Timeout plus
// the round trip; a second one is a duplicate; an MRA for the wrong message is dropped.
#[test]
fn mra_for_rep_delays_resend() {
    let mut p = Pair::new(33);
    p.filter = drop_all(attr::REP);
    let ca = p.connect();
    while p.step() {}
    let CmEvent::ConnectRequest { conn: cb, .. } = p.eb[0] else {
        panic!()
    };
    assert_eq!(p.b.state(cb), Some(State::RepSent));
    let mut mra = msg::blank_mra();
    mra.local_comm_id = ca.0;
    mra.remote_comm_id = cb.0;
    mra.message_mraed = RespondedTo::Req;
    p.inject(A_LID, B_LID, msg::cm_mad(1, &CmMessage::Mra(mra)).to_vec());
    assert_eq!(p.b.dropped.get("MRA in wrong state"), Some(&1));
    mra.message_mraed = RespondedTo::Rep;
    mra.service_timeout = 22;
    p.inject(A_LID, B_LID, msg::cm_mad(1, &CmMessage::Mra(mra)).to_vec());
    assert_eq!(p.b.state(cb), Some(State::MraRepRcvd));
    assert_eq!(
        p.b.poll_timeout(),
        Some(p.now + iba_time(22) + iba_time(18) * 2)
    );
    p.inject(A_LID, B_LID, msg::cm_mad(1, &CmMessage::Mra(mra)).to_vec());
    assert_eq!(p.b.duplicates.get("MRA"), Some(&1));
    mra.local_comm_id ^= 1;
    p.inject(A_LID, B_LID, msg::cm_mad(1, &CmMessage::Mra(mra)).to_vec());
    assert_eq!(p.b.dropped.get("MRA from another connection"), Some(&1));
}
