//! Service ID resolution (IBA 1 §12.11; SIDR_REQ and SIDR_REP, IBA 1 §12.6 Tables 119-120) on the
//! emulated subnet: host B offers a UD service on a service ID through its CM application, host
//! A's CM resolves it to B's QPN and Q_Key and sends a datagram there, which arrives; a service
//! nobody offers gets status 1 from B's agent; a SIDR_REQ lost on the link is resent until
//! answered. tshark reads the captured SIDR MADs as the same messages.

use ipoib_fabric::node::cm::{self, SidrOutcome};
use ipoib_fabric::node::subnet::Subnet;
use ipoib_fabric::testing::cm::{cm_app as app, cm_mads, drop_first_cm, gsi_over, num, pair};
use ipoib_fabric::testing::cm::{run_until, sendings, tshark, tshark_fields, tshark_malformed};
use ipoib_fabric::testing::cm::{with_host, CmMad, Pair, A, B};
use ipoib_fabric::testing::{received, send_ud, ud_qp};
use ipoib_fabric::testing::{seed, SeedGuard};
use ipoib_proto::cm::{iba_time, Cm, CmConfig, CmEvent, SidrId};
use ipoib_wire::cm::{attr, CmMessage, RejReason, SidrRepRepr, SidrStatus};
use ipoib_wire::mad::Method;
use ipoib_wire::QKey;
use std::time::Duration;

/// The UD service B offers.
const SID: u64 = 0x1000_0000_0001_0063;
/// A service ID nobody offers.
const UNKNOWN: u64 = 0x1000_0000_0001_0099;
/// A service ID B listens on for connections only.
const CONNECTED: u64 = 0x1000_0000_0001_0077;
const QKEY: QKey = QKey(0x0042_4242);

/// A's answer to `id`, once it has one.
fn answer(net: &Subnet, h: cm::CmHandle, id: SidrId) -> Option<SidrRepRepr> {
    match app(net, A, h).sidr(id)? {
        SidrOutcome::Answered { rep, .. } => Some(**rep),
        _ => None,
    }
}

/// A pair where B's CM application offers [`SID`] on a UD QP with [`QKEY`]; returns the QP and
/// its CQ.
fn offering(seed: u64) -> (Pair, u32, ipoib_fabric::hw::hca::CqId) {
    let mut p = pair(seed, |_, _, _| {});
    let (qpn, cq) = ud_qp(&mut p.net, B, QKEY, 0);
    let b = p.b;
    with_host(&mut p.net, B, |h, _| {
        cm::offer_ud(h, b, SID, u64::MAX, qpn, QKEY).unwrap()
    });
    (p, qpn, cq)
}

