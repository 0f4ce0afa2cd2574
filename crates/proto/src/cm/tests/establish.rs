//! Establishment: REQ, REP, RTU (IBA 1 §12.9 active and passive diagrams), what each side must
//! program into its QP, listeners, communication IDs, ClassPortInfo, and crossing REQs.

use super::*;
use ipoib_wire::cm::{RejReason, TransportServiceType};
use ipoib_wire::mad::{ClassPortInfoRepr, MadStatus, Method, MgmtClass, MAD_LEN};
use ipoib_wire::Mtu;

// IBA 1 §12.9: REQ, REP, RTU; both sides Established with mirrored QP attributes.
#[test]
fn req_rep_rtu_establishes_rc() {
    let mut p = Pair::new(1);
    let (ca, cb) = p.establish();
    assert_eq!(p.names(), ["A:REQ", "B:REP", "A:RTU"]);
    let CmEvent::ConnectRequest { req, from, .. } = &p.eb[0] else {
        panic!("B first hears the REQ: {:?}", p.eb);
    };
    assert_eq!(req.service_id, SID);
    assert_eq!(req.local_qpn, A_QPN);
    assert_eq!(req.local_ca_guid, A_GUID);
    assert_eq!(&req.private_data[..8], &[0, 0, 0, 0x48, 0, 0, 0xff, 0xf4]);
    assert_eq!(from.lid, A_LID);
    // docs/DEPLOYED.md "Linux IPoIB": the REQ parameters Linux uses.
    assert_eq!(req.responder_resources, 4);
    assert_eq!(req.remote_cm_response_timeout, 20);
    assert_eq!(req.local_cm_response_timeout, 20);
    assert_eq!((req.retry_count, req.rnr_retry_count), (0, 0));
    let qa = match &p.ea[0] {
        CmEvent::Established {
            conn,
            qp,
            private_data,
        } => {
            assert_eq!(*conn, ca);
            assert_eq!(&private_data[..8], &[0xbb; 8], "REP private data");
            *qp
        }
        e => panic!("A: {e:?}"),
    };
    let qb = match p.eb.last() {
        Some(CmEvent::Established { conn, qp, .. }) => {
            assert_eq!(*conn, cb);
            *qp
        }
        e => panic!("B: {e:?}"),
    };
    assert_eq!((qa.local_qpn, qa.remote_qpn), (A_QPN, B_QPN));
    assert_eq!((qb.local_qpn, qb.remote_qpn), (B_QPN, A_QPN));
    // A REQ's or REP's starting PSN is the PSN its sender expects to receive (Linux
    // `ib_send_cm_req`, `cm_req_handler`): A's 0x1234 starts B's sends and A's receive queue.
    assert_eq!(qa.rq_psn, 0x1234, "A receives from its own starting PSN");
    assert_eq!(qb.sq_psn, 0x1234, "B sends from A's starting PSN");
    assert_eq!(qa.sq_psn, qb.rq_psn, "B's starting PSN starts A's sends");
    assert_eq!((qa.mtu, qb.mtu), (Mtu::Mtu2048, Mtu::Mtu2048));
    assert_eq!(qa.transport, TransportServiceType::Rc);
    assert_eq!(
        qb.path.local_port_lid, B_LID,
        "B sees the path from its side"
    );
    assert_eq!(qb.path.remote_port_lid, A_LID);
    assert_eq!(qb.path.local_ack_timeout, 19);
    // Each side's read depth is the other's responder resources: A serves 4 reads, B issues 4.
    assert_eq!((qa.max_dest_rd_atomic, qb.max_rd_atomic), (4, 4));
    assert_eq!((qa.max_rd_atomic, qb.max_dest_rd_atomic), (0, 0));
    assert_eq!(p.a.state(ca), Some(State::Established));
    assert_eq!(p.b.state(cb), Some(State::Established));
    assert_eq!(p.a.poll_timeout(), None, "Established holds no timer");
    let info = p.b.info(cb).unwrap();
    assert!(!info.active);
    assert_eq!(info.service_id, SID);
    assert_eq!(info.remote_comm_id, ca.0);
}

