//! Lost messages (IBA 1 §12.7: resend after the CM response time plus 2 × PacketLifeTime, at most
//! Max CM Retries times) and duplicates answered with the last answer (IBA 1 §12.9).

use super::*;
use ipoib_wire::cm::{RejReason, RespondedTo};

/// A's wait for one try: B's response time (exponent 20) plus two packet lifetimes (exponent 14).
fn a_wait() -> Duration {
    iba_time(20) + iba_time(14) * 2
}

/// B's wait for the RTU: A's response time (20) plus two lifetimes of 19 - 1 = 18 (the REQ's
/// ACK timeout read back, Linux `cm_format_paths_from_req`).
fn b_wait() -> Duration {
    iba_time(20) + iba_time(18) * 2
}

fn count<F: Fn(&CmEvent) -> bool>(ev: &[CmEvent], f: F) -> usize {
    ev.iter().filter(|e| f(e)).count()
}

// IBA 1 §12.7: a lost REQ is sent again, byte for byte, after the wait.
#[test]
fn lost_req_is_resent() {
    let mut p = Pair::new(20);
    p.filter = drop_first(attr::REQ, 1);
    p.establish();
    assert_eq!(p.lost.len(), 1);
    let reqs = p.sent(attr::REQ);
    assert_eq!(reqs.len(), 1);
    assert_eq!(reqs[0].0, Instant::ZERO + a_wait());
    assert_eq!(reqs[0].2, p.lost[0].2.mad, "the same REQ, same TID");
    assert_eq!(p.names(), ["A:REQ", "B:REP", "A:RTU"]);
}

// IBA 1 §12.9: a lost REP: the resent REQ is a duplicate in REP Sent, answered with the REP.
#[test]
fn lost_rep_duplicate_req_gets_rep_again() {
    let mut p = Pair::new(21);
    p.filter = drop_first(attr::REP, 1);
    p.establish();
    assert!(
        a_wait() < b_wait(),
        "A's REQ comes back before B's own resend"
    );
    assert_eq!(p.names(), ["A:REQ", "A:REQ", "B:REP", "A:RTU"]);
    assert_eq!(p.b.duplicates.get("REQ"), Some(&1));
    assert_eq!(p.sent(attr::REP)[0].2, p.lost[0].2.mad, "the same REP");
    assert_eq!(
        count(&p.eb, |e| matches!(e, CmEvent::ConnectRequest { .. })),
        1,
        "reported once"
    );
}

// IBA 1 §12.9: a lost RTU: B resends its REP; a duplicate REP in Established gets the RTU again
// (Linux `cm_dup_rep_handler`).
#[test]
fn lost_rtu_duplicate_rep_gets_rtu_again() {
    let mut p = Pair::new(22);
    p.filter = drop_first(attr::RTU, 1);
    let (ca, cb) = p.establish();
    assert_eq!(p.names(), ["A:REQ", "B:REP", "B:REP", "A:RTU"]);
    assert_eq!(p.sent(attr::REP)[1].0, Instant::ZERO + b_wait());
    assert_eq!(p.a.duplicates.get("REP"), Some(&1));
    assert_eq!(
        count(&p.ea, |e| matches!(e, CmEvent::Established { .. })),
        1
    );
    assert_eq!(
        (p.a.state(ca), p.b.state(cb)),
        (Some(State::Established), Some(State::Established))
    );
}

// IBA 1 §12.9 (communication established): the passive QP's first packet stands for a lost RTU.
#[test]
fn first_packet_establishes_without_rtu() {
    let mut p = Pair::new(23);
    p.filter = drop_all(attr::RTU);
    p.connect();
    p.drive(Duration::from_secs(1));
    let CmEvent::ConnectRequest { conn: cb, .. } = p.eb[0] else {
        panic!()
    };
    assert_eq!(p.b.state(cb), Some(State::RepSent));
    p.b.notify_established(cb).unwrap();
    assert_eq!(p.b.state(cb), Some(State::Established));
    assert!(matches!(
        p.eb.last(),
        None | Some(CmEvent::ConnectRequest { .. })
    ));
    p.collect();
    assert!(matches!(p.eb.last(), Some(CmEvent::Established { .. })));
    assert_eq!(p.b.poll_timeout(), None, "no REP resend once established");
}

