//! UD receive keys: the Q_Key and P_Key rules (IBA 1 §10.2.4, §10.9.3) and the PortInfo
//! violation counters they feed (IBA 1 §14.2.5.6).

use super::*;

/// IBA 1 §10.2.4: the DETH Q_Key must equal the receiving QP's Q_Key, else the datagram is
/// dropped (counted).
#[test]
fn qkey_mismatch_is_dropped_and_counted() {
    let mut p = pair(2);
    let a = ud_qp(&mut p.sim, p.a, QKey(0x1111), 0, 0);
    let b = ud_qp(&mut p.sim, p.b, QKey(0x2222), 0, 4);
    datagram_a_to_b(&mut p, a.qpn, b.qpn, 1, b"x", QKey(0x1111));
    assert!(poll(&mut p.sim, p.b, b.cq).is_empty());
    assert_eq!(counters(&p.sim, p.b).drops(HcaDropReason::QkeyMismatch), 1);
    // IBA 1 §14.2.5.6: PortInfo:Q_KeyViolations counts it; P_KeyViolations does not.
    let pi = p.sim.node::<Hca>(p.b).unwrap().port_info(1).unwrap();
    assert_eq!((pi.qkey_violations, pi.pkey_violations), (1, 0));
    // The right Q_Key goes through.
    datagram_a_to_b(&mut p, a.qpn, b.qpn, 2, b"y", QKey(0x2222));
    assert_eq!(poll(&mut p.sim, p.b, b.cq).len(), 1);
}

/// IBA 1 §10.2.4: a WR Q_Key with the high bit set selects the QP's own Q_Key, and a
/// non-privileged QP may not send a controlled Q_Key: error completion, QP to SQE, nothing sent.
#[test]
fn controlled_qkey_from_unprivileged_qp_is_refused() {
    let mut p = pair(3);
    let a = ud_qp(&mut p.sim, p.a, QKey(0x8000_0005), 0, 0);
    let b = ud_qp(&mut p.sim, p.b, QKey(0x8000_0005), 0, 4);
    let before = p.sim.stats().packets;
    datagram_a_to_b(&mut p, a.qpn, b.qpn, 1, b"x", QKey(0x8000_0000));
    let c = poll(&mut p.sim, p.a, a.cq);
    assert_eq!(c.len(), 1);
    assert_eq!(c[0].status, WcStatus::LocQpOpErr);
    assert_eq!(p.sim.stats().packets, before, "nothing on the wire");
    let info = p.sim.node::<Hca>(p.a).unwrap().qp_info(a.qpn).unwrap();
    assert_eq!(info.state, QpState::Sqe);
    // SQE refuses new sends until the consumer moves the QP back to RTS.
    let r = p
        .sim
        .with_node::<Hca, _>(p.a, |h, _, _| {
            h.post_send(a.qpn, wr(2, b"y", dest(2, b.qpn, QKey(0x1))))
        })
        .unwrap();
    assert!(matches!(r, Err(VerbsError::WrongState { .. })));
    p.sim
        .with_node::<Hca, _>(p.a, |h, _, _| h.modify_qp(a.qpn, ModifyQp::Rts(None)))
        .unwrap()
        .unwrap();
    // A controlled Q_Key given directly in the WR is refused the same way.
    datagram_a_to_b(&mut p, a.qpn, b.qpn, 3, b"z", QKey(0x8001_0000));
    assert_eq!(poll(&mut p.sim, p.a, a.cq)[0].status, WcStatus::LocQpOpErr);
    assert!(poll(&mut p.sim, p.b, b.cq).is_empty());
}

/// Sends one datagram from a QP using P_Key `from` to one using P_Key `to`; returns whether it
/// was delivered and the receiver's P_Key drops.
fn pkey_case(seed: u64, from: u16, to: u16) -> (bool, u64) {
    let mut p = pair(seed);
    configure::<Hca>(&mut p.sim, p.a, port_config(1, vec![0xffff, from]));
    configure::<Hca>(&mut p.sim, p.b, port_config(2, vec![0xffff, to]));
    p.sim.run_until_idle(100);
    let a = ud_qp(&mut p.sim, p.a, QKey(0x1b), 1, 0);
    let b = ud_qp(&mut p.sim, p.b, QKey(0x1b), 1, 4);
    datagram_a_to_b(&mut p, a.qpn, b.qpn, 1, b"p", QKey(0x1b));
    let got = poll(&mut p.sim, p.b, b.cq);
    if let Some(c) = got.first() {
        assert_eq!(c.pkey_index, 1);
    }
    let drops = counters(&p.sim, p.b).drops(HcaDropReason::PkeyMismatch);
    // IBA 1 §14.2.5.6: PortInfo:P_KeyViolations counts each P_Key drop.
    let pi = p.sim.node::<Hca>(p.b).unwrap().port_info(1).unwrap();
    assert_eq!(u64::from(pi.pkey_violations), drops);
    (!got.is_empty(), drops)
}

/// IBA 1 §10.9.3: another partition is dropped; two limited members may not talk; a full and
/// a limited member may.
#[test]
fn pkey_partition_and_membership_rules() {
    assert_eq!(pkey_case(4, 0x8001, 0x8002), (false, 1), "other partition");
    assert_eq!(
        pkey_case(5, 0x0001, 0x0001),
        (false, 1),
        "limited <-> limited"
    );
    assert_eq!(pkey_case(6, 0x8001, 0x0001), (true, 0), "full -> limited");
    assert_eq!(pkey_case(7, 0x0001, 0x8001), (true, 0), "limited -> full");
    assert_eq!(pkey_case(8, 0x8001, 0x8001), (true, 0), "full <-> full");
}
