//! Service ID resolution (IBA 1 §12.6 Tables 119-120).

use super::*;
use ipoib_wire::cm::SidrStatus;
use ipoib_wire::QKey;

fn sidr_req(p: &mut Pair, service_id: u64) -> SidrId {
    let now = p.now;
    p.a.sidr_request(now, MadAddr::gsi(B_LID), service_id, 14, &[5, 6])
        .unwrap()
}

// IBA 1 §12.6 Tables 119-120: SIDR_REQ reaches the listener's user; its SIDR_REP carries the
// UD QPN and Q_Key back, with the request's ID and TID.
#[test]
fn sidr_resolves_a_ud_service() {
    let mut p = Pair::new(60);
    let id = sidr_req(&mut p, SID);
    while p.step() {}
    let CmEvent::SidrRequest {
        id: bid, req, from, ..
    } = p.eb[0].clone()
    else {
        panic!("{:?}", p.eb)
    };
    assert_eq!((req.service_id, from.lid), (SID, A_LID));
    assert_eq!(&req.private_data[..3], &[5, 6, 0]);
    assert_eq!(req.partition_key, PKey::DEFAULT);
    p.b.sidr_reply(bid, SidrStatus::Success, 0x4321, QKey(0x1111_2222), &[1])
        .unwrap();
    assert_eq!(
        p.b.sidr_reply(bid, SidrStatus::Success, 1, QKey(1), &[]),
        Err(CmError::Unknown)
    );
    while p.step() {}
    let CmEvent::SidrReply { id: got, rep } = &p.ea[0] else {
        panic!("{:?}", p.ea)
    };
    assert_eq!(*got, id);
    assert_eq!(
        (rep.status, rep.qpn, rep.qkey),
        (SidrStatus::Success, 0x4321, QKey(0x1111_2222))
    );
    assert_eq!(rep.service_id, SID);
    let tids: Vec<u64> = p
        .log
        .iter()
        .map(|(_, _, m)| header(&m.mad).transaction_id)
        .collect();
    assert_eq!(tids[0], tids[1]);
    assert_eq!((p.a.sidr_exchanges(), p.b.sidr_exchanges()), (0, 0));
}

// No listener: SIDR_REP status 1, "service ID not supported" (Linux `IB_SIDR_UNSUPPORTED`).
#[test]
fn sidr_without_listener_is_unsupported() {
    let mut p = Pair::new(61);
    sidr_req(&mut p, SID + 1);
    while p.step() {}
    let CmEvent::SidrReply { rep, .. } = &p.ea[0] else {
        panic!()
    };
    assert_eq!(rep.status, SidrStatus::Unsupported);
}

// IBA 1 §12.7: a lost SIDR_REQ is resent; a duplicate while our user thinks is dropped; when
// nobody answers, the requester times out and the responder forgets the request.
#[test]
fn sidr_loss_duplicates_and_timeouts() {
    let mut p = Pair::new(62);
    p.filter = drop_first(attr::SIDR_REQ, 1);
    let id = sidr_req(&mut p, SID);
    p.drive(Duration::from_secs(600));
    assert_eq!(p.sent(attr::SIDR_REQ).len(), 3, "3 resends reached B");
    assert_eq!(p.b.duplicates.get("SIDR_REQ"), Some(&2));
    assert_eq!(p.ea, [CmEvent::SidrTimedOut { id }]);
    assert_eq!(p.b.dropped.get("SIDR_REQ never answered"), Some(&1));
    p.settle();
    assert_eq!((p.a.sidr_exchanges(), p.b.sidr_exchanges()), (0, 0));
    // A SIDR_REP for no request is dropped.
    let mut rep = msg::blank_sidr_rep();
    rep.request_id = id.0;
    p.inject(
        B_LID,
        A_LID,
        msg::cm_mad(1, &CmMessage::SidrRep(rep)).to_vec(),
    );
    assert_eq!(p.a.dropped.get("SIDR_REP for no request"), Some(&1));
}

/// A SIDR_REQ for [`SID`] with `request_id`, as the port with `from` would send it.
fn sidr_req_mad(request_id: u32) -> Vec<u8> {
    let mut req = msg::blank_sidr_req();
    req.request_id = request_id;
    req.partition_key = PKey::DEFAULT;
    req.service_id = SID;
    msg::cm_mad(u64::from(request_id), &CmMessage::SidrReq(req)).to_vec()
}

// IBA 1 §12.6 Table 119: a SIDR_REQ waits for the listener's user, so the responder keeps a
// record of it; requests beyond `CmConfig::max_sidr_requests` (and beyond
// `max_sidr_requests_per_port` from one requester port) are dropped with a count, and keep no
// record: the requester resends after its wait (IBA 1 §12.7), as when a Linux responder cannot
// allocate for it. Requests a flood cannot then crowd out are still reported.
#[test]
fn sidr_requests_held_at_once_are_bounded() {
    let mut p = Pair::new(63);
    p.b = Cm::new(
        CmConfig {
            max_sidr_requests: 8,
            max_sidr_requests_per_port: 5,
            ..config(B_GUID)
        },
        Rng::new(64),
    );
    p.b.listen(SID, u64::MAX).unwrap();
    for k in 0..100 {
        p.inject(A_LID, B_LID, sidr_req_mad(1000 + k));
    }
    assert_eq!(p.b.sidr_exchanges(), 5, "one requester port: 5 at most");
    assert_eq!(p.b.dropped.get("SIDR_REQ beyond the limit"), Some(&95));
    // Another port still gets through, up to the agent's bound.
    for k in 0..10 {
        p.inject(3, B_LID, sidr_req_mad(2000 + k));
    }
    assert_eq!(p.b.sidr_exchanges(), 8);
    assert_eq!(p.b.dropped.get("SIDR_REQ beyond the limit"), Some(&102));
    let requests =
        p.eb.iter()
            .filter(|e| matches!(e, CmEvent::SidrRequest { .. }))
            .count();
    assert_eq!(requests, 8);
    // A duplicate of a held request is still a duplicate, not a new request beyond the bound.
    p.inject(A_LID, B_LID, sidr_req_mad(1000));
    assert_eq!(p.b.duplicates.get("SIDR_REQ"), Some(&1));
    assert_eq!(p.b.dropped.get("SIDR_REQ beyond the limit"), Some(&102));
}
