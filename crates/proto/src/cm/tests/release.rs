//! Release (IBA 1 §12.9: DREQ, DREP, TimeWait) and stale connections (IBA 1 §12.9.8).

use super::*;
use ipoib_wire::cm::{RejReason, RespondedTo};

fn disconnected(ev: &[CmEvent]) -> Vec<(ConnId, bool)> {
    ev.iter()
        .filter_map(|e| match e {
            CmEvent::Disconnected { conn, by_peer, .. } => Some((*conn, *by_peer)),
            _ => None,
        })
        .collect()
}

// IBA 1 §12.9.8: after DREQ/DREP both sides wait in TimeWait; the QP may not be reused until it
// is over, then TimeWaitExit frees it.
#[test]
fn passive_side_disconnects_then_time_wait_frees_the_qp() {
    let mut p = Pair::new(50);
    let (ca, cb) = p.establish();
    p.b.disconnect(p.now, cb, &[7]).unwrap();
    assert_eq!(
        p.b.disconnect(p.now, cb, &[]),
        Err(CmError::WrongState(State::DreqSent))
    );
    while p.step() {}
    let t_down = p.now;
    assert_eq!(p.names()[3..], ["B:DREQ", "A:DREP"]);
    assert_eq!(disconnected(&p.ea), [(ca, true)]);
    assert_eq!(disconnected(&p.eb), [(cb, false)]);
    assert_eq!(
        (p.a.state(ca), p.b.state(cb)),
        (Some(State::TimeWait), Some(State::TimeWait))
    );
    assert_eq!(
        p.a.connect(p.now, params(A_LID, B_LID, A_QPN)),
        Err(CmError::QpInUse(A_QPN))
    );
    // A's TimeWait: its ACK timeout, two packet lifetimes (exponent 14) plus B's Target ACK Delay
    // (0) from the REP: exponent 15 (the REQ's Local ACK Timeout, 19, is B's).
    assert_eq!(p.a.poll_timeout(), Some(t_down + iba_time(15)));
    p.settle();
    assert!(p.ea.contains(&CmEvent::TimeWaitExit {
        conn: ca,
        qpn: A_QPN
    }));
    assert!(p.eb.contains(&CmEvent::TimeWaitExit {
        conn: cb,
        qpn: B_QPN
    }));
    assert!(
        p.a.connect(p.now, params(A_LID, B_LID, A_QPN)).is_ok(),
        "QP free again"
    );
}

// DREQs crossing: each side answers the other's DREQ; one Disconnected each.
#[test]
fn crossing_dreqs() {
    let mut p = Pair::new(51);
    let (ca, cb) = p.establish();
    p.a.disconnect(p.now, ca, &[]).unwrap();
    p.b.disconnect(p.now, cb, &[]).unwrap();
    p.settle();
    assert_eq!(disconnected(&p.ea), [(ca, true)]);
    assert_eq!(disconnected(&p.eb), [(cb, true)]);
    assert_eq!(p.a.duplicates.get("DREP"), Some(&1));
    assert_eq!((p.a.connections(), p.b.connections()), (0, 0));
}

// Linux `cm_issue_drep`: a DREQ for a connection we do not know still gets a DREP (the peer's
// DREP was lost and our TimeWait is over); a DREQ naming another QP is dropped.
#[test]
fn dreq_for_unknown_connection_and_wrong_qp() {
    let mut p = Pair::new(52);
    let (ca, cb) = p.establish();
    let mut dreq = msg::blank_dreq();
    dreq.local_comm_id = ca.0;
    dreq.remote_comm_id = cb.0;
    dreq.remote_qpn_eecn = B_QPN + 1;
    p.inject(
        A_LID,
        B_LID,
        msg::cm_mad(3, &CmMessage::Dreq(dreq)).to_vec(),
    );
    assert_eq!(p.b.dropped.get("DREQ for another QP"), Some(&1));
    assert_eq!(p.b.state(cb), Some(State::Established));
    dreq.remote_comm_id ^= 0x40;
    p.inject(
        A_LID,
        B_LID,
        msg::cm_mad(4, &CmMessage::Dreq(dreq)).to_vec(),
    );
    let out = p.b.poll_transmit(p.now).unwrap();
    assert_eq!(header(&out.mad).transaction_id, 4);
    let CmMessage::Drep(d) = parse(&out.mad) else {
        panic!()
    };
    assert_eq!((d.local_comm_id, d.remote_comm_id), (cb.0 ^ 0x40, ca.0));
    // A DREP nobody asked for is a duplicate or dropped.
    p.inject(B_LID, A_LID, out.mad);
    assert_eq!(p.a.dropped.get("DREP from another connection"), Some(&1));
}

