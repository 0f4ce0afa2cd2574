//! MRA over the emulated subnet (IBA 1 §12.6 Table 107): host B's consumer is slow to answer a
//! REQ (`cm::set_accept_delay`), so B's agent sends an MRA and host A waits B's Service
//! Timeout instead of resending or giving up; the late accept brings the connection up. A gives
//! itself no retries here (Max CM Retries 0), so without the MRA it gives up at its normal REQ
//! timeout: losing the MRA on the link shows it.

use ipoib_fabric::hw::verbs::QpState;
use ipoib_fabric::node::cm::{self, CmHandle, LinkState};
use ipoib_fabric::node::subnet::Subnet;
use ipoib_fabric::testing::cm::{cm_app as app, cm_mads, drop_first_cm, num, pair, run_until};
use ipoib_fabric::testing::cm::{sendings, tshark, tshark_fields, tshark_malformed};
use ipoib_fabric::testing::cm::{with_host, CmMad, Pair, A, B};
use ipoib_fabric::testing::{seed, SeedGuard};
use ipoib_proto::cm::{iba_time, Cm, CmEvent, ConnId, ConnectParams, Unanswered};
use ipoib_wire::cm::{attr, CmMessage, RejReason, RespondedTo};
use ipoib_wire::mad::Method;
use std::time::Duration;

const SID: u64 = 0x1000_0000_0000_0071;
/// B's MRA Service Timeout: 2^22 × 4.096 µs, about 17 s.
const SERVICE_TIMEOUT: u8 = 22;

/// How late B's consumer answers: longer than A's normal REQ wait (checked below), shorter than
/// the MRA's wait.
const ACCEPT_DELAY: Duration = Duration::from_secs(12);

struct Slow {
    net: Subnet,
    a: CmHandle,
    b: CmHandle,
    conn_a: ConnId,
    /// A's normal wait for an answer to its REQ: B's CM response time plus the round trip
    /// (IBA 1 §12.7).
    req_wait: Duration,
}

/// A pair where A makes no CM retries and B's consumer answers REQs [`ACCEPT_DELAY`] late; A has
/// sent its REQ. `lose_mra` drops B's first MRA on its first link.
fn slow_consumer(seed: u64, lose_mra: bool) -> Slow {
    let Pair {
        mut net,
        a,
        b,
        path,
    } = pair(seed, |i, agent, _| {
        if i == A {
            agent.max_cm_retries = 0;
        } else {
            agent.mra_service_timeout = SERVICE_TIMEOUT;
        }
    });
    with_host(&mut net, B, |h, _| {
        cm::set_accept_delay(h, b, Some(ACCEPT_DELAY)).unwrap()
    });
    let params = ConnectParams {
        retry_count: 7,
        ..ConnectParams::over_path(&path, 0, SID, 0, 0x00_0abc)
    };
    let req_wait = iba_time(params.remote_response_timeout) + iba_time(params.packet_life_time) * 2;
    let mra_wait = iba_time(SERVICE_TIMEOUT) + iba_time(params.packet_life_time) * 2;
    assert!(req_wait < ACCEPT_DELAY && ACCEPT_DELAY < mra_wait);
    if lose_mra {
        net.sim_mut()
            .set_drop_filter(Some(drop_first_cm(attr::MRA)));
    }
    with_host(&mut net, B, |h, _| cm::listen(h, b, SID, u64::MAX).unwrap());
    let conn_a = with_host(&mut net, A, |h, now| cm::connect(h, now, a, params)).unwrap();
    Slow {
        net,
        a,
        b,
        conn_a,
        req_wait,
    }
}

/// The CM MADs sent (once per sending), as attribute IDs.
fn names(once: &[CmMad]) -> Vec<u16> {
    once.iter().map(|m| m.attr).collect()
}

