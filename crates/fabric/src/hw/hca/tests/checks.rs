//! Transport header checks of the receive path (IBA 1 §9.6) that apply to every QP.

use super::ud::{outside_and_hca, Outside};
use super::*;

/// IBA 1 §9.2, §9.6: TVer 0 is the only transport header version. A packet with TVer 1 (its
/// CRCs good) is discarded and counted, not delivered; the same packet with TVer 0 is delivered.
/// Fails on the old code, which never read TVer and delivered both.
#[test]
fn a_packet_with_tver_other_than_0_is_discarded() {
    let (mut sim, out, hca) = outside_and_hca(4);
    configure::<Hca>(&mut sim, hca, port_config(2, vec![0xffff]));
    let b = ud_qp(&mut sim, hca, QKey(0x0b1b), 0, 8);
    let mut good = crate::hw::switch::tests::ud(1, 2, 40, PKey(0xffff));
    good[12..16].copy_from_slice(&b.qpn.to_be_bytes());
    ipoib_wire::packet::fill_crcs(&mut good).unwrap();
    // BTH byte 1 (the packet's byte 9): SE, M, PadCnt, then TVer in the low 4 bits.
    let mut tver1 = good.clone();
    assert_eq!(tver1[9] & 0x0f, 0);
    tver1[9] |= 1;
    ipoib_wire::packet::fill_crcs(&mut tver1).unwrap();
    for p in [tver1, good] {
        sim.with_node::<Outside, _>(out, |_, _, tx| tx.send(1, p));
    }
    sim.run_until_idle(1_000);
    let c = counters(&sim, hca);
    assert_eq!(
        c.drops(HcaDropReason::BadTver),
        1,
        "{:?}",
        c.nonzero_drops()
    );
    assert_eq!(c.total_drops(), 1, "{:?}", c.nonzero_drops());
    assert_eq!(poll(&mut sim, hca, b.cq).len(), 1);
}
