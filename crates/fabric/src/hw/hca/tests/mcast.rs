//! UD multicast (IBA 1 §10.5.2): attach/detach, one copy per attached QP, GRH required.

use super::*;
use crate::hw::sim::Tx;
use ipoib_wire::ib::{BthRepr, DethRepr, LrhRepr, Opcode};
use ipoib_wire::packet::PacketRepr;
use ipoib_wire::PKey;

const MLID: u16 = 0xc001;

fn mgid() -> Gid {
    Gid::new(0xff12_401b_ffff_0000, 0x0000_0000_ffff_ffff)
}

/// IBA 1 §10.5.2: every QP of the port attached to the group gets its own copy; a detached
/// QP gets none; a multicast send without GRH completes in error and nothing is sent.
#[test]
fn multicast_reaches_every_attached_qp_and_needs_a_grh() {
    let mut p = pair(31);
    let a = ud_qp(&mut p.sim, p.a, QKey(0x0b1b), 0, 0);
    let b1 = ud_qp(&mut p.sim, p.b, QKey(0x0b1b), 0, 4);
    let b2 = ud_qp(&mut p.sim, p.b, QKey(0x0b1b), 0, 4);
    let b3 = ud_qp(&mut p.sim, p.b, QKey(0x0b1b), 0, 4);
    p.sim.with_node::<Hca, _>(p.b, |h, _, _| {
        for q in [b1.qpn, b2.qpn] {
            h.attach_mcast(q, mgid(), MLID).unwrap();
        }
        assert!(h.attach_mcast(Hca::gsi_qp(1), mgid(), MLID).is_err());
    });
    let d = with_grh(dest(MLID, BthRepr::MULTICAST_QPN, QKey(0x0b1b)), mgid());
    send(&mut p.sim, p.a, a.qpn, wr(1, b"to all", d));
    for q in [b1, b2] {
        let c = poll(&mut p.sim, p.b, q.cq);
        assert_eq!(c.len(), 1, "one copy per attached QP");
        assert_eq!(c[0].data, b"to all");
        assert_eq!(c[0].grh.map(|g| g.dgid), Some(mgid()));
        assert_eq!(c[0].byte_len, 6 + 40);
    }
    assert!(poll(&mut p.sim, p.b, b3.cq).is_empty(), "not attached");

    // Without a GRH: error completion, nothing on the wire.
    let before = p.sim.stats().packets;
    send(
        &mut p.sim,
        p.a,
        a.qpn,
        wr(2, b"x", dest(MLID, BthRepr::MULTICAST_QPN, QKey(0x0b1b))),
    );
    assert_eq!(
        poll(&mut p.sim, p.a, a.cq).pop().unwrap().status,
        WcStatus::LocQpOpErr
    );
    assert_eq!(p.sim.stats().packets, before);

    // Detach one QP: only the other receives.
    p.sim
        .with_node::<Hca, _>(p.b, |h, _, _| h.detach_mcast(b1.qpn, mgid(), MLID).unwrap());
    p.sim
        .with_node::<Hca, _>(p.a, |h, _, _| h.modify_qp(a.qpn, ModifyQp::Rts(None)))
        .unwrap()
        .unwrap();
    send(&mut p.sim, p.a, a.qpn, wr(3, b"again", d));
    assert!(poll(&mut p.sim, p.b, b1.cq).is_empty());
    assert_eq!(poll(&mut p.sim, p.b, b2.cq).len(), 1);
}

/// IBA 1 §10.5.2: a multicast packet arriving without GRH is dropped (counted), as is one for a
/// group no QP of the port attached.
#[test]
fn multicast_packet_without_grh_or_group_is_dropped() {
    let mut p = pair(32);
    let b = ud_qp(&mut p.sim, p.b, QKey(0x0b1b), 0, 4);
    p.sim
        .with_node::<Hca, _>(p.b, |h, _, _| h.attach_mcast(b.qpn, mgid(), MLID).unwrap());
    let craft = |grh: bool| {
        let lrh = LrhRepr::local(0, 0, MLID, 1);
        let g = grh.then(|| {
            ipoib_wire::ib::GrhRepr::new(Gid::new(0xfe80 << 48, 5), Gid::new(0xff12 << 48, 9), 1)
        });
        let bth = BthRepr::new(
            Opcode::UD_SEND_ONLY,
            PKey(0xffff),
            BthRepr::MULTICAST_QPN,
            0,
        );
        let deth = DethRepr {
            qkey: QKey(0x0b1b),
            src_qp: 0x99,
        };
        let r = PacketRepr::ud_send_only(lrh, g, bth, deth, b"raw!");
        let mut v = vec![0; r.buffer_len()];
        r.emit(&mut v).unwrap();
        v
    };
    let (no_grh, other_group) = (craft(false), craft(true));
    p.sim.with_node::<Hca, _>(p.a, |_, _, tx: &mut Tx| {
        tx.send(1, no_grh);
        tx.send(1, other_group);
    });
    p.sim.run_until_idle(100);
    let c = counters(&p.sim, p.b);
    assert_eq!(c.drops(HcaDropReason::McastNoGrh), 1);
    assert_eq!(c.drops(HcaDropReason::McastNotAttached), 1);
    assert!(poll(&mut p.sim, p.b, b.cq).is_empty());
}

/// Module docs: by default a port's own multicast is not looped back to its other QPs; with
/// loopback on, the other attached QPs of the sender's port get a copy, the sender none.
#[test]
fn multicast_loopback_is_off_by_default() {
    let mut p = pair(33);
    let s = ud_qp(&mut p.sim, p.a, QKey(0x0b1b), 0, 4);
    let o = ud_qp(&mut p.sim, p.a, QKey(0x0b1b), 0, 4);
    p.sim.with_node::<Hca, _>(p.a, |h, _, _| {
        h.attach_mcast(s.qpn, mgid(), MLID).unwrap();
        h.attach_mcast(o.qpn, mgid(), MLID).unwrap();
    });
    let d = with_grh(dest(MLID, BthRepr::MULTICAST_QPN, QKey(0x0b1b)), mgid());
    send(&mut p.sim, p.a, s.qpn, wr(1, b"m", d));
    assert!(poll(&mut p.sim, p.a, o.cq).is_empty());
    p.sim
        .with_node::<Hca, _>(p.a, |h, _, _| h.set_mcast_loopback(true));
    send(&mut p.sim, p.a, s.qpn, wr(2, b"m", d));
    let got: Vec<_> = poll(&mut p.sim, p.a, o.cq);
    assert_eq!(got.len(), 1);
    let own: Vec<_> = poll(&mut p.sim, p.a, s.cq)
        .into_iter()
        .filter(|c| c.opcode == crate::hw::verbs::WcOpcode::Recv)
        .collect();
    assert!(own.is_empty(), "the sending QP gets no copy");
}