// IBA 1 §12.11, §12.6 Table 120: A's SIDR_REQ for the offered service is answered with status 0,
// the service's QPN and Q_Key and the service ID; one for a service nobody offers gets status 1
// ("service ID not supported") from B's agent without reaching its application, and one for a
// service B offers connections on only gets status 1 from B's application. A datagram to
// the returned QPN with the returned Q_Key reaches B's UD QP; one with another Q_Key does not
// (IBA 1 §10.2.4.1 Q_Key check). Both SIDR_REPs answer their SIDR_REQ's TID and Request ID.
#[test]
fn sidr_resolves_a_ud_service_and_a_datagram_reaches_it() {
    let s = seed(51);
    let _g = SeedGuard(s);
    let (
        Pair {
            mut net,
            a,
            b,
            path,
        },
        qpn_b,
        cq_b,
    ) = offering(s);
    with_host(&mut net, B, |h, _| {
        cm::listen(h, b, CONNECTED, u64::MAX).unwrap()
    });
    let to = gsi_over(&path);
    let plt = path.packet_life_time;
    let (known, unknown, connected) = with_host(&mut net, A, |h, now| {
        (
            cm::resolve(h, now, a, to, SID, plt).unwrap(),
            cm::resolve(h, now, a, to, UNKNOWN, plt).unwrap(),
            cm::resolve(h, now, a, to, CONNECTED, plt).unwrap(),
        )
    });
    assert_eq!(
        app(&net, A, a).sidr(known),
        Some(&SidrOutcome::Pending { to })
    );
    let answered = run_until(&mut net, (a, b), Duration::from_secs(1), |x, _| {
        [known, unknown, connected]
            .iter()
            .all(|id| matches!(x.sidr(*id), Some(SidrOutcome::Answered { .. })))
    });
    assert!(answered, "{:?}", app(&net, A, a).sidr(known));
    let rep = answer(&net, a, known).unwrap();
    assert_eq!(
        (rep.status, rep.qpn, rep.qkey, rep.service_id),
        (SidrStatus::Success, qpn_b, QKEY, SID)
    );
    let no = answer(&net, a, unknown).unwrap();
    assert_eq!(
        (no.status, no.service_id),
        (SidrStatus::Unsupported, UNKNOWN)
    );
    assert_eq!(u8::from(no.status), 1);
    let no = answer(&net, a, connected).unwrap();
    assert_eq!(
        (no.status, no.service_id, no.qpn),
        (SidrStatus::Unsupported, CONNECTED, 0)
    );
    // B's application heard the requests for its listeners only.
    let asked: Vec<u64> = app(&net, B, b)
        .log()
        .iter()
        .filter_map(|(_, e)| match e {
            CmEvent::SidrRequest { req, .. } => Some(req.service_id),
            _ => None,
        })
        .collect();
    assert_eq!(asked, [SID, CONNECTED]);
    for (i, h) in [(A, a), (B, b)] {
        let agent = net.host_device(i).agent::<Cm>(h.cm).unwrap();
        assert_eq!(agent.sidr_exchanges(), 0, "host {i} holds no exchange");
        assert!(app(&net, i, h).failures().is_empty());
    }

    // A datagram to the resolved QP with the resolved Q_Key arrives; a wrong Q_Key is dropped.
    let (qpn_a, _) = ud_qp(&mut net, A, QKey(0x11), 0);
    send_ud(
        &mut net,
        A,
        qpn_a,
        path.dlid,
        rep.qpn,
        rep.qkey,
        None,
        b"to the service",
    );
    send_ud(
        &mut net,
        A,
        qpn_a,
        path.dlid,
        rep.qpn,
        QKey(0x0042_4243),
        None,
        b"wrong qkey",
    );
    net.sim_mut().run_for(Duration::from_millis(1));
    let got = received(&mut net, B, cq_b);
    assert_eq!(got.len(), 1, "{got:?}");
    assert_eq!(
        (got[0].data.as_slice(), got[0].src_qp, got[0].slid),
        (&b"to the service"[..], qpn_a, net.lid(A))
    );

    // The capture: three SIDR_REQs from A, three SIDR_REPs from B, each answering its request.
    let pcap = net.sim_mut().take_capture().unwrap().into_bytes();
    let once = sendings(&cm_mads(&pcap));
    let names: Vec<u16> = once.iter().map(|m| m.attr).collect();
    assert_eq!(names.len(), 6, "{names:?}");
    let reqs: Vec<&CmMad> = once.iter().filter(|m| m.attr == attr::SIDR_REQ).collect();
    let reps: Vec<&CmMad> = once.iter().filter(|m| m.attr == attr::SIDR_REP).collect();
    assert_eq!((reqs.len(), reps.len()), (3, 3));
    for q in &reqs {
        assert_eq!((q.slid, q.dlid), (net.lid(A), net.lid(B)));
        let r = reps.iter().find(|r| r.local == q.local).expect("answered");
        assert_ne!(q.local, 0);
        assert_eq!(
            r.tid, q.tid,
            "IBA 1 §13.4.6.2: the reply has the request's TID"
        );
        assert_eq!((r.slid, r.dlid), (net.lid(B), net.lid(A)));
        let (CmMessage::SidrReq(req), CmMessage::SidrRep(rep)) = (q.msg, r.msg) else {
            panic!("{:?} {:?}", q.key(), r.key());
        };
        assert_eq!(rep.service_id, req.service_id);
        let want = if req.service_id == SID {
            (SidrStatus::Success, qpn_b, QKEY)
        } else {
            (SidrStatus::Unsupported, 0, QKey(0))
        };
        assert_eq!((rep.status, rep.qpn, rep.qkey), want);
    }
}

// IBA 1 §12.6 Table 108: a REQ for the UD service B offers is rejected with reason 8 (invalid
// service ID: the service takes no connections); A's QP goes to Error and B made none.
#[test]
fn req_for_a_ud_service_is_rejected() {
    let s = seed(54);
    let _g = SeedGuard(s);
    let (
        Pair {
            mut net,
            a,
            b,
            path,
        },
        _,
        _,
    ) = offering(s);
    let params = ipoib_proto::cm::ConnectParams::over_path(&path, 0, SID, 0, 1);
    let conn = with_host(&mut net, A, |h, now| cm::connect(h, now, a, params)).unwrap();
    let down = run_until(&mut net, (a, b), Duration::from_secs(1), |x, _| {
        x.connection(conn)
            .is_some_and(|c| c.state == cm::LinkState::Down)
    });
    assert!(down);
    let rejected = app(&net, A, a).log().iter().any(|(_, e)| {
        matches!(e, CmEvent::Rejected { reason: RejReason::InvalidServiceId, conn: c, .. } if *c == conn)
    });
    assert!(rejected, "{:?}", app(&net, A, a).log());
    assert_eq!(app(&net, B, b).connections().count(), 0, "B made no QP");
    assert!(app(&net, B, b).failures().is_empty());
}

