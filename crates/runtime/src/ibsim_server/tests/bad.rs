//! Bad input from ibsim clients: well-framed `sim_request`s whose MADs are malformed or break
//! the rules of the SMA (IBA 1 §13.4.2, §14.2.2, §14.2.4), and a client that vanishes between its
//! request and the response. None of it stops the server or disturbs other clients; each is
//! counted, by the server ([`ServerCounters`]) or by the fabric (the switch's
//! `SwitchDropReason::SmpDiscarded`, PortInfo:M_KeyViolations).

use super::*;
use ipoib_wire::ib::lid::LID_PERMISSIVE;
use ipoib_wire::mad::attr::smp as attr;
use ipoib_wire::mad::MadStatus;
use ipoib_wire::smp::{DirectedRoute, PortState, SmpAttribute, SmpMadRepr, SmpRoute};

/// How long a request that must go unanswered is given.
const NO_ANSWER: Duration = Duration::from_millis(500);

/// A directed-route SMP from the client's port along `path` (InitialPath[1..], IBA 1
/// §14.2.1.2), HopPointer 0, with `method`, `attribute` and `mkey`.
fn dr_smp(tid: u64, path: &[u8], method: Method, attribute: SmpAttribute, mkey: u64) -> SmpMadRepr {
    let mut ip = [0u8; 64];
    ip[1..=path.len()].copy_from_slice(path);
    let mut s = SmpMadRepr::lid_routed_get(tid, attr::PORT_INFO, 0);
    s.header.mgmt_class = MgmtClass::SubnDirectedRoute;
    s.header.method = method;
    s.header.class_specific = path.len() as u16;
    s.mkey = mkey;
    s.attribute = attribute;
    s.route = SmpRoute::Directed(DirectedRoute {
        dr_slid: LID_PERMISSIVE,
        dr_dlid: LID_PERMISSIVE,
        initial_path: ip,
        return_path: [0; 64],
    });
    s
}

/// SubnGet(PortInfo) of the switch's port 0, one hop out of the client's port 1, waiting at
/// most `wait` for the answer.
fn switch_port_info(
    c: &IbsimClient,
    tid: u64,
    mkey: u64,
    wait: Duration,
) -> io::Result<SmpMadRepr> {
    let req = dr_smp(tid, &[1], Method::Get, SmpAttribute::Raw([0; 64]), mkey);
    let resp = c.request(LID_PERMISSIVE, 0, &req.to_bytes(), wait)?;
    SmpMadRepr::parse(&resp).map_err(|e| io::Error::new(ErrorKind::InvalidData, e.to_string()))
}

/// Malformed MADs in well-formed `sim_request`s: each is handed to the fabric or handed back
/// undelivered (status 110), never dropped unaccounted; the client stays attached and its next
/// good requests are answered; what the switch's SMA refuses is counted there.
#[test]
fn malformed_mads_are_accounted_for() {
    let srv = Running::start();
    let c = IbsimClient::connect_to(&srv.endpoint(), Some("h1"), 0, false).unwrap();
    let mut bad: Vec<(u16, u32, [u8; MAD_LEN])> = Vec::new();
    // A header no agent takes: base version 0xff, an unknown class, all zeros.
    let mut m = cpi_get(1);
    m[0] = 0xff;
    bad.push((1, 1, m));
    let mut m = cpi_get(2);
    m[1] = 0x7e;
    bad.push((1, 1, m));
    bad.push((1, 1, [0; MAD_LEN]));
    // An unsolicited response to the SA.
    let mut m = cpi_get(3);
    m[3] = 0x81;
    bad.push((1, 1, m));
    // SMPs the switch must discard (IBA 1 §14.2.2): out of a port it does not have; a hop
    // count past the path's 64 entries; a LID-routed SMP with a method the SMA does not take.
    let get = SmpAttribute::Raw([0; 64]);
    bad.push((
        LID_PERMISSIVE,
        0,
        dr_smp(4, &[1, 200], Method::Get, get, 0).to_bytes(),
    ));
    let mut m = dr_smp(5, &[1], Method::Get, get, 0).to_bytes();
    m[7] = 0xff;
    bad.push((LID_PERMISSIVE, 0, m));
    let mut m = SmpMadRepr::lid_routed_get(6, attr::NODE_INFO, 0).to_bytes();
    m[3] = 0x7f;
    bad.push((c.port_info().unwrap().lid, 0, m));
    // Random bytes (a seeded xorshift), to QP0 and QP1.
    let mut x: u64 = 0x2545_f491_4f6c_dd1d;
    for i in 0..40u32 {
        let mut m = [0u8; MAD_LEN];
        for b in &mut m {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            *b = x as u8;
        }
        bad.push((if i % 2 == 0 { 1 } else { LID_PERMISSIVE }, i % 2, m));
    }
    for (dlid, dqp, m) in &bad {
        c.send_mad(*dlid, *dqp, m).unwrap();
    }
    // Still served: the SA and the switch's SMA answer good requests.
    assert_sa_answers(&c, 0x77);
    let pi = switch_port_info(&c, 0x78, 0, LONG).unwrap();
    assert!(matches!(pi.attribute, SmpAttribute::PortInfo(_)));
    drop(c);
    let (counters, left, discarded) = srv.stop_all();
    assert_eq!(
        counters.mads_in + counters.undelivered,
        bad.len() as u64 + 2,
        "{counters:?}"
    );
    assert_eq!(
        (counters.garbage_dropped, counters.vanished, left),
        (0, 0, 0)
    );
    assert!(discarded >= 2, "the switch discarded {discarded} SMPs");
}

