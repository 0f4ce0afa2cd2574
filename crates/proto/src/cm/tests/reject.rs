//! Every REJ path (IBA 1 §12.6 Table 108 reasons; docs/DEPLOYED.md "Linux rdma_cm" lists the ones
//! Linux uses: 8, 10, 28, 4), and LAP/APR answered as not supported.

use super::*;
use ipoib_wire::cm::{ApStatus, LapMsg, LapRepr, RejReason, RespondedTo, TransportServiceType};
use ipoib_wire::Mtu;

fn rej_sent_by(p: &Pair, lid: u16) -> Vec<ipoib_wire::cm::RejRepr> {
    p.sent(attr::REJ)
        .into_iter()
        .filter(|(_, f, _)| *f == lid)
        .map(|(_, _, m)| match parse(&m) {
            CmMessage::Rej(r) => r,
            _ => unreachable!(),
        })
        .collect()
}

// IBA 1 §12.6 Table 108 reason 28: our user rejects, with ARI and private data; a duplicate of
// the REQ gets the same REJ again.
#[test]
fn consumer_reject_and_duplicate_req() {
    let mut p = Pair::new(40);
    p.auto_b = None;
    let ca = p.connect();
    while p.step() {}
    let CmEvent::ConnectRequest { conn: cb, .. } = p.eb[0] else {
        panic!()
    };
    p.b.reject(p.now, cb, RejReason::ConsumerDefined, &[1, 2, 3], &[9; 4])
        .unwrap();
    while p.step() {}
    let CmEvent::Rejected {
        conn,
        reason,
        ari,
        private_data,
    } = &p.ea[0]
    else {
        panic!("{:?}", p.ea)
    };
    assert_eq!((*conn, *reason), (ca, RejReason::ConsumerDefined));
    assert_eq!(ari, &[1, 2, 3]);
    assert_eq!(&private_data[..5], &[9, 9, 9, 9, 0]);
    assert_eq!(p.b.state(cb), Some(State::TimeWait));
    let r = &rej_sent_by(&p, B_LID)[0];
    assert_eq!((r.local_comm_id, r.remote_comm_id), (cb.0, ca.0));
    assert_eq!(r.message_rejected, RespondedTo::Req);
    let req = p.sent(attr::REQ)[0].2.clone();
    p.inject(A_LID, B_LID, req);
    let again = p.b.poll_transmit(p.now).unwrap();
    assert_eq!(again.mad, p.sent(attr::REJ)[0].2, "the same REJ");
    assert_eq!(p.b.duplicates.get("REQ"), Some(&1));
    assert_eq!(
        p.b.reject(p.now, cb, RejReason::ConsumerDefined, &[], &[]),
        Err(CmError::WrongState(State::TimeWait))
    );
    assert_eq!(
        p.b.reject(p.now, cb, RejReason::ConsumerDefined, &[0; 73], &[]),
        Err(CmError::WrongState(State::TimeWait))
    );
    p.settle();
    assert_eq!((p.a.connections(), p.b.connections()), (0, 0));
}

// IBA 1 §12.6 Table 108 reason 8: no listener for the service ID; no record is kept.
#[test]
fn no_listener_rejects_with_invalid_service_id() {
    let mut p = Pair::new(41);
    p.b = Cm::new(config(B_GUID), Rng::new(5));
    let ca = p.connect();
    while p.step() {}
    let r = &rej_sent_by(&p, B_LID)[0];
    assert_eq!(r.reason, RejReason::InvalidServiceId);
    assert_eq!((r.local_comm_id, r.remote_comm_id), (0, ca.0));
    assert_eq!(r.message_rejected, RespondedTo::Req);
    assert_eq!(
        header(&p.sent(attr::REJ)[0].2).transaction_id,
        header(&p.sent(attr::REQ)[0].2).transaction_id,
        "answers the REQ's TID"
    );
    assert_eq!(p.b.connections(), 0);
    assert!(matches!(
        p.ea[0],
        CmEvent::Rejected {
            reason: RejReason::InvalidServiceId,
            ..
        }
    ));
}

/// A's REQ as B would receive it (a REQ that never reached B), with `edit` applied.
fn edited_req(raw: &[u8], edit: impl Fn(&mut ipoib_wire::cm::ReqRepr)) -> Vec<u8> {
    let CmMessage::Req(mut r) = parse(raw) else {
        panic!()
    };
    edit(&mut r);
    msg::cm_mad(header(raw).transaction_id, &CmMessage::Req(r)).to_vec()
}