// IBA 1 §12.6 Table 107, §12.7: B's consumer is slow; B's agent sends an MRA for the REQ before
// A's wait is over (half of it: A's REQ gave B its response time), A then waits B's Service
// Timeout: past its normal REQ timeout it neither resends nor gives up, though it has no retries
// left, and the late accept brings the connection up (REQ, MRA, REP, RTU, each once).
#[test]
fn slow_consumer_gets_an_mra_and_the_active_side_waits() {
    let s = seed(61);
    let _g = SeedGuard(s);
    let Slow {
        mut net,
        a,
        b,
        conn_a,
        req_wait,
    } = slow_consumer(s, false);
    let t0 = net.sim().now();
    // Past A's normal wait: nothing given up, B still has the REQ waiting for its consumer.
    assert!(req_wait + req_wait / 4 < ACCEPT_DELAY);
    net.sim_mut().run_for(req_wait + req_wait / 4);
    let la = app(&net, A, a).connection(conn_a).unwrap().clone();
    assert_eq!(la.state, LinkState::Connecting, "A still waits");
    assert_eq!(
        app(&net, B, b).deferred(),
        1,
        "B's consumer has not answered"
    );
    let up = run_until(&mut net, (a, b), ACCEPT_DELAY, |x, y| {
        let y_up = y.connections().any(|(_, c)| c.state == LinkState::Up);
        y_up && x
            .connection(conn_a)
            .is_some_and(|c| c.state == LinkState::Up)
    });
    assert!(up, "{:?}", app(&net, A, a).log());
    let up_at = app(&net, A, a)
        .log()
        .iter()
        .find(|(_, e)| matches!(e, CmEvent::Established { .. }))
        .map(|(t, _)| *t)
        .unwrap();
    assert!(
        up_at - t0 >= ACCEPT_DELAY,
        "up only after the consumer answered"
    );
    assert!(!app(&net, A, a)
        .log()
        .iter()
        .any(|(_, e)| matches!(e, CmEvent::TimedOut { .. })));
    let qpn = app(&net, A, a).connection(conn_a).unwrap().qpn;
    assert_eq!(
        net.host_device(A).hca().qp_info(qpn).map(|q| q.state),
        Some(QpState::Rts)
    );

    let pcap = net.sim_mut().take_capture().unwrap().into_bytes();
    let once = sendings(&cm_mads(&pcap));
    assert_eq!(
        names(&once),
        [attr::REQ, attr::MRA, attr::REP, attr::RTU],
        "no REQ resent"
    );
    let (req, mra) = (&once[0], &once[1]);
    let CmMessage::Mra(m) = mra.msg else {
        panic!("{:?}", mra.key());
    };
    assert_eq!(
        (m.message_mraed, m.service_timeout, m.remote_comm_id),
        (RespondedTo::Req, SERVICE_TIMEOUT, conn_a.0)
    );
    assert_eq!((mra.slid, mra.dlid), (net.lid(B), net.lid(A)));
    assert_eq!(
        mra.tid, req.tid,
        "IBA 1 §13.4.6.2: the MRA has the REQ's TID"
    );
    // B sent the MRA half of A's CM response time after the REQ, well before A's wait ended.
    let after = Duration::from_nanos(mra.ts_ns - req.ts_ns);
    assert!(after >= iba_time(20) / 2 && after < req_wait, "{after:?}");
}

// The same slow consumer, but B's MRA is lost on its first link: A, with no retries, gives up at
// its normal REQ timeout (TimedOut, REJ reason Timeout with its CA GUID), B's agent matches that
// REJ to its REQ and the consumer's late answer never comes: B made no QP.
#[test]
fn lost_mra_lets_the_active_side_give_up() {
    let s = seed(62);
    let _g = SeedGuard(s);
    let Slow {
        mut net,
        a,
        b,
        conn_a,
        req_wait,
    } = slow_consumer(s, true);
    let t0 = net.sim().now();
    let down = run_until(&mut net, (a, b), req_wait * 3, |x, _| {
        x.connection(conn_a)
            .is_some_and(|c| c.state == LinkState::Down)
    });
    assert!(down, "{:?}", app(&net, A, a).log());
    let (at, e) = app(&net, A, a)
        .log()
        .iter()
        .find(|(_, e)| matches!(e, CmEvent::TimedOut { .. }))
        .cloned()
        .unwrap();
    assert_eq!(
        e,
        CmEvent::TimedOut {
            conn: conn_a,
            unanswered: Unanswered::Req
        }
    );
    let waited = at - t0;
    assert!(
        waited >= req_wait && waited < req_wait + Duration::from_millis(1),
        "{waited:?}"
    );
    net.sim_mut().run_for(req_wait * 3);
    let rb = app(&net, B, b);
    assert!(rb.log().iter().any(|(_, e)| matches!(
        e,
        CmEvent::Rejected {
            reason: RejReason::Timeout,
            ..
        }
    )));
    assert_eq!(rb.deferred(), 0, "the late answer was dropped");
    assert_eq!(rb.connections().count(), 0, "B made no QP");
    assert!(rb.failures().is_empty(), "{:?}", rb.failures());
    assert_eq!(
        net.host_device(B).agent::<Cm>(b.cm).unwrap().connections(),
        0
    );

    let pcap = net.sim_mut().take_capture().unwrap().into_bytes();
    let all = cm_mads(&pcap);
    let mras = all.iter().filter(|m| m.attr == attr::MRA).count();
    assert_eq!(mras, 1, "the MRA only on B's link");
    assert_eq!(names(&sendings(&all)), [attr::REQ, attr::MRA, attr::REJ]);
}

// tshark reads the captured exchange with the MRA as CM MADs (class 0x07, method Send) with our
// attribute IDs and TIDs, nothing malformed. (Debian's tshark 4.0 dissects no MRA body.)
#[test]
fn tshark_reads_the_captured_mra() {
    let Some(tshark) = tshark() else {
        eprintln!("skipping tshark_reads_the_captured_mra: tshark is not installed (Debian package `tshark`)");
        return;
    };
    let s = seed(63);
    let _g = SeedGuard(s);
    let Slow {
        mut net,
        a,
        b,
        conn_a,
        ..
    } = slow_consumer(s, false);
    let up = run_until(&mut net, (a, b), ACCEPT_DELAY * 2, |x, _| {
        x.connection(conn_a)
            .is_some_and(|c| c.state == LinkState::Up)
    });
    assert!(up);
    net.sim_mut().run_for(Duration::from_millis(1));
    let pcap = net.sim_mut().take_capture().unwrap().into_bytes();
    let ours = cm_mads(&pcap);
    assert!(ours.iter().any(|m| m.attr == attr::MRA));
    let file = std::env::temp_dir().join(format!("ipoib-mra-{}-{s}.pcap", std::process::id()));
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