// IBA 1 §9.7.6.1.3, §12.6 Table 110: the REP's Target ACK Delay is the passive CA's; the active
// side's QP waits two packet lifetimes plus it for an ACK (Linux `cm_rep_handler`), whatever the
// REQ's Local ACK Timeout said; the passive side keeps the REQ's.
#[test]
fn active_ack_timeout_takes_the_reps_target_ack_delay() {
    for (delay, expected) in [(0, 15), (15, 16), (20, 20)] {
        let mut p = Pair::new(3);
        p.b = Cm::new(
            CmConfig {
                ca_ack_delay: delay,
                ..config(B_GUID)
            },
            Rng::new(4),
        );
        p.b.listen(SID, u64::MAX).unwrap();
        p.establish();
        let CmMessage::Rep(rep) = parse(&p.sent(attr::REP)[0].2) else {
            panic!("a REP");
        };
        assert_eq!(rep.target_ack_delay, delay);
        let qp = |ev: &[CmEvent]| {
            ev.iter().find_map(|e| match e {
                CmEvent::Established { qp, .. } => Some(*qp),
                _ => None,
            })
        };
        // params(): PacketLifeTime 14, the REQ's Local ACK Timeout 19.
        let qa = qp(&p.ea).expect("A established");
        assert_eq!(qa.path.local_ack_timeout, expected, "delay {delay}");
        assert_eq!(qa.path.local_ack_timeout, path::ack_timeout(14, delay));
        let qb = qp(&p.eb).expect("B established");
        assert_eq!(qb.path.local_ack_timeout, 19, "B keeps the REQ's");
    }
}

// IBA 1 §12.6 Table 106: the REQ's TID is echoed by the REP and RTU of the exchange.
#[test]
fn one_transaction_id_per_exchange() {
    let mut p = Pair::new(2);
    p.establish();
    let tids: Vec<u64> = p
        .log
        .iter()
        .map(|(_, _, m)| header(&m.mad).transaction_id)
        .collect();
    assert_eq!(tids.len(), 3);
    assert!(tids.iter().all(|t| *t == tids[0]), "{tids:x?}");
    for (_, _, m) in &p.log {
        let h = header(&m.mad);
        assert_eq!(h.mgmt_class, MgmtClass::ComMgt);
        assert_eq!(h.class_version, 2);
        assert_eq!(h.method, Method::Send);
        assert_eq!(m.mad.len(), MAD_LEN);
        assert_eq!(m.to.qpn, 1, "CM MADs go to QP1");
    }
}

// RFC 4755 §2.2 allows UC; the CM sets up UC like RC (IBA 1 §12.6 Table 106 transport type).
#[test]
fn uc_connection() {
    let mut p = Pair::new(3);
    let mut prm = params(A_LID, B_LID, A_QPN);
    prm.transport = TransportServiceType::Uc;
    p.a.connect(p.now, prm).unwrap();
    p.drive(Duration::from_secs(60));
    let Some(CmEvent::Established { qp, .. }) = p.eb.last() else {
        panic!("{:?}", p.eb);
    };
    assert_eq!(qp.transport, TransportServiceType::Uc);
}

// Invariant: local communication IDs start at a seeded random value and skip IDs still held.
#[test]
fn communication_ids_random_and_never_reused_while_held() {
    let a1 = Pair::new(10).connect();
    let a2 = Pair::new(11).connect();
    assert_ne!(a1, a2, "the seed picks the first ID");
    assert_eq!(Pair::new(10).connect(), a1, "same seed, same ID");

    let mut p = Pair::new(12);
    let (ca, _) = p.establish();
    p.a.disconnect(p.now, ca, &[]).unwrap();
    p.drive(Duration::from_millis(1));
    assert_eq!(p.a.state(ca), Some(State::TimeWait));
    // Force the counter back onto the ID in TimeWait: it must be skipped.
    p.a.next_comm_id = ca.0;
    let mut prm = params(A_LID, B_LID, A_QPN + 1);
    prm.psn = 1;
    let c2 = p.a.connect(p.now, prm).unwrap();
    assert_ne!(c2, ca);
    assert_eq!(c2.0, ca.0.wrapping_add(1));
}