// IBA 1 §12.6 Table 108 reasons 9 and 26: a transport we do not connect (RD) and an MTU code
// outside 1..=5 are rejected without a record.
#[test]
fn bad_transport_and_mtu_rejected() {
    let mut p = Pair::new(42);
    p.filter = drop_all(attr::REQ);
    p.connect();
    while p.step() {}
    let raw = p.lost[0].2.mad.clone();
    p.inject(
        A_LID,
        B_LID,
        edited_req(&raw, |r| {
            r.transport_service_type = TransportServiceType::Rd
        }),
    );
    p.inject(
        A_LID,
        B_LID,
        edited_req(&raw, |r| r.path_packet_payload_mtu = Mtu::Unknown(0)),
    );
    let reasons: Vec<RejReason> = std::iter::from_fn(|| p.b.poll_transmit(p.now))
        .map(|o| match parse(&o.mad) {
            CmMessage::Rej(r) => r.reason,
            m => panic!("{m:?}"),
        })
        .collect();
    assert_eq!(
        reasons,
        [RejReason::InvalidTransportType, RejReason::InvalidMtu]
    );
    assert_eq!(p.b.connections(), 0);
}

// Our own attempt withdrawn before the REP: a Timeout REJ with our CA GUID in the ARI (the peer
// cannot match anything else: it never told us its ID; Linux `cm_destroy_id` does the same),
// carrying the consumer's private data.
#[test]
fn active_side_withdraws() {
    let mut p = Pair::new(43);
    p.auto_b = None;
    let ca = p.connect();
    while p.step() {}
    p.a.disconnect(p.now, ca, b"withdrawn").unwrap();
    while p.step() {}
    let r = &rej_sent_by(&p, A_LID)[0];
    assert_eq!(
        (r.reason, r.message_rejected),
        (RejReason::Timeout, RespondedTo::Other)
    );
    assert_eq!(r.ari(), &A_GUID.0.to_be_bytes());
    assert_eq!(
        &r.private_data[..10],
        b"withdrawn\0",
        "the consumer's private data"
    );
    let CmEvent::ConnectRequest { conn: cb, .. } = p.eb[0] else {
        panic!()
    };
    assert!(
        matches!(&p.eb[1], CmEvent::Rejected { conn, private_data, .. }
        if *conn == cb && private_data.starts_with(b"withdrawn"))
    );
    assert_eq!(p.b.state(cb), Some(State::TimeWait));
    // A second copy of that REJ is a duplicate; a REJ for nobody is dropped.
    let rej = p.sent(attr::REJ)[0].2.clone();
    p.inject(A_LID, B_LID, rej.clone());
    assert_eq!(p.b.duplicates.get("REJ"), Some(&1));
    let mut other = rej;
    other[24] ^= 0xff; // the REJ's Local Communication ID
    p.inject(A_LID, B_LID, other);
    assert_eq!(p.b.dropped.get("REJ for unknown ID"), Some(&1));
}

// IBA 1 §12.6 Tables 115-116: we load no alternate path: a LAP gets an APR saying unsupported
// (or invalid communication ID when we have no such connection); an APR is dropped.
#[test]
fn lap_answered_unsupported() {
    let mut p = Pair::new(44);
    let (ca, cb) = p.establish();
    let mut lap = LapRepr::parse(&LapMsg::new_unchecked(&[0u8; 232][..])).unwrap();
    lap.local_comm_id = ca.0;
    lap.remote_comm_id = cb.0;
    lap.remote_qpn_eecn = B_QPN;
    p.inject(
        A_LID,
        B_LID,
        msg::cm_mad(0x77, &CmMessage::Lap(lap)).to_vec(),
    );
    let out = p.b.poll_transmit(p.now).unwrap();
    assert_eq!(header(&out.mad).transaction_id, 0x77);
    let CmMessage::Apr(apr) = parse(&out.mad) else {
        panic!()
    };
    assert_eq!(apr.ap_status, ApStatus::Unsupported);
    assert_eq!((apr.local_comm_id, apr.remote_comm_id), (cb.0, ca.0));
    lap.remote_comm_id ^= 1;
    p.inject(
        A_LID,
        B_LID,
        msg::cm_mad(0x78, &CmMessage::Lap(lap)).to_vec(),
    );
    let CmMessage::Apr(apr) = parse(&p.b.poll_transmit(p.now).unwrap().mad) else {
        panic!()
    };
    assert_eq!(apr.ap_status, ApStatus::InvalidCommId);
    p.inject(B_LID, A_LID, out.mad);
    assert_eq!(p.a.dropped.get("APR (we send no LAP)"), Some(&1));
    assert_eq!(
        p.b.state(cb),
        Some(State::Established),
        "a LAP changes nothing"
    );
}