// IBA 1 §12.7: a lost DREQ is resent; the DREP ends it on both sides.
#[test]
fn lost_dreq_is_resent() {
    let mut p = Pair::new(24);
    let (ca, cb) = p.establish();
    p.filter = drop_first(attr::DREQ, 1);
    let t0 = p.now;
    p.a.disconnect(t0, ca, &[1, 2]).unwrap();
    p.drive(Duration::from_secs(60));
    let dreqs = p.sent(attr::DREQ);
    assert_eq!(dreqs.len(), 1);
    assert_eq!(dreqs[0].0, t0 + a_wait());
    assert!(p.eb.contains(&CmEvent::Disconnected {
        conn: cb,
        by_peer: true,
        private_data: {
            let mut v = vec![0u8; 220];
            v[..2].copy_from_slice(&[1, 2]);
            v
        },
    }));
    assert!(p.ea.iter().any(|e| matches!(e,
        CmEvent::Disconnected { conn, by_peer: false, .. } if *conn == ca)));
}

// IBA 1 §12.9: a lost DREP: the resent DREQ reaches B in TimeWait, which answers with a DREP.
#[test]
fn lost_drep_duplicate_dreq_gets_drep_in_time_wait() {
    let mut p = Pair::new(25);
    // An ACK timeout of 2^23 × 4.096 µs (34 s) keeps B in TimeWait past A's resend.
    let mut prm = params(A_LID, B_LID, A_QPN);
    prm.path.local_ack_timeout = 23;
    let ca = p.a.connect(p.now, prm).unwrap();
    p.drive(Duration::from_secs(60));
    let cb = established(&p.eb).unwrap();
    p.filter = drop_first(attr::DREP, 1);
    p.a.disconnect(p.now, ca, &[]).unwrap();
    p.drive(Duration::from_secs(10));
    assert_eq!(p.sent(attr::DREQ).len(), 2);
    assert_eq!(p.b.state(cb), Some(State::TimeWait));
    assert_eq!(p.b.duplicates.get("DREQ"), Some(&1));
    assert_eq!(
        count(&p.ea, |e| matches!(e, CmEvent::Disconnected { .. })),
        1
    );
    assert_eq!(
        count(&p.eb, |e| matches!(e, CmEvent::Disconnected { .. })),
        1
    );
    p.settle();
    assert_eq!((p.a.connections(), p.b.connections()), (0, 0));
}

// IBA 1 §12.7: after Max CM Retries resends the REQ times out: TimedOut, a REJ with reason
// Timeout whose ARI is our CA GUID (IBA 1 §12.6 Table 108), then TimeWait.
#[test]
fn req_retries_spent_times_out() {
    let mut p = Pair::new(26);
    p.filter = drop_all(attr::REQ);
    let ca = p.connect();
    p.drive(Duration::from_secs(600));
    assert_eq!(p.lost.len(), 4, "the REQ and 3 resends");
    assert_eq!(
        p.ea,
        [
            CmEvent::TimedOut {
                conn: ca,
                unanswered: Unanswered::Req
            },
            CmEvent::TimeWaitExit {
                conn: ca,
                qpn: A_QPN
            },
        ]
    );
    let rej = p.sent(attr::REJ);
    let CmMessage::Rej(r) = parse(&rej[0].2) else {
        panic!()
    };
    assert_eq!(
        (r.reason, r.message_rejected),
        (RejReason::Timeout, RespondedTo::Req)
    );
    assert_eq!(r.ari(), &A_GUID.0.to_be_bytes());
    assert_eq!(p.b.dropped.get("REJ for unknown ID"), Some(&1));
    p.settle();
    assert_eq!(p.a.connections(), 0);
}

// IBA 1 §12.7: no RTU after every REP resend: B times out and its Timeout REJ reaches A.
#[test]
fn rep_retries_spent_times_out() {
    let mut p = Pair::new(27);
    p.filter = drop_all(attr::RTU);
    let ca = p.connect();
    p.drive(Duration::from_secs(600));
    assert_eq!(p.sent(attr::REP).len(), 4);
    assert!(p.eb.iter().any(|e| matches!(
        e,
        CmEvent::TimedOut {
            unanswered: Unanswered::Rep,
            ..
        }
    )));
    assert!(p.ea.iter().any(|e| matches!(e,
        CmEvent::Rejected { conn, reason: RejReason::Timeout, .. } if *conn == ca)));
    p.settle();
    assert_eq!((p.a.connections(), p.b.connections()), (0, 0));
}