// Listening by service ID with a mask (Linux `ib_cm_listen`); overlapping ranges refused.
#[test]
fn listen_with_mask() {
    let mut p = Pair::new(4);
    p.b = Cm::new(config(B_GUID), Rng::new(40));
    let l =
        p.b.listen(0x1000_0000_0000_0000, 0xff00_0000_0000_0000)
            .unwrap();
    assert_eq!(
        p.b.listen(SID, u64::MAX),
        Err(CmError::ServiceIdInUse),
        "inside the masked range"
    );
    assert!(p.b.listen(0x2000_0000_0000_0001, u64::MAX).is_ok());
    p.establish();
    let CmEvent::ConnectRequest { listen, .. } = p.eb[0] else {
        panic!()
    };
    assert_eq!(listen, l);
    p.b.unlisten(l).unwrap();
    assert_eq!(p.b.unlisten(l), Err(CmError::Unknown));
    let mut prm = params(A_LID, B_LID, A_QPN + 7);
    prm.psn = 9;
    let c = p.a.connect(p.now, prm).unwrap();
    p.drive(Duration::from_secs(60));
    assert!(p.ea.iter().any(|e| matches!(e,
        CmEvent::Rejected { conn, reason: RejReason::InvalidServiceId, .. } if *conn == c)));
}

fn get_mad(method: Method, attribute_id: u16) -> Vec<u8> {
    let mut b = vec![0u8; MAD_LEN];
    MadHeaderRepr {
        base_version: 1,
        mgmt_class: MgmtClass::ComMgt,
        class_version: 2,
        method,
        status: MadStatus::SUCCESS,
        class_specific: 0,
        transaction_id: 0x55,
        attribute_id,
        attribute_modifier: 0,
    }
    .emit(&mut b);
    b
}

// IBA 1 §13.4.8.1: ClassPortInfo of the CM class answered; other requests refused (§13.4.7).
#[test]
fn class_port_info_of_the_cm_class() {
    let mut p = Pair::new(5);
    p.inject(A_LID, B_LID, get_mad(Method::Get, attr::CLASS_PORT_INFO));
    let out = p.b.poll_transmit(p.now).unwrap();
    assert_eq!(out.to.lid, A_LID);
    let h = header(&out.mad);
    assert_eq!(
        (h.method, h.status, h.transaction_id),
        (Method::GetResp, MadStatus::SUCCESS, 0x55)
    );
    let cpi = ClassPortInfoRepr::parse(&out.mad[24..]).unwrap();
    assert_eq!((cpi.base_version, cpi.class_version), (1, 2));
    assert_eq!(cpi.resp_time_value, 20);
    p.inject(A_LID, B_LID, get_mad(Method::Set, attr::CLASS_PORT_INFO));
    let h = header(&p.b.poll_transmit(p.now).unwrap().mad);
    assert_eq!(h.status, MadStatus::METHOD_UNSUPPORTED);
    p.inject(A_LID, B_LID, get_mad(Method::Get, attr::REQ));
    let h = header(&p.b.poll_transmit(p.now).unwrap().mad);
    assert_eq!(h.status, MadStatus::METHOD_ATTR_UNSUPPORTED);
    // Responses and other classes are dropped, not answered.
    p.inject(
        A_LID,
        B_LID,
        get_mad(Method::GetResp, attr::CLASS_PORT_INFO),
    );
    let mut other = get_mad(Method::Get, attr::CLASS_PORT_INFO);
    other[1] = 3;
    p.inject(A_LID, B_LID, other);
    assert!(p.b.poll_transmit(p.now).is_none());
    assert_eq!(p.b.dropped.get("response MAD"), Some(&1));
    assert_eq!(p.b.dropped.get("not a CM MAD"), Some(&1));
}

