//! IPoIB over UD on the emulated subnet: bring-up (draft-ietf-ipoib-ip-over-infiniband-06
//! §5). Every host of a fat tree joins the broadcast group through real SA MADs on QP1, takes the
//! group's Q_Key and MTU, gets carrier only after the join, and its UD QP ends up in RTS with that
//! Q_Key, attached to the group.

use ipoib_fabric::hw::topology::Topology;
use ipoib_fabric::hw::verbs::QpState;
use ipoib_fabric::node::subnet::{IpoibOptions, Subnet, SubnetOptions};
use ipoib_fabric::testing::{at, seed, seeds, SeedGuard};
use ipoib_wire::ipoib::mcast::{broadcast_mgid, Scope};
use ipoib_wire::{PKey, QKey};

// draft-ietf-ipoib-ip-over-infiniband-06 §5 (FullMember join, carrier after it), §7 (MTU 2044),
// §9.1.2 b (the group's Q_Key on the QP), §9.1.1 (link-layer address).
#[test]
fn every_host_of_a_fat_tree_comes_up() {
    let seed = seed(41);
    let _g = SeedGuard(seed);
    let mut opts = SubnetOptions::new(Topology::fat_tree(24).unwrap(), seed);
    opts.ipoib = Some(IpoibOptions::default());
    let mut net = Subnet::build(opts).unwrap();
    assert!(net.run_until_joined(at(10)), "every interface has carrier");
    assert_eq!(net.carrier_count(), 24);
    let bcast = broadcast_mgid(PKey(0xffff), Scope::LinkLocal);
    let group = net
        .sa()
        .groups()
        .into_iter()
        .find(|g| g.record.mgid == bcast)
        .expect("the broadcast group");
    assert_eq!(group.members.len(), 24, "every port is a member");
    for i in 0..24 {
        let iface = net.interface(i).unwrap();
        let app = net.ipoib_app(i).unwrap();
        let p = iface.link_params().expect("joined");
        assert_eq!(
            p.record.qkey,
            QKey(0x0b1b),
            "§9.1.2 b: OpenSM's default Q_Key"
        );
        assert_eq!(iface.mtu(), 2044, "§7: group MTU 2048 - 4");
        assert_eq!(
            iface.gid(),
            net.gid(i),
            "§9.1.1 c: subnet prefix ‖ port GUID"
        );
        assert_eq!(iface.hw_addr().qpn, app.qpn());
        let up = app.carrier_up_at().expect("carrier");
        assert_eq!(app.carrier_log().len(), 1, "one carrier change, up");
        let qp = net.host_device(i).hca().qp_info(app.qpn()).unwrap();
        assert_eq!(qp.state, QpState::Rts);
        assert_eq!(qp.qkey, QKey(0x0b1b));
        assert!(
            qp.recv_posted >= 200,
            "receives kept posted: {}",
            qp.recv_posted
        );
        assert!(
            app.attached().contains(&(bcast, group.record.mlid)),
            "attached to the broadcast group"
        );
        // Carrier only after the join answer reached the host: not before the port was Active.
        assert!(up > ipoib_fabric::Instant::ZERO);
        assert_eq!(
            app.counters(),
            Default::default(),
            "no adapter errors on host {i}"
        );
    }
}

// Regression: `run_until_joined` used to return while the SM's MFT writes were still on their way
// (CONFIG_DELAY), so the first multicast after it (an ARP request) met a switch without an MFT
// entry and was dropped. draft-ietf-ipoib-ip-over-infiniband-06 §5: the SM ensures a multicast
// tree between members; "settled" now includes the writes' delivery.
#[test]
fn joined_means_the_trees_are_in_the_switches() {
    for seed in seeds([7, 8, 9]) {
        let _g = SeedGuard(seed);
        let mut opts = SubnetOptions::new(Topology::single_switch(3).unwrap(), seed);
        opts.ipoib = Some(IpoibOptions::default());
        let mut net = Subnet::build(opts).unwrap();
        assert!(net.run_until_joined(at(10)));
        let mlid = net.interface(1).unwrap().link_params().unwrap().record.mlid;
        for (_, sw) in net.switches() {
            let ports = sw.mft(mlid).unwrap_or_default();
            assert_eq!(
                ports.len(),
                3,
                "seed {seed}: MFT of the broadcast group written"
            );
        }
    }
}
