//! The Communication Manager on the emulated subnet (IBA 1 chapter 12): two hosts connect an RC
//! QP through REQ, REP and RTU sent as real MADs on QP1 (the path from an SA PathRecord), the
//! hosts' RC QPs are moved through Init, RTR and RTS from the CM's events, messages cross both
//! ways, and DREQ/DREP release the connection (QPs to Error, then destroyed after TimeWait). The
//! capture holds the CM exchange; tshark (Debian's 4.0) reads it as the same messages.

use ipoib_fabric::hw::link::Fault;
use ipoib_fabric::hw::verbs::QpState;
use ipoib_fabric::node::cm::{self, CmApp, CmHandle, LinkState};
use ipoib_fabric::node::subnet::Subnet;
use ipoib_fabric::testing::cm::{cm_app as app, cm_mads, num, pair, run_until, sendings};
use ipoib_fabric::testing::cm::{tshark, tshark_fields as fields, tshark_malformed};
use ipoib_fabric::testing::cm::{with_host, Pair, A, B};
use ipoib_fabric::testing::{seed, seeds, SeedGuard};
use ipoib_proto::cm::{Cm, CmEvent, ConnId, ConnectParams};
use ipoib_wire::cm::{attr, RejReason};
use ipoib_wire::mad::Method;
use std::time::Duration;

const SID: u64 = 0x1000_0000_0000_0048;

struct Run {
    net: Subnet,
    a: CmHandle,
    b: CmHandle,
    conn_a: ConnId,
    conn_b: ConnId,
}

fn link(net: &Subnet, i: usize, h: CmHandle, c: ConnId) -> cm::Connection {
    app(net, i, h).connection(c).expect("a connection").clone()
}

fn qp_state(net: &Subnet, i: usize, qpn: u32) -> Option<QpState> {
    net.host_device(i).hca().qp_info(qpn).map(|q| q.state)
}

/// A 3-host subnet (host 0 runs the SM) with capture on and the CM on hosts A and B (B accepting
/// when `accept`); B listens on [`SID`]; returns A's connect parameters over its path to B.
fn setup(seed: u64, accept: bool) -> (Subnet, CmHandle, CmHandle, ConnectParams) {
    let Pair {
        mut net,
        a,
        b,
        path,
    } = pair(seed, |i, _, app| app.accept = accept || i == A);
    with_host(&mut net, B, |h, _| cm::listen(h, b, SID, u64::MAX).unwrap());
    let params = ConnectParams {
        retry_count: 7,
        ..ConnectParams::over_path(&path, 0, SID, 0, 0x00_1234)
    };
    (net, a, b, params)
}

/// [`setup`] with B accepting, `faults` on every link, and A connected to B; returns once both
/// sides are up.
fn connected(seed: u64, faults: Vec<Fault>) -> Run {
    let (mut net, a, b, params) = setup(seed, true);
    for l in net.built().links.clone() {
        net.sim_mut().set_faults(l, None, faults.clone());
    }
    let conn_a = with_host(&mut net, A, |h, now| cm::connect(h, now, a, params)).unwrap();
    let qpn_a = link(&net, A, a, conn_a).qpn;
    assert_eq!(
        qp_state(&net, A, qpn_a),
        Some(QpState::Init),
        "REQ sent with the QP in Init"
    );
    // Without loss the exchange takes microseconds; with loss, CM retries wait the peer's
    // response time (2^20 × 4.096 µs, about 4.3 s) each.
    let up = run_until(&mut net, (a, b), Duration::from_secs(120), |x, y| {
        let y_up = y.connections().any(|(_, c)| c.state == LinkState::Up);
        y_up && x
            .connection(conn_a)
            .is_some_and(|c| c.state == LinkState::Up)
    });
    assert!(up, "both sides Established");
    let conn_b = app(&net, B, b).connections().next().unwrap().0;
    Run {
        net,
        a,
        b,
        conn_a,
        conn_b,
    }
}

