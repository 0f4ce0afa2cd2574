//! Trap 258 (Bad Q_Key, IBA 1 §14.2.5.1 Table 131) on a whole subnet with our SM: a datagram with
//! the wrong Q_Key makes the receiving host's port send the trap to its MasterSMLID, the SM counts
//! it and answers with TrapRepress (IBA 1 §13.4.9), which the port's SMA takes
//! (`hw/hca/trap.rs`).

mod common;

use ipoib_fabric::hw::hca::HcaDropReason;
use ipoib_fabric::hw::topology::Topology;
use ipoib_fabric::node::subnet::{Subnet, SubnetOptions};
use ipoib_fabric::testing::{at, received, seed, send_ud, ud_qp, SeedGuard};
use ipoib_wire::QKey;
use std::time::Duration;

#[test]
fn bad_qkey_trap_is_answered_by_the_sm() {
    let seed = seed(41);
    let _g = SeedGuard(seed);
    let opts = SubnetOptions::new(Topology::single_switch(4).unwrap(), seed);
    let mut net = Subnet::build(opts).unwrap();
    assert!(net.run_until_joined(at(10)));
    let (q1, _) = ud_qp(&mut net, 1, QKey(0x11), 0);
    let (q2, cq2) = ud_qp(&mut net, 2, QKey(0x22), 0);
    let traps = net.smp_sm().unwrap().stats().traps;
    let port = |net: &Subnet| {
        let p = net.host_device(2).hca().port(1).unwrap();
        (p.qkey_violations, p.traps_sent, p.trap_represses)
    };
    assert_eq!(
        port(&net),
        (0, 0, 0),
        "no trap while the bring-up had no violation"
    );
    let lid2 = net.lid(2);
    send_ud(&mut net, 1, q1, lid2, q2, QKey(0x11), None, b"wrong key");
    net.sim_mut().run_for(Duration::from_millis(10));
    assert!(received(&mut net, 2, cq2).is_empty());
    let drops = net.host_device(2).hca().counters();
    assert_eq!(drops.drops(HcaDropReason::QkeyMismatch), 1);
    assert_eq!(
        port(&net),
        (1, 1, 1),
        "one trap sent, one TrapRepress taken"
    );
    assert_eq!(net.smp_sm().unwrap().stats().traps, traps + 1);
}