// Linux `cm_dup_req_handler`: a REQ of a connection already in TimeWait gets a stale-connection
// REJ (reason 10).
#[test]
fn duplicate_req_in_time_wait_gets_stale_rej() {
    let mut p = Pair::new(53);
    let (ca, _) = p.establish();
    p.a.disconnect(p.now, ca, &[]).unwrap();
    while p.step() {}
    let req = p.sent(attr::REQ)[0].2.clone();
    p.inject(A_LID, B_LID, req);
    let CmMessage::Rej(r) = parse(&p.b.poll_transmit(p.now).unwrap().mad) else {
        panic!()
    };
    assert_eq!((r.reason, r.remote_comm_id), (RejReason::StaleConn, ca.0));
}

// IBA 1 §12.9.8.3.1: A restarts and connects again from the same QP while B still holds the old
// connection: B rejects the REQ as stale (reason 10) and releases the old connection with a
// DREQ; once A's TimeWait is over the retry succeeds.
#[test]
fn stale_req_rejected_and_old_connection_released() {
    let mut p = Pair::new(54);
    let (_, cb_old) = p.establish();
    p.a = Cm::new(config(A_GUID), Rng::new(999));
    p.ea.clear();
    let ca = p.connect();
    p.drive(Duration::from_secs(600));
    assert!(p.ea.iter().any(|e| matches!(e,
        CmEvent::Rejected { conn, reason: RejReason::StaleConn, .. } if *conn == ca)));
    assert!(
        disconnected(&p.eb).contains(&(cb_old, false)),
        "old connection released"
    );
    assert_eq!(
        p.a.duplicates.get("DREQ for unknown ID"),
        Some(&1),
        "the new A answers DREP"
    );
    assert_eq!(p.b.dropped.get("stale connection found"), Some(&1));
    p.settle();
    assert_eq!(p.b.connections(), 0);
    p.ea.clear();
    p.eb.clear();
    p.log.clear();
    let ca = p.connect();
    p.drive(Duration::from_secs(60));
    assert_eq!(established(&p.ea), Some(ca));
}

// IBA 1 §12.9.8.3.1 for the REP: B restarts and answers A's new REQ from the QP that A's older
// connection (B's REQ to A) still holds: A rejects the REP as stale and releases the old one.
#[test]
fn stale_rep_rejected() {
    let mut p = Pair::new(55);
    p.a.listen(SID, u64::MAX).unwrap();
    p.auto_a = Some(0x0a00);
    let mut prm = params(B_LID, A_LID, 0x300);
    prm.psn = 3;
    p.b.connect(p.now, prm).unwrap();
    p.drive(Duration::from_secs(60));
    let ca_old = established(&p.ea).unwrap();
    p.b = Cm::new(config(B_GUID), Rng::new(998));
    p.b.listen(SID, u64::MAX).unwrap();
    p.auto_b = Some(0x300);
    p.ea.clear();
    p.eb.clear();
    let ca = p.connect();
    p.drive(Duration::from_secs(600));
    let rej = p.sent(attr::REJ);
    let CmMessage::Rej(r) = parse(&rej[0].2) else {
        panic!()
    };
    assert_eq!(
        (r.reason, r.message_rejected),
        (RejReason::StaleConn, RespondedTo::Rep)
    );
    assert!(p.ea.iter().any(|e| matches!(e,
        CmEvent::Rejected { conn, reason: RejReason::StaleConn, .. } if *conn == ca)));
    assert!(p.eb.iter().any(|e| matches!(
        e,
        CmEvent::Rejected {
            reason: RejReason::StaleConn,
            ..
        }
    )));
    assert!(disconnected(&p.ea).contains(&(ca_old, false)));
    p.settle();
    assert_eq!((p.a.connections(), p.b.connections()), (0, 0));
}