// IBA 1 §12.7: no DREP after every DREQ resend: the connection is released all the same.
#[test]
fn dreq_retries_spent_releases() {
    let mut p = Pair::new(28);
    let (ca, cb) = p.establish();
    p.filter = drop_all(attr::DREQ);
    p.a.disconnect(p.now, ca, &[]).unwrap();
    p.drive(Duration::from_secs(600));
    assert_eq!(p.lost.len(), 4);
    assert!(p.ea.contains(&CmEvent::Disconnected {
        conn: ca,
        by_peer: false,
        private_data: vec![]
    }));
    assert!(p.ea.contains(&CmEvent::TimeWaitExit {
        conn: ca,
        qpn: A_QPN
    }));
    assert_eq!(p.b.state(cb), Some(State::Established), "B never heard");
}

/// Per connection of one side: how many Established, end (Rejected, TimedOut, Disconnected) and
/// TimeWaitExit events it got.
fn tally(ev: &[CmEvent]) -> BTreeMap<ConnId, (usize, usize, usize)> {
    let mut t: BTreeMap<ConnId, (usize, usize, usize)> = BTreeMap::new();
    for e in ev {
        match e {
            CmEvent::Established { conn, .. } => t.entry(*conn).or_default().0 += 1,
            CmEvent::Rejected { conn, .. }
            | CmEvent::TimedOut { conn, .. }
            | CmEvent::Disconnected { conn, .. } => t.entry(*conn).or_default().1 += 1,
            CmEvent::TimeWaitExit { conn, .. } => t.entry(*conn).or_default().2 += 1,
            _ => {}
        }
    }
    t
}

// With 20% of all MADs lost, crossing connections still come up on both sides (Linux's 15
// retries), each ends exactly once when its user disconnects, and nothing is left afterwards.
#[test]
fn lossy_pair_connects_and_releases() {
    for seed in 0..40u64 {
        let mut p = Pair::new(seed);
        p.a = Cm::new(CmConfig::new(A_GUID), Rng::new(seed).fork(11));
        p.b = Cm::new(CmConfig::new(B_GUID), Rng::new(seed).fork(12));
        p.a.listen(SID, u64::MAX).unwrap();
        p.b.listen(SID, u64::MAX).unwrap();
        p.auto_a = Some(0x0a00);
        let mut rng = Rng::new(seed ^ 0x5eed);
        p.filter = Box::new(move |_, _| rng.chance(0.2));
        let ca = p.connect();
        let mut prm = params(B_LID, A_LID, 0x0b00);
        prm.psn = 5;
        let cb = p.b.connect(p.now, prm).unwrap();
        p.drive(Duration::from_secs(3600));
        let (ta, tb) = (tally(&p.ea), tally(&p.eb));
        assert_eq!(ta.len(), 2, "seed {seed}: {:?}", p.ea);
        assert!(
            ta.values().chain(tb.values()).all(|t| t.0 == 1),
            "seed {seed}: all up"
        );
        // Each user releases its active connection; the peer's DREQ releases the other.
        let now = p.now;
        p.a.disconnect(now, ca, &[]).unwrap();
        p.b.disconnect(now, cb, &[]).unwrap();
        p.settle();
        let (ta, tb) = (tally(&p.ea), tally(&p.eb));
        for (c, t) in ta.iter().chain(tb.iter()) {
            assert_eq!(
                *t,
                (1, 1, 1),
                "seed {seed}, {c:?}: one Established, one end, one exit"
            );
        }
        assert_eq!(
            (p.a.connections(), p.b.connections()),
            (0, 0),
            "seed {seed}"
        );
        assert_eq!((p.a.timers(), p.b.timers()), (0, 0), "seed {seed}");
    }
}

// RFC 4755 §3.2 (the UD QPN in every REJ) needs the agent's own REJs to carry what the user set
// with `set_rej_private_data`: here the Timeout REJ after the REQ's retries are spent.
#[test]
fn agents_own_rej_carries_the_users_private_data() {
    let mut p = Pair::new(28);
    p.filter = drop_all(attr::REQ);
    let ca = p.connect();
    let data = [0u8, 0, 0, 0x48, 0, 0, 0xff, 0xf4];
    p.a.set_rej_private_data(ca, &data).unwrap();
    assert_eq!(
        p.a.set_rej_private_data(ca, &[0; 149]),
        Err(CmError::PrivateDataTooLong(149))
    );
    assert_eq!(
        p.a.set_rej_private_data(ConnId(ca.0 ^ 1), &data),
        Err(CmError::Unknown)
    );
    p.drive(Duration::from_secs(600));
    let rej = p.sent(attr::REJ);
    let CmMessage::Rej(r) = parse(&rej[0].2) else {
        panic!()
    };
    assert_eq!(r.reason, RejReason::Timeout);
    assert_eq!(&r.private_data[..8], &data);
    assert!(r.private_data[8..].iter().all(|&b| b == 0));
}