// IBA 1 §12.9: REQ, REP, RTU establish an RC connection between two hosts of the subnet, each
// QP programmed from the CM's QpProgram (Init, RTR, RTS); messages cross both ways; DREQ/DREP
// release it (IBA 1 §12.9 release diagram), the QPs go to Error and, after TimeWait (IBA 1
// §12.9.8), are destroyed. Every CM message went over QP1 as a MAD and is in the capture.
#[test]
fn two_hosts_connect_exchange_and_disconnect() {
    let s = seed(11);
    let _g = SeedGuard(s);
    let Run {
        mut net,
        a,
        b,
        conn_a,
        conn_b,
    } = connected(s, Vec::new());
    let la = link(&net, A, a, conn_a);
    let lb = link(&net, B, b, conn_b);
    let (qa, qb) = (la.qp.unwrap(), lb.qp.unwrap());
    // Each side's QP reaches the other: QPNs and PSNs mirror, the path runs between the two LIDs.
    assert_eq!((qa.local_qpn, qa.remote_qpn), (la.qpn, lb.qpn));
    assert_eq!((qb.local_qpn, qb.remote_qpn), (lb.qpn, la.qpn));
    // The REQ's starting PSN is what its sender receives first and its peer sends first (Linux).
    assert_eq!((qa.rq_psn, qb.sq_psn), (0x00_1234, 0x00_1234));
    assert_eq!(qa.sq_psn, qb.rq_psn);
    assert_eq!(
        (qa.path.remote_port_lid, qb.path.remote_port_lid),
        (net.lid(B), net.lid(A))
    );
    assert_eq!(qa.mtu, qb.mtu);
    for (i, q) in [(A, la.qpn), (B, lb.qpn)] {
        assert_eq!(
            qp_state(&net, i, q),
            Some(QpState::Rts),
            "host {i} QP in RTS"
        );
    }

    // Messages both ways over the RC QPs, larger than the path MTU too.
    let big: Vec<u8> = (0..10_000u32).map(|i| i as u8).collect();
    let from_a: Vec<Vec<u8>> = vec![b"hello B".to_vec(), big.clone(), vec![7; 3000]];
    let from_b: Vec<Vec<u8>> = vec![b"hello A".to_vec(), big];
    with_host(&mut net, A, |h, _| {
        for m in &from_a {
            cm::send(h, a, conn_a, m.clone()).unwrap();
        }
    });
    with_host(&mut net, B, |h, _| {
        for m in &from_b {
            cm::send(h, b, conn_b, m.clone()).unwrap();
        }
    });
    net.sim_mut().run_for(Duration::from_millis(5));
    let (la, lb) = (link(&net, A, a, conn_a), link(&net, B, b, conn_b));
    assert_eq!(lb.received, from_a, "B got A's messages in order, once");
    assert_eq!(la.received, from_b, "A got B's messages in order, once");
    assert_eq!((la.sent, lb.sent), (3, 2), "every send completed");
    assert!(la.errors.is_empty() && lb.errors.is_empty());

    // A releases: DREQ, DREP; both QPs to Error; a send is refused.
    with_host(&mut net, A, |h, now| cm::disconnect(h, now, a, conn_a)).unwrap();
    net.sim_mut().run_for(Duration::from_millis(5));
    for (i, h, c) in [(A, a, conn_a), (B, b, conn_b)] {
        let l = link(&net, i, h, c);
        assert_eq!(l.state, LinkState::Down, "host {i} released");
        assert_eq!(qp_state(&net, i, l.qpn), Some(QpState::Err));
    }
    let refused = with_host(&mut net, A, |h, _| cm::send(h, a, conn_a, vec![1]));
    assert_eq!(refused, Err(cm::CmHostError::NotUp));
    let by_peer = app(&net, B, b).log().iter().any(
        |(_, e)| matches!(e, CmEvent::Disconnected { conn, by_peer: true, .. } if *conn == conn_b),
    );
    assert!(by_peer, "B heard A's DREQ");

    // TimeWait (IBA 1 §12.9.8) ends; the QPs are destroyed and the agents hold nothing.
    net.sim_mut().run_for(Duration::from_secs(10));
    for (i, h, c) in [(A, a, conn_a), (B, b, conn_b)] {
        let l = link(&net, i, h, c);
        assert_eq!(l.state, LinkState::Closed, "host {i} out of TimeWait");
        assert_eq!(qp_state(&net, i, l.qpn), None, "host {i} QP destroyed");
        let agent = net.host_device(i).agent::<Cm>(h.cm).unwrap();
        assert_eq!(agent.connections(), 0);
        assert!(
            app(&net, i, h).failures().is_empty(),
            "{:?}",
            app(&net, i, h).failures()
        );
    }

    // The capture: each CM MAD once per link it crossed (host, switch, host), in protocol order,
    // between the two hosts' LIDs, with the IDs the agents hold.
    let pcap = net.sim_mut().take_capture().unwrap().into_bytes();
    let seen = cm_mads(&pcap);
    let once = sendings(&seen);
    assert_eq!(
        seen.len(),
        2 * once.len(),
        "each CM MAD on two links: {seen:?}"
    );
    let names: Vec<u16> = once.iter().map(|s| s.attr).collect();
    assert_eq!(
        names,
        [attr::REQ, attr::REP, attr::RTU, attr::DREQ, attr::DREP]
    );
    let (id_a, id_b) = (conn_a.0, conn_b.0);
    let (lid_a, lid_b) = (net.lid(A), net.lid(B));
    let ids = |m: &ipoib_fabric::testing::cm::CmMad| (m.local, m.remote, m.slid);
    assert_eq!(
        (once[0].local, once[0].slid, once[0].dlid),
        (id_a, lid_a, lid_b)
    );
    assert_eq!(ids(&once[1]), (id_b, id_a, lid_b));
    assert_eq!(ids(&once[2]), (id_a, id_b, lid_a));
    assert_eq!(ids(&once[3]), (id_a, id_b, lid_a));
    assert_eq!(ids(&once[4]), (id_b, id_a, lid_b));
    // IBA 1 §13.4.6.2: REP and RTU carry the REQ's TID and the DREP the DREQ's. A's DREQ has
    // A's TID for this connection, the REQ's (Linux `cm_form_tid`: the MAD agent's high half
    // above the local communication ID).
    assert_eq!(once[1].tid, once[0].tid);
    assert_eq!(once[2].tid, once[0].tid);
    assert_eq!(once[4].tid, once[3].tid);
    assert_eq!(once[3].tid, once[0].tid);
    assert_eq!(once[0].tid & 0xffff_ffff, u64::from(id_a));
}