// IBA 1 §12.11 and §12.7: the first SIDR_REQ is lost on its first link; A resends it (same TID,
// same Request ID) once its wait (B's CM response time plus two packet lifetimes) is over, B
// answers the resent one, and A has its answer. B's application heard the request once.
#[test]
fn lost_sidr_req_is_resent_until_answered() {
    let s = seed(52);
    let _g = SeedGuard(s);
    let (
        Pair {
            mut net,
            a,
            b,
            path,
        },
        qpn_b,
        _,
    ) = offering(s);
    net.sim_mut()
        .set_drop_filter(Some(drop_first_cm(attr::SIDR_REQ)));
    let to = gsi_over(&path);
    let id = with_host(&mut net, A, |h, now| {
        cm::resolve(h, now, a, to, SID, path.packet_life_time).unwrap()
    });
    let answered = run_until(&mut net, (a, b), Duration::from_secs(60), |x, _| {
        matches!(x.sidr(id), Some(SidrOutcome::Answered { .. }))
    });
    assert!(answered, "{:?}", app(&net, A, a).sidr(id));
    let rep = answer(&net, a, id).unwrap();
    assert_eq!(
        (rep.status, rep.qpn, rep.qkey),
        (SidrStatus::Success, qpn_b, QKEY)
    );
    let heard = app(&net, B, b)
        .log()
        .iter()
        .filter(|(_, e)| matches!(e, CmEvent::SidrRequest { .. }))
        .count();
    assert_eq!(heard, 1);

    let pcap = net.sim_mut().take_capture().unwrap().into_bytes();
    let all = cm_mads(&pcap);
    let reqs: Vec<&CmMad> = all.iter().filter(|m| m.attr == attr::SIDR_REQ).collect();
    // The lost one on A's link only, the resent one on both links.
    assert_eq!(
        reqs.len(),
        3,
        "{:?}",
        reqs.iter().map(|m| m.ts_ns).collect::<Vec<_>>()
    );
    assert!(
        reqs.iter().all(|r| r.key() == reqs[0].key()),
        "same TID and Request ID"
    );
    let wait = iba_time(CmConfig::new(Default::default()).response_timeout)
        + iba_time(path.packet_life_time) * 2;
    let gap = Duration::from_nanos(reqs[1].ts_ns - reqs[0].ts_ns);
    assert!(gap >= wait, "resent after {gap:?}, the wait is {wait:?}");
    assert!(
        gap < wait + Duration::from_millis(1),
        "resent after {gap:?}"
    );
    let reps = sendings(&all)
        .into_iter()
        .filter(|m| m.attr == attr::SIDR_REP)
        .count();
    assert_eq!(reps, 1, "one answer");
}

// tshark reads the captured SIDR exchange as CM MADs (class 0x07, method Send) with the
// attribute IDs and TIDs we sent, nothing malformed. (Debian's tshark 4.0 dissects no SIDR
// bodies, so the header is what it can check.)
#[test]
fn tshark_reads_the_captured_sidr_exchange() {
    let Some(tshark) = tshark() else {
        eprintln!("skipping tshark_reads_the_captured_sidr_exchange: tshark is not installed (Debian package `tshark`)");
        return;
    };
    let s = seed(53);
    let _g = SeedGuard(s);
    let (
        Pair {
            mut net,
            a,
            b,
            path,
        },
        _,
        _,
    ) = offering(s);
    let to = gsi_over(&path);
    let id = with_host(&mut net, A, |h, now| {
        cm::resolve(h, now, a, to, SID, path.packet_life_time).unwrap()
    });
    let answered = run_until(&mut net, (a, b), Duration::from_secs(1), |x, _| {
        matches!(x.sidr(id), Some(SidrOutcome::Answered { .. }))
    });
    assert!(answered);
    let pcap = net.sim_mut().take_capture().unwrap().into_bytes();
    let ours = cm_mads(&pcap);
    assert_eq!(ours.len(), 4, "SIDR_REQ and SIDR_REP on two links each");
    let file = std::env::temp_dir().join(format!("ipoib-sidr-{}-{s}.pcap", std::process::id()));
    std::fs::write(&file, &pcap).unwrap();
    let rows = tshark_fields(
        &tshark,
        &file,
        "infiniband.mad.mgmtclass == 0x07",
        &[
            "infiniband.mad.method",
            "infiniband.mad.attributeid",
            "infiniband.mad.transactionid",
        ],
    );
    let malformed = tshark_malformed(&tshark, &file);
    let _ = std::fs::remove_file(&file);
    assert!(malformed.is_empty(), "tshark flags frames {malformed:?}");
    let want: Vec<Vec<u64>> = ours
        .iter()
        .map(|m| vec![u64::from(u8::from(Method::Send)), u64::from(m.attr), m.tid])
        .collect();
    let shown: Vec<Vec<u64>> = rows
        .iter()
        .map(|r| r.iter().map(|f| num(f)).collect())
        .collect();
    assert_eq!(shown, want);
}