// The CM allows a passive and an active connection between the same pair at once (RFC 4755
// §3.2 CM-14 and Linux's one connection per direction; the RFC 4755 §3.3 crossing rule is
// connected mode's business, not the CM's).
#[test]
fn crossing_reqs_make_two_connections() {
    let mut p = Pair::new(6);
    p.a.listen(SID, u64::MAX).unwrap();
    p.auto_a = Some(0x0a00);
    let ca = p.connect();
    let mut prm = params(B_LID, A_LID, 0x0b00);
    prm.psn = 0x77;
    let cb = p.b.connect(p.now, prm).unwrap();
    p.drive(Duration::from_secs(60));
    let up = |ev: &[CmEvent]| {
        ev.iter()
            .filter(|e| matches!(e, CmEvent::Established { .. }))
            .count()
    };
    assert_eq!((up(&p.ea), up(&p.eb)), (2, 2));
    assert_eq!(p.a.connections(), 2);
    assert_eq!(p.a.state(ca), Some(State::Established));
    assert_eq!(p.b.state(cb), Some(State::Established));
    assert_eq!(p.a.dropped.get("stale connection found"), None);
}

// Commands check their arguments and the state.
#[test]
fn commands_refuse_bad_arguments() {
    let mut p = Pair::new(7);
    let now = p.now;
    let mut prm = params(A_LID, B_LID, 0);
    assert_eq!(
        p.a.connect(now, prm.clone()),
        Err(CmError::Invalid("QPN must be 1..2^24"))
    );
    prm.qpn = 5;
    prm.mtu = Mtu::Unknown(6);
    assert_eq!(
        p.a.connect(now, prm.clone()),
        Err(CmError::Invalid("undefined MTU code"))
    );
    prm.mtu = Mtu::Mtu2048;
    // IBA 1 §10.9.3: P_Keys 0x0000 and 0x8000 match nothing.
    for bad in [0x0000, 0x8000] {
        prm.pkey = PKey(bad);
        assert_eq!(
            p.a.connect(now, prm.clone()),
            Err(CmError::Invalid("invalid P_Key"))
        );
    }
    prm.pkey = PKey(0x7fff); // a limited member may connect to a full one
                             // IBA 1 §4.1: multicast, permissive and reserved LIDs end no connection.
    for bad in [0xc000, 0xffff, 0] {
        let mut q = prm.clone();
        q.path.remote_port_lid = bad;
        assert_eq!(
            p.a.connect(now, q),
            Err(CmError::Invalid("path LIDs must be unicast"))
        );
    }
    assert_eq!(p.a.connections(), 0, "nothing refused was kept");
    assert!(p.a.poll_transmit(now).is_none(), "nothing refused was sent");
    prm.private_data = vec![0; 93];
    assert_eq!(
        p.a.connect(now, prm.clone()),
        Err(CmError::PrivateDataTooLong(93))
    );
    prm.private_data.clear();
    prm.transport = TransportServiceType::Rd;
    assert!(matches!(
        p.a.connect(now, prm.clone()),
        Err(CmError::Invalid(_))
    ));
    prm.transport = TransportServiceType::Rc;
    let c = p.a.connect(now, prm.clone()).unwrap();
    assert_eq!(p.a.connect(now, prm), Err(CmError::QpInUse(5)));
    assert_eq!(
        p.a.accept(now, c, 9, &[]),
        Err(CmError::WrongState(State::ReqSent))
    );
    assert_eq!(
        p.a.accept(now, ConnId(c.0 ^ 1), 9, &[]),
        Err(CmError::Unknown)
    );
    assert_eq!(
        p.a.notify_established(c),
        Err(CmError::WrongState(State::ReqSent))
    );
}