// IBA 1 §12.6 Table 108 reason 3 ("no resources"): a REQ beyond the records one remote CA may
// hold is refused without a record, so a peer cannot fill the table with REQs whose timeouts
// (theirs to choose) keep each record for hours.
#[test]
fn reqs_beyond_the_per_ca_limit_get_no_resources() {
    let mut p = Pair::new(40);
    p.b = Cm::new(
        CmConfig {
            max_conns_per_ca: 2,
            ..config(B_GUID)
        },
        Rng::new(41),
    );
    p.b.listen(SID, u64::MAX).unwrap();
    p.auto_b = None;
    let now = p.now;
    let ids: Vec<ConnId> = (0..3)
        .map(|k| p.a.connect(now, params(A_LID, B_LID, A_QPN + k)).unwrap())
        .collect();
    p.drive(Duration::from_millis(10));
    let requests =
        p.eb.iter()
            .filter(|e| matches!(e, CmEvent::ConnectRequest { .. }))
            .count();
    assert_eq!(requests, 2, "two records for A's CA");
    assert_eq!(p.b.connections(), 2);
    assert!(p.ea.iter().any(|e| matches!(
        e,
        CmEvent::Rejected { conn, reason: RejReason::NoResources, .. } if *conn == ids[2]
    )));
    assert_eq!(
        p.b.dropped.get("REQ beyond the connection limit (REJ 3)"),
        Some(&1)
    );
}

/// A REQ for [`SID`] from CA `guid` with communication ID `k` and QPN `qpn`, RC, MTU 2048.
fn req_from(guid: Guid, k: u32, qpn: u32) -> Vec<u8> {
    let mut req = msg::blank_req();
    req.local_comm_id = k;
    req.service_id = SID;
    req.local_ca_guid = guid;
    req.local_qpn = qpn;
    req.transport_service_type = ipoib_wire::cm::TransportServiceType::Rc;
    req.path_packet_payload_mtu = ipoib_wire::Mtu::Mtu2048;
    req.partition_key = PKey::DEFAULT;
    req.max_cm_retries = 3;
    msg::cm_mad(u64::from(k), &CmMessage::Req(req)).to_vec()
}

// Thousands of records: a REQ is still matched against them by its sender (IBA 1 §12.9 duplicates,
// §12.9.8.3.1 stale connections, the per-CA bound of Table 108 reason 3) through the agent's
// indexes, not by a scan of every record, so a peer's flood of REQs (each from a CA GUID of its
// choosing) costs each REQ a lookup, as Linux's `cm_insert_remote_id` and `cm_insert_remote_qpn`
// trees do. Here: every duplicate is found, a REQ naming a held QP is stale, the per-CA bound
// holds, and nothing is left once every timer has run.
#[test]
fn req_lookups_scale_to_thousands_of_records() {
    const N: u32 = 4096;
    let mut p = Pair::new(45);
    p.b = Cm::new(
        CmConfig {
            max_conns_per_ca: 3,
            ..config(B_GUID)
        },
        Rng::new(46),
    );
    p.b.listen(SID, u64::MAX).unwrap();
    p.auto_b = None;
    let guid = |k: u32| Guid(0x0002_c903_0100_0000 + u64::from(k % (N / 2)));
    for k in 1..=N {
        p.inject(A_LID, B_LID, req_from(guid(k), k, k));
    }
    assert_eq!(
        p.b.connections(),
        N as usize,
        "two REQs from each of N/2 CAs"
    );
    for k in 1..=N {
        p.inject(A_LID, B_LID, req_from(guid(k), k, k));
    }
    assert_eq!(p.b.duplicates.get("REQ"), Some(&u64::from(N)));
    // A third REQ from one CA naming a QP another of its records holds: stale (REJ 10), with no
    // record; a third naming a new QP: the per-CA bound is 3, so it is taken.
    p.inject(A_LID, B_LID, req_from(guid(1), N + 1, N + 1));
    p.inject(A_LID, B_LID, req_from(guid(2), N + 2, 2));
    assert_eq!(p.b.connections(), N as usize + 1);
    assert_eq!(p.b.dropped.get("stale connection found"), Some(&1));
    p.inject(A_LID, B_LID, req_from(guid(1), N + 3, N + 3));
    assert_eq!(
        p.b.dropped.get("REQ beyond the connection limit (REJ 3)"),
        Some(&1)
    );
    for _ in 0..10 {
        let Some(t) = p.b.poll_timeout() else {
            break;
        };
        p.b.handle_timeout(t);
    }
    assert_eq!((p.b.connections(), p.b.timers()), (0, 0));
}