// tshark, an independent dissector, reads the captured CM exchange as the same messages: the
// MAD header (class 0x07, method Send, attribute, TID) and the communication IDs of REQ, REP,
// RTU, DREQ and DREP, with nothing malformed.
#[test]
fn tshark_reads_the_captured_cm_exchange() {
    let Some(tshark) = tshark() else {
        eprintln!("skipping tshark_reads_the_captured_cm_exchange: tshark is not installed (Debian package `tshark`)");
        return;
    };
    let s = seed(12);
    let _g = SeedGuard(s);
    let Run {
        mut net, a, conn_a, ..
    } = connected(s, Vec::new());
    with_host(&mut net, A, |h, now| cm::disconnect(h, now, a, conn_a)).unwrap();
    net.sim_mut().run_for(Duration::from_millis(5));
    let pcap = net.sim_mut().take_capture().unwrap().into_bytes();
    let ours = cm_mads(&pcap);
    assert_eq!(ours.len(), 10, "five CM MADs on two links each");
    let path = std::env::temp_dir().join(format!("ipoib-cm-{}-{s}.pcap", std::process::id()));
    std::fs::write(&path, &pcap).unwrap();
    let rows = fields(
        &tshark,
        &path,
        "infiniband.mad.mgmtclass == 0x07",
        &[
            "infiniband.mad.method",
            "infiniband.mad.attributeid",
            "infiniband.mad.transactionid",
            "infiniband.cm.req",
            "infiniband.cm.rep",
            "infiniband.cm.rep.remotecommid",
            "infiniband.cm.rtu.localcommid",
            "infiniband.cm.rtu.remotecommid",
            "infiniband.cm.dreq.localcommid",
            "infiniband.cm.dreq.remotecommid",
            "infiniband.cm.drsp.localcommid",
            "infiniband.cm.drsp.remotecommid",
        ],
    );
    let malformed = tshark_malformed(&tshark, &path);
    let _ = std::fs::remove_file(&path);
    assert!(malformed.is_empty(), "tshark flags frames {malformed:?}");
    assert_eq!(rows.len(), ours.len(), "tshark sees every CM MAD: {rows:?}");
    for (row, m) in rows.iter().zip(&ours) {
        let (attr_id, tid, local, remote) = (m.attr, m.tid, m.local, m.remote);
        assert_eq!(num(&row[0]), u64::from(u8::from(Method::Send)), "{row:?}");
        assert_eq!(num(&row[1]), u64::from(attr_id), "{row:?}");
        assert_eq!(num(&row[2]), tid, "{row:?}");
        let shown: Vec<u64> = row[3..]
            .iter()
            .filter(|f| !f.is_empty())
            .map(|f| num(f))
            .collect();
        let want: Vec<u64> = match attr_id {
            attr::REQ => vec![u64::from(local)],
            _ => vec![u64::from(local), u64::from(remote)],
        };
        assert_eq!(shown, want, "attribute {attr_id:#x}: {row:?}");
    }
}