/// A client that sends a request and goes away before the answer: writing the answer fails, the
/// client is dropped and counted, and its slot serves the next client. The probe is off, so only
/// the failed write can find it. The server is parked while the client sends and goes, so that
/// it cannot answer in between (it would then never write to the client again).
#[test]
fn client_vanishing_mid_request_is_dropped() {
    let base = unique_base();
    let opts = ServeOptions {
        max_sleep: Duration::from_millis(10),
        probe_every: Duration::from_secs(3600),
    };
    let srv = Running::start_with(base.clone(), ServerConfig::unix(&base), opts);
    let keep = Raw::connect(&base, "h2").unwrap();
    let gone = Raw::connect(&base, "h1").unwrap();
    let gone_id = gone.id;
    let req = cpi_request(0x99);
    let paused = srv.pause();
    gone.data.send(&req.to_bytes()).unwrap();
    drop(gone);
    drop(paused);
    // Clients that get another slot leave again, so that the lowest free slot stays the next.
    let reused = eventually(|| {
        let next = Raw::connect(&base, "h2").unwrap();
        let hit = next.id == gone_id;
        assert_eq!(
            next.ctl(CtlType::Disconnect, &[]).ctl_type,
            CtlType::Disconnect
        );
        hit
    });
    assert!(reused, "the slot of the client that vanished is free again");
    // The other client was not disturbed.
    let pk = keep.ctl(CtlType::GetPkeys, &[0; 64]);
    assert_eq!(pk.ctl_type, CtlType::GetPkeys);
    drop(keep);
    let (counters, _) = srv.stop();
    assert_eq!(counters.vanished, 1, "{counters:?}");
    assert_eq!(counters.mads_in, 1, "{counters:?}");
    assert_eq!(
        counters.mads_out, 0,
        "the answer was never written: {counters:?}"
    );
    assert_eq!(counters.garbage_dropped, 0);
}

/// M_Key protection through the server (IBA 1 §14.2.4): a client sets the switch's M_Key with
/// protect bits 2; a SubnGet and a SubnSet with the wrong key get no answer and change nothing,
/// each counted in PortInfo:M_KeyViolations and as an SMP the switch discarded; the right key
/// is answered.
#[test]
fn mkey_violations_are_counted() {
    const KEY: u64 = 0x1234_5678_9abc_def0;
    let srv = Running::start();
    let c = IbsimClient::connect_to(&srv.endpoint(), Some("h1"), 0, false).unwrap();
    let SmpAttribute::PortInfo(mut pi) = switch_port_info(&c, 1, 0, LONG).unwrap().attribute else {
        panic!("not a PortInfo");
    };
    let lid = pi.lid;
    pi.mkey = KEY;
    pi.mkey_protect_bits = 2;
    pi.mkey_lease_period = 0;
    pi.port_state = PortState::NoStateChange;
    let set = dr_smp(2, &[1], Method::Set, SmpAttribute::PortInfo(pi), 0);
    let resp = c.request(LID_PERMISSIVE, 0, &set.to_bytes(), LONG).unwrap();
    assert_eq!(
        SmpMadRepr::parse(&resp).unwrap().status(),
        MadStatus::SUCCESS
    );

    // Wrong key: no answer. (Waiting longer could not turn a missing answer into one: the
    // violation counts below show both requests reached the switch.)
    let e = switch_port_info(&c, 3, 0, NO_ANSWER).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::TimedOut);
    let mut other = pi;
    other.lid = lid.wrapping_add(100);
    other.mkey = 0;
    let set = dr_smp(4, &[1], Method::Set, SmpAttribute::PortInfo(other), 7);
    let e = c
        .request(LID_PERMISSIVE, 0, &set.to_bytes(), NO_ANSWER)
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::TimedOut);

    // The right key: answered, nothing changed, both violations counted.
    let SmpAttribute::PortInfo(now) = switch_port_info(&c, 5, KEY, LONG).unwrap().attribute else {
        panic!("not a PortInfo");
    };
    assert_eq!((now.lid, now.mkey, now.mkey_protect_bits), (lid, KEY, 2));
    assert_eq!(now.mkey_violations, 2);
    drop(c);
    let (counters, left, discarded) = srv.stop_all();
    assert!(discarded >= 2, "the switch discarded {discarded} SMPs");
    assert_eq!(
        (counters.garbage_dropped, counters.vanished, left),
        (0, 0, 0)
    );
}
