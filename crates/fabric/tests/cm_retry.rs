//! CM retries on the emulated subnet (IBA 1 §12.7; the establishment and release state diagrams
//! of IBA 1 §12.9): a drop filter loses exactly the first REQ, REP, RTU, DREQ or DREP on its
//! first link, and the agents' timers and duplicate handling still bring the connection up and
//! down. The capture shows each lost MAD once (on the link where it was lost) and its resending
//! one wait later on both links.
//!
//! Both sides wait the same here: A's REQ and DREQ wait B's CM response time plus two packet
//! lifetimes; B's REP waits A's CM response time plus two lifetimes of the REQ's path (IBA 1
//! §12.7), and both lifetimes are the PathRecord's.

use ipoib_fabric::node::cm::{self, CmApp, CmHandle, LinkState};
use ipoib_fabric::node::subnet::Subnet;
use ipoib_fabric::testing::cm::{cm_app as app, cm_mads, drop_first_cm, pair, run_until};
use ipoib_fabric::testing::cm::{with_host, CmMad, Pair, A, B};
use ipoib_fabric::testing::{seed, SeedGuard};
use ipoib_fabric::Instant;
use ipoib_proto::cm::{iba_time, Cm, CmConfig, CmEvent, ConnId, ConnectParams};
use ipoib_wire::cm::attr;
use ipoib_wire::Guid;
use std::time::Duration;

const SID: u64 = 0x1000_0000_0000_0081;

struct Run {
    net: Subnet,
    a: CmHandle,
    b: CmHandle,
    conn_a: ConnId,
    conn_b: ConnId,
    /// A's wait for an answer to its REQ or DREQ.
    wait_a: Duration,
    /// B's wait for an answer to its REP.
    wait_b: Duration,
}

impl Run {
    /// When host `i`'s application first logged an event `pick` accepts.
    fn logged(&self, i: usize, pick: impl Fn(&CmEvent) -> bool) -> Option<Instant> {
        let h = if i == A { self.a } else { self.b };
        app(&self.net, i, h)
            .log()
            .iter()
            .find(|(_, e)| pick(e))
            .map(|(t, _)| *t)
    }

    /// How many events `pick` accepts host `i`'s application logged.
    fn count(&self, i: usize, pick: impl Fn(&CmEvent) -> bool) -> usize {
        let h = if i == A { self.a } else { self.b };
        app(&self.net, i, h)
            .log()
            .iter()
            .filter(|(_, e)| pick(e))
            .count()
    }

    /// Host `i`'s agent's count of duplicates of `what`.
    fn duplicates(&self, i: usize, what: &str) -> u64 {
        let h = if i == A { self.a } else { self.b };
        let agent = self.net.host_device(i).agent::<Cm>(h.cm).unwrap();
        agent.duplicates.get(what).copied().unwrap_or(0)
    }

    /// A releases the connection; runs until both sides are out of TimeWait and checks that
    /// nothing is left.
    fn release(&mut self) {
        let (a, conn_a, conn_b) = (self.a, self.conn_a, self.conn_b);
        with_host(&mut self.net, A, |h, now| cm::disconnect(h, now, a, conn_a)).unwrap();
        self.run_until_closed(conn_a, conn_b);
    }

    fn run_until_closed(&mut self, conn_a: ConnId, conn_b: ConnId) {
        let closed = run_until(
            &mut self.net,
            (self.a, self.b),
            Duration::from_secs(60),
            |x, y| {
                let closed = |app: &CmApp, c| {
                    app.connection(c)
                        .is_some_and(|l| l.state == LinkState::Closed)
                };
                closed(x, conn_a) && closed(y, conn_b)
            },
        );
        assert!(closed, "released and out of TimeWait on both sides");
        for (i, h) in [(A, self.a), (B, self.b)] {
            let agent = self.net.host_device(i).agent::<Cm>(h.cm).unwrap();
            assert_eq!(agent.connections(), 0, "host {i}");
            let f = app(&self.net, i, h).failures();
            assert!(f.is_empty(), "host {i}: {f:?}");
            let timed_out = self.count(i, |e| matches!(e, CmEvent::TimedOut { .. }));
            assert_eq!(timed_out, 0, "host {i} never gave up");
        }
    }

    /// The CM MADs captured so far.
    fn capture(&mut self) -> Vec<CmMad> {
        let pcap = self.net.sim_mut().take_capture().unwrap().into_bytes();
        cm_mads(&pcap)
    }
}

/// The times of the captured copies of `attr` (one per link crossed).
fn copies(all: &[CmMad], attr: u16) -> Vec<u64> {
    all.iter()
        .filter(|m| m.attr == attr)
        .map(|m| m.ts_ns)
        .collect()
}

/// Asserts that `later` was put on a link `wait` after `first` (to within a millisecond).
fn resent_after(first: u64, later: u64, wait: Duration) {
    let gap = Duration::from_nanos(later - first);
    assert!(
        gap >= wait && gap < wait + Duration::from_millis(1),
        "resent {gap:?} later; the wait is {wait:?}"
    );
}