// With 10% loss, 5% duplication, reordering and corruption on every link, the CM's retries (IBA 1
// §12.7, duplicates answered as §12.9 says) still bring the connection up, the RC QPs programmed
// from it deliver every message once and in order, and DREQ/DREP still release it; the QPs are
// destroyed after TimeWait and neither agent keeps a record.
#[test]
fn lossy_links_still_connect_deliver_and_release() {
    let (mut cm_mads_sent, mut cm_duplicates) = (0, 0);
    for s in seeds([21, 22, 23]) {
        let _g = SeedGuard(s);
        let faults = vec![
            Fault::Drop(0.10),
            Fault::Duplicate(0.05),
            Fault::Reorder {
                p: 0.05,
                delay: Duration::from_micros(3),
            },
            Fault::Corrupt(0.01),
        ];
        let Run {
            mut net,
            a,
            b,
            conn_a,
            conn_b,
        } = connected(s, faults);
        let msgs: Vec<Vec<u8>> = (0..20u8)
            .map(|i| vec![i; 100 + 700 * usize::from(i)])
            .collect();
        with_host(&mut net, A, |h, _| {
            for m in &msgs {
                cm::send(h, a, conn_a, m.clone()).unwrap();
            }
        });
        let n = msgs.len();
        let delivered = run_until(&mut net, (a, b), Duration::from_secs(300), |x, y| {
            let got = y.connection(conn_b).map_or(0, |c| c.received.len());
            let done = x.connection(conn_a).map_or(0, |c| c.sent);
            got >= n && done >= n as u64
        });
        assert!(
            delivered,
            "seed {s}: every message delivered and acknowledged"
        );
        assert_eq!(link(&net, B, b, conn_b).received, msgs, "in order, once");
        with_host(&mut net, B, |h, now| cm::disconnect(h, now, b, conn_b)).unwrap();
        let closed = run_until(&mut net, (a, b), Duration::from_secs(300), |x, y| {
            let closed = |app: &CmApp, c| {
                app.connection(c)
                    .is_some_and(|l| l.state == LinkState::Closed)
            };
            closed(x, conn_a) && closed(y, conn_b)
        });
        assert!(
            closed,
            "seed {s}: released and out of TimeWait on both sides"
        );
        for (i, h) in [(A, a), (B, b)] {
            let agent = net.host_device(i).agent::<Cm>(h.cm).unwrap();
            assert_eq!(agent.connections(), 0);
            cm_duplicates += agent.duplicates.values().sum::<u64>();
            let f = app(&net, i, h).failures();
            assert!(f.is_empty(), "seed {s} host {i}: {f:?}");
        }
        let links = net.sim().links();
        let dropped: u64 = links
            .iter()
            .flat_map(|l| &l.dirs)
            .map(|d| d.stats.dropped)
            .sum();
        assert!(dropped > 0, "seed {s}: the faults were applied");
        let pcap = net.sim_mut().take_capture().unwrap().into_bytes();
        cm_mads_sent += cm_mads(&pcap).len();
    }
    // The faults reached the CM too, over the default seeds: more CM MADs than the 10 link
    // crossings of a clean exchange per run, and duplicates answered. (One replayed seed may
    // leave the CM untouched.)
    let runs = seeds([21, 22, 23]).len();
    if runs < 3 {
        return;
    }
    eprintln!("CM MADs captured {cm_mads_sent} over {runs} runs, duplicates {cm_duplicates}");
    assert!(
        cm_mads_sent > 10 * runs,
        "{cm_mads_sent} CM MADs in {runs} runs"
    );
}

// IBA 1 §12.6 Table 108: a consumer that refuses the REQ answers with REJ reason 28; the active
// side hears Rejected, its QP goes to Error and, after TimeWait, is destroyed; the passive side
// never made a QP.
#[test]
fn rejected_connection_errors_and_frees_the_qp() {
    let s = seed(31);
    let _g = SeedGuard(s);
    let (mut net, a, b, params) = setup(s, false);
    let conn_a = with_host(&mut net, A, |h, now| cm::connect(h, now, a, params)).unwrap();
    let qpn = link(&net, A, a, conn_a).qpn;
    let down = run_until(&mut net, (a, b), Duration::from_secs(1), |x, _| {
        x.connection(conn_a)
            .is_some_and(|c| c.state == LinkState::Down)
    });
    assert!(down, "A's connection rejected");
    assert_eq!(qp_state(&net, A, qpn), Some(QpState::Err));
    let rejected = app(&net, A, a).log().iter().any(|(_, e)| {
        matches!(e, CmEvent::Rejected { conn, reason: RejReason::ConsumerDefined, .. } if *conn == conn_a)
    });
    assert!(rejected, "{:?}", app(&net, A, a).log());
    assert_eq!(app(&net, B, b).connections().count(), 0, "B made no QP");
    net.sim_mut().run_for(Duration::from_secs(10));
    assert_eq!(link(&net, A, a, conn_a).state, LinkState::Closed);
    assert_eq!(qp_state(&net, A, qpn), None, "QP destroyed after TimeWait");
    let pcap = net.sim_mut().take_capture().unwrap().into_bytes();
    let once = sendings(&cm_mads(&pcap));
    let names: Vec<u16> = once.iter().map(|m| m.attr).collect();
    assert_eq!(names, [attr::REQ, attr::REJ]);
}
