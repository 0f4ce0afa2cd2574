//! Where a received datagram's data lands: a spent allocation, not a new one.

use super::ud::{outside_and_hca, Outside};
use super::*;

/// A UD datagram received by an HCA that keeps no spent send buffer of its own (a host that
/// only receives: the receiving end of a stream) is received into a spent packet's allocation
/// the simulator keeps (`Tx::spare`; a delivered packet's buffer its consumer gave back,
/// `Simulator::recycle`), not a new one, and its data are the datagram's whatever the stale
/// bytes there (docs/benchmarks/udp.md "Datagram mode").
#[test]
fn a_datagram_is_received_into_a_spent_allocation() {
    let run = |spare: Option<Vec<u8>>| {
        let (mut sim, out, hca) = outside_and_hca(7);
        configure::<Hca>(&mut sim, hca, port_config(2, vec![0xffff]));
        let b = ud_qp(&mut sim, hca, QKey(0x0b1b), 0, 8);
        let mut p = crate::hw::switch::tests::ud(1, 2, 2_000, PKey(0xffff));
        p[12..16].copy_from_slice(&b.qpn.to_be_bytes());
        ipoib_wire::packet::fill_crcs(&mut p).unwrap();
        let at = spare.as_ref().map(|v| v.as_ptr() as usize);
        if let Some(v) = spare {
            sim.recycle(v);
        }
        sim.with_node::<Outside, _>(out, |_, _, tx| tx.send(1, p));
        sim.run_until_idle(1_000);
        let got = poll(&mut sim, hca, b.cq);
        assert_eq!(got.len(), 1);
        assert!(sim.node::<Outside>(out).unwrap().0.is_empty());
        (got[0].data.clone(), got[0].data.as_ptr() as usize, at)
    };
    let (data, ptr, at) = run(Some(vec![0xa5u8; 4_096]));
    assert_eq!(Some(ptr), at, "received into the spent allocation");
    let (fresh, _, _) = run(None);
    assert_eq!(data, fresh, "the same data as in a new allocation");
    assert_eq!(data.len(), 2_000);
}