/// A connection from A to B with the first CM MAD `lost` (if any) dropped on its first link;
/// runs until both sides are up.
fn connect_losing(seed: u64, lost: Option<u16>) -> Run {
    let Pair {
        mut net,
        a,
        b,
        path,
    } = pair(seed, |_, _, _| {});
    with_host(&mut net, B, |h, _| cm::listen(h, b, SID, u64::MAX).unwrap());
    if let Some(attr) = lost {
        net.sim_mut().set_drop_filter(Some(drop_first_cm(attr)));
    }
    let params = ConnectParams {
        retry_count: 7,
        ..ConnectParams::over_path(&path, 0, SID, 0, 0x00_1234)
    };
    let wait_a = iba_time(params.remote_response_timeout) + iba_time(params.packet_life_time) * 2;
    // B reads the path's lifetime back from the REQ's Local ACK Timeout, minus one (Linux
    // `cm_format_paths_from_req`), and waits A's CM response time, which A's REQ carries.
    let a_response = CmConfig::new(Guid(0)).response_timeout;
    let wait_b = iba_time(a_response) + iba_time(params.path.local_ack_timeout - 1) * 2;
    let conn_a = with_host(&mut net, A, |h, now| cm::connect(h, now, a, params)).unwrap();
    let up = run_until(&mut net, (a, b), Duration::from_secs(60), |x, y| {
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
        wait_a,
        wait_b,
    }
}

fn established(e: &CmEvent) -> bool {
    matches!(e, CmEvent::Established { .. })
}

// IBA 1 §12.7: the first REQ is lost; A resends it after its wait, B takes the resent one (its
// consumer hears one request), and the connection comes up.
#[test]
fn lost_req_is_resent_and_the_connection_comes_up() {
    let s = seed(71);
    let _g = SeedGuard(s);
    let mut r = connect_losing(s, Some(attr::REQ));
    assert_eq!(
        r.count(B, |e| matches!(e, CmEvent::ConnectRequest { .. })),
        1
    );
    r.release();
    let all = r.capture();
    let req = copies(&all, attr::REQ);
    assert_eq!(req.len(), 3, "lost on A's link, resent on both links");
    resent_after(req[0], req[1], r.wait_a);
    for a in [attr::REP, attr::RTU, attr::DREQ, attr::DREP] {
        assert_eq!(copies(&all, a).len(), 2, "attribute {a:#x} sent once");
    }
}

// IBA 1 §12.7, §12.9: the first REP is lost; A, with no answer, resends its REQ after its wait
// and B answers that duplicate with its REP again (IBA 1 §12.9: a duplicate REQ in REP Sent gets
// the REP), while B's own REP timer, as long, resends it too. A takes the first, its RTU brings B
// up, and the second REP gets the RTU again.
#[test]
fn lost_rep_is_resent_and_the_connection_comes_up() {
    let s = seed(72);
    let _g = SeedGuard(s);
    let mut r = connect_losing(s, Some(attr::REP));
    assert_eq!(r.wait_a, r.wait_b);
    assert_eq!(r.duplicates(B, "REQ"), 1, "B answered the resent REQ");
    assert_eq!(r.duplicates(A, "REP"), 1, "A answered the second REP");
    assert_eq!(r.count(A, established), 1);
    r.release();
    let all = r.capture();
    let req = copies(&all, attr::REQ);
    assert_eq!(req.len(), 4, "REQ and its resending, on both links");
    resent_after(req[0], req[2], r.wait_a);
    let rep = copies(&all, attr::REP);
    assert_eq!(rep.len(), 1 + 2 + 2, "lost on B's link, then resent twice");
    resent_after(rep[0], rep[1], r.wait_b);
    assert_eq!(
        copies(&all, attr::RTU).len(),
        4,
        "an RTU for each REP A got"
    );
}

// IBA 1 §12.7, §12.9: the RTU is lost; B, still in REP Sent, resends its REP after its wait, A
// (established) answers the duplicate REP with its RTU again (Linux `cm_dup_rep_handler`), and B
// comes up then.
#[test]
fn lost_rtu_brings_the_rep_again_and_the_connection_comes_up() {
    let s = seed(73);
    let _g = SeedGuard(s);
    let mut r = connect_losing(s, Some(attr::RTU));
    assert_eq!(r.duplicates(A, "REP"), 1);
    let up_a = r.logged(A, established).unwrap();
    let up_b = r.logged(B, established).unwrap();
    assert!(
        up_b - up_a >= r.wait_b - Duration::from_millis(1),
        "B up one wait later"
    );
    r.release();
    let all = r.capture();
    let rep = copies(&all, attr::REP);
    assert_eq!(rep.len(), 4, "REP and its resending, on both links");
    resent_after(rep[0], rep[2], r.wait_b);
    let rtu = copies(&all, attr::RTU);
    assert_eq!(rtu.len(), 3, "lost on A's link, sent again on both");
    assert_eq!(copies(&all, attr::REQ).len(), 2, "the REQ was not resent");
}

// IBA 1 §12.9 ("communication established"): the RTU is lost, but A's first message reaches B's
// QP, which establishes B's side at once; the REP is not resent.
#[test]
fn lost_rtu_first_message_establishes_the_passive_side() {
    let s = seed(74);
    let _g = SeedGuard(s);
    let Pair {
        mut net,
        a,
        b,
        path,
    } = pair(s, |_, _, _| {});
    with_host(&mut net, B, |h, _| cm::listen(h, b, SID, u64::MAX).unwrap());
    net.sim_mut()
        .set_drop_filter(Some(drop_first_cm(attr::RTU)));
    let params = ConnectParams::over_path(&path, 0, SID, 0, 0x00_1234);
    let conn_a = with_host(&mut net, A, |h, now| cm::connect(h, now, a, params)).unwrap();
    let a_up = run_until(&mut net, (a, b), Duration::from_secs(1), |x, _| {
        x.connection(conn_a)
            .is_some_and(|c| c.state == LinkState::Up)
    });
    assert!(a_up);
    with_host(&mut net, A, |h, _| {
        cm::send(h, a, conn_a, b"first".to_vec()).unwrap()
    });
    let t = net.sim().now();
    let b_up = run_until(&mut net, (a, b), Duration::from_millis(1), |_, y| {
        y.connections().any(|(_, c)| c.state == LinkState::Up)
    });
    assert!(b_up, "B up on the first packet, long before any REP resend");
    assert!(net.sim().now() - t < Duration::from_millis(1));
    let conn_b = app(&net, B, b).connections().next().unwrap().0;
    assert_eq!(
        app(&net, B, b).connection(conn_b).unwrap().received,
        [b"first".to_vec()]
    );
    let mut r = Run {
        net,
        a,
        b,
        conn_a,
        conn_b,
        wait_a: Duration::ZERO,
        wait_b: Duration::ZERO,
    };
    r.release();
    let all = r.capture();
    assert_eq!(copies(&all, attr::RTU).len(), 1, "lost, never resent");
    assert_eq!(copies(&all, attr::REP).len(), 2, "the REP was not resent");
}

// IBA 1 §12.7, §12.9 release diagram: the first DREQ is lost; A, in DREQ Sent, resends it after
// its wait; B answers with a DREP and both sides release and leave TimeWait.
#[test]
fn lost_dreq_is_resent_and_the_connection_is_released() {
    let s = seed(75);
    let _g = SeedGuard(s);
    let mut r = connect_losing(s, None);
    r.net
        .sim_mut()
        .set_drop_filter(Some(drop_first_cm(attr::DREQ)));
    let t = r.net.sim().now();
    r.release();
    let down_b = r
        .logged(B, |e| matches!(e, CmEvent::Disconnected { .. }))
        .unwrap();
    assert!(down_b - t >= r.wait_a, "B heard only the resent DREQ");
    let all = r.capture();
    let dreq = copies(&all, attr::DREQ);
    assert_eq!(dreq.len(), 3, "lost on A's link, resent on both");
    resent_after(dreq[0], dreq[1], r.wait_a);
    assert_eq!(copies(&all, attr::DREP).len(), 2, "one DREP");
}

// IBA 1 §12.7, §12.9: the DREP is lost; B released at once (it is in TimeWait, then forgets the
// connection), A resends its DREQ after its wait, and B answers it with a DREP again although it
// no longer knows the connection (Linux `cm_issue_drep`), so A releases too.
#[test]
fn lost_drep_the_resent_dreq_is_answered_and_both_release() {
    let s = seed(76);
    let _g = SeedGuard(s);
    let mut r = connect_losing(s, None);
    r.net
        .sim_mut()
        .set_drop_filter(Some(drop_first_cm(attr::DREP)));
    let t = r.net.sim().now();
    r.release();
    let down_a = r
        .logged(A, |e| matches!(e, CmEvent::Disconnected { .. }))
        .unwrap();
    let down_b = r
        .logged(B, |e| matches!(e, CmEvent::Disconnected { .. }))
        .unwrap();
    assert!(
        down_b - t < Duration::from_millis(1),
        "B released on the first DREQ"
    );
    assert!(down_a - t >= r.wait_a, "A released on the second DREP");
    assert_eq!(r.duplicates(B, "DREQ for unknown ID"), 1);
    let all = r.capture();
    let dreq = copies(&all, attr::DREQ);
    assert_eq!(dreq.len(), 4, "DREQ and its resending, on both links");
    resent_after(dreq[0], dreq[2], r.wait_a);
    let drep = copies(&all, attr::DREP);
    assert_eq!(drep.len(), 3, "lost on B's link, sent again on both");
}
